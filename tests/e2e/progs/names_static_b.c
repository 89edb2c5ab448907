/* names_static_b.c - a static helper named like names_static_a.c's. */
volatile int static_sink_b;

__attribute__((noinline)) static void helper(int x) { static_sink_b -= x; }

void run_b(int n)
{
	for (int i = 0; i < n; i++)
		helper(i);
}
