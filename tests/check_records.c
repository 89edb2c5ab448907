/*
 * check_records.c - lib/hp_records.c, the one builder of the trace's
 * records. Each test creates a trace with hp_output_create, hands records
 * their data, and reads the file back with the symbolize reader
 * (hp_reader, hp_trace_info_add), which follows docs/format.md: every
 * field must come back as it was given, each record the size the format
 * says.
 *
 * hp_output keeps static state, so every test runs in its own process
 * (Check's default CK_FORK).
 */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "hp_output.h"
#include "hp_records.h"
#include "testkit.h"

#include "../symbolize/hp_trace.h"

static char top[PATH_MAX - 256];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct hp_trace_info info;
/* The types of the records read, in order, and their payload sizes. */
static uint32_t types[64], sizes[64];
static int nrecs;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/r.hookprof", dir);
	memset(&info, 0, sizeof(info));
	nrecs = 0;
	ck_assert_msg(hp_output_create(path, "prog", 1, err, sizeof(err)) == 0, "%s", err);
}

static void teardown(void)
{
	hp_trace_info_free(&info);
	tk_remove_tree(dir);
}

static void add_record(void *arg, uint32_t type, const uint8_t *payload, uint32_t size)
{
	(void)arg;
	ck_assert_int_lt(nrecs, 64);
	types[nrecs] = type;
	sizes[nrecs++] = size;
	if (type != HP_REC_EVENTS)
		ck_assert_msg(hp_trace_info_add(&info, type, payload, size, err, sizeof(err)) == 0, "%s", err);
}

/* Flushes, then reads every record into info. */
static void load(void)
{
	ck_assert_int_eq(hp_output_flush(), 0);
	tk_each_record(path, add_record, NULL);
}

START_TEST(test_process)
{
	static const char cmdline[] = "prog\0-x\0\0last";
	struct hp_process_info p = { .pid = 4242, .clock = HP_CLOCK_TSC, .start_ns = 1234567890123ull,
				     .ring = 1, .exe = "/bin/prog-and-more", .exe_len = 9,
				     .cmdline = cmdline, .cmdline_len = sizeof(cmdline),
				     .buffer_bytes = 8u << 20, .clock_step = 17 };
	hp_records_process(&p);
	load();
	ck_assert_int_eq(nrecs, 1);
	ck_assert_uint_eq(types[0], HP_REC_PROCESS);
	ck_assert_uint_eq(info.pid, 4242);
	ck_assert_uint_eq(info.clock_source, HP_CLOCK_TSC);
	ck_assert_uint_eq(info.start_realtime_ns, 1234567890123ull);
	ck_assert_uint_eq(info.flags & 1, 1);
	ck_assert_str_eq(info.exe, "/bin/prog"); /* exe_len bytes, no more */
	/* four arguments, an empty one among them */
	ck_assert_uint_eq(info.argc, 4);
	ck_assert_str_eq(info.argv[0], "prog");
	ck_assert_str_eq(info.argv[1], "-x");
	ck_assert_str_eq(info.argv[2], "");
	ck_assert_str_eq(info.argv[3], "last");
	ck_assert_uint_eq(info.buffer_bytes, 8u << 20);
	ck_assert_uint_eq(info.clock_step, 17);
}
END_TEST

START_TEST(test_parent_clock_calibration)
{
	hp_records_parent(77, HP_PARENT_FORKED | HP_PARENT_FRAMES, 999, "/tmp/parent.hookprof");
	hp_records_clock(1000, 2000);
	hp_records_clock(5000, 4000);
	struct hp_calibration c = { .pairs = 10, .inside = 250, .outside = 150 };
	hp_records_calibration(HP_CALIBRATION_START, &c);
	load();
	ck_assert_int_eq(nrecs, 4);
	ck_assert(info.has_parent);
	ck_assert_uint_eq(info.parent_pid, 77);
	ck_assert_uint_eq(info.parent_flags, HP_PARENT_FORKED | HP_PARENT_FRAMES);
	ck_assert_uint_eq(info.fork_tick, 999);
	ck_assert_str_eq(info.parent_trace, "/tmp/parent.hookprof");
	ck_assert_int_eq(info.nclocks, 2);
	ck_assert_uint_eq(info.clock_tick[0], 1000);
	ck_assert_uint_eq(info.clock_ns[1], 4000);
	ck_assert_uint_eq(info.calib[HP_CALIBRATION_START].pairs, 10);
	ck_assert(info.calib[HP_CALIBRATION_START].inside == 25.0);
	ck_assert(info.calib[HP_CALIBRATION_START].outside == 15.0);
}
END_TEST

START_TEST(test_filter)
{
	struct hp_filter_info f = { .min_ns = 5000, .calls = 3, .ticks = 900, .depth = 4,
				    .exclude = "^helper,x", .include = NULL };
	hp_records_filter(&f);
	load();
	ck_assert(info.has_filter);
	ck_assert_uint_eq(info.filter_min_ns, 5000);
	ck_assert_uint_eq(info.filter_min_calls, 3);
	ck_assert_uint_eq(info.filter_min_ticks, 900);
	ck_assert_uint_eq(info.filter_depth, 4);
	ck_assert_str_eq(info.filter_exclude, "^helper,x");
	ck_assert_str_eq(info.filter_include, "");
}
END_TEST

START_TEST(test_thread_lost_string_end)
{
	hp_records_thread(0, 31, "worker-with-a-long-name", 6);
	hp_records_lost(0, HP_LOST_RING, 12);
	hp_records_lost(0, HP_LOST_REENTRY, 0); /* nothing: no record */
	hp_records_lost(HP_STREAM_NONE, HP_LOST_LATE, 5);
	hp_records_string(3, "region", 6);
	hp_records_end(100, 17, 1);
	load();
	ck_assert_int_eq(nrecs, 5);
	ck_assert_uint_ge(info.nstreams, 1);
	ck_assert_uint_eq(info.streams[0].tid, 31);
	ck_assert_str_eq(info.streams[0].name, "worker");
	ck_assert_uint_eq(info.streams[0].lost, 12);
	ck_assert_uint_eq(info.lost_global, 5);
	ck_assert_uint_gt(info.nstrings, 3);
	ck_assert_str_eq(info.strings[3], "region");
	ck_assert(info.has_end);
	ck_assert_uint_eq(info.end_events, 100);
	ck_assert_uint_eq(info.end_lost, 17);
}
END_TEST

START_TEST(test_stack_and_crash)
{
	struct hp_frames s = { .n = 3, .flags = HP_STACK_TRUNCATED, .pc = { 0x401000, 0x402000, 0x403000 } };
	hp_records_thread(0, 31, "main", 4);
	hp_records_stack(0, &s);
	static struct hp_crash_info c = { .stream = 0, .tid = 31, .sig = 11, .code = 1, .n = 2,
					  .addr = 0xdead, .unwind_ns = 4000, .pc = { 0x401234, 0x405678 } };
	hp_records_crash(&c);
	load();
	ck_assert_uint_eq(sizes[1], 12 + 3 * 8);
	ck_assert_uint_eq(info.streams[0].root.n, 3);
	ck_assert_uint_eq(info.streams[0].root.flags, HP_STACK_TRUNCATED);
	ck_assert_uint_eq(info.streams[0].root.pc[2], 0x403000);
	ck_assert(info.crash.present);
	ck_assert_uint_eq(info.crash.tid, 31);
	ck_assert_uint_eq(info.crash.signal, 11);
	ck_assert_int_eq(info.crash.code, 1);
	ck_assert_uint_eq(info.crash.addr, 0xdead);
	ck_assert_uint_eq(info.crash.unwind_ns, 4000);
	ck_assert_uint_eq(info.crash.stack.n, 2);
	ck_assert_uint_eq(info.crash.stack.pc[1], 0x405678);
}
END_TEST

START_TEST(test_events_framing)
{
	uint8_t *q = hp_records_events_begin(64);
	ck_assert_ptr_nonnull(q);
	memset(q, 0xab, 10);
	hp_records_events_end(q + 10, 7, 5);
	load();
	ck_assert_int_eq(nrecs, 1);
	ck_assert_uint_eq(types[0], HP_REC_EVENTS);
	ck_assert_uint_eq(sizes[0], 8 + 10); /* stream, count, then the bytes given */
}
END_TEST

START_TEST(test_modules_snapshot)
{
	static const uint8_t id[20] = { 1, 2, 3 };
	struct hp_loaded_segment seg[2] = { { 0x400000, 0x1000, 0, HP_SEGMENT_R | HP_SEGMENT_X },
					    { 0x600000, 0x2000, 0x1000, HP_SEGMENT_R | HP_SEGMENT_W } };
	struct hp_loaded_module m = { .bias = 0x1000, .path = "C:\\dir\\x.exe", .build_id = id,
				      .build_id_len = 20, .nseg = 2, .seg = seg, .has_file = 1 };
	struct hp_records_modules s = { 0 };
	ck_assert_int_eq(hp_records_modules_begin(&s), 0);
	ck_assert_int_eq(hp_records_module(&s, &m), 0);
	s.tick = 4321;
	hp_records_modules_end(&s);
	load();
	ck_assert_int_eq(nrecs, 2);
	ck_assert_uint_eq(types[1], HP_REC_MODULES_AT);
	ck_assert_uint_eq(info.nmodules, 1);
	ck_assert_str_eq(info.modules[0].path, "C:\\dir\\x.exe");
	ck_assert_uint_eq(info.modules[0].bias, 0x1000);
	ck_assert_uint_eq(info.modules[0].build_id_len, 20);
	ck_assert_uint_eq(info.modules[0].build_id[2], 3);
	ck_assert_uint_eq(info.modules[0].nseg, 2);
	ck_assert_uint_eq(info.modules[0].seg[1].offset, 0x1000);
	ck_assert_uint_eq(info.modules[0].seg[1].flags, HP_SEGMENT_R | HP_SEGMENT_W);
	ck_assert_uint_eq(info.modclock.tick, 4321);
}
END_TEST

static Suite *records_suite(void)
{
	Suite *s = suite_create("records");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_process);
	tcase_add_test(core, test_parent_clock_calibration);
	tcase_add_test(core, test_filter);
	tcase_add_test(core, test_thread_lost_string_end);
	tcase_add_test(core, test_stack_and_crash);
	tcase_add_test(core, test_events_framing);
	tcase_add_test(core, test_modules_snapshot);
	suite_add_tcase(s, core);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(records_suite(), top, sizeof(top), "check_records");
}
