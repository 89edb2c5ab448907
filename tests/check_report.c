/*
 * check_report.c - number formatting, RFC 4180 CSV, merging and sorting of
 * report rows, and the table layout.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#include "../symbolize/hp_report.h"

static struct hp_rows rows;
static char *out_text;
static size_t out_len;
static FILE *out;

static void setup(void)
{
	memset(&rows, 0, sizeof(rows));
	out_text = NULL;
	out_len = 0;
	out = open_memstream(&out_text, &out_len);
	ck_assert_ptr_nonnull(out);
}

static void teardown(void)
{
	hp_rows_free(&rows);
	if (out)
		fclose(out);
	free(out_text);
}

/* What was written to out so far. */
static const char *output(void)
{
	fflush(out);
	return out_text;
}

static void add_row(const char *name, const char *module, uint64_t calls, double total,
		    double self, double min, double max)
{
	if (rows.n == rows.cap) {
		rows.cap = rows.cap ? rows.cap * 2 : 4;
		rows.row = realloc(rows.row, rows.cap * sizeof(*rows.row));
		ck_assert_ptr_nonnull(rows.row);
	}
	rows.row[rows.n++] = (struct hp_row){ .name = strdup(name), .module = strdup(module),
					      .calls = calls, .total = total, .self = self,
					      .min = min, .max = max };
}

/* A row of a function with its source file (NULL: none) and offset. */
static void add_row_at(const char *name, const char *module, const char *file, uint64_t offset,
		       uint64_t calls)
{
	add_row(name, module, calls, (double)calls, (double)calls, 1, 1);
	struct hp_row *r = &rows.row[rows.n - 1];
	r->file = file ? strdup(file) : NULL;
	r->offset = offset;
}

static const char *fmt(double ns)
{
	static char buf[64];
	memset(buf, 'x', sizeof(buf));
	hp_format_ns(ns, buf, sizeof(buf));
	return buf;
}

static const char *csv(const char *s)
{
	hp_csv_field(out, s);
	fputc('|', out);
	return output();
}

static void sort_rows(void)
{
	/* the rows of the sort tests */
	add_row("delta", "m", 10, 100, 50, 1, 30);
	add_row("bravo", "m", 5, 300, 10, 1, 100);
	add_row("alpha", "m", 20, 200, 50, 1, 20);
	add_row("charlie", "m", 1, 50, 40, 50, 50);
}

static void assert_order(const char *a, const char *b, const char *c, const char *d)
{
	ck_assert_uint_eq(rows.n, 4);
	ck_assert_str_eq(rows.row[0].name, a);
	ck_assert_str_eq(rows.row[1].name, b);
	ck_assert_str_eq(rows.row[2].name, c);
	ck_assert_str_eq(rows.row[3].name, d);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_format_ns)
{
	ck_assert_str_eq(fmt(0), "0 ns");
	ck_assert_str_eq(fmt(950), "950 ns");
	ck_assert_str_eq(fmt(999), "999 ns");
	ck_assert_str_eq(fmt(1000), "1.000 us");
	ck_assert_str_eq(fmt(1500), "1.500 us");
	ck_assert_str_eq(fmt(12346), "12.35 us");
	ck_assert_str_eq(fmt(123456), "123.5 us");
	ck_assert_str_eq(fmt(12345678), "12.35 ms");
	ck_assert_str_eq(fmt(2.5e9), "2.500 s");
	ck_assert_str_eq(fmt(42.4), "42 ns");
}
END_TEST

START_TEST(test_csv_field_plain)
{
	ck_assert_str_eq(csv("main"), "main|");
	ck_assert_str_eq(csv(""), "main||");
	ck_assert_str_eq(csv("ns::f(int*) const"), "main||ns::f(int*) const|");
}
END_TEST

START_TEST(test_csv_field_quoting)
{
	ck_assert_str_eq(csv("f(int, char)"), "\"f(int, char)\"|");
	ck_assert_str_eq(csv("say \"hi\""), "\"f(int, char)\"|\"say \"\"hi\"\"\"|");
}
END_TEST

START_TEST(test_csv_field_line_breaks)
{
	ck_assert_str_eq(csv("a\nb"), "\"a\nb\"|");
	ck_assert_str_eq(csv("c\rd"), "\"a\nb\"|\"c\rd\"|");
	ck_assert_str_eq(csv("\""), "\"a\nb\"|\"c\rd\"|\"\"\"\"|");
}
END_TEST

START_TEST(test_csv_output)
{
	add_row("main", "/usr/bin/prog", 1, 1000.4, 500.5, 1000.4, 1000.4);
	add_row("f(int, char)", "lib \"x\".so", 3, 3000, 2999.6, 999.5, 1001);
	hp_rows_finish(&rows, HP_SORT_SELF);
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 0), 0);
	ck_assert_str_eq(output(),
			 "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n"
			 "\"f(int, char)\",3,3000,3000,1000,1000,1001,\"lib \"\"x\"\".so\",\r\n"
			 "main,1,1000,501,1000,1000,1000,/usr/bin/prog,\r\n");
}
END_TEST

START_TEST(test_csv_source_column)
{
	add_row_at("f", "m", "/src/f, g.c", 0x10, 1);
	rows.row[0].line = 12;
	add_row_at("g", "m", NULL, 0x20, 1);
	hp_rows_finish(&rows, HP_SORT_NAME);
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 0), 0);
	ck_assert_str_eq(output(), "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n"
				   "f,1,1,1,1,1,1,m,\"/src/f, g.c:12\"\r\n"
				   "g,1,1,1,1,1,1,m,\r\n");
}
END_TEST

START_TEST(test_csv_header_only)
{
	hp_rows_finish(&rows, HP_SORT_SELF);
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 0), 0);
	ck_assert_str_eq(output(), "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n");
}
END_TEST

START_TEST(test_merge_same_function)
{
	add_row("f", "m1", 2, 10, 5, 3, 7);
	add_row("g", "m1", 1, 4, 4, 4, 4);
	add_row("f", "m1", 3, 20, 6, 1, 9);
	add_row("f", "m2", 1, 100, 100, 100, 100);
	add_row("f", "m1", 1, 2, 2, 2, 2);
	hp_rows_finish(&rows, HP_SORT_NAME);
	ck_assert_uint_eq(rows.n, 3);
	const struct hp_row *r = &rows.row[0];
	ck_assert_str_eq(r->name, "f");
	ck_assert_str_eq(r->module, "m1");
	ck_assert_uint_eq(r->calls, 6);
	ck_assert_double_eq(r->total, 32);
	ck_assert_double_eq(r->self, 13);
	ck_assert_double_eq(r->min, 1);
	ck_assert_double_eq(r->max, 9);
	r = &rows.row[1];
	ck_assert_str_eq(r->name, "f");
	ck_assert_str_eq(r->module, "m2");
	ck_assert_uint_eq(r->calls, 1);
	ck_assert_double_eq(r->total, 100);
	r = &rows.row[2];
	ck_assert_str_eq(r->name, "g");
	ck_assert_uint_eq(r->calls, 1);
}
END_TEST

/* Two static functions of one name in two files are two rows, and each
 * merges with itself across runs (same file, any load address). */
START_TEST(test_static_functions_apart)
{
	add_row_at("helper", "prog", "/src/a.c", 0x1100, 10);
	add_row_at("helper", "prog", "/src/b.c", 0x1200, 5000);
	add_row_at("helper", "prog", "/src/a.c", 0x1100, 10);
	add_row_at("helper", "prog", "/src/b.c", 0x1200, 5000);
	add_row_at("main", "prog", "/src/main.c", 0x1000, 2);
	ck_assert_int_eq(hp_rows_finish(&rows, HP_SORT_CALLS), 0);
	ck_assert_uint_eq(rows.n, 3);
	ck_assert_str_eq(hp_row_name(&rows.row[0]), "helper (b.c)");
	ck_assert_uint_eq(rows.row[0].calls, 10000);
	ck_assert_str_eq(hp_row_name(&rows.row[1]), "helper (a.c)");
	ck_assert_uint_eq(rows.row[1].calls, 20);
	ck_assert_str_eq(hp_row_name(&rows.row[2]), "main");
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 0), 0);
	ck_assert_str_eq(output(), "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n"
				   "helper (b.c),10000,10000,10000,1,1,1,prog,/src/b.c\r\n"
				   "helper (a.c),20,20,20,1,1,1,prog,/src/a.c\r\n"
				   "main,2,2,2,1,1,1,prog,/src/main.c\r\n");
}
END_TEST

/* Rows of one name apart by what tells them apart: the file's path when
 * the base names agree, the offset without source files; one name in two
 * modules needs nothing (the module is shown). */
START_TEST(test_labels_fall_back)
{
	add_row_at("f", "prog", "/x/util.c", 0x10, 1);
	add_row_at("f", "prog", "/y/util.c", 0x20, 2);
	add_row_at("g", "prog", NULL, 0x30, 3);
	add_row_at("g", "prog", NULL, 0x40, 4);
	add_row_at("h", "prog", NULL, 0x50, 5);
	add_row_at("h", "lib.so", NULL, 0x50, 6);
	ck_assert_int_eq(hp_rows_finish(&rows, HP_SORT_CALLS), 0);
	ck_assert_uint_eq(rows.n, 6);
	ck_assert_str_eq(hp_row_name(&rows.row[0]), "h");
	ck_assert_str_eq(hp_row_name(&rows.row[1]), "h");
	ck_assert_str_eq(hp_row_name(&rows.row[2]), "g (prog+0x40)");
	ck_assert_str_eq(hp_row_name(&rows.row[3]), "g (prog+0x30)");
	ck_assert_str_eq(hp_row_name(&rows.row[4]), "f (/y/util.c)");
	ck_assert_str_eq(hp_row_name(&rows.row[5]), "f (/x/util.c)");
	ck_assert_int_eq(hp_rows_print_table(out, &rows, 0), 0);
	ck_assert_ptr_nonnull(strstr(output(), "  f (/x/util.c) [prog]\n"));
}
END_TEST

START_TEST(test_sort_self)
{
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_SELF);
	/* alpha and delta tie at 50: by name */
	assert_order("alpha", "delta", "charlie", "bravo");
}
END_TEST

START_TEST(test_sort_calls)
{
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_CALLS);
	assert_order("alpha", "delta", "bravo", "charlie");
}
END_TEST

START_TEST(test_sort_name)
{
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_NAME);
	assert_order("alpha", "bravo", "charlie", "delta");
}
END_TEST

START_TEST(test_sort_total_avg_max)
{
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_TOTAL);
	assert_order("bravo", "alpha", "delta", "charlie");
	hp_rows_finish(&rows, HP_SORT_AVG);
	assert_order("bravo", "charlie", "alpha", "delta");
	hp_rows_finish(&rows, HP_SORT_MAX);
	assert_order("bravo", "charlie", "delta", "alpha");
}
END_TEST

START_TEST(test_table)
{
	add_row("main", "/usr/bin/prog", 1, 1500, 950, 1500, 1500);
	add_row("0x1234", "?", 2, 12345678, 12345678, 1000, 12344678);
	hp_rows_finish(&rows, HP_SORT_SELF);
	ck_assert_int_eq(hp_rows_print_table(out, &rows, 0), 0);
	ck_assert_str_eq(output(),
			 "       calls        total         self          avg          min          max  function\n"
			 "           2     12.35 ms     12.35 ms     6.173 ms     1.000 us     12.34 ms  0x1234\n"
			 "           1     1.500 us       950 ns     1.500 us     1.500 us     1.500 us  main [/usr/bin/prog]\n");
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_limit_rows)
{
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_NAME);
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 2), 0);
	ck_assert_str_eq(output(), "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n"
				   "alpha,20,200,50,10,1,20,m,\r\n"
				   "bravo,5,300,10,60,1,100,m,\r\n");
}
END_TEST

START_TEST(test_zero_calls_avg)
{
	add_row("never", "m", 0, 0, 0, 0, 0);
	hp_rows_finish(&rows, HP_SORT_AVG);
	ck_assert_int_eq(hp_rows_print_csv(out, &rows, 0), 0);
	ck_assert_str_eq(output(), "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\r\n"
				   "never,0,0,0,0,0,0,m,\r\n");
}
END_TEST

START_TEST(test_print_error)
{
	FILE *ro = fopen("/dev/null", "r");
	ck_assert_ptr_nonnull(ro);
	sort_rows();
	hp_rows_finish(&rows, HP_SORT_SELF);
	ck_assert_int_eq(hp_rows_print_csv(ro, &rows, 0), -1);
	ck_assert_int_eq(hp_rows_print_table(ro, &rows, 0), -1);
	fclose(ro);
}
END_TEST

START_TEST(test_format_ns_small_buffer)
{
	char b[6];
	memset(b, 'x', sizeof(b));
	hp_format_ns(12345678, b, sizeof(b));
	ck_assert_str_eq(b, "12.35");
}
END_TEST

START_TEST(test_format_ns_rounding_carries_unit)
{
	/* four significant digits: a value that rounds up to 1000 of a unit
	 * is shown in the next unit */
	ck_assert_str_eq(fmt(999.6), "1.000 us");
	ck_assert_str_eq(fmt(9999.6), "10.00 us");
	ck_assert_str_eq(fmt(99999), "100.0 us");
	ck_assert_str_eq(fmt(999999), "1.000 ms");
}
END_TEST

START_TEST(test_many_rows_merge)
{
	/* 3000 rows of 100 functions in 3 modules: 300 merged rows */
	char name[32], module[32];
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "fn%03d", i % 100);
		snprintf(module, sizeof(module), "mod%d", i % 3);
		add_row(name, module, 1, 10, 5, (double)(i % 7), (double)i);
	}
	hp_rows_finish(&rows, HP_SORT_NAME);
	ck_assert_uint_eq(rows.n, 300);
	for (size_t i = 0; i < rows.n; i++) {
		ck_assert_uint_eq(rows.row[i].calls, 10);
		ck_assert_double_eq(rows.row[i].total, 100);
		ck_assert_double_eq(rows.row[i].min, 0);
	}
	ck_assert_str_eq(rows.row[0].name, "fn000");
	ck_assert_str_eq(rows.row[0].module, "mod0");
	ck_assert_str_eq(rows.row[1].module, "mod1");
	ck_assert_str_eq(rows.row[299].name, "fn099");
	ck_assert_str_eq(rows.row[299].module, "mod2");
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_format_ns);
	tcase_add_test(core, test_csv_field_plain);
	tcase_add_test(core, test_csv_field_quoting);
	tcase_add_test(core, test_csv_field_line_breaks);
	tcase_add_test(core, test_csv_output);
	tcase_add_test(core, test_csv_source_column);
	tcase_add_test(core, test_csv_header_only);
	tcase_add_test(core, test_merge_same_function);
	tcase_add_test(core, test_static_functions_apart);
	tcase_add_test(core, test_labels_fall_back);
	tcase_add_test(core, test_sort_self);
	tcase_add_test(core, test_sort_calls);
	tcase_add_test(core, test_sort_name);
	tcase_add_test(core, test_sort_total_avg_max);
	tcase_add_test(core, test_table);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_limit_rows);
	tcase_add_test(limits, test_zero_calls_avg);
	tcase_add_test(limits, test_print_error);
	tcase_add_test(limits, test_format_ns_small_buffer);
	tcase_add_test(limits, test_format_ns_rounding_carries_unit);
	tcase_add_test(limits, test_many_rows_merge);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(report_suite());
}
