/*
 * main.c - the hookprof command: record, report, info, dump, pack.
 * The only place that prints errors; the modules return them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hp_analyze.h"
#include "hp_merge.h"
#include "hp_cli.h"
#include "hp_config.h"
#include "hp_diff.h"
#include "hp_drive.h"
#include "hp_path.h"
#include "hp_format.h"
#include "hp_pack.h"
#include "hp_procs.h"
#include "hp_progress.h"
#include "hp_report.h"
#include "hp_spacing.h"
#include "hp_symbols.h"
#include "hp_view.h"
#include "hp_viewcmd.h"

#define VERSION "0.1.0"
#define ERRLEN 1024

/* The global help: what each command is for; `hookprof help COMMAND`
 * (or COMMAND --help) gives its options. The views' lines come from their
 * table, so a new view is listed without an edit here. */
static const char usage_head[] =
	"usage: hookprof COMMAND [options] [args]\n"
	"Profiles and traces programs built with -finstrument-functions.\n"
	"\n"
	"commands (hookprof help COMMAND, or COMMAND --help: its options):\n"
	"  record    run a program traced; its trace is written when it exits\n"
	"  report    flat profile: calls, total, self, avg, min, max per function\n"
	"  info      what a trace holds: program, clock, threads, modules, losses, crash\n"
	"  dump      every event, threads merged by time: thread, time, enter or exit, function\n"
	"  diff      per function the change of calls, self and total time between two runs\n"
	"  pack      keep beside a trace the symbols it needs, to read it after a rebuild\n";
static const char usage_tail[] =
	"  export    write traces for another viewer (--format=...)\n"
	"  version   the version (also --version)\n"
	"  help      this text, or a command's (also -h, --help)\n"
	"TRACE: a trace file, or a directory of them; none: the newest *.hookprof here.\n"
	"Times are wall-clock, summed over the threads a function ran in, less hookprof's\n"
	"own cost (measured in the run; --raw: as measured).\n";

static void print_usage(FILE *out)
{
	fputs(usage_head, out);
	for (size_t i = 0; hp_views[i]; i++)
		if (!(hp_views[i]->flags & (HP_VIEW_EXPORT | HP_VIEW_OWN_COMMAND)))
			fprintf(out, "  %-9s %s\n", hp_views[i]->name, hp_views[i]->summary);
	fputs(usage_tail, out);
}

static const char record_help[] =
	"usage: hookprof record [options] [--] PROGRAM [ARGS...]\n"
	"  runs PROGRAM with libhookprof preloaded; the trace is written when it exits\n"
	"  -o, --output=FILE     trace file (default ./PROGRAM-PID.hookprof); replaced if it exists\n"
	"                        (kept if the run writes none); a forked child's is FILE.1, FILE.2, ...\n"
	"  -d, --dir=DIR         every process of the tree into DIR (made if missing), each as\n"
	"                        PROGRAM-PID.hookprof; without -o or -d they go to ./\n"
	"  --mode=stream|ring    stream (default): every event; ring: the last --buffer per thread\n"
	"  --buffer=SIZE         per-thread buffer: 128K to 1G, e.g. 512K, 8M, 8MiB, 8MB (K, M, G\n"
	"                        are powers of 1024 with or without iB/B; default 8M; rounded\n"
	"                        down to a power of two). Stream mode: a thread's starts at 128K\n"
	"                        (less with over 32 threads alive) and grows to SIZE as it fills,\n"
	"                        within its share of 8M (or one buffer, if larger) among the\n"
	"                        busy threads\n"
	"  --clock=tsc|monotonic timestamp source (default tsc, when invariant)\n"
	"  --keep-symbols        pack each trace written (hookprof help pack) once the program exits\n"
	"  --exclude=RE[,RE...]  record neither the functions whose name (as report prints it)\n"
	"                        matches a POSIX extended regex, nor anything they call\n"
	"  --include=RE[,RE...]  record only the functions matched and what they call\n"
	"  --depth=N             record the N outermost levels of each thread (1 to 128)\n"
	"  --min=DURATION        leave out calls shorter than DURATION (500ns, 10us, 1ms; a plain\n"
	"                        number is ns) that call nothing instrumented; report counts them\n"
	"  -h, --help            this text\n"
	"environment of a traced program (what record sets): HOOKPROF_OUTPUT (file, %p = pid,\n"
	"%n = program, or an existing directory), HOOKPROF_MODE, HOOKPROF_BUFFER, HOOKPROF_CLOCK,\n"
	"HOOKPROF_EXCLUDE, HOOKPROF_INCLUDE, HOOKPROF_DEPTH, HOOKPROF_MIN,\n"
"HOOKPROF_START=off (record nothing until the program calls hookprof_start()).\n";

static const char report_help[] =
	"usage: hookprof report [options] [TRACE|DIR...]\n"
	"  flat profile: calls, total (inclusive), self, avg, min and max per call (wall-clock,\n"
	"  summed over threads); several traces are merged; a DIR stands for every trace in it\n"
	"  (a process tree from record -d); no TRACE: the newest *.hookprof here\n"
	"  --per-process         one section per process (pid, parent pid, program),\n"
	"                        parents before their children, instead of one merged table\n"
	"  --format=table|csv    (default table)\n"
	"  --sort=self|total|calls|avg|max|name  (default self)\n"
	"  --limit=N             print the first N functions only\n"
	"  --partial             report a trace that has no end record, also one cut in the\n"
	"                        middle of a record (read up to there; stderr says where)\n"
	"  --per-run             the calls and self time of each trace as more columns\n"
	"  --per-thread          one section per thread\n"
	"  --values              per value name (hookprof_value): count, min, max, mean\n"
	"filters (a call hidden by one is not counted):\n"
	"  --thread=TID|NAME     only that thread\n"
	"  --depth=N             only calls fewer than N shown calls deep\n"
	"  --function=REGEX      only calls of matching functions and what they call\n"
	"  --exclude=REGEX       hide matching functions (their time goes to their caller)\n"
	"  --min=DURATION        hide calls shorter than that (500ns, 2us, 1.5ms, 3s)\n"
	"  --time=FROM,TO        only calls that start in that window (seconds from the start)\n"
	"  --raw                 times as measured: hookprof's own cost (its hooks, measured\n"
	"                        in the run, and its buffer switches) left in\n"
	"CSV columns: function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source\n"
	"(source: FILE:LINE of the function where known)\n"
	"  -h, --help            this text\n"
	"environment: HOOKPROF_DEBUG_PATH (where separate debug files and files by build-id\n"
	"are looked for; libdwfl's syntax), DEBUGINFOD_URLS.\n";

static const char info_help[] =
	"usage: hookprof info [TRACE|DIR...]\n"
	"  what each trace holds: program, clock and its resolution, buffer, threads and their\n"
	"  root stacks, events and losses (and why), modules, and the backtrace of a fatal\n"
	"  signal; no TRACE: the newest *.hookprof here. Reads a trace with no end record too.\n"
	"  -h, --help            this text\n";

static const char dump_help[] =
	"usage: hookprof dump [--partial] TRACE\n"
	"  every event, the threads merged by time: thread, time in ns from the process\n"
	"  start, enter or exit, function; marks, values, pauses, stops and starts of the\n"
	"  control API (hookprof.h)\n"
	"  --partial             read a trace with no end record, or one cut short\n"
	"  -h, --help            this text\n";

static const char pack_help[] =
	"usage: hookprof pack [options] TRACE...\n"
	"  stores beside each trace, in TRACE.symbols/, the symbol tables and line info of\n"
	"  the modules it names (the files, or their separate debug files, by build-id;\n"
	"  Windows modules with their PDBs), so that it still reads after a rebuild or on\n"
	"  another machine; every command uses it\n"
	"  -o, --output=DIR      the pack's directory (one TRACE only; not found by itself:\n"
	"                        read with HOOKPROF_DEBUG_PATH=DIR, which serves ELF\n"
	"                        modules only: Windows modules are read from TRACE.symbols/)\n"
	"  --all-modules         every module of the trace's map, not only those it names\n"
	"  -h, --help            this text\n";

/* "--help" or "-h" among a command's arguments, before any "--". */
static int asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
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
	const char *dir;
	const char *mode;
	const char *buffer;
	const char *clock;
	const char *exclude, *include, *depth, *min;
	int keep_symbols;
};

static int set_record_env(const struct record_opts *o, const char *lib, const char *output)
{
	char preload[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? " " : "", old ? old : "");
	return setenv("LD_PRELOAD", preload, 1) || setenv("HOOKPROF_OUTPUT", output, 1) ||
	       (o->mode && setenv("HOOKPROF_MODE", o->mode, 1)) ||
	       (o->buffer && setenv("HOOKPROF_BUFFER", o->buffer, 1)) ||
	       (o->clock && setenv("HOOKPROF_CLOCK", o->clock, 1)) ||
	       (o->exclude && setenv("HOOKPROF_EXCLUDE", o->exclude, 1)) ||
	       (o->include && setenv("HOOKPROF_INCLUDE", o->include, 1)) ||
	       (o->depth && setenv("HOOKPROF_DEPTH", o->depth, 1)) ||
	       (o->min && setenv("HOOKPROF_MIN", o->min, 1));
}

/* Each regex of a --exclude or --include list compiles (the runtime would
 * leave a bad one out with a warning; record says so before the run).
 * Commas inside [] or {} belong to the regex, as the runtime reads them. */
static int check_regexes(const char *opt, const char *list)
{
	if (!list)
		return 0;
	char *copy = strdup(list);
	if (!copy)
		return hp_cli_print_error("out of memory");
	int rc = 0, brackets = 0, braces = 0;
	char *start = copy;
	for (char *p = copy;; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '[' && !brackets)
			brackets = 1;
		else if (*p == ']' && brackets)
			brackets = 0;
		else if ((*p == '{' || *p == '}') && !brackets)
			braces = *p == '{';
		if (*p && (*p != ',' || brackets || braces))
			continue;
		int last = !*p;
		*p = 0;
		regex_t re;
		if (*start && regcomp(&re, start, REG_EXTENDED | REG_NOSUB)) {
			char fmt[64];
			snprintf(fmt, sizeof(fmt), "--%s: '%%s' is not a regular expression", opt);
			rc = hp_cli_usage_error(fmt, start);
			break;
		}
		if (*start)
			regfree(&re);
		if (last)
			break;
		start = p + 1;
	}
	free(copy);
	return rc;
}

static int check_record_opts(const struct record_opts *o)
{
	if (o->mode && strcmp(o->mode, "stream") && strcmp(o->mode, "ring"))
		return hp_cli_usage_error("--mode must be stream or ring, not '%s'", o->mode);
	if (o->buffer && hp_config_parse_size(o->buffer) < HP_BUFFER_MIN)
		return hp_cli_usage_error("--buffer must be a size of at least 128K, not '%s'", o->buffer);
	if (o->clock && strcmp(o->clock, "tsc") && strcmp(o->clock, "monotonic"))
		return hp_cli_usage_error("--clock must be tsc or monotonic, not '%s'", o->clock);
	char *end = NULL;
	unsigned long depth = o->depth && *o->depth >= '0' && *o->depth <= '9' ? strtoul(o->depth, &end, 10) : 0;
	if (o->depth && (!depth || *end || depth > HP_DEPTH_MAX))
		return hp_cli_usage_error("--depth must be a number from 1 to 128, not '%s'", o->depth);
	if (o->min && hp_config_parse_duration(o->min) == UINT64_MAX)
		return hp_cli_usage_error("--min must be a duration such as 500ns, 10us or 1ms, not '%s'", o->min);
	return check_regexes("exclude", o->exclude) ?: check_regexes("include", o->include);
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
	struct stat st;
	if (o->dir && mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	if (o->dir && stat(dir, &st))
		return -1; /* a dangling link */
	if (o->dir && !S_ISDIR(st.st_mode))
		return errno = ENOTDIR, -1; /* a file: the trace would go to FILE.1 */
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

/* ---- pack ----------------------------------------------------------- */

static void print_pack(FILE *out, const char *trace, const struct hp_pack *p, int verbose)
{
	size_t stored = 0, unused = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct hp_pack_module *m = &p->mod[i];
		stored += m->status == HP_PACK_STORED;
		unused += m->status == HP_PACK_UNUSED;
		if ((verbose && m->status != HP_PACK_UNUSED) || m->status == HP_PACK_REBUILT ||
		    m->status == HP_PACK_MISSING || m->status == HP_PACK_OUTSIDE ||
		    m->kind == HP_PACK_NO_PDB)
			fprintf(out, "hookprof: %s: %s%s%s\n", *m->path ? m->path : "(no path)",
				hp_pack_describe(m), m->source && verbose ? " " : "",
				m->source && verbose ? m->source : "");
	}
	fprintf(out, "hookprof: symbols of %s kept in %s (%zu module%s, %.1f KiB", trace, p->dir,
		stored, stored == 1 ? "" : "s", (double)p->bytes / 1024);
	if (unused)
		fprintf(out, "; %zu more in its map not named by it, --all-modules packs them", unused);
	fputs(")\n", out);
}

static int pack_one(const char *trace, const char *dir, int flags, int verbose)
{
	struct hp_pack p;
	char err[ERRLEN];
	if (hp_pack_trace(trace, dir, flags, &p, err, sizeof(err)))
		return hp_cli_print_error(err);
	print_pack(stderr, trace, &p, verbose);
	hp_pack_free(&p);
	return 0;
}

static int cmd_pack(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "all-modules", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	const char *dir = NULL;
	int flags = 0, c;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'a': flags |= HP_PACK_ALL_MODULES; break;
		case 'h': fputs(pack_help, stdout); return 0;
		default: return hp_cli_usage_error("%s", "bad option for pack");
		}
	}
	if (optind >= argc)
		return hp_cli_usage_error("%s", "pack needs a trace");
	if (dir && argc - optind > 1)
		return hp_cli_usage_error("%s", "pack -o DIR takes one trace");
	int rc = 0;
	for (int i = optind; i < argc; i++)
		rc |= pack_one(argv[i], dir, flags, 1);
	return rc;
}

/* record --keep-symbols: after the run, while the files are still the traced
 * ones. name is in d->dir. */
static void keep_symbols(const struct destination *d, const char *name)
{
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	pack_one(path, NULL, 0, 0);
}

/* Names every trace the run wrote: the root's first. None: the runtime
 * said why, in one line (no instrumented function ran, the file could not
 * be made, ...); a guess here would be a second, and often a wrong one. */
static void report_written(const struct destination *d, const struct hp_cli_names *before, pid_t pid,
			   int keep)
{
	struct hp_cli_names after;
	char root[PATH_MAX];
	const char *base = strrchr(d->output, '/');
	if (!d->shown)
		snprintf(root, sizeof(root), "%s", base ? base + 1 : d->output);
	else
		snprintf(root, sizeof(root), "-%d.hookprof", (int)pid);
	if (hp_cli_list_traces(d->dir, &after) == 0) {
		/* A FIFO or a device is there whatever the run did: the runtime
		 * says when it wrote nothing (no reader), and record says nothing. */
		struct stat st;
		if (!d->shown && stat(d->output, &st) == 0 && S_ISREG(st.st_mode)) {
			fprintf(stderr, "hookprof: trace written to %s\n", d->output);
			if (keep)
				pack_one(d->output, NULL, 0, 0);
		}
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < after.n; i++) {
				const char *n = after.v[i];
				size_t ln = strlen(n), lr = strlen(root);
				int is_root = d->shown ? ln > lr && !strcmp(n + ln - lr, root) : !strcmp(n, root);
				if (hp_cli_listed(before, n) || (is_root != (pass == 0)) || (is_root && !d->shown))
					continue;
				print_written(d, n);
				if (keep)
					keep_symbols(d, n);
			}
	}
	hp_cli_names_free(&after);
}

/* -o names a directory, or a link to a file (or to nothing): the runtime
 * would put the trace in it, or beside it as NAME.1, not at that name. */
static int check_record_output(const char *output)
{
	struct stat st, lst;
	if (!output || lstat(output, &lst))
		return 0;
	int there = stat(output, &st) == 0;
	char what[PATH_MAX + 128];
	if (there && S_ISDIR(st.st_mode))
		snprintf(what, sizeof(what), "-o %s: a directory (-d DIR puts the traces there)", output);
	else if (S_ISLNK(lst.st_mode) && (!there || S_ISREG(st.st_mode)))
		snprintf(what, sizeof(what), "-o %s: a symbolic link (the trace would go beside it, as %s.1): give another name", output, output);
	else
		return 0;
	return hp_cli_print_error(what);
}

/* An old trace at -o's name is moved aside for the run, and goes only when
 * the run wrote a new one: a run that cannot start, or traces nothing,
 * leaves it. aside is "" if there was none. */
static void set_aside(const struct record_opts *o, const struct destination *d, char *aside, size_t len)
{
	aside[0] = 0;
	if (!o->output || !hp_path_is_regular(o->output))
		return;
	const char *base = strrchr(o->output, '/');
	snprintf(aside, len, "%s/.%s.hookprof-old.%d", d->dir, base ? base + 1 : o->output, (int)getpid());
	if (rename(o->output, aside)) {
		aside[0] = 0;
		unlink(o->output); /* -o asks for that name */
	}
}

static void settle_aside(const char *output, const char *aside)
{
	if (!*aside)
		return;
	if (access(output, F_OK) == 0)
		unlink(aside);
	else
		rename(aside, output); /* the runtime, or record, said why there is none */
}

static int run_program(const struct record_opts *o, const char *lib, char **argv,
		       const struct destination *d);

static int run_recorded(const struct record_opts *o, const char *lib, char **argv)
{
	struct destination d;
	char aside[PATH_MAX * 2];
	if (check_record_output(o->output))
		return 1;
	if (destination(o, &d)) {
		char what[PATH_MAX + 128];
		snprintf(what, sizeof(what), "%s%s: %s", o->dir ? "-d " : "",
			 o->dir ? o->dir : "the working directory", strerror(errno));
		return hp_cli_print_error(what);
	}
	set_aside(o, &d, aside, sizeof(aside));
	int status = run_program(o, lib, argv, &d);
	settle_aside(o->output, aside);
	return status;
}

static int run_program(const struct record_opts *o, const char *lib, char **argv,
		       const struct destination *d)
{
	struct hp_cli_names before;
	hp_cli_list_traces(d->dir, &before); /* a directory not there yet holds no old trace */
	int ready[2];
	if (pipe2(ready, O_CLOEXEC))
		return hp_cli_names_free(&before), hp_cli_print_error("cannot create a pipe"), 1;
	pid_t pid = fork();
	if (pid < 0)
		return hp_cli_names_free(&before), hp_cli_print_error("cannot fork"), 1;
	if (pid == 0) {
		if (set_record_env(o, lib, d->output) == 0)
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
	report_written(d, &before, pid, o->keep_symbols);
	hp_cli_names_free(&before);
	return status;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "mode", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, 'd' },
		{ "buffer", required_argument, NULL, 'b' }, { "clock", required_argument, NULL, 'c' },
		{ "keep-symbols", no_argument, NULL, 'k' },
		{ "exclude", required_argument, NULL, 'x' }, { "include", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'D' },   { "min", required_argument, NULL, 'M' },
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
		case 'k': o.keep_symbols = 1; break;
		case 'x': o.exclude = optarg; break;
		case 'i': o.include = optarg; break;
		case 'D': o.depth = optarg; break;
		case 'M': o.min = optarg; break;
		case 'h': fputs(record_help, stdout); return 0;
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

/* Frames after the first hold return addresses: the call is the byte before. */
static void lookup_frame(struct hp_symbols *sym, const struct hp_stack *st, uint32_t i,
			 struct hp_symbol *out)
{
	hp_symbols_lookup(sym, i ? st->pc[i] - 1 : st->pc[i], out);
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

/* ---- report --values ---------------------------------------------------- */

static int values_wanted; /* report --values */

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

static void print_values(int csv, struct value_stats *vs)
{
	if (vs->n)
		qsort(vs->v, vs->n, sizeof(*vs->v), by_value_name);
	if (csv)
		printf("name,count,min,max,mean\n");
	else
		printf("%12s %20s %20s %24s  %s\n", "count", "min", "max", "mean", "value");
	for (size_t i = 0; i < vs->n; i++) {
		const struct value_stat *st = &vs->v[i];
		double mean = (double)(st->sum / (long double)st->count);
		if (csv)
			printf("%s,%llu,%lld,%lld,%.17g\n", st->name, (unsigned long long)st->count,
			       (long long)st->min, (long long)st->max, mean);
		else
			printf("%12llu %20lld %20lld %24.15g  %s\n", (unsigned long long)st->count,
			       (long long)st->min, (long long)st->max, mean, st->name);
	}
}

/* report --values: the values of hookprof_value, per name. */
static int report_values(const struct hp_drive_opts *d, const struct hp_view_opts *vo, char **args,
			 int n)
{
	struct value_stats vs = { 0 };
	struct hp_cli_names all;
	char err[ERRLEN];
	int rc = hp_cli_expand_dirs(args, n, &all, err, sizeof(err));
	for (size_t i = 0; i < all.n && !rc; i++) {
		struct hp_analysis a;
		rc = hp_analyze(all.v[i], d->analyze_flags, collect_values, &vs, &a, err, sizeof(err));
		if (!rc) {
			warn_cut(stderr, &a);
			hp_analysis_free(&a);
		}
	}
	hp_cli_names_free(&all);
	if (!rc) {
		print_values(!strcmp(vo->format, "csv"), &vs);
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

/* The flat view (hp_view_flat.c) over the traces, with the filters. */
static int report_paths(struct hp_drive_opts *d, const struct hp_view_opts *vo, char **args, int n)
{
	struct hp_cli_names all;
	char err[ERRLEN];
	if (values_wanted)
		return report_values(d, vo, args, n);
	if (hp_cli_expand_dirs(args, n, &all, err, sizeof(err))) {
		hp_cli_names_free(&all);
		return hp_cli_print_error(err);
	}
	d->warn = warn_names;
	d->traces_apart = vo->per == HP_PER_PROCESS;
	struct hp_view v = { .ops = hp_view_find("report"), .opts = vo, .out = stdout };
	struct hp_progress progress = { 0 };
	d->progress = hp_progress_reading;
	d->progress_arg = &progress;
	int rc = hp_drive(all.v, (int)all.n, d, &v, err, sizeof(err));
	hp_progress_done(&progress);
	hp_cli_names_free(&all);
	if (!rc && fflush(stdout))
		return hp_cli_print_error("cannot write the report to standard output");
	return rc ? hp_cli_print_error(err) : 0;
}

/* One of --per-process, --per-run, --per-thread. */
static int set_per(struct hp_view_opts *vo, int per)
{
	if (vo->per && vo->per != per)
		return hp_cli_usage_error("%s", "report takes one of --per-process, --per-run, --per-thread");
	vo->per = per;
	return 0;
}

static int parse_report(int argc, char **argv, struct hp_drive_opts *d, struct hp_view_opts *vo)
{
	static const struct option own[] = {
		{ "format", required_argument, NULL, 'f' }, { "sort", required_argument, NULL, 's' },
		{ "limit", required_argument, NULL, 'l' },  { "partial", no_argument, NULL, 'p' },
		{ "per-process", no_argument, NULL, 'P' },  { "per-run", no_argument, NULL, 'R' },
		{ "per-thread", no_argument, NULL, 'T' },  { "values", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },         { 0, 0, 0, 0 },
	};
	struct option opts[24];
	char err[ERRLEN];
	int c, index, bad;
	hp_viewcmd_options(own, opts, sizeof(opts) / sizeof(opts[0]));
	while ((c = getopt_long(argc, argv, "h", opts, &index)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "csv") && strcmp(optarg, "table"))
				return hp_cli_usage_error("--format must be table or csv, not '%s'", optarg);
			vo->format = !strcmp(optarg, "csv") ? "csv" : "table";
			break;
		case 's':
			if (hp_cli_parse_sort(optarg, (enum hp_sort *)&vo->sort))
				return hp_cli_usage_error("--sort must be self, total, calls, avg, max or name, not '%s'", optarg);
			break;
		case 'l':
			if (hp_cli_parse_limit(optarg, &vo->limit))
				return hp_cli_usage_error("--limit must be a number, not '%s'", optarg);
			break;
		case 'p': d->analyze_flags = HP_ANALYZE_ALLOW_PARTIAL; break;
		case 'P': if ((bad = set_per(vo, HP_PER_PROCESS))) return bad; break;
		case 'R': if ((bad = set_per(vo, HP_PER_RUN))) return bad; break;
		case 'T': if ((bad = set_per(vo, HP_PER_THREAD))) return bad; break;
		case 'V': values_wanted = 1; break;
		case HP_FILTER_OPT:
			if (hp_filter_set(&d->filter, opts[index].name, optarg, err, sizeof(err)))
				return hp_cli_usage_error("%s", err);
			break;
		case 'h': fputs(report_help, stdout); return -1;
		default: return hp_cli_usage_error("%s", "bad option for report");
		}
	}
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	struct hp_drive_opts d = { 0 };
	struct hp_view_opts vo = { .format = "table" };
	int rc = parse_report(argc, argv, &d, &vo);
	if (!rc && optind < argc) {
		rc = report_paths(&d, &vo, argv + optind, argc - optind);
	} else if (!rc) {
		char newest[PATH_MAX];
		char *one[1] = { newest };
		if (hp_cli_newest_trace(newest, sizeof(newest)))
			rc = hp_cli_print_error("no trace given and no *.hookprof file in this directory");
		else
			rc = report_paths(&d, &vo, one, 1);
	}
	hp_filter_free(&d.filter);
	return rc < 0 ? 0 : rc;
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

/* Durations shorter than the clock's step read as 0: say how coarse it is. */
static void print_clock(const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	uint32_t step = in->clock_step;
	printf("clock:    %s, %.4f ticks per ns, ", in->clock_source == HP_CLOCK_TSC ? "tsc" : "monotonic",
	       1.0 / a->tb.ns_per_tick);
	if (step) /* the runtime measured it at start */
		printf("resolution %u tick%s = %.1f ns (shorter calls can read 0 ns)\n", step,
		       step == 1 ? "" : "s", step * a->tb.ns_per_tick);
	else
		printf("resolution not in the trace (1 tick = %.3f ns)\n", a->tb.ns_per_tick);
}

/* The run's own spacing, which caps the calibration (hp_spacing.h), and
 * what the reader takes out per call. */
static void print_spacing(const struct hp_analysis *a)
{
	double in, out;
	struct hp_spacing_cost c;
	char err[512];
	if (!hp_trace_hook_cost(&a->info, &in, &out) ||
	    hp_spacing_measure(a->path, 2 * in, 2 * out, &c, err, sizeof(err)))
		return;
	double ns = a->tb.ns_per_tick;
	if (c.has_inside)
		printf("; in the run's event spacing %.1f ns in the callee (%llu short calls)", c.inside * ns,
		       (unsigned long long)c.inside_calls);
	if (c.has_outside)
		printf("%s %.1f ns in the caller (%llu gaps)", c.has_inside ? "," : "; in the run's event spacing",
		       c.outside * ns, (unsigned long long)c.outside_gaps);
	hp_spacing_cap(&c, &in, &out);
	printf("; taken out of the times shown: %.1f ns per call (%.1f in the callee, %.1f in its caller)\n",
	       (in + out) * ns, in * ns, out * ns);
}

/* What a hook pair cost, as the run measured it at its start and end. */
static void print_hook_cost(const struct hp_analysis *a)
{
	static const char *const when[] = { "start", "end" };
	const struct hp_trace_info *in = &a->info;
	int any = 0;
	for (int i = HP_CALIBRATION_START; i <= HP_CALIBRATION_END; i++) {
		const struct hp_calib *c = &in->calib[i];
		if (!c->pairs)
			continue;
		printf("%s%s %.1f ns per call (%.1f in the callee, %.1f in its caller; %u pairs)",
		       any ? "; " : "hooks:    ", when[i], (c->inside + c->outside) * a->tb.ns_per_tick,
		       c->inside * a->tb.ns_per_tick, c->outside * a->tb.ns_per_tick, c->pairs);
		any = 1;
	}
	if (any)
		print_spacing(a);
	else
		printf("hooks:    cost not measured in this trace: times include it\n");
}

/* Why events were lost, in threads and outside: a line per reason. */
static void print_loss_reasons(const struct hp_trace_info *in)
{
	static const char *const why[] = {
		[0] = "for a reason this hookprof does not know",
		[HP_LOST_RING] = "overwritten by ring mode",
		[HP_LOST_REENTRY] = "raised inside hookprof's own code (an instrumented function it "
				    "called; a signal handler's beyond 64 while it switched chunks)",
		[HP_LOST_NO_BUFFER] = "no buffer could be mapped",
		[HP_LOST_LATE] = "after the final flush",
		[HP_LOST_UNFILLED] = "a slot never filled (a signal handler that interrupted the hook "
				     "did not return in time, or jumped away)",
	};
	for (size_t r = 0; r < sizeof(why) / sizeof(why[0]); r++)
		if (in->lost_by_reason[r])
			printf("          %llu %s\n", (unsigned long long)in->lost_by_reason[r], why[r]);
}

static void print_buffer(const struct hp_trace_info *in)
{
	uint64_t b = in->buffer_bytes;
	if (!b)
		printf("buffer:   not in the trace (an older runtime)\n");
	else if (b % (1u << 20) == 0)
		printf("buffer:   %llu MiB per thread\n", (unsigned long long)(b >> 20));
	else
		printf("buffer:   %llu KiB per thread\n", (unsigned long long)(b >> 10));
}

/* FILTER (1.3): what the run was asked to leave out. */
static void print_filters(const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	char text[8192];
	hp_trace_filters_text(in, text, sizeof(text));
	if (!*text)
		return;
	printf("filters:  %s\n", text);
	if (in->filter_min_ns)
		printf("          min left out %llu calls, %.0f ns in all\n",
		       (unsigned long long)in->filter_min_calls,
		       hp_ticks_to_ns(&a->tb, in->filter_min_ticks));
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
	print_clock(a);
	print_hook_cost(a);
	printf("mode:     %s\n", in->flags & 1 ? "ring" : "stream");
	print_buffer(in);
	printf("duration: %.9f s%s\n", hp_analysis_duration_ns(a) / 1e9,
	       a->partial && a->last_tick ? " (to the last event: the run was cut short)" : "");
	printf("times:    wall-clock; a function's time in a report is summed over its threads\n");
	if (a->decoded)
		printf("events:   %llu (%u functions)\n", (unsigned long long)a->events, a->funcs.n);
	else
		printf("events:   %llu\n", (unsigned long long)a->events);
	printf("lost:     %llu outside threads, %llu in threads\n", (unsigned long long)in->lost_global,
	       (unsigned long long)hp_trace_lost_in_threads(in));
	print_loss_reasons(in);
	print_filters(a);
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
		hp_cli_print_crash(stdout, "", sym, a);
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

/* Progress of the read, on a terminal. */
static void show_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)total;
	hp_progress_update(arg, done);
}

/*
 * The header needs no decoding: the EVENTS records' headers count the
 * events per stream, and a trace cut short has only the ticks of its
 * events scanned (for when it ended). Only the frames a crash left open
 * need the events decoded, of a trace with a CRASH record: then the whole
 * trace is (the function dictionary is shared by all the streams).
 */
static int read_info(const char *path, struct hp_analysis *a, char *err, size_t errlen)
{
	struct hp_progress progress;
	char what[PATH_MAX + 16];
	struct stat st;
	snprintf(what, sizeof(what), "reading %s", path);
	hp_progress_start(&progress, what, stat(path, &st) ? 0 : (uint64_t)st.st_size);
	int rc = hp_summarize(path, HP_ANALYZE_ALLOW_PARTIAL, show_progress, &progress, a, err, errlen);
	if (!rc && a->info.crash.present) {
		hp_analysis_free(a);
		rc = hp_analyze_progress(path, HP_ANALYZE_ALLOW_PARTIAL, NULL, NULL, show_progress,
					 &progress, a, err, errlen);
	}
	hp_progress_done(&progress);
	return rc;
}

static int info_of(const char *path)
{
	struct hp_analysis a;
	char err[ERRLEN];
	if (read_info(path, &a, err, sizeof(err)))
		return hp_cli_print_error(err);
	struct hp_symbols *sym = NULL;
	if (has_stacks(&a.info) &&
	    !(sym = hp_symbols_for_trace(a.path, a.info.modules, a.info.nmodules, err, sizeof(err)))) {
		hp_analysis_free(&a);
		return hp_cli_print_error(err);
	}
	print_info(&a, sym);
	hp_symbols_free(sym);
	hp_analysis_free(&a);
	return fflush(stdout) ? hp_cli_print_error("cannot write to standard output") : 0;
}

/* Each trace in turn, a blank line between them; the newest here if none. */
static int cmd_info(int argc, char **argv)
{
	if (asks_help(argc, argv))
		return fputs(info_help, stdout), 0;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1])
			return hp_cli_usage_error("bad option for info: '%s'", argv[i]);
	struct hp_cli_names all;
	char err[ERRLEN];
	if (hp_cli_traces(argv + 1, argc - 1, &all, err, sizeof(err))) {
		hp_cli_names_free(&all);
		return hp_cli_print_error(err);
	}
	int rc = 0;
	for (size_t i = 0; i < all.n && !rc; i++) {
		if (i)
			putchar('\n');
		rc = info_of(all.v[i]);
	}
	hp_cli_names_free(&all);
	return rc;
}

struct dump_state {
	struct hp_rows names; /* row i: function id i, named apart from the others */
	const struct hp_analysis *a;
	uint64_t tick0;       /* the process start: the first CLOCK or the first event */
};

/* A control event that is no frame: its line. */
static void dump_control(const struct hp_analysis *a, uint32_t tid, double t, const struct hp_ev *e)
{
	static const char *const what[] = {
		[HP_EV_PAUSE] = "pause", [HP_EV_RESUME] = "resume",
		[HP_EV_STOP] = "stop", [HP_EV_START] = "start", [HP_EV_OWN] = "hookprof",
	};
	const char *s = hp_trace_string(&a->info, e->func);
	if (e->kind == HP_EV_MARK)
		printf("%u %.0f mark %s\n", tid, t, s ? s : "?");
	else if (e->kind == HP_EV_VALUE)
		printf("%u %.0f value %s %lld\n", tid, t, s ? s : "?", (long long)e->value);
	else if (e->kind < sizeof(what) / sizeof(what[0]) && what[e->kind])
		printf("%u %.0f %s\n", tid, t, what[e->kind]);
}

/* The regions the reader repaired (hookprof_region_begin/end misused). */
static void warn_regions(const struct hp_analysis *a)
{
	for (size_t i = 0; i < a->nwarnings; i++)
		fprintf(stderr, "hookprof: warning: %s: %s\n", a->path, a->warnings[i]);
	if (a->warnings_more)
		fprintf(stderr, "hookprof: warning: %s: %llu more region repairs\n", a->path,
			(unsigned long long)a->warnings_more);
}

static int dump_event(void *arg, uint32_t stream, const struct hp_ev *ev, const struct hp_ev *next)
{
	(void)next;
	struct dump_state *d = arg;
	const struct hp_analysis *a = d->a;
	if (!ev)
		return 0;
	uint32_t tid = stream < a->info.nstreams ? a->info.streams[stream].tid : 0;
	if (ev->kind == HP_EV_RESET) {
		printf("%u - reset (events were lost here)\n", tid);
		return ferror(stdout) ? -1 : 0;
	}
	if (ev->kind == HP_EV_REGION_REPAIR)
		return 0; /* said on stderr */
	double t = (double)(ev->tick - d->tick0) * a->tb.ns_per_tick;
	if (ev->kind != HP_EV_ENTER && ev->kind != HP_EV_EXIT) {
		dump_control(a, tid, t, ev);
		return ferror(stdout) ? -1 : 0;
	}
	const char *name = ev->func < d->names.n ? hp_row_name(&d->names.row[ev->func]) : "?";
	printf("%u %.0f %s %s\n", tid, t, ev->kind == HP_EV_ENTER ? "enter" : "exit", name);
	return ferror(stdout) ? -1 : 0;
}

/* The first pass learns every function of the trace, so that two of one
 * name print apart from the first event on (the warnings about names are
 * those of the functions named), and where its records lie, for the second
 * pass, which merges the threads by time (hp_merge.h). */
static int dump_names(struct dump_state *d, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct hp_symbols *sym = hp_symbols_for_trace(a->path, a->info.modules, a->info.nmodules, err, errlen);
	if (!sym)
		return -1;
	int rc = hp_rows_of_functions(&d->names, a, sym);
	if (rc)
		snprintf(err, errlen, "out of memory");
	size_t iter = 0;
	const char *why;
	while (!rc && (why = hp_symbols_next_problem(sym, &iter)))
		rc = hp_rows_add_problem(&d->names, why);
	hp_symbols_free(sym);
	return rc;
}

/* Times from the process start: never negative, whatever thread flushed first. */
static uint64_t process_start(const struct hp_analysis *a)
{
	uint64_t t = a->info.nclocks ? a->info.clock_tick[0] : a->first_tick;
	if (a->has_first_tick && a->first_tick < t)
		t = a->first_tick;
	return t;
}

static int dump_trace(const char *path, int flags, struct dump_state *d, char *err, size_t errlen)
{
	struct hp_analysis a;
	struct hp_record_index ix = { 0 };
	if (hp_analyze_indexed(path, flags, &a, &ix, err, errlen)) {
		hp_record_index_free(&ix);
		return -1;
	}
	d->a = &a;
	d->tick0 = process_start(&a);
	int rc = dump_names(d, &a, err, errlen);
	if (!rc)
		printf("# tid time_ns enter|exit function (threads merged by time; time from the process start)\n");
	if (!rc && hp_merge(path, &a, &ix, 0, dump_event, d, err, errlen)) {
		if (!*err)
			snprintf(err, errlen, "cannot write to standard output");
		rc = -1;
	}
	if (!rc) {
		warn_cut(stderr, &a);
		warn_regions(&a);
	}
	hp_record_index_free(&ix);
	hp_analysis_free(&a);
	return rc;
}

static int cmd_dump(int argc, char **argv)
{
	if (asks_help(argc, argv))
		return fputs(dump_help, stdout), 0;
	int flags = 0;
	if (argc == 3 && !strcmp(argv[1], "--partial")) {
		flags = HP_ANALYZE_ALLOW_PARTIAL;
		argv++, argc--;
	}
	if (argc != 2)
		return hp_cli_usage_error("%s", "dump takes one trace file");
	struct dump_state d = { 0 };
	char err[ERRLEN] = "";
	if (dump_trace(argv[1], flags, &d, err, sizeof(err))) {
		hp_rows_free(&d.names);
		return hp_cli_print_error(err);
	}
	if (fflush(stdout)) {
		hp_rows_free(&d.names);
		return hp_cli_print_error("cannot write to standard output");
	}
	for (size_t i = 0; i < d.names.nproblems; i++)
		warn_names(d.names.problem[i]);
	hp_rows_free(&d.names);
	return 0;
}

/* hookprof help COMMAND: the command's own help, as COMMAND --help. */
static int cmd_help(int argc, char **argv)
{
	if (argc < 2)
		return print_usage(stdout), 0;
	const char *cmd = argv[1];
	static const struct {
		const char *name;
		const char *text;
	} own[] = { { "record", record_help }, { "report", report_help },
		    { "info", info_help },     { "dump", dump_help },
		    { "pack", pack_help } };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(cmd, own[i].name))
			return fputs(own[i].text, stdout), 0;
	const struct hp_view_ops *view = hp_view_find(cmd);
	if (!strcmp(cmd, "export") || (view && !(view->flags & HP_VIEW_EXPORT))) {
		char *help_argv[] = { argv[1], "--help", NULL };
		return hp_viewcmd_run(cmd, 2, help_argv);
	}
	if (!strcmp(cmd, "diff")) {
		char *help_argv[] = { argv[1], "--help", NULL };
		return hp_diff_run(2, help_argv);
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "version"))
		return print_usage(stdout), 0;
	return hp_cli_usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return print_usage(stderr), 2;
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
		return cmd_help(argc - 1, argv + 1);
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version"))
		return puts("hookprof " VERSION), 0;
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "diff"))
		return hp_diff_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(cmd, "pack"))
		return cmd_pack(argc - 1, argv + 1);
	const struct hp_view_ops *view = hp_view_find(cmd);
	if (!strcmp(cmd, "export") || (view && !(view->flags & HP_VIEW_EXPORT)))
		return hp_viewcmd_run(cmd, argc - 1, argv + 1);
	return hp_cli_usage_error("unknown command '%s'", cmd);
}
