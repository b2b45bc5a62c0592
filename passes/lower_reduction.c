/*
 * lower_reduction.c: the row-reduction family's lowering, run by lower.c's
 * pass: requires and leaves what pass_lower does.
 *
 * A tile is one whole row of the domain [rows, cols] (the input of the
 * first reduction): loaded by one bulk copy and computed by one compute,
 * or, when a row does not fit a stage, streamed through a loop of passes
 * over a loop of chunks (stream_row); a row that fits in registers is by
 * default loaded by the compute itself, one CTA a row.  How rows are held
 * is the kernel's RowPlan (Kernel.row).  See lower_reduction.
 */
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
 * MAX_ROW: the widest row a stage holds; CHUNK_THREADS:
 * the threads of a kernel that streams rows in chunks of 8 elements a thread.
 */
enum { ROW_ALIGN = 256, MAX_ROW = 32768, CHUNK_THREADS = 512, CHUNK = 8 * CHUNK_THREADS };

/* Does a row held in registers keep computed full-row values between passes (kir_row_kept)? */
static bool
row_keeps_values(const Fusion *f, const Kernel *k)
{
	int t;

	for (t = 1; t < f->ntensor; t++)
		if (f->tensor[t].kind == TK_VALUE && k->row.view[t] == VIEW_FULL && kir_row_kept(f, t))
			return true;
	return false;
}

/*
 * A row streamed in chunks: for each pass over the row, a loop over its
 * chunks, each brought into a stage by one bulk copy and computed by a
 * ROW_CHUNK compute; the pass ends with ROW_PASS_END (its block reductions).
 * Appended to LOOP (the row loop), between ROW_BEGIN and ROW_END.  The
 * circular_buffer pass buffers the chunk loop; its stage counter runs on
 * across passes and rows.
 */
static void
stream_row(Comp *c, Kernel *k, Stmt *loop, Expr *row0, Expr *nchunks, const char *what)
{
	Fusion *f = k->fusion;
	Stmt *passes, *chunks, *issue, *s;
	Expr *col, *pass;
	int j;

	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_BEGIN;
	s->u.compute.row = row0;
	s->comment = "the row's per-row values and accumulators";
	st_append(c, loop, s);
	passes = st_loop(c, kernel_add_var(c, k, "pass"), ex_int(c, 0), ex_int(c, k->row.passes), LOOP_SERIAL);
	passes->comment = "passes over the row: one a reduction level, then the outputs";
	st_append(c, loop, passes);
	pass = ex_var(c, passes->u.loop.var);
	chunks = st_loop(c, kernel_add_var(c, k, "ch"), ex_int(c, 0), nchunks, LOOP_SERIAL);
	chunks->comment = "the row's chunks";
	st_append(c, passes, chunks);
	col = ex_var(c, lower_let(c, k, "col", ex_bin(c, EX_MUL, ex_var(c, chunks->u.loop.var), ex_int(c, CHUNK)),
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

		if (p->kind == PK_PTR && p->arg < f->ninput && (p->view == VIEW_FULL || p->view == VIEW_ROW))
			lower_stage_input(c, k, j, "chunk", 1, CHUNK, p->view == VIEW_ROW ? ex_int(c, 0) : row0, col,
			                  issue, s);
	}
	st_append(c, chunks, s);
	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_PASS_END;
	s->u.compute.row = row0;
	s->u.compute.pass = pass;
	s->comment = "the pass's block reductions";
	st_append(c, passes, s);
	s = st_new(c, ST_COMPUTE);
	s->u.compute.phase = ROW_END;
	s->u.compute.row = row0;
	s->comment = "the per-row outputs";
	st_append(c, loop, s);
}

/* A row streamed in chunks, once a pass: its threads, stages and passes. */
static void
fit_chunks(Comp *c, Fusion *f, Kernel *k, bool full_out)
{
	int maxl;

	/*
	 * Chunks of 4096 elements, 8 a thread, four stages (a stage holds
	 * 8 KiB of each staged bf16 tensor): several CTAs per SM keep HBM
	 * busy.
	 */
	k->row.chunk = CHUNK;
	k->tile_rows = 1;
	k->tile_cols = CHUNK;
	k->consumer_threads = k->threads = CHUNK_THREADS;
	k->stages_default = 4;
	maxl = kir_row_levels(k, arena_alloc(c->arena, (size_t)f->ntensor * sizeof(int)), NULL);
	k->row.passes = maxl + full_out;
}

/* A row of CAP elements in one stage, or in registers (direct): its threads, steps and stages. */
static void
fit_row(Comp *c, Fusion *f, Kernel *k, int cap)
{
	int j, per, least, levels;
	bool direct;

	k->row.cap = cap;
	k->tile_rows = 1;
	k->tile_cols = cap;
	/*
	 * Two stages: one row computed while the next lands.  With 32 warps
	 * resident that keeps HBM busy, and more stages measured slower
	 * (docs/perf.md: 2 beat 4 and 6 on every normalization case).
	 */
	k->stages_default = 2;
	/*
	 * One CTA a row, the row loaded straight into registers (no stage,
	 * no TMA), as Triton does: with 48 warps an SM each keeping its
	 * 16-byte loads in flight, HBM stays busier than with persistent
	 * CTAs that prefetch through the stages.  The default for a row
	 * that fits in registers, unless `persistent:` or `stages:` says
	 * otherwise, or the kernel spilled in every direct form
	 * (c->row_fallback ROW_FB_PIPELINE, set by row_spill_retry when
	 * the driver lowers it again): spills cost more than the pipeline gains.
	 */
	direct = !f->sched.stages &&
	         (f->sched.persistent == 1 || (f->sched.persistent == 0 && c->row_fallback < ROW_FB_PIPELINE));
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
	 * back to 16 elements held (c->row_fallback ROW_FB_HELD).
	 */
	levels = kir_row_levels(k, arena_alloc(c->arena, (size_t)f->ntensor * sizeof(int)), NULL);
	k->row.deep = direct && c->row_fallback == ROW_FB_NONE && cap / 16 <= 1024 && !row_keeps_values(f, k) &&
	              levels >= 2;
	per = k->row.deep ? 32 : 16;
	least = k->row.deep ? 128 : LOWER_THREADS;
	k->consumer_threads = k->threads = cap / per < least ? least : cap / per > 1024 ? 1024 :
	                                   (cap / per + 31) / 32 * 32;
	j = (cap + 8 * k->threads - 1) / (8 * k->threads);
	k->row.steps = j <= per / 8 ? j : 0;
	if (direct && k->row.steps)
		k->persistent = false;
	k->row.direct = !k->persistent && k->row.steps && !f->sched.stages;
	k->row.reread = k->row.direct && c->row_fallback == ROW_FB_NONE && levels == 1;
	if (!k->persistent && !k->stages_hint)
		k->stages_hint = 1;  /* one row a CTA: one stage (a streamed row pipelines its chunks) */
}

/* The kernel's pointer parameters: the fusion's inputs that are read, then its outputs. */
static void
add_row_params(Comp *c, Fusion *f, Kernel *k)
{
	int j;

	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		int p;

		if (t->unread)
			continue;
		p = kernel_add_param(c, k, PK_PTR, t->name);

		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = t->dtype;
		k->param[p].view = k->row.view[f->input[j]];
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
 * The reduction family: whole rows of the domain [rows, cols] (the input of
 * the first reduction) per CTA iteration.  A row that fits a stage is
 * brought into one by one TMA bulk copy (1-D, of exactly the row's bytes: a
 * tensor map's 256-element boxes would take 16 operations for a 4096-wide
 * row), so global memory is read once however many passes over the row the
 * reductions need; rows stream through the circular-buffer stages, one row
 * a stage.  A row wider than MAX_ROW, or whose stage would not fit shared
 * memory, streams through the stages in chunks instead, once per pass (a
 * softmax's max and sum share one pass: online softmax).  Rows broadcast
 * over rows (weights, biases), per-row values and scalars are read from
 * global memory, where L2 and L1 keep them, as are inputs broadcast along a
 * leading dim (an attention mask [S, S] over [B*H, S, S]), at the row's
 * offset (lower_bcast.c).  The row capacity is the width
 * known at compile time rounded up to 256; wider rows at launch are refused
 * (chunked kernels take any width).
 */
static int
lower_reduction(Comp *c, Fusion *f)
{
	const Tensor *d = NULL;
	Kernel *k;
	Stmt *loop, *issue, *compute;
	Expr *row0, *col0;
	int j, cap, row_bytes = 0;
	int64_t width;
	bool full_out = false;

	for (j = 1; j < f->nop && !d; j++)
		if (op_info[f->op[j].kind].cls == CLS_REDUCE)
			d = &f->tensor[f->op[j].in[0].tensor];
	if (lower_refuse_hints(c, f, "row-reduction", true) < 0)
		return -1;
	if (f->sched.warp_specialize == 2) {
		diag_error(c, f->sched.ws_pos, "warp specialization of reduction kernels is not implemented yet");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	width = dim_value(f, d->dim[d->rank - 1]);
	if (width <= 0)
		return diag_error(c, d->pos,
		                  "the row width of '%s' (its last dim) needs a value when a reduction kernel is "
		                  "compiled: give it under sizes: or with -D", d->name);
	if (width > INT32_MAX - CHUNK)
		return diag_error(c, d->pos, "rows of %lld elements are wider than a reduction kernel takes (%d)",
		                  (long long)width, INT32_MAX - CHUNK);

	k = kernel_new(c, f);
	c->kernel = k;
	k->domain = (int)(d - f->tensor);
	k->persistent = f->sched.persistent != 1;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : d->pos;
	k->smem_budget = LOWER_SMEM_BUDGET;
	k->smem_target = LOWER_SMEM_TARGET;

	/* every tensor is a full row, a per-row value, a broadcast row or a scalar */
	k->row.view = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *k->row.view);
	for (j = 1; j < f->ntensor; j++) {
		if (f->tensor[j].unread)
			continue;
		if ((k->row.view[j] = classify_row(&f->tensor[j], d)) == VIEW_NONE)
			k->row.view[j] = lower_bcast_view(&f->tensor[j], d);
		if (k->row.view[j] == VIEW_NONE) {   /* it broadcasts (infer.c), but to more than the rows reduced */
			Buf b;

			buf_init(&b, c->arena);
			shape_print(&b, f, d);
			diag_error(c, f->tensor[j].pos, "'%s' has dims that the rows the kernel reduces, %s, lack; a "
			           "row-reduction kernel over values larger than its rows is not implemented yet",
			           f->tensor[j].name, buf_str(&b));
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	}
	for (j = 0; j < f->nout; j++)
		if (k->row.view[f->out[j].tensor] == VIEW_ROW_AT || k->row.view[f->out[j].tensor] == VIEW_COL_AT) {
			diag_error(c, f->out[j].pos, "output '%s' is broadcast along a leading dim of the rows of '%s' "
			           "(each of its elements is computed by several rows); storing it from a row-reduction "
			           "kernel is not implemented yet", f->tensor[f->out[j].tensor].name, d->name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (j = 1; j < f->nop; j++) {
		const Op *o = &f->op[j];

		if (op_info[o->kind].cls == CLS_REDUCE && k->row.view[o->in[0].tensor] != VIEW_FULL)
			return diag_error(c, o->pos,
			                  "cannot place '%s' in one row-reduction kernel: it reduces '%s', which is "
			                  "not a full row of '%s'", f->tensor[o->out].name,
			                  f->tensor[o->in[0].tensor].name, d->name);
	}
	for (j = 0; j < f->ninput; j++)
		if (k->row.view[f->input[j]] == VIEW_FULL)
			row_bytes += dtype_info[f->tensor[f->input[j]].dtype].bytes;
	for (j = 0; j < f->nout; j++)
		full_out |= k->row.view[f->out[j].tensor] == VIEW_FULL;

	cap = (int)((width + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN);
	/* a stage of whole rows must fit with its two mbarriers (16 bytes), as circular_buffer.c counts */
	if (width > MAX_ROW || (int64_t)cap * row_bytes + 16 > LOWER_SMEM_BUDGET)
		fit_chunks(c, f, k, full_out);
	else
		fit_row(c, f, k, cap);

	add_row_params(c, f, k);
	lower_size_params(c, k);
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].view == VIEW_ROW_AT || k->param[j].view == VIEW_COL_AT)
			lower_bcast_at(c, k, j, d);

	if (k->row.chunk) {
		Expr *nchunks = ex_var(c, lower_let(c, k, "nchunks", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var),
		                                                            ex_int(c, CHUNK)), k->body)->u.let.var);

		loop = lower_tile_loop(c, k, true, &row0, &col0);
		stream_row(c, k, loop, row0, nchunks, arena_printf(c->arena, "%d ops of %s", f->nop - 1, f->name));
		return 0;
	}
	loop = lower_tile_loop(c, k, true, &row0, &col0);
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

		if (p->kind != PK_PTR || p->arg >= f->ninput || p->view != VIEW_FULL)
			continue;
		/* one bulk copy of the whole row: a single TMA operation, exactly the row's bytes */
		lower_stage_input(c, k, j, "row", 1, cap, row0, ex_int(c, 0), issue, compute);
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

	return k->row.direct && (k->row.deep || k->row.reread || c->fusion->sched.persistent == 0);
}

/* It spilled: 32 elements a thread drop to 16, and 16 to the persistent pipeline (unless persistent: false). */
static void
row_spill_retry(Comp *c)
{
	c->row_fallback = c->kernel->row.deep || c->kernel->row.reread ? ROW_FB_HELD : ROW_FB_PIPELINE;
}

const LowerFamily lower_reduction_family = {
	lower_reduction,
	"a row-reduction kernel stages every input that is a full row: use fewer of them",
	row_spill_check,
	row_spill_retry,
};
