/*
 * hp_view_folded.c - Brendan Gregg's folded stacks: one line per call path,
 * "main;work;leaf 1234", the value the path's self time in nanoseconds;
 * what flamegraph.pl, inferno and speedscope read. A ';' in a name (none
 * in C or C++ names) would split it: it is written as ':'.
 */
#include <stdlib.h>
#include <string.h>

#include "hp_calltree.h"
#include "hp_drive.h"

struct folded {
	struct hp_calltree tree;
	struct hp_pathtext path;
};

static int open_folded(struct hp_view *v, char *err, size_t errlen)
{
	struct folded *f = calloc(1, sizeof(*f));
	if (!f || hp_calltree_init(&f->tree)) {
		free(f);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v->state = f;
	return 0;
}

static int enter_folded(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *fr)
{
	struct folded *f = v->state;
	struct hp_cpath *p = hp_cpath_of(t);
	return p ? hp_calltree_enter(&f->tree, p, fr) : -1;
}

static int exit_folded(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *fr)
{
	struct folded *f = v->state;
	return hp_calltree_exit(&f->tree, t->data, fr) == HP_CNODE_NONE ? -1 : 0;
}

struct walk {
	struct folded *f;
	const struct hp_fntab *fns;
	FILE *out;
};

static int line_of(void *arg, const struct hp_calltree *t, uint32_t id)
{
	struct walk *w = arg;
	const struct hp_cnode *c = &t->node[id];
	size_t len;
	const char *path = hp_pathtext_of(&w->f->path, t, w->fns, id, &len);
	if (!path)
		return -1;
	unsigned long long self = (unsigned long long)(c->self + 0.5);
	if (c->calls && self)
		fprintf(w->out, "%.*s %llu\n", (int)len, path, self);
	return ferror(w->out) ? -1 : 0;
}

static int end_folded(struct hp_view *v, char *err, size_t errlen)
{
	struct walk w = { v->state, hp_drive_fns(v->d), v->out };
	char line[256];
	if (hp_calltree_paths_too_big(&w.f->tree, w.fns, "the folded stacks", line, sizeof(line)))
		hp_drive_warn(v->d, line);
	if (hp_calltree_walk(&w.f->tree, line_of, &w)) {
		snprintf(err, errlen, "out of memory, or the output could not be written");
		return -1;
	}
	return 0;
}

static void close_folded(struct hp_view *v)
{
	struct folded *f = v->state;
	if (f) {
		hp_calltree_free(&f->tree);
		hp_pathtext_free(&f->path);
	}
	free(f);
	v->state = NULL;
}

const struct hp_view_ops hp_view_folded = {
	.name = "folded",
	.summary = "folded stacks (a;b;c SELF_NS), for flamegraph.pl, inferno and speedscope",
	.flags = HP_VIEW_EXPORT,
	.open = open_folded,
	.enter = enter_folded,
	.exit = exit_folded,
	.end = end_folded,
	.thread_free = hp_cpath_free,
	.close = close_folded,
};
