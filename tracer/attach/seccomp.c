// SPDX-License-Identifier: MIT
/*
 * seccomp.c - read a thread's seccomp filters and tell what they may do to
 * the system calls an injection makes.
 *
 * A target under a seccomp filter (every Docker or Kubernetes container,
 * many systemd services) may be fine to inject into or may be killed by
 * the first system call the agent makes that its filter does not expect.
 * The filters say which: they are read with PTRACE_SECCOMP_GET_FILTER (the
 * thread ptrace-stopped; CAP_SYS_ADMIN) and run here on each system call
 * of the injection.
 *
 * A filter is the target's data: each is bounded (SECCOMP_MAX_INSNS, at
 * most SECCOMP_MAX_FILTERS of them) and validated as the kernel's
 * bpf_check_classic and seccomp_check_filter would: only the opcodes
 * seccomp allows, jumps in range, loads from struct seccomp_data aligned
 * and within it, scratch memory slots 0..15 and stored before they are
 * loaded on every path, a return at the end, no division by a constant 0.
 *
 * The run is abstract: the system call number and the architecture
 * (PA_ARCH_AUDIT: arch/) are known, the instruction pointer and the
 * arguments are not.  A, X and the 16 memory slots each hold a known
 * value or "unknown"; an ALU operation with an unknown operand gives
 * unknown (but for AND and MUL with a known 0); a conditional jump on an
 * unknown value takes both ways (the equal way of a JEQ knows the value
 * after); a division by an X that may be 0 may end the filter with 0
 * (KILL_THREAD), as the kernel's does; RET A with an unknown A may be any
 * action.  Classic BPF only jumps forward, so every path ends; the same
 * (pc, state) is explored once (a bounded hash set), and a verdict takes
 * at most SECCOMP_MAX_STEPS instructions over all paths, or -E2BIG.
 *
 * Filters combine as in the kernel: all run, the action that comes first
 * in its order (the lowest value, taken as a signed number) wins.  Each
 * filter gives the set of actions it may return, on 15 ordered ranks: the
 * 8 actions and the 7 gaps between them, for values the kernel does not
 * know (which kill the process).  The combination may be action a if some
 * filter may return a and every filter may return a or something after it
 * - so a filter that always denies takes ALLOW away from the others,
 * while filters that only may deny leave it.  The filters look at the
 * same unknown arguments, so this may be more than can happen, never
 * less.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include "arch/arch.h"
#include "seccomp.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER	0x420c
#endif
#ifndef SECCOMP_RET_ACTION_FULL
#define SECCOMP_RET_ACTION_FULL		0xffff0000u
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS	0x80000000u
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF		0x7fc00000u
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG			0x7ffc0000u
#endif
#ifndef BPF_MEMWORDS
#define BPF_MEMWORDS			16
#endif

#define DATA_SIZE	((uint32_t)sizeof(struct seccomp_data))	/* 64 */
#define DATA_NR		0
#define DATA_ARCH	4

/* The ranks of action values, in the kernel's order (signed). */
enum {
	RANK_KILL_PROCESS, RANK_GAP0, RANK_KILL_THREAD, RANK_GAP1, RANK_TRAP,
	RANK_GAP2, RANK_ERRNO, RANK_GAP3, RANK_USER_NOTIF, RANK_GAP4,
	RANK_TRACE, RANK_GAP5, RANK_LOG, RANK_GAP6, RANK_ALLOW,
	RANKS,
};
#define ALL_RANKS	((1u << RANKS) - 1)

/* The SECCOMP_MAY_ bit of each rank: a gap's values kill the process. */
static const unsigned rank_may[RANKS] = {
	[RANK_KILL_PROCESS]	= SECCOMP_MAY_KILL_PROCESS,
	[RANK_GAP0]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_KILL_THREAD]	= SECCOMP_MAY_KILL_THREAD,
	[RANK_GAP1]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_TRAP]		= SECCOMP_MAY_TRAP,
	[RANK_GAP2]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_ERRNO]		= SECCOMP_MAY_ERRNO,
	[RANK_GAP3]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_USER_NOTIF]	= SECCOMP_MAY_USER_NOTIF,
	[RANK_GAP4]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_TRACE]		= SECCOMP_MAY_TRACE,
	[RANK_GAP5]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_LOG]		= SECCOMP_MAY_LOG,
	[RANK_GAP6]		= SECCOMP_MAY_KILL_PROCESS,
	[RANK_ALLOW]		= SECCOMP_MAY_ALLOW,
};

/* The known actions, in rank order (every other rank is the gap after). */
static const uint32_t rank_action[] = {
	SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP,
	SECCOMP_RET_ERRNO, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE,
	SECCOMP_RET_LOG, SECCOMP_RET_ALLOW,
};

static int rank_of(uint32_t ret)
{
	int32_t v = (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
	int i;

	for (i = 0; i < (int)(sizeof(rank_action) / sizeof(rank_action[0]));
	     i++) {
		if (v == (int32_t)rank_action[i])
			return 2 * i;
		if (v < (int32_t)rank_action[i])
			return 2 * i - 1;	/* the gap before */
	}
	return RANK_ALLOW;	/* unreachable: ALLOW is the highest */
}

static void say(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!why || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}

/* ---- validation ---- */

static bool allowed_code(uint16_t code)
{
	switch (code) {
	case BPF_LD | BPF_W | BPF_ABS:
	case BPF_LD | BPF_W | BPF_LEN:
	case BPF_LDX | BPF_W | BPF_LEN:
	case BPF_RET | BPF_K:
	case BPF_RET | BPF_A:
	case BPF_ALU | BPF_ADD | BPF_K:
	case BPF_ALU | BPF_ADD | BPF_X:
	case BPF_ALU | BPF_SUB | BPF_K:
	case BPF_ALU | BPF_SUB | BPF_X:
	case BPF_ALU | BPF_MUL | BPF_K:
	case BPF_ALU | BPF_MUL | BPF_X:
	case BPF_ALU | BPF_DIV | BPF_K:
	case BPF_ALU | BPF_DIV | BPF_X:
	case BPF_ALU | BPF_AND | BPF_K:
	case BPF_ALU | BPF_AND | BPF_X:
	case BPF_ALU | BPF_OR | BPF_K:
	case BPF_ALU | BPF_OR | BPF_X:
	case BPF_ALU | BPF_XOR | BPF_K:
	case BPF_ALU | BPF_XOR | BPF_X:
	case BPF_ALU | BPF_LSH | BPF_K:
	case BPF_ALU | BPF_LSH | BPF_X:
	case BPF_ALU | BPF_RSH | BPF_K:
	case BPF_ALU | BPF_RSH | BPF_X:
	case BPF_ALU | BPF_NEG:
	case BPF_LD | BPF_IMM:
	case BPF_LDX | BPF_IMM:
	case BPF_MISC | BPF_TAX:
	case BPF_MISC | BPF_TXA:
	case BPF_LD | BPF_MEM:
	case BPF_LDX | BPF_MEM:
	case BPF_ST:
	case BPF_STX:
	case BPF_JMP | BPF_JA:
	case BPF_JMP | BPF_JEQ | BPF_K:
	case BPF_JMP | BPF_JEQ | BPF_X:
	case BPF_JMP | BPF_JGE | BPF_K:
	case BPF_JMP | BPF_JGE | BPF_X:
	case BPF_JMP | BPF_JGT | BPF_K:
	case BPF_JMP | BPF_JGT | BPF_X:
	case BPF_JMP | BPF_JSET | BPF_K:
	case BPF_JMP | BPF_JSET | BPF_X:
		return true;
	}
	return false;
}

int seccomp__validate(const struct sock_filter *insns, size_t len, char *why,
		      size_t why_size)
{
	uint16_t masks[SECCOMP_MAX_INSNS], memvalid = 0;
	size_t pc;

	if (!len || len > SECCOMP_MAX_INSNS) {
		say(why, why_size, "a filter of %zu instructions (1 to %d)",
		    len, SECCOMP_MAX_INSNS);
		return -EINVAL;
	}
	for (pc = 0; pc < len; pc++) {
		const struct sock_filter *in = &insns[pc];
		size_t left = len - pc - 1;	/* instructions after */

		if (!allowed_code(in->code)) {
			say(why, why_size,
			    "instruction %zu: opcode 0x%04x is not allowed in a seccomp filter",
			    pc, in->code);
			return -EINVAL;
		}
		switch (in->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (in->k >= DATA_SIZE || in->k & 3) {
				say(why, why_size,
				    "instruction %zu: load at offset %u, not an aligned word of struct seccomp_data",
				    pc, in->k);
				return -EINVAL;
			}
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			if (in->k >= BPF_MEMWORDS) {
				say(why, why_size,
				    "instruction %zu: memory slot %u (0 to %d)",
				    pc, in->k, BPF_MEMWORDS - 1);
				return -EINVAL;
			}
			break;
		case BPF_ALU | BPF_DIV | BPF_K:
			if (!in->k) {
				say(why, why_size,
				    "instruction %zu: division by 0", pc);
				return -EINVAL;
			}
			break;
		case BPF_ALU | BPF_LSH | BPF_K:
		case BPF_ALU | BPF_RSH | BPF_K:
			if (in->k >= 32) {
				say(why, why_size,
				    "instruction %zu: shift by %u", pc, in->k);
				return -EINVAL;
			}
			break;
		case BPF_JMP | BPF_JA:
			if (in->k >= left) {
				say(why, why_size,
				    "instruction %zu: jump by %u, beyond the end",
				    pc, in->k);
				return -EINVAL;
			}
			break;
		default:
			if (BPF_CLASS(in->code) == BPF_JMP &&
			    (in->jt >= left || in->jf >= left)) {
				say(why, why_size,
				    "instruction %zu: jump by %u or %u, beyond the end",
				    pc, in->jt, in->jf);
				return -EINVAL;
			}
		}
	}
	if (BPF_CLASS(insns[len - 1].code) != BPF_RET) {
		say(why, why_size, "the filter does not end with a return");
		return -EINVAL;
	}

	/* every memory slot loaded is stored first on every path (the
	 * kernel's check_load_and_stores) */
	memset(masks, 0xff, len * sizeof(masks[0]));
	for (pc = 0; pc < len; pc++) {
		const struct sock_filter *in = &insns[pc];

		memvalid &= masks[pc];
		switch (in->code) {
		case BPF_ST:
		case BPF_STX:
			memvalid |= (uint16_t)(1u << in->k);
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
			if (!(memvalid & (1u << in->k))) {
				say(why, why_size,
				    "instruction %zu: memory slot %u may be loaded before it is stored",
				    pc, in->k);
				return -EINVAL;
			}
			break;
		case BPF_JMP | BPF_JA:
			masks[pc + 1 + in->k] &= memvalid;
			memvalid = 0xffff;
			break;
		case BPF_RET | BPF_K:
		case BPF_RET | BPF_A:
			memvalid = 0xffff;
			break;
		default:
			if (BPF_CLASS(in->code) == BPF_JMP) {
				masks[pc + 1 + in->jt] &= memvalid;
				masks[pc + 1 + in->jf] &= memvalid;
				memvalid = 0xffff;
			}
		}
	}
	return 0;
}

int seccomp__add(struct seccomp_filters **f, const struct sock_filter *insns,
		 size_t len, char *why, size_t why_size)
{
	struct seccomp_prog *p;
	int err;

	err = seccomp__validate(insns, len, why, why_size);
	if (err)
		return err;
	if (!*f) {
		*f = calloc(1, sizeof(**f));
		if (!*f)
			return -ENOMEM;
	}
	if ((*f)->count >= SECCOMP_MAX_FILTERS) {
		say(why, why_size, "more than %d seccomp filters",
		    SECCOMP_MAX_FILTERS);
		return -E2BIG;
	}
	p = &(*f)->progs[(*f)->count];
	p->insns = malloc(len * sizeof(*insns));
	if (!p->insns)
		return -ENOMEM;
	memcpy(p->insns, insns, len * sizeof(*insns));
	p->len = len;
	(*f)->count++;
	return 0;
}

void seccomp__free(struct seccomp_filters *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->count; i++)
		free(f->progs[i].insns);
	free(f);
}

/* ---- reading ---- */

/* The "Seccomp:" line of /proc/TID/status: 0 none, 1 strict, 2 filter;
 * -1 if it cannot be read. */
static int seccomp_mode(pid_t tid)
{
	char path[64], line[128];
	int mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8)) {
			mode = atoi(line + 8);
			break;
		}
	fclose(f);
	return mode;
}

int seccomp__read(pid_t tid, struct seccomp_filters **out, char *why,
		  size_t why_size)
{
	struct seccomp_filters *f;
	struct sock_filter *buf;
	char reason[160];
	long index, n;
	int err = 0;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* always room for the longest filter: a filter another thread adds
	 * (SECCOMP_FILTER_FLAG_TSYNC) may move the one at an index between
	 * two calls, so a length asked first could be stale */
	buf = malloc(SECCOMP_MAX_INSNS * sizeof(*buf));
	if (!buf) {
		err = -ENOMEM;
		goto out_filters;
	}
	for (index = 0;; index++) {
		n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)index, buf);
		if (n < 0) {
			err = -errno;
			if (err == -ENOENT && index > 0) {
				err = 0;	/* past the oldest */
				break;
			}
			if (err == -EINVAL && index == 0) {
				/* not in filter mode: none, or strict */
				switch (seccomp_mode(tid)) {
				case 0:
					err = 0;
					break;
				case 2:	/* the kernel's stub without
					   CONFIG_CHECKPOINT_RESTORE */
					say(why, why_size,
					    "this kernel keeps no copy of seccomp filters to read (CONFIG_CHECKPOINT_RESTORE)");
					err = -EOPNOTSUPP;
					break;
				default:
					say(why, why_size,
					    "thread %d is in seccomp's strict mode, or its mode cannot be read",
					    (int)tid);
					err = -EPERM;
				}
				if (err)
					goto out_buf;
				break;
			}
			if (err == -EACCES || err == -EPERM) {
				say(why, why_size,
				    "thread %d's seccomp filter cannot be read without CAP_SYS_ADMIN in the initial user namespace (nor from under a seccomp filter)",
				    (int)tid);
				err = -EPERM;
			} else if (err == -EMEDIUMTYPE) {
				say(why, why_size,
				    "thread %d has a seccomp filter with no program to read (not classic BPF)",
				    (int)tid);
				err = -EOPNOTSUPP;
			} else {
				say(why, why_size,
				    "cannot read thread %d's seccomp filter %ld: %s",
				    (int)tid, index, strerror(-err));
			}
			goto out_buf;
		}
		if (index >= SECCOMP_MAX_FILTERS) {
			say(why, why_size,
			    "thread %d has more than %d seccomp filters",
			    (int)tid, SECCOMP_MAX_FILTERS);
			err = -E2BIG;
			goto out_buf;
		}
		reason[0] = 0;
		if (n < 1 || n > SECCOMP_MAX_INSNS) {
			say(why, why_size,
			    "thread %d's seccomp filter %ld has %ld instructions",
			    (int)tid, index, n);
			err = -EINVAL;
			goto out_buf;
		}
		err = seccomp__add(&f, buf, (size_t)n, reason, sizeof(reason));
		if (err) {
			say(why, why_size,
			    "thread %d's seccomp filter %ld does not validate: %s",
			    (int)tid, index, reason[0] ? reason : strerror(-err));
			goto out_buf;
		}
	}
	*out = f;
	f = NULL;
out_buf:
	free(buf);
out_filters:
	seccomp__free(f);
	return err;
}

/* ---- the abstract run ---- */

/* Register and memory values: A, X, M[0..15]; a bit of known per value. */
#define V_A		0
#define V_X		1
#define V_M(k)		(2 + (k))
#define NVALS		(2 + BPF_MEMWORDS)

struct astate {
	uint32_t pc;
	uint32_t known;			/* bit per value */
	uint32_t v[NVALS];		/* 0 where unknown */
};

#define MEMO_BITS	16		/* a 64k-entry set of explored states */
#define MEMO_SIZE	(1u << MEMO_BITS)

struct memo_slot {
	uint32_t gen;			/* in use if the run's */
	struct astate s;
};

struct run {
	const struct sock_filter *insns;
	size_t len;
	int nr;
	struct astate *stack;		/* paths still to go */
	size_t depth, cap;
	struct memo_slot *memo;		/* open addressing */
	uint32_t gen;			/* one per filter run */
	size_t memo_used;
	unsigned long steps;
	uint32_t ranks;			/* this filter's possible results */
};

static bool is_known(const struct astate *s, int i)
{
	return s->known & (1u << i);
}

static void set_val(struct astate *s, int i, bool known, uint32_t v)
{
	if (known) {
		s->known |= 1u << i;
		s->v[i] = v;
	} else {
		s->known &= ~(1u << i);
		s->v[i] = 0;
	}
}

static uint64_t state_hash(const struct astate *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint8_t *p = (const uint8_t *)s;
	size_t i;

	for (i = 0; i < sizeof(*s); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Whether state s was explored already; notes it if not.  A full set
 * explores again: still bounded by the steps. */
static bool seen(struct run *r, const struct astate *s)
{
	size_t i, mask = MEMO_SIZE - 1;

	if (r->memo_used >= MEMO_SIZE / 2)
		return false;
	for (i = state_hash(s) & mask;; i = (i + 1) & mask) {
		struct memo_slot *m = &r->memo[i];

		if (m->gen != r->gen) {
			m->gen = r->gen;
			m->s = *s;
			r->memo_used++;
			return false;
		}
		if (!memcmp(&m->s, s, sizeof(*s)))
			return true;
	}
}

static int push(struct run *r, const struct astate *s)
{
	if (seen(r, s))
		return 0;
	if (r->depth == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct astate *st = realloc(r->stack, cap * sizeof(*st));

		if (!st)
			return -ENOMEM;
		r->stack = st;
		r->cap = cap;
	}
	r->stack[r->depth++] = *s;
	return 0;
}

static uint32_t alu(uint16_t op, uint32_t a, uint32_t b)
{
	switch (op) {
	case BPF_ADD:	return a + b;
	case BPF_SUB:	return a - b;
	case BPF_MUL:	return a * b;
	case BPF_DIV:	return b ? a / b : 0;
	case BPF_AND:	return a & b;
	case BPF_OR:	return a | b;
	case BPF_XOR:	return a ^ b;
	case BPF_LSH:	return a << (b & 31);
	case BPF_RSH:	return a >> (b & 31);
	}
	return 0;
}

static bool jump_taken(uint16_t op, uint32_t a, uint32_t b)
{
	switch (op) {
	case BPF_JEQ:	return a == b;
	case BPF_JGT:	return a > b;
	case BPF_JGE:	return a >= b;
	case BPF_JSET:	return a & b;
	}
	return false;
}

static void ret_value(struct run *r, bool known, uint32_t v)
{
	r->ranks |= known ? 1u << rank_of(v) : ALL_RANKS;
}

/* Run one path from s to its returns, pushing the other way of each jump
 * that cannot be decided. */
static int run_path(struct run *r, struct astate s)
{
	int err;

	for (;;) {
		const struct sock_filter *in;
		uint16_t op;
		bool kb;
		uint32_t b;

		if (++r->steps > SECCOMP_MAX_STEPS)
			return -E2BIG;
		if (s.pc >= r->len)
			return -EINVAL;		/* validated: cannot be */
		in = &r->insns[s.pc];
		op = BPF_OP(in->code);
		switch (BPF_CLASS(in->code)) {
		case BPF_RET:
			if (BPF_RVAL(in->code) == BPF_A)
				ret_value(r, is_known(&s, V_A), s.v[V_A]);
			else
				ret_value(r, true, in->k);
			return 0;
		case BPF_LD:
		case BPF_LDX: {
			int to = BPF_CLASS(in->code) == BPF_LD ? V_A : V_X;

			switch (BPF_MODE(in->code)) {
			case BPF_ABS:
				if (in->k == DATA_NR)
					set_val(&s, to, true, (uint32_t)r->nr);
				else if (in->k == DATA_ARCH)
					set_val(&s, to, true, PA_ARCH_AUDIT);
				else
					set_val(&s, to, false, 0);
				break;
			case BPF_LEN:
				set_val(&s, to, true, DATA_SIZE);
				break;
			case BPF_IMM:
				set_val(&s, to, true, in->k);
				break;
			case BPF_MEM:
				set_val(&s, to, is_known(&s, V_M(in->k)),
					s.v[V_M(in->k)]);
				break;
			default:
				return -EINVAL;
			}
			s.pc++;
			break;
		}
		case BPF_ST:
		case BPF_STX: {
			int from = BPF_CLASS(in->code) == BPF_ST ? V_A : V_X;

			set_val(&s, V_M(in->k), is_known(&s, from), s.v[from]);
			s.pc++;
			break;
		}
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				set_val(&s, V_X, is_known(&s, V_A), s.v[V_A]);
			else
				set_val(&s, V_A, is_known(&s, V_X), s.v[V_X]);
			s.pc++;
			break;
		case BPF_ALU: {
			bool ka = is_known(&s, V_A);

			if (op == BPF_NEG) {
				set_val(&s, V_A, ka, -s.v[V_A]);
				s.pc++;
				break;
			}
			kb = BPF_SRC(in->code) == BPF_K || is_known(&s, V_X);
			b = BPF_SRC(in->code) == BPF_K ? in->k : s.v[V_X];
			if (op == BPF_DIV && BPF_SRC(in->code) == BPF_X &&
			    (!kb || !b)) {
				/* the kernel's filter returns 0 on a division
				 * by 0: KILL_THREAD */
				ret_value(r, true, 0);
				if (kb)
					return 0;
			}
			if (ka && kb)
				set_val(&s, V_A, true, alu(op, s.v[V_A], b));
			else if ((op == BPF_AND || op == BPF_MUL) &&
				 ((ka && !s.v[V_A]) || (kb && !b)))
				set_val(&s, V_A, true, 0);
			else
				set_val(&s, V_A, false, 0);
			s.pc++;
			break;
		}
		case BPF_JMP: {
			struct astate other;
			bool ka = is_known(&s, V_A);

			if (op == BPF_JA) {
				s.pc += 1 + in->k;
				break;
			}
			kb = BPF_SRC(in->code) == BPF_K || is_known(&s, V_X);
			b = BPF_SRC(in->code) == BPF_K ? in->k : s.v[V_X];
			if (ka && kb) {
				s.pc += 1 + (jump_taken(op, s.v[V_A], b) ?
					     in->jt : in->jf);
				break;
			}
			if (in->jt == in->jf) {
				s.pc += 1 + in->jt;	/* one way after all */
				break;
			}
			/* both ways; the equal way of a JEQ knows both */
			other = s;
			other.pc += 1 + in->jf;
			s.pc += 1 + in->jt;
			if (op == BPF_JEQ && kb)
				set_val(&s, V_A, true, b);
			else if (op == BPF_JEQ && ka)
				set_val(&s, V_X, true, s.v[V_A]);
			err = push(r, &other);
			if (err)
				return err;
			break;
		}
		default:
			return -EINVAL;
		}
	}
}

/* The ranks filter p may return for system call nr. */
static int run_filter(struct run *r, const struct seccomp_prog *p, int nr)
{
	struct astate s;
	int err;

	r->insns = p->insns;
	r->len = p->len;
	r->nr = nr;
	r->depth = 0;
	r->ranks = 0;
	r->memo_used = 0;
	r->gen++;
	memset(&s, 0, sizeof(s));
	err = push(r, &s);
	while (!err && r->depth) {
		s = r->stack[--r->depth];
		err = run_path(r, s);
	}
	return err;
}

/* The highest rank of a set (one that is not empty). */
static int top_rank(uint32_t ranks)
{
	return 31 - __builtin_clz(ranks);
}

int seccomp__verdict(const struct seccomp_filters *f, int nr,
		     unsigned *actions)
{
	uint32_t any = 0, result = 0;
	struct run r;
	int err = 0, floor = RANKS - 1, k;
	size_t i;

	*actions = 0;
	if (!f || !f->count) {
		*actions = SECCOMP_MAY_ALLOW;
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.memo = calloc(MEMO_SIZE, sizeof(*r.memo));	/* gen 0: free */
	if (!r.memo)
		return -ENOMEM;
	for (i = 0; i < f->count && i < SECCOMP_MAX_FILTERS; i++) {
		err = run_filter(&r, &f->progs[i], nr);
		if (err)
			goto out_run;
		if (!r.ranks) {		/* validated: every path returns */
			err = -EINVAL;
			goto out_run;
		}
		any |= r.ranks;
		/* no result can come after the best a filter can do */
		if (top_rank(r.ranks) < floor)
			floor = top_rank(r.ranks);
	}
	for (k = 0; k <= floor; k++)
		if (any & (1u << k))
			result |= rank_may[k];
	*actions = result;
out_run:
	free(r.stack);
	free(r.memo);
	return err;
}

int seccomp__check_calls(const struct seccomp_filters *f, const int *nrs,
			 size_t n, int *bad_nr, unsigned *bad_actions)
{
	unsigned actions;
	size_t i;
	int err;

	*bad_nr = -1;
	*bad_actions = 0;
	for (i = 0; i < n; i++) {
		err = seccomp__verdict(f, nrs[i], &actions);
		if (err)
			return err;
		if (actions & SECCOMP_MAY_DANGER) {
			*bad_nr = nrs[i];
			*bad_actions = actions;
			return 1;
		}
	}
	return 0;
}

int seccomp__may_deny(const struct seccomp_filters *f, int nr)
{
	unsigned actions;
	int err = seccomp__verdict(f, nr, &actions);

	if (err)
		return err;
	return !!(actions & ~(SECCOMP_MAY_ALLOW | SECCOMP_MAY_LOG));
}

/*
 * What the injection and the agent may call, x86-64.  Seen with strace -f
 * on a program that does what an injection does, in-process (memfd_create,
 * dlopen of /proc/self/fd/N or of the agent's path, close,
 * pprof_alloc_attach with the stats thread and each unwind mode, sampling
 * on 5 threads with a dlopen in between, pprof_alloc_rescan, a stats
 * request, pprof_alloc_detach, attach and detach again), on glibc 2.36;
 * then what other glibc versions use instead, and what the agent's code
 * may call on paths that run did not take (marked "code:").
 */
const int seccomp_injection_calls[] = {
	/* the tracer's call stub (tracer/attach/callstub.c, inject.c) */
	SYS_mmap,		/* the stub's page, through "syscall; ret" */
	SYS_rt_sigreturn,	/* home, by the signal restorer or the stub */
	SYS_ppoll,		/* the stub's wait after a call */
	/* the agent into a memfd (tracer/attach/attach.c agent_memfd) */
	SYS_memfd_create,
	SYS_close,
	/* dlopen: the loader opens, reads and maps the agent and
	 * ld.so.cache, and allocates */
	SYS_openat,
#ifdef SYS_open			/* not on aarch64, whose glibc has openat only */
	SYS_open,		/* glibc < 2.26 */
#endif
	SYS_read,
	SYS_pread64,		/* some loaders read headers so */
	SYS_lseek,		/* older loaders */
	SYS_newfstatat,		/* fstat on glibc >= 2.33 */
	SYS_fstat,		/* fstat before; the agent's raw fstat */
	SYS_mprotect,		/* RELRO; the agent's GOT (un)patching */
	SYS_munmap,
	SYS_brk,		/* malloc */
	SYS_getrandom,		/* malloc's first use (tcache) */
	/* pprof_alloc_attach: the agent's memfd (pprof_alloc_memfd.h) */
	SYS_ftruncate,
	SYS_fcntl,		/* seals */
	SYS_madvise,		/* MADV_WIPEONFORK; a thread's stack freed */
	SYS_getpid,
	SYS_rt_sigaction,	/* glibc's first pthread_create */
	SYS_rt_sigprocmask,	/* the stats thread's start, its mask */
	/* the stats thread (agent/stats.c) */
	SYS_clone3,		/* pthread_create, glibc >= 2.34 */
	SYS_clone,		/* pthread_create before, or without clone3 */
	SYS_set_robust_list,
	SYS_rseq,
	SYS_prctl,		/* PR_SET_NAME */
	SYS_futex,		/* its wait; exitwait.c */
	SYS_gettid,
	SYS_exit,		/* a thread's end */
	/* sampling: /proc/self/maps (unwind_fp.c), signal stacks */
	SYS_sigaltstack,
	SYS_process_vm_readv,	/* code: a foreign stack (stack_copy.c) */
	SYS_sched_yield,	/* code: waiting for room, --rate 1 (ring.c) */
	SYS_nanosleep,		/* code: the same, glibc < 2.31 */
	SYS_clock_nanosleep,	/* code: the same, glibc >= 2.31 */
	SYS_clock_gettime,	/* code: without a vDSO clock (sampler.c) */
	/* found in review, not in the traces above */
	SYS_restart_syscall,	/* a thread interrupted in a timed sleep or
				   wait (the borrowed one) restarts so */
	SYS_msync,		/* unwind_fp.c: is a foreign stack mapped? */
	SYS_set_tid_address,	/* libpthread's start, glibc < 2.34, when
				   the agent's dlopen loads it */
	SYS_prlimit64,		/* the same: RLIMIT_STACK */
	SYS_getrlimit,
#ifdef SYS_stat
	SYS_stat,		/* the loader's path search, glibc < 2.33 */
#endif
	SYS_mremap,		/* realloc of a large block */
	-1,			/* the call a thread borrowed at a system
				   call's entry skips (orig_rax -1): the
				   kernel runs the filters after the
				   ptrace stop, on -1 */
};

const size_t seccomp_injection_ncalls =
	sizeof(seccomp_injection_calls) / sizeof(seccomp_injection_calls[0]);

const char *seccomp__call_name(int nr)
{
	switch (nr) {
	case SYS_mmap:
		return "mmap";
	case SYS_rt_sigreturn:
		return "rt_sigreturn";
	case SYS_ppoll:
		return "ppoll";
	case SYS_memfd_create:
		return "memfd_create";
	case SYS_close:
		return "close";
	case SYS_openat:
		return "openat";
#ifdef SYS_open
	case SYS_open:
		return "open";
#endif
	case SYS_read:
		return "read";
	case SYS_pread64:
		return "pread64";
	case SYS_lseek:
		return "lseek";
	case SYS_newfstatat:
		return "newfstatat";
	case SYS_fstat:
		return "fstat";
	case SYS_mprotect:
		return "mprotect";
	case SYS_munmap:
		return "munmap";
	case SYS_brk:
		return "brk";
	case SYS_getrandom:
		return "getrandom";
	case SYS_ftruncate:
		return "ftruncate";
	case SYS_fcntl:
		return "fcntl";
	case SYS_madvise:
		return "madvise";
	case SYS_getpid:
		return "getpid";
	case SYS_rt_sigaction:
		return "rt_sigaction";
	case SYS_rt_sigprocmask:
		return "rt_sigprocmask";
	case SYS_clone3:
		return "clone3";
	case SYS_clone:
		return "clone";
	case SYS_set_robust_list:
		return "set_robust_list";
	case SYS_rseq:
		return "rseq";
	case SYS_prctl:
		return "prctl";
	case SYS_futex:
		return "futex";
	case SYS_gettid:
		return "gettid";
	case SYS_exit:
		return "exit";
	case SYS_sigaltstack:
		return "sigaltstack";
	case SYS_process_vm_readv:
		return "process_vm_readv";
	case SYS_sched_yield:
		return "sched_yield";
	case SYS_nanosleep:
		return "nanosleep";
	case SYS_clock_nanosleep:
		return "clock_nanosleep";
	case SYS_clock_gettime:
		return "clock_gettime";
	case SYS_restart_syscall:
		return "restart_syscall";
	case SYS_msync:
		return "msync";
	case SYS_set_tid_address:
		return "set_tid_address";
	case SYS_prlimit64:
		return "prlimit64";
	case SYS_getrlimit:
		return "getrlimit";
#ifdef SYS_stat
	case SYS_stat:
		return "stat";
#endif
	case SYS_mremap:
		return "mremap";
	case -1:
		return "the skipped call of a thread borrowed at a system call";
	default:
		return "?";
	}
}
