/*
 * names_reuse.c - a plugin unloaded and another loaded at its address.
 *   names_reuse DIR once   dlopen DIR/liba.so, alpha_two 11 times, dlclose,
 *                          dlopen DIR/libb.so, beta_two and beta_three 13
 *                          times each (libb stays loaded)
 *   names_reuse DIR N      N rounds alternating liba (alpha_two once) and
 *                          libb (beta_two once, beta_three twice), each
 *                          dlclosed after its round
 * Exits 3 if libb was not loaded at liba's address (once), or if fewer than
 * 9 in 10 rounds reused the address of the one before: the test would not
 * test.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*fn_t)(int);

static char dir[4096];

static void *open_plugin(const char *name, ElfW(Addr) *base)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	void *h = dlopen(path, RTLD_NOW);
	struct link_map *lm = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		fprintf(stderr, "names_reuse: %s\n", dlerror());
		exit(2);
	}
	*base = lm->l_addr;
	return h;
}

static fn_t function(void *h, const char *name)
{
	fn_t f = (fn_t)dlsym(h, name);
	if (!f) {
		fprintf(stderr, "names_reuse: %s\n", dlerror());
		exit(2);
	}
	return f;
}

__attribute__((noinline)) void call_n(fn_t f, int n)
{
	for (int i = 0; i < n; i++)
		f(i);
}

static void same_place(ElfW(Addr) a, ElfW(Addr) b)
{
	if (a != b) {
		fprintf(stderr, "names_reuse: libb.so at %#lx, not at liba.so's %#lx\n",
			(unsigned long)b, (unsigned long)a);
		exit(3);
	}
}

static void once(void)
{
	ElfW(Addr) base_a, base_b;
	void *a = open_plugin("liba.so", &base_a);
	call_n(function(a, "alpha_two"), 11);
	dlclose(a);
	void *b = open_plugin("libb.so", &base_b);
	same_place(base_a, base_b);
	call_n(function(b, "beta_two"), 13);
	call_n(function(b, "beta_three"), 13);
}

/* Other mappings made meanwhile (the tracer's buffers) can move the next
 * object now and then: most rounds, not all, must reuse the address. */
static void rounds(int n)
{
	ElfW(Addr) last = 0, base;
	int reused = 0;
	for (int i = 0; i < n; i++) {
		void *h = open_plugin(i % 2 ? "libb.so" : "liba.so", &base);
		reused += i && base == last;
		last = base;
		if (i % 2) {
			call_n(function(h, "beta_two"), 1);
			call_n(function(h, "beta_three"), 2);
		} else {
			call_n(function(h, "alpha_two"), 1);
		}
		dlclose(h);
	}
	if (n > 1 && reused < (n - 1) * 9 / 10) {
		fprintf(stderr, "names_reuse: only %d of %d plugins loaded at the address of the one before\n",
			reused, n - 1);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: names_reuse DIR once|ROUNDS\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	if (!strcmp(argv[2], "once"))
		once();
	else
		rounds(atoi(argv[2]));
	printf("names_reuse done\n");
	return 0;
}
