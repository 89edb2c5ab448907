/*
 * hp_view_tree.c - `hookprof tree`: the call tree. One node per distinct
 * call path from a thread's outermost shown frame (threads merged into one
 * tree), with the calls, total, self, avg, min and max of the calls made
 * along exactly that path. Recursion is not collapsed: each level of it is
 * a node of its own, so a node's total never counts a call twice and the
 * calls of the paths that end in a function add up to the report's calls.
 *
 * The table indents callees under their caller with guide lines, as
 * `uftrace graph` does; the CSV gives each path as its names joined by ';'.
 * Callees are listed heaviest first (--sort, default total time); --limit=N
 * keeps the N first callees of each node.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "hp_calltree.h"
#include "hp_drive.h"

/* Guide columns drawn before a deeper node says its depth instead: a line
 * stays short however deep a recursion goes. */
#define GUIDE_LEVELS 32

struct tree {
	struct hp_calltree tree;
	uint64_t *under;      /* calls in each node's subtree, itself included */
	uint8_t *shown;       /* per node: on a line of the output */
	uint8_t *more;        /* per node: a later sibling is shown */
	uint8_t guide[GUIDE_LEVELS + 1]; /* per depth: the node there has a later sibling */
	struct hp_pathtext path; /* CSV: the node's path */
	int csv;
	FILE *out;
	const struct hp_fntab *fns;
};

static int open_tree(struct hp_view *v, char *err, size_t errlen)
{
	struct tree *t = calloc(1, sizeof(*t));
	if (!t || hp_calltree_init(&t->tree)) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	t->csv = !strcmp(v->opts->format, "csv");
	v->state = t;
	return 0;
}

static int enter_tree(struct hp_view *v, struct hp_vthread *th, const struct hp_vframe *f)
{
	struct tree *t = v->state;
	struct hp_cpath *p = hp_cpath_of(th);
	return p ? hp_calltree_enter(&t->tree, p, f) : -1;
}

static int exit_tree(struct hp_view *v, struct hp_vthread *th, const struct hp_vframe *f)
{
	struct tree *t = v->state;
	return hp_calltree_exit(&t->tree, th->data, f) == HP_CNODE_NONE ? -1 : 0;
}

/* ---- order ---------------------------------------------------------------- */

struct order {
	int key;              /* enum hp_sort */
	const struct hp_fntab *fns;
};

static double avg_of(const struct hp_cnode *c)
{
	return c->calls ? c->total / (double)c->calls : 0;
}

static double weight(const struct hp_cnode *c, int key)
{
	switch (key) {
	case HP_SORT_SELF: return c->self;
	case HP_SORT_CALLS: return (double)c->calls;
	case HP_SORT_AVG: return avg_of(c);
	case HP_SORT_MAX: return c->max;
	default: return c->total;
	}
}

/* Heaviest first (names: alphabetical); ties in the order of first call. */
static int by_key(const struct hp_calltree *t, uint32_t a, uint32_t b, void *arg)
{
	const struct order *o = arg;
	const struct hp_cnode *x = &t->node[a], *y = &t->node[b];
	int c = 0;
	if (o->key == HP_SORT_NAME) {
		c = strcmp(hp_fntab_name(o->fns, x->fn), hp_fntab_name(o->fns, y->fn));
	} else {
		double wx = weight(x, o->key), wy = weight(y, o->key);
		c = wx > wy ? -1 : wx < wy;
	}
	return c ? c : a < b ? -1 : a > b;
}

/* ---- which nodes show ----------------------------------------------------- */

/* A node shows if some call was counted in its subtree (a frame whose exit
 * a gap in the trace lost counts none, but may carry callees that
 * returned) and it is among the --limit first callees of its caller. Its
 * caller's showing is checked during the walk, callers coming first. */
static int mark_shown(struct tree *t, unsigned long limit)
{
	struct hp_calltree *ct = &t->tree;
	t->under = calloc(ct->n, sizeof(*t->under));
	t->shown = calloc(ct->n, 1);
	t->more = calloc(ct->n, 1);
	if (!t->under || !t->shown || !t->more)
		return -1;
	/* A callee's node is made after its caller's: one backward pass sums subtrees. */
	for (uint32_t i = ct->n - 1; i > HP_CNODE_ROOT; i--) {
		t->under[i] += ct->node[i].calls;
		t->under[ct->node[i].parent] += t->under[i];
	}
	for (uint32_t i = 0; i < ct->n; i++) {
		unsigned long rank = 0;
		uint32_t last = HP_CNODE_NONE;
		for (uint32_t c = ct->node[i].child; c != HP_CNODE_NONE; c = ct->node[c].next) {
			if (!t->under[c] || (limit && rank == limit))
				continue;
			rank++;
			if (last != HP_CNODE_NONE)
				t->more[last] = 1;
			t->shown[c] = 1;
			last = c;
		}
	}
	return 0;
}

/* ---- writing -------------------------------------------------------------- */

static unsigned long long ns_int(double ns)
{
	return ns > 0 ? (unsigned long long)(ns + 0.5) : 0;
}

static void guides(struct tree *t, uint32_t depth)
{
	if (!depth)
		return;
	uint32_t drawn = depth - 1 < GUIDE_LEVELS ? depth - 1 : GUIDE_LEVELS;
	for (uint32_t k = 1; k <= drawn; k++)
		fputs(t->guide[k] ? " | " : "   ", t->out);
	if (depth - 1 > GUIDE_LEVELS)
		fprintf(t->out, " [%u]", depth);
	fputs(" +-", t->out);
}

static void table_line(struct tree *t, const struct hp_cnode *c)
{
	char s[5][32];
	hp_format_ns(c->total, s[0], sizeof(s[0]));
	hp_format_ns(c->self, s[1], sizeof(s[1]));
	hp_format_ns(avg_of(c), s[2], sizeof(s[2]));
	hp_format_ns(c->min > 0 ? c->min : 0, s[3], sizeof(s[3]));
	hp_format_ns(c->max, s[4], sizeof(s[4]));
	fprintf(t->out, "%12llu %12s %12s %12s %12s %12s  ", (unsigned long long)c->calls, s[0],
		s[1], s[2], s[3], s[4]);
	guides(t, c->depth);
	fprintf(t->out, "%s\n", hp_fntab_name(t->fns, c->fn));
}

/* The path of c, from the root, as folded stacks write it. */
static int csv_line(struct tree *t, const struct hp_calltree *ct, uint32_t id)
{
	const struct hp_cnode *c = &ct->node[id];
	size_t len;
	const char *path = hp_pathtext_of(&t->path, ct, t->fns, id, &len);
	if (!path)
		return -1;
	hp_csv_field(t->out, path);
	fprintf(t->out, ",%llu,%llu,%llu,%llu,%llu,%llu\r\n", (unsigned long long)c->calls,
		ns_int(c->total), ns_int(c->self), ns_int(avg_of(c)), ns_int(c->min),
		ns_int(c->max));
	return 0;
}

static int line_of(void *arg, const struct hp_calltree *ct, uint32_t id)
{
	struct tree *t = arg;
	const struct hp_cnode *c = &ct->node[id];
	if (c->parent != HP_CNODE_ROOT && !t->shown[c->parent])
		t->shown[id] = 0; /* so that its callees hide too */
	if (!t->shown[id])
		return 0;
	if (c->depth <= GUIDE_LEVELS)
		t->guide[c->depth] = t->more[id];
	if (t->csv) {
		if (csv_line(t, ct, id))
			return -1;
	} else {
		table_line(t, c);
	}
	return ferror(t->out) ? -1 : 0;
}

static int end_tree(struct hp_view *v, char *err, size_t errlen)
{
	struct tree *t = v->state;
	t->out = v->out;
	t->fns = hp_drive_fns(v->d);
	struct order o = { v->opts->sort < 0 ? HP_SORT_TOTAL : v->opts->sort, t->fns };
	if (hp_calltree_sort(&t->tree, by_key, &o) || mark_shown(t, v->opts->limit)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char line[256];
	if (t->csv && hp_calltree_paths_too_big(&t->tree, t->fns, "the CSV", line, sizeof(line)))
		hp_drive_warn(v->d, line);
	if (t->csv)
		fputs("path,calls,total_ns,self_ns,avg_ns,min_ns,max_ns\r\n", t->out);
	else
		fprintf(t->out, "%12s %12s %12s %12s %12s %12s  %s\n", "calls", "total", "self",
			"avg", "min", "max", "call path");
	if (hp_calltree_walk(&t->tree, line_of, t)) {
		snprintf(err, errlen, "out of memory, or the output could not be written");
		return -1;
	}
	return 0;
}

static void close_tree(struct hp_view *v)
{
	struct tree *t = v->state;
	if (t) {
		hp_calltree_free(&t->tree);
		free(t->under);
		free(t->shown);
		free(t->more);
		hp_pathtext_free(&t->path);
	}
	free(t);
	v->state = NULL;
}

const struct hp_view_ops hp_view_tree = {
	.name = "tree",
	.summary = "the call tree: calls, total, self, avg, min, max per distinct call path",
	.help = "  threads are merged; recursion is not collapsed: one line a level\n"
		"  --sort=KEY            order of each node's callees: total (default), self,\n"
		"                        calls, avg, max (largest first) or name\n"
		"  --limit=N             only the first N callees of each node (and N roots)\n"
		"  csv columns: path,calls,total_ns,self_ns,avg_ns,min_ns,max_ns; path is the\n"
		"  names from the root joined by ';' (a recursion N deep makes N paths of up\n"
		"  to N names: --depth cuts it; a warning first if it is 1 GB or more)\n",
	.formats = "table|csv",
	.open = open_tree,
	.enter = enter_tree,
	.exit = exit_tree,
	.end = end_tree,
	.thread_free = hp_cpath_free,
	.close = close_tree,
};
