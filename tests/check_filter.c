/*
 * check_filter.c - HOOKPROF_EXCLUDE, INCLUDE and DEPTH (lib/hp_filter.c):
 * names matched (demangled), addresses found from the ELF symbol tables of
 * this very test program, the levels of enters and exits with made-up
 * stack addresses (a longjmp is an enter at a higher one), and odd files.
 * Every test runs in its own process (CK_FORK): the filters are static.
 */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hp_encode.h"
#include "hp_filter.h"
#include "testkit.h"

static char top[PATH_MAX - 256];
static char dir[PATH_MAX];
static char err[512];

/* Functions of this program whose names the tests match. */
__attribute__((noinline)) void flt_main(void) { __asm__ volatile(""); }
__attribute__((noinline)) void flt_excluded(void) { __asm__ volatile(""); }
__attribute__((noinline)) void flt_callee(void) { __asm__ volatile(""); }
__attribute__((noinline)) void flt_work(void) { __asm__ volatile(""); }
__attribute__((noinline)) void flt_other(void) { __asm__ volatile(""); }
__attribute__((noinline)) static void flt_hidden(void) { __asm__ volatile(""); }

#define A(f) ((uint64_t)(uintptr_t)(f))
#define ENTER(f, sp) hp_filter_drops(A(f), (sp))
#define EXIT(f, sp) hp_filter_drops(A(f) | HP_RAW_EXIT, (sp))

static int filters(const char *exclude, const char *include, unsigned depth)
{
	struct hp_config cfg = { .exclude = exclude, .include = include, .depth = depth };
	err[0] = 0;
	return hp_filter_init(&cfg, err, sizeof(err));
}

/* ---------------------------------------------------------------- core */

START_TEST(test_names_matched)
{
	ck_assert_int_eq(filters("^leaf$,ns::Cls::method", "work", 0), 0);
	ck_assert_uint_eq(hp_filter_name_verdict("leaf"), HP_FILTER_EXCLUDED);
	ck_assert_uint_eq(hp_filter_name_verdict("leafy"), 0);
	ck_assert_uint_eq(hp_filter_name_verdict("do_work_now"), HP_FILTER_INCLUDED);
	/* demangled with the process's __cxa_demangle: ns::Cls::method(int) */
	ck_assert_uint_eq(hp_filter_name_verdict("_ZN2ns3Cls6methodEi"), HP_FILTER_EXCLUDED);
	ck_assert_uint_eq(hp_filter_name_verdict("_ZN2ns3Cls5otherEv"), 0);
	ck_assert(hp_filter_on);
}
END_TEST

START_TEST(test_addresses_from_symbols)
{
	ck_assert_int_eq(filters("^flt_(excluded|hidden)$", "^flt_work$", 0), 0);
	ck_assert_uint_eq(hp_filter_verdict(A(flt_excluded)), HP_FILTER_EXCLUDED);
	ck_assert_uint_eq(hp_filter_verdict(A(flt_hidden)), HP_FILTER_EXCLUDED); /* .symtab */
	ck_assert_uint_eq(hp_filter_verdict(A(flt_work)), HP_FILTER_INCLUDED);
	ck_assert_uint_eq(hp_filter_verdict(A(flt_other)), 0);
	ck_assert_uint_eq(hp_filter_verdict(A(flt_excluded) + 1), 0); /* entries only */
}
END_TEST

START_TEST(test_exclude_drops_subtree)
{
	ck_assert_int_eq(filters("^flt_excluded$", NULL, 0), 0);
	ck_assert_int_eq(ENTER(flt_main, 1000), 0);
	ck_assert_int_eq(ENTER(flt_excluded, 900), 1);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_excluded, 900), 1);
	ck_assert_int_eq(ENTER(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_main, 1000), 0);
}
END_TEST

START_TEST(test_exclude_recursive)
{
	ck_assert_int_eq(filters("^flt_excluded$", NULL, 0), 0);
	ck_assert_int_eq(ENTER(flt_excluded, 900), 1);
	ck_assert_int_eq(ENTER(flt_excluded, 800), 1);
	ck_assert_int_eq(EXIT(flt_excluded, 800), 1);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1); /* still inside the outer one */
	ck_assert_int_eq(EXIT(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_excluded, 900), 1);
	ck_assert_int_eq(ENTER(flt_callee, 900), 0);
}
END_TEST

START_TEST(test_exclude_left_by_longjmp)
{
	ck_assert_int_eq(filters("^flt_excluded$", NULL, 0), 0);
	ck_assert_int_eq(ENTER(flt_main, 1000), 0);
	ck_assert_int_eq(ENTER(flt_excluded, 900), 1);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1);
	/* longjmp back into main, which calls another function */
	ck_assert_int_eq(ENTER(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_main, 1000), 0);
}
END_TEST

START_TEST(test_exclude_left_by_longjmp_then_exit)
{
	ck_assert_int_eq(filters("^flt_excluded$", NULL, 0), 0);
	ck_assert_int_eq(ENTER(flt_main, 1000), 0);
	ck_assert_int_eq(ENTER(flt_excluded, 900), 1);
	/* longjmp into main, which returns at once */
	ck_assert_int_eq(EXIT(flt_main, 1000), 0);
}
END_TEST

START_TEST(test_include_only_subtree)
{
	ck_assert_int_eq(filters(NULL, "^flt_work$", 0), 0);
	ck_assert_int_eq(ENTER(flt_main, 1000), 1);
	ck_assert_int_eq(ENTER(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_callee, 800), 0);
	ck_assert_int_eq(EXIT(flt_callee, 800), 0);
	ck_assert_int_eq(EXIT(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_other, 900), 1);
	ck_assert_int_eq(EXIT(flt_other, 900), 1);
	ck_assert_int_eq(EXIT(flt_main, 1000), 1);
}
END_TEST

START_TEST(test_include_left_by_longjmp)
{
	ck_assert_int_eq(filters(NULL, "^flt_work$", 0), 0);
	ck_assert_int_eq(ENTER(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_callee, 800), 0);
	ck_assert_int_eq(ENTER(flt_other, 900), 1); /* longjmp out of flt_work */
	ck_assert_int_eq(EXIT(flt_other, 900), 1);
}
END_TEST

START_TEST(test_exclude_wins_inside_include)
{
	ck_assert_int_eq(filters("^flt_excluded$", "^flt_work$", 0), 0);
	ck_assert_int_eq(ENTER(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_excluded, 800), 1);
	ck_assert_int_eq(ENTER(flt_work, 700), 1); /* included, but under an excluded one */
	ck_assert_int_eq(EXIT(flt_work, 700), 1);
	ck_assert_int_eq(EXIT(flt_excluded, 800), 1);
	ck_assert_int_eq(ENTER(flt_callee, 800), 0);
	ck_assert_int_eq(EXIT(flt_callee, 800), 0);
	ck_assert_int_eq(EXIT(flt_work, 900), 0);
}
END_TEST

START_TEST(test_depth_keeps_outer_levels)
{
	ck_assert_int_eq(filters(NULL, NULL, 2), 0);
	ck_assert(hp_filter_on);
	ck_assert_int_eq(ENTER(flt_main, 1000), 0);
	ck_assert_int_eq(ENTER(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1);
	ck_assert_int_eq(ENTER(flt_other, 700), 1);
	ck_assert_int_eq(EXIT(flt_other, 700), 1);
	ck_assert_int_eq(EXIT(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_other, 900), 0);
	ck_assert_int_eq(EXIT(flt_main, 1000), 0);
}
END_TEST

START_TEST(test_depth_left_by_longjmp)
{
	ck_assert_int_eq(filters(NULL, NULL, 2), 0);
	ck_assert_int_eq(ENTER(flt_main, 1000), 0);
	ck_assert_int_eq(ENTER(flt_work, 900), 0);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1);
	/* longjmp into main: flt_work's level is gone, the next call is level 2 */
	ck_assert_int_eq(ENTER(flt_other, 900), 0);
	ck_assert_int_eq(ENTER(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_callee, 800), 1);
	ck_assert_int_eq(EXIT(flt_other, 900), 0);
}
END_TEST

/* -------------------------------------------------------------- limits */

START_TEST(test_bad_regex_left_out)
{
	ck_assert_int_eq(filters("x(,^flt_excluded$", NULL, 0), -1);
	ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_EXCLUDE: 'x(' is not a regular expression"));
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_uint_eq(hp_filter_verdict(A(flt_excluded)), HP_FILTER_EXCLUDED);
}
END_TEST

START_TEST(test_only_bad_regexes_filter_nothing)
{
	ck_assert_int_eq(filters(NULL, "[", 0), -1);
	ck_assert(!hp_filter_on);
}
END_TEST

START_TEST(test_commas_inside_regex)
{
	ck_assert_int_eq(filters("^a{1,2}$,^b[,]c$", NULL, 0), 0);
	ck_assert_uint_eq(hp_filter_name_verdict("aa"), HP_FILTER_EXCLUDED);
	ck_assert_uint_eq(hp_filter_name_verdict("b,c"), HP_FILTER_EXCLUDED);
	ck_assert_uint_eq(hp_filter_name_verdict("2}"), 0);
}
END_TEST

static unsigned nsyms;
static int saw_main;

static void count_symbol(void *arg, const char *name, uint64_t addr)
{
	(void)arg;
	(void)addr;
	nsyms++;
	saw_main |= !strcmp(name, "main");
}

START_TEST(test_read_own_symbols)
{
	ck_assert_int_eq(hp_module_symbols("/proc/self/exe", 0, count_symbol, NULL), 0);
	ck_assert_uint_gt(nsyms, 10);
	ck_assert(saw_main);
}
END_TEST

/* The first `len` bytes of this program (or of `bytes`), as a file. */
static void write_file(const char *path, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

START_TEST(test_odd_files_skipped)
{
	static char self[1 << 16];
	int fd = open("/proc/self/exe", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t got = read(fd, self, sizeof(self));
	close(fd);
	ck_assert_int_gt(got, (ssize_t)sizeof(Elf64_Ehdr));
	char path[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/odd", dir);
	static const size_t cuts[] = { 0, 3, sizeof(Elf64_Ehdr) - 1, sizeof(Elf64_Ehdr), 4096 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(path, self, cuts[i]);
		/* cut before its section headers: not read, and no crash */
		ck_assert_int_eq(hp_module_symbols(path, 0, count_symbol, NULL), -1);
	}
	/* section headers said to lie past the end */
	Elf64_Ehdr eh;
	memcpy(&eh, self, sizeof(eh));
	eh.e_shoff = ~0ull - 8;
	write_file(path, &eh, sizeof(eh));
	ck_assert_int_eq(hp_module_symbols(path, 0, count_symbol, NULL), -1);
	ck_assert_int_eq(hp_module_symbols("/nonexistent/file", 0, count_symbol, NULL), -1);
	ck_assert_int_eq(hp_module_symbols(dir, 0, count_symbol, NULL), -1);
	ck_assert_uint_eq(nsyms, 0);
}
END_TEST

START_TEST(test_bad_symbol_table_links)
{
	/* a symbol table whose string table index is out of range */
	struct {
		Elf64_Ehdr eh;
		Elf64_Shdr sh[2];
		Elf64_Sym sym[2];
	} f;
	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = ELFCLASS64;
	f.eh.e_shentsize = sizeof(Elf64_Shdr);
	f.eh.e_shnum = 2;
	f.eh.e_shoff = offsetof(__typeof__(f), sh);
	f.sh[1].sh_type = SHT_SYMTAB;
	f.sh[1].sh_entsize = sizeof(Elf64_Sym);
	f.sh[1].sh_offset = offsetof(__typeof__(f), sym);
	f.sh[1].sh_size = sizeof(f.sym);
	f.sh[1].sh_link = 7;
	char path[PATH_MAX + 16];
	tk_make_test_dir(dir, sizeof(dir), top);
	snprintf(path, sizeof(path), "%s/links", dir);
	write_file(path, &f, sizeof(f));
	ck_assert_int_eq(hp_module_symbols(path, 0, count_symbol, NULL), -1);
	/* a symbol table running past the end of the file */
	f.sh[1].sh_link = 0;
	f.sh[0].sh_type = SHT_STRTAB;
	f.sh[1].sh_size = 1 << 20;
	write_file(path, &f, sizeof(f));
	ck_assert_int_eq(hp_module_symbols(path, 0, count_symbol, NULL), -1);
	ck_assert_uint_eq(nsyms, 0);
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *core = tcase_create("core");
	tcase_add_test(core, test_names_matched);
	tcase_add_test(core, test_addresses_from_symbols);
	tcase_add_test(core, test_exclude_drops_subtree);
	tcase_add_test(core, test_exclude_recursive);
	tcase_add_test(core, test_exclude_left_by_longjmp);
	tcase_add_test(core, test_exclude_left_by_longjmp_then_exit);
	tcase_add_test(core, test_include_only_subtree);
	tcase_add_test(core, test_include_left_by_longjmp);
	tcase_add_test(core, test_exclude_wins_inside_include);
	tcase_add_test(core, test_depth_keeps_outer_levels);
	tcase_add_test(core, test_depth_left_by_longjmp);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_test(limits, test_bad_regex_left_out);
	tcase_add_test(limits, test_only_bad_regexes_filter_nothing);
	tcase_add_test(limits, test_commas_inside_regex);
	tcase_add_test(limits, test_read_own_symbols);
	tcase_add_test(limits, test_odd_files_skipped);
	tcase_add_test(limits, test_bad_symbol_table_links);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(filter_suite(), top, sizeof(top), "check_filter");
}
