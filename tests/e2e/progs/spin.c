/* spin.c - calls sp_work for argv[1] milliseconds (default 5) of its own
 * run time, prints "spin killed", then kills itself with SIGKILL: nothing
 * of ours runs at the end, and a trace killed this early has only what
 * start-up and the writer's first seconds wrote. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void sp_work(unsigned long i)
{
	sink += i;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 5;
	double t0 = now_ms();
	for (unsigned long i = 0; now_ms() - t0 < ms; i++)
		sp_work(i);
	printf("spin killed\n");
	fflush(stdout);
	raise(SIGKILL);
	return 0;
}
