/*
 * testkit.c - helpers the unit tests share; see testkit.h.
 */
#define _GNU_SOURCE
#include "testkit.h"

#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hp_format.h"

#include "../symbolize/hp_analyze.h"
#include "../symbolize/hp_symbols.h"

/* ------------------------------------------------------ running a suite */

int tk_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tk_run_suite_in_top_dir(Suite *s, char *top, size_t len, const char *name)
{
	if (tk_make_top_dir(top, len, name))
		return EXIT_FAILURE;
	int rc = tk_run_suite(s);
	tk_remove_tree(top);
	return rc;
}

/* ---------------------------------------------------------- directories */

int tk_make_top_dir(char *top, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(top, len, "%s/%s.XXXXXX", tmp, name);
	if (!mkdtemp(top)) {
		perror(top);
		return -1;
	}
	return 0;
}

void tk_make_test_dir(char *dir, size_t len, const char *top)
{
	snprintf(dir, len, "%s/test.XXXXXX", top);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void tk_resolve_path(char *p, size_t len)
{
	char real[PATH_MAX];
	ck_assert_ptr_nonnull(realpath(p, real));
	snprintf(p, len, "%s", real);
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

void tk_remove_tree(const char *dir)
{
	/* depth first: a directory is empty by the time it is removed */
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------ trace files, byte by byte */

void tk_put(struct tk_bytes *b, const void *src, size_t len)
{
	if (b->n + len > b->cap) {
		b->cap = (b->n + len) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	if (len) /* src and b->p may be NULL then, which memcpy may not get */
		memcpy(b->p + b->n, src, len);
	b->n += len;
}

void tk_put8(struct tk_bytes *b, uint8_t v) { tk_put(b, &v, 1); }

/* n bytes of v, least significant first */
static void put_le(struct tk_bytes *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		tk_put8(b, (uint8_t)(v >> 8 * i));
}

void tk_put16(struct tk_bytes *b, uint16_t v) { put_le(b, v, 2); }
void tk_put32(struct tk_bytes *b, uint32_t v) { put_le(b, v, 4); }
void tk_put64(struct tk_bytes *b, uint64_t v) { put_le(b, v, 8); }

void tk_putstr(struct tk_bytes *b, const char *s)
{
	tk_put32(b, (uint32_t)strlen(s));
	tk_put(b, s, strlen(s));
}

void tk_header_with(struct tk_bytes *b, const char *magic, uint16_t major, uint32_t bom,
		    uint32_t hsize)
{
	tk_put(b, magic, 8);
	tk_put16(b, major);
	tk_put16(b, 0); /* minor */
	tk_put32(b, bom);
	tk_put32(b, hsize);
	for (int i = 0; i < 12; i++)
		tk_put8(b, 0);
}

void tk_header(struct tk_bytes *b)
{
	tk_header_with(b, "HOOKPROF", 1, 0x01020304, 32);
}

size_t tk_rec_begin(struct tk_bytes *b, uint32_t type)
{
	tk_put32(b, type);
	size_t at = b->n;
	tk_put32(b, 0);
	return at;
}

void tk_rec_end(struct tk_bytes *b, size_t at)
{
	uint32_t size = (uint32_t)(b->n - at - 4);
	for (int i = 0; i < 4; i++)
		b->p[at + (size_t)i] = (uint8_t)(size >> 8 * i);
}

void tk_process_rec(struct tk_bytes *b, uint32_t pid, uint32_t clock, uint64_t realtime_ns,
		    uint32_t flags, const char *exe, uint32_t argc, const char *const *argv)
{
	size_t r = tk_rec_begin(b, HP_REC_PROCESS);
	tk_put32(b, pid);
	tk_put32(b, clock);
	tk_put64(b, realtime_ns);
	tk_put32(b, flags);
	tk_put32(b, argc);
	tk_putstr(b, exe);
	for (uint32_t i = 0; i < argc; i++)
		tk_putstr(b, argv[i]);
	tk_rec_end(b, r);
}

void tk_clock_rec(struct tk_bytes *b, uint64_t tick, uint64_t ns)
{
	size_t r = tk_rec_begin(b, HP_REC_CLOCK);
	tk_put64(b, tick);
	tk_put64(b, ns);
	tk_rec_end(b, r);
}

void tk_calibration_rec(struct tk_bytes *b, uint32_t when, uint32_t pairs, uint64_t inside,
			uint64_t outside)
{
	size_t r = tk_rec_begin(b, HP_REC_CALIBRATION);
	tk_put32(b, when);
	tk_put32(b, pairs);
	tk_put64(b, inside);
	tk_put64(b, outside);
	tk_rec_end(b, r);
}

void tk_thread_rec(struct tk_bytes *b, uint32_t stream, uint32_t tid, const char *name)
{
	size_t r = tk_rec_begin(b, HP_REC_THREAD);
	tk_put32(b, stream);
	tk_put32(b, tid);
	tk_putstr(b, name);
	tk_rec_end(b, r);
}

void tk_string_rec(struct tk_bytes *b, uint32_t id, const char *text)
{
	size_t r = tk_rec_begin(b, HP_REC_STRING);
	tk_put32(b, id);
	tk_putstr(b, text);
	tk_rec_end(b, r);
}

void tk_events_rec(struct tk_bytes *b, uint32_t stream, uint32_t count, const uint8_t *data,
		   size_t len)
{
	size_t r = tk_rec_begin(b, HP_REC_EVENTS);
	tk_put32(b, stream);
	tk_put32(b, count);
	tk_put(b, data, len);
	tk_rec_end(b, r);
}

void tk_lost_rec(struct tk_bytes *b, uint32_t stream, uint32_t reason, uint64_t count)
{
	size_t r = tk_rec_begin(b, HP_REC_LOST);
	tk_put32(b, stream);
	tk_put32(b, reason);
	tk_put64(b, count);
	tk_rec_end(b, r);
}

void tk_end_rec(struct tk_bytes *b, uint64_t events, uint64_t lost, uint32_t streams)
{
	size_t r = tk_rec_begin(b, HP_REC_END);
	tk_put64(b, events);
	tk_put64(b, lost);
	tk_put32(b, streams);
	tk_put32(b, 0);
	tk_rec_end(b, r);
}

void tk_modules_rec(struct tk_bytes *b, const struct tk_module *m, uint32_t n)
{
	size_t r = tk_rec_begin(b, HP_REC_MODULES);
	tk_put32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		tk_put64(b, m[i].bias);
		tk_putstr(b, m[i].path);
		tk_put32(b, (uint32_t)m[i].idlen);
		tk_put(b, m[i].id, m[i].idlen);
		tk_put32(b, 1);
		tk_put64(b, m[i].start), tk_put64(b, m[i].size), tk_put64(b, 0);
		tk_put32(b, 5), tk_put32(b, 0);
	}
	tk_rec_end(b, r);
}

static void put_uleb(struct tk_bytes *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		tk_put8(b, byte | (v ? 0x80 : 0));
	} while (v);
}

void tk_one_call_trace(struct tk_bytes *b, const char *exe, const struct tk_module *m, uint32_t n,
		       uint64_t addr)
{
	static const char *const argv[] = { "prog" };
	tk_header(b);
	tk_process_rec(b, 4321, HP_CLOCK_MONOTONIC, 1700000000000000000ull, 0, exe, 1, argv);
	tk_clock_rec(b, 0, 0);
	tk_modules_rec(b, m, n);
	tk_thread_rec(b, 0, 100, "main");
	struct tk_bytes ev = { 0 };
	tk_put8(&ev, 0x43); /* function 0 is addr */
	put_uleb(&ev, addr);
	tk_put8(&ev, 0x00), tk_put8(&ev, 0x0a); /* enter it @10 */
	tk_put8(&ev, 0x82);                     /* and return @12 */
	tk_events_rec(b, 0, 2, ev.p, ev.n);
	free(ev.p);
	tk_end_rec(b, 2, 0, 1);
}

void tk_name_of_function0(const char *path, uint64_t addr, char *out, size_t len)
{
	char err[1024];
	struct hp_analysis a;
	ck_assert_msg(hp_analyze(path, 0, NULL, NULL, &a, err, sizeof(err)) == 0, "hp_analyze: %s", err);
	struct hp_symbols *s = hp_symbols_for_trace(path, a.info.modules, a.info.nmodules, err,
						    sizeof(err));
	ck_assert_msg(s != NULL, "hp_symbols_for_trace: %s", err);
	struct hp_symbol sym;
	hp_symbols_lookup_in(s, a.func_module[0], addr, &sym);
	snprintf(out, len, "%s", sym.name);
	hp_symbols_free(s);
	hp_analysis_free(&a);
}

void tk_save(const char *path, const struct tk_bytes *b)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	if (b->n) /* an empty buffer may have no bytes at all (p NULL) */
		ck_assert_uint_eq(fwrite(b->p, 1, b->n, f), b->n);
	fclose(f);
}

/* ------------------------------------------------------ forked children */

pid_t tk_fork(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
					    SIGTRAP, SIGINT, SIGTERM, SIGHUP, SIGQUIT };
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
	}
	ck_assert_int_ge(pid, 0);
	return pid;
}

int tk_wait(pid_t pid)
{
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The settings of the test runner's own environment must not leak into a
 * child's runtime. */
static void set_hookprof_env(const char *output, const char *const *env)
{
	if (output)
		setenv("HOOKPROF_OUTPUT", output, 1);
	else
		unsetenv("HOOKPROF_OUTPUT");
	unsetenv("HOOKPROF_MODE");
	unsetenv("HOOKPROF_BUFFER");
	unsetenv("HOOKPROF_CLOCK");
	for (const char *const *e = env; e && e[0]; e += 2)
		setenv(e[0], e[1], 1);
}

int tk_run_child(const char *output, const char *const *env, tk_child_fn fn, void *arg,
		 pid_t *pid)
{
	pid_t child = tk_fork();
	if (child == 0) {
		set_hookprof_env(output, env);
		exit(fn(arg));
	}
	if (pid)
		*pid = child;
	return tk_wait(child);
}

static char *child_msg;
static size_t child_msg_len;

void tk_child_messages_to(char *msg, size_t len)
{
	child_msg = msg;
	child_msg_len = len;
}

int tk_child_failed(int line, const char *what, int eq, uint64_t got, uint64_t want)
{
	if (eq)
		snprintf(child_msg, child_msg_len, "line %d: %s is %llu (%#llx), want %llu (%#llx)",
			 line, what, (unsigned long long)got, (unsigned long long)got,
			 (unsigned long long)want, (unsigned long long)want);
	else
		snprintf(child_msg, child_msg_len, "line %d: %s is false", line, what);
	return TK_CHILD_FAILED;
}

void *tk_map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(EXIT_FAILURE);
	}
	return p;
}

/* ----------------------------------------------- reading an analysis */

const struct hp_fstat *tk_stat_of(const struct hp_analysis *a, uint64_t addr)
{
	for (uint32_t i = 0; i < a->funcs.n; i++)
		if (a->funcs.addr[i] == addr)
			return &a->prof.f[i];
	return NULL;
}

uint64_t tk_calls_of(const struct hp_analysis *a, uint64_t addr)
{
	const struct hp_fstat *f = tk_stat_of(a, addr);
	return f ? f->calls : 0;
}

uint64_t tk_lost_total(const struct hp_analysis *a)
{
	uint64_t n = a->info.lost_global;
	for (size_t i = 0; i < a->info.nstreams; i++)
		n += a->info.streams[i].lost;
	return n;
}

size_t tk_streams_seen(const struct hp_analysis *a)
{
	size_t n = 0;
	for (size_t i = 0; i < a->info.nstreams; i++)
		n += a->info.streams[i].seen != 0;
	return n;
}

void tk_each_record(const char *path,
		    void (*fn)(void *arg, uint32_t type, const uint8_t *payload, uint32_t size),
		    void *arg)
{
	char err[512];
	struct hp_reader *r = hp_reader_open(path, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	uint32_t type, size;
	const uint8_t *payload;
	int rc;
	while ((rc = hp_reader_next(r, &type, &payload, &size, err, sizeof(err))) == 1)
		fn(arg, type, payload, size);
	hp_reader_close(r);
	ck_assert_msg(rc == 0, "%s", err);
}
