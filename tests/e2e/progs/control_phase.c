/* control_phase.c - run with HOOKPROF_START=off: only what runs between
 * hookprof_start() and hookprof_stop() is recorded, and time stopped is
 * no function's. Prints "done". */
#include <hookprof.h>
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

static void before(void) { sink++; }
static void phase(void) { sink++; }
static void after(void) { sink++; }

/* 300 ms stopped inside it: none of it is spanning's */
static void spanning(void)
{
	phase();
	hookprof_stop();
	usleep(300000);
	after();
	hookprof_start();
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		before();
	hookprof_start();
	for (int i = 0; i < 4; i++)
		phase();
	spanning();
	hookprof_stop();
	for (int i = 0; i < 3; i++)
		after();
	hookprof_start();
	phase();
	puts("done");
	return 0;
}
