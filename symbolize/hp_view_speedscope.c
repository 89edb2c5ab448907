/*
 * hp_view_speedscope.c - speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json): one "evented"
 * profile per thread, its calls as open ("O") and close ("C") events at
 * nanoseconds from its trace's start, and one shared table of frames (name,
 * source file and line where known) written last, once the names are final.
 * JSON does not order an object's members, so "shared" may follow "profiles".
 *
 * A profile needs its thread's events together, but threads interleave by
 * record: each thread keeps its events in a buffer of its own (packed, 12
 * bytes each, growing to BLOCK events); a full buffer goes to one temporary
 * file shared by every thread, and the thread remembers where. So memory
 * is at most BLOCK events (48 KiB) per thread plus 8 bytes per block
 * written and per open frame; the temporary file takes 12 bytes per event
 * (24 per call), about a third of the JSON written from it.
 *
 * A frame whose exit was lost in a gap is no call: it is shown as a frame
 * of its own, "NAME [end lost]", so that each function's open events count
 * its calls. Its open event was buffered before that was known, so the exit
 * marks it where it lies, in memory or in the file.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hp_drive.h"
#include "hp_path.h"

#define BLOCK 4096u       /* events per block written to the file */
#define FIRST_CAP 64u     /* a thread's buffer at first */

#define EV_CLOSE 0x80000000u
#define EV_LOST 0x40000000u
#define EV_FN 0x3fffffffu

struct sev {
	uint64_t at;      /* ns from the trace's start, rounded */
	uint32_t w;       /* fn | EV_CLOSE | EV_LOST */
} __attribute__((packed));

struct sthread {
	struct sev *buf;  /* events after those in blocks */
	uint32_t n, cap;
	off_t *block;     /* file offsets of its full blocks, in order */
	size_t nblocks, blocks_cap;
	uint64_t *open;   /* event numbers of its open frames' O events */
	size_t depth, open_cap;
	uint64_t first, last; /* at of its first and last event */
};

struct speedscope {
	FILE *spill;      /* the temporary file, or NULL until needed */
	off_t spill_end;
	int32_t *frame;   /* per fn * 2 + lost: index in the frames table, -1 none */
	size_t nframe;
	uint32_t *frame_key; /* per index: fn * 2 + lost */
	uint32_t nframes, frames_cap;
	char *program;    /* of the first trace, for the file's name */
};

/* ---- JSON text ----------------------------------------------------------- */

static void put_json_string(FILE *out, const char *s)
{
	putc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else
			putc(*p, out);
	}
	putc('"', out);
}

/* ---- per-thread buffers ----------------------------------------------------- */

static struct sthread *thread_of(struct hp_vthread *t)
{
	if (!t->data)
		t->data = calloc(1, sizeof(struct sthread));
	return t->data;
}

static int write_all(int fd, const void *p, size_t n, off_t at)
{
	const char *c = p;
	while (n) {
		ssize_t w = pwrite(fd, c, n, at);
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n, off_t at)
{
	char *c = p;
	while (n) {
		ssize_t r = pread(fd, c, n, at);
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
		at += r;
	}
	return 0;
}

static int spill(struct speedscope *s, struct sthread *st)
{
	if (!s->spill && !(s->spill = tmpfile()))
		return -1;
	if (hp_view_grow((void **)&st->block, &st->blocks_cap, st->nblocks + 1, sizeof(*st->block)) ||
	    write_all(fileno(s->spill), st->buf, (size_t)st->n * sizeof(*st->buf), s->spill_end))
		return -1;
	st->block[st->nblocks++] = s->spill_end;
	s->spill_end += (off_t)(st->n * sizeof(*st->buf));
	st->n = 0;
	return 0;
}

static uint64_t events_of(const struct sthread *st)
{
	return (uint64_t)st->nblocks * BLOCK + st->n;
}

static int add_event(struct speedscope *s, struct sthread *st, uint64_t at, uint32_t w)
{
	if (st->n == st->cap) {
		if (st->cap == BLOCK) {
			if (spill(s, st))
				return -1;
		} else {
			uint32_t cap = st->cap ? st->cap * 2 : FIRST_CAP;
			struct sev *b = realloc(st->buf, cap * sizeof(*b));
			if (!b)
				return -1;
			st->buf = b;
			st->cap = cap;
		}
	}
	if (!events_of(st))
		st->first = at;
	st->last = at;
	st->buf[st->n].at = at;
	st->buf[st->n].w = w;
	st->n++;
	return 0;
}

/* Marks the O event number `seq` of st as a lost frame's. */
static int mark_lost(struct speedscope *s, struct sthread *st, uint64_t seq)
{
	uint64_t in_file = (uint64_t)st->nblocks * BLOCK;
	if (seq >= in_file) {
		st->buf[seq - in_file].w |= EV_LOST;
		return 0;
	}
	struct sev e;
	off_t at = st->block[seq / BLOCK] + (off_t)(seq % BLOCK * sizeof(e));
	if (read_all(fileno(s->spill), &e, sizeof(e), at))
		return -1;
	e.w |= EV_LOST;
	return write_all(fileno(s->spill), &e, sizeof(e), at);
}

static uint64_t ns_of(double ns)
{
	return ns > 0 ? (uint64_t)(ns + 0.5) : 0;
}

/* ---- the view --------------------------------------------------------------- */

static int open_speedscope(struct hp_view *v, char *err, size_t errlen)
{
	if (!(v->state = calloc(1, sizeof(struct speedscope)))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int trace_speedscope(struct hp_view *v, const struct hp_analysis *a, char *err,
			    size_t errlen)
{
	struct speedscope *s = v->state;
	if (!s->program) {
		if (!(s->program = strdup(hp_path_base(a->info.exe)))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

static int enter_speedscope(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct speedscope *s = v->state;
	struct sthread *st = thread_of(t);
	if (!st || f->fn > EV_FN ||
	    hp_view_grow((void **)&st->open, &st->open_cap, st->depth + 1, sizeof(*st->open)))
		return -1;
	st->open[st->depth++] = events_of(st);
	return add_event(s, st, ns_of(f->start), f->fn);
}

static int exit_speedscope(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct speedscope *s = v->state;
	struct sthread *st = t->data;
	if (!st || !st->depth)
		return -1; /* the driver nests every exit in an enter */
	uint64_t seq = st->open[--st->depth];
	uint32_t lost = f->lost ? EV_LOST : 0;
	if (lost && mark_lost(s, st, seq))
		return -1;
	return add_event(s, st, ns_of(f->end), f->fn | EV_CLOSE | lost);
}

/* The index in the frames table of fn (or of its lost frames). */
static int32_t frame_index(struct speedscope *s, uint32_t fn, int lost)
{
	size_t key = (size_t)fn * 2 + (lost != 0);
	if (key >= s->nframe) {
		size_t n = s->nframe ? s->nframe : 256;
		while (n <= key)
			n *= 2;
		int32_t *q = realloc(s->frame, n * sizeof(*q));
		if (!q)
			return -1;
		memset(q + s->nframe, 0xff, (n - s->nframe) * sizeof(*q));
		s->frame = q;
		s->nframe = n;
	}
	if (s->frame[key] < 0) {
		size_t cap = s->frames_cap;
		if (hp_view_grow((void **)&s->frame_key, &cap, (size_t)s->nframes + 1, sizeof(*s->frame_key)))
			return -1;
		s->frames_cap = (uint32_t)cap;
		s->frame_key[s->nframes] = (uint32_t)key;
		s->frame[key] = (int32_t)s->nframes++;
	}
	return s->frame[key];
}

/* Decimal digits of v ending at end; returns the first. */
static char *digits(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

#define PUT(o, lit) (memcpy((o), (lit), sizeof(lit) - 1), (o) + sizeof(lit) - 1)

/* {"type":"O","frame":N,"at":T}, one to a line: built by hand, as a trace
 * has millions. */
static int write_events(struct speedscope *s, FILE *out, const struct sev *e, size_t n)
{
	char line[96], num[24], *end = num + sizeof(num);
	for (size_t i = 0; i < n; i++) {
		int32_t frame = frame_index(s, e[i].w & EV_FN, (e[i].w & EV_LOST) != 0);
		if (frame < 0)
			return -1;
		char *o = line, *p;
		if (i)
			o = PUT(o, ",\n");
		o = PUT(o, "{\"type\":\"");
		*o++ = (e[i].w & EV_CLOSE) ? 'C' : 'O';
		o = PUT(o, "\",\"frame\":");
		p = digits(end, (uint64_t)frame);
		memcpy(o, p, (size_t)(end - p));
		o += end - p;
		o = PUT(o, ",\"at\":");
		p = digits(end, e[i].at);
		memcpy(o, p, (size_t)(end - p));
		o += end - p;
		*o++ = '}';
		fwrite_unlocked(line, 1, (size_t)(o - line), out);
	}
	return ferror(out) ? -1 : 0;
}

static int write_profile(struct speedscope *s, FILE *out, const struct hp_vthread *t,
			 const struct sthread *st, int first)
{
	fputs(first ? "\n{" : ",\n{", out);
	fputs("\"type\":\"evented\",\"name\":", out);
	char name[160];
	snprintf(name, sizeof(name), "%s pid %u tid %u%s%s", t->process, t->pid, t->tid,
		 t->name[0] ? " " : "", t->name);
	put_json_string(out, name);
	fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%llu,\"endValue\":%llu,\"events\":[\n",
		(unsigned long long)st->first, (unsigned long long)st->last);
	struct sev *block = NULL;
	int rc = 0;
	if (st->nblocks && !(block = malloc(BLOCK * sizeof(*block))))
		return -1;
	for (size_t b = 0; b < st->nblocks && !rc; b++) {
		rc = read_all(fileno(s->spill), block, BLOCK * sizeof(*block), st->block[b]);
		if (!rc && b)
			fputs(",\n", out);
		if (!rc)
			rc = write_events(s, out, block, BLOCK);
	}
	free(block);
	if (!rc && st->nblocks && st->n)
		fputs(",\n", out);
	if (!rc)
		rc = write_events(s, out, st->buf, st->n);
	fputs("]}", out);
	return rc;
}

static int write_frames(struct speedscope *s, FILE *out, const struct hp_fntab *fns)
{
	fputs("],\n\"shared\":{\"frames\":[", out);
	for (uint32_t i = 0; i < s->nframes; i++) {
		uint32_t fn = s->frame_key[i] / 2;
		const struct hp_row *r = hp_fntab_get(fns, fn);
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		if (s->frame_key[i] & 1) {
			char *lost = NULL;
			if (asprintf(&lost, "%s [end lost]", hp_fntab_name(fns, fn)) < 0)
				return -1;
			put_json_string(out, lost);
			free(lost);
		} else {
			put_json_string(out, hp_fntab_name(fns, fn));
		}
		if (r->file) {
			fputs(",\"file\":", out);
			put_json_string(out, r->file);
		}
		if (r->line > 0)
			fprintf(out, ",\"line\":%d", r->line);
		putc('}', out);
	}
	fputs("\n]},\n\"name\":", out);
	put_json_string(out, s->program ? s->program : "hookprof");
	fputs(",\"activeProfileIndex\":0,\"exporter\":\"hookprof\"}\n", out);
	return ferror(out) ? -1 : 0;
}

static int end_speedscope(struct hp_view *v, char *err, size_t errlen)
{
	struct speedscope *s = v->state;
	FILE *out = v->out;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"profiles\":[", out);
	int rc = 0, first = 1;
	for (uint32_t i = 0; i < hp_drive_nthreads(v->d) && !rc; i++) {
		const struct hp_vthread *t = hp_drive_thread(v->d, i);
		const struct sthread *st = t->data;
		if (!st || !events_of(st))
			continue;
		rc = write_profile(s, out, t, st, first);
		first = 0;
	}
	if (!rc)
		rc = write_frames(s, out, hp_drive_fns(v->d));
	if (rc)
		snprintf(err, errlen, "out of memory, or the output or the temporary file could not be written");
	return rc;
}

static void free_sthread(void *data)
{
	struct sthread *st = data;
	free(st->buf);
	free(st->block);
	free(st->open);
	free(st);
}

static void close_speedscope(struct hp_view *v)
{
	struct speedscope *s = v->state;
	if (s) {
		if (s->spill)
			fclose(s->spill);
		free(s->frame);
		free(s->frame_key);
		free(s->program);
		free(s);
	}
	v->state = NULL;
}

const struct hp_view_ops hp_view_speedscope = {
	.name = "speedscope",
	.summary = "speedscope's evented JSON, one profile per thread, for speedscope",
	.flags = HP_VIEW_EXPORT,
	.open = open_speedscope,
	.trace = trace_speedscope,
	.enter = enter_speedscope,
	.exit = exit_speedscope,
	.end = end_speedscope,
	.thread_free = free_sthread,
	.close = close_speedscope,
};
