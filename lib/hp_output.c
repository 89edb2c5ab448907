/*
 * hp_output.c - trace file naming and batched appends; the file itself is
 * the platform's (hp_platform.h, "the trace file").
 */
#include "hp_output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hp_format.h"

#define PENDING_BYTES (4u << 20)
#define FLUSH_AT (1u << 20)

static char path[4096];
/* Where relative names are resolved: the working directory of the first
 * trace's start. A forked child's trace goes beside its parent's, even if
 * the child changed directory (daemon) before its first event. */
static char base_dir[4096];
static int keep_base_dir;
static int header_written;
static int renamed;
static int failed;
static uint8_t *pending;
static size_t pending_len;
static size_t record_start;

const char *hp_output_path(void) { return path; }
int hp_output_renamed(void) { return renamed; }
size_t hp_output_pending(void) { return pending_len; }

static int append(char *out, size_t outlen, size_t *n, const char *s)
{
	size_t len = strlen(s);
	if (*n + len >= outlen)
		return -1;
	memcpy(out + *n, s, len + 1);
	*n += len;
	return 0;
}

int hp_output_expand(const char *spec, const char *prog, int pid, char *out, size_t outlen)
{
	char pidstr[16];
	const char separator[2] = { HP_PATH_SEPARATOR, 0 };
	size_t n = 0;
	snprintf(pidstr, sizeof(pidstr), "%d", pid);
	out[0] = 0;
	if (!spec || hp_path_kind(spec) == HP_PATH_DIR) {
		if (spec && (append(out, outlen, &n, spec) || append(out, outlen, &n, separator)))
			return -1;
		spec = "%n-%p.hookprof";
	}
	for (const char *s = spec; *s; s++) {
		char c[2] = { *s, 0 };
		const char *piece = c;
		if (s[0] == '%' && s[1] == 'p')
			piece = pidstr, s++;
		else if (s[0] == '%' && s[1] == 'n')
			piece = prog, s++;
		if (append(out, outlen, &n, piece))
			return -1;
	}
	return 0;
}

/* Relative paths are made absolute now: the program may chdir later. */
static int make_absolute(char *p, size_t len)
{
	char tmp[4096];
	if (hp_path_is_absolute(p))
		return 0;
	if (!keep_base_dir && hp_cwd(base_dir, sizeof(base_dir)))
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s%c%s", base_dir, HP_PATH_SEPARATOR, p) >= (int)sizeof(tmp))
		return -1;
	if (strlen(tmp) >= len)
		return -1;
	strcpy(p, tmp);
	return 0;
}

static int create_exclusive(const char *base, char *err, size_t errlen)
{
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s", base);
		else if (snprintf(path, sizeof(path), "%s.%d", base, i) >= (int)sizeof(path))
			break;
		int rc = hp_file_create(path);
		if (rc == 0) {
			renamed = i > 0;
			return 0;
		}
		if (rc < 0) {
			snprintf(err, errlen, "cannot create trace file '%s': %s", path, strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "cannot create trace file '%s': every numbered name is taken", base);
	return -1;
}

/*
 * HOOKPROF_OUTPUT names a character device (/dev/null, /dev/full, a
 * terminal) or a FIFO: written as asked, not replaced by a numbered file.
 */
static int open_output(const char *base, char *err, size_t errlen)
{
	switch (hp_path_kind(base)) {
	case HP_PATH_NONE:
	case HP_PATH_FILE:
	case HP_PATH_DIR:
		return create_exclusive(base, err, errlen);
	case HP_PATH_CHAR:
	case HP_PATH_FIFO:
		snprintf(path, sizeof(path), "%s", base);
		return hp_file_open_special(base, hp_path_kind(base) == HP_PATH_FIFO, err, errlen);
	default:
		snprintf(err, errlen, "'%s' is not a file, a character device or a FIFO", base);
		return -1;
	}
}

static void put_file_header(void)
{
	uint8_t *h = pending;
	memset(h, 0, HP_FILE_HEADER_SIZE);
	memcpy(h, HP_MAGIC, HP_MAGIC_LEN);
	h[8] = HP_VERSION_MAJOR;
	h[10] = HP_VERSION_MINOR;
	hp_le32(h + 12, HP_BYTE_ORDER_MARK);
	hp_le32(h + 16, HP_FILE_HEADER_SIZE);
	pending_len = HP_FILE_HEADER_SIZE;
}

int hp_output_create(const char *spec, const char *prog, int pid, char *err, size_t errlen)
{
	char base[4096];
	size_t len = spec ? strlen(spec) : 0;
	/* "out/" means a directory (hp_output_expand names the file in it): one
	 * that is not there is what to say, not that a file cannot be made. */
	if (len && (spec[len - 1] == '/' || spec[len - 1] == HP_PATH_SEPARATOR) &&
	    hp_path_kind(spec) != HP_PATH_DIR) {
		snprintf(err, errlen, "the directory '%s' (HOOKPROF_OUTPUT) does not exist", spec);
		return -1;
	}
	if (hp_output_expand(spec, prog, pid, base, sizeof(base)) || make_absolute(base, sizeof(base))) {
		snprintf(err, errlen, "trace file name from '%s' is too long", spec ? spec : prog);
		return -1;
	}
	if (open_output(base, err, errlen))
		return -1;
	pending = hp_pages_alloc(PENDING_BYTES);
	if (!pending) {
		snprintf(err, errlen, "no memory for the output buffer");
		hp_file_discard(path);
		return -1;
	}
	put_file_header();
	return 0;
}

uint8_t *hp_output_begin(uint32_t type, size_t max_payload)
{
	size_t need = HP_RECORD_HEADER_SIZE + max_payload;
	if (failed || !pending || need > PENDING_BYTES)
		return NULL;
	if (pending_len + need > PENDING_BYTES && hp_output_flush() < 0)
		return NULL;
	record_start = pending_len;
	hp_le32(pending + record_start, type);
	return pending + record_start + HP_RECORD_HEADER_SIZE;
}

void hp_output_end(uint8_t *end)
{
	size_t size = (size_t)(end - pending) - record_start - HP_RECORD_HEADER_SIZE;
	hp_le32(pending + record_start + 4, (uint32_t)size);
	pending_len = (size_t)(end - pending);
	if (pending_len >= FLUSH_AT)
		hp_output_flush();
}

/* The end of the last whole record within the first n pending bytes. */
static size_t whole_records(size_t n)
{
	size_t pos = header_written ? 0 : HP_FILE_HEADER_SIZE;
	if (n < pos)
		return 0;
	while (pos + HP_RECORD_HEADER_SIZE <= n) {
		size_t end = pos + HP_RECORD_HEADER_SIZE + hp_rd32(pending + pos + 4);
		if (end > n)
			break;
		pos = end;
	}
	return pos;
}

/*
 * Writes the pending records. A short write (a full disk, a quota) leaves
 * the file cut inside a record: it is cut back to the last whole one, so
 * that it still reads. Under a file size limit (whose signal would end the
 * program) only the whole records that fit below it are written.
 */
static int write_pending(uint64_t len)
{
	uint64_t room = hp_file_room(len, pending_len);
	size_t n = room >= pending_len ? pending_len : whole_records((size_t)room);
	size_t done = hp_file_write(pending, n);
	if (done == pending_len)
		return 0;
	int why = n < pending_len && done == n ? EFBIG : errno;
	hp_file_truncate(len + whole_records(done));
	errno = why;
	return -1;
}

int hp_output_flush(void)
{
	if (failed || !pending)
		return -1;
	if (!pending_len)
		return 0;
	int saved = errno;
	uint64_t len = 0;
	int rc = hp_file_batch_begin(&len) ? -1 : write_pending(len);
	if (rc < 0) {
		hp_warn("cannot write trace file '%s': %s; the trace ends here", path, strerror(errno));
		failed = 1;
	}
	hp_file_batch_end();
	header_written = 1;
	pending_len = 0;
	errno = saved;
	return rc;
}

void hp_output_reset_in_child(void)
{
	hp_file_forget(); /* nothing if no trace was opened */
	hp_pages_free(pending, PENDING_BYTES);
	pending = NULL;
	pending_len = 0;
	failed = 0;
	renamed = 0;
	path[0] = 0;
	keep_base_dir = base_dir[0] != 0;
}
