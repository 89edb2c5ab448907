/* ending.c - ends inside nested calls: "exit" calls exit(7) from end_deep3,
 * "abort" calls abort() there, "segv" writes through a null pointer.
 * Before that, main calls end_step 10 times. main -> end_deep1 -> end_deep2
 * -> end_deep3 never return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int sink;
int *volatile nowhere;

__attribute__((noinline)) void end_step(int i)
{
	sink += i;
}

__attribute__((noinline)) void end_deep3(const char *how)
{
	fflush(stdout);
	if (!strcmp(how, "exit"))
		exit(7);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "segv"))
		*nowhere = 1;
	sink = 0;
}

__attribute__((noinline)) void end_deep2(const char *how)
{
	end_deep3(how);
	sink++;
}

__attribute__((noinline)) void end_deep1(const char *how)
{
	end_deep2(how);
	sink++;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	for (int i = 0; i < 10; i++)
		end_step(i);
	printf("ending %s\n", how);
	end_deep1(how);
	return 0;
}
