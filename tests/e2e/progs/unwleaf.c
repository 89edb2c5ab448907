/* unwleaf.c - built WITHOUT -finstrument-functions: the crash happens in
 * frames the hooks never see; only libunwind's backtrace shows them. */
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
