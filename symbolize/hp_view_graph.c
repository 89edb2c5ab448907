/*
 * hp_view_graph.c - `hookprof graph`: gprof's call-graph entries, made
 * readable. For each function: the functions that called it (<-), its own
 * line (calls, total, self, as in the report), and the functions it called
 * (->), each with the calls and the time along that caller->callee edge.
 * The callers of a thread's outermost shown frames are "<root>".
 *
 * An edge F->G counts every call of G made directly by F (calls), the self
 * time of those calls (self), and as its total the time of those calls that
 * are not nested in another call of G made by F in the same thread: the
 * outermost activation per edge, so that recursion is never counted twice
 * along one edge. In a recursion F->G->F->G the inner F->G call lies within
 * the outer one and adds no time; G->G (direct recursion) has as its total
 * the time of the outermost G that G called. Without recursion an edge's
 * total is simply the time of G's calls from F, and the totals of G's
 * callers add up to G's total; with recursion they add up to more (its
 * recursive edge comes on top).
 *
 * Memory grows with functions, edges, threads and depth, never with calls.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "hp_drive.h"
#include "hp_opencount.h"

#define ROOT_FN HP_NO_FN /* the caller of a thread's outermost shown frames */
#define ROOT_NAME "<root>"

struct edge {
	uint32_t caller, callee;
	uint64_t calls;
	double total, self;
};

struct fstat {
	uint64_t calls;
	double total, self, max;
};

/* The edge to the callee found last, from a frame or a thread's root: a
 * loop calls the same callee again and again, so no hash then. */
struct hot {
	uint32_t fn, edge;
};

struct gframe {
	uint32_t fn, edge;
	struct hot hot;
	uint8_t outer;          /* no call along its edge is open below it */
};

/* A thread's shown frames, and its open calls per edge. */
struct gthread {
	struct gframe *f;
	size_t depth, cap;
	struct hot root_hot;
	struct hp_opencount open;
};

struct graph {
	struct edge *e;
	uint32_t ne, ecap;
	uint32_t *slot;         /* hash of (caller, callee): edge + 1, 0 empty */
	size_t slot_cap;
	struct fstat *fs;       /* by fn */
	size_t nfs;
	/* At the end: the edges of each fn as callee (in) and caller (out),
	 * index nfn for the root, heaviest first. */
	uint32_t nfn;
	uint32_t *in, *in_at, *out, *out_at;
	const struct hp_fntab *fns;
	FILE *outf;
	int csv;
};

/* ---- counting --------------------------------------------------------------- */

static size_t hash_edge(uint32_t caller, uint32_t callee)
{
	uint64_t h = (uint64_t)caller << 32 | callee;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (size_t)h;
}

static int rehash(struct graph *g)
{
	size_t cap = g->slot_cap ? g->slot_cap * 2 : 1024;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (uint32_t i = 0; i < g->ne; i++) {
		size_t s = hash_edge(g->e[i].caller, g->e[i].callee) & (cap - 1);
		while (slot[s])
			s = (s + 1) & (cap - 1);
		slot[s] = i + 1;
	}
	free(g->slot);
	g->slot = slot;
	g->slot_cap = cap;
	return 0;
}

static uint32_t edge_of(struct graph *g, uint32_t caller, uint32_t callee)
{
	if ((size_t)(g->ne + 1) * 2 > g->slot_cap && rehash(g))
		return UINT32_MAX;
	size_t mask = g->slot_cap - 1, s = hash_edge(caller, callee) & mask;
	for (; g->slot[s]; s = (s + 1) & mask) {
		const struct edge *e = &g->e[g->slot[s] - 1];
		if (e->caller == caller && e->callee == callee)
			return g->slot[s] - 1;
	}
	if (g->ne == g->ecap) {
		uint32_t cap = g->ecap ? g->ecap * 2 : 256;
		struct edge *e = realloc(g->e, cap * sizeof(*e));
		if (!e)
			return UINT32_MAX;
		g->e = e;
		g->ecap = cap;
	}
	g->e[g->ne] = (struct edge){ .caller = caller, .callee = callee };
	g->slot[s] = g->ne + 1;
	return g->ne++;
}

static struct fstat *fstat_of(struct graph *g, uint32_t fn)
{
	if (fn >= g->nfs) {
		size_t n = g->nfs ? g->nfs : 256;
		while (n <= fn)
			n *= 2;
		struct fstat *f = realloc(g->fs, n * sizeof(*f));
		if (!f)
			return NULL;
		memset(f + g->nfs, 0, (n - g->nfs) * sizeof(*f));
		g->fs = f;
		g->nfs = n;
	}
	return &g->fs[fn];
}

static int open_graph(struct hp_view *v, char *err, size_t errlen)
{
	struct graph *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	g->csv = !strcmp(v->opts->format, "csv");
	v->state = g;
	return 0;
}

static int enter_graph(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct graph *g = v->state;
	struct gthread *th = t->data;
	if (!th) {
		if (!(th = t->data = calloc(1, sizeof(*th))))
			return -1;
		th->root_hot.edge = UINT32_MAX;
	}
	if (!fstat_of(g, f->fn))
		return -1;
	if (th->depth == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 64;
		struct gframe *n = realloc(th->f, cap * sizeof(*n));
		if (!n)
			return -1;
		th->f = n;
		th->cap = cap;
	}
	uint32_t caller = th->depth ? th->f[th->depth - 1].fn : ROOT_FN;
	struct hot *hot = th->depth ? &th->f[th->depth - 1].hot : &th->root_hot;
	uint32_t e = hot->fn == f->fn && hot->edge != UINT32_MAX ? hot->edge : edge_of(g, caller, f->fn);
	if (e == UINT32_MAX)
		return -1;
	*hot = (struct hot){ f->fn, e };
	int64_t open = hp_opencount_add(&th->open, e);
	if (open < 0)
		return -1;
	th->f[th->depth++] = (struct gframe){ .fn = f->fn, .edge = e, .hot = { 0, UINT32_MAX },
					      .outer = open == 0 };
	return 0;
}

static int exit_graph(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct graph *g = v->state;
	struct gthread *th = t->data;
	if (!th || !th->depth)
		return -1;
	const struct gframe *fr = &th->f[--th->depth];
	hp_opencount_sub(&th->open, fr->edge);
	if (f->lost) /* not a call to count */
		return 0;
	struct edge *e = &g->e[fr->edge];
	e->calls++;
	e->self += f->self;
	if (fr->outer)
		e->total += f->dur;
	struct fstat *s = &g->fs[f->fn];
	s->calls++;
	s->self += f->self;
	if (f->outermost)
		s->total += f->dur;
	if (f->dur > s->max)
		s->max = f->dur;
	return 0;
}

/* ---- order ------------------------------------------------------------------ */

static const char *name_of(const struct graph *g, uint32_t fn)
{
	return fn == ROOT_FN ? ROOT_NAME : hp_fntab_name(g->fns, fn);
}

static int by_weight(double x, double y)
{
	return x > y ? -1 : x < y;
}

/* Edges heaviest first, then by caller and callee name. */
static int edge_cmp(const void *a, const void *b, void *arg)
{
	const struct graph *g = arg;
	const struct edge *x = &g->e[*(const uint32_t *)a], *y = &g->e[*(const uint32_t *)b];
	int c = by_weight(x->total, y->total);
	if (!c)
		c = strcmp(name_of(g, x->caller), name_of(g, y->caller));
	if (!c)
		c = strcmp(name_of(g, x->callee), name_of(g, y->callee));
	return c;
}

struct fn_order {
	const struct graph *g;
	int key;
};

static double fn_weight(const struct fstat *s, int key)
{
	switch (key) {
	case HP_SORT_SELF: return s->self;
	case HP_SORT_CALLS: return (double)s->calls;
	case HP_SORT_AVG: return s->calls ? s->total / (double)s->calls : 0;
	case HP_SORT_MAX: return s->max;
	default: return s->total;
	}
}

static int fn_cmp(const void *a, const void *b, void *arg)
{
	const struct fn_order *o = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = o->key == HP_SORT_NAME ? 0
				       : by_weight(fn_weight(&o->g->fs[x], o->key),
						   fn_weight(&o->g->fs[y], o->key));
	return c ? c : strcmp(name_of(o->g, x), name_of(o->g, y));
}

/* The edges grouped by one end (callee or caller), heaviest first within a
 * group: a counting sort of the edges, already in order, into ids/at. */
static int group_edges(struct graph *g, const uint32_t *sorted, int by_callee, uint32_t **ids,
		       uint32_t **at)
{
	*ids = malloc(((size_t)g->ne + 1) * sizeof(**ids));
	*at = calloc((size_t)g->nfn + 2, sizeof(**at));
	if (!*ids || !*at)
		return -1;
	for (uint32_t i = 0; i < g->ne; i++) {
		uint32_t fn = by_callee ? g->e[i].callee : g->e[i].caller;
		(*at)[(fn == ROOT_FN ? g->nfn : fn) + 1]++;
	}
	for (uint32_t k = 0; k <= g->nfn; k++)
		(*at)[k + 1] += (*at)[k];
	uint32_t *fill = malloc(((size_t)g->nfn + 1) * sizeof(*fill));
	if (!fill)
		return -1;
	memcpy(fill, *at, ((size_t)g->nfn + 1) * sizeof(*fill));
	for (uint32_t i = 0; i < g->ne; i++) {
		const struct edge *e = &g->e[sorted[i]];
		uint32_t fn = by_callee ? e->callee : e->caller;
		(*ids)[fill[fn == ROOT_FN ? g->nfn : fn]++] = sorted[i];
	}
	free(fill);
	return 0;
}

/* ---- writing ---------------------------------------------------------------- */

static unsigned long long ns_int(double ns)
{
	return ns > 0 ? (unsigned long long)(ns + 0.5) : 0;
}

static void row(FILE *out, uint64_t calls, double total, double self, const char *mark,
		const char *name)
{
	char t[2][32];
	hp_format_ns(total, t[0], sizeof(t[0]));
	hp_format_ns(self, t[1], sizeof(t[1]));
	fprintf(out, "%12llu %12s %12s  %s%s\n", (unsigned long long)calls, t[0], t[1], mark, name);
}

static void entry(struct graph *g, uint32_t fn)
{
	const struct fstat *s = &g->fs[fn];
	fputc('\n', g->outf);
	for (uint32_t k = g->in_at[fn]; k < g->in_at[fn + 1]; k++) {
		const struct edge *e = &g->e[g->in[k]];
		row(g->outf, e->calls, e->total, e->self, "    <- ", name_of(g, e->caller));
	}
	row(g->outf, s->calls, s->total, s->self, "", name_of(g, fn));
	for (uint32_t k = g->out_at[fn]; k < g->out_at[fn + 1]; k++) {
		const struct edge *e = &g->e[g->out[k]];
		row(g->outf, e->calls, e->total, e->self, "    -> ", name_of(g, e->callee));
	}
}

static void csv_edge(struct graph *g, const struct edge *e)
{
	hp_csv_field(g->outf, name_of(g, e->caller));
	fputc(',', g->outf);
	hp_csv_field(g->outf, name_of(g, e->callee));
	fprintf(g->outf, ",%llu,%llu,%llu\r\n", (unsigned long long)e->calls, ns_int(e->total),
		ns_int(e->self));
}

/* The fns the user named (by the name report prints), or every function
 * called; -1 with the reason in err for a name no call has. */
static int chosen(struct graph *g, const struct hp_view_opts *o, uint32_t *fn, uint32_t *n,
		  char *err, size_t errlen)
{
	*n = 0;
	if (!o->nargs) {
		for (uint32_t f = 0; f < g->nfn; f++)
			if (g->fs[f].calls || g->in_at[f] < g->in_at[f + 1])
				fn[(*n)++] = f;
		return 0;
	}
	for (int i = 0; i < o->nargs; i++) {
		uint32_t f = 0;
		while (f < g->nfn && strcmp(hp_fntab_name(g->fns, f), o->args[i]))
			f++;
		if (f == g->nfn || (!g->fs[f].calls && g->in_at[f] == g->in_at[f + 1])) {
			snprintf(err, errlen,
				 "graph: '%s' is no file, and no function of that name has a shown call (names as report prints them)",
				 o->args[i]);
			return -1;
		}
		fn[(*n)++] = f;
	}
	return 0;
}

static int is_chosen(const uint8_t *want, uint32_t fn, uint32_t nfn)
{
	return fn != ROOT_FN && fn < nfn && want[fn];
}

static int write_csv(struct graph *g, const uint32_t *sorted, const uint32_t *fn, uint32_t n,
		     const struct hp_view_opts *o)
{
	uint8_t *want = calloc((size_t)g->nfn + 1, 1);
	if (!want)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		want[fn[i]] = 1;
	fputs("caller,callee,calls,total_ns,self_ns\r\n", g->outf);
	unsigned long rows = 0;
	for (uint32_t i = 0; i < g->ne && (!o->limit || rows < o->limit); i++) {
		const struct edge *e = &g->e[sorted[i]];
		if (o->nargs && !is_chosen(want, e->caller, g->nfn) &&
		    !is_chosen(want, e->callee, g->nfn))
			continue;
		csv_edge(g, e);
		rows++;
	}
	free(want);
	return 0;
}

static int write_graph(struct graph *g, const struct hp_view_opts *o, char *err, size_t errlen)
{
	uint32_t *sorted = malloc(((size_t)g->ne + 1) * sizeof(*sorted));
	uint32_t *fn = malloc(((size_t)g->nfn + 1) * sizeof(*fn)), n;
	int rc = -1;
	if (!sorted || !fn)
		goto oom;
	for (uint32_t i = 0; i < g->ne; i++)
		sorted[i] = i;
	qsort_r(sorted, g->ne, sizeof(*sorted), edge_cmp, g);
	if (group_edges(g, sorted, 1, &g->in, &g->in_at) ||
	    group_edges(g, sorted, 0, &g->out, &g->out_at))
		goto oom;
	if (chosen(g, o, fn, &n, err, errlen))
		goto done;
	if (g->csv) {
		if (write_csv(g, sorted, fn, n, o))
			goto oom;
	} else {
		struct fn_order order = { g, o->sort < 0 ? HP_SORT_TOTAL : o->sort };
		if (!o->nargs)
			qsort_r(fn, n, sizeof(*fn), fn_cmp, &order);
		fprintf(g->outf, "%12s %12s %12s  %s\n", "calls", "total", "self",
			"function (<- its callers, -> its callees: calls and time along each edge)");
		for (uint32_t i = 0; i < n && (!o->limit || i < o->limit); i++)
			entry(g, fn[i]);
	}
	rc = 0;
	goto done;
oom:
	snprintf(err, errlen, "out of memory");
done:
	free(sorted);
	free(fn);
	return rc;
}

static int end_graph(struct hp_view *v, char *err, size_t errlen)
{
	struct graph *g = v->state;
	g->fns = hp_drive_fns(v->d);
	g->nfn = (uint32_t)g->fns->rows.n;
	g->outf = v->out;
	/* Every function named has its counters, called or not. */
	if (g->nfn && !fstat_of(g, g->nfn - 1)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (write_graph(g, v->opts, err, errlen))
		return -1;
	if (ferror(v->out)) {
		snprintf(err, errlen, "the output could not be written");
		return -1;
	}
	return 0;
}

static void free_gthread(void *data)
{
	struct gthread *th = data;
	free(th->f);
	hp_opencount_free(&th->open);
	free(th);
}

static void close_graph(struct hp_view *v)
{
	struct graph *g = v->state;
	if (g) {
		free(g->e);
		free(g->slot);
		free(g->fs);
		free(g->in);
		free(g->in_at);
		free(g->out);
		free(g->out_at);
	}
	free(g);
	v->state = NULL;
}

const struct hp_view_ops hp_view_graph = {
	.name = "graph",
	.summary = "the call graph: each function's callers and callees, calls and time per edge",
	.help = "  for each function (or each FUNC, by the name report prints) its callers (<-),\n"
		"  its own calls, total and self, and its callees (->), with the calls and time\n"
		"  along each edge; <root> calls a thread's first frames\n"
		"  --sort=KEY            order of the functions: total (default), self, calls,\n"
		"                        avg, max (largest first) or name\n"
		"  --limit=N             only the first N functions (csv: N edges)\n"
		"  time along an edge F->G: of G's calls from F, those not within another\n"
		"  call of G from F (recursion is not counted twice along an edge)\n"
		"  csv columns: caller,callee,calls,total_ns,self_ns; one row per edge\n",
	.formats = "table|csv",
	.operands = "[FUNC...] [TRACE|DIR...]",
	.open = open_graph,
	.enter = enter_graph,
	.exit = exit_graph,
	.end = end_graph,
	.thread_free = free_gthread,
	.close = close_graph,
};
