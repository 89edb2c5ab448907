/*
 * check_trace.c - the trace reader on files crafted byte by byte: the
 * header checks, record framing, the non-event records, the time base, and
 * hp_analyze's errors, each one line naming the file.
 */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hp_format.h"
#include "testkit.h"

#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_trace.h"

/* ------------------------------------------------------- trace files */

/* The traced program of every file here: pid 1234, "/usr/bin/prog -x". */
static void process_rec(struct tk_bytes *b, uint32_t clock)
{
	static const char *const argv[] = { "prog", "-x" };
	tk_process_rec(b, 1234, clock, 1700000000123456789ull, 1, "/usr/bin/prog", 2, argv);
}

/* ------------------------------------------------------- fixture */

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct hp_trace_info info;
static struct tk_bytes file;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&info, 0, sizeof(info));
	memset(&file, 0, sizeof(file));
	err[0] = 0;
}

static void teardown(void)
{
	hp_trace_info_free(&info);
	free(file.p);
	tk_remove_tree(dir);
}

/* b becomes the test's trace file. */
static void save(const struct tk_bytes *b)
{
	tk_save(path, b);
}

static void save_bytes(const void *p, size_t n)
{
	struct tk_bytes b = { 0 };
	tk_put(&b, p, n);
	save(&b);
	free(b.p);
}

/* Reads every record into info; the record types go to types[]. */
static int read_trace(uint32_t *types, int *ntypes)
{
	struct hp_reader *r = hp_reader_open(path, err, sizeof(err));
	if (!r)
		return -1;
	uint32_t type, size;
	const uint8_t *payload;
	int rc, n = 0;
	while ((rc = hp_reader_next(r, &type, &payload, &size, err, sizeof(err))) == 1) {
		if (types)
			types[n] = type;
		n++;
		if (hp_trace_info_add(&info, type, payload, size, err, sizeof(err))) {
			rc = -1;
			break;
		}
	}
	if (ntypes)
		*ntypes = n;
	hp_reader_close(r);
	return rc;
}

/* The reason hp_reader_open gives for the file, as "<path>: <reason>". */
static void assert_open_fails(const char *reason)
{
	char want[PATH_MAX + 2048];
	ck_assert_ptr_null(hp_reader_open(path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: %s", path, reason);
	ck_assert_str_eq(err, want);
}

/* hp_analyze on the file fails with one line that names it. */
static void assert_analyze_fails(int flags)
{
	struct hp_analysis a;
	strcpy(err, "untouched");
	ck_assert_int_eq(hp_analyze(path, flags, NULL, NULL, &a, err, sizeof(err)), -1);
	ck_assert_msg(!strncmp(err, path, strlen(path)), "error does not name the file: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_uint_gt(strlen(err), strlen(path) + 2);
	hp_analysis_free(&a);
}

static void minimal(struct tk_bytes *b)
{
	tk_header(b);
	process_rec(b, HP_CLOCK_TSC);
	tk_clock_rec(b, 1000, 5000);
	tk_clock_rec(b, 2500001000ull, 1000005000ull);
	tk_end_rec(b, 0, 0, 0);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_minimal_valid)
{
	uint32_t types[16];
	int n;
	minimal(&file);
	save(&file);
	ck_assert_int_eq(read_trace(types, &n), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_uint_eq(types[0], HP_REC_PROCESS);
	ck_assert_uint_eq(types[1], HP_REC_CLOCK);
	ck_assert_uint_eq(types[2], HP_REC_CLOCK);
	ck_assert_uint_eq(types[3], HP_REC_END);
	ck_assert_uint_eq(info.pid, 1234);
	ck_assert_uint_eq(info.clock_source, HP_CLOCK_TSC);
	ck_assert_uint_eq(info.start_realtime_ns, 1700000000123456789ull);
	ck_assert_uint_eq(info.flags, 1);
	ck_assert_str_eq(info.exe, "/usr/bin/prog");
	ck_assert_uint_eq(info.argc, 2);
	ck_assert_str_eq(info.argv[0], "prog");
	ck_assert_str_eq(info.argv[1], "-x");
	ck_assert_int_eq(info.nclocks, 2);
	ck_assert_int_eq(info.has_end, 1);
	ck_assert_uint_eq(info.end_events, 0);
	ck_assert_uint_eq(info.end_lost, 0);
}
END_TEST

START_TEST(test_timebase_two_clocks)
{
	struct hp_timebase tb;
	minimal(&file);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(hp_trace_timebase(&info, &tb), 0);
	ck_assert_uint_eq(tb.tick0, 1000);
	/* 1e9 ns over 2.5e9 ticks */
	ck_assert_double_eq(tb.ns_per_tick, 0.4);
	ck_assert_double_eq(hp_ticks_to_ns(&tb, 2500000000ull), 1e9);
}
END_TEST

START_TEST(test_timebase_first_and_last)
{
	struct hp_timebase tb;
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	tk_clock_rec(&file, 1000, 5000);
	tk_clock_rec(&file, 2000, 999999);
	tk_clock_rec(&file, 3000, 9999);
	tk_clock_rec(&file, 5000, 6000);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.nclocks, 4);
	ck_assert_int_eq(hp_trace_timebase(&info, &tb), 0);
	ck_assert_double_eq(tb.ns_per_tick, 0.25);
}
END_TEST

START_TEST(test_empty_file)
{
	save_bytes("", 0);
	assert_open_fails("empty file");
	assert_analyze_fails(0);
}
END_TEST

START_TEST(test_too_short)
{
	save_bytes("HOOKPROF\1", 9);
	assert_open_fails("truncated trace (incomplete file header)");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
	save_bytes("hello", 5);
	assert_open_fails("not a hookprof trace (too short)");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_wrong_magic)
{
	tk_header_with(&file, "HOOKPROX", 1, 0x01020304, 32);
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	assert_open_fails("not a hookprof trace (bad magic)");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_wrong_byte_order)
{
	tk_header_with(&file, "HOOKPROF", 1, 0x04030201, 32);
	save(&file);
	assert_open_fails("trace written with another byte order");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_major_version_2)
{
	tk_header_with(&file, "HOOKPROF", 2, 0x01020304, 32);
	process_rec(&file, HP_CLOCK_TSC);
	save(&file);
	assert_open_fails("trace format version 2 is not supported (this tool reads 1)");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_minor_version_newer)
{
	/* a newer minor version only adds record types: still read */
	minimal(&file);
	file.p[10] = 7;
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.has_end, 1);
}
END_TEST

static void parent_rec(struct tk_bytes *b, uint32_t ppid, uint32_t flags, uint64_t tick,
		       const char *trace)
{
	size_t r = tk_rec_begin(b, HP_REC_PARENT);
	tk_put32(b, ppid);
	tk_put32(b, flags);
	tk_put64(b, tick);
	tk_putstr(b, trace);
	tk_rec_end(b, r);
}

START_TEST(test_parent_record)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	parent_rec(&file, 77, HP_PARENT_FORKED | HP_PARENT_FRAMES, 123456, "/t/p.hookprof");
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.has_parent, 1);
	ck_assert_uint_eq(info.parent_pid, 77);
	ck_assert_uint_eq(info.parent_flags, HP_PARENT_FORKED | HP_PARENT_FRAMES);
	ck_assert_uint_eq(info.fork_tick, 123456);
	ck_assert_str_eq(info.parent_trace, "/t/p.hookprof");
}
END_TEST

START_TEST(test_calibration_records)
{
	double in, out;
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	tk_calibration_rec(&file, HP_CALIBRATION_START, 4, 40, 80);
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.calib[HP_CALIBRATION_START].pairs, 4);
	ck_assert_double_eq(info.calib[HP_CALIBRATION_START].inside, 10);
	ck_assert_double_eq(info.calib[HP_CALIBRATION_START].outside, 20);
	ck_assert_uint_eq(info.calib[HP_CALIBRATION_END].pairs, 0);
	ck_assert_int_eq(hp_trace_hook_cost(&info, &in, &out), 1);
	ck_assert_double_eq(in, 10);
	ck_assert_double_eq(out, 20);
	/* the start's and the end's, averaged */
	free(file.p);
	memset(&file, 0, sizeof(file));
	hp_trace_info_free(&info);
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	tk_calibration_rec(&file, HP_CALIBRATION_START, 4, 40, 80);
	tk_calibration_rec(&file, HP_CALIBRATION_END, 2, 40, 80);
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(hp_trace_hook_cost(&info, &in, &out), 2);
	ck_assert_double_eq(in, 15);
	ck_assert_double_eq(out, 30);
}
END_TEST

START_TEST(test_calibration_absent_or_corrupt)
{
	double in, out;
	minimal(&file);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(hp_trace_hook_cost(&info, &in, &out), 0);
	ck_assert_double_eq(in + out, 0);
	/* no pairs, a moment that is neither start nor end: corrupt */
	static const uint32_t bad[][2] = { { HP_CALIBRATION_START, 0 }, { 2, 10 } };
	for (size_t i = 0; i < 2; i++) {
		free(file.p);
		memset(&file, 0, sizeof(file));
		hp_trace_info_free(&info);
		tk_header(&file);
		process_rec(&file, HP_CLOCK_TSC);
		tk_calibration_rec(&file, bad[i][0], bad[i][1], 1, 1);
		tk_end_rec(&file, 0, 0, 0);
		save(&file);
		ck_assert_int_eq(read_trace(NULL, NULL), -1);
		ck_assert_str_eq(err, "corrupt record of type 14");
	}
}
END_TEST

START_TEST(test_parent_record_absent_in_1_0)
{
	minimal(&file);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.has_parent, 0);
	ck_assert_ptr_null(info.parent_trace);
}
END_TEST

START_TEST(test_parent_record_short)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	size_t r = tk_rec_begin(&file, HP_REC_PARENT);
	tk_put32(&file, 77);
	tk_put32(&file, 1);
	tk_rec_end(&file, r);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 11");
}
END_TEST

static void filter_rec(struct tk_bytes *b, uint64_t min_ns, uint64_t calls, uint64_t ticks,
		       uint32_t depth, const char *exclude, const char *include)
{
	size_t r = tk_rec_begin(b, HP_REC_FILTER);
	tk_put64(b, min_ns);
	tk_put64(b, calls);
	tk_put64(b, ticks);
	tk_put32(b, depth);
	tk_put32(b, 0);
	tk_putstr(b, exclude);
	tk_putstr(b, include);
	tk_rec_end(b, r);
}

START_TEST(test_filter_record_last_kept)
{
	char text[256];
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	filter_rec(&file, 1000, 0, 0, 3, "^leaf$", "");
	filter_rec(&file, 1000, 42, 8400, 3, "^leaf$", "");
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.has_filter, 1);
	ck_assert_uint_eq(info.filter_min_ns, 1000);
	ck_assert_uint_eq(info.filter_min_calls, 42);
	ck_assert_uint_eq(info.filter_min_ticks, 8400);
	ck_assert_uint_eq(info.filter_depth, 3);
	ck_assert_str_eq(info.filter_exclude, "^leaf$");
	ck_assert_str_eq(info.filter_include, "");
	hp_trace_filters_text(&info, text, sizeof(text));
	ck_assert_str_eq(text, "exclude '^leaf$', depth 3, min 1000 ns");
}
END_TEST

START_TEST(test_filter_record_absent_in_1_2)
{
	char text[64] = "untouched";
	minimal(&file);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_int_eq(info.has_filter, 0);
	hp_trace_filters_text(&info, text, sizeof(text));
	ck_assert_str_eq(text, "");
}
END_TEST

START_TEST(test_filter_record_short)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	size_t r = tk_rec_begin(&file, HP_REC_FILTER);
	tk_put64(&file, 1000);
	tk_put64(&file, 1);
	tk_put64(&file, 1);
	tk_put32(&file, 0);
	tk_put32(&file, 0);
	tk_put32(&file, 100); /* an exclude string longer than the record */
	tk_rec_end(&file, r);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 13");
	ck_assert_int_eq(info.has_filter, 0);
}
END_TEST

START_TEST(test_record_past_eof)
{
	char want[PATH_MAX + 2048];
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	size_t at = file.n;
	tk_clock_rec(&file, 1, 2);
	file.n -= 3; /* cut the CLOCK's payload short */
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	snprintf(want, sizeof(want),
		 "%s: truncated or corrupt trace (record at byte %zu runs past the end)", path, at);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(info.pid, 1234); /* the PROCESS before it was read */
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_unknown_record_skipped)
{
	uint32_t types[16];
	int n;
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	tk_clock_rec(&file, 1000, 5000);
	size_t r = tk_rec_begin(&file, 99);
	tk_put(&file, "\1\2\3\4\5\6\7", 7);
	tk_rec_end(&file, r);
	r = tk_rec_begin(&file, 0);
	tk_rec_end(&file, r);
	tk_clock_rec(&file, 3000, 6000);
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(types, &n), 0);
	ck_assert_int_eq(n, 6);
	ck_assert_uint_eq(types[2], 99);
	ck_assert_uint_eq(types[3], 0);
	ck_assert_uint_eq(types[4], HP_REC_CLOCK);
	ck_assert_int_eq(info.nclocks, 2);
	ck_assert_uint_eq(info.clock_tick[1], 3000);
	ck_assert_uint_eq(info.clock_ns[1], 6000);
	ck_assert_int_eq(info.has_end, 1);
	struct hp_analysis a;
	ck_assert_int_eq(hp_analyze(path, 0, NULL, NULL, &a, err, sizeof(err)), 0);
	hp_analysis_free(&a);
}
END_TEST

START_TEST(test_process_argc_huge)
{
	tk_header(&file);
	size_t r = tk_rec_begin(&file, HP_REC_PROCESS);
	tk_put32(&file, 1);
	tk_put32(&file, HP_CLOCK_TSC);
	tk_put64(&file, 0);
	tk_put32(&file, 0);
	tk_put32(&file, 0xffffffffu);
	tk_putstr(&file, "/bin/x");
	tk_putstr(&file, "x");
	tk_rec_end(&file, r);
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 1");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_process_argc_short)
{
	/* 3 arguments announced, 1 present */
	tk_header(&file);
	size_t r = tk_rec_begin(&file, HP_REC_PROCESS);
	tk_put32(&file, 1);
	tk_put32(&file, HP_CLOCK_TSC);
	tk_put64(&file, 0);
	tk_put32(&file, 0);
	tk_put32(&file, 3);
	tk_putstr(&file, "/bin/x");
	tk_putstr(&file, "x");
	tk_put32(&file, 0x1000); /* the second runs past the record */
	tk_put(&file, "yy", 2);
	tk_rec_end(&file, r);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 1");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_threads_lost_end)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_thread_rec(&file, 3, 4711, "worker");
	tk_thread_rec(&file, 3, 4711, "renamed"); /* the newest wins */
	static const struct { uint32_t stream, reason; uint64_t n; } lost[] = {
		{ 3, 1, 10 }, { 3, 2, 5 }, { 0xffffffffu, 4, 7 }, { 0xffffffffu, 3, 1 },
		{ 3, 5, 4 }, { 0xffffffffu, 9, 2 } /* a reason of a later version */
	};
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
		tk_lost_rec(&file, lost[i].stream, lost[i].reason, lost[i].n);
	tk_end_rec(&file, 0, 29, 1);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_ge(info.nstreams, 4);
	ck_assert_int_eq(info.streams[3].seen, 1);
	ck_assert_uint_eq(info.streams[3].tid, 4711);
	ck_assert_str_eq(info.streams[3].name, "renamed");
	ck_assert_uint_eq(info.streams[3].lost, 19);
	ck_assert_int_eq(info.streams[0].seen, 0);
	ck_assert_uint_eq(info.lost_global, 10);
	ck_assert_uint_eq(info.end_lost, 29);
	static const uint64_t by_reason[] = { 2, 10, 5, 1, 7, 4 };
	for (size_t r = 0; r < sizeof(by_reason) / sizeof(by_reason[0]); r++)
		ck_assert_uint_eq(info.lost_by_reason[r], by_reason[r]);
	struct hp_timebase tb;
	ck_assert_int_eq(hp_trace_timebase(&info, &tb), 0);
	ck_assert_double_eq(tb.ns_per_tick, 1.0);
}
END_TEST

START_TEST(test_modules_union)
{
	tk_header(&file);
	size_t r = tk_rec_begin(&file, HP_REC_MODULES);
	tk_put32(&file, 2);
	tk_put64(&file, 0x555500000000ull);
	tk_putstr(&file, "/usr/bin/prog");
	tk_put32(&file, 4);
	tk_put(&file, "\xde\xad\xbe\xef", 4);
	tk_put32(&file, 2);
	tk_put64(&file, 0x555500001000ull), tk_put64(&file, 0x2000), tk_put64(&file, 0x1000);
	tk_put32(&file, 5), tk_put32(&file, 0);
	tk_put64(&file, 0x555500004000ull), tk_put64(&file, 0x100), tk_put64(&file, 0x3000);
	tk_put32(&file, 6), tk_put32(&file, 0);
	tk_put64(&file, 0x7fff00000000ull);
	tk_putstr(&file, "linux-vdso.so.1");
	tk_put32(&file, 0);
	tk_put32(&file, 0);
	tk_rec_end(&file, r);
	/* second snapshot: prog again, and a new library */
	r = tk_rec_begin(&file, HP_REC_MODULES);
	tk_put32(&file, 2);
	tk_put64(&file, 0x555500000000ull);
	tk_putstr(&file, "/usr/bin/prog");
	tk_put32(&file, 0);
	tk_put32(&file, 1);
	tk_put64(&file, 1), tk_put64(&file, 2), tk_put64(&file, 3), tk_put32(&file, 4), tk_put32(&file, 0);
	tk_put64(&file, 0x7f0000000000ull);
	tk_putstr(&file, "/lib/libplugin.so");
	tk_put32(&file, 0);
	tk_put32(&file, 1);
	tk_put64(&file, 0x7f0000001000ull), tk_put64(&file, 0x500), tk_put64(&file, 0x1000);
	tk_put32(&file, 5), tk_put32(&file, 0);
	tk_rec_end(&file, r);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.nmodules, 3);
	const struct hp_module *m = &info.modules[0];
	ck_assert_str_eq(m->path, "/usr/bin/prog");
	ck_assert_uint_eq(m->bias, 0x555500000000ull);
	ck_assert_uint_eq(m->build_id_len, 4);
	ck_assert_mem_eq(m->build_id, "\xde\xad\xbe\xef", 4);
	ck_assert_uint_eq(m->nseg, 2);
	ck_assert_uint_eq(m->seg[1].start, 0x555500004000ull);
	ck_assert_uint_eq(m->seg[1].size, 0x100);
	ck_assert_uint_eq(m->seg[1].offset, 0x3000);
	ck_assert_uint_eq(m->seg[1].flags, 6);
	ck_assert_str_eq(info.modules[1].path, "linux-vdso.so.1");
	ck_assert_uint_eq(info.modules[1].nseg, 0);
	ck_assert_str_eq(info.modules[2].path, "/lib/libplugin.so");
	ck_assert_uint_eq(info.modules[2].seg[0].start, 0x7f0000001000ull);
}
END_TEST

/* A MODULES record of the named objects, one segment each at their bias. */
static void modules_rec(struct tk_bytes *b, int n, const char *const *paths)
{
	size_t r = tk_rec_begin(b, HP_REC_MODULES);
	tk_put32(b, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		uint64_t bias = 0x7f0000000000ull + ((uint64_t)(unsigned char)paths[i][5] << 20);
		tk_put64(b, bias);
		tk_putstr(b, paths[i]);
		tk_put32(b, 0);
		tk_put32(b, 1);
		tk_put64(b, bias + 0x1000), tk_put64(b, 0x1000), tk_put64(b, 0x1000);
		tk_put32(b, 5), tk_put32(b, 0);
	}
	tk_rec_end(b, r);
}

static void modules_at_rec(struct tk_bytes *b, uint64_t tick, uint32_t count)
{
	size_t r = tk_rec_begin(b, HP_REC_MODULES_AT);
	tk_put64(b, tick), tk_put32(b, count), tk_put32(b, 0);
	tk_rec_end(b, r);
}

static const struct hp_module *module_named(const char *p)
{
	for (size_t i = 0; i < info.nmodules; i++)
		if (!strcmp(info.modules[i].path, p))
			return &info.modules[i];
	ck_abort_msg("no module %s", p);
	return NULL;
}

/* A module's life runs from the last snapshot without it to the first
 * snapshot without it again; a snapshot not closed by MODULES_AT (the run
 * was cut short) adds modules but unloads none. */
START_TEST(test_module_lives)
{
	static const char *const s1[] = { "/bin/p", "/lib/a" }, *const s2[] = { "/bin/p" },
				 *const s3a[] = { "/bin/p" }, *const s3b[] = { "/lib/b" },
				 *const s4[] = { "/bin/p", "/lib/a" };
	tk_header(&file);
	modules_rec(&file, 2, s1);
	modules_at_rec(&file, 100, 2);
	modules_rec(&file, 1, s2);
	modules_at_rec(&file, 200, 1);
	modules_rec(&file, 1, s3a); /* one snapshot in two records */
	modules_rec(&file, 1, s3b);
	modules_at_rec(&file, 300, 2);
	modules_rec(&file, 2, s4);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.nmodules, 3);
	const struct hp_module *p = module_named("/bin/p"), *a = module_named("/lib/a"),
			       *b = module_named("/lib/b");
	ck_assert_uint_eq(p->nlives, 1);
	ck_assert_uint_eq(p->life[0].from, 0);
	ck_assert_uint_eq(p->life[0].to, HP_TICK_NEVER);
	ck_assert_uint_eq(a->nlives, 2);
	ck_assert_uint_eq(a->life[0].from, 0);
	ck_assert_uint_eq(a->life[0].to, 200);
	ck_assert_uint_eq(a->life[1].from, 300);
	ck_assert_uint_eq(a->life[1].to, HP_TICK_NEVER);
	ck_assert_uint_eq(b->nlives, 1);
	ck_assert_uint_eq(b->life[0].from, 200);
	ck_assert_uint_eq(b->life[0].to, HP_TICK_NEVER);
	ck_assert(hp_module_loaded_at(a, 199));
	ck_assert(!hp_module_loaded_at(a, 200));
	ck_assert(!hp_module_loaded_at(a, 299));
	ck_assert(hp_module_loaded_at(a, 300));
	ck_assert(!hp_module_loaded_at(b, 199));
	ck_assert(hp_module_loaded_at(b, 200));
	ck_assert(hp_module_loaded_at(b, UINT64_MAX - 1));
}
END_TEST

/* Without MODULES_AT (format 1.0) every module is loaded throughout. */
START_TEST(test_module_lives_untimed)
{
	static const char *const s1[] = { "/bin/p", "/lib/a" }, *const s2[] = { "/bin/p" };
	tk_header(&file);
	modules_rec(&file, 2, s1);
	modules_rec(&file, 1, s2);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.nmodules, 2);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_uint_eq(info.modules[i].nlives, 1);
		ck_assert(hp_module_loaded_at(&info.modules[i], 0));
		ck_assert(hp_module_loaded_at(&info.modules[i], UINT64_MAX - 1));
	}
}
END_TEST

START_TEST(test_analyze_events)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 99, "main");
	tk_events_rec(&file, 0, 2, ev, sizeof(ev));
	tk_clock_rec(&file, 100, 100);
	tk_end_rec(&file, 2, 0, 1);
	save(&file);
	struct hp_analysis a;
	ck_assert_int_eq(hp_analyze(path, 0, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.events, 2);
	ck_assert_int_eq(a.partial, 0);
	ck_assert_uint_eq(a.funcs.n, 1);
	ck_assert_uint_eq(a.funcs.addr[0], 0x1000);
	ck_assert_uint_eq(a.prof.f[0].calls, 1);
	ck_assert_uint_eq(a.prof.f[0].total, 3);
	ck_assert_uint_eq(a.info.streams[0].events, 2);
	ck_assert_str_eq(a.info.streams[0].name, "main");
	hp_analysis_free(&a);
}
END_TEST

/* CRASH (9) and STACK (10), format 1.1: written byte by byte as
 * docs/format.md spells them. */
static void stack_rec(struct tk_bytes *b, uint32_t stream, uint32_t flags, uint32_t n,
		      const uint64_t *pc)
{
	size_t r = tk_rec_begin(b, HP_REC_STACK);
	tk_put32(b, stream), tk_put32(b, flags), tk_put32(b, n);
	for (uint32_t i = 0; i < n; i++)
		tk_put64(b, pc[i]);
	tk_rec_end(b, r);
}

static void crash_rec(struct tk_bytes *b, uint32_t stream, uint32_t sig, uint32_t n,
		      const uint64_t *pc)
{
	size_t r = tk_rec_begin(b, HP_REC_CRASH);
	tk_put32(b, stream), tk_put32(b, 4711), tk_put32(b, sig), tk_put32(b, (uint32_t)-6);
	tk_put64(b, 0xdead0), tk_put64(b, 12345), tk_put32(b, HP_STACK_TRUNCATED), tk_put32(b, n);
	for (uint32_t i = 0; i < n; i++)
		tk_put64(b, pc[i]);
	tk_rec_end(b, r);
}

START_TEST(test_stack_and_crash)
{
	static const uint64_t root[] = { 0x1010, 0x7f0000001234, 0x7f0000005678 };
	static const uint64_t bt[] = { 0x7f00000000aa, 0x1020, 0x1010 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_thread_rec(&file, 1, 4711, "worker");
	stack_rec(&file, 1, 0, 3, root);
	stack_rec(&file, 2, HP_STACK_NO_ROOT, 0, NULL);
	crash_rec(&file, 1, 11, 3, bt);
	tk_end_rec(&file, 0, 0, 1);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.streams[1].root.n, 3);
	ck_assert_uint_eq(info.streams[1].root.pc[0], 0x1010);
	ck_assert_uint_eq(info.streams[1].root.pc[2], 0x7f0000005678);
	ck_assert_uint_eq(info.streams[2].root.flags, HP_STACK_NO_ROOT);
	ck_assert_uint_eq(info.streams[0].root.n, 0);
	ck_assert_int_eq(info.crash.present, 1);
	ck_assert_uint_eq(info.crash.stream, 1);
	ck_assert_uint_eq(info.crash.tid, 4711);
	ck_assert_uint_eq(info.crash.signal, 11);
	ck_assert_int_eq(info.crash.code, -6);
	ck_assert_uint_eq(info.crash.addr, 0xdead0);
	ck_assert_uint_eq(info.crash.unwind_ns, 12345);
	ck_assert_uint_eq(info.crash.stack.flags, HP_STACK_TRUNCATED);
	ck_assert_uint_eq(info.crash.stack.n, 3);
	ck_assert_uint_eq(info.crash.stack.pc[0], 0x7f00000000aa);
	ck_assert_uint_eq(info.crash.stack.pc[2], 0x1010);
}
END_TEST

/* enter f0 (0x1000), enter f1 (0x2000), exit f1, enter f2 (0x3000): the
 * crash leaves f0 and f2 open. */
START_TEST(test_analyze_crash_open_frames)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x43, 0x80, 0x40, 0x43, 0x80, 0x60,
				      0x00, 0x01, 0x01, 0x01, 0x81, 0x02, 0x01 };
	static const uint64_t bt[] = { 0x3004 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 99, "main");
	tk_events_rec(&file, 0, 4, ev, sizeof(ev));
	crash_rec(&file, 0, 6, 1, bt);
	tk_clock_rec(&file, 100, 100);
	tk_end_rec(&file, 4, 0, 1);
	save(&file);
	struct hp_analysis a;
	ck_assert_int_eq(hp_analyze(path, 0, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.ncrash_open, 2);
	ck_assert_uint_eq(a.crash_open[0], 0x1000);
	ck_assert_uint_eq(a.crash_open[1], 0x3000);
	ck_assert_uint_eq(a.prof.f[0].calls, 1); /* still closed at the end for the profile */
	hp_analysis_free(&a);
	/* the same without the profile (report, diff: the driver's account) */
	ck_assert_int_eq(hp_analyze(path, HP_ANALYZE_NO_PROFILE, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.ncrash_open, 2);
	ck_assert_uint_eq(a.crash_open[0], 0x1000);
	ck_assert_uint_eq(a.crash_open[1], 0x3000);
	hp_analysis_free(&a);
}
END_TEST

/* Format 1.2: STRING records, and the control events that name them. */
START_TEST(test_strings_and_regions)
{
	/* region 0 [parse] around nothing, an end of region 1 without a begin,
	 * a value named 1, and region 0 again, never ended */
	static const uint8_t ev[] = { 0x49, 0x00, 0x02, 0x4a, 0x00, 0x04, 0x4a, 0x01, 0x02,
				      0x4c, 0x01, 0x00, 0x2a, 0x4d, 0x01, 0x00, 0x00,
				      0x49, 0x00, 0x02 };
	struct hp_analysis a;
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_thread_rec(&file, 0, 77, "worker");
	tk_string_rec(&file, 0, "parse");
	tk_string_rec(&file, 1, "depth");
	tk_events_rec(&file, 0, 6, ev, sizeof(ev));
	tk_end_rec(&file, 6, 0, 1);
	save(&file);
	ck_assert_int_eq(hp_analyze(path, 0, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_str_eq(hp_trace_string(&a.info, 0), "parse");
	ck_assert_str_eq(hp_trace_string(&a.info, 1), "depth");
	ck_assert_ptr_null(hp_trace_string(&a.info, 2));
	/* one function: the region, at its own address, called twice */
	ck_assert_uint_eq(a.funcs.n, 1);
	ck_assert_uint_eq(a.funcs.addr[0], HP_REGION_ADDR(0));
	ck_assert_uint_eq(a.prof.f[0].calls, 2);
	ck_assert_uint_eq(a.nwarnings, 2);
	ck_assert_str_eq(a.warnings[0], "region [depth] on thread 77 (worker): ended without a begin (the end is ignored)");
	ck_assert_str_eq(a.warnings[1], "region [parse] on thread 77 (worker): never ended (ended at the thread's last event)");
	hp_analysis_free(&a);
}
END_TEST

START_TEST(test_string_id_out_of_range)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_string_rec(&file, HP_STRINGS_MAX, "x");
	tk_end_rec(&file, 0, 0, 0);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "corrupt record of type 12"));
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_missing_file)
{
	snprintf(path, sizeof(path), "%s/nope.hookprof", dir);
	assert_open_fails("No such file or directory");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_directory_is_not_a_trace)
{
	snprintf(path, sizeof(path), "%s", dir);
	ck_assert_ptr_null(hp_reader_open(path, err, sizeof(err)));
	ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_header_size_too_small)
{
	tk_header_with(&file, "HOOKPROF", 1, 0x01020304, 16);
	save(&file);
	assert_open_fails("corrupt file header");
}
END_TEST

START_TEST(test_header_size_larger)
{
	/* a longer header: records start where it says */
	tk_header_with(&file, "HOOKPROF", 1, 0x01020304, 40);
	tk_put64(&file, 0xffffffffffffffffull);
	process_rec(&file, HP_CLOCK_TSC);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.pid, 1234);
}
END_TEST

START_TEST(test_truncated_record_header)
{
	char want[PATH_MAX + 2048];
	tk_header(&file);
	tk_put32(&file, HP_REC_CLOCK);
	tk_put8(&file, 16);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	snprintf(want, sizeof(want), "%s: truncated trace (record header at byte 32)", path);
	ck_assert_str_eq(err, want);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_record_too_large)
{
	tk_header(&file);
	tk_put32(&file, HP_REC_EVENTS);
	tk_put32(&file, HP_RECORD_MAX + 1);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
	/* size 0xffffffff does not overflow the bounds check */
	free(file.p);
	memset(&file, 0, sizeof(file));
	tk_header(&file);
	tk_put32(&file, 77);
	tk_put32(&file, 0xffffffffu);
	tk_put64(&file, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_empty_payload_pointer)
{
	/* a record of no bytes as the first: still a pointer, for a cursor
	 * that must not do arithmetic on NULL */
	tk_header(&file);
	tk_put32(&file, 77);
	tk_put32(&file, 0);
	save(&file);
	struct hp_reader *r = hp_reader_open(path, err, sizeof(err));
	ck_assert_ptr_nonnull(r);
	uint32_t type, size;
	const uint8_t *payload = NULL;
	ck_assert_int_eq(hp_reader_next(r, &type, &payload, &size, err, sizeof(err)), 1);
	ck_assert_uint_eq(type, 77);
	ck_assert_uint_eq(size, 0);
	ck_assert_ptr_nonnull(payload);
	hp_reader_close(r);
}
END_TEST

START_TEST(test_partial_stops_before_cut)
{
	/* an EVENTS record cut in the middle: without --partial the error
	 * stays; with it, every record before is read, the cut one is dropped
	 * whole though its first bytes decode, and cut_at says where */
	static const uint8_t ev1[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x81 };
	static const uint8_t ev2[] = { 0x00, 0x05, 0x81, 0x00, 0x05, 0x81 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_events_rec(&file, 0, 2, ev1, sizeof(ev1));
	size_t at = file.n;
	tk_events_rec(&file, 0, 4, ev2, sizeof(ev2));
	file.n -= 3;
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
	struct hp_analysis a;
	ck_assert_msg(hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(a.partial, 1);
	ck_assert_uint_eq(a.cut_at, at);
	ck_assert_uint_eq(a.events, 2);
	ck_assert_uint_eq(a.prof.f[0].calls, 1);
	hp_analysis_free(&a);
	/* cut inside the record header: the same */
	save_bytes(file.p, at + 5);
	ck_assert_int_eq(hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.cut_at, at);
	ck_assert_uint_eq(a.events, 2);
	hp_analysis_free(&a);
	/* a size no writer writes is corruption, not a cut */
	file.n = at;
	tk_put32(&file, HP_REC_EVENTS);
	tk_put32(&file, HP_RECORD_MAX + 1);
	tk_put64(&file, 0);
	save(&file);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
	ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
}
END_TEST

/* Bytes the program holds from malloc, for a test of a leak. */
static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

START_TEST(test_second_process_no_leak)
{
	/* a second PROCESS replaces the first, whose argv is freed: reading
	 * such a file and freeing what it gave holds no more heap than before */
	static const char *const argv1[] = { "first", "a-long-argument-of-the-first-record" };
	static const char *const argv2[] = { "second" };
	tk_header(&file);
	tk_process_rec(&file, 1, HP_CLOCK_MONOTONIC, 0, 0, "/bin/one", 2, argv1);
	tk_process_rec(&file, 2, HP_CLOCK_MONOTONIC, 0, 0, "/bin/two", 1, argv2);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0); /* the reader's own first allocations */
	ck_assert_uint_eq(info.argc, 1);
	ck_assert_str_eq(info.argv[0], "second");
	ck_assert_str_eq(info.exe, "/bin/two");
	hp_trace_info_free(&info);
	/* No check inside the loop: Check's own bookkeeping allocates. The
	 * count includes chunks malloc keeps cached for reuse, a few hundred
	 * bytes whatever the loop does; the leak was 100 bytes a file. */
	int bad = 0;
	size_t before = heap_in_use();
	for (int i = 0; i < 1000; i++) {
		bad |= read_trace(NULL, NULL);
		hp_trace_info_free(&info);
	}
	size_t after = heap_in_use();
	ck_assert_int_eq(bad, 0);
	ck_assert_uint_lt(after, before + 4096);
}
END_TEST

START_TEST(test_header_only)
{
	int n = -1;
	tk_header(&file);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, &n), 0);
	ck_assert_int_eq(n, 0);
	/* no END: refused, and with --partial there is still no clock */
	assert_analyze_fails(0);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_no_end_partial)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_events_rec(&file, 0, 1, ev, sizeof(ev));
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "incomplete trace"));
	struct hp_analysis a;
	ck_assert_int_eq(hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.partial, 1);
	ck_assert_uint_eq(a.events, 1);
	/* the open frame is closed at the stream's last tick */
	ck_assert_uint_eq(a.prof.f[0].calls, 1);
	ck_assert_uint_eq(a.prof.f[0].total, 0);
	hp_analysis_free(&a);
}
END_TEST

START_TEST(test_event_count_mismatch)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_events_rec(&file, 0, 3, ev, sizeof(ev));
	tk_end_rec(&file, 3, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "2 events where 3 were written"));
}
END_TEST

START_TEST(test_end_count_mismatch)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_events_rec(&file, 0, 2, ev, sizeof(ev));
	tk_end_rec(&file, 5, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "2 events decoded where 5 were written"));
}
END_TEST

START_TEST(test_corrupt_event_data_names_file)
{
	static const uint8_t ev[] = { 0x4f };
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_events_rec(&file, 0, 1, ev, sizeof(ev));
	tk_end_rec(&file, 1, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "unknown event code"));
	/* an EVENTS record too short for its head */
	free(file.p);
	memset(&file, 0, sizeof(file));
	tk_header(&file);
	size_t r = tk_rec_begin(&file, HP_REC_EVENTS);
	tk_put32(&file, 0);
	tk_rec_end(&file, r);
	save(&file);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_corrupt_small_records)
{
	/* each record type cut short of its fields */
	static const uint32_t types[] = { HP_REC_PROCESS, HP_REC_MODULES, HP_REC_THREAD,
					  HP_REC_LOST };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct hp_trace_info ti = { 0 };
		uint8_t payload[3] = { 5, 0, 0 };
		char e[128] = "";
		ck_assert_int_eq(hp_trace_info_add(&ti, types[i], payload, sizeof(payload), e, sizeof(e)), -1);
		ck_assert_ptr_nonnull(strstr(e, "corrupt record of type"));
		hp_trace_info_free(&ti);
	}
}
END_TEST

START_TEST(test_corrupt_stack_records)
{
	static const uint32_t types[] = { HP_REC_STACK, HP_REC_CRASH };
	for (size_t i = 0; i < 2; i++) {
		/* cut short; a count of more frames than bytes; fewer; too many */
		static const uint32_t counts[] = { 2, 3, 1, HP_STACK_FRAMES_MAX + 1 };
		for (size_t j = 0; j < 4; j++) {
			struct hp_trace_info ti = { 0 };
			struct tk_bytes b = { 0 };
			char e[128] = "";
			tk_put32(&b, 0), tk_put32(&b, 0);
			if (types[i] == HP_REC_CRASH)
				tk_put32(&b, 11), tk_put32(&b, 0), tk_put64(&b, 0), tk_put64(&b, 0),
					tk_put32(&b, 0);
			tk_put32(&b, counts[j]);
			for (uint32_t k = 0; k < (j == 3 ? counts[j] : 2); k++)
				tk_put64(&b, 0x1000 + k);
			uint32_t size = (uint32_t)(j == 0 ? b.n - 3 : b.n);
			ck_assert_int_eq(hp_trace_info_add(&ti, types[i], b.p, size, e, sizeof(e)), -1);
			ck_assert_ptr_nonnull(strstr(e, "corrupt record of type"));
			ck_assert_int_eq(ti.crash.present, 0);
			hp_trace_info_free(&ti);
			free(b.p);
		}
	}
}
END_TEST

START_TEST(test_corrupt_modules)
{
	struct hp_trace_info ti = { 0 };
	char e[128];
	struct tk_bytes b = { 0 };
	/* build-id longer than 64 bytes */
	tk_put32(&b, 1);
	tk_put64(&b, 0);
	tk_putstr(&b, "/x");
	tk_put32(&b, 65);
	for (int i = 0; i < 65; i++)
		tk_put8(&b, 1);
	tk_put32(&b, 0);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* more segments than bytes */
	b.n = 0;
	tk_put32(&b, 1);
	tk_put64(&b, 0);
	tk_putstr(&b, "/x");
	tk_put32(&b, 0);
	tk_put32(&b, 0x10000000);
	tk_put64(&b, 0);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* path length past the record */
	b.n = 0;
	tk_put32(&b, 1);
	tk_put64(&b, 0);
	tk_put32(&b, 0xfffffff0u);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	ck_assert_uint_eq(ti.nmodules, 0);
	hp_trace_info_free(&ti);
	free(b.p);
}
END_TEST

/* A MODULES_AT whose count is not the modules listed since the last one,
 * or that is too short, is corrupt. */
START_TEST(test_corrupt_modules_at)
{
	static const char *const s1[] = { "/bin/p" };
	tk_header(&file);
	modules_rec(&file, 1, s1);
	modules_at_rec(&file, 100, 2);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 8");
	struct hp_trace_info ti = { 0 };
	char e[128];
	uint8_t short_rec[12] = { 0 };
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES_AT, short_rec, 12, e, sizeof(e)), -1);
	hp_trace_info_free(&ti);
}
END_TEST

/* 120,000 objects, each listed in two snapshots: one module each, read
 * in linear time (the duplicate check was quadratic: half a minute). */
START_TEST(test_many_modules)
{
	enum { N = 120000 };
	struct tk_bytes b = { 0 };
	char name[32];
	tk_header(&b);
	for (int snap = 0; snap < 2; snap++) {
		size_t r = tk_rec_begin(&b, HP_REC_MODULES);
		tk_put32(&b, N);
		for (uint64_t i = 0; i < N; i++) {
			snprintf(name, sizeof(name), "/lib/lib%llu.so", (unsigned long long)i);
			tk_put64(&b, 0x10000000ull + i * 0x10000);
			tk_putstr(&b, name);
			tk_put32(&b, 0);
			tk_put32(&b, 0);
		}
		tk_rec_end(&b, r);
		modules_at_rec(&b, 100 + (uint64_t)snap, N);
	}
	save(&b);
	free(b.p);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.nmodules, N);
	ck_assert_str_eq(info.modules[N - 1].path, "/lib/lib119999.so");
	ck_assert_uint_eq(info.modules[N - 1].nlives, 1);
}
END_TEST

START_TEST(test_stream_id_bounds)
{
	struct hp_trace_info ti = { 0 };
	char e[128];
	struct tk_bytes b = { 0 };
	tk_put32(&b, 0xfffffff0u);
	tk_put32(&b, 1);
	tk_putstr(&b, "t");
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_THREAD, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* a long thread name is cut, not overflowed */
	b.n = 0;
	tk_put32(&b, 1);
	tk_put32(&b, 2);
	char name[200];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	tk_putstr(&b, name);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_THREAD, b.p, (uint32_t)b.n, e, sizeof(e)), 0);
	ck_assert_uint_eq(strlen(ti.streams[1].name), sizeof(ti.streams[1].name) - 1);
	hp_trace_info_free(&ti);
	free(b.p);
}
END_TEST

START_TEST(test_timebase_unusable)
{
	struct hp_trace_info ti = { 0 };
	struct hp_timebase tb;
	ti.clock_source = HP_CLOCK_TSC;
	ck_assert_int_eq(hp_trace_timebase(&ti, &tb), -1);
	ti.nclocks = 1;
	ti.clock_tick[0] = 100;
	ck_assert_int_eq(hp_trace_timebase(&ti, &tb), -1);
	ti.nclocks = 2;
	ti.clock_tick[1] = 100;
	ck_assert_int_eq(hp_trace_timebase(&ti, &tb), -1);
	ti.clock_tick[1] = 50;
	ck_assert_int_eq(hp_trace_timebase(&ti, &tb), -1);
	ti.clock_tick[1] = 300;
	ti.clock_ns[0] = 1000;
	ti.clock_ns[1] = 1100;
	ck_assert_int_eq(hp_trace_timebase(&ti, &tb), 0);
	ck_assert_double_eq(tb.ns_per_tick, 0.5);
	ck_assert_uint_eq(tb.tick0, 100);
}
END_TEST

START_TEST(test_every_truncation)
{
	/* the valid file cut at every length: an error, or at a record
	 * boundary a clean end, never a crash */
	size_t boundary[5];
	tk_header(&file);
	boundary[0] = file.n;
	process_rec(&file, HP_CLOCK_TSC);
	boundary[1] = file.n;
	tk_clock_rec(&file, 1000, 5000);
	boundary[2] = file.n;
	tk_clock_rec(&file, 2500001000ull, 1000005000ull);
	boundary[3] = file.n;
	tk_end_rec(&file, 0, 0, 0);
	boundary[4] = file.n;
	for (size_t len = 0; len <= file.n; len++) {
		int at_boundary = 0;
		for (int i = 0; i < 5; i++)
			at_boundary |= len == boundary[i];
		save_bytes(file.p, len);
		hp_trace_info_free(&info);
		int rc = read_trace(NULL, NULL);
		ck_assert_msg(rc == (at_boundary ? 0 : -1), "length %zu: rc %d (%s)", len, rc, err);
		if (rc)
			ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
		/* with --partial, every cut after the second CLOCK is readable
		 * too: up to the last whole record, and it says where it was cut */
		struct hp_analysis a;
		int want = len >= boundary[3] ? 0 : -1;
		ck_assert_msg(hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err,
					 sizeof(err)) == want, "length %zu: %s", len, err);
		if (want) {
			ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
			ck_assert_ptr_null(strchr(err, '\n'));
		} else {
			ck_assert_int_eq(a.partial, len < boundary[4]);
			ck_assert_uint_eq(a.cut_at, at_boundary ? 0 : boundary[3]);
			ck_assert_uint_eq(a.info.nclocks, 2);
		}
		hp_analysis_free(&a);
	}
}
END_TEST

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_minimal_valid);
	tcase_add_test(core, test_timebase_two_clocks);
	tcase_add_test(core, test_timebase_first_and_last);
	tcase_add_test(core, test_empty_file);
	tcase_add_test(core, test_too_short);
	tcase_add_test(core, test_wrong_magic);
	tcase_add_test(core, test_wrong_byte_order);
	tcase_add_test(core, test_major_version_2);
	tcase_add_test(core, test_minor_version_newer);
	tcase_add_test(core, test_record_past_eof);
	tcase_add_test(core, test_parent_record);
	tcase_add_test(core, test_calibration_records);
	tcase_add_test(core, test_calibration_absent_or_corrupt);
	tcase_add_test(core, test_filter_record_last_kept);
	tcase_add_test(core, test_filter_record_absent_in_1_2);
	tcase_add_test(core, test_parent_record_absent_in_1_0);
	tcase_add_test(core, test_unknown_record_skipped);
	tcase_add_test(core, test_module_lives);
	tcase_add_test(core, test_module_lives_untimed);
	tcase_add_test(core, test_process_argc_huge);
	tcase_add_test(core, test_process_argc_short);
	tcase_add_test(core, test_threads_lost_end);
	tcase_add_test(core, test_modules_union);
	tcase_add_test(core, test_analyze_events);
	tcase_add_test(core, test_stack_and_crash);
	tcase_add_test(core, test_analyze_crash_open_frames);
	tcase_add_test(core, test_strings_and_regions);
	tcase_add_test(core, test_string_id_out_of_range);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_missing_file);
	tcase_add_test(limits, test_parent_record_short);
	tcase_add_test(limits, test_corrupt_modules_at);
	tcase_add_test(limits, test_many_modules);
	tcase_add_test(limits, test_directory_is_not_a_trace);
	tcase_add_test(limits, test_header_size_too_small);
	tcase_add_test(limits, test_header_size_larger);
	tcase_add_test(limits, test_truncated_record_header);
	tcase_add_test(limits, test_record_too_large);
	tcase_add_test(limits, test_header_only);
	tcase_add_test(limits, test_second_process_no_leak);
	tcase_add_test(limits, test_partial_stops_before_cut);
	tcase_add_test(limits, test_empty_payload_pointer);
	tcase_add_test(limits, test_no_end_partial);
	tcase_add_test(limits, test_event_count_mismatch);
	tcase_add_test(limits, test_end_count_mismatch);
	tcase_add_test(limits, test_corrupt_event_data_names_file);
	tcase_add_test(limits, test_corrupt_small_records);
	tcase_add_test(limits, test_corrupt_modules);
	tcase_add_test(limits, test_corrupt_stack_records);
	tcase_add_test(limits, test_stream_id_bounds);
	tcase_add_test(limits, test_timebase_unusable);
	tcase_add_test(limits, test_every_truncation);
	tcase_add_test(limits, test_filter_record_short);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(trace_suite(), top, sizeof(top), "check_trace");
}
