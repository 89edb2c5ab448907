/*
 * hp_opencount.h - open frames per function in one stream: a hash table
 * from function index to count. It answers "is f open in this stream, and
 * how often" in O(1) whatever the depth of the stack, for the decoder (an
 * exit of a function that is not open) and the profile (is this frame the
 * outermost of its function). Its multiplier is chosen at random so that a
 * crafted file cannot make it probe long; it holds the functions open now,
 * not every function ever entered.
 */
#ifndef HP_OPENCOUNT_H
#define HP_OPENCOUNT_H

#include <stddef.h>
#include <stdint.h>

struct hp_open_slot {
	uint32_t key; /* function index + 1; 0: an empty slot */
	uint32_t n;
};

struct hp_opencount {
	struct hp_open_slot *slot;
	size_t cap, used;
	uint64_t mul;
	unsigned shift;
};

/* Open frames of func; 0 for a function never seen. */
uint32_t hp_opencount_get(const struct hp_opencount *t, uint32_t func);
/* One more open frame of func. 0, or -1 out of memory. */
int hp_opencount_add(struct hp_opencount *t, uint32_t func);
/* One frame of func closed; func must be open. */
void hp_opencount_sub(struct hp_opencount *t, uint32_t func);
void hp_opencount_free(struct hp_opencount *t);

#endif
