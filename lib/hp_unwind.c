/*
 * hp_unwind.c - Linux only: hp_platform.h's stack captures (crash
 * backtraces and thread root stacks) with libunwind (local unwinding, from
 * .eh_frame). The records they go into are hp_records.c's.
 *
 * What libunwind 1.6 does behind unw_step, and why it is acceptable in a
 * fatal signal's handler and in the hook's slow path:
 * - no malloc: the .eh_frame_hdr lookup and the CFI interpreter work on the
 *   stack, and its register-state cache and pools are mmap'd. (Only objects
 *   without .eh_frame_hdr would make it read .debug_frame with malloc.)
 * - dl_iterate_phdr, to find the object and its unwind table of each new
 *   IP. glibc's dl_iterate_phdr takes the loader's write lock, which is
 *   recursive: a thread that crashes inside the loader or inside a
 *   dl_iterate_phdr callback takes it again and does not deadlock. Another
 *   thread that holds it lets go (only a thread that stays stopped would
 *   not: none of ours does). What remains is a crash in the middle of
 *   dlopen's update of the object list, where the walk may read a list
 *   being changed; that is the one case where the backtrace may be lost,
 *   and a bound on frames keeps the walk finite in every case.
 * - the global register-state cache (UNW_CACHE_GLOBAL, the default, left
 *   as the program may use libunwind too). libunwind holds its lock with
 *   every signal blocked, so no handler of ours runs while this thread
 *   holds it; a fault inside that window kills the process before any
 *   handler. Entries cached by earlier walks (the thread roots, which
 *   share start_thread and the program's outer frames) spare those frames
 *   the dl_iterate_phdr.
 * tdep_init's one-time set-up runs in hp_stack_init, at start-up. It
 * opens a pipe (two descriptors, for its write()-based memory check) that
 * it keeps: under a small descriptor limit those would be the program's
 * last ones, so there it is made to land above the soft limit, or, where
 * the limit cannot be raised, libunwind is left alone until a crash and
 * threads get no root stack.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "hp_platform.h"

#include <fcntl.h>
#include <libunwind.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hp_encode.h"
#include "hp_format.h"

/* Our frames below the first instrumented one: this file's, the slow path,
 * the hook. A few more in case a compiler splits them. */
#define OWN_FRAMES_MAX 8

/* Below this soft RLIMIT_NOFILE two descriptors matter (hp_output.c keeps
 * its own out of the way from the same bound). */
#define FEW_DESCRIPTORS 4096

static int roots_off;

static void init_libunwind(void)
{
	unw_context_t uc;
	unw_cursor_t c;
	if (unw_getcontext(&uc) == 0)
		unw_init_local(&c, &uc);
}

/* Every free number below the soft limit is taken for the moment, and the
 * limit raised by two: the pipe libunwind opens then lies above it, where
 * the program's open() never reaches. -1 if the limit cannot be raised. */
static int init_above_limit(const struct rlimit *rl)
{
	int placeholder[FEW_DESCRIPTORS];
	size_t n = 0;
	struct rlimit raised = *rl;
	raised.rlim_cur += 2;
	if (rl->rlim_max != RLIM_INFINITY && raised.rlim_cur > rl->rlim_max)
		return -1;
	int anchor = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (anchor < 0)
		return -1;
	placeholder[n++] = anchor;
	int fd;
	while (n < FEW_DESCRIPTORS && (fd = fcntl(anchor, F_DUPFD_CLOEXEC, 0)) >= 0)
		placeholder[n++] = fd;
	int rc = setrlimit(RLIMIT_NOFILE, &raised);
	if (rc == 0) {
		init_libunwind();
		setrlimit(RLIMIT_NOFILE, rl);
	}
	while (n)
		close(placeholder[--n]);
	return rc;
}

void hp_stack_init(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < FEW_DESCRIPTORS) {
		roots_off = init_above_limit(&rl) < 0;
		return;
	}
	init_libunwind();
}

static uint64_t ip_of(unw_cursor_t *c)
{
	unw_word_t ip = 0;
	unw_get_reg(c, UNW_REG_IP, &ip);
	return (uint64_t)ip;
}

/* Frames from the cursor's up to max; sets HP_STACK_TRUNCATED if more. */
static uint32_t walk(unw_cursor_t *c, uint64_t *pc, uint32_t max, uint32_t *flags)
{
	uint32_t n = 0;
	do {
		uint64_t ip = ip_of(c);
		if (!ip)
			break;
		if (n == max) {
			*flags |= HP_STACK_TRUNCATED;
			break;
		}
		pc[n++] = ip;
	} while (unw_step(c) > 0);
	return n;
}

/* Frames of ours below the first instrumented one (this file's, the slow
 * path, the hook): the same for every thread, since every first event
 * comes the same way. Found once with unw_get_proc_info, which costs a
 * dl_iterate_phdr per frame; later threads step over them by count. */
static int own_frames = -1;

/* Steps past our own frames to the one of first_func; 0 if found. */
static int find_function(unw_cursor_t *c, uint64_t first_func)
{
	for (int i = 0; i < OWN_FRAMES_MAX; i++) {
		unw_proc_info_t pi;
		if (unw_get_proc_info(c, &pi) == 0 && pi.start_ip == first_func) {
			__atomic_store_n(&own_frames, i, __ATOMIC_RELAXED);
			return 0;
		}
		if (unw_step(c) <= 0)
			return -1;
	}
	return -1;
}

static int skip_to_function(unw_cursor_t *c, uint64_t first_func)
{
	int n = __atomic_load_n(&own_frames, __ATOMIC_RELAXED);
	if (n < 0)
		return find_function(c, first_func);
	for (int i = 0; i < n; i++)
		if (unw_step(c) <= 0)
			return -1;
	return 0;
}

__attribute__((noinline)) void hp_stack_root(struct hp_frames *s, uint64_t first_func)
{
	unw_context_t uc;
	unw_cursor_t c;
	s->n = 0;
	s->flags = 0;
	if (roots_off || unw_getcontext(&uc) || unw_init_local(&c, &uc))
		return;
	if (skip_to_function(&c, first_func & ~HP_RAW_EXIT)) {
		/* Not found (an odd compiler, a function without unwind
		 * information): the whole stack, ours included, says as much. */
		s->flags |= HP_STACK_NO_ROOT;
		if (unw_init_local(&c, &uc))
			return;
	}
	s->n = walk(&c, s->pc, HP_ROOT_FRAMES, &s->flags);
}

uint32_t hp_stack_crash(const struct hp_fatal *f, uint64_t *pc, uint32_t max, uint32_t *flags)
{
	unw_cursor_t c;
	if (!f->context)
		return 0;
	/* The signal frame's IP is the faulting instruction itself, not a
	 * return address: libunwind must not look one byte before it. */
	if (unw_init_local2(&c, (unw_context_t *)f->context, UNW_INIT_SIGNAL_FRAME))
		return 0;
	return walk(&c, pc, max, flags);
}
