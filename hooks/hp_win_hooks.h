/*
 * hp_win_hooks.h - what the Windows x64 hooks of MSVC's /Gh and /GH
 * (hooks/hp_penter_win64.S) hand to C.
 *
 * MSVC calls _penter as the first instruction of every function (before
 * its prologue) and _pexit as the last one before its `ret` (after its
 * epilogue). Neither gets an argument and both must keep every register,
 * the flags and XMM0-XMM5 (floating-point arguments and results), so they
 * are assembly that saves what a C function may change and calls these.
 *
 * A frame is known by `sp`, the hooked function's stack pointer at its
 * entry, which is the same at its `ret` (the address of its return
 * address): _pexit tells which frame ends, not which function, so the
 * receiver keeps the frames' functions itself. Frames an exception or a
 * longjmp skipped never see their _pexit: an exit of an older frame ends
 * them too.
 *
 * Whoever links the hooks defines both functions (the runtime:
 * lib/win/hp_win_frames.c; the tests' clobber.dll: tests/win/clobber_hooks.c).
 * They must not be compiled with /Gh, /GH or -finstrument-functions.
 */
#ifndef HP_WIN_HOOKS_H
#define HP_WIN_HOOKS_H

#include <stdint.h>

/* fn: the hooked function's first byte; ret: its return address; sp: the
 * address that return address is stored at. */
void hp_win_enter(uint64_t fn, uint64_t ret, uint64_t sp);
/* ret and sp as above, read at the hooked function's `ret`. */
void hp_win_exit(uint64_t ret, uint64_t sp);

#endif
