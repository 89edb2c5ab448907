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
	uint64_t first_tick;   /* the earliest tick of an event; with has_first_tick */
	int has_first_tick;
	uint64_t orphan_exits; /* exits of frames entered before tracing began */
	int partial;           /* no END record: the run was cut short */
	/* With a CRASH record: the functions of the crashing stream's frames
	 * still open at its end (they never returned), outermost first. */
	uint64_t *crash_open;
	size_t ncrash_open;
	uint64_t cut_at;       /* partial, and the file ends in an incomplete
				* record at this byte (dropped whole); 0: not */
	uint64_t last_tick;    /* of the last event of any stream; 0: none (or
				* not known: a summary of a complete trace) */
	int decoded;           /* 0: a summary (hp_summarize): no funcs, prof */
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
/* NO_PROFILE: the caller keeps its own account of the events (the
 * driver): prof holds each stream's last tick and event count only, no
 * frames, no times (crash_open is kept all the same: the decoder's stack
 * holds it). EVENTS_ONLY: not even that (a pass that measures something
 * of the events, as hp_spacing's). */
/* PREFIX: on_events may return HP_ANALYZE_ENOUGH to end the reading there,
 * without error; the analysis then describes the records read so far and
 * is not checked whole. */
enum { HP_ANALYZE_ALLOW_PARTIAL = 1, HP_ANALYZE_NO_PROFILE = 2, HP_ANALYZE_PREFIX = 4,
       HP_ANALYZE_EVENTS_ONLY = 8 };
#define HP_ANALYZE_ENOUGH 1

/* Told of the bytes read so far, out of total, after each record. */
typedef void (*hp_read_progress_fn)(void *arg, uint64_t done, uint64_t total);

/* 0, or -1 with a one-line reason naming the file in err; after a failure
 * *a holds nothing to free. */
int hp_analyze(const char *path, int flags, hp_event_fn on_events, void *arg,
	       struct hp_analysis *a, char *err, size_t errlen);
/* The same, telling progress of the reading (hp_progress.h shows it). */
int hp_analyze_progress(const char *path, int flags, hp_event_fn on_events, void *arg,
			hp_read_progress_fn progress, void *progress_arg, struct hp_analysis *a,
			char *err, size_t errlen);
void hp_analysis_free(struct hp_analysis *a);

/* An EVENTS record, for decoding it again out of file order (hp_merge.h):
 * 24 bytes per record of some thousands of events. */
struct hp_record_at {
	uint64_t offset;   /* of its payload in the file */
	uint32_t size;     /* of its payload */
	uint32_t stream;
	uint32_t ndict;    /* the dictionary's size before it */
	uint32_t next;     /* the stream's next record (hp_merge fills it) */
};

struct hp_record_index {
	struct hp_record_at *rec;
	size_t n, cap;
	/* The pass's map of dictionary indices to function ids: decoding again
	 * with it gives every event the id the first pass gave it. Its modules
	 * are the analysis's: it must not outlive it. */
	struct hp_funcmap *funcmap;
	/* The whole dictionary: decoding a record out of order needs the
	 * entries that records before it in the file defined. */
	struct hp_funcs dict;
};

/* hp_analyze, also filling ix (zeroed by the caller) with where every
 * EVENTS record lies. ix is freed by hp_record_index_free either way. */
int hp_analyze_indexed(const char *path, int flags, struct hp_analysis *a,
		       struct hp_record_index *ix, char *err, size_t errlen);
void hp_record_index_free(struct hp_record_index *ix);

/*
 * What a trace holds without decoding its events, for `hookprof info`: its
 * description (info, tb), the event counts per stream and in all (from the
 * EVENTS records' headers), partial and cut_at as hp_analyze. A trace
 * without END has its event ticks scanned (no names, no stacks) for
 * last_tick, the end of its run. funcs, func_module, prof and crash_open
 * stay empty. 0, or -1 with a reason naming the file.
 */
int hp_summarize(const char *path, int flags, hp_read_progress_fn progress, void *arg,
		 struct hp_analysis *a, char *err, size_t errlen);

/* How long the run lasted, in ns: from the first CLOCK record to the last,
 * or for a run cut short (no END record) to its last event, which the last
 * CLOCK before the cut may precede by up to a second. */
double hp_analysis_duration_ns(const struct hp_analysis *a);

#endif
