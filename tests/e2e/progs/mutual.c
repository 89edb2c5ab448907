/* mutual.c - mutual recursion: mu_even and mu_odd call each other 300 deep,
 * each level calling mu_leaf once, 50 rounds. A function's total counts its
 * outermost activation only, however the two interleave.
 * Counts: mu_even 7550, mu_odd 7500, mu_leaf 15050 (301 levels a round:
 * 151 even, 150 odd, one mu_leaf each). */
#include <stdio.h>

#define DEPTH 300
#define ROUNDS 50

volatile unsigned long sink;

__attribute__((noinline)) void mu_leaf(unsigned n)
{
	for (unsigned i = 0; i < 20; i++)
		sink += n ^ i;
}

__attribute__((noinline)) void mu_odd(unsigned n);

__attribute__((noinline)) void mu_even(unsigned n)
{
	mu_leaf(n);
	if (n)
		mu_odd(n - 1);
	sink++;
}

__attribute__((noinline)) void mu_odd(unsigned n)
{
	mu_leaf(n);
	if (n)
		mu_even(n - 1);
	sink++;
}

int main(void)
{
	for (int r = 0; r < ROUNDS; r++)
		mu_even(DEPTH);
	printf("mutual %lu\n", sink > 0 ? 1ul : 0ul);
	return 0;
}
