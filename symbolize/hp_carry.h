/*
 * hp_carry.h - a call's compensated time never reads below 0, and the sum
 * over a function's calls stays unbiased.
 *
 * With a clock stepping 10 ns, a call that costs its hooks 11 ns reads 10
 * ns most times and 20 ns some: less its hooks' cost, -1 ns or 9 ns, which
 * average to the truth. Shown clamped at 0, the calls would add up to too
 * much. So the time below 0 is carried, per thread and function, and taken
 * from the function's next calls that have some: each call shows a time
 * of at least 0, and the sum of a function's calls is the sum of their
 * unclamped times (where later calls can pay it back).
 */
#ifndef HP_CARRY_H
#define HP_CARRY_H

#include <stddef.h>
#include <stdint.h>

struct hp_carry_slot {
	uint32_t key; /* function + 1; 0: empty */
	double owed;  /* ticks, >= 0 */
};

struct hp_carry {
	struct hp_carry_slot *slot;
	size_t cap, used;
};

/* The time to show for a call of fn whose compensated time is v ticks
 * (maybe below 0): max(0, v - what fn owes), what is left owed kept. -1
 * out of memory (nothing changed). hp_carry_owe is its slow path, once a
 * function owes or may. */
int hp_carry_owe(struct hp_carry *c, uint32_t fn, double v, double *shown);
/* The time to show for a call whose compensated time is v ticks, of a
 * function that owes *owed: max(0, v - *owed); *owed keeps what is left
 * (0 again once paid; more if v < 0). For a table of one's own. */
static inline double hp_carry_pay(double *owed, double v)
{
	double o = *owed;
	double shown = v > o ? v - o : 0;
	*owed = o - v + shown;
	return shown;
}
/* fn's slot: open addressing, linear probing. */
static inline size_t hp_carry_slot(const struct hp_carry *c, uint32_t key)
{
	size_t i = (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & (c->cap - 1);
	while (c->slot[i].key && c->slot[i].key != key)
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* Inline: every call comes here; only a function's first debt goes out
 * of line (it makes a slot). */
static inline int hp_carry_settle(struct hp_carry *c, uint32_t fn, double v, double *shown)
{
	struct hp_carry_slot *s = c->cap ? &c->slot[hp_carry_slot(c, fn + 1)] : NULL;
	if (s && s->key) {
		*shown = hp_carry_pay(&s->owed, v);
		return 0;
	}
	if (v > 0) {
		*shown = v; /* nothing owed, nothing to owe */
		return 0;
	}
	return hp_carry_owe(c, fn, v, shown);
}
/* What fn owes now: time its calls showed more than they had. */
double hp_carry_owed(const struct hp_carry *c, uint32_t fn);
void hp_carry_free(struct hp_carry *c);

#endif
