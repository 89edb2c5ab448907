/*
 * check_symbols.c - hp_symbols against real objects of this very process
 * (the test binary, built with -g, and libstdc++), described the way the
 * runtime records them: from dl_iterate_phdr, with their build-ids.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testkit.h"

#include "../symbolize/hp_symbols.h"

static const int target_line = __LINE__ + 1;
static __attribute__((noinline)) int symbolize_me(int x)
{
	return x * 3 + 1;
}

/* Taking the address through a volatile keeps the function out of line
 * and under its own name at any optimization level. */
static int (*volatile target_fn)(int) = symbolize_me;

static uint64_t target_addr(void)
{
	return (uint64_t)(uintptr_t)target_fn;
}

struct object_search {
	uint64_t addr;
	struct hp_module *module;
	int found;
};

static int object_contains(const struct dl_phdr_info *info, uint64_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz)
			return 1;
	}
	return 0;
}

/* The main program has an empty dlpi_name, as in lib/hp_modules.c. */
static char *object_path(const char *name)
{
	if (name && *name)
		return strdup(name);
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	return strdup(buf);
}

/* The NT_GNU_BUILD_ID note of a PT_NOTE segment, as lib/hp_modules.c
 * finds it. */
static void note_build_id(const ElfW(Phdr) *ph, ElfW(Addr) bias, struct hp_module *m)
{
	const uint8_t *p = (const uint8_t *)(bias + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const uint8_t *name = p + sizeof(*nh);
		const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
		if (desc + nh->n_descsz > end)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    nh->n_descsz <= sizeof(m->build_id)) {
			memcpy(m->build_id, desc, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return;
		}
		p = desc + ((nh->n_descsz + 3) & ~3u);
	}
}

static void describe_object(const struct dl_phdr_info *info, struct hp_module *m)
{
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->path = object_path(info->dlpi_name);
	m->seg = calloc(info->dlpi_phnum, sizeof(*m->seg));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE && !m->build_id_len)
			note_build_id(ph, info->dlpi_addr, m);
		if (ph->p_type != PT_LOAD)
			continue;
		m->seg[m->nseg++] = (struct hp_segment){
			.start = info->dlpi_addr + ph->p_vaddr,
			.size = ph->p_memsz,
			.offset = ph->p_offset,
			.flags = ph->p_flags,
		};
	}
}

static int match_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_search *q = arg;
	(void)size;
	if (!object_contains(info, q->addr))
		return 0;
	describe_object(info, q->module);
	q->found = 1;
	return 1;
}

static void module_containing(uint64_t addr, struct hp_module *m)
{
	struct object_search q = { .addr = addr, .module = m };
	dl_iterate_phdr(match_object, &q);
	ck_assert_msg(q.found, "no loaded object contains 0x%" PRIx64, addr);
	ck_assert(m->path && m->seg);
}

static void fake_module(struct hp_module *m, const char *path, uint64_t bias, uint64_t start,
			uint64_t size)
{
	memset(m, 0, sizeof(*m));
	m->bias = bias;
	m->path = strdup(path);
	m->nseg = 1;
	m->seg = calloc(1, sizeof(*m->seg));
	m->seg[0] = (struct hp_segment){ .start = start, .size = size, .flags = 5 };
}

static void free_module(struct hp_module *m)
{
	free(m->path);
	free(m->seg);
}

static struct hp_symbols *symbols_or_fail(const struct hp_module *mods, size_t n)
{
	char err[256] = "";
	struct hp_symbols *s = hp_symbols_new(mods, n, err, sizeof(err));
	ck_assert_msg(s != NULL, "hp_symbols_new: %s", err);
	return s;
}

static struct hp_symbols *symbols_in(const struct hp_module *mods, size_t n, const char *debug_path)
{
	char err[256] = "";
	struct hp_symbols *s = hp_symbols_new_debug_path(mods, n, debug_path, err, sizeof(err));
	ck_assert_msg(s != NULL, "hp_symbols_new_debug_path: %s", err);
	return s;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static void assert_is_target(const struct hp_symbol *sym)
{
	char *exe = object_path(NULL);
	ck_assert_str_eq(sym->name, "symbolize_me");
	ck_assert_str_eq(sym->module, strrchr(exe, '/') + 1);
	free(exe);
	ck_assert_int_eq(sym->resolved, 1);
	ck_assert_msg(sym->file && (!strcmp(sym->file, "check_symbols.c") ||
				    ends_with(sym->file, "/check_symbols.c")),
		      "file is %s", sym->file ? sym->file : "(null)");
	ck_assert_int_ge(sym->line, target_line);
	ck_assert_int_le(sym->line, target_line + 2);
}

START_TEST(test_static_function_in_self)
{
	struct hp_module self;
	module_containing(target_addr(), &self);
	struct hp_symbols *s = symbols_or_fail(&self, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	assert_is_target(&sym);
	hp_symbols_free(s);
	free_module(&self);
}
END_TEST

START_TEST(test_second_lookup_is_cached)
{
	struct hp_module self;
	module_containing(target_addr(), &self);
	struct hp_symbols *s = symbols_or_fail(&self, 1);
	struct hp_symbol a, b;
	hp_symbols_lookup(s, target_addr(), &a);
	hp_symbols_lookup(s, target_addr(), &b);
	ck_assert_ptr_eq(a.name, b.name);
	ck_assert_ptr_eq(a.file, b.file);
	ck_assert_int_eq(a.line, b.line);
	hp_symbols_free(s);
	free_module(&self);
}
END_TEST

START_TEST(test_cxx_name_is_demangled)
{
	void *lib = dlopen("libstdc++.so.6", RTLD_NOW);
	ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
	void *fn = dlsym(lib, "_ZNSt9exceptionD1Ev");
	ck_assert_msg(fn != NULL, "dlsym: %s", dlerror());
	struct hp_module m;
	module_containing((uint64_t)(uintptr_t)fn, &m);
	struct hp_symbols *s = symbols_or_fail(&m, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, (uint64_t)(uintptr_t)fn, &sym);
	ck_assert_str_eq(sym.name, "std::exception::~exception()");
	ck_assert_str_eq(sym.module, "libstdc++.so.6");
	ck_assert_int_eq(sym.resolved, 1);
	hp_symbols_free(s);
	free_module(&m);
	dlclose(lib);
}
END_TEST

START_TEST(test_missing_file_falls_back_to_offset)
{
	struct hp_module m[2];
	fake_module(&m[0], "/nonexistent/dir/libgone.so.1", 0x7f0000000000, 0x7f0000001000,
		    0x2000);
	fake_module(&m[1], "linux-vdso.so.1", 0x7ffd00000000, 0x7ffd00000000, 0x1000);
	struct hp_symbols *s = symbols_or_fail(m, 2);
	struct hp_symbol sym;
	hp_symbols_lookup(s, 0x7f0000001234, &sym);
	ck_assert_str_eq(sym.name, "libgone.so.1+0x1234");
	ck_assert_str_eq(sym.module, "libgone.so.1");
	ck_assert_ptr_null(sym.file);
	ck_assert_int_eq(sym.line, 0);
	ck_assert_int_eq(sym.resolved, 0);
	hp_symbols_lookup(s, 0x7ffd00000a10, &sym);
	ck_assert_str_eq(sym.name, "linux-vdso.so.1+0xa10");
	ck_assert_str_eq(sym.module, "linux-vdso.so.1");
	ck_assert_int_eq(sym.resolved, 0);
	/* Without a recorded build-id nobody can tell which file it was. */
	ck_assert_ptr_null(hp_symbols_problem_at(s, 0x7f0000001234));
	ck_assert_ptr_null(hp_symbols_problem_at(s, 0x7ffd00000a10));
	hp_symbols_free(s);
	free_module(&m[0]);
	free_module(&m[1]);
}
END_TEST

START_TEST(test_address_outside_modules)
{
	struct hp_module m;
	fake_module(&m, "/nonexistent/libgone.so", 0x400000, 0x400000, 0x1000);
	struct hp_symbols *s = symbols_or_fail(&m, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, 0x401000, &sym);
	ck_assert_str_eq(sym.name, "0x401000");
	ck_assert_str_eq(sym.module, "?");
	ck_assert_ptr_null(sym.file);
	ck_assert_int_eq(sym.resolved, 0);
	hp_symbols_free(s);
	free_module(&m);
}
END_TEST

START_TEST(test_zero_modules)
{
	struct hp_symbols *s = symbols_or_fail(NULL, 0);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	char want[32];
	snprintf(want, sizeof(want), "0x%" PRIx64, target_addr());
	ck_assert_str_eq(sym.name, want);
	ck_assert_str_eq(sym.module, "?");
	hp_symbols_free(s);
}
END_TEST

START_TEST(test_extreme_addresses)
{
	struct hp_module m;
	fake_module(&m, "/nonexistent/top", UINT64_MAX - 0xfff, UINT64_MAX - 0xfff, 0x1000);
	struct hp_symbols *s = symbols_or_fail(&m, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, UINT64_MAX, &sym);
	ck_assert_str_eq(sym.name, "top+0xfff");
	hp_symbols_lookup(s, 0, &sym);
	ck_assert_str_eq(sym.name, "0x0");
	ck_assert_str_eq(sym.module, "?");
	hp_symbols_lookup(s, UINT64_MAX - 0x1000, &sym);
	ck_assert_str_eq(sym.name, "0xffffffffffffefff");
	hp_symbols_free(s);
	free_module(&m);
}
END_TEST

/* The MODULES union can list an object twice, even without its segments;
 * libdwfl would drop a module reported twice, and a later object at the
 * same addresses must not win. */
START_TEST(test_repeated_and_overlapping_modules)
{
	struct hp_module m[3];
	module_containing(target_addr(), &m[0]);
	module_containing(target_addr(), &m[1]);
	module_containing(target_addr(), &m[2]);
	m[1].nseg = 0;
	free(m[2].path);
	m[2].path = strdup("/proc/self/cmdline");
	struct hp_symbols *s = symbols_or_fail(m, 3);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	assert_is_target(&sym);
	hp_symbols_free(s);
	for (int i = 0; i < 3; i++)
		free_module(&m[i]);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	ck_assert(in && out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	ck_assert_int_eq(fclose(out), 0);
}

/* Two objects at the same addresses (one unloaded, the other loaded where
 * it was): each names the address as its own, from its own file. */
START_TEST(test_two_objects_at_one_address)
{
	char dir[] = "/tmp/check_symbols.XXXXXX", other[64];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(other, sizeof(other), "%s/other_prog", dir);
	struct hp_module m[2];
	module_containing(target_addr(), &m[0]);
	module_containing(target_addr(), &m[1]);
	copy_file(m[0].path, other);
	free(m[1].path);
	m[1].path = strdup(other);
	struct hp_symbols *s = symbols_or_fail(m, 2);
	struct hp_symbol a, b, any;
	hp_symbols_lookup_in(s, 0, target_addr(), &a);
	hp_symbols_lookup_in(s, 1, target_addr(), &b);
	hp_symbols_lookup(s, target_addr(), &any);
	assert_is_target(&a);
	assert_is_target(&any);
	ck_assert_str_eq(b.name, "symbolize_me");
	ck_assert_str_eq(b.module, "other_prog");
	ck_assert_int_eq(b.resolved, 1);
	ck_assert_uint_eq(a.offset, target_addr() - m[0].bias);
	ck_assert_uint_eq(b.offset, a.offset);
	hp_symbols_free(s);
	for (int i = 0; i < 2; i++)
		free_module(&m[i]);
	unlink(other);
	rmdir(dir);
}
END_TEST

START_TEST(test_non_elf_file_falls_back)
{
	char path[] = "/tmp/check_symbols.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	struct hp_module m;
	fake_module(&m, path, 0x10000, 0x10000, 0x1000);
	struct hp_symbols *s = symbols_or_fail(&m, 1);
	unlink(path);
	struct hp_symbol sym;
	hp_symbols_lookup(s, 0x10040, &sym);
	char want[64];
	snprintf(want, sizeof(want), "%s+0x40", strrchr(path, '/') + 1);
	ck_assert_str_eq(sym.name, want);
	ck_assert_int_eq(sym.resolved, 0);
	hp_symbols_free(s);
	free_module(&m);
}
END_TEST

START_TEST(test_inside_function_keeps_its_name)
{
	struct hp_module self;
	module_containing(target_addr(), &self);
	struct hp_symbols *s = symbols_or_fail(&self, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr() + 1, &sym);
	ck_assert_str_eq(sym.name, "symbolize_me");
	ck_assert_int_eq(sym.resolved, 1);
	hp_symbols_free(s);
	free_module(&self);
}
END_TEST

/* Enough distinct addresses to make the cache grow several times; every
 * answer must survive the moves. */
START_TEST(test_many_addresses)
{
	enum { N = 5000 };
	struct hp_module m;
	fake_module(&m, "/nonexistent/libmany.so", 0x100000000, 0x100000000, 0x1000000);
	struct hp_symbols *s = symbols_or_fail(&m, 1);
	static const char *first[N];
	struct hp_symbol sym;
	char want[64];
	for (int i = 0; i < N; i++) {
		hp_symbols_lookup(s, 0x100000000 + (uint64_t)i * 16, &sym);
		snprintf(want, sizeof(want), "libmany.so+0x%x", i * 16);
		ck_assert_str_eq(sym.name, want);
		first[i] = sym.name;
	}
	for (int i = 0; i < N; i++) {
		hp_symbols_lookup(s, 0x100000000 + (uint64_t)i * 16, &sym);
		ck_assert_ptr_eq(sym.name, first[i]);
	}
	hp_symbols_free(s);
	free_module(&m);
}
END_TEST

/* ---- build-ids ---------------------------------------------------------- */

/* A debug directory of our own, so that the machine's /usr/lib/debug plays
 * no part: DIR/.build-id/xx/yyyy[suffix], a symbolic link to this test
 * binary (as debug packages link to the files they belong to), or nothing
 * with suffix NULL. */
struct debug_dir {
	char dir[64];
	char sub[128];
	char link[256];
};

static void make_debug_dir(struct debug_dir *d, const struct hp_module *m, const char *suffix)
{
	char hex[2 * sizeof(m->build_id) + 1];
	for (uint32_t i = 0; i < m->build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m->build_id[i]);
	snprintf(d->dir, sizeof(d->dir), "/tmp/check_symbols.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d->dir));
	d->link[0] = 0;
	snprintf(d->sub, sizeof(d->sub), "%s/.build-id", d->dir);
	ck_assert_int_eq(mkdir(d->sub, 0700), 0);
	snprintf(d->sub, sizeof(d->sub), "%s/.build-id/%.2s", d->dir, hex);
	ck_assert_int_eq(mkdir(d->sub, 0700), 0);
	if (!suffix)
		return;
	snprintf(d->link, sizeof(d->link), "%s/%s%s", d->sub, hex + 2, suffix);
	char *exe = object_path(NULL);
	ck_assert_int_eq(symlink(exe, d->link), 0);
	free(exe);
}

static void remove_debug_dir(struct debug_dir *d)
{
	if (d->link[0])
		unlink(d->link);
	rmdir(d->sub);
	char *slash = strrchr(d->sub, '/');
	*slash = 0;
	rmdir(d->sub);
	rmdir(d->dir);
}

/* This binary as the trace would record it, its file gone: the same base
 * name in a directory that does not exist. */
static void self_moved_away(struct hp_module *m)
{
	module_containing(target_addr(), m);
	char *moved = NULL;
	ck_assert_int_gt(asprintf(&moved, "/nonexistent/dir/%s", strrchr(m->path, '/') + 1), 0);
	free(m->path);
	m->path = moved;
}

START_TEST(test_matching_build_id_is_used)
{
	struct hp_module self;
	module_containing(target_addr(), &self);
	ck_assert_msg(self.build_id_len > 0, "this test binary has no build-id (ld --build-id)");
	struct hp_symbols *s = symbols_or_fail(&self, 1);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	assert_is_target(&sym);
	ck_assert_ptr_null(hp_symbols_problem_at(s, target_addr()));
	hp_symbols_free(s);
	free_module(&self);
}
END_TEST

/* The file at the path is not the traced one (here: the build-id recorded
 * is another): its names would be wrong, so there are none, and why. */
START_TEST(test_build_id_mismatch_falls_back)
{
	struct hp_module self;
	module_containing(target_addr(), &self);
	ck_assert_uint_gt(self.build_id_len, 0);
	self.build_id[0] ^= 0xff;
	struct debug_dir d;
	make_debug_dir(&d, &self, NULL);
	struct hp_symbols *s = symbols_in(&self, 1, d.dir);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	char want[256];
	const char *base = strrchr(self.path, '/') + 1;
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base, target_addr() - self.bias);
	ck_assert_str_eq(sym.name, want);
	ck_assert_str_eq(sym.module, base);
	ck_assert_ptr_null(sym.file);
	ck_assert_int_eq(sym.resolved, 0);
	const char *why = hp_symbols_problem_at(s, target_addr());
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, "build-id mismatch") && strstr(why, self.path),
		      "problem: %s", why);
	ck_assert_msg(!strchr(why, '\n'), "problem is not one line: %s", why);
	/* One problem per module, whichever address asks. */
	ck_assert_ptr_eq(hp_symbols_problem_at(s, target_addr() + 1), why);
	ck_assert_ptr_null(hp_symbols_problem_at(s, 0x10));
	hp_symbols_free(s);
	remove_debug_dir(&d);
	free_module(&self);
}
END_TEST

/* Asking for the problem first does the search that naming would. */
START_TEST(test_missing_file_not_found_by_build_id)
{
	struct hp_module self;
	self_moved_away(&self);
	struct debug_dir d;
	make_debug_dir(&d, &self, NULL);
	struct hp_symbols *s = symbols_in(&self, 1, d.dir);
	const char *why = hp_symbols_problem_at(s, target_addr());
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, "/nonexistent/dir/") && strstr(why, "missing"), "problem: %s",
		      why);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	ck_assert_int_eq(sym.resolved, 0);
	ck_assert_ptr_eq(hp_symbols_problem_at(s, target_addr()), why);
	hp_symbols_free(s);
	remove_debug_dir(&d);
	free_module(&self);
}
END_TEST

/* libdwfl's layout: the ELF file itself at .build-id/xx/yyyy. */
START_TEST(test_missing_file_found_by_build_id)
{
	struct hp_module self;
	self_moved_away(&self);
	struct debug_dir d;
	make_debug_dir(&d, &self, "");
	struct hp_symbols *s = symbols_in(&self, 1, d.dir);
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	assert_is_target(&sym);
	ck_assert_ptr_null(hp_symbols_problem_at(s, target_addr()));
	hp_symbols_free(s);
	remove_debug_dir(&d);
	free_module(&self);
}
END_TEST

/* The separate debug file at .build-id/xx/yyyy.debug stands in for a file
 * that is gone, found through HOOKPROF_DEBUG_PATH's second directory. */
START_TEST(test_missing_file_debug_file_in_debug_path)
{
	struct hp_module self;
	self_moved_away(&self);
	struct debug_dir d;
	make_debug_dir(&d, &self, ".debug");
	char path[256];
	snprintf(path, sizeof(path), "/nonexistent/debug:%s", d.dir);
	ck_assert_int_eq(setenv("HOOKPROF_DEBUG_PATH", path, 1), 0);
	struct hp_symbols *s = symbols_or_fail(&self, 1);
	unsetenv("HOOKPROF_DEBUG_PATH");
	struct hp_symbol sym;
	hp_symbols_lookup(s, target_addr(), &sym);
	assert_is_target(&sym);
	ck_assert_ptr_null(hp_symbols_problem_at(s, target_addr()));
	hp_symbols_free(s);
	remove_debug_dir(&d);
	free_module(&self);
}
END_TEST

/* A file under the build-id's name must still have that build-id. */
START_TEST(test_debug_dir_file_with_other_build_id_is_not_used)
{
	static const char *const suffixes[] = { "", ".debug" };
	for (int i = 0; i < 2; i++) {
		struct hp_module self;
		self_moved_away(&self);
		self.build_id[0] ^= 0xff;
		struct debug_dir d;
		make_debug_dir(&d, &self, suffixes[i]);
		struct hp_symbols *s = symbols_in(&self, 1, d.dir);
		struct hp_symbol sym;
		hp_symbols_lookup(s, target_addr(), &sym);
		ck_assert_msg(!sym.resolved, "named %s from .build-id/xx/yyyy%s", sym.name,
			      suffixes[i]);
		ck_assert_ptr_nonnull(hp_symbols_problem_at(s, target_addr()));
		hp_symbols_free(s);
		remove_debug_dir(&d);
		free_module(&self);
	}
}
END_TEST

START_TEST(test_free_null)
{
	hp_symbols_free(NULL);
}
END_TEST

static Suite *symbols_suite(void)
{
	Suite *s = suite_create("symbols");
	TCase *core = tcase_create("core");
	tcase_add_test(core, test_static_function_in_self);
	tcase_add_test(core, test_second_lookup_is_cached);
	tcase_add_test(core, test_cxx_name_is_demangled);
	tcase_add_test(core, test_missing_file_falls_back_to_offset);
	tcase_add_test(core, test_address_outside_modules);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_test(limits, test_zero_modules);
	tcase_add_test(limits, test_extreme_addresses);
	tcase_add_test(limits, test_repeated_and_overlapping_modules);
	tcase_add_test(limits, test_two_objects_at_one_address);
	tcase_add_test(limits, test_non_elf_file_falls_back);
	tcase_add_test(limits, test_inside_function_keeps_its_name);
	tcase_add_test(limits, test_many_addresses);
	tcase_add_test(limits, test_free_null);
	suite_add_tcase(s, limits);
	TCase *build_ids = tcase_create("build-ids");
	tcase_add_test(build_ids, test_matching_build_id_is_used);
	tcase_add_test(build_ids, test_build_id_mismatch_falls_back);
	tcase_add_test(build_ids, test_missing_file_not_found_by_build_id);
	tcase_add_test(build_ids, test_missing_file_found_by_build_id);
	tcase_add_test(build_ids, test_missing_file_debug_file_in_debug_path);
	tcase_add_test(build_ids, test_debug_dir_file_with_other_build_id_is_not_used);
	suite_add_tcase(s, build_ids);
	return s;
}

int main(void)
{
	/* No network: a debuginfod query for libstdc++ could stall the run. The
	 * debug directories of the build-id tests are their own. */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("HOOKPROF_DEBUG_PATH");
	return tk_run_suite(symbols_suite());
}
