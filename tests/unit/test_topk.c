/*
 * test_topk.c: topk (torch's x.topk(k), along the last dim): the spec's
 * forms (out: [values, indices], out: [values], k a size), shapes and
 * dtypes, the host reference against hand values (NaN first, ties to the
 * lower index), the row kernel's plan (its outputs selected, lanes of one
 * warp), the text written back, and the positioned errors.
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
#include "passes_helpers.h"

#define SPEC(sizes, ops, outs) \
	"fusion: tk\nsizes: " sizes "\ninputs:\n  x: {dtype: f32, shape: [T, E]}\nops:\n" ops "outputs:\n" outs

static void
assert_contains(const char *s, const char *part)
{
	if (!s || !strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s ? s : "(null)");
}

static int
tensor_named(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (strcmp(f->tensor[i].name, name) == 0)
			return i;
	fail_msg("no tensor %s", name);
	return 0;
}

/* Values and indices: [T, k], x's dtype and int64; the reference's order: NaN, then larger, then the lower index. */
static void
shapes_and_reference(void **state)
{
	Fixture *t = *state;
	double x[2 * 6] = {1, 5, 3, 5, -2, 0, NAN, -1, 7, -INFINITY, 7, 2}, v[2 * 3], ix[2 * 3];
	const double *in[] = {x};
	double *out[] = {v, ix};
	static const double want_v[] = {5, 5, 3}, want_i[] = {1, 3, 2, 0, 2, 4};
	const Fusion *f;
	int i;

	if (run_spec(t, SPEC("{T: 2, E: 6}", "  - {out: [v, i], op: topk, in: [x], k: 3}\n", "  v: {}\n  i: {}\n"), false))
		fail_msg("%s", t->msg);
	f = t->c.fusion;
	assert_int_equal(f->tensor[tensor_named(f, "v")].dtype, DT_F32);
	assert_int_equal(f->tensor[tensor_named(f, "i")].dtype, DT_INT64);
	assert_int_equal(dim_value(f, f->tensor[tensor_named(f, "i")].dim[1]), 3);
	assert_int_equal(f->op[f->tensor[tensor_named(f, "i")].def].part, 1);
	if (rt_reference(&t->c, f, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
	for (i = 0; i < 3; i++)
		assert_true(v[i] == want_v[i]);
	assert_true(isnan(v[3]) && v[4] == 7 && v[5] == 7);   /* NaN first, then the tie in index order */
	for (i = 0; i < 6; i++)
		assert_true(ix[i] == want_i[i]);
	/* largest: false: smaller first, NaN last, ties in index order */
	if (run_spec(t, SPEC("{T: 2, E: 6}", "  - {out: [v, i], op: topk, in: [x], k: 3, largest: false}\n",
	                     "  v: {}\n  i: {}\n"), false) ||
	    rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("%s", t->msg);
	{
		static const double small_v[] = {-2, 0, 1, -INFINITY, -1, 2}, small_i[] = {4, 5, 0, 3, 1, 5};

		for (i = 0; i < 6; i++)
			if (v[i] != small_v[i] || ix[i] != small_i[i])
				fail_msg("smallest %d: %g at %g, want %g at %g", i, v[i], ix[i], small_v[i], small_i[i]);
	}
	/* values alone, k a size; torch's sorted (either way: sorted is one order of the unsorted) */
	if (run_spec(t, SPEC("{T: 2, E: 6, K: 2}", "  - {out: [v], op: topk, in: [x], k: K, sorted: false}\n", "  v: {}\n"),
	             false))
		fail_msg("%s", t->msg);
	assert_int_equal(dim_value(t->c.fusion, t->c.fusion->tensor[tensor_named(t->c.fusion, "v")].dim[1]), 2);
}

/* A router: softmax then topk, one row kernel whose outputs are selected, 8 lanes a row of 256 (shuffles). */
static void
row_kernel(void **state)
{
	Fixture *t = *state;
	const Kernel *k;
	int j, selected = 0;

	if (run_spec(t, SPEC("{T: 16384, E: 256}", "  - {out: p, op: softmax, in: [x], dim: -1}\n"
	                     "  - {out: [w, idx], op: topk, in: [p], k: 8}\n", "  w: {}\n  idx: {}\n"), true))
		fail_msg("%s", t->msg);
	k = t->c.kernel;
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	for (j = 1; j < k->nparam; j++)
		selected += k->param[j].view == VIEW_SELECTED;
	assert_int_equal(selected, 2);
	assert_true(k->row.lanes > 0 && k->row.lanes <= 32);
	/* a wide row: the CTA's threads */
	if (run_spec(t, SPEC("{T: 64, E: 16384}", "  - {out: [w, idx], op: topk, in: [x], k: 50}\n", "  w: {}\n  idx: {}\n"),
	             true))
		fail_msg("%s", t->msg);
	assert_int_equal(t->c.kernel->row.lanes, 0);
	assert_true(t->c.kernel->row.steps > 0);
	/* a row too wide for registers, of an input: streamed, no passes; the topk reads it again at the row's end */
	if (run_spec(t, SPEC("{T: 64, E: 131072}", "  - {out: [w, idx], op: topk, in: [x], k: 50}\n",
	                     "  w: {}\n  idx: {}\n"), true))
		fail_msg("%s", t->msg);
	k = t->c.kernel;
	assert_true(k->row.chunk > 0);
	assert_int_equal(k->row.passes, 0);
	assert_int_equal(k->row.steps, 0);
	assert_int_equal(k->nbuf, 1);   /* (buf 0 is none: no stages, nothing streams the row through them) */
	/* a gather of another input's row at the indices: stored with the selection, its input read there alone */
	if (run_spec(t, "fusion: tg\nsizes: {T: 64, E: 256}\ninputs:\n  x: {dtype: bf16, shape: [T, E]}\n"
	                "  y: {dtype: f32, shape: [T, E]}\nops:\n  - {out: [w, idx], op: topk, in: [x], k: 6}\n"
	                "  - {out: g, op: gather, in: [y, idx], dim: -1}\noutputs:\n  w: {}\n  g: {}\n", true))
		fail_msg("%s", t->msg);
	k = t->c.kernel;
	selected = 0;
	for (j = 1; j < k->nparam; j++)
		selected += k->param[j].view == VIEW_SELECTED;
	assert_int_equal(selected, 3);   /* w, g, and y (read at the indices, not staged) */
	assert_true(topk_gather(t->c.fusion, tensor_named(t->c.fusion, "g")));
}

/* spec_write (--emit=grad's writer): values and indices one line, out: [v, i], which reads back the same. */
static void
written_back(void **state)
{
	Fixture *t = *state;
	char *text;
	Buf b;

	if (run_spec(t, SPEC("{T: 4, E: 16}", "  - {out: [v, i], op: topk, in: [x], k: 3}\n", "  v: {}\n  i: {}\n"), false))
		fail_msg("%s", t->msg);
	buf_init(&b, t->c.arena);
	spec_write(&t->c, &b, t->c.fusion);
	assert_contains(buf_str(&b), "{out: [v, i], op: topk, in: [x], axis: 1, k: 3}");
	text = strdup(buf_str(&b));   /* (the Comp's arena goes with the next spec) */
	assert_non_null(text);
	if (run_spec(t, text, false))
		fail_msg("%s\n%s", t->msg, text);
	assert_int_equal(t->c.fusion->op[t->c.fusion->tensor[tensor_named(t->c.fusion, "i")].def].part, 1);
	free(text);
}

static void
errors(void **state)
{
	Fixture *t = *state;
	static const char *const bad[][2] = {
		{SPEC("{T: 4, E: 6}", "  - {out: [v, i], op: topk, in: [x], k: 7}\n", "  v: {}\n"),
		 "topk's k of 7 is more than the 6 elements of the last dim of 'x'"},
		{SPEC("{T: 4, E: 6}", "  - {out: [v, i], op: topk, in: [x]}\n", "  v: {}\n"), "missing required key 'k'"},
		{SPEC("{T: 4, E: 6}", "  - {out: [v, i, j], op: topk, in: [x], k: 2}\n", "  v: {}\n"),
		 "'out' names one or two tensors (out: [values, indices]), not 3"},
		{SPEC("{T: 4, E: 6}", "  - {out: [v, i], op: topk, in: [x], k: 2, dim: 0}\n", "  v: {}\n"),
		 "topk along dim 0 of 'x', not its last, is not implemented yet"},
		{SPEC("{T: 4, E: 1024}", "  - {out: [v, i], op: topk, in: [x], k: 300}\n", "  v: {}\n"),
		 "topk's k of 300 is not implemented yet: k is a constant or a bound size of at most 256"},
		{SPEC("{T: 4, E: 8}", "  - {out: [v, i], op: topk, in: [x], k: 2}\n  - {out: y, op: mul, in: [v, 2.0]}\n",
		      "  y: {}\n"), "'y' (mul) reads 'v', topk's"},
		{SPEC("{T: 4, E: 8}", "  - {out: [v, i], op: topk, in: [x], k: 2}\n  - {out: g, op: gather, in: [x, i], dim: -1}\n"
		      "  - {out: y, op: mul, in: [g, 2.0]}\n", "  y: {}\n"), "'y' (mul) reads 'g', a gather at topk's indices"},
		{SPEC("{T: 4, E: 8}", "  - {out: [v, i], op: topk, in: [x], k: 0}\n", "  v: {}\n"),
		 "expected a size name or a positive integer for 'k', saw '0'"},
		{SPEC("{T: 4, E: 65536}", "  - {out: p, op: mul, in: [x, 2.0]}\n  - {out: [v, i], op: topk, in: [p], k: 2}\n",
		      "  v: {}\n"), "topk of 'p' is not implemented yet for a computed value in rows of 65536 elements"},
	};
	int i;

	for (i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
		if (run_spec(t, bad[i][0], true) == 0)
			fail_msg("no error for: %s", bad[i][0]);
		assert_contains(t->msg, bad[i][1]);
	}
	{   /* the gradient: not yet */
		static const char spec[] = SPEC("{T: 4, E: 16}", "  - {out: [v], op: topk, in: [x], k: 3}\n", "  v: {}\n");
		WsfContext *ctx = wsf_context_new();
		char *yaml = NULL;
		size_t n = 0;

		assert_int_equal(wsf_grad_string(ctx, "tk.yaml", spec, strlen(spec), &yaml, &n), WSF_ERR_UNSUPPORTED);
		assert_contains(wsf_context_last_error(ctx), "the gradient of 'topk' is not implemented yet");
		wsf_context_delete(ctx);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shapes_and_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(row_kernel, setup, teardown),
		cmocka_unit_test_setup_teardown(written_back, setup, teardown),
		cmocka_unit_test_setup_teardown(errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
