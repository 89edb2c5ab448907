/*
 * hp_symbols.c - addresses to names with an offline libdwfl session: every
 * module file that is still the one traced is reported at its recorded load
 * bias, and each answer is cached by address. A module whose recorded
 * build-id the file at its path lacks is looked for by build-id when one of
 * its addresses is first named, so that a rebuilt file never lends it
 * wrong names.
 */
#define _GNU_SOURCE
#include "hp_symbols.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* From libstdc++, which the tool links anyway. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct sym_module {
	uint64_t bias;
	char *name; /* basename, or "?" when the path is empty */
	struct hp_segment *seg;
	uint32_t nseg;
	uint8_t build_id[64];
	uint32_t build_id_len; /* 0: none recorded, the file at the path is used as it is */
	Dwfl_Module *dwfl_mod; /* NULL: not reported, names fall back */
	/* The file at the recorded path is not the traced one: search by
	 * build-id when the module is first needed. */
	int pending;
	/* Why the names fall back, written while the search is still to come
	 * (so that running out of memory fails hp_symbols_new, not a warning);
	 * it becomes the module's problem once the search has failed. */
	char *why_not_found;
	int not_found;
	int named_badly; /* an address was named module+0xoffset for that reason */
};

struct cache_slot {
	uint64_t addr;
	int used;
	char *name;
	char *file;
	const char *module; /* points into a sym_module, or at "?" */
	int line;
	int resolved;
};

struct hp_symbols {
	Dwfl *dwfl;
	/* Both live as long as the session: libdwfl keeps pointers to them. */
	Dwfl_Callbacks callbacks;
	char *debug_path; /* libdwfl's debuginfo_path; NULL: its default */
	struct sym_module *mods;
	size_t nmods;
	struct cache_slot *slots;
	size_t cap; /* a power of two */
	size_t used;
};

#define CACHE_MIN_CAP 256

static const char unknown_module[] = "?";


static char *format_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format_string(const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int is_regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Written so that a segment reaching the top of the address space, where
 * start + size wraps, still works. */
static int segment_contains(const struct hp_segment *seg, uint64_t addr)
{
	return addr >= seg->start && addr - seg->start < seg->size;
}

static int module_contains(const struct sym_module *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->nseg; i++)
		if (segment_contains(&m->seg[i], addr))
			return 1;
	return 0;
}

static int modules_overlap(const struct sym_module *a, const struct sym_module *b)
{
	for (uint32_t i = 0; i < a->nseg; i++)
		for (uint32_t j = 0; j < b->nseg; j++) {
			const struct hp_segment *x = &a->seg[i], *y = &b->seg[j];
			if (x->size && y->size &&
			    (segment_contains(x, y->start) || segment_contains(y, x->start)))
				return 1;
		}
	return 0;
}

static int copy_module(struct sym_module *dst, const struct hp_module *src)
{
	const char *base = src->path ? path_basename(src->path) : "";
	dst->bias = src->bias;
	dst->name = strdup(*base ? base : unknown_module);
	dst->build_id_len = src->build_id_len <= sizeof(dst->build_id) ? src->build_id_len : 0;
	memcpy(dst->build_id, src->build_id, dst->build_id_len);
	dst->nseg = 0;
	dst->seg = NULL;
	if (src->nseg) {
		dst->seg = malloc(src->nseg * sizeof(*dst->seg));
		if (dst->seg)
			memcpy(dst->seg, src->seg, src->nseg * sizeof(*dst->seg));
	}
	if (!dst->name || (src->nseg && !dst->seg))
		return -1;
	dst->nseg = src->nseg;
	return 0;
}

static int same_object(const struct hp_module *a, const struct hp_module *b)
{
	return a->bias == b->bias && a->path && b->path && !strcmp(a->path, b->path);
}

/*
 * The same object can appear more than once in a union of MODULES
 * snapshots, and libdwfl treats a second report of an identical module as
 * an overlap that garbage-collects the first one. Objects that replaced
 * another at the same addresses are just as ambiguous, so only the first
 * module to claim an address range is reported. A module still to be
 * looked for by build-id has claimed its range too.
 */
static int claimed_earlier(const struct hp_symbols *s, const struct hp_module *modules, size_t i)
{
	for (size_t j = 0; j < i; j++) {
		if (!s->mods[j].dwfl_mod && !s->mods[j].pending)
			continue;
		if (modules_overlap(&s->mods[j], &s->mods[i]) ||
		    same_object(&modules[j], &modules[i]))
			return 1;
	}
	return 0;
}

static void hex_string(const uint8_t *bytes, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bytes[i]);
	out[2 * len] = 0;
}

static int has_build_id(Elf *elf, const uint8_t *id, size_t len)
{
	const void *found;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &found) : -1;
	return n > 0 && (size_t)n == len && !memcmp(found, id, len);
}

/* A descriptor of path if it is the file with that build-id, else -1;
 * *exists tells a missing file from another one. Only regular files are
 * opened: a FIFO named in a damaged trace must not block the tool. */
static int open_with_build_id(const char *path, const uint8_t *id, size_t len, int *exists)
{
	*exists = is_regular_file(path);
	int fd = *exists ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return -1;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int same = has_build_id(elf, id, len);
	elf_end(elf);
	if (same)
		return fd;
	close(fd);
	return -1;
}

/* Written before the search, see sym_module.why_not_found. */
static char *describe_not_found(const struct sym_module *m, const char *path, int exists)
{
	char hex[2 * sizeof(m->build_id) + 1];
	hex_string(m->build_id, m->build_id_len, hex);
	if (exists)
		return format_string("build-id mismatch: %s was rebuilt or replaced after the "
				     "trace, and no file with its traced build-id %s was found; "
				     "its functions are named %s+0xOFFSET",
				     path, hex, m->name);
	return format_string("%s is missing, and no file with its traced build-id %s was found; "
			     "its functions are named %s+0xOFFSET",
			     *path ? path : m->name, hex, m->name);
}

/*
 * add_p_vaddr makes base the load bias itself, which is what dlpi_addr is;
 * with false, base would be the address of the first segment, which
 * differs for objects whose first PT_LOAD is not at vaddr 0. libdwfl
 * ignores base for ET_EXEC, whose bias is 0 anyway. fd -1 lets libdwfl
 * open path; a descriptor passed in is libdwfl's once reported.
 */
static void report_file(struct hp_symbols *s, struct sym_module *m, const char *path, int fd)
{
	m->dwfl_mod = dwfl_report_elf(s->dwfl, m->name, path, fd, m->bias, true);
	if (!m->dwfl_mod && fd >= 0)
		close(fd);
}

/* Only out of memory fails. */
static int report_modules(struct hp_symbols *s, const struct hp_module *modules)
{
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_module *m = &s->mods[i];
		const char *path = modules[i].path ? modules[i].path : "";
		if (claimed_earlier(s, modules, i))
			continue;
		if (!m->build_id_len) {
			if (*path && is_regular_file(path))
				report_file(s, m, path, -1);
			continue;
		}
		int exists = 0, fd = -1;
		if (*path)
			fd = open_with_build_id(path, m->build_id, m->build_id_len, &exists);
		if (fd >= 0) {
			report_file(s, m, path, fd);
			continue;
		}
		m->pending = 1;
		m->why_not_found = describe_not_found(m, path, exists);
		if (!m->why_not_found)
			return -1;
	}
	return 0;
}

/*
 * The file with m's traced build-id, asked of libdwfl: the main file
 * (.build-id/xx/yyyy under the debug directories, then debuginfod if the
 * user has set DEBUGINFOD_URLS), else its separate debug file
 * (.build-id/xx/yyyy.debug, the only thing Debian's -dbgsym packages and
 * most symbol stores keep), which has the program headers, symbol table and
 * DWARF that naming needs and so stands in for a main file that is gone.
 * libdwfl reads the build-id from a module, so a placeholder carries it in
 * a scratch session, away from the real address space; the file found is
 * then reported there at the recorded load bias.
 */
static int find_file_by_build_id(struct hp_symbols *s, const struct sym_module *m, char **path)
{
	Dwfl *scratch = dwfl_begin(&s->callbacks);
	if (!scratch)
		return -1;
	int fd = -1;
	dwfl_report_begin(scratch);
	Dwfl_Module *mod = dwfl_report_module(scratch, m->name, 0, 1);
	if (mod && dwfl_module_report_build_id(mod, m->build_id, m->build_id_len, 0) == 0 &&
	    dwfl_report_end(scratch, NULL, NULL) == 0) {
		void *userdata = NULL;
		Elf *elf = NULL;
		fd = dwfl_build_id_find_elf(mod, &userdata, m->name, 0, path, &elf);
		elf_end(elf); /* report_file opens its own */
		if (fd < 0)
			fd = dwfl_build_id_find_debuginfo(mod, &userdata, m->name, 0, NULL, NULL, 0, path);
	}
	dwfl_end(scratch);
	return fd;
}

/* debuginfod hands over a descriptor without a name; libdwfl wants one. */
static char *descriptor_path(int fd)
{
	char link[64], buf[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

/* Once per module, when its first address is named: what is found is added
 * to the session, which libdwfl allows after lookups. */
static void locate_by_build_id(struct hp_symbols *s, struct sym_module *m)
{
	char *path = NULL;
	m->pending = 0;
	int fd = find_file_by_build_id(s, m, &path);
	if (fd >= 0 && !path)
		path = descriptor_path(fd);
	if (fd >= 0 && path) {
		dwfl_report_begin_add(s->dwfl);
		report_file(s, m, path, fd);
		dwfl_report_end(s->dwfl, NULL, NULL);
	} else if (fd >= 0) {
		close(fd);
	}
	free(path);
	m->not_found = !m->dwfl_mod;
}

struct hp_symbols *hp_symbols_new(const struct hp_module *modules, size_t n,
				  char *err, size_t errlen)
{
	const char *env = getenv("HOOKPROF_DEBUG_PATH");
	return hp_symbols_new_debug_path(modules, n, env && *env ? env : NULL, err, errlen);
}

struct hp_symbols *hp_symbols_new_debug_path(const struct hp_module *modules, size_t n,
					     const char *debug_path, char *err, size_t errlen)
{
	struct hp_symbols *s = calloc(1, sizeof(*s));
	if (!s || (debug_path && !(s->debug_path = strdup(debug_path))))
		goto nomem;
	s->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &s->debug_path,
	};
	s->dwfl = dwfl_begin(&s->callbacks);
	if (!s->dwfl) {
		snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		hp_symbols_free(s);
		return NULL;
	}
	s->mods = n ? calloc(n, sizeof(*s->mods)) : NULL;
	s->cap = CACHE_MIN_CAP;
	s->slots = calloc(s->cap, sizeof(*s->slots));
	if ((n && !s->mods) || !s->slots)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		s->nmods = i + 1;
		if (copy_module(&s->mods[i], &modules[i]) < 0)
			goto nomem;
	}
	dwfl_report_begin(s->dwfl);
	if (report_modules(s, modules) < 0)
		goto nomem;
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0) {
		snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		hp_symbols_free(s);
		return NULL;
	}
	return s;
nomem:
	snprintf(err, errlen, "out of memory");
	hp_symbols_free(s);
	return NULL;
}

static void free_slot_strings(struct cache_slot *slot)
{
	free(slot->name);
	free(slot->file);
}

void hp_symbols_free(struct hp_symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->slots && i < s->cap; i++)
		if (s->slots[i].used)
			free_slot_strings(&s->slots[i]);
	free(s->slots);
	for (size_t i = 0; i < s->nmods; i++) {
		free(s->mods[i].name);
		free(s->mods[i].seg);
		free(s->mods[i].why_not_found);
	}
	free(s->mods);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s->debug_path);
	free(s);
}

static size_t slot_index(uint64_t addr, size_t cap)
{
	/* Function addresses share their low bits; Fibonacci hashing mixes the
	 * high ones down. */
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct cache_slot *find_slot(struct cache_slot *slots, size_t cap, uint64_t addr)
{
	size_t i = slot_index(addr, cap);
	while (slots[i].used && slots[i].addr != addr)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow_cache(struct hp_symbols *s)
{
	size_t cap = s->cap * 2;
	struct cache_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].used)
			*find_slot(slots, cap, s->slots[i].addr) = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

/* NULL only when the table is full and cannot grow. */
static struct cache_slot *claim_slot(struct hp_symbols *s, uint64_t addr)
{
	/* A failed grow is fine while free slots remain: the table only gets
	 * slower. */
	if (s->used + 1 > s->cap / 2 && grow_cache(s) < 0 && s->used + 1 >= s->cap)
		return NULL;
	struct cache_slot *slot = find_slot(s->slots, s->cap, addr);
	slot->used = 1;
	slot->addr = addr;
	s->used++;
	return slot;
}

static struct sym_module *module_at(struct hp_symbols *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (module_contains(&s->mods[i], addr))
			return &s->mods[i];
	/* A module recorded without segments is known to libdwfl only. */
	Dwfl_Module *dm = dwfl_addrmodule(s->dwfl, addr);
	for (size_t i = 0; dm && i < s->nmods; i++)
		if (s->mods[i].dwfl_mod == dm)
			return &s->mods[i];
	return NULL;
}

static char *demangle(const char *name)
{
	if (name[0] == '_' && name[1] == 'Z') {
		int status;
		char *plain = __cxa_demangle(name, NULL, NULL, &status);
		if (plain && status == 0)
			return plain;
		free(plain);
	}
	return strdup(name);
}

/* The out-of-line function around addr; integrate follows abstract origins
 * and specifications, where a definition's name usually lives. */
static const char *dwarf_function_name(Dwfl_Module *mod, uint64_t addr)
{
	static const unsigned int name_attrs[] = {
		DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name,
	};
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	const char *name = NULL;
	for (int i = 0; i < n && !name; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		for (size_t a = 0; a < sizeof(name_attrs) / sizeof(name_attrs[0]) && !name; a++) {
			Dwarf_Attribute attr;
			name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], name_attrs[a], &attr));
		}
	}
	if (n > 0)
		free(scopes);
	return name;
}

/*
 * The symbol table first: an entry address matches its symbol exactly,
 * and unlike DWARF it tells a clone (foo.constprop.0) from its origin.
 * DWARF covers functions the symbol tables lack. A sizeless symbol merely
 * precedes addr and may belong to another function, so the offset stays
 * visible rather than two functions merging under one name.
 */
static char *function_name(Dwfl_Module *mod, uint64_t addr)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	GElf_Word shndx;
	Elf *elf;
	Dwarf_Addr bias;
	const char *symname = dwfl_module_addrinfo(mod, addr, &off, &sym, &shndx, &elf, &bias);
	if (symname && *symname && (off == 0 || off < sym.st_size))
		return demangle(symname);
	const char *dwname = dwarf_function_name(mod, addr);
	if (dwname && *dwname)
		return demangle(dwname);
	if (!symname || !*symname)
		return NULL;
	char *plain = demangle(symname);
	char *name = plain ? format_string("%s+0x%" PRIx64, plain, (uint64_t)off) : NULL;
	free(plain);
	return name;
}

static void source_location(Dwfl_Module *mod, uint64_t addr, struct cache_slot *slot)
{
	Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (file && (slot->file = strdup(file)))
		slot->line = lineno;
}

static void resolve(struct hp_symbols *s, uint64_t addr, struct cache_slot *slot)
{
	struct sym_module *m = module_at(s, addr);
	if (!m) {
		slot->module = unknown_module;
		slot->name = format_string("0x%" PRIx64, addr);
		return;
	}
	slot->module = m->name;
	if (m->pending)
		locate_by_build_id(s, m);
	if (m->dwfl_mod && (slot->name = function_name(m->dwfl_mod, addr))) {
		slot->resolved = 1;
		source_location(m->dwfl_mod, addr, slot);
		return;
	}
	m->named_badly |= m->not_found;
	slot->name = format_string("%s+0x%" PRIx64, m->name, addr - m->bias);
}

const char *hp_symbols_next_problem(const struct hp_symbols *s, size_t *iter)
{
	while (*iter < s->nmods) {
		const struct sym_module *m = &s->mods[(*iter)++];
		if (m->named_badly)
			return m->why_not_found;
	}
	return NULL;
}

const char *hp_symbols_problem_at(struct hp_symbols *s, uint64_t addr)
{
	struct sym_module *m = module_at(s, addr);
	if (m && m->pending)
		locate_by_build_id(s, m);
	return m && m->not_found ? m->why_not_found : NULL;
}

static void fill_out(const struct cache_slot *slot, struct hp_symbol *out)
{
	out->name = slot->name;
	out->module = slot->module;
	out->file = slot->file;
	out->line = slot->line;
	out->resolved = slot->resolved;
}

void hp_symbols_lookup(struct hp_symbols *s, uint64_t addr, struct hp_symbol *out)
{
	struct cache_slot *slot = find_slot(s->slots, s->cap, addr);
	if (!slot->used) {
		slot = claim_slot(s, addr);
		if (slot)
			resolve(s, addr, slot);
	}
	if (slot && slot->name) {
		fill_out(slot, out);
		return;
	}
	/* Out of memory: an answer that owns nothing, and is not cached. The
	 * slot was empty until just now, so no probe chain runs through it. */
	if (slot) {
		free_slot_strings(slot);
		*slot = (struct cache_slot){ 0 };
		s->used--;
	}
	*out = (struct hp_symbol){ .name = "?", .module = unknown_module };
}
