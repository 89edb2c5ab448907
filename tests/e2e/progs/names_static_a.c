/* names_static_a.c - a static helper named like names_static_b.c's. */
volatile int static_sink_a;

__attribute__((noinline)) static void helper(int x) { static_sink_a += x; }

void run_a(int n)
{
	for (int i = 0; i < n; i++)
		helper(i);
}
