/*
 * hp_drive.h - the analysis driver: reads traces one after the other,
 * decodes their events, names their functions (hp_fntab.h), keeps each
 * thread's stack, applies the filters every view shares, and hands a view
 * (hp_view.h) the calls it is to show. Memory grows with functions,
 * threads and depth, never with events.
 *
 * The filters: a call is shown unless
 *  - its thread is not the one asked for (--thread=TID|NAME);
 *  - it is of a function --exclude matches (its time goes to its caller,
 *    its callees hang from its caller);
 *  - --function is given and neither it nor a caller matches;
 *  - it starts outside the --time window;
 *  - it lies --depth or more shown calls deep;
 *  - it took less than --min (then so did its callees: none is shown).
 * A shown call's self time is its time less that of its shown callees.
 * Marks and values (hp_vnote) go to a view that takes them when their
 * thread passes --thread and their time --time: the other filters choose
 * calls, and a note is no call (its depth counts the shown calls around it).
 */
#ifndef HP_DRIVE_H
#define HP_DRIVE_H

#include <regex.h>
#include <stdint.h>

#include "hp_analyze.h"
#include "hp_fntab.h"
#include "hp_view.h"

struct hp_filter {
	const char *thread;   /* a tid in decimal, or a thread name; NULL: all */
	uint32_t depth;       /* 0: no limit */
	int has_function, has_exclude;
	regex_t function, exclude; /* extended, matched against the name (never
				    * the label "name (file.c)" of hp_fntab_name) */
	double min_ns;        /* 0: none */
	int has_time;
	double from_ns, to_ns;
	int raw;              /* --raw: times as measured, hookprof's cost left in */
};

struct hp_drive_opts {
	int analyze_flags;    /* HP_ANALYZE_* (the driver adds HP_ANALYZE_NO_PROFILE) */
	struct hp_filter filter;
	/* Told each thing the user should know, one line each: why some names
	 * are module+0xoffset, a filter that matched nothing, a trace cut
	 * short, the same trace given twice, traces of unrelated programs
	 * merged. May be NULL. */
	void (*warn)(const char *line);
	/* The view shows each trace apart (report --per-process): traces of
	 * unrelated programs are no concern. */
	int traces_apart;
	/* Told of the bytes of each trace read so far (a long read shows it on
	 * a terminal: hp_progress_reading). May be NULL. */
	hp_read_progress_fn progress;
	void *progress_arg;
};

/* Parses one of the filter options (argument of getopt_long's name `opt`:
 * "thread", "depth", "function", "exclude", "min", "time") into f.
 * 0, or -1 with a one-line reason in err. */
int hp_filter_set(struct hp_filter *f, const char *opt, const char *arg, char *err, size_t errlen);
void hp_filter_free(struct hp_filter *f);
/* "2us", "1.5ms", "3s", "250" (ns): 0, or -1 if s is no duration. */
int hp_parse_duration(const char *s, double *ns);

struct hp_drive;

/*
 * Runs view over the traces: open, then per trace its trace callback and
 * every shown call, then end. 0, or -1 with a one-line reason naming the
 * trace in err. The view is closed before returning either way.
 */
int hp_drive(char **paths, int npaths, const struct hp_drive_opts *o, struct hp_view *v,
	     char *err, size_t errlen);

/* For views, while they run. */
const struct hp_fntab *hp_drive_fns(const struct hp_drive *d);
/* What was taken out of the times of the trace being read, in ns: a hook
 * pair's cost per call (as calibrated in the run, raised to what the run's
 * event spacing shows, hp_spacing.h), and hookprof's own time (chunk
 * switches) in all its threads so far. All 0 under --raw; 0 per call for a
 * trace without calibration (before format 1.3, or no TSC). */
struct hp_taken_out {
	double per_call_ns;
	double calibrated_ns; /* the calibration's figure alone */
	double own_ns;
	/* The outermost shown calls' time, measured and shown: what is left
	 * of the run once hookprof's share is out. */
	double measured_ns, shown_ns;
};
void hp_drive_taken_out(const struct hp_drive *d, struct hp_taken_out *t);
/* The threads seen so far, by id. */
uint32_t hp_drive_nthreads(const struct hp_drive *d);
struct hp_vthread *hp_drive_thread(const struct hp_drive *d, uint32_t id);
/* The analysis of the trace being read (in end: of the last one). */
const struct hp_analysis *hp_drive_analysis(const struct hp_drive *d);
/* Where the trace being read began, in the views' ns (from its first
 * CLOCK): its first CLOCK or its earliest event, whichever came first, so
 * 0 or less. Times less this are never negative. */
double hp_drive_origin(const struct hp_drive *d);
/* Tells the user something through the command's warn callback (one
 * line, no newline): a view's warning, such as an output larger than is
 * wise. Nothing without a callback. */
void hp_drive_warn(const struct hp_drive *d, const char *line);
/* Shown calls, per trace read (a filter that matched nothing says so). */
uint64_t hp_drive_shown(const struct hp_drive *d);

/*
 * A driver that reads no trace, for feeding a view hand-made frames (the
 * views' unit tests): functions and threads are made by hand, and the
 * functions above answer as while driving. NULL out of memory.
 */
struct hp_drive *hp_drive_bare(void);
/* A function of module "test" named name, defined at file:line (file may
 * be NULL); its id, or HP_NO_FN out of memory. */
uint32_t hp_drive_bare_fn(struct hp_drive *d, const char *name, const char *file, int line);
/* A thread of trace `trace`; NULL out of memory. */
struct hp_vthread *hp_drive_bare_thread(struct hp_drive *d, uint32_t trace, uint32_t tid);
void hp_drive_bare_free(struct hp_drive *d);

#endif
