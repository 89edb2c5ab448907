/*
 * hp_config.c - HOOKPROF_* environment variables.
 */
#include "hp_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "8M" and the rest (hp_config.h); too_large: a size, but over what is read. */
static size_t parse_size(const char *s, int *too_large)
{
	char *end;
	*too_large = 0;
	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return 0;
	if (errno == ERANGE || v > (HP_SIZE_MAX_PARSED >> shift)) {
		*too_large = 1;
		return 0;
	}
	return (size_t)(v << shift);
}

size_t hp_config_parse_size(const char *s)
{
	int too_large;
	return parse_size(s, &too_large);
}

static int read_mode(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s || !strcmp(s, "stream"))
		cfg->mode = HP_MODE_STREAM;
	else if (!strcmp(s, "ring"))
		cfg->mode = HP_MODE_RING;
	else {
		snprintf(err, errlen, "HOOKPROF_MODE='%s' is not 'stream' or 'ring'; using stream", s);
		return -1;
	}
	return 0;
}

static int read_buffer(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s)
		return 0;
	int too_large;
	size_t v = parse_size(s, &too_large);
	if (too_large || v > HP_BUFFER_MAX) {
		snprintf(err, errlen, "HOOKPROF_BUFFER='%s' is more than %lluG per thread; using %lluG",
			 s, HP_BUFFER_MAX >> 30, HP_BUFFER_MAX >> 30);
		cfg->buffer_bytes = HP_BUFFER_MAX;
		return -1;
	}
	if (v < HP_BUFFER_MIN) {
		snprintf(err, errlen, "HOOKPROF_BUFFER='%s' is not a size of at least 128K; using %uM",
			 s, HP_BUFFER_DEFAULT >> 20);
		return -1;
	}
	cfg->buffer_bytes = v;
	return 0;
}

static int read_clock(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s || !strcmp(s, "tsc"))
		return 0;
	if (!strcmp(s, "monotonic")) {
		cfg->force_monotonic = 1;
		return 0;
	}
	snprintf(err, errlen, "HOOKPROF_CLOCK='%s' is not 'tsc' or 'monotonic'; using tsc", s);
	return -1;
}

static int read_start(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s || !strcmp(s, "on"))
		return 0;
	if (!strcmp(s, "off")) {
		cfg->start_stopped = 1;
		return 0;
	}
	snprintf(err, errlen, "HOOKPROF_START='%s' is not 'on' or 'off'; using on", s);
	return -1;
}

uint64_t hp_config_parse_duration(const char *s)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	char *end;
	if (!s || *s < '0' || *s > '9')
		return UINT64_MAX;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return UINT64_MAX;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit))
			return v <= UINT64_MAX / 2 / units[i].ns ? v * units[i].ns : UINT64_MAX;
	return UINT64_MAX;
}

static int read_depth(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	unsigned long v = *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
	if (v && !*end && !errno && v <= HP_DEPTH_MAX) {
		cfg->depth = (unsigned)v;
		return 0;
	}
	snprintf(err, errlen, "HOOKPROF_DEPTH='%s' is not a depth from 1 to %u; every level is recorded",
		 s, HP_DEPTH_MAX);
	return -1;
}

static int read_min(struct hp_config *cfg, const char *s, char *err, size_t errlen)
{
	if (!s || !*s)
		return 0;
	uint64_t v = hp_config_parse_duration(s);
	if (v != UINT64_MAX) {
		cfg->min_ns = v;
		return 0;
	}
	snprintf(err, errlen, "HOOKPROF_MIN='%s' is not a duration (500ns, 10us, 1ms, 2s); "
			      "every call is recorded", s);
	return -1;
}

static const char *non_empty(const char *s) { return s && *s ? s : NULL; }

int hp_config_read(struct hp_config *cfg, char *(*getenv_fn)(const char *), int secure,
		   char *err, size_t errlen)
{
	*cfg = (struct hp_config){ .mode = HP_MODE_STREAM, .buffer_bytes = HP_BUFFER_DEFAULT };
	if (secure) {
		cfg->off = 1;
		snprintf(err, errlen, "set-user-ID or set-group-ID program run by another user: "
				      "this run is not traced");
		return -1;
	}
	const char *out = getenv_fn("HOOKPROF_OUTPUT");
	cfg->output = out && *out ? out : NULL;
	int rc = 0;
	rc |= read_mode(cfg, getenv_fn("HOOKPROF_MODE"), err, errlen);
	rc |= read_buffer(cfg, getenv_fn("HOOKPROF_BUFFER"), err, errlen);
	rc |= read_clock(cfg, getenv_fn("HOOKPROF_CLOCK"), err, errlen);
	rc |= read_start(cfg, getenv_fn("HOOKPROF_START"), err, errlen);
	cfg->exclude = non_empty(getenv_fn("HOOKPROF_EXCLUDE"));
	cfg->include = non_empty(getenv_fn("HOOKPROF_INCLUDE"));
	rc |= read_depth(cfg, getenv_fn("HOOKPROF_DEPTH"), err, errlen);
	rc |= read_min(cfg, getenv_fn("HOOKPROF_MIN"), err, errlen);
	return rc;
}

/* The HOOKPROF_* names anything of hookprof reads: the runtime's, the
 * tool's (record, the symbolizer) and its test scripts'. */
static const char *const known_names[] = {
	"HOOKPROF_OUTPUT", "HOOKPROF_MODE",	  "HOOKPROF_BUFFER",	 "HOOKPROF_CLOCK",
	"HOOKPROF_START",  "HOOKPROF_EXCLUDE",	  "HOOKPROF_INCLUDE",	 "HOOKPROF_DEPTH",
	"HOOKPROF_MIN",
	"HOOKPROF_LIB",	   "HOOKPROF_DEBUG_PATH", "HOOKPROF_BUILD",	 "HOOKPROF_SANITIZER",
	"HOOKPROF_E2E_CFLAGS", "HOOKPROF_E2E_KEEP",
};
#define NKNOWN (sizeof(known_names) / sizeof(known_names[0]))

/* Edit distance of a and b (up to 63 bytes each; longer ones are far). */
static unsigned distance(const char *a, size_t la, const char *b)
{
	unsigned row[64];
	size_t lb = strlen(b);
	if (la >= 64 || lb >= 64)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

int hp_config_check_names(char *const *env, char *err, size_t errlen)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		size_t len = eq ? (size_t)(eq - *env) : strlen(*env);
		if (strncmp(*env, "HOOKPROF_", 9))
			continue;
		size_t best = 0;
		unsigned best_d = ~0u;
		int known = 0;
		for (size_t i = 0; i < NKNOWN && !known; i++) {
			known = strlen(known_names[i]) == len && !strncmp(*env, known_names[i], len);
			unsigned d = distance(*env, len, known_names[i]);
			if (d < best_d)
				best_d = d, best = i;
		}
		if (known)
			continue;
		snprintf(err, errlen, "unknown variable %.*s in the environment (did you mean %s?); ignored",
			 (int)(len < 200 ? len : 200), *env, known_names[best]);
		return -1;
	}
	return 0;
}
