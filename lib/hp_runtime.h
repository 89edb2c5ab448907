/*
 * hp_runtime.h - start-up, shutdown and the process-wide state of the runtime.
 */
#ifndef HP_RUNTIME_H
#define HP_RUNTIME_H

#include <stdint.h>

#include "hp_platform.h"

/* Initialises on first use; 1 while the process is being traced. */
int hp_runtime_ready(void) HP_HIDDEN;
/* Counts an event lost outside any thread's stream (reason: HP_LOST_*). */
void hp_runtime_count_lost(int reason) HP_HIDDEN;
uint64_t hp_runtime_lost(uint32_t reason) HP_HIDDEN;
/* 1 in a child that fork()'s handlers did not reach (tracing is off from
 * now on), or in one that runs on its parent's memory (vfork, clone with
 * CLONE_VM: nothing is touched). A system call: for the slow path only. */
int hp_runtime_in_child(void) HP_HIDDEN;
/* exec is about to replace the image: the trace ends here (END written),
 * unless this is a child running on its parent's memory (vfork). If the
 * exec fails the trace stays ended: what follows is not recorded. */
void hp_runtime_before_exec(void) HP_HIDDEN;
/* An object is about to be unloaded: write the module map while it is there. */
void hp_runtime_objects_changing(void) HP_HIDDEN;

#endif
