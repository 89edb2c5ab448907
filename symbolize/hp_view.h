/*
 * hp_view.h - the seam between the analysis driver (hp_drive.h) and what it
 * shows. A view is one file that fills a struct hp_view_ops and is listed
 * in hp_views.c; the driver decodes each trace, names its functions, applies
 * the filters and hands the view every shown call as an enter and an exit,
 * properly nested per thread, with times in nanoseconds.
 *
 * Within a thread, calls come in order. Across threads they come in the
 * order of the file's records (each a run of one thread's events), unless
 * the view asks for HP_VIEW_TIME_ORDER, which merges threads by time
 * (hp_merge.h): enters and exits by their tick, except that the exit of a
 * call without callees comes right after its enter (see hp_vframe.leaf).
 * Each trace is then read twice: a first pass numbers its functions.
 *
 * Marks and values of the traced program (hookprof_mark, hookprof_value)
 * come to a view with a note op, in order with its thread's calls.
 *
 * Names (hp_fntab_name) are final, with the labels that tell two functions
 * of one name apart, in end; before, only for a view with
 * HP_VIEW_NAMES_FIRST.
 */
#ifndef HP_VIEW_H
#define HP_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "hp_fntab.h"

struct hp_drive;
struct hp_analysis;
struct hp_flat;

/* A thread of one of the traces read. */
struct hp_vthread {
	uint32_t id;       /* dense over every trace read, in order of first event */
	uint32_t trace;    /* index of its trace in the paths given */
	uint32_t stream;   /* in its trace */
	uint32_t pid, tid;
	char name[64];     /* "" unless the trace named it (final at end) */
	const char *process; /* the program's name */
	void *data;        /* the view's own, per thread; NULL at first (freed
			    * by its ops' thread_free) */
};

/* A call as views see it. Times in ns from the start of its trace (its
 * first CLOCK record); end, dur and self only at exit. */
struct hp_vframe {
	uint32_t fn;       /* hp_drive_fns(d): name, module, file */
	uint32_t depth;    /* shown frames below it in its thread: 0 a root */
	double start;
	double end, dur;
	double self;       /* dur less the time of its shown callees */
	int outermost;     /* no shown frame of fn below it in its thread */
	int leaf;          /* at exit: it had no shown callee. At enter, in a
			    * time-ordered view: its exit is its thread's
			    * next event, and comes right after this enter */
	int lost;          /* at exit: its real exit was lost (a gap in the
			    * trace); end is the last tick before it. Not a
			    * call to count. */
};

/* A mark (hookprof_mark) or a value (hookprof_value) of a thread, for views
 * with a note op. It comes in order with the thread's calls; in a
 * time-ordered view, in time order with every thread's. */
enum hp_vnote_kind { HP_NOTE_MARK, HP_NOTE_VALUE };

struct hp_vnote {
	enum hp_vnote_kind kind;
	double at;         /* ns, as hp_vframe.start (paused time cut out alike) */
	const char *text;  /* the mark's text, or the value's name; "?" if the
			    * trace lacks the string */
	int64_t value;     /* HP_NOTE_VALUE */
	uint32_t depth;    /* shown frames open around it in its thread: the
			    * depth a call made there would have */
};

/* What a command passes its view. */
struct hp_view_opts {
	const char *format;   /* --format=, one of the view's formats; never NULL */
	char **args;          /* the command's own operands (graph FUNC...) */
	int nargs;
	unsigned long limit;  /* --limit=N, 0: all */
	int sort;             /* enum hp_sort, for views that sort; -1: no --sort
			       * given, the view's own default */
	int per;              /* enum hp_per: what a view that can show its
			       * figures apart shows them apart by */
};

/* --per-process, --per-run, --per-thread. */
enum hp_per { HP_PER_NONE, HP_PER_PROCESS, HP_PER_RUN, HP_PER_THREAD };

struct hp_view {
	const struct hp_view_ops *ops;
	const struct hp_view_opts *opts;
	struct hp_drive *d;
	FILE *out;
	void *state;          /* the view's */
	/* Set by the open of a view whose exits would only count each call in
	 * a flat profile (hp_flat.h), grouped as flat_per (enum hp_per) says:
	 * the driver counts there itself, builds no hp_vframe and calls no
	 * exit op (the view has none). NULL: every exit goes to the view. */
	struct hp_flat *flat;
	int flat_per;
};

enum hp_view_flags {
	HP_VIEW_TIME_ORDER = 1, /* threads merged by time */
	HP_VIEW_BINARY = 2,     /* writes bytes: never to a terminal */
	HP_VIEW_EXPORT = 4,     /* a format of `hookprof export`, not a command */
	HP_VIEW_OWN_COMMAND = 8, /* run by a command of its own (report), which
				  * main.c dispatches and lists */
	HP_VIEW_NAMES_FIRST = 16, /* writes names as the calls come: every
				   * function of every trace is named, and labelled
				   * apart from others of its name ("helper (a.c)"),
				   * before the first call (one more pass per trace) */
	HP_VIEW_NO_TIMES = 32,  /* its exit op reads no start or end (left 0):
				 * counts of calls and their durations only */
};

/* An output that will take this much or more earns a warning first (the
 * driver's hp_drive_warn), saying what makes it smaller. */
#define HP_VIEW_WARN_BYTES (1ull << 30)

struct hp_view_ops {
	const char *name;     /* the command, or the export format */
	const char *summary;  /* one line for --help */
	const char *help;     /* the view's own options and formats, for --help;
			       * lines of "  --opt   what it does\n"; may be NULL */
	const char *formats;  /* the --format values it takes, "|"-separated
			       * ("table|csv"), first the default; NULL: none */
	/* The operands it takes besides traces, for --help ("[FUNC...]"): an
	 * operand that is no file or directory goes to opts->args. NULL: traces only. */
	const char *operands;
	unsigned flags;
	/* Each returns 0, or -1 with a one-line reason in err (hp_view_fail). */
	int (*open)(struct hp_view *v, char *err, size_t errlen);
	/* A trace begins: its analysis so far (info with modules and timebase). */
	int (*trace)(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen);
	/* The trace was read whole: its full analysis (events, losses, the
	 * crash, whether it was partial). May be NULL. */
	int (*trace_done)(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen);
	int (*enter)(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f);
	int (*exit)(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f);
	/* A mark or a value of a shown thread within --time (every other filter
	 * leaves notes be). May be NULL: the view shows none. */
	int (*note)(struct hp_view *v, struct hp_vthread *t, const struct hp_vnote *n);
	/* Every trace read: write what is left. */
	int (*end)(struct hp_view *v, char *err, size_t errlen);
	/* Frees what the view keeps in a thread's data (called with it, never
	 * NULL), for every thread, after end and before close; the driver then
	 * sets data to NULL. NULL: the view keeps nothing there. */
	void (*thread_free)(void *data);
	void (*close)(struct hp_view *v);
};

/* The views, by name; NULL if none is called so. */
const struct hp_view_ops *hp_view_find(const char *name);

/* For the views' growing arrays: *p holds *cap elements of size bytes;
 * makes it hold need or more (doubling). 0, or -1 out of memory (*p and
 * *cap as they were). */
int hp_view_grow(void **p, size_t *cap, size_t need, size_t size);
/* Every view, NULL-terminated, for help texts. */
extern const struct hp_view_ops *const hp_views[];

#endif
