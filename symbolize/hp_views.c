/*
 * hp_views.c - the table of views: a new view is a file and a line here.
 * Commands first (in the order `hookprof --help` lists them), then the
 * formats of `hookprof export`.
 */
#include <stdlib.h>
#include <string.h>

#include "hp_view.h"

extern const struct hp_view_ops hp_view_flat;
extern const struct hp_view_ops hp_view_tree;
extern const struct hp_view_ops hp_view_graph;
extern const struct hp_view_ops hp_view_replay;
extern const struct hp_view_ops hp_view_folded;
extern const struct hp_view_ops hp_view_chrome;
extern const struct hp_view_ops hp_view_perfetto;
extern const struct hp_view_ops hp_view_speedscope;
extern const struct hp_view_ops hp_view_callgrind;
extern const struct hp_view_ops hp_view_pprof;

const struct hp_view_ops *const hp_views[] = {
	&hp_view_flat,
	&hp_view_tree,
	&hp_view_graph,
	&hp_view_replay,
	&hp_view_folded,
	&hp_view_chrome,
	&hp_view_perfetto,
	&hp_view_speedscope,
	&hp_view_callgrind,
	&hp_view_pprof,
	NULL,
};

const struct hp_view_ops *hp_view_find(const char *name)
{
	for (size_t i = 0; hp_views[i]; i++)
		if (!strcmp(hp_views[i]->name, name))
			return hp_views[i];
	return NULL;
}

int hp_view_grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}
