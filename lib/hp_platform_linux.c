/*
 * hp_platform_linux.c - the Linux (glibc, x86-64) implementation of
 * hp_platform.h. The stack captures are hp_unwind.c's (libunwind).
 */
#define _GNU_SOURCE
#include "hp_platform.h"
#include "hp_linux.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int hp_tick_is_tsc;

/* ---- clock -------------------------------------------------------------- */

void hp_platform_init(int force_monotonic)
{
	hp_tick_is_tsc = !force_monotonic && hp_tsc_is_invariant();
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t hp_clock_ns(void) { return clock_ns(CLOCK_MONOTONIC_RAW); }
uint64_t hp_realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }

void hp_sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
	int saved = errno;
	nanosleep(&ts, NULL);
	errno = saved;
}

/* ---- memory ------------------------------------------------------------- */

void *hp_pages_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void hp_pages_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

void *hp_pages_grow(void *p, size_t old_size, size_t new_size)
{
	if (!p)
		return hp_pages_alloc(new_size);
	void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
	return q == MAP_FAILED ? NULL : q;
}

int hp_pages_wipe_on_fork(void *p, size_t size)
{
	int saved = errno;
	int rc = madvise(p, size, MADV_WIPEONFORK) ? -1 : 0;
	errno = saved;
	return rc;
}

/* ---- threads ------------------------------------------------------------ */

uint32_t hp_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

struct thread_start {
	void (*fn)(void *);
	void *arg;
	char name[16];
};

static void *thread_main(void *p)
{
	struct thread_start s = *(struct thread_start *)p;
	hp_pages_free(p, sizeof(s));
	prctl(PR_SET_NAME, s.name);
	s.fn(s.arg);
	return NULL;
}

int hp_thread_start(void (*fn)(void *arg), void *arg, const char *name)
{
	struct thread_start *s = hp_pages_alloc(sizeof(*s));
	if (!s)
		return -1;
	*s = (struct thread_start){ .fn = fn, .arg = arg };
	snprintf(s->name, sizeof(s->name), "%s", name);
	pthread_t th;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Born with every signal blocked: the program's signals and handlers
	 * must never run on our thread, not even before it starts. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&th, &attr, thread_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		hp_pages_free(s, sizeof(*s));
		return -1;
	}
	return 0;
}

void hp_thread_name_self(char *name, size_t len)
{
	char comm[16] = "";
	prctl(PR_GET_NAME, comm);
	snprintf(name, len, "%s", comm);
}

int hp_thread_name_of(uint32_t tid, char *name, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, name, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	name[n] = 0;
	name[strcspn(name, "\n")] = 0;
	return 0;
}

static pthread_key_t exit_key;
static int exit_key_made;

/*
 * The runtime's side (hp_runtime.c) is referenced weakly: its object is
 * linked only where something of it is used (the unit tests link this file
 * without it), and a program that uses nothing of it has no trace to end.
 */
#pragma weak hp_runtime_on_load
#pragma weak hp_runtime_on_exit
#pragma weak hp_runtime_on_thread_exit
#pragma weak hp_runtime_on_fatal

static void thread_exit(void *arg)
{
	(void)arg;
	if (hp_runtime_on_thread_exit)
		hp_runtime_on_thread_exit();
}

int hp_thread_exit_init(void)
{
	/* Once: a forked child starts the runtime again, with the key it inherited. */
	if (!exit_key_made)
		exit_key_made = pthread_key_create(&exit_key, thread_exit) == 0;
	return exit_key_made ? 0 : -1;
}

void hp_thread_exit_arm(void)
{
	/* Any non-NULL value: the destructor runs only for those. */
	if (exit_key_made)
		pthread_setspecific(exit_key, &exit_key);
}

/* ---- locks -------------------------------------------------------------- */

void hp_mutex_lock(hp_mutex_t *m) { pthread_mutex_lock(m); }
void hp_mutex_unlock(hp_mutex_t *m) { pthread_mutex_unlock(m); }
int hp_mutex_trylock(hp_mutex_t *m) { return pthread_mutex_trylock(m) ? -1 : 0; }
void hp_mutex_reinit(hp_mutex_t *m) { pthread_mutex_init(m, NULL); }

int hp_mutex_lock_bounded(hp_mutex_t *m, int in_signal, int timeout_ms)
{
	if (!in_signal)
		return pthread_mutex_lock(m);
	for (int i = 0; i < timeout_ms; i++) {
		if (!hp_mutex_trylock(m))
			return 0;
		hp_sleep_us(1000);
	}
	return -1;
}

/* ---- wait and wake ------------------------------------------------------ */

void hp_futex_wait(uint32_t *word, uint32_t expected, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
	errno = saved;
}

void hp_futex_wake(uint32_t *word)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
	errno = saved;
}

/* ---- signals ------------------------------------------------------------ */

/*
 * How deep this thread is in held regions: an inner hold (the owner of a
 * full ring helping the writer from the slow path, which holds them
 * already) costs no system call. Raised only once the mask is set and
 * lowered before it is restored, so that a signal handler running in
 * between (a fault: asynchronous signals are held) finds 0 and holds for
 * itself.
 */
static __thread unsigned held_depth HP_TLS_MODEL;

/* Signals our own code would raise (a fault) are left alone. */
void hp_signals_hold(hp_sigmask_t *saved)
{
	static const int synchronous[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	if (held_depth) {
		held_depth++;
		return;
	}
	sigset_t mask;
	sigfillset(&mask);
	for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++)
		sigdelset(&mask, synchronous[i]);
	pthread_sigmask(SIG_BLOCK, &mask, saved);
	/* Compiler barriers: the one other party is a handler on this thread. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	held_depth = 1;
}

void hp_signals_release(const hp_sigmask_t *saved)
{
	if (--held_depth)
		return;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

int hp_signal_stack_use(void *stack, size_t size)
{
	stack_t cur, ss = { .ss_sp = stack, .ss_size = size };
	return sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE) && sigaltstack(&ss, NULL) == 0;
}

void hp_signal_stack_drop(void *stack)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	if (stack && sigaltstack(NULL, &cur) == 0 && cur.ss_sp == stack)
		sigaltstack(&off, NULL);
}

int hp_signal_stack_running(void *stack)
{
	stack_t cur;
	return stack && sigaltstack(NULL, &cur) == 0 && cur.ss_sp == stack && (cur.ss_flags & SS_ONSTACK);
}

/* ---- fatal signals, fork, exit ------------------------------------------ */

/* Program-terminating signals whose default action would lose the trace. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,    SIGABRT, SIGTRAP,
				     SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,   SIGPIPE, SIGALRM,
				     SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,   SIGSYS,  SIGVTALRM,
				     SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT };

static int has_fault_address(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *ucontext)
{
	int saved = errno;
	struct hp_fatal f = {
		.sig = (uint32_t)sig,
		.code = info ? (uint32_t)info->si_code : 0,
		.addr = info && has_fault_address(sig) ? (uint64_t)(uintptr_t)info->si_addr : 0,
		.context = ucontext,
	};
	if (hp_runtime_on_fatal)
		hp_runtime_on_fatal(&f);
	/* Back to the default action: the signal, blocked while we run, is
	 * delivered again when we return and ends the process as it would have. */
	signal(sig, SIG_DFL);
	raise(sig);
	errno = saved;
}

/* Only where the program left the default: its own handlers stay its own. */
void hp_fatal_hooks_install(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(fatal_signals[i], NULL, &old) || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal_signal;
		sa.sa_flags = SA_ONSTACK | SA_SIGINFO; /* the context, for the backtrace */
		sigfillset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

int hp_fork_hooks_install(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	static int registered;
	if (!registered)
		registered = pthread_atfork(prepare, parent, child) == 0;
	return registered ? 0 : -1;
}

/* 1 if the parent process has a libhookprof.so mapped: a process of a
 * traced tree (a /bin/true a traced program execs with LD_PRELOAD set),
 * whose root speaks for the tree. */
int hp_parent_has_runtime(void)
{
	static const char name[] = "/libhookprof.so";
	char buf[8192];
	size_t keep = 0, len = sizeof(name) - 1;
	int found = 0;
	snprintf(buf, sizeof(buf), "/proc/%d/maps", (int)getppid());
	int fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got;
	while (!found && (got = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
		size_t n = keep + (size_t)got;
		found = memmem(buf, n, name, len) != NULL;
		/* A name split between two reads is found in the next. */
		keep = n < len ? n : len - 1;
		memmove(buf, buf + n - keep, keep);
	}
	close(fd);
	return found;
}

__attribute__((constructor(101))) static void loaded(void)
{
	int saved = errno;
	if (hp_runtime_on_load)
		hp_runtime_on_load();
	errno = saved;
}

/* Priority 101: the last of this object's destructors to run (for the
 * shared library, inside _dl_fini, after the program's atexit handlers
 * and destructors). */
__attribute__((destructor(101))) static void unloading(void)
{
	if (hp_runtime_on_exit)
		hp_runtime_on_exit();
}

/* ---- modules ------------------------------------------------------------ */

#define BUILD_ID_MAX 64

static size_t note_align(size_t n) { return (n + 3) & ~(size_t)3; }

/* The NT_GNU_BUILD_ID note in a PT_NOTE segment, or 0 bytes. */
static size_t find_build_id(const ElfW(Phdr) *ph, ElfW(Addr) bias, const uint8_t **id)
{
	const uint8_t *p = (const uint8_t *)(bias + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const uint8_t *name = p + sizeof(*nh);
		const uint8_t *desc = name + note_align(nh->n_namesz);
		if (desc + nh->n_descsz > end)
			break;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
			*id = desc;
			return nh->n_descsz < BUILD_ID_MAX ? nh->n_descsz : BUILD_ID_MAX;
		}
		p = desc + note_align(nh->n_descsz);
	}
	return 0;
}

struct each_module {
	int (*fn)(const struct hp_loaded_module *m, void *arg);
	void *arg;
};

static int each_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct each_module *e = arg;
	struct hp_loaded_segment seg[HP_MODULE_SEGMENTS_MAX];
	char exe[4096];
	struct hp_loaded_module m = { .bias = info->dlpi_addr, .seg = seg };
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && m.nseg < HP_MODULE_SEGMENTS_MAX)
			seg[m.nseg++] = (struct hp_loaded_segment){ info->dlpi_addr + ph->p_vaddr, ph->p_memsz,
							     ph->p_offset, ph->p_flags };
		else if (ph->p_type == PT_NOTE && !m.build_id_len)
			m.build_id_len = (uint32_t)find_build_id(ph, info->dlpi_addr, &m.build_id);
	}
	/* The main program's dlpi_name is empty: its path is /proc/self/exe. */
	m.path = info->dlpi_name;
	if (!m.path || !*m.path) {
		size_t n = hp_exe_path(exe, sizeof(exe) - 1);
		exe[n] = 0;
		m.path = exe;
		m.open_path = "/proc/self/exe";
		m.has_file = 1;
	} else {
		/* The vDSO's name is no path. */
		m.has_file = strchr(m.path, '/') != NULL;
	}
	return e->fn(&m, e->arg);
}

void hp_modules_each(int (*fn)(const struct hp_loaded_module *m, void *arg), void *arg)
{
	struct each_module e = { fn, arg };
	dl_iterate_phdr(each_module, &e);
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_adds + info->dlpi_subs;
	return 1; /* the counters are global: one object is enough */
}

uint64_t hp_modules_generation(void)
{
	uint64_t n = 0;
	dl_iterate_phdr(read_counters, &n);
	return n;
}

/* [off, off + n * size) lies inside the file. */
static int within(size_t filesize, uint64_t off, uint64_t n, uint64_t size)
{
	return off <= filesize && (size == 0 || n <= (filesize - off) / size);
}

static const Elf64_Shdr *section_of_type(const uint8_t *p, const Elf64_Ehdr *eh, uint32_t type)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == type)
			return &sh[i];
	return NULL;
}

static int is_function(const Elf64_Sym *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value;
}

static int read_elf(const uint8_t *p, size_t size, uint64_t bias,
		    void (*fn)(void *, const char *, uint64_t), void *arg)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !within(size, eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr)))
		return -1;
	const Elf64_Shdr *sym = section_of_type(p, eh, SHT_SYMTAB);
	if (!sym)
		sym = section_of_type(p, eh, SHT_DYNSYM);
	if (!sym)
		return 0; /* no symbols: nothing to match */
	const Elf64_Shdr *str = sym->sh_link < eh->e_shnum ? (const Elf64_Shdr *)(p + eh->e_shoff) + sym->sh_link : NULL;
	if (!str || sym->sh_entsize != sizeof(Elf64_Sym) ||
	    !within(size, sym->sh_offset, sym->sh_size / sizeof(Elf64_Sym), sizeof(Elf64_Sym)) ||
	    !within(size, str->sh_offset, str->sh_size, 1))
		return -1;
	const Elf64_Sym *syms = (const Elf64_Sym *)(p + sym->sh_offset);
	const char *names = (const char *)p + str->sh_offset;
	for (uint64_t i = 0; i < sym->sh_size / sizeof(Elf64_Sym); i++) {
		const Elf64_Sym *s = &syms[i];
		if (!is_function(s) || s->st_name >= str->sh_size ||
		    !memchr(names + s->st_name, 0, str->sh_size - s->st_name))
			continue;
		fn(arg, names + s->st_name, bias + s->st_value);
	}
	return 0;
}

int hp_module_symbols(const char *path, uint64_t bias,
		      void (*fn)(void *arg, const char *name, uint64_t addr), void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	int rc = read_elf(p, (size_t)st.st_size, bias, fn, arg);
	munmap(p, (size_t)st.st_size);
	return rc;
}

/* Found, never linked: a C program has none, and names stay mangled. */
hp_demangler_fn hp_find_demangler(void)
{
	return (hp_demangler_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
}

void *hp_regex_compile(const char *re, char *err, size_t errlen)
{
	regex_t *r = malloc(sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int e = regcomp(r, re, REG_EXTENDED | REG_NOSUB);
	if (e) {
		regerror(e, r, err, errlen);
		free(r);
		return NULL;
	}
	return r;
}

int hp_regex_matches(const void *regex, const char *s)
{
	return !regexec(regex, s, 0, NULL, 0);
}

void hp_regex_free(void *regex)
{
	if (regex)
		regfree(regex);
	free(regex);
}

/* ---- the process -------------------------------------------------------- */

uint32_t hp_getpid(void) { return (uint32_t)getpid(); }
uint32_t hp_getppid(void) { return (uint32_t)getppid(); }
char *hp_getenv(const char *name) { return secure_getenv(name); }
char **hp_environ(void) { return environ; }
const char *hp_program_name(void) { return program_invocation_short_name; }

int hp_secure_execution(void)
{
	return getauxval(AT_SECURE) != 0;
}

size_t hp_exe_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len);
	return n > 0 ? (size_t)n : 0;
}

size_t hp_command_line(char *buf, size_t len)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t r;
	while (n < len && (r = read(fd, buf + n, len - n)) > 0)
		n += (size_t)r;
	close(fd);
	return n;
}

/* ---- stderr ------------------------------------------------------------- */

/* What fd 2 was at start-up: a program that closes it and opens a file of
 * its own there must not find our warnings in that file. */
static int stderr_known;
static dev_t stderr_dev;
static ino_t stderr_ino;

void hp_stderr_note(void)
{
	struct stat st;
	int saved = errno;
	/* Closed at start: nowhere to warn, whatever takes the number later. */
	stderr_known = fstat(STDERR_FILENO, &st) == 0 ? 1 : -1;
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	errno = saved;
}

static int stderr_is_ours(void)
{
	struct stat st;
	if (!stderr_known)
		return 1; /* no start-up yet (the unit tests): fd 2 is stderr */
	return stderr_known > 0 && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_dev &&
	       st.st_ino == stderr_ino;
}

/* A line that would take a file on fd 2 past RLIMIT_FSIZE would raise
 * SIGXFSZ in the program: it is not written. */
static int fits_on_stderr(size_t n)
{
	struct stat st;
	struct rlimit rl;
	if (fstat(STDERR_FILENO, &st) || !S_ISREG(st.st_mode) || getrlimit(RLIMIT_FSIZE, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return 1;
	return (rlim_t)st.st_size + n <= rl.rlim_cur;
}

void hp_stderr_write(const char *line, size_t n)
{
	int saved = errno;
	if (stderr_is_ours() && fits_on_stderr(n)) {
		ssize_t ignored = write(STDERR_FILENO, line, n);
		(void)ignored;
	}
	errno = saved;
}

/* ---- the trace file ----------------------------------------------------- */

enum hp_path_kind hp_path_kind(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return HP_PATH_NONE;
	if (S_ISREG(st.st_mode))
		return HP_PATH_FILE;
	if (S_ISDIR(st.st_mode))
		return HP_PATH_DIR;
	if (S_ISCHR(st.st_mode))
		return HP_PATH_CHAR;
	if (S_ISFIFO(st.st_mode))
		return HP_PATH_FIFO;
	return HP_PATH_OTHER;
}

int hp_path_is_absolute(const char *path) { return path[0] == '/'; }

int hp_cwd(char *buf, size_t len)
{
	return getcwd(buf, len) ? 0 : -1;
}

static int out_fd = -1; /* also read by the close() interposers */
static dev_t out_dev;
static ino_t out_ino;
static int out_regular; /* a file we created (else a device or a FIFO) */
static int out_fifo;
static int per_batch;   /* no descriptor kept: opened for each batch */
static char out_path[4096];

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
 * is, for the batch at hand only (per_batch; hp_file_batch_end closes it). */
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

int hp_file_keeps(int fd)
{
	struct stat st;
	return fd >= 0 && fd == __atomic_load_n(&out_fd, __ATOMIC_RELAXED) && is_trace_file(fd, &st);
}

int hp_file_kept_fd(void)
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
	int fd = open(out_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
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

/* A FIFO whose reader is gone: writing would raise SIGPIPE. */
static int reader_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	return out_fifo && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

int hp_file_batch_begin(uint64_t *len)
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
	*len = (uint64_t)st.st_size;
	if (!st.st_nlink && out_regular)
		return errno = ENOENT, -1;
	if (reader_gone(fd))
		return errno = EPIPE, -1;
	return 0;
}

uint64_t hp_file_room(uint64_t len, uint64_t n)
{
	struct rlimit rl;
	if (!out_regular || getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return n;
	if ((rlim_t)len >= rl.rlim_cur)
		return 0;
	rlim_t room = rl.rlim_cur - (rlim_t)len;
	return room >= n ? n : (uint64_t)room;
}

size_t hp_file_write(const uint8_t *p, size_t n)
{
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
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

void hp_file_truncate(uint64_t len)
{
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
	if (out_regular)
		while (ftruncate(fd, (off_t)len) < 0 && errno == EINTR)
			;
}

void hp_file_batch_end(void)
{
	int fd = __atomic_load_n(&out_fd, __ATOMIC_RELAXED);
	if (per_batch && fd >= 0) {
		__atomic_store_n(&out_fd, -1, __ATOMIC_RELAXED);
		close(fd);
	}
}

int hp_file_create(const char *path)
{
	/* 0600: the trace holds the command line. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 1 : -1;
	snprintf(out_path, sizeof(out_path), "%s", path);
	out_regular = 1;
	out_fifo = 0;
	note_identity(fd);
	keep_descriptor(fd);
	hp_file_batch_end();
	return 0;
}

int hp_file_open_special(const char *path, int fifo, char *err, size_t errlen)
{
	struct stat st;
	snprintf(out_path, sizeof(out_path), "%s", path);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (fifo && errno == ENXIO)
			snprintf(err, errlen, "nothing reads the FIFO '%s'", path);
		else
			snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || (fifo ? !S_ISFIFO(st.st_mode) : !S_ISCHR(st.st_mode))) {
		close(fd);
		snprintf(err, errlen, "'%s' changed while it was opened", path);
		return -1;
	}
	fcntl(fd, F_SETFL, O_WRONLY); /* blocking again: a slow reader holds the writer back */
	out_regular = 0;
	out_fifo = fifo;
	note_identity(fd);
	keep_descriptor(fd);
	if (per_batch && fifo) {
		/* Reopened per batch, the reader would see the end of the file. */
		hp_file_batch_end();
		snprintf(err, errlen, "no descriptor to keep the FIFO '%s' open under RLIMIT_NOFILE", path);
		return -1;
	}
	hp_file_batch_end();
	return 0;
}

void hp_file_discard(const char *path)
{
	int fd = out_fd;
	out_fd = -1; /* first: the interposed close() keeps the trace's own */
	if (fd >= 0)
		close(fd);
	if (out_regular)
		unlink(path);
}

void hp_file_forget(void)
{
	struct stat st;
	/* The parent's trace: ours to close only if the number is still ours. */
	if (out_fd >= 0 && is_trace_file(out_fd, &st))
		close(out_fd);
	out_fd = -1;
	out_path[0] = 0;
}
