/*
 * test_grad.c: passes/grad.c, each op's rule against finite differences.
 *
 * Each test reads a tiny spec, expands and infers it (the forward F), runs
 * pass_grad (the backward G) and evaluates G with rt_reference on random
 * inputs in f64, the upstream gradients grad_OUT random too.  The same
 * gradient by central differences: L(x) = sum over outputs of grad_OUT .
 * OUT(x), each input element moved by h = 1e-6 max(1, |x|) either way,
 * F evaluated by rt_reference.  They agree within 1e-6 max(1, the largest
 * difference quotient) (f64: the truncation error is about h^2, the
 * rounding error about 1e-16 / h).  Inputs are drawn where the forward is
 * smooth: away from 0 for relu and abs, positive for log and sqrt, with no
 * ties for max (random reals do not tie).  Also: the backward printed as a
 * spec and read back computes the same (spec_write), and the errors for
 * what is not derived yet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/compiler.h"
#include "../../passes/passes.h"

#include "fixture.h"

enum { MAXN = 4096 };

/* How inputs are drawn: in [-1.5, 1.5] away from 0 (|x| >= 0.2), or in [LO, HI]. */
typedef struct Draw {
	double lo, hi;   /* both 0: signed, away from 0 */
	double h, tol;   /* 0: 1e-6 and 1e-6 */
} Draw;

static uint64_t rng = 0x9e3779b97f4a7c15u;

static double
uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static double
draw(const Draw *d)
{
	if (d->lo == 0 && d->hi == 0) {
		double v = 0.2 + 1.3 * uniform();

		return uniform() < 0.5 ? -v : v;
	}
	return d->lo + (d->hi - d->lo) * uniform();
}

/* Reads, expands and infers SPEC (which may be in the old arena) in a fresh compilation: the forward. */
static Fusion *
forward(Fixture *t, const char *text)
{
	Comp *c = &t->c;
	char *spec = strdup(text);

	assert_non_null(spec);
	arena_free(c->arena);
	c->arena = arena_new(&c->oom);
	c->strs = strtab_new(c->arena);
	text = arena_strdup(c->arena, spec);
	free(spec);
	spec = (char *)text;
	c->nerrors = 0;
	c->status = WSF_OK;
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || pass_expand(c) || pass_infer(c))
		fail_msg("%s", t->msg);
	return c->fusion;
}

static Fusion *
backward(Fixture *t)
{
	if (pass_grad(&t->c) || fusion_verify(&t->c, t->c.fusion, "grad"))
		fail_msg("grad: %s", t->msg);
	return t->c.fusion;
}

static int64_t
numel(const Fusion *f, int t)
{
	int64_t n = tensor_numel(f, &f->tensor[t]);

	assert_true(n > 0 && n <= MAXN);
	return n;
}

/* The data of each tensor, by name: the forward's inputs and the upstream gradients. */
typedef struct Data {
	const char *name[16];
	double *v[16];
	int n;
} Data;

static double *
data_of(Data *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->name[i], name) == 0)
			return d->v[i];
	return NULL;
}

static double *
data_add(Fixture *t, Data *d, const char *name, int64_t n, const Draw *how)
{
	double *v = arena_alloc(t->c.arena, (size_t)n * sizeof *v);

	assert_true(d->n < 16);
	for (int64_t i = 0; i < n; i++)
		v[i] = how ? draw(how) : 0;
	d->name[d->n] = name;
	d->v[d->n++] = v;
	return v;
}

/* F's outputs from D's inputs (integer inputs are drawn integral; IN and OUT name tensors of F). */
static void
eval(Fixture *t, const Fusion *f, Data *d, double **out)
{
	const double *in[16];

	for (int i = 0; i < f->ninput; i++)
		assert_non_null(in[i] = data_of(d, f->tensor[f->input[i]].name));
	assert_int_equal(rt_reference(&t->c, f, in, out), WSF_OK);
}

/* sum over F's outputs of grad_OUT . OUT */
static double
loss(Fixture *t, const Fusion *f, Data *d)
{
	double *out[16], s = 0;
	int i;

	for (i = 0; i < f->nout; i++)
		out[i] = arena_alloc(t->c.arena, (size_t)numel(f, f->out[i].tensor) * sizeof(double));
	eval(t, f, d, out);
	for (i = 0; i < f->nout; i++) {
		const double *u = data_of(d, arena_printf(t->c.arena, "grad_%s", f->tensor[f->out[i].tensor].name));
		int64_t n = numel(f, f->out[i].tensor);

		for (int64_t k = 0; u && k < n; k++)
			s += u[k] * out[i][k];
	}
	return s;
}

/* SPEC's gradients by grad.c against central differences, inputs drawn as HOW says. */
static void
check_with(Fixture *t, const char *spec, Draw how)
{
	Fusion *f = forward(t, spec), *g;
	double h = how.h ? how.h : 1e-6, tol = how.tol ? how.tol : 1e-6;
	double *out[16];
	Data d = {0};
	int i;

	for (i = 0; i < f->ninput; i++) {
		const Tensor *x = &f->tensor[f->input[i]];
		double *v = data_add(t, &d, x->name, numel(f, f->input[i]), &how);

		if (!dtype_is_float(x->dtype))   /* integer seeds and offsets, small integers */
			for (int64_t k = 0; k < numel(f, f->input[i]); k++)
				v[k] = floor(4 * uniform());
	}
	for (i = 0; i < f->nout; i++)
		data_add(t, &d, arena_printf(t->c.arena, "grad_%s", f->tensor[f->out[i].tensor].name),
		         numel(f, f->out[i].tensor), &(Draw){-1, 1, 0, 0});
	g = backward(t);
	for (i = 0; i < g->nout; i++)
		out[i] = arena_alloc(t->c.arena, (size_t)numel(g, g->out[i].tensor) * sizeof(double));
	eval(t, g, &d, out);
	for (i = 0; i < g->nout; i++) {
		const char *name = g->tensor[g->out[i].tensor].name;
		int x = fusion_find_tensor(f, intern_cstr(t->c.strs, name + 5));
		double *v = data_of(&d, name + 5), *fd, big = 1;
		int64_t n, k;

		assert_true(strncmp(name, "grad_", 5) == 0 && x && v);
		n = numel(f, x);
		assert_int_equal(numel(g, g->out[i].tensor), n);
		fd = arena_alloc(t->c.arena, (size_t)n * sizeof *fd);
		for (k = 0; k < n; k++) {
			double x0 = v[k], s = h * fmax(1, fabs(x0)), lp, lm;

			v[k] = x0 + s;
			lp = loss(t, f, &d);
			v[k] = x0 - s;
			lm = loss(t, f, &d);
			v[k] = x0;
			fd[k] = (lp - lm) / (2 * s);
			big = fmax(big, fabs(fd[k]));
		}
		for (k = 0; k < n; k++)
			if (!(fabs(out[i][k] - fd[k]) <= tol * big))
				fail_msg("%s[%lld]: grad.c %.12g, differences %.12g, in\n%s", name, (long long)k, out[i][k],
				         fd[k], spec);
	}
}

static void
check(Fixture *t, const char *spec)
{
	check_with(t, spec, (Draw){0});
}

/* "y = OP(x)" over x of SHAPE, with ATTRS ("" or ", approximate: tanh"). */
static const char *
unary_spec(Fixture *t, const char *op, const char *shape, const char *attrs)
{
	return arena_printf(t->c.arena,
	                    "fusion: u\ninputs:\n  x: {dtype: f32, shape: %s}\nops:\n"
	                    "  - {out: y, op: %s, in: [x]%s}\noutputs:\n  y: {}\n", shape, op, attrs);
}

static void
test_unary(void **state)
{
	Fixture *t = *state;
	static const char *const smooth[] = {"neg", "abs", "exp", "tanh", "sigmoid", "relu", "silu", "gelu", "erf",
	                                     "sin", "cos", "exp2", "expm1"};
	static const char *const positive[] = {"log", "sqrt", "rsqrt", "log2", "log1p"};
	int i;

	for (i = 0; i < countof(smooth); i++)
		check(t, unary_spec(t, smooth[i], "[3, 4]", ""));
	for (i = 0; i < countof(positive); i++)
		check_with(t, unary_spec(t, positive[i], "[3, 4]", ""), (Draw){0.5, 2, 0, 0});
	check(t, unary_spec(t, "gelu", "[2, 3, 4]", ", approximate: tanh"));
	check(t, unary_spec(t, "silu", "[]", ""));
}

/* "y = OP(a, b)", a of shape SA, b of SB. */
static const char *
binary_spec(Fixture *t, const char *op, const char *sa, const char *sb)
{
	return arena_printf(t->c.arena,
	                    "fusion: b\ninputs:\n  a: {dtype: f32, shape: %s}\n  b: {dtype: f32, shape: %s}\nops:\n"
	                    "  - {out: y, op: %s, in: [a, b]}\noutputs:\n  y: {}\n", sa, sb, op);
}

/* Broadcasting along each axis of 2-D and 3-D shapes, either operand the smaller. */
static void
test_binary_broadcast(void **state)
{
	Fixture *t = *state;
	static const char *const shapes[] = {"[2, 3, 4]", "[4]", "[3, 1]", "[2, 1, 4]", "[1, 3, 4]", "[2, 1, 1]",
	                                     "[1]", "[]", "[3, 4]", "[1, 1, 4]"};
	static const char *const ops[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
	int i, j;

	for (i = 0; i < countof(ops); i++)
		for (j = 0; j < countof(shapes); j++) {
			check(t, binary_spec(t, ops[i], "[2, 3, 4]", shapes[j]));
			check(t, binary_spec(t, ops[i], shapes[j], "[2, 3, 4]"));
		}
	check(t, binary_spec(t, "mul", "[3, 1]", "[1, 4]"));   /* both broadcast: [3, 4] */
	check(t, binary_spec(t, "div", "[4, 1]", "[4]"));
}

static void
test_pow_remainder(void **state)
{
	Fixture *t = *state;

	check_with(t, binary_spec(t, "pow", "[3, 4]", "[4]"), (Draw){0.5, 2, 0, 0});
	check_with(t, binary_spec(t, "pow", "[1, 4]", "[3, 4]"), (Draw){0.5, 2, 0, 0});
	/* a2 / b2 in (1.1, 1.8): floor is 1 nearby */
	check_with(t, "fusion: r\ninputs:\n  a: {dtype: f32, shape: [3, 4]}\n  b: {dtype: f32, shape: [4]}\nops:\n"
	              "  - {out: a2, op: add, in: [a, 2.2]}\n  - {out: b2, op: add, in: [b, 1.5]}\n"
	              "  - {out: y, op: remainder, in: [a2, b2]}\noutputs:\n  y: {}\n", (Draw){0, 0.5, 0, 0});
}

/* Literal operands on either side. */
static void
test_literals(void **state)
{
	Fixture *t = *state;

	check(t, "fusion: l\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\nops:\n"
	         "  - {out: a, op: mul, in: [x, 2.5]}\n"
	         "  - {out: b, op: sub, in: [1.0, a]}\n"
	         "  - {out: c, op: div, in: [2, b]}\n"
	         "  - {out: d, op: div, in: [c, 3.0]}\n"
	         "  - {out: e, op: maximum, in: [d, 0.1]}\n"
	         "  - {out: y, op: minimum, in: [2.0, e]}\noutputs:\n  y: {}\n");
	check_with(t, "fusion: p\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\nops:\n"
	              "  - {out: a, op: pow, in: [x, 3]}\n"
	              "  - {out: b, op: pow, in: [2.0, x]}\n"
	              "  - {out: c, op: pow, in: [x, -0.5]}\n"
	              "  - {out: y, op: add, in: [a, b]}\n"
	              "  - {out: z, op: add, in: [y, c]}\noutputs:\n  z: {}\n", (Draw){0.5, 2, 0, 0});
}

/* where (the condition gets nothing), comparisons and rounding (zero), an integer input (none), rand_like. */
static void
test_where_and_zero(void **state)
{
	Fixture *t = *state;
	Fusion *g;

	check(t, "fusion: w\ninputs:\n  m: {dtype: f32, shape: [3, 4]}\n  x: {dtype: f32, shape: [3, 4]}\n"
	         "  y: {dtype: f32, shape: [4]}\nops:\n"
	         "  - {out: c, op: gt, in: [m, 0.0]}\n"
	         "  - {out: a, op: where, in: [c, x, y]}\n"
	         "  - {out: b, op: where, in: [c, -1.0, a]}\n"
	         "  - {out: f, op: floor, in: [x]}\n"
	         "  - {out: z, op: add, in: [b, f]}\noutputs:\n  z: {}\n");
	check(t, "fusion: i\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n  k: {dtype: int32, shape: [4]}\n"
	         "  seed: {dtype: int64, shape: []}\n  offset: {dtype: int64, shape: []}\nops:\n"
	         "  - {out: kf, op: cast, in: [k], to: f32}\n"
	         "  - {out: u, op: rand_like, in: [x, seed, offset]}\n"
	         "  - {out: a, op: mul, in: [x, kf]}\n"
	         "  - {out: b, op: mul, in: [a, u]}\n"
	         "  - {out: r, op: round, in: [x]}\n"
	         "  - {out: y, op: add, in: [b, r]}\noutputs:\n  y: {}\n");
	g = t->c.fusion;
	assert_int_equal(g->nout, 1);   /* grad_x only: k, seed and offset are integers */
	/* an input no adjoint reaches gets zeros */
	check(t, "fusion: z\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n  s: {dtype: f32, shape: [4]}\nops:\n"
	         "  - {out: f, op: floor, in: [s]}\n"
	         "  - {out: y, op: mul, in: [x, f]}\noutputs:\n  y: {}\n");
}

/*
 * A cast rounds in the reference (to f32: 2^-24 relative, to f16: 2^-11):
 * steps large enough that the rounding stays below the bound, on a
 * function linear in x, whose differences have no truncation error.
 */
static void
test_cast(void **state)
{
	Fixture *t = *state;
	static const char *const spec = "fusion: c\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n"
	                                "  w: {dtype: bf16, shape: [4]}\nops:\n"
	                                "  - {out: h, op: cast, in: [x], to: %s}\n"
	                                "  - {out: y, op: mul, in: [h, w]}\noutputs:\n  y: {dtype: f32}\n";

	check_with(t, arena_printf(t->c.arena, spec, "f32"), (Draw){0, 0, 1e-3, 1e-4});
	check_with(t, arena_printf(t->c.arena, spec, "f16"), (Draw){0, 0, 0.25, 1e-2});
}

static const char *
reduce_spec(Fixture *t, const char *op, const char *shape, int axis, bool keepdim)
{
	return arena_printf(t->c.arena,
	                    "fusion: r\nsizes: {N: 4}\ninputs:\n  x: {dtype: f32, shape: %s}\n  w: {dtype: f32, shape: %s}\n"
	                    "ops:\n  - {out: xw, op: mul, in: [x, w]}\n"
	                    "  - {out: y, op: %s, in: [xw], axis: %d, keepdim: %s}\noutputs:\n  y: {}\n",
	                    shape, shape, op, axis, keepdim ? "true" : "false");
}

/* sum, mean, max over each axis with keepdim; without it over the first axis, or one after dims of 1. */
static void
test_reductions(void **state)
{
	Fixture *t = *state;
	static const char *const ops[] = {"sum", "mean", "max", "min", "prod", "logsumexp"};
	int i, axis;

	for (i = 0; i < countof(ops); i++) {
		for (axis = -3; axis < 3; axis++)
			check(t, reduce_spec(t, ops[i], "[2, 3, N]", axis, true));
		check(t, reduce_spec(t, ops[i], "[2, 3, N]", 0, false));
		check(t, reduce_spec(t, ops[i], "[3, N]", 0, false));
		check(t, reduce_spec(t, ops[i], "[1, 1, N]", 2, false));
		check(t, reduce_spec(t, ops[i], "[N]", 0, false));
		/* without keepdim after dims other than 1: the adjoint unsqueezed (a reshape to keepdim's shape) */
		check(t, reduce_spec(t, ops[i], "[3, N]", 1, false));
		check(t, reduce_spec(t, ops[i], "[2, 3, N]", -1, false));
		check(t, reduce_spec(t, ops[i], "[2, 3, N]", 1, false));
	}
	/* over a list of dims (sum, mean, max, min, prod): the adjoint spread over them all */
	for (i = 0; i < 5; i++) {   /* (each spec copied out: check starts a fresh arena) */
		static const char *const dims[] = {"[0, 1]", "[2, 1]", "[1, 0]"};
		char spec[1024];

		for (axis = 0; axis < 3; axis++) {
			const char *s = reduce_spec(t, ops[i], "[2, 3, N]", 0, axis < 2), *at = strstr(s, "axis: 0");

			snprintf(spec, sizeof spec, "%.*saxis: %s%s", (int)(at - s), s, dims[axis], at + strlen("axis: 0"));
			check(t, spec);
		}
	}
	/* a bias over [B, S, H]: one sum over the leading dims (torch's dy.sum((0, 1))) */
	check(t, "fusion: b\ninputs:\n  x: {dtype: f32, shape: [2, 3, 4]}\n  b: {dtype: f32, shape: [4]}\nops:\n"
	         "  - {out: h, op: add, in: [x, b]}\n  - {out: y, op: tanh, in: [h]}\noutputs:\n  y: {}\n");
	{
		const Fusion *g = t->c.fusion;
		int j, sums = 0;

		for (j = 1; j < g->nop; j++)
			if (g->op[j].kind == OP_SUM) {
				sums++;
				assert_int_equal(g->op[j].axis, 0);
				assert_int_equal(g->op[j].naxes, 2);
			}
		assert_int_equal(sums, 1);
	}
}

/* The composites arrive expanded: softmax, layernorm and rmsnorm with weight and bias. */
/*
 * prod's gradient where x holds zeros, as torch's: a slice with one zero
 * gives that element d x the product of the others and the rest 0; with
 * two or more, 0 everywhere; with none, d x the product of the others.
 */
static void
test_prod_zeros(void **state)
{
	Fixture *t = *state;
	static const double x[] = {2, 0, 3, 0, 0, 5, 2, 3, 4}, want[] = {0, 12, 0, 0, 0, 0, 24, 16, 12};
	Fusion *g;
	Data d = {0};
	double *out[1], *gy;
	int i;

	forward(t, "fusion: p\ninputs:\n  x: {dtype: f32, shape: [3, 3]}\nops:\n"
	           "  - {out: y, op: prod, in: [x], axis: -1, keepdim: false}\noutputs:\n  y: {}\n");
	memcpy(data_add(t, &d, "x", 9, NULL), x, sizeof x);
	gy = data_add(t, &d, "grad_y", 3, NULL);
	for (i = 0; i < 3; i++)
		gy[i] = 2.0;
	g = backward(t);
	out[0] = arena_alloc(t->c.arena, 9 * sizeof(double));
	eval(t, g, &d, out);
	for (i = 0; i < 9; i++)
		if (out[0][i] != want[i])
			fail_msg("grad_x[%d]: got %g, want %g", i, out[0][i], want[i]);
}

/* Option grad-of: the backward of the inputs it lists alone, the others' adjoints not computed. */
static void
test_grad_of(void **state)
{
	Fixture *t = *state;
	static const char spec[] = "fusion: g\ninputs:\n  x: {dtype: f32, shape: [4, 8]}\n  w: {dtype: f32, shape: [8]}\n"
	                           "  v: {dtype: f32, shape: [4, 8]}\nops:\n  - {out: a, op: mul, in: [x, w]}\n"
	                           "  - {out: y, op: mul, in: [a, v]}\noutputs:\n  y: {}\n";
	Fusion *g;
	int i;

	forward(t, spec);
	t->c.grad_of = "w";
	g = backward(t);
	assert_int_equal(g->nout, 1);
	assert_string_equal(g->tensor[g->out[0].tensor].name, "grad_w");
	for (i = 1; i < g->ntensor; i++)   /* v's adjoint (a * grad_y) is not made */
		assert_null(strstr(g->tensor[i].name, "v.grad"));
	forward(t, spec);
	t->c.grad_of = "x,v";
	g = backward(t);
	assert_int_equal(g->nout, 2);
	forward(t, spec);
	t->c.grad_of = "w,q";
	assert_int_not_equal(pass_grad(&t->c), 0);
	assert_int_equal(t->c.status, WSF_ERR_USAGE);
	assert_non_null(strstr(t->msg, "option grad-of names 'q', which is not a float input of fusion 'g'"));
	t->c.grad_of = NULL;
}

static void
test_composites(void **state)
{
	Fixture *t = *state;

	check(t, "fusion: s\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\nops:\n"
	         "  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {}\n");
	check(t, "fusion: s\ninputs:\n  x: {dtype: f32, shape: [2, 3, 4]}\nops:\n"
	         "  - {out: y, op: softmax, in: [x], axis: 1}\noutputs:\n  y: {}\n");
	check(t, "fusion: ln\nsizes: {M: 3, N: 8}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n"
	         "  w: {dtype: bf16, shape: [N]}\n  b: {dtype: bf16, shape: [N]}\nops:\n"
	         "  - {out: y, op: layernorm, in: [x, w, b], eps: 1e-3}\noutputs:\n  y: {dtype: bf16}\n");
	check(t, "fusion: rms\ninputs:\n  x: {dtype: f32, shape: [2, 3, 8]}\n"
	         "  w: {dtype: f32, shape: [8]}\n  b: {dtype: f32, shape: [8]}\nops:\n"
	         "  - {out: y, op: rmsnorm, in: [x, w, b]}\noutputs:\n  y: {}\n");
	check(t, "fusion: rms1\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\n  w: {dtype: f32, shape: [8]}\nops:\n"
	         "  - {out: y, op: rmsnorm, in: [x, w]}\noutputs:\n  y: {}\n");
	check(t, "fusion: ln0\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\nops:\n"
	         "  - {out: y, op: layernorm, in: [x]}\noutputs:\n  y: {}\n");
}

static const char *
matmul_spec(Fixture *t, const char *sa, const char *sb, bool ta, bool tb)
{
	return arena_printf(t->c.arena,
	                    "fusion: mm\ninputs:\n  a: {dtype: f32, shape: %s}\n  b: {dtype: bf16, shape: %s}\nops:\n"
	                    "  - {out: c, op: matmul, in: [a, b], transpose_a: %s, transpose_b: %s}\n"
	                    "  - {out: y, op: tanh, in: [c]}\noutputs:\n  y: {}\n",
	                    sa, sb, ta ? "true" : "false", tb ? "true" : "false");
}

static void
test_matmul(void **state)
{
	Fixture *t = *state;

	check(t, matmul_spec(t, "[3, 4]", "[4, 5]", false, false));
	check(t, matmul_spec(t, "[4, 3]", "[4, 5]", true, false));
	check(t, matmul_spec(t, "[3, 4]", "[5, 4]", false, true));
	check(t, matmul_spec(t, "[4, 3]", "[5, 4]", true, true));
	check(t, matmul_spec(t, "[2, 3, 4]", "[4, 5]", false, false));   /* b shared by the batch */
	check(t, matmul_spec(t, "[2, 3, 4]", "[5, 4]", false, true));
	check(t, matmul_spec(t, "[2, 4, 3]", "[2, 4, 5]", true, false)); /* batched both */
	check(t, matmul_spec(t, "[2, 4, 3]", "[2, 5, 4]", true, true));
}

/* A value used twice (adjoints add), an output that later ops read, two outputs. */
static void
test_reuse(void **state)
{
	Fixture *t = *state;

	check(t, "fusion: twice\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\nops:\n"
	         "  - {out: s, op: mul, in: [x, x]}\n"
	         "  - {out: e, op: exp, in: [x]}\n"
	         "  - {out: p, op: mul, in: [e, x]}\n"
	         "  - {out: y, op: add, in: [s, p]}\noutputs:\n  y: {}\n");
	check(t, "fusion: two\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n  b: {dtype: f32, shape: [4]}\nops:\n"
	         "  - {out: h, op: add, in: [x, b]}\n"
	         "  - {out: g, op: gelu, in: [h]}\n"
	         "  - {out: y, op: mul, in: [g, h]}\noutputs:\n  h: {}\n  y: {}\n");
	check(t, "fusion: id\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n  b: {dtype: f32, shape: [3, 4]}\nops:\n"
	         "  - {out: y, op: add, in: [x, b]}\noutputs:\n  y: {}\n");
}

/* G evaluated by name on D's data into fresh arrays. */
static double **
eval_by_name(Fixture *t, const Fusion *g, Data *d)
{
	double **out = arena_alloc(t->c.arena, 16 * sizeof *out);

	for (int i = 0; i < g->nout; i++)
		out[i] = arena_alloc(t->c.arena, (size_t)numel(g, g->out[i].tensor) * sizeof(double));
	eval(t, g, d, out);
	return out;
}

/*
 * Views: a slice's adjoint a pad, a pad's and a cat's parts' slices, a
 * permute's the inverse permute, a transpose's itself, a reshape's a reshape
 * back, an expand's a sum over the dims it grew, a slice_scatter's a slice
 * and a slice_scatter of zeros; RoPE's rotate-half whole.
 */
static const char rope_half[] =
	"fusion: rope\ninputs:\n  x: {dtype: f32, shape: [2, 3, 8]}\n  cos: {dtype: f32, shape: [2, 1, 8]}\n"
	"  sin: {dtype: f32, shape: [2, 1, 8]}\nops:\n"
	"  - {out: x1, op: slice, in: [x], dim: -1, end: 4}\n  - {out: x2, op: slice, in: [x], dim: -1, start: 4}\n"
	"  - {out: nx2, op: neg, in: [x2]}\n  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n"
	"  - {out: xc, op: mul, in: [x, cos]}\n  - {out: rs, op: mul, in: [rot, sin]}\n"
	"  - {out: y, op: add, in: [xc, rs]}\noutputs:\n  y: {}\n";

static void
test_views(void **state)
{
	Fixture *t = *state;

	check(t, rope_half);
	check(t, "fusion: v\ninputs:\n  x: {dtype: f32, shape: [3, 4, 6]}\n  b: {dtype: f32, shape: [4, 1]}\nops:\n"
	         "  - {out: p, op: permute, in: [x], dims: [2, 0, 1]}\n"                 /* [6, 3, 4] */
	         "  - {out: t, op: transpose, in: [p], dim0: 0, dim1: 2}\n"              /* [4, 3, 6] */
	         "  - {out: r, op: reshape, in: [t], shape: [4, 18]}\n"
	         "  - {out: s, op: slice, in: [r], dim: 1, start: 2, end: 14}\n"         /* [4, 12] */
	         "  - {out: [c0, c1], op: chunk, in: [s], chunks: 2, dim: 1}\n"           /* [4, 6] each */
	         "  - {out: e, op: expand, in: [b], shape: [4, 6]}\n"
	         "  - {out: q, op: pad, in: [c1], pad: [1, 2, 0, 1], value: 3.0}\n"      /* [5, 9] */
	         "  - {out: m, op: mul, in: [c0, e]}\n"
	         "  - {out: y, op: cat, in: [m, c1], dim: 0}\n"                          /* [8, 6] */
	         "outputs:\n  y: {}\n  q: {}\n");
	/* slice_scatter (a step of 3): its part's adjoint the slice, x's the adjoint with the slice zeroed */
	check(t, "fusion: ss\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\n  s: {dtype: f32, shape: [3, 2]}\nops:\n"
	         "  - {out: y0, op: slice_scatter, in: [x, s], dim: 1, start: 1, end: 7, step: 3}\n"
	         "  - {out: y, op: mul, in: [y0, y0]}\noutputs:\n  y: {}\n");
}

/* The backward printed as a spec and read back computes the same, bit for bit. */
static void
round_trip(Fixture *t, const char *spec)
{
	Fusion *f = forward(t, spec), *g, *h;
	double **want, **got;
	Data d = {0};
	Buf b;
	int i;

	g = backward(t);
	for (i = 0; i < g->ninput; i++)
		data_add(t, &d, g->tensor[g->input[i]].name, numel(g, g->input[i]), &(Draw){0.5, 2, 0, 0});
	want = eval_by_name(t, g, &d);
	buf_init(&b, t->c.arena);
	spec_write(&t->c, &b, g);
	t->c.src = buf_str(&b);
	t->c.srclen = b.len;
	if (spec_read(&t->c) || pass_expand(&t->c) || pass_infer(&t->c))
		fail_msg("the backward does not read back: %s\n%s", t->msg, buf_str(&b));
	h = t->c.fusion;
	assert_int_equal(h->ninput, g->ninput);
	assert_int_equal(h->nout, g->nout);
	got = eval_by_name(t, h, &d);
	for (i = 0; i < g->nout; i++) {
		assert_string_equal(h->tensor[h->out[i].tensor].name, g->tensor[g->out[i].tensor].name);
		assert_int_equal(h->out[i].dtype, g->out[i].dtype);
		assert_memory_equal(got[i], want[i], (size_t)numel(g, g->out[i].tensor) * sizeof(double));
	}
	(void)f;
}

static void
test_round_trip(void **state)
{
	Fixture *t = *state;

	round_trip(t, "fusion: ln\nsizes: {M: 3, N: 8}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n"
	              "  w: {dtype: bf16, shape: [N]}\n  b: {dtype: bf16, shape: [N]}\nops:\n"
	              "  - {out: y, op: layernorm, in: [x, w, b]}\n"
	              "  - {out: z, op: gelu, in: [y], approximate: tanh}\noutputs:\n  z: {dtype: bf16}\n");
	round_trip(t, "fusion: sm\ninputs:\n  x: {dtype: f32, shape: [2, 3, 4]}\n  w: {dtype: f32, shape: [4, 5]}\n"
	              "ops:\n  - {out: c, op: matmul, in: [x, w]}\n  - {out: y, op: softmax, in: [c]}\n"
	              "  - {out: m, op: max, in: [y], axis: 0, keepdim: false}\n"
	              "  - {out: p, op: pow, in: [m, 2]}\noutputs:\n  p: {}\n");
	/* a spec name that looks like one the printer makes */
	round_trip(t, "fusion: names\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\nops:\n"
	              "  - {out: x_grad, op: exp, in: [x]}\n  - {out: y_max, op: softmax, in: [x_grad]}\n"
	              "  - {out: y, op: mul, in: [y_max, x]}\noutputs:\n  y: {}\n");
	round_trip(t, rope_half);   /* views' keys written as the front end reads them */
	/* the backward of a backward */
	round_trip(t, "fusion: ln_grad\ninputs:\n  x: {dtype: f32, shape: [3, 4]}\n  grad_y: {dtype: f32, shape: [3, 4]}\n"
	              "ops:\n  - {out: t, op: tanh, in: [x]}\n  - {out: s, op: mul, in: [t, t]}\n"
	              "  - {out: u, op: sub, in: [1.0, s]}\n  - {out: grad_x, op: mul, in: [grad_y, u]}\n"
	              "outputs:\n  grad_x: {}\n");
}

/* SPEC's backward fails with STATUS and a message at LINE that says WHAT. */
static void
refused(Fixture *t, const char *spec, WsfStatus status, int line, const char *what)
{
	forward(t, spec);
	t->msg[0] = 0;
	assert_int_equal(pass_grad(&t->c), -1);
	assert_int_equal(t->c.status ? t->c.status : WSF_ERR_INPUT, status);
	if (!strstr(t->msg, what) || !strstr(t->msg, arena_printf(t->c.arena, "%s:%d:", FILE_NAME, line)))
		fail_msg("expected '%s' at line %d, saw: %s", what, line, t->msg);
}

static void
test_errors(void **state)
{
	Fixture *t = *state;
	char *yaml = (char *)"x";
	WsfContext *ctx;

	refused(t, matmul_spec(t, "[2, 4, 3]", "[4, 5]", true, false), WSF_ERR_UNSUPPORTED, 6,
	        "transpose_a and a 'b' of rank 2");
	refused(t, "fusion: p\ninputs:\n  x: {dtype: f32, shape: [3]}\nops:\n"
	           "  - {out: y, op: pow, in: [-2.0, x]}\noutputs:\n  y: {}\n", WSF_ERR_UNSUPPORTED, 5, "the number -2");
	refused(t, "fusion: i\ninputs:\n  x: {dtype: int32, shape: [3]}\nops:\n"
	           "  - {out: y, op: neg, in: [x]}\noutputs:\n  y: {}\n", WSF_ERR_INPUT, 1, "no float input");
	refused(t, "fusion: n\ninputs:\n  x: {dtype: f32, shape: [3]}\n  grad_y: {dtype: f32, shape: [3]}\nops:\n"
	           "  - {out: y, op: mul, in: [x, grad_y]}\noutputs:\n  y: {}\n", WSF_ERR_INPUT, 8,
	        "which names an input already");
	/* the library call: no text, the status, the last error */
	assert_non_null(ctx = wsf_context_new());
	assert_int_equal(wsf_grad_string(ctx, "s.yaml", NULL, 0, &yaml, NULL), WSF_ERR_USAGE);
	assert_null(yaml);
	{
		const char *s = "fusion: p\ninputs:\n  x: {dtype: f32, shape: [3]}\nops:\n"
		                "  - {out: y, op: pow, in: [-2.0, x]}\noutputs:\n  y: {}\n";
		size_t n = 0;

		assert_int_equal(wsf_grad_string(ctx, "s.yaml", s, strlen(s), &yaml, &n), WSF_ERR_UNSUPPORTED);
		assert_null(yaml);
		assert_non_null(strstr(wsf_context_last_error(ctx), "s.yaml:5:"));
		s = reduce_spec(t, "max", "[3, 4]", 1, true);
		assert_int_equal(wsf_grad_string(ctx, "s.yaml", s, strlen(s), &yaml, &n), WSF_OK);
		assert_non_null(yaml);
		assert_int_equal(strlen(yaml), n);
		assert_non_null(strstr(yaml, "grad_x: {dtype: f32}"));
		free(yaml);
	}
	wsf_context_delete(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_broadcast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pow_remainder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_literals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_where_and_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reductions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prod_zeros, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grad_of, setup, teardown),
		cmocka_unit_test_setup_teardown(test_composites, setup, teardown),
		cmocka_unit_test_setup_teardown(test_matmul, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_views, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
