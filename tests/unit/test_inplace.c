/*
 * test_inplace.c: outputs written into an input's memory (alias) and the
 * scatters (index_copy, slice_scatter) written so: the shapes inference
 * gives and its positioned errors, the host reference's values against
 * hand-computed ones, the kernel IR (the part's domain, each output's
 * store address: the index's value or the slice's offset), and the refusals
 * (exit status 6) where a kernel could read what it has written.
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

/* A spec of inputs INPUTS (YAML lines), ops OPS and outputs OUTS. */
#define SPEC(inputs, ops, outs) "fusion: s\nsizes: {T: 6}\ninputs:\n" inputs "ops:\n" ops "outputs:\n" outs

#define KV_INPUTS "  cache: {dtype: bf16, shape: [2, 4, 64, 128]}\n  k: {dtype: bf16, shape: [2, 4, T, 128]}\n" \
	"  pos: {dtype: int64, shape: [T]}\n"

/* The message SPEC's inference (or its front end; with KERNEL, its lowering) gives; it must fail. */
static const char *
error_of(Fixture *t, const char *spec, bool kernel)
{
	if (run_spec(t, spec, kernel) == 0)
		fail_msg("no error for: %s", spec);
	return t->msg;
}

/* The line of the kernel IR's print that starts with START (after its indent). */
static const char *
kir_line(Fixture *t, const char *start)
{
	Buf b;
	const char *s, *e;

	buf_init(&b, t->c.arena);
	kernel_print(&b, t->c.kernel);
	for (s = buf_str(&b); s && *s; s = e ? e + 1 : NULL) {
		e = strchr(s, '\n');
		while (*s == ' ')
			s++;
		if (strncmp(s, start, strlen(start)) == 0)
			return e ? arena_printf(t->c.arena, "%.*s", (int)(e - s), s) : s;
	}
	fail_msg("no line '%s' in:\n%s", start, buf_str(&b));
	return NULL;
}

/* index_copy and slice_scatter: x's shape and dtype; the part must fit, the index be 1-D integers. */
static void
scatter_shapes_and_errors(void **state)
{
	Fixture *t = *state;
	const Fusion *f;

	assert_int_equal(run_spec(t, SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: -2}\n",
	                                  "  c: {alias: cache}\n"), false), 0);
	f = t->c.fusion;
	assert_int_equal(f->op[1].axis, 2);
	assert_int_equal(f->tensor[f->op[1].out].dtype, DT_BF16);
	assert_int_equal(fusion_stored(f, 0), fusion_find_tensor(f, intern_cstr(t->c.strs, "k")));
	assert_non_null(fusion_scatter(f, 0));
	assert_contains(error_of(t, SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k]}\n",
	                                 "  c: {}\n"), false), "test.yaml:8:5: error: op 'index_copy' is missing required key 'dim'");
	assert_contains(error_of(t, SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: 1}\n",
	                                 "  c: {}\n"), false),
	                "test.yaml:8:47: error: op 'index_copy': 'k' [2, 4, T, 128] does not fit: expected 'cache' "
	                "[2, 4, 64, 128] with dim 1 as long as the index");
	assert_contains(error_of(t, SPEC(KV_INPUTS "  p2: {dtype: f32, shape: [T]}\n",
	                                 "  - {out: c, op: index_copy, in: [cache, p2, k], dim: 2}\n", "  c: {}\n"), false),
	                "op 'index_copy': index 'p2' is f32, expected int32 or int64");
	assert_contains(error_of(t, SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, 3, k], dim: 2}\n",
	                                 "  c: {}\n"), false), "test.yaml:8:42: error: op 'index_copy' takes tensors, not the number 3");
	assert_contains(error_of(t, SPEC(KV_INPUTS "  k8: {dtype: f16, shape: [2, 4, T, 128]}\n",
	                                 "  - {out: c, op: index_copy, in: [cache, pos, k8], dim: 2}\n", "  c: {}\n"), false),
	                "'k8' is f16 and 'cache' is bf16: torch places a tensor of the same dtype");
	/* slice_scatter: the slice's extent, torch's clamping; a runtime size must be bound to fit a constant */
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: f32, shape: [8, 64]}\n  s: {dtype: f32, shape: [8, 16]}\n",
	                                  "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, start: -32, end: 100, "
	                                  "step: 2}\n", "  y: {alias: x}\n"), false), 0);
	assert_contains(error_of(t, SPEC("  x: {dtype: f32, shape: [8, 64]}\n  s: {dtype: f32, shape: [8, T]}\n",
	                                 "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, end: 6}\n", "  y: {}\n"),
	                         false), "(dim 1 is the runtime size T: a constant extent, or -D T=VALUE, fits a constant)");
	assert_contains(error_of(t, SPEC("  x: {dtype: f32, shape: [8, 64]}\n  s: {dtype: f32, shape: [8, 16]}\n",
	                                 "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, start: 64}\n", "  y: {}\n"),
	                         false), "op 'slice_scatter': the slice [64::1] of dim 1 of 'x' [8, 64] is empty");
}

/* alias names an input of the output's shape and dtype, once; not with accumulate. */
static void
alias_errors(void **state)
{
	Fixture *t = *state;

#define XS "  x: {dtype: bf16, shape: [8, 64]}\n  z: {dtype: bf16, shape: [8, 32]}\n"
#define MUL "  - {out: y, op: mul, in: [x, 2.0]}\n"
	assert_contains(error_of(t, SPEC(XS, MUL, "  y: {alias: w}\n"), false),
	                "test.yaml:9:14: error: 'alias' of output 'y' names no tensor 'w': expected an input");
	assert_contains(error_of(t, SPEC(XS, MUL "  - {out: y2, op: neg, in: [x]}\n", "  y: {alias: y2}\n"), false),
	                "names the op output 'y2': expected an input");
	assert_contains(error_of(t, SPEC(XS, MUL, "  y: {alias: z}\n"), false),
	                "test.yaml:9:14: error: output 'y' [8, 64] is written into input 'z' [8, 32] (alias): the shapes "
	                "must be equal");
	assert_contains(error_of(t, SPEC(XS, MUL, "  y: {alias: x, dtype: f32}\n"), false),
	                "output 'y' is stored as f32 into input 'x', which is bf16 (alias): the dtypes must be equal");
	assert_contains(error_of(t, SPEC(XS, MUL, "  y: {alias: x, accumulate: true}\n"), false),
	                "'alias' and 'accumulate: true' together are not implemented");
	assert_contains(error_of(t, SPEC(XS, MUL "  - {out: y2, op: neg, in: [x]}\n", "  y: {alias: x}\n  y2: {alias: x}\n"),
	                         false), "outputs 'y' and 'y2' are both written into input 'x' (alias)");
	/* an input only an alias names is unread, without the warning an unread input gets */
	assert_int_equal(run_spec(t, SPEC(XS, "  - {out: y, op: mul, in: [z, 2.0]}\n", "  y: {}\n"), false), 0);
	assert_contains(t->msg, "input 'x' is not read by any op");
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: bf16, shape: [8, 32]}\n  z: {dtype: bf16, shape: [8, 32]}\n",
	                                  "  - {out: y, op: mul, in: [z, 2.0]}\n", "  y: {alias: x}\n"), false), 0);
	assert_string_equal(t->msg, "");
	assert_true(t->c.fusion->tensor[t->c.fusion->input[0]].unread);
#undef XS
#undef MUL
}

static void
reference(Fixture *t, const char *spec, const double *const *in, double *const *out)
{
	if (run_spec(t, spec, false))
		fail_msg("%s", t->msg);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
}

/* index_copy places rows at the index's values, slice_scatter at start + i x step; the rest is x's. */
static void
reference_scatters(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: s\ninputs:\n  x: {dtype: f32, shape: [4, 6]}\n  ids: {dtype: int32, shape: [2]}\n"
		"  r: {dtype: f32, shape: [2, 6]}\n  s: {dtype: f32, shape: [4, 2]}\nops:\n"
		"  - {out: a, op: index_copy, in: [x, ids, r], dim: 0}\n"
		"  - {out: b, op: slice_scatter, in: [x, s], dim: 1, start: 1, step: 3}\n"
		"outputs:\n  a: {}\n  b: {}\n";
	double x[24], ids[] = {3, 0}, r[12], s[8], a[24], b[24];
	const double *in[] = {x, ids, r, s};
	double *out[] = {a, b};
	int i, j;

	for (i = 0; i < 24; i++)
		x[i] = i;
	for (i = 0; i < 12; i++)
		r[i] = 100 + i;
	for (i = 0; i < 8; i++)
		s[i] = -1 - i;
	reference(t, spec, in, out);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 6; j++) {
			double want_a = i == 3 ? r[j] : i == 0 ? r[6 + j] : x[i * 6 + j];
			double want_b = j == 1 ? s[i * 2] : j == 4 ? s[i * 2 + 1] : x[i * 6 + j];

			if (a[i * 6 + j] != want_a || b[i * 6 + j] != want_b)
				fail_msg("[%d, %d]: a %g (want %g), b %g (want %g)", i, j, a[i * 6 + j], want_a, b[i * 6 + j],
				         want_b);
		}
	ids[0] = 4;   /* out of range: the reference says where */
	if (rt_reference(&t->c, t->c.fusion, in, out) == WSF_OK)
		fail_msg("no error for an index of 4 into 4 rows");
	assert_contains(t->msg, "error: op 'index_copy': index 'ids' holds 4 at element 0, outside 0..3 (dim 0 of 'x')");
}

/*
 * A scatter in place is a kernel over its part, each element stored at its
 * place in the input's memory: a KV-cache append's rows at pos[t]'s row of
 * the sequence (16-byte stores, the index param memory only), a slice
 * along the columns with a step element by element, a slice of rows at a
 * constant offset; both caches of vLLM's slot mapping from one kernel.
 * Nothing is loaded from the cache, and the outputs store by pointer.
 */
static void
scatter_lowers_to_stores(void **state)
{
	Fixture *t = *state;
	const Kernel *k;
	int i;

	assert_int_equal(run_spec(t, SPEC(KV_INPUTS, "  - {out: ks, op: mul, in: [k, 0.5]}\n"
	                                  "  - {out: c, op: index_copy, in: [cache, pos, ks], dim: 2}\n",
	                                  "  c: {alias: cache}\n"), true), 0);
	k = t->c.kernel;
	assert_string_equal(t->c.fusion->tensor[k->domain].name, "ks");
	assert_false(k->tma_store);
	assert_false(k->pw.flat);
	assert_string_equal(kir_line(t, "param c:"), "param c: output ptr bf16 [2, 4, 64, 128] row_at "
	                    "at=((row / dim_T) * 8192) by=pos scale=128");
	assert_string_equal(kir_line(t, "param pos:"), "param pos: input ptr int64 [T] positions at=(row % dim_T)");
	for (i = 1; i < k->nparam; i++)
		assert_true(strcmp(k->param[i].name, "cache") != 0);   /* (its memory is c's) */
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: f32, shape: [T, 128]}\n  s: {dtype: f32, shape: [T, 40]}\n",
	                                  "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, start: 16, end: 96, "
	                                  "step: 2}\n", "  y: {alias: x}\n"), true), 0);
	assert_string_equal(kir_line(t, "param y:"), "param y: output ptr f32 [T, 128] elem_at at=(16 + (row * 128)) step=2");
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: bf16, shape: [T, 512, 200]}\n  a: {dtype: bf16, shape: [T, 100, 200]}\n",
	                                  "  - {out: y, op: slice_scatter, in: [x, a], dim: 1, start: 8, end: 108}\n",
	                                  "  y: {alias: x}\n"), true), 0);
	assert_string_equal(kir_line(t, "param y:"), "param y: output ptr bf16 [T, 512, 200] row_at "
	                    "at=((1600 + ((row / 100) * 102400)) + ((row % 100) * 200))");
	assert_int_equal(run_spec(t, SPEC("  key: {dtype: bf16, shape: [T, 8, 128]}\n  val: {dtype: bf16, shape: [T, 8, 128]}\n"
	                                  "  kc: {dtype: bf16, shape: [4096, 8, 128]}\n  vc: {dtype: bf16, shape: [4096, 8, 128]}\n"
	                                  "  slots: {dtype: int32, shape: [T]}\n",
	                                  "  - {out: k2, op: index_copy, in: [kc, slots, key], dim: 0}\n"
	                                  "  - {out: v2, op: index_copy, in: [vc, slots, val], dim: 0}\n",
	                                  "  k2: {alias: kc}\n  v2: {alias: vc}\n"), true), 0);
	assert_string_equal(kir_line(t, "param k2:"), "param k2: output ptr bf16 [4096, 8, 128] row_at at=((row % 8) * 128) "
	                    "by=slots scale=1024");
	assert_string_equal(kir_line(t, "param v2:"), "param v2: output ptr bf16 [4096, 8, 128] row_at at=((row % 8) * 128) "
	                    "by=slots scale=1024");
	/* along the columns: an index element a column, element by element */
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: f32, shape: [T, 64]}\n  r: {dtype: f32, shape: [T, 4]}\n"
	                                  "  ids: {dtype: int64, shape: [4]}\n",
	                                  "  - {out: y, op: index_copy, in: [x, ids, r], dim: 1}\n", "  y: {alias: x}\n"),
	                         true), 0);
	assert_string_equal(kir_line(t, "param y:"), "param y: output ptr f32 [T, 64] elem_at at=(row * 64) step=0 "
	                    "by=ids scale=1");
}

/*
 * Written whole into an input's memory: safe where each read of that input
 * is of the element written or from the tile's stage (RoPE in place); a
 * transpose of it, a scatter's value read by an op, a scatter not in place,
 * other kernel families and TMA stores of a part are exit status 6.
 */
static void
in_place_rules(void **state)
{
	Fixture *t = *state;

	assert_int_equal(run_spec(t, SPEC("  x: {dtype: bf16, shape: [T, 4, 128]}\n  cos: {dtype: bf16, shape: [T, 1, 128]}\n",
	                                  "  - {out: x1, op: slice, in: [x], dim: -1, end: 64}\n"
	                                  "  - {out: x2, op: slice, in: [x], dim: -1, start: 64}\n"
	                                  "  - {out: nx2, op: neg, in: [x2]}\n"
	                                  "  - {out: rot, op: cat, in: [nx2, x1], dim: -1}\n"
	                                  "  - {out: a, op: mul, in: [x, cos]}\n"
	                                  "  - {out: y, op: add, in: [a, rot]}\n", "  y: {alias: x}\n"), true), 0);
	assert_contains(kir_line(t, "param rot.x2:"), "from=x's stage");
	assert_string_equal(kir_line(t, "param y:"), "param y: output ptr bf16 [T, 4, 128] full");
#define UNSUPPORTED(spec, what) do { \
		assert_contains(error_of(t, spec, true), what); \
		assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED); \
	} while (0)
	UNSUPPORTED(SPEC("  x: {dtype: bf16, shape: [64, 64]}\n", "  - {out: xt, op: transpose, in: [x], dim0: 0, dim1: 1}\n"
	                 "  - {out: y, op: add, in: [xt, x]}\n", "  y: {alias: x}\n"),
	            "test.yaml:9:14: error: output 'y' is written into input 'x' (alias), which the kernel also reads through "
	            "xt: in place, a read of other elements than those written could see them written");
	/* a slice_scatter of step 1 as a value is a cat of x's slices around src; a stepped one is not yet */
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: f32, shape: [T, 64]}\n  s: {dtype: f32, shape: [T, 16]}\n",
	                                  "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, start: 8, end: 24}\n",
	                                  "  y: {}\n"), true), 0);
	assert_string_equal(kir_line(t, "param y.s:"), "param y.s: input ptr f32 [T, 16] row_at at=(-8 + (row * 16)) "
	                    "box1=[8, 24)");
	assert_int_equal(run_spec(t, SPEC("  x: {dtype: f32, shape: [T, 64]}\n  s: {dtype: f32, shape: [T, 16]}\n",
	                                  "  - {out: x3, op: mul, in: [x, 3.0]}\n"   /* (x's slices moved below the mul) */
	                                  "  - {out: y, op: slice_scatter, in: [x3, s], dim: 1, start: 8, end: 24}\n",
	                                  "  y: {}\n"), true), 0);
	UNSUPPORTED(SPEC("  x: {dtype: f32, shape: [T, 64]}\n  s: {dtype: f32, shape: [T, 16]}\n",
	                 "  - {out: y, op: slice_scatter, in: [x, s], dim: 1, step: 4}\n", "  y: {}\n"),
	            "'slice_scatter' (a view) in this kernel is not implemented yet: a kernel writes 'y' in place");
	UNSUPPORTED(SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: 2}\n", "  c: {}\n"),
	            "test.yaml:8:5: error: 'index_copy' (a view) in this kernel is not implemented yet: a kernel writes 'c' "
	            "in place, as an output with 'alias: cache'");
	UNSUPPORTED(SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: 2}\n"
	                 "  - {out: d, op: neg, in: [c]}\n", "  c: {alias: cache}\n  d: {}\n"),
	            "op 'd' reads 'c', which the kernel writes in place (alias)");
	UNSUPPORTED(SPEC("  x: {dtype: f32, shape: [64, 64]}\n", "  - {out: s, op: sum, in: [x], dim: -1, keepdim: true}\n"
	                 "  - {out: y, op: div, in: [x, s]}\n", "  y: {alias: x}\n"),
	            "output 'y' written into input 'x' (alias) in a row-reduction kernel is not implemented yet");
	UNSUPPORTED(SPEC("  x: {dtype: f32, shape: [64, 64]}\n  w: {dtype: f32, shape: [64, 64]}\n",
	                 "  - {out: y, op: matmul, in: [x, w]}\n", "  y: {alias: x}\n"),
	            "in a matmul kernel is not implemented yet");
	UNSUPPORTED(SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: 2}\n",
	                 "  c: {alias: cache}\nschedule: {store: tma}\n"),
	            "or a part written in place (a scatter) store by pointer: 'store: tma' with TMA stores is not implemented");
#undef UNSUPPORTED
}

/* The fusion IR says where an output is written. */
static void
alias_printed(void **state)
{
	Fixture *t = *state;
	Buf b;

	assert_int_equal(run_spec(t, SPEC(KV_INPUTS, "  - {out: c, op: index_copy, in: [cache, pos, k], dim: 2}\n"
	                                  "  - {out: y, op: neg, in: [k]}\n", "  c: {alias: cache}\n  y: {alias: k}\n"),
	                          false), 0);
	buf_init(&b, t->c.arena);
	fusion_print(&b, t->c.fusion);
	assert_contains(buf_str(&b), "output c: bf16 alias=cache in place");
	assert_contains(buf_str(&b), "output y: bf16 alias=k ");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(scatter_shapes_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(alias_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_scatters, setup, teardown),
		cmocka_unit_test_setup_teardown(scatter_lowers_to_stores, setup, teardown),
		cmocka_unit_test_setup_teardown(in_place_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(alias_printed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
