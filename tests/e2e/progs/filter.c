/* filter.c - known calls for HOOKPROF_EXCLUDE, INCLUDE, DEPTH and MIN
 * (tests/e2e/sections/98-filter.sh):
 *   main -> compress (x3) -> hot_leaf (x100), encode_block (x2) -> put_bits (x5)
 *   main -> jumper (x2) -> jump_deep -> jump_leaf, which longjmps to main
 *   main -> after_jump (x4) -> tiny (x1)
 *   main -> napper (x3): sleeps 2 ms; main -> quick (x7): returns at once
 * Prints "filter 1".
 */
#include <setjmp.h>
#include <stdio.h>
#include <time.h>

volatile int sink;
static jmp_buf back;

__attribute__((noinline)) void hot_leaf(int i) { sink += i; }
__attribute__((noinline)) void put_bits(int i) { sink ^= i; }

__attribute__((noinline)) void encode_block(int n)
{
	for (int i = 0; i < 5; i++)
		put_bits(n + i);
}

__attribute__((noinline)) void compress(int n)
{
	for (int i = 0; i < 100; i++)
		hot_leaf(i);
	for (int i = 0; i < 2; i++)
		encode_block(n + i);
}

__attribute__((noinline)) void jump_leaf(int i) { longjmp(back, i + 1); }
__attribute__((noinline)) void jump_deep(int i) { jump_leaf(i); sink++; }
__attribute__((noinline)) void jumper(int i) { jump_deep(i); sink++; }

__attribute__((noinline)) void tiny(void) { sink++; }
__attribute__((noinline)) void after_jump(void) { tiny(); }

__attribute__((noinline)) void napper(void)
{
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void quick(void) { sink++; }

int main(void)
{
	for (int i = 0; i < 3; i++)
		compress(i);
	for (volatile int i = 0; i < 2; i++)
		if (!setjmp(back))
			jumper(i);
	for (int i = 0; i < 4; i++)
		after_jump();
	for (int i = 0; i < 3; i++)
		napper();
	for (int i = 0; i < 7; i++)
		quick();
	printf("filter 1\n");
	return 0;
}
