/*
 * plan_stream_k.c: the matmul family's stream-K decisions: whether a
 * hinted stream-K builds (choose_stream_k, by plan_matmul.c's table of
 * which features combine), and without a hint the tile
 * and parts that fill the SMs on few tiles of a long K (long_k_stream:
 * quarters, halves or thirds, narrowed tiles).  Requires the fusion's
 * sizes and the plan so far (plan_matmul.c); leaves stream-K's parts, tile
 * and cluster in the MatmulPlan, and builds no IR.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/*
 * Does the matmul take stream-K (stream_k_plan)?  When the schedule asks,
 * or by default for few tiles of a long K (long_k_stream); not for the
 * last wave of many tiles, where it tied the default
 * (docs/perf_history.md).  Requires P planned but for stream-K; builds
 * for one persistent mainloop of cooperative warpgroups, unswapped, with
 * no split, signal or input that waits, nor a cluster but the default's
 * own (fraction_plan).  Leaves nothing; 1, 0, or -1 for a hint it cannot
 * honour.
 */
int
choose_stream_k(Comp *c, const Fusion *f, const MatmulPlan *p, const Group *g, int ng)
{
	if (!p->ksize.sk_parts)
		return 0;
	return plan_refuse(c, f->sched.sk_pos, f, p, g, ng, ASK_STREAM_K, true) < 0 ? -1 : 1;
}

/*
 * The parts of stream-K's quarters rule (long_k_stream) for a matmul of
 * ROWS x COLS x STEPS k-steps, 0 where it does not apply; sets *BN.  The
 * tile is the narrower of 128 x 128 and 128 x 256 whose tiles, SK_PARTS
 * parts each, fit TILE_TARGET, and the parts as many as fill the SMs
 * (TILE_TARGET / tiles, at most SK_MOST_PARTS).  A tile's owner adds the
 * other parts' sums one after another, so runs must be long enough to pay
 * for it: SK_RUN_STEPS k-steps at 128 x 128, twice at 128 x 256, and twice
 * that in more than four parts or on one row of tiles; only where the runs
 * are SK_FILL or more and the tiles SK_FEW_TILES or more.  Measurements:
 * docs/perf_history.md.
 */
int64_t
quarter_parts(int64_t rows, int64_t cols, int64_t steps, int *bn)
{
	int64_t tiles = 0, parts, run;

	for (*bn = BN / 2; *bn <= BN; *bn *= 2)
		if ((tiles = grid_tiles(rows, cols, BM, *bn)) * SK_PARTS <= TILE_TARGET)
			break;
	if (*bn > BN || tiles < SK_FEW_TILES)
		return 0;
	run = SK_RUN_STEPS * *bn / (BN / 2);
	parts = TILE_TARGET / tiles < SK_MOST_PARTS ? TILE_TARGET / tiles : SK_MOST_PARTS;
	parts = steps / (2 * run) < parts ? steps / (2 * run) : parts;   /* more than quarters: runs of 2 run */
	parts = parts > SK_PARTS ? parts : SK_PARTS;
	if (parts > SK_PARTS || rows <= BM)   /* one row of tiles: 128 x 4096 x 8192 lost in quarters of 32 */
		run *= 2;
	return steps < parts * run || tiles * parts < SK_FILL ? 0 : parts;
}

/*
 * The parts of stream-K's halves rule (long_k_stream), 0 where it does not
 * apply; sets *BN.  Where 128 x 128 tiles fill at most SK_IDLE_NUM /
 * SK_IDLE_DEN of the SMs, on more than one row of them: tiles 128 wide,
 * else wider by STEP up to 256 (the narrowest that fits), that number a
 * half or a third of the SMs, at least SK_WAVE_FILL runs of 2 SK_RUN_STEPS
 * k-steps or more.  Two halves of a 128 x 128 tile ask L2 for a third
 * less a k-step than the default's 128 x 64 tiles, and the owner adds one
 * part.  Halves of SK_THIRDS_FROM or wider give way to thirds of 128 x
 * 256 where those make SK_WAVE_FILL to TILE_TARGET runs of SK_RUN_STEPS or
 * more: the wider tile's k-steps are faster and pad the columns less.
 * Measurements: docs/perf_history.md.
 */
int64_t
half_parts(int64_t rows, int64_t cols, int64_t steps, int step, int *bn)
{
	int64_t tiles = grid_tiles(rows, cols, BM, BN / 2), parts;

	if (rows <= BM || tiles * SK_IDLE_DEN > TILE_TARGET * SK_IDLE_NUM)
		return 0;
	for (*bn = BN / 2; *bn <= BN; *bn += step) {
		tiles = grid_tiles(rows, cols, BM, *bn);
		parts = TILE_TARGET / tiles;
		if (parts >= 2 && parts < SK_PARTS && steps >= parts * 2 * SK_RUN_STEPS && tiles * parts >= SK_WAVE_FILL)
			break;
	}
	if (*bn > BN)
		return 0;
	/* halves of SK_THIRDS_FROM or wider: thirds of 128 x 256 where they fill the SMs, runs of SK_RUN_STEPS */
	tiles = grid_tiles(rows, cols, BM, BN);
	if (parts == 2 && *bn >= SK_THIRDS_FROM && BN % step == 0 && tiles * 3 <= TILE_TARGET &&
	    tiles * 3 >= SK_WAVE_FILL && steps >= 3 * SK_RUN_STEPS) {
		*bn = BN;
		return 3;
	}
	return parts;
}

/*
 * The parts of stream-K's rule for narrow tiles (long_k_stream), 0 where
 * it does not apply; sets *BN.  Where neither rule above does, on one to
 * SK_NARROW_ROWS whole rows of 128-row tiles, or more where the output is
 * taller than wide (its tiles then in order along rows: raster_rows, so
 * that the CTAs at work share A, the larger): tiles of 128 x 64 in
 * quarters, else halves, that make SK_FILL to TILE_TARGET runs of
 * SK_RUN_STEPS k-steps or more, each run 1 / P of its tile (the runs
 * aligned to the tiles).  A 128 x 64 tile asks L2 for 24 KiB a k-step for
 * twice the work of the default there, ping-pong's 64 x 64 tiles split by
 * 2 to 4 (choose_split).
 *
 * Where halves of 128 x 64 would be more runs than SMs, halves of 128 x 96
 * tiles (SK_NARROW_WIDE; whole subtiles of a K-major B), SK_FILL to
 * TILE_TARGET runs of 2 SK_RUN_STEPS k-steps or more, on two to four rows
 * of tiles.
 *
 * On one row of 128-row tiles, since a tile's parts share its epilogue
 * (fraction_plan): of 16 to 22 tiles of 128 x 64, as many parts as fill
 * the SMs (SK_ROW_PARTS to SK_ROW_MOST; runs of SK_RUN_STEPS / 2 or more);
 * and halves of 128 x 96 where a 128 x 64 tile a CTA would leave more than
 * 3 / 8 of the SMs idle.  Measurements, and the shapes each lost on:
 * docs/perf_history.md.
 */
int64_t
narrow_parts(int64_t rows, int64_t cols, int64_t steps, int step, int *bn)
{
	int64_t tiles = grid_tiles(rows, cols, BM, CHUNK), parts;

	*bn = CHUNK;
	if (rows < BM || (rows > SK_NARROW_ROWS * BM && rows <= cols))
		return 0;
	/* one row of 16 to 22 tiles: as many parts as fill the SMs, of SK_RUN_STEPS / 2 k-steps or more */
	parts = TILE_TARGET / tiles;
	if (rows == BM && parts >= SK_ROW_PARTS && parts <= SK_ROW_MOST && steps >= parts * SK_RUN_STEPS / 2)
		return parts;
	for (parts = SK_PARTS; parts >= 2; parts /= 2)
		if (tiles * parts >= SK_FILL && tiles * parts <= TILE_TARGET && steps >= parts * SK_RUN_STEPS)
			return parts;
	/*
	 * Halves of 128 x 64 more than the SMs: halves of 128 x 96 on one to
	 * four rows, runs of 2 SK_RUN_STEPS; on one row only where a 128 x 64
	 * tile a CTA leaves more than 1 - SK_LEFT_NUM / SK_LEFT_DEN of the SMs idle.
	 */
	if (rows == BM && tiles * SK_LEFT_DEN > TILE_TARGET * SK_LEFT_NUM)
		return 0;
	tiles = grid_tiles(rows, cols, BM, SK_NARROW_WIDE);
	if (rows > SK_NARROW_ROWS * BM || SK_NARROW_WIDE % step || tiles * 2 < SK_FILL || tiles * 2 > TILE_TARGET ||
	    steps < 2 * 2 * SK_RUN_STEPS)
		return 0;
	*bn = SK_NARROW_WIDE;
	return 2;
}

/*
 * Stream-K without a hint, for few tiles of a long K, where a tile a CTA
 * leaves most SMs idle however the tile is cut (a weight gradient's 1024 x
 * 1024 x 65536: 32 tiles of 128 x 256 for 132 SMs).  Quarters or more of
 * a tile where four parts of its tiles fit the SMs (quarter_parts), else
 * halves or thirds of tiles 128 to 256 wide that fill them (half_parts),
 * else quarters or halves of 128 x 64 tiles, or halves of 128 x 96
 * (narrow_parts).  Parts of SK_CLUSTER_RUN k-steps or more of 128 x 128
 * tiles (half that in more than quarters) run in clusters of two tile rows
 * that share B on an even number of tile rows; else, of SK_CLUSTER_RUN or
 * more, of two tile columns that share A (fraction_plan takes a cluster as
 * its unit): L2 then serves the shared slice once for the two.
 * Measurements: docs/perf_history.md.
 *
 * Requires a single matmul, neither swapped, ping-pong nor batched, with
 * no hint that bears on it (stages sized for the default tile would not
 * fit a wider one) and rows that start 128-byte aligned; chosen at the
 * spec's sizes, like the tile.  Leaves P's tile, sk_parts, sk_scatter,
 * cluster and raster_rows.
 */
void
long_k_stream(const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Tensor *a, const Tensor *d)
{
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]), parts, run;
	int64_t steps = (dim_value(f, a->dim[a->rank - (p->akm ? 1 : 2)]) + BK - 1) / BK;
	int bn, step = f->op[g->mm[0]].transpose_b ? EPI_COLS : CHUNK;

	if (plan_rules_out(f, p, g, ng, PD_LONG_K_STREAM) || rows <= 0 || cols <= 0 || steps <= 0 ||
	    !rows_aligned(f, g->mm[0]) ||
	    rows > 1 << 24 || cols > 1 << 24)   /* many waves; and no overflow in the counts */
		return;
	/*
	 * A taller output whose tiles choose_tile put in one wave along
	 * the rows keeps them up to SK_ALONG_ROWS k-steps (halves of 64,
	 * thirds of 42), which beat halves or thirds there
	 * (docs/perf_history.md).
	 */
	if (p->along_rows && steps <= SK_ALONG_ROWS)
		return;
	/* N whole epilogue subtiles of a K-major B, whole 64-wide chunks of an N-major one (choose_tile) */
	if ((parts = quarter_parts(rows, cols, steps, &bn))) {
		/* runs of SK_CLUSTER_RUN k-steps of 128 x 128 (half that in more than quarters): clusters of two
		   tile rows that share B; of SK_CLUSTER_RUN, else of two tile columns that share A */
		run = bn == BN / 2 ? steps / parts : 0;
		if ((rows + BM - 1) / BM % 2 == 0 && (run >= SK_CLUSTER_RUN || (run >= SK_CLUSTER_RUN / 2 && parts > SK_PARTS)))
			p->cluster[0] = 2;
		else if (run >= SK_CLUSTER_RUN && (cols + bn - 1) / bn % 2 == 0)
			p->cluster[1] = 2;
	} else if ((parts = half_parts(rows, cols, steps, step, &bn)))
		;
	else if ((parts = narrow_parts(rows, cols, steps, step, &bn)))
		p->raster_rows = rows > cols;   /* consecutive parts' tiles share A, the larger operand */
	else
		return;
	if (!tile_fits(f, d, false, 1, BM, bn, 2)) {   /* the epilogue's staging first (fit_tile) */
		p->cluster[0] = p->cluster[1] = 1;
		p->raster_rows = false;
		return;
	}
	p->bm = BM;
	p->bn = bn;
	p->ksize.sk_parts = (int)parts;
	p->sk_scatter = true;   /* fractions of a tile that share its epilogue (fraction_plan) */
}
