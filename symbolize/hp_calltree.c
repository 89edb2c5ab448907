/*
 * hp_calltree.c - call paths as a trie with one hash table of (parent, fn).
 */
#define _GNU_SOURCE
#include "hp_calltree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every bit of the key reaches the low bits the table's mask keeps: a
 * multiply alone left them to fn, so a deep recursion (one fn, parents
 * 1..N) probed through one cluster, quadratic (100000 levels: 4 s). */
static size_t hash_edge(uint32_t parent, uint32_t fn)
{
	uint64_t h = (uint64_t)parent << 32 | fn;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (size_t)h;
}

static int rehash(struct hp_calltree *t)
{
	size_t cap = t->slot_cap ? t->slot_cap * 2 : 1024;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (uint32_t i = 1; i < t->n; i++) {
		size_t s = hash_edge(t->node[i].parent, t->node[i].fn) & (cap - 1);
		while (slot[s])
			s = (s + 1) & (cap - 1);
		slot[s] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->slot_cap = cap;
	return 0;
}

static uint32_t new_node(struct hp_calltree *t, uint32_t parent, uint32_t fn)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct hp_cnode *n = realloc(t->node, cap * sizeof(*n));
		if (!n)
			return HP_CNODE_NONE;
		t->node = n;
		t->cap = cap;
	}
	uint32_t id = t->n++;
	struct hp_cnode *c = memset(&t->node[id], 0, sizeof(*c));
	c->fn = fn;
	c->parent = parent;
	c->child = c->next = c->last = c->hot = HP_CNODE_NONE;
	c->min = -1;
	if (parent != HP_CNODE_NONE) {
		struct hp_cnode *p = &t->node[parent];
		c->depth = parent == HP_CNODE_ROOT ? 0 : p->depth + 1;
		/* Appended, so that callees list in the order of their first call. */
		if (p->last == HP_CNODE_NONE)
			p->child = id;
		else
			t->node[p->last].next = id;
		p->last = id;
	}
	return id;
}

int hp_calltree_init(struct hp_calltree *t)
{
	memset(t, 0, sizeof(*t));
	return new_node(t, HP_CNODE_NONE, 0) == HP_CNODE_NONE ? -1 : 0;
}

static uint32_t find_or_add(struct hp_calltree *t, uint32_t parent, uint32_t fn)
{
	if ((size_t)(t->n + 1) * 2 > t->slot_cap && rehash(t))
		return HP_CNODE_NONE;
	size_t mask = t->slot_cap - 1, s = hash_edge(parent, fn) & mask;
	for (; t->slot[s]; s = (s + 1) & mask) {
		const struct hp_cnode *c = &t->node[t->slot[s] - 1];
		if (c->parent == parent && c->fn == fn)
			return t->slot[s] - 1;
	}
	uint32_t id = new_node(t, parent, fn);
	if (id != HP_CNODE_NONE)
		t->slot[s] = id + 1;
	return id;
}

uint32_t hp_calltree_child(struct hp_calltree *t, uint32_t parent, uint32_t fn)
{
	uint32_t hot = t->node[parent].hot;
	if (hot != HP_CNODE_NONE && t->node[hot].fn == fn)
		return hot;
	uint32_t id = find_or_add(t, parent, fn);
	if (id != HP_CNODE_NONE)
		t->node[parent].hot = id; /* node may have moved: index again */
	return id;
}

int hp_calltree_enter(struct hp_calltree *t, struct hp_cpath *p, const struct hp_vframe *f)
{
	if (p->depth == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		uint32_t *n = realloc(p->node, cap * sizeof(*n));
		if (!n)
			return -1;
		p->node = n;
		p->cap = cap;
	}
	uint32_t parent = p->depth ? p->node[p->depth - 1] : HP_CNODE_ROOT;
	uint32_t id = hp_calltree_child(t, parent, f->fn);
	if (id == HP_CNODE_NONE)
		return -1;
	p->node[p->depth++] = id;
	return 0;
}

uint32_t hp_calltree_exit(struct hp_calltree *t, struct hp_cpath *p, const struct hp_vframe *f)
{
	if (!p->depth)
		return HP_CNODE_NONE;
	uint32_t id = p->node[--p->depth];
	struct hp_cnode *c = &t->node[id];
	if (f->lost)
		return id;
	c->calls++;
	c->total += f->dur;
	c->self += f->self;
	if (c->min < 0 || f->dur < c->min)
		c->min = f->dur;
	if (f->dur > c->max)
		c->max = f->dur;
	return id;
}

struct hp_cpath *hp_cpath_of(struct hp_vthread *t)
{
	if (!t->data)
		t->data = calloc(1, sizeof(struct hp_cpath));
	return t->data;
}

void hp_cpath_free(void *data)
{
	struct hp_cpath *p = data;
	if (p)
		free(p->node);
	free(p);
}

int hp_calltree_walk(const struct hp_calltree *t,
		     int (*fn)(void *arg, const struct hp_calltree *t, uint32_t node), void *arg)
{
	/* Iterative: a path can be as deep as the deepest recursion. */
	uint32_t id = t->n > 1 ? t->node[HP_CNODE_ROOT].child : HP_CNODE_NONE;
	while (id != HP_CNODE_NONE) {
		int rc = fn(arg, t, id);
		if (rc)
			return rc;
		const struct hp_cnode *c = &t->node[id];
		if (c->child != HP_CNODE_NONE) {
			id = c->child;
			continue;
		}
		while (id != HP_CNODE_ROOT && t->node[id].next == HP_CNODE_NONE)
			id = t->node[id].parent;
		id = id == HP_CNODE_ROOT ? HP_CNODE_NONE : t->node[id].next;
	}
	return 0;
}

struct sort_by {
	const struct hp_calltree *t;
	int (*cmp)(const struct hp_calltree *t, uint32_t a, uint32_t b, void *arg);
	void *arg;
};

static int by_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_by *s = arg;
	return s->cmp(s->t, *(const uint32_t *)a, *(const uint32_t *)b, s->arg);
}

static void sort_children(struct hp_calltree *t, uint32_t id, uint32_t *ids, struct sort_by *s)
{
	struct hp_cnode *p = &t->node[id];
	size_t n = 0;
	for (uint32_t c = p->child; c != HP_CNODE_NONE; c = t->node[c].next)
		ids[n++] = c;
	if (n < 2)
		return;
	qsort_r(ids, n, sizeof(*ids), by_cmp, s);
	p->child = ids[0];
	for (size_t i = 0; i + 1 < n; i++)
		t->node[ids[i]].next = ids[i + 1];
	t->node[ids[n - 1]].next = HP_CNODE_NONE;
	p->last = ids[n - 1];
}

int hp_calltree_sort(struct hp_calltree *t,
		     int (*cmp)(const struct hp_calltree *t, uint32_t a, uint32_t b, void *arg),
		     void *arg)
{
	/* One buffer for every node's callees: a node has fewer than n. */
	uint32_t *ids = malloc((t->n ? t->n : 1) * sizeof(*ids));
	if (!ids)
		return -1;
	struct sort_by s = { t, cmp, arg };
	for (uint32_t i = 0; i < t->n; i++)
		sort_children(t, i, ids, &s);
	free(ids);
	return 0;
}

void hp_calltree_free(struct hp_calltree *t)
{
	free(t->node);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

const char *hp_pathtext_of(struct hp_pathtext *p, const struct hp_calltree *t,
			   const struct hp_fntab *fns, uint32_t id, size_t *len)
{
	const struct hp_cnode *c = &t->node[id];
	if (hp_view_grow((void **)&p->len_at, &p->depth_cap, (size_t)c->depth + 1, sizeof(*p->len_at)))
		return NULL;
	size_t at = c->depth ? p->len_at[c->depth - 1] : 0;
	const char *name = hp_fntab_name(fns, c->fn);
	size_t n = strlen(name);
	if (hp_view_grow((void **)&p->text, &p->cap, at + n + 2, 1))
		return NULL;
	if (c->depth)
		p->text[at++] = ';';
	for (size_t i = 0; i < n; i++)
		p->text[at + i] = name[i] == ';' ? ':' : name[i];
	p->text[at + n] = 0;
	p->len_at[c->depth] = at + n;
	*len = at + n;
	return p->text;
}

void hp_pathtext_free(struct hp_pathtext *p)
{
	free(p->text);
	free(p->len_at);
	*p = (struct hp_pathtext){ 0 };
}

uint64_t hp_calltree_path_bytes(const struct hp_calltree *t, const struct hp_fntab *fns,
				uint32_t *deepest)
{
	/* A node is made after its caller's: one pass in id order. */
	uint64_t *len = malloc((t->n ? t->n : 1) * sizeof(*len)), bytes = 0;
	*deepest = 0;
	if (!len)
		return 0;
	len[HP_CNODE_ROOT] = 0;
	for (uint32_t id = 1; id < t->n; id++) {
		const struct hp_cnode *c = &t->node[id];
		len[id] = len[c->parent] + (c->depth ? 1 : 0) + strlen(hp_fntab_name(fns, c->fn));
		if (c->calls)
			bytes += len[id];
		if (c->depth + 1 > *deepest)
			*deepest = c->depth + 1;
	}
	free(len);
	return bytes;
}

int hp_calltree_paths_too_big(const struct hp_calltree *t, const struct hp_fntab *fns,
			      const char *what, char *line, size_t len)
{
	uint32_t deepest;
	uint64_t bytes = hp_calltree_path_bytes(t, fns, &deepest);
	if (bytes < HP_VIEW_WARN_BYTES)
		return 0;
	snprintf(line, len, "%s may take up to %.1f GB: call paths go %u calls deep (a recursion "
		 "N deep makes N paths of up to N names); --depth=N makes them smaller",
		 what, (double)bytes / 1e9, deepest);
	return 1;
}
