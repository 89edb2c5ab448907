/*
 * check_spacing.c - a hook pair's cost read from the spacing of hand-made
 * events: leaf calls give the inside part, gaps between a caller's calls
 * the outside part, with exact expected means.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#include "../symbolize/hp_spacing.h"

enum { P = 1, LEAF, SLOW, Q };

static struct hp_spacing *sp;
static struct hp_spacing_cost cost;
static struct hp_ev ev[8192];
static size_t nev;
static uint64_t now;

static void setup(void)
{
	sp = hp_spacing_new();
	ck_assert_ptr_nonnull(sp);
	nev = 0;
	now = 1000;
}

static void teardown(void) { hp_spacing_free(sp); }

static void put(uint32_t kind, uint32_t func, uint64_t after)
{
	ck_assert_uint_lt(nev, sizeof(ev) / sizeof(ev[0]));
	now += after;
	ev[nev++] = (struct hp_ev){ .tick = now, .func = func, .kind = kind };
}

/* Inside an open caller: n calls of fn lasting `in` ticks, each `gap`
 * ticks after the previous one's exit. */
static void calls(uint32_t fn, size_t n, uint64_t in, uint64_t gap)
{
	for (size_t i = 0; i < n; i++) {
		put(HP_EV_ENTER, fn, gap);
		put(HP_EV_EXIT, fn, in);
	}
}

static void feed_and_measure(double in_limit, double out_limit)
{
	ck_assert_int_eq(hp_spacing_feed(sp, 0, ev, nev), 0);
	nev = 0;
	hp_spacing_result(sp, in_limit, out_limit, &cost);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_leaves_and_gaps_give_both_parts)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, 600, 30, 25);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert(cost.has_inside && cost.has_outside);
	ck_assert_double_eq(cost.inside, 30);
	ck_assert_uint_eq(cost.inside_calls, 600);
	/* 599 gaps: the first call follows its caller's enter, not an exit */
	ck_assert_double_eq(cost.outside, 25);
	ck_assert_uint_eq(cost.outside_gaps, 599);
	ck_assert_uint_eq(cost.events, 1202);
}
END_TEST

/* Functions below the limit count by their calls; one above it does real
 * work and counts not at all. */
START_TEST(test_mean_weighted_over_short_functions)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, 600, 20, 25);
	calls(Q, 1800, 28, 25);
	calls(SLOW, 600, 90, 25);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(60, 100);
	ck_assert_double_eq(cost.inside, (600.0 * 20 + 1800.0 * 28) / 2400);
	ck_assert_uint_eq(cost.inside_calls, 2400);
}
END_TEST

/* Leaves that held hookprof's own time, a pause or a mark, and gaps with
 * one in them, are not spacings of the hooks. */
START_TEST(test_interrupted_spacings_left_out)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, 600, 30, 25);
	for (int i = 0; i < 100; i++) {
		put(HP_EV_ENTER, LEAF, 25);
		put(HP_EV_OWN, 0, 500);
		put(HP_EV_EXIT, LEAF, 30);
		put(HP_EV_MARK, 7, 1000);
	}
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert_double_eq(cost.inside, 30);
	ck_assert_uint_eq(cost.inside_calls, 600);
	ck_assert_double_eq(cost.outside, 25);
	ck_assert_uint_eq(cost.outside_gaps, 599 + 1); /* the first interrupted leaf follows a clean exit */
}
END_TEST

/* A call whose only callee is a leaf is no leaf itself: its spacing holds
 * its callee's. */
START_TEST(test_callers_of_leaves_are_no_leaves)
{
	put(HP_EV_ENTER, Q, 0);
	for (int i = 0; i < 600; i++) {
		put(HP_EV_ENTER, P, 10);
		calls(LEAF, 1, 30, 10);
		put(HP_EV_EXIT, P, 10);
	}
	put(HP_EV_EXIT, Q, 5);
	feed_and_measure(100, 100);
	ck_assert_double_eq(cost.inside, 30);
	ck_assert_uint_eq(cost.inside_calls, 600);
}
END_TEST

/* A preempted call says nothing of the hooks: left out of the mean. */
START_TEST(test_long_spacings_left_out)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, 600, 30, 25);
	calls(LEAF, 10, HP_SPACING_LONG_TICKS * 100, HP_SPACING_LONG_TICKS * 50);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert_double_eq(cost.inside, 30);
	ck_assert_uint_eq(cost.inside_calls, 600);
	ck_assert_double_eq(cost.outside, 25);
}
END_TEST

/* Regions (the control API) are frames without hooks. */
START_TEST(test_regions_are_not_hooks)
{
	put(HP_EV_ENTER, P, 0);
	calls(HP_REGION_FUNC | 3, 600, 5, 5);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert(!cost.has_inside && !cost.has_outside);
}
END_TEST

/* Each stream keeps its own stack: interleaved pieces still pair up. */
START_TEST(test_streams_apart)
{
	struct hp_ev a[2], b[2];
	for (int i = 0; i < 600; i++) {
		a[0] = (struct hp_ev){ .tick = 100u * i, .func = LEAF, .kind = HP_EV_ENTER };
		b[0] = (struct hp_ev){ .tick = 100u * i + 1, .func = Q, .kind = HP_EV_ENTER };
		a[1] = (struct hp_ev){ .tick = 100u * i + 30, .func = LEAF, .kind = HP_EV_EXIT };
		b[1] = (struct hp_ev){ .tick = 100u * i + 41, .func = Q, .kind = HP_EV_EXIT };
		ck_assert_int_eq(hp_spacing_feed(sp, 0, a, 2), 0);
		ck_assert_int_eq(hp_spacing_feed(sp, 5, b, 2), 0);
	}
	hp_spacing_result(sp, 100, 100, &cost);
	ck_assert_double_eq(cost.inside, 35);
	ck_assert_uint_eq(cost.inside_calls, 1200);
	ck_assert(!cost.has_outside); /* roots: no caller to bill */
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_too_few_samples_say_nothing)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, HP_SPACING_MIN_SAMPLES - 1, 30, 25);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert(!cost.has_inside && !cost.has_outside);
}
END_TEST

/* More than a tenth of long calls: a function that works, not a witness. */
START_TEST(test_mostly_long_function_no_witness)
{
	put(HP_EV_ENTER, P, 0);
	calls(LEAF, 600, 30, 25);
	calls(LEAF, 100, HP_SPACING_LONG_TICKS, 25);
	put(HP_EV_EXIT, P, 5);
	feed_and_measure(100, 100);
	ck_assert(!cost.has_inside);
	ck_assert(cost.has_outside);
}
END_TEST

START_TEST(test_exits_before_any_enter_and_resets)
{
	put(HP_EV_EXIT, P, 0);
	put(HP_EV_EXIT, Q, 3);
	put(HP_EV_ENTER, P, 3);
	put(HP_EV_ENTER, Q, 3);
	put(HP_EV_RESET, 0, 3);
	put(HP_EV_EXIT, Q, 3); /* after the reset: nothing open */
	feed_and_measure(100, 100);
	ck_assert(!cost.has_inside && !cost.has_outside);
	ck_assert_uint_eq(cost.events, 6);
}
END_TEST

START_TEST(test_missing_trace)
{
	char err[256] = "";
	ck_assert_int_eq(hp_spacing_measure("/nonexistent/t.hookprof", 10, 10, &cost, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/t.hookprof"));
}
END_TEST

/* A spacing bounds the cost from above: it lowers a calibration above it,
 * never raises one below it, and a side with no witness keeps its own. */
START_TEST(test_cap_lowers_only)
{
	struct hp_spacing_cost c = { .inside = 8, .outside = 14, .has_inside = 1, .has_outside = 1 };
	double in = 10, out = 10;
	hp_spacing_cap(&c, &in, &out);
	ck_assert_double_eq(in, 8);
	ck_assert_double_eq(out, 10);
	c.has_inside = 0;
	c.outside = 3;
	in = 10;
	hp_spacing_cap(&c, &in, &out);
	ck_assert_double_eq(in, 10);
	ck_assert_double_eq(out, 3);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("spacing");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_leaves_and_gaps_give_both_parts);
	tcase_add_test(core, test_mean_weighted_over_short_functions);
	tcase_add_test(core, test_interrupted_spacings_left_out);
	tcase_add_test(core, test_long_spacings_left_out);
	tcase_add_test(core, test_callers_of_leaves_are_no_leaves);
	tcase_add_test(core, test_regions_are_not_hooks);
	tcase_add_test(core, test_streams_apart);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_too_few_samples_say_nothing);
	tcase_add_test(limits, test_mostly_long_function_no_witness);
	tcase_add_test(limits, test_exits_before_any_enter_and_resets);
	tcase_add_test(limits, test_missing_trace);
	tcase_add_test(limits, test_cap_lowers_only);
	suite_add_tcase(s, limits);
	return s;
}

int main(void) { return tk_run_suite(suite()); }
