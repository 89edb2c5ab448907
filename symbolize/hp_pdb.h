/*
 * hp_pdb.h - names from a PDB, for PE modules built by MSVC (or clang for
 * the MSVC target), whose files carry no DWARF and no symbol table: an
 * llvm-symbolizer coprocess answers, one address at a time, through pipes.
 * llvm-symbolizer finds the PDB itself: at the path the module's CodeView
 * record names, else beside the module.
 *
 * HOOKPROF_LLVM_SYMBOLIZER names the program to run (default:
 * llvm-symbolizer from PATH). Library code: errors are returned, never
 * printed.
 */
#ifndef HP_PDB_H
#define HP_PDB_H

#include <stddef.h>
#include <stdint.h>

struct hp_pdb;

/* NULL with the reason in err when the program cannot be started. */
struct hp_pdb *hp_pdb_start(char *err, size_t errlen);
/* The function at addr (ImageBase + RVA) of the module file at path, its
 * source file and line: 0 and malloc'd strings (*file may be NULL, *line
 * 0), or -1 if the PDB does not know it or the coprocess has gone. */
int hp_pdb_lookup(struct hp_pdb *p, const char *path, uint64_t addr, char **name, char **file,
		  int *line);
void hp_pdb_stop(struct hp_pdb *p);

#endif
