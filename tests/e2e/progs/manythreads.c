/* manythreads.c - 3000 short-lived threads, created and joined one after
 * another; each runs mt_thread, which calls mt_work 10 times: exactly 3000
 * and 30000 calls. With "flush" as argv[1], another thread (mt_flusher,
 * entered once) calls hookprof_flush() in a loop meanwhile, so flushes race
 * with threads that are exiting and with the buffers of exited ones. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "hookprof.h"

#define NTHREADS 3000
#define NCALLS 10

volatile unsigned long sink;
static volatile int stop;
static volatile long calls, flushes;

__attribute__((noinline)) void mt_work(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void *mt_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCALLS; i++)
		mt_work(i);
	return NULL;
}

__attribute__((noinline)) void *mt_flusher(void *arg)
{
	(void)arg;
	/* atomics (relaxed) for what main shares with us: ThreadSanitizer is
	 * to see hookprof's races */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (hookprof_flush() == 0)
			flushes++;
		__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int flush = argc > 1 && !strcmp(argv[1], "flush");
	pthread_t fl;
	if (flush && pthread_create(&fl, NULL, mt_flusher, NULL))
		return 2;
	while (flush && !__atomic_load_n(&calls, __ATOMIC_RELAXED)) /* the flusher is at work before the first thread */
		sched_yield();
	for (int i = 0; i < NTHREADS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, mt_thread, NULL) || pthread_join(t, NULL))
			return 2;
	}
	if (flush) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(fl, NULL);
	}
	/* With "flush": whether the flushes worked (returned 0). */
	if (flush)
		printf("manythreads %d %s\n", NTHREADS, flushes > 0 ? "flushed" : "not flushed");
	else
		printf("manythreads %d\n", NTHREADS);
	return 0;
}
