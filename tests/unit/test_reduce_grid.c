/*
 * test_reduce_grid.c: a pointwise kernel's reductions over rows and over
 * every element (passes/lower_reduce_grid.c): which family takes them, the
 * plan (columns or everything, the group's extent), the kernel IR (the
 * loop over items, the reduction at an item's last tile in each circular
 * buffer loop, the scratch buffer and the workspace), which values are
 * computed once an item, and the positioned refusals.
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

#define SPEC(sizes, inputs, ops, outs) "fusion: r\nsizes: " sizes "\ninputs:\n" inputs "ops:\n" ops "outputs:\n" outs

static Kernel *
lowered(Fixture *t, const char *spec)
{
	if (run_spec(t, spec, true) != 0)
		fail_msg("%s", t->msg);
	return t->c.kernel;
}

static const char *
refused(Fixture *t, const char *spec)
{
	if (run_spec(t, spec, true) == 0)
		fail_msg("no error for: %s", spec);
	return t->msg;
}

static int
param_named(const Kernel *k, const char *name)
{
	int j;

	for (j = 1; j < k->nparam; j++)
		if (strcmp(k->param[j].name, name) == 0)
			return j;
	fail_msg("no param %s", name);
	return 0;
}

typedef struct Found {
	int reduces, in_tile_loop, computes;
} Found;

static void
count(Stmt *s, void *user)
{
	Found *n = user;

	n->reduces += s->kind == ST_REDUCE;
	n->computes += s->kind == ST_COMPUTE;
	if (s->kind == ST_LOOP && s->u.loop.kind == LOOP_TILE) {
		int i;

		for (i = 0; i < s->nbody; i++)   /* the reduction sits under the loop's if (an item's last tile) */
			if (s->body[i]->kind == ST_IF && find(s->body[i], ST_REDUCE) >= 0)
				n->in_tile_loop++;
	}
}

static Found
walk(const Kernel *k)
{
	Found n = {0, 0, 0};

	st_walk(k->body, count, &n);
	return n;
}

/* x.sum(0): columns over one group (the rows), its result a reduced pointer output, a workspace. */
static void
column_sum(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{T: 4096, H: 4096}", "  x: {dtype: bf16, shape: [T, H]}\n",
	                            "  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}\n", "  s: {dtype: f32}\n"));
	const PointwisePlan *w = kernel_pw(k);
	Found n = walk(k);
	int s = param_named(k, "s");

	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
	assert_int_equal(w->reduce, RED_COLUMNS);
	assert_false(w->flat);   /* the columns are the last dim's */
	assert_true(k->persistent);
	assert_false(k->tma_store);
	assert_int_equal(k->param[s].view, VIEW_REDUCED);
	assert_int_equal(k->param[s].kind, PK_PTR);
	assert_int_equal(k->param[w->work_param].kind, PK_WORKSPACE);
	assert_int_equal(k->buf[w->scratch].kind, BUF_PARTIAL);
	assert_int_equal(k->buf[w->scratch].cols, k->consumer_threads * 8);
	assert_int_equal(w->slot, 4 * k->tile_cols);   /* a float a column of an item's tile */
	assert_int_equal((k->consumer_threads * 8) % k->tile_cols, 0);
	assert_int_equal(w->extent->kind, EX_VAR);   /* one group: the mean's divisor is the rows */
	assert_int_equal(w->extent->var, k->rows_var);
	/* circular buffering's main and epilogue loops each compute and meet at an item's last tile */
	assert_int_equal(n.reduces, 2);
	assert_int_equal(n.in_tile_loop, 2);
	assert_int_equal(n.computes, 2);
	assert_true(w->late[t->c.fusion->out[0].tensor]);
}

/* [B, S, H].mean(1): groups of S rows, S a size param; a value of the means computed once an item. */
static void
middle_mean(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{B: 4, S: 100, H: 256}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                            "  - {out: m, op: mean, in: [x], dim: 1}\n  - {out: y, op: mul, in: [m, 0.5]}\n",
	                            "  y: {}\n  m: {dtype: f32}\n"));
	const PointwisePlan *w = kernel_pw(k);
	int d = param_named(k, "dim_S");

	assert_int_equal(w->reduce, RED_COLUMNS);
	assert_int_equal(k->param[d].size, SZ_DIM);
	assert_int_equal(w->extent->kind, EX_VAR);
	assert_int_equal(w->extent->var, k->param[d].var);
	assert_int_equal(k->param[param_named(k, "y")].view, VIEW_REDUCED);
	assert_int_equal(k->param[param_named(k, "m")].view, VIEW_REDUCED);
}

/* max(|x|) of a vector, and a scale from it: over every element, a flat view. */
static void
full_amax(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{N: 1048576}", "  x: {dtype: bf16, shape: [N]}\n",
	                            "  - {out: a, op: abs, in: [x]}\n  - {out: m, op: amax, in: [a], dim: 0}\n"
	                            "  - {out: sc, op: div, in: [448.0, m]}\n", "  sc: {dtype: f32}\n"));
	const PointwisePlan *w = kernel_pw(k);
	const Fusion *f = t->c.fusion;

	assert_int_equal(w->reduce, RED_ALL);
	assert_true(w->flat);
	assert_int_equal(w->slot, 4);
	assert_false(w->late[fusion_find_tensor(f, intern_cstr(t->c.strs, "a"))]);
	assert_true(w->late[fusion_find_tensor(f, intern_cstr(t->c.strs, "m"))]);
	assert_true(w->late[fusion_find_tensor(f, intern_cstr(t->c.strs, "sc"))]);
	assert_int_equal(walk(k).reduces, 2);
}

/* dgamma and dbeta over rows with an output of the rows' shape: one kernel, two sums an item. */
static void
weight_gradients(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{T: 1024, H: 512}",
	                            "  x: {dtype: bf16, shape: [T, H]}\n  dy: {dtype: bf16, shape: [T, H]}\n"
	                            "  rstd: {dtype: f32, shape: [T, 1]}\n  w: {dtype: bf16, shape: [H]}\n",
	                            "  - {out: xh, op: mul, in: [x, rstd]}\n  - {out: gx, op: mul, in: [dy, xh]}\n"
	                            "  - {out: dg, op: sum, in: [gx], dim: 0, keepdim: false}\n"
	                            "  - {out: db, op: sum, in: [dy], dim: 0, keepdim: false}\n"
	                            "  - {out: g, op: mul, in: [dy, w]}\n",
	                            "  dg: {dtype: f32}\n  db: {dtype: f32}\n  g: {}\n"));
	const PointwisePlan *w = kernel_pw(k);
	Buf b;

	assert_int_equal(w->nred, 2);
	assert_int_equal(w->slot, 2 * 4 * k->tile_cols);
	assert_int_equal(k->param[param_named(k, "g")].view, VIEW_FULL);
	assert_int_equal(k->param[param_named(k, "dg")].view, VIEW_REDUCED);
	assert_int_equal(k->param[param_named(k, "rstd")].view, VIEW_COL);
	buf_init(&b, t->c.arena);
	kernel_print(&b, k);
	assert_contains(buf_str(&b), "reduce dg, db over the group's rows via part_dg");
	assert_contains(buf_str(&b), "param dg: output ptr f32 [H] reduced");
}

/* What a reduction over rows cannot take yet: each refused where it is, saying why. */
static void
refusals(void **state)
{
	Fixture *t = *state;
	const char *m;

	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}\n  - {out: n, op: sum, in: [s], dim: 0}\n",
	                    "  n: {}\n"));
	assert_contains(m, "nested reductions over rows are not implemented yet");
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  w: {dtype: f32, shape: [H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}\n  - {out: y, op: mul, in: [s, w]}\n",
	                    "  y: {}\n"));
	assert_contains(m, "it combines 's', a result of a reduction over rows, with 'w'");
	m = refused(t, SPEC("{B: 4, S: 64, H: 256}", "  x: {dtype: f32, shape: [B, S, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n", "  s: {}\n"));
	assert_contains(m, "keeps dims between that axis and the last one");
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: bool, shape: [T, H]}\n",
	                    "  - {out: s, op: amax, in: [x], dim: 0}\n", "  s: {}\n"));
	assert_contains(m, "reduces bool values");
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  y: {dtype: f32, shape: [H, T]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n  - {out: r, op: sum, in: [y], dim: 0}\n",
	                    "  s: {}\n  r: {}\n"));
	assert_contains(m, "reduce one shape over one axis");
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n", "  s: {}\nschedule: {warp_specialize: true}\n"));
	assert_contains(m, "'warp_specialize: true' with a reduction over rows ('s') is not implemented yet");
	/* a row's reduction and a column's in one kernel: the row family's, which names the column's */
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n  - {out: r, op: amax, in: [x], dim: 1}\n",
	                    "  s: {}\n  r: {}\n"));
	assert_contains(m, "'s' (sum over axis 0 of 'x', rank 2)");
	assert_contains(m, "takes none over another axis");
}

/* softmax of a vector stays a row kernel's (its results meet its elements again); a vector's sum does not. */
static void
vector_routes(void **state)
{
	Fixture *t = *state;

	lowered(t, SPEC("{N: 4096}", "  x: {dtype: f32, shape: [N]}\n", "  - {out: y, op: softmax, in: [x], dim: 0}\n",
	                "  y: {}\n"));
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
	lowered(t, SPEC("{N: 4096}", "  x: {dtype: f32, shape: [N]}\n", "  - {out: y, op: sum, in: [x], dim: 0}\n",
	                "  y: {}\n"));
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
	assert_int_equal(kernel_pw(t->c.kernel)->reduce, RED_ALL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(column_sum, setup, teardown),
		cmocka_unit_test_setup_teardown(middle_mean, setup, teardown),
		cmocka_unit_test_setup_teardown(full_amax, setup, teardown),
		cmocka_unit_test_setup_teardown(weight_gradients, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(vector_routes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
