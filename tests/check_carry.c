/*
 * check_carry.c - time below 0 carried to a function's next calls: every
 * call shows at least 0, the sums stay those of the unclamped times.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "testkit.h"

#include "../symbolize/hp_carry.h"

static struct hp_carry carry;

static void setup(void) { carry = (struct hp_carry){ 0 }; }
static void teardown(void) { hp_carry_free(&carry); }

static double settle(uint32_t fn, double v)
{
	double shown = -1;
	ck_assert_int_eq(hp_carry_settle(&carry, fn, v, &shown), 0);
	ck_assert(shown >= 0);
	return shown;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_nothing_owed_shows_as_is)
{
	ck_assert_double_eq(settle(3, 7.5), 7.5);
	ck_assert_double_eq(hp_carry_owed(&carry, 3), 0);
	ck_assert_uint_eq(carry.used, 0); /* nothing kept for it */
}
END_TEST

START_TEST(test_below_zero_owed_then_paid)
{
	ck_assert_double_eq(settle(3, -2), 0);
	ck_assert_double_eq(hp_carry_owed(&carry, 3), 2);
	ck_assert_double_eq(settle(3, -1), 0);
	ck_assert_double_eq(hp_carry_owed(&carry, 3), 3);
	ck_assert_double_eq(settle(3, 2), 0); /* pays 2 of 3 */
	ck_assert_double_eq(hp_carry_owed(&carry, 3), 1);
	ck_assert_double_eq(settle(3, 9), 8);
	ck_assert_double_eq(hp_carry_owed(&carry, 3), 0);
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
	ck_assert_double_eq(sum + hp_carry_owed(&carry, 5), 0);
	ck_assert_double_le(sum, 9); /* at most the last unpaid call's 9 */
}
END_TEST

START_TEST(test_functions_owe_apart)
{
	ck_assert_double_eq(settle(1, -4), 0);
	ck_assert_double_eq(settle(2, 5), 5);
	ck_assert_double_eq(settle(1, 5), 1);
	ck_assert_double_eq(hp_carry_owed(&carry, 2), 0);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_many_functions_grow_the_table)
{
	for (uint32_t f = 0; f < 5000; f++)
		ck_assert_double_eq(settle(f * 7919u, -(double)(f % 13) - 1), 0);
	for (uint32_t f = 0; f < 5000; f++)
		ck_assert_double_eq(hp_carry_owed(&carry, f * 7919u), (double)(f % 13) + 1);
	ck_assert_uint_eq(carry.used, 5000);
	ck_assert_uint_le(2 * carry.used, carry.cap);
	ck_assert_double_eq(hp_carry_owed(&carry, UINT32_MAX - 1), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("carry");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_nothing_owed_shows_as_is);
	tcase_add_test(core, test_below_zero_owed_then_paid);
	tcase_add_test(core, test_sum_is_the_unclamped_sum);
	tcase_add_test(core, test_functions_owe_apart);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_many_functions_grow_the_table);
	suite_add_tcase(s, limits);
	return s;
}

int main(void) { return tk_run_suite(suite()); }
