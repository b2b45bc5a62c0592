/*
 * test_views.c: the view ops (slice, cat, chunk, split, permute, transpose,
 * reshape, view, expand, pad) from specs: the shapes and dtypes inference
 * gives (negative dims and steps, torch's clamping, runtime sizes) and its
 * positioned errors, the host reference's values against hand-computed
 * ones, the fusion IR printed for RoPE's rotate-half and a QKV chunk, and
 * the schedule pass's refusal (exit status 6, at the op) until lowering
 * builds views.
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
#include "passes_helpers.h"

static void
assert_contains(const char *s, const char *part)
{
	if (!s || !strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s ? s : "(null)");
}

static int
infer_spec(Fixture *t, const char *spec)
{
	return run_spec(t, spec, false);
}

/* A spec of inputs x (DTYPE, SHAPE) and z (f32 [M, 4]), sizes M and N (default 16), ops OPS and output y. */
static const char *
spec_of(Fixture *t, const char *dtype, const char *shape, const char *ops)
{
	static char spec[1024];   /* not in the arena: infer_spec makes a new one */

	(void)t;
	snprintf(spec, sizeof spec, "fusion: v\nsizes: {M: 16, N: 16}\ninputs:\n  x: {dtype: %s, shape: %s}\n"
	         "  z: {dtype: f32, shape: [M, 4]}\nops:\n%soutputs:\n  y: {}\n", dtype, shape, ops);
	return spec;
}

/* The shape of Y (as the IR prints it) when op OP (one line of YAML) reads x of DTYPE and SHAPE. */
static const char *
shape_after(Fixture *t, const char *dtype, const char *shape, const char *op)
{
	const Fusion *f;
	const char *spec = spec_of(t, dtype, shape, op);
	Buf b;

	if (infer_spec(t, spec))
		fail_msg("%s\nfor: %s", t->msg, op);
	f = t->c.fusion;
	buf_init(&b, t->c.arena);
	shape_print(&b, f, &f->tensor[fusion_find_tensor(f, intern_cstr(t->c.strs, "y"))]);
	return buf_str(&b);
}

/* The message inference (or the front end) gives for OP over x of SHAPE. */
static const char *
error_of(Fixture *t, const char *shape, const char *op)
{
	if (infer_spec(t, spec_of(t, "f32", shape, op)) == 0)
		fail_msg("no error for: %s", op);
	return t->msg;
}

#define OP1(s) "  - {out: y, " s "}\n"

static void
slice_shapes(void **state)
{
	Fixture *t = *state;

	assert_string_equal(shape_after(t, "bf16", "[2, 3, 4]", OP1("op: slice, in: [x], dim: -1, start: 1, step: 2")),
	                    "bf16[2, 3, 2]");
	assert_string_equal(shape_after(t, "f32", "[4, 8]", OP1("op: slice, in: [x], dim: 0, start: -3, end: -1")),
	                    "f32[2, 8]");
	assert_string_equal(shape_after(t, "f32", "[4, 8]", OP1("op: slice, in: [x], start: -100, end: 100")),
	                    "f32[4, 8]");   /* clamped, as torch's */
	assert_string_equal(shape_after(t, "f32", "[10]", OP1("op: slice, in: [x], step: 3")), "f32[4]");
	assert_string_equal(shape_after(t, "f32", "[10]", OP1("op: slice, in: [x], start: 9, end: null, step: 5")),
	                    "f32[1]");
	assert_string_equal(shape_after(t, "int8", "[M, 8]", OP1("op: slice, in: [x], dim: 0")), "int8[M, 8]");
	assert_string_equal(shape_after(t, "f32", "[M, 8]", OP1("op: slice, in: [x], dim: 1, end: 4")), "f32[M, 4]");
	assert_contains(error_of(t, "[M, 8]", OP1("op: slice, in: [x], dim: 0, end: 4")),
	                "dim 0 of 'x' [M, 8], which is the runtime size M");
	assert_contains(error_of(t, "[4, 8]", OP1("op: slice, in: [x], dim: 1, start: 8")),
	                "slice [8::1] of dim 1 of 'x' [4, 8] is empty");
	assert_contains(error_of(t, "[4, 8]", OP1("op: slice, in: [x], dim: 2")),
	                "test.yaml:7:39: error: dim 2 is out of range for 'x' [4, 8] of rank 2 (expected -2..1)");
	assert_contains(error_of(t, "[4, 8]", OP1("op: slice, in: [x], step: -1")), "torch's slices step forward");
}

/* A size bound at compile time (-D) is a constant to a view; a default is not. */
static void
slice_bound_size(void **state)
{
	Fixture *t = *state;

	t->bind[0] = (SizeBinding){"M", 6};
	t->c.bind = t->bind;
	t->c.nbind = 1;
	assert_string_equal(shape_after(t, "f32", "[M, 8]", OP1("op: slice, in: [x], dim: 0, start: 1, step: 2")),
	                    "f32[3, 8]");
	assert_string_equal(shape_after(t, "f32", "[M, 8]", OP1("op: pad, in: [x], pad: [0, 0, 1, 1]")), "f32[8, 8]");
	t->c.bind = NULL;
	t->c.nbind = 0;
}

static void
chunk_split_shapes(void **state)
{
	Fixture *t = *state;
	const Fusion *f;
	static const char *const want[] = {"f32[4, 2]", "f32[4, 2]", "f32[2, 2]"};
	int i;

	assert_int_equal(infer_spec(t, spec_of(t, "f32", "[10, 2]",
	                 "  - {out: [a, b, c], op: chunk, in: [x], chunks: 3}\n"
	                 "  - {out: y, op: add, in: [c, 1.0]}\n")), 0);
	f = t->c.fusion;
	for (i = 0; i < 3; i++) {
		Buf b;

		buf_init(&b, t->c.arena);
		shape_print(&b, f, &f->tensor[f->op[i + 1].out]);
		assert_string_equal(buf_str(&b), want[i]);
		assert_int_equal(f->op[i + 1].kind, OP_SLICE);
	}
	assert_string_equal(shape_after(t, "f32", "[2, 5]",
	                    "  - {out: [a, y], op: split, in: [x], sizes: [2, 3], dim: -1}\n"), "f32[2, 3]");
	assert_contains(error_of(t, "[6]", "  - {out: [a, b, c, y], op: chunk, in: [x], chunks: 4}\n"),
	                "op 'chunk' of dim 0 of 'x' [6] into 4 makes 3 chunks, not 4");
	assert_contains(error_of(t, "[6]", "  - {out: [a, y], op: split, in: [x], sizes: [2, 3]}\n"),
	                "they sum to 5, and dim 0 of 'x' [6] is 6");
	assert_contains(error_of(t, "[6]", "  - {out: [a, y], op: chunk, in: [x], chunks: 3}\n"),
	                "op 'chunk' makes 3 chunks (chunks: 3), but 'out' names 2 tensors");
}

static void
cat_shapes(void **state)
{
	Fixture *t = *state;
	static const char two[] =
		"fusion: c\ninputs:\n  a: {dtype: bf16, shape: [2, 3]}\n  b: {dtype: f32, shape: [2, 5]}\n"
		"  i: {dtype: int8, shape: [4, 3]}\n  m: {dtype: bool, shape: [1, 3]}\n"
		"ops:\n  - {out: y, op: cat, in: [a, b], dim: -1}\n  - {out: w, op: cat, in: [i, m, a], dim: 0}\n"
		"  - {out: k, op: cat, in: [i, m]}\noutputs:\n  y: {}\n  w: {}\n  k: {}\n";
	const Fusion *f;

	assert_int_equal(infer_spec(t, two), 0);
	f = t->c.fusion;
	assert_int_equal(f->tensor[f->op[1].out].dim[1].ext, 8);
	assert_int_equal(f->tensor[f->op[1].out].dtype, DT_F32);    /* torch.cat promotes */
	assert_int_equal(f->tensor[f->op[2].out].dim[0].ext, 7);
	assert_int_equal(f->tensor[f->op[2].out].dtype, DT_BF16);
	assert_int_equal(f->tensor[f->op[3].out].dtype, DT_INT8);
	assert_int_equal(f->op[1].axis, 1);                         /* normalized */
	assert_string_equal(shape_after(t, "f32", "[M, 4]", OP1("op: cat, in: [x, z], dim: 1")), "f32[M, 8]");
	assert_contains(error_of(t, "[3, 4]", OP1("op: cat, in: [x, z], dim: 1")),
	                "test.yaml:7:31: error: cannot cat 'x' [3, 4] with 'z' [M, 4] along dim 1: dim 0 differs "
	                "(3 vs M)");
	assert_contains(error_of(t, "[3, 4]", OP1("op: cat, in: [x, z], dim: 0")), "the runtime size M");
	assert_contains(error_of(t, "[4]", OP1("op: cat, in: [x, z]")), "ranks differ (1 and 2)");
}

static void
permute_shapes(void **state)
{
	Fixture *t = *state;

	assert_string_equal(shape_after(t, "bf16", "[2, 3, 4]", OP1("op: permute, in: [x], dims: [2, 0, 1]")),
	                    "bf16[4, 2, 3]");
	assert_string_equal(shape_after(t, "bf16", "[2, 3, M]", OP1("op: permute, in: [x], dims: [-1, 0, -2]")),
	                    "bf16[M, 2, 3]");
	assert_string_equal(shape_after(t, "f32", "[2, 3, 4]", OP1("op: transpose, in: [x], dim0: -1, dim1: 0")),
	                    "f32[4, 3, 2]");
	assert_string_equal(shape_after(t, "f32", "[2, 3]", OP1("op: transpose, in: [x], dim0: 1, dim1: 1")),
	                    "f32[2, 3]");
	assert_int_equal(t->c.fusion->op[1].dim0, 1);
	assert_contains(error_of(t, "[2, 3, 4]", OP1("op: permute, in: [x], dims: [0, -3, 1]")),
	                "'dims' names dim 0 of 'x' [2, 3, 4] twice (as -3)");
	assert_contains(error_of(t, "[2, 3, 4]", OP1("op: permute, in: [x], dims: [1, 0]")),
	                "takes 3 dims (its rank), saw 2");
	assert_contains(error_of(t, "[2, 3]", OP1("op: transpose, in: [x], dim0: 0, dim1: 2")),
	                "dim1 2 is out of range for 'x' [2, 3] of rank 2");
}

static void
reshape_shapes(void **state)
{
	Fixture *t = *state;

	assert_string_equal(shape_after(t, "f32", "[2, 3, 4]", OP1("op: reshape, in: [x], shape: [6, -1]")),
	                    "f32[6, 4]");
	assert_string_equal(shape_after(t, "f32", "[2, 3, 4]", OP1("op: view, in: [x], shape: [24]")), "f32[24]");
	assert_string_equal(shape_after(t, "f32", "[M, 128]", OP1("op: reshape, in: [x], shape: [M, 2, 64]")),
	                    "f32[M, 2, 64]");
	assert_string_equal(shape_after(t, "f32", "[M, 128]", OP1("op: view, in: [x], shape: [-1, 4, 32]")),
	                    "f32[M, 4, 32]");
	assert_string_equal(shape_after(t, "f32", "[M, 2, 64]", OP1("op: reshape, in: [x], shape: [M, -1]")),
	                    "f32[M, 128]");
	assert_contains(error_of(t, "[2, 3, 4]", OP1("op: reshape, in: [x], shape: [5, 5]")),
	                "cannot reshape 'x' [2, 3, 4] (24 elements) to [5, 5] (25 elements)");
	assert_contains(error_of(t, "[2, 3, 4]", OP1("op: reshape, in: [x], shape: [5, -1]")),
	                "24 is not a multiple of 5");
	assert_contains(error_of(t, "[M, 128]", OP1("op: reshape, in: [x], shape: [-1, 64]")),
	                "-1 cannot stand for a product of sizes");
	assert_string_equal(shape_after(t, "f32", "[M, 4]", OP1("op: reshape, in: [x], shape: [4, M]")), "f32[4, M]");
	assert_contains(error_of(t, "[M, 4]", OP1("op: reshape, in: [x], shape: [4, N]")),
	                "write the shape with the same sizes");
	assert_contains(error_of(t, "[4]", OP1("op: reshape, in: [x], shape: [-1, -1]")), "a second -1");
}

static void
expand_pad_shapes(void **state)
{
	Fixture *t = *state;

	assert_string_equal(shape_after(t, "f32", "[1, 4]", OP1("op: expand, in: [x], shape: [M, -1]")), "f32[M, 4]");
	assert_string_equal(shape_after(t, "f32", "[3, 1]", OP1("op: expand, in: [x], shape: [2, 3, 5]")),
	                    "f32[2, 3, 5]");
	assert_contains(error_of(t, "[3, 2]", OP1("op: expand, in: [x], shape: [3, 5]")),
	                "cannot expand dim 1 of 'x' [3, 2] from 2 to 5: only size-1 dims grow");
	assert_contains(error_of(t, "[3]", OP1("op: expand, in: [x], shape: [-1, 3]")), "a new leading dim");
	assert_string_equal(shape_after(t, "bf16", "[2, 3]", OP1("op: pad, in: [x], pad: [1, 1]")), "bf16[2, 5]");
	assert_string_equal(shape_after(t, "f32", "[2, 3]", OP1("op: pad, in: [x], pad: [1, 1, 2, 0], value: -1")),
	                    "f32[4, 5]");
	assert_string_equal(shape_after(t, "f32", "[M, 3]", OP1("op: pad, in: [x], pad: [1, 2, 0, 0]")), "f32[M, 6]");
	assert_contains(error_of(t, "[3]", OP1("op: pad, in: [x], pad: [1, 1, 1, 1]")), "has rank 1: expected at most 2");
	assert_contains(error_of(t, "[M]", OP1("op: pad, in: [x], pad: [1, 1]")), "the runtime size M");
}

/* The reference of SPEC (inputs IN, outputs OUT) after expand and infer. */
static void
reference(Fixture *t, const char *spec, const double *const *in, double *const *out)
{
	if (infer_spec(t, spec))
		fail_msg("%s", t->msg);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
}

static void
assert_values(const double *got, const double *want, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("element %d: got %g, want %g", i, got[i], want[i]);
}

/* permute of 2x3x4 by [2, 0, 1], transpose, and a reshape of the permute */
static void
reference_permute(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: p\ninputs:\n  x: {dtype: f32, shape: [2, 3, 4]}\nops:\n"
		"  - {out: p, op: permute, in: [x], dims: [2, 0, 1]}\n"
		"  - {out: r, op: reshape, in: [p], shape: [4, 6]}\n"
		"  - {out: s, op: transpose, in: [x], dim0: 0, dim1: -1}\n"
		"outputs:\n  p: {}\n  r: {}\n  s: {}\n";
	double x[24], p[24], r[24], s[24], want[24];
	const double *in[] = {x};
	double *out[] = {p, r, s};
	int i, j, k;

	for (i = 0; i < 24; i++)
		x[i] = i;
	reference(t, spec, in, out);
	/* p[k][i][j] = x[i][j][k] */
	for (k = 0; k < 4; k++)
		for (i = 0; i < 2; i++)
			for (j = 0; j < 3; j++)
				want[k * 6 + i * 3 + j] = x[i * 12 + j * 4 + k];
	assert_values(p, want, 24);
	assert_values(r, want, 24);   /* a reshape keeps the permute's row-major order */
	assert_int_equal(p[1], 4);    /* p[0][0][1] = x[0][1][0] */
	assert_int_equal(p[6], 1);    /* p[1][0][0] = x[0][0][1] */
	/* s[k][j][i] = x[i][j][k] */
	for (k = 0; k < 4; k++)
		for (j = 0; j < 3; j++)
			for (i = 0; i < 2; i++)
				want[k * 6 + j * 2 + i] = x[i * 12 + j * 4 + k];
	assert_values(s, want, 24);
}

/* a slice with step 2 and negative bounds, cat along dim 0 and -1, chunk of 10 into 3, split */
static void
reference_slice_cat_chunk(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\ninputs:\n  x: {dtype: f32, shape: [2, 5]}\n  v: {dtype: f32, shape: [10]}\n"
		"  b: {dtype: int32, shape: [1, 5]}\nops:\n"
		"  - {out: s, op: slice, in: [x], dim: -1, start: -4, step: 2}\n"
		"  - {out: c0, op: cat, in: [x, b], dim: 0}\n"
		"  - {out: c1, op: cat, in: [s, x, s], dim: -1}\n"
		"  - {out: [p, q, r], op: chunk, in: [v], chunks: 3}\n"
		"  - {out: [u, w], op: split, in: [v], sizes: [7, 3]}\n"
		"outputs:\n  s: {}\n  c0: {}\n  c1: {}\n  p: {}\n  q: {}\n  r: {}\n  w: {}\n";
	double x[10] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14}, v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	double b[5] = {-1, -2, -3, -4, -5}, s[4], c0[15], c1[18], p[4], q[4], r[2], w[3];
	const double *in[] = {x, v, b};
	double *out[] = {s, c0, c1, p, q, r, w};
	static const double ws[] = {1, 3, 11, 13};
	static const double wc0[] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14, -1, -2, -3, -4, -5};
	static const double wc1[] = {1, 3, 0, 1, 2, 3, 4, 1, 3, 11, 13, 10, 11, 12, 13, 14, 11, 13};
	static const double wp[] = {0, 1, 2, 3}, wq[] = {4, 5, 6, 7}, wr[] = {8, 9}, ww[] = {7, 8, 9};

	reference(t, spec, in, out);
	assert_values(s, ws, 4);
	assert_values(c0, wc0, 15);
	assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[2].out].dtype, DT_F32);
	assert_values(c1, wc1, 18);
	assert_values(p, wp, 4);
	assert_values(q, wq, 4);
	assert_values(r, wr, 2);
	assert_values(w, ww, 3);
}

/* pad of 1 on each side of the last dim (value 0) and of 1 before dim 0 (value -1); expand */
static void
reference_pad_expand(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: pd\ninputs:\n  x: {dtype: f32, shape: [2, 3]}\n  c: {dtype: int8, shape: [2, 1]}\nops:\n"
		"  - {out: a, op: pad, in: [x], pad: [1, 1]}\n"
		"  - {out: b, op: pad, in: [x], pad: [0, 0, 1, 0], value: -1.5}\n"
		"  - {out: e, op: expand, in: [c], shape: [2, 2, 3]}\n"
		"outputs:\n  a: {}\n  b: {}\n  e: {}\n";
	double x[6] = {1, 2, 3, 4, 5, 6}, c[2] = {7, -8}, a[10], bb[9], e[12];
	const double *in[] = {x, c};
	double *out[] = {a, bb, e};
	static const double wa[] = {0, 1, 2, 3, 0, 0, 4, 5, 6, 0};
	static const double wb[] = {-1.5, -1.5, -1.5, 1, 2, 3, 4, 5, 6};
	static const double we[] = {7, 7, 7, -8, -8, -8, 7, 7, 7, -8, -8, -8};

	reference(t, spec, in, out);
	assert_values(a, wa, 10);
	assert_values(bb, wb, 9);
	assert_values(e, we, 12);
}

#define ROPE_HALF \
	"fusion: rope_half\n" \
	"sizes: {T: 8192}\n" \
	"inputs:\n" \
	"  x: {dtype: bf16, shape: [T, 32, 128]}\n" \
	"  cos: {dtype: bf16, shape: [T, 1, 128]}\n" \
	"  sin: {dtype: bf16, shape: [T, 1, 128]}\n" \
	"ops:\n" \
	"  - {out: x1, op: slice, in: [x], dim: -1, end: 64}\n" \
	"  - {out: x2, op: slice, in: [x], dim: -1, start: 64}\n" \
	"  - {out: nx2, op: neg, in: [x2]}\n" \
	"  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n" \
	"  - {out: xc, op: mul, in: [x, cos]}\n" \
	"  - {out: rs, op: mul, in: [rot, sin]}\n" \
	"  - {out: y, op: add, in: [xc, rs]}\n" \
	"outputs:\n" \
	"  y: {dtype: bf16}\n"

/* RoPE's rotate-half (x[..., :64], x[..., 64:], cat([-x2, x1], -1)) and a QKV chunk, as the fusion IR prints them */
static void
fusion_ir_text(void **state)
{
	Fixture *t = *state;
	static const char qkv[] =
		"fusion: qkv\nsizes: {T: 4096}\ninputs:\n  h: {dtype: bf16, shape: [T, 3072]}\nops:\n"
		"  - {out: [q, k, v], op: chunk, in: [h], chunks: 3, dim: -1}\n"
		"  - {out: qs, op: mul, in: [q, 0.125]}\n"
		"outputs:\n  qs: {}\n  k: {}\n  v: {}\n";
	Buf b;

	assert_int_equal(infer_spec(t, ROPE_HALF), 0);
	buf_init(&b, t->c.arena);
	fusion_print(&b, t->c.fusion);
	assert_string_equal(buf_str(&b),
		"fusion rope_half                                ; 1:9\n"
		"  size T = 8192                                 ; 2:9\n"
		"  input x: bf16[T, 32, 128]                     ; 4:3\n"
		"  input cos: bf16[T, 1, 128]                    ; 5:3\n"
		"  input sin: bf16[T, 1, 128]                    ; 6:3\n"
		"  x1: bf16[T, 32, 64] = slice(x) dim=2 start=0 end=64 step=1 ; 8:5\n"
		"  x2: bf16[T, 32, 64] = slice(x) dim=2 start=64 end=none step=1 ; 9:5\n"
		"  nx2: bf16[T, 32, 64] = neg(x2)                ; 10:5\n"
		"  rot: bf16[T, 32, 128] = cat(nx2, x1) dim=2    ; 11:5\n"
		"  xc: bf16[T, 32, 128] = mul(x, cos)            ; 12:5\n"
		"  rs: bf16[T, 32, 128] = mul(rot, sin)          ; 13:5\n"
		"  y: bf16[T, 32, 128] = add(xc, rs)             ; 14:5\n"
		"  output y: bf16                                ; 16:3\n");
	assert_int_equal(infer_spec(t, qkv), 0);
	buf_init(&b, t->c.arena);
	fusion_print(&b, t->c.fusion);
	assert_string_equal(buf_str(&b),
		"fusion qkv                                      ; 1:9\n"
		"  size T = 4096                                 ; 2:9\n"
		"  input h: bf16[T, 3072]                        ; 4:3\n"
		"  q: bf16[T, 1024] = slice(h) dim=1 chunk=0/3   ; 6:5\n"
		"  k: bf16[T, 1024] = slice(h) dim=1 chunk=1/3   ; 6:5\n"
		"  v: bf16[T, 1024] = slice(h) dim=1 chunk=2/3   ; 6:5\n"
		"  qs: bf16[T, 1024] = mul(q, 0.125)             ; 7:5\n"
		"  output qs: bf16                               ; 9:3\n"
		"  output k: bf16                                ; 10:3\n"
		"  output v: bf16                                ; 11:3\n");
	buf_init(&b, t->c.arena);
	fusion_dot(&b, t->c.fusion);
	assert_contains(buf_str(&b), "dim=1 chunk=2/3");
}

/* The schedule pass refuses every view (WSF_ERR_UNSUPPORTED, exit status 6), at the op. */
static void
schedule_refuses_views(void **state)
{
	Fixture *t = *state;

	/* RoPE's rotate-half: a placed cat after the views pass; a view of a cat is not addresses yet */
	assert_int_equal(infer_spec(t, ROPE_HALF), 0);
	assert_int_equal(pass_views(&t->c), 0);
	assert_int_equal(pass_schedule(&t->c), 0);
	assert_int_equal(infer_spec(t, spec_of(t, "f32", "[M, 4]", "  - {out: c, op: cat, in: [x, z], dim: -1}\n"
	                 OP1("op: slice, in: [c], dim: -1, end: 2"))), 0);
	assert_int_equal(pass_views(&t->c), 0);
	assert_int_equal(pass_schedule(&t->c), -1);
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	assert_contains(t->msg, "test.yaml:8:5: error: 'slice' (a view) in this kernel is not implemented yet: a view "
	                "of a cat");
	/* rand_like's numbers hang on the element's index: a view of them stays over them (the views pass) */
	assert_int_equal(infer_spec(t, "fusion: v\ninputs:\n  x: {dtype: f32, shape: [6, 8]}\n"
	                 "  seed: {dtype: int64, shape: []}\n  off: {dtype: int64, shape: []}\nops:\n"
	                 "  - {out: a, op: rand_like, in: [x, seed, off]}\n"
	                 OP1("op: slice, in: [a], dim: 0, end: 2") "outputs:\n  y: {}\n"), 0);
	assert_int_equal(pass_views(&t->c), 0);
	assert_int_equal(pass_schedule(&t->c), -1);
	assert_contains(t->msg, "test.yaml:8:5: error: 'slice' (a view) in this kernel is not implemented yet: it "
	                "views 'a', a computed value");
	assert_int_equal(infer_spec(t, spec_of(t, "f32", "[6, 4]", "  - {out: a, op: pad, in: [x], pad: [1, 3]}\n"
	                 OP1("op: pad, in: [a], pad: [1, 1], value: 1.0"))), 0);
	assert_int_equal(pass_views(&t->c), 0);
	assert_int_equal(pass_schedule(&t->c), -1);
	assert_contains(t->msg, "'pad' (a view) in this kernel is not implemented yet: a pad of a pad with another fill");
	assert_int_equal(infer_spec(t, spec_of(t, "f32", "[6, 8]", "  - {out: a, op: slice, in: [x], dim: -1, start: 1, end: 5}\n"
	                 OP1("op: sum, in: [a], dim: -1"))), 0);
	assert_int_equal(pass_schedule(&t->c), -1);
	assert_contains(t->msg, "'slice' (a view) in this kernel is not implemented yet: a row-reduction kernel reads a "
	                "view as rows of 16-byte loads at an offset or one element a row");
	/* views of inputs in a pointwise kernel are addresses */
	assert_int_equal(infer_spec(t, spec_of(t, "f32", "[6, 4]",
	                 "  - {out: [a, y], op: split, in: [x], sizes: [2, 4]}\n")), 0);
	assert_int_equal(pass_schedule(&t->c), 0);
}

static const char *line_of(Fixture *t, const char *start);

/* Param NAME of c->kernel, an input's (OUTPUT: an output's), and its line of the kernel IR's print in *LINE. */
static const KParam *
param_named(Fixture *t, const char *name, bool output, const char **line)
{
	const Kernel *k = t->c.kernel;
	char want[64];
	int i;

	snprintf(want, sizeof want, "param %s: %s", name, output ? "output" : "input");
	*line = line_of(t, want);
	for (i = 1; i < k->nparam; i++)
		if (strcmp(k->param[i].name, name) == 0 && k->param[i].arg >= 0 &&
		    (k->param[i].arg >= t->c.fusion->ninput) == output)
			return &k->param[i];
	fail_msg("no %s param %s", output ? "output" : "input", name);
	return NULL;
}

/* Kernel IR of SPEC's pointwise kernel; input param NAME and its line of the print (kprint) in *LINE. */
static const KParam *
lowered_param(Fixture *t, const char *spec, const char *name, const char **line)
{
	if (run_spec(t, spec, true))
		fail_msg("%s", t->msg);
	return param_named(t, name, false, line);
}

#define VSPEC(inputs, ops, out) "fusion: v\nsizes: {T: 64, S: 40}\ninputs:\n" inputs "ops:\n" ops \
	"outputs:\n  " out ": {}\n"

/*
 * A view of an input is its input's pointer at an offset the domain row
 * picks: chunk parts start 512 apart in a row of 1024; a transpose that
 * keeps the innermost dim reads rows whose offset has one digit a dim, S a
 * runtime size inside the strides; a step slice across the columns goes
 * element by element, a transpose of the last two dims through shared memory
 * (transpose_exchanges_tiles); an expand along the
 * columns is one element a row; a reshape of contiguous dims is the input's
 * own layout.
 */
static void
views_lower_to_addresses(void **state)
{
	Fixture *t = *state;
	const KParam *p;
	const char *line;

	p = lowered_param(t, VSPEC("  h: {dtype: bf16, shape: [T, 1024]}\n",
	                           "  - {out: [g, u], op: chunk, in: [h], chunks: 2, dim: -1}\n"
	                           "  - {out: y, op: mul, in: [g, u]}\n", "y"), "u", &line);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_int_equal(p->arg, 0);   /* h's memory */
	assert_string_equal(line, "param u: input ptr bf16 [T, 1024] row_at at=(512 + (row * 1024))");
	/* rows a runtime size apart: 16-byte rows still, the launch holding the input's rows to 16 bytes */
	p = lowered_param(t, VSPEC("  h: {dtype: bf16, shape: [64, S]}\n",
	                           "  - {out: u, op: slice, in: [h], dim: 0, start: 8, step: 2}\n"
	                           "  - {out: y, op: neg, in: [u]}\n", "y"), "u", &line);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_string_equal(line, "param u: input ptr bf16 [64, S] row_at at=((8 * cols) + (row * (2 * cols)))");
	p = lowered_param(t, VSPEC("  q: {dtype: bf16, shape: [2, 8, S, 64]}\n",
	                           "  - {out: y, op: transpose, in: [q], dim0: 1, dim1: 2}\n", "y"), "y", &line);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_string_equal(line, "param y: input ptr bf16 [2, 8, S, 64] row_at at=((((row / (dim_S * 8)) * "
	                    "(512 * dim_S)) + (((row / 8) % dim_S) * 64)) + ((row % 8) * (64 * dim_S)))");
	p = lowered_param(t, VSPEC("  x: {dtype: f32, shape: [T, 64]}\n",
	                           "  - {out: a, op: slice, in: [x], dim: -1, start: 1, step: 2}\n"
	                           "  - {out: y, op: neg, in: [a]}\n", "y"), "a", &line);
	assert_int_equal(p->view, VIEW_ELEM_AT);
	assert_true(ex_is_int(p->step, 2));
	assert_string_equal(line, "param a: input ptr f32 [T, 64] elem_at at=(1 + (row * 64)) step=2");
	p = lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [S, 48]}\n",
	                           "  - {out: a, op: transpose, in: [x], dim0: 0, dim1: 1}\n"
	                           "  - {out: y, op: neg, in: [a]}\n", "y"), "a", &line);
	assert_int_equal(p->view, VIEW_EXCHANGE);
	assert_string_equal(line, "param a: input ptr bf16 [S, 48] exchange_at at=row step=48");
	p = lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [T, 8, 16]}\n  s: {dtype: bf16, shape: [8, 1]}\n",
	                           "  - {out: e, op: expand, in: [s], shape: [8, 16]}\n"
	                           "  - {out: y, op: mul, in: [x, e]}\n", "y"), "e", &line);
	assert_int_equal(p->view, VIEW_COL_AT);
	assert_string_equal(line, "param e: input ptr bf16 [8, 1] col_at at=(row % 8)");
	p = lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [T, 1024]}\n",
	                           "  - {out: r, op: reshape, in: [x], shape: [T, 8, 128]}\n"
	                           "  - {out: y, op: neg, in: [r]}\n", "y"), "r", &line);
	assert_string_equal(line, "param r: input ptr bf16 [T, 1024] row_at at=(row * 128)");
	/* a row-reduction kernel: qk-norm reads q, heads 0..15 of a fused qkv, at the row's offset, unstaged */
	p = lowered_param(t, VSPEC("  qkv: {dtype: bf16, shape: [T, 3072]}\n  w: {dtype: bf16, shape: [128]}\n",
	                           "  - {out: r, op: reshape, in: [qkv], shape: [T, 24, 128]}\n"
	                           "  - {out: q, op: slice, in: [r], dim: 1, end: 16}\n"
	                           "  - {out: y, op: rmsnorm, in: [q, w], eps: 1.0e-6}\n", "y"), "q", &line);
	assert_int_equal(p->view, VIEW_FULL);
	assert_string_equal(line, "param q: input ptr bf16 [T, 3072] full at=(((row / 16) * 3072) + ((row % 16) * 128))");
	assert_int_equal(t->c.kernel->nbuf, 1);   /* (no stage: [0] unused) */
	/* RoPE's rotate-half: x staged whole in tiles of whole rows, each half's boxed view read from that stage,
	   its columns shifted, not through x's pointer again; with rows wider than a tile, through the pointer */
	p = lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [T, 8, 128]}\n",
	                           "  - {out: x1, op: slice, in: [x], dim: -1, end: 64}\n"
	                           "  - {out: x2, op: slice, in: [x], dim: -1, start: 64}\n"
	                           "  - {out: nx2, op: neg, in: [x2]}\n  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n"
	                           "  - {out: y, op: add, in: [x, rot]}\n", "y"), "rot.x2", &line);
	assert_string_equal(line, "param rot.x2: input ptr bf16 [T, 8, 128] row_at at=(64 + (row * 128)) "
	                    "from=x's stage shift=64 box2=[0, 64)");
	assert_int_equal(t->c.kernel->param[p->bounds->stage].view, VIEW_FULL);
	p = lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [T, 8, 512]}\n",
	                           "  - {out: x1, op: slice, in: [x], dim: -1, end: 256}\n"
	                           "  - {out: x2, op: slice, in: [x], dim: -1, start: 256}\n"
	                           "  - {out: nx2, op: neg, in: [x2]}\n  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n"
	                           "  - {out: y, op: add, in: [x, rot]}\n", "y"), "rot.x2", &line);
	assert_int_equal(p->bounds->stage, 0);   /* a 256-column tile of 512-wide rows: the other half is not staged */
}

/* The statements of S, depth first, as kinds. */
static void
kinds_of(const Stmt *s, StmtKind *out, int *n, int cap)
{
	int i;

	if (!s)
		return;
	if (*n < cap)
		out[(*n)++] = s->kind;
	for (i = 0; i < s->nbody; i++)
		kinds_of(s->body[i], out, n, cap);
	kinds_of(st_else(s), out, n, cap);
}

/* The line of the kernel IR c->kernel prints that starts (indent aside) with START; fails without one. */
static const char *
line_of(Fixture *t, const char *start)
{
	Buf b;
	const char *text, *at;
	char want[64];
	size_t n;

	buf_init(&b, t->c.arena);
	kernel_print(&b, t->c.kernel);
	text = buf_str(&b);
	snprintf(want, sizeof want, " %s", start);
	if (!(at = strstr(text, want)))
		fail_msg("no line \"%s\" in:\n%s", start, text);
	n = strcspn(at + 1, "\n;");
	while (n > 0 && at[n] == ' ')   /* (the padding before a comment) */
		n--;
	return arena_strndup(t->c.arena, at + 1, n);
}

/* The first statement of KIND in S, depth first, whose comment holds WHY (NULL: any); or NULL. */
static const Stmt *
first_of(const Stmt *s, StmtKind kind, const char *why)
{
	const Stmt *r = NULL;
	int i;

	if (!s || (s->kind == kind && (!why || (s->comment && strstr(s->comment, why)))))
		return s;
	for (i = 0; i < s->nbody && !r; i++)
		r = first_of(s->body[i], kind, why);
	return r ? r : first_of(st_else(s), kind, why);
}

/* The index of the first KIND in OUT[FROM..N), or -1. */
static int
kind_at(const StmtKind *out, int from, int n, StmtKind kind)
{
	int i;

	for (i = from; i < n && out[i] != kind; i++)
		;
	return i < n ? i : -1;
}

/*
 * A transpose of the innermost dim (x.t(), a permute that moves it) goes
 * through shared memory, never strided loads across a warp: the view's param
 * is VIEW_EXCHANGE over one BUF_EXCHANGE buffer of [tile cols][tile rows + a
 * word], 64 x 64 tiles; the tile loop runs exchange, then a barrier, then
 * the compute that reads the buffer (a persistent kernel's loop is peeled
 * into a main and a last iteration, each so).  A persistent kernel alternates two
 * copies by tile (the barrier also orders a copy's reads before its next
 * write); a warp-specialized one names the consumers' barrier, not
 * __syncthreads.  The column step is the runtime size N, not 1 (a transpose
 * of [M, N] read x[row + col] before).
 */
static void
transpose_exchanges_tiles(void **state)
{
	static const char *const sched[] = {"", "schedule: {persistent: true}\n", "schedule: {warp_specialize: true}\n"};
	Fixture *t = *state;
	char spec[512];
	int i, b, n, xb = 0;
	const char *line;

	for (i = 0; i < 3; i++) {
		const Kernel *k;
		const KParam *p;
		StmtKind kinds[64];
		int ex, sync, comp;

		snprintf(spec, sizeof spec, "fusion: tr\nsizes: {M: 200, N: 136}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n"
		         "  b: {dtype: f32, shape: [N, M]}\nops:\n  - {out: xt, op: transpose, in: [x], dim0: 0, dim1: 1}\n"
		         "  - {out: y, op: add, in: [xt, b]}\noutputs:\n  y: {}\n%s", sched[i]);
		p = lowered_param(t, spec, "xt", &line);
		k = t->c.kernel;
		assert_int_equal(p->view, VIEW_EXCHANGE);
		assert_string_equal(line, "param xt: input ptr f32 [M, N] exchange_at at=row step=dim_N");
		assert_int_equal(k->tile_rows, 64);
		assert_int_equal(k->tile_cols, 64);
		for (b = 1, n = 0; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_EXCHANGE) {
				n++;
				assert_int_equal(k->buf[b].rows, 64);
				assert_int_equal(k->buf[b].cols, 65);   /* f32: a word past the tile's rows */
				assert_int_equal(k->buf[b].stages, i == 0 ? 1 : 2);
				assert_int_equal(k->param[k->buf[b].param].view, VIEW_EXCHANGE);
				xb = b;
			}
		assert_int_equal(n, 1);
		n = 0;
		kinds_of(k->body, kinds, &n, 64);
		ex = kind_at(kinds, 0, n, ST_EXCHANGE);   /* exchange, then a barrier, then the compute */
		sync = ex < 0 ? -1 : kind_at(kinds, ex, n, ST_SYNC);
		comp = sync < 0 ? -1 : kind_at(kinds, sync, n, ST_COMPUTE);
		assert_true(ex >= 0 && sync > ex && comp > sync);
		assert_int_equal(first_of(k->body, ST_EXCHANGE, NULL)->u.tma.buf, xb);
		assert_true(st_reads_buf(first_of(k->body, ST_COMPUTE, NULL), xb));
		/* __syncthreads (id 0), or in a warp-specialized kernel the consumers' named barrier */
		assert_true((first_of(k->body, ST_SYNC, "exchanged tile")->u.sync.id != 0) == (i == 2));
	}
	{   /* the IR verifier: an exchange into a buffer that is not the view's exchange buffer is a pass's bug */
		Stmt *x = (Stmt *)first_of(t->c.kernel->body, ST_EXCHANGE, NULL);
		int keep = x->u.tma.buf;

		assert_int_equal(kernel_verify(&t->c, t->c.kernel, "test"), 0);
		x->u.tma.buf = 0;
		assert_int_not_equal(kernel_verify(&t->c, t->c.kernel, "test"), 0);
		assert_contains(t->msg, "an exchange without its exchange buffer");
		x->u.tma.buf = keep;
	}
	/* 16 bytes of rows a load where the rows' dim holds whole groups: N % 4 (f32) at runtime, 100 % 4 now;
	   100 bf16 rows are not whole groups of 8: element by element */
	assert_non_null(first_of(t->c.kernel->body, ST_EXCHANGE, NULL)->u.tma.cond);
	assert_string_equal(line_of(t, "exchange "), "exchange exchange_xt[(i % 2)] <- xt[row0, col0] by 16 bytes if "
	                    "((dim_N % 4) == 0)");
	lowered_param(t, VSPEC("  x: {dtype: f32, shape: [T, 100]}\n",
	                       "  - {out: a, op: transpose, in: [x], dim0: 0, dim1: 1}\n  - {out: y, op: neg, in: [a]}\n",
	                       "y"), "a", &line);
	assert_true(ex_is_int(first_of(t->c.kernel->body, ST_EXCHANGE, NULL)->u.tma.cond, 1));
	lowered_param(t, VSPEC("  x: {dtype: bf16, shape: [T, 100]}\n",
	                       "  - {out: a, op: transpose, in: [x], dim0: 0, dim1: 1}\n  - {out: y, op: neg, in: [a]}\n",
	                       "y"), "a", &line);
	assert_null(first_of(t->c.kernel->body, ST_EXCHANGE, NULL)->u.tma.cond);
	/* warp-specialized with nothing to load (x through its view alone): refused at the hint, not a pass's bug */
	assert_int_equal(run_spec(t, "fusion: tr\ninputs:\n  x: {dtype: f32, shape: [64, 136]}\nops:\n"
	                          "  - {out: xt, op: transpose, in: [x], dim0: 0, dim1: 1}\noutputs:\n  xt: {}\n"
	                          "schedule: {warp_specialize: true}\n", true), -1);
	assert_contains(t->msg, "test.yaml:8:29: error: 'warp_specialize: true' gives a producer warp the TMA loads, "
	                "but 'tr' has none");
}

/*
 * Outputs of different shapes that are the parts of one value along a dim
 * (a split, QKV's) are one kernel over that value: split of an input ->
 * the domain is the input, read whole by TMA, each output stored by
 * pointer over its range (a box on the dim, its own offsets, lo shifted
 * out); split of a computed value -> computed once, the sunk per-part
 * copies dropped; along a leading dim -> a box on the row's digit;
 * outputs that are no one value's slices -> a placed cat of them (named
 * "outputs"); shapes that do not line up along one dim stay an error.
 */
static void
split_outputs_store_ranges(void **state)
{
	Fixture *t = *state;
	const Fusion *f;
	const KParam *p;
	const char *line;
	int i;

	assert_int_equal(run_spec(t, VSPEC("  x: {dtype: bf16, shape: [T, 3584]}\n",
	                                   "  - {out: [a, b, c], op: split, in: [x], sizes: [1024, 2048, 512], dim: -1}\n",
	                                   "a: {}\n  b: {}\n  c") , true), 0);
	f = t->c.fusion;
	assert_int_equal(f->split_out, f->input[0]);
	assert_int_equal(t->c.kernel->domain, f->input[0]);
	p = param_named(t, "b", true, &line);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_string_equal(line, "param b: output ptr bf16 [T, 2048] row_at at=(-1024 + (row * 2048)) box1=[1024, 3072)");
	param_named(t, "c", true, &line);
	assert_string_equal(line, "param c: output ptr bf16 [T, 512] row_at at=(-3072 + (row * 512)) box1=[3072, 3584)");
	for (i = 1; i < t->c.kernel->nparam; i++)   /* x whole through its tensor map, no view of it */
		assert_true(t->c.kernel->param[i].arg != 0 || t->c.kernel->param[i].kind == PK_TMAP);

	assert_int_equal(run_spec(t, VSPEC("  x: {dtype: bf16, shape: [T, 1536]}\n",
	                                   "  - {out: s, op: silu, in: [x]}\n"
	                                   "  - {out: [a, b], op: split, in: [s], sizes: [1024, 512], dim: -1}\n",
	                                   "a: {}\n  b"), true), 0);
	f = t->c.fusion;
	assert_string_equal(f->tensor[f->split_out].name, "s");
	assert_int_equal(f->nop, 2);   /* silu alone: the parts' own copies dropped */
	assert_int_equal(f->op[1].kind, OP_SILU);

	assert_int_equal(run_spec(t, VSPEC("  qkv: {dtype: bf16, shape: [T, 3, 64]}\n",
	                                   "  - {out: [q, kv], op: split, in: [qkv], sizes: [1, 2], dim: 1}\n",
	                                   "q: {}\n  kv"), true), 0);
	param_named(t, "kv", true, &line);
	assert_string_equal(line, "param kv: output ptr bf16 [T, 2, 64] row_at at=((-64 + ((row / 3) * 128)) + "
	                    "((row % 3) * 64)) box1=[1, 3)");
	assert_non_null(t->c.kernel->pw.digit[1]);

	assert_int_equal(run_spec(t, VSPEC("  x: {dtype: bf16, shape: [T, 64]}\n  y: {dtype: f32, shape: [T, 40]}\n",
	                                   "  - {out: a, op: silu, in: [x]}\n  - {out: b, op: mul, in: [y, 3.0]}\n",
	                                   "a: {}\n  b"), true), 0);
	f = t->c.fusion;
	assert_string_equal(f->tensor[f->split_out].name, "outputs");
	assert_int_equal(f->op[f->tensor[f->split_out].def].kind, OP_CAT);
	assert_true(f->op[f->tensor[f->split_out].def].placed);
	param_named(t, "b", true, &line);
	assert_string_equal(line, "param b: output ptr f32 [T, 40] row_at at=(-64 + (row * 40)) box1=[64, 104)");

	assert_int_equal(run_spec(t, VSPEC("  x: {dtype: bf16, shape: [T, 64]}\n  y: {dtype: f32, shape: [8, 40]}\n",
	                                   "  - {out: a, op: silu, in: [x]}\n  - {out: b, op: mul, in: [y, 3.0]}\n",
	                                   "a: {}\n  b"), true), -1);
	assert_contains(t->msg, "cannot place output 'b' in one pointwise kernel: its shape differs from output 'a'");
}

/*
 * The views pass moves views of computed values down to the inputs: no view
 * is left over a computed value; the ops the user wrote stay in ref_op; and
 * the rewritten ops, evaluated by the host reference, give the written ops'
 * values exactly on random data (a transpose of a slice of a product with a
 * broadcast weight, a reshape of a where, a chunk of a cast, an expand of a
 * column).
 */
static void
views_move_to_inputs(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\nsizes: {T: 6}\ninputs:\n"
		"  x: {dtype: f32, shape: [T, 4, 8]}\n  w: {dtype: f32, shape: [8]}\n  c: {dtype: f32, shape: [T, 4, 1]}\n"
		"ops:\n"
		"  - {out: xw, op: mul, in: [x, w]}\n"
		"  - {out: s, op: add, in: [xw, 1.5]}\n"
		"  - {out: h, op: slice, in: [s], dim: -1, start: 2, step: 3}\n"          /* [T, 4, 2] */
		"  - {out: ht, op: transpose, in: [h], dim0: 0, dim1: 1}\n"               /* [4, T, 2] */
		"  - {out: g, op: gt, in: [x, 0.0]}\n"
		"  - {out: wh, op: where, in: [g, x, c]}\n"
		"  - {out: r, op: reshape, in: [wh], shape: [T, 32]}\n"
		"  - {out: b, op: cast, in: [r], to: bf16}\n"
		"  - {out: [b1, b2], op: chunk, in: [b], chunks: 2, dim: -1}\n"
		"  - {out: ce, op: expand, in: [c], shape: [T, 4, 3]}\n"
		"  - {out: cn, op: neg, in: [ce]}\n"
		"outputs:\n  ht: {}\n  b2: {}\n  cn: {}\n  s: {}\n";
	enum { NX = 6 * 4 * 8 };
	double x[NX], w[8], c[24], got[4][NX], want[4][NX];
	const double *in[] = {x, w, c};
	double *out_got[] = {got[0], got[1], got[2], got[3]}, *out_want[] = {want[0], want[1], want[2], want[3]};
	const int n[] = {48, 96, 72, NX};
	Comp *cp = &t->c;
	Fusion *f;
	int i, j;

	srand(7);
	for (i = 0; i < NX; i++)
		x[i] = rand() / (double)RAND_MAX - 0.5;
	for (i = 0; i < 8; i++)
		w[i] = rand() / (double)RAND_MAX - 0.5;
	for (i = 0; i < 24; i++)
		c[i] = rand() / (double)RAND_MAX - 0.5;
	if (infer_spec(t, spec) || pass_views(cp))
		fail_msg("%s", t->msg);
	f = cp->fusion;
	assert_non_null(f->ref_op);
	assert_int_equal(f->nref_op, 13);   /* ([0] unused) */
	for (i = 1; i < f->nop; i++) {   /* every view's source is an input or another view */
		const Op *o = &f->op[i];
		int src = o->in[0].tensor;

		if (op_info[o->kind].cls == CLS_VIEW && f->tensor[src].def)
			assert_int_equal(op_info[f->op[f->tensor[src].def].kind].cls, CLS_VIEW);
	}
	assert_int_equal(rt_reference(cp, f, in, out_want), WSF_OK);   /* the ops as written (ref_op) */
	f->ref_op = NULL;
	assert_int_equal(rt_reference(cp, f, in, out_got), WSF_OK);    /* the rewritten ops */
	for (i = 0; i < 4; i++)
		for (j = 0; j < n[i]; j++)
			if (got[i][j] != want[i][j])
				fail_msg("output %d element %d: the rewrite gives %g, the spec %g", i, j, got[i][j], want[i][j]);
	assert_true(want[0][1] != 0);
	/* an operand read twice is viewed once: a chain of 30 x + x under a view stays 30 ops, not 2^30 */
	{
		char deep[4096];
		int k, len = snprintf(deep, sizeof deep, "fusion: d\ninputs:\n  x: {dtype: f32, shape: [4, 16]}\nops:\n"
		                      "  - {out: a0, op: neg, in: [x]}\n");

		for (k = 1; k < 30; k++)
			len += snprintf(deep + len, sizeof deep - (size_t)len, "  - {out: a%d, op: add, in: [a%d, a%d]}\n", k,
			                k - 1, k - 1);
		snprintf(deep + len, sizeof deep - (size_t)len, "  - {out: y, op: slice, in: [a29], dim: 1, end: 8}\n"
		         "outputs:\n  y: {}\n");
		if (infer_spec(t, deep) || pass_views(cp))
			fail_msg("%s", t->msg);
		assert_int_equal(cp->fusion->nop, 1 + 1 + 30);   /* ([0]) the slice of x, neg, 29 adds */
	}
}

/*
 * A cat becomes each part padded to the cat's shape and a placed cat that
 * picks by index; a pad of a computed value, its operands padded and a
 * placed pad; a pad of an input stays a view with a box.  The rewrite's
 * reference (placed ops evaluated as picks) equals the written ops' exactly:
 * RoPE's rotate-half (cat of a negated half and a half), a cat along a
 * leading dim of a computed value and an input, a pad on two dims of a
 * product with a broadcast operand, and a pad of an input with a fill.
 */
static void
views_cat_pad_placed(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\ninputs:\n"
		"  x: {dtype: f32, shape: [3, 4, 16]}\n  w: {dtype: f32, shape: [16]}\n  z: {dtype: f32, shape: [2, 4, 16]}\n"
		"ops:\n"
		"  - {out: x1, op: slice, in: [x], dim: -1, end: 8}\n"
		"  - {out: x2, op: slice, in: [x], dim: -1, start: 8}\n"
		"  - {out: nx2, op: neg, in: [x2]}\n"
		"  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n"                      /* [3, 4, 16] */
		"  - {out: xw, op: mul, in: [x, w]}\n"
		"  - {out: c0, op: cat, in: [xw, z], dim: 0}\n"                          /* [5, 4, 16] */
		"  - {out: p, op: pad, in: [xw], pad: [1, 2, 0, 3], value: -1.5}\n"      /* [3, 7, 19] */
		"  - {out: q, op: pad, in: [z], pad: [3, 0], value: 2.0}\n"             /* [2, 4, 19] */
		"outputs:\n  rot: {}\n  c0: {}\n  p: {}\n  q: {}\n";
	double x[192], w[16], z[128], got[4][512], want[4][512];
	const double *in[] = {x, w, z};
	double *out_got[] = {got[0], got[1], got[2], got[3]}, *out_want[] = {want[0], want[1], want[2], want[3]};
	const int n[] = {192, 320, 399, 152};
	Comp *cp = &t->c;
	Fusion *f;
	int i, j, placed = 0;

	srand(11);
	for (i = 0; i < 192; i++)
		x[i] = rand() / (double)RAND_MAX - 0.5;
	for (i = 0; i < 16; i++)
		w[i] = rand() / (double)RAND_MAX - 0.5;
	for (i = 0; i < 128; i++)
		z[i] = rand() / (double)RAND_MAX - 0.5;
	if (infer_spec(t, spec) || pass_views(cp))
		fail_msg("%s", t->msg);
	f = cp->fusion;
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		Strided st;
		const char *why;

		placed += o->placed;
		if (op_info[o->kind].cls == CLS_VIEW && !o->placed && !view_strided(cp, f, o->out, &st, &why))
			fail_msg("view '%s' is not addresses: %s", f->tensor[o->out].name, why);
	}
	assert_int_equal(placed, 3);   /* rot, c0, p; q stays a view with a box */
	assert_int_equal(rt_reference(cp, f, in, out_want), WSF_OK);
	f->ref_op = NULL;
	assert_int_equal(rt_reference(cp, f, in, out_got), WSF_OK);
	for (i = 0; i < 4; i++)
		for (j = 0; j < n[i]; j++)
			if (got[i][j] != want[i][j])
				fail_msg("output %d element %d: the rewrite gives %g, the spec %g", i, j, got[i][j], want[i][j]);
	assert_true(want[0][0] == -x[8] && want[0][8] == x[0]);   /* rot = cat(-x2, x1) */
	assert_true(want[2][0] == -1.5 && want[3][0] == 2.0 && want[3][3] == z[0]);
}

/*
 * RoPE's interleaved pairs: a reshape of cat(-x_odd, x_even) of x viewed as
 * [..., 4, 2] moves below the cat, which then picks by the column's digit
 * (i / 1) % 2; each part is a view of x whose pad box became a box on that
 * digit.  The rewrite computes what the spec does; a kernel that reads x
 * whole takes each part from the thread's registers of x (no load), one
 * that does not reads x element by element inside the digit box; a slice
 * of such a view is refused, saying why.
 */
static void
views_interleaved_pairs(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\n  c: {dtype: f32, shape: [8]}\nops:\n"
		"  - {out: xp, op: reshape, in: [x], shape: [3, 4, 2]}\n"
		"  - {out: xe, op: slice, in: [xp], dim: -1, end: 1}\n"
		"  - {out: xo, op: slice, in: [xp], dim: -1, start: 1}\n"
		"  - {out: nxo, op: neg, in: [xo]}\n"
		"  - {out: r2, op: cat, in: [nxo, xe], dim: -1}\n"
		"  - {out: rot, op: reshape, in: [r2], shape: [3, 8]}\n"
		"  - {out: xc, op: mul, in: [x, c]}\n"
		"  - {out: y, op: add, in: [xc, rot]}\n"
		"outputs:\n  y: {}\n";
	double x[24], c[8], got[24], want[24];
	const double *in[] = {x, c};
	double *out_got[] = {got}, *out_want[] = {want};
	Comp *cp = &t->c;
	const Fusion *f;
	const Op *cat;
	int i;

	for (i = 0; i < 24; i++)
		x[i] = i + 1;
	for (i = 0; i < 8; i++)
		c[i] = 0.5 * i;
	if (infer_spec(t, spec) || pass_views(cp))
		fail_msg("%s", t->msg);
	f = cp->fusion;
	cat = &f->op[f->tensor[fusion_find_tensor(f, intern_cstr(cp->strs, "rot"))].def];
	assert_true(cat->kind == OP_CAT && cat->placed);
	assert_int_equal(cat->axis, 1);
	assert_int_equal(cat->digit[0], 1);
	assert_int_equal(cat->digit[1], 2);
	assert_int_equal(rt_reference(cp, f, in, out_want), WSF_OK);
	((Fusion *)f)->ref_op = NULL;
	assert_int_equal(rt_reference(cp, f, in, out_got), WSF_OK);
	for (i = 0; i < 24; i++)
		if (got[i] != want[i])
			fail_msg("element %d: the rewrite gives %g, the spec %g", i, got[i], want[i]);
	assert_true(want[0] == x[0] * c[0] - x[1] && want[1] == x[1] * c[1] + x[0]);
	/* in a kernel: the parts from x's registers, one element on and one back */
	if (run_spec(t, spec, true))
		fail_msg("%s", t->msg);
	assert_string_equal(line_of(t, "param rot.xo:"), "param rot.xo: input ptr f32 [3, 8] elem_at at=(1 + (row * 8)) "
	                    "step=1 from=x's registers shift=1 box1=[0, 1) of (i / 1) % 2");
	assert_string_equal(line_of(t, "param rot.xe:"), "param rot.xe: input ptr f32 [3, 8] elem_at at=(-1 + (row * 8)) "
	                    "step=1 from=x's registers shift=-1 box1=[1, 2) of (i / 1) % 2");
	assert_true(t->c.kernel->param[1].view == VIEW_FULL);
	/* x not read whole: the parts through x's pointer */
	if (run_spec(t, "fusion: s\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\nops:\n"
	             "  - {out: xp, op: reshape, in: [x], shape: [3, 4, 2]}\n"
	             "  - {out: xe, op: slice, in: [xp], dim: -1, end: 1}\n"
	             "  - {out: xo, op: slice, in: [xp], dim: -1, start: 1}\n"
	             "  - {out: r2, op: cat, in: [xo, xe], dim: -1}\n"
	             "  - {out: y, op: reshape, in: [r2], shape: [3, 8]}\noutputs:\n  y: {}\n", true))
		fail_msg("%s", t->msg);
	assert_string_equal(line_of(t, "param y.xo:"), "param y.xo: input ptr f32 [3, 8] elem_at at=(1 + (row * 8)) "
	                    "step=1 box1=[0, 1) of (i / 1) % 2");
	/* a slice of such a view is not addresses yet */
	assert_int_equal(infer_spec(t, "fusion: s\ninputs:\n  x: {dtype: f32, shape: [3, 8]}\nops:\n"
	                 "  - {out: xp, op: reshape, in: [x], shape: [3, 4, 2]}\n"
	                 "  - {out: xo, op: slice, in: [xp], dim: -1, start: 1}\n"
	                 "  - {out: p, op: pad, in: [xo], pad: [1, 0]}\n"
	                 "  - {out: r, op: reshape, in: [p], shape: [3, 8]}\n"
	                 "  - {out: y, op: slice, in: [r], dim: 1, end: 6}\noutputs:\n  y: {}\n"), 0);
	assert_int_equal(pass_views(cp), 0);
	assert_int_equal(pass_schedule(cp), -1);
	assert_contains(t->msg, "'slice' (a view) in this kernel is not implemented yet: a view of a reshaped pad whose box "
	                "is a digit of a merged dim");
}

/*
 * index_select and gather: the reference reads x at the index's values
 * (an embedding's rows, a gather along the columns), errs at a value out of
 * range naming the index, the element and the value; a pointwise kernel
 * reads an embedding row through the table's pointer at the id's row (one id
 * a row: 16-byte rows) and a gather element by element, each index param
 * memory the view reads (positions), not a value.
 */
static void
index_ops(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\ninputs:\n  tab: {dtype: f32, shape: [5, 3]}\n  ids: {dtype: int64, shape: [4]}\n"
		"  x: {dtype: f32, shape: [2, 6]}\n  pos: {dtype: int32, shape: [2, 3]}\nops:\n"
		"  - {out: e, op: index_select, in: [tab, ids], dim: 0}\n"
		"  - {out: g, op: gather, in: [x, pos], dim: -1}\n"
		"outputs:\n  e: {}\n  g: {}\n";
	double tab[15], ids[] = {4, 0, 4, 2}, x[12], pos[] = {5, 0, 2, 1, 1, 3}, e[12], g[6];
	const double *in[] = {tab, ids, x, pos};
	double *out[] = {e, g};
	const KParam *p;
	const char *line;
	int i, j;

	for (i = 0; i < 15; i++)
		tab[i] = 10 * i;
	for (i = 0; i < 12; i++)
		x[i] = i + 0.5;
	reference(t, spec, in, out);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++)
			assert_true(e[i * 3 + j] == tab[(int)ids[i] * 3 + j]);
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			assert_true(g[i * 3 + j] == x[i * 6 + (int)pos[i * 3 + j]]);
	ids[1] = 5;   /* out of 0..4 */
	if (infer_spec(t, spec))
		fail_msg("%s", t->msg);
	assert_int_equal(rt_reference(&t->c, t->c.fusion, in, out), WSF_ERR_INPUT);
	assert_contains(t->msg, "test.yaml:8:42: error: op 'index_select': index 'ids' holds 5 at element 1, outside 0..4 "
	                "(dim 0 of 'tab')");
	p = lowered_param(t, VSPEC("  tab: {dtype: bf16, shape: [32000, 512]}\n  ids: {dtype: int64, shape: [T]}\n",
	                           "  - {out: e, op: index_select, in: [tab, ids], dim: 0}\n"
	                           "  - {out: y, op: neg, in: [e]}\n", "y"), "e", &line);
	assert_int_equal(p->view, VIEW_ROW_AT);
	assert_string_equal(line, "param e: input ptr bf16 [32000, 512] row_at at=0 by=ids scale=512");
	assert_string_equal(t->c.kernel->param[p->bounds->index_param].name, "ids");
	assert_int_equal(t->c.kernel->param[p->bounds->index_param].view, VIEW_NONE);
	p = lowered_param(t, VSPEC("  x: {dtype: f32, shape: [T, 100]}\n  pos: {dtype: int32, shape: [T, 64]}\n",
	                           "  - {out: g, op: gather, in: [x, pos], dim: 1}\n"
	                           "  - {out: y, op: neg, in: [g]}\n", "y"), "g", &line);
	assert_int_equal(p->view, VIEW_ELEM_AT);
	assert_string_equal(line, "param g: input ptr f32 [T, 100] elem_at at=(row * 100) step=0 by=pos scale=1");
	/* an embedding and its rmsnorm in one row kernel: the row at its id (an int32 index of positions) */
	p = lowered_param(t, VSPEC("  tab: {dtype: bf16, shape: [32000, 1024]}\n  ids: {dtype: int32, shape: [T]}\n",
	                           "  - {out: e, op: index_select, in: [tab, ids], dim: 0}\n"
	                           "  - {out: y, op: rmsnorm, in: [e], eps: 1.0e-6}\n", "y"), "e", &line);
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	assert_string_equal(line, "param e: input ptr bf16 [32000, 1024] full at=0 by=ids scale=1024");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(slice_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(slice_bound_size, setup, teardown),
		cmocka_unit_test_setup_teardown(chunk_split_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(cat_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(permute_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(reshape_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(expand_pad_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_permute, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_slice_cat_chunk, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_pad_expand, setup, teardown),
		cmocka_unit_test_setup_teardown(fusion_ir_text, setup, teardown),
		cmocka_unit_test_setup_teardown(schedule_refuses_views, setup, teardown),
		cmocka_unit_test_setup_teardown(views_lower_to_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(transpose_exchanges_tiles, setup, teardown),
		cmocka_unit_test_setup_teardown(split_outputs_store_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(views_move_to_inputs, setup, teardown),
		cmocka_unit_test_setup_teardown(views_cat_pad_placed, setup, teardown),
		cmocka_unit_test_setup_teardown(index_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(views_interleaved_pairs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
