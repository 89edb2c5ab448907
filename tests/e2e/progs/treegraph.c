/* treegraph.c - call paths and edges for hookprof tree and graph, in two
 * phases 300 ms apart (for --time):
 *   phase 1, in main: tg_rec(4) twice (direct recursion, 5 levels: 10
 *   calls), tg_even(4) once (mutual recursion even, odd, even, odd, even),
 *   tg_leaf 3 times, tg_mid once (it calls tg_leaf twice);
 *   phase 2: two threads run tg_worker, which calls tg_leaf 4 times and
 *   tg_slow (a 50 ms sleep) once.
 * Counts: main 1, tg_rec 10, tg_even 3, tg_odd 2, tg_leaf 13, tg_mid 1,
 * tg_worker 2, tg_slow 2. Prints its pid. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void tg_leaf(int k)
{
	/* relaxed atomics: two threads add, ThreadSanitizer reports ours, not the program's */
	__atomic_fetch_add(&sink, (unsigned long)k, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void tg_rec(int n)
{
	sink++;
	if (n > 0)
		tg_rec(n - 1);
}

__attribute__((noinline)) void tg_odd(int n);

__attribute__((noinline)) void tg_even(int n)
{
	if (n > 0)
		tg_odd(n - 1);
}

__attribute__((noinline)) void tg_odd(int n)
{
	if (n > 0)
		tg_even(n - 1);
}

__attribute__((noinline)) void tg_mid(void)
{
	tg_leaf(1);
	tg_leaf(2);
}

__attribute__((noinline)) void tg_slow(void)
{
	pause_ms(50);
}

__attribute__((noinline)) void *tg_worker(void *arg)
{
	for (int i = 0; i < 4; i++)
		tg_leaf(i + (int)(long)arg);
	tg_slow();
	return NULL;
}

int main(void)
{
	tg_rec(4);
	tg_rec(4);
	tg_even(4);
	for (int i = 0; i < 3; i++)
		tg_leaf(i);
	tg_mid();
	pause_ms(300);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, tg_worker, (void *)i)) {
			fprintf(stderr, "treegraph: pthread_create failed\n");
			return 2;
		}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("treegraph %d\n", (int)getpid());
	return 0;
}
