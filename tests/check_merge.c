/*
 * check_merge.c - hp_merge, the threads of a trace merged by time, on
 * files written by hand: order by tick across records that interleave,
 * a function used by a stream before (in time) the record that defined
 * it, ties in file order, leaf pairs on request, and the same events and
 * function ids as the single pass, over records decoded in many pieces.
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

#include "../symbolize/hp_merge.h"

#define EVENTS(b, stream, count, ...)                                    \
	do {                                                             \
		static const uint8_t d_[] = { __VA_ARGS__ };             \
		tk_events_rec(b, stream, count, d_, sizeof(d_));         \
	} while (0)

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];
static struct tk_bytes file;

/* What a pass saw: stream, kind, tick, function of each event. */
struct seen {
	uint32_t stream[16384], kind[16384], func[16384];
	uint64_t tick[16384];
	size_t n;
	uint32_t ended[4]; /* per stream: the ends said, and after how many events */
	size_t ended_at[4];
};
static struct seen got, want;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(&file, 0, sizeof(file));
	memset(&got, 0, sizeof(got));
	memset(&want, 0, sizeof(want));
	err[0] = 0;
}

static void teardown(void)
{
	free(file.p);
	tk_remove_tree(dir);
}

static void begin(struct tk_bytes *b)
{
	static const char *const argv[] = { "prog" };
	tk_header(b);
	tk_process_rec(b, 4321, HP_CLOCK_MONOTONIC, 1700000000000000000ull, 0, "/bin/prog", 1, argv);
	tk_clock_rec(b, 0, 0);
	tk_thread_rec(b, 0, 100, "main");
	tk_thread_rec(b, 1, 101, "worker");
}

static void note(struct seen *s, uint32_t stream, const struct hp_ev *e)
{
	ck_assert_uint_lt(s->n, 16384);
	s->stream[s->n] = stream;
	s->kind[s->n] = e->kind;
	s->tick[s->n] = e->tick;
	s->func[s->n] = e->func;
	s->n++;
}

static int on_merged(void *arg, uint32_t stream, const struct hp_ev *ev, const struct hp_ev *next)
{
	(void)next;
	struct seen *s = arg;
	if (ev) {
		ck_assert_uint_eq(s->ended[stream], 0);
		note(s, stream, ev);
	} else {
		s->ended[stream]++;
		s->ended_at[stream] = s->n;
	}
	return 0;
}

static int on_record(void *arg, const struct hp_analysis *a, uint32_t stream,
		     const struct hp_ev *ev, size_t n)
{
	(void)a;
	for (size_t i = 0; i < n; i++)
		note(arg, stream, &ev[i]);
	return 0;
}

/* Merges the file; the analysis's function count must not change. */
static void merge_ok(int flags)
{
	struct hp_analysis a;
	struct hp_record_index ix = { 0 };
	tk_save(path, &file);
	int rc = hp_analyze_indexed(path, 0, &a, &ix, err, sizeof(err));
	ck_assert_msg(rc == 0, "hp_analyze_indexed: %s", err);
	uint32_t nfuncs = a.funcs.n;
	rc = hp_merge(path, &a, &ix, flags, on_merged, &got, err, sizeof(err));
	ck_assert_msg(rc == 0, "hp_merge: %s", err);
	ck_assert_uint_eq(a.funcs.n, nfuncs);
	hp_record_index_free(&ix);
	hp_analysis_free(&a);
}

static void expect(size_t i, uint32_t stream, uint32_t kind, uint64_t tick, uint32_t func)
{
	ck_assert_uint_lt(i, got.n);
	ck_assert_msg(got.stream[i] == stream && got.kind[i] == kind && got.tick[i] == tick &&
			      got.func[i] == func,
		      "event %zu: stream %u kind %u tick %llu func %u, want %u %u %llu %u", i,
		      got.stream[i], got.kind[i], (unsigned long long)got.tick[i], got.func[i],
		      stream, kind, (unsigned long long)tick, func);
}

enum { E = HP_EV_ENTER, X = HP_EV_EXIT, A = 0, B = 1 };

/* Stream 0: A @10 { B @20-25 } @40; stream 1: B @12 { A @17-22 } @30.
 * Stream 1's first record defines B, which stream 0 calls at 20: before
 * (in time) stream 1's record defining it is reached, after (in the file). */
static void crossing(struct tk_bytes *b)
{
	begin(b);
	EVENTS(b, 0, 1, 0x43, 0x10, 0x00, 0x0a);             /* A @10 */
	EVENTS(b, 1, 2, 0x43, 0x20, 0x01, 0x0c, 0x00, 0x05); /* B @12, A @17 */
	EVENTS(b, 0, 3, 0x01, 0x0a, 0x85, 0x8f);             /* B @20, exits @25 @40 */
	EVENTS(b, 1, 2, 0x85, 0x88);                         /* exits @22 @30 */
	tk_end_rec(b, 8, 0, 2);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_order_by_tick)
{
	crossing(&file);
	merge_ok(0);
	ck_assert_uint_eq(got.n, 8);
	expect(0, 0, E, 10, A);
	expect(1, 1, E, 12, B);
	expect(2, 1, E, 17, A);
	expect(3, 0, E, 20, B);
	expect(4, 1, X, 22, A);
	expect(5, 0, X, 25, B);
	expect(6, 1, X, 30, B);
	expect(7, 0, X, 40, A);
	/* each stream's end is said once, right after its last event */
	ck_assert_uint_eq(got.ended[0], 1);
	ck_assert_uint_eq(got.ended[1], 1);
	ck_assert_uint_eq(got.ended_at[1], 7);
	ck_assert_uint_eq(got.ended_at[0], 8);
}
END_TEST

START_TEST(test_leaf_pairs)
{
	/* stream 1's A @17-22 and stream 0's B @20-25 are leaves: each exit
	 * comes right after its enter */
	crossing(&file);
	merge_ok(HP_MERGE_LEAF_PAIRS);
	ck_assert_uint_eq(got.n, 8);
	expect(2, 1, E, 17, A);
	expect(3, 1, X, 22, A);
	expect(4, 0, E, 20, B);
	expect(5, 0, X, 25, B);
	expect(6, 1, X, 30, B);
}
END_TEST

START_TEST(test_ties_in_file_order)
{
	/* both streams enter A at 10 and leave at 15: the stream whose record
	 * comes first in the file goes first, at each tie */
	begin(&file);
	EVENTS(&file, 1, 1, 0x43, 0x10, 0x00, 0x0a);
	EVENTS(&file, 0, 2, 0x00, 0x0a, 0x85);
	EVENTS(&file, 1, 1, 0x85);
	tk_end_rec(&file, 4, 0, 2);
	merge_ok(0);
	ck_assert_uint_eq(got.n, 4);
	expect(0, 1, E, 10, A);
	expect(1, 0, E, 10, A);
	expect(2, 0, X, 15, A);
	expect(3, 1, X, 15, A);
}
END_TEST

/* ---------------------------------------------------------------- limits */

/* Two streams, records of 2400 events (decoded in several pieces), each
 * defining new functions as it goes, times interleaved. */
static void many_records(struct tk_bytes *b)
{
	begin(b);
	uint32_t defined = 0;
	uint64_t events = 0;
	for (int r = 0; r < 6; r++) {
		uint32_t stream = (uint32_t)(r & 1);
		struct tk_bytes d = { 0 };
		/* a new function per record, at index `defined` */
		tk_put8(&d, 0x43);
		tk_put8(&d, (uint8_t)(0x10 + defined));
		defined++;
		for (int i = 0; i < 1200; i++) {
			uint8_t f = (uint8_t)(i % defined);
			tk_put8(&d, f);        /* enter f */
			tk_put8(&d, i || r > 1 ? 3 : 1 + stream); /* 3 ticks on */
			tk_put8(&d, 0x82);     /* exit 2 ticks later */
		}
		tk_events_rec(b, stream, 2400, d.p, d.n);
		events += 2400;
		free(d.p);
	}
	tk_end_rec(b, events, 0, 2);
}

START_TEST(test_same_events_and_ids_as_one_pass)
{
	many_records(&file);
	merge_ok(0);
	struct hp_analysis a;
	ck_assert_int_eq(hp_analyze(path, 0, on_record, &want, &a, err, sizeof(err)), 0);
	hp_analysis_free(&a);
	ck_assert_uint_eq(got.n, want.n);
	/* per stream, the same sequence; across streams, ticks never go back */
	for (uint32_t s = 0; s < 2; s++) {
		size_t i = 0, j = 0;
		for (;;) {
			while (i < got.n && got.stream[i] != s)
				i++;
			while (j < want.n && want.stream[j] != s)
				j++;
			if (i == got.n || j == want.n)
				break;
			ck_assert_msg(got.tick[i] == want.tick[j] && got.func[i] == want.func[j] &&
					      got.kind[i] == want.kind[j],
				      "stream %u: event %zu differs from the single pass's %zu", s, i, j);
			i++, j++;
		}
		ck_assert_uint_eq(i, got.n);
		ck_assert_uint_eq(j, want.n);
	}
	for (size_t i = 1; i < got.n; i++)
		ck_assert_uint_ge(got.tick[i], got.tick[i - 1]);
}
END_TEST

static int stop_at_third(void *arg, uint32_t stream, const struct hp_ev *ev,
			 const struct hp_ev *next)
{
	(void)stream, (void)ev, (void)next;
	return ++*(int *)arg == 3 ? -1 : 0;
}

START_TEST(test_callback_stops)
{
	crossing(&file);
	struct hp_analysis a;
	struct hp_record_index ix = { 0 };
	tk_save(path, &file);
	ck_assert_int_eq(hp_analyze_indexed(path, 0, &a, &ix, err, sizeof(err)), 0);
	int calls = 0;
	ck_assert_int_eq(hp_merge(path, &a, &ix, 0, stop_at_third, &calls, err, sizeof(err)), -1);
	ck_assert_int_eq(calls, 3);
	hp_record_index_free(&ix);
	hp_analysis_free(&a);
}
END_TEST

static Suite *merge_suite(void)
{
	Suite *s = suite_create("merge");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_order_by_tick);
	tcase_add_test(core, test_leaf_pairs);
	tcase_add_test(core, test_ties_in_file_order);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_same_events_and_ids_as_one_pass);
	tcase_add_test(limits, test_callback_stops);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(merge_suite(), top, sizeof(top), "check_merge");
}
