/*
 * matmul_helpers.h: what test_lower_matmul.c and test_lower_matmul_sync.c
 * share: the GEMM spec pieces, a spec taken through every kernel pass,
 * statements found by kind, and counts in the CUDA.  Include after
 * fixture.h.
 */
#ifndef WSFUSE_TEST_MATMUL_HELPERS_H
#define WSFUSE_TEST_MATMUL_HELPERS_H

#define HEAD "fusion: gemm\nsizes: {M: 4096, N: 4096, K: 4096}\n"
/* the operands of y = x w^T, and its op (the newer tests' specs are built of these) */
#define GEMM_IN "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
#define GEMM_MM "  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
/* a plain GEMM y = x w^T named gemm at sizes M, N, K; with w [K, N] (N-major) */
#define GEMM_PLAIN GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n"
#define GEMM_SIZES(m, n, k) "fusion: gemm\nsizes: {M: " #m ", N: " #n ", K: " #k "}\n"
#define GEMM_NMAJOR "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [K, N]}\n" \
	"ops:\n  - {out: y, op: matmul, in: [x, w]}\noutputs:\n  y: {dtype: bf16}\n"

static int stmts_of(Stmt *s, StmtKind kind, Stmt **out, int n);

/* SPEC through the front end and every kernel pass, or NULL (the message in t->msg). */
static Kernel *
kernel_of(Fixture *t, const char *spec)
{
	Comp *c = &t->c;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR))
		return NULL;
	return c->kernel;
}

static Stmt *
find_kind(Stmt *block, StmtKind kind, int nth)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == kind && nth-- == 0)
			return block->body[i];
	return NULL;
}

/* Occurrences of NEEDLE in HAY. */
static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

/* The CUDA of the kernel T holds after kernel_of. */
static const char *
cuda_of(Fixture *t)
{
	Buf b;
	Launch *l;

	buf_init(&b, t->c.arena);
	if (codegen_emit(&t->c, &b, &l))
		fail_msg("%s", t->msg);
	return buf_str(&b);
}

/* The first statement of KIND in S, depth first, or NULL. */
static Stmt *
find_deep(Stmt *s, StmtKind kind)
{
	Stmt *r;
	int i;

	if (!s || s->kind == kind)
		return s;
	for (i = 0; i < s->nbody; i++)
		if ((r = find_deep(s->body[i], kind)))
			return r;
	return find_deep(st_else(s), kind);
}

/*
 * SPEC (case I of a table) is not lowered, with an error that holds MSG:
 * exit status 6 when UNBUILT (valid input this version cannot build), else
 * an input error.
 */
static void
refused_with(int i, const char *spec, const char *msg, bool unbuilt)
{
	Fixture *t;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (kernel_of(t, spec))
		fail_msg("case %d was lowered", i);
	if (!strstr(t->msg, msg))
		fail_msg("case %d: '%s' lacks '%s'", i, t->msg, msg);
	assert_int_equal(t->c.status == WSF_ERR_UNSUPPORTED, unbuilt);
	teardown((void **)&t);
}

/* The statements of kind KIND in S, in order, at most N of them into OUT; how many there are. */
static int
stmts_of(Stmt *s, StmtKind kind, Stmt **out, int n)
{
	int i, got = 0;

	if (!s)
		return 0;
	if (s->kind == kind) {
		if (n > 0)
			out[0] = s;
		return 1 + stmts_of(st_else(s), kind, out + 1, n - 1);
	}
	for (i = 0; i < s->nbody; i++)
		got += stmts_of(s->body[i], kind, out + got, n - got);
	return got + stmts_of(st_else(s), kind, out + got, n - got);
}

/* The consumers' persistent tile loop of warp-specialized K (its second role's), or NULL. */
static Stmt *
consumer_tiles(Kernel *k)
{
	Stmt *roles = find_kind(k->body, ST_ROLES, 0);
	int i;

	for (i = 0; roles && i < roles->body[1]->nbody; i++)
		if (roles->body[1]->body[i]->kind == ST_LOOP && roles->body[1]->body[i]->u.loop.kind == LOOP_TILE)
			return roles->body[1]->body[i];
	return NULL;
}

/*
 * In the tile loop TL of K: *AT_WAIT, the index of the elected block that
 * holds the flag wait W, and *AT_E, that of the first epilogue loop (-1:
 * none).
 */
static void
wait_and_epilogue(Kernel *k, Stmt *tl, Stmt *w, int *at_wait, int *at_e)
{
	int i, j;

	*at_wait = *at_e = -1;
	for (i = 0; i < tl->nbody; i++) {
		Stmt *x = tl->body[i];

		for (j = 0; x->kind == ST_IF && j < x->nbody; j++)
			if (x->body[j] == w)
				*at_wait = i;
		if (x->kind == ST_LOOP && strcmp(k->var[x->u.loop.var].name, "e") == 0 && *at_e < 0)
			*at_e = i;
	}
}

#endif
