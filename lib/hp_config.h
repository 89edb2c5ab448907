/*
 * hp_config.h - the runtime's settings, read from HOOKPROF_* variables once.
 */
#ifndef HP_CONFIG_H
#define HP_CONFIG_H

#include <stddef.h>

#include "hp_platform.h"

enum hp_mode { HP_MODE_STREAM, HP_MODE_RING };

#define HP_BUFFER_DEFAULT (8u << 20)
#define HP_BUFFER_MIN (128u << 10)
#define HP_BUFFER_MAX (1ul << 36)

struct hp_config {
	enum hp_mode mode;
	size_t buffer_bytes;    /* per thread */
	const char *output;     /* HOOKPROF_OUTPUT, or NULL for the default */
	int force_monotonic;    /* HOOKPROF_CLOCK=monotonic */
};

/*
 * Fills cfg from the environment `getenv_fn` gives. Returns 0, or -1 with a
 * one-line reason in err; the defaults stay for whatever was wrong.
 */
int hp_config_read(struct hp_config *cfg, char *(*getenv_fn)(const char *),
		   char *err, size_t errlen) HP_HIDDEN;

/* "8M", "512K", "1G", "65536": bytes, or 0 if it is not a size. */
size_t hp_config_parse_size(const char *s) HP_HIDDEN;

#endif
