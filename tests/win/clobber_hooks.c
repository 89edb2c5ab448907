/*
 * clobber_hooks.c - clobber.dll: the MSVC hooks (hooks/hp_penter_win64.S)
 * in front of C callees that change every register the Windows x64 ABI
 * lets C change (RAX, RCX, RDX, R8-R11, XMM0-XMM5 and the flags), which
 * the runtime's own C does only as its compiler happens to. penter_probe.c,
 * linked with it as penter_clobber.exe, then shows that the hooks keep
 * every register whatever the C behind them does. It records nothing: at
 * the end it says on stderr how many times each hook reached C.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdint.h>
#include <stdio.h>

#include "../../hooks/hp_win_hooks.h"

static volatile LONG enters, exits;

static void clobber_volatile(void)
{
	__asm__ volatile("movb $0x7f, %%al\n\t"
			 "addb $1, %%al\n\t" /* OF and SF set, ZF and CF clear */
			 "movq $-1, %%rax\n\tmovq $-1, %%rcx\n\tmovq $-1, %%rdx\n\t"
			 "movq $-1, %%r8\n\tmovq $-1, %%r9\n\tmovq $-1, %%r10\n\tmovq $-1, %%r11\n\t"
			 "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\tpcmpeqd %%xmm2, %%xmm2\n\t"
			 "pcmpeqd %%xmm3, %%xmm3\n\tpcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5"
			 :
			 :
			 : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3",
			   "xmm4", "xmm5", "cc");
}

void hp_win_enter(uint64_t fn, uint64_t ret, uint64_t sp)
{
	(void)fn, (void)ret, (void)sp;
	InterlockedIncrement(&enters);
	clobber_volatile();
}

void hp_win_exit(uint64_t ret, uint64_t sp)
{
	(void)ret, (void)sp;
	InterlockedIncrement(&exits);
	clobber_volatile();
}

BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, void *reserved)
{
	(void)dll, (void)reserved;
	if (reason == DLL_PROCESS_DETACH) {
		char line[64];
		DWORD wrote;
		int n = snprintf(line, sizeof(line), "clobber: %ld enters, %ld exits\n", enters, exits);
		WriteFile(GetStdHandle(STD_ERROR_HANDLE), line, (DWORD)n, &wrote, NULL);
	}
	return TRUE;
}
