/*
 * lower_reduce_grid.c: the pointwise family's reductions over rows (column
 * reductions: x.sum(0), a norm's dgamma, a bias's gradient, [B, S, H].mean(1))
 * and over every element (a full sum, a per-tensor amax), run by
 * lower_pointwise.c.  Requires what it does; leaves PointwisePlan.reduce
 * and its fields (ir/plan.h), the workspace params, and the loop over the
 * CTA's items in place of the plain tile loop.
 *
 * The domain is the reductions' input: the kernel reads it tile by tile
 * as any pointwise kernel does (and stores outputs of its shape), each
 * thread adding its 8 columns of each tile into registers.  The work is cut
 * into units (a group's column tile; RED_ALL: one unit, every tile) and
 * each unit into SPLITS items of consecutive row tiles, as many as keep
 * every CTA of the grid busy: a CTA takes items CTA, CTA + NCTA, ...
 * At an item's last tile (ST_REDUCE, codegen/emit_reduce_grid.c) the CTA's
 * threads add their sums through shared memory; a unit of one item stores
 * its results, and a split one's items meet in the workspace, the last to
 * arrive adding the parts in item order.  The values computed from the
 * results (mean's division, a cast, an output's ops: PointwisePlan.late)
 * are computed there, a column a thread.  Every order is fixed: the same
 * grid gives the same bits, run after run.
 */
#include <stdarg.h>

#include "passes.h"

/* The reduction R's input's shape as [.., group dims, ones, cols]: its mode (RED_NONE: no such shape). */
static ReduceMode
mode_of(const Fusion *f, const Op *r)
{
	const Tensor *x = &f->tensor[r->in[0].tensor];
	int i;

	if (r->axis == 0 && op_naxes(r) == x->rank)
		return RED_ALL;
	for (i = r->axis + op_naxes(r); i < x->rank - 1; i++)
		if (!dim_is_one(x->dim[i]))
			return RED_NONE;
	return RED_COLUMNS;
}

/* An error at P: what is not implemented yet (WSF_ERR_UNSUPPORTED); -1. */
static int PRINTF_LIKE(3, 4)
refuse(Comp *c, Pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_verror(c, p, fmt, ap);
	va_end(ap);
	c->status = WSF_ERR_UNSUPPORTED;
	return -1;
}

/* "sub", or "sub, from 'lse'" for a step a pass made of a spec's op (a composite's expansion). */
static const char *
what(Comp *c, const Op *o)
{
	return o->origin ? arena_printf(c->arena, "%s, from '%s'", op_info[o->kind].name, o->origin) : op_info[o->kind].name;
}

/* The schedule's hints and outputs a reducing kernel cannot honour: 0, or -1 after an error. */
static int
check_frame(Comp *c, const Fusion *f, const char *red)
{
	const Schedule *s = &f->sched;
	int j;

	if (s->warp_specialize == 2)
		return refuse(c, s->ws_pos, "'warp_specialize: true' with a reduction over rows ('%s') is not "
		              "implemented yet", red);
	if (s->signal_pos.line)
		return refuse(c, s->signal_pos, "'signal' with a reduction over rows ('%s') is not implemented yet",
		              red);
	if (s->store == STORE_TMA)
		return refuse(c, s->store_pos, "'store: tma' with a reduction over rows ('%s') is not implemented yet: its "
		              "results are stored a column a thread, the rest from registers", red);
	if (f->split_out)
		return refuse(c, f->pos, "a split's parts as outputs with a reduction over rows ('%s') are not "
		              "implemented yet", red);
	for (j = 0; j < f->nout; j++) {
		if (f->out[j].alias)
			return refuse(c, f->out[j].alias_pos, "output '%s' written in place (alias) with a reduction over "
			              "rows ('%s') is not implemented yet", f->tensor[f->out[j].tensor].name, red);
		if (f->out[j].accumulate)
			return refuse(c, f->out[j].accumulate_pos, "'accumulate' (output '%s') with a reduction over rows "
			              "('%s') is not implemented yet", f->tensor[f->out[j].tensor].name, red);
	}
	return 0;
}

/* The dims of T other than 1, in order, into D; their count. */
static int
kept_dims(const Tensor *t, Dim *d)
{
	int i, n = 0;

	for (i = 0; i < t->rank; i++)
		if (!dim_is_one(t->dim[i]))
			d[n++] = t->dim[i];
	return n;
}

/*
 * May input X be read by late op O's step (after the sums meet, a column a
 * thread): a float scalar, one value a column (the rows' last dim), or one
 * a result (O's own shape), where the kernel reduces over rows (over
 * everything: scalars only)?
 */
static bool
late_input(const Fusion *f, ReduceMode mode, const Op *o, int x, const Tensor *dom)
{
	const Tensor *t = &f->tensor[x];
	Dim a[MAX_RANK], b[MAX_RANK];
	int n = kept_dims(t, a), m = kept_dims(&f->tensor[o->out], b), i;

	if (t->kind != TK_INPUT || !dtype_is_float(t->dtype))
		return false;
	if (!n)
		return true;
	if (mode != RED_COLUMNS)
		return false;
	if (n == 1 && dim_equal(a[0], dom->dim[dom->rank - 1]))
		return true;
	for (i = 0; i < n && n == m && dim_equal(a[i], b[i]); i++)
		;
	return n == m && i == n;
}

/*
 * Which tensors are late (computed from a reduction's result, in ST_REDUCE,
 * or an input read only there) and that each op fits: a reduction reads an
 * element of the rows, a late op only late values, numbers and inputs of a
 * result's shape (late_input).  0, or -1 after an error.
 */
static int
mark_late(Comp *c, const Fusion *f, ReduceMode mode, const Op *first, bool *late)
{
	const Tensor *dom = &f->tensor[first->in[0].tensor];
	Dim a[MAX_RANK], b[MAX_RANK];
	int i, j, n = kept_dims(&f->tensor[first->out], b);

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		bool any = false;

		for (j = 0; j < o->nin; j++)
			any = any || (o->in[j].tensor && late[o->in[j].tensor] && f->tensor[o->in[j].tensor].kind != TK_INPUT);
		if (op_info[o->kind].cls == CLS_REDUCE) {
			if (any)
				return refuse(c, o->pos, "cannot place '%s' (%s) in one kernel: it reduces '%s', computed from "
				              "another reduction's result (nested reductions over rows are not implemented "
				              "yet); split the fusion", f->tensor[o->out].name, what(c, o),
				              f->tensor[o->in[0].tensor].name);
			late[o->out] = true;
			continue;
		}
		if (!any)
			continue;
		for (j = 0; j < o->nin; j++) {
			int x = o->in[j].tensor, r = 0, k;

			if (!x || (late[x] && f->tensor[x].kind != TK_INPUT))
				continue;
			if (late_input(f, mode, o, x, dom)) {
				late[x] = true;   /* (read after the sums meet; late_inputs checks it is not read before) */
				continue;
			}
			for (k = 0; k < o->nin && !r; k++)   /* (the operand that is a result) */
				r = o->in[k].tensor && late[o->in[k].tensor] && f->tensor[o->in[k].tensor].kind != TK_INPUT ?
				    o->in[k].tensor : 0;
			return refuse(c, o->in[j].pos, "cannot place '%s' (%s) in one kernel: it combines '%s', a result of "
			              "a reduction over rows, with '%s', which is not one (ops after such a reduction take "
			              "its results, numbers and float inputs of a result's shape, so far); split the fusion",
			              f->tensor[o->out].name, what(c, o), f->tensor[r].name, f->tensor[x].name);
		}
		if (op_info[o->kind].cls == CLS_VIEW)
			return refuse(c, o->pos, "'%s' (%s) of '%s', a result of a reduction over rows, is not implemented "
			              "yet", f->tensor[o->out].name, what(c, o), f->tensor[o->in[0].tensor].name);
		for (j = kept_dims(&f->tensor[o->out], a) == n ? 0 : -1; j >= 0 && j < n && dim_equal(a[j], b[j]); j++)
			;
		if (j != n)   /* (a result broadcast against an input wider than it: each value is stored once) */
			return refuse(c, o->pos, "'%s' (%s) is larger than the results of the reduction over rows it "
			              "reads ('%s'): ops after such a reduction keep the results' shape, so far",
			              f->tensor[o->out].name, what(c, o), f->tensor[first->out].name);
		late[o->out] = true;
	}
	return 0;
}

/* An input read after the sums meet is read there alone: 0, or -1 after an error at an op that reads it before. */
static int
late_inputs(Comp *c, const Fusion *f, const bool *late)
{
	int i, j;

	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin && !late[f->op[i].out]; j++) {
			int x = f->op[i].in[j].tensor;

			if (x && late[x] && f->tensor[x].kind == TK_INPUT)
				return refuse(c, f->op[i].in[j].pos, "'%s' is read both by '%s', over the rows, and after the "
				              "reduction over rows; a kernel reads an input in one place, so far",
				              f->tensor[x].name, f->tensor[f->op[i].out].name);
		}
	return 0;
}

int
lower_reduce_plan(Comp *c, Kernel *k, const Fusion *f, int *domain)
{
	PointwisePlan *w = &k->pw;
	const Op *first = NULL;
	int i;

	w->late = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *w->late);
	for (i = 1; i < f->nop && !first; i++)
		if (op_info[f->op[i].kind].cls == CLS_REDUCE)
			first = &f->op[i];
	if (first && (mark_late(c, f, mode_of(f, first), first, w->late) < 0 ||
	              late_inputs(c, f, w->late) < 0))
		return -1;
	first = NULL;
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const Tensor *x;

		if (op_info[o->kind].cls != CLS_REDUCE)
			continue;
		x = &f->tensor[o->in[0].tensor];
		w->nred++;
		if (!first) {
			first = o;
			w->reduce = mode_of(f, o);
			if (check_frame(c, f, f->tensor[o->out].name) < 0)
				return -1;
		}
		if (!dtype_is_float(x->dtype))
			return refuse(c, o->pos, "'%s' (%s) reduces %s values: a reduction over rows adds float values in "
			              "f32, so far (cast it to f32)", f->tensor[o->out].name, reduce_what(c, f, o),
			              dtype_info[x->dtype].name);
		if (w->reduce == RED_NONE)   /* (the views pass put the kept dims first where its input allows) */
			return refuse(c, o->pos, "'%s' (%s) keeps dims between its reduced dims and the last, of a value "
			              "the kernel cannot read permuted (one of rand_like's numbers or of another reduction's "
			              "result), so far; split the fusion", f->tensor[o->out].name, reduce_what(c, f, o));
		if (o->axis != first->axis || op_naxes(o) != op_naxes(first) || !lower_same_shape(x, &f->tensor[first->in[0].tensor]))
			return refuse(c, o->pos, "'%s' (%s): the reductions over rows of one kernel reduce one shape over "
			              "one axis, so far (the first: '%s'); split the fusion", f->tensor[o->out].name,
			              reduce_what(c, f, o), f->tensor[first->out].name);
	}
	if (!first)
		return 0;
	*domain = first->in[0].tensor;
	return 0;
}

/* The reduction of F (all reduce the same dims of the domain). */
static const Op *
a_reduction(const Fusion *f)
{
	int i;

	for (i = 1; i < f->nop && op_info[f->op[i].kind].cls != CLS_REDUCE; i++)
		;
	return &f->op[i];
}

void
lower_reduce_tile(Kernel *k)
{
	const Fusion *f = k->fusion;
	const Tensor *d = &f->tensor[k->domain];
	const Op *r = a_reduction(f);
	int64_t g = 1;
	int rows = 1, i;

	if (k->pw.reduce != RED_COLUMNS || f->sched.ntile >= 2)
		return;
	for (i = r->axis; i < r->axis + op_naxes(r); i++)
		if (dim_value(f, d->dim[i]) <= 0 || !size_mul(g, dim_value(f, d->dim[i]), &g))   /* (unbound until launch) */
			return;
	while (rows < g && rows < k->tile_rows)   /* a group of few rows: tiles of them, not of the next group's */
		rows *= 2;
	k->tile_rows = rows;
}

/* The workspace and its switch: a unit split across CTAs meets in it (the runtime's, as stream-K's). */
void
lower_reduce_params(Comp *c, Kernel *k)
{
	int j;

	if (!k->pw.reduce)
		return;
	k->pw.work_param = kernel_add_param(c, k, PK_WORKSPACE, "red_work");
	j = kernel_add_param(c, k, PK_SIZE, "sk_on");
	k->param[j].size = SZ_SK_ON;
	k->param[j].var = kernel_add_var(c, k, "sk_on");
}

static Expr *
let(Comp *c, Kernel *k, const char *name, Expr *e, Stmt *block)
{
	return ex_var(c, lower_let(c, k, name, e, block)->u.let.var);
}

static Expr *
sk_on(Comp *c, const Kernel *k)
{
	int j;

	for (j = 1; j < k->nparam && !(k->param[j].kind == PK_SIZE && k->param[j].size == SZ_SK_ON); j++)
		;
	return ex_var(c, k->param[j].var);
}

/*
 * RED_COLUMNS: units are (group, column tile), GROUP rows a group; a unit's
 * row tiles are split into SPLITS items of PER consecutive tiles, SPLITS
 * as many as the grid has CTAs for (1 without a workspace).  The CTA's tiles
 * are its items' tiles in turn; a tile past the group's end loads rows that
 * the compute skips (ROW_END).
 */
static Stmt *
columns_loop(Comp *c, Kernel *k, Expr *group_rows, Expr **row0, Expr **col0, Expr **last)
{
	PointwisePlan *w = &k->pw;
	Expr *cta = ex_leaf(c, EX_CTA), *ncta = ex_leaf(c, EX_NCTA);
	Expr *ctiles, *units, *rtiles, *per, *items, *i, *step, *begin;
	Stmt *loop;

	ctiles = let(c, k, "col_tiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var), ex_int(c, k->tile_cols)), k->body);
	units = let(c, k, "units", ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, ex_var(c, k->rows_var), group_rows), ctiles),
	            k->body);
	rtiles = let(c, k, "group_tiles", ex_bin(c, EX_CEILDIV, group_rows, ex_int(c, k->tile_rows)), k->body);
	w->splits = let(c, k, "splits", ex_bin(c, EX_MAX, ex_int(c, 1),
	                                       ex_bin(c, EX_MUL, ex_bin(c, EX_MIN, ex_bin(c, EX_DIV, ncta, units), rtiles),
	                                              sk_on(c, k))), k->body);
	per = let(c, k, "per_item", ex_bin(c, EX_CEILDIV, rtiles, w->splits), k->body);
	items = let(c, k, "items", ex_bin(c, EX_MUL, units, w->splits), k->body);
	k->ntile_var = items->var;
	k->niter_var = lower_let(c, k, "my_tiles", ex_bin(c, EX_MUL, ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, items, cta),
	                                                                     ncta), per), k->body)->u.let.var;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->niter_var), LOOP_TILE);
	loop->comment = "this CTA's items, a tile at a time";
	st_append(c, k->body, loop);
	i = ex_var(c, loop->u.loop.var);
	w->item = let(c, k, "item", ex_bin(c, EX_ADD, cta, ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, i, per), ncta)), loop);
	step = let(c, k, "step", ex_bin(c, EX_MOD, i, per), loop);
	w->unit = let(c, k, "unit", ex_bin(c, EX_DIV, w->item, w->splits), loop);
	w->group = let(c, k, "group", ex_bin(c, EX_DIV, w->unit, ctiles), loop);
	begin = let(c, k, "first_row", ex_bin(c, EX_MUL, w->group, group_rows), loop);
	w->row_end = let(c, k, "end_row", ex_bin(c, EX_ADD, begin, group_rows), loop);
	*row0 = let(c, k, "row0", ex_bin(c, EX_ADD, begin, ex_bin(c, EX_MUL, ex_bin(c, EX_ADD,
	            ex_bin(c, EX_MUL, ex_bin(c, EX_MOD, w->item, w->splits), per), step), ex_int(c, k->tile_rows))), loop);
	*col0 = let(c, k, "col0", ex_bin(c, EX_MUL, ex_bin(c, EX_MOD, w->unit, ctiles), ex_int(c, k->tile_cols)), loop);
	w->col0 = *col0;
	w->extent = group_rows;
	*last = ex_bin(c, EX_EQ, step, ex_bin(c, EX_SUB, per, ex_int(c, 1)));
	return loop;
}

/*
 * RED_ALL: one unit of every tile, split into as many items as the grid
 * has CTAs (one without a workspace: CTA 0 takes every tile), item CTA
 * taking tiles CTA, CTA + SPLITS, ...
 */
static Stmt *
all_loop(Comp *c, Kernel *k, Expr **row0, Expr **col0, Expr **last)
{
	PointwisePlan *w = &k->pw;
	Expr *cta = ex_leaf(c, EX_CTA), *ncta = ex_leaf(c, EX_NCTA), *ctiles, *tile, *i;
	Stmt *loop;

	ctiles = let(c, k, "col_tiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var), ex_int(c, k->tile_cols)), k->body);
	k->ntile_var = lower_let(c, k, "tiles", ex_bin(c, EX_MUL, ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var),
	                                                                   ex_int(c, k->tile_rows)), ctiles),
	                         k->body)->u.let.var;
	w->splits = let(c, k, "splits", ex_bin(c, EX_MAX, ex_int(c, 1), ex_bin(c, EX_MUL, ncta, sk_on(c, k))), k->body);
	k->niter_var = lower_let(c, k, "my_tiles", ex_bin(c, EX_MUL, ex_bin(c, EX_LT, cta, w->splits),
	                                                  ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, ex_var(c, k->ntile_var),
	                                                                               cta), w->splits)),
	                         k->body)->u.let.var;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->niter_var), LOOP_TILE);
	loop->comment = "this CTA's tiles, one item";
	st_append(c, k->body, loop);
	i = ex_var(c, loop->u.loop.var);
	tile = let(c, k, "tile", ex_bin(c, EX_ADD, cta, ex_bin(c, EX_MUL, i, w->splits)), loop);
	*row0 = let(c, k, "row0", ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, tile, ctiles), ex_int(c, k->tile_rows)), loop);
	*col0 = let(c, k, "col0", ex_bin(c, EX_MUL, ex_bin(c, EX_MOD, tile, ctiles), ex_int(c, k->tile_cols)), loop);
	w->item = cta;
	w->unit = w->group = w->col0 = ex_int(c, 0);
	w->row_end = ex_var(c, k->rows_var);
	w->extent = ex_bin(c, EX_MUL, ex_var(c, k->rows_var), ex_var(c, k->cols_var));
	*last = ex_bin(c, EX_EQ, i, ex_bin(c, EX_SUB, ex_var(c, k->niter_var), ex_int(c, 1)));
	return loop;
}

/*
 * The loop over the CTA's items, appended to the body (in place of
 * lower_tile_loop's), its tile's coordinates, and LAST: true at an item's
 * last tile, where lower_reduce_finish puts the item's reduction.
 */
Stmt *
lower_reduce_loop(Comp *c, Kernel *k, Expr **row0, Expr **col0, Expr **last)
{
	const Fusion *f = k->fusion;
	const Tensor *d = &f->tensor[k->domain];
	const Op *r = a_reduction(f);
	Expr *g = NULL;
	int i, out = r->out;

	/* (named by the first reduction, as a buffer is by its tensor) */
	k->pw.scratch = kernel_add_buf(c, k, arena_printf(c->arena, "part_%s", f->tensor[out].name), BUF_PARTIAL, DT_F32,
	                               1, k->consumer_threads * 8);
	k->buf[k->pw.scratch].tensor = out;
	if (k->pw.reduce == RED_ALL) {
		k->pw.slot = 4 * k->pw.nred;
		return all_loop(c, k, row0, col0, last);
	}
	k->pw.slot = 4 * k->pw.nred * k->tile_cols;
	/* a group: the dims reduced (from the first dim: all the rows) */
	for (i = r->axis; i < r->axis + op_naxes(r) && r->axis > 0; i++)
		g = g ? ex_bin(c, EX_MUL, g, lower_extent(c, k, d, d->dim[i])) : lower_extent(c, k, d, d->dim[i]);
	return columns_loop(c, k, g ? g : ex_var(c, k->rows_var), row0, col0, last);
}

/* Appends to LOOP, at an item's last tile (LAST), the item's reduction (ST_REDUCE). */
void
lower_reduce_finish(Comp *c, Kernel *k, Stmt *loop, Expr *last)
{
	Stmt *at = st_if(c, last), *s = st_new(c, ST_REDUCE);

	at->comment = "the item's last tile: its sums meet";
	s->comment = k->pw.reduce == RED_ALL ? "the sums over every element" : "the sums over the group's rows";
	st_append(c, at, s);
	st_append(c, loop, at);
}
