/*
 * check_view_json.c - the JSON exports (hp_view_chrome.c and
 * hp_view_speedscope.c) on traces written by hand: frames lost in a gap
 * (B/E pairs in Chrome's file, "[end lost]" frames in speedscope's, never
 * counted as calls), a lost frame whose open event speedscope had already
 * moved to its temporary file, exact microsecond timestamps, and marks and
 * values as Chrome's instant and counter events. The e2e
 * tests (92-json-exports.sh) read real programs' exports with python3.
 */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "testkit.h"

#include "../symbolize/hp_drive.h"

extern const struct hp_view_ops hp_view_chrome;
extern const struct hp_view_ops hp_view_speedscope;

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static struct tk_bytes file;
static char *out;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&file, 0, sizeof(file));
	out = NULL;
}

static void teardown(void)
{
	free(file.p);
	free(out);
	tk_remove_tree(dir);
}

/* A trace of one thread (tid 100, "main") on the 1 ns clock, whose CLOCK
 * records say tick 0 is 5 ms of CLOCK_MONOTONIC_RAW. */
static void begin_trace(void)
{
	static const char *const argv[] = { "prog" };
	tk_header(&file);
	tk_process_rec(&file, 4321, HP_CLOCK_MONOTONIC, 1700000000000000000ull, 0, "/bin/prog", 1, argv);
	tk_clock_rec(&file, 0, 5000000);
	tk_clock_rec(&file, 1000000, 6000000);
	tk_thread_rec(&file, 0, 100, "main");
}

/* Exports the file in `format`; its text in out. */
static void export(const struct hp_view_ops *ops)
{
	tk_save(path, &file);
	char err[1024] = "", *paths[] = { path };
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	ck_assert_ptr_nonnull(f);
	struct hp_view_opts vo = { .format = ops->name };
	struct hp_view v = { .ops = ops, .opts = &vo, .out = f };
	struct hp_drive_opts o = { 0 };
	int rc = hp_drive(paths, 1, &o, &v, err, sizeof(err));
	fclose(f);
	ck_assert_msg(rc == 0, "export failed: %s", err);
}

static int count(const char *needle)
{
	int n = 0;
	for (const char *p = out; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A @10, B @20, then a gap: both lost (their last tick 20); then A @100-103. */
static void gap_trace(void)
{
	begin_trace();
	static const uint8_t d[] = { 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a,
				     0x44, 0x00, 0x64, 0x83 };
	tk_events_rec(&file, 0, 4, d, sizeof(d));
	tk_end_rec(&file, 4, 0, 1);
}

START_TEST(test_chrome_lost_frames_are_b_e_pairs)
{
	gap_trace();
	export(&hp_view_chrome);
	ck_assert_int_eq(count("\"ph\":\"X\""), 1);
	ck_assert_int_eq(count("\"ph\":\"B\""), 2);
	ck_assert_int_eq(count("\"ph\":\"E\""), 2);
	ck_assert_int_eq(count("\"end\":\"lost\""), 2);
	/* tick 100 is 5 ms + 100 ns of CLOCK_MONOTONIC_RAW */
	ck_assert_msg(strstr(out, "\"ph\":\"X\",\"pid\":4321,\"tid\":100,\"ts\":5000.100,\"dur\":0.003,"),
		      "%s", out);
	/* the lost frames end at their last tick, 20 */
	ck_assert_int_eq(count("\"ph\":\"E\",\"pid\":4321,\"tid\":100,\"ts\":5000.020}"), 2);
	ck_assert_int_eq(count("\"name\":\"thread_name\",\"args\":{\"name\":\"main\"}"), 1);
	ck_assert_int_eq(count("\"name\":\"process_name\",\"args\":{\"name\":\"prog\"}"), 1);
}
END_TEST

/* A @10-20 around a mark "go \"now\"" @12 and values q = 5 @14, q = -3 @16. */
START_TEST(test_chrome_marks_are_instants_values_counters)
{
	begin_trace();
	tk_string_rec(&file, 0, "go \"now\"");
	tk_string_rec(&file, 1, "q");
	static const uint8_t d[] = { 0x43, 0x10, 0x00, 0x0a, 0x4b, 0x00, 0x04,
				     0x4c, 0x01, 0x04, 0x05, 0x4d, 0x01, 0x00, 0x00,
				     0x4c, 0x01, 0x04, 0xfd, 0xff, 0xff, 0xff, 0x0f,
				     0x4d, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x84 };
	tk_events_rec(&file, 0, 7, d, sizeof(d));
	tk_end_rec(&file, 7, 0, 1);
	export(&hp_view_chrome);
	ck_assert_int_eq(count("\"ph\":\"X\""), 1);
	ck_assert_int_eq(count("\"ph\":\"i\""), 1);
	ck_assert_int_eq(count("\"ph\":\"C\""), 2);
	ck_assert_msg(strstr(out, "{\"ph\":\"i\",\"pid\":4321,\"tid\":100,\"ts\":5000.012,"
				  "\"s\":\"t\",\"name\":\"go \\\"now\\\"\"}"), "%s", out);
	ck_assert_msg(strstr(out, "{\"ph\":\"C\",\"pid\":4321,\"tid\":100,\"ts\":5000.014,"
				  "\"name\":\"q\",\"args\":{\"q\":5}}"), "%s", out);
	ck_assert_msg(strstr(out, "{\"ph\":\"C\",\"pid\":4321,\"tid\":100,\"ts\":5000.016,"
				  "\"name\":\"q\",\"args\":{\"q\":-3}}"), "%s", out);
}
END_TEST

START_TEST(test_speedscope_lost_frames_are_frames_of_their_own)
{
	gap_trace();
	export(&hp_view_speedscope);
	ck_assert_int_eq(count("\"type\":\"O\""), 3);
	ck_assert_int_eq(count("\"type\":\"C\""), 3);
	ck_assert_int_eq(count(" [end lost]\""), 2);
	/* A's lost frame (frame 0) and its call after the gap (frame 2) differ */
	ck_assert_msg(strstr(out, "{\"type\":\"O\",\"frame\":0,\"at\":10},\n"
				  "{\"type\":\"O\",\"frame\":1,\"at\":20},\n"
				  "{\"type\":\"C\",\"frame\":1,\"at\":20},\n"
				  "{\"type\":\"C\",\"frame\":0,\"at\":20},\n"
				  "{\"type\":\"O\",\"frame\":2,\"at\":100},\n"
				  "{\"type\":\"C\",\"frame\":2,\"at\":103}]"),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"name\":\"prog pid 4321 tid 100 main\""), "%s", out);
}
END_TEST

START_TEST(test_speedscope_marks_a_lost_frame_in_its_file)
{
	/* A @1, then 3000 calls of B (6000 events: A's open event goes to the
	 * temporary file with the first 4096), then a gap */
	begin_trace();
	enum { CALLS = 3000 };
	size_t n = 0;
	uint8_t *d = malloc(6 + CALLS * 3 + 1);
	ck_assert_ptr_nonnull(d);
	d[n++] = 0x43, d[n++] = 0x10, d[n++] = 0x43, d[n++] = 0x20;
	d[n++] = 0x00, d[n++] = 0x01;
	for (int i = 0; i < CALLS; i++)
		d[n++] = 0x01, d[n++] = 0x01, d[n++] = 0x81;
	d[n++] = 0x44;
	tk_events_rec(&file, 0, 1 + 2 * CALLS, d, n);
	free(d);
	tk_end_rec(&file, 1 + 2 * CALLS, 0, 1);
	export(&hp_view_speedscope);
	ck_assert_int_eq(count("\"type\":\"O\""), 1 + CALLS);
	ck_assert_int_eq(count("\"type\":\"C\""), 1 + CALLS);
	ck_assert_msg(strstr(out, "{\"type\":\"O\",\"frame\":0,\"at\":1},"), "%.300s", out);
	ck_assert_int_eq(count(" [end lost]\""), 1);
	ck_assert_msg(strstr(out, "\"frames\":[\n{\"name\":\"") &&
			      strstr(strstr(out, "\"frames\":[\n{\"name\":\""), " [end lost]\"") <
				      strstr(strstr(out, "\"frames\":[\n{\"name\":\""), "}"),
		      "frame 0 is A's lost frame: %s", strstr(out, "\"frames\""));
}
END_TEST

static Suite *view_json_suite(void)
{
	Suite *s = suite_create("view_json");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_chrome_lost_frames_are_b_e_pairs);
	tcase_add_test(core, test_chrome_marks_are_instants_values_counters);
	tcase_add_test(core, test_speedscope_lost_frames_are_frames_of_their_own);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_speedscope_marks_a_lost_frame_in_its_file);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(view_json_suite(), top, sizeof(top), "check_view_json");
}
