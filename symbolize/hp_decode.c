/*
 * hp_decode.c - decoder of the event stream (docs/format.md, hp_format.h).
 */
#include "hp_decode.h"

#include <stdio.h>
#include <stdlib.h>

#include "hp_format.h"

static int grow_events(struct hp_evbuf *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 8192;
	while (cap < need)
		cap *= 2;
	struct hp_ev *ev = realloc(b->ev, cap * sizeof(*ev));
	if (!ev)
		return -1;
	b->ev = ev;
	b->cap = cap;
	return 0;
}

static int push(struct hp_dec_stream *s, uint32_t func)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *stack = realloc(s->stack, cap * sizeof(*stack));
		if (!stack)
			return -1;
		s->stack = stack;
		s->cap = cap;
	}
	s->stack[s->depth++] = func;
	return 0;
}

static int define(struct hp_funcs *f, uint64_t addr)
{
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? f->cap * 2 : 1024;
		uint64_t *a = realloc(f->addr, (size_t)cap * sizeof(*a));
		if (!a)
			return -1;
		f->addr = a;
		f->cap = cap;
	}
	f->addr[f->n++] = addr;
	return 0;
}

static void emit(struct hp_evbuf *out, uint64_t tick, uint32_t func, uint32_t kind)
{
	struct hp_ev *e = &out->ev[out->n++];
	e->tick = tick;
	e->func = func;
	e->kind = kind;
}

/* An exit that is not of the top frame: close every frame down to it. */
static int exit_other(struct hp_dec_stream *s, uint32_t func, struct hp_evbuf *out)
{
	size_t depth = hp_stack_unwind_to(s->stack, s->depth, func);
	if (depth == s->depth) {
		s->orphan_exits++;
		return 0;
	}
	if (grow_events(out, out->n + (s->depth - depth)))
		return -1;
	while (s->depth > depth)
		emit(out, s->tick, s->stack[--s->depth], HP_EV_EXIT);
	return 0;
}

#define NEED(cond, why) do { if (!(cond)) { reason = why; goto bad; } } while (0)

long hp_decode(struct hp_funcs *f, struct hp_dec_stream *s, const uint8_t *p, size_t len,
	       struct hp_evbuf *out, char *err, size_t errlen)
{
	const uint8_t *end = p + len, *start = p, *op_at = p;
	const char *reason = "out of memory";
	uint64_t tick = s->tick, u, v;
	long recorded = 0;
	out->n = 0;
	/* Each byte starts at most one event; unwinds grow the buffer themselves. */
	if (grow_events(out, len))
		goto bad;
	while (p < end) {
		op_at = p;
		uint8_t op = *p++;
		if (op & HP_OP_EXIT_SHORT) {
			NEED(s->depth, "exit with no open frame");
			tick += op & 0x7f;
			emit(out, tick, s->stack[--s->depth], HP_EV_EXIT);
			recorded++;
		} else if (op < HP_OP_ENTER_SHORT_MAX) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated enter");
			tick += u;
			NEED(op < f->n, "enter of an undefined function");
			NEED(!push(s, op), "out of memory");
			emit(out, tick, op, HP_EV_ENTER);
			recorded++;
		} else if (op == HP_OP_ENTER_SHORT_MAX || op == HP_OP_ENTER_LONG) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated enter");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated enter");
			tick += op == HP_OP_ENTER_LONG ? (uint64_t)hp_unzigzag(u) : u;
			NEED(v < f->n, "enter of an undefined function");
			NEED(!push(s, (uint32_t)v), "out of memory");
			emit(out, tick, (uint32_t)v, HP_EV_ENTER);
			recorded++;
		} else if (op == HP_OP_EXIT_LONG) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated exit");
			NEED(s->depth, "exit with no open frame");
			tick += (uint64_t)hp_unzigzag(u);
			emit(out, tick, s->stack[--s->depth], HP_EV_EXIT);
			recorded++;
		} else if (op == HP_OP_EXIT_FN) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated exit");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated exit");
			NEED(v < f->n, "exit of an undefined function");
			tick += (uint64_t)hp_unzigzag(u);
			s->tick = tick;
			NEED(!exit_other(s, (uint32_t)v, out), "out of memory");
			recorded++;
		} else if (op == HP_OP_DEFINE) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated function definition");
			NEED(!define(f, u), "out of memory");
		} else if (op == HP_OP_RESET) {
			s->depth = 0;
			tick = 0;
			emit(out, 0, 0, HP_EV_RESET);
		} else {
			NEED(0, "unknown event code");
		}
	}
	s->tick = tick;
	return recorded;
bad:
	/* Where the entry that failed begins: p may be NULL after a bad varint. */
	snprintf(err, errlen, "corrupt event data (%s at byte %ld of a record)", reason,
		 (long)(op_at - start));
	return -1;
}

void hp_funcs_free(struct hp_funcs *f)
{
	free(f->addr);
	*f = (struct hp_funcs){ 0 };
}

void hp_dec_stream_free(struct hp_dec_stream *s)
{
	free(s->stack);
	*s = (struct hp_dec_stream){ 0 };
}

void hp_evbuf_free(struct hp_evbuf *b)
{
	free(b->ev);
	*b = (struct hp_evbuf){ 0 };
}
