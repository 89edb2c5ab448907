/*
 * hp_decode.h - the event stream of EVENTS records back into enters and
 * exits. Output is normalised: every exit closes the newest open frame, so
 * frames closed by longjmp or an exception get an exit of their own here.
 */
#ifndef HP_DECODE_H
#define HP_DECODE_H

#include <stddef.h>
#include <stdint.h>

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
};

enum hp_ev_kind { HP_EV_ENTER, HP_EV_EXIT, HP_EV_RESET };

struct hp_ev {
	uint64_t tick;
	uint32_t func;
	uint32_t kind;
};

struct hp_evbuf {
	struct hp_ev *ev;
	size_t n, cap;
};

/* Decodes one record's encoded bytes, replacing out's contents. Returns the
 * number of events the writer recorded in them, or -1 with a reason in err. */
long hp_decode(struct hp_funcs *f, struct hp_dec_stream *s, const uint8_t *p, size_t len,
	       struct hp_evbuf *out, char *err, size_t errlen);

void hp_funcs_free(struct hp_funcs *f);
void hp_dec_stream_free(struct hp_dec_stream *s);
void hp_evbuf_free(struct hp_evbuf *b);

#endif
