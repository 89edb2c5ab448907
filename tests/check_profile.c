/*
 * check_profile.c - the flat profile from hand-made normalised events:
 * calls, inclusive (outermost only), self, min and max, per stream.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#include "../symbolize/hp_profile.h"

#define EN(f, t) { (uint64_t)(t), (uint32_t)(f), HP_EV_ENTER, 0 }
#define EX(f, t) { (uint64_t)(t), (uint32_t)(f), HP_EV_EXIT, 0 }
#define RESET { 0, 0, HP_EV_RESET, 0 }
#define N(ev) (sizeof(ev) / sizeof((ev)[0]))

enum { A, B, C, D, E, NF };

static struct hp_profile prof;

static void setup(void)
{
	ck_assert_int_eq(hp_profile_init(&prof), 0);
}

static void teardown(void)
{
	hp_profile_free(&prof);
}

static void feed(uint32_t stream, const struct hp_ev *ev, size_t n)
{
	ck_assert_int_eq(hp_profile_feed(&prof, stream, ev, n, NF), 0);
}

static void assert_stat(uint32_t f, uint64_t calls, uint64_t total, uint64_t self, uint64_t min,
			uint64_t max)
{
	ck_assert_uint_lt(f, prof.nf);
	const struct hp_fstat *s = &prof.f[f];
	ck_assert_msg(s->calls == calls && s->total == total && s->self == self,
		      "function %u: calls %llu total %llu self %llu, want %llu %llu %llu", f,
		      (unsigned long long)s->calls, (unsigned long long)s->total,
		      (unsigned long long)s->self, (unsigned long long)calls,
		      (unsigned long long)total, (unsigned long long)self);
	if (calls) {
		ck_assert_uint_eq(s->min, min);
		ck_assert_uint_eq(s->max, max);
	}
}

/* ---------------------------------------------------------------- core */

START_TEST(test_nested)
{
	static const struct hp_ev ev[] = { EN(A, 0),  EN(B, 10), EN(C, 20), EX(C, 50),
					   EX(B, 70), EN(B, 75), EX(B, 80), EX(A, 100) };
	feed(0, ev, N(ev));
	hp_profile_finish(&prof);
	assert_stat(A, 1, 100, 35, 100, 100);
	assert_stat(B, 2, 65, 35, 5, 60);
	assert_stat(C, 1, 30, 30, 30, 30);
	assert_stat(D, 0, 0, 0, 0, 0);
	ck_assert_uint_eq(prof.streams[0].events, 8);
	ck_assert_uint_eq(prof.streams[0].depth, 0);
}
END_TEST

START_TEST(test_nested_across_records)
{
	/* the same events in four records give the same profile */
	static const struct hp_ev ev[] = { EN(A, 0),  EN(B, 10), EN(C, 20), EX(C, 50),
					   EX(B, 70), EN(B, 75), EX(B, 80), EX(A, 100) };
	feed(0, ev, 3);
	feed(0, ev + 3, 1);
	feed(0, ev + 4, 0);
	feed(0, ev + 4, 4);
	assert_stat(A, 1, 100, 35, 100, 100);
	assert_stat(B, 2, 65, 35, 5, 60);
	assert_stat(C, 1, 30, 30, 30, 30);
}
END_TEST

START_TEST(test_recursion)
{
	static const struct hp_ev ev[] = { EN(A, 0), EN(A, 10), EN(A, 20), EX(A, 30), EX(A, 60),
					   EX(A, 100) };
	feed(0, ev, N(ev));
	/* total: the outermost call only; self: 10 + 40 + 50 */
	assert_stat(A, 3, 100, 100, 10, 100);
}
END_TEST

START_TEST(test_recursion_through_other)
{
	static const struct hp_ev ev[] = { EN(A, 0), EN(B, 10), EN(A, 20), EX(A, 30), EX(B, 40),
					   EX(A, 100), EN(A, 200), EX(A, 205) };
	feed(0, ev, N(ev));
	/* a: outer 0-100 (self 70), inner 20-30 (self 10), later 200-205 */
	assert_stat(A, 3, 105, 85, 5, 100);
	assert_stat(B, 1, 30, 20, 30, 30);
}
END_TEST

START_TEST(test_two_streams_interleaved)
{
	static const struct hp_ev s0a[] = { EN(A, 0), EN(B, 10) };
	static const struct hp_ev s1a[] = { EN(A, 5), EN(A, 6), EX(A, 7) };
	static const struct hp_ev s0b[] = { EN(A, 20), EX(A, 30), EX(B, 40), EX(A, 100) };
	static const struct hp_ev s1b[] = { EX(A, 55) };
	feed(0, s0a, N(s0a));
	feed(1, s1a, N(s1a));
	feed(0, s0b, N(s0b));
	feed(1, s1b, N(s1b));
	/* outermost per stream: 0-100 in stream 0 and 5-55 in stream 1 */
	assert_stat(A, 4, 150, 130, 1, 100);
	assert_stat(B, 1, 30, 20, 30, 30);
	ck_assert_uint_eq(prof.streams[0].events, 6);
	ck_assert_uint_eq(prof.streams[1].events, 4);
}
END_TEST

START_TEST(test_streams_do_not_share_frames)
{
	/* a function open in stream 3 while stream 7 calls it: both outermost */
	static const struct hp_ev s3a[] = { EN(C, 1000) };
	static const struct hp_ev s7[] = { EN(C, 1), EX(C, 2), EN(C, 3), EX(C, 5) };
	static const struct hp_ev s3b[] = { EX(C, 1100) };
	feed(3, s3a, N(s3a));
	feed(7, s7, N(s7));
	feed(3, s3b, N(s3b));
	assert_stat(C, 3, 103, 103, 1, 100);
}
END_TEST

#define CT(kind, t) { (uint64_t)(t), 0, kind, 0 }

START_TEST(test_pause_cut_from_open_frames)
{
	/* a calls b; b pauses 300 ticks; a second pause nests in a stop */
	static const struct hp_ev ev[] = {
		EN(A, 0), EN(B, 10), CT(HP_EV_PAUSE, 20), CT(HP_EV_RESUME, 320), EX(B, 330),
		CT(HP_EV_STOP, 340), CT(HP_EV_PAUSE, 350), CT(HP_EV_START, 400),
		CT(HP_EV_RESUME, 1340), EX(A, 1350),
	};
	feed(0, ev, N(ev));
	hp_profile_finish(&prof);
	/* b: 20 of its 320 ticks; a: 1350 less 300 and the 1000 stopped or paused */
	assert_stat(B, 1, 20, 20, 20, 20);
	assert_stat(A, 1, 50, 30, 50, 50);
}
END_TEST

START_TEST(test_own_time_cut_from_open_frames)
{
	/* a calls b; a chunk switch after b's enter takes 100 ticks, another
	 * inside a pause is cut once; c starts right after a switch */
	static const struct hp_ev ev[] = {
		EN(A, 0), EN(B, 10), CT(HP_EV_OWN, 110), EX(B, 120),
		CT(HP_EV_PAUSE, 130), CT(HP_EV_OWN, 200), CT(HP_EV_RESUME, 230),
		EN(C, 240), CT(HP_EV_OWN, 1240), EX(C, 1250), EX(A, 1260),
	};
	feed(0, ev, N(ev));
	hp_profile_finish(&prof);
	assert_stat(B, 1, 10, 10, 10, 10);
	assert_stat(C, 1, 10, 10, 10, 10);
	/* a: 1260 less 100 + 100 paused + 1000 of c's switch */
	assert_stat(A, 1, 60, 40, 60, 60);
	/* hookprof's time is no event */
	ck_assert_uint_eq(prof.streams[0].events, 6);
}
END_TEST

START_TEST(test_marks_and_values_are_no_frames)
{
	static const struct hp_ev ev[] = {
		EN(A, 0), CT(HP_EV_MARK, 5), { 6, 0, HP_EV_VALUE, -3 }, EX(A, 10),
	};
	feed(0, ev, N(ev));
	hp_profile_finish(&prof);
	assert_stat(A, 1, 10, 10, 10, 10);
}
END_TEST

START_TEST(test_stream_ends_paused)
{
	/* the frames open at the end close where the pause began */
	static const struct hp_ev ev[] = { EN(A, 0), CT(HP_EV_PAUSE, 40) };
	feed(0, ev, N(ev));
	hp_profile_reached(&prof, 0, 5000);
	hp_profile_finish(&prof);
	assert_stat(A, 1, 40, 40, 40, 40);
}
END_TEST

/* A caller that keeps its own profile (the driver) still needs the
 * stream's last tick, on its timeline: pauses cut out, hookprof's own time
 * not (the functions open at a crash come from the decoder's stack). */
START_TEST(test_touch_keeps_last_tick)
{
	static const struct hp_ev ev1[] = {
		EN(A, 0), EN(B, 10), EX(B, 20), EN(C, 30), CT(HP_EV_OWN, 130),
		CT(HP_EV_PAUSE, 140), CT(HP_EV_RESUME, 340), EN(D, 350),
	};
	static const struct hp_ev ev2[] = { EX(D, 360), EN(E, 370), CT(HP_EV_MARK, 380) };
	ck_assert_int_eq(hp_profile_touch(&prof, 0, ev1, N(ev1)), 0);
	ck_assert_int_eq(hp_profile_touch(&prof, 0, ev2, N(ev2)), 0);
	const struct hp_pstream *s = &prof.streams[0];
	ck_assert_uint_eq(s->depth, 0); /* no frames kept */
	/* the mark at 380, less the 200 paused */
	ck_assert_uint_eq(s->last_tick, 180);
	ck_assert_uint_eq(s->events, 11 - 1);
	/* no times: finish closes nothing into the (absent) stats */
	hp_profile_finish(&prof);
	ck_assert_uint_eq(s->depth, 0);
	ck_assert_uint_eq(prof.nf, 0);
}
END_TEST

/* A piece that says it holds calls and hookprof's own time only is touched
 * as each of its events would be: its newest call's tick, its events. */
START_TEST(test_touch_piece_as_each_event)
{
	struct hp_ev ev[] = { EN(A, 0), CT(HP_EV_OWN, 100), EN(B, 110), EX(B, 120),
			      CT(HP_EV_OWN, 200) };
	struct hp_evbuf calls = { .ev = ev, .n = N(ev), .own = 2 };
	ck_assert_int_eq(hp_profile_touch_piece(&prof, 0, &calls), 0);
	ck_assert_int_eq(hp_profile_touch(&prof, 1, ev, N(ev)), 0);
	/* and one with a pause, which takes the look at each */
	struct hp_ev paused[] = { EN(C, 300), CT(HP_EV_PAUSE, 310), CT(HP_EV_RESUME, 400),
				  EX(C, 410), CT(HP_EV_OWN, 420) };
	struct hp_evbuf ctl = { .ev = paused, .n = N(paused), .own = 1, .controls = 2 };
	ck_assert_int_eq(hp_profile_touch_piece(&prof, 0, &ctl), 0);
	ck_assert_int_eq(hp_profile_touch(&prof, 1, paused, N(paused)), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(prof.streams[i].last_tick, 410 - 90);
		ck_assert_uint_eq(prof.streams[i].events, 3 + 4);
	}
}
END_TEST

START_TEST(test_touch_reset_and_stream_ends_paused)
{
	static const struct hp_ev ev[] = { EN(A, 0), EN(B, 5), RESET, EN(C, 50), EX(C, 60),
					   CT(HP_EV_PAUSE, 70) };
	ck_assert_int_eq(hp_profile_touch(&prof, 1, ev, N(ev)), 0);
	const struct hp_pstream *s = &prof.streams[1];
	ck_assert_uint_eq(s->depth, 0);
	ck_assert_uint_eq(s->last_tick, 60);
	hp_profile_reached(&prof, 1, 5000);
	ck_assert_uint_eq(s->last_tick, 70); /* frames open would end where the pause began */
}
END_TEST

START_TEST(test_reset_drops_open_frames)
{
	static const struct hp_ev ev[] = { EN(A, 0),     EN(B, 10),    RESET,
					   EN(C, 1000),  EX(C, 1010),  EN(A, 2000),
					   EN(A, 2010),  EX(A, 2020),  EX(A, 2100) };
	feed(0, ev, N(ev));
	/* the frames of a and b before the gap are gone; a after it is outermost */
	assert_stat(A, 2, 100, 100, 10, 100);
	assert_stat(B, 0, 0, 0, 0, 0);
	assert_stat(C, 1, 10, 10, 10, 10);
	/* a reset is not an event */
	ck_assert_uint_eq(prof.streams[0].events, 8);
	hp_profile_finish(&prof);
	assert_stat(A, 2, 100, 100, 10, 100);
	assert_stat(B, 0, 0, 0, 0, 0);
}
END_TEST

START_TEST(test_reset_of_other_stream)
{
	static const struct hp_ev s0a[] = { EN(A, 0) };
	static const struct hp_ev s1[] = { EN(A, 5), RESET };
	static const struct hp_ev s0b[] = { EN(A, 10), EX(A, 20), EX(A, 30) };
	feed(0, s0a, N(s0a));
	feed(1, s1, N(s1));
	feed(0, s0b, N(s0b));
	assert_stat(A, 2, 30, 30, 10, 30);
	hp_profile_finish(&prof);
	assert_stat(A, 2, 30, 30, 10, 30);
}
END_TEST

START_TEST(test_finish_closes_open_frames)
{
	static const struct hp_ev s0[] = { EN(A, 0), EN(B, 10), EX(B, 30) };
	static const struct hp_ev s1a[] = { EN(C, 100), EN(D, 150), EN(E, 170) };
	static const struct hp_ev s1b[] = { EX(E, 200) };
	feed(0, s0, N(s0));
	feed(1, s1a, N(s1a));
	feed(1, s1b, N(s1b));
	assert_stat(A, 0, 0, 0, 0, 0);
	assert_stat(C, 0, 0, 0, 0, 0);
	hp_profile_finish(&prof);
	/* each stream's frames close at that stream's last tick */
	assert_stat(A, 1, 30, 10, 30, 30);
	assert_stat(B, 1, 20, 20, 20, 20);
	assert_stat(C, 1, 100, 50, 100, 100);
	assert_stat(D, 1, 50, 20, 50, 50);
	assert_stat(E, 1, 30, 30, 30, 30);
	ck_assert_uint_eq(prof.streams[0].depth, 0);
	ck_assert_uint_eq(prof.streams[1].depth, 0);
	/* a second finish changes nothing */
	hp_profile_finish(&prof);
	assert_stat(C, 1, 100, 50, 100, 100);
}
END_TEST

START_TEST(test_finish_recursive_open)
{
	static const struct hp_ev ev[] = { EN(A, 0), EN(A, 40), EN(B, 50), EX(B, 60) };
	feed(0, ev, N(ev));
	hp_profile_finish(&prof);
	assert_stat(A, 2, 60, 50, 20, 60);
	assert_stat(B, 1, 10, 10, 10, 10);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_empty)
{
	feed(0, NULL, 0);
	hp_profile_finish(&prof);
	assert_stat(A, 0, 0, 0, 0, 0);
	ck_assert_uint_eq(prof.f[A].min, UINT64_MAX);
}
END_TEST

START_TEST(test_ticks_backwards)
{
	/* a clock that steps back never gives negative (huge) times */
	static const struct hp_ev ev[] = { EN(A, 100), EX(A, 50), EN(A, 0), EN(B, 10), EX(B, 100),
					   EX(A, 50) };
	feed(0, ev, N(ev));
	assert_stat(A, 2, 50, 0, 0, 50);
	assert_stat(B, 1, 90, 90, 90, 90);
}
END_TEST

START_TEST(test_functions_grow)
{
	/* the dictionary grows between records */
	enum { MANY = 5000 };
	struct hp_ev *ev = calloc(2 * MANY, sizeof(*ev));
	for (uint32_t i = 0; i < MANY; i++) {
		ev[2 * i] = (struct hp_ev)EN(i, 10 * i);
		ev[2 * i + 1] = (struct hp_ev)EX(i, 10 * i + i % 7);
	}
	ck_assert_int_eq(hp_profile_feed(&prof, 0, ev, 2, 1), 0);
	ck_assert_int_eq(hp_profile_feed(&prof, 0, ev + 2, 2 * MANY - 2, MANY), 0);
	ck_assert_uint_ge(prof.nf, MANY);
	for (uint32_t i = 0; i < MANY; i++)
		assert_stat(i, 1, i % 7, i % 7, i % 7, i % 7);
	free(ev);
}
END_TEST

START_TEST(test_deep_recursion)
{
	enum { DEPTH = 100000 };
	struct hp_ev *ev = calloc(2 * DEPTH, sizeof(*ev));
	for (uint32_t i = 0; i < DEPTH; i++) {
		ev[i] = (struct hp_ev)EN(A, i);
		ev[2 * DEPTH - 1 - i] = (struct hp_ev)EX(A, 2 * DEPTH - i);
	}
	feed(0, ev, 2 * DEPTH);
	/* frame i lasts 2*DEPTH - 2*i: every frame, the innermost too, has self 2 */
	assert_stat(A, DEPTH, 2 * DEPTH, 2 * DEPTH, 2, 2 * DEPTH);
	free(ev);
}
END_TEST

START_TEST(test_many_streams)
{
	static const struct hp_ev open_a[] = { EN(A, 0) };
	static const struct hp_ev close_a[] = { EX(A, 10) };
	for (uint32_t s = 0; s < 300; s += 3)
		feed(s, open_a, 1);
	for (uint32_t s = 0; s < 300; s += 3)
		feed(s, close_a, 1);
	assert_stat(A, 100, 1000, 1000, 10, 10);
	feed(100000, open_a, 1);
	hp_profile_finish(&prof);
	assert_stat(A, 101, 1000, 1000, 0, 10);
}
END_TEST

START_TEST(test_stream_switches_deep)
{
	/* a stack 300000 deep in stream 0, then a million records of no events
	 * alternating with stream 1: a change of stream costs nothing (it
	 * cost the depth of the stacks, here for minutes: the Check timeout
	 * fails it), and the counts stay per stream */
	enum { DEPTH = 300000, SWITCHES = 1000000 };
	struct hp_ev *ev = calloc(DEPTH, sizeof(*ev));
	for (uint32_t i = 0; i < DEPTH; i++)
		ev[i] = (struct hp_ev)EN(A, i);
	feed(0, ev, DEPTH);
	for (uint32_t i = 0; i < SWITCHES; i++)
		feed(i & 1, ev, 0);
	static const struct hp_ev b_in_1[] = { EN(A, 5), EX(A, 7) };
	feed(1, b_in_1, N(b_in_1)); /* outermost in stream 1: its total counts */
	hp_profile_finish(&prof);
	/* stream 0's frames close at its last tick DEPTH - 1: only the
	 * outermost's DEPTH - 1 goes to the total */
	ck_assert_uint_eq(prof.f[A].calls, DEPTH + 1);
	ck_assert_uint_eq(prof.f[A].total, DEPTH - 1 + 2);
	free(ev);
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_nested);
	tcase_add_test(core, test_pause_cut_from_open_frames);
	tcase_add_test(core, test_own_time_cut_from_open_frames);
	tcase_add_test(core, test_marks_and_values_are_no_frames);
	tcase_add_test(core, test_stream_ends_paused);
	tcase_add_test(core, test_nested_across_records);
	tcase_add_test(core, test_recursion);
	tcase_add_test(core, test_recursion_through_other);
	tcase_add_test(core, test_two_streams_interleaved);
	tcase_add_test(core, test_streams_do_not_share_frames);
	tcase_add_test(core, test_reset_drops_open_frames);
	tcase_add_test(core, test_reset_of_other_stream);
	tcase_add_test(core, test_finish_closes_open_frames);
	tcase_add_test(core, test_finish_recursive_open);
	tcase_add_test(core, test_touch_keeps_last_tick);
	tcase_add_test(core, test_touch_piece_as_each_event);
	tcase_add_test(core, test_touch_reset_and_stream_ends_paused);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_empty);
	tcase_add_test(limits, test_ticks_backwards);
	tcase_add_test(limits, test_functions_grow);
	tcase_add_test(limits, test_deep_recursion);
	tcase_add_test(limits, test_many_streams);
	tcase_add_test(limits, test_stream_switches_deep);
	tcase_set_timeout(limits, 20);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(profile_suite());
}
