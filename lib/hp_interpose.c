/*
 * hp_interpose.c - C library functions the shared library replaces: exit(),
 * dlclose() and daemon(). Only in libhookprof.so: in libhookprof.a they would clash
 * with libc.a's in a -static link. Each finds the C library's own with
 * dlsym(RTLD_NEXT) and calls it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "hp_platform.h"
#include "hp_runtime.h"

/*
 * exit, interposed: two threads calling exit() at once (undefined in C) split
 * the exit handlers between them, and the one that finds none left ends the
 * process while the other still writes the trace's end. The second caller
 * waits for the first, as newer C libraries make it do. Returning from main
 * does not come through here.
 */
HP_EXPORT void exit(int status)
{
	static uint64_t exiting; /* pid << 32 | tid of the first caller */
	static void (*real_exit)(int);
	void (*next)(int) = __atomic_load_n(&real_exit, __ATOMIC_ACQUIRE);
	if (!next) {
		next = (void (*)(int))dlsym(RTLD_NEXT, "exit");
		if (!next)
			_exit(status);
		__atomic_store_n(&real_exit, next, __ATOMIC_RELEASE);
	}
	/* Thread and process: a child forked from an exit handler inherits
	 * `exiting` but is not exiting. */
	uint64_t self = (uint64_t)getpid() << 32 | hp_gettid();
	uint64_t seen = __atomic_load_n(&exiting, __ATOMIC_ACQUIRE);
	for (;;) {
		if (seen >> 32 == self >> 32) {
			if (seen == self)
				break; /* nested, from an exit handler: the C library's */
			for (;;)
				pause(); /* the other thread's exit() ends the process */
		}
		if (__atomic_compare_exchange_n(&exiting, &seen, self, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	next(status);
	__builtin_unreachable();
}

/* After an unload: the snapshot that shows the object gone bounds its
 * lifetime, before anything else can be loaded at its addresses. The
 * program sees the errno the C library left. */
static void objects_changed(void)
{
	int saved = errno;
	hp_runtime_objects_changing();
	hp_runtime_objects_changed();
	errno = saved;
}

/*
 * dlclose, interposed: an object unloaded before the writer's next module
 * snapshot (once a second) would leave its addresses without a name, so
 * the map is written while the object is still there, and again once it is
 * gone (objects_changed). Not on the per-event path: it may lock.
 *
 * dlopen is not interposed: the C library finds the caller's RUNPATH,
 * $ORIGIN and namespace from its return address, which would become ours.
 * A loaded object's lifetime begins at the last snapshot without it, and
 * every unload is followed by a snapshot, so none is needed after dlopen.
 */
HP_EXPORT int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	int (*next)(void *) = __atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE);
	if (!next) {
		next = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
		if (!next)
			return -1;
		__atomic_store_n(&real_dlclose, next, __ATOMIC_RELEASE);
	}
	hp_runtime_objects_changing();
	int rc = next(handle);
	objects_changed();
	return rc;
}

/*
 * daemon, interposed: its parent ends with _exit() inside the C library,
 * which runs no destructor, so the parent's trace would have no end. The
 * fork handler finishes it in the parent instead (hp_runtime.h).
 */
HP_EXPORT int daemon(int nochdir, int noclose)
{
	static int (*real_daemon)(int, int);
	int (*next)(int, int) = __atomic_load_n(&real_daemon, __ATOMIC_ACQUIRE);
	if (!next) {
		next = (int (*)(int, int))dlsym(RTLD_NEXT, "daemon");
		if (!next)
			return -1;
		__atomic_store_n(&real_daemon, next, __ATOMIC_RELEASE);
	}
	hp_runtime_daemon_forking(1);
	int rc = next(nochdir, noclose);
	hp_runtime_daemon_forking(0);
	return rc;
}
