/*
 * hp_records.h - the one module that builds the trace's records
 * (docs/format.md is the contract between it and the reader): the other
 * modules hand it their data, and hp_output appends what it builds. Called
 * under the writer's lock, or at start-up before the writer thread exists.
 * A record that cannot be had (output failed) is silently not written: the
 * output has said why, once.
 */
#ifndef HP_RECORDS_H
#define HP_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "hp_calibrate.h"
#include "hp_platform.h"

/* PROCESS: who was traced, how. */
struct hp_process_info {
	uint32_t pid;
	uint32_t clock;          /* HP_CLOCK_* */
	uint64_t start_ns;       /* wall clock */
	uint32_t ring;           /* ring mode */
	const char *exe;         /* not NUL-terminated */
	size_t exe_len;
	const char *cmdline;     /* NUL-terminated arguments, one after another */
	size_t cmdline_len;
	uint64_t buffer_bytes;   /* per thread */
	uint32_t clock_step;     /* the smallest step seen, in ticks */
};
void hp_records_process(const struct hp_process_info *p) HP_HIDDEN;
/* PARENT: pid, flags (HP_PARENT_*), the fork's tick, the parent's trace. */
void hp_records_parent(uint32_t pid, uint32_t flags, uint64_t tick, const char *trace) HP_HIDDEN;
/* CLOCK: one (tick, ns) pair. */
void hp_records_clock(uint64_t tick, uint64_t ns) HP_HIDDEN;
/* CALIBRATION, when = HP_CALIBRATION_START or _END. */
void hp_records_calibration(uint32_t when, const struct hp_calibration *c) HP_HIDDEN;

/* FILTER: what was asked, and what HOOKPROF_MIN dropped so far. */
struct hp_filter_info {
	uint64_t min_ns, calls, ticks;
	uint32_t depth;
	const char *exclude, *include; /* NULL: none */
};
void hp_records_filter(const struct hp_filter_info *f) HP_HIDDEN;

void hp_records_thread(uint32_t stream, uint32_t tid, const char *name, size_t len) HP_HIDDEN;
/* LOST: nothing if count is 0. */
void hp_records_lost(uint32_t stream, uint32_t reason, uint64_t count) HP_HIDDEN;
void hp_records_end(uint64_t events, uint64_t lost, uint32_t streams) HP_HIDDEN;
void hp_records_string(uint32_t id, const char *text, uint32_t len) HP_HIDDEN;
/* STACK: a thread's root stack, written with its first events. */
void hp_records_stack(uint32_t stream, const struct hp_frames *s) HP_HIDDEN;

/* The first fatal event of the process, as captured in signal context. */
struct hp_crash_info {
	uint32_t stream, tid, sig, code, flags, n;
	uint64_t addr, unwind_ns;
	uint64_t pc[HP_CRASH_FRAMES];
};
/* CRASH, before END. */
void hp_records_crash(const struct hp_crash_info *c) HP_HIDDEN;

/* EVENTS of a stream: room for max bytes of encoding (NULL if none), then
 * the end of what the encoder wrote there and the events it holds. */
uint8_t *hp_records_events_begin(size_t max) HP_HIDDEN;
void hp_records_events_end(uint8_t *end, uint32_t stream, uint32_t events) HP_HIDDEN;

/* A module snapshot: MODULES records (as many as it takes) closed by a
 * MODULES_AT with the tick the walk read last. */
struct hp_records_modules {
	uint8_t *count_at;
	uint8_t *p;
	uint8_t *end;
	uint32_t count;
	uint32_t total; /* modules in the whole snapshot, over its records */
	uint64_t tick;  /* set by the caller while the walk holds the loader's lock */
	int failed;
};
int hp_records_modules_begin(struct hp_records_modules *s) HP_HIDDEN; /* 0, or -1 */
/* 0, or 1 if output failed (the walk stops). */
int hp_records_module(struct hp_records_modules *s, const struct hp_loaded_module *m) HP_HIDDEN;
void hp_records_modules_end(struct hp_records_modules *s) HP_HIDDEN;

#endif
