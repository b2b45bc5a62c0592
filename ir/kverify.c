/*
 * kverify.c: the kernel IR verifier, run after every kernel pass.
 *
 * Invariants (docs/ir.md): ids of buffers, params, barriers and variables
 * are in range; loops have bounds and a variable; every variable is assigned
 * (by a let, a loop or a size param) before it is used in program order;
 * a TMA load names a tile buffer and, once circular buffering has run, a
 * barrier; an offset into a buffer copy keeps TMA's alignment (kbuf_copy's,
 * 16 bytes for a bulk copy); circular-buffer info is sane (0 <= P < S, S equals the stages of
 * every buffer loaded in the loop); a CTA-wide barrier never appears inside
 * warp-specialized roles (it would deadlock: the branches have other counts).
 */
#include <string.h>

#include "ir.h"

typedef struct Check {
	Comp *c;
	const Kernel *k;
	const char *after;
	bool *defined;
	int in_roles;
	int err;
} Check;

static void
fail(Check *v, const char *what)
{
	if (!v->err)
		diag_internal(v->c, "kernel verifier", "after pass '%s': %s", v->after, what);
	v->err = 1;
}

static void
check_expr(Check *v, const Expr *e)
{
	if (!e || v->err)
		return;
	if (e->kind == EX_VAR) {
		if (e->var <= 0 || e->var >= v->k->nvar)
			fail(v, "variable id out of range");
		else if (!v->defined[e->var])
			fail(v, arena_printf(v->c->arena, "variable '%s' used before it is set",
			                     v->k->var[e->var].name));
		return;
	}
	check_expr(v, e->a);
	check_expr(v, e->b);
}

/*
 * The largest power of two (up to 2^20) every value of E is a multiple of:
 * alignments are powers of two, so that is all the offset rule needs.
 */
static int64_t
pow2_factor(const Expr *e)
{
	enum { ANY = 1 << 20 };
	int64_t a, b;

	switch (e->kind) {
	case EX_INT:
		a = e->ival < 0 ? -e->ival : e->ival;
		return a == 0 || (a & -a) > ANY ? ANY : a & -a;
	case EX_MUL:
		a = pow2_factor(e->a) * pow2_factor(e->b);
		return a > ANY ? ANY : a;
	case EX_ADD:
	case EX_SUB:
		a = pow2_factor(e->a);
		b = pow2_factor(e->b);
		return a < b ? a : b;
	default:
		return 1;
	}
}

static void
check_stmt(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int i;

	if (!s || v->err)
		return;
	switch (s->kind) {
	case ST_LOOP:
		if (s->var <= 0 || s->var >= k->nvar || !s->lo || !s->hi)
			fail(v, "loop without variable or bounds");
		check_expr(v, s->lo);
		check_expr(v, s->hi);
		if (s->cb && (s->cb->prefetch < 0 || s->cb->prefetch >= s->cb->stages))
			fail(v, "circular buffer with prefetch outside [0, stages)");
		if (s->var > 0 && s->var < k->nvar)
			v->defined[s->var] = true;
		break;
	case ST_LET:
		check_expr(v, s->a);
		if (s->var <= 0 || s->var >= k->nvar)
			fail(v, "let of a bad variable");
		else
			v->defined[s->var] = true;
		break;
	case ST_TMA_LOAD:
	case ST_TMA_STORE:
		if (s->buf <= 0 || s->buf >= k->nbuf || s->param <= 0 || s->param >= k->nparam)
			fail(v, "TMA statement with a bad buffer or param");
		else if (s->kind == ST_TMA_LOAD && k->buf[s->buf].kind != BUF_TILE)
			fail(v, "TMA load into a buffer that is not a tile buffer");
		else if (k->buf[s->buf].full_bar && s->bar != k->buf[s->buf].full_bar && s->kind == ST_TMA_LOAD)
			fail(v, "TMA load completes on a barrier other than its buffer's");
		else if (k->param[s->param].kind != PK_TMAP && k->param[s->param].kind != PK_PTR)
			fail(v, "TMA statement on a param that is neither a tensor map nor a pointer");
		else if (s->off && pow2_factor(s->off) * dtype_info[k->buf[s->buf].dtype].bytes %
		                   (k->param[s->param].kind == PK_TMAP ? kbuf_copy(&k->buf[s->buf]).align : 16))
			fail(v, "TMA statement at an offset into its copy that may break its alignment");
		check_expr(v, s->a);
		check_expr(v, s->b);
		check_expr(v, s->slot);
		check_expr(v, s->off);
		break;
	case ST_MBAR_INIT:
	case ST_MBAR_ARRIVE:
	case ST_MBAR_WAIT:
	case ST_EXPECT_TX:
		if (s->bar <= 0 || s->bar >= k->nbar)
			fail(v, "mbarrier statement with a bad barrier");
		check_expr(v, s->barslot);
		check_expr(v, s->a);
		break;
	case ST_SYNC:
		if (s->n == 0 && v->in_roles)
			fail(v, "__syncthreads inside warp-specialized roles");
		break;
	case ST_IF:
		check_expr(v, s->cond);
		break;
	case ST_COMPUTE:
		check_expr(v, s->a);
		check_expr(v, s->b);
		check_expr(v, s->pass);
		if ((s->phase != ROW_WHOLE) != (k->row_chunk > 0))
			fail(v, "a compute's row phase does not match the kernel's row mode");
		for (i = 0; i < s->nreads; i++)
			check_expr(v, s->reads[i].slot);
		break;
	default:
		break;
	}
	if (s->kind == ST_ROLES)
		v->in_roles++;
	for (i = 0; i < s->nbody; i++)
		check_stmt(v, s->body[i]);
	check_stmt(v, s->orelse);
	if (s->kind == ST_ROLES)
		v->in_roles--;
}

int
kernel_verify(Comp *c, const Kernel *k, const char *after)
{
	Check v = {0};
	int i;

	v.c = c;
	v.k = k;
	v.after = after;
	v.defined = arena_alloc(c->arena, (size_t)k->nvar * sizeof *v.defined);
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_SIZE && k->param[i].var > 0 && k->param[i].var < k->nvar)
			v.defined[k->param[i].var] = true;
	for (i = 1; i < k->nbuf; i++)
		if (k->buf[i].stages < 1 || k->buf[i].param <= 0 || k->buf[i].param >= k->nparam)
			fail(&v, "buffer without stages or param");
		else if (k->buf[i].swizzle != 0 && k->buf[i].swizzle != 32 && k->buf[i].swizzle != 64 &&
		         k->buf[i].swizzle != 128)
			fail(&v, "buffer swizzle is not 0, 32, 64 or 128 bytes");
	check_stmt(&v, k->body);
	return v.err ? -1 : 0;
}
