/*
 * hp_progress.c - progress of a long read on a terminal.
 */
#include "hp_progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

/* Short commands show nothing; long ones are told of 4 times a second. */
#define FIRST_AFTER_NS 1000000000ull
#define EVERY_NS 250000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hp_progress_start_on(struct hp_progress *p, FILE *out, int tty, const char *what,
			  uint64_t total)
{
	*p = (struct hp_progress){ .out = tty ? out : NULL, .what = what, .total = total,
				   .delay_ns = FIRST_AFTER_NS, .every_ns = EVERY_NS,
				   .last_percent = -1 };
	p->start_ns = now_ns();
}

void hp_progress_start(struct hp_progress *p, const char *what, uint64_t total)
{
	hp_progress_start_on(p, stderr, isatty(STDERR_FILENO), what, total);
}

void hp_progress_reading(void *arg, uint64_t done, uint64_t total)
{
	struct hp_progress *p = arg;
	if (p->total != total) {
		hp_progress_done(p);
		hp_progress_start(p, "reading the trace", total);
	}
	hp_progress_update(p, done);
}

void hp_progress_update(struct hp_progress *p, uint64_t done)
{
	if (!p->out || !p->total)
		return;
	uint64_t t = now_ns();
	if (t < p->start_ns + p->delay_ns || t < p->next_ns)
		return;
	p->next_ns = t + p->every_ns;
	int percent = (int)(done >= p->total ? 100 : done * 100 / p->total);
	if (percent == p->last_percent)
		return;
	p->last_percent = percent;
	fprintf(p->out, "\r%s: %d%%", p->what, percent);
	fflush(p->out);
	p->shown = 1;
}

void hp_progress_done(struct hp_progress *p)
{
	if (p->out && p->shown) {
		/* Spaces over the line, then back: the next output starts at column 0. */
		fprintf(p->out, "\r%*s\r", (int)strlen(p->what) + 6, "");
		fflush(p->out);
	}
	p->shown = 0;
}
