/*
 * winbench.c - the cost of a hook pair with hookprof.dll under
 * -finstrument-functions: N calls of an empty instrumented function and
 * of an empty one without hooks, timed with QueryPerformanceCounter.
 *
 *   winbench N      prints "winbench: N calls, X ns per call without
 *                   hooks, Y ns per hook pair"
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void wb_empty(void)
{
	__asm__ volatile("");
}

__attribute__((noinline, no_instrument_function)) void wb_plain(void)
{
	__asm__ volatile("");
}

__attribute__((no_instrument_function)) static double now_ns(void)
{
	LARGE_INTEGER f, t;
	QueryPerformanceFrequency(&f);
	QueryPerformanceCounter(&t);
	return (double)t.QuadPart * 1e9 / (double)f.QuadPart;
}

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	wb_empty(); /* the runtime starts at the first event, not in the loop */
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		wb_plain();
	double t1 = now_ns();
	for (long i = 0; i < n; i++)
		wb_empty();
	double t2 = now_ns();
	printf("winbench: %ld calls, %.2f ns per call without hooks, %.2f ns per hook pair\n", n,
	       (t1 - t0) / n, ((t2 - t1) - (t1 - t0)) / n);
	return 0;
}
