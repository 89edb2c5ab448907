/* fdlimit.c - opens /dev/null until the descriptor limit stops it, prints
 * how many it got, closes them all, then calls fd_work 10 times: a tracer
 * that keeps a descriptor must not take one of the program's. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void fd_work(int i)
{
	sink += i;
}

int main(void)
{
	static int fds[1 << 16];
	int n = 0;
	fd_work(0); /* start-up is done before the count */
	while (n < (int)(sizeof(fds) / sizeof(fds[0])) && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (int i = 1; i < 10; i++)
		fd_work(i);
	printf("fdlimit opened %d\n", n);
	return 0;
}
