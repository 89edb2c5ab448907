/*
 * encode_bench.c - the writer's encoder alone (lib/hp_encode.c): ns per
 * event and bytes per event on synthetic streams shaped like the bench
 * programs (and one of many functions), encoded chunk by chunk as the
 * writer does. Then the same encoder
 * on chunks another core has just written, as in a real run: a producer
 * thread stores the fib stream event by event at about a hook's pace into
 * an 8 MiB ring of 64 KiB chunks (plain stores, or non-temporal ones), a
 * consumer thread encodes each published chunk, woken at a quarter of the
 * ring as the writer is; CPU time of each thread per event (median and
 * fastest of the passes, the two store kinds alternating).
 * A benchmark, never a test: it prints figures. Built and run by `make
 * bench`; by hand:
 *   make build/encode_bench && build/encode_bench [SECONDS [CROSS_PASSES]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "hp_buffer.h"
#include "hp_encode.h"

/* About what fib(24) makes: 4.8 MB of raw events, which stay in the L3
 * cache between passes, as a chunk just published by the other core is. */
#define MAX_EVENTS 300000u

static struct hp_raw *ev;
static size_t nev;
static uint64_t tick;
static uint32_t lcg = 12345;

static uint32_t next_random(void)
{
	lcg = lcg * 1103515245u + 12345u;
	return lcg >> 16;
}

static void put(uint64_t addr, uint64_t spacing)
{
	if (nev == MAX_EVENTS)
		return;
	tick += spacing;
	ev[nev++] = (struct hp_raw){ .addr = addr, .tick = tick };
}

static void call(uint64_t addr, uint64_t spacing)
{
	put(addr, spacing);
}

static void ret(uint64_t addr, uint64_t spacing)
{
	put(addr | HP_RAW_EXIT, spacing);
}

/* fib(n): every call a node, 20-40 ticks between events. */
static void fib(int n)
{
	call(0x401000, 20 + next_random() % 20);
	if (n >= 2) {
		fib(n - 1);
		fib(n - 2);
	}
	ret(0x401000, 20 + next_random() % 20);
}

/* A hot leaf 3 levels down. */
static void leaf_shape(void)
{
	call(0x402000, 30);
	call(0x402100, 30);
	call(0x402200, 30);
	while (nev < MAX_EVENTS - 8) {
		call(0x402300, 25 + next_random() % 10);
		ret(0x402300, 25 + next_random() % 10);
	}
	ret(0x402200, 30);
	ret(0x402100, 30);
	ret(0x402000, 30);
}

/* A compressor-like tree: 40 functions, calls of 1 to 3 levels, deltas of
 * tens to thousands of ticks (a longest_match that works in between). */
static void tree(int depth)
{
	uint64_t f = 0x403000 + 0x40 * (next_random() % 40);
	call(f, 20 + next_random() % 400);
	int kids = depth < 3 ? (int)(next_random() % 3) : 0;
	for (int i = 0; i < kids; i++)
		tree(depth + 1);
	ret(f, 20 + (next_random() % 8 ? next_random() % 200 : next_random() % 5000));
}

/* An interpreter-like loop: 300 functions called in turn at random from
 * one frame, 20-60 ticks apart; most of them past index 63. */
static void wide_shape(void)
{
	call(0x405000, 30);
	while (nev < MAX_EVENTS - 2) {
		uint64_t k = next_random() % 300;
		uint64_t f = 0x410000 + k * 0x40 + (k * k % 7) * 16;
		call(f, 20 + next_random() % 40);
		ret(f, 20 + next_random() % 40);
	}
	ret(0x405000, 30);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Encodes the whole stream chunk by chunk; seconds taken, bytes written. */
static double encode_once(uint8_t *out, size_t *bytes)
{
	struct hp_dict dict;
	struct hp_enc_stream s = { 0 };
	if (hp_dict_init(&dict))
		exit(1);
	size_t total = 0;
	double t0 = now();
	for (size_t at = 0; at < nev; at += HP_CHUNK_EVENTS) {
		size_t n = nev - at < HP_CHUNK_EVENTS ? nev - at : HP_CHUNK_EVENTS;
		ssize_t len = hp_encode(&dict, &s, ev + at, n, out);
		if (len < 0)
			exit(1);
		total += (size_t)len;
	}
	double t = now() - t0;
	hp_enc_stream_free(&s);
	hp_dict_free(&dict);
	*bytes = total;
	return t;
}

static void measure(const char *name, double seconds)
{
	static uint8_t out[1 + HP_CHUNK_EVENTS * 32];
	double best = 1e9, spent = 0;
	size_t bytes = 0;
	while (spent < seconds) {
		double t = encode_once(out, &bytes);
		spent += t;
		if (t < best)
			best = t;
	}
	printf("%-8s %9zu events  %6.2f ns/event  %5.2f bytes/event\n", name, nev, best * 1e9 / (double)nev,
	       (double)bytes / (double)nev);
}

/* ---- across cores ------------------------------------------------------ */

#define RING_CHUNKS 128u
#define CROSS_EVENTS (24u * 1000 * 1000)

struct cross {
	struct hp_raw *ring;
	int nt;                /* the producer stores non-temporally */
	uint32_t head, tail;   /* chunks published, consumed */
	uint32_t done;
	double producer_cpu, consumer_cpu;
};

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About the time a program takes between two events (fib: 8-9 ns). */
static uint64_t pace(uint64_t x)
{
	for (int k = 0; k < 6; k++)
		x = x * 3 + 1;
	return x;
}

static void store_event(struct hp_raw *e, uint64_t addr, uint64_t at, int nt)
{
#if defined(__x86_64__)
	if (nt) {
		__builtin_ia32_movnti64((long long *)&e->addr, (long long)addr);
		__builtin_ia32_movnti64((long long *)&e->tick, (long long)at);
		return;
	}
#endif
	(void)nt;
	e->addr = addr;
	e->tick = at;
}

/* Each thread on its own CPU, as in a real run with a free core: a
 * consumer that shared the producer's core would read its own cache. */
static void pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *produce(void *arg)
{
	struct cross *c = arg;
	pin_to_cpu(0);
	double t0 = thread_cpu();
	uint64_t x = 1, base = 0;
	size_t k = 0;
	for (uint32_t chunk = 0; chunk * HP_CHUNK_EVENTS < CROSS_EVENTS; chunk++) {
		while (chunk - __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE) >= RING_CHUNKS)
			sched_yield();
		struct hp_raw *e = c->ring + (size_t)(chunk % RING_CHUNKS) * HP_CHUNK_EVENTS;
		for (size_t i = 0; i < HP_CHUNK_EVENTS; i++) {
			x = pace(x);
			store_event(e + i, ev[k].addr, base + ev[k].tick + (x & 1), c->nt);
			if (++k == nev)
				k = 0, base += ev[nev - 1].tick;
		}
#if defined(__x86_64__)
		if (c->nt)
			__builtin_ia32_sfence();
#endif
		__atomic_store_n(&c->head, chunk + 1, __ATOMIC_RELEASE);
	}
	c->producer_cpu = thread_cpu() - t0;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void consume(struct cross *c, uint8_t *out)
{
	struct hp_dict dict;
	struct hp_enc_stream s = { 0 };
	if (hp_dict_init(&dict))
		exit(1);
	struct timespec nap = { 0, 50000 };
	for (;;) {
		int done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
		uint32_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
		if (head == c->tail && done)
			break;
		if (head - c->tail < RING_CHUNKS / 4 && !done) {
			nanosleep(&nap, NULL);
			continue;
		}
		double t0 = thread_cpu();
		while (c->tail != head) {
			const struct hp_raw *e = c->ring + (size_t)(c->tail % RING_CHUNKS) * HP_CHUNK_EVENTS;
			if (hp_encode(&dict, &s, e, HP_CHUNK_EVENTS, out) < 0)
				exit(1);
			__atomic_store_n(&c->tail, c->tail + 1, __ATOMIC_RELEASE);
		}
		c->consumer_cpu += thread_cpu() - t0;
	}
	hp_enc_stream_free(&s);
	hp_dict_free(&dict);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void print_cross(const char *name, double *producer, double *consumer, int passes)
{
	qsort(producer, (size_t)passes, sizeof(double), by_value);
	qsort(consumer, (size_t)passes, sizeof(double), by_value);
	double per = 1e9 / (double)CROSS_EVENTS;
	printf("%-13s producer %5.2f ns/event (fastest %5.2f)   encoder %5.2f ns/event (fastest %5.2f)\n", name,
	       producer[passes / 2] * per, producer[0] * per, consumer[passes / 2] * per, consumer[0] * per);
}

static void measure_cross(int passes)
{
	static uint8_t out[1 + HP_CHUNK_EVENTS * 32];
	double producer[2][passes], consumer[2][passes];
	struct cross c = { .ring = malloc((size_t)RING_CHUNKS * HP_CHUNK_BYTES) };
	if (!c.ring)
		exit(1);
	memset(c.ring, 0, (size_t)RING_CHUNKS * HP_CHUNK_BYTES);
	pin_to_cpu(1);
	for (int p = 0; p < passes; p++) {
		for (int nt = 0; nt < 2; nt++) {
			c = (struct cross){ .ring = c.ring, .nt = nt };
			pthread_t tid;
			if (pthread_create(&tid, NULL, produce, &c))
				exit(1);
			consume(&c, out);
			pthread_join(tid, NULL);
			producer[nt][p] = c.producer_cpu;
			consumer[nt][p] = c.consumer_cpu;
		}
	}
	printf("encode_bench: the fib stream across cores (producer on CPU 0, encoder on CPU 1), %u events a pass, median (fastest) of %d passes\n",
	       CROSS_EVENTS, passes);
	print_cross("plain stores", producer[0], consumer[0], passes);
	print_cross("NT stores", producer[1], consumer[1], passes);
	free(c.ring);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int passes = argc > 2 ? atoi(argv[2]) : 5;
	ev = malloc(MAX_EVENTS * sizeof(*ev));
	if (!ev || seconds <= 0)
		return 1;
	printf("encode_bench: hp_encode alone, fastest pass over each stream (%.1f s each)\n", seconds);
	nev = 0, fib(24);
	measure("fib", seconds);
	nev = 0, leaf_shape();
	measure("leaf", seconds);
	nev = 0;
	while (nev < MAX_EVENTS - 64)
		tree(0);
	measure("tree", seconds);
	nev = 0, wide_shape();
	measure("wide", seconds);
	if (passes > 0) {
		nev = 0, fib(24);
		measure_cross(passes);
	}
	return 0;
}
