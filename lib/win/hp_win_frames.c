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
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdint.h>

#include "../hp_buffer.h"
#include "../../hooks/hp_win_hooks.h"

#define FRAMES_FIRST 4096u

struct frame {
	uint64_t fn, sp;
};

static __thread struct {
	struct frame *f;
	uint32_t depth, cap;
} frames;

/* The rare case: a thread's first frame, or one deeper than any before. */
static __attribute__((noinline)) int grow_frames(void)
{
	uint32_t cap = frames.cap ? frames.cap * 2 : FRAMES_FIRST;
	DWORD err = GetLastError();
	struct frame *f = hp_pages_grow(frames.f, frames.cap * sizeof(*f), cap * sizeof(*f));
	SetLastError(err);
	if (!f)
		return -1;
	frames.f = f;
	frames.cap = cap;
	return 0;
}

void hp_win_enter(uint64_t fn, uint64_t ret, uint64_t sp)
{
	while (frames.depth && frames.f[frames.depth - 1].sp <= sp)
		frames.depth--;
	if (unlikely(frames.depth == frames.cap) && grow_frames())
		return;
	frames.f[frames.depth++] = (struct frame){ fn, sp };
	hp_buffer_record(fn, ret);
}

/* The newest frame with this stack pointer ends, and every one above it.
 * An exit of a frame entered before the thread's first event names no
 * function, and is left out. */
void hp_win_exit(uint64_t ret, uint64_t sp)
{
	uint32_t i = frames.depth;
	while (i && frames.f[i - 1].sp != sp)
		i--;
	if (!i)
		return;
	frames.depth = i - 1;
	hp_buffer_record(frames.f[i - 1].fn | HP_RAW_EXIT, ret);
}

/* The thread's frames go with it (this TLS callback runs before mingw's,
 * which frees thread-local data: lib/hp_platform_win.c). */
static void NTAPI free_frames(void *image, DWORD reason, void *reserved)
{
	(void)image;
	(void)reserved;
	if (reason != DLL_THREAD_DETACH || !frames.f)
		return;
	hp_pages_free(frames.f, frames.cap * sizeof(*frames.f));
	frames.f = NULL;
	frames.depth = frames.cap = 0;
}

__attribute__((used, section(".CRT$XLB"))) static const PIMAGE_TLS_CALLBACK hp_free_frames = free_frames;
