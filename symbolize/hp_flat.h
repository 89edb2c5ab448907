/*
 * hp_flat.h - the flat profile's figures as views build them from shown
 * calls (hp_view.h): per function (hp_fntab id) calls, total, self, min
 * and max, kept apart per group (a run, a process, a thread, or one group
 * for everything) so that one pass serves the merged table, per-run
 * columns, per-thread sections and `hookprof diff`.
 */
#ifndef HP_FLAT_H
#define HP_FLAT_H

#include <stdint.h>

#include "hp_fntab.h"
#include "hp_report.h"
#include "hp_view.h"

struct hp_fstats {
	uint64_t calls;
	double total;    /* ns, outermost activations only */
	double self, min, max;
};

struct hp_flat_group {
	struct hp_fstats *f; /* by fn id */
	size_t nf;
};

struct hp_flat {
	struct hp_flat_group *g;
	uint32_t ng;
};

/* The figures of fn in group, made room for; NULL out of memory. */
struct hp_fstats *hp_flat_grow(struct hp_flat *fl, uint32_t group, uint32_t fn);

/* Counts a call of fn in group: dur ns, self ns of them its own,
 * outermost: no frame of fn around it in its thread. 0, or -1 out of
 * memory. Inline: every shown call of report and diff comes here (the
 * driver's, hp_view.flat). */
static inline int hp_flat_count(struct hp_flat *fl, uint32_t group, uint32_t fn, double dur,
				double self, int outermost)
{
	struct hp_fstats *s = group < fl->ng && fn < fl->g[group].nf ? &fl->g[group].f[fn]
								    : hp_flat_grow(fl, group, fn);
	if (!s)
		return -1;
	if (!s->calls || dur < s->min)
		s->min = dur;
	if (dur > s->max)
		s->max = dur;
	s->calls++;
	s->self += self;
	if (outermost)
		s->total += dur;
	return 0;
}

/* The group of thread t's calls, with figures kept apart per `per` (enum
 * hp_per): its trace's (a run, a process), its own, or the one of all. */
static inline uint32_t hp_flat_group(int per, const struct hp_vthread *t)
{
	switch (per) {
	case HP_PER_PROCESS:
	case HP_PER_RUN: return t->trace;
	case HP_PER_THREAD: return t->id;
	default: return 0;
	}
}
/* The figures of fn in group; all zero if it has none there. */
struct hp_fstats hp_flat_get(const struct hp_flat *fl, uint32_t group, uint32_t fn);
/* Appends one row per function with calls in groups [from, to), their
 * figures summed, id set; then hp_rows_finish sorts and labels them.
 * 0, or -1 out of memory. */
int hp_flat_rows(const struct hp_flat *fl, const struct hp_fntab *fns, uint32_t from, uint32_t to,
		 struct hp_rows *rows);
void hp_flat_free(struct hp_flat *fl);

#endif
