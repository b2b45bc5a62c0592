/*
 * plan.h: the kernel families' plans, which a Kernel holds in a union by
 * its family (ir.h struct Kernel): a row reduction's RowPlan, a matmul's
 * MatmulPlan with its K strategy (KSum, ksum_rule, KSumSize), a pointwise
 * kernel's PointwisePlan; and the row-reduction fusion's RowSchedule
 * (Fusion.row).  Included by ir.h alone, after the types it uses.
 */
#ifndef WSFUSE_IR_PLAN_H
#define WSFUSE_IR_PLAN_H

/*
 * A row-reduction kernel's plan: how its rows are held.  Planned with the
 * kernel's shape (RowSchedule) by plan_row, lowering's copy in Kernel.row;
 * zero in every other family's kernel.
 */
typedef struct RowPlan {
	int cap;                 /* the widest row (elements) the buffers hold */
	int steps;               /* a row is held in registers, this many steps of 8 elements a thread;
	                            0: each pass reads it from shared memory again */
	int chunk;               /* rows stream through the stages in chunks of this many elements,
	                            each pass reading global memory again (0: whole rows) */
	int passes;              /* streamed in chunks: passes over each row */
	bool direct;             /* one CTA a row, whose inputs are loaded straight into registers (no
	                            stage, no TMA): a row in registers, not persistent */
	bool deep;               /* direct: 32 elements a thread at 40 warps an SM (48 registers), not 16
	                            at 48 warps (40) */
	bool reread;             /* direct: every pass loads the row again (L2 keeps it for the next),
	                            nothing full-row lives across a block reduction; 64 warps an SM (32
	                            registers) */
	int lanes;               /* direct, rows of at most 1024 elements: a row is this many threads (a
	                            power of 2, 8 elements each), a CTA threads / lanes rows
	                            (Kernel.tile_rows); 0: a row a CTA */
	View *view;              /* each fusion tensor's view of the row domain (VIEW_REDUCED: an outer result) */
	int outer;               /* reductions over the rows beside the row's (VIEW_REDUCED results): of a full row's
	                            values (COLUMNS of them, op_over_rows: a norm's dgamma, dbeta), each thread adding
	                            its columns of every row it computes (acc_NAME), or of a per-row value (a loss's
	                            sum); after the rows the CTAs' sums meet (ST_ROW_MEET); a persistent grid */
	int columns;
	int work_param;          /* outer (lowering's): the workspace param, a slot of columns x cap + the rest floats
	                            a CTA, */
	int slot;                /*   the slot's bytes, */
	Expr *splits;            /*   and the CTAs that share the rows (1 without a workspace: CTA 0 takes all) */
} RowPlan;

/* Is O a reduction over every dim of its input but the last (rank 2 or more: [T, H].sum(0), a column's)? */
bool op_over_rows(const Fusion *f, const Op *o);

/*
 * A row-reduction fusion's plan (Fusion.row): its RowPlan and the kernel's
 * shape, which plan_row (passes/schedule_row.c) decides from the fusion, its
 * schedule and a spill fallback alone, before any IR is built; lowering
 * copies it into the Kernel.  Planned by the schedule pass under
 * Comp.row_fallback, and again by the family's spill retry.
 */
struct RowSchedule {
	RowFallback fallback;    /* the fallback it was planned under */
	int domain;              /* the rows: the input of the first reduction (Kernel.domain) */
	int64_t width;           /* its last dim at the sizes bound (0: unbound) */
	bool planned;            /* the width is one a kernel takes (else plan_row planned only the views, and
	                            lowering refuses the width) */
	RowPlan plan;            /* Kernel.row; plan.view: every read tensor's view (VIEW_NONE: none fits,
	                            which lowering refuses) */
	int threads;             /* Kernel.threads and consumer_threads */
	int tile_rows, tile_cols;   /* Kernel's: one row, or one chunk of it */
	int stages_default;      /* Kernel's */
	int stages_hint;         /* Kernel's: the schedule's stages, or 1 for one row a CTA */
	bool persistent;         /* Kernel's: false for one CTA a row */
};

/* How a matmul tile's partial sums over K meet (MatmulPlan.ksum): a row each of ksum_rule. */
typedef enum KSum {
	KSUM_NONE,           /* one CTA holds the whole sum */
	KSUM_SPLIT_RANK0,    /* a K-split cluster, rank 0 adds the others' sums (a swapped tile) */
	KSUM_SPLIT_SCATTER,  /* a K-split cluster, each rank adds the others' sums of its subtiles */
	KSUM_SK_OWNER,       /* stream-K runs, each tile's owner adds the others' sums through the workspace */
	KSUM_SK_SCATTER      /* stream-K in fractions of a tile, each part adds the others' sums of its subtiles */
} KSum;

/* What a way of meeting (KSum) builds: ksum_rule (ir/kernel.c), a row a KSum. */
typedef struct KSumRule {
	bool partial;              /* a CTA holds part of a tile's sum: no staging ring, prefetch or preload */
	bool split_cluster;        /* the CTAs of a cluster (KSumSize.splits of them) share the k-steps */
	bool workspace;            /* the sums meet in global memory, KSumSize.sk_slot bytes a CTA */
	const char *own_compute;   /* each rank or part computes and stores the subtiles it owns (own_subtile), */
	const char *own_store;     /* these its comments; NULL: the epilogue runs whole where it runs */
} KSumRule;

extern const KSumRule ksum_rule[];

/* A matmul's numbers for its K strategy (MatmulPlan.ksum); splits 1 and the rest 0 without one. */
typedef struct KSumSize {
	int splits;     /* CTAs that share each tile's k-steps (a split-K matmul: one cluster of them a tile);
	                   1: none.  With cluster[] > 1, clusters of cluster[0] x cluster[1] x splits CTAs,
	                   rank = split rank x cluster[0] cluster[1] + place (lower_split_rank) */
	int sk_parts;   /* stream-K: a run is at least 1 / sk_parts of a tile's k-steps (0: no stream-K) */
	int sk_slot;    /* stream-K: bytes of one CTA's partial sums in the workspace (param PK_WORKSPACE);
	                   0: none */
} KSumSize;

/*
 * A matmul kernel's plan: the decisions plan_matmul takes from the fusion,
 * its schedule and its sizes alone, before any IR is built (plan_matmul.c,
 * plan_stream_k.c), and what lowering adds (the inputs that wait).  It is
 * the kernel's own (Kernel.mm): lowering plans into it and builds from it.
 * A generic pass asks through kernel_mm, which gives another family's
 * kernel the plan of no matmul (no cluster, split or swap).
 */
typedef struct MatmulPlan {
	/* what the fusion fixes */
	bool batched;              /* batch dims on both operands: the view is [batch, rows, cols], tiles run
	                              over every batch, and operands and outputs have 3-D maps */
	int waits;                 /* inputs with wait: per_tile (ST_FLAG_WAIT, param PK_WAIT): the kernel waits on
	                              each one's flag word for a tile before the tile's epilogue reads it, or (an
	                              operand) before the producer loads it; wait_flags holds, input after input in
	                              spec order, a word an output tile (an epilogue input), a row tile (A) or a
	                              column tile (B) */
	int wait_rows, wait_cols;  /* of them, operands A (a word a row tile) and B (a column tile); lowering's */
	int wait_tile[2];          /* the writer's tile of the epilogue inputs that wait, when it is not the
	                              kernel's own (wait: {per_tile, tile: [R, C]}): a word an R x C tile, and a tile
	                              of the kernel waits for each of the writer's it covers (0: the kernel's own);
	                              lowering's */
	bool persistent;           /* Kernel.persistent */
	bool akm, bkm;             /* is operand A (B) K-major? */
	bool kmajor_b;             /* every B of the first mainloop K-major */
	/* the decisions */
	bool swap_ab;              /* few rows computed transposed, D^T = B A^T: 64 of B's rows fill a warpgroup's
	                              wgmma M and A's tile_rows rows its N, so the accumulator holds the output tile
	                              transposed (ping-pong tiles of 64 columns, cooperative ones of 128; one
	                              epilogue subtile a tile) */
	bool pingpong;             /* consumer warpgroups that each own a tile (64 rows): warpgroup w takes the
	                              CTA's tiles w, w + 2, ...; their elected threads, barriers and halves of each
	                              staging copy are their own (the consumer role's KRole.groups) */
	bool group_pp;             /* group_pingpong's default for matmuls that share A */
	bool along_rows;           /* choose_tile's one wave along the rows of a taller output */
	bool raster_rows;          /* the tiles in order along each row of tiles (consecutive tiles share A), not
	                              in groups of rows walked column by column (lower_matmul.c raster) */
	int bm, bn, bk;            /* the CTA tile (Kernel.tile_rows, tile_cols) */
	int row_blocks;            /* the 64-row blocks of the tile a consumer warpgroup computes, each a wgmma of
	                              its own into its own N / 2 accumulator registers: 1, or 2 for a ping-pong
	                              warpgroup's 128-row tile */
	int epi_cols;              /* an epilogue subtile's columns (its staging copy's, its output maps' box): 32,
	                              or 16 where tile_cols is an odd multiple of 16; swapped, tile_cols */
	int stages_default;        /* Kernel.stages_default */
	int cluster[2];            /* CTAs a cluster along M and N, launched as clusters of cluster[0] x cluster[1]
	                              CTAs (1-D, each CTA's rank EX_RANK) that take one cluster tile at a time and
	                              multicast the operand they share ({1, 1}: no cluster) */
	KSum ksum;                 /* how a tile's partial sums over K meet (ksum_rule): a K-split cluster's
	                              ST_SPLIT_REDUCE, into rank 0 or each rank's subtiles; or stream-K, the last
	                              wave's tiles split into runs of k-steps over the CTAs (or whole fractions of a
	                              tile, each summing and storing its own subtiles) that meet through the
	                              workspace */
	KSumSize ksize;            /* and its numbers */
	bool split_scatter;        /* which KSum: a split's into each rank's subtiles, */
	bool sk_scatter;           /* stream-K's in fractions of a tile */
	int producer_regs, consumer_regs;   /* Kernel's */
	bool elect_nest;           /* the producer's elected thread alone runs its whole loop nest, not the role's
	                              threads with an elect() a k-step (warp_specialize.c elect_producer): CTAs that
	                              take several whole tiles each at the spec's sizes (many_tiles) */
} MatmulPlan;

/*
 * A view of an input read through its pointer (passes/views.c), beyond its
 * offset (KParam.at) and column step: its box, outside which its elements
 * are FILL, not memory (a pad's: LO <= i_d < HI on domain dim d; HI
 * INT64_MAX: no bound there); or the index whose values place it along one
 * dim (index_select, gather): element i reads at + col x step + index[j] x
 * INDEX_SCALE, j the index element the index param's own at and step give.
 */
struct KBounds {
	int64_t lo[MAX_RANK], hi[MAX_RANK];
	int64_t div[MAX_RANK], mod[MAX_RANK];   /* MOD > 0: the box is on the digit (i_d / DIV) % MOD (views.c) */
	double fill;
	int index_param;         /* the index's pointer param (0: no index) */
	int index_dim;           /* a 1-D index's dim, counted from the domain's last (1: the columns); 0: gather */
	Expr *index_scale;       /* elements of the input from one position of the indexed dim to the next */
	Expr *index_n;           /* a row kernel's gather of one element a row: the indexed dim's extent, outside
	                            which (0..n-1) it reads 0, not memory (ignore_index's -100); NULL: unchecked */
	int stage;               /* > 0: read from this param's staged tile (the same input, whole rows in a tile),
	                            each row's columns SHIFT elements on (RoPE's halves: x's stage); with REGS,
	                            from that param's registers, each in-box element's SHIFT inside the thread's 8
	                            (RoPE's interleaved pairs) */
	int64_t shift;
	bool regs;
};

/* Does param P of a kernel of fusion F read a view of one of F's inputs (views.c): an input's argument, another tensor? */
static inline bool
kparam_is_view(const Fusion *f, const KParam *p)
{
	return f && p->arg >= 0 && p->arg < f->ninput && p->tensor != f->input[p->arg];
}

/* Each View's name, as the kernel IR prints it (kprint.c) and the kernel's picture labels it (dot.c). */
extern const char *const view_name[];

/* What a pointwise kernel reduces (passes/lower_reduce_grid.c). */
typedef enum ReduceMode {
	RED_NONE,
	RED_COLUMNS,   /* over the rows of each group of rows: a result a group and column ([R, C].sum(0): one
	                  group; [B, S, H].mean(1): B groups of S rows) */
	RED_ALL        /* over every element: one result */
} ReduceMode;

/*
 * A pointwise kernel's plan, chosen by lowering.  A reduction over rows or
 * over everything (REDUCE) splits the work into items: a column tile of a
 * group (all the tiles, RED_ALL) and a part of its row tiles.  Each thread
 * adds its elements of the item's tiles into registers (the compute), then
 * at the item's last tile (ST_REDUCE) the CTA's threads add theirs together
 * through SCRATCH, and where a unit is split across CTAs (SPLITS > 1) each
 * part's sums go to its slot of the workspace, the last CTA of the unit to
 * arrive adding the parts in order: deterministic, with no atomic adds.
 */
typedef struct PointwisePlan {
	bool flat;               /* every input is full or scalar: any 2-D view will do */
	Expr *digit[MAX_RANK];   /* domain dims a view's box or a placed cat or pad tests (views.c): the
	                            element's index along the dim, from the row (the last dim's: the column) */
	ReduceMode reduce;
	bool *late;              /* each fusion tensor: computed from a reduction's result, once an item's (ST_REDUCE) */
	int nred;                /* the reductions */
	int scratch;             /* BUF_PARTIAL: a reduction's partial sums, 8 a thread */
	int slot;                /* workspace bytes an item's partial sums take (PK_WORKSPACE) */
	int work_param;          /* the workspace */
	Expr *extent;            /* the elements a result reduces: mean's divisor */
	Expr *group, *col0;      /* the item's group (the result's row) and first column */
	Expr *row_end;           /* the item's group's end: rows from here are another group's */
	Expr *item, *unit, *splits;   /* the item (its workspace slot), its unit, the items a unit */
} PointwisePlan;

#endif
