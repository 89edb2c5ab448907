/*
 * hp_profile.c - flat profile aggregation.
 *
 * "Is this the outermost frame of its function?" needs the number of open
 * frames per function in the stream being read. Records of different
 * streams interleave in a trace, so the counts are kept for one stream at a
 * time and rebuilt from the stacks when the stream changes, which costs the
 * depths of the two stacks once per record rather than a lookup per event.
 */
#include "hp_profile.h"

#include <stdlib.h>
#include <string.h>

int hp_profile_init(struct hp_profile *p)
{
	memset(p, 0, sizeof(*p));
	return 0;
}

static int grow_funcs(struct hp_profile *p, size_t nfuncs)
{
	if (nfuncs <= p->nf)
		return 0;
	size_t n = p->nf ? p->nf : 256;
	while (n < nfuncs)
		n *= 2;
	struct hp_fstat *f = realloc(p->f, n * sizeof(*f));
	uint32_t *active = f ? realloc(p->active, n * sizeof(*active)) : NULL;
	if (f)
		p->f = f;
	if (!active)
		return -1;
	p->active = active;
	memset(f + p->nf, 0, (n - p->nf) * sizeof(*f));
	memset(active + p->nf, 0, (n - p->nf) * sizeof(*active));
	for (size_t i = p->nf; i < n; i++)
		f[i].min = UINT64_MAX;
	p->nf = n;
	return 0;
}

static struct hp_pstream *get_stream(struct hp_profile *p, uint32_t stream)
{
	if (stream >= p->nstreams) {
		size_t n = (size_t)stream + 8;
		struct hp_pstream *s = realloc(p->streams, n * sizeof(*s));
		if (!s)
			return NULL;
		memset(s + p->nstreams, 0, (n - p->nstreams) * sizeof(*s));
		p->streams = s;
		p->nstreams = n;
	}
	return &p->streams[stream];
}

static void count_active(struct hp_profile *p, uint32_t stream, int sign)
{
	if (stream >= p->nstreams)
		return;
	struct hp_pstream *s = &p->streams[stream];
	for (size_t i = 0; i < s->depth; i++)
		p->active[s->frames[i].func] += (uint32_t)sign;
}

static void switch_stream(struct hp_profile *p, uint32_t stream)
{
	if (stream == p->current)
		return;
	count_active(p, p->current, -1);
	count_active(p, stream, +1);
	p->current = stream;
}

static int push_frame(struct hp_profile *p, struct hp_pstream *s, const struct hp_ev *e)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct hp_frame *fr = realloc(s->frames, cap * sizeof(*fr));
		if (!fr)
			return -1;
		s->frames = fr;
		s->cap = cap;
	}
	struct hp_frame *fr = &s->frames[s->depth++];
	fr->start = e->tick;
	fr->child = 0;
	fr->func = e->func;
	fr->outermost = p->active[e->func]++ == 0;
	return 0;
}

static void pop_frame(struct hp_profile *p, struct hp_pstream *s, uint64_t tick)
{
	struct hp_frame *fr = &s->frames[--s->depth];
	struct hp_fstat *f = &p->f[fr->func];
	uint64_t dur = tick >= fr->start ? tick - fr->start : 0;
	f->calls++;
	f->self += dur >= fr->child ? dur - fr->child : 0;
	if (fr->outermost)
		f->total += dur;
	if (dur < f->min)
		f->min = dur;
	if (dur > f->max)
		f->max = dur;
	p->active[fr->func]--;
	if (s->depth)
		s->frames[s->depth - 1].child += dur;
}

/* After a gap nothing is known of the open frames: they are dropped. */
static void drop_frames(struct hp_profile *p, struct hp_pstream *s)
{
	while (s->depth)
		p->active[s->frames[--s->depth].func]--;
}

int hp_profile_feed(struct hp_profile *p, uint32_t stream, const struct hp_ev *ev, size_t n,
		    size_t nfuncs)
{
	struct hp_pstream *s = get_stream(p, stream);
	if (!s || grow_funcs(p, nfuncs))
		return -1;
	switch_stream(p, stream);
	for (size_t i = 0; i < n; i++) {
		const struct hp_ev *e = &ev[i];
		if (e->kind == HP_EV_EXIT) {
			pop_frame(p, s, e->tick);
		} else if (e->kind == HP_EV_ENTER) {
			if (push_frame(p, s, e))
				return -1;
			if (!s->started) {
				s->started = 1;
				s->last_tick = e->tick;
			}
		} else {
			drop_frames(p, s);
			continue;
		}
		s->last_tick = e->tick;
		s->events++;
	}
	return 0;
}

void hp_profile_reached(struct hp_profile *p, uint32_t stream, uint64_t tick)
{
	struct hp_pstream *s = stream < p->nstreams ? &p->streams[stream] : NULL;
	if (s && s->started && tick > s->last_tick)
		s->last_tick = tick;
}

void hp_profile_finish(struct hp_profile *p)
{
	for (uint32_t i = 0; i < p->nstreams; i++) {
		struct hp_pstream *s = &p->streams[i];
		switch_stream(p, i);
		while (s->depth)
			pop_frame(p, s, s->last_tick);
	}
}

void hp_profile_free(struct hp_profile *p)
{
	for (size_t i = 0; i < p->nstreams; i++)
		free(p->streams[i].frames);
	free(p->streams);
	free(p->f);
	free(p->active);
	memset(p, 0, sizeof(*p));
}
