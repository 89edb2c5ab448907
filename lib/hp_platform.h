/*
 * hp_platform.h - the one platform interface of the runtime: everything the
 * portable files of lib/ need from the OS, declared here and implemented
 * once per OS.
 *
 *   lib/hp_platform_linux.c   Linux (glibc), x86-64
 *   lib/hp_platform_win.c     Windows x64 (mingw-w64), the "win" side
 *   lib/hp_unwind.c           Linux: the stack captures below (libunwind)
 *
 * Portable (no OS header but what this file includes): hp_buffer,
 * hp_writer, hp_records, hp_encode, hp_runtime, hp_output, hp_strings,
 * hp_calibrate, hp_config, hp_filter, hp_control, hp_modules, and
 * hp_platform.c (this interface's portable part: bounded waits, hp_warn).
 * Linux-only, never built for Windows (the Makefile's LIB_LINUX_ONLY):
 * hp_platform_linux.c, hp_unwind.c (libunwind), hp_interpose*.c
 * (close/dlclose/fork/exec/daemon interposition through dlsym(RTLD_NEXT)),
 * hp_linux.h.
 *
 * Linux-only behaviours behind this interface as hooks that "may do
 * nothing" on an OS without them (each says what a no-op means): fork
 * handlers, memory wiped on fork (the raw-fork child's mark), the
 * alternate signal stack, the parent's runtime check at exit. Windows has
 * no fork: its child checks are constant.
 *
 * Conventions: functions return 0 or -1 (errno set, for strerror) unless
 * said otherwise; none calls instrumented code, none uses the program's
 * malloc (unless said), every one leaves errno as it found it unless its
 * contract says it sets it. "Signal context" means a fatal-signal handler
 * on Linux, an exception filter or vectored handler on Windows.
 *
 * The portable runtime provides the hp_runtime_on_* functions at the end;
 * the platform calls them.
 */
#ifndef HP_PLATFORM_H
#define HP_PLATFORM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- per-OS types and attributes (the only #if on the OS) -------------- */

#if defined(_WIN32)
#define HP_HIDDEN
#define HP_EXPORT __declspec(dllexport)
/* C99 formats (%zu): build with -D__USE_MINGW_ANSI_STDIO=1. */
#define HP_PRINTF_FORMAT gnu_printf
/* The initial-exec TLS model is an ELF notion; mingw's __thread is fine. */
#define HP_TLS_MODEL
/* Laid out as an SRWLOCK (one pointer, zero when free): no windows.h here. */
typedef struct {
	void *opaque;
} hp_mutex_t;
#define HP_MUTEX_INITIALIZER { 0 }
/* Windows has no asynchronous signals to hold off. */
typedef struct {
	uint32_t unused;
} hp_sigmask_t;
#define HP_PATH_SEPARATOR '\\'
#else
#include <pthread.h>
#include <signal.h>
#define HP_HIDDEN __attribute__((visibility("hidden")))
#define HP_EXPORT __attribute__((visibility("default")))
#define HP_TLS_MODEL __attribute__((tls_model("initial-exec")))
#define HP_PRINTF_FORMAT printf
typedef pthread_mutex_t hp_mutex_t;
#define HP_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
typedef sigset_t hp_sigmask_t;
#define HP_PATH_SEPARATOR '/'
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

/* ---- clock -------------------------------------------------------------- */

/* Set once by hp_platform_init, before any event is stored; read-only after. */
extern int hp_tick_is_tsc HP_HIDDEN;

/* The CPU's own counter, valid when hp_tick_is_tsc. No fence: the hook
 * needs a cheap timestamp, not serialisation. */
static inline uint64_t hp_cpu_tick(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return 0;
#endif
}

/* An invariant TSC ticks at one rate in every P- and C-state
 * (CPUID 80000007h:EDX[8]): the CPU's, so the same test on every OS. */
static inline int hp_tsc_is_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

/* Monotonic nanoseconds that no clock adjustment slews: CLOCK_MONOTONIC_RAW
 * on Linux, QueryPerformanceCounter in ns on Windows. The CLOCK records
 * pair ticks with it. Any thread, signal context included. */
uint64_t hp_clock_ns(void) HP_HIDDEN;

static inline uint64_t hp_tick(void)
{
	return likely(hp_tick_is_tsc) ? hp_cpu_tick() : hp_clock_ns();
}

/* Chooses the tick: the TSC when it is invariant and !force_monotonic,
 * else hp_clock_ns (sets hp_tick_is_tsc). Also any one-time set-up the
 * clock needs (Windows: the QPC frequency). */
void hp_platform_init(int force_monotonic) HP_HIDDEN;
/* Wall-clock nanoseconds since 1970 (the PROCESS record's start time). */
uint64_t hp_realtime_ns(void) HP_HIDDEN;
/* Sleeps about us microseconds (bounded waits in signal context too). */
void hp_sleep_us(unsigned us) HP_HIDDEN;

/* ---- memory ------------------------------------------------------------- */

/* Anonymous zeroed pages that never come from the program's malloc
 * (mmap; VirtualAlloc); NULL on failure. Size need not be page-rounded. */
void *hp_pages_alloc(size_t size) HP_HIDDEN;
void hp_pages_free(void *p, size_t size) HP_HIDDEN; /* p may be NULL */
/* Grows a hp_pages_alloc block, keeping its contents (it may move); NULL
 * on failure, the old block then intact. p NULL: a new block. */
void *hp_pages_grow(void *p, size_t old_size, size_t new_size) HP_HIDDEN;
/* May do nothing. A forked child finds [p, p+size) zeroed (Linux:
 * MADV_WIPEONFORK): 0 if so, or if the OS has no fork (Windows: return
 * 0); -1 if a fork would copy them. */
int hp_pages_wipe_on_fork(void *p, size_t size) HP_HIDDEN;

/* ---- threads ------------------------------------------------------------ */

/* The calling thread's id as the OS names it (gettid; GetCurrentThreadId). */
uint32_t hp_gettid(void) HP_HIDDEN;
/* Starts fn(arg) on a new detached thread named `name` (at most 15 bytes)
 * on which no signal of the program's is ever delivered, not even before
 * fn runs (Linux: created with every signal blocked). 0, or -1. */
int hp_thread_start(void (*fn)(void *arg), void *arg, const char *name) HP_HIDDEN;
/* The calling thread's name, NUL-terminated, at most len - 1 bytes
 * (PR_GET_NAME; GetThreadDescription, or "" if none). */
void hp_thread_name_self(char *name, size_t len) HP_HIDDEN;
/* The name of live thread tid of this process, as now (hookprof's end
 * for threads still running); -1 if it cannot be read (then the caller
 * keeps the name it had). */
int hp_thread_name_of(uint32_t tid, char *name, size_t len) HP_HIDDEN;

/* Per-thread exit. hp_thread_exit_init once per process (0, or -1); then
 * each thread that calls hp_thread_exit_arm gets hp_runtime_on_thread_exit()
 * called on itself when it exits, with its TLS still valid (Linux: a
 * pthread key destructor; Windows: an FLS callback or DLL_THREAD_DETACH).
 * The main thread may never get it: the final flush covers it. A forked
 * child keeps what its parent set up. */
int hp_thread_exit_init(void) HP_HIDDEN;
void hp_thread_exit_arm(void) HP_HIDDEN;

/* ---- locks -------------------------------------------------------------- */

/* A plain, non-recursive mutex (statically initialised with
 * HP_MUTEX_INITIALIZER). Lock order: docs/design.md, "Locks". */
void hp_mutex_lock(hp_mutex_t *m) HP_HIDDEN;
void hp_mutex_unlock(hp_mutex_t *m) HP_HIDDEN;
/* Takes it only if it is free: 0, else -1 at once. */
int hp_mutex_trylock(hp_mutex_t *m) HP_HIDDEN;
/* hp_mutex_lock, but in signal context (in_signal) the holder may be the
 * very code the signal interrupted: try for at most timeout_ms, then -1
 * (never blocks for ever). Not in_signal: hp_mutex_lock, 0. */
int hp_mutex_lock_bounded(hp_mutex_t *m, int in_signal, int timeout_ms) HP_HIDDEN;
/* Back to unlocked whatever its state (a forked child: the holder is gone). */
void hp_mutex_reinit(hp_mutex_t *m) HP_HIDDEN;

/* ---- wait and wake on a 32-bit word -------------------------------------- */

/* Sleeps while *word == expected, at most timeout_ms (futex; WaitOnAddress,
 * or a short sleep where that is missing). May return early (spuriously):
 * callers look again. Keeps errno. */
void hp_futex_wait(uint32_t *word, uint32_t expected, int timeout_ms) HP_HIDDEN;
/* Wakes every waiter on word (FUTEX_WAKE; WakeByAddressAll). Callable in
 * signal context. Keeps errno. */
void hp_futex_wake(uint32_t *word) HP_HIDDEN;
/* Portable, on top of the two: waits until *word is no longer `value`
 * (acquire); 0, or -1 once limit_ms have passed (limit_ms < 0: no limit). */
int hp_futex_wait_while(uint32_t *word, uint32_t value, int limit_ms) HP_HIDDEN;

/* ---- asynchronous signals ------------------------------------------------ */

/* Holds the asynchronous signals off on the calling thread while it holds
 * one of our locks, so that a fatal signal's flush never waits for it
 * (faults, SIGSEGV and the like, stay deliverable); *saved: the mask
 * before, for the release. Holds nest: inside a hold, a hold and its
 * release make no system call and leave *saved unwritten (a handler of a
 * fault that leaves a held region by siglongjmp leaves it held for good:
 * later holds on that thread then hold nothing). Windows: nothing to hold
 * (no-op). */
void hp_signals_hold(hp_sigmask_t *saved) HP_HIDDEN;
void hp_signals_release(const hp_sigmask_t *saved) HP_HIDDEN;

/* May do nothing. An alternate stack of size bytes at `stack` for the
 * fatal-signal handler of the calling thread (a stack overflow), unless
 * the program set one: 1 if installed, 0 if not (Windows: 0). */
int hp_signal_stack_use(void *stack, size_t size) HP_HIDDEN;
/* Takes it off again if it is still the thread's (at thread exit). */
void hp_signal_stack_drop(void *stack) HP_HIDDEN;
/* The calling thread runs on it now (its memory must not be unmapped). */
int hp_signal_stack_running(void *stack) HP_HIDDEN;

/* ---- fatal events and process exit --------------------------------------- */

/* What killed the process, for the CRASH record (docs/format.md). */
struct hp_fatal {
	uint32_t sig;     /* the signal number; on Windows the exception code */
	uint32_t code;    /* si_code; on Windows 0 */
	uint64_t addr;    /* the faulting address (SIGSEGV and the like), or 0 */
	const void *context; /* the interrupted context: ucontext_t *; CONTEXT * */
};

/* Installs the fatal-event hook, once the trace is set up: on a fatal
 * event the platform calls hp_runtime_on_fatal on the faulting thread,
 * then lets the event take its course (Linux: sigaction for each
 * program-terminating signal whose action is still the default, on the
 * alternate stack with every signal blocked; afterwards the default
 * action, re-raised. Windows: an unhandled-exception filter and/or
 * vectored handler for the fatal exception codes; afterwards
 * EXCEPTION_CONTINUE_SEARCH). Never replaces a handler of the program's. */
void hp_fatal_hooks_install(void) HP_HIDDEN;

/* May do nothing (Windows: no fork; return 0). Registers the fork
 * handlers (pthread_atfork) once per process: 0, or -1. */
int hp_fork_hooks_install(void (*prepare)(void), void (*parent)(void), void (*child)(void)) HP_HIDDEN;

/* May do nothing (Windows: 0). At exit of a process in which nothing was
 * traced: 1 if its parent process runs hookprof's runtime too (then the
 * parent speaks for the tree and this one keeps quiet). */
int hp_parent_has_runtime(void) HP_HIDDEN;

/* ---- stacks (Linux: hp_unwind.c, libunwind) ------------------------------- */

#define HP_ROOT_FRAMES 32
#define HP_CRASH_FRAMES 256

struct hp_frames {
	uint32_t n;
	uint32_t flags; /* enum hp_stack_flags (hp_format.h) */
	uint64_t pc[HP_ROOT_FRAMES];
};

/* One-time set-up of the unwinder, at start-up (not in a signal handler
 * nor in a thread's first event). May do nothing. */
void hp_stack_init(void) HP_HIDDEN;
/* The calling thread's stack, from the frame of `first_func` (the function
 * whose event is the thread's first) to the outermost frame; may give none
 * (n = 0). Never allocates through malloc nor takes a lock of ours. */
void hp_stack_root(struct hp_frames *s, uint64_t first_func) HP_HIDDEN;
/* In signal context: the interrupted context's frames, innermost first, at
 * most max; HP_STACK_TRUNCATED in *flags if there were more. The count
 * (0 if none can be had). */
uint32_t hp_stack_crash(const struct hp_fatal *f, uint64_t *pc, uint32_t max,
			uint32_t *flags) HP_HIDDEN;

/* ---- modules -------------------------------------------------------------- */

/* A segment of a loaded module, as MODULES records it (docs/format.md):
 * ELF PT_LOAD segments; PE sections. */
struct hp_loaded_segment {
	uint64_t start;  /* run-time address */
	uint64_t size;   /* in memory */
	uint64_t offset; /* in the file */
	uint32_t flags;  /* HP_SEGMENT_*: ELF's PF_X/PF_W/PF_R values */
};
enum { HP_SEGMENT_X = 1, HP_SEGMENT_W = 2, HP_SEGMENT_R = 4 };
#define HP_MODULE_SEGMENTS_MAX 128

/* A loaded module, as MODULES records it (docs/format.md, "MODULES" and
 * "PE modules"). Valid during the callback only. */
struct hp_loaded_module {
	uint64_t bias;         /* ELF: load bias; PE: load address - file's ImageBase */
	const char *path;      /* absolute (the executable's real path); UTF-8 */
	const uint8_t *build_id; /* ELF: NT_GNU_BUILD_ID; PE: CodeView GUID + age (20 bytes) */
	uint32_t build_id_len; /* 0: none; at most 64 */
	uint32_t nseg;         /* at most HP_MODULE_SEGMENTS_MAX */
	const struct hp_loaded_segment *seg;
	int has_file;          /* path names a file (not the vDSO's pseudo name) */
	/* A name that opens this very file now, or NULL for path: Linux's
	 * main program is /proc/self/exe, which a replaced or deleted file
	 * (path "... (deleted)") keeps readable. For reading its symbols. */
	const char *open_path;
};

/* Calls fn for each loaded module, while holding the loader's lock
 * (dl_iterate_phdr; the loader lock / LdrLockLoaderLock, or a snapshot
 * taken under it), so that a tick read in fn orders the snapshot against
 * loads and unloads: a module missing from the walk was unloaded before,
 * one loaded later runs its initialisers after. fn returns non-zero to
 * stop. fn must not load or unload modules, nor take our locks. */
void hp_modules_each(int (*fn)(const struct hp_loaded_module *m, void *arg), void *arg) HP_HIDDEN;
/* A number that changes whenever a module was loaded or unloaded since
 * (dl_iterate_phdr's adds + subs; a counter kept by a DLL notification on
 * Windows). Cheap: asked about once a second and at each flush. */
uint64_t hp_modules_generation(void) HP_HIDDEN;
/* Calls fn for each function symbol of the module file at path, at
 * bias + its address in the file (ELF: .symtab, else .dynsym; PE: the COFF
 * symbol table or the exports). 0, or -1 if the file cannot be read as
 * such (a damaged file is skipped, never a crash). May allocate (start-up
 * and dlopen only). Windows may return -1 (filters by name then match
 * nothing in that module). */
int hp_module_symbols(const char *path, uint64_t bias,
		      void (*fn)(void *arg, const char *name, uint64_t addr), void *arg) HP_HIDDEN;
/* The process's C++ demangler (__cxa_demangle), or NULL: names then stay
 * mangled. Returns a malloc'ed string. */
typedef char *(*hp_demangler_fn)(const char *name, char *buf, size_t *len, int *status);
hp_demangler_fn hp_find_demangler(void) HP_HIDDEN;

/* Regular expressions (POSIX extended) for the filters; start-up only, may
 * allocate. NULL with a reason in err if re does not compile (or the OS
 * has no regex engine: Windows may say so). */
void *hp_regex_compile(const char *re, char *err, size_t errlen) HP_HIDDEN;
int hp_regex_matches(const void *regex, const char *s) HP_HIDDEN;
void hp_regex_free(void *regex) HP_HIDDEN;

/* ---- the trace file ------------------------------------------------------- */

/* What a path names (stat, following links). */
enum hp_path_kind { HP_PATH_NONE, HP_PATH_FILE, HP_PATH_DIR, HP_PATH_CHAR, HP_PATH_FIFO, HP_PATH_OTHER };
enum hp_path_kind hp_path_kind(const char *path) HP_HIDDEN;
int hp_path_is_absolute(const char *path) HP_HIDDEN;
/* The working directory (getcwd): 0, or -1. */
int hp_cwd(char *buf, size_t len) HP_HIDDEN;

/*
 * The platform keeps the one trace file of the process open (Linux: a
 * descriptor, close-on-exec, where the program's open() does not look;
 * Windows: a HANDLE, not inheritable). All of these are called under the
 * writer's lock, or at start-up.
 */
/* Creates path exclusively (O_EXCL, never following a symlink), mode
 * 0600 (it holds the command line; Windows: default ACL), for appending,
 * and keeps it: 0; 1 if the name exists (the caller tries the next);
 * -1, errno set, on another error. */
int hp_file_create(const char *path) HP_HIDDEN;
/* Opens an existing character device or FIFO at path as it is, for
 * writing, and keeps it (a FIFO nobody reads: -1 with a reason in err
 * at once, never waits for a reader). 0, or -1 with err. Windows may
 * refuse (-1, "not supported"). */
int hp_file_open_special(const char *path, int fifo, char *err, size_t errlen) HP_HIDDEN;
/* Before each batch: the kept file, reopened by name if the program took
 * it from us (Linux: closed it, or dup2'ed onto its number); *len its
 * length now. 0, or -1 with errno set if it is gone (deleted: ENOENT; a
 * FIFO whose reader left: EPIPE). */
int hp_file_batch_begin(uint64_t *len) HP_HIDDEN;
/* Of n bytes to append at length len, how many may be written without
 * passing a file size limit (RLIMIT_FSIZE, whose SIGXFSZ would end the
 * program); n if none. */
uint64_t hp_file_room(uint64_t len, uint64_t n) HP_HIDDEN;
/* Appends p[0..n): the bytes written; fewer (errno set) if the file took
 * no more (a full disk). */
size_t hp_file_write(const uint8_t *p, size_t n) HP_HIDDEN;
/* Cuts a regular file back to len bytes (a write that stopped short). */
void hp_file_truncate(uint64_t len) HP_HIDDEN;
/* After each batch (Linux under a tiny RLIMIT_NOFILE: closes the file
 * until the next batch). */
void hp_file_batch_end(void) HP_HIDDEN;
/* Start-up failed after hp_file_create: closes and deletes the file. */
void hp_file_discard(const char *path) HP_HIDDEN;
/* A forked child forgets its parent's file (closes it if still ours). */
void hp_file_forget(void) HP_HIDDEN;

/* ---- the process ---------------------------------------------------------- */

uint32_t hp_getpid(void) HP_HIDDEN;
uint32_t hp_getppid(void) HP_HIDDEN;
/* The HOOKPROF_* settings' getenv: NULL in a program run with privileges
 * its caller has not (secure_getenv; plain on Windows). */
char *hp_getenv(const char *name) HP_HIDDEN;
/* The environment, NULL-terminated "NAME=value" strings (environ). */
char **hp_environ(void) HP_HIDDEN;
/* A set-user-ID or set-group-ID program (or one with file capabilities)
 * run by someone else: AT_SECURE. Windows: 0. */
int hp_secure_execution(void) HP_HIDDEN;
/* The program's short name, for the default trace name (no directory,
 * Windows: no ".exe" either). */
const char *hp_program_name(void) HP_HIDDEN;
/* The executable's full path (/proc/self/exe; GetModuleFileNameW in
 * UTF-8): its length, 0 if unknown; not NUL-terminated. */
size_t hp_exe_path(char *buf, size_t len) HP_HIDDEN;
/* The command line as NUL-terminated arguments one after another
 * (/proc/self/cmdline; CommandLineToArgvW, in UTF-8): the bytes, at most
 * len (cut there). */
size_t hp_command_line(char *buf, size_t len) HP_HIDDEN;

/* ---- warnings ------------------------------------------------------------- */

/* One line on stderr, "hookprof: " and the message, written whole however
 * long, with one write so the program's stdio is untouched (hp_platform.c,
 * portable; errno kept). Silent once stderr is no longer the file it was
 * at hp_stderr_note (the program closed it and reused the number). */
void hp_warn(const char *fmt, ...) HP_HIDDEN __attribute__((format(HP_PRINTF_FORMAT, 1, 2)));
/* The platform's part of hp_warn: note stderr's identity now (at load,
 * and at start-up); write a whole line if stderr is still that file and
 * the line fits under a size limit. */
void hp_stderr_note(void) HP_HIDDEN;
void hp_stderr_write(const char *line, size_t n) HP_HIDDEN;

/* ---- what the portable runtime provides to the platform ------------------- */

/* Once, when the runtime is loaded (constructor; DLL_PROCESS_ATTACH). */
void hp_runtime_on_load(void) HP_HIDDEN;
/* Once, at process exit, as late as can be (destructor priority 101 of the
 * shared library, inside _dl_fini; DLL_PROCESS_DETACH or an atexit handler
 * registered at load). Writes the end of the trace. */
void hp_runtime_on_exit(void) HP_HIDDEN;
/* The process ends and every other thread, the writer's too, is already
 * gone (Windows: ExitProcess without exit() ends them before
 * DLL_PROCESS_DETACH). Writes the end of the trace on the calling thread,
 * with bounded waits (a dead thread may hold a lock): 0; or -1, nothing
 * written, if a thread died holding the writer's lock. */
int hp_runtime_on_exit_alone(void) HP_HIDDEN;
/* A thread armed with hp_thread_exit_arm exits. */
void hp_runtime_on_thread_exit(void) HP_HIDDEN;
/* A fatal event on the calling thread (signal context): records the crash
 * and writes the end of the trace with bounded waits. Returns; the platform
 * then lets the event kill the process. */
void hp_runtime_on_fatal(const struct hp_fatal *f) HP_HIDDEN;

#endif
