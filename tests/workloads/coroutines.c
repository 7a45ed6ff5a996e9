// SPDX-License-Identifier: MIT
/*
 * coroutines.c - coroutines on stacks that are unmapped while the thread
 * lives: the agent's stack walk must never read them (a walk that trusted
 * stale cached stack bounds would, and kill the target with SIGSEGV).
 *
 * Fully frame-pointered program, ucontext coroutines on individually
 * mmap'd stacks (no guard pages, so the kernel merges adjacent stacks into
 * one VMA).  Coroutine B is created (getcontext) while running on A, so B's
 * outermost frame record links to a frame on A.  B samples once (cache =
 * the merged VMA, A still mapped), A's stack is unmapped, B samples again:
 * the cached bound still covers A, and the walk dereferences A's frame.
 *
 * (Regression test for a review finding; run by tests/e2e/run-coroutines.sh.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define STK (128 * 1024)
static ucontext_t ctx_main, ctx_a, ctx_b;
static char *stk_a, *stk_b;
static void *volatile keep;

__attribute__((noinline)) static void b_body(void)
{
	keep = malloc(16);		/* sample 1: caches [stk_b, stk_a + STK) */
	swapcontext(&ctx_b, &ctx_main);	/* main unmaps A's stack */
	keep = malloc(16);		/* sample 2: walks into A -> SIGSEGV */
	swapcontext(&ctx_b, &ctx_main);
}

static void func_b(void) { b_body(); }

__attribute__((noinline)) static void func_a(void)
{
	getcontext(&ctx_b);		/* saves A's rbp into B's context */
	ctx_b.uc_stack.ss_sp = stk_b;
	ctx_b.uc_stack.ss_size = STK;
	ctx_b.uc_link = &ctx_main;
	makecontext(&ctx_b, func_b, 0);
	swapcontext(&ctx_a, &ctx_b);
}

int main(void)
{
	stk_a = mmap(NULL, STK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stk_b = mmap(stk_a - STK, STK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (stk_a == MAP_FAILED || stk_b != stk_a - STK) {
		fprintf(stderr, "could not place the stacks side by side\n");
		return 2;
	}
	getcontext(&ctx_a);
	ctx_a.uc_stack.ss_sp = stk_a;
	ctx_a.uc_stack.ss_size = STK;
	ctx_a.uc_link = &ctx_main;
	makecontext(&ctx_a, func_a, 0);
	swapcontext(&ctx_main, &ctx_a);	/* runs A, which starts B */
	munmap(stk_a, STK);		/* A is finished with; no malloc here */
	swapcontext(&ctx_main, &ctx_b);
	write(1, "survived\n", 9);
	return 0;
}
