/*
 * hp_trace.c - trace file reader and the non-event records.
 */
#include "hp_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"

#define READ_MIN (64u << 10)

struct hp_reader {
	FILE *f;
	const char *path;
	uint8_t *buf;
	size_t cap;
	uint64_t offset; /* of the next record */
	uint64_t size;   /* of the file */
	uint64_t cut_at; /* where an incomplete last record begins; 0: none */
	uint64_t payload_at; /* of the record returned last */
};

static int fail(char *err, size_t errlen, const char *path, const char *what)
{
	snprintf(err, errlen, "%s: %s", path, what);
	return -1;
}

static int check_header(const uint8_t *h, const char *path, char *err, size_t errlen)
{
	if (memcmp(h, HP_MAGIC, HP_MAGIC_LEN))
		return fail(err, errlen, path, "not a hookprof trace (bad magic)");
	if (hp_rd32(h + 12) != HP_BYTE_ORDER_MARK)
		return fail(err, errlen, path, "trace written with another byte order");
	uint16_t major = (uint16_t)(h[8] | h[9] << 8);
	if (major != HP_VERSION_MAJOR) {
		char what[96];
		snprintf(what, sizeof(what), "trace format version %u is not supported (this tool reads %u)",
			 major, HP_VERSION_MAJOR);
		return fail(err, errlen, path, what);
	}
	if (hp_rd32(h + 16) < HP_FILE_HEADER_SIZE)
		return fail(err, errlen, path, "corrupt file header");
	return 0;
}

struct hp_reader *hp_reader_open(const char *path, char *err, size_t errlen)
{
	uint8_t h[HP_FILE_HEADER_SIZE];
	struct stat st;
	/* O_NONBLOCK: a FIFO's open must not wait for a writer; it is refused
	 * below, as anything not a regular file is. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fail(err, errlen, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fail(err, errlen, path, "not a regular file");
		close(fd);
		return NULL;
	}
	FILE *f = fcntl(fd, F_SETFL, O_RDONLY) ? NULL : fdopen(fd, "rb");
	if (!f) {
		fail(err, errlen, path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (st.st_size == 0) {
		fail(err, errlen, path, "empty file");
		goto bad;
	}
	if (fread(h, 1, sizeof(h), f) != sizeof(h)) {
		fail(err, errlen, path, memcmp(h, HP_MAGIC, 1) ? "not a hookprof trace (too short)"
							       : "truncated trace (incomplete file header)");
		goto bad;
	}
	if (check_header(h, path, err, errlen))
		goto bad;
	struct hp_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		fail(err, errlen, path, "out of memory");
		goto bad;
	}
	r->f = f;
	r->path = path;
	r->offset = hp_rd32(h + 16);
	r->size = (uint64_t)st.st_size;
	if (fseek(f, (long)r->offset, SEEK_SET)) {
		free(r);
		fail(err, errlen, path, "truncated trace");
		goto bad;
	}
	return r;
bad:
	fclose(f);
	return NULL;
}

/* Always a buffer, even for an empty payload: callers get a pointer. */
static int grow(struct hp_reader *r, size_t need)
{
	if (r->buf && need <= r->cap)
		return 0;
	size_t cap = r->cap ? r->cap : READ_MIN;
	while (cap < need)
		cap *= 2;
	uint8_t *buf = realloc(r->buf, cap);
	if (!buf)
		return -1;
	r->buf = buf;
	r->cap = cap;
	return 0;
}

static int next_record(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
		       uint32_t *size, uint32_t events_head, char *err, size_t errlen);

int hp_reader_next(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
		   uint32_t *size, char *err, size_t errlen)
{
	return next_record(r, type, payload, size, UINT32_MAX, err, errlen);
}

int hp_reader_next_head(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
			uint32_t *size, uint32_t events_head, char *err, size_t errlen)
{
	return next_record(r, type, payload, size, events_head, err, errlen);
}

uint64_t hp_reader_offset(const struct hp_reader *r)
{
	return r->offset;
}

/* An EVENTS payload is read up to events_head bytes; the rest is passed over. */
static int next_record(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
		       uint32_t *size, uint32_t events_head, char *err, size_t errlen)
{
	uint8_t h[HP_RECORD_HEADER_SIZE];
	size_t got = fread(h, 1, sizeof(h), r->f);
	if (got == 0 && feof(r->f))
		return 0;
	char what[128];
	if (got != sizeof(h)) {
		r->cut_at = r->offset;
		snprintf(what, sizeof(what), "truncated trace (record header at byte %llu)",
			 (unsigned long long)r->offset);
		return fail(err, errlen, r->path, what);
	}
	*type = hp_rd32(h);
	*size = hp_rd32(h + 4);
	if (*size > HP_RECORD_MAX || r->offset + HP_RECORD_HEADER_SIZE + *size > r->size) {
		/* A size no writer writes is corruption; one that fits the format
		 * but not the file is a write that was cut (kill -9, a full disk). */
		if (*size <= HP_RECORD_MAX)
			r->cut_at = r->offset;
		snprintf(what, sizeof(what), "truncated or corrupt trace (record at byte %llu runs past the end)",
			 (unsigned long long)r->offset);
		return fail(err, errlen, r->path, what);
	}
	uint32_t want = *type == HP_REC_EVENTS && *size > events_head ? events_head : *size;
	if (grow(r, want) || fread(r->buf, 1, want, r->f) != want ||
	    (want < *size && fseek(r->f, (long)(*size - want), SEEK_CUR)))
		return fail(err, errlen, r->path, "read error");
	*payload = r->buf;
	r->payload_at = r->offset + HP_RECORD_HEADER_SIZE;
	r->offset += HP_RECORD_HEADER_SIZE + *size;
	return 1;
}

uint64_t hp_reader_payload_at(const struct hp_reader *r)
{
	return r->payload_at;
}

void hp_reader_close(struct hp_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}

/* A bounds-checked cursor over one record's payload. */
struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static const uint8_t *take(struct cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	const uint8_t *p = c->p;
	c->p += n;
	return p;
}

static uint32_t take32(struct cursor *c)
{
	const uint8_t *p = take(c, 4);
	return p ? hp_rd32(p) : 0;
}

static uint64_t take64(struct cursor *c)
{
	const uint8_t *p = take(c, 8);
	return p ? hp_rd64(p) : 0;
}

/* A length-prefixed string, as a new NUL-terminated copy. */
static char *take_string(struct cursor *c)
{
	uint32_t len = take32(c);
	const uint8_t *s = take(c, len);
	if (!s)
		return NULL;
	char *copy = malloc((size_t)len + 1);
	if (copy) {
		memcpy(copy, s, len);
		copy[len] = 0;
	}
	return copy;
}

static void free_argv(struct hp_trace_info *info)
{
	for (uint32_t i = 0; info->argv && i < info->argc; i++)
		free(info->argv[i]);
	free(info->argv);
	info->argv = NULL;
	info->argc = 0;
}

static int parse_process(struct hp_trace_info *info, struct cursor *c)
{
	info->pid = take32(c);
	info->clock_source = take32(c);
	info->start_realtime_ns = take64(c);
	info->flags = take32(c);
	uint32_t argc = take32(c);
	/* A second PROCESS record replaces the first: nothing of it may stay. */
	free_argv(info);
	free(info->exe);
	info->exe = take_string(c);
	if (c->bad || argc > (size_t)(c->end - c->p) / 4)
		return -1;
	info->argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!info->argv)
		return -1;
	for (info->argc = 0; info->argc < argc; info->argc++)
		if (!(info->argv[info->argc] = take_string(c)))
			return -1;
	/* The tail is optional (older traces end with argv); a reader of
	 * these takes what it knows and skips the rest. */
	info->buffer_bytes = 0;
	info->clock_step = 0;
	if ((size_t)(c->end - c->p) >= HP_PROCESS_TAIL_SIZE) {
		info->buffer_bytes = take64(c);
		info->clock_step = take32(c);
	}
	return 0;
}

static int parse_clock(struct hp_trace_info *info, struct cursor *c)
{
	uint64_t tick = take64(c), ns = take64(c);
	int slot = info->nclocks ? 1 : 0;
	info->clock_tick[slot] = tick;
	info->clock_ns[slot] = ns;
	info->nclocks++;
	return 0;
}

/* ---- the module map, as of a moment ---------------------------------- */

static uint64_t module_hash(uint64_t bias, const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull ^ bias;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static int same_module(const struct hp_module *a, uint64_t bias, const char *path)
{
	return a->bias == bias && !strcmp(a->path, path);
}

/* The slot of (bias, path) in the hash: its module, or the empty slot where
 * it would go. Hashed, so that a map of many objects reads in linear time. */
static uint32_t *module_slot(const struct hp_trace_info *info, uint64_t bias, const char *path)
{
	const struct hp_module_clock *mc = &info->modclock;
	size_t mask = mc->slot_cap - 1;
	for (size_t i = module_hash(bias, path) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &mc->slot[i];
		if (!*slot || same_module(&info->modules[*slot - 1], bias, path))
			return slot;
	}
}

/* Keeps the hash at most half full, with room for one more module. */
static int module_slots_reserve(struct hp_trace_info *info)
{
	struct hp_module_clock *mc = &info->modclock;
	if ((info->nmodules + 1) * 2 <= mc->slot_cap)
		return 0;
	size_t cap = mc->slot_cap ? mc->slot_cap * 2 : 64;
	uint32_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	free(mc->slot);
	mc->slot = slot;
	mc->slot_cap = cap;
	for (size_t i = 0; i < info->nmodules; i++)
		*module_slot(info, info->modules[i].bias, info->modules[i].path) = (uint32_t)i + 1;
	return 0;
}

static struct hp_life *last_life(const struct hp_module *m)
{
	return m->nlives ? &m->life[m->nlives - 1] : NULL;
}

/* The snapshot being read lists module i: a module not loaded at the last
 * complete snapshot was loaded since, i.e. after its tick. */
static int module_listed(struct hp_trace_info *info, uint32_t i)
{
	struct hp_module_clock *mc = &info->modclock;
	struct hp_module *m = &info->modules[i];
	m->listed = mc->serial;
	mc->listed++;
	struct hp_life *last = last_life(m);
	if (last && last->to == HP_TICK_NEVER)
		return 0;
	struct hp_life *life = realloc(m->life, (m->nlives + 1) * sizeof(*life));
	if (!life)
		return -1;
	m->life = life;
	life[m->nlives++] = (struct hp_life){ mc->tick, HP_TICK_NEVER };
	if (mc->nalive == mc->alive_cap) {
		size_t cap = mc->alive_cap ? mc->alive_cap * 2 : 64;
		uint32_t *alive = realloc(mc->alive, cap * sizeof(*alive));
		if (!alive)
			return -1;
		mc->alive = alive;
		mc->alive_cap = cap;
	}
	mc->alive[mc->nalive++] = i;
	return 0;
}

static int parse_segments(struct hp_module *m, struct cursor *c)
{
	m->seg = calloc(m->nseg ? m->nseg : 1, sizeof(*m->seg));
	if (!m->seg)
		return -1;
	for (uint32_t i = 0; i < m->nseg; i++) {
		m->seg[i].start = take64(c);
		m->seg[i].size = take64(c);
		m->seg[i].offset = take64(c);
		m->seg[i].flags = take32(c);
		take32(c);
	}
	return 0;
}

/* Room for one more module, grown by doubling: one at a time made a map
 * of many objects quadratic wherever realloc copies (ASan's always does). */
static int modules_reserve(struct hp_trace_info *info)
{
	if (info->nmodules < info->modules_cap)
		return 0;
	size_t cap = info->modules_cap ? info->modules_cap * 2 : 16;
	struct hp_module *mods = realloc(info->modules, cap * sizeof(*mods));
	if (!mods)
		return -1;
	info->modules = mods;
	info->modules_cap = cap;
	return 0;
}

static int parse_one_module(struct hp_trace_info *info, struct cursor *c)
{
	struct hp_module m = { 0 };
	m.bias = take64(c);
	m.path = take_string(c);
	uint32_t id_len = take32(c);
	const uint8_t *id = take(c, id_len);
	m.nseg = take32(c);
	if (c->bad || !m.path || id_len > sizeof(m.build_id) || m.nseg > (size_t)(c->end - c->p) / 32)
		goto bad;
	memcpy(m.build_id, id, id_len);
	m.build_id_len = id_len;
	if (module_slots_reserve(info))
		goto bad;
	uint32_t *slot = module_slot(info, m.bias, m.path);
	if (*slot) {
		take(c, (size_t)m.nseg * 32);
		free(m.path);
		return module_listed(info, *slot - 1);
	}
	if (modules_reserve(info) || parse_segments(&m, c))
		goto bad;
	info->modules[info->nmodules] = m;
	*slot = (uint32_t)++info->nmodules;
	return module_listed(info, *slot - 1);
bad:
	free(m.path);
	free(m.seg);
	return -1;
}

static int parse_modules(struct hp_trace_info *info, struct cursor *c)
{
	if (info->modclock.read_ahead)
		return 0;
	if (!info->modclock.serial)
		info->modclock.serial = 1;
	uint32_t n = take32(c);
	for (uint32_t i = 0; i < n && !c->bad; i++)
		if (parse_one_module(info, c))
			return -1;
	return 0;
}

/* MODULES_AT: the snapshot just read is complete, as of tick; the modules
 * with an open life that it did not list were unloaded by then. */
static int parse_modules_at(struct hp_trace_info *info, struct cursor *c)
{
	struct hp_module_clock *mc = &info->modclock;
	if (mc->read_ahead)
		return 0;
	uint64_t tick = take64(c);
	uint32_t count = take32(c);
	take32(c);
	if (c->bad || count != mc->listed)
		return -1;
	if (!mc->serial)
		mc->serial = 1;
	for (size_t i = 0; i < mc->nalive;) {
		struct hp_module *m = &info->modules[mc->alive[i]];
		if (m->listed == mc->serial) {
			i++;
			continue;
		}
		struct hp_life *last = last_life(m);
		last->to = tick > last->from ? tick : last->from;
		mc->alive[i] = mc->alive[--mc->nalive];
	}
	mc->tick = tick;
	mc->serial++;
	mc->listed = 0;
	return 0;
}

int hp_module_loaded_at(const struct hp_module *m, uint64_t tick)
{
	size_t lo = 0, hi = m->nlives; /* the first life that begins after tick */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->life[mid].from <= tick)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && tick < m->life[lo - 1].to;
}

static void free_modules(struct hp_trace_info *info)
{
	for (size_t i = 0; i < info->nmodules; i++) {
		free(info->modules[i].path);
		free(info->modules[i].seg);
		free(info->modules[i].life);
	}
	free(info->modules);
	free(info->modclock.alive);
	free(info->modclock.slot);
	info->modules = NULL;
	info->nmodules = 0;
	info->modules_cap = 0;
	memset(&info->modclock, 0, sizeof(info->modclock));
}

/* hp_reader_next, passing over EVENTS records unread: the module map is a
 * small part of a trace. Anything but a whole EVENTS record is left to
 * hp_reader_next, which reads it or says what is wrong. */
static int next_record_but_events(struct hp_reader *r, uint32_t *type, const uint8_t **payload,
				  uint32_t *size, char *err, size_t errlen)
{
	uint8_t h[HP_RECORD_HEADER_SIZE];
	while (fread(h, 1, sizeof(h), r->f) == sizeof(h)) {
		uint64_t n = hp_rd32(h + 4);
		if (hp_rd32(h) != HP_REC_EVENTS || n > HP_RECORD_MAX ||
		    r->offset + HP_RECORD_HEADER_SIZE + n > r->size)
			break;
		if (fseek(r->f, (long)n, SEEK_CUR))
			break;
		r->offset += HP_RECORD_HEADER_SIZE + n;
	}
	if (fseek(r->f, (long)r->offset, SEEK_SET))
		return fail(err, errlen, r->path, "read error");
	return hp_reader_next(r, type, payload, size, err, errlen);
}

static int read_module_records(struct hp_reader *r, struct hp_trace_info *map, char *err,
			       size_t errlen)
{
	uint32_t type, size;
	const uint8_t *payload;
	int rc;
	while ((rc = next_record_but_events(r, &type, &payload, &size, err, errlen)) == 1) {
		if (type == HP_REC_END)
			return 0;
		if ((type == HP_REC_MODULES || type == HP_REC_MODULES_AT || type == HP_REC_CLOCK ||
		     type == HP_REC_CALIBRATION) &&
		    hp_trace_info_add(map, type, payload, size, err, errlen))
			return -1;
	}
	/* A cut last record (kill -9, a full disk): the map before it is
	 * whole, and the main pass decides whether a cut trace is read. */
	return rc < 0 && hp_reader_cut_at(r) ? 0 : rc;
}

int hp_trace_read_module_map(const char *path, struct hp_trace_info *info, char *err,
			     size_t errlen)
{
	struct hp_trace_info map = { 0 };
	struct hp_reader *r = hp_reader_open(path, err, errlen);
	if (!r)
		return -1;
	int rc = read_module_records(r, &map, err, errlen);
	hp_reader_close(r);
	if (rc) {
		free_modules(&map);
		return -1;
	}
	free_modules(info);
	info->modules = map.modules;
	info->nmodules = map.nmodules;
	info->modules_cap = map.modules_cap;
	info->modclock = map.modclock;
	info->modclock.read_ahead = 1;
	for (int i = 0; i < 2; i++) {
		info->ahead_tick[i] = map.clock_tick[i];
		info->ahead_ns[i] = map.clock_ns[i];
	}
	info->nahead = map.nclocks;
	/* The end's calibration too: the driver takes a hook pair's cost out
	 * from the first event on (reading it again later changes nothing). */
	for (int i = HP_CALIBRATION_START; i <= HP_CALIBRATION_END; i++)
		if (map.calib[i].pairs)
			info->calib[i] = map.calib[i];
	return 0;
}

/*
 * Stream ids are dense from 0 and every stream has a record of its own (a
 * THREAD or LOST record, 20 bytes at least), so a file of `size` bytes
 * holds fewer than size / 20 streams: a larger id is corruption, and must
 * not make the reader allocate for it.
 */
uint32_t hp_trace_stream_limit(uint64_t size)
{
	uint64_t n = size / 20 + 1;
	return n < HP_STREAMS_MAX ? (uint32_t)n : HP_STREAMS_MAX;
}

uint64_t hp_reader_size(const struct hp_reader *r) { return r->size; }

uint64_t hp_reader_cut_at(const struct hp_reader *r) { return r->cut_at; }

struct hp_stream_info *hp_trace_stream(struct hp_trace_info *info, uint32_t stream)
{
	uint32_t limit = info->stream_limit ? info->stream_limit : HP_STREAMS_MAX;
	if (stream >= limit)
		return NULL;
	if (stream >= info->nstreams) {
		size_t n = (size_t)stream + 16;
		struct hp_stream_info *s = realloc(info->streams, n * sizeof(*s));
		if (!s)
			return NULL;
		memset(s + info->nstreams, 0, (n - info->nstreams) * sizeof(*s));
		info->streams = s;
		info->nstreams = n;
	}
	struct hp_stream_info *s = &info->streams[stream];
	s->stream = stream;
	return s;
}

static int parse_thread(struct hp_trace_info *info, struct cursor *c)
{
	uint32_t stream = take32(c), tid = take32(c), len = take32(c);
	const uint8_t *name = take(c, len);
	struct hp_stream_info *s = c->bad ? NULL : hp_trace_stream(info, stream);
	if (!s)
		return -1;
	s->tid = tid;
	s->seen = 1;
	len = len < sizeof(s->name) - 1 ? len : (uint32_t)sizeof(s->name) - 1;
	memcpy(s->name, name, len);
	s->name[len] = 0;
	return 0;
}

static int parse_lost(struct hp_trace_info *info, struct cursor *c)
{
	uint32_t stream = take32(c);
	uint32_t reason = take32(c);
	uint64_t count = take64(c);
	if (c->bad)
		return -1;
	info->lost_by_reason[reason <= HP_LOST_UNFILLED ? reason : 0] += count;
	if (stream == HP_STREAM_NONE) {
		info->lost_global += count;
		return 0;
	}
	struct hp_stream_info *s = hp_trace_stream(info, stream);
	if (!s)
		return -1;
	s->lost += count;
	return 0;
}

static int parse_parent(struct hp_trace_info *info, struct cursor *c)
{
	info->parent_pid = take32(c);
	info->parent_flags = take32(c);
	info->fork_tick = take64(c);
	free(info->parent_trace);
	info->parent_trace = take_string(c);
	info->has_parent = info->parent_trace != NULL;
	return info->has_parent ? 0 : -1;
}

static int parse_calibration(struct hp_trace_info *info, struct cursor *c)
{
	uint32_t when = take32(c), pairs = take32(c);
	uint64_t inside = take64(c), outside = take64(c);
	if (c->bad || when > HP_CALIBRATION_END || !pairs)
		return -1;
	info->calib[when] = (struct hp_calib){ pairs, (double)inside / pairs, (double)outside / pairs };
	return 0;
}

int hp_trace_hook_cost(const struct hp_trace_info *info, double *inside, double *outside)
{
	*inside = *outside = 0;
	int n = 0;
	for (int i = HP_CALIBRATION_START; i <= HP_CALIBRATION_END; i++)
		if (info->calib[i].pairs) {
			*inside += info->calib[i].inside;
			*outside += info->calib[i].outside;
			n++;
		}
	if (n) {
		*inside /= n;
		*outside /= n;
	}
	return n;
}

static int parse_end(struct hp_trace_info *info, struct cursor *c)
{
	info->end_events = take64(c);
	info->end_lost = take64(c);
	info->has_end = !c->bad;
	return 0;
}

/* count u32 then count u64 addresses, filling the rest of the record. */
static int take_frames(struct cursor *c, struct hp_stack *st, uint32_t max)
{
	uint32_t n = take32(c);
	if (c->bad || n > max || (size_t)(c->end - c->p) != (size_t)n * 8)
		return -1;
	uint64_t *pc = malloc((n ? n : 1) * sizeof(*pc));
	if (!pc)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		pc[i] = take64(c);
	free(st->pc);
	st->pc = pc;
	st->n = n;
	return 0;
}

static int parse_stack(struct hp_trace_info *info, struct cursor *c)
{
	uint32_t stream = take32(c), flags = take32(c);
	struct hp_stream_info *s = c->bad ? NULL : hp_trace_stream(info, stream);
	if (!s || take_frames(c, &s->root, HP_STACK_FRAMES_MAX))
		return -1;
	s->root.flags = flags;
	return 0;
}

static int parse_crash(struct hp_trace_info *info, struct cursor *c)
{
	struct hp_crash *k = &info->crash;
	k->stream = take32(c);
	k->tid = take32(c);
	k->signal = take32(c);
	k->code = (int32_t)take32(c);
	k->addr = take64(c);
	k->unwind_ns = take64(c);
	uint32_t flags = take32(c);
	if (take_frames(c, &k->stack, HP_STACK_FRAMES_MAX))
		return -1;
	k->stack.flags = flags;
	k->present = 1;
	return 0;
}

/* An id past what the runtime hands out is corruption, not a reason to
 * allocate. */
static int parse_string(struct hp_trace_info *info, struct cursor *c)
{
	uint32_t id = take32(c);
	char *s = take_string(c);
	if (!s || id >= HP_STRINGS_MAX) {
		free(s);
		return -1;
	}
	if (id >= info->nstrings) {
		uint32_t n = info->nstrings ? info->nstrings : 64;
		while (n <= id)
			n *= 2;
		char **more = realloc(info->strings, n * sizeof(*more));
		if (!more) {
			free(s);
			return -1;
		}
		memset(more + info->nstrings, 0, (n - info->nstrings) * sizeof(*more));
		info->strings = more;
		info->nstrings = n;
	}
	free(info->strings[id]);
	info->strings[id] = s;
	return 0;
}

static void free_filter(struct hp_trace_info *info)
{
	free(info->filter_exclude);
	free(info->filter_include);
	info->filter_exclude = info->filter_include = NULL;
	info->has_filter = 0;
}

static int parse_filter(struct hp_trace_info *info, struct cursor *c)
{
	free_filter(info);
	info->filter_min_ns = take64(c);
	info->filter_min_calls = take64(c);
	info->filter_min_ticks = take64(c);
	info->filter_depth = take32(c);
	take32(c); /* reserved */
	info->filter_exclude = take_string(c);
	info->filter_include = take_string(c);
	if (c->bad || !info->filter_exclude || !info->filter_include) {
		free_filter(info);
		return -1;
	}
	info->has_filter = 1;
	return 0;
}

void hp_trace_filters_text(const struct hp_trace_info *info, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	if (!f) {
		*buf = 0;
		return;
	}
	const char *sep = "";
	if (info->has_filter && *info->filter_exclude)
		fprintf(f, "%sexclude '%s'", sep, info->filter_exclude), sep = ", ";
	if (info->has_filter && *info->filter_include)
		fprintf(f, "%sinclude '%s'", sep, info->filter_include), sep = ", ";
	if (info->has_filter && info->filter_depth)
		fprintf(f, "%sdepth %u", sep, info->filter_depth), sep = ", ";
	if (info->has_filter && info->filter_min_ns)
		fprintf(f, "%smin %llu ns", sep, (unsigned long long)info->filter_min_ns);
	fputc(0, f);
	fclose(f);
	buf[len - 1] = 0;
}

int hp_trace_info_add(struct hp_trace_info *info, uint32_t type, const uint8_t *payload,
		      uint32_t size, char *err, size_t errlen)
{
	struct cursor c = { payload, payload + size, 0 };
	int rc = 0;
	switch (type) {
	case HP_REC_PROCESS: rc = parse_process(info, &c); break;
	case HP_REC_CLOCK: rc = parse_clock(info, &c); break;
	case HP_REC_MODULES: rc = parse_modules(info, &c); break;
	case HP_REC_MODULES_AT: rc = parse_modules_at(info, &c); break;
	case HP_REC_THREAD: rc = parse_thread(info, &c); break;
	case HP_REC_LOST: rc = parse_lost(info, &c); break;
	case HP_REC_END: rc = parse_end(info, &c); break;
	case HP_REC_CRASH: rc = parse_crash(info, &c); break;
	case HP_REC_STACK: rc = parse_stack(info, &c); break;
	case HP_REC_PARENT: rc = parse_parent(info, &c); break;
	case HP_REC_STRING: rc = parse_string(info, &c); break;
	case HP_REC_CALIBRATION: rc = parse_calibration(info, &c); break;
	case HP_REC_FILTER: rc = parse_filter(info, &c); break;
	default: return 0; /* EVENTS are the decoder's; unknown types are skipped */
	}
	if (rc || c.bad) {
		snprintf(err, errlen, "corrupt record of type %u", type);
		return -1;
	}
	return 0;
}

uint64_t hp_trace_lost_in_threads(const struct hp_trace_info *info)
{
	uint64_t lost = 0;
	for (size_t i = 0; i < info->nstreams; i++)
		lost += info->streams[i].lost;
	return lost;
}

void hp_trace_info_free(struct hp_trace_info *info)
{
	free_argv(info);
	free(info->exe);
	free(info->parent_trace);
	free_filter(info);
	free_modules(info);
	for (size_t i = 0; i < info->nstreams; i++)
		free(info->streams[i].root.pc);
	free(info->streams);
	free(info->crash.stack.pc);
	for (uint32_t i = 0; i < info->nstrings; i++)
		free(info->strings[i]);
	free(info->strings);
	memset(info, 0, sizeof(*info));
}

static int timebase_of(uint32_t source, const uint64_t tick[2], const uint64_t ns[2], int n,
		       struct hp_timebase *tb)
{
	tb->tick0 = tick[0];
	tb->ns_per_tick = 1.0;
	if (source == HP_CLOCK_MONOTONIC)
		return 0;
	if (n < 2 || tick[1] <= tick[0])
		return -1;
	tb->ns_per_tick = (double)(ns[1] - ns[0]) / (double)(tick[1] - tick[0]);
	return 0;
}

int hp_trace_timebase(const struct hp_trace_info *info, struct hp_timebase *tb)
{
	return timebase_of(info->clock_source, info->clock_tick, info->clock_ns, info->nclocks, tb);
}

int hp_trace_timebase_ahead(const struct hp_trace_info *info, struct hp_timebase *tb)
{
	return timebase_of(info->clock_source, info->ahead_tick, info->ahead_ns, info->nahead, tb);
}
