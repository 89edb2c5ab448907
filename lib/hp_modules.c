/*
 * hp_modules.c - MODULES records of the modules hp_modules_each walks,
 * each snapshot closed by a MODULES_AT record with its tick and size.
 */
#include "hp_modules.h"

#include <string.h>

#include "hp_format.h"
#include "hp_output.h"

#define MODULES_MAX_BYTES (1u << 20)

/* The MODULES record being filled; a map larger than one record goes on
 * in the next (a reader keeps the union of all). */
struct snapshot {
	uint8_t *count_at;
	uint8_t *p;
	uint8_t *end;
	uint32_t count;
	uint32_t total; /* modules in the whole snapshot, over its records */
	uint64_t tick;
	int failed;
};

static uint64_t last_generation;
static int written_once;

static uint8_t *put_bytes(uint8_t *p, const void *s, size_t n)
{
	hp_le32(p, (uint32_t)n);
	if (n) /* s may be NULL then (no build-id), which memcpy may not get */
		memcpy(p + 4, s, n);
	return p + 4 + n;
}

static int snapshot_begin(struct snapshot *s)
{
	uint8_t *p = hp_output_begin(HP_REC_MODULES, MODULES_MAX_BYTES);
	if (!p) {
		s->failed = 1;
		return -1;
	}
	/* A continuation record keeps the snapshot's running total and tick. */
	*s = (struct snapshot){ .count_at = p, .p = p + 4, .end = p + MODULES_MAX_BYTES,
				.total = s->total, .tick = s->tick };
	return 0;
}

static void snapshot_end(struct snapshot *s)
{
	hp_le32(s->count_at, s->count);
	hp_output_end(s->p);
}

static int add_module(const struct hp_loaded_module *m, void *arg)
{
	struct snapshot *s = arg;
	size_t path_len = strlen(m->path);
	size_t need = 8 + 4 + path_len + 4 + m->build_id_len + 4 + (size_t)m->nseg * 32;
	if (s->p + need > s->end && s->count) {
		snapshot_end(s);
		if (snapshot_begin(s) < 0)
			return 1; /* output failed: stop iterating */
	}
	if (s->p + need > s->end)
		return 0; /* larger than a record on its own: cannot happen with PATH_MAX paths */
	uint8_t *p = s->p;
	hp_le64(p, m->bias);
	p = put_bytes(p + 8, m->path, path_len);
	p = put_bytes(p, m->build_id, m->build_id_len);
	hp_le32(p, m->nseg);
	p += 4;
	for (uint32_t i = 0; i < m->nseg; i++) {
		const struct hp_loaded_segment *seg = &m->seg[i];
		hp_le64(p, seg->start);
		hp_le64(p + 8, seg->size);
		hp_le64(p + 16, seg->offset);
		hp_le32(p + 24, seg->flags);
		hp_le32(p + 28, 0);
		p += 32;
	}
	s->p = p;
	s->count++;
	s->total++;
	/* Read while the walk holds the loader's lock, which loading and
	 * unloading take to add and remove objects: an object absent here was
	 * gone by this tick (its destructors had run), and one loaded later
	 * runs its constructors after it. */
	s->tick = hp_tick();
	return 0;
}

/* The snapshot is complete: a reader may now tell which objects are gone. */
static void snapshot_moment(const struct snapshot *s)
{
	uint8_t *p = hp_output_begin(HP_REC_MODULES_AT, 16);
	if (!p)
		return;
	hp_le64(p, s->tick);
	hp_le32(p + 8, s->total);
	hp_le32(p + 12, 0);
	hp_output_end(p + 16);
}

int hp_modules_write(int force)
{
	/* Read before the walk: a change during it is seen next time. */
	uint64_t generation = hp_modules_generation();
	if (!force && written_once && generation == last_generation)
		return 0;
	struct snapshot s = { 0 };
	if (snapshot_begin(&s) < 0)
		return -1;
	hp_modules_each(add_module, &s);
	if (s.failed)
		return -1;
	snapshot_end(&s);
	snapshot_moment(&s);
	last_generation = generation;
	written_once = 1;
	return 0;
}
