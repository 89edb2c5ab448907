/*
 * hp_view_pprof.c - pprof's profile.proto (as Debian's pprof package ships
 * it), gzipped: what `go tool pprof`, pprof's web UI, speedscope and the
 * other pprof viewers read. Encoded by protobuf-c from the C code protoc-c
 * made of profile.proto at build time.
 *
 * One sample per distinct call path, its locations innermost first, one
 * location per function (with its Line: the function, its source line);
 * two values: calls (count) and time (nanoseconds, the path's self time,
 * the default). pprof's flat columns are then the functions' calls and
 * self times, its cum column their totals. A directly recursive call is
 * folded into its caller's frame (fib;fib;fib is fib): pprof counts a
 * function once per stack anyway, and a recursion 100000 deep would
 * otherwise write 100000 paths of up to 100000 frames.
 *
 * The profile is written as a run of Profile messages, which protobuf
 * merges into one (repeated fields append): the header, one per sample,
 * then the functions, so that no more than one stack is held to write it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hp_calltree.h"
#include "hp_drive.h"
#include "profile.pb-c.h"

struct pprof {
	struct hp_calltree tree;
	double end;            /* the latest exit: the profile's duration */
	/* Per function, so that the sum of its rounded sample values is its
	 * rounded self time (report's) however many paths it is split in. */
	double *self_sum;
	int64_t *self_written;
	uint64_t *stack;       /* a sample's location ids */
	size_t stack_cap;
};

static int open_pprof(struct hp_view *v, char *err, size_t errlen)
{
	struct pprof *p = calloc(1, sizeof(*p));
	if (!p || hp_calltree_init(&p->tree)) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v->state = p;
	return 0;
}

static int enter_pprof(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct pprof *p = v->state;
	struct hp_cpath *path = hp_cpath_of(t);
	if (!path)
		return -1;
	if (path->depth == path->cap) {
		size_t cap = path->cap ? path->cap * 2 : 64;
		uint32_t *n = realloc(path->node, cap * sizeof(*n));
		if (!n)
			return -1;
		path->node = n;
		path->cap = cap;
	}
	uint32_t top = path->depth ? path->node[path->depth - 1] : HP_CNODE_ROOT;
	uint32_t id = top != HP_CNODE_ROOT && p->tree.node[top].fn == f->fn
			      ? top /* direct recursion: the caller's frame */
			      : hp_calltree_child(&p->tree, top, f->fn);
	if (id == HP_CNODE_NONE)
		return -1;
	path->node[path->depth++] = id;
	return 0;
}

static int exit_pprof(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct pprof *p = v->state;
	struct hp_cpath *path = t->data;
	if (!path || !path->depth)
		return -1;
	struct hp_cnode *c = &p->tree.node[path->node[--path->depth]];
	if (f->lost)
		return 0;
	c->calls++;
	c->self += f->self;
	if (f->end > p->end)
		p->end = f->end;
	return 0;
}

/* ---- writing: a gzip stream that protobuf-c appends to --------------- */

struct gzout {
	ProtobufCBuffer base;  /* first: protobuf-c calls base.append */
	z_stream z;
	FILE *out;
	int failed;
	unsigned char chunk[1 << 16];
};

static void deflate_some(struct gzout *g, int flush)
{
	int rc;
	do {
		g->z.next_out = g->chunk;
		g->z.avail_out = sizeof(g->chunk);
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR) {
			g->failed = 1;
			return;
		}
		size_t n = sizeof(g->chunk) - g->z.avail_out;
		if (n && fwrite(g->chunk, 1, n, g->out) != n)
			g->failed = 1;
	} while (!g->failed && (g->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END)));
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gzout *g = (struct gzout *)b;
	if (g->failed)
		return;
	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	deflate_some(g, Z_NO_FLUSH);
}

static int put(struct gzout *g, const Perftools__Profiles__Profile *msg)
{
	protobuf_c_message_pack_to_buffer(&msg->base, &g->base);
	return g->failed ? -1 : 0;
}

/* ---- the string table ------------------------------------------------- */

struct strings {
	char **s;
	size_t n, cap;
	uint32_t *slot;        /* hash: index + 1 */
	size_t slot_cap;
};

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int strings_rehash(struct strings *st)
{
	size_t cap = st->slot_cap ? st->slot_cap * 2 : 256;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (size_t i = 0; i < st->n; i++) {
		size_t h = hash_str(st->s[i]) & (cap - 1);
		while (slot[h])
			h = (h + 1) & (cap - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(st->slot);
	st->slot = slot;
	st->slot_cap = cap;
	return 0;
}

/* The index of s in the table, added if new; -1 out of memory. The table
 * points at s: it must outlive the table. */
static int64_t string_of(struct strings *st, const char *s)
{
	if ((st->n + 1) * 2 > st->slot_cap && strings_rehash(st))
		return -1;
	size_t mask = st->slot_cap - 1, h = hash_str(s) & mask;
	for (; st->slot[h]; h = (h + 1) & mask)
		if (!strcmp(st->s[st->slot[h] - 1], s))
			return st->slot[h] - 1;
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 256;
		char **n = realloc(st->s, cap * sizeof(*n));
		if (!n)
			return -1;
		st->s = n;
		st->cap = cap;
	}
	st->s[st->n] = (char *)s;
	st->slot[h] = (uint32_t)++st->n;
	return (int64_t)st->n - 1;
}

/* ---- the profile ------------------------------------------------------ */

static int put_header(struct gzout *g, struct strings *st, double duration)
{
	Perftools__Profiles__ValueType calls = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType time = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType *types[] = { &calls, &time };
	int64_t comment = string_of(st, "hookprof: time is wall-clock, summed over threads; "
					"directly recursive calls fold into their caller's frame");
	calls.type = string_of(st, "calls");
	calls.unit = string_of(st, "count");
	time.type = string_of(st, "time");
	time.unit = string_of(st, "nanoseconds");
	if (comment < 0 || calls.type < 0 || calls.unit < 0 || time.type < 0 || time.unit < 0)
		return -1;
	Perftools__Profiles__Profile h = PERFTOOLS__PROFILES__PROFILE__INIT;
	h.n_sample_type = 2;
	h.sample_type = types;
	h.period_type = &time;
	h.period = 1;
	h.default_sample_type = time.type;
	h.duration_nanos = (int64_t)llround(duration);
	h.n_comment = 1;
	h.comment = &comment;
	return put(g, &h);
}

struct samples {
	struct pprof *p;
	struct gzout *g;
};

static int put_sample(void *arg, const struct hp_calltree *t, uint32_t id)
{
	struct samples *s = arg;
	struct pprof *p = s->p;
	const struct hp_cnode *c = &t->node[id];
	if (!c->calls)
		return 0;
	size_t n = (size_t)c->depth + 1;
	if (n > p->stack_cap) {
		uint64_t *q = realloc(p->stack, n * sizeof(*q));
		if (!q)
			return -1;
		p->stack = q;
		p->stack_cap = n;
	}
	size_t k = 0;
	for (uint32_t at = id; at != HP_CNODE_ROOT; at = t->node[at].parent)
		p->stack[k++] = (uint64_t)t->node[at].fn + 1;
	p->self_sum[c->fn] += c->self;
	int64_t upto = (int64_t)llround(p->self_sum[c->fn]);
	int64_t value[2] = { (int64_t)c->calls, upto - p->self_written[c->fn] };
	p->self_written[c->fn] = upto;
	Perftools__Profiles__Sample sample = PERFTOOLS__PROFILES__SAMPLE__INIT;
	Perftools__Profiles__Sample *one = &sample;
	sample.n_location_id = k;
	sample.location_id = p->stack;
	sample.n_value = 2;
	sample.value = value;
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	m.n_sample = 1;
	m.sample = &one;
	return put(s->g, &m);
}

/* One mapping per module, one function and one location per function
 * that was called, then the string table. */
static int put_functions(struct gzout *g, struct strings *st, const struct hp_fntab *fns,
			 const uint8_t *used)
{
	size_t n = fns->rows.n;
	Perftools__Profiles__Function *fn = calloc(n ? n : 1, sizeof(*fn));
	Perftools__Profiles__Location *loc = calloc(n ? n : 1, sizeof(*loc));
	Perftools__Profiles__Line *line = calloc(n ? n : 1, sizeof(*line));
	Perftools__Profiles__Mapping *map = calloc(n ? n : 1, sizeof(*map));
	void **ptr = calloc(n ? 3 * n : 1, sizeof(*ptr));
	Perftools__Profiles__Line **line_ptr = calloc(n ? n : 1, sizeof(*line_ptr));
	int64_t *map_of_module = calloc(n ? n : 1, sizeof(*map_of_module)); /* by module string */
	int rc = -1;
	if (!fn || !loc || !line || !map || !ptr || !line_ptr || !map_of_module)
		goto out;
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	m.function = (Perftools__Profiles__Function **)ptr;
	m.location = (Perftools__Profiles__Location **)(ptr + n);
	m.mapping = (Perftools__Profiles__Mapping **)(ptr + 2 * n);
	for (uint32_t i = 0; i < n; i++) {
		if (!used[i])
			continue;
		const struct hp_row *r = hp_fntab_get(fns, i);
		Perftools__Profiles__Function *f = &fn[m.n_function];
		perftools__profiles__function__init(f);
		f->id = (uint64_t)i + 1;
		f->name = string_of(st, hp_fntab_name(fns, i));
		f->system_name = string_of(st, r->name);
		f->filename = string_of(st, r->file ? r->file : "");
		f->start_line = r->line;
		int64_t module = string_of(st, r->module ? r->module : "");
		if (f->name < 0 || f->system_name < 0 || f->filename < 0 || module < 0)
			goto out;
		/* Modules are few: a linear search for the module's mapping. */
		size_t k = 0;
		while (k < m.n_mapping && map_of_module[k] != module)
			k++;
		if (k == m.n_mapping) {
			Perftools__Profiles__Mapping *mp = &map[m.n_mapping];
			perftools__profiles__mapping__init(mp);
			mp->id = k + 1;
			mp->filename = module;
			/* Named already: no viewer is to look for symbols. */
			mp->has_functions = mp->has_filenames = mp->has_line_numbers = 1;
			map_of_module[k] = module;
			m.mapping[m.n_mapping++] = mp;
		}
		Perftools__Profiles__Line *l = &line[m.n_function];
		perftools__profiles__line__init(l);
		l->function_id = f->id;
		l->line = r->line;
		line_ptr[m.n_function] = l;
		Perftools__Profiles__Location *lc = &loc[m.n_function];
		perftools__profiles__location__init(lc);
		lc->id = f->id;
		lc->mapping_id = k + 1;
		lc->address = r->offset;
		lc->n_line = 1;
		lc->line = &line_ptr[m.n_function];
		m.location[m.n_location++] = lc;
		m.function[m.n_function++] = f;
	}
	m.n_string_table = st->n;
	m.string_table = st->s;
	rc = put(g, &m);
out:
	free(fn);
	free(loc);
	free(line);
	free(map);
	free(ptr);
	free(line_ptr);
	free(map_of_module);
	return rc;
}

static int write_profile(struct hp_view *v, struct gzout *g, struct strings *st)
{
	struct pprof *p = v->state;
	const struct hp_fntab *fns = hp_drive_fns(v->d);
	size_t n = fns->rows.n ? fns->rows.n : 1;
	uint8_t *used = calloc(n, 1);
	p->self_sum = calloc(n, sizeof(*p->self_sum));
	p->self_written = calloc(n, sizeof(*p->self_written));
	if (!used || !p->self_sum || !p->self_written || string_of(st, "") != 0) {
		free(used);
		return -1;
	}
	for (uint32_t i = 1; i < p->tree.n; i++)
		used[p->tree.node[i].fn] = 1;
	struct samples s = { p, g };
	int rc = put_header(g, st, p->end);
	if (!rc)
		rc = hp_calltree_walk(&p->tree, put_sample, &s);
	if (!rc)
		rc = put_functions(g, st, fns, used);
	free(used);
	return rc;
}

static int end_pprof(struct hp_view *v, char *err, size_t errlen)
{
	struct gzout *g = calloc(1, sizeof(*g));
	struct strings st = { 0 };
	/* 16 + MAX_WBITS: a gzip header and trailer, as pprof expects. */
	if (!g || deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			       Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	g->base.append = gz_append;
	g->out = v->out;
	int rc = write_profile(v, g, &st);
	if (!rc) {
		deflate_some(g, Z_FINISH);
		rc = g->failed ? -1 : 0;
	}
	deflateEnd(&g->z);
	free(g);
	free(st.s);
	free(st.slot);
	if (rc)
		snprintf(err, errlen, "out of memory, or the output could not be written");
	return rc;
}

static void close_pprof(struct hp_view *v)
{
	struct pprof *p = v->state;
	if (p) {
		hp_calltree_free(&p->tree);
		free(p->self_sum);
		free(p->self_written);
		free(p->stack);
	}
	free(p);
	v->state = NULL;
}

const struct hp_view_ops hp_view_pprof = {
	.name = "pprof",
	.summary = "pprof profile.proto, gzipped (calls, time), for go tool pprof and pprof viewers",
	.flags = HP_VIEW_EXPORT | HP_VIEW_BINARY,
	.open = open_pprof,
	.enter = enter_pprof,
	.exit = exit_pprof,
	.end = end_pprof,
	.thread_free = hp_cpath_free,
	.close = close_pprof,
};
