/*
 * hp_pdb.c - the llvm-symbolizer coprocess. Its standard input is a socket,
 * not a pipe, so that a symbolizer that died makes send() fail with EPIPE
 * (MSG_NOSIGNAL) instead of killing the tool with SIGPIPE; a library must
 * not change the process's signal dispositions.
 *
 * Protocol (llvm-symbolizer's default output style): a line `"FILE" 0xADDR`
 * in; out come the function's name, `FILE:LINE:COLUMN`, then an empty line
 * (`??` and `??:0:0` for what it does not know).
 */
#define _GNU_SOURCE
#include "hp_pdb.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct hp_pdb {
	pid_t pid;
	int to;     /* the child's stdin */
	FILE *from; /* its stdout */
	int dead;
};

static const char *symbolizer_program(void)
{
	const char *env = getenv("HOOKPROF_LLVM_SYMBOLIZER");
	return env && *env ? env : "llvm-symbolizer";
}

static int spawn(struct hp_pdb *p, const char *prog, int in[2], int out[2])
{
	char *const argv[] = { (char *)prog, "--no-inlines", "--demangle", NULL };
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return ENOMEM;
	posix_spawn_file_actions_adddup2(&fa, in[1], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawnp(&p->pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

struct hp_pdb *hp_pdb_start(char *err, size_t errlen)
{
	const char *prog = symbolizer_program();
	struct hp_pdb *p = calloc(1, sizeof(*p));
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "%s: %s", prog, p ? strerror(errno) : "out of memory");
		goto fail;
	}
	int rc = spawn(p, prog, in, out);
	close(in[1]);
	close(out[1]);
	in[1] = out[1] = -1;
	if (rc != 0) {
		snprintf(err, errlen, "cannot run %s: %s", prog, strerror(rc));
		goto fail;
	}
	p->to = in[0];
	if (!(p->from = fdopen(out[0], "r"))) {
		snprintf(err, errlen, "out of memory");
		in[0] = -1;
		out[0] = -1;
		hp_pdb_stop(p);
		return NULL;
	}
	return p;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	free(p);
	return NULL;
}

static int send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One line without its newline, malloc'd; NULL at the end of the stream. */
static char *read_line(FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = 0;
	return line;
}

/* "FILE:LINE:COLUMN" into file and line; the file itself may hold colons. */
static void split_location(const char *loc, char **file, int *line)
{
	const char *col = strrchr(loc, ':');
	const char *ln = col ? memrchr(loc, ':', (size_t)(col - loc)) : NULL;
	*file = NULL;
	*line = 0;
	if (!ln || !strncmp(loc, "??", 2))
		return;
	*line = atoi(ln + 1);
	if (*line > 0)
		*file = strndup(loc, (size_t)(ln - loc));
	else
		*line = 0;
}

int hp_pdb_lookup(struct hp_pdb *p, const char *path, uint64_t addr, char **name, char **file,
		  int *line)
{
	char *query = NULL;
	*name = *file = NULL;
	*line = 0;
	if (p->dead || strchr(path, '"') || strchr(path, '\n') ||
	    asprintf(&query, "\"%s\" 0x%" PRIx64 "\n", path, addr) < 0)
		return -1;
	int sent = send_all(p->to, query, strlen(query));
	free(query);
	char *fn = sent == 0 ? read_line(p->from) : NULL;
	char *loc = fn ? read_line(p->from) : NULL;
	char *blank = loc ? read_line(p->from) : NULL;
	int found = fn && loc && blank && *fn && strcmp(fn, "??") != 0;
	p->dead |= !blank;
	if (found) {
		*name = fn;
		fn = NULL;
		split_location(loc, file, line);
	}
	free(fn);
	free(loc);
	free(blank);
	return found ? 0 : -1;
}

void hp_pdb_stop(struct hp_pdb *p)
{
	if (!p)
		return;
	if (p->to >= 0)
		close(p->to);
	if (p->from)
		fclose(p->from);
	if (p->pid > 0)
		waitpid(p->pid, NULL, 0);
	free(p);
}
