/* termthreads.c - NTHREADS threads call tt_work in a loop; each counts its
 * completed calls in a shared file mapping (argv[1]), after the call
 * returns. When every thread has made argv[2] calls, main raises SIGTERM:
 * the threads go on calling while the fatal signal's flush runs. The file
 * then holds the calls each thread completed (NTHREADS 64-bit counts), so
 * the test can compare them with the events the trace holds or counts lost. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NTHREADS 4

volatile unsigned long sink;
static uint64_t *done; /* NTHREADS counters in the shared file */

__attribute__((noinline)) void tt_work(int i)
{
	sink += (unsigned long)i;
}

static void *tt_thread(void *arg)
{
	uint64_t *mine = &done[(intptr_t)arg];
	for (int i = 0;; i++) {
		tt_work(i);
		__atomic_store_n(mine, *mine + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

__attribute__((no_instrument_function)) static uint64_t slowest(void)
{
	uint64_t min = UINT64_MAX;
	for (int i = 0; i < NTHREADS; i++) {
		uint64_t n = __atomic_load_n(&done[i], __ATOMIC_ACQUIRE);
		min = n < min ? n : min;
	}
	return min;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, NTHREADS * sizeof(uint64_t)))
		return 2;
	done = mmap(NULL, NTHREADS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (done == MAP_FAILED)
		return 2;
	uint64_t want = strtoull(argv[2], NULL, 10);
	pthread_t th;
	for (intptr_t i = 0; i < NTHREADS; i++)
		if (pthread_create(&th, NULL, tt_thread, (void *)i))
			return 2;
	while (slowest() < want)
		usleep(1000);
	raise(SIGTERM);
	return 3;
}
