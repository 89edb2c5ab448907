/*
 * hp_trace.h - reading a trace file (docs/format.md): the file header, then
 * one record at a time, with every length checked against the file.
 */
#ifndef HP_TRACE_H
#define HP_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hp_format.h"

struct hp_segment {
	uint64_t start; /* run-time address */
	uint64_t size;
	uint64_t offset; /* in the file */
	uint32_t flags;  /* PF_R | PF_W | PF_X */
};

/* A stretch of ticks [from, to) while a module was loaded. */
struct hp_life {
	uint64_t from, to;
};
#define HP_TICK_NEVER UINT64_MAX

/* One object at one load address, however often it was loaded there. */
struct hp_module {
	uint64_t bias; /* load bias: run-time address minus ELF address */
	char *path;
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint32_t nseg;
	struct hp_segment *seg;
	/* When it was loaded, oldest first. A life begins at the last snapshot
	 * that did not list the module (0: the first snapshot did) and ends at
	 * the first that no longer does (MODULES_AT records); without those
	 * records, one life spans the whole run. */
	struct hp_life *life;
	uint32_t nlives;
	uint32_t listed; /* internal: the snapshot that last listed it */
};

/* The reader's bookkeeping for the module map as of a moment. */
struct hp_module_clock {
	uint64_t tick;      /* of the last complete snapshot; 0 before the first */
	uint32_t serial;    /* number of the snapshot being read, from 1 */
	uint32_t listed;    /* modules it listed so far */
	uint32_t *alive;    /* modules with an open life */
	size_t nalive, alive_cap;
	uint32_t *slot;     /* hash of (bias, path): module index + 1, 0 empty */
	size_t slot_cap;    /* a power of two, or 0 */
	int read_ahead;     /* the map was read before the events: MODULES and
			     * MODULES_AT records are not folded in again */
};

/* Raw addresses taken with libunwind (CRASH and STACK records). */
struct hp_stack {
	uint64_t *pc; /* frame 0 first; later frames are return addresses */
	uint32_t n;
	uint32_t flags; /* enum hp_stack_flags (hp_format.h) */
};

/* The fatal signal that ended the process (CRASH record). */
struct hp_crash {
	int present;
	uint32_t stream; /* HP_STREAM_NONE: a thread without events */
	uint32_t tid;
	uint32_t signal;
	int32_t code; /* si_code */
	uint64_t addr;
	uint64_t unwind_ns;
	struct hp_stack stack;
};

struct hp_stream_info {
	uint32_t stream;
	uint32_t tid;
	char name[64];
	uint64_t events;
	uint64_t lost;
	uint64_t first_tick, last_tick;
	int seen;
	struct hp_stack root; /* STACK record: its first frame and the callers above */
};

/* What a whole trace says about itself, gathered as the records go by. */
struct hp_trace_info {
	uint32_t pid;
	uint32_t clock_source;
	uint32_t flags; /* bit 0: ring mode */
	uint64_t start_realtime_ns;
	uint64_t buffer_bytes; /* per thread; 0: not in the trace (older runtime) */
	uint32_t clock_step;   /* smallest clock step seen, in ticks; 0: unknown */
	char *exe;
	char **argv;
	uint32_t argc;
	struct hp_module *modules; /* union of every MODULES snapshot */
	size_t nmodules;
	size_t modules_cap; /* room allocated for modules */
	struct hp_module_clock modclock;
	struct hp_stream_info *streams; /* indexed by stream id */
	size_t nstreams;
	uint64_t clock_tick[2], clock_ns[2]; /* first and last CLOCK pairs */
	int nclocks;
	/* The same, from the whole file, read ahead of the events with the
	 * module map: views that print as they go need the timebase first. */
	uint64_t ahead_tick[2], ahead_ns[2];
	int nahead;
	uint64_t lost_global;
	/* Every LOST record's count by its reason (HP_LOST_*); [0]: a reason
	 * this reader does not know. */
	uint64_t lost_by_reason[HP_LOST_UNFILLED + 1];
	int has_end;
	uint64_t end_events, end_lost;
	uint32_t stream_limit; /* stream ids from here on are corrupt; 0: HP_STREAMS_MAX */
	struct hp_crash crash;
	/* PARENT (format 1.1; absent in older traces: has_parent 0). */
	int has_parent;
	uint32_t parent_pid;
	uint32_t parent_flags; /* HP_PARENT_* */
	uint64_t fork_tick;
	char *parent_trace;    /* "" unless forked */
	/* STRING records (format 1.2): the control API's names and texts,
	 * by id; NULL where none was read. */
	char **strings;
	uint32_t nstrings;     /* room in strings */
	/* CALIBRATION records (format 1.3), [HP_CALIBRATION_START] and [_END]:
	 * a hook pair's cost in ticks per pair; pairs 0 where none was read. */
	struct hp_calib {
		uint32_t pairs;
		double inside, outside;
	} calib[2];
	/* FILTER (format 1.3; the last one read; absent: has_filter 0): what
	 * the run was asked to leave out, and what MIN left out. */
	int has_filter;
	uint64_t filter_min_ns;
	uint64_t filter_min_calls;
	uint64_t filter_min_ticks;
	uint32_t filter_depth;
	char *filter_exclude; /* "" if not set */
	char *filter_include;
};

/* A hook pair's cost as measured at the start and the end of the run
 * (their mean if both), in ticks: 0 if the trace has no calibration. */
int hp_trace_hook_cost(const struct hp_trace_info *info, double *inside, double *outside);

/* String `id` of the trace (STRING records), or NULL if it has none. */
static inline const char *hp_trace_string(const struct hp_trace_info *info, uint32_t id)
{
	return id < info->nstrings ? info->strings[id] : NULL;
}

/* The filters of a trace (FILTER record) as one line: "exclude 'RE',
 * include 'RE', depth 3, min 1000 ns"; "" if it has none. */
void hp_trace_filters_text(const struct hp_trace_info *info, char *buf, size_t len);

#define HP_STREAMS_MAX (1u << 24)
/* More frames in a CRASH or STACK record is corruption (the runtime writes 256). */
#define HP_STACK_FRAMES_MAX 4096u
/* The stream_limit for a file of `size` bytes. */
uint32_t hp_trace_stream_limit(uint64_t size);

struct hp_reader;

/* Opens and checks the header; NULL with a one-line reason in err. */
struct hp_reader *hp_reader_open(const char *path, char *err, size_t errlen);
/* 1 with the next record, 0 at the end of the file, -1 with a reason in err. */
int hp_reader_next(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
		   uint32_t *size, char *err, size_t errlen);
/* The same, but of an EVENTS record only the first events_head bytes of its
 * payload are read (*size is still the whole payload's): a reader that
 * wants the records' stream and count passes over their events. */
int hp_reader_next_head(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
			uint32_t *size, uint32_t events_head, char *err, size_t errlen);
/* Where the next record begins: the bytes read so far. */
uint64_t hp_reader_offset(const struct hp_reader *r);
void hp_reader_close(struct hp_reader *r);
/* Where the payload of the record hp_reader_next returned last lies in the
 * file: for reading it again later (hp_merge.h). */
uint64_t hp_reader_payload_at(const struct hp_reader *r);
uint64_t hp_reader_size(const struct hp_reader *r);
/* After hp_reader_next failed: where the file was cut, if it failed on an
 * incomplete last record (its header, or a payload of a valid size running
 * past the end); 0 if it failed otherwise. Every record before was whole. */
uint64_t hp_reader_cut_at(const struct hp_reader *r);

/* Folds a non-EVENTS record into info. 0, or -1 with a reason. */
int hp_trace_info_add(struct hp_trace_info *info, uint32_t type, const uint8_t *payload,
		      uint32_t size, char *err, size_t errlen);
struct hp_stream_info *hp_trace_stream(struct hp_trace_info *info, uint32_t stream);
void hp_trace_info_free(struct hp_trace_info *info);
/* The events its threads lost, every stream's LOST records summed. */
uint64_t hp_trace_lost_in_threads(const struct hp_trace_info *info);
/*
 * Reads the whole module map of the trace at path (every MODULES and
 * MODULES_AT record up to END) into info, before its events are decoded:
 * which object an address named at a given tick needs the snapshots written
 * after it too. The CLOCK records go to info's ahead_* fields, the
 * CALIBRATION records to calib. 0; -1 if the file cannot be read to its
 * end, with info unchanged (reading it record by record then meets the
 * same error).
 */
int hp_trace_read_module_map(const char *path, struct hp_trace_info *info, char *err,
			     size_t errlen);
/* 1 if module m was loaded at tick. */
int hp_module_loaded_at(const struct hp_module *m, uint64_t tick);

/* Ticks to nanoseconds since the first CLOCK record. */
struct hp_timebase {
	uint64_t tick0;
	double ns_per_tick;
};
int hp_trace_timebase(const struct hp_trace_info *info, struct hp_timebase *tb);
/* The same from the CLOCK records read ahead (hp_trace_read_module_map),
 * once the PROCESS record has given the clock source. */
int hp_trace_timebase_ahead(const struct hp_trace_info *info, struct hp_timebase *tb);
static inline double hp_ticks_to_ns(const struct hp_timebase *tb, uint64_t ticks)
{
	return (double)ticks * tb->ns_per_tick;
}

#endif
