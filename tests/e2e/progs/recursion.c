/* recursion.c - rec_down recursion of depth exactly 100000 (100000 calls) and
 * rec_fib(20) (21891 calls), on a thread with a stack big enough for both. */
#include <pthread.h>
#include <stdio.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long rec_down(unsigned long n)
{
	sink += n;
	if (n <= 1)
		return 1;
	return rec_down(n - 1) + 1;
}

__attribute__((noinline)) unsigned long rec_fib(unsigned n)
{
	sink++;
	return n < 2 ? n : rec_fib(n - 1) + rec_fib(n - 2);
}

__attribute__((noinline)) void *rec_thread(void *arg)
{
	unsigned long *r = arg;
	r[0] = rec_down(100000);
	r[1] = rec_fib(20);
	return NULL;
}

int main(void)
{
	unsigned long r[2] = { 0, 0 };
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512ul << 20);
	if (pthread_create(&t, &attr, rec_thread, r)) {
		fprintf(stderr, "recursion: pthread_create failed\n");
		return 2;
	}
	pthread_join(t, NULL);
	printf("recursion %lu %lu\n", r[0], r[1]);
	return r[0] == 100000 && r[1] == 6765 ? 0 : 1;
}
