/*
 * hp_calibrate.c - measuring a hook pair in the traced process (hp_calibrate.h).
 *
 * The hooks are called as the program calls them (through the PLT, the
 * fast path into a chunk), on a scratch chunk that nothing publishes. Each
 * pair's two ticks split its cost: from the enter's tick to the exit's
 * tick is the part an instrumented callee is billed for (the rest of the
 * enter hook, the start of the exit hook); from the exit's tick to the next
 * enter's tick, the part its caller is billed for. An interrupt or a
 * preemption inside a pair would count thousands of ticks: the slowest
 * sixteenth of the pairs is left out.
 */
#define _GNU_SOURCE
#include "hp_calibrate.h"

#include <string.h>

#include "hp_buffer.h"

void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

/* Pair costs above this many ticks are outliers whatever the machine. */
#define HIST_TICKS 4096u

/* Not a function of the program's: its address names nothing. */
static void calibration_mark(void) {}

static void run_pairs(struct hp_raw *scratch)
{
	struct hp_tls saved = hp_tls;
	hp_tls = (struct hp_tls){ .pos = scratch, .end = scratch + HP_CHUNK_EVENTS };
	/* Compiler only: the hooks below read hp_tls as set here. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	void *fn = (void *)(uintptr_t)calibration_mark;
	for (uint32_t i = 0; i < HP_CALIBRATE_PAIRS; i++) {
		__cyg_profile_func_enter(fn, fn);
		__cyg_profile_func_exit(fn, fn);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	hp_tls = saved;
}

static uint64_t pair_ticks(const struct hp_raw *ev, uint32_t i, uint64_t *in, uint64_t *out)
{
	*in = ev[2 * i + 1].tick - ev[2 * i].tick;
	*out = ev[2 * i + 2].tick - ev[2 * i + 1].tick;
	return *in + *out;
}

/* The cost below which 15 in 16 pairs lie. */
static uint64_t typical_limit(const struct hp_raw *ev, uint32_t *hist)
{
	uint32_t n = HP_CALIBRATE_PAIRS - 1, below = 0;
	memset(hist, 0, HIST_TICKS * sizeof(*hist));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t in, out, t = pair_ticks(ev, i, &in, &out);
		hist[t < HIST_TICKS ? t : HIST_TICKS - 1]++;
	}
	for (uint32_t t = 0; t < HIST_TICKS; t++) {
		below += hist[t];
		if (below >= n - n / 16)
			return t;
	}
	return HIST_TICKS - 1;
}

int hp_calibrate(struct hp_calibration *c)
{
	if (!hp_tick_is_tsc)
		return -1; /* every event takes the slow path: nothing steady to measure */
	size_t bytes = HP_CHUNK_BYTES + HIST_TICKS * sizeof(uint32_t);
	struct hp_raw *ev = hp_pages_alloc(bytes);
	if (!ev)
		return -1;
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	run_pairs(ev);
	hp_signals_release(&saved_mask);
	uint64_t limit = typical_limit(ev, (uint32_t *)(ev + HP_CHUNK_EVENTS));
	*c = (struct hp_calibration){ 0 };
	for (uint32_t i = 0; i + 1 < HP_CALIBRATE_PAIRS; i++) {
		uint64_t in, out;
		if (pair_ticks(ev, i, &in, &out) > limit)
			continue;
		c->pairs++;
		c->inside += in;
		c->outside += out;
	}
	hp_pages_free(ev, bytes);
	return c->pairs ? 0 : -1;
}
