/* blockedsig.c - a fatal signal for a thread that waits for the writer. Run
 * with a small buffer (HOOKPROF_BUFFER=128K) in stream mode. bs_worker (a
 * thread) calls bs_work without end, so its buffer is soon full and it
 * waits for hookprof's writer thread. To be sure it waits, the writer is
 * held back at work: this program's pthread_mutex_lock (which
 * libhookprof, linked, calls instead of the C library's) makes the thread
 * named "hookprof-writer" wait while `hold` is set, holding the lock it
 * just took (its first is the writer's lock: an owner whose ring is full
 * encodes it itself only while that lock is free).
 * main calls bs_setup 10 times, starts the worker and waits in bs_watch
 * (called once) until the worker sleeps (state S in /proc: it only ever
 * sleeps waiting for the writer; after 2000 looks 1 ms apart it goes on
 * anyway). Then it prints how many times bs_work was entered (the worker
 * stands still; a call whose exit hook waits counts as entered), sends
 * SIGTERM to the worker, lets the writer go and waits for the end. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Shared between threads: atomic (relaxed: nothing else is ordered by
 * them), so that ThreadSanitizer reports races of hookprof, not ours. */
volatile unsigned long sink;
static volatile int hold = 1;
static volatile pid_t worker_tid;
static volatile unsigned long entered; /* bs_work calls past their enter hook */

__attribute__((no_instrument_function)) int pthread_mutex_lock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	int (*next)(pthread_mutex_t *) = __atomic_load_n(&real, __ATOMIC_RELAXED);
	if (!next) {
		next = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
		__atomic_store_n(&real, next, __ATOMIC_RELAXED);
	}
	int rc = next(m);
	char name[16] = "";
	if (__atomic_load_n(&hold, __ATOMIC_RELAXED) && prctl(PR_GET_NAME, name) == 0 &&
	    !strcmp(name, "hookprof-writer"))
		while (__atomic_load_n(&hold, __ATOMIC_RELAXED))
			usleep(1000);
	return rc;
}

__attribute__((noinline)) void bs_setup(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void bs_work(void)
{
	__atomic_fetch_add(&entered, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void *bs_worker(void *arg)
{
	(void)arg;
	__atomic_store_n(&worker_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	for (;;)
		bs_work();
	return NULL;
}

/* The state letter of thread tid, from /proc/self/task/TID/stat. */
__attribute__((no_instrument_function)) static char state_of(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* after the name, which may hold spaces */
	return p && p[1] == ' ' ? p[2] : '?';
}

__attribute__((noinline)) int bs_watch(void)
{
	for (int i = 0; i < 2000; i++) {
		pid_t tid = __atomic_load_n(&worker_tid, __ATOMIC_RELAXED);
		if (tid && state_of(tid) == 'S')
			return 1;
		usleep(1000);
	}
	return 0;
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		bs_setup(i);
	pthread_t t;
	if (pthread_create(&t, NULL, bs_worker, NULL))
		return 2;
	int waiting = bs_watch();
	printf("blockedsig %s %lu\n", waiting ? "waiting" : "not seen waiting",
	       __atomic_load_n(&entered, __ATOMIC_RELAXED));
	fflush(stdout);
	/* Pending before the worker can run again: it is handled first. */
	pthread_kill(t, SIGTERM);
	__atomic_store_n(&hold, 0, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return 0;
}
