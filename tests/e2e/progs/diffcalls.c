/* diffcalls.c - main calls dc_mid 4 times, dc_mid calls dc_leaf DC_N times
 * (10 unless built with -DDC_N=...): two builds differ in dc_leaf's calls
 * only, by construction (4*DC_N). */
#include <stdio.h>

#ifndef DC_N
#define DC_N 10
#endif

volatile unsigned long sink;

__attribute__((noinline)) void dc_leaf(int k)
{
	for (int i = 0; i < 300; i++)
		sink += (unsigned long)k * (unsigned long)i;
}

__attribute__((noinline)) void dc_mid(void)
{
	for (int i = 0; i < DC_N; i++)
		dc_leaf(i);
}

int main(void)
{
	for (int i = 0; i < 4; i++)
		dc_mid();
	printf("diffcalls %d\n", DC_N);
	return 0;
}
