/*
 * hp_analyze.h - one pass over a trace: its description, its function
 * dictionary and its flat profile. Memory grows with the number of
 * functions, threads and stack depth, never with the number of events.
 */
#ifndef HP_ANALYZE_H
#define HP_ANALYZE_H

#include "hp_decode.h"
#include "hp_funcmap.h"
#include "hp_profile.h"
#include "hp_trace.h"

struct hp_analysis {
	const char *path;
	struct hp_trace_info info;
	/* The functions the events are of: funcs.addr[id], and func_module[id]
	 * the module instance that held the address when it was called (an
	 * index into info.modules, or HP_NO_MODULE); see hp_funcmap.h. */
	struct hp_funcs funcs;
	uint32_t *func_module;
	struct hp_profile prof;
	struct hp_timebase tb;
	uint64_t events;       /* decoded */
	uint64_t orphan_exits; /* exits of frames entered before tracing began */
	int partial;           /* no END record: the run was cut short */
	/* With a CRASH record: the functions of the crashing stream's frames
	 * still open at its end (they never returned), outermost first. */
	uint64_t *crash_open;
	size_t ncrash_open;
	uint64_t cut_at;       /* partial, and the file ends in an incomplete
				* record at this byte (dropped whole); 0: not */
	/* Region repairs (hookprof_region_begin/end misused), one line each,
	 * naming the region and the thread, for the command to print; at most
	 * HP_WARNINGS_MAX, then one saying how many more. */
	char **warnings;
	size_t nwarnings;
	uint64_t warnings_more;
};

#define HP_WARNINGS_MAX 100

/* Called for each decoded record (a record of more than HP_DECODE_PIECE
 * events: for each piece of it, in order), for tools that want the events
 * themselves. The record's event count is checked after its last piece. */
typedef int (*hp_event_fn)(void *arg, const struct hp_analysis *a, uint32_t stream,
			   const struct hp_ev *ev, size_t n);

/* ALLOW_PARTIAL: a trace without END is read, also one whose last record
 * was cut (every complete record before it is read; cut_at says where). */
enum { HP_ANALYZE_ALLOW_PARTIAL = 1 };

/* 0, or -1 with a one-line reason naming the file in err; after a failure
 * *a holds nothing to free. */
int hp_analyze(const char *path, int flags, hp_event_fn on_events, void *arg,
	       struct hp_analysis *a, char *err, size_t errlen);
void hp_analysis_free(struct hp_analysis *a);

#endif
