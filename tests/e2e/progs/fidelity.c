/* fidelity.c - a split set by construction (tests/e2e/sections/86-fidelity.sh):
 * by_calls() makes N calls of an empty leaf(); by_loop() runs the same N
 * rounds of the same work inline. Without instrumentation both take about
 * the same time; traced, by_calls() also pays 2N hooks, which compensation
 * takes out. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) static void leaf(unsigned i) { sink += i; }

__attribute__((noinline)) static void by_calls(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noinline)) static void by_loop(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 200000;
	by_calls(n);
	by_loop(n);
	printf("fidelity %u\n", n);
	return 0;
}
