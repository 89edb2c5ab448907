/*
 * hp_report.h - the flat profile as rows of named functions, merged across
 * traces by function and module, printed as a table or as CSV.
 */
#ifndef HP_REPORT_H
#define HP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hp_analyze.h"
#include "hp_symbols.h"

/*
 * A function is its name, its module and its source file (or, without one,
 * its offset in the module's file): two static functions of one name in two
 * files are two rows, and the same function merges across traces wherever
 * a PIE was loaded. Rows that would print alike get a label that tells them
 * apart: "helper (a.c)", "helper (b.c)".
 */
struct hp_row {
	char *name;
	char *module;
	uint64_t calls;
	double total, self, min, max; /* ns */
	char *file;      /* source file, or NULL */
	int line;        /* of the function's start in file; 0 unknown */
	uint64_t offset; /* address in the module's file */
	char *label;     /* what to print for name, when it is not the name */
	uint32_t id;     /* the hp_fntab id it was made from (hp_rows_push) */
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

/* A new row of like's function (name, module, file, line, offset; no
 * figures, no label); NULL out of memory. */
struct hp_row *hp_rows_push(struct hp_rows *rows, const struct hp_row *like);
/* Merges rows of the same function (name, module, file or offset), labels
 * rows of one name and module that remain apart, then sorts them. */
/* 0, or -1 if out of memory for the labels (rows are still merged and sorted). */
int hp_rows_finish(struct hp_rows *rows, enum hp_sort key);
/* Labels the rows that print the same name (and module, with_module), in
 * place, without merging or moving them. 0, or -1 out of memory. */
int hp_rows_label(struct hp_rows *rows, int with_module);
/* The name to print for a row. */
static inline const char *hp_row_name(const struct hp_row *r) { return r->label ? r->label : r->name; }
/*
 * One row per function id of a (calls and times included), in id order,
 * labelled so that functions of one name print differently (by source file,
 * else path, else module, else module+0xoffset) even in different modules:
 * the names of a view that shows no module, such as dump. 0 or -1.
 */
int hp_rows_of_functions(struct hp_rows *rows, const struct hp_analysis *a, struct hp_symbols *sym);
/* Adds why to the problems, unless it is there already. 0 or -1. */
int hp_rows_add_problem(struct hp_rows *rows, const char *why);
/* More columns a view adds to the table (before the function's name) or
 * to the CSV (after source): head once, cells per row. */
struct hp_rows_extra {
	void (*head)(void *arg, FILE *out, int csv);
	void (*cells)(void *arg, FILE *out, const struct hp_row *r, int csv);
	void *arg;
};
/* limit 0: every row. The CSV ends with `source`, the function's
 * file:line where known. Return 0, or -1 if the output could not be
 * written. extra may be NULL. */
int hp_rows_print_table(FILE *out, const struct hp_rows *rows, size_t limit);
int hp_rows_print_csv(FILE *out, const struct hp_rows *rows, size_t limit);
int hp_rows_print_table_with(FILE *out, const struct hp_rows *rows, size_t limit,
			     const struct hp_rows_extra *extra);
int hp_rows_print_csv_with(FILE *out, const struct hp_rows *rows, size_t limit,
			   const struct hp_rows_extra *extra);
void hp_rows_free(struct hp_rows *rows);

/* "12.3 ms": four significant digits and a unit, for tables. */
void hp_format_ns(double ns, char *buf, size_t len);
/* Writes s as one RFC 4180 CSV field. */
void hp_csv_field(FILE *out, const char *s);

#endif
