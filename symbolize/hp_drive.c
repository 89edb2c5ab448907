/*
 * hp_drive.c - the analysis driver: traces in, shown calls out to a view.
 *
 * Each thread keeps the stack of every recorded frame. A frame knows the
 * nearest shown frame below it (up), so a hidden frame's time stays in that
 * frame's self time and its callees hang from it. With --min a shown frame
 * is only known to be long enough at its exit: its enter, and those of the
 * shown frames below it not yet handed on, go out then, in order. A frame
 * handed on has a long enough callee, so is long enough itself.
 */
#define _GNU_SOURCE
#include "hp_drive.h"
#include "hp_path.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "hp_carry.h"
#include "hp_flat.h"
#include "hp_merge.h"
#include "hp_format.h"
#include "hp_opencount.h"
#include "hp_pause.h"
#include "hp_regions.h"
#include "hp_spacing.h"

#define NO_FRAME UINT32_MAX

struct dframe {
	uint64_t start;
	/* Of the shown frames whose nearest shown caller it is: their spans
	 * (as measured) and their times (less hookprof's), in ticks. */
	uint64_t child_span;
	double child;
	/* What hookprof took of its self time (a shown frame's): its own time
	 * (ticks), and the hook pairs whose cost landed there: of its shown
	 * callees (their outside part), of the hidden calls it stands for (both). */
	uint64_t own;
	uint32_t kids, hidden;
	uint32_t fn;
	uint32_t up;        /* nearest shown frame below, or NO_FRAME */
	uint32_t sdepth;    /* shown frames below it */
	uint32_t open_at;   /* sent: its function's slot in open when sent */
	uint8_t shown, sent, in_function, had_child, outermost;
	uint8_t hooked;     /* a function's frame, whose hooks cost; not a region's */
	uint8_t unused;
	uint8_t exit_next;  /* time order: the thread's next event is its exit */
};

struct tstate {
	struct hp_vthread *vt;
	struct dframe *f;
	size_t depth, cap;
	/* Sent frames per function, and the time below 0 that a function's
	 * calls owe (hp_carry.h) in its slot: one lookup per call for both. */
	struct hp_opencount open;
	struct hp_pause pause;    /* paused and stopped time is cut out (hp_pause.h) */
	/* hookprof's own time (HP_EV_OWN) so far, in ticks: not cut out of the
	 * timeline (threads stay aligned in time), but out of the self time of
	 * the frame it fell in, and so of every duration around it */
	uint64_t own;
	uint64_t last_tick;
	int wanted;         /* the thread filter lets it through */
	uint32_t flat_group; /* with a view's flat profile: the group of its calls */
};

enum { FN_KNOWN = 1, FN_EXCLUDED = 2, FN_MATCHES = 4 };

/* A trace read, kept to tell the user of merges that mislead: the same
 * trace twice, traces of unrelated programs. */
struct seen {
	dev_t dev;
	ino_t ino;
	int stated;
	uint32_t pid;
	uint64_t start_ns;
	char *program;      /* the executable's base name */
	/* Its functions that have a source file, as hashes of name and the
	 * file's base name, sorted at its end: two builds of one program
	 * share some, unrelated programs none. */
	uint64_t *keys;
	size_t nkeys, cap;
	uint32_t group;     /* union-find over related traces */
};

struct hp_drive {
	const struct hp_drive_opts *o;
	/* A filter that chooses calls by more than their thread (--exclude,
	 * --function, --depth, --time, --min): 0, and a frame is shown
	 * exactly when its thread is. */
	int call_filters;
	struct hp_view *v;
	int exit_times;         /* the view's exits read start and end */
	/* The view's ops and --min, loaded once (a call reads them at every
	 * enter and exit, past stores to frames the compiler cannot tell
	 * apart from them). */
	int (*enter)(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f);
	int (*exit)(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f);
	struct hp_flat *flat;   /* the view's hp_view.flat: calls counted there */
	int by_min;             /* --min: a frame is sent once known long enough */
	struct hp_fntab fns;
	uint8_t *fnflags;       /* per fns id: FN_* */
	size_t nfnflags;
	struct hp_vthread **threads;
	uint32_t nthreads, threads_cap;
	uint64_t shown;
	char **process;         /* per trace read: its program's name, as long as
				 * the threads that point to it */
	uint32_t nprocess;
	/* The trace being read. */
	uint32_t trace;
	const struct hp_analysis *a;
	struct hp_symbols *sym;
	struct hp_timebase tb;
	/* A hook pair's cost in ticks (CALIBRATION records): inside its
	 * call's ticks, and outside, in its caller's; 0 with --raw. */
	double hook_in, hook_out;
	double calib_in, calib_out; /* as calibrated, before the run's spacing */
	double root_span, root_dur;  /* outermost shown frames: measured, and shown */
	uint32_t *gfn;          /* the trace's function id -> fns id */
	size_t ngfn;
	struct tstate *ts;      /* by stream */
	size_t nts;
	int began;
	int exit_next;          /* time order: the event fed is an enter whose exit follows */
	struct seen *seen;      /* by trace */
	struct hp_rows notes;   /* warnings, told once every trace is read */
	char *err;
	size_t errlen;
};

/* ---- filters --------------------------------------------------------- */

int hp_parse_duration(const char *s, double *ns)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 },
	};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v)) /* nan and inf are no durations */
		return -1;
	if (!*end) {
		*ns = v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*ns = v * units[i].ns;
			return 0;
		}
	return -1;
}

static int set_regex(regex_t *re, int *has, const char *opt, const char *arg, char *err,
		     size_t errlen)
{
	if (*has)
		regfree(re);
	*has = 0;
	int rc = regcomp(re, arg, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[128];
		regerror(rc, re, why, sizeof(why));
		snprintf(err, errlen, "--%s=%s: %s", opt, arg, why);
		return -1;
	}
	*has = 1;
	return 0;
}

static int set_time(struct hp_filter *f, const char *arg, char *err, size_t errlen)
{
	char *end;
	double from = strtod(arg, &end), to = -1;
	if (end != arg && *end == ',') {
		const char *p = end + 1;
		to = strtod(p, &end);
		if (end == p)
			to = -1;
	}
	if (*end || !(from >= 0) || !(to > from)) { /* nan compares false */
		snprintf(err, errlen, "--time=%s: want FROM,TO in seconds from the start, FROM < TO", arg);
		return -1;
	}
	f->has_time = 1;
	f->from_ns = from * 1e9;
	f->to_ns = to * 1e9;
	return 0;
}

int hp_filter_set(struct hp_filter *f, const char *opt, const char *arg, char *err, size_t errlen)
{
	if (!strcmp(opt, "thread")) {
		if (!*arg) { /* no thread is named "" */
			snprintf(err, errlen, "--thread=: want a thread's id or name");
			return -1;
		}
		f->thread = arg;
	} else if (!strcmp(opt, "depth")) {
		char *end;
		unsigned long n = strtoul(arg, &end, 10);
		if (*arg < '0' || *arg > '9' || *end || !n || n > UINT32_MAX) {
			snprintf(err, errlen, "--depth=%s: want a number of calls, 1 or more", arg);
			return -1;
		}
		f->depth = (uint32_t)n;
	} else if (!strcmp(opt, "function")) {
		return set_regex(&f->function, &f->has_function, opt, arg, err, errlen);
	} else if (!strcmp(opt, "exclude")) {
		return set_regex(&f->exclude, &f->has_exclude, opt, arg, err, errlen);
	} else if (!strcmp(opt, "min")) {
		if (hp_parse_duration(arg, &f->min_ns)) {
			snprintf(err, errlen, "--min=%s: want a duration such as 500ns, 2us, 1.5ms, 3s", arg);
			return -1;
		}
	} else if (!strcmp(opt, "time")) {
		return set_time(f, arg, err, errlen);
	} else if (!strcmp(opt, "raw")) {
		f->raw = 1;
	} else {
		snprintf(err, errlen, "--%s: no such filter", opt);
		return -1;
	}
	return 0;
}

void hp_filter_free(struct hp_filter *f)
{
	if (f->has_function)
		regfree(&f->function);
	if (f->has_exclude)
		regfree(&f->exclude);
	f->has_function = f->has_exclude = 0;
}

static int thread_wanted(const struct hp_filter *f, const struct hp_vthread *t)
{
	if (!f->thread)
		return 1;
	char *end;
	unsigned long tid = strtoul(f->thread, &end, 10);
	if (*f->thread && !*end)
		return tid == t->tid;
	return !strcmp(f->thread, t->name);
}

/* Regexes run once per function, not per call. */
static uint8_t fn_flags(struct hp_drive *d, uint32_t fn)
{
	if (fn >= d->nfnflags) {
		size_t n = d->nfnflags ? d->nfnflags : 256;
		while (n <= fn)
			n *= 2;
		uint8_t *f = realloc(d->fnflags, n);
		if (!f)
			return FN_KNOWN; /* unfiltered; the intern of fn would have failed first */
		memset(f + d->nfnflags, 0, n - d->nfnflags);
		d->fnflags = f;
		d->nfnflags = n;
	}
	uint8_t fl = d->fnflags[fn];
	if (fl & FN_KNOWN)
		return fl;
	const struct hp_filter *flt = &d->o->filter;
	/* The name, never the label: labels are known at first sight in some
	 * views only (HP_VIEW_NAMES_FIRST), and every view must show the same calls. */
	const char *name = hp_fntab_get(&d->fns, fn)->name;
	fl = FN_KNOWN;
	if (flt->has_exclude && !regexec(&flt->exclude, name, 0, NULL, 0))
		fl |= FN_EXCLUDED;
	if (flt->has_function && !regexec(&flt->function, name, 0, NULL, 0))
		fl |= FN_MATCHES;
	return d->fnflags[fn] = fl;
}

/* ---- threads and functions ---------------------------------------------- */

static struct hp_vthread *new_thread(struct hp_drive *d, uint32_t stream)
{
	if (d->nthreads == d->threads_cap) {
		uint32_t cap = d->threads_cap ? d->threads_cap * 2 : 16;
		struct hp_vthread **t = realloc(d->threads, cap * sizeof(*t));
		if (!t)
			return NULL;
		d->threads = t;
		d->threads_cap = cap;
	}
	struct hp_vthread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	const struct hp_trace_info *in = &d->a->info;
	t->id = d->nthreads;
	t->trace = d->trace;
	t->stream = stream;
	t->pid = in->pid;
	if (stream < in->nstreams) {
		t->tid = in->streams[stream].tid;
		snprintf(t->name, sizeof(t->name), "%s", in->streams[stream].name);
	}
	t->process = d->process[d->trace];
	d->threads[d->nthreads++] = t;
	return t;
}

static struct tstate *thread_state(struct hp_drive *d, uint32_t stream)
{
	if (stream >= d->nts) {
		size_t n = (size_t)stream + 8;
		struct tstate *ts = realloc(d->ts, n * sizeof(*ts));
		if (!ts)
			return NULL;
		memset(ts + d->nts, 0, (n - d->nts) * sizeof(*ts));
		d->ts = ts;
		d->nts = n;
	}
	struct tstate *s = &d->ts[stream];
	if (!s->vt) {
		if (!(s->vt = new_thread(d, stream)))
			return NULL;
		s->wanted = thread_wanted(&d->o->filter, s->vt);
		s->flat_group = hp_flat_group(d->v->flat_per, s->vt);
	}
	return s;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static int add_key(struct seen *t, const struct hp_symbol *s)
{
	if (t->nkeys == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint64_t *k = realloc(t->keys, cap * sizeof(*k));
		if (!k)
			return -1;
		t->keys = k;
		t->cap = cap;
	}
	t->keys[t->nkeys++] = fnv(fnv(0xcbf29ce484222325ull, s->name), hp_path_base(s->file));
	return 0;
}

/* The trace's function id `func`: a region's "[name]" (made in region), or
 * what its module's symbols say. */
static void symbol_of(const struct hp_analysis *a, struct hp_symbols *sym, uint32_t func,
		      struct hp_symbol *s, char *region, size_t len)
{
	uint32_t module = a->func_module ? a->func_module[func] : HP_SYMBOLS_ANY_MODULE;
	if (!hp_region_symbol(a, func, s, region, len))
		hp_symbols_lookup_in(sym, module, a->funcs.addr[func], s);
}

/* global_fn's first sight of func: named and interned. */
static uint32_t name_fn(struct hp_drive *d, uint32_t func)
{
	if (func >= d->ngfn) {
		size_t n = d->ngfn ? d->ngfn : 1024;
		while (n <= func)
			n *= 2;
		uint32_t *g = realloc(d->gfn, n * sizeof(*g));
		if (!g)
			return HP_NO_FN;
		memset(g + d->ngfn, 0xff, (n - d->ngfn) * sizeof(*g));
		d->gfn = g;
		d->ngfn = n;
	}
	if (d->gfn[func] == HP_NO_FN) {
		struct hp_symbol s;
		char region[HP_STRING_BYTES + 3];
		symbol_of(d->a, d->sym, func, &s, region, sizeof(region));
		d->gfn[func] = hp_fntab_intern(&d->fns, &s);
		if (s.file && d->gfn[func] != HP_NO_FN && add_key(&d->seen[d->trace], &s))
			return HP_NO_FN;
	}
	return d->gfn[func];
}

/* The fns id of the trace's function id `func`, named at first sight. */
static inline uint32_t global_fn(struct hp_drive *d, uint32_t func)
{
	return func < d->ngfn && d->gfn[func] != HP_NO_FN ? d->gfn[func] : name_fn(d, func);
}

/* ---- calls out to the view ------------------------------------------------ */

static double ns_at(const struct hp_drive *d, uint64_t tick)
{
	return (double)(int64_t)(tick - d->tb.tick0) * d->tb.ns_per_tick;
}

static inline int send_enter(struct hp_drive *d, struct tstate *s, struct dframe *fr)
{
	size_t at;
	int64_t open = hp_opencount_add_at(&s->open, fr->fn, &at);
	if (open < 0)
		return -1;
	fr->open_at = (uint32_t)at; /* a cut index only costs a lookup */
	fr->sent = 1;
	fr->outermost = open == 0;
	d->shown++;
	if (!d->enter)
		return 0;
	struct hp_vframe vf = { .fn = fr->fn, .depth = fr->sdepth, .start = ns_at(d, fr->start),
				.outermost = fr->outermost, .leaf = fr->exit_next };
	return d->enter(d->v, s->vt, &vf);
}

/* The enters still owed below and up to frame i (--min), oldest first. */
static int send_pending(struct hp_drive *d, struct tstate *s, uint32_t i)
{
	uint32_t chain[64], n = 0, j = i;
	while (j != NO_FRAME && !s->f[j].sent) {
		if (n == 64) { /* deeper than the chain: the lower part first */
			if (send_pending(d, s, j))
				return -1;
			break;
		}
		chain[n++] = j;
		j = s->f[j].up;
	}
	while (n)
		if (send_enter(d, s, &s->f[chain[--n]]))
			return -1;
	return 0;
}

static uint64_t frame_span(const struct dframe *fr, uint64_t tick)
{
	return tick >= fr->start ? tick - fr->start : 0;
}

/*
 * A shown frame's self time in ticks (span: frame_span at its exit), less
 * hookprof's: the own time that fell in it (chunk switches), the inside
 * part of its own hook pair, the outside part of each shown callee's, and
 * both parts of each hidden call it stands for. It can come out below 0
 * (the clock's step; a call shorter than its hooks' mean cost): send_exit
 * shows at least 0 and carries the rest (hp_carry.h). Its time is then
 * that plus its shown callees' times, so that self times always add up to
 * the roots' times.
 */
static inline double frame_self(const struct hp_drive *d, const struct dframe *fr, uint64_t span)
{
	/* Tick counts fit in 63 bits: converted as signed, one instruction. */
	double measured = (double)(int64_t)(span > fr->child_span ? span - fr->child_span : 0) -
			  (double)(int64_t)fr->own;
	double hooks = (fr->hooked ? d->hook_in : 0) + fr->kids * d->hook_out;
	if (fr->hidden) /* only a filter hides calls: adding 0 changes nothing */
		hooks += fr->hidden * (d->hook_in + d->hook_out);
	return measured - hooks;
}

/* The frame ends span ticks after its start (frame_span, at least 0);
 * raw: frame_self(d, fr, span), which pop computed already; o: its
 * function's slot in the thread's open counts. Inline in each caller
 * (pop, leaf_call): the frame's fields stay in registers. */
static inline __attribute__((always_inline)) int
send_exit(struct hp_drive *d, struct tstate *s, struct dframe *fr, struct hp_open_slot *o,
	  uint64_t span, int lost, double raw)
{
	double self = hp_carry_pay(&o->owed, raw);
	o->n--;
	double dur = self + fr->child;
	if (fr->up == NO_FRAME) {
		d->root_span += (double)(int64_t)span;
		d->root_dur += dur;
	} else {
		s->f[fr->up].child += dur;
		s->f[fr->up].child_span += span;
		s->f[fr->up].kids += fr->hooked;
		s->f[fr->up].had_child = 1;
	}
	if (d->flat) /* a lost frame is no call */
		return lost ? 0 : hp_flat_count(d->flat, s->flat_group, fr->fn, dur * d->tb.ns_per_tick,
						self * d->tb.ns_per_tick, fr->outermost);
	if (!d->exit)
		return 0;
	struct hp_vframe vf = {
		.fn = fr->fn, .depth = fr->sdepth,
		.dur = dur * d->tb.ns_per_tick,
		.self = self * d->tb.ns_per_tick,
		.outermost = fr->outermost, .leaf = !fr->had_child, .lost = lost,
	};
	if (d->exit_times) {
		vf.start = ns_at(d, fr->start);
		vf.end = ns_at(d, fr->start + span);
	}
	return d->exit(d->v, s->vt, &vf);
}

/* A mark or value, unless the thread or --time filter hides it. Its depth
 * counts the shown frames open around it, with --min also those not yet
 * known to be long enough. */
static int send_note(struct hp_drive *d, struct tstate *s, const struct hp_ev *e)
{
	const struct hp_filter *f = &d->o->filter;
	double at = ns_at(d, e->tick);
	if (!d->v->ops->note || !s->wanted || (f->has_time && (at < f->from_ns || at >= f->to_ns)))
		return 0;
	const struct dframe *top = s->depth ? &s->f[s->depth - 1] : NULL;
	uint32_t shown = !top ? NO_FRAME : top->shown ? (uint32_t)(s->depth - 1) : top->up;
	const char *text = hp_trace_string(&d->a->info, e->func);
	struct hp_vnote n = {
		.kind = e->kind == HP_EV_MARK ? HP_NOTE_MARK : HP_NOTE_VALUE,
		.at = at, .text = text ? text : "?", .value = e->value,
		.depth = shown == NO_FRAME ? 0 : s->f[shown].sdepth + 1,
	};
	return d->v->ops->note(d->v, s->vt, &n);
}

/* ---- the stacks ------------------------------------------------------------ */

static int shown_at_enter(struct hp_drive *d, const struct tstate *s, const struct dframe *fr,
			  uint8_t fl)
{
	const struct hp_filter *f = &d->o->filter;
	if (!s->wanted || (fl & FN_EXCLUDED) || (f->has_function && !fr->in_function))
		return 0;
	if (f->depth && fr->sdepth >= f->depth)
		return 0;
	if (f->has_time) {
		double t = ns_at(d, fr->start);
		if (t < f->from_ns || t >= f->to_ns)
			return 0;
	}
	return 1;
}

static int push(struct hp_drive *d, struct tstate *s, uint32_t func, uint64_t tick)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct dframe *f = realloc(s->f, cap * sizeof(*f));
		if (!f)
			return -1;
		s->f = f;
		s->cap = cap;
	}
	uint32_t fn = global_fn(d, func);
	if (fn == HP_NO_FN)
		return -1;
	size_t depth = s->depth;
	struct dframe *fr = &s->f[depth];
	if (!d->call_filters) {
		/* Every frame of the thread is shown, or none: frame k's nearest
		 * shown frame below is k - 1, with k shown frames below it. */
		uint8_t w = (uint8_t)s->wanted;
		*fr = (struct dframe){
			.start = tick, .fn = fn, .up = w && depth ? (uint32_t)(depth - 1) : NO_FRAME,
			.sdepth = w ? (uint32_t)depth : 0, .shown = w,
			.hooked = !hp_is_region_func(func),
			.exit_next = (uint8_t)d->exit_next,
		};
	} else {
		uint8_t fl = fn_flags(d, fn);
		struct dframe *below = depth ? &s->f[depth - 1] : NULL;
		uint32_t up = !below ? NO_FRAME : below->shown ? (uint32_t)(depth - 1) : below->up;
		*fr = (struct dframe){
			.start = tick, .fn = fn, .up = up,
			.sdepth = up == NO_FRAME ? 0 : s->f[up].sdepth + 1,
			.in_function = (below && below->in_function) || (fl & FN_MATCHES),
			.hooked = !hp_is_region_func(func),
			.exit_next = (uint8_t)d->exit_next,
		};
		fr->shown = (uint8_t)shown_at_enter(d, s, fr, fl);
	}
	s->depth = depth + 1;
	if (fr->shown && !d->by_min)
		return send_enter(d, s, fr);
	return 0;
}

/* Inline in feed and close_all (gcc would keep it out of line, with
 * send_exit in it): a call to it cost more than its common path. */
static inline __attribute__((always_inline)) int
pop(struct hp_drive *d, struct tstate *s, uint64_t tick, int lost)
{
	uint32_t i = (uint32_t)--s->depth;
	struct dframe *fr = &s->f[i];
	if (!fr->shown) {
		if (fr->up != NO_FRAME) /* its hooks ran all the same */
			s->f[fr->up].hidden += fr->hooked;
		return 0;
	}
	uint64_t span = frame_span(fr, tick);
	double self = frame_self(d, fr, span);
	if (d->by_min && !fr->sent) {
		double dur = (self > 0 ? self : 0) + fr->child;
		if ((double)dur * d->tb.ns_per_tick < d->o->filter.min_ns)
			return 0;
		if (send_pending(d, s, i))
			return -1;
	}
	return send_exit(d, s, fr, hp_opencount_at(&s->open, fr->fn, fr->open_at), span, lost, self);
}

/* A call whose exit is the thread's next event, in a thread whose every
 * frame is shown at once (no filter that chooses calls, no --min): push
 * and pop in one, its frame never stored on the thread's stack. */
static inline int leaf_call(struct hp_drive *d, struct tstate *s, uint32_t func, uint64_t start,
			    uint64_t end)
{
	uint32_t fn = global_fn(d, func);
	if (fn == HP_NO_FN)
		return -1;
	size_t depth = s->depth;
	struct dframe fr = {
		.start = start, .fn = fn, .up = depth ? (uint32_t)(depth - 1) : NO_FRAME,
		.sdepth = (uint32_t)depth, .shown = 1, .hooked = !hp_is_region_func(func),
		.exit_next = (uint8_t)d->exit_next,
	};
	if (send_enter(d, s, &fr))
		return -1;
	uint64_t span = frame_span(&fr, end);
	/* its slot, where send_enter left it: nothing entered since */
	return send_exit(d, s, &fr, &s->open.slot[fr.open_at], span, 0, frame_self(d, &fr, span));
}

static int close_all(struct hp_drive *d, struct tstate *s, uint64_t tick, int lost)
{
	while (s->depth)
		if (pop(d, s, tick, lost))
			return -1;
	return 0;
}

/* hookprof's own time falls in the innermost frame, or the shown one it
 * stands in for. */
static void take_own(struct tstate *s, uint64_t own)
{
	s->own += own;
	if (!s->depth)
		return;
	const struct dframe *top = &s->f[s->depth - 1];
	uint32_t i = top->shown ? (uint32_t)(s->depth - 1) : top->up;
	if (i != NO_FRAME)
		s->f[i].own += own;
}

/* A call's tick on its thread's cut timeline; uncut: hp_pause_uncut as it
 * was after the thread's last control event (only those move the pause
 * state), when the tick needs no cut. */
static inline uint64_t call_tick(struct tstate *s, int uncut, uint64_t tick)
{
	return uncut ? hp_pause_call_uncut(&s->pause, tick) : hp_pause_call(&s->pause, tick);
}

static int feed(struct hp_drive *d, struct tstate *s, const struct hp_ev *ev, size_t n)
{
	const struct hp_ev *end = ev + n;
	/* An enter before `pairs` has an event after it, and is a leaf's if
	 * that is an exit: leaf_call takes it, in its case. */
	const struct hp_ev *pairs = !d->call_filters && s->wanted && !d->by_min && n ? end - 1 : ev;
	int uncut = hp_pause_uncut(&s->pause); /* call_tick's */
	for (const struct hp_ev *at = ev; at < end; at++) {
		struct hp_ev cut;
		if (at->kind == HP_EV_ENTER || at->kind == HP_EV_EXIT) {
			/* nearly every event: no copy of it */
			uint64_t tick = call_tick(s, uncut, at->tick);
			int rc;
			if (at->kind == HP_EV_EXIT) {
				rc = s->depth ? pop(d, s, tick, 0) : 0;
			} else if (at < pairs && at[1].kind == HP_EV_EXIT) {
				uint64_t start = tick;
				tick = call_tick(s, uncut, at[1].tick);
				rc = leaf_call(d, s, at->func, start, tick);
				at++;
			} else {
				rc = push(d, s, at->func, tick);
			}
			if (rc)
				return -1;
			s->last_tick = tick; /* as the flat profile's: frames end at calls' ticks */
			continue;
		}
		if (at->kind == HP_EV_OWN) {
			if (!d->o->filter.raw)
				take_own(s, hp_pause_own(&s->pause, at));
			continue;
		}
		int passed = hp_pause_control(&s->pause, at, &cut); /* calls came above */
		uncut = hp_pause_uncut(&s->pause);
		if (!passed)
			continue;
		const struct hp_ev *e = &cut;
		int rc;
		if (e->kind == HP_EV_RESET)
			rc = close_all(d, s, s->last_tick, 1);
		else if (e->kind == HP_EV_MARK || e->kind == HP_EV_VALUE)
			rc = send_note(d, s, e);
		else
			continue; /* region repairs: no frame */
		if (rc)
			return -1;
	}
	return 0;
}

/* ---- one trace ------------------------------------------------------------ */

/* The program's name outlives the trace's analysis: threads keep it. */
static int keep_process_name(struct hp_drive *d, const struct hp_analysis *a)
{
	char **p = realloc(d->process, (d->trace + 1) * sizeof(*p));
	if (!p)
		return -1;
	d->process = p;
	while (d->nprocess <= d->trace)
		p[d->nprocess++] = NULL;
	if (!p[d->trace] && !(p[d->trace] = strdup(hp_path_base(a->info.exe))))
		return -1;
	return 0;
}

/* The calibrated cost, capped by the run's own spacing (hp_spacing.h):
 * only functions spaced less than twice the calibration witness, so that a
 * program with no short function keeps the calibration. */
static int hook_cost(struct hp_drive *d, const struct hp_analysis *a)
{
	d->hook_in = d->hook_out = d->calib_in = d->calib_out = 0;
	if (d->o->filter.raw || !hp_trace_hook_cost(&a->info, &d->calib_in, &d->calib_out))
		return 0;
	struct hp_spacing_cost c;
	if (hp_spacing_measure(a->path, 2 * d->calib_in, 2 * d->calib_out, &c, d->err, d->errlen))
		return -1;
	d->hook_in = d->calib_in;
	d->hook_out = d->calib_out;
	hp_spacing_cap(&c, &d->hook_in, &d->hook_out);
	return 0;
}

static int begin_trace(struct hp_drive *d, const struct hp_analysis *a)
{
	d->a = a;
	if (keep_process_name(d, a)) {
		snprintf(d->err, d->errlen, "out of memory");
		return -1;
	}
	if (hp_trace_timebase_ahead(&a->info, &d->tb)) {
		snprintf(d->err, d->errlen, "no clock calibration in the trace (the run ended before it could be written)");
		return -1;
	}
	d->root_span = d->root_dur = 0;
	if (hook_cost(d, a))
		return -1;
	if (!(d->sym = hp_symbols_for_trace(a->path, a->info.modules, a->info.nmodules, d->err, d->errlen)))
		return -1;
	d->began = 1;
	if (d->v->ops->trace && d->v->ops->trace(d->v, a, d->err, d->errlen))
		return -1;
	return 0;
}

static int on_events(void *arg, const struct hp_analysis *a, uint32_t stream,
		     const struct hp_ev *ev, size_t n)
{
	struct hp_drive *d = arg;
	if (!d->began && begin_trace(d, a))
		return -1;
	struct tstate *s = thread_state(d, stream);
	if (!s) {
		snprintf(d->err, d->errlen, "out of memory");
		return -1;
	}
	if (feed(d, s, ev, n)) {
		if (!*d->err)
			snprintf(d->err, d->errlen, "out of memory, or the output could not be written");
		return -1;
	}
	return 0;
}

/* Frames open at a stream's end (threads still running, main calling exit,
 * a crash) last until its last tick, as in the flat profile. */
static uint64_t stream_end(const struct hp_drive *d, const struct hp_analysis *a, size_t i)
{
	uint64_t last = d->ts[i].last_tick;
	if (i < a->prof.nstreams && a->prof.streams[i].last_tick > last)
		last = a->prof.streams[i].last_tick;
	return last;
}

struct ending {
	const struct hp_drive *d;
	const struct hp_analysis *a;
};

static int by_end(const void *x, const void *y, void *arg)
{
	const struct ending *e = arg;
	uint64_t a = stream_end(e->d, e->a, *(const size_t *)x);
	uint64_t b = stream_end(e->d, e->a, *(const size_t *)y);
	return a < b ? -1 : a > b ? 1 : *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* The streams in the order their frames close at the end: by stream, or in
 * time order by their last tick, so that time order holds to the end. */
static size_t *closing_order(const struct hp_drive *d, const struct hp_analysis *a)
{
	size_t *order = malloc((d->nts ? d->nts : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < d->nts; i++)
		order[i] = i;
	if (d->v->ops->flags & HP_VIEW_TIME_ORDER) {
		struct ending e = { d, a };
		qsort_r(order, d->nts, sizeof(*order), by_end, &e);
	}
	return order;
}

static int end_trace(struct hp_drive *d, const struct hp_analysis *a)
{
	d->a = a;
	d->exit_next = 0;
	size_t *order = closing_order(d, a);
	if (!order)
		return -1;
	for (size_t k = 0; k < d->nts; k++) {
		size_t i = order[k];
		struct tstate *s = &d->ts[i];
		if (!s->vt)
			continue;
		if (close_all(d, s, stream_end(d, a, i), 0)) {
			free(order);
			return -1;
		}
		if (i < a->info.nstreams) {
			s->vt->tid = a->info.streams[i].tid;
			snprintf(s->vt->name, sizeof(s->vt->name), "%s", a->info.streams[i].name);
		}
	}
	free(order);
	/* The regions the reader repaired, one line each (hp_analysis). */
	for (size_t i = 0; d->o->warn && i < a->nwarnings; i++) {
		char line[1024];
		snprintf(line, sizeof(line), "%s: %s", a->path, a->warnings[i]);
		d->o->warn(line);
	}
	if (d->o->warn && a->warnings_more) {
		char line[1024];
		snprintf(line, sizeof(line), "%s: %llu more region repairs", a->path,
			 (unsigned long long)a->warnings_more);
		d->o->warn(line);
	}
	size_t iter = 0;
	const char *why;
	while (d->sym && (why = hp_symbols_next_problem(d->sym, &iter)))
		if (hp_rows_add_problem(&d->fns.rows, why))
			return -1;
	return 0;
}

static void forget_trace(struct hp_drive *d)
{
	for (size_t i = 0; i < d->nts; i++) {
		free(d->ts[i].f);
		hp_opencount_free(&d->ts[i].open);
	}
	free(d->ts);
	d->ts = NULL;
	d->nts = 0;
	free(d->gfn);
	d->gfn = NULL;
	d->ngfn = 0;
	hp_symbols_free(d->sym);
	d->sym = NULL;
	d->began = 0;
}

/* In time order, a stream's frames left open close when the merge has
 * passed its last event, not after every other stream's. */
static int stream_ended(struct hp_drive *d, uint32_t stream)
{
	d->exit_next = 0;
	if (stream >= d->nts || !d->ts[stream].vt)
		return 0;
	if (close_all(d, &d->ts[stream], stream_end(d, d->a, stream), 0)) {
		if (!*d->err)
			snprintf(d->err, d->errlen, "out of memory, or the output could not be written");
		return -1;
	}
	return 0;
}

static int on_merged(void *arg, uint32_t stream, const struct hp_ev *ev, const struct hp_ev *next)
{
	struct hp_drive *d = arg;
	if (!ev)
		return stream_ended(d, stream);
	d->exit_next = ev->kind == HP_EV_ENTER && next && next->kind == HP_EV_EXIT;
	return on_events(d, d->a, stream, ev, 1);
}

/* Prefixes a reason that does not name the trace yet. */
static void name_trace(struct hp_drive *d, const char *path)
{
	if (strstr(d->err, path))
		return;
	char why[512];
	snprintf(why, sizeof(why), "%s", *d->err ? d->err : "out of memory");
	snprintf(d->err, d->errlen, "%s: %s", path, why);
}

/* The caller's flags, and no flat profile built by the analysis: the
 * views keep their own accounts (the crash section and each stream's last
 * tick come from the light one). */
static int analyze_flags(const struct hp_drive *d)
{
	return d->o->analyze_flags | HP_ANALYZE_NO_PROFILE;
}

/* A first pass in file order numbers the functions and notes where each
 * record lies; the second merges the threads by time (hp_merge.h). */
static int read_in_time_order(struct hp_drive *d, const char *path, struct hp_analysis *a)
{
	struct hp_record_index ix = { 0 };
	int rc = hp_analyze_indexed(path, analyze_flags(d), a, &ix, d->err, d->errlen);
	if (rc) {
		hp_record_index_free(&ix);
		return -1;
	}
	rc = begin_trace(d, a);
	if (!rc && hp_merge(path, a, &ix, HP_MERGE_LEAF_PAIRS, on_merged, d, d->err, d->errlen)) {
		if (!*d->err)
			snprintf(d->err, d->errlen, "out of memory, or the output could not be written");
		rc = -1;
	}
	hp_record_index_free(&ix);
	if (rc) {
		hp_analysis_free(a);
		name_trace(d, path);
	}
	return rc;
}

static int read_in_file_order(struct hp_drive *d, const char *path, struct hp_analysis *a)
{
	return hp_analyze_progress(path, analyze_flags(d), on_events, d, d->o->progress,
				   d->o->progress_arg, a, d->err, d->errlen);
}

static int note(struct hp_drive *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(struct hp_drive *d, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return hp_rows_add_problem(&d->notes, line);
}

static int by_value(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* What is known of the trace just read, and whether it was read before:
 * a trace counted twice doubles every figure without a sign. */
static int remember_trace(struct hp_drive *d, char **paths, const struct hp_analysis *a)
{
	struct seen *t = &d->seen[d->trace];
	struct stat st;
	if (!stat(a->path, &st)) {
		t->stated = 1;
		t->dev = st.st_dev;
		t->ino = st.st_ino;
	}
	t->pid = a->info.pid;
	t->start_ns = a->info.start_realtime_ns;
	t->group = d->trace;
	if (!(t->program = strdup(hp_path_base(a->info.exe))))
		return -1;
	if (t->nkeys)
		qsort(t->keys, t->nkeys, sizeof(*t->keys), by_value);
	if (a->cut_at && note(d, "%s: trace cut at byte %llu (an incomplete record, left out); every record before it was read",
			      a->path, (unsigned long long)a->cut_at))
		return -1;
	for (uint32_t i = 0; i < d->trace; i++) {
		const struct seen *o = &d->seen[i];
		int same_file = t->stated && o->stated && t->dev == o->dev && t->ino == o->ino;
		if (!same_file && (t->pid != o->pid || t->start_ns != o->start_ns || !t->start_ns))
			continue;
		return note(d, "%s and %s are the same %s: its calls are counted twice", paths[i], a->path,
			    same_file ? "file" : "trace (one process, one start)");
	}
	return 0;
}

static int drive_trace(struct hp_drive *d, char **paths, struct hp_analysis *a)
{
	const char *path = paths[d->trace];
	int rc = d->v->ops->flags & HP_VIEW_TIME_ORDER ? read_in_time_order(d, path, a)
						       : read_in_file_order(d, path, a);
	if (rc)
		return -1;
	if (!d->began)
		rc = begin_trace(d, a);
	if (!rc)
		rc = end_trace(d, a);
	if (!rc && remember_trace(d, paths, a))
		rc = -1, snprintf(d->err, d->errlen, "out of memory");
	if (!rc && d->v->ops->trace_done)
		rc = d->v->ops->trace_done(d->v, a, d->err, d->errlen);
	if (rc)
		name_trace(d, path);
	return rc;
}

/* A filter that chooses calls by more than their thread. */
static int call_filtering(const struct hp_filter *f)
{
	return f->depth || f->has_function || f->has_exclude || f->min_ns || f->has_time;
}

static int filtering(const struct hp_filter *f)
{
	return f->thread || call_filtering(f);
}

static uint32_t group_of(struct seen *t, uint32_t i)
{
	while (t[i].group != i)
		i = t[i].group = t[t[i].group].group;
	return i;
}

static int share_a_function(const struct seen *a, const struct seen *b)
{
	for (size_t i = 0, j = 0; i < a->nkeys && j < b->nkeys;) {
		if (a->keys[i] == b->keys[j])
			return 1;
		if (a->keys[i] < b->keys[j])
			i++;
		else
			j++;
	}
	return 0;
}

/* Traces are of related programs when they are of one program, or when
 * they share a function (name and source file): two builds of a program
 * are related, pigz and lz4 are not. One line per group beyond the first. */
static int note_unrelated(struct hp_drive *d, char **paths, uint32_t n)
{
	struct seen *t = d->seen;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < i; j++) {
			uint32_t gi = group_of(t, i), gj = group_of(t, j);
			if (gi != gj && (!strcmp(t[i].program, t[j].program) || share_a_function(&t[i], &t[j])))
				t[gi].group = gj;
		}
	for (uint32_t i = 1; i < n; i++)
		if (group_of(t, i) == i &&
		    note(d, "%s (%s) and %s (%s) are traces of unrelated programs (no function in common), merged",
			 paths[0], t[0].program, paths[i], t[i].program))
			return -1;
	return 0;
}

static void tell(const struct hp_drive *d)
{
	if (!d->o->warn)
		return;
	for (size_t i = 0; i < d->notes.nproblems; i++)
		d->o->warn(d->notes.problem[i]);
	for (size_t i = 0; i < d->fns.rows.nproblems; i++)
		d->o->warn(d->fns.rows.problem[i]);
	if (filtering(&d->o->filter) && !d->shown)
		d->o->warn("no call passes the filters (--thread, --depth, --function, --exclude, --min, --time): nothing to show");
}

/* For a view that writes names as the calls come (HP_VIEW_NAMES_FIRST):
 * every function of every trace named, and labelled apart from the others
 * of its name, before the first call. The dictionary is all it takes of
 * each trace, but that is a pass of its own. */
static int name_all_first(struct hp_drive *d, char **paths, int npaths)
{
	for (int i = 0; i < npaths; i++) {
		struct hp_analysis a;
		if (hp_analyze_progress(paths[i], analyze_flags(d), NULL, NULL,
					d->o->progress, d->o->progress_arg, &a, d->err, d->errlen))
			return -1;
		struct hp_symbols *sym = hp_symbols_for_trace(a.path, a.info.modules, a.info.nmodules,
							      d->err, d->errlen);
		int rc = sym ? 0 : -1;
		for (uint32_t f = 0; !rc && f < a.funcs.n; f++) {
			struct hp_symbol s;
			char region[HP_STRING_BYTES + 3];
			symbol_of(&a, sym, f, &s, region, sizeof(region));
			if (hp_fntab_intern(&d->fns, &s) == HP_NO_FN)
				rc = -1, snprintf(d->err, d->errlen, "out of memory");
		}
		hp_symbols_free(sym);
		hp_analysis_free(&a);
		if (rc) {
			name_trace(d, paths[i]);
			return -1;
		}
	}
	if (hp_fntab_label(&d->fns)) {
		snprintf(d->err, d->errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* Each view frees only its own per-thread data; the driver walks the threads. */
static void free_thread_data(struct hp_drive *d)
{
	for (uint32_t i = 0; i < d->nthreads; i++) {
		struct hp_vthread *t = d->threads[i];
		if (t->data && d->v->ops->thread_free)
			d->v->ops->thread_free(t->data);
		t->data = NULL;
	}
}

int hp_drive(char **paths, int npaths, const struct hp_drive_opts *o, struct hp_view *v,
	     char *err, size_t errlen)
{
	const struct hp_filter *f = &o->filter;
	struct hp_drive d = { .o = o, .v = v, .err = err, .errlen = errlen,
			      .exit_times = !(v->ops->flags & HP_VIEW_NO_TIMES),
			      .enter = v->ops->enter, .exit = v->ops->exit, .by_min = f->min_ns != 0,
			      .call_filters = call_filtering(f) };
	*err = 0;
	v->d = &d;
	int rc = v->ops->open ? v->ops->open(v, err, errlen) : 0;
	d.flat = v->flat;
	struct hp_analysis a, last = { 0 };
	int have_last = 0;
	if (!rc && !(d.seen = calloc((size_t)npaths + 1, sizeof(*d.seen)))) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc && (v->ops->flags & HP_VIEW_NAMES_FIRST))
		rc = name_all_first(&d, paths, npaths);
	for (int i = 0; i < npaths && !rc; i++) {
		d.trace = (uint32_t)i;
		rc = drive_trace(&d, paths, &a);
		forget_trace(&d);
		if (rc)
			break;
		if (have_last)
			hp_analysis_free(&last);
		last = a;
		have_last = 1;
	}
	d.a = have_last ? &last : NULL;
	if (!rc && hp_fntab_label(&d.fns)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc && !o->traces_apart && note_unrelated(&d, paths, (uint32_t)npaths)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc)
		tell(&d);
	if (!rc && v->ops->end)
		rc = v->ops->end(v, err, errlen);
	free_thread_data(&d);
	if (v->ops->close)
		v->ops->close(v);
	if (have_last)
		hp_analysis_free(&last);
	for (uint32_t i = 0; i < d.nthreads; i++)
		free(d.threads[i]);
	free(d.threads);
	for (uint32_t i = 0; i < d.nprocess; i++)
		free(d.process[i]);
	free(d.process);
	free(d.fnflags);
	hp_fntab_free(&d.fns);
	for (int i = 0; d.seen && i < npaths; i++) {
		free(d.seen[i].program);
		free(d.seen[i].keys);
	}
	free(d.seen);
	hp_rows_free(&d.notes);
	v->d = NULL;
	return rc;
}

void hp_drive_taken_out(const struct hp_drive *d, struct hp_taken_out *t)
{
	uint64_t own = 0;
	for (size_t i = 0; i < d->nts; i++)
		own += d->ts[i].own;
	*t = (struct hp_taken_out){
		.per_call_ns = (d->hook_in + d->hook_out) * d->tb.ns_per_tick,
		.calibrated_ns = (d->calib_in + d->calib_out) * d->tb.ns_per_tick,
		.own_ns = (double)own * d->tb.ns_per_tick,
		.measured_ns = d->root_span * d->tb.ns_per_tick,
		.shown_ns = d->root_dur * d->tb.ns_per_tick,
	};
}

const struct hp_fntab *hp_drive_fns(const struct hp_drive *d) { return &d->fns; }
uint32_t hp_drive_nthreads(const struct hp_drive *d) { return d->nthreads; }
struct hp_vthread *hp_drive_thread(const struct hp_drive *d, uint32_t id)
{
	return id < d->nthreads ? d->threads[id] : NULL;
}
const struct hp_analysis *hp_drive_analysis(const struct hp_drive *d) { return d->a; }
void hp_drive_warn(const struct hp_drive *d, const char *line)
{
	if (d->o->warn)
		d->o->warn(line);
}
uint64_t hp_drive_shown(const struct hp_drive *d) { return d->shown; }

double hp_drive_origin(const struct hp_drive *d)
{
	if (!d->a || !d->a->has_first_tick)
		return 0;
	double first = ns_at(d, d->a->first_tick);
	return first < 0 ? first : 0;
}

/* ---- a driver without traces, for tests ------------------------------------ */

struct hp_drive *hp_drive_bare(void)
{
	return calloc(1, sizeof(struct hp_drive));
}

uint32_t hp_drive_bare_fn(struct hp_drive *d, const char *name, const char *file, int line)
{
	struct hp_symbol s = { .name = name, .module = "test", .file = file, .line = line,
			       .offset = d->fns.rows.n };
	return hp_fntab_intern(&d->fns, &s);
}

struct hp_vthread *hp_drive_bare_thread(struct hp_drive *d, uint32_t trace, uint32_t tid)
{
	if (d->nthreads == d->threads_cap) {
		uint32_t cap = d->threads_cap ? d->threads_cap * 2 : 16;
		struct hp_vthread **t = realloc(d->threads, cap * sizeof(*t));
		if (!t)
			return NULL;
		d->threads = t;
		d->threads_cap = cap;
	}
	struct hp_vthread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->id = d->nthreads;
	t->trace = trace;
	t->pid = t->tid = tid;
	t->process = "test";
	d->threads[d->nthreads++] = t;
	return t;
}

void hp_drive_bare_free(struct hp_drive *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < d->nthreads; i++)
		free(d->threads[i]);
	free(d->threads);
	hp_fntab_free(&d->fns);
	free(d);
}
