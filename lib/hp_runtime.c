/*
 * hp_runtime.c - start-up, the final flush, fatal signals, fork, public API.
 *
 * Start-up happens on the first event, so a program that never calls an
 * instrumented function leaves no trace file behind. The final flush runs as a late destructor: in a shared library,
 * inside _dl_fini, after the program's atexit handlers and destructors.
 */
#define _GNU_SOURCE
#include "hp_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HOOKPROF_INTERNAL_
#include "../include/hookprof.h"
#include "hp_buffer.h"
#include "hp_config.h"
#include "hp_format.h"
#include "hp_filter.h"
#include "hp_modules.h"
#include "hp_output.h"
#include "hp_records.h"
#include "hp_strings.h"
#include "hp_writer.h"

enum { STATE_NEW, STATE_TRACING, STATE_OFF, STATE_FINISHING, STATE_FINISHED };

#define CMDLINE_MAX (64u << 10)

static int state = STATE_NEW;
static uint32_t traced_pid;
static uint32_t finishing_tid; /* the thread writing the end */
/* Start-up runs once, under it; the first of the locks (docs/design.md,
 * "Locks"): build_lock, ctl_lock and the loader's lock are taken inside. */
static hp_mutex_t init_lock = HP_MUTEX_INITIALIZER;
static uint64_t lost[HP_LOST_LATE + 1];
static struct hp_config config;

/* A forked child's PARENT record; pid 0 in a process that was not forked
 * from a traced one. */
static struct {
	uint32_t pid;
	uint32_t flags; /* HP_PARENT_* */
	uint64_t tick;
	char trace[4096];
} parent;
/* 1 in the traced process; a page wiped in a forked child (MADV_WIPEONFORK),
 * still 1 in a child that shares our memory (vfork, CLONE_VM). */
static uint32_t *memory_mark;
/* This thread's before_fork holds the writer's lock (another thread's may
 * have failed to take it meanwhile). */
static __thread int fork_prepared;
static uint32_t daemon_forking; /* tid of a thread in daemon(), whose parent half will _exit */

/* The first fatal event of the process: the first crashing thread claims
 * it, and it is written once, by the final flush, before END. */
static struct {
	uint32_t claimed;
	uint32_t ready; /* filled in */
	uint32_t written;
	struct hp_crash_info c;
} crash;

#define EARLY_CLOCK_GAP_NS 100000u
#define FINISH_WAIT_MS 10000
#define FINISH_WAIT_SIGNAL_MS 2000

void hp_runtime_count_lost(int reason)
{
	if (reason >= HP_LOST_RING && reason <= HP_LOST_LATE)
		__atomic_fetch_add(&lost[reason], 1, __ATOMIC_RELAXED);
}

uint64_t hp_runtime_lost(uint32_t reason)
{
	return reason <= HP_LOST_LATE ? __atomic_load_n(&lost[reason], __ATOMIC_RELAXED) : 0;
}

/* The smallest step the clock was seen to take between two readings: a
 * duration shorter than that reads as 0 (a TSC that a hypervisor moves in
 * steps, a coarse clock). A few dozen readings, bounded in time too. */
static uint32_t clock_step(void)
{
	uint64_t best = UINT64_MAX, start = hp_clock_ns();
	for (int i = 0; i < 32 && hp_clock_ns() - start < 20000; i++) {
		uint64_t a = hp_tick(), b = a;
		for (int spin = 0; b == a && spin < 100000; spin++)
			b = hp_tick();
		if (b != a && b - a < best)
			best = b - a;
	}
	return best > UINT32_MAX ? 0 : (uint32_t)best;
}

static void process_record(void)
{
	static char cmdline[CMDLINE_MAX];
	static char exe[4096];
	struct hp_process_info pi = {
		.pid = hp_getpid(),
		.clock = hp_tick_is_tsc ? HP_CLOCK_TSC : HP_CLOCK_MONOTONIC,
		.start_ns = hp_realtime_ns(),
		.ring = config.mode == HP_MODE_RING,
		.exe = exe,
		.exe_len = hp_exe_path(exe, sizeof(exe)),
		.cmdline = cmdline,
		.cmdline_len = hp_command_line(cmdline, sizeof(cmdline)),
		.buffer_bytes = hp_buffer_bytes(),
		.clock_step = clock_step(),
	};
	hp_records_process(&pi);
}

/* Another thread is writing the end (two threads in exit(), or a crash
 * during exit): returning now would let the process end under it. */
static void wait_until_finished(int in_signal)
{
	if (hp_futex_wait_while((uint32_t *)&state, STATE_FINISHING,
				in_signal ? FINISH_WAIT_SIGNAL_MS : FINISH_WAIT_MS))
		hp_warn("gave up waiting for the final flush on another thread; '%s' may have no end record",
			hp_output_path());
}

/* The writer thread did not stop in time (a fatal signal's flush only). */
static void warn_gave_up(void)
{
	hp_warn("the final flush gave up waiting for the writer thread; '%s' has no end record",
		hp_output_path());
}

static int tracing_here(int in_signal);

/* The end of the trace; in_signal: from a fatal signal's handler, whose
 * mask holds every signal. Otherwise asynchronous signals are held off
 * here, so a fatal one comes after the end is written, not in the middle. */
static void finish(int in_signal)
{
	if (!tracing_here(in_signal))
		return;
	hp_sigmask_t saved_mask;
	if (!in_signal)
		hp_signals_hold(&saved_mask);
	int expected = STATE_TRACING;
	if (!__atomic_compare_exchange_n(&state, &expected, STATE_FINISHING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Not for itself: a fatal signal in the thread that is finishing. */
		if (expected == STATE_FINISHING &&
		    __atomic_load_n(&finishing_tid, __ATOMIC_RELAXED) != hp_gettid())
			wait_until_finished(in_signal);
		if (!in_signal)
			hp_signals_release(&saved_mask);
		return;
	}
	__atomic_store_n(&finishing_tid, hp_gettid(), __ATOMIC_RELAXED);
	/* The process is about to die: what the other threads do from now on
	 * would be neither written nor counted. */
	if (in_signal)
		hp_buffer_stop_others();
	/* The writer stops first: it frees the memory of exited threads, and
	 * this thread may be running on a signal stack inside its own. */
	if (hp_writer_stop(in_signal) == 0) {
		hp_buffer_retire_self(in_signal);
		hp_writer_finish(in_signal);
	} else {
		warn_gave_up();
	}
	hp_buffer_set_finished();
	__atomic_store_n(&state, STATE_FINISHED, __ATOMIC_RELEASE);
	hp_futex_wake((uint32_t *)&state);
	if (!in_signal)
		hp_signals_release(&saved_mask);
}

void hp_runtime_before_exec(void)
{
	finish(0);
}

/* The interrupted thread's stack and what killed it. Only the first
 * crash of the process is kept. */
static void note_crash(const struct hp_fatal *f)
{
	uint32_t expected = 0;
	if (!f->context || !__atomic_compare_exchange_n(&crash.claimed, &expected, 1, 0,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	uint64_t t0 = hp_clock_ns();
	struct hp_crash_info *c = &crash.c;
	c->stream = hp_tls.thread ? hp_tls.thread->stream : HP_STREAM_NONE;
	c->tid = hp_gettid();
	c->sig = f->sig;
	c->code = f->code;
	c->addr = f->addr;
	c->n = hp_stack_crash(f, c->pc, HP_CRASH_FRAMES, &c->flags);
	c->unwind_ns = hp_clock_ns() - t0;
	/* Release: the frames are complete before a flush on another thread
	 * (one already finishing) sees ready. */
	__atomic_store_n(&crash.ready, 1, __ATOMIC_RELEASE);
}

void hp_runtime_on_fatal(const struct hp_fatal *f)
{
	int saved = errno;
	note_crash(f);
	finish(1);
	errno = saved;
}

const struct hp_crash_info *hp_runtime_take_crash(void)
{
	/* Acquire: pairs with the release store of ready. */
	if (!__atomic_load_n(&crash.ready, __ATOMIC_ACQUIRE) || crash.written)
		return NULL;
	crash.written = 1;
	return &crash.c;
}

/* A child that is not traced: no writer thread, and not its parent's trace. */
static void stop_tracing_in_child(void)
{
	__atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
	hp_writer_forget();
	hp_buffer_set_finished(); /* a full buffer drops instead of waiting */
	hp_tls = (struct hp_tls){ .retired = HP_UNTRACED };
}

/*
 * A child with memory of its own becomes a new traced process: its trace
 * starts at its next event (a child that only execs leaves none), and its
 * forking thread starts with the events hp_buffer keeps for it.
 */
static void trace_child_afresh(uint32_t flags, uint64_t fork_tick)
{
	parent.pid = traced_pid;
	parent.flags = flags;
	parent.tick = fork_tick;
	snprintf(parent.trace, sizeof(parent.trace), "%s", hp_output_path());
	int whole = flags & HP_PARENT_FRAMES; /* our handlers ran: all is consistent */
	hp_writer_reset_in_child(whole);
	hp_buffer_reset_in_child();
	hp_output_reset_in_child();
	memset(lost, 0, sizeof(lost));
	finishing_tid = 0;
	hp_mutex_reinit(&init_lock);
	/* Release: the reset state is visible before an event sees NEW. */
	__atomic_store_n(&state, STATE_NEW, __ATOMIC_RELEASE);
}

/* The mask before_fork replaced, while it holds the writer's lock. */
static __thread hp_sigmask_t fork_saved_mask;

/* Asynchronous signals are held off from taking the writer's lock to the
 * fork handlers' letting it go, as wherever a program thread holds it: a
 * fatal one in between would make the final flush wait for it. */
static void before_fork(void)
{
	fork_prepared = 0;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_TRACING || hp_buffer_in_own_work())
		return;
	hp_sigmask_t saved;
	hp_signals_hold(&saved);
	if (hp_writer_lock_for_fork()) {
		hp_signals_release(&saved);
		return;
	}
	fork_saved_mask = saved;
	fork_prepared = 1;
	uint64_t tick = hp_tick();
	static uint64_t frames[HP_CHUNK_EVENTS];
	uint32_t encoded_of_tail = 0;
	size_t n = hp_tls.thread ? hp_writer_open_frames(hp_tls.thread, frames, HP_CHUNK_EVENTS,
							 &encoded_of_tail)
				 : 0;
	hp_buffer_note_fork(frames, n, encoded_of_tail, tick);
	parent.tick = tick;
}

static void after_fork_in_parent(void)
{
	if (fork_prepared) {
		hp_writer_unlock_after_fork();
		hp_signals_release(&fork_saved_mask);
	}
	if (__atomic_load_n(&daemon_forking, __ATOMIC_RELAXED) == hp_gettid())
		finish(0);
}

void hp_runtime_daemon_forking(int on)
{
	__atomic_store_n(&daemon_forking, on ? hp_gettid() : 0, __ATOMIC_RELAXED);
}

static void after_fork_in_child(void)
{
	daemon_forking = 0;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_NEW) {
		/* A child not traced yet forked: this one too starts as a new
		 * process at its first event. */
		parent.pid = 0;
		parent.trace[0] = 0;
		return;
	}
	if (fork_prepared && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_TRACING)
		trace_child_afresh(HP_PARENT_FORKED | HP_PARENT_FRAMES, parent.tick);
	else
		stop_tracing_in_child();
	if (fork_prepared)
		hp_signals_release(&fork_saved_mask);
}

enum child_kind { NOT_A_CHILD, CHILD_OWN_MEMORY, CHILD_SHARED_MEMORY, CHILD_UNKNOWN };

/*
 * The one place that tells a child made without fork()'s handlers (_Fork,
 * syscall(SYS_fork), clone) from its parent, and a child with memory of its
 * own from one that shares ours (vfork, CLONE_VM: whatever it does to our
 * state, its parent sees). A system call: for the slow path only.
 */
static enum child_kind child_kind(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (s != STATE_TRACING || likely(hp_getpid() == traced_pid))
		return NOT_A_CHILD;
	/* Without MADV_WIPEONFORK (kernels before 4.14) nothing tells. */
	if (!memory_mark)
		return CHILD_UNKNOWN;
	if (__atomic_load_n(memory_mark, __ATOMIC_RELAXED))
		return CHILD_SHARED_MEMORY;
	return CHILD_OWN_MEMORY;
}

/* A raw fork's child is traced afresh from its first event after the
 * fork; the frames open at the fork are not known (their exits are exits
 * of functions not on the stack). */
static int in_child(int may_restart)
{
	switch (child_kind()) {
	case NOT_A_CHILD:
		return HP_NOT_A_CHILD;
	case CHILD_SHARED_MEMORY:
		/* Whatever it did to our state, its parent would find done
		 * (tracing off, locks re-initialised): nothing is touched. */
		return HP_CHILD_UNTRACED;
	case CHILD_OWN_MEMORY:
		if (may_restart) {
			hp_buffer_keep_since_fork();
			trace_child_afresh(HP_PARENT_FORKED, 0);
			return HP_CHILD_AFRESH;
		}
		break;
	case CHILD_UNKNOWN:
		break;
	}
	stop_tracing_in_child();
	return HP_CHILD_UNTRACED;
}

int hp_runtime_in_child(void)
{
	return in_child(1);
}

int hp_runtime_marked_ours(void)
{
	return memory_mark && __atomic_load_n(memory_mark, __ATOMIC_RELAXED);
}

/* Tracing in this very process, a raw fork's child found out and traced
 * afresh: the trace can be flushed or finished. */
static int tracing_here(int in_signal)
{
	switch (in_child(!in_signal)) {
	case HP_CHILD_UNTRACED:
		return 0;
	case HP_CHILD_AFRESH:
		if (!hp_runtime_ready())
			return 0;
		hp_buffer_start_self();
		break;
	}
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_OFF;
}

/* PARENT: who forked this process, or its parent process. */
static void parent_record(void)
{
	if (parent.pid)
		hp_records_parent(parent.pid, parent.flags, parent.tick, parent.trace);
	else
		hp_records_parent(hp_getppid(), 0, parent.tick, parent.trace);
}

static void mark_own_memory(void)
{
	if (!memory_mark) {
		uint32_t *page = hp_pages_alloc(4096);
		if (page && hp_pages_wipe_on_fork(page, 4096)) {
			hp_pages_free(page, 4096);
			page = NULL;
		}
		memory_mark = page;
	}
	if (memory_mark)
		*memory_mark = 1;
}

static void runtime_init(void)
{
	/* Room for two whole paths and the reason: runs once, so static. */
	static char err[2 * 4096 + 512];
	int saved = errno;
	hp_stderr_note();
	if (hp_config_read(&config, hp_getenv, hp_secure_execution(), err, sizeof(err)))
		hp_warn("%s", err);
	if (!config.off && hp_config_check_names(hp_environ(), err, sizeof(err)))
		hp_warn("%s", err);
	if (config.off) {
		__atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
		errno = saved;
		return;
	}
	hp_platform_init(config.force_monotonic);
	hp_stack_init();
	if (hp_filter_init(&config, err, sizeof(err)))
		hp_warn("%s", err);
	/* The FILTER record names what is applied, not what was asked for. */
	config.exclude = hp_filter_applied(0);
	config.include = hp_filter_applied(1);
	snprintf(err, sizeof(err), "cannot set up hookprof's buffers");
	if (hp_buffer_init(&config) || hp_writer_init() || hp_strings_init() ||
	    hp_output_create(config.output, hp_program_name(), (int)hp_getpid(), err, sizeof(err))) {
		hp_warn("%s; this run is not traced", err);
		__atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
		errno = saved;
		return;
	}
	/* A forked child's numbered name is the rule, not a surprise. */
	if (hp_output_renamed() && config.output && !parent.pid)
		hp_warn("'%s' exists; the trace goes to '%s'", config.output, hp_output_path());
	traced_pid = hp_getpid();
	process_record();
	parent_record();
	hp_writer_calibration_record(HP_CALIBRATION_START);
	uint64_t first_clock = hp_clock_ns();
	hp_writer_filters(&config);
	hp_writer_clock_record();
	hp_modules_write(1);
	/* Two clock pairs, on disk before the program goes on: a run killed at
	 * once (no writer thread in ring mode, or before its first CLOCK) still
	 * has a calibration. The module map between them takes some 6 us, too
	 * short: two readings 100 us apart put the rate within about 0.05 %. */
	while (hp_clock_ns() - first_clock < EARLY_CLOCK_GAP_NS)
		;
	hp_writer_clock_record();
	hp_output_flush();
	if (config.mode == HP_MODE_STREAM)
		hp_writer_start();
	if (config.start_stopped)
		hp_buffer_begin_stopped();
	hp_fatal_hooks_install();
	mark_own_memory();
	hp_fork_hooks_install(before_fork, after_fork_in_parent, after_fork_in_child);
	/* Release: every setting above is visible before an event sees TRACING. */
	__atomic_store_n(&state, STATE_TRACING, __ATOMIC_RELEASE);
	errno = saved;
}

int hp_runtime_new(void)
{
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_NEW;
}

int hp_runtime_ready(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (likely(s == STATE_TRACING))
		return 1;
	if (s == STATE_NEW) {
		/* As with every lock of ours (docs/design.md, "Locks"). */
		hp_sigmask_t saved;
		hp_signals_hold(&saved);
		hp_mutex_lock(&init_lock);
		if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_NEW)
			runtime_init();
		hp_mutex_unlock(&init_lock);
		hp_signals_release(&saved);
		s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	}
	return s == STATE_TRACING;
}

/* The process that loaded us: its forked copies say nothing at exit. */
static uint32_t loaded_pid;

void hp_runtime_on_load(void)
{
	loaded_pid = hp_getpid();
	hp_stderr_note(); /* the program's stderr, before it can change it */
}

/* Last, at process exit. A process in which no instrumented function ran
 * writes no trace: without a word, the user would look for one (a program
 * built without -finstrument-functions). Said once per tree: by the
 * process that loaded us, not by its forked copies nor by the programs a
 * traced process runs. */
static void warn_if_nothing_ran(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_NEW && hp_getpid() == loaded_pid &&
	    !hp_parent_has_runtime())
		hp_warn("no instrumented function ran in %s (pid %u): no trace written "
			"(was it built with -finstrument-functions?)",
			hp_program_name(), loaded_pid);
}

void hp_runtime_on_exit(void)
{
	warn_if_nothing_ran();
	finish(0);
}

/* As a fatal event's flush, with bounded waits, but no crash: the threads
 * that could hold a lock are gone, not stopped. */
int hp_runtime_on_exit_alone(void)
{
	if (hp_writer_orphaned())
		return -1;
	warn_if_nothing_ran();
	finish(1);
	return 0;
}

/* A traced thread exits: its last chunk is published (and written, when
 * there is no writer thread). */
void hp_runtime_on_thread_exit(void)
{
	int saved_errno = errno;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	if (hp_writer_threaded()) {
		hp_buffer_retire_self(0);
		hp_writer_notify();
	} else {
		hp_writer_retire_and_drain();
	}
	hp_signals_release(&saved_mask);
	errno = saved_errno;
}

/* Signals are held off while the flush holds the writer's lock: a fatal
 * one in between would make the final flush wait for it. A child on its
 * parent's memory (vfork) must not write its parent's trace. */
HP_EXPORT int hookprof_flush(void)
{
	if (!hp_runtime_ready() || !tracing_here(0))
		return -1;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	hp_buffer_publish_self();
	int rc = hp_writer_flush_all();
	hp_signals_release(&saved_mask);
	return rc;
}

HP_EXPORT const char *hookprof_trace_path(void)
{
	return hp_runtime_ready() ? hp_output_path() : NULL;
}

void hp_runtime_objects_changed(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_TRACING || hp_tls.busy)
		return;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	hp_filter_modules_changed();
	hp_signals_release(&saved_mask);
}

void hp_runtime_objects_changing(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_TRACING || hp_buffer_in_own_work())
		return;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	hp_writer_modules_changed();
	hp_signals_release(&saved_mask);
}

/* The buffer's callbacks (hp_buffer.h): the consumer's, and ours. */
const struct hp_buffer_client hp_buffer_client = {
	.notify = hp_writer_notify,
	.threaded = hp_writer_threaded,
	.drain = hp_writer_drain,
	.help = hp_writer_help,
	.count_lost = hp_runtime_count_lost,
	.not_started = hp_runtime_new,
	.ready = hp_runtime_ready,
	.in_child = hp_runtime_in_child,
	.marked_ours = hp_runtime_marked_ours,
};
