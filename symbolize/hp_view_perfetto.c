/*
 * hp_view_perfetto.c - Perfetto's native trace format (protobuf
 * TracePackets of TrackEvents), for the Perfetto UI and trace_processor:
 * what a trace too large for Chrome's JSON needs. Encoded by protobuf-c
 * from hp_perfetto.proto, the few messages of Perfetto's format used here.
 *
 * Each thread is a packet sequence of its own (trusted_packet_sequence_id
 * its view id + 1) with a thread track under its process's track. Its
 * first packets describe the tracks and clear its incremental state: the
 * track its events go to by default, and a sequence clock (id 64) whose
 * packets' timestamps are deltas from the previous packet's, anchored to
 * BOOTTIME at the thread's first event. Each call is then a SLICE_BEGIN
 * and a SLICE_END packet of a few bytes: the delta, the type, and at the
 * begin the interned id of the function's name, its name interned in the
 * first packet of the sequence that uses it.
 *
 * Written as it comes: a Trace of one packet per event (protobuf merges
 * the Traces into one), through a small buffer. Memory grows with threads
 * and functions, never with events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hp_drive.h"
#include "hp_perfetto.pb-c.h"

#define CLOCK_BOOTTIME 6
#define CLOCK_SEQUENCE 64 /* 64-127: a sequence's own clocks */
#define UUID_PROCESS 0x1000000000000000ull
#define UUID_THREAD 0x2000000000000000ull
#define UUID_COUNTER 0x3000000000000000ull
#define FLUSH_AT (1u << 16)

struct pthread_state {
	uint8_t *interned; /* per function: its name interned on this sequence */
	size_t ninterned;
	uint64_t last;     /* ns of the sequence's last packet */
};

struct process_key {
	uint32_t trace, pid;
};

/* A value's name in a process: a counter track. */
struct counter_key {
	uint32_t trace, pid;
	char *name;
};

struct perfetto {
	uint8_t *buf;
	size_t used, cap;
	struct process_key *procs; /* those whose track is written */
	size_t nprocs, procs_cap;
	struct counter_key *counters; /* those whose track is written; uuid by index */
	size_t ncounters, counters_cap;
};

static int open_perfetto(struct hp_view *v, char *err, size_t errlen)
{
	struct perfetto *p = calloc(1, sizeof(*p));
	if (p)
		p->buf = malloc(p->cap = 2 * FLUSH_AT);
	if (!p || !p->buf) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v->state = p;
	return 0;
}

static int flush(struct hp_view *v)
{
	struct perfetto *p = v->state;
	if (p->used && fwrite(p->buf, 1, p->used, v->out) != p->used)
		return -1;
	p->used = 0;
	return 0;
}

/* Appends the packet as a Trace of one packet: the Traces concatenated
 * are one Trace whose packets are theirs, in order. bound: at least its
 * packed size, or 0 to measure it (an event's is known without: measuring
 * takes as long as packing). */
static int put_bounded(struct hp_view *v, Perfetto__Protos__TracePacket *pk, size_t bound)
{
	struct perfetto *p = v->state;
	Perfetto__Protos__Trace trace = PERFETTO__PROTOS__TRACE__INIT;
	trace.n_packet = 1;
	trace.packet = &pk;
	size_t n = bound ? bound : perfetto__protos__trace__get_packed_size(&trace);
	if (p->used + n > p->cap) {
		if (flush(v))
			return -1;
		if (n > p->cap) {
			uint8_t *b = realloc(p->buf, n);
			if (!b)
				return -1;
			p->buf = b;
			p->cap = n;
		}
	}
	p->used += perfetto__protos__trace__pack(&trace, p->buf + p->used);
	return p->used >= FLUSH_AT ? flush(v) : 0;
}

static int put(struct hp_view *v, Perfetto__Protos__TracePacket *pk) { return put_bounded(v, pk, 0); }

/* An event packet's packed size is at most this and its interned name:
 * each varint at most 10 bytes, each tag and length at most 2 (3 for the
 * Trace's and the interned data's). */
#define EVENT_BOUND 128

static uint64_t process_uuid(const struct hp_vthread *t)
{
	return UUID_PROCESS | (uint64_t)t->trace << 32 | t->pid;
}

static uint64_t thread_uuid(const struct hp_vthread *t) { return UUID_THREAD | t->id; }

static Perfetto__Protos__TracePacket packet_of(const struct hp_vthread *t)
{
	Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.has_trusted_packet_sequence_id = 1;
	pk.trusted_packet_sequence_id = t->id + 1;
	return pk;
}

static int put_process_track(struct hp_view *v, const struct hp_vthread *t)
{
	struct perfetto *p = v->state;
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].trace == t->trace && p->procs[i].pid == t->pid)
			return 0;
	if (p->nprocs == p->procs_cap) {
		size_t cap = p->procs_cap ? p->procs_cap * 2 : 8;
		struct process_key *k = realloc(p->procs, cap * sizeof(*k));
		if (!k)
			return -1;
		p->procs = k;
		p->procs_cap = cap;
	}
	p->procs[p->nprocs++] = (struct process_key){ t->trace, t->pid };
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	pd.has_pid = 1;
	pd.pid = (int32_t)t->pid;
	pd.process_name = (char *)(t->process ? t->process : "");
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = 1;
	td.uuid = process_uuid(t);
	td.process = &pd;
	Perfetto__Protos__TracePacket pk = packet_of(t);
	pk.track_descriptor = &td;
	return put(v, &pk);
}

/* Also at the end, when the thread's name is known (the runtime names a
 * thread when it ends): a later descriptor of a track renames it. */
static int put_thread_track(struct hp_view *v, const struct hp_vthread *t)
{
	Perfetto__Protos__ThreadDescriptor th = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	th.has_pid = th.has_tid = 1;
	th.pid = (int32_t)t->pid;
	th.tid = (int32_t)t->tid;
	if (t->name[0])
		th.thread_name = (char *)t->name;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = td.has_parent_uuid = 1;
	td.uuid = thread_uuid(t);
	td.parent_uuid = process_uuid(t);
	td.thread = &th;
	Perfetto__Protos__TracePacket pk = packet_of(t);
	pk.track_descriptor = &td;
	return put(v, &pk);
}

/* Clears the sequence's state: its default track, and its clock of
 * deltas anchored at ns on BOOTTIME. */
static int put_sequence_start(struct hp_view *v, const struct hp_vthread *t, uint64_t ns)
{
	Perfetto__Protos__ClockSnapshot__Clock boot = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock seq = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[] = { &boot, &seq };
	boot.has_clock_id = boot.has_timestamp = 1;
	boot.clock_id = CLOCK_BOOTTIME;
	boot.timestamp = ns;
	seq.has_clock_id = seq.has_timestamp = seq.has_is_incremental = 1;
	seq.clock_id = CLOCK_SEQUENCE;
	seq.timestamp = ns;
	seq.is_incremental = 1;
	Perfetto__Protos__ClockSnapshot snap = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	snap.n_clocks = 2;
	snap.clocks = clocks;
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	ted.has_track_uuid = 1;
	ted.track_uuid = thread_uuid(t);
	Perfetto__Protos__TracePacketDefaults defaults = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	defaults.has_timestamp_clock_id = 1;
	defaults.timestamp_clock_id = CLOCK_SEQUENCE;
	defaults.track_event_defaults = &ted;
	Perfetto__Protos__TracePacket pk = packet_of(t);
	pk.has_timestamp = pk.has_timestamp_clock_id = pk.has_sequence_flags = 1;
	pk.timestamp = ns;
	pk.timestamp_clock_id = CLOCK_BOOTTIME;
	pk.sequence_flags = PERFETTO__PROTOS__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
	pk.trace_packet_defaults = &defaults;
	pk.clock_snapshot = &snap;
	return put(v, &pk);
}

static uint64_t ns_of(double ns) { return ns > 0 ? (uint64_t)llround(ns) : 0; }

static struct pthread_state *start_thread(struct hp_view *v, struct hp_vthread *t, uint64_t ns)
{
	struct pthread_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	t->data = s;
	s->last = ns;
	if (put_process_track(v, t) || put_thread_track(v, t) || put_sequence_start(v, t, ns))
		return NULL;
	return s;
}

/* An event packet of the thread's sequence at `at`: its timestamp, a
 * delta on the sequence's clock. NULL out of memory or output. */
static struct pthread_state *event_packet(struct hp_view *v, struct hp_vthread *t, double at,
					  Perfetto__Protos__TracePacket *pk)
{
	struct pthread_state *s = t->data;
	uint64_t ns = ns_of(at);
	if (!s && !(s = start_thread(v, t, ns)))
		return NULL;
	/* Rounding can put an event a nanosecond before the last one. */
	uint64_t delta = ns > s->last ? ns - s->last : 0;
	s->last += delta;
	*pk = packet_of(t);
	pk->has_timestamp = pk->has_sequence_flags = 1;
	pk->timestamp = delta;
	pk->sequence_flags = PERFETTO__PROTOS__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	return s;
}

static int put_event(struct hp_view *v, struct hp_vthread *t, uint32_t fn, double at, int begin)
{
	Perfetto__Protos__TracePacket pk;
	struct pthread_state *s = event_packet(v, t, at, &pk);
	if (!s)
		return -1;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	ev.has_type = 1;
	ev.type = begin ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
			: PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	pk.track_event = &ev;
	Perfetto__Protos__EventName name = PERFETTO__PROTOS__EVENT_NAME__INIT;
	Perfetto__Protos__EventName *names[] = { &name };
	Perfetto__Protos__InternedData interned = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	size_t bound = EVENT_BOUND;
	if (begin) {
		ev.has_name_iid = 1;
		ev.name_iid = (uint64_t)fn + 1; /* 0 is no name */
		if (fn >= s->ninterned) {
			size_t n = s->ninterned ? s->ninterned : 64;
			while (n <= fn)
				n *= 2;
			uint8_t *q = realloc(s->interned, n);
			if (!q)
				return -1;
			memset(q + s->ninterned, 0, n - s->ninterned);
			s->interned = q;
			s->ninterned = n;
		}
		if (!s->interned[fn]) {
			s->interned[fn] = 1;
			name.has_iid = 1;
			name.iid = ev.name_iid;
			name.name = (char *)hp_fntab_name(hp_drive_fns(v->d), fn);
			bound += 3 * 10 + strlen(name.name); /* its lengths, at most 10 bytes each */
			interned.n_event_names = 1;
			interned.event_names = names;
			pk.interned_data = &interned;
		}
	}
	return put_bounded(v, &pk, bound);
}

static int enter_perfetto(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	return put_event(v, t, f->fn, f->start, 1);
}

/* A lost exit (a gap in the trace) still ends its slice, at the last tick
 * known before the gap, so that the slices nest. */
static int exit_perfetto(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	return put_event(v, t, f->fn, f->end, 0);
}

/* The uuid of the counter track of the value `name` in t's process, its
 * descriptor written at its first use (the process's track is, as t has
 * an event already). 0 out of memory or output. */
static uint64_t counter_track(struct hp_view *v, const struct hp_vthread *t, const char *name)
{
	struct perfetto *p = v->state;
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct counter_key *k = &p->counters[i];
		if (k->trace == t->trace && k->pid == t->pid && !strcmp(k->name, name))
			return UUID_COUNTER | i;
	}
	if (p->ncounters == p->counters_cap) {
		size_t cap = p->counters_cap ? p->counters_cap * 2 : 8;
		struct counter_key *k = realloc(p->counters, cap * sizeof(*k));
		if (!k)
			return 0;
		p->counters = k;
		p->counters_cap = cap;
	}
	struct counter_key *k = &p->counters[p->ncounters];
	if (!(k->name = strdup(name)))
		return 0;
	k->trace = t->trace;
	k->pid = t->pid;
	uint64_t uuid = UUID_COUNTER | p->ncounters++;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = td.has_parent_uuid = 1;
	td.uuid = uuid;
	td.parent_uuid = process_uuid(t);
	td.name = (char *)name;
	td.counter = &cd;
	Perfetto__Protos__TracePacket pk = packet_of(t);
	pk.track_descriptor = &td;
	return put(v, &pk) ? 0 : uuid;
}

/* A mark is an instant event on its thread's track, named by its text; a
 * value, a counter event on the counter track of its name and process. */
static int note_perfetto(struct hp_view *v, struct hp_vthread *t, const struct hp_vnote *n)
{
	Perfetto__Protos__TracePacket pk;
	if (!event_packet(v, t, n->at, &pk))
		return -1;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	ev.has_type = 1;
	if (n->kind == HP_NOTE_MARK) {
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
		ev.name = (char *)n->text;
	} else {
		uint64_t uuid = counter_track(v, t, n->text);
		if (!uuid)
			return -1;
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
		ev.has_track_uuid = ev.has_counter_value = 1;
		ev.track_uuid = uuid;
		ev.counter_value = n->value;
	}
	pk.track_event = &ev;
	return put(v, &pk);
}

static int end_perfetto(struct hp_view *v, char *err, size_t errlen)
{
	int rc = 0;
	for (uint32_t i = 0; !rc && i < hp_drive_nthreads(v->d); i++) {
		const struct hp_vthread *t = hp_drive_thread(v->d, i);
		if (t->data && t->name[0])
			rc = put_thread_track(v, t);
	}
	if (!rc)
		rc = flush(v);
	if (rc)
		snprintf(err, errlen, "out of memory, or the output could not be written");
	return rc;
}

static void free_pthread_state(void *data)
{
	struct pthread_state *s = data;
	free(s->interned);
	free(s);
}

static void close_perfetto(struct hp_view *v)
{
	struct perfetto *p = v->state;
	if (p) {
		free(p->buf);
		free(p->procs);
		for (size_t i = 0; i < p->ncounters; i++)
			free(p->counters[i].name);
		free(p->counters);
	}
	free(p);
	v->state = NULL;
}

const struct hp_view_ops hp_view_perfetto = {
	.name = "perfetto",
	.summary = "Perfetto protobuf trace (slices per thread, marks, value counters), for ui.perfetto.dev and trace_processor",
	.flags = HP_VIEW_EXPORT | HP_VIEW_BINARY | HP_VIEW_NAMES_FIRST,
	.open = open_perfetto,
	.enter = enter_perfetto,
	.exit = exit_perfetto,
	.note = note_perfetto,
	.end = end_perfetto,
	.thread_free = free_pthread_state,
	.close = close_perfetto,
};
