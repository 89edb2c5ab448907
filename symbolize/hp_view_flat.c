/*
 * hp_view_flat.c - the flat profile, `hookprof report`: per function calls,
 * total (outermost activations only), self, avg, min and max, as a table
 * under the header lines of each trace, or as CSV. --per-process gives a
 * section per trace, ordered as the process tree; --per-run adds the calls
 * and self time of each trace as columns; --per-thread a section per thread.
 *
 * Every part of the output waits for the end: a trace that cannot be read
 * leaves nothing half printed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_cli.h"
#include "hp_drive.h"
#include "hp_flat.h"
#include "hp_procs.h"

/* What a trace contributes besides its calls. */
struct ftrace {
	char *text;        /* header lines (and, per process, the title first) */
	size_t len;
	char *note;        /* lines under the table: the run's filters, or NULL */
	char *path;
	struct hp_proc proc;
};

struct flat {
	struct hp_flat fl;
	struct ftrace *tr;
	uint32_t ntr, cap;
	size_t threads;    /* the most seen in one trace */
	int csv;
};

static int open_flat(struct hp_view *v, char *err, size_t errlen)
{
	struct flat *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	f->csv = !strcmp(v->opts->format, "csv");
	v->state = f;
	v->flat = &f->fl; /* the driver counts each call there */
	v->flat_per = v->opts->per;
	return 0;
}

/* ---- the header lines of a trace ---------------------------------------- */

static size_t threads_of(const struct hp_trace_info *in)
{
	size_t threads = 0;
	for (size_t i = 0; i < in->nstreams; i++)
		threads += in->streams[i].seen;
	return threads;
}

/* What the times shown leave out, so that nobody takes them for raw. */
static void print_taken_out(FILE *out, const struct hp_drive *d)
{
	struct hp_taken_out t;
	hp_drive_taken_out(d, &t);
	char how[96] = "measured in the run";
	if (t.per_call_ns < t.calibrated_ns)
		snprintf(how, sizeof(how), "%.1f calibrated in the run, less in its event spacing",
			 t.calibrated_ns);
	if (t.per_call_ns > 0)
		fprintf(out, "# times less hookprof's own: %.1f ns per call (%s), "
			"%.3f ms of buffer switches (--raw: as measured)\n", t.per_call_ns, how, t.own_ns / 1e6);
	else if (t.own_ns > 0)
		fprintf(out, "# times less hookprof's buffer switches (%.3f ms); its hooks' cost was "
			"not measured in this run and is in them (--raw: as measured)\n", t.own_ns / 1e6);
	/* A high share also says the instrumented code differs from the plain
	 * build's in ways no correction undoes (docs/performance.md). */
	if (t.measured_ns > 0 && t.shown_ns < t.measured_ns)
		fprintf(out, "# hookprof's share of the time measured: %.0f%%, taken out; the higher it is, "
			"the more the instrumented program differs from the plain one\n",
			100 * (1 - t.shown_ns / t.measured_ns));
}

/* Durations shorter than the clock's step read as 0: a 0 ns minimum is
 * the clock's, not the program's. */
static void print_resolution(FILE *out, const struct hp_analysis *a)
{
	if (a->info.clock_step)
		fprintf(out, "# the clock's step: %.1f ns (a call shorter than that can read 0 ns)\n",
			a->info.clock_step * a->tb.ns_per_tick);
}

static void print_header(FILE *out, const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	size_t threads = threads_of(in);
	double secs = hp_analysis_duration_ns(a) / 1e9;
	uint64_t lost = in->lost_global + hp_trace_lost_in_threads(in);
	fprintf(out, "# %s (pid %u): %zu thread%s, %llu events, %llu lost, %.3f s%s\n",
		in->exe ? in->exe : "?", in->pid, threads, threads == 1 ? "" : "s",
		(unsigned long long)a->events, (unsigned long long)lost, secs,
		a->partial ? ", incomplete (no end record)" : "");
	if (lost)
		fprintf(out, "# %llu events were not recorded: times of the functions around them are "
			     "approximate (hookprof info says why)\n",
			(unsigned long long)lost);
}

/* The filters of the run (FILTER record): the counts are of what was
 * recorded, and MIN says what it left out. NULL if none. */
static char *filter_note(const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	char text[8192];
	hp_trace_filters_text(in, text, sizeof(text));
	if (!*text)
		return NULL;
	char *note = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&note, &len);
	if (!out)
		return NULL;
	fprintf(out, "# recorded with filters (%s): the counts are of the calls recorded, "
		     "not of the whole program\n", text);
	if (in->filter_min_ns) {
		char t[32];
		hp_format_ns(hp_ticks_to_ns(&a->tb, in->filter_min_ticks), t, sizeof(t));
		fprintf(out, "# min left out %llu calls shorter than %llu ns with no callee (%s in all)\n",
			(unsigned long long)in->filter_min_calls, (unsigned long long)in->filter_min_ns, t);
	}
	if (fclose(out)) {
		free(note);
		return NULL;
	}
	return note;
}

static void print_notes(const struct hp_view *v, uint32_t from, uint32_t to)
{
	const struct flat *f = v->state;
	for (uint32_t i = from; i < to && !f->csv; i++)
		if (f->tr[i].note)
			fputs(f->tr[i].note, v->out);
}

static int print_crash(FILE *out, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct hp_symbols *sym = hp_symbols_for_trace(a->path, a->info.modules, a->info.nmodules, err, errlen);
	if (!sym)
		return -1;
	hp_cli_print_crash(out, "# ", sym, a);
	hp_symbols_free(sym);
	return 0;
}

static void section_title(FILE *out, const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	fprintf(out, "## process %u, parent %u: %s", in->pid, in->has_parent ? in->parent_pid : 0,
		in->exe ? in->exe : "?");
	for (uint32_t i = 1; i < in->argc; i++)
		fprintf(out, " %s", in->argv[i]);
	fprintf(out, " (%s)\n", a->path);
}

static struct ftrace *new_trace(struct flat *f)
{
	if (f->ntr == f->cap) {
		uint32_t cap = f->cap ? f->cap * 2 : 8;
		struct ftrace *t = realloc(f->tr, cap * sizeof(*t));
		if (!t)
			return NULL;
		f->tr = t;
		f->cap = cap;
	}
	return memset(&f->tr[f->ntr++], 0, sizeof(struct ftrace));
}

static int trace_done_flat(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct flat *f = v->state;
	struct ftrace *t = new_trace(f);
	FILE *out = t ? open_memstream(&t->text, &t->len) : NULL;
	if (!out || !(t->path = strdup(a->path))) {
		if (out)
			fclose(out);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const struct hp_trace_info *in = &a->info;
	t->proc = (struct hp_proc){ in->pid, in->has_parent ? in->parent_pid : 0, in->start_realtime_ns };
	t->note = filter_note(a);
	if (threads_of(in) > f->threads)
		f->threads = threads_of(in);
	int rc = 0;
	if (v->opts->per == HP_PER_PROCESS)
		section_title(out, a);
	if (!f->csv) {
		print_header(out, a);
		print_taken_out(out, v->d);
		print_resolution(out, a);
	}
	if (!f->csv && v->opts->per == HP_PER_RUN)
		fprintf(out, "# run %u: %s\n", f->ntr, a->path);
	if (!f->csv && v->opts->per != HP_PER_PROCESS && in->crash.present)
		rc = print_crash(out, a, err, errlen);
	if (fclose(out) && !rc) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	return rc;
}

/* ---- the output ----------------------------------------------------------- */

struct runs {
	const struct flat *f;
};

static void runs_head(void *arg, FILE *out, int csv)
{
	const struct runs *r = arg;
	for (uint32_t i = 1; i <= r->f->ntr; i++) {
		if (csv) {
			fprintf(out, ",calls_%u,self_ns_%u", i, i);
		} else {
			char c[16], s[16];
			snprintf(c, sizeof(c), "calls#%u", i);
			snprintf(s, sizeof(s), "self#%u", i);
			fprintf(out, "%12s %12s ", c, s);
		}
	}
	if (!csv && r->f->ntr)
		fputc(' ', out);
}

static void runs_cells(void *arg, FILE *out, const struct hp_row *row, int csv)
{
	const struct runs *r = arg;
	for (uint32_t i = 0; i < r->f->ntr; i++) {
		struct hp_fstats s = hp_flat_get(&r->f->fl, i, row->id);
		if (csv) {
			fprintf(out, ",%llu,%llu", (unsigned long long)s.calls,
				(unsigned long long)(s.self + 0.5));
		} else {
			char t[32];
			hp_format_ns(s.self, t, sizeof(t));
			fprintf(out, "%12llu %12s ", (unsigned long long)s.calls, t);
		}
	}
	if (!csv && r->f->ntr)
		fputc(' ', out);
}

/* The rows of groups [from, to), sorted, printed. */
static int print_rows(struct hp_view *v, uint32_t from, uint32_t to, const struct hp_rows_extra *x)
{
	struct flat *f = v->state;
	struct hp_rows rows = { 0 };
	int rc = hp_flat_rows(&f->fl, hp_drive_fns(v->d), from, to, &rows);
	if (!rc)
		rc = hp_rows_finish(&rows, (enum hp_sort)v->opts->sort);
	if (!rc)
		rc = f->csv ? hp_rows_print_csv_with(v->out, &rows, v->opts->limit, x)
			    : hp_rows_print_table_with(v->out, &rows, v->opts->limit, x);
	hp_rows_free(&rows);
	return rc;
}

static int print_merged(struct hp_view *v)
{
	struct flat *f = v->state;
	for (uint32_t i = 0; i < f->ntr; i++)
		fwrite(f->tr[i].text, 1, f->tr[i].len, v->out);
	if (!f->csv && f->threads > 1 && v->opts->per != HP_PER_THREAD)
		fprintf(v->out, "# times are wall-clock, summed over threads (a function busy in 4 threads "
				"for 1 s shows 4 s); --per-thread shows each thread\n");
	int rc;
	if (v->opts->per == HP_PER_RUN) {
		struct runs r = { f };
		struct hp_rows_extra x = { runs_head, runs_cells, &r };
		rc = print_rows(v, 0, f->ntr, &x);
	} else {
		rc = print_rows(v, 0, f->fl.ng, NULL);
	}
	print_notes(v, 0, f->ntr);
	return rc;
}

/* Threads by trace, each process's main thread first, then in order of
 * their first event. */
static int by_trace_main_first(const void *x, const void *y)
{
	const struct hp_vthread *a = *(struct hp_vthread *const *)x, *b = *(struct hp_vthread *const *)y;
	if (a->trace != b->trace)
		return a->trace < b->trace ? -1 : 1;
	int am = a->tid == a->pid, bm = b->tid == b->pid;
	if (am != bm)
		return am ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int has_calls(const struct hp_flat *fl, uint32_t group)
{
	for (size_t fn = 0; group < fl->ng && fn < fl->g[group].nf; fn++)
		if (fl->g[group].f[fn].calls)
			return 1;
	return 0;
}

static int print_per_thread(struct hp_view *v)
{
	struct flat *f = v->state;
	uint32_t n = hp_drive_nthreads(v->d);
	struct hp_vthread **order = calloc(n + 1, sizeof(*order));
	if (!order)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		order[i] = hp_drive_thread(v->d, i);
	qsort(order, n, sizeof(*order), by_trace_main_first);
	for (uint32_t i = 0; i < f->ntr; i++)
		fwrite(f->tr[i].text, 1, f->tr[i].len, v->out);
	int rc = 0;
	for (uint32_t i = 0; i < n && !rc; i++) {
		const struct hp_vthread *t = order[i];
		if (!has_calls(&f->fl, t->id))
			continue;
		fprintf(v->out, "## thread %u%s%s, process %u %s (%s)\n", t->tid, *t->name ? " " : "",
			t->name, t->pid, t->process, t->trace < f->ntr ? f->tr[t->trace].path : "?");
		rc = print_rows(v, t->id, t->id + 1, NULL);
		fputc('\n', v->out);
	}
	print_notes(v, 0, f->ntr);
	free(order);
	return rc;
}

/* Each trace's title again, indented as deep as its process is in the tree. */
static int print_per_process(struct hp_view *v)
{
	struct flat *f = v->state;
	struct hp_proc *procs = calloc(f->ntr + 1, sizeof(*procs));
	size_t *order = calloc(f->ntr + 1, sizeof(*order));
	unsigned *depth = calloc(f->ntr + 1, sizeof(*depth));
	int rc = procs && order && depth ? 0 : -1;
	for (uint32_t i = 0; i < f->ntr && !rc; i++)
		procs[i] = f->tr[i].proc;
	if (!rc)
		rc = hp_procs_order(procs, f->ntr, order, depth);
	for (uint32_t i = 0; i < f->ntr && !rc; i++) {
		const struct ftrace *t = &f->tr[order[i]];
		const char *nl = memchr(t->text, '\n', t->len);
		const char *title_end = nl ? nl + 1 : t->text + t->len;
		fprintf(v->out, "## %*s%.*s", (int)depth[i] * 2, "", (int)(title_end - t->text - 3),
			t->text + 3);
		fwrite(title_end, 1, t->len - (size_t)(title_end - t->text), v->out);
		rc = print_rows(v, (uint32_t)order[i], (uint32_t)order[i] + 1, NULL);
		print_notes(v, (uint32_t)order[i], (uint32_t)order[i] + 1);
		fputc('\n', v->out);
	}
	free(procs), free(order), free(depth);
	return rc;
}

static int end_flat(struct hp_view *v, char *err, size_t errlen)
{
	int rc;
	switch (v->opts->per) {
	case HP_PER_PROCESS: rc = print_per_process(v); break;
	case HP_PER_THREAD: rc = print_per_thread(v); break;
	default: rc = print_merged(v);
	}
	if (rc || ferror(v->out)) {
		snprintf(err, errlen, "out of memory, or the report could not be written");
		return -1;
	}
	return 0;
}

static void close_flat(struct hp_view *v)
{
	struct flat *f = v->state;
	if (!f)
		return;
	hp_flat_free(&f->fl);
	for (uint32_t i = 0; i < f->ntr; i++) {
		free(f->tr[i].text);
		free(f->tr[i].note);
		free(f->tr[i].path);
	}
	free(f->tr);
	free(f);
	v->state = NULL;
}

const struct hp_view_ops hp_view_flat = {
	.name = "report",
	.summary = "the flat profile: calls, total, self, avg, min and max per function",
	.formats = "table|csv",
	.flags = HP_VIEW_OWN_COMMAND | HP_VIEW_NO_TIMES,
	.open = open_flat,
	.trace_done = trace_done_flat,
	.end = end_flat,
	.close = close_flat,
};
