/*
 * hp_format.h - the trace file format, shared by the runtime (writer) and the
 * offline tool (reader). docs/format.md is the prose form of this header; the
 * two change together.
 *
 * A trace is a 32-byte file header followed by records. Every integer is
 * little-endian. A record is  u32 type, u32 size, then `size` payload bytes.
 * Unknown record types are skipped by size, so newer writers stay readable.
 */
#ifndef HP_FORMAT_H
#define HP_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HP_MAGIC "HOOKPROF"
#define HP_MAGIC_LEN 8
#define HP_VERSION_MAJOR 1
#define HP_VERSION_MINOR 3
#define HP_BYTE_ORDER_MARK 0x01020304u
#define HP_FILE_HEADER_SIZE 32
#define HP_RECORD_HEADER_SIZE 8
/* A record larger than this is corrupt: keeps a reader's buffers bounded. */
#define HP_RECORD_MAX (64u << 20)

enum hp_record_type {
	HP_REC_PROCESS = 1, /* who was traced, and with which clock */
	HP_REC_CLOCK = 2,   /* one (tick, CLOCK_MONOTONIC_RAW ns) pair */
	HP_REC_MODULES = 3, /* snapshot of every loaded ELF object */
	HP_REC_THREAD = 4,  /* a stream's thread id and name */
	HP_REC_EVENTS = 5,  /* encoded events of one stream */
	HP_REC_LOST = 6,    /* events of one stream that were not recorded */
	HP_REC_END = 7,     /* totals; its absence marks an incomplete trace */
	/* 1.1: the moment of the MODULES snapshot just written, and its size:
	 * u64 tick, u32 modules, u32 reserved. A reader learns from it when an
	 * object was unloaded, so an address reused later names the right one. */
	HP_REC_MODULES_AT = 8,
	HP_REC_CRASH = 9,   /* (1.1) the fatal signal and the crashing thread's stack */
	HP_REC_STACK = 10,  /* (1.1) a stream's callers above its first instrumented frame */
	HP_REC_PARENT = 11, /* (1.1) the parent process, and the fork this one came from */
	/* 1.2: one interned string of the control API (a region's or a value's
	 * name, a mark's text, a thread's name): u32 id, u32 len, len bytes.
	 * Written once, before the first EVENTS record that names it. */
	HP_REC_STRING = 12,
	/* 1.3: the filters of the run (HOOKPROF_EXCLUDE, INCLUDE, DEPTH, MIN)
	 * and what MIN dropped so far; a reader keeps the last one:
	 *   u64 min_ns, u64 min_calls, u64 min_ticks, u32 depth, u32 reserved,
	 *   u32 len + exclude (as given), u32 len + include. */
	HP_REC_FILTER = 13,
	/* 1.3: what a hook pair costs, measured in the process at its start
	 * and at its end: u32 when (HP_CALIBRATION_*), u32 pairs, u64 inside,
	 * u64 outside (sums of ticks over the pairs; docs/format.md). */
	HP_REC_CALIBRATION = 14,
};
#define HP_FILTER_FIXED_SIZE 32u

enum { HP_CALIBRATION_START = 0, HP_CALIBRATION_END = 1 };

/* Strings of the control API: ids below this; a mark's text at most this long. */
#define HP_STRINGS_MAX (1u << 16)
#define HP_STRING_BYTES 256u

/* PARENT flags. */
enum hp_parent_flags {
	HP_PARENT_FORKED = 1, /* a forked copy of a traced process (its trace is named) */
	HP_PARENT_FRAMES = 2, /* stream 0 begins with an enter of each frame open at the fork */
};

enum hp_clock_source {
	HP_CLOCK_TSC = 1,       /* x86-64 rdtsc, invariant */
	HP_CLOCK_MONOTONIC = 2, /* clock_gettime(CLOCK_MONOTONIC_RAW) in ns */
};

/* What follows the PROCESS record's argv (1.1, optional: absent in older
 * traces, which a reader tells by the bytes left): the buffer per thread
 * (u64 bytes), the clock's smallest step seen (u32 ticks, 0 unknown), and a
 * reserved u32. */
#define HP_PROCESS_TAIL_SIZE 16u

/* Flags of CRASH and STACK records (1.1). */
enum hp_stack_flags {
	HP_STACK_TRUNCATED = 1, /* more frames than the record holds */
	HP_STACK_NO_ROOT = 2,   /* STACK: the first event's frame was not found;
				   the frames start inside hookprof */
};

/* Stream id of LOST records that belong to no thread. */
#define HP_STREAM_NONE 0xffffffffu

enum hp_lost_reason {
	HP_LOST_RING = 1,      /* ring mode overwrote the oldest events */
	HP_LOST_REENTRY = 2,   /* event raised by hookprof's own slow path */
	HP_LOST_NO_BUFFER = 3, /* the thread's buffer could not be allocated */
	HP_LOST_LATE = 4,      /* event after the thread's or process's final flush */
	HP_LOST_UNFILLED = 5,  /* a slot taken and never filled: its hook's signal
				  handler did not return in time (hp_buffer_await_fill) */
};

/*
 * Event stream encoding (payload of HP_REC_EVENTS after its 8-byte head).
 * Per stream the reader keeps the last tick and a stack of open function
 * indices; across the whole file it keeps the function dictionary, which
 * HP_OP_DEFINE extends one index at a time (0, 1, 2, ...).
 *
 *   1ddddddd            exit of the top frame, tick += d
 *   00iiiiii [u idx] u  enter function i (i == 63: index follows), tick += u
 *   01000000 s          exit of the top frame, tick += s (any delta)
 *   01000001 u s        exit of function u, not the top frame (see below)
 *   01000010 u s        enter function u, tick += s (any delta)
 *   01000011 u          define the next function index as address u
 *   01000100            reset: forget open frames, next delta is absolute
 *
 * 1.2, the control API (hookprof.h); none of them opens or closes a
 * function frame, and each counts as one event:
 *   01000101 s          pause of the thread, tick += s
 *   01000110 s          resume
 *   01000111 s          stop of the whole process (hookprof_stop)
 *   01001000 s          start again (hookprof_start)
 *   01001001 u s        begin of the region named by string u
 *   01001010 u s        end of the region named by string u
 *   01001011 u s        mark whose text is string u
 *   01001100 u s w      value named by string u: its low 32 bits w
 *   01001101 u s w      its high 32 bits w, right after the low ones
 *
 * 1.3:
 *   01001110 s          hookprof's own time: from the thread's previous
 *                       event to this tick the thread ran hookprof (a chunk
 *                       switch, its buffer's start); cut out like a pause
 *
 * u is an unsigned LEB128 varint, s a zigzag-encoded signed varint.
 */
#define HP_OP_EXIT_SHORT 0x80u
#define HP_OP_ENTER_SHORT_MAX 63u
#define HP_OP_EXIT_LONG 0x40u
#define HP_OP_EXIT_FN 0x41u
#define HP_OP_ENTER_LONG 0x42u
#define HP_OP_DEFINE 0x43u
#define HP_OP_RESET 0x44u
#define HP_OP_PAUSE 0x45u
#define HP_OP_RESUME 0x46u
#define HP_OP_STOP 0x47u
#define HP_OP_START 0x48u
#define HP_OP_REGION_BEGIN 0x49u
#define HP_OP_REGION_END 0x4au
#define HP_OP_MARK 0x4bu
#define HP_OP_VALUE_LO 0x4cu
#define HP_OP_VALUE_HI 0x4du
#define HP_OP_OWN 0x4eu
#define HP_VARINT_MAX 10

/* Worst-case encoded size of one event, definitions included. */
#define HP_EVENT_MAX_BYTES (1 + 2 * HP_VARINT_MAX + 1 + HP_VARINT_MAX)

static inline uint8_t *hp_put_uvarint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t hp_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t hp_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Returns the byte after the varint, or NULL if it runs past end or is too long. */
static inline const uint8_t *hp_get_uvarint(const uint8_t *p, const uint8_t *end,
					    uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return p;
		}
	}
	return NULL;
}

/*
 * An exit that is not of the top frame closes every frame above the newest
 * frame of that function too (longjmp, or an exception unwinding through code
 * that was not instrumented). If the function is not on the stack at all, the
 * exit is of a frame entered before the stream began, and the stack stays.
 * Writer and reader both apply this rule to stay in step; returns the depth
 * after the exit, or `depth` unchanged when not found.
 */
static inline size_t hp_stack_unwind_to(const uint32_t *stack, size_t depth,
					uint32_t func)
{
	for (size_t i = depth; i > 0; i--)
		if (stack[i - 1] == func)
			return i - 1;
	return depth;
}

/* The same rule on the runtime's side, where frames are addresses. */
static inline size_t hp_stack_unwind_to_addr(const uint64_t *stack, size_t depth, uint64_t addr)
{
	for (size_t i = depth; i > 0; i--)
		if (stack[i - 1] == addr)
			return i - 1;
	return depth;
}

/* Little-endian stores and loads; x86-64 and aarch64 Linux are little-endian. */
static inline void hp_le32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void hp_le64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t hp_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t hp_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#endif
