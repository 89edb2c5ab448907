/*
 * winplug.c - a DLL for winprog.c, loaded with LoadLibrary, built with
 * -finstrument-functions against hookprof.dll; with -g its names come from
 * DWARF, without, from the COFF symbol table.
 */
__attribute__((noinline)) long plug_leaf(long i)
{
	return i * i;
}

__declspec(dllexport) long plug_run(long n)
{
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += plug_leaf(i);
	return sum;
}
