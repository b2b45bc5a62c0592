/*
 * lower_reduction.c: the row-reduction family's lowering, run by lower.c's
 * pass: requires and leaves what pass_lower does, and the fusion's plan
 * (Fusion.row, schedule_row.c) made under the current Comp.row_fallback.
 *
 * A tile is one whole row of the domain [rows, cols] (the input of the
 * first reduction): loaded by one bulk copy and computed by one compute,
 * or, when a row does not fit a stage, streamed through a loop of passes
 * over a loop of chunks (stream_row); a row that fits in registers is by
 * default loaded by the compute itself, one CTA a row.  How rows are held
 * (the RowPlan) and the kernel's shape are the plan's: lowering copies
 * them into the Kernel (Kernel.row) and builds only IR, after refusing
 * what the plan cannot hold.  Its spill retry sets Comp.row_fallback and
 * plans the fusion again (schedule_row) before the driver lowers again.
 * See lower_reduction.
 */
#include <string.h>

#include "passes.h"

/*
 * A row streamed in chunks: for each pass over the row, a loop over its
 * chunks, each brought into a stage by one bulk copy and computed by a
 * ROW_CHUNK compute; the pass ends with ROW_PASS_END (its block reductions).
 * Appended to PASSES (the loop over the passes).  The circular_buffer pass
 * buffers the chunk loop; its stage counter runs on across passes and rows.
 */
static void
stream_passes(Comp *c, Kernel *k, Stmt *passes, Expr *row0, Expr *nchunks, const char *what)
{
	Fusion *f = k->fusion;
	Stmt *chunks, *issue, *s;
	Expr *col, *pass = ex_var(c, passes->u.loop.var);
	int j;

	chunks = st_loop(c, kernel_add_var(c, k, "ch"), ex_int(c, 0), nchunks, LOOP_SERIAL);
	chunks->comment = "the row's chunks";
	st_append(c, passes, chunks);
	col = ex_var(c, lower_let(c, k, "col", ex_bin(c, EX_MUL, ex_var(c, chunks->u.loop.var), ex_int(c, k->row.chunk)),
	                          chunks)->u.let.var);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread issues the loads of the chunk";
	st_append(c, chunks, issue);
	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_CHUNK;
	s->u.compute.row = row0;
	s->u.compute.col = col;
	s->u.compute.pass = pass;
	s->comment = arena_printf(c->arena, "%s, one chunk", what);
	/*
	 * The chunk of every full row, and of every row broadcast over rows
	 * (weights, biases): read from global memory in the compute, a wide
	 * weight's loads would wait on L2 in every chunk; in the stage they
	 * arrive with the chunk.
	 */
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];

		if (p->kind == PK_PTR && p->arg < f->ninput && (p->view == VIEW_FULL || p->view == VIEW_ROW) &&
		    !p->at)   /* (a view of an input: read at its offset in the compute, views.c) */
			lower_stage_input(c, k, j, "chunk", 1, k->row.chunk, p->view == VIEW_ROW ? ex_int(c, 0) : row0, col,
			                  issue, s);
	}
	st_append(c, chunks, s);
	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_PASS_END;
	s->u.compute.row = row0;
	s->u.compute.pass = pass;
	s->comment = "the pass's block reductions";
	st_append(c, passes, s);
}

/*
 * A streamed row in LOOP (the row loop): ROW_BEGIN, the passes over it
 * (none where a topk of an input is all there is: it reads the row itself,
 * at ROW_END), ROW_END.
 */
static void
stream_row(Comp *c, Kernel *k, Stmt *loop, Expr *row0, Expr *nchunks, const char *what)
{
	Stmt *passes, *s = st_new(c, ST_COMPUTE);

	s->u.compute.phase = ROW_BEGIN;
	s->u.compute.row = row0;
	s->comment = "the row's per-row values and accumulators";
	st_append(c, loop, s);
	if (k->row.passes) {
		passes = st_loop(c, kernel_add_var(c, k, "pass"), ex_int(c, 0), ex_int(c, k->row.passes), LOOP_SERIAL);
		passes->comment = "passes over the row: one a reduction level, then the outputs";
		st_append(c, loop, passes);
		stream_passes(c, k, passes, row0, nchunks, what);
	}
	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_END;
	s->u.compute.row = row0;
	s->comment = "the per-row outputs";
	st_append(c, loop, s);
}

/* The kernel's pointer parameters: the fusion's inputs that are read, then its outputs. */
static void
add_row_params(Comp *c, Fusion *f, Kernel *k)
{
	int j;

	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		int p;

		if (!view_used(f, f->input[j]) && k->row.view[f->input[j]] != VIEW_SELECTED)
			continue;   /* unread, or read through its views alone (but a gather's at topk's indices) */
		p = kernel_add_param(c, k, PK_PTR, t->name);

		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = t->dtype;
		k->param[p].view = k->row.view[f->input[j]];
	}
	for (j = 1; j < f->nop; j++) {   /* views of inputs (views.c): the input's pointer at the row's offset */
		const Op *o = &f->op[j];
		Strided s;
		const char *why;
		int p;

		if (op_info[o->kind].cls != CLS_VIEW || !view_read_by_compute(f, o->out) ||
		    !view_strided(c, f, o->out, &s, &why))
			continue;
		p = lower_input_ptr(c, k, s.input, o->out);
		k->param[p].view = k->row.view[o->out];
		if (s.index)   /* an embedding's rows: the id's row (schedule.c took one index element a row) */
			lower_index_param(c, k, p, &s);
	}
	for (j = 0; j < f->nout; j++) {
		const Tensor *t = &f->tensor[f->out[j].tensor];
		int p = kernel_add_param(c, k, PK_PTR, t->name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = k->row.view[f->out[j].tensor];
	}
}

/*
 * What the plan's results after the rows (VIEW_REDUCED, RowPlan.outer) may
 * not be: read by an op of the rows (the results exist once every CTA's
 * rows are done), a reduction of bool values, or sums over the rows of a
 * full row where a thread does not hold the same columns of every row (a
 * row streamed in chunks, or one not held in registers).
 */
static int
refuse_outer(Comp *c, const Fusion *f, const View *view)
{
	const RowPlan *r = &f->row->plan;
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *name = f->tensor[o->out].name;

		for (j = 0; j < o->nin && view[o->out] != VIEW_REDUCED; j++)
			if (o->in[j].tensor && view[o->in[j].tensor] == VIEW_REDUCED)
				break;
		if (j < o->nin && view[o->out] != VIEW_REDUCED) {
			diag_error(c, o->in[j].pos, "'%s' (%s) reads '%s', a result over the rows beside a reduction of each "
			           "row: such a result exists once every row is done, and only ops of such results (computed "
			           "after the rows) may read it, so far; split the fusion", name, op_info[o->kind].name,
			           f->tensor[o->in[j].tensor].name);
		} else if (view[o->out] != VIEW_REDUCED || op_info[o->kind].cls != CLS_REDUCE) {
			continue;
		} else if (f->tensor[o->in[0].tensor].dtype == DT_BOOL) {
			diag_error(c, o->pos, "'%s' (%s over the rows of a bool value) beside a reduction of each row is not "
			           "implemented yet: reduce a float", name, op_info[o->kind].name);
		} else if (view[o->in[0].tensor] == VIEW_FULL && (r->chunk || !r->steps || r->lanes)) {
			diag_error(c, o->pos, "'%s' (%s over the rows) beside a reduction of rows of %lld elements is not "
			           "implemented yet: a kernel sums a full row's values over the rows where a row fits in "
			           "registers (at most 16384 elements)", name, op_info[o->kind].name,
			           (long long)f->row->width);
		} else {
			continue;
		}
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	return 0;
}

/*
 * What a row-reduction kernel refuses of fusion F under plan RS of the rows
 * D: the hints it cannot honour, a row width the plan could not take (unbound
 * or too wide), a tensor of no view of the rows, an output broadcast along
 * their leading dims, a reduction of less than a full row.  0 or -1.
 */
static int
refuse_rows(Comp *c, const Fusion *f, const RowSchedule *rs, const Tensor *d)
{
	const View *view = rs->plan.view;
	int j;

	if (lower_refuse_hints(c, f, "row-reduction", true) < 0)
		return -1;
	if (f->sched.warp_specialize == 2) {
		diag_error(c, f->sched.ws_pos, "warp specialization of reduction kernels is not implemented yet");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	for (j = 1; j < f->nop; j++)   /* its numbers are of the element's index in the row domain */
		if (f->op[j].kind == OP_RAND_LIKE && view[f->op[j].in[0].tensor] != VIEW_FULL) {
			diag_error(c, f->op[j].in[0].pos, "rand_like of '%s', which is not a full row of '%s', is not "
			           "implemented yet: its shape must be the rows'", f->tensor[f->op[j].in[0].tensor].name,
			           d->name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (j = 1; j < f->nop; j++) {   /* topk selects among a row held in registers, or an input's read again */
		const Tensor *x = &f->tensor[f->op[j].in[0].tensor];

		if (f->op[j].kind == OP_TOPK && (view[f->op[j].out] != VIEW_SELECTED || ((rs->plan.chunk ||
		                                 !rs->plan.steps) && (x->kind != TK_INPUT || view[x - f->tensor] != VIEW_FULL)))) {
			diag_error(c, f->op[j].pos, "topk of '%s' is not implemented yet%s: a kernel selects among a row it "
			           "holds in registers (at most 16384 elements), or among an input's row it reads again",
			           x->name, view[f->op[j].out] != VIEW_SELECTED ? arena_printf(c->arena, " (it is not a full "
			                                                                       "row of '%s')", d->name)
			                    : arena_printf(c->arena, " for a computed value in rows of %lld elements",
			                                   (long long)rs->width));
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	}
	if (rs->width <= 0)
		return diag_error(c, d->pos,
		                  "the row width of '%s' (its last dim) needs a value when a reduction kernel is "
		                  "compiled: give it under sizes: or with -D", d->name);
	if (rs->width > ROW_MAX_WIDTH)
		return diag_error(c, d->pos, "rows of %lld elements are wider than a reduction kernel takes (%d)",
		                  (long long)rs->width, ROW_MAX_WIDTH);
	for (j = 1; j < f->ntensor; j++)
		if (view_used(f, j) && view[j] == VIEW_NONE) {   /* it broadcasts (infer.c), but to more than the rows */
			Buf b;

			buf_init(&b, c->arena);
			shape_print(&b, f, d);
			diag_error(c, f->tensor[j].pos, "'%s' has dims that the rows the kernel reduces, %s, lack; a "
			           "row-reduction kernel over values larger than its rows is not implemented yet",
			           f->tensor[j].name, buf_str(&b));
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (j = 0; j < f->nout; j++)
		if (view[f->out[j].tensor] == VIEW_ROW_AT || view[f->out[j].tensor] == VIEW_COL_AT) {
			diag_error(c, f->out[j].pos, "output '%s' is broadcast along a leading dim of the rows of '%s' "
			           "(each of its elements is computed by several rows); storing it from a row-reduction "
			           "kernel is not implemented yet", f->tensor[f->out[j].tensor].name, d->name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (j = 1; j < f->nop; j++) {
		const Op *o = &f->op[j];

		if (op_info[o->kind].cls == CLS_REDUCE && view[o->in[0].tensor] != VIEW_FULL && view[o->out] != VIEW_REDUCED)
			return diag_error(c, o->pos,
			                  "cannot place '%s' in one row-reduction kernel: it reduces '%s', which is "
			                  "not a full row of '%s'", f->tensor[o->out].name,
			                  f->tensor[o->in[0].tensor].name, d->name);
	}
	return refuse_outer(c, f, view);
}

/*
 * Reductions over the rows beside the row's (RowPlan.outer): the workspace
 * and its switch (the runtime's, as stream-K's), a loop over the CTA's rows
 * in which SPLITS CTAs share them (one without a workspace: CTA 0 takes
 * every row), and after it the CTAs' sums meeting (ST_ROW_MEET).  Sums of a
 * full row's values need a thread to hold the same columns of every row: a
 * row in registers, whole (refuse_outer).
 */
static Stmt *
outer_loop(Comp *c, Kernel *k, Expr **row0)
{
	Expr *cta = ex_leaf(c, EX_CTA), *ncta = ex_leaf(c, EX_NCTA), *on, *n;
	Stmt *loop, *meet;
	int j;

	k->row.work_param = kernel_add_param(c, k, PK_WORKSPACE, "red_work");
	k->row.slot = 4 * (k->row.columns * k->row.cap + k->row.outer - k->row.columns);
	j = kernel_add_param(c, k, PK_SIZE, "sk_on");
	k->param[j].size = SZ_SK_ON;
	k->param[j].var = kernel_add_var(c, k, "sk_on");
	on = ex_var(c, k->param[j].var);
	k->row.splits = n = ex_var(c, lower_let(c, k, "splits", ex_bin(c, EX_MAX, ex_int(c, 1), ex_bin(c, EX_MUL, ncta, on)),
	                                        k->body)->u.let.var);
	k->ntile_var = k->rows_var;
	k->niter_var = lower_let(c, k, "my_rows", ex_bin(c, EX_MUL, ex_bin(c, EX_LT, cta, n),
	                                                 ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, ex_var(c, k->rows_var), cta),
	                                                        n)), k->body)->u.let.var;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->niter_var), LOOP_TILE);
	loop->comment = "this CTA's rows";
	st_append(c, k->body, loop);
	meet = st_new(c, ST_ROW_MEET);
	meet->comment = "the results over the rows: the CTAs' sums meet through the workspace";
	st_append(c, k->body, meet);
	*row0 = ex_var(c, lower_let(c, k, "row0", ex_bin(c, EX_ADD, cta, ex_bin(c, EX_MUL, ex_var(c, loop->u.loop.var), n)),
	                            loop)->u.let.var);
	return loop;
}

/*
 * The reduction family: whole rows of the domain [rows, cols] (the input of
 * the first reduction) per CTA iteration.  A row that fits a stage is
 * brought into one by one TMA bulk copy (1-D, of exactly the row's bytes: a
 * tensor map's 256-element boxes would take 16 operations for a 4096-wide
 * row), so global memory is read once however many passes over the row the
 * reductions need; rows stream through the circular-buffer stages, one row
 * a stage.  A row wider than a stage holds (MAX_ROW, schedule_row.c), or
 * whose stage would not fit shared memory, streams through the stages in
 * chunks instead, once per pass (a softmax's max and sum share one pass:
 * online softmax).  Rows broadcast over rows (weights, biases), per-row
 * values and scalars are read from global memory, where L2 and L1 keep
 * them, as are inputs broadcast along a leading dim (an attention mask
 * [S, S] over [B*H, S, S]), at the row's offset (lower_bcast.c).  The row
 * capacity is the width known at compile time rounded up to 256; wider rows
 * at launch are refused (chunked kernels take any width).  Which of these
 * the kernel does is the plan's (Fusion.row); lowering builds it.
 */
static int
lower_reduction(Comp *c, Fusion *f)
{
	const RowSchedule *rs = f->row;
	const Tensor *d;
	Kernel *k;
	Stmt *loop, *issue, *compute;
	Expr *row0, *col0, *nchunks = NULL;
	int j;

	if (!rs || rs->fallback != c->row_fallback)
		return diag_internal(c, "lower_reduction", "a row-reduction fusion not planned under its fallback");
	d = &f->tensor[rs->domain];
	if (refuse_rows(c, f, rs, d) < 0)
		return -1;

	/* the plan, copied: how rows are held, each tensor's view of them, the kernel's shape */
	k = kernel_new(c, f);
	c->kernel = k;
	k->domain = rs->domain;
	k->row = rs->plan;
	k->row.view = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *k->row.view);
	memcpy(k->row.view, rs->plan.view, (size_t)f->ntensor * sizeof *k->row.view);
	k->persistent = rs->persistent;
	k->stages_hint = rs->stages_hint;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : d->pos;
	k->stages_default = rs->stages_default;
	k->smem_budget = LOWER_SMEM_BUDGET;
	k->smem_target = LOWER_SMEM_TARGET;
	k->tile_rows = rs->tile_rows;
	k->tile_cols = rs->tile_cols;
	k->consumer_threads = k->threads = rs->threads;

	add_row_params(c, f, k);
	lower_size_params(c, k);
	for (j = 1; j < k->nparam; j++)
		if (kparam_is_view(f, &k->param[j])) {
			Strided s;
			const char *why;

			view_strided(c, f, k->param[j].tensor, &s, &why);   /* a view: its offset, whatever its shape */
			lower_strided_at(c, k, j, d, &s);
			if (s.index)
				lower_index_at(c, k, d, &k->param[j], &s);
			if (s.index && s.gather)   /* one element a row (views.c): a value outside 0..n-1 reads 0 */
				((KBounds *)k->param[j].bounds)->index_n =
					lower_extent(c, k, d, f->tensor[s.input].dim[s.index_dim]);
		} else if (k->param[j].view == VIEW_ROW_AT || k->param[j].view == VIEW_COL_AT) {
			lower_bcast_at(c, k, j, d);
		}

	if (k->row.chunk)
		nchunks = ex_var(c, lower_let(c, k, "nchunks", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var),
		                                                      ex_int(c, k->row.chunk)), k->body)->u.let.var);
	if (k->row.outer) {   /* the CTAs' rows, and after them their sums meeting */
		loop = outer_loop(c, k, &row0);
		col0 = ex_int(c, 0);
	} else {
		loop = lower_tile_loop(c, k, true, &row0, &col0);
	}
	if (k->row.chunk) {
		stream_row(c, k, loop, row0, nchunks, arena_printf(c->arena, "%d ops of %s", f->nop - 1, f->name));
		return 0;
	}
	compute = st_new(c, ST_COMPUTE);
	compute->u.compute.row = row0;
	compute->u.compute.col = col0;
	compute->comment = arena_printf(c->arena, "%d ops of %s over one row", f->nop - 1, f->name);
	if (k->row.direct) {
		/* no stage: the compute loads its inputs from global memory itself */
		st_append(c, loop, compute);
		return 0;
	}
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread issues the loads of the row";
	st_append(c, loop, issue);
	/* a row in registers is read from its stage once, before the first block reduction's barrier */
	compute->u.compute.releases = k->row.steps > 0;
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];

		if (p->kind != PK_PTR || p->arg >= f->ninput || p->view != VIEW_FULL || p->at)
			continue;
		/* one bulk copy of the whole row: a single TMA operation, exactly the row's bytes */
		lower_stage_input(c, k, j, "row", 1, k->row.cap, row0, ex_int(c, 0), issue, compute);
	}
	st_append(c, loop, compute);
	return 0;
}

/*
 * A direct kernel (one CTA a row, the row in registers) in a form with a
 * fallback: compiled to see whether ptxas spilled its registers.
 */
static bool
row_spill_check(const Comp *c)
{
	const Kernel *k = c->kernel;

	return k->row.direct && (k->row.deep || k->row.reread || (k->row.lanes && k->row.steps > 1) ||
	                         c->fusion->sched.persistent == 0);
}

/*
 * It spilled: 32 elements a thread drop to 16, a narrow row's lanes to one
 * step of 8, and 16 to the persistent
 * pipeline (unless persistent: false); the fusion is planned again under
 * that fallback, for the driver to lower it again.
 */
static void
row_spill_retry(Comp *c)
{
	const RowPlan *r = &c->kernel->row;

	c->row_fallback = r->deep || r->reread || (r->lanes && r->steps > 1) ? ROW_FB_HELD : ROW_FB_PIPELINE;
	c->fusion->row = schedule_row(c, c->fusion);
}

const LowerFamily lower_reduction_family = {
	lower_reduction,
	"a row-reduction kernel stages every input that is a full row: use fewer of them",
	row_spill_check,
	row_spill_retry,
};
