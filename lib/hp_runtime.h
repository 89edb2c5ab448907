/*
 * hp_runtime.h - start-up, shutdown and the process-wide state of the runtime.
 */
#ifndef HP_RUNTIME_H
#define HP_RUNTIME_H

#include <stdint.h>

#include "hp_buffer.h"
#include "hp_platform.h"

/* Initialises on first use; 1 while the process is being traced. */
int hp_runtime_ready(void) HP_HIDDEN;
/* Not started yet: the first event starts it. */
int hp_runtime_new(void) HP_HIDDEN;
/* Counts an event lost outside any thread's stream (reason: HP_LOST_*). */
void hp_runtime_count_lost(int reason) HP_HIDDEN;
uint64_t hp_runtime_lost(uint32_t reason) HP_HIDDEN;
/* In a child that fork()'s handlers did not reach (hp_buffer.h's enum): HP_CHILD_AFRESH when
 * it is traced from now on into a trace of its own (a raw fork: hp_tls is
 * new), HP_CHILD_UNTRACED when its events are to be dropped (a child on its
 * parent's memory, vfork or clone(CLONE_VM), where nothing is touched; or
 * tracing is off in it). 0 in the traced process itself. A system call:
 * for the slow path only. */
int hp_runtime_in_child(void) HP_HIDDEN;
/* No system call: 1 if this is surely not a child with memory of its own
 * (its memory mark would be wiped); a child on our memory (vfork, CLONE_VM)
 * only hp_runtime_in_child tells. */
int hp_runtime_marked_ours(void) HP_HIDDEN;
/* exec is about to replace the image: the trace ends here (END written),
 * unless this is a child running on its parent's memory (vfork). If the
 * exec fails the trace stays ended: what follows is not recorded. */
void hp_runtime_before_exec(void) HP_HIDDEN;
/* daemon() is about to fork (1) or is done (0): its parent will _exit()
 * right after the fork, so the fork handler finishes the parent's trace. */
void hp_runtime_daemon_forking(int on) HP_HIDDEN;
/* An object is about to be unloaded: write the module map while it is there. */
void hp_runtime_objects_changing(void) HP_HIDDEN;
/* An object was unloaded: the filters forget its addresses. */
void hp_runtime_objects_changed(void) HP_HIDDEN;
/* The crash a fatal event noted (hp_runtime_on_fatal), once: the final
 * flush writes it before END. NULL if none, or already given. */
struct hp_crash_info;
const struct hp_crash_info *hp_runtime_take_crash(void) HP_HIDDEN;

#endif
