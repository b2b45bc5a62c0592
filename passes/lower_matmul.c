/*
 * lower_matmul.c: the matmul family's lowering, run by lower.c's pass (its
 * contract holds here), as nvFuser #3941 and the fastest Hopper GEMMs shape
 * it (research/hopper_gemm.md): a persistent loop over output tiles of
 * BM x BN; in it a k loop whose iterations load one BK-slice of A and B by
 * TMA (128-byte swizzled, K-major) and run one mma into a register
 * accumulator (zeroed at the first k-step); then the epilogue, the fused
 * pointwise DAG over the accumulator, in subtiles of BM x EPI_COLS, each
 * written to a staging copy and stored by TMA.
 *
 *   for i in my_tiles (persistent)            tile = cta + i * ncta
 *     for kk in [0, ktiles)                    elect: load a_tile, b_tile at (row0 | col0, kk * BK)
 *                                              mma acc += a_tile x b_tile, zero first if kk == 0
 *     for e in [0, BN / EPI_COLS)              compute reads acc writes stage_o; elect: store
 *
 * Nothing here is warp-specialized or synchronised: circular_buffer buffers
 * the tile loop (the k-loop operands are its pipeline, the k loop its stage
 * loop, P = S - 2 since an mma reads the stages), warp_specialize makes a
 * producer warpgroup (registers lowered to 40) whose tile and k loops merge
 * into one, and two consumer warpgroups (raised to 232) that keep
 * tile { k loop; epilogue }; sync places every wait.  Epilogue inputs (a
 * bias [N], a scale [M, 1], a residual [M, N], scalars) are read from global
 * memory by the compute for now.
 *
 * What this version takes: one matmul of bf16 or f16 operands, A [..., M, K]
 * or with transpose_a [K, M], B [N, K] with transpose_b (the nn.Linear
 * layout) or [K, N]; an operand whose contiguous dim is M or N is loaded
 * MN-major, in 64-wide column chunks, and the mma reads it transposed.
 * Batch dims on A alone (a weight shared by the batch) are rows of one
 * [batch x M, K] matrix; batch dims on both (or A [..., K, M]) make the
 * kernel batched: tiles over every batch, 3-D maps.  Outputs have the
 * matmul's shape.  With consumers: pingpong each consumer warpgroup owns
 * tiles of 64 rows (the CTA tile is 64 x BN) and warp_specialize gives it
 * every other tile.  Several matmuls that share A (SwiGLU's gate and up, a
 * QKV projection) run in one mainloop: A loaded once a stage, a B and an
 * accumulator each, the tile's N divided among them; several that do not
 * are refused as not implemented yet (exit status 6).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"

enum {
	BM = 128, BN = 256, BK = 64,   /* the default CTA tile; each consumer warpgroup holds 64 x BN of it */
	CHUNK = 64,                    /* an MN-major operand's box: 64 elements, the 128-byte swizzle span */
	MAXMM = 4,                     /* matmuls sharing one mainloop */
	ACC_REGS = 128,                /* a consumer thread's accumulator registers, all matmuls together */
	EPI_COLS = 32,                 /* an epilogue subtile is BM x EPI_COLS */
	GROUP = 8,                     /* tile rows a group of the raster holds */
	PRODUCER_THREADS = 128, CONSUMER_THREADS = 256,
	PRODUCER_REGS = 40, CONSUMER_REGS = 232,   /* 128 x 40 + 256 x 232 fits 64K registers */
	SMEM_BUDGET = 227 * 1024                   /* sm_90's dynamic shared memory a CTA */
};

/* A valid spec this version cannot lower: exit status 6, at POS. */
static int PRINTF_LIKE(3, 4)
unbuilt(Comp *c, Pos pos, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(c, pos, "%s", msg);
	c->status = WSF_ERR_UNSUPPORTED;
	return -1;
}

/*
 * The view of an epilogue input over the output [..., M, N], or VIEW_NONE:
 * a scalar, a row [N], a column [..., M, 1] or the full [..., M, N] (the
 * leading dims those of the output, which the kernel sees as rows).
 */
static View
epilogue_view(const Tensor *t, const Tensor *d)
{
	int i, r = d->rank;

	if (t->rank == 0 || (t->rank == 1 && dim_is_one(t->dim[0])))
		return VIEW_SCALAR;
	if (t->rank == 1 && dim_equal(t->dim[0], d->dim[r - 1]))
		return VIEW_ROW;
	if (t->rank != r)
		return VIEW_NONE;
	for (i = 0; i < r - 1; i++)
		if (!dim_equal(t->dim[i], d->dim[i]))
			return VIEW_NONE;
	if (dim_is_one(t->dim[r - 1]))
		return VIEW_COL;
	return dim_equal(t->dim[r - 1], d->dim[r - 1]) ? VIEW_FULL : VIEW_NONE;
}

/* The tile: the hint [M, N, K] checked against what the mma and TMA take, or the default. */
static int
choose_tile(Comp *c, const Fusion *f, bool pingpong, int nmm, int *bm, int *bn, int *bk)
{
	const Schedule *h = &f->sched;
	int m = pingpong ? BM / 2 : BM;   /* ping-pong: a warpgroup's own tile, 64 rows */

	/* a thread holds N / 2 accumulator registers a matmul: several share the budget */
	*bm = m, *bn = BN / nmm / CHUNK * CHUNK, *bk = BK;
	if (*bn < CHUNK)
		return unbuilt(c, f->pos, "%d matmuls in one kernel do not fit a consumer's %d accumulator registers",
		               nmm, ACC_REGS);
	if (!h->ntile)
		return 0;
	if (h->ntile == 3 && nmm * h->tile[1] / 2 > ACC_REGS)
		return diag_error(c, h->tile_pos, "matmul tile N %d holds %d accumulator registers a thread for each of "
		                  "the %d matmuls, more than the %d that fit; use N = %d", h->tile[1], h->tile[1] / 2, nmm,
		                  ACC_REGS, *bn);
	if (h->ntile != 3)
		return diag_error(c, h->tile_pos, "a matmul tile is [M, N, K], 3 extents; saw %d", h->ntile);
	if (h->tile[0] != m)
		return unbuilt(c, h->tile_pos, "a matmul tile of %d rows is not implemented yet: %s, so M is %d",
		               h->tile[0], pingpong ? "with consumers: pingpong each consumer warpgroup owns a tile of "
		               "64 rows" : "the two consumer warpgroups hold 64 rows each", m);
	if (h->tile[1] % CHUNK || h->tile[1] > 256)
		return diag_error(c, h->tile_pos, "matmul tile N is %d; it must be a multiple of %d up to 256 "
		                  "(wgmma's N, and the 64-wide chunks of an N-major operand)", h->tile[1], CHUNK);
	if (h->tile[2] != BK)
		return diag_error(c, h->tile_pos, "matmul tile K is %d; it must be %d (a 128-byte swizzled row of "
		                  "2-byte elements)", h->tile[2], BK);
	*bn = h->tile[1];
	return 0;
}

/*
 * Loads of operand P's BK-slice at k-step KK into BUF: one box [ROWS, BK]
 * from (x0, kk * BK) when K-major; when MN-major (stored [K, ROWS], ROWS
 * contiguous) ROWS / 64 boxes [BK, 64], the chunk h from (kk * BK, x0 +
 * 64 h) to h x BK x 64 elements into the copy.  BT: the batch of a 3-D map.
 */
static void
load_operand(Comp *c, Kernel *k, Stmt *issue, int buf, int p, bool kmajor, int rows, int bk, Expr *x0, Expr *kk,
             Expr *bt, Pos pos)
{
	int h, n = kmajor ? 1 : rows / CHUNK;

	for (h = 0; h < n; h++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);
		Expr *kcol = ex_bin(c, EX_MUL, kk, ex_int(c, bk));

		ld->buf = buf, ld->param = p, ld->slot = ex_int(c, 0);
		if (kmajor) {
			ld->a = x0, ld->b = kcol;
		} else {
			ld->a = kcol;
			ld->b = h ? ex_bin(c, EX_ADD, x0, ex_int(c, h * CHUNK)) : x0;
			ld->off = h ? ex_int(c, h * bk * CHUNK) : NULL;
		}
		ld->z = bt;
		ld->pos = pos;
		st_append(c, issue, ld);
	}
}

/*
 * The matmuls of F (op indices into MM, at most MAXMM), their count, or -1
 * after an error.  Several run in one mainloop when they share their first
 * operand (horizontal fusion: SwiGLU's gate and up, a QKV projection): A is
 * loaded once a stage, each B and accumulator is its own.
 */
static int
the_matmuls(Comp *c, const Fusion *f, int *mm)
{
	int i, n = 0;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i], *first = n ? &f->op[mm[0]] : o;

		if (op_info[o->kind].cls != CLS_MATMUL)
			continue;
		if (n == MAXMM)
			return unbuilt(c, o->pos, "more than %d matmuls in one kernel are not implemented yet", MAXMM);
		if (n && (o->in[0].tensor != first->in[0].tensor || o->transpose_a != first->transpose_a))
			return unbuilt(c, o->pos, "several matmuls in one kernel that do not share their first operand are "
			               "not implemented yet ('%s' reads '%s', '%s' reads '%s')", f->tensor[first->out].name,
			               f->tensor[first->in[0].tensor].name, f->tensor[o->out].name,
			               f->tensor[o->in[0].tensor].name);
		if (n && (o->transpose_b != first->transpose_b || !lower_same_shape(&f->tensor[o->out], &f->tensor[first->out])))
			return unbuilt(c, o->pos, "matmuls that share '%s' but differ in their second operand's layout or "
			               "their output's shape ('%s', '%s') are not implemented yet in one kernel",
			               f->tensor[o->in[0].tensor].name, f->tensor[first->out].name, f->tensor[o->out].name);
		mm[n++] = i;
	}
	return n ? n : diag_internal(c, "lower", "a matmul fusion without a matmul");
}

/*
 * The order of the tiles: groups of GROUP tile rows walked column by column
 * (within a group, down the rows first), so the CTAs working at once share
 * the same few B column tiles and A row tiles in L2 instead of sweeping all
 * of B for every row of tiles.  Rewrites the tile loop's row0 and col0.
 */
static void
raster(Comp *c, Kernel *k, Stmt *loop, Expr *batch_tiles)
{
	Stmt *tile = NULL, *row0 = NULL, *col0 = NULL;
	Expr *ntc = NULL, *rows_t, *span, *first, *height, *in, *t;
	int i;

	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];

		if (x->kind == ST_LET && strcmp(k->var[x->var].name, "tile") == 0)
			tile = x;
		else if (x->kind == ST_LET && strcmp(k->var[x->var].name, "row0") == 0)
			row0 = x;
		else if (x->kind == ST_LET && strcmp(k->var[x->var].name, "col0") == 0)
			col0 = x;
	}
	for (i = 0; i < k->body->nbody; i++)
		if (k->body->body[i]->kind == ST_LET && strcmp(k->var[k->body->body[i]->var].name, "col_tiles") == 0)
			ntc = ex_var(c, k->body->body[i]->var);
	if (!tile || !row0 || !col0 || !ntc)
		return;
	t = ex_var(c, tile->var);
	if (batch_tiles)   /* a batched matmul: the tile within its batch */
		t = ex_bin(c, EX_MOD, t, batch_tiles);
	rows_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows));
	span = ex_bin(c, EX_MUL, ex_int(c, GROUP), ntc);            /* tiles in a group */
	first = ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, t, span), ex_int(c, GROUP));
	height = ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, rows_t, first), ex_int(c, GROUP));   /* the last group may be short */
	in = ex_bin(c, EX_MOD, t, span);
	row0->a = ex_bin(c, EX_MUL, ex_bin(c, EX_ADD, first, ex_bin(c, EX_MOD, in, height)), ex_int(c, k->tile_rows));
	col0->a = ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, in, height), ex_int(c, k->tile_cols));
}

static int
lower_matmul(Comp *c, Fusion *f)
{
	Kernel *k = kernel_new(c, f);
	const Op *op;
	const Tensor *a, *b, *d;
	Stmt *tile_loop, *kloop, *issue, *mma, *eloop, *compute, *store;
	Expr *row0, *col0, *kk, *ecol, *ktiles, *batch = NULL, *bt = NULL, *batch_tiles = NULL;
	int mm[MAXMM], nmm, m, j, pa = 0, pb[MAXMM] = {0}, acc[MAXMM], abuf, bbuf[MAXMM], bm, bn, bk;
	bool akm, bkm;   /* is the operand K-major (K its contiguous dim)? */
	MmaShape *shape;

	c->kernel = k;
	if ((nmm = the_matmuls(c, f, mm)) < 0)
		return -1;
	op = &f->op[mm[0]];
	a = &f->tensor[op->in[0].tensor];
	b = &f->tensor[op->in[1].tensor];
	d = &f->tensor[op->out];
	akm = !op->transpose_a;
	bkm = op->transpose_b;
	/*
	 * Batch dims on A alone with A [..., M, K]: the batch's rows and M are
	 * the rows of one matrix.  Else (on both, or A [..., K, M]) the kernel
	 * is batched: its tiles run over every batch, and each tensor with batch
	 * dims is read and written through a 3-D map [batch, rows, cols].
	 */
	k->batched = b->rank > 2 || (a->rank > 2 && op->transpose_a);
	if (k->batched && nmm > 1)
		return unbuilt(c, f->op[mm[1]].pos, "several batched matmuls in one kernel are not implemented yet");
	if ((a->dtype != DT_BF16 && a->dtype != DT_F16) || b->dtype != a->dtype)
		return diag_error(c, op->pos, "matmul operands must both be bf16 or both f16, saw %s and %s",
		                  dtype_info[a->dtype].name, dtype_info[b->dtype].name);
	if (f->sched.cluster_pos.line)
		return unbuilt(c, f->sched.cluster_pos, "'cluster' is not implemented for matmul kernels yet: they launch "
		               "single CTAs");
	if (f->sched.signal_pos.line)
		return unbuilt(c, f->sched.signal_pos, "'signal' is not implemented for matmul kernels yet");
	if (f->sched.store == STORE_VECTOR)
		return unbuilt(c, f->sched.store_pos, "'store: vector' is not implemented for matmul kernels: the "
		               "epilogue stores through staging subtiles and TMA");
	if (f->sched.warp_specialize == 1)
		return unbuilt(c, f->sched.ws_pos, "a matmul without warp specialization is not implemented yet");
	k->pingpong = f->sched.consumers == CONSUMERS_PINGPONG;
	if (choose_tile(c, f, k->pingpong, nmm, &bm, &bn, &bk))
		return -1;
	for (j = 0; j < f->nout; j++)
		if (!lower_same_shape(&f->tensor[f->out[j].tensor], d))
			return diag_error(c, f->out[j].pos, "cannot place output '%s' in the matmul kernel: its shape "
			                  "differs from the matmul's '%s'", f->tensor[f->out[j].tensor].name, d->name);

	k->domain = op->out;
	k->warp_specialize = true;
	k->persistent = f->sched.persistent != 1;   /* persistent: false runs one CTA a tile */
	k->tma_store = true;
	k->consumer_threads = CONSUMER_THREADS;
	k->threads = CONSUMER_THREADS + PRODUCER_THREADS;
	k->producer_regs = PRODUCER_REGS;
	k->consumer_regs = CONSUMER_REGS;
	k->tile_rows = bm;
	k->tile_cols = bn;
	k->tile_pos = f->sched.ntile ? f->sched.tile_pos : (Pos){0};
	k->smem_budget = SMEM_BUDGET;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : f->pos;

	/* parameters: the operands (tensor maps of 128-byte swizzled K-major boxes), the epilogue's inputs, the outputs */
	for (j = 0; j < f->ninput; j++) {
		const Tensor *t = &f->tensor[f->input[j]];
		bool operand = f->input[j] == op->in[0].tensor;
		View v;
		int p;

		for (m = 0; m < nmm; m++)
			operand |= f->input[j] == f->op[mm[m]].in[1].tensor;
		v = operand ? VIEW_FULL : epilogue_view(t, d);

		if (v == VIEW_NONE)
			return diag_error(c, t->pos, "cannot read '%s' in the matmul's epilogue: over its output [M, N] an "
			                  "input must be full, a row [N], a column [M, 1] or a scalar", t->name);
		p = kernel_add_param(c, k, operand ? PK_TMAP : PK_PTR, t->name);
		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = t->dtype;
		k->param[p].view = v;
		/* an operand's box: [rows, BK] K-major, [BK, 64] MN-major (load_operand) */
		if (f->input[j] == op->in[0].tensor) {
			pa = p;
			k->param[p].box[0] = akm ? bm : bk;
			k->param[p].box[1] = akm ? bk : CHUNK;
		}
		for (m = 0; m < nmm; m++)
			if (f->input[j] == f->op[mm[m]].in[1].tensor) {
				pb[m] = p;
				k->param[p].box[0] = bkm ? bn : bk;
				k->param[p].box[1] = bkm ? bk : CHUNK;
			}
	}
	for (j = 0; j < f->nout; j++) {
		int p = kernel_add_param(c, k, PK_TMAP, f->tensor[f->out[j].tensor].name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = VIEW_FULL;
		k->param[p].box[0] = bm;
		k->param[p].box[1] = EPI_COLS;
	}
	lower_size_params(c, k);
	if (k->batched) {
		int p = kernel_add_param(c, k, PK_SIZE, "batch");

		k->param[p].size = SZ_BATCH;
		batch = ex_var(c, k->param[p].var = kernel_add_var(c, k, "batch"));
	}
	j = kernel_add_param(c, k, PK_SIZE, "inner");
	k->param[j].size = SZ_INNER;
	k->param[j].var = kernel_add_var(c, k, "inner");
	k->param[j].rank = 1;   /* the dim K is, which launch reads from the bound sizes */
	k->param[j].dim[0] = a->dim[a->rank - (akm ? 1 : 2)];

	/* buffers: one stage of each operand (circular_buffer makes S), A's shared; an accumulator a matmul */
	abuf = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", a->name), BUF_TILE, a->dtype, bm, bk);
	k->buf[abuf].param = pa;
	k->buf[abuf].tensor = op->in[0].tensor;
	k->buf[abuf].swizzle = 128;
	for (m = 0; m < nmm; m++) {
		const Op *o = &f->op[mm[m]];
		const Tensor *w = &f->tensor[o->in[1].tensor];   /* its B */

		bbuf[m] = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", w->name), BUF_TILE, w->dtype, bn, bk);
		k->buf[bbuf[m]].param = pb[m];
		k->buf[bbuf[m]].tensor = o->in[1].tensor;
		k->buf[bbuf[m]].swizzle = 128;
		acc[m] = kernel_add_acc(c, k, arena_printf(c->arena, "acc_%s", f->tensor[o->out].name),
		                        o->acc ? o->acc : DT_F32, bm, bn);
		k->acc[acc[m]].tensor = o->out;
	}

	/* the persistent tile loop, and the k loop inside it */
	tile_loop = lower_tile_loop(c, k, false, &row0, &col0);
	if (k->batched) {
		/* tiles run over the batches: tiles = batch_tiles x batch, and bt is a tile's batch */
		Stmt *tiles = NULL;

		Stmt *let = st_new(c, ST_LET);
		int at;

		for (at = 0; at < k->body->nbody && !tiles; at++)
			if (k->body->body[at]->kind == ST_LET && k->body->body[at]->var == k->ntile_var)
				tiles = k->body->body[at];
		if (!tiles)
			return diag_internal(c, "lower_matmul", "the tile loop has no tile count");
		batch_tiles = ex_var(c, let->var = kernel_add_var(c, k, "batch_tiles"));
		let->a = tiles->a;
		st_insert(c, k->body, at - 1, let);
		tiles->a = ex_bin(c, EX_MUL, batch_tiles, batch);
	}
	raster(c, k, tile_loop, batch_tiles);
	if (k->batched) {
		Stmt *tile = NULL;
		int at;

		for (at = 0; at < tile_loop->nbody; at++)
			if (tile_loop->body[at]->kind == ST_LET && strcmp(k->var[tile_loop->body[at]->var].name, "tile") == 0)
				tile = tile_loop->body[at];
		if (!tile)
			return diag_internal(c, "lower_matmul", "the tile loop has no tile");
		bt = ex_var(c, lower_let(c, k, "bt", ex_bin(c, EX_DIV, ex_var(c, tile->var), batch_tiles), tile_loop)->var);
	}
	{
		/* K-steps a tile: a let before the tile loop, which lower_tile_loop appended last */
		Stmt *let = lower_let(c, k, "ktiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->param[j].var), ex_int(c, bk)),
		                      k->body);

		k->body->body[k->body->nbody - 2] = let;
		k->body->body[k->body->nbody - 1] = tile_loop;
		ktiles = ex_var(c, let->var);
	}
	kloop = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), ktiles, LOOP_SERIAL);
	kloop->comment = "the k-steps of this tile";
	st_append(c, tile_loop, kloop);
	kk = ex_var(c, kloop->var);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread loads the k-step's operands";
	st_append(c, kloop, issue);
	load_operand(c, k, issue, abuf, pa, akm, bm, bk, row0, kk, a->rank > 2 ? bt : NULL, op->pos);
	for (m = 0; m < nmm; m++)
		load_operand(c, k, issue, bbuf[m], pb[m], bkm, bn, bk, col0, kk, b->rank > 2 ? bt : NULL, f->op[mm[m]].pos);
	shape = arena_alloc(c->arena, sizeof *shape);
	*shape = (MmaShape){bm, bn, bk, akm, bkm};
	for (m = 0; m < nmm; m++) {   /* one commit group a k-step holds them all (sync) */
		mma = st_new(c, ST_MMA);
		mma->mma = shape;
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = abuf;
		mma->reads[0].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = bbuf[m];
		mma->reads[1].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->writes, mma->nwrites, mma->capwrites)->acc = acc[m];
		mma->cond = ex_bin(c, EX_EQ, kk, ex_int(c, 0));
		mma->pos = f->op[mm[m]].pos;
		st_append(c, kloop, mma);
	}

	/* the epilogue: subtiles of BM x EPI_COLS, each computed into a staging copy and stored by TMA */
	eloop = st_loop(c, kernel_add_var(c, k, "e"), ex_int(c, 0), ex_int(c, bn / EPI_COLS), LOOP_SERIAL);
	eloop->comment = "the epilogue, a subtile at a time";
	st_append(c, tile_loop, eloop);
	ecol = ex_bin(c, EX_ADD, col0, ex_bin(c, EX_MUL, ex_var(c, eloop->var), ex_int(c, EPI_COLS)));
	compute = st_new(c, ST_COMPUTE);
	compute->a = row0;
	compute->b = ecol;
	compute->pass = ex_var(c, eloop->var);   /* which subtile of the accumulator */
	compute->z = bt;
	compute->comment = arena_printf(c->arena, "the epilogue of %s", f->name);
	for (m = 0; m < nmm; m++)
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->acc = acc[m];
	st_append(c, eloop, compute);
	store = st_if(c, ex_leaf(c, EX_ELECT));
	store->comment = "one thread stores the subtile";
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].kind == PK_TMAP && k->param[j].arg >= f->ninput)
			lower_stage_output(c, k, j, k->pingpong ? 2 * bm : bm, EPI_COLS, 2, ex_var(c, eloop->var), row0, ecol,
			                   compute, store);
	for (j = 0; j < store->nbody; j++) {
		Stmt *st = store->body[j];

		if (st->kind != ST_TMA_STORE)
			continue;
		st->z = bt;   /* a batched output's map is 3-D */
		if (k->pingpong)   /* a staging copy holds both warpgroups' subtiles; each stores its own */
			st->off = ex_bin(c, EX_MUL, ex_leaf(c, EX_WG), ex_int(c, bm * EPI_COLS));
	}
	st_append(c, eloop, store);
	return 0;
}

const LowerFamily lower_matmul_family = {lower_matmul, "use a smaller tile or fewer stages"};
