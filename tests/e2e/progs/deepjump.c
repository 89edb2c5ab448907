/* deepjump.c - a longjmp out of a recursion 14000 deep, then more calls.
 * dj_run recurses through dj_down to depth 14000 and the deepest call jumps
 * back to it, so no dj_down returns; dj_run's own exit then closes all
 * their frames at once. Then dj_after runs 5000 times. Eight rounds: the
 * 24002 events of a round shift where the jump falls in the runtime's
 * chunks of events, so in some round it starts a record that goes on with
 * thousands of events. Counts: dj_run 8, dj_down 112000, dj_after 40000. */
#include <setjmp.h>
#include <stdio.h>

#define ROUNDS 8
#define DEPTH 14000
#define AFTER 5000

static jmp_buf back;
volatile unsigned long sink;

__attribute__((noinline)) void dj_down(unsigned n)
{
	sink += n;
	if (n <= 1)
		longjmp(back, 1);
	dj_down(n - 1);
	sink++;
}

__attribute__((noinline)) void dj_after(unsigned i)
{
	sink += i;
}

__attribute__((noinline)) int dj_run(void)
{
	if (!setjmp(back))
		dj_down(DEPTH);
	return 1;
}

int main(void)
{
	int rounds = 0;
	for (int r = 0; r < ROUNDS; r++) {
		rounds += dj_run();
		for (unsigned i = 0; i < AFTER; i++)
			dj_after(i);
	}
	printf("deepjump %d\n", rounds);
	return 0;
}
