/*
 * hp_encode.h - turns raw per-thread events into the compact event stream of
 * docs/format.md. Runs on the writer side only, never on the per-event path.
 */
#ifndef HP_ENCODE_H
#define HP_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hp_platform.h"

/* What a hook stores: 16 bytes, the same as the floor hook. */
struct hp_raw {
	uint64_t addr; /* function address; HP_RAW_EXIT set on exit */
	uint64_t tick;
};
#define HP_RAW_EXIT (1ull << 63)

/*
 * A call of the control API (hookprof.h) rides in the same stream, in
 * order with the function events: bit 62 set (no function lies that high),
 * the kind in bits 56..61, a payload below: a string id, or for a value
 * the string id << 32 and 32 bits of the value (two events, low half
 * first). The kinds are in the order of their ops: op = HP_OP_RESET + kind.
 */
#define HP_RAW_CONTROL (1ull << 62)
enum hp_raw_kind {
	HP_RAW_PAUSE = 1,
	HP_RAW_RESUME,
	HP_RAW_STOP,
	HP_RAW_START,
	HP_RAW_REGION_BEGIN,
	HP_RAW_REGION_END,
	HP_RAW_MARK,
	HP_RAW_VALUE_LO,
	HP_RAW_VALUE_HI,
	HP_RAW_KINDS
};
/* A slot that holds no event: a filtered event's, which could not be
 * given back (hp_filter.h). The encoder skips it. */
#define HP_RAW_NOTHING HP_RAW_CONTROL
#define HP_RAW_PAYLOAD_MASK ((1ull << 56) - 1)

static inline uint64_t hp_raw_control(unsigned kind, uint64_t payload)
{
	return HP_RAW_CONTROL | (uint64_t)kind << 56 | (payload & HP_RAW_PAYLOAD_MASK);
}

static inline unsigned hp_raw_kind(uint64_t raw) { return (unsigned)(raw >> 56) & 0x3f; }

/* Function address -> dense index, shared by all streams of a trace. */
struct hp_dict {
	uint64_t *slot_addr; /* open addressing; 0 marks an empty slot */
	uint32_t *slot_index;
	uint32_t mask;
	uint32_t count;
	struct hp_enter_op *recent; /* in front of the table (hp_encode.c) */
};

/* One stream's view: what the reader will have seen so far. */
struct hp_enc_stream {
	/* frames[1..depth]: the open frames, outermost first, each as its
	 * exit's raw word (address | HP_RAW_EXIT); frames[0] is 0, no exit's,
	 * so that the top is frames[depth] always */
	uint64_t *frames;
	size_t depth;
	size_t cap;
	uint64_t last_tick;
	uint64_t written; /* events the last hp_encode or hp_encode_flush wrote */
	/* A slot whose tick is below this one is not filled yet (an earlier
	 * lap's, hp_buffer.h: hp_chunk_meta): hp_encode stops before it, and
	 * says where in taken (else n). 0: every slot is filled. */
	uint64_t stale_below;
	size_t taken;
	int mixed; /* the last chunk had many long deltas (hp_encode.c) */
	/* HOOKPROF_MIN: an enter is held back until the next event says
	 * whether it was a call shorter than the minimum with no callee. */
	struct hp_raw pending;
	int has_pending;
	uint64_t min_calls; /* calls dropped by the minimum, and their ticks */
	uint64_t min_ticks;
};

/* Address of open frame i of s (0: the outermost), i < s->depth. */
static inline uint64_t hp_enc_open_frame(const struct hp_enc_stream *s, size_t i)
{
	return s->frames[i + 1] & ~HP_RAW_EXIT;
}

int hp_dict_init(struct hp_dict *d) HP_HIDDEN;
void hp_dict_free(struct hp_dict *d) HP_HIDDEN;
void hp_enc_stream_free(struct hp_enc_stream *s) HP_HIDDEN;

/* Output space hp_encode may need for n events; for n + 1 with
 * HOOKPROF_MIN (the enter held back from before comes out too). It may
 * write up to 7 bytes past the ones it returns (one 8-byte store for an
 * event of 1 to 6 bytes), within the bound: no event takes more than 26
 * of its 32. */
static inline size_t hp_encode_bound(size_t n) { return 1 + n * 32; }
/* And for the one mark of hookprof's own time a chunk may hold. */
#define HP_ENCODE_OWN_BOUND 11

/*
 * Appends the encoding of ev[0..n) to out, which has hp_encode_bound(n)
 * bytes. Returns the bytes written, or -1 if memory for the dictionary or
 * the stack ran out.
 */
ssize_t hp_encode(struct hp_dict *d, struct hp_enc_stream *s,
		  const struct hp_raw *ev, size_t n, uint8_t *out) HP_HIDDEN;

/* HOOKPROF_MIN in ticks, for every stream (0: off). */
void hp_encode_set_min(uint64_t ticks) HP_HIDDEN;

/* Appends the enter held back, if any (before a gap, at the stream's end),
 * to out, which has HP_EVENT_MAX_BYTES; bytes written, or -1 (memory). */
ssize_t hp_encode_flush(struct hp_dict *d, struct hp_enc_stream *s, uint8_t *out) HP_HIDDEN;

/* Appends a reset: the stream continues after a gap. Returns bytes written. */
size_t hp_encode_reset(struct hp_enc_stream *s, uint8_t *out) HP_HIDDEN;
/* hookprof's own time: from the stream's last event to tick (op 0x4e, no
 * event). Writes at most HP_ENCODE_OWN_BOUND bytes. */
size_t hp_encode_own(struct hp_enc_stream *s, uint64_t tick, uint8_t *out) HP_HIDDEN;

#endif
