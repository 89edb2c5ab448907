/* sigpipe.c - writes lines to stdout in a loop of instrumented calls until
 * the reader goes away and SIGPIPE ends the process (run as `sigpipe | head
 * -n 1`). main calls sp_setup 10 times first, then sp_line once per line.
 * After 10 million lines it gives up and returns 0. */
#include <signal.h>
#include <stdio.h>

volatile unsigned long sink;

/* The shell that runs us may ignore SIGPIPE, and the ignored disposition is
 * inherited: take the default back before the first event starts hookprof. */
__attribute__((constructor, no_instrument_function)) static void default_sigpipe(void)
{
	signal(SIGPIPE, SIG_DFL);
}

__attribute__((noinline)) void sp_setup(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) int sp_line(int i)
{
	return i * 2 + 1;
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		sp_setup(i);
	for (int i = 0; i < 10000000; i++)
		printf("sigpipe line %d\n", sp_line(i));
	return 0;
}
