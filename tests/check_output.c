/*
 * check_output.c - trace file naming, exclusive creation and the file
 * header. hp_output keeps static state, so every test runs in its own
 * process (Check's default CK_FORK).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_format.h"
#include "hp_linux.h"
#include "hp_output.h"
#include "testkit.h"

/* One directory per run, made by main(): removed even when a test fails. */
static char top[PATH_MAX - 64];
static char dir[PATH_MAX];
static char err[512];

static void setup(void)
{
	tk_make_test_dir(dir, sizeof(dir), top);
	/* getcwd gives the resolved path; compare with that */
	tk_resolve_path(dir, sizeof(dir));
	err[0] = 0;
}

static void teardown(void)
{
	tk_remove_tree(dir);
}

static void in_dir(char *out, size_t len, const char *name)
{
	ck_assert_int_lt(snprintf(out, len, "%s/%s", dir, name), (int)len);
}

/* Reads a whole (small) file; returns its length, -1 if it cannot be opened. */
static long read_file(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap);
	close(fd);
	return n;
}

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static const uint8_t file_header[32] = {
	'H', 'O', 'O', 'K', 'P', 'R', 'O', 'F', /* magic */
	0x01, 0x00,                             /* major 1 */
	0x03, 0x00,                             /* minor 3 */
	0x04, 0x03, 0x02, 0x01,                 /* byte-order mark */
	0x20, 0x00, 0x00, 0x00,                 /* header size 32 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* reserved */
};

/* ---------------------------------------------------------------- core */

START_TEST(test_expand_pid)
{
	char out[256];
	ck_assert_int_eq(hp_output_expand("/tmp/t-%p.hookprof", "prog", 42, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/tmp/t-42.hookprof");
}
END_TEST

START_TEST(test_expand_name)
{
	char out[256];
	ck_assert_int_eq(hp_output_expand("%n.trace", "myprog", 7, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "myprog.trace");
	ck_assert_int_eq(hp_output_expand("out/%n-%p-%n", "a", 123456, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "out/a-123456-a");
}
END_TEST

START_TEST(test_expand_plain_and_stray_percent)
{
	char out[256];
	ck_assert_int_eq(hp_output_expand("plain.hookprof", "p", 1, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "plain.hookprof");
	ck_assert_int_eq(hp_output_expand("100%x%", "p", 1, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "100%x%");
}
END_TEST

START_TEST(test_expand_directory)
{
	char out[PATH_MAX + 64], want[PATH_MAX + 64];
	ck_assert_int_eq(hp_output_expand(dir, "prog", 42, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/prog-42.hookprof", dir);
	ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_expand_default)
{
	char out[256];
	ck_assert_int_eq(hp_output_expand(NULL, "prog", 4242, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "prog-4242.hookprof");
}
END_TEST

START_TEST(test_create_and_header)
{
	char spec[PATH_MAX + 64];
	uint8_t got[256];
	in_dir(spec, sizeof(spec), "t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_str_eq(hp_output_path(), spec);
	ck_assert_int_eq(hp_output_renamed(), 0);
	/* created empty; the header is pending until the first flush */
	ck_assert_int_eq(read_file(spec, got, sizeof(got)), 0);
	ck_assert_uint_eq(hp_output_pending(), 32);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_uint_eq(hp_output_pending(), 0);
	ck_assert_int_eq(read_file(spec, got, sizeof(got)), 32);
	ck_assert_mem_eq(got, file_header, 32);
}
END_TEST

START_TEST(test_create_never_clobbers)
{
	char spec[PATH_MAX + 64], want[PATH_MAX + 80];
	uint8_t got[256];
	in_dir(spec, sizeof(spec), "t.hookprof");
	write_file(spec, "keep");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s.1", spec);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(hp_output_renamed(), 1);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(read_file(spec, got, sizeof(got)), 4);
	ck_assert_mem_eq(got, "keep", 4);
	ck_assert_int_eq(read_file(want, got, sizeof(got)), 32);
	ck_assert_mem_eq(got, file_header, 32);
}
END_TEST

START_TEST(test_create_twice)
{
	char spec[PATH_MAX + 64], want[PATH_MAX + 80];
	in_dir(spec, sizeof(spec), "t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(hp_output_renamed(), 0);
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s.1", spec);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(hp_output_renamed(), 1);
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s.2", spec);
	ck_assert_str_eq(hp_output_path(), want);
}
END_TEST

START_TEST(test_create_missing_directory)
{
	char spec[PATH_MAX + 64], want[PATH_MAX + 200];
	struct stat st;
	in_dir(spec, sizeof(spec), "missing/t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "cannot create trace file '%s': %s", spec, strerror(ENOENT));
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(stat(spec, &st), -1);
	/* nothing to write to */
	ck_assert_ptr_null(hp_output_begin(HP_REC_CLOCK, 16));
	ck_assert_int_eq(hp_output_flush(), -1);
}
END_TEST

START_TEST(test_create_in_directory)
{
	char want[PATH_MAX + 64];
	uint8_t got[64];
	ck_assert_int_eq(hp_output_create(dir, "prog", 99, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/prog-99.hookprof", dir);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(read_file(want, got, sizeof(got)), 32);
}
END_TEST

START_TEST(test_create_relative_is_absolute)
{
	char want[PATH_MAX + 64];
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_int_eq(hp_output_create("rel-%p.hookprof", "prog", 5, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/rel-5.hookprof", dir);
	ck_assert_str_eq(hp_output_path(), want);
	/* a later chdir does not move the trace */
	ck_assert_int_eq(chdir("/"), 0);
	ck_assert_int_eq(hp_output_flush(), 0);
	struct stat st;
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert_int_eq(st.st_size, 32);
}
END_TEST

START_TEST(test_child_trace_beside_parents)
{
	char want[PATH_MAX + 64];
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_int_eq(hp_output_create(NULL, "prog", 5, err, sizeof(err)), 0);
	/* a forked child (daemon) changed directory before its first event */
	ck_assert_int_eq(chdir("/"), 0);
	hp_output_reset_in_child();
	ck_assert_str_eq(hp_output_path(), "");
	ck_assert_int_eq(hp_output_create(NULL, "prog", 6, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/prog-6.hookprof", dir);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(hp_output_flush(), 0);
	struct stat st;
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert_int_eq(st.st_size, 32);
}
END_TEST

START_TEST(test_create_default_name)
{
	char want[PATH_MAX + 64];
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_int_eq(hp_output_create(NULL, "prog", 77, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/prog-77.hookprof", dir);
	ck_assert_str_eq(hp_output_path(), want);
}
END_TEST

START_TEST(test_records_after_header)
{
	char spec[PATH_MAX + 64];
	uint8_t got[256];
	in_dir(spec, sizeof(spec), "r.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	uint8_t *p = hp_output_begin(99, 16);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "hello", 5);
	hp_output_end(p + 5);
	p = hp_output_begin(HP_REC_LOST, 0);
	ck_assert_ptr_nonnull(p);
	hp_output_end(p);
	ck_assert_uint_eq(hp_output_pending(), 32 + 8 + 5 + 8);
	ck_assert_int_eq(hp_output_flush(), 0);
	static const uint8_t rec[] = { 99, 0, 0, 0, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o',
				       6, 0, 0, 0, 0, 0, 0, 0 };
	ck_assert_int_eq(read_file(spec, got, sizeof(got)), 32 + (long)sizeof(rec));
	ck_assert_mem_eq(got, file_header, 32);
	ck_assert_mem_eq(got + 32, rec, sizeof(rec));
	/* appends */
	p = hp_output_begin(7, 1);
	*p = 0xee;
	hp_output_end(p + 1);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(read_file(spec, got, sizeof(got)), 32 + (long)sizeof(rec) + 9);
	ck_assert_uint_eq(got[32 + sizeof(rec)], 7);
	ck_assert_uint_eq(got[32 + sizeof(rec) + 4], 1);
	ck_assert_uint_eq(got[32 + sizeof(rec) + 8], 0xee);
}
END_TEST

START_TEST(test_create_mode_0600)
{
	/* the trace holds the command line: for its owner only, whatever the umask */
	char spec[PATH_MAX + 64];
	struct stat st;
	umask(0);
	in_dir(spec, sizeof(spec), "t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(stat(spec, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
}
END_TEST

START_TEST(test_dev_null_as_asked)
{
	struct stat st;
	int existed = stat("/dev/null.1", &st) == 0;
	ck_assert_int_eq(hp_output_create("/dev/null", "prog", 1, err, sizeof(err)), 0);
	ck_assert_str_eq(hp_output_path(), "/dev/null");
	ck_assert_int_eq(hp_output_renamed(), 0);
	ck_assert_int_eq(hp_output_flush(), 0);
	uint8_t *p = hp_output_begin(HP_REC_CLOCK, 16);
	ck_assert_ptr_nonnull(p);
	hp_output_end(p + 16);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(stat("/dev/null.1", &st) == 0, existed);
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(test_dev_full_fails_at_the_write)
{
	struct stat st;
	int existed = stat("/dev/full.1", &st) == 0;
	ck_assert_int_eq(hp_output_create("/dev/full", "prog", 1, err, sizeof(err)), 0);
	ck_assert_str_eq(hp_output_path(), "/dev/full");
	errno = 77;
	ck_assert_int_eq(hp_output_flush(), -1);
	ck_assert_int_eq(errno, 77);
	ck_assert_ptr_null(hp_output_begin(HP_REC_CLOCK, 16));
	ck_assert_int_eq(stat("/dev/full.1", &st) == 0, existed);
}
END_TEST

START_TEST(test_fifo_with_reader)
{
	char spec[PATH_MAX + 64];
	uint8_t got[64];
	in_dir(spec, sizeof(spec), "fifo");
	ck_assert_int_eq(mkfifo(spec, 0600), 0);
	int rd = open(spec, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(rd, 0);
	ck_assert_msg(hp_output_create(spec, "prog", 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(hp_output_path(), spec);
	ck_assert_int_eq(hp_output_renamed(), 0);
	ck_assert_int_eq(hp_output_flush(), 0);
	ck_assert_int_eq(read(rd, got, sizeof(got)), 32);
	ck_assert_mem_eq(got, file_header, 32);
	/* the reader goes: the trace ends, without SIGPIPE */
	close(rd);
	uint8_t *p = hp_output_begin(HP_REC_CLOCK, 16);
	hp_output_end(p + 16);
	ck_assert_int_eq(hp_output_flush(), -1);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_fifo_without_reader_refused)
{
	/* refused at once, not waited for */
	char spec[PATH_MAX + 64], want[PATH_MAX + 200];
	in_dir(spec, sizeof(spec), "fifo");
	ck_assert_int_eq(mkfifo(spec, 0600), 0);
	alarm(5);
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), -1);
	alarm(0);
	snprintf(want, sizeof(want), "nothing reads the FIFO '%s'", spec);
	ck_assert_str_eq(err, want);
}
END_TEST

/* Check's results go through files too, and stderr may be one (make
 * check): the warning goes nowhere while a file size limit is in force,
 * and the limit comes off before Check writes. */
static int saved_stderr = -1;

static int limit_file_size(rlim_t bytes)
{
	struct rlimit rl = { bytes, RLIM_INFINITY };
	int null = open("/dev/null", O_WRONLY);
	saved_stderr = dup(2);
	dup2(null, 2);
	close(null);
	return setrlimit(RLIMIT_FSIZE, &rl);
}

static void unlimit_file_size(void)
{
	struct rlimit none = { RLIM_INFINITY, RLIM_INFINITY };
	setrlimit(RLIMIT_FSIZE, &none);
	dup2(saved_stderr, 2);
	close(saved_stderr);
}

static struct rlimit saved_nofile;

static void limit_descriptors(rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };
	getrlimit(RLIMIT_NOFILE, &saved_nofile);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void unlimit_descriptors(void)
{
	setrlimit(RLIMIT_NOFILE, &saved_nofile);
}

/* Three records of 100 bytes of payload, pending; how many were begun.
 * No ck_assert inside: Check writes a file at each, which a file size
 * limit in force would stop. */
static int three_records(void)
{
	int n = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t *p = hp_output_begin(HP_REC_EVENTS, 100);
		if (!p)
			continue;
		memset(p, 'a' + i, 100);
		hp_output_end(p + 100);
		n++;
	}
	return n;
}

START_TEST(test_size_limit_ends_at_a_record)
{
	/* RLIMIT_FSIZE in the middle of the second record: no SIGXFSZ (it
	 * would end the program), and the file ends after the first */
	char spec[PATH_MAX + 64];
	struct stat st;
	in_dir(spec, sizeof(spec), "t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(three_records(), 3);
	int limited = limit_file_size(32 + 108 + 50);
	errno = 5;
	int rc = hp_output_flush(), after = errno;
	unlimit_file_size(); /* before Check writes its results */
	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(after, 5);
	ck_assert_int_eq(stat(spec, &st), 0);
	ck_assert_int_eq(st.st_size, 32 + 108);
	ck_assert_ptr_null(hp_output_begin(HP_REC_CLOCK, 16));
}
END_TEST

START_TEST(test_size_limit_after_a_batch)
{
	/* a second batch that does not fit at all: the first stays whole */
	char spec[PATH_MAX + 64];
	struct stat st;
	in_dir(spec, sizeof(spec), "t.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(three_records(), 3);
	int limited = limit_file_size(32 + 3 * 108 + 20);
	int first = hp_output_flush();
	int begun = three_records();
	int second = hp_output_flush();
	unlimit_file_size();
	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(begun, 3);
	ck_assert_int_eq(first, 0);
	ck_assert_int_eq(second, -1);
	ck_assert_int_eq(stat(spec, &st), 0);
	ck_assert_int_eq(st.st_size, 32 + 3 * 108);
}
END_TEST

/* Open descriptors below n. */
static int open_below(int n)
{
	int count = 0;
	for (int fd = 0; fd < n; fd++)
		count += fcntl(fd, F_GETFD) >= 0;
	return count;
}

START_TEST(test_small_fixed_fd_limit_keeps_none)
{
	/* soft = hard = 16: no number is taken from the program, each batch
	 * opens the file for itself */
	char spec[PATH_MAX + 64];
	struct stat st;
	in_dir(spec, sizeof(spec), "t.hookprof");
	limit_descriptors(16, 16);
	int before = open_below(16);
	int rc = hp_output_create(spec, "prog", 1, err, sizeof(err));
	int after_create = open_below(16), kept = hp_file_kept_fd();
	int begun = three_records();
	int flushed = hp_output_flush();
	int after_flush = open_below(16);
	begun += three_records();
	int flushed_again = hp_output_flush();
	unlimit_descriptors();
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(after_create, before);
	ck_assert_int_eq(kept, -1);
	ck_assert_int_eq(begun, 6);
	ck_assert_int_eq(flushed, 0);
	ck_assert_int_eq(after_flush, before);
	ck_assert_int_eq(flushed_again, 0);
	ck_assert_int_eq(stat(spec, &st), 0);
	ck_assert_int_eq(st.st_size, 32 + 6 * 108);
}
END_TEST

START_TEST(test_soft_fd_limit_kept_above)
{
	/* soft 16, hard 64: the descriptor lies above the soft limit, which
	 * is left as it was */
	char spec[PATH_MAX + 64];
	struct rlimit now;
	in_dir(spec, sizeof(spec), "t.hookprof");
	limit_descriptors(16, 64);
	int before = open_below(16);
	int rc = hp_output_create(spec, "prog", 1, err, sizeof(err));
	int after_create = open_below(16), fd = hp_file_kept_fd();
	getrlimit(RLIMIT_NOFILE, &now);
	/* closed behind our back: the next batch opens it again */
	close(fd);
	int gone = hp_file_kept_fd();
	int begun = three_records();
	int flushed = hp_output_flush();
	int again = hp_file_kept_fd(), after_flush = open_below(16);
	unlimit_descriptors();
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(after_create, before);
	ck_assert_int_ge(fd, 16);
	ck_assert_uint_eq(now.rlim_cur, 16);
	ck_assert_uint_eq(now.rlim_max, 64);
	ck_assert_int_eq(gone, -1);
	ck_assert_int_eq(begun, 3);
	ck_assert_int_eq(flushed, 0);
	ck_assert_int_ge(again, 16);
	ck_assert_int_eq(after_flush, before);
}
END_TEST

START_TEST(test_expand_too_long)
{
	char out[8];
	ck_assert_int_eq(hp_output_expand("abcdefg", "p", 1, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "abcdefg");
	ck_assert_int_eq(hp_output_expand("abcdefgh", "p", 1, out, sizeof(out)), -1);
	ck_assert_int_eq(hp_output_expand("ab%p", "p", 123456, out, sizeof(out)), -1);
	ck_assert_int_eq(hp_output_expand("%n", "longprogram", 1, out, sizeof(out)), -1);
}
END_TEST

START_TEST(test_create_name_too_long)
{
	char spec[5000];
	memset(spec, 'a', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = 0;
	char big_err[8192];
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, big_err, sizeof(big_err)), -1);
	ck_assert_ptr_nonnull(strstr(big_err, "' is too long"));
	ck_assert_int_eq(strncmp(big_err, "trace file name from 'aaaa", 26), 0);
}
END_TEST

START_TEST(test_create_many_taken)
{
	char spec[PATH_MAX + 64], name[PATH_MAX + 80], want[PATH_MAX + 80];
	in_dir(spec, sizeof(spec), "t.hookprof");
	write_file(spec, "");
	for (int i = 1; i <= 20; i++) {
		snprintf(name, sizeof(name), "%s.%d", spec, i);
		write_file(name, "");
	}
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s.21", spec);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(hp_output_renamed(), 1);
}
END_TEST

START_TEST(test_create_dangling_symlink_not_followed)
{
	char spec[PATH_MAX + 64], target[PATH_MAX + 64], want[PATH_MAX + 80];
	struct stat st;
	in_dir(spec, sizeof(spec), "t.hookprof");
	in_dir(target, sizeof(target), "elsewhere");
	ck_assert_int_eq(symlink(target, spec), 0);
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s.1", spec);
	ck_assert_str_eq(hp_output_path(), want);
	ck_assert_int_eq(stat(target, &st), -1);
}
END_TEST

START_TEST(test_flush_before_create)
{
	ck_assert_int_eq(hp_output_flush(), -1);
	ck_assert_ptr_null(hp_output_begin(HP_REC_CLOCK, 16));
	ck_assert_uint_eq(hp_output_pending(), 0);
}
END_TEST

START_TEST(test_record_too_big)
{
	char spec[PATH_MAX + 64];
	in_dir(spec, sizeof(spec), "big.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_ptr_null(hp_output_begin(HP_REC_EVENTS, 5u << 20));
	/* a refused record leaves the output usable */
	ck_assert_ptr_nonnull(hp_output_begin(HP_REC_EVENTS, 1u << 20));
}
END_TEST

START_TEST(test_large_volume)
{
	/* many records: pending is written out as it grows, nothing is lost */
	char spec[PATH_MAX + 64];
	in_dir(spec, sizeof(spec), "vol.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	enum { N = 300, PAYLOAD = 30000 };
	for (int i = 0; i < N; i++) {
		uint8_t *p = hp_output_begin(HP_REC_EVENTS, PAYLOAD);
		ck_assert_ptr_nonnull(p);
		memset(p, i & 0xff, PAYLOAD);
		hp_output_end(p + PAYLOAD);
		ck_assert_uint_lt(hp_output_pending(), 4u << 20);
	}
	ck_assert_int_eq(hp_output_flush(), 0);
	struct stat st;
	ck_assert_int_eq(stat(spec, &st), 0);
	ck_assert_int_eq(st.st_size, 32 + N * (8 + PAYLOAD));
	/* check the last record's bytes */
	int fd = open(spec, O_RDONLY);
	uint8_t rec[8 + PAYLOAD];
	ck_assert_int_eq(pread(fd, rec, sizeof(rec), 32 + (N - 1) * (off_t)(8 + PAYLOAD)),
			 (ssize_t)sizeof(rec));
	close(fd);
	ck_assert_uint_eq(hp_rd32(rec), HP_REC_EVENTS);
	ck_assert_uint_eq(hp_rd32(rec + 4), PAYLOAD);
	ck_assert_uint_eq(rec[8], (N - 1) & 0xff);
	ck_assert_uint_eq(rec[8 + PAYLOAD - 1], (N - 1) & 0xff);
}
END_TEST

START_TEST(test_write_failure_ends_trace)
{
	char spec[PATH_MAX + 64];
	in_dir(spec, sizeof(spec), "gone.hookprof");
	ck_assert_int_eq(hp_output_create(spec, "prog", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(unlink(spec), 0);
	errno = 4321;
	ck_assert_int_eq(hp_output_flush(), -1);
	ck_assert_int_eq(errno, 4321);
	ck_assert_ptr_null(hp_output_begin(HP_REC_CLOCK, 16));
	/* never recreated behind the program's back */
	struct stat st;
	ck_assert_int_eq(stat(spec, &st), -1);
}
END_TEST

static Suite *output_suite(void)
{
	Suite *s = suite_create("output");
	TCase *core = tcase_create("core");
	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_expand_pid);
	tcase_add_test(core, test_expand_name);
	tcase_add_test(core, test_expand_plain_and_stray_percent);
	tcase_add_test(core, test_expand_directory);
	tcase_add_test(core, test_expand_default);
	tcase_add_test(core, test_create_and_header);
	tcase_add_test(core, test_create_never_clobbers);
	tcase_add_test(core, test_create_twice);
	tcase_add_test(core, test_create_missing_directory);
	tcase_add_test(core, test_create_in_directory);
	tcase_add_test(core, test_create_relative_is_absolute);
	tcase_add_test(core, test_create_default_name);
	tcase_add_test(core, test_child_trace_beside_parents);
	tcase_add_test(core, test_records_after_header);
	tcase_add_test(core, test_create_mode_0600);
	tcase_add_test(core, test_dev_null_as_asked);
	tcase_add_test(core, test_dev_full_fails_at_the_write);
	tcase_add_test(core, test_fifo_with_reader);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_checked_fixture(limits, setup, teardown);
	tcase_add_test(limits, test_expand_too_long);
	tcase_add_test(limits, test_create_name_too_long);
	tcase_add_test(limits, test_create_many_taken);
	tcase_add_test(limits, test_create_dangling_symlink_not_followed);
	tcase_add_test(limits, test_flush_before_create);
	tcase_add_test(limits, test_record_too_big);
	tcase_add_test(limits, test_large_volume);
	tcase_add_test(limits, test_write_failure_ends_trace);
	tcase_add_test(limits, test_fifo_without_reader_refused);
	tcase_add_test(limits, test_size_limit_ends_at_a_record);
	tcase_add_test(limits, test_size_limit_after_a_batch);
	tcase_add_test(limits, test_small_fixed_fd_limit_keeps_none);
	tcase_add_test(limits, test_soft_fd_limit_kept_above);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite_in_top_dir(output_suite(), top, sizeof(top), "check_output");
}
