/*
 * hp_regions.h - the names of regions (hookprof_region_begin): a region is
 * a function of the trace at an address no module holds (HP_REGION_ADDR of
 * its name's string id), named "[name]" in module "region", so that it
 * cannot be mistaken for a function.
 */
#ifndef HP_REGIONS_H
#define HP_REGIONS_H

#include <stddef.h>

#include "hp_analyze.h"
#include "hp_symbols.h"

/* If function func of a is a region: its symbol in *s (the name in buf,
 * which must outlive s), and 1. Otherwise 0, and s untouched. */
int hp_region_symbol(const struct hp_analysis *a, uint32_t func, struct hp_symbol *s, char *buf,
		     size_t len);

#endif
