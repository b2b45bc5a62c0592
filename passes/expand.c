/*
 * expand.c: composite ops -> primitives.  Requires a fusion from the front
 * end; leaves no COMPOSITE op; breaks nothing.
 *
 * Contract.  Requires: a fusion from the front end.  Guarantees: no op of
 * class COMPOSITE remains; every new op keeps the composite's position and
 * names it as its origin, so errors and generated code point at the spec line
 * the user wrote; the composite's output tensor keeps its name and id and is
 * defined by the last op of its expansion.  Invalidates nothing (runs first).
 *
 *   softmax(x)          m = max(x); d = x - m; e = exp(d); s = sum(e); out = e / s
 *   layernorm(x, w, b)  mu = mean(x); xc = x - mu; var = mean(xc * xc);
 *                       r = rsqrt(var + eps); out = xc * r [* w] [+ b]
 *   rmsnorm(x, w, b)    ms = mean(x * x); r = rsqrt(ms + eps); out = x * r [* w] [+ b]
 *   min(x)              n = -x; m = max(n); out = -m
 *   logsumexp(x)        m = max(x); e = exp(x - m); s = sum(e); out = log(s) + m
 *   var(x), std(x)      mu = mean(x); d2 = (x - mu)^2; v = mean(d2) (correction 0), else
 *                       sum(d2) / (sum(ones) - correction); std = sqrt(v)
 *   log_softmax(x)      d = x - max(x); out = d - log(sum(exp(d)))
 * The reductions run over the composite's axis with keepdim, so the results
 * broadcast back over x; those whose result is the composite's (min's max,
 * logsumexp's sum and, without keepdim, a second max) keep its keepdim.
 * Temporaries are named "OUT.step", which cannot clash with spec names
 * (those are identifiers).
 */
#include <math.h>
#include <string.h>

#include "passes.h"

typedef struct Expander {
	Comp *c;
	Fusion *f;       /* the fusion being rebuilt */
	Op *old;         /* the composite being expanded */
	Op *ops;         /* the new op array */
	int nops, capops;
} Expander;

static Operand
tensor_operand(int t, Pos p)
{
	Operand o = {0};

	o.tensor = t;
	o.pos = p;
	return o;
}

/*
 * Appends op KIND(A, B) to the new array.  OUT is the tensor it defines, or 0
 * for a fresh temporary called "<composite out>.<step>".  Returns its tensor.
 */
static int
add_op(Expander *x, OpKind kind, const char *step, int out, Operand a, Operand *b)
{
	Fusion *f = x->f;
	Op *o;
	int id;

	if (!out) {
		const char *name = arena_printf(x->c->arena, "%s.%s", f->tensor[x->old->out].name, step);

		out = fusion_add_tensor(x->c, f, intern_cstr(x->c->strs, name), TK_VALUE, x->old->pos);
	}
	o = VEC_PUSH(x->c->arena, x->ops, x->nops, x->capops);
	id = x->nops - 1;
	o->kind = kind;
	o->out = out;
	o->pos = x->old->pos;
	o->origin = f->tensor[x->old->out].name;
	o->in[0] = a;
	o->nin = 1;
	if (b) {
		o->in[1] = *b;
		o->nin = 2;
	}
	o->axis = x->old->axis;
	o->keepdim = true;
	o->acc = DT_F32;
	o->eps = x->old->eps;
	f->tensor[out].def = id;
	return out;
}

static int
add_binary(Expander *x, OpKind kind, const char *step, int out, int a, Operand b)
{
	return add_op(x, kind, step, out, tensor_operand(a, x->old->pos), &b);
}

static int
add_unary(Expander *x, OpKind kind, const char *step, int out, int a)
{
	return add_op(x, kind, step, out, tensor_operand(a, x->old->pos), NULL);
}

static Operand
literal(double v, Pos p)
{
	Operand o = {0};

	o.lit = v;
	o.pos = p;
	return o;
}

/* The affine tail shared by layernorm and rmsnorm: n * w [+ b] into OUT. */
static void
emit_affine(Expander *x, int n)
{
	Op *o = x->old;
	int out = o->out;

	if (o->nin == 2) {
		add_binary(x, OP_MUL, "scaled", out, n, o->in[1]);
		return;
	}
	n = add_binary(x, OP_MUL, "scaled", 0, n, o->in[1]);
	add_binary(x, OP_ADD, "shifted", out, n, o->in[2]);
}

/*
 * m = max(x), d = x - m, e = exp(d) and their sum, the steps softmax,
 * logsumexp and log_softmax share: the sum.  The max is a shift that each
 * result cancels (logsumexp adds it back), so it is detached: the gradient
 * is softmax's alone, with no pass for the max's ties (Op.detach).
 */
static int
sum_exp_shifted(Expander *x, int xin, int *m, int *d, int *e)
{
	Pos p = x->old->pos;

	*m = add_unary(x, OP_MAX, "max", 0, xin);
	x->ops[x->nops - 1].detach = true;   /* a shift the result does not depend on: no adjoint through it */
	*d = add_binary(x, OP_SUB, "shifted", 0, xin, tensor_operand(*m, p));
	*e = add_unary(x, OP_EXP, "exp", 0, *d);
	return add_unary(x, OP_SUM, "sum", 0, *e);
}

/*
 * cross_entropy(x, label) (torch's F.cross_entropy with reduction='none'):
 * logsumexp(x) less the label's logit, a sum over the row of x times
 * one_hot(label); with label_smoothing e, (1 - e) of that and e of
 * logsumexp(x) less mean(x); 0 where the label is ignore_index.  The classes
 * are x's last dim, so x must be an input (its shape known before
 * inference).  0, or -1 after an error.
 */
/* The reduction just added (its tensor T) over the dims of composite O, with KEEPDIM: T. */
static int
reduce_like(Expander *x, int t, const Op *o, bool keepdim)
{
	Op *r = &x->ops[x->nops - 1];
	int i;

	r->axis = o->axis;
	r->keepdim = keepdim;
	r->ndims = o->ndims;
	for (i = 0; i < o->ndims; i++)
		r->dims[i] = o->dims[i];
	r->dim_pos = o->dim_pos;
	r->attr_pos = o->attr_pos;
	return t;
}

/* where(IGNORED, A, B) into OUT (0: a fresh STEP): its operand. */
static Operand
where_ignored(Expander *x, int ignored, double a, Operand b, const char *step, int out)
{
	Pos p = x->old->pos;

	add_op(x, OP_WHERE, step, out, tensor_operand(ignored, p), NULL);
	x->ops[x->nops - 1].in[1] = literal(a, p);
	x->ops[x->nops - 1].in[2] = b;
	x->ops[x->nops - 1].nin = 3;
	return tensor_operand(x->ops[x->nops - 1].out, p);
}

/* Reduction R over every dim of T (of rank RANK), or T itself for a scalar: its tensor. */
static int
sum_all(Expander *x, int t, int rank, const char *step, int out)
{
	int i;

	if (!rank)
		return t;
	add_unary(x, OP_SUM, step, out, t);
	x->ops[x->nops - 1].keepdim = false;
	x->ops[x->nops - 1].ndims = rank;
	for (i = 0; i < rank; i++)
		x->ops[x->nops - 1].dims[i] = i;
	return x->ops[x->nops - 1].out;
}

/*
 * The composite's output: a row's loss, where IGNORED 0, else NLL
 * (reduction: none); reduction: sum adds the rows' over every dim, mean
 * divides that by the rows not ignored (torch's: NaN when all are).  A
 * row kernel sums them after its rows (RowPlan.outer).
 */
static int
ce_reduce(Expander *x, int ignored, int nll)
{
	Op *o = x->old;
	int rows = x->f->tensor[o->in[0].tensor].rank - 1, loss, total, count;
	Pos p = o->pos;

	loss = where_ignored(x, ignored, 0.0, tensor_operand(nll, p), "loss", o->reduction == 1 ? o->out : 0).tensor;
	if (o->reduction == 1)
		return 0;
	if (o->reduction == 2) {
		if (!rows)   /* one row: its loss is the sum */
			add_binary(x, OP_MUL, "total", o->out, loss, literal(1.0, p));
		else
			sum_all(x, loss, rows, "total", o->out);
		return 0;
	}
	total = sum_all(x, loss, rows, "total", 0);
	count = sum_all(x, where_ignored(x, ignored, 0.0, literal(1.0, p), "valid", 0).tensor, rows, "count", 0);
	add_binary(x, OP_DIV, "mean", o->out, total, tensor_operand(count, p));
	return 0;
}

static int
expand_cross_entropy(Expander *x)
{
	Op *o = x->old;
	const Tensor *xt = &x->f->tensor[o->in[0].tensor];
	int xin = o->in[0].tensor, m, d, e, s, oh, xl, nll, sm;
	Pos p = o->pos;

	if (!xin || !o->in[1].tensor || xt->kind != TK_INPUT || !xt->rank) {
		diag_error(x->c, o->in[0].pos, "cross_entropy takes [logits, labels], the logits an input of rank 1 or more "
		           "(their last dim counts the classes before inference), so far%s",
		           xin && xt->kind != TK_INPUT ? "; these are computed by ops" : "");
		if (xin && xt->kind != TK_INPUT)
			x->c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	oh = add_op(x, OP_ONE_HOT, "one_hot", 0, o->in[1], NULL);
	x->ops[x->nops - 1].nshape = 1;
	x->ops[x->nops - 1].shape[0] = xt->dim[xt->rank - 1];
	s = sum_exp_shifted(x, xin, &m, &d, &e);
	x->ops[x->nops - 1].keepdim = false;
	s = add_unary(x, OP_LOG, "log", 0, s);
	m = add_unary(x, OP_MAX, "max_out", 0, xin);
	x->ops[x->nops - 1].keepdim = false;
	x->ops[x->nops - 1].detach = true;
	s = add_binary(x, OP_ADD, "lse", 0, s, tensor_operand(m, p));
	xl = add_binary(x, OP_MUL, "picked", 0, xin, tensor_operand(oh, p));
	xl = add_unary(x, OP_SUM, "logit", 0, xl);
	x->ops[x->nops - 1].keepdim = false;
	nll = add_binary(x, OP_SUB, "nll", 0, s, tensor_operand(xl, p));
	if (o->correction > 0) {   /* label smoothing: the mean over the classes of -log softmax */
		sm = add_unary(x, OP_MEAN, "mean", 0, xin);
		x->ops[x->nops - 1].keepdim = false;
		sm = add_binary(x, OP_SUB, "smooth", 0, s, tensor_operand(sm, p));
		sm = add_binary(x, OP_MUL, "smooth_part", 0, sm, literal(o->correction, p));
		nll = add_binary(x, OP_MUL, "nll_part", 0, nll, literal(1 - o->correction, p));
		nll = add_binary(x, OP_ADD, "smoothed", 0, nll, tensor_operand(sm, p));
	}
	if (o->z > 0) {   /* z-loss (PaLM's): lse^2 times lse_square_scale */
		sm = add_binary(x, OP_MUL, "lse_square", 0, s, tensor_operand(s, p));
		sm = add_binary(x, OP_MUL, "z_loss", 0, sm, literal(o->z, p));
		nll = add_binary(x, OP_ADD, "with_z", 0, nll, tensor_operand(sm, p));
	}
	e = add_op(x, OP_EQ, "ignored", 0, o->in[1], NULL);
	x->ops[x->nops - 1].in[1] = literal(o->value, p);
	x->ops[x->nops - 1].nin = 2;
	return ce_reduce(x, e, nll);
}

/*
 * var or std of an input over dims other than its last alone (over rows:
 * [T, H].var(0), BatchNorm's statistics; or over every dim): in one pass,
 * as sums a pointwise or row kernel adds across its rows and meets after
 * them, of d = x - k, x shifted by its first element along the reduced
 * dims (a slice of x: close to the mean, so the difference below does not
 * cancel as the raw sums' would), var = (sum(d^2) - sum(d)^2 / n) /
 * (n - correction), n a sum of ones.  A reduction over the last dim alone
 * keeps the two passes over the row.  False when this form does not apply.
 */
static bool
over_rows_var(Expander *x)
{
	Op *o = x->old;
	const Tensor *t = &x->f->tensor[o->in[0].tensor];
	Pos p = o->pos;
	bool dim[MAX_RANK] = {false};
	int i, n = o->ndims ? o->ndims : 1, k, d, s1, s2, cnt, var;

	if (!o->in[0].tensor || t->kind != TK_INPUT || t->rank < 1)
		return false;
	for (i = 0; i < n; i++) {
		int a = o->ndims ? o->dims[i] : o->axis;

		a = a < 0 ? a + t->rank : a;
		if (a < 0 || a >= t->rank)
			return false;   /* (infer reports it) */
		dim[a] = true;
	}
	for (i = 0; i < t->rank && dim[i]; i++)
		;
	if (dim[t->rank - 1] && i < t->rank)   /* the last dim, not every dim: a row's */
		return false;
	k = o->in[0].tensor;
	for (i = 0; i < t->rank; i++)
		if (dim[i]) {
			k = add_unary(x, OP_SLICE, arena_printf(x->c->arena, "first%d", i), 0, k);
			x->ops[x->nops - 1].axis = i;
			x->ops[x->nops - 1].start = 0;
			x->ops[x->nops - 1].end = 1;
			x->ops[x->nops - 1].step = 1;
		}
	d = add_binary(x, OP_SUB, "shifted", 0, o->in[0].tensor, tensor_operand(k, p));
	s1 = reduce_like(x, add_unary(x, OP_SUM, "sum", 0, d), o, o->keepdim);
	s2 = add_binary(x, OP_MUL, "square", 0, d, tensor_operand(d, p));
	s2 = reduce_like(x, add_unary(x, OP_SUM, "sum_sq", 0, s2), o, o->keepdim);
	cnt = add_binary(x, OP_EQ, "same", 0, o->in[0].tensor, tensor_operand(o->in[0].tensor, p));
	cnt = add_op(x, OP_WHERE, "ones", 0, tensor_operand(cnt, p), NULL);
	x->ops[x->nops - 1].in[1] = x->ops[x->nops - 1].in[2] = literal(1.0, p);
	x->ops[x->nops - 1].nin = 3;
	cnt = reduce_like(x, add_unary(x, OP_SUM, "n", 0, cnt), o, o->keepdim);
	s1 = add_binary(x, OP_MUL, "sum_squared", 0, s1, tensor_operand(s1, p));
	s1 = add_binary(x, OP_DIV, "sum_squared_n", 0, s1, tensor_operand(cnt, p));
	s2 = add_binary(x, OP_SUB, "deviations", 0, s2, tensor_operand(s1, p));
	if (o->correction != 0)
		cnt = add_binary(x, OP_SUB, "dof", 0, cnt, literal(o->correction, p));
	var = add_binary(x, OP_DIV, "var", o->kind == OP_VAR ? o->out : 0, s2, tensor_operand(cnt, p));
	if (o->kind == OP_STD)
		add_unary(x, OP_SQRT, "std", o->out, var);
	return true;
}

static void
expand_one(Expander *x)
{
	Op *o = x->old;
	int xin = o->in[0].tensor, m, d, e, s, mu, xc, var, r, n;
	Pos p = o->pos;

	switch (o->kind) {
	case OP_SOFTMAX:
		s = sum_exp_shifted(x, xin, &m, &d, &e);
		add_binary(x, OP_DIV, "div", o->out, e, tensor_operand(s, p));
		break;
	case OP_LAYERNORM:
		mu = add_unary(x, OP_MEAN, "mean", 0, xin);
		xc = add_binary(x, OP_SUB, "centered", 0, xin, tensor_operand(mu, p));
		s = add_binary(x, OP_MUL, "square", 0, xc, tensor_operand(xc, p));
		var = add_unary(x, OP_MEAN, "var", 0, s);
		var = add_binary(x, OP_ADD, "var_eps", 0, var, literal(o->eps, p));
		r = add_unary(x, OP_RSQRT, "rstd", 0, var);
		n = add_binary(x, OP_MUL, "normed", o->nin == 1 ? o->out : 0, xc, tensor_operand(r, p));
		if (o->nin > 1)
			emit_affine(x, n);
		break;
	case OP_RMSNORM:
		s = add_binary(x, OP_MUL, "square", 0, xin, tensor_operand(xin, p));
		var = add_unary(x, OP_MEAN, "ms", 0, s);
		var = add_binary(x, OP_ADD, "ms_eps", 0, var, literal(o->eps, p));
		r = add_unary(x, OP_RSQRT, "rrms", 0, var);
		n = add_binary(x, OP_MUL, "normed", o->nin == 1 ? o->out : 0, xin, tensor_operand(r, p));
		if (o->nin > 1)
			emit_affine(x, n);
		break;
	case OP_MIN:
		n = add_unary(x, OP_NEG, "neg", 0, xin);
		m = add_unary(x, OP_MAX, "max", 0, n);
		x->ops[x->nops - 1].keepdim = o->keepdim;
		x->ops[x->nops - 1].ndims = o->ndims;   /* (a list of dims: infer reads it) */
		memcpy(x->ops[x->nops - 1].dims, o->dims, sizeof o->dims);
		x->ops[x->nops - 1].attr_pos = o->attr_pos;
		add_unary(x, OP_NEG, "min", o->out, m);
		break;
	case OP_LOGSUMEXP:
		s = sum_exp_shifted(x, xin, &m, &d, &e);
		x->ops[x->nops - 1].keepdim = o->keepdim;
		s = add_unary(x, OP_LOG, "log", 0, s);
		if (!o->keepdim) {   /* the max again, of the result's shape (the shift's other half: detached too) */
			m = add_unary(x, OP_MAX, "max_out", 0, xin);
			x->ops[x->nops - 1].keepdim = false;
			x->ops[x->nops - 1].detach = true;
		}
		add_binary(x, OP_ADD, "lse", o->out, s, tensor_operand(m, p));
		break;
	case OP_VAR:
	case OP_STD:
		if (over_rows_var(x))
			break;
		mu = reduce_like(x, add_unary(x, OP_MEAN, "mean", 0, xin), o, true);
		xc = add_binary(x, OP_SUB, "centered", 0, xin, tensor_operand(mu, p));
		s = add_binary(x, OP_MUL, "square", 0, xc, tensor_operand(xc, p));
		if (o->correction == 0) {   /* the population's: the mean square */
			var = reduce_like(x, add_unary(x, OP_MEAN, "var", o->kind == OP_VAR ? o->out : 0, s), o, o->keepdim);
		} else {   /* sum / (n - correction), n a sum of ones: the extent, at run time too */
			s = reduce_like(x, add_unary(x, OP_SUM, "sum", 0, s), o, o->keepdim);
			e = add_binary(x, OP_EQ, "same", 0, xin, tensor_operand(xin, p));
			e = add_op(x, OP_WHERE, "ones", 0, tensor_operand(e, p), NULL);
			x->ops[x->nops - 1].in[1] = x->ops[x->nops - 1].in[2] = literal(1.0, p);
			x->ops[x->nops - 1].nin = 3;
			n = reduce_like(x, add_unary(x, OP_SUM, "n", 0, e), o, o->keepdim);
			n = add_binary(x, OP_SUB, "dof", 0, n, literal(o->correction, p));
			var = add_binary(x, OP_DIV, "var", o->kind == OP_VAR ? o->out : 0, s, tensor_operand(n, p));
		}
		if (o->kind == OP_STD)
			add_unary(x, OP_SQRT, "std", o->out, var);
		break;
	case OP_ARGMAX:   /* the first index of the max: -max(where(x == max(x), -position, -inf)), int64 */
	case OP_ARGMIN:   /* argmax of -x */
		if (o->kind == OP_ARGMIN)
			xin = add_unary(x, OP_NEG, "neg", 0, xin);
		m = add_unary(x, OP_MAX, "max", 0, xin);
		e = add_binary(x, OP_EQ, "hit", 0, xin, tensor_operand(m, p));
		n = add_unary(x, OP_POSITION, "position", 0, xin);
		n = add_unary(x, OP_NEG, "neg_position", 0, n);
		d = add_op(x, OP_WHERE, "candidate", 0, tensor_operand(e, p), NULL);
		x->ops[x->nops - 1].in[1] = tensor_operand(n, p);
		x->ops[x->nops - 1].in[2] = literal(-INFINITY, p);
		x->ops[x->nops - 1].nin = 3;
		s = add_unary(x, OP_MAX, "best", 0, d);
		x->ops[x->nops - 1].keepdim = o->keepdim;
		s = add_unary(x, OP_NEG, "index", 0, s);
		add_unary(x, OP_CAST, o->kind == OP_ARGMAX ? "argmax" : "argmin", o->out, s);
		x->ops[x->nops - 1].to = DT_INT64;
		break;
	case OP_LOG_SOFTMAX:
		s = sum_exp_shifted(x, xin, &m, &d, &e);
		s = add_unary(x, OP_LOG, "log", 0, s);
		add_binary(x, OP_SUB, "log_softmax", o->out, d, tensor_operand(s, p));
		break;
	default:
		break;
	}
}

/* requires a parsed fusion; leaves primitives only */
int
pass_expand(Comp *c)
{
	Fusion *f = c->fusion;
	Expander x = {0};
	int i;

	x.c = c;
	x.f = f;
	VEC_PUSH(c->arena, x.ops, x.nops, x.capops);
	for (i = 1; i < f->nop; i++) {
		Op *o = &f->op[i];

		if (op_info[o->kind].cls != CLS_COMPOSITE) {
			*VEC_PUSH(c->arena, x.ops, x.nops, x.capops) = *o;
			f->tensor[o->out].def = x.nops - 1;
			continue;
		}
		x.old = o;
		if (o->kind == OP_CROSS_ENTROPY && expand_cross_entropy(&x) < 0)
			return -1;
		expand_one(&x);
	}
	f->op = x.ops;
	f->nop = x.nops;
	f->capop = x.capops;
	f->expanded = true;
	return 0;
}
