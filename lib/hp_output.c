/*
 * hp_output.c - trace file creation and batched appends.
 */
#define _GNU_SOURCE
#include "hp_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
static int out_fd = -1; /* also read by the close() interposers */
static dev_t out_dev;
static ino_t out_ino;
static int out_regular; /* a file we created (else a device or a FIFO) */
static int out_fifo;
static int per_batch;   /* no descriptor kept: opened for each batch */
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
 * Where the descriptor is kept. The program's open() must still get the
 * lowest free number, and a program that opens files up to its limit must
 * get as many as without us:
 *  - the soft limit (up to 64K) is below the hard one: above it, where the
 *    program cannot open anything (the soft limit is raised for the dup and
 *    put back; a descriptor above the limit stays valid);
 *  - no limit, or one of thousands: at 1000, above the numbers
 *    programs expect, and far from the last ones;
 *  - a small fixed limit (soft = hard < 4096, `ulimit -n 8`): none is kept;
 *    each batch opens the file by name and closes it (a program at its
 *    limit at that moment ends the trace, with one warning, rather than the
 *    other way round).
 */
enum { KEEP_NONE = -1, KEEP_ABOVE_LIMIT = -2 };
#define KEEP_AT 1000
#define KEEP_FIXED_LIMIT_MIN 4096
#define KEEP_ABOVE_LIMIT_MAX 65536

static int keep_where(struct rlimit *rl)
{
	if (getrlimit(RLIMIT_NOFILE, rl) || rl->rlim_cur == RLIM_INFINITY)
		return KEEP_AT;
	/* (A huge limit would make the kernel's descriptor table as big.) */
	if (rl->rlim_cur < rl->rlim_max && rl->rlim_cur <= KEEP_ABOVE_LIMIT_MAX)
		return KEEP_ABOVE_LIMIT;
	return rl->rlim_cur >= KEEP_FIXED_LIMIT_MIN ? KEEP_AT : KEEP_NONE;
}

static int dup_above_limit(int fd, const struct rlimit *rl)
{
	struct rlimit raised = *rl;
	rlim_t room = rl->rlim_max - rl->rlim_cur;
	raised.rlim_cur += room < 64 ? room : 64;
	if (setrlimit(RLIMIT_NOFILE, &raised))
		return -1;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)rl->rlim_cur);
	setrlimit(RLIMIT_NOFILE, rl);
	return high;
}

static void note_identity(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0) {
		out_dev = st.st_dev;
		out_ino = st.st_ino;
	}
}

/* Moves fd where it is kept. Under a small fixed limit it stays where it
 * is, for the batch at hand only (per_batch; batch_done closes it). */
static int keep_descriptor(int fd)
{
	struct rlimit rl;
	int where = keep_where(&rl);
	per_batch = where == KEEP_NONE;
	int high = per_batch		       ? -1
		   : where == KEEP_ABOVE_LIMIT ? dup_above_limit(fd, &rl)
					       : fcntl(fd, F_DUPFD_CLOEXEC, where);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	__atomic_store_n(&out_fd, fd, __ATOMIC_RELAXED);
	return fd;
}

static int is_trace_file(int fd, struct stat *st)
{
	return fstat(fd, st) == 0 && st->st_dev == out_dev && st->st_ino == out_ino;
}

int hp_output_keeps(int fd)
{
	struct stat st;
	return fd >= 0 && fd == __atomic_load_n(&out_fd, __ATOMIC_RELAXED) && is_trace_file(fd, &st);
}

int hp_output_kept_fd(void)
{
	struct stat st;
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
	return fd >= 0 && is_trace_file(fd, &st) ? fd : -1;
}

/* Opens the trace by name again: our file, or -1 (errno set). A FIFO's
 * open must not wait for a reader. */
static int reopen(void)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (!is_trace_file(fd, &st)) {
		close(fd); /* another file under our name */
		errno = ENOENT;
		return -1;
	}
	fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
	return fd;
}

/* Our descriptor, reopened if the program closed it or took its number;
 * -1 (errno set) if the file itself is gone. *len: the file's length. */
static int trace_descriptor(off_t *len)
{
	struct stat st;
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
	if (fd < 0 || !is_trace_file(fd, &st)) {
		/* Not ours any more: the number is the program's now, left alone. */
		__atomic_store_n(&out_fd, -1, __ATOMIC_RELAXED);
		fd = reopen();
		if (fd < 0)
			return -1;
		fstat(fd, &st);
		fd = keep_descriptor(fd);
	}
	*len = st.st_size;
	return st.st_nlink || !out_regular ? fd : (errno = ENOENT, -1);
}

/* Per batch: the descriptor goes when the batch is written. */
static void batch_done(void)
{
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
	if (per_batch && fd >= 0) {
		__atomic_store_n(&out_fd, -1, __ATOMIC_RELAXED);
		close(fd);
	}
}

static int create_exclusive(const char *base, char *err, size_t errlen)
{
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s", base);
		else if (snprintf(path, sizeof(path), "%s.%d", base, i) >= (int)sizeof(path))
			break;
		/* 0600: the trace holds the command line. */
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			renamed = i > 0;
			out_regular = 1;
			note_identity(fd);
			keep_descriptor(fd);
			batch_done();
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

/*
 * HOOKPROF_OUTPUT names a character device (/dev/null, /dev/full, a
 * terminal) or a FIFO: written as asked, not replaced by a numbered file.
 * A FIFO nobody reads is refused at once rather than waited for.
 */
static int open_special(const char *base, const struct stat *want, char *err, size_t errlen)
{
	struct stat st;
	int fifo = S_ISFIFO(want->st_mode);
	snprintf(path, sizeof(path), "%s", base);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (fifo && errno == ENXIO)
			snprintf(err, errlen, "nothing reads the FIFO '%s'", path);
		else
			snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || (st.st_mode & S_IFMT) != (want->st_mode & S_IFMT)) {
		close(fd);
		snprintf(err, errlen, "'%s' changed while it was opened", path);
		return -1;
	}
	fcntl(fd, F_SETFL, O_WRONLY); /* blocking again: a slow reader holds the writer back */
	out_fifo = fifo;
	note_identity(fd);
	keep_descriptor(fd);
	if (per_batch && fifo) {
		/* Reopened per batch, the reader would see the end of the file. */
		batch_done();
		snprintf(err, errlen, "no descriptor to keep the FIFO '%s' open under RLIMIT_NOFILE", path);
		return -1;
	}
	batch_done();
	return 0;
}

static int open_output(const char *base, char *err, size_t errlen)
{
	struct stat st;
	if (stat(base, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode))
		return create_exclusive(base, err, errlen);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return open_special(base, &st, err, errlen);
	snprintf(err, errlen, "'%s' is not a file, a character device or a FIFO", base);
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
	struct stat st;
	size_t len = spec ? strlen(spec) : 0;
	/* "out/" means a directory (hp_output_expand names the file in it): one
	 * that is not there is what to say, not that a file cannot be made. */
	if (len && spec[len - 1] == '/' && (stat(spec, &st) || !S_ISDIR(st.st_mode))) {
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
		int fd = out_fd;
		out_fd = -1; /* first: the interposed close() keeps the trace's own */
		if (fd >= 0)
			close(fd);
		if (out_regular)
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

/* Bytes written; fewer than n (errno set) if the file took no more. */
static size_t write_all(int fd, const uint8_t *p, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			break;
		}
		done += (size_t)w;
	}
	return done;
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
 * RLIMIT_FSIZE: a write past it raises SIGXFSZ, which would end the
 * program. Only the whole records that fit below it are written.
 */
static size_t fits_below_size_limit(off_t len, size_t n)
{
	struct rlimit rl;
	if (!out_regular || getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return n;
	if ((rlim_t)len >= rl.rlim_cur)
		return 0;
	rlim_t room = rl.rlim_cur - (rlim_t)len;
	return room >= n ? n : whole_records((size_t)room);
}

/* A FIFO whose reader is gone: writing would raise SIGPIPE. */
static int reader_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	return out_fifo && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/*
 * Writes the pending records. A short write (a full disk, a quota) leaves
 * the file cut inside a record: it is cut back to the last whole one, so
 * that it still reads.
 */
static int write_pending(int fd, off_t len)
{
	size_t n = fits_below_size_limit(len, pending_len);
	if (reader_gone(fd)) {
		errno = EPIPE;
		return -1;
	}
	size_t done = write_all(fd, pending, n);
	if (done == pending_len)
		return 0;
	int why = n < pending_len && done == n ? EFBIG : errno;
	if (out_regular)
		while (ftruncate(fd, len + (off_t)whole_records(done)) < 0 && errno == EINTR)
			;
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
	off_t len = 0;
	int fd = trace_descriptor(&len);
	int rc = fd < 0 ? -1 : write_pending(fd, len);
	if (rc < 0) {
		hp_warn("cannot write trace file '%s': %s; the trace ends here", path, strerror(errno));
		failed = 1;
	}
	batch_done();
	header_written = 1;
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
