/* control.c - the control API of hookprof.h from C, on several threads:
 * regions, pauses, marks, values, thread names; `control repair` misuses
 * regions in the three ways the reader repairs. Prints "done". */
#define _GNU_SOURCE
#include <hookprof.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int sink;

static void tokenize(void)
{
	for (int i = 0; i < 100; i++)
		__atomic_fetch_add(&sink, i, __ATOMIC_RELAXED); /* threads add: TSan reports ours, not the program's */
}

/* [parse] once, [tokenize] twice per call */
static void parse(void)
{
	HOOKPROF_REGION("parse");
	for (int i = 0; i < 2; i++) {
		hookprof_region_begin("tokenize");
		tokenize();
		hookprof_region_end("tokenize");
	}
}

/* 300 ms paused: none of it is sleeper's */
static void sleeper(void)
{
	hookprof_pause();
	usleep(300000);
	hookprof_resume();
}

/* pauses nest: recording resumes at the outer resume */
static void nested_sleeper(void)
{
	hookprof_pause();
	hookprof_pause();
	tokenize(); /* not recorded */
	usleep(100000);
	hookprof_resume();
	tokenize(); /* still paused: not recorded */
	hookprof_resume();
}

static void *worker(void *arg)
{
	int n = (int)(long)arg;
	if (n == 1) {
		hookprof_thread_name("ctl-worker-1");
	} else {
		pthread_setname_np(pthread_self(), "ctl-worker-2");
	}
	for (int i = 1; i <= 4; i++) {
		HOOKPROF_REGION("work");
		hookprof_value("thread_v", i);
		tokenize();
	}
	return NULL;
}

static void opened_here(void)
{
	hookprof_region_begin("unended"); /* not ended when opened_here returns */
}

static void repairs(void)
{
	hookprof_region_end("orphan");      /* an end without a begin */
	opened_here();
	hookprof_region_begin("outer");
	hookprof_region_begin("inner");
	hookprof_region_end("outer");       /* inner is still open: out of order */
	hookprof_region_end("inner");       /* repaired already: no second word */
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "repair")) {
		repairs();
		puts("done");
		return 0;
	}
	for (int i = 0; i < 5; i++)
		parse();
	sleeper();
	nested_sleeper();
	for (int i = 1; i <= 3; i++)
		hookprof_mark("step %d of %s", i, "three");
	char longer[400];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	hookprof_mark("%s", longer);
	hookprof_value("queue", 10);
	hookprof_value("queue", 20);
	hookprof_value("queue", 60);
	hookprof_value("neg", -5);
	hookprof_value("neg", 5);
	hookprof_value("big", -9000000000000000000ll);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	puts(hookprof_flush() == 0 || hookprof_trace_path() == NULL ? "done" : "flush failed");
	return 0;
}
