/* closeall.c - what a daemon does after start: calls ca_work 10 times,
 * prints "closeall started", then closes every descriptor (argv[1]: "close"
 * closes 0..1023 one by one, "close_range" calls close_range(0, ~0U, 0),
 * "closefrom" calls closefrom(0)), optionally chroots into argv[2], and
 * calls ca_work 20 more times: 30 calls in all. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void ca_work(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	for (int i = 0; i < 10; i++)
		ca_work(i);
	printf("closeall started\n");
	fflush(stdout);
	if (!strcmp(argv[1], "close")) {
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
	} else if (!strcmp(argv[1], "close_range")) {
		if (close_range(0, ~0U, 0))
			return 3;
	} else if (!strcmp(argv[1], "closefrom")) {
		closefrom(0);
	} else {
		return 2;
	}
	if (argc > 2 && (chroot(argv[2]) || chdir("/")))
		return 4;
	for (int i = 0; i < 20; i++)
		ca_work(i);
	return 0;
}
