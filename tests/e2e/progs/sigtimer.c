/* sigtimer.c - an instrumented SIGALRM handler (sig_handler, which calls
 * sig_inner) driven by a 50 us interval timer, while main calls sig_loop
 * exactly 4000000 times, then more in blocks of 1000 until 500 signals came.
 * Signals land anywhere, also inside the hooks of main's calls. Prints the
 * number of sig_loop calls and of signals handled, as the program counted
 * them: the report must count as many. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

volatile unsigned long sink;
static volatile unsigned long nsig;

__attribute__((noinline)) void sig_inner(void)
{
	sink ^= 1;
}

__attribute__((noinline)) void sig_handler(int sig)
{
	(void)sig;
	nsig++;
	sig_inner();
}

__attribute__((noinline)) void sig_loop(unsigned long i)
{
	sink += i;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval on = { { 0, 50 }, { 0, 50 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &on, NULL);
	unsigned long calls = 0;
	while (calls < 4000000 || nsig < 500)
		for (int i = 0; i < 1000; i++)
			sig_loop(calls++);
	setitimer(ITIMER_REAL, &off, NULL);
	/* A signal that was pending came before setitimer returned; no more come. */
	printf("sigtimer %lu calls %lu signals\n", calls, nsig);
	return 0;
}
