/* fib.c - recursive fib(35): 29,860,703 calls of fib, plus main. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) static unsigned long fib(int n)
{
	return n < 2 ? (unsigned long)n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 35;
	printf("fib(%d) = %lu\n", n, fib(n));
	return 0;
}
