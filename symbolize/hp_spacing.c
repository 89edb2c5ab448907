/*
 * hp_spacing.c - a hook pair's cost in the run, from its events' spacing
 * (hp_spacing.h).
 */
#include "hp_spacing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_analyze.h"

/* Spacings of one function: as a leaf, or as the caller between two calls. */
struct acc {
	uint64_t sum, n; /* of the short ones */
	uint64_t all;
};

struct frame {
	uint32_t func;
	uint8_t kids, tainted;
	uint64_t tick;
};

struct stream {
	struct frame *f;
	size_t depth, cap;
	int after_exit;       /* the last event was a hooked function's exit */
	uint64_t exit_tick;
};

struct hp_spacing {
	struct acc *leaf, *gap; /* by function id */
	size_t nfn;
	struct stream *st;
	size_t nst;
	uint64_t events;
};

struct hp_spacing *hp_spacing_new(void) { return calloc(1, sizeof(struct hp_spacing)); }

void hp_spacing_free(struct hp_spacing *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nst; i++)
		free(s->st[i].f);
	free(s->st);
	free(s->leaf);
	free(s->gap);
	free(s);
}

static int grow(void **p, size_t *n, size_t want, size_t size)
{
	if (want <= *n)
		return 0;
	size_t m = want + want / 2 + 16;
	char *q = realloc(*p, m * size);
	if (!q)
		return -1;
	memset(q + *n * size, 0, (m - *n) * size);
	*p = q;
	*n = m;
	return 0;
}

static int room_for_function(struct hp_spacing *s, uint32_t func)
{
	size_t n = s->nfn;
	if (grow((void **)&s->leaf, &n, (size_t)func + 1, sizeof(*s->leaf)))
		return -1;
	n = s->nfn;
	if (grow((void **)&s->gap, &n, (size_t)func + 1, sizeof(*s->gap)))
		return -1;
	s->nfn = n;
	return 0;
}

/* A spacing of func's (s->leaf or s->gap: which) of ticks. 0, or -1 out
 * of memory. */
static inline int add(struct hp_spacing *s, struct acc *const *which, uint32_t func,
		      uint64_t ticks)
{
	if (func >= s->nfn && room_for_function(s, func))
		return -1;
	struct acc *a = &(*which)[func];
	a->all++;
	if (ticks < HP_SPACING_LONG_TICKS) {
		a->sum += ticks;
		a->n++;
	}
	return 0;
}

/* The state of a stream, in locals while a piece is fed: stores to the
 * frames and the accounts could alias its fields, which then would be
 * read again at every event. */
struct feeding {
	struct frame *f;
	size_t depth;
	int after_exit;
	uint64_t exit_tick;
};

/* The gap of up's from its last callee's exit to e, the enter of its
 * next, when both are calls and nothing came between. */
static inline int count_gap(struct hp_spacing *s, const struct feeding *l, const struct frame *up,
			    const struct hp_ev *e)
{
	if (!l->after_exit || !up || hp_is_region_func(up->func) || hp_is_region_func(e->func))
		return 0;
	return add(s, &s->gap, up->func, e->tick - l->exit_tick);
}

static int enter(struct hp_spacing *s, struct stream *t, struct feeding *l, const struct hp_ev *e)
{
	if (l->depth == t->cap) {
		if (grow((void **)&t->f, &t->cap, l->depth + 1, sizeof(*t->f)))
			return -1;
		l->f = t->f;
	}
	if (count_gap(s, l, l->depth ? &l->f[l->depth - 1] : NULL, e))
		return -1;
	l->f[l->depth++] = (struct frame){ .func = e->func, .tick = e->tick };
	l->after_exit = 0;
	return 0;
}

static int leave(struct hp_spacing *s, struct feeding *l, const struct hp_ev *e)
{
	l->after_exit = 0;
	if (!l->depth) /* entered before tracing began */
		return 0;
	const struct frame *fr = &l->f[--l->depth];
	if (l->depth)
		l->f[l->depth - 1].kids = 1;
	if (hp_is_region_func(fr->func))
		return 0;
	if (!fr->kids && !fr->tainted && add(s, &s->leaf, fr->func, e->tick - fr->tick))
		return -1;
	l->after_exit = 1;
	l->exit_tick = e->tick;
	return 0;
}

/* An enter e and its exit x right after it: enter and leave in one, no
 * frame stored. */
static int leaf(struct hp_spacing *s, struct feeding *l, const struct hp_ev *e,
		const struct hp_ev *x)
{
	struct frame *up = l->depth ? &l->f[l->depth - 1] : NULL;
	int region = hp_is_region_func(e->func);
	if (count_gap(s, l, up, e))
		return -1;
	if (up)
		up->kids = 1;
	l->after_exit = !region;
	l->exit_tick = x->tick;
	return region ? 0 : add(s, &s->leaf, e->func, x->tick - e->tick);
}

/* Anything else between two hook events (own time, a pause, a mark) is not
 * the hooks' spacing. */
static void interrupt(struct feeding *l, const struct hp_ev *e)
{
	l->after_exit = 0;
	if (e->kind == HP_EV_RESET)
		l->depth = 0;
	else if (l->depth)
		l->f[l->depth - 1].tainted = 1;
}

int hp_spacing_feed(struct hp_spacing *s, uint32_t stream, const struct hp_ev *ev, size_t n)
{
	size_t nst = s->nst;
	if (grow((void **)&s->st, &nst, (size_t)stream + 1, sizeof(*s->st)))
		return -1;
	s->nst = nst;
	struct stream *t = &s->st[stream];
	struct feeding l = { t->f, t->depth, t->after_exit, t->exit_tick };
	int rc = 0;
	const struct hp_ev *end = ev + n, *last = n ? end - 1 : ev;
	for (const struct hp_ev *e = ev; e < end && !rc; e++) {
		if (e->kind == HP_EV_ENTER && e < last && e[1].kind == HP_EV_EXIT)
			rc = leaf(s, &l, e, e + 1), e++;
		else if (e->kind == HP_EV_ENTER)
			rc = enter(s, t, &l, e);
		else if (e->kind == HP_EV_EXIT)
			rc = leave(s, &l, e);
		else
			interrupt(&l, e);
	}
	t->depth = l.depth;
	t->after_exit = l.after_exit;
	t->exit_tick = l.exit_tick;
	if (rc)
		return -1;
	s->events += n;
	return 0;
}

/* The mean spacing of the functions whose own mean is below limit (with
 * enough samples, nearly all short), weighted by their samples: the calls
 * that are all hook, or nearly. */
static int short_mean(const struct acc *a, size_t n, double limit, double *mean, uint64_t *samples)
{
	uint64_t sum = 0, cnt = 0;
	for (size_t i = 0; i < n; i++) {
		if (a[i].n < HP_SPACING_MIN_SAMPLES || a[i].n * 10 < a[i].all * 9 ||
		    (double)a[i].sum >= limit * (double)a[i].n)
			continue;
		sum += a[i].sum;
		cnt += a[i].n;
	}
	if (!cnt)
		return 0;
	*mean = (double)sum / (double)cnt;
	*samples = cnt;
	return 1;
}

void hp_spacing_result(const struct hp_spacing *s, double in_limit, double out_limit,
		       struct hp_spacing_cost *c)
{
	*c = (struct hp_spacing_cost){ .events = s->events };
	c->has_inside = short_mean(s->leaf, s->nfn, in_limit, &c->inside, &c->inside_calls);
	c->has_outside = short_mean(s->gap, s->nfn, out_limit, &c->outside, &c->outside_gaps);
}

static int on_events(void *arg, const struct hp_analysis *a, uint32_t stream,
		     const struct hp_ev *ev, size_t n)
{
	(void)a;
	struct hp_spacing *s = arg;
	if (hp_spacing_feed(s, stream, ev, n))
		return -1;
	return s->events >= HP_SPACING_EVENTS ? HP_ANALYZE_ENOUGH : 0;
}

int hp_spacing_measure(const char *path, double in_limit, double out_limit,
		       struct hp_spacing_cost *c, char *err, size_t errlen)
{
	struct hp_spacing *s = hp_spacing_new();
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct hp_analysis a;
	int flags = HP_ANALYZE_PREFIX | HP_ANALYZE_EVENTS_ONLY | HP_ANALYZE_ALLOW_PARTIAL;
	int rc = hp_analyze(path, flags, on_events, s, &a, err, errlen);
	if (!rc) {
		hp_spacing_result(s, in_limit, out_limit, c);
		hp_analysis_free(&a);
	}
	hp_spacing_free(s);
	return rc;
}

void hp_spacing_cap(const struct hp_spacing_cost *c, double *in, double *out)
{
	if (c->has_inside && c->inside < *in)
		*in = c->inside;
	if (c->has_outside && c->outside < *out)
		*out = c->outside;
}
