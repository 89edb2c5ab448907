/*
 * penter_probe_asm.S - functions hooked the way MSVC's /Gh /GH hooks them:
 * `call _penter` as the first instruction, before the prologue, and
 * `call _pexit` after the epilogue, right before `ret`. No compiler here
 * emits that, so they are written by hand; penter_probe.c calls them and
 * checks that every argument, result and register survives the hooks.
 */
	.text

/* int64_t probe_sum5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e):
 * four arguments in registers, the fifth on the stack, the result in RAX. */
	.globl probe_sum5
	.def probe_sum5; .scl 2; .type 32; .endef
probe_sum5:
	call _penter
	subq $40, %rsp
	leaq (%rcx,%rdx), %rax
	addq %r8, %rax
	addq %r9, %rax
	addq 80(%rsp), %rax
	addq $40, %rsp
	call _pexit
	ret

/* double probe_mix(double a, float b, double c, float d): a*b + c*d, the
 * arguments in XMM0-XMM3, the result in XMM0. */
	.globl probe_mix
	.def probe_mix; .scl 2; .type 32; .endef
probe_mix:
	call _penter
	subq $40, %rsp
	cvtss2sd %xmm1, %xmm1
	mulsd %xmm1, %xmm0
	cvtss2sd %xmm3, %xmm3
	mulsd %xmm3, %xmm2
	addsd %xmm2, %xmm0
	addq $40, %rsp
	call _pexit
	ret

/* float probe_half(float a, float b, float c, float d, float e, float f):
 * (a+b+c+d)/2 - e + f, e and f on the stack; the result a float in XMM0. */
	.globl probe_half
	.def probe_half; .scl 2; .type 32; .endef
probe_half:
	call _penter
	subq $40, %rsp
	addss %xmm1, %xmm0
	addss %xmm2, %xmm0
	addss %xmm3, %xmm0
	mulss half(%rip), %xmm0
	subss 80(%rsp), %xmm0
	addss 88(%rsp), %xmm0
	addq $40, %rsp
	call _pexit
	ret

/* double probe_vsum(int64_t n, ...): the sum of n doubles. A variadic
 * callee spills RCX, RDX, R8 and R9 to its home area (the caller put the
 * doubles among them in both the integer and the XMM registers) and reads
 * every argument from memory. */
	.globl probe_vsum
	.def probe_vsum; .scl 2; .type 32; .endef
probe_vsum:
	call _penter
	movq %rcx, 8(%rsp)
	movq %rdx, 16(%rsp)
	movq %r8, 24(%rsp)
	movq %r9, 32(%rsp)
	subq $40, %rsp
	xorpd %xmm0, %xmm0
	leaq 56(%rsp), %rax
	movq 48(%rsp), %rcx
1:	testq %rcx, %rcx
	jz 2f
	addsd (%rax), %xmm0
	addq $8, %rax
	decq %rcx
	jmp 1b
2:	addq $40, %rsp
	call _pexit
	ret

/* A function whose _pexit never comes, as when a longjmp or an exception
 * leaves it: probe_skip's own exit ends its frame too. */
	.globl probe_noexit
	.def probe_noexit; .scl 2; .type 32; .endef
probe_noexit:
	call _penter
	movq $7, %rax
	ret

/* int64_t probe_skip(void): 7 + 1. */
	.globl probe_skip
	.def probe_skip; .scl 2; .type 32; .endef
probe_skip:
	call _penter
	subq $40, %rsp
	call probe_noexit
	incq %rax
	addq $40, %rsp
	call _pexit
	ret

/* An empty hooked function: the only code its hooks' registers meet. */
	.globl probe_inner
	.def probe_inner; .scl 2; .type 32; .endef
probe_inner:
	call _penter
	call _pexit
	ret

/* The same without hooks, for the cost of a hook pair. */
	.globl probe_plain
	.def probe_plain; .scl 2; .type 32; .endef
probe_plain:
	ret

/*
 * void probe_torture(void): loads every general-purpose register but RSP,
 * the flags and XMM0-XMM15 from probe_in, calls probe_inner, and stores
 * them all, RSP too, in probe_out. RIP-relative addressing leaves every
 * register free for test values. Layout of both (struct probe_regs):
 * 16 GP registers in the order RAX RCX RDX RBX RSP RBP RSI RDI R8-R15,
 * then the flags, then 16 XMM registers of 16 bytes.
 */
#define GP(i) (8 * (i))
#define FLAGS 128
#define XMM(i) (144 + 16 * (i))

.macro xmm_all op, area
	\op \area+XMM(0)(%rip), %xmm0
	\op \area+XMM(1)(%rip), %xmm1
	\op \area+XMM(2)(%rip), %xmm2
	\op \area+XMM(3)(%rip), %xmm3
	\op \area+XMM(4)(%rip), %xmm4
	\op \area+XMM(5)(%rip), %xmm5
	\op \area+XMM(6)(%rip), %xmm6
	\op \area+XMM(7)(%rip), %xmm7
	\op \area+XMM(8)(%rip), %xmm8
	\op \area+XMM(9)(%rip), %xmm9
	\op \area+XMM(10)(%rip), %xmm10
	\op \area+XMM(11)(%rip), %xmm11
	\op \area+XMM(12)(%rip), %xmm12
	\op \area+XMM(13)(%rip), %xmm13
	\op \area+XMM(14)(%rip), %xmm14
	\op \area+XMM(15)(%rip), %xmm15
.endm

.macro xmm_store area
	movdqu %xmm0, \area+XMM(0)(%rip)
	movdqu %xmm1, \area+XMM(1)(%rip)
	movdqu %xmm2, \area+XMM(2)(%rip)
	movdqu %xmm3, \area+XMM(3)(%rip)
	movdqu %xmm4, \area+XMM(4)(%rip)
	movdqu %xmm5, \area+XMM(5)(%rip)
	movdqu %xmm6, \area+XMM(6)(%rip)
	movdqu %xmm7, \area+XMM(7)(%rip)
	movdqu %xmm8, \area+XMM(8)(%rip)
	movdqu %xmm9, \area+XMM(9)(%rip)
	movdqu %xmm10, \area+XMM(10)(%rip)
	movdqu %xmm11, \area+XMM(11)(%rip)
	movdqu %xmm12, \area+XMM(12)(%rip)
	movdqu %xmm13, \area+XMM(13)(%rip)
	movdqu %xmm14, \area+XMM(14)(%rip)
	movdqu %xmm15, \area+XMM(15)(%rip)
.endm

	.globl probe_torture
	.def probe_torture; .scl 2; .type 32; .endef
probe_torture:
	/* The callee-saved registers of the Windows x64 ABI, XMM6-15 too. */
	pushq %rbx
	pushq %rbp
	pushq %rsi
	pushq %rdi
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $168, %rsp
	movdqu %xmm6, 0(%rsp)
	movdqu %xmm7, 16(%rsp)
	movdqu %xmm8, 32(%rsp)
	movdqu %xmm9, 48(%rsp)
	movdqu %xmm10, 64(%rsp)
	movdqu %xmm11, 80(%rsp)
	movdqu %xmm12, 96(%rsp)
	movdqu %xmm13, 112(%rsp)
	movdqu %xmm14, 128(%rsp)
	movdqu %xmm15, 144(%rsp)
	movq %rsp, probe_sp_before(%rip)
	xmm_all movdqu, probe_in
	movq probe_in+GP(0)(%rip), %rax
	movq probe_in+GP(1)(%rip), %rcx
	movq probe_in+GP(2)(%rip), %rdx
	movq probe_in+GP(3)(%rip), %rbx
	movq probe_in+GP(5)(%rip), %rbp
	movq probe_in+GP(6)(%rip), %rsi
	movq probe_in+GP(7)(%rip), %rdi
	movq probe_in+GP(8)(%rip), %r8
	movq probe_in+GP(9)(%rip), %r9
	movq probe_in+GP(10)(%rip), %r10
	movq probe_in+GP(11)(%rip), %r11
	movq probe_in+GP(12)(%rip), %r12
	movq probe_in+GP(13)(%rip), %r13
	movq probe_in+GP(14)(%rip), %r14
	movq probe_in+GP(15)(%rip), %r15
	pushq probe_in+FLAGS(%rip)
	popfq
	call probe_inner
	pushfq
	popq probe_out+FLAGS(%rip)
	movq %rax, probe_out+GP(0)(%rip)
	movq %rcx, probe_out+GP(1)(%rip)
	movq %rdx, probe_out+GP(2)(%rip)
	movq %rbx, probe_out+GP(3)(%rip)
	movq %rsp, probe_out+GP(4)(%rip)
	movq %rbp, probe_out+GP(5)(%rip)
	movq %rsi, probe_out+GP(6)(%rip)
	movq %rdi, probe_out+GP(7)(%rip)
	movq %r8, probe_out+GP(8)(%rip)
	movq %r9, probe_out+GP(9)(%rip)
	movq %r10, probe_out+GP(10)(%rip)
	movq %r11, probe_out+GP(11)(%rip)
	movq %r12, probe_out+GP(12)(%rip)
	movq %r13, probe_out+GP(13)(%rip)
	movq %r14, probe_out+GP(14)(%rip)
	movq %r15, probe_out+GP(15)(%rip)
	xmm_store probe_out
	cld
	movdqu 0(%rsp), %xmm6
	movdqu 16(%rsp), %xmm7
	movdqu 32(%rsp), %xmm8
	movdqu 48(%rsp), %xmm9
	movdqu 64(%rsp), %xmm10
	movdqu 80(%rsp), %xmm11
	movdqu 96(%rsp), %xmm12
	movdqu 112(%rsp), %xmm13
	movdqu 128(%rsp), %xmm14
	movdqu 144(%rsp), %xmm15
	addq $168, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rdi
	popq %rsi
	popq %rbp
	popq %rbx
	ret

	.section .rdata, "dr"
	.p2align 2
half:	.float 0.5
