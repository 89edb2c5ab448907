/*
 * hp_view_callgrind.c - the callgrind profile format (Valgrind's "Callgrind
 * Format Specification", version 1), for KCachegrind, QCachegrind and
 * callgrind_annotate.
 *
 * Two events: ns, the time, and calls, the number of calls of the function
 * (so that callgrind_annotate's table shows them beside the time). Per
 * function one cost line of its self time and calls, at its source line
 * (0 unknown) in its file (fl=, ??? unknown) of its module (ob=); then per
 * function it calls a cfn=/calls=N line and the inclusive time of those
 * calls. Names, files and modules are compressed: "(id) name" the first
 * time, "(id)" after.
 *
 * The inclusive time of a caller->callee edge counts the callee's
 * outermost activations only (those with no activation of the callee
 * below them), as `report` counts totals: a recursive fib->fib edge costs
 * 0. callgrind_annotate and KCachegrind take a called function's
 * inclusive time as the sum of the edges into it: that is then its total
 * exactly, for direct and mutual recursion alike, no time counted twice.
 * A call with no shown caller (a thread's first frame) has no calls=
 * line; its calls are in the calls event.
 *
 * Memory grows with functions, caller->callee pairs and depth.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hp_drive.h"

struct edge {
	uint32_t caller, callee;
	uint64_t calls;
	double incl;
};

struct cgfn {
	uint64_t calls;
	double self;
};

/* The functions of a thread's open shown frames: the caller of each. */
struct cgthread {
	uint32_t *fn;
	size_t depth, cap;
};

struct callgrind {
	struct cgfn *fn;
	size_t nfn;
	struct edge *edge;
	uint32_t nedge, edge_cap;
	uint32_t *slot;     /* hash of (caller, callee): edge + 1, 0 empty */
	size_t slot_cap;
};

/* Grows a per-function array to cover id, the new entries set to fill bytes. */
static int cover(void **p, size_t *n, uint32_t id, size_t size, int fill)
{
	if (id < *n)
		return 0;
	size_t cap = *n;
	if (hp_view_grow(p, &cap, (size_t)id + 1, size))
		return -1;
	memset((char *)*p + *n * size, fill, (cap - *n) * size);
	*n = cap;
	return 0;
}

static size_t hash_pair(uint32_t a, uint32_t b)
{
	return (size_t)((((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull) >> 17);
}

static int rehash(struct callgrind *c)
{
	size_t cap = c->slot_cap ? c->slot_cap * 2 : 256;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (uint32_t i = 0; i < c->nedge; i++) {
		size_t s = hash_pair(c->edge[i].caller, c->edge[i].callee) & (cap - 1);
		while (slot[s])
			s = (s + 1) & (cap - 1);
		slot[s] = i + 1;
	}
	free(c->slot);
	c->slot = slot;
	c->slot_cap = cap;
	return 0;
}

static struct edge *edge_of(struct callgrind *c, uint32_t caller, uint32_t callee)
{
	if ((size_t)(c->nedge + 1) * 2 > c->slot_cap && rehash(c))
		return NULL;
	size_t mask = c->slot_cap - 1, s = hash_pair(caller, callee) & mask;
	for (; c->slot[s]; s = (s + 1) & mask) {
		struct edge *e = &c->edge[c->slot[s] - 1];
		if (e->caller == caller && e->callee == callee)
			return e;
	}
	size_t cap = c->edge_cap;
	if (hp_view_grow((void **)&c->edge, &cap, (size_t)c->nedge + 1, sizeof(*c->edge)))
		return NULL;
	c->edge_cap = (uint32_t)cap;
	struct edge *e = &c->edge[c->nedge++];
	*e = (struct edge){ .caller = caller, .callee = callee };
	c->slot[s] = c->nedge;
	return e;
}

static int open_callgrind(struct hp_view *v, char *err, size_t errlen)
{
	v->state = calloc(1, sizeof(struct callgrind));
	if (!v->state) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int enter_callgrind(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	(void)v;
	struct cgthread *th = t->data;
	if (!th && !(th = t->data = calloc(1, sizeof(*th))))
		return -1;
	if (hp_view_grow((void **)&th->fn, &th->cap, th->depth + 1, sizeof(*th->fn)))
		return -1;
	th->fn[th->depth++] = f->fn;
	return 0;
}

static int exit_callgrind(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct callgrind *c = v->state;
	struct cgthread *th = t->data;
	if (!th || !th->depth)
		return -1;
	size_t at = --th->depth;
	if (f->lost) /* not a call */
		return 0;
	if (cover((void **)&c->fn, &c->nfn, f->fn, sizeof(*c->fn), 0))
		return -1;
	c->fn[f->fn].calls++;
	c->fn[f->fn].self += f->self;
	if (!at)
		return 0;
	struct edge *e = edge_of(c, th->fn[at - 1], f->fn);
	if (!e)
		return -1;
	e->calls++;
	if (f->outermost) /* an inner one's time is in the outermost's */
		e->incl += f->dur;
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

/* The ids of names, files and modules already written: callgrind's name
 * compression. One space per kind (fn/cfn, fl/cfi, ob/cob). */
struct names {
	const char **name;
	size_t n, cap;
};

static unsigned long long ns_int(double ns) { return ns > 0 ? (unsigned long long)llround(ns) : 0; }

/* "key=(id) name": a name is one line, a newline in it (none in C or
 * C++) would end it. */
static int put_first(FILE *out, const char *key, size_t id, const char *name)
{
	fprintf(out, "%s=(%zu) ", key, id);
	for (; *name; name++)
		fputc(*name == '\n' ? ' ' : *name, out);
	return fputc('\n', out) == EOF ? -1 : 0;
}

/* Writes "key=(id)" or, at its first use, "key=(id) name". Files and
 * modules are few: a linear search. */
static int put_name(FILE *out, struct names *nm, const char *key, const char *name)
{
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->name[i], name))
			return fprintf(out, "%s=(%zu)\n", key, i + 1) < 0 ? -1 : 0;
	if (hp_view_grow((void **)&nm->name, &nm->cap, nm->n + 1, sizeof(*nm->name)))
		return -1;
	nm->name[nm->n++] = name;
	return put_first(out, key, nm->n, name);
}

struct writer {
	FILE *out;
	const struct hp_fntab *fns;
	struct names fl, ob;
	uint8_t *named;    /* per function: its name written; its id is its fntab id + 1 */
};

static int put_fn(struct writer *w, const char *key, uint32_t id)
{
	if (w->named[id])
		return fprintf(w->out, "%s=(%u)\n", key, id + 1) < 0 ? -1 : 0;
	w->named[id] = 1;
	return put_first(w->out, key, (size_t)id + 1, hp_fntab_name(w->fns, id));
}

static const char *file_of(const struct hp_row *r) { return r->file ? r->file : "???"; }
static const char *module_of(const struct hp_row *r) { return r->module ? r->module : "???"; }

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	return x->callee < y->callee ? -1 : x->callee > y->callee;
}

static int write_function(struct writer *w, uint32_t id, const struct cgfn *cf)
{
	const struct hp_row *r = hp_fntab_get(w->fns, id);
	if (put_name(w->out, &w->ob, "ob", module_of(r)) || put_name(w->out, &w->fl, "fl", file_of(r)) ||
	    put_fn(w, "fn", id))
		return -1;
	fprintf(w->out, "%d %llu %llu\n", r->line, ns_int(cf->self), (unsigned long long)cf->calls);
	return ferror(w->out) ? -1 : 0;
}

static int write_call(struct writer *w, const struct edge *e)
{
	const struct hp_row *from = hp_fntab_get(w->fns, e->caller);
	const struct hp_row *to = hp_fntab_get(w->fns, e->callee);
	if (put_name(w->out, &w->ob, "cob", module_of(to)) || put_name(w->out, &w->fl, "cfi", file_of(to)) ||
	    put_fn(w, "cfn", e->callee))
		return -1;
	fprintf(w->out, "calls=%llu %d\n%d %llu\n", (unsigned long long)e->calls, to->line, from->line,
		ns_int(e->incl));
	return ferror(w->out) ? -1 : 0;
}

static int write_header(struct hp_view *v, const struct callgrind *c)
{
	double self = 0;
	uint64_t calls = 0;
	for (size_t i = 0; i < c->nfn; i++) {
		self += c->fn[i].self;
		calls += c->fn[i].calls;
	}
	const char *cmd = hp_drive_nthreads(v->d) ? hp_drive_thread(v->d, 0)->process : NULL;
	fprintf(v->out, "# callgrind format\nversion: 1\ncreator: hookprof\n");
	if (cmd && *cmd)
		fprintf(v->out, "cmd: %s\n", cmd);
	/* ns: wall-clock time, summed over threads. */
	fprintf(v->out, "positions: line\nevents: ns calls\nsummary: %llu %llu\n\n",
		ns_int(self), (unsigned long long)calls);
	return ferror(v->out) ? -1 : 0;
}

static int end_callgrind(struct hp_view *v, char *err, size_t errlen)
{
	struct callgrind *c = v->state;
	struct writer w = { .out = v->out, .fns = hp_drive_fns(v->d) };
	size_t nfns = w.fns->rows.n;
	w.named = calloc(nfns ? nfns : 1, 1);
	if (!w.named || cover((void **)&c->fn, &c->nfn, nfns ? (uint32_t)nfns - 1 : 0, sizeof(*c->fn), 0)) {
		free(w.named);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	qsort(c->edge, c->nedge, sizeof(*c->edge), cmp_edge);
	int rc = write_header(v, c);
	/* Functions in id order, each followed by the calls it makes. */
	for (uint32_t i = 0, e = 0; !rc && i < nfns; i++) {
		int has_edges = e < c->nedge && c->edge[e].caller == i;
		if (!c->fn[i].calls && !has_edges)
			continue;
		rc = write_function(&w, i, &c->fn[i]);
		for (; !rc && e < c->nedge && c->edge[e].caller == i; e++)
			rc = write_call(&w, &c->edge[e]);
		if (!rc && fputc('\n', v->out) == EOF)
			rc = -1;
	}
	free(w.named);
	free(w.fl.name);
	free(w.ob.name);
	if (rc)
		snprintf(err, errlen, "out of memory, or the output could not be written");
	return rc;
}

static void free_cgthread(void *data)
{
	struct cgthread *th = data;
	free(th->fn);
	free(th);
}

static void close_callgrind(struct hp_view *v)
{
	struct callgrind *c = v->state;
	if (c) {
		free(c->fn);
		free(c->edge);
		free(c->slot);
	}
	free(c);
	v->state = NULL;
}

const struct hp_view_ops hp_view_callgrind = {
	.name = "callgrind",
	.summary = "callgrind profile (time in ns, calls, call graph), for KCachegrind and callgrind_annotate",
	.flags = HP_VIEW_EXPORT,
	.open = open_callgrind,
	.enter = enter_callgrind,
	.exit = exit_callgrind,
	.end = end_callgrind,
	.thread_free = free_cgthread,
	.close = close_callgrind,
};
