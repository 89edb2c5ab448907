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
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../include/hookprof.h"
#include "hp_buffer.h"
#include "hp_config.h"
#include "hp_format.h"
#include "hp_modules.h"
#include "hp_output.h"
#include "hp_writer.h"

enum { STATE_NEW, STATE_TRACING, STATE_OFF, STATE_FINISHING, STATE_FINISHED };

#define CMDLINE_MAX (64u << 10)

static int state = STATE_NEW;
static pid_t traced_pid;
static uint32_t finishing_tid; /* the thread writing the end */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static uint64_t lost[HP_LOST_LATE + 1];
static struct hp_config config;
static const uint32_t *own_memory; /* nonzero where the memory is the traced process's */

/* Program-terminating signals whose default action would lose the trace. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,    SIGABRT, SIGTRAP,
				     SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,   SIGPIPE, SIGALRM,
				     SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,   SIGSYS,  SIGVTALRM,
				     SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT };

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

static size_t read_cmdline(char *buf, size_t len)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t r;
	while (n < len && (r = read(fd, buf + n, len - n)) > 0)
		n += (size_t)r;
	close(fd);
	return n;
}

static uint8_t *put_string(uint8_t *p, const char *s, size_t len)
{
	hp_le32(p, (uint32_t)len);
	memcpy(p + 4, s, len);
	return p + 4 + len;
}

/* PROCESS: pid, clock, start time, mode, then the executable and argv. */
static void process_record(void)
{
	static char cmdline[CMDLINE_MAX];
	char exe[4096];
	size_t cmd_len = read_cmdline(cmdline, sizeof(cmdline));
	ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof(exe));
	exe_len = exe_len > 0 ? exe_len : 0;
	uint32_t argc = 0;
	for (size_t i = 0; i < cmd_len; i++)
		argc += cmdline[i] == 0;
	uint8_t *p = hp_output_begin(HP_REC_PROCESS, 24 + 4 + (size_t)exe_len + cmd_len + 4 * (size_t)argc + 4);
	if (!p)
		return;
	hp_le32(p, (uint32_t)getpid());
	hp_le32(p + 4, hp_tick_is_tsc ? HP_CLOCK_TSC : HP_CLOCK_MONOTONIC);
	hp_le64(p + 8, hp_realtime_ns());
	hp_le32(p + 16, config.mode == HP_MODE_RING ? 1 : 0);
	hp_le32(p + 20, argc);
	p = put_string(p + 24, exe, (size_t)exe_len);
	for (size_t i = 0; i < cmd_len;) {
		size_t len = strnlen(cmdline + i, cmd_len - i);
		p = put_string(p, cmdline + i, len);
		i += len + 1;
	}
	hp_output_end(p);
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

/* The end of the trace; in_signal: from a fatal signal's handler, whose
 * mask holds every signal. Otherwise asynchronous signals are held off
 * here, so a fatal one comes after the end is written, not in the middle. */
static void finish(int in_signal)
{
	if (hp_runtime_in_child())
		return;
	sigset_t saved_mask;
	if (!in_signal)
		hp_buffer_hold_signals(&saved_mask);
	int expected = STATE_TRACING;
	if (!__atomic_compare_exchange_n(&state, &expected, STATE_FINISHING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Not for itself: a fatal signal in the thread that is finishing. */
		if (expected == STATE_FINISHING &&
		    __atomic_load_n(&finishing_tid, __ATOMIC_RELAXED) != hp_gettid())
			wait_until_finished(in_signal);
		if (!in_signal)
			hp_buffer_release_signals(&saved_mask);
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
		hp_buffer_release_signals(&saved_mask);
}

void hp_runtime_before_exec(void)
{
	finish(0);
}

static void on_fatal_signal(int sig)
{
	int saved = errno;
	finish(1);
	/* Back to the default action: the signal, blocked while we run, is
	 * delivered again when we return and ends the process as it would have. */
	signal(sig, SIG_DFL);
	raise(sig);
	errno = saved;
}

/* Only where the program left the default: its own handlers stay its own. */
static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(fatal_signals[i], NULL, &old) || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal_signal;
		sa.sa_flags = SA_ONSTACK;
		sigfillset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* The child has no writer thread and must not append to its parent's trace. */
static void after_fork_in_child(void)
{
	__atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
	hp_writer_forget();
	hp_buffer_set_finished(); /* a full buffer drops instead of waiting */
	hp_tls = (struct hp_tls){ .retired = HP_UNTRACED };
}

/* A page the kernel zeroes in a child that gets a copy of our memory
 * (MADV_WIPEONFORK) and leaves alone in one that shares it: the only sure
 * way to tell a vfork or clone(CLONE_VM) child from a raw fork's. Without
 * it (kernels before 4.14) every child counts as a copy. */
static void mark_own_memory(void)
{
	uint32_t *page = hp_pages_alloc(4096);
	if (!page)
		return;
	if (madvise(page, 4096, MADV_WIPEONFORK)) {
		hp_pages_free(page, 4096);
		return;
	}
	*page = 1;
	own_memory = page;
}

/* In a child: 1 if it runs on its parent's memory, where nothing is its own. */
static int shares_parent_memory(void)
{
	return own_memory && __atomic_load_n(own_memory, __ATOMIC_RELAXED);
}

/* A child made without fork()'s handlers (_Fork, syscall(SYS_fork), clone)
 * still believes it traces, with no writer thread: it must neither wait
 * for one nor write its parent's trace. */
int hp_runtime_in_child(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (s != STATE_TRACING || likely(getpid() == traced_pid))
		return 0;
	/* A vfork or clone(CLONE_VM) child: resetting would switch the
	 * parent's tracing off and re-initialise its locks under it. */
	if (shares_parent_memory())
		return 1;
	after_fork_in_child();
	return 1;
}

static void runtime_init(void)
{
	char err[512];
	int saved = errno;
	if (hp_config_read(&config, getenv, err, sizeof(err)))
		hp_warn("%s", err);
	hp_platform_init(config.force_monotonic);
	snprintf(err, sizeof(err), "cannot set up hookprof's buffers");
	if (hp_buffer_init(&config) || hp_writer_init() ||
	    hp_output_create(config.output, program_invocation_short_name, getpid(), err, sizeof(err))) {
		hp_warn("%s; this run is not traced", err);
		__atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
		errno = saved;
		return;
	}
	if (hp_output_renamed() && config.output)
		hp_warn("'%s' exists; the trace goes to '%s'", config.output, hp_output_path());
	traced_pid = getpid();
	mark_own_memory();
	process_record();
	hp_writer_clock_record();
	hp_modules_write(1);
	hp_output_flush();
	if (config.mode == HP_MODE_STREAM)
		hp_writer_start();
	install_signal_handlers();
	pthread_atfork(NULL, NULL, after_fork_in_child);
	/* Release: every setting above is visible before an event sees TRACING. */
	__atomic_store_n(&state, STATE_TRACING, __ATOMIC_RELEASE);
	errno = saved;
}

int hp_runtime_ready(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (likely(s == STATE_TRACING))
		return 1;
	if (s == STATE_NEW) {
		pthread_once(&init_once, runtime_init);
		s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	}
	return s == STATE_TRACING;
}

/* Priority 101: the last of this object's destructors to run. */
__attribute__((destructor(101))) static void runtime_destructor(void)
{
	finish(0);
}

/* Signals are held off while the flush holds the writer's lock: a fatal
 * one in between would make the final flush wait for it. */
HP_EXPORT int hookprof_flush(void)
{
	/* A child (vfork, raw fork) must not write its parent's trace. */
	if (!hp_runtime_ready() || hp_runtime_in_child())
		return -1;
	sigset_t saved_mask;
	hp_buffer_hold_signals(&saved_mask);
	hp_buffer_publish_self();
	int rc = hp_writer_flush_all();
	hp_buffer_release_signals(&saved_mask);
	return rc;
}

HP_EXPORT const char *hookprof_trace_path(void)
{
	return hp_runtime_ready() ? hp_output_path() : NULL;
}

void hp_runtime_objects_changing(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_TRACING || hp_tls.busy)
		return;
	sigset_t saved_mask;
	hp_buffer_hold_signals(&saved_mask);
	hp_writer_modules_changed();
	hp_buffer_release_signals(&saved_mask);
}
