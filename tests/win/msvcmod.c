/*
 * msvcmod.c - a DLL built the way MSVC builds one: clang for the
 * x86_64-pc-windows-msvc target with CodeView debug info, linked by
 * lld-link into a DLL and its PDB; no C library, no DWARF. Its names come
 * from the PDB (llvm-symbolizer). -finstrument-functions calls the hooks
 * defined here, which forward to the ones winprog.c hands over.
 */
typedef void (*hook_fn)(void *, void *);
static hook_fn enter_hook, exit_hook;

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
	if (enter_hook)
		enter_hook(fn, site);
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
	if (exit_hook)
		exit_hook(fn, site);
}

__declspec(dllexport) __attribute__((no_instrument_function)) void msv_set_hooks(hook_fn e, hook_fn x)
{
	enter_hook = e;
	exit_hook = x;
}

static volatile long msv_sink;

__attribute__((noinline)) static long msv_leaf(long i)
{
	msv_sink += i;
	return i + 1;
}

__declspec(dllexport) long msv_run(long n)
{
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += msv_leaf(i);
	return sum;
}
