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
 * memory by the compute, a residual's tile prefetched into L2 by the
 * producer first (prefetch_inputs).
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
 * QKV projection) run in one mainloop: A loaded once a stage, their B side
 * by side in one copy, one mma of N = n x BN into one accumulator whose
 * columns are theirs in turn (the tile's N divided among them).  Matmuls
 * with no A in common (independent) run one after the other in every tile,
 * each its k loop and epilogue, through the same stages and registers.
 * Split-K (choose_split): a cluster of CTAs shares each tile's k-steps,
 * and each rank adds the others' partial sums of its share of the
 * epilogue's subtiles (split_reduce, a reduce-scatter) before computing
 * and storing them; a swapped tile, one subtile, is rank 0's.  Stream-K
 * (stream_k_plan): the tiles of a last, partial wave are cut into runs of
 * k-steps over every CTA, whose partial sums meet in each tile's owner
 * through a workspace in global memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"

enum { MAXMM = 4 };   /* matmuls in one kernel */

/* Matmuls that run in one mainloop (they share A): op indices, and their accumulators. */
typedef struct Group {
	int mm[MAXMM], n;
	int acc[MAXMM];
} Group;

enum {
	BM = 128, BN = 256, BK = 64,   /* the default CTA tile; each consumer warpgroup holds 64 x BN of it */
	CHUNK = 64,                    /* an MN-major operand's box: 64 elements, the 128-byte swizzle span */
	ACC_REGS = 192,                /* a consumer thread's accumulator registers, all matmuls together: a
	                                  ping-pong 128 x 192 tile (quack's default) within setmaxnreg's 232 */
	EPI_COLS = 32,                 /* an epilogue subtile is BM x EPI_COLS */
	EPI_NARROW = 16,               /* or BM x EPI_NARROW, of a tile whose N is an odd multiple of 16 */
	GROUP = 16,                    /* tile rows a group of the raster holds (8 of 2-CTA clusters: the 66
	                                  clusters at work are about 8 x 8 cluster tiles; docs/perf.md) */
	WAVE_N = 80,                   /* one wave's tile narrows to no less than 128 x WAVE_N (choose_tile) */
	GROUP_PP_TILES = 1024,         /* group_pingpong: ping-pong from this many tiles, */
	GROUP_PP_N = 96,               /* 128 x 96 a matmul */
	TILE_TARGET = 132,             /* the default tile narrows while its tiles stay within this: an H100's or
	                                  H200's SMs */
	PRODUCER_THREADS = 128, CONSUMER_THREADS = 256,
	PRODUCER_REGS = 40, CONSUMER_REGS = 232,   /* 128 x 40 + 256 x 232: the 384 x 168 registers a CTA */
	SHARE_PRODUCER_REGS = 56, SHARE_CONSUMER_REGS = 224,   /* in clusters that multicast: ptxas spilled the
	                                                          producer's loads at 40 (choose_regs) */
	SHARE_ACC = 160,                           /* accumulator registers a thread that 224 hold unspilled */
	SIGNAL_PRODUCER_REGS = 88, SIGNAL_CONSUMER_REGS = 208,   /* with a signal consumer role: 128 x 88 + 256 x 208,
	                                                            for its loads in flight (emit_matmul.c) */
	SMEM_BUDGET = 227 * 1024,                  /* sm_90's dynamic shared memory a CTA */
	SMEM_SLACK = 256,                          /* its other barriers and padding, in fit_tile's estimate */
	SWAP_STAGES = 16,                          /* swap_ab's stages by default: a tile's k loop streams B from
	                                              DRAM, and each stage holds little of it (docs/perf.md) */
	MAX_SPLIT = 4,                             /* CTAs a K-split's cluster by default, at most: clusters of 8
	                                              of one CTA an SM did not all fit at once (docs/perf.md) */
	SPLIT_STEPS = 8,                           /* k-steps (of 64) a CTA keeps at least when K is split by
	                                              default: fewer would spend more on the pipeline's fill and
	                                              the reduction than the split gains */
	MAX_CLUSTER = 8,                           /* CTAs a matmul cluster (the portable cluster size) */
	ROW_CLUSTER = 4,                           /* row_cluster: CTAs along N that share a ragged row's A, */
	ROW_TILES = 80,                            /* from this many tiles (to the clusters resident at once) */
	ROW_STEPS = 64,                            /* and k-steps, */
	ROW_PAST = 16,                             /* A's box at least this many rows past M */
	SPLIT_STAGING = 32 * 1024,                 /* what a default K-split leaves for the staging copies */
	STAGING_RING = 4,                          /* a cooperative tile's staging copies where the stages leave
	                                              room (KBuf.ring): a subtile's store may still read two
	                                              copies while the next is written (docs/perf.md) */
	FEW_STEPS = 16,                            /* k-steps a CTA keeps at least in an unswapped GEMM's default
	                                              split: at 8 (256 x 1024 x 1024) the split lost */
	RESIDENT_3 = 39, RESIDENT_4 = 30,          /* clusters of 3 and 4 CTAs of one an SM resident at once on an
	                                              H200 (cudaOccupancyMaxActiveClusters; clusters of 2: 66, the
	                                              SMs' pairs): the GPCs' SMs are not all multiples of 3 or 4 */
	SK_PARTS = 4,                              /* stream-K: a run is at least 1 / SK_PARTS of a tile's */
	SK_MIN_STEPS = 4,                          /* k-steps, and at least this many (stream_k_plan) */
	SK_LEFT_NUM = 5, SK_LEFT_DEN = 8,          /* stream-K when the last wave holds at most 5 / 8 of the CTAs */
	SK_MOST_PARTS = 16,                        /* long_k_stream: runs of at least 1 / 16 of a tile */
	SK_RUN_STEPS = 32,                         /* and this many k-steps (128 x 128 in quarters; twice that at
	                                              128 x 256 or in more parts), */
	SK_FEW_TILES = 8,                          /* on this many tiles or more, */
	SK_FILL = 80,                              /* whose runs are this many or more: at 64 it tied the default */
	SK_WAVE_FILL = 120,                        /* in halves or thirds, this many: at 96 it lost back to back; */
	SK_IDLE_NUM = 4, SK_IDLE_DEN = 5,          /* where 128 x 128 tiles fill at most 4 / 5 of the SMs */
	SK_THIRDS_FROM = 192,                      /* halves of tiles this wide or wider: thirds of 128 x 256 */
	SK_CLUSTER_RUN = 128,                      /* runs of 128 x 128 this long: in clusters of two */
	SK_ALONG_ROWS = 128,                       /* a taller output's one wave along rows up to this many k-steps */
	SK_NARROW_ROWS = 4,                        /* narrow_parts: on at most this many rows of tiles, */
	SK_NARROW_WIDE = 96,                       /* else halves this wide where 128 x 64's are too many */
	SK_ROW_PARTS = 6, SK_ROW_MOST = 8,         /* one row of 128 x 64 tiles: this many parts or more fill
	                                              the SMs where quarters leave a third idle */
	TUNE_COUNT = 12                            /* lower_matmul_candidates' schedules, at most */
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

/*
 * Does output D, at its compile-time sizes, have at most 64 rows (its dims
 * before the last together: a decode step's tokens)?  Then a single matmul
 * without a hint takes ping-pong's 64-row tiles by default: a 128-row tile
 * would compute at least half its rows for nothing (M = 64 x 8192 x 4096:
 * 0.72x -> 0.93x cuBLAS, M = 16 0.67x -> 0.85x; docs/perf.md).
 */
static bool
few_rows(const Fusion *f, const Tensor *d)
{
	int64_t rows = 1;
	int i;

	for (i = 0; i + 1 < d->rank; i++)
		if ((rows *= dim_value(f, d->dim[i])) <= 0 || rows > 64)
			return false;
	return true;
}

/* The tiles of M x N that cover ROWS x COLS (both positive). */
static int64_t
grid_tiles(int64_t rows, int64_t cols, int m, int n)
{
	return (rows + m - 1) / m * ((cols + n - 1) / n);
}

/* The bytes of a row of X (its last dim) at the spec's sizes, 0 when unknown: rows start that far apart. */
static int64_t
row_bytes(const Fusion *f, const Tensor *x)
{
	int64_t n = dim_value(f, x->dim[x->rank - 1]);

	return n > 0 ? n * dtype_info[x->dtype].bytes : 0;
}

/* Do both operands of matmul MM have rows that start 128-byte aligned at the spec's sizes? */
static bool
rows_aligned(const Fusion *f, int mm)
{
	int64_t a = row_bytes(f, &f->tensor[f->op[mm].in[0].tensor]), b = row_bytes(f, &f->tensor[f->op[mm].in[1].tensor]);

	return a > 0 && a % 128 == 0 && b > 0 && b % 128 == 0;
}

/* Output D's rows at its compile-time sizes (its dims before the last together); 0 when unknown or past 2^63. */
static int64_t
out_rows(const Fusion *f, const Tensor *d)
{
	int64_t rows = 1;
	int i;

	for (i = 0; i + 1 < d->rank && rows > 0; i++)
		rows = dim_value(f, d->dim[i]) > 0 && rows <= INT64_MAX / dim_value(f, d->dim[i]) ?
		       rows * dim_value(f, d->dim[i]) : 0;
	return rows;
}

/* Does the epilogue read an input of whole tiles (FULL: a residual), or else of any tensor view (a row, a column)? */
static bool
epilogue_inputs(const Fusion *f, const Group *g, int ng, const Tensor *d, bool full)
{
	int i, gi, m;

	for (i = 0; i < f->ninput; i++) {
		bool operand = false;

		for (gi = 0; gi < ng; gi++)
			for (m = 0; m < g[gi].n; m++)
				operand |= f->input[i] == f->op[g[gi].mm[m]].in[0].tensor ||
				           f->input[i] == f->op[g[gi].mm[m]].in[1].tensor;
		if (!operand && !f->tensor[f->input[i]].unread &&
		    (full ? epilogue_view(&f->tensor[f->input[i]], d) == VIEW_FULL
		          : epilogue_view(&f->tensor[f->input[i]], d) != VIEW_SCALAR))
			return true;
	}
	return false;
}

/*
 * The default cooperative tile whose last wave leaves fewer SMs idle.
 * 2048 x 1280 x 8192 has 80 tiles of 128 x 256 for 132 SMs, one wave 61%
 * full, while 128 of 128 x 160 fill it: 1.34x faster on an H200; 8192 x
 * 1280 x 8192 runs 256 of 256 x 160 in 1.9 waves where 128 x 256 took
 * 2.4: 1.12x.  A tile computes at its own rate a multiply-add (fewer
 * multiply-adds for each byte a stage brings at 128 x 160; RATE, per mille
 * of 128 x 256's, from 8192^3 and 8192 x 14336 x 4096, measured again once
 * the five and three stages of 128 x 192, 128 x 160 and 256 x 160 divided
 * their stage counters in 32 bits, docs/perf.md, thirty-sixth session).
 * A tile's cost is its waves times its area / RATE, in hundredths of a
 * wave: a lone partial wave costs a whole one; a partial wave after full
 * ones LAST_WAVE, plus the rest of a wave in proportion to its tiles (its
 * SMs run faster while the others idle: fitted to 8192 x 1280 x 8192,
 * which tied at 128 x 224 where whole waves predicted 12%, and to 512 x
 * 28672 x 4096, which gained 4%).  Another tile must save GAIN % of 128 x
 * 256's cost (docs/perf.md, twenty-eighth session).  Its N is a whole
 * multiple of STEP (choose_tile's: an N-major B takes 256 or 192).  The
 * 256-row tile only where TALL (each consumer thread holds 160
 * accumulators: ptxas spilled an epilogue that adds a residual, and one
 * of two independent matmuls; at 256 x 192, as fast as 128 x 256 at
 * 8192^3, it spilled gelu's epilogue and an M-major A's).  Sets *BM and
 * *BN.
 */
static void
fill_waves(int64_t rows, int64_t cols, int step, bool tall, int *bm, int *bn)
{
	static const struct {
		int m, n, rate;
	} tile[] = {{BM, BN, 1000}, {BM, 224, 960}, {BM, 192, 950}, {BM, 160, 925}, {2 * BM, 160, 995}};
	enum { LAST_WAVE = 55, GAIN = 3 };
	int64_t cost, best = 0, tiles, full, left;
	int i;

	*bm = BM, *bn = BN;
	if (rows > 1 << 24 || cols > 1 << 24)   /* thousands of waves, whatever the tile; and no overflow below */
		return;
	for (i = 0; i < countof(tile); i++) {
		if (tile[i].n % step || (tile[i].m > BM && !tall))
			continue;
		tiles = grid_tiles(rows, cols, tile[i].m, tile[i].n);
		full = tiles / TILE_TARGET, left = tiles % TILE_TARGET;
		cost = full * 100 + (left == 0 ? 0 : full == 0 ? 100 : LAST_WAVE + (100 - LAST_WAVE) * left / TILE_TARGET);
		cost = cost * tile[i].m * tile[i].n / tile[i].rate;
		if (i == 0)
			best = cost * (100 - GAIN) / 100;
		else if (cost < best)
			best = cost, *bm = tile[i].m, *bn = tile[i].n;
	}
}

static bool op_reads(const Fusion *f, int t);

/*
 * Shared memory a tile of BM x BN (NMM matmuls side by side) takes besides
 * its operands' stages: each output's two staging copies of the epilogue's
 * subtile (ping-pong: both warpgroups' rows; lower_stage_output), and
 * each row input's two copies of the tile's columns (stage_rows).  One
 * operand stage in *STAGE.
 */
static int64_t
epilogue_smem(const Fusion *f, const Tensor *d, bool pingpong, int nmm, int bm, int bn, int64_t *stage)
{
	int ecols = bn % EPI_COLS ? EPI_NARROW : EPI_COLS, j;
	int64_t bytes = 0;

	*stage = (int64_t)(bm + nmm * bn) * BK * 2;
	for (j = 0; j < f->nout; j++)
		bytes += 2 * (int64_t)(pingpong ? 2 * bm : bm) * ecols * dtype_info[f->out[j].dtype].bytes;
	for (j = 0; j < f->ninput && !pingpong; j++) {
		const Tensor *x = &f->tensor[f->input[j]];

		if (epilogue_view(x, d) == VIEW_ROW && op_reads(f, f->input[j]))
			bytes += 2 * (((int64_t)bn * dtype_info[x->dtype].bytes + 127) / 128 * 128);
	}
	return bytes;
}

/* Do STAGES operand stages of BM x BN fit beside the epilogue's staging (and each stage's barriers)? */
static bool
tile_fits(const Fusion *f, const Tensor *d, bool pingpong, int nmm, int bm, int bn, int stages)
{
	int64_t stage, rest = epilogue_smem(f, d, pingpong, nmm, bm, bn, &stage);

	return rest + stages * (stage + 16) + SMEM_SLACK <= SMEM_BUDGET;
}

/*
 * The default tile's N, narrowed by STEP down to LEAST until two operand
 * stages fit beside the epilogue's staging copies, else one: six f32
 * outputs take 192 KiB of copies at 128 x 256, 96 at 128 x 240 (subtiles
 * of EPI_NARROW columns).  Left as it is where nothing fits (check_fit).
 */
static void
fit_tile(const Fusion *f, const Tensor *d, bool pingpong, int nmm, int step, int least, int bm, int *bn)
{
	int want, n;

	for (want = 2; want >= 1; want--)
		for (n = *bn; n >= least; n -= step)
			if (tile_fits(f, d, pingpong, nmm, bm, n, want)) {
				*bn = n;
				return;
			}
}

/*
 * The tile: the hint [M, N, K] checked against what the mma and TMA take, or
 * the default.  Without a hint, N halves (256, 128, 64) while the output D
 * at its compile-time sizes still has at most TILE_TARGET tiles (the SMs of
 * an H100 or H200: one wave) after halving: a small GEMM then spreads over
 * the SMs instead of leaving most of them idle (1024^3: 32 tiles of 128 x
 * 256 become 128 of 128 x 64, 1.39x faster).  Narrower tiles that would take
 * a second wave lose (2048^3 at 128 x 128: 0.75x; docs/perf.md).  Where N
 * stays 256, the tile that fills the last wave best (fill_waves).  A kernel
 * with a signal consumer role keeps 256; clusters along M of an N-major B
 * (matmul MM) stop at 128.  TALL: a 256-row tile may be chosen.  Sets
 * *ALONG_ROWS where the tiles should go in order along each row of tiles
 * (Kernel.raster_rows).
 */
static int
choose_tile(Comp *c, const Fusion *f, const Tensor *d, bool pingpong, bool group_pp, int mm, int nmm, bool kmajor_b,
            bool tall, int *bm, int *bn, int *bk, bool *along_rows)
{
	const Schedule *h = &f->sched;
	int m = pingpong ? BM / 2 : BM;   /* ping-pong: a warpgroup's own tile, 64 rows */
	int64_t rows, cols = dim_value(f, d->dim[d->rank - 1]);
	/* clusters of x along M multicast 1 / x of B's rows a CTA: of an N-major B, whole 64-wide chunks */
	int per, least = h->cluster[0] > 1 && !f->op[mm].transpose_b ? h->cluster[0] * CHUNK : CHUNK;
	/* a hint's N: whole epilogue subtiles of a K-major B, whole 64-wide chunks of an N-major one */
	int step = kmajor_b ? EPI_NARROW : CHUNK;

	/* a thread holds N / 2 accumulator registers a matmul: several share the budget */
	*bm = m, *bn = BN / nmm / CHUNK * CHUNK, *bk = BK;
	if (*bn < CHUNK)
		return unbuilt(c, f->pos, "%d matmuls in one kernel do not fit a consumer's %d accumulator registers",
		               nmm, ACC_REGS);
	if (!h->ntile) {
		if (h->consumer_pos.line)
			return 0;   /* a signal consumer's role spills at narrower tiles (ptxas; emit_matmul.c) */
		if (group_pp) {   /* a 128-row ping-pong tile of GROUP_PP_N columns a matmul (group_pingpong) */
			*bm = 2 * m, *bn = GROUP_PP_N;
			fit_tile(f, d, pingpong, nmm, step, least, *bm, bn);
			return 0;
		}
		rows = out_rows(f, d);
		while (*bn > least && rows > 0 && cols > 0 && grid_tiles(rows, cols, m, *bn / 2) <= TILE_TARGET)
			*bn /= 2;
		/*
		 * Not where another kernel's tiles must line up with these (a
		 * signal, an input that waits), nor with a hint the tile bears on
		 * (a cluster's halves, a split's partial sums, the stages, stream-K)
		 */
		if (pingpong || nmm != 1 || h->cluster_pos.line || h->signal || fusion_waits(f) || h->split_pos.line ||
		    h->stages || h->stream_k == 2 || rows <= 0 || cols <= 0) {
			fit_tile(f, d, pingpong, nmm, step, least, *bm, bn);
			return 0;
		}
		if (*bn == BN)
			fill_waves(rows, cols, step, tall, bm, bn);
		/*
		 * A tile of 128 rows whose tiles fit one wave narrows to the least
		 * multiple of 16 (whole subtiles of a K-major B: 32 columns, or 16)
		 * from WAVE_N up whose tiles still do: the wave's time is its
		 * tile's.  Where the output is taller than wide, the wave's tiles
		 * go in order along each row of tiles (along_rows), so that CTAs
		 * started together share A, the larger operand; in groups walked
		 * down the columns the narrowed ones lost there (1536 x 768 x 4096
		 * at 128 x 80 against 96 11%), and along the rows a wider output's
		 * lost (1024 x 1280 x 4096 at 80 18%).  On an H200, the build before
		 * against this one, CUDA-graph replays / L2 flushed: wider, 128 x
		 * 96 -> 80 at 384 x 3072, 640 x 2048, 768 x 1536 and 1024 x 1280 x
		 * 4096 10-12% / 5-8% faster, 128 -> 112, 160 -> 144, 224 -> 208 at
		 * 1280 x 1280 x 4096, 1536 x 1536 x 8192 and 1664 x 2048 x 4096
		 * 5-7% / 4-6%, 256 -> 240 0-2%; taller, along the rows, 2048 x 768
		 * and 1536 x 1024 x 4096 (128 x 96) 16-30% / 11-24%, 1536 x 768,
		 * 1280 x 960, 1664 x 1024 and 1408 x 1280 x 4096 (narrowed) 5-12% /
		 * 4-12%, 8192 x 256, 2048 x 1024, 4096 x 512 and 1792 x 1024 x 4096
		 * (128 x 128) 3-11% / 0-9%, 1280 x 1024 x 4096 -1% / 4%, 6144 x 512
		 * a tie (docs/perf.md, forty-second session).  Not on one row of
		 * tiles, where row_cluster's clusters share A, nor of operands whose
		 * rows are not 128-byte aligned, where misaligned_cluster's pairs
		 * along N would take a second wave (1536 x 1024: 72 clusters of 192
		 * columns, 144 CTAs), nor where 128 x 64 already fits.
		 */
		if (*bm == BM && *bn > WAVE_N && kmajor_b && rows > BM && rows_aligned(f, mm) &&
		    grid_tiles(rows, cols, m, *bn) <= TILE_TARGET) {
			int n = WAVE_N;

			while (n < *bn && grid_tiles(rows, cols, m, n) > TILE_TARGET)
				n += EPI_NARROW;
			*along_rows = rows > cols;
			*bn = n;
		}
		fit_tile(f, d, pingpong, nmm, step, least, *bm, bn);
		return 0;
	}
	if (h->ntile != 3)
		return diag_error(c, h->tile_pos, "a matmul tile is [M, N, K], 3 extents; saw %d", h->ntile);
	/*
	 * Two 64-row wgmma blocks a warpgroup: ping-pong's tile of 128 rows, or
	 * a cooperative tile of 256 rows (each warpgroup 128 of them), at twice
	 * the registers a column.
	 */
	if (h->tile[0] == 2 * m)
		m = 2 * m;
	if (h->tile[0] != m)
		return unbuilt(c, h->tile_pos, "a matmul tile of %d rows is not implemented yet: %s", h->tile[0],
		               pingpong ? "with consumers: pingpong each consumer warpgroup owns a tile of 64 or 128 rows" :
		               "the two consumer warpgroups hold 64 or 128 rows each, so M is 128 or 256");
	/* the tile's accumulators spread over the threads that compute it: both warpgroups, or one (ping-pong) */
	per = pingpong ? 128 : 256;
	if (nmm * m * h->tile[1] / per > ACC_REGS) {
		int fit = ACC_REGS * per / m / nmm / step * step;

		if (nmm > 1 && fit > 256 / nmm / step * step)   /* and side by side within one wgmma's N, below */
			fit = 256 / nmm / step * step;
		return diag_error(c, h->tile_pos, "matmul tile %d x %d holds %d accumulator registers a thread%s, more "
		                  "than the %d that fit; %s", m, h->tile[1], nmm * m * h->tile[1] / per,
		                  nmm > 1 ? arena_printf(c->arena, " (%d for each of the %d matmuls)",
		                                         m * h->tile[1] / per, nmm) : "",
		                  ACC_REGS, fit ? arena_printf(c->arena, "use N = %d", fit) :
		                  arena_printf(c->arena, "use %d rows", m / 2));
	}
	*bm = m;
	if (nmm > 1 && nmm * h->tile[1] > 256)   /* a group's matmuls are side by side in one wgmma's N */
		return diag_error(c, h->tile_pos, "the %d matmuls sharing A compute side by side, one wgmma of N = %d x "
		                  "%d, more than wgmma's 256; use N = %d", nmm, nmm, h->tile[1], 256 / nmm / step * step);
	if (h->tile[1] % step || h->tile[1] <= 0 || h->tile[1] > 256)
		return diag_error(c, h->tile_pos, "matmul tile N is %d; it must be a multiple of %d up to 256 (%s)",
		                  h->tile[1], step, kmajor_b ? "wgmma's N, and the epilogue's subtiles of 32 or 16 columns" :
		                  "wgmma's N, and the 64-wide chunks of an N-major B");
	if (h->tile[2] != BK)
		return diag_error(c, h->tile_pos, "matmul tile K is %d; it must be %d (a 128-byte swizzled row of "
		                  "2-byte elements)", h->tile[2], BK);
	*bn = h->tile[1];
	return 0;
}

/*
 * schedule: swap_ab.  An output of few rows (a decode step's tokens) fills
 * a 64-row wgmma tile mostly with nothing, and a tile of 64 x 64 loads as
 * much A as B at each k-step.  Swapped, the kernel computes D^T = B A^T:
 * 64 of B's rows (the output's columns) are wgmma's M, and the output's
 * rows, rounded up to 8, its N (8 to 64); the accumulator holds the tile
 * transposed, and the epilogue writes it back transposed into a staging
 * tile [rows][columns].  Ping-pong consumers, each its own tile of 64
 * columns, or cooperative ones on a tile of 128 (swap_tile).  On by
 * default where ping-pong's 64-row tiles would be (few_rows) and nothing
 * below rules it out; `swap_ab: true` asks for it at any M (tiles of 64
 * rows then), false keeps the kernel unswapped.  Sets *SWAP; 0 or -1.
 */
static int
choose_swap(Comp *c, const Fusion *f, const Tensor *d, const Group *g, int ng, const Op *op, bool *swap)
{
	const Schedule *h = &f->sched;
	bool ask = h->swap_ab == 2;
	const char *why = NULL, *then = "";

	*swap = false;
	if (h->swap_ab == 1 || (!ask && (h->ntile || h->consumers || !few_rows(f, d))))
		return 0;
	if (ng > 1 || g[0].n > 1)
		why = "with several matmuls in one kernel";
	else if (op->transpose_a)
		why = "with A read M-major (transpose_a)", then = ": its tile would be whole 64-wide chunks of M";
	else if (f->tensor[op->in[1].tensor].rank > 2)
		why = "for a batched matmul";
	else if (h->cluster_pos.line && h->cluster[0] * h->cluster[1] > 1)
		why = "in clusters";
	else if (h->signal)
		why = "with 'signal: per_tile'";
	else if (fusion_waits(f))
		why = "with an input or output that waits per tile";
	if (why && ask)
		return unbuilt(c, h->swap_pos, "swap_ab %s is not implemented yet%s", why, then);
	*swap = !why;
	return 0;
}

/*
 * The tile of a swapped matmul (choose_swap): [rows, cols, 64], rows the
 * hint's or the output's rows at its compile-time sizes rounded up to 8,
 * at most 64; cols 64, one ping-pong warpgroup's (*PINGPONG), or 128, 64
 * a cooperative warpgroup.  Without a hint, 128 when the output still has
 * a wave of such tiles (TILE_TARGET) at its compile-time sizes: then a
 * stage holds twice B's rows for the same slice of A, as cuBLAS's 128 x
 * 16 tile for 16 x 28672 x 4096 does (docs/perf.md).
 */
static int
swap_tile(Comp *c, const Fusion *f, const Tensor *d, bool *pingpong, int *bm, int *bn, int *bk)
{
	const Schedule *h = &f->sched;
	int64_t rows = 1, cols = dim_value(f, d->dim[d->rank - 1]);
	int i;

	*bn = CHUNK, *bk = BK;
	if (h->ntile) {
		if (h->ntile != 3 || h->tile[0] % 8 || h->tile[0] > 64 || (h->tile[1] != CHUNK && h->tile[1] != 2 * CHUNK) ||
		    h->tile[2] != BK)
			return diag_error(c, h->tile_pos, "a swap_ab tile is [M, %d, %d] or [M, %d, %d] with M a multiple of "
			                  "8 up to 64 (wgmma's N; %d of B's rows are a warpgroup's M)", CHUNK, BK, 2 * CHUNK,
			                  BK, CHUNK);
		if (h->consumers && (h->consumers == CONSUMERS_PINGPONG) != (h->tile[1] == CHUNK))
			return diag_error(c, h->tile_pos, "a swap_ab tile with consumers: %s is [M, %d, %d]",
			                  h->consumers == CONSUMERS_PINGPONG ? "pingpong" : "cooperative",
			                  h->consumers == CONSUMERS_PINGPONG ? CHUNK : 2 * CHUNK, BK);
		*bm = h->tile[0];
		*bn = h->tile[1];
		*pingpong = *bn == CHUNK;
		return 0;
	}
	for (i = 0; i + 1 < d->rank && rows > 0 && rows <= 64; i++)
		rows = dim_value(f, d->dim[i]) > 0 ? rows * dim_value(f, d->dim[i]) : 0;
	*bm = rows > 0 && rows <= 64 ? (int)(rows + 7) / 8 * 8 : 64;
	if (h->consumers)
		*pingpong = h->consumers == CONSUMERS_PINGPONG;
	else
		*pingpong = !(rows > 0 && rows <= 64 && cols > 0 && (cols + 2 * CHUNK - 1) / (2 * CHUNK) >= TILE_TARGET);
	*bn = *pingpong ? CHUNK : 2 * CHUNK;
	return 0;
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
	int h, n, cm = k->cluster[0], share = k->cluster[axis], j;
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
			place = k->cluster[1] > 1 ? ex_bin(c, EX_MOD, rank, ex_int(c, cm)) : rank;
		mask = ex_int(c, bits);
		if (k->cluster[1 - axis] > 1)
			mask = ex_bin(c, EX_SHL, mask, axis ? ex_bin(c, EX_MOD, rank, ex_int(c, cm))
			                                     : ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, rank, ex_int(c, cm)),
			                                              ex_int(c, cm)));
		if (k->splits > 1)   /* the CTAs of this CTA's K-split rank (lower_split_rank) */
			mask = ex_bin(c, EX_SHL, mask, ex_bin(c, EX_MUL, lower_split_rank(c, k),
			                                      ex_int(c, k->cluster[0] * k->cluster[1])));
		part = ex_bin(c, EX_MUL, place, ex_int(c, rows / share));
		rows /= share;
		x0 = ex_bin(c, EX_ADD, x0, part);
		at = ex_bin(c, EX_ADD, at, ex_bin(c, EX_MUL, part, ex_int(c, bk)));
	}
	n = kmajor ? 1 : rows / CHUNK;
	for (h = 0; h < n; h++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);
		Expr *kcol = ex_bin(c, EX_MUL, kk, ex_int(c, bk)), *off = h ? ex_bin(c, EX_ADD, at, ex_int(c, h * bk * CHUNK)) : at;

		ld->buf = buf, ld->param = p, ld->slot = ex_int(c, 0);
		if (kmajor) {
			ld->a = x0, ld->b = kcol;
		} else {
			ld->a = kcol;
			ld->b = h ? ex_bin(c, EX_ADD, x0, ex_int(c, h * CHUNK)) : x0;
		}
		ld->off = off->kind == EX_INT && off->ival == 0 ? NULL : off;
		ld->mcast = mask;
		ld->z = bt;
		ld->pos = pos;
		st_append(c, issue, ld);
	}
}

/*
 * The matmuls of F in groups, each group one mainloop; the group count, or
 * -1 after an error.  Matmuls that share their first operand form one group
 * (horizontal fusion: SwiGLU's gate and up, a QKV projection): A is loaded
 * once a stage, each B and accumulator is its own.  Matmuls with no operand
 * in common (independent) are a group each: their mainloops run one after
 * the other in every tile, through the same stages and the same accumulator
 * registers, so they must agree on the tile: operand dtype and layouts,
 * output shape and K.
 */
static int
the_matmuls(Comp *c, const Fusion *f, Group *g)
{
	int i, n = 0, ng = 0;
	const Op *first = NULL;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const Tensor *a, *fa;
		int j;

		if (op_info[o->kind].cls != CLS_MATMUL)
			continue;
		if (n++ == MAXMM)
			return unbuilt(c, o->pos, "more than %d matmuls in one kernel are not implemented yet", MAXMM);
		if (!first) {
			first = o;
			g[ng++] = (Group){.mm = {i}, .n = 1};
			continue;
		}
		a = &f->tensor[o->in[0].tensor];
		fa = &f->tensor[first->in[0].tensor];
		if (o->transpose_a != first->transpose_a || o->transpose_b != first->transpose_b ||
		    !lower_same_shape(&f->tensor[o->out], &f->tensor[first->out]))
			return unbuilt(c, o->pos, "matmuls in one kernel that differ in their operands' layouts or their "
			               "outputs' shapes ('%s', '%s') are not implemented yet", f->tensor[first->out].name,
			               f->tensor[o->out].name);
		if (!dim_equal(a->dim[a->rank - (o->transpose_a ? 2 : 1)], fa->dim[fa->rank - (first->transpose_a ? 2 : 1)]))
			return unbuilt(c, o->pos, "matmuls in one kernel with different K ('%s', '%s') are not implemented "
			               "yet", f->tensor[first->out].name, f->tensor[o->out].name);
		for (j = 0; j < ng && f->op[g[j].mm[0]].in[0].tensor != o->in[0].tensor; j++)
			;
		if (j < ng)
			g[j].mm[g[j].n++] = i;
		else
			g[ng++] = (Group){.mm = {i}, .n = 1};
	}
	if (!n)
		return diag_internal(c, "lower", "a matmul fusion without a matmul");
	for (i = 0; ng > 1 && i < ng; i++)
		if (g[i].n > 1)
			return unbuilt(c, f->op[g[i].mm[1]].pos, "matmuls that share '%s' in a kernel with a matmul that does "
			               "not ('%s') are not implemented yet", f->tensor[f->op[g[i].mm[0]].in[0].tensor].name,
			               f->tensor[f->op[g[i ? 0 : 1].mm[0]].out].name);
	return ng;
}

/*
 * The group each tensor's value depends on, for the outputs of independent
 * matmuls: bit g of DEP[t] when t reads group g's accumulator.  An output
 * that combines two groups is refused (each epilogue holds one group's
 * accumulator: they share the registers); one that reads none goes with the
 * first group.  OUT_GROUP[j]: output j's group.
 */
static int
epilogue_groups(Comp *c, const Fusion *f, const Group *g, int ng, int *out_group)
{
	unsigned *dep = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *dep);
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (op_info[o->kind].cls == CLS_MATMUL) {
			for (j = 0; j < ng; j++)
				for (int m = 0; m < g[j].n; m++)
					if (g[j].mm[m] == i)
						dep[o->out] = 1u << j;
			continue;
		}
		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor)
				dep[o->out] |= dep[o->in[j].tensor];
	}
	for (j = 0; j < f->nout; j++) {
		unsigned d = dep[f->out[j].tensor];

		if (f->out[j].consumer)
			continue;   /* the signal's consumer reads the stored outputs, whichever epilogue stored them */
		if (d & (d - 1))
			return unbuilt(c, f->out[j].pos, "output '%s' combines the results of independent matmuls, which "
			               "is not implemented yet: each epilogue holds one matmul's accumulator",
			               f->tensor[f->out[j].tensor].name);
		for (out_group[j] = 0; d > 1; d >>= 1)
			out_group[j]++;
	}
	return 0;
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
 * of B for every row of tiles; or, with Kernel.raster_rows, along each row
 * of tiles (a group of one row).  Rewrites the tile loop's row0 and col0.
 */
static void
raster(Comp *c, Kernel *k, Stmt *loop, Expr *batch_tiles)
{
	Stmt *tile = NULL, *row0 = NULL, *col0 = NULL;
	Expr *ntc = NULL, *rows_t, *span, *first, *height, *in, *t;
	int i, group = k->raster_rows ? 1 : GROUP / k->cluster[0] > 0 ? GROUP / k->cluster[0] : 1;

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
	/* in clusters, a group is GROUP tile rows of cluster tiles (lower_tile_loop) */
	rows_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows * k->cluster[0]));
	span = ex_bin(c, EX_MUL, ex_int(c, group), ntc);            /* tiles in a group */
	if (group == 1) {   /* along each row of tiles */
		row0->a = lower_rank_at(c, k, ex_bin(c, EX_DIV, t, ntc), 0);
		col0->a = lower_rank_at(c, k, ex_bin(c, EX_MOD, t, ntc), 1);
		return;
	}
	first = ex_bin(c, EX_MUL, ex_bin(c, EX_DIV, t, span), ex_int(c, group));
	height = ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, rows_t, first), ex_int(c, group));   /* the last group may be short */
	in = ex_bin(c, EX_MOD, t, span);
	row0->a = lower_rank_at(c, k, ex_bin(c, EX_ADD, first, ex_bin(c, EX_MOD, in, height)), 0);
	col0->a = lower_rank_at(c, k, ex_bin(c, EX_DIV, in, height), 1);
}

/*
 * A ragged last tile moved inside the output: where M (N) is not a multiple
 * of the tile's rows (columns), the last row (column) of tiles starts at
 * M - BM (N - BN) instead, overlapping the tiles before it, so that every
 * TMA box of A (B) lies inside its tensor.  Boxes that lie mostly outside
 * slow every CTA's loads, not only theirs: on an H200, 64 x 64 tiles split
 * by 2 took 15.2 us at 256 x 1024 x 8192 and 19.2-19.4 at 200 x 1024 x
 * 8192, where timer stamps a CTA found the k loops of all four rows of
 * tiles slower, the last one most; moved inside, 15.3-15.4 (docs/perf.md).
 * The rows two tiles share are computed by both and stored by both, with
 * the same bits (tests/gpu/ragged_tiles.py: each element's k-steps are
 * summed in one order wherever its tile starts).  Not where a tile's place
 * means more than its outputs: the per-tile flags of a signal or of inputs
 * that wait count tiles by row0 / BM, and an output that accumulates would
 * add the shared rows twice.  The loop's row0 and col0 lets (raster's)
 * become min(x0, max(extent - tile, 0)): a tile (or a cluster's CTA) wholly
 * past the end repeats the last one instead of loading nothing but zeros.
 * The shift is a function of the coordinate alone, so a cluster's CTAs that
 * share an operand's box (multicast) still agree on where it is.
 */
static void
tile_inside(Comp *c, const Fusion *f, Kernel *k, Stmt *loop)
{
	int i, j;

	if (k->waits || f->sched.signal == SIGNAL_PER_TILE)
		return;
	for (j = 0; j < f->nout; j++)
		if (f->out[j].accumulate)
			return;
	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];
		const char *name = x->kind == ST_LET ? k->var[x->var].name : "";
		bool row = strcmp(name, "row0") == 0;

		if (!row && strcmp(name, "col0") != 0)
			continue;
		x->comment = row ? "a ragged last row of tiles inside the output: A's boxes in the tensor" :
		                   "a ragged last column of tiles inside the output: B's boxes in the tensor";
		x->a = ex_bin(c, EX_MIN, x->a,
		              ex_bin(c, EX_MAX, ex_bin(c, EX_SUB, ex_var(c, row ? k->rows_var : k->cols_var),
		                                       ex_int(c, row ? k->tile_rows : k->tile_cols)), ex_int(c, 0)));
	}
}

/* What every group's mainloop and epilogue share: the tile, the operand buffers, where the tile is. */
typedef struct Tile {
	Kernel *k;
	const Fusion *f;
	Stmt *loop;                   /* the tile loop */
	Expr *row0, *col0, *bt, *ktiles;
	Expr *k0, *kparts;            /* a K-split (Kernel.splits): this CTA's first k-step, and the cluster's CTAs
	                                 that have k-steps; NULL without.  Stream-K: k0 is the part's first */
	Expr *kn, *kbase, *help;      /* stream-K (stream_k_plan): the part's k-steps, the stage counter at its
	                                 first, and the CTAs after this one whose sums its tile's owner adds */
	Expr *ski, *sknp;             /* stream-K in fractions of a tile (Kernel.sk_scatter): the part's index
	                                 among its tile's, and their number (0 and 1 for a whole tile) */
	int bm, bn, bk;
	bool akm, bkm;                /* is the operand K-major (K its contiguous dim)? */
	int abuf, bbuf;               /* A's stage, and B's: a group's side by side */
} Tile;

/*
 * A K-split rank's test for its subtiles of the epilogue loop ELOOP
 * (Kernel.split_scatter), or a stream-K part's (Kernel.sk_scatter: every
 * subtile of a whole tile), appended to it.
 */
static Stmt *
own_subtile(Comp *c, const Tile *t, Stmt *eloop, const char *comment)
{
	Expr *e = ex_var(c, eloop->var);
	Stmt *s = st_if(c, t->k->sk_scatter ? ex_bin(c, EX_EQ, ex_bin(c, EX_MOD, e, t->sknp), t->ski)
	                                    : ex_bin(c, EX_EQ, ex_bin(c, EX_MOD, e, ex_int(c, t->k->splits)),
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
 * writer's copy.  A reduce-scatter (Kernel.split_scatter) instead: every
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
	int acc = g->acc[0], wgs = CONSUMER_THREADS / 128, regs = k->acc[acc].cols / 2 * k->row_blocks;
	Expr *nth = ex_var(c, t->loop->var);

	if (k->pingpong)
		nth = ex_bin(c, EX_DIV, nth, ex_int(c, 2));
	s->buf = kernel_add_buf(c, k, arena_printf(c->arena, "part_%s", t->f->tensor[k->acc[acc].tensor].name),
	                        BUF_PARTIAL, DT_F32, wgs, 128 * regs);
	k->buf[s->buf].tensor = k->acc[acc].tensor;
	s->bar = kernel_add_bar(c, k, "split_full", wgs, 128 * (k->splits - 1));
	kernel_add_bar(c, k, "split_free", wgs, 128 * (k->split_scatter ? k->splits - 1 : 1));
	VEC_PUSH(c->arena, s->reads, s->nreads, s->capreads)->acc = acc;
	s->a = ex_bin(c, EX_AND, nth, ex_int(c, 1));
	s->b = t->kparts;
	s->comment = k->split_scatter ? "the cluster's partial sums of the tile, each rank's subtiles into it"
	                              : "the cluster's partial sums of the tile, into rank 0";
	return s;
}

/*
 * Stream-K for the last wave (schedule: stream_k).  A persistent GEMM of
 * T tiles on G CTAs runs ceil(T / G) waves; when T % G tiles are left for
 * the last, the other CTAs idle through it: at 8192^3, 2048 tiles of 128 x
 * 256 on 132 SMs are 15.5 waves, and ncu saw the tensor pipe busy 90.9% of
 * the cycles against 94.0% at 8448 x 8192 x 8192, 16 whole waves, which
 * took fewer cycles for 3% more work (docs/perf.md).  Here those tiles'
 * k-steps, in tile order, are cut into runs of sk_len over sk_ctas CTAs:
 * CTA b takes [b sk_len, (b + 1) sk_len) after its whole tiles.  A run is
 * shorter than a tile, so it crosses at most one tile boundary and has one
 * or two parts (tile loop iterations); a part that starts inside its tile
 * leaves its sums to the tile's owner, the CTA whose part starts the tile
 * (stream_k_meet).  A helper's part is the first of its run and the
 * owner's the last of its, so the sums are in place about when the owner
 * looks.  Runs are at least 1 / Kernel.sk_parts of a tile (SK_PARTS when
 * asked, more on few tiles: long_k_stream) and SK_MIN_STEPS long: few
 * CTAs share a tile when few tiles are left.  Only when the last wave
 * holds at most SK_LEFT_NUM / SK_LEFT_DEN of the CTAs (with fewer tiles
 * than CTAs the runtime still launches every CTA, so that all the tiles
 * are that wave and split; persistent_grid): the runs start at
 * k-steps all different, so the CTAs at work in the split wave share no
 * operand slices in L2 as a wave of whole tiles does (L2 moved 360 MB more
 * at 4096^3, 116 tiles of 132 left, and took 3.7% more cycles; 2% fewer
 * at 8192^3, 68 left; docs/perf.md).  The plan is lets of gridDim.x: with
 * no partial wave, or none split, or a launch without a workspace (sk_on
 * 0: launch.c's fallback for a default stream-K kernel), sk_ctas is 0 and
 * every CTA runs whole tiles as before.  The stage counter runs on
 * through parts of any length (kbase, the k loop's lin).  The default
 * rules' kernels (Kernel.sk_scatter) cut whole fractions of each tile
 * instead, whose parts share its epilogue (fraction_plan).
 */
/* A let of E called NAME at index AT of BLOCK, with COMMENT; its variable. */
static Expr *
let_at(Comp *c, Kernel *k, Stmt *block, int at, const char *name, Expr *e, const char *comment)
{
	Stmt *s = st_new(c, ST_LET);

	s->var = kernel_add_var(c, k, name);
	s->a = e;
	s->comment = comment;
	st_insert(c, block, at, s);
	return ex_var(c, s->var);
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
 * Stream-K in fractions of a tile (Kernel.sk_scatter: long_k_stream's
 * rules): the last wave's tiles each cut into sk_np parts of about kt /
 * sk_np k-steps, part j of tile T on CTA T sk_np + j after the whole
 * tiles, so a tile's parts are consecutive CTAs and every run lies in one
 * tile.  sk_np is sk_parts, or fewer where the grid or the k-steps are
 * fewer (at the spec's sizes the rule's; at others whatever fits, at least
 * SK_MIN_STEPS k-steps a part), and none are split under stream_k_plan's
 * conditions.  The parts then share the tile's epilogue (stream_k_meet):
 * each stores the subtiles it owns, so no CTA adds every other part's
 * sums (128 x 1280 x 8192 in quarters of 128 x 64 tiles on an H200:
 * 13.2 us, 9.9 with the owner's adds taken out; docs/perf.md).  In
 * clusters (long_k_stream's pairs of tile rows or columns) the unit is a
 * cluster, as lower_tile_loop's is: cluster C takes part j of cluster tile
 * T, and each of its CTAs the CTA tile at its rank, so the two run the
 * same k-steps (the multicasts of the shared operand's slices need both)
 * and part j of a CTA tile is on its rank's CTA of the j-th cluster after
 * the first (stream_k_scatter).
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
	            ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, ex_bin(c, EX_MIN, ex_int(c, k->sk_parts),
	                                                       ex_bin(c, EX_DIV, G, ex_bin(c, EX_MAX, left, ex_int(c, 1)))),
	                                     ex_bin(c, EX_DIV, kt, ex_int(c, SK_MIN_STEPS))),
	                   ex_int(c, 1)),
	            "the parts of each, as many as the CTAs and k-steps allow");
	mydp = wave_lets(c, k, left, ex_bin(c, EX_MUL, ex_bin(c, EX_MUL, left, np), ex_bin(c, EX_LT, ex_int(c, 1), np)),
	                 on, "the CTAs that run them, a tile's parts side by side; 0: none split, all whole", &ctas, &dp);
	mine->a = ex_bin(c, EX_ADD, mydp, ex_bin(c, EX_LT, b, ctas));
	mine->comment = "whole tiles, then this CTA's part of a tile";
	st_append(c, body, mine);

	/* in the tile loop, before the tile: iteration my_dp is the part */
	i = ex_var(c, loop->var);
	sk = let_at(c, k, loop, at++, "sk", ex_bin(c, EX_GE, i, mydp), "a part of a tile, not a whole one");
	t->ski = let_at(c, k, loop, at++, "sk_i", ex_bin(c, EX_MUL, sk, ex_bin(c, EX_MOD, b, np)),
	                "the part's index among its tile's (0 for a whole tile)");
	t->sknp = let_at(c, k, loop, at++, "sk_n", ex_bin(c, EX_ADD, ex_int(c, 1), ex_bin(c, EX_MUL, sk,
	                                                                               ex_bin(c, EX_SUB, np, ex_int(c, 1)))),
	                 "and their number (1)");
	tile->a = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, ex_int(c, 1), sk), tile->a),
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

static int
stream_k_plan(Comp *c, Kernel *k, Tile *t)
{
	Expr *G = ex_leaf(c, EX_NCTA), *b = ex_leaf(c, EX_CTA), *kt = t->ktiles, *tiles = ex_var(c, k->ntile_var);
	Expr *left, *steps, *runs, *len, *ctas, *dp, *mydp, *lo, *hi, *i, *sk, *j, *at, *part;
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
		if (body->body[n]->kind == ST_LET && body->body[n]->var == k->niter_var)
			mine = body->body[n];
	for (n = 0; n < loop->nbody; n++)
		if (loop->body[n]->kind == ST_LET && strcmp(k->var[loop->body[n]->var].name, "tile") == 0)
			tile = loop->body[at_tile = n];
	if (!mine || !tile)
		return diag_internal(c, "lower_matmul", "stream-K: the tile loop has no my_tiles or tile");
	for (n = 0; body->body[n] != mine; n++)
		;
	memmove(&body->body[n], &body->body[n + 1], (size_t)(body->nbody - n - 1) * sizeof *body->body);
	body->nbody--;
	if (k->sk_scatter)
		return fraction_plan(c, k, t, on, mine, tile, at_tile);

	left = let_at(c, k, body, body->nbody, "sk_tiles", ex_bin(c, EX_MOD, tiles, G), "stream-K: the last wave's tiles");
	steps = ex_bin(c, EX_MUL, left, kt);
	/* runs of at least 1 / sk_parts of a tile and SK_MIN_STEPS */
	runs = ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, G, ex_bin(c, EX_DIV, steps,
	                                                     ex_bin(c, EX_MAX, ex_bin(c, EX_DIV, kt, ex_int(c, k->sk_parts)),
	                                                            ex_int(c, SK_MIN_STEPS)))),
	              ex_int(c, 1));
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
	mine->a = ex_bin(c, EX_ADD, mydp, ex_bin(c, EX_MUL, ex_bin(c, EX_LT, b, ctas), part));
	mine->comment = "whole tiles, then the parts of this CTA's run";
	st_append(c, body, mine);

	/* in the tile loop, before the tile (which row0 and col0 use): iteration my_dp + j is part j of the run */
	i = ex_var(c, loop->var);
	sk = let_at(c, k, loop, at_tile++, "sk", ex_bin(c, EX_GE, i, mydp), "a part of a run, not a whole tile");
	j = ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, i, mydp), sk);
	at = let_at(c, k, loop, at_tile++, "sk_at",
	            ex_bin(c, EX_ADD, lo, ex_bin(c, EX_MUL, j, ex_bin(c, EX_SUB, kt, ex_bin(c, EX_MOD, lo, kt)))),
	            "the part's first k-step among the last wave's");
	tile->a = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_bin(c, EX_SUB, ex_int(c, 1), sk), tile->a),
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
static int
choose_stream_k(Comp *c, const Fusion *f, const Kernel *k, int ng)
{
	const Schedule *h = &f->sched;
	const char *why = NULL;

	if (!k->sk_parts)
		return 0;
	if (!k->persistent)
		why = "with one CTA a tile (persistent: false)";
	else if (ng > 1)
		why = "with independent matmuls in one kernel";
	else if (k->swap_ab)
		why = "on a swapped matmul (swap_ab)";
	else if (k->pingpong)
		why = "with ping-pong consumers";
	else if (k->cluster[0] * k->cluster[1] > 1 && !k->sk_scatter)   /* fraction_plan's parts are clusters' */
		why = "in clusters that share an operand";
	else if (k->splits > 1)
		why = "with split_k";
	else if (h->signal)
		why = "with 'signal: per_tile'";
	else if (k->waits)
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
static int64_t
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
static int64_t
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
static int64_t
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
static void
long_k_stream(const Fusion *f, Kernel *k, Tile *t, const Group *g, int ng, const Tensor *a, const Tensor *d,
              bool along_rows)
{
	const Schedule *h = &f->sched;
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]), parts, run;
	int64_t steps = (dim_value(f, a->dim[a->rank - (t->akm ? 1 : 2)]) + BK - 1) / BK;
	int bn, step = f->op[g->mm[0]].transpose_b ? EPI_COLS : CHUNK;

	if (h->sk_pos.line || h->ntile || h->consumers || h->cluster_pos.line || h->split_pos.line || h->swap_pos.line ||
	    h->signal || h->consumer_pos.line || h->persistent == 1 || h->stages || fusion_waits(f) || ng != 1 ||
	    g->n != 1 || k->batched || rows <= 0 || cols <= 0 || steps <= 0 || !rows_aligned(f, g->mm[0]) ||
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
	if (along_rows && steps <= SK_ALONG_ROWS)
		return;
	/* N whole epilogue subtiles of a K-major B, whole 64-wide chunks of an N-major one (choose_tile) */
	if ((parts = quarter_parts(rows, cols, steps, &bn))) {
		/* runs of SK_CLUSTER_RUN k-steps of 128 x 128 (half that in more than quarters): clusters of two
		   tile rows that share B; of SK_CLUSTER_RUN, else of two tile columns that share A */
		run = bn == BN / 2 ? steps / parts : 0;
		if ((rows + BM - 1) / BM % 2 == 0 && (run >= SK_CLUSTER_RUN || (run >= SK_CLUSTER_RUN / 2 && parts > SK_PARTS)))
			k->cluster[0] = 2;
		else if (run >= SK_CLUSTER_RUN && (cols + bn - 1) / bn % 2 == 0)
			k->cluster[1] = 2;
	} else if ((parts = half_parts(rows, cols, steps, step, &bn)))
		;
	else if ((parts = narrow_parts(rows, cols, steps, step, &bn)))
		k->raster_rows = rows > cols;   /* consecutive parts' tiles share A, the larger operand */
	else
		return;
	if (!tile_fits(f, d, false, 1, BM, bn, 2)) {   /* the epilogue's staging first (fit_tile) */
		k->cluster[0] = k->cluster[1] = 1;
		k->raster_rows = false;
		return;
	}
	t->bm = BM;
	t->bn = bn;
	k->sk_parts = (int)parts;
	k->sk_scatter = true;   /* fractions of a tile that share its epilogue (fraction_plan) */
}

/*
 * Stream-K's meeting of a tile's parts, after a part's k loop: a part that
 * starts inside its tile (k0 > 0) leaves its sums to the tile's owner
 * through its slot of the workspace (ST_SK_STORE); the owner, whose part
 * starts the tile (and every whole tile), adds those of the CTAs after it
 * (ST_SK_REDUCE: none for a whole tile) and alone runs EPILOGUE.  In
 * fractions of a tile (Kernel.sk_scatter) every part of a split tile
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
	put->param = add->param = p;
	VEC_PUSH(c->arena, put->reads, put->nreads, put->capreads)->acc = g->acc[0];
	VEC_PUSH(c->arena, add->reads, add->nreads, add->capreads)->acc = g->acc[0];
	if (k->sk_scatter) {
		/* every part of a split tile leaves the others their subtiles; a part that owns some adds theirs */
		put->cond = ex_bin(c, EX_LT, ex_int(c, 1), t->sknp);
		put->comment = "a part of a tile: its sums of the subtiles the others own, to the CTA's slot";
		add->cond = ex_bin(c, EX_MUL, put->cond, ex_bin(c, EX_LT, t->ski, ex_int(c, t->bn / k->epi_cols)));
		add->comment = "a part that owns subtiles: the other parts' sums of them, in part order";
		put->a = add->a = t->ski;
		put->b = add->b = t->sknp;
		st_append(c, t->loop, put);
		st_append(c, t->loop, add);
		st_append(c, t->loop, epilogue);
		return;
	}
	put->cond = ex_bin(c, EX_LT, ex_int(c, 0), t->k0);
	put->comment = "a part from inside the tile: its sums to the CTA's slot, for the tile's owner";
	add->cond = own->cond;
	add->b = t->help;
	add->comment = "the tile's owner: the sums of the CTAs that took the rest of its k-steps, in CTA order";
	own->comment = "the owner holds the tile's sum: it alone computes and stores the tile";
	st_append(c, t->loop, put);
	st_append(c, t->loop, add);
	st_append(c, own, epilogue);
	st_append(c, t->loop, own);
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
	int m, j, ecols = k->epi_cols;

	kloop = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), t->kn ? t->kn : t->ktiles, LOOP_SERIAL);
	kloop->comment = n > 1 ? arena_printf(c->arena, "the k-steps of this tile of %s", f->tensor[op->out].name)
	                 : t->kn ? "this part's k-steps of the tile" : "the k-steps of this tile";
	st_append(c, t->loop, kloop);
	kk = ex_var(c, kloop->var);
	if (t->kbase)   /* parts of tiles differ in length: the stage counter is the plan's, not i x ktiles + kk */
		kloop->lin = ex_bin(c, EX_ADD, t->kbase, kk);
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

		mma->mma = arena_alloc(c->arena, sizeof *mma->mma);
		*mma->mma = k->swap_ab ? (MmaShape){t->bn, t->bm, t->bk, t->bkm, t->akm}
		                       : (MmaShape){t->bm, g->n * t->bn, t->bk, t->akm, t->bkm};
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = k->swap_ab ? t->bbuf : t->abuf;
		mma->reads[0].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->reads, mma->nreads, mma->capreads)->buf = k->swap_ab ? t->abuf : t->bbuf;
		mma->reads[1].slot = ex_int(c, 0);
		VEC_PUSH(c->arena, mma->writes, mma->nwrites, mma->capwrites)->acc = g->acc[0];
		mma->cond = ex_bin(c, EX_EQ, kk, ex_int(c, 0));
		mma->pos = op->pos;
		st_append(c, kloop, mma);
	}

	/*
	 * The epilogue: subtiles of BM x EPI_COLS, each computed into a staging
	 * copy and stored by TMA; swapped, one subtile of the whole tile, each
	 * thread's values lying down its columns.
	 */
	eloop = st_loop(c, kernel_add_var(c, k, "e"), ex_int(c, 0), ex_int(c, t->bn / ecols), LOOP_SERIAL);
	eloop->comment = k->swap_ab ? "the epilogue, the whole tile at once" : "the epilogue, a subtile at a time";
	if (k->split_scatter) {
		/*
		 * Each rank sums its share of the subtiles (a reduce-scatter in
		 * the cluster), computes and stores them: the compute and the
		 * store each under the rank's test, so that the barrier between
		 * them (sync.c) lies between the two, taken by every rank.
		 */
		st_append(c, t->loop, split_reduce(c, t, g));
		st_append(c, t->loop, eloop);
	} else if (k->splits > 1) {
		/* the cluster's partial sums into rank 0, which alone runs the epilogue */
		Stmt *lead = st_if(c, ex_bin(c, EX_EQ, lower_split_rank(c, k), ex_int(c, 0)));

		st_append(c, t->loop, split_reduce(c, t, g));
		lead->comment = "rank 0 holds the tile's sum: it alone computes and stores the tile";
		st_append(c, lead, eloop);
		st_append(c, t->loop, lead);
	} else if (k->sk_slot) {
		stream_k_meet(c, t, g, eloop);
	} else {
		st_append(c, t->loop, eloop);
	}
	ecol = ex_bin(c, EX_ADD, t->col0, ex_bin(c, EX_MUL, ex_var(c, eloop->var), ex_int(c, ecols)));
	compute = st_new(c, ST_COMPUTE);
	compute->a = t->row0;
	compute->b = ecol;
	compute->pass = ex_var(c, eloop->var);   /* which subtile of the accumulator */
	compute->z = t->bt;
	compute->comment = n > 1 ? arena_printf(c->arena, "the epilogue of %s", f->tensor[op->out].name)
	                         : arena_printf(c->arena, "the epilogue of %s", f->name);
	for (m = 0; m < g->n; m++)
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->acc = g->acc[m];
	if (k->sk_scatter)
		compute->step = t->sknp;
	st_append(c, k->split_scatter ? own_subtile(c, t, eloop, "this rank's subtile: it holds the cluster's sum of it")
	             : k->sk_scatter ? own_subtile(c, t, eloop, "this part's subtile: it holds the tile's sum of it")
	             : eloop,
	          compute);
	store = st_if(c, ex_leaf(c, EX_ELECT));
	store->comment = "one thread stores the subtile";
	for (j = 1; j < k->nparam; j++) {
		int sb, row_bytes;

		if (k->param[j].kind != PK_TMAP || k->param[j].arg < f->ninput || out_group[k->param[j].arg - f->ninput] != gi)
			continue;
		/* two copies, the next subtile's written while the last one's store reads; a swapped tile's one */
		sb = lower_stage_output(c, k, j, k->pingpong ? 2 * t->bm : t->bm, ecols, k->swap_ab ? 1 : 2,
		                        ex_var(c, eloop->var), t->row0, ecol, compute, store);
		/*
		 * Swizzled as TMA reads it (the map's swizzle follows its inner box:
		 * 64 bytes of 2-byte elements, 128 of f32; half that in subtiles of
		 * EPI_NARROW): the 8 rows a warp writes at once land in 8 different
		 * 16-byte chunks of the banks, where row-major they shared 2 (4-way
		 * bank conflicts; 8-way for f32; 2-way in rows of 32 bytes).  A
		 * swapped tile's rows of 64 f32 are past the widest swizzle (128
		 * bytes): row-major.
		 */
		row_bytes = ecols * dtype_info[k->buf[sb].dtype].bytes;
		if (row_bytes >= 32 && row_bytes <= 128)
			k->buf[sb].swizzle = row_bytes;
		/*
		 * With two copies a subtile's writers wait for the store of the
		 * one before to finish reading it; with four, for the store of
		 * three before (ncu cycles, 4096^3: 292.9K -> 286.2K, 16384 x 1024
		 * x 8192 563.1K -> 555.9K, 8192^3 2.218M -> 2.199M).  Where one
		 * cooperative tile's epilogue runs alone: not ping-pong's halves,
		 * a swapped tile's one copy, a split's or stream-K's sums, nor
		 * independent matmuls' epilogues one after another (the first's
		 * read-wait took a barrier of its own).
		 */
		if (!k->pingpong && !k->swap_ab && k->splits <= 1 && !k->split_scatter && !k->sk_slot && n == 1)
			k->buf[sb].ring = t->bn / ecols < STAGING_RING ? t->bn / ecols : STAGING_RING;
	}
	for (j = 0; j < store->nbody; j++) {
		Stmt *st = store->body[j];

		if (st->kind != ST_TMA_STORE)
			continue;
		st->z = t->bt;   /* a batched output's map is 3-D */
		if (k->pingpong)   /* a staging copy holds both warpgroups' subtiles; each stores its own */
			st->off = ex_bin(c, EX_MUL, ex_leaf(c, EX_WG), ex_int(c, t->bm * ecols));
	}
	st_append(c, k->split_scatter ? own_subtile(c, t, eloop, "this rank's subtile: one thread stores it")
	             : k->sk_scatter ? own_subtile(c, t, eloop, "this part's subtile: one thread stores it") : eloop,
	          store);
	return kloop;
}

/*
 * The writer's tile of epilogue input (or output) X that waits (wait:
 * {per_tile, tile: [R, C]}), into Kernel.wait_tile: in each dim one of the
 * kernel's tile and the writer's must divide the other, so that each
 * kernel tile covers whole writer tiles, or lies inside one, or (a finer
 * writer along one dim, a coarser along the other) both; and the kernel's
 * epilogue inputs and outputs that wait must share one writer tile (a
 * layout of words for them all): FIRST, X is the first of them.
 */
static int
wait_tile(Comp *c, Kernel *k, const Tile *t, const Tensor *x, bool first)
{
	const int *w = x->wait_tile;

	if (w[0] && ((t->bm % w[0] && w[0] % t->bm) || (t->bn % w[1] && w[1] % t->bn)))
		return diag_error(c, x->wait_tile_pos, "the writer's tile %d x %d of '%s' and the kernel's tile %d x %d "
		                  "do not nest: in each dim one extent must divide the other, so that each kernel tile "
		                  "covers whole writer tiles or lies inside one (give the writer a tile whose rows divide "
		                  "or are a multiple of %d and whose columns divide or are a multiple of %d)", w[0], w[1],
		                  x->name, t->bm, t->bn, t->bm, t->bn);
	if (!first && (k->wait_tile[0] != w[0] || k->wait_tile[1] != w[1]))
		return unbuilt(c, x->wait_tile_pos.line ? x->wait_tile_pos : x->wait_pos, "epilogue inputs (or outputs) "
		               "that wait with different writer tiles in one kernel ('%s' and one before it) are not "
		               "implemented yet", x->name);
	k->wait_tile[0] = w[0];
	k->wait_tile[1] = w[1];
	return 0;
}

/*
 * An epilogue input whose writer's tile R x C (Kernel.wait_tile) is not
 * the kernel's: the words follow the writer's layout, [batch, row tiles,
 * column tiles] of R x C, and the tile waits (WAIT, cloned into ONE) for
 * each writer tile it overlaps that lies inside the output, the first
 * always: BM / R x BN / C of them where the writer's are finer, one along
 * a dim where the writer's is as coarse or coarser (the one holding the
 * tile: row0 / R).  Several are waited for in a loop, so the CUDA does not
 * grow with the hint (a 1 x 1 writer tile is 32768 words a tile).  NAME:
 * the input's; its words start at AT.  Returns how many it has (a batch's).
 */
static Expr *
wait_words(Comp *c, Kernel *k, const Tile *t, Stmt *one, const Stmt *wait, const char *name, Expr *at)
{
	int r = k->wait_tile[0], cw = k->wait_tile[1];
	int ni = t->bm > r ? t->bm / r : 1, nj = t->bn > cw ? t->bn / cw : 1;
	Expr *rows = ex_var(c, k->rows_var), *cols = ex_var(c, k->cols_var);
	Expr *rows_w = ex_bin(c, EX_CEILDIV, rows, ex_int(c, r)), *cols_w = ex_bin(c, EX_CEILDIV, cols, ex_int(c, cw));
	Expr *words = ex_bin(c, EX_MUL, rows_w, cols_w), *i = ex_int(c, 0), *j = ex_int(c, 0);
	Expr *row, *col, *word, *in = NULL;
	Stmt *w = st_clone(c, wait, 0, NULL), *loop = NULL;

	if (ni * nj > 1) {
		int v = kernel_add_var(c, k, "wt");

		loop = st_loop(c, v, ex_int(c, 0), ex_int(c, ni * nj), LOOP_SERIAL);
		loop->comment = arena_printf(c->arena, "the writer's %d x %d tiles this tile of '%s' overlaps, %d x %d",
		                             r, cw, name, ni, nj);
		if (ni > 1)
			i = nj > 1 ? ex_bin(c, EX_DIV, ex_var(c, v), ex_int(c, nj)) : ex_var(c, v);
		if (nj > 1)
			j = ni > 1 ? ex_bin(c, EX_MOD, ex_var(c, v), ex_int(c, nj)) : ex_var(c, v);
		if (ni > 1)
			in = ex_bin(c, EX_LT, ex_bin(c, EX_ADD, t->row0, ex_bin(c, EX_MUL, i, ex_int(c, r))), rows);
		if (nj > 1) {
			Expr *x = ex_bin(c, EX_LT, ex_bin(c, EX_ADD, t->col0, ex_bin(c, EX_MUL, j, ex_int(c, cw))), cols);

			in = in ? ex_bin(c, EX_AND, in, x) : x;
		}
	}
	row = ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, t->row0, ex_int(c, r)), i);
	col = ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, t->col0, ex_int(c, cw)), j);
	word = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, row, cols_w), col);
	if (t->bt)
		word = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, t->bt, words), word);
	if (!(at->kind == EX_INT && at->ival == 0))
		word = ex_bin(c, EX_ADD, at, word);
	w->a = word;
	w->cond = in;
	w->comment = arena_printf(c->arena, "the writer's %d x %d tile%s of this tile of '%s' %s been written", r, cw,
	                          loop ? "s" : "", name, loop ? "have" : "has");
	if (loop) {
		st_append(c, loop, w);
		w = loop;
	}
	st_append(c, one, w);
	return words;
}

/*
 * Inputs with wait: per_tile (Kernel.waits): their tiles arrive while the
 * kernel runs, each published by the writer's flag word (a peer GPU's
 * epilogue, over NVLink, or a kernel on another stream).  Their words in
 * the caller's wait_flags follow one another in spec order: an epilogue
 * input's one an output tile (the signal's layout), an operand's one a row
 * tile of A or a column tile of B (times the batch).
 *
 * An epilogue input: before the tile's first epilogue, after its mainloop
 * (which runs while the tile is still on its way), one thread of those that
 * compute the tile waits for the word; a barrier then gives the other
 * threads what the acquire made visible.  An operand (the load side of
 * all-gather + GEMM): the thread that issues its loads waits, at the
 * tile's first k-step, before the loads, and fences the async proxy, so
 * its TMA reads what the acquire saw.  An output that waits (an
 * accumulating output whose tile another kernel writes first: the
 * reduce-scatter's owner) is waited for as an epilogue input is, after
 * the inputs' words, and the waiting thread fences the async proxy before
 * the barrier, so the epilogue's TMA stores (or adds) come after what the
 * acquire saw.
 */
static void
wait_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Expr *batch, Expr *batch_tiles)
{
	Stmt *one = st_if(c, ex_leaf(c, EX_ELECT)), *sync = st_new(c, ST_SYNC);
	Expr *rows_t, *cols_t, *at = ex_int(c, 0), *tile;
	int p, i, j, e, n;

	p = kernel_add_param(c, k, PK_WAIT, "wait_flags");
	lower_epoch(c, k);
	rows_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows));
	cols_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var), ex_int(c, k->tile_cols));
	tile = lower_flag_index(c, k, t->row0, t->col0, t->bt, batch_tiles);
	one->comment = "one thread waits for the tiles of the inputs that arrive while the kernel runs";
	for (i = 0; i < f->ninput + f->nout; i++) {
		const Tensor *x = &f->tensor[fusion_arg_tensor(f, i)];
		Expr *words, *word;
		Stmt *s;
		int q;

		if (!x->wait_pos.line)
			continue;
		for (q = 1; q < k->nparam && !(k->param[q].arg == i && k->param[q].tensor == fusion_arg_tensor(f, i)); q++)
			;
		s = st_new(c, ST_FLAG_WAIT);
		s->param = p;
		s->pos = x->wait_pos;
		if (i >= f->ninput) {   /* an output: its stores (the async proxy) are ordered after the acquire */
			s->n = 1;
			one->comment = "one thread waits for the tiles of the inputs that arrive, and of the outputs that may "
			               "be written, while the kernel runs";
		}
		if (k->param[q].kind == PK_TMAP && i < f->ninput) {   /* an operand: A by row tiles, B by column tiles */
			bool is_a = k->buf[t->abuf].param == q;
			Expr *idx = ex_bin(c, EX_DIV, is_a ? t->row0 : t->col0, ex_int(c, is_a ? k->tile_rows : k->tile_cols));

			if (t->bt)
				idx = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, t->bt, is_a ? rows_t : cols_t), idx);
			words = is_a ? rows_t : cols_t;
			word = idx;
			s->flag = true;
			s->comment = arena_printf(c->arena, "the %s of '%s' this tile reads have been written",
			                          is_a ? "rows" : "columns", x->name);
			/* before the loads of every k loop that loads it, at the tile's first k-step */
			for (j = 0; j < t->loop->nbody; j++) {
				Stmt *kl = t->loop->body[j], *w;

				if (kl->kind != ST_LOOP || !kernel_loads_from(k, kl, 0, q))
					continue;
				for (e = 0; e < kl->nbody && !(kl->body[e]->kind == ST_IF && kernel_loads_from(k, kl->body[e], 0, q)); e++)
					;
				w = st_clone(c, s, 0, NULL);
				w->a = at->kind == EX_INT && at->ival == 0 ? word : ex_bin(c, EX_ADD, at, word);
				w->cond = ex_bin(c, EX_EQ, ex_var(c, kl->var), ex_int(c, 0));
				for (n = 0; n < kl->body[e]->nbody && kl->body[e]->body[n]->kind == ST_FLAG_WAIT; n++)
					;   /* after the waits of the inputs before it */
				st_insert(c, kl->body[e], n, w);
			}
		} else if (k->wait_tile[0]) {
			words = wait_words(c, k, t, one, s, x->name, at);
		} else {
			words = ex_bin(c, EX_MUL, rows_t, cols_t);
			s->a = at->kind == EX_INT && at->ival == 0 ? tile : ex_bin(c, EX_ADD, at, tile);
			s->comment = arena_printf(c->arena, i < f->ninput ? "this tile of '%s' has been written" :
			                          "this tile of '%s' may be written", x->name);
			st_append(c, one, s);
		}
		if (batch)
			words = ex_bin(c, EX_MUL, words, batch);
		at = ex_bin(c, EX_ADD, at, words);
	}
	if (!one->nbody)
		return;
	sync->comment = "what the wait made visible, to every thread that computes the tile";
	/* before the first epilogue loop of the tile (after its k loop) */
	for (j = 0; j < t->loop->nbody; j++) {
		const Stmt *x = t->loop->body[j];

		if (x->kind == ST_LOOP && strcmp(k->var[x->var].name, "e") == 0)
			break;
	}
	st_insert(c, t->loop, j, sync);
	st_insert(c, t->loop, j, one);
}

/*
 * The epilogue's full inputs [M, N] (a residual), which the consumers read
 * through their pointers: the producer pulls each one's box of the tile
 * into L2 with one TMA prefetch, issued with the tile's last k-step's
 * loads, a few k-steps before the consumers' epilogue (the producer runs
 * ahead by the stages).  The epilogue's loads then find the tile in L2,
 * not in DRAM, whose round trip a subtile the consumers waited out with
 * the tensor pipe idle: a GEMM + residual 1.4-3.1% faster; two k-steps
 * earlier measured slower (docs/perf.md).  The map (KParam.prefetch) is
 * the tensor's domain view, one box the output tile.  An input that waits
 * per tile (its tiles arrive while the kernel runs) too on cooperative
 * consumers, whose epilogue holds up the k loop: the prefetch may find the
 * tile not yet written, but L2 is where a writer's stores land (another
 * kernel's, or a peer GPU's over NVLink), so what it brings is never
 * read stale, and the epilogue reads through L2 only after the flag (the
 * reduce-scatter's owner on one H200, flags preset: 7-9% faster); not on
 * ping-pong ones, whose epilogue runs beside the other's k loop (-8% to
 * +1% there; docs/perf.md).  Not where the k loop is not the tile's whole
 * (a K-split, stream-K) or is one of several (independent matmuls), nor
 * swapped (few rows).
 */
static void
prefetch_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop)
{
	Stmt *issue = NULL;
	int q, i, n = k->nparam;

	if (k->swap_ab || k->splits > 1 || k->sk_slot)
		return;
	for (i = 0; i < kloop->nbody && !issue; i++)
		if (kloop->body[i]->kind == ST_IF && kir_has_load(kloop->body[i]))
			issue = kloop->body[i];
	for (q = 1; q < n && issue; q++) {
		const KParam x = k->param[q];   /* a copy: adding a param may move the table */
		const Tensor *in = &f->tensor[x.tensor];
		Stmt *s;
		int p;

		if (x.kind != PK_PTR || x.view != VIEW_FULL || x.arg < 0 || x.arg >= f->ninput ||
		    (in->wait_pos.line && k->pingpong))
			continue;
		p = kernel_add_map(c, k, q, t->bm, t->bn);
		k->param[p].prefetch = true;
		s = st_new(c, ST_TMA_PREFETCH);
		s->param = p;
		s->a = t->row0;
		s->b = t->col0;
		s->z = k->batched && in->rank > 2 ? t->bt : NULL;
		s->cond = ex_bin(c, EX_EQ, ex_var(c, kloop->var), ex_bin(c, EX_SUB, t->ktiles, ex_int(c, 1)));
		s->pos = in->pos;
		s->comment = arena_printf(c->arena, "the tile's '%s' into L2, where the epilogue's loads find it a few "
		                          "k-steps from now", in->name);
		st_insert(c, issue, 0, s);
	}
}

/* Does an op of F read tensor T? */
static bool
op_reads(const Fusion *f, int t)
{
	int i, j;

	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			if (f->op[i].in[j].tensor == t)
				return true;
	return false;
}

/*
 * The epilogue's row inputs (a bias [N]) through shared memory (BUF_ROW):
 * each consumer thread loads a column of the tile's before its k loop
 * (ST_ROW_FETCH), whose latency the k loop hides, and writes it to the
 * tile's copy after (ST_ROW_PUT); a barrier (sync.c) and the epilogue's
 * subtiles read their columns from there.  Read from global memory in the
 * epilogue instead, ahead of each subtile (emit_matmul.c, staged_inputs),
 * a bias cost the 128 x 256 tile 2-4% over the plain GEMM at 8192^3, 4096^3
 * and 8192 x 14336 x 4096: each subtile's fence.proxy.async waits for the
 * next subtile's loads in flight (ptxas puts a MEMBAR.ALL.CTA before it),
 * and 64-bit bounds tests cost 50 instructions a subtile; staged (by hand,
 * through cp.async), 0-1.2% (docs/perf.md).  Two copies, by the tile loop's count: the barrier
 * before a tile's epilogue comes after every thread's reads of the copy
 * before, so the copy a tile writes was last read two tiles back, behind
 * that barrier.  One cooperative mainloop with whole tiles: not ping-pong
 * (a warpgroup's tiles are every other), swapped (the tile transposed), a
 * K-split or stream-K (the epilogue a part's), several independent
 * matmuls, inputs that wait (the fetch would run ahead of the wait) or a
 * signal's consumer role; those read in the epilogue as before.
 */
static void
stage_rows(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop, int ng)
{
	Stmt *compute = st_first(t->loop, ST_COMPUTE);   /* the epilogue's (one matmul group: one) */
	Expr *slot = ex_bin(c, EX_MOD, ex_var(c, t->loop->var), ex_int(c, 2));
	int j, at;

	if (ng != 1 || k->swap_ab || k->pingpong || k->splits > 1 || k->split_scatter || k->sk_slot || k->waits ||
	    f->sched.consumer_pos.line || !compute || t->bn > k->consumer_threads)
		return;
	for (at = 0; at < t->loop->nbody && t->loop->body[at] != kloop; at++)
		;
	if (at == t->loop->nbody)
		return;
	for (j = 1; j < k->nparam; j++) {
		const KParam *p = &k->param[j];
		Stmt *fetch, *put;
		Access *r;
		int b;

		if (p->kind != PK_PTR || p->view != VIEW_ROW || p->arg < 0 || p->arg >= f->ninput || !op_reads(f, p->tensor))
			continue;
		b = kernel_add_buf(c, k, arena_printf(c->arena, "row_%s", p->name), BUF_ROW, p->dtype, 1, t->bn);
		k->buf[b].param = j;
		k->buf[b].tensor = p->tensor;
		k->buf[b].stages = 2;
		fetch = st_new(c, ST_ROW_FETCH);
		fetch->buf = b;
		fetch->param = j;
		fetch->b = t->col0;
		fetch->pos = f->tensor[p->tensor].pos;
		fetch->comment = "the tile's columns, landing while the k loop runs";
		st_insert(c, t->loop, at++, fetch);
		put = st_new(c, ST_ROW_PUT);
		put->buf = b;
		put->slot = slot;
		put->comment = "for the epilogue's subtiles";
		st_insert(c, t->loop, at + 1, put);
		r = VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads);
		r->buf = b;
		r->slot = slot;
	}
}

/*
 * The epilogue's full inputs [M, N] (a residual) that the output staging
 * copies can carry: each copy's subtile of the input is loaded by TMA
 * before the compute writes the copy, and the compute reads each element
 * it writes from there first (its thread's own elements: no barrier), as
 * CUTLASS's epilogue loads C into the shared memory its D reuses.  Read
 * through the pointer in each subtile instead, a residual cost the 128 x
 * 256 tile 4.5% over the plain GEMM at 8192^3, 8.5% at 4096^3 and 12% at
 * 8192 x 14336 x 4096, through the staging copies 1.1%, 3.4% and 4.2%
 * (hand-edited, docs/perf.md).  Marked here (KBuf.preload, the input's
 * PK_PTR param) on the first copy of the input's element size not yet
 * taken; circular buffering keeps it where the copies are three or more
 * and divide the subtiles (keep_preloads), sync places the loads and their
 * waits (place_preloads).  Only on one
 * cooperative mainloop of whole tiles whose copies are a ring (as
 * stage_rows: not ping-pong, swapped, K-split, stream-K, independent
 * matmuls, inputs that wait or a signal's consumer role), not batched
 * (the maps are 2-D).
 */
static void
preload_inputs(const Fusion *f, Kernel *k, const Tile *t, int ng)
{
	Stmt *compute = st_first(t->loop, ST_COMPUTE);
	int j, w;

	if (ng != 1 || k->swap_ab || k->pingpong || k->splits > 1 || k->split_scatter || k->sk_slot || k->waits ||
	    k->batched || f->sched.consumer_pos.line || !compute)
		return;
	for (j = 1; j < k->nparam; j++) {
		const KParam *p = &k->param[j];

		if (p->kind != PK_PTR || p->view != VIEW_FULL || p->arg < 0 || p->arg >= f->ninput ||
		    f->tensor[p->tensor].rank != 2 || !op_reads(f, p->tensor))
			continue;
		for (w = 0; w < compute->nwrites; w++) {
			KBuf *b = &k->buf[compute->writes[w].buf];

			if (b->kind == BUF_STAGING && b->ring && !b->preload &&
			    dtype_info[b->dtype].bytes == dtype_info[p->dtype].bytes) {
				b->preload = j;
				break;
			}
		}
	}
}

/*
 * schedule: cluster [x, y]: CTAs along M and N that launch as one cluster
 * and take one cluster tile at a time.  [2, 1] pairs two tiles of the same
 * columns, whose B slices each CTA loads half of and multicasts to both
 * (L2 delivers B once for two tiles, as fast.cu's and quack's kernels do);
 * [1, 2] pairs two of the same rows and shares A; [2, 4] shares B among
 * the two tiles of each column and A among the four of each row (cuBLAS's
 * design for GEMMs of few rows and long K).  At most 8 CTAs, the portable
 * cluster size.  Each CTA loads its part of a shared operand's rows: of a
 * K-major operand a multiple of 8 (the 128-byte swizzle's atom), of an
 * MN-major one whole 64-wide chunks.  0 or -1.
 */
static int
choose_cluster(Comp *c, const Fusion *f, Kernel *k, const Tile *t, const Op *op)
{
	const Schedule *h = &f->sched;
	int x = h->cluster[0], y = h->cluster[1], i;

	/*
	 * Without a hint, one CTA: clusters of two measured 1-3% faster on the
	 * large shapes while the producer recomputed the raster at every
	 * k-step, and 2% slower at 8192^3 and 8192 x 14336 x 4096 once it kept
	 * the tile's lets (docs/perf.md, fourteenth session).
	 */
	if (!h->cluster_pos.line)
		return 0;
	if (x * y == 1)
		return 0;
	if (x * y > MAX_CLUSTER)
		return unbuilt(c, h->cluster_pos, "a matmul cluster of %d x %d CTAs is not implemented yet: at most %d "
		               "CTAs (the portable cluster size), such as [2, 1], [1, 4] or [2, 4]", x, y, MAX_CLUSTER);
	if (h->signal || k->waits)
		return unbuilt(c, h->cluster_pos, "'cluster' with %s is not implemented yet: a cluster's second tile "
		               "may lie past the output, with no flag", h->signal ? "'signal: per_tile'" :
		               "an input or output that waits per tile");
	for (i = 0; i < 2; i++) {   /* B, shared by the x CTAs of a tile column; A, by the y of a row */
		int share = i ? y : x, rows = i ? t->bm : t->bn, atom = (i ? t->akm : t->bkm) ? 8 : CHUNK;

		if (share > 1 && (rows % share || rows / share % atom))
			return unbuilt(c, h->cluster_pos, "cluster [%d, %d] shares %s among %d CTAs, each %d of its %d rows, "
			               "not a multiple of %d (matmul '%s' reads it %s-major); use a wider tile or fewer "
			               "CTAs along %s", x, y, i ? "A" : "B", share, rows / share, rows, atom,
			               f->tensor[op->out].name, atom == 8 ? "K" : i ? "M" : "N", i ? "N" : "M");
	}
	k->cluster[0] = x;
	k->cluster[1] = y;
	return 0;
}

/*
 * Without a hint, a GEMM of one ragged row of 128-row tiles, 65 to 112
 * rows (fewer are swapped), whose ROW_TILES to 4 x RESIDENT_4 tiles stream
 * a long K (ROW_STEPS k-steps or more) runs in clusters of four tiles along
 * N that share A, as cuBLAS runs few-row GEMMs (nvjet_..._128x64_64x8_4x2
 * at 128 x 7168 x 8192: four column tiles share A).  Each CTA loads a
 * quarter of A's rows and multicasts them, so the part of A's box that
 * lies past M (32 rows of 128 at M = 96), which TMA fills with zeros at
 * the cost of a read, is one CTA's quarter instead of every CTA's last
 * rows, and L2 serves A's slice once for four tiles.  On an H200, cuBLAS /
 * wsfuse, CUDA-graph replays and (in brackets) with L2 flushed: 96 x 7168 x
 * 8192 0.62 -> 0.90 (0.79 -> 0.93), 72 x 5120 x 8192 0.51 -> 0.87 (0.70 ->
 * 0.89), 112 x 7168 x 8192 0.77 -> 0.92 (0.93 -> 0.93), 100 x 7168 x 4096
 * 0.72 -> 0.93 (0.87 -> 0.91).  With fewer rows past M the replays still
 * gained but the flushed runs lost: 120 x 6144 x 8192 0.92 -> 0.88, 127 x
 * 7168 x 8192 0.97 -> 0.95, a whole row of 128 x 6144 x 8192 0.94 -> 0.89.
 * It lost at 64 tiles (128 x 4096 x 8192 0.91 -> 0.80) and where 32
 * clusters of four do not all fit at once (128 x 8192 x 8192 0.92 -> 0.58;
 * docs/perf.md).  Only the default cooperative tile of a K-major A, one
 * matmul, no hint that bears on the tile or the cluster, nothing that
 * waits or signals.
 */
static void
row_cluster(const Fusion *f, Kernel *k, const Tile *t, const Group *g, int ng, const Tensor *a, const Tensor *d)
{
	const Schedule *h = &f->sched;
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]), tiles;
	int64_t K = dim_value(f, a->dim[a->rank - 1]);

	if (h->cluster_pos.line || h->ntile || h->consumers || h->stages || h->split_pos.line || k->sk_parts ||
	    h->signal || h->consumer_pos.line || k->waits || ng != 1 || g->n != 1 || k->batched || k->swap_ab ||
	    k->pingpong || k->splits > 1 || t->bm != BM || !t->akm || rows <= 0 || rows > BM - ROW_PAST || cols <= 0 ||
	    K <= 0)
		return;
	tiles = (cols + t->bn - 1) / t->bn;
	if (tiles < ROW_TILES || tiles > (int64_t)ROW_CLUSTER * RESIDENT_4 || (K + t->bk - 1) / t->bk < ROW_STEPS)
		return;
	k->cluster[1] = ROW_CLUSTER;
}

/* A consumer thread's accumulator registers: the widest group's tile, over the threads that compute it. */
static int
acc_regs(const Kernel *k, const Tile *t, const Group *g, int ng)
{
	int i, n = 0;

	for (i = 0; i < ng; i++)
		if (g[i].n > n)
			n = g[i].n;
	return n * t->bm * t->bn / (k->pingpong ? 128 : 256);
}

/*
 * The roles' registers (setmaxnreg).  A signal consumer role shares the
 * producer's warpgroup and needs more than copies do.  A producer that
 * multicasts a shared operand's part in a cluster keeps its rank's offsets
 * besides the tile's coordinates, and ptxas spilled it at 40 registers
 * (4-24 bytes: 8192 x 8192 x 8120, SwiGLU and QKV over K = 264 or 2040);
 * at 56 none spilled, where the consumers' 224 hold the accumulators
 * (SHARE_ACC; 192 spilled).  Else 40 and 232, CUTLASS's.
 */
static void
choose_regs(const Fusion *f, Kernel *k, const Tile *t, const Group *g, int ng)
{
	k->producer_regs = PRODUCER_REGS;
	k->consumer_regs = CONSUMER_REGS;
	if (f->sched.consumer_pos.line) {
		k->producer_regs = SIGNAL_PRODUCER_REGS;
		k->consumer_regs = SIGNAL_CONSUMER_REGS;
	} else if (k->cluster[0] * k->cluster[1] > 1 && acc_regs(k, t, g, ng) <= SHARE_ACC) {
		k->producer_regs = SHARE_PRODUCER_REGS;
		k->consumer_regs = SHARE_CONSUMER_REGS;
	}
}

/*
 * Without a cluster hint, an operand whose rows do not start 128-byte
 * aligned at the spec's sizes (bf16 K = 4040: rows of 8080 bytes) runs in a
 * cluster of two that shares it.  Each 128-byte row of such a box spans two
 * lines of L2, and the kernel ran at half the rate of K = 4096 where the
 * boxes were the same (1024 x 1024 x 4040 on an H200: 30.3 us against
 * 16.1; the same rows at a 8192-byte stride ran 15.6); cuBLAS, which lost
 * 5-25% there, runs such shapes in clusters of two.  Sharing the operand
 * with more rows in the tile halves the box rows each SM asks of L2
 * (cluster [2, 1] shares B, [1, 2] A); the other operand, if misaligned
 * too, when the first's half would not be whole 64-wide chunks (sharing an
 * aligned operand would spare no misaligned row).  Only where a hint's
 * cluster would build: one CTA a tile, neither swapped, split, stream-K,
 * batched, signalled nor waiting, nor where the consumers hold more than
 * SHARE_ACC accumulators a thread (SwiGLU's ping-pong tiles), which would
 * leave the producer too few registers (choose_regs).  The choice is made at
 * the spec's sizes, like the tile's; a kernel launched at another K keeps it.
 */
static void
misaligned_cluster(const Fusion *f, Kernel *k, const Tile *t, const Group *g, int ng, const Tensor *a,
                   const Tensor *b)
{
	const Schedule *h = &f->sched;
	int brows = g->n * t->bn, i;
	int64_t ra = row_bytes(f, a), rb = row_bytes(f, b);
	bool ma = ra > 0 && ra % 128 != 0, mb = rb > 0 && rb % 128 != 0;
	bool b_first = mb && (!ma || brows >= t->bm);   /* of the misaligned, the one with more rows */

	if (h->cluster_pos.line || ng != 1 || k->batched || k->swap_ab || k->splits > 1 || k->sk_parts ||
	    h->signal || h->consumer_pos.line || k->waits || kernel_cluster_ctas(k) > 1 ||
	    acc_regs(k, t, g, ng) > SHARE_ACC)
		return;
	for (i = 0; i < 2; i++) {
		bool share_b = i == 0 ? b_first : !b_first;

		if (!(share_b ? mb : ma))
			continue;
		/* each CTA loads half of each matmul's box: of an M- or N-major operand, whole 64-wide chunks */
		if (share_b ? !t->bkm && t->bn / 2 % CHUNK : !t->akm && t->bm / 2 % CHUNK)
			continue;
		k->cluster[0] = share_b ? 2 : 1;
		k->cluster[1] = share_b ? 1 : 2;
		return;
	}
}

/*
 * Do TILES clusters of S CTAs, one an SM, all run at once?  Not only a
 * question of SMs: a cluster's CTAs share a GPC, and an H200 holds 66
 * clusters of 2 (132 CTAs) but 39 of 3 (117), 30 of 4 (120) and 15 of 8
 * (120).  At 32 swapped tiles of 32 x 64 (32 x 2048 x 8192), 32 clusters of
 * 4 ran in two waves: 14.2 us, where clusters of 2 took 13.6 and of 3 10.8;
 * 40 clusters of 3 took 17.1 us at 16 x 2560 x 8192 (docs/perf.md).
 */
static bool
in_wave(int64_t tiles, int s)
{
	return tiles * s <= TILE_TARGET && tiles <= (s == 3 ? RESIDENT_3 : s >= 4 ? RESIDENT_4 * 4 / s : TILE_TARGET);
}

/*
 * schedule: split_k N.  A GEMM of fewer tiles than SMs (a decode step's
 * 16 x 4096 x 14336: 64 swapped tiles for 132 SMs) leaves SMs idle that
 * could share its long K.  Split, a cluster of N CTAs takes each tile,
 * every CTA a contiguous share of the k-steps into its own accumulator,
 * and each rank adds the others' sums of the subtiles it stores through
 * distributed shared memory (split_reduce; a swapped tile: rank 0 all)
 * before its share of the epilogue: no workspace in global memory, no
 * flags to reset, the sum in one order whatever finishes first.
 * Without a hint, a swapped matmul (few rows) takes the largest split up
 * to MAX_SPLIT that keeps the split tiles within one wave (in_wave) and
 * SPLIT_STEPS k-steps a CTA; an unswapped one only when it has few tiles
 * (below), on ping-pong's 64-row tiles.  Sets k->splits (and T's tile and
 * K->pingpong); 0 or -1.
 */
static int
choose_split(Comp *c, const Fusion *f, Kernel *k, Tile *t, const Group *g, int ng, const Tensor *a,
             const Tensor *d)
{
	const Schedule *h = &f->sched;
	int64_t rows, cols = dim_value(f, d->dim[d->rank - 1]), K = dim_value(f, a->dim[a->rank - (t->akm ? 1 : 2)]);
	int64_t tiles, steps;
	const char *why = NULL;
	int s, nb = ng == 1 ? g->n : 1, regs = (k->swap_ab ? t->bm : nb * t->bn) / 2 * k->row_blocks;
	int partial = CONSUMER_THREADS * regs * 4, stage = (t->bm + nb * t->bn) * t->bk * 2;
	int share = k->cluster[0] * k->cluster[1];   /* a hinted cluster's CTAs that share operands */

	if (ng > 1)
		why = "with independent matmuls in one kernel";
	else if (h->signal)
		why = "with 'signal: per_tile'";
	else if (k->waits)
		why = "with an input or output that waits per tile";
	if (h->split_k > 1) {
		if (why)
			return unbuilt(c, h->split_pos, "split_k %s is not implemented yet", why);
		if (share * h->split_k > MAX_CLUSTER)
			return unbuilt(c, h->split_pos, "split_k %d in clusters of %d x %d CTAs makes clusters of %d CTAs, "
			               "which is not implemented yet: at most %d (the portable cluster size); split by at "
			               "most %d or share among fewer CTAs", h->split_k, k->cluster[0], k->cluster[1],
			               share * h->split_k, MAX_CLUSTER, MAX_CLUSTER / share);
		k->splits = h->split_k;
		return 0;
	}
	if (h->split_pos.line || why || k->batched || share > 1)
		return 0;
	rows = out_rows(f, d);
	if (rows <= 0 || cols <= 0 || K <= 0)
		return 0;
	tiles = grid_tiles(rows, cols, t->bm, t->bn);
	steps = (K + t->bk - 1) / t->bk;
	if (!k->swap_ab) {
		/*
		 * Unswapped, a GEMM of at most half a wave of 64 x 128 tiles runs
		 * on ping-pong's 64-row tiles (a CTA has one: one warpgroup
		 * computes, the stages hold twice the k-steps of a 128-row tile's)
		 * 64 or 128 wide, the narrower whose tiles split by 2 to 4 still fit
		 * one wave (in_wave), each CTA keeping FEW_STEPS k-steps: cuBLAS's
		 * design for these shapes (64 x 64 tiles, a K split), more SMs
		 * loading less each.  On an H200, cuBLAS / wsfuse: 256 x 1024 x 8192
		 * 0.70 -> 0.85, 256 x 1024 x 4096 0.64 -> 0.95, 128 x 512 x 8192
		 * (split 4) 0.53 -> 0.81, 128 x 4096 x 4096 (64 x 128) 0.95 -> 1.05;
		 * 200 x 1000 x 8192 0.61 -> 0.78 with its ragged last row of tiles
		 * moved inside (tile_inside; 0.57 before that).  Not with a hint
		 * that bears on it, nor with stream-K (cooperative only) or a
		 * signal consumer role (its 128 x 256 tile).
		 */
		int n;

		if (h->ntile || h->consumers || h->consumer_pos.line || k->sk_parts || g->n > 1 || k->pingpong ||
		    t->bm != BM)
			return 0;
		for (n = CHUNK; n <= 2 * CHUNK && k->splits < 2; n *= 2)
			for (s = 2; s <= MAX_SPLIT && in_wave(grid_tiles(rows, cols, BM / 2, n), s) && steps / s >= FEW_STEPS; s++)
				k->splits = s, t->bm = BM / 2, t->bn = n, k->pingpong = true;
		return 0;
	}
	/* the partial sums must leave shared memory for the stages asked for (or 4) and the staging copies */
	if (partial + (h->stages > 4 ? h->stages : 4) * stage + SPLIT_STAGING > SMEM_BUDGET)
		return 0;
	for (s = 2; s <= MAX_SPLIT && in_wave(tiles, s) && steps / s >= SPLIT_STEPS; s++)
		k->splits = s;
	return 0;
}

/*
 * Do K's CTAs each take several whole tiles at the spec's sizes (more
 * tiles of the output D than TILE_TARGET, no stream-K runs, no K split)?
 * Then the producer's elected thread runs its loop nest alone
 * (Kernel.elect_nest): with an elect() a k-step, while that thread waited
 * for a stage to empty the other lanes of its warp ran on through the
 * nest's every iteration, and its next load waited for them (on an H200,
 * 95-100K cycles in a CTA's first tile at 8192^3: 1.5-3% of the large
 * GEMMs).  Where a CTA takes one tile or part of one, the nest under one
 * elect() ran 3-12% slower in CUDA-graph replays (1536 x 1024 x 4096,
 * 1152 x 1280 x 4096, stream-K's 1024 x 1024 x 8192), for no cause found
 * (docs/perf.md, thirty-seventh session): those keep an elect() a k-step.
 */
static bool
many_tiles(const Fusion *f, const Tensor *d, const Kernel *k)
{
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]);

	return !k->sk_slot && k->splits <= 1 && rows > 0 && cols > 0 &&
	       grid_tiles(rows, cols, k->tile_rows, k->tile_cols) > TILE_TARGET;
}

/*
 * The default of two matmuls sharing A (SwiGLU's gate and up) on K-major
 * Bs, when the schedule leaves how to compute them open: ping-pong
 * warpgroups, each its own 128-row tile of GROUP_PP_N columns a matmul, one
 * wgmma of N = 192 (quack's 128 x 192 tile), so that one warpgroup's
 * epilogue (silu and the product) runs while the other's k loop does.
 * SwiGLU ran 2% faster than on the cooperative 128 x 128 a matmul at 8192 x
 * 14336 x 4096 (the median of five runs, -2% to +7%), 4% at 4096 x 11008 x
 * 4096, and tied at 2048 x 8192 x 4096 (1376 tiles) and at 1024 x 4096 x
 * 4096 (344; docs/perf.md); under GROUP_PP_TILES tiles the cooperative
 * tile stays, as it does with any hint that bears on the choice, and with
 * a residual to add: ping-pong's 192 accumulator registers and the
 * residual's spilled (388 bytes), and the cooperative tile's staging
 * copies carry it (preload_inputs): 7% faster at 8192 x 14336 x 4096 and
 * 4096 x 11008 x 4096 on an H200, where a bias row, a column scale or gelu
 * after the product ran 1-2% slower on it (docs/perf.md).  Nor with a bias
 * row or a column scale, which spilled too (16-144 bytes).
 */
static bool
group_pingpong(const Fusion *f, const Group *g, int ng, const Tensor *d)
{
	const Schedule *h = &f->sched;
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]);
	int j;

	if (ng != 1 || g->n != 2 || h->ntile || h->consumers || h->stages || h->swap_pos.line || h->split_pos.line ||
	    h->cluster_pos.line || h->signal || h->consumer_pos.line || fusion_waits(f) ||
	    epilogue_inputs(f, g, ng, d, false))
		return false;
	for (j = 0; j < g->n; j++)
		if (!f->op[g->mm[j]].transpose_b)
			return false;
	return rows > 0 && cols > 0 && grid_tiles(rows, cols, BM, GROUP_PP_N) >= GROUP_PP_TILES;
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
	fit_tile(f, d, k->pingpong, nmm, step, step, k->tile_rows, &n);
	fits = n < k->tile_cols && tile_fits(f, d, k->pingpong, nmm, k->tile_rows, n, 1);
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

static int
lower_matmul(Comp *c, Fusion *f)
{
	Kernel *k = kernel_new(c, f);
	const Op *op;
	const Tensor *a, *b, *d;
	Group g[MAXMM];
	Tile t = {.k = k, .f = f};
	Expr *batch = NULL, *batch_tiles = NULL;
	Stmt *first_kloop = NULL;
	int ng, gi, m, j, epi_waits = 0, pa[MAXMM] = {0}, pb[MAXMM][MAXMM] = {{0}}, *out_group;
	bool kmajor_b = true;   /* every B of the first mainloop K-major (transpose_b) */
	bool along_rows = false;   /* choose_tile's order of the tiles */
	bool group_pp;          /* group_pingpong's default */

	c->kernel = k;
	if ((ng = the_matmuls(c, f, g)) < 0)
		return -1;
	op = &f->op[g[0].mm[0]];
	a = &f->tensor[op->in[0].tensor];
	b = &f->tensor[op->in[1].tensor];
	d = &f->tensor[op->out];
	t.akm = !op->transpose_a;
	t.bkm = op->transpose_b;
	/*
	 * Batch dims on A alone with A [..., M, K]: the batch's rows and M are
	 * the rows of one matrix.  Else (on both, or A [..., K, M]) the kernel
	 * is batched: its tiles run over every batch, and each tensor with batch
	 * dims is read and written through a 3-D map [batch, rows, cols].
	 */
	k->batched = b->rank > 2 || (a->rank > 2 && op->transpose_a);
	if (k->batched && (ng > 1 || g[0].n > 1))
		return unbuilt(c, f->op[ng > 1 ? g[1].mm[0] : g[0].mm[1]].pos,
		               "several batched matmuls in one kernel are not implemented yet");
	for (gi = 0; gi < ng; gi++)
		for (m = 0; m < g[gi].n; m++) {
			const Op *o = &f->op[g[gi].mm[m]];
			Dtype da = f->tensor[o->in[0].tensor].dtype, db = f->tensor[o->in[1].tensor].dtype;

			if ((da != DT_BF16 && da != DT_F16) || db != da)
				return diag_error(c, o->pos, "matmul operands must both be bf16 or both f16, saw %s and %s",
				                  dtype_info[da].name, dtype_info[db].name);
			if (da != a->dtype)
				return unbuilt(c, o->pos, "matmuls of %s and %s operands in one kernel are not implemented yet",
				               dtype_info[a->dtype].name, dtype_info[da].name);
		}
	if (f->sched.store == STORE_VECTOR)
		return unbuilt(c, f->sched.store_pos, "'store: vector' is not implemented for matmul kernels: the "
		               "epilogue stores through staging subtiles and TMA");
	if (f->sched.warp_specialize == 1)
		return unbuilt(c, f->sched.ws_pos, "a matmul without warp specialization is not implemented yet");
	group_pp = group_pingpong(f, g, ng, d);
	if (choose_swap(c, f, d, g, ng, op, &k->swap_ab) < 0 ||
	    (k->swap_ab && swap_tile(c, f, d, &k->pingpong, &t.bm, &t.bn, &t.bk) < 0))
		return -1;
	if (!k->swap_ab)
		k->pingpong = f->sched.consumers == CONSUMERS_PINGPONG || group_pp ||
		              (!f->sched.consumers && !f->sched.ntile && ng == 1 && g[0].n == 1 && few_rows(f, d));
	if (k->pingpong && ng > 1)
		return unbuilt(c, f->sched.consumers_pos, "consumers: pingpong with independent matmuls in one kernel is "
		               "not implemented yet");
	k->waits = fusion_waits(f);
	if (f->sched.system && f->sched.consumer_pos.line && !f->sched.consumer_flags)
		return diag_error(c, f->sched.scope_pos, "'scope' applies to flags, and with 'consumer' the tiles are "
		                  "signalled to the kernel's own consumer role: leave out 'scope', or add 'flags: true' "
		                  "for the role to raise each tile's flag once it has written the tile");
	for (j = 0; j < g[0].n; j++)
		kmajor_b &= f->op[g[0].mm[j]].transpose_b;
	if (!k->swap_ab && choose_tile(c, f, d, k->pingpong, group_pp, g[0].mm[0], g[0].n, kmajor_b,
	                               ng == 1 && !epilogue_inputs(f, g, ng, d, true), &t.bm, &t.bn, &t.bk, &along_rows))
		return -1;
	if (f->sched.stream_k == 2)
		k->sk_parts = SK_PARTS;
	else if (!k->swap_ab && !k->pingpong)
		long_k_stream(f, k, &t, g, ng, a, d, along_rows);
	if (choose_cluster(c, f, k, &t, op) < 0)
		return -1;
	k->row_blocks = k->swap_ab ? 1 : t.bm / (k->pingpong ? 64 : 128);
	if (choose_split(c, f, k, &t, g, ng, a, d) < 0)
		return -1;
	row_cluster(f, k, &t, g, ng, a, d);
	misaligned_cluster(f, k, &t, g, ng, a, b);
	if (along_rows && !k->sk_parts && kernel_cluster_ctas(k) == 1)   /* a taller output's one wave (choose_tile) */
		k->raster_rows = true;
	/*
	 * A split's ranks share the epilogue's subtiles: rank 0 alone read all
	 * the others' partials through distributed shared memory, which moves
	 * about 26 bytes a nanosecond into one SM (H200: 2.4 us for each 64
	 * KiB partial of a 128 x 128 tile, docs/perf.md), so each rank sums and
	 * stores its own share.  A swapped tile is one subtile: rank 0's.
	 */
	k->split_scatter = k->splits > 1 && !k->swap_ab;
	if (k->row_blocks > 1 && f->sched.consumer_pos.line)
		return unbuilt(c, f->sched.tile_pos, "a tile of %d rows with a signal consumer role is not implemented "
		               "yet: use %d rows", t.bm, t.bm / 2);
	for (j = 0; j < f->nout; j++)
		if (!lower_same_shape(&f->tensor[f->out[j].tensor], d))
			return diag_error(c, f->out[j].pos, "cannot place output '%s' in the matmul kernel: its shape "
			                  "differs from the matmul's '%s'", f->tensor[f->out[j].tensor].name, d->name);
	out_group = arena_alloc(c->arena, (size_t)(f->nout + 1) * sizeof *out_group);
	if (ng > 1 && epilogue_groups(c, f, g, ng, out_group))
		return -1;

	k->domain = op->out;
	k->warp_specialize = true;
	k->persistent = f->sched.persistent != 1;   /* persistent: false runs one CTA a tile */
	if ((j = choose_stream_k(c, f, k, ng)) < 0)
		return -1;
	if (j)   /* a consumer thread's accumulator registers, f32 */
		k->sk_slot = CONSUMER_THREADS * 4 * (g[0].n * t.bn / 2 * k->row_blocks);
	k->tma_store = true;
	k->consumer_threads = CONSUMER_THREADS;
	k->threads = CONSUMER_THREADS + PRODUCER_THREADS;
	choose_regs(f, k, &t, g, ng);
	k->tile_rows = t.bm;
	k->tile_cols = t.bn;
	k->epi_cols = k->swap_ab ? t.bn : t.bn % EPI_COLS ? EPI_NARROW : EPI_COLS;
	k->tile_pos = f->sched.ntile ? f->sched.tile_pos : (Pos){0};
	k->smem_budget = SMEM_BUDGET;
	k->stages_hint = f->sched.stages;
	k->stages_default = k->swap_ab ? SWAP_STAGES : 0;
	k->stages_pos = f->sched.stages ? f->sched.stages_pos : f->pos;

	/* parameters: the operands (tensor maps of 128-byte swizzled boxes), the epilogue's inputs, the outputs */
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
		if (as_a && as_b && (t.akm != t.bkm || t.bm != t.bn))
			return unbuilt(c, x->pos, "'%s' is both operands of the kernel's matmuls, with different tiles; this "
			               "is not implemented yet", x->name);
		v = as_a || as_b ? VIEW_FULL : epilogue_view(x, d);
		if (v == VIEW_NONE)
			return diag_error(c, x->pos, "cannot read '%s' in the matmul's epilogue: over its output [M, N] an "
			                  "input must be full, a row [N], a column [M, 1] or a scalar", x->name);
		if (x->wait_pos.line && as_a && as_b)
			return unbuilt(c, x->wait_pos, "'%s' waits per tile and is both operands of the kernel's matmuls, "
			               "whose tiles it would arrive in both by rows and by columns: not implemented yet",
			               x->name);
		k->wait_rows += x->wait_pos.line && as_a;
		k->wait_cols += x->wait_pos.line && as_b;
		if (x->wait_pos.line && v != VIEW_FULL)
			return diag_error(c, x->wait_pos, "'%s' waits per tile (wait: per_tile), but it is not a full [M, N] "
			                  "input over the matmul's output: its tiles are not the output's", x->name);
		if (x->wait_pos.line && f->sched.consumer_pos.line)
			return unbuilt(c, x->wait_pos, "an input that waits per tile in a kernel with a signal consumer "
			               "role is not implemented yet");
		if (x->wait_pos.line && !(as_a || as_b) && wait_tile(c, k, &t, x, epi_waits++ == 0) < 0)
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
			k->param[p].box[0] = t.akm ? t.bm / k->cluster[1] : t.bk;
			k->param[p].box[1] = t.akm ? t.bk : CHUNK;
		}
		if (as_b) {
			k->param[p].box[0] = t.bkm ? t.bn / k->cluster[0] : t.bk;
			k->param[p].box[1] = t.bkm ? t.bk : CHUNK;
		}
		for (gi = 0; gi < ng; gi++) {
			if (f->input[j] == f->op[g[gi].mm[0]].in[0].tensor)
				pa[gi] = p;
			for (m = 0; m < g[gi].n; m++)
				if (f->input[j] == f->op[g[gi].mm[m]].in[1].tensor)
					pb[gi][m] = p;
		}
	}
	/* an output the epilogue stores is a tensor map of subtile boxes; the signal consumer's, a pointer */
	for (j = 0; j < f->nout; j++) {
		const Tensor *x = &f->tensor[f->out[j].tensor];
		int p;

		/* an output that waits: the tile's word before its first store (wait_inputs) */
		if (x->wait_pos.line && (f->out[j].consumer || f->sched.consumer_pos.line))
			return unbuilt(c, x->wait_pos, "an output that waits per tile in a kernel with a signal consumer "
			               "role is not implemented yet");
		if (x->wait_pos.line && wait_tile(c, k, &t, x, epi_waits++ == 0) < 0)
			return -1;
		p = kernel_add_param(c, k, f->out[j].consumer ? PK_PTR : PK_TMAP, x->name);

		k->param[p].arg = f->ninput + j;
		k->param[p].tensor = f->out[j].tensor;
		k->param[p].dtype = f->out[j].dtype;
		k->param[p].view = VIEW_FULL;
		if (!f->out[j].consumer) {   /* a staging subtile (group_tile) */
			k->param[p].box[0] = t.bm;
			k->param[p].box[1] = k->epi_cols;
		}
	}
	if (f->sched.consumer_pos.line && consumer_reads(c, f, k) < 0)
		return -1;
	if (k->sk_slot) {
		kernel_add_param(c, k, PK_WORKSPACE, "sk_work");
		j = kernel_add_param(c, k, PK_SIZE, "sk_on");
		k->param[j].size = SZ_SK_ON;
		k->param[j].var = kernel_add_var(c, k, "sk_on");
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
	k->param[j].dim[0] = a->dim[a->rank - (t.akm ? 1 : 2)];

	/*
	 * Buffers: one stage of each operand (circular_buffer makes S), A's
	 * shared by a group; an accumulator a matmul.  Independent groups run
	 * one after the other through the same stages and registers: a later
	 * group loads into the first's buffers (named after the first's
	 * operands), and its accumulators are the first's registers
	 * (KAcc.alias).
	 */
	t.abuf = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", a->name), BUF_TILE, a->dtype, t.bm, t.bk);
	k->buf[t.abuf].param = pa[0];
	k->buf[t.abuf].tensor = op->in[0].tensor;
	k->buf[t.abuf].swizzle = 128;
	t.bbuf = kernel_add_buf(c, k, arena_printf(c->arena, "tile_%s", b->name), BUF_TILE, b->dtype,
	                           g[0].n * t.bn, t.bk);
	k->buf[t.bbuf].param = pb[0][0];
	k->buf[t.bbuf].tensor = op->in[1].tensor;
	k->buf[t.bbuf].swizzle = 128;
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
			                       o->acc ? o->acc : DT_F32, k->swap_ab ? t.bn : t.bm,
			                       k->swap_ab ? t.bm : m ? t.bn : g[gi].n * t.bn);

			k->acc[x].tensor = o->out;
			k->acc[x].alias = gi ? g[0].acc[0] : m ? g[gi].acc[0] : 0;
			k->acc[x].col = m * t.bn;
			g[gi].acc[m] = x;
		}

	/*
	 * Launched as a programmatic dependent: every thread waits for the
	 * grid before it before anything touches global memory, after what
	 * needs none (barrier init, map prefetch); the next grid may launch
	 * once each CTA's consumers are past their last tile (lower_matmul's
	 * end), as quack does.  Launched at once, at the top, it cost 8-12%
	 * on one wave of long k loops (1024 x 1024 x 8192; docs/perf.md).
	 */
	k->pdl = true;
	{
		Stmt *wait = st_new(c, ST_GRID_DEP);

		wait->comment = "the kernel before in the stream has finished, its writes visible";
		st_append(c, k->body, wait);
	}

	/* the persistent tile loop */
	t.loop = lower_tile_loop(c, k, false, &t.row0, &t.col0);
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
	raster(c, k, t.loop, batch_tiles);
	if (k->batched) {
		Stmt *tile = NULL;
		int at;

		for (at = 0; at < t.loop->nbody; at++)
			if (t.loop->body[at]->kind == ST_LET && strcmp(k->var[t.loop->body[at]->var].name, "tile") == 0)
				tile = t.loop->body[at];
		if (!tile)
			return diag_internal(c, "lower_matmul", "the tile loop has no tile");
		t.bt = ex_var(c, lower_let(c, k, "bt", ex_bin(c, EX_DIV, ex_var(c, tile->var), batch_tiles), t.loop)->var);
	}
	tile_inside(c, f, k, t.loop);
	{
		/*
		 * K-steps a tile: lets before the tile loop, which lower_tile_loop
		 * appended last.  A K-split's CTA takes kper of them from k0 (the
		 * last ones fewer, or none when K is short), and kparts of the
		 * cluster's CTAs have any.
		 */
		Expr *steps = ex_bin(c, EX_CEILDIV, ex_var(c, k->param[j].var), ex_int(c, t.bk));

		k->body->nbody--;
		if (k->splits > 1) {
			Expr *all = ex_var(c, lower_let(c, k, "ksteps", steps, k->body)->var), *per;

			per = ex_var(c, lower_let(c, k, "kper", ex_bin(c, EX_CEILDIV, all, ex_int(c, k->splits)), k->body)->var);
			t.k0 = ex_var(c, lower_let(c, k, "k0", ex_bin(c, EX_MUL, lower_split_rank(c, k), per), k->body)->var);
			t.kparts = ex_var(c, lower_let(c, k, "kparts", ex_bin(c, EX_CEILDIV, all, per), k->body)->var);
			steps = ex_bin(c, EX_MAX, ex_bin(c, EX_MIN, ex_bin(c, EX_SUB, all, t.k0), per), ex_int(c, 0));
		}
		t.ktiles = ex_var(c, lower_let(c, k, "ktiles", steps, k->body)->var);
		if (k->sk_slot && stream_k_plan(c, k, &t) < 0)
			return -1;
		st_append(c, k->body, t.loop);
	}
	/* in the tile loop, each group's k loop and epilogue */
	for (gi = 0; gi < ng; gi++) {
		Stmt *kloop = group_tile(c, &t, &g[gi], gi, ng, pa[gi], pb[gi], out_group);

		if (gi == 0)
			first_kloop = kloop;
	}
	if (ng == 1)
		prefetch_inputs(c, f, k, &t, first_kloop);
	stage_rows(c, f, k, &t, first_kloop, ng);
	preload_inputs(f, k, &t, ng);
	if (k->waits)
		wait_inputs(c, f, k, &t, batch, batch_tiles);
	if (f->sched.signal == SIGNAL_PER_TILE)
		lower_signal(c, k, t.loop, t.row0, t.col0, t.bt, batch_tiles,
		             f->sched.consumer_pos.line ? first_kloop : NULL, t.ktiles);
	k->elect_nest = many_tiles(f, d, k);
	if (check_fit(c, f, k, d, g[0].n, kmajor_b ? EPI_NARROW : CHUNK) < 0)
		return -1;
	{
		/* after the tile loop: warp_specialize gives it to the consumers, after their last tile */
		Stmt *go = st_new(c, ST_GRID_DEP);

		go->flag = true;
		go->comment = "the next kernel in the stream may launch (its CTAs start as this one's leave, and wait for it)";
		st_append(c, k->body, go);
	}
	return 0;
}

/* The matmuls whose first operand is the first matmul's (a group: they compute side by side). */
static int
shared_a(const Fusion *f)
{
	int i, n = 0, a = -1;

	for (i = 1; i < f->nop; i++)
		if (op_info[f->op[i].kind].cls == CLS_MATMUL) {
			if (a < 0)
				a = f->op[i].in[0].tensor;
			n += f->op[i].in[0].tensor == a;
		}
	return n > 0 ? n : 1;
}

int
lower_matmul_candidates(const Fusion *f, Schedule *out, int max)
{
	static const int tiles[][3] = {{128, 128, 64}, {128, 256, 64}, {256, 128, 64}};
	const Schedule *h = &f->sched;
	Schedule s;
	int i, n = 0;

	Schedule scratch[TUNE_COUNT];

	if (!out || max < 1)   /* how many there are */
		out = scratch, max = TUNE_COUNT;
	out[n++] = *h;
	if (f->family != FAM_MATMUL || h->signal || fusion_waits(f))
		return n;
	for (i = 0; i < (int)countof(tiles) && !h->ntile && !h->consumers && !h->swap_ab && n < max; i++) {
		s = *h;
		memcpy(s.tile, tiles[i], sizeof s.tile);
		s.ntile = 3;
		s.tile_pos = f->pos;
		out[n++] = s;
	}
	/* quack's default on sm_90: ping-pong warpgroups, each its own 128 x 192 tile (a K-major B only);
	   matmuls sharing A divide the 192 columns of one wgmma */
	if (!h->ntile && !h->consumers && !h->swap_ab && n < max) {
		s = *h;
		s.tile[0] = 128, s.tile[1] = 192 / shared_a(f) / EPI_COLS * EPI_COLS, s.tile[2] = 64;
		s.ntile = 3;
		s.tile_pos = f->pos;
		s.consumers = CONSUMERS_PINGPONG;
		s.consumers_pos = f->pos;
		out[n++] = s;
	}
	if (!h->cluster_pos.line && n < max) {
		s = *h;
		s.cluster[0] = 2, s.cluster[1] = 1;
		s.cluster_pos = f->pos;
		out[n++] = s;
	}
	for (i = 1; i <= 4 && !h->split_pos.line && n < max; i *= 2) {
		s = *h;
		s.split_k = i;
		s.split_pos = f->pos;
		out[n++] = s;
	}
	if (!h->swap_pos.line && n < max) {
		s = *h;
		s.swap_ab = 1;
		s.swap_pos = f->pos;
		out[n++] = s;
	}
	/* stream-K's last wave, where the GPU is not held to its power cap (choose_stream_k); and none, where
	   the default takes it (long_k_stream) */
	for (i = 2; i >= 1 && !h->sk_pos.line && n < max; i--) {
		s = *h;
		s.stream_k = i;
		s.sk_pos = f->pos;
		out[n++] = s;
	}
	return n;
}

const LowerFamily lower_matmul_family = {lower_matmul, "use a smaller tile or fewer stages", NULL, NULL};
