/*
 * hp_carry.c - time below 0 carried to a function's next calls
 * (hp_carry.h): an open-addressing table, linear probing, load at most one
 * half; entries stay (a function owes until it pays).
 */
#include "hp_carry.h"

#include <stdlib.h>

#define SLOTS_MIN 64


static int grow(struct hp_carry *c)
{
	struct hp_carry old = *c;
	size_t cap = old.cap ? 2 * old.cap : SLOTS_MIN;
	struct hp_carry_slot *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	c->slot = slot;
	c->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i].key)
			c->slot[hp_carry_slot(c, old.slot[i].key)] = old.slot[i];
	free(old.slot);
	return 0;
}

double hp_carry_owed(const struct hp_carry *c, uint32_t fn)
{
	return c->cap ? c->slot[hp_carry_slot(c, fn + 1)].owed : 0;
}

int hp_carry_owe(struct hp_carry *c, uint32_t fn, double v, double *shown)
{
	if (!c->cap && grow(c))
		return -1;
	size_t i = hp_carry_slot(c, fn + 1);
	double owed = c->slot[i].owed; /* 0 in an empty slot */
	*shown = v > owed ? v - owed : 0;
	if (*shown > 0 && !owed)
		return 0;
	double left = owed - v + *shown; /* owed - (what v paid), or more if v < 0 */
	if (!c->slot[i].key) {
		if (2 * (c->used + 1) > c->cap) {
			if (grow(c))
				return -1;
			i = hp_carry_slot(c, fn + 1);
		}
		c->slot[i].key = fn + 1;
		c->used++;
	}
	c->slot[i].owed = left;
	return 0;
}

void hp_carry_free(struct hp_carry *c)
{
	free(c->slot);
	*c = (struct hp_carry){ 0 };
}
