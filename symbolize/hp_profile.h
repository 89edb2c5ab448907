/*
 * hp_profile.h - the flat profile: per function, calls and inclusive, self,
 * min and max times, from normalised events (hp_decode.h). Times are in
 * ticks here; the report converts them.
 */
#ifndef HP_PROFILE_H
#define HP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "hp_decode.h"
#include "hp_opencount.h"
#include "hp_pause.h"

struct hp_fstat {
	uint64_t calls;
	uint64_t total; /* inclusive, outermost activations only */
	uint64_t self;  /* exclusive of callees */
	uint64_t min, max; /* inclusive time of one call */
};

struct hp_frame {
	uint64_t start;
	uint64_t child; /* inclusive time of direct callees */
	uint32_t func;
	uint32_t outermost; /* no other frame of func below this one */
};

struct hp_pstream {
	struct hp_frame *frames;
	size_t depth, cap;
	uint64_t last_tick;
	uint64_t events;
	int started;
	struct hp_opencount open; /* open frames per function */
	struct hp_pause pause;    /* paused and stopped time is cut out */
};

struct hp_profile {
	struct hp_fstat *f;
	size_t nf;
	struct hp_pstream *streams;
	size_t nstreams;
};

int hp_profile_init(struct hp_profile *p);
/* Folds one decoded record of `stream` in. 0, or -1 out of memory. */
int hp_profile_feed(struct hp_profile *p, uint32_t stream, const struct hp_ev *ev, size_t n,
		    size_t nfuncs);
/* For a caller that keeps its own profile: the stream's last tick and its
 * event count only, no frames, no times. */
int hp_profile_touch(struct hp_profile *p, uint32_t stream, const struct hp_ev *ev, size_t n);
/* The same of a decoded piece, which says what it holds: one of calls and
 * hookprof's own time only needs no look at each event. */
int hp_profile_touch_piece(struct hp_profile *p, uint32_t stream, const struct hp_evbuf *b);
/* The stream's clock reached tick through something that is no event of
 * the profile's (an exit of a function entered before the trace began):
 * frames left open at the end last until there. */
void hp_profile_reached(struct hp_profile *p, uint32_t stream, uint64_t tick);
/* Closes frames still open at the end of each stream (functions that never
 * returned: main calling exit(), threads still running) at its last tick. */
void hp_profile_finish(struct hp_profile *p);
void hp_profile_free(struct hp_profile *p);

#endif
