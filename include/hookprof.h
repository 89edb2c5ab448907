/*
 * hookprof.h - the public API of the hookprof runtime (libhookprof).
 *
 * A program built with -finstrument-functions and linked with libhookprof (or
 * run with it preloaded) is traced without calling any of this. These calls
 * are for programs that want a say in what is recorded and when.
 *
 * The API can stay in production code. Every function is declared weak, and
 * every name below is a macro that calls the function only if the library
 * is there (linked, or preloaded into a PIE program); without it a call
 * does nothing (and returns -1 or NULL where it returns something). So
 *
 *     cc -O2 prog.c -o prog                        # no hookprof at all: runs as ever
 *     cc -O2 -finstrument-functions prog.c -o prog -L... -lhookprof   # traced
 *     cc -O2 -finstrument-functions prog.c -o prog # traced when run with
 *         LD_PRELOAD=libhookprof.so (or hookprof record)
 *
 * all build from the same source. Calls nest and may come from any thread.
 * Names and mark texts are copied: they may be temporary.
 */
#ifndef HOOKPROF_H
#define HOOKPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's own sources define HOOKPROF_INTERNAL_: strong definitions.
 * Windows has no weak imports (a weak reference to hookprof.dll's function
 * stays NULL): there the program links hookprof.dll's import library or
 * libhookprof.a, and calls the functions directly. */
#if defined(HOOKPROF_INTERNAL_) || defined(_WIN32)
#define HOOKPROF_WEAK_
#else
#define HOOKPROF_WEAK_ __attribute__((weak))
#endif

/*
 * Writes every event recorded so far to the trace file now. In ring mode
 * (HOOKPROF_MODE=ring) this writes the flight recorder's content: the
 * calling thread's events and the completed chunks of the other threads.
 * Returns 0, or -1 if the process is not being traced or the write failed.
 */
int hookprof_flush(void) HOOKPROF_WEAK_;

/* Path of the trace file being written, or NULL if the process is not traced. */
const char *hookprof_trace_path(void) HOOKPROF_WEAK_;

/*
 * Pause and resume the calling thread's recording. While paused nothing of
 * the thread is recorded, and the time paused is not counted in the
 * functions (and regions) open around it. Pauses nest: recording resumes
 * at the outermost resume. Async-signal-safe.
 */
void hookprof_pause(void) HOOKPROF_WEAK_;
void hookprof_resume(void) HOOKPROF_WEAK_;

/*
 * A named region of the calling thread: a frame of its own in every view,
 * named "[name]", counted and timed as a function is. An end closes the
 * newest open region of that name; the reader repairs and reports an end
 * without a begin, a begin never ended, and regions ended out of order.
 * Async-signal-safe. HOOKPROF_REGION(name) below ends it with the block.
 */
void hookprof_region_begin(const char *name) HOOKPROF_WEAK_;
void hookprof_region_end(const char *name) HOOKPROF_WEAK_;

/* A timestamped mark with a printf-formatted text (at most 255 bytes; a
 * longer one ends in "..."). Formats: not async-signal-safe. */
void hookprof_mark(const char *fmt, ...) HOOKPROF_WEAK_ __attribute__((format(printf, 1, 2)));

/* A named value at this moment: `hookprof report --values` gives count,
 * min, max and mean per name. Async-signal-safe. */
void hookprof_value(const char *name, int64_t value) HOOKPROF_WEAK_;

/*
 * Stop and start recording in the whole process (run with HOOKPROF_START=off
 * to begin stopped): time stopped is not counted in any function. Return 0,
 * or -1 if not traced or already stopped (started). Not async-signal-safe.
 */
int hookprof_stop(void) HOOKPROF_WEAK_;
int hookprof_start(void) HOOKPROF_WEAK_;

/* The name the calling thread has in every view (pthread_setname_np names
 * are picked up too, at the thread's end). At most 63 bytes. */
void hookprof_thread_name(const char *name) HOOKPROF_WEAK_;

#ifdef __cplusplus
}
#endif

/*
 * Each name calls the function only where it exists. A function-like macro
 * is not expanded again inside its own expansion, so the name there is the
 * function's. Define HOOKPROF_NO_MACROS to call the functions directly.
 */
#if !defined(HOOKPROF_NO_MACROS) && !defined(HOOKPROF_INTERNAL_) && !defined(_WIN32)
#define hookprof_flush() (hookprof_flush ? hookprof_flush() : -1)
#define hookprof_trace_path() (hookprof_trace_path ? hookprof_trace_path() : (const char *)0)
#define hookprof_pause() (hookprof_pause ? hookprof_pause() : (void)0)
#define hookprof_resume() (hookprof_resume ? hookprof_resume() : (void)0)
#define hookprof_region_begin(name) (hookprof_region_begin ? hookprof_region_begin(name) : (void)0)
#define hookprof_region_end(name) (hookprof_region_end ? hookprof_region_end(name) : (void)0)
#define hookprof_mark(...) (hookprof_mark ? hookprof_mark(__VA_ARGS__) : (void)0)
#define hookprof_value(name, value) (hookprof_value ? hookprof_value(name, value) : (void)0)
#define hookprof_stop() (hookprof_stop ? hookprof_stop() : -1)
#define hookprof_start() (hookprof_start ? hookprof_start() : -1)
#define hookprof_thread_name(name) (hookprof_thread_name ? hookprof_thread_name(name) : (void)0)
#endif

#ifndef HOOKPROF_INTERNAL_
/* HOOKPROF_REGION("name"): a region from here to the end of the enclosing
 * block, however it is left (gcc and clang cleanup attribute; C and C++).
 * The helpers are not instrumented: they are no frames of the profile. */
__attribute__((no_instrument_function, unused)) static inline const char *
hookprof_region_enter_(const char *name)
{
	hookprof_region_begin(name);
	return name;
}

__attribute__((no_instrument_function, unused)) static inline void
hookprof_region_leave_(const char *const *name)
{
	hookprof_region_end(*name);
}

#define HOOKPROF_CAT2_(a, b) a##b
#define HOOKPROF_CAT_(a, b) HOOKPROF_CAT2_(a, b)
#define HOOKPROF_REGION(name)                                                          \
	const char *const HOOKPROF_CAT_(hookprof_region_, __COUNTER__)                     \
		__attribute__((cleanup(hookprof_region_leave_), unused)) = hookprof_region_enter_(name)
#endif

#endif
