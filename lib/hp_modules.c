/*
 * hp_modules.c - the module map: a snapshot of the modules hp_modules_each
 * walks, whenever they changed (hp_records.c builds its records).
 */
#include "hp_modules.h"

#include "hp_records.h"

static uint64_t last_generation;
static int written_once;

static int add_module(const struct hp_loaded_module *m, void *arg)
{
	struct hp_records_modules *s = arg;
	if (hp_records_module(s, m))
		return 1;
	/* Read while the walk holds the loader's lock, which loading and
	 * unloading take to add and remove objects: an object absent here was
	 * gone by this tick (its destructors had run), and one loaded later
	 * runs its constructors after it. */
	s->tick = hp_tick();
	return 0;
}

int hp_modules_write(int force)
{
	/* Read before the walk: a change during it is seen next time. */
	uint64_t generation = hp_modules_generation();
	if (!force && written_once && generation == last_generation)
		return 0;
	struct hp_records_modules s = { 0 };
	if (hp_records_modules_begin(&s) < 0)
		return -1;
	hp_modules_each(add_module, &s);
	if (s.failed)
		return -1;
	hp_records_modules_end(&s);
	last_generation = generation;
	written_once = 1;
	return 0;
}
