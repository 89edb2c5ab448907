/* shortthreads.c - N short threads (argv[1], default 10000), at most 8
 * alive at a time: each runs st_thread, which calls st_work 5 times. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void st_work(int i)
{
	__atomic_fetch_add(&sink, (unsigned long)i, __ATOMIC_RELAXED); /* threads at once: no data race for TSan */
}

__attribute__((noinline)) void *st_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		st_work(i);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	pthread_t t[8];
	for (int i = 0; i < n; i += 8) {
		int m = n - i < 8 ? n - i : 8;
		for (int j = 0; j < m; j++)
			if (pthread_create(&t[j], NULL, st_thread, NULL))
				return 2;
		for (int j = 0; j < m; j++)
			pthread_join(t[j], NULL);
	}
	printf("shortthreads %d\n", n);
	return 0;
}
