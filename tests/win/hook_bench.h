/*
 * hook_bench.h - the cost of a hook pair: n calls of a function without
 * hooks, then n of a hooked one that does as little, timed with
 * QueryPerformanceCounter; the difference per call is the pair's (enter
 * and exit). penter_probe.c and winbench.c print it.
 */
#ifndef HOOK_BENCH_H
#define HOOK_BENCH_H

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>

__attribute__((no_instrument_function)) static inline double hook_bench_ns(void)
{
	LARGE_INTEGER f, t;
	QueryPerformanceFrequency(&f);
	QueryPerformanceCounter(&t);
	return (double)t.QuadPart * 1e9 / (double)f.QuadPart;
}

__attribute__((no_instrument_function)) static inline void hook_bench(const char *label, long n,
									void (*plain)(void),
									void (*hooked)(void))
{
	double t0 = hook_bench_ns();
	for (long i = 0; i < n; i++)
		plain();
	double t1 = hook_bench_ns();
	for (long i = 0; i < n; i++)
		hooked();
	double t2 = hook_bench_ns();
	printf("%s: %ld calls, %.2f ns per call without hooks, %.2f ns per hook pair\n", label, n,
	       (t1 - t0) / n, ((t2 - t1) - (t1 - t0)) / n);
}

#endif
