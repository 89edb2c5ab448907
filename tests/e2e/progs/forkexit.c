/* forkexit.c - an exit handler forks, and the child calls exit(2): the
 * child inherits the parent's state of being in exit(), and must still
 * end. Before that, main calls fe_work 1000 times. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void fe_work(int i)
{
	sink += i;
}

static void fork_at_exit(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		exit(2);
	int status = 0;
	waitpid(pid, &status, 0);
	printf("forkexit child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	atexit(fork_at_exit);
	for (int i = 0; i < 1000; i++)
		fe_work(i);
	return 0;
}
