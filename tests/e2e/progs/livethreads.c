/* livethreads.c - N threads (argv[1], default 64) alive at once: each
 * calls lt_work K times (argv[2], default 1000), then all wait at a
 * barrier before they end, so every buffer is live together. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;
static pthread_barrier_t all_started, all_done;
static int k;

__attribute__((noinline)) void lt_work(int i)
{
	__atomic_fetch_add(&sink, (unsigned long)i, __ATOMIC_RELAXED); /* threads at once: no data race for TSan */
}

__attribute__((noinline)) void *lt_thread(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&all_started);
	for (int i = 0; i < k; i++)
		lt_work(i);
	pthread_barrier_wait(&all_done);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	k = argc > 2 ? atoi(argv[2]) : 1000;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_barrier_init(&all_started, NULL, (unsigned)n);
	pthread_barrier_init(&all_done, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, lt_thread, NULL))
			return 2;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("livethreads %d\n", n);
	return 0;
}
