/*
 * synth.c - heavy loops and a tiny function called often (issue 10's
 * synthetic case): main -> heavy (x ROUNDS), caller (x ROUNDS) -> tiny
 * (x 100,000 each). Where a profiler's own cost lands shows at once.
 */
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned sink;
__attribute__((noinline, noipa)) static unsigned tiny(unsigned x) { return x * 2654435761u + 1; }
__attribute__((noinline, noipa)) static void caller(int n) {
	unsigned acc = 0;
	for (int i = 0; i < n; i++)
		acc ^= tiny((unsigned)i);
	sink += acc;
}
__attribute__((noinline, noipa)) static void heavy(long n) {
	unsigned acc = 1;
	for (long i = 0; i < n; i++)
		acc = acc * 1103515245u + 12345u;
	sink += acc;
}
int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 90;
	for (int r = 0; r < rounds; r++) {
		heavy(12000000);
		caller(100000);
	}
	printf("%u\n", sink);
	return 0;
}
