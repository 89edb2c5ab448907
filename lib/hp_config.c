/*
 * hp_config.c - HOOKPROF_* environment variables.
 */
#include "hp_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t hp_config_parse_size(const char *s)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return 0;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (HP_SIZE_MAX_PARSED >> shift))
		return 0;
	return (size_t)(v << shift);
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
	size_t v = hp_config_parse_size(s);
	if (v < HP_BUFFER_MIN) {
		snprintf(err, errlen, "HOOKPROF_BUFFER='%s' is not a size of at least 128K; using %uM",
			 s, HP_BUFFER_DEFAULT >> 20);
		return -1;
	}
	if (v > HP_BUFFER_MAX) {
		snprintf(err, errlen, "HOOKPROF_BUFFER='%s' is more than %luG per thread; using %luG", s,
			 HP_BUFFER_MAX >> 30, HP_BUFFER_MAX >> 30);
		cfg->buffer_bytes = HP_BUFFER_MAX;
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
	return rc;
}
