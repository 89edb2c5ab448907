/*
 * hp_procs.h - the processes of a recorded process tree: which trace is
 * whose child, and the order a per-process report shows them in.
 */
#ifndef HP_PROCS_H
#define HP_PROCS_H

#include <stddef.h>
#include <stdint.h>

struct hp_proc {
	uint32_t pid;
	uint32_t ppid;          /* 0: unknown (a trace older than format 1.1) */
	uint64_t start_ns;      /* CLOCK_REALTIME at the trace's start */
};

/*
 * order[0..n) gets the indices of procs as a tree walked depth first: each
 * process after its parent, brothers by start time (then pid); a process
 * whose parent is not among them is a root. depth[i] is order[i]'s depth
 * (0 for a root). A pid seen twice (reused) is one more root. 0, or -1 if
 * out of memory.
 */
int hp_procs_order(const struct hp_proc *procs, size_t n, size_t *order, unsigned *depth);

#endif
