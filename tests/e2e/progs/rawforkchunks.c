/* rawforkchunks.c - a child of syscall(SYS_fork) that records many chunks
 * (4096 events each): main calls rc_parent 3000 times (the fork comes in
 * the middle of a chunk), forks; the child calls rc_child 10000 times
 * (20000 events) and returns from main; the parent waits, calls rc_parent
 * 3000 times more and prints "rawforkchunks child exit 0". */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void rc_parent(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void rc_child(int i)
{
	sink ^= (unsigned long)i;
}

int main(void)
{
	for (int i = 0; i < 3000; i++)
		rc_parent(i);
	fflush(stdout);
	pid_t pid = (pid_t)syscall(SYS_fork);
	if (pid < 0)
		return 2;
	if (pid == 0) {
		for (int i = 0; i < 10000; i++)
			rc_child(i);
		return 0;
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 2;
	for (int i = 0; i < 3000; i++)
		rc_parent(i);
	printf("rawforkchunks child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
