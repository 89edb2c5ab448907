/* nested.c - main calls nest_a 3 times, nest_a calls nest_b 2 times, nest_b
 * calls nest_c 5 times: exactly 1/3/6/30 calls. */
#include <stdio.h>

volatile unsigned long sink;

__attribute__((noinline)) void nest_c(int k)
{
	unsigned long x = (unsigned long)k;
	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink += x;
}

__attribute__((noinline)) void nest_b(int k)
{
	for (int i = 0; i < 5; i++)
		nest_c(k * 5 + i);
	sink ^= (unsigned long)k;
}

__attribute__((noinline)) void nest_a(int k)
{
	for (int i = 0; i < 2; i++)
		nest_b(k * 2 + i);
	sink += 1;
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		nest_a(i);
	printf("nested done %d\n", (int)(sink != 12345));
	return 0;
}
