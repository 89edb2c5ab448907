/*
 * check_encode.c - the event stream: lib's hp_encode against symbolize's
 * hp_decode, with exact byte encodings where the format fixes them
 * (docs/format.md, "The event stream"), and the decoder's rejection of
 * corrupt input.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_encode.h"
#include "hp_format.h"
#include "testkit.h"

#include "../symbolize/hp_decode.h"

#define EN(a, t) { (uint64_t)(a), (uint64_t)(t) }
#define EX(a, t) { (uint64_t)(a) | HP_RAW_EXIT, (uint64_t)(t) }
#define NRAW(ev) (sizeof(ev) / sizeof((ev)[0]))

#define GUARD 64
#define GUARD_BYTE 0xa5

/* One writer (dictionary + one stream) and one reader, shared by a test. */
static struct hp_dict dict;
static struct hp_enc_stream enc;
static struct hp_funcs funcs;
static struct hp_dec_stream dec;
static struct hp_evbuf evb;
static uint8_t *buf;
static char err[256];

static void setup(void)
{
	ck_assert_int_eq(hp_dict_init(&dict), 0);
	memset(&enc, 0, sizeof(enc));
	memset(&funcs, 0, sizeof(funcs));
	memset(&dec, 0, sizeof(dec));
	memset(&evb, 0, sizeof(evb));
	buf = NULL;
	err[0] = 0;
}

static void teardown(void)
{
	hp_dict_free(&dict);
	hp_enc_stream_free(&enc);
	hp_funcs_free(&funcs);
	hp_dec_stream_free(&dec);
	hp_evbuf_free(&evb);
	free(buf);
	buf = NULL;
}

/* Encodes ev into buf (replaced), checks hp_encode_bound and the guard. */
static size_t encode_with(struct hp_enc_stream *s, const struct hp_raw *ev, size_t n)
{
	size_t bound = hp_encode_bound(n);
	free(buf);
	buf = malloc(bound + GUARD);
	ck_assert_ptr_nonnull(buf);
	memset(buf, GUARD_BYTE, bound + GUARD);
	ssize_t len = hp_encode(&dict, s, ev, n, buf);
	ck_assert_int_ge(len, 0);
	ck_assert_uint_le((size_t)len, bound);
	size_t i = bound; /* one check, not one per byte: each check is a write */
	while (i < bound + GUARD && buf[i] == GUARD_BYTE)
		i++;
	ck_assert_msg(i == bound + GUARD, "byte %zu written past the bound %zu", i, bound);
	return (size_t)len;
}

static size_t encode(const struct hp_raw *ev, size_t n)
{
	return encode_with(&enc, ev, n);
}

static void assert_bytes(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	ck_assert_uint_eq(got_len, want_len);
	for (size_t i = 0; i < want_len; i++)
		ck_assert_msg(got[i] == want[i], "byte %zu: got 0x%02x, want 0x%02x", i, got[i],
			      want[i]);
}

static long decode_with(struct hp_dec_stream *s, const uint8_t *p, size_t len)
{
	err[0] = 0;
	long n = hp_decode(&funcs, s, p, len, &evb, err, sizeof(err));
	ck_assert_msg(n >= 0, "decode failed: %s", err);
	return n;
}

static long decode(const uint8_t *p, size_t len)
{
	return decode_with(&dec, p, len);
}

static void assert_ev(size_t i, uint32_t kind, uint64_t addr, uint64_t tick)
{
	ck_assert_uint_lt(i, evb.n);
	const struct hp_ev *e = &evb.ev[i];
	ck_assert_uint_eq(e->kind, kind);
	ck_assert_uint_eq(e->tick, tick);
	if (kind != HP_EV_RESET) {
		ck_assert_uint_lt(e->func, funcs.n);
		ck_assert_uint_eq(funcs.addr[e->func], addr);
	}
}

static long decode_bad(const uint8_t *p, size_t len)
{
	strcpy(err, "untouched");
	return hp_decode(&funcs, &dec, p, len, &evb, err, sizeof(err));
}

/* ---------------------------------------------------------------- core */

START_TEST(test_short_forms_bytes)
{
	static const struct hp_raw ev[] = { EN(0x1000, 5), EX(0x1000, 8) };
	static const uint8_t want[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x83 };
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 2);
	ck_assert_uint_eq(funcs.n, 1);
	ck_assert_uint_eq(funcs.addr[0], 0x1000);
	ck_assert_uint_eq(evb.n, 2);
	assert_ev(0, HP_EV_ENTER, 0x1000, 5);
	assert_ev(1, HP_EV_EXIT, 0x1000, 8);
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(enc.depth, 0);
}
END_TEST

START_TEST(test_nested_bytes)
{
	static const struct hp_raw ev[] = { EN(0x1000, 5), EN(0x2000, 7), EX(0x2000, 10),
					    EX(0x1000, 12) };
	static const uint8_t want[] = { 0x43, 0x80, 0x20, 0x00, 0x05, 0x43, 0x80, 0x40,
					0x01, 0x02, 0x83, 0x82 };
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 4);
	ck_assert_uint_eq(evb.n, 4);
	assert_ev(0, HP_EV_ENTER, 0x1000, 5);
	assert_ev(1, HP_EV_ENTER, 0x2000, 7);
	assert_ev(2, HP_EV_EXIT, 0x2000, 10);
	assert_ev(3, HP_EV_EXIT, 0x1000, 12);
}
END_TEST

START_TEST(test_long_deltas)
{
	/* enter +127 short, enter +128 two-byte varint, exit +127 short,
	 * exit +128 long (0x40, zigzag 256), enter +200, exit +300 */
	static const struct hp_raw ev[] = { EN(0x10, 127), EN(0x20, 255), EX(0x20, 382),
					    EX(0x10, 510), EN(0x10, 710), EX(0x10, 1010) };
	static const uint8_t want[] = {
		0x43, 0x10, 0x00, 0x7f,       /* a, +127 */
		0x43, 0x20, 0x01, 0x80, 0x01, /* b, +128 */
		0xff,                         /* exit b +127 */
		0x40, 0x80, 0x02,             /* exit a +128 */
		0x00, 0xc8, 0x01,             /* a +200 */
		0x40, 0xd8, 0x04,             /* exit a +300 */
	};
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 6);
	assert_ev(0, HP_EV_ENTER, 0x10, 127);
	assert_ev(1, HP_EV_ENTER, 0x20, 255);
	assert_ev(2, HP_EV_EXIT, 0x20, 382);
	assert_ev(3, HP_EV_EXIT, 0x10, 510);
	assert_ev(4, HP_EV_ENTER, 0x10, 710);
	assert_ev(5, HP_EV_EXIT, 0x10, 1010);
}
END_TEST

START_TEST(test_huge_deltas)
{
	const uint64_t big = 1ull << 62;
	const struct hp_raw ev[] = { EN(0x10, big), EX(0x10, big + big / 2), EN(0x10, 3),
				     EX(0x10, UINT64_MAX) };
	size_t len = encode(ev, NRAW(ev));
	ck_assert_int_eq(decode(buf, len), 4);
	assert_ev(0, HP_EV_ENTER, 0x10, big);
	assert_ev(1, HP_EV_EXIT, 0x10, big + big / 2);
	assert_ev(2, HP_EV_ENTER, 0x10, 3);
	assert_ev(3, HP_EV_EXIT, 0x10, UINT64_MAX);
}
END_TEST

START_TEST(test_negative_deltas)
{
	static const struct hp_raw ev[] = { EN(0x1000, 100), EN(0x2000, 90), EX(0x2000, 85),
					    EX(0x1000, 80) };
	static const uint8_t want[] = {
		0x43, 0x80, 0x20, 0x00, 0x64,       /* a @100 */
		0x43, 0x80, 0x40, 0x42, 0x01, 0x13, /* b, -10: 0x42 idx zigzag */
		0x40, 0x09,                         /* exit top, -5 */
		0x40, 0x09,                         /* exit top, -5 */
	};
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 4);
	assert_ev(0, HP_EV_ENTER, 0x1000, 100);
	assert_ev(1, HP_EV_ENTER, 0x2000, 90);
	assert_ev(2, HP_EV_EXIT, 0x2000, 85);
	assert_ev(3, HP_EV_EXIT, 0x1000, 80);
}
END_TEST

START_TEST(test_negative_delta_exit_other)
{
	/* exit of a (not top) going back 60 ticks: 0x41 0 zigzag(-60)=119 */
	static const struct hp_raw ev[] = { EN(0x1000, 100), EN(0x2000, 110), EX(0x1000, 50) };
	size_t len = encode(ev, NRAW(ev));
	static const uint8_t tail[] = { 0x41, 0x00, 0x77 };
	ck_assert_uint_ge(len, 3);
	assert_bytes(buf + len - 3, 3, tail, 3);
	ck_assert_int_eq(decode(buf, len), 3);
	ck_assert_uint_eq(evb.n, 4);
	assert_ev(2, HP_EV_EXIT, 0x2000, 50);
	assert_ev(3, HP_EV_EXIT, 0x1000, 50);
}
END_TEST

/* Defines n functions 0x100000 + 16 i (index i) with one call each. */
static void define_functions(int n, uint64_t *tick)
{
	struct hp_raw *ev = calloc(2 * (size_t)n, sizeof(*ev));
	for (int i = 0; i < n; i++) {
		ev[2 * i] = (struct hp_raw)EN(0x100000 + 16 * (uint64_t)i, ++*tick);
		ev[2 * i + 1] = (struct hp_raw)EX(0x100000 + 16 * (uint64_t)i, ++*tick);
	}
	size_t len = encode(ev, 2 * (size_t)n);
	ck_assert_int_eq(decode(buf, len), 2 * n);
	ck_assert_uint_eq(funcs.n, (uint32_t)n);
	free(ev);
}

START_TEST(test_index_escape)
{
	uint64_t t = 0;
	define_functions(300, &t);
	const struct hp_raw ev[] = {
		EN(0x100000 + 16 * 62, t + 1),  /* short: 3e 01 */
		EN(0x100000 + 16 * 63, t + 2),  /* escape: 3f 3f 01 */
		EN(0x100000 + 16 * 64, t + 3),  /* 3f 40 01 */
		EN(0x100000 + 16 * 200, t + 4), /* 3f c8 01 01 */
		EX(0x100000 + 16 * 200, t + 5), EX(0x100000 + 16 * 64, t + 6),
		EX(0x100000 + 16 * 63, t + 7),  EX(0x100000 + 16 * 62, t + 8),
	};
	static const uint8_t want[] = { 0x3e, 0x01, 0x3f, 0x3f, 0x01, 0x3f, 0x40, 0x01,
					0x3f, 0xc8, 0x01, 0x01, 0x81, 0x81, 0x81, 0x81 };
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 8);
	assert_ev(0, HP_EV_ENTER, 0x100000 + 16 * 62, t + 1);
	assert_ev(1, HP_EV_ENTER, 0x100000 + 16 * 63, t + 2);
	assert_ev(2, HP_EV_ENTER, 0x100000 + 16 * 64, t + 3);
	assert_ev(3, HP_EV_ENTER, 0x100000 + 16 * 200, t + 4);
	assert_ev(4, HP_EV_EXIT, 0x100000 + 16 * 200, t + 5);
	assert_ev(7, HP_EV_EXIT, 0x100000 + 16 * 62, t + 8);
}
END_TEST

START_TEST(test_exit_not_top)
{
	static const struct hp_raw ev[] = { EN(0xa0, 1), EN(0xb0, 2), EN(0xc0, 3), EX(0xa0, 10) };
	size_t len = encode(ev, NRAW(ev));
	static const uint8_t tail[] = { 0x41, 0x00, 0x0e }; /* exit fn 0, +7 */
	assert_bytes(buf + len - 3, 3, tail, 3);
	ck_assert_uint_eq(enc.depth, 0);
	/* 4 events written (3 enters, 1 exit); 6 after normalising */
	ck_assert_int_eq(decode(buf, len), 4);
	ck_assert_uint_eq(evb.n, 6);
	assert_ev(3, HP_EV_EXIT, 0xc0, 10);
	assert_ev(4, HP_EV_EXIT, 0xb0, 10);
	assert_ev(5, HP_EV_EXIT, 0xa0, 10);
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(dec.orphan_exits, 0);
}
END_TEST

START_TEST(test_exit_not_top_newest_frame)
{
	/* a b c b c, exit b: only the newest b and the c above it close */
	static const struct hp_raw ev[] = { EN(0xa0, 1), EN(0xb0, 2), EN(0xc0, 3), EN(0xb0, 4),
					    EN(0xc0, 5), EX(0xb0, 6), EX(0xc0, 7) };
	size_t len = encode(ev, NRAW(ev));
	ck_assert_uint_eq(enc.depth, 2);
	ck_assert_int_eq(decode(buf, len), 7);
	ck_assert_uint_eq(evb.n, 8);
	assert_ev(5, HP_EV_EXIT, 0xc0, 6);
	assert_ev(6, HP_EV_EXIT, 0xb0, 6);
	assert_ev(7, HP_EV_EXIT, 0xc0, 7);
	ck_assert_uint_eq(dec.depth, 2);
	ck_assert_uint_eq(funcs.addr[dec.stack[0]], 0xa0);
	ck_assert_uint_eq(funcs.addr[dec.stack[1]], 0xb0);
}
END_TEST

START_TEST(test_orphan_exit)
{
	static const struct hp_raw ev[] = { EX(0x5000, 40) };
	static const uint8_t want[] = { 0x43, 0x80, 0xa0, 0x01, 0x41, 0x00, 0x50 };
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 1);
	ck_assert_uint_eq(evb.n, 0);
	ck_assert_uint_eq(dec.orphan_exits, 1);
	ck_assert_uint_eq(dec.tick, 40);
}
END_TEST

START_TEST(test_orphan_exit_keeps_stack)
{
	/* a open, exit of x (never entered), exit a, exit a again (orphan) */
	static const struct hp_raw ev[] = { EN(0xa0, 1), EX(0xf0, 2), EX(0xa0, 3), EX(0xa0, 9),
					    EN(0xa0, 10) };
	size_t len = encode(ev, NRAW(ev));
	ck_assert_int_eq(decode(buf, len), 5);
	ck_assert_uint_eq(evb.n, 3);
	assert_ev(0, HP_EV_ENTER, 0xa0, 1);
	assert_ev(1, HP_EV_EXIT, 0xa0, 3);
	assert_ev(2, HP_EV_ENTER, 0xa0, 10);
	ck_assert_uint_eq(dec.orphan_exits, 2);
	ck_assert_uint_eq(dec.depth, 1);
	ck_assert_uint_eq(enc.depth, 1);
}
END_TEST

START_TEST(test_reset)
{
	static const struct hp_raw r1[] = { EN(0xa0, 100), EN(0xb0, 150) };
	static const struct hp_raw r2[] = { EX(0xb0, 1000), EN(0xc0, 1005), EX(0xc0, 1010) };
	uint8_t stream[256];
	size_t n = encode(r1, NRAW(r1));
	memcpy(stream, buf, n);
	uint8_t rb[4] = { 0 };
	ck_assert_uint_eq(hp_encode_reset(&enc, rb), 1);
	ck_assert_uint_eq(rb[0], 0x44);
	ck_assert_uint_eq(enc.depth, 0);
	ck_assert_uint_eq(enc.last_tick, 0);
	stream[n++] = rb[0];
	size_t len2 = encode(r2, NRAW(r2));
	/* b is not open any more: 0x41 1 zigzag(1000); then c from tick 1000 */
	static const uint8_t want2[] = { 0x41, 0x01, 0xd0, 0x0f, 0x43, 0xc0, 0x01, 0x02, 0x05, 0x85 };
	assert_bytes(buf, len2, want2, sizeof(want2));
	memcpy(stream + n, buf, len2);
	n += len2;
	ck_assert_int_eq(decode(stream, n), 5);
	ck_assert_uint_eq(evb.n, 5);
	assert_ev(0, HP_EV_ENTER, 0xa0, 100);
	assert_ev(1, HP_EV_ENTER, 0xb0, 150);
	assert_ev(2, HP_EV_RESET, 0, 0);
	assert_ev(3, HP_EV_ENTER, 0xc0, 1005);
	assert_ev(4, HP_EV_EXIT, 0xc0, 1010);
	ck_assert_uint_eq(dec.orphan_exits, 1);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_state_across_records)
{
	static const struct hp_raw r1[] = { EN(0xa0, 10), EN(0xb0, 20) };
	static const struct hp_raw r2[] = { EX(0xb0, 25), EX(0xa0, 40) };
	size_t len = encode(r1, NRAW(r1));
	ck_assert_int_eq(decode(buf, len), 2);
	len = encode(r2, NRAW(r2));
	static const uint8_t want[] = { 0x85, 0x8f };
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_int_eq(decode(buf, len), 2);
	ck_assert_uint_eq(evb.n, 2);
	assert_ev(0, HP_EV_EXIT, 0xb0, 25);
	assert_ev(1, HP_EV_EXIT, 0xa0, 40);
}
END_TEST

START_TEST(test_two_streams_one_dictionary)
{
	struct hp_enc_stream enc_b = { 0 };
	struct hp_dec_stream dec_b = { 0 };
	static const struct hp_raw a1[] = { EN(0xa0, 10), EX(0xa0, 20) };
	static const struct hp_raw b1[] = { EN(0xa0, 1000), EN(0xb0, 1001), EX(0xb0, 1002),
					    EX(0xa0, 1003) };
	static const struct hp_raw a2[] = { EN(0xb0, 30), EX(0xb0, 31) };
	static const uint8_t want_a1[] = { 0x43, 0xa0, 0x01, 0x00, 0x0a, 0x8a };
	static const uint8_t want_b1[] = { 0x00, 0xe8, 0x07, 0x43, 0xb0, 0x01, 0x01, 0x01, 0x81, 0x81 };
	static const uint8_t want_a2[] = { 0x01, 0x0a, 0x81 };

	size_t len = encode_with(&enc, a1, NRAW(a1));
	assert_bytes(buf, len, want_a1, sizeof(want_a1));
	ck_assert_int_eq(decode_with(&dec, buf, len), 2);

	len = encode_with(&enc_b, b1, NRAW(b1));
	assert_bytes(buf, len, want_b1, sizeof(want_b1));
	ck_assert_int_eq(decode_with(&dec_b, buf, len), 4);
	assert_ev(0, HP_EV_ENTER, 0xa0, 1000);
	assert_ev(1, HP_EV_ENTER, 0xb0, 1001);
	assert_ev(3, HP_EV_EXIT, 0xa0, 1003);

	len = encode_with(&enc, a2, NRAW(a2));
	assert_bytes(buf, len, want_a2, sizeof(want_a2));
	ck_assert_int_eq(decode_with(&dec, buf, len), 2);
	assert_ev(0, HP_EV_ENTER, 0xb0, 30);
	assert_ev(1, HP_EV_EXIT, 0xb0, 31);
	ck_assert_uint_eq(funcs.n, 2);
	hp_enc_stream_free(&enc_b);
	hp_dec_stream_free(&dec_b);
}
END_TEST

START_TEST(test_count_equals_raw_events)
{
	/* Mixed forms: recursion, unwinding, orphans; returned count is n. */
	static const struct hp_raw ev[] = { EN(0xa0, 1),   EN(0xa0, 2),   EN(0xa0, 3),
					    EN(0xb0, 4),   EN(0xc0, 5),   EX(0xa0, 6),
					    EX(0xd0, 7),   EX(0xa0, 8),   EX(0xa0, 9),
					    EX(0xa0, 10),  EN(0xb0, 2000), EX(0xb0, 1) };
	size_t len = encode(ev, NRAW(ev));
	ck_assert_int_eq(decode(buf, len), (long)NRAW(ev));
	/* enters 6, exits: c b a (unwind) + a + a + b = 6, orphans: d and the
	 * last exit of a */
	ck_assert_uint_eq(evb.n, 12);
	ck_assert_uint_eq(dec.orphan_exits, 2);
	ck_assert_uint_eq(dec.depth, 0);
	assert_ev(11, HP_EV_EXIT, 0xb0, 1);
}
END_TEST

START_TEST(test_corrupt_inputs)
{
	/* define a function so that index 0 exists */
	static const uint8_t def[] = { 0x43, 0x10 };
	ck_assert_int_eq(decode(def, sizeof(def)), 0);
	ck_assert_uint_eq(funcs.n, 1);

	static const uint8_t trunc_define[] = { 0x43, 0x80 };
	ck_assert_int_eq(decode_bad(trunc_define, sizeof(trunc_define)), -1);
	ck_assert_ptr_nonnull(strstr(err, "corrupt event data"));
	ck_assert_ptr_nonnull(strstr(err, "truncated"));

	static const uint8_t trunc_enter[] = { 0x00, 0x85 };
	ck_assert_int_eq(decode_bad(trunc_enter, sizeof(trunc_enter)), -1);
	ck_assert_ptr_nonnull(strstr(err, "truncated enter"));

	static const uint8_t trunc_enter_nodelta[] = { 0x00 };
	ck_assert_int_eq(decode_bad(trunc_enter_nodelta, 1), -1);
	ck_assert_ptr_nonnull(strstr(err, "truncated enter"));

	static const uint8_t undefined[] = { 0x05, 0x01 };
	ck_assert_int_eq(decode_bad(undefined, sizeof(undefined)), -1);
	ck_assert_ptr_nonnull(strstr(err, "undefined function"));

	static const uint8_t undefined_escaped[] = { 0x3f, 0xe8, 0x07, 0x01 };
	ck_assert_int_eq(decode_bad(undefined_escaped, sizeof(undefined_escaped)), -1);
	ck_assert_ptr_nonnull(strstr(err, "undefined function"));

	static const uint8_t undefined_exit[] = { 0x41, 0x07, 0x00 };
	ck_assert_int_eq(decode_bad(undefined_exit, sizeof(undefined_exit)), -1);
	ck_assert_ptr_nonnull(strstr(err, "undefined function"));

	static const uint8_t empty_exit[] = { 0x83 };
	ck_assert_int_eq(decode_bad(empty_exit, 1), -1);
	ck_assert_str_eq(err, "corrupt event data (exit with no open frame at byte 0 of a record)");

	static const uint8_t empty_exit_long[] = { 0x40, 0x02 };
	ck_assert_int_eq(decode_bad(empty_exit_long, 2), -1);
	ck_assert_ptr_nonnull(strstr(err, "exit with no open frame"));

	static const uint8_t unknown[] = { 0x4f };
	ck_assert_int_eq(decode_bad(unknown, 1), -1);
	ck_assert_str_eq(err, "corrupt event data (unknown event code at byte 0 of a record)");
}
END_TEST

/* Format 1.2: the control API's words, one op each, in order with the
 * function events, none of them a frame for the encoder's stack. */
#define CTL(kind, payload, t) { HP_RAW_CONTROL | (uint64_t)(kind) << 56 | (payload), (uint64_t)(t) }

START_TEST(test_control_bytes)
{
	static const struct hp_raw ev[] = {
		EN(0x1000, 10),
		CTL(HP_RAW_PAUSE, 0, 12),
		CTL(HP_RAW_RESUME, 0, 20),
		CTL(HP_RAW_REGION_BEGIN, 3, 21),
		CTL(HP_RAW_MARK, 200, 22),
		CTL(HP_RAW_VALUE_LO, (5ull << 32) | 0xfffffff9u, 23),
		CTL(HP_RAW_VALUE_HI, (5ull << 32) | 0xffffffffu, 23),
		CTL(HP_RAW_REGION_END, 3, 25),
		CTL(HP_RAW_STOP, 0, 24), /* a stop is recorded at its moment: earlier */
		CTL(HP_RAW_START, 0, 30),
		EX(0x1000, 31),
	};
	static const uint8_t want[] = {
		0x43, 0x80, 0x20, 0x00, 0x0a, /* define 0 = 0x1000, enter 0 @10 */
		0x45, 0x04,                   /* pause +2 */
		0x46, 0x10,                   /* resume +8 */
		0x49, 0x03, 0x02,             /* region begin 3, +1 */
		0x4b, 0xc8, 0x01, 0x02,       /* mark 200, +1 */
		0x4c, 0x05, 0x02, 0xf9, 0xff, 0xff, 0xff, 0x0f, /* value 5 low half, +1 */
		0x4d, 0x05, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, /* high half, +0 */
		0x4a, 0x03, 0x04,             /* region end 3, +2 */
		0x47, 0x01,                   /* stop, -1 */
		0x48, 0x0c,                   /* start +6 */
		0x81,                         /* the top function's exit is still 1 byte */
	};
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_uint_eq(enc.depth, 0);
}
END_TEST

START_TEST(test_control_round_trip)
{
	static const struct hp_raw ev[] = {
		EN(0x1000, 10),
		CTL(HP_RAW_PAUSE, 0, 12),
		CTL(HP_RAW_RESUME, 0, 20),
		CTL(HP_RAW_REGION_BEGIN, 3, 21),
		CTL(HP_RAW_MARK, 200, 22),
		CTL(HP_RAW_VALUE_LO, (5ull << 32) | 0xfffffff9u, 23),
		CTL(HP_RAW_VALUE_HI, (5ull << 32) | 0xffffffffu, 23),
		CTL(HP_RAW_REGION_END, 3, 25),
		CTL(HP_RAW_STOP, 0, 24),
		CTL(HP_RAW_START, 0, 30),
		EX(0x1000, 31),
	};
	size_t len = encode(ev, NRAW(ev));
	/* every raw event counts, as the EVENTS record's count says */
	ck_assert_int_eq(decode(buf, len), NRAW(ev));
	static const struct { uint32_t kind, func; uint64_t tick; int64_t value; } want[] = {
		{ HP_EV_ENTER, 0, 10, 0 },
		{ HP_EV_PAUSE, 0, 12, 0 },
		{ HP_EV_RESUME, 0, 20, 0 },
		{ HP_EV_ENTER, HP_REGION_FUNC | 3, 21, 0 },
		{ HP_EV_MARK, 200, 22, 0 },
		{ HP_EV_VALUE, 5, 23, -7 },
		{ HP_EV_EXIT, HP_REGION_FUNC | 3, 25, 0 },
		{ HP_EV_STOP, 0, 24, 0 },
		{ HP_EV_START, 0, 30, 0 },
		{ HP_EV_EXIT, 0, 31, 0 },
	};
	ck_assert_uint_eq(evb.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < evb.n; i++)
		ck_assert_msg(evb.ev[i].kind == want[i].kind && evb.ev[i].func == want[i].func &&
				      evb.ev[i].tick == want[i].tick && evb.ev[i].value == want[i].value,
			      "event %zu: kind %u func %#x tick %llu value %lld", i, evb.ev[i].kind,
			      evb.ev[i].func, (unsigned long long)evb.ev[i].tick,
			      (long long)evb.ev[i].value);
}
END_TEST

START_TEST(test_control_extreme_values)
{
	static const int64_t values[] = { INT64_MIN, INT64_MAX, 0, -1, 1ll << 32, (1ll << 32) - 1 };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint64_t v = (uint64_t)values[i], tag = (uint64_t)(HP_STRINGS_MAX - 1) << 32;
		struct hp_raw ev[] = { CTL(HP_RAW_VALUE_LO, tag | (v & 0xffffffffu), 1),
				       CTL(HP_RAW_VALUE_HI, tag | (v >> 32), 2) };
		size_t len = encode(ev, 2);
		ck_assert_uint_le(len, hp_encode_bound(2));
		ck_assert_int_eq(decode(buf, len), 2);
		ck_assert_uint_eq(evb.n, 1);
		ck_assert_int_eq(evb.ev[0].value, values[i]);
		ck_assert_uint_eq(evb.ev[0].func, HP_STRINGS_MAX - 1);
	}
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_every_unknown_op)
{
	for (unsigned op = HP_OP_OWN + 1; op < 0x80; op++) {
		uint8_t b[3] = { (uint8_t)op, 0x01, 0x01 };
		ck_assert_msg(decode_bad(b, sizeof(b)) == -1, "op 0x%02x accepted", op);
		ck_assert_ptr_nonnull(strstr(err, "unknown event code"));
	}
}
END_TEST

START_TEST(test_overlong_varint)
{
	uint8_t b[13] = { 0x43 };
	memset(b + 1, 0x80, 11);
	b[12] = 0x01;
	ck_assert_int_eq(decode_bad(b, sizeof(b)), -1);
	ck_assert_ptr_nonnull(strstr(err, "truncated function definition"));
	ck_assert_uint_eq(funcs.n, 0);
	/* ten bytes are allowed */
	uint8_t ok[11] = { 0x43 };
	memset(ok + 1, 0xff, 8);
	ok[9] = 0xff;
	ok[10] = 0x00;
	ck_assert_int_eq(decode(ok, sizeof(ok)), 0);
	ck_assert_uint_eq(funcs.n, 1);
}
END_TEST

START_TEST(test_empty_input)
{
	ck_assert_int_eq(decode(NULL, 0), 0);
	ck_assert_uint_eq(evb.n, 0);
	ck_assert_uint_eq(hp_encode_bound(0), 1);
	ck_assert_uint_eq(encode(NULL, 0), 0);
}
END_TEST

START_TEST(test_bound_worst_enters)
{
	/* every event a new function at a 9-byte address (the highest a function
	 * can have: bit 62 marks a control word), tick swinging by 2^62 and back:
	 * DEFINE + 0x42 with a large index and a 10-byte svarint */
	enum { N = 6000 };
	struct hp_raw *ev = calloc(N, sizeof(*ev));
	for (size_t i = 0; i < N; i++) {
		ev[i].addr = ((1ull << 62) - 1) - i * 16;
		ev[i].tick = (i & 1) ? 0 : UINT64_MAX >> 1;
	}
	size_t len = encode(ev, N);
	ck_assert_uint_eq(dict.count, N);
	ck_assert_int_eq(decode(buf, len), N);
	ck_assert_uint_eq(evb.n, N);
	for (size_t i = 0; i < N; i++) {
		ck_assert_uint_eq(evb.ev[i].kind, HP_EV_ENTER);
		ck_assert_uint_eq(evb.ev[i].tick, ev[i].tick);
		ck_assert_uint_eq(funcs.addr[evb.ev[i].func], ev[i].addr);
	}
	free(ev);
}
END_TEST

START_TEST(test_bound_worst_exits)
{
	/* every event an exit of a never-seen function: DEFINE + 0x41 */
	enum { N = 6000 };
	struct hp_raw *ev = calloc(N, sizeof(*ev));
	for (size_t i = 0; i < N; i++) {
		ev[i].addr = (((1ull << 63) - 1) - i * 16) | HP_RAW_EXIT;
		ev[i].tick = (i & 1) ? 0 : UINT64_MAX >> 1;
	}
	size_t len = encode(ev, N);
	ck_assert_int_eq(decode(buf, len), N);
	ck_assert_uint_eq(evb.n, 0);
	ck_assert_uint_eq(dec.orphan_exits, N);
	ck_assert_uint_eq(dec.tick, ev[N - 1].tick);
	free(ev);
}
END_TEST

START_TEST(test_bound_single_events)
{
	/* one event per call, each the largest form it can take */
	uint64_t tick = 1ull << 63;
	for (int i = 0; i < 3000; i++) {
		struct hp_raw ev = { ((1ull << 63) - 1) - (uint64_t)i * 32, tick };
		if (i % 3 == 2)
			ev.addr |= HP_RAW_EXIT;
		encode(&ev, 1);
		tick = tick ? 0 : 1ull << 63;
	}
}
END_TEST

START_TEST(test_deep_stack)
{
	enum { DEPTH = 100000 };
	struct hp_raw *ev = calloc(2 * DEPTH, sizeof(*ev));
	for (size_t i = 0; i < DEPTH; i++) {
		ev[i] = (struct hp_raw)EN(0x1000 + (i % 7) * 16, i + 1);
		ev[2 * DEPTH - 1 - i] = (struct hp_raw)EX(0x1000 + (i % 7) * 16, 2 * DEPTH - i);
	}
	size_t len = encode(ev, 2 * DEPTH);
	ck_assert_uint_eq(enc.depth, 0);
	ck_assert_int_eq(decode(buf, len), 2 * DEPTH);
	ck_assert_uint_eq(evb.n, 2 * DEPTH);
	for (size_t i = 0; i < 2 * DEPTH; i++) {
		ck_assert_uint_eq(evb.ev[i].tick, i + 1);
		ck_assert_uint_eq(funcs.addr[evb.ev[i].func], ev[i].addr & ~HP_RAW_EXIT);
	}
	ck_assert_uint_eq(dec.depth, 0);
	free(ev);
}
END_TEST

START_TEST(test_null_address)
{
	/* A hook called with fn == NULL must still give a readable stream. */
	static const struct hp_raw ev[] = { EN(0, 5), EX(0, 8) };
	size_t len = encode(ev, NRAW(ev));
	long n = hp_decode(&funcs, &dec, buf, len, &evb, err, sizeof(err));
	ck_assert_msg(n == 2, "address 0 does not round trip: %s", n < 0 ? err : "wrong count");
	assert_ev(0, HP_EV_ENTER, 0, 5);
	assert_ev(1, HP_EV_EXIT, 0, 8);
}
END_TEST

/* ---------------------------------------------------------------- random */

struct want_ev {
	uint64_t tick;
	uint64_t addr;
	uint32_t kind;
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
	/* xorshift64*: fixed seed, same sequence everywhere */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

START_TEST(test_random_round_trip)
{
	enum { N = 100000, NF = 300, MAXDEPTH = 4096 };
	rng_state = 0x9e3779b97f4a7c15ull;
	uint64_t fn[NF];
	for (int i = 0; i < NF; i++)
		fn[i] = 0x400000 + (rnd() % 0x100000) * 64 + (uint64_t)i; /* distinct */
	struct hp_raw *raw = calloc(N, sizeof(*raw));
	struct want_ev *want = calloc(3 * N, sizeof(*want));
	uint64_t *stack = calloc(MAXDEPTH, sizeof(*stack));
	size_t nwant = 0, depth = 0, nraw = 0, chunk_start = 0;
	uint64_t tick = 1000, orphans = 0, decoded_count = 0;
	/* decoded, as addresses */
	struct want_ev *got = calloc(3 * N, sizeof(*got));
	size_t ngot = 0;
	size_t next_cut = 1 + rnd() % 5000;

	while (nraw < N) {
		uint64_t r = rnd() % 100, d = rnd() % 100;
		int64_t delta;
		if (d < 70)
			delta = (int64_t)(rnd() % 20);
		else if (d < 90)
			delta = (int64_t)(rnd() % 5000);
		else if (d < 95)
			delta = (int64_t)(rnd() % (1ull << 40));
		else
			delta = -(int64_t)(rnd() % (tick < 1000 ? tick + 1 : 1000));
		tick += (uint64_t)delta;
		struct hp_raw *e = &raw[nraw];
		e->tick = tick;
		if (depth == 0 || (r < 50 && depth < MAXDEPTH)) {
			uint64_t a = fn[(rnd() % 4) ? rnd() % 40 : rnd() % NF];
			e->addr = a;
			stack[depth++] = a;
			want[nwant++] = (struct want_ev){ tick, a, HP_EV_ENTER };
		} else if (r < 90) {
			e->addr = stack[depth - 1] | HP_RAW_EXIT;
			depth--;
			want[nwant++] = (struct want_ev){ tick, stack[depth], HP_EV_EXIT };
		} else if (r < 96) {
			/* exit of some open frame: unwinds to its newest frame */
			uint64_t a = stack[rnd() % depth];
			e->addr = a | HP_RAW_EXIT;
			size_t j = depth;
			while (stack[j - 1] != a)
				j--;
			while (depth >= j)
				want[nwant++] = (struct want_ev){ tick, stack[--depth], HP_EV_EXIT };
		} else {
			/* exit of a function with no open frame */
			uint64_t a = fn[rnd() % NF];
			int open = 0;
			for (size_t k = 0; k < depth; k++)
				open |= stack[k] == a;
			if (open) {
				tick -= (uint64_t)delta;
				continue;
			}
			e->addr = a | HP_RAW_EXIT;
			orphans++;
		}
		nraw++;
		if (nraw - chunk_start == next_cut || nraw == N) {
			/* one record */
			size_t n = nraw - chunk_start;
			size_t len = encode(raw + chunk_start, n);
			long got_n = decode(buf, len);
			ck_assert_int_eq(got_n, (long)n);
			decoded_count += (uint64_t)got_n;
			for (size_t k = 0; k < evb.n; k++)
				got[ngot++] = (struct want_ev){ evb.ev[k].tick,
								evb.ev[k].kind == HP_EV_RESET
									? 0
									: funcs.addr[evb.ev[k].func],
								evb.ev[k].kind };
			chunk_start = nraw;
			next_cut = 1 + rnd() % 5000;
			if (rnd() % 50 == 0) {
				/* a gap: both sides forget the open frames */
				uint8_t rb[1];
				ck_assert_uint_eq(hp_encode_reset(&enc, rb), 1);
				ck_assert_int_eq(decode(rb, 1), 0);
				ck_assert_uint_eq(evb.n, 1);
				got[ngot++] = (struct want_ev){ 0, 0, HP_EV_RESET };
				want[nwant++] = (struct want_ev){ 0, 0, HP_EV_RESET };
				depth = 0;
			}
		}
	}
	ck_assert_uint_eq(decoded_count, N);
	ck_assert_uint_eq(dec.orphan_exits, orphans);
	ck_assert_uint_eq(dec.depth, depth);
	ck_assert_uint_eq(enc.depth, depth);
	ck_assert_uint_eq(ngot, nwant);
	for (size_t k = 0; k < nwant; k++) {
		ck_assert_msg(got[k].kind == want[k].kind && got[k].tick == want[k].tick &&
				      got[k].addr == want[k].addr,
			      "event %zu: got kind %u tick %llu addr %llx, want kind %u tick %llu addr %llx",
			      k, got[k].kind, (unsigned long long)got[k].tick,
			      (unsigned long long)got[k].addr, want[k].kind,
			      (unsigned long long)want[k].tick, (unsigned long long)want[k].addr);
	}
	/* the encoding is compact: well under 4 bytes per event on this mix */
	free(raw);
	free(want);
	free(got);
	free(stack);
}
END_TEST

/* ---- HOOKPROF_MIN and filtered slots --------------------------------- */

/* Encodes one chunk with HOOKPROF_MIN on: the enter held back from the
 * chunk before may come out too (room for n + 1 events). */
static size_t encode_min_chunk(const struct hp_raw *ev, size_t n)
{
	size_t bound = hp_encode_bound(n + 1);
	free(buf);
	buf = malloc(bound);
	ck_assert_ptr_nonnull(buf);
	ssize_t len = hp_encode(&dict, &enc, ev, n, buf);
	ck_assert_int_ge(len, 0);
	ck_assert_uint_le((size_t)len, bound);
	return (size_t)len;
}

/* ---- slots not filled yet (stale_below) ------------------------------ */

#define FILLED_EVENTS 200
#define STALE_BELOW 1000000u

/* Calls of 5 functions, each ending before the next starts, the deltas
 * short (calm) or some long (mixed); ticks from STALE_BELOW on. */
static void calls_from(struct hp_raw *ev, size_t n, int mixed)
{
	uint64_t tick = STALE_BELOW;
	for (size_t i = 0; i < n; i++) {
		uint64_t f = 0x1000 + (i / 2 % 5) * 0x10;
		tick += mixed && i % 3 == 0 ? 300 : 3;
		ev[i] = (struct hp_raw){ f | (i & 1 ? HP_RAW_EXIT : 0), tick };
	}
}

/* Encodes ev[0..n) into out as the writer does: each stop at a slot not
 * filled yet is played as the hook filling it meanwhile (from real). */
static size_t encode_filling_late(struct hp_raw *ev, const struct hp_raw *real, size_t n,
				  uint8_t *out, size_t *stops)
{
	size_t done = 0, len = 0, written = 0;
	*stops = 0;
	while (done < n) {
		ssize_t got = hp_encode(&dict, &enc, ev + done, n - done, out + len);
		ck_assert_int_ge(got, 0);
		len += (size_t)got;
		written += enc.written;
		ck_assert_uint_le(enc.taken, n - done);
		done += enc.taken;
		if (done < n) {
			ck_assert_uint_lt(ev[done].tick, STALE_BELOW);
			ev[done] = real[done];
			++*stops;
		}
	}
	ck_assert_uint_eq(written, n);
	return len;
}

START_TEST(test_stops_before_slot_not_filled)
{
	/* Slot k holds an earlier lap's event (or zeros): hp_encode stops
	 * before it, says where, and goes on from there once it is filled;
	 * the stream is the one of the events as they are, whatever k, in
	 * both of the fast path's ways. */
	static const size_t ks[] = { 0, 1, 2, 63, 64, 101, 198, 199 };
	struct hp_raw real[FILLED_EVENTS], ev[FILLED_EVENTS];
	for (int mixed = 0; mixed < 2; mixed++) {
		calls_from(real, FILLED_EVENTS, mixed);
		for (size_t i = 0; i < NRAW(ks); i++) {
			teardown();
			setup();
			enc.mixed = mixed;
			enc.stale_below = STALE_BELOW;
			memcpy(ev, real, sizeof(ev));
			ev[ks[i]] = i % 2 ? (struct hp_raw){ 0, 0 } : (struct hp_raw){ 0x2000, 7 };
			uint8_t out[hp_encode_bound(FILLED_EVENTS)];
			size_t stops;
			size_t len = encode_filling_late(ev, real, FILLED_EVENTS, out, &stops);
			ck_assert_uint_eq(stops, 1);
			ck_assert_int_eq(decode(out, len), FILLED_EVENTS);
			for (size_t j = 0; j < FILLED_EVENTS; j++)
				assert_ev(j, j & 1 ? HP_EV_EXIT : HP_EV_ENTER,
					  real[j].addr & ~HP_RAW_EXIT, real[j].tick);
		}
	}
}
END_TEST

START_TEST(test_older_tick_than_before_is_an_event)
{
	/* A hook whose tick was read before a signal handler's events comes
	 * after them, older than the slot before it but not stale: encoded. */
	static const struct hp_raw ev[] = { EN(0x1000, STALE_BELOW + 100), EN(0x2000, STALE_BELOW + 200),
					    EX(0x2000, STALE_BELOW + 210), EN(0x3000, STALE_BELOW + 50) };
	enc.stale_below = STALE_BELOW;
	size_t len = encode(ev, NRAW(ev));
	ck_assert_uint_eq(enc.taken, NRAW(ev));
	ck_assert_uint_eq(enc.written, NRAW(ev));
	ck_assert_int_eq(decode(buf, len), 4);
	assert_ev(3, HP_EV_ENTER, 0x3000, STALE_BELOW + 50);
}
END_TEST

START_TEST(test_min_stops_before_slot_not_filled)
{
	/* HOOKPROF_MIN's way too: the enter held back stays held. */
	struct hp_raw real[FILLED_EVENTS], ev[FILLED_EVENTS];
	calls_from(real, FILLED_EVENTS, 1);
	memcpy(ev, real, sizeof(ev));
	ev[57] = (struct hp_raw){ 0x2000, 7 };
	hp_encode_set_min(100);
	enc.stale_below = STALE_BELOW;
	uint8_t out[hp_encode_bound(FILLED_EVENTS)];
	ssize_t len = hp_encode(&dict, &enc, ev, FILLED_EVENTS, out);
	ck_assert_int_ge(len, 0);
	ck_assert_uint_eq(enc.taken, 57);
	ck_assert(enc.has_pending); /* 56 is an enter: 57, its exit, decides */
	ck_assert_uint_eq(enc.pending.addr, real[56].addr);
}
END_TEST

START_TEST(test_min_held_enter_outlives_next_chunks_bound)
{
	/* HOOKPROF_MIN holds back the last enter of a chunk; the next chunk's
	 * bound (its previous lap's publication) may be above its tick (a
	 * hook whose tick was read before a handler's events): it was filled
	 * in its own chunk, and is written when the next event decides, not
	 * dropped as a slot not filled yet. (From the second review.) */
	static const struct hp_raw first[] = { EN(0x1000, 5000) };
	static const struct hp_raw next[] = { EN(0x2000, 7000), EX(0x2000, 7500), EX(0x1000, 8000) };
	hp_encode_set_min(100);
	enc.stale_below = 1000; /* the first chunk's */
	size_t len = encode(first, NRAW(first));
	ck_assert_uint_eq(enc.taken, 1);
	ck_assert(enc.has_pending);
	enc.stale_below = 6000; /* the next chunk's */
	uint8_t out[hp_encode_bound(8)];
	memcpy(out, buf, len);
	ssize_t more = hp_encode(&dict, &enc, next, NRAW(next), out + len);
	ck_assert_int_ge(more, 0);
	ck_assert_uint_eq(enc.taken, NRAW(next));
	ck_assert_uint_eq(enc.written, 4);
	ck_assert_int_eq(decode(out, len + (size_t)more), 4);
	assert_ev(0, HP_EV_ENTER, 0x1000, 5000);
}
END_TEST

START_TEST(test_min_drops_short_leaf)
{
	/* b lasts 10 ticks with no callee: dropped; c lasts 470: kept; a has callees */
	static const struct hp_raw ev[] = { EN(0xa0, 0), EN(0xb0, 10), EX(0xb0, 20), EN(0xc0, 30),
					    EX(0xc0, 500), EX(0xa0, 600) };
	hp_encode_set_min(100);
	size_t len = encode_min_chunk(ev, NRAW(ev));
	ck_assert_uint_eq(enc.written, 4);
	ck_assert_uint_eq(enc.min_calls, 1);
	ck_assert_uint_eq(enc.min_ticks, 10);
	ck_assert_int_eq(decode(buf, len), 4);
	assert_ev(0, HP_EV_ENTER, 0xa0, 0);
	assert_ev(1, HP_EV_ENTER, 0xc0, 30);
	assert_ev(2, HP_EV_EXIT, 0xc0, 500);
	assert_ev(3, HP_EV_EXIT, 0xa0, 600);
	ck_assert_uint_eq(enc.depth, 0);
	ck_assert(!enc.has_pending);
}
END_TEST

START_TEST(test_min_pending_across_chunks)
{
	/* b's enter ends chunk 1, its exit begins chunk 2: still one short call */
	static const struct hp_raw r1[] = { EN(0xa0, 0), EN(0xb0, 10) };
	static const struct hp_raw r2[] = { EX(0xb0, 20), EX(0xa0, 600) };
	uint8_t stream[256];
	hp_encode_set_min(100);
	size_t n = encode_min_chunk(r1, NRAW(r1));
	ck_assert_uint_eq(enc.written, 1);
	ck_assert(enc.has_pending);
	memcpy(stream, buf, n);
	size_t len2 = encode_min_chunk(r2, NRAW(r2));
	ck_assert_uint_eq(enc.written, 1);
	memcpy(stream + n, buf, len2);
	ck_assert_int_eq(decode(stream, n + len2), 2);
	assert_ev(0, HP_EV_ENTER, 0xa0, 0);
	assert_ev(1, HP_EV_EXIT, 0xa0, 600);
	ck_assert_uint_eq(enc.min_calls, 1);
}
END_TEST

START_TEST(test_min_flush_at_end)
{
	/* the stream ends on an enter: hp_encode_flush writes it */
	static const struct hp_raw ev[] = { EN(0xa0, 7) };
	hp_encode_set_min(100);
	uint8_t stream[64];
	size_t n = encode_min_chunk(ev, NRAW(ev));
	ck_assert_uint_eq(enc.written, 0);
	memcpy(stream, buf, n);
	ssize_t len = hp_encode_flush(&dict, &enc, stream + n);
	ck_assert_int_gt(len, 0);
	ck_assert_uint_le((size_t)len, HP_EVENT_MAX_BYTES);
	ck_assert_uint_eq(enc.written, 1);
	ck_assert_int_eq(decode(stream, n + (size_t)len), 1);
	assert_ev(0, HP_EV_ENTER, 0xa0, 7);
	ck_assert_int_eq(hp_encode_flush(&dict, &enc, stream), 0);
	ck_assert_uint_eq(enc.written, 0);
}
END_TEST

START_TEST(test_nothing_slot_skipped)
{
	/* a filtered event's slot that could not be given back: no event, no tick */
	static const struct hp_raw ev[] = { EN(0xa0, 5), { HP_RAW_NOTHING, 900 }, EX(0xa0, 8) };
	static const uint8_t want[] = { 0x43, 0xa0, 0x01, 0x00, 0x05, 0x83 };
	size_t len = encode(ev, NRAW(ev));
	assert_bytes(buf, len, want, sizeof(want));
	ck_assert_uint_eq(enc.written, 2);
	ck_assert_int_eq(decode(buf, len), 2);
	assert_ev(1, HP_EV_EXIT, 0xa0, 8);
}
END_TEST

START_TEST(test_min_keeps_long_and_control)
{
	/* a call at the minimum is kept; an enter followed by a control event
	 * or by another function's exit is written, not dropped */
	static const struct hp_raw ev[] = { EN(0xa0, 0), EX(0xa0, 100), EN(0xb0, 200),
					    CTL(HP_RAW_PAUSE, 0, 205), EX(0xb0, 210), EN(0xc0, 300),
					    EX(0xd0, 301) };
	hp_encode_set_min(100);
	size_t len = encode_min_chunk(ev, NRAW(ev));
	ck_assert_uint_eq(enc.written, 7);
	ck_assert_uint_eq(enc.min_calls, 0);
	ck_assert_int_eq(decode(buf, len), 7);
	assert_ev(1, HP_EV_EXIT, 0xa0, 100);
	assert_ev(2, HP_EV_ENTER, 0xb0, 200);
	assert_ev(5, HP_EV_ENTER, 0xc0, 300);
}
END_TEST

START_TEST(test_min_nothing_between)
{
	/* a NOTHING slot between a short call's enter and exit changes nothing */
	static const struct hp_raw ev[] = { EN(0xb0, 10), { HP_RAW_NOTHING, 12 }, EX(0xb0, 20) };
	hp_encode_set_min(100);
	encode_min_chunk(ev, NRAW(ev));
	ck_assert_uint_eq(enc.written, 0);
	ck_assert_uint_eq(enc.min_calls, 1);
}
END_TEST

/* ---- the bytes against a reference ----------------------------------- */

/*
 * A plain encoder written from docs/format.md alone, one event at a time,
 * with none of hp_encode's shortcuts: the fast path's bytes must be the
 * same as this one's on every stream (the format does not change when the
 * encoder gets faster).
 */
#define REF_SLOTS (1u << 16)

struct ref_dict {
	uint64_t key[REF_SLOTS]; /* address + 1; 0: empty */
	uint32_t index[REF_SLOTS];
	uint32_t count;
};

struct ref_stream {
	uint64_t stack[8192]; /* open frames' addresses */
	size_t depth;
	uint64_t last;
};

static uint32_t ref_index(struct ref_dict *d, uint64_t addr, uint8_t **p)
{
	uint32_t i = (uint32_t)(addr * 0x9e3779b97f4a7c15ull >> 48);
	while (d->key[i] && d->key[i] != addr + 1)
		i = (i + 1) % REF_SLOTS;
	if (d->key[i])
		return d->index[i];
	d->key[i] = addr + 1; /* the tests define far fewer than REF_SLOTS */
	d->index[i] = d->count;
	*(*p)++ = HP_OP_DEFINE;
	*p = hp_put_uvarint(*p, addr);
	return d->count++;
}

static uint8_t *ref_event(struct ref_dict *d, struct ref_stream *s, struct hp_raw e, uint8_t *p)
{
	if (e.addr == HP_RAW_NOTHING)
		return p;
	uint64_t delta = e.tick - s->last, addr = e.addr & ~HP_RAW_EXIT;
	uint64_t sdelta = hp_zigzag((int64_t)delta);
	s->last = e.tick;
	if (e.addr & HP_RAW_EXIT) {
		if (s->depth && s->stack[s->depth - 1] == addr) {
			s->depth--;
			if (delta < 0x80) {
				*p++ = (uint8_t)(HP_OP_EXIT_SHORT | delta);
				return p;
			}
			*p++ = HP_OP_EXIT_LONG;
			return hp_put_uvarint(p, sdelta);
		}
		uint32_t index = ref_index(d, addr, &p);
		*p++ = HP_OP_EXIT_FN;
		p = hp_put_uvarint(hp_put_uvarint(p, index), sdelta);
		for (size_t j = s->depth; j > 0; j--)
			if (s->stack[j - 1] == addr) {
				s->depth = j - 1;
				break;
			}
		return p;
	}
	if (e.addr & HP_RAW_CONTROL) {
		unsigned kind = hp_raw_kind(e.addr);
		uint64_t payload = e.addr & HP_RAW_PAYLOAD_MASK;
		int value = kind == HP_RAW_VALUE_LO || kind == HP_RAW_VALUE_HI;
		*p++ = (uint8_t)(HP_OP_RESET + kind);
		if (kind >= HP_RAW_REGION_BEGIN)
			p = hp_put_uvarint(p, value ? payload >> 32 : payload);
		p = hp_put_uvarint(p, sdelta);
		return value ? hp_put_uvarint(p, payload & 0xffffffffu) : p;
	}
	uint32_t index = ref_index(d, addr, &p);
	s->stack[s->depth++] = addr; /* ref_next keeps it in bounds */
	if ((int64_t)delta < 0) {
		*p++ = HP_OP_ENTER_LONG;
		return hp_put_uvarint(hp_put_uvarint(p, index), sdelta);
	}
	if (index < HP_OP_ENTER_SHORT_MAX) {
		*p++ = (uint8_t)index;
	} else {
		*p++ = HP_OP_ENTER_SHORT_MAX;
		p = hp_put_uvarint(p, index);
	}
	return hp_put_uvarint(p, delta);
}

/* Tick steps on both sides of every length the encodings of a delta can
 * take (1, 2, 3, 4 bytes, zigzagged or not), and backwards. */
static const int64_t ref_steps[] = {
	0, 1, 20, 63, 64, 127, 128, 129, 255, 4095, 4096, 8191, 8192, 16383, 16384,
	(1 << 20) - 1, 1 << 20, (1 << 21) - 1, 1 << 21, (1 << 27) - 1, 1 << 27,
	(1 << 28) - 1, 1 << 28, 1ll << 35, 1ll << 49, 1ll << 56, 1ll << 62,
	-1, -64, -65, -8192, -(1ll << 40),
};

/* One raw event of a stream with open frames stack[0..*depth) (as its
 * program would have them): mostly enters and exits of the top with small
 * steps (calm: nearly all under 0x80, as in a call-dense program; else
 * mixed), a hot set of functions and a cold one, and everything rarer. */
static struct hp_raw ref_next(struct ref_stream *g, const uint64_t *fn, size_t nf, uint64_t *tick,
			      int calm)
{
	uint64_t r = rnd() % 1000, d = rnd() % 100;
	if (calm)
		*tick += d < 98 ? rnd() % 0x80 : (uint64_t)ref_steps[rnd() % NRAW(ref_steps)];
	else
		*tick += d < 80 ? rnd() % 400 : (uint64_t)ref_steps[rnd() % NRAW(ref_steps)];
	struct hp_raw e = { 0, *tick };
	if (r < 5) {
		e.addr = HP_RAW_NOTHING;
	} else if (r < 15) {
		unsigned kind = 1 + (unsigned)(rnd() % (HP_RAW_KINDS - 1));
		e.addr = hp_raw_control(kind, rnd());
	} else if (g->depth == 0 || (r < 500 && g->depth < NRAW(g->stack))) {
		e.addr = fn[(rnd() % 8) ? rnd() % (nf < 50 ? nf : 50) : rnd() % nf];
		g->stack[g->depth++] = e.addr;
	} else if (r < 960) {
		e.addr = g->stack[--g->depth] | HP_RAW_EXIT;
	} else if (r < 985) {
		uint64_t a = g->stack[rnd() % g->depth];
		e.addr = a | HP_RAW_EXIT;
		while (g->stack[g->depth - 1] != a)
			g->depth--;
		g->depth--;
	} else {
		e.addr = fn[rnd() % nf] | HP_RAW_EXIT; /* may be open or not */
		for (size_t j = g->depth; j > 0; j--)
			if (g->stack[j - 1] == (e.addr & ~HP_RAW_EXIT)) {
				g->depth = j - 1;
				break;
			}
	}
	return e;
}

/* Two streams sharing the dictionary, each cut into records at random,
 * with gaps (resets): every record's bytes equal the reference's. */
static void assert_same_as_reference(uint64_t seed, size_t nf, size_t events)
{
	rng_state = seed;
	uint64_t *fn = calloc(nf, sizeof(*fn));
	for (size_t i = 0; i < nf; i++) /* distinct, some 16 bytes apart, address 0 too */
		fn[i] = i % 3 ? 0x400000 + i * 16 : (rnd() % (1ull << 46)) * 64 + i;
	struct ref_dict *rd = calloc(1, sizeof(*rd));
	struct ref_stream *rs = calloc(2, sizeof(*rs)), *gen = calloc(2, sizeof(*gen));
	struct hp_enc_stream other = { 0 };
	struct hp_enc_stream *es[2] = { &enc, &other };
	uint64_t tick[2] = { 1000, 5000 };
	struct hp_raw *ev = calloc(5000, sizeof(*ev));
	uint8_t *want = malloc(hp_encode_bound(5000));
	for (size_t done = 0; done < events;) {
		int k = (int)(rnd() % 2);
		size_t n = rnd() % 8 ? 1 + rnd() % 5000 : 1 + rnd() % 4;
		int calm = (int)(rnd() % 2); /* the encoder's two ways (hp_encode.c) */
		for (size_t i = 0; i < n; i++)
			ev[i] = ref_next(&gen[k], fn, nf, &tick[k], calm);
		uint8_t *p = want;
		for (size_t i = 0; i < n; i++)
			p = ref_event(rd, &rs[k], ev[i], p);
		size_t len = encode_with(es[k], ev, n);
		if (len != (size_t)(p - want) || memcmp(buf, want, len)) /* (a check per byte is slow) */
			assert_bytes(buf, len, want, (size_t)(p - want));
		ck_assert_uint_eq(es[k]->depth, rs[k].depth);
		done += n;
		if (rnd() % 40 == 0) {
			uint8_t rb[1];
			hp_encode_reset(es[k], rb);
			rs[k].depth = rs[k].last = 0;
		}
	}
	ck_assert_uint_eq(dict.count, rd->count);
	hp_enc_stream_free(&other);
	free(want);
	free(ev);
	free(gen);
	free(rs);
	free(rd);
	free(fn);
}

START_TEST(test_bytes_as_reference_few_functions)
{
	assert_same_as_reference(0x243f6a8885a308d3ull, 40, 400000);
}
END_TEST

START_TEST(test_bytes_as_reference_many_functions)
{
	/* indices past 63, 127 and 16383: the escape's every length */
	assert_same_as_reference(0x13198a2e03707344ull, 20000, 1500000);
}
END_TEST

static Suite *encode_suite(void)
{
	Suite *s = suite_create("encode");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_set_timeout(core, 20);
	tcase_add_test(core, test_short_forms_bytes);
	tcase_add_test(core, test_nested_bytes);
	tcase_add_test(core, test_long_deltas);
	tcase_add_test(core, test_huge_deltas);
	tcase_add_test(core, test_negative_deltas);
	tcase_add_test(core, test_negative_delta_exit_other);
	tcase_add_test(core, test_index_escape);
	tcase_add_test(core, test_exit_not_top);
	tcase_add_test(core, test_exit_not_top_newest_frame);
	tcase_add_test(core, test_orphan_exit);
	tcase_add_test(core, test_orphan_exit_keeps_stack);
	tcase_add_test(core, test_reset);
	tcase_add_test(core, test_state_across_records);
	tcase_add_test(core, test_two_streams_one_dictionary);
	tcase_add_test(core, test_count_equals_raw_events);
	tcase_add_test(core, test_corrupt_inputs);
	tcase_add_test(core, test_random_round_trip);
	tcase_add_test(core, test_control_bytes);
	tcase_add_test(core, test_control_round_trip);
	tcase_add_test(core, test_control_extreme_values);
	tcase_add_test(core, test_min_drops_short_leaf);
	tcase_add_test(core, test_min_pending_across_chunks);
	tcase_add_test(core, test_min_flush_at_end);
	tcase_add_test(core, test_nothing_slot_skipped);
	tcase_add_test(core, test_stops_before_slot_not_filled);
	tcase_add_test(core, test_older_tick_than_before_is_an_event);
	tcase_add_test(core, test_min_stops_before_slot_not_filled);
	tcase_add_test(core, test_min_held_enter_outlives_next_chunks_bound);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 20);
	tcase_add_test(limits, test_every_unknown_op);
	tcase_add_test(limits, test_overlong_varint);
	tcase_add_test(limits, test_empty_input);
	tcase_add_test(limits, test_bound_worst_enters);
	tcase_add_test(limits, test_bound_worst_exits);
	tcase_add_test(limits, test_bound_single_events);
	tcase_add_test(limits, test_deep_stack);
	tcase_add_test(limits, test_null_address);
	tcase_add_test(limits, test_min_keeps_long_and_control);
	tcase_add_test(limits, test_min_nothing_between);
	tcase_add_test(limits, test_bytes_as_reference_few_functions);
	tcase_add_test(limits, test_bytes_as_reference_many_functions);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(encode_suite());
}
