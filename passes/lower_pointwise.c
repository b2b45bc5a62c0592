/*
 * lower_pointwise.c: the pointwise family's lowering, run by lower.c's
 * pass: requires and leaves what pass_lower does.
 *
 * The domain is the outputs' shape seen as 2-D [rows, cols] (cols the last
 * dim); in a kernel that reduces over rows or everything, the reductions'
 * input (lower_reduce_grid.c: its items' loop, the results stored where
 * their sums meet).  Each input is full ([rows, cols], tiled by TMA), a row ([cols],
 * broadcast over rows, tiled by TMA), a column ([rows, 1], read from
 * global: a TMA box must be 16 bytes wide) or a scalar; an input broadcast
 * along a leading dim ([T, 1, D] over [T, NH, D]) is read from global at
 * its row's offset (lower_bcast.c: a row, or one element).  When every input
 * is full or scalar the kernel is "flat": the host may pick any 2-D view of
 * the elements, so a 1-D tensor still moves in wide tiles.  A tile [1, C]
 * wider than a TMA box moves by 1-D bulk copies instead (loads, and stores
 * from the staging buffer), and its row inputs are read where they are
 * used.  A tile leaves room for one stage (the schedule's stages, when the
 * compiler chose the tile) and the output staging copies in shared memory
 * (fit_tile).
 */
#include <string.h>

#include "passes.h"

enum {
	STAGE_TARGET = 32 * 1024, /* bytes one stage should move */
	MAX_RUN = 16384,          /* the widest one-row pointwise tile */
	THREAD_VEC = 8            /* the consecutive elements a compute thread holds (codegen's VEC) */
};

/* How input T maps onto domain D; VIEW_NONE when it cannot. */
static View
classify(const Tensor *t, const Tensor *d)
{
	int i, off = d->rank - t->rank;
	bool all_one = true, lead_full = true, lead_one = true;

	for (i = 0; i < t->rank; i++)
		if (!dim_is_one(t->dim[i]))
			all_one = false;
	if (all_one)
		return VIEW_SCALAR;
	if (off < 0)
		return VIEW_NONE;
	for (i = 0; i < t->rank - 1; i++) {
		if (!dim_equal(t->dim[i], d->dim[i + off]))
			lead_full = false;
		if (!dim_is_one(t->dim[i]))
			lead_one = false;
	}
	if (off > 0 && t->rank > 1)
		lead_full = false;
	if (dim_equal(t->dim[t->rank - 1], d->dim[d->rank - 1])) {
		if (lead_full && off == 0)
			return VIEW_FULL;
		if (lead_one)
			return VIEW_ROW;
		return VIEW_NONE;
	}
	if (dim_is_one(t->dim[t->rank - 1]) && lead_full && off == 0)
		return VIEW_COL;
	return VIEW_NONE;
}

/* Does a param of K have view V? */
static bool
has_view(const Kernel *k, View v)
{
	int j;

	for (j = 1; j < k->nparam && k->param[j].view != v; j++)
		;
	return j < k->nparam;
}

static int
pow2_floor(int x)
{
	int p = 1;

	while (p * 2 <= x)
		p *= 2;
	return p;
}

/*
 * Tile shape: 256 columns (a 512-byte bf16 row), rows to fill a stage.  A
 * flat kernel's tile, one contiguous run of memory (launch.c views its
 * elements as rows as wide as a tile), fills half a stage: 8 CTAs an SM
 * (the thread limit) instead of 7.  One row (`tile: [1, 2048]`) is a hint,
 * not a default: it helps one device and not the other (docs/perf_history.md).
 * A kernel that exchanges a transposed view (EXCHANGE) takes 64 x 64 tiles:
 * each of the view's tile columns is 64 consecutive elements of memory.
 */
static void
choose_tile(Kernel *k, const Fusion *f, int row_bytes, const Tensor *d, bool exchange)
{
	const Schedule *s = &f->sched;
	int64_t cols = d->rank ? dim_value(f, d->dim[d->rank - 1]) : 1;
	int64_t rows = 1;
	int i, target = k->pw.flat ? STAGE_TARGET / 2 : STAGE_TARGET;

	for (i = 0; i + 1 < d->rank; i++)
		if (!size_mul(rows, dim_value(f, d->dim[i]), &rows))
			rows = INT64_MAX;   /* infer.c refuses such shapes: only to keep the product defined */
	k->tile_cols = 256;
	if (!k->pw.flat && cols > 0 && cols < 256)
		k->tile_cols = cols <= 16 ? 16 : pow2_floor((int)cols - 1) * 2;
	k->tile_rows = row_bytes ? pow2_floor(target / (k->tile_cols * row_bytes)) : 16;
	if (k->tile_rows > 256)
		k->tile_rows = 256;
	if (k->tile_rows < 1)
		k->tile_rows = 1;
	if (exchange) {
		k->tile_rows = 64;
		k->tile_cols = k->tile_cols < 64 ? k->tile_cols : 64;
	}
	if (!k->pw.flat && rows > 0 && rows < k->tile_rows)
		k->tile_rows = pow2_floor((int)rows);
	if (s->ntile >= 2) {
		k->tile_rows = s->tile[0];
		k->tile_cols = s->tile[1];
	}
}

/* Domain row digit DIM (< the last dim), made once: what a view's box and a placed cat or pad test. */
static void
need_digit(Comp *c, Kernel *k, const Tensor *d, int dim)
{
	if (!k->pw.digit[dim])
		k->pw.digit[dim] = lower_row_digit(c, k, d, dim);
}

/* Strided view S's box over domain D, lined up from the right: a bound on each domain dim (none: INT64_MAX). */
static const KBounds *
view_bounds(Comp *c, Kernel *k, const Tensor *d, const Strided *s)
{
	KBounds *b = arena_alloc(c->arena, sizeof *b);
	int i, off = d->rank - s->rank;

	b->fill = s->fill;
	for (i = 0; i < MAX_RANK; i++) {
		b->lo[i] = i < off || i >= d->rank ? 0 : s->lo[i - off];
		b->hi[i] = i < off || i >= d->rank ? INT64_MAX : s->hi[i - off];
		b->div[i] = i < off || i >= d->rank ? 0 : s->div[i - off];
		b->mod[i] = i < off || i >= d->rank ? 0 : s->mod[i - off];
	}
	return b;
}

/* The digits the views' boxes and the placed cats and pads (views.c) of F test; after lower_size_params. */
static void
box_digits(Comp *c, Kernel *k, const Fusion *f, const Tensor *d)
{
	int i, j;

	for (i = 1; i < k->nparam; i++)
		for (j = 0; k->param[i].bounds && j + 1 < d->rank; j++)
			if (k->param[i].bounds->hi[j] != INT64_MAX)
				need_digit(c, k, d, j);

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		int off = d->rank - f->tensor[o->out].rank;

		if (!o->placed)
			continue;
		if (o->kind == OP_CAT && o->axis + off + 1 < d->rank)
			need_digit(c, k, d, o->axis + off);
		for (j = 0; o->kind == OP_PAD && j < o->npad / 2; j++)
			if (d->rank - 1 - j < d->rank - 1 && (o->pad[2 * j] || o->pad[2 * j + 1]))
				need_digit(c, k, d, d->rank - 1 - j);
	}
}

/*
 * Params for the views of inputs that compute reads (views.c): each reads its
 * input's memory through the input's pointer, at the domain row's offset
 * (lower_strided_at): a row of 16-byte loads where its columns are
 * consecutive and its rows start 16-byte aligned (VIEW_ROW_AT), one element
 * a row where it broadcasts along the columns (VIEW_COL_AT), else element by
 * element (VIEW_ELEM_AT: a step or a transpose across the columns; -v says
 * so).  The view is lined up with the domain from the right, as numpy
 * broadcasts.
 */
static int
view_params(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int i, p;

	for (i = 1; i < f->nop; i++) {
		const Tensor *t = &f->tensor[f->op[i].out];
		bool aligned;
		Strided s;
		const char *why;

		if (op_info[f->op[i].kind].cls != CLS_VIEW || f->op[i].placed || !view_read_by_compute(f, f->op[i].out))
			continue;
		if (!view_strided(c, f, f->op[i].out, &s, &why))
			return diag_internal(c, "lower", "view '%s' is not strided: %s", t->name, why ? why : "?");
		k->pw.flat = false;
		p = lower_input_ptr(c, k, s.input, f->op[i].out);
		aligned = view_aligned16(f, &s, k->param[p].dtype);
		if (s.bounded)
			k->param[p].bounds = view_bounds(c, k, d, &s);
		if (s.index)
			aligned = lower_index_param(c, k, p, &s) && aligned;
		if (s.index && !aligned)
			k->param[p].view = VIEW_ELEM_AT;   /* (the index varies along the columns) */
		else if (!s.rank || dim_is_one(s.ext[s.rank - 1]) || !s.stride[s.rank - 1].k)
			k->param[p].view = VIEW_COL_AT;
		else if (s.rank && s.stride[s.rank - 1].k == 1 && !s.stride[s.rank - 1].nsym && aligned)
			k->param[p].view = VIEW_ROW_AT;
		else
			k->param[p].view = VIEW_ELEM_AT;
	}
	return 0;
}

/*
 * Each param read at an offset: a view's (views.c: its strides, its index,
 * its box's digits; a step across the columns or a box there reads element
 * by element), or a broadcast input's (lower_bcast_at).  After
 * lower_size_params.
 */
static void
param_offsets(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int j;

	for (j = 1; j < k->nparam; j++)
		if (kparam_is_view(f, &k->param[j])) {
			Strided s;
			const char *why;

			view_strided(c, f, k->param[j].tensor, &s, &why);   /* the schedule checked it is one */
			lower_strided_at(c, k, j, d, &s);
			if (s.index)
				lower_index_at(c, k, d, &k->param[j], &s);
			if (s.bounded && k->param[j].view == VIEW_COL_AT && k->param[j].bounds->hi[d->rank - 1] != INT64_MAX)
				k->param[j].view = VIEW_ELEM_AT;   /* (a box across the columns: tested element by element) */
			if (!ex_is_int(k->param[j].step, 1) && k->param[j].view == VIEW_ROW_AT)
				k->param[j].view = VIEW_ELEM_AT;
		} else if ((k->param[j].view == VIEW_ROW_AT || k->param[j].view == VIEW_COL_AT) && k->param[j].arg < f->ninput) {
			lower_bcast_at(c, k, j, d);   /* (a split's outputs: split_params') */
		}
	box_digits(c, k, f, d);
}

/*
 * Is param P a view read across its memory's rows: its columns a stride
 * apart and its domain rows consecutive (a transpose of the innermost dim,
 * x.t(), a permute that moves it)?  Such a tile goes through shared memory
 * (BUF_EXCHANGE): its threads copy it along the memory's rows, then read it
 * along the domain's, never one element a row apart across a warp.
 */
static bool
exchanged(Comp *c, const Kernel *k, const KParam *p)
{
	const Tensor *d = &k->fusion->tensor[k->domain];
	Strided s;
	const char *why;

	if (p->view != VIEW_ELEM_AT || p->bounds || !kparam_is_view(k->fusion, p) || d->rank < 2 ||
	    !view_strided(c, k->fusion, p->tensor, &s, &why) || s.rank < 2 || s.index)
		return false;
	return s.stride[s.rank - 2].k == 1 && !s.stride[s.rank - 2].nsym && !dim_is_one(s.ext[s.rank - 2]) &&
	       !(s.stride[s.rank - 1].k == 1 && !s.stride[s.rank - 1].nsym);
}

/* An exchange buffer's rows (its tile's columns) are its tile's rows and a 4-byte word: no bank conflicts. */
static int
exchange_pitch(const KParam *p, int rows)
{
	int bytes = dtype_info[p->dtype].bytes;

	return rows + (bytes < 4 ? 4 / bytes : 1);
}

static int
check_tile(Comp *c, const Kernel *k, const Fusion *f)
{
	int i;

	if (f->sched.ntile && f->sched.ntile != 2)
		return diag_error(c, f->sched.tile_pos, "a pointwise tile is [rows, cols], 2 extents; saw %d",
		                  f->sched.ntile);
	if (k->tile_rows < 1 || k->tile_rows > 256 || k->tile_cols < 8 || k->tile_cols > MAX_RUN ||
	    (k->tile_cols > 256 && (k->tile_rows > 1 || k->pw.flat)) ||
	    (k->tile_cols & (k->tile_cols - 1)) || (k->tile_rows & (k->tile_rows - 1)))
		return diag_error(c, f->sched.tile_pos,
		                  "pointwise tile [%d, %d] is not supported: rows must be a power of two in "
		                  "1..256 and cols a power of two in 8..256 (TMA boxes are at most 256 per dim), "
		                  "or, for a kernel with a row or column input, [1, cols] with cols a power of two up "
		                  "to %d (a run of one row, moved by 1-D bulk copies)",
		                  k->tile_rows, k->tile_cols, MAX_RUN);
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_TMAP &&
		    k->tile_cols * dtype_info[k->param[i].dtype].bytes % 16)
			return diag_error(c, f->sched.tile_pos,
			                  "pointwise tile cols %d x %d bytes of '%s' is not a multiple of 16 bytes",
			                  k->tile_cols, dtype_info[k->param[i].dtype].bytes, k->param[i].name);
	return 0;
}

/* Copies of each output's staging buffer: two alternate in the persistent loop, one tile a CTA needs one. */
static int
staging_copies(const Kernel *k)
{
	return k->persistent ? 2 : 1;
}

/*
 * Is param P an input staged in shared memory with tiles COLS wide?  Full
 * inputs are; a row is while a TMA box holds it (wider, the compute reads it
 * from global memory); columns and scalars are read from global memory.
 */
static bool
staged_input(const Fusion *f, const KParam *p, int cols)
{
	return p->arg >= 0 && p->arg < f->ninput && (p->view == VIEW_FULL || (p->view == VIEW_ROW && cols <= 256));
}

/*
 * The shared memory pointwise kernel K takes with ROWS x COLS tiles in
 * STAGES stages: its buffers, made in a scratch kernel in the order
 * lower_pointwise makes them, as the circular-buffer pass counts them.
 */
static int64_t
tile_smem(Comp *c, const Kernel *k, int rows, int cols, int stages)
{
	const Fusion *f = k->fusion;
	Kernel *t = kernel_new(c, k->fusion);
	int j, b;

	for (j = 1; j < k->nparam; j++)
		if (staged_input(f, &k->param[j], cols))
			kernel_add_buf(c, t, k->param[j].name, BUF_TILE, k->param[j].dtype,
			               k->param[j].view == VIEW_ROW ? 1 : rows, cols);
	for (j = 1; j < k->nparam && k->tma_store; j++)
		if (k->param[j].arg >= f->ninput) {
			b = kernel_add_buf(c, t, k->param[j].name, BUF_STAGING, k->param[j].dtype, rows, cols);
			t->buf[b].stages = staging_copies(k);
		}
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].view == VIEW_EXCHANGE) {
			b = kernel_add_buf(c, t, k->param[j].name, BUF_EXCHANGE, k->param[j].dtype, cols,
			                   exchange_pitch(&k->param[j], rows));
			t->buf[b].stages = staging_copies(k);
		}
	return cb_smem_at(t, NULL, stages);
}

/*
 * The tile must leave the fewest stages the kernel runs with (the
 * schedule's, else one) and the output staging copies room in shared
 * memory.  A tile the schedule gives that does not even in one stage is an
 * error at the hint, naming a tile that fits (one that fits one stage but
 * not the stages asked for is circular_buffer.c's to report); a tile the
 * compiler chose (a flat kernel with many outputs) shrinks to fit.  Tiles
 * shrink by halving rows, then cols, down to the narrowest whose rows are
 * 16 bytes for every tensor.
 */
static int
fit_tile(Comp *c, Kernel *k, const Fusion *f)
{
	int stages = k->stages_hint ? k->stages_hint : 1, rows = k->tile_rows, cols = k->tile_cols, least = 8, j;
	bool hinted = f->sched.ntile > 0;
	int64_t need = tile_smem(c, k, rows, cols, hinted ? 1 : stages);

	if (need <= k->smem_budget)
		return 0;
	for (j = 1; j < k->nparam; j++)
		while (least * dtype_info[k->param[j].dtype].bytes % 16)
			least *= 2;
	while (tile_smem(c, k, rows, cols, stages) > k->smem_budget && (rows > 1 || cols > least)) {
		if (rows > 1)
			rows /= 2;
		else
			cols /= 2;
	}
	if (hinted && tile_smem(c, k, rows, cols, stages) <= k->smem_budget)
		return diag_error(c, f->sched.tile_pos,
		                  "pointwise tile [%d, %d] needs %lld KiB of shared memory for one stage of its "
		                  "inputs and its output staging copies, but %d KiB are available; %s[%d, %d] fits",
		                  k->tile_rows, k->tile_cols, (long long)(need / 1024), k->smem_budget / 1024,
		                  stages > 1 ? arena_printf(c->arena, "with the %d stages asked for, ", stages) : "",
		                  rows, cols);
	if (tile_smem(c, k, rows, cols, 1) > k->smem_budget)
		return diag_error(c, hinted ? f->sched.tile_pos : f->pos,
		                  "the %d input%s and %d output%s of '%s' need %lld KiB of shared memory even in [%d, %d] "
		                  "tiles, but %d KiB are available; split the fusion into smaller ones",
		                  f->ninput, f->ninput == 1 ? "" : "s", f->nout, f->nout == 1 ? "" : "s", f->name,
		                  (long long)(tile_smem(c, k, rows, cols, 1) / 1024),
		                  rows, cols, k->smem_budget / 1024);
	/* the compiler's tile: the largest that fits (circular_buffer.c blames a stage count no tile fits) */
	k->tile_rows = rows;
	k->tile_cols = cols;
	return 0;
}

/*
 * Param J's tile (ROW0, COL0) through an exchange buffer: an ST_EXCHANGE in
 * LOOP that the compute's threads run, then COMPUTE reads the buffer (sync.c
 * places the barrier between).  Its cond: when 16-byte groups of the tile's
 * rows are consecutive in memory (NULL: never), each a load where it starts
 * on a 16-byte boundary.  Copies alternate by tile in a persistent
 * kernel, so that barrier also orders a copy's reads before its next write.
 */
static void
lower_exchange(Comp *c, Kernel *k, int j, Expr *counter, Expr *row0, Expr *col0, Stmt *loop, Stmt *compute)
{
	const KParam *p = &k->param[j];
	const Tensor *d = &k->fusion->tensor[k->domain];
	Dim r2 = d->dim[d->rank - 2];
	int group = 16 / dtype_info[p->dtype].bytes;
	Stmt *x = st_new(c, ST_EXCHANGE);
	int b = kernel_add_buf(c, k, arena_printf(c->arena, "exchange_%s", p->name), BUF_EXCHANGE, p->dtype,
	                       k->tile_cols, exchange_pitch(p, k->tile_rows));
	Expr *slot = ex_bin(c, EX_MOD, counter, ex_int(c, staging_copies(k)));

	k->buf[b].param = j;
	k->buf[b].tensor = p->tensor;
	k->buf[b].stages = staging_copies(k);
	x->u.tma.param = j;
	x->u.tma.buf = b;
	x->u.tma.slot = slot;
	x->u.tma.row = row0;
	x->u.tma.col = col0;
	/* 16 bytes of consecutive rows a load where the rows' dim holds whole groups (none straddles its end) */
	if (!r2.sym)
		x->u.tma.cond = r2.ext % group ? NULL : ex_int(c, 1);
	else
		x->u.tma.cond = ex_bin(c, EX_EQ, ex_bin(c, EX_MOD, lower_stride_expr(c, k, d, (Stride){1, 1, {r2.sym}}),
		                                        ex_int(c, group)), ex_int(c, 0));
	x->pos = k->fusion->tensor[p->tensor].pos;
	x->comment = "a transposed view's tile, read along its memory's rows";
	st_append(c, loop, x);
	VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = b;
	compute->reads[compute->nreads - 1].slot = slot;
}

/* *S: the row-major strides of T's memory over domain D's dims (an output's, or a scatter's input's). */
static void
own_layout(const Tensor *t, const Tensor *d, Strided *s)
{
	Stride inner = {1, 0, {0}};
	int i;

	memset(s, 0, sizeof *s);
	s->rank = d->rank;
	for (i = d->rank - 1; i >= 0; i--) {
		s->ext[i] = d->dim[i];
		s->stride[i] = inner;
		if (t->dim[i].sym)
			inner.sym[inner.nsym++] = t->dim[i].sym;
		else
			inner.k *= t->dim[i].ext;
		s->hi[i] = INT64_MAX;
	}
}

/*
 * Outputs that are the parts of the domain along one dim (views.c's
 * split_out, a placed cat of them): each stores the elements in its range,
 * at its own row-major offsets, lo_j shifted out (VIEW_ROW_AT over the
 * domain: at and step from a Strided of its strides, its box [lo_j, hi_j)
 * along the dim).  After lower_size_params.
 */
static void
split_params(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int j, i, dim = f->split_dim;

	for (j = 1; j < k->nparam; j++) {
		const KParam *p = &k->param[j];
		const Tensor *t = &f->tensor[p->tensor];
		KBounds *b = arena_alloc(c->arena, sizeof *b);
		Strided s;
		int part = p->arg - f->ninput;

		if (p->arg < f->ninput)
			continue;
		own_layout(t, d, &s);
		for (i = 0; i < MAX_RANK; i++)
			b->hi[i] = INT64_MAX;
		b->lo[dim] = f->out[part].part[0];
		b->hi[dim] = f->out[part].part[1];
		s.off[s.noff] = s.stride[dim];   /* lo_j along the dim shifted out */
		s.off[s.noff++].k *= -b->lo[dim];
		k->param[j].bounds = b;
		k->param[j].view = VIEW_ROW_AT;
		lower_strided_at(c, k, j, d, &s);
	}
}

/*
 * Outputs written in place into their input's memory as a scatter
 * (index_copy, slice_scatter: fusion_scatter): the domain is the part
 * placed, each element stored at its index in the input's row-major layout
 * with the position along the scatter's dim the slice's (start + i x step)
 * or the index's value there (lower_index_param's param, as index_select
 * reads).  A row of 16-byte stores where the part's rows are consecutive
 * 16-byte groups (VIEW_ROW_AT), else element by element (VIEW_ELEM_AT).
 * After lower_size_params.
 */
static void
scatter_params(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int j;

	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];
		const Op *o = p->arg >= f->ninput ? fusion_scatter(f, p->arg - f->ninput) : NULL;
		const Tensor *t = &f->tensor[p->tensor];
		Strided s;
		int64_t start, count;
		bool aligned;

		if (!o)
			continue;
		own_layout(t, d, &s);
		if (o->kind == OP_SLICE_SCATTER) {
			view_slice(o, dim_value(f, t->dim[o->axis]), &start, &count);
			s.off[s.noff] = s.stride[o->axis];
			s.off[s.noff++].k *= start;
			s.stride[o->axis].k *= o->step;
		} else {
			s.index = o->in[1].tensor;
			s.index_dim = o->axis;
			s.index_stride = s.stride[o->axis];
			s.stride[o->axis] = (Stride){0, 0, {0}};
		}
		s.input = o->in[0].tensor;   /* (the memory's rows: its input's, which a launch holds to 16 bytes) */
		aligned = o->axis < d->rank - 1 && s.stride[s.rank - 1].k == 1 && !s.stride[s.rank - 1].nsym &&
		          view_aligned16(f, &s, p->dtype);
		if (s.index)
			aligned = lower_index_param(c, k, j, &s) && aligned;
		p = &k->param[j];   /* (lower_index_param may move the params) */
		p->view = aligned ? VIEW_ROW_AT : VIEW_ELEM_AT;
		lower_strided_at(c, k, j, d, &s);
		if (s.index)
			lower_index_at(c, k, d, &k->param[j], &s);
		if (!ex_is_int(k->param[j].step, 1))
			k->param[j].view = VIEW_ELEM_AT;
	}
}

/*
 * An output written into its input's memory whole (alias, not a scatter)
 * is safe where the kernel reads that input at the element it writes, or
 * from a stage the tile's loads filled before any store: a param reading
 * the input's memory must be staged whole (VIEW_FULL) or read from such a
 * stage (KBounds.stage); a view reading other elements (a transpose,
 * another row) could read what another thread has written.  After the
 * tile is fixed.  0 or -1.
 */
static int
check_in_place(Comp *c, const Kernel *k, const Fusion *f)
{
	int i, j;

	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];

		if (!o->alias)
			continue;
		for (j = 1; j < k->nparam; j++) {
			const KParam *p = &k->param[j];

			if (p->arg < 0 || p->arg >= f->ninput || f->input[p->arg] != o->alias || p->view == VIEW_NONE)
				continue;
			if (fusion_scatter(f, i) ? false : staged_input(f, p, k->tile_cols) || (p->bounds && p->bounds->stage))
				continue;
			diag_error(c, o->alias_pos, "output '%s' is written into input '%s' (alias), which the kernel also "
			           "reads%s%s: %s", f->tensor[o->tensor].name, f->tensor[o->alias].name,
			           p->tensor != o->alias ? " through " : "", p->tensor != o->alias ? f->tensor[p->tensor].name : "",
			           fusion_scatter(f, i) ? "a scatter in place reads only what it places, not yet its input" :
			           "in place, a read of other elements than those written could see them written (not "
			           "implemented yet: write a new output)");
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	}
	return 0;
}

/*
 * Strided S over domain D: its strides the input's own, row-major, over the
 * same dims, and its offset a constant, which *SHIFT gets?
 */
static bool
own_strides(const Fusion *f, const Strided *s, const Tensor *d, int64_t *shift)
{
	const Tensor *x = &f->tensor[s->input];
	Stride inner = {1, 0, {0}};
	int i;

	if (s->rank != d->rank || x->rank != d->rank)
		return false;
	for (i = d->rank - 1; i >= 0; i--) {
		if (!dim_equal(x->dim[i], d->dim[i]) || !stride_equal(s->stride[i], inner))
			return false;
		if (x->dim[i].sym)
			inner.sym[inner.nsym++] = x->dim[i].sym;
		else
			inner.k *= x->dim[i].ext;
	}
	for (*shift = 0, i = 0; i < s->noff; i++) {
		if (s->off[i].nsym)
			return false;
		*shift += s->off[i].k;
	}
	return true;
}

/*
 * Boxed views of an input that the kernel also stages whole (VIEW_FULL) in
 * tiles of whole rows: the view's element (row, col) is the input's at (row,
 * col + shift) where its strides are the input's own and its offset a
 * constant, inside the row across the box: read from the stage
 * (KBounds.stage), not through the pointer again.  RoPE's rotate-half
 * reads x once.  After the tile is fixed.
 */
static void
stage_views(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int j, q;

	if (dim_value(f, d->dim[d->rank - 1]) != k->tile_cols)
		return;
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];
		KBounds *b = (KBounds *)p->bounds;
		int64_t shift, lo, hi;
		Strided s;
		const char *why;

		if (!b || b->index_param || p->view != VIEW_ROW_AT || !kparam_is_view(f, p))
			continue;
		for (q = 1; q < k->nparam && !(k->param[q].arg == p->arg && k->param[q].view == VIEW_FULL &&
		                                 staged_input(f, &k->param[q], k->tile_cols)); q++)
			;
		if (q == k->nparam || !view_strided(c, f, p->tensor, &s, &why) || !own_strides(f, &s, d, &shift) ||
		    b->mod[d->rank - 1])
			continue;
		lo = b->lo[d->rank - 1];
		hi = b->hi[d->rank - 1] == INT64_MAX ? k->tile_cols : b->hi[d->rank - 1];
		if (lo + shift < 0 || hi + shift > k->tile_cols || shift * dtype_info[p->dtype].bytes % 16)
			continue;   /* (the shifted box must stay in the row, 16-byte loads on 16-byte boundaries) */
		b->stage = q;
		b->shift = shift;
	}
}

/*
 * Views of an input the compute also reads whole (VIEW_FULL, its 8
 * elements a thread in registers) whose box is on a digit of the columns
 * that repeats within 8 (RoPE's interleaved pairs: (col / 1) % 2), whose
 * strides are the input's own and whose offset is a constant SHIFT that
 * keeps each element inside the box within the thread's 8: each such
 * element is that param's register v + SHIFT (KBounds.regs), no load.
 * After param_offsets.
 */
static void
register_views(Comp *c, Kernel *k, const Tensor *d)
{
	const Fusion *f = k->fusion;
	int last = d->rank - 1, j, q, v;

	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];
		KBounds *b = (KBounds *)p->bounds;
		int64_t shift, period;
		Strided s;
		const char *why;

		if (!b || b->index_param || b->stage || !b->mod[last] || !kparam_is_view(f, p))
			continue;
		period = b->div[last] * b->mod[last];
		for (q = 1; q < k->nparam && !(k->param[q].arg == p->arg && k->param[q].view == VIEW_FULL); q++)
			;
		if (q == k->nparam || THREAD_VEC % period || !view_strided(c, f, p->tensor, &s, &why) ||
		    !own_strides(f, &s, d, &shift))
			continue;
		for (v = 0; v < THREAD_VEC; v++)   /* (col is a multiple of 8: the digit of col + v is v's) */
			if ((v / b->div[last]) % b->mod[last] >= b->lo[last] && (v / b->div[last]) % b->mod[last] < b->hi[last] &&
			    (v + shift < 0 || v + shift >= THREAD_VEC))
				break;
		if (v < THREAD_VEC)
			continue;
		b->stage = q;
		b->shift = shift;
		b->regs = true;
	}
}

/*
 * Outputs leave through a staging tile and TMA stores, which the persistent
 * loop and f32 outputs need to keep up, unless the schedule says `store:
 * vector`, or one CTA per tile writes only 2-byte outputs (none accumulating,
 * which TMA adds): those store from registers.  A split's outputs store by
 * pointer, each its range.  Sets Kernel.tma_store; 0 or -1.
 */
static int
choose_stores(Comp *c, Kernel *k, const Fusion *f)
{
	bool narrow = true, scatter = false;
	int j;

	for (j = 0; j < f->nout; j++) {   /* (an output that accumulates is added by TMA: not narrow) */
		narrow = narrow && dtype_info[f->out[j].dtype].bytes == 2 && !f->out[j].accumulate;
		scatter = scatter || fusion_scatter(f, j);
	}
	k->tma_store = f->sched.store == STORE_TMA ||
	               (f->sched.store != STORE_VECTOR && (k->persistent || !narrow || f->sched.signal_pos.line));
	if ((f->split_out || scatter) && (f->sched.store == STORE_TMA || f->sched.signal_pos.line)) {
		diag_error(c, f->sched.store == STORE_TMA ? f->sched.store_pos : f->sched.signal_pos, "outputs that are "
		           "the parts of one shape (a split) or a part written in place (a scatter) store by pointer: '%s' "
		           "with TMA stores is not implemented yet", f->sched.store == STORE_TMA ? "store: tma" :
		           "signal: per_tile");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	k->tma_store = k->tma_store && !f->split_out && !scatter;
	if (f->sched.signal_pos.line && !k->tma_store) {   /* the signal waits for the stores' bulk groups */
		diag_error(c, f->sched.store_pos, "'signal: per_tile' with 'store: vector' is not implemented yet: a "
		           "tile is signalled once its TMA stores complete");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	return 0;
}

/* Is input T read by one_hot alone (its classes: one a row of the domain, refuse_ops checked)? */
static bool
one_hot_label(const Fusion *f, int t)
{
	int i, j, n = 0;

	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			if (f->op[i].in[j].tensor == t) {
				if (f->op[i].kind != OP_ONE_HOT)
					return false;
				n++;
			}
	return n > 0;
}

/* Ops a pointwise kernel does not take yet: one_hot but of an input label a row, rand_like of another shape. */
static int
refuse_ops(Comp *c, const Fusion *f, const Tensor *d)
{
	int j;

	for (j = 1; j < f->nop; j++)   /* a label a domain row: the class a row, compared with the column */
		if (f->op[j].kind == OP_ONE_HOT && (f->tensor[f->op[j].in[0].tensor].kind != TK_INPUT ||
		                                    !lower_same_shape(&f->tensor[f->op[j].out], d))) {
			diag_error(c, f->op[j].pos, "one_hot of '%s' in a pointwise kernel takes an input, a label a row of "
			           "its output's shape (that of '%s'), so far", f->tensor[f->op[j].in[0].tensor].name, d->name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (j = 1; j < f->nop; j++)   /* its numbers are of the element's index in the kernel's row-major view */
		if (f->op[j].kind == OP_RAND_LIKE && classify(&f->tensor[f->op[j].in[0].tensor], d) != VIEW_FULL) {
			diag_error(c, f->op[j].in[0].pos, "rand_like of '%s', which broadcasts to the output's shape, is not "
			           "implemented yet: its shape must be the output's", f->tensor[f->op[j].in[0].tensor].name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	return 0;
}

/* The outputs' params (a reduction's result's by pointer: VIEW_REDUCED), the sizes', the workspace's. */
static void
output_params(Comp *c, Kernel *k, const Fusion *f)
{
	int j;

	for (j = 0; j < f->nout; j++) {
		const Tensor *t = &f->tensor[f->out[j].tensor];
		int p = kernel_add_param(c, k, k->tma_store ? PK_TMAP : PK_PTR, t->name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = k->pw.reduce && k->pw.late[t - f->tensor] ? VIEW_REDUCED : VIEW_FULL;
	}
	lower_size_params(c, k);
	lower_reduce_params(c, k);
}

/* The pointwise family: every output has the domain's shape, or is a part of it along a dim (a split). */
static int
lower_pointwise(Comp *c, Fusion *f)
{
	Kernel *k;
	const Tensor *d;
	Stmt *loop, *issue, *compute, *store = NULL;
	Expr *i, *row0, *col0, *last = NULL;
	int j, row_bytes = 0;

	k = kernel_new(c, f);
	c->kernel = k;
	k->domain = f->split_out ? f->split_out : fusion_stored(f, 0);   /* (a scatter's: the part it places) */
	if (lower_reduce_plan(c, k, f, &k->domain) < 0)   /* (a reduction over rows: its input) */
		return -1;
	d = &f->tensor[k->domain];
	for (j = 0; j < f->nout && !f->split_out; j++)
		if (!(k->pw.reduce && k->pw.late[f->out[j].tensor]) && !lower_same_shape(&f->tensor[fusion_stored(f, j)], d))
			return diag_error(c, f->out[j].pos,
			                  "cannot place output '%s' in one pointwise kernel: its shape differs from "
			                  "%s '%s' (a pointwise kernel writes one shape)", f->tensor[fusion_stored(f, j)].name,
			                  fusion_scatter(f, 0) ? "the part placed in place," : "output", d->name);
	if (lower_refuse_hints(c, f, "pointwise", false) < 0)
		return -1;
	k->pw.flat = !f->split_out && k->pw.reduce != RED_COLUMNS;
	for (j = 0; j < f->nout; j++)
		k->pw.flat = k->pw.flat && !fusion_scatter(f, j);
	k->warp_specialize = f->sched.warp_specialize == 2;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : f->pos;
	/*
	 * One CTA per tile, as Triton does, unless the schedule asks for a
	 * pipeline (persistent: true, warp_specialize or stages): the CTAs an SM
	 * holds at once overlap loads and compute.
	 */
	k->persistent = f->sched.persistent == 2 || k->pw.reduce ||
	                (f->sched.persistent == 0 && (k->warp_specialize || f->sched.stages));
	if (choose_stores(c, k, f) < 0)
		return -1;
	k->tma_store = k->tma_store && !k->pw.reduce;   /* (its results leave a column a thread) */
	if (!k->persistent && !k->stages_hint)
		k->stages_hint = 1;
	k->smem_budget = LOWER_SMEM_BUDGET;
	k->smem_target = LOWER_SMEM_TARGET;
	k->consumer_threads = LOWER_THREADS;
	k->threads = LOWER_THREADS + (k->warp_specialize ? 32 : 0);

	if (refuse_ops(c, f, d) < 0)
		return -1;
	/* parameters: inputs, outputs, then the two runtime extents */
	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		View v = one_hot_label(f, f->input[j]) ? VIEW_COL : classify(t, d);
		int p;

		if (t->unread || !view_read_by_compute(f, f->input[j]))   /* (read through its views alone) */
			continue;
		if (k->pw.reduce && k->pw.late[f->input[j]])   /* read after the sums meet, a column a thread */
			v = VIEW_REDUCED;
		if (v == VIEW_NONE)
			v = lower_bcast_view(t, d);
		if (v == VIEW_NONE)   /* infer.c broadcast it to the output: only a shape wider than the output's */
			return diag_error(c, t->pos,
			                  "cannot place input '%s' in a pointwise kernel over %s: it does not broadcast "
			                  "to the output's shape", t->name, f->tensor[f->out[0].tensor].name);
		if (v != VIEW_FULL && v != VIEW_SCALAR && v != VIEW_REDUCED)
			k->pw.flat = false;
		p = kernel_add_param(c, k, v == VIEW_FULL || v == VIEW_ROW ? PK_TMAP : PK_PTR, t->name);
		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = t->dtype;
		k->param[p].view = v;
		if (k->param[p].kind == PK_TMAP)
			row_bytes += dtype_info[t->dtype].bytes;
	}
	if (view_params(c, k, d) < 0)
		return -1;
	output_params(c, k, f);
	if (f->split_out)
		split_params(c, k, d);
	scatter_params(c, k, d);
	param_offsets(c, k, d);
	for (j = 1; j < k->nparam; j++)
		if (exchanged(c, k, &k->param[j]))
			k->param[j].view = VIEW_EXCHANGE;
	choose_tile(k, f, row_bytes, d, has_view(k, VIEW_EXCHANGE));
	lower_reduce_tile(k);
	k->tile_pos = f->sched.ntile ? f->sched.tile_pos : (Pos){0};
	if (check_tile(c, k, f) || fit_tile(c, k, f))
		return -1;
	if (k->pw.reduce == RED_COLUMNS && (k->consumer_threads * THREAD_VEC) % k->tile_cols)   /* a thread's columns: */
		return diag_error(c, k->tile_pos.line ? k->tile_pos : f->pos, "a reduction over rows takes tiles whose "
		                  "columns divide %d (a thread keeps its 8 columns from row to row); this one is %d wide",
		                  k->consumer_threads * THREAD_VEC, k->tile_cols);
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].kind == PK_TMAP && k->tile_cols > 256)
			k->param[j].kind = PK_PTR;   /* a run wider than a TMA box: 1-D bulk copies */
		else if (k->param[j].kind == PK_TMAP) {
			k->param[j].box[0] = k->param[j].view == VIEW_ROW ? 1 : k->tile_rows;
			k->param[j].box[1] = k->tile_cols;
		}

	stage_views(c, k, d);
	register_views(c, k, d);
	if (check_in_place(c, k, f) < 0)
		return -1;
	for (j = 1; j < k->nparam && !staged_input(f, &k->param[j], k->tile_cols); j++)
		;
	if (k->warp_specialize && j == k->nparam)   /* (warp_specialize.c would find no loop of loads to split) */
		return diag_error(c, f->sched.ws_pos, "'warp_specialize: true' gives a producer warp the TMA loads, but "
		                  "'%s' has none: each of its inputs is read through a view or from global memory; drop "
		                  "the hint", f->name);
	loop = k->pw.reduce ? lower_reduce_loop(c, k, &row0, &col0, &last) : lower_tile_loop(c, k, false, &row0, &col0);
	i = ex_var(c, loop->u.loop.var);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread issues the loads";
	st_append(c, loop, issue);
	compute = st_new(c, ST_COMPUTE);
	compute->u.compute.row = row0;
	compute->u.compute.col = col0;
	compute->comment = arena_printf(c->arena, "%d ops of %s", f->nop - 1, f->name);
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];

		if (!staged_input(f, p, k->tile_cols))
			continue;
		lower_stage_input(c, k, j, "tile", p->view == VIEW_ROW ? 1 : k->tile_rows, k->tile_cols,
		                  p->view == VIEW_ROW ? ex_int(c, 0) : row0, col0, issue, compute);
	}
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].view == VIEW_EXCHANGE)
			lower_exchange(c, k, j, i, row0, col0, loop, compute);
	st_append(c, loop, compute);
	if (k->pw.reduce)
		lower_reduce_finish(c, k, loop, last);
	if (!k->tma_store)
		return 0;

	/* outputs: compute writes a staging copy (one of two, alternating); one thread stores it */
	store = st_if(c, ex_leaf(c, EX_ELECT));
	store->comment = "one thread stores the outputs";
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].arg >= f->ninput)
			lower_stage_output(c, k, j, k->tile_rows, k->tile_cols, staging_copies(k), i, row0, col0, compute, store);
	st_append(c, loop, store);
	if (f->sched.signal == SIGNAL_PER_TILE)
		lower_signal(c, k, loop, row0, col0, NULL, NULL, NULL, NULL);
	return 0;
}

const LowerFamily lower_pointwise_family = {lower_pointwise, "use a smaller tile", NULL, NULL};
