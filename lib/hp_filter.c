/*
 * hp_filter.c - HOOKPROF_EXCLUDE, INCLUDE and DEPTH (hp_filter.h).
 *
 * The names are matched when the table is built, never per event: each
 * function symbol of each loaded module is demangled (with the process's
 * own __cxa_demangle, if it has one) and matched against the regexes; the
 * entry addresses that matched go into an open-addressing hash with their
 * verdict. The table also holds the executable ranges of the modules it
 * read, so that an address in none of them (an object dlopen'ed since)
 * makes it be built again, once per change of the loaded objects.
 */
#define _GNU_SOURCE
#include "hp_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_buffer.h"
#include "hp_encode.h"

int hp_filter_on;

#define REGEX_MAX 32

struct regex_list {
	void *re[REGEX_MAX]; /* hp_regex_compile's */
	size_t n;
	/* Their texts, comma-separated as in the variable: what the FILTER
	 * record names. Never freed (the configuration points to it). */
	char *applied;
	size_t applied_len;
};

static struct regex_list excludes, includes;
static unsigned depth_max;
static hp_demangler_fn demangler;

struct range {
	uint64_t lo, hi;
};

/* Built whole, then published; never changed nor freed after (a thread
 * may still probe an old one: they are small, and rebuilt only when the
 * loaded objects change). */
struct table {
	uint64_t *keys; /* entry addresses; 0: an empty slot */
	uint8_t *verdicts;
	uint32_t mask;
	uint32_t nranges;
	struct range *ranges; /* executable segments of the modules read, sorted */
	uint64_t generation; /* hp_modules_generation when built */
	/* The one built before: a thread may still be probing an old table,
	 * so each is kept, reachable from `built` (never freed, nor a leak). */
	struct table *older;
};

static struct table *current;
static struct table *built; /* every table, newest first; under build_lock */
/* Inside it: the loader's lock and the program's malloc; taken inside
 * init_lock, never in signal context (docs/design.md, "Locks"). */
static hp_mutex_t build_lock = HP_MUTEX_INITIALIZER;

/* The levels of the calling thread; a stack pointer of 0 marks none. */
static __thread struct {
	uintptr_t drop_sp;    /* the root of a subtree being dropped */
	uintptr_t include_sp; /* the root of the included subtree we are in */
	uint32_t depth;       /* recorded frames open (DEPTH) */
	uintptr_t sp[HP_DEPTH_MAX];
} level HP_TLS_MODEL;

/* ---- regexes ---------------------------------------------------------- */

/* The next regex of a comma-separated list: a comma inside [] or {}, or
 * after a backslash, is the regex's own. Its length; *next after it. */
static size_t next_regex(const char *s, const char **next)
{
	int brackets = 0, braces = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (s[i] == '\\' && s[i + 1])
			i++;
		else if (s[i] == '[' && !brackets)
			brackets = 1;
		else if (s[i] == ']' && brackets)
			brackets = 0;
		else if (s[i] == '{' && !brackets)
			braces = 1;
		else if (s[i] == '}' && !brackets)
			braces = 0;
		else if (s[i] == ',' && !brackets && !braces)
			break;
	}
	*next = s[i] ? s + i + 1 : s + i;
	return i;
}

/* Appends the pattern at s (len bytes) of list to l's applied text. */
static void note_applied(struct regex_list *l, const char *list, const char *s, size_t len)
{
	if (!l->applied && !(l->applied = hp_pages_alloc(strlen(list) + 1)))
		return;
	if (l->applied_len)
		l->applied[l->applied_len++] = ',';
	memcpy(l->applied + l->applied_len, s, len);
	l->applied_len += len;
	l->applied[l->applied_len] = 0;
}

static int compile_list(struct regex_list *l, const char *var, const char *list, char *err,
			size_t errlen)
{
	int rc = 0;
	char re[1024];
	const char *next;
	for (const char *s = list; s && *s; s = next) {
		size_t len = next_regex(s, &next);
		if (!len)
			continue;
		if (len >= sizeof(re) || l->n == REGEX_MAX) {
			snprintf(err, errlen, "%s: more than %d regexes or one over %zu bytes; the rest ignored",
				 var, REGEX_MAX, sizeof(re) - 1);
			return -1;
		}
		memcpy(re, s, len);
		re[len] = 0;
		char why[128];
		if (!(l->re[l->n] = hp_regex_compile(re, why, sizeof(why)))) {
			snprintf(err, errlen, "%s: '%s' is not a regular expression (%s); ignored", var, re, why);
			rc = -1;
			continue;
		}
		l->n++;
		note_applied(l, list, s, len);
	}
	return rc;
}

static void free_list(struct regex_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		hp_regex_free(l->re[i]);
	l->n = 0;
}

static int matches(const struct regex_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (hp_regex_matches(l->re[i], name))
			return 1;
	return 0;
}

unsigned hp_filter_name_verdict(const char *name)
{
	char *plain = NULL;
	if (demangler && name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		plain = demangler(name, NULL, NULL, &status);
		if (status) {
			free(plain);
			plain = NULL;
		}
	}
	const char *shown = plain ? plain : name;
	unsigned v = (matches(&excludes, shown) ? HP_FILTER_EXCLUDED : 0) |
		     (matches(&includes, shown) ? HP_FILTER_INCLUDED : 0);
	free(plain);
	return v;
}

/* ---- the table -------------------------------------------------------- */

struct module {
	char *path;
	uint64_t bias;
};

/* What a build gathers before the table is made. */
struct gather {
	struct module *mods;
	size_t nmods, capmods;
	struct range *ranges;
	size_t nranges, capranges;
	struct { uint64_t addr; unsigned verdict; } *hits;
	size_t nhits, caphits;
	uint64_t generation;
	int failed;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int add_module(const struct hp_loaded_module *m, void *arg)
{
	struct gather *g = arg;
	for (uint32_t i = 0; i < m->nseg; i++) {
		if (!(m->seg[i].flags & HP_SEGMENT_X))
			continue;
		if (grow((void **)&g->ranges, &g->capranges, g->nranges, sizeof(*g->ranges))) {
			g->failed = 1;
			return 1;
		}
		g->ranges[g->nranges++] = (struct range){ m->seg[i].start, m->seg[i].start + m->seg[i].size };
	}
	if (!m->has_file)
		return 0;
	if (grow((void **)&g->mods, &g->capmods, g->nmods, sizeof(*g->mods)) ||
	    !(g->mods[g->nmods].path = strdup(m->open_path ? m->open_path : m->path))) {
		g->failed = 1;
		return 1;
	}
	g->mods[g->nmods++].bias = m->bias;
	return 0;
}

static void add_symbol(void *arg, const char *name, uint64_t addr)
{
	struct gather *g = arg;
	unsigned v = hp_filter_name_verdict(name);
	if (!v)
		return;
	if (grow((void **)&g->hits, &g->caphits, g->nhits, sizeof(*g->hits))) {
		g->failed = 1;
		return;
	}
	g->hits[g->nhits].addr = addr;
	g->hits[g->nhits++].verdict = v;
}

static inline uint32_t slot_of(uint64_t addr, uint32_t mask)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

static int by_lo(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The table of g; aliases at one address join their verdicts. */
static struct table *make_table(struct gather *g)
{
	uint32_t slots = 16;
	while (slots < 2 * g->nhits)
		slots *= 2;
	struct table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->keys = calloc(slots, sizeof(*t->keys));
	t->verdicts = calloc(slots, 1);
	if (!t->keys || !t->verdicts) {
		free(t->keys);
		free(t->verdicts);
		free(t);
		return NULL;
	}
	t->mask = slots - 1;
	for (size_t i = 0; i < g->nhits; i++) {
		uint32_t s = slot_of(g->hits[i].addr, t->mask);
		while (t->keys[s] && t->keys[s] != g->hits[i].addr)
			s = (s + 1) & t->mask;
		t->keys[s] = g->hits[i].addr;
		t->verdicts[s] |= (uint8_t)g->hits[i].verdict;
	}
	qsort(g->ranges, g->nranges, sizeof(*g->ranges), by_lo);
	t->ranges = g->ranges;
	t->nranges = (uint32_t)g->nranges;
	g->ranges = NULL;
	t->generation = g->generation;
	return t;
}

static void gather_free(struct gather *g)
{
	for (size_t i = 0; i < g->nmods; i++)
		free(g->mods[i].path);
	free(g->mods);
	free(g->ranges);
	free(g->hits);
}

/* Under build_lock. The files are read after the walk of the modules, not
 * while it holds the loader's lock. */
static void build(void)
{
	struct gather g = { 0 };
	int saved = errno;
	g.generation = hp_modules_generation();
	hp_modules_each(add_module, &g);
	for (size_t i = 0; i < g.nmods && !g.failed; i++)
		hp_module_symbols(g.mods[i].path, g.mods[i].bias, add_symbol, &g);
	struct table *t = g.failed ? NULL : make_table(&g);
	gather_free(&g);
	errno = saved;
	if (!t)
		return; /* out of memory: the old table stays */
	t->older = built;
	built = t;
	/* Release: the table is complete before a thread that loads the
	 * pointer (acquire, in table_now) probes it. */
	__atomic_store_n(&current, t, __ATOMIC_RELEASE);
}

static const struct table *table_now(void)
{
	return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

/* The module of the calling thread's last miss: most are in the same one. */
static __thread const struct range *last_range HP_TLS_MODEL;

static int in_ranges(const struct table *t, uint64_t addr)
{
	const struct range *r = last_range;
	if (r && addr >= r->lo && addr < r->hi && r >= t->ranges && r < t->ranges + t->nranges)
		return 1;
	uint32_t lo = 0, hi = t->nranges;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (addr < t->ranges[mid].lo)
			hi = mid;
		else if (addr >= t->ranges[mid].hi)
			lo = mid + 1;
		else
			return last_range = &t->ranges[mid], 1;
	}
	return 0;
}

/* An address of no module read: the objects loaded since are read, if
 * any were (a function of a dlopen'ed object runs; often its constructor,
 * inside dlopen). Our own slow path meanwhile: nested events are dropped,
 * and signals wait. */
static void read_new_modules(const struct table *seen)
{
	hp_sigmask_t saved_mask;
	hp_signals_hold(&saved_mask);
	uint32_t busy = hp_tls.busy;
	hp_tls.busy = 1;
	hp_mutex_lock(&build_lock);
	if (table_now() == seen && hp_modules_generation() != seen->generation)
		build();
	hp_mutex_unlock(&build_lock);
	hp_tls.busy = busy;
	hp_signals_release(&saved_mask);
}

static inline unsigned probe(const struct table *t, uint64_t addr)
{
	for (uint32_t s = slot_of(addr, t->mask);; s = (s + 1) & t->mask) {
		if (t->keys[s] == addr)
			return t->verdicts[s];
		if (!t->keys[s])
			return 0;
	}
}

/* Not matched: in a module read, or one loaded since (read now). */
static __attribute__((noinline)) unsigned verdict_missed(const struct table *t, uint64_t addr)
{
	if (in_ranges(t, addr))
		return 0;
	read_new_modules(t);
	const struct table *now = table_now();
	return now != t ? probe(now, addr) : 0;
}

static inline __attribute__((always_inline)) unsigned verdict(uint64_t addr)
{
	const struct table *t = table_now();
	if (!t)
		return 0;
	unsigned v = probe(t, addr);
	return v ? v : verdict_missed(t, addr);
}

unsigned hp_filter_verdict(uint64_t addr)
{
	return verdict(addr);
}

void hp_filter_modules_changed(void)
{
	if (!hp_filter_on || !table_now())
		return;
	hp_mutex_lock(&build_lock);
	build();
	hp_mutex_unlock(&build_lock);
}

/* ---- set-up ----------------------------------------------------------- */

int hp_filter_init(const struct hp_config *cfg, char *err, size_t errlen)
{
	int rc = 0;
	rc |= compile_list(&excludes, "HOOKPROF_EXCLUDE", cfg->exclude, err, errlen);
	rc |= compile_list(&includes, "HOOKPROF_INCLUDE", cfg->include, err, errlen);
	depth_max = cfg->depth;
	if (excludes.n || includes.n) {
		demangler = hp_find_demangler();
		hp_mutex_lock(&build_lock);
		build();
		hp_mutex_unlock(&build_lock);
		if (!table_now()) {
			snprintf(err, errlen, "out of memory reading the symbols; "
					      "HOOKPROF_EXCLUDE and HOOKPROF_INCLUDE ignored");
			free_list(&excludes);
			free_list(&includes);
			rc = -1;
		}
	}
	hp_filter_on = excludes.n || includes.n || depth_max;
	return rc;
}

const char *hp_filter_applied(int include)
{
	const struct regex_list *l = include ? &includes : &excludes;
	return l->n ? l->applied : NULL;
}

void hp_filter_off(void)
{
	hp_filter_on = 0;
	free_list(&excludes);
	free_list(&includes);
	depth_max = 0;
	__atomic_store_n(&current, NULL, __ATOMIC_RELEASE);
	hp_filter_reset_thread();
}

void hp_filter_reset_thread(void)
{
	level.drop_sp = level.include_sp = 0;
	level.depth = 0;
}

/* ---- per event -------------------------------------------------------- */

/*
 * Where the event's frame is: the stack slot of its function's return
 * address (call_site), the first word equal to it from `from` up (its
 * stack pointer at the hook's call, where its frame begins). The same at
 * its enter and its exit, above its callees', at or above a sibling's
 * called from the same place: what the levels need. Scanned a bounded
 * distance (a larger frame, or no call site: `from`, still ordered but for
 * siblings of larger frames); only when a level needs it.
 */
#define FRAME_SCAN_WORDS 512

struct where {
	uintptr_t from;
	uint64_t call_site;
	uintptr_t sp; /* 0 until found */
};

/* The scan reads the program's frames, whose redzones AddressSanitizer
 * would report: out of line and unchecked under it. */
#ifdef __SANITIZE_ADDRESS__
#define FRAME_SCAN_ATTRS __attribute__((noinline, no_sanitize_address))
#else
#define FRAME_SCAN_ATTRS inline __attribute__((always_inline))
#endif

static FRAME_SCAN_ATTRS uintptr_t frame_scan(uintptr_t from, uint64_t ra)
{
	const uint64_t *p = (const uint64_t *)from;
	if (ra)
		for (unsigned i = 0; i < FRAME_SCAN_WORDS; i++)
			if (p[i] == ra)
				return (uintptr_t)&p[i];
	return from;
}

static inline __attribute__((always_inline)) uintptr_t sp_of(struct where *w)
{
	if (!w->sp)
		w->sp = frame_scan(w->from, w->call_site);
	return w->sp;
}

static inline int levels_open(void)
{
	return level.drop_sp || level.include_sp || level.depth;
}

/* Levels opened by a frame at or below sp are gone: a frame entered at
 * sp is their sibling or their caller's (longjmp, exceptions). */
static inline void forget_gone(uintptr_t sp)
{
	if (level.drop_sp && level.drop_sp <= sp)
		level.drop_sp = 0;
	if (level.include_sp && level.include_sp <= sp)
		level.include_sp = 0;
	while (level.depth && level.sp[level.depth - 1] <= sp)
		level.depth--;
}

static inline __attribute__((always_inline)) int enter_drops(uint64_t fn, struct where *w)
{
	if (levels_open())
		forget_gone(sp_of(w));
	if (level.drop_sp)
		return 1;
	unsigned v = excludes.n || includes.n ? verdict(fn) : 0;
	if (v & HP_FILTER_EXCLUDED) {
		level.drop_sp = sp_of(w);
		return 1;
	}
	if (includes.n && !level.include_sp) {
		if (!(v & HP_FILTER_INCLUDED))
			return 1;
		level.include_sp = sp_of(w);
	}
	if (depth_max) {
		if (level.depth == depth_max) {
			level.drop_sp = sp_of(w);
			return 1;
		}
		level.sp[level.depth++] = sp_of(w);
	}
	return 0;
}

/* The exit of a frame entered at sp (or lower, after an alloca). */
static inline __attribute__((always_inline)) int exit_drops(struct where *w)
{
	if (!levels_open())
		return includes.n != 0; /* outside any included function */
	uintptr_t sp = sp_of(w);
	if (level.drop_sp) {
		if (sp < level.drop_sp)
			return 1; /* inside the subtree */
		int root = sp == level.drop_sp;
		level.drop_sp = 0;
		if (root)
			return 1;
		/* Gone: the exit of a frame above it goes on. */
	}
	if (level.include_sp && level.include_sp < sp)
		level.include_sp = 0;
	if (includes.n && !level.include_sp)
		return 1;
	if (level.include_sp == sp)
		level.include_sp = 0; /* the included root's exit, recorded */
	if (depth_max) {
		while (level.depth && level.sp[level.depth - 1] < sp)
			level.depth--;
		if (level.depth)
			level.depth--;
	}
	return 0;
}

static inline __attribute__((always_inline)) int drops(uint64_t raw, struct where *w)
{
	if (raw & HP_RAW_EXIT)
		return exit_drops(w);
	return enter_drops(raw, w);
}

int hp_filter_drops(uint64_t raw, uintptr_t sp)
{
	struct where w = { sp, 0, sp };
	return drops(raw, &w);
}

int hp_filter_event(uint64_t raw, uintptr_t from, uint64_t call_site)
{
	struct where w = { from, call_site, 0 };
	return drops(raw, &w);
}
