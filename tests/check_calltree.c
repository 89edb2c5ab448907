/*
 * check_calltree.c - the call paths trie (hp_calltree): one node per
 * distinct path, calls and times per node, callees in the order of first
 * call or of hp_calltree_sort, threads sharing the tree, lost frames not
 * counted, and a walk that neither recurses nor slows down on deep paths.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#include "../symbolize/hp_calltree.h"

enum { A, B, C, D };

static struct hp_calltree tree;
static struct hp_cpath path, path2;

static void setup(void)
{
	ck_assert_int_eq(hp_calltree_init(&tree), 0);
	memset(&path, 0, sizeof(path));
	memset(&path2, 0, sizeof(path2));
}

static void teardown(void)
{
	hp_calltree_free(&tree);
	free(path.node);
	free(path2.node);
}

static void en(struct hp_cpath *p, uint32_t fn)
{
	struct hp_vframe f = { .fn = fn };
	ck_assert_int_eq(hp_calltree_enter(&tree, p, &f), 0);
}

static uint32_t ex_lost(struct hp_cpath *p, uint32_t fn, double dur, double self, int lost)
{
	struct hp_vframe f = { .fn = fn, .dur = dur, .self = self, .lost = lost };
	uint32_t id = hp_calltree_exit(&tree, p, &f);
	ck_assert_uint_ne(id, HP_CNODE_NONE);
	ck_assert_uint_eq(tree.node[id].fn, fn);
	return id;
}

static uint32_t ex(struct hp_cpath *p, uint32_t fn, double dur, double self)
{
	return ex_lost(p, fn, dur, self, 0);
}

/* The node of the path fns[0..n-1] from the root, or HP_CNODE_NONE. */
static uint32_t node_at(const uint32_t *fns, size_t n)
{
	uint32_t id = HP_CNODE_ROOT;
	for (size_t i = 0; i < n && id != HP_CNODE_NONE; i++) {
		uint32_t c = tree.node[id].child;
		while (c != HP_CNODE_NONE && tree.node[c].fn != fns[i])
			c = tree.node[c].next;
		id = c;
	}
	return id;
}

static void assert_node(const uint32_t *fns, size_t n, uint64_t calls, double total, double self,
			double min, double max)
{
	uint32_t id = node_at(fns, n);
	ck_assert_uint_ne(id, HP_CNODE_NONE);
	const struct hp_cnode *c = &tree.node[id];
	ck_assert_msg(c->calls == calls && c->total == total && c->self == self,
		      "node %u: calls %llu total %g self %g, want %llu %g %g", id,
		      (unsigned long long)c->calls, c->total, c->self, (unsigned long long)calls,
		      total, self);
	if (calls) {
		ck_assert(c->min == min);
		ck_assert(c->max == max);
	}
	ck_assert_uint_eq(c->depth, n - 1);
}

/* The fns of a node's callees, in list order, into out; their number. */
static size_t callees(uint32_t id, uint32_t *out, size_t max)
{
	size_t n = 0;
	for (uint32_t c = tree.node[id].child; c != HP_CNODE_NONE && n < max; c = tree.node[c].next)
		out[n++] = tree.node[c].fn;
	return n;
}

struct seen {
	uint32_t *id;
	size_t n, cap, stop_at;
};

static int record(void *arg, const struct hp_calltree *t, uint32_t id)
{
	struct seen *s = arg;
	(void)t;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->id = realloc(s->id, s->cap * sizeof(*s->id));
		ck_assert_ptr_nonnull(s->id);
	}
	s->id[s->n++] = id;
	return s->stop_at && s->n == s->stop_at ? 7 : 0;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_paths)
{
	/* A { B { C } B { } C } A { C } */
	en(&path, A);
	en(&path, B);
	en(&path, C);
	ex(&path, C, 30, 30);
	ex(&path, B, 50, 20);
	en(&path, B);
	ex(&path, B, 10, 10);
	en(&path, C);
	ex(&path, C, 5, 5);
	ex(&path, A, 100, 35);
	en(&path, A);
	en(&path, C);
	ex(&path, C, 7, 7);
	ex(&path, A, 9, 2);
	ck_assert_uint_eq(path.depth, 0);
	ck_assert_uint_eq(tree.n, 5); /* root, A, A;B, A;B;C, A;C */
	assert_node((uint32_t[]){ A }, 1, 2, 109, 37, 9, 100);
	assert_node((uint32_t[]){ A, B }, 2, 2, 60, 30, 10, 50);
	assert_node((uint32_t[]){ A, B, C }, 3, 1, 30, 30, 30, 30);
	assert_node((uint32_t[]){ A, C }, 2, 2, 12, 12, 5, 7);
}
END_TEST

START_TEST(test_recursion_is_not_collapsed)
{
	/* A { A { A } } B { A }: each level of A a node, A under B another */
	en(&path, A);
	en(&path, A);
	en(&path, A);
	ex(&path, A, 1, 1);
	ex(&path, A, 3, 2);
	ex(&path, A, 6, 3);
	en(&path, B);
	en(&path, A);
	ex(&path, A, 2, 2);
	ex(&path, B, 4, 2);
	ck_assert_uint_eq(tree.n, 6);
	assert_node((uint32_t[]){ A }, 1, 1, 6, 3, 6, 6);
	assert_node((uint32_t[]){ A, A }, 2, 1, 3, 2, 3, 3);
	assert_node((uint32_t[]){ A, A, A }, 3, 1, 1, 1, 1, 1);
	assert_node((uint32_t[]){ B, A }, 2, 1, 2, 2, 2, 2);
}
END_TEST

START_TEST(test_callees_in_order_of_first_call)
{
	en(&path, A);
	for (uint32_t f = 0; f < 3; f++) {
		uint32_t fn[] = { D, B, C };
		en(&path, fn[f]);
		ex(&path, fn[f], 1, 1);
	}
	en(&path, B);
	ex(&path, B, 1, 1);
	ex(&path, A, 10, 6);
	uint32_t got[8];
	ck_assert_uint_eq(callees(node_at((uint32_t[]){ A }, 1), got, 8), 3);
	ck_assert_uint_eq(got[0], D);
	ck_assert_uint_eq(got[1], B);
	ck_assert_uint_eq(got[2], C);
}
END_TEST

static int by_total_desc(const struct hp_calltree *t, uint32_t a, uint32_t b, void *arg)
{
	(void)arg;
	double x = t->node[a].total, y = t->node[b].total;
	return x > y ? -1 : x < y ? 1 : a < b ? -1 : a > b;
}

START_TEST(test_sort_then_append)
{
	/* A { B:1 C:5 D:3 }, then sorted: C D B; a new callee afterwards goes last */
	en(&path, A);
	uint32_t fn[] = { B, C, D };
	double dur[] = { 1, 5, 3 };
	for (int i = 0; i < 3; i++) {
		en(&path, fn[i]);
		ex(&path, fn[i], dur[i], dur[i]);
	}
	ck_assert_int_eq(hp_calltree_sort(&tree, by_total_desc, NULL), 0);
	uint32_t got[8], a = node_at((uint32_t[]){ A }, 1);
	ck_assert_uint_eq(callees(a, got, 8), 3);
	ck_assert_uint_eq(got[0], C);
	ck_assert_uint_eq(got[1], D);
	ck_assert_uint_eq(got[2], B);
	en(&path, A);
	ex(&path, A, 1, 1);
	ck_assert_uint_eq(callees(a, got, 8), 4);
	ck_assert_uint_eq(got[3], A);
	ex(&path, A, 20, 10);
}
END_TEST

START_TEST(test_threads_share_paths)
{
	/* two threads interleaved, each A { B }: one A, one A;B with two calls each */
	en(&path, A);
	en(&path2, A);
	en(&path, B);
	en(&path2, B);
	ex(&path2, B, 2, 2);
	ex(&path, B, 4, 4);
	ex(&path2, A, 5, 3);
	ex(&path, A, 9, 5);
	ck_assert_uint_eq(tree.n, 3);
	assert_node((uint32_t[]){ A }, 1, 2, 14, 8, 5, 9);
	assert_node((uint32_t[]){ A, B }, 2, 2, 6, 6, 2, 4);
}
END_TEST

START_TEST(test_lost_frames_not_counted)
{
	/* A { B } returned, then A's own exit lost: A;B counted, A not */
	en(&path, A);
	en(&path, B);
	ex(&path, B, 3, 3);
	ex_lost(&path, A, 10, 7, 1);
	assert_node((uint32_t[]){ A }, 1, 0, 0, 0, 0, 0);
	assert_node((uint32_t[]){ A, B }, 2, 1, 3, 3, 3, 3);
	struct hp_vframe f = { .fn = A };
	ck_assert_uint_eq(hp_calltree_exit(&tree, &path, &f), HP_CNODE_NONE); /* nothing open */
}
END_TEST

START_TEST(test_walk_preorder_and_stop)
{
	/* A { B { C } D } C: walk A, A;B, A;B;C, A;D, C */
	en(&path, A);
	en(&path, B);
	en(&path, C);
	ex(&path, C, 1, 1);
	ex(&path, B, 1, 1);
	en(&path, D);
	ex(&path, D, 1, 1);
	ex(&path, A, 1, 1);
	en(&path, C);
	ex(&path, C, 1, 1);
	struct seen s = { 0 };
	ck_assert_int_eq(hp_calltree_walk(&tree, record, &s), 0);
	uint32_t want[][3] = { { A }, { A, B }, { A, B, C }, { A, D }, { C } };
	size_t len[] = { 1, 2, 3, 2, 1 };
	ck_assert_uint_eq(s.n, 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_uint_eq(s.id[i], node_at(want[i], len[i]));
	s.n = 0;
	s.stop_at = 2;
	ck_assert_int_eq(hp_calltree_walk(&tree, record, &s), 7);
	ck_assert_uint_eq(s.n, 2);
	free(s.id);
}
END_TEST

/* -------------------------------------------------------------- limits */

START_TEST(test_empty)
{
	struct seen s = { 0 };
	ck_assert_int_eq(hp_calltree_walk(&tree, record, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(hp_calltree_sort(&tree, by_total_desc, NULL), 0);
	struct hp_vframe f = { .fn = A };
	ck_assert_uint_eq(hp_calltree_exit(&tree, &path, &f), HP_CNODE_NONE);
}
END_TEST

/* A million levels of one function: a node each, walked in order with no
 * recursion (a recursive walk would overflow the stack), and made in time:
 * the hash once sent such a path through one cluster of slots. */
/* ------------------------------------------------ the paths as text */

static struct hp_fntab names;

/* Interns the names in order: function i is names[i]. */
static void name_functions(const char *const *list, size_t n)
{
	memset(&names, 0, sizeof(names));
	for (size_t i = 0; i < n; i++) {
		struct hp_symbol sym = { .name = list[i], .module = "m", .offset = 16 * i };
		ck_assert_uint_eq(hp_fntab_intern(&names, &sym), i);
	}
}

struct texts {
	struct hp_pathtext p;
	char all[256];
};

static int text_of(void *arg, const struct hp_calltree *t, uint32_t id)
{
	struct texts *x = arg;
	size_t len;
	const char *s = hp_pathtext_of(&x->p, t, &names, id, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s), len);
	strncat(x->all, s, sizeof(x->all) - strlen(x->all) - 2);
	strcat(x->all, "|");
	return 0;
}

/* Each node's path from the root, ';' between names and ':' for a ';' in
 * one, however the walk goes up and down; their bytes counted alike. */
START_TEST(test_path_text)
{
	static const char *const list[] = { "main", "a;b", "leaf" };
	name_functions(list, 3);
	en(&path, 0);
	en(&path, 1);
	en(&path, 2);
	ex(&path, 2, 1, 1);
	ex(&path, 1, 2, 1);
	en(&path, 2);
	ex(&path, 2, 1, 1);
	ex(&path, 0, 4, 1);
	struct texts x = { 0 };
	ck_assert_int_eq(hp_calltree_walk(&tree, text_of, &x), 0);
	ck_assert_str_eq(x.all, "main|main;a:b|main;a:b;leaf|main;leaf|");
	uint32_t deepest;
	ck_assert_uint_eq(hp_calltree_path_bytes(&tree, &names, &deepest), 4 + 8 + 13 + 9);
	ck_assert_uint_eq(deepest, 3);
	char line[256];
	ck_assert_int_eq(hp_calltree_paths_too_big(&tree, &names, "x", line, sizeof(line)), 0);
	hp_pathtext_free(&x.p);
	hp_fntab_free(&names);
}
END_TEST

/* A recursion N deep makes N paths of up to N names: 46341 levels of a
 * one-letter name take 46341^2 bytes, 2.1 GB, and earn the warning (from
 * 1 GiB on); 20000 levels, 400 MB, do not. */
static void recurse(uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++)
		en(&path, 0);
	struct hp_vframe f = { .fn = 0, .dur = 1, .self = 1 };
	int bad = 0;
	for (uint32_t i = 0; i < depth; i++)
		bad |= hp_calltree_exit(&tree, &path, &f) == HP_CNODE_NONE;
	ck_assert_int_eq(bad, 0);
}

START_TEST(test_paths_too_big)
{
	static const char *const list[] = { "r" };
	name_functions(list, 1);
	char line[256];
	recurse(20000);
	uint32_t deepest;
	ck_assert_uint_eq(hp_calltree_path_bytes(&tree, &names, &deepest), 20000ull * 20000);
	ck_assert_int_eq(hp_calltree_paths_too_big(&tree, &names, "x", line, sizeof(line)), 0);
	hp_calltree_free(&tree);
	ck_assert_int_eq(hp_calltree_init(&tree), 0);
	recurse(46341);
	ck_assert_int_eq(hp_calltree_paths_too_big(&tree, &names, "the folded stacks", line, sizeof(line)), 1);
	ck_assert_msg(strstr(line, "the folded stacks may take up to 2.1 GB") && strstr(line, "46341 calls deep") &&
			      strstr(line, "--depth=N"), "%s", line);
	hp_fntab_free(&names);
}
END_TEST

START_TEST(test_deep_path)
{
	enum { DEPTH = 1000000 };
	/* Asserted once each, not per call: a check costs a write to a pipe. */
	int bad = 0;
	struct hp_vframe f = { .fn = A, .self = 1 };
	for (int i = 0; i < DEPTH; i++)
		bad |= hp_calltree_enter(&tree, &path, &f);
	for (int i = 0; i < DEPTH; i++) {
		f.dur = i + 1;
		bad |= hp_calltree_exit(&tree, &path, &f) == HP_CNODE_NONE;
	}
	ck_assert_int_eq(bad, 0);
	en(&path, B); /* a second root after the deep path */
	ex(&path, B, 1, 1);
	ck_assert_uint_eq(tree.n, DEPTH + 2);
	struct seen s = { 0 };
	ck_assert_int_eq(hp_calltree_walk(&tree, record, &s), 0);
	ck_assert_uint_eq(s.n, DEPTH + 1);
	uint32_t wrong = 0;
	for (uint32_t i = 0; i < DEPTH; i++) {
		const struct hp_cnode *c = &tree.node[s.id[i]];
		wrong += c->depth != i || c->total != DEPTH - i || c->calls != 1;
	}
	ck_assert_uint_eq(wrong, 0);
	ck_assert_uint_eq(tree.node[s.id[DEPTH]].fn, B);
	ck_assert_int_eq(hp_calltree_sort(&tree, by_total_desc, NULL), 0);
	free(s.id);
}
END_TEST

START_TEST(test_wide_sort)
{
	enum { WIDE = 50000 };
	en(&path, A);
	int bad = 0;
	for (uint32_t i = 0; i < WIDE; i++) {
		struct hp_vframe f = { .fn = 10 + i, .dur = (double)((i * 7919u) % WIDE) };
		bad |= hp_calltree_enter(&tree, &path, &f);
		bad |= hp_calltree_exit(&tree, &path, &f) == HP_CNODE_NONE;
	}
	ck_assert_int_eq(bad, 0);
	ex(&path, A, 1e9, 0);
	ck_assert_int_eq(hp_calltree_sort(&tree, by_total_desc, NULL), 0);
	uint32_t a = node_at((uint32_t[]){ A }, 1), n = 0;
	double prev = 1e18;
	uint32_t unordered = 0;
	for (uint32_t c = tree.node[a].child; c != HP_CNODE_NONE; c = tree.node[c].next, n++) {
		unordered += tree.node[c].total > prev;
		prev = tree.node[c].total;
	}
	ck_assert_uint_eq(unordered, 0);
	ck_assert_uint_eq(n, WIDE);
	ck_assert_uint_eq(tree.node[tree.node[a].last].next, HP_CNODE_NONE);
}
END_TEST

static Suite *calltree_suite(void)
{
	Suite *s = suite_create("calltree");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_paths);
	tcase_add_test(core, test_recursion_is_not_collapsed);
	tcase_add_test(core, test_callees_in_order_of_first_call);
	tcase_add_test(core, test_sort_then_append);
	tcase_add_test(core, test_threads_share_paths);
	tcase_add_test(core, test_lost_frames_not_counted);
	tcase_add_test(core, test_walk_preorder_and_stop);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_empty);
	tcase_add_test(limits, test_deep_path);
	tcase_add_test(limits, test_path_text);
	tcase_add_test(limits, test_paths_too_big);
	tcase_add_test(limits, test_wide_sort);
	tcase_set_timeout(limits, 30);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(calltree_suite());
}
