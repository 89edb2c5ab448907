/*
 * hp_trace.h - reading a trace file (docs/format.md): the file header, then
 * one record at a time, with every length checked against the file.
 */
#ifndef HP_TRACE_H
#define HP_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hp_segment {
	uint64_t start; /* run-time address */
	uint64_t size;
	uint64_t offset; /* in the file */
	uint32_t flags;  /* PF_R | PF_W | PF_X */
};

struct hp_module {
	uint64_t bias; /* load bias: run-time address minus ELF address */
	char *path;
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint32_t nseg;
	struct hp_segment *seg;
};

struct hp_stream_info {
	uint32_t stream;
	uint32_t tid;
	char name[64];
	uint64_t events;
	uint64_t lost;
	uint64_t first_tick, last_tick;
	int seen;
};

/* What a whole trace says about itself, gathered as the records go by. */
struct hp_trace_info {
	uint32_t pid;
	uint32_t clock_source;
	uint32_t flags; /* bit 0: ring mode */
	uint64_t start_realtime_ns;
	char *exe;
	char **argv;
	uint32_t argc;
	struct hp_module *modules; /* union of every MODULES snapshot */
	size_t nmodules;
	struct hp_stream_info *streams; /* indexed by stream id */
	size_t nstreams;
	uint64_t clock_tick[2], clock_ns[2]; /* first and last CLOCK pairs */
	int nclocks;
	uint64_t lost_global;
	int has_end;
	uint64_t end_events, end_lost;
	uint32_t stream_limit; /* stream ids from here on are corrupt; 0: HP_STREAMS_MAX */
};

#define HP_STREAMS_MAX (1u << 24)
/* The stream_limit for a file of `size` bytes. */
uint32_t hp_trace_stream_limit(uint64_t size);

struct hp_reader;

/* Opens and checks the header; NULL with a one-line reason in err. */
struct hp_reader *hp_reader_open(const char *path, char *err, size_t errlen);
/* 1 with the next record, 0 at the end of the file, -1 with a reason in err. */
int hp_reader_next(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
		   uint32_t *size, char *err, size_t errlen);
void hp_reader_close(struct hp_reader *r);
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

/* Ticks to nanoseconds since the first CLOCK record. */
struct hp_timebase {
	uint64_t tick0;
	double ns_per_tick;
};
int hp_trace_timebase(const struct hp_trace_info *info, struct hp_timebase *tb);
static inline double hp_ticks_to_ns(const struct hp_timebase *tb, uint64_t ticks)
{
	return (double)ticks * tb->ns_per_tick;
}

#endif
