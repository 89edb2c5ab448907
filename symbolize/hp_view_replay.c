/*
 * hp_view_replay.c - `hookprof replay`: every shown call in time order,
 * indented by depth like C source. A call with no shown callee is one line
 * "name();" with its duration; the others open with "name() {" and close
 * with "} /" "* name *" "/", the duration on the closing line. Columns: the
 * time from the trace's start in seconds (of the enter; of the exit on a
 * closing line), the duration, the thread id.
 *
 * Whether a call is a leaf is known at its thread's next shown event. The
 * enter waits as the one pending line until the next line of any thread is
 * due: if that is its own exit, the call is a leaf; if anything else, the
 * enter goes out as "name() {" first, so lines stay in time order. The
 * driver hands a leaf's exit right after its enter, so a leaf is always
 * one line. Nothing but that line is held: output streams.
 *
 * Indentation stops at INDENT_MAX levels (a recursion 100000 deep would
 * otherwise write gigabytes of spaces); deeper lines begin "(depth N) ".
 */
#include <stdio.h>
#include <stdlib.h>

#include "hp_drive.h"

#define INDENT_MAX 64u

struct replay {
	double origin;           /* ns of the trace's start */
	int pending;             /* an enter waits */
	const struct hp_vthread *pt;
	struct hp_vframe pf;
};

static int open_replay(struct hp_view *v, char *err, size_t errlen)
{
	struct replay *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v->state = r;
	fprintf(v->out, "#        TIME_S    DURATION      TID | FUNCTION\n");
	return 0;
}

static void format_duration(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.3f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
}

/* One line: when (ns on the views' scale), the duration (NULL: none). */
static int line(struct hp_view *v, const struct hp_vthread *t, const struct hp_vframe *f,
		double when, const double *dur, const char *open, const char *close)
{
	struct replay *r = v->state;
	char d[32] = "";
	if (dur && !f->lost)
		format_duration(d, sizeof(d), *dur);
	double s = (when - r->origin) / 1e9;
	const char *name = hp_fntab_name(hp_drive_fns(v->d), f->fn);
	char deep[32] = "";
	if (f->depth > INDENT_MAX)
		snprintf(deep, sizeof(deep), "(depth %u) ", f->depth);
	unsigned indent = f->depth > INDENT_MAX ? INDENT_MAX : f->depth;
	fprintf(v->out, "%15.9f %11s %8u | %*s%s%s%s%s%s\n", s < 0 ? 0 : s, d, t->tid,
		(int)(2 * indent), "", deep, open, name, close, f->lost ? " /* exit lost */" : "");
	return ferror(v->out) ? -1 : 0;
}

static int flush_pending(struct hp_view *v)
{
	struct replay *r = v->state;
	if (!r->pending)
		return 0;
	r->pending = 0;
	return line(v, r->pt, &r->pf, r->pf.start, NULL, "", "() {");
}

static int trace_replay(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen)
{
	(void)a;
	struct replay *r = v->state;
	if (flush_pending(v)) {
		snprintf(err, errlen, "the output could not be written");
		return -1;
	}
	r->origin = hp_drive_origin(v->d);
	return 0;
}

static int enter_replay(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct replay *r = v->state;
	if (flush_pending(v))
		return -1;
	r->pending = 1;
	r->pt = t;
	r->pf = *f;
	return 0;
}

static int exit_replay(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct replay *r = v->state;
	if (r->pending && r->pt == t && r->pf.depth == f->depth) {
		r->pending = 0;
		return line(v, t, f, f->start, &f->dur, "", "();");
	}
	if (flush_pending(v))
		return -1;
	return line(v, t, f, f->end, &f->dur, "} /* ", " */");
}

static int end_replay(struct hp_view *v, char *err, size_t errlen)
{
	if (flush_pending(v) || fflush(v->out)) {
		snprintf(err, errlen, "the output could not be written");
		return -1;
	}
	return 0;
}

static void close_replay(struct hp_view *v)
{
	free(v->state);
	v->state = NULL;
}

const struct hp_view_ops hp_view_replay = {
	.name = "replay",
	.summary = "every call in time order, threads merged, indented by depth, with its duration",
	.help = "  columns: TIME_S, seconds from the trace's start (of the enter; of the exit on\n"
		"  a closing line); DURATION, on a call's one line or its closing line; TID.\n"
		"  A call with no shown callee is one line \"name();\". Several traces: one after\n"
		"  the other.\n",
	.flags = HP_VIEW_TIME_ORDER,
	.open = open_replay,
	.trace = trace_replay,
	.enter = enter_replay,
	.exit = exit_replay,
	.end = end_replay,
	.close = close_replay,
};
