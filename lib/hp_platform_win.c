/*
 * hp_platform_win.c - Windows x64 implementation of hp_platform.h, built
 * with mingw-w64 into hookprof.dll and libhookprof.a (`make windows`);
 * never part of the Linux build.
 *
 *   clock      rdtsc when the TSC is invariant, else QueryPerformanceCounter
 *              in ns; the CLOCK records pair ticks with QPC's ns
 *   pages      VirtualAlloc / VirtualFree
 *   waits      WaitOnAddress / WakeByAddressAll (Windows 8, Wine 8)
 *   locks      SRW locks
 *   threads    CreateThread for the writer; a thread's exit reaches the
 *              runtime through our TLS callback (DLL_THREAD_DETACH), which
 *              runs before mingw's own, so thread-local data is still there
 *   exit       the C runtime's process-wide onexit table (msvcrt's, else
 *              the UCRT's), registered at load: after the program's atexit
 *              handlers, while its threads still run. A process that ends
 *              without exit() ends its trace at DLL_PROCESS_DETACH, where
 *              its threads are gone, the writer with them (ExitProcess
 *              ends them first): the exiting thread takes its place
 *   crashes    an unhandled-exception filter, the one there before called
 *              after it; the stack from RtlVirtualUnwind
 *   modules    lib/win/hp_win_modules.c (a list the loader's notifications
 *              keep)
 *   output     CreateFileW (CREATE_NEW: never another's file) and WriteFile
 *   warnings   WriteFile to the standard error handle noted at load
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <winternl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_format.h"
#include "hp_platform.h"
#include "hp_runtime.h"
#include "win/hp_win_modules.h"

_Static_assert(sizeof(hp_mutex_t) == sizeof(SRWLOCK), "hp_mutex_t is laid out as an SRWLOCK");

int hp_tick_is_tsc;

/* ---- clock --------------------------------------------------------------- */

static uint64_t qpc_freq;

void hp_platform_init(int force_monotonic)
{
	LARGE_INTEGER f;
	QueryPerformanceFrequency(&f);
	qpc_freq = (uint64_t)f.QuadPart;
	hp_tick_is_tsc = !force_monotonic && hp_tsc_is_invariant();
}

/* QueryPerformanceCounter in ns, without overflowing the product. */
uint64_t hp_clock_ns(void)
{
	LARGE_INTEGER now;
	QueryPerformanceCounter(&now);
	uint64_t q = (uint64_t)now.QuadPart, f = qpc_freq;
	if (!f) { /* before hp_platform_init (the unit tests' order) */
		LARGE_INTEGER li;
		QueryPerformanceFrequency(&li);
		f = qpc_freq = (uint64_t)li.QuadPart;
	}
	return q / f * 1000000000ull + q % f * 1000000000ull / f;
}

/* CLOCK_REALTIME's meaning, from the system time (100 ns since 1601). */
uint64_t hp_realtime_ns(void)
{
	FILETIME ft;
	GetSystemTimePreciseAsFileTime(&ft);
	uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
	return (t - 116444736000000000ull) * 100;
}

/* Sleep() has a millisecond's grain (or the timer's, 15.6 ms): shorter
 * waits yield until their time is up. */
void hp_sleep_us(unsigned us)
{
	if (us >= 1000) {
		Sleep(us / 1000);
		return;
	}
	uint64_t until = hp_clock_ns() + (uint64_t)us * 1000;
	while (hp_clock_ns() < until)
		SwitchToThread();
}

/* ---- memory -------------------------------------------------------------- */

void *hp_pages_alloc(size_t size)
{
	return VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
}

void hp_pages_free(void *p, size_t size)
{
	(void)size;
	if (p)
		VirtualFree(p, 0, MEM_RELEASE);
}

/* No mremap: a new block, the contents copied. */
void *hp_pages_grow(void *p, size_t old_size, size_t new_size)
{
	void *q = hp_pages_alloc(new_size);
	if (q && p) {
		memcpy(q, p, old_size < new_size ? old_size : new_size);
		hp_pages_free(p, old_size);
	}
	return q;
}

/* No fork on Windows. */
int hp_pages_wipe_on_fork(void *p, size_t size)
{
	(void)p;
	(void)size;
	return 0;
}

/* ---- text ----------------------------------------------------------------- */

/* UTF-16 to UTF-8, NUL-terminated, cut to fit: the bytes before the NUL. */
static size_t to_utf8(const wchar_t *w, char *out, size_t len)
{
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)len, NULL, NULL);
	if (n <= 0) {
		/* Too long for out: as much as fits, cut at a character. */
		n = WideCharToMultiByte(CP_UTF8, 0, w, (int)wcsnlen(w, len / 3), out, (int)len - 1, NULL, NULL);
		n = n > 0 ? n + 1 : 1;
		out[n - 1] = 0;
	}
	return (size_t)n - 1;
}

/* UTF-8 to UTF-16: 0, or -1 if it does not fit (errno ENAMETOOLONG). */
static int to_utf16(const char *s, wchar_t *out, size_t len)
{
	if (MultiByteToWideChar(CP_UTF8, 0, s, -1, out, (int)len) > 0)
		return 0;
	errno = ENAMETOOLONG;
	return -1;
}

static int errno_of(DWORD err)
{
	switch (err) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
		return ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
		return EACCES;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL:
		return ENOSPC;
	case ERROR_FILENAME_EXCED_RANGE:
		return ENAMETOOLONG;
	default:
		return EIO;
	}
}

/* ---- threads ---------------------------------------------------------------- */

uint32_t hp_gettid(void) { return (uint32_t)GetCurrentThreadId(); }

/* Windows 10's thread names (kernelbase; Wine has them), looked up once at
 * load: GetModuleHandle and GetProcAddress take the loader's lock, which
 * a thread's exit holds while it takes ours. */
typedef HRESULT(WINAPI *get_description_fn)(HANDLE, PWSTR *);
typedef HRESULT(WINAPI *set_description_fn)(HANDLE, PCWSTR);
static get_description_fn get_description;
static set_description_fn set_description;

static void find_thread_names(void)
{
	HMODULE k = GetModuleHandleW(L"kernelbase.dll");
	if (!k)
		return;
	get_description = (get_description_fn)(void *)GetProcAddress(k, "GetThreadDescription");
	set_description = (set_description_fn)(void *)GetProcAddress(k, "SetThreadDescription");
}

static struct {
	void (*fn)(void *);
	void *arg;
} started;

static DWORD WINAPI thread_main(void *unused)
{
	(void)unused;
	started.fn(started.arg);
	return 0;
}

/* Only the writer thread is started, one at a time. */
int hp_thread_start(void (*fn)(void *arg), void *arg, const char *name)
{
	started.fn = fn;
	started.arg = arg;
	HANDLE h = CreateThread(NULL, 0, thread_main, NULL, 0, NULL);
	if (!h)
		return -1;
	wchar_t wname[16];
	if (set_description && to_utf16(name, wname, 16) == 0)
		set_description(h, wname);
	CloseHandle(h);
	return 0;
}

/* A thread's description, or else the program's name, as a Linux thread
 * is known by its program's until it is named. -1 if it cannot be read. */
static int thread_name(HANDLE h, char *name, size_t len)
{
	wchar_t *desc = NULL;
	if (!get_description || FAILED(get_description(h, &desc)))
		return -1;
	name[0] = 0;
	if (desc) {
		to_utf8(desc, name, len);
		LocalFree(desc);
	}
	if (!name[0])
		snprintf(name, len, "%s", hp_program_name());
	return 0;
}

void hp_thread_name_self(char *name, size_t len)
{
	if (thread_name(GetCurrentThread(), name, len))
		snprintf(name, len, "%s", hp_program_name());
}

int hp_thread_name_of(uint32_t tid, char *name, size_t len)
{
	HANDLE h = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, tid);
	if (!h)
		return -1;
	int rc = thread_name(h, name, len);
	CloseHandle(h);
	return rc;
}

/* Our TLS callback calls the runtime at the exit of armed threads. */
static int exit_hook_on;
static __thread int exit_armed;

int hp_thread_exit_init(void)
{
	exit_hook_on = 1;
	return 0;
}

void hp_thread_exit_arm(void)
{
	exit_armed = 1;
}

/* ---- locks ----------------------------------------------------------------- */

void hp_mutex_lock(hp_mutex_t *m) { AcquireSRWLockExclusive((SRWLOCK *)m); }
void hp_mutex_unlock(hp_mutex_t *m) { ReleaseSRWLockExclusive((SRWLOCK *)m); }
int hp_mutex_trylock(hp_mutex_t *m) { return TryAcquireSRWLockExclusive((SRWLOCK *)m) ? 0 : -1; }
void hp_mutex_reinit(hp_mutex_t *m) { InitializeSRWLock((SRWLOCK *)m); }

/* An exception filter runs on the faulting thread, which may hold the lock
 * itself (SRW locks are not recursive): try a bounded time, then give up. */
int hp_mutex_lock_bounded(hp_mutex_t *m, int in_signal, int timeout_ms)
{
	if (!in_signal) {
		hp_mutex_lock(m);
		return 0;
	}
	for (int i = 0; i < timeout_ms; i++) {
		if (!hp_mutex_trylock(m))
			return 0;
		Sleep(1);
	}
	return -1;
}

/* ---- waiting on a word ------------------------------------------------------ */

void hp_futex_wait(uint32_t *word, uint32_t expected, int timeout_ms)
{
	DWORD err = GetLastError();
	WaitOnAddress(word, &expected, sizeof(*word), timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
	SetLastError(err);
}

void hp_futex_wake(uint32_t *word)
{
	WakeByAddressAll(word);
}

/* ---- signals: none to hold on Windows ---------------------------------------- */

void hp_signals_hold(hp_sigmask_t *saved) { saved->unused = 0; }
void hp_signals_release(const hp_sigmask_t *saved) { (void)saved; }

int hp_signal_stack_use(void *stack, size_t size)
{
	(void)stack;
	(void)size;
	return 0;
}

void hp_signal_stack_drop(void *stack) { (void)stack; }
int hp_signal_stack_running(void *stack)
{
	(void)stack;
	return 0;
}

int hp_fork_hooks_install(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	(void)prepare;
	(void)parent;
	(void)child;
	return 0;
}

int hp_parent_has_runtime(void) { return 0; }

/* ---- fatal events ------------------------------------------------------------- */

static LPTOP_LEVEL_EXCEPTION_FILTER previous_filter;

static LONG WINAPI on_unhandled_exception(EXCEPTION_POINTERS *ep)
{
	DWORD err = GetLastError();
	const EXCEPTION_RECORD *r = ep->ExceptionRecord;
	struct hp_fatal f = {
		.sig = r->ExceptionCode,
		.code = 0,
		/* An access violation's address: the second parameter. */
		.addr = r->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && r->NumberParameters >= 2
				? (uint64_t)r->ExceptionInformation[1]
				: 0,
		.context = ep->ContextRecord,
	};
	hp_runtime_on_fatal(&f);
	SetLastError(err);
	return previous_filter ? previous_filter(ep) : EXCEPTION_CONTINUE_SEARCH;
}

/* Unhandled exceptions only: one the program handles (SEH, C++) is not
 * fatal. The filter there before (mingw's C runtime's, which calls a
 * signal() handler of the program's) still runs, after ours. */
void hp_fatal_hooks_install(void)
{
	static int installed;
	if (!installed++)
		previous_filter = SetUnhandledExceptionFilter(on_unhandled_exception);
}

/* ---- stacks --------------------------------------------------------------------- */

void hp_stack_init(void) {}

static int on_stack(uint64_t sp)
{
	ULONG_PTR low, high;
	GetCurrentThreadStackLimits(&low, &high);
	return sp >= low && sp + 8 <= high;
}

/* One frame up, from the function's unwind data (.pdata); a function
 * without any is a leaf, whose return address is at the stack pointer.
 * -1 when the stack ends, or leaves the thread's stack. */
static int unwind_one(CONTEXT *ctx)
{
	DWORD64 image = 0, establisher = 0;
	void *handler_data = NULL;
	PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry(ctx->Rip, &image, NULL);
	if (fn) {
		RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx->Rip, fn, ctx, &handler_data, &establisher, NULL);
	} else {
		if (!on_stack(ctx->Rsp))
			return -1;
		ctx->Rip = *(const DWORD64 *)(uintptr_t)ctx->Rsp;
		ctx->Rsp += 8;
	}
	return ctx->Rip && on_stack(ctx->Rsp) ? 0 : -1;
}

/* The frames from ctx's up to max; HP_STACK_TRUNCATED if there were more. */
static uint32_t walk(CONTEXT *ctx, uint64_t *pc, uint32_t max, uint32_t *flags)
{
	uint32_t n = 0;
	int more = ctx->Rip != 0;
	while (more && n < max) {
		pc[n++] = ctx->Rip;
		more = unwind_one(ctx) == 0;
	}
	if (more)
		*flags |= HP_STACK_TRUNCATED;
	return n;
}

/* Frame 0 is the faulting instruction, the others return addresses. */
uint32_t hp_stack_crash(const struct hp_fatal *f, uint64_t *pc, uint32_t max, uint32_t *flags)
{
	CONTEXT ctx = *(const CONTEXT *)f->context;
	return walk(&ctx, pc, max, flags);
}

/* The first byte of the function pc is in, from its unwind data; 0 if none. */
static uint64_t function_start(uint64_t pc)
{
	DWORD64 image = 0;
	PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry(pc, &image, NULL);
	return fn ? image + fn->BeginAddress : 0;
}

/* Our own frames below the first instrumented one (this, the slow path,
 * the hook) are at most a few. */
#define OWN_FRAMES_MAX 16
#define PENTER_CALL_LEN 5 /* call rel32 (hp_penter_win64.S) */

/* From the frame of first_func (its hook's caller) up: the thread's start
 * (RtlUserThreadStart, BaseThreadInitThunk) and whatever called it. */
__attribute__((noinline)) void hp_stack_root(struct hp_frames *s, uint64_t first_func)
{
	CONTEXT ctx, start;
	s->n = 0;
	s->flags = 0;
	RtlCaptureContext(&ctx);
	start = ctx;
	int found = 0;
	uint64_t fn = first_func & ~HP_RAW_EXIT;
	for (int i = 0; i < OWN_FRAMES_MAX && !found; i++) {
		/* A function hooked by _penter calls it first: right after that
		 * call, even without unwind data of its own. */
		found = function_start(ctx.Rip) == fn || ctx.Rip == fn + PENTER_CALL_LEN;
		if (!found && unwind_one(&ctx))
			break;
	}
	if (!found) {
		/* A function without unwind data: the whole stack, ours included. */
		s->flags |= HP_STACK_NO_ROOT;
		ctx = start;
	}
	s->n = walk(&ctx, s->pc, HP_ROOT_FRAMES, &s->flags);
}

/* ---- modules ------------------------------------------------------------------- */

static SRWLOCK modules_once = SRWLOCK_INIT;
static int modules_ready;

/* The unload notification, under the loader's lock: the map is written
 * while the module is still in it (as the dlclose interposer does). */
static void module_unloading(void)
{
	hp_runtime_objects_changing();
}

static void modules_start(void)
{
	if (__atomic_load_n(&modules_ready, __ATOMIC_ACQUIRE))
		return;
	AcquireSRWLockExclusive(&modules_once);
	if (!modules_ready && hp_win_modules_init(hp_pages_alloc, module_unloading) == 0)
		__atomic_store_n(&modules_ready, 1, __ATOMIC_RELEASE);
	ReleaseSRWLockExclusive(&modules_once);
}

struct each_arg {
	int (*fn)(const struct hp_loaded_module *m, void *arg);
	void *arg;
};

static int each_module(const struct hp_win_module *w, void *p)
{
	const struct each_arg *a = p;
	struct hp_loaded_segment seg[HP_WIN_SECTIONS_MAX];
	for (uint32_t i = 0; i < w->nsections; i++)
		seg[i] = (struct hp_loaded_segment){ .start = w->sections[i].start,
						     .size = w->sections[i].size,
						     .offset = w->sections[i].offset,
						     .flags = w->sections[i].flags };
	struct hp_loaded_module m = { .bias = w->bias,
				      .path = w->path,
				      .build_id = w->id,
				      .build_id_len = w->id_len,
				      .nseg = w->nsections,
				      .seg = seg,
				      .has_file = 1 };
	return a->fn(&m, a->arg);
}

void hp_modules_each(int (*fn)(const struct hp_loaded_module *m, void *arg), void *arg)
{
	struct each_arg a = { fn, arg };
	modules_start();
	hp_win_modules_each(each_module, &a);
}

uint64_t hp_modules_generation(void)
{
	modules_start();
	return hp_win_modules_changes();
}

/* Record-time filters by name are not there on Windows (docs/windows.md). */
int hp_module_symbols(const char *path, uint64_t bias, void (*fn)(void *arg, const char *name, uint64_t addr),
		      void *arg)
{
	(void)path;
	(void)bias;
	(void)fn;
	(void)arg;
	return -1;
}

hp_demangler_fn hp_find_demangler(void) { return NULL; }

void *hp_regex_compile(const char *re, char *err, size_t errlen)
{
	snprintf(err, errlen, "'%s': filters by name are not supported on Windows", re);
	return NULL;
}

int hp_regex_matches(const void *regex, const char *s)
{
	(void)regex;
	(void)s;
	return 0;
}

void hp_regex_free(void *regex) { (void)regex; }

/* ---- the trace file --------------------------------------------------------------- */

static HANDLE trace_file = INVALID_HANDLE_VALUE;

enum hp_path_kind hp_path_kind(const char *path)
{
	wchar_t w[HP_WIN_PATH_MAX];
	if (to_utf16(path, w, HP_WIN_PATH_MAX))
		return HP_PATH_NONE;
	DWORD a = GetFileAttributesW(w);
	if (a == INVALID_FILE_ATTRIBUTES)
		return HP_PATH_NONE;
	return a & FILE_ATTRIBUTE_DIRECTORY ? HP_PATH_DIR : HP_PATH_FILE;
}

/* C:\..., C:/..., \\server\..., \\?\...; and a path from the root of the
 * current drive (\dir), which the working directory does not change. */
int hp_path_is_absolute(const char *path)
{
	if (path[0] == '\\' || path[0] == '/')
		return 1;
	return ((path[0] | 0x20) >= 'a' && (path[0] | 0x20) <= 'z') && path[1] == ':' &&
	       (path[2] == '\\' || path[2] == '/');
}

int hp_cwd(char *buf, size_t len)
{
	wchar_t w[HP_WIN_PATH_MAX];
	DWORD n = GetCurrentDirectoryW(HP_WIN_PATH_MAX, w);
	if (!n || n >= HP_WIN_PATH_MAX) {
		errno = ERANGE;
		return -1;
	}
	return to_utf8(w, buf, len) + 1 < len ? 0 : (errno = ERANGE, -1);
}

/* Not inheritable (no security attributes); deletable while open, as a
 * Linux file is, so that hp_file_batch_begin can tell it was deleted. */
int hp_file_create(const char *path)
{
	wchar_t w[HP_WIN_PATH_MAX];
	if (to_utf16(path, w, HP_WIN_PATH_MAX))
		return -1;
	HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, CREATE_NEW,
			       FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		DWORD err = GetLastError();
		if (err == ERROR_FILE_EXISTS || err == ERROR_ALREADY_EXISTS)
			return 1;
		errno = errno_of(err);
		return -1;
	}
	trace_file = h;
	return 0;
}

int hp_file_open_special(const char *path, int fifo, char *err, size_t errlen)
{
	(void)fifo;
	snprintf(err, errlen, "cannot write the trace to '%s': devices and pipes are not supported on Windows", path);
	errno = ENOTSUP;
	return -1;
}

/* A file deleted while we hold it open waits for its deletion: ENOENT. */
int hp_file_batch_begin(uint64_t *len)
{
	FILE_STANDARD_INFO info;
	if (trace_file == INVALID_HANDLE_VALUE) {
		errno = EBADF;
		return -1;
	}
	if (GetFileInformationByHandleEx(trace_file, FileStandardInfo, &info, sizeof(info)) && info.DeletePending) {
		errno = ENOENT;
		return -1;
	}
	LARGE_INTEGER size;
	if (!GetFileSizeEx(trace_file, &size)) {
		errno = errno_of(GetLastError());
		return -1;
	}
	*len = (uint64_t)size.QuadPart;
	return 0;
}

/* No file size limit to stay under. */
uint64_t hp_file_room(uint64_t len, uint64_t n)
{
	(void)len;
	return n;
}

size_t hp_file_write(const uint8_t *p, size_t n)
{
	LARGE_INTEGER zero = { 0 };
	size_t done = 0;
	if (!SetFilePointerEx(trace_file, zero, NULL, FILE_END)) {
		errno = errno_of(GetLastError());
		return 0;
	}
	while (done < n) {
		DWORD part = n - done > (1u << 30) ? 1u << 30 : (DWORD)(n - done), wrote = 0;
		if (!WriteFile(trace_file, p + done, part, &wrote, NULL) || !wrote) {
			errno = errno_of(GetLastError());
			break;
		}
		done += wrote;
	}
	return done;
}

void hp_file_truncate(uint64_t len)
{
	LARGE_INTEGER at = { .QuadPart = (LONGLONG)len };
	if (SetFilePointerEx(trace_file, at, NULL, FILE_BEGIN))
		SetEndOfFile(trace_file);
}

void hp_file_batch_end(void) {}

void hp_file_discard(const char *path)
{
	wchar_t w[HP_WIN_PATH_MAX];
	if (trace_file != INVALID_HANDLE_VALUE)
		CloseHandle(trace_file);
	trace_file = INVALID_HANDLE_VALUE;
	if (to_utf16(path, w, HP_WIN_PATH_MAX) == 0)
		DeleteFileW(w);
}

void hp_file_forget(void) {}

/* ---- the process ---------------------------------------------------------------- */

uint32_t hp_getpid(void) { return (uint32_t)GetCurrentProcessId(); }

/* The parent's id from ntdll's process information (0 if unknown). */
uint32_t hp_getppid(void)
{
	PROCESS_BASIC_INFORMATION info;
	if (NtQueryInformationProcess(GetCurrentProcess(), ProcessBasicInformation, &info, sizeof(info), NULL))
		return 0;
	return (uint32_t)info.InheritedFromUniqueProcessId;
}

char *hp_getenv(const char *name) { return getenv(name); }
char **hp_environ(void) { return _environ; }
int hp_secure_execution(void) { return 0; }

size_t hp_exe_path(char *buf, size_t len)
{
	wchar_t w[HP_WIN_PATH_MAX];
	DWORD n = GetModuleFileNameW(NULL, w, HP_WIN_PATH_MAX);
	if (!n || n >= HP_WIN_PATH_MAX || !len)
		return 0;
	w[n] = 0;
	return to_utf8(w, buf, len);
}

/* The executable's base name without ".exe": what %n of HOOKPROF_OUTPUT
 * names, as a Linux program's short name. */
const char *hp_program_name(void)
{
	static char name[256];
	static int known;
	if (__atomic_load_n(&known, __ATOMIC_ACQUIRE))
		return name;
	char path[HP_WIN_PATH_MAX];
	size_t n = hp_exe_path(path, sizeof(path));
	path[n] = 0;
	const char *base = path;
	for (const char *p = path; *p; p++)
		if (*p == '\\' || *p == '/')
			base = p + 1;
	snprintf(name, sizeof(name), "%s", base);
	char *dot = strrchr(name, '.');
	if (dot && !_stricmp(dot, ".exe"))
		*dot = 0;
	__atomic_store_n(&known, 1, __ATOMIC_RELEASE);
	return name;
}

/*
 * The command line split as the C runtime splits it for main(): blanks
 * separate arguments outside quotes; 2n backslashes before a quote are n
 * and the quote opens or closes; 2n+1 are n and a literal quote; other
 * backslashes are themselves. No shell32 (CommandLineToArgvW) for this.
 */
static size_t split_command_line(const wchar_t *s, wchar_t *out)
{
	size_t n = 0;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		for (int quoted = 0; *s && (quoted || (*s != ' ' && *s != '\t'));) {
			size_t slashes = 0;
			while (*s == '\\')
				slashes++, s++;
			if (*s == '"') {
				for (size_t i = 0; i < slashes / 2; i++)
					out[n++] = '\\';
				if (slashes % 2)
					out[n++] = '"';
				else
					quoted = !quoted;
				s++;
			} else {
				for (size_t i = 0; i < slashes; i++)
					out[n++] = '\\';
				if (*s && (quoted || (*s != ' ' && *s != '\t')))
					out[n++] = *s++;
			}
		}
		out[n++] = 0;
	}
	return n;
}

size_t hp_command_line(char *buf, size_t len)
{
	const wchar_t *cmd = GetCommandLineW();
	size_t wlen = wcslen(cmd) + 2;
	wchar_t *split = hp_pages_alloc(wlen * sizeof(wchar_t));
	if (!split || !len)
		return 0;
	size_t n = split_command_line(cmd, split), done = 0;
	for (size_t i = 0; i < n && done < len; i += wcslen(split + i) + 1) {
		/* Each argument with its NUL; the last cut where buf ends. */
		size_t got = to_utf8(split + i, buf + done, len - done);
		done += got + (done + got < len);
	}
	hp_pages_free(split, wlen * sizeof(wchar_t));
	return done;
}

/* ---- warnings ----------------------------------------------------------------- */

static HANDLE stderr_noted;

void hp_stderr_note(void)
{
	stderr_noted = GetStdHandle(STD_ERROR_HANDLE);
}

/* Silent once the program put another handle there, or none. */
void hp_stderr_write(const char *line, size_t n)
{
	HANDLE h = GetStdHandle(STD_ERROR_HANDLE);
	DWORD err = GetLastError(), wrote;
	if (h && h != INVALID_HANDLE_VALUE && (!stderr_noted || h == stderr_noted))
		WriteFile(h, line, (DWORD)n, &wrote, NULL);
	SetLastError(err);
}

/* ---- load, exit and thread exit ---------------------------------------------- */

static int exit_done;

static void run_at_exit(void)
{
	if (!__atomic_exchange_n(&exit_done, 1, __ATOMIC_ACQ_REL))
		hp_runtime_on_exit();
}

static int __cdecl onexit_handler(void)
{
	run_at_exit();
	return 0;
}

static void __cdecl crt_atexit_handler(void)
{
	run_at_exit();
}

/* ExitProcess without exit() (an MSVC program with the static C runtime,
 * or a C runtime whose exit table we could not reach): every other thread
 * is gone, the writer's too, and any of them may have died holding a lock
 * of ours: the end is written with bounded waits, in the writer's place.
 * Only if a thread died holding the writer's lock is nothing more written. */
static void ended_without_exit(void)
{
	if (__atomic_exchange_n(&exit_done, 1, __ATOMIC_ACQ_REL))
		return;
	if (hp_runtime_on_exit_alone())
		hp_warn("the process ended without exit() while a thread held the writer's lock: "
			"the trace has no end record, and the events of the last 50 ms may be missing");
}

/* The C runtime's table of the whole process, which exit() runs first
 * (mingw's atexit in a DLL is the DLL's own, run at DLL_PROCESS_DETACH). */
static int register_process_exit(void)
{
	typedef void *(__cdecl * onexit_fn)(int(__cdecl *)(void));
	typedef int(__cdecl * crt_atexit_fn)(void(__cdecl *)(void));
	HMODULE crt = GetModuleHandleW(L"msvcrt.dll");
	onexit_fn onexit = crt ? (onexit_fn)(void *)GetProcAddress(crt, "_onexit") : NULL;
	if (onexit && onexit(onexit_handler))
		return 0;
	crt = GetModuleHandleW(L"ucrtbase.dll");
	crt_atexit_fn crt_atexit = crt ? (crt_atexit_fn)(void *)GetProcAddress(crt, "_crt_atexit") : NULL;
	return crt_atexit && crt_atexit(crt_atexit_handler) == 0 ? 0 : -1;
}

/* hookprof.dll stays until the end: the exit table holds our handler, and
 * a program's FreeLibrary of it would pull the hooks from under it. */
static void pin_self(void)
{
	HMODULE self;
	GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
			   (LPCWSTR)(void *)pin_self, &self);
}

/*
 * Our TLS callback, in .CRT$XLB: the loader calls the callbacks of an image
 * in the order of their sections, so this one runs before mingw's
 * (.CRT$XLC, .CRT$XLD), which free emulated thread-local data. It is
 * called for the DLL (hookprof.dll) or for the executable that links the
 * static library, at each attach and detach.
 */
static void NTAPI tls_callback(void *image, DWORD reason, void *reserved)
{
	(void)image;
	(void)reserved;
	DWORD err = GetLastError();
	switch (reason) {
	case DLL_PROCESS_ATTACH:
		find_thread_names();
		pin_self();
		register_process_exit();
		/* The first module list now, under the loader's lock we hold:
		 * start-up, later, under init_lock, must not take it (a thread's
		 * first event inside another DLL's DllMain holds the loader's
		 * lock and waits for init_lock). */
		modules_start();
		hp_runtime_on_load();
		break;
	case DLL_THREAD_DETACH:
		if (exit_hook_on && exit_armed) {
			exit_armed = 0;
			hp_runtime_on_thread_exit();
		}
		break;
	case DLL_PROCESS_DETACH:
		ended_without_exit();
		break;
	}
	SetLastError(err);
}

extern const IMAGE_TLS_DIRECTORY _tls_used; /* mingw's, which lists the callbacks */
__attribute__((used)) static const void *const need_tls_directory = &_tls_used;
__attribute__((used, section(".CRT$XLB"))) static const PIMAGE_TLS_CALLBACK hp_tls_callback = tls_callback;
