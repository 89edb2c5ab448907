/* rawfork.c - forks without the C library's fork: syscall(SYS_fork), or
 * _Fork() with "_Fork" as argv[1]; neither runs the pthread_atfork
 * handlers. main calls rf_parent 100 times, forks; the child calls
 * rf_child 50 times and exit(3)s; the parent waits for it, calls
 * rf_parent 100 times more and prints the child's exit status. The
 * parent's trace must hold the parent's calls only: main 1, rf_parent 200. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void rf_parent(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void rf_child(int i)
{
	sink ^= (unsigned long)i;
}

int main(int argc, char **argv)
{
	int use_Fork = argc > 1 && !strcmp(argv[1], "_Fork");
	for (int i = 0; i < 100; i++)
		rf_parent(i);
	fflush(stdout);
	pid_t pid = use_Fork ? _Fork() : (pid_t)syscall(SYS_fork);
	if (pid < 0)
		return 2;
	if (pid == 0) {
		for (int i = 0; i < 50; i++)
			rf_child(i);
		exit(3);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 2;
	for (int i = 0; i < 100; i++)
		rf_parent(i);
	if (WIFEXITED(st))
		printf("rawfork child exit %d\n", WEXITSTATUS(st));
	else
		printf("rawfork child signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return 0;
}
