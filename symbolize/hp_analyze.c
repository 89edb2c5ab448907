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
	return hp_funcmap_apply(ps->funcmap, &ps->dict, ps->evbuf.ev, ps->evbuf.n, out);
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

static int region_repairs(struct hp_analysis *a, uint32_t stream, const struct hp_ev *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
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
	/* In pieces: the events of one record cost a bounded buffer however
	 * many they are. */
	struct hp_dec_record rec = hp_dec_record_of(payload + 8, size - 8);
	long n = 0;
	do {
		long got = hp_decode_piece(&ps->dict, d, &rec, HP_DECODE_PIECE, &ps->evbuf, err, errlen);
		if (got < 0)
			return -1;
		n += got;
		if (to_functions(ps) ||
		    hp_profile_feed(&a->prof, stream, ps->evbuf.ev, ps->evbuf.n, a->funcs.n) ||
		    region_repairs(a, stream, ps->evbuf.ev, ps->evbuf.n)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (ps->on_events && ps->on_events(ps->arg, a, stream, ps->evbuf.ev, ps->evbuf.n)) {
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

static int read_all(struct pass *ps, struct hp_reader *r, int flags, char *err, size_t errlen)
{
	uint32_t type, size;
	const uint8_t *payload;
	int rc;
	while ((rc = hp_reader_next(r, &type, &payload, &size, err, errlen)) == 1) {
		int bad = type == HP_REC_EVENTS
				  ? events_record(ps, payload, size, err, errlen)
				  : hp_trace_info_add(&ps->a->info, type, payload, size, err, errlen);
		if (bad)
			return -1;
		if (type == HP_REC_END)
			break;
	}
	if (rc < 0 && (flags & HP_ANALYZE_ALLOW_PARTIAL) && hp_reader_cut_at(r)) {
		ps->a->cut_at = hp_reader_cut_at(r);
		return 0;
	}
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

/* Before the profile closes them: the frames the crash left open. */
static int keep_crash_open_frames(struct hp_analysis *a)
{
	uint32_t stream = a->info.crash.stream;
	if (!a->info.crash.present || stream >= a->prof.nstreams)
		return 0;
	const struct hp_pstream *s = &a->prof.streams[stream];
	a->crash_open = malloc((s->depth ? s->depth : 1) * sizeof(*a->crash_open));
	if (!a->crash_open)
		return -1;
	for (size_t i = 0; i < s->depth; i++)
		a->crash_open[i] = a->funcs.addr[s->frames[i].func];
	a->ncrash_open = s->depth;
	return 0;
}

static int finish(struct hp_analysis *a, int flags, char *err, size_t errlen)
{
	if (!a->info.has_end && !(flags & HP_ANALYZE_ALLOW_PARTIAL)) {
		snprintf(err, errlen, "incomplete trace: no end record (the program was killed, "
				      "or the file was cut short); --partial reports what it holds");
		return -1;
	}
	a->partial = !a->info.has_end;
	if (a->info.has_end && a->info.end_events != a->events) {
		snprintf(err, errlen, "corrupt trace: %llu events decoded where %llu were written",
			 (unsigned long long)a->events, (unsigned long long)a->info.end_events);
		return -1;
	}
	if (hp_trace_timebase(&a->info, &a->tb)) {
		snprintf(err, errlen, "no clock calibration in the trace (the run ended before it could be written)");
		return -1;
	}
	if (keep_crash_open_frames(a)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	hp_profile_finish(&a->prof);
	return 0;
}

int hp_analyze(const char *path, int flags, hp_event_fn on_events, void *arg,
	       struct hp_analysis *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	a->path = path;
	hp_profile_init(&a->prof);
	struct hp_reader *r = hp_reader_open(path, err, errlen);
	if (!r)
		return -1;
	a->info.stream_limit = hp_trace_stream_limit(hp_reader_size(r));
	struct pass ps = { .a = a, .on_events = on_events, .arg = arg };
	/* Its failure is the main pass's to report, at the same record. */
	hp_trace_read_module_map(path, &a->info, err, errlen);
	int rc = read_all(&ps, r, flags, err, errlen);
	if (!rc && unended_regions(&ps)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc)
		rc = finish(a, flags, err, errlen);
	for (size_t i = 0; i < ps.ndec; i++) {
		a->orphan_exits += ps.dec[i].orphan_exits;
		hp_dec_stream_free(&ps.dec[i]);
	}
	free(ps.dec);
	hp_evbuf_free(&ps.evbuf);
	hp_funcs_free(&ps.dict);
	hp_funcmap_free(ps.funcmap);
	hp_reader_close(r);
	if (!rc)
		return 0;
	/* Nothing for the caller to free after a failure (freeing again is harmless). */
	hp_analysis_free(a);
	return fail_in(path, err, errlen);
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
