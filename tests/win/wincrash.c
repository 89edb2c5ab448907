/*
 * wincrash.c - a Windows program that dies of an access violation inside
 * a function built without hooks, three instrumented frames deep; linked
 * with hookprof.dll, its trace must be kept (the unhandled-exception
 * filter's flush), with the crash and the frames that never returned.
 *
 *   wincrash        prints "wincrash start", then writes through NULL
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>

static volatile long sink;

__attribute__((noinline, no_instrument_function)) static void leaf_av(int *p)
{
	*p = 42;
}

__attribute__((noinline)) void cr_work(long i)
{
	sink += i;
}

__attribute__((noinline)) void cr_inner(int *p)
{
	for (long i = 0; i < 7; i++)
		cr_work(i);
	leaf_av(p);
}

__attribute__((noinline)) void cr_outer(int *p)
{
	cr_inner(p);
}

int main(int argc, char **argv)
{
	(void)argv;
	/* No dialog box nor debugger: the process just ends. */
	SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
	printf("wincrash start\n");
	fflush(stdout);
	cr_outer(argc > 5 ? (int *)&sink : NULL);
	return 0;
}
