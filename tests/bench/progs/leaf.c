/*
 * leaf.c - a hot loop calling a tiny leaf function from a few levels down:
 * main -> run -> outer (x100) -> middle (x100,000) -> leaf (x30,000,000).
 */
#include <stdio.h>

__attribute__((noipa)) static unsigned leaf(unsigned x)
{
	return (x * 2654435761u) ^ (x >> 7);
}

__attribute__((noipa)) static unsigned middle(unsigned seed)
{
	unsigned acc = seed;
	for (unsigned i = 0; i < 300; i++)
		acc += leaf(acc + i);
	return acc;
}

__attribute__((noipa)) static unsigned outer(unsigned seed)
{
	unsigned acc = seed;
	for (unsigned i = 0; i < 1000; i++)
		acc ^= middle(acc + i);
	return acc;
}

__attribute__((noipa)) static unsigned run(void)
{
	unsigned acc = 1;
	for (unsigned i = 0; i < 100; i++)
		acc += outer(acc + i);
	return acc;
}

int main(void)
{
	printf("leaf: %u\n", run());
	return 0;
}
