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

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_buffer.h"
#include "hp_encode.h"

int hp_filter_on;

#define REGEX_MAX 32

struct regex_list {
	regex_t re[REGEX_MAX];
	size_t n;
};

static struct regex_list excludes, includes;
static unsigned depth_max;
static char *(*demangler)(const char *, char *, size_t *, int *);

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
	unsigned long long adds, subs; /* dl_iterate_phdr's counters when built */
	/* The one built before: a thread may still be probing an old table,
	 * so each is kept, reachable from `built` (never freed, nor a leak). */
	struct table *older;
};

static struct table *current;
static struct table *built; /* every table, newest first; under build_lock */
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

/* The levels of the calling thread; a stack pointer of 0 marks none. */
static __thread struct {
	uintptr_t drop_sp;    /* the root of a subtree being dropped */
	uintptr_t include_sp; /* the root of the included subtree we are in */
	uint32_t depth;       /* recorded frames open (DEPTH) */
	uintptr_t sp[HP_DEPTH_MAX];
} level __attribute__((tls_model("initial-exec")));

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
		int e = regcomp(&l->re[l->n], re, REG_EXTENDED | REG_NOSUB);
		if (e) {
			char why[128];
			regerror(e, &l->re[l->n], why, sizeof(why));
			snprintf(err, errlen, "%s: '%s' is not a regular expression (%s); ignored", var, re, why);
			rc = -1;
			continue;
		}
		l->n++;
	}
	return rc;
}

static void free_list(struct regex_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		regfree(&l->re[i]);
	l->n = 0;
}

static int matches(const struct regex_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!regexec(&l->re[i], name, 0, NULL, 0))
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

/* ---- ELF symbol tables ------------------------------------------------ */

/* [off, off + n * size) lies inside the file. */
static int within(size_t filesize, uint64_t off, uint64_t n, uint64_t size)
{
	return off <= filesize && (size == 0 || n <= (filesize - off) / size);
}

static const Elf64_Shdr *section_of_type(const uint8_t *p, const Elf64_Ehdr *eh, uint32_t type)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == type)
			return &sh[i];
	return NULL;
}

static int is_function(const Elf64_Sym *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value;
}

static int read_elf(const uint8_t *p, size_t size, uint64_t bias,
		    void (*fn)(void *, const char *, uint64_t), void *arg)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !within(size, eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr)))
		return -1;
	const Elf64_Shdr *sym = section_of_type(p, eh, SHT_SYMTAB);
	if (!sym)
		sym = section_of_type(p, eh, SHT_DYNSYM);
	if (!sym)
		return 0; /* no symbols: nothing to match */
	const Elf64_Shdr *str = sym->sh_link < eh->e_shnum ? (const Elf64_Shdr *)(p + eh->e_shoff) + sym->sh_link : NULL;
	if (!str || sym->sh_entsize != sizeof(Elf64_Sym) ||
	    !within(size, sym->sh_offset, sym->sh_size / sizeof(Elf64_Sym), sizeof(Elf64_Sym)) ||
	    !within(size, str->sh_offset, str->sh_size, 1))
		return -1;
	const Elf64_Sym *syms = (const Elf64_Sym *)(p + sym->sh_offset);
	const char *names = (const char *)p + str->sh_offset;
	for (uint64_t i = 0; i < sym->sh_size / sizeof(Elf64_Sym); i++) {
		const Elf64_Sym *s = &syms[i];
		if (!is_function(s) || s->st_name >= str->sh_size ||
		    !memchr(names + s->st_name, 0, str->sh_size - s->st_name))
			continue;
		fn(arg, names + s->st_name, bias + s->st_value);
	}
	return 0;
}

int hp_filter_read_symbols(const char *path, uint64_t bias,
			   void (*fn)(void *arg, const char *name, uint64_t addr), void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	int rc = read_elf(p, (size_t)st.st_size, bias, fn, arg);
	munmap(p, (size_t)st.st_size);
	return rc;
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
	unsigned long long adds, subs;
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

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct gather *g = arg;
	g->adds = info->dlpi_adds;
	g->subs = info->dlpi_subs;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (grow((void **)&g->ranges, &g->capranges, g->nranges, sizeof(*g->ranges))) {
			g->failed = 1;
			return 1;
		}
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		g->ranges[g->nranges++] = (struct range){ lo, lo + ph->p_memsz };
	}
	/* The main program's name is empty; the vDSO's is no path. */
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
	if (!strchr(name, '/'))
		return 0;
	if (grow((void **)&g->mods, &g->capmods, g->nmods, sizeof(*g->mods)) ||
	    !(g->mods[g->nmods].path = strdup(name))) {
		g->failed = 1;
		return 1;
	}
	g->mods[g->nmods++].bias = info->dlpi_addr;
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
	t->adds = g->adds;
	t->subs = g->subs;
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

/* Under build_lock. The files are read after dl_iterate_phdr, not while
 * it holds the loader's lock. */
static void build(void)
{
	struct gather g = { 0 };
	int saved = errno;
	dl_iterate_phdr(add_module, &g);
	for (size_t i = 0; i < g.nmods && !g.failed; i++)
		hp_filter_read_symbols(g.mods[i].path, g.mods[i].bias, add_symbol, &g);
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
static __thread const struct range *last_range __attribute__((tls_model("initial-exec")));

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

static int counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	unsigned long long *c = arg;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

/* An address of no module read: the objects loaded since are read, if
 * any were (a function of a dlopen'ed object runs; often its constructor,
 * inside dlopen). Our own slow path meanwhile: nested events are dropped,
 * and signals wait. */
static void read_new_modules(const struct table *seen)
{
	sigset_t saved_mask;
	hp_buffer_hold_signals(&saved_mask);
	uint32_t busy = hp_tls.busy;
	hp_tls.busy = 1;
	pthread_mutex_lock(&build_lock);
	unsigned long long c[2] = { 0, 0 };
	dl_iterate_phdr(counters, c);
	if (table_now() == seen && (c[0] != seen->adds || c[1] != seen->subs))
		build();
	pthread_mutex_unlock(&build_lock);
	hp_tls.busy = busy;
	hp_buffer_release_signals(&saved_mask);
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
	pthread_mutex_lock(&build_lock);
	build();
	pthread_mutex_unlock(&build_lock);
}

/* ---- set-up ----------------------------------------------------------- */

int hp_filter_init(const struct hp_config *cfg, char *err, size_t errlen)
{
	int rc = 0;
	rc |= compile_list(&excludes, "HOOKPROF_EXCLUDE", cfg->exclude, err, errlen);
	rc |= compile_list(&includes, "HOOKPROF_INCLUDE", cfg->include, err, errlen);
	depth_max = cfg->depth;
	if (excludes.n || includes.n) {
		/* Found, never linked: a C program has none, and names stay mangled. */
		demangler = (char *(*)(const char *, char *, size_t *, int *))dlsym(RTLD_DEFAULT,
										  "__cxa_demangle");
		pthread_mutex_lock(&build_lock);
		build();
		pthread_mutex_unlock(&build_lock);
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
