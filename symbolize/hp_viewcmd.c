/*
 * hp_viewcmd.c - the commands that run a view over traces: tree, graph,
 * replay and export. They share the options (hp_viewcmd.h); what differs
 * is which view, which formats, and what the operands are.
 */
#define _GNU_SOURCE
#include "hp_viewcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_cli.h"
#include "hp_drive.h"
#include "hp_path.h"
#include "hp_progress.h"

#define ERRLEN 1024

static const char common_help[] =
	"  -o, --output=FILE     write there instead of to standard output\n"
	"  --partial             read a trace with no end record, or one cut short\n"
	"  -h, --help            this text\n";

const char hp_viewcmd_filter_help[] =
	"filters (every view and report):\n"
	"  --thread=TID|NAME     only that thread\n"
	"  --depth=N             only calls fewer than N shown calls deep\n"
	"  --function=REGEX      only calls of matching functions and what they call\n"
	"  --exclude=REGEX       hide matching functions (their time goes to their caller)\n"
	"  --min=DURATION        hide calls shorter than that (500ns, 2us, 1.5ms, 3s)\n"
	"  --time=FROM,TO        only calls that start in that window (seconds from the start)\n"
	"  --raw                 times as measured: hookprof's own cost (its hooks, measured\n"
	"                        in the run, and its buffer switches) left in\n";

static const struct option filter_options[] = {
	{ "thread", required_argument, NULL, HP_FILTER_OPT },
	{ "depth", required_argument, NULL, HP_FILTER_OPT },
	{ "function", required_argument, NULL, HP_FILTER_OPT },
	{ "exclude", required_argument, NULL, HP_FILTER_OPT },
	{ "min", required_argument, NULL, HP_FILTER_OPT },
	{ "time", required_argument, NULL, HP_FILTER_OPT },
	{ "raw", no_argument, NULL, HP_FILTER_OPT },
	{ 0, 0, 0, 0 },
};

int hp_viewcmd_options(const struct option *own, struct option *out, size_t cap)
{
	size_t n = 0;
	for (const struct option *o = own; o->name; o++)
		if (n < cap)
			out[n++] = *o;
	for (const struct option *o = filter_options; o->name; o++)
		if (n < cap)
			out[n++] = *o;
	if (n >= cap)
		return -1;
	out[n] = (struct option){ 0, 0, 0, 0 };
	return 0;
}

static void warn_line(const char *line)
{
	fprintf(stderr, "hookprof: warning: %s\n", line);
}

/* A format the view takes: one of its "|"-separated formats. */
static int takes_format(const struct hp_view_ops *ops, const char *format)
{
	const char *p = ops->formats;
	size_t n = strlen(format);
	while (p && *p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, format, n))
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

static char *default_format(const struct hp_view_ops *ops)
{
	const char *p = ops->formats ? ops->formats : ops->name;
	return strndup(p, strcspn(p, "|"));
}

static void print_help(const char *command, const struct hp_view_ops *ops)
{
	if (!strcmp(command, "export")) {
		printf("usage: hookprof export --format=FORMAT [options] [TRACE|DIR...]\n"
		       "  writes the traces (merged; no TRACE: the newest *.hookprof here) for\n"
		       "  another viewer. FORMAT:\n");
		for (size_t i = 0; hp_views[i]; i++)
			if (hp_views[i]->flags & HP_VIEW_EXPORT)
				printf("    %-12s %s\n", hp_views[i]->name, hp_views[i]->summary);
	} else {
		printf("usage: hookprof %s [options] %s\n  %s\n", command,
		       ops->operands ? ops->operands : "[TRACE|DIR...]", ops->summary);
		if (ops->formats && strchr(ops->formats, '|'))
			printf("  --format=%s (default %.*s)\n", ops->formats,
			       (int)strcspn(ops->formats, "|"), ops->formats);
	}
	if (ops && ops->help)
		fputs(ops->help, stdout);
	fputs(hp_viewcmd_filter_help, stdout);
	fputs(common_help, stdout);
}

struct cmdline {
	const char *format;
	const char *output;
	int output_regular; /* opened as a regular file: removed if the run fails */
	int output_linked;  /* and it has other hard links: emptied instead */
	char *tmp;          /* written there, renamed to target once whole */
	char *target;
	int partial;
	struct hp_view_opts vo;
	struct hp_drive_opts dopts;
	char **operands;
	int noperands;
};

static int parse(int argc, char **argv, const char *command, const struct hp_view_ops *ops,
		 struct cmdline *c)
{
	static const struct option own[] = {
		{ "format", required_argument, NULL, 'f' }, { "output", required_argument, NULL, 'o' },
		{ "partial", no_argument, NULL, 'p' },      { "limit", required_argument, NULL, 'l' },
		{ "sort", required_argument, NULL, 's' },   { "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct option opts[16];
	char err[ERRLEN];
	int ch, index;
	hp_viewcmd_options(own, opts, sizeof(opts) / sizeof(opts[0]));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "ho:", opts, &index)) != -1) {
		switch (ch) {
		case 'f': c->format = optarg; break;
		case 'o': c->output = optarg; break;
		case 'p': c->partial = 1; break;
		case 'l':
			if (hp_cli_parse_limit(optarg, &c->vo.limit))
				return hp_cli_usage_error("--limit must be a number, not '%s'", optarg);
			break;
		case 's':
			if (hp_cli_parse_sort(optarg, (enum hp_sort *)&c->vo.sort))
				return hp_cli_usage_error("--sort must be self, total, calls, avg, max or name, not '%s'", optarg);
			break;
		case HP_FILTER_OPT:
			if (hp_filter_set(&c->dopts.filter, opts[index].name, optarg, err, sizeof(err)))
				return hp_cli_usage_error("%s", err);
			break;
		case 'h': print_help(command, ops); return -1;
		default: return hp_cli_usage_error("bad option for %s", command);
		}
	}
	c->operands = argv + optind;
	c->noperands = argc - optind;
	return 0;
}

/* Operands naming a file or a directory are traces; the others go to the
 * view (graph's functions), if it takes any. */
static int split_operands(struct cmdline *c, const struct hp_view_ops *ops, char **traces,
			  int *ntraces)
{
	*ntraces = 0;
	c->vo.args = c->operands;
	c->vo.nargs = 0;
	for (int i = 0; i < c->noperands; i++) {
		struct stat st;
		char *arg = c->operands[i];
		if (!ops->operands || !stat(arg, &st))
			traces[(*ntraces)++] = arg;
		else
			c->vo.args[c->vo.nargs++] = arg;
	}
	return 0;
}

/*
 * A regular file (or a link to one) or a new name is written under a
 * temporary name beside it and renamed over it once whole: a run that fails
 * leaves what was there, and a link is followed, not replaced by a file. A
 * FIFO or a device is written as named and never removed. Where no
 * temporary file can be made (a directory we cannot write), the file is
 * another user's, or it has other hard links (a rename would part it from
 * them), the file itself is written, and removed if the run fails, as long
 * as it is no link of either kind (one with hard links is emptied).
 */

/* The temporary file, while it is written: a Ctrl-C or kill takes it along. */
static const char *volatile tmp_being_written;

static void remove_tmp_and_die(int sig)
{
	const char *tmp = tmp_being_written;
	if (tmp)
		unlink(tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void remove_tmp_on_signals(const char *tmp)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	tmp_being_written = tmp;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa = { .sa_handler = tmp ? remove_tmp_and_die : SIG_DFL };
		sigaction(sigs[i], &sa, NULL);
	}
}

static FILE *open_direct(struct cmdline *c, char *err, size_t errlen)
{
	FILE *f = fopen(c->output, "w");
	if (!f)
		snprintf(err, errlen, "%s: %s", c->output, strerror(errno));
	struct stat st;
	c->output_regular = f && !fstat(fileno(f), &st) && S_ISREG(st.st_mode) &&
			    hp_path_is_regular(c->output);
	c->output_linked = c->output_regular && st.st_nlink > 1;
	return f;
}

static FILE *open_output(struct cmdline *c, const struct hp_view_ops *ops, char *err,
			 size_t errlen)
{
	if (!c->output || !strcmp(c->output, "-")) {
		if ((ops->flags & HP_VIEW_BINARY) && isatty(STDOUT_FILENO)) {
			snprintf(err, errlen, "%s output is binary: give -o FILE, or redirect it", ops->name);
			return NULL;
		}
		return stdout;
	}
	struct stat st, lst;
	int exists = stat(c->output, &st) == 0;
	if (exists && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", c->output, strerror(EISDIR));
		return NULL;
	}
	/* A FIFO, a device; a dangling link; another's file, which we could not
	 * give back its owner, nor replace in a sticky directory (/tmp); a file
	 * with other hard links. */
	if ((exists && !S_ISREG(st.st_mode)) || (!exists && !lstat(c->output, &lst)) ||
	    (exists && ((st.st_uid != geteuid() && geteuid() != 0) || st.st_nlink > 1)))
		return open_direct(c, err, errlen);
	c->target = exists ? realpath(c->output, NULL) : strdup(c->output);
	const char *slash = c->target ? strrchr(c->target, '/') : NULL;
	if (c->target &&
	    asprintf(&c->tmp, "%.*s.%s.XXXXXX", slash ? (int)(slash - c->target + 1) : 0, c->target,
		     slash ? slash + 1 : c->target) < 0)
		c->tmp = NULL;
	int fd = c->tmp ? mkostemp(c->tmp, O_CLOEXEC) : -1;
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (f) {
		/* The owner and mode it had, or what fopen would have given a
		 * new file. */
		mode_t mask = umask(0);
		umask(mask);
		if (exists && fchown(fd, st.st_uid, st.st_gid)) {
			/* only root may give a file away: it stays ours */
		}
		fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask);
		remove_tmp_on_signals(c->tmp);
	} else {
		if (fd >= 0) {
			close(fd);
			unlink(c->tmp);
		}
		free(c->tmp);
		free(c->target);
		c->tmp = c->target = NULL;
		return open_direct(c, err, errlen);
	}
	return f;
}

static int close_output(FILE *out, struct cmdline *c, int failed, char *err, size_t errlen)
{
	int bad = fflush(out) != 0 || ferror(out);
	if (out != stdout && fclose(out))
		bad = 1;
	if (bad && !failed)
		snprintf(err, errlen, "%s: could not be written", c->output ? c->output : "standard output");
	if (c->tmp)
		remove_tmp_on_signals(NULL); /* before it gets its name */
	if (c->tmp && !bad && !failed && rename(c->tmp, c->target)) {
		snprintf(err, errlen, "%s: %s", c->output, strerror(errno));
		bad = 1;
	}
	if (c->tmp && (bad || failed))
		unlink(c->tmp); /* what was there stays */
	else if ((bad || failed) && c->output_linked)
		truncate(c->output, 0); /* its other names keep no half file */
	else if ((bad || failed) && c->output_regular)
		unlink(c->output); /* no half file left that looks whole */
	free(c->tmp);
	free(c->target);
	c->tmp = c->target = NULL;
	return bad;
}

/* -o names one of the traces to read: opening it would empty it first. */
static int reads_output(const char *output, const struct hp_cli_names *traces, char *err,
			size_t errlen)
{
	for (size_t i = 0; i < traces->n; i++)
		if (hp_path_same_file(output, traces->v[i])) {
			snprintf(err, errlen, "-o %s: that is a trace to read; give another name", output);
			return 1;
		}
	return 0;
}

static int run(struct cmdline *c, const struct hp_view_ops *ops)
{
	char err[ERRLEN] = "";
	int ntraces;
	char **traces = calloc((size_t)c->noperands + 1, sizeof(*traces));
	if (!traces)
		return hp_cli_print_error("out of memory");
	split_operands(c, ops, traces, &ntraces);
	struct hp_cli_names all = { 0 };
	int rc = hp_cli_traces(traces, ntraces, &all, err, sizeof(err));
	free(traces);
	if (!rc && c->output && reads_output(c->output, &all, err, sizeof(err)))
		rc = -1;
	FILE *out = rc ? NULL : open_output(c, ops, err, sizeof(err));
	if (!out) {
		hp_cli_names_free(&all);
		return hp_cli_print_error(err);
	}
	c->dopts.analyze_flags = c->partial ? HP_ANALYZE_ALLOW_PARTIAL : 0;
	c->dopts.warn = warn_line;
	struct hp_view v = { .ops = ops, .opts = &c->vo, .out = out };
	struct hp_progress progress = { 0 };
	c->dopts.progress = hp_progress_reading;
	c->dopts.progress_arg = &progress;
	int failed = hp_drive(all.v, (int)all.n, &c->dopts, &v, err, sizeof(err)) != 0;
	hp_progress_done(&progress);
	failed |= close_output(out, c, failed, err, sizeof(err));
	hp_cli_names_free(&all);
	return failed ? hp_cli_print_error(err) : 0;
}

int hp_viewcmd_run(const char *command, int argc, char **argv)
{
	const struct hp_view_ops *ops = strcmp(command, "export") ? hp_view_find(command) : NULL;
	struct cmdline c = { .vo.sort = -1 };
	int rc = parse(argc, argv, command, ops, &c);
	if (rc) {
		hp_filter_free(&c.dopts.filter);
		return rc < 0 ? 0 : rc;
	}
	char *format = NULL;
	if (!ops) { /* export: the format names the view */
		if (!c.format)
			rc = hp_cli_usage_error("%s", "export needs --format=FORMAT (hookprof export --help lists them)");
		else if (!(ops = hp_view_find(c.format)) || !(ops->flags & HP_VIEW_EXPORT))
			rc = hp_cli_usage_error("export: no format '%s' (hookprof export --help lists them)", c.format);
	} else if (c.format && !takes_format(ops, c.format)) {
		char what[256];
		snprintf(what, sizeof(what), "%s: --format must be %s, not '%%s'", command,
			 ops->formats ? ops->formats : ops->name);
		rc = hp_cli_usage_error(what, c.format);
	}
	if (!rc) {
		c.vo.format = c.format ? c.format : (format = default_format(ops));
		rc = c.vo.format ? run(&c, ops) : hp_cli_print_error("out of memory");
	}
	free(format);
	hp_filter_free(&c.dopts.filter);
	return rc;
}
