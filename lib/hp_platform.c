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
#include <sys/mman.h>
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

void hp_warn(const char *fmt, ...)
{
	int saved = errno; /* before vsnprintf, which may set it (EILSEQ) */
	char line[512] = "hookprof: ";
	size_t n = strlen(line);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	ssize_t ignored = write(STDERR_FILENO, line, n);
	(void)ignored;
	errno = saved;
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
