/*
 * hp_opencount.h - open frames per function in one stream: a hash table
 * from function index to count. It answers "is f open in this stream, and
 * how often" in O(1) whatever the depth of the stack, for the decoder (an
 * exit of a function that is not open), the profile and the driver (is
 * this frame the outermost of its function). Its multiplier is chosen at
 * random so that a crafted file cannot make it probe long; it holds the
 * functions open now and those that owe time (the driver's, hp_carry.h),
 * not every function ever entered.
 */
#ifndef HP_OPENCOUNT_H
#define HP_OPENCOUNT_H

#include <stddef.h>
#include <stdint.h>

struct hp_open_slot {
	uint32_t key; /* function index + 1; 0: an empty slot */
	uint32_t n;
	/* Time the function's calls owe (hp_carry.h), for a user that carries
	 * it here (the driver: one lookup per call for both); else 0. A slot
	 * that owes outlives its function's last open frame. */
	double owed;
};

struct hp_opencount {
	struct hp_open_slot *slot;
	size_t cap, used;
	uint64_t mul;
	unsigned shift;
};

/* Makes room for one more function; 0, or -1 out of memory. */
int hp_opencount_rehash(struct hp_opencount *t);
void hp_opencount_free(struct hp_opencount *t);

/* Inline: every enter and exit of a trace comes here, twice. */
static inline size_t hp_opencount_slot(const struct hp_opencount *t, uint32_t key)
{
	size_t i = (size_t)((key * t->mul) >> t->shift);
	while (t->slot[i].key && t->slot[i].key != key)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/* Open frames of func; 0 for a function never seen. */
static inline uint32_t hp_opencount_get(const struct hp_opencount *t, uint32_t func)
{
	return t->cap ? t->slot[hp_opencount_slot(t, func + 1)].n : 0;
}

/* One more open frame of func: the number open before, or -1 out of
 * memory; *at: its slot, for hp_opencount_at. */
static inline int64_t hp_opencount_add_at(struct hp_opencount *t, uint32_t func, size_t *at)
{
	if (2 * (t->used + 1) > t->cap && hp_opencount_rehash(t))
		return -1;
	*at = hp_opencount_slot(t, func + 1);
	struct hp_open_slot *s = &t->slot[*at];
	if (!s->key) {
		s->key = func + 1;
		t->used++;
	}
	return s->n++;
}

static inline int64_t hp_opencount_add(struct hp_opencount *t, uint32_t func)
{
	size_t at;
	return hp_opencount_add_at(t, func, &at);
}

/* The slot of func, which must be open; `at`, its slot when it was
 * entered, is taken if a rehash since left it there (keys are unique:
 * func's key there is func's slot), else func is looked up. */
static inline struct hp_open_slot *hp_opencount_at(struct hp_opencount *t, uint32_t func, size_t at)
{
	if (at < t->cap && t->slot[at].key == func + 1)
		return &t->slot[at];
	return &t->slot[hp_opencount_slot(t, func + 1)];
}

/* One frame of func closed; func must be open. */
static inline void hp_opencount_sub(struct hp_opencount *t, uint32_t func)
{
	t->slot[hp_opencount_slot(t, func + 1)].n--;
}

#endif
