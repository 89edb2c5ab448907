/*
 * fuzz_trace.c - libFuzzer target for the trace reader: file header and
 * records (hp_reader_next), the non-event records (hp_trace_info_add), the
 * event decoder in pieces (hp_decode) and the flat profile, all through
 * hp_analyze, with and without --partial; then the same events again in
 * time order (hp_merge), which must hand out exactly as many, each of a
 * function the first pass knew; hp_summarize (info's reading) the same. No
 * symbol lookup.
 *
 * The input becomes the contents of a memfd, read through /proc/self/fd:
 * the reader is exercised as hookprof uses it, on a file.
 *
 *   make fuzz && build/fuzz/fuzz_trace CORPUS_DIR tests/fuzz/seeds
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../symbolize/hp_analyze.h"
#include "../../symbolize/hp_merge.h"

static int fd = -1;
static char path[64];

static uint64_t handed_out; /* by the single pass, RESETs left out */

/* An enter or exit names a function the dictionary holds; the control
 * events (1.2) name a string of the trace, or nothing. */
static int names_a_function(const struct hp_ev *e)
{
	return e->kind == HP_EV_ENTER || e->kind == HP_EV_EXIT;
}

/* Looks at every event handed out, so a bad one is read. */
static int on_events(void *arg, const struct hp_analysis *a, uint32_t stream,
		     const struct hp_ev *ev, size_t n)
{
	uint64_t *sum = arg;
	for (size_t i = 0; i < n; i++) {
		if (names_a_function(&ev[i]) && ev[i].func >= a->funcs.n)
			abort(); /* an index the dictionary does not hold */
		*sum += ev[i].tick + ev[i].func + ev[i].kind + stream;
		handed_out += ev[i].kind != HP_EV_RESET;
	}
	return 0;
}

struct merged {
	const struct hp_analysis *a;
	uint64_t events;
};

static int on_merged(void *arg, uint32_t stream, const struct hp_ev *ev, const struct hp_ev *next)
{
	(void)stream, (void)next;
	struct merged *m = arg;
	if (!ev)
		return 0;
	if (ev->kind != HP_EV_RESET) {
		if (names_a_function(ev) && ev->func >= m->a->funcs.n)
			abort();
		m->events++;
	}
	return 0;
}

/* The second pass reads what the first read: the same events, none more. */
static void merge(int flags, uint64_t first_pass_events)
{
	struct hp_analysis a;
	struct hp_record_index ix = { 0 };
	char err[1024];
	if (hp_analyze_indexed(path, flags, &a, &ix, err, sizeof(err)) == 0) {
		struct merged m = { &a, 0 };
		if (hp_merge(path, &a, &ix, HP_MERGE_LEAF_PAIRS, on_merged, &m, err, sizeof(err)))
			abort(); /* the first pass read the file whole */
		/* normalised events: as many as the single pass handed out */
		if (m.events != first_pass_events)
			abort();
		hp_analysis_free(&a);
	}
	hp_record_index_free(&ix);
}

static void analyze(int flags)
{
	struct hp_analysis a;
	char err[1024];
	uint64_t sum = 0;
	handed_out = 0;
	if (hp_analyze(path, flags, on_events, &sum, &a, err, sizeof(err)) == 0) {
		for (uint32_t i = 0; i < a.funcs.n && i < a.prof.nf; i++)
			sum += a.prof.f[i].calls + a.prof.f[i].total + a.prof.f[i].self;
		hp_analysis_free(&a);
		merge(flags, handed_out);
	}
	/* Keeps the sum alive. */
	if (sum == 42)
		fputs("", stderr);
}

/* info's reading: the records' headers, and a cut run's ticks. */
static void summarize(int flags)
{
	struct hp_analysis a;
	char err[1024];
	if (hp_summarize(path, flags, NULL, NULL, &a, err, sizeof(err)) == 0) {
		if (hp_analysis_duration_ns(&a) < 0 && a.events == 42)
			fputs("", stderr);
		hp_analysis_free(&a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		fd = memfd_create("fuzz_trace", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	analyze(0);
	analyze(HP_ANALYZE_ALLOW_PARTIAL);
	summarize(0);
	summarize(HP_ANALYZE_ALLOW_PARTIAL);
	return 0;
}
