/*
 * check_platform.c - the clock, thread ids, page allocation, futexes and
 * warnings of lib/hp_platform.c, each against the system call or clock it
 * stands for. Timing bounds are sanity bounds only (a wait that should end
 * at once ends within seconds, a 100 ms timeout within [90 ms, 10 s)).
 *
 * hp_tick_is_tsc is global and some tests redirect fd 2: every test runs
 * in its own process (Check's default CK_FORK).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "hp_platform.h"
#include "testkit.h"

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;
	ck_assert_int_eq(clock_gettime(id, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---------------------------------------------------------------- clock */

/*
 * Whether the TSC is invariant, as the kernel saw it: Linux reports
 * CPUID 80000007h:EDX[8] as the "nonstop_tsc" flag. -1 if /proc/cpuinfo
 * says nothing (then CPUID itself is asked).
 */
static int kernel_says_invariant_tsc(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return -1;
	char line[8192];
	int flags = 0, nonstop = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		flags = 1;
		for (char *tok = strtok(strchr(line, ':') + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
			nonstop |= !strcmp(tok, "nonstop_tsc");
		break;
	}
	fclose(f);
	return flags ? nonstop : -1;
}

static int invariant_tsc(void)
{
	int k = kernel_says_invariant_tsc();
	/* Without the kernel's word, CPUID's, as the runtime reads it. */
	return k >= 0 ? k : hp_tsc_is_invariant();
}

/* Keeps the thread on one CPU, so that TSC readings compare even where
 * the counters of different CPUs are not perfectly in step. */
static void stay_on_this_cpu(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

START_TEST(test_init_detects_tsc)
{
	hp_platform_init(0);
	ck_assert_int_eq(hp_tick_is_tsc, invariant_tsc());
}
END_TEST

START_TEST(test_init_force_monotonic)
{
	hp_platform_init(1);
	ck_assert_int_eq(hp_tick_is_tsc, 0);
	/* then a tick is CLOCK_MONOTONIC_RAW in ns */
	for (int i = 0; i < 1000; i++) {
		uint64_t a = now_ns(CLOCK_MONOTONIC_RAW);
		uint64_t t = hp_tick();
		uint64_t b = now_ns(CLOCK_MONOTONIC_RAW);
		ck_assert_uint_le(a, t);
		ck_assert_uint_le(t, b);
	}
	/* and init may run again: the choice is redone */
	hp_platform_init(0);
	ck_assert_int_eq(hp_tick_is_tsc, invariant_tsc());
}
END_TEST

START_TEST(test_tick_is_rdtsc)
{
#if defined(__x86_64__)
	hp_platform_init(0);
	if (!hp_tick_is_tsc)
		return; /* no invariant TSC here: test_init_force_monotonic covers ticks */
	stay_on_this_cpu();
	for (int i = 0; i < 1000; i++) {
		/* fences keep the three readings in program order */
		_mm_lfence();
		uint64_t a = __rdtsc();
		_mm_lfence();
		uint64_t t = hp_tick();
		_mm_lfence();
		uint64_t b = __rdtsc();
		ck_assert_uint_le(a, t);
		ck_assert_uint_le(t, b);
	}
	/* it counts at a plausible rate: between 100 MHz and 20 GHz */
	uint64_t t0 = hp_tick(), n0 = hp_clock_ns();
	sleep_ms(50);
	uint64_t t1 = hp_tick(), n1 = hp_clock_ns();
	double ghz = (double)(t1 - t0) / (double)(n1 - n0);
	ck_assert_double_gt(ghz, 0.1);
	ck_assert_double_lt(ghz, 20.0);
#endif
}
END_TEST

START_TEST(test_tick_before_init)
{
	/* until init decides, a tick is the always-correct clock */
	ck_assert_int_eq(hp_tick_is_tsc, 0);
	uint64_t a = now_ns(CLOCK_MONOTONIC_RAW);
	uint64_t t = hp_tick();
	uint64_t b = now_ns(CLOCK_MONOTONIC_RAW);
	ck_assert_uint_le(a, t);
	ck_assert_uint_le(t, b);
}
END_TEST

START_TEST(test_clock_ns_is_monotonic_raw)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t a = now_ns(CLOCK_MONOTONIC_RAW);
		uint64_t c = hp_clock_ns();
		uint64_t b = now_ns(CLOCK_MONOTONIC_RAW);
		ck_assert_uint_le(a, c);
		ck_assert_uint_le(c, b);
	}
}
END_TEST

START_TEST(test_clock_ns_increases)
{
	/* never backwards, call after call */
	uint64_t prev = hp_clock_ns(), first = prev;
	for (int i = 0; i < 1000000; i++) {
		uint64_t c = hp_clock_ns();
		ck_assert_uint_ge(c, prev);
		prev = c;
	}
	ck_assert_uint_gt(prev, first);
	/* and forward by about the time slept (the raw clock is not slewed:
	 * 500 ppm off at most, far inside these bounds) */
	uint64_t a = hp_clock_ns();
	sleep_ms(20);
	uint64_t b = hp_clock_ns();
	ck_assert_uint_ge(b - a, 19000000);
	ck_assert_uint_lt(b - a, 10000000000ull);
}
END_TEST

START_TEST(test_realtime_ns)
{
	uint64_t a = now_ns(CLOCK_REALTIME);
	uint64_t r = hp_realtime_ns();
	uint64_t b = now_ns(CLOCK_REALTIME);
	ck_assert_uint_le(a, r);
	ck_assert_uint_le(r, b);
	/* nanoseconds since the epoch, not seconds or microseconds */
	uint64_t t = (uint64_t)time(NULL);
	ck_assert_uint_ge(r / 1000000000u + 2, t);
	ck_assert_uint_le(r / 1000000000u, t + 2);
	ck_assert_uint_gt(r, 1577836800ull * 1000000000u); /* after 2020 */
}
END_TEST

/* ---------------------------------------------------------------- thread ids */

START_TEST(test_gettid_main)
{
	ck_assert_uint_eq(hp_gettid(), (uint32_t)syscall(SYS_gettid));
	/* the test's process is single-threaded: its main thread's id is the pid */
	ck_assert_uint_eq(hp_gettid(), (uint32_t)getpid());
}
END_TEST

enum { NTHREADS = 8 };

struct tid_probe {
	pthread_barrier_t *all_alive;
	uint32_t hp, sys;
};

static void *probe_tid(void *arg)
{
	struct tid_probe *p = arg;
	p->hp = hp_gettid();
	p->sys = (uint32_t)syscall(SYS_gettid);
	/* every thread is alive while the others read: no id is reused */
	pthread_barrier_wait(p->all_alive);
	return NULL;
}

START_TEST(test_gettid_threads)
{
	pthread_barrier_t b;
	pthread_barrier_init(&b, NULL, NTHREADS);
	struct tid_probe p[NTHREADS];
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		p[i].all_alive = &b;
		ck_assert_int_eq(pthread_create(&th[i], NULL, probe_tid, &p[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&b);
	for (int i = 0; i < NTHREADS; i++) {
		ck_assert_uint_eq(p[i].hp, p[i].sys);
		ck_assert_uint_ne(p[i].hp, hp_gettid());
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(p[i].hp, p[j].hp);
	}
}
END_TEST

/* ---------------------------------------------------------------- pages */

/* Whether [p, p + size) is mapped at all: msync fails with ENOMEM where it is not. */
static int mapped(const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size += (uintptr_t)p - a;
	if (msync((void *)a, size, MS_ASYNC) == 0)
		return 1;
	ck_assert_int_eq(errno, ENOMEM);
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int filled(const uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

/* The permissions and name of the mapping that holds p, from /proc/self/maps. */
static void mapping_of(const void *p, char *perms, char *name, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int off = 0;
		char pm[5];
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s%n", &lo, &hi, pm, &off) < 3)
			continue;
		if ((uintptr_t)p < lo || (uintptr_t)p >= hi)
			continue;
		found = 1;
		strcpy(perms, pm);
		char *s = line + off;
		s += strspn(s, " ");
		s[strcspn(s, "\n")] = 0;
		snprintf(name, len, "%s", s);
	}
	fclose(f);
	ck_assert_int_eq(found, 1);
}

START_TEST(test_pages_alloc_zeroed_and_usable)
{
	static const size_t sizes[] = { 1, 4096, 3 * 4096 + 1, 8u << 20 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint8_t *p = hp_pages_alloc(n);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % 4096, 0);
		ck_assert(all_zero(p, n));
		fill(p, n, (uint8_t)k);
		ck_assert(filled(p, n, (uint8_t)k));
		/* private anonymous memory of its own, not the heap */
		char perms[8], name[256];
		mapping_of(p, perms, name, sizeof(name));
		ck_assert_str_eq(perms, "rw-p");
		ck_assert_str_eq(name, "");
		hp_pages_free(p, n);
		ck_assert_int_eq(mapped(p, n), 0);
	}
}
END_TEST

START_TEST(test_pages_alloc_distinct)
{
	uint8_t *a = hp_pages_alloc(65536), *b = hp_pages_alloc(65536);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert(a + 65536 <= b || b + 65536 <= a);
	memset(a, 0xaa, 65536);
	ck_assert(all_zero(b, 65536));
	hp_pages_free(a, 65536);
	ck_assert(all_zero(b, 65536)); /* freeing one leaves the other */
	hp_pages_free(b, 65536);
}
END_TEST

START_TEST(test_pages_grow_keeps_contents)
{
	size_t n0 = 64 << 10, n1 = 4u << 20, n2 = 16u << 20;
	uint8_t *p = hp_pages_alloc(n0);
	ck_assert_ptr_nonnull(p);
	fill(p, n0, 3);
	uint8_t *q = hp_pages_grow(p, n0, n1);
	ck_assert_ptr_nonnull(q);
	ck_assert(filled(q, n0, 3));
	ck_assert(all_zero(q + n0, n1 - n0));
	fill(q, n1, 5);
	/* the old block is the new one or gone, never a second live copy */
	if (q != p)
		ck_assert_int_eq(mapped(p, n0), 0);
	uint8_t *r = hp_pages_grow(q, n1, n2);
	ck_assert_ptr_nonnull(r);
	ck_assert(filled(r, n1, 5));
	ck_assert(all_zero(r + n1, n2 - n1));
	fill(r, n2, 9);
	ck_assert(filled(r, n2, 9));
	hp_pages_free(r, n2);
	ck_assert_int_eq(mapped(r, n2), 0);
}
END_TEST

START_TEST(test_pages_grow_null)
{
	/* growing nothing allocates */
	uint8_t *p = hp_pages_grow(NULL, 0, 100000);
	ck_assert_ptr_nonnull(p);
	ck_assert(all_zero(p, 100000));
	fill(p, 100000, 1);
	hp_pages_free(p, 100000);
	ck_assert_int_eq(mapped(p, 100000), 0);
}
END_TEST

/* ---------------------------------------------------------------- futex */

/* The first line of /proc/self/task/<tid>/<what>, or "" if unreadable. */
static void task_file(pid_t tid, const char *what, char *buf, size_t len)
{
	char file[64];
	snprintf(file, sizeof(file), "/proc/self/task/%d/%s", (int)tid, what);
	buf[0] = 0;
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/*
 * Waits until thread tid sleeps in futex(2), from /proc rather than by
 * timing: inside futex(2) (its syscall file) and asleep (state S in its
 * stat file). The kernel marks a waiter asleep only under the lock a wake
 * takes too, so a wake from now on finds it.
 */
static void wait_until_in_futex(pid_t tid)
{
	char want[16], buf[512];
	snprintf(want, sizeof(want), "%d ", (int)SYS_futex);
	for (int i = 0; i < 10000; i++) {
		task_file(tid, "syscall", buf, sizeof(buf));
		if (!buf[0]) {
			/* no syscall file here: give the thread ample time instead */
			sleep_ms(500);
			return;
		}
		if (!strncmp(buf, want, strlen(want))) {
			task_file(tid, "stat", buf, sizeof(buf));
			const char *state = strrchr(buf, ')');
			if (state && !strncmp(state, ") S", 3))
				return;
		}
		sleep_ms(1);
	}
	ck_abort_msg("thread %d never waited in futex(2)", (int)tid);
}

struct waiter {
	uint32_t *word;
	uint32_t expected;
	int timeout_ms;
	volatile pid_t tid;
	int errno_after;
	uint64_t waited_ns;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	__atomic_store_n(&w->tid, (pid_t)hp_gettid(), __ATOMIC_RELEASE);
	errno = 4321;
	uint64_t t0 = hp_clock_ns();
	hp_futex_wait(w->word, w->expected, w->timeout_ms);
	w->waited_ns = hp_clock_ns() - t0;
	w->errno_after = errno;
	return NULL;
}

static pid_t tid_of(struct waiter *w)
{
	pid_t tid;
	while (!(tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE)))
		sched_yield();
	return tid;
}

START_TEST(test_futex_wake_from_thread)
{
	/* the word does not change: only the wake can end the 20 s wait early */
	uint32_t word = 0;
	struct waiter w = { .word = &word, .expected = 0, .timeout_ms = 20000 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
	wait_until_in_futex(tid_of(&w));
	errno = 77;
	hp_futex_wake(&word);
	ck_assert_int_eq(errno, 77);
	pthread_join(th, NULL);
	ck_assert_uint_lt(w.waited_ns, 10000000000ull);
	ck_assert_int_eq(w.errno_after, 4321);
}
END_TEST

START_TEST(test_futex_wake_wakes_all)
{
	/* an owner and the writer may wait on one word: one wake frees all */
	enum { N = 4 };
	uint32_t word = 0;
	struct waiter w[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){ .word = &word, .expected = 0, .timeout_ms = 20000 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, wait_thread, &w[i]), 0);
	}
	for (int i = 0; i < N; i++)
		wait_until_in_futex(tid_of(&w[i]));
	hp_futex_wake(&word);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_lt(w[i].waited_ns, 10000000000ull);
	}
}
END_TEST

START_TEST(test_futex_timeout)
{
	uint32_t word = 0;
	errno = 1234;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	hp_futex_wait(&word, 0, 100);
	uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
	ck_assert_int_eq(errno, 1234); /* ETIMEDOUT is not the caller's */
	ck_assert_uint_ge(dt, 90000000);
	ck_assert_uint_lt(dt, 10000000000ull);
}
END_TEST

START_TEST(test_futex_value_mismatch)
{
	/* the word already moved on: no wait at all, whatever the timeout */
	uint32_t word = 5;
	errno = 1234;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	hp_futex_wait(&word, 4, 20000);
	uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
	ck_assert_int_eq(errno, 1234); /* EAGAIN is not the caller's */
	ck_assert_uint_lt(dt, 5000000000ull);
	ck_assert_uint_eq(word, 5);
}
END_TEST

/* ---------------------------------------------------------------- warnings */

static int saved_fd2 = -1;

/* Points fd 2 at fd (stdio's stderr too, which writes to fd 2). */
static void capture_stderr(int fd)
{
	fflush(stderr);
	saved_fd2 = dup(2);
	ck_assert_int_ge(saved_fd2, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
}

static void restore_stderr(void)
{
	if (saved_fd2 < 0)
		return;
	dup2(saved_fd2, 2);
	close(saved_fd2);
	saved_fd2 = -1;
}

/* A datagram socket keeps the boundaries of write(2)s: one per message. */
static int msg_pair[2] = { -1, -1 };

static void capture_messages(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, msg_pair), 0);
	capture_stderr(msg_pair[1]);
}

/* The next write(2) on fd 2, or -1 if there was none. */
static ssize_t next_message(char *buf, size_t len)
{
	ssize_t n = recv(msg_pair[0], buf, len - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

/* Every test gets the fixture: teardown puts fd 2 back even after a failed check. */
static void setup(void) {}

static void teardown(void)
{
	restore_stderr();
	for (int i = 0; i < 2; i++)
		if (msg_pair[i] >= 0)
			close(msg_pair[i]), msg_pair[i] = -1;
}

START_TEST(test_warn_one_line)
{
	char buf[2048];
	capture_messages();
	errno = 4242;
	hp_warn("cannot %s '%s': %d", "open", "/x/y", 7);
	ck_assert_int_eq(errno, 4242);
	restore_stderr();
	/* one write(2) of one line, nothing after it */
	const char *want = "hookprof: cannot open '/x/y': 7\n";
	ck_assert_int_eq(next_message(buf, sizeof(buf)), (ssize_t)strlen(want));
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(next_message(buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
}
END_TEST

START_TEST(test_warn_each_call_one_write)
{
	char buf[2048];
	capture_messages();
	hp_warn("first");
	hp_warn("%s", "");
	hp_warn("third %u", 3u);
	restore_stderr();
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hookprof: first\n");
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hookprof: \n");
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hookprof: third 3\n");
	ck_assert_int_eq(next_message(buf, sizeof(buf)), -1);
}
END_TEST

START_TEST(test_warn_percent_m_sees_callers_errno)
{
	char buf[2048], want[256];
	capture_messages();
	errno = ENOENT;
	hp_warn("open: %m");
	ck_assert_int_eq(errno, ENOENT);
	restore_stderr();
	snprintf(want, sizeof(want), "hookprof: open: %s\n", strerror(ENOENT));
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
}
END_TEST

START_TEST(test_warn_leaves_stdio_alone)
{
	/* fd 2 on a file; stderr fully buffered with something pending */
	char name[4096];
	snprintf(name, sizeof(name), "%s/check_platform.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkstemp(name);
	ck_assert_int_ge(fd, 0);
	unlink(name);
	capture_stderr(fd);
	static char sbuf[4096];
	ck_assert_int_eq(setvbuf(stderr, sbuf, _IOFBF, sizeof(sbuf)), 0);
	fputs("buffered", stderr);
	hp_warn("now");
	char got[256] = "";
	ck_assert_int_eq(pread(fd, got, sizeof(got) - 1, 0), 14);
	ck_assert_str_eq(got, "hookprof: now\n"); /* stderr's buffer was not flushed */
	fflush(stderr);
	restore_stderr();
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(pread(fd, got, sizeof(got) - 1, 0), 22);
	ck_assert_str_eq(got, "hookprof: now\nbuffered");
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_pages_alloc_too_big)
{
	errno = 0;
	ck_assert_ptr_null(hp_pages_alloc((size_t)1 << 60));
}
END_TEST

START_TEST(test_pages_grow_fails_keeps_block)
{
	/* a failed grow leaves the block where it was, contents and all */
	size_t n = 1 << 20;
	uint8_t *p = hp_pages_alloc(n);
	ck_assert_ptr_nonnull(p);
	fill(p, n, 11);
	ck_assert_ptr_null(hp_pages_grow(p, n, (size_t)1 << 60));
	ck_assert_int_eq(mapped(p, n), 1);
	ck_assert(filled(p, n, 11));
	fill(p, n, 12);
	hp_pages_free(p, n);
}
END_TEST

START_TEST(test_pages_grow_odd_sizes)
{
	/* sizes that are not page multiples: the bytes asked for are kept */
	uint8_t *p = hp_pages_alloc(5000);
	ck_assert_ptr_nonnull(p);
	fill(p, 5000, 21);
	uint8_t *q = hp_pages_grow(p, 5000, 70001);
	ck_assert_ptr_nonnull(q);
	ck_assert(filled(q, 5000, 21));
	ck_assert(all_zero(q + 8192, 70001 - 8192));
	fill(q, 70001, 22);
	hp_pages_free(q, 70001);
	ck_assert_int_eq(mapped(q, 70001), 0);
}
END_TEST

START_TEST(test_pages_free_null)
{
	hp_pages_free(NULL, 4096);
	hp_pages_free(NULL, 0);
}
END_TEST

START_TEST(test_futex_zero_timeout)
{
	uint32_t word = 0;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	hp_futex_wait(&word, 0, 0);
	ck_assert_uint_lt(now_ns(CLOCK_MONOTONIC) - t0, 5000000000ull);
}
END_TEST

START_TEST(test_futex_timeout_over_a_second)
{
	/* whole seconds and the rest in nanoseconds */
	uint32_t word = 0;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	hp_futex_wait(&word, 0, 1200);
	uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
	ck_assert_uint_ge(dt, 1190000000ull);
	ck_assert_uint_lt(dt, 10000000000ull);
}
END_TEST

START_TEST(test_futex_wake_without_waiters)
{
	uint32_t word = 0;
	errno = 99;
	hp_futex_wake(&word);
	hp_futex_wake(&word);
	ck_assert_int_eq(errno, 99);
	ck_assert_uint_eq(word, 0);
}
END_TEST

START_TEST(test_warn_long_message_whole)
{
	/* longer than any line buffer: one line, one write, nothing cut (a
	 * long path must not push the reason out) */
	char msg[5000], buf[8192];
	for (size_t i = 0; i < sizeof(msg) - 1; i++)
		msg[i] = (char)('a' + i % 26);
	msg[sizeof(msg) - 1] = 0;
	capture_messages();
	errno = 31;
	hp_warn("cannot create '%s': %s", msg, "the reason");
	ck_assert_int_eq(errno, 31);
	restore_stderr();
	ssize_t n = next_message(buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)(10 + 15 + 4999 + 3 + 10 + 1));
	ck_assert_int_eq(strncmp(buf, "hookprof: cannot create '", 25), 0);
	ck_assert_int_eq(strncmp(buf + 25, msg, 4999), 0);
	ck_assert_str_eq(buf + 25 + 4999, "': the reason\n");
	ck_assert_int_eq(next_message(buf, sizeof(buf)), -1);
}
END_TEST

START_TEST(test_warn_message_at_the_small_buffer_size)
{
	/* around the stack buffer's size: each length arrives whole */
	char msg[1100], buf[2048];
	memset(msg, 'x', sizeof(msg));
	capture_messages();
	for (int len = 1000; len < 1030; len++) {
		msg[len] = 0;
		hp_warn("%s", msg);
		msg[len] = 'x';
		ck_assert_int_eq(next_message(buf, sizeof(buf)), 10 + len + 1);
		ck_assert_int_eq(buf[10 + len], '\n');
		ck_assert_int_eq(buf[10 + len - 1], 'x');
	}
	restore_stderr();
}
END_TEST

/* A file of our own, unlinked; its length. */
static int scratch_file(void)
{
	char name[4096];
	snprintf(name, sizeof(name), "%s/check_platform.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkstemp(name);
	ck_assert_int_ge(fd, 0);
	unlink(name);
	return fd;
}

static off_t file_length(int fd)
{
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

START_TEST(test_warn_silent_when_fd2_reused)
{
	/* the program put a file of its own at fd 2: our line is not its */
	char buf[2048];
	capture_messages();
	hp_stderr_note();
	int own = scratch_file();
	int saved = dup(2);
	ck_assert_int_eq(dup2(own, 2), 2);
	errno = 12;
	hp_warn("not for the program's file");
	ck_assert_int_eq(errno, 12);
	ck_assert_int_eq(file_length(own), 0);
	/* fd 2 back to what it was at start: warnings again */
	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	hp_warn("back");
	restore_stderr();
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hookprof: back\n");
	ck_assert_int_eq(next_message(buf, sizeof(buf)), -1);
	close(own);
}
END_TEST

START_TEST(test_warn_not_past_file_size_limit)
{
	/* fd 2 a file at RLIMIT_FSIZE: a line there would raise SIGXFSZ */
	int own = scratch_file();
	ck_assert_int_eq(write(own, "0123456789", 10), 10);
	capture_stderr(own);
	struct rlimit rl = { 20, RLIM_INFINITY }, none = { RLIM_INFINITY, RLIM_INFINITY };
	int limited = setrlimit(RLIMIT_FSIZE, &rl);
	hp_warn("longer than ten bytes");
	setrlimit(RLIMIT_FSIZE, &none);
	restore_stderr();
	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(file_length(own), 10);
	close(own);
}
END_TEST

START_TEST(test_warn_silent_when_fd2_closed_at_start)
{
	/* no stderr at start: the number the program opens later is its own */
	fflush(stderr);
	saved_fd2 = dup(2);
	close(2);
	hp_stderr_note();
	int own = scratch_file();
	ck_assert_int_eq(own, 2);
	hp_warn("nowhere");
	off_t len = file_length(own);
	restore_stderr();
	ck_assert_int_eq(len, 0);
}
END_TEST

START_TEST(test_warn_stderr_closed)
{
	/* nowhere to write: nothing happens, errno (EBADF from write) is kept */
	fflush(stderr);
	saved_fd2 = dup(2);
	close(2);
	errno = 55;
	hp_warn("into the void %d", 1);
	ck_assert_int_eq(errno, 55);
	restore_stderr();
}
END_TEST

START_TEST(test_warn_errno_kept_when_format_fails)
{
	/* a wide string the C locale cannot convert makes vsnprintf fail with
	 * EILSEQ: the caller's errno must still come back unchanged */
	char buf[2048];
	capture_messages();
	errno = 4242;
	hp_warn("%ls", L"\u00e9");
	int after = errno;
	restore_stderr();
	ck_assert_msg(after == 4242, "errno is %d (%s) after hp_warn, not 4242", after, strerror(after));
	/* still one line */
	ck_assert_int_gt(next_message(buf, sizeof(buf)), 0);
	ck_assert_int_eq(strncmp(buf, "hookprof: ", 10), 0);
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + strlen(buf) - 1);
}
END_TEST


/* ---- modules, threads, files, the process (hp_platform.h) ------------ */

struct found_exe {
	char exe[4096];
	int found, vdso, has_id, covers_code, opens_by_proc, others_open_by_path;
	uint64_t code;
};

static int note_module(const struct hp_loaded_module *m, void *arg)
{
	struct found_exe *f = arg;
	if (!m->has_file)
		f->vdso = 1;
	if (strcmp(m->path, f->exe)) {
		f->others_open_by_path += !m->open_path;
		return 0;
	}
	f->found++;
	/* the file itself, even once replaced or deleted */
	f->opens_by_proc = m->open_path && !strcmp(m->open_path, "/proc/self/exe");
	f->has_id = m->build_id_len > 0 && m->build_id_len <= 64;
	for (uint32_t i = 0; i < m->nseg; i++)
		if ((m->seg[i].flags & HP_SEGMENT_X) && f->code >= m->seg[i].start &&
		    f->code < m->seg[i].start + m->seg[i].size)
			f->covers_code = 1;
	return 0;
}

START_TEST(test_modules_each_finds_the_executable)
{
	struct found_exe f = { .code = (uint64_t)(uintptr_t)note_module };
	ssize_t n = readlink("/proc/self/exe", f.exe, sizeof(f.exe) - 1);
	ck_assert_int_gt(n, 0);
	f.exe[n] = 0;
	hp_modules_each(note_module, &f);
	/* once, by its real path, with its build-id and a code segment */
	ck_assert_int_eq(f.found, 1);
	ck_assert(f.has_id);
	ck_assert(f.covers_code);
	ck_assert(f.opens_by_proc);
	ck_assert_int_gt(f.others_open_by_path, 0);
	/* the vDSO is listed, as no file */
	ck_assert(f.vdso);
}
END_TEST

static int stop_at_first(const struct hp_loaded_module *m, void *arg)
{
	(void)m;
	(*(int *)arg)++;
	return 1;
}

START_TEST(test_modules_each_stops)
{
	int calls = 0;
	hp_modules_each(stop_at_first, &calls);
	ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(test_modules_generation_follows_dlopen)
{
	static const char *const candidates[] = { "libanl.so.1", "libutil.so.1", "libnss_dns.so.2" };
	uint64_t before = hp_modules_generation();
	ck_assert_uint_eq(hp_modules_generation(), before);
	void *h = NULL;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && !h; i++)
		if (!dlopen(candidates[i], RTLD_NOW | RTLD_NOLOAD))
			h = dlopen(candidates[i], RTLD_NOW);
	ck_assert_msg(h != NULL, "no library to load here");
	uint64_t loaded = hp_modules_generation();
	ck_assert_uint_ne(loaded, before);
	dlclose(h);
	ck_assert_uint_ne(hp_modules_generation(), loaded);
}
END_TEST

struct started {
	uint32_t ran;
	char name[16];
	int usr1_blocked, all_blocked;
};

static void thread_body(void *arg)
{
	struct started *st = arg;
	sigset_t cur;
	prctl(PR_GET_NAME, st->name);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	st->usr1_blocked = sigismember(&cur, SIGUSR1);
	st->all_blocked = sigismember(&cur, SIGTERM) && sigismember(&cur, SIGALRM);
	__atomic_store_n(&st->ran, 1, __ATOMIC_RELEASE);
	hp_futex_wake(&st->ran);
}

START_TEST(test_thread_start_named_with_signals_blocked)
{
	static struct started st;
	sigset_t before, after;
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	ck_assert_int_eq(hp_thread_start(thread_body, &st, "hp-test-thread"), 0);
	ck_assert_int_eq(hp_futex_wait_while(&st.ran, 0, 5000), 0);
	ck_assert_str_eq(st.name, "hp-test-thread");
	ck_assert(st.usr1_blocked);
	ck_assert(st.all_blocked);
	/* the caller's mask is its own again */
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	ck_assert_int_eq(sigismember(&after, SIGUSR1), sigismember(&before, SIGUSR1));
}
END_TEST

START_TEST(test_thread_names)
{
	char mine[16], again[64];
	prctl(PR_SET_NAME, "hp-named");
	hp_thread_name_self(mine, sizeof(mine));
	ck_assert_str_eq(mine, "hp-named");
	ck_assert_int_eq(hp_thread_name_of(hp_gettid(), again, sizeof(again)), 0);
	ck_assert_str_eq(again, "hp-named");
	ck_assert_int_eq(hp_thread_name_of(0x7ffffff0u, again, sizeof(again)), -1);
}
END_TEST

START_TEST(test_signals_hold_keeps_faults_open)
{
	hp_sigmask_t saved;
	sigset_t cur;
	hp_signals_hold(&saved);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ck_assert(sigismember(&cur, SIGUSR1));
	ck_assert(sigismember(&cur, SIGPROF));
	ck_assert(!sigismember(&cur, SIGSEGV));
	ck_assert(!sigismember(&cur, SIGBUS));
	hp_signals_release(&saved);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ck_assert(!sigismember(&cur, SIGUSR1));
}
END_TEST

static volatile sig_atomic_t usr1_seen;
static void count_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

/* An inner hold (the slow path's help under a hold of its own) keeps
 * signals held until the outer one lets them go. */
START_TEST(test_signals_hold_nested)
{
	struct sigaction sa = { .sa_handler = count_usr1 }, old;
	sigaction(SIGUSR1, &sa, &old);
	usr1_seen = 0;
	hp_sigmask_t outer, inner;
	sigset_t cur;
	hp_signals_hold(&outer);
	hp_signals_hold(&inner);
	raise(SIGUSR1);
	hp_signals_release(&inner);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ck_assert(sigismember(&cur, SIGUSR1));
	ck_assert_int_eq(usr1_seen, 0);
	hp_signals_release(&outer);
	ck_assert_int_eq(usr1_seen, 1);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ck_assert(!sigismember(&cur, SIGUSR1));
	/* Balanced: the next hold blocks again. */
	hp_signals_hold(&outer);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	ck_assert(sigismember(&cur, SIGUSR1));
	hp_signals_release(&outer);
	sigaction(SIGUSR1, &old, NULL);
}
END_TEST

START_TEST(test_mutex_bounded_in_signal)
{
	static hp_mutex_t m = HP_MUTEX_INITIALIZER;
	hp_mutex_lock(&m);
	/* held (by the code a signal interrupted): gives up */
	ck_assert_int_eq(hp_mutex_lock_bounded(&m, 1, 20), -1);
	hp_mutex_unlock(&m);
	ck_assert_int_eq(hp_mutex_lock_bounded(&m, 1, 20), 0);
	hp_mutex_reinit(&m); /* as a forked child does: free again */
	ck_assert_int_eq(hp_mutex_lock_bounded(&m, 1, 20), 0);
	hp_mutex_unlock(&m);
}
END_TEST

START_TEST(test_path_kinds)
{
	ck_assert_int_eq(hp_path_kind("/dev/null"), HP_PATH_CHAR);
	ck_assert_int_eq(hp_path_kind("/"), HP_PATH_DIR);
	ck_assert_int_eq(hp_path_kind("/proc/self/exe"), HP_PATH_FILE);
	ck_assert_int_eq(hp_path_kind("/nonexistent/x"), HP_PATH_NONE);
	ck_assert(hp_path_is_absolute("/x"));
	ck_assert(!hp_path_is_absolute("x/y"));
	char cwd[4096];
	ck_assert_int_eq(hp_cwd(cwd, sizeof(cwd)), 0);
	ck_assert_int_eq(hp_path_kind(cwd), HP_PATH_DIR);
}
END_TEST

START_TEST(test_process_names)
{
	char exe[4096], cmd[4096];
	size_t n = hp_exe_path(exe, sizeof(exe) - 1);
	exe[n] = 0;
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(exe, "/check_platform"));
	ck_assert_str_eq(hp_program_name(), "check_platform");
	n = hp_command_line(cmd, sizeof(cmd));
	/* argv[0], NUL-terminated */
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(cmd[n - 1], 0);
	ck_assert_ptr_nonnull(strstr(cmd, "check_platform"));
	ck_assert_uint_eq(hp_getpid(), (uint32_t)getpid());
	ck_assert_uint_eq(hp_getppid(), (uint32_t)getppid());
}
END_TEST

static Suite *platform_suite(void)
{
	Suite *s = suite_create("platform");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_set_timeout(core, 30);
	tcase_add_test(core, test_init_detects_tsc);
	tcase_add_test(core, test_init_force_monotonic);
	tcase_add_test(core, test_tick_is_rdtsc);
	tcase_add_test(core, test_tick_before_init);
	tcase_add_test(core, test_clock_ns_is_monotonic_raw);
	tcase_add_test(core, test_clock_ns_increases);
	tcase_add_test(core, test_realtime_ns);
	tcase_add_test(core, test_gettid_main);
	tcase_add_test(core, test_gettid_threads);
	tcase_add_test(core, test_pages_alloc_zeroed_and_usable);
	tcase_add_test(core, test_pages_alloc_distinct);
	tcase_add_test(core, test_pages_grow_keeps_contents);
	tcase_add_test(core, test_pages_grow_null);
	tcase_add_test(core, test_futex_wake_from_thread);
	tcase_add_test(core, test_futex_wake_wakes_all);
	tcase_add_test(core, test_futex_timeout);
	tcase_add_test(core, test_futex_value_mismatch);
	tcase_add_test(core, test_warn_one_line);
	tcase_add_test(core, test_warn_each_call_one_write);
	tcase_add_test(core, test_warn_percent_m_sees_callers_errno);
	tcase_add_test(core, test_warn_leaves_stdio_alone);
	tcase_add_test(core, test_modules_each_finds_the_executable);
	tcase_add_test(core, test_modules_each_stops);
	tcase_add_test(core, test_modules_generation_follows_dlopen);
	tcase_add_test(core, test_thread_start_named_with_signals_blocked);
	tcase_add_test(core, test_thread_names);
	tcase_add_test(core, test_signals_hold_keeps_faults_open);
	tcase_add_test(core, test_mutex_bounded_in_signal);
	tcase_add_test(core, test_path_kinds);
	tcase_add_test(core, test_process_names);
	tcase_add_test(core, test_signals_hold_nested);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 30);
	tcase_add_test(limits, test_pages_alloc_too_big);
	tcase_add_test(limits, test_pages_grow_fails_keeps_block);
	tcase_add_test(limits, test_pages_grow_odd_sizes);
	tcase_add_test(limits, test_pages_free_null);
	tcase_add_test(limits, test_futex_zero_timeout);
	tcase_add_test(limits, test_futex_timeout_over_a_second);
	tcase_add_test(limits, test_futex_wake_without_waiters);
	tcase_add_test(limits, test_warn_long_message_whole);
	tcase_add_test(limits, test_warn_message_at_the_small_buffer_size);
	tcase_add_test(limits, test_warn_silent_when_fd2_reused);
	tcase_add_test(limits, test_warn_silent_when_fd2_closed_at_start);
	tcase_add_test(limits, test_warn_not_past_file_size_limit);
	tcase_add_test(limits, test_warn_stderr_closed);
	tcase_add_test(limits, test_warn_errno_kept_when_format_fails);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(platform_suite());
}
