/*
 * hp_view_chrome.c - Chrome's Trace Event JSON, for the Perfetto UI and
 * chrome://tracing: one complete ("X") event per call, written at its exit
 * since X carries the duration (the viewers sort events by time, so the
 * file's order does not matter to them), and thread_name/process_name
 * metadata at the end, once the names are final. A frame whose exit was
 * lost in a gap is no call: it becomes a B/E pair with args.end "lost".
 * Marks are instant ("i") events, values counter ("C") events.
 *
 * Times: microseconds with three decimals, on CLOCK_MONOTONIC_RAW (the
 * clock of the traces' CLOCK records, one for every process of a boot), so
 * that the processes of a fork tree or of successive runs line up. Each
 * endpoint is rounded to the nanosecond first, so children stay within
 * their parents.
 *
 * Memory: the escaped names, one per function. The output is written as
 * the calls come: its size grows with the calls shown, so a trace that
 * would give more than about 1 GB gets one warning with what to do instead.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hp_drive.h"
#include "hp_path.h"

/* A trace's events take about 1.5 bytes each (measured on examples/ and
 * the e2e programs; deltas of a few ticks): fewer bytes per event would
 * only make the estimate of the events to come larger. */
#define TRACE_BYTES_PER_EVENT 1.5
#define FIRST_CHECK_EVENTS (1u << 20)

struct ctrace {            /* one per trace read */
	uint32_t pid;      /* in the output: the trace's, unless an earlier trace had it */
	char *process;     /* the program's name */
};

struct cname {
	char *s;
	size_t len;
};

struct chrome {
	struct ctrace *traces;
	uint32_t ntraces;
	uint64_t base_ns;  /* CLOCK_MONOTONIC_RAW at the current trace's time 0 */
	struct cname *name; /* per function: its name as a JSON string, quotes included */
	size_t nname;
	int any;           /* an event was written: the next needs a comma */
	uint64_t bytes;    /* written */
	uint64_t trace_size, check_at;
	uint64_t bytes_at_trace; /* bytes when the current trace began */
	int warned;
};

/* ---- JSON text ---------------------------------------------------------- */

/* s as a JSON string: quotes, backslashes and control characters escaped;
 * bytes of 0x80 and up go through (names are UTF-8, or bytes the viewers
 * show as they can). */
static char *json_string(const char *s)
{
	size_t n = 2;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p < 0x20 ? 6 : (*p == '"' || *p == '\\') ? 2 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20) {
			o += sprintf(o, "\\u%04x", *p);
		} else {
			if (*p == '"' || *p == '\\')
				*o++ = '\\';
			*o++ = (char)*p;
		}
	}
	*o++ = '"';
	*o = 0;
	return out;
}

static const struct cname *name_of(struct chrome *c, const struct hp_fntab *fns, uint32_t fn)
{
	if (fn >= c->nname) {
		size_t n = c->nname ? c->nname : 256;
		while (n <= fn)
			n *= 2;
		struct cname *q = realloc(c->name, n * sizeof(*q));
		if (!q)
			return NULL;
		memset(q + c->nname, 0, (n - c->nname) * sizeof(*q));
		c->name = q;
		c->nname = n;
	}
	struct cname *nm = &c->name[fn];
	if (!nm->s) {
		if (!(nm->s = json_string(hp_fntab_name(fns, fn))))
			return NULL;
		nm->len = strlen(nm->s);
	}
	return nm;
}

/* Decimal digits of v at p, backwards from its end; returns the first. */
static char *put_u64(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/* ns as microseconds with three decimals, appended at o. */
static char *put_us(char *o, uint64_t ns)
{
	char tmp[24], *end = tmp + sizeof(tmp);
	char *p = put_u64(end - 4, ns / 1000);
	unsigned frac = (unsigned)(ns % 1000);
	end[-4] = '.';
	end[-3] = (char)('0' + frac / 100);
	end[-2] = (char)('0' + frac / 10 % 10);
	end[-1] = (char)('0' + frac % 10);
	memcpy(o, p, (size_t)(end - p));
	return o + (end - p);
}

static char *put_str(char *o, const char *s)
{
	size_t n = strlen(s);
	memcpy(o, s, n);
	return o + n;
}

static char *put_ids(char *o, uint32_t pid, uint32_t tid)
{
	char tmp[24], *end = tmp + sizeof(tmp), *p;
	o = put_str(o, "\"pid\":");
	p = put_u64(end, pid);
	memcpy(o, p, (size_t)(end - p));
	o += end - p;
	o = put_str(o, ",\"tid\":");
	p = put_u64(end, tid);
	memcpy(o, p, (size_t)(end - p));
	return o + (end - p);
}

/* ---- the size warning ------------------------------------------------------ */

/* Once enough events are decoded to tell the bytes per event, the output
 * to expect from the rest of the trace, judged by its size. */
static void check_size(struct hp_view *v)
{
	struct chrome *c = v->state;
	const struct hp_analysis *a = hp_drive_analysis(v->d);
	if (c->warned || !a || a->events < c->check_at)
		return;
	c->check_at = a->events * 2;
	double per_event = (double)(c->bytes - c->bytes_at_trace) / (double)a->events;
	double events = (double)c->trace_size / TRACE_BYTES_PER_EVENT;
	double expect = (double)c->bytes_at_trace + per_event * (events > a->events ? events : a->events);
	if (expect < HP_VIEW_WARN_BYTES)
		return;
	c->warned = 1;
	char line[256];
	snprintf(line, sizeof(line), "the Chrome JSON will take about %.1f GB; "
		 "--min=DURATION, --depth=N or --time=FROM,TO make it smaller, "
		 "and --format=perfetto is about 3.5 times smaller", expect / 1e9);
	hp_drive_warn(v->d, line);
}

/* ---- the view ------------------------------------------------------------- */

static int open_chrome(struct hp_view *v, char *err, size_t errlen)
{
	struct chrome *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v->state = c;
	if (fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", v->out) == EOF) {
		snprintf(err, errlen, "the output could not be written");
		return -1;
	}
	return 0;
}

static int pid_taken(const struct chrome *c, uint32_t pid)
{
	for (uint32_t i = 0; i < c->ntraces; i++)
		if (c->traces[i].pid == pid)
			return 1;
	return 0;
}

static int trace_chrome(struct hp_view *v, const struct hp_analysis *a, char *err, size_t errlen)
{
	struct chrome *c = v->state;
	struct ctrace *t = realloc(c->traces, (c->ntraces + 1) * sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->traces = t;
	/* Each process its own pid, even the same trace read twice: pid_max
	 * is at most 2^22, so what lies above is no real process's. */
	uint32_t pid = a->info.pid;
	while (pid_taken(c, pid))
		pid += 1u << 22;
	t[c->ntraces].pid = pid;
	if (!(t[c->ntraces].process = strdup(hp_path_base(a->info.exe)))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->ntraces++;
	c->base_ns = a->info.nahead ? a->info.ahead_ns[0] : a->info.clock_ns[0];
	struct stat st;
	c->trace_size = stat(a->path, &st) ? 0 : (uint64_t)st.st_size;
	c->bytes_at_trace = c->bytes;
	c->check_at = FIRST_CHECK_EVENTS;
	return 0;
}

static uint64_t at_ns(const struct chrome *c, double ns)
{
	return c->base_ns + (ns > 0 ? (uint64_t)(ns + 0.5) : 0);
}

/* The text that begins each of a thread's events: "pid":P,"tid":T. */
struct cids {
	uint8_t len;
	char s[47];
};

static const struct cids *ids_of(struct chrome *c, struct hp_vthread *t)
{
	struct cids *ids = t->data;
	if (!ids) {
		if (!(ids = malloc(sizeof(*ids))))
			return NULL;
		ids->len = (uint8_t)(put_ids(ids->s, c->traces[t->trace].pid, t->tid) - ids->s);
		t->data = ids;
	}
	return ids;
}

#define PUT(o, lit) (memcpy((o), (lit), sizeof(lit) - 1), (o) + sizeof(lit) - 1)

/* The line of an event, up to its name: ",\n" unless it is the first, then
 * {"ph":PH,"pid":P,"tid":T,"ts":TS. */
static char *event_head(struct chrome *c, char *o, char ph, const struct cids *ids, uint64_t ts)
{
	if (c->any)
		o = PUT(o, ",\n");
	c->any = 1;
	o = PUT(o, "{\"ph\":\"");
	*o++ = ph;
	o = PUT(o, "\",");
	memcpy(o, ids->s, ids->len);
	o += ids->len;
	o = PUT(o, ",\"ts\":");
	return put_us(o, ts);
}

static int write_line(struct hp_view *v, const char *buf, size_t n)
{
	struct chrome *c = v->state;
	c->bytes += n;
	return fwrite_unlocked(buf, 1, n, v->out) == n ? 0 : -1;
}

static int exit_chrome(struct hp_view *v, struct hp_vthread *t, const struct hp_vframe *f)
{
	struct chrome *c = v->state;
	const struct cname *name = name_of(c, hp_drive_fns(v->d), f->fn);
	const struct cids *ids = ids_of(c, t);
	if (!name || !ids)
		return -1;
	char stack[512];
	char *buf = name->len + 200 <= sizeof(stack) ? stack : malloc(name->len + 200);
	if (!buf)
		return -1;
	uint64_t start = at_ns(c, f->start), end = at_ns(c, f->end);
	char *o = event_head(c, buf, f->lost ? 'B' : 'X', ids, start);
	if (!f->lost) {
		o = PUT(o, ",\"dur\":");
		o = put_us(o, end - start);
	}
	o = PUT(o, ",\"name\":");
	memcpy(o, name->s, name->len);
	o += name->len;
	if (f->lost)
		o = PUT(o, ",\"args\":{\"end\":\"lost\"}");
	*o++ = '}';
	int rc = write_line(v, buf, (size_t)(o - buf));
	if (!rc && f->lost) {
		/* Where the trace lost it: its last tick before the gap. */
		o = event_head(c, buf, 'E', ids, end);
		*o++ = '}';
		rc = write_line(v, buf, (size_t)(o - buf));
	}
	if (buf != stack)
		free(buf);
	check_size(v);
	return rc;
}

/* A mark is an instant event of its thread, {"ph":"i",...,"s":"t","name":
 * TEXT}; a value a counter event, {"ph":"C",...,"name":NAME,"args":{NAME:
 * V}}: the viewers draw one counter track per process and name. */
static int note_chrome(struct hp_view *v, struct hp_vthread *t, const struct hp_vnote *n)
{
	struct chrome *c = v->state;
	const struct cids *ids = ids_of(c, t);
	char *text = json_string(n->text);
	char *buf = text ? malloc(2 * strlen(text) + 200) : NULL;
	if (!ids || !buf) {
		free(text);
		return -1;
	}
	int mark = n->kind == HP_NOTE_MARK;
	char *o = event_head(c, buf, mark ? 'i' : 'C', ids, at_ns(c, n->at));
	o = mark ? PUT(o, ",\"s\":\"t\",\"name\":") : PUT(o, ",\"name\":");
	o = put_str(o, text);
	if (!mark)
		o += sprintf(o, ",\"args\":{%s:%lld}", text, (long long)n->value);
	*o++ = '}';
	int rc = write_line(v, buf, (size_t)(o - buf));
	free(buf);
	free(text);
	return rc;
}

/* {"ph":"M","pid":P,"tid":T,"name":WHAT,"args":{"name":NAME}} */
static int metadata(struct hp_view *v, const char *what, const char *ids, const char *name)
{
	struct chrome *c = v->state;
	char *s = json_string(name);
	if (!s)
		return -1;
	char *line = NULL;
	int n = asprintf(&line, "%s{\"ph\":\"M\",%s,\"name\":\"%s\",\"args\":{\"name\":%s}}",
			 c->any ? ",\n" : "", ids, what, s);
	free(s);
	if (n < 0)
		return -1;
	c->any = 1;
	int rc = write_line(v, line, (size_t)n);
	free(line);
	return rc;
}

static int end_chrome(struct hp_view *v, char *err, size_t errlen)
{
	struct chrome *c = v->state;
	int rc = 0;
	char ids[48];
	for (uint32_t i = 0; i < c->ntraces && !rc; i++) {
		*put_ids(ids, c->traces[i].pid, 0) = 0;
		rc = metadata(v, "process_name", ids, c->traces[i].process);
	}
	for (uint32_t i = 0; i < hp_drive_nthreads(v->d) && !rc; i++) {
		struct hp_vthread *t = hp_drive_thread(v->d, i);
		const struct cids *tids = ids_of(c, t);
		if (!tids) {
			rc = -1;
			break;
		}
		char name[96];
		if (t->name[0])
			snprintf(name, sizeof(name), "%s", t->name);
		else
			snprintf(name, sizeof(name), "%s %s", t->tid == t->pid ? "main" : "thread",
				 t->process);
		snprintf(ids, sizeof(ids), "%.*s", (int)tids->len, tids->s);
		rc = metadata(v, "thread_name", ids, name);
	}
	if (!rc && fputs("\n]}\n", v->out) == EOF)
		rc = -1;
	if (rc)
		snprintf(err, errlen, "out of memory, or the output could not be written");
	return rc;
}

static void close_chrome(struct hp_view *v)
{
	struct chrome *c = v->state;
	if (!c)
		return;
	for (uint32_t i = 0; i < c->ntraces; i++)
		free(c->traces[i].process);
	free(c->traces);
	for (size_t i = 0; i < c->nname; i++)
		free(c->name[i].s);
	free(c->name);
	free(c);
	v->state = NULL;
}

const struct hp_view_ops hp_view_chrome = {
	.name = "chrome",
	.summary = "Chrome Trace Event JSON (X events; marks, values: i, C), for the Perfetto UI and chrome://tracing",
	.flags = HP_VIEW_EXPORT | HP_VIEW_NAMES_FIRST,
	.open = open_chrome,
	.trace = trace_chrome,
	.exit = exit_chrome,
	.note = note_chrome,
	.end = end_chrome,
	.thread_free = free,
	.close = close_chrome,
};
