/* execer.c - calls ex_work 300 times, then replaces itself with
 * `argv[2] again` through argv[1], one of execve execv execvp execvpe execl
 * execlp execle fexecve (the p variants get the bare name, looked up in
 * PATH). With "again" as argv[1] it calls ex_work 50 times and exits 0.
 * With a program that does not exist the exec fails: it says so, calls
 * ex_work 300 times more and exits 4. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
volatile unsigned long sink;

__attribute__((noinline)) void ex_work(int i)
{
	sink += (unsigned long)i;
}

static void exec_via(const char *how, char *path)
{
	char *copy = strdup(path), *name = basename(copy);
	char *argv[] = { path, "again", NULL };
	if (!strcmp(how, "execve"))
		execve(path, argv, environ);
	else if (!strcmp(how, "execv"))
		execv(path, argv);
	else if (!strcmp(how, "execvp"))
		execvp(name, argv);
	else if (!strcmp(how, "execvpe"))
		execvpe(name, argv, environ);
	else if (!strcmp(how, "execl"))
		execl(path, path, "again", (char *)NULL);
	else if (!strcmp(how, "execlp"))
		execlp(name, name, "again", (char *)NULL);
	else if (!strcmp(how, "execle"))
		execle(path, path, "again", (char *)NULL, environ);
	else if (!strcmp(how, "fexecve")) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			fexecve(fd, argv, environ);
	}
	free(copy); /* the exec failed */
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "again")) {
		for (int i = 0; i < 50; i++)
			ex_work(i);
		printf("again\n");
		return 0;
	}
	if (argc < 3)
		return 2;
	for (int i = 0; i < 300; i++)
		ex_work(i);
	fflush(stdout);
	exec_via(argv[1], argv[2]);
	printf("exec failed\n");
	for (int i = 0; i < 300; i++)
		ex_work(i);
	return 4;
}
