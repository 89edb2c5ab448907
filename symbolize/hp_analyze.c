/*
 * hp_analyze.c - reader, decoder and profile in one pass.
 */
#include "hp_analyze.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"

struct pass {
	struct hp_analysis *a;
	struct hp_dec_stream *dec;
	size_t ndec;
	struct hp_evbuf evbuf;
	struct hp_funcs dict;        /* the trace's dictionary: index -> address */
	struct hp_funcmap *funcmap;  /* index (and tick) -> function id */
	hp_event_fn on_events;
	void *arg;
	int flags;
	struct hp_record_index *index; /* NULL: not asked for */
	uint64_t payload_at;           /* of the EVENTS record being read */
	hp_read_progress_fn progress;
	void *progress_arg;
};

static struct hp_dec_stream *decoder_of(struct pass *ps, uint32_t stream)
{
	if (stream >= ps->ndec) {
		size_t n = (size_t)stream + 8;
		struct hp_dec_stream *d = realloc(ps->dec, n * sizeof(*d));
		if (!d)
			return NULL;
		memset(d + ps->ndec, 0, (n - ps->ndec) * sizeof(*d));
		ps->dec = d;
		ps->ndec = n;
	}
	return &ps->dec[stream];
}

/* The decoded events name dictionary indices; views count functions. */
static int to_functions(struct pass *ps)
{
	struct hp_analysis *a = ps->a;
	/* Without the map read ahead (the file fails before its end), the
	 * modules may still grow: none are looked at. */
	int ahead = a->info.modclock.read_ahead;
	if (!ps->funcmap &&
	    !(ps->funcmap = hp_funcmap_new(a->info.modules, ahead ? a->info.nmodules : 0)))
		return -1;
	struct hp_functions out = { &a->funcs, &a->func_module };
	return hp_funcmap_apply(ps->funcmap, &ps->dict, ps->evbuf.ev, ps->evbuf.n,
				ps->evbuf.regions, out);
}

static int profile(struct pass *ps, uint32_t stream)
{
	struct hp_analysis *a = ps->a;
	if (ps->flags & HP_ANALYZE_EVENTS_ONLY)
		return 0;
	if (ps->flags & HP_ANALYZE_NO_PROFILE)
		return hp_profile_touch_piece(&a->prof, stream, &ps->evbuf);
	return hp_profile_feed(&a->prof, stream, ps->evbuf.ev, ps->evbuf.n, a->funcs.n);
}

/* A stream's first event is its earliest (ticks only grow within it). */
static void note_first_tick(struct hp_analysis *a, struct hp_stream_info *si,
			    const struct hp_evbuf *b)
{
	if (si->events || !b->n || b->ev[0].kind == HP_EV_RESET)
		return;
	si->first_tick = b->ev[0].tick;
	if (!a->has_first_tick || si->first_tick < a->first_tick)
		a->first_tick = si->first_tick;
	a->has_first_tick = 1;
}

static int index_record(struct pass *ps, uint32_t stream, uint32_t size)
{
	struct hp_record_index *ix = ps->index;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 1024;
		struct hp_record_at *r = realloc(ix->rec, cap * sizeof(*r));
		if (!r)
			return -1;
		ix->rec = r;
		ix->cap = cap;
	}
	ix->rec[ix->n++] = (struct hp_record_at){ .offset = ps->payload_at, .size = size,
						  .stream = stream, .ndict = ps->dict.n };
	return 0;
}

/* ---- region repairs ------------------------------------------------------ */

static int add_warning(struct hp_analysis *a, const char *line)
{
	if (a->nwarnings == HP_WARNINGS_MAX) {
		a->warnings_more++;
		return 0;
	}
	char **w = realloc(a->warnings, (a->nwarnings + 1) * sizeof(*w));
	if (!w)
		return -1;
	a->warnings = w;
	if (!(w[a->nwarnings] = strdup(line)))
		return -1;
	a->nwarnings++;
	return 0;
}

static int region_warning(struct hp_analysis *a, uint32_t stream, uint32_t name, int why)
{
	static const char *const what[] = {
		[HP_REPAIR_NO_BEGIN] = "ended without a begin (the end is ignored)",
		[HP_REPAIR_NOT_ENDED] = "not ended when its function returned (ended there)",
		[HP_REPAIR_OUT_OF_ORDER] = "still open when an enclosing region ended (ended there)",
		[HP_REPAIR_NEVER_ENDED] = "never ended (ended at the thread's last event)",
	};
	const char *text = hp_trace_string(&a->info, name);
	const struct hp_stream_info *si = stream < a->info.nstreams ? &a->info.streams[stream] : NULL;
	char line[512], thread[96];
	if (si && si->name[0])
		snprintf(thread, sizeof(thread), "%u (%s)", si->tid, si->name);
	else
		snprintf(thread, sizeof(thread), "%u", si ? si->tid : 0);
	snprintf(line, sizeof(line), "region [%s] on thread %s: %s", text ? text : "?", thread,
		 what[why]);
	return add_warning(a, line);
}

static int region_repairs(struct hp_analysis *a, uint32_t stream, const struct hp_evbuf *b)
{
	const struct hp_ev *ev = b->ev;
	for (size_t i = 0; b->regions && i < b->n; i++)
		if (ev[i].kind == HP_EV_REGION_REPAIR && region_warning(a, stream, ev[i].func, (int)ev[i].value))
			return -1;
	return 0;
}

/* Regions open at a stream's end: the profile closes them as it does
 * functions, at the stream's last tick. */
static int unended_regions(struct pass *ps)
{
	for (size_t i = 0; i < ps->ndec; i++)
		for (size_t k = 0; k < ps->dec[i].depth; k++) {
			uint32_t f = ps->dec[i].stack[k];
			if (hp_is_region_func(f) &&
			    region_warning(ps->a, (uint32_t)i, f - HP_REGION_FUNC, HP_REPAIR_NEVER_ENDED))
				return -1;
		}
	return 0;
}

static int events_record(struct pass *ps, const uint8_t *payload, uint32_t size, char *err,
			 size_t errlen)
{
	struct hp_analysis *a = ps->a;
	if (size < 8) {
		snprintf(err, errlen, "corrupt events record");
		return -1;
	}
	uint32_t stream = hp_rd32(payload), nevents = hp_rd32(payload + 4);
	/* hp_trace_stream refuses ids the file is too small to hold. */
	struct hp_stream_info *si = hp_trace_stream(&a->info, stream);
	struct hp_dec_stream *d = si ? decoder_of(ps, stream) : NULL;
	if (!d || !si) {
		snprintf(err, errlen, "corrupt events record (stream %u)", stream);
		return -1;
	}
	if (ps->index && index_record(ps, stream, size)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* In pieces: the events of one record cost a bounded buffer however
	 * many they are. */
	struct hp_dec_record rec = hp_dec_record_of(payload + 8, size - 8);
	long n = 0;
	do {
		long got = hp_decode_piece(&ps->dict, d, &rec, HP_DECODE_PIECE, &ps->evbuf, err, errlen);
		if (got < 0)
			return -1;
		if (!n)
			note_first_tick(a, si, &ps->evbuf);
		n += got;
		if (to_functions(ps) || profile(ps, stream) ||
		    region_repairs(a, stream, &ps->evbuf)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		int said = ps->on_events ? ps->on_events(ps->arg, a, stream, ps->evbuf.ev, ps->evbuf.n) : 0;
		if (said == HP_ANALYZE_ENOUGH && (ps->flags & HP_ANALYZE_PREFIX))
			return HP_ANALYZE_ENOUGH;
		if (said) {
			snprintf(err, errlen, "cannot write the output");
			return -1;
		}
	} while (!hp_decode_done(d, &rec));
	if ((uint32_t)n != nevents) {
		snprintf(err, errlen, "corrupt events record (%ld events where %u were written)", n, nevents);
		return -1;
	}
	a->events += (uint64_t)n;
	si->events += (uint64_t)n;
	hp_profile_reached(&a->prof, stream, d->tick);
	return 0;
}

/* The last record was cut short (kill -9, or a trace still being
 * written): what comes before it can be read. */
static void suggest_partial(const struct hp_reader *r, char *err, size_t errlen)
{
	size_t len = strnlen(err, errlen);
	if (hp_reader_cut_at(r) && len + 1 < errlen)
		snprintf(err + len, errlen - len, "; --partial reads what comes before it");
}

static int read_all(struct pass *ps, struct hp_reader *r, int flags, char *err, size_t errlen)
{
	uint32_t type, size;
	const uint8_t *payload;
	int rc;
	while ((rc = hp_reader_next(r, &type, &payload, &size, err, errlen)) == 1) {
		ps->payload_at = hp_reader_payload_at(r);
		int bad = type == HP_REC_EVENTS
				  ? events_record(ps, payload, size, err, errlen)
				  : hp_trace_info_add(&ps->a->info, type, payload, size, err, errlen);
		if (bad == HP_ANALYZE_ENOUGH)
			return HP_ANALYZE_ENOUGH;
		if (bad)
			return -1;
		if (ps->progress)
			ps->progress(ps->progress_arg, hp_reader_offset(r), hp_reader_size(r));
		if (type == HP_REC_END)
			break;
	}
	if (rc < 0 && (flags & HP_ANALYZE_ALLOW_PARTIAL) && hp_reader_cut_at(r)) {
		ps->a->cut_at = hp_reader_cut_at(r);
		return 0;
	}
	if (rc < 0)
		suggest_partial(r, err, errlen);
	return rc < 0 ? -1 : 0;
}

/* Prefixes a reason that does not name the file yet. */
static int fail_in(const char *path, char *err, size_t errlen)
{
	if (strncmp(err, path, strlen(path))) {
		char reason[512];
		snprintf(reason, sizeof(reason), "%s", err);
		snprintf(err, errlen, "%s: %s", path, reason);
	}
	return -1;
}

/* The frames the crash left open, from the decoder's stack (the profile's
 * light account keeps none): a region's address is made of its string id,
 * as the function map makes it. */
static int keep_crash_open_frames(struct pass *ps)
{
	struct hp_analysis *a = ps->a;
	uint32_t stream = a->info.crash.stream;
	if (!a->info.crash.present || stream >= a->prof.nstreams || stream >= ps->ndec)
		return 0;
	const struct hp_dec_stream *s = &ps->dec[stream];
	a->crash_open = malloc((s->depth ? s->depth : 1) * sizeof(*a->crash_open));
	if (!a->crash_open)
		return -1;
	for (size_t i = 0; i < s->depth; i++) {
		uint32_t f = s->stack[i];
		a->crash_open[i] = hp_is_region_func(f) ? HP_REGION_ADDR(f - HP_REGION_FUNC) : ps->dict.addr[f];
	}
	a->ncrash_open = s->depth;
	return 0;
}

/* What a whole trace must have, read whole or only summarised: an END (or
 * --partial), as many events as END says (`how`: decoded or counted), and
 * a clock calibration. */
static int check_whole(struct hp_analysis *a, int flags, const char *how, char *err, size_t errlen)
{
	if (!a->info.has_end && !(flags & HP_ANALYZE_ALLOW_PARTIAL)) {
		snprintf(err, errlen, "incomplete trace: no end record (the program was killed, "
				      "or the file was cut short); --partial reports what it holds");
		return -1;
	}
	a->partial = !a->info.has_end;
	if (a->info.has_end && a->info.end_events != a->events) {
		snprintf(err, errlen, "corrupt trace: %llu events %s where %llu were written",
			 (unsigned long long)a->events, how, (unsigned long long)a->info.end_events);
		return -1;
	}
	if (hp_trace_timebase(&a->info, &a->tb)) {
		snprintf(err, errlen, "no clock calibration in the trace (the run ended before it could be written)");
		return -1;
	}
	return 0;
}

static int finish(struct pass *ps, int flags, char *err, size_t errlen)
{
	struct hp_analysis *a = ps->a;
	if (check_whole(a, flags, "decoded", err, errlen))
		return -1;
	if (keep_crash_open_frames(ps)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < a->prof.nstreams; i++)
		if (a->prof.streams[i].last_tick > a->last_tick)
			a->last_tick = a->prof.streams[i].last_tick;
	a->decoded = 1;
	hp_profile_finish(&a->prof);
	return 0;
}

/* ix: also note where each EVENTS record lies (NULL: not asked for). */
static int analyze(const char *path, int flags, hp_event_fn on_events, void *arg,
		   struct hp_record_index *ix, hp_read_progress_fn progress, void *progress_arg,
		   struct hp_analysis *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	a->path = path;
	hp_profile_init(&a->prof);
	struct hp_reader *r = hp_reader_open(path, err, errlen);
	if (!r)
		return -1;
	a->info.stream_limit = hp_trace_stream_limit(hp_reader_size(r));
	struct pass ps = { .a = a, .on_events = on_events, .arg = arg, .flags = flags, .index = ix,
			   .progress = progress, .progress_arg = progress_arg };
	/* Its failure is the main pass's to report, at the same record. */
	hp_trace_read_module_map(path, &a->info, err, errlen);
	int rc = read_all(&ps, r, flags, err, errlen);
	int enough = rc == HP_ANALYZE_ENOUGH;
	if (enough) /* a prefix was asked for and read: nothing to finish */
		rc = 0;
	else if (!rc && unended_regions(&ps)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc && !enough)
		rc = finish(&ps, flags, err, errlen);
	for (size_t i = 0; i < ps.ndec; i++) {
		a->orphan_exits += ps.dec[i].orphan_exits;
		hp_dec_stream_free(&ps.dec[i]);
	}
	free(ps.dec);
	hp_evbuf_free(&ps.evbuf);
	if (ix && !rc)
		ix->dict = ps.dict;
	else
		hp_funcs_free(&ps.dict);
	if (ix && !rc && !ps.funcmap) /* no events: a map that maps nothing */
		ps.funcmap = hp_funcmap_new(NULL, 0);
	if (ix && !rc && !ps.funcmap) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (ix && !rc)
		ix->funcmap = ps.funcmap;
	else
		hp_funcmap_free(ps.funcmap);
	hp_reader_close(r);
	if (!rc)
		return 0;
	/* Nothing for the caller to free after a failure (freeing again is harmless). */
	hp_analysis_free(a);
	return fail_in(path, err, errlen);
}

int hp_analyze(const char *path, int flags, hp_event_fn on_events, void *arg,
	       struct hp_analysis *a, char *err, size_t errlen)
{
	return analyze(path, flags, on_events, arg, NULL, NULL, NULL, a, err, errlen);
}

int hp_analyze_progress(const char *path, int flags, hp_event_fn on_events, void *arg,
			hp_read_progress_fn progress, void *progress_arg, struct hp_analysis *a,
			char *err, size_t errlen)
{
	return analyze(path, flags, on_events, arg, NULL, progress, progress_arg, a, err, errlen);
}

int hp_analyze_indexed(const char *path, int flags, struct hp_analysis *a,
		       struct hp_record_index *ix, char *err, size_t errlen)
{
	return analyze(path, flags, NULL, NULL, ix, NULL, NULL, a, err, errlen);
}

void hp_record_index_free(struct hp_record_index *ix)
{
	free(ix->rec);
	hp_funcmap_free(ix->funcmap);
	hp_funcs_free(&ix->dict);
	*ix = (struct hp_record_index){ 0 };
}

void hp_analysis_free(struct hp_analysis *a)
{
	hp_trace_info_free(&a->info);
	hp_funcs_free(&a->funcs);
	free(a->func_module);
	a->func_module = NULL;
	hp_profile_free(&a->prof);
	free(a->crash_open);
	a->crash_open = NULL;
	a->ncrash_open = 0;
	for (size_t i = 0; i < a->nwarnings; i++)
		free(a->warnings[i]);
	free(a->warnings);
	a->warnings = NULL;
	a->nwarnings = 0;
}

/* ---- the summary ------------------------------------------------------ */

/* Per stream, the current tick of its ticks-only scan. */
struct scan {
	uint64_t *tick;
	size_t n;
	int ticks; /* scan the events' ticks (a trace with no END) */
};

static int summary_events(struct hp_analysis *a, struct scan *sc, const uint8_t *payload,
			  uint32_t size, char *err, size_t errlen)
{
	uint32_t stream = size >= 8 ? hp_rd32(payload) : 0, nevents = size >= 8 ? hp_rd32(payload + 4) : 0;
	struct hp_stream_info *si = size >= 8 ? hp_trace_stream(&a->info, stream) : NULL;
	if (!si) {
		snprintf(err, errlen, "corrupt events record (stream %u)", stream);
		return -1;
	}
	si->events += nevents;
	a->events += nevents;
	if (!sc->ticks)
		return 0;
	if (stream >= sc->n) {
		size_t n = (size_t)stream + 8;
		uint64_t *t = realloc(sc->tick, n * sizeof(*t));
		if (!t) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		memset(t + sc->n, 0, (n - sc->n) * sizeof(*t));
		sc->tick = t;
		sc->n = n;
	}
	uint64_t first = a->has_first_tick ? a->first_tick : UINT64_MAX;
	if (hp_decode_ticks(payload + 8, size - 8, &sc->tick[stream], &first, &a->last_tick) != (long)nevents) {
		snprintf(err, errlen, "corrupt events record (stream %u)", stream);
		return -1;
	}
	if (first != UINT64_MAX) {
		a->first_tick = first;
		a->has_first_tick = 1;
	}
	return 0;
}

/* The ticks are needed only without END: its count alone needs no scan. */
static int summary_pass(struct hp_analysis *a, struct scan *sc, int flags,
			hp_read_progress_fn progress, void *arg, char *err, size_t errlen)
{
	struct hp_reader *r = hp_reader_open(a->path, err, errlen);
	if (!r)
		return -1;
	a->info.stream_limit = hp_trace_stream_limit(hp_reader_size(r));
	uint32_t type, size;
	const uint8_t *payload;
	int rc, bad = 0;
	while ((rc = hp_reader_next_head(r, &type, &payload, &size, sc->ticks ? UINT32_MAX : 8, err,
					 errlen)) == 1) {
		bad = type == HP_REC_EVENTS ? summary_events(a, sc, payload, size, err, errlen)
					    : hp_trace_info_add(&a->info, type, payload, size, err, errlen);
		if (bad)
			break;
		if (progress)
			progress(arg, hp_reader_offset(r), hp_reader_size(r));
		if (type == HP_REC_END)
			break;
	}
	if (rc < 0 && (flags & HP_ANALYZE_ALLOW_PARTIAL) && hp_reader_cut_at(r)) {
		a->cut_at = hp_reader_cut_at(r);
		rc = 0;
	}
	if (rc < 0)
		suggest_partial(r, err, errlen);
	hp_reader_close(r);
	return rc < 0 || bad ? -1 : 0;
}

static int summary_finish(struct hp_analysis *a, int flags, char *err, size_t errlen)
{
	return check_whole(a, flags, "counted", err, errlen);
}

int hp_summarize(const char *path, int flags, hp_read_progress_fn progress, void *arg,
		 struct hp_analysis *a, char *err, size_t errlen)
{
	struct scan sc = { 0 };
	memset(a, 0, sizeof(*a));
	a->path = path;
	int rc = summary_pass(a, &sc, flags, progress, arg, err, errlen);
	if (!rc && !a->info.has_end && (flags & HP_ANALYZE_ALLOW_PARTIAL)) {
		/* Again with the ticks: only a trace cut short needs them. */
		hp_trace_info_free(&a->info);
		memset(a, 0, sizeof(*a));
		a->path = path;
		sc.ticks = 1;
		rc = summary_pass(a, &sc, flags, progress, arg, err, errlen);
	}
	free(sc.tick);
	if (!rc)
		rc = summary_finish(a, flags, err, errlen);
	if (!rc)
		return 0;
	hp_analysis_free(a);
	return fail_in(path, err, errlen);
}

double hp_analysis_duration_ns(const struct hp_analysis *a)
{
	const struct hp_trace_info *in = &a->info;
	/* From the process start, as dump counts: the first CLOCK, or an event
	 * before it. */
	uint64_t start = a->has_first_tick && a->first_tick < a->tb.tick0 ? a->first_tick : a->tb.tick0;
	if (a->partial && a->last_tick > start)
		return hp_ticks_to_ns(&a->tb, a->last_tick - start);
	return in->nclocks >= 2 ? (double)(in->clock_ns[1] - in->clock_ns[0]) : 0;
}
