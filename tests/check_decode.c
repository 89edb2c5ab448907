/*
 * check_decode.c - the event-stream decoder (symbolize/hp_decode.c) on byte
 * streams written by hand from docs/format.md ("The event stream", "What a
 * reader checks"): every op, the longjmp rule of 0x41, reset, exact tick
 * arithmetic, every rejection and where its message points, and one stream
 * cut into two records at every byte.
 *
 * check_encode.c decodes what hp_encode writes; nothing here comes from the
 * encoder, so a misreading of the format shared by both sides still shows.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "testkit.h"

#include "../symbolize/hp_decode.h"

/* ------------------------------------------------------- byte builder */

/* LEB128 written out here, not taken from hp_format.h: the test must not
 * share the decoder's reading of the format. Signed deltas are spelt out as
 * bytes where they are used. */
static void putu(struct tk_bytes *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		tk_put8(b, (uint8_t)(byte | (v ? 0x80 : 0)));
	} while (v);
}

/* A small value padded to `len` LEB128 bytes (valid up to 10). */
static void putu_padded(struct tk_bytes *b, uint8_t v, int len)
{
	if (len == 1) {
		tk_put8(b, v);
		return;
	}
	tk_put8(b, (uint8_t)(v | 0x80));
	for (int i = 1; i < len - 1; i++)
		tk_put8(b, 0x80);
	tk_put8(b, 0x00);
}

#define BYTES(b, ...) do { static const uint8_t x_[] = { __VA_ARGS__ }; tk_put(b, x_, sizeof(x_)); } while (0)

/* ------------------------------------------------------- fixture */

static struct hp_funcs funcs;
static struct hp_dec_stream dec;
static struct hp_evbuf evb;
static struct tk_bytes b;
static char err[256];

static void setup(void)
{
	memset(&funcs, 0, sizeof(funcs));
	memset(&dec, 0, sizeof(dec));
	memset(&evb, 0, sizeof(evb));
	memset(&b, 0, sizeof(b));
	err[0] = 0;
}

static void teardown(void)
{
	hp_funcs_free(&funcs);
	hp_dec_stream_free(&dec);
	hp_evbuf_free(&evb);
	free(b.p);
	memset(&b, 0, sizeof(b));
}

/* Forgets everything: a fresh dictionary and stream. */
static void fresh(void)
{
	teardown();
	setup();
}

#define ADDR(i) (0x1000 + 16 * (uint64_t)(i))

/* Decodes one record that must be accepted. */
static long ok(const uint8_t *p, size_t len)
{
	strcpy(err, "untouched");
	long n = hp_decode(&funcs, &dec, p, len, &evb, err, sizeof(err));
	ck_assert_msg(n >= 0, "rejected: %s", err);
	return n;
}

static long ok_bb(void)
{
	long n = ok(b.p, b.n);
	b.n = 0;
	return n;
}

static long try_bb(void)
{
	strcpy(err, "untouched");
	long n = hp_decode(&funcs, &dec, b.p, b.n, &evb, err, sizeof(err));
	b.n = 0;
	return n;
}

/* Defines functions funcs.n .. n-1 at ADDR(i), in a record of their own. */
static void define_upto(uint32_t n)
{
	for (uint32_t i = funcs.n; i < n; i++) {
		tk_put8(&b, 0x43);
		putu(&b, ADDR(i));
	}
	ck_assert_int_eq(ok_bb(), 0);
	ck_assert_uint_eq(funcs.n, n);
}

static void assert_ev(size_t i, uint32_t kind, uint32_t func, uint64_t tick)
{
	ck_assert_uint_lt(i, evb.n);
	const struct hp_ev *e = &evb.ev[i];
	ck_assert_msg(e->kind == kind && e->tick == tick && (kind == HP_EV_RESET || e->func == func),
		      "event %zu: kind %u func %u tick %llu, want kind %u func %u tick %llu", i,
		      e->kind, e->func, (unsigned long long)e->tick, kind, func,
		      (unsigned long long)tick);
}

/* The message is "corrupt event data (<why> at byte <n> of a record)". */
static void assert_why(const char *why)
{
	char want[128];
	snprintf(want, sizeof(want), "corrupt event data (%s at byte ", why);
	ck_assert_msg(!strncmp(err, want, strlen(want)), "message \"%s\", want \"%s...\"", err, want);
	ck_assert_msg(strstr(err, " of a record)") != NULL, "message \"%s\"", err);
}

static long err_byte(void)
{
	const char *at = strstr(err, " at byte ");
	ck_assert_msg(at != NULL, "no byte in \"%s\"", err);
	return strtol(at + 9, NULL, 10);
}

/* The byte named must lie in the entry that failed: from its op byte to its
 * end (either end, so 0- and 1-based numbering both pass). */
static void assert_at(long lo, long hi)
{
	long at = err_byte();
	ck_assert_msg(at >= lo && at <= hi, "\"%s\": byte %ld is outside the failing entry [%ld, %ld]",
		      err, at, lo, hi);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_short_exit_every_delta)
{
	/* 1ddddddd: exit of the top frame, tick += d, for d = 0..127 */
	define_upto(1);
	for (int d = 0; d < 128; d++) {
		BYTES(&b, 0x00, 0x00);
		tk_put8(&b, (uint8_t)(0x80 | d));
	}
	ck_assert_int_eq(ok_bb(), 256);
	ck_assert_uint_eq(evb.n, 256);
	uint64_t t = 0;
	for (int d = 0; d < 128; d++) {
		assert_ev(2 * (size_t)d, HP_EV_ENTER, 0, t);
		t += (uint64_t)d;
		assert_ev(2 * (size_t)d + 1, HP_EV_EXIT, 0, t);
	}
	ck_assert_uint_eq(dec.tick, 127 * 128 / 2);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_short_enter_every_index)
{
	/* 00iiiiii for i = 0..62, deltas 2^i: varints of 1 to 9 bytes */
	define_upto(64);
	for (int i = 0; i < 63; i++)
		tk_put8(&b, (uint8_t)i), putu(&b, 1ull << i);
	ck_assert_int_eq(ok_bb(), 63);
	for (int i = 0; i < 63; i++)
		assert_ev((size_t)i, HP_EV_ENTER, (uint32_t)i, (2ull << i) - 1);
	ck_assert_uint_eq(dec.tick, (1ull << 63) - 1);
	ck_assert_uint_eq(dec.depth, 63);
	for (int i = 0; i < 63; i++)
		ck_assert_uint_eq(dec.stack[i], (uint32_t)i);
}
END_TEST

START_TEST(test_long_enter_index)
{
	/* 00111111: index, then an unsigned delta (not zigzag) */
	define_upto(300);
	BYTES(&b, 0x3f, 0x3f, 0x05,             /* 63 @5 */
	      0x3f, 0x00, 0x02,                 /* 0 in the long form @7 */
	      0x3f, 0xab, 0x02, 0x80, 0x01,     /* 299, +128 @135 */
	      0x3f, 0x01, 0x01);                /* +1, zigzag would say -1 */
	ck_assert_int_eq(ok_bb(), 4);
	assert_ev(0, HP_EV_ENTER, 63, 5);
	assert_ev(1, HP_EV_ENTER, 0, 7);
	assert_ev(2, HP_EV_ENTER, 299, 135);
	assert_ev(3, HP_EV_ENTER, 1, 136);
	ck_assert_uint_eq(funcs.addr[299], ADDR(299));
	ck_assert_uint_eq(dec.depth, 4);
}
END_TEST

START_TEST(test_exit_long_signed)
{
	/* 0x40 s: exit of the top frame by any signed delta */
	define_upto(1);
	BYTES(&b, 0x00, 0x64,          /* @100 */
	      0x40, 0x3b,              /* -30: @70 */
	      0x00, 0x00, 0x40, 0x90, 0x03, /* +200: @270 */
	      0x00, 0x00, 0x40, 0x9b, 0x04, /* -270: @0 */
	      0x00, 0x05, 0x40, 0x00);      /* +0: @5 */
	ck_assert_int_eq(ok_bb(), 8);
	assert_ev(1, HP_EV_EXIT, 0, 70);
	assert_ev(3, HP_EV_EXIT, 0, 270);
	assert_ev(5, HP_EV_EXIT, 0, 0);
	assert_ev(7, HP_EV_EXIT, 0, 5);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_exit_fn_unwinds)
{
	/* a b c b c, then 0x41 b: the newest b and the c above it end at
	 * that tick; 0x41 a: everything left; 0x41 of the top frame: itself */
	define_upto(3);
	BYTES(&b, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01, 0x01, 0x02, 0x01, /* @1..5 */
	      0x41, 0x01, 0x0a,   /* exit b, +5: @10 */
	      0x41, 0x00, 0x03,   /* exit a, -2: @8 */
	      0x00, 0x00,         /* a @8 */
	      0x41, 0x00, 0x02);  /* exit a (top), +1: @9 */
	/* one event per entry written, however many frames it closes */
	ck_assert_int_eq(ok_bb(), 9);
	ck_assert_uint_eq(evb.n, 12);
	assert_ev(5, HP_EV_EXIT, 2, 10);
	assert_ev(6, HP_EV_EXIT, 1, 10);
	assert_ev(7, HP_EV_EXIT, 2, 8);
	assert_ev(8, HP_EV_EXIT, 1, 8);
	assert_ev(9, HP_EV_EXIT, 0, 8);
	assert_ev(10, HP_EV_ENTER, 0, 8);
	assert_ev(11, HP_EV_EXIT, 0, 9);
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(dec.orphan_exits, 0);
}
END_TEST

START_TEST(test_exit_fn_not_on_stack)
{
	/* 0x41 c with c not open: an event, no frame closes, the tick moves */
	define_upto(3);
	BYTES(&b, 0x00, 0x0a, 0x01, 0x0a, /* a @10, b @20 */
	      0x41, 0x02, 0x0a,           /* exit c, +5: @25 */
	      0x85, 0x85);                /* b @30, a @35 */
	ck_assert_int_eq(ok_bb(), 5);
	ck_assert_uint_eq(evb.n, 4);
	assert_ev(2, HP_EV_EXIT, 1, 30);
	assert_ev(3, HP_EV_EXIT, 0, 35);
	ck_assert_uint_eq(dec.orphan_exits, 1);
	/* and with an empty stack it is no error either */
	BYTES(&b, 0x41, 0x00, 0x02);
	ck_assert_int_eq(ok_bb(), 1);
	ck_assert_uint_eq(evb.n, 0);
	ck_assert_uint_eq(dec.orphan_exits, 2);
	ck_assert_uint_eq(dec.tick, 36);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_enter_long_signed)
{
	/* 0x42 f s: enter f with a signed delta */
	define_upto(2);
	BYTES(&b, 0x00, 0x64,       /* a @100 */
	      0x42, 0x01, 0x4f,     /* b, -40: @60 */
	      0x42, 0x00, 0x06,     /* a, +3: @63 */
	      0x42, 0x01, 0x00);    /* b, +0: @63 */
	ck_assert_int_eq(ok_bb(), 4);
	assert_ev(1, HP_EV_ENTER, 1, 60);
	assert_ev(2, HP_EV_ENTER, 0, 63);
	assert_ev(3, HP_EV_ENTER, 1, 63);
	ck_assert_uint_eq(dec.depth, 4);
	ck_assert_uint_eq(dec.stack[3], 1);
}
END_TEST

START_TEST(test_define)
{
	/* 0x43 a: the next index, in order, whatever the address; no event */
	BYTES(&b, 0x43, 0x00, 0x43, 0x7f, 0x43, 0x80, 0x01,
	      0x43, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, /* 2^63 */
	      0x43, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* 2^64-1 */
	      0x43, 0x7f);                                                      /* again */
	ck_assert_int_eq(ok_bb(), 0);
	ck_assert_uint_eq(evb.n, 0);
	ck_assert_uint_eq(funcs.n, 6);
	ck_assert_uint_eq(funcs.addr[0], 0);
	ck_assert_uint_eq(funcs.addr[1], 0x7f);
	ck_assert_uint_eq(funcs.addr[2], 0x80);
	ck_assert_uint_eq(funcs.addr[3], 1ull << 63);
	ck_assert_uint_eq(funcs.addr[4], UINT64_MAX);
	ck_assert_uint_eq(funcs.addr[5], 0x7f);
	ck_assert_uint_eq(dec.tick, 0);
	/* the dictionary outlives the record */
	BYTES(&b, 0x05, 0x03);
	ck_assert_int_eq(ok_bb(), 1);
	assert_ev(0, HP_EV_ENTER, 5, 3);
}
END_TEST

START_TEST(test_reset)
{
	/* 0x44: stack cleared, tick 0 so the next delta is absolute; not an event */
	define_upto(2);
	BYTES(&b, 0x00, 0xe8, 0x07, 0x01, 0x05, /* a @1000, b @1005 */
	      0x44,
	      0x00, 0x07,                       /* a @7 */
	      0x87);                            /* exit a @14 */
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 5);
	assert_ev(2, HP_EV_RESET, 0, 0);
	assert_ev(3, HP_EV_ENTER, 0, 7);
	assert_ev(4, HP_EV_EXIT, 0, 14);
	ck_assert_uint_eq(dec.depth, 0);
	/* a reset alone in a record */
	BYTES(&b, 0x00, 0x01, 0x44);
	ck_assert_int_eq(ok_bb(), 1);
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(dec.tick, 0);
}
END_TEST

START_TEST(test_ticks_exact)
{
	/* 64-bit deltas both ways, including zigzag's extremes */
	define_upto(1);
	BYTES(&b, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, /* @2^63 */
	      0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,       /* INT64_MIN: @0 */
	      0x42, 0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* INT64_MAX */
	      0x40, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);      /* -INT64_MAX */
	ck_assert_int_eq(ok_bb(), 4);
	assert_ev(0, HP_EV_ENTER, 0, 1ull << 63);
	assert_ev(1, HP_EV_EXIT, 0, 0);
	assert_ev(2, HP_EV_ENTER, 0, (uint64_t)INT64_MAX);
	assert_ev(3, HP_EV_EXIT, 0, 0);
	/* the tick carries from record to record */
	BYTES(&b, 0x00, 0x11);
	ok_bb();
	BYTES(&b, 0xa2);
	ok_bb();
	assert_ev(0, HP_EV_EXIT, 0, 0x11 + 0x22);
	ck_assert_uint_eq(dec.tick, 0x33);
}
END_TEST

/* One reader, for a decode that must not touch the fixture's. */
struct reader {
	struct hp_funcs f;
	struct hp_dec_stream s;
	struct hp_evbuf e;
};

static void reader_free(struct reader *r)
{
	hp_funcs_free(&r->f);
	hp_dec_stream_free(&r->s);
	hp_evbuf_free(&r->e);
}

START_TEST(test_split_every_byte)
{
	/* Entries never span records ("an op byte or varint running past the
	 * end of its record" is rejected). Cut between two entries, two
	 * records decode as one; cut inside an entry, the first is refused. */
	size_t cut[32];
	int ncut = 0;
	cut[ncut++] = 0;
#define ENTRY(...) do { BYTES(&b, __VA_ARGS__); cut[ncut++] = b.n; } while (0)
	ENTRY(0x43, 0x90, 0x4e);          /* define 0 = 10000 */
	ENTRY(0x43, 0x20);                /* define 1 */
	ENTRY(0x43, 0x30);                /* define 2 */
	ENTRY(0x00, 0xe8, 0x07);          /* 0 @1000 */
	ENTRY(0x01, 0x05);                /* 1 @1005 */
	ENTRY(0x3f, 0x02, 0x80, 0x01);    /* 2 @1133 */
	ENTRY(0x85);                      /* exit 2 @1138 */
	ENTRY(0x42, 0x02, 0x13);          /* 2, -10: @1128 */
	ENTRY(0x40, 0x09);                /* exit 2, -5: @1123 */
	ENTRY(0x02, 0x01);                /* 2 @1124 */
	ENTRY(0x41, 0x00, 0x04);          /* exit 0 @1126: closes 2, 1, 0 */
	ENTRY(0x41, 0x01, 0x02);          /* exit 1, not open: @1127 */
	ENTRY(0x44);                      /* reset */
	ENTRY(0x00, 0x07);                /* 0 @7 */
	ENTRY(0x43, 0x40);                /* define 3 */
	ENTRY(0x03, 0x01);                /* 3 @8 */
	ENTRY(0x80);                      /* exit 3 @8 */
#undef ENTRY
	struct reader whole = { 0 };
	long n = hp_decode(&whole.f, &whole.s, b.p, b.n, &whole.e, err, sizeof(err));
	ck_assert_msg(n == 12, "whole stream: %ld (%s)", n, err);
	ck_assert_uint_eq(whole.e.n, 14);
	ck_assert_uint_eq(whole.s.tick, 8);
	ck_assert_uint_eq(whole.s.depth, 1);
	ck_assert_uint_eq(whole.s.orphan_exits, 1);
	for (size_t k = 0; k <= b.n; k++) {
		int boundary = 0;
		for (int i = 0; i < ncut; i++)
			boundary |= cut[i] == k;
		struct reader r = { 0 };
		long n1 = hp_decode(&r.f, &r.s, b.p, k, &r.e, err, sizeof(err));
		if (!boundary) {
			ck_assert_msg(n1 == -1, "cut at %zu inside an entry: accepted", k);
			ck_assert_msg(strstr(err, "truncated") != NULL, "cut at %zu: %s", k, err);
			reader_free(&r);
			continue;
		}
		ck_assert_msg(n1 >= 0, "cut at %zu, first part: %s", k, err);
		size_t m = r.e.n;
		struct hp_ev first[16];
		ck_assert_uint_le(m, 16);
		if (m) /* an empty first part leaves the buffer unallocated */
			memcpy(first, r.e.ev, m * sizeof(*first));
		long n2 = hp_decode(&r.f, &r.s, b.p + k, b.n - k, &r.e, err, sizeof(err));
		ck_assert_msg(n2 >= 0, "cut at %zu, second part: %s", k, err);
		ck_assert_int_eq(n1 + n2, n);
		/* the second call's buffer holds only its own events */
		ck_assert_uint_eq(m + r.e.n, whole.e.n);
		ck_assert_mem_eq(first, whole.e.ev, m * sizeof(*first));
		ck_assert_mem_eq(r.e.ev, whole.e.ev + m, r.e.n * sizeof(*first));
		ck_assert_uint_eq(r.s.tick, whole.s.tick);
		ck_assert_uint_eq(r.s.depth, whole.s.depth);
		ck_assert_uint_eq(r.s.stack[0], whole.s.stack[0]);
		ck_assert_uint_eq(r.s.orphan_exits, whole.s.orphan_exits);
		ck_assert_uint_eq(r.f.n, 4);
		ck_assert_mem_eq(r.f.addr, whole.f.addr, 4 * sizeof(uint64_t));
		reader_free(&r);
	}
	reader_free(&whole);
}
END_TEST

/* Format 1.2: regions are frames on the same stack; their misuse is
 * repaired, and each repair said once. */
static void assert_repair(size_t i, uint32_t name, int why)
{
	ck_assert_uint_lt(i, evb.n);
	ck_assert_msg(evb.ev[i].kind == HP_EV_REGION_REPAIR && evb.ev[i].func == name &&
			      evb.ev[i].value == why,
		      "event %zu: kind %u func %u value %lld, want repair %d of %u", i, evb.ev[i].kind,
		      evb.ev[i].func, (long long)evb.ev[i].value, why, name);
}

START_TEST(test_region_nested_in_function)
{
	define_upto(1);
	/* enter f @1, begin r7 @2, end r7 @5, exit f @6 */
	BYTES(&b, 0x00, 0x01, 0x49, 0x07, 0x02, 0x4a, 0x07, 0x06, 0x81);
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 4);
	assert_ev(0, HP_EV_ENTER, 0, 1);
	assert_ev(1, HP_EV_ENTER, HP_REGION_FUNC | 7, 2);
	assert_ev(2, HP_EV_EXIT, HP_REGION_FUNC | 7, 5);
	assert_ev(3, HP_EV_EXIT, 0, 6);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_region_end_without_begin)
{
	define_upto(1);
	BYTES(&b, 0x00, 0x01, 0x4a, 0x07, 0x02, 0x81);
	ck_assert_int_eq(ok_bb(), 3);
	ck_assert_uint_eq(evb.n, 3);
	assert_ev(0, HP_EV_ENTER, 0, 1);
	assert_repair(1, 7, HP_REPAIR_NO_BEGIN);
	assert_ev(2, HP_EV_EXIT, 0, 3);
}
END_TEST

START_TEST(test_region_not_ended_in_its_function)
{
	define_upto(1);
	/* begin r7 inside f, f returns @4: r7 ends there; its late end is no news */
	BYTES(&b, 0x00, 0x01, 0x49, 0x07, 0x02, 0x82, 0x4a, 0x07, 0x02);
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 5);
	assert_ev(0, HP_EV_ENTER, 0, 1);
	assert_ev(1, HP_EV_ENTER, HP_REGION_FUNC | 7, 2);
	assert_ev(2, HP_EV_EXIT, HP_REGION_FUNC | 7, 4);
	assert_repair(3, 7, HP_REPAIR_NOT_ENDED);
	assert_ev(4, HP_EV_EXIT, 0, 4);
	/* the late end of r7 came too, and said nothing */
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(dec.nrepaired, 0);
}
END_TEST

START_TEST(test_region_out_of_order)
{
	/* begin a, begin b, end a: b ends with a, and b's own end is dropped */
	BYTES(&b, 0x49, 0x01, 0x02, 0x49, 0x02, 0x02, 0x4a, 0x01, 0x02, 0x4a, 0x02, 0x02);
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 5);
	assert_ev(0, HP_EV_ENTER, HP_REGION_FUNC | 1, 1);
	assert_ev(1, HP_EV_ENTER, HP_REGION_FUNC | 2, 2);
	assert_ev(2, HP_EV_EXIT, HP_REGION_FUNC | 2, 3);
	assert_repair(3, 2, HP_REPAIR_OUT_OF_ORDER);
	assert_ev(4, HP_EV_EXIT, HP_REGION_FUNC | 1, 3);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_region_closed_by_exit_of_caller)
{
	define_upto(2);
	/* f calls g, g begins r3; f's exit (0x41, not the top) closes r3, g, f */
	BYTES(&b, 0x00, 0x01, 0x01, 0x01, 0x49, 0x03, 0x02, 0x41, 0x00, 0x04);
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 7);
	assert_ev(2, HP_EV_ENTER, HP_REGION_FUNC | 3, 3);
	assert_ev(3, HP_EV_EXIT, HP_REGION_FUNC | 3, 5);
	assert_repair(4, 3, HP_REPAIR_NOT_ENDED);
	assert_ev(5, HP_EV_EXIT, 1, 5);
	assert_ev(6, HP_EV_EXIT, 0, 5);
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_value_halves)
{
	/* a high half without its low one, a low one without its high one
	 * (another value's follows), then a whole value: one value */
	BYTES(&b, 0x4d, 0x01, 0x02, 0x00, 0x4c, 0x01, 0x02, 0x05, 0x4c, 0x02, 0x02, 0x09,
	      0x4d, 0x02, 0x00, 0x00);
	ck_assert_int_eq(ok_bb(), 4);
	ck_assert_uint_eq(evb.n, 1);
	ck_assert_uint_eq(evb.ev[0].kind, HP_EV_VALUE);
	ck_assert_uint_eq(evb.ev[0].func, 2);
	ck_assert_int_eq(evb.ev[0].value, 9);
	ck_assert_uint_eq(evb.ev[0].tick, 3);
}
END_TEST

START_TEST(test_control_ids_bounded)
{
	BYTES(&b, 0x4b);
	putu(&b, HP_STRINGS_MAX);
	tk_put8(&b, 0x00);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("string id out of range");
}
END_TEST

/* ---------------------------------------------------------------- limits */

/* How docs/format.md reads each op byte: operands, events, or invalid. */
static int operands_of(unsigned op, int *events)
{
	*events = 1;
	if (op >= 0x80)
		return 0;
	if (op < 63)
		return 1;
	switch (op) {
	case 63: return 2;
	case 0x40: return 1;
	case 0x41: return 2;
	case 0x42: return 2;
	case 0x43: *events = 0; return 1;
	case 0x44: *events = 0; return 0;
	case 0x45: case 0x46: case 0x47: case 0x48: return 1; /* 1.2: pause .. start */
	case 0x49: case 0x4a: case 0x4b: return 2;             /* region begin, end, mark */
	case 0x4c: case 0x4d: return 3;                        /* value halves */
	case 0x4e: *events = 0; return 1;                      /* 1.3: hookprof's own time */
	}
	return -1;
}

START_TEST(test_every_op_byte)
{
	/* All 256 op bytes, each after two open frames and 64 defined
	 * functions: the listed ones take exactly their operands, every other
	 * one is refused as an unknown code. */
	for (unsigned op = 0; op < 256; op++) {
		int events, nops = operands_of(op, &events);
		fresh();
		define_upto(64);
		BYTES(&b, 0x00, 0x00, 0x01, 0x00);
		ck_assert_int_eq(ok_bb(), 2);
		tk_put8(&b, (uint8_t)op);
		for (int i = 0; i < (nops < 0 ? 2 : nops); i++)
			tk_put8(&b, 0x01);
		if (nops < 0) {
			ck_assert_msg(try_bb() == -1, "op 0x%02x accepted", op);
			assert_why("unknown event code");
			continue;
		}
		uint8_t rec[8]; /* the op and up to three operands of one byte each */
		size_t len = b.n;
		memcpy(rec, b.p, len);
		long n = try_bb();
		ck_assert_msg(n == events, "op 0x%02x with %d operands: %ld (%s)", op, nops, n, err);
		if (nops) {
			fresh();
			define_upto(64);
			BYTES(&b, 0x00, 0x00, 0x01, 0x00);
			ok_bb();
			tk_put(&b, rec, len - 1);
			ck_assert_msg(try_bb() == -1, "op 0x%02x accepted with %d operands", op, nops - 1);
			ck_assert_msg(strstr(err, "truncated") != NULL, "op 0x%02x: %s", op, err);
		}
	}
}
END_TEST

/* Entries with multi-byte varints in every operand, and what a cut says. */
static const struct {
	uint8_t bytes[8];
	size_t len;
	const char *why;
} varint_entries[] = {
	{ { 0x05, 0x80, 0x01 }, 3, "truncated enter" },
	{ { 0x3f, 0xab, 0x02, 0x80, 0x01 }, 5, "truncated enter" },
	{ { 0x40, 0x80, 0x01 }, 3, "truncated exit" },
	{ { 0x41, 0xab, 0x02, 0x80, 0x01 }, 5, "truncated exit" },
	{ { 0x42, 0xab, 0x02, 0x80, 0x01 }, 5, "truncated enter" },
	{ { 0x43, 0x80, 0x80, 0x01 }, 4, "truncated function definition" },
};
#define NVE (sizeof(varint_entries) / sizeof(varint_entries[0]))

/* 300 functions defined, two frames open. */
static void context(void)
{
	fresh();
	define_upto(300);
	BYTES(&b, 0x00, 0x00, 0x01, 0x00);
	ck_assert_int_eq(ok_bb(), 2);
}

START_TEST(test_truncated_varints)
{
	for (size_t e = 0; e < NVE; e++) {
		for (size_t cut = 1; cut < varint_entries[e].len; cut++) {
			context();
			tk_put(&b, varint_entries[e].bytes, cut);
			ck_assert_msg(try_bb() == -1, "entry %zu cut at %zu accepted", e, cut);
			assert_why(varint_entries[e].why);
		}
		/* whole, it is fine */
		context();
		tk_put(&b, varint_entries[e].bytes, varint_entries[e].len);
		ck_assert_msg(try_bb() >= 0, "entry %zu: %s", e, err);
	}
}
END_TEST

START_TEST(test_varint_over_10_bytes)
{
	/* each varint operand of each op padded to 10 bytes (the most
	 * allowed) is read; to 11 it is refused, though the record goes on */
	static const struct { uint8_t op; int nops; const char *why; } ops[] = {
		{ 0x01, 1, "truncated enter" }, { 0x3f, 2, "truncated enter" },
		{ 0x40, 1, "truncated exit" },  { 0x41, 2, "truncated exit" },
		{ 0x42, 2, "truncated enter" }, { 0x43, 1, "truncated function definition" },
	};
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (int slot = 0; slot < ops[o].nops; slot++) {
			for (int len = 10; len <= 11; len++) {
				context();
				tk_put8(&b, ops[o].op);
				for (int i = 0; i < ops[o].nops; i++)
					putu_padded(&b, 0x01, i == slot ? len : 1);
				BYTES(&b, 0x44, 0x44);
				long n = try_bb();
				if (len == 10) {
					ck_assert_msg(n >= 0, "op 0x%02x operand %d in 10 bytes: %s",
						      ops[o].op, slot, err);
				} else {
					ck_assert_msg(n == -1, "op 0x%02x operand %d in 11 bytes accepted",
						      ops[o].op, slot);
					assert_why(ops[o].why);
				}
			}
		}
	}
}
END_TEST

START_TEST(test_undefined_index)
{
	/* with 0 and 1 defined: index 1 is fine, 2 is not, nor 2^32 (which
	 * a 32-bit index would read as 0) */
	static const struct { uint8_t bytes[8]; size_t len; long want; const char *why; } cases[] = {
		{ { 0x01, 0x01 }, 2, 1, NULL },
		{ { 0x02, 0x01 }, 2, -1, "enter of an undefined function" },
		{ { 0x3f, 0x01, 0x01 }, 3, 1, NULL },
		{ { 0x3f, 0x02, 0x01 }, 3, -1, "enter of an undefined function" },
		{ { 0x3f, 0x80, 0x80, 0x80, 0x80, 0x10, 0x01 }, 7, -1, "enter of an undefined function" },
		{ { 0x42, 0x01, 0x02 }, 3, 1, NULL },
		{ { 0x42, 0x02, 0x02 }, 3, -1, "enter of an undefined function" },
		{ { 0x42, 0x80, 0x80, 0x80, 0x80, 0x10, 0x02 }, 7, -1, "enter of an undefined function" },
		{ { 0x41, 0x01, 0x00 }, 3, 1, NULL },
		{ { 0x41, 0x02, 0x00 }, 3, -1, "exit of an undefined function" },
		{ { 0x41, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00 }, 7, -1, "exit of an undefined function" },
		/* "not yet defined": the order inside one record counts */
		{ { 0x02, 0x01, 0x43, 0x50 }, 4, -1, "enter of an undefined function" },
		{ { 0x43, 0x50, 0x02, 0x01 }, 4, 1, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fresh();
		define_upto(2);
		BYTES(&b, 0x00, 0x01);
		ok_bb();
		tk_put(&b, cases[i].bytes, cases[i].len);
		long n = try_bb();
		ck_assert_msg(n == cases[i].want, "case %zu: %ld (%s)", i, n, err);
		if (cases[i].why)
			assert_why(cases[i].why);
	}
}
END_TEST

START_TEST(test_exit_empty_stack)
{
	/* short and 0x40 exits need a frame: none at the start, none after a
	 * reset, none once 0x41 closed them all, none in a later record */
	BYTES(&b, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");
	BYTES(&b, 0x40, 0x00);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");

	fresh();
	define_upto(2);
	BYTES(&b, 0x00, 0x01, 0x44, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");

	fresh();
	define_upto(2);
	BYTES(&b, 0x00, 0x01, 0x01, 0x01, 0x41, 0x00, 0x00, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");

	fresh();
	define_upto(1);
	BYTES(&b, 0x00, 0x01);
	ck_assert_int_eq(ok_bb(), 1);
	BYTES(&b, 0x80);
	ck_assert_int_eq(ok_bb(), 1);
	BYTES(&b, 0x40, 0x02);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");
}
END_TEST

/* Functions 0 and 1 defined and function 0 entered, in 6 bytes. */
static void prefix(void)
{
	BYTES(&b, 0x43, 0x10, 0x43, 0x20, 0x00, 0x05);
}

START_TEST(test_error_offsets)
{
	/* after a 6-byte prefix, the byte named lies in the failing entry */
	prefix();
	tk_put8(&b, 0x4f);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("unknown event code");
	assert_at(6, 7);

	fresh();
	prefix();
	BYTES(&b, 0x05, 0x01);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("enter of an undefined function");
	assert_at(6, 8);

	fresh();
	prefix();
	BYTES(&b, 0x41, 0x09, 0x01);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit of an undefined function");
	assert_at(6, 9);

	fresh();
	prefix();
	BYTES(&b, 0x80, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("exit with no open frame");
	assert_at(7, 8);
}
END_TEST

START_TEST(test_error_offset_truncated)
{
	/* a varint cut by the end of the record: the message still says where */
	prefix();
	BYTES(&b, 0x01, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("truncated enter");
	assert_at(6, 8);
}
END_TEST

START_TEST(test_error_offset_overlong)
{
	/* an 11-byte varint inside the record */
	prefix();
	tk_put8(&b, 0x01);
	putu_padded(&b, 0x01, 11);
	tk_put8(&b, 0x80);
	ck_assert_int_eq(try_bb(), -1);
	assert_why("truncated enter");
	assert_at(6, 18);
}
END_TEST

START_TEST(test_unwind_more_events_than_bytes)
{
	/* a 3-byte 0x41 closing 20000 frames into an empty event buffer: the
	 * output outgrows "one event per input byte" */
	enum { DEPTH = 20000 };
	define_upto(2);
	BYTES(&b, 0x01, 0x01); /* function 1 at the bottom, 0 above it */
	for (int i = 1; i < DEPTH; i++)
		BYTES(&b, 0x00, 0x01);
	ck_assert_int_eq(ok_bb(), DEPTH);
	struct hp_evbuf out = { 0 };
	static const uint8_t unwind[] = { 0x41, 0x01, 0x02 };
	long n = hp_decode(&funcs, &dec, unwind, sizeof(unwind), &out, err, sizeof(err));
	ck_assert_msg(n == 1, "%ld (%s)", n, err);
	ck_assert_uint_eq(out.n, DEPTH);
	for (size_t i = 0; i < DEPTH; i++)
		ck_assert(out.ev[i].kind == HP_EV_EXIT && out.ev[i].tick == DEPTH + 1 &&
			  out.ev[i].func == (i == DEPTH - 1 ? 1u : 0u));
	ck_assert_uint_eq(dec.depth, 0);
	hp_evbuf_free(&out);
}
END_TEST

START_TEST(test_unwind_mid_record)
{
	/* a 0x41 closing 20000 frames at the start of a record that goes on
	 * with 7000 calls: 34000 events out of 21003 bytes, more than the
	 * buffer the unwind alone needs. An overflow need not crash here:
	 * the buffer must hold what it was given. */
	enum { DEPTH = 20000, CALLS = 7000 };
	define_upto(2);
	BYTES(&b, 0x01, 0x01);
	for (int i = 1; i < DEPTH; i++)
		BYTES(&b, 0x00, 0x01);
	ck_assert_int_eq(ok_bb(), DEPTH);
	hp_evbuf_free(&evb); /* as sized for this record only */
	BYTES(&b, 0x41, 0x01, 0x02); /* exit 1, +1: @DEPTH+1 */
	for (int i = 0; i < CALLS; i++)
		BYTES(&b, 0x00, 0x01, 0x81); /* 0 for one tick, one tick apart */
	ck_assert_int_eq(ok_bb(), 1 + 2 * CALLS);
	ck_assert_uint_eq(evb.n, DEPTH + 2 * CALLS);
	ck_assert_uint_ge(evb.cap, evb.n);
	for (size_t i = 0; i < DEPTH; i++)
		ck_assert(evb.ev[i].kind == HP_EV_EXIT && evb.ev[i].tick == DEPTH + 1);
	for (size_t i = 0; i < CALLS; i++) {
		uint64_t t = DEPTH + 1 + 2 * (uint64_t)i;
		assert_ev(DEPTH + 2 * i, HP_EV_ENTER, 0, t + 1);
		assert_ev(DEPTH + 2 * i + 1, HP_EV_EXIT, 0, t + 2);
	}
	ck_assert_uint_eq(dec.depth, 0);
}
END_TEST

START_TEST(test_pieces_bounded)
{
	/* the same record decoded whole and in pieces of 100 events: the same
	 * events in the same order, the unwind of 20000 frames spread over
	 * pieces, the buffer never above the smallest it grows to */
	enum { DEPTH = 20000, CALLS = 7000, PIECE = 100 };
	define_upto(2);
	struct tk_bytes rec = { 0 };
	BYTES(&rec, 0x01, 0x01);
	for (int i = 1; i < DEPTH; i++)
		BYTES(&rec, 0x00, 0x01);
	BYTES(&rec, 0x43, 0x07, 0x41, 0x01, 0x02); /* a definition, then the unwind */
	for (int i = 0; i < CALLS; i++)
		BYTES(&rec, 0x00, 0x01, 0x81);
	BYTES(&rec, 0x44, 0x02, 0x05, 0x41, 0x02, 0x02); /* reset, enter 2, exit of 2 */
	ck_assert_int_eq(ok(rec.p, rec.n), DEPTH + 1 + 2 * CALLS + 2);
	struct hp_evbuf whole = evb;
	memset(&evb, 0, sizeof(evb));
	hp_dec_stream_free(&dec);
	funcs.n = 2;

	struct hp_dec_record r = hp_dec_record_of(rec.p, rec.n);
	size_t at = 0;
	long recorded = 0;
	int pieces = 0;
	do {
		long n = hp_decode_piece(&funcs, &dec, &r, PIECE, &evb, err, sizeof(err));
		ck_assert_msg(n >= 0, "%s", err);
		ck_assert_uint_le(evb.n, PIECE);
		ck_assert_uint_le(evb.cap, 1024);
		ck_assert_uint_le(at + evb.n, whole.n);
		ck_assert(!memcmp(evb.ev, whole.ev + at, evb.n * sizeof(*evb.ev)));
		at += evb.n;
		recorded += n;
		pieces++;
	} while (!hp_decode_done(&dec, &r));
	ck_assert_uint_eq(at, whole.n);
	ck_assert_int_eq(recorded, DEPTH + 1 + 2 * CALLS + 2);
	ck_assert_int_ge(pieces, (int)(whole.n / PIECE));
	ck_assert_uint_eq(dec.depth, 0);
	ck_assert_uint_eq(funcs.n, 3);
	hp_evbuf_free(&whole);
	free(rec.p);
}
END_TEST

START_TEST(test_orphan_exits_deep_stack)
{
	/* 500000 frames of 0, then a million exits of 1, which is not open:
	 * each is an event that closes nothing, found so without a scan of
	 * the stack (a scan each took minutes here: the Check timeout fails
	 * it). Then an exit of 0 closes the newest frame only. */
	enum { DEPTH = 500000, ORPHANS = 1000000 };
	define_upto(2);
	for (int i = 0; i < DEPTH; i++)
		BYTES(&b, 0x00, 0x01);
	for (int i = 0; i < ORPHANS; i++)
		BYTES(&b, 0x41, 0x01, 0x02);
	BYTES(&b, 0x41, 0x00, 0x02);
	ck_assert_int_eq(ok_bb(), DEPTH + ORPHANS + 1);
	ck_assert_uint_eq(dec.orphan_exits, ORPHANS);
	ck_assert_uint_eq(dec.depth, DEPTH - 1);
	ck_assert_uint_eq(evb.n, DEPTH + 1);
	assert_ev(DEPTH, HP_EV_EXIT, 0, DEPTH + ORPHANS + 1);
}
END_TEST

START_TEST(test_resets_only)
{
	/* a record of nothing but resets: one reset each, no event counted */
	for (int i = 0; i < 10000; i++)
		tk_put8(&b, 0x44);
	ck_assert_int_eq(ok_bb(), 0);
	ck_assert_uint_eq(evb.n, 10000);
	ck_assert_uint_eq(evb.ev[9999].kind, HP_EV_RESET);
	ck_assert_uint_eq(funcs.n, 0);
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_short_exit_every_delta);
	tcase_add_test(core, test_short_enter_every_index);
	tcase_add_test(core, test_long_enter_index);
	tcase_add_test(core, test_exit_long_signed);
	tcase_add_test(core, test_exit_fn_unwinds);
	tcase_add_test(core, test_exit_fn_not_on_stack);
	tcase_add_test(core, test_enter_long_signed);
	tcase_add_test(core, test_define);
	tcase_add_test(core, test_reset);
	tcase_add_test(core, test_ticks_exact);
	tcase_add_test(core, test_split_every_byte);
	tcase_add_test(core, test_region_nested_in_function);
	tcase_add_test(core, test_region_end_without_begin);
	tcase_add_test(core, test_region_not_ended_in_its_function);
	tcase_add_test(core, test_region_out_of_order);
	tcase_add_test(core, test_region_closed_by_exit_of_caller);
	tcase_add_test(core, test_value_halves);
	tcase_add_test(core, test_control_ids_bounded);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_set_timeout(limits, 20);
	tcase_add_test(limits, test_every_op_byte);
	tcase_add_test(limits, test_truncated_varints);
	tcase_add_test(limits, test_varint_over_10_bytes);
	tcase_add_test(limits, test_undefined_index);
	tcase_add_test(limits, test_exit_empty_stack);
	tcase_add_test(limits, test_error_offsets);
	tcase_add_test(limits, test_error_offset_truncated);
	tcase_add_test(limits, test_error_offset_overlong);
	tcase_add_test(limits, test_unwind_more_events_than_bytes);
	tcase_add_test(limits, test_unwind_mid_record);
	tcase_add_test(limits, test_pieces_bounded);
	tcase_add_test(limits, test_orphan_exits_deep_stack);
	tcase_add_test(limits, test_resets_only);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(decode_suite());
}
