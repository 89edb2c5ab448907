/*
 * hp_pause.c - cutting paused and stopped time out of a stream (hp_pause.h).
 */
#include "hp_pause.h"

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void turn_off(struct hp_pause *p, uint64_t tick)
{
	if (!p->paused && !p->stopped)
		p->off_at = later(tick, p->last); /* a stop is not before what came before it */
}

static void turn_on(struct hp_pause *p, uint64_t tick)
{
	if (p->paused || p->stopped)
		return;
	uint64_t on = later(tick, p->off_at);
	p->cut += on - p->off_at;
	p->last = later(p->last, on);
}

int hp_pause_control(struct hp_pause *p, const struct hp_ev *e, struct hp_ev *out)
{
	switch (e->kind) {
	case HP_EV_PAUSE:
		turn_off(p, e->tick);
		p->paused = 1;
		return 0;
	case HP_EV_STOP:
		turn_off(p, e->tick);
		p->stopped = 1;
		return 0;
	case HP_EV_RESUME:
		p->paused = 0;
		turn_on(p, e->tick);
		return 0;
	case HP_EV_START:
		p->stopped = 0;
		turn_on(p, e->tick);
		return 0;
	case HP_EV_OWN: {
		/* hookprof's own time since the previous event: cut at once */
		uint64_t own = hp_pause_own(p, e);
		p->cut += own;
		p->last += own;
		return 0;
	}
	case HP_EV_RESET:
		/* After a gap: whatever was paused, the events go on. */
		p->paused = p->stopped = 0;
		*out = *e;
		return 1;
	default:
		*out = *e;
		/* An event while off (a signal handler's, say) sits at the cut. */
		out->tick = hp_pause_tick(p, e->tick);
		if (!p->paused && !p->stopped)
			p->last = later(p->last, e->tick);
		return 1;
	}
}
