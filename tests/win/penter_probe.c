/*
 * penter_probe.c - checks that _penter and _pexit (hooks/hp_penter_win64.S)
 * keep what MSVC's contract says they keep, with the hand-written hooked
 * functions of penter_probe_asm.S: integer, float and double arguments
 * and results, stack arguments, variadic calls, recursion, a frame left
 * without its _pexit, and every register and flag across both hooks.
 * Prints "FAIL ..." per mismatch and, last, "penter ok" or "penter failed N".
 *
 *   penter_probe            the checks (the e2e test counts the calls the
 *                           trace shows: see tests/e2e/sections/89-windows.sh)
 *   penter_probe bench N    also N calls of an empty hooked function and of
 *                           an unhooked one: the cost of a hook pair, printed
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook_bench.h"

int64_t probe_sum5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e);
double probe_mix(double a, float b, double c, float d);
float probe_half(float a, float b, float c, float d, float e, float f);
double probe_vsum(int64_t n, ...);
int64_t probe_fib(int64_t n);
int64_t probe_skip(void);
void probe_inner(void);
void probe_plain(void);
void probe_torture(void);

struct probe_regs {
	uint64_t gp[16]; /* RAX RCX RDX RBX RSP RBP RSI RDI R8-R15 */
	uint64_t flags;
	uint64_t pad;
	uint8_t xmm[16][16];
};
struct probe_regs probe_in, probe_out;
uint64_t probe_sp_before;

static const char *const gp_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
/* OF, SF, ZF, AF, PF, CF: what a hook could change. */
#define ARITH_FLAGS 0x8d5u
static int failures;

static void fail(const char *what, double got, double want)
{
	printf("FAIL %s: got %.17g, want %.17g\n", what, got, want);
	failures++;
}

static void expect_int(const char *what, int64_t got, int64_t want)
{
	if (got != want)
		fail(what, (double)got, (double)want);
}

static void expect_double(const char *what, double got, double want)
{
	if (got != want)
		fail(what, got, want);
}

static void torture(uint64_t seed, uint64_t flags)
{
	for (int i = 0; i < 16; i++)
		probe_in.gp[i] = seed * 0x0101010101010101ull ^ (uint64_t)(i + 1) << 56 ^ (uint64_t)i * 0x1111;
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++)
			probe_in.xmm[i][j] = (uint8_t)(seed * 31 + (uint64_t)i * 16 + (uint64_t)j);
	probe_in.flags = flags | 2; /* bit 1 is always set */
	memset(&probe_out, 0, sizeof(probe_out));
	probe_torture();
	for (int i = 0; i < 16; i++) {
		uint64_t want = i == 4 ? probe_sp_before : probe_in.gp[i];
		if (probe_out.gp[i] != want) {
			printf("FAIL %s across the hooks: got %#llx, want %#llx\n", gp_name[i],
			       (unsigned long long)probe_out.gp[i], (unsigned long long)want);
			failures++;
		}
	}
	if ((probe_out.flags ^ probe_in.flags) & ARITH_FLAGS) {
		printf("FAIL flags across the hooks: got %#llx, want %#llx\n",
		       (unsigned long long)(probe_out.flags & ARITH_FLAGS),
		       (unsigned long long)(probe_in.flags & ARITH_FLAGS));
		failures++;
	}
	for (int i = 0; i < 16; i++)
		if (memcmp(probe_out.xmm[i], probe_in.xmm[i], 16)) {
			printf("FAIL xmm%d across the hooks\n", i);
			failures++;
		}
}

static void arguments_and_results(void)
{
	expect_int("probe_sum5", probe_sum5(1, 20, 300, 4000, 50000), 54321);
	expect_int("probe_sum5 negative", probe_sum5(-1, -2, -3, -4, INT64_MIN + 10), INT64_MIN);
	expect_double("probe_mix", probe_mix(1.5, 2.0f, 0.25, 8.0f), 5.0);
	expect_double("probe_mix", probe_mix(1e300, 1e-10f, -3.0, 0.5f), 1e300 * (double)1e-10f - 1.5);
	expect_double("probe_half", probe_half(1.0f, 2.0f, 3.0f, 4.0f, 0.5f, 0.25f), 4.75);
	expect_double("probe_vsum of 0", probe_vsum(0), 0.0);
	expect_double("probe_vsum of 3", probe_vsum(3, 0.5, 1.25, 2.0), 3.75);
	expect_double("probe_vsum of 7", probe_vsum(7, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5), 28.5);
	expect_int("probe_fib(10)", probe_fib(10), 55);
	expect_int("probe_skip", probe_skip(), 8);
}

int main(int argc, char **argv)
{
	arguments_and_results();
	torture(0x5a, ARITH_FLAGS);
	torture(0xa5, 0);
	torture(0x33, 0x41); /* ZF and CF */
	if (argc == 3 && !strcmp(argv[1], "bench"))
		hook_bench("bench", atol(argv[2]), probe_plain, probe_inner);
	if (failures)
		printf("penter failed %d\n", failures);
	else
		printf("penter ok\n");
	return failures != 0;
}
