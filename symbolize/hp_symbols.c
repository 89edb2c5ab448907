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
#include "hp_path.h"

#include "hp_pdb.h"
#include "hp_pe.h"

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
	uint32_t session;      /* the libdwfl session it is reported in */
	uint32_t same_as;      /* the first module that is the same object */
	/* The file at the recorded path is not the traced one: search by
	 * build-id when the module is first needed. */
	int pending;
	/* Why the names fall back, written while the search is still to come
	 * (so that running out of memory fails hp_symbols_new, not a warning);
	 * it becomes the module's problem once the search has failed. */
	char *why_not_found;
	int not_found;
	int named_badly; /* an address was named module+0xoffset for that reason */
	/* A PE module built by MSVC: the file here, whose PDB names it. */
	char *pdb_file;
};

struct cache_slot {
	uint64_t addr;
	uint32_t asked; /* the module asked for, or HP_SYMBOLS_ANY_MODULE */
	int used;
	char *name;
	char *file;
	const char *module; /* points into a sym_module, or at "?" */
	uint64_t offset;
	int line;
	int resolved;
};

/*
 * libdwfl holds one module per address: objects that were loaded at the
 * same addresses at different moments (a dlclose, then a dlopen) go into
 * sessions of their own. More than this many objects over one address
 * only happen in a crafted trace; the rest are named module+0xoffset.
 */
#define SESSIONS_MAX 64
#define NO_SESSION UINT32_MAX

struct hp_symbols {
	Dwfl *dwfl[SESSIONS_MAX];
	uint32_t nsessions;
	/* Both live as long as the session: libdwfl keeps pointers to them. */
	Dwfl_Callbacks callbacks;
	char *debug_path; /* libdwfl's debuginfo_path; NULL: its default */
	char *pack_dir;   /* the trace's pack (hp_pack.h), absolute; NULL: none */
	/* llvm-symbolizer, started when an MSVC-built module is first named. */
	struct hp_pdb *pdb;
	char *pdb_error; /* why it could not be started */
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

static int is_regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* path (allocated), if it names a regular file; else NULL, path freed. */
static char *if_regular_file(char *path)
{
	if (path && !is_regular_file(path)) {
		free(path);
		path = NULL;
	}
	return path;
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

static int copy_module(struct sym_module *dst, const struct hp_module *src)
{
	const char *base = src->path ? hp_path_base(src->path) : "";
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

/* ---- sessions ---------------------------------------------------------- */

/* By (bias, path), then index: the same object listed twice sorts
 * together, its first listing first. */
static int by_object(const void *x, const void *y, void *arg)
{
	const struct hp_module *modules = arg;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	const struct hp_module *a = &modules[i], *b = &modules[j];
	if (a->bias != b->bias)
		return a->bias < b->bias ? -1 : 1;
	int c = strcmp(a->path ? a->path : "", b->path ? b->path : "");
	return c ? c : (i > j) - (i < j);
}

static int by_object_same(const struct hp_module *modules, uint32_t i, uint32_t j)
{
	const struct hp_module *a = &modules[i], *b = &modules[j];
	return a->bias == b->bias && a->path && b->path && !strcmp(a->path, b->path);
}

/* libdwfl drops a module reported twice: each object is reported once,
 * by its first listing; the others stand for it. */
static void find_same_objects(struct hp_symbols *s, const struct hp_module *modules,
			      uint32_t *order)
{
	size_t n = s->nmods;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), by_object, (void *)modules);
	for (size_t i = 0; i < n; i++) {
		uint32_t m = order[i];
		int repeat = i && by_object_same(modules, order[i - 1], m);
		s->mods[m].same_as = repeat ? s->mods[order[i - 1]].same_as : m;
	}
}

struct span {
	uint64_t start, last;
	uint32_t module;
};

static int by_span(const void *x, const void *y)
{
	const struct span *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->module > b->module) - (a->module < b->module);
}

/* The addresses a module's segments cover, from the lowest to the
 * highest; 0 if it has none. */
static int module_span(const struct sym_module *m, struct span *out)
{
	int any = 0;
	for (uint32_t i = 0; i < m->nseg; i++) {
		const struct hp_segment *g = &m->seg[i];
		if (!g->size)
			continue;
		uint64_t last = g->start + (g->size - 1);
		last = last < g->start ? UINT64_MAX : last;
		if (!any || g->start < out->start)
			out->start = g->start;
		if (!any || last > out->last)
			out->last = last;
		any = 1;
	}
	return any;
}

/* Interval colouring, first fit by start address: each module goes into
 * the first session whose modules all end below it. */
static int assign_sessions(struct hp_symbols *s)
{
	struct span *spans = malloc((s->nmods ? s->nmods : 1) * sizeof(*spans));
	if (!spans)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		s->mods[i].session = 0; /* without segments: libdwfl knows where it is */
		if (s->mods[i].same_as == i && module_span(&s->mods[i], &spans[n]))
			spans[n++].module = (uint32_t)i;
	}
	qsort(spans, n, sizeof(*spans), by_span);
	uint64_t end[SESSIONS_MAX];
	uint32_t used = 1;
	int open[SESSIONS_MAX] = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t k = 0;
		while (k < used && open[k] && end[k] >= spans[i].start)
			k++;
		if (k == used && used < SESSIONS_MAX)
			used++;
		s->mods[spans[i].module].session = k < used ? k : NO_SESSION;
		if (k < used) {
			end[k] = spans[i].last;
			open[k] = 1;
		}
	}
	free(spans);
	s->nsessions = used;
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
	m->dwfl_mod = dwfl_report_elf(s->dwfl[m->session], m->name, path, fd, m->bias, true);
	if (!m->dwfl_mod && fd >= 0)
		close(fd);
}

/*
 * A module without a build-id cannot be told from a rebuilt file at its
 * path; the copy that hookprof pack took, nearest the run, is the better
 * guess. Only absolute paths are stored in a pack.
 */
static char *packed_by_path(const struct hp_symbols *s, const char *path)
{
	if (!s->pack_dir || path[0] != '/' || hp_path_has_dot_component(path))
		return NULL; /* as pack stores none: it would be outside the pack */
	return if_regular_file(format_string("%s/" HP_SYMBOLS_PACK_BY_PATH "%s", s->pack_dir, path));
}

/* The names of m fall back to module+0xoffset, for a reason worth a
 * warning; -1 if out of memory. */
static int fall_back(struct sym_module *m, char *why)
{
	m->not_found = 1;
	m->why_not_found = why;
	return why ? 1 : -1;
}

char *hp_symbols_pdb_file(const char *module_file, const char *pdb)
{
	if (is_regular_file(pdb))
		return strdup(pdb);
	const char *slash = strrchr(module_file, '/');
	return if_regular_file(format_string("%.*s%s", slash ? (int)(slash - module_file + 1) : 0,
					     module_file, hp_path_base(pdb)));
}

static int pdb_exists(const char *module_file, const char *pdb)
{
	char *found = hp_symbols_pdb_file(module_file, pdb);
	int exists = found != NULL;
	free(found);
	return exists;
}

/* A base name that names a file in a directory, not the directory or its
 * parent. */
static int usable_base_name(const char *base)
{
	return *base && strcmp(base, ".") && strcmp(base, "..");
}

/* pe/by-path/DRIVE/DIR/.../NAME of a PE module without an identity (DRIVE
 * "-" for a UNC path): its Windows path's components, none of which may
 * lead out of the pack. */
static char *pe_pack_name_by_path(const char *path)
{
	static const char prefix[] = HP_SYMBOLS_PACK_PE HP_SYMBOLS_PACK_BY_PATH "/";
	int drive = hp_path_drive(path);
	const char *p = drive ? path + hp_path_drive_rest(path) : path;
	/* Each component with its '/' takes no more than it and its separator. */
	char *name = malloc(sizeof(prefix) + 2 + strlen(p));
	if (!name)
		return NULL;
	char *out = name + sprintf(name, "%s%c", prefix, drive ? drive : '-');
	while (*p) {
		size_t n = strcspn(p, "\\/");
		if (n) {
			*out = '/';
			memcpy(out + 1, p, n);
			out[n + 1] = 0;
			if (!usable_base_name(out + 1)) {
				free(name);
				return NULL;
			}
			out += n + 1;
		}
		p += n + (p[n] != 0);
	}
	*out = 0;
	return name;
}

char *hp_symbols_pe_pack_name(const char *path, const uint8_t *id, size_t idlen)
{
	char hex[2 * HP_PE_IDENTITY_LEN + 1];
	const char *base = hp_path_base(path);
	if (idlen > HP_PE_IDENTITY_LEN || !usable_base_name(base))
		return NULL;
	if (!idlen)
		return pe_pack_name_by_path(path);
	hex_string(id, idlen, hex);
	return format_string(HP_SYMBOLS_PACK_PE "%s/%s", hex, base);
}

/* The copy of the PE module at path that hookprof pack took, or NULL. As
 * for an ELF module, the copy is preferred: it is the traced file, or,
 * without an identity, the better guess. */
static char *packed_pe(const struct hp_symbols *s, const struct sym_module *m, const char *path)
{
	char *name = s->pack_dir ? hp_symbols_pe_pack_name(path, m->build_id, m->build_id_len) : NULL;
	char *packed = name ? format_string("%s/%s", s->pack_dir, name) : NULL;
	free(name);
	return if_regular_file(packed);
}

/* An MSVC-built module: its names come from its PDB, if it is here. */
static int use_pdb(struct sym_module *m, const char *file, const char *pdb)
{
	if (!pdb || !pdb_exists(file, pdb))
		return fall_back(m, format_string("%s: its PDB %s is neither there nor beside it; its "
						  "functions are named %s+0xOFFSET",
						  file, pdb ? pdb : "(unnamed)", m->name));
	return (m->pdb_file = strdup(file)) ? 1 : -1;
}

/*
 * A PE module (hp_pe.h), from its copy in the trace's pack, its Windows
 * path mapped to a file here, or a path that is a PE file: its identity is
 * the CodeView GUID and age, its names come from the ELF view of its DWARF
 * and COFF symbols, or from its PDB when it has neither. 1: it was a PE module; 0: it is not one;
 * -1: out of memory.
 */
static int report_pe(struct hp_symbols *s, struct sym_module *m, const char *path)
{
	int windows = hp_path_is_windows(path);
	char *local = windows ? packed_pe(s, m, path) : NULL;
	if (windows && !local)
		local = hp_pe_local_path(path);
	const char *file = local ? local : path;
	if (!*file || (windows && !local) || !hp_pe_is_pe(file)) {
		free(local);
		if (!windows)
			return 0;
		return m->build_id_len ? fall_back(m, describe_not_found(m, path, 0)) : 1;
	}
	char err[256];
	uint8_t id[HP_PE_IDENTITY_LEN];
	struct hp_pe *pe = hp_pe_open(file, err, sizeof(err));
	size_t idlen = pe ? hp_pe_identity(pe, id) : 0;
	int rc = 1;
	if (!pe)
		rc = fall_back(m, format_string("%s: %s; its functions are named %s+0xOFFSET", file, err, m->name));
	else if (m->build_id_len && (idlen != m->build_id_len || memcmp(id, m->build_id, idlen)))
		rc = fall_back(m, describe_not_found(m, path, 1));
	else if (hp_pe_has_dwarf(pe) || hp_pe_function_count(pe)) {
		int fd = hp_pe_elf_view(pe, err, sizeof(err));
		if (fd >= 0)
			report_file(s, m, file, fd);
	} else if (idlen) {
		rc = use_pdb(m, file, hp_pe_pdb_path(pe));
	}
	hp_pe_close(pe);
	free(local);
	return rc;
}

/* Only out of memory fails. */
static int report_modules(struct hp_symbols *s, const struct hp_module *modules)
{
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_module *m = &s->mods[i];
		const char *path = modules[i].path ? modules[i].path : "";
		if (m->same_as != i || m->session == NO_SESSION)
			continue;
		int pe = report_pe(s, m, path);
		if (pe < 0)
			return -1;
		if (pe)
			continue;
		if (!m->build_id_len) {
			char *packed = packed_by_path(s, path);
			if (packed)
				report_file(s, m, packed, -1);
			else if (*path && is_regular_file(path))
				report_file(s, m, path, -1);
			free(packed);
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
static int find_by_build_id(const Dwfl_Callbacks *callbacks, const char *name, const uint8_t *id,
			    size_t len, int debug_first, char **path)
{
	Dwfl *scratch = dwfl_begin(callbacks);
	if (!scratch)
		return -1;
	int fd = -1;
	dwfl_report_begin(scratch);
	Dwfl_Module *mod = dwfl_report_module(scratch, name, 0, 1);
	if (mod && dwfl_module_report_build_id(mod, id, len, 0) == 0 &&
	    dwfl_report_end(scratch, NULL, NULL) == 0) {
		void *userdata = NULL;
		Elf *elf = NULL;
		for (int pass = 0; pass < 2 && fd < 0; pass++) {
			if (pass == debug_first) { /* the file itself */
				fd = dwfl_build_id_find_elf(mod, &userdata, name, 0, path, &elf);
				elf_end(elf); /* the caller opens its own */
				elf = NULL;
			} else {
				fd = dwfl_build_id_find_debuginfo(mod, &userdata, name, 0, NULL, NULL, 0,
								  path);
			}
		}
	}
	dwfl_end(scratch);
	return fd;
}

static int find_file_by_build_id(struct hp_symbols *s, const struct sym_module *m, char **path)
{
	return find_by_build_id(&s->callbacks, m->name, m->build_id, m->build_id_len, 0, path);
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

char *hp_symbols_find_build_id(const uint8_t *id, size_t len, const char *debug_path)
{
	char *dirs = debug_path ? strdup(debug_path) : NULL;
	if (debug_path && !dirs)
		return NULL;
	Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dirs,
	};
	char *path = NULL;
	int fd = find_by_build_id(&callbacks, "module", id, len, 1, &path);
	if (fd >= 0 && !path)
		path = descriptor_path(fd);
	if (fd >= 0)
		close(fd);
	free(dirs);
	return path;
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
		dwfl_report_begin_add(s->dwfl[m->session]);
		report_file(s, m, path, fd);
		dwfl_report_end(s->dwfl[m->session], NULL, NULL);
	} else if (fd >= 0) {
		close(fd);
	}
	free(path);
	m->not_found = !m->dwfl_mod;
}

const char *hp_symbols_user_debug_path(void)
{
	const char *env = getenv("HOOKPROF_DEBUG_PATH");
	return env && *env ? env : NULL;
}

struct hp_symbols *hp_symbols_new(const struct hp_module *modules, size_t n,
				  char *err, size_t errlen)
{
	return hp_symbols_new_debug_path(modules, n, hp_symbols_user_debug_path(), err, errlen);
}

static struct hp_symbols *new_symbols(const struct hp_module *modules, size_t n,
				      const char *debug_path, const char *pack_dir, char *err,
				      size_t errlen);

char *hp_symbols_pack_dir(const char *trace)
{
	return format_string("%s" HP_SYMBOLS_PACK_SUFFIX, trace);
}

/*
 * The pack's directory goes first in libdwfl's path: its files are the
 * traced ones by build-id, wherever the user's directories point. libdwfl
 * looks for files by build-id only under absolute directories, and a colon
 * would split the name, so such a pack is used for its by-path files only.
 */
struct hp_symbols *hp_symbols_for_trace(const char *trace, const struct hp_module *modules,
					size_t n, char *err, size_t errlen)
{
	char *dir = trace ? hp_symbols_pack_dir(trace) : NULL;
	struct stat st;
	char *abs = dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? realpath(dir, NULL) : NULL;
	free(dir);
	if (!abs)
		return hp_symbols_new(modules, n, err, errlen);
	const char *user = hp_symbols_user_debug_path();
	char *path = NULL;
	int usable = !strchr(abs, ':');
	if (usable && !(path = format_string("%s:%s", abs, user ? user : HP_SYMBOLS_DEFAULT_DEBUG_PATH))) {
		free(abs);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	struct hp_symbols *s = new_symbols(modules, n, usable ? path : user, abs, err, errlen);
	free(path);
	free(abs);
	return s;
}

static int begin_sessions(struct hp_symbols *s, char *err, size_t errlen)
{
	for (uint32_t k = 0; k < s->nsessions; k++) {
		if (!(s->dwfl[k] = dwfl_begin(&s->callbacks))) {
			snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
			return -1;
		}
		dwfl_report_begin(s->dwfl[k]);
	}
	return 0;
}

static int end_sessions(struct hp_symbols *s, char *err, size_t errlen)
{
	for (uint32_t k = 0; k < s->nsessions; k++)
		if (dwfl_report_end(s->dwfl[k], NULL, NULL) != 0) {
			snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
			return -1;
		}
	return 0;
}

struct hp_symbols *hp_symbols_new_debug_path(const struct hp_module *modules, size_t n,
					     const char *debug_path, char *err, size_t errlen)
{
	return new_symbols(modules, n, debug_path, NULL, err, errlen);
}

static struct hp_symbols *new_symbols(const struct hp_module *modules, size_t n,
				      const char *debug_path, const char *pack_dir, char *err,
				      size_t errlen)
{
	struct hp_symbols *s = calloc(1, sizeof(*s));
	if (!s || (debug_path && !(s->debug_path = strdup(debug_path))) ||
	    (pack_dir && !(s->pack_dir = strdup(pack_dir))))
		goto nomem;
	s->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &s->debug_path,
	};
	s->mods = n ? calloc(n, sizeof(*s->mods)) : NULL;
	s->cap = CACHE_MIN_CAP;
	s->slots = calloc(s->cap, sizeof(*s->slots));
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	if ((n && !s->mods) || !s->slots || !order) {
		free(order);
		goto nomem;
	}
	for (size_t i = 0; i < n; i++) {
		s->nmods = i + 1;
		if (copy_module(&s->mods[i], &modules[i]) < 0) {
			free(order);
			goto nomem;
		}
	}
	find_same_objects(s, modules, order);
	free(order);
	if (assign_sessions(s) < 0)
		goto nomem;
	if (begin_sessions(s, err, errlen) < 0) {
		hp_symbols_free(s);
		return NULL;
	}
	if (report_modules(s, modules) < 0)
		goto nomem;
	if (end_sessions(s, err, errlen) < 0) {
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
		free(s->mods[i].pdb_file);
	}
	hp_pdb_stop(s->pdb);
	free(s->pdb_error);
	free(s->mods);
	for (uint32_t k = 0; k < s->nsessions; k++)
		if (s->dwfl[k])
			dwfl_end(s->dwfl[k]);
	free(s->debug_path);
	free(s->pack_dir);
	free(s);
}

static size_t slot_index(uint64_t addr, uint32_t module, size_t cap)
{
	/* Function addresses share their low bits; Fibonacci hashing mixes the
	 * high ones down. */
	return (size_t)(((addr ^ (uint64_t)module << 48) * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct cache_slot *find_slot(struct cache_slot *slots, size_t cap, uint64_t addr,
				    uint32_t module)
{
	size_t i = slot_index(addr, module, cap);
	while (slots[i].used && (slots[i].addr != addr || slots[i].asked != module))
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
			*find_slot(slots, cap, s->slots[i].addr, s->slots[i].asked) = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

/* NULL only when the table is full and cannot grow. */
static struct cache_slot *claim_slot(struct hp_symbols *s, uint64_t addr, uint32_t module)
{
	/* A failed grow is fine while free slots remain: the table only gets
	 * slower. */
	if (s->used + 1 > s->cap / 2 && grow_cache(s) < 0 && s->used + 1 >= s->cap)
		return NULL;
	struct cache_slot *slot = find_slot(s->slots, s->cap, addr, module);
	slot->used = 1;
	slot->addr = addr;
	slot->asked = module;
	s->used++;
	return slot;
}

/* The module that stands for module i: the first listing of its object. */
static struct sym_module *reported(struct hp_symbols *s, size_t i)
{
	return &s->mods[s->mods[i].same_as];
}

/* Without a moment to go by: the first module listed at addr. */
static struct sym_module *module_at(struct hp_symbols *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (module_contains(&s->mods[i], addr))
			return reported(s, i);
	/* A module recorded without segments is known to libdwfl only. */
	Dwfl_Module *dm = s->nsessions ? dwfl_addrmodule(s->dwfl[0], addr) : NULL;
	for (size_t i = 0; dm && i < s->nmods; i++)
		if (s->mods[i].dwfl_mod == dm)
			return &s->mods[i];
	return NULL;
}

static struct sym_module *module_asked(struct hp_symbols *s, uint32_t module, uint64_t addr)
{
	return module < s->nmods ? reported(s, module) : module_at(s, addr);
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

/* llvm-symbolizer is started once; if it cannot be, every MSVC-built
 * module that is named says so, once. */
static int name_from_pdb(struct hp_symbols *s, struct sym_module *m, uint64_t file_addr,
			 struct cache_slot *slot)
{
	char err[256];
	if (!s->pdb && !s->pdb_error && !(s->pdb = hp_pdb_start(err, sizeof(err))))
		s->pdb_error = strdup(err);
	if (!s->pdb) {
		if (!m->not_found)
			fall_back(m, format_string("%s was built with a PDB, and %s; its functions are named "
						   "%s+0xOFFSET",
						   m->pdb_file, s->pdb_error ? s->pdb_error : "out of memory",
						   m->name));
		return -1;
	}
	return hp_pdb_lookup(s->pdb, m->pdb_file, file_addr, &slot->name, &slot->file, &slot->line);
}

static void resolve(struct hp_symbols *s, struct sym_module *m, uint64_t addr,
		    struct cache_slot *slot)
{
	if (!m) {
		slot->module = unknown_module;
		slot->offset = addr;
		slot->name = format_string("0x%" PRIx64, addr);
		return;
	}
	slot->module = m->name;
	slot->offset = addr - m->bias;
	if (m->pending)
		locate_by_build_id(s, m);
	if (m->pdb_file && name_from_pdb(s, m, addr - m->bias, slot) == 0) {
		slot->resolved = 1;
		return;
	}
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
	out->offset = slot->offset;
	out->resolved = slot->resolved;
}

void hp_symbols_lookup_in(struct hp_symbols *s, uint32_t module, uint64_t addr,
			  struct hp_symbol *out)
{
	struct cache_slot *slot = find_slot(s->slots, s->cap, addr, module);
	if (!slot->used) {
		slot = claim_slot(s, addr, module);
		if (slot)
			resolve(s, module_asked(s, module, addr), addr, slot);
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
	*out = (struct hp_symbol){ .name = "?", .module = unknown_module, .offset = addr };
}

void hp_symbols_lookup(struct hp_symbols *s, uint64_t addr, struct hp_symbol *out)
{
	hp_symbols_lookup_in(s, HP_SYMBOLS_ANY_MODULE, addr, out);
}
