/*
 * hp_decode.c - decoder of the event stream (docs/format.md, hp_format.h).
 *
 * What one record costs is bounded: events come out in pieces of at most a
 * given number (a 0x41 that closes thousands of frames is spread over
 * pieces too), and an exit of a function that is not open is found so by
 * the per-function counts of open frames, not by scanning the stack: the
 * counts are brought up to date only when such an exit (0x41) asks
 * (count_open), each frame at most once while open: amortised O(1).
 */
#include "hp_decode.h"

#include <stdio.h>
#include <stdlib.h>

#include "hp_format.h"

#define EVENTS_MIN 1024

static int grow_events(struct hp_evbuf *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : EVENTS_MIN;
	while (cap < need)
		cap *= 2;
	struct hp_ev *ev = realloc(b->ev, cap * sizeof(*ev));
	if (!ev)
		return -1;
	b->ev = ev;
	b->cap = cap;
	return 0;
}

static inline int emit_value(struct hp_evbuf *out, uint64_t tick, uint32_t func, uint32_t kind,
			     int64_t value)
{
	if (out->n == out->cap && grow_events(out, out->n + 1))
		return -1;
	out->regions |= kind == HP_EV_REGION_REPAIR || (kind <= HP_EV_EXIT && hp_is_region_func(func));
	out->own += kind == HP_EV_OWN;
	out->controls += kind > HP_EV_EXIT && kind != HP_EV_OWN;
	struct hp_ev *e = &out->ev[out->n++];
	e->tick = tick;
	e->func = func;
	e->kind = kind;
	e->value = value;
	return 0;
}

static inline int emit(struct hp_evbuf *out, uint64_t tick, uint32_t func, uint32_t kind)
{
	return emit_value(out, tick, func, kind, 0);
}

/* ---- the stack ----------------------------------------------------------- */

static int grow_stack(struct hp_dec_stream *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024;
	uint32_t *stack = realloc(s->stack, cap * sizeof(*stack));
	if (!stack)
		return -1;
	s->stack = stack;
	s->cap = cap;
	return 0;
}

static inline int push(struct hp_dec_stream *s, uint32_t func)
{
	if (s->depth == s->cap && grow_stack(s))
		return -1;
	s->stack[s->depth++] = func;
	return 0;
}

static inline uint32_t pop(struct hp_dec_stream *s)
{
	uint32_t func = s->stack[--s->depth];
	if (s->depth < s->counted) {
		hp_opencount_sub(&s->open, func);
		s->counted = s->depth;
	}
	return func;
}

/* The counts are brought up to the whole stack only when an exit of
 * another function asks: each frame is counted at most once while it is
 * open, so the cost stays linear in the events, and a stream without such
 * exits never hashes. 0, or -1 out of memory. */
static int count_open(struct hp_dec_stream *s)
{
	for (; s->counted < s->depth; s->counted++)
		if (hp_opencount_add(&s->open, s->stack[s->counted]) < 0)
			return -1;
	return 0;
}

static int define(struct hp_funcs *f, uint64_t addr)
{
	if (f->n == f->cap) {
		if (f->cap >= UINT32_MAX / 2)
			return -1;
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

/* An exit that is not of the top frame: every frame down to the newest of
 * func closes, as many per piece as fit (drain_unwind). */
static int exit_other(struct hp_dec_stream *s, uint32_t func)
{
	if (count_open(s))
		return -1;
	if (!hp_opencount_get(&s->open, func)) {
		s->orphan_exits++;
		return 0;
	}
	s->unwind_to = hp_stack_unwind_to(s->stack, s->depth, func);
	s->unwinding = 1;
	return 0;
}

/* ---- regions --------------------------------------------------------- */

static int note_repaired(struct hp_dec_stream *s, uint32_t name)
{
	if (s->nrepaired == s->repaired_cap) {
		size_t cap = s->repaired_cap ? s->repaired_cap * 2 : 16;
		uint32_t *r = realloc(s->repaired, cap * sizeof(*r));
		if (!r)
			return -1;
		s->repaired = r;
		s->repaired_cap = cap;
	}
	s->repaired[s->nrepaired++] = name;
	return 0;
}

/* The end of a region a repair closed already: 1, and forgotten. */
static int was_repaired(struct hp_dec_stream *s, uint32_t name)
{
	for (size_t i = s->nrepaired; i > 0; i--)
		if (s->repaired[i - 1] == name) {
			s->repaired[i - 1] = s->repaired[--s->nrepaired];
			return 1;
		}
	return 0;
}

/* Pops the top frame; a region closed by anything but its own end is
 * repaired: said so, and its own end is dropped when it comes. */
static int pop_closing(struct hp_dec_stream *s, struct hp_evbuf *out, uint64_t tick, int why)
{
	uint32_t func = pop(s);
	if (emit(out, tick, func, HP_EV_EXIT))
		return -1;
	if (!hp_is_region_func(func))
		return 0;
	uint32_t name = func - HP_REGION_FUNC;
	return emit_value(out, tick, name, HP_EV_REGION_REPAIR, why) || note_repaired(s, name);
}

/* A function's exit closes the regions still open above it. */
static int close_regions_above(struct hp_dec_stream *s, struct hp_evbuf *out, uint64_t tick)
{
	while (s->depth && hp_is_region_func(s->stack[s->depth - 1]))
		if (pop_closing(s, out, tick, HP_REPAIR_NOT_ENDED))
			return -1;
	return 0;
}

static int region_begin(struct hp_dec_stream *s, struct hp_evbuf *out, uint64_t tick,
			uint32_t name)
{
	return push(s, HP_REGION_FUNC | name) || emit(out, tick, HP_REGION_FUNC | name, HP_EV_ENTER);
}

/* An end closes the newest open region of its name above the top
 * function, and the regions open inside it (out of order). */
static int region_end(struct hp_dec_stream *s, struct hp_evbuf *out, uint64_t tick,
		      uint32_t name)
{
	size_t i = s->depth;
	while (i > 0 && hp_is_region_func(s->stack[i - 1]) && s->stack[i - 1] != (HP_REGION_FUNC | name))
		i--;
	if (i == 0 || s->stack[i - 1] != (HP_REGION_FUNC | name)) {
		if (was_repaired(s, name))
			return 0;
		return emit_value(out, tick, name, HP_EV_REGION_REPAIR, HP_REPAIR_NO_BEGIN);
	}
	while (s->depth > i)
		if (pop_closing(s, out, tick, HP_REPAIR_OUT_OF_ORDER))
			return -1;
	return emit(out, tick, pop(s), HP_EV_EXIT);
}

/* Low half, then high half: a half without its other is dropped. */
static int value_half(struct hp_dec_stream *s, struct hp_evbuf *out, uint64_t tick, int op,
		      uint64_t name, uint64_t w)
{
	if (op == HP_OP_VALUE_LO) {
		s->value_half = 1;
		s->value_name = (uint32_t)name;
		s->value_lo = (uint32_t)w;
		return 0;
	}
	int paired = s->value_half && s->value_name == name;
	s->value_half = 0;
	if (!paired)
		return 0;
	return emit_value(out, tick, (uint32_t)name, HP_EV_VALUE,
			  (int64_t)((uint64_t)(uint32_t)w << 32 | s->value_lo));
}

static int drain_unwind(struct hp_dec_stream *s, struct hp_evbuf *out, size_t limit)
{
	while (s->depth > s->unwind_to && out->n < limit)
		if (pop_closing(s, out, s->tick, HP_REPAIR_NOT_ENDED))
			return -1;
	s->unwinding = s->depth > s->unwind_to;
	return 0;
}

/* After a gap nothing is known of the open frames. */
static void reset(struct hp_dec_stream *s)
{
	while (s->depth)
		pop(s);
	s->nrepaired = 0;
	s->value_half = 0;
}

#define NEED(cond, why) do { if (!(cond)) { reason = why; goto bad; } } while (0)

/* The state the common path keeps in locals: stores to the events could
 * alias the stream's and the buffer's fields, which then would be read
 * again at every event. Pointers, not indices and bounds: fewer values
 * live in the loop, and all of them fit in registers. */
struct calls_state {
	struct hp_ev *ev;          /* the next event's place */
	uint32_t *top;             /* the next frame's place on the stack */
	uint32_t *counted;         /* the frames below it are counted */
	uint32_t nfuncs;
	uint64_t tick;
};

static inline void emit_call(struct calls_state *c, uint32_t func, uint32_t kind)
{
	struct hp_ev *e = c->ev++;
	e->tick = c->tick;
	e->func = func;
	e->kind = kind;
	e->value = 0;
}

/* One common event at p, before the record's last byte: an exit of the
 * top frame (a function's, counted by nobody) or an enter of a defined
 * function; the buffer and the stack have room for it (decode_calls). The
 * byte after it, or NULL if it is any other (decode_into's general path
 * takes it, and says what is wrong with it). */
static inline const uint8_t *common_event(struct calls_state *c, const uint8_t *p,
					  const uint8_t *end)
{
	uint8_t op = *p++;
	uint64_t u, v;
	if (op < HP_OP_ENTER_SHORT_MAX && *p < 0x80 && op < c->nfuncs) {
		/* the most common enter: an index and a tick of one byte each */
		c->tick += *p++;
		*c->top++ = op;
		emit_call(c, op, HP_EV_ENTER);
		return p;
	}
	if (op & HP_OP_EXIT_SHORT || op == HP_OP_EXIT_LONG) {
		if (c->top <= c->counted || hp_is_region_func(c->top[-1]))
			return NULL;
		if (op == HP_OP_EXIT_LONG) {
			if (!(p = hp_get_uvarint(p, end, &u)))
				return NULL;
			c->tick += (uint64_t)hp_unzigzag(u);
		} else {
			c->tick += op & 0x7f;
		}
		c->top--;
		emit_call(c, *c->top, HP_EV_EXIT);
		return p;
	}
	if (op < HP_OP_ENTER_SHORT_MAX) {
		v = op;
	} else if (op == HP_OP_ENTER_SHORT_MAX || op == HP_OP_ENTER_LONG) {
		if (!(p = hp_get_uvarint(p, end, &v)))
			return NULL;
	} else {
		return NULL;
	}
	if (!(p = hp_get_uvarint(p, end, &u)) || v >= c->nfuncs)
		return NULL;
	c->tick += op == HP_OP_ENTER_LONG ? (uint64_t)hp_unzigzag(u) : u;
	*c->top++ = (uint32_t)v;
	emit_call(c, (uint32_t)v, HP_EV_ENTER);
	return p;
}

/* Room on the stack for this many enters at least, where there is memory:
 * decode_calls decodes no more events than the stack has room for. */
#define STACK_AHEAD 256

/* Decodes the common events from *pp on, as long as they come and out has
 * room (below limit); nearly every event of a trace takes this path. Each
 * event moves the depth by one at most: it stops after as many as the
 * stack has room for, so that an enter needs no test of its own. Each
 * takes a byte at least: no event begins `room` bytes on, and that one
 * bound holds both the bytes and the room. Nor at the record's last byte
 * (one byte, or an event cut short: the general path's), so that the
 * common enter's second byte is there. */
static void decode_calls(struct hp_funcs *f, struct hp_dec_stream *s, const uint8_t **pp,
			 const uint8_t *end, size_t limit, struct hp_evbuf *out, uint64_t *tick,
			 long *recorded)
{
	while (s->cap - s->depth < STACK_AHEAD && !grow_stack(s))
		; /* out of memory: the general path says so at its push */
	size_t room = (limit < out->cap ? limit : out->cap) - out->n;
	if (room > s->cap - s->depth)
		room = s->cap - s->depth;
	if (!room)
		return; /* out has no buffer yet, or no room: the general path's */
	struct calls_state c = {
		.ev = out->ev + out->n,
		.top = s->stack + s->depth, .counted = s->stack + s->counted,
		.nfuncs = f->n, .tick = *tick,
	};
	const uint8_t *p = *pp, *next;
	size_t before_last = end > p ? (size_t)(end - p) - 1 : 0;
	const uint8_t *stop = p + (before_last < room ? before_last : room);
	while (p < stop && (next = common_event(&c, p, end)))
		p = next;
	*pp = p;
	*tick = c.tick;
	size_t n = (size_t)(c.ev - out->ev);
	*recorded += (long)(n - out->n);
	out->n = n;
	s->depth = (size_t)(c.top - s->stack);
}

/* Appends events of rec to out until out holds limit of them. */
static long decode_into(struct hp_funcs *f, struct hp_dec_stream *s, struct hp_dec_record *rec,
			size_t limit, struct hp_evbuf *out, char *err, size_t errlen)
{
	const uint8_t *p = rec->p, *end = rec->end, *op_at = p;
	const char *reason = "out of memory";
	uint64_t tick = s->tick, u, v, w;
	long recorded = 0;
	while (out->n < limit) {
		if (s->unwinding) {
			NEED(!drain_unwind(s, out, limit), "out of memory");
			continue;
		}
		decode_calls(f, s, &p, end, limit, out, &tick, &recorded);
		if (p == end || out->n >= limit)
			break;
		op_at = p;
		uint8_t op = *p++;
		if (op & HP_OP_EXIT_SHORT) {
			tick += op & 0x7f;
			NEED(!close_regions_above(s, out, tick), "out of memory");
			NEED(s->depth, "exit with no open frame");
			NEED(!emit(out, tick, pop(s), HP_EV_EXIT), "out of memory");
			recorded++;
		} else if (op < HP_OP_ENTER_SHORT_MAX) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated enter");
			tick += u;
			NEED(op < f->n, "enter of an undefined function");
			NEED(!push(s, op), "out of memory");
			NEED(!emit(out, tick, op, HP_EV_ENTER), "out of memory");
			recorded++;
		} else if (op == HP_OP_ENTER_SHORT_MAX || op == HP_OP_ENTER_LONG) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated enter");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated enter");
			tick += op == HP_OP_ENTER_LONG ? (uint64_t)hp_unzigzag(u) : u;
			NEED(v < f->n, "enter of an undefined function");
			NEED(!push(s, (uint32_t)v), "out of memory");
			NEED(!emit(out, tick, (uint32_t)v, HP_EV_ENTER), "out of memory");
			recorded++;
		} else if (op == HP_OP_EXIT_LONG) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated exit");
			tick += (uint64_t)hp_unzigzag(u);
			NEED(!close_regions_above(s, out, tick), "out of memory");
			NEED(s->depth, "exit with no open frame");
			NEED(!emit(out, tick, pop(s), HP_EV_EXIT), "out of memory");
			recorded++;
		} else if (op == HP_OP_EXIT_FN) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated exit");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated exit");
			NEED(v < f->n, "exit of an undefined function");
			tick += (uint64_t)hp_unzigzag(u);
			s->tick = tick; /* the tick of every frame it closes */
			NEED(!exit_other(s, (uint32_t)v), "out of memory");
			recorded++;
		} else if (op == HP_OP_DEFINE) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated function definition");
			NEED(!define(f, u), "out of memory");
		} else if (op == HP_OP_RESET) {
			reset(s);
			tick = 0;
			NEED(!emit(out, 0, 0, HP_EV_RESET), "out of memory");
		} else if ((op >= HP_OP_PAUSE && op <= HP_OP_START) || op == HP_OP_OWN) {
			NEED(p = hp_get_uvarint(p, end, &u), "truncated control event");
			tick += (uint64_t)hp_unzigzag(u);
			uint32_t kind = op == HP_OP_OWN ? HP_EV_OWN : HP_EV_PAUSE + (op - HP_OP_PAUSE);
			NEED(!emit(out, tick, 0, kind), "out of memory");
			recorded += op != HP_OP_OWN; /* hookprof's time is no event */
		} else if (op >= HP_OP_REGION_BEGIN && op <= HP_OP_MARK) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated control event");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated control event");
			NEED(v < HP_STRINGS_MAX, "string id out of range");
			tick += (uint64_t)hp_unzigzag(u);
			int bad = op == HP_OP_REGION_BEGIN ? region_begin(s, out, tick, (uint32_t)v)
				: op == HP_OP_REGION_END  ? region_end(s, out, tick, (uint32_t)v)
							  : emit(out, tick, (uint32_t)v, HP_EV_MARK);
			NEED(!bad, "out of memory");
			recorded++;
		} else if (op == HP_OP_VALUE_LO || op == HP_OP_VALUE_HI) {
			NEED(p = hp_get_uvarint(p, end, &v), "truncated value");
			NEED(p = hp_get_uvarint(p, end, &u), "truncated value");
			NEED(p = hp_get_uvarint(p, end, &w), "truncated value");
			NEED(v < HP_STRINGS_MAX && w <= UINT32_MAX, "value out of range");
			tick += (uint64_t)hp_unzigzag(u);
			NEED(!value_half(s, out, tick, op, v, w), "out of memory");
			recorded++;
		} else {
			NEED(0, "unknown event code");
		}
	}
	rec->p = p;
	s->tick = tick;
	return recorded;
bad:
	/* Where the entry that failed begins: p may be NULL after a bad varint. */
	snprintf(err, errlen, "corrupt event data (%s at byte %ld of a record)", reason,
		 (long)(op_at - rec->start));
	return -1;
}

/* Ticks only: no stack, no dictionary, nothing named. An index is not
 * checked against the definitions (they may be in other streams' records). */
long hp_decode_ticks(const uint8_t *p, size_t len, uint64_t *tick, uint64_t *first, uint64_t *last)
{
	const uint8_t *end = p + len;
	uint64_t t = *tick, u, v;
	long events = 0;
	while (p && p < end) {
		uint8_t op = *p++;
		if (op & HP_OP_EXIT_SHORT) {
			t += op & 0x7f;
		} else if (op < HP_OP_ENTER_SHORT_MAX) {
			if ((p = hp_get_uvarint(p, end, &u)))
				t += u;
		} else if (op == HP_OP_ENTER_SHORT_MAX || op == HP_OP_ENTER_LONG ||
			   op == HP_OP_EXIT_FN) {
			if ((p = hp_get_uvarint(p, end, &v)) && (p = hp_get_uvarint(p, end, &u)))
				t += op == HP_OP_ENTER_SHORT_MAX ? u : (uint64_t)hp_unzigzag(u);
		} else if (op == HP_OP_EXIT_LONG || (op >= HP_OP_PAUSE && op <= HP_OP_START) ||
			   op == HP_OP_OWN) {
			if ((p = hp_get_uvarint(p, end, &u)))
				t += (uint64_t)hp_unzigzag(u);
			events -= op == HP_OP_OWN; /* no event, counted below */
		} else if (op >= HP_OP_REGION_BEGIN && op <= HP_OP_VALUE_HI) {
			/* a string id, the tick, and for a value's half its 32 bits */
			if ((p = hp_get_uvarint(p, end, &v)) && (p = hp_get_uvarint(p, end, &u)))
				t += (uint64_t)hp_unzigzag(u);
			if (p && op >= HP_OP_VALUE_LO)
				p = hp_get_uvarint(p, end, &v);
		} else if (op == HP_OP_DEFINE) {
			p = hp_get_uvarint(p, end, &u);
			continue;
		} else if (op == HP_OP_RESET) {
			t = 0;
			continue;
		} else {
			return -1;
		}
		if (p && t > *last)
			*last = t;
		if (p && t < *first)
			*first = t;
		events++;
	}
	*tick = t;
	return p ? events : -1;
}

long hp_decode_piece(struct hp_funcs *f, struct hp_dec_stream *s, struct hp_dec_record *rec,
		     size_t max, struct hp_evbuf *out, char *err, size_t errlen)
{
	out->n = out->own = out->controls = 0;
	out->regions = 0;
	return decode_into(f, s, rec, max, out, err, errlen);
}

long hp_decode(struct hp_funcs *f, struct hp_dec_stream *s, const uint8_t *p, size_t len,
	       struct hp_evbuf *out, char *err, size_t errlen)
{
	struct hp_dec_record rec = hp_dec_record_of(p, len);
	out->n = out->own = out->controls = 0;
	out->regions = 0;
	return decode_into(f, s, &rec, SIZE_MAX, out, err, errlen);
}

void hp_funcs_free(struct hp_funcs *f)
{
	free(f->addr);
	*f = (struct hp_funcs){ 0 };
}

void hp_dec_stream_free(struct hp_dec_stream *s)
{
	free(s->stack);
	free(s->repaired);
	hp_opencount_free(&s->open);
	*s = (struct hp_dec_stream){ 0 };
}

void hp_evbuf_free(struct hp_evbuf *b)
{
	free(b->ev);
	*b = (struct hp_evbuf){ 0 };
}
