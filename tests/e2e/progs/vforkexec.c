/* vforkexec.c - children that share the parent's memory until they exec:
 * vfork(), and clone(CLONE_VM | CLONE_VFORK) (argv[1] "vfork" or
 * "clone"). main calls ve_parent 100 times, makes the child, which calls
 * ve_child 5000 times (more than a 4096-event chunk) and execs /bin/true
 * (argv[2], if given); the parent waits for it, calls ve_parent 100 times
 * more and prints the child's exit status. The parent's trace must hold
 * its own calls only: main 1, ve_parent 200. With "flush" as argv[3] the
 * child first calls hookprof_flush(), if hookprof is there, and the parent
 * prints what it returned (-1: a child does not write its parent's trace). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;
static const char *target = "/bin/true";
static int child_flushes;
static volatile int child_flush_rc = 1; /* set by the child, on our memory */

int hookprof_flush(void) __attribute__((weak));

__attribute__((noinline)) void ve_parent(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void ve_child(int i)
{
	sink ^= (unsigned long)i;
}

static int child_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++)
		ve_child(i);
	if (child_flushes && hookprof_flush)
		child_flush_rc = hookprof_flush();
	execl(target, target, (char *)NULL);
	_exit(127);
}

static char clone_stack[256 << 10];

int main(int argc, char **argv)
{
	int use_clone = argc > 1 && !strcmp(argv[1], "clone");
	if (argc > 2)
		target = argv[2];
	child_flushes = argc > 3 && !strcmp(argv[3], "flush");
	for (int i = 0; i < 100; i++)
		ve_parent(i);
	fflush(stdout);
	pid_t pid;
	if (use_clone) {
		pid = clone(child_main, clone_stack + sizeof(clone_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	} else {
		pid = vfork();
		if (pid == 0)
			child_main(NULL);
	}
	if (pid < 0)
		return 2;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 2;
	for (int i = 0; i < 100; i++)
		ve_parent(i);
	printf("%s child exit %d\n", use_clone ? "clone" : "vfork", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (child_flushes)
		printf("hookprof_flush in the child: %d\n", child_flush_rc);
	return 0;
}
