/*
 * schedule_row.c: the row-reduction family's part of the schedule pass
 * (schedule.c): its plan (plan_row), each tensor's view of the rows, how a
 * row is held (RowPlan) and the kernel's shape.  Requires a fusion that
 * schedule.c checked for the reduction family; leaves f->row, which
 * lowering reads as const and copies into the Kernel (Kernel.row), and
 * builds no IR.  It reports nothing: what the plan cannot hold (a row
 * width unbound or too wide, a tensor no view fits) lowering refuses.
 *
 * Who plans, and when: the schedule pass, under Comp.row_fallback
 * (ROW_FB_NONE but in tests); after ptxas spilled a direct row kernel,
 * the family's spill retry (lower_reduction.c) sets Comp.row_fallback and
 * plans again (schedule_row), before the driver runs the kernel passes
 * again.  Lowering never plans.
 */
#include <string.h>

#include "passes.h"

/* A tensor's shape against the reduction domain [rows..., cols]. */
static View
classify_row(const Tensor *t, const Tensor *d)
{
	int i, lead = d->rank - 1;
	bool ones = true;

	for (i = 0; i < t->rank; i++)
		ones &= dim_is_one(t->dim[i]);
	if (ones)
		return VIEW_SCALAR;
	if (lower_same_shape(t, d))
		return VIEW_FULL;
	/* a per-row value: the leading dims, then 1 (keepdim) or nothing */
	if ((t->rank == d->rank && dim_is_one(t->dim[lead])) || t->rank == lead) {
		bool rows = true;

		for (i = 0; i < lead; i++)
			rows &= dim_equal(t->dim[i], d->dim[i]);
		if (rows)
			return VIEW_COL;
	}
	/* a row broadcast over rows: [cols], or ones then cols */
	if (t->rank >= 1 && dim_equal(t->dim[t->rank - 1], d->dim[lead])) {
		for (i = 0; i + 1 < t->rank; i++)
			if (!dim_is_one(t->dim[i]))
				return VIEW_NONE;
		return VIEW_ROW;
	}
	return VIEW_NONE;
}

/*
 * ROW_ALIGN: row buffers hold the compile-time width rounded up to this;
 * MAX_ROW: the widest row a stage holds; CHUNK_THREADS: the threads of a
 * kernel that streams rows in chunks (ROW_CHUNK_COLS, 8 elements a thread).
 */
enum { ROW_ALIGN = 256, MAX_ROW = 32768, CHUNK_THREADS = ROW_CHUNK_COLS / 8 };

/* Does a row held in registers keep computed full-row values between passes (kir_row_kept)? VIEW: each tensor's. */
static bool
row_keeps_values(const Fusion *f, const View *view)
{
	int t;

	for (t = 1; t < f->ntensor; t++)
		if (f->tensor[t].kind == TK_VALUE && view[t] == VIEW_FULL && kir_row_kept(f, t))
			return true;
	return false;
}

/* Does the row draw random numbers (rand_like: Philox blocks, worth holding rather than drawing again)? */
static bool
row_draws(const Fusion *f)
{
	int i;

	for (i = 1; i < f->nop; i++)
		if (f->op[i].kind == OP_RAND_LIKE)
			return true;
	return false;
}

/* A row streamed in chunks, once a pass: its threads, stages and passes. */
static void
fit_chunks(Comp *c, const Fusion *f, RowSchedule *s, bool full_out)
{
	int maxl;

	/*
	 * Chunks of 4096 elements, 8 a thread, four stages (a stage holds
	 * 8 KiB of each staged bf16 tensor): several CTAs per SM keep HBM
	 * busy.
	 */
	s->plan.chunk = ROW_CHUNK_COLS;
	s->tile_rows = 1;
	s->tile_cols = ROW_CHUNK_COLS;
	s->threads = CHUNK_THREADS;
	s->stages_default = 4;
	maxl = kir_row_levels(f, s->plan.view, true, arena_alloc(c->arena, (size_t)f->ntensor * sizeof(int)), NULL);
	s->plan.passes = maxl + full_out;
}

/* A row of CAP elements in one stage, or in registers (direct), under fallback FB: its threads, steps and stages. */
static void
fit_row(Comp *c, const Fusion *f, RowFallback fb, RowSchedule *s, int cap)
{
	RowPlan *r = &s->plan;
	int j, per, least, levels;
	bool direct;

	r->cap = cap;
	s->tile_rows = 1;
	s->tile_cols = cap;
	/*
	 * Two stages: one row computed while the next lands.  With 32 warps
	 * resident that keeps HBM busy, and more stages measured slower
	 * (docs/perf.md: 2 beat 4 and 6 on every normalization case).
	 */
	s->stages_default = 2;
	/*
	 * One CTA a row, the row loaded straight into registers (no stage,
	 * no TMA), as Triton does: with 48 warps an SM each keeping its
	 * 16-byte loads in flight, HBM stays busier than with persistent
	 * CTAs that prefetch through the stages.  The default for a row
	 * that fits in registers, unless `persistent:` or `stages:` says
	 * otherwise, or the kernel spilled in every direct form
	 * (ROW_FB_PIPELINE, set by row_spill_retry before the row is
	 * planned again): spills cost more than the pipeline gains.
	 */
	direct = !f->sched.stages && (f->sched.persistent == 1 || (f->sched.persistent == 0 && fb < ROW_FB_PIPELINE)) &&
	         !r->columns;
	/*
	 * 16 elements a thread: rows up to 16384 wide stay in registers in two
	 * steps of 8 (codegen's register mode); wider rows take 1024 threads.
	 * A direct row with two levels of reductions (layernorm's variance)
	 * that keeps no computed full-row values between its passes holds
	 * 32, in four steps, at 40 warps an SM: its loads are a smaller part
	 * of its time, so each thread keeps more bytes in flight (softmax,
	 * which keeps exp's f32 values, would lose so).
	 *
	 * A direct row with one level of reductions (rmsnorm) loads its
	 * row again for the output pass instead of holding it across the
	 * block reduction (the first read asks L2 to keep the row, the
	 * second to drop it): 32 registers a thread, 64 warps an SM.  With
	 * two levels, three reads lost.  If either kernel spills, it drops
	 * back to 16 elements held (ROW_FB_HELD).
	 */
	levels = kir_row_levels(f, r->view, false, arena_alloc(c->arena, (size_t)f->ntensor * sizeof(int)), NULL);
	r->deep = direct && fb == ROW_FB_NONE && cap / 16 <= 1024 && !row_keeps_values(f, r->view) && levels >= 2;
	per = r->deep ? 32 : r->columns && cap <= 8192 ? 8 : 16;   /* (sums over the rows: one step, where it fits) */
	least = r->deep ? 128 : LOWER_THREADS;
	s->threads = cap / per < least ? least : cap / per > 1024 ? 1024 : (cap / per + 31) / 32 * 32;
	j = (cap + 8 * s->threads - 1) / (8 * s->threads);
	r->steps = j <= per / 8 ? j : 0;
	if (direct && r->steps)
		s->persistent = false;
	r->direct = !s->persistent && r->steps && !f->sched.stages;
	/*
	 * Sums over the rows: each thread adds its columns of the rows its CTA
	 * computes, which a persistent grid keeps few (they meet after them),
	 * and holds steps x 8 of them a reduction: four stages of the pipeline
	 * keep the next rows coming with fewer warps resident (min_ctas).
	 */
	s->persistent |= r->outer > 0;
	if (r->columns)
		s->stages_default = 4;
	r->reread = r->direct && fb == ROW_FB_NONE && levels == 1 && !row_draws(f);
	/*
	 * A direct row of at most 1024 elements would leave most of a CTA
	 * idle, and a CTA a row launches CTAs faster than an SM retires them:
	 * a row is LANES threads of up to four steps of 8 elements (so each
	 * thread keeps 64 bytes of bf16 loads in flight; one step after a
	 * spill), a CTA 256 / LANES rows, and its reductions are shuffles
	 * among the row's lanes (through the scratch past a warp's 32).
	 */
	if (r->direct && s->width <= 128 * 8 && !r->outer) {
		int threads = s->threads;

		r->steps = (int)((s->width + 7) / 8);
		if (r->steps > (fb == ROW_FB_NONE ? 4 : 1))
			r->steps = fb == ROW_FB_NONE ? 4 : 1;
		for (r->lanes = 1; r->lanes * 8 * r->steps < s->width; r->lanes *= 2)
			;
		if (r->lanes > 32 && fusion_has_op(f, OP_TOPK)) {   /* topk's selection among a row's lanes: shuffles of one warp */
			r->lanes = 0;
			r->steps = (int)((s->width + 8 * s->threads - 1) / (8 * s->threads));
		}
		r->deep = r->reread = false;   /* held, not read again */
		if (r->lanes) {
			s->threads = LOWER_THREADS;
			s->tile_rows = LOWER_THREADS / r->lanes;
		} else {
			s->threads = threads;
		}
	}
	if ((!s->persistent || r->direct) && !s->stages_hint)
		s->stages_hint = 1;  /* one row a CTA: one stage (a streamed row pipelines its chunks) */
}

/* Does reduction O reduce every dim of its input T but those of extent 1? */
static bool
reduces_all(const Fusion *f, const Op *o, const Tensor *t)
{
	int i;

	for (i = 0; i < t->rank; i++)
		if (!dim_is_one(t->dim[i]) && (i < o->axis || i >= o->axis + op_naxes(o)))
			return false;
	return true;
}

/*
 * The results the kernel computes once its CTAs' sums meet, after the rows
 * (VIEW_REDUCED, RowPlan.outer): reductions over the rows of a full row's
 * values (op_over_rows: a column a result), or of a per-row value over
 * every dim (one result: a loss summed over the rows), and the ops of such
 * results alone ("late": a mean's count, a cast).  Lowering refuses what
 * reads one of them in the rows.
 */
static void
plan_outer(const Fusion *f, View *view, RowPlan *r)
{
	int j, k;

	for (j = 1; j < f->nop; j++) {
		const Op *o = &f->op[j];
		const Tensor *in = &f->tensor[o->in[0].tensor];
		bool late = false, other = false;

		if (op_info[o->kind].cls == CLS_REDUCE) {
			if ((view[o->in[0].tensor] == VIEW_FULL && op_over_rows(f, o)) ||
			    (view[o->in[0].tensor] == VIEW_COL && reduces_all(f, o, in))) {
				view[o->out] = VIEW_REDUCED;
				r->outer++;
				r->columns += view[o->in[0].tensor] == VIEW_FULL;
			}
			continue;
		}
		for (k = 0; k < o->nin; k++)
			if (o->in[k].tensor && view[o->in[k].tensor] == VIEW_REDUCED)
				late = true;
			else if (o->in[k].tensor)
				other = true;
		if (late && !other && (op_info[o->kind].cls == CLS_UNARY || op_info[o->kind].cls == CLS_BINARY) &&
		    o->kind != OP_RAND_LIKE && o->kind != OP_POSITION && o->kind != OP_ONE_HOT)
			view[o->out] = VIEW_REDUCED;
	}
}

int
plan_row(Comp *c, const Fusion *f, RowFallback fb, RowSchedule *out)
{
	const Tensor *d = NULL;
	View *view;
	int j, cap, row_bytes = 0;
	bool full_out = false;

	memset(out, 0, sizeof *out);
	out->fallback = fb;
	for (j = 1; j < f->nop; j++)   /* the widest first (a sum of rows' losses reduces the rows' results) */
		if (((op_info[f->op[j].kind].cls == CLS_REDUCE && !op_over_rows(f, &f->op[j])) || f->op[j].kind == OP_TOPK) &&
		    (!d || f->tensor[f->op[j].in[0].tensor].rank > d->rank))
			d = &f->tensor[f->op[j].in[0].tensor];
	if (!d)
		return -1;
	out->domain = (int)(d - f->tensor);
	out->width = dim_value(f, d->dim[d->rank - 1]);
	out->persistent = f->sched.persistent != 1;
	out->stages_hint = f->sched.stages;

	/* every tensor is a full row, a per-row value, a broadcast row or a scalar (or a row or value at an offset) */
	out->plan.view = view = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *view);
	for (j = 1; j < f->ntensor; j++)
		if (view_used(f, j) && (view[j] = classify_row(&f->tensor[j], d)) == VIEW_NONE)
			view[j] = lower_bcast_view(&f->tensor[j], d);   /* (a view's source alone: none) */
	plan_outer(f, view, &out->plan);
	for (j = 1; j < f->nop; j++)   /* topk's k values or indices a row: the selection's */
		if (f->op[j].kind == OP_TOPK && view[f->op[j].in[0].tensor] == VIEW_FULL)
			view[f->op[j].out] = VIEW_SELECTED;
	for (j = 1; j < f->nop; j++)   /* and a gather at its indices, of an input read there alone (not staged) */
		if (topk_gather(f, f->op[j].out)) {
			view[f->op[j].out] = VIEW_SELECTED;
			if (view[f->op[j].in[0].tensor] == VIEW_NONE)
				view[f->op[j].in[0].tensor] = VIEW_SELECTED;
		}
	if (out->width <= 0 || out->width > ROW_MAX_WIDTH)
		return -1;
	out->planned = true;
	for (j = 0; j < f->ninput; j++)
		if (view[f->input[j]] == VIEW_FULL)
			row_bytes += dtype_info[f->tensor[f->input[j]].dtype].bytes;
	for (j = 0; j < f->nout; j++)
		full_out |= view[f->out[j].tensor] == VIEW_FULL;

	cap = (int)((out->width + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN);
	/* a stage of whole rows must fit with its two mbarriers (16 bytes), as circular_buffer.c counts */
	if (out->width > MAX_ROW || (int64_t)cap * row_bytes + 16 > LOWER_SMEM_BUDGET)
		fit_chunks(c, f, out, full_out);
	else
		fit_row(c, f, fb, out, cap);
	out->persistent |= out->plan.outer > 0;   /* (the sums meet after every CTA's rows) */
	return 0;
}

const RowSchedule *
schedule_row(Comp *c, const Fusion *f)
{
	RowSchedule *s = arena_alloc(c->arena, sizeof *s);

	plan_row(c, f, c->row_fallback, s);
	return s;
}
