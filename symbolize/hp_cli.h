/*
 * hp_cli.h - what the hookprof commands share: errors in one line, the
 * traces a command is given (files, directories, or the newest here), and
 * the options every report takes.
 */
#ifndef HP_CLI_H
#define HP_CLI_H

#include <stddef.h>

#include <stdio.h>

#include "hp_analyze.h"
#include "hp_report.h"
#include "hp_symbols.h"

/* Exit statuses: 2 for a wrong command line, 1 for anything else. */
int hp_cli_usage_error(const char *fmt, const char *arg);
int hp_cli_print_error(const char *err);

struct hp_cli_names {
	char **v;
	size_t n;
};
void hp_cli_names_free(struct hp_cli_names *l);
/* The regular files in dir named like traces, sorted; -1 if dir cannot be read. */
int hp_cli_list_traces(const char *dir, struct hp_cli_names *l);
/* 1 if name is in the sorted list l. */
int hp_cli_listed(const struct hp_cli_names *l, const char *name);
/* The newest *.hookprof in the working directory; -1 if none. */
int hp_cli_newest_trace(char *out, size_t len);
/* Each DIR among args becomes the traces in it. 0, or -1 with a reason. */
int hp_cli_expand_dirs(char **args, int n, struct hp_cli_names *out, char *err, size_t errlen);
/* args, or without any the newest trace here, with directories expanded.
 * 0, or -1 with a reason in err. */
int hp_cli_traces(char **args, int n, struct hp_cli_names *out, char *err, size_t errlen);
/* --limit=N: digits only (no sign: strtoul would take -1 as the largest);
 * 0, or -1 if it is not such a number. */
int hp_cli_parse_limit(const char *s, unsigned long *out);
int hp_cli_parse_sort(const char *s, enum hp_sort *key);
/* The crash of a's trace: the signal, the thread, its backtrace and the
 * frames that never returned; every line starts with pre. */
void hp_cli_print_crash(FILE *out, const char *pre, struct hp_symbols *sym,
			const struct hp_analysis *a);

#endif
