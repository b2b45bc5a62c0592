/*
 * lower.c: fusion IR -> kernel IR for the pointwise and row-reduction
 * families.
 *
 * Contract.  Requires: a scheduled fusion of family pointwise or reduction.
 * Guarantees: a kernel whose body is a loop over this CTA's tiles (a tile a
 * CTA, or persistent); in it, one elected thread issues a TMA load of every
 * staged input into a single-copy shared buffer, then all threads compute
 * and store the outputs (16-byte vector stores, or a staging buffer and a
 * TMA store).  A pointwise tile [1, C] wider than a TMA box moves by 1-D
 * bulk copies instead (loads, and stores from the staging buffer), and its
 * row inputs are read where they are used.  For a row reduction a tile is
 * one whole row: loaded by one bulk copy and computed by one compute, or,
 * when a row does not fit a stage, streamed through a loop of passes over a
 * loop of chunks (see stream_row).  No mbarrier and no sync exists yet:
 * circular_buffer.c and sync.c add them.  A tile leaves room for one stage
 * (the schedule's stages, when the compiler chose the tile) and the output
 * staging copies in shared memory (fit_tile); a tile hint that does not
 * is an error at the hint that names one that does.
 *
 * Pointwise: the domain is the outputs' shape seen as 2-D [rows, cols]
 * (cols the last dim).  Each input is full ([rows, cols], tiled by TMA), a
 * row ([cols], broadcast over rows, tiled by TMA), a column ([rows, 1], read
 * from global: a TMA box must be 16 bytes wide) or a scalar.  When every
 * input is full or scalar the kernel is "flat": the host may pick any 2-D
 * view of the elements, so a 1-D tensor still moves in wide tiles.  Row
 * reductions: see lower_reduction.
 */
#include <string.h>

#include "passes.h"

enum {
	THREADS = 256,            /* compute threads per CTA */
	STAGE_TARGET = 32 * 1024, /* bytes one stage should move */
	SMEM_BUDGET = 200 * 1024, /* dynamic shared memory the passes may use */
	SMEM_TARGET = 56 * 1024,  /* by default: room for four CTAs per SM (docs/perf.md) */
	MAX_RUN = 16384           /* the widest one-row pointwise tile */
};

static bool
same_shape(const Tensor *a, const Tensor *b)
{
	int i;

	if (a->rank != b->rank)
		return false;
	for (i = 0; i < a->rank; i++)
		if (!dim_equal(a->dim[i], b->dim[i]))
			return false;
	return true;
}

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
 * flat kernel's tile is one contiguous run of memory (launch.c views its
 * elements as rows as wide as a tile); half a stage target there measured
 * faster: 8 CTAs an SM (the thread limit) instead of 7 (shared memory), and
 * half the work in the last wave (relu(a*b+c), against torch.compile in one
 * process, medians of 8 interleaved rounds: H200 bf16 0.9975x to 1.0018x,
 * f32 0.9943x to 0.9996x; H100 bf16 0.9997x to 1.0010x, f32 0.9982x to
 * 1.0000x).  Other kernels' tiles are 512-byte pieces of rows apart in
 * memory, and halving them lost (H200 silu(x+b)*y bf16: 0.9572x against
 * 0.9934x, f32 0.8556x against 1.0043x).  A contiguous run of one row
 * instead (`tile: [1, 2048]`, bulk copies) is the device's call: H100
 * silu(x+b)*y bf16 1.0094x against 0.9992x, H200 0.8703x against 0.9952x;
 * so it is a hint, not a default (docs/perf.md).
 */
static void
choose_tile(Kernel *k, const Fusion *f, int row_bytes, const Tensor *d)
{
	const Schedule *s = &f->sched;
	int64_t cols = d->rank ? dim_value(f, d->dim[d->rank - 1]) : 1;
	int64_t rows = 1;
	int i, target = k->flat ? STAGE_TARGET / 2 : STAGE_TARGET;

	for (i = 0; i + 1 < d->rank; i++)
		if (!size_mul(rows, dim_value(f, d->dim[i]), &rows))
			rows = INT64_MAX;   /* infer.c refuses such shapes: only to keep the product defined */
	k->tile_cols = 256;
	if (!k->flat && cols > 0 && cols < 256)
		k->tile_cols = cols <= 16 ? 16 : pow2_floor((int)cols - 1) * 2;
	k->tile_rows = row_bytes ? pow2_floor(target / (k->tile_cols * row_bytes)) : 16;
	if (k->tile_rows > 256)
		k->tile_rows = 256;
	if (k->tile_rows < 1)
		k->tile_rows = 1;
	if (!k->flat && rows > 0 && rows < k->tile_rows)
		k->tile_rows = pow2_floor((int)rows);
	if (s->ntile >= 2) {
		k->tile_rows = s->tile[0];
		k->tile_cols = s->tile[1];
	}
}

static int
check_tile(Comp *c, const Kernel *k, const Fusion *f)
{
	int i;

	if (f->sched.ntile && f->sched.ntile != 2)
		return diag_error(c, f->sched.tile_pos, "a pointwise tile is [rows, cols], 2 extents; saw %d",
		                  f->sched.ntile);
	if (k->tile_rows < 1 || k->tile_rows > 256 || k->tile_cols < 8 || k->tile_cols > MAX_RUN ||
	    (k->tile_cols > 256 && (k->tile_rows > 1 || k->flat)) ||
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

static Stmt *
let(Comp *c, Kernel *k, const char *name, Expr *e, Stmt *block)
{
	Stmt *s = st_new(c, ST_LET);

	s->var = kernel_add_var(c, k, name);
	s->a = e;
	st_append(c, block, s);
	return s;
}

/* The two runtime extents of the 2-D view, as parameters. */
static void
add_size_params(Comp *c, Kernel *k)
{
	int rows_p = kernel_add_param(c, k, PK_SIZE, "rows"), cols_p = kernel_add_param(c, k, PK_SIZE, "cols");

	k->rows_var = k->param[rows_p].var = kernel_add_var(c, k, "rows");
	k->param[rows_p].is_rows = true;
	k->cols_var = k->param[cols_p].var = kernel_add_var(c, k, "cols");
}

/*
 * Stages input param J: a tile buffer of ROWS x COLS named KIND_NAME (tile_x,
 * row_x, chunk_x: a prefix of codegen/emit.c's table), an elected load of it
 * at (ROW, COL) appended to ISSUE, and COMPUTE reading the buffer.  Circular
 * buffering gives both their slots later.
 */
static int
stage_input(Comp *c, Kernel *k, int j, const char *kind, int rows, int cols, Expr *row, Expr *col, Stmt *issue,
            Stmt *compute)
{
	const KParam *p = &k->param[j];
	int b = kernel_add_buf(c, k, arena_printf(c->arena, "%s_%s", kind, p->name), BUF_TILE, p->dtype, rows, cols);
	Stmt *ld = st_new(c, ST_TMA_LOAD);

	k->buf[b].param = j;
	k->buf[b].tensor = p->tensor;
	ld->buf = b;
	ld->param = j;
	ld->slot = ex_int(c, 0);
	ld->a = row;
	ld->b = col;
	ld->pos = k->fusion->tensor[p->tensor].pos;
	st_append(c, issue, ld);
	VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = b;
	compute->reads[compute->nreads - 1].slot = ex_int(c, 0);
	return b;
}

/*
 * The persistent loop over this CTA's tiles of tile_rows x tile_cols:
 * tile = cta + i * ncta, at (row0, col0); with WHOLE_ROWS a tile is one
 * whole row (row0 = tile, col0 = 0).  Appended to the kernel body; returns
 * the loop and the two coordinates.
 */
static Stmt *
tile_loop(Comp *c, Kernel *k, bool whole_rows, Expr **row0, Expr **col0)
{
	Stmt *loop;
	Expr *i, *tile, *ntc = NULL, *ntiles;

	if (whole_rows) {
		k->ntile_var = k->rows_var;
	} else {
		ntc = ex_var(c, let(c, k, "col_tiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var),
		                                               ex_int(c, k->tile_cols)), k->body)->var);
		ntiles = ex_bin(c, EX_MUL, ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows)), ntc);
		k->ntile_var = let(c, k, "tiles", ntiles, k->body)->var;
	}
	/*
	 * One CTA per tile: the launch makes the grid the tile count, so each
	 * CTA has exactly one, a constant the compiler folds the loop away for.
	 * The 64-bit division it replaces was a software routine in every
	 * thread (H200: f32 silu*y with TMA stores 0.7943 -> 0.7327 ms).
	 */
	k->niter_var = let(c, k, whole_rows ? "my_rows" : "my_tiles",
	                   !k->persistent ? ex_int(c, 1) :
	                   ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, ex_var(c, k->ntile_var), ex_leaf(c, EX_CTA)),
	                          ex_leaf(c, EX_NCTA)), k->body)->var;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->niter_var), LOOP_TILE);
	loop->comment = whole_rows ? "this CTA's rows" : "this CTA's tiles";
	st_append(c, k->body, loop);
	i = ex_var(c, loop->var);
	tile = ex_bin(c, EX_ADD, ex_leaf(c, EX_CTA), ex_bin(c, EX_MUL, i, ex_leaf(c, EX_NCTA)));
	if (whole_rows) {
		*row0 = ex_var(c, let(c, k, "row0", tile, loop)->var);
		*col0 = ex_int(c, 0);
		return loop;
	}
	tile = ex_var(c, let(c, k, "tile", tile, loop)->var);
	*row0 = ex_var(c, let(c, k, "row0", ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, tile, ntc),
	                                           ex_int(c, k->tile_rows)), loop)->var);
	*col0 = ex_var(c, let(c, k, "col0", ex_bin(c, EX_MUL, ex_bin(c, EX_MOD, tile, ntc),
	                                           ex_int(c, k->tile_cols)), loop)->var);
	return loop;
}

/*
 * A hint this family's lowering cannot honour is an error at the hint
 * (SPEC.md), never dropped in silence: clusters and completion signals are
 * not built yet for any family (exit status "not implemented"); `consumers`
 * splits a matmul tile, and a row-reduction kernel's tile (a row) and its
 * stores (from registers) are the compiler's, so those hints are errors in
 * the spec.
 */
static int
refuse_hints(Comp *c, const Fusion *f, const char *family, bool rows)
{
	const Schedule *s = &f->sched;

	if (s->cluster_pos.line) {
		diag_error(c, s->cluster_pos, "'cluster' is not implemented for %s kernels yet: they launch "
		           "single CTAs", family);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (s->signal_pos.line) {
		diag_error(c, s->signal_pos, "'signal' is not implemented for %s kernels yet", family);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (s->consumers_pos.line)
		return diag_error(c, s->consumers_pos, "'consumers' applies to matmul kernels, whose consumer "
		                  "warpgroups split a tile; %s kernels have one group of compute threads", family);
	if (rows && s->ntile)
		return diag_error(c, s->tile_pos, "'tile' does not apply to %s kernels: a tile is one row, or "
		                  "its 4096-element chunks when the row is too wide for shared memory", family);
	if (rows && s->store_pos.line)
		return diag_error(c, s->store_pos, "'store' does not apply to %s kernels: their outputs leave "
		                  "as 16-byte stores from registers", family);
	return 0;
}

/* The pointwise family: every output has the domain's shape. */
static int
lower_pointwise(Comp *c, Fusion *f)
{
	Kernel *k;
	const Tensor *d;
	Stmt *loop, *issue, *compute, *store = NULL;
	Expr *i, *row0, *col0;
	int j, row_bytes = 0;
	bool tma_store, narrow;

	k = kernel_new(c, f);
	c->kernel = k;
	d = &f->tensor[f->out[0].tensor];
	for (j = 1; j < f->nout; j++)
		if (!same_shape(&f->tensor[f->out[j].tensor], d))
			return diag_error(c, f->out[j].pos,
			                  "cannot place output '%s' in one pointwise kernel: its shape differs from "
			                  "output '%s' (a pointwise kernel writes one shape)",
			                  f->tensor[f->out[j].tensor].name, d->name);
	if (refuse_hints(c, f, "pointwise", false) < 0)
		return -1;
	k->family = FAM_POINTWISE;
	k->domain = f->out[0].tensor;
	k->flat = true;
	k->warp_specialize = f->sched.warp_specialize == 2;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : f->pos;
	/*
	 * One CTA per tile, as Triton does, unless the schedule asks for a
	 * pipeline (persistent: true, warp_specialize or stages): the CTAs an SM
	 * holds at once overlap loads and compute, and one stage and one staging
	 * copy are all a CTA needs.  It measured 3-6% faster than the persistent
	 * pipelined loop on all four benchmark cases (docs/perf.md).
	 */
	k->persistent = f->sched.persistent == 2 ||
	                (f->sched.persistent == 0 && (k->warp_specialize || f->sched.stages));
	/*
	 * Outputs leave through a staging tile and TMA stores, unless the
	 * schedule says `store: vector`, or one CTA per tile writes only 2-byte
	 * outputs.  The persistent loop needs TMA stores (on an H200 they moved
	 * relu(a*b+c) at 102% of the copy rate where 16-byte stores from
	 * registers reached 70%), and so do f32 outputs (H200 silu(x+b)*y f32:
	 * 16-byte stores 5% slower).  One CTA per tile writing only 2-byte
	 * outputs stores from registers: silu(x+b)*y bf16 ran 0.4% faster so on
	 * both devices (against torch.compile, medians of 8 interleaved rounds:
	 * H200 0.9966x to 1.0002x against 0.9919x to 0.9934x, H100 0.9997x to
	 * 1.0006x against 0.9953x to 0.9967x), relu(a*b+c) bf16 the same
	 * (1.0020x against 1.0026x, 1.0028x against 1.0019x; docs/perf.md).
	 */
	narrow = true;
	for (j = 0; j < f->nout; j++)
		narrow = narrow && dtype_info[f->out[j].dtype].bytes == 2;
	tma_store = f->sched.store == STORE_TMA ||
	            (f->sched.store != STORE_VECTOR && (k->persistent || !narrow));
	k->tma_store = tma_store;
	if (!k->persistent && !k->stages_hint)
		k->stages_hint = 1;
	k->smem_budget = SMEM_BUDGET;
	k->smem_target = SMEM_TARGET;
	k->consumer_threads = THREADS;
	k->threads = THREADS + (k->warp_specialize ? 32 : 0);

	/* parameters: inputs, outputs, then the two runtime extents */
	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		View v = classify(t, d);
		int p;

		if (v == VIEW_NONE)
			return diag_error(c, t->pos,
			                  "cannot place input '%s' in a pointwise kernel over %s: it broadcasts along "
			                  "a leading dim; inputs must be full, a row [cols], a column [rows, 1] or a scalar",
			                  t->name, f->tensor[f->out[0].tensor].name);
		if (v == VIEW_ROW || v == VIEW_COL)
			k->flat = false;
		p = kernel_add_param(c, k, v == VIEW_FULL || v == VIEW_ROW ? PK_TMAP : PK_PTR, t->name);
		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = t->dtype;
		k->param[p].view = v;
		if (k->param[p].kind == PK_TMAP)
			row_bytes += dtype_info[t->dtype].bytes;
	}
	for (j = 0; j < f->nout; j++) {
		const Tensor *t = &f->tensor[f->out[j].tensor];
		int p = kernel_add_param(c, k, tma_store ? PK_TMAP : PK_PTR, t->name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = VIEW_FULL;
	}
	add_size_params(c, k);
	choose_tile(k, f, row_bytes, d);
	k->tile_pos = f->sched.ntile ? f->sched.tile_pos : (Pos){0};
	if (check_tile(c, k, f) || fit_tile(c, k, f))
		return -1;
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].kind == PK_TMAP && k->tile_cols > 256)
			k->param[j].kind = PK_PTR;   /* a run wider than a TMA box: 1-D bulk copies */
		else if (k->param[j].kind == PK_TMAP) {
			k->param[j].box[0] = k->param[j].view == VIEW_ROW ? 1 : k->tile_rows;
			k->param[j].box[1] = k->tile_cols;
		}

	loop = tile_loop(c, k, false, &row0, &col0);
	i = ex_var(c, loop->var);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread issues the loads";
	st_append(c, loop, issue);
	compute = st_new(c, ST_COMPUTE);
	compute->a = row0;
	compute->b = col0;
	compute->comment = arena_printf(c->arena, "%d ops of %s", f->nop - 1, f->name);
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];

		if (!staged_input(f, p, k->tile_cols))
			continue;
		stage_input(c, k, j, "tile", p->view == VIEW_ROW ? 1 : k->tile_rows, k->tile_cols,
		            p->view == VIEW_ROW ? ex_int(c, 0) : row0, col0, issue, compute);
	}
	st_append(c, loop, compute);
	if (!tma_store)
		return 0;

	/* outputs: compute writes a staging copy (one of two, alternating); one thread stores it */
	store = st_if(c, ex_leaf(c, EX_ELECT));
	store->comment = "one thread stores the outputs";
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];
		Stmt *st;
		int b;

		if (p->arg < f->ninput)
			continue;
		b = kernel_add_buf(c, k, arena_printf(c->arena, "stage_%s", f->tensor[p->tensor].name), BUF_STAGING,
		                   p->dtype, k->tile_rows, k->tile_cols);
		k->buf[b].param = j;
		k->buf[b].tensor = p->tensor;
		k->buf[b].stages = staging_copies(k);
		VEC_PUSH(c->arena, compute->writes, compute->nwrites, compute->capwrites)->buf = b;
		compute->writes[compute->nwrites - 1].slot = ex_bin(c, EX_MOD, i, ex_int(c, k->buf[b].stages));
		st = st_new(c, ST_TMA_STORE);
		st->buf = b;
		st->param = j;
		st->slot = ex_bin(c, EX_MOD, i, ex_int(c, k->buf[b].stages));
		st->a = row0;
		st->b = col0;
		st->pos = f->out[p->arg - f->ninput].pos;
		st_append(c, store, st);
	}
	st_append(c, loop, store);
	return 0;
}

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
	if (same_shape(t, d))
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
	s->phase = ROW_BEGIN;
	s->a = row0;
	s->comment = "the row's per-row values and accumulators";
	st_append(c, loop, s);
	passes = st_loop(c, kernel_add_var(c, k, "pass"), ex_int(c, 0), ex_int(c, k->row.passes), LOOP_SERIAL);
	passes->comment = "passes over the row: one a reduction level, then the outputs";
	st_append(c, loop, passes);
	pass = ex_var(c, passes->var);
	chunks = st_loop(c, kernel_add_var(c, k, "ch"), ex_int(c, 0), nchunks, LOOP_SERIAL);
	chunks->comment = "the row's chunks";
	st_append(c, passes, chunks);
	col = ex_var(c, let(c, k, "col", ex_bin(c, EX_MUL, ex_var(c, chunks->var), ex_int(c, CHUNK)), chunks)->var);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread issues the loads of the chunk";
	st_append(c, chunks, issue);
	s = st_new(c, ST_COMPUTE);
	s->phase = ROW_CHUNK;
	s->a = row0;
	s->b = col;
	s->pass = pass;
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
			stage_input(c, k, j, "chunk", 1, CHUNK, p->view == VIEW_ROW ? ex_int(c, 0) : row0, col, issue, s);
	}
	st_append(c, chunks, s);
	s = st_new(c, ST_COMPUTE);
	s->phase = ROW_PASS_END;
	s->a = row0;
	s->pass = pass;
	s->comment = "the pass's block reductions";
	st_append(c, passes, s);
	s = st_new(c, ST_COMPUTE);
	s->phase = ROW_END;
	s->a = row0;
	s->comment = "the per-row outputs";
	st_append(c, loop, s);
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
 * global memory, where L2 and L1 keep them.  The row capacity is the width
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
	int j, cap, per, least, levels, row_bytes = 0, maxl;
	int64_t width;
	bool full_out = false, direct;

	for (j = 1; j < f->nop && !d; j++)
		if (op_info[f->op[j].kind].cls == CLS_REDUCE)
			d = &f->tensor[f->op[j].in[0].tensor];
	if (refuse_hints(c, f, "row-reduction", true) < 0)
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
	k->family = FAM_REDUCTION;
	k->domain = (int)(d - f->tensor);
	k->persistent = f->sched.persistent != 1;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : d->pos;
	k->smem_budget = SMEM_BUDGET;
	k->smem_target = SMEM_TARGET;

	/* every tensor is a full row, a per-row value, a broadcast row or a scalar */
	k->row.view = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *k->row.view);
	for (j = 1; j < f->ntensor; j++)
		if ((k->row.view[j] = classify_row(&f->tensor[j], d)) == VIEW_NONE)
			return diag_error(c, f->tensor[j].pos,
			                  "cannot place '%s' in the row-reduction kernel over '%s': its shape is "
			                  "neither a full row, a value per row, a row broadcast over rows, nor a scalar",
			                  f->tensor[j].name, d->name);
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
	if (width > MAX_ROW || (int64_t)cap * row_bytes + 16 > SMEM_BUDGET) {
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
	} else {
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
		 * CTAs that prefetch one row ahead through the stages (H200:
		 * rmsnorm 0.1315 against 0.1460 ms, softmax 0.1359 against 0.1520,
		 * 32768x4096).  It is the default for a row that fits in
		 * registers, unless `persistent:` or `stages:` says otherwise, or
		 * the compiled kernel spilled registers in every direct form
		 * (c->row_fallback ROW_FB_PIPELINE, set by compile_kernel, which
		 * then lowers again): spills cost more than the pipeline gains
		 * (layernorm, H200: 0.19 against 0.153 ms).
		 */
		direct = !f->sched.stages &&
		         (f->sched.persistent == 1 || (f->sched.persistent == 0 && c->row_fallback < ROW_FB_PIPELINE));
		/*
		 * 16 elements a thread: rows up to 16384 wide stay in registers in two
		 * steps of 8 (codegen's register mode); wider rows take 1024 threads.
		 * A direct row with two levels of reductions (a second pass over
		 * the registers: layernorm's variance) that keeps no computed
		 * full-row values between its passes holds 32, in four steps, at
		 * 40 warps an SM (48 registers a thread): its loads are a smaller
		 * part of its time, so each thread keeps more bytes in flight (H200
		 * layernorm: 0.1365 against 0.1462 ms at 32768x4096, 0.1370
		 * against 0.1523 at 16384x8192; H100 within 2%).  softmax keeps
		 * exp's values (f32, twice a bf16 input's registers) and runs 3%
		 * slower so on the H200 (16384x8192).
		 *
		 * A direct row with one level of reductions (rmsnorm) loads its
		 * row again for the output pass instead of holding it across the
		 * block reduction: the first read asks L2 to keep the row, the
		 * second to drop it.  With nothing held, 32 registers a thread
		 * give 64 warps an SM (H200 rmsnorm: 0.1297 against 0.1326 ms at
		 * 32768x4096, 0.1296 against 0.1360 at 16384x8192, as torch.compile
		 * does).  With two levels the row is read three times and that
		 * lost (layernorm 0.1534 against 0.1365 ms, softmax 0.1416 against
		 * 0.1354).  If either kernel spills, it drops back to 16 elements
		 * held in registers (c->row_fallback ROW_FB_HELD).
		 */
		levels = kir_row_levels(k, arena_alloc(c->arena, (size_t)f->ntensor * sizeof(int)), NULL);
		k->row.deep = direct && c->row_fallback == ROW_FB_NONE && cap / 16 <= 1024 && !row_keeps_values(f, k) &&
		              levels >= 2;
		per = k->row.deep ? 32 : 16;
		least = k->row.deep ? 128 : THREADS;
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

	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		int p = kernel_add_param(c, k, PK_PTR, t->name);

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
	add_size_params(c, k);

	if (k->row.chunk) {
		Expr *nchunks = ex_var(c, let(c, k, "nchunks", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var),
		                                                      ex_int(c, CHUNK)), k->body)->var);

		loop = tile_loop(c, k, true, &row0, &col0);
		stream_row(c, k, loop, row0, nchunks, arena_printf(c->arena, "%d ops of %s", f->nop - 1, f->name));
		return 0;
	}
	loop = tile_loop(c, k, true, &row0, &col0);
	compute = st_new(c, ST_COMPUTE);
	compute->a = row0;
	compute->b = col0;
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
	compute->flag = k->row.steps > 0;
	for (j = 1; j < k->nparam; j++) {
		KParam *p = &k->param[j];

		if (p->kind != PK_PTR || p->arg >= f->ninput || p->view != VIEW_FULL)
			continue;
		/* one bulk copy of the whole row: a single TMA operation, exactly the row's bytes */
		stage_input(c, k, j, "row", 1, cap, row0, ex_int(c, 0), issue, compute);
	}
	st_append(c, loop, compute);
	return 0;
}

int
pass_lower(Comp *c)
{
	Fusion *f = c->fusion;

	switch (f->family) {
	case FAM_POINTWISE:
		return lower_pointwise(c, f);
	case FAM_REDUCTION:
		return lower_reduction(c, f);
	default:
		diag_error(c, f->pos, "the matmul kernel family is not implemented yet (pointwise and row "
		           "reductions are)");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
}
