/*
 * hp_win_frames.c - what MSVC's _penter and _pexit (hp_penter_win64.S) call:
 * each thread's frames of hooked functions, so that an exit, which names a
 * frame by its stack pointer, names its function (hp_win_hooks.h).
 *
 * A frame's stack pointer is above every newer frame's: frames at or below
 * the one entered now were left by a longjmp or an exception without their
 * _pexit, and end here, unrecorded (the reader ends a frame whose exit is
 * missing with the next exit of an older one). The frames live in pages of
 * their own, grown in the rare case (never the program's malloc), and freed
 * at the thread's exit.
 *
 * A thread finds its frames through a Win32 TLS slot, read straight from
 * its TEB (one load): mingw's __thread costs a call into libgcc's emulation
 * and three into kernel32 per access, and each hook would pay it.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdint.h>

#include "../hp_buffer.h"
#include "../../hooks/hp_win_hooks.h"

#define FRAMES_FIRST 4096u
/* The TEB's TlsSlots[64] on x64 (Windows' layout, which Wine keeps);
 * slots from 64 on live elsewhere and take TlsGetValue. */
#define TEB_TLS_SLOTS 0x1480u
#define TEB_SLOTS 64u

struct frame {
	uint64_t fn, sp;
};

/* A thread's frames: this header, then cap frames, in one block. */
struct frames {
	uint32_t depth, cap;
	size_t bytes;
	struct frame f[];
};

static DWORD slot = TLS_OUT_OF_INDEXES;

static inline struct frames *slot_value(DWORD s)
{
	struct frames *fr;
	__asm__("movq %%gs:%c1(,%2,8), %0" : "=r"(fr) : "i"(TEB_TLS_SLOTS), "r"((uint64_t)s));
	return fr;
}

/* NULL before the thread's first frame (or the process's). */
static inline struct frames *thread_frames(void)
{
	DWORD s = __atomic_load_n(&slot, __ATOMIC_RELAXED);
	if (likely(s < TEB_SLOTS))
		return slot_value(s);
	if (s == TLS_OUT_OF_INDEXES)
		return NULL;
	DWORD err = GetLastError(); /* TlsGetValue clears it */
	struct frames *fr = TlsGetValue(s);
	SetLastError(err);
	return fr;
}

/* The slot, once per process: a thread that loses the race frees its own. */
static int make_slot(void)
{
	if (__atomic_load_n(&slot, __ATOMIC_ACQUIRE) != TLS_OUT_OF_INDEXES)
		return 0;
	DWORD s = TlsAlloc(), none = TLS_OUT_OF_INDEXES;
	if (s == TLS_OUT_OF_INDEXES)
		return -1;
	if (!__atomic_compare_exchange_n(&slot, &none, s, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		TlsFree(s);
	return 0;
}

/* The rare case: a thread's first frame, or one deeper than any before. */
static __attribute__((noinline)) struct frames *grow_frames(struct frames *old)
{
	DWORD err = GetLastError();
	uint32_t cap = old ? old->cap * 2 : FRAMES_FIRST;
	size_t bytes = sizeof(struct frames) + cap * sizeof(struct frame);
	struct frames *fr = make_slot() ? NULL : hp_pages_grow(old, old ? old->bytes : 0, bytes);
	if (fr) {
		fr->cap = cap;
		fr->bytes = bytes;
		TlsSetValue(slot, fr);
	}
	SetLastError(err);
	return fr;
}

/* The thread's frames were freed at its exit (free_frames); hooked code
 * that runs after (mingw's later TLS callbacks) records nothing. */
#define FRAMES_GONE ((struct frames *)1)

void hp_win_enter(uint64_t fn, uint64_t ret, uint64_t sp)
{
	struct frames *fr = thread_frames();
	if (unlikely((uintptr_t)fr <= (uintptr_t)FRAMES_GONE)) {
		if (fr == FRAMES_GONE || !(fr = grow_frames(NULL)))
			return;
	}
	while (fr->depth && fr->f[fr->depth - 1].sp <= sp)
		fr->depth--;
	if (unlikely(fr->depth == fr->cap) && !(fr = grow_frames(fr)))
		return;
	fr->f[fr->depth++] = (struct frame){ fn, sp };
	hp_buffer_record(fn, ret);
}

/* The newest frame with this stack pointer ends, and every one above it.
 * An exit of a frame entered before the thread's first event names no
 * function, and is left out. */
void hp_win_exit(uint64_t ret, uint64_t sp)
{
	struct frames *fr = thread_frames();
	uint32_t i = (uintptr_t)fr > (uintptr_t)FRAMES_GONE ? fr->depth : 0;
	while (i && fr->f[i - 1].sp != sp)
		i--;
	if (!i)
		return;
	fr->depth = i - 1;
	hp_buffer_record(fr->f[i - 1].fn | HP_RAW_EXIT, ret);
}

/* The thread's frames go with it. */
static void NTAPI free_frames(void *image, DWORD reason, void *reserved)
{
	(void)image;
	(void)reserved;
	if (reason != DLL_THREAD_DETACH || slot == TLS_OUT_OF_INDEXES)
		return;
	DWORD err = GetLastError();
	struct frames *fr = TlsGetValue(slot);
	TlsSetValue(slot, FRAMES_GONE);
	if ((uintptr_t)fr > (uintptr_t)FRAMES_GONE)
		hp_pages_free(fr, fr->bytes);
	SetLastError(err);
}

__attribute__((used, section(".CRT$XLB"))) static const PIMAGE_TLS_CALLBACK hp_free_frames = free_frames;
