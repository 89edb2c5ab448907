/* rssthreads.c - N busy threads (argv[1], default 32) alive at once: each
 * makes 100000 calls of rt_work (200000 events, more than a 1 MiB buffer
 * holds), then waits for all the others before it ends, so that every
 * thread's buffer is mapped and touched at the same time. Prints the
 * process's peak resident set in KiB, which section 88-perf compares with
 * and without hookprof. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define NCALLS 100000
#define MAXTHREADS 256

static volatile unsigned long sink;
static pthread_barrier_t all_done;

__attribute__((noinline)) void rt_work(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void *rt_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCALLS; i++)
		rt_work(i);
	pthread_barrier_wait(&all_done);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 32;
	if (n < 1 || n > MAXTHREADS)
		return 2;
	pthread_t t[MAXTHREADS];
	pthread_barrier_init(&all_done, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, rt_thread, NULL))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%ld\n", ru.ru_maxrss);
	return 0;
}
