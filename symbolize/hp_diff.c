/*
 * hp_diff.c - `hookprof diff OLD NEW`. Each side is a trace or a directory
 * of traces (repeated runs); each is read by the driver with the flat
 * profile's figures (hp_flat.h) kept per run, so the same filters apply and
 * the counts are report's. Per function: the mean per run of calls, self
 * and total time on each side and their change, sorted by the largest
 * change of self time. With several runs on a side, the spread of self
 * time across its runs (min..max, standard deviation), and a change is
 * marked as within the noise when the runs of the two sides overlap.
 */
#define _GNU_SOURCE
#include "hp_diff.h"
#include "hp_path.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_cli.h"
#include "hp_drive.h"
#include "hp_flat.h"
#include "hp_viewcmd.h"

#define ERRLEN 1024

static const char usage_text[] =
	"usage: hookprof diff [options] OLD NEW\n"
	"  compares two flat profiles: OLD and NEW are each a trace, or a directory of\n"
	"  traces of repeated runs. Per function the mean per run of calls, self and\n"
	"  total time on each side and the change, largest change of self time first.\n"
	"  With several runs on a side: the spread of self time across them (min..max)\n"
	"  and '~' where the change is within the noise (the two sides' runs overlap).\n"
	"  --format=table|csv    (default table); CSV columns: function,old_calls,new_calls,\n"
	"                        old_self_ns,new_self_ns,delta_self_ns,old_total_ns,new_total_ns,\n"
	"                        delta_total_ns,old_runs,new_runs,old_self_min_ns,old_self_max_ns,\n"
	"                        old_self_sd_ns,new_self_min_ns,new_self_max_ns,new_self_sd_ns,noise\n"
	"  --limit=N             the first N functions only\n"
	"  --partial             read traces with no end record, or cut short\n";

/* A function on one side: its figures in each run. */
struct dfn {
	char *name;
	double *calls, *self, *total; /* by run */
};

struct side {
	const char *arg;    /* as the user gave it */
	char *program;      /* the first trace's */
	uint32_t runs;
	struct dfn *fn;
	size_t nfn;
};

/* ---- reading a side: the flat figures per run --------------------------- */

struct collect {
	struct hp_flat fl;
	struct side *s;
};

/* The driver counts each call in the figures of its run. */
static int open_collect(struct hp_view *v, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	struct collect *c = v->state;
	v->flat = &c->fl;
	v->flat_per = HP_PER_RUN;
	return 0;
}

static int trace_done_collect(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct collect *c = v->state;
	if (!c->s->program) {
		if (!(c->s->program = strdup(hp_path_base(a->info.exe)))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	c->s->runs++;
	return 0;
}

static int keep_function(struct side *s, const struct hp_flat *fl, const char *name, uint32_t fn)
{
	struct dfn *d = &s->fn[s->nfn];
	memset(d, 0, sizeof(*d));
	size_t n = s->runs ? s->runs : 1;
	if (!(d->name = strdup(name)) || !(d->calls = calloc(n, sizeof(double))) ||
	    !(d->self = calloc(n, sizeof(double))) || !(d->total = calloc(n, sizeof(double)))) {
		free(d->name), free(d->calls), free(d->self);
		return -1;
	}
	for (uint32_t r = 0; r < s->runs; r++) {
		struct hp_fstats st = hp_flat_get(fl, r, fn);
		d->calls[r] = (double)st.calls;
		d->self[r] = st.self;
		d->total[r] = st.total;
	}
	s->nfn++;
	return 0;
}

/* The functions with calls, by the name they print as (labelled apart by
 * source file where two share a name): two builds of a program, whose
 * modules differ, meet by name. */
static int end_collect(struct hp_view *v, char *err, size_t errlen)
{
	struct collect *c = v->state;
	const struct hp_fntab *fns = hp_drive_fns(v->d);
	struct side *s = c->s;
	if (!(s->fn = calloc(fns->rows.n + 1, sizeof(*s->fn))))
		goto oom;
	for (uint32_t fn = 0; fn < fns->rows.n; fn++) {
		int called = 0;
		for (uint32_t r = 0; r < c->fl.ng && !called; r++)
			called = hp_flat_get(&c->fl, r, fn).calls != 0;
		if (called && keep_function(s, &c->fl, hp_fntab_name(fns, fn), fn))
			goto oom;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void close_collect(struct hp_view *v)
{
	struct collect *c = v->state;
	hp_flat_free(&c->fl);
}

static const struct hp_view_ops collect_ops = {
	.name = "diff",
	.summary = "the flat figures of each run, for diff",
	.flags = HP_VIEW_NO_TIMES,
	.open = open_collect,
	.trace_done = trace_done_collect,
	.end = end_collect,
	.close = close_collect,
};

static void warn_line(const char *line)
{
	fprintf(stderr, "hookprof: warning: %s\n", line);
}

static int read_side(struct side *s, struct hp_drive_opts *o, char *err, size_t errlen)
{
	struct hp_cli_names traces = { 0 };
	char *arg = (char *)s->arg;
	if (hp_cli_expand_dirs(&arg, 1, &traces, err, errlen)) {
		hp_cli_names_free(&traces);
		return -1;
	}
	if (!traces.n) {
		snprintf(err, errlen, "%s: no trace in this directory", s->arg);
		hp_cli_names_free(&traces);
		return -1;
	}
	struct collect c = { .s = s };
	struct hp_view_opts vo = { .format = "table" };
	struct hp_view v = { .ops = &collect_ops, .opts = &vo, .state = &c, .out = stdout };
	int rc = hp_drive(traces.v, (int)traces.n, o, &v, err, errlen);
	hp_cli_names_free(&traces);
	return rc;
}

static void free_side(struct side *s)
{
	for (size_t i = 0; i < s->nfn; i++) {
		free(s->fn[i].name);
		free(s->fn[i].calls);
		free(s->fn[i].self);
		free(s->fn[i].total);
	}
	free(s->fn);
	free(s->program);
}

/* ---- the comparison ------------------------------------------------------ */

/* A side's figures of one function, over its runs. */
struct figures {
	double calls, self, total; /* means per run */
	double self_min, self_max, self_sd;
};

static struct figures figures_of(const struct side *s, const struct dfn *d)
{
	struct figures f = { 0 };
	if (!d || !s->runs)
		return f;
	double n = s->runs;
	f.self_min = d->self[0];
	f.self_max = d->self[0];
	for (uint32_t r = 0; r < s->runs; r++) {
		f.calls += d->calls[r] / n;
		f.self += d->self[r] / n;
		f.total += d->total[r] / n;
		f.self_min = fmin(f.self_min, d->self[r]);
		f.self_max = fmax(f.self_max, d->self[r]);
	}
	double var = 0;
	for (uint32_t r = 0; r < s->runs; r++)
		var += (d->self[r] - f.self) * (d->self[r] - f.self);
	f.self_sd = s->runs > 1 ? sqrt(var / (n - 1)) : 0;
	return f;
}

struct drow {
	const char *name;
	struct figures o, n;
	double delta_self;
};

static int by_change(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;
	double ka = fabs(a->delta_self), kb = fabs(b->delta_self);
	if (ka != kb)
		return ka < kb ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct dfn *)x)->name, ((const struct dfn *)y)->name);
}

/* Both sides' functions, joined by name. */
static struct drow *join(struct side *o, struct side *n, size_t *nrows)
{
	struct drow *rows = calloc(o->nfn + n->nfn + 1, sizeof(*rows));
	if (!rows)
		return NULL;
	qsort(o->fn, o->nfn, sizeof(*o->fn), by_name);
	qsort(n->fn, n->nfn, sizeof(*n->fn), by_name);
	size_t i = 0, j = 0, k = 0;
	while (i < o->nfn || j < n->nfn) {
		int c = i == o->nfn ? 1 : j == n->nfn ? -1 : strcmp(o->fn[i].name, n->fn[j].name);
		const struct dfn *a = c <= 0 ? &o->fn[i++] : NULL;
		const struct dfn *b = c >= 0 ? &n->fn[j++] : NULL;
		struct drow *r = &rows[k++];
		r->name = a ? a->name : b->name;
		r->o = figures_of(o, a);
		r->n = figures_of(n, b);
		r->delta_self = r->n.self - r->o.self;
	}
	qsort(rows, k, sizeof(*rows), by_change);
	*nrows = k;
	return rows;
}

/* "yes": the runs of the two sides overlap (their self times' min..max),
 * so the change may be noise; "no": they do not; "": one run a side, no
 * spread to judge by. */
static const char *noise_of(const struct side *o, const struct side *n, const struct drow *r)
{
	if (o->runs < 2 && n->runs < 2)
		return "";
	return r->o.self_min <= r->n.self_max && r->n.self_min <= r->o.self_max ? "yes" : "no";
}

static unsigned long long ns_int(double ns) { return (unsigned long long)(fabs(ns) + 0.5); }

static void print_count(FILE *out, double calls)
{
	if (calls == floor(calls))
		fprintf(out, "%.0f", calls);
	else
		fprintf(out, "%.2f", calls);
}

static void print_signed_ns(FILE *out, double ns)
{
	fprintf(out, "%s%llu", ns < -0.5 ? "-" : "", ns_int(ns));
}

static void print_csv(FILE *out, const struct side *o, const struct side *n, const struct drow *rows,
		      size_t nrows, unsigned long limit)
{
	fputs("function,old_calls,new_calls,old_self_ns,new_self_ns,delta_self_ns,old_total_ns,"
	      "new_total_ns,delta_total_ns,old_runs,new_runs,old_self_min_ns,old_self_max_ns,"
	      "old_self_sd_ns,new_self_min_ns,new_self_max_ns,new_self_sd_ns,noise\r\n", out);
	for (size_t i = 0; i < nrows && (!limit || i < limit); i++) {
		const struct drow *r = &rows[i];
		hp_csv_field(out, r->name);
		fputc(',', out);
		print_count(out, r->o.calls);
		fputc(',', out);
		print_count(out, r->n.calls);
		fprintf(out, ",%llu,%llu,", ns_int(r->o.self), ns_int(r->n.self));
		print_signed_ns(out, r->delta_self);
		fprintf(out, ",%llu,%llu,", ns_int(r->o.total), ns_int(r->n.total));
		print_signed_ns(out, r->n.total - r->o.total);
		fprintf(out, ",%u,%u,%llu,%llu,%llu,%llu,%llu,%llu,%s\r\n", o->runs, n->runs,
			ns_int(r->o.self_min), ns_int(r->o.self_max), ns_int(r->o.self_sd),
			ns_int(r->n.self_min), ns_int(r->n.self_max), ns_int(r->n.self_sd),
			noise_of(o, n, r));
	}
}

static void signed_time(double ns, char *buf, size_t len)
{
	char t[32];
	hp_format_ns(fabs(ns), t, sizeof(t));
	snprintf(buf, len, "%s%s", ns < 0 ? "-" : ns > 0 ? "+" : "", t);
}

static void spread(const struct figures *f, uint32_t runs, char *buf, size_t len)
{
	char a[24], b[24];
	if (runs < 2) {
		snprintf(buf, len, "-");
		return;
	}
	hp_format_ns(f->self_min, a, sizeof(a));
	hp_format_ns(f->self_max, b, sizeof(b));
	snprintf(buf, len, "%s..%s", a, b);
}

static void print_count_cell(FILE *out, double calls)
{
	if (calls == floor(calls))
		fprintf(out, "%12.0f ", calls);
	else
		fprintf(out, "%12.2f ", calls);
}

static void print_table(FILE *out, const struct side *o, const struct side *n, const struct drow *rows,
			size_t nrows, unsigned long limit)
{
	fprintf(out, "# old: %s, %u run%s of %s\n# new: %s, %u run%s of %s\n", o->arg, o->runs,
		o->runs == 1 ? "" : "s", o->program ? o->program : "?", n->arg, n->runs,
		n->runs == 1 ? "" : "s", n->program ? n->program : "?");
	fprintf(out, "# means per run; self spread: min..max of a side's runs; ~ marks a change within "
		     "the noise (the two sides' runs overlap)\n");
	fprintf(out, "%12s %12s %12s %12s %13s %13s %23s %23s  %s\n", "old calls", "new calls", "old self",
		"new self", "delta self", "delta total", "old self spread", "new self spread", "function");
	for (size_t i = 0; i < nrows && (!limit || i < limit); i++) {
		const struct drow *r = &rows[i];
		char t[6][64];
		hp_format_ns(r->o.self, t[0], sizeof(t[0]));
		hp_format_ns(r->n.self, t[1], sizeof(t[1]));
		signed_time(r->delta_self, t[2], sizeof(t[2]));
		signed_time(r->n.total - r->o.total, t[3], sizeof(t[3]));
		spread(&r->o, o->runs, t[4], sizeof(t[4]));
		spread(&r->n, n->runs, t[5], sizeof(t[5]));
		print_count_cell(out, r->o.calls);
		print_count_cell(out, r->n.calls);
		fprintf(out, "%12s %12s %12s%s %13s %23s %23s  %s\n", t[0], t[1], t[2],
			!strcmp(noise_of(o, n, r), "yes") ? "~" : " ", t[3], t[4], t[5], r->name);
	}
}

/* ---- the command ---------------------------------------------------------- */

struct diffopts {
	int csv;
	unsigned long limit;
	struct hp_drive_opts d;
};

static int parse(int argc, char **argv, struct diffopts *o)
{
	static const struct option own[] = {
		{ "format", required_argument, NULL, 'f' }, { "limit", required_argument, NULL, 'l' },
		{ "partial", no_argument, NULL, 'p' },      { "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct option opts[16];
	char err[ERRLEN];
	int c, index;
	hp_viewcmd_options(own, opts, sizeof(opts) / sizeof(opts[0]));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, &index)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "csv") && strcmp(optarg, "table"))
				return hp_cli_usage_error("diff: --format must be table or csv, not '%s'", optarg);
			o->csv = !strcmp(optarg, "csv");
			break;
		case 'l':
			if (hp_cli_parse_limit(optarg, &o->limit))
				return hp_cli_usage_error("--limit must be a number, not '%s'", optarg);
			break;
		case 'p': o->d.analyze_flags = HP_ANALYZE_ALLOW_PARTIAL; break;
		case HP_FILTER_OPT:
			if (hp_filter_set(&o->d.filter, opts[index].name, optarg, err, sizeof(err)))
				return hp_cli_usage_error("%s", err);
			break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(hp_viewcmd_filter_help, stdout);
			return -1;
		default: return hp_cli_usage_error("%s", "bad option for diff");
		}
	}
	if (argc - optind != 2)
		return hp_cli_usage_error("%s", "diff takes two operands: OLD and NEW (a trace or a directory each)");
	return 0;
}

static int compare(struct diffopts *o, const char *old_arg, const char *new_arg)
{
	char err[ERRLEN] = "";
	struct side s[2] = { { .arg = old_arg }, { .arg = new_arg } };
	o->d.warn = warn_line;
	int rc = read_side(&s[0], &o->d, err, sizeof(err));
	if (!rc)
		rc = read_side(&s[1], &o->d, err, sizeof(err));
	size_t nrows = 0;
	struct drow *rows = rc ? NULL : join(&s[0], &s[1], &nrows);
	if (!rc && !rows)
		rc = -1, snprintf(err, sizeof(err), "out of memory");
	if (!rc) {
		if (o->csv)
			print_csv(stdout, &s[0], &s[1], rows, nrows, o->limit);
		else
			print_table(stdout, &s[0], &s[1], rows, nrows, o->limit);
		if (fflush(stdout) || ferror(stdout))
			rc = -1, snprintf(err, sizeof(err), "cannot write to standard output");
	}
	free(rows);
	free_side(&s[0]);
	free_side(&s[1]);
	return rc ? hp_cli_print_error(err) : 0;
}

int hp_diff_run(int argc, char **argv)
{
	struct diffopts o = { 0 };
	int rc = parse(argc, argv, &o);
	if (!rc)
		rc = compare(&o, argv[optind], argv[optind + 1]);
	hp_filter_free(&o.d.filter);
	return rc < 0 ? 0 : rc;
}
