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

#include "hook_bench.h"

__attribute__((noinline)) void wb_empty(void)
{
	__asm__ volatile("");
}

__attribute__((noinline, no_instrument_function)) void wb_plain(void)
{
	__asm__ volatile("");
}

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	wb_empty(); /* the runtime starts at the first event, not in the loop */
	hook_bench("winbench", n, wb_plain, wb_empty);
	return 0;
}
