/*
 * hp_spacing.h - what a hook pair cost in the run itself, read from the
 * spacing of the trace's own events.
 *
 * The calibration the runtime writes (CALIBRATION records) runs the hooks
 * back to back on a hot scratch chunk. In the program they cost more: the
 * code gcc adds around each hook call inside the instrumented function
 * (saving and reloading the arguments), the ring's stores missing the
 * cache, the writer on the other core. Two spacings bound that cost from
 * above, since no code can take less than nothing:
 *   - a leaf call (an enter followed by its own exit) lasts the inside part
 *     of a pair plus the leaf's body: the function whose leaf calls are
 *     shortest on average gives the inside part, with the smallest body;
 *   - between a callee's exit and the next sibling's enter lie the outside
 *     part of a pair and the caller's code between the two calls: the caller
 *     whose such gaps are shortest on average gives the outside part.
 * Averages over many calls are exact below the clock's step (the phase of
 * each call against the step is random); the minimum of single calls is not.
 */
#ifndef HP_SPACING_H
#define HP_SPACING_H

#include <stddef.h>
#include <stdint.h>

#include "hp_decode.h"

/* Calls (or gaps) a function needs to be a witness: fewer say too little. */
#define HP_SPACING_MIN_SAMPLES 512
/* Spacings longer than this many ticks were interrupted or preempted, or
 * did real work: not a hook's cost. */
#define HP_SPACING_LONG_TICKS 4096
/* A prefix of this many events is read: enough for the short functions of
 * any program to show, bounded for traces of billions. */
#define HP_SPACING_EVENTS (4u << 20)

struct hp_spacing_cost {
	double inside, outside;      /* ticks per pair; valid with has_* */
	int has_inside, has_outside;
	uint64_t inside_calls;       /* the witnesses' sample counts */
	uint64_t outside_gaps;
	uint64_t events;             /* read */
};

struct hp_spacing;

struct hp_spacing *hp_spacing_new(void);
void hp_spacing_free(struct hp_spacing *s);
/* Events of one stream, in order; -1: out of memory. */
int hp_spacing_feed(struct hp_spacing *s, uint32_t stream, const struct hp_ev *ev, size_t n);
/* Spacings of the functions (leaves; callers between calls) whose mean is
 * below in_limit (out_limit) ticks: above it, a function does real work. */
void hp_spacing_result(const struct hp_spacing *s, double in_limit, double out_limit,
		       struct hp_spacing_cost *c);

/* Reads the first HP_SPACING_EVENTS events of the trace at path. 0, or -1
 * with a one-line reason in err. */
int hp_spacing_measure(const char *path, double in_limit, double out_limit,
		       struct hp_spacing_cost *c, char *err, size_t errlen);

/* The calibrated parts of a pair (*in, *out; ticks), lowered to the run's
 * spacing where it shows less: a spacing bounds the cost from above, so a
 * calibration above it was inflated (preempted on a busy machine, say).
 * Where the spacing shows more, it holds the witnesses' bodies too, and
 * the calibration stays. */
void hp_spacing_cap(const struct hp_spacing_cost *c, double *in, double *out);

#endif
