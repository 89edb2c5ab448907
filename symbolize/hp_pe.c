/*
 * hp_pe.c - PE32+ images read for the symbolizer, and their ELF view.
 *
 * Every offset, size and count read from the file is checked against the
 * file's size before use: a damaged image is refused, never read past.
 */
#define _GNU_SOURCE
#include "hp_pe.h"
#include "hp_path.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/hp_format.h"

#define PE_MAX_BYTES (1ull << 31)
#define MACHINE_AMD64 0x8664
#define OPT_MAGIC_PE32PLUS 0x20b
#define DIR_DEBUG 6
#define DEBUG_TYPE_CODEVIEW 2
#define SCN_UNINITIALIZED 0x00000080u
#define SCN_EXECUTE 0x20000000u
#define SCN_READ 0x40000000u
#define SCN_WRITE 0x80000000u
#define SYMBOL_SIZE 18
#define SECTION_HEADER_SIZE 40
#define CLASS_EXTERNAL 2
#define CLASS_STATIC 3
#define DTYPE_FUNCTION 2

struct pe_section {
	char *name;
	uint32_t vsize, rva, raw_size, raw_off, flags;
};

struct pe_symbol {
	char *name;
	uint64_t addr; /* ImageBase + RVA */
	uint64_t size;
	uint16_t section; /* 1-based */
	int global;
};

struct hp_pe {
	uint8_t *data;
	size_t size;
	uint64_t image_base;
	struct pe_section *sec;
	uint16_t nsec;
	struct pe_symbol *sym;
	size_t nsym;
	uint8_t identity[HP_PE_IDENTITY_LEN];
	size_t identity_len;
	char *pdb_path;
};

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* p[off, off + len) lies in the file. */
static int in_file(const struct hp_pe *pe, uint64_t off, uint64_t len)
{
	return off <= pe->size && len <= pe->size - off;
}

/* ---- reading ----------------------------------------------------------- */

/* The COFF string table follows the symbol table: a u32 size (itself
 * included), then NUL-terminated names. NULL if off is outside it. */
static const char *coff_string(const struct hp_pe *pe, uint64_t table, uint64_t table_len,
			       uint64_t off)
{
	if (off < 4 || off >= table_len)
		return NULL;
	const char *s = (const char *)pe->data + table + off;
	return memchr(s, 0, table_len - off) ? s : NULL;
}

/* An 8-byte name field: the name itself (NUL-padded), or a reference. */
static char *short_name(const uint8_t *field)
{
	return strndup((const char *)field, 8);
}

struct coff_tables {
	uint64_t symtab, nsyms, strtab, strtab_len;
};

static int read_section_headers(struct hp_pe *pe, uint64_t at, const struct coff_tables *t,
				char *err, size_t errlen)
{
	if (!in_file(pe, at, (uint64_t)pe->nsec * SECTION_HEADER_SIZE)) {
		snprintf(err, errlen, "section headers run past the end of the file");
		return -1;
	}
	pe->sec = calloc(pe->nsec ? pe->nsec : 1, sizeof(*pe->sec));
	if (!pe->sec)
		goto nomem;
	for (uint16_t i = 0; i < pe->nsec; i++) {
		const uint8_t *h = pe->data + at + (uint64_t)i * SECTION_HEADER_SIZE;
		struct pe_section *s = &pe->sec[i];
		s->vsize = hp_rd32(h + 8);
		s->rva = hp_rd32(h + 12);
		s->raw_size = hp_rd32(h + 16);
		s->raw_off = hp_rd32(h + 20);
		s->flags = hp_rd32(h + 36);
		if (s->raw_size && !in_file(pe, s->raw_off, s->raw_size)) {
			snprintf(err, errlen, "section %u's data runs past the end of the file", i + 1);
			return -1;
		}
		/* "/123": a long name at offset 123 of the string table. */
		const char *lng = NULL;
		if (h[0] == '/' && t->strtab_len)
			lng = coff_string(pe, t->strtab, t->strtab_len, strtoull((const char *)h + 1, NULL, 10));
		s->name = lng ? strdup(lng) : short_name(h);
		if (!s->name)
			goto nomem;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* The file offset of an RVA, through the section that holds it. */
static int rva_to_offset(const struct hp_pe *pe, uint32_t rva, uint32_t len, uint64_t *off)
{
	for (uint16_t i = 0; i < pe->nsec; i++) {
		const struct pe_section *s = &pe->sec[i];
		if (rva >= s->rva && (uint64_t)rva - s->rva + len <= s->raw_size) {
			*off = (uint64_t)s->raw_off + (rva - s->rva);
			return 0;
		}
	}
	return -1;
}

/* The CodeView record: "RSDS", GUID (16), age (u32), PDB path. An image
 * without one, or with a damaged one, just has no identity. */
static void read_codeview(struct hp_pe *pe, uint32_t dir_rva, uint32_t dir_size)
{
	uint64_t at;
	if (!dir_rva || rva_to_offset(pe, dir_rva, dir_size, &at) < 0)
		return;
	for (uint32_t i = 0; i + 28 <= dir_size; i += 28) {
		const uint8_t *d = pe->data + at + i;
		uint32_t type = hp_rd32(d + 12), len = hp_rd32(d + 16), off = hp_rd32(d + 24);
		if (type != DEBUG_TYPE_CODEVIEW || len < 24 || !in_file(pe, off, len))
			continue;
		const uint8_t *cv = pe->data + off;
		if (memcmp(cv, "RSDS", 4))
			continue;
		memcpy(pe->identity, cv + 4, HP_PE_IDENTITY_LEN);
		pe->identity_len = HP_PE_IDENTITY_LEN;
		if (len > 24 && memchr(cv + 24, 0, len - 24))
			pe->pdb_path = strdup((const char *)cv + 24);
		return;
	}
}

static int is_function_symbol(const uint8_t *r, uint16_t nsec)
{
	int16_t section = (int16_t)rd16(r + 12);
	uint16_t type = rd16(r + 14);
	uint8_t class = r[16];
	return section > 0 && section <= nsec && (type >> 4 & 3) == DTYPE_FUNCTION &&
	       (class == CLASS_EXTERNAL || class == CLASS_STATIC);
}

static int by_address(const void *x, const void *y)
{
	const struct pe_symbol *a = x, *b = y;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

/* COFF has no sizes: a function ends where the next one in its section
 * begins, or at the section's end. */
static void size_symbols(struct hp_pe *pe)
{
	qsort(pe->sym, pe->nsym, sizeof(*pe->sym), by_address);
	for (size_t i = 0; i < pe->nsym; i++) {
		struct pe_symbol *s = &pe->sym[i];
		const struct pe_section *sec = &pe->sec[s->section - 1];
		uint64_t end = pe->image_base + sec->rva + (sec->vsize ? sec->vsize : sec->raw_size);
		if (i + 1 < pe->nsym && pe->sym[i + 1].section == s->section && pe->sym[i + 1].addr < end)
			end = pe->sym[i + 1].addr;
		s->size = end > s->addr ? end - s->addr : 0;
	}
}

static int read_symbols(struct hp_pe *pe, const struct coff_tables *t, char *err, size_t errlen)
{
	pe->sym = calloc(t->nsyms ? t->nsyms : 1, sizeof(*pe->sym));
	if (!pe->sym)
		goto nomem;
	for (uint64_t i = 0; i < t->nsyms; i += 1 + pe->data[t->symtab + i * SYMBOL_SIZE + 17]) {
		const uint8_t *r = pe->data + t->symtab + i * SYMBOL_SIZE;
		if (!is_function_symbol(r, pe->nsec))
			continue;
		const char *lng = NULL;
		if (!hp_rd32(r) && !(lng = coff_string(pe, t->strtab, t->strtab_len, hp_rd32(r + 4))))
			continue;
		struct pe_symbol *s = &pe->sym[pe->nsym];
		s->section = rd16(r + 12);
		s->addr = pe->image_base + pe->sec[s->section - 1].rva + hp_rd32(r + 8);
		s->global = r[16] == CLASS_EXTERNAL;
		s->name = lng ? strdup(lng) : short_name(r);
		if (!s->name)
			goto nomem;
		pe->nsym++;
	}
	size_symbols(pe);
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* Where the symbol and string tables are; both absent is fine (a stripped
 * image), one that runs past the end of the file is not. */
static int find_coff_tables(const struct hp_pe *pe, const uint8_t *coff, struct coff_tables *t,
			    char *err, size_t errlen)
{
	*t = (struct coff_tables){ hp_rd32(coff + 8), hp_rd32(coff + 12), 0, 0 };
	if (!t->symtab || !t->nsyms) {
		t->nsyms = 0;
		return 0;
	}
	t->strtab = t->symtab + t->nsyms * SYMBOL_SIZE;
	if (!in_file(pe, t->symtab, t->nsyms * SYMBOL_SIZE + 4)) {
		snprintf(err, errlen, "COFF symbol table runs past the end of the file");
		return -1;
	}
	t->strtab_len = hp_rd32(pe->data + t->strtab);
	if (t->strtab_len < 4 || !in_file(pe, t->strtab, t->strtab_len)) {
		snprintf(err, errlen, "COFF string table runs past the end of the file");
		return -1;
	}
	return 0;
}

static int parse(struct hp_pe *pe, char *err, size_t errlen)
{
	if (pe->size < 0x40 || memcmp(pe->data, "MZ", 2)) {
		snprintf(err, errlen, "not a PE image (no MZ header)");
		return -1;
	}
	uint64_t nt = hp_rd32(pe->data + 0x3c);
	if (!in_file(pe, nt, 24) || memcmp(pe->data + nt, "PE\0\0", 4)) {
		snprintf(err, errlen, "not a PE image (no PE signature)");
		return -1;
	}
	const uint8_t *coff = pe->data + nt + 4;
	uint16_t opt_size = rd16(coff + 16);
	const uint8_t *opt = coff + 20;
	if (rd16(coff) != MACHINE_AMD64 || opt_size < 112 || !in_file(pe, nt + 24, opt_size) ||
	    rd16(opt) != OPT_MAGIC_PE32PLUS) {
		snprintf(err, errlen, "not an x86-64 PE32+ image");
		return -1;
	}
	pe->image_base = hp_rd64(opt + 24);
	pe->nsec = rd16(coff + 2);
	if (pe->nsec > UINT16_MAX - 4) { /* the ELF view adds 4 sections */
		snprintf(err, errlen, "too many sections");
		return -1;
	}
	struct coff_tables t;
	if (find_coff_tables(pe, coff, &t, err, errlen) < 0 ||
	    read_section_headers(pe, nt + 24 + opt_size, &t, err, errlen) < 0)
		return -1;
	uint32_t ndirs = hp_rd32(opt + 108);
	if (ndirs > DIR_DEBUG && 112 + (DIR_DEBUG + 1) * 8 <= opt_size)
		read_codeview(pe, hp_rd32(opt + 112 + DIR_DEBUG * 8), hp_rd32(opt + 116 + DIR_DEBUG * 8));
	return read_symbols(pe, &t, err, errlen);
}

struct hp_pe *hp_pe_from_bytes(const uint8_t *p, size_t n, char *err, size_t errlen)
{
	struct hp_pe *pe = calloc(1, sizeof(*pe));
	if (!pe || !(pe->data = malloc(n ? n : 1))) {
		free(pe);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(pe->data, p, n);
	pe->size = n;
	if (parse(pe, err, errlen) < 0) {
		hp_pe_close(pe);
		return NULL;
	}
	return pe;
}

static uint8_t *read_whole(const char *path, size_t *n, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *p = NULL;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > PE_MAX_BYTES) {
		snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file of at most 2 GiB");
		goto out;
	}
	p = malloc(st.st_size ? (size_t)st.st_size : 1);
	size_t got = 0;
	while (p && got < (size_t)st.st_size) {
		ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (!p || got != (size_t)st.st_size) {
		snprintf(err, errlen, "%s: %s", path, p ? "short read" : "out of memory");
		free(p);
		p = NULL;
	}
	*n = got;
out:
	if (fd >= 0)
		close(fd);
	return p;
}

struct hp_pe *hp_pe_open(const char *path, char *err, size_t errlen)
{
	size_t n = 0;
	uint8_t *p = read_whole(path, &n, err, errlen);
	if (!p)
		return NULL;
	struct hp_pe *pe = calloc(1, sizeof(*pe));
	if (!pe) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pe->data = p;
	pe->size = n;
	if (parse(pe, err, errlen) < 0) {
		hp_pe_close(pe);
		return NULL;
	}
	return pe;
}

int hp_pe_is_pe(const char *path)
{
	uint8_t head[0x40], sig[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	int yes = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) && !memcmp(head, "MZ", 2) &&
		  pread(fd, sig, 4, hp_rd32(head + 0x3c)) == 4 && !memcmp(sig, "PE\0\0", 4);
	if (fd >= 0)
		close(fd);
	return yes;
}

void hp_pe_close(struct hp_pe *pe)
{
	if (!pe)
		return;
	for (uint16_t i = 0; pe->sec && i < pe->nsec; i++)
		free(pe->sec[i].name);
	for (size_t i = 0; i < pe->nsym; i++)
		free(pe->sym[i].name);
	free(pe->sec);
	free(pe->sym);
	free(pe->pdb_path);
	free(pe->data);
	free(pe);
}

uint64_t hp_pe_image_base(const struct hp_pe *pe) { return pe->image_base; }

size_t hp_pe_identity(const struct hp_pe *pe, uint8_t id[HP_PE_IDENTITY_LEN])
{
	memcpy(id, pe->identity, pe->identity_len);
	return pe->identity_len;
}

const char *hp_pe_pdb_path(const struct hp_pe *pe) { return pe->pdb_path; }

size_t hp_pe_function_count(const struct hp_pe *pe) { return pe->nsym; }

int hp_pe_has_dwarf(const struct hp_pe *pe)
{
	for (uint16_t i = 0; i < pe->nsec; i++)
		if (!strcmp(pe->sec[i].name, ".debug_info") && pe->sec[i].raw_size)
			return 1;
	return 0;
}

/* ---- the ELF view ------------------------------------------------------ */

static int is_debug(const struct pe_section *s) { return !strncmp(s->name, ".debug_", 7); }

/* Bytes of the section in the file: mingw pads debug sections to the file
 * alignment, and VirtualSize says where their contents end. */
static uint32_t data_size(const struct pe_section *s)
{
	if (s->flags & SCN_UNINITIALIZED && !s->raw_size)
		return 0;
	return s->vsize && s->vsize < s->raw_size ? s->vsize : s->raw_size;
}

struct elf_out {
	uint8_t *p;
	size_t n, cap;
	int failed;
};

static void out_put(struct elf_out *o, const void *src, size_t len)
{
	if (o->failed)
		return;
	if (o->n + len > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		while (cap < o->n + len)
			cap *= 2;
		uint8_t *p = realloc(o->p, cap);
		if (!p) {
			o->failed = 1;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->n, src, len);
	o->n += len;
}

static void out_align(struct elf_out *o, size_t a)
{
	static const uint8_t zeros[16];
	while (o->n % a)
		out_put(o, zeros, a - o->n % a < sizeof(zeros) ? a - o->n % a : sizeof(zeros));
}

/* ELF sections: 0 null, 1..nsec the PE's, then .symtab, .strtab, .shstrtab. */
struct view_layout {
	uint64_t *off; /* per PE section, its offset in the view */
	uint64_t symtab_off, strtab_off, shstrtab_off, shdr_off;
	size_t nload;
	struct elf_out strtab, shstrtab;
	uint32_t *shname; /* per ELF section */
};

static uint32_t add_string(struct elf_out *t, const char *s)
{
	uint32_t at = (uint32_t)t->n;
	out_put(t, s, strlen(s) + 1);
	return at;
}

static Elf64_Word elf_flags_of(const struct pe_section *s)
{
	if (is_debug(s))
		return 0;
	return SHF_ALLOC | (s->flags & SCN_EXECUTE ? SHF_EXECINSTR : 0) | (s->flags & SCN_WRITE ? SHF_WRITE : 0);
}

static void put_ehdr(struct elf_out *o, const struct hp_pe *pe, const struct view_layout *l)
{
	Elf64_Ehdr eh = { 0 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	/* ET_DYN: libdwfl places it at the recorded bias (ET_EXEC it would not). */
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(Elf64_Ehdr);
	eh.e_shoff = l->shdr_off;
	eh.e_ehsize = sizeof(Elf64_Ehdr);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)l->nload;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (Elf64_Half)(pe->nsec + 4);
	eh.e_shstrndx = (Elf64_Half)(pe->nsec + 3);
	out_put(o, &eh, sizeof(eh));
}

static void put_phdrs(struct elf_out *o, const struct hp_pe *pe, const struct view_layout *l)
{
	for (uint16_t i = 0; i < pe->nsec; i++) {
		const struct pe_section *s = &pe->sec[i];
		if (is_debug(s))
			continue;
		Elf64_Phdr ph = { 0 };
		ph.p_type = PT_LOAD;
		ph.p_flags = (s->flags & SCN_EXECUTE ? PF_X : 0) | (s->flags & SCN_WRITE ? PF_W : 0) |
			     (s->flags & SCN_READ ? PF_R : 0);
		ph.p_offset = l->off[i];
		ph.p_vaddr = ph.p_paddr = pe->image_base + s->rva;
		ph.p_filesz = data_size(s);
		ph.p_memsz = s->vsize > ph.p_filesz ? s->vsize : ph.p_filesz;
		ph.p_align = 1; /* the view's offsets keep no page alignment */
		out_put(o, &ph, sizeof(ph));
	}
}

static void put_symtab(struct elf_out *o, const struct hp_pe *pe, struct view_layout *l)
{
	Elf64_Sym null = { 0 };
	out_put(o, &null, sizeof(null));
	/* ELF wants the local symbols first. */
	for (int global = 0; global < 2; global++)
		for (size_t i = 0; i < pe->nsym; i++) {
			const struct pe_symbol *s = &pe->sym[i];
			if (s->global != global)
				continue;
			Elf64_Sym sym = { 0 };
			sym.st_name = add_string(&l->strtab, s->name);
			sym.st_info = ELF64_ST_INFO(global ? STB_GLOBAL : STB_LOCAL, STT_FUNC);
			sym.st_shndx = s->section;
			sym.st_value = s->addr;
			sym.st_size = s->size;
			out_put(o, &sym, sizeof(sym));
		}
}

static size_t local_symbols(const struct hp_pe *pe)
{
	size_t n = 0;
	for (size_t i = 0; i < pe->nsym; i++)
		n += !pe->sym[i].global;
	return n;
}

static void put_shdr(struct elf_out *o, uint32_t name, Elf64_Word type, Elf64_Xword flags,
		     uint64_t addr, uint64_t off, uint64_t size, Elf64_Word link, Elf64_Word info,
		     uint64_t entsize)
{
	Elf64_Shdr sh = { name, type, flags, addr, off, size, link, info, 1, entsize };
	out_put(o, &sh, sizeof(sh));
}

static void put_shdrs(struct elf_out *o, const struct hp_pe *pe, const struct view_layout *l)
{
	uint32_t n = pe->nsec;
	put_shdr(o, 0, SHT_NULL, 0, 0, 0, 0, 0, 0, 0);
	for (uint16_t i = 0; i < n; i++) {
		const struct pe_section *s = &pe->sec[i];
		uint32_t size = data_size(s);
		int nobits = !size && !is_debug(s);
		put_shdr(o, l->shname[i + 1], nobits ? SHT_NOBITS : SHT_PROGBITS, elf_flags_of(s),
			 is_debug(s) ? 0 : pe->image_base + s->rva, l->off[i], nobits ? s->vsize : size, 0, 0, 0);
	}
	put_shdr(o, l->shname[n + 1], SHT_SYMTAB, 0, 0, l->symtab_off, (pe->nsym + 1) * sizeof(Elf64_Sym),
		 n + 2, (Elf64_Word)(local_symbols(pe) + 1), sizeof(Elf64_Sym));
	put_shdr(o, l->shname[n + 2], SHT_STRTAB, 0, 0, l->strtab_off, l->strtab.n, 0, 0, 0);
	put_shdr(o, l->shname[n + 3], SHT_STRTAB, 0, 0, l->shstrtab_off, l->shstrtab.n, 0, 0, 0);
}

static void lay_out_view(struct elf_out *o, const struct hp_pe *pe, struct view_layout *l)
{
	for (uint16_t i = 0; i < pe->nsec; i++)
		l->nload += !is_debug(&pe->sec[i]);
	o->n = sizeof(Elf64_Ehdr) + l->nload * sizeof(Elf64_Phdr);
	/* The headers are written last, over this room. */
	uint8_t *room = calloc(1, o->n);
	size_t head = o->n;
	o->n = 0;
	if (room)
		out_put(o, room, head);
	else
		o->failed = 1;
	free(room);
	add_string(&l->shstrtab, "");
	for (uint16_t i = 0; i < pe->nsec; i++) {
		const struct pe_section *s = &pe->sec[i];
		out_align(o, 16);
		l->off[i] = o->n;
		out_put(o, pe->data + s->raw_off, data_size(s));
		l->shname[i + 1] = add_string(&l->shstrtab, s->name);
	}
	add_string(&l->strtab, "");
	out_align(o, 8);
	l->symtab_off = o->n;
	put_symtab(o, pe, l);
	l->strtab_off = o->n;
	out_put(o, l->strtab.p, l->strtab.n);
	l->shname[pe->nsec + 1] = add_string(&l->shstrtab, ".symtab");
	l->shname[pe->nsec + 2] = add_string(&l->shstrtab, ".strtab");
	l->shname[pe->nsec + 3] = add_string(&l->shstrtab, ".shstrtab");
	l->shstrtab_off = o->n;
	out_put(o, l->shstrtab.p, l->shstrtab.n);
	out_align(o, 8);
	l->shdr_off = o->n;
	put_shdrs(o, pe, l);
	o->failed |= l->strtab.failed | l->shstrtab.failed;
}

static int write_memfd(const struct elf_out *o, char *err, size_t errlen)
{
	int fd = memfd_create("hookprof-pe", MFD_CLOEXEC);
	size_t done = 0;
	while (fd >= 0 && done < o->n) {
		ssize_t w = write(fd, o->p + done, o->n - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (fd < 0 || done != o->n || lseek(fd, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "ELF view of a PE image: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int hp_pe_elf_view(const struct hp_pe *pe, char *err, size_t errlen)
{
	struct elf_out o = { 0 };
	struct view_layout l = { 0 };
	l.off = calloc(pe->nsec + 1u, sizeof(*l.off));
	l.shname = calloc(pe->nsec + 4u, sizeof(*l.shname));
	int fd = -1;
	if (l.off && l.shname) {
		lay_out_view(&o, pe, &l);
		if (!o.failed) {
			/* Now that every offset is known, the headers over their room. */
			struct elf_out head = { 0 };
			put_ehdr(&head, pe, &l);
			put_phdrs(&head, pe, &l);
			if (!head.failed)
				memcpy(o.p, head.p, head.n);
			o.failed |= head.failed;
			free(head.p);
		}
	}
	if (!l.off || !l.shname || o.failed)
		snprintf(err, errlen, "out of memory");
	else
		fd = write_memfd(&o, err, errlen);
	free(l.off);
	free(l.shname);
	free(l.strtab.p);
	free(l.shstrtab.p);
	free(o.p);
	return fd;
}

/* ---- paths ------------------------------------------------------------- */

static int is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* $WINEPREFIX/dosdevices/c:/rest/of/path, backslashes turned. */
static char *through_dosdevices(const char *path)
{
	const char *prefix = getenv("WINEPREFIX");
	const char *home = getenv("HOME");
	char *dir = NULL;
	if (prefix && *prefix)
		dir = strdup(prefix);
	else if (home && *home && asprintf(&dir, "%s/.wine", home) < 0)
		dir = NULL;
	if (!dir)
		return NULL;
	char *local = NULL;
	if (asprintf(&local, "%s/dosdevices/%c:%s", dir, hp_path_drive(path),
		     path + hp_path_drive_rest(path)) < 0)
		local = NULL;
	free(dir);
	for (char *c = local; c && *c; c++)
		if (*c == '\\')
			*c = '/';
	return local;
}

char *hp_pe_local_path(const char *path)
{
	if (!hp_path_is_windows(path))
		return NULL;
	char *local = hp_path_drive(path) ? through_dosdevices(path) : NULL;
	if (local && is_file(local))
		return local;
	free(local);
	const char *base = hp_path_base(path);
	return *base && is_file(base) ? strdup(base) : NULL;
}
