/*
 * check_writer.c - the consumer of lib/hp_writer.c: published chunks become
 * EVENTS records, with a THREAD record when a stream first writes and
 * another at its end, LOST records for what was counted lost, and an END
 * record whose totals match all of these.
 *
 * The writer keeps its state in statics (dictionary, totals, the output
 * buffer), so each test forks a child, as check_runtime.c does, that opens
 * a trace with hp_output_create, builds threads by hand (a struct
 * hp_thread per stream, in hp_threads, with events of a known pattern
 * written straight into its chunks), drives hp_writer_drain /
 * hp_writer_flush_all / hp_writer_finish and exits. The runtime itself
 * never starts: no hook is called. The parent reads the trace back, as a
 * list of records and with hp_analyze. A child stops at its first failed
 * check and reports it through shared memory and its exit status.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hp_buffer.h"
#include "hp_config.h"
#include "hp_format.h"
#include "hp_output.h"
#include "hp_runtime.h"
#include "hp_writer.h"
#include "testkit.h"

#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_trace.h"

#define CHUNK ((uint64_t)HP_CHUNK_EVENTS)
#define NONE UINT64_MAX
#define MAX_STREAMS 8
/* No such thread: /proc has no name for it, so its own name is used. */
#define FAKE_TID 0x40000000u

/*
 * Event i of stream s: the enter of function F((i / 2) % NF) when i is
 * even, its exit when i is odd; every stream uses the same NF functions
 * (one dictionary for the trace) but ticks of its own.
 */
#define NF 40
#define F(k) (0x100000u + 16u * (uint64_t)(k))
#define FA F(100)
#define FB F(101)
#define FC F(102)

static uint64_t pat_addr(uint64_t i) { return F((i / 2) % NF) | (i & 1 ? HP_RAW_EXIT : 0); }
static uint64_t pat_tick(uint32_t s, uint64_t i) { return 1000000ull * (s + 1) + 5 * i; }

/* ------------------------------------------------------------ fixture */

struct shared {
	char msg[1024];
	pid_t child;
};
static struct shared *shared;

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char path[PATH_MAX + 256];
static char err[1024];
static struct hp_analysis A;
static int analyzed;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/t.hookprof", dir);
	memset(shared, 0, sizeof(*shared));
	analyzed = 0;
	err[0] = 0;
}

static void free_records(void);

static void teardown(void)
{
	free_records();
	if (analyzed)
		hp_analysis_free(&A);
	tk_remove_tree(dir);
}

/* ---------------------------------------------------------- the child */

/* A helper that checks things itself: pass its failure on. */
#define CHILD_DO(call)                                                                 \
	do {                                                                           \
		int rc_ = (call);                                                      \
		if (rc_)                                                               \
			return rc_;                                                    \
	} while (0)

/* Runs fn in a child, which must exit with 0. It ends with _exit: no
 * atexit handler or destructor runs in it. */
static void run_ok(tk_child_fn fn, void *arg)
{
	pid_t pid = tk_fork();
	if (pid == 0)
		_exit(fn(arg));
	shared->child = pid;
	int rc = tk_wait(pid);
	ck_assert_msg(rc == 0, "child exited with %d: %s", rc, shared->msg);
}

/* The writer's world without the runtime: clock, buffers' mode, encoder,
 * the trace file, and its first CLOCK record (a reader needs two). */
static int writer_open(enum hp_mode mode)
{
	hp_platform_init(0);
	struct hp_config cfg = { .mode = mode, .buffer_bytes = 4 * HP_CHUNK_BYTES };
	TK_CHILD_EQ(hp_buffer_init(&cfg), 0);
	TK_CHILD_EQ(hp_writer_init(), 0);
	char e[512] = "";
	if (hp_output_create(path, "check_writer", getpid(), e, sizeof(e)))
		return tk_child_failed(__LINE__, e, 0, 0, 0);
	hp_writer_clock_record();
	return TK_CHILD_OK;
}

/* A traced thread as thread_create makes it: 4 chunks, in hp_threads. Its
 * buffer is mmap'd as the writer's hp_buffer_free_thread expects; the
 * struct itself is not in it and stays readable after the writer retires
 * the thread. */
static struct hp_thread *hand_thread(uint32_t stream, uint32_t tid, const char *name)
{
	struct hp_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nchunks = 4;
	t->chunk_events = HP_CHUNK_EVENTS;
	t->map_bytes = (size_t)t->nchunks * HP_CHUNK_BYTES;
	t->base = hp_pages_alloc(t->map_bytes);
	t->chunk = calloc(t->nchunks, sizeof(*t->chunk));
	if (!t->base || !t->chunk)
		return NULL;
	t->stream = stream;
	t->tid = tid;
	snprintf(t->name, sizeof(t->name), "%s", name);
	pthread_mutex_lock(&hp_threads_lock);
	t->next = hp_threads;
	hp_threads = t;
	pthread_mutex_unlock(&hp_threads_lock);
	return t;
}

static struct hp_raw *slot(const struct hp_thread *t, uint32_t seq)
{
	return t->base + (size_t)(seq % t->nchunks) * CHUNK;
}

/* The owner's publish of n given events. */
static void publish_raw(struct hp_thread *t, const struct hp_raw *ev, size_t n)
{
	memcpy(slot(t, t->head), ev, n * sizeof(*ev));
	t->chunk[t->head % t->nchunks].len = (uint32_t)n;
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
}

/* The owner's publish of events first .. first + n - 1 of its pattern. */
static void publish(struct hp_thread *t, uint64_t first, size_t n)
{
	struct hp_raw *s = slot(t, t->head);
	for (size_t j = 0; j < n; j++)
		s[j] = (struct hp_raw){ pat_addr(first + j), pat_tick(t->stream, first + j) };
	t->chunk[t->head % t->nchunks].len = (uint32_t)n;
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
}

static int listed(const struct hp_thread *t)
{
	int found = 0;
	pthread_mutex_lock(&hp_threads_lock);
	for (const struct hp_thread *u = hp_threads; u; u = u->next)
		found |= u == t;
	pthread_mutex_unlock(&hp_threads_lock);
	return found;
}

/* ---------------------------------------------------- reading a trace */

struct rec {
	uint32_t type, size;
	uint8_t *p;
};
static struct rec *recs;
static size_t nrecs;

static void free_records(void)
{
	for (size_t i = 0; i < nrecs; i++)
		free(recs[i].p);
	free(recs);
	recs = NULL;
	nrecs = 0;
}

/* Every record of the trace, in file order. */
static void read_records(void)
{
	char e[512];
	free_records();
	struct hp_reader *r = hp_reader_open(path, e, sizeof(e));
	ck_assert_msg(r != NULL, "%s", e);
	uint32_t type, size;
	const uint8_t *p;
	int rc;
	while ((rc = hp_reader_next(r, &type, &p, &size, e, sizeof(e))) == 1) {
		recs = realloc(recs, (nrecs + 1) * sizeof(*recs));
		ck_assert_ptr_nonnull(recs);
		recs[nrecs] = (struct rec){ type, size, malloc(size ? size : 1) };
		memcpy(recs[nrecs].p, p, size);
		nrecs++;
	}
	hp_reader_close(r);
	ck_assert_msg(rc == 0, "%s", e);
}

#define ALL (-1)

/*
 * The trace as one line of words, records of `stream` only (ALL: every
 * record, with END last), PROCESS, CLOCK and MODULES left out:
 *   T<stream>                    THREAD
 *   E<stream>:<count>            EVENTS
 *   L<stream>:<reason>:<count>   LOST, stream '*' for none
 *   END:<events>/<lost>/<streams>
 */
static const char *summary(int64_t stream)
{
	static char line[8192];
	size_t n = 0;
	line[0] = 0;
	for (size_t i = 0; i < nrecs; i++) {
		const uint8_t *p = recs[i].p;
		char word[96];
		int64_t s = recs[i].size >= 4 ? (int64_t)hp_rd32(p) : -2;
		switch (recs[i].type) {
		case HP_REC_THREAD:
			snprintf(word, sizeof(word), "T%u", hp_rd32(p));
			break;
		case HP_REC_EVENTS:
			snprintf(word, sizeof(word), "E%u:%u", hp_rd32(p), hp_rd32(p + 4));
			break;
		case HP_REC_LOST:
			if (hp_rd32(p) == HP_STREAM_NONE)
				snprintf(word, sizeof(word), "L*:%u:%llu", hp_rd32(p + 4),
					 (unsigned long long)hp_rd64(p + 8));
			else
				snprintf(word, sizeof(word), "L%u:%u:%llu", hp_rd32(p), hp_rd32(p + 4),
					 (unsigned long long)hp_rd64(p + 8));
			break;
		case HP_REC_END:
			snprintf(word, sizeof(word), "END:%llu/%llu/%u", (unsigned long long)hp_rd64(p),
				 (unsigned long long)hp_rd64(p + 8), hp_rd32(p + 16));
			s = ALL;
			break;
		default:
			continue;
		}
		if (stream != ALL && s != stream)
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", n ? " " : "", word);
		ck_assert_uint_lt(n, sizeof(line));
	}
	return line;
}

/* The names of the THREAD records of one stream, in file order. */
static const char *thread_names(uint32_t stream)
{
	static char line[1024];
	size_t n = 0;
	line[0] = 0;
	for (size_t i = 0; i < nrecs; i++) {
		const uint8_t *p = recs[i].p;
		if (recs[i].type != HP_REC_THREAD || hp_rd32(p) != stream)
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%.*s", n ? " " : "",
				      (int)hp_rd32(p + 8), (const char *)p + 12);
		ck_assert_uint_lt(n, sizeof(line));
	}
	return line;
}

/* The k-th EVENTS record (from 0) of a stream. */
static const struct rec *events_record(uint32_t stream, int k)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].type == HP_REC_EVENTS && hp_rd32(recs[i].p) == stream && k-- == 0)
			return &recs[i];
	ck_abort_msg("no such EVENTS record");
	return NULL;
}

static size_t count_type(uint32_t type)
{
	size_t n = 0;
	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].type == type;
	return n;
}

/* END agrees with the records before it: events, lost, streams; it is last. */
static void check_end_totals(void)
{
	uint64_t events = 0, lost = 0;
	uint32_t streams[64];
	size_t nstreams = 0;
	ck_assert_uint_ge(nrecs, 1);
	for (size_t i = 0; i + 1 < nrecs; i++) {
		const uint8_t *p = recs[i].p;
		ck_assert_uint_ne(recs[i].type, HP_REC_END);
		if (recs[i].type == HP_REC_EVENTS)
			events += hp_rd32(p + 4);
		if (recs[i].type == HP_REC_LOST)
			lost += hp_rd64(p + 8);
		if (recs[i].type == HP_REC_THREAD) {
			size_t k = 0;
			while (k < nstreams && streams[k] != hp_rd32(p))
				k++;
			if (k == nstreams && nstreams < 64)
				streams[nstreams++] = hp_rd32(p);
		}
	}
	const struct rec *end = &recs[nrecs - 1];
	ck_assert_uint_eq(end->type, HP_REC_END);
	ck_assert_uint_eq(end->size, 24);
	ck_assert_uint_eq(hp_rd64(end->p), events);
	ck_assert_uint_eq(hp_rd64(end->p + 8), lost);
	ck_assert_uint_eq(hp_rd32(end->p + 16), nstreams);
	ck_assert_uint_eq(hp_rd32(end->p + 20), 0);
}

/* Checks every decoded event against its stream's pattern. */
struct expect {
	uint64_t next[MAX_STREAMS];
	uint64_t wrong_at;
	uint32_t wrong_stream;
	uint64_t resets;
};

static int check_pattern(void *arg, const struct hp_analysis *a, uint32_t stream,
			 const struct hp_ev *ev, size_t n)
{
	struct expect *x = arg;
	if (stream >= MAX_STREAMS)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == HP_EV_RESET) {
			x->resets++;
			continue;
		}
		if (ev[i].kind == HP_EV_OWN)
			continue;
		uint64_t k = x->next[stream]++;
		uint32_t kind = k & 1 ? HP_EV_EXIT : HP_EV_ENTER;
		if (x->wrong_at == NONE &&
		    (ev[i].kind != kind || a->funcs.addr[ev[i].func] != (pat_addr(k) & ~HP_RAW_EXIT) ||
		     ev[i].tick != pat_tick(stream, k))) {
			x->wrong_at = k;
			x->wrong_stream = stream;
		}
	}
	return 0;
}

static void analyze(hp_event_fn fn, void *arg)
{
	ck_assert_msg(hp_analyze(path, 0, fn, arg, &A, err, sizeof(err)) == 0, "%s", err);
	analyzed = 1;
}

static void analyze_pattern(struct expect *x)
{
	memset(x, 0, sizeof(*x));
	x->wrong_at = NONE;
	analyze(check_pattern, x);
	ck_assert_msg(x->wrong_at == NONE, "stream %u: event %llu decoded wrong", x->wrong_stream,
		      (unsigned long long)x->wrong_at);
}

/* ---------------------------------------------------------------- core */

static int child_chunks(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "alpha");
	TK_CHILD_TRUE(t != NULL);
	publish(t, 0, CHUNK);
	publish(t, CHUNK, CHUNK);
	publish(t, 2 * CHUNK, 100);
	hp_writer_drain(t);
	/* all three taken and released, in order, the stream announced */
	TK_CHILD_EQ(t->tail, 3);
	TK_CHILD_EQ(hp_writer_stream_of(t)->next_seq, 3);
	TK_CHILD_EQ(hp_writer_stream_of(t)->announced, 1);
	TK_CHILD_TRUE(listed(t)); /* live: not retired */
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_chunks_become_events_records)
{
	/* one EVENTS record per chunk, after the stream's THREAD record */
	run_ok(child_chunks, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:4096 E0:4096 E0:100 T0 END:8292/0/1");
	check_end_totals();
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(A.events, 2 * CHUNK + 100);
	ck_assert_uint_eq(x.resets, 0);
	ck_assert_uint_eq(A.funcs.n, NF);
	ck_assert_uint_eq(A.orphan_exits, 0);
	ck_assert_uint_eq(A.info.streams[0].tid, FAKE_TID);
	ck_assert_str_eq(A.info.streams[0].name, "alpha");
	ck_assert_str_eq(thread_names(0), "alpha alpha");
}
END_TEST

/*
 * A signal handler that interrupted a hook between its taking a slot and
 * filling it filled the chunk up and published it: slot 50 still holds an
 * earlier lap's event. A thread plays the hook, filling it 5 ms after the
 * writer began (late = 1), or never (0).
 */
#define UNFILLED_AT 50

struct late_fill {
	struct hp_raw *slot;
	uint64_t addr, tick;
	int go;
};

/* Slot UNFILLED_AT of chunk 0, published, as a hook leaves it between
 * taking and filling it: an earlier lap's event, below the chunk's bound.
 * Returns the event it will hold. */
static struct hp_raw unfill_slot(struct hp_thread *t)
{
	struct hp_raw *s = slot(t, 0), event = s[UNFILLED_AT];
	t->chunk[0].stale_below = pat_tick(0, 0);
	s[UNFILLED_AT] = (struct hp_raw){ pat_addr(7), 7 };
	return event;
}

static void *fill_late(void *arg)
{
	struct late_fill *f = arg;
	while (!__atomic_load_n(&f->go, __ATOMIC_ACQUIRE))
		sched_yield();
	usleep(5000);
	hp_raw_fill(f->slot, f->addr, f->tick);
	return NULL;
}

static int child_unfilled_slot(void *arg)
{
	int late = *(int *)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	/* long enough for the filler, however loaded the machine; short
	 * enough when nobody fills */
	hp_buffer_await_fill_ns = late ? 60ull * 1000 * 1000 * 1000 : 1000 * 1000;
	struct hp_thread *t = hand_thread(0, FAKE_TID, "alpha");
	TK_CHILD_TRUE(t != NULL);
	publish(t, 0, 100);
	struct hp_raw event = unfill_slot(t);
	struct late_fill f = { slot(t, 0) + UNFILLED_AT, event.addr, event.tick, 0 };
	pthread_t filler;
	if (late)
		TK_CHILD_EQ(pthread_create(&filler, NULL, fill_late, &f), 0);
	__atomic_store_n(&f.go, 1, __ATOMIC_RELEASE);
	hp_writer_drain(t);
	TK_CHILD_EQ(t->tail, 1);
	if (late)
		TK_CHILD_EQ(pthread_join(filler, NULL), 0);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_slot_filled_late_is_waited_for)
{
	int late = 1;
	run_ok(child_unfilled_slot, &late);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:100 T0 END:100/0/1");
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(A.events, 100);
}
END_TEST

/*
 * The owner's ring is full and holds its own unfilled slot (chunk 0, slot
 * 50: its hook was interrupted by the handler it runs now); a program
 * thread's hookprof_flush (or the writer thread's pass before it sleeps,
 * which does not say it is at work either) holds the writer's lock and
 * waits for that slot. The owner, helping, blocks on the lock: it fills
 * nothing until the flush gives up. The flush must see that at once, not
 * after hp_buffer_await_fill_ns (a minute here: the test times out).
 * (From the second review.)
 */
static void *flush_all_thread(void *arg)
{
	(void)arg;
	hp_writer_flush_all();
	return NULL;
}

static int child_owner_blocked_on_lock(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	hp_buffer_await_fill_ns = 60ull * 1000 * 1000 * 1000;
	struct hp_thread *t = hand_thread(0, FAKE_TID, "alpha");
	TK_CHILD_TRUE(t != NULL);
	for (uint32_t c = 0; c < t->nchunks; c++)
		publish(t, 100 * c, 100); /* the ring is full */
	unfill_slot(t);
	pthread_t flusher;
	TK_CHILD_EQ(pthread_create(&flusher, NULL, flush_all_thread, NULL), 0);
	usleep(100 * 1000); /* the flush holds the lock and waits for the slot */
	hp_tls.thread = t; /* this thread is the owner, in its handler */
	hp_writer_help(t);
	hp_tls.thread = NULL;
	TK_CHILD_EQ(pthread_join(flusher, NULL), 0);
	return TK_CHILD_OK;
}

START_TEST(test_owner_blocked_on_the_lock_is_not_waited_for)
{
	run_ok(child_owner_blocked_on_lock, NULL);
}
END_TEST

START_TEST(test_slot_never_filled_is_left_out)
{
	/* counted lost, as reason 5; the events around it are the pattern's */
	int late = 0;
	run_ok(child_unfilled_slot, &late);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:99 T0 L0:5:1 END:99/1/1");
	check_end_totals();
}
END_TEST

/* The second chunk's slow path ran from its 3rd event to tick 5000000. */
static int child_own_time(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "alpha");
	TK_CHILD_TRUE(t != NULL);
	publish(t, 0, 10);
	t->chunk[t->head % t->nchunks].own = (struct hp_chunk_own){ .tick = 5000000, .at = 3 };
	publish(t, 10, 10);
	hp_writer_drain(t);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

struct own_seen {
	uint64_t events, own_after, own_tick, owns;
};

static int find_own(void *arg, const struct hp_analysis *a, uint32_t stream, const struct hp_ev *ev,
		    size_t n)
{
	(void)a;
	(void)stream;
	struct own_seen *o = arg;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == HP_EV_OWN) {
			o->owns++;
			o->own_after = o->events;
			o->own_tick = ev[i].tick;
		} else if (ev[i].kind == HP_EV_ENTER || ev[i].kind == HP_EV_EXIT) {
			o->events++;
		}
	}
	return 0;
}

START_TEST(test_own_time_after_its_events)
{
	run_ok(child_own_time, NULL);
	read_records();
	/* no event of its own: the record counts and END say 20 */
	ck_assert_str_eq(summary(ALL), "T0 E0:10 E0:10 T0 END:20/0/1");
	check_end_totals();
	struct own_seen o = { 0 };
	analyze(find_own, &o);
	ck_assert_uint_eq(o.owns, 1);
	ck_assert_uint_eq(o.own_after, 13);
	ck_assert_uint_eq(o.own_tick, 5000000);
	ck_assert_uint_eq(A.events, 20);
	/* the events after it decode as written */
	hp_analysis_free(&A);
	struct expect x;
	analyze_pattern(&x);
}
END_TEST

/*
 * The owner itself, in the signal handler that interrupted its hook between
 * taking slot 50 and filling it, drains its ring (hp_writer_help, when its
 * ring is full): it writes the events before the slot and leaves the rest
 * of the chunk to the writer thread, which waits for the slot, instead of
 * writing the chunk without it (LOST 5). The writer thread does not see the
 * thread until the owner's drain is over. (From the review.)
 */
static int child_own_unfilled_slot(void *arg)
{
	uint32_t own_at = *(uint32_t *)arg; /* the slow path's own time there, if not 0 */
	CHILD_DO(writer_open(HP_MODE_STREAM));
	hp_buffer_await_fill_ns = 60ull * 1000 * 1000 * 1000;
	struct hp_thread *t = hand_thread(0, FAKE_TID, "alpha");
	TK_CHILD_TRUE(t != NULL);
	pthread_mutex_lock(&hp_threads_lock);
	hp_threads = t->next; /* out of the writer thread's sight */
	pthread_mutex_unlock(&hp_threads_lock);
	if (own_at)
		t->chunk[0].own = (struct hp_chunk_own){ .tick = pat_tick(0, own_at - 1) + 2, .at = own_at };
	publish(t, 0, 100);
	struct hp_raw event = unfill_slot(t);
	hp_writer_start();
	hp_tls.thread = t; /* this thread is the owner, in its handler, its ring full */
	TK_CHILD_EQ(hp_writer_help(t), 0);
	TK_CHILD_EQ(t->tail, 0);
	TK_CHILD_EQ(hp_writer_stream_of(t)->resume_at, UNFILLED_AT);
	hp_tls.thread = NULL; /* the handler returns, the hook fills its slot */
	hp_raw_fill(slot(t, 0) + UNFILLED_AT, event.addr, event.tick);
	pthread_mutex_lock(&hp_threads_lock);
	t->next = hp_threads;
	__atomic_store_n(&hp_threads, t, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&hp_threads_lock);
	hp_writer_notify();
	for (int i = 0; i < 6000 && __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) != 1; i++)
		usleep(10000);
	TK_CHILD_EQ(t->tail, 1);
	TK_CHILD_EQ(hp_writer_stop(0), 0);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_owner_leaves_its_own_unfilled_slot_to_the_writer)
{
	/* with hookprof's own time in the chunk: none, before the slot (the
	 * owner writes it), after it (the writer thread does), at it */
	static const uint32_t own_ats[] = { 0, 30, 70, UNFILLED_AT };
	for (size_t i = 0; i < sizeof(own_ats) / sizeof(own_ats[0]); i++) {
		uint32_t own_at = own_ats[i];
		unlink(path); /* the trace of the run before */
		run_ok(child_own_unfilled_slot, &own_at);
		read_records();
		ck_assert_str_eq(summary(ALL), "T0 E0:50 E0:50 T0 END:100/0/1");
		struct own_seen o = { 0 };
		analyze(find_own, &o);
		ck_assert_msg(o.owns == (own_at ? 1u : 0u), "own at %u: %llu own marks", own_at, (unsigned long long)o.owns);
		ck_assert_uint_eq(o.own_after, own_at);
		hp_analysis_free(&A);
		struct expect x;
		analyze_pattern(&x);
		ck_assert_uint_eq(A.events, 100);
		hp_analysis_free(&A);
		analyzed = 0;
		free_records();
	}
}
END_TEST

static int child_streams(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t0 = hand_thread(0, FAKE_TID, "zero");
	struct hp_thread *t1 = hand_thread(1, FAKE_TID + 1, "one");
	struct hp_thread *t2 = hand_thread(2, FAKE_TID + 2, "two");
	TK_CHILD_TRUE(t0 && t1 && t2);
	publish(t1, 0, 50);
	hp_writer_drain(t1);
	publish(t0, 0, 20);
	hp_writer_drain(t0);
	publish(t1, 50, 60);
	hp_writer_drain(t1);
	/* then every thread at once */
	publish(t2, 0, 30);
	publish(t0, 20, 10);
	hp_writer_flush_all();
	TK_CHILD_EQ(t0->tail, 2);
	TK_CHILD_EQ(t1->tail, 2);
	TK_CHILD_EQ(t2->tail, 1);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_streams_keep_their_ids)
{
	run_ok(child_streams, NULL);
	read_records();
	/* the drains' order is the file's; flush_all's order is its own */
	char all[8192];
	snprintf(all, sizeof(all), "%s", summary(ALL));
	ck_assert_msg(!strncmp(all, "T1 E1:50 T0 E0:20 E1:60 ", 24), "%s", all);
	ck_assert_str_eq(summary(0), "T0 E0:20 E0:10 T0");
	ck_assert_str_eq(summary(1), "T1 E1:50 E1:60 T1");
	ck_assert_str_eq(summary(2), "T2 E2:30 T2");
	check_end_totals();
	ck_assert_str_eq(strstr(all, "END"), "END:170/0/3");
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(x.next[0], 30);
	ck_assert_uint_eq(x.next[1], 110);
	ck_assert_uint_eq(x.next[2], 30);
	/* one dictionary: each function defined once for all three streams */
	ck_assert_uint_eq(A.funcs.n, NF);
	ck_assert_str_eq(A.info.streams[2].name, "two");
	ck_assert_uint_eq(A.info.streams[1].tid, FAKE_TID + 1);
}
END_TEST

static int child_exited(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "before");
	TK_CHILD_TRUE(t != NULL);
	for (int i = 0; i < 3; i++) {
		publish(t, 10 * i, 10);
		hp_writer_drain(t);
	}
	/* what hp_buffer_retire_self does: the last chunk published, the name
	 * read again (into exit_name: the writer may be reading name), then
	 * exited */
	snprintf(t->exit_name, sizeof(t->exit_name), "after");
	t->lost_reentry = 4;
	publish(t, 30, 10);
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	hp_writer_drain(t);
	/* written out and retired: unlinked (and its buffer unmapped) */
	TK_CHILD_EQ(t->tail, 4);
	TK_CHILD_TRUE(!listed(t));
	TK_CHILD_TRUE(hp_threads == NULL);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_thread_records_first_and_last)
{
	/* one THREAD record when the stream first writes, one at its end with
	 * the name it had then; the final flush does not repeat them */
	run_ok(child_exited, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:10 E0:10 E0:10 E0:10 T0 L0:2:4 END:40/4/1");
	ck_assert_str_eq(thread_names(0), "before after");
	check_end_totals();
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(A.events, 40);
	ck_assert_str_eq(A.info.streams[0].name, "after"); /* the newest wins */
	ck_assert_uint_eq(A.info.streams[0].lost, 4);
}
END_TEST

/* arg: NULL, or slot 10 of the unpublished chunk is left unfilled */
static int child_live(void *arg)
{
	CHILD_DO(writer_open(HP_MODE_STREAM));
	/* a real thread id this time: the final name comes from /proc */
	prctl(PR_SET_NAME, "at-start");
	struct hp_thread *t = hand_thread(0, (uint32_t)syscall(SYS_gettid), "at-start");
	TK_CHILD_TRUE(t != NULL);
	struct hp_tls tls = { 0 };
	t->tls = &tls;
	publish(t, 0, 100);
	hp_writer_drain(t);
	/* 25 events stored in chunk 1, not published */
	struct hp_raw *s = slot(t, 1);
	for (uint64_t j = 0; j < 25; j++)
		s[j] = (struct hp_raw){ pat_addr(100 + j), pat_tick(0, 100 + j) };
	if (arg)
		s[10] = (struct hp_raw){ 0, 0 }; /* a fresh page's */
	tls.pos = s + 25;
	prctl(PR_SET_NAME, "at-finish");
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	TK_CHILD_EQ(t->head, 1); /* copied, not published */
	return TK_CHILD_OK;
}

START_TEST(test_live_thread_at_finish)
{
	/* the final flush writes the unpublished events of a running thread
	 * and its name as it is now */
	run_ok(child_live, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:100 E0:25 T0 END:125/0/1");
	ck_assert_str_eq(thread_names(0), "at-start at-finish");
	check_end_totals();
	/* chunk 1 follows chunk 0: no reset */
	ck_assert_uint_ne(events_record(0, 1)->p[8], HP_OP_RESET);
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(x.next[0], 125);
	ck_assert_uint_eq(x.resets, 0);
	ck_assert_uint_eq(A.info.streams[0].tid, (uint32_t)shared->child);
}
END_TEST

START_TEST(test_live_thread_at_finish_with_a_slot_unfilled)
{
	/* a slot before the newest, whose hook a handler interrupted: its
	 * event is older than the trace's end, so it is counted lost
	 * (reason 5), as the writer counts one in a published chunk */
	int unfilled_mid = 1;
	run_ok(child_live, &unfilled_mid);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:100 E0:24 T0 L0:5:1 END:124/1/1");
	check_end_totals();
}
END_TEST

static int child_lost(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_RING));
	struct hp_thread *t0 = hand_thread(0, FAKE_TID, "t0");
	struct hp_thread *t1 = hand_thread(1, FAKE_TID + 1, "t1");
	TK_CHILD_TRUE(t0 && t1);
	publish(t0, 0, 30);
	t0->lost_ring = 7;
	t0->lost_reentry = 3;
	t1->lost_ring = CHUNK; /* everything it recorded was dropped */
	hp_runtime_count_lost(HP_LOST_REENTRY);
	for (int i = 0; i < 2; i++)
		hp_runtime_count_lost(HP_LOST_NO_BUFFER);
	for (int i = 0; i < 5; i++)
		hp_runtime_count_lost(HP_LOST_LATE);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_lost_records_and_end_totals)
{
	run_ok(child_lost, NULL);
	read_records();
	/* per stream and reason; none for a count of 0 */
	ck_assert_str_eq(summary(0), "T0 E0:30 T0 L0:1:7 L0:2:3");
	/* a stream that lost everything has no THREAD and is no stream in END */
	ck_assert_str_eq(summary(1), "L1:1:4096");
	ck_assert_str_eq(summary(HP_STREAM_NONE), "L*:2:1 L*:3:2 L*:4:5");
	const char *all = summary(ALL);
	ck_assert_str_eq(strstr(all, "END"), "END:30/4114/1");
	check_end_totals();
	analyze(NULL, NULL);
	ck_assert_uint_eq(A.events, 30);
	ck_assert_uint_eq(A.info.end_lost, 4114);
	ck_assert_uint_eq(tk_lost_total(&A), 4114);
	ck_assert_uint_eq(A.info.lost_global, 8);
}
END_TEST

/* Three small chunks with a frame open across them; the middle one is
 * dropped as ring mode's owner would drop it. */
static const struct hp_raw gap0[] = { { FA, 100 }, { FB, 110 } };
static const struct hp_raw gap1[] = { { FB | HP_RAW_EXIT, 120 }, { FC, 125 } };
static const struct hp_raw gap2[] = { { FC | HP_RAW_EXIT, 130 },
				      { FA | HP_RAW_EXIT, 140 },
				      { FB, 150 },
				      { FB | HP_RAW_EXIT, 160 } };

static int child_gap(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_RING));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "gappy");
	TK_CHILD_TRUE(t != NULL);
	publish_raw(t, gap0, 2);
	hp_writer_drain(t);
	TK_CHILD_EQ(hp_writer_stream_of(t)->next_seq, 1);
	publish_raw(t, gap1, 2);
	publish_raw(t, gap2, 4);
	t->tail = 2; /* chunk 1 dropped */
	t->lost_ring = 2;
	hp_writer_drain(t);
	TK_CHILD_EQ(hp_writer_stream_of(t)->next_seq, 3);
	TK_CHILD_EQ(t->tail, 3);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

struct seen {
	struct hp_ev ev[16];
	uint64_t addr[16];
	size_t n;
};

static int collect(void *arg, const struct hp_analysis *a, uint32_t stream,
		   const struct hp_ev *ev, size_t n)
{
	(void)stream;
	struct seen *s = arg;
	for (size_t i = 0; i < n && s->n < 16; i++, s->n++) {
		s->ev[s->n] = ev[i];
		s->addr[s->n] = ev[i].kind == HP_EV_RESET ? 0 : a->funcs.addr[ev[i].func];
	}
	return 0;
}

static void assert_seen(const struct seen *s, size_t i, uint32_t kind, uint64_t addr, uint64_t tick)
{
	ck_assert_uint_lt(i, s->n);
	ck_assert_uint_eq(s->ev[i].kind, kind);
	ck_assert_uint_eq(s->addr[i], addr);
	if (kind != HP_EV_RESET)
		ck_assert_uint_eq(s->ev[i].tick, tick);
}

START_TEST(test_sequence_gap_resets_stream)
{
	run_ok(child_gap, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:2 E0:4 T0 L0:1:2 END:6/2/1");
	check_end_totals();
	/* the record after the gap starts with the reset op, the first does not */
	ck_assert_uint_ne(events_record(0, 0)->p[8], HP_OP_RESET);
	ck_assert_uint_eq(events_record(0, 1)->p[8], HP_OP_RESET);
	struct seen s = { .n = 0 };
	analyze(collect, &s);
	/* after the reset the open frames are gone (the exits of c and a are
	 * of frames the reader never saw open) and the tick is absolute */
	ck_assert_uint_eq(s.n, 5);
	assert_seen(&s, 0, HP_EV_ENTER, FA, 100);
	assert_seen(&s, 1, HP_EV_ENTER, FB, 110);
	assert_seen(&s, 2, HP_EV_RESET, 0, 0);
	assert_seen(&s, 3, HP_EV_ENTER, FB, 150);
	assert_seen(&s, 4, HP_EV_EXIT, FB, 160);
	ck_assert_uint_eq(A.orphan_exits, 2);
	ck_assert_uint_eq(A.events, 6);
}
END_TEST

static int child_no_thread(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	TK_CHILD_TRUE(hp_threads == NULL);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_finish_without_thread)
{
	/* a program that started tracing but whose threads recorded nothing */
	run_ok(child_no_thread, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "END:0/0/0");
	check_end_totals();
	ck_assert_uint_eq(count_type(HP_REC_CLOCK), 2); /* ours, and the final one */
	ck_assert_uint_eq(count_type(HP_REC_MODULES), 1);
	analyze(NULL, NULL);
	ck_assert_uint_eq(A.events, 0);
	ck_assert_int_eq(A.info.has_end, 1);
	ck_assert_int_eq(A.partial, 0);
}
END_TEST

/* -------------------------------------------------------------- limits */

#define DEEP 100

static int child_open_across(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "deep");
	TK_CHILD_TRUE(t != NULL);
	struct hp_raw ev[DEEP];
	for (int k = 0; k < DEEP; k++)
		ev[k] = (struct hp_raw){ F(k), 1000 + 10 * (uint64_t)k };
	publish_raw(t, ev, DEEP);
	hp_writer_drain(t);
	for (int k = 0; k < DEEP; k++)
		ev[k] = (struct hp_raw){ F(DEEP - 1 - k) | HP_RAW_EXIT, 2000 + (uint64_t)k };
	publish_raw(t, ev, DEEP);
	hp_writer_drain(t);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_frame_open_across_records)
{
	/* the encoder's stack of a stream lives from one record to the next:
	 * 100 frames opened in one record are closed in the next by 100
	 * one-byte exits of the top frame */
	run_ok(child_open_across, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:100 E0:100 T0 END:200/0/1");
	check_end_totals();
	const struct rec *r = events_record(0, 1);
	ck_assert_uint_eq(r->size, 8 + DEEP);
	ck_assert_uint_eq(r->p[8], HP_OP_EXIT_SHORT | (2000 - (1000 + 10 * (DEEP - 1))));
	for (int k = 1; k < DEEP; k++)
		ck_assert_uint_eq(r->p[8 + k], HP_OP_EXIT_SHORT | 1);
	analyze(NULL, NULL);
	ck_assert_uint_eq(A.orphan_exits, 0);
	for (int k = 0; k < DEEP; k++)
		ck_assert_uint_eq(tk_calls_of(&A, F(k)), 1);
}
END_TEST

static int child_separate(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t0 = hand_thread(0, FAKE_TID, "s0");
	struct hp_thread *t1 = hand_thread(1, FAKE_TID + 1, "s1");
	TK_CHILD_TRUE(t0 && t1);
	static const struct hp_raw a[] = { { FA, 100 } };
	static const struct hp_raw b[] = { { FA | HP_RAW_EXIT, 200 }, { FB, 210 }, { FB | HP_RAW_EXIT, 220 } };
	static const struct hp_raw c[] = { { FA | HP_RAW_EXIT, 150 } };
	publish_raw(t0, a, 1);
	hp_writer_drain(t0);
	publish_raw(t1, b, 3);
	hp_writer_drain(t1);
	publish_raw(t0, c, 1);
	hp_writer_drain(t0);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_streams_have_separate_state)
{
	/* a is open on stream 0 only: its exit on stream 1 is of a frame not
	 * on that stream's stack (op 0x41, a already in the dictionary), and
	 * stream 0's own exit of it is still the top frame's (one byte) */
	run_ok(child_separate, NULL);
	read_records();
	char all[8192];
	snprintf(all, sizeof(all), "%s", summary(ALL));
	ck_assert_msg(!strncmp(all, "T0 E0:1 T1 E1:3 E0:1 ", 21), "%s", all);
	ck_assert_str_eq(summary(0), "T0 E0:1 E0:1 T0");
	ck_assert_str_eq(summary(1), "T1 E1:3 T1");
	ck_assert_str_eq(strstr(all, "END"), "END:5/0/2");
	check_end_totals();
	ck_assert_uint_eq(events_record(1, 0)->p[8], HP_OP_EXIT_FN);
	ck_assert_uint_eq(events_record(1, 0)->p[9], 0); /* index of a */
	const struct rec *r = events_record(0, 1);
	ck_assert_uint_eq(r->size, 9);
	ck_assert_uint_eq(r->p[8], HP_OP_EXIT_SHORT | 50);
	analyze(NULL, NULL);
	ck_assert_uint_eq(A.orphan_exits, 1);
	ck_assert_uint_eq(tk_calls_of(&A, FA), 1);
	ck_assert_uint_eq(tk_calls_of(&A, FB), 1);
}
END_TEST

#define THREADED_CHUNKS 12

static int child_threaded(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "fed");
	TK_CHILD_TRUE(t != NULL);
	hp_writer_start();
	TK_CHILD_EQ(hp_writer_threaded(), 1);
	/* the owner's side: a chunk whenever the ring has room, then a nudge */
	for (uint64_t c = 0; c < THREADED_CHUNKS; c++) {
		while (t->head - __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) == t->nchunks) {
			hp_writer_notify();
			sched_yield();
		}
		publish(t, c * CHUNK, CHUNK);
		hp_writer_notify();
	}
	TK_CHILD_EQ(hp_writer_stop(0), 0);
	TK_CHILD_EQ(hp_writer_threaded(), 0);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	TK_CHILD_EQ(t->tail, THREADED_CHUNKS);
	return TK_CHILD_OK;
}

START_TEST(test_writer_thread_consumes)
{
	/* with the writer thread: what it wrote and what the final flush
	 * wrote make one EVENTS record per chunk, in order */
	run_ok(child_threaded, NULL);
	read_records();
	char want[512] = "T0";
	for (int c = 0; c < THREADED_CHUNKS; c++)
		strcat(want, " E0:4096");
	strcat(want, " T0 END:49152/0/1");
	ck_assert_str_eq(summary(ALL), want);
	check_end_totals();
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(x.next[0], THREADED_CHUNKS * CHUNK);
	ck_assert_uint_eq(x.resets, 0);
}
END_TEST

static uint32_t help_done;
static int help_worked;

static void *help_thread(void *arg)
{
	help_worked = hp_writer_help(arg);
	__atomic_store_n(&help_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int child_owner_helps(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "helps");
	TK_CHILD_TRUE(t != NULL);
	for (uint64_t c = 0; c < 4; c++)
		publish(t, c * CHUNK, CHUNK);
	/* the ring is full; another thread holds the writer's lock (not the
	 * writer's pass, which would free the chunks): the owner waits for
	 * the lock, then encodes its four chunks itself */
	TK_CHILD_EQ(hp_writer_lock_for_fork(), 0);
	pthread_t h;
	help_done = 0;
	TK_CHILD_EQ(pthread_create(&h, NULL, help_thread, t), 0);
	usleep(50000);
	TK_CHILD_EQ(__atomic_load_n(&help_done, __ATOMIC_ACQUIRE), 0);
	TK_CHILD_EQ(t->tail, 0);
	hp_writer_unlock_after_fork();
	TK_CHILD_EQ(pthread_join(h, NULL), 0);
	TK_CHILD_EQ(help_worked, 1);
	TK_CHILD_EQ(t->tail, 4);
	TK_CHILD_EQ(hp_writer_help(t), 0); /* nothing left to free */
	/* the writer at work (its lock held by its pass): the owner waits for
	 * the chunk the pass frees, not for the lock */
	for (uint64_t c = 4; c < 8; c++)
		publish(t, c * CHUNK, CHUNK);
	TK_CHILD_EQ(hp_writer_lock_for_fork(), 0);
	__atomic_store_n(&hp_writer_at_work, 1, __ATOMIC_RELAXED);
	TK_CHILD_EQ(hp_writer_help(t), 0);
	__atomic_store_n(&hp_writer_at_work, 0, __ATOMIC_RELAXED);
	hp_writer_unlock_after_fork();
	TK_CHILD_EQ(t->tail, 4);
	TK_CHILD_EQ(hp_writer_help(t), 1);
	TK_CHILD_EQ(t->tail, 8);
	publish(t, 8 * CHUNK, 10);
	TK_CHILD_EQ(hp_writer_finish(0), 0);
	return TK_CHILD_OK;
}

START_TEST(test_full_ring_owner_helps)
{
	/* what the owner encoded is the same stream the writer would have
	 * written: one EVENTS record per chunk, in order, then the rest */
	run_ok(child_owner_helps, NULL);
	read_records();
	ck_assert_str_eq(summary(ALL), "T0 E0:4096 E0:4096 E0:4096 E0:4096 E0:4096 E0:4096 E0:4096 E0:4096 E0:10 T0 END:32778/0/1");
	check_end_totals();
	struct expect x;
	analyze_pattern(&x);
	ck_assert_uint_eq(x.next[0], 8 * CHUNK + 10);
	ck_assert_uint_eq(x.resets, 0);
}
END_TEST

static int child_write_fails(void *arg)
{
	(void)arg;
	CHILD_DO(writer_open(HP_MODE_STREAM));
	struct hp_thread *t = hand_thread(0, FAKE_TID, "lost");
	TK_CHILD_TRUE(t != NULL);
	publish(t, 0, 10);
	/* the trace is reopened for each batch: gone, it cannot be */
	TK_CHILD_EQ(unlink(path), 0);
	int fd = open("/dev/null", O_WRONLY);
	TK_CHILD_TRUE(fd >= 0);
	dup2(fd, 2); /* the one warning */
	TK_CHILD_EQ(hp_writer_finish(0), -1);
	return TK_CHILD_OK;
}

START_TEST(test_finish_reports_write_failure)
{
	run_ok(child_write_fails, NULL);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), -1);
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_set_timeout(core, 30);
	tcase_add_test(core, test_chunks_become_events_records);
	tcase_add_test(core, test_own_time_after_its_events);
	tcase_add_test(core, test_streams_keep_their_ids);
	tcase_add_test(core, test_thread_records_first_and_last);
	tcase_add_test(core, test_live_thread_at_finish);
	tcase_add_test(core, test_live_thread_at_finish_with_a_slot_unfilled);
	tcase_add_test(core, test_lost_records_and_end_totals);
	tcase_add_test(core, test_sequence_gap_resets_stream);
	tcase_add_test(core, test_finish_without_thread);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 30);
	tcase_add_test(limits, test_frame_open_across_records);
	tcase_add_test(limits, test_streams_have_separate_state);
	tcase_add_test(limits, test_writer_thread_consumes);
	tcase_add_test(limits, test_full_ring_owner_helps);
	tcase_add_test(limits, test_finish_reports_write_failure);
	tcase_add_test(limits, test_slot_filled_late_is_waited_for);
	tcase_add_test(limits, test_slot_never_filled_is_left_out);
	tcase_add_test(limits, test_owner_leaves_its_own_unfilled_slot_to_the_writer);
	tcase_add_test(limits, test_owner_blocked_on_the_lock_is_not_waited_for);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	shared = tk_map_shared(sizeof(*shared));
	tk_child_messages_to(shared->msg, sizeof(shared->msg));
	return tk_run_suite_in_top_dir(writer_suite(), top, sizeof(top), "check_writer");
}
