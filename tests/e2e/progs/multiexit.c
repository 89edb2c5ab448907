/* multiexit.c - two threads call exit(5) at the same moment (after a
 * barrier) while main waits in pause(): only one of them runs the exit
 * handlers and destructors, the other goes on to end the process. Before
 * that, main and the two threads (me_thread) each call me_work 200000
 * times: 1, 2 and 600000 calls; the me_thread frames and main never return. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NCALLS 200000

volatile unsigned long sink;
static pthread_barrier_t barrier;

__attribute__((noinline)) void me_work(int i)
{
	/* atomic: three threads at once (ThreadSanitizer is to see hookprof's races) */
	__atomic_fetch_add(&sink, (unsigned long)i, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void *me_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCALLS; i++)
		me_work(i);
	pthread_barrier_wait(&barrier);
	exit(5);
}

int main(void)
{
	pthread_t t1, t2;
	pthread_barrier_init(&barrier, NULL, 3);
	if (pthread_create(&t1, NULL, me_thread, NULL) || pthread_create(&t2, NULL, me_thread, NULL))
		return 2;
	for (int i = 0; i < NCALLS; i++)
		me_work(i);
	pthread_barrier_wait(&barrier);
	pause();
	return 0;
}
