/* flushunlinked.c - deletes its own trace file, then calls hookprof_flush(),
 * which cannot write the trace any more and must say so: it prints
 * "flushunlinked -1". main calls fu_work 5 times before. */
#include <stdio.h>
#include <unistd.h>

#include "hookprof.h"

volatile unsigned long sink;

__attribute__((noinline)) void fu_work(int i)
{
	sink += (unsigned long)i;
}

int main(void)
{
	for (int i = 0; i < 5; i++)
		fu_work(i);
	const char *path = hookprof_trace_path();
	if (!path || unlink(path))
		return 2;
	printf("flushunlinked %d\n", hookprof_flush());
	return 0;
}
