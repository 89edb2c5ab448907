/* useplugin.c - dlopens the plugin given as argv[1] and calls plugin_run
 * twice through dlsym; with "close" as argv[2] it dlcloses the plugin right
 * after, else the plugin stays loaded until the process exits. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) int call_plugin(int (*run)(int), int n)
{
	return run(n);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: useplugin PLUGIN.so\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "useplugin: %s\n", dlerror());
		return 2;
	}
	int (*run)(int) = (int (*)(int))dlsym(h, "plugin_run");
	if (!run) {
		fprintf(stderr, "useplugin: %s\n", dlerror());
		return 2;
	}
	int t = call_plugin(run, 1) + call_plugin(run, 10);
	if (argc > 2 && !strcmp(argv[2], "close") && dlclose(h)) {
		fprintf(stderr, "useplugin: %s\n", dlerror());
		return 2;
	}
	printf("useplugin %d\n", t);
	return 0;
}
