/*
 * hp_platform.c - the portable part of hp_platform.h, built on the OS
 * functions every implementation provides: bounded waits and warnings.
 */
#include "hp_platform.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int hp_futex_wait_while(uint32_t *word, uint32_t value, int limit_ms)
{
	for (int waited = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) == value; waited += 100) {
		if (limit_ms >= 0 && waited >= limit_ms)
			return -1;
		hp_futex_wait(word, value, 100);
	}
	return 0;
}

/* The line, whole: a long path must not push the reason out of it. Memory
 * for a long one comes from hp_pages_alloc, not the program's malloc. */
static void write_line(const char *fmt, va_list ap)
{
	static const char prefix[] = "hookprof: ";
	char small[1024];
	char *line = small;
	size_t cap = sizeof(small), map = 0;
	va_list again;
	va_copy(again, ap);
	int len = vsnprintf(small + sizeof(prefix) - 1, cap - sizeof(prefix), fmt, ap);
	if (len < 0)
		len = 0; /* a format the locale cannot convert: the prefix alone */
	if ((size_t)len + sizeof(prefix) >= cap) {
		map = (size_t)len + sizeof(prefix) + 1;
		line = hp_pages_alloc(map);
		if (line) {
			cap = map;
			vsnprintf(line + sizeof(prefix) - 1, cap - sizeof(prefix), fmt, again);
		} else {
			line = small, map = 0; /* no memory: the line, cut */
			len = (int)(cap - sizeof(prefix) - 1); /* what fitted */
		}
	}
	va_end(again);
	memcpy(line, prefix, sizeof(prefix) - 1);
	size_t n = sizeof(prefix) - 1 + strnlen(line + sizeof(prefix) - 1, (size_t)len);
	line[n++] = '\n';
	hp_stderr_write(line, n);
	hp_pages_free(map ? line : NULL, map);
}

void hp_warn(const char *fmt, ...)
{
	int saved = errno; /* before vsnprintf, which may set it (EILSEQ) */
	va_list ap;
	va_start(ap, fmt);
	write_line(fmt, ap);
	va_end(ap);
	errno = saved;
}
