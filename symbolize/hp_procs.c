/*
 * hp_procs.c - process tree order for per-process reports.
 */
#include "hp_procs.h"

#include <stdlib.h>

/* The parent's index: the one process with that pid started before the
 * child (a reused pid names the newest such one), or n. */
static size_t parent_of(const struct hp_proc *p, size_t n, size_t child)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		if (i == child || p[i].pid != p[child].ppid || p[i].start_ns > p[child].start_ns)
			continue;
		if (best == n || p[i].start_ns > p[best].start_ns)
			best = i;
	}
	return best;
}

static int earlier(const struct hp_proc *a, const struct hp_proc *b)
{
	return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->pid < b->pid;
}

/* The next process to show among those whose parent is `up` (n: roots). */
static size_t next_child(const struct hp_proc *p, size_t n, const size_t *up,
			 const unsigned char *done, size_t parent)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++)
		if (!done[i] && up[i] == parent && (best == n || earlier(&p[i], &p[best])))
			best = i;
	return best;
}

int hp_procs_order(const struct hp_proc *procs, size_t n, size_t *order, unsigned *depth)
{
	size_t *up = malloc((n ? n : 1) * sizeof(*up));
	size_t *stack = malloc((n + 1) * sizeof(*stack));
	unsigned char *done = calloc(n ? n : 1, 1);
	if (!up || !stack || !done) {
		free(up), free(stack), free(done);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		up[i] = parent_of(procs, n, i);
	size_t out = 0, top = 0;
	stack[top++] = n; /* the roots' pseudo parent */
	while (top) {
		size_t next = next_child(procs, n, up, done, stack[top - 1]);
		if (next == n) {
			top--;
			continue;
		}
		done[next] = 1;
		order[out] = next;
		depth[out++] = (unsigned)(top - 1);
		stack[top++] = next;
	}
	/* A cycle (pids reused in a loop) has no root: each becomes one. */
	for (size_t i = 0; i < n; i++)
		if (!done[i]) {
			order[out] = i;
			depth[out++] = 0;
		}
	free(up), free(stack), free(done);
	return 0;
}
