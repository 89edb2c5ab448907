/*
 * hp_pe.h - Windows PE modules (x64 .exe and .dll) for the symbolizer.
 *
 * libdwfl reads ELF only; a PE file is given to it as an ELF view built in
 * a memfd: the PE's sections at their addresses (ImageBase + RVA, which is
 * what mingw's DWARF and the COFF symbols use) as PT_LOAD segments and
 * sections, the .debug_* sections mingw writes into the PE under their own
 * names, and the COFF symbol table's functions as .symtab. So the same
 * session that names ELF modules names PE ones, at the bias the trace
 * recorded (load address minus ImageBase, docs/format.md).
 *
 * A PE module's build identity is its CodeView (RSDS) record: the PDB's GUID
 * (16 bytes as stored) and age (u32, little-endian), 20 bytes, as the trace
 * records it. MSVC-built modules keep their names in that PDB, not in the
 * file: hp_pdb.h asks llvm-symbolizer.
 *
 * Library code: every function returns NULL or -1 with the reason in err.
 */
#ifndef HP_PE_H
#define HP_PE_H

#include <stddef.h>
#include <stdint.h>

#define HP_PE_IDENTITY_LEN 20u

struct hp_pe;

/* 1 if the file at path starts like a PE image ("MZ", then "PE\0\0"). */
int hp_pe_is_pe(const char *path);
/* Reads and checks a PE32+ image; NULL with the reason in err. */
struct hp_pe *hp_pe_open(const char *path, char *err, size_t errlen);
/* The same from bytes in memory (copied). */
struct hp_pe *hp_pe_from_bytes(const uint8_t *p, size_t n, char *err, size_t errlen);
void hp_pe_close(struct hp_pe *pe);

uint64_t hp_pe_image_base(const struct hp_pe *pe);
/* GUID + age of the CodeView record into id (HP_PE_IDENTITY_LEN bytes);
 * 0 if the image has none. */
size_t hp_pe_identity(const struct hp_pe *pe, uint8_t id[HP_PE_IDENTITY_LEN]);
/* The PDB path the CodeView record names, or NULL. */
const char *hp_pe_pdb_path(const struct hp_pe *pe);
/* 1 if it carries DWARF (.debug_info), as mingw's -g builds do. */
int hp_pe_has_dwarf(const struct hp_pe *pe);
/* Functions in the COFF symbol table (mingw keeps one unless stripped). */
size_t hp_pe_function_count(const struct hp_pe *pe);

/* The ELF view, in a memfd positioned at 0 (the caller owns it); -1 with
 * the reason in err. */
int hp_pe_elf_view(const struct hp_pe *pe, char *err, size_t errlen);

/*
 * The file here that a Windows path (hp_path.h) of a traced process names: under Wine
 * a drive is $WINEPREFIX/dosdevices/<letter>: (WINEPREFIX unset:
 * $HOME/.wine), else the file of that base name in the working directory
 * (a trace copied from a Windows machine with its binaries). malloc'd;
 * NULL if neither exists.
 */
char *hp_pe_local_path(const char *path);

#endif
