/*
 * lower_matmul_ksum.c: where a tile's partial sums over K meet, for
 * lower_matmul, one row of ksum_rule a way (KSum): a K-split cluster's
 * reduction (split_reduce, to rank 0 or a reduce-scatter; own_subtile),
 * and stream-K's plan of parts over the CTAs (stream_k_plan,
 * fraction_plan) and their meeting in each tile's owner through a
 * workspace (stream_k_meet); ksum_meet and ksum_own place the epilogue.
 * Requires the tile loop and a group's k loop built; leaves the
 * statements sync orders.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/*
 * A K-split rank's test for its subtiles of the epilogue loop ELOOP
 * (KSUM_SPLIT_SCATTER), or a stream-K part's (KSUM_SK_SCATTER: every
 * subtile of a whole tile), appended to it.
 */
static Stmt *
own_subtile(Comp *c, const Tile *t, Stmt *eloop, const char *comment)
{
	Expr *e = ex_var(c, eloop->u.loop.var);
	Stmt *s = st_if(c, t->k->mm.ksum == KSUM_SK_SCATTER ? ex_bin(c, EX_EQ, ex_bin(c, EX_MOD, e, t->sknp), t->ski)
	                                    : ex_bin(c, EX_EQ, ex_bin(c, EX_MOD, e, ex_int(c, t->k->mm.ksize.splits)),
	                                             lower_split_rank(c, t->k)));

	s->comment = comment;
	st_append(c, eloop, s);
	return s;
}

/*
 * A K-split's reduction (ST_SPLIT_REDUCE) of group G's accumulator, after
 * its k loop: each consumer warpgroup's fragment a row of a partial buffer
 * (f32, register-major: thread t's register r at r x 128 + t, so a warp's
 * 16-byte accesses are contiguous), written by ranks 1.. and read by rank
 * 0 through distributed shared memory; split_full[wg] counts the writers'
 * arrivals (128 threads each), split_free[wg] rank 0's (128) on each
 * writer's copy.  A reduce-scatter (KSUM_SPLIT_SCATTER) instead: every
 * rank writes, reads the others' registers of its own subtiles, and counts
 * the other ranks' arrivals on both barriers.  A warpgroup's reductions
 * alternate phases: its tiles are every one (cooperative) or every other
 * (ping-pong) of the tile loop's.
 */
static Stmt *
split_reduce(Comp *c, const Tile *t, const Group *g)
{
	Kernel *k = t->k;
	Stmt *s = st_new(c, ST_SPLIT_REDUCE);
	int acc = g->acc[0], wgs = CONSUMER_THREADS / 128, regs = k->acc[acc].cols / 2 * k->mm.row_blocks;
	Expr *nth = ex_var(c, t->loop->u.loop.var);

	if (k->mm.pingpong)
		nth = ex_bin(c, EX_DIV, nth, ex_int(c, 2));
	s->u.split.buf = kernel_add_buf(c, k, arena_printf(c->arena, "part_%s", t->f->tensor[k->acc[acc].tensor].name),
	                        BUF_PARTIAL, DT_F32, wgs, 128 * regs);
	k->buf[s->u.split.buf].tensor = k->acc[acc].tensor;
	s->u.split.bar = kernel_add_bar(c, k, "split_full", wgs, 128 * (k->mm.ksize.splits - 1));
	kernel_add_bar(c, k, "split_free", wgs, 128 * (t->k->mm.ksum == KSUM_SPLIT_SCATTER ? k->mm.ksize.splits - 1 : 1));
	VEC_PUSH(c->arena, s->reads, s->nreads, s->capreads)->acc = acc;
	s->u.split.parity = ex_bin(c, EX_AND, nth, ex_int(c, 1));
	s->u.split.ranks = t->kparts;
	s->comment = t->k->mm.ksum == KSUM_SPLIT_SCATTER
	             ? "the cluster's partial sums of the tile, each rank's subtiles into it"
	             : "the cluster's partial sums of the tile, into rank 0";
	return s;
}

/*
 * stream_k_plan, below: stream-K for the last wave (schedule: stream_k).
 * A persistent GEMM of T tiles on G CTAs runs ceil(T / G) waves; when T %
 * G tiles are left for the last, the other CTAs idle through it.  Here
 * those tiles' k-steps, in tile order, are cut into runs of sk_len over
 * sk_ctas CTAs: CTA b takes [b sk_len, (b + 1) sk_len) after its whole
 * tiles.  A run is shorter than a tile, so it crosses at most one tile
 * boundary and has one or two parts (tile loop iterations); a part that
 * starts inside its tile leaves its sums to the tile's owner, the CTA
 * whose part starts the tile (stream_k_meet).  A helper's part is the
 * first of its run and the owner's the last of its, so the sums are in
 * place about when the owner looks.  Runs are at least 1 /
 * KSumSize.sk_parts of a tile (SK_PARTS when asked, more on few tiles:
 * long_k_stream) and SK_MIN_STEPS long: few CTAs share a tile when few
 * tiles are left.  Only when the last wave holds at most SK_LEFT_NUM /
 * SK_LEFT_DEN of the CTAs (with fewer tiles than CTAs the runtime still
 * launches every CTA, so that all the tiles are that wave and split;
 * persistent_grid): the runs start at k-steps all different, so the CTAs
 * at work in the split wave share no operand slices in L2 as a wave of
 * whole tiles does (docs/perf_history.md).  The plan is lets of
 * gridDim.x: with no partial wave, or none split, or a launch without a
 * workspace (sk_on 0: launch.c's fallback for a default stream-K kernel),
 * sk_ctas is 0 and every CTA runs whole tiles as before.  The stage
 * counter runs on through parts of any length (kbase, the k loop's lin).
 * The default rules' kernels (KSUM_SK_SCATTER) cut whole fractions of
 * each tile instead, whose parts share its epilogue (fraction_plan).
 *
 * Requires the tile loop of a plan with sk_parts; leaves its lets and T's
 * ksum, k0, kn, kbase, help, ski and sknp; 0, or -1 (an internal error).
 */
/* A let of E called NAME at index AT of BLOCK, with COMMENT; its variable. */
static Expr *
let_at(Comp *c, Kernel *k, Stmt *block, int at, const char *name, Expr *e, const char *comment)
{
	Stmt *s = st_new(c, ST_LET);

	s->u.let.var = kernel_add_var(c, k, name);
	s->u.let.value = e;
	s->comment = comment;
	st_insert(c, block, at, s);
	return ex_var(c, s->u.let.var);
}

/*
 * The lets of both stream-K plans after the last wave's tiles LEFT:
 * sk_ctas, the CTAs (or clusters: lower_unit) of its parts, SPLIT where the
 * last wave holds at most SK_LEFT_NUM / SK_LEFT_DEN of them and the launch
 * has a workspace (ON), else 0, with COMMENT; dp_tiles, the tiles taken
 * whole (*DP); and my_dp, this CTA's of them, returned.  Sets *CTAS.
 */
static Expr *
wave_lets(Comp *c, Kernel *k, Expr *left, Expr *split, Expr *on, const char *comment, Expr **ctas, Expr **dp)
{
	Expr *G = lower_unit(c, k, EX_NCTA), *tiles = ex_var(c, k->ntile_var);
	Stmt *body = k->body;

	*ctas = let_at(c, k, body, body->nbody, "sk_ctas",
	               ex_bin(c, EX_MUL, ex_bin(c, EX_MUL, split, ex_bin(c, EX_GE, ex_bin(c, EX_MUL, G, ex_int(c, SK_LEFT_NUM)),
	                                                                  ex_bin(c, EX_MUL, left, ex_int(c, SK_LEFT_DEN)))),
	                      on),
	               comment);
	*dp = let_at(c, k, body, body->nbody, "dp_tiles",
	             ex_bin(c, EX_SUB, tiles, ex_bin(c, EX_MUL, ex_bin(c, EX_LT, ex_int(c, 0), *ctas), left)),
	             "the tiles CTAs take whole");
	return let_at(c, k, body, body->nbody, "my_dp",
	              ex_bin(c, EX_CEILDIV, ex_bin(c, EX_SUB, *dp, lower_unit(c, k, EX_CTA)), G),
	              kernel_cluster_ctas(k) > 1 ? "this cluster's whole tiles" : "this CTA's whole tiles");
}

/*
 * Stream-K in fractions of a tile (KSUM_SK_SCATTER: long_k_stream's
 * rules): the last wave's tiles each cut into sk_np parts of about kt /
 * sk_np k-steps, part j of tile T on CTA T sk_np + j after the whole
 * tiles, so a tile's parts are consecutive CTAs and every run lies in one
 * tile.  sk_np is sk_parts, or fewer where the grid or the k-steps are
 * fewer (at the spec's sizes the rule's; at others whatever fits, at least
 * SK_MIN_STEPS k-steps a part), and none are split under stream_k_plan's
 * conditions.  The parts then share the tile's epilogue (stream_k_meet):
 * each stores the subtiles it owns, so no CTA adds every other part's
 * sums, which cost a third of the kernel's time (docs/perf_history.md).
 * In clusters (long_k_stream's pairs of tile rows or columns) the unit is
 * a cluster, as lower_tile_loop's is: cluster C takes part j of cluster
 * tile T, and each of its CTAs the CTA tile at its rank, so the two run
 * the same k-steps (the multicasts of the shared operand's slices need
 * both) and part j of a CTA tile is on its rank's CTA of the j-th cluster
 * after the first (stream_k_scatter).
 *
 * MINE: the my_tiles let, set here; TILE: the tile loop's let of the tile,
 * at index AT of its body.
 */
static int
fraction_plan(Comp *c, Kernel *k, Tile *t, Expr *on, Stmt *mine, Stmt *tile, int at)
{
	Expr *G = lower_unit(c, k, EX_NCTA), *b = lower_unit(c, k, EX_CTA), *kt = t->ktiles;
	Expr *tiles = ex_var(c, k->ntile_var);
	Expr *left, *np, *ctas, *dp, *mydp, *i, *sk;
	Stmt *body = k->body, *loop = t->loop;

	left = let_at(c, k, body, body->nbody, "sk_tiles", ex_bin(c, EX_MOD, tiles, G), "stream-K: the last wave's tiles");
	np = let_at(c, k, body, body->nbody, "sk_np",
	            ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, ex_bin(c, EX_MIN, ex_int(c, k->mm.ksize.sk_parts),
	                                                       ex_bin(c, EX_DIV, G, ex_bin(c, EX_MAX, left, ex_int(c, 1)))),
	                                     ex_bin(c, EX_DIV, kt, ex_int(c, SK_MIN_STEPS))),
	                   ex_int(c, 1)),
	            "the parts of each, as many as the CTAs and k-steps allow");
	mydp = wave_lets(c, k, left, ex_bin(c, EX_MUL, ex_bin(c, EX_MUL, left, np), ex_bin(c, EX_LT, ex_int(c, 1), np)),
	                 on, "the CTAs that run them, a tile's parts side by side; 0: none split, all whole", &ctas, &dp);
	mine->u.let.value = ex_bin(c, EX_ADD, mydp, ex_bin(c, EX_LT, b, ctas));
	mine->comment = "whole tiles, then this CTA's part of a tile";
	st_append(c, body, mine);

	/* in the tile loop, before the tile: iteration my_dp is the part */
	i = ex_var(c, loop->u.loop.var);
	sk = let_at(c, k, loop, at++, "sk", ex_bin(c, EX_GE, i, mydp), "a part of a tile, not a whole one");
	t->ski = let_at(c, k, loop, at++, "sk_i", ex_bin(c, EX_MUL, sk, ex_bin(c, EX_MOD, b, np)),
	                "the part's index among its tile's (0 for a whole tile)");
	t->sknp = let_at(c, k, loop, at++, "sk_n", ex_bin(c, EX_ADD, ex_int(c, 1), ex_bin(c, EX_MUL, sk,
	                                                                               ex_bin(c, EX_SUB, np, ex_int(c, 1)))),
	                 "and their number (1)");
	tile->u.let.value = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, ex_int(c, 1), sk), tile->u.let.value),
	                 ex_bin(c, EX_MUL, sk, ex_bin(c, EX_ADD, dp, ex_bin(c, EX_DIV, b, np))));
	t->k0 = let_at(c, k, loop, loop->nbody, "kb", ex_bin(c, EX_DIV, ex_bin(c, EX_MUL, t->ski, kt), t->sknp),
	               "the part's first k-step in its tile");
	t->kn = let_at(c, k, loop, loop->nbody, "kn",
	               ex_bin(c, EX_SUB, ex_bin(c, EX_DIV, ex_bin(c, EX_MUL, ex_bin(c, EX_ADD, t->ski, ex_int(c, 1)), kt),
	                                        t->sknp), t->k0),
	               "and its k-steps");
	/* the part is the CTA's last tile: its stage counter runs on from the whole ones' (the k loop's lin) */
	t->kbase = let_at(c, k, loop, loop->nbody, "kbase", ex_bin(c, EX_MUL, i, kt), "the stage counter at its first");
	return 0;
}

int
stream_k_plan(Comp *c, Kernel *k, Tile *t)
{
	Expr *G = ex_leaf(c, EX_NCTA), *b = ex_leaf(c, EX_CTA), *kt = t->ktiles, *tiles = ex_var(c, k->ntile_var);
	Expr *left, *steps, *least, *runs, *len, *ctas, *dp, *mydp, *lo, *hi, *i, *sk, *j, *at, *part;
	Expr *on = NULL;
	Stmt *body = k->body, *loop = t->loop, *mine = NULL, *tile = NULL;
	int n, at_tile = 0;

	for (n = 1; n < k->nparam; n++)
		if (k->param[n].kind == PK_SIZE && k->param[n].size == SZ_SK_ON)
			on = ex_var(c, k->param[n].var);
	if (!on)
		return diag_internal(c, "lower_matmul", "stream-K: no sk_on param");
	/* my_tiles (lower_tile_loop's) moves after the plan, which needs ktiles, a let after it */
	for (n = 0; n < body->nbody; n++)
		if (body->body[n]->kind == ST_LET && body->body[n]->u.let.var == k->niter_var)
			mine = body->body[n];
	for (n = 0; n < loop->nbody; n++)
		if (loop->body[n]->kind == ST_LET && strcmp(k->var[loop->body[n]->u.let.var].name, "tile") == 0)
			tile = loop->body[at_tile = n];
	if (!mine || !tile)
		return diag_internal(c, "lower_matmul", "stream-K: the tile loop has no my_tiles or tile");
	for (n = 0; body->body[n] != mine; n++)
		;
	memmove(&body->body[n], &body->body[n + 1], (size_t)(body->nbody - n - 1) * sizeof *body->body);
	body->nbody--;
	if (t->k->mm.ksum == KSUM_SK_SCATTER)
		return fraction_plan(c, k, t, on, mine, tile, at_tile);

	left = let_at(c, k, body, body->nbody, "sk_tiles", ex_bin(c, EX_MOD, tiles, G), "stream-K: the last wave's tiles");
	steps = ex_bin(c, EX_MUL, left, kt);
	/* runs of at least 1 / sk_parts of a tile and SK_MIN_STEPS */
	least = ex_bin(c, EX_MAX, ex_bin(c, EX_DIV, kt, ex_int(c, k->mm.ksize.sk_parts)), ex_int(c, SK_MIN_STEPS));
	runs = ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, G, ex_bin(c, EX_DIV, steps, least)), ex_int(c, 1));
	len = let_at(c, k, body, body->nbody, "sk_len", ex_bin(c, EX_MAX, ex_bin(c, EX_CEILDIV, steps, runs), ex_int(c, 1)),
	             "the k-steps of a run");
	runs = ex_bin(c, EX_CEILDIV, steps, len);
	mydp = wave_lets(c, k, left, ex_bin(c, EX_MUL, runs, ex_bin(c, EX_LT, left, runs)), on,
	                 "the CTAs that run them; 0: none split, all whole", &ctas, &dp);
	lo = let_at(c, k, body, body->nbody, "sk_lo", ex_bin(c, EX_MUL, b, len), NULL);
	hi = let_at(c, k, body, body->nbody, "sk_hi", ex_bin(c, EX_MIN, ex_bin(c, EX_ADD, lo, len), steps),
	            "this CTA's run of the last wave's k-steps, [sk_lo, sk_hi)");
	/* one part, or two when the run crosses the end of its first tile */
	part = ex_bin(c, EX_ADD, ex_int(c, 1), ex_bin(c, EX_LT, ex_bin(c, EX_MUL, ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, lo, kt),
	                                                                               ex_int(c, 1)), kt), hi));
	mine->u.let.value = ex_bin(c, EX_ADD, mydp, ex_bin(c, EX_MUL, ex_bin(c, EX_LT, b, ctas), part));
	mine->comment = "whole tiles, then the parts of this CTA's run";
	st_append(c, body, mine);

	/* in the tile loop, before the tile (which row0 and col0 use): iteration my_dp + j is part j of the run */
	i = ex_var(c, loop->u.loop.var);
	sk = let_at(c, k, loop, at_tile++, "sk", ex_bin(c, EX_GE, i, mydp), "a part of a run, not a whole tile");
	j = ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, i, mydp), sk);
	at = let_at(c, k, loop, at_tile++, "sk_at",
	            ex_bin(c, EX_ADD, lo, ex_bin(c, EX_MUL, j, ex_bin(c, EX_SUB, kt, ex_bin(c, EX_MOD, lo, kt)))),
	            "the part's first k-step among the last wave's");
	tile->u.let.value = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, ex_int(c, 1), sk), tile->u.let.value),
	                 ex_bin(c, EX_MUL, sk, ex_bin(c, EX_ADD, dp, ex_bin(c, EX_DIV, at, kt))));
	t->k0 = let_at(c, k, loop, loop->nbody, "kb", ex_bin(c, EX_MUL, sk, ex_bin(c, EX_MOD, at, kt)),
	               "the part's first k-step in its tile");
	t->kn = let_at(c, k, loop, loop->nbody, "kn",
	               ex_bin(c, EX_ADD, kt, ex_bin(c, EX_MUL, sk, ex_bin(c, EX_SUB, ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, hi, at),
	                                                                                ex_bin(c, EX_SUB, kt, t->k0)), kt))),
	               "and its k-steps");
	t->kbase = let_at(c, k, loop, loop->nbody, "kbase",
	                  ex_bin(c, EX_SUB, ex_bin(c, EX_MUL, i, kt), ex_bin(c, EX_MUL, j, ex_bin(c, EX_MOD, lo, kt))),
	                  "the stage counter at its first");
	t->help = let_at(c, k, loop, loop->nbody, "sk_help",
	                 ex_bin(c, EX_MUL, sk, ex_bin(c, EX_SUB, ex_bin(c, EX_DIV, ex_bin(c, EX_SUB, ex_bin(c, EX_ADD, at, kt),
	                                                                                   ex_int(c, 1)), len), b)),
	                 "an owner's part: the CTAs after this one that hold the rest");
	return 0;
}

/*
 * Stream-K's meeting of a tile's parts, after a part's k loop: a part that
 * starts inside its tile (k0 > 0) leaves its sums to the tile's owner
 * through its slot of the workspace (ST_SK_STORE); the owner, whose part
 * starts the tile (and every whole tile), adds those of the CTAs after it
 * (ST_SK_REDUCE: none for a whole tile) and alone runs EPILOGUE.  In
 * fractions of a tile (KSUM_SK_SCATTER) every part of a split tile
 * leaves the others its sums of their subtiles, each part that owns a
 * subtile adds the others' sums of its own, and each runs EPILOGUE for its
 * own subtiles (own_subtile; every subtile of a whole tile).  All at the
 * tile loop's level, each under its condition, so that sync's wait for the
 * mma comes before any.
 */
static void
stream_k_meet(Comp *c, const Tile *t, const Group *g, Stmt *epilogue)
{
	Kernel *k = t->k;
	Stmt *put = st_new(c, ST_SK_STORE), *add = st_new(c, ST_SK_REDUCE);
	Stmt *own = st_if(c, ex_bin(c, EX_EQ, t->k0, ex_int(c, 0)));
	int p;

	for (p = 1; p < k->nparam && k->param[p].kind != PK_WORKSPACE; p++)
		;
	put->u.sk.param = add->u.sk.param = p;
	VEC_PUSH(c->arena, put->reads, put->nreads, put->capreads)->acc = g->acc[0];
	VEC_PUSH(c->arena, add->reads, add->nreads, add->capreads)->acc = g->acc[0];
	if (t->k->mm.ksum == KSUM_SK_SCATTER) {
		/* every part of a split tile leaves the others their subtiles; a part that owns some adds theirs */
		put->u.sk.cond = ex_bin(c, EX_LT, ex_int(c, 1), t->sknp);
		put->comment = "a part of a tile: its sums of the subtiles the others own, to the CTA's slot";
		add->u.sk.cond = ex_bin(c, EX_MUL, put->u.sk.cond, ex_bin(c, EX_LT, t->ski, ex_int(c, t->bn / k->mm.epi_cols)));
		add->comment = "a part that owns subtiles: the other parts' sums of them, in part order";
		put->u.sk.part = add->u.sk.part = t->ski;
		put->u.sk.parts = add->u.sk.parts = t->sknp;
		st_append(c, t->loop, put);
		st_append(c, t->loop, add);
		st_append(c, t->loop, epilogue);
		return;
	}
	put->u.sk.cond = ex_bin(c, EX_LT, ex_int(c, 0), t->k0);
	put->comment = "a part from inside the tile: its sums to the CTA's slot, for the tile's owner";
	add->u.sk.cond = own->u.branch.cond;
	add->u.sk.parts = t->help;
	add->comment = "the tile's owner: the sums of the CTAs that took the rest of its k-steps, in CTA order";
	own->comment = "the owner holds the tile's sum: it alone computes and stores the tile";
	st_append(c, t->loop, put);
	st_append(c, t->loop, add);
	st_append(c, own, epilogue);
	st_append(c, t->loop, own);
}

/*
 * The epilogue loop ELOOP of group G placed after its k loop in the tile
 * loop, where its partial sums over K meet: whole (KSUM_NONE); after a
 * K-split's reduction, under rank 0 or in every rank (split_reduce); or
 * after stream-K's (stream_k_meet).  Requires T's k loop in the tile loop
 * and T->ksum; leaves ELOOP and its meeting in the tile loop.
 */
void
ksum_meet(Comp *c, const Tile *t, const Group *g, Stmt *eloop)
{
	Kernel *k = t->k;
	Stmt *lead;

	switch (t->k->mm.ksum) {
	case KSUM_NONE:
		st_append(c, t->loop, eloop);
		break;
	case KSUM_SPLIT_SCATTER:
		/*
		 * Each rank sums its share of the subtiles (a reduce-scatter in
		 * the cluster), computes and stores them: the compute and the
		 * store each under the rank's test, so that the barrier between
		 * them (sync.c) lies between the two, taken by every rank.
		 */
		st_append(c, t->loop, split_reduce(c, t, g));
		st_append(c, t->loop, eloop);
		break;
	case KSUM_SPLIT_RANK0:
		/* the cluster's partial sums into rank 0, which alone runs the epilogue */
		lead = st_if(c, ex_bin(c, EX_EQ, lower_split_rank(c, k), ex_int(c, 0)));
		st_append(c, t->loop, split_reduce(c, t, g));
		lead->comment = "rank 0 holds the tile's sum: it alone computes and stores the tile";
		st_append(c, lead, eloop);
		st_append(c, t->loop, lead);
		break;
	case KSUM_SK_OWNER:
	case KSUM_SK_SCATTER:
		stream_k_meet(c, t, g, eloop);
		break;
	}
}

/* Where the epilogue's compute (or STORE) goes in ELOOP: under the subtile's owner's test, or in ELOOP. */
Stmt *
ksum_own(Comp *c, const Tile *t, Stmt *eloop, bool store)
{
	const KSumRule *r = &ksum_rule[t->k->mm.ksum];

	if (!r->own_compute)
		return eloop;
	return own_subtile(c, t, eloop, store ? r->own_store : r->own_compute);
}
