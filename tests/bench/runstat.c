/*
 * runstat.c - runs a command and prints "wall_s cpu_s maxrss_kb" on stderr
 * (or to the file -o names): wall-clock seconds, user+system CPU seconds of
 * the child and all its threads, and the child's peak resident set in KiB.
 *
 *   runstat [-o FILE] [-q] [-e FILE] [-i FILE] -- COMMAND [ARGS...]
 *     -o FILE  write the figures to FILE instead of stderr
 *     -i FILE  the command's stdin comes from FILE (a compressor's input)
 *     -q       send the command's stdout (and stderr, without -e) to /dev/null
 *     -e FILE  send the command's stderr to FILE (truncated)
 *
 * Exits with the command's status (128+signal if it was killed), 127 if it
 * could not be run. No GNU time needed: fork, execvp and wait4.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	static const char usage[] = "usage: runstat [-o FILE] [-q] [-e FILE] [-i FILE] -- COMMAND [ARGS...]\n";
	const char *out = NULL, *errfile = NULL, *infile = NULL;
	int quiet = 0, opt;
	while ((opt = getopt(argc, argv, "+o:qe:i:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'q': quiet = 1; break;
		case 'e': errfile = optarg; break;
		case 'i': infile = optarg; break;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("runstat: fork");
		return 127;
	}
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 1);
				if (!errfile)
					dup2(fd, 2);
				if (fd > 2)
					close(fd);
			}
		}
		if (errfile) {
			int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0) {
				fprintf(stderr, "runstat: %s: %s\n", errfile, strerror(errno));
				_exit(127);
			}
			dup2(fd, 2);
		}
		if (infile) {
			int fd = open(infile, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				fprintf(stderr, "runstat: %s: %s\n", infile, strerror(errno));
				_exit(127);
			}
			dup2(fd, 0);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "runstat: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("runstat: wait4");
			return 127;
		}
	}
	double wall = now() - t0;
	double cpu = tv(ru.ru_utime) + tv(ru.ru_stime);
	FILE *f = stderr;
	if (out && !(f = fopen(out, "w"))) {
		perror(out);
		return 127;
	}
	fprintf(f, "%.6f %.6f %ld\n", wall, cpu, ru.ru_maxrss);
	if (f != stderr)
		fclose(f);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
