/*
 * hp_records.h - the one module that builds the trace's records
 * (docs/format.md is the contract): the others hand it their data, and
 * hp_output appends what it builds. Called under the writer's lock, or at
 * start-up before the writer thread exists.
 */
#ifndef HP_RECORDS_H
#define HP_RECORDS_H

#include <stdint.h>

#include "hp_platform.h"

/* The first fatal event of the process, as captured in signal context. */
struct hp_crash_info {
	uint32_t stream, tid, sig, code, flags, n;
	uint64_t addr, unwind_ns;
	uint64_t pc[HP_CRASH_FRAMES];
};

/* STACK: a thread's root stack, written with its first events. */
void hp_records_stack(uint32_t stream, const struct hp_frames *s) HP_HIDDEN;
/* CRASH, before END. */
void hp_records_crash(const struct hp_crash_info *c) HP_HIDDEN;

#endif
