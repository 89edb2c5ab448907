/*
 * hp_strings.c - the lock-free string table (hp_strings.h).
 *
 * An id is taken with one atomic add and its entry filled; then the entry
 * is published in an open-addressing hash by a compare-and-swap of an empty
 * slot. Two threads interning the same new string at once may both take
 * an id: the loser uses the winner's, and its own entry is a duplicate
 * that is written to the trace and never named by an event. Harmless.
 */
#include "hp_strings.h"

#include <string.h>

#include "hp_format.h"
#include "hp_records.h"

#define SLOTS (2 * HP_STRINGS_MAX)

struct entry {
	uint32_t ready;   /* filled: set last, with release */
	uint32_t written; /* in the trace; the writer's, under its lock */
	uint32_t len;
	char text[HP_STRING_BYTES];
};

static struct entry *entries; /* HP_STRINGS_MAX of them */
static uint32_t *slots;       /* id + 1; 0: empty */
static uint32_t taken;        /* ids handed out */
static uint32_t first_unwritten;

int hp_strings_init(void)
{
	/* Once: a forked child keeps its parent's table. */
	if (entries)
		return 0;
	entries = hp_pages_alloc(sizeof(struct entry) * HP_STRINGS_MAX);
	slots = hp_pages_alloc(sizeof(uint32_t) * SLOTS);
	if (!entries || !slots) {
		hp_pages_free(entries, sizeof(struct entry) * HP_STRINGS_MAX);
		hp_pages_free(slots, sizeof(uint32_t) * SLOTS);
		entries = NULL;
		slots = NULL;
		return -1;
	}
	return 0;
}

static uint32_t hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int same(const struct entry *e, const char *s, size_t len)
{
	return e->len == len && !memcmp(e->text, s, len);
}

static uint32_t new_entry(const char *s, size_t len)
{
	uint32_t id = __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
	if (id >= HP_STRINGS_MAX)
		return HP_STRING_NONE;
	struct entry *e = &entries[id];
	memcpy(e->text, s, len);
	e->len = (uint32_t)len;
	/* Release: the text is complete before the entry counts as ready
	 * (the writer reads it after an acquire of ready). */
	__atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
	return id;
}

uint32_t hp_strings_intern(const char *s, size_t len)
{
	if (!entries || len >= HP_STRING_BYTES)
		return HP_STRING_NONE;
	uint32_t mine = HP_STRING_NONE;
	for (uint32_t i = hash(s, len) & (SLOTS - 1), probes = 0; probes < SLOTS;
	     i = (i + 1) & (SLOTS - 1), probes++) {
		/* Acquire: pairs with the release of the compare-and-swap below;
		 * the entry a slot names is filled. */
		uint32_t v = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
		if (!v) {
			if (mine == HP_STRING_NONE && (mine = new_entry(s, len)) == HP_STRING_NONE)
				return HP_STRING_NONE;
			/* Release: our entry's text before the slot naming it. */
			if (__atomic_compare_exchange_n(&slots[i], &v, mine + 1, 0, __ATOMIC_RELEASE,
							__ATOMIC_ACQUIRE))
				return mine;
		}
		if (same(&entries[v - 1], s, len))
			return v - 1;
	}
	return HP_STRING_NONE;
}

const char *hp_strings_get(uint32_t id, size_t *len)
{
	if (!entries || id >= HP_STRINGS_MAX || !__atomic_load_n(&entries[id].ready, __ATOMIC_ACQUIRE))
		return NULL;
	*len = entries[id].len;
	return entries[id].text;
}

void hp_strings_write_new(void)
{
	if (!entries)
		return;
	uint32_t n = __atomic_load_n(&taken, __ATOMIC_RELAXED);
	if (n > HP_STRINGS_MAX)
		n = HP_STRINGS_MAX;
	/* An entry still being filled by another thread is skipped, not
	 * waited for: it is written next time, and no event names it yet. */
	for (uint32_t id = first_unwritten; id < n; id++) {
		struct entry *e = &entries[id];
		if (e->written || !__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE))
			continue;
		hp_records_string(id, e->text, e->len);
		e->written = 1;
	}
	while (first_unwritten < n && entries[first_unwritten].written)
		first_unwritten++;
}

void hp_strings_reset_in_child(void)
{
	uint32_t n = __atomic_load_n(&taken, __ATOMIC_RELAXED);
	for (uint32_t id = 0; entries && id < n && id < HP_STRINGS_MAX; id++)
		entries[id].written = 0;
	first_unwritten = 0;
}
