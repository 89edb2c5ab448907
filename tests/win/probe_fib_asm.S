/*
 * probe_fib_asm.S - int64_t probe_fib(int64_t n): fib(n), recursive, with a
 * frame of its own, hooked as MSVC's /Gh /GH hooks a function (the call to
 * _penter first, _pexit right before ret). Part of penter_probe.exe, and on
 * its own msvcgh.dll: assembled for the MSVC target and linked by lld-link
 * against hookprof.lib, as an MSVC program is linked.
 */
	.text

	.globl probe_fib
	.def probe_fib; .scl 2; .type 32; .endef
probe_fib:
	call _penter
	pushq %rbx
	pushq %rsi
	subq $40, %rsp
	movq %rcx, %rbx
	movq %rcx, %rax
	cmpq $2, %rcx
	jl 1f
	leaq -1(%rbx), %rcx
	call probe_fib
	movq %rax, %rsi
	leaq -2(%rbx), %rcx
	call probe_fib
	addq %rsi, %rax
1:	addq $40, %rsp
	popq %rsi
	popq %rbx
	call _pexit
	ret

