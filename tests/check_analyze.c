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
#include <ftw.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"

#include "../symbolize/hp_analyze.h"

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
static void put32(struct bb *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		put8(b, (uint8_t)(v >> 8 * i));
}
static void put64(struct bb *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		put8(b, (uint8_t)(v >> 8 * i));
}
static void putstr(struct bb *b, const char *s)
{
	put32(b, (uint32_t)strlen(s));
	put(b, s, strlen(s));
}

static void header(struct bb *b)
{
	put(b, "HOOKPROF", 8);
	put8(b, 1), put8(b, 0); /* major */
	put8(b, 0), put8(b, 0); /* minor */
	put32(b, 0x01020304);
	put32(b, 32);
	for (int i = 0; i < 12; i++)
		put8(b, 0);
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
	uint32_t size = (uint32_t)(b->n - at - 4);
	for (int i = 0; i < 4; i++)
		b->p[at + (size_t)i] = (uint8_t)(size >> 8 * i);
}

static void process_rec(struct bb *b, uint32_t clock)
{
	size_t r = rec(b, HP_REC_PROCESS);
	put32(b, 4321);
	put32(b, clock);
	put64(b, 1700000000000000000ull);
	put32(b, 0);
	put32(b, 1);
	putstr(b, "/bin/prog");
	putstr(b, "prog");
	rec_end(b, r);
}

static void clock_rec(struct bb *b, uint64_t tick, uint64_t ns)
{
	size_t r = rec(b, HP_REC_CLOCK);
	put64(b, tick);
	put64(b, ns);
	rec_end(b, r);
}

static void thread_rec(struct bb *b, uint32_t stream, uint32_t tid, const char *name)
{
	size_t r = rec(b, HP_REC_THREAD);
	put32(b, stream);
	put32(b, tid);
	putstr(b, name);
	rec_end(b, r);
}

static void lost_rec(struct bb *b, uint32_t stream, uint32_t reason, uint64_t count)
{
	size_t r = rec(b, HP_REC_LOST);
	put32(b, stream);
	put32(b, reason);
	put64(b, count);
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

/* An EVENTS record of `stream` claiming `count` events, data spelt out. */
#define EVENTS(b, stream, count, ...)                                    \
	do {                                                             \
		static const uint8_t d_[] = { __VA_ARGS__ };             \
		events_rec(b, stream, count, d_, sizeof(d_));            \
	} while (0)

/* ------------------------------------------------------- fixture */

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct bb file;
static struct hp_analysis a;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/test.XXXXXX", top);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&file, 0, sizeof(file));
	memset(&a, 0, sizeof(a));
	err[0] = 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void teardown(void)
{
	hp_analysis_free(&a);
	free(file.p);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void save(void)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(file.p, 1, file.n, f), file.n);
	fclose(f);
}

/* Starts the file over. */
static void restart(void)
{
	file.n = 0;
	hp_analysis_free(&a);
}

static void analyze_ok(int flags, hp_event_fn fn, void *arg)
{
	save();
	hp_analysis_free(&a);
	int rc = hp_analyze(path, flags, fn, arg, &a, err, sizeof(err));
	ck_assert_msg(rc == 0, "hp_analyze: %s", err);
}

/* Refused with one line that names the file and says `why`. */
static void analyze_fails(int flags, const char *why)
{
	save();
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
static void interleaved(struct bb *b)
{
	header(b);
	process_rec(b, HP_CLOCK_MONOTONIC);
	clock_rec(b, 0, 0);
	thread_rec(b, 0, 100, "main");
	thread_rec(b, 1, 101, "worker");
	EVENTS(b, 0, 1, 0x43, 0x10, 0x00, 0x0a);                    /* A @10 */
	EVENTS(b, 1, 2, 0x43, 0x20, 0x01, 0xe8, 0x07, 0x00, 0x05);  /* B @1000, A @1005 */
	EVENTS(b, 0, 3, 0x01, 0x0a, 0x85, 0x8f);                    /* B @20-25, A ends @40 */
	EVENTS(b, 1, 2, 0x85, 0xda);                                /* A ends @1010, B @1100 */
	end_rec(b, 8, 0, 2);
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
	header(&file);
	process_rec(&file, HP_CLOCK_TSC);
	clock_rec(&file, 1000, 0);
	EVENTS(&file, 0, 4, 0x43, 0x10, 0x43, 0x20, 0x00, 0x64, 0x00, 0x0a, 0x01, 0x14, 0x00, 0x1e);
	EVENTS(&file, 0, 4, 0x8a, 0x9e, 0x9e, 0x40, 0x8c, 0x01);
	clock_rec(&file, 3000, 1000);
	end_rec(&file, 8, 0, 1);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 3, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a, 0x40, 0x3c); /* A @10, B @20-50 */
	EVENTS(&file, 1, 2, 0x01, 0xe8, 0x07, 0x00, 0xac, 0x02);                        /* B @1000, A @1300 */
	end_rec(&file, 5, 0, 2);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a); /* A @10, B @20 */
	EVENTS(&file, 1, 1, 0x00, 0x64);                                     /* A @100 */
	EVENTS(&file, 0, 2, 0x44, 0x00, 0x05, 0x83);                          /* A @5-8 */
	EVENTS(&file, 1, 1, 0xb2);                                           /* A ends @150 */
	end_rec(&file, 6, 0, 2);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	static const uint8_t d[] = { 0x43, 0x10, 0x43, 0x20, 0x00, 0x01, 0x41, 0x01, 0x02,
				     0x44, 0x00, 0x05, 0x80 };
	events_rec(&file, 0, count, d, sizeof(d));
	end_rec(&file, end_events, 0, 1);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 3, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x85, 0x00, 0x05); /* A @10-15, A @20 */
	EVENTS(&file, 1, 2, 0x00, 0x64, 0x01, 0x32);                               /* A @100, B @150 */
	lost_rec(&file, 1, HP_LOST_RING, 9);
	analyze_fails(0, "incomplete trace: no end record");
	analyze_ok(HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL);
	ck_assert_int_eq(a.partial, 1);
	ck_assert_int_eq(a.info.has_end, 0);
	ck_assert_uint_eq(a.events, 5);
	ck_assert_uint_eq(a.info.streams[1].lost, 9);
	assert_stat(0, FA, 3, 5 + 0 + 50, 5 + 0 + 50, 0, 50);
	assert_stat(1, FB, 1, 0, 0, 0, 0);
	/* with END the same events are complete */
	end_rec(&file, 5, 9, 2);
	analyze_ok(0, NULL, NULL);
	ck_assert_int_eq(a.partial, 0);
}
END_TEST

START_TEST(test_unknown_records_skipped)
{
	/* records of types this reader does not know, between the enter and
	 * exit of A, whose payloads would read as events or an END */
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a); /* A @10 */
	size_t r = rec(&file, 8);
	put8(&file, 0x80), put8(&file, 0x80), put8(&file, 0x80);
	rec_end(&file, r);
	r = rec(&file, 0xffffffffu);
	put32(&file, 0), put32(&file, 1), put8(&file, 0x85);
	rec_end(&file, r);
	r = rec(&file, 0x100 | HP_REC_END);
	put64(&file, 99), put64(&file, 0), put32(&file, 1), put32(&file, 0);
	rec_end(&file, r);
	r = rec(&file, 0);
	rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x87); /* A ends @17 */
	end_rec(&file, 2, 0, 1);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	lost_rec(&file, 0, HP_LOST_RING, 10);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a);
	lost_rec(&file, 1, HP_LOST_REENTRY, 3);
	lost_rec(&file, HP_STREAM_NONE, HP_LOST_LATE, 7);
	EVENTS(&file, 1, 1, 0x00, 0x05);
	lost_rec(&file, 0, HP_LOST_LATE, 2);
	lost_rec(&file, HP_STREAM_NONE, HP_LOST_NO_BUFFER, 1);
	lost_rec(&file, 5, HP_LOST_NO_BUFFER, 100);
	lost_rec(&file, 1, HP_LOST_RING, 4);
	EVENTS(&file, 0, 1, 0x81);
	EVENTS(&file, 1, 1, 0x81);
	end_rec(&file, 4, 127, 2);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	size_t r = rec(&file, HP_REC_MODULES);
	put32(&file, 1);
	put64(&file, 0x555555554000ull);
	putstr(&file, "/bin/prog");
	put32(&file, 3), put8(&file, 0xab), put8(&file, 0xcd), put8(&file, 0xef);
	put32(&file, 2);
	put64(&file, 0x555555555000ull), put64(&file, 0x800), put64(&file, 0x1000);
	put32(&file, 5), put32(&file, 0);
	put64(&file, 0x555555557000ull), put64(&file, 0x200), put64(&file, 0x3000);
	put32(&file, 6), put32(&file, 0);
	rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x43, 0x10, 0x00, 0x0a);
	r = rec(&file, HP_REC_MODULES);
	put32(&file, 1);
	put64(&file, 0x7f0000000000ull);
	putstr(&file, "/lib/libx.so");
	put32(&file, 0);
	put32(&file, 1);
	put64(&file, 0x7f0000001000ull), put64(&file, 0x400), put64(&file, 0x1000);
	put32(&file, 5), put32(&file, 0);
	rec_end(&file, r);
	EVENTS(&file, 0, 1, 0x81);
	end_rec(&file, 2, 0, 1);
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

/* ---------------------------------------------------------------- limits */

START_TEST(test_callback_failure_stops)
{
	struct seen s = { .fail_at = 2 };
	interleaved(&file);
	save();
	ck_assert_int_eq(hp_analyze(path, 0, on_events, &s, &a, err, sizeof(err)), -1);
	ck_assert_int_eq(s.calls, 2);
	ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
	ck_assert_ptr_nonnull(strstr(err, "cannot write the output"));
}
END_TEST

START_TEST(test_events_of_no_stream)
{
	/* 0xffffffff names no stream: LOST may use it, EVENTS may not */
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, HP_STREAM_NONE, 1, 0x43, 0x10, 0x00, 0x0a);
	end_rec(&file, 1, 0, 1);
	analyze_fails(HP_ANALYZE_ALLOW_PARTIAL, "corrupt events record (stream 4294967295)");
}
END_TEST

START_TEST(test_orphan_exit_is_the_last_tick)
{
	/* A @10, then an exit of B (never entered) @90 ends the stream. The
	 * exit is an event of this thread at 90 while A was still open, so
	 * A, left open, closes at 90: the stream's last tick. */
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x41, 0x01, 0xa0, 0x01);
	end_rec(&file, 2, 0, 1);
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
	header(&file);
	process_rec(&file, HP_CLOCK_MONOTONIC);
	EVENTS(&file, 0, 2, 0x43, 0x10, 0x00, 0x01, 0x81);
	for (int i = 1; i < records; i++)
		EVENTS(&file, 0, 2, 0x00, 0x01, 0x81);
	end_rec(&file, 2 * (uint64_t)records, 0, 1);
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
	tcase_add_test(core, test_callback_per_record);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 20);
	tcase_add_test(limits, test_callback_failure_stops);
	tcase_add_test(limits, test_events_of_no_stream);
	tcase_add_test(limits, test_orphan_exit_is_the_last_tick);
	tcase_add_test(limits, test_events_not_kept);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(analyze_suite());
	snprintf(top, sizeof(top), "%s/check_analyze.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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
