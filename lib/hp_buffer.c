/*
 * hp_buffer.c - the slow path of the hooks and the chunk hand-over protocol
 * (diagram in hp_buffer.h).
 */
#define _GNU_SOURCE
#include "hp_buffer.h"

#include <errno.h>
#include <string.h>

#include "hp_filter.h"
#include "hp_format.h"

__thread struct hp_tls hp_tls HP_TLS_MODEL;
struct hp_thread *hp_threads;
/*
 * Lock order (docs/design.md, "Locks"): init_lock > writer_lock >
 * build_lock > hp_threads_lock, ctl_lock; a lock may be taken while holding
 * one to its left, never the other way round. Held only with asynchronous
 * signals held off (hp_signals_hold); a fatal signal's flush takes this one
 * with a bounded wait. A leaf: nothing is taken inside it.
 */
hp_mutex_t hp_threads_lock = HP_MUTEX_INITIALIZER;

#define SIGNAL_STACK_BYTES (64u << 10)
/* How long a fatal signal's flush waits for other threads to finish a
 * chunk switch: ring mode never waits in one, so only a loaded machine's
 * scheduling makes this long; a chunk switched meanwhile would be missed. */
#define STOP_WAIT_MS 1000

static enum hp_mode buffer_mode;
static size_t buffer_chunks;
/* Stream mode: the buffers of live threads share a budget (hp_buffer.h);
 * ring mode has none (SIZE_MAX). */
static size_t budget_bytes;
static size_t committed_bytes; /* in use for live threads' events */
static uint32_t busy_rings;      /* live threads that filled their first 2 chunks */
static uint32_t live_rings;      /* threads with a buffer, not yet freed */
static uint32_t next_stream;
static int finished;

/* Events a forked child's forking thread starts with (hp_buffer.h). */
static struct {
	uint32_t tid;
	size_t n;
	struct hp_raw ev[HP_CHUNK_EVENTS];
} inherited;
/* A thread whose buffer could not be mapped: its events are counted lost,
 * without a system call each, until it tries again (hp_clock_ns time). */
static __thread uint64_t no_buffer_until HP_TLS_MODEL;
static int no_buffer_warned;

#define NO_BUFFER_RETRY_NS 1000000000ull

/* hookprof_thread_name's before the thread had a buffer: string id + 1. */
static __thread uint32_t name_before_buffer HP_TLS_MODEL;
/* This thread is inside chunk work (counted in chunk_workers): a fatal
 * signal's flush on it does not wait for itself. */
static __thread uint32_t chunk_work_depth HP_TLS_MODEL;
static uint32_t stopping_tid; /* a fatal signal's flush runs there: the others stop */
static uint32_t chunk_workers; /* threads inside enter_chunk_work */

static int lock_threads(int in_signal);
static int must_stop(void);
static void stop_in_chunk_work(void) __attribute__((noreturn));

int hp_buffer_init(const struct hp_config *cfg)
{
	buffer_mode = cfg->mode;
	/* A power of two: the 32-bit chunk counters wrap after 2^32 chunks, and
	 * only then does seq mod nchunks stay continuous across the wrap. */
	buffer_chunks = 2;
	while (buffer_chunks * 2 <= cfg->buffer_bytes / HP_CHUNK_BYTES)
		buffer_chunks *= 2;
	budget_bytes = SIZE_MAX;
	if (buffer_mode == HP_MODE_STREAM)
		budget_bytes = hp_buffer_bytes() > HP_STREAM_BUDGET ? hp_buffer_bytes() : HP_STREAM_BUDGET;
	return hp_thread_exit_init();
}

size_t hp_buffer_bytes(void)
{
	return buffer_chunks * HP_CHUNK_BYTES;
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
	/* Relaxed: the owner doubles it in grow_ring; either value maps the
	 * chunks up to head to the same slots. */
	return seq & (__atomic_load_n(&t->nchunks, __ATOMIC_RELAXED) - 1);
}

static struct hp_raw *chunk_base(const struct hp_thread *t, uint32_t seq)
{
	return t->base + (size_t)slot_of(t, seq) * t->chunk_events;
}

static struct hp_raw *chunk_end(const struct hp_thread *t)
{
	return chunk_base(t, t->head) + t->chunk_events;
}

static size_t chunk_bytes(const struct hp_thread *t)
{
	return t->chunk_events * sizeof(struct hp_raw);
}

/* The hook fills its slot itself: without the TSC, or with a filter on,
 * end is NULL and every event comes to the slow path. */
static int hook_fills(void)
{
	return hp_tick_is_tsc && !hp_filter_on;
}

/* The hook's fast path goes on in the chunk from here. */
static void arm_end(struct hp_thread *t)
{
	hp_tls.end = hook_fills() ? chunk_end(t) : NULL;
}

/* Atomic: a final flush's snapshot of the chunk being filled reads it
 * (its previous publication), while the owner may be publishing it. */
static uint64_t published_at(const struct hp_chunk_meta *m)
{
	return __atomic_load_n(&m->published_at, __ATOMIC_RELAXED);
}

static void use_chunk(struct hp_thread *t, int arm)
{
	struct hp_chunk_meta *m = &t->chunk[slot_of(t, t->head)];
	hp_tls.pos = chunk_base(t, t->head);
	m->own.tick = 0;
	m->stale_below = published_at(m) + 1;
	if (arm)
		arm_end(t);
}

/* A fatal signal from a stack overflow needs another stack for the final
 * flush to run on; only where the program set none of its own. */
static void use_signal_stack(struct hp_thread *t, void *stack)
{
	if (hp_signal_stack_use(stack, SIGNAL_STACK_BYTES))
		t->signal_stack = stack;
}

static void drop_signal_stack(struct hp_thread *t)
{
	hp_signal_stack_drop(t->signal_stack);
}

/*
 * Stream mode sizes rings by activity: a thread starts with 2 chunks
 * (128 KiB), its own, and its ring doubles as it fills (grow_ring), up to
 * the full size, while it is within its share of the budget and the
 * budget has room. The busy threads get the memory; a thread that records
 * little (a main thread that waits in pthread_join) keeps 128 KiB.
 * Sizing at the start instead gave the first threads to start the whole
 * budget and every later one 2 chunks, however busy: with 8 busy threads
 * on 2 cores, 7 of them waited for the writer at nearly every chunk. Ring
 * mode has no budget: its rings are whole from the start.
 */
static size_t first_chunks(void)
{
	return buffer_mode == HP_MODE_STREAM ? 2 : buffer_chunks;
}

/* Taken, then given back if that passed the budget: rings growing at
 * once never take more than it holds (they may both miss the last room).
 * Relaxed: the count orders nothing. */
static int take_budget(size_t bytes)
{
	size_t before = __atomic_fetch_add(&committed_bytes, bytes, __ATOMIC_RELAXED);
	if (before <= budget_bytes && budget_bytes - before >= bytes)
		return 1;
	__atomic_fetch_sub(&committed_bytes, bytes, __ATOMIC_RELAXED);
	return 0;
}

/* A ring may not grow past the budget's share of each busy thread (one
 * that filled its first 2 chunks): the first busy threads of many would
 * take it all before the others got going. Idle threads have no share. */
static int within_share(size_t bytes)
{
	uint32_t busy = __atomic_load_n(&busy_rings, __ATOMIC_RELAXED);
	return bytes <= budget_bytes / (busy ? busy : 1);
}

static void count_busy(struct hp_thread *t)
{
	if (t->busy_counted)
		return;
	t->busy_counted = 1;
	__atomic_fetch_add(&busy_rings, 1, __ATOMIC_RELAXED);
}

/* Between two doublings of a ring, and from its start to the first: the
 * threads started with it have time to show they are busy (each fills
 * its first 2 chunks in about 0.1 ms), so that the first busy one does
 * not grow into the others' shares before they count. A variable for the
 * tests, which set it to 0 or to a long time. */
uint64_t hp_buffer_grow_interval_ns = 1000000;

/*
 * The owner is about to take chunk `next`, with next - nchunks <= tail
 * (the ring holds at most nchunks). Where next mod 2n == n (n = nchunks:
 * the end of the first lap, of the third, ...), every chunk in flight,
 * [next - n, next), has seq mod 2n == seq mod n, the same slot under the
 * doubled size, and chunk next gets slot n, fresh memory: the ring may
 * double there, and only there.
 */
static void grow_ring(struct hp_thread *t, uint32_t next)
{
	uint32_t n = t->nchunks;
	if (n >= t->max_chunks || next % (2 * n) != n)
		return;
	count_busy(t);
	uint64_t now = hp_clock_ns();
	if (now - t->grown_ns < hp_buffer_grow_interval_ns || !within_share(2 * n * chunk_bytes(t)) ||
	    !take_budget(n * chunk_bytes(t)))
		return;
	t->grown_ns = now;
	t->budgeted += n * chunk_bytes(t);
	/* Relaxed: chunks up to head, the one being filled included, keep
	 * their slots; the release store of head in publish orders the new
	 * size before the chunk after it is mapped. Called only in chunk
	 * work (busy, or switching, or signals held): no handler's switch on
	 * this thread runs in between. */
	__atomic_store_n(&t->nchunks, 2 * n, __ATOMIC_RELAXED);
}

static void give_back_budget(size_t bytes)
{
	__atomic_fetch_sub(&committed_bytes, bytes, __ATOMIC_RELAXED);
}

/* The events a forked child's forking thread (tid) will put in its first
 * chunk (put_inherited), or 0. Relaxed: as in put_inherited. */
static size_t inherited_for(uint32_t tid)
{
	size_t n = __atomic_load_n(&inherited.n, __ATOMIC_RELAXED);
	return n && __atomic_load_n(&inherited.tid, __ATOMIC_RELAXED) == tid ? n : 0;
}

/*
 * The chunks of a ring about to start (HP_FULL_RINGS). Ring mode keeps the
 * largest: it keeps what was asked for. A forked child starts with no
 * live ring, but its forking thread may start its ring after the child's
 * other threads did theirs: its first chunk holds its inherited events
 * (up to a chunk of the largest) whatever the count.
 */
static uint32_t chunk_events_for_new_ring(size_t inherit)
{
	uint32_t events = HP_CHUNK_EVENTS;
	if (buffer_mode == HP_MODE_RING)
		return events;
	uint32_t live = __atomic_load_n(&live_rings, __ATOMIC_RELAXED);
	for (uint32_t rings = HP_FULL_RINGS; live >= rings && events > HP_CHUNK_MIN_EVENTS; rings *= 2)
		events /= 2;
	while (events < inherit && events < HP_CHUNK_EVENTS)
		events *= 2;
	return events;
}

/* The whole ring is mapped at once, and touched as it grows and fills. */
static struct hp_thread *thread_create(uint64_t first_func)
{
	uint32_t tid = hp_gettid();
	uint32_t chunk_events = chunk_events_for_new_ring(inherited_for(tid));
	/* As many more chunks as they are smaller: the ring may still grow to
	 * the whole buffer (hp_buffer_bytes). Mapped, touched as it grows. */
	size_t chunks = buffer_chunks * (HP_CHUNK_EVENTS / chunk_events);
	size_t events_bytes = chunks * chunk_events * sizeof(struct hp_raw);
	size_t bytes = events_bytes + SIGNAL_STACK_BYTES + sizeof(struct hp_thread) +
		       chunks * sizeof(struct hp_chunk_meta);
	bytes = (bytes + 4095) & ~(size_t)4095;
	/* Buffer first so it is page-aligned; signal stack, then bookkeeping. */
	char *mem = hp_pages_alloc(bytes);
	if (!mem)
		return NULL;
	struct hp_thread *t = (struct hp_thread *)(mem + events_bytes + SIGNAL_STACK_BYTES);
	/* A raw fork's child (no atfork handler) tells its own events from its
	 * parent's by the zeros the parent's leave behind. */
	t->wiped_on_fork = hp_pages_wipe_on_fork(mem, events_bytes) == 0;
	use_signal_stack(t, mem + events_bytes);
	t->base = (struct hp_raw *)mem;
	t->chunk_events = chunk_events;
	t->chunk = (struct hp_chunk_meta *)(t + 1);
	t->map_bytes = bytes;
	t->nchunks = (uint32_t)first_chunks();
	t->max_chunks = (uint32_t)chunks;
	t->grown_ns = hp_clock_ns();
	t->budgeted = 0; /* its first chunks are its own: the budget is for growth */
	t->tls = &hp_tls;
	t->tid = tid;
	t->stream = __atomic_fetch_add(&next_stream, 1, __ATOMIC_RELAXED);
	hp_thread_name_self(t->name, sizeof(t->name));
	t->named = name_before_buffer;
	if (first_func)
		hp_stack_root(&t->root, first_func);
	/* Relaxed: a count for the next ring's size, which orders nothing. */
	__atomic_fetch_add(&live_rings, 1, __ATOMIC_RELAXED);
	hp_mutex_lock(&hp_threads_lock);
	t->next = hp_threads;
	/* Release: the writer walks the list without the lock; t's fields are
	 * visible before t is. */
	__atomic_store_n(&hp_threads, t, __ATOMIC_RELEASE);
	hp_mutex_unlock(&hp_threads_lock);
	/* The main thread may never get it; the final flush covers it. */
	hp_thread_exit_arm();
	return t;
}

void hp_buffer_free_thread(struct hp_thread *t)
{
	give_back_budget(t->budgeted);
	if (t->busy_counted)
		__atomic_fetch_sub(&busy_rings, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&live_rings, 1, __ATOMIC_RELAXED);
	hp_pages_free(t->base, t->map_bytes);
}

static void publish(struct hp_thread *t)
{
	struct hp_raw *start = chunk_base(t, t->head);
	struct hp_chunk_meta *m = &t->chunk[slot_of(t, t->head)];
	m->len = (uint32_t)(hp_tls.pos - start);
	/* After every tick its events hold, or will: each was read before
	 * its slot was taken. */
	__atomic_store_n(&m->published_at, hp_tick(), __ATOMIC_RELAXED);
	/* Release: the chunk's events and length are visible before the new head. */
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
	/* Waking the writer costs two system calls: do it once a quarter of
	 * the ring waits, not per chunk (with a ring of 2 or 4, every chunk).
	 * It also wakes by itself every 50 ms. */
	if (t->head - __atomic_load_n(&t->tail, __ATOMIC_RELAXED) >= (t->nchunks >= 8 ? t->nchunks / 4 : 1))
		hp_buffer_client.notify();
}

/* Ring mode, or nobody left to consume: the owner drops the oldest chunk. */
static void drop_oldest(struct hp_thread *t, uint32_t tail)
{
	uint32_t n = t->chunk[slot_of(t, tail)].len;
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
		else if (!hp_buffer_client.threaded())
			hp_buffer_client.drain(t);
		else if (must_stop())
			stop_in_chunk_work(); /* not worth a free chunk any more */
		else if (!hp_buffer_client.help(t))
			wait_for_consumer(t, tail);
	}
}

static void count_lost(int reason)
{
	if (reason == HP_LOST_REENTRY && hp_tls.thread)
		hp_tls.thread->lost_reentry++;
	else
		hp_buffer_client.count_lost(reason);
}

/* Publishes the partial chunk, if it holds anything, and takes a free one
 * (arm: the fast path may use it at once). */
static void next_chunk(struct hp_thread *t, int arm)
{
	if (hp_tls.pos != chunk_base(t, t->head)) {
		/* Before publish: its release store of head orders the new size
		 * for whoever maps the chunk after it (hp_buffer_snapshot_partial). */
		grow_ring(t, t->head + 1);
		publish(t);
	}
	make_room(t);
	use_chunk(t, arm);
}

static int in_chunk_seq(const struct hp_thread *t, uint32_t seq, const struct hp_raw *e)
{
	const struct hp_raw *start = chunk_base(t, seq);
	return e >= start && e < start + t->chunk_events;
}

static int in_chunk(const struct hp_thread *t, const struct hp_raw *e)
{
	return in_chunk_seq(t, t->head, e);
}

/* pos lies in chunk head: a thread that waits for a free chunk has pos at
 * the end of the chunk it just published, which at the ring's end is not
 * where chunk head starts. */
static int has_partial_chunk(const struct hp_thread *t)
{
	const struct hp_raw *start = chunk_base(t, t->head);
	return hp_tls.pos > start && hp_tls.pos <= start + t->chunk_events;
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
	 * taken past the end of a full chunk lies: while chunk head is not
	 * full, nobody took one there. (A slot left unfilled would be counted
	 * lost by the consumer, its event written again elsewhere.) */
	return (t->nchunks > 2 || hp_tls.pos < chunk_end(t)) && in_chunk_seq(t, t->head - 1, e);
}

/* The hook took its slot past the chunk's end (and so may have a signal
 * handler's hook): the chunk holds exactly its slots. */
static struct hp_raw *within_chunk(const struct hp_thread *t, struct hp_raw *pos, struct hp_raw *end)
{
	return pos > end && pos <= end + t->chunk_events ? end : pos;
}

static void clamp_pos(const struct hp_thread *t)
{
	hp_tls.pos = within_chunk(t, hp_tls.pos, chunk_end(t));
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
static void switch_chunk(struct hp_thread *t, int arm)
{
	struct hp_raw *old_end = chunk_end(t);
	struct hp_raw *taken_to = hp_tls.pos;
	clamp_pos(t);
	next_chunk(t, arm);
	if (taken_to > old_end && taken_to <= old_end + t->chunk_events &&
	    chunk_base(t, t->head) == old_end)
		hp_tls.pos = taken_to;
}

/*
 * Asynchronous signals are held off wherever a program thread holds one of
 * our locks (the slow path, hookprof_flush, thread exit, dlclose, the
 * final flush): a fatal signal's flush on this thread would wait for that
 * lock, give up and lose the end. And an instrumented signal handler that
 * ran while the slow path switches chunks would have its events dropped
 * (busy): it waits the few microseconds until we are done instead, and
 * records them all. Signals our own code would raise (a fault) are left
 * alone (hp_signals_hold). The full path costs two system calls (and a
 * getpid, in the client's in_child, unless the memory mark answers:
 * way_to_switch); the common switch none.
 */

/* Events a forked child's thread starts with: fewer than a chunk, into an
 * empty one. */
static void put_inherited(struct hp_thread *t)
{
	/* Relaxed, n and tid: any thread of a parent starting its buffer reads
	 * them while another one forks (hp_buffer_note_fork writes them). Only
	 * a child's forking thread, alone there, matches tid and reads ev. */
	size_t n = __atomic_load_n(&inherited.n, __ATOMIC_RELAXED);
	if (!n || __atomic_load_n(&inherited.tid, __ATOMIC_RELAXED) != t->tid)
		return;
	memcpy(hp_tls.pos, inherited.ev, n * sizeof(inherited.ev[0]));
	hp_tls.pos += n;
	__atomic_store_n(&inherited.n, 0, __ATOMIC_RELAXED);
}

/* first_func: the function of the thread's first event, whose callers
 * make its root stack; 0 for a forked child's thread, whose frames were
 * inherited and whose stack above them says nothing new. */
static struct hp_thread *start_thread(uint64_t first_func)
{
	struct hp_thread *t = thread_create(first_func);
	if (!t)
		return NULL;
	hp_tls.thread = t;
	make_room(t);
	use_chunk(t, 1);
	put_inherited(t);
	if (hp_tls.pos >= chunk_end(t))
		next_chunk(t, 1);
	return t;
}

void hp_buffer_start_self(void)
{
	if (hp_tls.thread || hp_tls.busy || hp_tls.retired ||
	    !__atomic_load_n(&inherited.n, __ATOMIC_RELAXED)) /* relaxed: as in put_inherited */
		return;
	hp_tls.busy = 1;
	if (!start_thread(0))
		hp_buffer_client.count_lost(HP_LOST_NO_BUFFER);
	hp_tls.busy = 0;
}

/* The slot the hook took goes back (nobody took one after it: handlers
 * that ran since gave theirs back too). */
static void give_back(struct hp_raw *taken)
{
	if (taken + 1 == hp_tls.pos)
		hp_tls.pos = taken;
}

/* The mapping failed: this event and the thread's next ones for a second
 * are lost, and counted. One warning per process. */
static void no_buffer(struct hp_raw *taken)
{
	give_back(taken); /* no slot: pos stays put */
	hp_buffer_client.count_lost(HP_LOST_NO_BUFFER);
	no_buffer_until = hp_clock_ns() + NO_BUFFER_RETRY_NS;
	if (!__atomic_exchange_n(&no_buffer_warned, 1, __ATOMIC_RELAXED))
		hp_warn("cannot map a %zu MiB event buffer for thread %u; its events are counted lost",
			buffer_chunks * HP_CHUNK_BYTES >> 20, hp_gettid());
}

/* Before the next try: lost, at the price of a clock reading. */
static int no_buffer_yet(struct hp_raw *taken)
{
	if (hp_clock_ns() >= no_buffer_until)
		return 0;
	give_back(taken);
	hp_buffer_client.count_lost(HP_LOST_NO_BUFFER);
	return 1;
}

/* A fatal signal's flush runs on another thread: this one must stop. */
static int must_stop(void)
{
	uint32_t stopper = __atomic_load_n(&stopping_tid, __ATOMIC_SEQ_CST);
	return unlikely(stopper != 0) && stopper != hp_gettid();
}

/*
 * The process is about to die of a fatal signal whose flush runs on
 * another thread: this thread stops here for good, so that nothing it does
 * after the flush's snapshot goes unrecorded and uncounted. The event that
 * brought it here is not recorded: its function never runs. The slot goes
 * back, as for a retired thread.
 */
static void __attribute__((noreturn)) park_until_death(struct hp_raw *taken)
{
	/* Atomic: the fatal signal's flush reads pos from its own thread
	 * (hp_buffer_snapshot_partial); relaxed, since the slot was never
	 * filled and its snapshot drops an unfilled newest slot either way. */
	if (taken && taken + 1 == hp_tls.pos)
		__atomic_store_n(&hp_tls.pos, taken, __ATOMIC_RELAXED);
	hp_sigmask_t ignored;
	hp_signals_hold(&ignored);
	uint32_t tid = __atomic_load_n(&stopping_tid, __ATOMIC_RELAXED);
	for (;;)
		hp_futex_wait(&stopping_tid, tid, 1000);
}

/*
 * The part of the slow path that changes chunks (and so end, the losses,
 * head): the final flush of a fatal signal waits until no other thread is
 * in it. 0, without entering, if the thread must stop instead.
 */
static int enter_chunk_work(int busy)
{
	if (busy)
		hp_tls.busy = 1;
	chunk_work_depth++;
	/* Seq_cst, and stopping_tid read after it: pairs with
	 * hp_buffer_stop_others, which stores stopping_tid, then reads the
	 * count. Either it waits for us, or we see it and stop. */
	__atomic_fetch_add(&chunk_workers, 1, __ATOMIC_SEQ_CST);
	if (!must_stop())
		return 1;
	__atomic_fetch_sub(&chunk_workers, 1, __ATOMIC_RELEASE);
	chunk_work_depth--;
	return 0;
}

static int control_disarmed(void);

static void leave_chunk_work(int busy)
{
	/* The final flush gave up waiting for us (a slow writer): the end
	 * the chunk switch gave is not to be used, the next event stops.
	 * Paused, or stopped: the next event is dropped in the slow path. */
	if (must_stop() || control_disarmed())
		hp_tls.end = NULL;
	/* Release: the chunk switch is complete before the final flush's snapshot. */
	__atomic_fetch_sub(&chunk_workers, 1, __ATOMIC_RELEASE);
	chunk_work_depth--;
	if (busy)
		hp_tls.busy = 0;
}

/* Waiting for a free chunk when a fatal signal's flush begins: the chunk
 * just filled is published, and this thread stops here. */
static void stop_in_chunk_work(void)
{
	__atomic_fetch_sub(&chunk_workers, 1, __ATOMIC_RELEASE);
	park_until_death(NULL);
}

/* Bounded: a thread might be stuck in its slow path (waiting for a free
 * chunk while the writer is slow); the flush then goes on without it. */
static void wait_for_chunk_workers(void)
{
	uint32_t self = chunk_work_depth; /* the signal may have come in ours */
	for (int i = 0; i < STOP_WAIT_MS * 5; i++) {
		if (__atomic_load_n(&chunk_workers, __ATOMIC_SEQ_CST) <= self)
			return;
		hp_sleep_us(200);
	}
}

void hp_buffer_stop_others(void)
{
	__atomic_store_n(&stopping_tid, hp_gettid(), __ATOMIC_SEQ_CST);
	wait_for_chunk_workers();
	/* No other thread changes its end now (only chunk work does): their
	 * next event takes the slow path and stops there. Under the lock:
	 * t->tls lies in the thread's own memory, valid until it retires;
	 * nobody holds the lock with signals on (hp_buffer_hold_signals). */
	if (lock_threads(1))
		return;
	for (struct hp_thread *t = hp_threads; t; t = t->next)
		if (!t->exited && t->tls && t->tls != &hp_tls)
			__atomic_store_n(&t->tls->end, NULL, __ATOMIC_RELAXED);
	hp_mutex_unlock(&hp_threads_lock);
}

void hp_buffer_suspend_self(struct hp_tls *saved)
{
	*saved = hp_tls;
	hp_tls = (struct hp_tls){ .retired = HP_UNTRACED };
}

void hp_buffer_resume_self(const struct hp_tls *saved)
{
	hp_tls = *saved;
	/* Orders the restored end before reading stopping_tid: a fatal
	 * signal's flush that began meanwhile nulled the set-aside end, not
	 * this one (the same pairing as enter_chunk_work). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (must_stop())
		hp_tls.end = NULL;
}

/* ---- the chunk switch without system calls --------------------------- */

int hp_buffer_in_own_work(void)
{
	return hp_tls.busy || (hp_tls.thread && __atomic_load_n(&hp_tls.thread->switching, __ATOMIC_RELAXED));
}

/* A switch of this thread's, which a handler interrupted, is under way,
 * or what it held is not all in the chunk yet: events wait their turn. */
static int holding(const struct hp_thread *t)
{
	return __atomic_load_n(&t->switching, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&t->held_in, __ATOMIC_RELAXED) !=
		       __atomic_load_n(&t->held_out, __ATOMIC_RELAXED);
}

/*
 * An instrumented signal handler's event while its thread switches chunks:
 * kept until the switch puts it in the new chunk, after the event the
 * switch is for (whose tick is older). Handlers nest: one that interrupts
 * another's hold is lost, and counted, as is one past the room held.
 */
static void hold(struct hp_thread *t, uint64_t addr, uint64_t tick)
{
	if (t->in_hold) {
		t->lost_reentry++;
		return;
	}
	t->in_hold = 1;
	/* Compiler barriers only, here and below: the one other party is a
	 * handler on this very thread, which runs between two instructions. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint32_t in = t->held_in;
	if (in - t->held_out < HP_HELD_EVENTS) {
		t->held[in % HP_HELD_EVENTS] = (struct hp_raw){ .addr = addr, .tick = tick };
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the event, then its count */
		t->held_in = in + 1;
	} else {
		t->lost_reentry++;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->in_hold = 0;
}

/* Held events go into the chunk, in order, one at a time: a handler that
 * interrupts this holds its own after them. */
static void drain_held(struct hp_thread *t)
{
	for (;;) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* held_in as a handler left it */
		uint32_t out = t->held_out;
		if (out == t->held_in)
			return;
		struct hp_raw ev = t->held[out % HP_HELD_EVENTS];
		struct hp_raw *e = take_slot_slow(t);
		if (e)
			hp_raw_fill(e, ev.addr, ev.tick);
		else
			t->lost_reentry++;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* stored before it counts as out */
		t->held_out = out + 1;
	}
}

/* The switch is done: from now on a handler's events go straight into the
 * chunk, once nothing held is left to go before them. */
static void stop_holding(struct hp_thread *t)
{
	for (;;) {
		drain_held(t);
		__atomic_store_n(&t->switching, 0, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* switching off, then the last look */
		if (t->held_out == t->held_in)
			return;
		/* A handler held one between the drain and here. */
		__atomic_store_n(&t->switching, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

/* The time this slow path took, from the event it ran for (and those it
 * put in after) to now, for the reader to cut out of every open frame. */
static void note_own_time(struct hp_thread *t)
{
	if (has_partial_chunk(t))
		t->chunk[slot_of(t, t->head)].own = (struct hp_chunk_own){
			.tick = hp_tick(), .at = (uint32_t)(hp_tls.pos - chunk_base(t, t->head)) };
}

/*
 * The common chunk switch needs no lock and no system call: a free chunk
 * is there (or ring mode drops the oldest), and the memory mark says this
 * is no forked child. Every 64th switch takes the full path all the same,
 * whose getpid also finds a child running on our memory (a raw vfork).
 * A full ring (the writer is behind) takes the full path too, for the
 * owner may help the writer, under its lock, with signals held; but the
 * memory mark answers for getpid there.
 */
enum switch_way { SWITCH_FAST, SWITCH_HELD, SWITCH_HELD_ASKING_PID };

static enum switch_way way_to_switch(struct hp_thread *t)
{
	if (hp_tls.pos < chunk_end(t) || hp_buffer_finished() || !hp_buffer_client.marked_ours())
		return SWITCH_HELD_ASKING_PID;
	if (++t->fast_switches % 64 == 0)
		return SWITCH_HELD_ASKING_PID;
	if (buffer_mode == HP_MODE_RING)
		return SWITCH_FAST;
	/* Acquire: as in make_room, which finds the same free chunk. (A ring
	 * about to double still looks full here: that switch takes the held
	 * path, once.) */
	uint32_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	if (!hp_buffer_client.threaded())
		return SWITCH_HELD_ASKING_PID;
	return t->head + 1 - tail < t->nchunks ? SWITCH_FAST : SWITCH_HELD;
}

/* A handler that ran since way_to_switch looked may have taken the free
 * chunk it saw (and filled the next): with no room left, the switch may
 * wait for the writer or take its lock (help), which only the held path
 * may do. Then, and only then, signals are held for it. */
static void switch_chunk_fast(struct hp_thread *t)
{
	/* Acquire: as in make_room. */
	uint32_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	if (buffer_mode == HP_MODE_RING || t->head + 1 - tail < t->nchunks) {
		switch_chunk(t, 0);
		return;
	}
	hp_sigmask_t saved;
	hp_signals_hold(&saved);
	switch_chunk(t, 0);
	hp_signals_release(&saved);
}

/*
 * The chunk switch with signals on (holding signals off costs two system
 * calls, some microseconds here, every 4096 events). An instrumented
 * handler that runs meanwhile finds `switching` and holds its events; the
 * new chunk gets this event first, then the held ones, then the switch's
 * own time. Only then does the fast path get its end (a handler's fast
 * path would otherwise write before them), still inside chunk work, so
 * that a fatal signal's flush on another thread, which nulls every end,
 * comes after.
 */
static void switch_fast(struct hp_thread *t, uint64_t addr, struct hp_raw *taken, uint64_t tick)
{
	int saved_errno = errno; /* publish may wake the writer */
	/* Before busy: a handler's event finds one or the other set, and is
	 * held, not dropped. */
	__atomic_store_n(&t->switching, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* set before busy, and before the chunk is looked at */
	if (!enter_chunk_work(1)) {
		/* Too late for them: the final flush takes its snapshot now. */
		t->lost_reentry += t->held_in - t->held_out;
		park_until_death(taken);
	}
	/* The old end off before pos moves (a handler holds from here on, and
	 * sets no end): a smaller chunk's wrap puts pos in chunk 0, which may
	 * lie within the largest chunk's width below the old end, where a
	 * handler's fast path would take it for the chunk that end closes. */
	hp_tls.end = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* A handler may have switched chunks since way_to_switch looked: it
	 * left this event's slot to it, maybe in the chunk it now fills. */
	int full = hp_tls.pos >= chunk_end(t);
	if (full)
		switch_chunk_fast(t);
	struct hp_raw *e = in_chunk(t, taken) ? taken : take_slot_slow(t);
	if (e)
		hp_raw_fill(e, addr, tick);
	drain_held(t);
	if (full)
		note_own_time(t);
	/* Not busy any more (a handler's event would be dropped), still
	 * switching (it is held), until nothing held is left. */
	hp_tls.busy = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	stop_holding(t);
	arm_end(t);
	leave_chunk_work(0);
	errno = saved_errno;
}

/*
 * The hook took `taken` at or past the end it read just before: the chunk
 * is full, or this thread has no buffer yet, or the clock is not the TSC
 * (end is NULL then). The slot is ours whatever happened since (the take
 * is one instruction): if it lies inside the current chunk it is filled,
 * whether the clock sent us here or a signal handler moved to the chunk
 * that follows in memory.
 */
static int control_gate(uint64_t addr, struct hp_raw *taken);
static __attribute__((noinline)) void record_slow_at(uint64_t addr, struct hp_raw *taken, uint64_t at);

/* The runtime starts at the first event, and the filters with it: that
 * event is judged by them too. Signals wait, as in the slow path. */
static __attribute__((noinline, cold)) void start_runtime_first(void)
{
	int saved_errno = errno;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	hp_buffer_client.ready();
	hp_signals_release(&saved_mask);
	errno = saved_errno;
}

/* A function event the filters drop (hp_filter.h). Its slot goes back;
 * if a signal handler took slots after it, it holds HP_RAW_NOTHING. */
static void drop_slot(struct hp_raw *taken)
{
	if (taken + 1 == hp_tls.pos)
		hp_tls.pos = taken;
	else
		record_slow_at(HP_RAW_NOTHING, taken, 0);
}

/* Small, so that a filtered event costs no more than it must: the rest is
 * out of line. The canonical frame address is the hook's caller's stack
 * pointer when the hook tail-calls here (it does at -O1 and above). */
void hp_buffer_record_slow(uint64_t addr, struct hp_raw *taken, uint64_t call_site)
{
	if (unlikely(!hp_tls.thread) && !hp_tls.retired && !hp_tls.busy && hp_buffer_client.not_started())
		start_runtime_first();
	if (hp_filter_on && !(addr & HP_RAW_CONTROL) && !hp_tls.busy && !hp_tls.retired &&
	    hp_filter_event(addr, (uintptr_t)__builtin_dwarf_cfa(), call_site)) {
		drop_slot(taken);
		return;
	}
	record_slow_at(addr, taken, 0);
}

/* at: the event's tick, or 0 for now. */
static void record_slow_at(uint64_t addr, struct hp_raw *taken, uint64_t at)
{
	/* Without a buffer, start-up may be choosing the clock on another
	 * thread right now: reading it would race (the tick is read below,
	 * once the client's ready() has ordered us after start-up). */
	uint64_t tick = at ? at : hp_tls.thread ? hp_tick() : 0;
	if (unlikely(hp_tls.thread && holding(hp_tls.thread))) {
		give_back(taken);
		hold(hp_tls.thread, addr, tick);
		return;
	}
	if (unlikely(hp_tls.busy || hp_tls.retired)) {
		/* The slot goes back (nobody took one after it: handlers that
		 * ran since gave theirs back too), else switch_chunk would keep
		 * it for an event that never comes. */
		give_back(taken);
		if (hp_tls.retired != HP_UNTRACED)
			count_lost(hp_tls.busy ? HP_LOST_REENTRY : HP_LOST_LATE);
		return;
	}
	if (must_stop())
		park_until_death(taken);
	if (unlikely(!hp_tls.gating && (hp_tls.paused || control_disarmed())) &&
	    control_gate(addr, taken))
		return;
	struct hp_thread *t = hp_tls.thread;
	if (t && (in_chunk(t, taken) || (!hook_fills() && in_chunk_just_published(t, taken)))) {
		hp_raw_fill(taken, addr, tick);
		return;
	}
	enum switch_way way = t ? way_to_switch(t) : SWITCH_HELD_ASKING_PID;
	if (way == SWITCH_FAST) {
		switch_fast(t, addr, taken, tick);
		return;
	}
	if (unlikely(!t && no_buffer_until) && no_buffer_yet(taken))
		return;
	int own_time = 0;
	int saved_errno = errno;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	if (!enter_chunk_work(1))
		park_until_death(taken);
	int child = t && way == SWITCH_HELD_ASKING_PID ? hp_buffer_client.in_child() : HP_NOT_A_CHILD;
	if (child == HP_CHILD_AFRESH)
		t = NULL; /* hp_tls is new: the child is traced from here on */
	if (child == HP_CHILD_UNTRACED) {
		/* hp_tls is retired now, or is its parent's (a child on the
		 * parent's memory): the slot goes back either way. */
		give_back(taken);
		t = NULL;
	} else if (t) {
		if (hp_tls.pos >= chunk_end(t)) {
			switch_chunk(t, 1);
			own_time = 1;
		}
	} else if (hp_tls.retired) {
		/* A child that is not traced. */
	} else if (hp_buffer_client.ready() && hp_buffer_stopped()) {
		/* HOOKPROF_START=off, just read by the start-up this event ran:
		 * nothing is recorded, and no buffer made, until the start. */
		give_back(taken);
	} else if (hp_buffer_client.ready()) {
		/* A control word has no frame to find the callers of. */
		t = start_thread(addr & HP_RAW_CONTROL ? 0 : addr);
		tick = at ? at : hp_tick();
		if (!t)
			no_buffer(taken);
		own_time = t != NULL;
	} else {
		/* Not traced, and never will be: later events stop at the top. */
		hp_tls.retired = HP_UNTRACED;
	}
	struct hp_raw *e = t && in_chunk(t, taken) ? taken : take_slot_slow(t);
	if (e)
		hp_raw_fill(e, addr, tick);
	if (own_time)
		note_own_time(t);
	leave_chunk_work(1);
	hp_signals_release(&saved_mask);
	errno = saved_errno;
}

/* ---- the control API --------------------------------------------------- */

/* Stop and start, process-wide. gen is a sequence lock: odd while the
 * writer (under ctl_lock) changes the rest; +2 per stop or start. */
static struct {
	uint32_t gen;
	uint32_t stopped;
	uint64_t stop_tick, start_tick;
} ctl;
/* A leaf (docs/design.md, "Locks"): stop and start; never in signal context. */
static hp_mutex_t ctl_lock = HP_MUTEX_INITIALIZER;

struct ctl_state {
	uint32_t gen, stopped;
	uint64_t stop_tick, start_tick;
};

static void ctl_read(struct ctl_state *c)
{
	for (;;) {
		/* Acquire: the fields below are read after the gen that covers them. */
		c->gen = __atomic_load_n(&ctl.gen, __ATOMIC_ACQUIRE);
		c->stopped = __atomic_load_n(&ctl.stopped, __ATOMIC_RELAXED);
		c->stop_tick = __atomic_load_n(&ctl.stop_tick, __ATOMIC_RELAXED);
		c->start_tick = __atomic_load_n(&ctl.start_tick, __ATOMIC_RELAXED);
		/* Acquire fence: the field reads above happen before the second
		 * read of gen; a writer that began meanwhile changed it. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(c->gen & 1) && __atomic_load_n(&ctl.gen, __ATOMIC_RELAXED) == c->gen)
			return;
	}
}

/* Under ctl_lock. */
static void ctl_write(uint32_t stopped, uint64_t tick)
{
	__atomic_store_n(&ctl.gen, ctl.gen + 1, __ATOMIC_RELAXED);
	/* Release fence: the odd gen is visible before any field changes. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&ctl.stopped, stopped, __ATOMIC_RELAXED);
	if (stopped)
		__atomic_store_n(&ctl.stop_tick, tick, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&ctl.start_tick, tick, __ATOMIC_RELAXED);
	/* Seq_cst: the new gen is ordered before the stopper nulls the other
	 * threads' ends, and against their reading of it after setting one
	 * (control_disarmed): either they see it, or we null what they set. */
	__atomic_store_n(&ctl.gen, ctl.gen + 1, __ATOMIC_SEQ_CST);
}

/* The calling thread must drop its events, or owes control events. */
static int control_disarmed(void)
{
	return hp_tls.paused || __atomic_load_n(&ctl.gen, __ATOMIC_SEQ_CST) != hp_tls.ctl_gen ||
	       __atomic_load_n(&ctl.stopped, __ATOMIC_RELAXED);
}

static void record_at(uint64_t word, uint64_t tick)
{
	struct hp_raw *end;
	struct hp_raw *e = hp_take_slot(&end);
	if (hp_slot_in_reach(e, end))
		hp_raw_fill(e, word, tick);
	else
		record_slow_at(word, e, tick);
}

/* A stop recorded late is not earlier than the event before it in the
 * chunk, nor than the chunk's stale_below: the consumer takes an older
 * tick for a slot not filled yet (hp_chunk_meta). */
static uint64_t not_before_last(uint64_t tick)
{
	const struct hp_thread *t = hp_tls.thread;
	uint64_t floor = t->chunk[slot_of(t, t->head)].stale_below;
	if (has_partial_chunk(t) && hp_tls.pos[-1].tick > floor)
		floor = hp_tls.pos[-1].tick;
	return tick > floor ? tick : floor;
}

/* The STOP and START this thread has not recorded yet, at the moments
 * they were asked for. Stop and start cycles it slept through whole
 * collapse into the last one. */
static void catch_up(const struct ctl_state *c)
{
	if (!hp_tls.thread) {
		hp_tls.stop_open = 0; /* no frame open: nothing to stop */
	} else {
		if (!hp_tls.stop_open) {
			record_at(hp_raw_control(HP_RAW_STOP, 0), not_before_last(c->stop_tick));
			hp_tls.stop_open = 1;
		}
		if (!c->stopped) {
			record_at(hp_raw_control(HP_RAW_START, 0), not_before_last(c->start_tick));
			hp_tls.stop_open = 0;
		}
	}
	hp_tls.ctl_gen = c->gen;
}

static void rearm_self(void)
{
	struct hp_thread *t = hp_tls.thread;
	if (!t || hp_buffer_in_own_work())
		return; /* a chunk switch in progress sets end, and checks */
	__atomic_store_n(&hp_tls.end, hook_fills() ? chunk_end(t) : NULL, __ATOMIC_RELAXED);
	/* Orders the end stored before reading stopping_tid and the control
	 * state: a stop or a fatal signal's flush that nulled the ends before
	 * is seen here (pairs with ctl_write and hp_buffer_stop_others). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (must_stop() || control_disarmed())
		__atomic_store_n(&hp_tls.end, NULL, __ATOMIC_RELAXED);
}

/*
 * An event of a thread that is paused, or that has not caught up with a
 * stop or start. 1 if it was dealt with here: dropped, or recorded after
 * the control events owed before it; 0: the slow path goes on with it.
 */
static int control_gate(uint64_t addr, struct hp_raw *taken)
{
	/* A signal handler's events took the slots after ours: ours is
	 * filled as it is, and the next event is gated. */
	if (taken + 1 != hp_tls.pos)
		return 0;
	struct ctl_state c;
	ctl_read(&c);
	hp_tls.pos = taken; /* back: the control events come first */
	if (c.gen != hp_tls.ctl_gen) {
		hp_tls.gating = 1;
		catch_up(&c);
		hp_tls.gating = 0;
	}
	if (hp_tls.paused || c.stopped)
		return 1;
	if (!hp_tls.thread)
		return 0; /* a new thread: the slow path starts its buffer */
	rearm_self();
	record_at(addr, hp_tick());
	return 1;
}

void hp_buffer_control(uint64_t word)
{
	if (hp_tls.paused)
		return;
	hp_buffer_record(word, 0);
}

void hp_buffer_pause_self(void)
{
	if (!hp_tls.paused)
		hp_buffer_control(hp_raw_control(HP_RAW_PAUSE, 0));
	/* Atomic against a signal handler's pause on this thread; relaxed:
	 * nobody else reads it. */
	__atomic_fetch_add(&hp_tls.paused, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&hp_tls.end, NULL, __ATOMIC_RELAXED);
}

void hp_buffer_unpause_self(void)
{
	uint32_t n = __atomic_load_n(&hp_tls.paused, __ATOMIC_RELAXED);
	if (!n || __atomic_sub_fetch(&hp_tls.paused, 1, __ATOMIC_RELAXED))
		return;
	rearm_self();
	hp_buffer_control(hp_raw_control(HP_RAW_RESUME, 0));
}

/* Every thread's next event goes to the slow path, which finds the stop. */
static void disarm_all(void)
{
	hp_sigmask_t saved;
	hp_signals_hold(&saved);
	hp_mutex_lock(&hp_threads_lock);
	for (struct hp_thread *t = hp_threads; t; t = t->next)
		if (!t->exited && t->tls)
			__atomic_store_n(&t->tls->end, NULL, __ATOMIC_RELAXED);
	hp_mutex_unlock(&hp_threads_lock);
	hp_signals_release(&saved);
}

static int set_stopped(uint32_t stopped)
{
	hp_mutex_lock(&ctl_lock);
	int changed = ctl.stopped != stopped;
	if (changed)
		ctl_write(stopped, hp_tick());
	hp_mutex_unlock(&ctl_lock);
	return changed ? 0 : -1;
}

int hp_buffer_stop_all(void)
{
	if (set_stopped(1))
		return -1;
	disarm_all();
	return 0;
}

/* The threads stopped have their ends NULL: no need to disarm again. */
int hp_buffer_start_all(void)
{
	return set_stopped(0);
}

void hp_buffer_begin_stopped(void)
{
	set_stopped(1);
}

void hp_buffer_name_self(uint32_t id)
{
	struct hp_thread *t = hp_tls.thread;
	if (t)
		/* Relaxed: the writer reads it when it writes a THREAD record;
		 * an old name or a new one is fine. */
		__atomic_store_n(&t->named, id + 1, __ATOMIC_RELAXED);
	else
		name_before_buffer = id + 1;
}

int hp_buffer_stopped(void)
{
	return __atomic_load_n(&ctl.stopped, __ATOMIC_RELAXED);
}

void hp_buffer_publish_self(void)
{
	struct hp_thread *t = hp_tls.thread;
	if (!t || hp_buffer_in_own_work())
		return;
	if (enter_chunk_work(1)) {
		next_chunk(t, 1);
		leave_chunk_work(1);
	} else {
		hp_tls.busy = 0; /* a fatal signal's flush writes it */
	}
}

/* In a fatal signal's flush the lock may be held by the very thread the
 * signal interrupted: wait a little, then go on without it (the writer is
 * stopped by then, and the other threads only add themselves). */
static int lock_threads(int in_signal)
{
	return hp_mutex_lock_bounded(&hp_threads_lock, in_signal, 100);
}

/* A fatal signal may have come between a hook's taking its slot and filling
 * it: that slot is not published (hp_chunk_meta, stale_below). */
static void drop_unfilled_newest(const struct hp_thread *t)
{
	const struct hp_raw *start = chunk_base(t, t->head);
	if (hp_tls.pos > start &&
	    hp_tls.pos[-1].tick < t->chunk[slot_of(t, t->head)].stale_below)
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
	int interrupted = hp_buffer_in_own_work();
	hp_tls.busy = 1;
	int locked = lock_threads(in_signal) == 0;
	clamp_overshoot(t);
	if (!interrupted && has_partial_chunk(t)) {
		drop_unfilled_newest(t);
		if (has_partial_chunk(t))
			publish(t);
	}
	hp_thread_name_self(t->exit_name, sizeof(t->exit_name));
	drop_signal_stack(t);
	t->tls = NULL;
	/* Release: the last head and everything above are visible before the
	 * consumer sees exited; from then on it may free t, so t is not
	 * touched again. */
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	if (locked)
		hp_mutex_unlock(&hp_threads_lock);
	hp_tls = (struct hp_tls){ .retired = HP_RETIRED };
}

size_t hp_buffer_take(struct hp_thread *t, struct hp_raw *scratch, const struct hp_raw **ev,
		      uint32_t *seq, struct hp_chunk_meta *meta)
{
	for (;;) {
		uint32_t tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
		/* Acquire: pairs with publish(); the chunk and its length are visible. */
		uint32_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		if (tail == head)
			return 0;
		size_t n = t->chunk[slot_of(t, tail)].len;
		const struct hp_raw *src = chunk_base(t, tail);
		*seq = tail;
		if (meta)
			*meta = t->chunk[slot_of(t, tail)];
		if (buffer_mode == HP_MODE_STREAM) {
			*ev = src;
			return n;
		}
		if (n > t->chunk_events)
			n = t->chunk_events;
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

/* A hook interrupted between taking its slot and filling it goes on when
 * its handler returns, in microseconds, or a few time slices if the owner
 * was preempted: long past that, it is not going to (the handler jumped
 * away, or is blocked). An owner that publishes chunks meanwhile is
 * running: if the slot is still not filled after 2 of them, its handler
 * jumped away (the hook would have filled it first thing on return). */
uint64_t hp_buffer_await_fill_ns = 1000 * 1000 * 1000;
#define AWAIT_FILL_POLL_US 50u
#define AWAIT_FILL_CHUNKS 2u

/* The owner sleeps for a free chunk, and none is free: it waits for this
 * consumer. Its waiting flag alone says too much: a release woke it, and
 * it clears the flag only once it runs again (then returns from its
 * handler and fills the slot). Relaxed: hints, as below. */
static int waits_for_consumer(struct hp_thread *t)
{
	return __atomic_load_n(&t->waiting, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&t->head, __ATOMIC_RELAXED) - __atomic_load_n(&t->tail, __ATOMIC_RELAXED) >=
		       __atomic_load_n(&t->nchunks, __ATOMIC_RELAXED);
}

/* Could anybody fill a slot of t while this thread waits for it, since
 * the owner had published head_then chunks? */
static int fill_may_come(struct hp_thread *t, uint32_t head_then)
{
	/* Relaxed: hints; the slot itself is read with acquire. An owner that
	 * waits for this consumer, or has exited, is not in its handler. */
	return !waits_for_consumer(t) && !__atomic_load_n(&t->exited, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&stopping_tid, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&t->head, __ATOMIC_RELAXED) - head_then < AWAIT_FILL_CHUNKS;
}

static int filled(const struct hp_raw *e, uint64_t stale_below)
{
	/* Acquire: pairs with the hook's release store of the tick; its
	 * address is visible with it. */
	return __atomic_load_n(&e->tick, __ATOMIC_ACQUIRE) >= stale_below;
}

int hp_buffer_await_fill(struct hp_thread *t, const struct hp_raw *e, uint64_t stale_below)
{
	/* Ring mode hands out a copy; the owner's hook runs on only when
	 * this thread, in its handler, returns. */
	if (buffer_mode == HP_MODE_RING || hp_tls.thread == t)
		return filled(e, stale_below);
	uint64_t since = hp_clock_ns();
	uint32_t head_then = __atomic_load_n(&t->head, __ATOMIC_RELAXED);
	while (!filled(e, stale_below)) {
		if (!fill_may_come(t, head_then) || hp_clock_ns() - since > hp_buffer_await_fill_ns)
			return filled(e, stale_below);
		hp_sleep_us(AWAIT_FILL_POLL_US);
	}
	return 1;
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
 * any of n slots may hold an event of an earlier lap of the ring, or zeros,
 * whose tick is below stale_below (hp_chunk_meta); most often the newest,
 * whose hook is running on its core, or one whose hook a signal handler
 * interrupted. Those are left out. The hook stores the tick after the
 * address, so a fresh tick means a complete event. Returns the number
 * copied; *left_out counts the unfilled slots before a filled one (a hook
 * a handler interrupted: its event is older than the trace's end, as the
 * writer counts it, HP_LOST_UNFILLED), not the newest ones (hooks under
 * way as the trace ends: their events come after it).
 */
static size_t copy_filled(struct hp_raw *to, const struct hp_raw *from, size_t n, uint64_t stale_below,
			  uint64_t *left_out)
{
	size_t copied = 0, unfilled_run = 0;
	for (size_t i = 0; i < n; i++) {
		/* Acquire: pairs with the hook's release store of the tick. */
		uint64_t tick = __atomic_load_n(&from[i].tick, __ATOMIC_ACQUIRE);
		if (tick < stale_below) {
			unfilled_run++;
			continue;
		}
		*left_out += unfilled_run;
		unfilled_run = 0;
		to[copied].addr = __atomic_load_n(&from[i].addr, __ATOMIC_RELAXED);
		to[copied++].tick = tick;
	}
	return copied;
}

size_t hp_buffer_snapshot_partial(struct hp_thread *t, struct hp_raw *scratch, uint32_t *seq,
				  uint64_t *unfilled, int in_signal)
{
	size_t n = 0;
	*unfilled = 0;
	if (lock_threads(in_signal))
		return 0;
	if (!t->exited && t->tls) {
		uint32_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
		struct hp_raw *start = chunk_base(t, head);
		/* Relaxed: the hook takes its slot before filling it, so pos
		 * orders nothing; copy_filled checks each slot's tick. */
		struct hp_raw *pos = __atomic_load_n(&t->tls->pos, __ATOMIC_RELAXED);
		/* The owner published chunk head - 1 and waits for a free one:
		 * with 2 chunks, pos (that chunk's end) also lies one chunk past
		 * chunk head's end, where the clamp below would take stale
		 * events of chunk head - 2 for this one's. */
		if (pos == chunk_base(t, head - 1) + t->chunk_events)
			pos = start;
		/* A hook took a slot past its full chunk and has not reached its
		 * slow path yet (or is parking there): the chunk is full. */
		pos = within_chunk(t, pos, start + t->chunk_events);
		if (pos > start && pos <= start + t->chunk_events) {
			/* Not its stale_below, which the owner sets only after
			 * it publishes head - 1 (no order with our acquire of
			 * head): the same bound, set long before. */
			n = copy_filled(scratch, start, (size_t)(pos - start),
					published_at(&t->chunk[slot_of(t, head)]) + 1, unfilled);
			*seq = head;
		}
		/* Published meanwhile: the consumer takes it whole instead. The
		 * fence keeps the copy's reads before this second look at head. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->head, __ATOMIC_RELAXED) != head) {
			n = 0;
			*unfilled = 0;
		}
	}
	hp_mutex_unlock(&hp_threads_lock);
	return n;
}

/* ---- fork ------------------------------------------------------------ */

/* Frames deeper than the stack holds are counted, not kept: their exits
 * pop nothing that is kept. */
static size_t replay(uint64_t *stack, size_t depth, const struct hp_raw *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = ev[i].addr & ~HP_RAW_EXIT;
		if (addr & HP_RAW_CONTROL)
			continue; /* no frame */
		if (!(ev[i].addr & HP_RAW_EXIT)) {
			if (depth < HP_CHUNK_EVENTS)
				stack[depth] = addr;
			depth++;
		} else if (depth > HP_CHUNK_EVENTS) {
			depth--;
		} else if (depth && stack[depth - 1] == addr) {
			depth--;
		} else {
			depth = hp_stack_unwind_to_addr(stack, depth, addr);
		}
	}
	return depth;
}

void hp_buffer_note_fork(const uint64_t *frames, size_t n, uint32_t encoded_of_tail, uint64_t tick)
{
	static uint64_t stack[HP_CHUNK_EVENTS];
	struct hp_thread *t = hp_tls.thread;
	/* Relaxed, n and tid: other threads read them (put_inherited). */
	__atomic_store_n(&inherited.n, 0, __ATOMIC_RELAXED);
	if (!t || hp_buffer_in_own_work())
		return;
	size_t depth = n < HP_CHUNK_EVENTS ? n : HP_CHUNK_EVENTS;
	memcpy(stack, frames, depth * sizeof(stack[0]));
	/* The writer is held off: tail stays, and we are the owner. The
	 * oldest chunk may be encoded in part already (a slot filled late:
	 * hp_writer_open_frames), its first events in frames. */
	uint32_t skip = encoded_of_tail;
	for (uint32_t seq = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE); seq != t->head; seq++, skip = 0) {
		uint32_t len = t->chunk[slot_of(t, seq)].len;
		skip = skip < len ? skip : len;
		depth = replay(stack, depth, chunk_base(t, seq) + skip, len - skip);
	}
	if (has_partial_chunk(t)) {
		const struct hp_raw *start = chunk_base(t, t->head);
		depth = replay(stack, depth, start, (size_t)(hp_tls.pos - start));
	}
	depth = depth < HP_CHUNK_EVENTS ? depth : HP_CHUNK_EVENTS;
	for (size_t i = 0; i < depth; i++)
		inherited.ev[i] = (struct hp_raw){ .addr = stack[i], .tick = tick };
	__atomic_store_n(&inherited.tid, 0, __ATOMIC_RELAXED); /* the child's thread id, set there */
	__atomic_store_n(&inherited.n, depth, __ATOMIC_RELAXED);
}

size_t hp_buffer_inherited(const struct hp_raw **ev)
{
	*ev = inherited.ev;
	return __atomic_load_n(&inherited.n, __ATOMIC_RELAXED);
}

size_t hp_buffer_keep_since_fork(void)
{
	struct hp_thread *t = hp_tls.thread;
	inherited.n = 0;
	if (!t || !t->wiped_on_fork)
		return 0;
	const struct hp_raw *start = chunk_base(t, t->head), *end = chunk_end(t);
	const struct hp_raw *pos = hp_tls.pos < end ? hp_tls.pos : end;
	const struct hp_raw *first = start;
	while (first < pos && !first->tick)
		first++;
	inherited.n = pos > first ? (size_t)(pos - first) : 0;
	memcpy(inherited.ev, first, inherited.n * sizeof(*first));
	inherited.tid = hp_gettid();
	return inherited.n;
}

/* Our own signal stack goes with the buffer, unless we run on it now. */
static int may_unmap_own(struct hp_thread *t)
{
	if (hp_signal_stack_running(t->signal_stack))
		return 0;
	drop_signal_stack(t);
	return 1;
}

void hp_buffer_reset_in_child(void)
{
	struct hp_thread *next;
	for (struct hp_thread *t = hp_threads; t; t = next) {
		next = t->next;
		if (t == hp_tls.thread && !may_unmap_own(t))
			continue;
		hp_pages_free(t->base, t->map_bytes);
	}
	hp_threads = NULL;
	hp_mutex_reinit(&hp_threads_lock);
	committed_bytes = 0;
	busy_rings = 0;
	live_rings = 0;
	next_stream = 0;
	finished = 0;
	stopping_tid = 0;
	/* The parent's threads that were switching chunks are not here; this
	 * one is, if a raw fork was found out in its slow path. */
	__atomic_store_n(&chunk_workers, hp_tls.busy ? 1 : 0, __ATOMIC_RELAXED);
	if (!inherited.tid)
		inherited.tid = hp_gettid();
	/* From the slow path (a raw fork found out), still inside it. */
	hp_tls = (struct hp_tls){ .busy = hp_tls.busy };
}
