/*
 * hp_report.h - the flat profile as rows of named functions, merged across
 * traces by function and module, printed as a table or as CSV.
 */
#ifndef HP_REPORT_H
#define HP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hp_analyze.h"

struct hp_row {
	char *name;
	char *module;
	uint64_t calls;
	double total, self, min, max; /* ns */
};

struct hp_rows {
	struct hp_row *row;
	size_t n, cap;
	/* Why some names are module+0xoffset (hp_symbols_next_problem), each
	 * once, for the tool to print as warnings. */
	char **problem;
	size_t nproblems;
};

enum hp_sort { HP_SORT_SELF, HP_SORT_TOTAL, HP_SORT_CALLS, HP_SORT_AVG, HP_SORT_MAX, HP_SORT_NAME };

/* Names every function of a with hp_symbols and adds its row; 0 or -1. */
int hp_rows_add(struct hp_rows *rows, const struct hp_analysis *a, char *err, size_t errlen);
/* Merges rows of the same function and module, then sorts them. */
void hp_rows_finish(struct hp_rows *rows, enum hp_sort key);
/* limit 0: every row. Return 0, or -1 if the output could not be written. */
int hp_rows_print_table(FILE *out, const struct hp_rows *rows, size_t limit);
int hp_rows_print_csv(FILE *out, const struct hp_rows *rows, size_t limit);
void hp_rows_free(struct hp_rows *rows);

/* "12.3 ms": four significant digits and a unit, for tables. */
void hp_format_ns(double ns, char *buf, size_t len);
/* Writes s as one RFC 4180 CSV field. */
void hp_csv_field(FILE *out, const char *s);

#endif
