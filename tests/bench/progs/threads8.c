/* threads8.c - 8 threads, each computing fib(30) recursively (2,692,537 calls each).
 * -DNTHREADS=64 -DFIB_N=26 makes the bench's many-threads program. */
#include <pthread.h>
#include <stdio.h>

#ifndef NTHREADS
#define NTHREADS 8
#endif
#ifndef FIB_N
#define FIB_N 30
#endif

__attribute__((noipa)) static unsigned long fib(int n)
{
	return n < 2 ? (unsigned long)n : fib(n - 1) + fib(n - 2);
}

static void *worker(void *arg)
{
	unsigned long *out = arg;
	*out = fib(FIB_N);
	return NULL;
}

int main(void)
{
	pthread_t t[NTHREADS];
	unsigned long r[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, &r[i]);
	unsigned long sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		sum += r[i];
	}
	printf("threads%d: %lu\n", NTHREADS, sum);
	return 0;
}
