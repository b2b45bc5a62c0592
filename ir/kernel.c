/*
 * kernel.c: the kernel IR: constructors, the family plans' accessors
 * (kernel_row, kernel_mm, kernel_pw) and the consumer order's
 * (kernel_consumer_groups), expression substitution, statement cloning and
 * the buffer-access queries the passes reason with.
 *
 * Expressions are immutable once built, so they may be shared between
 * statements; statements are owned by one parent and cloned, never shared.
 */
#include <string.h>

#include "ir.h"

Kernel *
kernel_new(Comp *c, Fusion *f)
{
	Kernel *k = arena_alloc(c->arena, sizeof *k);

	k->name = f->name;
	k->fusion = f;
	k->family = f->family;
	VEC_PUSH(c->arena, k->param, k->nparam, k->capparam);
	VEC_PUSH(c->arena, k->buf, k->nbuf, k->capbuf);
	VEC_PUSH(c->arena, k->bar, k->nbar, k->capbar);
	VEC_PUSH(c->arena, k->var, k->nvar, k->capvar);
	VEC_PUSH(c->arena, k->acc, k->nacc, k->capacc);
	VEC_PUSH(c->arena, k->role, k->nrole, k->caprole);
	k->body = st_block(c);
	if (k->family == FAM_MATMUL)
		k->mm = matmul_none;
	return k;
}

const MatmulPlan matmul_none = {.cluster = {1, 1}, .ksize.splits = 1, .row_blocks = 1};

const RowPlan *
kernel_row(const Kernel *k)
{
	static const RowPlan none;

	return k->family == FAM_REDUCTION ? &k->row : &none;
}

const MatmulPlan *
kernel_mm(const Kernel *k)
{
	return k->family == FAM_MATMUL ? &k->mm : &matmul_none;
}

int
kernel_work_slot(const Kernel *k)
{
	return k->family == FAM_POINTWISE ? k->pw.slot : k->family == FAM_REDUCTION ? k->row.slot :
	       kernel_mm(k)->ksize.sk_slot;
}

const PointwisePlan *
kernel_pw(const Kernel *k)
{
	static const PointwisePlan none;

	return k->family == FAM_POINTWISE ? &k->pw : &none;
}

/* What each way of meeting builds (ir.h KSumRule); lower_matmul_ksum.c builds it. */
const char *const stmt_name[ST_COUNT] = {
#define ST(id, name, ...) [ST_##id] = name,
#include "stmts.h"
#undef ST
};

#define FAM_GENERIC FAM_NONE
const Family stmt_owner[ST_COUNT] = {
#define ST(id, name, owner, ...) [ST_##id] = FAM_##owner,
#include "stmts.h"
#undef ST
};
#undef FAM_GENERIC

const KSumRule ksum_rule[] = {
	[KSUM_NONE] = {0},
	[KSUM_SPLIT_RANK0] = {.partial = true, .split_cluster = true},
	[KSUM_SPLIT_SCATTER] = {.partial = true, .split_cluster = true,
	                        .own_compute = "this rank's subtile: it holds the cluster's sum of it",
	                        .own_store = "this rank's subtile: one thread stores it"},
	[KSUM_SK_OWNER] = {.partial = true, .workspace = true},
	[KSUM_SK_SCATTER] = {.partial = true, .workspace = true,
	                     .own_compute = "this part's subtile: it holds the tile's sum of it",
	                     .own_store = "this part's subtile: one thread stores it"},
};

int
kernel_cluster_ctas(const Kernel *k)
{
	const MatmulPlan *m = kernel_mm(k);

	return m->cluster[0] * m->cluster[1] * m->ksize.splits;
}

int
kernel_share_ctas(const Kernel *k)
{
	return kernel_mm(k)->cluster[0] * kernel_mm(k)->cluster[1];
}

int
kernel_add_var(Comp *c, Kernel *k, const char *name)
{
	VEC_PUSH(c->arena, k->var, k->nvar, k->capvar)->name = name;
	return k->nvar - 1;
}

int
kernel_add_param(Comp *c, Kernel *k, ParamKind kind, const char *name)
{
	KParam *p = VEC_PUSH(c->arena, k->param, k->nparam, k->capparam);

	p->kind = kind;
	p->name = name;
	p->arg = -1;
	return k->nparam - 1;
}

int
kernel_add_map(Comp *c, Kernel *k, int ptr, int rows, int cols)
{
	const KParam x = k->param[ptr];   /* a copy: adding a param may move the table */
	int p = kernel_add_param(c, k, PK_TMAP, x.name);

	k->param[p] = x;
	k->param[p].kind = PK_TMAP;
	k->param[p].box[0] = rows;
	k->param[p].box[1] = cols;
	return p;
}

int64_t
kernel_param_bytes(const Kernel *k, int n)
{
	int64_t end = 0;
	int i;

	for (i = 1; i < n; i++)
		end = k->param[i].kind == PK_TMAP ? (end + 63) / 64 * 64 + 128 : end + 8;
	return end;
}

int
kernel_add_buf(Comp *c, Kernel *k, const char *name, BufKind kind, Dtype dt, int rows, int cols)
{
	KBuf *b = VEC_PUSH(c->arena, k->buf, k->nbuf, k->capbuf);

	b->name = name;
	b->kind = kind;
	b->dtype = dt;
	b->rows = rows;
	b->cols = cols;
	b->stages = 1;
	return k->nbuf - 1;
}

int
kernel_add_bar(Comp *c, Kernel *k, const char *name, int count, int arrivals)
{
	KBar *b = VEC_PUSH(c->arena, k->bar, k->nbar, k->capbar);

	b->name = name;
	b->count = count;
	b->arrivals = arrivals;
	return k->nbar - 1;
}

int
kernel_add_acc(Comp *c, Kernel *k, const char *name, Dtype dt, int rows, int cols)
{
	KAcc *a = VEC_PUSH(c->arena, k->acc, k->nacc, k->capacc);

	a->name = name;
	a->dtype = dt;
	a->rows = rows;
	a->cols = cols;
	return k->nacc - 1;
}

int
kernel_add_role(Comp *c, Kernel *k, RoleKind kind, int first, int threads, int groups)
{
	KRole *r = VEC_PUSH(c->arena, k->role, k->nrole, k->caprole);
	int i, id = 0;

	r->kind = kind;
	r->first = first;
	r->threads = threads;
	r->groups = groups;
	if (kind == ROLE_CONSUMER) {
		for (i = 1; i < k->nrole - 1; i++)
			if (k->role[i].bar_id + k->role[i].groups - 1 > id)
				id = k->role[i].bar_id + k->role[i].groups - 1;
		r->bar_id = id + 1;
	}
	return k->nrole - 1;
}

int
kernel_consumer_groups(const Kernel *k)
{
	int i;

	for (i = 1; i < k->nrole; i++)
		if (k->role[i].kind == ROLE_CONSUMER)
			return k->role[i].groups;
	return kernel_mm(k)->pingpong ? 2 : 1;
}

CopyLayout
kbuf_copy(const KBuf *b)
{
	CopyLayout l;

	l.bytes = (int64_t)b->rows * b->cols * dtype_info[b->dtype].bytes;
	l.align = b->swizzle ? 1024 : 128;
	l.stride = (l.bytes + l.align - 1) / l.align * l.align;
	return l;
}

int64_t
kernel_buf_offset(const Kernel *k, int buf)
{
	int64_t off = 0;
	int i;

	for (i = 1; i <= buf && i < k->nbuf; i++) {
		CopyLayout l = kbuf_copy(&k->buf[i]);

		off = (off + l.align - 1) / l.align * l.align;
		if (i < buf)
			off += l.stride * k->buf[i].stages;
	}
	return off;
}

bool
kernel_loads_from(const Kernel *k, const Stmt *s, int buf, int p)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_LOAD && s->u.tma.param == p && (!buf || s->u.tma.buf == buf))
		return true;
	for (i = 0; i < s->nbody; i++)
		if (kernel_loads_from(k, s->body[i], buf, p))
			return true;
	return kernel_loads_from(k, st_else(s), buf, p);
}

int64_t
kernel_smem_bytes(const Kernel *k)
{
	int64_t bytes = kernel_buf_offset(k, k->nbuf);
	int i;

	for (i = 1; i < k->nbar; i++)
		bytes += 8 * k->bar[i].count;
	return bytes;
}

Expr *
ex_int(Comp *c, int64_t v)
{
	Expr *e = arena_alloc(c->arena, sizeof *e);

	e->kind = EX_INT;
	e->ival = v;
	return e;
}

Expr *
ex_var(Comp *c, int var)
{
	Expr *e = arena_alloc(c->arena, sizeof *e);

	e->kind = EX_VAR;
	e->var = var;
	return e;
}

Expr *
ex_leaf(Comp *c, ExprKind kind)
{
	Expr *e = arena_alloc(c->arena, sizeof *e);

	e->kind = kind;
	return e;
}

/* Folds constants and the identities the passes produce all the time (i + 0, i * 1). */
Expr *
ex_bin(Comp *c, ExprKind kind, Expr *a, Expr *b)
{
	Expr *e;

	if (a->kind == EX_INT && b->kind == EX_INT && b->ival != 0) {
		int64_t x = a->ival, y = b->ival;

		switch (kind) {
		case EX_ADD: return ex_int(c, x + y);
		case EX_SUB: return ex_int(c, x - y);
		case EX_MUL: return ex_int(c, x * y);
		case EX_DIV: return ex_int(c, x / y);
		case EX_MOD: return ex_int(c, x % y);
		case EX_MIN: return ex_int(c, x < y ? x : y);
		case EX_MAX: return ex_int(c, x > y ? x : y);
		case EX_SHL: return ex_int(c, x << y);
		default: break;
		}
	}
	if ((kind == EX_ADD || kind == EX_SUB || kind == EX_SHL) && b->kind == EX_INT && b->ival == 0)
		return a;
	if (kind == EX_ADD && a->kind == EX_INT && a->ival == 0)
		return b;
	if ((kind == EX_MUL || kind == EX_DIV) && b->kind == EX_INT && b->ival == 1)
		return a;
	if (kind == EX_MOD && b->kind == EX_INT && b->ival == 1)
		return ex_int(c, 0);
	if (kind == EX_CEILDIV && b->kind == EX_INT && b->ival == 1)
		return a;
	/* (x / m) * m + x % m == x: a merged loop's index split in two and put back together */
	if (kind == EX_ADD && a->kind == EX_MUL && b->kind == EX_MOD && a->a->kind == EX_DIV &&
	    ex_equal(a->a->a, b->a) && ex_equal(a->a->b, a->b) && ex_equal(a->b, b->b))
		return b->a;
	/* (x + k*m) % m == x % m: keeps stage indices like (i + S) % S readable */
	if (kind == EX_MOD && b->kind == EX_INT && a->kind == EX_ADD && a->b->kind == EX_INT &&
	    b->ival > 0 && a->b->ival % b->ival == 0)
		return ex_bin(c, EX_MOD, a->a, b);
	e = arena_alloc(c->arena, sizeof *e);
	e->kind = kind;
	e->a = a;
	e->b = b;
	return e;
}

Expr *
ex_subst(Comp *c, const Expr *e, int var, Expr *with)
{
	if (!e)
		return NULL;
	if (e->kind == EX_VAR)
		return e->var == var ? with : (Expr *)e;
	if (!e->a)
		return (Expr *)e;
	if (!ex_uses_var(e, var))
		return (Expr *)e;
	return ex_bin(c, e->kind, ex_subst(c, e->a, var, with), ex_subst(c, e->b, var, with));
}

Expr *
ex_inline_lets(Comp *c, const Stmt *block, Expr *e)
{
	int i;

	for (i = block->nbody - 1; i >= 0; i--)
		if (block->body[i]->kind == ST_LET)
			e = ex_subst(c, e, block->body[i]->u.let.var, block->body[i]->u.let.value);
	return e;
}

bool
ex_uses_var(const Expr *e, int var)
{
	if (!e)
		return false;
	if (e->kind == EX_VAR)
		return e->var == var;
	return ex_uses_var(e->a, var) || ex_uses_var(e->b, var);
}

Stmt *
st_new(Comp *c, StmtKind kind)
{
	Stmt *s = arena_alloc(c->arena, sizeof *s);

	s->kind = kind;
	return s;
}

Stmt *
st_block(Comp *c)
{
	return st_new(c, ST_BLOCK);
}

void
st_append(Comp *c, Stmt *block, Stmt *s)
{
	*VEC_PUSH(c->arena, block->body, block->nbody, block->capbody) = s;
}

void
st_insert(Comp *c, Stmt *block, int i, Stmt *s)
{
	st_append(c, block, s);
	memmove(&block->body[i + 1], &block->body[i], (size_t)(block->nbody - 1 - i) * sizeof *block->body);
	block->body[i] = s;
}

Stmt *
st_loop(Comp *c, int var, Expr *lo, Expr *hi, LoopKind kind)
{
	Stmt *s = st_new(c, ST_LOOP);

	s->u.loop.var = var;
	s->u.loop.lo = lo;
	s->u.loop.hi = hi;
	s->u.loop.kind = kind;
	return s;
}

Stmt *
st_if(Comp *c, Expr *cond)
{
	Stmt *s = st_new(c, ST_IF);

	s->u.branch.cond = cond;
	return s;
}

Stmt *
st_else(const Stmt *s)
{
	return s && s->kind == ST_IF ? s->u.branch.orelse : NULL;
}

int
st_exprs(Stmt *s, Expr **x[ST_MAX_EXPRS])
{
	int n = 0;

#define X(f) (x[n++] = &s->u.f)
	switch (s->kind) {
	case ST_LOOP:
		X(loop.lo), X(loop.hi), X(loop.step), X(loop.lin);
		break;
	case ST_IF:
		X(branch.cond);
		break;
	case ST_LET:
		X(let.value);
		break;
	case ST_TMA_LOAD:
	case ST_TMA_STORE:
	case ST_TMA_PREFETCH:
	case ST_EXCHANGE:
		X(tma.slot), X(tma.off), X(tma.row), X(tma.col), X(tma.batch), X(tma.mcast), X(tma.barslot), X(tma.cond);
		break;
	case ST_EXPECT_TX:
	case ST_MBAR_INIT:
	case ST_MBAR_ARRIVE:
	case ST_MBAR_WAIT:
		X(mbar.barslot), X(mbar.parity), X(mbar.more), X(mbar.lin);
		break;
	case ST_SYNC:
		X(sync.id_expr);
		break;
	case ST_COMPUTE:
		X(compute.row), X(compute.col), X(compute.batch), X(compute.pass), X(compute.step);
		break;
	case ST_MMA:
		X(mma.zero_if);
		break;
	case ST_FLAG_WAIT:
		X(flag_wait.word), X(flag_wait.cond);
		break;
	case ST_SPLIT_REDUCE:
		X(split.parity), X(split.ranks);
		break;
	case ST_SK_STORE:
	case ST_SK_REDUCE:
		X(sk.cond), X(sk.part), X(sk.parts);
		break;
	case ST_ROW_FETCH:
	case ST_ROW_PUT:
		X(row_copy.col), X(row_copy.slot);
		break;
	case ST_SIGNAL:
		X(signal.tile), X(signal.barslot);
		break;
	default:
		break;
	}
#undef X
	return n;
}

static Access *
clone_access(Comp *c, const Access *a, int n, int var, Expr *with)
{
	Access *r;
	int i;

	if (!n)
		return NULL;
	r = arena_alloc(c->arena, (size_t)n * sizeof *r);
	for (i = 0; i < n; i++) {
		r[i] = a[i];
		r[i].slot = ex_subst(c, a[i].slot, var, with);
	}
	return r;
}

Stmt *
st_clone(Comp *c, const Stmt *s, int var, Expr *with)
{
	Expr **x[ST_MAX_EXPRS];
	Stmt *r;
	int i, n;

	if (!s)
		return NULL;
	r = st_new(c, s->kind);
	*r = *s;
	r->body = NULL;
	r->nbody = r->capbody = 0;
	for (i = 0; i < s->nbody; i++)
		st_append(c, r, st_clone(c, s->body[i], var, with));
	if (s->kind == ST_IF)
		r->u.branch.orelse = st_clone(c, s->u.branch.orelse, var, with);
	if (s->kind == ST_LOOP && s->u.loop.cb) {
		r->u.loop.cb = arena_alloc(c->arena, sizeof *r->u.loop.cb);
		*r->u.loop.cb = *s->u.loop.cb;
	}
	n = st_exprs(r, x);
	for (i = 0; i < n; i++)
		*x[i] = ex_subst(c, *x[i], var, with);
	r->reads = clone_access(c, s->reads, s->nreads, var, with);
	r->capreads = s->nreads;
	r->writes = clone_access(c, s->writes, s->nwrites, var, with);
	r->capwrites = s->nwrites;
	return r;
}

bool
ex_equal(const Expr *a, const Expr *b)
{
	if (!a || !b)
		return a == b;
	if (a->kind != b->kind || a->ival != b->ival || a->var != b->var || a->u32 != b->u32)
		return false;
	return ex_equal(a->a, b->a) && ex_equal(a->b, b->b);
}

bool
ex_is_int(const Expr *e, int64_t v)
{
	return e && e->kind == EX_INT && e->ival == v;
}

/*
 * A 32-bit division of X (below 2^32) by the constant S: Expr.u32.  A
 * 64-bit division by a constant that is not a power of two is a chain of
 * 64-bit multiplies, which a matmul's k loop ran several times a k-step.
 */
static Expr *
div32(Comp *c, ExprKind kind, Expr *x, int S)
{
	Expr *e = ex_bin(c, kind, x, ex_int(c, S));

	if (e->kind == kind)
		e->u32 = true;
	return e;
}

/*
 * A matmul's stage counter LIN over S stages that are not a power of two,
 * as Q + V, Q = OUTER * TRIPS (stage_counter's: the k-steps of the tiles
 * before) and V a variable: the k loop's index, or its trip count after
 * the last step.  Q is the same through the k loop, so divided once a tile
 * (ptxas hoists it), and Q % S + V is below 2^32: a k loop runs at most
 * 2^26 times (K is at most TMA's 2^32 elements, 64 a k-step), a loop over
 * tiles fewer than 2^31 (launch.c refuses more tiles).  False otherwise: a
 * power of two (a mask), the other families (emit_reduction reads the
 * counter back from its slot lin % S), a counter that is a variable alone
 * (a producer's merged loop over all of a CTA's k-steps, which nothing
 * bounds below 2^32), or another shape.  Not stream-K's kbase + kk: split
 * so it ran slower, for no reason its k loop shows (docs/perf_history.md).
 * Sets *Q and *U = Q % S + V.
 */
static bool
split_counter(Comp *c, const Kernel *k, Expr *lin, int S, Expr **q, Expr **u)
{
	if (k->family != FAM_MATMUL || S <= 1 || !(S & (S - 1)) || lin->kind != EX_ADD || lin->a->kind != EX_MUL ||
	    lin->b->kind != EX_VAR)
		return false;
	*q = lin->a;
	*u = ex_bin(c, EX_ADD, ex_bin(c, EX_MOD, lin->a, ex_int(c, S)), lin->b);
	return true;
}

/*
 * The slot (LIN + OFF) % S of stage counter LIN over S stages in kernel K
 * (OFF >= 0).  Split (split_counter): (Q % S + V + OFF) % S in 32 bits.
 */
Expr *
ex_stage_slot(Comp *c, const Kernel *k, Expr *lin, int64_t off, int S)
{
	Expr *q, *u;

	off %= S;
	if (!split_counter(c, k, lin, S, &q, &u))
		return ex_bin(c, EX_MOD, ex_bin(c, EX_ADD, lin, ex_int(c, off)), ex_int(c, S));
	return div32(c, EX_MOD, ex_bin(c, EX_ADD, u, ex_int(c, off)), S);
}

/*
 * The phase (LIN / S) & 1 of stage counter LIN over S stages.  Split
 * (split_counter): (Q / S + (Q % S + V) / S) & 1, the second in 32 bits.
 */
Expr *
ex_stage_parity(Comp *c, const Kernel *k, Expr *lin, int S)
{
	Expr *q, *u, *n;

	if (!split_counter(c, k, lin, S, &q, &u))
		return ex_bin(c, EX_AND, ex_bin(c, EX_DIV, lin, ex_int(c, S)), ex_int(c, 1));
	n = ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, q, ex_int(c, S)), div32(c, EX_DIV, u, S));
	return ex_bin(c, EX_AND, n, ex_int(c, 1));
}

CbInfo *
kernel_pipe_of(const Kernel *k, int bar)
{
	int i;

	for (i = 0; i < k->npipe; i++)
		if (k->pipe[i]->full_bar == bar)
			return k->pipe[i];
	return NULL;
}

Stmt *
st_first(const Stmt *s, StmtKind kind)
{
	Stmt *x;
	int i;

	if (!s)
		return NULL;
	if (s->kind == kind)
		return (Stmt *)s;
	for (i = 0; i < s->nbody; i++)
		if ((x = st_first(s->body[i], kind)))
			return x;
	return st_first(st_else(s), kind);
}

bool
st_reads_buf(const Stmt *s, int buf)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_STORE && s->u.tma.buf == buf)
		return true;
	for (i = 0; i < s->nreads; i++)
		if (s->reads[i].buf == buf)
			return true;
	for (i = 0; i < s->nbody; i++)
		if (st_reads_buf(s->body[i], buf))
			return true;
	return st_reads_buf(st_else(s), buf);
}

bool
st_writes_buf(const Stmt *s, int buf)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_LOAD && s->u.tma.buf == buf)
		return true;
	for (i = 0; i < s->nwrites; i++)
		if (s->writes[i].buf == buf)
			return true;
	for (i = 0; i < s->nbody; i++)
		if (st_writes_buf(s->body[i], buf))
			return true;
	return st_writes_buf(st_else(s), buf);
}

Expr *
kir_bulk_bytes(Comp *c, const Kernel *k, const Stmt *ld)
{
	const KBuf *b;
	Expr *left;

	if ((ld->kind != ST_TMA_LOAD && ld->kind != ST_TMA_STORE) || k->param[ld->u.tma.param].kind != PK_PTR)
		return NULL;
	/* the segment [col, min(col + copy cols, cols)) of the row */
	b = &k->buf[ld->u.tma.buf];
	left = ex_bin(c, EX_SUB, ex_var(c, k->cols_var), ld->u.tma.col);
	return ex_bin(c, EX_MUL, ex_bin(c, EX_MIN, ex_int(c, b->cols), left),
	              ex_int(c, dtype_info[b->dtype].bytes));
}

/* The op that defines value tensor T, or NULL for an input. */
static const Op *
def_op(const Fusion *f, int t)
{
	return t && f->tensor[t].kind == TK_VALUE ? &f->op[f->tensor[t].def] : NULL;
}

/*
 * Can reduction O run in one pass with an earlier reduction m of the same
 * row?  Then m's tensor, else 0.  Two shapes:
 *   sum(exp(a - m)), m = max(a): online softmax (a running max, the sum
 *     rescaled when it grows);
 *   mean((a - m) * (a - m)), m = mean(a): the variance from each thread's
 *     count, mean and sum of squared deviations (Welford), merged across the
 *     CTA as Chan et al. do.
 */
static int
one_pass_with(const Fusion *f, const Op *o)
{
	const Op *x = def_op(f, o->in[0].tensor), *sub, *m;

	if (!x)
		return 0;
	if (o->kind == OP_SUM && x->kind == OP_EXP)
		sub = def_op(f, x->in[0].tensor);
	else if (o->kind == OP_MEAN && x->kind == OP_MUL && x->in[0].tensor && x->in[0].tensor == x->in[1].tensor)
		sub = def_op(f, x->in[0].tensor);
	else
		return 0;
	if (!sub || sub->kind != OP_SUB || !sub->in[0].tensor || !(m = def_op(f, sub->in[1].tensor)))
		return 0;
	if (m->in[0].tensor != sub->in[0].tensor || m->kind != (o->kind == OP_SUM ? OP_MAX : OP_MEAN))
		return 0;
	return sub->in[1].tensor;
}

bool
kir_row_kept(const Fusion *f, int t)
{
	const Op *o;

	if (f->tensor[t].kind != TK_VALUE)
		return true;
	o = &f->op[f->tensor[t].def];
	if (op_info[o->kind].cls == CLS_VIEW)   /* a view of an input: a load too */
		return true;
	switch (o->kind) {
	case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH:
	case OP_SIGMOID: case OP_SILU: case OP_GELU:
	case OP_RAND_LIKE:   /* ten rounds of Philox a block of four */
		return true;
	case OP_DIV:
		return o->in[1].tensor != 0;
	default:
		return false;
	}
}

bool
op_over_rows(const Fusion *f, const Op *o)
{
	int rank = f->tensor[o->in[0].tensor].rank;

	return op_info[o->kind].cls == CLS_REDUCE && rank >= 2 && o->axis == 0 && op_naxes(o) == rank - 1;
}

int
kir_row_levels(const Fusion *f, const View *view, bool chunked, int *level, int *online)
{
	int i, j, maxl = 0;

	for (i = 0; i < f->ntensor; i++) {
		level[i] = 0;
		if (online)
			online[i] = 0;
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		int l = 0, m = chunked ? one_pass_with(f, o) : 0;

		for (j = 1; j < i && m; j++)  /* one partner a reduction: the first */
			if (one_pass_with(f, &f->op[j]) == m)
				m = 0;
		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor && level[o->in[j].tensor] > l)
				l = level[o->in[j].tensor];
		level[o->out] = m ? level[m] : l + (op_info[o->kind].cls == CLS_REDUCE && !(view && view[o->out] == VIEW_REDUCED));
		if (online)
			online[o->out] = m;
		if (level[o->out] > maxl)
			maxl = level[o->out];
	}
	return maxl;
}

void
st_walk(Stmt *s, void (*fn)(Stmt *s, void *user), void *user)
{
	int i;

	if (!s)
		return;
	fn(s, user);
	for (i = 0; i < s->nbody; i++)
		st_walk(s->body[i], fn, user);
	st_walk(st_else(s), fn, user);
}
