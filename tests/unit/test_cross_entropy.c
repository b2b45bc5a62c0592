/*
 * test_cross_entropy.c: one_hot (torch's F.one_hot), argmax and argmin, and
 * what cross-entropy is made of in a row kernel: the shape and dtype inference gives, its
 * positioned errors, the host reference's values against hand-computed
 * ones (a loss and dlogits from logsumexp and the label's one-hot), the
 * row kernel's IR (a label a row, one_hot computed from the element's
 * column), a gather of one element a row read at the label (0 outside the
 * row: ignore_index's -100), and a pointwise kernel's one_hot of an input.
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

static void
assert_contains(const char *s, const char *part)
{
	if (!s || !strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s ? s : "(null)");
}

#define SPEC(sizes, inputs, ops, outs) "fusion: ce\nsizes: " sizes "\ninputs:\n" inputs "ops:\n" ops "outputs:\n" outs

/* The loss and dlogits of cross-entropy with labels, ignore_index -100 masked. */
#define CE_OPS \
	"  - {out: oh, op: one_hot, in: [label], num_classes: V}\n" \
	"  - {out: lse, op: logsumexp, in: [x], dim: -1}\n" \
	"  - {out: xo, op: mul, in: [x, oh]}\n" \
	"  - {out: xl, op: sum, in: [xo], dim: -1}\n" \
	"  - {out: raw, op: sub, in: [lse, xl]}\n" \
	"  - {out: label1, op: reshape, in: [label], shape: [T, 1]}\n" \
	"  - {out: ign, op: eq, in: [label1, -100]}\n" \
	"  - {out: loss, op: where, in: [ign, 0.0, raw]}\n" \
	"  - {out: xs, op: sub, in: [x, lse]}\n" \
	"  - {out: p, op: exp, in: [xs]}\n" \
	"  - {out: d, op: sub, in: [p, oh]}\n" \
	"  - {out: dx, op: mul, in: [d, g]}\n"
#define CE_INPUTS \
	"  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n  g: {dtype: f32, shape: [T, 1]}\n"

static const char *
error_of(Fixture *t, const char *spec, bool kernel)
{
	if (run_spec(t, spec, kernel) == 0)
		fail_msg("no error for: %s", spec);
	return t->msg;
}

/* one_hot(label) is label's shape and the classes, int64; the label must be integers, the classes given. */
static void
one_hot_shapes_and_errors(void **state)
{
	Fixture *t = *state;
	const Fusion *f;
	const Tensor *oh;

	assert_int_equal(run_spec(t, SPEC("{T: 6, V: 10}", "  label: {dtype: int32, shape: [T]}\n",
	                                  "  - {out: oh, op: one_hot, in: [label], num_classes: V}\n", "  oh: {}\n"),
	                          false), 0);
	f = t->c.fusion;
	oh = &f->tensor[f->op[1].out];
	assert_int_equal(oh->rank, 2);
	assert_int_equal(oh->dtype, DT_INT64);
	assert_int_equal(dim_value(f, oh->dim[1]), 10);
	assert_int_equal(run_spec(t, SPEC("{T: 6}", "  label: {dtype: int64, shape: [T, 2]}\n",
	                                  "  - {out: oh, op: one_hot, in: [label], num_classes: 7}\n", "  oh: {}\n"),
	                          false), 0);
	assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[1].out].rank, 3);
	assert_contains(error_of(t, SPEC("{T: 6}", "  label: {dtype: f32, shape: [T]}\n",
	                                 "  - {out: oh, op: one_hot, in: [label], num_classes: 7}\n", "  oh: {}\n"), false),
	                "test.yaml:6:33: error: one_hot takes class indices (int32 or int64, torch's), and 'label' is f32");
	assert_contains(error_of(t, SPEC("{T: 6}", "  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: oh, op: one_hot, in: [label]}\n", "  oh: {}\n"), false),
	                "num_classes");
	assert_contains(error_of(t, SPEC("{T: 6}", "  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: oh, op: one_hot, in: [label], num_classes: W}\n", "  oh: {}\n"), false),
	                "unknown size 'W' in 'num_classes'");
	assert_contains(error_of(t, SPEC("{T: 6}", "  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: oh, op: one_hot, in: [label], num_classes: 0}\n", "  oh: {}\n"), false),
	                "expected a size name or a positive integer for 'num_classes', saw '0'");
}

/* The reference: one_hot's rows, and cross-entropy's loss and dlogits from them, against hand-computed values. */
static void
reference_cross_entropy(void **state)
{
	Fixture *t = *state;
	double x[12], label[] = {2, 0, -100}, g[] = {0.5, 2, 1}, loss[3], dx[12];
	const double *in[] = {x, label, g};
	double *out[] = {loss, dx};
	int r, c;

	for (r = 0; r < 12; r++)
		x[r] = sin(r + 1.0);
	if (run_spec(t, SPEC("{T: 3, V: 4}", CE_INPUTS, CE_OPS, "  loss: {dtype: f32}\n  dx: {dtype: f32}\n"), false))
		fail_msg("%s", t->msg);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
	for (r = 0; r < 3; r++) {
		double m = -INFINITY, s = 0, lse;

		for (c = 0; c < 4; c++)
			m = fmax(m, x[r * 4 + c]);
		for (c = 0; c < 4; c++)
			s += exp(x[r * 4 + c] - m);
		lse = log(s) + m;
		/* the ignored row: no loss; its one-hot is all zeros, its dlogits the softmax's */
		assert_true(fabs(loss[r] - (r == 2 ? 0 : lse - x[r * 4 + (int)label[r]])) < 1e-12);
		for (c = 0; c < 4; c++)
			assert_true(fabs(dx[r * 4 + c] - (exp(x[r * 4 + c] - lse) - (c == label[r])) * g[r]) < 1e-12);
	}
}

/* Loss and dlogits in one row kernel: the label a row (an int64 read once a row), one_hot from the column. */
static void
row_kernel(void **state)
{
	Fixture *t = *state;
	Kernel *k;
	Buf b;
	int j, label = 0;

	if (run_spec(t, SPEC("{T: 4096, V: 32000}", CE_INPUTS, CE_OPS, "  loss: {dtype: f32}\n  dx: {dtype: bf16}\n"),
	             true))
		fail_msg("%s", t->msg);
	k = t->c.kernel;
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	for (j = 1; j < k->nparam; j++)
		if (strcmp(k->param[j].name, "label") == 0)
			label = j;
	assert_true(label > 0);
	assert_int_equal(k->param[label].view, VIEW_COL);
	assert_int_equal(k->param[label].dtype, DT_INT64);
	buf_init(&b, t->c.arena);
	kernel_print(&b, k);
	assert_contains(buf_str(&b), "param label: input ptr int64 [T] col");
	assert_contains(buf_str(&b), "param dx: output ptr bf16 [T, V] full");
	/* a vocabulary of 128k streams in chunks; the same ops */
	if (run_spec(t, SPEC("{T: 4096, V: 128256}", CE_INPUTS, CE_OPS, "  loss: {dtype: f32}\n"), true))
		fail_msg("%s", t->msg);
	assert_true(t->c.kernel->row.chunk > 0);
}

/* The label's logit by gather (one element a row, read at the label; 0 outside the row) and one_hot's refusals. */
static void
gather_and_refusals(void **state)
{
	Fixture *t = *state;
	const KParam *p = NULL;
	int j;

	if (run_spec(t, SPEC("{T: 64, V: 1000}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T, 1]}\n",
	                     "  - {out: lse, op: logsumexp, in: [x], dim: -1}\n"
	                     "  - {out: xl, op: gather, in: [x, label], dim: -1}\n"
	                     "  - {out: raw, op: sub, in: [lse, xl]}\n  - {out: ign, op: eq, in: [label, -100]}\n"
	                     "  - {out: loss, op: where, in: [ign, 0.0, raw]}\n", "  loss: {dtype: f32}\n"), true))
		fail_msg("%s", t->msg);
	for (j = 1; j < t->c.kernel->nparam; j++)
		if (strcmp(t->c.kernel->param[j].name, "xl") == 0)
			p = &t->c.kernel->param[j];
	assert_non_null(p);
	assert_int_equal(p->view, VIEW_COL);
	assert_non_null(p->bounds);
	assert_non_null(p->bounds->index_n);   /* the row's extent: outside it, 0 */
	assert_int_equal(p->bounds->index_n->var, t->c.kernel->cols_var);
	/* a pointwise kernel (cross-entropy's backward from a saved logsumexp): the label a row, a column param */
	if (run_spec(t, SPEC("{T: 64, V: 256}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n"
	                     "  lse: {dtype: f32, shape: [T, 1]}\n",
	                     "  - {out: oh, op: one_hot, in: [label], num_classes: V}\n  - {out: xs, op: sub, in: [x, lse]}\n"
	                     "  - {out: p, op: exp, in: [xs]}\n  - {out: d, op: sub, in: [p, oh]}\n", "  d: {}\n"), true))
		fail_msg("%s", t->msg);
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
	for (j = 1, p = NULL; j < t->c.kernel->nparam; j++)
		if (strcmp(t->c.kernel->param[j].name, "label") == 0)
			p = &t->c.kernel->param[j];
	assert_non_null(p);
	assert_int_equal(p->view, VIEW_COL);
	assert_contains(error_of(t, SPEC("{T: 64, V: 256}", "  l0: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: label, op: add, in: [l0, 1]}\n"
	                                 "  - {out: oh, op: one_hot, in: [label], num_classes: V}\n", "  oh: {}\n"), true),
	                "one_hot of 'label' in a pointwise kernel takes an input, a label a row of its output's shape");
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	/* a label added to (integer arithmetic) is not a label: a row kernel refuses its integers */
	assert_contains(error_of(t, SPEC("{T: 64, V: 256}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: oh, op: one_hot, in: [label], num_classes: V}\n"
	                                 "  - {out: l2, op: add, in: [label, 1]}\n  - {out: y, op: mul, in: [x, oh]}\n"
	                                 "  - {out: s, op: sum, in: [y], dim: -1}\n", "  s: {}\n  l2: {}\n"), true),
	                "integer values compute in pointwise kernels only");
}

/*
 * reduction: mean (torch's default) and sum: the rows' losses summed, the
 * mean over the rows not ignored, against the rows' losses of reduction:
 * none; one row kernel that sums them after its rows (two results over
 * the rows for a mean, one for a sum), the logits streamed in chunks.
 */
static void
cross_entropy_reductions(void **state)
{
	Fixture *t = *state;
	static const char *const specs[] = {
		SPEC("{T: 3, V: 4}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		     "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none, ignore_index: 7}\n", "  loss: {}\n"),
		SPEC("{T: 3, V: 4}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		     "  - {out: loss, op: cross_entropy, in: [x, label], ignore_index: 7}\n", "  loss: {}\n"),
		SPEC("{T: 3, V: 4}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		     "  - {out: loss, op: cross_entropy, in: [x, label], reduction: sum, ignore_index: 7}\n", "  loss: {}\n"),
	};
	double x[12], label[] = {2, 7, 0}, rows[3], mean, sum;
	const double *in[] = {x, label};
	double *out[3][1] = {{rows}, {&mean}, {&sum}};
	int i;

	for (i = 0; i < 12; i++)
		x[i] = cos(3.0 * i);
	for (i = 0; i < 3; i++) {
		if (run_spec(t, specs[i], false))
			fail_msg("%s", t->msg);
		assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[t->c.fusion->nop - 1].out].rank, i ? 0 : 1);
		if (rt_reference(&t->c, t->c.fusion, in, out[i]) != WSF_OK)
			fail_msg("reference: %s", t->msg);
	}
	assert_true(rows[1] == 0);   /* ignored */
	assert_true(fabs(sum - (rows[0] + rows[2])) < 1e-12);
	assert_true(fabs(mean - (rows[0] + rows[2]) / 2) < 1e-12);
	{   /* z-loss: lse_square_scale z adds z lse^2 to each row's loss (not an ignored row's) */
		double z[3], *zout[] = {z};
		int r, c;

		if (run_spec(t, SPEC("{T: 3, V: 4}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		                     "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none, ignore_index: 7, "
		                     "lse_square_scale: 0.25}\n", "  loss: {}\n"), false) ||
		    rt_reference(&t->c, t->c.fusion, in, zout) != WSF_OK)
			fail_msg("%s", t->msg);
		for (r = 0; r < 3; r++) {
			double s = 0, lse;

			for (c = 0; c < 4; c++)
				s += exp(x[r * 4 + c]);
			lse = log(s);
			if (fabs(z[r] - (r == 1 ? 0 : rows[r] + 0.25 * lse * lse)) > 1e-12)
				fail_msg("row %d: %.15g, want %.15g", r, z[r], r == 1 ? 0 : rows[r] + 0.25 * lse * lse);
		}
	}
	for (i = 0; i < 2; i++) {
		if (run_spec(t, i ? SPEC("{T: 4096, V: 128256}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		                         "  - {out: loss, op: cross_entropy, in: [x, label], reduction: sum}\n", "  loss: {dtype: f32}\n")
		               : SPEC("{T: 4096, V: 128256}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		                      "  - {out: loss, op: cross_entropy, in: [x, label]}\n", "  loss: {dtype: f32}\n"), true))
			fail_msg("%s", t->msg);
		assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
		assert_true(t->c.kernel->row.chunk > 0);
		assert_int_equal(t->c.kernel->row.outer, i ? 1 : 2);
		assert_int_equal(t->c.kernel->row.columns, 0);
	}
	assert_contains(error_of(t, SPEC("{T: 4, V: 8}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: loss, op: cross_entropy, in: [x, label], lse_square_scale: -1}\n",
	                                 "  loss: {}\n"), false),
	                "expected a number of 0 or more for 'lse_square_scale', saw '-1'");
	assert_contains(error_of(t, SPEC("{T: 4, V: 8}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: loss, op: cross_entropy, in: [x, label], reduction: avg}\n", "  loss: {}\n"),
	                        false), "expected mean, none or sum for 'reduction', saw 'avg'");
}

/* cross_entropy (torch's F.cross_entropy, reduction='none'): the reference against hand values, and its errors. */
static void
cross_entropy_op(void **state)
{
	Fixture *t = *state;
	double x[12], label[] = {2, 7, 0}, loss[3];
	const double *in[] = {x, label};
	double *out[] = {loss};
	int r, c;

	for (r = 0; r < 12; r++)
		x[r] = cos(3.0 * r);
	if (run_spec(t, SPEC("{T: 3, V: 4}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                     "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none, ignore_index: 7, "
	                     "label_smoothing: 0.25}\n", "  loss: {}\n"), false))
		fail_msg("%s", t->msg);
	assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[t->c.fusion->nop - 1].out].rank, 1);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
	for (r = 0; r < 3; r++) {
		double m = -INFINITY, s = 0, mean = 0, lse, want;

		for (c = 0; c < 4; c++) {
			m = fmax(m, x[r * 4 + c]);
			mean += x[r * 4 + c] / 4;
		}
		for (c = 0; c < 4; c++)
			s += exp(x[r * 4 + c] - m);
		lse = log(s) + m;
		want = r == 1 ? 0 : 0.75 * (lse - x[r * 4 + (int)label[r]]) + 0.25 * (lse - mean);
		if (fabs(loss[r] - want) > 1e-12)
			fail_msg("row %d: %.15g, want %.15g", r, loss[r], want);
	}
	/* one row kernel, the label a row */
	if (run_spec(t, SPEC("{T: 4096, V: 128256}", "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                     "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none}\n", "  loss: {dtype: f32}\n"),
	             true))
		fail_msg("%s", t->msg);
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	/* its backward (wsfuse compile --emit=grad): one row kernel too, the per-row adjoints unsqueezed as copies */
	{
		static const char spec[] = SPEC("{T: 4096, V: 128256}",
		                                "  x: {dtype: bf16, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
		                                "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none, "
		                                "label_smoothing: 0.1}\n", "  loss: {dtype: f32}\n");
		WsfContext *ctx = wsf_context_new();
		char *yaml = NULL;
		size_t n = 0;

		assert_non_null(ctx);
		assert_int_equal(wsf_grad_string(ctx, "ce.yaml", spec, strlen(spec), &yaml, &n), WSF_OK);
		assert_non_null(strstr(yaml, "op: reshape"));
		if (run_spec(t, yaml, true))
			fail_msg("%s\n%s", t->msg, yaml);
		assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
		assert_int_equal(t->c.kernel->row.passes, 2);   /* (the max detached: no pass for its ties) */
		free(yaml);
		wsf_context_delete(ctx);
	}
	assert_contains(error_of(t, SPEC("{T: 4, V: 8}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: y, op: exp, in: [x]}\n"
	                                 "  - {out: loss, op: cross_entropy, in: [y, label], reduction: none}\n", "  loss: {}\n"),
	                        false), "the logits an input of rank 1 or more");
	assert_contains(error_of(t, SPEC("{T: 4, V: 8}", "  x: {dtype: f32, shape: [T, V]}\n  label: {dtype: int64, shape: [T]}\n",
	                                 "  - {out: loss, op: cross_entropy, in: [x, label], reduction: none, "
	                                 "label_smoothing: 1.5}\n", "  loss: {}\n"), false),
	                "expected a number from 0 to 1 for 'label_smoothing', saw '1.5'");
}

/* argmax and argmin (torch's: the first index of the max or min, int64, keepdim false by default) in a row kernel. */
static void
argmax_argmin(void **state)
{
	Fixture *t = *state;
	double x[] = {1, 5, 5, -2, 0, 0, 0, 0, -3, 7, -3, 7}, i[3], j[3];
	const double *in[] = {x};
	double *out[] = {i, j};
	const Fusion *f;
	int r;

	if (run_spec(t, SPEC("{B: 3, V: 4}", "  x: {dtype: bf16, shape: [B, V]}\n",
	                     "  - {out: i, op: argmax, in: [x], dim: -1}\n"
	                     "  - {out: j, op: argmin, in: [x], dim: 1, keepdim: true}\n", "  i: {}\n  j: {}\n"), false))
		fail_msg("%s", t->msg);
	f = t->c.fusion;
	assert_int_equal(f->tensor[fusion_find_tensor(f, intern_cstr(t->c.strs, "i"))].dtype, DT_INT64);
	assert_int_equal(f->tensor[fusion_find_tensor(f, intern_cstr(t->c.strs, "i"))].rank, 1);   /* keepdim false */
	assert_int_equal(f->tensor[fusion_find_tensor(f, intern_cstr(t->c.strs, "j"))].rank, 2);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
	for (r = 0; r < 3; r++) {   /* ties: the first */
		static const double want_i[] = {1, 0, 1}, want_j[] = {3, 0, 0};

		if (i[r] != want_i[r] || j[r] != want_j[r])
			fail_msg("row %d: argmax %g (want %g), argmin %g (want %g)", r, i[r], want_i[r], j[r], want_j[r]);
	}
	/* a row kernel: two passes over the row (the max, then the first position that holds it) */
	if (run_spec(t, SPEC("{B: 64, V: 128256}", "  x: {dtype: bf16, shape: [B, V]}\n",
	                     "  - {out: i, op: argmax, in: [x], dim: -1}\n", "  i: {}\n"), true))
		fail_msg("%s", t->msg);
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	assert_int_equal(t->c.kernel->row.passes, 2);
	/* over another dim: not yet, said at the op */
	assert_contains(error_of(t, SPEC("{B: 64, V: 256}", "  x: {dtype: bf16, shape: [B, V]}\n",
	                                 "  - {out: i, op: argmax, in: [x], dim: 0}\n", "  i: {}\n"), true),
	                "argmax and argmin reduce over the last dim, so far");
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(one_hot_shapes_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_cross_entropy, setup, teardown),
		cmocka_unit_test_setup_teardown(row_kernel, setup, teardown),
		cmocka_unit_test_setup_teardown(gather_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(argmax_argmin, setup, teardown),
		cmocka_unit_test_setup_teardown(cross_entropy_op, setup, teardown),
		cmocka_unit_test_setup_teardown(cross_entropy_reductions, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
