/*
 * check_pack.c - hp_pack and the reading of a pack (hp_symbols_for_trace),
 * on traces written byte by byte whose module map names real files: copies
 * of this very test binary (built with -g), with its real build-id and load
 * bias, so that one of its functions can be named from the pack.
 */
#define _GNU_SOURCE
#include <check.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testkit.h"

#include "../lib/hp_format.h"
#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_pack.h"
#include "../symbolize/hp_symbols.h"

static __attribute__((noinline)) int packed_function(int x)
{
	return x * 5 + 2;
}

/* Through a volatile: kept out of line, under its own name. */
static int (*volatile target_fn)(int) = packed_function;

/* ------------------------------------------------------- fixture */

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char trace[PATH_MAX + 64];
static char prog[PATH_MAX + 64]; /* a copy of this binary, the traced "program" */
static char err[1024];
static struct tk_bytes file;
static struct hp_pack pack;

struct self {
	uint64_t bias;
	uint8_t id[64];
	size_t idlen;
};
static struct self self;

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1; /* the main program is listed first */
}

static size_t build_id_of(const char *path, uint8_t *out)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const void *id;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	ck_assert_int_gt(n, 0);
	ck_assert_int_le(n, 64);
	memcpy(out, id, (size_t)n);
	elf_end(elf);
	close(fd);
	return (size_t)n;
}

static void copy_file(const char *from, const char *to)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	ck_assert_int_eq(system(cmd), 0);
}

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	tk_resolve_path(dir, sizeof(dir));
	snprintf(trace, sizeof(trace), "%s/t.hookprof", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	/* Resolved here: in cp, /proc/self/exe would be cp. */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = 0;
	copy_file(exe, prog);
	dl_iterate_phdr(first_object, &self.bias);
	self.idlen = build_id_of("/proc/self/exe", self.id);
	memset(&file, 0, sizeof(file));
	memset(&pack, 0, sizeof(pack));
	err[0] = 0;
}

static void teardown(void)
{
	hp_pack_free(&pack);
	free(file.p);
	tk_remove_tree(dir);
}

/* ------------------------------------------------------- traces */

static uint64_t target_addr(void)
{
	return (uint64_t)(uintptr_t)target_fn;
}

/* A trace of one call of the function at addr, with the modules given. */
static void write_trace(const struct tk_module *m, uint32_t n, uint64_t addr)
{
	tk_one_call_trace(&file, prog, m, n, addr);
	tk_save(trace, &file);
}

/* This binary's copy at prog, recorded with the given build-id. */
static struct tk_module prog_module(const uint8_t *id, size_t idlen)
{
	return (struct tk_module){ prog, id, idlen, self.bias, target_addr() & ~0xfffull, 0x10000 };
}

static void pack_ok(int flags)
{
	hp_pack_free(&pack);
	int rc = hp_pack_trace(trace, NULL, flags, &pack, err, sizeof(err));
	ck_assert_msg(rc == 0, "hp_pack_trace: %s", err);
}

static void hex(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* Where a file of build-id id goes in the trace's pack. */
static void by_build_id(const uint8_t *id, size_t n, char *out, size_t len)
{
	char h[129] = "";
	hex(id, n, h);
	snprintf(out, len, "%s.symbols/.build-id/%.2s/%s.debug", trace, h, h + 2);
}

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static off_t size_of(const char *p)
{
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	return st.st_size;
}

static const char *name_of_target(void)
{
	static char name[256];
	tk_name_of_function0(trace, target_addr(), name, sizeof(name));
	return name;
}

/* ------------------------------------------------------- core */

START_TEST(test_named_module_stored_by_build_id)
{
	struct tk_module m[2] = {
		prog_module(self.id, self.idlen),
		/* listed, never called: not stored */
		{ "/nonexistent/libunused.so", (const uint8_t *)"\x01\x02\x03\x04", 4,
		  0x7f0000000000ull, 0x7f0000001000ull, 0x1000 },
	};
	write_trace(m, 2, target_addr());
	pack_ok(0);
	ck_assert_uint_eq(pack.n, 2);
	ck_assert_int_eq(pack.mod[0].status, HP_PACK_STORED);
	ck_assert_int_eq(pack.mod[0].kind, HP_PACK_MAIN);
	ck_assert_int_eq(pack.mod[1].status, HP_PACK_UNUSED);
	char want[2 * PATH_MAX];
	by_build_id(self.id, self.idlen, want, sizeof(want));
	ck_assert_int_eq(size_of(want), size_of(prog));
	ck_assert_uint_eq(pack.bytes, (uint64_t)size_of(prog));
	snprintf(want, sizeof(want), "%s.symbols/MODULES", trace);
	ck_assert(exists(want));
}
END_TEST

/* The whole point: the program deleted, its functions still named; and
 * without the pack, they are not. */
START_TEST(test_pack_names_after_the_program_is_gone)
{
	struct tk_module m = prog_module(self.id, self.idlen);
	write_trace(&m, 1, target_addr());
	pack_ok(0);
	ck_assert_int_eq(unlink(prog), 0);
	ck_assert_str_eq(name_of_target(), "packed_function");
	char moved[PATH_MAX * 2], packdir[PATH_MAX * 2];
	snprintf(packdir, sizeof(packdir), "%s.symbols", trace);
	snprintf(moved, sizeof(moved), "%s/elsewhere", dir);
	ck_assert_int_eq(rename(packdir, moved), 0);
	ck_assert_str_ne(name_of_target(), "packed_function");
}
END_TEST

START_TEST(test_rebuilt_file_not_stored)
{
	static const uint8_t other[20] = { 0xab, 0xcd, 0xef, 0x01 };
	struct tk_module m = prog_module(other, sizeof(other));
	write_trace(&m, 1, target_addr());
	pack_ok(0);
	ck_assert_int_eq(pack.mod[0].status, HP_PACK_REBUILT);
	ck_assert_ptr_null(pack.mod[0].stored);
	char want[2 * PATH_MAX];
	by_build_id(other, sizeof(other), want, sizeof(want));
	ck_assert(!exists(want));
	ck_assert_uint_eq(pack.bytes, 0);
}
END_TEST

START_TEST(test_missing_file_not_stored)
{
	static const uint8_t other[20] = { 0x12, 0x34 };
	struct tk_module m = prog_module(other, sizeof(other));
	ck_assert_int_eq(unlink(prog), 0);
	write_trace(&m, 1, target_addr());
	pack_ok(0);
	ck_assert_int_eq(pack.mod[0].status, HP_PACK_MISSING);
}
END_TEST

/* No build-id to tell the traced file by: it is kept by path, and read
 * from there rather than from whatever is at the path later. */
START_TEST(test_no_build_id_kept_by_path)
{
	char nobuild[PATH_MAX * 2];
	snprintf(nobuild, sizeof(nobuild), "%s/nobuildid", dir);
	char cmd[PATH_MAX * 8];
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section=.note.gnu.build-id '%s' '%s'", prog,
		 nobuild);
	ck_assert_int_eq(system(cmd), 0);
	struct tk_module m = prog_module(NULL, 0);
	m.path = nobuild;
	write_trace(&m, 1, target_addr());
	pack_ok(0);
	ck_assert_int_eq(pack.mod[0].status, HP_PACK_STORED);
	char want[PATH_MAX * 5];
	snprintf(want, sizeof(want), "%s.symbols/by-path%s", trace, nobuild);
	ck_assert_int_eq(size_of(want), size_of(nobuild));
	/* "rebuilt": another program at the path */
	copy_file("/bin/true", nobuild);
	ck_assert_str_eq(name_of_target(), "packed_function");
}
END_TEST

/* Packing again after the rebuild keeps what the pack already has. */
START_TEST(test_repack_after_rebuild_keeps_the_file)
{
	struct tk_module m = prog_module(self.id, self.idlen);
	write_trace(&m, 1, target_addr());
	pack_ok(0);
	copy_file("/bin/true", prog);
	pack_ok(0);
	ck_assert_int_eq(pack.mod[0].status, HP_PACK_STORED);
	ck_assert_int_eq(pack.mod[0].kind, HP_PACK_KEPT);
	ck_assert_str_eq(name_of_target(), "packed_function");
}
END_TEST

/* ------------------------------------------------------- limits */

START_TEST(test_all_modules_flag_stores_the_uncalled)
{
	char second[PATH_MAX * 2];
	snprintf(second, sizeof(second), "%s/second", dir);
	copy_file("/bin/true", second);
	uint8_t id[64];
	size_t idlen = build_id_of(second, id);
	struct tk_module m[2] = {
		prog_module(self.id, self.idlen),
		{ second, id, idlen, 0x7f0000000000ull, 0x7f0000001000ull, 0x1000 },
	};
	write_trace(m, 2, target_addr());
	pack_ok(0);
	ck_assert_int_eq(pack.mod[1].status, HP_PACK_UNUSED);
	pack_ok(HP_PACK_ALL_MODULES);
	ck_assert_int_eq(pack.mod[1].status, HP_PACK_STORED);
	char want[2 * PATH_MAX];
	by_build_id(id, idlen, want, sizeof(want));
	ck_assert(exists(want));
}
END_TEST

/* The same object listed twice (loaded again elsewhere) is one entry. */
START_TEST(test_object_listed_twice_packed_once)
{
	struct tk_module m[2] = { prog_module(self.id, self.idlen),
				    prog_module(self.id, self.idlen) };
	m[1].bias += 0x100000000ull;
	m[1].start += 0x100000000ull;
	write_trace(m, 2, target_addr());
	pack_ok(0);
	ck_assert_uint_eq(pack.n, 1);
	ck_assert_uint_eq(pack.bytes, (uint64_t)size_of(prog));
}
END_TEST

START_TEST(test_unreadable_trace_fails_with_reason)
{
	ck_assert_int_eq(hp_pack_trace(trace, NULL, 0, &pack, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, trace));
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(test_pack_dir_that_cannot_be_made_fails)
{
	struct tk_module m = prog_module(self.id, self.idlen);
	write_trace(&m, 1, target_addr());
	char bad[PATH_MAX * 2];
	snprintf(bad, sizeof(bad), "%s/t.hookprof/sub", dir); /* under a regular file */
	ck_assert_int_eq(hp_pack_trace(trace, bad, 0, &pack, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot make"));
}
END_TEST

static Suite *pack_suite(void)
{
	Suite *s = suite_create("pack");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_named_module_stored_by_build_id);
	tcase_add_test(core, test_pack_names_after_the_program_is_gone);
	tcase_add_test(core, test_rebuilt_file_not_stored);
	tcase_add_test(core, test_missing_file_not_stored);
	tcase_add_test(core, test_no_build_id_kept_by_path);
	tcase_add_test(core, test_repack_after_rebuild_keeps_the_file);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_all_modules_flag_stores_the_uncalled);
	tcase_add_test(limits, test_object_listed_twice_packed_once);
	tcase_add_test(limits, test_unreadable_trace_fails_with_reason);
	tcase_add_test(limits, test_pack_dir_that_cannot_be_made_fails);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(pack_suite(), top, sizeof(top), "check_pack");
}
