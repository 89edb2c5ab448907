/*
 * hp_encode.c - the event stream encoder.
 *
 * Typical cost: an exit of the top frame is one byte and needs no hash
 * lookup (the top frame's address is compared directly); an enter of one of
 * the first 63 functions with a tick delta under 128 is two bytes, and an
 * enter of the function entered just before needs no lookup either.
 */
#include "hp_encode.h"

#include "hp_format.h"

#define DICT_INITIAL_SLOTS 4096u
#define STACK_INITIAL 4096u

static uint32_t slot_of(uint64_t addr, uint32_t mask)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

int hp_dict_init(struct hp_dict *d)
{
	*d = (struct hp_dict){ 0 };
	d->slot_addr = hp_pages_alloc(DICT_INITIAL_SLOTS * sizeof(uint64_t));
	d->slot_index = hp_pages_alloc(DICT_INITIAL_SLOTS * sizeof(uint32_t));
	d->addr_of = hp_pages_alloc(DICT_INITIAL_SLOTS / 2 * sizeof(uint64_t));
	if (!d->slot_addr || !d->slot_index || !d->addr_of) {
		hp_dict_free(d);
		return -1;
	}
	d->mask = DICT_INITIAL_SLOTS - 1;
	d->addr_cap = DICT_INITIAL_SLOTS / 2;
	return 0;
}

void hp_dict_free(struct hp_dict *d)
{
	hp_pages_free(d->slot_addr, (size_t)(d->mask + 1) * sizeof(uint64_t));
	hp_pages_free(d->slot_index, (size_t)(d->mask + 1) * sizeof(uint32_t));
	hp_pages_free(d->addr_of, (size_t)d->addr_cap * sizeof(uint64_t));
	*d = (struct hp_dict){ 0 };
}

/* Slots hold address + 1 so that 0 can mark an empty slot and a hook
 * called with a null function pointer is still recorded. Addresses have
 * bit 63 clear (it flags exits), so the sum never wraps. */
static uint64_t slot_key(uint64_t addr) { return addr + 1; }

static void dict_place_key(struct hp_dict *d, uint64_t key, uint32_t index)
{
	uint32_t i = slot_of(key, d->mask);
	while (d->slot_addr[i])
		i = (i + 1) & d->mask;
	d->slot_addr[i] = key;
	d->slot_index[i] = index;
}

/* Doubles the table and the index array together: the load stays under 1/2. */
static int dict_grow(struct hp_dict *d)
{
	struct hp_dict old = *d;
	uint32_t slots = (d->mask + 1) * 2;
	d->slot_addr = hp_pages_alloc((size_t)slots * sizeof(uint64_t));
	d->slot_index = hp_pages_alloc((size_t)slots * sizeof(uint32_t));
	uint64_t *addr_of = hp_pages_grow(old.addr_of, (size_t)old.addr_cap * sizeof(uint64_t),
					  (size_t)slots / 2 * sizeof(uint64_t));
	if (!d->slot_addr || !d->slot_index || !addr_of) {
		hp_pages_free(d->slot_addr, (size_t)slots * sizeof(uint64_t));
		hp_pages_free(d->slot_index, (size_t)slots * sizeof(uint32_t));
		d->slot_addr = old.slot_addr;
		d->slot_index = old.slot_index;
		if (addr_of)
			d->addr_of = addr_of, d->addr_cap = slots / 2;
		return -1;
	}
	d->mask = slots - 1;
	d->addr_of = addr_of;
	d->addr_cap = slots / 2;
	for (uint32_t i = 0; i <= old.mask; i++)
		if (old.slot_addr[i])
			dict_place_key(d, old.slot_addr[i], old.slot_index[i]);
	hp_pages_free(old.slot_addr, (size_t)(old.mask + 1) * sizeof(uint64_t));
	hp_pages_free(old.slot_index, (size_t)(old.mask + 1) * sizeof(uint32_t));
	return 0;
}

/* Index of addr; a new address gets the next index and a DEFINE record. */
static int64_t dict_index_slow(struct hp_dict *d, uint64_t addr, uint8_t **out)
{
	uint64_t key = slot_key(addr);
	for (uint32_t i = slot_of(key, d->mask);; i = (i + 1) & d->mask) {
		if (d->slot_addr[i] == key)
			return d->slot_index[i];
		if (!d->slot_addr[i])
			break;
	}
	if (d->count == d->addr_cap && dict_grow(d) < 0)
		return -1;
	uint32_t index = d->count++;
	d->addr_of[index] = addr;
	dict_place_key(d, key, index);
	uint8_t *p = *out;
	*p++ = HP_OP_DEFINE;
	*out = hp_put_uvarint(p, addr);
	return index;
}

/* Index of addr, or a new one and its DEFINE op appended at *out. Most
 * lookups hit the first slot probed: that is inline, the rest out of line,
 * through a copy of the output pointer so that the caller's can stay in a
 * register. */
static inline int64_t dict_index(struct hp_dict *d, uint64_t addr, uint8_t **out)
{
	uint64_t key = slot_key(addr);
	uint32_t i = slot_of(key, d->mask);
	if (likely(d->slot_addr[i] == key))
		return d->slot_index[i];
	uint8_t *q = *out;
	int64_t index = dict_index_slow(d, addr, &q);
	*out = q;
	return index;
}

static int stack_grow(struct hp_enc_stream *s)
{
	size_t cap = s->cap ? s->cap * 2 : STACK_INITIAL;
	uint32_t *stack = hp_pages_grow(s->stack, s->cap * sizeof(uint32_t), cap * sizeof(uint32_t));
	if (!stack)
		return -1;
	s->stack = stack;
	s->cap = cap;
	return 0;
}

void hp_enc_stream_free(struct hp_enc_stream *s)
{
	hp_pages_free(s->stack, s->cap * sizeof(uint32_t));
	*s = (struct hp_enc_stream){ 0 };
}

static uint8_t *put_enter(uint8_t *p, uint32_t index, uint64_t delta)
{
	if ((int64_t)delta < 0) {
		*p++ = HP_OP_ENTER_LONG;
		p = hp_put_uvarint(p, index);
		return hp_put_uvarint(p, hp_zigzag((int64_t)delta));
	}
	if (index < HP_OP_ENTER_SHORT_MAX) {
		*p++ = (uint8_t)index;
	} else {
		*p++ = HP_OP_ENTER_SHORT_MAX;
		p = hp_put_uvarint(p, index);
	}
	return hp_put_uvarint(p, delta);
}

static uint8_t *put_exit_top(uint8_t *p, uint64_t delta)
{
	if (delta < 0x80) {
		*p++ = (uint8_t)(HP_OP_EXIT_SHORT | delta);
		return p;
	}
	*p++ = HP_OP_EXIT_LONG;
	return hp_put_uvarint(p, hp_zigzag((int64_t)delta));
}

static uint8_t *put_exit_fn(uint8_t *p, uint32_t index, uint64_t delta)
{
	*p++ = HP_OP_EXIT_FN;
	p = hp_put_uvarint(p, index);
	return hp_put_uvarint(p, hp_zigzag((int64_t)delta));
}

/* A control event: no frame opens or closes. Deltas are signed: a stop
 * is recorded at the moment it was asked for, which may be before this
 * thread's last event. */
static uint8_t *put_control(uint8_t *p, uint64_t raw, uint64_t delta)
{
	unsigned kind = hp_raw_kind(raw);
	uint64_t payload = raw & HP_RAW_PAYLOAD_MASK;
	int value = kind == HP_RAW_VALUE_LO || kind == HP_RAW_VALUE_HI;
	*p++ = (uint8_t)(HP_OP_RESET + kind);
	if (kind >= HP_RAW_REGION_BEGIN)
		p = hp_put_uvarint(p, value ? payload >> 32 : payload);
	p = hp_put_uvarint(p, hp_zigzag((int64_t)delta));
	if (value)
		p = hp_put_uvarint(p, payload & 0xffffffffu);
	return p;
}

/* Exit of a frame other than the top: the rule of hp_stack_unwind_to. */
static int encode_exit_other(struct hp_dict *d, struct hp_enc_stream *s, uint64_t addr,
			     uint64_t delta, uint8_t **out)
{
	int64_t index = dict_index(d, addr, out);
	if (index < 0)
		return -1;
	*out = put_exit_fn(*out, (uint32_t)index, delta);
	s->depth = hp_stack_unwind_to(s->stack, s->depth, (uint32_t)index);
	return 0;
}

/* The address of the top frame, or one no function has (bit 63: an exit
 * never matches it) when no frame is open. */
static inline uint64_t top_of(const uint64_t *addr_of, const uint32_t *stack, size_t depth)
{
	return depth ? addr_of[stack[depth - 1]] : HP_RAW_EXIT;
}

/*
 * The loop keeps the stream's depth, stack and its size, the dictionary's
 * addresses and the top frame's address in locals: every store through the uint8_t
 * output pointer may alias a struct field, so fields would be reloaded per
 * event. They go back to *s around the out-of-line cases. The top's
 * address is loaded when the frame below becomes the top, not when the
 * next exit needs it: the exit's compare then waits for no load. An enter
 * of the function entered last (a recursion, a hot leaf called in a loop)
 * reuses its index without the hash lookup, whose load and compare were
 * the encoder's costliest step (encode_bench: 10-15% less time per event).
 */
static ssize_t encode_all(struct hp_dict *d, struct hp_enc_stream *s,
			  const struct hp_raw *ev, size_t n, uint8_t *out)
{
	uint8_t *p = out;
	size_t nothing = 0;
	uint64_t last = s->last_tick;
	size_t depth = s->depth;
	uint32_t *stack = s->stack;
	size_t cap = s->cap;
	const uint64_t *addr_of = d->addr_of; /* again after a lookup: it may grow */
	uint64_t top = top_of(addr_of, stack, depth);
	uint64_t last_addr = HP_RAW_EXIT; /* no function's: the first enter looks up */
	uint32_t last_index = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t raw = ev[i].addr, tick = ev[i].tick;
		uint64_t delta = tick - last;
		uint64_t addr = raw & ~HP_RAW_EXIT;
		last = tick;
		if (raw & HP_RAW_EXIT) {
			if (likely(addr == top)) {
				depth--;
				top = top_of(addr_of, stack, depth);
				p = put_exit_top(p, delta);
				continue;
			}
			s->depth = depth;
			if (encode_exit_other(d, s, addr, delta, &p) < 0)
				return -1;
			depth = s->depth;
			addr_of = d->addr_of;
			top = top_of(addr_of, stack, depth);
			continue;
		}
		if (unlikely(raw & HP_RAW_CONTROL)) {
			if (raw == HP_RAW_NOTHING) {
				last = tick - delta; /* as if it were not there */
				nothing++;
				continue;
			}
			p = put_control(p, raw, delta);
			continue;
		}
		if (addr != last_addr) {
			int64_t index = dict_index(d, addr, &p);
			if (index < 0)
				return -1;
			last_addr = addr;
			last_index = (uint32_t)index;
			addr_of = d->addr_of;
		}
		p = put_enter(p, last_index, delta);
		if (unlikely(depth == cap)) {
			s->depth = depth;
			if (stack_grow(s) < 0)
				return -1;
			stack = s->stack;
			cap = s->cap;
		}
		stack[depth++] = last_index;
		top = addr;
	}
	s->depth = depth;
	s->last_tick = last;
	s->written = n - nothing;
	return p - out;
}

static uint64_t min_ticks;

void hp_encode_set_min(uint64_t ticks) { min_ticks = ticks; }

ssize_t hp_encode_flush(struct hp_dict *d, struct hp_enc_stream *s, uint8_t *out)
{
	s->written = 0;
	if (!s->has_pending)
		return 0;
	s->has_pending = 0;
	return encode_all(d, s, &s->pending, 1, out);
}

/* A short call: the enter held back, then its own exit before the minimum. */
static int short_call(const struct hp_enc_stream *s, const struct hp_raw *e)
{
	return s->has_pending && e->addr == (s->pending.addr | HP_RAW_EXIT) &&
	       e->tick - s->pending.tick < min_ticks;
}

/*
 * HOOKPROF_MIN: each enter waits for the next event. Its own exit within
 * the minimum drops both (counted); anything else writes it first. One
 * event at a time through encode_all: the writer's time, not the hooks'.
 */
static ssize_t encode_min(struct hp_dict *d, struct hp_enc_stream *s,
			  const struct hp_raw *ev, size_t n, uint8_t *out)
{
	uint8_t *p = out;
	uint64_t written = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].addr == HP_RAW_NOTHING)
			continue;
		if (short_call(s, &ev[i])) {
			s->has_pending = 0;
			s->min_calls++;
			s->min_ticks += ev[i].tick - s->pending.tick;
			continue;
		}
		ssize_t len = hp_encode_flush(d, s, p);
		if (len < 0)
			return -1;
		p += len;
		written += s->written;
		if (!(ev[i].addr & (HP_RAW_EXIT | HP_RAW_CONTROL))) {
			s->pending = ev[i];
			s->has_pending = 1;
			continue;
		}
		if ((len = encode_all(d, s, &ev[i], 1, p)) < 0)
			return -1;
		p += len;
		written += s->written;
	}
	s->written = written;
	return p - out;
}

ssize_t hp_encode(struct hp_dict *d, struct hp_enc_stream *s,
		  const struct hp_raw *ev, size_t n, uint8_t *out)
{
	if (min_ticks || s->has_pending)
		return encode_min(d, s, ev, n, out);
	return encode_all(d, s, ev, n, out);
}

size_t hp_encode_reset(struct hp_enc_stream *s, uint8_t *out)
{
	s->depth = 0;
	s->last_tick = 0;
	out[0] = HP_OP_RESET;
	return 1;
}

size_t hp_encode_own(struct hp_enc_stream *s, uint64_t tick, uint8_t *out)
{
	uint8_t *p = out;
	*p++ = HP_OP_OWN;
	p = hp_put_uvarint(p, hp_zigzag((int64_t)(tick - s->last_tick)));
	s->last_tick = tick;
	return (size_t)(p - out);
}
