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

/* The time to show for a call whose compensated time is v ticks, of a
 * function that owes *owed: max(0, v - *owed); *owed keeps what is left
 * (0 again once paid; more if v < 0). The caller keeps each function's
 * owed per thread: the driver in the function's slot of its open counts
 * (hp_opencount.h), found once per call for both. */
static inline double hp_carry_pay(double *owed, double v)
{
	double o = *owed;
	double shown = v > o ? v - o : 0;
	*owed = o - v + shown;
	return shown;
}

#endif
