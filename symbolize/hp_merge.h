/*
 * hp_merge.h - a trace's events in time order across its threads.
 *
 * The file holds each thread's events in runs (one EVENTS record each),
 * interleaved as the writer flushed them. After a first pass in file order
 * (hp_analyze_indexed), which numbers the functions and notes where each
 * record lies, this second pass decodes every stream's records in order,
 * each stream with its own decoder, and merges the streams by tick. It
 * holds one decoded piece per stream, never the trace's events.
 */
#ifndef HP_MERGE_H
#define HP_MERGE_H

#include "hp_analyze.h"

/* Called for each event, in order of ticks; equal ticks in file order. The
 * events of one stream come in their own order whatever their ticks (a
 * RESET counts as at the stream's last tick). next: the stream's event
 * after ev, NULL if none. func is a function id of a (the first pass's).
 * When a stream has no more events, once: ev NULL (its frames still open
 * can close then, in time order). Returns 0, or -1 to stop. */
typedef int (*hp_merge_fn)(void *arg, uint32_t stream, const struct hp_ev *ev,
			   const struct hp_ev *next);

/* LEAF_PAIRS: after an enter whose next is its exit, that exit comes at
 * once, before any other stream's event (out of time order if the call
 * took long), for views that print a call without callees as one line. */
enum { HP_MERGE_LEAF_PAIRS = 1 };

/* Reads the trace at path again, as a and ix describe it (from
 * hp_analyze_indexed over the same file). 0, or -1 with a one-line reason
 * in err (empty if fn stopped it). */
int hp_merge(const char *path, struct hp_analysis *a, struct hp_record_index *ix, int flags,
	     hp_merge_fn fn, void *arg, char *err, size_t errlen);

#endif
