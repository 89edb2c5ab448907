/*
 * check_progress.c - the progress line: shown only on a terminal, not
 * before its delay, at most once per interval, cleared at the end.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../symbolize/hp_progress.h"
#include "testkit.h"

static char *text;
static size_t len;
static FILE *out;

static void setup(void)
{
	out = open_memstream(&text, &len);
}

static void teardown(void)
{
	fclose(out);
	free(text);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_not_a_terminal_shows_nothing)
{
	struct hp_progress p;
	hp_progress_start_on(&p, out, 0, "reading t.hookprof", 100);
	p.delay_ns = p.every_ns = 0;
	hp_progress_update(&p, 50);
	hp_progress_done(&p);
	fflush(out);
	ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(test_terminal_shows_percent_and_clears)
{
	struct hp_progress p;
	hp_progress_start_on(&p, out, 1, "reading t", 200);
	p.delay_ns = p.every_ns = 0;
	hp_progress_update(&p, 90);
	hp_progress_update(&p, 91); /* still 45%: not again */
	hp_progress_update(&p, 200);
	hp_progress_done(&p);
	fflush(out);
	ck_assert_str_eq(text, "\rreading t: 45%\rreading t: 100%\r               \r");
}
END_TEST

START_TEST(test_nothing_before_the_delay)
{
	struct hp_progress p;
	hp_progress_start_on(&p, out, 1, "reading t", 100);
	hp_progress_update(&p, 50); /* a command of under a second says nothing */
	hp_progress_done(&p);
	fflush(out);
	ck_assert_uint_eq(len, 0);
}
END_TEST

/* -------------------------------------------------------------- limits */

START_TEST(test_rate_limited)
{
	struct hp_progress p;
	hp_progress_start_on(&p, out, 1, "r", 1000);
	p.delay_ns = 0;
	p.every_ns = 3600ull * 1000000000ull; /* one line an hour */
	for (int i = 1; i <= 1000; i++)
		hp_progress_update(&p, (uint64_t)i);
	fflush(out);
	ck_assert_str_eq(text, "\rr: 0%");
}
END_TEST

START_TEST(test_zero_total_and_past_total)
{
	struct hp_progress p;
	hp_progress_start_on(&p, out, 1, "r", 0);
	p.delay_ns = p.every_ns = 0;
	hp_progress_update(&p, 10);
	hp_progress_done(&p);
	fflush(out);
	ck_assert_uint_eq(len, 0);
	hp_progress_start_on(&p, out, 1, "r", 10);
	p.delay_ns = p.every_ns = 0;
	hp_progress_update(&p, 20);
	fflush(out);
	ck_assert_str_eq(text, "\rr: 100%");
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_not_a_terminal_shows_nothing);
	tcase_add_test(core, test_terminal_shows_percent_and_clears);
	tcase_add_test(core, test_nothing_before_the_delay);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_rate_limited);
	tcase_add_test(limits, test_zero_total_and_past_total);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(progress_suite());
}
