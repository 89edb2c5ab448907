/*
 * check_view_flat.c - the flat view (report) fed hand-made frames through
 * its ops, over a driver that reads no trace: calls, total (outermost
 * activations only), self, min and max per function, lost frames left
 * out, per-thread sections; its CSV read back.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../symbolize/hp_drive.h"
#include "../symbolize/hp_flat.h"
#include "../symbolize/hp_report.h"
#include "../symbolize/hp_view.h"
#include "testkit.h"

static struct hp_drive *d;
static struct hp_view v;
static struct hp_view_opts vo;
static char *text;
static size_t len;

static void setup(void)
{
	d = hp_drive_bare();
	ck_assert_ptr_nonnull(d);
	vo = (struct hp_view_opts){ .format = "csv", .sort = HP_SORT_NAME };
	v = (struct hp_view){ .ops = hp_view_find("report"), .opts = &vo, .d = d };
	ck_assert_ptr_nonnull(v.ops);
	text = NULL;
	v.out = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(v.out);
}

static void teardown(void)
{
	if (v.out)
		fclose(v.out);
	free(text);
	hp_drive_bare_free(d);
}

static void open_view(void)
{
	char err[256];
	ck_assert_int_eq(v.ops->open(&v, err, sizeof(err)), 0);
}

/* One call of fn at depth, from start to end, self and outermost as given:
 * counted in the view's flat profile, as the driver counts it. */
static void call(struct hp_vthread *t, uint32_t fn, uint32_t depth, double start, double end,
		 double self, int outermost, int lost)
{
	struct hp_vframe f = { .fn = fn, .depth = depth, .start = start, .outermost = outermost };
	if (v.ops->enter)
		ck_assert_int_eq(v.ops->enter(&v, t, &f), 0);
	f.end = end;
	f.dur = end - start;
	f.self = self;
	f.lost = lost;
	ck_assert_ptr_nonnull(v.flat);
	ck_assert_ptr_null(v.ops->exit);
	if (!lost) /* a lost frame (a gap in the trace) is no call */
		ck_assert_int_eq(hp_flat_count(v.flat, hp_flat_group(v.flat_per, t), fn, f.dur, self, outermost), 0);
}

/* The output, its \r removed. */
static const char *finish(void)
{
	char err[256];
	ck_assert_int_eq(v.ops->end(&v, err, sizeof(err)), 0);
	v.ops->close(&v);
	fclose(v.out);
	v.out = NULL;
	char *w = text;
	for (char *r = text; *r; r++)
		if (*r != '\r')
			*w++ = *r;
	*w = 0;
	return text;
}

#define HEAD "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\n"

/* ------------------------------------------------------------------ core */

START_TEST(test_nested_calls)
{
	uint32_t m = hp_drive_bare_fn(d, "main", "/s/m.c", 3), a = hp_drive_bare_fn(d, "a", NULL, 0);
	struct hp_vthread *t = hp_drive_bare_thread(d, 0, 1);
	open_view();
	/* main [0,100] calls a twice: [10,30] and [40,70]. Exits come inner first. */
	call(t, a, 1, 10, 30, 20, 1, 0);
	call(t, a, 1, 40, 70, 30, 1, 0);
	call(t, m, 0, 0, 100, 50, 1, 0);
	ck_assert_str_eq(finish(), HEAD "a,2,50,50,25,20,30,test,\n"
					 "main,1,100,50,100,100,100,test,/s/m.c:3\n");
}
END_TEST

START_TEST(test_recursion_total_once)
{
	uint32_t f = hp_drive_bare_fn(d, "f", NULL, 0);
	struct hp_vthread *t = hp_drive_bare_thread(d, 0, 1);
	open_view();
	/* f [0,100] calls f [20,80] calls f [30,40]: total is the outer's only. */
	call(t, f, 2, 30, 40, 10, 0, 0);
	call(t, f, 1, 20, 80, 50, 0, 0);
	call(t, f, 0, 0, 100, 40, 1, 0);
	ck_assert_str_eq(finish(), HEAD "f,3,100,100,33,10,100,test,\n");
}
END_TEST

START_TEST(test_lost_frames_not_counted)
{
	uint32_t f = hp_drive_bare_fn(d, "f", NULL, 0), g = hp_drive_bare_fn(d, "g", NULL, 0);
	struct hp_vthread *t = hp_drive_bare_thread(d, 0, 1);
	open_view();
	call(t, g, 1, 5, 9, 4, 1, 0);
	call(t, f, 0, 0, 10, 6, 1, 1); /* a gap: its exit was lost */
	call(t, f, 0, 20, 30, 10, 1, 0);
	ck_assert_str_eq(finish(), HEAD "f,1,10,10,10,10,10,test,\ng,1,4,4,4,4,4,test,\n");
}
END_TEST

START_TEST(test_threads_summed_and_apart)
{
	uint32_t w = hp_drive_bare_fn(d, "work", NULL, 0);
	struct hp_vthread *t1 = hp_drive_bare_thread(d, 0, 11), *t2 = hp_drive_bare_thread(d, 0, 12);
	open_view();
	call(t1, w, 0, 0, 100, 100, 1, 0);
	call(t2, w, 0, 0, 100, 100, 1, 0);
	call(t2, w, 0, 200, 250, 50, 1, 0);
	ck_assert_str_eq(finish(), HEAD "work,3,250,250,83,50,100,test,\n");
}
END_TEST

START_TEST(test_per_thread_sections)
{
	uint32_t w = hp_drive_bare_fn(d, "work", NULL, 0);
	struct hp_vthread *t1 = hp_drive_bare_thread(d, 0, 11), *t2 = hp_drive_bare_thread(d, 0, 12);
	struct hp_vthread *t3 = hp_drive_bare_thread(d, 0, 13), *t4 = hp_drive_bare_thread(d, 0, 14);
	vo.per = HP_PER_THREAD;
	open_view();
	call(t3, w, 0, 0, 10, 10, 1, 1); /* only a lost frame: no section */
	call(t4, w, 0, 0, 10, 10, 1, 0);
	call(t1, w, 0, 0, 100, 100, 1, 0);
	call(t2, w, 0, 0, 100, 100, 1, 0);
	call(t2, w, 0, 200, 250, 50, 1, 0);
	ck_assert_str_eq(finish(), "## thread 11, process 11 test (?)\n" HEAD "work,1,100,100,100,100,100,test,\n\n"
				   "## thread 12, process 12 test (?)\n" HEAD "work,2,150,150,75,50,100,test,\n\n"
				   "## thread 14, process 14 test (?)\n" HEAD "work,1,10,10,10,10,10,test,\n\n");
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_no_calls_header_only)
{
	hp_drive_bare_fn(d, "never", NULL, 0);
	open_view();
	ck_assert_str_eq(finish(), HEAD);
}
END_TEST

START_TEST(test_zero_length_call)
{
	uint32_t f = hp_drive_bare_fn(d, "f", NULL, 0);
	struct hp_vthread *t = hp_drive_bare_thread(d, 0, 1);
	open_view();
	call(t, f, 0, 50, 90, 40, 1, 0);
	call(t, f, 0, 100, 100, 0, 1, 0);
	ck_assert_str_eq(finish(), HEAD "f,2,40,40,20,0,40,test,\n");
}
END_TEST

START_TEST(test_only_lost)
{
	uint32_t f = hp_drive_bare_fn(d, "f", NULL, 0);
	struct hp_vthread *t = hp_drive_bare_thread(d, 0, 1);
	open_view();
	call(t, f, 0, 0, 10, 10, 1, 1);
	ck_assert_str_eq(finish(), HEAD);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("view_flat");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_nested_calls);
	tcase_add_test(core, test_recursion_total_once);
	tcase_add_test(core, test_lost_frames_not_counted);
	tcase_add_test(core, test_threads_summed_and_apart);
	tcase_add_test(core, test_per_thread_sections);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_no_calls_header_only);
	tcase_add_test(limits, test_zero_length_call);
	tcase_add_test(limits, test_only_lost);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(suite());
}
