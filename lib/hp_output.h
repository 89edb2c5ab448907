/*
 * hp_output.h - the trace file: named and created once, appended to in
 * batches of whole records. The file itself is kept by the platform
 * (hp_platform.h; on Linux one descriptor, close-on-exec, where the
 * program's open() does not look, checked before each batch and reopened
 * by name if the program took it).
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
/* In a forked child: forgets the parent's trace (closes our descriptor of
 * it); hp_output_create then makes the child's. */
void hp_output_reset_in_child(void) HP_HIDDEN;

/* Builds a path for a name pattern (exposed for the unit tests). */
int hp_output_expand(const char *spec, const char *prog, int pid, char *out,
		     size_t outlen) HP_HIDDEN;

#endif
