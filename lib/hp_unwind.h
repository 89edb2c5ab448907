/*
 * hp_unwind.h - the stacks the hooks cannot see, taken with libunwind as raw
 * addresses and named offline like every other address of the trace:
 *
 * - at a fatal signal, the interrupted thread's stack from the signal's
 *   context, uninstrumented frames (libc, code built without hooks)
 *   included: one CRASH record, written by the final flush before END;
 * - at each thread's first event, the frames from its first instrumented
 *   function up (start_thread and clone3 for a thread, __libc_start_main
 *   for main): one STACK record, written with the thread's first events.
 *
 * Neither allocates through malloc or takes a lock of ours. libunwind's
 * own needs (dl_iterate_phdr's loader lock, its register-state cache lock)
 * are discussed in hp_unwind.c.
 */
#ifndef HP_UNWIND_H
#define HP_UNWIND_H

#include <signal.h>
#include <stdint.h>

#include "hp_platform.h"

#define HP_ROOT_FRAMES 32
#define HP_CRASH_FRAMES 256

struct hp_unwind_stack {
	uint32_t n;
	uint32_t flags; /* enum hp_stack_flags */
	uint64_t pc[HP_ROOT_FRAMES];
};

/* libunwind's one-time set-up, done at start-up rather than in the first
 * thread's slow path or in a signal handler. */
void hp_unwind_init(void) HP_HIDDEN;
/* The calling thread's stack, from the frame of `first_func` (the function
 * whose event is the thread's first) to the outermost frame. */
void hp_unwind_root(struct hp_unwind_stack *s, uint64_t first_func) HP_HIDDEN;
/* From a fatal signal's handler: the interrupted context's stack. Only the
 * first crash of the process is kept. */
void hp_unwind_crash(int sig, const siginfo_t *info, void *ucontext) HP_HIDDEN;

/* The writer's side, under its lock (the output belongs to it). */
void hp_unwind_write_stack(uint32_t stream, const struct hp_unwind_stack *s) HP_HIDDEN;
void hp_unwind_write_crash(void) HP_HIDDEN;

#endif
