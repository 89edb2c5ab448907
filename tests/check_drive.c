/*
 * check_drive.c - the analysis driver on traces written by hand: what a
 * view is handed (enters and exits, depth, self, outermost) with no filter
 * and with each filter, threads, frames left open, several traces, and
 * options that are refused.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdarg.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "testkit.h"

#include "../lib/hp_encode.h"
#include "../symbolize/hp_drive.h"
#include "../symbolize/hp_flat.h"

#define EVENTS(b, stream, count, ...)                                    \
	do {                                                             \
		static const uint8_t d_[] = { __VA_ARGS__ };             \
		tk_events_rec(b, stream, count, d_, sizeof(d_));         \
	} while (0)

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64], path2[PATH_MAX + 64];
static char err[1024];
static struct tk_bytes file;
/* own_time_trace with end_pairs: a calibration at the end too, after the events. */
static uint32_t end_pairs;
static uint64_t end_inside, end_outside;
/* The program's path the PROCESS record gives; a test may set another. */
static const char *exe;

/* ---- a view that writes down what it is handed ------------------------- */

static char log_buf[4096];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	size_t n = strlen(log_buf);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(log_buf + n, sizeof(log_buf) - n, fmt, ap);
	va_end(ap);
}

static const char *name_of(struct hp_view *v, uint32_t fn)
{
	return hp_fntab_name(hp_drive_fns(v->d), fn);
}

static int log_enter(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	say("t%u>%s/%u@%.0f%s ", t->tid, name_of(v, f->fn), f->depth, f->start,
	    f->outermost ? "" : "r");
	return 0;
}

static int log_exit(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	say("t%u<%s/%u=%.0f,%.0f%s%s ", t->tid, name_of(v, f->fn), f->depth, f->dur, f->self,
	    f->leaf ? "" : "+", f->lost ? "!" : "");
	return 0;
}

/* A mark as t100*TEXT/DEPTH@NS, a value as t100#NAME=V/DEPTH@NS. */
static int log_note(struct hp_view *v, struct hp_vthread *t, const struct hp_vnote *n)
{
	(void)v;
	if (n->kind == HP_NOTE_MARK)
		say("t%u*%s/%u@%.0f ", t->tid, n->text, n->depth, n->at);
	else
		say("t%u#%s=%lld/%u@%.0f ", t->tid, n->text, (long long)n->value, n->depth, n->at);
	return 0;
}

static const struct hp_view_ops log_ops = {
	.name = "log", .enter = log_enter, .exit = log_exit, .note = log_note,
};

/* Each thread's program name, at its first outermost call. */
static int log_process(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	(void)v;
	if (!f->depth)
		say("t%u:%s ", t->tid, t->process);
	return 0;
}

static const struct hp_view_ops process_ops = {
	.name = "log", .enter = log_process,
};

static const struct hp_view_ops log_ops_in_time_order = {
	.name = "log", .flags = HP_VIEW_TIME_ORDER,
	.enter = log_enter, .exit = log_exit, .note = log_note,
};

/* Only the outermost frames, and how many frames came, for long streams. */
static unsigned frames_seen;
static int log_root_exit(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	frames_seen++;
	return f->depth ? 0 : log_exit(v, t, f);
}

static struct hp_taken_out taken;
static int keep_taken_out(struct hp_view *v, const struct hp_analysis *a, char *e, size_t n)
{
	(void)a, (void)e, (void)n;
	hp_drive_taken_out(v->d, &taken);
	return 0;
}

static const struct hp_view_ops roots_ops = {
	.name = "log", .exit = log_root_exit, .trace_done = keep_taken_out,
};

static const struct hp_view_ops *log_view = &log_ops;

static const char *warned;
static void warn(const char *line) { warned = line; }

/* Runs the log view over path (and path2 if two) with the filters given as
 * "name=value" strings, NULL-terminated. */
static int drive_with(int ntraces, const char *const *filters)
{
	struct hp_drive_opts o = { .warn = warn };
	for (size_t i = 0; filters && filters[i]; i++) {
		char opt[32];
		const char *eq = strchr(filters[i], '=');
		snprintf(opt, sizeof(opt), "%.*s", (int)(eq - filters[i]), filters[i]);
		ck_assert_msg(!hp_filter_set(&o.filter, opt, eq + 1, err, sizeof(err)), "%s", err);
	}
	struct hp_view_opts vo = { .format = "log" };
	struct hp_view v = { .ops = log_view, .opts = &vo, .out = stdout };
	char *paths[] = { path, path2 };
	log_buf[0] = 0;
	frames_seen = 0;
	warned = NULL;
	int rc = hp_drive(paths, ntraces, &o, &v, err, sizeof(err));
	hp_filter_free(&o.filter);
	return rc;
}

#define DRIVE(...)                                                          \
	do {                                                                \
		static const char *const f_[] = { __VA_ARGS__, NULL };      \
		tk_save(path, &file);                                       \
		ck_assert_msg(drive_with(1, f_) == 0, "hp_drive: %s", err); \
	} while (0)

#define EXPECT(want) ck_assert_str_eq(log_buf, want)

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	snprintf(path2, sizeof(path2), "%s/u.hookprof", dir);
	memset(&file, 0, sizeof(file));
	err[0] = 0;
	log_view = &log_ops;
	end_pairs = 0;
	exe = "/bin/prog";
}

static void teardown(void)
{
	free(file.p);
	tk_remove_tree(dir);
}

static void process_rec(struct tk_bytes *b)
{
	static const char *const argv[] = { "prog" };
	tk_process_rec(b, 4321, HP_CLOCK_MONOTONIC, 1700000000000000000ull, 0, exe, 1, argv);
}

/* A trace's first records: the process, its clock, thread 100 "main" (and
 * 101 "worker" with two threads), and with notes the strings "m0" (id 0)
 * and "v" (id 1). */
static void trace_head(struct tk_bytes *b, int threads, int notes)
{
	tk_header(b);
	process_rec(b);
	tk_clock_rec(b, 0, 0);
	tk_thread_rec(b, 0, 100, "main");
	if (threads > 1)
		tk_thread_rec(b, 1, 101, "worker");
	if (notes) {
		tk_string_rec(b, 0, "m0");
		tk_string_rec(b, 1, "v");
	}
}

/* Thread 100: A @100 { A @110 { B @130 { A @160-170 } @200 } @230 } @300;
 * in ns, the monotonic clock's ticks. A is 0x10, B 0x20. */
static void recursion(struct tk_bytes *b)
{
	trace_head(b, 1, 0);
	EVENTS(b, 0, 4, 0x43, 0x10, 0x43, 0x20, 0x00, 0x64, 0x00, 0x0a, 0x01, 0x14, 0x00, 0x1e);
	EVENTS(b, 0, 4, 0x8a, 0x9e, 0x9e, 0x40, 0x8c, 0x01);
	tk_end_rec(b, 8, 0, 1);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_every_call_unfiltered)
{
	recursion(&file);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100>0x10/1@110r t100>0x20/2@130 t100>0x10/3@160r "
	       "t100<0x10/3=10,10 t100<0x20/2=70,60+ t100<0x10/1=120,50+ t100<0x10/0=200,80+ ");
	ck_assert_ptr_null(warned);
}
END_TEST

/* Threads are named by the program's base name, of a Linux path or of a
 * Windows one (a trace recorded on Windows). */
START_TEST(test_process_named_by_base_name)
{
	static const char *const paths[][2] = {
		{ "/bin/prog", "t100:prog " },
		{ "C:\\dir\\prog.exe", "t100:prog.exe " },
		{ "\\\\?\\D:\\x y\\p.exe", "t100:p.exe " },
		{ "\\\\srv\\share\\q.exe", "t100:q.exe " },
	};
	log_view = &process_ops;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		exe = paths[i][0];
		memset(&file, 0, sizeof(file));
		recursion(&file);
		DRIVE(NULL);
		EXPECT(paths[i][1]);
		free(file.p);
	}
	memset(&file, 0, sizeof(file));
}
END_TEST

/* Thread 100: A @100 { B @110 ... hookprof's own time to @150 ... @160,
 * C @170-180 } @200: the 40 ns leave every duration, not the timeline. */
static void own_time_trace(uint32_t pairs, uint64_t inside, uint64_t outside)
{
	tk_header(&file);
	process_rec(&file);
	if (pairs)
		tk_calibration_rec(&file, HP_CALIBRATION_START, pairs, inside, outside);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 100, "main");
	EVENTS(&file, 0, 6, 0x43, 0x10, 0x43, 0x20, 0x43, 0x30, 0x00, 0x64, 0x01, 0x0a, 0x4e, 0x50,
	       0x8a, 0x02, 0x0a, 0x8a, 0x94);
	if (end_pairs)
		tk_calibration_rec(&file, HP_CALIBRATION_END, end_pairs, end_inside, end_outside);
	tk_end_rec(&file, 6, 0, 1);
}

START_TEST(test_own_time_out_of_durations)
{
	own_time_trace(0, 0, 0);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100>0x20/1@110 t100<0x20/1=10,10 t100>0x30/1@170 "
	       "t100<0x30/1=10,10 t100<0x10/0=60,40+ ");
}
END_TEST

/* The same with a hook pair costing 2 ticks inside its call and 3 in its
 * caller (means of 10 pairs, at the start and at the end): b and c lose
 * 2 each, a loses its own 2 and 5 per call below it. */
START_TEST(test_hook_cost_out_of_durations)
{
	end_pairs = 10, end_inside = 20, end_outside = 30;
	own_time_trace(10, 20, 30);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100>0x20/1@110 t100<0x20/1=8,8 t100>0x30/1@170 "
	       "t100<0x30/1=8,8 t100<0x10/0=48,32+ ");
	/* --raw: as measured, hookprof's own time left in too */
	DRIVE("raw=");
	EXPECT("t100>0x10/0@100 t100>0x20/1@110 t100<0x20/1=50,50 t100>0x30/1@170 "
	       "t100<0x30/1=10,10 t100<0x10/0=100,40+ ");
}
END_TEST

/* The end's calibration, after the events, counts from the first event:
 * 2 and 3 at the start, 4 and 5 at the end, 3 and 4 taken out. */
START_TEST(test_hook_cost_of_both_calibrations)
{
	end_pairs = 10, end_inside = 40, end_outside = 50;
	own_time_trace(10, 20, 30);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100>0x20/1@110 t100<0x20/1=7,7 t100>0x30/1@170 "
	       "t100<0x30/1=7,7 t100<0x10/0=43,29+ ");
}
END_TEST

/* Calls shorter than their hooks' cost read 0, and their callers' times
 * still add up: a time is its self time plus its callees' times. */
START_TEST(test_hook_cost_never_below_zero)
{
	own_time_trace(1, 20, 3);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100>0x20/1@110 t100<0x20/1=0,0 t100>0x30/1@170 "
	       "t100<0x30/1=0,0 t100<0x10/0=14,14+ ");
}
END_TEST

/* A hidden callee's hooks still ran: its caller loses them. */
START_TEST(test_hook_cost_of_hidden_calls)
{
	own_time_trace(1, 2, 3);
	DRIVE("exclude=0x20");
	EXPECT("t100>0x10/0@100 t100>0x30/1@170 t100<0x30/1=8,8 t100<0x10/0=48,40+ ");
}
END_TEST

/* Thread 100: A @100 { 600 calls of B, `leaf` ticks long (the odd ones
 * `odd`), each `gap` after the one before } @20000, encoded by the
 * runtime's encoder; the hook pair calibrated at 10 ticks inside and 10
 * outside. */
static void loop_trace_odd(uint64_t leaf, uint64_t odd, uint64_t gap)
{
	static struct hp_raw raw[1202];
	uint64_t t = 100;
	size_t n = 0;
	raw[n++] = (struct hp_raw){ 0x10, t };
	for (int i = 0; i < 600; i++) {
		raw[n++] = (struct hp_raw){ 0x20, t += gap };
		raw[n++] = (struct hp_raw){ 0x20 | HP_RAW_EXIT, t += i % 2 ? odd : leaf };
	}
	raw[n++] = (struct hp_raw){ 0x10 | HP_RAW_EXIT, 20000 };
	struct hp_dict dict;
	struct hp_enc_stream enc = { 0 };
	ck_assert_int_eq(hp_dict_init(&dict), 0);
	uint8_t *out = malloc(hp_encode_bound(n));
	ck_assert_ptr_nonnull(out);
	ssize_t len = hp_encode(&dict, &enc, raw, n, out);
	ck_assert_int_gt(len, 0);
	free(file.p);
	memset(&file, 0, sizeof(file));
	tk_header(&file);
	process_rec(&file);
	tk_calibration_rec(&file, HP_CALIBRATION_START, 1, 10, 10);
	tk_clock_rec(&file, 0, 0);
	tk_thread_rec(&file, 0, 100, "main");
	tk_events_rec(&file, 0, (uint32_t)n, out, (size_t)len);
	tk_end_rec(&file, n, 0, 1);
	free(out);
	hp_enc_stream_free(&enc);
	hp_dict_free(&dict);
}

static void loop_trace(uint64_t leaf, uint64_t gap) { loop_trace_odd(leaf, leaf, gap); }

/* The run's spacing says a pair cost at most 8 inside and 8 outside, less
 * than calibrated (10 and 10): the spacing caps it. B's 8 ticks are all
 * hooks; A, of 19900, keeps 19900 - 4800 in B - 8 of its own pair -
 * 600 x 8 = 10292. */
START_TEST(test_hook_cost_capped_by_the_runs_spacing)
{
	log_view = &roots_ops;
	loop_trace(8, 8);
	DRIVE(NULL);
	EXPECT("t100<0x10/0=10292,10292+ ");
	ck_assert_uint_eq(frames_seen, 601);
	ck_assert_double_eq(taken.per_call_ns, 16);
	ck_assert_double_eq(taken.calibrated_ns, 20);
	ck_assert_double_eq(taken.measured_ns, 19900);
	ck_assert_double_eq(taken.shown_ns, 10292);
	/* --raw: as measured */
	DRIVE("raw=");
	EXPECT("t100<0x10/0=19900,15100+ ");
}
END_TEST

/* Spacings above the calibration hold the witnesses' bodies too: the
 * calibration stays. B keeps 15 - 10 = 5 a call; A 19900 - 9000 - 10 -
 * 600 x 10 = 4890 of its own. Spacings of twice it or more are real work
 * (a program with no short function): the calibration. */
START_TEST(test_hook_cost_spacing_above_the_calibration)
{
	log_view = &roots_ops;
	loop_trace(15, 14);
	DRIVE(NULL);
	EXPECT("t100<0x10/0=7890,4890+ ");
	ck_assert_double_eq(taken.per_call_ns, 20);
	loop_trace(25, 30); /* 19900 - 15000 - 10 - 6000 = -1110: 0, B: 15 each */
	DRIVE(NULL);
	EXPECT("t100<0x10/0=9000,0+ ");
}
END_TEST

/* B's calls read 8 and 12 ticks (the clock's step), 10 on average: all
 * hooks (the calibration). Clamped one by one at 0 they would show 2 in
 * every other call, 600 in all; carried, B shows 0 and A keeps
 * 19900 - 6000 in B - 10 - 600 x 10 = 7890. */
START_TEST(test_time_below_zero_carried_to_the_next_calls)
{
	log_view = &roots_ops;
	loop_trace_odd(8, 12, 11);
	DRIVE(NULL);
	EXPECT("t100<0x10/0=7890,7890+ ");
	ck_assert_double_eq(taken.per_call_ns, 20);
}
END_TEST

START_TEST(test_exclude_gives_time_to_caller)
{
	recursion(&file);
	DRIVE("exclude=^0x20$");
	EXPECT("t100>0x10/0@100 t100>0x10/1@110r t100>0x10/2@160r "
	       "t100<0x10/2=10,10 t100<0x10/1=120,110+ t100<0x10/0=200,80+ ");
}
END_TEST

START_TEST(test_depth_hides_deeper_calls)
{
	recursion(&file);
	DRIVE("depth=2");
	EXPECT("t100>0x10/0@100 t100>0x10/1@110r t100<0x10/1=120,120 t100<0x10/0=200,80+ ");
}
END_TEST

START_TEST(test_min_sends_enters_late_in_order)
{
	recursion(&file);
	DRIVE("min=50ns");
	EXPECT("t100>0x10/0@100 t100>0x10/1@110r t100>0x20/2@130 "
	       "t100<0x20/2=70,70 t100<0x10/1=120,50+ t100<0x10/0=200,80+ ");
}
END_TEST

START_TEST(test_function_shows_its_subtree_only)
{
	recursion(&file);
	DRIVE("function=^0x20$");
	/* B is the root now; the A it calls is outermost among shown frames */
	EXPECT("t100>0x20/0@130 t100>0x10/1@160 t100<0x10/1=10,10 t100<0x20/0=70,60+ ");
}
END_TEST

START_TEST(test_time_window)
{
	recursion(&file);
	DRIVE("time=0.000000150,1");
	EXPECT("t100>0x10/0@160 t100<0x10/0=10,10 ");
}
END_TEST

START_TEST(test_filter_matching_nothing_warns)
{
	recursion(&file);
	DRIVE("function=nothing-is-called-so");
	EXPECT("");
	ck_assert_ptr_nonnull(warned);
	ck_assert_ptr_nonnull(strstr(warned, "no call"));
}
END_TEST

/* Thread 100 "main" and 101 "worker", records interleaved, frames open
 * across the other's records (as check_analyze.c's interleaved()). */
static void two_threads(struct tk_bytes *b)
{
	trace_head(b, 2, 0);
	EVENTS(b, 0, 1, 0x43, 0x10, 0x00, 0x0a);                    /* A @10 */
	EVENTS(b, 1, 2, 0x43, 0x20, 0x01, 0xe8, 0x07, 0x00, 0x05);  /* B @1000, A @1005 */
	EVENTS(b, 0, 3, 0x01, 0x0a, 0x85, 0x8f);                    /* B @20-25, A ends @40 */
	EVENTS(b, 1, 2, 0x85, 0xda);                                /* A ends @1010, B @1100 */
	tk_end_rec(b, 8, 0, 2);
}

START_TEST(test_threads_nest_on_their_own)
{
	two_threads(&file);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@10 t101>0x20/0@1000 t101>0x10/1@1005 t100>0x20/1@20 "
	       "t100<0x20/1=5,5 t100<0x10/0=30,25+ t101<0x10/1=5,5 t101<0x20/0=100,95+ ");
}
END_TEST

START_TEST(test_thread_by_name_and_tid)
{
	two_threads(&file);
	DRIVE("thread=worker");
	EXPECT("t101>0x20/0@1000 t101>0x10/1@1005 t101<0x10/1=5,5 t101<0x20/0=100,95+ ");
	DRIVE("thread=100");
	EXPECT("t100>0x10/0@10 t100>0x20/1@20 t100<0x20/1=5,5 t100<0x10/0=30,25+ ");
}
END_TEST

/* ---------------------------------------------------------------- flat */

/* A view whose calls the driver counts in a flat profile (hp_view.flat). */
static struct hp_flat counted;
static int counted_per;
static int open_counting(struct hp_view *v, char *e, size_t n)
{
	(void)e, (void)n;
	v->flat = &counted;
	v->flat_per = counted_per;
	return 0;
}

static const struct hp_view_ops counting_ops = {
	.name = "count", .flags = HP_VIEW_NO_TIMES, .open = open_counting,
};

/* "calls total self min max" of fns id fn in group. */
static const char *counted_figures(uint32_t group, uint32_t fn)
{
	static char s[128];
	struct hp_fstats f = hp_flat_get(&counted, group, fn);
	snprintf(s, sizeof(s), "%llu %.0f %.0f %.0f %.0f", (unsigned long long)f.calls, f.total,
		 f.self, f.min, f.max);
	return s;
}

/* A function's total counts its outermost calls only; fns ids by first
 * sight (A 0, B 1), groups by thread in order of their first events. */
START_TEST(test_flat_counted_by_the_driver)
{
	log_view = &counting_ops;
	recursion(&file);
	DRIVE(NULL);
	ck_assert_str_eq(counted_figures(0, 0), "3 200 140 10 200");
	ck_assert_str_eq(counted_figures(0, 1), "1 70 60 70 70");
	hp_flat_free(&counted);
	counted_per = HP_PER_THREAD;
	file.n = 0;
	two_threads(&file);
	DRIVE(NULL);
	ck_assert_str_eq(counted_figures(0, 0), "1 30 25 30 30");
	ck_assert_str_eq(counted_figures(0, 1), "1 5 5 5 5");
	ck_assert_str_eq(counted_figures(1, 0), "1 5 5 5 5");
	ck_assert_str_eq(counted_figures(1, 1), "1 100 95 100 100");
	hp_flat_free(&counted);
	counted_per = HP_PER_NONE;
}
END_TEST

/* Frames a gap (a reset) closes are no calls. */
START_TEST(test_flat_leaves_lost_frames_out)
{
	trace_head(&file, 1, 0);
	/* A @10 { B @20, the gap; then A @5-8 */
	EVENTS(&file, 0, 4, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a, 0x44, 0x00, 0x05, 0x83);
	tk_end_rec(&file, 4, 0, 1);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@10 t100>0x20/1@20 t100<0x20/1=0,0! t100<0x10/0=10,10+! "
	       "t100>0x10/0@5 t100<0x10/0=3,3 ");
	log_view = &counting_ops;
	DRIVE(NULL);
	ck_assert_str_eq(counted_figures(0, 0), "1 3 3 3 3");
	ck_assert_str_eq(counted_figures(0, 1), "0 0 0 0 0");
	hp_flat_free(&counted);
}
END_TEST

START_TEST(test_open_frames_close_at_the_end)
{
	/* no exit recorded for A (main called exit()): closed at the stream's
	 * last tick, as the flat profile does */
	tk_header(&file);
	process_rec(&file);
	tk_clock_rec(&file, 0, 0);
	EVENTS(&file, 0, 3, 0x43, 0x10, 0x43, 0x20, 0x00, 0x0a, 0x01, 0x0a, 0x40, 0x3c);
	tk_end_rec(&file, 3, 0, 1);
	DRIVE(NULL);
	EXPECT("t0>0x10/0@10 t0>0x20/1@20 t0<0x20/1=30,30 t0<0x10/0=40,10+ ");
}
END_TEST

START_TEST(test_two_traces_share_functions)
{
	recursion(&file);
	tk_save(path2, &file);
	tk_save(path, &file);
	ck_assert_msg(drive_with(2, NULL) == 0, "%s", err);
	/* the same names: one function table, threads numbered apart */
	ck_assert_uint_eq(strlen(log_buf) % 2, 0);
	const char *second = strstr(log_buf + 1, "t100>0x10/0@100 ");
	ck_assert_ptr_nonnull(second);
	ck_assert_int_eq(strncmp(log_buf, second, (size_t)(second - log_buf)), 0);
}
END_TEST

/* Thread 100: A @100 { mark "m0" @105, paused @106-206, B @210 { value
 * v = -7 @215 } @220 } @230, mark "m0" @240. Less the 100 ns paused: A
 * @100-130, B @110-120, the value @115, the last mark @140. */
static void notes(struct tk_bytes *b)
{
	trace_head(b, 1, 1);
	EVENTS(b, 0, 10, 0x43, 0x10, 0x43, 0x20, 0x00, 0x64, 0x4b, 0x00, 0x0a, 0x45, 0x02,
	       0x46, 0xc8, 0x01, 0x01, 0x04, 0x4c, 0x01, 0x0a, 0xf9, 0xff, 0xff, 0xff, 0x0f,
	       0x4d, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x85, 0x8a, 0x4b, 0x00, 0x14);
	tk_end_rec(b, 10, 0, 1);
}

START_TEST(test_notes_come_with_the_calls)
{
	notes(&file);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@100 t100*m0/1@105 t100>0x20/1@110 t100#v=-7/2@115 "
	       "t100<0x20/1=10,10 t100<0x10/0=30,20+ t100*m0/0@140 ");
}
END_TEST

START_TEST(test_notes_filtered_by_thread_and_time_only)
{
	notes(&file);
	DRIVE("thread=101");
	EXPECT("");
	DRIVE("time=0.000000108,0.000000150");
	EXPECT("t100>0x20/0@110 t100#v=-7/1@115 t100<0x20/0=10,10 t100*m0/0@140 ");
	/* the other filters hide calls, never notes: a note's depth counts
	 * the shown calls around it */
	DRIVE("depth=1");
	EXPECT("t100>0x10/0@100 t100*m0/1@105 t100#v=-7/1@115 t100<0x10/0=30,30 t100*m0/0@140 ");
	DRIVE("function=^0x20$");
	EXPECT("t100*m0/0@105 t100>0x20/0@110 t100#v=-7/1@115 t100<0x20/0=10,10 t100*m0/0@140 ");
}
END_TEST

/* Thread 100: A @10 { mark @30 } @50; thread 101, in a later record: a mark
 * @20, value v = 42 @60. */
static void notes_of_two_threads(struct tk_bytes *b)
{
	trace_head(b, 2, 1);
	EVENTS(b, 0, 3, 0x43, 0x10, 0x00, 0x0a, 0x4b, 0x00, 0x28, 0x94);
	EVENTS(b, 1, 3, 0x4b, 0x00, 0x28, 0x4c, 0x01, 0x50, 0x2a, 0x4d, 0x01, 0x00, 0x00);
	tk_end_rec(b, 6, 0, 2);
}

START_TEST(test_notes_in_time_order_with_the_calls)
{
	notes_of_two_threads(&file);
	DRIVE(NULL);
	EXPECT("t100>0x10/0@10 t100*m0/1@30 t100<0x10/0=40,40 t101*m0/0@20 t101#v=42/0@60 ");
	log_view = &log_ops_in_time_order;
	DRIVE(NULL);
	EXPECT("t100>0x10/0@10 t101*m0/0@20 t100*m0/1@30 t100<0x10/0=40,40 t101#v=42/0@60 ");
}
END_TEST

/* -------------------------------------------------------------- limits */

START_TEST(test_bad_filters_refused)
{
	struct hp_filter f = { 0 };
	ck_assert_int_eq(hp_filter_set(&f, "thread", "", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "depth", "0", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "depth", "x", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "min", "2 parsecs", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "time", "3,1", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "time", "1", err, sizeof(err)), -1);
	ck_assert_int_eq(hp_filter_set(&f, "function", "(", err, sizeof(err)), -1);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(hp_filter_set(&f, "function", "a|b", err, sizeof(err)), 0);
	hp_filter_free(&f);
}
END_TEST

START_TEST(test_durations)
{
	double ns;
	ck_assert_int_eq(hp_parse_duration("2us", &ns), 0);
	ck_assert_double_eq(ns, 2000);
	ck_assert_int_eq(hp_parse_duration("1.5ms", &ns), 0);
	ck_assert_double_eq(ns, 1.5e6);
	ck_assert_int_eq(hp_parse_duration("250", &ns), 0);
	ck_assert_double_eq(ns, 250);
	ck_assert_int_eq(hp_parse_duration("-1us", &ns), -1);
	ck_assert_int_eq(hp_parse_duration("us", &ns), -1);
}
END_TEST

START_TEST(test_missing_trace_named)
{
	char *paths[] = { path };
	struct hp_drive_opts o = { 0 };
	struct hp_view_opts vo = { .format = "log" };
	struct hp_view v = { .ops = &log_ops, .opts = &vo, .out = stdout };
	ck_assert_int_eq(hp_drive(paths, 1, &o, &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("drive");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_every_call_unfiltered);
	tcase_add_test(core, test_process_named_by_base_name);
	tcase_add_test(core, test_own_time_out_of_durations);
	tcase_add_test(core, test_hook_cost_out_of_durations);
	tcase_add_test(core, test_hook_cost_of_both_calibrations);
	tcase_add_test(core, test_hook_cost_of_hidden_calls);
	tcase_add_test(core, test_hook_cost_never_below_zero);
	tcase_add_test(core, test_hook_cost_capped_by_the_runs_spacing);
	tcase_add_test(core, test_hook_cost_spacing_above_the_calibration);
	tcase_add_test(core, test_time_below_zero_carried_to_the_next_calls);
	tcase_add_test(core, test_exclude_gives_time_to_caller);
	tcase_add_test(core, test_depth_hides_deeper_calls);
	tcase_add_test(core, test_min_sends_enters_late_in_order);
	tcase_add_test(core, test_function_shows_its_subtree_only);
	tcase_add_test(core, test_time_window);
	tcase_add_test(core, test_filter_matching_nothing_warns);
	tcase_add_test(core, test_threads_nest_on_their_own);
	tcase_add_test(core, test_thread_by_name_and_tid);
	tcase_add_test(core, test_open_frames_close_at_the_end);
	tcase_add_test(core, test_flat_counted_by_the_driver);
	tcase_add_test(core, test_flat_leaves_lost_frames_out);
	tcase_add_test(core, test_two_traces_share_functions);
	tcase_add_test(core, test_notes_come_with_the_calls);
	tcase_add_test(core, test_notes_filtered_by_thread_and_time_only);
	tcase_add_test(core, test_notes_in_time_order_with_the_calls);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_bad_filters_refused);
	tcase_add_test(limits, test_durations);
	tcase_add_test(limits, test_missing_trace_named);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(suite(), top, sizeof(top), "check_drive");
}
