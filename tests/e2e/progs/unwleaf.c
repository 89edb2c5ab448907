/* unwleaf.c - built WITHOUT -finstrument-functions: the crash happens in
 * frames the hooks never see; only libunwind's backtrace shows them. */
#include <stdint.h>
#include <stdlib.h>

int *volatile leaf_nowhere;

__attribute__((noinline)) void leaf_segv(void)
{
	*leaf_nowhere = 42;
}

__attribute__((noinline)) void leaf_abort(void)
{
	abort();
}

/* A stack smashed the way a buffer overflow does it (built with
 * -fno-stack-protector): the return address and what lies above are
 * 0x4141..., then a store through that non-canonical address faults. The
 * unwinder must stop at the garbage, not fault in the handler. The
 * overflow is the point: not for the sanitizers to stop or wrap. */
__attribute__((noinline, no_sanitize("address", "undefined", "thread"))) void leaf_smash(void)
{
	volatile unsigned long buf[4];
	volatile unsigned long *p = buf;
	for (int i = 0; i < 16; i++)
		p[i] = 0x4141414141414141ul;
	*(volatile int *)(uintptr_t)buf[0] = 1;
}
