/*
 * check_unwind.c - hp_unwind: a thread's root stack (from the first
 * event's function up, truncated at HP_ROOT_FRAMES, the whole stack when
 * that function is not found), and, through the real runtime in a child
 * that calls the hooks itself, the STACK record and the CRASH record of a
 * run that dies of SIGSEGV, of abort(), of a stack overflow.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "hp_format.h"
#include "hp_platform.h"
#include "testkit.h"

#include "../symbolize/hp_analyze.h"

void __cyg_profile_func_enter(void *fn, void *call_site);

/* A return address into fn: within its first bytes (the functions here
 * are small). */
#define NEAR(pc, fn) ((pc) > (uint64_t)(uintptr_t)(fn) && (pc) < (uint64_t)(uintptr_t)(fn) + 512)
/* The faulting instruction itself: possibly fn's first. */
#define AT_OR_NEAR(pc, fn) ((pc) == (uint64_t)(uintptr_t)(fn) || NEAR(pc, fn))

static int *volatile nowhere = (int *)8;
static volatile int forever = 1;

static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char err[1024];
static struct hp_analysis A;
static int analyzed;

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	analyzed = 0;
}

static void teardown(void)
{
	if (analyzed)
		hp_analysis_free(&A);
	tk_remove_tree(dir);
}

static int in_libc(uint64_t pc)
{
	Dl_info di;
	return dladdr((void *)(uintptr_t)pc, &di) && di.dli_fname && strstr(di.dli_fname, "libc.so");
}

/* ------------------------------------------------------ root stacks */

__attribute__((noinline)) static void first_function(struct hp_frames *s)
{
	hp_stack_root(s, (uint64_t)(uintptr_t)first_function);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void *thread_function(void *arg)
{
	hp_stack_root(arg, (uint64_t)(uintptr_t)thread_function);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void deep(struct hp_frames *s, int n)
{
	if (n)
		deep(s, n - 1);
	else
		hp_stack_root(s, (uint64_t)(uintptr_t)deep);
	__asm__ volatile("" ::: "memory");
}

START_TEST(test_root_from_first_function)
{
	struct hp_frames s;
	first_function(&s);
	ck_assert_uint_eq(s.flags, 0);
	ck_assert_uint_ge(s.n, 3);
	ck_assert_msg(NEAR(s.pc[0], first_function), "frame 0 at %#llx, not in first_function",
		      (unsigned long long)s.pc[0]);
	/* the same again: the second time our own frames are skipped by count */
	struct hp_frames again;
	first_function(&again);
	ck_assert_uint_eq(again.n, s.n);
	ck_assert_uint_eq(again.pc[0], s.pc[0]);
}
END_TEST

START_TEST(test_root_of_a_thread_ends_in_libc)
{
	struct hp_frames s;
	pthread_t th;
	first_function(&s); /* calibrates like the first thread of a run */
	ck_assert_int_eq(pthread_create(&th, NULL, thread_function, &s), 0);
	pthread_join(th, NULL);
	ck_assert_uint_eq(s.flags, 0);
	ck_assert_uint_ge(s.n, 2);
	ck_assert(NEAR(s.pc[0], thread_function));
	for (uint32_t i = 1; i < s.n; i++) /* start_thread, clone3 */
		ck_assert_msg(in_libc(s.pc[i]), "frame %u not in libc", i);
}
END_TEST

/* ------------------------------------------- the runtime, in a child */

static void no_core(void)
{
	struct rlimit r = { 0, 0 };
	setrlimit(RLIMIT_CORE, &r);
}

__attribute__((noinline)) static int child_exits(void *arg)
{
	(void)arg;
	__cyg_profile_func_enter((void *)(uintptr_t)child_exits, NULL);
	return TK_CHILD_OK;
}

__attribute__((noinline)) static void fault(void)
{
	*nowhere = 1;
}

__attribute__((noinline)) static int child_segv(void *arg)
{
	(void)arg;
	no_core();
	__cyg_profile_func_enter((void *)(uintptr_t)child_segv, NULL);
	fault();
	return TK_CHILD_FAILED;
}

__attribute__((noinline)) static int child_abort(void *arg)
{
	(void)arg;
	no_core();
	__cyg_profile_func_enter((void *)(uintptr_t)child_abort, NULL);
	abort();
}

__attribute__((noinline)) static int overflow(volatile char *p)
{
	volatile char pad[256];
	pad[0] = p ? p[0] : 0;
	return forever ? overflow(pad) + pad[1] : 0;
}

__attribute__((noinline)) static int child_overflow(void *arg)
{
	(void)arg;
	no_core();
	__cyg_profile_func_enter((void *)(uintptr_t)child_overflow, NULL);
	return overflow(NULL);
}

/* Runs fn in a child tracing into dir; analyzes its trace. */
static void run_and_analyze(tk_child_fn fn, int want_rc)
{
	static const char *const env[] = { NULL };
	char trace[PATH_MAX + 32];
	snprintf(trace, sizeof(trace), "%s/t.hookprof", dir);
	int rc = tk_run_child(trace, env, fn, NULL, NULL);
	ck_assert_int_eq(rc, want_rc);
	ck_assert_msg(hp_analyze(trace, 0, NULL, NULL, &A, err, sizeof(err)) == 0, "%s", err);
	analyzed = 1;
}

START_TEST(test_stack_record_of_main)
{
	run_and_analyze(child_exits, 0);
	ck_assert_int_eq(A.info.crash.present, 0);
	const struct hp_stack *root = &A.info.streams[0].root;
	ck_assert_uint_eq(root->flags, 0);
	ck_assert_uint_ge(root->n, 3);
	ck_assert(NEAR(root->pc[0], child_exits));
}
END_TEST

START_TEST(test_crash_segv)
{
	run_and_analyze(child_segv, 128 + SIGSEGV);
	const struct hp_crash *k = &A.info.crash;
	ck_assert_int_eq(k->present, 1);
	ck_assert_uint_eq(k->signal, SIGSEGV);
	ck_assert_uint_eq(k->stream, 0);
	ck_assert_uint_eq(k->addr, 8);
	ck_assert_uint_eq(k->stack.flags, 0);
	ck_assert_uint_ge(k->stack.n, 3);
	/* frame 0 is the faulting instruction in the uninstrumented fault() */
	ck_assert(AT_OR_NEAR(k->stack.pc[0], fault));
	ck_assert(NEAR(k->stack.pc[1], child_segv));
	ck_assert_uint_eq(A.ncrash_open, 1);
	ck_assert_uint_eq(A.crash_open[0], (uint64_t)(uintptr_t)child_segv);
}
END_TEST

START_TEST(test_crash_abort_has_libc_frames)
{
	run_and_analyze(child_abort, 128 + SIGABRT);
	const struct hp_crash *k = &A.info.crash;
	ck_assert_int_eq(k->present, 1);
	ck_assert_uint_eq(k->signal, SIGABRT);
	ck_assert_uint_ge(k->stack.n, 3);
	ck_assert(in_libc(k->stack.pc[0]));
	uint32_t i = 0;
	while (i < k->stack.n && in_libc(k->stack.pc[i]))
		i++;
	ck_assert_uint_lt(i, k->stack.n);
	ck_assert(NEAR(k->stack.pc[i], child_abort));
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_root_truncated)
{
	struct hp_frames s;
	deep(&s, HP_ROOT_FRAMES + 8);
	ck_assert_uint_eq(s.flags, HP_STACK_TRUNCATED);
	ck_assert_uint_eq(s.n, HP_ROOT_FRAMES);
	ck_assert(NEAR(s.pc[0], deep));
}
END_TEST

START_TEST(test_root_function_not_found)
{
	struct hp_frames s;
	hp_stack_root(&s, 0x1234);
	ck_assert_uint_eq(s.flags, HP_STACK_NO_ROOT);
	ck_assert_uint_ge(s.n, 2);
	ck_assert(NEAR(s.pc[0], hp_stack_root));
}
END_TEST

START_TEST(test_crash_stack_overflow_truncated)
{
	run_and_analyze(child_overflow, 128 + SIGSEGV);
	const struct hp_crash *k = &A.info.crash;
	ck_assert_int_eq(k->present, 1);
	ck_assert_uint_eq(k->signal, SIGSEGV);
	ck_assert_uint_eq(k->stack.n, HP_CRASH_FRAMES);
	ck_assert_uint_eq(k->stack.flags, HP_STACK_TRUNCATED);
	for (uint32_t i = 1; i < k->stack.n; i++)
		ck_assert(NEAR(k->stack.pc[i], overflow));
}
END_TEST

static Suite *unwind_suite(void)
{
	Suite *s = suite_create("unwind");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_root_from_first_function);
	tcase_add_test(core, test_root_of_a_thread_ends_in_libc);
	tcase_add_test(core, test_stack_record_of_main);
	tcase_add_test(core, test_crash_segv);
	tcase_add_test(core, test_crash_abort_has_libc_frames);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_root_truncated);
	tcase_add_test(limits, test_root_function_not_found);
	tcase_add_test(limits, test_crash_stack_overflow_truncated);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(unwind_suite(), top, sizeof(top), "check_unwind");
}
