/*
 * hp_calibrate.h - what a hook pair costs, measured in the traced process,
 * so that the reader can take it out of the times it shows (docs/format.md,
 * CALIBRATION; docs/design.md, "Compensation").
 */
#ifndef HP_CALIBRATE_H
#define HP_CALIBRATE_H

#include <stdint.h>

#include "hp_platform.h"

/* Hook pairs measured: one chunk of events. */
#define HP_CALIBRATE_PAIRS 2048u

struct hp_calibration {
	uint32_t pairs;   /* measured, after the slowest 1 in 16 were left out */
	uint64_t inside;  /* ticks from an enter's tick to its exit's, summed */
	uint64_t outside; /* ticks from an exit's tick to the next enter's, summed */
};

/*
 * Runs the real hooks HP_CALIBRATE_PAIRS times on a scratch buffer, with
 * asynchronous signals held off, on the calling thread, whose own state is
 * set aside and given back. Nothing is recorded. 0, or -1 (no TSC, no
 * memory): no calibration.
 */
int hp_calibrate(struct hp_calibration *c) HP_HIDDEN;

#endif
