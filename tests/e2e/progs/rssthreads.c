/* rssthreads.c - N busy threads (argv[1], default 32, at most 1024) alive
 * at once: each makes argv[2] calls of rt_work (default 100000: 200000
 * events, more than a 1 MiB buffer holds), then waits for all the others before it ends, so that every
 * thread's buffer is mapped and touched at the same time. Prints the
 * process's peak resident set in KiB, which section 88-perf compares with
 * and without hookprof. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define MAXTHREADS 1024

static int ncalls = 100000;

static volatile unsigned long sink;
static pthread_barrier_t all_done;

__attribute__((noinline)) void rt_work(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void *rt_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < ncalls; i++)
		rt_work(i);
	pthread_barrier_wait(&all_done);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 32;
	if (argc > 2)
		ncalls = atoi(argv[2]);
	if (n < 1 || n > MAXTHREADS || ncalls < 0)
		return 2;
	static pthread_t t[MAXTHREADS];
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
