/*
 * encode_bench.c - the writer's encoder alone (lib/hp_encode.c): ns per
 * event and bytes per event on synthetic streams shaped like the bench
 * programs, encoded chunk by chunk as the writer does. A benchmark, never a
 * test: it prints figures. Built and run by `make bench`; by hand:
 *   make build/encode_bench && build/encode_bench [SECONDS]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
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
	return 0;
}
