/*
 * hp_buffer.h - per-thread event buffers and the per-event fast path.
 *
 *   owner thread (hooks)                         consumer (writer thread, or
 *                                                the flush at exit/signal/API)
 *   hp_tls.pos --> [ chunk h%n : filling   ]
 *                  [ chunk ... : published ] <-- hp_buffer_take(): oldest first
 *                  [ chunk t%n : published ]
 *                   head = chunks published        tail = chunks consumed
 *
 * Each thread owns one mmap'd buffer of n fixed-size chunks used as a ring.
 * The hook stores a 16-byte hp_raw at hp_tls.pos; when the chunk is full the
 * slow path publishes it (head++) and moves to the next free chunk. In
 * stream mode a full ring waits for the consumer (lossless); in ring mode the
 * owner drops the oldest published chunk instead and counts its events lost.
 */
#ifndef HP_BUFFER_H
#define HP_BUFFER_H

#include <stdint.h>

#include "hp_config.h"
#include "hp_encode.h"
#include "hp_platform.h"

/* The largest chunk; a ring's own (hp_thread.chunk_events) may be smaller. */
#define HP_CHUNK_BYTES (64u << 10)
#define HP_CHUNK_EVENTS (HP_CHUNK_BYTES / sizeof(struct hp_raw))
/* The smallest chunk: a page. */
#define HP_CHUNK_MIN_EVENTS (4096u / sizeof(struct hp_raw))
/*
 * A ring's first 2 chunks are its own, outside the budget below, so with
 * many threads alive at once they add up: 256 busy threads would take
 * 32 MiB. Past this many live rings a new ring's chunks are half as
 * large, and again at each doubling of their number, down to a page: 32
 * rings of 128 KiB, 32 of 64 KiB, 64 of 32 KiB, 128 of 16 KiB, then
 * 8 KiB each (hp_buffer.c, chunk_events_for_new_ring).
 */
#define HP_FULL_RINGS 32u

/*
 * Stream mode: the event buffers of a process's live threads grow within
 * this budget (or one buffer's size, if HOOKPROF_BUFFER is larger). Each
 * ring starts with 2 chunks (128 KiB) of its own and doubles as its
 * thread fills it (hp_buffer.c, grow_ring), up to HOOKPROF_BUFFER, while
 * it is within its share and the budget has room: the busy threads get
 * the memory, and a thread that exits gives its part back. Memory stays
 * within the budget plus each ring's first 2 chunks (HP_FULL_RINGS). Ring mode keeps every
 * thread's size: what a flight recorder keeps is what was asked for.
 */
#define HP_STREAM_BUDGET (8u << 20)
/* The least time between two doublings of a ring (hp_buffer.c; tests). */
extern uint64_t hp_buffer_grow_interval_ns HP_HIDDEN;

struct hp_tls {
	struct hp_raw *pos; /* next free slot */
	struct hp_raw *end; /* a slot outside the chunk ending here: slow path */
	struct hp_thread *thread;
	uint32_t busy;    /* in hookprof's own slow path: nested events are dropped */
	uint32_t retired; /* HP_RETIRED or HP_UNTRACED: later events are dropped */
	/* The control API (hookprof.h): while paused, or while the process is
	 * stopped, end is NULL and every event reaches the slow path, which
	 * drops it; the hook itself tests nothing more. */
	uint32_t paused;    /* hookprof_pause nesting */
	uint32_t ctl_gen;   /* the stop/start generation this thread has recorded */
	uint32_t stop_open; /* recorded a STOP and no START since */
	uint32_t gating;    /* recording the control events it owes */
};

/* hp_tls.retired: flushed for the last time (later events count as lost),
 * or never traced (the runtime is off, a forked child: nothing to count). */
enum { HP_RETIRED = 1, HP_UNTRACED = 2 };

_Static_assert(__builtin_offsetof(struct hp_tls, pos) == 0 &&
		       __builtin_offsetof(struct hp_tls, end) == 8,
	       "hp_take_slot knows where pos and end are");

extern __thread struct hp_tls hp_tls HP_TLS_MODEL HP_HIDDEN;

#define HP_HELD_EVENTS 64u

/* The slow path's own time in a chunk (a chunk switch, a buffer's start):
 * from the event before slot `at` to `tick`, the thread ran hookprof. The
 * writer puts it in the stream there (docs/format.md, op 0x4e). */
struct hp_chunk_own {
	uint64_t tick; /* 0: none */
	uint32_t at;
	uint32_t unused;
};

/* What the owner writes of each chunk before it publishes it. One array
 * after struct hp_thread: a ring's first chunks touch one page of it,
 * however many chunks the ring may grow to. */
struct hp_chunk_meta {
	uint32_t len;            /* events in the published chunk */
	uint32_t unused;
	struct hp_chunk_own own;
	/* The hook takes its slot before it fills it, and a signal handler
	 * that runs in between may fill the chunk up and publish it: the
	 * slot is filled late, after the consumer may have read it. What
	 * it holds until then is an earlier lap's event (or zeros), whose
	 * tick is below stale_below: the tick of this chunk's previous
	 * publication, + 1, set when the owner began to fill it (every
	 * event it takes since is younger). The consumer waits for such a
	 * slot, or leaves it out (hp_buffer_await_fill). */
	uint64_t stale_below;
	uint64_t published_at;   /* the tick of its last publication (atomic:
				    a final flush's snapshot reads it) */
};

struct hp_thread {
	struct hp_thread *next;  /* hp_threads list, under hp_threads_lock */
	struct hp_tls *tls;      /* owner's TLS, valid while !exited, under the lock */
	uint32_t stream;         /* stream id in the trace; tids can be reused */
	uint32_t tid;
	struct hp_raw *base;     /* max_chunks * chunk_events slots */
	uint32_t chunk_events;   /* a chunk's: a power of two, at most HP_CHUNK_EVENTS */
	struct hp_chunk_meta *chunk; /* max_chunks of them, by slot */
	size_t map_bytes;
	size_t budgeted;         /* bytes counted in the stream budget, given back when freed */
	uint32_t nchunks;        /* a power of two; doubles as the ring fills (hp_buffer.c, grow_ring) */
	uint32_t max_chunks;     /* mapped: the full ring */
	uint32_t busy_counted;   /* it filled its first 2 chunks: it has a share of the budget */
	uint64_t grown_ns;       /* hp_clock_ns of its start or its last doubling */
	uint32_t head;           /* chunks published; written by the owner only */
	uint32_t tail;           /* chunks consumed (or dropped in ring mode) */
	uint32_t waiting;        /* owner sleeps on tail for a free chunk */
	uint32_t exited;         /* owner published its last chunk */
	uint64_t lost_ring;      /* events dropped by ring mode */
	uint64_t lost_reentry;   /* events raised inside hookprof's slow path */
	char name[16];           /* at its start: read by the consumer at any time */
	char exit_name[16];      /* at its exit: read once exited is seen */
	uint32_t named;          /* hookprof_thread_name's string id + 1, or 0 */
	void *signal_stack;      /* ours, if we installed one for the owner */
	struct hp_frames root;    /* callers of its first instrumented frame */
	uint32_t wiped_on_fork;  /* a forked child finds the events zeroed (MADV_WIPEONFORK) */
	/* The owner's chunk switch without system calls runs with signals on:
	 * the events of an instrumented handler that interrupts it are held
	 * here and put in the chunk after the switch (hp_buffer.c, hold). */
	uint32_t switching;      /* in such a switch, or draining what it held */
	uint32_t in_hold;        /* hold() is storing one; a nested one is lost */
	uint32_t held_in, held_out; /* held[held_out..held_in) wait, modulo HP_HELD_EVENTS */
	struct hp_raw held[HP_HELD_EVENTS];
	uint32_t fast_switches;  /* since the last switch that asked getpid */
	/* The consumer's state of this stream, its own and opaque here
	 * (hp_writer.c); NULL until it needs one, freed by it. */
	struct hp_writer_stream *consumer;
};

/*
 * What the buffer needs from its consumer and from the runtime: the few
 * slow-path callbacks below, in one table that the runtime defines
 * (hp_runtime.c), so that the buffer knows neither the writer nor the
 * runtime. A table fixed at link time rather than handed over at
 * start-up: the first event, which starts the runtime, may come before
 * any code of ours has run (an instrumented constructor of another
 * object), and it needs start() already.
 */
enum { HP_NOT_A_CHILD = 0, HP_CHILD_AFRESH = 1, HP_CHILD_UNTRACED = 2 };
struct hp_buffer_client {
	/* A quarter of a ring waits: wake the consumer thread if it sleeps. */
	void (*notify)(void);
	/* A consumer thread runs (else the owner drains its own chunks). */
	int (*threaded)(void);
	/* No consumer thread: encode t's published chunks on this thread. */
	void (*drain)(struct hp_thread *t);
	/* The owner's ring is full (stream mode): encode its published chunks
	 * on this thread if the consumer is not at work; 1 if that freed any.
	 * Asynchronous signals are held (the full path, or a fast switch that
	 * found no room: switch_chunk_fast). */
	int (*help)(struct hp_thread *t);
	/* An event lost outside any thread's stream (HP_LOST_*). */
	void (*count_lost)(int reason);
	/* The runtime has not started: the next event starts it. */
	int (*not_started)(void);
	/* Starts it if need be; 1 while the process is traced. */
	int (*ready)(void);
	/* Is this a forked child the fork handlers did not reach
	 * (HP_NOT_A_CHILD, HP_CHILD_AFRESH, HP_CHILD_UNTRACED)? A system call. */
	int (*in_child)(void);
	/* No system call: 1 if this is surely not a child with memory of its own. */
	int (*marked_ours)(void);
};
extern const struct hp_buffer_client hp_buffer_client HP_HIDDEN;

/* call_site: the hooks' second argument, the return address of the
 * function entered or left (the filters find its frame by it); 0 for a
 * control word. */
void hp_buffer_record_slow(uint64_t addr, struct hp_raw *taken, uint64_t call_site) HP_HIDDEN;
/* This thread is in hookprof's own slow path (busy), or switching chunks
 * with signals on: what would change its buffer waits, or is dropped. */
int hp_buffer_in_own_work(void) HP_HIDDEN;

/*
 * pos += 1 slot, returning the slot taken, and *end as read just before.
 * The add is one instruction on x86-64 (xadd, not locked: only this thread
 * writes pos), so that a signal handler on this thread runs wholly before
 * or wholly after it and never takes the same slot. end is read first: a
 * slot in the chunk that ends there is ours to fill whatever a handler did
 * after.
 */
static inline struct hp_raw *hp_take_slot(struct hp_raw **end)
{
#if defined(__x86_64__) && !defined(_WIN32) /* @gottpoff: ELF; mingw takes the #else */
	uintptr_t e = sizeof(struct hp_raw), off;
	__asm__ volatile("movq hp_tls@gottpoff(%%rip), %[off]\n\t"
			 "movq %%fs:8(%[off]), %[end]\n\t"
			 "xaddq %[e], %%fs:(%[off])"
			 : [e] "+r"(e), [off] "=&r"(off), [end] "=&r"(*end)
			 :
			 : "memory");
	return (struct hp_raw *)e;
#else
	*end = hp_tls.end;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	struct hp_raw *e = hp_tls.pos;
	hp_tls.pos = e + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return e;
#endif
}

/* Stores one event in a slot taken from pos (the hook, and the slow path). */
static inline void hp_raw_fill(struct hp_raw *e, uint64_t addr, uint64_t tick)
{
	/* Atomic: a consumer may read a slot filled late (hp_chunk_meta). */
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	/* Release: the address is stored before the tick, so that a final
	 * flush on another thread that finds a fresh tick in the newest slot
	 * finds the address too (hp_buffer_snapshot_partial). */
	__atomic_store_n(&e->tick, tick, __ATOMIC_RELEASE);
}

/*
 * The slot e, taken with end read just before, may be filled on the fast
 * path: within the largest chunk's width below end, not merely below end,
 * for a signal handler may have wrapped the ring to a lower chunk in
 * between. (A smaller chunk lies wholly in that width; a slot there below
 * its start is in the chunk a handler left pos in, which is ours.)
 */
static inline int hp_slot_in_reach(const struct hp_raw *e, const struct hp_raw *end)
{
	return (uintptr_t)e - (uintptr_t)(end - HP_CHUNK_EVENTS) < HP_CHUNK_BYTES;
}

/*
 * The per-event path: take a slot, store 16 bytes in it; or the slow path
 * when the slot is outside the chunk (the slow path gets the slot: with
 * end NULL, when the clock is not the TSC, every event goes there, and a
 * slot inside the chunk is still good). This one has no call to save
 * registers for.
 */
static inline void hp_buffer_record(uint64_t addr, uint64_t call_site)
{
	uint64_t tick = hp_cpu_tick();
	/* The slot is taken before it is filled: an instrumented signal handler
	 * that runs in between records into the slots after it (its events nest
	 * inside this one, with later ticks). */
	struct hp_raw *end;
	struct hp_raw *e = hp_take_slot(&end);
	if (unlikely(!hp_slot_in_reach(e, end))) {
		hp_buffer_record_slow(addr, e, call_site);
		return;
	}
	hp_raw_fill(e, addr, tick);
}

extern struct hp_thread *hp_threads HP_HIDDEN;
extern hp_mutex_t hp_threads_lock HP_HIDDEN;

int hp_buffer_init(const struct hp_config *cfg) HP_HIDDEN;
/* A thread's buffer as hp_buffer_init sized it (a power of two of chunks):
 * the largest; in stream mode a ring starts smaller and grows to it while
 * the budget allows. */
size_t hp_buffer_bytes(void) HP_HIDDEN;

/* Publishes the calling thread's partial chunk; it will record no more.
 * in_signal: from a fatal signal's flush (waits for locks a bounded time). */
void hp_buffer_retire_self(int in_signal) HP_HIDDEN;

/* A fatal signal's flush begins on the calling thread: every other thread
 * stops at its next event (parked until the process dies), so that the
 * snapshots of their buffers are their last events. */
void hp_buffer_stop_others(void) HP_HIDDEN;
/* A child is about to run on this thread's memory until it execs or exits
 * (vfork): the thread's state is set aside and the child records nothing;
 * the parent takes it back when the child is gone. */
void hp_buffer_suspend_self(struct hp_tls *saved) HP_HIDDEN;
void hp_buffer_resume_self(const struct hp_tls *saved) HP_HIDDEN;

/*
 * The control API. hp_buffer_control records a control word (hp_encode.h)
 * for the calling thread, in order with its function events, unless it is
 * paused or the process is stopped. Pause and unpause nest; the outermost
 * ones record PAUSE and RESUME. Stop and start are process-wide: each
 * thread records them at its next event (at the moment they were asked
 * for), so time stopped is no thread's. stop/start return 0, or -1 if the
 * state was already so. Not for signal handlers: start and stop lock.
 */
void hp_buffer_control(uint64_t word) HP_HIDDEN;
void hp_buffer_pause_self(void) HP_HIDDEN;
void hp_buffer_unpause_self(void) HP_HIDDEN;
int hp_buffer_stop_all(void) HP_HIDDEN;
int hp_buffer_start_all(void) HP_HIDDEN;
/* The name of the calling thread's THREAD record: string id. */
void hp_buffer_name_self(uint32_t id) HP_HIDDEN;
/* HOOKPROF_START=off: the run begins stopped. */
void hp_buffer_begin_stopped(void) HP_HIDDEN;
int hp_buffer_stopped(void) HP_HIDDEN;

/* Publishes the calling thread's partial chunk now, to make it visible. */
void hp_buffer_publish_self(void) HP_HIDDEN;

/*
 * Consumer side. hp_buffer_take returns the oldest published chunk of t
 * (n events at *ev, with its sequence number) or 0; the consumer calls
 * hp_buffer_release after encoding it. In ring mode the events are copied
 * into scratch (HP_CHUNK_EVENTS slots) since the owner may overwrite them.
 * meta (if not NULL): the chunk's, as published (its own time, the ticks
 * of slots not filled yet).
 */
size_t hp_buffer_take(struct hp_thread *t, struct hp_raw *scratch, const struct hp_raw **ev,
		      uint32_t *seq, struct hp_chunk_meta *meta) HP_HIDDEN;
void hp_buffer_release(struct hp_thread *t, uint32_t seq) HP_HIDDEN;
/* e, a slot of a chunk taken, holds a tick below its stale_below: the
 * owner took it and has not filled it yet. Waits for it to be filled,
 * unless nobody can fill it meanwhile (this is its owner, the owner waits
 * for the consumer or is gone, the events are a copy: ring mode), or the
 * owner published 2 more chunks meanwhile, or a second passed; 1 if it
 * was. Left out otherwise: its hook was interrupted by a handler that
 * never returned to it (it jumped away: then the hook never ran on, and
 * there is no event to miss), or has not in time. */
int hp_buffer_await_fill(struct hp_thread *t, const struct hp_raw *e, uint64_t stale_below) HP_HIDDEN;
/* How long it waits at most (1 s; tests). */
extern uint64_t hp_buffer_await_fill_ns HP_HIDDEN;
/* Copies the events of a live thread's unpublished chunk (final flush
 * only), but for the slots taken and not filled yet, of which *unfilled
 * counts those before a filled one (hp_buffer.c, copy_filled); its own
 * time is not worth a lock, and not given. */
size_t hp_buffer_snapshot_partial(struct hp_thread *t, struct hp_raw *scratch,
				  uint32_t *seq, uint64_t *unfilled, int in_signal) HP_HIDDEN;
void hp_buffer_free_thread(struct hp_thread *t) HP_HIDDEN;

/*
 * Fork. A child is traced afresh, as a new process whose forking thread
 * starts with inherited events: after fork(), an enter of each frame open
 * at the fork (at the fork's tick), so that their exits in the child are
 * matched; after a raw fork (no atfork handlers), the events the child
 * recorded before it found out it is a child.
 */
/* In the parent, before fork(), under the writer's lock: the calling
 * thread's open frames are `frames` (as of the chunks consumed) plus its
 * chunks not consumed yet; they become the child's inherited events. */
void hp_buffer_note_fork(const uint64_t *frames, size_t n, uint32_t encoded_of_tail,
			 uint64_t tick) HP_HIDDEN;
/* The inherited events noted (tests). */
size_t hp_buffer_inherited(const struct hp_raw **ev) HP_HIDDEN;
/* In a raw fork's child: keeps the events recorded since the fork (the
 * slots before them were wiped); their number. */
size_t hp_buffer_keep_since_fork(void) HP_HIDDEN;
/* In a child: forgets every thread (only the calling one exists, and it
 * starts again at its next event, with the inherited events). The consumer
 * forgets its state of them first (hp_writer_reset_in_child). */
void hp_buffer_reset_in_child(void) HP_HIDDEN;
/* The calling thread's buffer, if it has inherited events to hold. */
void hp_buffer_start_self(void) HP_HIDDEN;

/* After the final flush nobody consumes: owners stop waiting. */
void hp_buffer_set_finished(void) HP_HIDDEN;
int hp_buffer_finished(void) HP_HIDDEN;

#endif
