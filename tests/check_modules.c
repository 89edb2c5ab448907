/*
 * check_modules.c - MODULES records (lib/hp_modules.c). Each test creates
 * a trace with hp_output_create, writes module maps, reads the records
 * back with the symbolize reader and compares them with what the loader
 * says (dl_iterate_phdr, dladdr, the auxiliary vector) and with the ELF
 * files themselves (read with libelf, not through the code under test).
 *
 * hp_output and hp_modules keep static state, so every test runs in its
 * own process (Check's default CK_FORK). main() builds a few small shared
 * libraries with known build-ids, so that dlopen has something not yet
 * loaded to load.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"
#include "hp_modules.h"
#include "hp_output.h"
#include "testkit.h"

#include "../symbolize/hp_trace.h"

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 256];
static char dir[PATH_MAX];
static char path[PATH_MAX + 64];
static char err[1024];

/* The test libraries, built once by main() into top. */
static char lib_one[PATH_MAX], lib_two[PATH_MAX], lib_noid[PATH_MAX], lib_id64[PATH_MAX],
	lib_id80[PATH_MAX];
static int libs_built;

/* -Wl,--build-id=0x... of lib_one and lib_two */
static const uint8_t id_one[20] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc,
				    0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0xde, 0xad, 0xbe, 0xef };
static const uint8_t id_two[8] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };
/* lib_id64 and lib_id80: byte i is i + 1 */
#define ID_BYTE(i) ((uint8_t)((i) + 1))

/* The records of the trace, copied out of the reader. */
#define MAX_RECS 16
struct rec {
	uint32_t type, size;
	uint8_t *payload;
};
static struct rec recs[MAX_RECS];
static int nrecs;
/* recs parsed by the symbolize reader, one hp_trace_info per record */
static struct hp_trace_info snaps[MAX_RECS];
/* The MODULES_AT record that closed each snapshot: its tick and its size. */
static uint64_t moment_tick[MAX_RECS];
static uint32_t moment_count[MAX_RECS];
static int nmoments;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/m.hookprof", dir);
	err[0] = 0;
	nrecs = 0;
	nmoments = 0;
	memset(snaps, 0, sizeof(snaps));
}

static void teardown(void)
{
	for (int i = 0; i < nrecs; i++) {
		free(recs[i].payload);
		hp_trace_info_free(&snaps[i]);
	}
	nrecs = 0;
	tk_remove_tree(dir);
}

static void start_trace(void)
{
	ck_assert_msg(hp_output_create(path, "prog", 1, err, sizeof(err)) == 0, "%s", err);
}

static void need_libs(void)
{
	ck_assert_msg(libs_built, "the test libraries could not be built with cc (see stderr)");
}

/* ------------------------------------------------------- reading back */

/* Walks one MODULES payload by the byte layout of docs/format.md, checking
 * what the reader does not: reserved words are zero and nothing trails. */
static uint32_t check_layout(const uint8_t *p, uint32_t size)
{
	const uint8_t *end = p + size;
	ck_assert_uint_ge(size, 4);
	uint32_t count = hp_rd32(p);
	p += 4;
	for (uint32_t m = 0; m < count; m++) {
		ck_assert_uint_le(12, (size_t)(end - p)); /* bias, path length */
		uint32_t len = hp_rd32(p + 8);
		p += 12;
		ck_assert_uint_le(len, (size_t)(end - p));
		p += len;
		ck_assert_uint_le(4, (size_t)(end - p));
		uint32_t id_len = hp_rd32(p);
		ck_assert_uint_le(id_len, 64);
		p += 4;
		ck_assert_uint_le((size_t)id_len + 4, (size_t)(end - p));
		p += id_len;
		uint32_t nseg = hp_rd32(p);
		p += 4;
		ck_assert_uint_le((size_t)nseg * 32, (size_t)(end - p));
		for (uint32_t s = 0; s < nseg; s++, p += 32) {
			ck_assert_uint_eq(hp_rd32(p + 24) & ~7u, 0); /* only PF_R|PF_W|PF_X */
			ck_assert_uint_eq(hp_rd32(p + 28), 0);       /* reserved */
		}
	}
	ck_assert_ptr_eq(p, end);
	return count;
}

/* Flushes and reads every record of the trace; each MODULES record is
 * parsed on its own into snaps[i] (the reader's union would hide changes). */
static void load(void)
{
	ck_assert_int_eq(hp_output_flush(), 0);
	struct hp_reader *r = hp_reader_open(path, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	uint32_t type, size;
	const uint8_t *payload;
	int rc;
	uint32_t since_moment = 0;
	while ((rc = hp_reader_next(r, &type, &payload, &size, err, sizeof(err))) == 1) {
		if (type == HP_REC_MODULES_AT) {
			/* closes the snapshot: its size is the modules since the last one */
			ck_assert_int_lt(nmoments, MAX_RECS);
			ck_assert_uint_eq(size, 16);
			ck_assert_uint_eq(hp_rd32(payload + 8), since_moment);
			ck_assert_uint_eq(hp_rd32(payload + 12), 0);
			moment_tick[nmoments] = hp_rd64(payload);
			moment_count[nmoments++] = since_moment;
			since_moment = 0;
			continue;
		}
		ck_assert_int_lt(nrecs, MAX_RECS);
		struct rec *x = &recs[nrecs];
		x->type = type;
		x->size = size;
		x->payload = malloc(size ? size : 1);
		ck_assert_ptr_nonnull(x->payload);
		memcpy(x->payload, payload, size);
		nrecs++;
		ck_assert_uint_eq(type, HP_REC_MODULES);
		uint32_t count = check_layout(payload, size);
		ck_assert_msg(hp_trace_info_add(&snaps[nrecs - 1], type, payload, size, err, sizeof(err)) == 0,
			      "%s", err);
		/* no two modules share (bias, path): the reader keeps them all */
		ck_assert_uint_eq(snaps[nrecs - 1].nmodules, count);
		since_moment += count;
	}
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(since_moment, 0); /* every snapshot was closed */
	hp_reader_close(r);
}

static const struct hp_module *find_module(const struct hp_trace_info *s, const char *p)
{
	const struct hp_module *found = NULL;
	for (size_t i = 0; i < s->nmodules; i++)
		if (!strcmp(s->modules[i].path, p)) {
			ck_assert_msg(found == NULL, "two modules named %.300s", p);
			found = &s->modules[i];
		}
	return found;
}

static int same_module(const struct hp_module *a, const struct hp_module *b)
{
	if (a->bias != b->bias || strcmp(a->path, b->path) || a->build_id_len != b->build_id_len ||
	    memcmp(a->build_id, b->build_id, a->build_id_len) || a->nseg != b->nseg)
		return 0;
	for (uint32_t i = 0; i < a->nseg; i++)
		if (memcmp(&a->seg[i], &b->seg[i], sizeof(a->seg[i])))
			return 0;
	return 1;
}

/* The PF_* flags of the segment of m that holds addr, or -1. */
static int segment_flags_at(const struct hp_module *m, const void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	for (uint32_t i = 0; i < m->nseg; i++)
		if (a >= m->seg[i].start && a - m->seg[i].start < m->seg[i].size)
			return (int)m->seg[i].flags;
	return -1;
}

/* ------------------------------------------------------- the truth */

/* What the loader says now, one entry per object. */
#define MAX_TRUTH 512
#define MAX_SEGS 16
struct truth {
	char path[PATH_MAX];
	int is_exe;
	uint64_t bias;
	uint32_t nseg;
	struct hp_segment seg[MAX_SEGS];
};
static struct truth truth[MAX_TRUTH];
static size_t ntruth;

static void exe_path(char *out, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", out, len - 1);
	ck_assert_int_gt(n, 0);
	out[n] = 0;
}

static int add_truth(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	if (ntruth == MAX_TRUTH)
		return 1;
	struct truth *t = &truth[ntruth++];
	memset(t, 0, sizeof(*t));
	t->is_exe = !info->dlpi_name[0];
	if (t->is_exe)
		exe_path(t->path, sizeof(t->path));
	else
		snprintf(t->path, sizeof(t->path), "%s", info->dlpi_name);
	t->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || t->nseg == MAX_SEGS)
			continue;
		struct hp_segment *s = &t->seg[t->nseg++];
		s->start = info->dlpi_addr + ph->p_vaddr;
		s->size = ph->p_memsz;
		s->offset = ph->p_offset;
		s->flags = ph->p_flags;
	}
	return 0;
}

static void read_truth(void)
{
	ntruth = 0;
	dl_iterate_phdr(add_truth, NULL);
	ck_assert_uint_lt(ntruth, MAX_TRUTH);
}

/* The NT_GNU_BUILD_ID of an ELF image, found by libelf through the
 * program headers; its length (0 if none), -1 if the image is unreadable. */
static int elf_build_id(Elf *e, uint8_t *out, size_t cap)
{
	size_t nph;
	if (!e || elf_getphdrnum(e, &nph))
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
						   ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!d)
			continue;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4)) {
				size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
				memcpy(out, (char *)d->d_buf + desc_off, n);
				return (int)n;
			}
		}
	}
	return 0;
}

static int file_build_id(const char *file, uint8_t *out, size_t cap)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int n = elf_build_id(e, out, cap);
	elf_end(e);
	close(fd);
	return n;
}

/* The vDSO has no file: its ELF image is in memory at AT_SYSINFO_EHDR. */
static int vdso_build_id(uint8_t *out, size_t cap)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	if (!eh)
		return -1;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	size_t size = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > size)
			size = ph[i].p_offset + ph[i].p_filesz;
	Elf *e = elf_memory((char *)eh, size);
	int n = elf_build_id(e, out, cap);
	elf_end(e);
	return n;
}

/* The build-id a module should have, from its file (or the vDSO image). */
static int expected_build_id(const struct truth *t, uint8_t *out, size_t cap)
{
	/* the program through /proc/self/exe: its file may have been replaced
	 * (relinked by make) while it runs, and the path then ends in " (deleted)" */
	int n = file_build_id(t->is_exe ? "/proc/self/exe" : t->path, out, cap);
	if (n < 0 && t->bias == getauxval(AT_SYSINFO_EHDR))
		n = vdso_build_id(out, cap);
	return n;
}

/* A module of a snapshot equals what the loader and the file say. */
static void check_module(const struct hp_module *m, const struct truth *t)
{
	ck_assert_str_eq(m->path, t->path);
	ck_assert_uint_eq(m->bias, t->bias);
	ck_assert_uint_eq(m->nseg, t->nseg);
	for (uint32_t i = 0; i < t->nseg; i++) {
		ck_assert_uint_eq(m->seg[i].start, t->seg[i].start);
		ck_assert_uint_eq(m->seg[i].size, t->seg[i].size);
		ck_assert_uint_eq(m->seg[i].offset, t->seg[i].offset);
		ck_assert_uint_eq(m->seg[i].flags, t->seg[i].flags);
	}
	uint8_t id[64];
	int n = expected_build_id(t, id, sizeof(id));
	ck_assert_msg(n >= 0, "cannot read the ELF image of %s", t->path);
	ck_assert_uint_eq(m->build_id_len, (uint32_t)n);
	ck_assert_mem_eq(m->build_id, id, (size_t)n);
}

/* The snapshot holds exactly the objects loaded now, each as it is. */
static void check_snapshot(const struct hp_trace_info *s)
{
	read_truth();
	ck_assert_uint_eq(s->nmodules, ntruth);
	for (size_t i = 0; i < ntruth; i++) {
		const struct hp_module *m = find_module(s, truth[i].path);
		ck_assert_msg(m != NULL, "%.300s is not in the snapshot", truth[i].path);
		check_module(m, &truth[i]);
	}
}

static void marker_function(void) {}

/* ---------------------------------------------------------------- core */

START_TEST(test_snapshot_matches_loader)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
	/* the executable, the vDSO, libc, the loader and this test's libraries */
	ck_assert_uint_ge(snaps[0].nmodules, 4);
	check_snapshot(&snaps[0]);
}
END_TEST

START_TEST(test_executable)
{
	char exe[PATH_MAX];
	exe_path(exe, sizeof(exe));
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	const struct hp_module *m = find_module(&snaps[0], exe);
	ck_assert_msg(m != NULL, "%.300s is not in the snapshot", exe);
	/* the build-id is the one in the file on disk, independently read */
	uint8_t id[64];
	int n = file_build_id("/proc/self/exe", id, sizeof(id));
	ck_assert_int_gt(n, 0); /* cc links with --build-id here */
	ck_assert_uint_eq(m->build_id_len, (uint32_t)n);
	ck_assert_mem_eq(m->build_id, id, (size_t)n);
	/* the bias from the auxiliary vector: where the program headers are
	 * mapped minus where the file puts them (PT_PHDR) */
	int fd = open("/proc/self/exe", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_ptr_nonnull(e);
	size_t nph;
	ck_assert_int_eq(elf_getphdrnum(e, &nph), 0);
	uint64_t phdr_vaddr = UINT64_MAX;
	uint32_t nload = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		ck_assert_ptr_nonnull(gelf_getphdr(e, (int)i, &ph));
		if (ph.p_type == PT_PHDR)
			phdr_vaddr = ph.p_vaddr;
		if (ph.p_type != PT_LOAD)
			continue;
		/* segments are the file's PT_LOAD headers, moved by the bias */
		ck_assert_uint_lt(nload, m->nseg);
		ck_assert_uint_eq(m->seg[nload].start, getauxval(AT_PHDR) - phdr_vaddr + ph.p_vaddr);
		ck_assert_uint_eq(m->seg[nload].size, ph.p_memsz);
		ck_assert_uint_eq(m->seg[nload].offset, ph.p_offset);
		ck_assert_uint_eq(m->seg[nload].flags, ph.p_flags);
		nload++;
	}
	elf_end(e);
	close(fd);
	ck_assert_uint_ne(phdr_vaddr, UINT64_MAX);
	ck_assert_uint_eq(m->nseg, nload);
	ck_assert_uint_eq(m->bias, getauxval(AT_PHDR) - phdr_vaddr);
	/* this code is in an executable segment of it */
	ck_assert_int_eq(segment_flags_at(m, (const void *)marker_function), PF_R | PF_X);
}
END_TEST

START_TEST(test_libc)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	/* where getpid really is (not a PLT stub), and the object holding it */
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	ck_assert_ptr_nonnull(fn);
	Dl_info di;
	ck_assert_int_ne(dladdr(fn, &di), 0);
	ck_assert_ptr_nonnull(strstr(di.dli_fname, "/libc.so."));
	const struct hp_module *m = find_module(&snaps[0], di.dli_fname);
	ck_assert_msg(m != NULL, "%.300s is not in the snapshot", di.dli_fname);
	ck_assert_int_eq(segment_flags_at(m, fn), PF_R | PF_X);
	/* libc's first PT_LOAD is at address 0: its mapping starts at the bias */
	ck_assert_uint_eq(m->bias, (uint64_t)(uintptr_t)di.dli_fbase);
	uint8_t id[64];
	int n = file_build_id(di.dli_fname, id, sizeof(id));
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(m->build_id_len, (uint32_t)n);
	ck_assert_mem_eq(m->build_id, id, (size_t)n);
	/* libc's own environ (looked up in libc, not a copy in the program)
	 * is in a writable segment */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(libc);
	void *env = dlsym(libc, "environ");
	ck_assert_ptr_nonnull(env);
	ck_assert_int_eq(segment_flags_at(m, env), PF_R | PF_W);
}
END_TEST

START_TEST(test_vdso)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	ck_assert_uint_ne(getauxval(AT_SYSINFO_EHDR), 0);
	/* a pseudo name, no file: the vDSO's first PT_LOAD is at 0 */
	const struct hp_module *m = find_module(&snaps[0], "linux-vdso.so.1");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->bias, getauxval(AT_SYSINFO_EHDR));
	ck_assert_uint_ge(m->nseg, 1);
	ck_assert_int_eq(segment_flags_at(m, (void *)getauxval(AT_SYSINFO_EHDR)) & PF_X, PF_X);
	uint8_t id[64];
	int n = vdso_build_id(id, sizeof(id));
	ck_assert_int_ge(n, 0);
	ck_assert_uint_eq(m->build_id_len, (uint32_t)n);
	ck_assert_mem_eq(m->build_id, id, (size_t)n);
}
END_TEST

START_TEST(test_unchanged_writes_nothing)
{
	struct stat st;
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	off_t size = st.st_size;
	/* nothing was loaded or unloaded since: no record, not even pending */
	ck_assert_int_eq(hp_modules_write(0), 0);
	ck_assert_int_eq(hp_modules_write(0), 0);
	ck_assert_uint_eq(hp_output_pending(), 0);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, size);
	load();
	ck_assert_int_eq(nrecs, 1);
}
END_TEST

START_TEST(test_dlopen_new_snapshot)
{
	need_libs();
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	ck_assert_ptr_null(dlopen(lib_one, RTLD_NOW | RTLD_NOLOAD));
	void *h = dlopen(lib_one, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h != NULL, "%s", dlerror());
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 2);
	/* everything that was there still is, unchanged, and one more */
	ck_assert_uint_eq(snaps[1].nmodules, snaps[0].nmodules + 1);
	ck_assert_ptr_null(find_module(&snaps[0], lib_one));
	for (size_t i = 0; i < snaps[0].nmodules; i++) {
		const struct hp_module *m = find_module(&snaps[1], snaps[0].modules[i].path);
		ck_assert_ptr_nonnull(m);
		ck_assert(same_module(m, &snaps[0].modules[i]));
	}
	check_snapshot(&snaps[1]);
	/* the new one: named as dlopen was given it, with its known build-id,
	 * loaded where dladdr says, its code and data in the right segments */
	const struct hp_module *m = find_module(&snaps[1], lib_one);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->build_id_len, sizeof(id_one));
	ck_assert_mem_eq(m->build_id, id_one, sizeof(id_one));
	void *fn = dlsym(h, "hp_test_fn"), *data = dlsym(h, "hp_test_data");
	ck_assert_ptr_nonnull(fn);
	ck_assert_ptr_nonnull(data);
	Dl_info di;
	ck_assert_int_ne(dladdr(fn, &di), 0);
	ck_assert_uint_eq(m->bias, (uint64_t)(uintptr_t)di.dli_fbase);
	ck_assert_int_eq(segment_flags_at(m, fn), PF_R | PF_X);
	ck_assert_int_eq(segment_flags_at(m, data), PF_R | PF_W);
	ck_assert_int_eq(*(int *)data, 42);
}
END_TEST

START_TEST(test_dlclose_new_snapshot)
{
	need_libs();
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0); /* 0: before */
	void *h1 = dlopen(lib_one, RTLD_NOW | RTLD_LOCAL);
	void *h2 = dlopen(lib_two, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h1);
	ck_assert_ptr_nonnull(h2);
	ck_assert_int_eq(hp_modules_write(0), 0); /* 1: both loaded */
	ck_assert_int_eq(dlclose(h1), 0);
	ck_assert_ptr_null(dlopen(lib_one, RTLD_NOW | RTLD_NOLOAD)); /* really gone */
	ck_assert_int_eq(hp_modules_write(0), 0); /* 2: lib_two only */
	ck_assert_int_eq(hp_modules_write(0), 0); /* nothing */
	ck_assert_int_eq(dlclose(h2), 0);
	ck_assert_int_eq(hp_modules_write(0), 0); /* 3: as before */
	load();
	ck_assert_int_eq(nrecs, 4);
	ck_assert_uint_eq(snaps[1].nmodules, snaps[0].nmodules + 2);
	ck_assert_uint_eq(snaps[2].nmodules, snaps[0].nmodules + 1);
	ck_assert_ptr_null(find_module(&snaps[2], lib_one));
	const struct hp_module *two = find_module(&snaps[2], lib_two);
	ck_assert_ptr_nonnull(two);
	ck_assert(same_module(two, find_module(&snaps[1], lib_two)));
	ck_assert_uint_eq(two->build_id_len, sizeof(id_two));
	ck_assert_mem_eq(two->build_id, id_two, sizeof(id_two));
	/* all unloaded again: byte for byte the first snapshot */
	ck_assert_uint_eq(recs[3].size, recs[0].size);
	ck_assert_mem_eq(recs[3].payload, recs[0].payload, recs[0].size);
	check_snapshot(&snaps[3]);
}
END_TEST

/* Each snapshot ends with its moment, read on the event clock while the
 * loader's list was being walked: between the ticks around the write. */
START_TEST(test_snapshot_moment)
{
	need_libs();
	start_trace();
	uint64_t t0 = hp_tick();
	ck_assert_int_eq(hp_modules_write(1), 0);
	uint64_t t1 = hp_tick();
	void *h = dlopen(lib_one, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(hp_modules_write(0), 0);
	uint64_t t2 = hp_tick();
	ck_assert_int_eq(dlclose(h), 0);
	load();
	ck_assert_int_eq(nrecs, 2);
	ck_assert_int_eq(nmoments, 2);
	ck_assert_uint_eq(moment_count[0], snaps[0].nmodules);
	ck_assert_uint_eq(moment_count[1], snaps[0].nmodules + 1);
	ck_assert_uint_ge(moment_tick[0], t0);
	ck_assert_uint_le(moment_tick[0], t1);
	ck_assert_uint_ge(moment_tick[1], t1);
	ck_assert_uint_le(moment_tick[1], t2);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_force_always_writes)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	ck_assert_int_eq(nrecs, 2);
	ck_assert_uint_eq(recs[1].size, recs[0].size);
	ck_assert_mem_eq(recs[1].payload, recs[0].payload, recs[0].size);
}
END_TEST

START_TEST(test_first_write_unforced)
{
	/* no map was written yet: every object is new to the trace */
	start_trace();
	ck_assert_int_eq(hp_modules_write(0), 0);
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
	check_snapshot(&snaps[0]);
}
END_TEST

START_TEST(test_no_output)
{
	/* before the trace exists there is nowhere to write */
	ck_assert_int_eq(hp_modules_write(1), -1);
	ck_assert_int_eq(hp_modules_write(0), -1);
	/* a map that could not be written does not count as written */
	start_trace();
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
	check_snapshot(&snaps[0]);
}
END_TEST

START_TEST(test_output_failed)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	ck_assert_int_eq(unlink(path), 0);
	/* the failed flush warns once on stderr: keep it out of the test log */
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	ck_assert_int_ge(devnull, 0);
	dup2(devnull, 2);
	int rc = hp_output_flush();
	dup2(saved, 2);
	close(saved);
	close(devnull);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(hp_modules_write(1), -1);
}
END_TEST

START_TEST(test_dlopen_loaded_object_writes_nothing)
{
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	/* another reference to an object already there loads nothing */
	void *libc = dlopen("libc.so.6", RTLD_NOW);
	ck_assert_ptr_nonnull(libc);
	/* nor does a failed dlopen */
	char bogus[PATH_MAX + 64];
	snprintf(bogus, sizeof(bogus), "%s/missing.so", dir);
	ck_assert_ptr_null(dlopen(bogus, RTLD_NOW));
	ck_assert_int_eq(hp_modules_write(0), 0);
	ck_assert_int_eq(dlclose(libc), 0);
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
}
END_TEST

START_TEST(test_dlopen_dlclose_between_writes)
{
	/* the same number of objects as before, but the set changed in
	 * between: a new map, identical to the first */
	need_libs();
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	void *h = dlopen(lib_one, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(dlclose(h), 0);
	ck_assert_int_eq(hp_modules_write(0), 0);
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 2);
	ck_assert_uint_eq(recs[1].size, recs[0].size);
	ck_assert_mem_eq(recs[1].payload, recs[0].payload, recs[0].size);
}
END_TEST

/* dlopens lib, writes a map and returns the module of lib in it */
static const struct hp_module *module_after_dlopen(const char *lib)
{
	need_libs();
	start_trace();
	ck_assert_msg(dlopen(lib, RTLD_NOW | RTLD_LOCAL) != NULL, "%s", dlerror());
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
	check_snapshot(&snaps[0]);
	const struct hp_module *m = find_module(&snaps[0], lib);
	ck_assert_ptr_nonnull(m);
	return m;
}

START_TEST(test_no_build_id)
{
	const struct hp_module *m = module_after_dlopen(lib_noid);
	ck_assert_uint_eq(m->build_id_len, 0);
	ck_assert_uint_ge(m->nseg, 1);
}
END_TEST

START_TEST(test_build_id_64_bytes)
{
	const struct hp_module *m = module_after_dlopen(lib_id64);
	ck_assert_uint_eq(m->build_id_len, 64);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(m->build_id[i], ID_BYTE(i));
}
END_TEST

START_TEST(test_build_id_too_long)
{
	/* the format holds at most 64 bytes: the writer keeps the first 64
	 * and the record stays readable (load() checks its layout) */
	need_libs();
	start_trace();
	ck_assert_ptr_nonnull(dlopen(lib_id80, RTLD_NOW | RTLD_LOCAL));
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	ck_assert_int_eq(nrecs, 1);
	const struct hp_module *m = find_module(&snaps[0], lib_id80);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->build_id_len, 64);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(m->build_id[i], ID_BYTE(i));
}
END_TEST

/* Makes a directory whose path is exactly len bytes, under root. */
static void deep_dir(char *out, size_t cap, const char *root, size_t len)
{
	size_t n = (size_t)snprintf(out, cap, "%s", root);
	ck_assert_uint_lt(len, cap);
	ck_assert_uint_gt(len, n + 1);
	while (n < len) {
		/* components of 200 bytes, the last one what is left */
		size_t comp = len - n - 1 > 250 ? 200 : len - n - 1;
		out[n] = '/';
		memset(out + n + 1, 'd', comp);
		n += comp + 1;
		out[n] = 0;
		ck_assert_int_eq(mkdir(out, 0755), 0);
	}
	ck_assert_uint_eq(strlen(out), len);
}

static void copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

START_TEST(test_long_path)
{
	/* a path near PATH_MAX is kept whole */
	need_libs();
	char lib[PATH_MAX];
	deep_dir(lib, sizeof(lib), dir, PATH_MAX - 1 - 101);
	size_t n = strlen(lib);
	snprintf(lib + n, sizeof(lib) - n, "/lib%094d.so", 7); /* 101 bytes */
	ck_assert_uint_eq(strlen(lib), PATH_MAX - 1);
	copy_file(lib_one, lib);
	const struct hp_module *m = module_after_dlopen(lib);
	ck_assert_uint_eq(strlen(m->path), PATH_MAX - 1);
	ck_assert_mem_eq(m->build_id, id_one, sizeof(id_one));
}
END_TEST

START_TEST(test_many_objects)
{
	/* 40 more objects, each its own file (a copy: the loader knows a file
	 * by device and inode), all in the map with their own addresses */
	need_libs();
	enum { N = 40 };
	char libs[N][PATH_MAX + 64];
	for (int i = 0; i < N; i++) {
		snprintf(libs[i], sizeof(libs[i]), "%s/libcopy%02d.so", dir, i);
		copy_file(lib_two, libs[i]);
	}
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	for (int i = 0; i < N; i++)
		ck_assert_msg(dlopen(libs[i], RTLD_NOW | RTLD_LOCAL) != NULL, "%s", dlerror());
	ck_assert_int_eq(hp_modules_write(0), 0);
	load();
	ck_assert_int_eq(nrecs, 2);
	ck_assert_uint_eq(snaps[1].nmodules, snaps[0].nmodules + N);
	check_snapshot(&snaps[1]);
	for (int i = 0; i < N; i++) {
		const struct hp_module *m = find_module(&snaps[1], libs[i]);
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(m->build_id_len, sizeof(id_two));
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(m->bias, find_module(&snaps[1], libs[j])->bias);
	}
}
END_TEST

/*
 * A MODULES record takes at most 1 MiB (MODULES_MAX_BYTES in
 * hp_modules.c): a map that does not fit goes on in a second record, each
 * well formed and within the limit. The tests load copies of
 * lib_two at paths of chosen lengths until exactly `room` bytes are left,
 * then one more whose entry takes room bytes, or one more byte.
 */
#define RECORD_CAP (1u << 20)

/* An entry's size by docs/format.md. */
static size_t entry_size(size_t path_len, size_t id_len, size_t nseg)
{
	return 8 + 4 + path_len + 4 + id_len + 4 + 32 * nseg;
}

/* The size a MODULES payload of every loaded object takes. */
static size_t map_size_now(void)
{
	read_truth();
	size_t n = 4;
	for (size_t i = 0; i < ntruth; i++) {
		uint8_t id[64];
		int id_len = expected_build_id(&truth[i], id, sizeof(id));
		ck_assert_int_ge(id_len, 0);
		n += entry_size(strlen(truth[i].path), (size_t)id_len, truth[i].nseg);
	}
	return n;
}

static uint32_t count_loads(const char *file)
{
	int fd = open(file, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t nph;
	ck_assert_int_eq(elf_getphdrnum(e, &nph), 0);
	uint32_t n = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		n += gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD;
	}
	elf_end(e);
	close(fd);
	return n;
}

/* dlopens a new copy of lib_two at a path of exactly len bytes. */
static void load_copy(char *out, size_t cap, size_t len, int idx)
{
	char root[PATH_MAX];
	ck_assert_int_lt(snprintf(root, sizeof(root), "%s/x%d", dir, idx), (int)sizeof(root));
	ck_assert_int_eq(mkdir(root, 0755), 0);
	size_t r = strlen(root), name;
	char base[PATH_MAX];
	if (len - r - 1 <= 255) {
		strcpy(base, root);
		name = len - r - 1;
	} else {
		deep_dir(base, sizeof(base), root, len - 101);
		name = 100;
	}
	ck_assert_uint_ge(name, 5);
	char file[256];
	file[0] = 'l';
	memset(file + 1, 'a', name - 4);
	strcpy(file + name - 3, ".so");
	ck_assert_int_lt(snprintf(out, cap, "%s/%s", base, file), (int)cap);
	ck_assert_uint_eq(strlen(out), len);
	copy_file(lib_two, out);
	ck_assert_msg(dlopen(out, RTLD_NOW | RTLD_LOCAL) != NULL, "%s", dlerror());
}

/* Loads copies until `room` bytes of the record are left, then one whose
 * entry takes room + extra bytes; writes the map. Returns room. */
static size_t fill_map(char *last, size_t extra)
{
	need_libs();
	const size_t over = entry_size(0, sizeof(id_two), count_loads(lib_two));
	const size_t lmin = strlen(dir) + 20, lmax = PATH_MAX - 1;
	const size_t room = 1000 + over;
	size_t used = map_size_now();
	ck_assert_uint_lt(used + room, RECORD_CAP);
	size_t want = RECORD_CAP - used - room;
	int idx = 0;
	char p[PATH_MAX];
	while (want) {
		size_t e = want >= (lmax + over) + (lmin + over) ? lmax + over
			   : want > lmax + over			 ? want / 2
								 : want;
		ck_assert_uint_ge(e, lmin + over);
		load_copy(p, sizeof(p), e - over, idx++);
		want -= e;
	}
	ck_assert_uint_gt(idx, 200);
	/* the arithmetic of the test itself */
	ck_assert_uint_eq(map_size_now(), RECORD_CAP - room);
	load_copy(last, PATH_MAX, room + extra - over, idx);
	start_trace();
	ck_assert_int_eq(hp_modules_write(1), 0);
	load();
	read_truth();
	return room;
}

START_TEST(test_map_fills_record_exactly)
{
	char last[PATH_MAX];
	fill_map(last, 0);
	ck_assert_int_eq(nrecs, 1);
	ck_assert_uint_eq(recs[0].size, RECORD_CAP);
	check_snapshot(&snaps[0]);
	ck_assert_ptr_nonnull(find_module(&snaps[0], last));
}
END_TEST

START_TEST(test_map_one_byte_over)
{
	char last[PATH_MAX];
	size_t room = fill_map(last, 1);
	/* the last object goes on in a second record, alone; every other is
	 * in the first, and each is exact */
	ck_assert_int_eq(nrecs, 2);
	ck_assert_uint_eq(recs[0].size, RECORD_CAP - room);
	ck_assert_uint_eq(snaps[0].nmodules, ntruth - 1);
	ck_assert_ptr_null(find_module(&snaps[0], last));
	for (size_t i = 0; i + 1 < ntruth; i++) {
		const struct hp_module *m = find_module(&snaps[0], truth[i].path);
		ck_assert_msg(m != NULL, "%.300s is not in the snapshot", truth[i].path);
		check_module(m, &truth[i]);
	}
	ck_assert_str_eq(truth[ntruth - 1].path, last);
	ck_assert_uint_eq(snaps[1].nmodules, 1);
	check_module(find_module(&snaps[1], last), &truth[ntruth - 1]);
}
END_TEST

static Suite *modules_suite(void)
{
	Suite *s = suite_create("modules");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_snapshot_matches_loader);
	tcase_add_test(core, test_executable);
	tcase_add_test(core, test_libc);
	tcase_add_test(core, test_vdso);
	tcase_add_test(core, test_unchanged_writes_nothing);
	tcase_add_test(core, test_dlopen_new_snapshot);
	tcase_add_test(core, test_dlclose_new_snapshot);
	tcase_add_test(core, test_snapshot_moment);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 60);
	tcase_add_test(limits, test_force_always_writes);
	tcase_add_test(limits, test_first_write_unforced);
	tcase_add_test(limits, test_no_output);
	tcase_add_test(limits, test_output_failed);
	tcase_add_test(limits, test_dlopen_loaded_object_writes_nothing);
	tcase_add_test(limits, test_dlopen_dlclose_between_writes);
	tcase_add_test(limits, test_no_build_id);
	tcase_add_test(limits, test_build_id_64_bytes);
	tcase_add_test(limits, test_build_id_too_long);
	tcase_add_test(limits, test_long_path);
	tcase_add_test(limits, test_many_objects);
	tcase_add_test(limits, test_map_fills_record_exactly);
	tcase_add_test(limits, test_map_one_byte_over);
	suite_add_tcase(s, limits);
	return s;
}

/* Builds top/<name> from a two-symbol source with the given build-id. */
static int build_lib(char *out, size_t len, const char *name, const char *build_id)
{
	char cmd[3 * PATH_MAX];
	snprintf(out, len, "%s/%s", top, name);
	snprintf(cmd, sizeof(cmd), "${CC:-cc} -shared -fPIC -o '%s' '%s/lib.c' -Wl,--build-id=%s", out,
		 top, build_id);
	return system(cmd);
}

static int build_libs(void)
{
	char src[PATH_MAX], id64[2 + 160 + 1], id80[2 + 160 + 1];
	snprintf(src, sizeof(src), "%s/lib.c", top);
	FILE *f = fopen(src, "w");
	if (!f)
		return -1;
	fputs("int hp_test_fn(int x) { return x + 1; }\nint hp_test_data = 42;\n", f);
	fclose(f);
	strcpy(id64, "0x");
	strcpy(id80, "0x");
	for (int i = 0; i < 80; i++) {
		char b[3];
		snprintf(b, sizeof(b), "%02x", ID_BYTE(i));
		if (i < 64)
			strcat(id64, b);
		strcat(id80, b);
	}
	return build_lib(lib_one, sizeof(lib_one), "libone.so", "0x0123456789abcdeffedcba9876543210deadbeef") ||
	       build_lib(lib_two, sizeof(lib_two), "libtwo.so", "0x0011223344556677") ||
	       build_lib(lib_noid, sizeof(lib_noid), "libnoid.so", "none") ||
	       build_lib(lib_id64, sizeof(lib_id64), "libid64.so", id64) ||
	       build_lib(lib_id80, sizeof(lib_id80), "libid80.so", id80);
}

int main(void)
{
	if (tk_make_top_dir(top, sizeof(top), "check_modules"))
		return EXIT_FAILURE;
	/* tests compare paths with the loader's: no symlinks in ours */
	char real[PATH_MAX];
	if (!realpath(top, real) || strlen(real) >= sizeof(top)) {
		perror(top);
		return EXIT_FAILURE;
	}
	strcpy(top, real);
	elf_version(EV_CURRENT);
	libs_built = build_libs() == 0;
	int rc = tk_run_suite(modules_suite());
	tk_remove_tree(top);
	return rc;
}
