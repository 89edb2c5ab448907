/*
 * hpw_trace.c - a small writer of hookprof's trace format (docs/format.md)
 * for one Windows test: penter_clobber.exe, the MSVC hooks
 * (hooks/hp_penter_win64.S) in front of a C callee that clobbers every
 * register C may change (clobber_volatile), which the real runtime's C
 * does not do on purpose. Built with mingw-w64 into hpw.dll, together with
 * the real hooks; the other Windows tests run hookprof.dll itself.
 *
 * It is NOT the runtime: it keeps every event of every thread in memory
 * (malloc, a lock-free slot per thread), writes the trace once, when the
 * DLL is unloaded at process exit, and takes module snapshots at start and
 * at the end. Only the file is the same: PROCESS (rdtsc ticks), CLOCK
 * (rdtsc against QueryPerformanceCounter in ns), MODULES of PE modules
 * (below), THREAD, EVENTS, END, written here from docs/format.md and
 * lib/hp_format.h alone.
 *
 * A PE module in MODULES: bias = load address minus the ImageBase its file
 * states (so that bias + ImageBase + RVA is the run-time address, and
 * ImageBase + RVA the address its DWARF and COFF symbols use), path = the
 * Windows path in UTF-8, build-id = the CodeView record's GUID (16 bytes as
 * stored) and age (u32), or none; one segment per section.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "../../hooks/hp_win_hooks.h"
#include "../../lib/hp_format.h"

#define EXPORT __declspec(dllexport)
#define THREADS_MAX 256
#define EXIT_FLAG (1ull << 63)
#define CHUNK_BYTES (1u << 20)
#define DICT_SLOTS (1u << 16)
#define EVENTS_FIRST (1u << 20) /* 16 MiB per thread, touched as used */

struct event {
	uint64_t addr; /* EXIT_FLAG on exits */
	uint64_t tick;
};

/* A frame of a function hooked by _penter: its function and stack pointer. */
struct frame {
	uint64_t fn, sp;
};

struct thread {
	uint32_t stream, tid;
	struct event *ev;
	size_t n, cap;
	struct frame *frames;
	size_t depth, fcap;
};

struct buf {
	uint8_t *p;
	size_t n, cap;
	int failed;
};

static struct thread *threads[THREADS_MAX];
static volatile LONG nthreads;
static __thread struct thread *self;
static volatile LONG finished;
static LARGE_INTEGER qpc_freq;
/* The MODULES and MODULES_AT records of every snapshot, as taken. */
static struct buf snapshots;
static CRITICAL_SECTION snapshot_lock;

/* ---- recording ------------------------------------------------------- */

static struct thread *this_thread(void)
{
	if (self)
		return self;
	DWORD err = GetLastError();
	struct thread *t = calloc(1, sizeof(*t));
	LONG i = t ? InterlockedIncrement(&nthreads) - 1 : THREADS_MAX;
	if (i < THREADS_MAX) {
		t->stream = (uint32_t)i;
		t->tid = GetCurrentThreadId();
		threads[i] = t;
		self = t;
	} else {
		free(t);
	}
	SetLastError(err);
	return self;
}

/* Starts at `first` elements: growing a large block is slow under Wine. */
static int grow(void **p, size_t *cap, size_t size, size_t first)
{
	size_t n = *cap ? *cap * 2 : first;
	void *q = realloc(*p, n * size);
	if (!q)
		return -1;
	/* Touched now, in the slow path: a first touch is a page fault, which
	 * Wine makes slow, and it would land on the hooks' time. */
	memset((char *)q + *cap * size, 0, (n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

static void record(struct thread *t, uint64_t addr)
{
	uint64_t tick = __rdtsc();
	if (finished || !t)
		return;
	if (t->n == t->cap) {
		DWORD err = GetLastError();
		int failed = grow((void **)&t->ev, &t->cap, sizeof(*t->ev), EVENTS_FIRST);
		SetLastError(err);
		if (failed)
			return;
	}
	t->ev[t->n++] = (struct event){ addr, tick };
}

EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	record(this_thread(), (uint64_t)(uintptr_t)fn);
}

EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	record(this_thread(), (uint64_t)(uintptr_t)fn | EXIT_FLAG);
}

/* Changes every register a C function may change (the Windows x64 ABI's
 * volatile ones and the flags), as the runtime's C code someday might:
 * penter_probe then shows that the hooks keep them whatever their C callee
 * does, not merely what this small one happens to leave alone. */
static void clobber_volatile(void)
{
	__asm__ volatile("movb $0x7f, %%al\n\t"
			 "addb $1, %%al\n\t" /* OF and SF set, ZF and CF clear */
			 "movq $-1, %%rax\n\tmovq $-1, %%rcx\n\tmovq $-1, %%rdx\n\t"
			 "movq $-1, %%r8\n\tmovq $-1, %%r9\n\tmovq $-1, %%r10\n\tmovq $-1, %%r11\n\t"
			 "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\tpcmpeqd %%xmm2, %%xmm2\n\t"
			 "pcmpeqd %%xmm3, %%xmm3\n\tpcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5"
			 :
			 :
			 : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3",
			   "xmm4", "xmm5", "cc");
}

/* A live frame's stack pointer is above every newer one's: frames at or
 * below sp were left by a longjmp or an exception, without their _pexit. */
void hp_win_enter(uint64_t fn, uint64_t ret, uint64_t sp)
{
	(void)ret;
	clobber_volatile();
	struct thread *t = this_thread();
	if (!t)
		return;
	while (t->depth && t->frames[t->depth - 1].sp <= sp)
		t->depth--;
	if (t->depth == t->fcap) {
		DWORD err = GetLastError();
		int failed = grow((void **)&t->frames, &t->fcap, sizeof(*t->frames), 4096);
		SetLastError(err);
		if (failed)
			return;
	}
	t->frames[t->depth++] = (struct frame){ fn, sp };
	record(t, fn);
}

/* The newest frame with this stack pointer ends, and every one above it. An
 * exit of a frame entered before the thread's first event names no
 * function, and is left out. */
void hp_win_exit(uint64_t ret, uint64_t sp)
{
	(void)ret;
	clobber_volatile();
	struct thread *t = this_thread();
	size_t i = t ? t->depth : 0;
	while (i && t->frames[i - 1].sp != sp)
		i--;
	if (!i)
		return;
	t->depth = i - 1;
	record(t, t->frames[i - 1].fn | EXIT_FLAG);
}

/* ---- bytes ------------------------------------------------------------- */

static void put(struct buf *b, const void *src, size_t len)
{
	if (b->failed)
		return;
	while (b->n + len > b->cap)
		if (grow((void **)&b->p, &b->cap, 1, 4096) < 0) {
			b->failed = 1;
			return;
		}
	memcpy(b->p + b->n, src, len);
	b->n += len;
}

static void put8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void put32(struct buf *b, uint32_t v) { uint8_t x[4]; hp_le32(x, v); put(b, x, 4); }
static void put64(struct buf *b, uint64_t v) { uint8_t x[8]; hp_le64(x, v); put(b, x, 8); }

static void put_bytes(struct buf *b, const void *s, size_t len)
{
	put32(b, (uint32_t)len);
	put(b, s, len);
}

static void put_str(struct buf *b, const char *s) { put_bytes(b, s, strlen(s)); }

static void put_uvarint(struct buf *b, uint64_t v)
{
	uint8_t x[HP_VARINT_MAX];
	put(b, x, (size_t)(hp_put_uvarint(x, v) - x));
}

static void put_svarint(struct buf *b, int64_t v) { put_uvarint(b, hp_zigzag(v)); }

/* Returns where the record's size goes, for end_record. */
static size_t begin_record(struct buf *b, uint32_t type)
{
	put32(b, type);
	put32(b, 0);
	return b->n;
}

static void end_record(struct buf *b, size_t payload)
{
	if (!b->failed)
		hp_le32(b->p + payload - 4, (uint32_t)(b->n - payload));
}

/* ---- clock ------------------------------------------------------------- */

static uint64_t qpc_ns(void)
{
	LARGE_INTEGER now;
	QueryPerformanceCounter(&now);
	uint64_t q = (uint64_t)now.QuadPart, f = (uint64_t)qpc_freq.QuadPart;
	return q / f * 1000000000ull + q % f * 1000000000ull / f;
}

static void put_clock(struct buf *b)
{
	uint64_t before = qpc_ns();
	uint64_t tick = __rdtsc();
	uint64_t after = qpc_ns();
	size_t at = begin_record(b, HP_REC_CLOCK);
	put64(b, tick);
	put64(b, before + (after - before) / 2);
	end_record(b, at);
}

/* CLOCK_REALTIME's meaning, from the system time (100 ns since 1601). */
static uint64_t realtime_ns(void)
{
	FILETIME ft;
	GetSystemTimeAsFileTime(&ft);
	uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
	return (t - 116444736000000000ull) * 100;
}

/* ---- modules ----------------------------------------------------------- */

static char *utf8(const wchar_t *w)
{
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
	char *s = n > 0 ? malloc((size_t)n) : NULL;
	if (s && WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL) <= 0)
		s[0] = 0;
	return s;
}

/* The ImageBase the file states: the loader writes the real base into the
 * headers in memory when it moves an image. */
static uint64_t file_image_base(const wchar_t *path, uint64_t fallback)
{
	HANDLE h = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, 0, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return fallback;
	uint8_t head[4096];
	DWORD got = 0;
	BOOL ok = ReadFile(h, head, sizeof(head), &got, NULL);
	CloseHandle(h);
	if (!ok || got < sizeof(IMAGE_DOS_HEADER))
		return fallback;
	LONG at = ((IMAGE_DOS_HEADER *)head)->e_lfanew;
	if (at < 0 || (DWORD)at + sizeof(IMAGE_NT_HEADERS64) > got)
		return fallback;
	IMAGE_NT_HEADERS64 nt;
	memcpy(&nt, head + at, sizeof(nt));
	if (nt.Signature != IMAGE_NT_SIGNATURE || nt.OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC)
		return fallback;
	return nt.OptionalHeader.ImageBase;
}

/* The CodeView record's GUID and age: 20 bytes, or 0. */
static size_t identity(const uint8_t *base, const IMAGE_NT_HEADERS64 *nt, uint8_t out[20])
{
	const IMAGE_DATA_DIRECTORY *dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_DEBUG];
	if (nt->OptionalHeader.NumberOfRvaAndSizes <= IMAGE_DIRECTORY_ENTRY_DEBUG || !dir->VirtualAddress)
		return 0;
	const IMAGE_DEBUG_DIRECTORY *d = (const void *)(base + dir->VirtualAddress);
	for (size_t i = 0; i < dir->Size / sizeof(*d); i++) {
		const uint8_t *cv = base + d[i].AddressOfRawData;
		if (d[i].Type != IMAGE_DEBUG_TYPE_CODEVIEW || !d[i].AddressOfRawData || d[i].SizeOfData < 24 ||
		    memcmp(cv, "RSDS", 4))
			continue;
		memcpy(out, cv + 4, 20);
		return 20;
	}
	return 0;
}

static uint32_t section_flags(DWORD c)
{
	return (c & IMAGE_SCN_MEM_EXECUTE ? 1 : 0) | (c & IMAGE_SCN_MEM_WRITE ? 2 : 0) |
	       (c & IMAGE_SCN_MEM_READ ? 4 : 0);
}

static void put_module(struct buf *b, HMODULE mod)
{
	const uint8_t *base = (const uint8_t *)mod;
	const IMAGE_NT_HEADERS64 *nt = (const void *)(base + ((const IMAGE_DOS_HEADER *)base)->e_lfanew);
	wchar_t wpath[MAX_PATH * 4];
	DWORD len = GetModuleFileNameW(mod, wpath, sizeof(wpath) / sizeof(wpath[0]));
	wpath[len < sizeof(wpath) / sizeof(wpath[0]) ? len : 0] = 0;
	char *path = utf8(wpath);
	uint8_t id[20];
	size_t idlen = identity(base, nt, id);
	const IMAGE_SECTION_HEADER *sec = IMAGE_FIRST_SECTION(nt);
	unsigned nsec = nt->FileHeader.NumberOfSections;
	put64(b, (uint64_t)(uintptr_t)base - file_image_base(wpath, nt->OptionalHeader.ImageBase));
	put_str(b, path ? path : "");
	put_bytes(b, id, idlen);
	put32(b, nsec);
	for (unsigned i = 0; i < nsec; i++) {
		DWORD size = sec[i].Misc.VirtualSize ? sec[i].Misc.VirtualSize : sec[i].SizeOfRawData;
		put64(b, (uint64_t)(uintptr_t)base + sec[i].VirtualAddress);
		put64(b, size);
		put64(b, sec[i].PointerToRawData);
		put32(b, section_flags(sec[i].Characteristics));
		put32(b, 0);
	}
	free(path);
}

static void take_snapshot(void)
{
	HMODULE mods[1024];
	DWORD bytes = 0;
	EnterCriticalSection(&snapshot_lock);
	uint64_t tick = __rdtsc();
	if (EnumProcessModules(GetCurrentProcess(), mods, sizeof(mods), &bytes)) {
		uint32_t n = bytes / sizeof(mods[0]);
		n = n < 1024 ? n : 1024;
		size_t at = begin_record(&snapshots, HP_REC_MODULES);
		put32(&snapshots, n);
		for (uint32_t i = 0; i < n; i++)
			put_module(&snapshots, mods[i]);
		end_record(&snapshots, at);
		at = begin_record(&snapshots, HP_REC_MODULES_AT);
		put64(&snapshots, tick);
		put32(&snapshots, n);
		put32(&snapshots, 0);
		end_record(&snapshots, at);
	}
	LeaveCriticalSection(&snapshot_lock);
}

/* ---- events ------------------------------------------------------------ */

/* Function address -> index, for the whole file; DEFINE ops as they come. */
struct dict {
	uint64_t key[DICT_SLOTS]; /* address + 1; 0: empty */
	uint32_t index[DICT_SLOTS];
	uint32_t count;
};

static uint32_t dict_index(struct dict *d, uint64_t addr, struct buf *out)
{
	uint32_t i = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 48) & (DICT_SLOTS - 1);
	while (d->key[i] && d->key[i] != addr + 1)
		i = (i + 1) & (DICT_SLOTS - 1);
	if (!d->key[i]) {
		if (d->count >= DICT_SLOTS / 2) {
			out->failed = 1;
			return 0;
		}
		d->key[i] = addr + 1;
		d->index[i] = d->count++;
		put8(out, HP_OP_DEFINE);
		put_uvarint(out, addr);
	}
	return d->index[i];
}

struct stream_state {
	uint32_t *stack;
	size_t depth, cap;
	uint64_t last;
};

static void put_enter(struct buf *b, struct stream_state *s, uint32_t fn, int64_t delta)
{
	if (delta < 0) {
		put8(b, HP_OP_ENTER_LONG);
		put_uvarint(b, fn);
		put_svarint(b, delta);
	} else {
		put8(b, (uint8_t)(fn < HP_OP_ENTER_SHORT_MAX ? fn : HP_OP_ENTER_SHORT_MAX));
		if (fn >= HP_OP_ENTER_SHORT_MAX)
			put_uvarint(b, fn);
		put_uvarint(b, (uint64_t)delta);
	}
	if (s->depth == s->cap && grow((void **)&s->stack, &s->cap, sizeof(*s->stack), 4096) < 0) {
		b->failed = 1;
		return;
	}
	s->stack[s->depth++] = fn;
}

/* The exit of the top frame is always 0x80 or 0x40 (docs/format.md). */
static void put_exit(struct buf *b, struct stream_state *s, uint32_t fn, int64_t delta)
{
	if (s->depth && s->stack[s->depth - 1] == fn) {
		if (delta >= 0 && delta < 128) {
			put8(b, (uint8_t)(HP_OP_EXIT_SHORT | delta));
		} else {
			put8(b, HP_OP_EXIT_LONG);
			put_svarint(b, delta);
		}
		s->depth--;
		return;
	}
	put8(b, HP_OP_EXIT_FN);
	put_uvarint(b, fn);
	put_svarint(b, delta);
	s->depth = hp_stack_unwind_to(s->stack, s->depth, fn);
}

static void put_events_record(struct buf *out, uint32_t stream, uint32_t count, const struct buf *data)
{
	size_t at = begin_record(out, HP_REC_EVENTS);
	put32(out, stream);
	put32(out, count);
	put(out, data->p, data->n);
	end_record(out, at);
}

/* A thread's events in EVENTS records of about CHUNK_BYTES. */
static uint64_t put_stream(struct buf *out, struct dict *d, const struct thread *t)
{
	struct stream_state s = { 0 };
	struct buf data = { 0 };
	uint32_t count = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct event *e = &t->ev[i];
		uint32_t fn = dict_index(d, e->addr & ~EXIT_FLAG, &data);
		int64_t delta = (int64_t)(e->tick - s.last);
		if (e->addr & EXIT_FLAG)
			put_exit(&data, &s, fn, delta);
		else
			put_enter(&data, &s, fn, delta);
		s.last = e->tick;
		count++;
		if (data.n >= CHUNK_BYTES || i + 1 == t->n) {
			put_events_record(out, t->stream, count, &data);
			out->failed |= data.failed;
			data.n = 0;
			count = 0;
		}
	}
	free(data.p);
	free(s.stack);
	return t->n;
}

/* ---- the file ---------------------------------------------------------- */

static void put_header(struct buf *b)
{
	uint8_t h[HP_FILE_HEADER_SIZE] = { 0 };
	memcpy(h, HP_MAGIC, HP_MAGIC_LEN);
	h[8] = HP_VERSION_MAJOR;
	h[10] = HP_VERSION_MINOR;
	hp_le32(h + 12, HP_BYTE_ORDER_MARK);
	hp_le32(h + 16, HP_FILE_HEADER_SIZE);
	put(b, h, sizeof(h));
}

static void put_process(struct buf *b, uint64_t start_ns)
{
	char *exe = NULL;
	wchar_t w[MAX_PATH * 4];
	DWORD len = GetModuleFileNameW(NULL, w, sizeof(w) / sizeof(w[0]));
	w[len < sizeof(w) / sizeof(w[0]) ? len : 0] = 0;
	exe = utf8(w);
	size_t at = begin_record(b, HP_REC_PROCESS);
	put32(b, GetCurrentProcessId());
	put32(b, HP_CLOCK_TSC);
	put64(b, start_ns);
	put32(b, 0);
	put32(b, (uint32_t)__argc);
	put_str(b, exe ? exe : "");
	for (int i = 0; i < __argc; i++)
		put_str(b, __argv[i]);
	put64(b, 0); /* no fixed buffer per thread */
	put32(b, 0); /* the clock's step: not measured */
	put32(b, 0);
	end_record(b, at);
	free(exe);
}

static void put_threads(struct buf *b, struct dict *d, uint32_t n, uint64_t *events)
{
	for (uint32_t i = 0; i < n; i++) {
		size_t at = begin_record(b, HP_REC_THREAD);
		put32(b, threads[i]->stream);
		put32(b, threads[i]->tid);
		put_str(b, i ? "worker" : "main");
		end_record(b, at);
		*events += put_stream(b, d, threads[i]);
	}
}

static void put_end(struct buf *b, uint64_t events, uint32_t streams)
{
	size_t at = begin_record(b, HP_REC_END);
	put64(b, events);
	put64(b, 0);
	put32(b, streams);
	put32(b, 0);
	end_record(b, at);
}

static char *output_path(void)
{
	const char *env = getenv("HOOKPROF_OUTPUT");
	char *p = malloc(MAX_PATH * 4);
	if (p && env && *env)
		snprintf(p, MAX_PATH * 4, "%s", env);
	else if (p)
		snprintf(p, MAX_PATH * 4, "hpw-%lu.hookprof", (unsigned long)GetCurrentProcessId());
	return p;
}

static uint64_t start_ns;
static struct buf start_clocks;

static void write_trace(void)
{
	take_snapshot();
	InterlockedExchange(&finished, 1);
	struct buf b = { 0 };
	struct dict *d = calloc(1, sizeof(*d));
	uint32_t n = (uint32_t)(nthreads < THREADS_MAX ? nthreads : THREADS_MAX);
	uint64_t events = 0;
	put_header(&b);
	put_process(&b, start_ns);
	put(&b, start_clocks.p, start_clocks.n);
	put(&b, snapshots.p, snapshots.n);
	if (d)
		put_threads(&b, d, n, &events);
	put_clock(&b);
	put_end(&b, events, n);
	char *path = output_path();
	FILE *f = path && d && !b.failed && !snapshots.failed ? fopen(path, "wb") : NULL;
	if (!f || fwrite(b.p, 1, b.n, f) != b.n || fclose(f) != 0)
		fprintf(stderr, "hpw: could not write the trace to %s\n", path ? path : "?");
	free(path);
	free(d);
	free(b.p);
}

/* Two CLOCK records at start, at least 100 us apart (docs/format.md). */
__attribute__((constructor)) static void hpw_start(void)
{
	QueryPerformanceFrequency(&qpc_freq);
	InitializeCriticalSection(&snapshot_lock);
	start_ns = realtime_ns();
	put_clock(&start_clocks);
	uint64_t until = qpc_ns() + 200000;
	while (qpc_ns() < until)
		;
	put_clock(&start_clocks);
	take_snapshot();
}

__attribute__((destructor)) static void hpw_end(void)
{
	write_trace();
}
