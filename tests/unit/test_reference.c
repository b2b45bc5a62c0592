/*
 * test_reference.c: runtime/reference.c on fusions built by hand with ir.h.
 *
 * Each test builds a Fusion directly (tensors with shapes, ops, outputs),
 * runs rt_reference and compares with values worked out by hand or with
 * libm: broadcasting (trailing dims, size-1 dims, rank 0, literals), every
 * unary and binary op (the integer, bool and fp8 ones by torch's results),
 * reductions with and without keepdim, matmul 3x4x5 in
 * all four transpose combinations and with broadcast batch dims, and the
 * errors (a composite that was never expanded).
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
#include <time.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"
#include "skip_because.h"

/* A compilation and the fusion being built in it. */
typedef struct Env {
	Comp c;
	Fusion *f;
} Env;

static void
env_fusion(Env *e)
{
	e->f = fusion_new(&e->c);
	e->f->name = "test";
	e->c.fusion = e->f;
}

/* A tensor of RANK constant dims given as ints after RANK. */
static int
tensor(Env *e, const char *name, TensorKind kind, int rank, ...)
{
	int t = fusion_add_tensor(&e->c, e->f, intern_cstr(e->c.strs, name), kind, (Pos){0});
	Tensor *x = &e->f->tensor[t];
	va_list ap;
	int i;

	x->dtype = DT_F32;
	x->rank = rank;
	va_start(ap, rank);
	for (i = 0; i < rank; i++)
		x->dim[i].ext = va_arg(ap, int);
	va_end(ap);
	return t;
}

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

/* An op of KIND defining OUT from NIN operands; the pointer lasts until the next op. */
static Op *
op(Env *e, OpKind kind, int out, int nin, Operand a, Operand b)
{
	Op *o = &e->f->op[fusion_add_op(&e->c, e->f, kind, (Pos){0})];

	o->out = out;
	o->nin = nin;
	o->in[0] = a;
	o->in[1] = b;
	e->f->tensor[out].def = (int)(o - e->f->op);
	return o;
}

static void
output(Env *e, int t)
{
	Output *o = VEC_PUSH(e->c.arena, e->f->out, e->f->nout, e->f->capout);

	o->tensor = t;
	o->dtype = e->f->tensor[t].dtype;
}

static void
assert_near(double got, double want)
{
	if (!(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want))) && !(isnan(got) && isnan(want)))
		fail_msg("got %.17g, want %.17g", got, want);
}

static void
assert_values(const double *got, const double *want, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!(fabs(got[i] - want[i]) <= 1e-12 * fmax(1.0, fabs(want[i]))))
			fail_msg("element %d: got %.17g, want %.17g", i, got[i], want[i]);
	}
}

static void
test_broadcast(void **state)
{
	double x[6] = {0, 1, 2, 3, 4, 5}, y[3] = {10, 20, 30}, col[2] = {1, 2}, row[3] = {3, 4, 5};
	double s = 0.5, cube[12], small[2] = {100, 200}, o1[6], o2[6], o3[12], o4[6], o5[6], o6[6];
	const double *in[6] = {x, y, col, row, &s, cube};
	double *out[6] = {o1, o2, o3, o4, o5, o6};
	int tx, ty, tc, tr, ts, tq, tsm, a, b, q, d, l1, l2;
	Env e;
	int i;

	for (i = 0; i < 12; i++)
		cube[i] = i;
	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 2, 2, 3);
	ty = tensor(&e, "y", TK_INPUT, 1, 3);
	tc = tensor(&e, "col", TK_INPUT, 2, 2, 1);
	tr = tensor(&e, "row", TK_INPUT, 2, 1, 3);
	ts = tensor(&e, "s", TK_INPUT, 0);
	tq = tensor(&e, "cube", TK_INPUT, 3, 2, 2, 3);
	a = tensor(&e, "a", TK_VALUE, 2, 2, 3);
	op(&e, OP_ADD, a, 2, T(tx), T(ty));          /* [2,3] + [3] */
	b = tensor(&e, "b", TK_VALUE, 2, 2, 3);
	op(&e, OP_MUL, b, 2, T(tc), T(tr));          /* [2,1] * [1,3]: outer product */
	tsm = tensor(&e, "sm", TK_VALUE, 2, 2, 1);
	op(&e, OP_MUL, tsm, 2, T(tc), L(100));       /* [2,1] * literal */
	q = tensor(&e, "q", TK_VALUE, 3, 2, 2, 3);
	op(&e, OP_ADD, q, 2, T(tq), T(tsm));         /* [2,2,3] + [2,1] */
	d = tensor(&e, "d", TK_VALUE, 2, 2, 3);
	op(&e, OP_SUB, d, 2, T(tx), T(ts));          /* rank 0 */
	l1 = tensor(&e, "l1", TK_VALUE, 2, 2, 3);
	op(&e, OP_SUB, l1, 2, T(tx), L(1.5));
	l2 = tensor(&e, "l2", TK_VALUE, 2, 2, 3);
	op(&e, OP_DIV, l2, 2, L(2.0), T(b));         /* literal first */
	output(&e, a);
	output(&e, b);
	output(&e, q);
	output(&e, d);
	output(&e, l1);
	output(&e, l2);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	assert_values(o1, (double[]){10, 21, 32, 13, 24, 35}, 6);
	assert_values(o2, (double[]){3, 4, 5, 6, 8, 10}, 6);
	for (i = 0; i < 12; i++)
		assert_near(o3[i], cube[i] + small[(i / 3) % 2]);
	assert_values(o4, (double[]){-0.5, 0.5, 1.5, 2.5, 3.5, 4.5}, 6);
	assert_values(o5, (double[]){-1.5, -0.5, 0.5, 1.5, 2.5, 3.5}, 6);
	assert_values(o6, (double[]){2.0 / 3, 0.5, 0.4, 2.0 / 6, 0.25, 0.2}, 6);
	assert_int_equal(e.c.nerrors, 0);
	arena_free(e.c.arena);
}

/*
 * rand_like: Philox4x32-10 against Random123's known answers (counter and
 * key all zeros, all ones, and pi's digits), and the reference's numbers:
 * each element's rt_rand_uniform of its row-major index, in [0, 1) and
 * multiples of 2^-24, another offset giving other numbers, element i word
 * i % 4 of the block of counter (i / 4, offset).
 */
static void
test_rand_like(void **state)
{
	static const struct {
		uint32_t c[4], k0, k1, want[4];
	} kat[] = {
		{{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{{~0u, ~0u, ~0u, ~0u}, ~0u, ~0u, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0,
		 {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	};
	double x[6] = {0}, seed = -7, offset = 3, o1[6], o2[6];
	const double *in[3] = {x, &seed, &offset};
	double *out[2] = {o1, o2};
	int i, j, tx, tseed, toff, u, v;
	volatile int same = 0;   /* across cmocka's longjmp */
	Env e;

	for (i = 0; i < (int)countof(kat); i++) {
		uint32_t c[4];

		memcpy(c, kat[i].c, sizeof c);
		rt_philox(c, kat[i].k0, kat[i].k1);
		for (j = 0; j < 4; j++)
			if (c[j] != kat[i].want[j])
				fail_msg("philox case %d word %d: got %08x, want %08x", i, j, c[j], kat[i].want[j]);
	}
	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 2, 2, 3);
	tseed = tensor(&e, "seed", TK_INPUT, 0);
	toff = tensor(&e, "offset", TK_INPUT, 0);
	e.f->tensor[tseed].dtype = e.f->tensor[toff].dtype = DT_INT64;
	u = tensor(&e, "u", TK_VALUE, 2, 2, 3);
	op(&e, OP_RAND_LIKE, u, 3, T(tx), T(tseed))->in[2] = T(toff);
	v = tensor(&e, "v", TK_VALUE, 2, 2, 3);
	op(&e, OP_RAND_LIKE, v, 3, T(tx), T(tseed))->in[2] = T(tseed);   /* the seed as the offset too */
	output(&e, u);
	output(&e, v);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 6; i++) {
		assert_true(o1[i] == rt_rand_uniform((uint64_t)-7, 3, (uint64_t)i));
		assert_true(o2[i] == rt_rand_uniform((uint64_t)-7, (uint64_t)-7, (uint64_t)i));
		assert_true(o1[i] >= 0 && o1[i] < 1 && o1[i] * 0x1p24 == floor(o1[i] * 0x1p24));
		same += o1[i] == o2[i];
	}
	assert_true(same < 6);
	assert_true(o1[0] != o1[1]);
	for (i = 0; i < 6; i++) {   /* elements 4q .. 4q + 3: the words of block q, in order */
		uint32_t c[4] = {(uint32_t)(i / 4), 0, 3, 0};

		rt_philox(c, (uint32_t)-7, (uint32_t)((uint64_t)-7 >> 32));
		assert_true(o1[i] == (double)(c[i % 4] >> 8) * 0x1p-24);
	}
	assert_int_equal(e.c.nerrors, 0);
	arena_free(e.c.arena);
	(void)state;
}

/*
 * Size-1 dims anywhere: RoPE's [T, 1, D] over [T, NH, D], a per-head
 * [NH, 1] over it, and a mask [S, S] shared by [B, S, S], each element
 * checked against its numpy index.
 */
static void
test_broadcast_inner_dims(void **state)
{
	double q[24], c[8], h[3], m[4], x[12], o1[24], o2[24], o3[12];
	const double *in[5] = {q, c, h, m, x};
	double *out[3] = {o1, o2, o3};
	int tq, tc, th, tm, tx, a, b, d, i, j, l;
	Env e;

	for (i = 0; i < 24; i++)
		q[i] = i;
	for (i = 0; i < 8; i++)
		c[i] = 100 * (i + 1);
	for (i = 0; i < 4; i++)
		m[i] = 1000 * (i + 1);
	for (i = 0; i < 12; i++)
		x[i] = -i;
	h[0] = 2, h[1] = 3, h[2] = 5;
	COMP_INIT(e.c);
	env_fusion(&e);
	tq = tensor(&e, "q", TK_INPUT, 3, 2, 3, 4);   /* [T, NH, D] */
	tc = tensor(&e, "cos", TK_INPUT, 3, 2, 1, 4); /* [T, 1, D] */
	th = tensor(&e, "h", TK_INPUT, 2, 3, 1);      /* [NH, 1] */
	tm = tensor(&e, "mask", TK_INPUT, 2, 2, 2);   /* [S, S] */
	tx = tensor(&e, "x", TK_INPUT, 3, 3, 2, 2);   /* [B, S, S] */
	a = tensor(&e, "a", TK_VALUE, 3, 2, 3, 4);
	op(&e, OP_ADD, a, 2, T(tq), T(tc));
	b = tensor(&e, "b", TK_VALUE, 3, 2, 3, 4);
	op(&e, OP_MUL, b, 2, T(th), T(tq));
	d = tensor(&e, "d", TK_VALUE, 3, 3, 2, 2);
	op(&e, OP_ADD, d, 2, T(tx), T(tm));
	output(&e, a);
	output(&e, b);
	output(&e, d);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (l = 0; l < 4; l++) {
				assert_near(o1[(i * 3 + j) * 4 + l], q[(i * 3 + j) * 4 + l] + c[i * 4 + l]);
				assert_near(o2[(i * 3 + j) * 4 + l], q[(i * 3 + j) * 4 + l] * h[j]);
			}
	for (i = 0; i < 12; i++)
		assert_near(o3[i], x[i] + m[i % 4]);
	arena_free(e.c.arena);
}

static void
test_symbolic_sizes(void **state)
{
	double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[8];
	const double *in[1] = {x};
	double *out[1] = {o};
	int sym, tx, y, i;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	sym = fusion_add_sym(&e.c, e.f, intern_cstr(e.c.strs, "N"), (Pos){0});
	e.f->sym[sym].value = 4;
	tx = tensor(&e, "x", TK_INPUT, 2, 2, 0);
	e.f->tensor[tx].dim[1].sym = sym;
	y = tensor(&e, "y", TK_VALUE, 2, 2, 0);
	e.f->tensor[y].dim[1].sym = sym;
	op(&e, OP_NEG, y, 1, T(tx), L(0));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 8; i++)
		assert_near(o[i], -x[i]);
	arena_free(e.c.arena);
}

/*
 * signal: {per_tile, consumer: [...]}: a consumer output is computed from the
 * stored outputs as stored, rounded to their dtype, while the stored output
 * and anything else keep the exact values.  y = x + 0.00390625 stored as
 * bf16 (to 8 significant bits); h = y * 2 by the consumer, from the rounded
 * y; z = y * 2 by the epilogue, from the exact y.
 */
static void
test_consumer_outputs(void **state)
{
	double x[4] = {1.0, 2.0, 3.0, 1.0 + 1.0 / 64}, oy[4], oh[4], oz[4];
	const double *in[1] = {x};
	double *out[3] = {oy, oh, oz};
	int tx, y, h, z, i;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, 4);
	y = tensor(&e, "y", TK_VALUE, 1, 4);
	op(&e, OP_ADD, y, 2, T(tx), L(0.00390625));
	h = tensor(&e, "h", TK_VALUE, 1, 4);
	op(&e, OP_MUL, h, 2, T(y), L(2.0));
	z = tensor(&e, "z", TK_VALUE, 1, 4);
	op(&e, OP_MUL, z, 2, T(y), L(2.0));
	output(&e, y);
	e.f->out[0].dtype = DT_BF16;
	output(&e, h);
	e.f->out[1].consumer = true;
	output(&e, z);
	e.f->sched.consumer_pos = (Pos){0, 1, 1};
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 4; i++) {
		double exact = x[i] + 0.00390625, stored = rt_round(DT_BF16, exact);

		assert_near(oy[i], stored);        /* a stored output a consumer reads is compared as stored */
		assert_near(oh[i], 2 * stored);    /* the consumer's, from the stored value */
		assert_near(oz[i], 2 * exact);     /* the epilogue's, from the exact one */
	}
	assert_true(oh[0] != oz[0]);           /* 1.00390625 is not a bf16: the two differ */
	arena_free(e.c.arena);
}

/* Evaluates one unary op (with attributes from PROTO) at the points X. */
static void
check_unary(const Op *proto, const double *x, int n, double (*want)(double))
{
	double got[4];
	const double *in[1] = {x};
	double *out[1] = {got};
	int tx, y, i;
	Op *o;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, n);
	y = tensor(&e, "y", TK_VALUE, 1, n);
	o = op(&e, proto->kind, y, 1, T(tx), L(0));
	o->approx = proto->approx;
	o->to = proto->to;
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < n; i++) {
		if (!(fabs(got[i] - want(x[i])) <= 1e-14 * fmax(1.0, fabs(want(x[i])))) &&
		    !(isnan(got[i]) && isnan(want(x[i]))))
			fail_msg("%s(%.17g): got %.17g, want %.17g", op_info[proto->kind].name, x[i],
			         got[i], want(x[i]));
	}
	arena_free(e.c.arena);
}

static double w_neg(double x) { return -x; }
static double w_abs(double x) { return fabs(x); }
static double w_exp(double x) { return exp(x); }
static double w_log(double x) { return log(x); }
static double w_sqrt(double x) { return sqrt(x); }
static double w_rsqrt(double x) { return 1 / sqrt(x); }
static double w_tanh(double x) { return tanh(x); }
static double w_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double w_relu(double x) { return isnan(x) ? x : x > 0 ? x : 0; }
static double w_silu(double x) { return x * (1 / (1 + exp(-x))); }
static double w_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double w_gelu_tanh(double x)
{
	return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * pow(x, 3))));
}
static double w_bf16(double x) { return rt_round(DT_BF16, x); }
static double w_f16(double x) { return rt_round(DT_F16, x); }

static void
test_unary_ops(void **state)
{
	static const double any[4] = {0.3, -1.7, 2.5, 0.0}, pos[3] = {0.3, 2.5, 1e-3};
	static const struct {
		OpKind kind;
		Approx approx;
		Dtype to;
		double (*want)(double);
		bool positive;
	} cases[] = {
		{OP_NEG, 0, 0, w_neg, false},
		{OP_ABS, 0, 0, w_abs, false},
		{OP_EXP, 0, 0, w_exp, false},
		{OP_LOG, 0, 0, w_log, true},
		{OP_SQRT, 0, 0, w_sqrt, true},
		{OP_RSQRT, 0, 0, w_rsqrt, true},
		{OP_TANH, 0, 0, w_tanh, false},
		{OP_SIGMOID, 0, 0, w_sigmoid, false},
		{OP_RELU, 0, 0, w_relu, false},
		{OP_SILU, 0, 0, w_silu, false},
		{OP_GELU, APPROX_NONE, 0, w_gelu, false},
		{OP_GELU, APPROX_TANH, 0, w_gelu_tanh, false},
		{OP_CAST, 0, DT_BF16, w_bf16, false},
		{OP_CAST, 0, DT_F16, w_f16, false},
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Op proto = {0};

		proto.kind = cases[i].kind;
		proto.approx = cases[i].approx;
		proto.to = cases[i].to;
		if (cases[i].positive)
			check_unary(&proto, pos, 3, cases[i].want);
		else
			check_unary(&proto, any, 4, cases[i].want);
	}
	/* a few values known independently of libm's formulas */
	{
		static const double x[3] = {1.0, 0.0, NAN};
		Op gelu = {.kind = OP_GELU}, relu = {.kind = OP_RELU}, sig = {.kind = OP_SIGMOID};

		check_unary(&gelu, x, 2, w_gelu);
		assert_near(w_gelu(1.0), 0.8413447460685429);
		assert_near(w_gelu_tanh(1.0), 0.8411919906082768);
		check_unary(&relu, x, 3, w_relu); /* NaN passes through */
		check_unary(&sig, x + 1, 1, w_sigmoid);
		assert_near(w_sigmoid(0.0), 0.5);
	}
}

static void
test_cast_rounds_and_nothing_else_does(void **state)
{
	/* 1 + 2^-8 + 2^-30: bf16 rounds it up to 1 + 2^-7; without a cast it stays */
	double x[1] = {1.0 + ldexp(1, -8) + ldexp(1, -30)}, o1[1], o2[1];
	const double *in[1] = {x};
	double *out[2] = {o1, o2};
	int tx, c1, a1, a2;
	Op *o;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, 1);
	e.f->tensor[tx].dtype = DT_BF16;
	c1 = tensor(&e, "c", TK_VALUE, 1, 1);
	o = op(&e, OP_CAST, c1, 1, T(tx), L(0));
	o->to = DT_BF16;
	a1 = tensor(&e, "a1", TK_VALUE, 1, 1);
	op(&e, OP_ADD, a1, 2, T(c1), L(0));
	a2 = tensor(&e, "a2", TK_VALUE, 1, 1);
	e.f->tensor[a2].dtype = DT_BF16;
	op(&e, OP_ADD, a2, 2, T(tx), L(0));
	output(&e, a1);
	output(&e, a2);
	e.f->out[1].dtype = DT_BF16;
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	assert_true(o1[0] == 1.0 + ldexp(1, -7));
	assert_true(o2[0] == x[0]);
	arena_free(e.c.arena);
}

static double b_add(double a, double b) { return a + b; }
static double b_sub(double a, double b) { return a - b; }
static double b_mul(double a, double b) { return a * b; }
static double b_div(double a, double b) { return a / b; }
static double b_max(double a, double b) { return a > b ? a : b; }
static double b_min(double a, double b) { return a < b ? a : b; }

static void
test_binary_ops(void **state)
{
	static const struct {
		OpKind kind;
		double (*want)(double, double);
	} cases[] = {
		{OP_ADD, b_add}, {OP_SUB, b_sub}, {OP_MUL, b_mul},
		{OP_DIV, b_div}, {OP_MAXIMUM, b_max}, {OP_MINIMUM, b_min},
	};
	double a[3] = {1.5, 3.0, -7.25}, b[3] = {-2.0, 0.25, -7.5}, got[3];
	const double *in[2] = {a, b};
	double *out[1] = {got};
	int i, j;

	for (i = 0; i < countof(cases); i++) {
		int ta, tb, y;
		Env e;

		COMP_INIT(e.c);
		env_fusion(&e);
		ta = tensor(&e, "a", TK_INPUT, 1, 3);
		tb = tensor(&e, "b", TK_INPUT, 1, 3);
		y = tensor(&e, "y", TK_VALUE, 1, 3);
		op(&e, cases[i].kind, y, 2, T(ta), T(tb));
		output(&e, y);
		assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
		for (j = 0; j < 3; j++)
			assert_near(got[j], cases[i].want(a[j], b[j]));
		arena_free(e.c.arena);
	}
}


/*
 * The ops added with the integer, bool and fp8 dtypes, each on 4 elements
 * against values worked out by hand (torch's results): floor division and
 * remainder take the divisor's sign, round goes half to even, integers wrap
 * in their dtype, comparisons give bool.
 */
static const struct {
	OpKind kind;
	Dtype in, out;
	double a[4], b[4], want[4];
} dtype_cases[] = {
		{OP_FLOOR_DIVIDE, DT_INT32, DT_INT32, {7, -7, 7, -7}, {2, 2, -2, -2}, {3, -4, -4, 3}},
		{OP_REMAINDER, DT_INT32, DT_INT32, {7, -7, 7, -7}, {2, 2, -2, -2}, {1, 1, -1, -1}},
		{OP_FLOOR_DIVIDE, DT_F32, DT_F32, {7.5, -7.5, 1, -1}, {2, 2, -4, 4}, {3, -4, -1, -1}},
		{OP_REMAINDER, DT_F32, DT_F32, {7.5, -7.5, 1, -1}, {2, 2, -4, 4}, {1.5, 0.5, -3, 3}},
		{OP_ADD, DT_INT8, DT_INT8, {100, -100, 127, 1}, {100, -100, 1, 2}, {-56, 56, -128, 3}},
		{OP_MUL, DT_UINT8, DT_UINT8, {16, 255, 3, 0}, {16, 2, 5, 7}, {0, 254, 15, 0}},
		{OP_SUB, DT_INT64, DT_INT64, {0, -3e15, 5, 1}, {1, 3e15, 7, 1}, {-1, -6e15, -2, 0}},
		{OP_SHL, DT_INT8, DT_INT8, {1, 3, -1, 5}, {7, 2, 1, -1}, {-128, 12, -2, 0}},
		{OP_SHR, DT_INT32, DT_INT32, {-8, 8, -1, 5}, {1, 3, 40, -1}, {-4, 1, -1, 0}},
		{OP_BITWISE_AND, DT_INT32, DT_INT32, {12, -1, 5, -8}, {10, 7, 0, 12}, {8, 7, 0, 8}},
		{OP_BITWISE_OR, DT_INT32, DT_INT32, {12, -8, 5, 0}, {10, 3, 0, 0}, {14, -5, 5, 0}},
		{OP_BITWISE_XOR, DT_BOOL, DT_BOOL, {0, 1, 0, 1}, {0, 0, 1, 1}, {0, 1, 1, 0}},
		{OP_MAXIMUM, DT_INT8, DT_INT8, {-3, 4, -128, 0}, {2, -9, 127, 0}, {2, 4, 127, 0}},
		{OP_LT, DT_F32, DT_BOOL, {1, 2, NAN, -0.0}, {2, 1, 0, 0}, {1, 0, 0, 0}},
		{OP_EQ, DT_INT32, DT_BOOL, {1, 2, 3, -4}, {1, 3, 3, 4}, {1, 0, 1, 0}},
		{OP_NE, DT_F32, DT_BOOL, {NAN, 1, 0, 2}, {NAN, 1, -0.0, 3}, {1, 0, 0, 1}},
		{OP_GE, DT_UINT8, DT_BOOL, {0, 255, 3, 4}, {0, 254, 4, 4}, {1, 1, 0, 1}},
		{OP_LOGICAL_AND, DT_F32, DT_BOOL, {0, 1.5, NAN, -2}, {1, 0, 1, -1}, {0, 0, 1, 1}},
		{OP_LOGICAL_OR, DT_INT32, DT_BOOL, {0, 0, 3, -2}, {0, 5, 0, 1}, {0, 1, 1, 1}},
		{OP_POW, DT_F32, DT_F32, {2, 9, -2, 1}, {10, 0.5, 3, NAN}, {1024, 3, -8, 1}},
};

static void
dtype_case(int i)
{
	double got[4];
	double *out[1] = {got};
	const double *in[2] = {dtype_cases[i].a, dtype_cases[i].b};
	int ta, tb, y, j;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	ta = tensor(&e, "a", TK_INPUT, 1, 4);
	tb = tensor(&e, "b", TK_INPUT, 1, 4);
	y = tensor(&e, "y", TK_VALUE, 1, 4);
	e.f->tensor[ta].dtype = e.f->tensor[tb].dtype = dtype_cases[i].in;
	e.f->tensor[y].dtype = dtype_cases[i].out;
	op(&e, dtype_cases[i].kind, y, 2, T(ta), T(tb));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (j = 0; j < 4; j++)
		if (!(got[j] == dtype_cases[i].want[j]))
			fail_msg("case %d (%s) element %d: got %.17g, want %.17g", i, op_info[dtype_cases[i].kind].name, j,
			         got[j], dtype_cases[i].want[j]);
	arena_free(e.c.arena);
}

static void
test_dtype_ops(void **state)
{
	int i;

	for (i = 0; i < countof(dtype_cases); i++)
		dtype_case(i);
}

/* The unary ops added with the dtypes; casts between them (fp8 as torch rounds it, integers wrapping). */
static const struct {
	OpKind kind;
	Dtype in, to;
	double a[4], want[4];
} unary_cases[] = {
		{OP_ROUND, DT_F32, DT_F32, {0.5, 1.5, 2.5, -2.5}, {0, 2, 2, -2}},
		{OP_FLOOR, DT_F32, DT_F32, {-0.5, 1.5, 2, -2.1}, {-1, 1, 2, -3}},
		{OP_CEIL, DT_F32, DT_F32, {-0.5, 1.5, 2, -2.1}, {-0.0, 2, 2, -2}},
		{OP_TRUNC, DT_F32, DT_F32, {-0.5, 1.5, 2, -2.9}, {-0.0, 1, 2, -2}},
		{OP_SIGN, DT_F32, DT_F32, {-3, 0, NAN, 7}, {-1, 0, 0, 1}},
		{OP_SIGN, DT_INT32, DT_INT32, {-3, 0, 1, 7}, {-1, 0, 1, 1}},
		{OP_ABS, DT_INT8, DT_INT8, {-128, -1, 0, 5}, {-128, 1, 0, 5}},
		{OP_NEG, DT_INT8, DT_INT8, {-128, -1, 0, 5}, {-128, 1, 0, -5}},
		{OP_LOGICAL_NOT, DT_F32, DT_BOOL, {0, NAN, -0.0, 2}, {1, 0, 1, 0}},
		{OP_BITWISE_NOT, DT_INT32, DT_INT32, {0, -1, 5, -6}, {-1, 0, -6, 5}},
		{OP_BITWISE_NOT, DT_BOOL, DT_BOOL, {0, 1, 0, 1}, {1, 0, 1, 0}},
		{OP_EXP2, DT_INT32, DT_F32, {0, 3, -1, 10}, {1, 8, 0.5, 1024}},
		{OP_LOG2, DT_F32, DT_F32, {1, 8, 0.25, 0}, {0, 3, -2, -INFINITY}},
		{OP_CAST, DT_F32, DT_FP8E4M3, {0.1, -3.3, 464, 465}, {0.1015625, -3.25, 448, NAN}},
		{OP_CAST, DT_F32, DT_FP8E5M2, {0.1, 57344, 61440, -INFINITY}, {0.09375, 57344, INFINITY, -INFINITY}},
		{OP_CAST, DT_F32, DT_INT8, {-2.9, 2.9, 200, -129}, {-2, 2, -56, 127}},
		{OP_CAST, DT_INT32, DT_UINT8, {-1, 256, 255, 7}, {255, 0, 255, 7}},
		{OP_CAST, DT_F32, DT_BOOL, {0, -0.0, 0.1, NAN}, {0, 0, 1, 1}},
		{OP_CAST, DT_BOOL, DT_BF16, {0, 1, 1, 0}, {0, 1, 1, 0}},
		{OP_CAST, DT_INT64, DT_BF16, {257, -3, 1000, 0}, {256, -3, 1000, 0}},
};

static void
unary_case(int i)
{
	double got[4];
	double *out[1] = {got};
	const double *in[1] = {unary_cases[i].a};
	const double *want = unary_cases[i].want;
	int ta, y, j;
	Op *o;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	ta = tensor(&e, "a", TK_INPUT, 1, 4);
	y = tensor(&e, "y", TK_VALUE, 1, 4);
	e.f->tensor[ta].dtype = unary_cases[i].in;
	e.f->tensor[y].dtype = unary_cases[i].to;
	o = op(&e, unary_cases[i].kind, y, 1, T(ta), L(0));
	o->to = unary_cases[i].to;
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (j = 0; j < 4; j++)
		if (!(got[j] == want[j] && signbit(got[j]) == signbit(want[j])) && !(isnan(got[j]) && isnan(want[j])))
			fail_msg("case %d (%s) element %d: got %.17g, want %.17g", i, op_info[unary_cases[i].kind].name, j,
			         got[j], want[j]);
	arena_free(e.c.arena);
}

static void
test_dtype_unary_ops(void **state)
{
	int i;

	for (i = 0; i < countof(unary_cases); i++)
		unary_case(i);
}

/* where(cond, a, b) broadcasts all three; an int literal in an int op stays exact (not rounded to f32). */
static void
test_where_and_int_literals(void **state)
{
	double c[3] = {1, 0, 1}, a[3] = {1, 2, 3}, got[3], big[1] = {16777216};
	double *out[1] = {got};
	const double *in[3] = {c, a, big};
	int tc, ta, tb, y, z;
	Op *o;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tc = tensor(&e, "c", TK_INPUT, 1, 3);
	ta = tensor(&e, "a", TK_INPUT, 1, 3);
	tb = tensor(&e, "b", TK_INPUT, 0);
	e.f->tensor[tc].dtype = DT_BOOL;
	e.f->tensor[tb].dtype = e.f->tensor[ta].dtype = DT_INT64;
	y = tensor(&e, "y", TK_VALUE, 1, 3);
	e.f->tensor[y].dtype = DT_INT64;
	o = op(&e, OP_WHERE, y, 3, T(tc), T(ta));
	o->in[2] = T(tb);
	z = tensor(&e, "z", TK_VALUE, 1, 3);
	e.f->tensor[z].dtype = DT_INT64;
	o = op(&e, OP_ADD, z, 2, T(y), L(16777217));
	o->in[1].lit_int = true;
	output(&e, z);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	assert_true(got[0] == 16777218 && got[1] == 33554433 && got[2] == 16777220);
	arena_free(e.c.arena);
}

static void
test_maximum_propagates_nan(void **state)
{
	double a[2] = {NAN, 1.0}, b[2] = {1.0, NAN}, o1[2], o2[2];
	const double *in[2] = {a, b};
	double *out[2] = {o1, o2};
	int ta, tb, y1, y2;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	ta = tensor(&e, "a", TK_INPUT, 1, 2);
	tb = tensor(&e, "b", TK_INPUT, 1, 2);
	y1 = tensor(&e, "y1", TK_VALUE, 1, 2);
	op(&e, OP_MAXIMUM, y1, 2, T(ta), T(tb));
	y2 = tensor(&e, "y2", TK_VALUE, 1, 2);
	op(&e, OP_MINIMUM, y2, 2, T(ta), T(tb));
	output(&e, y1);
	output(&e, y2);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	assert_true(isnan(o1[0]) && isnan(o1[1]) && isnan(o2[0]) && isnan(o2[1]));
	arena_free(e.c.arena);
}

static void
test_reductions(void **state)
{
	double x[24], sum1[8], sum1b[8], max0[12], mean2[6], v[5] = {1, -2, 3, 9, 4}, all[1], top[1], prod[1];
	const double *in[2] = {x, v};
	double *out[7] = {sum1, sum1b, max0, mean2, all, top, prod};
	int tx, tv, y;
	Op *o;
	Env e;
	int i, j, k;

	for (i = 0; i < 24; i++)
		x[i] = (i * 7) % 11 - 5; /* mixed signs, no ties at the max */
	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 3, 2, 3, 4);
	tv = tensor(&e, "v", TK_INPUT, 1, 5);
	y = tensor(&e, "sum1", TK_VALUE, 3, 2, 1, 4); /* keepdim */
	o = op(&e, OP_SUM, y, 1, T(tx), L(0));
	o->axis = 1;
	output(&e, y);
	y = tensor(&e, "sum1b", TK_VALUE, 2, 2, 4); /* keepdim: false */
	o = op(&e, OP_SUM, y, 1, T(tx), L(0));
	o->axis = 1;
	o->keepdim = false;
	output(&e, y);
	y = tensor(&e, "max0", TK_VALUE, 3, 1, 3, 4);
	o = op(&e, OP_MAX, y, 1, T(tx), L(0));
	o->axis = 0;
	output(&e, y);
	y = tensor(&e, "mean2", TK_VALUE, 2, 2, 3);
	o = op(&e, OP_MEAN, y, 1, T(tx), L(0));
	o->axis = 2;
	o->keepdim = false;
	output(&e, y);
	y = tensor(&e, "all", TK_VALUE, 0); /* rank 1 -> rank 0 */
	o = op(&e, OP_SUM, y, 1, T(tv), L(0));
	o->axis = 0;
	o->keepdim = false;
	output(&e, y);
	y = tensor(&e, "top", TK_VALUE, 1, 1);
	o = op(&e, OP_MAX, y, 1, T(tv), L(0));
	o->axis = 0;
	output(&e, y);
	y = tensor(&e, "prod", TK_VALUE, 1, 1);
	o = op(&e, OP_PROD, y, 1, T(tv), L(0));
	o->axis = 0;
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 2; i++)
		for (k = 0; k < 4; k++) {
			double s = 0;

			for (j = 0; j < 3; j++)
				s += x[i * 12 + j * 4 + k];
			assert_near(sum1[i * 4 + k], s);
			assert_near(sum1b[i * 4 + k], s);
		}
	for (j = 0; j < 12; j++)
		assert_near(max0[j], fmax(x[j], x[12 + j]));
	for (i = 0; i < 6; i++)
		assert_near(mean2[i], (x[4 * i] + x[4 * i + 1] + x[4 * i + 2] + x[4 * i + 3]) / 4);
	assert_near(all[0], 15);
	assert_near(top[0], 9);
	assert_near(prod[0], -216);   /* 1 x -2 x 3 x 9 x 4 */
	arena_free(e.c.arena);
}

/* A (3x4), B (4x5) and C = A B worked out by hand. */
static const double mA[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const double mB[20] = {1, 0, 2, 0, 1, 0, 1, 0, 2, 1, 1, 1, 1, 1, 1, 2, 0, 0, 1, -1};
static const double mC[15] = {12, 5, 5, 11, 2, 28, 13, 17, 27, 10, 44, 21, 29, 43, 18};

static void
test_matmul_transposes(void **state)
{
	double at[12], bt[20], got[15];
	int ta, tb;

	for (ta = 0; ta < 3; ta++)
		for (tb = 0; tb < 4; tb++)
			at[tb * 3 + ta] = mA[ta * 4 + tb];
	for (ta = 0; ta < 4; ta++)
		for (tb = 0; tb < 5; tb++)
			bt[tb * 4 + ta] = mB[ta * 5 + tb];
	for (ta = 0; ta < 2; ta++)
		for (tb = 0; tb < 2; tb++) {
			const double *in[2] = {ta ? at : mA, tb ? bt : mB};
			double *out[1] = {got};
			int a, b, y;
			Op *o;
			Env e;

			COMP_INIT(e.c);
			env_fusion(&e);
			a = ta ? tensor(&e, "a", TK_INPUT, 2, 4, 3) : tensor(&e, "a", TK_INPUT, 2, 3, 4);
			b = tb ? tensor(&e, "b", TK_INPUT, 2, 5, 4) : tensor(&e, "b", TK_INPUT, 2, 4, 5);
			y = tensor(&e, "y", TK_VALUE, 2, 3, 5);
			o = op(&e, OP_MATMUL, y, 2, T(a), T(b));
			o->transpose_a = ta;
			o->transpose_b = tb;
			output(&e, y);
			assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
			assert_values(got, mC, 15);
			arena_free(e.c.arena);
		}
}

static void
test_matmul_batches(void **state)
{
	double a2[24], b2[40], o1[30], o2[30], o3[30];
	const double *in[4] = {a2, mB, mA, b2};
	double *out[3] = {o1, o2, o3};
	int ta2, tb, ta, tb2, y;
	Env e;
	int i;

	/* batch 1 is twice batch 0, so its product is 2C */
	for (i = 0; i < 12; i++)
		a2[i] = mA[i], a2[12 + i] = 2 * mA[i];
	for (i = 0; i < 20; i++)
		b2[i] = mB[i], b2[20 + i] = 2 * mB[i];
	COMP_INIT(e.c);
	env_fusion(&e);
	ta2 = tensor(&e, "a2", TK_INPUT, 3, 2, 3, 4);
	tb = tensor(&e, "b", TK_INPUT, 2, 4, 5);
	ta = tensor(&e, "a", TK_INPUT, 2, 3, 4);
	tb2 = tensor(&e, "b2", TK_INPUT, 3, 2, 4, 5);
	y = tensor(&e, "y1", TK_VALUE, 3, 2, 3, 5);  /* [2,3,4] @ [4,5] */
	op(&e, OP_MATMUL, y, 2, T(ta2), T(tb));
	output(&e, y);
	y = tensor(&e, "y2", TK_VALUE, 3, 2, 3, 5);  /* [3,4] @ [2,4,5] */
	op(&e, OP_MATMUL, y, 2, T(ta), T(tb2));
	output(&e, y);
	y = tensor(&e, "y3", TK_VALUE, 3, 2, 3, 5);  /* [2,3,4] @ [2,4,5]: 1C and 4C */
	op(&e, OP_MATMUL, y, 2, T(ta2), T(tb2));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 15; i++) {
		assert_near(o1[i], mC[i]);
		assert_near(o1[15 + i], 2 * mC[i]);
		assert_near(o2[i], mC[i]);
		assert_near(o2[15 + i], 2 * mC[i]);
		assert_near(o3[i], mC[i]);
		assert_near(o3[15 + i], 4 * mC[i]);
	}
	arena_free(e.c.arena);
}

static void
test_gemm_bias_gelu(void **state)
{
	double bias[5] = {0.5, -1, 0, 2, -3}, got[15];
	const double *in[3] = {mA, mB, bias};
	double *out[1] = {got};
	int a, b, tbias, y, z, g;
	Op *o;
	Env e;
	int i;

	COMP_INIT(e.c);
	env_fusion(&e);
	a = tensor(&e, "a", TK_INPUT, 2, 3, 4);
	b = tensor(&e, "b", TK_INPUT, 2, 4, 5);
	tbias = tensor(&e, "bias", TK_INPUT, 1, 5);
	y = tensor(&e, "y", TK_VALUE, 2, 3, 5);
	op(&e, OP_MATMUL, y, 2, T(a), T(b));
	z = tensor(&e, "z", TK_VALUE, 2, 3, 5);
	op(&e, OP_ADD, z, 2, T(y), T(tbias));
	g = tensor(&e, "g", TK_VALUE, 2, 3, 5);
	o = op(&e, OP_GELU, g, 1, T(z), L(0));
	o->approx = APPROX_TANH;
	output(&e, g);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < 15; i++)
		assert_near(got[i], w_gelu_tanh(mC[i] + bias[i % 5]));
	arena_free(e.c.arena);
}

static void
test_matmul_512(void **state)
{
	enum { N = 512 };
	static double a[N * N], b[N * N], y[N * N];
	const double *in[2] = {a, b};
	double *out[1] = {y};
	struct timespec t0, t1;
	int ta, tb, ty, i, k;
	double ms;
	Op *o;
	Env e;

	for (i = 0; i < N * N; i++) {
		a[i] = (i % 17) * 0.125 - 1;
		b[i] = (i % 13) * 0.25 - 1.5;
	}
	COMP_INIT(e.c);
	env_fusion(&e);
	ta = tensor(&e, "a", TK_INPUT, 2, N, N);
	tb = tensor(&e, "b", TK_INPUT, 2, N, N);
	ty = tensor(&e, "y", TK_VALUE, 2, N, N);
	o = op(&e, OP_MATMUL, ty, 2, T(ta), T(tb));
	o->transpose_b = true;
	output(&e, ty);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("    512x512x512 matmul reference: %.0f ms\n", ms);
	for (i = 0; i < N; i += 97) {
		int j = (i * 31) % N;
		double s = 0;

		for (k = 0; k < N; k++)
			s += a[i * N + k] * b[j * N + k];
		assert_near(y[i * N + j], s);
	}
	arena_free(e.c.arena);
}

static void
test_composite_is_internal_error(void **state)
{
	double x[4] = {1, 2, 3, 4}, o[4];
	const double *in[1] = {x};
	double *out[1] = {o};
	int tx, y;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, 4);
	y = tensor(&e, "y", TK_VALUE, 1, 4);
	op(&e, OP_SOFTMAX, y, 1, T(tx), L(0));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_ERR_INTERNAL);
	assert_non_null(strstr(e.c.last_error, "internal error"));
	assert_non_null(strstr(e.c.last_error, "softmax"));
	arena_free(e.c.arena);
}

static void
test_bad_broadcast_is_internal_error(void **state)
{
	double x[3] = {1, 2, 3}, z[2] = {1, 2}, o[3];
	const double *in[2] = {x, z};
	double *out[1] = {o};
	int tx, tz, y;
	Env e;

	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, 3);
	tz = tensor(&e, "z", TK_INPUT, 1, 2);
	y = tensor(&e, "y", TK_VALUE, 1, 3);
	op(&e, OP_ADD, y, 2, T(tx), T(tz));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_ERR_INTERNAL);
	assert_non_null(strstr(e.c.last_error, "broadcast"));
	arena_free(e.c.arena);
}

static void
test_out_of_memory(void **state)
{
	double x[1] = {1}, o[1];
	const double *in[1] = {x};
	double *out[1] = {o};
	int tx, y;
	Env e;

#if defined(__SANITIZE_ADDRESS__)
	/* ASan aborts on an impossible allocation unless told to fail it (make check-asan does) */
	if (!getenv("ASAN_OPTIONS") || !strstr(getenv("ASAN_OPTIONS"), "allocator_may_return_null=1"))
		skip_because("ASAN_OPTIONS lacks allocator_may_return_null=1 (make check-asan sets it)");
#endif
	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 1, 1);
	/* 2^47 doubles: 2^50 bytes, beyond any address space, so malloc fails at once */
	y = tensor(&e, "y", TK_VALUE, 2, 1 << 24, 1 << 23);
	op(&e, OP_NEG, y, 1, T(tx), L(0));
	output(&e, y);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_ERR_NOMEM);
	assert_non_null(strstr(e.c.last_error, "out of memory"));
	arena_free(e.c.arena);
}

/* rt_par_for: ranges that cover [0, n) once each, whatever n and the grain. */
typedef struct Cover {
	unsigned char *hit;
	int64_t n;
} Cover;

static void
cover_range(void *ctx, int64_t lo, int64_t hi)
{
	Cover *c = ctx;
	int64_t i;

	assert_true(0 <= lo && lo < hi && hi <= c->n);
	for (i = lo; i < hi; i++)
		c->hit[i]++;
}

static void
test_par_for_covers_once(void **state)
{
	static const int64_t ns[] = {0, 1, 7, 65536, 65537, 1000003};
	static const int64_t grains[] = {1, 16, 65536, 1 << 30};
	int a, b;

	(void)state;
	for (a = 0; a < (int)(sizeof ns / sizeof ns[0]); a++)
		for (b = 0; b < (int)(sizeof grains / sizeof grains[0]); b++) {
			Cover c = {calloc((size_t)ns[a] + 1, 1), ns[a]};
			int64_t i;

			rt_par_for(ns[a], grains[b], cover_range, &c);
			for (i = 0; i < ns[a]; i++)
				if (c.hit[i] != 1)
					fail_msg("n %lld grain %lld: element %lld covered %d times", (long long)ns[a],
					         (long long)grains[b], (long long)i, c.hit[i]);
			free(c.hit);
		}
}

/*
 * Tensors large enough to be split over threads: a broadcast pointwise op
 * and a row sum, bit for bit what the serial loops give (each element is
 * computed by one thread, in the serial order).
 */
static void
test_large_tensors_split_over_threads(void **state)
{
	enum { R = 37, C = 70001 };
	double *x = malloc(sizeof(double) * R * C), *w = malloc(sizeof(double) * C);
	double *y = malloc(sizeof(double) * R * C), *sum = malloc(sizeof(double) * R);
	const double *in[2] = {x, w};
	double *out[2] = {y, sum};
	int tx, tw, ty, ts, i, j;
	Env e;

	(void)state;
	for (i = 0; i < R * C; i++)
		x[i] = sin(i * 0.001) * 3.0;
	for (j = 0; j < C; j++)
		w[j] = 1.0 + j * 1e-5;
	COMP_INIT(e.c);
	env_fusion(&e);
	tx = tensor(&e, "x", TK_INPUT, 2, R, C);
	tw = tensor(&e, "w", TK_INPUT, 1, C);
	ty = tensor(&e, "y", TK_VALUE, 2, R, C);
	op(&e, OP_MUL, ty, 2, T(tx), T(tw));
	ts = tensor(&e, "s", TK_VALUE, 2, R, 1);
	op(&e, OP_SUM, ts, 1, T(ty), L(0))->axis = 1;
	output(&e, ty);
	output(&e, ts);
	assert_int_equal(rt_reference(&e.c, e.f, in, out), WSF_OK);
	for (i = 0; i < R; i++) {
		double acc = 0.0;

		for (j = 0; j < C; j++) {
			if (y[i * C + j] != x[i * C + j] * w[j])
				fail_msg("y[%d, %d] = %.17g, want %.17g", i, j, y[i * C + j], x[i * C + j] * w[j]);
			acc += x[i * C + j] * w[j];
		}
		if (sum[i] != acc)
			fail_msg("sum of row %d = %.17g, want %.17g", i, sum[i], acc);
	}
	arena_free(e.c.arena);
	free(x);
	free(w);
	free(y);
	free(sum);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broadcast),
		cmocka_unit_test(test_broadcast_inner_dims),
		cmocka_unit_test(test_symbolic_sizes),
		cmocka_unit_test(test_consumer_outputs),
		cmocka_unit_test(test_unary_ops),
		cmocka_unit_test(test_cast_rounds_and_nothing_else_does),
		cmocka_unit_test(test_binary_ops),
		cmocka_unit_test(test_dtype_ops),
		cmocka_unit_test(test_dtype_unary_ops),
		cmocka_unit_test(test_where_and_int_literals),
		cmocka_unit_test(test_maximum_propagates_nan),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_matmul_transposes),
		cmocka_unit_test(test_matmul_batches),
		cmocka_unit_test(test_gemm_bias_gelu),
		cmocka_unit_test(test_matmul_512),
		cmocka_unit_test(test_composite_is_internal_error),
		cmocka_unit_test(test_bad_broadcast_is_internal_error),
		cmocka_unit_test(test_rand_like),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_par_for_covers_once),
		cmocka_unit_test(test_large_tensors_split_over_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
