/*
 * plan_stream_k.c: the matmul family's stream-K decisions: whether a
 * hinted stream-K builds (choose_stream_k), and without a hint the tile
 * and parts that fill the SMs on few tiles of a long K (long_k_stream:
 * quarters, halves or thirds, narrowed tiles).  Requires the fusion's
 * sizes; builds no IR.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/*
 * Does the matmul take stream-K (stream_k_plan)?  When the schedule asks,
 * or by default for few tiles of a long K (long_k_stream); not for the last
 * wave of many tiles: ncu counted 1.5-2% fewer cycles at 8192^3 and 8192 x
 * 14336 x 4096 in one launch, but back to back, where the H200 runs at its
 * power cap and an idle SM saves power the others spend, the default and
 * stream-K tied within 1.2% either way (docs/perf.md).  Built for one
 * persistent mainloop of cooperative warpgroups, unswapped, with no
 * split, signal or input that waits, nor a cluster but the default's own
 * (fraction_plan).  1, 0, or -1 for a hint it cannot honour.
 */
int
choose_stream_k(Comp *c, const Fusion *f, const MatmulPlan *p, int ng)
{
	const Schedule *h = &f->sched;
	const char *why = NULL;

	if (!p->sk_parts)
		return 0;
	if (!p->persistent)
		why = "with one CTA a tile (persistent: false)";
	else if (ng > 1)
		why = "with independent matmuls in one kernel";
	else if (p->swap_ab)
		why = "on a swapped matmul (swap_ab)";
	else if (p->pingpong)
		why = "with ping-pong consumers";
	else if (p->cluster[0] * p->cluster[1] > 1 && !p->sk_scatter)   /* fraction_plan's parts are clusters' */
		why = "in clusters that share an operand";
	else if (p->splits > 1)
		why = "with split_k";
	else if (h->signal)
		why = "with 'signal: per_tile'";
	else if (p->waits)
		why = "with an input or output that waits per tile";
	if (why)
		return unbuilt(c, h->sk_pos, "stream_k %s is not implemented yet", why);
	return 1;
}

/*
 * The parts of stream-K's quarters rule (long_k_stream) for a matmul of
 * ROWS x COLS x STEPS k-steps, 0 where it does not apply; sets *BN.  The
 * tile is the narrower of 128 x 128 and 128 x 256 whose tiles, SK_PARTS
 * parts each, fit TILE_TARGET, and the parts as many as fill the SMs
 * (TILE_TARGET / tiles, at most SK_MOST_PARTS).  A tile's owner adds the
 * other parts' sums one after another (64 KiB each at 128 x 128), so runs
 * must be long enough to pay for it: quarters of SK_RUN_STEPS k-steps at
 * 128 x 128 won (512 x 1024 x 8192: 0.76 -> 0.85x cuBLAS, 256 x 2048 x
 * 8192 0.74 -> 0.90) and of 16 lost (K = 4096); at 128 x 256 runs of 32
 * lost to the narrower default tiles' full wave (1024 x 1024 x 8192 0.88
 * -> 0.84) and of 64 won; sixteenths of 32 lost (256 x 512 x 32768: 0.645
 * -> 0.628) and of 64 won.  So runs of run = SK_RUN_STEPS at 128 x 128,
 * twice at 128 x 256, and twice that in more than four parts or on one row
 * of tiles (128 x 4096 x 8192 in quarters of 32: 0.87 -> 0.89 with L2
 * flushed, but 26.0 -> 27.9 us back to back).  Only where the runs are
 * SK_FILL or more (at 64 it tied split-K or whole tiles: 256 x 512 x
 * 32768, 512 x 512 x 16384) and the tiles SK_FEW_TILES or more.
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
 * The parts of stream-K's halves rule (long_k_stream), 0 where it does
 * not apply; sets *BN.  Where 128 x 128 tiles fill at most SK_IDLE_NUM /
 * SK_IDLE_DEN of the SMs, on more than one row of them: tiles 128 wide,
 * else wider by STEP up to 256 (the narrowest that fits), that number a
 * half or a third of the SMs, at least SK_WAVE_FILL runs of 2
 * SK_RUN_STEPS k-steps or more.  Of 34 to 66 tiles of 128 x 128 the
 * default is 128 x 64 tiles, one a CTA, whose k loops ask L2 for 24 KiB a
 * k-step of 128 x 64 x 64: 128 of them at once (1024 x 1024 x 8192) move
 * 278 MB to cuBLAS's 199 in its clusters of 1 x 2 (ncu); two halves of a
 * 128 x 128 tile ask for 32 KiB a k-step of twice the work, a third less,
 * and the owner adds one 64 KiB part.  Of 67 to 105 the default is a
 * 128 x 128 tile a CTA, the other SMs idle; halves of 128 x 160 to 224
 * fill them.  On an H200, CUDA-graph replays, cuBLAS / wsfuse: 1024 x 1024
 * x 8192 0.70 -> 0.82, 2048 x 512 x 8192 0.65 -> 1.00, 1024 x 1024 x 12288
 * 0.70 -> 0.98, 512 x 1280 x 12288 (thirds) 0.70 -> 0.94, 1152 x 1024 x
 * 8192 (160) 0.88 -> 1.15, 1280 x 1024 x 8192 (192) 0.67 -> 0.76; 1536 x
 * 1024 x 8192 (224) gained 4%, 2048 x 1024 x 8192 (128 tiles, at 256)
 * lost 4.5%, at 96 runs (768 x 1024 x 8192) it lost 4%, at K = 4096 (runs
 * of 32) 15% (docs/perf.md).  Halves of SK_THIRDS_FROM or wider give way
 * to thirds of 128 x 256 where those make SK_WAVE_FILL to TILE_TARGET runs
 * of SK_RUN_STEPS or more: a CTA's k loop is then 89% of a 128 x 192
 * half's work, on the wider tile's faster k-steps, and 1024 columns take
 * 4 tiles of 256 where 6 of 192 padded them by 1 / 8.  On an H200, cuBLAS
 * / wsfuse, CUDA-graph replays and L2 flushed: 1280 x 1024 x 8192
 * 0.75-0.77 -> 0.80-0.84 and 0.79-0.80 -> 0.83-0.85, x 16384 0.82-0.87 ->
 * 0.94-0.98 and 0.80-0.81 -> 0.88-0.90; 1408 x 1024 x 8192 (132 runs)
 * 39.5-40.4 -> 37.0-37.4 us; where halves were 128 x 160 the thirds lost
 * 5-9% (1152 x 1024, 1024 x 1280, 640 x 2048 x 8192).
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
 * that the CTAs at work share A, the larger): tiles of 128 x 64 in quarters,
 * else halves, that make SK_FILL to TILE_TARGET runs of SK_RUN_STEPS
 * k-steps or more, each run 1 / P of its tile (the runs aligned to the
 * tiles).  The default there was ping-pong's 64-row tiles split by 2 to
 * 4 (choose_split), whose CTAs each take a 64 x 64 tile's k-steps: 16 KiB
 * a k-step for a quarter of the work of a 128 x 128 one, and an SM takes
 * them in no faster than about 16 KiB in 225 ns however many SMs share
 * L2's reads (clusters of 2 x 2 that multicast both operands ran no
 * faster).  A 128 x 64 tile asks 24 KiB a k-step for twice the work, and
 * a tile's owner adds the other parts' 32 KiB each.  On an H200, cuBLAS /
 * wsfuse, CUDA-graph replays and L2 flushed: 128 x 1280 x 8192 0.66 ->
 * 0.73 and 0.78 -> 0.87, x 16384 0.52 -> 0.67-0.79 and 0.71 -> 0.87;
 * 128 x 2048 x 8192 1.05 -> 1.19 and 0.88 -> 0.99; 256 x 1024 x 8192
 * 0.93 -> 1.06 and 0.83 -> 0.93; 200 x 1000 x 8192 0.82 -> 0.94 and 0.77
 * -> 0.89; in halves, 128 x 4096 x 4096 1.01 -> 1.09 and 0.85 -> 0.93, x
 * 8192 0.96-0.98 -> 1.05-1.09 and 0.85-0.89 -> 0.94-0.99; 512 x 512 x
 * 16384 0.65 -> 0.63 and 0.75 -> 0.81 (runs of 64).  Runs of 16
 * (K = 4096 in quarters) lost, as did 64 runs (128 x 1024 x 8192), and
 * runs that did not align to the tiles (384 x 768 x 8192: 132 runs of 35
 * k-steps); one ragged row (96 x 1280 x 8192), whose A box TMA fills past
 * M with zeros for every part, lost back to back.  Taller outputs lost
 * 8-15% with the tiles in groups of 16 rows walked down the rows first (640
 * x 384 x 8192, 1024 x 256 x 8192, 1024 x 512 x 4096), and gained 1-19%
 * along rows (640 x 384 x 8192 15.4 -> 14.8 us, flushed 21.7 -> 18.9; 512
 * x 448 x 8192 16.6 -> 13.9, 20.0 -> 18.6; docs/perf.md).
 *
 * Where halves of 128 x 64 would be more runs than SMs (67 to 99 tiles:
 * the default ran them one a CTA, as many CTAs as tiles, each taking in
 * 24 KiB a k-step no faster than L2 serves it), halves of 128 x 96 tiles
 * (SK_NARROW_WIDE; whole subtiles of a K-major B), SK_FILL to TILE_TARGET
 * runs of 2 SK_RUN_STEPS k-steps or more, on two to four rows of tiles: 28
 * KiB a k-step for half again the work.  On an H200, cuBLAS / wsfuse,
 * CUDA-graph replays and L2 flushed: 512 x 1280 x 8192 (Llama 3 70B's qkv
 * at tensor parallel 8) 0.81-0.82 -> 0.90 and 0.84 -> 0.94, 256 x 2560 x
 * 8192 0.91-0.93 -> 1.04-1.05 and 0.86 -> 0.97-0.98, 384 x 2048 x 8192
 * 1.01-1.03 -> 1.14-1.15 and 0.91-0.92 -> 1.04-1.05, 384 x 1536 x 8192
 * 0.74 -> 0.81-0.82 and 0.85-0.86 -> 0.95-0.99.  Runs of 32 (K = 4096)
 * did not gain (512 x 1280 x 4096 0.76-0.77 -> 0.75 and 0.81-0.86 ->
 * 0.80-0.81), and one row of tiles lost at 128 x 6144 x 8192 (flushed
 * 0.93-0.95 -> 0.91).
 *
 * Since a tile's parts share its epilogue (fraction_plan), two more on one
 * row of 128-row tiles: of 16 to 22 tiles of 128 x 64, as many parts as
 * fill the SMs (6 to 8, SK_ROW_PARTS to SK_ROW_MOST; runs of SK_RUN_STEPS
 * / 2 or more), where quarters left a third of them idle; and halves of
 * 128 x 96 where a 128 x 64 tile a CTA would leave more than 3 / 8 of the
 * SMs idle (67 to 82 tiles).  On an H200, cuBLAS / wsfuse, CUDA-graph
 * replays and L2 flushed, the build before (parts that share the epilogue
 * already) against the rule: 128 x 1280 x 8192 0.81-0.84 -> 0.91-0.92 and
 * 0.89-0.91 -> 0.88-0.92, x 16384 0.74-0.80 -> 0.95-0.96 and 0.86 ->
 * 0.94-0.96, 128 x 1024 x 8192 (which ran ping-pong's 64 x 64 tiles split
 * by 3) 0.79-0.80 -> 0.86-0.87 and 0.81-0.85 -> 0.85; 128 x 4608 x 8192
 * 0.82 -> 0.92 and 0.87 -> 0.94-0.95, 128 x 5120 x 16384 0.91 -> 1.07 and
 * 0.90 -> 0.97-0.98.  Not taken: 5 parts (128 x 1536 x 8192: replays 6%
 * faster, flushed 3% slower), more rows (256 x 640 x 8192 in sixths and
 * 384 x 512 x 8192 in fifths: 1-11% slower in replays), runs of 10
 * (128 x 1280 x 4096), halves of 128 x 96 of 96 tiles (128 x 6144 x
 * 8192, flushed 2% slower) and of 128 x 128 or quarters of 128 x 256 on
 * one row (128 x 7168 x 8192: 4-24% slower).
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
 * Stream-K without a hint, for few tiles of a long K: a weight gradient's
 * 1024 x 1024 x 65536 is 32 tiles of 128 x 256 for 132 SMs, each of 1024
 * k-steps, and a tile a CTA leaves most SMs idle however the tile is cut
 * (cuBLAS splits K there: 256 x 128 tiles in clusters of two and a reduce
 * kernel).  Quarters or more of a tile where four parts of its tiles fit
 * the SMs (quarter_parts), else halves or thirds of tiles 128 to 256 wide
 * that fill them (half_parts), else quarters or halves of 128 x 64 tiles,
 * or halves of 128 x 96 (narrow_parts).  Parts of SK_CLUSTER_RUN k-steps
 * or more of 128 x 128 tiles (half that in more than quarters) run in
 * clusters of two tile rows that share B on an even number of tile rows;
 * else, of SK_CLUSTER_RUN or more, of two tile columns that share A
 * (fraction_plan takes a cluster as its unit): each k-step asks L2 for the
 * shared operand's slice once for the two, and a part's k loop, 128
 * k-steps of 32 KiB each, was bound by what L2 served (ncu at 512 x 512 x
 * 65536: 20.3M L2 sectors against cuBLAS's 9.5M in its clusters of 2 x 1,
 * each CTA taking in the same 540 MB).  On an H200,
 * cuBLAS / wsfuse, CUDA-graph replays and L2 flushed: 512 x 512 x 65536
 * 0.71-0.73 -> 0.87 and 0.72-0.73 -> 0.87, 256 x 1024 x 65536 0.73 ->
 * 0.90 and 0.74 -> 0.90-0.91, 512 x 1024 x 65536 0.73-0.75 -> 0.91-0.94
 * and 0.82-0.87 -> 0.89; in `[1, 2]`, 384 x 1024 x 65536 0.71-0.73 -> 0.81
 * and 0.75-0.76 -> 0.81, 128 x 4096 x 65536 0.96 -> 1.01-1.02 and
 * 0.97-0.98 -> 1.01; in parts of 64, 256 x 512 x 65536 (sixteenths)
 * 51.7-51.8 -> 44.4-44.5 us and 57.7 -> 51.3-51.6, 256 x 1024 x 32768
 * (eighths) 41.4-43.5 -> 35.3-35.4 and 48.0-48.6 -> 42.9.  In quarters of 32 (512 x
 * 1024 x 8192: 10% faster in replays, 2% slower flushed; 256 x 2048 x
 * 8192 2-3% slower) or 64 (512 x 1024 x 16384: a tie), halves of 64 (1024
 * x 1024 x 8192), and `[1, 2]` in parts of 51 (384 x 1024 x 16384: 5%
 * slower flushed), 64 (128 x 2048 x 32768, 128 x 4096 x 16384: ties) or
 * 93 (384 x 512 x 65536, a tie) it did not pay, nor at 128 x 256 (1024 x
 * 1024 x 65536).  With L2 flushed, cuBLAS / wsfuse on an H200:
 * 1024 x 1024 x 16384 0.72 -> 0.94, x 65536 0.60 -> 0.93, 512 x 512 x
 * 65536 (eighths) 0.47 -> 0.73, 128 x 1280 x 32768 0.66 -> 0.83, 1024 x
 * 1024 x 12288 (halves) 0.81 -> 0.99 (docs/perf.md).  A single matmul,
 * neither swapped, ping-pong nor batched, with no hint that bears on it
 * (stages sized for the default tile would not fit a wider one), and rows
 * that start 128-byte aligned (else misaligned_cluster's cluster).  The
 * choice is made at the spec's sizes, like the tile's; ALONG_ROWS:
 * choose_tile's one wave along the rows of a taller output.  Sets T's
 * tile, K->sk_parts and K's cluster.
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
	 * A taller output whose tiles choose_tile put in one wave along the
	 * rows keeps them up to SK_ALONG_ROWS k-steps (halves of 64, thirds of
	 * 42): on an H200, CUDA-graph replays / L2 flushed, against the halves
	 * or thirds at K = 8192, 1536 x 1024 15% / 17% faster, 2048 x 768 8% /
	 * 12%, 1280 x 1024 6-8% / 12%, 1536 x 768 5% / 10%, 1664 x 1024 4% /
	 * 8%, 1280 x 960 2% / 11%, 1152 x 1024 4% slower / 7% faster; at K =
	 * 16384, 1280 x 1024 10% / 8% slower, 1536 x 1024 9% / 6% faster
	 * (docs/perf.md, forty-second session).
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
	p->sk_parts = (int)parts;
	p->sk_scatter = true;   /* fractions of a tile that share its epilogue (fraction_plan) */
}
