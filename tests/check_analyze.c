/*
 * check_analyze.c - hp_analyze, the one pass over a whole trace, on files
 * written by hand: per-stream decoders and stacks when records of streams
 * interleave, recursion counted once, exact ticks and nanoseconds, frames
 * left open, the END and EVENTS counts, --partial, records it skips or
 * folds in (unknown, LOST, MODULES), the per-record callback, and memory
 * that does not grow with the number of records.
 *
 * check_trace.c covers the file header, record framing and each non-event
 * record on its own; check_profile.c the profile from ready-made events.
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

/* ------------------------------------------------------- trace files */

/* The traced program of every file here: pid 4321, "/bin/prog". */
static void process_rec(struct tk_bytes *b, uint32_t clock)
{
	static const char *const argv[] = { "prog" };
	tk_process_rec(b, 4321, clock, 1700000000000000000ull, 0, "/bin/prog", 1, argv);
}

/* An EVENTS record of `stream` claiming `count` events, data spelt out. */
#define EVENTS(b, stream, count, ...)                                    \
	do {                                                             \
		static const uint8_t d_[] = { __VA_ARGS__ };             \
		tk_events_rec(b, stream, count, d_, sizeof(d_));         \
	} while (0)

/* ------------------------------------------------------- fixture */

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct tk_bytes file;
static struct hp_analysis a;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&file, 0, sizeof(file));
	memset(&a, 0, sizeof(a));
	err[0] = 0;
}

static void teardown(void)
{
	hp_analysis_free(&a);
	free(file.p);
	tk_remove_tree(dir);
}

/* Starts the file over. */
static void restart(void)
{
	file.n = 0;
	hp_analysis_free(&a);
}

static void analyze_ok(int flags, hp_event_fn fn, void *arg)
{
	tk_save(path, &file);
	hp_analysis_free(&a);
	int rc = hp_analyze(path, flags, fn, arg, &a, err, sizeof(err));
	ck_assert_msg(rc == 0, "hp_analyze: %s", err);
}

/* Refused with one line that names the file and says `why`. */
static void analyze_fails(int flags, const char *why)
{
	tk_save(path, &file);
	hp_analysis_free(&a);
	strcpy(err, "untouched");
	ck_assert_int_eq(hp_analyze(path, flags, NULL, NULL, &a, err, sizeof(err)), -1);
	ck_assert_msg(!strncmp(err, path, strlen(path)), "error does not name the file: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_msg(strstr(err, why) != NULL, "error \"%s\" does not say \"%s\"", err, why);
}

/* Function i's stat, after checking it is the function at addr. */
static const struct hp_fstat *fn(uint32_t i, uint64_t addr)
{
	ck_assert_uint_lt(i, a.funcs.n);
	ck_assert_uint_eq(a.funcs.addr[i], addr);
	return &a.prof.f[i];
}

static void assert_stat(uint32_t i, uint64_t addr, uint64_t calls, uint64_t total, uint64_t self,
			uint64_t min, uint64_t max)
{
	const struct hp_fstat *s = fn(i, addr);
	ck_assert_msg(s->calls == calls && s->total == total && s->self == self && s->min == min &&
			      s->max == max,
		      "function %u: calls %llu total %llu self %llu min %llu max %llu, want %llu %llu "
		      "%llu %llu %llu",
		      i, (unsigned long long)s->calls, (unsigned long long)s->total,
		      (unsigned long long)s->self, (unsigned long long)s->min,
		      (unsigned long long)s->max, (unsigned long long)calls,
		      (unsigned long long)total, (unsigned long long)self, (unsigned long long)min,
		      (unsigned long long)max);
}

enum { FA = 0x10, FB = 0x20 }; /* addresses of functions 0 and 1 */

/* ---------------------------------------------------------------- core */

/* Stream 0 and stream 1 call A and B; their records alternate and each
 * leaves frames open across the other's. */
static void interleaved(struct tk_bytes *b)
{
	tk_header(b);
	process_rec(b, HP_CLOCK_MONOTONIC);
	tk_clock_rec(b, 0, 0);
	tk_thread_rec(b, 0, 100, "main");
	tk_thread_rec(b, 1, 101, "worker");
	EVENTS(b, 0, 1, 0x43, 0x10, 0x00, 0x0a);                    /* A @10 */
	EVENTS(b, 1, 2, 0x43, 0x20, 0x01, 0xe8, 0x07, 0x00, 0x05);  /* B @1000, A @1005 */
	EVENTS(b, 0, 3, 0x01, 0x0a, 0x85, 0x8f);                    /* B @20-25, A ends @40 */
	EVENTS(b, 1, 2, 0x85, 0xda);                                /* A ends @1010, B @1100 */
	tk_end_rec(b, 8, 0, 2);
}

START_TEST(test_streams_interleaved)
{
	/* one stack and one tick per stream: stream 0's exits close its own
	 * frames, stream 1's first delta is absolute, and stream 1's A is
	 * outermost although stream 0's A is open */
	interleaved(&file);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.events, 8);
	ck_assert_int_eq(a.partial, 0);
	assert_stat(0, FA, 2, 30 + 5, (30 - 5) + 5, 5, 30);
	assert_stat(1, FB, 2, 5 + 100, 5 + 95, 5, 100);
	ck_assert_uint_eq(a.info.streams[0].events, 4);
	ck_assert_uint_eq(a.info.streams[1].events, 4);
	ck_assert_str_eq(a.info.streams[1].name, "worker");
	ck_assert_uint_eq(a.orphan_exits, 0);
}
END_TEST

START_TEST(test_recursion_once_in_ns)
{
	/* A @100 { A @110 { B @130 { A @160-170 } @200 } @230 } @300, across
	 * two records; CLOCK pairs 2000 ticks apart over 1000 ns: 2 ticks a ns */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	tk_clock_rec(&file, 1000, 0);
	EVENTS(&file, 0, 4, 0x43, 0x10, 0x43, 0x20, 0x00, 0x64, 0x00, 0x0a, 0x01, 0x14, 0x00, 0x1e);
	EVENTS(&file, 0, 4, 0x8a, 0x9e, 0x9e, 0x40, 0x8c, 0x01);
	tk_clock_rec(&file, 3000, 1000);
	tk_end_rec(&file, 8, 0, 1);
	analyze_ok(0, NULL, NULL);
	/* A: durations 10, 120, 200; total only the outermost; self
	 * 10 + (120 - 70) + (200 - 120). B: 70, of which A's 10 is not self */
	assert_stat(0, FA, 3, 200, 140, 10, 200);
	assert_stat(1, FB, 1, 70, 60, 70, 70);
	ck_assert_uint_eq(a.tb.tick0, 1000);
	ck_assert_double_eq(a.tb.ns_per_tick, 0.5);
	ck_assert_double_eq(hp_ticks_to_ns(&a.tb, a.prof.f[0].total), 100.0);
	ck_assert_double_eq(hp_ticks_to_ns(&a.tb, a.prof.f[0].self), 70.0);
	ck_assert_double_eq(hp_ticks_to_ns(&a.tb, a.prof.f[1].total), 35.0);
	ck_assert_double_eq(hp_ticks_to_ns(&a.tb, a.prof.f[1].self), 30.0);
}
END_TEST

START_TEST(test_open_frames_closed_at_stream_last_tick)
{
	/* main called exit(): END is there, frames are not closed. Each
	 * stream's frames end at that stream's last tick, not the file's. */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 3, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a, 0x40, 0x3c); /* A @10, B @20-50 */
	EVENTS(&file, 1, 2, 0x01, 0xe8, 0x07, 0x00, 0xac, 0x02);                        /* B @1000, A @1300 */
	tk_end_rec(&file, 5, 0, 2);
	analyze_ok(0, NULL, NULL);
	ck_assert_int_eq(a.partial, 0);
	assert_stat(0, FA, 2, 40 + 0, 10 + 0, 0, 40);
	assert_stat(1, FB, 2, 30 + 300, 30 + 300, 30, 300);
}
END_TEST

START_TEST(test_reset_drops_only_its_stream)
{
	/* stream 0 loses events (reset) while stream 1 has A open: stream 1's
	 * exit still finds its frame, stream 0's dropped frames are no calls */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a); /* A @10, B @20 */
	EVENTS(&file, 1, 1, 0x00, 0x64);                                     /* A @100 */
	EVENTS(&file, 0, 2, 0x44, 0x00, 0x05, 0x83);                          /* A @5-8 */
	EVENTS(&file, 1, 1, 0xb2);                                           /* A ends @150 */
	tk_end_rec(&file, 6, 0, 2);
	analyze_ok(0, NULL, NULL);
	assert_stat(0, FA, 2, 3 + 50, 3 + 50, 3, 50);
	ck_assert_uint_eq(fn(1, FB)->calls, 0);
}
END_TEST

/* A @1, exit of B (not open) @2, reset, A @5-5: 4 events, 2 defines and
 * a reset that are not events. */
static void counted(uint32_t count, uint64_t end_events)
{
	restart();
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	static const uint8_t d[] = { 0x43, 0x10, 0x43, 0x20, 0x00, 0x01, 0x41, 0x01, 0x02,
				     0x44, 0x00, 0x05, 0x80 };
	tk_events_rec(&file, 0, count, d, sizeof(d));
	tk_end_rec(&file, end_events, 0, 1);
}

START_TEST(test_event_counts)
{
	counted(4, 4);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.events, 4);
	ck_assert_uint_eq(a.orphan_exits, 1);
	assert_stat(0, FA, 1, 0, 0, 0, 0);
	/* END must match what was decoded, either way */
	counted(4, 3);
	analyze_fails(0, "corrupt trace: 4 events decoded where 3 were written");
	counted(4, 5);
	analyze_fails(HP_ANALYZE_ALLOW_PARTIAL, "corrupt trace: 4 events decoded where 5 were written");
	/* the record's count includes the orphan exit, not the reset */
	counted(3, 3);
	analyze_fails(0, "corrupt events record (4 events where 3 were written)");
	counted(5, 5);
	analyze_fails(0, "corrupt events record (4 events where 5 were written)");
}
END_TEST

START_TEST(test_missing_end)
{
	/* killed: stream 0 has A open from 20, stream 1 A and B from 100, 150 */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 3, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x85, 0x00, 0x05); /* A @10-15, A @20 */
	EVENTS(&file, 1, 2, 0x00, 0x64, 0x01, 0x32);                               /* A @100, B @150 */
	tk_lost_rec(&file, 1, HP_LOST_RING, 9);
	analyze_fails(0, "incomplete trace: no end record");
	analyze_ok(HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL);
	ck_assert_int_eq(a.partial, 1);
	ck_assert_int_eq(a.info.has_end, 0);
	ck_assert_uint_eq(a.events, 5);
	ck_assert_uint_eq(a.info.streams[1].lost, 9);
	assert_stat(0, FA, 3, 5 + 0 + 50, 5 + 0 + 50, 0, 50);
	assert_stat(1, FB, 1, 0, 0, 0, 0);
	/* with END the same events are complete */
	tk_end_rec(&file, 5, 9, 2);
	analyze_ok(0, NULL, NULL);
	ck_assert_int_eq(a.partial, 0);
}
END_TEST

START_TEST(test_unknown_records_skipped)
{
	/* records of types this reader does not know, between the enter and
	 * exit of A, whose payloads would read as events or an END */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a); /* A @10 */
	size_t r = tk_rec_begin(&file, 0x70); /* 8 to 11 are taken since 1.1 */
	tk_put8(&file, 0x80), tk_put8(&file, 0x80), tk_put8(&file, 0x80);
	tk_rec_end(&file, r);
	r = tk_rec_begin(&file, 0xffffffffu);
	tk_put32(&file, 0), tk_put32(&file, 1), tk_put8(&file, 0x85);
	tk_rec_end(&file, r);
	r = tk_rec_begin(&file, 0x100 | HP_REC_END);
	tk_put64(&file, 99), tk_put64(&file, 0), tk_put32(&file, 1), tk_put32(&file, 0);
	tk_rec_end(&file, r);
	r = tk_rec_begin(&file, 0);
	tk_rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x87); /* A ends @17 */
	tk_end_rec(&file, 2, 0, 1);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.events, 2);
	ck_assert_uint_eq(a.info.end_events, 2);
	assert_stat(0, FA, 1, 7, 7, 7, 7);
}
END_TEST

START_TEST(test_lost_summed)
{
	/* LOST records among the events add up per stream and, for stream
	 * 0xffffffff, globally; a stream may lose events without writing any */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_lost_rec(&file, 0, HP_LOST_RING, 10);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a);
	tk_lost_rec(&file, 1, HP_LOST_REENTRY, 3);
	tk_lost_rec(&file, HP_STREAM_NONE, HP_LOST_LATE, 7);
	EVENTS(&file, 1, 1, 0x00, 0x05);
	tk_lost_rec(&file, 0, HP_LOST_LATE, 2);
	tk_lost_rec(&file, HP_STREAM_NONE, HP_LOST_NO_BUFFER, 1);
	tk_lost_rec(&file, 5, HP_LOST_NO_BUFFER, 100);
	tk_lost_rec(&file, 1, HP_LOST_RING, 4);
	EVENTS(&file, 0, 1, 0x81);
	EVENTS(&file, 1, 1, 0x81);
	tk_end_rec(&file, 4, 127, 2);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.info.streams[0].lost, 12);
	ck_assert_uint_eq(a.info.streams[1].lost, 7);
	ck_assert_uint_eq(a.info.streams[5].lost, 100);
	ck_assert_uint_eq(a.info.streams[5].events, 0);
	ck_assert_uint_eq(a.info.lost_global, 8);
	uint64_t sum = a.info.lost_global;
	for (size_t i = 0; i < a.info.nstreams; i++)
		sum += a.info.streams[i].lost;
	ck_assert_uint_eq(sum, a.info.end_lost);
	ck_assert_uint_eq(a.events, 4);
}
END_TEST

START_TEST(test_modules_parsed)
{
	/* a snapshot before the events and one after a dlopen between them */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	size_t r = tk_rec_begin(&file, HP_REC_MODULES);
	tk_put32(&file, 1);
	tk_put64(&file, 0x555555554000ull);
	tk_putstr(&file, "/bin/prog");
	tk_put32(&file, 3), tk_put8(&file, 0xab), tk_put8(&file, 0xcd), tk_put8(&file, 0xef);
	tk_put32(&file, 2);
	tk_put64(&file, 0x555555555000ull), tk_put64(&file, 0x800), tk_put64(&file, 0x1000);
	tk_put32(&file, 5), tk_put32(&file, 0);
	tk_put64(&file, 0x555555557000ull), tk_put64(&file, 0x200), tk_put64(&file, 0x3000);
	tk_put32(&file, 6), tk_put32(&file, 0);
	tk_rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a);
	r = tk_rec_begin(&file, HP_REC_MODULES);
	tk_put32(&file, 1);
	tk_put64(&file, 0x7f0000000000ull);
	tk_putstr(&file, "/lib/libx.so");
	tk_put32(&file, 0);
	tk_put32(&file, 1);
	tk_put64(&file, 0x7f0000001000ull), tk_put64(&file, 0x400), tk_put64(&file, 0x1000);
	tk_put32(&file, 5), tk_put32(&file, 0);
	tk_rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x81);
	tk_end_rec(&file, 2, 0, 1);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.info.nmodules, 2);
	const struct hp_module *m = &a.info.modules[0];
	ck_assert_str_eq(m->path, "/bin/prog");
	ck_assert_uint_eq(m->bias, 0x555555554000ull);
	ck_assert_uint_eq(m->build_id_len, 3);
	ck_assert_mem_eq(m->build_id, "\xab\xcd\xef", 3);
	ck_assert_uint_eq(m->nseg, 2);
	ck_assert_uint_eq(m->seg[1].start, 0x555555557000ull);
	ck_assert_uint_eq(m->seg[1].size, 0x200);
	ck_assert_uint_eq(m->seg[1].offset, 0x3000);
	ck_assert_uint_eq(m->seg[1].flags, 6);
	ck_assert_str_eq(a.info.modules[1].path, "/lib/libx.so");
	ck_assert_uint_eq(a.info.modules[1].seg[0].size, 0x400);
	ck_assert_uint_eq(a.events, 2);
}
END_TEST

/* A MODULES record listing one module of one executable segment, or none. */
static void one_module_rec(struct tk_bytes *b, const char *obj, uint64_t bias, uint64_t start)
{
	size_t r = tk_rec_begin(b, HP_REC_MODULES);
	tk_put32(b, obj ? 1 : 0);
	if (obj) {
		tk_put64(b, bias);
		tk_putstr(b, obj);
		tk_put32(b, 0);
		tk_put32(b, 1);
		tk_put64(b, start), tk_put64(b, 0x1000), tk_put64(b, 0x1000);
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

/* liba.so is unloaded at tick 20 and libb.so loaded at the same address;
 * libb's snapshot comes after all the events in the file. The address
 * 0x7f0000001010 is two functions: liba's called once (@10-12), libb's
 * twice (@30-33, during its dlopen before any snapshot showed it, and
 * @50-51). */
START_TEST(test_address_reused_after_dlclose)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	one_module_rec(&file, "/lib/liba.so", 0x7f0000000000ull, 0x7f0000001000ull);
	modules_at_rec(&file, 5, 1);
	EVENTS(&file, 0, 2, 0x43, 0x90, 0xa0, 0x80, 0x80, 0x80, 0xe0, 0x1f, 0x00, 0x0a, 0x82);
	one_module_rec(&file, NULL, 0, 0);
	modules_at_rec(&file, 20, 0);
	EVENTS(&file, 0, 4, 0x00, 0x12, 0x83, 0x00, 0x11, 0x81);
	one_module_rec(&file, "/lib/libb.so", 0x7f0000000000ull, 0x7f0000001000ull);
	modules_at_rec(&file, 60, 1);
	tk_end_rec(&file, 6, 0, 1);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.info.nmodules, 2);
	ck_assert_uint_eq(a.funcs.n, 2);
	assert_stat(0, 0x7f0000001010ull, 1, 2, 2, 2, 2);
	assert_stat(1, 0x7f0000001010ull, 2, 4, 4, 1, 3);
	ck_assert_str_eq(a.info.modules[a.func_module[0]].path, "/lib/liba.so");
	ck_assert_str_eq(a.info.modules[a.func_module[1]].path, "/lib/libb.so");
}
END_TEST

/* Without MODULES_AT records (a 1.0 trace), every module is there for the
 * whole run, and an address is one function as before. */
START_TEST(test_untimed_modules_one_function_per_address)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	one_module_rec(&file, "/lib/liba.so", 0x7f0000000000ull, 0x7f0000001000ull);
	EVENTS(&file, 0, 2, 0x43, 0x90, 0xa0, 0x80, 0x80, 0x80, 0xe0, 0x1f, 0x00, 0x0a, 0x82);
	EVENTS(&file, 0, 4, 0x00, 0x12, 0x83, 0x00, 0x11, 0x81);
	tk_end_rec(&file, 6, 0, 1);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.funcs.n, 1);
	assert_stat(0, 0x7f0000001010ull, 3, 6, 6, 1, 3);
	ck_assert_uint_eq(a.func_module[0], 0);
}
END_TEST

/* What the callback saw, one row per call. */
struct seen {
	int calls, fail_at;
	uint32_t stream[8];
	size_t n[8];
	struct hp_ev ev[8][4];
	uint32_t nfuncs[8];
};

static int on_events(void *arg, const struct hp_analysis *an, uint32_t stream,
		     const struct hp_ev *ev, size_t n)
{
	struct seen *s = arg;
	int i = s->calls++;
	if (i < 8) {
		s->stream[i] = stream;
		s->n[i] = n;
		s->nfuncs[i] = an->funcs.n;
		memcpy(s->ev[i], ev, (n < 4 ? n : 4) * sizeof(*ev));
	}
	return s->calls == s->fail_at;
}

START_TEST(test_callback_per_record)
{
	/* once per EVENTS record, in file order, with that record's events
	 * only and the dictionary as far as it has been read */
	struct seen s = { 0 };
	interleaved(&file);
	analyze_ok(0, on_events, &s);
	ck_assert_int_eq(s.calls, 4);
	static const uint32_t stream[] = { 0, 1, 0, 1 };
	static const size_t n[] = { 1, 2, 3, 2 };
	static const uint32_t nfuncs[] = { 1, 2, 2, 2 };
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(s.stream[i], stream[i]);
		ck_assert_uint_eq(s.n[i], n[i]);
		ck_assert_uint_eq(s.nfuncs[i], nfuncs[i]);
	}
	ck_assert(s.ev[1][0].kind == HP_EV_ENTER && s.ev[1][0].func == 1 && s.ev[1][0].tick == 1000);
	ck_assert(s.ev[2][2].kind == HP_EV_EXIT && s.ev[2][2].func == 0 && s.ev[2][2].tick == 40);
	ck_assert(s.ev[3][1].kind == HP_EV_EXIT && s.ev[3][1].func == 1 && s.ev[3][1].tick == 1100);
}
END_TEST

/* What the callback saw of a big record: its pieces. */
struct pieces {
	size_t calls, events, largest;
	uint64_t exits_at_jump;
};

static int on_piece(void *arg, const struct hp_analysis *an, uint32_t stream,
		    const struct hp_ev *ev, size_t n)
{
	struct pieces *p = arg;
	(void)an;
	(void)stream;
	p->calls++;
	p->events += n;
	p->largest = n > p->largest ? n : p->largest;
	for (size_t i = 0; i < n; i++)
		p->exits_at_jump += ev[i].kind == HP_EV_EXIT && ev[i].tick == 300001;
	return 0;
}

START_TEST(test_big_record_in_pieces)
{
	/* one record of 300000 enters, a 0x41 closing them all, then 100000
	 * calls: 800000 events handed out in pieces of at most HP_DECODE_PIECE,
	 * in order, and the profile has them all */
	enum { DEPTH = 300000, CALLS = 100000 };
	struct tk_bytes ev = { 0 };
	static const uint8_t def[] = { 0x43, 0x80, 0x20, 0x43, 0x90, 0x20 };
	tk_put(&ev, def, sizeof(def));
	tk_put8(&ev, 0x01);
	tk_put8(&ev, 0x01);
	for (int i = 1; i < DEPTH; i++) {
		tk_put8(&ev, 0x00);
		tk_put8(&ev, 0x01);
	}
	static const uint8_t jump[] = { 0x41, 0x01, 0x02 }; /* exit 1, +1: @300001 */
	tk_put(&ev, jump, sizeof(jump));
	for (int i = 0; i < CALLS; i++) {
		static const uint8_t call[] = { 0x00, 0x01, 0x81 };
		tk_put(&ev, call, sizeof(call));
	}
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 1, "t");
	tk_events_rec(&file, 0, DEPTH + 1 + 2 * CALLS, ev.p, ev.n);
	tk_end_rec(&file, DEPTH + 1 + 2 * CALLS, 0, 1);
	free(ev.p);
	struct pieces p = { 0 };
	analyze_ok(0, on_piece, &p);
	ck_assert_uint_eq(p.events, 2 * DEPTH + 2 * CALLS);
	ck_assert_uint_le(p.largest, HP_DECODE_PIECE);
	ck_assert_uint_ge(p.calls, (2 * DEPTH + 2 * CALLS) / HP_DECODE_PIECE);
	ck_assert_uint_eq(p.exits_at_jump, DEPTH);
	ck_assert_uint_eq(a.events, DEPTH + 1 + 2 * CALLS);
	ck_assert_uint_eq(fn(0, 0x1000)->calls, DEPTH - 1 + CALLS);
	ck_assert_uint_eq(fn(1, 0x1010)->calls, 1);
	ck_assert_uint_eq(fn(1, 0x1010)->total, 300001 - 1);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_callback_failure_stops)
{
	struct seen s = { .fail_at = 2 };
	interleaved(&file);
	tk_save(path, &file);
	ck_assert_int_eq(hp_analyze(path, 0, on_events, &s, &a, err, sizeof(err)), -1);
	ck_assert_int_eq(s.calls, 2);
	ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
	ck_assert_ptr_nonnull(strstr(err, "cannot write the output"));
}
END_TEST

START_TEST(test_events_of_no_stream)
{
	/* 0xffffffff names no stream: LOST may use it, EVENTS may not */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, HP_STREAM_NONE, 1, 0x43, 0x10, 0x00, 0x0a);
	tk_end_rec(&file, 1, 0, 1);
	analyze_fails(HP_ANALYZE_ALLOW_PARTIAL, "corrupt events record (stream 4294967295)");
}
END_TEST

START_TEST(test_orphan_exit_is_the_last_tick)
{
	/* A @10, then an exit of B (never entered) @90 ends the stream. The
	 * exit is an event of this thread at 90 while A was still open, so
	 * A, left open, closes at 90: the stream's last tick. */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x41, 0x01, 0xa0, 0x01);
	tk_end_rec(&file, 2, 0, 1);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.orphan_exits, 1);
	assert_stat(0, FA, 1, 80, 80, 80, 80);
}
END_TEST

/* Bytes of the heap in use, glibc's count (0 under a sanitizer's malloc). */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

struct peak {
	size_t max;
	uint64_t calls;
	int bad_n;
};

static int track_peak(void *arg, const struct hp_analysis *an, uint32_t stream,
		      const struct hp_ev *ev, size_t n)
{
	(void)an, (void)stream, (void)ev;
	struct peak *p = arg;
	size_t now = heap_in_use();
	if (now > p->max)
		p->max = now;
	p->calls++;
	p->bad_n |= n != 2;
	return 0;
}

/* Peak heap while analysing `records` EVENTS records of one call each. */
static size_t peak_for(int records)
{
	restart();
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x00, 0x01, 0x81);
	for (int i = 1; i < records; i++)
		EVENTS(&file, 0, 2, 0x00, 0x01, 0x81);
	tk_end_rec(&file, 2 * (uint64_t)records, 0, 1);
	struct peak p = { heap_in_use(), 0, 0 };
	size_t before = p.max;
	analyze_ok(0, track_peak, &p);
	ck_assert_uint_eq(p.calls, (uint64_t)records);
	ck_assert_int_eq(p.bad_n, 0);
	ck_assert_uint_eq(a.events, 2 * (uint64_t)records);
	ck_assert_uint_eq(a.prof.f[0].calls, (uint64_t)records);
	size_t after = heap_in_use();
	hp_analysis_free(&a);
	return (after > p.max ? after : p.max) - before;
}

START_TEST(test_events_not_kept)
{
	/* 100 times the records, same peak: kept as events (16 bytes each),
	 * 40000 would be 640 KiB; kept as bytes, 240 KiB */
	size_t few = peak_for(200);
	size_t many = peak_for(20000);
	ck_assert_msg(many <= few + 64 * 1024, "peak heap %zu bytes for 200 records, %zu for 20000",
		      few, many);
}
END_TEST

/* ------------------------------------------------ summary and duration */

/* Killed: the last CLOCK at 1000 ns, stream 1's events go on to 1900. */
static void killed_after_last_clock(struct tk_bytes *b)
{
	tk_header(b);
	process_rec(b, HP_CLOCK_MONOTONIC);
	tk_clock_rec(b, 0, 0);
	tk_clock_rec(b, 1000, 1000);
	tk_thread_rec(b, 0, 100, "main");
	tk_thread_rec(b, 1, 101, "worker");
	EVENTS(b, 0, 2, 0x43, 0x10, 0x00, 0x0a, 0x85);              /* A @10-15 */
	EVENTS(b, 1, 1, 0x00, 0xec, 0x0e);                          /* A @1900 */
	EVENTS(b, 0, 1, 0x00, 0xe8, 0x07);                          /* A @1015 */
}

START_TEST(test_partial_duration_is_last_event)
{
	killed_after_last_clock(&file);
	analyze_ok(HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL);
	ck_assert_uint_eq(a.last_tick, 1900);
	ck_assert_double_eq(hp_analysis_duration_ns(&a), 1900.0);
	hp_analysis_free(&a);
	ck_assert_int_eq(hp_summarize(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.partial, 1);
	ck_assert_uint_eq(a.last_tick, 1900);
	ck_assert_uint_eq(a.events, 4);
	ck_assert_double_eq(hp_analysis_duration_ns(&a), 1900.0);
	/* complete: from CLOCK to CLOCK, whatever the events */
	restart();
	killed_after_last_clock(&file);
	tk_clock_rec(&file, 2500, 2500);
	tk_end_rec(&file, 4, 0, 2);
	analyze_ok(0, NULL, NULL);
	ck_assert_double_eq(hp_analysis_duration_ns(&a), 2500.0);
}
END_TEST

static void count_progress(void *arg, uint64_t done, uint64_t total)
{
	uint64_t *seen = arg;
	ck_assert_uint_le(done, total);
	ck_assert_uint_ge(done, seen[1]);
	seen[0]++;
	seen[1] = done;
}

START_TEST(test_summary_counts_without_decoding)
{
	/* event bytes no decoder accepts: their records' counts are enough */
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 100, "main");
	tk_thread_rec(&file, 1, 101, "worker");
	EVENTS(&file, 0, 7, 0xff, 0xff, 0xff);
	EVENTS(&file, 1, 5, 0x45);
	EVENTS(&file, 0, 3, 0x01);
	tk_clock_rec(&file, 100, 100);
	tk_end_rec(&file, 15, 0, 2);
	tk_save(path, &file);
	uint64_t seen[2] = { 0, 0 };
	ck_assert_int_eq(hp_summarize(path, 0, count_progress, seen, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.events, 15);
	ck_assert_uint_eq(a.info.streams[0].events, 10);
	ck_assert_uint_eq(a.info.streams[1].events, 5);
	ck_assert_int_eq(a.decoded, 0);
	ck_assert_int_eq(a.partial, 0);
	ck_assert_uint_eq(seen[1], file.n);
	ck_assert_uint_ge(seen[0], 8);
	/* the full pass decodes them, and refuses */
	analyze_fails(0, "corrupt event data");
}
END_TEST

START_TEST(test_analyze_tells_progress)
{
	interleaved(&file);
	tk_save(path, &file);
	uint64_t seen[2] = { 0, 0 };
	ck_assert_int_eq(hp_analyze_progress(path, 0, NULL, NULL, count_progress, seen, &a, err,
					     sizeof(err)), 0);
	ck_assert_uint_eq(a.events, 8);
	ck_assert_uint_eq(seen[1], file.n); /* to the end record's end */
	ck_assert_uint_ge(seen[0], 9);
}
END_TEST

START_TEST(test_summary_checks_end)
{
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x00, 0x0a, 0x85);
	tk_end_rec(&file, 3, 0, 1);
	tk_save(path, &file);
	ck_assert_int_eq(hp_summarize(path, 0, NULL, NULL, &a, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "corrupt trace: 2 events counted where 3 were written"));
	/* without END: refused unless partial */
	restart();
	killed_after_last_clock(&file);
	tk_save(path, &file);
	ck_assert_int_eq(hp_summarize(path, 0, NULL, NULL, &a, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "incomplete trace: no end record"));
	/* a partial trace's ticks are scanned: bad event bytes are refused */
	restart();
	killed_after_last_clock(&file);
	EVENTS(&file, 1, 1, 0x45);
	tk_save(path, &file);
	ck_assert_int_eq(hp_summarize(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "corrupt events record (stream 1)"));
}
END_TEST

START_TEST(test_process_tail_read_when_present)
{
	/* the buffer and the clock's step after argv (older traces: none) */
	tk_header(&file);
	size_t at = tk_rec_begin(&file, HP_REC_PROCESS);
	tk_put32(&file, 4321);
	tk_put32(&file, HP_CLOCK_TSC);
	tk_put64(&file, 1);
	tk_put32(&file, 0);
	tk_put32(&file, 1);
	tk_putstr(&file, "/bin/prog");
	tk_putstr(&file, "prog");
	tk_put64(&file, 8u << 20);
	tk_put32(&file, 21);
	tk_put32(&file, 0);
	tk_put32(&file, 99); /* what a later tail may add is skipped */
	tk_rec_end(&file, at);
	tk_clock_rec(&file, 0, 0);
	tk_clock_rec(&file, 3000, 1000);
	tk_end_rec(&file, 0, 0, 0);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.info.buffer_bytes, 8u << 20);
	ck_assert_uint_eq(a.info.clock_step, 21);
	ck_assert_str_eq(a.info.argv[0], "prog");
	restart();
	tk_header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	tk_clock_rec(&file, 0, 0);
	tk_end_rec(&file, 0, 0, 0);
	analyze_ok(0, NULL, NULL);
	ck_assert_uint_eq(a.info.buffer_bytes, 0);
	ck_assert_uint_eq(a.info.clock_step, 0);
}
END_TEST

static Suite *analyze_suite(void)
{
	Suite *s = suite_create("analyze");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_streams_interleaved);
	tcase_add_test(core, test_recursion_once_in_ns);
	tcase_add_test(core, test_open_frames_closed_at_stream_last_tick);
	tcase_add_test(core, test_reset_drops_only_its_stream);
	tcase_add_test(core, test_event_counts);
	tcase_add_test(core, test_missing_end);
	tcase_add_test(core, test_unknown_records_skipped);
	tcase_add_test(core, test_lost_summed);
	tcase_add_test(core, test_modules_parsed);
	tcase_add_test(core, test_address_reused_after_dlclose);
	tcase_add_test(core, test_untimed_modules_one_function_per_address);
	tcase_add_test(core, test_callback_per_record);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 20);
	tcase_add_test(limits, test_callback_failure_stops);
	tcase_add_test(limits, test_big_record_in_pieces);
	tcase_add_test(limits, test_events_of_no_stream);
	tcase_add_test(limits, test_orphan_exit_is_the_last_tick);
	tcase_add_test(limits, test_events_not_kept);
	tcase_add_test(limits, test_partial_duration_is_last_event);
	tcase_add_test(limits, test_summary_counts_without_decoding);
	tcase_add_test(limits, test_summary_checks_end);
	tcase_add_test(limits, test_analyze_tells_progress);
	tcase_add_test(limits, test_process_tail_read_when_present);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(analyze_suite(), top, sizeof(top), "check_analyze");
}
