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
 * Marks and values are comment lines at their time, indented as a call made
 * there would be: "/" "* mark: TEXT *" "/", "/" "* NAME = 42 *" "/".
 *
 * Indentation stops at INDENT_MAX levels (a recursion 100000 deep would
 * otherwise write gigabytes of spaces); deeper lines begin "(depth N) ".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_drive.h"

#define INDENT_MAX 64u

struct replay {
	double origin;           /* ns of the trace's start */
	int pending;             /* an enter waits */
	const struct hp_vthread *pt;
	struct hp_vframe pf;
	char *buf;               /* the line being made */
	size_t cap;
	char *esc;               /* a note's text, escaped */
	size_t esc_cap;
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

/* Lines are made by hand, not by printf: formatting floating point was
 * most of replay's time. */

/* Writes v's decimal digits, at least min_digits of them, ending at end;
 * returns where they begin. */
static char *digits(char *end, uint64_t v, int min_digits)
{
	char *p = end;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v || end - p < min_digits);
	return p;
}

/* s (n bytes) right-aligned in width, into buf (room for width + 1, or n + 1). */
static void right(char *buf, size_t width, const char *s, size_t n)
{
	size_t pad = n < width ? width - n : 0;
	memset(buf, ' ', pad);
	memcpy(buf + pad, s, n);
	buf[pad + n] = 0;
}

/* "12.345678901": seconds and nanoseconds. */
static void format_time(char *buf, size_t width, uint64_t ns)
{
	char tmp[48], *end = tmp + sizeof(tmp);
	char *p = digits(end, ns % 1000000000u, 9);
	*--p = '.';
	p = digits(p, ns / 1000000000u, 1);
	right(buf, width, p, (size_t)(end - p));
}

/* "870 ns", "1.234 us", "5.678 ms", "2.345 s" */
static void format_duration(char *buf, size_t width, uint64_t ns)
{
	static const char *const unit[] = { " ns", " us", " ms", " s" };
	char tmp[48], *end = tmp + 40, *p;
	uint64_t scale = 1;
	int u = 0;
	while (u < 3 && ns >= scale * 1000) {
		scale *= 1000;
		u++;
	}
	if (!u) {
		p = digits(end, ns, 1);
	} else {
		p = digits(end, ns / (scale / 1000) % 1000, 3);
		*--p = '.';
		p = digits(p, ns / scale, 1);
	}
	size_t len = strlen(unit[u]);
	memcpy(end, unit[u], len);
	right(buf, width, p, (size_t)(end - p) + len);
}

static uint64_t round_ns(double ns)
{
	return ns <= 0 ? 0 : (uint64_t)(ns + 0.5);
}

/* One line: when (ns on the views' scale), the duration (NULL: none), the
 * indentation of depth, then the parts of its text. */
static int put_line(struct hp_view *v, const struct hp_vthread *t, double when, const double *dur,
		    uint32_t depth, const char *const *text, size_t ntext)
{
	struct replay *r = v->state;
	char ts[48], d[48], tid[24], indent[2 * INDENT_MAX + 1], deep[32] = "";
	format_time(ts, 15, round_ns(when - r->origin));
	if (dur)
		format_duration(d, 11, round_ns(*dur));
	else
		right(d, 11, "", 0);
	char tmp[16], *tend = tmp + sizeof(tmp), *tp = digits(tend, t->tid, 1);
	right(tid, 8, tp, (size_t)(tend - tp));
	if (depth > INDENT_MAX)
		snprintf(deep, sizeof(deep), "(depth %u) ", depth);
	unsigned n = 2 * (depth > INDENT_MAX ? INDENT_MAX : depth);
	memset(indent, ' ', n);
	indent[n] = 0;
	const char *head[] = { ts, " ", d, " ", tid, " | ", indent, deep };
	size_t nhead = sizeof(head) / sizeof(head[0]), len[16], total = 1;
	for (size_t i = 0; i < nhead + ntext; i++)
		total += len[i] = strlen(i < nhead ? head[i] : text[i - nhead]);
	if (total > r->cap) {
		char *buf = realloc(r->buf, total);
		if (!buf)
			return -1;
		r->buf = buf;
		r->cap = total;
	}
	char *p = r->buf;
	for (size_t i = 0; i < nhead + ntext; i++)
		p = mempcpy(p, i < nhead ? head[i] : text[i - nhead], len[i]);
	*p = '\n';
	FILE *o = v->out;
	fwrite_unlocked(r->buf, 1, total, o);
	return ferror(o) ? -1 : 0;
}

/* A call's line: "name();", "name() {" or "} /" "* name *" "/". */
static int line(struct hp_view *v, const struct hp_vthread *t, const struct hp_vframe *f,
		double when, const double *dur, const char *open, const char *close)
{
	const char *text[] = { open, hp_fntab_name(hp_drive_fns(v->d), f->fn), close,
			       f->lost ? " /* exit lost */" : "" };
	return put_line(v, t, when, f->lost ? NULL : dur, f->depth, text, sizeof(text) / sizeof(text[0]));
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

/* A mark's text or a value's name as it goes in a comment: control bytes
 * escaped (a line stays one line) and no end of comment. */
static const char *in_comment(struct replay *r, const char *s)
{
	size_t need = 4 * strlen(s) + 1;
	if (need > r->esc_cap) {
		char *e = realloc(r->esc, need);
		if (!e)
			return NULL;
		r->esc = e;
		r->esc_cap = need;
	}
	char *o = r->esc;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n' || *p == '\t') {
			*o++ = '\\';
			*o++ = *p == '\n' ? 'n' : 't';
		} else if (*p < 0x20 || *p == 0x7f) {
			o += sprintf(o, "\\x%02x", *p);
		} else {
			*o++ = (char)*p;
			if (*p == '*' && p[1] == '/')
				*o++ = '\\';
		}
	}
	*o = 0;
	return r->esc;
}

/* "/" "* mark: TEXT *" "/" or "/" "* NAME = VALUE *" "/" at its time, indented as a
 * call made there would be. */
static int note_replay(struct hp_view *v, struct hp_vthread *t, const struct hp_vnote *n)
{
	struct replay *r = v->state;
	if (flush_pending(v))
		return -1;
	const char *text = in_comment(r, n->text);
	if (!text)
		return -1;
	char value[32];
	snprintf(value, sizeof(value), " = %lld */", (long long)n->value);
	const char *mark[] = { "/* mark: ", text, " */" }, *val[] = { "/* ", text, value };
	return put_line(v, t, n->at, NULL, n->depth, n->kind == HP_NOTE_MARK ? mark : val, 3);
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
	struct replay *r = v->state;
	if (r) {
		free(r->buf);
		free(r->esc);
	}
	free(v->state);
	v->state = NULL;
}

const struct hp_view_ops hp_view_replay = {
	.name = "replay",
	.summary = "every call in time order, threads merged, indented by depth, with its duration",
	.help = "  columns: TIME_S, seconds from the trace's start (of the enter; of the exit on\n"
		"  a closing line); DURATION, on a call's one line or its closing line; TID.\n"
		"  A call with no shown callee is one line \"name();\". A mark is a line\n"
		"  \"/* mark: TEXT */\", a value \"/* NAME = V */\", at their time and depth.\n"
		"  Several traces: one after the other.\n",
	.flags = HP_VIEW_TIME_ORDER | HP_VIEW_NAMES_FIRST,
	.open = open_replay,
	.trace = trace_replay,
	.enter = enter_replay,
	.exit = exit_replay,
	.note = note_replay,
	.end = end_replay,
	.close = close_replay,
};
