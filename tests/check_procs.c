/*
 * check_procs.c - hp_procs: the order of a per-process report.
 */
#include <check.h>
#include <stdint.h>

#include "testkit.h"

#include "../symbolize/hp_procs.h"

static size_t order[16];
static unsigned depth[16];

START_TEST(test_parent_before_children)
{
	/* given children first: 30 forked 31 and 32, 31 forked 33 */
	const struct hp_proc p[] = { { 33, 31, 400 }, { 32, 30, 300 }, { 31, 30, 200 }, { 30, 1, 100 } };
	ck_assert_int_eq(hp_procs_order(p, 4, order, depth), 0);
	ck_assert_uint_eq(p[order[0]].pid, 30);
	ck_assert_uint_eq(depth[0], 0);
	ck_assert_uint_eq(p[order[1]].pid, 31);
	ck_assert_uint_eq(depth[1], 1);
	ck_assert_uint_eq(p[order[2]].pid, 33);
	ck_assert_uint_eq(depth[2], 2);
	ck_assert_uint_eq(p[order[3]].pid, 32);
	ck_assert_uint_eq(depth[3], 1);
}
END_TEST

START_TEST(test_brothers_by_start)
{
	const struct hp_proc p[] = { { 10, 1, 100 }, { 12, 10, 300 }, { 11, 10, 300 }, { 9, 10, 200 } };
	ck_assert_int_eq(hp_procs_order(p, 4, order, depth), 0);
	ck_assert_uint_eq(p[order[1]].pid, 9);
	ck_assert_uint_eq(p[order[2]].pid, 11); /* same start: by pid */
	ck_assert_uint_eq(p[order[3]].pid, 12);
}
END_TEST

START_TEST(test_unknown_parents_are_roots)
{
	/* older traces have no parent (0); a parent not recorded (sh of system()) */
	const struct hp_proc p[] = { { 5, 0, 100 }, { 7, 6, 200 } };
	ck_assert_int_eq(hp_procs_order(p, 2, order, depth), 0);
	ck_assert_uint_eq(order[0], 0);
	ck_assert_uint_eq(order[1], 1);
	ck_assert_uint_eq(depth[0], 0);
	ck_assert_uint_eq(depth[1], 0);
}
END_TEST

START_TEST(test_none)
{
	ck_assert_int_eq(hp_procs_order(NULL, 0, order, depth), 0);
}
END_TEST

START_TEST(test_pid_reused)
{
	/* pid 20 twice: the child of the later one hangs under the later one;
	 * a process is never its own parent */
	const struct hp_proc p[] = { { 20, 1, 100 }, { 20, 1, 500 }, { 21, 20, 600 }, { 22, 22, 50 } };
	ck_assert_int_eq(hp_procs_order(p, 4, order, depth), 0);
	size_t seen = 0;
	for (size_t i = 0; i < 4; i++) {
		seen |= (size_t)1 << order[i];
		if (order[i] == 2) {
			ck_assert_uint_eq(order[i - 1], 1);
			ck_assert_uint_eq(depth[i], 1);
		}
	}
	ck_assert_uint_eq(seen, 15);
}
END_TEST

START_TEST(test_cycle)
{
	/* pids reused in a loop: each is shown once, as a root */
	const struct hp_proc p[] = { { 1, 2, 100 }, { 2, 1, 100 } };
	ck_assert_int_eq(hp_procs_order(p, 2, order, depth), 0);
	ck_assert_uint_eq(order[0] + order[1], 1);
	ck_assert_uint_eq(depth[0] + depth[1], 0);
}
END_TEST

static Suite *procs_suite(void)
{
	Suite *s = suite_create("procs");
	TCase *core = tcase_create("core");
	tcase_add_test(core, test_parent_before_children);
	tcase_add_test(core, test_brothers_by_start);
	tcase_add_test(core, test_unknown_parents_are_roots);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_test(limits, test_none);
	tcase_add_test(limits, test_pid_reused);
	tcase_add_test(limits, test_cycle);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(procs_suite());
}
