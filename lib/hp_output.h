/*
 * hp_output.h - the trace file: created once, appended to in batches.
 *
 * One descriptor is kept, close-on-exec, where the program's open() does not
 * look (above its soft RLIMIT_NOFILE, or at 1000; see keep_where), or none
 * under a small fixed limit. The program may close every descriptor or
 * reuse the number: the shared library's close() keeps ours open
 * (hp_interpose_fd.c), and each batch checks that the descriptor is still
 * our file and reopens it by name if not.
 */
#ifndef HP_OUTPUT_H
#define HP_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "hp_platform.h"

/*
 * Creates the trace file: `spec` is HOOKPROF_OUTPUT (a file, with %p for the
 * pid and %n for the program name, or an existing directory) or NULL for
 * ./<prog>-<pid>.hookprof. An existing file is never replaced: the first
 * free name <path>.1, <path>.2, ... is taken (mode 0600). An existing
 * character device or FIFO is written to as it is. Returns 0, or -1 with a
 * reason.
 */
int hp_output_create(const char *spec, const char *prog, int pid, char *err,
		     size_t errlen) HP_HIDDEN;
const char *hp_output_path(void) HP_HIDDEN;
/* The name asked for was taken; hp_output_path() is where the trace went. */
int hp_output_renamed(void) HP_HIDDEN;

/* Space for a record of at most max_payload bytes; NULL if output failed. */
uint8_t *hp_output_begin(uint32_t type, size_t max_payload) HP_HIDDEN;
/* Closes the record begun last; end is one past its last payload byte. */
void hp_output_end(uint8_t *end) HP_HIDDEN;
/* Writes the pending records; -1 (and one warning) once writing failed.
 * A file that takes only part of them ends at the last whole record. */
int hp_output_flush(void) HP_HIDDEN;
size_t hp_output_pending(void) HP_HIDDEN;
/* The trace's descriptor, if it is open on the trace (not the program's to
 * close); else -1. */
int hp_output_kept_fd(void) HP_HIDDEN;
/* fd is that descriptor (a system call only when the number matches). */
int hp_output_keeps(int fd) HP_HIDDEN;

/* In a forked child: forgets the parent's trace (closes our descriptor of
 * it); hp_output_create then makes the child's. */
void hp_output_reset_in_child(void) HP_HIDDEN;

/* Builds a path for a name pattern (exposed for the unit tests). */
int hp_output_expand(const char *spec, const char *prog, int pid, char *out,
		     size_t outlen) HP_HIDDEN;

#endif
