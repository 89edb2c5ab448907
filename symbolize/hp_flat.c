/*
 * hp_flat.c - per-function figures of shown calls, per group.
 */
#include "hp_flat.h"

#include <stdlib.h>
#include <string.h>

struct hp_fstats *hp_flat_grow(struct hp_flat *fl, uint32_t group, uint32_t fn)
{
	if (group >= fl->ng) {
		uint32_t n = group + 1;
		struct hp_flat_group *g = realloc(fl->g, n * sizeof(*g));
		if (!g)
			return NULL;
		memset(g + fl->ng, 0, (n - fl->ng) * sizeof(*g));
		fl->g = g;
		fl->ng = n;
	}
	struct hp_flat_group *g = &fl->g[group];
	if (fn >= g->nf) {
		size_t n = g->nf ? g->nf : 64;
		while (n <= fn)
			n *= 2;
		struct hp_fstats *f = realloc(g->f, n * sizeof(*f));
		if (!f)
			return NULL;
		memset(f + g->nf, 0, (n - g->nf) * sizeof(*f));
		g->f = f;
		g->nf = n;
	}
	return &g->f[fn];
}


struct hp_fstats hp_flat_get(const struct hp_flat *fl, uint32_t group, uint32_t fn)
{
	if (group < fl->ng && fn < fl->g[group].nf)
		return fl->g[group].f[fn];
	return (struct hp_fstats){ 0 };
}

static void merge(struct hp_fstats *to, const struct hp_fstats *s)
{
	if (!s->calls)
		return;
	if (!to->calls || s->min < to->min)
		to->min = s->min;
	if (s->max > to->max)
		to->max = s->max;
	to->calls += s->calls;
	to->total += s->total;
	to->self += s->self;
}

int hp_flat_rows(const struct hp_flat *fl, const struct hp_fntab *fns, uint32_t from, uint32_t to,
		 struct hp_rows *rows)
{
	for (uint32_t fn = 0; fn < fns->rows.n; fn++) {
		struct hp_fstats sum = { 0 };
		for (uint32_t g = from; g < to; g++) {
			struct hp_fstats s = hp_flat_get(fl, g, fn);
			merge(&sum, &s);
		}
		if (!sum.calls)
			continue;
		struct hp_row *r = hp_rows_push(rows, hp_fntab_get(fns, fn));
		if (!r)
			return -1;
		r->id = fn;
		r->calls = sum.calls;
		r->total = sum.total;
		r->self = sum.self;
		r->min = sum.min;
		r->max = sum.max;
	}
	return 0;
}

void hp_flat_free(struct hp_flat *fl)
{
	for (uint32_t i = 0; i < fl->ng; i++)
		free(fl->g[i].f);
	free(fl->g);
	memset(fl, 0, sizeof(*fl));
}
