/*
 * hp_records.c - building the trace's records (hp_records.h).
 */
#include "hp_records.h"

#include "hp_format.h"
#include "hp_output.h"

static void put_frames(uint8_t *p, const uint64_t *pc, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		hp_le64(p + 8 * (size_t)i, pc[i]);
}

void hp_records_stack(uint32_t stream, const struct hp_frames *s)
{
	uint8_t *p = hp_output_begin(HP_REC_STACK, 12 + 8 * (size_t)s->n);
	if (!p)
		return;
	hp_le32(p, stream);
	hp_le32(p + 4, s->flags);
	hp_le32(p + 8, s->n);
	put_frames(p + 12, s->pc, s->n);
	hp_output_end(p + 12 + 8 * (size_t)s->n);
}

void hp_records_crash(const struct hp_crash_info *c)
{
	uint8_t *p = hp_output_begin(HP_REC_CRASH, 40 + 8 * (size_t)c->n);
	if (!p)
		return;
	hp_le32(p, c->stream);
	hp_le32(p + 4, c->tid);
	hp_le32(p + 8, c->sig);
	hp_le32(p + 12, c->code);
	hp_le64(p + 16, c->addr);
	hp_le64(p + 24, c->unwind_ns);
	hp_le32(p + 32, c->flags);
	hp_le32(p + 36, c->n);
	put_frames(p + 40, c->pc, c->n);
	hp_output_end(p + 40 + 8 * (size_t)c->n);
}
