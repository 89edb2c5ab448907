/*
 * hp_fntab.h - the functions of every trace a command reads, one entry per
 * function however many traces and processes named it: the identity of
 * hp_report.h (name, module, source file or file offset), so that views
 * count a function once wherever its module was loaded. Entries are rows
 * (struct hp_row) whose counters are left at zero: views keep their own.
 */
#ifndef HP_FNTAB_H
#define HP_FNTAB_H

#include <stdint.h>

#include "hp_report.h"
#include "hp_symbols.h"

#define HP_NO_FN UINT32_MAX

struct hp_fntab {
	struct hp_rows rows; /* rows.row[id] */
	uint32_t *slot;      /* hash of the identity: id + 1, 0 empty */
	size_t slot_cap;     /* a power of two, or 0 */
};

/* The id of the function s names, added if new; HP_NO_FN out of memory. */
uint32_t hp_fntab_intern(struct hp_fntab *t, const struct hp_symbol *s);
static inline const struct hp_row *hp_fntab_get(const struct hp_fntab *t, uint32_t id)
{
	return &t->rows.row[id];
}
/* What to print for function id: its name, or the label that tells it from
 * others of that name once hp_fntab_label has run. */
static inline const char *hp_fntab_name(const struct hp_fntab *t, uint32_t id)
{
	return hp_row_name(&t->rows.row[id]);
}
/* Labels the functions that print alike ("helper (a.c)"). 0 or -1. */
int hp_fntab_label(struct hp_fntab *t);
void hp_fntab_free(struct hp_fntab *t);

#endif
