/*
 * hp_filter.h - recording less: HOOKPROF_EXCLUDE, HOOKPROF_INCLUDE and
 * HOOKPROF_DEPTH, decided in the hooks' slow path (HOOKPROF_MIN is the
 * encoder's, hp_encode.h). Semantics in docs/design.md, "Recording less".
 *
 * While a filter is on, every event takes the slow path (its end is NULL,
 * as without the TSC) and asks hp_filter_drops first. Names are matched
 * once, at start and when the set of loaded objects changes, against the
 * symbol tables of the loaded modules (hp_module_symbols): the per-event question is one
 * probe of a hash of matched entry addresses.
 */
#ifndef HP_FILTER_H
#define HP_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "hp_config.h"
#include "hp_platform.h"

enum hp_filter_verdict { HP_FILTER_EXCLUDED = 1, HP_FILTER_INCLUDED = 2 };

/* 1 while EXCLUDE, INCLUDE or DEPTH is in force; set by hp_filter_init,
 * before the first event is recorded, and never changed after. */
extern int hp_filter_on HP_HIDDEN;

/* Compiles the regexes of cfg, reads the symbols of every loaded module
 * and turns the filters on. 0, or -1 with a one-line warning in err: a
 * regex that does not compile is left out (the others stay). */
int hp_filter_init(const struct hp_config *cfg, char *err, size_t errlen) HP_HIDDEN;
/* The patterns of HOOKPROF_INCLUDE (include) or HOOKPROF_EXCLUDE that are
 * applied, comma-separated as given, or NULL if none: those refused (a bad
 * regex; every one on Windows, which has no name filters) are left out. */
const char *hp_filter_applied(int include) HP_HIDDEN;

/*
 * 1 if the function event raw (an enter, or an exit with HP_RAW_EXIT) is
 * not to be recorded. sp: a stack address of the hook's caller, the same
 * at the enter and the exit of one frame and lower in its callees; levels
 * whose frame is gone (a longjmp, an exception) are forgotten by it.
 * Never allocates, locks or prints, but for an address in no module read
 * yet (a dlopen'ed object), which reads the new modules once.
 */
int hp_filter_drops(uint64_t raw, uintptr_t sp) HP_HIDDEN;

/* hp_filter_drops of a hook's event: from, the stack pointer of the
 * function entered or left at its call of the hook; call_site, the hook's
 * second argument (its return address), by which its frame is found. */
int hp_filter_event(uint64_t raw, uintptr_t from, uint64_t call_site) HP_HIDDEN;

/* Objects were unloaded (dlclose): the address table is built again. */
void hp_filter_modules_changed(void) HP_HIDDEN;

/* The verdict of an address, of a name (as the report prints it). */
unsigned hp_filter_verdict(uint64_t addr) HP_HIDDEN;
unsigned hp_filter_name_verdict(const char *name) HP_HIDDEN;

/* Tests: the calling thread's levels forgotten; every filter off. */
void hp_filter_reset_thread(void) HP_HIDDEN;
void hp_filter_off(void) HP_HIDDEN;

#endif
