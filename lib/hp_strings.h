/*
 * hp_strings.h - the control API's strings (region and value names, mark
 * texts, thread names), interned once per process: an event carries the
 * id, and the writer puts each string in the trace once (a STRING record),
 * before the first EVENTS record that can name it.
 *
 * Interning is lock-free and allocates nothing (the table is mapped once,
 * its pages touched as used): a signal handler may intern too.
 */
#ifndef HP_STRINGS_H
#define HP_STRINGS_H

#include <stddef.h>
#include <stdint.h>

#include "hp_platform.h"

#define HP_STRING_NONE UINT32_MAX

int hp_strings_init(void) HP_HIDDEN;
/* The id of s[0..len) (len < HP_STRING_BYTES), or HP_STRING_NONE when the
 * table is full or not mapped. */
uint32_t hp_strings_intern(const char *s, size_t len) HP_HIDDEN;
/* The string of an id handed out, or NULL. */
const char *hp_strings_get(uint32_t id, size_t *len) HP_HIDDEN;
/* Writer side, under its lock: a STRING record for each string interned
 * since the last call. */
void hp_strings_write_new(void) HP_HIDDEN;
/* A forked child's trace is new: every string is written again. */
void hp_strings_reset_in_child(void) HP_HIDDEN;

#endif
