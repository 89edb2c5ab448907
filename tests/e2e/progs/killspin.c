/* killspin.c - calls for ARGV[1] milliseconds (default 5000), in main and in a
 * second thread: sp_outer -> sp_mid -> sp_leaf, 1100 calls, then a pause
 * of 1 ms, over and over, for a test that kills it with SIGKILL at some
 * moment while its trace is written (a few MB a second). With ARGV[2], it
 * creates that file once a thread has made 10 rounds (22,000 events, more than
 * a chunk): a slow start (a sanitizer, a loaded machine) cannot then be
 * mistaken for a trace that lost its events. */
#include <pthread.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

unsigned long sink; /* both threads add to it: relaxed atomics, so ThreadSanitizer reports ours, not the program's */
static long run_ms = 5000;
static const char *ready_path;

__attribute__((noinline)) void sp_leaf(unsigned long i)
{
	__atomic_fetch_add(&sink, i, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void sp_mid(unsigned long i)
{
	for (int k = 0; k < 4; k++)
		sp_leaf(i + (unsigned long)k);
}

__attribute__((noinline)) void sp_outer(unsigned long i)
{
	sp_mid(i);
	sp_mid(i + 1);
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void say_ready(void)
{
	static int said;
	if (!ready_path || __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	int fd = open(ready_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
}

__attribute__((noinline)) void *sp_loop(void *arg)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct timespec pause = { 0, 1000000 };
	for (unsigned long i = 0; elapsed_ms(&t0) < run_ms; i++) {
		for (int k = 0; k < 100; k++)
			sp_outer(i);
		nanosleep(&pause, NULL);
		if (i == 10)
			say_ready();
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (argc > 1)
		run_ms = atol(argv[1]);
	if (argc > 2)
		ready_path = argv[2];
	if (pthread_create(&t, NULL, sp_loop, NULL))
		return 2;
	sp_loop(NULL);
	pthread_join(t, NULL);
	puts("spin done");
	return 0;
}
