/*
 * hp_opencount.c - open frames per function: growing the table (linear
 * probing, load at most one half; entries of closed functions go at the
 * next rehash, unless they owe). The lookups are inline in hp_opencount.h.
 */
#include "hp_opencount.h"

#include <stdlib.h>
#include <time.h>

#define SLOTS_MIN 64
#define SLOTS_MIN_BITS 6

/* splitmix64 of the time and an address: a multiplier no file can be
 * written against. */
static uint64_t random_multiplier(const void *salt)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)salt;
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) | 1;
}

/* Into a table of four times the functions still open or owing (at
 * least 64). */
int hp_opencount_rehash(struct hp_opencount *t)
{
	size_t live = 0;
	for (size_t i = 0; i < t->cap; i++)
		live += t->slot[i].n != 0 || t->slot[i].owed != 0;
	size_t cap = SLOTS_MIN;
	unsigned shift = 64 - SLOTS_MIN_BITS;
	while (cap < 4 * (live + 1)) {
		cap *= 2;
		shift--;
	}
	struct hp_open_slot *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	struct hp_opencount old = *t;
	if (!t->mul)
		t->mul = random_multiplier(t);
	t->slot = slot;
	t->cap = cap;
	t->shift = shift;
	t->used = live;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i].n || old.slot[i].owed != 0)
			slot[hp_opencount_slot(t, old.slot[i].key)] = old.slot[i];
	free(old.slot);
	return 0;
}

void hp_opencount_free(struct hp_opencount *t)
{
	free(t->slot);
	*t = (struct hp_opencount){ 0 };
}
