/*
 * test_bcast.c: numpy broadcasting with size-1 dims anywhere, from specs:
 * the shapes inference gives and its positioned errors, and how lowering
 * addresses each broadcast input (its view, its param, the offset
 * expression of passes/lower_bcast.c) in the pointwise and row-reduction
 * families, and the forms still refused.
 */
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

/* A fresh compilation in T (a test reads several specs). */
static void
fresh_comp(Fixture *t)
{
	Comp *c = &t->c;

	arena_free(c->arena);
	c->arena = arena_new(&c->oom);
	c->strs = strtab_new(c->arena);
	c->nerrors = 0;
	c->status = WSF_OK;
	c->fusion = NULL;
	c->kernel = NULL;
}

/* Reads SPEC and runs the passes up to STAGE; 0 or -1, the message in t->msg. */
static int
run_to(Fixture *t, const char *spec, WsfStage stage)
{
	Comp *c = &t->c;

	fresh_comp(t);
	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR))
		return -1;
	return stage == WSF_STAGE_KERNEL_IR ? passes_run(c, WSF_STAGE_KERNEL_IR) : 0;
}

static Kernel *
lower_ok(Fixture *t, const char *spec)
{
	if (run_to(t, spec, WSF_STAGE_KERNEL_IR))
		fail_msg("%s", t->msg);
	return t->c.kernel;
}

/* Kernel param NAME. */
static const KParam *
param(Fixture *t, const char *name)
{
	const Kernel *k = t->c.kernel;
	int i;

	for (i = 1; i < k->nparam; i++)
		if (strcmp(k->param[i].name, name) == 0)
			return &k->param[i];
	fail_msg("no param '%s'", name);
	return NULL;
}

/* The value NAME's shape as the fusion IR prints it. */
static const char *
shape_of(Fixture *t, const char *name)
{
	const Fusion *f = t->c.fusion;
	Buf b;

	buf_init(&b, t->c.arena);
	shape_print(&b, f, &f->tensor[fusion_find_tensor(f, intern_cstr(t->c.strs, name))]);
	return buf_str(&b);
}

#define ROPE \
	"fusion: rope\n" \
	"sizes: {T: 100, NH: 12, D: 64}\n" \
	"inputs:\n" \
	"  q: {dtype: bf16, shape: [T, NH, D]}\n" \
	"  cos: {dtype: bf16, shape: [T, 1, D]}\n" \
	"  h: {dtype: f32, shape: [NH, 1]}\n" \
	"ops:\n" \
	"  - {out: a, op: mul, in: [q, cos]}\n" \
	"  - {out: y, op: mul, in: [a, h]}\n" \
	"outputs:\n" \
	"  y: {dtype: bf16}\n"

/* Shapes: size-1 dims broadcast wherever they are; a clash names both shapes, the dim and the op. */
static void
infer_shapes(void **state)
{
	Fixture *t = *state;
	static const char bad[] =
		"fusion: b\n"
		"sizes: {B: 2, S: 8, T: 16, H: 64}\n"
		"inputs:\n"
		"  x: {dtype: f32, shape: [B, S, H]}\n"
		"  m: {dtype: f32, shape: [T, 1, H]}\n"
		"ops:\n"
		"  - {out: o, op: add, in: [x, m]}\n"
		"outputs:\n"
		"  o: {}\n";

	assert_int_equal(run_to(t, ROPE, WSF_STAGE_FUSION_IR), 0);
	assert_string_equal(shape_of(t, "a"), "bf16[T, NH, D]");
	assert_string_equal(shape_of(t, "y"), "f32[T, NH, D]");
	assert_int_equal(run_to(t, bad, WSF_STAGE_FUSION_IR), -1);
	assert_non_null(strstr(t->msg, "test.yaml:7:5: error: cannot broadcast 'x' [B, S, H] with 'm' [T, 1, H] in "
	                       "'add': B vs T in dim -3 (the 3rd from the right) (dims must be equal or 1, aligned "
	                       "from the right)"));
}

/* RoPE's cos [T, 1, D] and a per-head scale [NH, 1] over [T, NH, D]: a row and an element at the row's offset. */
static void
lower_pointwise_rope(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_ok(t, ROPE);
	const KParam *p;

	assert_false(kernel_pw(k)->flat);
	assert_int_equal(param(t, "q")->view, VIEW_FULL);
	p = param(t, "cos");
	assert_int_equal(p->kind, PK_PTR);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_string_equal(expr(t, p->at), "((row / dim_NH) * cols)");
	p = param(t, "h");
	assert_int_equal(p->kind, PK_PTR);
	assert_int_equal(p->view, VIEW_COL_AT);
	assert_string_equal(expr(t, p->at), "(row % dim_NH)");
	/* the extent the offsets read, a runtime size: the kernel runs at any NH */
	p = param(t, "dim_NH");
	assert_int_equal(p->kind, PK_SIZE);
	assert_int_equal(p->size, SZ_DIM);
	assert_int_equal(p->dim[0].sym, fusion_find_sym(t->c.fusion, intern_cstr(t->c.strs, "NH")));
}

/* Every axis of a 5-D domain: runs of dims the input has merge into one digit; constants fold. */
static void
lower_pointwise_5d(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: five\n"
		"sizes: {A: 3, B: 5, C: 7, E: 64}\n"
		"inputs:\n"
		"  x: {dtype: f32, shape: [A, B, C, 4, E]}\n"
		"  p: {dtype: f32, shape: [A, 1, C, 1, E]}\n"
		"  q: {dtype: f32, shape: [B, C, 1, E]}\n"
		"  r: {dtype: f32, shape: [A, 1, 1, 4, 1]}\n"
		"ops:\n"
		"  - {out: a, op: add, in: [x, p]}\n"
		"  - {out: b, op: add, in: [a, q]}\n"
		"  - {out: y, op: mul, in: [b, r]}\n"
		"outputs:\n"
		"  y: {}\n";

	lower_ok(t, spec);
	assert_int_equal(param(t, "p")->view, VIEW_ROW_AT);
	assert_string_equal(expr(t, param(t, "p")->at),
	                    "(((row / ((dim_B * dim_C) * 4)) * (dim_C * cols)) + (((row / 4) % dim_C) * cols))");
	assert_string_equal(expr(t, param(t, "q")->at), "(((row / 4) % (dim_B * dim_C)) * cols)");
	assert_int_equal(param(t, "r")->view, VIEW_COL_AT);
	assert_string_equal(expr(t, param(t, "r")->at),
	                    "(((row / ((dim_B * dim_C) * 4)) * 4) + (row % 4))");
}

/*
 * A row reduction: an attention mask [S, S] shared by [BH, S, S] under a
 * softmax, adaLN's [B, 1, H] over [B, S, H] after a layernorm.
 */
static void
lower_reduction_bcast(void **state)
{
	Fixture *t = *state;
	static const char mask[] =
		"fusion: ms\n"
		"sizes: {BH: 8, S: 256}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [BH, S, S]}\n"
		"  m: {dtype: bf16, shape: [S, S]}\n"
		"ops:\n"
		"  - {out: z, op: add, in: [x, m]}\n"
		"  - {out: y, op: softmax, in: [z]}\n"
		"outputs:\n"
		"  y: {}\n";
	static const char adaln[] =
		"fusion: ada\n"
		"sizes: {B: 4, S: 100, H: 1024}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [B, S, H]}\n"
		"  scale: {dtype: bf16, shape: [B, 1, H]}\n"
		"  shift: {dtype: bf16, shape: [B, 1, H]}\n"
		"  g: {dtype: f32, shape: [B, 1, 1]}\n"
		"ops:\n"
		"  - {out: n, op: layernorm, in: [x]}\n"
		"  - {out: s1, op: add, in: [scale, 1.0]}\n"
		"  - {out: a, op: mul, in: [n, s1]}\n"
		"  - {out: b, op: add, in: [a, shift]}\n"
		"  - {out: y, op: mul, in: [b, g]}\n"
		"outputs:\n"
		"  y: {}\n";
	Kernel *k = lower_ok(t, mask);

	assert_int_equal(param(t, "m")->view, VIEW_ROW_AT);
	assert_string_equal(expr(t, param(t, "m")->at), "((row % cols) * cols)");
	k = lower_ok(t, adaln);
	assert_int_equal(param(t, "scale")->view, VIEW_ROW_AT);
	assert_string_equal(expr(t, param(t, "scale")->at), "((row / dim_S) * cols)");
	assert_int_equal(k->row.view[fusion_find_tensor(t->c.fusion, intern_cstr(t->c.strs, "s1"))], VIEW_ROW_AT);
	assert_int_equal(param(t, "g")->view, VIEW_COL_AT);
	assert_string_equal(expr(t, param(t, "g")->at), "(row / dim_S)");
}

/*
 * A matmul's epilogue: a position bias [S, N] shared by the batch of a
 * linear layer over [B, S, K], a bmm's [S, S] bias over [B, H, S, S] (a batch
 * stride of 0); a few-row output that would be swapped is not.
 */
static void
lower_matmul_bcast(void **state)
{
	Fixture *t = *state;
	static const char lin[] =
		"fusion: lin\n"
		"sizes: {B: 2, S: 16, N: 512, K: 256}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [B, S, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n"
		"  pb: {dtype: bf16, shape: [S, N]}\n"
		"ops:\n"
		"  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: o, op: add, in: [y, pb]}\n"
		"outputs:\n"
		"  o: {dtype: bf16}\n";
	static const char lin_swapped[] =
		"fusion: lin\n"
		"sizes: {B: 2, S: 16, N: 512, K: 256}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [B, S, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n"
		"  pb: {dtype: bf16, shape: [S, N]}\n"
		"ops:\n"
		"  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: o, op: add, in: [y, pb]}\n"
		"outputs:\n"
		"  o: {dtype: bf16}\n"
		"schedule: {swap_ab: true}\n";
	static const char bmm[] =
		"fusion: att\n"
		"sizes: {B: 2, H: 3, S: 200, D: 64}\n"
		"inputs:\n"
		"  q: {dtype: bf16, shape: [B, H, S, D]}\n"
		"  k: {dtype: bf16, shape: [B, H, S, D]}\n"
		"  bias: {dtype: bf16, shape: [S, S]}\n"
		"  hs: {dtype: f32, shape: [H, 1, 1]}\n"
		"ops:\n"
		"  - {out: s, op: matmul, in: [q, k], transpose_b: true}\n"
		"  - {out: a, op: add, in: [s, bias]}\n"
		"  - {out: o, op: mul, in: [a, hs]}\n"
		"outputs:\n"
		"  o: {dtype: bf16}\n";
	Kernel *k = lower_ok(t, lin);

	assert_false(k->mm.swap_ab);   /* 32 rows: swapped, but for the broadcast input */
	assert_int_equal(param(t, "pb")->kind, PK_PTR);
	assert_int_equal(param(t, "pb")->view, VIEW_ROW_AT);
	assert_string_equal(expr(t, param(t, "pb")->at), "((row % dim_S) * cols)");
	assert_int_equal(run_to(t, lin_swapped, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:12:21: error: swap_ab with an epilogue input broadcast along a "
	                       "leading dim is not implemented yet"));
	k = lower_ok(t, bmm);
	assert_true(k->mm.batched);
	assert_string_equal(expr(t, param(t, "bias")->at), "((row % cols) * cols)");
	assert_int_equal(param(t, "hs")->view, VIEW_COL_AT);
	assert_string_equal(expr(t, param(t, "hs")->at), "((row / cols) % dim_H)");
}

/*
 * A row reduction cannot yet store an output several rows compute, nor read
 * values larger than the rows it reduces: positioned "not implemented yet"s.
 */
static void
lower_refuses_broadcast_output(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: r\n"
		"sizes: {B: 4, S: 100, H: 1024}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [B, S, H]}\n"
		"  w: {dtype: bf16, shape: [B, 1, H]}\n"
		"ops:\n"
		"  - {out: n, op: rmsnorm, in: [x]}\n"
		"  - {out: w2, op: mul, in: [w, 2.0]}\n"
		"  - {out: y, op: mul, in: [n, w2]}\n"
		"outputs:\n"
		"  y: {}\n"
		"  w2: {}\n";

	static const char wider[] =
		"fusion: r\n"
		"sizes: {B: 2, S: 8, H: 64}\n"
		"inputs:\n"
		"  x: {dtype: f32, shape: [S, H]}\n"
		"  y: {dtype: f32, shape: [B, S, H]}\n"
		"ops:\n"
		"  - {out: n, op: rmsnorm, in: [x]}\n"
		"  - {out: o, op: add, in: [n, y]}\n"
		"outputs:\n"
		"  o: {}\n";

	assert_int_equal(run_to(t, spec, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:12:3: error: output 'w2' is broadcast along a leading dim"));
	assert_int_equal(run_to(t, wider, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:5:3: error: 'y' has dims that the rows the kernel reduces, f32[S, H], "
	                       "lack"));
}

/*
 * rand_like: the numbers hash the element's index in the kernel's
 * row-major view, so x must have the output's whole shape (a full row in a
 * row kernel), and the kernel must be pointwise or a row reduction (exit 6
 * otherwise, at the op or at x), where the seed and the offset are the only
 * integers it may read; they are integer scalars (an input error at the
 * operand).
 */
static void
rand_like_rules(void **state)
{
	Fixture *t = *state;
	static const char ok[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  seed: {dtype: int64, shape: []}\n  off: {dtype: int64, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [x, seed, off]}\n  - {out: y, op: mul, in: [x, u]}\n"
		"outputs:\n  y: {}\n";
	static const char row[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  seed: {dtype: int32, shape: []}\n  off: {dtype: int32, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [x, seed, off]}\n  - {out: y, op: sum, in: [u], axis: -1}\n"
		"outputs:\n  y: {}\n";
	/* the seed read as something else too: an integer value in a row kernel */
	static const char row_int[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  seed: {dtype: int32, shape: []}\n  off: {dtype: int32, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [x, seed, off]}\n  - {out: v, op: mul, in: [u, seed]}\n"
		"  - {out: y, op: sum, in: [v], axis: -1}\noutputs:\n  y: {}\n";
	static const char row_bcast[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  b: {dtype: bf16, shape: [N]}\n  seed: {dtype: int64, shape: []}\n  off: {dtype: int64, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [b, seed, off]}\n  - {out: v, op: mul, in: [x, u]}\n"
		"  - {out: y, op: sum, in: [v], axis: -1}\noutputs:\n  y: {}\n";
	static const char mm[] =
		"fusion: d\nsizes: {M: 64, N: 128, K: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [K, N]}\n  seed: {dtype: int64, shape: []}\n  off: {dtype: int64, shape: []}\n"
		"ops:\n  - {out: c, op: matmul, in: [a, w]}\n  - {out: u, op: rand_like, in: [c, seed, off]}\n"
		"  - {out: y, op: mul, in: [c, u]}\noutputs:\n  y: {}\n";
	static const char bcast[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  b: {dtype: bf16, shape: [N]}\n  seed: {dtype: int64, shape: []}\n  off: {dtype: int64, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [b, seed, off]}\n  - {out: y, op: mul, in: [x, u]}\n"
		"outputs:\n  y: {}\n";
	static const char fseed[] =
		"fusion: d\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  seed: {dtype: f32, shape: []}\n  off: {dtype: int64, shape: []}\n"
		"ops:\n  - {out: u, op: rand_like, in: [x, seed, off]}\n"
		"outputs:\n  u: {}\n";
	Kernel *k;

	assert_int_equal(run_to(t, ok, WSF_STAGE_KERNEL_IR), 0);
	k = t->c.kernel;
	assert_int_equal(k->family, FAM_POINTWISE);
	assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[1].out].dtype, DT_F32);
	assert_int_equal(run_to(t, row, WSF_STAGE_KERNEL_IR), 0);
	assert_int_equal(t->c.kernel->family, FAM_REDUCTION);
	assert_int_equal(run_to(t, row_int, WSF_STAGE_KERNEL_IR), -1);
	assert_non_null(strstr(t->msg, "test.yaml:5:3: error: 'seed' is int32: integer values compute in pointwise"));
	assert_int_equal(run_to(t, row_bcast, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:9:34: error: rand_like of 'b', which is not a full row of"));
	assert_int_equal(run_to(t, mm, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:10:5: error: rand_like in a matmul kernel is not implemented yet"));
	assert_int_equal(run_to(t, bcast, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->msg, "test.yaml:9:34: error: rand_like of 'b', which broadcasts"));
	assert_int_equal(run_to(t, fseed, WSF_STAGE_KERNEL_IR), -1);
	assert_int_equal(t->c.status, 0);
	assert_non_null(strstr(t->msg, "test.yaml:8:37: error: op 'rand_like' takes its seed as an integer scalar"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(infer_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_rope, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_5d, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_bcast, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_matmul_bcast, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_refuses_broadcast_output, setup, teardown),
		cmocka_unit_test_setup_teardown(rand_like_rules, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
