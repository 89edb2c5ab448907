/* flushloop.c - calls fl_work and hookprof_flush in a loop until a timer
 * sends SIGTERM, argv[1] microseconds after the start: most of the time
 * the signal lands inside hookprof_flush. The trace must still end with
 * its END record, written by the fatal signal's flush. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "hookprof.h"

volatile int sink;

__attribute__((noinline)) void fl_work(int i)
{
	sink += i;
}

static void arm_sigterm(long usec)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGTERM };
	struct itimerspec when = { .it_value = { usec / 1000000, usec % 1000000 * 1000 } };
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) || timer_settime(timer, 0, &when, NULL))
		exit(2);
}

int main(int argc, char **argv)
{
	arm_sigterm(argc > 1 ? atol(argv[1]) : 20000);
	for (int i = 0;; i++) {
		fl_work(i);
		hookprof_flush();
	}
}
