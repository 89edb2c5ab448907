/*
 * check_carry.c - time below 0 carried to a function's next calls: every
 * call shows at least 0, the sums stay those of the unclamped times (the
 * driver's table of what functions owe: check_opencount).
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "testkit.h"

#include "../symbolize/hp_carry.h"

/* What each function owes, as a caller keeps it (by function). */
static double owed[8];

static void setup(void)
{
	for (size_t i = 0; i < sizeof(owed) / sizeof(owed[0]); i++)
		owed[i] = 0;
}

static double settle(uint32_t fn, double v)
{
	double shown = hp_carry_pay(&owed[fn], v);
	ck_assert(shown >= 0);
	ck_assert(owed[fn] >= 0);
	return shown;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_nothing_owed_shows_as_is)
{
	ck_assert_double_eq(settle(3, 7.5), 7.5);
	ck_assert_double_eq(owed[3], 0);
}
END_TEST

START_TEST(test_below_zero_owed_then_paid)
{
	ck_assert_double_eq(settle(3, -2), 0);
	ck_assert_double_eq(owed[3], 2);
	ck_assert_double_eq(settle(3, -1), 0);
	ck_assert_double_eq(owed[3], 3);
	ck_assert_double_eq(settle(3, 2), 0); /* pays 2 of 3 */
	ck_assert_double_eq(owed[3], 1);
	ck_assert_double_eq(settle(3, 9), 8);
	ck_assert_double_eq(owed[3], 0);
}
END_TEST

/* The clock's step: calls of 10 and 20 less a cost of 11, 1000 times. */
START_TEST(test_sum_is_the_unclamped_sum)
{
	double sum = 0, truth = 0;
	for (int i = 0; i < 1000; i++) {
		double v = (i % 10 < 9 ? 10.0 : 20.0) - 11;
		truth += v;
		sum += settle(5, v);
	}
	ck_assert_double_eq(truth, 0);
	ck_assert_double_eq(sum + owed[5], 0);
	ck_assert_double_le(sum, 9); /* at most the last unpaid call's 9 */
}
END_TEST

START_TEST(test_functions_owe_apart)
{
	ck_assert_double_eq(settle(1, -4), 0);
	ck_assert_double_eq(settle(2, 5), 5);
	ck_assert_double_eq(settle(1, 5), 1);
	ck_assert_double_eq(owed[2], 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("carry");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, NULL);
	tcase_add_test(core, test_nothing_owed_shows_as_is);
	tcase_add_test(core, test_below_zero_owed_then_paid);
	tcase_add_test(core, test_sum_is_the_unclamped_sum);
	tcase_add_test(core, test_functions_owe_apart);
	suite_add_tcase(s, core);
	return s;
}

int main(void) { return tk_run_suite(suite()); }
