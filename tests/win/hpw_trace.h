/*
 * hpw_trace.h - the test programs' side of hpw.dll (hpw_trace.c), the small
 * trace writer the Windows tests use until hookprof's runtime runs on
 * Windows.
 */
#ifndef HPW_TRACE_H
#define HPW_TRACE_H

/* Takes a snapshot of the loaded modules now: call it after LoadLibrary and
 * after FreeLibrary (the runtime will learn of both by itself). */
__declspec(dllimport) void hpw_modules_changed(void);

#endif
