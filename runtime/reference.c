/*
 * reference.c: the host reference evaluator of the fusion IR, in double.
 *
 * It checks the GPU path, so it shares nothing with it: each op's math is
 * written here again, in double, in one table indexed by OpKind (ops.h says
 * so), and evaluation is the plainest loop that follows the semantics.
 * Tensors are evaluated in op order (a topological order) into double arrays
 * in the Comp's arena; no float is rounded except by an explicit cast, which
 * rounds to its `to` type as the kernel does when it stores, and the stored
 * outputs a signal consumer computes from (consumer_outputs).  An integer or
 * bool result is exact in its dtype at every op (rt_round wraps it), as the
 * kernel's is: exact while every value stays below 2^53 in magnitude.
 *
 * Shapes come from Tensor.dim through dim_value(), so the same fusion
 * evaluates at whatever sizes are bound.  Pointwise ops broadcast numpy-style
 * over trailing dims (an operand literal is a rank-0 tensor); reductions fold
 * op->axis (already normalized) with or without keepdim, which changes the
 * shape but not the layout; matmul multiplies the last two dims, broadcasting
 * the batch dims, with the loop order i, k, j so the inner loop is contiguous.
 * A view is an index map (view_source): each output element copies the
 * input element it names, or pad's fill.
 * Composites are expanded before this runs; meeting one is an internal error.
 *
 * Pointwise ops and reductions of large tensors are split over the host's
 * cores (rt_par_for): a thread takes a range of output elements, or of whole
 * reduced rows, and computes each element exactly as the serial loop would,
 * so the values do not depend on the thread count.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime.h"

/* ---- the op table ---- */

typedef struct RefOp {
	double (*unary)(const Op *op, double x);
	double (*binary)(double a, double b);
	double (*ternary)(double a, double b, double c);
	double (*fold)(double acc, double x); /* reductions: acc op x */
	double init;                          /* reductions: the fold's identity */
	bool mean;                            /* divide the fold by the reduced extent */
} RefOp;

static double un_neg(const Op *op, double x) { return -x; }
static double un_abs(const Op *op, double x) { return fabs(x); }
static double un_exp(const Op *op, double x) { return exp(x); }
static double un_log(const Op *op, double x) { return log(x); }
static double un_sqrt(const Op *op, double x) { return sqrt(x); }
static double un_rsqrt(const Op *op, double x) { return 1.0 / sqrt(x); }
static double un_tanh(const Op *op, double x) { return tanh(x); }
static double un_sigmoid(const Op *op, double x) { return 1.0 / (1.0 + exp(-x)); }
/* x < 0 rather than x > 0 so that NaN passes through, as in torch */
static double un_relu(const Op *op, double x) { return x < 0 ? 0.0 : x; }
static double un_silu(const Op *op, double x) { return x / (1.0 + exp(-x)); }
static double un_cast(const Op *op, double x) { return rt_round(op->to, x); }

static double
un_gelu(const Op *op, double x)
{
	if (op->approx == APPROX_TANH)
		return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
	return 0.5 * x * (1.0 + erf(x / M_SQRT2));
}

static double bin_add(double a, double b) { return a + b; }
static double bin_sub(double a, double b) { return a - b; }
static double bin_mul(double a, double b) { return a * b; }
static double bin_div(double a, double b) { return a / b; }
/* NaN wins, as in torch.maximum/minimum (fmax would drop it) */
static double bin_max(double a, double b) { return isnan(a) || a > b ? a : b; }
static double bin_min(double a, double b) { return isnan(a) || a < b ? a : b; }

static double un_erf(const Op *op, double x) { return erf(x); }
static double un_sin(const Op *op, double x) { return sin(x); }
static double un_cos(const Op *op, double x) { return cos(x); }
static double un_exp2(const Op *op, double x) { return exp2(x); }
static double un_log2(const Op *op, double x) { return log2(x); }
static double un_log1p(const Op *op, double x) { return log1p(x); }
static double un_expm1(const Op *op, double x) { return expm1(x); }
static double un_floor(const Op *op, double x) { return floor(x); }
static double un_ceil(const Op *op, double x) { return ceil(x); }
/* half to even: the default rounding mode */
static double un_round(const Op *op, double x) { return nearbyint(x); }
static double un_trunc(const Op *op, double x) { return trunc(x); }
/* torch's (0 < x) - (x < 0): NaN gives 0 */
static double un_sign(const Op *op, double x) { return (0 < x) - (x < 0); }
static double un_not(const Op *op, double x) { return x == 0; }
/* ~x in two's complement (a bool's is logical not: eval_pointwise) */
static double un_bnot(const Op *op, double x) { return -x - 1; }

static double bin_and(double a, double b) { return a != 0 && b != 0; }
static double bin_or(double a, double b) { return a != 0 || b != 0; }
static double bin_eq(double a, double b) { return a == b; }
static double bin_ne(double a, double b) { return a != b; }
static double bin_lt(double a, double b) { return a < b; }
static double bin_le(double a, double b) { return a <= b; }
static double bin_gt(double a, double b) { return a > b; }
static double bin_ge(double a, double b) { return a >= b; }
static double bin_pow(double a, double b) { return pow(a, b); }

/* Bitwise ops on integers held exactly in doubles, through int64_t's two's complement. */
static double bin_band(double a, double b) { return (double)((int64_t)a & (int64_t)b); }
static double bin_bor(double a, double b) { return (double)((int64_t)a | (int64_t)b); }
static double bin_bxor(double a, double b) { return (double)((int64_t)a ^ (int64_t)b); }

/*
 * Shifts as torch computes them: a shift count below 0 or at least the
 * width gives 0 to the left and the sign to the right.  The width here is
 * 64 (the result wraps to its dtype afterwards, which gives the narrower
 * types' results for counts below their width; the sweep keeps counts there).
 */
static double
bin_shl(double a, double b)
{
	return b < 0 || b >= 64 ? 0.0 : a * ldexp(1.0, (int)b);
}

static double
bin_shr(double a, double b)
{
	return b < 0 || b >= 64 ? (a < 0 ? -1.0 : 0.0) : floor(a / ldexp(1.0, (int)b));
}

/* torch's floor_divide: floor(a / b), division by 0 as the float division gives it */
static double
bin_floordiv(double a, double b)
{
	double q;

	if (b == 0)
		return a / b;
	q = (a - fmod(a, b)) / b;   /* exact: a - fmod(a, b) is a multiple of b */
	if (fmod(a, b) != 0 && (b < 0) != (fmod(a, b) < 0))
		q -= 1;
	return q;
}

/* torch's remainder: the sign of the divisor (Python's %) */
static double
bin_rem(double a, double b)
{
	double m = fmod(a, b);

	if (m != 0 && (b < 0) != (m < 0))
		m += b;
	return m;
}

static double tern_where(double c, double a, double b) { return c != 0 ? a : b; }

static const RefOp ref_ops[OP_COUNT] = {
	[OP_NEG] = {.unary = un_neg},
	[OP_ABS] = {.unary = un_abs},
	[OP_EXP] = {.unary = un_exp},
	[OP_LOG] = {.unary = un_log},
	[OP_SQRT] = {.unary = un_sqrt},
	[OP_RSQRT] = {.unary = un_rsqrt},
	[OP_TANH] = {.unary = un_tanh},
	[OP_SIGMOID] = {.unary = un_sigmoid},
	[OP_RELU] = {.unary = un_relu},
	[OP_SILU] = {.unary = un_silu},
	[OP_GELU] = {.unary = un_gelu},
	[OP_CAST] = {.unary = un_cast},
	[OP_ADD] = {.binary = bin_add},
	[OP_SUB] = {.binary = bin_sub},
	[OP_MUL] = {.binary = bin_mul},
	[OP_DIV] = {.binary = bin_div},
	[OP_MAXIMUM] = {.binary = bin_max},
	[OP_MINIMUM] = {.binary = bin_min},
	[OP_ERF] = {.unary = un_erf},
	[OP_SIN] = {.unary = un_sin},
	[OP_COS] = {.unary = un_cos},
	[OP_EXP2] = {.unary = un_exp2},
	[OP_LOG2] = {.unary = un_log2},
	[OP_LOG1P] = {.unary = un_log1p},
	[OP_EXPM1] = {.unary = un_expm1},
	[OP_FLOOR] = {.unary = un_floor},
	[OP_CEIL] = {.unary = un_ceil},
	[OP_ROUND] = {.unary = un_round},
	[OP_TRUNC] = {.unary = un_trunc},
	[OP_SIGN] = {.unary = un_sign},
	[OP_LOGICAL_NOT] = {.unary = un_not},
	[OP_BITWISE_NOT] = {.unary = un_bnot},
	[OP_LOGICAL_AND] = {.binary = bin_and},
	[OP_LOGICAL_OR] = {.binary = bin_or},
	[OP_BITWISE_AND] = {.binary = bin_band},
	[OP_BITWISE_OR] = {.binary = bin_bor},
	[OP_BITWISE_XOR] = {.binary = bin_bxor},
	[OP_SHL] = {.binary = bin_shl},
	[OP_SHR] = {.binary = bin_shr},
	[OP_EQ] = {.binary = bin_eq},
	[OP_NE] = {.binary = bin_ne},
	[OP_LT] = {.binary = bin_lt},
	[OP_LE] = {.binary = bin_le},
	[OP_GT] = {.binary = bin_gt},
	[OP_GE] = {.binary = bin_ge},
	[OP_POW] = {.binary = bin_pow},
	[OP_FLOOR_DIVIDE] = {.binary = bin_floordiv},
	[OP_REMAINDER] = {.binary = bin_rem},
	[OP_WHERE] = {.ternary = tern_where},
	[OP_SUM] = {.fold = bin_add, .init = 0.0},
	[OP_MAX] = {.fold = bin_max, .init = -INFINITY},
	[OP_MEAN] = {.fold = bin_add, .init = 0.0, .mean = true},
	[OP_PROD] = {.fold = bin_mul, .init = 1.0},
};

/* ---- shapes ---- */

typedef struct Shape {
	int rank;
	int64_t ext[MAX_RANK];
} Shape;

/* One evaluation: the fusion and each tensor's values (NULL until computed). */
typedef struct Eval {
	Comp *c;
	const Fusion *f;
	const double **val;
} Eval;

static Shape
shape_of(const Fusion *f, int t)
{
	Shape s = {0};
	int i;

	if (t == 0)
		return s; /* a literal: rank 0 */
	s.rank = f->tensor[t].rank;
	for (i = 0; i < s.rank; i++)
		s.ext[i] = dim_value(f, f->tensor[t].dim[i]);
	return s;
}

static int64_t
numel(const Shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->rank; i++)
		n *= s->ext[i];
	return n;
}

static int64_t
prod(const Shape *s, int from, int to)
{
	int64_t n = 1;

	for (; from < to; from++)
		n *= s->ext[from];
	return n;
}

static WsfStatus PRINTF_LIKE(3, 4)
internal(Eval *e, const Op *op, const char *fmt, ...)
{
	Buf b;
	va_list ap;

	buf_init(&b, e->c->arena);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	diag_internal(e->c, "the reference evaluator", "op %d ('%s' defining '%s'): %s",
	              (int)(op - e->f->op), op_info[op->kind].name, e->f->tensor[op->out].name,
	              buf_str(&b));
	return WSF_ERR_INTERNAL;
}

/*
 * Strides (in elements of IN) that read IN broadcast to OUT: trailing dims
 * line up; a missing or extent-1 dim repeats (stride 0).  -1 if they clash.
 */
static int
broadcast_strides(const Shape *in, const Shape *out, int64_t *st)
{
	int64_t step = 1;
	int d, k;

	if (in->rank > out->rank)
		return -1;
	for (d = out->rank - 1; d >= 0; d--) {
		k = d - (out->rank - in->rank);
		if (k < 0 || (in->ext[k] == 1 && out->ext[d] != 1)) {
			st[d] = 0;
		} else if (in->ext[k] == out->ext[d]) {
			st[d] = step;
		} else {
			return -1;
		}
		if (k >= 0)
			step *= in->ext[k];
	}
	return 0;
}

/* ---- evaluation ---- */

/* Elements a thread takes at the least: below this, one thread does the op. */
enum { GRAIN = 1 << 16 };

/* A pointwise op over output elements [lo, hi): what each thread of eval_pointwise runs. */
typedef struct Pointwise {
	const Op *op;
	const RefOp *r;
	Shape os;
	int64_t st[MAX_IN][MAX_RANK];
	const double *src[MAX_IN];
	double lit[MAX_IN]; /* a number operand, as the kernel computes with it (f32 for a float) */
	int nin;
	Dtype wrap;         /* an integer or bool result: each value as that dtype holds it; else DT_NONE */
	double *out;
} Pointwise;

static void
pointwise_range(void *ctx, int64_t lo, int64_t hi)
{
	const Pointwise *p = ctx;
	const RefOp *r = p->r;
	int64_t off[MAX_IN] = {0}, idx[MAX_RANK] = {0}, n, rest = lo;
	int i, d;

	/* the odometer at element LO */
	for (d = p->os.rank - 1; d >= 0; d--) {
		idx[d] = rest % p->os.ext[d];
		rest /= p->os.ext[d];
		for (i = 0; i < p->nin; i++)
			off[i] += idx[d] * p->st[i][d];
	}
	for (n = lo; n < hi; n++) {
		p->out[n] = r->unary ? r->unary(p->op, p->src[0][off[0]])
		            : r->binary ? r->binary(p->src[0][off[0]], p->src[1][off[1]])
		                        : r->ternary(p->src[0][off[0]], p->src[1][off[1]], p->src[2][off[2]]);
		if (p->wrap)
			p->out[n] = rt_round(p->wrap, p->out[n]);
		/* odometer: step the innermost index, carrying outward */
		for (d = p->os.rank - 1; d >= 0; d--) {
			for (i = 0; i < p->nin; i++)
				off[i] += p->st[i][d];
			if (++idx[d] < p->os.ext[d])
				break;
			for (i = 0; i < p->nin; i++)
				off[i] -= p->st[i][d] * p->os.ext[d];
			idx[d] = 0;
		}
	}
}

static WsfStatus
eval_pointwise(Eval *e, const Op *op, double *out)
{
	Pointwise p = {0};
	int i;

	p.op = op;
	p.r = &ref_ops[op->kind];
	p.os = shape_of(e->f, op->out);
	p.nin = p.r->unary ? 1 : p.r->binary ? 2 : 3;
	p.out = out;
	if (!dtype_is_float(e->f->tensor[op->out].dtype))
		p.wrap = e->f->tensor[op->out].dtype;
	if (op->kind == OP_BITWISE_NOT && p.wrap == DT_BOOL)
		p.r = &ref_ops[OP_LOGICAL_NOT];
	if (op->nin != p.nin)
		return internal(e, op, "%d inputs, expected %d", op->nin, p.nin);
	for (i = 0; i < p.nin; i++) {
		Shape is = shape_of(e->f, op->in[i].tensor);

		p.lit[i] = op->in[i].lit_int && p.wrap ? op->in[i].lit : (float)op->in[i].lit;
		p.src[i] = op->in[i].tensor ? e->val[op->in[i].tensor] : &p.lit[i];
		if (broadcast_strides(&is, &p.os, p.st[i]) < 0)
			return internal(e, op, "input %d does not broadcast to the output shape", i);
	}
	rt_par_for(numel(&p.os), GRAIN, pointwise_range, &p);
	return WSF_OK;
}

/* A reduction over the rows [lo, hi) of its [outer, n, inner] view. */
typedef struct Reduce {
	const RefOp *r;
	const double *in;
	double *out;
	int64_t n, inner;
} Reduce;

static void
reduce_range(void *ctx, int64_t lo, int64_t hi)
{
	const Reduce *p = ctx;
	const RefOp *r = p->r;
	int64_t o, k, i, n = p->n, inner = p->inner;

	/* keepdim or not, the output is laid out as [outer, inner] */
	for (o = lo; o < hi; o++) {
		double *acc = p->out + o * inner;

		for (i = 0; i < inner; i++)
			acc[i] = r->init;
		for (k = 0; k < n; k++)
			for (i = 0; i < inner; i++)
				acc[i] = r->fold(acc[i], p->in[(o * n + k) * inner + i]);
		if (r->mean)
			for (i = 0; i < inner; i++)
				acc[i] /= (double)n;
	}
}

static WsfStatus
eval_reduce(Eval *e, const Op *op, double *out)
{
	Shape is = shape_of(e->f, op->in[0].tensor), os = shape_of(e->f, op->out);
	Reduce p = {&ref_ops[op->kind], e->val[op->in[0].tensor], out, 0, 0};
	int64_t outer;

	if (op->nin != 1 || op->in[0].tensor == 0 || op->axis < 0 || op->axis >= is.rank)
		return internal(e, op, "axis %d of an input of rank %d", op->axis, is.rank);
	outer = prod(&is, 0, op->axis);
	p.n = prod(&is, op->axis, op->axis + op_naxes(op));   /* (dims axis .. axis + naxes - 1) */
	p.inner = prod(&is, op->axis + op_naxes(op), is.rank);
	if (numel(&os) != outer * p.inner)
		return internal(e, op, "output has %lld elements, expected %lld",
		                (long long)numel(&os), (long long)(outer * p.inner));
	/* each thread takes whole rows: every output element folds in the serial order */
	rt_par_for(outer, 1 + GRAIN / (p.n * p.inner > 0 ? p.n * p.inner : 1), reduce_range, &p);
	return WSF_OK;
}

/* Strides, in whole matrices, that step operand shape S's batch dims over OUT's. */
static int
batch_strides(const Shape *s, const Shape *out, int64_t *st)
{
	Shape sb = *s, ob = *out;

	sb.rank -= 2;
	ob.rank -= 2;
	return broadcast_strides(&sb, &ob, st);
}

/* One matmul of a batch: out[M,N] = a[M,K] b[K,N], where a(i,k) = A[i*ai + k*ak] and B is row-major [K,N]. */
typedef struct MatmulJob {
	const double *a, *b;
	double *out;
	int64_t ai, ak, kk, nn;
} MatmulJob;

/*
 * Rows [lo, hi) of a matmul.  Each element sums its k terms in order from
 * zero, as the plain triple loop does, so any split (and this blocking)
 * gives the same result.  Blocked for the cache: a block of MM_KB rows of B
 * by MM_CB columns (1 MiB of doubles) serves every row of the range before
 * the next is read.  Row by row, each row streamed all of B from memory
 * (an 8192^3 check: 512 MiB a row, 73 s on 16 cores).
 */
enum { MM_KB = 256, MM_CB = 512 };

static void
matmul_rows(void *ctx, int64_t lo, int64_t hi)
{
	const MatmulJob *j = ctx;
	int64_t i, k, c, k0, c0;

	for (i = lo; i < hi; i++)
		memset(j->out + i * j->nn, 0, (size_t)j->nn * sizeof(double));
	for (c0 = 0; c0 < j->nn; c0 += MM_CB) {
		int64_t c1 = c0 + MM_CB < j->nn ? c0 + MM_CB : j->nn;

		for (k0 = 0; k0 < j->kk; k0 += MM_KB) {
			int64_t k1 = k0 + MM_KB < j->kk ? k0 + MM_KB : j->kk;

			for (i = lo; i < hi; i++) {
				double *row = j->out + i * j->nn;

				for (k = k0; k < k1; k++) {
					double x = j->a[i * j->ai + k * j->ak];
					const double *brow = j->b + k * j->nn;

					for (c = c0; c < c1; c++)
						row[c] += x * brow[c];
				}
			}
		}
	}
}

/* A thread takes whole rows: an 8192^3 check is 5.5e11 multiply-adds, minutes in one thread. */
static void
matmul_one(const double *a, int64_t ai, int64_t ak, const double *b, double *out, int64_t m,
           int64_t kk, int64_t nn)
{
	MatmulJob j = {a, b, out, ai, ak, kk, nn};

	rt_par_for(m, 1 + GRAIN / (kk * nn > 0 ? kk * nn : 1), matmul_rows, &j);
}

static WsfStatus
eval_matmul(Eval *e, const Op *op, double *out)
{
	Shape as = shape_of(e->f, op->in[0].tensor), bs = shape_of(e->f, op->in[1].tensor);
	Shape os = shape_of(e->f, op->out);
	const double *a = e->val[op->in[0].tensor], *b = e->val[op->in[1].tensor];
	int64_t ast[MAX_RANK] = {0}, bst[MAX_RANK] = {0}, idx[MAX_RANK] = {0};
	int64_t m, k, n, kb, aoff = 0, boff = 0, batch, nbatch, i, j;
	double *bt;
	int d;

	if (op->nin != 2 || !op->in[0].tensor || !op->in[1].tensor || as.rank < 2 || bs.rank < 2 ||
	    os.rank < 2)
		return internal(e, op, "matmul needs two tensors of rank 2 or more");
	m = as.ext[as.rank - (op->transpose_a ? 1 : 2)];
	k = as.ext[as.rank - (op->transpose_a ? 2 : 1)];
	kb = bs.ext[bs.rank - (op->transpose_b ? 1 : 2)];
	n = bs.ext[bs.rank - (op->transpose_b ? 2 : 1)];
	if (k != kb || os.ext[os.rank - 2] != m || os.ext[os.rank - 1] != n)
		return internal(e, op, "shapes do not multiply");
	if (batch_strides(&as, &os, ast) < 0 || batch_strides(&bs, &os, bst) < 0)
		return internal(e, op, "batch dims do not broadcast");
	/* a transposed B is copied to row-major [K,N] per batch so the inner loop stays contiguous */
	bt = op->transpose_b ? arena_alloc(e->c->arena, (size_t)(k * n) * sizeof *bt) : NULL;
	nbatch = prod(&os, 0, os.rank - 2);
	for (batch = 0; batch < nbatch; batch++) {
		const double *ab = a + aoff * m * k, *bb = b + boff * k * n;

		if (bt) {
			for (i = 0; i < n; i++)
				for (j = 0; j < k; j++)
					bt[j * n + i] = bb[i * k + j];
			bb = bt;
		}
		matmul_one(ab, op->transpose_a ? 1 : k, op->transpose_a ? m : 1, bb, out + batch * m * n,
		           m, k, n);
		for (d = os.rank - 3; d >= 0; d--) {
			aoff += ast[d];
			boff += bst[d];
			if (++idx[d] < os.ext[d])
				break;
			aoff -= ast[d] * os.ext[d];
			boff -= bst[d] * os.ext[d];
			idx[d] = 0;
		}
	}
	return WSF_OK;
}

/*
 * Philox4x32-10 (Salmon et al., SC'11) of counter C under key (K0, K1), in
 * place: ten rounds of two 32 x 32 -> 64-bit products, the key bumped by
 * the Weyl constants between them.
 */
void
rt_philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
	int r;

	for (r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;

		c[1] = (uint32_t)p1;
		c[3] = (uint32_t)p0;
		c[0] = n0;
		c[2] = n2;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
}

/*
 * rand_like's number for element IDX (row-major in x's shape): word IDX % 4
 * of Philox4x32-10 of the counter (IDX / 4, OFFSET) under the key SEED
 * (each 64 bits, low word first), its top 24 bits over 2^24: a float in
 * [0, 1) that f32 holds exactly.  One block makes four elements' numbers.
 * codegen/device_dtypes.cuh's wsf_rand_like is the same function.
 */
double
rt_rand_uniform(uint64_t seed, uint64_t offset, uint64_t idx)
{
	uint64_t q = idx >> 2;
	uint32_t c[4] = {(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)offset, (uint32_t)(offset >> 32)};

	rt_philox(c, (uint32_t)seed, (uint32_t)(seed >> 32));
	return (double)(c[idx & 3] >> 8) * 0x1p-24;
}

/* rand_like: each element's number, from the seed's and the offset's values (scalars). */
static WsfStatus
eval_rand(Eval *e, const Op *op, double *out)
{
	Shape os = shape_of(e->f, op->out);
	int64_t n = numel(&os), i;
	const double *seed = e->val[op->in[1].tensor], *offset = e->val[op->in[2].tensor];

	if (!seed || !offset)
		return internal(e, op, "seed or offset not computed before rand_like");
	for (i = 0; i < n; i++)
		out[i] = rt_rand_uniform((uint64_t)(int64_t)seed[0], (uint64_t)(int64_t)offset[0], (uint64_t)i);
	return WSF_OK;
}

/* ---- views: index maps ---- */

/*
 * Where view OP reads element IDX of its output OS from: the index SRC in
 * input *WHICH (cat's; else 0) of shape INS[*WHICH]; false for an element
 * that pad fills.
 */
static bool
view_source(const Op *op, const Shape *os, const Shape *ins, const int64_t *idx, int64_t *src, int *which)
{
	const Shape *is = &ins[0];
	int64_t start, count;
	int d = op->axis, k, lead = os->rank - is->rank;

	*which = 0;
	memcpy(src, idx, MAX_RANK * sizeof *src);
	switch (op->kind) {
	case OP_SLICE:
		view_slice(op, is->ext[d], &start, &count);
		src[d] = start + idx[d] * op->step;
		break;
	case OP_CAT:
		while (src[d] >= ins[*which].ext[d]) {
			src[d] -= ins[*which].ext[d];
			++*which;
		}
		break;
	case OP_PERMUTE:
		for (k = 0; k < os->rank; k++)
			src[op->dims[k]] = idx[k];
		break;
	case OP_TRANSPOSE:
		src[op->dim0] = idx[op->dim1];
		src[op->dim1] = idx[op->dim0];
		break;
	case OP_EXPAND:
		for (k = 0; k < is->rank; k++)
			src[k] = is->ext[k] == 1 ? 0 : idx[k + lead];
		break;
	case OP_PAD:
		for (k = 0; k < op->npad / 2; k++) {
			d = is->rank - 1 - k;
			src[d] = idx[d] - op->pad[2 * k];
			if (src[d] < 0 || src[d] >= is->ext[d])
				return false;
		}
		break;
	default:
		break;
	}
	return true;
}

/*
 * index_select and gather: element i reads x at i with its index along dim
 * replaced by the index's value (index_select: at i's position along dim;
 * gather: at i).  A value outside 0..n-1 is an error here, naming the
 * index, the position and the value (the kernel does not check: --check is
 * where it is caught).
 */
static WsfStatus
eval_index(Eval *e, const Op *op, const Shape *os, double *out)
{
	const Fusion *f = e->f;
	Shape xs = shape_of(f, op->in[0].tensor);
	const double *x = e->val[op->in[0].tensor], *ix = e->val[op->in[1].tensor];
	int64_t n, rest, idx[MAX_RANK], off, v;
	int d;

	for (n = 0; n < numel(os); n++) {
		for (rest = n, d = os->rank - 1; d >= 0; d--) {
			idx[d] = rest % os->ext[d];
			rest /= os->ext[d];
		}
		v = (int64_t)ix[op->kind == OP_GATHER ? n : idx[op->axis]];
		if (v < 0 || v >= xs.ext[op->axis]) {
			diag_error(e->c, op->in[1].pos, "op '%s': index '%s' holds %lld at element %lld, outside 0..%lld "
			           "(dim %d of '%s')", op_info[op->kind].name, f->tensor[op->in[1].tensor].name, (long long)v,
			           (long long)(op->kind == OP_GATHER ? n : idx[op->axis]), (long long)(xs.ext[op->axis] - 1),
			           op->axis, f->tensor[op->in[0].tensor].name);
			return WSF_ERR_INPUT;
		}
		idx[op->axis] = v;
		for (off = 0, d = 0; d < xs.rank; d++)
			off = off * xs.ext[d] + idx[d];
		out[n] = x[off];
	}
	return WSF_OK;
}

/*
 * index_copy and slice_scatter: x, with each element of the part placed
 * (source, src) at its index, the position along dim replaced by the
 * index's value there (range-checked as eval_index does) or by the slice's.
 */
static WsfStatus
eval_scatter(Eval *e, const Op *op, const Shape *os, double *out)
{
	const Fusion *f = e->f;
	int last = op->nin - 1;
	Shape ps = shape_of(f, op->in[last].tensor);
	const double *part = e->val[op->in[last].tensor], *ix = op->kind == OP_INDEX_COPY ? e->val[op->in[1].tensor] : 0;
	int64_t n, rest, idx[MAX_RANK], off, v, start, count;
	int d;

	memcpy(out, e->val[op->in[0].tensor], (size_t)numel(os) * sizeof *out);
	view_slice(op, os->ext[op->axis], &start, &count);
	for (n = 0; n < numel(&ps); n++) {
		for (rest = n, d = ps.rank - 1; d >= 0; d--) {
			idx[d] = rest % ps.ext[d];
			rest /= ps.ext[d];
		}
		v = ix ? (int64_t)ix[idx[op->axis]] : start + idx[op->axis] * op->step;
		if (v < 0 || v >= os->ext[op->axis]) {
			diag_error(e->c, op->in[1].pos, "op 'index_copy': index '%s' holds %lld at element %lld, outside "
			           "0..%lld (dim %d of '%s')", f->tensor[op->in[1].tensor].name, (long long)v,
			           (long long)idx[op->axis], (long long)(os->ext[op->axis] - 1), op->axis,
			           f->tensor[op->in[0].tensor].name);
			return WSF_ERR_INPUT;
		}
		idx[op->axis] = v;
		for (off = 0, d = 0; d < os->rank; d++)
			off = off * os->ext[d] + idx[d];
		out[off] = part[n];
	}
	return WSF_OK;
}

/*
 * A placed cat or pad (views.c), whose inputs have its shape: a cat's part
 * j where the index along its dim is below part j's end, a pad's input
 * inside its box, else the fill.
 */
static WsfStatus
eval_placed(Eval *e, const Op *op, const Shape *os, double fill, double *out)
{
	int64_t n, rest, idx;
	int d, j;

	for (n = 0; n < numel(os); n++) {
		bool in = true;

		for (rest = n, d = os->rank - 1; d >= 0; d--, rest /= os->ext[d + 1]) {
			idx = rest % os->ext[d];
			if (op->kind == OP_CAT && d == op->axis) {
				if (op->digit[1])   /* (a digit of the index: a reshape merged the cat's dim) */
					idx = idx / op->digit[0] % op->digit[1];
				for (j = 0; j + 1 < op->nin && idx >= op->pad[j]; j++)
					;
				out[n] = e->val[op->in[j].tensor][n];
			}
			if (op->kind == OP_PAD && os->rank - 1 - d < op->npad / 2)
				in = in && idx >= op->pad[2 * (os->rank - 1 - d)] &&
				     idx < os->ext[d] - op->pad[2 * (os->rank - 1 - d) + 1];
		}
		if (op->kind == OP_PAD)
			out[n] = in ? e->val[op->in[0].tensor][n] : fill;
	}
	return WSF_OK;
}

/* A view: each output element is an input element (pad's fill: VALUE as the dtype holds it). */
static WsfStatus
eval_view(Eval *e, const Op *op, double *out)
{
	Shape os = shape_of(e->f, op->out), ins[MAX_IN];
	Dtype dt = e->f->tensor[op->out].dtype;
	double fill = dtype_is_float(dt) ? (double)(float)op->value : rt_round(dt, op->value);
	int64_t idx[MAX_RANK] = {0}, src[MAX_RANK], n, total = numel(&os), off, rest;
	int d, j, which;

	if (op->kind == OP_CHUNK || op->kind == OP_SPLIT)
		return internal(e, op, "chunk and split must be read as slices");
	if (op->kind == OP_RESHAPE || op->kind == OP_VIEW) {   /* the row-major order is kept */
		memcpy(out, e->val[op->in[0].tensor], (size_t)total * sizeof *out);
		return WSF_OK;
	}
	if (op->placed)   /* views.c's rewrite (a test evaluates it): its inputs at its indices already */
		return eval_placed(e, op, &os, fill, out);
	if (op->kind == OP_INDEX_SELECT || op->kind == OP_GATHER)
		return eval_index(e, op, &os, out);
	if (op->kind == OP_INDEX_COPY || op->kind == OP_SLICE_SCATTER)
		return eval_scatter(e, op, &os, out);
	for (j = 0; j < op->nin; j++)
		ins[j] = shape_of(e->f, op->in[j].tensor);
	for (n = 0; n < total; n++) {
		for (rest = n, d = os.rank - 1; d >= 0; d--) {
			idx[d] = rest % os.ext[d];
			rest /= os.ext[d];
		}
		if (!view_source(op, &os, ins, idx, src, &which)) {
			out[n] = fill;
			continue;
		}
		for (off = 0, d = 0; d < ins[which].rank; d++)
			off = off * ins[which].ext[d] + src[d];
		out[n] = e->val[op->in[which].tensor][off];
	}
	return WSF_OK;
}

/* one_hot: out[..., c] = (c == label[...]); a label outside 0..classes-1 gives a row of zeros (torch's errs). */
static WsfStatus
eval_one_hot(Eval *e, const Op *op, double *out)
{
	Shape os = shape_of(e->f, op->out);
	int64_t v = os.ext[os.rank - 1], n = numel(&os), i;
	const double *label = e->val[op->in[0].tensor];

	for (i = 0; i < n; i++)
		out[i] = label[i / v] == (double)(i % v);
	return WSF_OK;
}

/*
 * Does A (value AV at index AI) come before B in topk's order: NaN first
 * (torch's: the largest), then larger values, then lower indices; SMALLEST
 * (largest: false): smaller values first, NaN last?
 */
static bool
topk_before(double av, int64_t ai, double bv, int64_t bi, bool smallest)
{
	if (isnan(av) != isnan(bv))
		return isnan(av) != smallest;
	if (!isnan(av) && av != bv)
		return smallest ? av < bv : av > bv;
	return ai < bi;
}

/*
 * topk along the last dim: each row's k largest in order (NaN the largest,
 * ties to the lower index), its values (part 0) or their indices (part 1);
 * k selections of the best not yet taken, O(k n) a row.
 */
static WsfStatus
eval_topk(Eval *e, const Op *op, double *out)
{
	Shape is = shape_of(e->f, op->in[0].tensor), os = shape_of(e->f, op->out);
	int64_t n = is.ext[is.rank - 1], k = os.ext[os.rank - 1], rows = numel(&is) / n, r, j, i;
	const double *x = e->val[op->in[0].tensor];
	bool *taken = malloc((size_t)n * sizeof *taken);

	if (!taken)
		return diag_error(e->c, op->pos, "the reference for '%s' needs more memory than exists",
		                  e->f->tensor[op->out].name), WSF_ERR_NOMEM;
	for (r = 0; r < rows; r++) {
		const double *row = x + r * n;

		memset(taken, 0, (size_t)n * sizeof *taken);
		for (j = 0; j < k; j++) {
			int64_t best = -1;

			for (i = 0; i < n; i++)
				if (!taken[i] && (best < 0 || topk_before(row[i], i, row[best], best, op->smallest)))
					best = i;
			taken[best] = true;
			out[r * k + j] = op->part ? (double)best : row[best];
		}
	}
	free(taken);
	return WSF_OK;
}

/* position: each element's index along axis (argmax's expansion). */
static WsfStatus
eval_position(Eval *e, const Op *op, double *out)
{
	Shape os = shape_of(e->f, op->out);
	int64_t inner = prod(&os, op->axis + 1, os.rank), n = os.ext[op->axis], total = numel(&os), i;

	for (i = 0; i < total; i++)
		out[i] = (double)(i / inner % n);
	return WSF_OK;
}

static WsfStatus
eval_op(Eval *e, const Op *op, double *out)
{
	const RefOp *r = &ref_ops[op->kind];

	if (op->kind == OP_RAND_LIKE)
		return eval_rand(e, op, out);
	if (op->kind == OP_ONE_HOT)
		return eval_one_hot(e, op, out);
	if (op->kind == OP_POSITION)
		return eval_position(e, op, out);
	if (op->kind == OP_TOPK)
		return eval_topk(e, op, out);
	if (op_info[op->kind].cls == CLS_VIEW)
		return eval_view(e, op, out);

	if (op_info[op->kind].cls != CLS_COMPOSITE && !r->unary && !r->binary && !r->ternary && !r->fold &&
	    op_info[op->kind].cls != CLS_MATMUL)
		return internal(e, op, "no reference semantics; add the op's row to ref_ops");
	switch (op_info[op->kind].cls) {
	case CLS_UNARY:
	case CLS_BINARY:
		return eval_pointwise(e, op, out);
	case CLS_REDUCE:
		return eval_reduce(e, op, out);
	case CLS_MATMUL:
		return eval_matmul(e, op, out);
	default:
		return internal(e, op, "composites must be expanded before the reference runs");
	}
}

/* A zeroed array in *V for the values op OP defines. */
static WsfStatus
alloc_values(Eval *e, const Op *op, double **v)
{
	const Tensor *t = &e->f->tensor[op->out];
	int64_t n = tensor_numel(e->f, t);

	if (n == 0)
		return internal(e, op, "output '%s' has an unbound or empty size", t->name);
	if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double)) {   /* n < 0: the count overflows */
		Pos none = {0};

		diag_error(e->c, none, "the reference for '%s' needs more memory than exists", t->name);
		return WSF_ERR_NOMEM;
	}
	/* every op writes each of its elements; unzeroed, the pages are first touched in parallel */
	*v = arena_alloc_raw(e->c->arena, (size_t)n * sizeof(double));
	return WSF_OK;
}

/*
 * signal: {per_tile, consumer: [...]}: the consumer's outputs are computed
 * from the stored outputs as stored, rounded to their dtype (the kernel's
 * consumer role reads them back from memory).  After evaluate(): the stored
 * outputs rounded, then the ops between them and the consumer's outputs
 * again, in op order, and those outputs copied out.
 */
static WsfStatus
consumer_outputs(Eval *e, double *const *out)
{
	const Fusion *f = e->f;
	bool *needed = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *needed);
	bool *stored = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *stored);
	WsfStatus st;
	int i, j;

	for (i = 0; i < f->nout; i++) {
		int t = f->out[i].tensor;

		if (f->out[i].consumer) {
			needed[t] = true;
			continue;
		}
		stored[t] = true;
		e->val[t] = out[i];   /* already copied out: rounded there, in place */
		for (int64_t n = tensor_numel(f, &f->tensor[t]) - 1; n >= 0; n--)
			out[i][n] = rt_round(f->out[i].dtype, out[i][n]);
	}
	for (i = f->nop - 1; i >= 1; i--)
		for (j = 0; j < f->op[i].nin && needed[f->op[i].out] && !stored[f->op[i].out]; j++)
			if (f->op[i].in[j].tensor)
				needed[f->op[i].in[j].tensor] = true;
	for (i = 1; i < f->nop; i++) {
		const Op *op = &f->op[i];
		double *v = NULL;

		if (!needed[op->out] || stored[op->out])
			continue;
		if ((st = alloc_values(e, op, &v)) != WSF_OK || (st = eval_op(e, op, v)) != WSF_OK)
			return st;
		e->val[op->out] = v;
	}
	for (i = 0; i < f->nout; i++)
		if (f->out[i].consumer)
			memmove(out[i], e->val[f->out[i].tensor],
			        (size_t)tensor_numel(f, &f->tensor[f->out[i].tensor]) * sizeof(double));
	return WSF_OK;
}

static WsfStatus
evaluate(Eval *e, const double *const *in, double *const *out)
{
	const Fusion *f = e->f;
	WsfStatus st;
	int i;

	for (i = 0; i < f->ninput; i++)
		e->val[f->input[i]] = in[i];
	for (i = 1; i < f->nop; i++) {
		const Op *op = &f->op[i];
		double *v = NULL;

		if (op->kind <= OP_NONE || op->kind >= OP_COUNT) {
			diag_internal(e->c, "the reference evaluator", "op %d has kind %d", i, (int)op->kind);
			return WSF_ERR_INTERNAL;
		}
		if ((st = alloc_values(e, op, &v)) != WSF_OK || (st = eval_op(e, op, v)) != WSF_OK)
			return st;
		e->val[op->out] = v;
	}
	for (i = 0; i < f->nout; i++) {
		int t = f->out[i].tensor;

		if (!e->val[t]) {
			diag_internal(e->c, "the reference evaluator", "output '%s' was never computed",
			              f->tensor[t].name);
			return WSF_ERR_INTERNAL;
		}
		memmove(out[i], e->val[t], (size_t)tensor_numel(f, &f->tensor[t]) * sizeof(double));
	}
	return f->sched.consumer_pos.line ? consumer_outputs(e, out) : WSF_OK;
}

WsfStatus
rt_reference(Comp *c, const Fusion *f, const double *const *in, double *const *out)
{
	Fusion ref = *f;   /* the ops the user wrote, before views.c moved views down */
	Eval e = {c, &ref, NULL};
	jmp_buf saved;
	WsfStatus st;

	if (f->ref_op) {
		ref.op = f->ref_op;
		ref.nop = f->nref_op;
	}

	/* big intermediates are the likeliest allocation to fail: catch it here, not in the caller */
	memcpy(&saved, &c->oom, sizeof saved);
	if (setjmp(c->oom)) {
		Pos none = {0};

		memcpy(&c->oom, &saved, sizeof saved);
		diag_error(c, none, "out of memory evaluating the reference for '%s'", f->name);
		return WSF_ERR_NOMEM;
	}
	e.val = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *e.val);
	st = evaluate(&e, in, out);
	memcpy(&c->oom, &saved, sizeof saved);
	return st;
}
