/*
 * test_fusion_passes.c: unit tests of expand, infer and schedule on the
 * fusion IR: what a composite expands to, the shapes and dtypes inference
 * gives, and the family and placement errors of the scheduler.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/compiler.h"
#include "../../passes/passes.h"

#include "fixture.h"

/* Reads SPEC and runs the fusion passes; returns their result. */
static int
run(Fixture *t, const char *spec)
{
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	t->c.src = spec;
	t->c.srclen = strlen(spec);
	if (spec_read(&t->c))
		fail_msg("spec rejected: %s", t->msg);
	return passes_run(&t->c, WSF_STAGE_FUSION_IR);
}

static const Tensor *
tensor(Fixture *t, const char *name)
{
	const Fusion *f = t->c.fusion;
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (strcmp(f->tensor[i].name, name) == 0)
			return &f->tensor[i];
	fail_msg("no tensor %s", name);
	return NULL;
}

static const char *
shape(Fixture *t, const char *name)
{
	Buf b;

	buf_init(&b, t->c.arena);
	shape_print(&b, t->c.fusion, tensor(t, name));
	return buf_str(&b);
}

#define HEAD "fusion: f\nsizes: {M: 8, N: 16, K: 32}\ninputs:\n"

static void
expand_softmax(void **state)
{
	Fixture *t = *state;
	const Fusion *f;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [M, N]}\n"
	                     "ops:\n  - {out: p, op: softmax, in: [x]}\noutputs:\n  p: {}\n"), 0);
	f = t->c.fusion;
	assert_int_equal(f->nop - 1, 5);
	assert_int_equal(f->op[1].kind, OP_MAX);
	assert_int_equal(f->op[2].kind, OP_SUB);
	assert_int_equal(f->op[3].kind, OP_EXP);
	assert_int_equal(f->op[4].kind, OP_SUM);
	assert_int_equal(f->op[5].kind, OP_DIV);
	assert_int_equal(f->tensor[f->op[5].out].def, 5);
	assert_string_equal(f->tensor[f->op[5].out].name, "p");
	assert_string_equal(f->op[2].origin, "p");
	assert_string_equal(shape(t, "p.max"), "bf16[M, 1]");
	assert_string_equal(shape(t, "p"), "bf16[M, N]");
	assert_int_equal(f->op[1].pos.line, 6);
}

static void
expand_layernorm_affine(void **state)
{
	Fixture *t = *state;
	const Fusion *f;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [M, N]}\n  w: {dtype: bf16, shape: [N]}\n"
	                     "  b: {dtype: bf16, shape: [N]}\nops:\n"
	                     "  - {out: y, op: layernorm, in: [x, w, b], eps: 0.001}\noutputs:\n  y: {}\n"), 0);
	f = t->c.fusion;
	assert_int_equal(f->nop - 1, 9);
	assert_int_equal(f->op[f->nop - 1].kind, OP_ADD);
	assert_int_equal(f->op[f->nop - 2].kind, OP_MUL);
	assert_true(f->op[5].in[1].tensor == 0 && f->op[5].in[1].lit == 0.001);
	assert_string_equal(shape(t, "y.var"), "bf16[M, 1]");
}

static void
expand_rmsnorm_plain(void **state)
{
	Fixture *t = *state;
	const Fusion *f;

	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [M, N]}\nops:\n"
	                     "  - {out: y, op: rmsnorm, in: [x]}\noutputs:\n  y: {}\n"), 0);
	f = t->c.fusion;
	assert_int_equal(f->nop - 1, 5);
	assert_int_equal(f->op[5].kind, OP_MUL);
	assert_string_equal(f->tensor[f->op[5].out].name, "y");
	assert_int_equal(f->family, FAM_REDUCTION);
}

/*
 * min and logsumexp: -max(-x), and log(sum(exp(x - max))) + max; the
 * reduction whose result is the composite's keeps its keepdim, and without
 * keepdim logsumexp takes the max again in the result's shape.
 */
static void
expand_min_logsumexp(void **state)
{
	Fixture *t = *state;
	static const OpKind lse[] = {OP_MAX, OP_SUB, OP_EXP, OP_SUM, OP_LOG, OP_MAX, OP_ADD};
	const Fusion *f;
	int i;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [M, N]}\nops:\n"
	                     "  - {out: lo, op: min, in: [x], dim: -1, keepdim: false}\n"
	                     "  - {out: l, op: logsumexp, in: [x], keepdim: false}\n"
	                     "  - {out: lk, op: amin, in: [x]}\noutputs:\n  lo: {}\n  l: {}\n  lk: {}\n"), 0);
	f = t->c.fusion;
	assert_int_equal(f->nop - 1, 3 + 7 + 3);
	assert_int_equal(f->op[1].kind, OP_NEG);
	assert_int_equal(f->op[2].kind, OP_MAX);
	assert_false(f->op[2].keepdim);
	assert_int_equal(f->op[3].kind, OP_NEG);
	assert_string_equal(shape(t, "lo"), "bf16[M]");
	for (i = 0; i < 7; i++)
		assert_int_equal(f->op[4 + i].kind, lse[i]);
	assert_true(f->op[4].keepdim);    /* the shift's max broadcasts back over x */
	assert_false(f->op[7].keepdim);   /* the sum, and the max added to its log */
	assert_false(f->op[9].keepdim);
	assert_string_equal(shape(t, "l.max"), "bf16[M, 1]");
	assert_string_equal(shape(t, "l"), "bf16[M]");
	assert_string_equal(f->op[10].origin, "l");
	assert_string_equal(shape(t, "lk"), "bf16[M, 1]");   /* keepdim's default, true */
	assert_int_equal(f->family, FAM_REDUCTION);
}

/*
 * var and std: the mean square about the mean (correction 0), else the
 * sum of squares over the extent less the correction, the extent a sum of
 * ones (a runtime size's too); log_softmax: x - max - log(sum(exp)).  The
 * reference of the expansion against values computed here.
 */
static void
expand_var_std_log_softmax(void **state)
{
	Fixture *t = *state;
	const double x[8] = {1, 2, 4, 0, -1, 0.5, 3.5, 2};
	const double *in[] = {x};
	double v[2], s[2], l[8], *out[] = {v, s, l};
	int i;

	assert_int_equal(run(t, "fusion: f\ninputs:\n  x: {dtype: f32, shape: [2, 4]}\nops:\n"
	                     "  - {out: v, op: var, in: [x], dim: 1}\n"
	                     "  - {out: s, op: std, in: [x], dim: -1, correction: 0, keepdim: true}\n"
	                     "  - {out: l, op: log_softmax, in: [x], dim: 1}\n"
	                     "outputs:\n  v: {}\n  s: {}\n  l: {}\n"), 0);
	assert_string_equal(shape(t, "v"), "f32[2, 1]");   /* (keepdim: true by default, docs/spec.md) */
	assert_string_equal(shape(t, "s"), "f32[2, 1]");
	assert_string_equal(shape(t, "l"), "f32[2, 4]");
	assert_string_equal(shape(t, "v.n"), "f32[2, 1]");   /* the extent, a sum of ones */
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	assert_int_equal(rt_reference(&t->c, t->c.fusion, in, out), WSF_OK);
	for (i = 0; i < 2; i++) {
		const double *r = x + 4 * i;
		double m = (r[0] + r[1] + r[2] + r[3]) / 4, ss = 0, mx = r[0], se = 0;
		int j;

		for (j = 0; j < 4; j++) {
			ss += (r[j] - m) * (r[j] - m);
			mx = r[j] > mx ? r[j] : mx;
		}
		for (j = 0; j < 4; j++)
			se += exp(r[j] - mx);
		if (fabs(v[i] - ss / 3) > 1e-6 || fabs(s[i] - sqrt(ss / 4)) > 1e-6)
			fail_msg("row %d: var %g (want %g), std %g (want %g)", i, v[i], ss / 3, s[i], sqrt(ss / 4));
		for (j = 0; j < 4; j++)
			if (fabs(l[4 * i + j] - (r[j] - mx - log(se))) > 1e-6)
				fail_msg("log_softmax [%d, %d]: %g", i, j, l[4 * i + j]);
	}
	t->c.nerrors = 0;
	t->c.src = "fusion: f\ninputs:\n  x: {dtype: f32, shape: [2, 4]}\nops:\n"
	           "  - {out: v, op: var, in: [x], dim: 1, correction: -1}\noutputs:\n  v: {}\n";
	t->c.srclen = strlen(t->c.src);
	assert_int_not_equal(spec_read(&t->c), 0);
	assert_non_null(strstr(t->msg, "expected a non-negative number for 'correction', saw '-1'"));
}

static void
infer_broadcast_and_dtypes(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [M, N]}\n  b: {dtype: f32, shape: [N]}\n"
	                     "  c: {dtype: bf16, shape: [M, 1]}\nops:\n"
	                     "  - {out: y, op: add, in: [x, b]}\n  - {out: z, op: mul, in: [x, c]}\n"
	                     "  - {out: h, op: cast, in: [z], to: f16}\n  - {out: s, op: mul, in: [2, h]}\n"
	                     "outputs:\n  y: {}\n  s: {dtype: bf16}\n"), 0);
	assert_string_equal(shape(t, "y"), "f32[M, N]");
	assert_string_equal(shape(t, "z"), "bf16[M, N]");
	assert_string_equal(shape(t, "h"), "f16[M, N]");
	assert_string_equal(shape(t, "s"), "f16[M, N]");
	assert_int_equal(t->c.fusion->out[0].dtype, DT_F32);
	assert_int_equal(t->c.fusion->out[1].dtype, DT_BF16);
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
}


/* torch's promotion: category first (bool < integer < float), numbers only promote a lower category */
static void
infer_promotion(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  i8: {dtype: int8, shape: [M, N]}\n  u8: {dtype: uint8, shape: [M, N]}\n"
	                     "  i64: {dtype: int64, shape: [N]}\n  m: {dtype: bool, shape: [M, 1]}\n"
	                     "  x: {dtype: bfloat16, shape: [M, N]}\n  q: {dtype: float8_e5m2, shape: [M, N]}\nops:\n"
	                     "  - {out: a, op: add, in: [i8, u8]}\n"       /* int8 + uint8: int32 (torch: int16) */
	                     "  - {out: b, op: add, in: [i8, i64]}\n"      /* the wider integer */
	                     "  - {out: c, op: mul, in: [i8, 2]}\n"        /* an int number keeps int8 */
	                     "  - {out: d, op: mul, in: [i8, 2.0]}\n"      /* a float number: f32 */
	                     "  - {out: e, op: add, in: [m, 1]}\n"         /* bool + int number: int64 */
	                     "  - {out: g, op: add, in: [i8, x]}\n"        /* integer + float: the float */
	                     "  - {out: h, op: gt, in: [x, i64]}\n"        /* comparisons: bool */
	                     "  - {out: k, op: where, in: [h, i8, m]}\n"   /* where: a and b promote; cond bool */
	                     "  - {out: l, op: div, in: [i8, i8]}\n"       /* true division of integers: f32 */
	                     "  - {out: n, op: sin, in: [u8]}\n"           /* float math of an integer: f32 */
	                     "  - {out: o, op: floor_divide, in: [i8, 3]}\n"
	                     "  - {out: p, op: logical_and, in: [x, i8]}\n"
	                     "  - {out: r, op: add, in: [q, x]}\n"         /* two float types: f32 */
	                     "  - {out: s, op: bitwise_xor, in: [m, m]}\n"
	                     "  - {out: u, op: cast, in: [x], to: int64}\n"
	                     "outputs:\n  a: {}\n  b: {}\n  c: {}\n  d: {}\n  e: {}\n  g: {}\n  k: {}\n  l: {}\n"
	                     "  n: {}\n  o: {}\n  p: {}\n  r: {}\n  s: {}\n  u: {}\n"), 0);
	assert_string_equal(shape(t, "a"), "int32[M, N]");
	assert_string_equal(shape(t, "b"), "int64[M, N]");
	assert_string_equal(shape(t, "c"), "int8[M, N]");
	assert_string_equal(shape(t, "d"), "f32[M, N]");
	assert_string_equal(shape(t, "e"), "int64[M, 1]");
	assert_string_equal(shape(t, "g"), "bf16[M, N]");
	assert_string_equal(shape(t, "h"), "bool[M, N]");
	assert_string_equal(shape(t, "k"), "int8[M, N]");
	assert_string_equal(shape(t, "l"), "f32[M, N]");
	assert_string_equal(shape(t, "n"), "f32[M, N]");
	assert_string_equal(shape(t, "o"), "int8[M, N]");
	assert_string_equal(shape(t, "p"), "bool[M, N]");
	assert_string_equal(shape(t, "r"), "f32[M, N]");
	assert_string_equal(shape(t, "s"), "bool[M, 1]");
	assert_string_equal(shape(t, "u"), "int64[M, N]");
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
}

/* A row reduction and a matmul epilogue take fp8 and bool values, which an f32 register holds. */
static void
infer_fp8_and_bool_beside_reductions(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [M, N]}\n  m: {dtype: bool, shape: [M, N]}\nops:\n"
	                     "  - {out: a, op: max, in: [m]}\n"
	                     "  - {out: y, op: where, in: [m, x, -1e4]}\n  - {out: s, op: softmax, in: [y]}\n"
	                     "  - {out: q, op: cast, in: [s], to: fp8e4m3}\noutputs:\n  q: {}\n  a: {}\n"), 0);
	assert_string_equal(shape(t, "a"), "bool[M, 1]");
	assert_string_equal(shape(t, "q"), "fp8e4m3[M, N]");
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
}

static void
infer_reduce_keepdim_false(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [M, N]}\nops:\n"
	                     "  - {out: s, op: sum, in: [x], keepdim: false}\noutputs:\n  s: {}\n"), 0);
	assert_string_equal(shape(t, "s"), "f32[M]");
	assert_int_equal(t->c.fusion->op[1].axis, 1);
}

static void
infer_matmul_transposes(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  x: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	                     "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_a: true, transpose_b: true}\n"
	                     "outputs:\n  y: {}\n"), 0);
	assert_string_equal(shape(t, "y"), "bf16[M, N]");
	assert_int_equal(t->c.fusion->family, FAM_MATMUL);
}

static void
infer_errors(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [M, N]}\n  y: {dtype: f32, shape: [N, M]}\n"
	                     "ops:\n  - {out: z, op: add, in: [x, y]}\noutputs:\n  z: {}\n"), -1);
	assert_non_null(strstr(t->msg, "test.yaml:7:5: error: cannot broadcast 'x' [M, N] with 'y' [N, M]"));
	assert_int_equal(t->c.nerrors, 1);
}

static void
schedule_reduction_axis(void **state)
{
	Fixture *t = *state;

	/* over rows: a pointwise kernel's (lower_reduce_grid.c); with a row's reduction: the row kernel's */
	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [M, N]}\nops:\n"
	                     "  - {out: s, op: sum, in: [x], axis: 0}\noutputs:\n  s: {}\n"), 0);
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [M, N]}\nops:\n"
	                     "  - {out: s, op: sum, in: [x], axis: 0}\n  - {out: r, op: sum, in: [x], axis: 1}\n"
	                     "outputs:\n  s: {}\n  r: {}\n"), 0);
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	/* over a middle axis beside a row's: refused (exit status 6) */
	assert_int_equal(run(t, HEAD "  x: {dtype: f32, shape: [2, M, N]}\nops:\n"
	                     "  - {out: s, op: sum, in: [x], axis: 1}\n  - {out: r, op: sum, in: [x], axis: 2}\n"
	                     "outputs:\n  s: {}\n  r: {}\n"), -1);
	assert_non_null(strstr(t->msg, "a kernel with reductions over the last axis (a row's) takes others only over "
	                       "every dim but the last"));
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
}

static void
schedule_alignment(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run(t, "fusion: f\nsizes: {M: 8, N: 12}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	                     "ops:\n  - {out: y, op: relu, in: [x]}\noutputs:\n  y: {dtype: f32}\n"), -1);
	assert_non_null(strstr(t->msg, "test.yaml:4:3: error: input 'x': a row of N = 12 bf16 elements is 24 bytes"));
	assert_non_null(strstr(t->msg, "make N a multiple of 8"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(expand_softmax, setup, teardown),
		cmocka_unit_test_setup_teardown(expand_layernorm_affine, setup, teardown),
		cmocka_unit_test_setup_teardown(expand_rmsnorm_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(expand_min_logsumexp, setup, teardown),
		cmocka_unit_test_setup_teardown(expand_var_std_log_softmax, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_broadcast_and_dtypes, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_promotion, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_fp8_and_bool_beside_reductions, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_reduce_keepdim_false, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_matmul_transposes, setup, teardown),
		cmocka_unit_test_setup_teardown(infer_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(schedule_reduction_axis, setup, teardown),
		cmocka_unit_test_setup_teardown(schedule_alignment, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
