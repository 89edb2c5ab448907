/*
 * hp_writer.c - chunk consumer and writer thread.
 */
#define _GNU_SOURCE
#include "hp_writer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hp_calibrate.h"
#include "hp_format.h"
#include "hp_modules.h"
#include "hp_output.h"
#include "hp_records.h"
#include "hp_runtime.h"
#include "hp_strings.h"

#define IDLE_WAIT_MS 50
#define HOUSEKEEPING_NS 1000000000ull
/* The first CLOCK after start comes soon, and is flushed at once: start-up
 * wrote two close together, and a run killed early should have a better
 * calibration than that. */
#define FIRST_HOUSEKEEPING_NS 1000000ull
#define SIGNAL_WAIT_MS 2000
/* A lock a dead writer held is never freed: a short wait tells. */
#define ORPHAN_WAIT_MS 100
#define FORK_LOCK_WAIT_MS 2000
#define START_WAIT_MS 2000

/* All encoding and output. Inside it: hp_threads_lock and the loader's
 * lock; a fatal signal's flush and the fork handler take it with a bounded
 * wait (docs/design.md, "Locks"). */
static hp_mutex_t writer_lock = HP_MUTEX_INITIALIZER;
uint32_t hp_writer_at_work;
static struct hp_dict dict;
static struct hp_raw *scratch;
static int threaded;
static int broken; /* encoding ran out of memory: the trace ends */
static uint32_t wake_seq;
static uint32_t sleeping;
static uint32_t stop;
static uint32_t done;
static uint32_t started; /* the writer thread runs writer_main */
static uint64_t events_written;
static uint64_t lost_in_threads;
static uint32_t streams_written;
static uint64_t min_calls, min_ticks; /* HOOKPROF_MIN's drops, of the streams ended */
static const struct hp_config *filters; /* HOOKPROF_EXCLUDE and the others */
static struct hp_thread *first_thread(void);

/* Stream states, carved from blocks of pages, reused once their thread is
 * freed; under writer_lock like everything they hold. */
#define STREAMS_BLOCK_BYTES (64u << 10)
static struct hp_writer_stream *free_streams;
static struct streams_block {
	struct streams_block *next;
	size_t used;
} *stream_blocks;

static struct hp_writer_stream *new_stream(void)
{
	struct hp_writer_stream *st = free_streams;
	if (st) {
		free_streams = st->next_free;
	} else {
		struct streams_block *b = stream_blocks;
		if (!b || b->used + sizeof(*st) > STREAMS_BLOCK_BYTES) {
			b = hp_pages_alloc(STREAMS_BLOCK_BYTES);
			if (!b)
				return NULL;
			b->next = stream_blocks;
			b->used = (sizeof(*b) + 15) & ~(size_t)15;
			stream_blocks = b;
		}
		st = (struct hp_writer_stream *)((char *)b + b->used);
		b->used += (sizeof(*st) + 15) & ~(size_t)15;
	}
	*st = (struct hp_writer_stream){ 0 };
	return st;
}

/* t's stream state, made when first needed; NULL: out of memory. */
static struct hp_writer_stream *stream(struct hp_thread *t)
{
	if (!t->consumer)
		t->consumer = new_stream();
	return t->consumer;
}

static void free_stream(struct hp_thread *t)
{
	struct hp_writer_stream *st = t->consumer;
	if (!st)
		return;
	hp_enc_stream_free(&st->enc);
	st->next_free = free_streams;
	free_streams = st;
	t->consumer = NULL;
}

const struct hp_writer_stream *hp_writer_stream_of(const struct hp_thread *t)
{
	return t->consumer;
}

int hp_writer_threaded(void) { return __atomic_load_n(&threaded, __ATOMIC_ACQUIRE); }

/* HOOKPROF_MIN in ticks, from the first clock pair and the latest: start-up
 * writes two 100 us apart, before any event is encoded. */
static void calibrate_min(uint64_t tick, uint64_t ns)
{
	static uint64_t first_tick, first_ns;
	if (!filters || !filters->min_ns)
		return;
	if (!first_ns) {
		first_tick = tick;
		first_ns = ns;
	} else if (ns > first_ns && tick > first_tick) {
		long double per_ns = (long double)(tick - first_tick) / (long double)(ns - first_ns);
		hp_encode_set_min((uint64_t)(per_ns * (long double)filters->min_ns));
	}
}

void hp_writer_clock_record(void)
{
	/* The tick is read between two clock readings; their midpoint pairs with it. */
	uint64_t before = hp_clock_ns();
	uint64_t tick = hp_tick();
	uint64_t after = hp_clock_ns();
	hp_records_clock(tick, before + (after - before) / 2);
	calibrate_min(tick, before + (after - before) / 2);
}

/* The MIN drops so far: of the streams ended, and of the live ones. */
static void min_drops(uint64_t *calls, uint64_t *ticks)
{
	*calls = min_calls;
	*ticks = min_ticks;
	for (struct hp_thread *t = first_thread(); t; t = t->next) {
		if (t->consumer) {
			*calls += t->consumer->enc.min_calls;
			*ticks += t->consumer->enc.min_ticks;
		}
	}
}

/* FILTER: what was asked, and what MIN dropped so far (a reader keeps the
 * last). Only when a filter is set; again when the drops changed. */
static void filter_record(void)
{
	static uint64_t last_calls = ~0ull;
	if (!filters || !(filters->exclude || filters->include || filters->depth || filters->min_ns))
		return;
	struct hp_filter_info f = { .min_ns = filters->min_ns, .depth = filters->depth,
				    .exclude = filters->exclude, .include = filters->include };
	min_drops(&f.calls, &f.ticks);
	if (f.calls == last_calls)
		return;
	last_calls = f.calls;
	hp_records_filter(&f);
}

void hp_writer_filters(const struct hp_config *cfg)
{
	filters = cfg;
	filter_record();
}

void hp_writer_calibration_record(uint32_t when)
{
	struct hp_calibration c;
	if (hp_calibrate(&c) == 0)
		hp_records_calibration(when, &c);
}

static void thread_record(const struct hp_thread *t, const char *name)
{
	/* hookprof_thread_name's, over the name the system knows. */
	uint32_t named = __atomic_load_n(&t->named, __ATOMIC_RELAXED);
	size_t len;
	const char *given = named ? hp_strings_get(named - 1, &len) : NULL;
	if (given)
		name = given;
	hp_records_thread(t->stream, t->tid, name, strnlen(name, 64));
}

static void thread_lost_records(struct hp_thread *t)
{
	uint64_t ring = __atomic_load_n(&t->lost_ring, __ATOMIC_RELAXED);
	uint64_t reentry = __atomic_load_n(&t->lost_reentry, __ATOMIC_RELAXED);
	uint64_t unfilled = t->consumer ? t->consumer->unfilled : 0;
	hp_records_lost(t->stream, HP_LOST_RING, ring);
	hp_records_lost(t->stream, HP_LOST_REENTRY, reentry);
	hp_records_lost(t->stream, HP_LOST_UNFILLED, unfilled);
	lost_in_threads += ring + reentry + unfilled;
}

/* The owner drains its own ring, full, in stream mode with a writer
 * thread (hp_writer_help: the buffer's make_room calls it only so): maybe
 * in the signal handler that interrupted one of its hooks, whose slot it
 * cannot wait for and the writer thread can. Under writer_lock. */
static int owner_helps;

/*
 * ev[0..n) of t's stream, from event `from` of its chunk, at *q
 * (hp_encode), the events written counted in *written. A slot not filled
 * yet is waited for, or left out and counted (hp_buffer_await_fill); 1:
 * the encoding stopped before it, to go on from there at a later pass
 * (st->resume_at: the owner itself, whose hook it may be, helps with its
 * full ring, maybe in the handler that interrupted that hook; a flush or
 * the final one on the owner's thread, outside any handler, meets only
 * slots abandoned by a handler that jumped away). -1: out of memory.
 */
static int encode_filled(struct hp_thread *t, struct hp_writer_stream *st, const struct hp_raw *ev,
			 size_t n, size_t from, uint8_t **q, uint64_t *written)
{
	for (;;) {
		ssize_t len = hp_encode(&dict, &st->enc, ev, n, *q);
		if (len < 0)
			return -1;
		*q += len;
		*written += st->enc.written;
		size_t at = st->enc.taken;
		if (at == n)
			return 0;
		if (owner_helps) {
			st->resume_at = (uint32_t)(from + at);
			return 1;
		}
		if (!hp_buffer_await_fill(t, &ev[at], st->enc.stale_below)) {
			st->unfilled++;
			at++;
		}
		ev += at;
		n -= at;
		from += at;
	}
}

/* encode_filled; own: and then an enter MIN holds back, and hookprof's
 * own time at tick. */
static int encode_part(struct hp_thread *t, struct hp_writer_stream *st, const struct hp_raw *ev,
		       size_t n, size_t from, uint64_t own, uint8_t **q, uint64_t *written)
{
	struct hp_enc_stream *enc = &st->enc;
	int rc = encode_filled(t, st, ev + from, n - from, from, q, written);
	if (rc || !own)
		return rc;
	ssize_t len;
	if ((len = hp_encode_flush(&dict, enc, *q)) < 0)
		return -1;
	*q += len;
	*written += enc->written;
	*q += hp_encode_own(enc, own, *q);
	return 0;
}

static void out_of_memory(void)
{
	hp_warn("out of memory while encoding events; the trace ends here");
	broken = 1;
}

/* meta: the chunk's (hp_buffer_take): its own time and the ticks of
 * slots not filled yet; or NULL (a snapshot: none of either). 0 if the
 * chunk is to be taken again, its encoding left at a slot not filled yet
 * (encode_filled); 1 once it is written, or given up (out of memory). */
static int encode_chunk(struct hp_thread *t, const struct hp_raw *ev, size_t n, uint32_t seq,
			const struct hp_chunk_meta *meta)
{
	if (broken)
		return 1;
	struct hp_writer_stream *st = stream(t);
	if (!st) {
		out_of_memory();
		return 1;
	}
	if (!st->announced) {
		thread_record(t, t->name);
		hp_records_stack(t->stream, &t->root);
		st->announced = 1;
		streams_written++;
	}
	/* The strings its control events may name: interned before they
	 * were recorded, so before the chunk was published. */
	hp_strings_write_new();
	uint8_t *q = hp_records_events_begin(1 + hp_encode_bound(n + 2) + HP_ENCODE_OWN_BOUND);
	if (!q)
		return 1;
	uint8_t *start = q;
	uint64_t written = 0;
	ssize_t len = 0;
	size_t from = seq == st->next_seq ? st->resume_at : 0;
	st->resume_at = 0;
	if (seq != st->next_seq) {
		/* An enter held back happened before the gap. */
		len = hp_encode_flush(&dict, &st->enc, q);
		written = st->enc.written;
		q += len > 0 ? len : 0;
		q += hp_encode_reset(&st->enc, q);
	}
	/* The slow path's own time goes after the events it put in; written
	 * already if the chunk was left past them. */
	uint64_t own = meta && meta->own.tick && meta->own.at <= n ? meta->own.tick : 0;
	size_t at = own ? meta->own.at : n;
	if (from >= at)
		own = 0;
	st->enc.stale_below = meta ? meta->stale_below : 0;
	int rc = len < 0 ? -1 : encode_part(t, st, ev, at, from < at ? from : at, own, &q, &written);
	if (!rc)
		rc = encode_part(t, st, ev, n, from > at ? from : at, 0, &q, &written);
	if (rc < 0) {
		out_of_memory();
		return 1;
	}
	if (q != start) /* nothing, if left at its first slot: no state changed */
		hp_records_events_end(q, t->stream, (uint32_t)written);
	events_written += written;
	if (rc)
		return 0;
	st->next_seq = seq + 1;
	return 1;
}

/* The stream's last event, if the encoder held it back (HOOKPROF_MIN). */
static void encode_pending(struct hp_writer_stream *st, uint32_t stream_id)
{
	if (broken || !st->enc.has_pending)
		return;
	uint8_t *q = hp_records_events_begin(HP_EVENT_MAX_BYTES);
	if (!q)
		return;
	ssize_t len = hp_encode_flush(&dict, &st->enc, q);
	if (len < 0) {
		broken = 1;
		return;
	}
	hp_records_events_end(q + len, stream_id, (uint32_t)st->enc.written);
	events_written += st->enc.written;
}

static int drain_published(struct hp_thread *t)
{
	const struct hp_raw *ev;
	struct hp_chunk_meta meta;
	uint32_t seq;
	size_t n;
	int worked = 0;
	while ((n = hp_buffer_take(t, scratch, &ev, &seq, &meta))) {
		if (!encode_chunk(t, ev, n, seq, &meta))
			break; /* the writer thread takes it again, and waits for its slot */
		hp_buffer_release(t, seq);
		worked = 1;
	}
	return worked;
}

static void unlink_thread(struct hp_thread *t)
{
	hp_mutex_lock(&hp_threads_lock);
	struct hp_thread **pp = &hp_threads;
	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp)
		*pp = t->next;
	hp_mutex_unlock(&hp_threads_lock);
}

static int all_written(struct hp_thread *t)
{
	/* Acquire: pairs with hp_buffer_retire_self; its last head is visible. */
	return __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&t->head, __ATOMIC_ACQUIRE) == t->tail;
}

static void thread_end_records(struct hp_thread *t, const char *name)
{
	struct hp_writer_stream *st = t->consumer;
	if (st) {
		encode_pending(st, t->stream);
		min_calls += st->enc.min_calls;
		min_ticks += st->enc.min_ticks;
		st->enc.min_calls = st->enc.min_ticks = 0;
		if (st->announced)
			thread_record(t, name);
	}
	thread_lost_records(t);
}

/* An exited thread whose chunks are all written: its last records, then free it. */
static void retire_if_done(struct hp_thread *t)
{
	if (!all_written(t))
		return;
	thread_end_records(t, t->exit_name);
	unlink_thread(t);
	free_stream(t);
	hp_buffer_free_thread(t);
}

static void drain_locked(struct hp_thread *t, int *worked)
{
	if (drain_published(t))
		*worked = 1;
	retire_if_done(t);
}

static struct hp_thread *first_thread(void)
{
	/* Acquire: pairs with the release store of hp_threads in thread_create. */
	return __atomic_load_n(&hp_threads, __ATOMIC_ACQUIRE);
}

/* Under writer_lock. After the final flush nothing more is written.
 * 1 if a chunk was freed. */
static int drain_unless_finished(struct hp_thread *t)
{
	int worked = 0;
	if (!hp_buffer_finished())
		drain_locked(t, &worked);
	return worked;
}

void hp_writer_retire_and_drain(void)
{
	struct hp_thread *t = hp_tls.thread;
	hp_mutex_lock(&writer_lock);
	hp_buffer_retire_self(0);
	if (t)
		drain_unless_finished(t);
	hp_mutex_unlock(&writer_lock);
}

/*
 * The owner of t, its ring full, blocks on the lock: it fills no slot
 * meanwhile (its hook's, if a handler runs this, interrupted between take
 * and fill), so whoever holds the lock and waits for one of t's slots
 * (hp_buffer_await_fill: a hookprof_flush, the writer thread's pass before
 * it sleeps, the final flush) must not wait for it: to that consumer the
 * owner waits for it (t->waiting, with no chunk free). (From the review.)
 */
static void lock_as_owner(struct hp_thread *t)
{
	if (!hp_mutex_trylock(&writer_lock))
		return;
	__atomic_store_n(&t->waiting, 1, __ATOMIC_RELAXED);
	hp_mutex_lock(&writer_lock);
	__atomic_store_n(&t->waiting, 0, __ATOMIC_RELAXED);
}

void hp_writer_drain(struct hp_thread *t)
{
	lock_as_owner(t);
	drain_unless_finished(t);
	hp_mutex_unlock(&writer_lock);
}

/*
 * With more busy threads than cores (8 on 2), the writer gets a thread's
 * share of the CPU, about 1/9 of it, while it needs most of a core: the
 * owners filled their rings and slept on them, ten thousand context
 * switches a run and a quarter of the CPU idle. An owner whose ring is
 * full does the work itself instead, on its own core, whose cache still
 * holds the events. The writer at work frees a chunk of every ring soon:
 * the owner waits for it (0). Anyone else holding the lock (an owner that
 * helps, which frees its own ring only; a fork) leaves the owner's chunks
 * to the writer's next pass, which may be a while in coming when the
 * owners have the cores: the owner waits for the lock and encodes its own
 * (threads64 on 2 cores: 0.58 -> 0.53 s, fastest of 7).
 */
int hp_writer_help(struct hp_thread *t)
{
	if (hp_mutex_trylock(&writer_lock)) {
		/* Relaxed: a stale value costs one wait of the other kind. */
		if (__atomic_load_n(&hp_writer_at_work, __ATOMIC_RELAXED))
			return 0;
		lock_as_owner(t);
	}
	owner_helps = 1;
	int worked = drain_unless_finished(t);
	owner_helps = 0;
	hp_mutex_unlock(&writer_lock);
	return worked;
}

static int drain_all_locked(void)
{
	int worked = 0;
	struct hp_thread *next;
	for (struct hp_thread *t = first_thread(); t; t = next) {
		next = t->next; /* t may be freed; only we unlink, under writer_lock */
		drain_locked(t, &worked);
	}
	return worked;
}

/* What the program asked for must be readable on its own if the process
 * then dies without a word (kill -9): the events, a calibration point and
 * the objects loaded since the last map. */
int hp_writer_flush_all(void)
{
	hp_mutex_lock(&writer_lock);
	/* Checked under the lock: the final flush may have written END since
	 * the caller looked at the state. */
	int rc = -1;
	if (!hp_buffer_finished()) {
		drain_all_locked();
		hp_modules_write(0);
		hp_writer_clock_record();
		rc = hp_output_flush();
	}
	hp_mutex_unlock(&writer_lock);
	return rc;
}

void hp_writer_notify(void)
{
	if (!hp_writer_threaded())
		return;
	/* Orders the owner's new head before reading sleeping; pairs with the
	 * fence in writer_sleep, so the writer sees the chunk or we see it asleep. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Exchange: the first owner to find it asleep wakes it, once. With
	 * more busy threads than cores the writer may wait a while for a core
	 * after the wake; every owner that published meanwhile made a futex
	 * call of its own (a third of threads8's system calls). */
	if (__atomic_exchange_n(&sleeping, 0, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&wake_seq, 1, __ATOMIC_RELAXED);
		hp_futex_wake(&wake_seq);
	}
}

/* Sleeps at most until the next housekeeping is due (the first comes 1 ms
 * after start, sooner than the idle wait). */
static int idle_wait_ms(uint64_t next_housekeeping)
{
	uint64_t now = hp_clock_ns();
	if (now >= next_housekeeping)
		return 0;
	uint64_t ms = (next_housekeeping - now + 999999) / 1000000;
	return ms < IDLE_WAIT_MS ? (int)ms : IDLE_WAIT_MS;
}

static void writer_sleep(uint64_t next_housekeeping)
{
	uint32_t seq = __atomic_load_n(&wake_seq, __ATOMIC_RELAXED);
	__atomic_store_n(&sleeping, 1, __ATOMIC_RELAXED);
	/* Orders sleeping before the last look at the heads; pairs with hp_writer_notify. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	hp_mutex_lock(&writer_lock);
	int worked = drain_all_locked();
	hp_output_flush();
	hp_mutex_unlock(&writer_lock);
	int wait_ms = idle_wait_ms(next_housekeeping);
	if (!worked && wait_ms && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		hp_futex_wait(&wake_seq, seq, wait_ms);
	__atomic_store_n(&sleeping, 0, __ATOMIC_RELAXED);
}

/* Whether the time *next has come; if so, the next one is period_ns on. */
static int due(uint64_t *next, uint64_t period_ns)
{
	uint64_t now = hp_clock_ns();
	if (now < *next)
		return 0;
	*next = now + period_ns;
	return 1;
}

/* After 1 ms, then once a second: a clock pair (so a crashed run still has
 * a calibration) and a new module map if dlopen or dlclose changed it. */
static void housekeeping(uint64_t *next)
{
	if (!due(next, HOUSEKEEPING_NS))
		return;
	hp_mutex_lock(&writer_lock);
	hp_writer_clock_record();
	hp_modules_write(0);
	filter_record();
	hp_output_flush(); /* on disk now: the process may be killed any time */
	hp_mutex_unlock(&writer_lock);
}

/* A writer that always finds work never sleeps, and sleeping is when it
 * writes its output out: without this a busy run killed with SIGKILL could
 * lose up to a second (the housekeeping's period) of events, or all of
 * them. One write every IDLE_WAIT_MS at most. */
static void flush_if_due(uint64_t *next_flush)
{
	if (!due(next_flush, IDLE_WAIT_MS * 1000000ull))
		return;
	hp_mutex_lock(&writer_lock);
	hp_output_flush();
	hp_mutex_unlock(&writer_lock);
}

void hp_writer_modules_changed(void)
{
	hp_mutex_lock(&writer_lock);
	if (!hp_buffer_finished()) /* nothing after END */
		hp_modules_write(0);
	hp_mutex_unlock(&writer_lock);
}

static void writer_main(void *arg)
{
	(void)arg;
	/* Release: ASan's start-up of this thread happens before start-up goes on. */
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	hp_futex_wake(&started);
	hp_tls.retired = HP_UNTRACED; /* instrumented code called from here is not ours to trace */
	uint64_t next_housekeeping = hp_clock_ns() + FIRST_HOUSEKEEPING_NS;
	uint64_t next_flush = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		hp_mutex_lock(&writer_lock);
		/* Relaxed: advisory to owners (hp_writer_help); the lock orders the rest. */
		__atomic_store_n(&hp_writer_at_work, 1, __ATOMIC_RELAXED);
		int worked = drain_all_locked();
		__atomic_store_n(&hp_writer_at_work, 0, __ATOMIC_RELAXED);
		hp_mutex_unlock(&writer_lock);
		if (!worked)
			writer_sleep(next_housekeeping);
		else
			flush_if_due(&next_flush);
		housekeeping(&next_housekeeping);
	}
	/* Release: everything this thread did happens before `done` is seen. */
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	hp_futex_wake(&done);
}

int hp_writer_init(void)
{
	scratch = hp_pages_alloc(HP_CHUNK_BYTES);
	if (!scratch || hp_dict_init(&dict) < 0)
		return -1;
	return 0;
}

/* Under ASan only: gcc 12's ASan allocates in a new thread's start-up
 * (pthread_getattr_np, before writer_main) and holds no allocator lock
 * across fork, so a program that forks meanwhile leaves its child a lock
 * held for ever: the child's first allocation of that size hangs. Once
 * writer_main runs, the writer thread allocates no more. */
static void wait_until_started(void)
{
#ifdef __SANITIZE_ADDRESS__
	hp_futex_wait_while(&started, 0, START_WAIT_MS);
#endif
}

void hp_writer_start(void)
{
	__atomic_store_n(&threaded, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&started, 0, __ATOMIC_RELAXED);
	if (hp_thread_start(writer_main, NULL, "hookprof-writer")) {
		__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
		hp_warn("cannot start the writer thread; buffers are written by the traced threads");
	} else {
		wait_until_started();
	}
}

int hp_writer_orphaned(void)
{
	if (!hp_writer_threaded())
		return 0;
	if (hp_mutex_lock_bounded(&writer_lock, 1, ORPHAN_WAIT_MS) < 0)
		return -1;
	__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
	hp_mutex_unlock(&writer_lock);
	return 0;
}

int hp_writer_stop(int in_signal)
{
	if (!hp_writer_threaded())
		return 0;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&wake_seq, 1, __ATOMIC_RELAXED);
	hp_futex_wake(&wake_seq);
	if (hp_futex_wait_while(&done, 0, in_signal ? SIGNAL_WAIT_MS : -1))
		return -1;
	__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
	return 0;
}

/* Its name now; one that exited while its last chunks were being written
 * has its name at exit, and the OS knows it no more. */
static void live_thread_name(const struct hp_thread *t, char *name, size_t len)
{
	int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
	if (exited)
		snprintf(name, len, "%s", t->exit_name);
	else if (hp_thread_name_of(t->tid, name, len))
		snprintf(name, len, "%s", t->name);
}

/* A thread still running at the end: its unpublished events, name and losses. */
static void finish_live_thread(struct hp_thread *t, int in_signal)
{
	uint32_t seq;
	uint64_t unfilled;
	size_t n;
	/* The thread runs on: a chunk it publishes between the drain and the
	 * snapshot makes the snapshot give up; drain that one too, and retry. */
	for (int tries = 0;; tries++) {
		n = hp_buffer_snapshot_partial(t, scratch, &seq, &unfilled, in_signal);
		if (n || tries == 8 || !drain_published(t))
			break;
	}
	if (n)
		encode_chunk(t, scratch, n, seq, NULL);
	if (unfilled && stream(t))
		t->consumer->unfilled += unfilled;
	char name[64];
	live_thread_name(t, name, sizeof(name));
	thread_end_records(t, name);
}

/* Losses that belong to no stream: late events, threads without a buffer. */
static uint64_t global_lost_records(void)
{
	uint64_t total = 0;
	for (uint32_t reason = HP_LOST_RING; reason <= HP_LOST_LATE; reason++) {
		uint64_t n = hp_runtime_lost(reason);
		hp_records_lost(HP_STREAM_NONE, reason, n);
		total += n;
	}
	return total;
}

static void end_record(void)
{
	uint64_t lost = lost_in_threads + global_lost_records();
	hp_records_end(events_written, lost, streams_written);
}

int hp_writer_finish(int in_signal)
{
	if (hp_mutex_lock_bounded(&writer_lock, in_signal, SIGNAL_WAIT_MS) < 0) {
		hp_warn("the final flush gave up waiting for the writer's lock; '%s' has no end record",
			hp_output_path());
		return -1;
	}
	struct hp_thread *next;
	for (struct hp_thread *t = first_thread(); t; t = next) {
		next = t->next;
		drain_published(t);
		/* Nothing is freed now: a fatal signal's flush may be running on
		 * this very thread's signal stack, inside its buffer mapping. */
		if (all_written(t))
			thread_end_records(t, t->exit_name);
		else
			finish_live_thread(t, in_signal);
	}
	if (!in_signal) {
		hp_modules_write(0); /* dl_iterate_phdr takes the loader lock */
		hp_writer_calibration_record(HP_CALIBRATION_END);
	}
	hp_writer_clock_record();
	filter_record();
	const struct hp_crash_info *crash = hp_runtime_take_crash();
	if (crash)
		hp_records_crash(crash);
	end_record();
	int rc = hp_output_flush();
	/* Before the lock goes: an owner blocked on it in hp_writer_drain must
	 * find the trace closed and drop its chunks, not append after END. */
	hp_buffer_set_finished();
	hp_mutex_unlock(&writer_lock);
	return rc;
}

void hp_writer_forget(void)
{
	__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
	hp_mutex_reinit(&writer_lock);
}

/* ---- fork ------------------------------------------------------------ */

int hp_writer_lock_for_fork(void)
{
	/* Bounded: a fork from a signal handler may have interrupted this
	 * very thread inside the lock. */
	return hp_mutex_lock_bounded(&writer_lock, 1, FORK_LOCK_WAIT_MS);
}

void hp_writer_unlock_after_fork(void)
{
	hp_mutex_unlock(&writer_lock);
}

size_t hp_writer_open_frames(const struct hp_thread *t, uint64_t *frames, size_t max,
			     uint32_t *encoded_of_tail)
{
	const struct hp_writer_stream *st = t->consumer;
	const struct hp_enc_stream *enc = st ? &st->enc : NULL;
	/* Relaxed: the owner's own tail, which only the writer moves, and
	 * we hold its lock. */
	*encoded_of_tail = st && st->next_seq == __atomic_load_n(&t->tail, __ATOMIC_RELAXED) ? st->resume_at : 0;
	if (!enc)
		return 0; /* nothing of it encoded yet */
	size_t n = enc->depth < max ? enc->depth : max;
	for (size_t i = 0; i < n; i++)
		frames[i] = hp_enc_open_frame(enc, i);
	if (enc->has_pending && n < max) /* held back by HOOKPROF_MIN, open */
		frames[n++] = enc->pending.addr;
	return n;
}

/* Every stream's state is forgotten with the parent's threads; its
 * memory is freed only when whole (as the dictionary). */
static void forget_streams(int whole)
{
	for (struct hp_thread *t = first_thread(); t; t = t->next) {
		if (whole && t->consumer)
			hp_enc_stream_free(&t->consumer->enc);
		t->consumer = NULL;
	}
	struct streams_block *next;
	for (struct streams_block *b = stream_blocks; whole && b; b = next) {
		next = b->next;
		hp_pages_free(b, STREAMS_BLOCK_BYTES);
	}
	stream_blocks = NULL;
	free_streams = NULL;
}

void hp_writer_reset_in_child(int whole)
{
	/* After a raw fork the writer may have been growing the dictionary
	 * or a stream's stack: their sizes cannot be trusted to unmap by, and
	 * they are left. */
	forget_streams(whole);
	if (whole) {
		hp_pages_free(scratch, HP_CHUNK_BYTES);
		hp_dict_free(&dict);
	}
	scratch = NULL;
	dict = (struct hp_dict){ 0 };
	hp_strings_reset_in_child();
	threaded = broken = 0;
	wake_seq = sleeping = stop = done = 0;
	events_written = lost_in_threads = 0;
	min_calls = min_ticks = 0;
	streams_written = 0;
	hp_mutex_reinit(&writer_lock);
}
