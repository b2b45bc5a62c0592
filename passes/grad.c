/*
 * grad.c: reverse-mode differentiation of the fusion IR: a forward fusion F
 * becomes its backward, a new fusion G that replaces c->fusion.
 *
 * Contract.  Requires: c->fusion expanded and inferred.  Guarantees:
 * c->fusion is G, expanded and inferred (pass_infer ran on it), whose
 * inputs are those of F's inputs it reads, in F's order, then grad_OUT for
 * each output OUT of F that a float input reaches (OUT's shape; its stored
 * dtype if f32, f16 or bf16, else f32), and whose outputs are grad_IN for
 * each float input IN of F, in F's order (IN's shape and dtype).  F is left
 * as it was.  Errors, at the op, for what is not derived yet (status
 * WSF_ERR_UNSUPPORTED); WSF_ERR_INPUT for a fusion with no float input.
 *
 * G recomputes every forward value it needs: F's ops are copied into it
 * first, with their ids, and what no adjoint reads is dropped at the end
 * (choosing what the forward saves instead is a later phase).  Then F's
 * ops are visited in reverse; an op whose result has an adjoint appends,
 * for each operand a float input reaches (live), its contribution: the
 * op's rule (rule()), then summed over the dims the operand was broadcast
 * along (reduce_to).  Contributions to one tensor add.  Zero-gradient ops
 * (comparisons, rounding, sign, logical and bitwise ops, floor_divide,
 * rand_like, where's condition) contribute nothing, and integer and bool
 * tensors get no adjoint.  A float input no adjoint reaches gets zeros.
 * max's adjoint goes to every element equal to the max, split evenly among
 * ties (torch.amax's); maximum and minimum split a tie in halves (torch's).
 * cast passes the adjoint through unrounded: values round only where an
 * output stores them.  A view's adjoint is its inverse index map, in views
 * (view_rule): a slice's a pad, a pad's and a cat part's a slice, a
 * permute's the inverse permute, a reshape's a reshape back, an expand's
 * reduce_to, a slice_scatter's a slice (its part) and a slice_scatter of
 * zeros (x).
 *
 * X's adjoint is called "X.grad" (then "X.grad.2" ... as contributions
 * add), and the steps toward it "X.d1", "X.d2" ...: '.' cannot be in a
 * spec name, so they clash with none (the spec printer makes identifiers
 * of them).  Each new op keeps the forward op's position and names the
 * forward op's result as its origin.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "passes.h"

typedef struct Grad {
	Comp *c;
	const Fusion *f;   /* the forward */
	Fusion *g;         /* the backward: F's tensors and ops with their ids, then the adjoints' */
	int *adj;          /* F's tensor -> G's tensor holding its adjoint so far (0: none yet) */
	bool *live;        /* F's tensor -> a float that a float input reaches through differentiable ops */
	int *same;         /* F's tensor X -> G's X == X, a bool of X's shape (0: not made yet) */
	const Op *fop;     /* the forward op being differentiated */
	const char *stem;  /* the forward tensor whose adjoint the new tensors make */
} Grad;

static Operand
T(int t)
{
	Operand o = {0};

	o.tensor = t;
	return o;
}

static Operand
L(double v)
{
	Operand o = {0};

	o.lit = v;
	return o;
}

static Operand
L_int(double v)
{
	Operand o = L(v);

	o.lit_int = true;
	return o;
}

/* The first of PREFIX, PREFIX.1, PREFIX.2 ... that no tensor of G is called (PREFIX.1 ... with NUMBERED). */
static const char *
fresh_name(Grad *g, const char *prefix, bool numbered)
{
	const char *s = numbered ? arena_printf(g->c->arena, "%s1", prefix) : prefix;
	int n = 1;

	while (fusion_find_tensor(g->g, intern_cstr(g->c->strs, s)))
		s = arena_printf(g->c->arena, "%s%s%d", prefix, numbered ? "" : ".", ++n);
	return intern_cstr(g->c->strs, s);
}

/* Appends op KIND of the NIN operands IN to G, at the forward op's position; its new result. */
static int
emit(Grad *g, OpKind kind, int nin, const Operand *in)
{
	Comp *c = g->c;
	const char *name = fresh_name(g, arena_printf(c->arena, "%s.d", g->stem), true);
	int t = fusion_add_tensor(c, g->g, name, TK_VALUE, g->fop->pos);
	int i = fusion_add_op(c, g->g, kind, g->fop->pos);
	Op *o = &g->g->op[i];

	o->out = t;
	o->nin = nin;
	o->origin = g->f->tensor[g->fop->out].name;
	for (int j = 0; j < nin; j++) {
		o->in[j] = in[j];
		o->in[j].pos = g->fop->pos;
	}
	g->g->tensor[t].def = i;
	return t;
}

static int
un(Grad *g, OpKind kind, Operand a)
{
	return emit(g, kind, 1, &a);
}

static int
bin(Grad *g, OpKind kind, Operand a, Operand b)
{
	Operand in[2] = {a, b};

	return emit(g, kind, 2, in);
}

static int
where(Grad *g, int cond, Operand a, Operand b)
{
	Operand in[3] = {T(cond), a, b};

	return emit(g, OP_WHERE, 3, in);
}

static int
reduce(Grad *g, OpKind kind, int x, int axis, bool keepdim)
{
	int t = un(g, kind, T(x));
	Op *o = &g->g->op[g->g->tensor[t].def];

	o->axis = axis;
	o->keepdim = keepdim;
	return t;
}

/* KIND over the dims reduction R reduces (its axis and naxes), with its keepdim. */
static int
reduce_as(Grad *g, OpKind kind, int x, const Op *r)
{
	int t = reduce(g, kind, x, r->axis, r->keepdim);

	g->g->op[g->g->tensor[t].def].naxes = r->naxes;
	return t;
}

static int
matmul(Grad *g, int a, int b, bool ta, bool tb)
{
	int t = bin(g, OP_MATMUL, T(a), T(b));
	Op *o = &g->g->op[g->g->tensor[t].def];

	o->transpose_a = ta;
	o->transpose_b = tb;
	return t;
}

/* V of X's shape, whatever V's own (which broadcasts to it): where(X == X, V, V), X == X made once. */
static int
expand_like(Grad *g, Operand v, int x)
{
	if (!g->same[x])
		g->same[x] = bin(g, OP_EQ, T(x), T(x));
	return where(g, g->same[x], v, v);
}

/*
 * D, of shape FROM, summed over the dims along which TO was broadcast to
 * FROM: the leading dims TO lacks (one sum over them all, without keepdim:
 * torch's dy.sum((0, 1)) for a bias over [B, S, H]), then each dim where
 * TO has 1 and FROM has not (with keepdim).  TO's shape then.
 */
static int
reduce_to(Grad *g, int d, const Tensor *from, const Tensor *to)
{
	int lead = from->rank - to->rank, i;

	if (lead > 0) {
		d = reduce(g, OP_SUM, d, 0, false);
		g->g->op[g->g->tensor[d].def].naxes = lead;
	}
	for (i = 0; i < to->rank; i++)
		if (dim_is_one(to->dim[i]) && !dim_is_one(from->dim[lead + i]))
			d = reduce(g, OP_SUM, d, i, true);
	return d;
}

/* Adds contribution T, of X's shape, to X's adjoint; a step made for it is renamed X.grad (or X.grad.N). */
static void
accumulate(Grad *g, int x, int t)
{
	const char *stem = g->stem;
	Tensor *a;

	g->stem = g->f->tensor[x].name;
	g->adj[x] = g->adj[x] ? bin(g, OP_ADD, T(g->adj[x]), T(t)) : t;
	a = &g->g->tensor[g->adj[x]];
	if (g->adj[x] >= g->f->ntensor && a->kind == TK_VALUE && !strstr(a->name, ".grad"))
		a->name = fresh_name(g, arena_printf(g->c->arena, "%s.grad", g->stem), false);
	g->stem = stem;
}

/* Does operand J of the forward op take an adjoint?  Names what follows after it. */
static bool
wants(Grad *g, int j)
{
	int t = g->fop->in[j].tensor;

	if (!t || !g->live[t])
		return false;
	g->stem = g->f->tensor[t].name;
	return true;
}

/* Contribution T, of the forward op's result's shape, to operand J's adjoint. */
static void
give(Grad *g, int j, int t)
{
	int x = g->fop->in[j].tensor;

	accumulate(g, x, reduce_to(g, t, &g->f->tensor[g->fop->out], &g->f->tensor[x]));
}

/* Does the adjoint flow from op KIND's result to its operand J? */
static bool
flows(OpKind kind, int j)
{
	switch (kind) {
	case OP_FLOOR: case OP_CEIL: case OP_ROUND: case OP_TRUNC: case OP_SIGN:
	case OP_LOGICAL_NOT: case OP_LOGICAL_AND: case OP_LOGICAL_OR:
	case OP_BITWISE_NOT: case OP_BITWISE_AND: case OP_BITWISE_OR: case OP_BITWISE_XOR: case OP_SHL: case OP_SHR:
	case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
	case OP_FLOOR_DIVIDE: case OP_RAND_LIKE: case OP_POSITION:
		return false;
	case OP_WHERE:
		return j > 0;
	default:
		return true;
	}
}

/* An error at the forward op for a gradient not derived yet (WSF_ERR_UNSUPPORTED). */
static int unsupported(Grad *g, const char *fmt, ...) PRINTF_LIKE(2, 3);
static int
unsupported(Grad *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_verror(g->c, g->fop->pos, fmt, ap);
	va_end(ap);
	g->c->status = WSF_ERR_UNSUPPORTED;
	return -1;
}

/* D times the derivative of unary op O at X (its result Y); 0 for the ops that have none. */
static int
unary_rule(Grad *g, const Op *o, int d, int x, int y)
{
	int t, u;

	switch (o->kind) {
	case OP_NEG:
		return un(g, OP_NEG, T(d));
	case OP_ABS:
		return bin(g, OP_MUL, T(d), T(un(g, OP_SIGN, T(x))));
	case OP_EXP:
		return bin(g, OP_MUL, T(d), T(y));
	case OP_LOG:
		return bin(g, OP_DIV, T(d), T(x));
	case OP_SQRT:   /* d / (2 y) */
		return bin(g, OP_DIV, T(d), T(bin(g, OP_MUL, T(y), L(2.0))));
	case OP_RSQRT:  /* d * -y^3 / 2 */
		t = bin(g, OP_MUL, T(y), T(y));
		t = bin(g, OP_MUL, T(t), T(y));
		return bin(g, OP_MUL, T(d), T(bin(g, OP_MUL, T(t), L(-0.5))));
	case OP_TANH:   /* d (1 - y^2) */
		t = bin(g, OP_SUB, L(1.0), T(bin(g, OP_MUL, T(y), T(y))));
		return bin(g, OP_MUL, T(d), T(t));
	case OP_SIGMOID: /* d y (1 - y) */
		t = bin(g, OP_MUL, T(y), T(bin(g, OP_SUB, L(1.0), T(y))));
		return bin(g, OP_MUL, T(d), T(t));
	case OP_RELU:
		return where(g, bin(g, OP_GT, T(x), L(0.0)), T(d), L(0.0));
	case OP_SILU:   /* d s (1 + x (1 - s)), s = sigmoid(x) */
		u = un(g, OP_SIGMOID, T(x));
		t = bin(g, OP_MUL, T(x), T(bin(g, OP_SUB, L(1.0), T(u))));
		t = bin(g, OP_MUL, T(u), T(bin(g, OP_ADD, T(t), L(1.0))));
		return bin(g, OP_MUL, T(d), T(t));
	case OP_GELU:
		if (o->approx == APPROX_TANH) {
			/* u = k (x + c x^3), t = tanh(u): (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2 */
			double k = sqrt(2.0 / M_PI), cu = 0.044715;
			int x2 = bin(g, OP_MUL, T(x), T(x)), p;

			u = bin(g, OP_MUL, T(bin(g, OP_MUL, T(x2), T(x))), L(cu));
			u = bin(g, OP_MUL, T(bin(g, OP_ADD, T(u), T(x))), L(k));
			t = un(g, OP_TANH, T(u));
			p = bin(g, OP_MUL, T(bin(g, OP_ADD, T(bin(g, OP_MUL, T(x2), L(3 * cu))), L(1.0))), L(k));
			u = bin(g, OP_SUB, L(1.0), T(bin(g, OP_MUL, T(t), T(t))));
			u = bin(g, OP_MUL, T(bin(g, OP_MUL, T(u), T(p))), T(x));
			t = bin(g, OP_MUL, T(bin(g, OP_ADD, T(t), L(1.0))), L(0.5));
			t = bin(g, OP_ADD, T(t), T(bin(g, OP_MUL, T(u), L(0.5))));
			return bin(g, OP_MUL, T(d), T(t));
		}
		/* Phi(x) + x phi(x) */
		t = un(g, OP_ERF, T(bin(g, OP_MUL, T(x), L(M_SQRT1_2))));
		t = bin(g, OP_MUL, T(bin(g, OP_ADD, T(t), L(1.0))), L(0.5));
		u = un(g, OP_EXP, T(bin(g, OP_MUL, T(bin(g, OP_MUL, T(x), T(x))), L(-0.5))));
		u = bin(g, OP_MUL, T(bin(g, OP_MUL, T(u), L(0.5 * M_2_SQRTPI * M_SQRT1_2))), T(x));
		return bin(g, OP_MUL, T(d), T(bin(g, OP_ADD, T(t), T(u))));
	case OP_CAST:
		return d;
	case OP_ERF:    /* d 2/sqrt(pi) exp(-x^2) */
		t = un(g, OP_EXP, T(un(g, OP_NEG, T(bin(g, OP_MUL, T(x), T(x))))));
		return bin(g, OP_MUL, T(d), T(bin(g, OP_MUL, T(t), L(M_2_SQRTPI))));
	case OP_SIN:
		return bin(g, OP_MUL, T(d), T(un(g, OP_COS, T(x))));
	case OP_COS:
		return un(g, OP_NEG, T(bin(g, OP_MUL, T(d), T(un(g, OP_SIN, T(x))))));
	case OP_EXP2:
		return bin(g, OP_MUL, T(d), T(bin(g, OP_MUL, T(y), L(M_LN2))));
	case OP_LOG2:
		return bin(g, OP_DIV, T(d), T(bin(g, OP_MUL, T(x), L(M_LN2))));
	case OP_LOG1P:
		return bin(g, OP_DIV, T(d), T(bin(g, OP_ADD, T(x), L(1.0))));
	case OP_EXPM1:
		return bin(g, OP_MUL, T(d), T(bin(g, OP_ADD, T(y), L(1.0))));
	default:
		return 0;
	}
}

/* maximum (MAX true) or minimum: D where A wins, half of D where they tie. */
static int
extremum_rule(Grad *g, int d, Operand a, Operand b, bool max)
{
	int wins = bin(g, max ? OP_GT : OP_LT, a, b), tie = bin(g, OP_EQ, a, b);

	return where(g, wins, T(d), T(where(g, tie, T(bin(g, OP_MUL, T(d), L(0.5))), L(0.0))));
}

static int
binary_rule(Grad *g, const Op *o, int d)
{
	Operand a = o->in[0], b = o->in[1], y = T(o->out);
	int t;

	switch (o->kind) {
	case OP_ADD: case OP_SUB:
		if (wants(g, 0))
			give(g, 0, d);
		if (wants(g, 1))
			give(g, 1, o->kind == OP_ADD ? d : un(g, OP_NEG, T(d)));
		return 0;
	case OP_MUL:
		if (wants(g, 0))
			give(g, 0, bin(g, OP_MUL, T(d), b));
		if (wants(g, 1))
			give(g, 1, bin(g, OP_MUL, T(d), a));
		return 0;
	case OP_DIV:    /* d / b; -(d / b) y */
		t = 0;
		if (wants(g, 0))
			give(g, 0, t = bin(g, OP_DIV, T(d), b));
		if (wants(g, 1))
			give(g, 1, un(g, OP_NEG, T(bin(g, OP_MUL, T(t ? t : bin(g, OP_DIV, T(d), b)), y))));
		return 0;
	case OP_MAXIMUM: case OP_MINIMUM:
		if (wants(g, 0))
			give(g, 0, extremum_rule(g, d, a, b, o->kind == OP_MAXIMUM));
		if (wants(g, 1))
			give(g, 1, extremum_rule(g, d, b, a, o->kind == OP_MAXIMUM));
		return 0;
	case OP_POW:    /* d b a^(b - 1); d y log(a) */
		if (wants(g, 0)) {
			Operand e = b.tensor ? T(bin(g, OP_SUB, b, L(1.0))) : b;

			if (!b.tensor)
				e.lit -= 1;
			t = bin(g, OP_MUL, T(bin(g, OP_POW, a, e)), b);
			give(g, 0, bin(g, OP_MUL, T(d), T(t)));
		}
		if (wants(g, 1)) {
			if (!a.tensor && !(a.lit > 0)) {
				char s[NUM_MAX];

				num_shortest(s, a.lit);
				return unsupported(g, "the gradient of 'pow' with respect to its exponent needs the log of "
				                   "its base, the number %s, which is not positive", s);
			}
			t = a.tensor ? bin(g, OP_MUL, y, T(un(g, OP_LOG, a))) : bin(g, OP_MUL, y, L(log(a.lit)));
			give(g, 1, bin(g, OP_MUL, T(d), T(t)));
		}
		return 0;
	case OP_REMAINDER: /* a - b floor(a / b): d; -d floor(a / b) */
		if (wants(g, 0))
			give(g, 0, d);
		if (wants(g, 1))
			give(g, 1, un(g, OP_NEG, T(bin(g, OP_MUL, T(d), T(un(g, OP_FLOOR, T(bin(g, OP_DIV, a, b))))))));
		return 0;
	case OP_WHERE:
		if (wants(g, 1))
			give(g, 1, where(g, o->in[0].tensor, T(d), L(0.0)));
		if (wants(g, 2))
			give(g, 2, where(g, o->in[0].tensor, L(0.0), T(d)));
		return 0;
	default:
		return 0;
	}
}

static Op *view_op(Grad *g, OpKind kind, int x);

/*
 * sum, mean, max, prod: the adjoint spread back over X.  Without keepdim it
 * broadcasts back as it is only when X's dims before the axis are 1 (numpy
 * aligns from the right); else it is reshaped to keepdim's shape first
 * (torch's unsqueeze), as is a max's result for its mask.
 */
static int
reduce_rule(Grad *g, const Op *o, int d)
{
	const Fusion *f = g->f;
	int x = o->in[0].tensor, y = o->out, i, t, mask, last = o->axis + op_naxes(o);
	const Tensor *xt = &f->tensor[x];
	int64_t n = 1;   /* the elements each result reduces: constant, or 0 when a size is bound at run time */
	Op kept = *o;    /* o with keepdim: the adjoint and the result unsqueezed to it where numpy cannot align them */

	if (!wants(g, 0))
		return 0;
	for (i = o->axis; i < last; i++)
		n = xt->dim[i].sym ? 0 : n * xt->dim[i].ext;
	for (i = 0; !o->keepdim && i < o->axis && dim_is_one(xt->dim[i]); i++)
		;
	if (!o->keepdim && i < o->axis) {   /* (dims before the axis: [T] against [T, V] needs [T, 1]) */
		Op *v = view_op(g, OP_RESHAPE, d);

		v->nshape = xt->rank;
		for (i = 0; i < xt->rank; i++)
			v->shape[i] = i >= o->axis && i < last ? (Dim){0, 1} : xt->dim[i];
		d = v->out;
		if (o->kind == OP_MAX) {
			Op *w = view_op(g, OP_RESHAPE, y);

			w->nshape = v->nshape;
			memcpy(w->shape, v->shape, sizeof w->shape);
			y = w->out;
		}
		kept.keepdim = true;
		o = &kept;
	}
	switch (o->kind) {
	case OP_SUM:
		t = expand_like(g, T(d), x);
		break;
	case OP_MEAN:
		if (n)
			t = bin(g, OP_DIV, T(d), L_int((double)n));
		else   /* the extent at run time: a sum of ones */
			t = bin(g, OP_DIV, T(d), T(reduce_as(g, OP_SUM, expand_like(g, L(1.0), x), o)));
		t = expand_like(g, T(t), x);
		break;
	case OP_PROD:   /* torch's: d times the product of the others, also where X holds zeros */
		mask = bin(g, OP_EQ, T(x), L(0.0));
		i = reduce_as(g, OP_SUM, where(g, mask, L(1.0), L(0.0)), o);      /* the zeros of the result's slice */
		t = bin(g, OP_MUL, T(d), T(reduce_as(g, OP_PROD, where(g, mask, L(1.0), T(x)), o)));   /* d x the others */
		t = where(g, mask, T(where(g, bin(g, OP_EQ, T(i), L(1.0)), T(t), L(0.0))),
		          T(where(g, bin(g, OP_EQ, T(i), L(0.0)), T(bin(g, OP_DIV, T(t), T(x))), L(0.0))));
		break;
	default:       /* max: the elements equal to it share d evenly */
		mask = bin(g, OP_EQ, T(x), T(y));
		t = reduce_as(g, OP_SUM, where(g, mask, L(1.0), L(0.0)), o);
		t = where(g, mask, T(bin(g, OP_DIV, T(d), T(t))), L(0.0));
		break;
	}
	accumulate(g, x, t);
	return 0;
}

/*
 * C = P Q, P = A or A^T, Q = B or B^T: dP = dC Q^T, dQ = P^T dC, each
 * one matmul whose operand transposes read A, B and dC as they are
 * stored.  A B of rank 2 shared by a batch gets dQ summed over the batch.
 */
static int
matmul_rule(Grad *g, const Op *o, int d)
{
	const Fusion *f = g->f;
	int a = o->in[0].tensor, b = o->in[1].tensor, t;
	bool ta = o->transpose_a, tb = o->transpose_b;
	Tensor from = f->tensor[o->out];

	if (wants(g, 0)) {
		if (!ta)
			t = matmul(g, d, b, false, !tb);
		else if (f->tensor[a].rank == f->tensor[b].rank)
			t = matmul(g, b, d, tb, true);   /* dP^T = Q dC^T */
		else
			return unsupported(g, "the gradient of a batched matmul's '%s' with transpose_a and a '%s' of rank 2 "
			                   "is not implemented yet", f->tensor[a].name, f->tensor[b].name);
		accumulate(g, a, t);
	}
	if (wants(g, 1)) {
		if (!tb)
			t = matmul(g, a, d, !ta, false);  /* dQ = P^T dC */
		else
			t = matmul(g, d, a, true, ta);    /* dQ^T = dC^T P */
		from.dim[from.rank - 2] = f->tensor[b].dim[f->tensor[b].rank - 2];
		from.dim[from.rank - 1] = f->tensor[b].dim[f->tensor[b].rank - 1];
		g->stem = f->tensor[b].name;
		accumulate(g, b, reduce_to(g, t, &from, &f->tensor[b]));
	}
	return 0;
}

/* A view op KIND of X in G at the forward op's position, its attributes set by the caller; the op. */
static Op *
view_op(Grad *g, OpKind kind, int x)
{
	int t = un(g, kind, T(x));
	Op *o = &g->g->op[g->g->tensor[t].def];

	o->dim_pos = o->attr_pos = g->fop->pos;
	o->step = 1;
	return o;
}

/* D's slice [START, END) along AXIS (a cat's part, a pad's inside). */
static int
slice_of(Grad *g, int d, int axis, int64_t start, int64_t end)
{
	Op *o = view_op(g, OP_SLICE, d);

	o->axis = axis;
	o->start = start;
	o->end = end;
	return o->out;
}

/*
 * A view's adjoint is its inverse index map: a slice's is a pad with zeros
 * (a step's would be a strided scatter: not derived yet), a pad's or a
 * cat's part's a slice, a permute's the inverse permute, a transpose's the
 * same transpose, a reshape's a reshape back, an expand's a sum over the
 * dims it grew (reduce_to, as broadcasting's), a slice_scatter's the slice
 * of the adjoint for its part and the adjoint with that slice zeroed for x.
 * index_select and gather scatter-add, index_copy: not derived yet.
 */
static int
view_rule(Grad *g, const Op *o, int d)
{
	const Tensor *x = &g->f->tensor[o->in[0].tensor], *y = &g->f->tensor[o->out];
	int64_t start, count, at = 0;
	int i, j, k;
	Op *v;

	switch (o->kind) {
	case OP_SLICE:
		if (o->step != 1)
			return unsupported(g, "the gradient of a slice with a step (a strided scatter) is not derived yet");
		if (!wants(g, 0))
			return 0;
		view_slice(o, dim_value(g->f, x->dim[o->axis]), &start, &count);
		v = view_op(g, OP_PAD, d);
		k = x->rank - 1 - o->axis;
		v->npad = 2 * (k + 1);
		v->pad[2 * k] = start;
		v->pad[2 * k + 1] = dim_value(g->f, x->dim[o->axis]) - start - count;
		give(g, 0, v->out);
		return 0;
	case OP_PAD:
		if (!wants(g, 0))
			return 0;
		for (k = 0; k < o->npad / 2; k++)
			if (o->pad[2 * k] || o->pad[2 * k + 1])
				d = slice_of(g, d, x->rank - 1 - k, o->pad[2 * k],
				             o->pad[2 * k] + dim_value(g->f, x->dim[x->rank - 1 - k]));
		give(g, 0, d);
		return 0;
	case OP_CAT:
		for (j = 0; j < o->nin; j++) {
			int64_t n = dim_value(g->f, g->f->tensor[o->in[j].tensor].dim[o->axis]);

			if (wants(g, j))
				give(g, j, slice_of(g, d, o->axis, at, at + n));
			at += n;
		}
		return 0;
	case OP_PERMUTE:
		if (!wants(g, 0))
			return 0;
		v = view_op(g, OP_PERMUTE, d);
		v->ndims = o->ndims;
		for (i = 0; i < o->ndims; i++)
			v->dims[o->dims[i]] = i;
		give(g, 0, v->out);
		return 0;
	case OP_TRANSPOSE:
		if (!wants(g, 0))
			return 0;
		v = view_op(g, OP_TRANSPOSE, d);
		v->dim0 = o->dim0;
		v->dim1 = o->dim1;
		give(g, 0, v->out);
		return 0;
	case OP_RESHAPE:
	case OP_VIEW:
		if (!wants(g, 0))
			return 0;
		v = view_op(g, OP_RESHAPE, d);
		v->nshape = x->rank;
		memcpy(v->shape, x->dim, sizeof v->shape);
		give(g, 0, v->out);
		return 0;
	case OP_EXPAND:   /* the contribution of Y's shape, summed down to X's by give */
		if (wants(g, 0))
			accumulate(g, o->in[0].tensor, reduce_to(g, d, y, x));
		return 0;
	case OP_SLICE_SCATTER:   /* src's: the slice of D; x's: D with the slice zeroed (a slice_scatter of zeros) */
		v = view_op(g, OP_SLICE, d);
		v->axis = o->axis, v->start = o->start, v->end = o->end, v->step = o->step;
		k = v->out;
		if (wants(g, 1))
			give(g, 1, k);
		if (wants(g, 0)) {
			int zeros = bin(g, OP_MUL, T(k), L(0.0));   /* (before the op that reads it) */

			v = view_op(g, OP_SLICE_SCATTER, d);
			v->axis = o->axis, v->start = o->start, v->end = o->end, v->step = o->step;
			v->in[1] = T(zeros);
			v->nin = 2;
			give(g, 0, v->out);
		}
		return 0;
	default:   /* index_select, gather: a scatter-add into x; index_copy, slice_scatter: a pick of the adjoint */
		return unsupported(g, "the gradient of '%s' (%s) is not derived yet", op_info[o->kind].name,
		                   o->kind == OP_INDEX_COPY || o->kind == OP_SLICE_SCATTER ? "the adjoint split between x "
		                   "and the part it places" : "a scatter-add into its input");
	}
}

/* Appends the contributions of forward op O, whose result's adjoint is D, to its operands' adjoints. */
static int
rule(Grad *g, const Op *o, int d)
{
	int t;

	g->fop = o;
	switch (op_info[o->kind].cls) {
	case CLS_UNARY:
		if (o->kind == OP_TOPK && wants(g, 0))   /* (the values' adjoint scattered to the indices: not yet) */
			return unsupported(g, "the gradient of 'topk' is not implemented yet");
		if (!wants(g, 0))
			return 0;
		if ((t = unary_rule(g, o, d, o->in[0].tensor, o->out)))
			give(g, 0, t);
		return 0;
	case CLS_BINARY:
		return binary_rule(g, o, d);
	case CLS_REDUCE:
		return reduce_rule(g, o, d);
	case CLS_MATMUL:
		return matmul_rule(g, o, d);
	case CLS_VIEW:
		return view_rule(g, o, d);
	default:
		return diag_internal(g->c, "grad", "op '%s' reached differentiation", op_info[o->kind].name);
	}
}

/* Is NAME in option grad-of's list ("x,w"), or is there no list (every float input's gradient)? */
static bool
derived_for(const Comp *c, const char *name)
{
	const char *s = c->grad_of;
	size_t n = strlen(name), len;

	for (; s && *s; s += len + (s[len] == ',')) {
		len = strcspn(s, ",");
		if (len == n && strncmp(s, name, n) == 0)
			return true;
	}
	return !s;
}

/* Each name option grad-of lists is a float input of F: 0, or -1 after an error. */
static int
check_grad_of(Comp *c, const Fusion *f)
{
	const char *s = c->grad_of;
	size_t len;
	int i;

	for (; s && *s; s += len + (s[len] == ',')) {
		len = strcspn(s, ",");
		for (i = 0; i < f->ninput && !(strlen(f->tensor[f->input[i]].name) == len &&
		                               strncmp(f->tensor[f->input[i]].name, s, len) == 0 &&
		                               dtype_is_float(f->tensor[f->input[i]].dtype)); i++)
			;
		if (i == f->ninput) {
			diag_error(c, f->pos, "option grad-of names '%.*s', which is not a float input of fusion '%s'",
			           (int)len, s, f->name);
			c->status = WSF_ERR_USAGE;
			return -1;
		}
	}
	return 0;
}

/* Which of F's tensors a float input reaches through ops the adjoint flows back through (of grad-of's inputs). */
static void
mark_live(Grad *g)
{
	const Fusion *f = g->f;
	int i, j;

	for (i = 0; i < f->ninput; i++)
		g->live[f->input[i]] = dtype_is_float(f->tensor[f->input[i]].dtype) &&
		                       derived_for(g->c, f->tensor[f->input[i]].name);
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor && g->live[o->in[j].tensor] && flows(o->kind, j) && !o->detach)
				g->live[o->out] = dtype_is_float(f->tensor[o->out].dtype);
	}
}

/*
 * "grad_NAME" for T, or an error at P when F has an input of that name or
 * it is too long.  A value of F of that name is renamed in G (NAME.fwd): only
 * inputs keep their names there.
 */
static const char *
grad_name(Grad *g, const Tensor *t, Pos p)
{
	const char *s = arena_printf(g->c->arena, "grad_%s", t->name);
	int x;

	if (strlen(s) > MAX_NAME) {
		diag_error(g->c, p, "the gradient of '%s' would be called '%s', longer than %d bytes", t->name, s,
		           MAX_NAME);
		return NULL;
	}
	s = intern_cstr(g->c->strs, s);
	if ((x = fusion_find_tensor(g->f, s)) && g->f->tensor[x].kind == TK_INPUT) {
		diag_error(g->c, p, "the gradient of '%s' would be called '%s', which names an input already: "
		           "rename that input", t->name, s);
		return NULL;
	}
	if (x)
		g->g->tensor[x].name = intern_cstr(g->c->strs, arena_printf(g->c->arena, "%s.fwd", s));
	return s;
}

/* G starts as F's sizes, tensors, ops and inputs, with the same ids, and no outputs. */
static void
copy_forward(Grad *g)
{
	Comp *c = g->c;
	const Fusion *f = g->f;
	Fusion *h = fusion_new(c);
	int i;

	h->name = strlen(f->name) + 5 <= MAX_NAME ? arena_printf(c->arena, "%s_grad", f->name) : f->name;
	h->pos = f->pos;
	for (i = 1; i < f->nsym; i++)
		*VEC_PUSH(c->arena, h->sym, h->nsym, h->capsym) = f->sym[i];
	for (i = 1; i < f->ntensor; i++) {
		Tensor *t = VEC_PUSH(c->arena, h->tensor, h->ntensor, h->captensor);

		*t = f->tensor[i];
		t->wait_pos = (Pos){0};
		t->wait_tile[0] = t->wait_tile[1] = 0;
		t->unread = false;
	}
	for (i = 0; i < f->ninput; i++)
		*VEC_PUSH(c->arena, h->input, h->ninput, h->capinput) = f->input[i];
	for (i = 1; i < f->nop; i++)
		*VEC_PUSH(c->arena, h->op, h->nop, h->capop) = f->op[i];
	h->expanded = true;
	g->g = h;
}

/* The inputs grad_OUT, each the first adjoint of its output. */
static int
add_grad_inputs(Grad *g)
{
	const Fusion *f = g->f;
	int i;

	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];
		const Tensor *y = &f->tensor[o->tensor];
		const char *name;
		int t;

		if (!g->live[o->tensor])
			continue;
		if (!(name = grad_name(g, y, o->pos)))
			return -1;
		t = fusion_add_tensor(g->c, g->g, name, TK_INPUT, o->pos);
		g->g->tensor[t].dtype = o->dtype == DT_F16 || o->dtype == DT_BF16 ? o->dtype : DT_F32;
		g->g->tensor[t].rank = y->rank;
		memcpy(g->g->tensor[t].dim, y->dim, sizeof y->dim);
		g->g->tensor[t].shape_pos = o->pos;
		g->adj[o->tensor] = t;
	}
	return 0;
}

/* The outputs grad_IN: each float input's adjoint (zeros when none reached it), a new value called so. */
static int
add_grad_outputs(Grad *g, int first_new)
{
	const Fusion *f = g->f;
	Fusion *h = g->g;
	int i, n = 0;

	for (i = 0; i < f->ninput; i++) {
		int x = f->input[i], t = g->adj[x];
		const Tensor *xt = &f->tensor[x];
		const char *name;
		Output *out;
		Op at = {0};

		if (!dtype_is_float(xt->dtype) || !derived_for(g->c, xt->name))
			continue;
		if (!(name = grad_name(g, xt, xt->pos)))
			return -1;
		at.pos = xt->pos;   /* what is made here comes from the input */
		g->fop = &at;
		g->stem = xt->name;
		if (!t)
			t = expand_like(g, L(0.0), x);
		if (t < first_new || h->tensor[t].kind != TK_VALUE || fusion_output_of(h, t) >= 0) {
			t = un(g, OP_CAST, T(t));   /* a copy: an output is a value of its own */
			h->op[h->tensor[t].def].to = xt->dtype;
		}
		h->tensor[t].name = name;
		out = VEC_PUSH(g->c->arena, h->out, h->nout, h->capout);
		out->tensor = t;
		out->dtype = xt->dtype;
		out->pos = xt->pos;
		n++;
	}
	if (!n)
		return diag_error(g->c, f->pos, "fusion '%s' has no float input: there is nothing to differentiate",
		                  f->name);
	return 0;
}

/* G without what its outputs do not need: ops, values and inputs, ids renumbered in order. */
static Fusion *
prune(Comp *c, const Fusion *g)
{
	Fusion *h = fusion_new(c);
	bool *need = arena_alloc(c->arena, (size_t)g->ntensor * sizeof *need);
	int *map = arena_alloc(c->arena, (size_t)g->ntensor * sizeof *map);
	int i, j;

	for (i = 0; i < g->nout; i++)
		need[g->out[i].tensor] = true;
	for (i = g->nop - 1; i >= 1; i--)
		for (j = 0; need[g->op[i].out] && j < g->op[i].nin; j++)
			need[g->op[i].in[j].tensor] = true;
	*h = *g;
	h->tensor = NULL, h->ntensor = h->captensor = 0;
	h->op = NULL, h->nop = h->capop = 0;
	h->input = NULL, h->ninput = h->capinput = 0;
	h->out = NULL, h->nout = h->capout = 0;
	VEC_PUSH(c->arena, h->tensor, h->ntensor, h->captensor);
	VEC_PUSH(c->arena, h->op, h->nop, h->capop);
	for (i = 1; i < g->ntensor; i++)
		if (need[i]) {
			*VEC_PUSH(c->arena, h->tensor, h->ntensor, h->captensor) = g->tensor[i];
			map[i] = h->ntensor - 1;
		}
	for (i = 0; i < g->ninput; i++)
		if (need[g->input[i]])
			*VEC_PUSH(c->arena, h->input, h->ninput, h->capinput) = map[g->input[i]];
	for (i = 1; i < g->nop; i++) {
		Op *o;

		if (!need[g->op[i].out])
			continue;
		o = VEC_PUSH(c->arena, h->op, h->nop, h->capop);
		*o = g->op[i];
		o->out = map[o->out];
		for (j = 0; j < o->nin; j++)
			o->in[j].tensor = map[o->in[j].tensor];
		h->tensor[o->out].def = h->nop - 1;
	}
	for (i = 0; i < g->nout; i++) {
		Output *o = VEC_PUSH(c->arena, h->out, h->nout, h->capout);

		*o = g->out[i];
		o->tensor = map[o->tensor];
	}
	return h;
}

/* requires an expanded, inferred fusion; leaves its backward, inferred, in c->fusion */
int
pass_grad(Comp *c)
{
	const Fusion *f = c->fusion;
	Grad g = {0};
	int i, first_new;

	if (!f->expanded || !f->inferred)
		return diag_internal(c, "grad", "the fusion is not expanded and inferred");
	if (check_grad_of(c, f) < 0)
		return -1;
	g.c = c;
	g.f = f;
	g.adj = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *g.adj);
	g.live = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *g.live);
	g.same = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *g.same);
	mark_live(&g);
	copy_forward(&g);
	first_new = g.g->ntensor;
	if (add_grad_inputs(&g))
		return -1;
	for (i = f->nop - 1; i >= 1; i--)
		if (g.adj[f->op[i].out] && rule(&g, &f->op[i], g.adj[f->op[i].out]))
			return -1;
	if (add_grad_outputs(&g, first_new))
		return -1;
	c->fusion = prune(c, g.g);
	return pass_infer(c);
}
