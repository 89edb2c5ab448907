/*
 * check_path.c - hp_path: base names of Linux and Windows paths.
 */
#include <check.h>

#include "testkit.h"

#include "../symbolize/hp_path.h"

START_TEST(test_base_of_linux_paths)
{
	ck_assert_str_eq(hp_path_base("/usr/lib/libc.so.6"), "libc.so.6");
	ck_assert_str_eq(hp_path_base("prog"), "prog");
	ck_assert_str_eq(hp_path_base("/dir/"), "");
	ck_assert_str_eq(hp_path_base(NULL), "?");
	/* A backslash in a Linux file name is part of it. */
	ck_assert_str_eq(hp_path_base("/tmp/a\\b"), "a\\b");
	ck_assert_str_eq(hp_path_base("a\\b"), "a\\b");
	ck_assert_int_eq(hp_path_is_windows("/c:/x"), 0);
	ck_assert_int_eq(hp_path_is_windows("C:x"), 0);
	ck_assert_int_eq(hp_path_is_windows(""), 0);
}
END_TEST

START_TEST(test_base_of_windows_paths)
{
	ck_assert_str_eq(hp_path_base("C:\\a\\b\\x.dll"), "x.dll");
	ck_assert_str_eq(hp_path_base("z:/tmp/y.exe"), "y.exe");
	ck_assert_str_eq(hp_path_base("C:\\a/b\\mixed.exe"), "mixed.exe");
	ck_assert_str_eq(hp_path_base("C:\\x.exe"), "x.exe");
	ck_assert_str_eq(hp_path_base("\\\\?\\C:\\w\\z.exe"), "z.exe");
	ck_assert_str_eq(hp_path_base("\\??\\C:\\w\\n.exe"), "n.exe");
	ck_assert_str_eq(hp_path_base("\\\\server\\share\\u.dll"), "u.dll");
	ck_assert_str_eq(hp_path_base("\\\\?\\UNC\\server\\share\\v.dll"), "v.dll");
	ck_assert_int_eq(hp_path_is_windows("C:\\x"), 1);
	ck_assert_int_eq(hp_path_is_windows("c:/x"), 1);
}
END_TEST

START_TEST(test_drive_of_windows_paths)
{
	const char *p = "\\\\?\\D:\\dir\\x.exe";
	ck_assert_int_eq(hp_path_drive(p), 'd');
	ck_assert_str_eq(p + hp_path_drive_rest(p), "\\dir\\x.exe");
	ck_assert_int_eq(hp_path_drive("C:/y"), 'c');
	ck_assert_str_eq("C:/y" + hp_path_drive_rest("C:/y"), "/y");
	ck_assert_int_eq(hp_path_drive("\\\\server\\share\\u.dll"), 0);
	ck_assert_int_eq(hp_path_drive("/usr/x"), 0);
	ck_assert_int_eq(hp_path_drive("C:"), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("path");
	TCase *core = tcase_create("core");
	tcase_add_test(core, test_base_of_linux_paths);
	tcase_add_test(core, test_base_of_windows_paths);
	tcase_add_test(core, test_drive_of_windows_paths);
	suite_add_tcase(s, core);
	return s;
}

int main(void) { return tk_run_suite(suite()); }
