/*
 * lower.c: fusion IR -> kernel IR: the pass, and what the kernel families'
 * lowerings share.  Requires a scheduled fusion (f->family set); leaves a
 * kernel whose TMA loads have one copy and no barrier, whose asynchronous
 * copies nothing waits for, its parameters within KERNEL_PARAM_MAX; breaks
 * nothing.
 *
 * Each family's rules are a file of their own (lower_pointwise.c,
 * lower_reduction.c, lower_matmul.c), reached through the table below
 * (lower_family), not through tests of the family; here are the tile loop,
 * the size parameters, the staged inputs, the per-tile signal and the hints
 * a family refuses.  Every family leaves a body that is a loop over this
 * CTA's tiles (a tile a CTA, or persistent) in which one elected thread
 * issues the TMA loads of the staged inputs into single-copy shared buffers
 * and the threads compute and store the outputs (16-byte vector stores, or
 * a staging buffer and a TMA store); circular_buffer.c and sync.c add
 * their copies, mbarriers and waits.  Lowering places no wait, arrive,
 * fence or barrier (kverify checks it after this pass): a protocol it
 * builds (a per-tile signal and its consumer role, a K-split's reduction,
 * inputs that wait) is its statements, with the barriers they name, and
 * sync places their waits (sync.c's contract).  A tile hint that leaves no room for
 * one stage and the output staging copies is an error at the hint.  An input
 * no op reads (Tensor.unread) has no parameter; a spec whose parameters
 * overflow CUDA's space for them is an error at the tensor that does not fit.
 */
#include <string.h>

#include "passes.h"

bool
lower_same_shape(const Tensor *a, const Tensor *b)
{
	int i;

	if (a->rank != b->rank)
		return false;
	for (i = 0; i < a->rank; i++)
		if (!dim_equal(a->dim[i], b->dim[i]))
			return false;
	return true;
}

Stmt *
lower_let(Comp *c, Kernel *k, const char *name, Expr *e, Stmt *block)
{
	Stmt *s = st_new(c, ST_LET);

	s->u.let.var = kernel_add_var(c, k, name);
	s->u.let.value = e;
	st_append(c, block, s);
	return s;
}

/* The two runtime extents of the 2-D view, as parameters. */
void
lower_size_params(Comp *c, Kernel *k)
{
	int rows_p = kernel_add_param(c, k, PK_SIZE, "rows"), cols_p = kernel_add_param(c, k, PK_SIZE, "cols");

	k->rows_var = k->param[rows_p].var = kernel_add_var(c, k, "rows");
	k->param[rows_p].size = SZ_ROWS;
	k->cols_var = k->param[cols_p].var = kernel_add_var(c, k, "cols");
	k->param[cols_p].size = SZ_COLS;
}

/*
 * Stages input param J: a tile buffer of ROWS x COLS named KIND_NAME (tile_x,
 * row_x, chunk_x: a prefix of codegen/emit.c's table), an elected load of it
 * at (ROW, COL) appended to ISSUE, and COMPUTE reading the buffer.  Circular
 * buffering gives both their slots later.
 */
int
lower_stage_input(Comp *c, Kernel *k, int j, const char *kind, int rows, int cols, Expr *row, Expr *col,
                  Stmt *issue, Stmt *compute)
{
	const KParam *p = &k->param[j];
	int b = kernel_add_buf(c, k, arena_printf(c->arena, "%s_%s", kind, p->name), BUF_TILE, p->dtype, rows, cols);
	Stmt *ld = st_new(c, ST_TMA_LOAD);

	k->buf[b].param = j;
	k->buf[b].tensor = p->tensor;
	ld->u.tma.buf = b;
	ld->u.tma.param = j;
	ld->u.tma.slot = ex_int(c, 0);
	ld->u.tma.row = row;
	ld->u.tma.col = col;
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
int
lower_stage_output(Comp *c, Kernel *k, int j, int rows, int cols, int copies, Expr *counter, Expr *row, Expr *col,
                   Stmt *compute, Stmt *store)
{
	const Fusion *f = k->fusion;
	KParam *p = &k->param[j];
	Stmt *st = st_new(c, ST_TMA_STORE);
	Expr *slot = ex_bin(c, EX_MOD, counter, ex_int(c, copies));
	int b = kernel_add_buf(c, k, arena_printf(c->arena, "stage_%s", f->tensor[p->tensor].name), BUF_STAGING,
	                       p->dtype, rows, cols);

	k->buf[b].param = j;
	k->buf[b].tensor = p->tensor;
	k->buf[b].stages = copies;
	VEC_PUSH(c->arena, compute->writes, compute->nwrites, compute->capwrites)->buf = b;
	compute->writes[compute->nwrites - 1].slot = slot;
	st->u.tma.buf = b;
	st->u.tma.param = j;
	st->u.tma.slot = slot;
	st->u.tma.row = row;
	st->u.tma.col = col;
	st->pos = f->out[p->arg - f->ninput].pos;
	st->u.tma.add = f->out[p->arg - f->ninput].accumulate;   /* an add to what the output holds */
	st_append(c, store, st);
	return b;
}

Stmt *
lower_tile_loop(Comp *c, Kernel *k, bool whole_rows, Expr **row0, Expr **col0)
{
	Stmt *loop;
	Expr *i, *tile, *ntc = NULL, *ntiles, *cta, *ncta;
	int cm = kernel_mm(k)->cluster[0], cn = kernel_mm(k)->cluster[1], n = kernel_cluster_ctas(k);

	/*
	 * In clusters the unit of work is a cluster tile of cm x cn CTA tiles:
	 * cluster CTA / (cm cn) takes cluster tiles as a CTA would take tiles,
	 * and each of its CTAs the CTA tile at its rank (rank % cm, rank / cm).
	 * A K-split's cluster takes one tile, every CTA of it the same.
	 */
	cta = lower_unit(c, k, EX_CTA);
	ncta = lower_unit(c, k, EX_NCTA);
	if (whole_rows && k->tile_rows > 1) {   /* rows a CTA (RowPlan.lanes): a tile is tile_rows rows */
		k->ntile_var = lower_let(c, k, "tiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var),
		                                                   ex_int(c, k->tile_rows)), k->body)->u.let.var;
	} else if (whole_rows) {
		k->ntile_var = k->rows_var;
	} else {
		ntc = ex_var(c, lower_let(c, k, "col_tiles", ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var),
		                                                     ex_int(c, k->tile_cols * cn)), k->body)->u.let.var);
		ntiles = ex_bin(c, EX_MUL, ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows * cm)), ntc);
		k->ntile_var = lower_let(c, k, "tiles", ntiles, k->body)->u.let.var;
	}
	/*
	 * One CTA per tile: the grid is the tile count, so each CTA's count is
	 * the constant 1 and no 64-bit division runs in every thread.  A matmul
	 * keeps the count: with its tile loop folded away ptxas serialized the
	 * wgmmas of a K-major B at 128 x 256 (C7514, gemm_one_cta_k.yaml).
	 */
	k->niter_var = lower_let(c, k, whole_rows ? "my_rows" : "my_tiles",
	                         !k->persistent && k->family != FAM_MATMUL ? ex_int(c, 1) :
	                         ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, ex_var(c, k->ntile_var), cta), ncta),
	                         k->body)->u.let.var;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->niter_var), LOOP_TILE);
	loop->comment = whole_rows ? "this CTA's rows" : n > 1 ? "this cluster's tiles" : "this CTA's tiles";
	st_append(c, k->body, loop);
	i = ex_var(c, loop->u.loop.var);
	tile = ex_bin(c, EX_ADD, cta, ex_bin(c, EX_MUL, i, ncta));
	if (whole_rows) {
		if (k->tile_rows > 1)
			tile = ex_bin(c, EX_MUL, tile, ex_int(c, k->tile_rows));
		*row0 = ex_var(c, lower_let(c, k, "row0", tile, loop)->u.let.var);
		*col0 = ex_int(c, 0);
		return loop;
	}
	tile = ex_var(c, lower_let(c, k, "tile", tile, loop)->u.let.var);
	*row0 = ex_var(c, lower_let(c, k, "row0", lower_rank_at(c, k, ex_bin(c, EX_DIV, tile, ntc), 0), loop)->u.let.var);
	*col0 = ex_var(c, lower_let(c, k, "col0", lower_rank_at(c, k, ex_bin(c, EX_MOD, tile, ntc), 1), loop)->u.let.var);
	return loop;
}

Expr *
lower_unit(Comp *c, const Kernel *k, int leaf)
{
	int n = kernel_cluster_ctas(k);

	return n > 1 ? ex_bin(c, EX_DIV, ex_leaf(c, leaf), ex_int(c, n)) : ex_leaf(c, leaf);
}

/*
 * The first row (AXIS 0) or column (1) of this CTA's tile in cluster tile
 * row or column AT: AT x the cluster tile's extent, plus the CTA tiles
 * before this CTA's rank along the axis.
 */
Expr *
lower_rank_at(Comp *c, const Kernel *k, Expr *at, int axis)
{
	int cm = kernel_mm(k)->cluster[0], cn = kernel_mm(k)->cluster[1], ext = axis ? k->tile_cols : k->tile_rows;
	Expr *x = ex_bin(c, EX_MUL, at, ex_int(c, ext * kernel_mm(k)->cluster[axis])), *r;

	if (kernel_mm(k)->cluster[axis] == 1)
		return x;
	r = lower_share_rank(c, k);
	r = axis ? (cm > 1 ? ex_bin(c, EX_DIV, r, ex_int(c, cm)) : r) : (cn > 1 ? ex_bin(c, EX_MOD, r, ex_int(c, cm)) : r);
	return ex_bin(c, EX_ADD, x, ex_bin(c, EX_MUL, r, ex_int(c, ext)));
}

Expr *
lower_share_rank(Comp *c, const Kernel *k)
{
	int n = kernel_share_ctas(k);

	return ksum_rule[kernel_mm(k)->ksum].split_cluster && n > 1 ? ex_bin(c, EX_MOD, ex_leaf(c, EX_RANK), ex_int(c, n))
	                                                  : ex_leaf(c, EX_RANK);
}

Expr *
lower_split_rank(Comp *c, const Kernel *k)
{
	int n = kernel_share_ctas(k);

	return n > 1 ? ex_bin(c, EX_DIV, ex_leaf(c, EX_RANK), ex_int(c, n)) : ex_leaf(c, EX_RANK);
}

/*
 * signal: per_tile.  Each output tile's flag (the flags row-major over
 * [batch, row tiles, col tiles]) is set to the epoch once its stores have
 * landed.  The tile loop signals the tile before, after this tile's stores are
 * issued, so those stay in flight while the thread that committed the
 * earlier ones waits for them (sync places the wait); after the loop the
 * last tile is signalled.  With ping-pong a warpgroup's tiles are every
 * other one, from its own: the tile before is two iterations back.  One
 * CTA a tile (persistent: false) has no tile after its own to overlap:
 * it signals its tile at the end of it.
 *
 * With a consumer (signal: {per_tile, consumer: [...]}) the signal goes to
 * the kernel's consumer role instead of flags (which, with flags: true, the
 * role raises once it has written a tile's outputs): the CTA's tile j (its loop
 * iteration) arrives on landed[j % SIGNAL_SLOTS] once the consumer has taken
 * tile j - SIGNAL_SLOTS (a wait on taken[]), and the consumer role's loop
 * (Kernel.tile_consumer, which warp_specialize places) walks the same tiles:
 * it waits on landed[], computes its outputs from the stored tile, and
 * arrives on taken[].  The slots let the consumer lag SIGNAL_SLOTS tiles
 * behind; an even count gives each ping-pong warpgroup slots of its own.
 * Such a matmul signals the tile before inside its mainloop (KLOOP), at
 * k-step SIGNAL_KSTEP (or the last, when there are fewer): by then the
 * stores have landed, so the wait costs nothing, and the consumer reads the
 * tile while L2 still holds it; at the tile's end it would wait a whole
 * mainloop more, and the tile would come back from DRAM
 * (docs/perf_history.md).
 */
enum {
	SIGNAL_SLOTS = 4,
	SIGNAL_KSTEP = 4   /* a matmul signals the tile before at this k-step of its tile (or its last) */
};

/*
 * Appends to IN what publishes tile J: the signal to flag word FLAG of
 * param P, or (P 0) to the consumer role, on barriers LANDED and TAKEN
 * (sync.c's expand_signal places its wait on TAKEN).
 */
static void
publish(Comp *c, Stmt *in, int p, Expr *flag, int landed, int taken, Expr *j, bool before, const char *comment)
{
	Stmt *s = st_new(c, ST_SIGNAL);

	s->u.signal.before = before;
	s->comment = comment;
	if (p) {
		s->u.signal.param = p;
		s->u.signal.tile = flag;
	} else {
		s->u.signal.bar = landed;
		s->u.signal.taken = taken;
		s->u.signal.barslot = ex_bin(c, EX_MOD, j, ex_int(c, SIGNAL_SLOTS));
		s->u.signal.tile = j;
	}
	st_append(c, in, s);
}

/*
 * The consumer role's loop, of THREADS threads: the tiles of the CTA's tile
 * LOOP, each computing its outputs (a compute at the tile's ROW0, COL0 and
 * batch BT), with flags (param FLAGS) raising the tile's word FLAG; the
 * barriers *LANDED and *TAKEN it waits on and releases (sync.c's
 * expand_signal places the wait, the barrier and the arrive).
 */
static void
tile_consumer_loop(Comp *c, Kernel *k, Stmt *loop, Expr *row0, Expr *col0, Expr *bt, int threads, int *landed,
                   int *taken, int flags, Expr *flag)
{
	Stmt *cl = st_loop(c, kernel_add_var(c, k, "j"), ex_int(c, 0), loop->u.loop.hi, LOOP_SERIAL);
	Stmt *x = st_new(c, ST_COMPUTE);
	int i;

	*landed = kernel_add_bar(c, k, "landed", SIGNAL_SLOTS, 1);
	*taken = kernel_add_bar(c, k, "taken", SIGNAL_SLOTS, threads);

	cl->comment = "the signal consumer: each of the CTA's tiles once it is in global memory";
	for (i = 0; i < loop->nbody; i++)   /* where tile j is: the tile loop's lets */
		if (loop->body[i]->kind == ST_LET)
			st_append(c, cl, st_clone(c, loop->body[i], loop->u.loop.var, ex_var(c, cl->u.loop.var)));
	x->u.compute.row = row0;
	x->u.compute.col = col0;
	x->u.compute.batch = bt;
	x->comment = "the signal consumer's outputs, from the stored tile";
	st_append(c, cl, x);
	if (flags) {
		/* flags: true: one thread raises the flag, after the role's barrier (sync places it) */
		Stmt *one = st_if(c, ex_leaf(c, EX_ELECT)), *sig = st_new(c, ST_SIGNAL);

		sig->u.signal.param = flags;
		sig->u.signal.tile = flag;
		sig->comment = "the tile's consumer outputs are written";
		st_append(c, one, sig);
		st_append(c, cl, one);
	}
	k->tile_consumer = cl;
}

/* The epoch size param, added once: a kernel that signals and waits sets and waits for the same epoch. */
int
lower_epoch(Comp *c, Kernel *k)
{
	int e;

	for (e = 1; e < k->nparam; e++)
		if (k->param[e].kind == PK_SIZE && k->param[e].size == SZ_EPOCH)
			return e;
	e = kernel_add_param(c, k, PK_SIZE, "epoch");
	k->param[e].size = SZ_EPOCH;
	k->param[e].var = kernel_add_var(c, k, "epoch");
	return e;
}

Expr *
lower_flag_index(Comp *c, const Kernel *k, Expr *row0, Expr *col0, Expr *bt, Expr *batch_tiles)
{
	/* bt * batch_tiles + (row0 / BM) * col_tiles + col0 / BN, col_tiles = ceildiv(cols, BN) */
	Expr *flag = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, row0, ex_int(c, k->tile_rows)),
	                                      ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var), ex_int(c, k->tile_cols))),
	                    ex_bin(c, EX_DIV, col0, ex_int(c, k->tile_cols)));

	return bt ? ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, bt, batch_tiles), flag) : flag;
}

void
lower_signal(Comp *c, Kernel *k, Stmt *loop, Expr *row0, Expr *col0, Expr *bt, Expr *batch_tiles, Stmt *kloop,
             Expr *ktiles)
{
	Stmt *prev, *last, *in;
	Expr *i = ex_var(c, loop->u.loop.var), *flag = NULL, *first, *step, *li;
	int p = 0, landed = 0, taken = 0, groups = kernel_consumer_groups(k);   /* each group its tiles */

	if (k->fusion->sched.consumer_pos.line) {
		int fp = 0;
		Expr *fl = NULL;

		if (k->fusion->sched.consumer_flags) {   /* flags: true: the role raises them */
			fp = kernel_add_param(c, k, PK_FLAGS, "flags");
			lower_epoch(c, k);
			k->signal = true;
			fl = lower_flag_index(c, k, row0, col0, bt, batch_tiles);
		}
		/* the producer warpgroup's warps but the first, which issues the loads */
		tile_consumer_loop(c, k, loop, row0, col0, bt, k->threads - k->consumer_threads - 32, &landed, &taken,
		                   fp, fl);
	} else {
		p = kernel_add_param(c, k, PK_FLAGS, "flags");
		lower_epoch(c, k);
		k->signal = true;
		flag = lower_flag_index(c, k, row0, col0, bt, batch_tiles);
	}
	if (!k->persistent) {
		prev = st_if(c, ex_leaf(c, EX_ELECT));
		prev->comment = "the thread that stored the tile signals it";
		publish(c, prev, p, flag, landed, taken, i, false, "the tile is in global memory");
		st_append(c, loop, prev);
		return;
	}
	if (flag)
		flag = ex_inline_lets(c, loop, flag);
	first = groups > 1 ? ex_leaf(c, EX_WG) : ex_int(c, 0);
	step = ex_int(c, groups);

	/* in the loop: the tile before, from the second of this thread's tiles on */
	prev = st_if(c, ex_leaf(c, EX_ELECT));
	prev->comment = "the thread that stored the tiles signals them";
	in = st_if(c, ex_bin(c, EX_GE, i, ex_bin(c, EX_ADD, first, step)));
	st_append(c, prev, in);
	li = ex_bin(c, EX_SUB, i, step);
	publish(c, in, p, flag ? ex_subst(c, flag, loop->u.loop.var, li) : NULL, landed, taken, li, true,
	        "the tile before is in global memory");
	if (kloop) {
		/* a few k-steps into this tile's mainloop: its stores have landed, still in L2 */
		Stmt *at = st_if(c, ex_bin(c, EX_EQ, ex_var(c, kloop->u.loop.var), ex_bin(c, EX_MIN, ex_int(c, SIGNAL_KSTEP),
		                                                                 ex_bin(c, EX_SUB, ktiles, ex_int(c, 1)))));

		at->comment = "a few k-steps into the tile: the stores of the tile before have landed by now";
		st_append(c, at, prev);
		st_insert(c, kloop, 0, at);   /* before the k-step's mma: a branch among them serializes them */
	} else {
		st_append(c, loop, prev);
	}

	/* after it: the last tile, i = first + step * ((my_tiles - 1 - first) / step) */
	last = st_if(c, ex_leaf(c, EX_ELECT));
	in = st_if(c, ex_bin(c, EX_LT, first, loop->u.loop.hi));
	st_append(c, last, in);
	li = groups > 1 ? ex_bin(c, EX_ADD, first, ex_bin(c, EX_MUL, step, ex_bin(c, EX_DIV,
	                      ex_bin(c, EX_SUB, ex_bin(c, EX_SUB, loop->u.loop.hi, ex_int(c, 1)), first), step)))
	                 : ex_bin(c, EX_SUB, loop->u.loop.hi, ex_int(c, 1));
	publish(c, in, p, flag ? ex_subst(c, flag, loop->u.loop.var, li) : NULL, landed, taken, li, false,
	        "the last tile is in global memory");
	st_append(c, k->body, last);
}

/*
 * A hint this family's lowering cannot honour is an error at the hint
 * (SPEC.md), never dropped in silence: clusters and inputs that wait are
 * built for matmul kernels only, completion signals not for row
 * reductions (exit status "not implemented"); `consumers` splits a matmul
 * tile, `swap_ab`, `split_k` and `stream_k` change its operands and its K, and a row-reduction
 * kernel's tile (a row) and its stores (from registers) are the
 * compiler's, so those hints are errors in the spec.
 */
int
lower_refuse_hints(Comp *c, const Fusion *f, const char *family, bool rows)
{
	const Schedule *s = &f->sched;
	int i;

	for (i = 0; i < f->ninput + f->nout; i++) {
		const Tensor *x = &f->tensor[fusion_arg_tensor(f, i)];

		if (x->wait_pos.line) {
			diag_error(c, x->wait_pos, "'wait: per_tile' (%s '%s') is implemented for matmul kernels only, not "
			           "yet for %s kernels", i < f->ninput ? "input" : "output", x->name, family);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	}
	if (s->cluster_pos.line) {
		diag_error(c, s->cluster_pos, "'cluster' is not implemented for %s kernels yet: they launch "
		           "single CTAs", family);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (s->consumer_pos.line && !rows) {
		diag_error(c, s->consumer_pos, "a signal consumer role is implemented for matmul kernels only: a %s "
		           "kernel signals its tiles to flags (signal: per_tile)", family);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (s->signal_pos.line && rows) {
		diag_error(c, s->signal_pos, "'signal' is not implemented for %s kernels yet", family);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (s->consumers_pos.line)
		return diag_error(c, s->consumers_pos, "'consumers' applies to matmul kernels, whose consumer "
		                  "warpgroups split a tile; %s kernels have one group of compute threads", family);
	if (s->swap_pos.line)
		return diag_error(c, s->swap_pos, "'swap_ab' applies to matmul kernels, whose operands it swaps; "
		                  "%s kernels have none", family);
	if (s->split_pos.line)
		return diag_error(c, s->split_pos, "'split_k' applies to matmul kernels, whose tiles sum over K; "
		                  "%s kernels have no K to split", family);
	if (s->sk_pos.line)
		return diag_error(c, s->sk_pos, "'stream_k' applies to matmul kernels, whose tiles sum over K; "
		                  "%s kernels have no K to split", family);
	if (rows && s->ntile)
		return diag_error(c, s->tile_pos, "'tile' does not apply to %s kernels: a tile is one row, or "
		                  "its 4096-element chunks when the row is too wide for shared memory", family);
	if (rows && s->store_pos.line)
		return diag_error(c, s->store_pos, "'store' does not apply to %s kernels: their outputs leave "
		                  "as 16-byte stores from registers", family);
	return 0;
}

/* No family: only kernels that tests build by hand have none, and they do not come through here. */
static int
lower_unbuilt(Comp *c, Fusion *f)
{
	return diag_internal(c, "lower", "fusion '%s' has no kernel family (no schedule ran)", f->name);
}

static const LowerFamily unbuilt = {lower_unbuilt, "use a smaller tile", NULL, NULL};

static const LowerFamily *const families[] = {
	[FAM_NONE] = &unbuilt,   /* no schedule ran */
	[FAM_POINTWISE] = &lower_pointwise_family,
	[FAM_REDUCTION] = &lower_reduction_family,
	[FAM_MATMUL] = &lower_matmul_family,
};

const LowerFamily *
lower_family(Family f)
{
	return families[f];
}

/* Does S hold a TMA add (an accumulating output's store) to param P? */
static bool
adds_to(const Stmt *s, int p)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_STORE && s->u.tma.param == p && s->u.tma.add)
		return true;
	for (i = 0; i < s->nbody; i++)
		if (adds_to(s->body[i], p))
			return true;
	return adds_to(st_else(s), p);
}

/*
 * Accumulating outputs (accumulate: true) must be stored by TMA adds, which
 * lowering makes of the TMA stores of a matmul's epilogue or a pointwise
 * tile (the TMA unit adds each dtype there is: f32, f16, bf16).
 */
static int
check_accumulate(Comp *c, const Fusion *f, const Kernel *k)
{
	int i, j;

	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];
		const char *name = f->tensor[o->tensor].name, *why = NULL;
		bool added = false;

		if (!o->accumulate)
			continue;
		for (j = 1; j < k->nparam; j++) {
			if (k->param[j].tensor != o->tensor)
				continue;
			added |= k->param[j].arg == f->ninput + i && adds_to(k->body, j);
			if (k->param[j].readback)
				why = "an output the signal's consumer role reads back (it would read the sum, not the tile)";
		}
		if (o->consumer)
			why = "an output of the signal's consumer role, which stores from registers";
		else if (!why && !added)
			why = f->family == FAM_REDUCTION ? "row-reduction kernels, whose outputs leave from registers" :
			      "outputs stored from registers (store: vector)";
		if (why) {
			diag_error(c, o->accumulate_pos, "'accumulate' (output '%s') is implemented for outputs the kernel "
			           "stores by TMA, not yet for %s", name, why);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	}
	return 0;
}

/*
 * The kernel's parameters must fit the space CUDA gives them
 * (KERNEL_PARAM_MAX), checked here, before the passes whose cost grows
 * with the tensors: refused at the tensor whose parameter crosses it (or,
 * past the tensors, the last tensor's).  circular_buffer.c adds a map for
 * a preload only where it still fits.
 */
static int
check_params(Comp *c, const Fusion *f, const Kernel *k)
{
	int i, last = 0;

	if (kernel_param_bytes(k, k->nparam) <= KERNEL_PARAM_MAX)
		return 0;
	for (i = 1; kernel_param_bytes(k, i + 1) <= KERNEL_PARAM_MAX; i++)
		;
	for (; i > 0 && !last; i--)
		if (k->param[i].kind == PK_TMAP || k->param[i].kind == PK_PTR)
			last = k->param[i].tensor;
	return diag_error(c, f->tensor[last].pos, "%s '%s' does not fit in the kernel's parameters: with it they pass "
	                  "the %d bytes CUDA gives a kernel (they need %lld in all, 128 for each tensor map at a "
	                  "multiple of 64 and 8 for each pointer and size); split the fusion into smaller ones",
	                  f->tensor[last].kind == TK_INPUT ? "input" : "output", f->tensor[last].name, KERNEL_PARAM_MAX,
	                  (long long)kernel_param_bytes(k, k->nparam));
}

/* requires a scheduled fusion; leaves c->kernel, its TMA loads unbuffered and no copy waited for */
int
pass_lower(Comp *c)
{
	Fusion *f = c->fusion;
	int j;

	if (lower_family(f->family)->lower(c, f) || check_accumulate(c, f, c->kernel) || check_params(c, f, c->kernel))
		return -1;
	/* every tensor parameter carries its argument's full shape */
	for (j = 1; j < c->kernel->nparam; j++) {
		KParam *p = &c->kernel->param[j];

		if (p->kind == PK_TMAP || p->kind == PK_PTR) {   /* (a view's argument is its input: views.c) */
			int t = p->arg >= 0 && p->arg < f->ninput ? f->input[p->arg] : p->tensor;

			p->rank = f->tensor[t].rank;
			memcpy(p->dim, f->tensor[t].dim, sizeof p->dim);
		}
	}
	return 0;
}
