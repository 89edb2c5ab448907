/*
 * check_trace.c - the trace reader on files crafted byte by byte: the
 * header checks, record framing, the non-event records, the time base, and
 * hp_analyze's errors, each one line naming the file.
 */
#define _GNU_SOURCE
#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"

#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_trace.h"

/* ------------------------------------------------------- byte builder */

struct bb {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct bb *b, const void *src, size_t len)
{
	if (b->n + len > b->cap) {
		b->cap = (b->n + len) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->n, src, len);
	b->n += len;
}

static void put8(struct bb *b, uint8_t v) { put(b, &v, 1); }
static void put16(struct bb *b, uint16_t v) { put8(b, (uint8_t)v), put8(b, (uint8_t)(v >> 8)); }
static void put32(struct bb *b, uint32_t v)
{
	uint8_t x[4];
	hp_le32(x, v);
	put(b, x, 4);
}
static void put64(struct bb *b, uint64_t v)
{
	uint8_t x[8];
	hp_le64(x, v);
	put(b, x, 8);
}
static void putstr(struct bb *b, const char *s)
{
	put32(b, (uint32_t)strlen(s));
	put(b, s, strlen(s));
}

static void header_with(struct bb *b, const char *magic, uint16_t major, uint32_t bom,
			uint32_t hsize)
{
	put(b, magic, 8);
	put16(b, major);
	put16(b, 0);
	put32(b, bom);
	put32(b, hsize);
	for (int i = 0; i < 12; i++)
		put8(b, 0);
}

static void header(struct bb *b)
{
	header_with(b, "HOOKPROF", 1, 0x01020304, 32);
}

/* Starts a record; returns where its size goes. */
static size_t rec(struct bb *b, uint32_t type)
{
	put32(b, type);
	size_t at = b->n;
	put32(b, 0);
	return at;
}

static void rec_end(struct bb *b, size_t at)
{
	hp_le32(b->p + at, (uint32_t)(b->n - at - 4));
}

static void process_rec(struct bb *b, uint32_t clock)
{
	size_t r = rec(b, HP_REC_PROCESS);
	put32(b, 1234);
	put32(b, clock);
	put64(b, 1700000000123456789ull);
	put32(b, 1);
	put32(b, 2);
	putstr(b, "/usr/bin/prog");
	putstr(b, "prog");
	putstr(b, "-x");
	rec_end(b, r);
}

static void clock_rec(struct bb *b, uint64_t tick, uint64_t ns)
{
	size_t r = rec(b, HP_REC_CLOCK);
	put64(b, tick);
	put64(b, ns);
	rec_end(b, r);
}

static void end_rec(struct bb *b, uint64_t events, uint64_t lost, uint32_t streams)
{
	size_t r = rec(b, HP_REC_END);
	put64(b, events);
	put64(b, lost);
	put32(b, streams);
	put32(b, 0);
	rec_end(b, r);
}

static void events_rec(struct bb *b, uint32_t stream, uint32_t count, const uint8_t *data,
		       size_t len)
{
	size_t r = rec(b, HP_REC_EVENTS);
	put32(b, stream);
	put32(b, count);
	put(b, data, len);
	rec_end(b, r);
}

/* ------------------------------------------------------- fixture */

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct hp_trace_info info;
static struct bb file;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/test.XXXXXX", top);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&info, 0, sizeof(info));
	memset(&file, 0, sizeof(file));
	err[0] = 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void teardown(void)
{
	hp_trace_info_free(&info);
	free(file.p);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void save(const struct bb *b)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	if (b->n)
		ck_assert_uint_eq(fwrite(b->p, 1, b->n, f), b->n);
	fclose(f);
}

static void save_bytes(const void *p, size_t n)
{
	struct bb b = { 0 };
	put(&b, p, n);
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

static void minimal(struct bb *b)
{
	header(b);
	process_rec(b, HP_CLOCK_TSC);
	clock_rec(b, 1000, 5000);
	clock_rec(b, 2500001000ull, 1000005000ull);
	end_rec(b, 0, 0, 0);
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
	header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	clock_rec(&file, 1000, 5000);
	clock_rec(&file, 2000, 999999);
	clock_rec(&file, 3000, 9999);
	clock_rec(&file, 5000, 6000);
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
	header_with(&file, "HOOKPROX", 1, 0x01020304, 32);
	end_rec(&file, 0, 0, 0);
	save(&file);
	assert_open_fails("not a hookprof trace (bad magic)");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_wrong_byte_order)
{
	header_with(&file, "HOOKPROF", 1, 0x04030201, 32);
	save(&file);
	assert_open_fails("trace written with another byte order");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_major_version_2)
{
	header_with(&file, "HOOKPROF", 2, 0x01020304, 32);
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

START_TEST(test_record_past_eof)
{
	char want[PATH_MAX + 2048];
	header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	size_t at = file.n;
	clock_rec(&file, 1, 2);
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
	header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	clock_rec(&file, 1000, 5000);
	size_t r = rec(&file, 99);
	put(&file, "\1\2\3\4\5\6\7", 7);
	rec_end(&file, r);
	r = rec(&file, 0);
	rec_end(&file, r);
	clock_rec(&file, 3000, 6000);
	end_rec(&file, 0, 0, 0);
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
	header(&file);
	size_t r = rec(&file, HP_REC_PROCESS);
	put32(&file, 1);
	put32(&file, HP_CLOCK_TSC);
	put64(&file, 0);
	put32(&file, 0);
	put32(&file, 0xffffffffu);
	putstr(&file, "/bin/x");
	putstr(&file, "x");
	rec_end(&file, r);
	end_rec(&file, 0, 0, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 1");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_process_argc_short)
{
	/* 3 arguments announced, 1 present */
	header(&file);
	size_t r = rec(&file, HP_REC_PROCESS);
	put32(&file, 1);
	put32(&file, HP_CLOCK_TSC);
	put64(&file, 0);
	put32(&file, 0);
	put32(&file, 3);
	putstr(&file, "/bin/x");
	putstr(&file, "x");
	put32(&file, 0x1000); /* the second runs past the record */
	put(&file, "yy", 2);
	rec_end(&file, r);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_str_eq(err, "corrupt record of type 1");
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_threads_lost_end)
{
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	size_t r = rec(&file, HP_REC_THREAD);
	put32(&file, 3);
	put32(&file, 4711);
	putstr(&file, "worker");
	rec_end(&file, r);
	r = rec(&file, HP_REC_THREAD); /* the newest wins */
	put32(&file, 3);
	put32(&file, 4711);
	putstr(&file, "renamed");
	rec_end(&file, r);
	static const struct { uint32_t stream, reason; uint64_t n; } lost[] = {
		{ 3, 1, 10 }, { 3, 2, 5 }, { 0xffffffffu, 4, 7 }, { 0xffffffffu, 3, 1 }
	};
	for (size_t i = 0; i < 4; i++) {
		r = rec(&file, HP_REC_LOST);
		put32(&file, lost[i].stream);
		put32(&file, lost[i].reason);
		put64(&file, lost[i].n);
		rec_end(&file, r);
	}
	end_rec(&file, 0, 23, 1);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_ge(info.nstreams, 4);
	ck_assert_int_eq(info.streams[3].seen, 1);
	ck_assert_uint_eq(info.streams[3].tid, 4711);
	ck_assert_str_eq(info.streams[3].name, "renamed");
	ck_assert_uint_eq(info.streams[3].lost, 15);
	ck_assert_int_eq(info.streams[0].seen, 0);
	ck_assert_uint_eq(info.lost_global, 8);
	ck_assert_uint_eq(info.end_lost, 23);
	struct hp_timebase tb;
	ck_assert_int_eq(hp_trace_timebase(&info, &tb), 0);
	ck_assert_double_eq(tb.ns_per_tick, 1.0);
}
END_TEST

START_TEST(test_modules_union)
{
	header(&file);
	size_t r = rec(&file, HP_REC_MODULES);
	put32(&file, 2);
	put64(&file, 0x555500000000ull);
	putstr(&file, "/usr/bin/prog");
	put32(&file, 4);
	put(&file, "\xde\xad\xbe\xef", 4);
	put32(&file, 2);
	put64(&file, 0x555500001000ull), put64(&file, 0x2000), put64(&file, 0x1000);
	put32(&file, 5), put32(&file, 0);
	put64(&file, 0x555500004000ull), put64(&file, 0x100), put64(&file, 0x3000);
	put32(&file, 6), put32(&file, 0);
	put64(&file, 0x7fff00000000ull);
	putstr(&file, "linux-vdso.so.1");
	put32(&file, 0);
	put32(&file, 0);
	rec_end(&file, r);
	/* second snapshot: prog again, and a new library */
	r = rec(&file, HP_REC_MODULES);
	put32(&file, 2);
	put64(&file, 0x555500000000ull);
	putstr(&file, "/usr/bin/prog");
	put32(&file, 0);
	put32(&file, 1);
	put64(&file, 1), put64(&file, 2), put64(&file, 3), put32(&file, 4), put32(&file, 0);
	put64(&file, 0x7f0000000000ull);
	putstr(&file, "/lib/libplugin.so");
	put32(&file, 0);
	put32(&file, 1);
	put64(&file, 0x7f0000001000ull), put64(&file, 0x500), put64(&file, 0x1000);
	put32(&file, 5), put32(&file, 0);
	rec_end(&file, r);
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

START_TEST(test_analyze_events)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	clock_rec(&file, 0, 0);
	size_t r = rec(&file, HP_REC_THREAD);
	put32(&file, 0);
	put32(&file, 99);
	putstr(&file, "main");
	rec_end(&file, r);
	events_rec(&file, 0, 2, ev, sizeof(ev));
	clock_rec(&file, 100, 100);
	end_rec(&file, 2, 0, 1);
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
	header_with(&file, "HOOKPROF", 1, 0x01020304, 16);
	save(&file);
	assert_open_fails("corrupt file header");
}
END_TEST

START_TEST(test_header_size_larger)
{
	/* a longer header: records start where it says */
	header_with(&file, "HOOKPROF", 1, 0x01020304, 40);
	put64(&file, 0xffffffffffffffffull);
	process_rec(&file, HP_CLOCK_TSC);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), 0);
	ck_assert_uint_eq(info.pid, 1234);
}
END_TEST

START_TEST(test_truncated_record_header)
{
	char want[PATH_MAX + 2048];
	header(&file);
	put32(&file, HP_REC_CLOCK);
	put8(&file, 16);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	snprintf(want, sizeof(want), "%s: truncated trace (record header at byte 32)", path);
	ck_assert_str_eq(err, want);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_record_too_large)
{
	header(&file);
	put32(&file, HP_REC_EVENTS);
	put32(&file, HP_RECORD_MAX + 1);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
	/* size 0xffffffff does not overflow the bounds check */
	free(file.p);
	memset(&file, 0, sizeof(file));
	header(&file);
	put32(&file, 77);
	put32(&file, 0xffffffffu);
	put64(&file, 0);
	save(&file);
	ck_assert_int_eq(read_trace(NULL, NULL), -1);
	assert_analyze_fails(HP_ANALYZE_ALLOW_PARTIAL);
}
END_TEST

START_TEST(test_header_only)
{
	int n = -1;
	header(&file);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	clock_rec(&file, 0, 0);
	events_rec(&file, 0, 1, ev, sizeof(ev));
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	events_rec(&file, 0, 3, ev, sizeof(ev));
	end_rec(&file, 3, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "2 events where 3 were written"));
}
END_TEST

START_TEST(test_end_count_mismatch)
{
	static const uint8_t ev[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	events_rec(&file, 0, 2, ev, sizeof(ev));
	end_rec(&file, 5, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "2 events decoded where 5 were written"));
}
END_TEST

START_TEST(test_corrupt_event_data_names_file)
{
	static const uint8_t ev[] = { 0x45 };
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	events_rec(&file, 0, 1, ev, sizeof(ev));
	end_rec(&file, 1, 0, 1);
	save(&file);
	assert_analyze_fails(0);
	ck_assert_ptr_nonnull(strstr(err, "unknown event code"));
	/* an EVENTS record too short for its head */
	free(file.p);
	memset(&file, 0, sizeof(file));
	header(&file);
	size_t r = rec(&file, HP_REC_EVENTS);
	put32(&file, 0);
	rec_end(&file, r);
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

START_TEST(test_corrupt_modules)
{
	struct hp_trace_info ti = { 0 };
	char e[128];
	struct bb b = { 0 };
	/* build-id longer than 64 bytes */
	put32(&b, 1);
	put64(&b, 0);
	putstr(&b, "/x");
	put32(&b, 65);
	for (int i = 0; i < 65; i++)
		put8(&b, 1);
	put32(&b, 0);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* more segments than bytes */
	b.n = 0;
	put32(&b, 1);
	put64(&b, 0);
	putstr(&b, "/x");
	put32(&b, 0);
	put32(&b, 0x10000000);
	put64(&b, 0);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* path length past the record */
	b.n = 0;
	put32(&b, 1);
	put64(&b, 0);
	put32(&b, 0xfffffff0u);
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_MODULES, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	ck_assert_uint_eq(ti.nmodules, 0);
	hp_trace_info_free(&ti);
	free(b.p);
}
END_TEST

START_TEST(test_stream_id_bounds)
{
	struct hp_trace_info ti = { 0 };
	char e[128];
	struct bb b = { 0 };
	put32(&b, 0xfffffff0u);
	put32(&b, 1);
	putstr(&b, "t");
	ck_assert_int_eq(hp_trace_info_add(&ti, HP_REC_THREAD, b.p, (uint32_t)b.n, e, sizeof(e)), -1);
	/* a long thread name is cut, not overflowed */
	b.n = 0;
	put32(&b, 1);
	put32(&b, 2);
	char name[200];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	putstr(&b, name);
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
	header(&file);
	boundary[0] = file.n;
	process_rec(&file, HP_CLOCK_TSC);
	boundary[1] = file.n;
	clock_rec(&file, 1000, 5000);
	boundary[2] = file.n;
	clock_rec(&file, 2500001000ull, 1000005000ull);
	boundary[3] = file.n;
	end_rec(&file, 0, 0, 0);
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
		/* with --partial, the cut after the second CLOCK is readable too */
		struct hp_analysis a;
		int want = len == boundary[3] || len == boundary[4] ? 0 : -1;
		ck_assert_msg(hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err,
					 sizeof(err)) == want, "length %zu: %s", len, err);
		if (want) {
			ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
			ck_assert_ptr_null(strchr(err, '\n'));
		} else {
			ck_assert_int_eq(a.partial, len < boundary[4]);
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
	tcase_add_test(core, test_unknown_record_skipped);
	tcase_add_test(core, test_process_argc_huge);
	tcase_add_test(core, test_process_argc_short);
	tcase_add_test(core, test_threads_lost_end);
	tcase_add_test(core, test_modules_union);
	tcase_add_test(core, test_analyze_events);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_missing_file);
	tcase_add_test(limits, test_directory_is_not_a_trace);
	tcase_add_test(limits, test_header_size_too_small);
	tcase_add_test(limits, test_header_size_larger);
	tcase_add_test(limits, test_truncated_record_header);
	tcase_add_test(limits, test_record_too_large);
	tcase_add_test(limits, test_header_only);
	tcase_add_test(limits, test_no_end_partial);
	tcase_add_test(limits, test_event_count_mismatch);
	tcase_add_test(limits, test_end_count_mismatch);
	tcase_add_test(limits, test_corrupt_event_data_names_file);
	tcase_add_test(limits, test_corrupt_small_records);
	tcase_add_test(limits, test_corrupt_modules);
	tcase_add_test(limits, test_stream_id_bounds);
	tcase_add_test(limits, test_timebase_unusable);
	tcase_add_test(limits, test_every_truncation);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	snprintf(top, sizeof(top), "%s/check_trace.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top)) {
		perror(top);
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
