/*
 * hp_cli.c - what the hookprof commands share.
 */
#define _GNU_SOURCE
#include "hp_cli.h"

#include "hp_format.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int hp_cli_usage_error(const char *fmt, const char *arg)
{
	fputs("hookprof: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (hookprof help COMMAND lists its options)\n", stderr);
	return 2;
}

int hp_cli_print_error(const char *err)
{
	fprintf(stderr, "hookprof: %s\n", err);
	return 1;
}


/* A trace's name: *.hookprof, or a numbered *.hookprof.N. */
static int is_trace_name(const char *name)
{
	const char *dot = strstr(name, ".hookprof");
	if (!dot || dot == name)
		return 0;
	const char *rest = dot + 9;
	if (!*rest)
		return 1;
	if (*rest != '.' || !rest[1])
		return 0;
	return strspn(rest + 1, "0123456789") == strlen(rest + 1);
}

void hp_cli_names_free(struct hp_cli_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (struct hp_cli_names){ 0 };
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files in dir named like traces, sorted; -1 if dir cannot be read. */
int hp_cli_list_traces(const char *dir, struct hp_cli_names *l)
{
	*l = (struct hp_cli_names){ 0 };
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		char **v;
		struct stat st; /* not a FIFO, whose open would wait, nor a directory */
		if (!is_trace_name(e->d_name) || fstatat(dirfd(d), e->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode) || !(v = realloc(l->v, (l->n + 1) * sizeof(*v))))
			continue;
		l->v = v;
		if ((l->v[l->n] = strdup(e->d_name)))
			l->n++;
	}
	closedir(d);
	if (l->n) /* l->v is NULL when nothing was listed */
		qsort(l->v, l->n, sizeof(*l->v), by_name);
	return 0;
}

int hp_cli_listed(const struct hp_cli_names *l, const char *name)
{
	return l->n && bsearch(&name, l->v, l->n, sizeof(*l->v), by_name) != NULL;
}


/* The newest *.hookprof in the working directory. */
int hp_cli_newest_trace(char *out, size_t len)
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


int hp_cli_parse_limit(const char *s, unsigned long *out)
{
	if (*s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long n = strtoul(s, &end, 10);
	if (*end || errno)
		return -1;
	*out = n;
	return 0;
}

int hp_cli_parse_sort(const char *s, enum hp_sort *key)
{
	static const char *const names[] = { "self", "total", "calls", "avg", "max", "name" };
	for (int i = 0; i < 6; i++)
		if (!strcmp(s, names[i])) {
			*key = (enum hp_sort)i;
			return 0;
		}
	return -1;
}


/* Each DIR among the arguments becomes the traces in it. */
int hp_cli_expand_dirs(char **args, int n, struct hp_cli_names *out, char *err, size_t errlen)
{
	*out = (struct hp_cli_names){ 0 };
	for (int i = 0; i < n; i++) {
		struct stat st;
		struct hp_cli_names in = { 0 };
		int is_dir = stat(args[i], &st) == 0 && S_ISDIR(st.st_mode);
		if (is_dir && hp_cli_list_traces(args[i], &in)) {
			snprintf(err, errlen, "%s: cannot read the directory", args[i]);
			return -1;
		}
		if (is_dir && !in.n) {
			snprintf(err, errlen, "%s: no trace in this directory", args[i]);
			return -1;
		}
		size_t add = is_dir ? in.n : 1;
		char **v = realloc(out->v, (out->n + add) * sizeof(*v));
		if (!v) {
			hp_cli_names_free(&in);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		out->v = v;
		for (size_t j = 0; j < add; j++) {
			if (!is_dir)
				v[out->n] = strdup(args[i]);
			else if (asprintf(&v[out->n], "%s/%s", args[i], in.v[j]) < 0)
				v[out->n] = NULL;
			if (v[out->n])
				out->n++;
		}
		hp_cli_names_free(&in);
	}
	return 0;
}


int hp_cli_traces(char **args, int n, struct hp_cli_names *out, char *err, size_t errlen)
{
	char newest[PATH_MAX];
	char *one[1] = { newest };
	if (!n) {
		if (hp_cli_newest_trace(newest, sizeof(newest))) {
			*out = (struct hp_cli_names){ 0 };
			snprintf(err, errlen, "no trace given and no *.hookprof file in this directory");
			return -1;
		}
		args = one;
		n = 1;
	}
	return hp_cli_expand_dirs(args, n, out, err, errlen);
}

/* ---- crash backtraces (CRASH records) ---------------------------------- */

static const char *signal_name(uint32_t sig, char *buf, size_t len)
{
	const char *abbrev = sig < 128 ? sigabbrev_np((int)sig) : NULL;
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %u", sig);
	return buf;
}

/* A trace recorded on Windows gives the exception's code (an NTSTATUS,
 * 0x80000000 and up) where Linux gives a signal (docs/format.md, CRASH). */
#define HP_EXCEPTION_MIN 0x80000000u
#define HP_EXCEPTION_ACCESS_VIOLATION 0xc0000005u

static const char *exception_name(uint32_t code, char *buf, size_t len)
{
	static const struct {
		uint32_t code;
		const char *name;
	} known[] = {
		{ HP_EXCEPTION_ACCESS_VIOLATION, "EXCEPTION_ACCESS_VIOLATION" },
		{ 0xc0000006u, "EXCEPTION_IN_PAGE_ERROR" },
		{ 0xc000001du, "EXCEPTION_ILLEGAL_INSTRUCTION" },
		{ 0xc0000094u, "EXCEPTION_INT_DIVIDE_BY_ZERO" },
		{ 0xc0000096u, "EXCEPTION_PRIV_INSTRUCTION" },
		{ 0xc00000fdu, "EXCEPTION_STACK_OVERFLOW" },
		{ 0xc0000409u, "STATUS_STACK_BUFFER_OVERRUN" },
		{ 0x80000003u, "EXCEPTION_BREAKPOINT" },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].code == code)
			return known[i].name;
	snprintf(buf, len, "exception 0x%08x", code);
	return buf;
}

static void print_exception(FILE *out, const char *pre, const struct hp_crash *k)
{
	char name[32];
	fprintf(out, "%scrash: %s (exception 0x%08x", pre, exception_name(k->signal, name, sizeof(name)),
		k->signal);
	if (k->addr || k->signal == HP_EXCEPTION_ACCESS_VIOLATION)
		fprintf(out, ", address 0x%llx", (unsigned long long)k->addr);
	fprintf(out, ")\n");
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
void hp_cli_print_crash(FILE *out, const char *pre, struct hp_symbols *sym,
			const struct hp_analysis *a)
{
	const struct hp_crash *k = &a->info.crash;
	char name[32];
	if (k->signal >= HP_EXCEPTION_MIN) {
		print_exception(out, pre, k);
	} else {
		fprintf(out, "%scrash: %s (signal %u, code %d", pre, signal_name(k->signal, name, sizeof(name)),
			k->signal, k->code);
		if (k->addr || k->signal == SIGSEGV || k->signal == SIGBUS)
			fprintf(out, ", address 0x%llx", (unsigned long long)k->addr);
		fprintf(out, ")\n");
	}
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
