/* threads.c - 8 threads each run thr_worker, which calls thr_work exactly
 * 1000 times: 8 and 8000 calls in all. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 8
#define NCALLS 1000

static unsigned long results[NTHREADS];

__attribute__((noinline)) unsigned long thr_work(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

__attribute__((noinline)) void *thr_worker(void *arg)
{
	long id = (long)arg;
	unsigned long x = (unsigned long)id;
	for (int i = 0; i < NCALLS; i++)
		x = thr_work(x);
	results[id] = x;
	return NULL;
}

int main(void)
{
	pthread_t t[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, thr_worker, (void *)i)) {
			fprintf(stderr, "threads: pthread_create failed\n");
			return 2;
		}
	unsigned long all = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		all ^= results[i];
	}
	printf("threads done %d\n", all != 1);
	return 0;
}
