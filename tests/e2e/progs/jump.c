/* jump.c - longjmp out of nested instrumented calls: jmp_outer sets a jump
 * point and calls jmp_mid -> jmp_inner, which longjmps back to it, so
 * jmp_inner and jmp_mid never return and their exit hooks never run; then
 * jmp_outer returns normally. Three times, then jmp_after runs once. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf back;
volatile int sink;

__attribute__((noinline)) void jmp_inner(int i)
{
	sink += i;
	longjmp(back, i + 1);
}

__attribute__((noinline)) void jmp_mid(int i)
{
	jmp_inner(i);
	sink++;
}

__attribute__((noinline)) int jmp_outer(int i)
{
	int got = setjmp(back);
	if (!got)
		jmp_mid(i);
	return got;
}

__attribute__((noinline)) void jmp_after(void)
{
	sink++;
}

int main(void)
{
	int sum = 0;
	for (int i = 0; i < 3; i++)
		sum += jmp_outer(i);
	jmp_after();
	printf("jump %d\n", sum);
	return 0;
}
