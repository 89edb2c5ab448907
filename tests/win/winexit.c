/*
 * winexit.c - a Windows program that leaves by ExitProcess, never through
 * the C runtime's exit(): Windows ends every other thread, hookprof's
 * writer too, before the runtime hears of it (DLL_PROCESS_DETACH). The
 * trace must still be whole, with an end record: the calling thread takes
 * the writer's place.
 *
 *   winexit        prints "winexit 2000 700", exits with status 7
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>

static volatile long sink;
static volatile LONG worker_done;

__attribute__((noinline)) void ex_work(long i)
{
	sink += i;
}

__attribute__((noinline)) void ex_thread_work(long i)
{
	sink -= i;
}

/* Its events stay in its buffer, unpublished: it is still alive, asleep,
 * when ExitProcess ends it. */
static DWORD WINAPI ex_worker(void *unused)
{
	(void)unused;
	for (long i = 0; i < 700; i++)
		ex_thread_work(i);
	InterlockedExchange(&worker_done, 1);
	Sleep(INFINITE);
	return 0;
}

int main(void)
{
	HANDLE h = CreateThread(NULL, 0, ex_worker, NULL, 0, NULL);
	/* More than a chunk of events: the writer has work while they come. */
	for (long i = 0; i < 2000; i++)
		ex_work(i);
	while (!InterlockedCompareExchange(&worker_done, 0, 0))
		Sleep(1);
	printf("winexit 2000 700\n");
	fflush(stdout);
	(void)h;
	ExitProcess(7);
}
