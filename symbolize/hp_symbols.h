/*
 * hp_symbols.h - addresses of a traced process to function names, offline,
 * with elfutils libdwfl: each module of the trace's module map is reported
 * at its recorded load address (objects that held the same addresses at
 * different moments in separate libdwfl sessions); DWARF first, then the
 * ELF symbol table, then module+0xoffset. C++ names are demangled.
 *
 * Where the trace recorded a module's build-id, the file at its path is used
 * only if it has that build-id; otherwise the file is looked for by build-id
 * as libdwfl does (".build-id/xx/yyyy" under the debug directories, then
 * debuginfod if DEBUGINFOD_URLS is set), and failing that its separate debug
 * file ".build-id/xx/yyyy.debug" stands in for it. Separate debug files of
 * the files used are found by build-id or .gnu_debuglink in the same
 * directories. A trace's pack (hookprof pack) is the first of them, for
 * the readers that go through hp_symbols_for_trace.
 */
#ifndef HP_SYMBOLS_H
#define HP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "hp_trace.h"

struct hp_symbol {
	const char *name;   /* demangled function name, or "module+0x1234" */
	const char *module; /* basename of the module's path, or "?" */
	const char *file;   /* source file, or NULL */
	int line;           /* 0 if unknown */
	int resolved;       /* 1 if name came from DWARF or a symbol table */
	uint64_t offset;    /* the address in the module's file (minus its bias);
			     * the address itself outside modules */
};

/* For hp_symbols_lookup_in: whichever module was listed first at addr. */
#define HP_SYMBOLS_ANY_MODULE UINT32_MAX

struct hp_symbols;

/* NULL with a reason in err only if libdwfl itself cannot start; modules
 * whose files are missing just resolve to module+0xoffset later. The debug
 * directories are HOOKPROF_DEBUG_PATH's, when it is set and not empty. */
struct hp_symbols *hp_symbols_new(const struct hp_module *modules, size_t n,
				  char *err, size_t errlen);
/* The same with debug_path, a colon-separated list in the syntax of libdwfl's
 * Dwfl_Callbacks.debuginfo_path; NULL: libdwfl's default,
 * ":.debug:/usr/lib/debug". */
struct hp_symbols *hp_symbols_new_debug_path(const struct hp_module *modules, size_t n,
					     const char *debug_path, char *err, size_t errlen);
/*
 * The pack of a trace (hookprof pack, hp_pack.h): the directory TRACE.symbols
 * beside it holds the traced files by build-id, as libdwfl looks for them
 * (.build-id/xx/yyyy.debug), and those without a build-id under by-path/
 * at their recorded absolute path. A PE module (hp_pe.h) goes to
 * pe/IDENTITY/NAME: IDENTITY its CodeView GUID and age in hex, NAME the base
 * name of its Windows path; an MSVC-built one's PDB beside it, under the
 * PDB's base name, where llvm-symbolizer looks. One without an identity
 * goes to pe/by-path/DRIVE/DIR/.../NAME (DRIVE the letter, "-" for a UNC
 * path), which the reader prefers to the file its path maps to.
 */
#define HP_SYMBOLS_PACK_SUFFIX ".symbols"
#define HP_SYMBOLS_PACK_BY_PATH "by-path"
#define HP_SYMBOLS_PACK_PE "pe/"
/* The name in a pack (relative to it) of the PE module at path with that
 * identity (idlen 0: none): malloc'd; NULL if out of memory, or if its
 * path has a component "." or "..", or no base name. */
char *hp_symbols_pe_pack_name(const char *path, const uint8_t *id, size_t idlen);
/* Where llvm-symbolizer finds an MSVC-built module's PDB: at the path the
 * CodeView record names, then under its base name beside the module file.
 * malloc'd; NULL if in neither place (or out of memory). */
char *hp_symbols_pdb_file(const char *module_file, const char *pdb);
/* libdwfl's own default debuginfo_path. */
#define HP_SYMBOLS_DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"
/* TRACE.symbols, malloc'd; NULL if out of memory. */
char *hp_symbols_pack_dir(const char *trace);
/* HOOKPROF_DEBUG_PATH when set and not empty, else NULL. */
const char *hp_symbols_user_debug_path(void);
/*
 * What every reader of a trace uses: hp_symbols_new, except that when the
 * trace's pack exists its files come first, before HOOKPROF_DEBUG_PATH's
 * directories or libdwfl's default ones, and a module without a build-id
 * is read from its packed copy rather than from the file now at its path.
 * trace NULL: no pack.
 */
struct hp_symbols *hp_symbols_for_trace(const char *trace, const struct hp_module *modules,
					size_t n, char *err, size_t errlen);
/* The path of a file with that build-id in debug_path's directories (NULL:
 * libdwfl's default), or from debuginfod: its separate debug file first,
 * which has the symbols, then the file itself. malloc'd; NULL if none. */
char *hp_symbols_find_build_id(const uint8_t *id, size_t len, const char *debug_path);
/* Fills out; the strings live as long as the hp_symbols. Never fails: an
 * unknown address gets "0x1234" with module "?". */
void hp_symbols_lookup(struct hp_symbols *s, uint64_t addr, struct hp_symbol *out);
/* The same, for addr as module `module` (an index into the modules given to
 * hp_symbols_new) had it: objects loaded at the same addresses at different
 * moments each name their own functions. */
void hp_symbols_lookup_in(struct hp_symbols *s, uint32_t module, uint64_t addr,
			  struct hp_symbol *out);
/*
 * Why the functions of the module containing addr are named module+0xoffset
 * although the trace recorded its build-id: the file at its path has another
 * build-id (it was rebuilt) or is missing, and no file with that build-id was
 * found. One line naming the file, e.g. "build-id mismatch: /path was rebuilt
 * or replaced after the trace, ..."; it lives as long as s. NULL otherwise,
 * also when no build-id was recorded or no module contains addr. The first
 * question about such a module searches for it, as naming one of its
 * addresses would; no module is searched for twice. Callers warn about the
 * modules of the addresses they name only: a library the program merely
 * loaded may have been updated since, and no name depends on it.
 */
const char *hp_symbols_problem_at(struct hp_symbols *s, uint64_t addr);
/*
 * The problems (as above) of the modules whose addresses hp_symbols_lookup
 * has named so far, one per call: *iter starts at 0; NULL after the last.
 * These are the warnings a tool owes its user about the names it printed.
 */
const char *hp_symbols_next_problem(const struct hp_symbols *s, size_t *iter);
void hp_symbols_free(struct hp_symbols *s);

#endif
