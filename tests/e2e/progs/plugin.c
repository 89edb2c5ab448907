/* plugin.c - loaded with dlopen; plugin_run calls plugin_helper 4 times. */
volatile int plugin_sink;

__attribute__((noinline)) int plugin_helper(int x)
{
	plugin_sink = x;
	return x * 3;
}

__attribute__((noinline)) int plugin_run(int n)
{
	int t = 0;
	for (int i = 0; i < 4; i++)
		t += plugin_helper(n + i);
	return t;
}
