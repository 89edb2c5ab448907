/*
 * hp_platform.h - the little the runtime needs from the OS and the CPU.
 * Everything platform-specific lives here and in hp_platform.c, so that the
 * Windows port (QueryPerformanceCounter, Win32 TLS) and aarch64 (cntvct_el0)
 * replace these two files and nothing else.
 */
#ifndef HP_PLATFORM_H
#define HP_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define HP_HIDDEN __attribute__((visibility("hidden")))
#define HP_EXPORT __attribute__((visibility("default")))

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Set once at start-up, before any event is stored; read-only afterwards. */
extern int hp_tick_is_tsc HP_HIDDEN;

uint64_t hp_clock_ns(void) HP_HIDDEN;

/* The CPU's own counter, valid when hp_tick_is_tsc. No fence: the hook
 * needs a cheap timestamp, not serialisation. */
static inline uint64_t hp_cpu_tick(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return 0;
#endif
}

static inline uint64_t hp_tick(void)
{
	return likely(hp_tick_is_tsc) ? hp_cpu_tick() : hp_clock_ns();
}

void hp_platform_init(int force_monotonic) HP_HIDDEN;
uint64_t hp_realtime_ns(void) HP_HIDDEN;
uint32_t hp_gettid(void) HP_HIDDEN;

/* Anonymous zeroed memory that never comes from the program's malloc. */
void *hp_pages_alloc(size_t size) HP_HIDDEN;
void hp_pages_free(void *p, size_t size) HP_HIDDEN;
/* Grows a hp_pages_alloc block, keeping its contents; NULL on failure. */
void *hp_pages_grow(void *p, size_t old_size, size_t new_size) HP_HIDDEN;

/* futex(2) on a 32-bit word: wait while *word == expected, at most timeout_ms. */
void hp_futex_wait(uint32_t *word, uint32_t expected, int timeout_ms) HP_HIDDEN;
/* Waits until *word is no longer `value` (acquire): 0, or -1 once limit_ms
 * have passed (limit_ms < 0: no limit). */
int hp_futex_wait_while(uint32_t *word, uint32_t value, int limit_ms) HP_HIDDEN;
void hp_futex_wake(uint32_t *word) HP_HIDDEN;

/* pthread_mutex_lock, but in a signal handler (in_signal) the holder may be
 * the very code the signal interrupted: try for at most timeout_ms, then
 * -1. */
int hp_mutex_lock_bounded(pthread_mutex_t *m, int in_signal, int timeout_ms) HP_HIDDEN;

/* One line on stderr, written with write(2) so the program's stdio is
 * untouched, and whole however long. Silent once fd 2 is no longer the file
 * it was at hp_warn_init (the program closed it and reused the number). */
void hp_warn(const char *fmt, ...) HP_HIDDEN __attribute__((format(printf, 1, 2)));
/* Notes what fd 2 is now; called once at start-up. */
void hp_warn_init(void) HP_HIDDEN;

/* A set-user-ID or set-group-ID program (or one with file capabilities)
 * run by someone else: AT_SECURE. */
int hp_secure_execution(void) HP_HIDDEN;

#endif
