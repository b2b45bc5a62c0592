/*
 * lower_matmul.c: the matmul family's lowering, run by lower.c's pass.
 * Requires a scheduled fusion of the matmul family, planned (Fusion.mm); leaves lower.c's
 * kernel (one copy of each stage, no barrier but those of the protocols it
 * builds) whose plan (Kernel.mm) is the MatmulPlan it built from.  As nvFuser
 * #3941 and the fastest Hopper GEMMs shape it (research/hopper_gemm.md): a
 * persistent loop over output tiles of BM x BN; in it a k loop whose
 * iterations load one BK-slice of A and B by TMA (128-byte swizzled) and
 * run one mma into a register accumulator (zeroed at the first k-step);
 * then the epilogue, the fused pointwise DAG over the accumulator, in
 * subtiles of BM x EPI_COLS, each written to a staging copy and stored by
 * TMA.
 *
 *   for i in my_tiles (persistent)            tile = cta + i * ncta
 *     for kk in [0, ktiles)                    elect: load a_tile, b_tile at (row0 | col0, kk * BK)
 *                                              mma acc += a_tile x b_tile, zero first if kk == 0
 *     for e in [0, BN / EPI_COLS)              compute reads acc writes stage_o; elect: store
 *
 * Nothing here is warp-specialized or synchronised: circular_buffer
 * buffers the tile loop (the k-loop operands are its pipeline, the k loop
 * its stage loop, P = S - 2 since an mma reads the stages),
 * warp_specialize makes a producer warpgroup whose tile and k loops merge
 * into one, and two consumer warpgroups that keep tile { k loop;
 * epilogue }, their registers the plan's (choose_regs); sync places every
 * wait.  Epilogue inputs (a bias [N], a scale [M, 1], a residual [M, N],
 * scalars) are read by the compute from global memory, or where the plan
 * allows from shared memory (stage_rows, preload_inputs), a residual's
 * tile prefetched into L2 by the producer first (prefetch_inputs).
 *
 * What it takes: up to MAXMM matmuls whose operands are all bf16 or all
 * f16, A [..., M, K] or with transpose_a [K, M], B [N, K] with transpose_b
 * (the nn.Linear layout) or [K, N]; an operand whose contiguous dim is M
 * or N is loaded MN-major, in 64-wide column chunks, and the mma reads it
 * transposed.  Batch dims on A alone (a weight shared by the batch) are
 * rows of one [batch x M, K] matrix; batch dims on both (or A [..., K, M])
 * make the kernel batched: tiles over every batch, 3-D maps; one matmul
 * only.  Outputs have the matmul's shape.  With consumers: pingpong each
 * consumer warpgroup owns tiles of 64 rows (the CTA tile is 64 x BN) and
 * warp_specialize gives it every other tile.  Several matmuls that share
 * A (SwiGLU's gate and up, a QKV projection) run in one mainloop: A loaded
 * once a stage, their B side by side in one copy, one mma of N = n x BN
 * into one accumulator whose columns are theirs in turn (the tile's N
 * divided among them).  Matmuls with no A in common (independent) run one
 * after the other in every tile, each its k loop and epilogue, through the
 * same stages and registers.  Split-K (choose_split): a cluster of CTAs
 * shares each tile's k-steps, and each rank adds the others' partial sums
 * of its share of the epilogue's subtiles (split_reduce, a reduce-scatter)
 * before computing and storing them; a swapped tile, one subtile, is rank
 * 0's.  Stream-K (stream_k_plan): the tiles of a last, partial wave are
 * cut into runs of k-steps over every CTA, whose partial sums meet in each
 * tile's owner through a workspace in global memory; or, on few tiles of a
 * long K, each tile into fractions that share its epilogue
 * (fraction_plan).
 *
 * What to build is the schedule pass's (schedule_matmul.c, plan_matmul.c):
 * lower_matmul copies its groups and plan (Fusion.mm) into the Kernel's
 * MatmulPlan (Kernel.mm; set_plan copies the few decisions that are the
 * generic Kernel's) and builds the nest from it; where
 * partial sums over K meet is lower_matmul_ksum.c's (a KSum strategy a
 * row), per-tile waits and staged epilogue inputs lower_matmul_sync.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/* A valid spec this version cannot lower: exit status 6, at POS. */
int PRINTF_LIKE(3, 4)
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
 * Loads of operand P's BK-slice at k-step KK into BUF, BASE elements into
 * the copy: one box [ROWS, BK] from (x0, kk * BK) when K-major; when
 * MN-major (stored [K, ROWS], ROWS contiguous) ROWS / 64 boxes [BK, 64],
 * the chunk h from (kk * BK, x0 + 64 h) to h x BK x 64 elements further.
 * Either way the rows of the copy follow in the order of the operand's
 * rows, so operands loaded at BASE = ROWS x BK apart lie side by side as
 * one operand of their rows together.  BT: the batch of a 3-D map.
 *
 * In a cluster the CTAs along the other operand's axis (AXIS 1 for A, the
 * tiles of one row; 0 for B) need the same slice: each loads its part,
 * ROWS / their count, multicast to them all, so every CTA's copy fills and
 * L2 delivers the slice once.  A CTA's place in the cluster is (rank % cm,
 * rank / cm) (lower_rank_at): its part is its place along AXIS, and the
 * CTAs it shares with are those of its place on the other axis.
 */
static void
load_operand(Comp *c, Kernel *k, Stmt *issue, int buf, int base, int p, bool kmajor, int rows, int bk, Expr *x0,
             Expr *kk, Expr *bt, int axis, Pos pos)
{
	int h, n, cm = k->mm.cluster[0], share = k->mm.cluster[axis], j;
	Expr *at = ex_int(c, base), *mask = NULL;

	if (share > 1) {
		Expr *rank = lower_share_rank(c, k), *place, *part;
		int64_t bits = 0;

		/* A: the CTAs of one tile row, ranks x + cm j; B: of one tile column, ranks cm y + i */
		for (j = 0; j < share; j++)
			bits |= (int64_t)1 << (axis ? cm * j : j);
		if (axis)
			place = cm > 1 ? ex_bin(c, EX_DIV, rank, ex_int(c, cm)) : rank;
		else
			place = k->mm.cluster[1] > 1 ? ex_bin(c, EX_MOD, rank, ex_int(c, cm)) : rank;
		mask = ex_int(c, bits);
		if (k->mm.cluster[1 - axis] > 1)
			mask = ex_bin(c, EX_SHL, mask, axis ? ex_bin(c, EX_MOD, rank, ex_int(c, cm))
			                                     : ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, rank, ex_int(c, cm)),
			                                              ex_int(c, cm)));
		if (ksum_rule[k->mm.ksum].split_cluster)   /* the CTAs of this CTA's K-split rank (lower_split_rank) */
			mask = ex_bin(c, EX_SHL, mask, ex_bin(c, EX_MUL, lower_split_rank(c, k),
			                                      ex_int(c, k->mm.cluster[0] * k->mm.cluster[1])));
		part = ex_bin(c, EX_MUL, place, ex_int(c, rows / share));
		rows /= share;
		x0 = ex_bin(c, EX_ADD, x0, part);
		at = ex_bin(c, EX_ADD, at, ex_bin(c, EX_MUL, part, ex_int(c, bk)));
	}
	n = kmajor ? 1 : rows / CHUNK;
	for (h = 0; h < n; h++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);
		Expr *kcol = ex_bin(c, EX_MUL, kk, ex_int(c, bk)), *off = h ? ex_bin(c, EX_ADD, at, ex_int(c, h * bk * CHUNK)) : at;

		ld->u.tma.buf = buf, ld->u.tma.param = p, ld->u.tma.slot = ex_int(c, 0);
		if (kmajor) {
			ld->u.tma.row = x0, ld->u.tma.col = kcol;
		} else {
			ld->u.tma.row = kcol;
			ld->u.tma.col = h ? ex_bin(c, EX_ADD, x0, ex_int(c, h * CHUNK)) : x0;
		}
		ld->u.tma.off = off->kind == EX_INT && off->ival == 0 ? NULL : off;
		ld->u.tma.mcast = mask;
		ld->u.tma.batch = bt;
		ld->pos = pos;
		st_append(c, issue, ld);
	}
}

/*
 * signal: {per_tile, consumer: [...]}.  The consumer role computes its
 * outputs from the tiles the epilogue stored, read back from global memory
 * once each is there: an output of the consumer is computed by pointwise
 * ops from stored outputs (and numbers).  Each stored output it reads gets
 * a pointer param (KParam.readback) besides its tensor map.
 */
static int
consumer_reads(Comp *c, const Fusion *f, Kernel *k)
{
	bool *stored = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *stored);
	bool *needed = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *needed);
	bool *reads = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *reads);
	int i, j, nstored = 0;

	for (j = 0; j < f->nout; j++)
		if (f->out[j].consumer)
			needed[f->out[j].tensor] = true;
		else
			stored[f->out[j].tensor] = true, nstored++;
	if (!nstored)
		return diag_error(c, f->sched.consumer_pos, "every output is the signal consumer's: the epilogue must "
		                  "store the tiles the consumer computes from (keep one output out of 'consumer')");
	for (i = f->nop - 1; i >= 1; i--) {
		const Op *o = &f->op[i];

		if (!needed[o->out])
			continue;
		if (op_info[o->kind].cls == CLS_MATMUL)
			return diag_error(c, f->sched.consumer_pos, "the signal consumer cannot read matmul '%s': it computes "
			                  "from the tiles the epilogue stores; name '%s' under 'outputs'", f->tensor[o->out].name,
			                  f->tensor[o->out].name);
		for (j = 0; j < o->nin; j++) {
			int t = o->in[j].tensor;

			if (!t)
				continue;
			if (stored[t])
				reads[t] = true;
			else if (f->tensor[t].kind == TK_INPUT)
				return unbuilt(c, o->pos, "the signal consumer reading input '%s' is not implemented yet: it "
				               "computes from the tiles the epilogue stores", f->tensor[t].name);
			else
				needed[t] = true;
		}
	}
	for (j = 0; j < f->nout; j++) {
		int p, t = f->out[j].tensor;

		if (!reads[t])
			continue;
		p = kernel_add_param(c, k, PK_PTR, f->tensor[t].name);
		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = t;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = VIEW_FULL;
		k->param[p].readback = true;
	}
	return 0;
}

/*
 * The order of the tiles: groups of GROUP tile rows walked column by column
 * (within a group, down the rows first), so the CTAs working at once share
 * the same few B column tiles and A row tiles in L2 instead of sweeping all
 * of B for every row of tiles; or, with MatmulPlan.raster_rows, along each row
 * of tiles (a group of one row).  Rewrites the tile loop's row0 and col0.
 */
static void
raster(Comp *c, Kernel *k, Stmt *loop, Expr *batch_tiles)
{
	Stmt *tile = NULL, *row0 = NULL, *col0 = NULL;
	Expr *ntc = NULL, *rows_t, *span, *first, *height, *in, *t;
	int i, group = k->mm.raster_rows ? 1 : GROUP / k->mm.cluster[0] > 0 ? GROUP / k->mm.cluster[0] : 1;

	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];

		if (x->kind == ST_LET && strcmp(k->var[x->u.let.var].name, "tile") == 0)
			tile = x;
		else if (x->kind == ST_LET && strcmp(k->var[x->u.let.var].name, "row0") == 0)
			row0 = x;
		else if (x->kind == ST_LET && strcmp(k->var[x->u.let.var].name, "col0") == 0)
			col0 = x;
	}
	for (i = 0; i < k->body->nbody; i++)
		if (k->body->body[i]->kind == ST_LET && strcmp(k->var[k->body->body[i]->u.let.var].name, "col_tiles") == 0)
			ntc = ex_var(c, k->body->body[i]->u.let.var);
	if (!tile || !row0 || !col0 || !ntc)
		return;
	t = ex_var(c, tile->u.let.var);
	if (batch_tiles)   /* a batched matmul: the tile within its batch */
		t = ex_bin(c, EX_MOD, t, batch_tiles);
	/* in clusters, a group is GROUP tile rows of cluster tiles (lower_tile_loop) */
	rows_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows * k->mm.cluster[0]));
	span = ex_bin(c, EX_MUL, ex_int(c, group), ntc);            /* tiles in a group */
	if (group == 1) {   /* along each row of tiles */
		row0->u.let.value = lower_rank_at(c, k, ex_bin(c, EX_DIV, t, ntc), 0);
		col0->u.let.value = lower_rank_at(c, k, ex_bin(c, EX_MOD, t, ntc), 1);
		return;
	}
	first = ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, t, span), ex_int(c, group));
	height = ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, rows_t, first), ex_int(c, group));   /* the last group may be short */
	in = ex_bin(c, EX_MOD, t, span);
	row0->u.let.value = lower_rank_at(c, k, ex_bin(c, EX_ADD, first, ex_bin(c, EX_MOD, in, height)), 0);
	col0->u.let.value = lower_rank_at(c, k, ex_bin(c, EX_DIV, in, height), 1);
}

/*
 * A ragged last tile moved inside the output: where M (N) is not a
 * multiple of the tile's rows (columns), the last row (column) of tiles
 * starts at M - BM (N - BN) instead, overlapping the tiles before it, so
 * that every TMA box of A (B) lies inside its tensor: boxes that lie
 * mostly outside slow every CTA's loads, not only theirs
 * (docs/perf_history.md).  The rows two tiles share are computed by both
 * and stored by both, with the same bits (tests/gpu/ragged_tiles.py: each
 * element's k-steps are summed in one order wherever its tile starts).
 * Not where a tile's place means more than its outputs: the per-tile flags
 * of a signal or of inputs that wait count tiles by row0 / BM, and an
 * output that accumulates would add the shared rows twice.  The loop's
 * row0 and col0 lets (raster's) become min(x0, max(extent - tile, 0)): a
 * tile (or a cluster's CTA) wholly past the end repeats the last one
 * instead of loading nothing but zeros.  The shift is a function of the
 * coordinate alone, so a cluster's CTAs that share an operand's box
 * (multicast) still agree on where it is.
 */
static void
tile_inside(Comp *c, const Fusion *f, Kernel *k, Stmt *loop)
{
	int i, j;

	if (k->mm.waits || f->sched.signal == SIGNAL_PER_TILE)
		return;
	for (j = 0; j < f->nout; j++)
		if (f->out[j].accumulate)
			return;
	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];
		const char *name = x->kind == ST_LET ? k->var[x->u.let.var].name : "";
		bool row = strcmp(name, "row0") == 0;

		if (!row && strcmp(name, "col0") != 0)
			continue;
		x->comment = row ? "a ragged last row of tiles inside the output: A's boxes in the tensor" :
		                   "a ragged last column of tiles inside the output: B's boxes in the tensor";
		x->u.let.value = ex_bin(c, EX_MIN, x->u.let.value,
		              ex_bin(c, EX_MAX, ex_bin(c, EX_SUB, ex_var(c, row ? k->rows_var : k->cols_var),
		                                       ex_int(c, row ? k->tile_rows : k->tile_cols)), ex_int(c, 0)));
	}
}

/*
 * Group G's part of the tile loop: its k loop (loads of A and of each B,
 * side by side, from params PA and PB; one mma for them all) and its
 * epilogue, which writes the outputs OUT_GROUP gives it.  N: the groups.
 */
static Stmt *
group_tile(Comp *c, Tile *t, const Group *g, int gi, int n, int pa, const int *pb, const int *out_group)
{
	Kernel *k = t->k;
	const Fusion *f = t->f;
	const Op *op = &f->op[g->mm[0]];
	const Tensor *a = &f->tensor[op->in[0].tensor], *b = &f->tensor[op->in[1].tensor];
	Stmt *kloop, *issue, *eloop, *compute, *store;
	Expr *kk, *kat, *ecol;
	int m, j, ecols = k->mm.epi_cols;

	kloop = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), t->kn ? t->kn : t->ktiles, LOOP_SERIAL);
	kloop->comment = n > 1 ? arena_printf(c->arena, "the k-steps of this tile of %s", f->tensor[op->out].name)
	                 : t->kn ? "this part's k-steps of the tile" : "the k-steps of this tile";
	st_append(c, t->loop, kloop);
	kk = ex_var(c, kloop->u.loop.var);
	if (t->kbase)   /* parts of tiles differ in length: the stage counter is the plan's, not i x ktiles + kk */
		kloop->u.loop.lin = ex_bin(c, EX_ADD, t->kbase, kk);
	kat = t->k0 ? ex_bin(c, EX_ADD, t->k0, kk) : kk;   /* a K-split's CTA starts at its own k-step */
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	issue->comment = "one thread loads the k-step's operands";
	st_append(c, kloop, issue);
	load_operand(c, k, issue, t->abuf, 0, pa, t->akm, t->bm, t->bk, t->row0, kat, a->rank > 2 ? t->bt : NULL, 1,
	             op->pos);
	/* the group's B side by side in one copy: one mma of N = n x BN computes them all */
	for (m = 0; m < g->n; m++)
		load_operand(c, k, issue, t->bbuf, m * t->bn * t->bk, pb[m], t->bkm, t->bn, t->bk, t->col0, kat,
		             b->rank > 2 ? t->bt : NULL, 0, f->op[g->mm[m]].pos);
	{
		/* swapped (swap_ab), the mma's A is B's tile and its B is A's: D^T = B A^T */
		Stmt *mma = st_new(c, ST_MMA);

		mma->u.mma.shape = arena_alloc(c->arena, sizeof *mma->u.mma.shape);
		*mma->u.mma.shape = k->mm.swap_ab ? (MmaShape){t->bn, t->bm, t->bk, t->bkm, t->akm}
		                       : (MmaShape){t->bm, g->n * t->bn, t->bk, t->akm, t->bkm};
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = k->mm.swap_ab ? t->bbuf : t->abuf;
		mma->reads[0].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = k->mm.swap_ab ? t->abuf : t->bbuf;
		mma->reads[1].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->writes, mma->nwrites, mma->capwrites)->acc = g->acc[0];
		mma->u.mma.zero_if = ex_bin(c, EX_EQ, kk, ex_int(c, 0));
		mma->pos = op->pos;
		st_append(c, kloop, mma);
	}

	/*
	 * The epilogue: subtiles of BM x EPI_COLS, each computed into a staging
	 * copy and stored by TMA; swapped, one subtile of the whole tile, each
	 * thread's values lying down its columns.
	 */
	eloop = st_loop(c, kernel_add_var(c, k, "e"), ex_int(c, 0), ex_int(c, t->bn / ecols), LOOP_SERIAL);
	eloop->comment = k->mm.swap_ab ? "the epilogue, the whole tile at once" : "the epilogue, a subtile at a time";
	ksum_meet(c, t, g, eloop);
	ecol = ex_bin(c, EX_ADD, t->col0, ex_bin(c, EX_MUL, ex_var(c, eloop->u.loop.var), ex_int(c, ecols)));
	compute = st_new(c, ST_COMPUTE);
	compute->u.compute.row = t->row0;
	compute->u.compute.col = ecol;
	compute->u.compute.pass = ex_var(c, eloop->u.loop.var);   /* which subtile of the accumulator */
	compute->u.compute.batch = t->bt;
	compute->comment = n > 1 ? arena_printf(c->arena, "the epilogue of %s", f->tensor[op->out].name)
	                         : arena_printf(c->arena, "the epilogue of %s", f->name);
	for (m = 0; m < g->n; m++)
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->acc = g->acc[m];
	if (t->k->mm.ksum == KSUM_SK_SCATTER)
		compute->u.compute.step = t->sknp;
	st_append(c, ksum_own(c, t, eloop, false), compute);
	store = st_if(c, ex_leaf(c, EX_ELECT));
	store->comment = "one thread stores the subtile";
	for (j = 1; j < k->nparam; j++) {
		int sb, row_bytes;

		if (k->param[j].kind != PK_TMAP || k->param[j].arg < f->ninput || out_group[k->param[j].arg - f->ninput] != gi)
			continue;
		/* two copies, the next subtile's written while the last one's store reads; a swapped tile's one */
		sb = lower_stage_output(c, k, j, k->mm.pingpong ? 2 * t->bm : t->bm, ecols, k->mm.swap_ab ? 1 : 2,
		                        ex_var(c, eloop->u.loop.var), t->row0, ecol, compute, store);
		/*
		 * Swizzled as TMA reads it (the map takes this buffer's swizzle,
		 * launch_desc.c: rows of 64 bytes of 2-byte elements, 128 of f32;
		 * half that in subtiles of EPI_NARROW): the 8 rows a warp writes at once land in 8 different
		 * 16-byte chunks of the banks, where row-major they shared 2 (4-way
		 * bank conflicts; 8-way for f32; 2-way in rows of 32 bytes).  A
		 * swapped tile's rows of 64 f32 are past the widest swizzle (128
		 * bytes): row-major.
		 */
		row_bytes = ecols * dtype_info[k->buf[sb].dtype].bytes;
		if (row_bytes >= 32 && row_bytes <= 128)
			k->buf[sb].swizzle = row_bytes;
		/*
		 * With two copies a subtile's writers wait for the store
		 * of the one before to finish reading it; with four, for
		 * the store of three before (fewer cycles:
		 * docs/perf_history.md).  Where one cooperative tile's
		 * epilogue runs alone: not ping-pong's halves, a swapped
		 * tile's one copy, a split's or stream-K's sums, nor
		 * independent matmuls' epilogues one after another (the
		 * first's read-wait took a barrier of its own).
		 */
		if (!k->mm.pingpong && !k->mm.swap_ab && !ksum_rule[t->k->mm.ksum].partial && n == 1)
			k->buf[sb].ring = t->bn / ecols < STAGING_RING ? t->bn / ecols : STAGING_RING;
	}
	for (j = 0; j < store->nbody; j++) {
		Stmt *st = store->body[j];

		if (st->kind != ST_TMA_STORE)
			continue;
		st->u.tma.batch = t->bt;   /* a batched output's map is 3-D */
		if (k->mm.pingpong)   /* a staging copy holds both warpgroups' subtiles; each stores its own */
			st->u.tma.off = ex_bin(c, EX_MUL, ex_leaf(c, EX_WG), ex_int(c, t->bm * ecols));
	}
	st_append(c, ksum_own(c, t, eloop, true), store);
	return kloop;
}

/*
 * Does one stage of the operands fit beside the epilogue's staging copies
 * and row inputs?  choose_tile sized a default tile so; a hinted one that
 * does not is refused here, at the hint, with what takes the shared memory
 * (circular buffering could name only the stage).  0 or -1.
 */
static int
check_fit(Comp *c, const Fusion *f, Kernel *k, const Tensor *d, int nmm, int step)
{
	Buf out = {.arena = c->arena};
	int64_t stage = 0, staging = 0, rows = 0, need = kernel_smem_bytes(k) + 16;
	int b, nrow = 0, n = k->tile_cols;
	bool fits;

	if (need <= k->smem_budget)
		return 0;
	for (b = 1; b < k->nbuf; b++) {
		const KBuf *kb = &k->buf[b];
		int64_t bytes = kbuf_copy(kb).stride * kb->stages;

		if (kb->kind == BUF_TILE)
			stage += bytes;
		else if (kb->kind == BUF_ROW)
			rows += bytes, nrow++;
		else if (kb->kind == BUF_STAGING) {
			staging += bytes;
			buf_printf(&out, "%s'%s' %lld", staging == bytes ? "" : ", ", f->tensor[kb->tensor].name,
			           (long long)bytes);
		}
	}
	fit_tile(f, d, k->mm.pingpong, nmm, step, step, k->tile_rows, &n);
	fits = n < k->tile_cols && tile_fits(f, d, k->mm.pingpong, nmm, k->tile_rows, n, 1);
	if (nrow)
		buf_printf(&out, "), the copies of %d row input%s %lld", nrow, nrow == 1 ? "" : "s", (long long)rows);
	else
		buf_printf(&out, ")");
	return diag_error(c, k->tile_pos.line ? k->tile_pos : f->pos,
	                  "matmul tile %d x %d needs %lld bytes of shared memory at one stage, more than the %d-byte "
	                  "budget: the operands' stage %lld, the outputs' staging copies %lld (%s; %s",
	                  k->tile_rows, k->tile_cols, (long long)need, k->smem_budget, (long long)stage,
	                  (long long)staging, out.s, fits ? arena_printf(c->arena, "N = %d fits", n) :
	                  "use fewer outputs or row inputs");
}

/*
 * Kernel T->k's params of F's inputs: the operands of the NG groups G
 * (their params into PA and PB) and the epilogue's inputs, seen over the
 * output D; *EPI_WAITS counts those that wait per tile.  0 or -1.
 */
static int
input_params(Comp *c, const Fusion *f, Tile *t, const Group *g, int ng, const Tensor *d, int *pa, int pb[][MAXMM],
             int *epi_waits)
{
	Kernel *k = t->k;
	int j, gi, m;

	for (j = 0; j < f->ninput; j++) {
		const Tensor *x = &f->tensor[f->input[j]];
		bool as_a = false, as_b = false;
		View v;
		int p;

		if (x->unread)
			continue;
		for (gi = 0; gi < ng; gi++)
			for (m = 0; m < g[gi].n; m++) {
				as_a |= f->input[j] == f->op[g[gi].mm[m]].in[0].tensor;
				as_b |= f->input[j] == f->op[g[gi].mm[m]].in[1].tensor;
			}
		if (as_a && as_b && (t->akm != t->bkm || t->bm != t->bn))
			return unbuilt(c, x->pos, "'%s' is both operands of the kernel's matmuls, with different tiles; this "
			               "is not implemented yet", x->name);
		v = as_a || as_b ? VIEW_FULL : epilogue_view(x, d);
		if (v == VIEW_NONE)
			v = lower_bcast_view(x, d);   /* plan_matmul's choose_swap leaves such a kernel unswapped */
		if (v == VIEW_NONE)
			return diag_error(c, x->pos, "cannot read '%s' in the matmul's epilogue: its shape does not "
			                  "broadcast to the output's", x->name);
		if ((v == VIEW_ROW_AT || v == VIEW_COL_AT) && f->sched.consumer_pos.line)
			return unbuilt(c, x->pos, "'%s' is broadcast along a leading dim of the output; in a kernel with a "
			               "signal consumer role this is not implemented yet", x->name);
		if (x->wait_pos.line && as_a && as_b)
			return unbuilt(c, x->wait_pos, "'%s' waits per tile and is both operands of the kernel's matmuls, "
			               "whose tiles it would arrive in both by rows and by columns: not implemented yet",
			               x->name);
		k->mm.wait_rows += x->wait_pos.line && as_a;
		k->mm.wait_cols += x->wait_pos.line && as_b;
		if (x->wait_pos.line && v != VIEW_FULL)
			return diag_error(c, x->wait_pos, "'%s' waits per tile (wait: per_tile), but it is not a full [M, N] "
			                  "input over the matmul's output: its tiles are not the output's", x->name);
		if (x->wait_pos.line && f->sched.consumer_pos.line)
			return unbuilt(c, x->wait_pos, "an input that waits per tile in a kernel with a signal consumer "
			               "role is not implemented yet");
		if (x->wait_pos.line && !(as_a || as_b) && wait_tile(c, k, t, x, (*epi_waits)++ == 0) < 0)
			return -1;
		if (x->wait_tile[0] && (as_a || as_b))
			return unbuilt(c, x->wait_tile_pos, "a writer's tile for an operand that waits ('%s', which waits by "
			               "%s tiles) is not implemented yet", x->name, as_a ? "row" : "column");
		p = kernel_add_param(c, k, as_a || as_b ? PK_TMAP : PK_PTR, x->name);
		k->param[p].arg = j;
		k->param[p].tensor = f->input[j];
		k->param[p].dtype = x->dtype;
		k->param[p].view = v;
		/* an operand's box: [rows, BK] K-major, [BK, 64] MN-major (load_operand) */
		if (as_a) {   /* in a cluster that shares it, each CTA loads its part (load_operand) */
			k->param[p].box[0] = t->akm ? t->bm / k->mm.cluster[1] : t->bk;
			k->param[p].box[1] = t->akm ? t->bk : CHUNK;
		}
		if (as_b) {
			k->param[p].box[0] = t->bkm ? t->bn / k->mm.cluster[0] : t->bk;
			k->param[p].box[1] = t->bkm ? t->bk : CHUNK;
		}
		for (gi = 0; gi < ng; gi++) {
			if (f->input[j] == f->op[g[gi].mm[0]].in[0].tensor)
				pa[gi] = p;
			for (m = 0; m < g[gi].n; m++)
				if (f->input[j] == f->op[g[gi].mm[m]].in[1].tensor)
					pb[gi][m] = p;
		}
	}
	return 0;
}

/* Kernel T->k's params of F's outputs; *EPI_WAITS counts the epilogue's params that wait per tile.  0 or -1. */
static int
output_params(Comp *c, const Fusion *f, Tile *t, int *epi_waits)
{
	Kernel *k = t->k;
	int j;

	/* an output the epilogue stores is a tensor map of subtile boxes; the signal consumer's, a pointer */
	for (j = 0; j < f->nout; j++) {
		const Tensor *x = &f->tensor[f->out[j].tensor];
		int p;

		/* an output that waits: the tile's word before its first store (wait_inputs) */
		if (x->wait_pos.line && (f->out[j].consumer || f->sched.consumer_pos.line))
			return unbuilt(c, x->wait_pos, "an output that waits per tile in a kernel with a signal consumer "
			               "role is not implemented yet");
		if (x->wait_pos.line && wait_tile(c, k, t, x, (*epi_waits)++ == 0) < 0)
			return -1;
		p = kernel_add_param(c, k, f->out[j].consumer ? PK_PTR : PK_TMAP, x->name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = VIEW_FULL;
		if (!f->out[j].consumer) {   /* a staging subtile (group_tile) */
			k->param[p].box[0] = t->bm;
			k->param[p].box[1] = k->mm.epi_cols;
		}
	}
	return 0;
}

/* Kernel T->k's stage of each operand (from params PA and PB) and accumulators of the NG groups G. */
static void
operand_bufs(Comp *c, const Fusion *f, Tile *t, Group *g, int ng, const int *pa, int pb[][MAXMM])
{
	Kernel *k = t->k;
	const Op *op = &f->op[g[0].mm[0]];
	const Tensor *a = &f->tensor[op->in[0].tensor], *b = &f->tensor[op->in[1].tensor];
	int gi, m;

	/*
	 * Buffers: one stage of each operand (circular_buffer makes S), A's
	 * shared by a group; an accumulator a matmul.  Independent groups run
	 * one after the other through the same stages and registers: a later
	 * group loads into the first's buffers (named after the first's
	 * operands), and its accumulators are the first's registers
	 * (KAcc.alias).
	 */
	t->abuf = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", a->name), BUF_TILE, a->dtype, t->bm, t->bk);
	k->buf[t->abuf].param = pa[0];
	k->buf[t->abuf].tensor = op->in[0].tensor;
	k->buf[t->abuf].swizzle = 128;
	t->bbuf = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", b->name), BUF_TILE, b->dtype,
	                           g[0].n * t->bn, t->bk);
	k->buf[t->bbuf].param = pb[0][0];
	k->buf[t->bbuf].tensor = op->in[1].tensor;
	k->buf[t->bbuf].swizzle = 128;
	/*
	 * A group's accumulator is one tile of n x BN columns, its matmuls'
	 * side by side (quack's layout for SwiGLU's gate and up): the first
	 * names the whole, the others are its columns from m x BN on.
	 * Swapped, it is the tile transposed: BN rows of BM.
	 */
	for (gi = 0; gi < ng; gi++)
		for (m = 0; m < g[gi].n; m++) {
			const Op *o = &f->op[g[gi].mm[m]];
			int x = kernel_add_acc(c, k, arena_printf(c->arena, "acc_%s", f->tensor[o->out].name),
			                       o->acc ? o->acc : DT_F32, k->mm.swap_ab ? t->bn : t->bm,
			                       k->mm.swap_ab ? t->bm : m ? t->bn : g[gi].n * t->bn);

			k->acc[x].tensor = o->out;
			k->acc[x].alias = gi ? g[0].acc[0] : m ? g[gi].acc[0] : 0;
			k->acc[x].col = m * t->bn;
			g[gi].acc[m] = x;
		}
}

/*
 * K-steps a tile (of INNER, K): lets before the tile loop, which
 * lower_tile_loop appended last and which goes after them.  A K-split's
 * CTA takes kper of them from k0 (the last ones fewer, or none when K is
 * short), and kparts of the cluster's CTAs have any; stream-K's plan
 * (stream_k_plan).  0 or -1.
 */
static int
k_steps(Comp *c, Tile *t, int inner)
{
	Kernel *k = t->k;
	Expr *steps = ex_bin(c, EX_CEILDIV, ex_var(c, inner), ex_int(c, t->bk));

	k->body->nbody--;
	if (ksum_rule[t->k->mm.ksum].split_cluster) {
		Expr *all = ex_var(c, lower_let(c, k, "ksteps", steps, k->body)->u.let.var), *per;

		per = ex_var(c, lower_let(c, k, "kper", ex_bin(c, EX_CEILDIV, all, ex_int(c, k->mm.ksize.splits)), k->body)->u.let.var);
		t->k0 = ex_var(c, lower_let(c, k, "k0", ex_bin(c, EX_MUL, lower_split_rank(c, k), per), k->body)->u.let.var);
		t->kparts = ex_var(c, lower_let(c, k, "kparts", ex_bin(c, EX_CEILDIV, all, per), k->body)->u.let.var);
		steps = ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, all, t->k0), per), ex_int(c, 0));
	}
	t->ktiles = ex_var(c, lower_let(c, k, "ktiles", steps, k->body)->u.let.var);
	if (ksum_rule[t->k->mm.ksum].workspace && stream_k_plan(c, k, t) < 0)
		return -1;
	st_append(c, k->body, t->loop);
	return 0;
}

/* The plan's decisions that are the generic Kernel's (K's launch shape and registers) and tile T's. */
static void
set_plan(Kernel *k, Tile *t)
{
	const MatmulPlan *p = &k->mm;

	k->persistent = p->persistent;
	k->producer_regs = p->producer_regs;
	k->consumer_regs = p->consumer_regs;
	k->tile_rows = p->bm;
	k->tile_cols = p->bn;
	k->stages_default = p->stages_default;
	t->bm = p->bm, t->bn = p->bn, t->bk = p->bk;
	t->akm = p->akm, t->bkm = p->bkm;
}

static int
lower_matmul(Comp *c, Fusion *f)
{
	Kernel *k = kernel_new(c, f);
	const MatmulSchedule *ms = f->mm;
	const Op *op;
	const Tensor *a, *d;
	Group g[MAXMM];
	Tile t = {.k = k, .f = f};
	Expr *batch = NULL, *batch_tiles = NULL;
	Stmt *first_kloop = NULL;
	int ng, gi, j, epi_waits = 0, pa[MAXMM] = {0}, pb[MAXMM][MAXMM] = {{0}};

	c->kernel = k;
	if (!ms)
		return diag_internal(c, "lower_matmul", "a matmul fusion the schedule pass did not plan");
	ng = ms->ng;
	memcpy(g, ms->g, sizeof g);   /* the accumulators are lowering's (group_tile) */
	op = &f->op[g[0].mm[0]];
	a = &f->tensor[op->in[0].tensor];
	d = &f->tensor[op->out];
	k->mm = ms->plan;
	set_plan(k, &t);
	k->domain = op->out;
	k->warp_specialize = true;
	k->tma_store = true;
	k->consumer_threads = CONSUMER_THREADS;
	k->threads = CONSUMER_THREADS + PRODUCER_THREADS;
	k->tile_pos = f->sched.ntile ? f->sched.tile_pos : (Pos){0};
	k->smem_budget = SMEM_BUDGET;
	k->stages_hint = f->sched.stages;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : f->pos;

	/* parameters: the operands (tensor maps of 128-byte swizzled boxes), the epilogue's inputs, the outputs */
	if (input_params(c, f, &t, g, ng, d, pa, pb, &epi_waits) < 0 || output_params(c, f, &t, &epi_waits) < 0)
		return -1;
	if (f->sched.consumer_pos.line && consumer_reads(c, f, k) < 0)
		return -1;
	if (ksum_rule[k->mm.ksum].workspace) {
		kernel_add_param(c, k, PK_WORKSPACE, "sk_work");
		j = kernel_add_param(c, k, PK_SIZE, "sk_on");
		k->param[j].size = SZ_SK_ON;
		k->param[j].var = kernel_add_var(c, k, "sk_on");
	}
	lower_size_params(c, k);
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].view == VIEW_ROW_AT || k->param[j].view == VIEW_COL_AT)
			lower_bcast_at(c, k, j, d);
	if (k->mm.batched) {
		int p = kernel_add_param(c, k, PK_SIZE, "batch");

		k->param[p].size = SZ_BATCH;
		batch = ex_var(c, k->param[p].var = kernel_add_var(c, k, "batch"));
	}
	j = kernel_add_param(c, k, PK_SIZE, "inner");
	k->param[j].size = SZ_INNER;
	k->param[j].var = kernel_add_var(c, k, "inner");
	k->param[j].rank = 1;   /* the dim K is, which launch reads from the bound sizes */
	k->param[j].dim[0] = a->dim[a->rank - (t.akm ? 1 : 2)];

	operand_bufs(c, f, &t, g, ng, pa, pb);

	/*
	 * Launched as a programmatic dependent: every thread waits for the
	 * grid before it before anything touches global memory, after what
	 * needs none (barrier init, map prefetch); the next grid may
	 * launch once each CTA's consumers are past their last tile
	 * (lower_matmul's end), as quack does.  Launched at once, at the
	 * top, it slowed long k loops (docs/perf_history.md).
	 */
	k->pdl = true;
	{
		Stmt *wait = st_new(c, ST_GRID_DEP);

		wait->comment = "the kernel before in the stream has finished, its writes visible";
		st_append(c, k->body, wait);
	}

	/* the persistent tile loop */
	t.loop = lower_tile_loop(c, k, false, &t.row0, &t.col0);
	if (k->mm.batched) {
		/* tiles run over the batches: tiles = batch_tiles x batch, and bt is a tile's batch */
		Stmt *tiles = NULL;

		Stmt *let = st_new(c, ST_LET);
		int at;

		for (at = 0; at < k->body->nbody && !tiles; at++)
			if (k->body->body[at]->kind == ST_LET && k->body->body[at]->u.let.var == k->ntile_var)
				tiles = k->body->body[at];
		if (!tiles)
			return diag_internal(c, "lower_matmul", "the tile loop has no tile count");
		batch_tiles = ex_var(c, let->u.let.var = kernel_add_var(c, k, "batch_tiles"));
		let->u.let.value = tiles->u.let.value;
		st_insert(c, k->body, at - 1, let);
		tiles->u.let.value = ex_bin(c, EX_MUL, batch_tiles, batch);
	}
	raster(c, k, t.loop, batch_tiles);
	if (k->mm.batched) {
		Stmt *tile = NULL;
		int at;

		for (at = 0; at < t.loop->nbody; at++)
			if (t.loop->body[at]->kind == ST_LET && strcmp(k->var[t.loop->body[at]->u.let.var].name, "tile") == 0)
				tile = t.loop->body[at];
		if (!tile)
			return diag_internal(c, "lower_matmul", "the tile loop has no tile");
		t.bt = ex_var(c, lower_let(c, k, "bt", ex_bin(c, EX_DIV, ex_var(c, tile->u.let.var), batch_tiles),
		                           t.loop)->u.let.var);
	}
	tile_inside(c, f, k, t.loop);
	if (k_steps(c, &t, k->param[j].var) < 0)
		return -1;
	/* in the tile loop, each group's k loop and epilogue */
	for (gi = 0; gi < ng; gi++) {
		Stmt *kloop = group_tile(c, &t, &g[gi], gi, ng, pa[gi], pb[gi], ms->out_group);

		if (gi == 0)
			first_kloop = kloop;
	}
	if (ng == 1)
		prefetch_inputs(c, f, k, &t, first_kloop);
	stage_rows(c, f, k, &t, first_kloop, ng);
	preload_inputs(f, k, &t, ng);
	if (k->mm.waits)
		wait_inputs(c, f, k, &t, batch, batch_tiles);
	if (f->sched.signal == SIGNAL_PER_TILE)
		lower_signal(c, k, t.loop, t.row0, t.col0, t.bt, batch_tiles,
		             f->sched.consumer_pos.line ? first_kloop : NULL, t.ktiles);
	if (check_fit(c, f, k, d, g[0].n, k->mm.kmajor_b ? EPI_NARROW : CHUNK) < 0)
		return -1;
	{
		/* after the tile loop: warp_specialize gives it to the consumers, after their last tile */
		Stmt *go = st_new(c, ST_GRID_DEP);

		go->u.grid_dep.launch = true;
		go->comment = "the next kernel in the stream may launch (its CTAs start as this one's leave, and wait for it)";
		st_append(c, k->body, go);
	}
	return 0;
}

const LowerFamily lower_matmul_family = {lower_matmul, "use a smaller tile or fewer stages", NULL, NULL};
