/*
 * check_symbols.c - hp_symbols against real objects of this very process
 * (the test binary, built with -g, and libstdc++), described the way the
 * runtime records them: from dl_iterate_phdr.
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
#include <unistd.h>

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

static void describe_object(const struct dl_phdr_info *info, struct hp_module *m)
{
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->path = object_path(info->dlpi_name);
	m->seg = calloc(info->dlpi_phnum, sizeof(*m->seg));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
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
	tcase_add_test(limits, test_non_elf_file_falls_back);
	tcase_add_test(limits, test_inside_function_keeps_its_name);
	tcase_add_test(limits, test_many_addresses);
	tcase_add_test(limits, test_free_null);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	/* No network: a debuginfod query for libstdc++ could stall the run. */
	unsetenv("DEBUGINFOD_URLS");
	SRunner *sr = srunner_create(symbols_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
