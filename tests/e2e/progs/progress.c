/* progress.c - for the kill -9 figure (tests/bench/kill9.sh): calls
 * pg_step in a loop for ever, and every 1000 calls writes "FIRST NOW", the
 * CLOCK_MONOTONIC_RAW ns of its first call and of now, to the file named by
 * argv[1] (overwritten in place), so that after a kill -9 the trace's last
 * event can be compared with the program's own last word. */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void pg_step(int i)
{
	for (int j = 0; j < 200; j++)
		sink += (unsigned long)(i ^ j);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	long long first = 0;
	for (unsigned long i = 0;; i++) {
		pg_step((int)i);
		if (i % 1000 == 0) {
			struct timespec ts;
			char line[64];
			clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
			long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
			first = first ? first : now;
			int n = snprintf(line, sizeof(line), "%020lld %020lld\n", first, now);
			if (pwrite(fd, line, (size_t)n, 0) != n)
				return 1;
		}
	}
}
