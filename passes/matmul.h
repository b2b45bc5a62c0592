/*
 * matmul.h: the matmul family's internal header, shared by its planner
 * (plan_matmul.c, plan_stream_k.c) and its lowering (lower_matmul.c,
 * lower_matmul_ksum.c, lower_matmul_sync.c): the tuned constants (the
 * measurements behind them: docs/perf_history.md), the groups of matmuls
 * and the tile they share, the defaults the plan may rule out, and a
 * section of prototypes a file.  The plan itself, which carries the
 * planner's decisions to the lowering and on in the kernel (Kernel.mm), is
 * ir.h's MatmulPlan.
 */
#ifndef WSFUSE_PASSES_MATMUL_H
#define WSFUSE_PASSES_MATMUL_H

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
	TUNE_COUNT = 12                            /* plan_matmul_candidates' schedules, at most */
};
/* What every group's mainloop and epilogue share: the tile, the operand buffers, where the tile is. */
typedef struct Tile {
	Kernel *k;
	const Fusion *f;
	Stmt *loop;                   /* the tile loop */
	Expr *row0, *col0, *bt, *ktiles;
	Expr *k0, *kparts;            /* a K-split (KSumSize.splits): this CTA's first k-step, and the cluster's CTAs
	                                 that have k-steps; NULL without.  Stream-K: k0 is the part's first */
	Expr *kn, *kbase, *help;      /* stream-K (stream_k_plan): the part's k-steps, the stage counter at its
	                                 first, and the CTAs after this one whose sums its tile's owner adds */
	Expr *ski, *sknp;             /* stream-K in fractions of a tile (KSUM_SK_SCATTER): the part's index
	                                 among its tile's, and their number (0 and 1 for a whole tile) */
	int bm, bn, bk;
	bool akm, bkm;                /* is the operand K-major (K its contiguous dim)? */
	int abuf, bbuf;               /* A's stage, and B's: a group's side by side */
} Tile;

/* The defaults that apply only where nothing the plan holds rules them out (plan_rules_out). */
typedef enum PlanDefault {
	PD_GROUP_PINGPONG,       /* SwiGLU's ping-pong 128 x 96 a matmul (group_pingpong) */
	PD_LONG_K_STREAM,        /* stream-K in fractions of a tile on few tiles of a long K */
	PD_ROW_CLUSTER,          /* clusters of four along N sharing a ragged row's A */
	PD_MISALIGNED_CLUSTER,   /* a cluster of two sharing an operand whose rows are misaligned */
	PD_FEW_TILE_SPLIT        /* an unswapped K split on ping-pong's 64-row tiles */
} PlanDefault;

/* The features a matmul may ask for that combine with only some others (plan_matmul.c not_with). */
typedef enum Asked {
	ASK_SWAP,       /* swap_ab */
	ASK_PINGPONG,   /* consumers: pingpong */
	ASK_CLUSTER,    /* cluster */
	ASK_SPLIT,      /* split_k */
	ASK_STREAM_K    /* stream_k, or its default */
} Asked;

/* What the schedule pass plans of a matmul fusion (Fusion.mm), which lowering reads and copies. */
struct MatmulSchedule {
	Group g[MAXMM];
	int ng;
	int *out_group;   /* output j's group: the epilogue that computes it (epilogue_groups) */
	MatmulPlan plan;  /* Kernel.mm as lowering begins */
};

/* lower_matmul.c */
int PRINTF_LIKE(3, 4) unbuilt(Comp *c, Pos pos, const char *fmt, ...);

/* plan_matmul.c: the tile, swap, cluster, K split and registers, from the fusion and its sizes */
int the_matmuls(Comp *c, const Fusion *f, Group *g);
int plan_matmul(Comp *c, const Fusion *f, const Group *g, int ng, MatmulPlan *p);
int plan_cluster_ctas(const MatmulPlan *p);
bool plan_rules_out(const Fusion *f, const MatmulPlan *p, const Group *g, int ng, PlanDefault d);
/*
 * Is feature A not built with what plan P of F's NG groups G holds so far
 * (not_with, the one table of which combine)?  When ASK (a hint asked for
 * it), the refusal at POS (exit status 6) and -1; else 1; 0 where it
 * combines.
 */
int plan_refuse(Comp *c, Pos pos, const Fusion *f, const MatmulPlan *p, const Group *g, int ng, Asked a, bool ask);
View epilogue_view(const Tensor *t, const Tensor *d);
int64_t grid_tiles(int64_t rows, int64_t cols, int m, int n);
bool rows_aligned(const Fusion *f, int mm);
int64_t out_rows(const Fusion *f, const Tensor *d);
void fill_waves(int64_t rows, int64_t cols, int step, bool tall, int *bm, int *bn);
bool tile_fits(const Fusion *f, const Tensor *d, bool pingpong, int nmm, int bm, int bn, int stages);
void fit_tile(const Fusion *f, const Tensor *d, bool pingpong, int nmm, int step, int least, int bm, int *bn);
bool op_reads(const Fusion *f, int t);
bool in_wave(int64_t tiles, int s);

/* plan_stream_k.c: the default stream-K parts */
int choose_stream_k(Comp *c, const Fusion *f, const MatmulPlan *p, const Group *g, int ng);
int64_t quarter_parts(int64_t rows, int64_t cols, int64_t steps, int *bn);
int64_t half_parts(int64_t rows, int64_t cols, int64_t steps, int step, int *bn);
int64_t narrow_parts(int64_t rows, int64_t cols, int64_t steps, int step, int *bn);
void long_k_stream(const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Tensor *a, const Tensor *d);

/* lower_matmul_ksum.c: where a tile's partial sums over K meet */
void ksum_meet(Comp *c, const Tile *t, const Group *g, Stmt *eloop);
Stmt *ksum_own(Comp *c, const Tile *t, Stmt *eloop, bool store);
int stream_k_plan(Comp *c, Kernel *k, Tile *t);

/* lower_matmul_sync.c: per-tile waits and signals, epilogue-input staging and preloads */
int wait_tile(Comp *c, Kernel *k, const Tile *t, const Tensor *x, bool first);
void wait_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Expr *batch, Expr *batch_tiles);
void prefetch_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop);
void stage_rows(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop, int ng);
void preload_inputs(const Fusion *f, Kernel *k, const Tile *t, int ng);

#endif
