/*
 * hp_pack.c - a trace's symbol files, copied beside it where hp_symbols
 * looks first (hp_pack.h).
 */
#define _GNU_SOURCE
#include "hp_pack.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_analyze.h"
#include "hp_funcmap.h"
#include "hp_path.h"
#include "hp_pe.h"
#include "hp_symbols.h"

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

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- which modules the trace names ---------------------------------------- */

static void mark_address(const struct hp_trace_info *info, uint64_t addr, uint8_t *used)
{
	for (size_t i = 0; i < info->nmodules; i++)
		for (uint32_t k = 0; k < info->modules[i].nseg; k++) {
			const struct hp_segment *g = &info->modules[i].seg[k];
			if (addr >= g->start && addr - g->start < g->size) {
				used[i] = 1;
				return;
			}
		}
}

static void mark_stack(const struct hp_trace_info *info, const struct hp_stack *st, uint8_t *used)
{
	for (uint32_t i = 0; i < st->n; i++)
		mark_address(info, st->pc[i], used);
}

/*
 * The modules of the functions of the events and of the crash backtrace.
 * Not those of the threads' root stacks, which only `info` shows: they are
 * nearly always the C library's start-up frames, and would add it (2 MB, 4
 * with its debug file) to every pack of a program of a few KB.
 */
static void mark_used(const struct hp_analysis *a, uint8_t *used)
{
	for (uint32_t f = 0; f < a->funcs.n; f++) {
		uint32_t m = a->func_module ? a->func_module[f] : HP_NO_MODULE;
		if (m < a->info.nmodules)
			used[m] = 1;
		else
			mark_address(&a->info, a->funcs.addr[f], used);
	}
	if (a->info.crash.present)
		mark_stack(&a->info, &a->info.crash.stack, used);
}

/* ---- what a file holds -------------------------------------------------- */

static void hex_string(const uint8_t *bytes, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bytes[i]);
	out[2 * len] = 0;
}

struct elf_facts {
	int ok;
	char build_id[129];
	int symtab, dwarf;
};

static struct elf_facts read_elf_facts(const char *path)
{
	struct elf_facts f = { 0 };
	int fd = is_regular_file(path) ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return f;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		f.ok = 1;
		const void *id;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
		if (n > 0 && (size_t)n <= 64)
			hex_string(id, (size_t)n, f.build_id);
		for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh))
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			f.symtab |= sh.sh_type == SHT_SYMTAB;
			/* NOBITS: a stripped file keeps the header, not the data. */
			f.dwarf |= sh.sh_type != SHT_NOBITS && name &&
				   (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"));
		}
	}
	elf_end(elf);
	close(fd);
	return f;
}

/* The separate debug file libdwfl finds for the file at path (by build-id
 * or .gnu_debuglink under debug_path), or NULL. */
static char *separate_debug_file(const char *path, const char *debug_path)
{
	char *dirs = debug_path ? strdup(debug_path) : NULL;
	Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dirs,
	};
	char *found = NULL;
	Dwfl *dwfl = (!debug_path || dirs) ? dwfl_begin(&callbacks) : NULL;
	if (dwfl) {
		dwfl_report_begin(dwfl);
		Dwfl_Module *mod = dwfl_report_elf(dwfl, "module", path, -1, 0, false);
		dwfl_report_end(dwfl, NULL, NULL);
		Dwarf_Addr bias;
		const char *mainfile = NULL, *debugfile = NULL;
		if (mod && dwfl_module_getdwarf(mod, &bias) &&
		    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile) &&
		    debugfile && (!mainfile || strcmp(debugfile, mainfile)))
			found = strdup(debugfile);
		dwfl_end(dwfl);
	}
	free(dirs);
	return found;
}

/* ---- copying ------------------------------------------------------------ */

/* 1 if path is a directory (links followed); 0 with errno set. */
static int is_directory(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return 0;
	return S_ISDIR(st.st_mode) ? 1 : (errno = ENOTDIR, 0);
}

static int make_dirs(const char *path, int upto_last_slash)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	char *end = upto_last_slash ? strrchr(buf, '/') : buf + strlen(buf);
	for (char *p = buf + 1; p && p <= end; p++) {
		if (*p != '/' && p != end)
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = c;
		if (p == end)
			break;
	}
	return 0;
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno != EINTR)
				return -1;
			done += w > 0 ? w : 0;
		}
	}
}

/* Through a temporary name and a rename: a reader never sees half a file,
 * and a copy cut short leaves the old one. */
static int copy_file(const char *from, const char *to)
{
	if (make_dirs(to, 1))
		return -1;
	char *tmp = format_string("%s.tmpXXXXXX", to);
	if (!tmp)
		return errno = ENOMEM, -1;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = in >= 0 ? mkostemp(tmp, O_CLOEXEC) : -1;
	int rc = out >= 0 && copy_fd(in, out) == 0 && fchmod(out, 0644) == 0 ? 0 : -1;
	int saved = errno;
	if (out >= 0 && close(out) && !rc)
		rc = -1, saved = errno;
	if (in >= 0)
		close(in);
	if (!rc && rename(tmp, to))
		rc = -1, saved = errno;
	if (rc && out >= 0)
		unlink(tmp);
	free(tmp);
	errno = saved;
	return rc;
}

/* ---- one module --------------------------------------------------------- */

/* Where m's file goes in the pack, relative to it. */
static char *stored_name(const struct hp_pack_module *m)
{
	if (m->build_id[0])
		return format_string(".build-id/%.2s/%s.debug", m->build_id, m->build_id + 2);
	return format_string(HP_SYMBOLS_PACK_BY_PATH "%s", m->path);
}

/* The file that has m's symbols, and what it is; NULL with m->status set
 * when none is the traced one. */
static char *choose_source(const char *dir, struct hp_pack_module *m, const uint8_t *id,
			   size_t idlen, const char *debug_path)
{
	struct elf_facts main = read_elf_facts(m->path);
	int traced = main.ok && !strcmp(main.build_id, m->build_id);
	if (!traced && idlen) {
		/* Packed before the rebuild: packing again keeps it. */
		char *name = stored_name(m);
		char *there = name ? format_string("%s/%s", dir, name) : NULL;
		struct elf_facts had = there ? read_elf_facts(there) : (struct elf_facts){ 0 };
		free(name);
		if (had.ok && !strcmp(had.build_id, m->build_id)) {
			m->kind = HP_PACK_KEPT;
			return there;
		}
		free(there);
	}
	if (!traced) {
		char *found = idlen ? hp_symbols_find_build_id(id, idlen, debug_path) : NULL;
		m->kind = HP_PACK_BY_BUILD_ID;
		m->status = found ? HP_PACK_STORED : main.ok ? HP_PACK_REBUILT : HP_PACK_MISSING;
		return found;
	}
	if (!main.dwarf) {
		char *debug = separate_debug_file(m->path, debug_path);
		struct elf_facts df = debug ? read_elf_facts(debug) : (struct elf_facts){ 0 };
		if (debug && df.ok && !strcmp(df.build_id, m->build_id)) {
			m->kind = HP_PACK_DEBUG;
			return debug;
		}
		free(debug);
	}
	m->kind = main.symtab || main.dwarf ? HP_PACK_MAIN : HP_PACK_STRIPPED;
	return strdup(m->path);
}

/* A module without a build-id whose debug file libdwfl found by its
 * .gnu_debuglink: beside the packed copy, where the link leads when that
 * copy is read. */
static int store_debuglink_file(const char *dir, const struct hp_pack_module *m)
{
	const char *base = strrchr(m->source, '/');
	char *to = format_string("%s/" HP_SYMBOLS_PACK_BY_PATH "%.*s/%s", dir,
				 (int)(strrchr(m->path, '/') - m->path), m->path, base ? base + 1 : m->source);
	int rc = to ? copy_file(m->source, to) : -1;
	free(to);
	return rc;
}

static int store_module(const char *dir, struct hp_pack_module *m, char *err, size_t errlen)
{
	char *to = format_string("%s/%s", dir, m->stored);
	if (!to)
		return snprintf(err, errlen, "out of memory"), -1;
	int rc = 0;
	int stored_by_path = !m->build_id[0];
	if (stored_by_path && m->kind == HP_PACK_DEBUG) {
		/* The traced file goes by path, its debug file beside it. */
		rc = copy_file(m->path, to);
		if (!rc)
			rc = store_debuglink_file(dir, m);
	} else if (!hp_path_same_file(m->source, to)) {
		struct elf_facts there = m->build_id[0] ? read_elf_facts(to) : (struct elf_facts){ 0 };
		if (!there.ok || strcmp(there.build_id, m->build_id))
			rc = copy_file(m->source, to);
	}
	if (rc)
		snprintf(err, errlen, "cannot store %s as %s: %s", m->source, to, strerror(errno));
	free(to);
	return rc;
}

static int pack_module(const char *dir, const struct hp_module *tm, struct hp_pack_module *m,
		       const char *debug_path, char *err, size_t errlen)
{
	if (!m->build_id[0] && m->path[0] != '/') {
		m->status = HP_PACK_MISSING; /* [vdso], or no path: nothing to read */
		return 0;
	}
	if (!m->build_id[0] && hp_path_has_dot_component(m->path)) {
		m->status = HP_PACK_OUTSIDE; /* not over a file outside the pack */
		return 0;
	}
	m->source = choose_source(dir, m, tm->build_id, m->build_id[0] ? tm->build_id_len : 0, debug_path);
	if (!m->source)
		return 0;
	if (!(m->stored = stored_name(m)))
		return snprintf(err, errlen, "out of memory"), -1;
	m->bytes = file_size(m->source);
	if (!m->build_id[0] && m->kind == HP_PACK_DEBUG)
		m->bytes += file_size(m->path); /* both are stored */
	return store_module(dir, m, err, errlen);
}

/* ---- a PE module -------------------------------------------------------- */

/* 1 if the file at path is a PE image with that CodeView identity (any,
 * idlen 0). */
static int is_traced_pe(const char *path, const uint8_t *id, size_t idlen)
{
	char err[256];
	struct hp_pe *pe = path && hp_pe_is_pe(path) ? hp_pe_open(path, err, sizeof(err)) : NULL;
	uint8_t have[HP_PE_IDENTITY_LEN];
	int same = pe && (!idlen || (hp_pe_identity(pe, have) == idlen && !memcmp(have, id, idlen)));
	hp_pe_close(pe);
	return same;
}

/* An MSVC-built module (no DWARF, no COFF functions) names its functions
 * from its PDB: stored beside the module's copy, where the reader and
 * llvm-symbolizer look. 0, also when it has none; -1 if it cannot be
 * stored. */
static int store_pdb(const char *dir, struct hp_pack_module *m, char *err, size_t errlen)
{
	struct hp_pe *pe = hp_pe_open(m->source, err, errlen);
	if (!pe)
		return -1;
	const char *pdb = hp_pe_has_dwarf(pe) || hp_pe_function_count(pe) ? NULL : hp_pe_pdb_path(pe);
	char *found = pdb ? hp_symbols_pdb_file(m->source, pdb) : NULL;
	const char *slash = strrchr(m->stored, '/');
	char *to = found ? format_string("%s/%.*s%s", dir, (int)(slash - m->stored + 1), m->stored,
					 hp_path_base(pdb))
			 : NULL;
	int rc = 0;
	if (pdb && m->kind == HP_PACK_MAIN)
		m->kind = found ? HP_PACK_WITH_PDB : HP_PACK_NO_PDB;
	if (found && (!to || (!hp_path_same_file(found, to) && copy_file(found, to)))) {
		snprintf(err, errlen, "cannot store %s in %s: %s", found, dir,
			 to ? strerror(errno) : "out of memory");
		rc = -1;
	}
	if (found && !rc) {
		m->bytes += file_size(found);
		m->pdb = found;
		found = NULL;
	}
	free(found);
	free(to);
	hp_pe_close(pe);
	return rc;
}

/*
 * Found where the symbolizer finds it (the Wine prefix's drive, then the
 * working directory) and known by its CodeView identity; one without is
 * stored by its path, as an ELF file without a build-id.
 */
static int pack_pe_module(const char *dir, const struct hp_module *tm, struct hp_pack_module *m,
			  char *err, size_t errlen)
{
	size_t idlen = tm->build_id_len;
	char *name = hp_symbols_pe_pack_name(m->path, tm->build_id, idlen);
	if (!name) {
		m->status = HP_PACK_MISSING; /* no name to store it under */
		return 0;
	}
	char *there = format_string("%s/%s", dir, name);
	if (!there) {
		free(name);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	char *local = hp_pe_local_path(m->path);
	int rc = 0;
	m->kind = HP_PACK_MAIN;
	if (!is_traced_pe(local, tm->build_id, idlen)) {
		/* Packed before the rebuild: packing again keeps it. */
		m->kind = HP_PACK_KEPT;
		m->status = is_traced_pe(there, tm->build_id, idlen) ? HP_PACK_STORED
			    : local ? HP_PACK_REBUILT : HP_PACK_MISSING;
		free(local);
		local = m->status == HP_PACK_STORED ? strdup(there) : NULL;
		if (m->status == HP_PACK_STORED && !local)
			rc = (snprintf(err, errlen, "out of memory"), -1);
	}
	if (local) {
		m->source = local;
		m->stored = name;
		name = NULL;
		m->bytes = file_size(local);
		if (!hp_path_same_file(local, there) && copy_file(local, there)) {
			snprintf(err, errlen, "cannot store %s as %s: %s", local, there, strerror(errno));
			rc = -1;
		} else {
			rc = store_pdb(dir, m, err, errlen);
		}
	}
	free(name);
	free(there);
	return rc;
}

/* ---- the whole trace ---------------------------------------------------- */

/* The same object listed twice (loaded again) is packed once. */
static int listed_before(const struct hp_trace_info *info, size_t i)
{
	const struct hp_module *m = &info->modules[i];
	for (size_t k = 0; k < i; k++) {
		const struct hp_module *o = &info->modules[k];
		if (o->build_id_len == m->build_id_len &&
		    !memcmp(o->build_id, m->build_id, m->build_id_len) &&
		    !strcmp(o->path ? o->path : "", m->path ? m->path : ""))
			return 1;
	}
	return 0;
}

static const char *kind_words(enum hp_pack_kind k)
{
	switch (k) {
	case HP_PACK_MAIN: return "the traced file";
	case HP_PACK_DEBUG: return "its separate debug file";
	case HP_PACK_STRIPPED: return "the traced file, stripped (dynamic symbols only)";
	case HP_PACK_BY_BUILD_ID: return "found by build-id";
	case HP_PACK_KEPT: return "already in the pack";
	case HP_PACK_WITH_PDB: return "the traced file and its PDB";
	case HP_PACK_NO_PDB:
		return "the traced file; its PDB, neither at its recorded path nor beside it, "
		       "not stored (no names)";
	}
	return "?";
}

const char *hp_pack_describe(const struct hp_pack_module *m)
{
	switch (m->status) {
	case HP_PACK_STORED: return kind_words(m->kind);
	case HP_PACK_UNUSED: return "not stored: the trace names nothing in it";
	case HP_PACK_REBUILT: return "not stored: rebuilt since the trace (another build-id at its path)";
	case HP_PACK_MISSING: return "not stored: no file";
	case HP_PACK_OUTSIDE: return "not stored: its path has a '.' or '..', by which a copy would leave the pack";
	}
	return "?";
}

#define INDEX_HEADER "# hookprof pack: module, build-id, stored as, what\n"

/* DIR/MODULES, unless a file of that name is there that is not a pack's
 * index (-o naming a directory of the user's): not overwritten. */
static int index_is_ours(const char *name)
{
	char line[sizeof(INDEX_HEADER)] = "";
	int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT;
	struct stat st;
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, line, sizeof(line) - 1) : -1;
	close(fd);
	return n >= 0 && !strcmp(line, n ? INDEX_HEADER : "");
}

/* DIR/MODULES: what is where, for a person looking at the pack. Written
 * through a temporary name, as the modules are (a link there is replaced,
 * not followed). */
static int write_index(const struct hp_pack *p, char *err, size_t errlen)
{
	char *name = format_string("%s/MODULES", p->dir);
	char *tmp = name ? format_string("%s.tmpXXXXXX", name) : NULL;
	int fd = tmp ? mkostemp(tmp, O_CLOEXEC) : -1;
	FILE *f = fd >= 0 && fchmod(fd, 0644) == 0 ? fdopen(fd, "w") : NULL;
	if (!f && fd >= 0)
		close(fd);
	if (f) {
		fputs(INDEX_HEADER, f);
		for (size_t i = 0; i < p->n; i++) {
			const struct hp_pack_module *m = &p->mod[i];
			fprintf(f, "%s\t%s\t%s\t%s\n", m->path, m->build_id[0] ? m->build_id : "-",
				m->stored ? m->stored : "-", hp_pack_describe(m));
		}
	}
	int rc = f && !ferror(f) ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	if (!rc && rename(tmp, name))
		rc = -1;
	if (rc)
		snprintf(err, errlen, "cannot write %s: %s", name ? name : "MODULES", strerror(errno));
	if (rc && fd >= 0)
		unlink(tmp);
	free(tmp);
	free(name);
	return rc;
}

static void add_bytes(struct hp_pack *p)
{
	for (size_t i = 0; i < p->n; i++) {
		int repeat = 0;
		for (size_t k = 0; k < i && p->mod[i].stored && !repeat; k++)
			repeat = p->mod[k].stored && !strcmp(p->mod[k].stored, p->mod[i].stored);
		if (p->mod[i].stored && !repeat)
			p->bytes += p->mod[i].bytes;
	}
}

static int pack_modules(const struct hp_analysis *a, const uint8_t *used, struct hp_pack *out,
			char *err, size_t errlen)
{
	const char *debug_path = hp_symbols_user_debug_path();
	for (size_t i = 0; i < a->info.nmodules; i++) {
		if (listed_before(&a->info, i))
			continue;
		const struct hp_module *tm = &a->info.modules[i];
		struct hp_pack_module *m = &out->mod[out->n++];
		if (!(m->path = strdup(tm->path ? tm->path : "")))
			return snprintf(err, errlen, "out of memory"), -1;
		if (tm->build_id_len <= 64)
			hex_string(tm->build_id, tm->build_id_len, m->build_id);
		if (!used[i]) {
			m->status = HP_PACK_UNUSED;
			continue;
		}
		if (hp_path_is_windows(m->path) ? pack_pe_module(out->dir, tm, m, err, errlen)
						: pack_module(out->dir, tm, m, debug_path, err, errlen))
			return -1;
	}
	add_bytes(out);
	return write_index(out, err, errlen);
}

int hp_pack_trace(const char *path, const char *dir, int flags, struct hp_pack *out, char *err,
		  size_t errlen)
{
	*out = (struct hp_pack){ 0 };
	elf_version(EV_CURRENT); /* before the first elf_begin, which libdwfl may not have made */
	struct hp_analysis a;
	if (hp_analyze(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, errlen))
		return -1;
	size_t n = a.info.nmodules;
	uint8_t *used = calloc(n ? n : 1, 1);
	out->mod = calloc(n ? n : 1, sizeof(*out->mod));
	out->dir = dir ? strdup(dir) : hp_symbols_pack_dir(path);
	char *index = out->dir ? format_string("%s/MODULES", out->dir) : NULL;
	int rc = -1;
	if (!used || !out->mod || !out->dir || !index) {
		snprintf(err, errlen, "out of memory");
	} else if (make_dirs(out->dir, 0) || !is_directory(out->dir)) {
		snprintf(err, errlen, "cannot make %s: %s", out->dir, strerror(errno));
	} else if (!index_is_ours(index)) {
		snprintf(err, errlen, "%s is not a hookprof pack's index: pack -o needs a directory of its own", index);
	} else {
		if (flags & HP_PACK_ALL_MODULES)
			memset(used, 1, n);
		else
			mark_used(&a, used);
		rc = pack_modules(&a, used, out, err, errlen);
	}
	if (rc)
		hp_pack_free(out);
	free(index);
	free(used);
	hp_analysis_free(&a);
	return rc;
}

void hp_pack_free(struct hp_pack *p)
{
	for (size_t i = 0; p->mod && i < p->n; i++) {
		free(p->mod[i].path);
		free(p->mod[i].source);
		free(p->mod[i].stored);
		free(p->mod[i].pdb);
	}
	free(p->mod);
	free(p->dir);
	*p = (struct hp_pack){ 0 };
}
