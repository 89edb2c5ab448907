/* bigtrace.c - a trace of several megabytes: main calls bt_outer N times
 * (argv[1], default 400000), each calls bt_leaf 4 times with varying
 * arguments (so the encoder cannot fold them away), and prints one line
 * per 100000 outer calls, then "bigtrace done N". */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void bt_leaf(unsigned long k)
{
	sink += k * 2654435761u;
}

__attribute__((noinline)) void bt_outer(unsigned long k)
{
	for (unsigned long i = 0; i < 4; i++)
		bt_leaf(k ^ i);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 400000;
	for (unsigned long k = 0; k < n; k++) {
		bt_outer(k);
		if ((k + 1) % 100000 == 0)
			printf("bigtrace %lu\n", k + 1);
	}
	printf("bigtrace done %lu\n", n);
	return 0;
}
