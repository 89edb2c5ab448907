/*
 * hp_fntab.c - the functions of a command's traces, interned by identity.
 */
#include "hp_fntab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull; /* ends the field: "ab","c" != "a","bc" */
}

static uint64_t hash_symbol(const struct hp_symbol *s)
{
	uint64_t h = mix(mix(0xcbf29ce484222325ull, s->name), s->module);
	return s->file ? mix(h, s->file) : (h ^ s->offset) * 0x100000001b3ull;
}

static int same(const struct hp_row *r, const struct hp_symbol *s)
{
	if (strcmp(r->name, s->name) || strcmp(r->module, s->module))
		return 0;
	if (r->file || s->file)
		return r->file && s->file && !strcmp(r->file, s->file);
	return r->offset == s->offset;
}

static int rehash(struct hp_fntab *t)
{
	size_t cap = t->slot_cap ? t->slot_cap * 2 : 1024;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (uint32_t id = 0; id < t->rows.n; id++) {
		const struct hp_row *r = &t->rows.row[id];
		struct hp_symbol s = { .name = r->name, .module = r->module, .file = r->file,
				       .offset = r->offset };
		size_t i = hash_symbol(&s) & (cap - 1);
		while (slot[i])
			i = (i + 1) & (cap - 1);
		slot[i] = id + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->slot_cap = cap;
	return 0;
}

static uint32_t add(struct hp_fntab *t, const struct hp_symbol *s, size_t at)
{
	struct hp_rows *rows = &t->rows;
	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? rows->cap * 2 : 256;
		struct hp_row *r = realloc(rows->row, cap * sizeof(*r));
		if (!r)
			return HP_NO_FN;
		rows->row = r;
		rows->cap = cap;
	}
	struct hp_row *r = memset(&rows->row[rows->n], 0, sizeof(*r));
	if (!(r->name = strdup(s->name)) || !(r->module = strdup(s->module)) ||
	    (s->file && !(r->file = strdup(s->file)))) {
		free(r->name);
		free(r->module);
		return HP_NO_FN;
	}
	r->line = s->line;
	r->offset = s->offset;
	r->min = 0;
	t->slot[at] = (uint32_t)rows->n + 1;
	return (uint32_t)rows->n++;
}

uint32_t hp_fntab_intern(struct hp_fntab *t, const struct hp_symbol *s)
{
	/* At most half full: probes stay short. */
	if ((t->rows.n + 1) * 2 > t->slot_cap && rehash(t))
		return HP_NO_FN;
	size_t mask = t->slot_cap - 1, i = hash_symbol(s) & mask;
	for (; t->slot[i]; i = (i + 1) & mask)
		if (same(&t->rows.row[t->slot[i] - 1], s))
			return t->slot[i] - 1;
	return add(t, s, i);
}

int hp_fntab_label(struct hp_fntab *t)
{
	return hp_rows_label(&t->rows, 0);
}

void hp_fntab_free(struct hp_fntab *t)
{
	hp_rows_free(&t->rows);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}
