/*
 * hookprof.h - the public API of the hookprof runtime (libhookprof).
 *
 * A program built with -finstrument-functions and linked with libhookprof (or
 * run with it preloaded) is traced without calling any of this. These calls
 * are for programs that want a say in when the trace is written.
 */
#ifndef HOOKPROF_H
#define HOOKPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes every event recorded so far to the trace file now. In ring mode
 * (HOOKPROF_MODE=ring) this writes the flight recorder's content: the
 * calling thread's events and the completed chunks of the other threads.
 * Returns 0, or -1 if the process is not being traced or the write failed.
 */
int hookprof_flush(void);

/* Path of the trace file being written, or NULL if the process is not traced. */
const char *hookprof_trace_path(void);

#ifdef __cplusplus
}
#endif

#endif
