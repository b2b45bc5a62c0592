/*
 * test_reduce_grid.c: a pointwise kernel's reductions over rows and over
 * every element (passes/lower_reduce_grid.c): which family takes them, the
 * plan (columns or everything, the group's extent), the kernel IR (the
 * loop over items, the reduction at an item's last tile in each circular
 * buffer loop, the scratch buffer and the workspace), which values are
 * computed once an item, and the positioned refusals.
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

/*
 * Kept dims after the reduced ones: [B, S, H].sum(0), and (x * y).sum([0, 2],
 * keepdim) of [A, B, C, D].  Infer puts a permute in front (the kept dims
 * first, the last last), the views pass moves it to the inputs, and the
 * kernel reduces groups of rows; the host reference's sums (of the fusion
 * as rewritten) are the sums over the dims as written, worked out here.
 */
static void
kept_dims_after(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{B: 4, S: 100, H: 256}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                            "  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}\n", "  s: {dtype: f32}\n"));
	const Fusion *f = t->c.fusion;
	const Tensor *r;
	double x[192], y[192], m[24], want[24];
	const double *in[] = {x, y};
	double *out[] = {m};
	int a, b, c, d;

	assert_int_equal(f->op[1].kind, OP_PERMUTE);
	assert_string_equal(f->tensor[f->op[1].out].name, "s.permuted");
	assert_int_equal(f->op[1].dims[0], 1);
	assert_int_equal(f->op[1].dims[1], 0);
	assert_int_equal(f->op[1].dims[2], 2);
	assert_int_equal(f->op[2].kind, OP_SUM);
	assert_int_equal(f->op[2].axis, 1);
	assert_int_equal(op_naxes(&f->op[2]), 1);
	r = &f->tensor[f->op[2].out];
	assert_int_equal(r->rank, 2);
	assert_string_equal(f->sym[r->dim[0].sym].name, "S");
	assert_string_equal(f->sym[r->dim[1].sym].name, "H");
	assert_int_equal(kernel_pw(k)->reduce, RED_COLUMNS);
	assert_int_equal(kernel_pw(k)->extent->kind, EX_VAR);   /* a group: the B rows of one s */
	assert_int_equal(kernel_pw(k)->extent->var, k->param[param_named(k, "dim_B")].var);

	k = lowered(t, SPEC("{A: 2, B: 3, C: 4, D: 8}", "  x: {dtype: f32, shape: [A, B, C, D]}\n"
	                    "  y: {dtype: f32, shape: [A, B, C, D]}\n",
	                    "  - {out: p, op: mul, in: [x, y]}\n  - {out: m, op: sum, in: [p], dim: [2, 0], keepdim: true}\n",
	                    "  m: {}\n"));
	f = t->c.fusion;
	r = &f->tensor[f->out[0].tensor];
	assert_int_equal(r->rank, 4);   /* the user's keepdim shape [1, B, 1, D] */
	assert_int_equal(r->dim[0].ext, 1);
	assert_string_equal(f->sym[r->dim[1].sym].name, "B");
	assert_int_equal(r->dim[2].ext, 1);
	assert_string_equal(f->sym[r->dim[3].sym].name, "D");
	assert_int_equal(kernel_pw(k)->reduce, RED_COLUMNS);
	assert_int_equal(kernel_pw(k)->extent->kind, EX_MUL);   /* a group: A x C rows */
	assert_int_equal(k->param[param_named(k, "m.reduced.permuted.x")].view, VIEW_ROW_AT);   /* a row of D at its strides */
	for (a = 0; a < 192; a++) {
		x[a] = (a * 37 % 11) - 5;
		y[a] = (a * 13 % 7) - 3;
	}
	assert_int_equal(rt_reference(&t->c, f, in, out), WSF_OK);
	for (b = 0; b < 3; b++)
		for (d = 0; d < 8; d++) {
			want[b * 8 + d] = 0;
			for (a = 0; a < 2; a++)
				for (c = 0; c < 4; c++) {
					int i = ((a * 3 + b) * 4 + c) * 8 + d;

					want[b * 8 + d] += x[i] * y[i];
				}
			assert_true(m[b * 8 + d] == want[b * 8 + d]);
		}
}

/* dim: [LIST]: torch's dy.sum((0, 1)) over [B, S, H] is a column sum over all the rows; every dim, over everything. */
static void
dim_lists(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{B: 4, S: 100, H: 256}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                            "  - {out: s, op: sum, in: [x], dim: [1, 0], keepdim: false}\n", "  s: {dtype: f32}\n"));
	const Fusion *f = t->c.fusion;

	assert_int_equal(f->op[1].axis, 0);
	assert_int_equal(f->op[1].naxes, 2);
	assert_string_equal(f->tensor[f->op[1].out].name, "s");
	assert_int_equal(f->tensor[f->op[1].out].rank, 1);
	assert_int_equal(kernel_pw(k)->reduce, RED_COLUMNS);
	assert_int_equal(kernel_pw(k)->extent->var, k->rows_var);   /* (B S rows: one group) */
	k = lowered(t, SPEC("{R: 64, C: 256}", "  x: {dtype: bf16, shape: [R, C]}\n",
	                    "  - {out: a, op: abs, in: [x]}\n  - {out: m, op: amax, in: [a], dim: [0, -1]}\n",
	                    "  m: {dtype: f32}\n"));
	assert_int_equal(kernel_pw(k)->reduce, RED_ALL);
	assert_true(kernel_pw(k)->flat);
	assert_int_equal(t->c.fusion->tensor[t->c.fusion->op[2].out].rank, 2);   /* keepdim: [1, 1] */
	/* dims 1 and 2 of [B, S, H] end at the last: a row's reduction, which the row kernel does not take yet */
	assert_contains(refused(t, SPEC("{B: 4, S: 100, H: 256}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                                "  - {out: s, op: sum, in: [x], dim: [1, 2]}\n", "  s: {dtype: f32}\n")),
	                "(sum over dims 1, 2 of 'x', rank 3)");
}

/*
 * The loop over items, run on the host: the kernel IR's lets evaluated as
 * the CUDA computes them (divisions of 32-bit unsigned values, as wsf_udiv)
 * for every CTA of a grid.  Every tile of every group is computed once,
 * each item's tiles by one CTA in a row, its sums meeting at its last
 * tile, and each unit's items are SPLITS distinct items that all meet.
 */
typedef struct Env {
	int64_t *var;
	int64_t cta, ncta;
} Env;

static int64_t
ev(const Env *v, const Expr *x)
{
	int64_t a = x->a ? ev(v, x->a) : 0, b = x->b ? ev(v, x->b) : 0;

	switch (x->kind) {
	case EX_INT: return x->ival;
	case EX_VAR: return v->var[x->var];
	case EX_CTA: return v->cta;
	case EX_NCTA: return v->ncta;
	case EX_ADD: return a + b;
	case EX_SUB: return a - b;
	case EX_MUL: return a * b;
	case EX_DIV: assert_true(a >= 0 && a < (1LL << 32) && b > 0); return (uint32_t)a / (uint32_t)b;
	case EX_MOD: assert_true(a >= 0 && a < (1LL << 32) && b > 0); return (uint32_t)a % (uint32_t)b;
	case EX_MIN: return a < b ? a : b;
	case EX_MAX: return a > b ? a : b;
	case EX_CEILDIV: return (a + b - 1) / b;
	case EX_LT: return a < b;
	case EX_EQ: return a == b;
	default: fail_msg("expression kind %d in a reduction's loop", x->kind);
	}
	return 0;
}

static void
run_lets(Env *v, const Stmt *block)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == ST_LET)
			v->var[block->body[i]->u.let.var] = ev(v, block->body[i]->u.let.value);
}

/* The loop whose body computes (circular buffering's main copy: its lets are the epilogue's too). */
static const Stmt *
compute_loop(const Stmt *block)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == ST_LOOP && find(block->body[i], ST_COMPUTE) >= 0)
			return block->body[i];
	fail_msg("no loop that computes");
	return NULL;
}

static int64_t
var_of(const Kernel *k, const char *name)
{
	int i;

	for (i = 1; i < k->nvar && strcmp(k->var[i].name, name) != 0; i++)
		;
	assert_true(i < k->nvar);
	return i;
}

/* Runs K's items on NCTA CTAs over ROWS x COLS (GROUP rows a group; SK_ON: a workspace) and checks them. */
static void
check_items(const Kernel *k, int64_t rows, int64_t cols, int dim_param, int64_t group, int64_t ncta, int sk_on)
{
	const Stmt *loop = compute_loop(k->body), *at = NULL;
	const PointwisePlan *w = kernel_pw(k);
	int64_t ctiles = (cols + k->tile_cols - 1) / k->tile_cols, gtiles = (group + k->tile_rows - 1) / k->tile_rows;
	int64_t groups = rows / group, ntiles = groups * gtiles * ctiles, i, cta;
	int64_t units = w->reduce == RED_ALL ? 1 : groups * ctiles;   /* (over everything: one unit) */
	int *seen = calloc((size_t)ntiles, sizeof *seen), *met = calloc((size_t)units, sizeof *met);
	int64_t *item_of = calloc((size_t)ntiles, sizeof *item_of), splits = 0;
	Env v = {calloc((size_t)k->nvar, sizeof *v.var), 0, ncta};
	int j;

	for (j = 0; j < loop->nbody; j++)
		if (loop->body[j]->kind == ST_IF && find(loop->body[j], ST_REDUCE) >= 0)
			at = loop->body[j];
	assert_non_null(at);
	v.var[k->rows_var] = rows;
	v.var[k->cols_var] = cols;
	v.var[var_of(k, "sk_on")] = sk_on;
	if (dim_param)
		v.var[k->param[dim_param].var] = group;
	for (cta = 0; cta < ncta; cta++) {
		int64_t item = -1, tiles = 0;

		v.cta = cta;
		run_lets(&v, k->body);
		splits = ev(&v, w->splits);
		for (i = 0; i < v.var[k->niter_var]; i++) {
			int64_t row0, col0, t;

			v.var[loop->u.loop.var] = i;
			run_lets(&v, loop);
			if (item != ev(&v, w->item)) {   /* a new item: the last one met at its last tile */
				assert_int_equal(tiles, 0);
				item = ev(&v, w->item);
			}
			row0 = v.var[var_of(k, "row0")];
			col0 = v.var[var_of(k, "col0")];
			tiles++;
			if (row0 < ev(&v, w->row_end)) {
				assert_int_equal(ev(&v, w->group), row0 / group);
				t = ((row0 / group) * gtiles + (row0 % group) / k->tile_rows) * ctiles + col0 / k->tile_cols;
				assert_int_equal((row0 % group) % k->tile_rows, 0);
				assert_in_range(t, 0, ntiles - 1);
				seen[t]++;
				item_of[t] = item;
			}
			if (ev(&v, at->u.branch.cond)) {
				met[ev(&v, w->unit)]++;
				tiles = 0;
			}
		}
		assert_int_equal(tiles, 0);   /* the CTA's last item met */
	}
	for (i = 0; i < ntiles; i++)
		if (seen[i] != 1)
			fail_msg("tile %lld computed %d times (rows %lld, cols %lld, %lld CTAs)", (long long)i, seen[i],
			         (long long)rows, (long long)cols, (long long)ncta);
	for (i = 0; i < units; i++)
		if (met[i] != splits)
			fail_msg("unit %lld met %d times, not %lld (rows %lld, cols %lld, group %lld, %lld CTAs, sk_on %d)",
			         (long long)i, met[i], (long long)splits, (long long)rows, (long long)cols, (long long)group,
			         (long long)ncta, sk_on);
	assert_true(sk_on || splits == 1);
	free(seen), free(met), free(item_of), free(v.var);
}

static void
items_cover(void **state)
{
	Fixture *t = *state;
	Kernel *k = lowered(t, SPEC("{T: 4096, H: 4096}", "  x: {dtype: bf16, shape: [T, H]}\n",
	                            "  - {out: s, op: sum, in: [x], dim: 0}\n", "  s: {dtype: f32}\n"));
	static const int64_t sizes[][2] = {{1, 8}, {7, 4104}, {4097, 24}, {100003, 64}, {65, 2048}, {4096, 4096}};
	static const int64_t grids[] = {1, 7, 132, 528, 1024};
	size_t a, b;

	for (a = 0; a < countof(sizes); a++)
		for (b = 0; b < countof(grids); b++) {
			check_items(k, sizes[a][0], sizes[a][1], 0, sizes[a][0], grids[b], 1);
			check_items(k, sizes[a][0], sizes[a][1], 0, sizes[a][0], grids[b], 0);
		}
	k = lowered(t, SPEC("{B: 8, S: 1000, H: 1032}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                    "  - {out: m, op: mean, in: [x], dim: 1}\n", "  m: {dtype: f32}\n"));
	for (b = 0; b < countof(grids); b++) {
		check_items(k, 8 * 1000, 1032, param_named(k, "dim_S"), 1000, grids[b], 1);
		check_items(k, 300 * 3, 264, param_named(k, "dim_S"), 3, grids[b], 1);
		check_items(k, 1, 8, param_named(k, "dim_S"), 1, grids[b], 1);
	}
	k = lowered(t, SPEC("{N: 1000003}", "  x: {dtype: f32, shape: [N]}\n",
	                    "  - {out: m, op: amax, in: [x], dim: 0}\n", "  m: {dtype: f32}\n"));
	for (b = 0; b < countof(grids); b++) {   /* over everything: one group of every row, one unit */
		check_items(k, 31250, 32, 0, 31250, grids[b], 1);
		check_items(k, 1, 1000003, 0, 1, grids[b], 1);
		check_items(k, 1, 1000003, 0, 1, grids[b], 0);
	}
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
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  w: {dtype: f32, shape: [T, 1]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n  - {out: y, op: mul, in: [s, w]}\n",
	                    "  y: {}\n"));
	assert_contains(m, "it combines 's', a result of a reduction over rows, with 'w'");
	/* inputs after the sums meet: a column's and a scalar, read by pointer there alone */
	{
		Kernel *k = lowered(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  old: {dtype: f32, shape: [H]}\n"
		                            "  lr: {dtype: f32, shape: [1]}\n",
		                            "  - {out: m, op: amax, in: [x], dim: 0, keepdim: false}\n"
		                            "  - {out: n, op: maximum, in: [m, old]}\n  - {out: y, op: mul, in: [n, lr]}\n",
		                            "  y: {}\n"));

		assert_int_equal(k->param[param_named(k, "old")].view, VIEW_REDUCED);
		assert_int_equal(k->param[param_named(k, "old")].kind, PK_PTR);
		assert_int_equal(k->param[param_named(k, "lr")].view, VIEW_REDUCED);
	}
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  w: {dtype: f32, shape: [H]}\n",
	                    "  - {out: xw, op: mul, in: [x, w]}\n  - {out: s, op: sum, in: [xw], dim: 0, keepdim: false}\n"
	                    "  - {out: y, op: mul, in: [s, w]}\n", "  y: {}\n"));
	assert_contains(m, "'w' is read both by 'xw', over the rows, and after the reduction over rows");
	m = refused(t, SPEC("{B: 4, S: 64, H: 256}", "  x: {dtype: f32, shape: [B, S, H]}\n  w: {dtype: f32, shape: [H, 1]}\n",
	                    "  - {out: m, op: mean, in: [x], dim: 1}\n  - {out: y, op: mul, in: [m, w]}\n", "  y: {}\n"));
	assert_contains(m, "'y' (mul) is larger than the results of the reduction over rows it reads ('m')");
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n  c: {dtype: bool, shape: [H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}\n"
	                    "  - {out: y, op: where, in: [c, 1.0, s]}\n", "  y: {}\n"));
	assert_contains(m, "it combines 's', a result of a reduction over rows, with 'c'");
	m = refused(t, SPEC("{B: 4, S: 64, H: 256}", "  x: {dtype: f32, shape: [B, S, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: [0, 2]}\n", "  s: {}\n"));
	assert_contains(m, "not consecutive, the last one among them");
	m = refused(t, SPEC("{B: 4, S: 64, H: 256}", "  x: {dtype: f32, shape: [B, S, H]}\n  seed: {dtype: int64, shape: []}\n"
	                    "  offset: {dtype: int64, shape: []}\n",
	                    "  - {out: u, op: rand_like, in: [x, seed, offset]}\n  - {out: y, op: mul, in: [x, u]}\n"
	                    "  - {out: s, op: sum, in: [y], dim: 0}\n", "  s: {}\n"));
	assert_contains(m, "'s' (sum over axis 0 of 'y') keeps dims between its reduced dims and the last");
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
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
	m = refused(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [2, T, H]}\n",
	                    "  - {out: s, op: sum, in: [x], dim: 0}\n  - {out: r, op: amax, in: [x], dim: 2}\n",
	                    "  s: {}\n  r: {}\n"));
	assert_contains(m, "'s' (sum over axis 0 of 'x', rank 3)");
	assert_contains(m, "takes others only over every dim but the last");
	assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
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

/*
 * var and std over rows (BatchNorm's statistics) and over everything: sums
 * of x shifted by its first element, placed in a pointwise kernel; the
 * reference against the two-pass formula on data far from 0 (where the
 * raw sums would cancel); over the last dim alone, still a row kernel's.
 */
static void
variance_over_rows(void **state)
{
	Fixture *t = *state;
	double x[5 * 3], v[3], sd[1], want;
	const double *in[] = {x};
	double *out[] = {v, sd};
	int r, c;

	for (r = 0; r < 15; r++)
		x[r] = 1000.0 + sin(r * 1.7);
	if (run_spec(t, SPEC("{T: 5, H: 3}", "  x: {dtype: f32, shape: [T, H]}\n",
	                     "  - {out: v, op: var, in: [x], dim: 0}\n"
	                     "  - {out: sd, op: std, in: [x], dim: [0, 1], correction: 0}\n", "  v: {}\n  sd: {}\n"), false))
		fail_msg("%s", t->msg);
	if (rt_reference(&t->c, t->c.fusion, in, out) != WSF_OK)
		fail_msg("reference: %s", t->msg);
	for (c = 0; c < 3; c++) {
		double m = 0, q = 0;

		for (r = 0; r < 5; r++)
			m += x[r * 3 + c] / 5;
		for (r = 0; r < 5; r++)
			q += (x[r * 3 + c] - m) * (x[r * 3 + c] - m);
		if (fabs(v[c] - q / 4) > 1e-9 * (q / 4))
			fail_msg("column %d: %.15g, want %.15g", c, v[c], q / 4);
	}
	for (r = 0, want = 0; r < 15; r++)
		want += x[r] / 15;
	{
		double q = 0;

		for (r = 0; r < 15; r++)
			q += (x[r] - want) * (x[r] - want);
		if (fabs(sd[0] - sqrt(q / 15)) > 1e-9)
			fail_msg("std: %.15g, want %.15g", sd[0], sqrt(q / 15));
	}
	lowered(t, SPEC("{B: 8, S: 64, H: 256}", "  x: {dtype: bf16, shape: [B, S, H]}\n",
	                "  - {out: v, op: var, in: [x], dim: [0, 1]}\n", "  v: {dtype: f32}\n"));
	assert_int_equal(t->c.fusion->family, FAM_POINTWISE);
	assert_int_equal(kernel_pw(t->c.kernel)->reduce, RED_COLUMNS);
	assert_int_equal(kernel_pw(t->c.kernel)->nred, 3);   /* the shifted sum, its squares' and the count */
	lowered(t, SPEC("{N: 100000}", "  x: {dtype: f32, shape: [N]}\n", "  - {out: v, op: std, in: [x], dim: 0}\n",
	                "  v: {}\n"));
	assert_int_equal(kernel_pw(t->c.kernel)->reduce, RED_ALL);
	lowered(t, SPEC("{T: 64, H: 256}", "  x: {dtype: f32, shape: [T, H]}\n", "  - {out: v, op: var, in: [x], dim: -1}\n",
	                "  v: {}\n"));
	assert_int_equal(t->c.fusion->family, FAM_REDUCTION);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(column_sum, setup, teardown),
		cmocka_unit_test_setup_teardown(middle_mean, setup, teardown),
		cmocka_unit_test_setup_teardown(full_amax, setup, teardown),
		cmocka_unit_test_setup_teardown(weight_gradients, setup, teardown),
		cmocka_unit_test_setup_teardown(kept_dims_after, setup, teardown),
		cmocka_unit_test_setup_teardown(dim_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(items_cover, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(vector_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(variance_over_rows, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
