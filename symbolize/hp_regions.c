/*
 * hp_regions.c - names of regions (hp_regions.h).
 */
#include "hp_regions.h"

#include <stdio.h>
#include <string.h>

int hp_region_symbol(const struct hp_analysis *a, uint32_t func, struct hp_symbol *s, char *buf,
		     size_t len)
{
	if (func >= a->funcs.n || !hp_is_region_addr(a->funcs.addr[func]))
		return 0;
	uint64_t id = a->funcs.addr[func] & ~HP_REGION_ADDR_BIT;
	const char *name = id <= UINT32_MAX ? hp_trace_string(&a->info, (uint32_t)id) : NULL;
	snprintf(buf, len, "[%s]", name ? name : "?");
	*s = (struct hp_symbol){ .name = buf, .module = "region", .resolved = 1, .offset = id };
	return 1;
}
