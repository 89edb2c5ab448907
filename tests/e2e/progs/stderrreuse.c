/* stderrreuse.c - closes fd 2 and opens a file of its own there (argv[1]),
 * writes "own" to it, then makes hookprof warn (the trace file is deleted,
 * then hookprof_flush): the warning must not land in the program's file. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "hookprof.h"

volatile int sink;

__attribute__((noinline)) void sr_work(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	sr_work(1);
	unlink(hookprof_trace_path());
	close(2);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != 2)
		return 3;
	if (write(fd, "own\n", 4) != 4)
		return 4;
	int rc = hookprof_flush();
	close(fd);
	printf("stderrreuse %d\n", rc);
	return 0;
}
