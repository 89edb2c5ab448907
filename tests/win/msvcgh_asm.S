/*
 * msvcgh_asm.S - a DLL's function as MSVC's /Gh /GH compiles it (the call
 * to _penter first, _pexit right before ret), assembled for the MSVC
 * target and linked by lld-link against hookprof.lib: the import library
 * MSVC programs link. gh_fib(n) returns fib(n), with fib's calls.
 */
	.text
	.globl gh_fib
	.def gh_fib; .scl 2; .type 32; .endef
gh_fib:
	call _penter
	pushq %rbx
	pushq %rsi
	subq $40, %rsp
	movq %rcx, %rbx
	movq %rcx, %rax
	cmpq $2, %rcx
	jl 1f
	leaq -1(%rbx), %rcx
	call gh_fib
	movq %rax, %rsi
	leaq -2(%rbx), %rcx
	call gh_fib
	addq %rsi, %rax
1:	addq $40, %rsp
	popq %rsi
	popq %rbx
	call _pexit
	ret
