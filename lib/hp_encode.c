/*
 * hp_encode.c - the event stream encoder.
 *
 * The common event takes the fast path: an exit of the top frame (one
 * compare with the top's exit word) with a tick delta under FAST_DELTA / 2,
 * or an enter of the function entered just before or of one in the recent
 * table (below) with a delta under FAST_DELTA; a branch on the delta's
 * length, or none (encode_run's two ways). Its op and varint are written
 * by one 8-byte store (the
 * output's bound leaves room), the output pointer then moving by their
 * length. Everything else (new functions, exits of other frames, control
 * events, long or negative deltas) goes out of line (encode_slow). The
 * bytes are the same either way: tests/check_encode.c compares them with
 * a plain encoder's.
 */
#include "hp_encode.h"

#include "hp_format.h"

#define DICT_INITIAL_SLOTS 4096u
/* A chunk's events can open as many frames (reserve_frames). */
#define FRAMES_INITIAL 8192u

/*
 * The recent table: address -> that function's enter op (00iiiiii, or
 * 00111111 and the index's varint), so an enter needs one load and one
 * compare, not the dictionary's probe and the op's branches. Two ways a
 * set, the newest first, both in one cache line: with one way, 300 hot
 * functions (encode_bench's "wide" stream) took turns in shared slots
 * through the slow path (4.5 ns per event; 3.3 with two ways of 512 sets,
 * 5-6 with two ways of 256: the second way's hits mispredicted). 16 KiB,
 * of which only the hot functions' lines are read.
 */
#define RECENT_SET_BITS 9
#define RECENT_SLOTS (2u << RECENT_SET_BITS)
/* Indices whose op fits 4 bytes: 63 and a varint of up to 3 bytes. */
#define RECENT_INDEX_LIMIT (1u << 21)

struct hp_enter_op {
	uint64_t addr; /* HP_RAW_EXIT (no function's) when empty */
	uint32_t bytes; /* the op, little-endian */
	uint32_t bits;  /* its length in bits */
};

/* Deltas the fast path writes: a varint of at most 2 bytes. */
#define FAST_DELTA (1u << 14)

static uint32_t slot_of(uint64_t addr, uint32_t mask)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

/* The first of the two ways of addr's set. */
static uint32_t recent_set(uint64_t addr)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> (64 - RECENT_SET_BITS)) * 2;
}

/* addr's enter op, or NULL when the table does not hold it. */
static inline const struct hp_enter_op *recent_find(const struct hp_enter_op *recent, uint64_t addr)
{
	const struct hp_enter_op *r = &recent[recent_set(addr)];
	if (likely(r[0].addr == addr))
		return &r[0];
	return r[1].addr == addr ? &r[1] : NULL;
}

int hp_dict_init(struct hp_dict *d)
{
	*d = (struct hp_dict){ 0 };
	d->slot_addr = hp_pages_alloc(DICT_INITIAL_SLOTS * sizeof(uint64_t));
	d->slot_index = hp_pages_alloc(DICT_INITIAL_SLOTS * sizeof(uint32_t));
	d->recent = hp_pages_alloc(RECENT_SLOTS * sizeof(struct hp_enter_op));
	if (!d->slot_addr || !d->slot_index || !d->recent) {
		hp_dict_free(d);
		return -1;
	}
	d->mask = DICT_INITIAL_SLOTS - 1;
	for (uint32_t i = 0; i < RECENT_SLOTS; i++)
		d->recent[i].addr = HP_RAW_EXIT;
	return 0;
}

void hp_dict_free(struct hp_dict *d)
{
	hp_pages_free(d->slot_addr, (size_t)(d->mask + 1) * sizeof(uint64_t));
	hp_pages_free(d->slot_index, (size_t)(d->mask + 1) * sizeof(uint32_t));
	hp_pages_free(d->recent, RECENT_SLOTS * sizeof(struct hp_enter_op));
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

/* Doubles the table: its load stays under 1/2. */
static int dict_grow(struct hp_dict *d)
{
	struct hp_dict old = *d;
	uint32_t slots = (d->mask + 1) * 2;
	d->slot_addr = hp_pages_alloc((size_t)slots * sizeof(uint64_t));
	d->slot_index = hp_pages_alloc((size_t)slots * sizeof(uint32_t));
	if (!d->slot_addr || !d->slot_index) {
		hp_pages_free(d->slot_addr, (size_t)slots * sizeof(uint64_t));
		hp_pages_free(d->slot_index, (size_t)slots * sizeof(uint32_t));
		d->slot_addr = old.slot_addr;
		d->slot_index = old.slot_index;
		return -1;
	}
	d->mask = slots - 1;
	for (uint32_t i = 0; i <= old.mask; i++)
		if (old.slot_addr[i])
			dict_place_key(d, old.slot_addr[i], old.slot_index[i]);
	hp_pages_free(old.slot_addr, (size_t)(old.mask + 1) * sizeof(uint64_t));
	hp_pages_free(old.slot_index, (size_t)(old.mask + 1) * sizeof(uint32_t));
	return 0;
}

/* Index of addr; a new address gets the next index and a DEFINE op
 * appended at *out. */
static int64_t dict_index(struct hp_dict *d, uint64_t addr, uint8_t **out)
{
	uint64_t key = slot_key(addr);
	for (uint32_t i = slot_of(key, d->mask);; i = (i + 1) & d->mask) {
		if (d->slot_addr[i] == key)
			return d->slot_index[i];
		if (!d->slot_addr[i])
			break;
	}
	if (2 * (d->count + 1) > d->mask + 1 && dict_grow(d) < 0)
		return -1;
	uint32_t index = d->count++;
	dict_place_key(d, key, index);
	uint8_t *p = *out;
	*p++ = HP_OP_DEFINE;
	*out = hp_put_uvarint(p, addr);
	return index;
}

/* The short form of an enter's op (a delta that is not negative). */
static uint8_t *put_enter_op(uint8_t *p, uint32_t index)
{
	if (index < HP_OP_ENTER_SHORT_MAX) {
		*p++ = (uint8_t)index;
		return p;
	}
	*p++ = HP_OP_ENTER_SHORT_MAX;
	return hp_put_uvarint(p, index);
}

static void remember_enter(struct hp_dict *d, uint64_t addr, uint32_t index)
{
	if (index >= RECENT_INDEX_LIMIT)
		return;
	uint8_t op[8] = { 0 };
	struct hp_enter_op *r = &d->recent[recent_set(addr)];
	r[1] = r[0]; /* the older way goes */
	r->addr = addr;
	r->bits = (uint32_t)(put_enter_op(op, index) - op) * 8;
	r->bytes = hp_rd32(op);
}

/* Room for frames[0..depth + n]: n events open n frames at most, and
 * the fast path then needs no test. */
static int reserve_frames(struct hp_enc_stream *s, size_t n)
{
	size_t need = s->depth + n + 1;
	if (likely(need <= s->cap))
		return 0;
	size_t cap = s->cap ? s->cap : FRAMES_INITIAL;
	while (cap < need)
		cap *= 2;
	uint64_t *frames = hp_pages_grow(s->frames, s->cap * sizeof(uint64_t), cap * sizeof(uint64_t));
	if (!frames)
		return -1;
	frames[0] = 0; /* no exit's raw word: no frame is the top */
	s->frames = frames;
	s->cap = cap;
	return 0;
}

void hp_enc_stream_free(struct hp_enc_stream *s)
{
	hp_pages_free(s->frames, s->cap * sizeof(uint64_t));
	*s = (struct hp_enc_stream){ 0 };
}

static uint8_t *put_enter(uint8_t *p, uint32_t index, uint64_t delta)
{
	if ((int64_t)delta < 0) {
		*p++ = HP_OP_ENTER_LONG;
		p = hp_put_uvarint(p, index);
		return hp_put_uvarint(p, hp_zigzag((int64_t)delta));
	}
	return hp_put_uvarint(put_enter_op(p, index), delta);
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

/* Exit of a frame other than the top: the rule of hp_stack_unwind_to,
 * on addresses (one index per address); frames[0] is the sentinel. */
static uint8_t *encode_exit_other(struct hp_dict *d, struct hp_enc_stream *s, uint64_t addr,
				  uint64_t delta, uint8_t *p)
{
	int64_t index = dict_index(d, addr, &p);
	if (index < 0)
		return NULL;
	s->depth = hp_stack_unwind_to_addr(s->frames + 1, s->depth, addr | HP_RAW_EXIT);
	return put_exit_fn(p, (uint32_t)index, delta);
}

/* Any event, as the format says, but for the fast path's: the stream's
 * depth and last tick in *s. Returns the output's end, or NULL if memory
 * for the dictionary ran out. */
static __attribute__((noinline)) uint8_t *encode_slow(struct hp_dict *d, struct hp_enc_stream *s,
						      uint64_t raw, uint64_t tick, uint8_t *p)
{
	uint64_t delta = tick - s->last_tick, addr = raw & ~HP_RAW_EXIT;
	if (raw == HP_RAW_NOTHING) {
		s->written--; /* as if it were not there */
		return p;
	}
	s->last_tick = tick;
	if (raw & HP_RAW_EXIT) {
		if (raw != s->frames[s->depth])
			return encode_exit_other(d, s, addr, delta, p);
		s->depth--;
		return put_exit_top(p, delta);
	}
	if (raw & HP_RAW_CONTROL)
		return put_control(p, raw, delta);
	int64_t index = dict_index(d, addr, &p);
	if (index < 0)
		return NULL;
	remember_enter(d, addr, (uint32_t)index);
	s->frames[++s->depth] = raw | HP_RAW_EXIT;
	return put_enter(p, (uint32_t)index, delta);
}

/* ev[i] of n is a slot not filled yet (hp_enc_stream, stale_below): the
 * call ends before it. */
static void stop_at(struct hp_enc_stream *s, size_t i, size_t n)
{
	s->taken = i;
	s->written -= n - i;
}

/* The tick first, acquire: a slot filled late (hp_buffer.h, hp_chunk_meta)
 * is read whole once its tick is fresh, for the hook stores it last. */
static inline struct hp_raw read_slot(const struct hp_raw *e)
{
	uint64_t tick = __atomic_load_n(&e->tick, __ATOMIC_ACQUIRE);
	return (struct hp_raw){ .addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED), .tick = tick };
}

/* An exit's long form for a delta in [0x80, FAST_DELTA / 2): 0x40 and the
 * two-byte varint of the zigzagged delta (2 * delta), 3 bytes. */
static inline uint64_t exit_long_word(uint64_t delta)
{
	return HP_OP_EXIT_LONG | 0x8000 | (delta & 0x3f) << 9 | (delta >> 6) << 16;
}

/* The enter's op (bits long) and the delta's varint after it. */
static inline uint64_t enter_word(uint64_t op, uint64_t bits, uint64_t delta, uint64_t *len)
{
	uint64_t more = delta >= 0x80;
	*len = bits / 8 + 1 + more;
	return op | ((delta & 0x7f) | (delta << 1 & 0x7f00) | more << 7) << bits;
}

/*
 * The fast path: an exit of the top frame with a delta under FAST_DELTA /
 * 2 (its long form's zigzag fits two bytes), or an enter of the function
 * entered just before or of a recent one with a delta under FAST_DELTA.
 * The op and the delta's varint are one 8-byte store whatever their
 * lengths. frames[] holds each open frame's exit word (the address |
 * HP_RAW_EXIT), so an exit is compared with the top with no mask and no
 * copy of the top kept in step.
 *
 * Two ways with the delta's length (1 byte under 0x80, or more): when
 * nearly all deltas are short (a call-dense program), a branch, which is
 * then always predicted and costs least; when many are long (mixed), no
 * branch but selects, which cost a few instructions and never a
 * misprediction. Each call takes the way its stream's last call
 * measured (s->mixed).
 *
 * Locals hold the state: every store through the uint8_t output pointer
 * may alias a struct field, so fields would be reloaded per event. They go
 * back to *s around the slow path.
 */
static inline __attribute__((always_inline)) ssize_t
encode_run(struct hp_dict *d, struct hp_enc_stream *s, const struct hp_raw *ev, size_t n,
	   uint8_t *out, const int mixed)
{
	uint8_t *p = out;
	uint64_t last = s->last_tick;
	size_t depth = s->depth, longs = 0;
	uint64_t *frames = s->frames; /* does not move within the call */
	const struct hp_enter_op *recent = d->recent;
	/* the function entered last: its address, op, the op's bits and
	 * bytes + 1 (with a one-byte delta) */
	uint64_t last_addr = HP_RAW_EXIT, last_op = 0, last_bits = 0, last_len = 0;
	for (const struct hp_raw *e = ev, *end = ev + n; e < end; e++) {
		struct hp_raw slot = read_slot(e);
		uint64_t raw = slot.addr, tick = slot.tick;
		uint64_t delta = tick - last, len;
		if ((int64_t)raw < 0) {
			if (unlikely(raw != frames[depth]))
				goto slow;
			if (!mixed && likely(delta < 0x80)) {
				*p++ = (uint8_t)(HP_OP_EXIT_SHORT | delta);
			} else {
				if (unlikely(delta >= FAST_DELTA / 2))
					goto slow;
				uint64_t one = delta < 0x80, mask = -one;
				hp_le64(p, ((HP_OP_EXIT_SHORT | delta) & mask) | (exit_long_word(delta) & ~mask));
				p += 3 - 2 * one;
				longs += 1 - one;
			}
			depth--;
			last = tick;
			continue;
		}
		if (raw != last_addr) {
			const struct hp_enter_op *r = recent_find(recent, raw);
			if (unlikely(!r))
				goto slow;
			last_addr = raw;
			last_op = r->bytes;
			last_bits = r->bits;
			last_len = last_bits / 8 + 1;
		}
		if (!mixed && likely(delta < 0x80)) {
			hp_le64(p, last_op | delta << last_bits);
			p += last_len;
		} else {
			if (unlikely(delta >= FAST_DELTA))
				goto slow;
			hp_le64(p, enter_word(last_op, last_bits, delta, &len));
			p += len;
			longs += delta >= 0x80;
		}
		frames[++depth] = raw | HP_RAW_EXIT;
		last = tick;
		continue;
	slow:
		/* A stale slot's tick is older than the event before it: it
		 * comes here. */
		if (unlikely(tick < s->stale_below)) {
			stop_at(s, (size_t)(e - ev), n);
			break;
		}
		s->depth = depth;
		s->last_tick = last;
		if (!(p = encode_slow(d, s, raw, tick, p)))
			return -1;
		depth = s->depth;
		last = s->last_tick;
	}
	s->depth = depth;
	s->last_tick = last;
	if (n >= 64) /* a chunk, not one event of HOOKPROF_MIN's */
		s->mixed = longs * 8 > n;
	return p - out;
}

/* Each way a function of its own: its own registers. */
static __attribute__((noinline)) ssize_t encode_calm(struct hp_dict *d, struct hp_enc_stream *s,
						     const struct hp_raw *ev, size_t n, uint8_t *out)
{
	return encode_run(d, s, ev, n, out, 0);
}

static __attribute__((noinline)) ssize_t encode_mixed(struct hp_dict *d, struct hp_enc_stream *s,
						      const struct hp_raw *ev, size_t n, uint8_t *out)
{
	return encode_run(d, s, ev, n, out, 1);
}

static ssize_t encode_all(struct hp_dict *d, struct hp_enc_stream *s,
			  const struct hp_raw *ev, size_t n, uint8_t *out)
{
	if (reserve_frames(s, n) < 0)
		return -1;
	s->written = n;
	s->taken = n;
	return s->mixed ? encode_mixed(d, s, ev, n, out) : encode_calm(d, s, ev, n, out);
}

static uint64_t min_ticks;

void hp_encode_set_min(uint64_t ticks) { min_ticks = ticks; }

ssize_t hp_encode_flush(struct hp_dict *d, struct hp_enc_stream *s, uint8_t *out)
{
	s->written = 0;
	if (!s->has_pending)
		return 0;
	s->has_pending = 0;
	/* Judged filled in its own chunk: the bound of the chunk being
	 * encoded now (stale_below) may be above its tick. */
	uint64_t stale_below = s->stale_below;
	s->stale_below = 0;
	ssize_t len = encode_all(d, s, &s->pending, 1, out);
	s->stale_below = stale_below;
	return len;
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
	size_t i;
	for (i = 0; i < n; i++) {
		struct hp_raw e = read_slot(&ev[i]);
		if (e.tick < s->stale_below)
			break;
		if (e.addr == HP_RAW_NOTHING)
			continue;
		if (short_call(s, &e)) {
			s->has_pending = 0;
			s->min_calls++;
			s->min_ticks += e.tick - s->pending.tick;
			continue;
		}
		ssize_t len = hp_encode_flush(d, s, p);
		if (len < 0)
			return -1;
		p += len;
		written += s->written;
		if (!(e.addr & (HP_RAW_EXIT | HP_RAW_CONTROL))) {
			s->pending = e;
			s->has_pending = 1;
			continue;
		}
		if ((len = encode_all(d, s, &e, 1, p)) < 0)
			return -1;
		p += len;
		written += s->written;
	}
	s->written = written;
	s->taken = i;
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
