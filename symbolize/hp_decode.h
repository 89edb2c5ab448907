/*
 * hp_decode.h - the event stream of EVENTS records back into enters and
 * exits. Output is normalised: every exit closes the newest open frame, so
 * frames closed by longjmp or an exception get an exit of their own here.
 */
#ifndef HP_DECODE_H
#define HP_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "hp_opencount.h"

/* The trace's function dictionary: index -> address. */
struct hp_funcs {
	uint64_t *addr;
	uint32_t n, cap;
};

struct hp_dec_stream {
	uint32_t *stack;
	size_t depth, cap;
	uint64_t tick;
	uint64_t orphan_exits; /* exits of frames entered before the stream began */
	/* Open frames per function: a 0x41 exit of a function not on the
	 * stack costs O(1), not a scan of the stack. It counts the frames
	 * stack[0, counted) only: the rest are counted at the next 0x41. */
	struct hp_opencount open;
	size_t counted;
	/* A 0x41 whose frames are still being closed, down to this depth. */
	size_t unwind_to;
	int unwinding;
	/* Regions (format 1.2) closed by a repair: their late ends are no news. */
	uint32_t *repaired;
	size_t nrepaired, repaired_cap;
	/* The low half of a value, until its high half comes. */
	uint32_t value_name, value_lo;
	int value_half;
};

/*
 * Regions are frames: an enter and an exit of func HP_REGION_FUNC | string
 * id, on the same stack as the functions (hp_funcmap gives them function
 * ids of their own, whose address is HP_REGION_ADDR(string id)). The other
 * control events carry no frame; the views skip them, or use them.
 */
enum hp_ev_kind {
	HP_EV_ENTER,
	HP_EV_EXIT,
	HP_EV_RESET,
	HP_EV_PAUSE,  /* the thread paused (hookprof_pause) */
	HP_EV_RESUME,
	HP_EV_STOP,   /* the process stopped recording (hookprof_stop) */
	HP_EV_START,
	HP_EV_MARK,   /* func: the string id of its text */
	HP_EV_VALUE,  /* func: the string id of its name; value */
	HP_EV_REGION_REPAIR, /* func: the region's string id; value: enum hp_region_repair */
	HP_EV_OWN,    /* (1.3) from the thread's previous event to this tick, hookprof ran */
};

enum hp_region_repair {
	HP_REPAIR_NO_BEGIN = 1,  /* an end without a begin: dropped */
	HP_REPAIR_NOT_ENDED,     /* still open when its function returned: ended there */
	HP_REPAIR_OUT_OF_ORDER,  /* still open inside a region that ended: ended there */
	HP_REPAIR_NEVER_ENDED,   /* open at the stream's end (hp_analyze finds those) */
};

#define HP_REGION_FUNC 0x80000000u
#define HP_REGION_ADDR_BIT (1ull << 62)
#define HP_REGION_ADDR(id) (HP_REGION_ADDR_BIT | (uint64_t)(id))
static inline int hp_is_region_func(uint32_t func) { return func >= HP_REGION_FUNC; }
static inline int hp_is_region_addr(uint64_t addr) { return (addr & HP_REGION_ADDR_BIT) != 0; }

struct hp_ev {
	uint64_t tick;
	uint32_t func;
	uint32_t kind;
	int64_t value; /* HP_EV_VALUE, HP_EV_REGION_REPAIR */
};

struct hp_evbuf {
	struct hp_ev *ev;
	size_t n, cap;
	/* Some event names a region: its enter, exit or repair. 0: every
	 * enter and exit is a function's, and no repair needs telling. */
	int regions;
	/* Of the n: hookprof's own time (HP_EV_OWN), and the events that are
	 * neither that nor enters and exits (gaps, pauses, marks, repairs...). */
	size_t own, controls;
};

/* Decodes one record's encoded bytes, replacing out's contents. Returns the
 * number of events the writer recorded in them, or -1 with a reason in err. */
long hp_decode(struct hp_funcs *f, struct hp_dec_stream *s, const uint8_t *p, size_t len,
	       struct hp_evbuf *out, char *err, size_t errlen);

/* Where the decoding of one record stands, for decoding it in pieces. */
struct hp_dec_record {
	const uint8_t *start, *p, *end;
};

/* Events per piece: what one record costs the reader, however many events
 * it holds (a 0x41 can close any number of frames). */
#define HP_DECODE_PIECE 65536u

static inline struct hp_dec_record hp_dec_record_of(const uint8_t *p, size_t len)
{
	return (struct hp_dec_record){ p, p, p + len };
}

/* Decodes the next events of rec, at most max, replacing out's contents;
 * the rest waits for the next call. Returns the events the writer recorded
 * in the bytes consumed, or -1 with a reason in err. */
long hp_decode_piece(struct hp_funcs *f, struct hp_dec_stream *s, struct hp_dec_record *rec,
		     size_t max, struct hp_evbuf *out, char *err, size_t errlen);
/* Nothing of rec is left to decode. */
static inline int hp_decode_done(const struct hp_dec_stream *s, const struct hp_dec_record *rec)
{
	return rec->p == rec->end && !s->unwinding;
}

/* Only when the events of len bytes happened: *tick is the stream's current
 * tick (0 at its start), carried from record to record; *first and *last
 * become the smallest and largest tick of an event if beyond them. The number of events, or -1 if the
 * bytes are not an event stream. Much faster than decoding: for a reader
 * that needs when a stream ended, not what it did. */
long hp_decode_ticks(const uint8_t *p, size_t len, uint64_t *tick, uint64_t *first, uint64_t *last);

void hp_funcs_free(struct hp_funcs *f);
void hp_dec_stream_free(struct hp_dec_stream *s);
void hp_evbuf_free(struct hp_evbuf *b);

#endif
