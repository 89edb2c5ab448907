/*
 * hp_interpose_proc.c - the C library's process functions the shared
 * library replaces: the exec family, which must end the trace before the
 * image goes, and vfork and clone, whose children run on the caller's
 * memory (and its thread's hookprof state) until they exec or exit. Only
 * in libhookprof.so, like hp_interpose.c. The real functions are found
 * with dlsym(RTLD_NEXT) at load time: a vfork child must not call dlsym.
 *
 * clone with CLONE_VM but neither CLONE_VFORK nor CLONE_SETTLS/CLONE_THREAD
 * makes a child that runs on the calling thread's hookprof state while the
 * parent runs on too: nothing can be done safely per event, and such a
 * child must not call instrumented code (its events would land in the
 * parent's buffer; a chunk switch there is dropped).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "hp_buffer.h"
#include "hp_platform.h"
#include "hp_runtime.h"

enum { REAL_EXECVE, REAL_EXECV, REAL_EXECVP, REAL_EXECVPE, REAL_FEXECVE, REAL_VFORK, REAL_CLONE, REAL_N };

static const char *const real_names[REAL_N] = { "execve", "execv",  "execvp", "execvpe",
						"fexecve", "vfork", "clone" };
static void *real_fns[REAL_N];

static void *real(int which)
{
	void *fn = __atomic_load_n(&real_fns[which], __ATOMIC_ACQUIRE);
	if (!fn) {
		fn = dlsym(RTLD_NEXT, real_names[which]);
		__atomic_store_n(&real_fns[which], fn, __ATOMIC_RELEASE);
	}
	return fn;
}

__attribute__((constructor)) static void find_real_functions(void)
{
	for (int i = 0; i < REAL_N; i++)
		real(i);
}

/* ---- exec ---------------------------------------------------------------- */

typedef int exec_path_fn(const char *, char *const[], char *const[]);

/* The trace ends before the image goes (in a vfork child it is the
 * parent's, and goes on). A failed exec leaves it ended. */
static void *before_exec(int which)
{
	void *fn = real(which);
	hp_runtime_before_exec();
	if (!fn)
		errno = ENOSYS;
	return fn;
}

/* The exported ones call these, and so do execl, execlp and execle: not
 * through the PLT, which a vfork child should not have to resolve. */
static int exec_ve(const char *path, char *const argv[], char *const envp[])
{
	exec_path_fn *fn = before_exec(REAL_EXECVE);
	return fn ? fn(path, argv, envp) : -1;
}

static int exec_v(const char *path, char *const argv[])
{
	int (*fn)(const char *, char *const[]) = before_exec(REAL_EXECV);
	return fn ? fn(path, argv) : -1;
}

static int exec_vp(const char *file, char *const argv[])
{
	int (*fn)(const char *, char *const[]) = before_exec(REAL_EXECVP);
	return fn ? fn(file, argv) : -1;
}

HP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_ve(path, argv, envp);
}

HP_EXPORT int execv(const char *path, char *const argv[])
{
	return exec_v(path, argv);
}

HP_EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_vp(file, argv);
}

HP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	exec_path_fn *fn = before_exec(REAL_EXECVPE);
	return fn ? fn(file, argv, envp) : -1;
}

HP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	int (*fn)(int, char *const[], char *const[]) = before_exec(REAL_FEXECVE);
	return fn ? fn(fd, argv, envp) : -1;
}

/* execl, execlp, execle: the arguments up to the NULL, into an array on the
 * stack (no malloc: a vfork child may call them). */
static size_t count_args(const char *arg, va_list ap)
{
	size_t n = 1;
	while (arg && va_arg(ap, const char *))
		n++;
	return arg ? n : 0;
}

#define COLLECT_ARGS(argv, arg, ap)                                   \
	do {                                                          \
		argv[0] = (char *)arg;                                \
		for (size_t i_ = 1; argv[i_ - 1]; i_++)              \
			argv[i_] = va_arg(ap, char *);                \
	} while (0)

HP_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	COLLECT_ARGS(argv, arg, ap);
	va_end(ap);
	return exec_v(path, argv);
}

HP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	COLLECT_ARGS(argv, arg, ap);
	va_end(ap);
	return exec_vp(file, argv);
}

HP_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	COLLECT_ARGS(argv, arg, ap);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return exec_ve(path, argv, envp);
}

/* ---- children on the caller's memory ------------------------------------- */

/* The calling thread's hookprof state while its vfork child runs on it. */
static __thread struct hp_tls lent_tls __attribute__((tls_model("initial-exec")));
/* vfork's return address: the child returns first and reuses the stack
 * slot it was in, so it is kept here (the child only reads it). */
static __thread void *vfork_return __attribute__((tls_model("initial-exec")));

struct vfork_result {
	long pid;
	void *return_to; /* in rdx: vfork jumps back there */
};

/* Before the real vfork: returns it, or NULL for the raw system call. */
__attribute__((used)) static void *vfork_before(void *return_to)
{
	vfork_return = return_to;
	hp_buffer_suspend_self(&lent_tls);
	return real(REAL_VFORK);
}

/* After it, in the child (pid 0: stays untraced, touches nothing) and in
 * the parent once the child has exec'd or exited. */
__attribute__((used)) static struct vfork_result vfork_after(long pid)
{
	if (pid != 0) {
		if (pid < 0 && pid > -4096 && !real(REAL_VFORK)) {
			errno = (int)-pid; /* the raw system call's error */
			pid = -1;
		}
		hp_buffer_resume_self(&lent_tls);
	}
	return (struct vfork_result){ pid, vfork_return };
}

#if defined(__x86_64__)
/*
 * vfork, interposed. It cannot be C: the child returns from it first and
 * runs on, on the same stack, over the slot that held our return address,
 * and the parent later returns from it too. So the return address leaves
 * the stack before the real vfork (which does the same with its own) and
 * comes back from thread-local storage after.
 */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	popq %rdi\n"            /* our return address; the stack is 16-aligned now */
	"	call vfork_before\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	call *%rax\n"           /* the C library's vfork */
	"	jmp 2f\n"
	"1:	movl $58, %eax\n"       /* SYS_vfork */
	"	syscall\n"
	"2:	movq %rax, %rdi\n"
	"	call vfork_after\n"     /* pid in rax, return address in rdx */
	"	pushq %rdx\n"
	"	ret\n"
	".size vfork, .-vfork\n");
#endif

/*
 * clone, interposed: a CLONE_VM | CLONE_VFORK child without its own TLS
 * runs on the calling thread's hookprof state while the caller waits, so
 * the state is set aside for it (like vfork). Its function runs on its own
 * stack and never returns here.
 */
HP_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	/* Read whether passed or not (the C library does the same): which of
	 * them count depends on flags. */
	pid_t *parent_tid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *child_tid = va_arg(ap, pid_t *);
	va_end(ap);
	int (*next)(int (*)(void *), void *, int, void *, ...) = real(REAL_CLONE);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	int lends = (flags & CLONE_VM) && (flags & CLONE_VFORK) && !(flags & (CLONE_SETTLS | CLONE_THREAD));
	struct hp_tls saved;
	if (lends)
		hp_buffer_suspend_self(&saved);
	int rc = next(fn, stack, flags, arg, parent_tid, tls, child_tid);
	if (lends)
		hp_buffer_resume_self(&saved); /* leaves errno alone */
	return rc;
}
