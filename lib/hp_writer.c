/*
 * hp_writer.c - chunk consumer and writer thread.
 */
#define _GNU_SOURCE
#include "hp_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "hp_calibrate.h"
#include "hp_format.h"
#include "hp_modules.h"
#include "hp_output.h"
#include "hp_runtime.h"
#include "hp_strings.h"
#include "hp_unwind.h"

#define IDLE_WAIT_MS 50
#define HOUSEKEEPING_NS 1000000000ull
/* The first CLOCK after start comes soon, and is flushed at once: start-up
 * wrote two close together, and a run killed early should have a better
 * calibration than that. */
#define FIRST_HOUSEKEEPING_NS 1000000ull
#define SIGNAL_WAIT_MS 2000
#define FORK_LOCK_WAIT_MS 2000
#define START_WAIT_MS 2000

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
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
	uint8_t *p = hp_output_begin(HP_REC_CLOCK, 16);
	if (!p)
		return;
	/* The tick is read between two clock readings; their midpoint pairs with it. */
	uint64_t before = hp_clock_ns();
	uint64_t tick = hp_tick();
	uint64_t after = hp_clock_ns();
	hp_le64(p, tick);
	hp_le64(p + 8, before + (after - before) / 2);
	hp_output_end(p + 16);
	calibrate_min(tick, before + (after - before) / 2);
}

static uint8_t *put_setting(uint8_t *p, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	hp_le32(p, (uint32_t)len);
	if (len)
		memcpy(p + 4, s, len);
	return p + 4 + len;
}

/* The MIN drops so far: of the streams ended, and of the live ones. */
static void min_drops(uint64_t *calls, uint64_t *ticks)
{
	*calls = min_calls;
	*ticks = min_ticks;
	for (struct hp_thread *t = first_thread(); t; t = t->next) {
		*calls += t->enc.min_calls;
		*ticks += t->enc.min_ticks;
	}
}

/* FILTER: what was asked, and what MIN dropped so far (a reader keeps the
 * last). Only when a filter is set; again when the drops changed. */
static void filter_record(void)
{
	static uint64_t last_calls = ~0ull;
	if (!filters || !(filters->exclude || filters->include || filters->depth || filters->min_ns))
		return;
	uint64_t calls, ticks;
	min_drops(&calls, &ticks);
	if (calls == last_calls)
		return;
	size_t strings = 8 + (filters->exclude ? strlen(filters->exclude) : 0) +
			 (filters->include ? strlen(filters->include) : 0);
	uint8_t *p = hp_output_begin(HP_REC_FILTER, HP_FILTER_FIXED_SIZE + strings);
	if (!p)
		return;
	last_calls = calls;
	hp_le64(p, filters->min_ns);
	hp_le64(p + 8, calls);
	hp_le64(p + 16, ticks);
	hp_le32(p + 24, filters->depth);
	hp_le32(p + 28, 0);
	p = put_setting(p + HP_FILTER_FIXED_SIZE, filters->exclude);
	p = put_setting(p, filters->include);
	hp_output_end(p);
}

void hp_writer_filters(const struct hp_config *cfg)
{
	filters = cfg;
	filter_record();
}

void hp_writer_calibration_record(uint32_t when)
{
	struct hp_calibration c;
	if (hp_calibrate(&c))
		return;
	uint8_t *p = hp_output_begin(HP_REC_CALIBRATION, 24);
	if (!p)
		return;
	hp_le32(p, when);
	hp_le32(p + 4, c.pairs);
	hp_le64(p + 8, c.inside);
	hp_le64(p + 16, c.outside);
	hp_output_end(p + 24);
}

static void thread_record(const struct hp_thread *t, const char *name)
{
	/* hookprof_thread_name's, over the name the system knows. */
	uint32_t named = __atomic_load_n(&t->named, __ATOMIC_RELAXED);
	size_t len;
	const char *given = named ? hp_strings_get(named - 1, &len) : NULL;
	if (given)
		name = given;
	len = strnlen(name, 64);
	uint8_t *p = hp_output_begin(HP_REC_THREAD, 12 + len);
	if (!p)
		return;
	hp_le32(p, t->stream);
	hp_le32(p + 4, t->tid);
	hp_le32(p + 8, (uint32_t)len);
	memcpy(p + 12, name, len);
	hp_output_end(p + 12 + len);
}

static void lost_record(uint32_t stream, uint32_t reason, uint64_t count)
{
	if (!count)
		return;
	uint8_t *p = hp_output_begin(HP_REC_LOST, 16);
	if (!p)
		return;
	hp_le32(p, stream);
	hp_le32(p + 4, reason);
	hp_le64(p + 8, count);
	hp_output_end(p + 16);
}

static void thread_lost_records(struct hp_thread *t)
{
	uint64_t ring = __atomic_load_n(&t->lost_ring, __ATOMIC_RELAXED);
	uint64_t reentry = __atomic_load_n(&t->lost_reentry, __ATOMIC_RELAXED);
	lost_record(t->stream, HP_LOST_RING, ring);
	lost_record(t->stream, HP_LOST_REENTRY, reentry);
	lost_in_threads += ring + reentry;
}

/* ev[0..n) of t's stream at *q (hp_encode), the events written counted
 * in *written; own: and then an enter MIN holds back, and hookprof's own
 * time at tick. -1: out of memory. */
static int encode_part(struct hp_thread *t, const struct hp_raw *ev, size_t n, uint64_t own,
		       uint8_t **q, uint64_t *written)
{
	ssize_t len = hp_encode(&dict, &t->enc, ev, n, *q);
	if (len < 0)
		return -1;
	*q += len;
	*written += t->enc.written;
	if (!own)
		return 0;
	if ((len = hp_encode_flush(&dict, &t->enc, *q)) < 0)
		return -1;
	*q += len;
	*written += t->enc.written;
	*q += hp_encode_own(&t->enc, own, *q);
	return 0;
}

static void encode_chunk(struct hp_thread *t, const struct hp_raw *ev, size_t n, uint32_t seq)
{
	if (broken)
		return;
	if (!t->announced) {
		thread_record(t, t->name);
		hp_unwind_write_stack(t->stream, &t->root);
		t->announced = 1;
		streams_written++;
	}
	/* The strings its control events may name: interned before they
	 * were recorded, so before the chunk was published. */
	hp_strings_write_new();
	uint8_t *p = hp_output_begin(HP_REC_EVENTS, 8 + 1 + hp_encode_bound(n + 2) + HP_ENCODE_OWN_BOUND);
	if (!p)
		return;
	uint8_t *q = p + 8;
	uint64_t written = 0;
	ssize_t len = 0;
	if (seq != t->next_seq) {
		/* An enter held back happened before the gap. */
		len = hp_encode_flush(&dict, &t->enc, q);
		written = t->enc.written;
		q += len > 0 ? len : 0;
		q += hp_encode_reset(&t->enc, q);
	}
	/* The slow path's own time goes after the events it put in. */
	uint64_t own = t->taken_own.tick && t->taken_own.at <= n ? t->taken_own.tick : 0;
	size_t at = own ? t->taken_own.at : n;
	if (len < 0 || encode_part(t, ev, at, own, &q, &written) ||
	    encode_part(t, ev + at, n - at, 0, &q, &written)) {
		hp_warn("out of memory while encoding events; the trace ends here");
		broken = 1;
		return;
	}
	hp_le32(p, t->stream);
	hp_le32(p + 4, (uint32_t)written);
	hp_output_end(q);
	t->next_seq = seq + 1;
	events_written += written;
}

/* The stream's last event, if the encoder held it back (HOOKPROF_MIN). */
static void encode_pending(struct hp_thread *t)
{
	if (broken || !t->enc.has_pending)
		return;
	uint8_t *p = hp_output_begin(HP_REC_EVENTS, 8 + HP_EVENT_MAX_BYTES);
	if (!p)
		return;
	ssize_t len = hp_encode_flush(&dict, &t->enc, p + 8);
	if (len < 0) {
		broken = 1;
		return;
	}
	hp_le32(p, t->stream);
	hp_le32(p + 4, (uint32_t)t->enc.written);
	hp_output_end(p + 8 + len);
	events_written += t->enc.written;
}

static int drain_published(struct hp_thread *t)
{
	const struct hp_raw *ev;
	uint32_t seq;
	size_t n;
	int worked = 0;
	while ((n = hp_buffer_take(t, scratch, &ev, &seq))) {
		encode_chunk(t, ev, n, seq);
		hp_buffer_release(t, seq);
		worked = 1;
	}
	return worked;
}

static void unlink_thread(struct hp_thread *t)
{
	pthread_mutex_lock(&hp_threads_lock);
	struct hp_thread **pp = &hp_threads;
	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp)
		*pp = t->next;
	pthread_mutex_unlock(&hp_threads_lock);
}

static int all_written(struct hp_thread *t)
{
	/* Acquire: pairs with hp_buffer_retire_self; its last head is visible. */
	return __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&t->head, __ATOMIC_ACQUIRE) == t->tail;
}

static void thread_end_records(struct hp_thread *t, const char *name)
{
	encode_pending(t);
	min_calls += t->enc.min_calls;
	min_ticks += t->enc.min_ticks;
	t->enc.min_calls = t->enc.min_ticks = 0;
	if (t->announced)
		thread_record(t, name);
	thread_lost_records(t);
}

/* An exited thread whose chunks are all written: its last records, then free it. */
static void retire_if_done(struct hp_thread *t)
{
	if (!all_written(t))
		return;
	thread_end_records(t, t->name);
	unlink_thread(t);
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

/* Under writer_lock. After the final flush nothing more is written. */
static void drain_unless_finished(struct hp_thread *t)
{
	int worked = 0;
	if (!hp_buffer_finished())
		drain_locked(t, &worked);
}

void hp_writer_retire_and_drain(void)
{
	struct hp_thread *t = hp_tls.thread;
	pthread_mutex_lock(&writer_lock);
	hp_buffer_retire_self(0);
	if (t)
		drain_unless_finished(t);
	pthread_mutex_unlock(&writer_lock);
}

void hp_writer_drain(struct hp_thread *t)
{
	pthread_mutex_lock(&writer_lock);
	drain_unless_finished(t);
	pthread_mutex_unlock(&writer_lock);
}

/*
 * With more busy threads than cores (8 on 2), the writer gets a thread's
 * share of the CPU, about 1/9 of it, while it needs most of a core: the
 * owners filled their rings and slept on them, ten thousand context
 * switches a run and a quarter of the CPU idle. An owner whose ring is
 * full does the work itself instead, on its own core, whose cache still
 * holds the events. Trylock: a writer at work frees a chunk soon anyway.
 */
int hp_writer_help(struct hp_thread *t)
{
	if (pthread_mutex_trylock(&writer_lock))
		return 0;
	int worked = 0;
	if (!hp_buffer_finished())
		drain_locked(t, &worked);
	pthread_mutex_unlock(&writer_lock);
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
	pthread_mutex_lock(&writer_lock);
	/* Checked under the lock: the final flush may have written END since
	 * the caller looked at the state. */
	int rc = -1;
	if (!hp_buffer_finished()) {
		drain_all_locked();
		hp_modules_write(0);
		hp_writer_clock_record();
		rc = hp_output_flush();
	}
	pthread_mutex_unlock(&writer_lock);
	return rc;
}

void hp_writer_notify(void)
{
	if (!hp_writer_threaded())
		return;
	/* Orders the owner's new head before reading sleeping; pairs with the
	 * fence in writer_sleep, so the writer sees the chunk or we see it asleep. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sleeping, __ATOMIC_RELAXED)) {
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
	pthread_mutex_lock(&writer_lock);
	int worked = drain_all_locked();
	hp_output_flush();
	pthread_mutex_unlock(&writer_lock);
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
	pthread_mutex_lock(&writer_lock);
	hp_writer_clock_record();
	hp_modules_write(0);
	filter_record();
	hp_output_flush(); /* on disk now: the process may be killed any time */
	pthread_mutex_unlock(&writer_lock);
}

/* A writer that always finds work never sleeps, and sleeping is when it
 * writes its output out: without this a busy run killed with SIGKILL could
 * lose up to a second (the housekeeping's period) of events, or all of
 * them. One write every IDLE_WAIT_MS at most. */
static void flush_if_due(uint64_t *next_flush)
{
	if (!due(next_flush, IDLE_WAIT_MS * 1000000ull))
		return;
	pthread_mutex_lock(&writer_lock);
	hp_output_flush();
	pthread_mutex_unlock(&writer_lock);
}

void hp_writer_modules_changed(void)
{
	pthread_mutex_lock(&writer_lock);
	if (!hp_buffer_finished()) /* nothing after END */
		hp_modules_write(0);
	pthread_mutex_unlock(&writer_lock);
}

static void *writer_main(void *arg)
{
	(void)arg;
	/* Release: ASan's start-up of this thread happens before start-up goes on. */
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	hp_futex_wake(&started);
	prctl(PR_SET_NAME, "hookprof-writer");
	hp_tls.retired = HP_UNTRACED; /* instrumented code called from here is not ours to trace */
	uint64_t next_housekeeping = hp_clock_ns() + FIRST_HOUSEKEEPING_NS;
	uint64_t next_flush = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&writer_lock);
		int worked = drain_all_locked();
		pthread_mutex_unlock(&writer_lock);
		if (!worked)
			writer_sleep(next_housekeeping);
		else
			flush_if_due(&next_flush);
		housekeeping(&next_housekeeping);
	}
	/* Release: everything this thread did happens before `done` is seen. */
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	hp_futex_wake(&done);
	return NULL;
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
	pthread_t th;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Born with every signal blocked: the program's signals and handlers
	 * must never run on our thread, not even before it starts. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&threaded, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&started, 0, __ATOMIC_RELAXED);
	if (pthread_create(&th, &attr, writer_main, NULL)) {
		__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
		hp_warn("cannot start the writer thread; buffers are written by the traced threads");
	} else {
		wait_until_started();
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
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


static void live_thread_name(const struct hp_thread *t, char *name, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", t->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, name, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(name, len, "%s", t->name);
		return;
	}
	name[n] = 0;
	name[strcspn(name, "\n")] = 0;
}

/* A thread still running at the end: its unpublished events, name and losses. */
static void finish_live_thread(struct hp_thread *t, int in_signal)
{
	uint32_t seq;
	size_t n;
	/* The thread runs on: a chunk it publishes between the drain and the
	 * snapshot makes the snapshot give up; drain that one too, and retry. */
	for (int tries = 0;; tries++) {
		n = hp_buffer_snapshot_partial(t, scratch, &seq, in_signal);
		if (n || tries == 8 || !drain_published(t))
			break;
	}
	if (n)
		encode_chunk(t, scratch, n, seq);
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
		lost_record(HP_STREAM_NONE, reason, n);
		total += n;
	}
	return total;
}

static void end_record(void)
{
	uint64_t lost = lost_in_threads + global_lost_records();
	uint8_t *p = hp_output_begin(HP_REC_END, 24);
	if (!p)
		return;
	hp_le64(p, events_written);
	hp_le64(p + 8, lost);
	hp_le32(p + 16, streams_written);
	hp_le32(p + 20, 0);
	hp_output_end(p + 24);
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
			thread_end_records(t, t->name);
		else
			finish_live_thread(t, in_signal);
	}
	if (!in_signal) {
		hp_modules_write(0); /* dl_iterate_phdr takes the loader lock */
		hp_writer_calibration_record(HP_CALIBRATION_END);
	}
	hp_writer_clock_record();
	filter_record();
	hp_unwind_write_crash();
	end_record();
	int rc = hp_output_flush();
	/* Before the lock goes: an owner blocked on it in hp_writer_drain must
	 * find the trace closed and drop its chunks, not append after END. */
	hp_buffer_set_finished();
	pthread_mutex_unlock(&writer_lock);
	return rc;
}

void hp_writer_forget(void)
{
	__atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
	pthread_mutex_init(&writer_lock, NULL);
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
	pthread_mutex_unlock(&writer_lock);
}

size_t hp_writer_open_frames(const struct hp_thread *t, uint64_t *frames, size_t max)
{
	size_t n = t->enc.depth < max ? t->enc.depth : max;
	for (size_t i = 0; i < n; i++)
		frames[i] = dict.addr_of[t->enc.stack[i]];
	if (t->enc.has_pending && n < max) /* held back by HOOKPROF_MIN, open */
		frames[n++] = t->enc.pending.addr;
	return n;
}

void hp_writer_reset_in_child(int whole)
{
	/* After a raw fork the writer may have been growing the dictionary:
	 * its sizes cannot be trusted to unmap by, and it is left. */
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
	pthread_mutex_init(&writer_lock, NULL);
}
