/*
 * check_buffer.c - the per-thread chunk ring of lib/hp_buffer.c and its
 * hand-over protocol (diagram in lib/hp_buffer.h).
 *
 * The consumer side (hp_buffer_take, hp_buffer_release,
 * hp_buffer_snapshot_partial) is a set of functions of one struct hp_thread:
 * those tests build a thread by hand, play the owner by filling chunks and
 * moving head, and call the functions directly. hp_buffer_init sets the
 * mode they follow; every test sets it itself.
 *
 * The owner side runs inside the hooks, on the state in hp_tls, and may
 * start the runtime, so those tests run in a child the test forks, as
 * check_runtime.c does: either the real runtime (the first event starts it
 * and its destructor writes the trace, which the parent reads back), or a
 * hand-built thread installed in the child's hp_tls (then the runtime never
 * starts) with a consumer thread of the test's own. A child stops at its
 * first failed check and reports it through shared memory and its exit
 * status.
 */
#define _GNU_SOURCE
#include <check.h>
#include <cpuid.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hp_buffer.h"
#include "hp_config.h"
#include "hp_format.h"
#include "hp_runtime.h"
#include "hp_writer.h"
#include "testkit.h"

#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_trace.h"

void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

#define CHUNK ((uint64_t)HP_CHUNK_EVENTS)
#define NONE UINT64_MAX

/*
 * Event i of every run here: the enter of function F(i / 2) when i is even,
 * its exit when i is odd. Every pair has its own address, so an event found
 * in the wrong place says which one it is.
 */
#define F(k) (0x100000u + 16u * (uint64_t)(k))
#define FX 0x7000 /* never recorded: raised while busy or after retiring */

static uint64_t addr_at(uint64_t i) { return F(i / 2) | (i & 1 ? HP_RAW_EXIT : 0); }
static uint64_t tick_at(uint64_t i) { return 5000 + 3 * i; }

static void record(uint64_t i)
{
	void *fn = (void *)(uintptr_t)F(i / 2);
	if (i & 1)
		__cyg_profile_func_exit(fn, (void *)1);
	else
		__cyg_profile_func_enter(fn, (void *)1);
}

static void record_range(uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		record(first + i);
}

/* Index of the first of ev[0..n) that is not event first + j, or NONE.
 * Hooks store real ticks: only hand-made events have known ones. */
static uint64_t first_wrong(const struct hp_raw *ev, size_t n, uint64_t first, int ticks)
{
	for (size_t j = 0; j < n; j++)
		if (ev[j].addr != addr_at(first + j) || (ticks && ev[j].tick != tick_at(first + j)))
			return j;
	return NONE;
}

/* ------------------------------------------------- a hand-built thread */

static struct hp_thread *hand_new(uint32_t nchunks)
{
	struct hp_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nchunks = nchunks;
	t->chunk_events = HP_CHUNK_EVENTS;
	t->map_bytes = (size_t)nchunks * HP_CHUNK_BYTES;
	t->base = hp_pages_alloc(t->map_bytes);
	t->chunk = calloc(nchunks, sizeof(*t->chunk));
	if (!t->base || !t->chunk) {
		hp_pages_free(t->base, t->map_bytes);
		free(t->chunk);
		free(t);
		return NULL;
	}
	return t;
}

static void hand_free(struct hp_thread *t)
{
	if (!t)
		return;
	hp_pages_free(t->base, t->map_bytes);
	free(t->chunk);
	free(t);
}

static struct hp_raw *slot(const struct hp_thread *t, uint32_t seq)
{
	return t->base + (size_t)(seq % t->nchunks) * CHUNK;
}

/* The owner's half of the protocol: n events from event first into chunk
 * head, its length, then head + 1 with release. */
static void hand_publish(struct hp_thread *t, uint64_t first, uint32_t n)
{
	struct hp_raw *s = slot(t, t->head);
	for (uint32_t j = 0; j < n; j++)
		s[j] = (struct hp_raw){ addr_at(first + j), tick_at(first + j) };
	t->chunk[t->head % t->nchunks].len = n;
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
}

/* Makes t the calling thread's buffer, as the slow path's use_chunk does. */
static void hand_own(struct hp_thread *t)
{
	t->tls = &hp_tls;
	hp_tls.thread = t;
	hp_tls.pos = slot(t, t->head);
	hp_tls.end = hp_tick_is_tsc ? hp_tls.pos + CHUNK : NULL;
	/* as the buffer's use_chunk: older ticks are an earlier lap's */
	t->chunk[t->head % t->nchunks].stale_below = t->chunk[t->head % t->nchunks].published_at + 1;
}

static int set_mode(enum hp_mode mode, uint32_t nchunks)
{
	struct hp_config cfg = { .mode = mode, .buffer_bytes = (size_t)nchunks * HP_CHUNK_BYTES };
	return hp_buffer_init(&cfg);
}

/* ------------------------------------------------------------ fixture */

/* What a child found; shared with the parent (made by main()). */
struct ring_result {
	uint64_t consumed, chunks, waits, wrong_at, wrong_seq;
	uint64_t lost_ring, lost_reentry, head, tail, waiting;
	/* the first chunk whose stale_below is not between the ticks of the
	 * slot's lap before (lap_max, by slot) and its own */
	uint64_t wrong_stale;
	uint64_t lap_max[4];
};
struct shared {
	char msg[1024];
	struct ring_result ring;
	int skipped; /* the child found nothing to test on this host */
};
static struct shared *shared;

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 256];
static char err[1024];
static struct hp_analysis A;
static int analyzed;
static struct hp_thread *T;  /* the direct tests' thread, 4 chunks */
static struct hp_raw *scratch; /* a chunk and one guard page */

#define GUARD_EVENTS (4096 / sizeof(struct hp_raw))

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(shared, 0, sizeof(*shared));
	analyzed = 0;
	err[0] = 0;
	ck_assert_int_eq(set_mode(HP_MODE_STREAM, 4), 0);
	T = hand_new(4);
	ck_assert_ptr_nonnull(T);
	scratch = hp_pages_alloc(HP_CHUNK_BYTES + 4096);
	ck_assert_ptr_nonnull(scratch);
	memset(scratch, 0xa5, HP_CHUNK_BYTES + 4096);
}

static void teardown(void)
{
	if (analyzed)
		hp_analysis_free(&A);
	hand_free(T);
	T = NULL;
	hp_pages_free(scratch, HP_CHUNK_BYTES + 4096);
	tk_remove_tree(dir);
}

/* ---------------------------------------------------------- the child */

/* Runs fn in a child with env set before anything else (see
 * tk_run_child); it must exit with 0. A child that starts the runtime by
 * mistake writes to path, not in ".". */
static void run_ok(const char *const *env, tk_child_fn fn, void *arg)
{
	int rc = tk_run_child(path, env, fn, arg, NULL);
	ck_assert_msg(rc == 0, "child exited with %d: %s", rc, shared->msg);
}

/* ---------------------------------------------------- reading a trace */

/* Checks every decoded event against the pattern, from event first on. */
struct order {
	uint64_t next, wrong_at, resets;
};

static int check_order(void *arg, const struct hp_analysis *a, uint32_t stream,
		       const struct hp_ev *ev, size_t n)
{
	(void)stream;
	struct order *o = arg;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == HP_EV_RESET) {
			o->resets++;
			continue;
		}
		if (ev[i].kind == HP_EV_OWN)
			continue; /* a chunk switch's own time: no event */
		uint32_t kind = o->next & 1 ? HP_EV_EXIT : HP_EV_ENTER;
		if (o->wrong_at == NONE &&
		    (ev[i].kind != kind || a->funcs.addr[ev[i].func] != F(o->next / 2)))
			o->wrong_at = o->next;
		o->next++;
	}
	return 0;
}

static void analyze_order(struct order *o)
{
	ck_assert_msg(hp_analyze(path, 0, o ? check_order : NULL, o, &A, err, sizeof(err)) == 0,
		      "%s", err);
	analyzed = 1;
}

/* Sum of the LOST records of one stream (or HP_STREAM_NONE) and reason. */
static uint64_t lost_of(uint32_t stream, uint32_t reason)
{
	char e[512];
	struct hp_reader *r = hp_reader_open(path, e, sizeof(e));
	ck_assert_msg(r != NULL, "%s", e);
	uint32_t type, size;
	const uint8_t *p;
	uint64_t n = 0;
	while (hp_reader_next(r, &type, &p, &size, e, sizeof(e)) == 1)
		if (type == HP_REC_LOST && size == 16 && hp_rd32(p) == stream && hp_rd32(p + 4) == reason)
			n += hp_rd64(p + 8);
	hp_reader_close(r);
	return n;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_take_nothing_published)
{
	/* head == tail: nothing to take, and the out parameters stay as they were */
	const struct hp_raw *ev = (const struct hp_raw *)0x1;
	uint32_t seq = 77;
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 0);
	T->head = T->tail = 9;
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 0);
	ck_assert_ptr_eq(ev, (const struct hp_raw *)0x1);
	ck_assert_uint_eq(seq, 77);
}
END_TEST

START_TEST(test_take_oldest_first)
{
	/* stream mode: chunks come out in the order published, in place, and
	 * a chunk stays the consumer's until it releases it */
	hand_publish(T, 0, 10);
	hand_publish(T, 10, 20);
	hand_publish(T, 30, 30);
	const struct hp_raw *ev;
	uint32_t seq;
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 10);
	ck_assert_uint_eq(seq, 0);
	ck_assert_ptr_eq(ev, T->base);
	ck_assert_uint_eq(first_wrong(ev, 10, 0, 1), NONE);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 10);
	ck_assert_uint_eq(seq, 0);
	hp_buffer_release(T, seq);
	ck_assert_uint_eq(T->tail, 1);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 20);
	ck_assert_uint_eq(seq, 1);
	ck_assert_ptr_eq(ev, T->base + CHUNK);
	ck_assert_uint_eq(first_wrong(ev, 20, 10, 1), NONE);
	hp_buffer_release(T, seq);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 30);
	ck_assert_uint_eq(seq, 2);
	ck_assert_uint_eq(first_wrong(ev, 30, 30, 1), NONE);
	hp_buffer_release(T, seq);
	ck_assert_uint_eq(T->tail, 3);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 0);
}
END_TEST

START_TEST(test_take_wraps_around)
{
	/* chunk seq lives in slot seq % nchunks: 6, 7, 8 are slots 2, 3, 0 */
	T->head = T->tail = 6;
	hand_publish(T, 0, 5);
	hand_publish(T, 5, 6);
	hand_publish(T, 11, 7);
	const struct hp_raw *ev;
	uint32_t seq;
	static const size_t want_slot[] = { 2, 3, 0 };
	static const size_t want_n[] = { 5, 6, 7 };
	static const uint64_t want_first[] = { 0, 5, 11 };
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), want_n[i]);
		ck_assert_uint_eq(seq, 6 + i);
		ck_assert_ptr_eq(ev, T->base + want_slot[i] * CHUNK);
		ck_assert_uint_eq(first_wrong(ev, want_n[i], want_first[i], 1), NONE);
		hp_buffer_release(T, seq);
	}
	ck_assert_uint_eq(T->tail, 9);
}
END_TEST

START_TEST(test_ring_take_copies_and_claims)
{
	/* ring mode: the owner may overwrite a published chunk, so take copies
	 * it and claims it at once (tail + 1); release has nothing left to do */
	ck_assert_int_eq(set_mode(HP_MODE_RING, 4), 0);
	hand_publish(T, 0, 100);
	hand_publish(T, 100, 50);
	const struct hp_raw *ev;
	uint32_t seq;
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 100);
	ck_assert_uint_eq(seq, 0);
	ck_assert_ptr_eq(ev, scratch);
	ck_assert_uint_eq(T->tail, 1);
	hp_buffer_release(T, seq);
	ck_assert_uint_eq(T->tail, 1);
	/* the owner reusing the slot no longer changes what was taken */
	memset(T->base, 0, 100 * sizeof(struct hp_raw));
	ck_assert_uint_eq(first_wrong(ev, 100, 0, 1), NONE);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 50);
	ck_assert_uint_eq(seq, 1);
	ck_assert_uint_eq(first_wrong(ev, 50, 100, 1), NONE);
	ck_assert_uint_eq(T->tail, 2);
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), 0);
}
END_TEST

struct sleeper {
	uint32_t *word;
	uint32_t expect;
	uint32_t started;
	pid_t tid;
	long rc;
};

static void *sleep_on(void *arg)
{
	struct sleeper *s = arg;
	s->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	/* no time-out: only a wake-up ends this (or a word already changed) */
	s->rc = syscall(SYS_futex, s->word, FUTEX_WAIT_PRIVATE, s->expect, NULL, NULL, 0);
	return NULL;
}

/* The state letter of one of our threads in /proc ('S' while it sleeps). */
static char thread_state(pid_t tid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(p, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

START_TEST(test_release_wakes_waiting_owner)
{
	/* an owner that found the ring full sleeps on tail with `waiting` set;
	 * the release of a chunk must wake it. The sleeper here has no
	 * time-out, so a missing wake-up hangs the test until Check's. */
	hand_publish(T, 0, 8);
	T->waiting = 1;
	struct sleeper s = { .word = &T->tail, .expect = 0 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, sleep_on, &s), 0);
	while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE))
		sched_yield();
	while (thread_state(s.tid) != 'S')
		sched_yield();
	hp_buffer_release(T, 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(s.rc, 0); /* woken, not "tail had already changed" */
	ck_assert_uint_eq(T->tail, 1);
}
END_TEST

START_TEST(test_snapshot_partial_copies_unpublished)
{
	/* the final flush copies what a live owner stored in the chunk it is
	 * filling, tagged with the sequence number that chunk will have */
	struct hp_tls tls = { 0 };
	T->tls = &tls;
	hand_publish(T, 0, 4);
	hand_publish(T, 4, 4);
	struct hp_raw *s = slot(T, 2);
	for (uint64_t j = 0; j < 37; j++)
		s[j] = (struct hp_raw){ addr_at(8 + j), tick_at(8 + j) };
	tls.pos = s + 37;
	uint32_t seq = 0;
	uint64_t unfilled;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 37);
	ck_assert_uint_eq(seq, 2);
	ck_assert_uint_eq(first_wrong(scratch, 37, 8, 1), NONE);
	/* a copy: nothing is published or consumed */
	ck_assert_uint_eq(T->head, 2);
	ck_assert_uint_eq(T->tail, 0);
}
END_TEST

/* The first event of a thread creates its buffer; a second thread gets the
 * next stream id and goes to the front of the list. */
struct second {
	uint32_t stream, tid, head, nchunks, max_chunks;
	int is_list_head, next_is_first, own_tls;
	struct hp_raw *base;
	uint64_t first_addr;
};

static struct hp_thread *first_thread_seen;

static void *second_thread(void *arg)
{
	struct second *s = arg;
	prctl(PR_SET_NAME, "second");
	record(2);
	/* copied now: once the thread exits, the writer frees its buffer */
	struct hp_thread *t = hp_tls.thread;
	if (t) {
		s->stream = t->stream;
		s->tid = t->tid;
		s->head = t->head;
		s->nchunks = t->nchunks;
		s->max_chunks = t->max_chunks;
		s->base = t->base;
		s->first_addr = t->base[0].addr;
		s->own_tls = t->tls == &hp_tls;
		pthread_mutex_lock(&hp_threads_lock);
		s->is_list_head = hp_threads == t;
		s->next_is_first = t->next == first_thread_seen;
		pthread_mutex_unlock(&hp_threads_lock);
	}
	record(3);
	return NULL;
}

static int child_first_event(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "first-event");
	TK_CHILD_TRUE(hp_tls.thread == NULL);
	TK_CHILD_TRUE(hp_threads == NULL);
	record(0);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	first_thread_seen = t;
	TK_CHILD_TRUE(hp_threads == t);
	TK_CHILD_TRUE(t->next == NULL);
	TK_CHILD_TRUE(t->tls == &hp_tls);
	TK_CHILD_EQ(t->stream, 0);
	TK_CHILD_EQ(t->tid, syscall(SYS_gettid));
	/* HOOKPROF_BUFFER=512K: 8 chunks mapped, 2 used until the first lap ends */
	TK_CHILD_EQ(t->max_chunks, 8);
	TK_CHILD_EQ(t->nchunks, 2);
	TK_CHILD_EQ(t->head, 0);
	TK_CHILD_EQ(t->tail, 0);
	TK_CHILD_EQ(t->exited, 0);
	TK_CHILD_EQ(hp_tls.busy, 0);
	TK_CHILD_TRUE(!strcmp(t->name, "first-event"));
	/* the event itself is the first of chunk 0 */
	TK_CHILD_TRUE(hp_tls.pos == t->base + 1);
	TK_CHILD_EQ(t->base[0].addr, addr_at(0));
	TK_CHILD_TRUE(hp_tls.end == (hp_tick_is_tsc ? t->base + CHUNK : NULL));
	record(1);
	TK_CHILD_TRUE(hp_tls.pos == t->base + 2);
	TK_CHILD_EQ(t->base[1].addr, addr_at(1));

	struct second s = { 0 };
	pthread_t th;
	TK_CHILD_EQ(pthread_create(&th, NULL, second_thread, &s), 0);
	TK_CHILD_EQ(pthread_join(th, NULL), 0);
	TK_CHILD_EQ(s.stream, 1);
	TK_CHILD_TRUE(s.tid != t->tid);
	TK_CHILD_EQ(s.max_chunks, 8);
	TK_CHILD_EQ(s.nchunks, 2);
	TK_CHILD_EQ(s.head, 0);
	TK_CHILD_TRUE(s.own_tls);
	TK_CHILD_TRUE(s.base != NULL && s.base != t->base);
	TK_CHILD_EQ(s.first_addr, addr_at(2));
	TK_CHILD_TRUE(s.is_list_head);
	TK_CHILD_TRUE(s.next_is_first);
	return TK_CHILD_OK;
}

START_TEST(test_first_event_creates_buffer)
{
	const char *const env[] = { "HOOKPROF_BUFFER", "512K", NULL };
	run_ok(env, child_first_event, NULL);
	/* the streams' records interleave in any order: no order check here */
	analyze_order(NULL);
	ck_assert_uint_eq(A.events, 4);
	ck_assert_uint_eq(tk_calls_of(&A, F(0)), 1);
	ck_assert_uint_eq(tk_calls_of(&A, F(1)), 1);
	ck_assert_uint_eq(tk_streams_seen(&A), 2);
	ck_assert_str_eq(A.info.streams[0].name, "first-event");
	ck_assert_str_eq(A.info.streams[1].name, "second");
	ck_assert_uint_eq(A.info.streams[0].events, 2);
	ck_assert_uint_eq(A.info.streams[1].events, 2);
}
END_TEST

/* Stream mode sizes rings by activity, within the budget: 20 threads
 * started one after another, all alive at the end, each records `events`
 * events. Threads that record little keep 2 chunks, however early they
 * started; a busy one doubles its ring at the end of each first lap
 * while the budget has room. Ring mode has no budget. */
#define BUDGET_THREADS 20

struct budget_want {
	uint64_t events[BUDGET_THREADS]; /* each thread's */
	uint32_t nchunks[BUDGET_THREADS]; /* its ring at the end */
};

struct budget_thread {
	sem_t started, release;
	uint64_t events;
	uint32_t nchunks;
};

static void *budget_thread(void *arg)
{
	struct budget_thread *b = arg;
	record_range(0, b->events);
	b->nchunks = hp_tls.thread ? hp_tls.thread->nchunks : 0;
	sem_post(&b->started);
	sem_wait(&b->release); /* its buffer stays in the budget until then */
	return NULL;
}

static int child_budget(void *arg)
{
	const struct budget_want *want = arg;
	hp_buffer_grow_interval_ns = 0; /* no waiting: the sizes are exact */
	static struct budget_thread b[BUDGET_THREADS];
	pthread_t th[BUDGET_THREADS];
	for (int i = 0; i < BUDGET_THREADS; i++) {
		sem_init(&b[i].started, 0, 0);
		sem_init(&b[i].release, 0, 0);
		b[i].events = want->events[i] ? want->events[i] : 2;
		TK_CHILD_EQ(pthread_create(&th[i], NULL, budget_thread, &b[i]), 0);
		sem_wait(&b[i].started);
	}
	for (int i = 0; i < BUDGET_THREADS; i++)
		sem_post(&b[i].release);
	for (int i = 0; i < BUDGET_THREADS; i++)
		TK_CHILD_EQ(pthread_join(th[i], NULL), 0);
	for (uint32_t i = 0; i < BUDGET_THREADS; i++)
		TK_CHILD_EQ(b[i].nchunks, want->nchunks[i] ? want->nchunks[i] : 2);
	return TK_CHILD_OK;
}

static uint64_t budget_events(const struct budget_want *w)
{
	uint64_t n = 0;
	for (int i = 0; i < BUDGET_THREADS; i++)
		n += w->events[i] ? w->events[i] : 2;
	return n;
}

/* Every budget case: the sizes the child checks, then the trace whole. */
static void run_budget(const char *const *env, const struct budget_want *want)
{
	run_ok(env, child_budget, (void *)want);
	analyze_order(NULL);
	ck_assert_uint_eq(A.events, budget_events(want));
	ck_assert_uint_eq(tk_lost_total(&A), 0);
}

/* 8 MiB rings (128 chunks) in an 8 MiB budget for their growth (a ring's
 * first 2 chunks are its own), 20 threads alive at the end, the busy ones
 * (200 chunks of events each) one after another: the first grows to its
 * whole 8 MiB (126 chunks from the budget, idle threads or not), the next
 * to 4 chunks (the last 2 chunks' room), the last two find no room to
 * double into; the idle ones keep 2 chunks. */
START_TEST(test_stream_budget_to_the_busy)
{
	static struct budget_want want;
	want.events[3] = 200 * CHUNK;
	want.nchunks[3] = 128;
	for (int i = 0; i < 3; i++)
		want.events[16 + i] = 200 * CHUNK;
	want.nchunks[16] = 4;
	run_budget(NULL, &want);
}
END_TEST

/* Two busy threads, 2 MiB rings: their share of the 8 MiB (4 MiB) is
 * above a ring, and both reach the full 32 chunks. */
START_TEST(test_stream_budget_two_busy_full)
{
	static struct budget_want want;
	want.events[0] = want.events[1] = 100 * CHUNK;
	want.nchunks[0] = want.nchunks[1] = 32;
	const char *const env[] = { "HOOKPROF_BUFFER", "2M", NULL };
	run_budget(env, &want);
}
END_TEST

/* The usual shape: a main thread that starts a worker and waits for it.
 * The worker gets its whole default buffer (the main thread's 2 chunks
 * are not taken from the budget). */
static uint32_t worker_chunks;

static void *busy_worker(void *arg)
{
	(void)arg;
	record_range(0, 300 * CHUNK);
	worker_chunks = hp_tls.thread ? hp_tls.thread->nchunks : 0;
	return NULL;
}

static int child_main_and_worker(void *arg)
{
	(void)arg;
	hp_buffer_grow_interval_ns = 0;
	record_range(0, 2);
	pthread_t th;
	TK_CHILD_EQ(pthread_create(&th, NULL, busy_worker, NULL), 0);
	TK_CHILD_EQ(pthread_join(th, NULL), 0);
	TK_CHILD_EQ(worker_chunks, 128);
	return TK_CHILD_OK;
}

START_TEST(test_stream_budget_worker_gets_whole_buffer)
{
	run_ok(NULL, child_main_and_worker, NULL);
}
END_TEST

/*
 * A signal handler that runs while its thread's ring doubles (this
 * binary's clock_gettime, which the doubling reads, raises it): the
 * switch is chunk work (switching), so the handler's events wait in the
 * held events, the rest counted lost, and the doubling is whole: one
 * doubling, charged once, one busy thread.
 */
#define HANDLER_EVENTS 100
static __thread int raise_in_clock;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (raise_in_clock) {
		raise_in_clock = 0;
		raise(SIGUSR1);
	}
	return syscall(SYS_clock_gettime, id, ts) ? -1 : 0;
}

static void record_in_handler(int sig)
{
	(void)sig;
	record_range(0, HANDLER_EVENTS);
}

static int child_handler_in_growth(void *arg)
{
	(void)arg;
	/* The doubling's clock reading must be the first of the switch (the
	 * TSC's hook reads none before), and the switch the fast one (a
	 * memory mark): elsewhere there is nothing to see. */
	if (!hp_tick_is_tsc || !hp_runtime_marked_ours()) {
		shared->skipped = 1;
		return TK_CHILD_OK;
	}
	hp_buffer_grow_interval_ns = 0;
	struct sigaction sa = { .sa_handler = record_in_handler }, old;
	sigaction(SIGUSR1, &sa, &old);
	record_range(0, 2 * CHUNK - 1); /* chunk 0, and chunk 1 but one */
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	/* a free chunk at the switch, so that it is the fast one (signals on) */
	while (__atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) < 1)
		sched_yield();
	raise_in_clock = 1;
	record_range(2 * CHUNK - 1, 2); /* chunk 1's last, then the switch to 2 */
	raise_in_clock = 0;
	sigaction(SIGUSR1, &old, NULL);
	TK_CHILD_EQ(t->nchunks, 4);
	TK_CHILD_EQ(t->budgeted, 2 * HP_CHUNK_BYTES);
	TK_CHILD_EQ(t->busy_counted, 1);
	TK_CHILD_EQ(t->lost_reentry, HANDLER_EVENTS - HP_HELD_EVENTS);
	return TK_CHILD_OK;
}

START_TEST(test_handler_while_ring_doubles)
{
	const char *const env[] = { "HOOKPROF_BUFFER", "512K", NULL };
	shared->skipped = 0;
	run_ok(env, child_handler_in_growth, NULL);
	if (shared->skipped)
		return;
	analyze_order(NULL);
	ck_assert_uint_eq(A.events, 2 * CHUNK + 1 + HP_HELD_EVENTS);
	ck_assert_uint_eq(tk_lost_total(&A), HANDLER_EVENTS - HP_HELD_EVENTS);
}
END_TEST

/* Threads that record little, however many, take 2 chunks each. */
START_TEST(test_stream_budget_idle_keep_two)
{
	static const struct budget_want want = { .events = { [0] = CHUNK + 1 } , .nchunks = { [0] = 2 } };
	run_budget(NULL, &want);
}
END_TEST

/* One busy thread after 19 idle ones: idle threads take no share, and it
 * gets its whole 2 MiB ring (a share over the 20 alive would be 256 KiB). */
START_TEST(test_stream_budget_busy_among_idle)
{
	static struct budget_want want;
	want.events[19] = 100 * CHUNK;
	want.nchunks[19] = 32;
	const char *const env[] = { "HOOKPROF_BUFFER", "2M", NULL };
	run_budget(env, &want);
}
END_TEST

/* A ring doubles only where every chunk in flight keeps its slot: the
 * end of its first lap, and every other lap end after it (n = 2: before
 * chunk 2, 6, 10, ...). Held back at first (a doubling too soon after the
 * thread's start), it grows later: the events come out whole and in order. */
static int child_grow_later(void *arg)
{
	(void)arg;
	hp_buffer_grow_interval_ns = UINT64_MAX / 2;
	record_range(0, 3 * CHUNK); /* chunks 0..2: the end of the first lap passed */
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->nchunks, 2);
	hp_buffer_grow_interval_ns = 0;
	record_range(3 * CHUNK, 3 * CHUNK); /* through chunk 5: not a place to grow */
	TK_CHILD_EQ(t->nchunks, 2);
	record_range(6 * CHUNK, 1); /* chunk 6 = 2 mod 4 */
	TK_CHILD_EQ(t->nchunks, 4);
	record_range(6 * CHUNK + 1, 6 * CHUNK); /* chunk 12 = 4 mod 8 */
	TK_CHILD_EQ(t->nchunks, 8);
	TK_CHILD_EQ(t->busy_counted, 1);
	return TK_CHILD_OK;
}

START_TEST(test_ring_grows_at_a_later_lap)
{
	run_ok(NULL, child_grow_later, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, 12 * CHUNK + 1);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_uint_eq(o.resets, 0);
	ck_assert_uint_eq(tk_lost_total(&A), 0);
}
END_TEST

/* The final flush's snapshot of a 2-chunk ring whose owner published
 * chunk 1 and waits for chunk 2's slot (slot 0, still chunk 0's): nothing
 * of chunk 2 is there. (Its pos, chunk 1's end, also lies one chunk past
 * chunk 2's end, which a hook's overshoot would fill whole.) */
static struct hp_thread *waiting_owner;

static void *fill_then_wait(void *arg)
{
	(void)arg;
	record_range(0, 2 * CHUNK);
	__atomic_store_n(&waiting_owner, hp_tls.thread, __ATOMIC_RELEASE);
	record(2 * CHUNK); /* publishes chunk 1, waits for a free chunk */
	return NULL;
}

static int child_snapshot_waiting(void *arg)
{
	(void)arg;
	record_range(0, 2); /* the main thread starts the runtime */
	TK_CHILD_EQ(hp_writer_lock_for_fork(), 0); /* the writer consumes nothing */
	__atomic_store_n(&hp_writer_at_work, 1, __ATOMIC_RELAXED); /* as if at work: the owner waits for a chunk */
	pthread_t th;
	TK_CHILD_EQ(pthread_create(&th, NULL, fill_then_wait, NULL), 0);
	struct hp_thread *t;
	while (!(t = __atomic_load_n(&waiting_owner, __ATOMIC_ACQUIRE)) ||
	       !__atomic_load_n(&t->waiting, __ATOMIC_ACQUIRE))
		sched_yield();
	static struct hp_raw snap[CHUNK];
	uint32_t seq = 0;
	uint64_t unfilled;
	size_t n = hp_buffer_snapshot_partial(t, snap, &seq, &unfilled, 0);
	__atomic_store_n(&hp_writer_at_work, 0, __ATOMIC_RELAXED);
	hp_writer_unlock_after_fork();
	TK_CHILD_EQ(pthread_join(th, NULL), 0);
	TK_CHILD_EQ(n, 0);
	return TK_CHILD_OK;
}

START_TEST(test_snapshot_of_owner_waiting_for_a_chunk)
{
	const char *const env[] = { "HOOKPROF_BUFFER", "128K", NULL };
	run_ok(env, child_snapshot_waiting, NULL);
}
END_TEST

/* HOOKPROF_BUFFER=1M: no ring passes 16 chunks, budget or not. */
START_TEST(test_stream_budget_small_buffers)
{
	static struct budget_want want;
	for (int i = 0; i < 4; i++) {
		want.events[i] = 40 * CHUNK;
		want.nchunks[i] = 16;
	}
	const char *const env[] = { "HOOKPROF_BUFFER", "1M", NULL };
	run_budget(env, &want);
}
END_TEST

/*
 * Many threads alive at once: past HP_FULL_RINGS live rings a new ring's
 * chunks are halved at each doubling of their number, down to a page, so
 * that the first 2 chunks of many rings stay small; ring mode keeps the
 * largest. Each thread records more than 2 of the largest chunks, through
 * many switches of its small ones: every stream comes out whole, in order.
 */
#define MANY_THREADS 300
#define MANY_EVENTS (2 * CHUNK + 5)

struct many_thread {
	sem_t started, release;
	uint32_t chunk_events;
};

static void *many_thread(void *arg)
{
	struct many_thread *m = arg;
	record_range(0, MANY_EVENTS);
	m->chunk_events = hp_tls.thread ? hp_tls.thread->chunk_events : 0;
	sem_post(&m->started);
	sem_wait(&m->release);
	return NULL;
}

/* Starts a thread running fn(m) and waits until it said it started (its
 * ring made): rings counted in order. 0, or -1. */
static int start_held(struct many_thread *m, pthread_t *th, void *(*fn)(void *))
{
	sem_init(&m->started, 0, 0);
	sem_init(&m->release, 0, 0);
	if (pthread_create(th, NULL, fn, m))
		return -1;
	sem_wait(&m->started);
	return 0;
}

/* Lets the n threads of start_held end, and joins them. 0, or -1. */
static int release_held(struct many_thread *m, pthread_t *th, uint32_t n)
{
	int rc = 0;
	for (uint32_t i = 0; i < n; i++)
		sem_post(&m[i].release);
	for (uint32_t i = 0; i < n; i++)
		rc |= pthread_join(th[i], NULL) ? -1 : 0;
	return rc;
}

/* The chunk of a ring started with `live` rings alive. */
static uint32_t chunk_for_live(uint32_t live, int ring_mode)
{
	if (ring_mode || live < 32)
		return HP_CHUNK_EVENTS;
	return live < 64 ? HP_CHUNK_EVENTS / 2 : live < 128 ? HP_CHUNK_EVENTS / 4 :
	       live < 256 ? HP_CHUNK_EVENTS / 8 : HP_CHUNK_EVENTS / 16;
}

static int child_many_threads(void *arg)
{
	int ring_mode = arg != NULL;
	static struct many_thread m[MANY_THREADS];
	static pthread_t th[MANY_THREADS];
	uint32_t live = hp_tls.thread != NULL; /* this thread's ring, if it has one */
	for (uint32_t i = 0; i < MANY_THREADS; i++) {
		TK_CHILD_EQ(start_held(&m[i], &th[i], many_thread), 0);
		TK_CHILD_EQ(m[i].chunk_events, chunk_for_live(live + i, ring_mode));
	}
	TK_CHILD_EQ(release_held(m, th, MANY_THREADS), 0);
	return TK_CHILD_OK;
}

/* Each stream's events: the pattern from event 0, in order. */
struct many_order {
	uint64_t next[MANY_THREADS + 1];
	uint64_t wrong;
};

static int check_many_order(void *arg, const struct hp_analysis *a, uint32_t stream,
			    const struct hp_ev *ev, size_t n)
{
	struct many_order *o = arg;
	if (stream > MANY_THREADS) {
		o->wrong++;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == HP_EV_OWN)
			continue;
		uint64_t k = o->next[stream]++;
		if (ev[i].kind != (k & 1 ? HP_EV_EXIT : HP_EV_ENTER) || a->funcs.addr[ev[i].func] != F(k / 2))
			o->wrong++;
	}
	return 0;
}

static void run_many_threads(const char *const *env, int ring_mode)
{
	run_ok(env, child_many_threads, ring_mode ? (void *)1 : NULL);
	static struct many_order o;
	memset(&o, 0, sizeof(o));
	ck_assert_msg(hp_analyze(path, 0, check_many_order, &o, &A, err, sizeof(err)) == 0, "%s", err);
	analyzed = 1;
	ck_assert_uint_eq(o.wrong, 0);
	uint32_t streams = 0;
	for (uint32_t s = 0; s <= MANY_THREADS; s++)
		if (o.next[s]) {
			ck_assert_uint_eq(o.next[s], MANY_EVENTS);
			streams++;
		}
	ck_assert_uint_eq(streams, MANY_THREADS);
	ck_assert_uint_eq(tk_lost_total(&A), 0);
}

START_TEST(test_many_threads_smaller_chunks)
{
	run_many_threads(NULL, 0);
}
END_TEST

/* A child forked beside many live threads has only its own: its ring
 * gets the largest chunks again. */
static int child_fork_beside_many(void *arg)
{
	(void)arg;
	static struct many_thread m[2 * HP_FULL_RINGS];
	static pthread_t th[2 * HP_FULL_RINGS];
	for (uint32_t i = 0; i < 2 * HP_FULL_RINGS; i++) {
		TK_CHILD_EQ(start_held(&m[i], &th[i], many_thread), 0);
	}
	TK_CHILD_EQ(m[2 * HP_FULL_RINGS - 1].chunk_events, HP_CHUNK_EVENTS / 2);
	pid_t pid = fork();
	if (pid == 0) {
		record_range(0, 2);
		_exit(hp_tls.thread && hp_tls.thread->chunk_events == HP_CHUNK_EVENTS ? 0 : 1);
	}
	int status = 0;
	TK_CHILD_EQ(waitpid(pid, &status, 0), pid);
	TK_CHILD_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	TK_CHILD_EQ(release_held(m, th, 2 * HP_FULL_RINGS), 0);
	return TK_CHILD_OK;
}

START_TEST(test_fork_beside_many_threads_full_chunks)
{
	run_ok(NULL, child_fork_beside_many, NULL);
}
END_TEST

/*
 * A child forked with more frames open than a chunk of the smaller size,
 * whose forking thread starts its ring only after the child has started
 * HP_FULL_RINGS threads of its own: its inherited enters must still fit
 * in its first chunk (a chunk never holds more than its chunk_events).
 */
#define DEEP_FRAMES (HP_CHUNK_EVENTS / 2 + 8)

static int child_fork_deep_then_many(void *arg)
{
	(void)arg;
	for (uint64_t k = 0; k < DEEP_FRAMES; k++)
		record(2 * k); /* enters only: DEEP_FRAMES frames open */
	pid_t pid = fork();
	if (pid == 0) {
		static struct many_thread m[HP_FULL_RINGS];
		static pthread_t th[HP_FULL_RINGS];
		for (uint32_t i = 0; i < HP_FULL_RINGS; i++) {
			if (start_held(&m[i], &th[i], many_thread))
				_exit(2);
		}
		record(2 * DEEP_FRAMES); /* this thread's first event in the child */
		struct hp_thread *t = hp_tls.thread;
		int bad = !t || t->chunk[0].len > t->chunk_events ||
			  hp_tls.pos < t->base || hp_tls.pos > t->base + (size_t)t->max_chunks * t->chunk_events;
		release_held(m, th, HP_FULL_RINGS);
		_exit(bad ? 1 : 0);
	}
	int status = 0;
	TK_CHILD_EQ(waitpid(pid, &status, 0), pid);
	TK_CHILD_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return TK_CHILD_OK;
}

START_TEST(test_fork_deep_inherits_into_a_smaller_ring)
{
	run_ok(NULL, child_fork_deep_then_many, NULL);
}
END_TEST

/*
 * The fast chunk switch runs with signals on: an instrumented handler that
 * runs during it finds `switching` and holds its events, for the fast
 * path is kept off by the old end until the switch is done (switch_fast).
 * With a smaller chunk a wrap to chunk 0 puts pos within the largest
 * chunk's width below that old end (2 chunks of 2048 events: all of the
 * ring): a handler's event then goes in on the fast path, before the
 * switch's own event and the held ones, and against take_slot_slow's pos++.
 * A signal flood on the recording thread looks for one such event.
 */
#define FH 0x300000u
static uint64_t during_switch, not_held;

static void record_and_look(int sig)
{
	(void)sig;
	struct hp_thread *t = hp_tls.thread;
	if (!t)
		return;
	uint32_t switching = __atomic_load_n(&t->switching, __ATOMIC_RELAXED);
	uint32_t held_in = t->held_in;
	uint64_t lost = t->lost_reentry;
	/* An end armed with pos in the chunk it closes: a handler before this
	 * one switched chunks for the interrupted switch, whose slot it kept;
	 * the fast path then writes in order (switch_fast's comment). */
	const struct hp_raw *end = hp_tls.end, *pos = hp_tls.pos;
	int armed_here = end && pos >= end - t->chunk_events && pos < end;
	__cyg_profile_func_enter((void *)(uintptr_t)FH, (void *)1);
	__cyg_profile_func_exit((void *)(uintptr_t)FH, (void *)1);
	if (switching && !armed_here) {
		during_switch++;
		if (t->held_in == held_in && t->lost_reentry == lost)
			not_held++;
	}
}

static uint32_t flood_stop;

static void *flood(void *arg)
{
	pthread_t target = *(pthread_t *)arg;
	while (!__atomic_load_n(&flood_stop, __ATOMIC_ACQUIRE)) {
		pthread_kill(target, SIGUSR1);
		for (volatile int k = 0; k < 200; k++)
			;
	}
	return NULL;
}

static int child_switch_holds(void *arg)
{
	uint32_t rings = (uint32_t)(uintptr_t)arg;
	hp_buffer_grow_interval_ns = UINT64_MAX / 2; /* 2 chunks: a wrap every other switch */
	static struct many_thread m[HP_FULL_RINGS];
	static pthread_t th[HP_FULL_RINGS];
	for (uint32_t i = 0; i < rings; i++) {
		TK_CHILD_EQ(start_held(&m[i], &th[i], many_thread), 0);
	}
	if (!hp_tick_is_tsc && !hp_tsc_is_invariant()) {
		uint32_t a, b, c, d;
		if (__get_cpuid(1, &a, &b, &c, &d) && (d & (1u << 4)))
			hp_tick_is_tsc = 1; /* a VM: play an invariant TSC (the runtime has started) */
	}
	if (!hp_tick_is_tsc || !hp_runtime_marked_ours()) {
		shared->skipped = 1;
		goto release;
	}
	record_range(0, 2); /* this thread's ring */
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->chunk_events, rings >= HP_FULL_RINGS ? CHUNK / 2 : CHUNK);
	struct sigaction sa = { .sa_handler = record_and_look, .sa_flags = SA_RESTART }, old;
	sigaction(SIGUSR1, &sa, &old);
	pthread_t self = pthread_self(), fl;
	TK_CHILD_EQ(pthread_create(&fl, NULL, flood, &self), 0);
	uint64_t start = hp_clock_ns(), next = 2;
	while (!__atomic_load_n(&not_held, __ATOMIC_RELAXED) && hp_clock_ns() - start < 3000000000ull) {
		/* a free chunk at each switch, so that it is the fast one */
		while (__atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&t->head, __ATOMIC_ACQUIRE))
			sched_yield();
		record_range(next, t->chunk_events);
		next += t->chunk_events;
	}
	__atomic_store_n(&flood_stop, 1, __ATOMIC_RELEASE);
	TK_CHILD_EQ(pthread_join(fl, NULL), 0);
	sigaction(SIGUSR1, &old, NULL);
	snprintf(shared->msg, sizeof(shared->msg), "%llu handlers during a switch, %llu not held",
		 (unsigned long long)during_switch, (unsigned long long)not_held);
	TK_CHILD_EQ(not_held, 0);
release:
	TK_CHILD_EQ(release_held(m, th, rings), 0);
	return TK_CHILD_OK;
}

START_TEST(test_small_chunk_switch_holds_handlers)
{
	shared->skipped = 0;
	run_ok(NULL, child_switch_holds, (void *)(uintptr_t)HP_FULL_RINGS);
}
END_TEST

START_TEST(test_largest_chunk_switch_holds_handlers)
{
	shared->skipped = 0;
	run_ok(NULL, child_switch_holds, (void *)(uintptr_t)1);
}
END_TEST

/*
 * A ring with smaller chunks still grows to the whole buffer
 * (HOOKPROF_BUFFER, the trace's "buffer": the largest a thread may grow
 * to) when its thread is the one busy one: 32 idle threads started first
 * give it chunks of half the largest.
 */
static void *idle_thread(void *arg)
{
	struct many_thread *m = arg;
	record_range(0, 2);
	sem_post(&m->started);
	sem_wait(&m->release);
	return NULL;
}

static int child_small_ring_grows(void *arg)
{
	(void)arg;
	hp_buffer_grow_interval_ns = 0;
	static struct many_thread m[HP_FULL_RINGS];
	static pthread_t th[HP_FULL_RINGS];
	for (uint32_t i = 0; i < HP_FULL_RINGS; i++) {
		TK_CHILD_EQ(start_held(&m[i], &th[i], idle_thread), 0);
	}
	uint64_t events = 4 * hp_buffer_bytes() / sizeof(struct hp_raw);
	record_range(0, events);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->chunk_events, CHUNK / 2);
	TK_CHILD_EQ((size_t)t->nchunks * t->chunk_events * sizeof(struct hp_raw), hp_buffer_bytes());
	TK_CHILD_EQ(release_held(m, th, HP_FULL_RINGS), 0);
	return TK_CHILD_OK;
}

START_TEST(test_small_chunk_ring_grows_to_the_buffer)
{
	const char *const env[] = { "HOOKPROF_BUFFER", "1M", NULL };
	run_ok(env, child_small_ring_grows, NULL);
}
END_TEST

START_TEST(test_many_threads_ring_mode_keeps_chunks)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "256K", NULL };
	run_many_threads(env, 1);
}
END_TEST

START_TEST(test_ring_no_budget)
{
	static struct budget_want want;
	for (int i = 0; i < BUDGET_THREADS; i++)
		want.nchunks[i] = 16;
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "1M", NULL };
	run_budget(env, &want);
}
END_TEST

/* Ring mode, 2 chunks, no writer thread (ring mode has none): the state
 * after a run is exact. */
#define RING_EVENTS (5 * CHUNK + 100)

static int child_ring_drops(void *arg)
{
	(void)arg;
	record_range(0, RING_EVENTS);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->nchunks, 2);
	TK_CHILD_EQ(t->head, 5);                /* chunks 0..4 published */
	TK_CHILD_EQ(t->tail, 4);                /* 0..3 dropped, oldest first */
	TK_CHILD_EQ(t->lost_ring, 4 * CHUNK);   /* and every event of them counted */
	TK_CHILD_EQ(t->lost_reentry, 0);
	TK_CHILD_EQ(t->chunk[4 % 2].len, CHUNK);
	/* the newest published chunk is whole, then the one being filled */
	TK_CHILD_EQ(first_wrong(slot(t, 4), CHUNK, 4 * CHUNK, 0), NONE);
	TK_CHILD_EQ(hp_tls.pos - slot(t, 5), 100);
	TK_CHILD_EQ(first_wrong(slot(t, 5), 100, 5 * CHUNK, 0), NONE);
	return TK_CHILD_OK;
}

/*
 * Without the TSC every event goes through the slow path, which fills the
 * slot the hook took. A signal handler that interrupts it there and fills
 * the chunk up publishes the chunk; in a ring of 2 chunks the one just
 * published is also the one after the next, where a slot taken past a
 * full chunk's end lies: the slot is still the hook's while chunk head is
 * not full. Played here: the slot taken, 10 events of a "handler", then
 * the hook's slow path.
 */
static int child_two_chunks_filled_late(void *arg)
{
	(void)arg;
	record_range(0, CHUNK - 3); /* the last one is an enter */
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->nchunks, 2);
	TK_CHILD_TRUE(hp_tls.end == NULL);
	struct hp_raw *end, *taken = hp_take_slot(&end);
	record_range(2 * CHUNK, 10);
	TK_CHILD_EQ(t->head, 1);
	hp_buffer_record_slow(addr_at(CHUNK - 3), taken, 0);
	TK_CHILD_EQ(taken->addr, addr_at(CHUNK - 3));
	TK_CHILD_EQ(hp_tls.pos - slot(t, 1), 8); /* no slot taken again */
	return TK_CHILD_OK;
}

START_TEST(test_two_chunks_slot_filled_late_without_tsc)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "128K",
				    "HOOKPROF_CLOCK", "monotonic", NULL };
	run_ok(env, child_two_chunks_filled_late, NULL);
	analyze_order(NULL);
	ck_assert_uint_eq(A.events, CHUNK - 2 + 10);
	ck_assert_uint_eq(tk_calls_of(&A, F((CHUNK - 3) / 2)), 1);
	ck_assert_uint_eq(lost_of(0, HP_LOST_UNFILLED), 0);
	ck_assert_uint_eq(A.orphan_exits, 0);
}
END_TEST

START_TEST(test_ring_mode_drops_oldest)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "128K", NULL };
	run_ok(env, child_ring_drops, NULL);
	/* the trace holds exactly the last chunk and a half, in order */
	struct order o = { .next = 4 * CHUNK, .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, CHUNK + 100);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_uint_eq(o.next, RING_EVENTS);
	ck_assert_uint_eq(lost_of(0, HP_LOST_RING), 4 * CHUNK);
	ck_assert_uint_eq(A.info.end_lost, 4 * CHUNK);
	ck_assert_uint_eq(A.orphan_exits, 0);
	ck_assert_uint_eq(tk_calls_of(&A, F(2 * CHUNK)), 1);     /* the first pair kept */
	ck_assert_uint_eq(tk_calls_of(&A, F(2 * CHUNK - 1)), 0); /* the last pair dropped */
}
END_TEST

/*
 * Stream mode with a full ring. The owner (the child's main thread, on a
 * hand-built thread) waits only when hp_writer_threaded(), so the real
 * writer thread is started; it never sees the hand-built thread (not in
 * hp_threads) and idles. The test's consumer is slow on purpose: it takes
 * a chunk only when the ring is full (or the owner is done), and then
 * first waits until the owner shows `waiting` - which it must, since it
 * cannot go on until a chunk is released. No timing is involved. The
 * consumer holds the writer's lock throughout as the writer at work
 * (hp_writer_at_work): an owner then waits for its chunks, and encodes
 * its full ring itself only when the lock is free or held by another
 * owner (hp_writer_help; check_writer tests that side).
 */
struct full_ring_case {
	uint32_t nchunks;
	int monotonic; /* every event through the slow path */
	uint64_t events;
};

static uint32_t owner_done, consumer_locked;

/* Every tick of an earlier lap of the slot (*lap_max: the largest) is
 * below meta's stale_below, every one of this lap's at or above it. */
static int stale_below_between_laps(const struct hp_chunk_meta *meta, const struct hp_raw *ev,
				    size_t n, uint64_t *lap_max)
{
	int ok = meta->stale_below > *lap_max;
	*lap_max = 0;
	for (size_t i = 0; i < n; i++) {
		ok &= ev[i].tick >= meta->stale_below;
		if (ev[i].tick > *lap_max)
			*lap_max = ev[i].tick;
	}
	return ok;
}

static void *consume_when_full(void *arg)
{
	struct hp_thread *t = arg;
	struct ring_result *r = &shared->ring;
	if (hp_writer_lock_for_fork())
		return NULL; /* the counts then fail the test */
	__atomic_store_n(&hp_writer_at_work, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&consumer_locked, 1, __ATOMIC_RELEASE);
	for (;;) {
		/* done first: once it is set, the last head is visible */
		int done = __atomic_load_n(&owner_done, __ATOMIC_ACQUIRE);
		uint32_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		if (head - t->tail == t->nchunks) {
			while (!__atomic_load_n(&t->waiting, __ATOMIC_ACQUIRE))
				sched_yield();
			r->waits++;
		} else if (!done) {
			sched_yield();
			continue;
		} else if (head == t->tail) {
			__atomic_store_n(&hp_writer_at_work, 0, __ATOMIC_RELAXED);
			hp_writer_unlock_after_fork();
			return NULL;
		}
		const struct hp_raw *ev;
		struct hp_chunk_meta meta;
		uint32_t seq;
		size_t n = hp_buffer_take(t, NULL, &ev, &seq, &meta);
		if (seq != r->chunks && r->wrong_seq == NONE)
			r->wrong_seq = r->chunks;
		if (!stale_below_between_laps(&meta, ev, n, &r->lap_max[seq % t->nchunks]) &&
		    r->wrong_stale == NONE)
			r->wrong_stale = r->chunks;
		uint64_t wrong = first_wrong(ev, n, r->consumed, 0);
		if (wrong != NONE && r->wrong_at == NONE)
			r->wrong_at = r->consumed + wrong;
		r->consumed += n;
		r->chunks++;
		/* keep going after a wrong event: a stuck owner would hide it */
		hp_buffer_release(t, seq);
	}
}

static int child_full_ring(void *arg)
{
	const struct full_ring_case *fc = arg;
	struct ring_result *r = &shared->ring;
	r->wrong_at = r->wrong_seq = r->wrong_stale = NONE;
	hp_platform_init(fc->monotonic);
	TK_CHILD_EQ(set_mode(HP_MODE_STREAM, fc->nchunks), 0);
	TK_CHILD_EQ(hp_writer_init(), 0);
	hp_writer_start();
	TK_CHILD_EQ(hp_writer_threaded(), 1);
	struct hp_thread *t = hand_new(fc->nchunks);
	TK_CHILD_TRUE(t != NULL);
	hand_own(t);
	pthread_t th;
	TK_CHILD_EQ(pthread_create(&th, NULL, consume_when_full, t), 0);
	while (!__atomic_load_n(&consumer_locked, __ATOMIC_ACQUIRE))
		sched_yield();
	record_range(0, fc->events);
	hp_buffer_publish_self();
	__atomic_store_n(&owner_done, 1, __ATOMIC_RELEASE);
	TK_CHILD_EQ(pthread_join(th, NULL), 0);
	r->lost_ring = t->lost_ring;
	r->lost_reentry = t->lost_reentry;
	r->head = t->head;
	r->tail = t->tail;
	r->waiting = t->waiting;
	hp_tls = (struct hp_tls){ .retired = 1 };
	hand_free(t); /* the writer never knew it: LeakSanitizer would */
	return TK_CHILD_OK;
}

static uint64_t chunks_for(uint64_t events) { return (events + CHUNK - 1) / CHUNK; }

START_TEST(test_full_ring_owner_waits)
{
	/* 21 chunks through 4: the ring is full when chunks 3..20 are
	 * published, and each time the owner sleeps until a release wakes it */
	static const struct full_ring_case fc = { 4, 0, 20 * CHUNK + 100 };
	run_ok(NULL, child_full_ring, (void *)&fc);
	const struct ring_result *r = &shared->ring;
	ck_assert_uint_eq(r->chunks, chunks_for(fc.events));
	ck_assert_uint_eq(r->waits, chunks_for(fc.events) - fc.nchunks + 1);
	ck_assert_uint_eq(r->wrong_seq, NONE);
	ck_assert_uint_eq(r->wrong_stale, NONE);
	ck_assert_uint_eq(r->head, chunks_for(fc.events));
	ck_assert_uint_eq(r->tail, chunks_for(fc.events));
	ck_assert_uint_eq(r->waiting, 0);
}
END_TEST

START_TEST(test_slow_consumer_loses_nothing)
{
	/* the smallest ring, every event through the slow path (no TSC): the
	 * owner waits for each chunk and every event arrives once, in order */
	static const struct full_ring_case fc = { 2, 1, 40 * CHUNK + 7 };
	run_ok(NULL, child_full_ring, (void *)&fc);
	const struct ring_result *r = &shared->ring;
	ck_assert_uint_eq(r->consumed, fc.events);
	ck_assert_uint_eq(r->wrong_at, NONE);
	ck_assert_uint_eq(r->wrong_seq, NONE);
	ck_assert_uint_eq(r->wrong_stale, NONE);
	ck_assert_uint_eq(r->lost_ring, 0);
	ck_assert_uint_eq(r->lost_reentry, 0);
	ck_assert_uint_eq(r->waits, chunks_for(fc.events) - fc.nchunks + 1);
}
END_TEST

/*
 * The system calls of a switch to a full ring (the writer behind), counted
 * on the owner's thread: this binary's getpid and pthread_sigmask take the
 * place of libc's for libhookprof.a. A second thread holds the writer's
 * lock, so that the owner's help fails and it waits, then lets it go: the
 * owner then helps, under the hold its slow path already took.
 */
static __thread int counting_calls;
static __thread uint32_t getpid_calls, sigmask_calls;

pid_t getpid(void)
{
	getpid_calls += counting_calls;
	return (pid_t)syscall(SYS_getpid);
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigmask_calls += counting_calls;
	/* As glibc's: its own two signals (cancellation, setxid) stay open. */
	sigset_t own;
	if (set && how != SIG_UNBLOCK) {
		own = *set;
		sigdelset(&own, SIGRTMIN - 2);
		sigdelset(&own, SIGRTMIN - 1);
		set = &own;
	}
	return syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8) ? errno : 0;
}

static struct hp_thread *owner_thread;
static uint32_t writer_held;

/* Takes the writer's lock as the writer at work and lets it go once the
 * owner waits (a mutex is let go by the thread that took it). */
static void *hold_writer_until_waiting(void *arg)
{
	(void)arg;
	if (hp_writer_lock_for_fork())
		return NULL; /* the owner never waits: the counts fail the test */
	__atomic_store_n(&hp_writer_at_work, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&writer_held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&owner_thread, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&owner_thread->waiting, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&hp_writer_at_work, 0, __ATOMIC_RELAXED);
	hp_writer_unlock_after_fork();
	return NULL;
}

static int child_full_ring_calls(void *arg)
{
	(void)arg;
	record_range(0, 2 * CHUNK - 1); /* both chunks of the ring, but one event */
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->nchunks, 2);
	/* Without MADV_WIPEONFORK (before Linux 4.14) there is no memory mark,
	 * and every switch asks getpid: nothing to count. */
	if (!hp_runtime_marked_ours())
		return TK_CHILD_OK;
	/* Until the writer has taken chunk 0 the ring would look full to the
	 * switch below for a reason of its own: wait for it to be empty. */
	hp_buffer_publish_self();
	while (__atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) != t->head)
		sched_yield();
	pthread_t th;
	TK_CHILD_EQ(pthread_create(&th, NULL, hold_writer_until_waiting, NULL), 0);
	while (!__atomic_load_n(&writer_held, __ATOMIC_ACQUIRE))
		sched_yield();
	record_range(0, 2 * CHUNK - 1); /* chunk 2 (slot 0) full, chunk 3 (slot 1) all but one */
	__atomic_store_n(&owner_thread, t, __ATOMIC_RELEASE);
	uint32_t fast_before = t->fast_switches;
	counting_calls = 1;
	record_range(2 * CHUNK - 1, 2); /* chunk 3's last, then the switch to 4: full */
	counting_calls = 0;
	TK_CHILD_EQ(pthread_join(th, NULL), 0);
	TK_CHILD_EQ(t->fast_switches, fast_before + 1); /* not a 64th */
	TK_CHILD_EQ(getpid_calls, 0);
	TK_CHILD_EQ(sigmask_calls, 2); /* the slow path's hold; its help runs under it */
	return TK_CHILD_OK;
}

START_TEST(test_full_ring_switch_few_system_calls)
{
	const char *const env[] = { "HOOKPROF_BUFFER", "128K", NULL };
	run_ok(env, child_full_ring_calls, NULL);
	analyze_order(NULL);
	ck_assert_uint_eq(tk_lost_total(&A), 0);
}
END_TEST

static void hook_fx(int exit_too)
{
	__cyg_profile_func_enter((void *)FX, (void *)1);
	if (exit_too)
		__cyg_profile_func_exit((void *)FX, (void *)1);
}

/* Chunk switches without system calls, each with its own time noted
 * after the event that made it. */
static int child_fast_switch(void *arg)
{
	(void)arg;
	record_range(0, 3 * CHUNK + 10);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->head, 3);
	TK_CHILD_EQ(t->fast_switches, 3);
	TK_CHILD_EQ(t->switching, 0);
	TK_CHILD_EQ(t->held_in, t->held_out);
	TK_CHILD_EQ(hp_tls.busy, 0);
	/* the slot after the switch's event, and a tick no older than it */
	TK_CHILD_EQ(t->chunk[3 % t->nchunks].own.at, 1);
	TK_CHILD_TRUE(t->chunk[3 % t->nchunks].own.tick >= slot(t, 3)[0].tick);
	TK_CHILD_TRUE(hp_tls.end == (hp_tick_is_tsc ? slot(t, 3) + CHUNK : NULL));
	return TK_CHILD_OK;
}

struct owns {
	uint64_t events, owns, own_at[8];
};

static int count_owns(void *arg, const struct hp_analysis *a, uint32_t stream,
		      const struct hp_ev *ev, size_t n)
{
	(void)a;
	(void)stream;
	struct owns *o = arg;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind != HP_EV_OWN) {
			o->events++;
		} else if (o->owns < 8) {
			o->own_at[o->owns++] = o->events;
		}
	}
	return 0;
}

START_TEST(test_switch_notes_own_time)
{
	run_ok(NULL, child_fast_switch, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, 3 * CHUNK + 10);
	ck_assert_uint_eq(o.wrong_at, NONE);
	/* the buffer's start after the first event, each switch after the
	 * first event of its chunk */
	struct owns w = { 0 };
	hp_analysis_free(&A);
	ck_assert_msg(hp_analyze(path, 0, count_owns, &w, &A, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(w.owns, 4);
	ck_assert_uint_eq(w.own_at[0], 1);
	ck_assert_uint_eq(w.own_at[1], CHUNK + 1);
	ck_assert_uint_eq(w.own_at[2], 2 * CHUNK + 1);
	ck_assert_uint_eq(w.own_at[3], 3 * CHUNK + 1);
}
END_TEST

static int child_busy(void *arg)
{
	(void)arg;
	/* busy as inside the slow path, before the thread has a buffer (an
	 * instrumented function called while the runtime starts): dropped,
	 * counted for no stream, and nothing is started */
	hp_tls.busy = 1;
	hook_fx(0);
	hp_tls.busy = 0;
	TK_CHILD_TRUE(hp_tls.thread == NULL);
	TK_CHILD_TRUE(hp_threads == NULL);
	TK_CHILD_EQ(hp_runtime_lost(HP_LOST_REENTRY), 1);
	/* a full first chunk: the next event takes the slow path */
	record_range(0, CHUNK);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_TRUE(hp_tls.pos == t->base + CHUNK);
	hp_tls.busy = 1;
	hook_fx(1);
	hook_fx(0);
	hp_tls.busy = 0;
	/* three events, the thread's: nothing stored, nothing published */
	TK_CHILD_EQ(t->lost_reentry, 3);
	TK_CHILD_EQ(hp_runtime_lost(HP_LOST_REENTRY), 1);
	/* each hook took a slot past the chunk's end, and gave it back when
	 * its slow path dropped the event */
	TK_CHILD_TRUE(hp_tls.pos == t->base + CHUNK);
	TK_CHILD_EQ(t->head, 0);
	/* and recording goes on where it was */
	record_range(CHUNK, 4);
	TK_CHILD_EQ(t->head, 1);
	TK_CHILD_EQ(t->chunk[0].len, CHUNK);
	TK_CHILD_TRUE(hp_tls.pos == t->base + CHUNK + 4);
	return TK_CHILD_OK;
}

START_TEST(test_busy_events_lost_as_reentry)
{
	run_ok(NULL, child_busy, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, CHUNK + 4);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_ptr_null(tk_stat_of(&A, FX));
	ck_assert_uint_eq(lost_of(0, HP_LOST_REENTRY), 3);
	ck_assert_uint_eq(lost_of(HP_STREAM_NONE, HP_LOST_REENTRY), 1);
	ck_assert_uint_eq(A.info.end_lost, 4);
}
END_TEST

static int child_late(void *arg)
{
	(void)arg;
	record_range(0, 10);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	hp_buffer_retire_self(0);
	/* the partial chunk is published and the thread marked exited */
	TK_CHILD_EQ(t->exited, 1);
	TK_CHILD_TRUE(t->tls == NULL);
	TK_CHILD_EQ(t->head, 1);
	TK_CHILD_EQ(t->chunk[0].len, 10);
	TK_CHILD_TRUE(hp_tls.thread == NULL);
	TK_CHILD_EQ(hp_tls.retired, 1);
	TK_CHILD_EQ(hp_tls.busy, 0);
	TK_CHILD_TRUE(hp_tls.pos == NULL && hp_tls.end == NULL);
	/* later events are counted late, stored nowhere, and make no buffer */
	hook_fx(1);
	record_range(10, 3);
	TK_CHILD_EQ(hp_runtime_lost(HP_LOST_LATE), 5);
	TK_CHILD_EQ(t->head, 1);
	TK_CHILD_TRUE(hp_threads == t && t->next == NULL);
	TK_CHILD_TRUE(hp_tls.thread == NULL);
	return TK_CHILD_OK;
}

START_TEST(test_events_after_retire_are_late)
{
	/* ring mode: no writer thread, so the retired thread is not freed
	 * under the child's feet */
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "512K", NULL };
	run_ok(env, child_late, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, 10);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_ptr_null(tk_stat_of(&A, FX));
	ck_assert_uint_eq(lost_of(HP_STREAM_NONE, HP_LOST_LATE), 5);
	ck_assert_uint_eq(lost_of(0, HP_LOST_RING) + lost_of(0, HP_LOST_REENTRY), 0);
	ck_assert_uint_eq(A.info.end_lost, 5);
	ck_assert_uint_eq(tk_streams_seen(&A), 1);
}
END_TEST

/* A vfork child runs on this thread's memory: with the state set aside it
 * stores and counts nothing, and the parent records on where it was. */
static int child_suspended(void *arg)
{
	(void)arg;
	record_range(0, 10);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	struct hp_tls saved;
	hp_buffer_suspend_self(&saved);
	for (uint64_t i = 0; i < CHUNK; i++) /* more than a chunk of events */
		hook_fx(1);
	TK_CHILD_TRUE(hp_tls.thread == NULL && hp_tls.pos == NULL);
	TK_CHILD_EQ(t->head, 0);
	hp_buffer_resume_self(&saved);
	TK_CHILD_TRUE(hp_tls.thread == t);
	record_range(10, 10);
	TK_CHILD_EQ(hp_runtime_lost(HP_LOST_LATE), 0);
	TK_CHILD_EQ(t->lost_reentry, 0);
	return TK_CHILD_OK;
}

START_TEST(test_suspended_thread_records_nothing)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "512K", NULL };
	run_ok(env, child_suspended, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, 20);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_ptr_null(tk_stat_of(&A, FX));
	ck_assert_uint_eq(A.info.end_lost, 0);
}
END_TEST

/* A fatal signal's flush stops the other threads (their end goes NULL) and
 * not itself: it records on. */
static int child_stop_others(void *arg)
{
	(void)arg;
	record_range(0, 4);
	struct hp_thread *other = hand_new(2);
	TK_CHILD_TRUE(other != NULL);
	struct hp_tls other_tls = { .pos = other->base, .end = other->base + CHUNK, .thread = other };
	other->tls = &other_tls;
	pthread_mutex_lock(&hp_threads_lock);
	other->next = hp_threads;
	hp_threads = other;
	pthread_mutex_unlock(&hp_threads_lock);
	struct hp_raw *own_end = hp_tls.end;
	hp_buffer_stop_others();
	TK_CHILD_TRUE(other_tls.end == NULL);
	TK_CHILD_TRUE(hp_tls.end == own_end);
	/* a chunk and more: the stopping thread switches chunks as ever */
	record_range(4, CHUNK);
	TK_CHILD_EQ(hp_tls.thread->head, 1);
	pthread_mutex_lock(&hp_threads_lock);
	hp_threads = other->next;
	pthread_mutex_unlock(&hp_threads_lock);
	hand_free(other);
	return TK_CHILD_OK;
}

START_TEST(test_stop_others_spares_the_caller)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "512K", NULL };
	run_ok(env, child_stop_others, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, CHUNK + 4);
	ck_assert_uint_eq(o.wrong_at, NONE);
}
END_TEST

/* -------------------------------------------------------------- limits */

START_TEST(test_snapshot_partial_nothing_to_copy)
{
	struct hp_tls tls = { 0 };
	uint32_t seq = 55;
	uint64_t unfilled;
	hand_publish(T, 0, 3);
	/* the owner has not stored anything in its new chunk yet */
	T->tls = &tls;
	tls.pos = slot(T, 1);
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	/* the owner between publishing and taking its next chunk: pos is still
	 * at the end of the chunk it published, which is not the partial one */
	tls.pos = slot(T, 0) + 3;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	tls.pos = slot(T, 3) + CHUNK; /* end of the buffer, wrapping to slot 0 */
	T->head = T->tail = 4;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	/* an exited owner published everything; a retired one has no tls */
	T->head = T->tail = 1;
	tls.pos = slot(T, 1) + 5;
	T->exited = 1;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	T->exited = 0;
	T->tls = NULL;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	ck_assert_uint_eq(seq, 55);
	/* and the control: with tls back, the 5 events are there */
	for (uint64_t j = 0; j < 5; j++)
		slot(T, 1)[j] = (struct hp_raw){ addr_at(3 + j), tick_at(3 + j) };
	T->tls = &tls;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 5);
	ck_assert_uint_eq(seq, 1);
}
END_TEST

START_TEST(test_snapshot_partial_skips_slot_being_filled)
{
	/* The owner takes a slot, then fills it: a flush in between finds the
	 * slot holding an event of an earlier lap of the ring (a tick older
	 * than the chunk's previous publication) or zeros, and leaves it out: the
	 * newest (its hook runs on its core) or any other (its hook was
	 * interrupted by a signal handler, whose events follow). */
	struct hp_tls tls = { 0 };
	uint32_t seq;
	uint64_t unfilled;
	T->tls = &tls;
	T->chunk[0].published_at = tick_at(50) - 1; /* its previous lap's */
	struct hp_raw *s = slot(T, 0);
	for (uint64_t j = 0; j < 10; j++)
		s[j] = (struct hp_raw){ addr_at(100 + j), tick_at(100 + j) };
	s[10] = (struct hp_raw){ addr_at(3), tick_at(3) }; /* an earlier lap's */
	tls.pos = s + 11;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 10);
	ck_assert_uint_eq(first_wrong(scratch, 10, 100, 1), NONE);
	ck_assert_uint_eq(unfilled, 0); /* the newest: its event comes after the end */
	s[10] = (struct hp_raw){ 0, 0 }; /* a fresh page's */
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 10);
	ck_assert_uint_eq(unfilled, 0);
	/* filled now, with a tick older than the slot before it (a hook whose
	 * tick was read before a handler's events): still an event */
	s[10] = (struct hp_raw){ addr_at(110), tick_at(60) };
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 11);
	ck_assert_uint_eq(scratch[10].tick, tick_at(60));
	/* one in the middle, whose hook a handler interrupted: its event is
	 * older than the trace's end, counted lost */
	s[4] = (struct hp_raw){ addr_at(20), tick_at(20) };
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 10);
	ck_assert_uint_eq(first_wrong(scratch, 4, 100, 1), NONE);
	ck_assert_uint_eq(first_wrong(scratch + 4, 5, 105, 1), NONE);
	ck_assert_uint_eq(unfilled, 1);
	/* and the newest too: the one in the middle alone is counted */
	s[10] = (struct hp_raw){ 0, 0 };
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 9);
	ck_assert_uint_eq(unfilled, 1);
	s[0] = (struct hp_raw){ 0, 0 }; /* the only slot, not filled yet */
	tls.pos = s + 1;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), 0);
	ck_assert_uint_eq(unfilled, 0);
}
END_TEST

/* The owner's publishes, as far as head tells, 5 ms apart. */
static void *publish_two_later(void *arg)
{
	struct hp_thread *t = arg;
	for (int i = 0; i < 2; i++) {
		usleep(5000);
		__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

START_TEST(test_await_fill_when_nobody_can_fill)
{
	/* A slot not filled yet is waited for only if its hook may run on
	 * meanwhile: not on its owner's own thread (its hook runs on when
	 * this returns), nor while the owner waits for the consumer or has
	 * exited. Waiting here would take the minute set below. */
	hp_buffer_await_fill_ns = 60ull * 1000 * 1000 * 1000;
	struct hp_raw *s = slot(T, 0);
	s[0] = (struct hp_raw){ addr_at(3), tick_at(3) };
	hand_own(T);
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(50)), 0);
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(3)), 1); /* filled */
	hp_tls = (struct hp_tls){ 0 };
	T->waiting = 1; /* for chunk 4: chunk 0, the one this consumer holds, is not free */
	T->head = 4;
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(50)), 0);
	T->waiting = 0;
	T->exited = 1;
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(50)), 0);
	/* An owner that publishes 2 chunks meanwhile runs: its handler jumped
	 * away from the hook. */
	T->exited = 0;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, publish_two_later, T), 0);
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(50)), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_eq(T->head, 6);
}
END_TEST

struct late_slot {
	struct hp_raw *slot;
	uint64_t addr, tick;
};

static void *fill_slot_late(void *arg)
{
	struct late_slot *f = arg;
	usleep(5000);
	hp_raw_fill(f->slot, f->addr, f->tick);
	return NULL;
}

START_TEST(test_await_fill_owner_woken_by_release)
{
	/* The owner slept, in the handler that interrupted its hook, for chunk
	 * 4 to be free; the consumer released chunk 0 (tail 1), which woke it,
	 * and now holds chunk 1, whose slot the hook will fill once the
	 * handler returns. The owner's waiting flag is still up until it runs:
	 * the slot is waited for, not left out. (From the review.) */
	hp_buffer_await_fill_ns = 60ull * 1000 * 1000 * 1000;
	T->head = 4;
	T->tail = 1;
	T->waiting = 1;
	struct hp_raw *s = slot(T, 1);
	s[0] = (struct hp_raw){ addr_at(3), tick_at(3) }; /* an earlier lap's */
	struct late_slot f = { s, addr_at(60), tick_at(60) };
	pthread_t filler;
	ck_assert_int_eq(pthread_create(&filler, NULL, fill_slot_late, &f), 0);
	ck_assert_int_eq(hp_buffer_await_fill(T, s, tick_at(50)), 1);
	ck_assert_int_eq(pthread_join(filler, NULL), 0);
	ck_assert_uint_eq(s[0].addr, addr_at(60));
}
END_TEST

START_TEST(test_fork_skips_what_the_encoder_took_of_the_oldest_chunk)
{
	/* The oldest chunk not released was encoded in part (the owner left
	 * it at a slot filled late): the frames the encoder gives hold its
	 * first 2 events, which the fork must not replay again. */
	static const uint64_t open_frames[] = { F(0), F(1) };
	hand_own(T);
	struct hp_raw *s = slot(T, 0);
	s[0] = (struct hp_raw){ F(0), 10 };
	s[1] = (struct hp_raw){ F(1), 11 };
	s[2] = (struct hp_raw){ F(1) | HP_RAW_EXIT, 12 };
	s[3] = (struct hp_raw){ F(2), 13 };
	T->chunk[0].len = 4;
	T->head = 1;
	hp_tls.pos = slot(T, 1);
	hp_buffer_note_fork(open_frames, 2, 2, 77);
	const struct hp_raw *ev;
	ck_assert_uint_eq(hp_buffer_inherited(&ev), 2);
	ck_assert_uint_eq(ev[0].addr, F(0));
	ck_assert_uint_eq(ev[1].addr, F(2));
	ck_assert_uint_eq(ev[1].tick, 77);
	/* and the control: nothing encoded of it, all 4 replayed */
	hp_buffer_note_fork(open_frames, 0, 0, 77);
	ck_assert_uint_eq(hp_buffer_inherited(&ev), 2);
	ck_assert_uint_eq(ev[1].addr, F(2));
}
END_TEST

START_TEST(test_snapshot_partial_full_chunk)
{
	/* a chunk filled to the last slot, whose publish has not happened yet */
	struct hp_tls tls = { 0 };
	T->tls = &tls;
	T->head = T->tail = 3;
	struct hp_raw *s = slot(T, 3);
	for (uint64_t j = 0; j < CHUNK; j++)
		s[j] = (struct hp_raw){ addr_at(j), tick_at(j) };
	tls.pos = s + CHUNK;
	uint32_t seq;
	uint64_t unfilled;
	ck_assert_uint_eq(hp_buffer_snapshot_partial(T, scratch, &seq, &unfilled, 0), CHUNK);
	ck_assert_uint_eq(seq, 3);
	ck_assert_uint_eq(first_wrong(scratch, CHUNK, 0, 1), NONE);
	ck_assert_uint_eq(scratch[CHUNK].addr, 0xa5a5a5a5a5a5a5a5ull);
}
END_TEST

START_TEST(test_ring_take_clamps_length)
{
	/* a length read while the owner rewrites it may be anything: ring mode
	 * copies at most one chunk into the consumer's scratch */
	ck_assert_int_eq(set_mode(HP_MODE_RING, 4), 0);
	hand_publish(T, 0, CHUNK);
	T->chunk[0].len = 5000;
	const struct hp_raw *ev;
	uint32_t seq;
	ck_assert_uint_eq(hp_buffer_take(T, scratch, &ev, &seq, NULL), CHUNK);
	ck_assert_uint_eq(first_wrong(ev, CHUNK, 0, 1), NONE);
	for (size_t j = 0; j < GUARD_EVENTS; j++)
		ck_assert_uint_eq(scratch[CHUNK + j].addr, 0xa5a5a5a5a5a5a5a5ull);
	ck_assert_uint_eq(T->tail, 1);
}
END_TEST

static int child_two_chunks(void *arg)
{
	(void)arg;
	/* 200K is three chunks and an eighth: rounded down to a power of two, 2 */
	record_range(0, 4 * CHUNK + 1);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	TK_CHILD_EQ(t->nchunks, 2);
	TK_CHILD_EQ(t->map_bytes % 4096, 0);
	TK_CHILD_EQ(t->head, 4);
	TK_CHILD_EQ(t->tail, 3); /* two chunks kept: 3 and the one filling */
	TK_CHILD_EQ(t->lost_ring, 3 * CHUNK);
	TK_CHILD_EQ(first_wrong(slot(t, 3), CHUNK, 3 * CHUNK, 0), NONE);
	TK_CHILD_EQ(first_wrong(slot(t, 4), 1, 4 * CHUNK, 0), NONE);
	return TK_CHILD_OK;
}

START_TEST(test_buffer_size_rounds_down)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "200K", NULL };
	run_ok(env, child_two_chunks, NULL);
	analyze_order(NULL);
	ck_assert_uint_eq(A.events, CHUNK + 1);
	ck_assert_uint_eq(A.info.end_lost, 3 * CHUNK);
}
END_TEST

static int child_publish_self(void *arg)
{
	(void)arg;
	record_range(0, 2);
	struct hp_thread *t = hp_tls.thread;
	TK_CHILD_TRUE(t != NULL);
	hp_buffer_publish_self();
	TK_CHILD_EQ(t->head, 1);
	TK_CHILD_EQ(t->chunk[0].len, 2);
	TK_CHILD_TRUE(hp_tls.pos == slot(t, 1));
	/* nothing new: no empty chunk is published */
	hp_buffer_publish_self();
	TK_CHILD_EQ(t->head, 1);
	TK_CHILD_TRUE(hp_tls.pos == slot(t, 1));
	record_range(2, 2);
	TK_CHILD_TRUE(hp_tls.pos == slot(t, 1) + 2);
	TK_CHILD_EQ(first_wrong(slot(t, 1), 2, 2, 0), NONE);
	return TK_CHILD_OK;
}

START_TEST(test_publish_self_skips_empty_chunk)
{
	const char *const env[] = { "HOOKPROF_MODE", "ring", "HOOKPROF_BUFFER", "256K", NULL };
	run_ok(env, child_publish_self, NULL);
	struct order o = { .wrong_at = NONE };
	analyze_order(&o);
	ck_assert_uint_eq(A.events, 4);
	ck_assert_uint_eq(o.wrong_at, NONE);
	ck_assert_uint_eq(o.resets, 0);
}
END_TEST

static int child_finished(void *arg)
{
	(void)arg;
	/* a writer thread runs, but after the final flush nobody consumes:
	 * a stream-mode owner must drop the oldest chunk, not wait forever */
	hp_platform_init(0);
	TK_CHILD_EQ(set_mode(HP_MODE_STREAM, 2), 0);
	TK_CHILD_EQ(hp_writer_init(), 0);
	hp_writer_start();
	TK_CHILD_EQ(hp_writer_threaded(), 1);
	hp_buffer_set_finished();
	struct hp_thread *t = hand_new(2);
	TK_CHILD_TRUE(t != NULL);
	hand_own(t);
	record_range(0, 3 * CHUNK + 1);
	TK_CHILD_EQ(t->head, 3);
	TK_CHILD_EQ(t->tail, 2);
	TK_CHILD_EQ(t->lost_ring, 2 * CHUNK);
	TK_CHILD_EQ(t->waiting, 0);
	TK_CHILD_EQ(first_wrong(slot(t, 2), CHUNK, 2 * CHUNK, 0), NONE);
	hp_tls = (struct hp_tls){ .retired = 1 };
	hand_free(t);
	return TK_CHILD_OK;
}

START_TEST(test_finished_owner_drops_instead_of_waiting)
{
	run_ok(NULL, child_finished, NULL);
}
END_TEST

static int child_sequence_wrap(void *arg)
{
	(void)arg;
	/*
	 * head and tail are 32-bit counters: after 2^32 chunks they wrap.
	 * A thread near the wrap (after about 1.8e13 events) with 4 chunks:
	 * chunks UINT32_MAX - 1 and UINT32_MAX are published, unconsumed,
	 * and the owner moves on to chunk 0. Those three live chunks must be
	 * three different slots of the ring (which is why hp_buffer_init
	 * makes the chunk count a power of two: with 3, chunk 0 would land
	 * on chunk UINT32_MAX's slot).
	 */
	hp_platform_init(0);
	TK_CHILD_EQ(set_mode(HP_MODE_RING, 4), 0);
	struct hp_thread *t = hand_new(4);
	TK_CHILD_TRUE(t != NULL);
	t->head = t->tail = UINT32_MAX - 1;
	hand_own(t);
	record_range(0, 2 * CHUNK + 1);
	TK_CHILD_EQ(t->head, 0); /* wrapped */
	TK_CHILD_EQ(t->tail, UINT32_MAX - 1);
	TK_CHILD_EQ(t->lost_ring, 0); /* two of three chunks published: no drop */
	hp_tls = (struct hp_tls){ .retired = 1 };
	struct hp_raw *copy = hp_pages_alloc(HP_CHUNK_BYTES);
	TK_CHILD_TRUE(copy != NULL);
	const struct hp_raw *ev;
	uint32_t seq;
	TK_CHILD_EQ(hp_buffer_take(t, copy, &ev, &seq, NULL), CHUNK);
	TK_CHILD_EQ(seq, UINT32_MAX - 1);
	TK_CHILD_EQ(first_wrong(ev, CHUNK, 0, 0), NONE);
	TK_CHILD_EQ(hp_buffer_take(t, copy, &ev, &seq, NULL), CHUNK);
	TK_CHILD_EQ(seq, UINT32_MAX);
	/* the events of chunk UINT32_MAX, not the one written for chunk 0 */
	TK_CHILD_EQ(ev[0].addr, addr_at(CHUNK));
	TK_CHILD_EQ(first_wrong(ev, CHUNK, CHUNK, 0), NONE);
	hp_pages_free(copy, HP_CHUNK_BYTES);
	hand_free(t);
	return TK_CHILD_OK;
}

START_TEST(test_sequence_wrap_keeps_chunks_apart)
{
	run_ok(NULL, child_sequence_wrap, NULL);
}
END_TEST

static Suite *buffer_suite(void)
{
	Suite *s = suite_create("buffer");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_set_timeout(core, 30);
	tcase_add_test(core, test_take_nothing_published);
	tcase_add_test(core, test_stream_budget_to_the_busy);
	tcase_add_test(core, test_stream_budget_idle_keep_two);
	tcase_add_test(core, test_stream_budget_two_busy_full);
	tcase_add_test(core, test_stream_budget_busy_among_idle);
	tcase_add_test(core, test_stream_budget_worker_gets_whole_buffer);
	tcase_add_test(core, test_handler_while_ring_doubles);
	tcase_add_test(core, test_snapshot_of_owner_waiting_for_a_chunk);
	tcase_add_test(core, test_ring_grows_at_a_later_lap);
	tcase_add_test(core, test_stream_budget_small_buffers);
	tcase_add_test(core, test_ring_no_budget);
	tcase_add_test(core, test_many_threads_smaller_chunks);
	tcase_add_test(core, test_many_threads_ring_mode_keeps_chunks);
	tcase_add_test(core, test_fork_beside_many_threads_full_chunks);
#ifdef __SANITIZE_THREAD__
	/* A child that starts threads after a fork with threads: TSan cannot
	 * ("dup thread with used id"). */
	printf("skip - check_buffer test_fork_deep_inherits_into_a_smaller_ring "
	       "(under thread: threads started after a fork with threads)\n");
#else
	tcase_add_test(core, test_fork_deep_inherits_into_a_smaller_ring);
#endif
	tcase_add_test(core, test_small_chunk_switch_holds_handlers);
	tcase_add_test(core, test_largest_chunk_switch_holds_handlers);
	tcase_add_test(core, test_small_chunk_ring_grows_to_the_buffer);
	tcase_add_test(core, test_take_oldest_first);
	tcase_add_test(core, test_take_wraps_around);
	tcase_add_test(core, test_ring_take_copies_and_claims);
	tcase_add_test(core, test_release_wakes_waiting_owner);
	tcase_add_test(core, test_snapshot_partial_copies_unpublished);
	tcase_add_test(core, test_first_event_creates_buffer);
	tcase_add_test(core, test_ring_mode_drops_oldest);
	tcase_add_test(core, test_two_chunks_slot_filled_late_without_tsc);
	tcase_add_test(core, test_full_ring_owner_waits);
	tcase_add_test(core, test_full_ring_switch_few_system_calls);
	tcase_add_test(core, test_slow_consumer_loses_nothing);
	tcase_add_test(core, test_switch_notes_own_time);
	tcase_add_test(core, test_busy_events_lost_as_reentry);
	tcase_add_test(core, test_events_after_retire_are_late);
	tcase_add_test(core, test_suspended_thread_records_nothing);
	tcase_add_test(core, test_stop_others_spares_the_caller);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 30);
	tcase_add_test(limits, test_snapshot_partial_nothing_to_copy);
	tcase_add_test(limits, test_snapshot_partial_skips_slot_being_filled);
	tcase_add_test(limits, test_await_fill_when_nobody_can_fill);
	tcase_add_test(limits, test_await_fill_owner_woken_by_release);
	tcase_add_test(limits, test_fork_skips_what_the_encoder_took_of_the_oldest_chunk);
	tcase_add_test(limits, test_snapshot_partial_full_chunk);
	tcase_add_test(limits, test_ring_take_clamps_length);
	tcase_add_test(limits, test_buffer_size_rounds_down);
	tcase_add_test(limits, test_publish_self_skips_empty_chunk);
	tcase_add_test(limits, test_finished_owner_drops_instead_of_waiting);
	tcase_add_test(limits, test_sequence_wrap_keeps_chunks_apart);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	shared = tk_map_shared(sizeof(*shared));
	tk_child_messages_to(shared->msg, sizeof(shared->msg));
	return tk_run_suite_in_top_dir(buffer_suite(), top, sizeof(top), "check_buffer");
}
