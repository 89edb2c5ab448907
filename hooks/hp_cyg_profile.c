/*
 * hp_cyg_profile.c - the entry points gcc and clang call with
 * -finstrument-functions (and clang's -finstrument-functions-after-inlining).
 * `fn` is the address of the function entered or left; the call site (its
 * return address) is not recorded, since the nesting of enters and exits
 * gives the caller: only the filters' slow path uses it (hp_filter.h).
 */
#include <stdint.h>

#include "../lib/hp_buffer.h"

HP_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
	hp_buffer_record((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)call_site);
}

HP_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
	hp_buffer_record((uint64_t)(uintptr_t)fn | HP_RAW_EXIT, (uint64_t)(uintptr_t)call_site);
}

extern const char hp_control_linked HP_HIDDEN;
__attribute__((used)) static const char *const keep_control_api = &hp_control_linked;
