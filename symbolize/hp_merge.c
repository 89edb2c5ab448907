/*
 * hp_merge.c - every stream decoded on its own, merged by tick with a heap.
 *
 * The dictionary is the first pass's, whole: a record may use entries that
 * records earlier in the file defined, and those may belong to a stream
 * whose events come later in time. Before each piece of a stream's record
 * its count is set back to where that stream's decoding stands, so that
 * its DEFINEs write again, at the same indices, the addresses they wrote in
 * the first pass; and the first pass's function map gives the same ids.
 */
#include "hp_merge.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_RECORD UINT32_MAX
/* Events decoded at a time per stream: what a stream costs while merged. */
#define PIECE 1024u
/* Records begun between two looks at what of the map is behind every stream. */
#define DROP_EVERY 256u

struct mstream {
	struct hp_dec_stream dec;
	struct hp_dec_record rec; /* of the record being decoded */
	uint32_t first, cur;      /* its first record, the one being decoded */
	uint32_t ndict;           /* the dictionary's size where it stands */
	struct hp_evbuf buf;      /* the piece decoded last */
	size_t pos;               /* its next event */
	/* An event kept over the decoding of the next piece, so that the one
	 * after it can be looked at: it comes before buf's. */
	struct hp_ev held;
	uint32_t held_rec;
	int has_held;
	uint64_t last_tick;       /* of the last event handed on */
	int done;                 /* no event left */
};

struct merge {
	struct hp_analysis *a;
	struct hp_record_index *ix;
	const uint8_t *map;
	size_t map_len;
	struct mstream *s;
	uint32_t ns;
	uint32_t *heap;           /* streams with an event, by their next */
	uint32_t nheap;
	size_t dropped;           /* the map's first bytes, given back */
	uint32_t records_begun;
	int flags;
	char *err;
	size_t errlen;
};

/* ---- one stream ---------------------------------------------------------- */

static size_t available(const struct mstream *m)
{
	return (size_t)m->has_held + (m->buf.n - m->pos);
}

static const struct hp_ev *event_at(const struct mstream *m, size_t i)
{
	if (m->has_held) {
		if (!i)
			return &m->held;
		i--;
	}
	return m->pos + i < m->buf.n ? &m->buf.ev[m->pos + i] : NULL;
}

static void advance(struct mstream *m)
{
	if (m->has_held)
		m->has_held = 0;
	else
		m->pos++;
}

/* The pages of the map that every stream has read past are given back:
 * resident memory then follows the streams' spread in the file, not the
 * file (a MAP_PRIVATE file mapping reads them again if ever touched). */
static void drop_behind(struct merge *g)
{
	size_t low = g->map_len;
	for (uint32_t i = 0; i < g->ns; i++) {
		const struct mstream *m = &g->s[i];
		size_t at;
		if (m->done)
			continue;
		if (m->cur == NO_RECORD)
			at = m->first == NO_RECORD ? g->map_len : (size_t)g->ix->rec[m->first].offset;
		else
			at = (size_t)(m->rec.p - g->map);
		if (at < low)
			low = at;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	low -= low % page;
	if (low > g->dropped && !madvise((void *)(g->map + g->dropped), low - g->dropped, MADV_DONTNEED))
		g->dropped = low;
}

static int next_record(struct merge *g, struct mstream *m)
{
	uint32_t r = m->cur == NO_RECORD ? m->first : g->ix->rec[m->cur].next;
	if (r == NO_RECORD)
		return 0;
	const struct hp_record_at *at = &g->ix->rec[r];
	if (at->size < 8 || at->offset + at->size > g->map_len) {
		snprintf(g->err, g->errlen, "the trace changed while it was read");
		return -1;
	}
	m->cur = r;
	m->rec = hp_dec_record_of(g->map + at->offset + 8, at->size - 8);
	m->ndict = at->ndict;
	if (++g->records_begun % DROP_EVERY == 0)
		drop_behind(g);
	return 1;
}

/* Decodes the stream's next piece; 0 at its end. */
static int decode_more(struct merge *g, struct mstream *m)
{
	if (m->cur == NO_RECORD || hp_decode_done(&m->dec, &m->rec)) {
		int rc = next_record(g, m);
		if (rc <= 0)
			return rc;
	}
	struct hp_funcs *dict = &g->ix->dict;
	struct hp_analysis *a = g->a;
	uint32_t nfuncs = a->funcs.n;
	dict->n = m->ndict;
	long got = hp_decode_piece(dict, &m->dec, &m->rec, PIECE, &m->buf, g->err, g->errlen);
	m->ndict = dict->n;
	m->pos = 0;
	if (got < 0)
		return -1;
	struct hp_functions out = { &a->funcs, &a->func_module };
	if (hp_funcmap_apply(g->ix->funcmap, dict, m->buf.ev, m->buf.n, m->buf.regions, out)) {
		snprintf(g->err, g->errlen, "out of memory");
		return -1;
	}
	if (a->funcs.n != nfuncs) { /* every function was met in the first pass */
		snprintf(g->err, g->errlen, "the trace changed while it was read");
		return -1;
	}
	return 1;
}

/* At least want events ready, unless the stream ends first. */
static int fill(struct merge *g, struct mstream *m, size_t want)
{
	while (available(m) < want) {
		if (available(m) == 1 && !m->has_held) {
			m->held = m->buf.ev[m->pos];
			m->held_rec = m->cur;
			m->has_held = 1;
			m->pos = m->buf.n;
		}
		int rc = decode_more(g, m);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

/* ---- the heap ------------------------------------------------------------- */

static uint64_t key_tick(const struct mstream *m)
{
	const struct hp_ev *e = event_at(m, 0);
	return e->kind == HP_EV_RESET ? m->last_tick : e->tick;
}

static uint32_t key_record(const struct mstream *m)
{
	return m->has_held ? m->held_rec : m->cur;
}

static int before(const struct merge *g, uint32_t x, uint32_t y)
{
	const struct mstream *a = &g->s[x], *b = &g->s[y];
	uint64_t ta = key_tick(a), tb = key_tick(b);
	if (ta != tb)
		return ta < tb;
	return key_record(a) < key_record(b);
}

static void sift_down(struct merge *g, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < g->nheap && before(g, g->heap[l], g->heap[m]))
			m = l;
		if (r < g->nheap && before(g, g->heap[r], g->heap[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = g->heap[i];
		g->heap[i] = g->heap[m];
		g->heap[m] = t;
		i = m;
	}
}

static void heapify(struct merge *g)
{
	for (uint32_t i = g->nheap / 2; i-- > 0;)
		sift_down(g, i);
}

/* ---- the merge ------------------------------------------------------------ */

static int link_records(struct merge *g)
{
	struct hp_record_index *ix = g->ix;
	uint32_t ns = 0;
	for (size_t i = 0; i < ix->n; i++)
		if (ix->rec[i].stream >= ns)
			ns = ix->rec[i].stream + 1;
	uint32_t *last = malloc((ns ? ns : 1) * sizeof(*last));
	g->s = calloc(ns ? ns : 1, sizeof(*g->s));
	g->heap = malloc((ns ? ns : 1) * sizeof(*g->heap));
	if (!last || !g->s || !g->heap) {
		free(last);
		return -1;
	}
	g->ns = ns;
	for (uint32_t i = 0; i < ns; i++) {
		g->s[i].first = g->s[i].cur = last[i] = NO_RECORD;
	}
	for (size_t i = 0; i < ix->n; i++) {
		uint32_t s = ix->rec[i].stream;
		ix->rec[i].next = NO_RECORD;
		if (last[s] == NO_RECORD)
			g->s[s].first = (uint32_t)i;
		else
			ix->rec[last[s]].next = (uint32_t)i;
		last[s] = (uint32_t)i;
	}
	free(last);
	return 0;
}

/* Hands on the stream's next event, and its exit at once if that follows. */
static int hand_on(struct merge *g, uint32_t stream, hp_merge_fn fn, void *arg)
{
	struct mstream *m = &g->s[stream];
	int again;
	do {
		if (fill(g, m, 2))
			return -1;
		struct hp_ev ev = *event_at(m, 0);
		const struct hp_ev *next = event_at(m, 1);
		again = (g->flags & HP_MERGE_LEAF_PAIRS) && ev.kind == HP_EV_ENTER && next &&
			next->kind == HP_EV_EXIT;
		if (fn(arg, stream, &ev, next))
			return -1;
		if (ev.kind != HP_EV_RESET)
			m->last_tick = ev.tick;
		advance(m);
	} while (again);
	if (fill(g, m, 1))
		return -1;
	if (available(m))
		return 0;
	m->done = 1;
	return fn(arg, stream, NULL, NULL);
}

static int run(struct merge *g, hp_merge_fn fn, void *arg)
{
	for (uint32_t i = 0; i < g->ns; i++) {
		if (fill(g, &g->s[i], 1))
			return -1;
		if (available(&g->s[i]))
			g->heap[g->nheap++] = i;
	}
	heapify(g);
	while (g->nheap) {
		uint32_t stream = g->heap[0];
		if (hand_on(g, stream, fn, arg))
			return -1;
		if (!available(&g->s[stream]))
			g->heap[0] = g->heap[--g->nheap];
		sift_down(g, 0);
	}
	return 0;
}

static int map_file(struct merge *g, const char *path)
{
	/* By name again: a FIFO put there since the first pass must not block. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(g->err, g->errlen, "%s", fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	g->map_len = (size_t)st.st_size;
	void *p = g->map_len ? mmap(NULL, g->map_len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(g->err, g->errlen, "cannot map the file: %s", strerror(errno));
		return -1;
	}
	g->map = p;
	return 0;
}

/*
 * A file cut short while it is mapped (copied over, emptied: `: >TRACE`)
 * raises SIGBUS at the first page past its new end: that run ends with an
 * error, not the tool. Only the decoding reads the map; the handler jumps
 * back to hp_merge, whose caller gives up on the trace.
 */
static sigjmp_buf *cut_jump;

static void on_cut(int sig)
{
	(void)sig;
	if (cut_jump)
		siglongjmp(*cut_jump, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

static int run_guarded(struct merge *g, hp_merge_fn fn, void *arg, const char *path)
{
	struct sigaction sa = { .sa_handler = on_cut }, old;
	sigjmp_buf jump;
	volatile int rc = -1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(jump, 1) == 0) {
		cut_jump = &jump;
		rc = run(g, fn, arg);
	} else {
		snprintf(g->err, g->errlen, "%s: cut short while it was read", path);
	}
	cut_jump = NULL;
	sigaction(SIGBUS, &old, NULL);
	return rc;
}

int hp_merge(const char *path, struct hp_analysis *a, struct hp_record_index *ix, int flags,
	     hp_merge_fn fn, void *arg, char *err, size_t errlen)
{
	struct merge g = { .a = a, .ix = ix, .flags = flags, .err = err, .errlen = errlen };
	*err = 0;
	int rc = map_file(&g, path);
	if (!rc && link_records(&g)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc)
		rc = run_guarded(&g, fn, arg, path);
	if (g.s)
		for (uint32_t i = 0; i < g.ns; i++) {
			hp_dec_stream_free(&g.s[i].dec);
			hp_evbuf_free(&g.s[i].buf);
		}
	free(g.s);
	free(g.heap);
	if (g.map)
		munmap((void *)g.map, g.map_len);
	return rc;
}
