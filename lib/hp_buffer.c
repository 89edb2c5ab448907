/*
 * hp_buffer.c - the slow path of the hooks and the chunk hand-over protocol
 * (diagram in hp_buffer.h).
 */
#define _GNU_SOURCE
#include "hp_buffer.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include "hp_format.h"
#include "hp_runtime.h"
#include "hp_writer.h"

__thread struct hp_tls hp_tls __attribute__((tls_model("initial-exec")));
struct hp_thread *hp_threads;
pthread_mutex_t hp_threads_lock = PTHREAD_MUTEX_INITIALIZER;

#define SIGNAL_STACK_BYTES (64u << 10)

static enum hp_mode buffer_mode;
static size_t buffer_chunks;
static uint32_t wake_after; /* published chunks that wake the writer */
static pthread_key_t exit_key;
static uint32_t next_stream;
static int finished;

static void thread_exit(void *arg);

int hp_buffer_init(const struct hp_config *cfg)
{
	buffer_mode = cfg->mode;
	/* A power of two: the 32-bit chunk counters wrap after 2^32 chunks, and
	 * only then does seq mod nchunks stay continuous across the wrap. */
	buffer_chunks = 2;
	while (buffer_chunks * 2 <= cfg->buffer_bytes / HP_CHUNK_BYTES)
		buffer_chunks *= 2;
	wake_after = buffer_chunks / 4 ? (uint32_t)(buffer_chunks / 4) : 1;
	return pthread_key_create(&exit_key, thread_exit) ? -1 : 0;
}

void hp_buffer_set_finished(void)
{
	__atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
}

int hp_buffer_finished(void)
{
	return __atomic_load_n(&finished, __ATOMIC_ACQUIRE);
}

static uint32_t slot_of(const struct hp_thread *t, uint32_t seq)
{
	return seq & (t->nchunks - 1);
}

static struct hp_raw *chunk_base(const struct hp_thread *t, uint32_t seq)
{
	return t->base + (size_t)slot_of(t, seq) * HP_CHUNK_EVENTS;
}

static struct hp_raw *chunk_end(const struct hp_thread *t)
{
	return chunk_base(t, t->head) + HP_CHUNK_EVENTS;
}

static void use_chunk(struct hp_thread *t)
{
	hp_tls.pos = chunk_base(t, t->head);
	hp_tls.end = hp_tick_is_tsc ? chunk_end(t) : NULL;
}

/* A fatal signal from a stack overflow needs another stack for the final
 * flush to run on; only where the program set none of its own. */
static void use_signal_stack(struct hp_thread *t, void *stack)
{
	stack_t cur, ss = { .ss_sp = stack, .ss_size = SIGNAL_STACK_BYTES };
	if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE) && sigaltstack(&ss, NULL) == 0)
		t->signal_stack = stack;
}

static void drop_signal_stack(struct hp_thread *t)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	if (t->signal_stack && sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->signal_stack)
		sigaltstack(&off, NULL);
}

static struct hp_thread *thread_create(void)
{
	size_t events_bytes = buffer_chunks * HP_CHUNK_BYTES;
	size_t bytes = events_bytes + SIGNAL_STACK_BYTES + sizeof(struct hp_thread) +
		       buffer_chunks * sizeof(uint32_t);
	bytes = (bytes + 4095) & ~(size_t)4095;
	/* Buffer first so it is page-aligned; signal stack, then bookkeeping. */
	char *mem = hp_pages_alloc(bytes);
	if (!mem)
		return NULL;
	struct hp_thread *t = (struct hp_thread *)(mem + events_bytes + SIGNAL_STACK_BYTES);
	use_signal_stack(t, mem + events_bytes);
	t->base = (struct hp_raw *)mem;
	t->chunk_len = (uint32_t *)(t + 1);
	t->map_bytes = bytes;
	t->nchunks = (uint32_t)buffer_chunks;
	t->tls = &hp_tls;
	t->tid = hp_gettid();
	t->stream = __atomic_fetch_add(&next_stream, 1, __ATOMIC_RELAXED);
	prctl(PR_GET_NAME, t->name);
	pthread_mutex_lock(&hp_threads_lock);
	t->next = hp_threads;
	/* Release: the writer walks the list without the lock; t's fields are
	 * visible before t is. */
	__atomic_store_n(&hp_threads, t, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&hp_threads_lock);
	/* The main thread never runs key destructors; the final flush covers it. */
	pthread_setspecific(exit_key, t);
	return t;
}

void hp_buffer_free_thread(struct hp_thread *t)
{
	hp_enc_stream_free(&t->enc);
	hp_pages_free(t->base, t->map_bytes);
}

static void publish(struct hp_thread *t)
{
	struct hp_raw *start = chunk_base(t, t->head);
	t->chunk_len[slot_of(t, t->head)] = (uint32_t)(hp_tls.pos - start);
	/* Release: the chunk's events and length are visible before the new head. */
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
	/* Waking the writer costs two system calls: do it once a quarter of the
	 * ring waits, not per chunk. It also wakes by itself every 50 ms. */
	if (t->head - __atomic_load_n(&t->tail, __ATOMIC_RELAXED) >= wake_after)
		hp_writer_notify();
}

/* Ring mode, or nobody left to consume: the owner drops the oldest chunk. */
static void drop_oldest(struct hp_thread *t, uint32_t tail)
{
	uint32_t n = t->chunk_len[slot_of(t, tail)];
	/* Acquire on success: a consumer's copy of this chunk finished before. */
	if (__atomic_compare_exchange_n(&t->tail, &tail, tail + 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		__atomic_fetch_add(&t->lost_ring, n, __ATOMIC_RELAXED);
}

static void wait_for_consumer(struct hp_thread *t, uint32_t tail)
{
	__atomic_store_n(&t->waiting, 1, __ATOMIC_RELAXED);
	/* Orders the waiting flag before re-reading tail; pairs with the fence
	 * in hp_buffer_release, so one of us sees the other (no lost wake-up). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) == tail)
		hp_futex_wait(&t->tail, tail, 100);
	__atomic_store_n(&t->waiting, 0, __ATOMIC_RELAXED);
}

/* Makes chunk `head` free for the owner to fill. */
static void make_room(struct hp_thread *t)
{
	for (;;) {
		/* Acquire: the consumer's reads of the chunk happen before we overwrite it. */
		uint32_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
		if (t->head - tail < t->nchunks)
			return;
		if (buffer_mode == HP_MODE_RING || hp_buffer_finished())
			drop_oldest(t, tail);
		else if (!hp_writer_threaded())
			hp_writer_drain(t);
		else
			wait_for_consumer(t, tail);
	}
}

static void count_lost(int reason)
{
	if (reason == HP_LOST_REENTRY && hp_tls.thread)
		hp_tls.thread->lost_reentry++;
	else
		hp_runtime_count_lost(reason);
}

/* Publishes the partial chunk, if it holds anything, and takes a free one. */
static void next_chunk(struct hp_thread *t)
{
	if (hp_tls.pos != chunk_base(t, t->head))
		publish(t);
	make_room(t);
	use_chunk(t);
}

static int in_chunk_seq(const struct hp_thread *t, uint32_t seq, const struct hp_raw *e)
{
	const struct hp_raw *start = chunk_base(t, seq);
	return e >= start && e < start + HP_CHUNK_EVENTS;
}

static int in_chunk(const struct hp_thread *t, const struct hp_raw *e)
{
	return in_chunk_seq(t, t->head, e);
}

/*
 * A slot the hook took inside the chunk, which a signal handler then filled
 * up and published before the hook got here (without the TSC the hook
 * fills its slot only here). Still ours: filled late, as the fast path may
 * also fill its slot after a handler published the chunk.
 */
static int in_chunk_just_published(const struct hp_thread *t, const struct hp_raw *e)
{
	/* With two chunks the one before is also the one after, where a slot
	 * taken past the end of a full chunk lies. */
	return t->nchunks > 2 && in_chunk_seq(t, t->head - 1, e);
}

/* The hook took its slot past the chunk's end (and so may have a signal
 * handler's hook): the chunk holds exactly its slots. */
static void clamp_pos(const struct hp_thread *t)
{
	struct hp_raw *end = chunk_end(t);
	if (hp_tls.pos > end && hp_tls.pos <= end + HP_CHUNK_EVENTS)
		hp_tls.pos = end;
}

/* Slow path, signals held off: a slot in chunk head, or nothing if none
 * can be had. */
static struct hp_raw *take_slot_slow(struct hp_thread *t)
{
	if (!t || hp_tls.pos >= chunk_end(t))
		return NULL;
	return hp_tls.pos++;
}

/*
 * The chunk is full: publish it and take the next. Hooks interrupted by a
 * signal handler may have taken slots past its end before their slow path
 * ran; where the next chunk follows in memory those slots are at its start,
 * and stay theirs (they find them inside the chunk when they resume).
 */
static void switch_chunk(struct hp_thread *t)
{
	struct hp_raw *old_end = chunk_end(t);
	struct hp_raw *taken_to = hp_tls.pos;
	clamp_pos(t);
	next_chunk(t);
	if (taken_to > old_end && taken_to <= old_end + HP_CHUNK_EVENTS &&
	    chunk_base(t, t->head) == old_end)
		hp_tls.pos = taken_to;
}

/*
 * An instrumented signal handler that ran while the slow path switches
 * chunks would have its events dropped (busy): it waits the few
 * microseconds until we are done instead, and records them all. Signals
 * our own code would raise (a fault) are left alone. Two system calls
 * every 4096 events (and a getpid, in hp_runtime_in_child).
 */
static void block_async_signals(sigset_t *saved)
{
	static const int synchronous[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	sigset_t mask;
	sigfillset(&mask);
	for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++)
		sigdelset(&mask, synchronous[i]);
	pthread_sigmask(SIG_BLOCK, &mask, saved);
}

/*
 * The hook took `taken` at or past the end it read just before: the chunk
 * is full, or this thread has no buffer yet, or the clock is not the TSC
 * (end is NULL then). The slot is ours whatever happened since (the take
 * is one instruction): if it lies inside the current chunk it is filled,
 * whether the clock sent us here or a signal handler moved to the chunk
 * that follows in memory.
 */
void hp_buffer_record_slow(uint64_t addr, struct hp_raw *taken)
{
	/* Without a buffer, start-up may be choosing the clock on another
	 * thread right now: reading it would race (the tick is read below,
	 * once hp_runtime_ready has ordered us after start-up). */
	uint64_t tick = hp_tls.thread ? hp_tick() : 0;
	if (unlikely(hp_tls.busy || hp_tls.retired)) {
		/* The slot goes back (nobody took one after it: handlers that
		 * ran since gave theirs back too), else switch_chunk would keep
		 * it for an event that never comes. */
		if (taken + 1 == hp_tls.pos)
			hp_tls.pos = taken;
		if (hp_tls.retired != HP_UNTRACED)
			count_lost(hp_tls.busy ? HP_LOST_REENTRY : HP_LOST_LATE);
		return;
	}
	struct hp_thread *t = hp_tls.thread;
	if (t && (in_chunk(t, taken) || (!hp_tick_is_tsc && in_chunk_just_published(t, taken)))) {
		hp_raw_fill(taken, addr, tick);
		return;
	}
	int saved_errno = errno;
	sigset_t saved_mask;
	block_async_signals(&saved_mask);
	hp_tls.busy = 1;
	if (t && hp_runtime_in_child()) {
		t = NULL; /* hp_tls is retired now */
	} else if (t) {
		if (hp_tls.pos >= chunk_end(t))
			switch_chunk(t);
	} else if (hp_runtime_ready()) {
		t = thread_create();
		tick = hp_tick();
		if (t) {
			hp_tls.thread = t;
			make_room(t);
			use_chunk(t);
		} else {
			hp_runtime_count_lost(HP_LOST_NO_BUFFER);
		}
	} else {
		/* Not traced, and never will be: later events stop at the top. */
		hp_tls.retired = HP_UNTRACED;
	}
	struct hp_raw *e = t && in_chunk(t, taken) ? taken : take_slot_slow(t);
	if (e)
		hp_raw_fill(e, addr, tick);
	hp_tls.busy = 0;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	errno = saved_errno;
}

void hp_buffer_publish_self(void)
{
	struct hp_thread *t = hp_tls.thread;
	if (!t || hp_tls.busy)
		return;
	hp_tls.busy = 1;
	next_chunk(t);
	hp_tls.busy = 0;
}

/* In a fatal signal's flush the lock may be held by the very thread the
 * signal interrupted: wait a little, then go on without it (the writer is
 * stopped by then, and the other threads only add themselves). */
static int lock_threads(int in_signal)
{
	return hp_mutex_lock_bounded(&hp_threads_lock, in_signal, 100);
}

/* pos lies in chunk head: a thread that waits for a free chunk has pos at
 * the end of the chunk it just published, which at the ring's end is not
 * where chunk head starts. */
static int has_partial_chunk(const struct hp_thread *t)
{
	const struct hp_raw *start = chunk_base(t, t->head);
	return hp_tls.pos > start && hp_tls.pos <= start + HP_CHUNK_EVENTS;
}

static int newest_filled(const struct hp_raw *start, size_t n);

/* A fatal signal may have come between a hook's taking its slot and filling
 * it: that slot is not published. */
static void drop_unfilled_newest(const struct hp_thread *t)
{
	const struct hp_raw *start = chunk_base(t, t->head);
	if (!newest_filled(start, (size_t)(hp_tls.pos - start)))
		hp_tls.pos--;
}

/* A hook that took a slot past the end of a full chunk was interrupted
 * before its slow path ran: the chunk is full. */
static void clamp_overshoot(const struct hp_thread *t)
{
	if (hp_tls.pos != chunk_base(t, t->head))
		clamp_pos(t);
}

void hp_buffer_retire_self(int in_signal)
{
	struct hp_thread *t = hp_tls.thread;
	if (!t)
		return;
	/* Interrupted in our own slow path: its chunk may be half handed over. */
	int interrupted = hp_tls.busy;
	hp_tls.busy = 1;
	int locked = lock_threads(in_signal) == 0;
	clamp_overshoot(t);
	if (!interrupted && has_partial_chunk(t)) {
		drop_unfilled_newest(t);
		if (has_partial_chunk(t))
			publish(t);
	}
	prctl(PR_GET_NAME, t->name);
	drop_signal_stack(t);
	t->tls = NULL;
	/* Release: the last head and everything above are visible before the
	 * consumer sees exited; from then on it may free t, so t is not
	 * touched again. */
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	if (locked)
		pthread_mutex_unlock(&hp_threads_lock);
	hp_tls = (struct hp_tls){ .retired = HP_RETIRED };
}

static void thread_exit(void *arg)
{
	(void)arg;
	int saved_errno = errno;
	if (hp_writer_threaded()) {
		hp_buffer_retire_self(0);
		hp_writer_notify();
	} else {
		hp_writer_retire_and_drain();
	}
	errno = saved_errno;
}

size_t hp_buffer_take(struct hp_thread *t, struct hp_raw *scratch,
		      const struct hp_raw **ev, uint32_t *seq)
{
	for (;;) {
		uint32_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
		/* Acquire: pairs with publish(); the chunk and its length are visible. */
		uint32_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		if (tail == head)
			return 0;
		size_t n = t->chunk_len[slot_of(t, tail)];
		const struct hp_raw *src = chunk_base(t, tail);
		*seq = tail;
		if (buffer_mode == HP_MODE_STREAM) {
			*ev = src;
			return n;
		}
		if (n > HP_CHUNK_EVENTS)
			n = HP_CHUNK_EVENTS;
		memcpy(scratch, src, n * sizeof(*src));
		/* Release: the copy is complete before the owner may reuse the chunk.
		 * Failure: the owner dropped it meanwhile and the copy may be torn. */
		if (__atomic_compare_exchange_n(&t->tail, &tail, tail + 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			*ev = scratch;
			return n;
		}
	}
}

void hp_buffer_release(struct hp_thread *t, uint32_t seq)
{
	if (buffer_mode == HP_MODE_RING)
		return; /* claimed in hp_buffer_take */
	/* Release: our reads of the chunk are done before the owner reuses it. */
	__atomic_store_n(&t->tail, seq + 1, __ATOMIC_RELEASE);
	/* Orders the new tail before reading waiting; pairs with wait_for_consumer. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&t->waiting, __ATOMIC_RELAXED))
		hp_futex_wake(&t->tail);
}

/*
 * The owner runs on, and takes a slot before it fills it (hp_buffer_record):
 * the newest of n slots may hold an event of an earlier lap of the ring, or
 * zeros. Its tick tells: one older than the slot before it (or 0) is stale.
 * The hook stores the tick after the address, so a fresh tick means a
 * complete event.
 */
static int newest_filled(const struct hp_raw *start, size_t n)
{
	/* Acquire: pairs with the hook's release store of the tick. */
	uint64_t tick = __atomic_load_n(&start[n - 1].tick, __ATOMIC_ACQUIRE);
	return tick && (n == 1 || tick >= start[n - 2].tick);
}

size_t hp_buffer_snapshot_partial(struct hp_thread *t, struct hp_raw *scratch, uint32_t *seq,
				  int in_signal)
{
	size_t n = 0;
	if (lock_threads(in_signal))
		return 0;
	if (!t->exited && t->tls) {
		uint32_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		struct hp_raw *start = chunk_base(t, head);
		/* Relaxed: the hook takes its slot before filling it, so pos
		 * orders nothing; newest_filled checks the newest slot's tick. */
		struct hp_raw *pos = __atomic_load_n(&t->tls->pos, __ATOMIC_RELAXED);
		if (pos > start && pos <= start + HP_CHUNK_EVENTS) {
			n = (size_t)(pos - start);
			n -= !newest_filled(start, n);
			memcpy(scratch, start, n * sizeof(*start));
			*seq = head;
		}
		/* Published meanwhile: the consumer takes it whole instead. The
		 * fence keeps the copy's reads before this second look at head. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->head, __ATOMIC_RELAXED) != head)
			n = 0;
	}
	pthread_mutex_unlock(&hp_threads_lock);
	return n;
}
