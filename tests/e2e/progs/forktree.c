/* forktree.c - main calls ft_parent K times, then forks N children from
 * ft_spawn (so main and ft_spawn are open at each fork); each child calls
 * ft_child K times and returns through ft_spawn and main, which exit(0)
 * (through exit: its trace is written). The parent waits for them all and
 * prints "forktree N children". Arguments: N K (default 3 1000), and
 * "thread": another thread calls ft_busy meanwhile, until the children are
 * done; its calls are the parent's only (the line "busy M" gives M). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;
static volatile int stop;
static unsigned long busy_calls;

__attribute__((noinline)) void ft_busy(int i)
{
	/* beside main's updates: relaxed atomics, no data race for TSan */
	__atomic_fetch_add(&sink, (unsigned long)i, __ATOMIC_RELAXED);
}

static void *busy_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		ft_busy((int)busy_calls++);
	return NULL;
}

__attribute__((noinline)) void ft_parent(int i)
{
	__atomic_fetch_add(&sink, (unsigned long)i, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void ft_child(int i)
{
	__atomic_fetch_xor(&sink, (unsigned long)i, __ATOMIC_RELAXED);
}

/* 1 in a child, 0 in the parent, -1 if fork failed. */
__attribute__((noinline)) int ft_spawn(int k)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		return 0;
	for (int i = 0; i < k; i++)
		ft_child(i);
	return 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, k = argc > 2 ? atoi(argv[2]) : 1000;
	int threaded = argc > 3 && !strcmp(argv[3], "thread");
	pthread_t busy;
	if (threaded && pthread_create(&busy, NULL, busy_thread, NULL))
		return 2;
	for (int i = 0; i < k; i++)
		ft_parent(i);
	fflush(stdout);
	for (int c = 0; c < n; c++) {
		int r = ft_spawn(k);
		if (r < 0)
			return 2;
		if (r > 0)
			return 0;
	}
	int st, bad = 0;
	while (wait(&st) > 0)
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("forktree %d children%s\n", n, bad ? " (some failed)" : "");
	if (threaded) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(busy, NULL);
		printf("busy %lu\n", busy_calls);
	}
	return 0;
}
