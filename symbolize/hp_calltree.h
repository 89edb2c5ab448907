/*
 * hp_calltree.h - the distinct call paths of the calls a view is shown,
 * as a tree (a trie of function ids), with the calls and times of each
 * path: what tree, folded stacks, callgrind and pprof are made of. Memory
 * grows with distinct paths, never with calls. Threads share the tree;
 * each keeps its place in it (struct hp_cpath).
 */
#ifndef HP_CALLTREE_H
#define HP_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "hp_view.h"

#define HP_CNODE_ROOT 0u
#define HP_CNODE_NONE UINT32_MAX

struct hp_cnode {
	uint32_t fn;            /* hp_fntab id; the root has none */
	uint32_t parent;
	uint32_t child, next;   /* first callee's node, next sibling's */
	uint32_t last;          /* last callee's node */
	uint32_t depth;         /* 0 for the root's children */
	uint32_t hot;           /* the callee's node found last: a loop calls the
				 * same callee again and again, so no hash then */
	uint64_t calls;
	double total, self, min, max; /* ns */
};

struct hp_calltree {
	struct hp_cnode *node;  /* node[0] is the root, above every thread's first frame */
	uint32_t n, cap;
	uint32_t *slot;         /* hash of (parent, fn): node + 1, 0 empty */
	size_t slot_cap;
};

/* A thread's place: the nodes of its open shown frames. */
struct hp_cpath {
	uint32_t *node;
	size_t depth, cap;
};

int hp_calltree_init(struct hp_calltree *t);
/* The node of fn called from parent, made if new; HP_CNODE_NONE out of memory. */
uint32_t hp_calltree_child(struct hp_calltree *t, uint32_t parent, uint32_t fn);
/* A view's enter and exit, on the thread's path. 0, or -1 out of memory. */
int hp_calltree_enter(struct hp_calltree *t, struct hp_cpath *p, const struct hp_vframe *f);
/* The exit's node, its call counted (unless lost), or HP_CNODE_NONE. */
uint32_t hp_calltree_exit(struct hp_calltree *t, struct hp_cpath *p, const struct hp_vframe *f);
/* The path of the thread, made at its first use (t->data). NULL out of memory. */
struct hp_cpath *hp_cpath_of(struct hp_vthread *t);
/* Frees a thread's path (its data): the views' hp_view_ops.thread_free. */
void hp_cpath_free(void *data);
/* Orders the callees of every node by cmp (qsort's sense; arg is passed
 * on), for views that show the heaviest first. Calls made after it still
 * append. 0, or -1 out of memory (the order is then left as it was). */
int hp_calltree_sort(struct hp_calltree *t,
		     int (*cmp)(const struct hp_calltree *t, uint32_t a, uint32_t b, void *arg),
		     void *arg);
/* Visits every node but the root, callers before callees, callees in the
 * order of their first call (or of hp_calltree_sort). Never recurses, so a
 * path of any depth is fine. Stops at the first non-zero return of fn. */
int hp_calltree_walk(const struct hp_calltree *t, int (*fn)(void *arg, const struct hp_calltree *t,
							    uint32_t node), void *arg);
void hp_calltree_free(struct hp_calltree *t);

/*
 * The text of a node's path: the names from the root joined by ';', a ';'
 * in a name (none in C or C++) written as ':', as folded stacks have it.
 * Built a level at a time, for nodes given callers first (the walk's
 * order); it keeps its buffers from one node to the next.
 */
struct hp_pathtext {
	char *text;
	size_t *len_at; /* text's length after the name at each depth */
	size_t cap, depth_cap;
};
/* id's path, NUL-terminated, valid until the next call; its length in
 * *len. NULL out of memory. */
const char *hp_pathtext_of(struct hp_pathtext *p, const struct hp_calltree *t,
			   const struct hp_fntab *fns, uint32_t id, size_t *len);
void hp_pathtext_free(struct hp_pathtext *p);
/* The bytes of the paths of every node with calls, as hp_pathtext writes
 * them: a recursion N deep makes N paths of up to N names, N^2 / 2 names
 * in all. *deepest: the most calls deep. 0 out of memory. */
uint64_t hp_calltree_path_bytes(const struct hp_calltree *t, const struct hp_fntab *fns,
				uint32_t *deepest);
/* 1, and the warning in line, if what (a view's output: "the folded
 * stacks") would take HP_VIEW_WARN_BYTES or more in paths. */
int hp_calltree_paths_too_big(const struct hp_calltree *t, const struct hp_fntab *fns,
			      const char *what, char *line, size_t len);

#endif
