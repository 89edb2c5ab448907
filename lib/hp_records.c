/*
 * hp_records.c - building the trace's records (hp_records.h,
 * docs/format.md).
 */
#include "hp_records.h"

#include <string.h>

#include "hp_format.h"
#include "hp_output.h"

#define MODULES_MAX_BYTES (1u << 20)

static uint8_t *put_string(uint8_t *p, const void *s, size_t len)
{
	hp_le32(p, (uint32_t)len);
	if (len) /* s may be NULL then (no build-id), which memcpy may not get */
		memcpy(p + 4, s, len);
	return p + 4 + len;
}

static uint32_t count_args(const char *cmdline, size_t len)
{
	uint32_t argc = 0;
	for (size_t i = 0; i < len; i++)
		argc += cmdline[i] == 0;
	return argc;
}

/* PROCESS: pid, clock, start time, mode, then the executable and argv, then
 * (since 1.1's extension) the buffer per thread and the clock's step. */
void hp_records_process(const struct hp_process_info *pi)
{
	uint32_t argc = count_args(pi->cmdline, pi->cmdline_len);
	uint8_t *p = hp_output_begin(HP_REC_PROCESS, 24 + 4 + pi->exe_len + pi->cmdline_len +
							     4 * (size_t)argc + HP_PROCESS_TAIL_SIZE);
	if (!p)
		return;
	hp_le32(p, pi->pid);
	hp_le32(p + 4, pi->clock);
	hp_le64(p + 8, pi->start_ns);
	hp_le32(p + 16, pi->ring);
	hp_le32(p + 20, argc);
	p = put_string(p + 24, pi->exe, pi->exe_len);
	for (size_t i = 0; i < pi->cmdline_len;) {
		size_t len = strnlen(pi->cmdline + i, pi->cmdline_len - i);
		p = put_string(p, pi->cmdline + i, len);
		i += len + 1;
	}
	hp_le64(p, pi->buffer_bytes);
	hp_le32(p + 8, pi->clock_step);
	hp_le32(p + 12, 0);
	hp_output_end(p + HP_PROCESS_TAIL_SIZE);
}

void hp_records_parent(uint32_t pid, uint32_t flags, uint64_t tick, const char *trace)
{
	size_t len = strlen(trace);
	uint8_t *p = hp_output_begin(HP_REC_PARENT, 20 + len);
	if (!p)
		return;
	hp_le32(p, pid);
	hp_le32(p + 4, flags);
	hp_le64(p + 8, tick);
	p = put_string(p + 16, trace, len);
	hp_output_end(p);
}

void hp_records_clock(uint64_t tick, uint64_t ns)
{
	uint8_t *p = hp_output_begin(HP_REC_CLOCK, 16);
	if (!p)
		return;
	hp_le64(p, tick);
	hp_le64(p + 8, ns);
	hp_output_end(p + 16);
}

void hp_records_calibration(uint32_t when, const struct hp_calibration *c)
{
	uint8_t *p = hp_output_begin(HP_REC_CALIBRATION, 24);
	if (!p)
		return;
	hp_le32(p, when);
	hp_le32(p + 4, c->pairs);
	hp_le64(p + 8, c->inside);
	hp_le64(p + 16, c->outside);
	hp_output_end(p + 24);
}

static size_t setting_len(const char *s)
{
	return s ? strlen(s) : 0;
}

void hp_records_filter(const struct hp_filter_info *f)
{
	size_t exclude = setting_len(f->exclude), include = setting_len(f->include);
	uint8_t *p = hp_output_begin(HP_REC_FILTER, HP_FILTER_FIXED_SIZE + 8 + exclude + include);
	if (!p)
		return;
	hp_le64(p, f->min_ns);
	hp_le64(p + 8, f->calls);
	hp_le64(p + 16, f->ticks);
	hp_le32(p + 24, f->depth);
	hp_le32(p + 28, 0);
	p = put_string(p + HP_FILTER_FIXED_SIZE, f->exclude, exclude);
	p = put_string(p, f->include, include);
	hp_output_end(p);
}

void hp_records_thread(uint32_t stream, uint32_t tid, const char *name, size_t len)
{
	uint8_t *p = hp_output_begin(HP_REC_THREAD, 12 + len);
	if (!p)
		return;
	hp_le32(p, stream);
	hp_le32(p + 4, tid);
	hp_le32(p + 8, (uint32_t)len);
	memcpy(p + 12, name, len);
	hp_output_end(p + 12 + len);
}

void hp_records_lost(uint32_t stream, uint32_t reason, uint64_t count)
{
	if (!count)
		return;
	uint8_t *p = hp_output_begin(HP_REC_LOST, 16);
	if (!p)
		return;
	hp_le32(p, stream);
	hp_le32(p + 4, reason);
	hp_le64(p + 8, count);
	hp_output_end(p + 16);
}

void hp_records_end(uint64_t events, uint64_t lost, uint32_t streams)
{
	uint8_t *p = hp_output_begin(HP_REC_END, 24);
	if (!p)
		return;
	hp_le64(p, events);
	hp_le64(p + 8, lost);
	hp_le32(p + 16, streams);
	hp_le32(p + 20, 0);
	hp_output_end(p + 24);
}

void hp_records_string(uint32_t id, const char *text, uint32_t len)
{
	uint8_t *p = hp_output_begin(HP_REC_STRING, 8 + len);
	if (!p)
		return;
	hp_le32(p, id);
	hp_le32(p + 4, len);
	memcpy(p + 8, text, len);
	hp_output_end(p + 8 + len);
}

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

/* ---- EVENTS ------------------------------------------------------------ */

static uint8_t *events_at; /* the EVENTS record begun last */

uint8_t *hp_records_events_begin(size_t max)
{
	events_at = hp_output_begin(HP_REC_EVENTS, 8 + max);
	return events_at ? events_at + 8 : NULL;
}

void hp_records_events_end(uint8_t *end, uint32_t stream, uint32_t events)
{
	hp_le32(events_at, stream);
	hp_le32(events_at + 4, events);
	hp_output_end(end);
}

/* ---- MODULES ----------------------------------------------------------- */

int hp_records_modules_begin(struct hp_records_modules *s)
{
	uint8_t *p = hp_output_begin(HP_REC_MODULES, MODULES_MAX_BYTES);
	if (!p) {
		s->failed = 1;
		return -1;
	}
	/* A continuation record keeps the snapshot's running total and tick. */
	*s = (struct hp_records_modules){ .count_at = p, .p = p + 4, .end = p + MODULES_MAX_BYTES,
					  .total = s->total, .tick = s->tick };
	return 0;
}

static void close_modules_record(struct hp_records_modules *s)
{
	hp_le32(s->count_at, s->count);
	hp_output_end(s->p);
}

int hp_records_module(struct hp_records_modules *s, const struct hp_loaded_module *m)
{
	size_t path_len = strlen(m->path);
	size_t need = 8 + 4 + path_len + 4 + m->build_id_len + 4 + (size_t)m->nseg * 32;
	if (s->p + need > s->end && s->count) {
		close_modules_record(s);
		if (hp_records_modules_begin(s) < 0)
			return 1; /* output failed: stop iterating */
	}
	if (s->p + need > s->end)
		return 0; /* larger than a record on its own: cannot happen with PATH_MAX paths */
	uint8_t *p = s->p;
	hp_le64(p, m->bias);
	p = put_string(p + 8, m->path, path_len);
	p = put_string(p, m->build_id, m->build_id_len);
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
	return 0;
}

/* The snapshot is complete: a reader may now tell which objects are gone. */
void hp_records_modules_end(struct hp_records_modules *s)
{
	close_modules_record(s);
	uint8_t *p = hp_output_begin(HP_REC_MODULES_AT, 16);
	if (!p)
		return;
	hp_le64(p, s->tick);
	hp_le32(p + 8, s->total);
	hp_le32(p + 12, 0);
	hp_output_end(p + 16);
}
