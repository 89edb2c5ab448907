/*
 * hp_profile.c - flat profile aggregation.
 *
 * "Is this the outermost frame of its function?" needs the number of open
 * frames per function in the frame's stream. Each stream keeps its own
 * counts (hp_opencount): records of different streams interleave in a
 * trace, and rebuilding one shared table from the stacks at each change of
 * stream, as an earlier version did, cost the depth of the stacks per
 * record, which a crafted file of many small records made quadratic.
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
	if (!f)
		return -1;
	p->f = f;
	memset(f + p->nf, 0, (n - p->nf) * sizeof(*f));
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

/* Room for one more frame: 0, or -1 out of memory. */
static int room_for_frame(struct hp_pstream *s)
{
	if (s->depth < s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 256;
	struct hp_frame *fr = realloc(s->frames, cap * sizeof(*fr));
	if (!fr)
		return -1;
	s->frames = fr;
	s->cap = cap;
	return 0;
}

static int push_frame(struct hp_pstream *s, const struct hp_ev *e)
{
	if (room_for_frame(s))
		return -1;
	int64_t open = hp_opencount_add(&s->open, e->func);
	if (open < 0)
		return -1;
	struct hp_frame *fr = &s->frames[s->depth++];
	fr->start = e->tick;
	fr->child = 0;
	fr->func = e->func;
	fr->outermost = open == 0;
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
	hp_opencount_sub(&s->open, fr->func);
	if (s->depth)
		s->frames[s->depth - 1].child += dur;
}

/* After a gap nothing is known of the open frames: they are dropped. */
static void drop_frames(struct hp_pstream *s)
{
	while (s->depth)
		hp_opencount_sub(&s->open, s->frames[--s->depth].func);
}

int hp_profile_feed(struct hp_profile *p, uint32_t stream, const struct hp_ev *ev, size_t n,
		    size_t nfuncs)
{
	struct hp_pstream *s = get_stream(p, stream);
	if (!s || grow_funcs(p, nfuncs))
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct hp_ev cut;
		if (!hp_pause_apply(&s->pause, &ev[i], &cut))
			continue;
		const struct hp_ev *e = &cut;
		if (e->kind == HP_EV_EXIT) {
			pop_frame(p, s, e->tick);
		} else if (e->kind == HP_EV_ENTER) {
			if (push_frame(s, e))
				return -1;
			if (!s->started) {
				s->started = 1;
				s->last_tick = e->tick;
			}
		} else if (e->kind == HP_EV_RESET) {
			drop_frames(s);
			continue;
		} else {
			continue; /* marks, values, repairs: no frame */
		}
		s->last_tick = e->tick;
		s->events++;
	}
	return 0;
}

/* The newest event of a piece (a call's, or another kind's) moves the
 * pause state and becomes the last tick; a gap (RESET) moves nothing. */
static void touch_reached(struct hp_pstream *s, const struct hp_ev *e)
{
	struct hp_ev cut;
	if (!e || !hp_pause_apply(&s->pause, e, &cut) || e->kind == HP_EV_RESET)
		return;
	if (!s->started || cut.tick > s->last_tick)
		s->last_tick = cut.tick;
	s->started = 1;
}

/* The light account of a stream whose caller profiles it itself: its last
 * tick, on the timeline the driver keeps (pauses cut out, hookprof's own
 * time not). */
int hp_profile_touch(struct hp_profile *p, uint32_t stream, const struct hp_ev *ev, size_t n)
{
	struct hp_pstream *s = get_stream(p, stream);
	if (!s)
		return -1;
	/* Calls between two other events move the pause state as their newest
	 * does (ticks grow within a stream): only it is applied. */
	const struct hp_ev *newest_call = NULL;
	size_t own = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hp_ev *e = &ev[i];
		if (e->kind == HP_EV_ENTER || e->kind == HP_EV_EXIT) {
			newest_call = e;
		} else if (e->kind == HP_EV_OWN) {
			own++; /* hookprof's time is no event */
		} else {
			touch_reached(s, newest_call);
			newest_call = NULL;
			touch_reached(s, e);
		}
	}
	touch_reached(s, newest_call);
	s->events += n - own;
	return 0;
}

int hp_profile_touch_piece(struct hp_profile *p, uint32_t stream, const struct hp_evbuf *b)
{
	if (b->controls)
		return hp_profile_touch(p, stream, b->ev, b->n);
	struct hp_pstream *s = get_stream(p, stream);
	if (!s)
		return -1;
	/* as hp_profile_touch: only the newest call moves the state */
	size_t i = b->n;
	while (i && b->ev[i - 1].kind == HP_EV_OWN)
		i--;
	touch_reached(s, i ? &b->ev[i - 1] : NULL);
	s->events += b->n - b->own;
	return 0;
}

void hp_profile_reached(struct hp_profile *p, uint32_t stream, uint64_t tick)
{
	struct hp_pstream *s = stream < p->nstreams ? &p->streams[stream] : NULL;
	if (s)
		tick = hp_pause_tick(&s->pause, tick);
	if (s && s->started && tick > s->last_tick)
		s->last_tick = tick;
}

void hp_profile_finish(struct hp_profile *p)
{
	for (uint32_t i = 0; i < p->nstreams; i++) {
		struct hp_pstream *s = &p->streams[i];
		while (s->depth)
			pop_frame(p, s, s->last_tick);
	}
}

void hp_profile_free(struct hp_profile *p)
{
	for (size_t i = 0; i < p->nstreams; i++) {
		free(p->streams[i].frames);
		hp_opencount_free(&p->streams[i].open);
	}
	free(p->streams);
	free(p->f);
	memset(p, 0, sizeof(*p));
}
