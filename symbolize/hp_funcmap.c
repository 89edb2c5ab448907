/*
 * hp_funcmap.c - dictionary indices to function ids, by module instance.
 */
#include "hp_funcmap.h"

#include <stdlib.h>
#include <string.h>

/* A segment of a module, [start, last], in an array sorted by start. */
struct seg_entry {
	uint64_t start, last;
	uint32_t module;
};

/* What a dictionary index maps to: one id, or (count > 1) the candidate
 * modules pool[first .. first + count), chosen per event by its tick. */
struct index_slot {
	uint32_t id;
	uint32_t first, count;
};

struct hp_funcmap {
	const struct hp_module *mods;
	struct seg_entry *seg;
	uint64_t *reach; /* reach[i]: the highest last of seg[0..i] */
	size_t nseg;
	struct index_slot *slot;
	size_t nslots, slot_cap;
	uint32_t *pool;
	size_t npool, pool_cap;
	/* (index, module) -> id for the indices chosen by tick */
	uint64_t *pair_key; /* (index << 32 | module) + 1; 0: empty */
	uint32_t *pair_id;
	size_t npairs, pair_cap;
	/* Every index so far is its own id (no address of several modules
	 * yet): the common case, where events need no rewriting. */
	int identity;
};

static int by_start(const void *x, const void *y)
{
	const struct seg_entry *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

static size_t count_segments(const struct hp_module *mods, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += mods[i].nseg;
	return total;
}

static int index_segments(struct hp_funcmap *fm, const struct hp_module *mods, size_t n)
{
	size_t total = count_segments(mods, n);
	fm->seg = malloc((total ? total : 1) * sizeof(*fm->seg));
	fm->reach = malloc((total ? total : 1) * sizeof(*fm->reach));
	if (!fm->seg || !fm->reach)
		return -1;
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < mods[i].nseg; j++) {
			const struct hp_segment *g = &mods[i].seg[j];
			if (!g->size)
				continue;
			uint64_t last = g->start + (g->size - 1);
			/* a segment reaching the top of the address space */
			if (last < g->start)
				last = UINT64_MAX;
			fm->seg[fm->nseg++] = (struct seg_entry){ g->start, last, (uint32_t)i };
		}
	qsort(fm->seg, fm->nseg, sizeof(*fm->seg), by_start);
	for (size_t i = 0; i < fm->nseg; i++)
		fm->reach[i] = i && fm->reach[i - 1] > fm->seg[i].last ? fm->reach[i - 1] : fm->seg[i].last;
	return 0;
}

struct hp_funcmap *hp_funcmap_new(const struct hp_module *modules, size_t n)
{
	struct hp_funcmap *fm = calloc(1, sizeof(*fm));
	if (!fm)
		return NULL;
	fm->mods = modules;
	fm->identity = 1;
	if (index_segments(fm, modules, n)) {
		hp_funcmap_free(fm);
		return NULL;
	}
	return fm;
}

void hp_funcmap_free(struct hp_funcmap *fm)
{
	if (!fm)
		return;
	free(fm->seg);
	free(fm->reach);
	free(fm->slot);
	free(fm->pool);
	free(fm->pair_key);
	free(fm->pair_id);
	free(fm);
}

static int pool_add(struct hp_funcmap *fm, uint32_t module)
{
	if (fm->npool == fm->pool_cap) {
		size_t cap = fm->pool_cap ? fm->pool_cap * 2 : 64;
		uint32_t *pool = realloc(fm->pool, cap * sizeof(*pool));
		if (!pool)
			return -1;
		fm->pool = pool;
		fm->pool_cap = cap;
	}
	fm->pool[fm->npool++] = module;
	return 0;
}

static int in_pool(const struct hp_funcmap *fm, size_t first, uint32_t module)
{
	for (size_t i = first; i < fm->npool; i++)
		if (fm->pool[i] == module)
			return 1;
	return 0;
}

/* Appends the modules with a segment containing addr to the pool, each
 * once, lowest index first; returns how many. -1 if out of memory. */
static long modules_containing(struct hp_funcmap *fm, uint64_t addr)
{
	size_t lo = 0, hi = fm->nseg; /* the first segment starting above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fm->seg[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = fm->npool;
	for (size_t j = lo; j > 0 && fm->reach[j - 1] >= addr; j--) {
		const struct seg_entry *g = &fm->seg[j - 1];
		if (addr <= g->last && !in_pool(fm, first, g->module) && pool_add(fm, g->module))
			return -1;
	}
	/* insertion sort: a handful at most */
	for (size_t i = first + 1; i < fm->npool; i++)
		for (size_t k = i; k > first && fm->pool[k - 1] > fm->pool[k]; k--) {
			uint32_t t = fm->pool[k];
			fm->pool[k] = fm->pool[k - 1];
			fm->pool[k - 1] = t;
		}
	return (long)(fm->npool - first);
}

static int64_t new_function(struct hp_functions out, uint64_t addr, uint32_t module)
{
	struct hp_funcs *f = out.funcs;
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? f->cap * 2 : 1024;
		uint64_t *a = realloc(f->addr, cap * sizeof(*a));
		if (a)
			f->addr = a;
		uint32_t *m = realloc(*out.module, cap * sizeof(*m));
		if (m)
			*out.module = m;
		if (!a || !m)
			return -1;
		f->cap = cap;
	}
	f->addr[f->n] = addr;
	(*out.module)[f->n] = module;
	return f->n++;
}

static int map_index(struct hp_funcmap *fm, uint64_t addr, struct hp_functions out)
{
	if (fm->nslots == fm->slot_cap) {
		size_t cap = fm->slot_cap ? fm->slot_cap * 2 : 1024;
		struct index_slot *s = realloc(fm->slot, cap * sizeof(*s));
		if (!s)
			return -1;
		fm->slot = s;
		fm->slot_cap = cap;
	}
	struct index_slot *s = &fm->slot[fm->nslots];
	size_t first = fm->npool;
	long n = modules_containing(fm, addr);
	if (n < 0)
		return -1;
	*s = (struct index_slot){ .first = (uint32_t)first, .count = (uint32_t)n };
	if (n <= 1) {
		int64_t id = new_function(out, addr, n ? fm->pool[first] : HP_NO_MODULE);
		if (id < 0)
			return -1;
		s->id = (uint32_t)id;
		fm->npool = first; /* one candidate needs no pool */
	}
	fm->identity &= n <= 1 && s->id == fm->nslots;
	fm->nslots++;
	return 0;
}

/* The life of m that began last at or before tick: its start, or 0 with
 * *found 0. Lives are sorted: a binary search. */
static uint64_t began_before(const struct hp_module *m, uint64_t tick, int *found)
{
	size_t lo = 0, hi = m->nlives;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->life[mid].from <= tick)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo > 0;
	return lo ? m->life[lo - 1].from : 0;
}

/* The candidate loaded at tick; failing that (an event in the moment
 * between two snapshots), the one loaded last before it. */
static uint32_t module_at_tick(const struct hp_funcmap *fm, const struct index_slot *s,
			       uint64_t tick)
{
	const uint32_t *cand = &fm->pool[s->first];
	uint32_t best = cand[0];
	uint64_t best_from = 0;
	int have = 0;
	for (uint32_t i = 0; i < s->count; i++) {
		const struct hp_module *m = &fm->mods[cand[i]];
		if (hp_module_loaded_at(m, tick))
			return cand[i];
		int found;
		uint64_t from = began_before(m, tick, &found);
		if (found && (!have || from > best_from)) {
			best = cand[i];
			best_from = from;
			have = 1;
		}
	}
	return best;
}

static size_t pair_home(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int pairs_grow(struct hp_funcmap *fm)
{
	size_t cap = fm->pair_cap ? fm->pair_cap * 2 : 64;
	uint64_t *key = calloc(cap, sizeof(*key));
	uint32_t *id = calloc(cap, sizeof(*id));
	if (!key || !id) {
		free(key);
		free(id);
		return -1;
	}
	for (size_t i = 0; i < fm->pair_cap; i++) {
		if (!fm->pair_key[i])
			continue;
		size_t k = pair_home(fm->pair_key[i], cap);
		while (key[k])
			k = (k + 1) & (cap - 1);
		key[k] = fm->pair_key[i];
		id[k] = fm->pair_id[i];
	}
	free(fm->pair_key);
	free(fm->pair_id);
	fm->pair_key = key;
	fm->pair_id = id;
	fm->pair_cap = cap;
	return 0;
}

/* The id of (index, module), made on first sight. */
static int64_t pair_id(struct hp_funcmap *fm, uint32_t index, uint64_t addr, uint32_t module,
		       struct hp_functions out)
{
	if ((fm->npairs + 1) * 2 > fm->pair_cap && pairs_grow(fm))
		return -1;
	uint64_t key = ((uint64_t)index << 32 | module) + 1;
	size_t k = pair_home(key, fm->pair_cap);
	while (fm->pair_key[k] && fm->pair_key[k] != key)
		k = (k + 1) & (fm->pair_cap - 1);
	if (fm->pair_key[k])
		return fm->pair_id[k];
	int64_t id = new_function(out, addr, module);
	if (id < 0)
		return -1;
	fm->pair_key[k] = key;
	fm->pair_id[k] = (uint32_t)id;
	fm->npairs++;
	return id;
}

int hp_funcmap_apply(struct hp_funcmap *fm, const struct hp_funcs *dict, struct hp_ev *ev,
		     size_t n, int regions, struct hp_functions out)
{
	while (fm->nslots < dict->n)
		if (map_index(fm, dict->addr[fm->nslots], out))
			return -1;
	if (!regions && fm->identity)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind != HP_EV_ENTER && ev[i].kind != HP_EV_EXIT)
			continue;
		if (hp_is_region_func(ev[i].func)) {
			/* A region is a function of its own, at an address no
			 * module holds; function ids are no longer indices. */
			uint32_t name = ev[i].func - HP_REGION_FUNC;
			int64_t id = pair_id(fm, ev[i].func, HP_REGION_ADDR(name), HP_NO_MODULE, out);
			if (id < 0)
				return -1;
			ev[i].func = (uint32_t)id;
			fm->identity = 0;
			continue;
		}
		if (fm->identity)
			continue;
		const struct index_slot *s = &fm->slot[ev[i].func];
		if (s->count <= 1) {
			ev[i].func = s->id;
			continue;
		}
		uint32_t index = ev[i].func;
		int64_t id = pair_id(fm, index, dict->addr[index], module_at_tick(fm, s, ev[i].tick), out);
		if (id < 0)
			return -1;
		ev[i].func = (uint32_t)id;
	}
	return 0;
}
