/*
 * check_pe.c - hp_pe (PE images, their ELF view, Windows paths) and hp_pdb,
 * hp_symbols naming PE modules, and hp_pack storing them, on PE images built byte by byte here
 * (no mingw needed): a .text with two COFF functions, an .rdata with the
 * debug directory and a CodeView record, and, in one variant, a section
 * under a long name (".debug_info", from the COFF string table).
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testkit.h"

#include "../symbolize/hp_pack.h"
#include "../symbolize/hp_pdb.h"
#include "../symbolize/hp_pe.h"
#include "../symbolize/hp_symbols.h"

static char top[PATH_MAX];

#define IMAGE_BASE 0x140000000ull
#define TEXT_RVA 0x1000u
#define TEXT_OFF 0x400u
#define RDATA_RVA 0x2000u
#define RDATA_OFF 0x600u
#define DEBUG_RVA 0x3000u
#define DEBUG_OFF 0x800u
#define SYMTAB_OFF 0xa00u
#define SECTIONS_AT (0x40 + 24 + 240)

static const uint8_t guid[16] = { 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
				  0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
#define AGE 3u

struct pe_opts {
	int codeview;
	int debug_section; /* a ".debug_info" section, named through the string table */
	int symbols;
};

static void pad_to(struct tk_bytes *b, size_t at)
{
	while (b->n < at)
		tk_put8(b, 0);
}

static void section_header(struct tk_bytes *b, const char *name, uint32_t vsize, uint32_t rva,
			   uint32_t raw_size, uint32_t raw_off, uint32_t flags)
{
	uint8_t n[8] = { 0 };
	memcpy(n, name, strlen(name) < 8 ? strlen(name) : 8);
	tk_put(b, n, 8);
	tk_put32(b, vsize);
	tk_put32(b, rva);
	tk_put32(b, raw_size);
	tk_put32(b, raw_off);
	tk_put32(b, 0);
	tk_put32(b, 0);
	tk_put16(b, 0);
	tk_put16(b, 0);
	tk_put32(b, flags);
}

static void symbol(struct tk_bytes *b, const char *short_name, uint32_t long_at, uint32_t value,
		   int16_t section, uint16_t type, uint8_t class, uint8_t aux)
{
	uint8_t n[8] = { 0 };
	if (short_name)
		memcpy(n, short_name, strlen(short_name));
	else
		memcpy(n + 4, &long_at, 4);
	tk_put(b, n, 8);
	tk_put32(b, value);
	tk_put16(b, (uint16_t)section);
	tk_put16(b, type);
	tk_put8(b, class);
	tk_put8(b, aux);
	for (uint8_t i = 0; i < aux; i++)
		for (int k = 0; k < 18; k++)
			tk_put8(b, 0xee);
}

/* The COFF string table: ".debug_info" at 4, "a_very_long_function" at 16. */
static void string_table(struct tk_bytes *b)
{
	static const char s[] = ".debug_info\0a_very_long_function";
	tk_put32(b, 4 + sizeof(s));
	tk_put(b, s, sizeof(s));
}

static void build_pe(struct tk_bytes *b, const struct pe_opts *o)
{
	uint16_t nsec = o->debug_section ? 3 : 2;
	tk_put(b, "MZ", 2);
	pad_to(b, 0x3c);
	tk_put32(b, 0x40);
	tk_put(b, "PE\0\0", 4);
	tk_put16(b, 0x8664);
	tk_put16(b, nsec);
	tk_put32(b, 0);
	tk_put32(b, o->symbols ? SYMTAB_OFF : 0);
	tk_put32(b, o->symbols ? 5 : 0); /* 4 symbols, one with an aux record */
	tk_put16(b, 240);
	tk_put16(b, 0x22);
	size_t opt = b->n;
	tk_put16(b, 0x20b);
	pad_to(b, opt + 24);
	tk_put64(b, IMAGE_BASE);
	pad_to(b, opt + 108);
	tk_put32(b, 16);
	pad_to(b, opt + 112 + 6 * 8);
	tk_put32(b, o->codeview ? RDATA_RVA : 0);
	tk_put32(b, o->codeview ? 28 : 0);
	pad_to(b, SECTIONS_AT);
	section_header(b, ".text", 0x40, TEXT_RVA, 0x200, TEXT_OFF, 0x60000020);
	section_header(b, ".rdata", 0x100, RDATA_RVA, 0x200, RDATA_OFF, 0x40000040);
	if (o->debug_section)
		section_header(b, "/4", 0x10, DEBUG_RVA, 0x200, DEBUG_OFF, 0x42000040);
	pad_to(b, TEXT_OFF);
	for (int i = 0; i < 0x40; i++)
		tk_put8(b, 0xc3);
	pad_to(b, RDATA_OFF);
	/* The debug directory: one CodeView entry, its data at RDATA + 0x20. */
	tk_put32(b, 0);
	tk_put32(b, 0);
	tk_put32(b, 0);
	tk_put32(b, 2);
	tk_put32(b, 24 + 15);
	tk_put32(b, RDATA_RVA + 0x20);
	tk_put32(b, RDATA_OFF + 0x20);
	pad_to(b, RDATA_OFF + 0x20);
	tk_put(b, "RSDS", 4);
	tk_put(b, guid, 16);
	tk_put32(b, AGE);
	tk_put(b, "C:\\build\\x.pdb", 15);
	pad_to(b, DEBUG_OFF);
	for (int i = 0; i < 0x10; i++)
		tk_put8(b, 0);
	pad_to(b, SYMTAB_OFF);
	if (!o->symbols)
		return;
	symbol(b, ".text", 0, 0, 1, 0, 3, 1);
	symbol(b, "main_fn", 0, 0, 1, 0x20, 2, 0);
	symbol(b, NULL, 16, 0x20, 1, 0x20, 3, 0);
	symbol(b, "data", 0, 0x10, 2, 0, 2, 0);
	string_table(b);
}

static const struct pe_opts full = { 1, 1, 1 };
static const struct pe_opts no_dwarf = { 1, 0, 1 };

static struct hp_pe *open_built(const struct pe_opts *o)
{
	struct tk_bytes b = { 0 };
	char err[256] = "";
	build_pe(&b, o);
	struct hp_pe *pe = hp_pe_from_bytes(b.p, b.n, err, sizeof(err));
	ck_assert_msg(pe, "hp_pe_from_bytes: %s", err);
	free(b.p);
	return pe;
}

/* Writes the image to DIR/name; the path in out. */
static void save_built(const struct pe_opts *o, const char *dir, const char *name, char *out,
		       size_t len)
{
	struct tk_bytes b = { 0 };
	build_pe(&b, o);
	ck_assert_int_lt(snprintf(out, len, "%s/%s", dir, name), (int)len);
	tk_save(out, &b);
	free(b.p);
}

static struct hp_module pe_module(const char *path, uint64_t bias, int with_identity)
{
	static struct hp_segment seg;
	struct hp_module m = { 0 };
	m.bias = bias;
	m.path = (char *)path;
	if (with_identity) {
		memcpy(m.build_id, guid, 16);
		uint32_t age = AGE;
		memcpy(m.build_id + 16, &age, 4);
		m.build_id_len = 20;
	}
	seg = (struct hp_segment){ .start = IMAGE_BASE + bias + TEXT_RVA, .size = 0x40, .flags = 5 };
	m.seg = &seg;
	m.nseg = 1;
	return m;
}

/* ---- the image ---------------------------------------------------------- */

START_TEST(test_image_base_and_identity)
{
	struct hp_pe *pe = open_built(&full);
	uint8_t id[HP_PE_IDENTITY_LEN];
	ck_assert_uint_eq(hp_pe_image_base(pe), IMAGE_BASE);
	ck_assert_uint_eq(hp_pe_identity(pe, id), 20);
	ck_assert_mem_eq(id, guid, 16);
	ck_assert_uint_eq(id[16], AGE);
	ck_assert_str_eq(hp_pe_pdb_path(pe), "C:\\build\\x.pdb");
	hp_pe_close(pe);
}
END_TEST

START_TEST(test_no_codeview_no_identity)
{
	struct pe_opts o = full;
	o.codeview = 0;
	struct hp_pe *pe = open_built(&o);
	uint8_t id[HP_PE_IDENTITY_LEN];
	ck_assert_uint_eq(hp_pe_identity(pe, id), 0);
	ck_assert_ptr_null(hp_pe_pdb_path(pe));
	hp_pe_close(pe);
}
END_TEST

START_TEST(test_long_section_name_and_dwarf)
{
	struct hp_pe *pe = open_built(&full);
	ck_assert_int_eq(hp_pe_has_dwarf(pe), 1);
	hp_pe_close(pe);
	pe = open_built(&no_dwarf);
	ck_assert_int_eq(hp_pe_has_dwarf(pe), 0);
	hp_pe_close(pe);
}
END_TEST

START_TEST(test_only_function_symbols_counted)
{
	struct hp_pe *pe = open_built(&full);
	ck_assert_uint_eq(hp_pe_function_count(pe), 2);
	hp_pe_close(pe);
	struct pe_opts o = full;
	o.symbols = 0;
	pe = open_built(&o);
	ck_assert_uint_eq(hp_pe_function_count(pe), 0);
	hp_pe_close(pe);
}
END_TEST

/* The ELF view, read back with libelf: a PT_LOAD per loaded section at
 * ImageBase + RVA, the functions in .symtab with sizes up to the next. */
START_TEST(test_elf_view)
{
	struct hp_pe *pe = open_built(&full);
	char err[256] = "";
	int fd = hp_pe_elf_view(pe, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	size_t nph = 0;
	ck_assert_int_eq(elf_getphdrnum(elf, &nph), 0);
	ck_assert_uint_eq(nph, 2);
	GElf_Phdr ph;
	ck_assert_ptr_nonnull(gelf_getphdr(elf, 0, &ph));
	ck_assert_uint_eq(ph.p_vaddr, IMAGE_BASE + TEXT_RVA);
	ck_assert_uint_eq(ph.p_memsz, 0x40);
	int names = 0, debug = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		const char *sname = elf_strptr(elf, shstrndx, sh.sh_name);
		debug += sname && !strcmp(sname, ".debug_info") && !(sh.sh_flags & SHF_ALLOC);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			gelf_getsym(d, (int)i, &sym);
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!strcmp(n, "main_fn")) {
				ck_assert_uint_eq(sym.st_value, IMAGE_BASE + TEXT_RVA);
				ck_assert_uint_eq(sym.st_size, 0x20);
				ck_assert_int_eq(GELF_ST_BIND(sym.st_info), STB_GLOBAL);
				names++;
			} else if (!strcmp(n, "a_very_long_function")) {
				ck_assert_uint_eq(sym.st_value, IMAGE_BASE + TEXT_RVA + 0x20);
				ck_assert_uint_eq(sym.st_size, 0x20); /* to the section's end */
				ck_assert_int_eq(GELF_ST_BIND(sym.st_info), STB_LOCAL);
				names++;
			} else {
				ck_abort_msg("unexpected symbol %s", n);
			}
		}
	}
	ck_assert_int_eq(names, 2);
	ck_assert_int_eq(debug, 1);
	elf_end(elf);
	close(fd);
	hp_pe_close(pe);
}
END_TEST

/* ---- bad images --------------------------------------------------------- */

/* Every prefix of a good image is refused or read, never read past (the
 * ASan build would see it). */
START_TEST(test_every_truncation)
{
	struct tk_bytes b = { 0 };
	build_pe(&b, &full);
	int refused = 0;
	for (size_t n = 0; n <= b.n; n++) {
		char err[256] = "";
		struct hp_pe *pe = hp_pe_from_bytes(b.p, n, err, sizeof(err));
		if (!pe) {
			ck_assert_msg(*err, "refused %zu bytes without a reason", n);
			refused++;
		}
		hp_pe_close(pe);
	}
	ck_assert_int_gt(refused, 0);
	free(b.p);
}
END_TEST

/* Each byte of a good image set to 0xff, then to 0x80, in turn: refused
 * or read, and the ELF view of what is read still built. */
START_TEST(test_every_byte_damaged)
{
	struct tk_bytes b = { 0 };
	build_pe(&b, &full);
	static const uint8_t bad[] = { 0xff, 0x80 };
	int read = 0;
	for (size_t at = 0; at < b.n; at++)
		for (size_t k = 0; k < sizeof(bad); k++) {
			uint8_t keep = b.p[at];
			b.p[at] = bad[k];
			char err[256] = "";
			struct hp_pe *pe = hp_pe_from_bytes(b.p, b.n, err, sizeof(err));
			b.p[at] = keep;
			if (!pe)
				continue;
			int fd = hp_pe_elf_view(pe, err, sizeof(err));
			ck_assert_msg(fd >= 0, "byte %zu = %#x: %s", at, bad[k], err);
			close(fd);
			hp_pe_close(pe);
			read++;
		}
	ck_assert_int_gt(read, 0);
	free(b.p);
}
END_TEST

START_TEST(test_section_past_end_refused)
{
	struct tk_bytes b = { 0 };
	build_pe(&b, &full);
	uint32_t far = 0x7fffff00;
	memcpy(b.p + SECTIONS_AT + 20, &far, 4); /* .text's PointerToRawData */
	char err[256] = "";
	ck_assert_ptr_null(hp_pe_from_bytes(b.p, b.n, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "past the end"));
	free(b.p);
}
END_TEST

START_TEST(test_not_a_pe)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[256] = "";
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/elf", dir);
	struct tk_bytes b = { 0 };
	tk_put(&b, "\177ELF", 4);
	pad_to(&b, 128);
	tk_save(path, &b);
	ck_assert_int_eq(hp_pe_is_pe(path), 0);
	ck_assert_ptr_null(hp_pe_open(path, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not a PE"));
	ck_assert_int_eq(hp_pe_is_pe(dir), 0);
	free(b.p);
}
END_TEST

/* ---- paths --------------------------------------------------------------- */

START_TEST(test_local_path_of_linux_path)
{
	ck_assert_ptr_null(hp_pe_local_path("/not/windows"));
}
END_TEST

START_TEST(test_path_through_dosdevices)
{
	char dir[PATH_MAX], p[PATH_MAX + 64], link[PATH_MAX + 64], file[PATH_MAX + 64];
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(p, sizeof(p), "%s/prefix/dosdevices", dir);
	snprintf(link, sizeof(link), "%s/prefix", dir);
	ck_assert_int_eq(mkdir(link, 0700), 0);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/root", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(link, sizeof(link), "%s/prefix/dosdevices/z:", dir);
	ck_assert_int_eq(symlink(p, link), 0);
	save_built(&full, p, "x.exe", file, sizeof(file));
	snprintf(p, sizeof(p), "%s/prefix", dir);
	setenv("WINEPREFIX", p, 1);
	char *local = hp_pe_local_path("Z:\\x.exe");
	ck_assert_ptr_nonnull(local);
	snprintf(p, sizeof(p), "%s/prefix/dosdevices/z:/x.exe", dir);
	ck_assert_str_eq(local, p);
	free(local);
	ck_assert_ptr_null(hp_pe_local_path("Y:\\x.exe"));
}
END_TEST

START_TEST(test_path_falls_back_to_cwd)
{
	char dir[PATH_MAX], file[PATH_MAX + 16], old[PATH_MAX];
	tk_make_test_dir(dir, sizeof(dir), top);
	save_built(&full, dir, "w.dll", file, sizeof(file));
	setenv("WINEPREFIX", dir, 1); /* no dosdevices there */
	ck_assert_ptr_nonnull(getcwd(old, sizeof(old)));
	ck_assert_int_eq(chdir(dir), 0);
	char *local = hp_pe_local_path("C:\\elsewhere\\w.dll");
	ck_assert_int_eq(chdir(old), 0);
	ck_assert_ptr_nonnull(local);
	ck_assert_str_eq(local, "w.dll");
	free(local);
}
END_TEST

/* ---- hp_symbols on PE modules ------------------------------------------ */

static struct hp_symbols *symbols_for(struct hp_module *m)
{
	char err[256] = "";
	struct hp_symbols *s = hp_symbols_new_debug_path(m, 1, "/nonexistent", err, sizeof(err));
	ck_assert_msg(s, "%s", err);
	return s;
}

START_TEST(test_symbols_name_pe_functions_at_bias)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	save_built(&no_dwarf, dir, "x.exe", file, sizeof(file));
	uint64_t bias = 0x7f0000000ull;
	struct hp_module m = pe_module(file, bias, 1);
	struct hp_symbols *s = symbols_for(&m);
	struct hp_symbol sym;
	hp_symbols_lookup(s, IMAGE_BASE + bias + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "main_fn");
	ck_assert_str_eq(sym.module, "x.exe");
	ck_assert_int_eq(sym.resolved, 1);
	hp_symbols_lookup(s, IMAGE_BASE + bias + TEXT_RVA + 0x20, &sym);
	ck_assert_str_eq(sym.name, "a_very_long_function");
	size_t it = 0;
	ck_assert_ptr_null(hp_symbols_next_problem(s, &it));
	hp_symbols_free(s);
}
END_TEST

START_TEST(test_symbols_identity_mismatch)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	save_built(&no_dwarf, dir, "x.exe", file, sizeof(file));
	struct hp_module m = pe_module(file, 0, 1);
	m.build_id[0] ^= 1;
	struct hp_symbols *s = symbols_for(&m);
	struct hp_symbol sym;
	hp_symbols_lookup(s, IMAGE_BASE + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "x.exe+0x140001000");
	ck_assert_int_eq(sym.resolved, 0);
	size_t it = 0;
	const char *why = hp_symbols_next_problem(s, &it);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "build-id mismatch"));
	ck_assert_ptr_null(hp_symbols_next_problem(s, &it));
	hp_symbols_free(s);
}
END_TEST

/* A module recorded by its Windows path, found through WINEPREFIX. */
START_TEST(test_symbols_windows_path)
{
	char dir[PATH_MAX], p[PATH_MAX + 64], file[PATH_MAX + 64];
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(p, sizeof(p), "%s/dosdevices", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/dosdevices/c:", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	save_built(&no_dwarf, p, "prog.exe", file, sizeof(file));
	setenv("WINEPREFIX", dir, 1);
	struct hp_module m = pe_module("C:\\prog.exe", 0x10000, 1);
	struct hp_symbols *s = symbols_for(&m);
	struct hp_symbol sym;
	hp_symbols_lookup(s, IMAGE_BASE + 0x10000 + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "main_fn");
	ck_assert_str_eq(sym.module, "prog.exe");
	hp_symbols_free(s);
}
END_TEST

/* ---- PDB modules -------------------------------------------------------- */

/* A stand-in for llvm-symbolizer: one answer to every question. */
static void fake_symbolizer(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/fake-symbolizer", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#!/bin/sh\nwhile read -r line; do\n"
	      "case $line in *0x140001000) printf 'msv_leaf\\nC:\\\\src\\\\m.c:12:3\\n\\n' ;;\n"
	      "*) printf '??\\n??:0:0\\n\\n' ;; esac\ndone\n",
	      f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0700), 0);
}

START_TEST(test_pdb_lookup)
{
	char dir[PATH_MAX], prog[PATH_MAX + 32], err[256] = "";
	tk_make_test_dir(dir, sizeof(dir), top);
	fake_symbolizer(dir, prog, sizeof(prog));
	setenv("HOOKPROF_LLVM_SYMBOLIZER", prog, 1);
	struct hp_pdb *p = hp_pdb_start(err, sizeof(err));
	ck_assert_msg(p, "%s", err);
	char *name, *file;
	int line;
	ck_assert_int_eq(hp_pdb_lookup(p, "/x/m.dll", IMAGE_BASE + TEXT_RVA, &name, &file, &line), 0);
	ck_assert_str_eq(name, "msv_leaf");
	ck_assert_str_eq(file, "C:\\src\\m.c");
	ck_assert_int_eq(line, 12);
	free(name);
	free(file);
	ck_assert_int_eq(hp_pdb_lookup(p, "/x/m.dll", IMAGE_BASE, &name, &file, &line), -1);
	ck_assert_ptr_null(name);
	hp_pdb_stop(p);
	unsetenv("HOOKPROF_LLVM_SYMBOLIZER");
}
END_TEST

/* No DWARF, no COFF symbols, a CodeView record: names from the PDB; with no
 * symbolizer, module+0xoffset and one problem that says why. */
START_TEST(test_symbols_pdb_module)
{
	char dir[PATH_MAX], prog[PATH_MAX + 32], file[PATH_MAX + 16], pdb[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	struct pe_opts o = { 1, 0, 0 };
	save_built(&o, dir, "m.dll", file, sizeof(file));
	save_built(&o, dir, "x.pdb", pdb, sizeof(pdb)); /* beside it: any bytes do */
	fake_symbolizer(dir, prog, sizeof(prog));
	struct hp_module m = pe_module(file, 0x1000000, 1);
	struct hp_symbol sym;
	setenv("HOOKPROF_LLVM_SYMBOLIZER", prog, 1);
	struct hp_symbols *s = symbols_for(&m);
	hp_symbols_lookup(s, IMAGE_BASE + 0x1000000 + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "msv_leaf");
	ck_assert_int_eq(sym.line, 12);
	hp_symbols_free(s);
	setenv("HOOKPROF_LLVM_SYMBOLIZER", "/nonexistent/llvm-symbolizer", 1);
	s = symbols_for(&m);
	hp_symbols_lookup(s, IMAGE_BASE + 0x1000000 + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "m.dll+0x140001000");
	hp_symbols_lookup(s, IMAGE_BASE + 0x1000000 + TEXT_RVA + 8, &sym);
	size_t it = 0;
	const char *why = hp_symbols_next_problem(s, &it);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "llvm-symbolizer"));
	ck_assert_ptr_null(hp_symbols_next_problem(s, &it));
	hp_symbols_free(s);
	unsetenv("HOOKPROF_LLVM_SYMBOLIZER");
}
END_TEST

/* An MSVC-built module whose PDB is not here: module+0xoffset, and one
 * problem naming the PDB, without asking the symbolizer. */
START_TEST(test_symbols_pdb_missing)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	struct pe_opts o = { 1, 0, 0 };
	save_built(&o, dir, "m.dll", file, sizeof(file));
	setenv("HOOKPROF_LLVM_SYMBOLIZER", "/nonexistent/llvm-symbolizer", 1);
	struct hp_module m = pe_module(file, 0, 1);
	struct hp_symbols *s = symbols_for(&m);
	struct hp_symbol sym;
	hp_symbols_lookup(s, IMAGE_BASE + TEXT_RVA, &sym);
	ck_assert_str_eq(sym.name, "m.dll+0x140001000");
	size_t it = 0;
	const char *why = hp_symbols_next_problem(s, &it);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "C:\\build\\x.pdb is neither there nor beside it"));
	ck_assert_ptr_null(strstr(why, "llvm-symbolizer"));
	ck_assert_ptr_null(hp_symbols_next_problem(s, &it));
	hp_symbols_free(s);
	unsetenv("HOOKPROF_LLVM_SYMBOLIZER");
}
END_TEST

/* ---- hp_pack on PE modules ---------------------------------------------- */

static char pdir[PATH_MAX], pfile[PATH_MAX + 64], ptrace[PATH_MAX + 64];
static struct hp_pack pack;

static void pack_setup(void)
{
	tk_make_test_dir(pdir, sizeof(pdir), top);
	memset(&pack, 0, sizeof(pack));
}

static void pack_teardown(void)
{
	hp_pack_free(&pack);
	unsetenv("WINEPREFIX");
}

/* A Wine prefix whose drive z: is pdir/win, with the image o there as
 * sub/NAME (its path in pfile); the trace ptrace (pdir/t.hookprof) of one
 * call of its first function, the module recorded as Z:\sub\NAME, with
 * its identity or none. */
static void pe_trace(const struct pe_opts *o, const char *name, int with_identity)
{
	char p[PATH_MAX + 64], link[PATH_MAX + 64], winpath[64];
	static const char *const made[] = { "prefix", "prefix/dosdevices", "win", "win/sub" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", pdir, made[i]);
		ck_assert_int_eq(mkdir(p, 0700), 0);
	}
	snprintf(p, sizeof(p), "%s/prefix", pdir);
	setenv("WINEPREFIX", p, 1);
	snprintf(link, sizeof(link), "%s/prefix/dosdevices/z:", pdir);
	snprintf(p, sizeof(p), "%s/win", pdir);
	ck_assert_int_eq(symlink(p, link), 0);
	snprintf(p, sizeof(p), "%s/win/sub", pdir);
	save_built(o, p, name, pfile, sizeof(pfile));
	snprintf(winpath, sizeof(winpath), "Z:\\sub\\%s", name);
	uint64_t bias = 0x7f0000000ull;
	struct hp_module hm = pe_module(winpath, bias, with_identity);
	struct tk_module m = { winpath, hm.build_id, hm.build_id_len, bias, 0, 0 };
	m.start = hm.seg[0].start;
	m.size = hm.seg[0].size;
	struct tk_bytes b = { 0 };
	tk_one_call_trace(&b, winpath, &m, 1, IMAGE_BASE + bias + TEXT_RVA);
	snprintf(ptrace, sizeof(ptrace), "%s/t.hookprof", pdir);
	tk_save(ptrace, &b);
	free(b.p);
}

/* Packs ptrace into pack: its one module's status and kind. */
static void pack_expect(enum hp_pack_status status, enum hp_pack_kind kind)
{
	char err[512] = "";
	hp_pack_free(&pack);
	ck_assert_msg(hp_pack_trace(ptrace, NULL, 0, &pack, err, sizeof(err)) == 0, "hp_pack_trace: %s",
		      err);
	ck_assert_uint_eq(pack.n, 1);
	ck_assert_int_eq(pack.mod[0].status, status);
	if (status == HP_PACK_STORED)
		ck_assert_int_eq(pack.mod[0].kind, kind);
}

static const char *name_in_trace(void)
{
	static char name[256];
	tk_name_of_function0(ptrace, IMAGE_BASE + 0x7f0000000ull + TEXT_RVA, name, sizeof(name));
	return name;
}

/* ptrace's pack, or a file in it: pdir/t.hookprof.symbols/REL. */
static const char *in_pack(const char *rel)
{
	static char p[2 * PATH_MAX];
	snprintf(p, sizeof(p), "%s.symbols%s%s", ptrace, *rel ? "/" : "", rel);
	return p;
}

/* The identity as the pack names it: GUID bytes as stored, then the age. */
#define IDENTITY_HEX "1032547698badcfe0123456789abcdef03000000"

START_TEST(test_pack_pe_named_after_it_is_gone)
{
	pe_trace(&no_dwarf, "x.exe", 1);
	pack_expect(HP_PACK_STORED, HP_PACK_MAIN);
	ck_assert_str_eq(pack.mod[0].stored, "pe/" IDENTITY_HEX "/x.exe");
	ck_assert_int_eq(unlink(pfile), 0);
	ck_assert_str_eq(name_in_trace(), "main_fn");
	/* Without the pack, the module is gone. */
	char away[PATH_MAX + 16];
	snprintf(away, sizeof(away), "%s/away", pdir);
	ck_assert_int_eq(rename(in_pack(""), away), 0);
	ck_assert_str_eq(name_in_trace(), "x.exe+0x140001000");
}
END_TEST

/* Packed again after a rebuild: the copy packed before is kept; a first
 * pack after it stores nothing. */
START_TEST(test_pack_pe_rebuilt)
{
	pe_trace(&no_dwarf, "x.exe", 1);
	pack_expect(HP_PACK_STORED, HP_PACK_MAIN);
	const struct pe_opts rebuilt = { 0, 0, 1 }; /* another identity: none */
	char sub[PATH_MAX + 16];
	snprintf(sub, sizeof(sub), "%s/win/sub", pdir);
	save_built(&rebuilt, sub, "x.exe", pfile, sizeof(pfile));
	pack_expect(HP_PACK_STORED, HP_PACK_KEPT);
	ck_assert_str_eq(name_in_trace(), "main_fn");
	tk_remove_tree(in_pack(""));
	pack_expect(HP_PACK_REBUILT, 0);
	ck_assert_ptr_null(pack.mod[0].stored);
	ck_assert_int_eq(unlink(pfile), 0);
	pack_expect(HP_PACK_MISSING, 0);
}
END_TEST

/* An MSVC-built module: its PDB, found beside it, is stored beside its copy. */
START_TEST(test_pack_pe_with_its_pdb)
{
	const struct pe_opts msvc = { 1, 0, 0 };
	pe_trace(&msvc, "m.dll", 1);
	pack_expect(HP_PACK_STORED, HP_PACK_NO_PDB);
	ck_assert_int_ne(access(in_pack("pe/" IDENTITY_HEX "/x.pdb"), F_OK), 0);
	char pdb[PATH_MAX + 32];
	snprintf(pdb, sizeof(pdb), "%s/win/sub/x.pdb", pdir);
	struct tk_bytes b = { 0 };
	tk_put(&b, "a PDB", 5);
	tk_save(pdb, &b);
	free(b.p);
	pack_expect(HP_PACK_STORED, HP_PACK_WITH_PDB);
	ck_assert_ptr_nonnull(pack.mod[0].pdb); /* beside the module, through the prefix */
	ck_assert_str_eq(pack.mod[0].pdb + strlen(pack.mod[0].pdb) - strlen("/sub/x.pdb"), "/sub/x.pdb");
	ck_assert_int_eq(access(in_pack("pe/" IDENTITY_HEX "/x.pdb"), F_OK), 0);
}
END_TEST

/* No CodeView record: stored by its Windows path, and read from there
 * rather than from the file at that path. */
START_TEST(test_pack_pe_without_identity_by_path)
{
	const struct pe_opts no_codeview = { 0, 0, 1 };
	pe_trace(&no_codeview, "y.dll", 0);
	pack_expect(HP_PACK_STORED, HP_PACK_MAIN);
	ck_assert_str_eq(pack.mod[0].stored, "pe/by-path/z/sub/y.dll");
	ck_assert_int_eq(unlink(pfile), 0);
	ck_assert_str_eq(name_in_trace(), "main_fn");
}
END_TEST

START_TEST(test_pe_pack_names)
{
	uint8_t id[20] = { 0xab };
	char *n = hp_symbols_pe_pack_name("C:\\a\\..\\x.dll", id, sizeof(id));
	ck_assert_str_eq(n, "pe/ab00000000000000000000000000000000000000/x.dll");
	free(n);
	n = hp_symbols_pe_pack_name("\\\\srv\\share\\\\x.dll", NULL, 0);
	ck_assert_str_eq(n, "pe/by-path/-/srv/share/x.dll");
	free(n);
	n = hp_symbols_pe_pack_name("\\\\?\\C:\\d/x.dll", NULL, 0);
	ck_assert_str_eq(n, "pe/by-path/c/d/x.dll");
	free(n);
	/* Nothing that leads out of the pack, nothing without a name. */
	ck_assert_ptr_null(hp_symbols_pe_pack_name("C:\\a\\..\\x.dll", NULL, 0));
	ck_assert_ptr_null(hp_symbols_pe_pack_name("C:\\.\\x.dll", NULL, 0));
	ck_assert_ptr_null(hp_symbols_pe_pack_name("C:\\a\\..", id, sizeof(id)));
	ck_assert_ptr_null(hp_symbols_pe_pack_name("C:\\a\\", id, sizeof(id)));
}
END_TEST

static Suite *pe_suite(void)
{
	Suite *s = suite_create("pe");
	TCase *image = tcase_create("image");
	tcase_add_test(image, test_image_base_and_identity);
	tcase_add_test(image, test_no_codeview_no_identity);
	tcase_add_test(image, test_long_section_name_and_dwarf);
	tcase_add_test(image, test_only_function_symbols_counted);
	tcase_add_test(image, test_elf_view);
	suite_add_tcase(s, image);
	TCase *limits = tcase_create("limits");
	tcase_add_test(limits, test_every_truncation);
	tcase_add_test(limits, test_every_byte_damaged);
	tcase_add_test(limits, test_section_past_end_refused);
	tcase_add_test(limits, test_not_a_pe);
	suite_add_tcase(s, limits);
	TCase *paths = tcase_create("paths");
	tcase_add_test(paths, test_local_path_of_linux_path);
	tcase_add_test(paths, test_path_through_dosdevices);
	tcase_add_test(paths, test_path_falls_back_to_cwd);
	suite_add_tcase(s, paths);
	TCase *symbols = tcase_create("symbols");
	tcase_add_test(symbols, test_symbols_name_pe_functions_at_bias);
	tcase_add_test(symbols, test_symbols_identity_mismatch);
	tcase_add_test(symbols, test_symbols_windows_path);
	tcase_add_test(symbols, test_pdb_lookup);
	tcase_add_test(symbols, test_symbols_pdb_module);
	tcase_add_test(symbols, test_symbols_pdb_missing);
	suite_add_tcase(s, symbols);
	TCase *packing = tcase_create("pack");
	tcase_add_checked_fixture(packing, pack_setup, pack_teardown);
	tcase_add_test(packing, test_pack_pe_named_after_it_is_gone);
	tcase_add_test(packing, test_pack_pe_rebuilt);
	tcase_add_test(packing, test_pack_pe_with_its_pdb);
	tcase_add_test(packing, test_pack_pe_without_identity_by_path);
	tcase_add_test(packing, test_pe_pack_names);
	suite_add_tcase(s, packing);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(pe_suite(), top, sizeof(top), "check_pe");
}
