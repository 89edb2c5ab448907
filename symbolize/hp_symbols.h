/*
 * hp_symbols.h - addresses of a traced process to function names, offline,
 * with elfutils libdwfl: each module of the trace's module map is reported
 * at its recorded load address; DWARF first, then the ELF symbol table, then
 * module+0xoffset. C++ names are demangled.
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
};

struct hp_symbols;

/* NULL with a reason in err only if libdwfl itself cannot start; modules
 * whose files are missing just resolve to module+0xoffset later. */
struct hp_symbols *hp_symbols_new(const struct hp_module *modules, size_t n,
				  char *err, size_t errlen);
/* Fills out; the strings live as long as the hp_symbols. Never fails: an
 * unknown address gets "0x1234" with module "?". */
void hp_symbols_lookup(struct hp_symbols *s, uint64_t addr, struct hp_symbol *out);
void hp_symbols_free(struct hp_symbols *s);

#endif
