/* deepbind.c - not instrumented itself: dlopens the plugin given as argv[1]
 * (instrumented and linked with libhookprof, which comes and goes with it)
 * with RTLD_DEEPBIND, calls plugin_run from a thread and from main, then
 * dlcloses it; the thread exits after the dlclose. Then it raises SIGTERM:
 * the process must die of SIGTERM, as it would without the plugin, not of
 * a jump into the unloaded library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static int (*run)(int);
static pthread_barrier_t closed;
static int from_thread;

static void *thread(void *arg)
{
	(void)arg;
	from_thread = run(1);
	pthread_barrier_wait(&closed); /* thread started, plugin called */
	pthread_barrier_wait(&closed); /* plugin closed: now exit */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "deepbind: %s\n", dlerror());
		return 2;
	}
	run = (int (*)(int))dlsym(h, "plugin_run");
	pthread_t t;
	if (!run || pthread_barrier_init(&closed, NULL, 2) || pthread_create(&t, NULL, thread, NULL))
		return 2;
	pthread_barrier_wait(&closed);
	int total = from_thread + run(10);
	int rc = dlclose(h);
	pthread_barrier_wait(&closed);
	pthread_join(t, NULL);
	printf("deepbind %d dlclose %d\n", total, rc);
	fflush(stdout);
	raise(SIGTERM);
	return 0;
}
