/*
 * main.c - the hookprof command: record, report, info, dump.
 * The only place that prints errors; the modules return them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hp_analyze.h"
#include "hp_cli.h"
#include "hp_config.h"
#include "hp_format.h"
#include "hp_procs.h"
#include "hp_report.h"
#include "hp_symbols.h"
#include "hp_view.h"
#include "hp_viewcmd.h"

#define VERSION "0.1.0"
#define ERRLEN 1024

static const char usage_text[] =
	"usage: hookprof <command> [options] [args]\n"
	"\n"
	"Profiles and traces programs built with -finstrument-functions.\n"
	"\n"
	"commands:\n"
	"  record [options] [--] PROGRAM [ARGS...]\n"
	"      run PROGRAM with libhookprof preloaded; the trace is written when it exits\n"
	"      -o, --output=FILE     trace file (default ./PROGRAM-PID.hookprof); replaced if it exists;\n"
	"                            a forked child's trace is FILE.1, FILE.2, ...\n"
	"      -d, --dir=DIR         every process of the tree into DIR (made if missing), each as\n"
	"                            PROGRAM-PID.hookprof; without -o or -d they go to ./\n"
	"      --mode=stream|ring    stream (default): every event; ring: the last --buffer per thread\n"
	"      --buffer=SIZE         per-thread buffer, e.g. 512K, 8M (default 8M; rounded down\n"
	"                            to a power of two; at most 1G)\n"
	"      --clock=tsc|monotonic timestamp source (default tsc, when invariant)\n"
	"  report [options] [TRACE|DIR...]\n"
	"      flat profile: calls, total (inclusive), self, avg, min and max per call;\n"
	"      several traces are merged; a DIR stands for every trace in it (a process\n"
	"      tree from record -d); no TRACE: the newest *.hookprof here\n"
	"      --per-process         one section per process (pid, parent pid, program),\n"
	"                            parents before their children, instead of one merged table\n"
	"      --format=table|csv    (default table)\n"
	"      --sort=self|total|calls|avg|max|name  (default self)\n"
	"      --limit=N             print the first N functions only\n"
	"      --partial             report a trace that has no end record, also one cut in the\n"
	"                            middle of a record (read up to there; stderr says where)\n"
	"      --values              instead: per value name (hookprof_value) count, min, max, mean\n"
	"  info TRACE               what the trace holds: program, clock, threads and their root\n"
	"                           stacks, modules, losses, and the backtrace of a fatal signal\n"
	"  dump [--partial] TRACE   every event: thread, time, enter or exit, function; marks,\n"
	"                           values, pauses, stops and starts of the control API\n"
	"\n"
	"  -h, --help               this text;  --version  the version\n"
	"\n"
	"environment of a traced program: HOOKPROF_OUTPUT (file, %p = pid, %n = program,\n"
	"or a directory), HOOKPROF_MODE, HOOKPROF_BUFFER, HOOKPROF_CLOCK (see record),\n"
	"HOOKPROF_START=off (record nothing until the program calls hookprof_start()).\n"
	"environment of report and dump: HOOKPROF_DEBUG_PATH (where separate debug files\n"
	"and files by build-id are looked for; libdwfl's syntax), DEBUGINFOD_URLS.\n";

/* ---- record ---------------------------------------------------------- */

static int find_library(char *out, size_t len)
{
	const char *env = getenv("HOOKPROF_LIB");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	char self[PATH_MAX];
	ssize_t got = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (got <= 0)
		return -1;
	self[got] = 0;
	*strrchr(self, '/') = 0;
	static const char *const places[] = { "%s/libhookprof.so", "%s/../lib/libhookprof.so" };
	for (size_t i = 0; i < 2; i++) {
		int n = snprintf(out, len, places[i], self);
		if (n > 0 && (size_t)n < len && !access(out, R_OK))
			return 0;
	}
	return -1;
}

struct record_opts {
	const char *output;
	const char *dir;
	const char *mode;
	const char *buffer;
	const char *clock;
};

static int set_record_env(const struct record_opts *o, const char *lib, const char *output)
{
	char preload[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? " " : "", old ? old : "");
	return setenv("LD_PRELOAD", preload, 1) || setenv("HOOKPROF_OUTPUT", output, 1) ||
	       (o->mode && setenv("HOOKPROF_MODE", o->mode, 1)) ||
	       (o->buffer && setenv("HOOKPROF_BUFFER", o->buffer, 1)) ||
	       (o->clock && setenv("HOOKPROF_CLOCK", o->clock, 1));
}

static int check_record_opts(const struct record_opts *o)
{
	if (o->mode && strcmp(o->mode, "stream") && strcmp(o->mode, "ring"))
		return hp_cli_usage_error("--mode must be stream or ring, not '%s'", o->mode);
	if (o->buffer && hp_config_parse_size(o->buffer) < HP_BUFFER_MIN)
		return hp_cli_usage_error("--buffer must be a size of at least 128K, not '%s'", o->buffer);
	if (o->clock && strcmp(o->clock, "tsc") && strcmp(o->clock, "monotonic"))
		return hp_cli_usage_error("--clock must be tsc or monotonic, not '%s'", o->clock);
	return 0;
}

/* Where the traces of the tree go: the directory record lists, and what
 * HOOKPROF_OUTPUT says. -o FILE: the root's is FILE, a forked child's
 * FILE.N beside it (the runtime's numbered names); otherwise DIR (or the
 * working directory) holds PROGRAM-PID.hookprof of each process. */
struct destination {
	char dir[PATH_MAX];
	char output[PATH_MAX];
	const char *shown; /* prefix of the names record prints ("" for ./) */
};

static int destination(const struct record_opts *o, struct destination *d)
{
	if (o->output) {
		snprintf(d->output, sizeof(d->output), "%s", o->output);
		snprintf(d->dir, sizeof(d->dir), "%s", o->output);
		char *slash = strrchr(d->dir, '/');
		if (!slash)
			snprintf(d->dir, sizeof(d->dir), ".");
		else
			slash[slash == d->dir] = 0;
		d->shown = NULL;
		return 0;
	}
	const char *dir = o->dir ? o->dir : ".";
	if (o->dir && mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	if (!realpath(dir, d->output))
		return -1;
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	d->shown = o->dir ? o->dir : "";
	return 0;
}

static int wait_exit_status(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void print_written(const struct destination *d, const char *name)
{
	const char *sep = d->shown && *d->shown && d->shown[strlen(d->shown) - 1] != '/' ? "/" : "";
	if (!d->shown) /* -o: as the user named it, the children beside it */
		fprintf(stderr, "hookprof: trace written to %s%s%s\n",
			strcmp(d->dir, ".") ? d->dir : "", strcmp(d->dir, ".") ? "/" : "", name);
	else
		fprintf(stderr, "hookprof: trace written to %s%s%s\n", d->shown, sep, name);
}

/* Names every trace the run wrote: the root's first. */
static void report_written(const struct destination *d, const struct hp_cli_names *before, pid_t pid,
			   const char *prog)
{
	struct hp_cli_names after;
	char root[PATH_MAX];
	const char *base = strrchr(d->output, '/');
	if (!d->shown)
		snprintf(root, sizeof(root), "%s", base ? base + 1 : d->output);
	else
		snprintf(root, sizeof(root), "-%d.hookprof", (int)pid);
	size_t found = 0;
	if (hp_cli_list_traces(d->dir, &after) == 0) {
		if (!d->shown && access(d->output, F_OK) == 0) {
			fprintf(stderr, "hookprof: trace written to %s\n", d->output);
			found++;
		}
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < after.n; i++) {
				const char *n = after.v[i];
				size_t ln = strlen(n), lr = strlen(root);
				int is_root = d->shown ? ln > lr && !strcmp(n + ln - lr, root) : !strcmp(n, root);
				if (hp_cli_listed(before, n) || (is_root != (pass == 0)) || (is_root && !d->shown))
					continue;
				print_written(d, n);
				found++;
			}
	}
	hp_cli_names_free(&after);
	if (!found)
		fprintf(stderr, "hookprof: %s wrote no trace (was it built with -finstrument-functions?)\n",
			prog);
}

static int run_recorded(const struct record_opts *o, const char *lib, char **argv)
{
	struct destination d;
	struct hp_cli_names before;
	if (destination(o, &d))
		return hp_cli_print_error(o->dir ? "cannot make the directory for the traces" : "cannot resolve the working directory"), 1;
	if (o->output)
		unlink(o->output); /* -o asks for that name: an old trace goes */
	hp_cli_list_traces(d.dir, &before); /* a directory not there yet holds no old trace */
	int ready[2];
	if (pipe2(ready, O_CLOEXEC))
		return hp_cli_names_free(&before), hp_cli_print_error("cannot create a pipe"), 1;
	pid_t pid = fork();
	if (pid < 0)
		return hp_cli_names_free(&before), hp_cli_print_error("cannot fork"), 1;
	if (pid == 0) {
		if (set_record_env(o, lib, d.output) == 0)
			execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(ready[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(ready[1]);
	/* The program's own signals from the terminal reach it; we wait for it. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	int exec_errno = 0;
	ssize_t got = read(ready[0], &exec_errno, sizeof(exec_errno));
	close(ready[0]);
	int status = wait_exit_status(pid);
	if (got == sizeof(exec_errno)) {
		hp_cli_names_free(&before);
		fprintf(stderr, "hookprof: cannot run '%s': %s\n", argv[0], strerror(exec_errno));
		return 127;
	}
	report_written(&d, &before, pid, argv[0]);
	hp_cli_names_free(&before);
	return status;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "mode", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, 'd' },
		{ "buffer", required_argument, NULL, 'b' }, { "clock", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	struct record_opts o = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "+o:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'm': o.mode = optarg; break;
		case 'b': o.buffer = optarg; break;
		case 'c': o.clock = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: return hp_cli_usage_error("%s", "bad option for record");
		}
	}
	if (optind >= argc)
		return hp_cli_usage_error("%s", "record needs a program to run");
	if (o.output && o.dir)
		return hp_cli_usage_error("%s", "record takes -o or -d, not both");
	int bad = check_record_opts(&o);
	if (bad)
		return bad;
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)))
		return hp_cli_print_error("cannot find libhookprof.so next to hookprof or in ../lib (set HOOKPROF_LIB)");
	return run_recorded(&o, lib, argv + optind);
}

/* ---- warnings about names ----------------------------------------------- */

/* After the output, which they do not stop: it is still right, only some
 * names are module+0xoffset, and the user should know why. */
static void warn_names(const char *why)
{
	fprintf(stderr, "hookprof: warning: %s\n", why);
}

/* ---- crash backtraces and root stacks (CRASH, STACK records) ----------- */

static const char *signal_name(uint32_t sig, char *buf, size_t len)
{
	const char *abbrev = sig < 128 ? sigabbrev_np((int)sig) : NULL;
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %u", sig);
	return buf;
}

/* Frames after the first hold return addresses: the call is the byte before. */
static void lookup_frame(struct hp_symbols *sym, const struct hp_stack *st, uint32_t i,
			 struct hp_symbol *out)
{
	hp_symbols_lookup(sym, i ? st->pc[i] - 1 : st->pc[i], out);
}

static int is_open_frame(struct hp_symbols *sym, const struct hp_analysis *a, const char *name)
{
	for (size_t i = 0; i < a->ncrash_open; i++) {
		struct hp_symbol s;
		hp_symbols_lookup(sym, a->crash_open[i], &s);
		if (!strcmp(s.name, name))
			return 1;
	}
	return 0;
}

static void print_crash_frames(FILE *out, const char *pre, struct hp_symbols *sym,
			       const struct hp_analysis *a)
{
	const struct hp_stack *st = &a->info.crash.stack;
	for (uint32_t i = 0; i < st->n; i++) {
		struct hp_symbol s;
		lookup_frame(sym, st, i, &s);
		fprintf(out, "%s  #%-3u 0x%016llx %s (%s)", pre, i, (unsigned long long)st->pc[i],
			s.name, s.module);
		if (s.file)
			fprintf(out, " %s:%d", s.file, s.line);
		fprintf(out, "%s\n", is_open_frame(sym, a, s.name) ? "  [not returned]" : "");
	}
	if (st->flags & HP_STACK_TRUNCATED)
		fprintf(out, "%s  ... truncated: the first %u frames only\n", pre, st->n);
}

static void print_open_frames(FILE *out, const char *pre, struct hp_symbols *sym,
			      const struct hp_analysis *a)
{
	fprintf(out, "%snot returned (instrumented frames open at the crash, outermost first):", pre);
	for (size_t i = 0; i < a->ncrash_open; i++) {
		struct hp_symbol s;
		hp_symbols_lookup(sym, a->crash_open[i], &s);
		fprintf(out, "%s%s", i ? " > " : " ", s.name);
	}
	fprintf(out, "%s\n", a->ncrash_open ? "" : " none");
}

/* The signal, the thread, its backtrace and the frames that never returned;
 * every line starts with pre. */
static void print_crash(FILE *out, const char *pre, struct hp_symbols *sym,
			const struct hp_analysis *a)
{
	const struct hp_crash *k = &a->info.crash;
	char name[32];
	fprintf(out, "%scrash: %s (signal %u, code %d", pre, signal_name(k->signal, name, sizeof(name)),
		k->signal, k->code);
	if (k->addr || k->signal == SIGSEGV || k->signal == SIGBUS)
		fprintf(out, ", address 0x%llx", (unsigned long long)k->addr);
	fprintf(out, ")\n");
	const struct hp_stream_info *si = k->stream < a->info.nstreams ? &a->info.streams[k->stream] : NULL;
	if (si && si->seen)
		fprintf(out, "%sthread: stream %u tid %u %s\n", pre, k->stream, k->tid, si->name);
	else
		fprintf(out, "%sthread: tid %u (no events recorded)\n", pre, k->tid);
	fprintf(out, "%sbacktrace: %u frame%s, unwound in %.1f us\n", pre, k->stack.n,
		k->stack.n == 1 ? "" : "s", (double)k->unwind_ns / 1e3);
	print_crash_frames(out, pre, sym, a);
	print_open_frames(out, pre, sym, a);
}

/* One line: the stream's first function and its callers, innermost first. */
static void print_root(FILE *out, struct hp_symbols *sym, const struct hp_stack *st)
{
	fprintf(out, "    root:");
	for (uint32_t i = 0; i < st->n; i++) {
		struct hp_symbol s;
		lookup_frame(sym, st, i, &s);
		fprintf(out, "%s%s (%s)", i ? " <- " : " ", s.name, s.module);
	}
	fprintf(out, "%s%s\n", st->flags & HP_STACK_TRUNCATED ? " <- ..." : "",
		st->flags & HP_STACK_NO_ROOT ? "  [first function's frame not found]" : "");
}

static int has_stacks(const struct hp_trace_info *in)
{
	if (in->crash.present)
		return 1;
	for (size_t i = 0; i < in->nstreams; i++)
		if (in->streams[i].root.n)
			return 1;
	return 0;
}

/* ---- a trace cut short ------------------------------------------------- */

/* --partial read a trace whose last record was cut (kill -9 in the middle of
 * a write, a full disk): everything before it is in the output. */
static void warn_cut(FILE *out, const struct hp_analysis *a)
{
	if (a->cut_at)
		fprintf(out, "hookprof: warning: %s: trace cut at byte %llu (an incomplete record, "
			     "left out); every record before it was read\n",
			a->path, (unsigned long long)a->cut_at);
}

/* ---- report ---------------------------------------------------------- */

static void print_header(FILE *out, const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	size_t threads = 0;
	for (size_t i = 0; i < in->nstreams; i++)
		threads += in->streams[i].seen;
	double secs = in->nclocks >= 2 ? (double)(in->clock_ns[1] - in->clock_ns[0]) / 1e9 : 0;
	uint64_t lost = in->lost_global;
	for (size_t i = 0; i < in->nstreams; i++)
		lost += in->streams[i].lost;
	fprintf(out, "# %s (pid %u): %zu thread%s, %llu events, %llu lost, %.3f s%s\n",
	       in->exe ? in->exe : "?", in->pid, threads, threads == 1 ? "" : "s",
	       (unsigned long long)a->events, (unsigned long long)lost, secs,
	       a->partial ? ", incomplete (no end record)" : "");
	if (lost)
		fprintf(out, "# %llu events were not recorded: times of the functions around them are approximate\n",
		       (unsigned long long)lost);
}

struct report_opts {
	int values;
	int csv;
	int partial;
	int per_process;
	enum hp_sort sort;
	size_t limit;
};

/* The regions the reader repaired (hookprof_region_begin/end misused). */
static void warn_regions(const struct hp_analysis *a)
{
	for (size_t i = 0; i < a->nwarnings; i++)
		fprintf(stderr, "hookprof: warning: %s: %s\n", a->path, a->warnings[i]);
	if (a->warnings_more)
		fprintf(stderr, "hookprof: warning: %s: %llu more region repairs\n", a->path,
			(unsigned long long)a->warnings_more);
}

static int report_crash(FILE *out, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct hp_symbols *sym = hp_symbols_new(a->info.modules, a->info.nmodules, err, errlen);
	if (!sym)
		return -1;
	print_crash(out, "# ", sym, a);
	hp_symbols_free(sym);
	return 0;
}

static int report_traces(const struct report_opts *o, char **paths, int n)
{
	struct hp_rows rows = { 0 };
	char err[ERRLEN];
	int rc = 0;
	/* Headers wait until every trace has been read: a bad one prints nothing. */
	char *headers = NULL, *cuts = NULL;
	size_t headers_len = 0, cuts_len = 0;
	FILE *hdr = open_memstream(&headers, &headers_len);
	FILE *cut = hdr ? open_memstream(&cuts, &cuts_len) : NULL;
	if (!cut) {
		if (hdr)
			fclose(hdr);
		free(headers);
		return hp_cli_print_error("out of memory");
	}
	for (int i = 0; i < n && !rc; i++) {
		struct hp_analysis a;
		rc = hp_analyze(paths[i], o->partial ? HP_ANALYZE_ALLOW_PARTIAL : 0, NULL, NULL, &a,
				err, sizeof(err));
		if (!rc && !o->csv)
			print_header(hdr, &a);
		if (!rc && !o->csv && a.info.crash.present)
			rc = report_crash(hdr, &a, err, sizeof(err));
		if (!rc)
			warn_cut(cut, &a);
		if (!rc)
			warn_regions(&a);
		if (!rc)
			rc = hp_rows_add(&rows, &a, err, sizeof(err));
		hp_analysis_free(&a);
	}
	fclose(hdr);
	fclose(cut);
	if (rc) {
		free(headers);
		free(cuts);
		hp_rows_free(&rows);
		return hp_cli_print_error(err);
	}
	fputs(cuts, stderr);
	free(cuts);
	fwrite(headers, 1, headers_len, stdout);
	free(headers);
	if (hp_rows_finish(&rows, o->sort)) {
		hp_rows_free(&rows);
		return hp_cli_print_error("out of memory");
	}
	rc = o->csv ? hp_rows_print_csv(stdout, &rows, o->limit)
		    : hp_rows_print_table(stdout, &rows, o->limit);
	if (rc || fflush(stdout)) {
		hp_rows_free(&rows);
		return hp_cli_print_error("cannot write the report to standard output");
	}
	for (size_t i = 0; i < rows.nproblems; i++)
		warn_names(rows.problem[i]);
	hp_rows_free(&rows);
	return 0;
}

/* One process of a per-process report: its header lines and its rows. */
struct section {
	char *text;
	size_t len;
	struct hp_rows rows;
};

static void section_title(FILE *out, const struct hp_analysis *a, unsigned depth)
{
	const struct hp_trace_info *in = &a->info;
	fprintf(out, "## %*sprocess %u, parent %u: %s", (int)depth * 2, "", in->pid,
		in->has_parent ? in->parent_pid : 0, in->exe ? in->exe : "?");
	for (uint32_t i = 1; i < in->argc; i++)
		fprintf(out, " %s", in->argv[i]);
	fprintf(out, " (%s)\n", a->path);
}

/* Reads one trace into its section; fills proc for the ordering. */
static int read_section(const struct report_opts *o, const char *path, struct section *sec,
			struct hp_proc *proc, char *err, size_t errlen)
{
	struct hp_analysis a;
	if (hp_analyze(path, o->partial ? HP_ANALYZE_ALLOW_PARTIAL : 0, NULL, NULL, &a, err, errlen))
		return -1;
	*proc = (struct hp_proc){ a.info.pid, a.info.has_parent ? a.info.parent_pid : 0,
				  a.info.start_realtime_ns };
	FILE *f = open_memstream(&sec->text, &sec->len);
	int rc = f ? 0 : -1;
	if (f) {
		section_title(f, &a, 0);
		if (!o->csv)
			print_header(f, &a);
		fclose(f);
	}
	if (!rc)
		rc = hp_rows_add(&sec->rows, &a, err, errlen);
	warn_regions(&a);
	hp_analysis_free(&a);
	if (!rc)
		hp_rows_finish(&sec->rows, o->sort);
	return rc;
}

/* The title again, indented as deep as the process is in the tree. */
static void print_section(const struct report_opts *o, const struct section *sec, unsigned depth)
{
	const char *nl = memchr(sec->text, '\n', sec->len);
	const char *title_end = nl ? nl + 1 : sec->text + sec->len;
	printf("## %*s%.*s", (int)depth * 2, "", (int)(title_end - sec->text - 3), sec->text + 3);
	fwrite(title_end, 1, sec->len - (size_t)(title_end - sec->text), stdout);
	if (o->csv)
		hp_rows_print_csv(stdout, &sec->rows, o->limit);
	else
		hp_rows_print_table(stdout, &sec->rows, o->limit);
	putchar('\n');
}

static int report_per_process(const struct report_opts *o, char **paths, int n)
{
	struct section *sec = calloc((size_t)n, sizeof(*sec));
	struct hp_proc *procs = calloc((size_t)n, sizeof(*procs));
	size_t *order = calloc((size_t)n, sizeof(*order));
	unsigned *depth = calloc((size_t)n, sizeof(*depth));
	char err[ERRLEN] = "out of memory";
	int rc = sec && procs && order && depth ? 0 : -1;
	for (int i = 0; i < n && !rc; i++)
		rc = read_section(o, paths[i], &sec[i], &procs[i], err, sizeof(err));
	if (!rc)
		rc = hp_procs_order(procs, (size_t)n, order, depth);
	for (int i = 0; i < n && !rc; i++)
		print_section(o, &sec[order[i]], depth[i]);
	if (!rc && fflush(stdout))
		snprintf(err, sizeof(err), "cannot write the report to standard output"), rc = -1;
	for (int i = 0; sec && i < n; i++) {
		for (size_t j = 0; !rc && j < sec[i].rows.nproblems; j++)
			warn_names(sec[i].rows.problem[j]);
		free(sec[i].text);
		hp_rows_free(&sec[i].rows);
	}
	free(sec), free(procs), free(order), free(depth);
	return rc ? hp_cli_print_error(err) : 0;
}

/* ---- report --values ---------------------------------------------------- */

/* Per value name, over every trace given (names, not ids: ids are per trace). */
struct value_stat {
	char *name;
	uint64_t count;
	int64_t min, max;
	long double sum;
};

struct value_stats {
	struct value_stat *v;
	size_t n, cap;
};

static struct value_stat *value_stat_of(struct value_stats *vs, const char *name)
{
	for (size_t i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].name, name))
			return &vs->v[i];
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? vs->cap * 2 : 16;
		struct value_stat *v = realloc(vs->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		vs->v = v;
		vs->cap = cap;
	}
	struct value_stat *st = &vs->v[vs->n];
	*st = (struct value_stat){ .name = strdup(name), .min = INT64_MAX, .max = INT64_MIN };
	if (!st->name)
		return NULL;
	vs->n++;
	return st;
}

static int collect_values(void *arg, const struct hp_analysis *a, uint32_t stream,
			  const struct hp_ev *ev, size_t n)
{
	(void)stream;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind != HP_EV_VALUE)
			continue;
		const char *name = hp_trace_string(&a->info, ev[i].func);
		struct value_stat *st = value_stat_of(arg, name ? name : "?");
		if (!st)
			return -1;
		st->count++;
		st->sum += ev[i].value;
		if (ev[i].value < st->min)
			st->min = ev[i].value;
		if (ev[i].value > st->max)
			st->max = ev[i].value;
	}
	return 0;
}

static int by_value_name(const void *x, const void *y)
{
	return strcmp(((const struct value_stat *)x)->name, ((const struct value_stat *)y)->name);
}

static void print_values(const struct report_opts *o, struct value_stats *vs)
{
	qsort(vs->v, vs->n, sizeof(*vs->v), by_value_name);
	if (o->csv)
		printf("name,count,min,max,mean\n");
	else
		printf("%12s %20s %20s %24s  %s\n", "count", "min", "max", "mean", "value");
	for (size_t i = 0; i < vs->n; i++) {
		const struct value_stat *st = &vs->v[i];
		double mean = (double)(st->sum / (long double)st->count);
		if (o->csv)
			printf("%s,%llu,%lld,%lld,%.17g\n", st->name, (unsigned long long)st->count,
			       (long long)st->min, (long long)st->max, mean);
		else
			printf("%12llu %20lld %20lld %24.15g  %s\n", (unsigned long long)st->count,
			       (long long)st->min, (long long)st->max, mean, st->name);
	}
}

/* report --values: the values of hookprof_value, per name. */
static int report_values(const struct report_opts *o, char **paths, int n)
{
	struct value_stats vs = { 0 };
	char err[ERRLEN];
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct hp_analysis a;
		rc = hp_analyze(paths[i], o->partial ? HP_ANALYZE_ALLOW_PARTIAL : 0, collect_values,
				&vs, &a, err, sizeof(err));
		if (!rc) {
			warn_cut(stderr, &a);
			hp_analysis_free(&a);
		}
	}
	if (!rc) {
		print_values(o, &vs);
		if (fflush(stdout)) {
			snprintf(err, sizeof(err), "cannot write the report to standard output");
			rc = -1;
		}
	}
	for (size_t i = 0; i < vs.n; i++)
		free(vs.v[i].name);
	free(vs.v);
	return rc ? hp_cli_print_error(err) : 0;
}

static int report_paths(const struct report_opts *o, char **args, int n)
{
	struct hp_cli_names all;
	char err[ERRLEN];
	if (hp_cli_expand_dirs(args, n, &all, err, sizeof(err))) {
		hp_cli_names_free(&all);
		return hp_cli_print_error(err);
	}
	int rc = o->values	  ? report_values(o, all.v, (int)all.n)
		 : o->per_process ? report_per_process(o, all.v, (int)all.n)
				  : report_traces(o, all.v, (int)all.n);
	hp_cli_names_free(&all);
	return rc;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "sort", required_argument, NULL, 's' },
		{ "limit", required_argument, NULL, 'l' },  { "partial", no_argument, NULL, 'p' },
		{ "per-process", no_argument, NULL, 'P' }, { "values", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	struct report_opts o = { 0 };
	char *end;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "csv") && strcmp(optarg, "table"))
				return hp_cli_usage_error("--format must be table or csv, not '%s'", optarg);
			o.csv = !strcmp(optarg, "csv");
			break;
		case 's':
			if (hp_cli_parse_sort(optarg, &o.sort))
				return hp_cli_usage_error("--sort must be self, total, calls, avg, max or name, not '%s'", optarg);
			break;
		case 'l':
			o.limit = strtoul(optarg, &end, 10);
			if (*end || !*optarg)
				return hp_cli_usage_error("--limit must be a number, not '%s'", optarg);
			break;
		case 'p': o.partial = 1; break;
		case 'P': o.per_process = 1; break;
		case 'V': o.values = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: return hp_cli_usage_error("%s", "bad option for report");
		}
	}
	if (optind < argc)
		return report_paths(&o, argv + optind, argc - optind);
	char newest[PATH_MAX];
	char *one[1] = { newest };
	if (hp_cli_newest_trace(newest, sizeof(newest)))
		return hp_cli_print_error("no trace given and no *.hookprof file in this directory");
	return report_paths(&o, one, 1);
}

/* ---- info and dump ----------------------------------------------------- */

/* The PARENT record (1.1): a forked copy of a traced process names its
 * parent's trace; any other process, the pid of its parent. */
static void print_parent(const struct hp_trace_info *in)
{
	if (!in->has_parent)
		return;
	printf("parent:   pid %u", in->parent_pid);
	if (in->parent_flags & HP_PARENT_FORKED)
		printf(", forked from its trace %s%s", in->parent_trace && *in->parent_trace ? in->parent_trace : "?",
		       in->parent_flags & HP_PARENT_FRAMES ? " (frames open at the fork re-entered)" : "");
	printf("\n");
}

static void print_info(const struct hp_analysis *a, struct hp_symbols *sym)
{
	const struct hp_trace_info *in = &a->info;
	printf("trace:    %s\nprogram:  %s\ncommand:", a->path, in->exe ? in->exe : "?");
	for (uint32_t i = 0; i < in->argc; i++)
		printf(" %s", in->argv[i]);
	time_t start = (time_t)(in->start_realtime_ns / 1000000000u);
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime(&start));
	printf("\npid:      %u\n", in->pid);
	print_parent(in);
	printf("started:  %s\n", when);
	printf("clock:    %s, %.4f ticks per ns\n", in->clock_source == HP_CLOCK_TSC ? "tsc" : "monotonic",
	       1.0 / a->tb.ns_per_tick);
	printf("mode:     %s\n", in->flags & 1 ? "ring" : "stream");
	printf("duration: %.6f s\n", in->nclocks >= 2 ? (double)(in->clock_ns[1] - in->clock_ns[0]) / 1e9 : 0);
	printf("events:   %llu (%u functions)\n", (unsigned long long)a->events, a->funcs.n);
	printf("lost:     %llu outside threads\n", (unsigned long long)in->lost_global);
	if (a->cut_at)
		printf("complete: no (cut at byte %llu: an incomplete record, left out)\n",
		       (unsigned long long)a->cut_at);
	else
		printf("complete: %s\n", in->has_end ? "yes" : "no (no end record)");
	printf("threads (root: the first function and its callers, from STACK records):\n");
	for (size_t i = 0; i < in->nstreams; i++) {
		if (in->streams[i].seen)
			printf("  stream %u tid %u %-16s %llu events, %llu lost\n", in->streams[i].stream,
			       in->streams[i].tid, in->streams[i].name,
			       (unsigned long long)in->streams[i].events,
			       (unsigned long long)in->streams[i].lost);
		if (sym && in->streams[i].seen && in->streams[i].root.n)
			print_root(stdout, sym, &in->streams[i].root);
	}
	if (sym && in->crash.present)
		print_crash(stdout, "", sym, a);
	printf("modules:\n");
	for (size_t i = 0; i < in->nmodules; i++) {
		const struct hp_module *m = &in->modules[i];
		printf("  0x%012llx %s build-id ", (unsigned long long)m->bias, m->path);
		for (uint32_t j = 0; j < m->build_id_len; j++)
			printf("%02x", m->build_id[j]);
		printf("%s", m->build_id_len ? "" : "none");
		if (m->nlives > 1) /* unloaded and loaded again at the same address */
			printf(" (loaded %u times)", m->nlives);
		putchar('\n');
	}
}

static int cmd_info(int argc, char **argv)
{
	if (argc != 2)
		return hp_cli_usage_error("%s", "info takes one trace file");
	struct hp_analysis a;
	char err[ERRLEN];
	if (hp_analyze(argv[1], HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)))
		return hp_cli_print_error(err);
	struct hp_symbols *sym = NULL;
	if (has_stacks(&a.info) &&
	    !(sym = hp_symbols_new(a.info.modules, a.info.nmodules, err, sizeof(err)))) {
		hp_analysis_free(&a);
		return hp_cli_print_error(err);
	}
	print_info(&a, sym);
	hp_symbols_free(sym);
	hp_analysis_free(&a);
	return fflush(stdout) ? hp_cli_print_error("cannot write to standard output") : 0;
}

struct dump_state {
	struct hp_rows names; /* row i: function id i, named apart from the others */
	uint64_t tick0;
	int have_tick0;
};

/* A control event that is no frame: its line. */
static void dump_control(const struct hp_analysis *a, uint32_t tid, double t, const struct hp_ev *e)
{
	static const char *const what[] = {
		[HP_EV_PAUSE] = "pause", [HP_EV_RESUME] = "resume",
		[HP_EV_STOP] = "stop", [HP_EV_START] = "start",
	};
	const char *s = hp_trace_string(&a->info, e->func);
	if (e->kind == HP_EV_MARK)
		printf("%u %.0f mark %s\n", tid, t, s ? s : "?");
	else if (e->kind == HP_EV_VALUE)
		printf("%u %.0f value %s %lld\n", tid, t, s ? s : "?", (long long)e->value);
	else if (e->kind < sizeof(what) / sizeof(what[0]) && what[e->kind])
		printf("%u %.0f %s\n", tid, t, what[e->kind]);
}

static int dump_events(void *arg, const struct hp_analysis *a, uint32_t stream,
		       const struct hp_ev *ev, size_t n)
{
	struct dump_state *d = arg;
	double ns_per_tick = 1.0;
	if (a->info.clock_source == HP_CLOCK_TSC && a->info.nclocks >= 2)
		ns_per_tick = (double)(a->info.clock_ns[1] - a->info.clock_ns[0]) /
			      (double)(a->info.clock_tick[1] - a->info.clock_tick[0]);
	uint32_t tid = stream < a->info.nstreams ? a->info.streams[stream].tid : 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == HP_EV_RESET) {
			printf("%u - reset (events were lost here)\n", tid);
			continue;
		}
		if (ev[i].kind == HP_EV_REGION_REPAIR)
			continue; /* said on stderr */
		if (!d->have_tick0) {
			d->tick0 = ev[i].tick;
			d->have_tick0 = 1;
		}
		double t = (double)(int64_t)(ev[i].tick - d->tick0) * ns_per_tick;
		if (ev[i].kind != HP_EV_ENTER && ev[i].kind != HP_EV_EXIT) {
			dump_control(a, tid, t, &ev[i]);
			continue;
		}
		const char *name = ev[i].func < d->names.n ? hp_row_name(&d->names.row[ev[i].func]) : "?";
		printf("%u %.0f %s %s\n", tid, t, ev[i].kind == HP_EV_ENTER ? "enter" : "exit", name);
	}
	return ferror(stdout) ? -1 : 0;
}

/* A first pass learns every function of the trace, so that two of one name
 * print apart from the first event on; the warnings about names are those
 * of the functions named. */
static int dump_names(const char *path, int flags, struct dump_state *d)
{
	struct hp_analysis a;
	char err[ERRLEN];
	if (hp_analyze(path, flags, NULL, NULL, &a, err, sizeof(err)))
		return hp_cli_print_error(err);
	struct hp_symbols *sym = hp_symbols_new(a.info.modules, a.info.nmodules, err, sizeof(err));
	int rc = sym ? hp_rows_of_functions(&d->names, &a, sym) : -1;
	if (rc && sym)
		snprintf(err, sizeof(err), "out of memory");
	hp_analysis_free(&a);
	size_t iter = 0;
	const char *why;
	while (!rc && (why = hp_symbols_next_problem(sym, &iter)))
		rc = hp_rows_add_problem(&d->names, why);
	hp_symbols_free(sym);
	return rc ? hp_cli_print_error(err) : 0;
}

static int cmd_dump(int argc, char **argv)
{
	int flags = 0;
	if (argc == 3 && !strcmp(argv[1], "--partial")) {
		flags = HP_ANALYZE_ALLOW_PARTIAL;
		argv++, argc--;
	}
	if (argc != 2)
		return hp_cli_usage_error("%s", "dump takes one trace file");
	struct dump_state d = { 0 };
	struct hp_analysis a;
	char err[ERRLEN];
	if (dump_names(argv[1], flags, &d)) {
		hp_rows_free(&d.names);
		return 1;
	}
	printf("# tid time_ns enter|exit function (time from the first event; exact until the end record is read)\n");
	int rc = hp_analyze(argv[1], flags, dump_events, &d, &a, err, sizeof(err));
	if (rc) {
		hp_rows_free(&d.names);
		return hp_cli_print_error(err);
	}
	warn_cut(stderr, &a);
	warn_regions(&a);
	hp_analysis_free(&a);
	if (fflush(stdout)) {
		hp_rows_free(&d.names);
		return hp_cli_print_error("cannot write to standard output");
	}
	for (size_t i = 0; i < d.names.nproblems; i++)
		warn_names(d.names.problem[i]);
	hp_rows_free(&d.names);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return fputs(usage_text, stderr), 2;
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
		return fputs(usage_text, stdout), 0;
	if (!strcmp(cmd, "--version"))
		return puts("hookprof " VERSION), 0;
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc - 1, argv + 1);
	const struct hp_view_ops *view = hp_view_find(cmd);
	if (!strcmp(cmd, "export") || (view && !(view->flags & HP_VIEW_EXPORT)))
		return hp_viewcmd_run(cmd, argc - 1, argv + 1);
	return hp_cli_usage_error("unknown command '%s'", cmd);
}
