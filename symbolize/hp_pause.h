/*
 * hp_pause.h - time a thread was paused (hookprof_pause) or the process
 * stopped (hookprof_stop) is no function's: it is cut out of the thread's
 * timeline. Each stream's ticks after a cut move back by the time cut out,
 * so every frame open across it, and every frame after, is timed as if the
 * pause had not been; frames and views need no change. The price: a
 * thread's later events show earlier than the other threads' by its pauses
 * (a stop cuts every thread alike).
 */
#ifndef HP_PAUSE_H
#define HP_PAUSE_H

#include <stdint.h>

#include "hp_decode.h"

struct hp_pause {
	uint64_t cut;    /* ticks cut out so far */
	uint64_t off_at; /* where the present cut began */
	uint64_t last;   /* the newest tick seen */
	uint8_t paused, stopped;
};

/* Where tick lies on the cut timeline (not moving the state). */
static inline uint64_t hp_pause_tick(const struct hp_pause *p, uint64_t tick)
{
	if (p->paused || p->stopped)
		tick = p->off_at;
	return tick >= p->cut ? tick - p->cut : 0;
}

/* hp_pause_apply of an enter or exit at tick: its tick on the cut timeline. */
static inline uint64_t hp_pause_call(struct hp_pause *p, uint64_t tick)
{
	/* An event while off (a signal handler's, say) sits at the cut. */
	if (p->paused || p->stopped)
		return hp_pause_tick(p, tick);
	if (tick > p->last)
		p->last = tick;
	return tick >= p->cut ? tick - p->cut : 0;
}

/* Nothing cut out yet, and the thread on: hp_pause_call would give each
 * tick back as it is, until the next control event. */
static inline int hp_pause_uncut(const struct hp_pause *p)
{
	return !p->paused && !p->stopped && !p->cut;
}

/* hp_pause_call while hp_pause_uncut holds. */
static inline uint64_t hp_pause_call_uncut(struct hp_pause *p, uint64_t tick)
{
	if (tick > p->last)
		p->last = tick;
	return tick;
}

/* hp_pause_apply for the kinds other than calls. */
int hp_pause_control(struct hp_pause *p, const struct hp_ev *e, struct hp_ev *out);

/*
 * e, with its tick on the cut timeline, in *out: 1. A pause, resume, stop
 * or start moves the state instead: 0, nothing to pass on. Calls, nearly
 * every event, take the inline path: readers call this once per event.
 */
static inline int hp_pause_apply(struct hp_pause *p, const struct hp_ev *e, struct hp_ev *out)
{
	if (e->kind != HP_EV_ENTER && e->kind != HP_EV_EXIT)
		return hp_pause_control(p, e, out);
	*out = *e;
	out->tick = hp_pause_call(p, e->tick);
	return 1;
}

/* The ticks hookprof's own time e (HP_EV_OWN) took, for a reader that keeps
 * the timeline whole and takes them out of durations instead; 0 while
 * paused or stopped (that time is cut already). The state does not move. */
static inline uint64_t hp_pause_own(const struct hp_pause *p, const struct hp_ev *e)
{
	return !p->paused && !p->stopped && e->tick > p->last ? e->tick - p->last : 0;
}

#endif
