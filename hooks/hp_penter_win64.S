/*
 * hp_penter_win64.S - _penter and _pexit, the hooks MSVC's /Gh and /GH
 * call on Windows x64 (hp_win_hooks.h says what they pass on).
 *
 * MSVC's contract: no arguments, and every register the caller can see
 * kept: the general-purpose registers, the flags, and XMM0-XMM5, where
 * floating-point arguments and results travel. A C function may change
 * RAX, RCX, RDX, R8-R11, XMM0-XMM5 and the flags (the Windows x64 ABI's
 * volatile set), so these are saved around the call; the others the C
 * function keeps itself. The C code is built without AVX, so the upper
 * halves of the YMM registers survive it.
 *
 * The flags go through LAHF/SETO and come back through ADD/SAHF: PUSHFQ
 * and POPFQ would do the same at several times the cost. DF is clear at
 * any call by the ABI, and stays so.
 *
 * The stack on entry is aligned as the hooked function's caller left it
 * plus one return address; the hooks do not rely on it and align their
 * own frame. Unwind data (.seh_*) lets an exception or a debugger walk
 * through a hook: RBP holds the frame.
 *
 * Frame after the prologue (RBP = RSP):
 *   RBP+72  the hooked function's return address (its stack pointer at
 *           entry, and at its `ret`, is RBP+72)
 *   RBP+64  our return address, into the hooked function
 *   RBP+0   RBP, R11, R10, R9, R8, RDX, RCX, RAX (RAX at RBP+56)
 * Below, aligned to 16: the flags, XMM0-XMM5, the callee's 32-byte home area.
 */
	.text

#define SAVED_GP 64            /* eight pushes */
#define OUR_RET SAVED_GP       /* offset of our return address from RBP */
#define HOOKED_SP (SAVED_GP + 8)
#define CALL_LEN 5             /* `call rel32`: _penter's call is the function's first instruction */
#define XMM_AT 32              /* after the home area */
#define FLAGS_AT (XMM_AT + 6 * 16)
#define FRAME (FLAGS_AT + 16)

/* The hook's symbol, and its prologue. */
.macro begin_hook name
	.globl \name
	.def \name; .scl 2; .type 32; .endef
	.p2align 4
\name:
	.seh_proc \name
	pushq %rax
	.seh_pushreg %rax
	pushq %rcx
	.seh_pushreg %rcx
	pushq %rdx
	.seh_pushreg %rdx
	pushq %r8
	.seh_pushreg %r8
	pushq %r9
	.seh_pushreg %r9
	pushq %r10
	.seh_pushreg %r10
	pushq %r11
	.seh_pushreg %r11
	pushq %rbp
	.seh_pushreg %rbp
	movq %rsp, %rbp
	.seh_setframe %rbp, 0
	.seh_endprologue
	/* Nothing above changed the flags: read them before AND and SUB do. */
	lahf
	seto %al
	andq $-16, %rsp
	subq $FRAME, %rsp
	movq %rax, FLAGS_AT(%rsp)
	movaps %xmm0, XMM_AT+0(%rsp)
	movaps %xmm1, XMM_AT+16(%rsp)
	movaps %xmm2, XMM_AT+32(%rsp)
	movaps %xmm3, XMM_AT+48(%rsp)
	movaps %xmm4, XMM_AT+64(%rsp)
	movaps %xmm5, XMM_AT+80(%rsp)
.endm

.macro end_hook
	movaps XMM_AT+0(%rsp), %xmm0
	movaps XMM_AT+16(%rsp), %xmm1
	movaps XMM_AT+32(%rsp), %xmm2
	movaps XMM_AT+48(%rsp), %xmm3
	movaps XMM_AT+64(%rsp), %xmm4
	movaps XMM_AT+80(%rsp), %xmm5
	movq FLAGS_AT(%rsp), %rax
	/* AL is 1 if OF was set: 0x7f + 1 overflows, 0x7f + 0 does not. SAHF
	 * then puts back SF, ZF, AF, PF and CF, and leaves OF as ADD set it. */
	addb $0x7f, %al
	sahf
	/* From here on nothing may change the flags: MOV and POP do not. */
	movq %rbp, %rsp
	popq %rbp
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rdx
	popq %rcx
	popq %rax
	ret
	.seh_endproc
.endm

	begin_hook _penter
	movq OUR_RET(%rbp), %rcx
	subq $CALL_LEN, %rcx
	leaq HOOKED_SP(%rbp), %r8
	movq (%r8), %rdx
	call hp_win_enter
	end_hook

	begin_hook _pexit
	leaq HOOKED_SP(%rbp), %rdx
	movq (%rdx), %rcx
	call hp_win_exit
	end_hook

	/* Exported when linked into a DLL (hookprof.dll, the tests' clobber.dll),
	 * whose other exports are marked dllexport. */
	.section .drectve, "yn"
	.ascii " -export:_penter -export:_pexit"
