/*
 * testkit.h - helpers the unit tests (tests/check_*.c) share: trace files
 * written byte by byte, a directory per run and per test, forked children
 * that report the first check they fail, and a few questions asked of an
 * hp_analysis. Linked into every test binary, never into the library.
 */
#ifndef TESTKIT_H
#define TESTKIT_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hp_analysis;
struct hp_fstat;

/* ------------------------------------------------------ running a suite */

/* Runs every test of s (Check's default CK_FORK) and frees the runner;
 * EXIT_SUCCESS if none failed, else EXIT_FAILURE: main()'s exit status. */
int tk_run_suite(Suite *s);

/* tk_run_suite with top, the run's own directory (tk_make_top_dir), made
 * first and removed after, however the tests went; EXIT_FAILURE too if
 * top cannot be made. */
int tk_run_suite_in_top_dir(Suite *s, char *top, size_t len, const char *name);

/* ---------------------------------------------------------- directories */

/* Makes top, "$TMPDIR/<name>.XXXXXX" (TMPDIR or /tmp): the run's own
 * directory, made by main() so that it is removed even when a test fails.
 * 0, or -1 after saying why on stderr. */
int tk_make_top_dir(char *top, size_t len, const char *name);

/* Makes dir, a fresh "<top>/test.XXXXXX" for one test; fails the test if
 * it cannot. */
void tk_make_test_dir(char *dir, size_t len, const char *top);

/* Replaces the path p with its resolved form, for tests that compare it
 * with one the system resolved (getcwd, the loader); fails the test if it
 * cannot. */
void tk_resolve_path(char *p, size_t len);

/* Removes dir and everything below it, symbolic links not followed. */
void tk_remove_tree(const char *dir);

/* ------------------------------------------ trace files, byte by byte */

/* A growing byte buffer; { 0 } is an empty one. Free p when done. */
struct tk_bytes {
	uint8_t *p;
	size_t n, cap;
};

/* Integers are written little-endian by shifts, as docs/format.md spells
 * them, not with hp_format.h's helpers: the bytes a test feeds the reader
 * do not depend on the library's own idea of the format. */
void tk_put(struct tk_bytes *b, const void *src, size_t len);
void tk_put8(struct tk_bytes *b, uint8_t v);
void tk_put16(struct tk_bytes *b, uint16_t v);
void tk_put32(struct tk_bytes *b, uint32_t v);
void tk_put64(struct tk_bytes *b, uint64_t v);
/* A string as the format writes one: its u32 length, then its bytes. */
void tk_putstr(struct tk_bytes *b, const char *s);

/* The 32-byte file header with the given fields (minor version 0). */
void tk_header_with(struct tk_bytes *b, const char *magic, uint16_t major, uint32_t bom,
		    uint32_t hsize);
/* The header of a valid version 1.0 trace. */
void tk_header(struct tk_bytes *b);

/* Starts a record of `type`; returns where its size goes, for
 * tk_rec_end, which sets it to the bytes written since. */
size_t tk_rec_begin(struct tk_bytes *b, uint32_t type);
void tk_rec_end(struct tk_bytes *b, size_t at);

/* Whole records, one field a parameter. */
void tk_process_rec(struct tk_bytes *b, uint32_t pid, uint32_t clock, uint64_t realtime_ns,
		    uint32_t flags, const char *exe, uint32_t argc, const char *const *argv);
void tk_clock_rec(struct tk_bytes *b, uint64_t tick, uint64_t ns);
void tk_calibration_rec(struct tk_bytes *b, uint32_t when, uint32_t pairs, uint64_t inside,
			uint64_t outside);
void tk_thread_rec(struct tk_bytes *b, uint32_t stream, uint32_t tid, const char *name);
/* A STRING record (format 1.2): a string of the control API, by its id. */
void tk_string_rec(struct tk_bytes *b, uint32_t id, const char *text);
void tk_events_rec(struct tk_bytes *b, uint32_t stream, uint32_t count, const uint8_t *data,
		   size_t len);
void tk_lost_rec(struct tk_bytes *b, uint32_t stream, uint32_t reason, uint64_t count);
void tk_end_rec(struct tk_bytes *b, uint64_t events, uint64_t lost, uint32_t streams);

/* A module of a MODULES record: one segment, start and size, r-x. */
struct tk_module {
	const char *path;
	const uint8_t *id;
	size_t idlen;
	uint64_t bias, start, size;
};
void tk_modules_rec(struct tk_bytes *b, const struct tk_module *m, uint32_t n);
/* A whole trace of program exe: the modules, and thread 100 "main"
 * calling the function at addr once (entered @10, returned @12). */
void tk_one_call_trace(struct tk_bytes *b, const char *exe, const struct tk_module *m, uint32_t n,
		       uint64_t addr);

/* The name every reader gives function 0 of the trace at path, at addr
 * (hp_symbols_for_trace: the trace's pack first), into out. */
void tk_name_of_function0(const char *path, uint64_t addr, char *out, size_t len);

/* Writes b to the file at path, replacing it; fails the test if it cannot. */
void tk_save(const char *path, const struct tk_bytes *b);

/* ------------------------------------------------------ forked children */

typedef int (*tk_child_fn)(void *arg);

/* fork() after flushing stdio, so that nothing buffered is written twice.
 * The child gets a fresh program's signal dispositions, not the test
 * runner's (Check's SIGTERM handler would kill the whole process group).
 * Fails the test if there is no child. */
pid_t tk_fork(void);

/* Waits for the child pid: its exit status, or 128 + the signal that
 * ended it. */
int tk_wait(pid_t pid);

/* Runs fn in a child that starts with only the HOOKPROF_* settings the
 * test gives: HOOKPROF_OUTPUT set to output (unset if NULL), then env
 * (name, value pairs, NULL-terminated; may be NULL), before anything
 * else. The child ends with exit(), not _exit(), so that the runtime's
 * destructor writes the trace. Returns tk_wait's status; the child's pid
 * in *pid if pid is not NULL. */
int tk_run_child(const char *output, const char *const *env, tk_child_fn fn, void *arg,
		 pid_t *pid);

/* A child's own checks: the first that fails says what it saw in the
 * message buffer (line, expression, values) and makes the child's
 * function return TK_CHILD_FAILED, which becomes its exit status. */
enum { TK_CHILD_OK = 0, TK_CHILD_FAILED = 40 };

/* Where tk_child_failed writes: memory shared with the parent (mmap'd
 * MAP_SHARED by main() before any fork), so the parent can print it. */
void tk_child_messages_to(char *msg, size_t len);

/* Writes the message and returns TK_CHILD_FAILED; eq: "what is got, want
 * want", else "what is false". */
int tk_child_failed(int line, const char *what, int eq, uint64_t got, uint64_t want);

#define TK_CHILD_EQ(got, want)                                                         \
	do {                                                                           \
		uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);             \
		if (got_ != want_)                                                     \
			return tk_child_failed(__LINE__, #got, 1, got_, want_);        \
	} while (0)
#define TK_CHILD_TRUE(cond)                                                            \
	do {                                                                           \
		if (!(cond))                                                           \
			return tk_child_failed(__LINE__, #cond, 0, 0, 0);              \
	} while (0)

/* len bytes of zeroed memory that a forked child shares with its parent.
 * For main(), before any test runs: if there is none it says why on stderr
 * and exits with EXIT_FAILURE, as no test could report. */
void *tk_map_shared(size_t len);

/* ----------------------------------------------- reading an analysis */

/* The profile of the function at addr, NULL if the trace has none. */
const struct hp_fstat *tk_stat_of(const struct hp_analysis *a, uint64_t addr);
/* Its calls, 0 if the trace has no such function. */
uint64_t tk_calls_of(const struct hp_analysis *a, uint64_t addr);
/* Events lost, of every stream and of none. */
uint64_t tk_lost_total(const struct hp_analysis *a);
/* Streams that wrote anything. */
size_t tk_streams_seen(const struct hp_analysis *a);

/* Calls fn for every record of the trace at path, in file order; a
 * reader error fails the calling test. */
void tk_each_record(const char *path,
		    void (*fn)(void *arg, uint32_t type, const uint8_t *payload, uint32_t size),
		    void *arg);

#endif
