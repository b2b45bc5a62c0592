/*
 * matmul_helpers.h: what test_lower_matmul*.c share: the GEMM spec pieces, a spec taken
 * through every kernel pass, statements found by kind, counts in the CUDA,
 * refused schedules, and an evaluator of the kernel's expressions (Env).
 * Include after fixture.h.  Its functions are static inline: each file
 * uses some.
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

static inline int stmts_of(Stmt *s, StmtKind kind, Stmt **out, int n);

/* SPEC through the front end and every kernel pass, or NULL (the message in t->msg). */
static inline Kernel *
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

static inline Stmt *
find_kind(Stmt *block, StmtKind kind, int nth)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == kind && nth-- == 0)
			return block->body[i];
	return NULL;
}

/* Occurrences of NEEDLE in HAY. */
static inline int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

/* The CUDA of the kernel T holds after kernel_of. */
static inline const char *
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
static inline Stmt *
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
static inline void
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
static inline int
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
static inline Stmt *
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
static inline void
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

/* A spec's schedule that is refused: the hint, the message, exit status 6 (UNBUILT) or an input error. */
typedef struct Refusal {
	const char *sched, *msg;
	bool unbuilt;
} Refusal;

/* SPEC with each schedule of R (N of them) is refused as it says (refused_with). */
static inline void
refused_schedules(const char *spec, const Refusal *r, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char text[1024];

		snprintf(text, sizeof text, "%sschedule: %s\n", spec, r[i].sched);
		refused_with(i, text, r[i].msg, r[i].unbuilt);
	}
}

/* The value of E as the GPU computes it, with ENV's variables, this CTA and the grid; a division by a
   runtime value is emit.c's 32-bit wsf_udiv, whose operands must be in [0, 2^32). */
typedef struct Env {
	int64_t *v;
	bool *set;
	int64_t cta, ncta, rank;   /* rank: in its cluster */
} Env;

static inline int64_t
eval(const Expr *e, const Env *env)
{
	int64_t a, b;

	switch (e->kind) {
	case EX_INT:
		return e->ival;
	case EX_VAR:
		if (!env->set[e->var])
			fail_msg("variable %d used before it is set", e->var);
		return env->v[e->var];
	case EX_CTA:
		return env->cta;
	case EX_NCTA:
		return env->ncta;
	case EX_RANK:
		return env->rank;
	default:
		break;
	}
	a = eval(e->a, env);
	b = eval(e->b, env);
	switch (e->kind) {
	case EX_ADD: return a + b;
	case EX_SUB: return a - b;
	case EX_MUL: return a * b;
	case EX_DIV:
	case EX_MOD:
		if (e->b->kind != EX_INT && (a < 0 || a >= ((int64_t)1 << 32) || b <= 0 || b >= ((int64_t)1 << 32)))
			fail_msg("wsf_udiv(%lld, %lld): out of 32 bits", (long long)a, (long long)b);
		if (e->u32 && (a < 0 || a >= ((int64_t)1 << 32)))   /* ex_stage_slot's 32-bit division */
			fail_msg("u32(%lld): out of 32 bits", (long long)a);
		assert_true(b > 0);
		return e->kind == EX_DIV ? a / b : a % b;
	case EX_MIN: return a < b ? a : b;
	case EX_MAX: return a > b ? a : b;
	case EX_CEILDIV: assert_true(b > 0); return (a + b - 1) / b;
	case EX_LT: return a < b;
	case EX_GE: return a >= b;
	case EX_EQ: return a == b;
	case EX_AND: return a & b;
	default:
		fail_msg("unexpected expression kind %d", e->kind);
	}
	return 0;
}

/* Sets the variable of let S (kernel K) in ENV; its value. */
static inline int64_t
let_in(const Kernel *k, const Stmt *s, Env *env)
{
	(void)k;
	env->v[s->u.let.var] = eval(s->u.let.value, env);
	env->set[s->u.let.var] = true;
	return env->v[s->u.let.var];
}

static inline int64_t
var_named(const Kernel *k, const Env *env, const char *name)
{
	int v;

	for (v = 1; v < k->nvar; v++)
		if (env->set[v] && strcmp(k->var[v].name, name) == 0)
			return env->v[v];
	fail_msg("no variable '%s' set", name);
	return 0;
}

/*
 * ENV as CTA of a GRID of stream-K kernel K would start: the sizes M x N x
 * K (a workspace unless OFF), then the lets before the tile loop.
 */
static inline void
plan_env(const Kernel *k, Env *env, int64_t M, int64_t N, int64_t K, int64_t cta, int64_t grid, bool off)
{
	int i;

	memset(env->set, 0, (size_t)k->nvar * sizeof *env->set);
	env->cta = cta;
	env->ncta = grid;
	env->rank = cta % kernel_cluster_ctas(k);
	env->v[k->rows_var] = M, env->set[k->rows_var] = true;
	env->v[k->cols_var] = N, env->set[k->cols_var] = true;
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_SIZE && (k->param[i].size == SZ_INNER || k->param[i].size == SZ_SK_ON))
			env->v[k->param[i].var] = k->param[i].size == SZ_INNER ? K : !off, env->set[k->param[i].var] = true;
	for (i = 0; i < k->body->nbody; i++)
		if (k->body->body[i]->kind == ST_LET)
			let_in(k, k->body->body[i], env);
}

/* ENV at iteration IT of tile loop TL of K: its lets, as the CTA would run them. */
static inline void
tile_env(const Kernel *k, const Stmt *tl, Env *env, int64_t it)
{
	int i;

	env->v[tl->u.loop.var] = it, env->set[tl->u.loop.var] = true;
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i]->kind == ST_LET)
			let_in(k, tl->body[i], env);
}

/* one CTA a cluster: 4096^3 would take clusters of two by default (cluster_pairs) */
static const char gemm_bias_gelu[] =
	HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	"  bias: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"  - {out: z, op: add, in: [y, bias]}\n  - {out: o, op: gelu, in: [z], approximate: tanh}\n"
	"outputs:\n  o: {dtype: bf16}\nschedule: {cluster: [1, 1]}\n";

/* Case I of a table: SPEC lowered into a fresh fixture *T (else the case fails); its kernel. */
static inline Kernel *
lowered(Fixture **t, int i, const char *spec)
{
	Kernel *k;

	if (setup((void **)t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(*t, spec)))
		fail_msg("case %d: %s", i, (*t)->msg);
	return k;
}

/* The ST_LETs named NAME under S, in order, at most N of them into OUT; how many there are. */
static inline int
lets_named(const Kernel *k, Stmt *s, const char *name, Stmt **out, int n)
{
	Stmt *lets[64];
	int i, m = stmts_of(s, ST_LET, lets, 64), got = 0;

	for (i = 0; i < m && i < 64; i++)
		if (strcmp(k->var[lets[i]->u.let.var].name, name) == 0 && got++ < n)
			out[got - 1] = lets[i];
	return got;
}

/* The prefetches under S, appended to OUT[N..] (room for 8); the new count.  IN_ROLE: the kind of role they sit in. */
static inline int
prefetches_of(const Kernel *k, const Stmt *s, Stmt **out, int n, RoleKind *in_role, RoleKind role)
{
	int i;

	if (s->kind == ST_ROLE)
		role = k->role[s->u.role.id].kind;
	if (s->kind == ST_TMA_PREFETCH && n < 8) {
		in_role[n] = role;
		out[n] = (Stmt *)s;
		return n + 1;
	}
	for (i = 0; i < s->nbody; i++)
		n = prefetches_of(k, s->body[i], out, n, in_role, role);
	return st_else(s) ? prefetches_of(k, st_else(s), out, n, in_role, role) : n;
}

/* The read-waits (bulk_wait .read) under S, into *W (up to 4); their count */
static inline int
read_waits(Stmt *s, const Stmt **w, int n)
{
	int i;

	if (s->kind == ST_BULK_WAIT && s->u.group.read && n < 4)
		w[n++] = s;
	for (i = 0; i < s->nbody; i++)
		n = read_waits(s->body[i], w, n);
	return st_else(s) ? read_waits(st_else(s), w, n) : n;
}

/* The epilogue loop (over subtiles, var e) in the tile loop TL: at its level, or under stream-K's owner's if. */
static inline Stmt *
epilogue_of(const Kernel *k, Stmt *tl)
{
	int i;

	for (i = 0; i < tl->nbody; i++) {
		Stmt *x = tl->body[i];

		if (x->kind == ST_LOOP && strcmp(k->var[x->u.loop.var].name, "e") == 0)
			return x;
		if (x->kind == ST_IF && x->nbody && x->body[0]->kind == ST_LOOP &&
		    strcmp(k->var[x->body[0]->u.loop.var].name, "e") == 0)
			return x->body[0];
	}
	return NULL;
}

static const char gemm_bias_gelu_pp[] =
	HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	"  bias: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"  - {out: z, op: add, in: [y, bias]}\n  - {out: o, op: gelu, in: [z], approximate: tanh}\n"
	"outputs:\n  o: {dtype: bf16}\nschedule: {consumers: pingpong}\n";

#endif
