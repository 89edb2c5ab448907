/* unwcrash.c - ends by a fatal signal inside code built without hooks
 * (unwleaf.c): "segv" faults in leaf_segv, "abort" calls abort() from
 * leaf_abort, "smash" overwrites leaf_smash's stack with 0x41 bytes and
 * faults, all from main -> cr_outer -> cr_inner; "tsegv" does what "segv"
 * does in a thread (cr_crasher -> cr_outer -> ...); "overflow" recurses in
 * cr_recurse until the stack runs out; "thread" runs cr_thread (which
 * calls cr_work 3 times) in a thread and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

void leaf_segv(void);
void leaf_abort(void);
void leaf_smash(void);

volatile int sink;

__attribute__((noinline)) void cr_inner(const char *how)
{
	if (!strcmp(how, "segv"))
		leaf_segv();
	else if (!strcmp(how, "smash"))
		leaf_smash();
	else
		leaf_abort();
	sink++;
}

__attribute__((noinline)) void cr_outer(const char *how)
{
	cr_inner(how);
	sink++;
}

__attribute__((noinline)) int cr_recurse(volatile char *p)
{
	volatile char pad[64];
	pad[0] = p ? p[0] : 0;
	return sink >= 0 ? cr_recurse(pad) + pad[1] : 0;
}

__attribute__((noinline)) void cr_work(int i)
{
	sink += i;
}

__attribute__((noinline)) void *cr_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		cr_work(i);
	return NULL;
}

__attribute__((noinline)) void *cr_crasher(void *arg)
{
	cr_outer(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "segv";
	printf("unwcrash %s\n", how);
	fflush(stdout);
	if (!strcmp(how, "overflow"))
		return cr_recurse(NULL);
	if (!strcmp(how, "thread")) {
		pthread_t th;
		pthread_create(&th, NULL, cr_thread, NULL);
		pthread_join(th, NULL);
		return 0;
	}
	if (!strcmp(how, "tsegv")) {
		pthread_t th;
		pthread_create(&th, NULL, cr_crasher, "segv");
		pthread_join(th, NULL);
		return 0;
	}
	cr_outer(how);
	return 0;
}
