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
#include "hp_config.h"
#include "hp_format.h"
#include "hp_report.h"
#include "hp_symbols.h"

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
	"      -o, --output=FILE     trace file (default ./PROGRAM-PID.hookprof); replaced if it exists\n"
	"      --mode=stream|ring    stream (default): every event; ring: the last --buffer per thread\n"
	"      --buffer=SIZE         per-thread buffer, e.g. 512K, 8M (default 8M; rounded down\n"
	"                            to a power of two)\n"
	"      --clock=tsc|monotonic timestamp source (default tsc, when invariant)\n"
	"  report [options] [TRACE...]\n"
	"      flat profile: calls, total (inclusive), self, avg, min and max per call;\n"
	"      several traces are merged; no TRACE: the newest *.hookprof here\n"
	"      --format=table|csv    (default table)\n"
	"      --sort=self|total|calls|avg|max|name  (default self)\n"
	"      --limit=N             print the first N functions only\n"
	"      --partial             report a trace that has no end record, also one cut in the\n"
	"                            middle of a record (read up to there; stderr says where)\n"
	"  info TRACE               what the trace holds: program, clock, threads, modules, losses\n"
	"  dump [--partial] TRACE   every event: thread, time, enter or exit, function\n"
	"\n"
	"  -h, --help               this text;  --version  the version\n"
	"\n"
	"environment of a traced program: HOOKPROF_OUTPUT (file, %p = pid, %n = program,\n"
	"or a directory), HOOKPROF_MODE, HOOKPROF_BUFFER, HOOKPROF_CLOCK (see record).\n"
	"environment of report and dump: HOOKPROF_DEBUG_PATH (where separate debug files\n"
	"and files by build-id are looked for; libdwfl's syntax), DEBUGINFOD_URLS.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("hookprof: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (hookprof --help lists the options)\n", stderr);
	return 2;
}

static int print_error(const char *err)
{
	fprintf(stderr, "hookprof: %s\n", err);
	return 1;
}

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
		return usage_error("--mode must be stream or ring, not '%s'", o->mode);
	if (o->buffer && hp_config_parse_size(o->buffer) < HP_BUFFER_MIN)
		return usage_error("--buffer must be a size of at least 128K, not '%s'", o->buffer);
	if (o->clock && strcmp(o->clock, "tsc") && strcmp(o->clock, "monotonic"))
		return usage_error("--clock must be tsc or monotonic, not '%s'", o->clock);
	return 0;
}

/* The default name is the runtime's own, with the child's pid. */
static void trace_name(const struct record_opts *o, const char *prog, pid_t pid, char *out,
		       size_t len)
{
	const char *base = strrchr(prog, '/');
	base = base ? base + 1 : prog;
	if (o->output)
		snprintf(out, len, "%s", o->output);
	else
		snprintf(out, len, "%s-%d.hookprof", base, (int)pid);
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

static int run_recorded(const struct record_opts *o, const char *lib, char **argv)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC))
		return print_error("cannot create a pipe"), 1;
	pid_t pid = fork();
	if (pid < 0)
		return print_error("cannot fork"), 1;
	if (pid == 0) {
		char output[PATH_MAX];
		trace_name(o, argv[0], getpid(), output, sizeof(output));
		if (o->output)
			unlink(output); /* -o asks for that name: an old trace goes */
		if (set_record_env(o, lib, output) == 0)
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
		fprintf(stderr, "hookprof: cannot run '%s': %s\n", argv[0], strerror(exec_errno));
		return 127;
	}
	char output[PATH_MAX];
	trace_name(o, argv[0], pid, output, sizeof(output));
	if (access(output, F_OK) == 0)
		fprintf(stderr, "hookprof: trace written to %s\n", output);
	else
		fprintf(stderr, "hookprof: %s wrote no trace (was it built with -finstrument-functions?)\n",
			argv[0]);
	return status;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "mode", required_argument, NULL, 'm' },
		{ "buffer", required_argument, NULL, 'b' }, { "clock", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	struct record_opts o = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'm': o.mode = optarg; break;
		case 'b': o.buffer = optarg; break;
		case 'c': o.clock = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: return usage_error("%s", "bad option for record");
		}
	}
	if (optind >= argc)
		return usage_error("%s", "record needs a program to run");
	int bad = check_record_opts(&o);
	if (bad)
		return bad;
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)))
		return print_error("cannot find libhookprof.so next to hookprof or in ../lib (set HOOKPROF_LIB)");
	return run_recorded(&o, lib, argv + optind);
}

/* ---- warnings about names ----------------------------------------------- */

/* After the output, which they do not stop: it is still right, only some
 * names are module+0xoffset, and the user should know why. */
static void warn_names(const char *why)
{
	fprintf(stderr, "hookprof: warning: %s\n", why);
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

/* The newest *.hookprof in the working directory. */
static int newest_trace(char *out, size_t len)
{
	DIR *d = opendir(".");
	if (!d)
		return -1;
	struct dirent *e;
	struct timespec best = { 0, 0 };
	int found = -1;
	while ((e = readdir(d))) {
		struct stat st;
		const char *dot = strstr(e->d_name, ".hookprof");
		if (!dot || stat(e->d_name, &st) || !S_ISREG(st.st_mode))
			continue;
		if (dot[9] && dot[9] != '.')
			continue;
		if (found < 0 || st.st_mtim.tv_sec > best.tv_sec ||
		    (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec)) {
			best = st.st_mtim;
			snprintf(out, len, "%s", e->d_name);
			found = 0;
		}
	}
	closedir(d);
	return found;
}

static int parse_sort(const char *s, enum hp_sort *key)
{
	static const char *const names[] = { "self", "total", "calls", "avg", "max", "name" };
	for (int i = 0; i < 6; i++)
		if (!strcmp(s, names[i])) {
			*key = (enum hp_sort)i;
			return 0;
		}
	return -1;
}

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
	int csv;
	int partial;
	enum hp_sort sort;
	size_t limit;
};

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
		return print_error("out of memory");
	}
	for (int i = 0; i < n && !rc; i++) {
		struct hp_analysis a;
		rc = hp_analyze(paths[i], o->partial ? HP_ANALYZE_ALLOW_PARTIAL : 0, NULL, NULL, &a,
				err, sizeof(err));
		if (!rc && !o->csv)
			print_header(hdr, &a);
		if (!rc)
			warn_cut(cut, &a);
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
		return print_error(err);
	}
	fputs(cuts, stderr);
	free(cuts);
	fwrite(headers, 1, headers_len, stdout);
	free(headers);
	hp_rows_finish(&rows, o->sort);
	rc = o->csv ? hp_rows_print_csv(stdout, &rows, o->limit)
		    : hp_rows_print_table(stdout, &rows, o->limit);
	if (rc || fflush(stdout)) {
		hp_rows_free(&rows);
		return print_error("cannot write the report to standard output");
	}
	for (size_t i = 0; i < rows.nproblems; i++)
		warn_names(rows.problem[i]);
	hp_rows_free(&rows);
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' }, { "sort", required_argument, NULL, 's' },
		{ "limit", required_argument, NULL, 'l' },  { "partial", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	struct report_opts o = { 0 };
	char *end;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "csv") && strcmp(optarg, "table"))
				return usage_error("--format must be table or csv, not '%s'", optarg);
			o.csv = !strcmp(optarg, "csv");
			break;
		case 's':
			if (parse_sort(optarg, &o.sort))
				return usage_error("--sort must be self, total, calls, avg, max or name, not '%s'", optarg);
			break;
		case 'l':
			o.limit = strtoul(optarg, &end, 10);
			if (*end || !*optarg)
				return usage_error("--limit must be a number, not '%s'", optarg);
			break;
		case 'p': o.partial = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: return usage_error("%s", "bad option for report");
		}
	}
	if (optind < argc)
		return report_traces(&o, argv + optind, argc - optind);
	char newest[PATH_MAX];
	char *one[1] = { newest };
	if (newest_trace(newest, sizeof(newest)))
		return print_error("no trace given and no *.hookprof file in this directory");
	return report_traces(&o, one, 1);
}

/* ---- info and dump ----------------------------------------------------- */

static void print_info(const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	printf("trace:    %s\nprogram:  %s\ncommand:", a->path, in->exe ? in->exe : "?");
	for (uint32_t i = 0; i < in->argc; i++)
		printf(" %s", in->argv[i]);
	time_t start = (time_t)(in->start_realtime_ns / 1000000000u);
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime(&start));
	printf("\npid:      %u\nstarted:  %s\n", in->pid, when);
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
	printf("threads:\n");
	for (size_t i = 0; i < in->nstreams; i++)
		if (in->streams[i].seen)
			printf("  stream %u tid %u %-16s %llu events, %llu lost\n", in->streams[i].stream,
			       in->streams[i].tid, in->streams[i].name,
			       (unsigned long long)in->streams[i].events,
			       (unsigned long long)in->streams[i].lost);
	printf("modules:\n");
	for (size_t i = 0; i < in->nmodules; i++) {
		const struct hp_module *m = &in->modules[i];
		printf("  0x%012llx %s build-id ", (unsigned long long)m->bias, m->path);
		for (uint32_t j = 0; j < m->build_id_len; j++)
			printf("%02x", m->build_id[j]);
		printf("%s\n", m->build_id_len ? "" : "none");
	}
}

static int cmd_info(int argc, char **argv)
{
	if (argc != 2)
		return usage_error("%s", "info takes one trace file");
	struct hp_analysis a;
	char err[ERRLEN];
	if (hp_analyze(argv[1], HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, &a, err, sizeof(err)))
		return print_error(err);
	print_info(&a);
	hp_analysis_free(&a);
	return fflush(stdout) ? print_error("cannot write to standard output") : 0;
}

struct dump_state {
	struct hp_symbols *sym;
	size_t nmodules;
	uint64_t tick0;
	int have_tick0;
};

/* Modules can be reported after the first events; names need all of them. */
static int dump_events(void *arg, const struct hp_analysis *a, uint32_t stream,
		       const struct hp_ev *ev, size_t n)
{
	struct dump_state *d = arg;
	char err[ERRLEN];
	if (!d->sym || d->nmodules != a->info.nmodules) {
		hp_symbols_free(d->sym);
		d->sym = hp_symbols_new(a->info.modules, a->info.nmodules, err, sizeof(err));
		d->nmodules = a->info.nmodules;
		if (!d->sym)
			return -1;
	}
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
		if (!d->have_tick0) {
			d->tick0 = ev[i].tick;
			d->have_tick0 = 1;
		}
		struct hp_symbol s;
		hp_symbols_lookup(d->sym, a->funcs.addr[ev[i].func], &s);
		double t = (double)(int64_t)(ev[i].tick - d->tick0) * ns_per_tick;
		printf("%u %.0f %s %s\n", tid, t, ev[i].kind == HP_EV_ENTER ? "enter" : "exit", s.name);
	}
	return ferror(stdout) ? -1 : 0;
}

static int cmd_dump(int argc, char **argv)
{
	int flags = 0;
	if (argc == 3 && !strcmp(argv[1], "--partial")) {
		flags = HP_ANALYZE_ALLOW_PARTIAL;
		argv++, argc--;
	}
	if (argc != 2)
		return usage_error("%s", "dump takes one trace file");
	struct dump_state d = { 0 };
	struct hp_analysis a;
	char err[ERRLEN];
	printf("# tid time_ns enter|exit function (time from the first event; exact until the end record is read)\n");
	int rc = hp_analyze(argv[1], flags, dump_events, &d, &a, err, sizeof(err));
	if (rc) {
		hp_symbols_free(d.sym);
		return print_error(err);
	}
	warn_cut(stderr, &a);
	hp_analysis_free(&a);
	if (fflush(stdout)) {
		hp_symbols_free(d.sym);
		return print_error("cannot write to standard output");
	}
	size_t iter = 0;
	const char *why;
	while (d.sym && (why = hp_symbols_next_problem(d.sym, &iter)))
		warn_names(why);
	hp_symbols_free(d.sym);
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
	return usage_error("unknown command '%s'", cmd);
}
