/*
 * check_opencount.c - open frames per function: counts, the slot noted at
 * an enter found again at the exit across rehashes, and the time a
 * function owes kept in its slot after its last frame closed.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "testkit.h"

#include "../symbolize/hp_carry.h"
#include "../symbolize/hp_opencount.h"

static struct hp_opencount t;

static void setup(void) { t = (struct hp_opencount){ 0 }; }
static void teardown(void) { hp_opencount_free(&t); }

static size_t enter(uint32_t func, int64_t open_before)
{
	size_t at = SIZE_MAX;
	ck_assert_int_eq(hp_opencount_add_at(&t, func, &at), open_before);
	ck_assert_uint_lt(at, t.cap);
	return at;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_counts_open_frames)
{
	ck_assert_uint_eq(hp_opencount_get(&t, 7), 0);
	enter(7, 0);
	enter(7, 1);
	enter(8, 0);
	ck_assert_uint_eq(hp_opencount_get(&t, 7), 2);
	hp_opencount_sub(&t, 7);
	ck_assert_uint_eq(hp_opencount_get(&t, 7), 1);
	ck_assert_uint_eq(hp_opencount_get(&t, 8), 1);
}
END_TEST

START_TEST(test_slot_noted_at_enter_is_found_after_rehashes)
{
	size_t at = enter(1, 0);
	for (uint32_t f = 2; f < 3000; f++) /* open, so every rehash keeps them */
		enter(f, 0);
	struct hp_open_slot *s = hp_opencount_at(&t, 1, at);
	ck_assert_uint_eq(s->key, 2);
	ck_assert_uint_eq(s->n, 1);
	/* a hint past the table, or naming another function's slot */
	ck_assert_ptr_eq(hp_opencount_at(&t, 1, t.cap + 5), s);
	size_t other = (size_t)(hp_opencount_at(&t, 2999, 0) - t.slot);
	ck_assert_ptr_eq(hp_opencount_at(&t, 1, other), s);
}
END_TEST

/* A function's debt stays when its last frame closes and the table is
 * rebuilt; a closed function that owes nothing goes. */
START_TEST(test_owed_outlives_a_rehash)
{
	size_t at = enter(1, 0);
	struct hp_open_slot *s = hp_opencount_at(&t, 1, at);
	ck_assert_double_eq(hp_carry_pay(&s->owed, -3), 0);
	s->n--;
	at = enter(2, 0);
	hp_opencount_at(&t, 2, at)->n--;
	ck_assert_int_eq(hp_opencount_rehash(&t), 0);
	ck_assert_uint_eq(t.used, 1);
	at = enter(1, 0);
	s = hp_opencount_at(&t, 1, at);
	ck_assert_double_eq(s->owed, 3);
	ck_assert_double_eq(hp_carry_pay(&s->owed, 5), 2);
	ck_assert_double_eq(s->owed, 0);
}
END_TEST

/* ---------------------------------------------------------------- limits */

/* Many functions owe, each closed: their debts stay through the rehashes
 * that more of them bring, and one never seen owes nothing. */
START_TEST(test_many_functions_owe_through_rehashes)
{
	for (uint32_t f = 0; f < 5000; f++) {
		uint32_t fn = f * 7919u;
		struct hp_open_slot *s = hp_opencount_at(&t, fn, enter(fn, 0));
		ck_assert_double_eq(hp_carry_pay(&s->owed, -(double)(f % 13) - 1), 0);
		s->n--;
	}
	for (uint32_t f = 0; f < 5000; f++) {
		uint32_t fn = f * 7919u;
		ck_assert_uint_eq(hp_opencount_get(&t, fn), 0);
		ck_assert_double_eq(hp_opencount_at(&t, fn, enter(fn, 0))->owed, (double)(f % 13) + 1);
	}
	ck_assert_uint_eq(t.used, 5000);
	ck_assert_uint_le(2 * t.used, t.cap);
	ck_assert_double_eq(hp_opencount_at(&t, UINT32_MAX - 1, enter(UINT32_MAX - 1, 0))->owed, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("opencount");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_counts_open_frames);
	tcase_add_test(core, test_slot_noted_at_enter_is_found_after_rehashes);
	tcase_add_test(core, test_owed_outlives_a_rehash);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_many_functions_owe_through_rehashes);
	suite_add_tcase(s, limits);
	return s;
}

int main(void) { return tk_run_suite(suite()); }
