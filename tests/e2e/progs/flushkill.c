/* flushkill.c - calls fk_work 5 times, asks hookprof to write what it has
 * (hookprof_flush), prints the result, then dies of SIGKILL: no exit
 * handler, no destructor, no signal handler runs. What the trace holds is
 * what the flush wrote. */
#include <signal.h>
#include <stdio.h>

#include "hookprof.h"

volatile int sink;

__attribute__((noinline)) void fk_work(int i)
{
	sink += i;
}

int main(void)
{
	for (int i = 0; i < 5; i++)
		fk_work(i);
	int rc = hookprof_flush();
	printf("flushed %d %s\n", rc, hookprof_trace_path() ? "traced" : "untraced");
	fflush(stdout);
	raise(SIGKILL);
	return 0;
}
