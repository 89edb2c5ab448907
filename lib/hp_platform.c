/*
 * hp_platform.c - Linux x86-64 implementation of hp_platform.h.
 */
#define _GNU_SOURCE
#include "hp_platform.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

int hp_tick_is_tsc;

/* An invariant TSC ticks at one rate in every P- and C-state (CPUID 80000007h:EDX[8]). */
static int tsc_is_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

void hp_platform_init(int force_monotonic)
{
	hp_tick_is_tsc = !force_monotonic && tsc_is_invariant();
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t hp_clock_ns(void) { return clock_ns(CLOCK_MONOTONIC_RAW); }
uint64_t hp_realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }
uint32_t hp_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

void *hp_pages_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void hp_pages_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

void *hp_pages_grow(void *p, size_t old_size, size_t new_size)
{
	if (!p)
		return hp_pages_alloc(new_size);
	void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
	return q == MAP_FAILED ? NULL : q;
}

void hp_futex_wait(uint32_t *word, uint32_t expected, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
	errno = saved;
}

void hp_futex_wake(uint32_t *word)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
	errno = saved;
}

/* What fd 2 was at start-up: a program that closes it and opens a file of
 * its own there must not find our warnings in that file. */
static int stderr_known;
static dev_t stderr_dev;
static ino_t stderr_ino;

void hp_warn_init(void)
{
	struct stat st;
	int saved = errno;
	/* Closed at start: nowhere to warn, whatever takes the number later. */
	stderr_known = fstat(STDERR_FILENO, &st) == 0 ? 1 : -1;
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	errno = saved;
}

static int stderr_is_ours(void)
{
	struct stat st;
	if (!stderr_known)
		return 1; /* no start-up yet (the unit tests): fd 2 is stderr */
	return stderr_known > 0 && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_dev &&
	       st.st_ino == stderr_ino;
}

/* A line that would take a file on fd 2 past RLIMIT_FSIZE would raise
 * SIGXFSZ in the program: it is not written. */
static int fits_on_stderr(size_t n)
{
	struct stat st;
	struct rlimit rl;
	if (fstat(STDERR_FILENO, &st) || !S_ISREG(st.st_mode) || getrlimit(RLIMIT_FSIZE, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return 1;
	return (rlim_t)st.st_size + n <= rl.rlim_cur;
}

/* The line, whole: a long path must not push the reason out of it. Memory
 * for a long one comes from mmap, not the program's malloc. */
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
	if (fits_on_stderr(n)) {
		ssize_t ignored = write(STDERR_FILENO, line, n);
		(void)ignored;
	}
	hp_pages_free(map ? line : NULL, map);
}

void hp_warn(const char *fmt, ...)
{
	int saved = errno; /* before vsnprintf, which may set it (EILSEQ) */
	if (stderr_is_ours()) {
		va_list ap;
		va_start(ap, fmt);
		write_line(fmt, ap);
		va_end(ap);
	}
	errno = saved;
}

int hp_secure_execution(void)
{
	return getauxval(AT_SECURE) != 0;
}

int hp_futex_wait_while(uint32_t *word, uint32_t value, int limit_ms)
{
	for (int waited = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) == value; waited += 100) {
		if (limit_ms >= 0 && waited >= limit_ms)
			return -1;
		hp_futex_wait(word, value, 100);
	}
	return 0;
}

int hp_mutex_lock_bounded(pthread_mutex_t *m, int in_signal, int timeout_ms)
{
	if (!in_signal)
		return pthread_mutex_lock(m);
	for (int i = 0; i < timeout_ms; i++) {
		if (!pthread_mutex_trylock(m))
			return 0;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	return -1;
}
