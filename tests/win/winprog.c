/*
 * winprog.c - a multi-threaded Windows program built with mingw-w64's
 * -finstrument-functions and linked with hookprof.dll: three threads, a
 * static function, a DLL loaded with LoadLibrary and unloaded with
 * FreeLibrary (winplug.dll), and, when msvcmod.dll is there, a module
 * built the MSVC way (CodeView and a PDB, no DWARF), and msvcgh.dll, whose
 * function calls _penter and _pexit as MSVC's /Gh /GH code does and which
 * lld-link linked against hookprof.lib. The runtime learns of
 * the loads and unloads by itself; the workers name themselves through
 * the control API (include/hookprof.h). The e2e test
 * (tests/e2e/sections/89-windows.sh) knows every count.
 *
 *   winprog [plugin.dll [msvcmod.dll [msvcgh.dll]]]
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>

#include "hookprof.h"

#define THREADS 3
#define STEPS 100

static volatile long sink;

__attribute__((noinline)) void w_leaf(long i)
{
	sink += i;
}

__attribute__((noinline)) void w_step(long i)
{
	w_leaf(i);
	w_leaf(-i);
}

__attribute__((noinline)) static DWORD WINAPI worker(void *arg)
{
	hookprof_thread_name("worker"); /* the control API, through the DLL */
	for (long i = 0; i < STEPS; i++)
		w_step(i + (long)(intptr_t)arg);
	return 0;
}

/* Static: its name comes from DWARF or the COFF symbol table, not from an
 * export. */
__attribute__((noinline)) static long s_helper(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long m_compute(long x)
{
	return s_helper(x) + s_helper(x + 1);
}

typedef long (*run_fn)(long);
typedef void (*hook_fn)(void *, void *);
typedef void (*set_hooks_fn)(hook_fn, hook_fn);
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

/* Calls NAME(n) of the DLL at path, loaded for the call and unloaded after;
 * a DLL built without mingw gets the hooks handed over first. */
__attribute__((noinline)) static long call_plugin(const char *path, const char *name, long n)
{
	HMODULE h = LoadLibraryA(path);
	if (!h) {
		printf("cannot load %s: error %lu\n", path, GetLastError());
		return -1;
	}
	set_hooks_fn set_hooks = (set_hooks_fn)(void *)GetProcAddress(h, "msv_set_hooks");
	if (set_hooks)
		set_hooks(__cyg_profile_func_enter, __cyg_profile_func_exit);
	run_fn run = (run_fn)(void *)GetProcAddress(h, name);
	long r = run ? run(n) : -1;
	FreeLibrary(h);
	return r;
}

int main(int argc, char **argv)
{
	HANDLE t[THREADS];
	for (int i = 0; i < THREADS; i++)
		t[i] = CreateThread(NULL, 0, worker, (void *)(intptr_t)i, 0, NULL);
	WaitForMultipleObjects(THREADS, t, TRUE, INFINITE);
	long sum = 0;
	for (long i = 0; i < 10; i++)
		sum += m_compute(i);
	long plug = argc > 1 ? call_plugin(argv[1], "plug_run", 5) : 0;
	long msv = argc > 2 ? call_plugin(argv[2], "msv_run", 4) : 0;
	long gh = argc > 3 ? call_plugin(argv[3], "probe_fib", 10) : 0;
	printf("winprog done %ld %ld %ld %ld\n", sum, plug, msv, gh);
	return 0;
}
