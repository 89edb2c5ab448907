/*
 * hp_interpose_fd.c - close(), close_range() and closefrom(), interposed so
 * that a program that closes "every" descriptor (a daemon, before or after
 * a chroot, where the trace's path may be out of reach) leaves the trace's
 * own open. Closing it is reported as done. Only in libhookprof.so, like
 * hp_interpose.c; dup2() onto our number, or the raw system call, is caught
 * later by the output's check of its descriptor (it reopens by name).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hp_linux.h"
#include "hp_platform.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* The C library's own, found once. */
static void *next_of(void **cache, const char *name)
{
	void *next = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (!next) {
		next = dlsym(RTLD_NEXT, name);
		__atomic_store_n(cache, next, __ATOMIC_RELEASE);
	}
	return next;
}

static int real_close_range(unsigned first, unsigned last, int flags)
{
	static void *cache;
	int (*next)(unsigned, unsigned, int) = next_of(&cache, "close_range");
	if (next)
		return next(first, last, flags);
	return (int)syscall(SYS_close_range, first, last, flags);
}

HP_EXPORT int close(int fd)
{
	static void *cache;
	int (*next)(int) = next_of(&cache, "close");
	if (hp_file_keeps(fd))
		return 0;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(fd);
}

/* [first, last] without fd, in at most two calls. */
static int close_range_around(unsigned first, unsigned last, int flags, unsigned fd)
{
	int rc = 0;
	if (first < fd && real_close_range(first, fd - 1, flags) < 0)
		rc = -1;
	if (fd < last && real_close_range(fd + 1, last, flags) < 0)
		rc = -1;
	return rc;
}

HP_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int fd = hp_file_kept_fd();
	/* Marking ours close-on-exec is harmless: it is already. */
	if (fd < 0 || (unsigned)fd < first || (unsigned)fd > last || (flags & CLOSE_RANGE_CLOEXEC))
		return real_close_range(first, last, flags);
	return close_range_around(first, last, flags, (unsigned)fd);
}

HP_EXPORT void closefrom(int lowfd)
{
	static void *cache;
	void (*next)(int) = next_of(&cache, "closefrom");
	int fd = hp_file_kept_fd();
	if (fd >= 0 && fd >= lowfd && lowfd >= 0) {
		/* Below ours, then the C library's for the rest, which falls back
		 * to /proc/self/fd where close_range is missing. */
		if (lowfd < fd && real_close_range((unsigned)lowfd, (unsigned)fd - 1, 0) < 0)
			for (int i = lowfd; i < fd; i++)
				syscall(SYS_close, i);
		lowfd = fd + 1;
	}
	if (next)
		next(lowfd);
}
