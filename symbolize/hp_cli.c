/*
 * hp_cli.c - what the hookprof commands share.
 */
#define _GNU_SOURCE
#include "hp_cli.h"

#include <dirent.h>
#include <limits.h>
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
		if (!is_trace_name(e->d_name) || !(v = realloc(l->v, (l->n + 1) * sizeof(*v))))
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
