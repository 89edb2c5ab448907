/*
 * hp_report.c - flat profile rows, table and CSV.
 */
#define _GNU_SOURCE
#include "hp_report.h"
#include "hp_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "hp_regions.h"
#include "hp_symbols.h"

static struct hp_row *new_row(struct hp_rows *rows)
{
	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? rows->cap * 2 : 256;
		struct hp_row *r = realloc(rows->row, cap * sizeof(*r));
		if (!r)
			return NULL;
		rows->row = r;
		rows->cap = cap;
	}
	return memset(&rows->row[rows->n++], 0, sizeof(struct hp_row));
}

static int add_function_stat(struct hp_rows *rows, const struct hp_analysis *a,
			     struct hp_symbols *sym, uint32_t func, const struct hp_fstat *f)
{
	struct hp_symbol s;
	char region[HP_STRING_BYTES + 3];
	uint32_t module = a->func_module ? a->func_module[func] : HP_SYMBOLS_ANY_MODULE;
	if (!hp_region_symbol(a, func, &s, region, sizeof(region)))
		hp_symbols_lookup_in(sym, module, a->funcs.addr[func], &s);
	struct hp_row *r = new_row(rows);
	if (!r || !(r->name = strdup(s.name)) || !(r->module = strdup(s.module)) ||
	    (s.file && !(r->file = strdup(s.file))))
		return -1;
	r->offset = s.offset;
	r->line = s.line;
	r->calls = f->calls;
	r->total = hp_ticks_to_ns(&a->tb, f->total);
	r->self = hp_ticks_to_ns(&a->tb, f->self);
	r->min = hp_ticks_to_ns(&a->tb, f->min);
	r->max = hp_ticks_to_ns(&a->tb, f->max);
	return 0;
}

struct hp_row *hp_rows_push(struct hp_rows *rows, const struct hp_row *like)
{
	struct hp_row *r = new_row(rows);
	if (!r)
		return NULL;
	if (!(r->name = strdup(like->name)) || !(r->module = strdup(like->module)) ||
	    (like->file && !(r->file = strdup(like->file)))) {
		free(r->name);
		free(r->module);
		rows->n--;
		return NULL;
	}
	r->line = like->line;
	r->offset = like->offset;
	return r;
}

/* Several traces may share a module: its problem is told once. */
int hp_rows_add_problem(struct hp_rows *rows, const char *why)
{
	for (size_t i = 0; i < rows->nproblems; i++)
		if (!strcmp(rows->problem[i], why))
			return 0;
	char **more = realloc(rows->problem, (rows->nproblems + 1) * sizeof(*more));
	if (!more)
		return -1;
	rows->problem = more;
	if (!(more[rows->nproblems] = strdup(why)))
		return -1;
	rows->nproblems++;
	return 0;
}

static int by_name_module(const struct hp_row *a, const struct hp_row *b)
{
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->module, b->module);
}

static int by_identity(const void *x, const void *y)
{
	const struct hp_row *a = x, *b = y;
	int c = by_name_module(a, b);
	if (c)
		return c;
	if (a->file && b->file)
		return strcmp(a->file, b->file);
	if (a->file || b->file)
		return a->file ? 1 : -1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static void free_row(struct hp_row *r)
{
	free(r->name);
	free(r->module);
	free(r->file);
	free(r->label);
}

static void merge_into(struct hp_row *to, struct hp_row *from)
{
	to->calls += from->calls;
	to->total += from->total;
	to->self += from->self;
	to->min = from->min < to->min ? from->min : to->min;
	to->max = from->max > to->max ? from->max : to->max;
	free_row(from);
}

/* ---- labels for rows that would print alike ---------------------------- */

enum qualifier { Q_BASENAME, Q_PATH, Q_MODULE, Q_OFFSET, Q_LEVELS };

/* The qualifier of r at a level; NULL: r has none there. */
static char *qualifier(const struct hp_row *r, enum qualifier level)
{
	char *q = NULL;
	switch (level) {
	case Q_BASENAME: return r->file ? strdup(hp_path_base(r->file)) : NULL;
	case Q_PATH: return r->file ? strdup(r->file) : NULL;
	case Q_MODULE: return strdup(r->module);
	default:
		return asprintf(&q, "%s+0x%llx", r->module, (unsigned long long)r->offset) < 0 ? NULL : q;
	}
}

/* 1 if every row of the group has a qualifier at level, all different. */
static int level_tells_apart(struct hp_row **g, size_t n, enum qualifier level)
{
	int apart = 1;
	char **q = calloc(n, sizeof(*q));
	if (!q)
		return 0;
	for (size_t i = 0; i < n && apart; i++) {
		apart = (q[i] = qualifier(g[i], level)) != NULL;
		for (size_t j = 0; j < i && apart; j++)
			apart = strcmp(q[i], q[j]) != 0;
	}
	for (size_t i = 0; i < n; i++)
		free(q[i]);
	free(q);
	return apart;
}

static int label_group(struct hp_row **g, size_t n)
{
	enum qualifier level = Q_BASENAME;
	while (level < Q_OFFSET && !level_tells_apart(g, n, level))
		level++;
	for (size_t i = 0; i < n; i++) {
		char *q = qualifier(g[i], level);
		int bad = !q || asprintf(&g[i]->label, "%s (%s)", g[i]->name, q) < 0;
		free(q);
		if (bad) {
			g[i]->label = NULL;
			return -1;
		}
	}
	return 0;
}

static int by_name_then_identity(const void *x, const void *y)
{
	const struct hp_row *a = *(struct hp_row *const *)x, *b = *(struct hp_row *const *)y;
	int c = strcmp(a->name, b->name);
	return c ? c : by_identity(a, b);
}

static int by_name_module_then_identity(const void *x, const void *y)
{
	return by_identity(*(struct hp_row *const *)x, *(struct hp_row *const *)y);
}

/* Rows that print the same name (and module, with_module) get labels. */
static int label_alike(struct hp_row *row, size_t n, int with_module)
{
	struct hp_row **p = malloc((n ? n : 1) * sizeof(*p));
	if (!p)
		return -1;
	for (size_t i = 0; i < n; i++)
		p[i] = &row[i];
	qsort(p, n, sizeof(*p), with_module ? by_name_module_then_identity : by_name_then_identity);
	int rc = 0;
	for (size_t i = 0, j; i < n && !rc; i = j) {
		for (j = i + 1; j < n; j++)
			if (with_module ? by_name_module(p[i], p[j]) : strcmp(p[i]->name, p[j]->name))
				break;
		if (j - i > 1)
			rc = label_group(p + i, j - i);
	}
	free(p);
	return rc;
}

int hp_rows_label(struct hp_rows *rows, int with_module)
{
	for (size_t i = 0; i < rows->n; i++) {
		free(rows->row[i].label);
		rows->row[i].label = NULL;
	}
	return label_alike(rows->row, rows->n, with_module);
}

int hp_rows_of_functions(struct hp_rows *rows, const struct hp_analysis *a, struct hp_symbols *sym)
{
	static const struct hp_fstat none = { 0 };
	for (uint32_t i = 0; i < a->funcs.n; i++) {
		/* the profile may not have seen the last functions: no calls */
		if (add_function_stat(rows, a, sym, i, i < a->prof.nf ? &a->prof.f[i] : &none))
			return -1;
	}
	return label_alike(rows->row, rows->n, 0);
}

static void merge_same(struct hp_rows *rows)
{
	if (!rows->n)
		return;
	qsort(rows->row, rows->n, sizeof(*rows->row), by_identity);
	size_t out = 0;
	for (size_t i = 1; i < rows->n; i++) {
		if (!by_identity(&rows->row[out], &rows->row[i]))
			merge_into(&rows->row[out], &rows->row[i]);
		else
			rows->row[++out] = rows->row[i];
	}
	rows->n = out + 1;
}

static enum hp_sort sort_key;

static double avg_of(const struct hp_row *r) { return r->calls ? r->total / (double)r->calls : 0; }

static double key_of(const struct hp_row *r)
{
	switch (sort_key) {
	case HP_SORT_TOTAL: return r->total;
	case HP_SORT_CALLS: return (double)r->calls;
	case HP_SORT_AVG: return avg_of(r);
	case HP_SORT_MAX: return r->max;
	default: return r->self;
	}
}

/* Largest first; ties and HP_SORT_NAME by name, so output is stable. */
static int by_key(const void *x, const void *y)
{
	const struct hp_row *a = x, *b = y;
	if (sort_key != HP_SORT_NAME) {
		double ka = key_of(a), kb = key_of(b);
		if (ka != kb)
			return ka < kb ? 1 : -1;
	}
	return by_identity(a, b);
}

int hp_rows_finish(struct hp_rows *rows, enum hp_sort key)
{
	merge_same(rows);
	int rc = label_alike(rows->row, rows->n, 1);
	sort_key = key;
	if (rows->n)
		qsort(rows->row, rows->n, sizeof(*rows->row), by_key);
	return rc;
}

/* Four significant digits: 3 decimals below 10 of a unit, 2 below 100, 1 above. */
static int decimals_for(double v, int unit)
{
	if (!unit)
		return 0;
	return v >= 100 ? 1 : v >= 10 ? 2 : 3;
}

/* v >= 0 as printf would show it with dec decimals (dec <= 3). */
static double rounded(double v, int dec)
{
	static const double scale[] = { 1, 10, 100, 1000 };
	return (double)(unsigned long long)(v * scale[dec] + 0.5) / scale[dec];
}

void hp_format_ns(double ns, char *buf, size_t len)
{
	static const char *unit[] = { "ns", "us", "ms", "s" };
	int u = 0;
	/* Choose the unit by the value as printed: 999.6 ns is "1.000 us". */
	while (u < 3 && rounded(ns, decimals_for(ns, u)) >= 1000.0) {
		ns /= 1000.0;
		u++;
	}
	int dec = decimals_for(ns, u);
	if (dec > 1 && rounded(ns, dec) >= (dec == 3 ? 10.0 : 100.0))
		dec--; /* 9.9996 is "10.00", not "10.000" */
	snprintf(buf, len, "%.*f %s", dec, ns, unit[u]);
}

int hp_rows_print_table_with(FILE *out, const struct hp_rows *rows, size_t limit,
			     const struct hp_rows_extra *x)
{
	char t[5][32];
	fprintf(out, "%12s %12s %12s %12s %12s %12s  ", "calls", "total", "self", "avg",
		"min", "max");
	if (x)
		x->head(x->arg, out, 0);
	fprintf(out, "%s\n", "function");
	for (size_t i = 0; i < rows->n && (!limit || i < limit); i++) {
		const struct hp_row *r = &rows->row[i];
		hp_format_ns(r->total, t[0], sizeof(t[0]));
		hp_format_ns(r->self, t[1], sizeof(t[1]));
		hp_format_ns(avg_of(r), t[2], sizeof(t[2]));
		hp_format_ns(r->min, t[3], sizeof(t[3]));
		hp_format_ns(r->max, t[4], sizeof(t[4]));
		fprintf(out, "%12llu %12s %12s %12s %12s %12s  ", (unsigned long long)r->calls, t[0],
			t[1], t[2], t[3], t[4]);
		if (x)
			x->cells(x->arg, out, r, 0);
		fputs(hp_row_name(r), out);
		if (strcmp(r->module, "?"))
			fprintf(out, " [%s]", r->module);
		fputc('\n', out);
	}
	return ferror(out) ? -1 : 0;
}

int hp_rows_print_table(FILE *out, const struct hp_rows *rows, size_t limit)
{
	return hp_rows_print_table_with(out, rows, limit, NULL);
}

void hp_csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static unsigned long long ns_int(double ns) { return (unsigned long long)(ns + 0.5); }

int hp_rows_print_csv_with(FILE *out, const struct hp_rows *rows, size_t limit,
			   const struct hp_rows_extra *x)
{
	fputs("function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source", out);
	if (x)
		x->head(x->arg, out, 1);
	fputs("\r\n", out);
	for (size_t i = 0; i < rows->n && (!limit || i < limit); i++) {
		const struct hp_row *r = &rows->row[i];
		hp_csv_field(out, hp_row_name(r));
		fprintf(out, ",%llu,%llu,%llu,%llu,%llu,%llu,", (unsigned long long)r->calls,
			ns_int(r->total), ns_int(r->self), ns_int(avg_of(r)), ns_int(r->min),
			ns_int(r->max));
		hp_csv_field(out, r->module);
		fputc(',', out);
		if (r->file) {
			char *where = NULL;
			if (asprintf(&where, "%s:%d", r->file, r->line) < 0)
				return -1;
			hp_csv_field(out, r->line > 0 ? where : r->file);
			free(where);
		}
		if (x)
			x->cells(x->arg, out, r, 1);
		fputs("\r\n", out);
	}
	return ferror(out) ? -1 : 0;
}

int hp_rows_print_csv(FILE *out, const struct hp_rows *rows, size_t limit)
{
	return hp_rows_print_csv_with(out, rows, limit, NULL);
}

void hp_rows_free(struct hp_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++)
		free_row(&rows->row[i]);
	free(rows->row);
	for (size_t i = 0; i < rows->nproblems; i++)
		free(rows->problem[i]);
	free(rows->problem);
	memset(rows, 0, sizeof(*rows));
}
