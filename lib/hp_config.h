/*
 * hp_config.h - the runtime's settings, read from HOOKPROF_* variables once.
 */
#ifndef HP_CONFIG_H
#define HP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "hp_platform.h"

enum hp_mode { HP_MODE_STREAM, HP_MODE_RING };

#define HP_BUFFER_DEFAULT (8u << 20)
#define HP_BUFFER_MIN (128u << 10)
/* Per thread: every thread maps this much, the first event touches it, and
 * a ring of 1G already holds 64 million events. */
#define HP_BUFFER_MAX (1ull << 30)
/* The largest size hp_config_parse_size reads (a bigger one is not a size). */
#define HP_SIZE_MAX_PARSED (1ull << 36)

struct hp_config {
	enum hp_mode mode;
	size_t buffer_bytes;    /* per thread */
	const char *output;     /* HOOKPROF_OUTPUT, or NULL for the default */
	int force_monotonic;    /* HOOKPROF_CLOCK=monotonic */
	int off;                /* not traced at all (secure execution) */
	int start_stopped;      /* HOOKPROF_START=off: recording waits for hookprof_start() */
	/* Recording less (hp_filter.h): the raw settings, checked when used. */
	const char *exclude;    /* HOOKPROF_EXCLUDE: regexes, comma-separated, or NULL */
	const char *include;    /* HOOKPROF_INCLUDE */
	unsigned depth;         /* HOOKPROF_DEPTH: levels kept per thread, 0 for all */
	uint64_t min_ns;        /* HOOKPROF_MIN: shorter calls without a callee dropped; 0 off */
};

/* The deepest HOOKPROF_DEPTH: each thread keeps one stack pointer a level. */
#define HP_DEPTH_MAX 128u /* record --help and its message say 128 too */

/*
 * Fills cfg from the environment `getenv_fn` gives (the runtime passes
 * secure_getenv). Returns 0, or -1 with a one-line reason in err; the
 * defaults stay for whatever was wrong.
 *
 * `secure`: a set-user-ID program run by someone else (AT_SECURE). Its
 * caller chooses the environment and the working directory, and the trace
 * would be created with the program's privileges, holding the caller's
 * command line: anywhere it went, it would be a file the caller could not
 * have made. So such a run is not traced at all (cfg->off, and the reason
 * in err), and no variable is read.
 */
int hp_config_read(struct hp_config *cfg, char *(*getenv_fn)(const char *), int secure,
		   char *err, size_t errlen) HP_HIDDEN;

/* "8M", "512K", "1G", "65536": bytes, or 0 if it is not a size (or one over
 * 64G). K, M, G and T are powers of 1024, with or without "iB" or "B"
 * after them: 8M, 8MiB and 8MB are all 8 << 20 (what people write for a
 * buffer means the binary unit; no decimal sizes are offered). */
size_t hp_config_parse_size(const char *s) HP_HIDDEN;

/* "500ns", "10us", "1ms", "2s", or a plain number of ns: ns, or
 * UINT64_MAX if it is not a duration (0 is one: no minimum). */
uint64_t hp_config_parse_duration(const char *s) HP_HIDDEN;

/* The first HOOKPROF_* variable of env (NAME=VALUE strings) that nothing of
 * hookprof reads: -1 with a warning naming it and the closest known name;
 * 0 if there is none. A misspelt setting would otherwise do nothing. */
int hp_config_check_names(char *const *env, char *err, size_t errlen) HP_HIDDEN;

#endif
