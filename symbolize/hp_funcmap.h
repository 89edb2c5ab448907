/*
 * hp_funcmap.h - which function a decoded event is of. The event stream
 * names a function by the index of its address in the trace's dictionary;
 * an address names one function per module loaded there, and after a
 * dlclose another object can be loaded at the same addresses. A function is
 * therefore (address, module instance loaded at the event's tick), numbered
 * densely: the function ids that profiles and views count.
 *
 * Most addresses lie in one module over the whole run: their index maps to
 * one id once. Only an address that several modules held over time looks
 * at the tick of each event.
 */
#ifndef HP_FUNCMAP_H
#define HP_FUNCMAP_H

#include <stddef.h>
#include <stdint.h>

#include "hp_decode.h"
#include "hp_trace.h"

#define HP_NO_MODULE UINT32_MAX

/* Function id -> address (funcs.addr[id]) and module (module[id]: an
 * index into the trace's modules, or HP_NO_MODULE). */
struct hp_functions {
	struct hp_funcs *funcs;
	uint32_t **module;
};

struct hp_funcmap;

/* For the modules as read ahead of the events (hp_trace_read_module_map);
 * they must outlive the map. NULL if out of memory. */
struct hp_funcmap *hp_funcmap_new(const struct hp_module *modules, size_t n);
/*
 * Rewrites ev[].func, a dictionary index (dict), to a function id; new ids
 * are appended to out's arrays. regions: 0 if no event of ev names a
 * region (hp_evbuf.regions); then nothing needs rewriting while every
 * index is its id. 0, or -1 if out of memory.
 */
int hp_funcmap_apply(struct hp_funcmap *fm, const struct hp_funcs *dict, struct hp_ev *ev,
		     size_t n, int regions, struct hp_functions out);
void hp_funcmap_free(struct hp_funcmap *fm);

#endif
