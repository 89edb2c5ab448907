/*
 * hp_output.c - trace file creation and batched appends.
 */
#define _GNU_SOURCE
#include "hp_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"

#define PENDING_BYTES (4u << 20)
#define FLUSH_AT (1u << 20)

static char path[4096];
/* Where relative names are resolved: the working directory of the first
 * trace's start. A forked child's trace goes beside its parent's, even if
 * the child changed directory (daemon) before its first event. */
static char base_dir[4096];
static int keep_base_dir;
static int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;
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
	size_t n = 0;
	struct stat st;
	snprintf(pidstr, sizeof(pidstr), "%d", pid);
	out[0] = 0;
	if (!spec || (stat(spec, &st) == 0 && S_ISDIR(st.st_mode))) {
		if (spec && (append(out, outlen, &n, spec) || append(out, outlen, &n, "/")))
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
	if (p[0] == '/')
		return 0;
	if (!keep_base_dir && !getcwd(base_dir, sizeof(base_dir)))
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s/%s", base_dir, p) >= (int)sizeof(tmp))
		return -1;
	if (strlen(tmp) >= len)
		return -1;
	strcpy(p, tmp);
	return 0;
}

/*
 * The descriptor is kept, high above the numbers the program expects open()
 * to hand it (the lowest free one): opening the file for each batch would
 * take such a number for a moment, from the writer thread, under the
 * program's feet. The program may still close it, or reuse its number:
 * each batch first checks that it is still our file.
 */
static int high_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1024)
		return 1000;
	return (int)(rl.rlim_cur * 3 / 4);
}

static void keep_descriptor(int fd)
{
	struct stat st;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, high_floor());
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	out_fd = fd;
	if (fstat(fd, &st) == 0) {
		out_dev = st.st_dev;
		out_ino = st.st_ino;
	}
}

static int is_trace_file(int fd, struct stat *st)
{
	return fstat(fd, st) == 0 && st->st_dev == out_dev && st->st_ino == out_ino;
}

/* Our descriptor, reopened if the program closed it or took its number;
 * -1 (errno set) if the file itself is gone. */
static int trace_descriptor(void)
{
	struct stat st;
	if (out_fd >= 0 && is_trace_file(out_fd, &st))
		return st.st_nlink ? out_fd : (errno = ENOENT, -1);
	/* Not ours any more: the number is the program's now, left alone. */
	out_fd = -1;
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!is_trace_file(fd, &st)) {
		close(fd); /* another file under our name */
		errno = ENOENT;
		return -1;
	}
	keep_descriptor(fd);
	return out_fd;
}

static int create_exclusive(const char *base, char *err, size_t errlen)
{
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s", base);
		else if (snprintf(path, sizeof(path), "%s.%d", base, i) >= (int)sizeof(path))
			break;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			renamed = i > 0;
			keep_descriptor(fd);
			return 0;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create trace file '%s': %s", path, strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "cannot create trace file '%s': every numbered name is taken", base);
	return -1;
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
	if (hp_output_expand(spec, prog, pid, base, sizeof(base)) || make_absolute(base, sizeof(base))) {
		snprintf(err, errlen, "trace file name from '%s' is too long", spec ? spec : prog);
		return -1;
	}
	if (create_exclusive(base, err, errlen))
		return -1;
	pending = hp_pages_alloc(PENDING_BYTES);
	if (!pending) {
		snprintf(err, errlen, "no memory for the output buffer");
		close(out_fd);
		out_fd = -1;
		unlink(path);
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

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int hp_output_flush(void)
{
	if (failed || !pending)
		return -1;
	if (!pending_len)
		return 0;
	int saved = errno;
	int fd = trace_descriptor();
	int rc = fd < 0 ? -1 : write_all(fd, pending, pending_len);
	if (rc < 0) {
		hp_warn("cannot write trace file '%s': %s; the trace ends here", path, strerror(errno));
		failed = 1;
	}
	pending_len = 0;
	errno = saved;
	return rc;
}

void hp_output_reset_in_child(void)
{
	struct stat st;
	/* The parent's trace: ours to close only if the number is still ours. */
	if (out_fd >= 0 && is_trace_file(out_fd, &st))
		close(out_fd);
	out_fd = -1;
	hp_pages_free(pending, PENDING_BYTES);
	pending = NULL;
	pending_len = 0;
	failed = 0;
	renamed = 0;
	path[0] = 0;
	keep_base_dir = base_dir[0] != 0;
}
