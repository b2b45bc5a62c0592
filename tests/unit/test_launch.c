/*
 * test_launch.c: the host side of a launch (runtime/launch.c rt_launch_plan),
 * without a GPU: argument checks, the 2-D view a flat kernel chooses, the
 * tensor-map parameters every tiled tensor gets, and the launch description
 * they are planned from (codegen/launch_desc.c).  Device pointers are fake
 * (never dereferenced): only their alignment matters here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../codegen/codegen.h"
#include "../../compiler/compiler.h"
#include "../../passes/passes.h"
#include "../../runtime/runtime.h"
#include "fixture.h"

#define DEV(n) ((void *)(uintptr_t)(0x7f0000000000ull + (n) * 0x100000ull))

static const Launch *
build(Fixture *t, const char *spec)
{
	Comp *c = &t->c;
	Launch *l = NULL;
	Buf b;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR))
		fail_msg("%s", t->msg);
	buf_init(&b, c->arena);
	if (codegen_emit(c, &b, &l))
		fail_msg("%s", t->msg);
	return l;
}

static const char relu[] =
	"fusion: r\nsizes: {N: 1024}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: f32}\n";

static const char bias[] =
	"fusion: b\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: bf16, shape: [N]}\nops:\n  - {out: o, op: add, in: [x, b]}\noutputs:\n  o: {dtype: bf16}\n";

/* A flat kernel views 2^20 elements as rows as wide as a tile: each tile one contiguous run. */
static void
flat_view_wide_rows(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, relu);
	int64_t n[] = {1 << 20};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 1, n, NULL}, {DEV(2), WSF_DTYPE_F32, 1, n, NULL}};
	LaunchPlan p;

	assert_true(kernel_pw(t->c.kernel)->flat);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	assert_int_equal(p.cols, t->c.kernel->tile_cols);
	assert_int_equal(p.rows, (1 << 20) / t->c.kernel->tile_cols);
	assert_int_equal(p.tiles, p.rows / t->c.kernel->tile_rows);
	assert_int_equal(p.tmap[1].rank, 2);
	assert_int_equal(p.tmap[1].dims[0], p.cols);
	assert_int_equal(p.tmap[1].strides[0], p.cols * 2);
	assert_int_equal(l->param[1].swizzle, 0);
	assert_int_equal(p.tmap[1].swizzle, CU_TENSOR_MAP_SWIZZLE_NONE);
}

/* 1001 elements have no 16-byte row factorisation: one row, its stride padded to 16 bytes. */
static void
flat_view_ragged(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, relu);
	int64_t n[] = {1001};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 1, n, NULL}, {DEV(2), WSF_DTYPE_F32, 1, n, NULL}};
	LaunchPlan p;

	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	assert_int_equal(p.rows, 1);
	assert_int_equal(p.cols, 1001);
	assert_int_equal(p.tmap[1].dims[0], 1001);
	assert_int_equal(p.tmap[1].dims[1], 1);
	assert_int_equal(p.tmap[1].strides[0], 2016);
}

/* A bias is a row: its map is one row of cols, whatever M is. */
static void
row_view(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, bias);
	int64_t mn[] = {300, 512}, nn[] = {512};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, nn, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 2, mn, NULL}};
	LaunchPlan p;

	assert_false(kernel_pw(t->c.kernel)->flat);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.rows, 300);
	assert_int_equal(p.cols, 512);
	assert_int_equal(p.tmap[1].dims[1], 300);
	assert_int_equal(p.tmap[2].dims[0], 512);
	assert_int_equal(p.tmap[2].dims[1], 1);
	assert_int_equal(p.tmap[2].box[1], 1);
}

static void
expect_status(Fixture *t, const Launch *l, WsfTensor *a, int n, WsfStatus status, const char *what)
{
	LaunchPlan p;

	t->msg[0] = 0;
	assert_int_equal(rt_launch_plan(&t->c, l, a, n, &p), status);
	if (!strstr(t->msg, what))
		fail_msg("expected '%s' in: %s", what, t->msg);
}

static void
expect_error(Fixture *t, const Launch *l, WsfTensor *a, int n, const char *what)
{
	expect_status(t, l, a, n, WSF_ERR_INPUT, what);
}

static void
argument_errors(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, bias);
	int64_t mn[] = {64, 128}, nn[] = {96}, good[] = {128}, st[] = {1, 64};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, nn, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 2, mn, NULL}};

	expect_error(t, l, a, 3, "argument 'b': dim 0 is 96, but size N is 128 from an earlier argument");
	expect_error(t, l, a, 2, "takes 3 arguments (2 inputs, 1 outputs), saw 2");
	a[1].shape = good;
	a[1].dtype = WSF_DTYPE_F32;
	expect_error(t, l, a, 3, "argument 'b': dtype f32, expected bf16");
	a[1].dtype = WSF_DTYPE_BF16;
	a[0].strides = st;
	expect_error(t, l, a, 3, "argument 'x': dim 1 has stride 64, expected 1 (the last dim's elements");
	a[0].strides = NULL;
	a[0].data = (char *)DEV(1) + 8;
	expect_error(t, l, a, 3, "'x'");
	a[0].data = DEV(1);
	a[2].ndim = 1;
	expect_error(t, l, a, 3, "argument 'o': rank 1, expected 2");
}

/*
 * Rows wider than a row (x[:, :128] of a [64, 200] tensor: strides {200, 1})
 * go through a tensor map of the rows, its row stride the argument's, in a
 * flat kernel too (its own rows then, not a factorisation); the torch op's
 * query says so (wsf_kernel_arg_row_strided).  A broadcast read through the
 * pointer at contiguous offsets, a last dim that steps, rows that are not one
 * run of steps and a row stride off 16 bytes are errors that say which.
 */
static void
row_strided_arguments(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, bias);
	int64_t mn[] = {64, 128}, nn[] = {128}, wide[] = {200, 1}, odd[] = {131, 1}, step[] = {256, 2};
	int64_t bmn[] = {4, 16, 128}, runs[] = {3200, 200, 1}, broken[] = {4000, 200, 1};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, wide}, {DEV(2), WSF_DTYPE_BF16, 1, nn, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 2, mn, NULL}};
	LaunchPlan p;

	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.rows, 64);
	assert_int_equal(p.tmap[1].dims[0], 128);
	assert_int_equal(p.tmap[1].strides[0], 400);   /* 200 bf16 a row, not 128 */
	a[2].strides = wide;   /* the output: 16-byte stores from registers at contiguous offsets */
	expect_error(t, l, a, 3, "argument 'o': its rows are 200 elements apart, wider than a row (a slice of its last "
	             "dim), but the kernel writes it through its pointer");
	a[2].strides = NULL;
	a[0].strides = odd;
	expect_error(t, l, a, 3, "argument 'x': its row stride, 131 bf16 elements, is 262 bytes: a tensor map takes "
	             "multiples of 16 below 2^40");
	a[0].strides = step;
	expect_error(t, l, a, 3, "argument 'x': dim 1 has stride 2, expected 1 (the last dim's elements must be "
	             "consecutive");
	a[0].strides = wide;
	a[1].strides = nn;   /* (a 1-D bias with stride 128: its last dim steps) */
	expect_error(t, l, a, 3, "argument 'b': dim 0 has stride 128, expected 1");
	a[1].strides = NULL;

	/* a flat kernel: its own rows when an argument's are strided; 3-D rows one run of steps */
	l = build(t, "fusion: f\nsizes: {B: 4, S: 16}\ninputs:\n  x: {dtype: bf16, shape: [B, S, 128]}\n"
	             "ops:\n  - {out: o, op: relu, in: [x]}\noutputs:\n  o: {dtype: bf16}\n");
	assert_true(kernel_pw(t->c.kernel)->flat);
	a[0].ndim = a[1].ndim = 3;
	a[0].shape = a[1].shape = bmn;
	a[0].strides = runs;
	a[1].data = DEV(3);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	assert_int_equal(p.rows, 64);
	assert_int_equal(p.cols, 128);
	assert_int_equal(p.tmap[1].strides[0], 400);
	a[0].strides = broken;
	expect_error(t, l, a, 2, "argument 'x': dim 0 has stride 4000, expected 3200 (the rows, its dims but the "
	             "last, must be one run of equal steps");

	/* read through its pointer (a broadcast along a leading dim at its row's offset): contiguous only */
	l = build(t, "fusion: g\nsizes: {T: 8}\ninputs:\n  x: {dtype: bf16, shape: [T, 4, 128]}\n"
	             "  c: {dtype: bf16, shape: [T, 1, 128]}\nops:\n  - {out: o, op: mul, in: [x, c]}\n"
	             "outputs:\n  o: {dtype: bf16}\n");
	{
		int64_t xs[] = {8, 4, 128}, cs[] = {8, 1, 128}, cst[] = {256, 128, 1};
		WsfTensor g[3] = {{DEV(1), WSF_DTYPE_BF16, 3, xs, NULL}, {DEV(2), WSF_DTYPE_BF16, 3, cs, cst},
		                  {DEV(3), WSF_DTYPE_BF16, 3, xs, NULL}};

		expect_error(t, l, g, 3, "argument 'c': its rows are 256 elements apart, wider than a row (a slice of its "
		             "last dim), but the kernel reads it through its pointer at contiguous offsets");
	}
}

/*
 * A size bound at compile time (-D) that a view made constant extents from
 * (a slice of part of N) holds a launch to that size; the other sizes stay
 * runtime sizes.
 */
static void
view_fixed_sizes(void **state)
{
	Fixture *t = *state;
	static const SizeBinding n256 = {"N", 256};
	static const char spec[] =
		"fusion: v\nsizes: {M: 64}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: slice, in: [x], dim: 1, end: 128}\noutputs:\n  y: {}\n";
	const Launch *l;
	int64_t xs[] = {64, 256}, ys[] = {64, 128}, xs2[] = {32, 512};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 2, xs, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, ys, NULL}};
	LaunchPlan p;

	t->c.bind = &n256;
	t->c.nbind = 1;
	l = build(t, spec);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	xs[0] = ys[0] = 32;   /* M: a runtime size */
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	a[0].shape = xs2;
	expect_error(t, l, a, 2, "the arguments make N 512, but the kernel was compiled at N = 256, from which a view "
	             "made constant extents: compile it at this size (-D N=512)");
	t->c.nbind = 0;
}

/* Outputs stored from registers need 16-byte aligned data. */
static void
vector_store_alignment(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: v\nsizes: {N: 1024}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: bf16}\nschedule: {store: vector}\n";
	const Launch *l = build(t, spec);
	int64_t n[] = {1024};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 1, n, NULL}, {(char *)DEV(2) + 2, WSF_DTYPE_BF16, 1, n, NULL}};

	expect_error(t, l, a, 2, "argument 'o': data pointer");
}

/*
 * A row reduction copies whole rows with 1-D bulk copies: rows must start on
 * 16 bytes (data pointer and row length), and fit the compiled row capacity.
 */
static void
row_reduction_checks(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: n\nsizes: {M: 8, N: 4000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n"
		"schedule: {persistent: true}\n";   /* bulk row copies into the stages */
	const Launch *l = build(t, spec);
	int64_t ok[] = {8, 4000}, ragged[] = {8, 4004}, wide[] = {8, 8192}, one[] = {1, 4004};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 2, ok, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, ok, NULL}};
	LaunchPlan p;

	assert_int_equal(t->c.kernel->family, FAM_REDUCTION);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	assert_int_equal(p.rows, 8);
	assert_int_equal(p.cols, 4000);
	a[0].data = (char *)DEV(1) + 8;
	expect_error(t, l, a, 2, "argument 'x': data pointer");
	a[0].data = DEV(1);
	a[0].shape = a[1].shape = ragged;  /* 8008-byte rows, within the 4096 capacity */
	expect_error(t, l, a, 2, "argument 'x': rows of 4004 bf16 elements are 8008 bytes, not a multiple of 16");
	a[0].shape = a[1].shape = one;     /* one row: no stride, but the bulk copy's size must be 16-byte too */
	expect_error(t, l, a, 2, "argument 'x': rows of 4004 bf16 elements are 8008 bytes, not a multiple of 16");
	a[0].shape = a[1].shape = wide;
	expect_error(t, l, a, 2, "keeps rows of up to 4096 elements in shared memory; these rows have 8192");
}

/*
 * One CTA a row, loaded straight into registers (the default for a softmax):
 * rows of several need 16-byte strides, but one ragged row is fine (no bulk
 * copy: its tail loads element by element).
 */
static void
direct_row_checks(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: n\nsizes: {M: 8, N: 4000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n";
	const Launch *l = build(t, spec);
	int64_t ragged[] = {8, 4004}, one[] = {1, 4004};
	WsfTensor a[2] = {{DEV(1), WSF_DTYPE_BF16, 2, one, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, one, NULL}};
	LaunchPlan p;

	assert_true(t->c.kernel->row.direct);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 2, &p), WSF_OK);
	assert_int_equal(p.cols, 4004);
	a[0].shape = a[1].shape = ragged;
	expect_error(t, l, a, 2, "argument 'x': rows of 4004 bf16 elements are 8008 bytes, not a multiple of 16");
}

/*
 * A row streamed in chunks takes rows of any width; each bulk-loaded tensor,
 * the weight included, needs 16-byte aligned data and rows of 16-byte
 * multiples (the weight is bf16 where x is f32: its rows are half as long).
 */
static void
streamed_row_checks(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: n\nsizes: {M: 8, N: 40000}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n"
		"  w: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: rmsnorm, in: [x, w]}\noutputs:\n  y: {dtype: f32}\n";
	const Launch *l = build(t, spec);
	int64_t ok[] = {8, 40000}, wide[] = {8, 1000000}, odd[] = {8, 40004}, w_ok[] = {40000}, w_wide[] = {1000000},
	        w_odd[] = {40004}, huge[] = {1, (int64_t)1 << 31}, w_huge[] = {(int64_t)1 << 31};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_F32, 2, ok, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, w_ok, NULL},
	                  {DEV(3), WSF_DTYPE_F32, 2, ok, NULL}};
	LaunchPlan p;

	assert_int_equal(t->c.kernel->row.chunk, 4096);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	a[0].shape = a[2].shape = wide;   /* wider than compiled: streamed rows have no capacity */
	a[1].shape = w_wide;
	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.cols, 1000000);
	a[0].shape = a[2].shape = odd;    /* x's rows are 160016 bytes, w's 80008 */
	a[1].shape = w_odd;
	expect_error(t, l, a, 3, "argument 'w': rows of 40004 bf16 elements are 80008 bytes, not a multiple of 16");
	a[0].shape = a[2].shape = ok;
	a[1].shape = w_ok;
	a[1].data = (char *)DEV(2) + 2;
	expect_error(t, l, a, 3, "argument 'w': data pointer");
	a[1].data = DEV(2);
	a[0].shape = a[2].shape = huge;   /* element indices are 32-bit */
	a[1].shape = w_huge;
	expect_error(t, l, a, 3, "streams rows of up to 2147479551 elements (32-bit element indices); these rows have 2147483648");
}

/*
 * One-row pointwise tiles (`tile: [1, 512]`) use no tensor maps: x and the
 * f32 output move by bulk copies (16-byte pointers and rows, one row too),
 * the bias is read in compute (a 16-byte pointer); tiles cover each row.
 */
static void
one_row_tile_checks(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: b\nsizes: {M: 64, N: 1024}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"  b: {dtype: bf16, shape: [N]}\nops:\n  - {out: o, op: add, in: [x, b]}\noutputs:\n  o: {dtype: f32}\n"
		"schedule: {tile: [1, 512]}\n";
	const Launch *l = build(t, spec);
	int64_t mn[] = {300, 1000}, n[] = {1000}, one[] = {1, 12}, n_one[] = {12};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, n, NULL},
	                  {DEV(3), WSF_DTYPE_F32, 2, mn, NULL}};
	LaunchPlan p;
	int i;

	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.rows, 300);
	assert_int_equal(p.cols, 1000);
	assert_int_equal(p.tiles, 300 * 2);
	for (i = 1; i < t->c.kernel->nparam; i++)
		assert_int_not_equal(t->c.kernel->param[i].kind, PK_TMAP);
	a[1].data = (char *)DEV(2) + 8;
	expect_error(t, l, a, 3, "argument 'b': data pointer");
	a[1].data = DEV(2);
	a[2].data = (char *)DEV(3) + 4;
	expect_error(t, l, a, 3, "argument 'o': data pointer");
	a[2].data = DEV(3);
	a[0].shape = a[2].shape = one;   /* one row of 24 bytes (x) and 48 (o): the bulk copy of x is ragged */
	a[1].shape = n_one;
	expect_error(t, l, a, 3, "argument 'x': rows of 12 bf16 elements are 24 bytes, not a multiple of 16");
}

/*
 * A matmul compiled at K = 4096 and launched at other sizes: the operands'
 * maps are of their own [rows, K] views, the output's of the domain.  Rows
 * TMA cannot address (K = 100 is 200-byte rows of x and w, N = 500 1000-byte
 * rows of the output) are refused, naming the tensor, its size and the
 * 16-byte rule, before any driver call: rt_launch opens no driver for them.
 */
static void
matmul_checks(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: mm\nsizes: {M: 1024, N: 1024, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n  b: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, b]}\n"
		"outputs:\n  o: {dtype: bf16}\n";
	const Launch *l = build(t, spec);
	int64_t x[] = {300, 4096}, w[] = {512, 4096}, b[] = {512}, o[] = {300, 512};
	WsfTensor a[4] = {{DEV(1), WSF_DTYPE_BF16, 2, x, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, w, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 1, b, NULL}, {DEV(4), WSF_DTYPE_BF16, 2, o, NULL}};
	Loaded *st = NULL;
	LaunchPlan p;
	int i;

	assert_int_equal(t->c.kernel->family, FAM_MATMUL);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 4, &p), WSF_OK);
	assert_int_equal(p.rows, 300);
	assert_int_equal(p.cols, 512);
	assert_int_equal(p.inner, 4096);
	for (i = 1; i < t->c.kernel->nparam; i++) {
		const KParam *q = &t->c.kernel->param[i];

		if (q->kind != PK_TMAP || q->arg > 1)
			continue;
		/* an operand: its own rows of K, K-major tiles of 64 bf16 = 128 bytes, swizzled */
		assert_int_equal(p.tmap[i].dims[0], 4096);
		assert_int_equal(p.tmap[i].dims[1], q->arg == 0 ? 300 : 512);
		assert_int_equal(p.tmap[i].strides[0], 8192);
		assert_int_equal(l->param[i].swizzle, 128);   /* the description's, codegen's choice */
		assert_int_equal(p.tmap[i].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
	}
	x[1] = w[1] = 100;
	expect_error(t, l, a, 4, "input 'x': rows of K = 100 bf16 elements are 200 bytes, not a multiple of 16 "
	                         "(TMA needs 16-byte row strides); make K a multiple of 8");
	t->msg[0] = 0;
	assert_int_equal(rt_launch(&t->c, l, &st, NULL, a, 4, NULL, NULL), WSF_ERR_INPUT);
	assert_null(st);
	assert_non_null(strstr(t->msg, "input 'x': rows of K = 100 bf16 elements are 200 bytes"));
	x[1] = w[1] = 4096;
	w[0] = b[0] = o[1] = 500;
	expect_error(t, l, a, 4, "output 'o': rows of N = 500 bf16 elements are 1000 bytes, not a multiple of 16 "
	                         "(TMA needs 16-byte row strides); make N a multiple of 8");
	w[0] = b[0] = o[1] = 512;
	a[1].data = (char *)DEV(2) + 2;
	expect_error(t, l, a, 4, "input 'w': address");
	a[1].data = DEV(2);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 4, &p), WSF_OK);
}

/*
 * A batched matmul (batch dims on both operands): the view is one batch's
 * [M, N] with the batch a size of its own, the tiles are every batch's, and
 * each tensor with batch dims gets a 3-D map one batch deep: the operands
 * 128-byte swizzled (their tiles feed wgmma), the f32 output too: its
 * staging subtiles of 32 columns (128 bytes) are written as that swizzle
 * lays them out (a swizzled map over row-major staging would scatter every
 * row but the first).
 */
static void
batched_matmul_plan(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: bmm\nsizes: {B: 2, M: 128, N: 256, K: 64}\ninputs:\n  a: {dtype: bf16, shape: [B, M, K]}\n"
		"  v: {dtype: bf16, shape: [B, K, N]}\nops:\n  - {out: y, op: matmul, in: [a, v]}\n"
		"outputs:\n  y: {dtype: f32}\nschedule: {tile: [128, 256, 64]}\n";   /* not narrowed for 2 tiles */
	const Launch *l = build(t, spec);
	int64_t x[] = {6, 300, 64}, v[] = {6, 64, 512}, y[] = {6, 300, 512};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 3, x, NULL}, {DEV(2), WSF_DTYPE_BF16, 3, v, NULL},
	                  {DEV(3), WSF_DTYPE_F32, 3, y, NULL}};
	LaunchPlan p;
	int i;

	assert_true(t->c.kernel->mm.batched);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.rows, 300);
	assert_int_equal(p.cols, 512);
	assert_int_equal(p.batch, 6);
	assert_int_equal(p.inner, 64);
	assert_int_equal(p.tiles, 3 * 2 * 6);   /* 128 x 256 tiles */
	for (i = 1; i < t->c.kernel->nparam; i++) {
		const KParam *q = &t->c.kernel->param[i];

		if (q->kind != PK_TMAP)
			continue;
		assert_int_equal(p.tmap[i].rank, 3);
		assert_int_equal(p.tmap[i].dims[2], 6);
		assert_int_equal(p.tmap[i].box[2], 1);
		assert_int_equal(l->param[i].swizzle, 128);
		assert_int_equal(p.tmap[i].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
	}
}

/* A [B, K, M] (transpose_a) against a shared weight: K is A's dim -2, whatever the batch. */
static void
batched_transposed_inner(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: bmm\nsizes: {B: 2, M: 128, N: 256, K: 64}\ninputs:\n  a: {dtype: f16, shape: [B, K, M]}\n"
		"  w: {dtype: f16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true, "
		"transpose_b: true}\noutputs:\n  y: {}\n";
	const Launch *l = build(t, spec);
	int64_t x[] = {5, 200, 136}, w[] = {264, 200}, y[] = {5, 136, 264};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_F16, 3, x, NULL}, {DEV(2), WSF_DTYPE_F16, 2, w, NULL},
	                  {DEV(3), WSF_DTYPE_F16, 3, y, NULL}};
	LaunchPlan p;

	assert_true(t->c.kernel->mm.batched);
	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.inner, 200);
	assert_int_equal(p.batch, 5);
	assert_int_equal(p.rows, 136);
	assert_int_equal(p.tmap[1].rank, 3);   /* A: batched */
	assert_int_equal(p.tmap[2].rank, 2);   /* the shared weight */
}

/*
 * Shapes no product of sizes can overflow on: every extent 1..2^40 (what
 * wsf_set_size takes), element and byte counts in 64 bits; a null shape or
 * argument array is a usage error that names it.  All before any driver call.
 */
static void
shape_limits(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, bias);
	int64_t big[] = {((int64_t)1 << 56) + 1, 256}, n256[] = {256}, neg[] = {-5, 256};
	int64_t wide[] = {(int64_t)1 << 40, (int64_t)1 << 24}, n24[] = {(int64_t)1 << 24};
	int64_t heavy[] = {(int64_t)1 << 40, (int64_t)1 << 22}, n22[] = {(int64_t)1 << 22};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 2, big, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, n256, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 2, big, NULL}};

	expect_error(t, l, a, 3, "argument 'x': dim 0 is 72057594037927937, more than the limit of 2^40 (1099511627776)");
	a[0].shape = neg;
	expect_error(t, l, a, 3, "argument 'x': dim 0 is -5, expected a positive extent");
	a[0].shape = a[2].shape = wide;   /* each extent in range, 2^64 elements */
	a[1].shape = n24;
	expect_error(t, l, a, 3, "argument 'x': its shape has 2^63 elements or more");
	a[0].shape = a[2].shape = heavy;  /* 2^62 elements, 2^63 bytes */
	a[1].shape = n22;
	expect_error(t, l, a, 3, "argument 'x': 4611686018427387904 bf16 elements take 2^63 bytes or more");
	a[0].shape = NULL;
	expect_status(t, l, a, 3, WSF_ERR_USAGE, "argument 'x': its shape is a null pointer, with ndim 2");
	expect_status(t, l, NULL, 3, WSF_ERR_USAGE, "kernel 'b': the arguments are a null pointer (3 expected)");
}

/* A row reduction's domain can be a broadcast no argument has: [M, 1] + [N], summed over N. */
static void
domain_limits(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: d\nsizes: {M: 8, N: 64}\ninputs:\n  x: {dtype: f32, shape: [M, 1]}\n"
		"  y: {dtype: f32, shape: [N]}\nops:\n  - {out: s, op: add, in: [x, y]}\n"
		"  - {out: r, op: sum, in: [s], axis: -1}\noutputs:\n  r: {dtype: f32}\n";
	const Launch *l = build(t, spec);
	int64_t m[] = {(int64_t)1 << 40, 1}, n[] = {(int64_t)1 << 40};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_F32, 2, m, NULL}, {DEV(2), WSF_DTYPE_F32, 1, n, NULL},
	                  {DEV(3), WSF_DTYPE_F32, 2, m, NULL}};

	assert_int_equal(t->c.kernel->family, FAM_REDUCTION);
	expect_error(t, l, a, 3, "kernel 'd': its domain 's' has 2^63 elements or more at these sizes");
}

/*
 * An input broadcast along a leading dim ([S, 1, H] over [S, NH, H], after
 * an rmsnorm): its
 * offset's extent (SZ_DIM) comes from the arguments, and a view of 2^32 rows
 * or more, past its 32-bit row division, is refused.
 */
static void
broadcast_offset_sizes(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: rb\nsizes: {S: 8, NH: 4, H: 64}\ninputs:\n  x: {dtype: bf16, shape: [S, NH, H]}\n"
		"  c: {dtype: bf16, shape: [S, 1, H]}\nops:\n  - {out: n, op: rmsnorm, in: [x]}\n"
		"  - {out: o, op: mul, in: [n, c]}\noutputs:\n  o: {dtype: bf16}\n";
	const Launch *l = build(t, spec);
	int64_t x[] = {100, 12, 64}, c[] = {100, 1, 64}, xb[] = {(int64_t)1 << 30, 4, 8}, cb[] = {(int64_t)1 << 30, 1, 8};
	WsfTensor a[3] = {{DEV(1), WSF_DTYPE_BF16, 3, x, NULL}, {DEV(2), WSF_DTYPE_BF16, 3, c, NULL},
	                  {DEV(3), WSF_DTYPE_BF16, 3, x, NULL}};
	LaunchPlan p;
	int i;

	assert_int_equal(rt_launch_plan(&t->c, l, a, 3, &p), WSF_OK);
	assert_int_equal(p.rows, 1200);
	for (i = 1; i < l->nparam && !(l->param[i].kind == PK_SIZE && l->param[i].size == SZ_DIM); i++)
		;
	assert_true(i < l->nparam);
	assert_string_equal(l->param[i].name, "dim_NH");
	assert_int_equal(p.dims[i], 12);
	a[0].shape = a[2].shape = xb;
	a[1].shape = cb;
	expect_error(t, l, a, 3, "kernel 'rb' reads 'c' (broadcast along a leading dim) with 32-bit row indices, but "
	             "its view has 4294967296 rows");
}

/* A GEMM of sizes SIZES under schedule SCHED, its output y bf16. */
#define GEMM(sizes, sched) \
	"fusion: g\nsizes: " sizes "\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n" \
	"  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n" \
	"outputs:\n  y: {dtype: bf16}\nschedule: " sched "\n"

/* Param I of L: of KIND, named NAME, from argument ARG. */
static void
expect_param(const Launch *l, int i, ParamKind kind, const char *name, int arg)
{
	assert_true(i < l->nparam);
	assert_int_equal(l->param[i].kind, kind);
	assert_string_equal(l->param[i].name, name);
	assert_int_equal(l->param[i].arg, arg);
}

/*
 * launch_describe: a flat pointwise kernel's description is one CTA a tile
 * of the domain, maps over its 2-D view (unswizzled, box the tile), the
 * view's extents, the entry point and shared memory codegen laid out.
 */
static void
describe_pointwise(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, relu);

	assert_string_equal(l->entry, "wsfuse_r");
	assert_int_equal(l->threads, t->c.kernel->threads);
	assert_int_equal(l->smem_bytes, kernel_smem_bytes(t->c.kernel));
	assert_int_equal(l->cluster, 1);
	assert_true(l->flat);
	assert_false(l->batched);
	assert_false(l->row_tiles);
	assert_int_equal(l->grid, GRID_PER_TILE);
	assert_int_equal(l->workspace_slot, 0);
	assert_false(l->signal);
	assert_int_equal(l->waits, 0);
	assert_string_equal(l->fusion->tensor[l->domain].name, "o");
	assert_int_equal(l->nparam, 5);
	expect_param(l, 1, PK_TMAP, "a", 0);
	expect_param(l, 2, PK_TMAP, "o", 1);
	expect_param(l, 3, PK_SIZE, "rows", -1);
	expect_param(l, 4, PK_SIZE, "cols", -1);
	assert_int_equal(l->param[3].size, SZ_ROWS);
	assert_int_equal(l->param[4].size, SZ_COLS);
	assert_false(l->param[1].own_view);
	assert_int_equal(l->param[1].box[0], l->tile_rows);
	assert_int_equal(l->param[1].box[1], l->tile_cols);
}

/*
 * A persistent row reduction: a tile is a row, its rows held in shared
 * memory up to the compiled width, its input moved by bulk row copies.
 */
static void
describe_row_reduction(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: n\nsizes: {M: 8, N: 4000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n"
		"schedule: {persistent: true}\n";
	const Launch *l = build(t, spec);

	assert_true(l->row_tiles);
	assert_int_equal(l->grid, GRID_PERSISTENT);
	assert_int_equal(l->row_cap, 4096);
	assert_int_equal(l->row_chunk, 0);
	assert_false(l->flat);
	assert_int_equal(l->nparam, 5);
	expect_param(l, 1, PK_PTR, "x", 0);
	expect_param(l, 2, PK_PTR, "y", 1);
	assert_true(l->param[1].bulk);
	assert_false(l->param[2].bulk);
	assert_int_equal(l->param[1].view, VIEW_FULL);
}

/*
 * Matmuls: a K split over clusters of 2 x 2 (8 CTAs a cluster, cluster
 * tiles of 2 x 2 tiles), persistent; stream-K (describe_stream_k), whose
 * grid is every CTA the GPU holds, with a workspace of its partial sums a
 * CTA.  Operands and the output's staging go through swizzled buffers:
 * maps of their own views.
 */
static void
describe_split_cluster(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, GEMM("{M: 256, N: 512, K: 4096}",
	                                "{split_k: 2, cluster: [2, 2], consumers: pingpong, tile: [64, 64, 64]}"));
	int i;

	assert_int_equal(l->cluster, 8);
	assert_int_equal(l->cluster_rows, 2);
	assert_int_equal(l->cluster_cols, 2);
	assert_int_equal(l->tile_rows, 64);
	assert_int_equal(l->tile_cols, 64);
	assert_int_equal(l->grid, GRID_PERSISTENT);
	assert_int_equal(l->workspace_slot, 0);
	assert_false(l->row_tiles);
	assert_int_equal(l->nparam, 7);
	expect_param(l, 1, PK_TMAP, "x", 0);
	expect_param(l, 2, PK_TMAP, "w", 1);
	expect_param(l, 3, PK_TMAP, "y", 2);
	expect_param(l, 6, PK_SIZE, "inner", -1);
	assert_int_equal(l->param[6].size, SZ_INNER);
	assert_string_equal(l->fusion->sym[l->param[6].dim[0].sym].name, "K");
	for (i = 1; i <= 3; i++)
		assert_true(l->param[i].own_view);
	assert_int_equal(l->param[1].box[0], 32);   /* a ping-pong tile's operand, multicast in halves */
	assert_int_equal(l->param[1].box[1], 64);
}

static void
describe_stream_k(void **state)
{
	Fixture *t = *state;
	const Launch *l = build(t, GEMM("{M: 2176, N: 4096, K: 520}", "{tile: [128, 128, 64], stages: 3, stream_k: true}"));
	assert_int_equal(l->grid, GRID_ALL);
	assert_int_equal(l->workspace_slot, 128 * 128 * 4);   /* a tile's f32 partial sums */
	assert_true(l->workspace_asked);
	assert_int_equal(l->cluster, 1);
	assert_int_equal(l->nparam, 9);
	expect_param(l, 4, PK_WORKSPACE, "sk_work", -1);
	expect_param(l, 5, PK_SIZE, "sk_on", -1);
	assert_int_equal(l->param[5].size, SZ_SK_ON);
	assert_int_equal(l->param[1].box[0], 128);
	assert_int_equal(l->param[3].box[1], 32);   /* the output's staging subtile */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(flat_view_wide_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(flat_view_ragged, setup, teardown),
		cmocka_unit_test_setup_teardown(row_view, setup, teardown),
		cmocka_unit_test_setup_teardown(row_strided_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(argument_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(view_fixed_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(vector_store_alignment, setup, teardown),
		cmocka_unit_test_setup_teardown(row_reduction_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(direct_row_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(streamed_row_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(one_row_tile_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(matmul_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(batched_matmul_plan, setup, teardown),
		cmocka_unit_test_setup_teardown(batched_transposed_inner, setup, teardown),
		cmocka_unit_test_setup_teardown(shape_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(domain_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(broadcast_offset_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(describe_pointwise, setup, teardown),
		cmocka_unit_test_setup_teardown(describe_row_reduction, setup, teardown),
		cmocka_unit_test_setup_teardown(describe_split_cluster, setup, teardown),
		cmocka_unit_test_setup_teardown(describe_stream_k, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
