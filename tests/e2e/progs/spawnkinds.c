/* spawnkinds.c - a parent that starts children four ways, each running
 * instrumented code: "system PROG" runs PROG through system(), "spawn PROG"
 * through posix_spawn(), "exec PROG" through fork() then execv(), "daemon"
 * calls daemon() and the daemon calls sk_daemon 500 times and writes
 * "daemon done" to the file named by argv[2]. Before, main calls sk_parent
 * 100 times; after, 100 times more; it prints "spawnkinds <how> <status>". */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
volatile unsigned long sink;

__attribute__((noinline)) void sk_parent(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void sk_daemon(int i)
{
	sink ^= (unsigned long)i;
}

static int waited(pid_t pid)
{
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

__attribute__((noinline)) int sk_start(const char *how, const char *arg)
{
	char *argv[] = { (char *)arg, NULL };
	pid_t pid;
	if (!strcmp(how, "system"))
		return WEXITSTATUS(system(arg));
	if (!strcmp(how, "spawn"))
		return posix_spawn(&pid, arg, NULL, NULL, argv, environ) ? -1 : waited(pid);
	if (!strcmp(how, "exec")) {
		pid = fork();
		if (pid == 0) {
			execv(arg, argv);
			_exit(127);
		}
		return waited(pid);
	}
	if (daemon(1, 1))
		return -1;
	for (int i = 0; i < 500; i++)
		sk_daemon(i);
	FILE *f = fopen(arg, "w");
	if (f)
		fputs("daemon done\n", f), fclose(f);
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	for (int i = 0; i < 100; i++)
		sk_parent(i);
	fflush(stdout);
	int status = sk_start(argv[1], argv[2]);
	for (int i = 0; i < 100; i++)
		sk_parent(i);
	printf("spawnkinds %s %d\n", argv[1], status);
	return 0;
}
