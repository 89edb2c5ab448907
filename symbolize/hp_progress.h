/*
 * hp_progress.h - "reading TRACE: 45%" on stderr while a long command reads,
 * when stderr is a terminal (never in a pipe or a file), from about a
 * second on, a few times a second at most.
 */
#ifndef HP_PROGRESS_H
#define HP_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct hp_progress {
	FILE *out;          /* NULL: nothing is shown */
	const char *what;   /* "reading TRACE" */
	uint64_t total;     /* bytes */
	uint64_t start_ns;
	uint64_t next_ns;   /* no new line before this moment */
	uint64_t delay_ns;  /* the first line waits this long */
	uint64_t every_ns;  /* and the next ones this long */
	int shown;          /* a line is on the terminal (done clears it) */
	int last_percent;
};

/* Starts showing on stderr if it is a terminal. */
void hp_progress_start(struct hp_progress *p, const char *what, uint64_t total);
/* The same on out, shown or not as tty says (tests; a terminal otherwise). */
void hp_progress_start_on(struct hp_progress *p, FILE *out, int tty, const char *what,
			  uint64_t total);
void hp_progress_update(struct hp_progress *p, uint64_t done);
/* An hp_read_progress_fn (hp_analyze.h) for a command reading several
 * traces: arg is an hp_progress, started again at each new total. */
void hp_progress_reading(void *arg, uint64_t done, uint64_t total);
/* Clears the line, if one was shown, so that what follows starts clean. */
void hp_progress_done(struct hp_progress *p);

#endif
