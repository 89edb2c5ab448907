/* names_static.c - two static functions named helper, in names_static_a.c
 * (called 10 times) and names_static_b.c (5000 times). */
#include <stdio.h>

void run_a(int n);
void run_b(int n);

int main(void)
{
	run_a(10);
	run_b(5000);
	printf("names_static done\n");
	return 0;
}
