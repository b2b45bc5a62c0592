/*
 * passes.h: the internal header of passes/.  Every transformation is one
 * function with one signature, listed in the pipeline table of pipeline.c,
 * its contract above it in its file; the driver (pipeline.c) runs the verifier after each pass and
 * prints the IR after the passes the dump option names.
 *
 *   pipeline.c        the pass table and the driver
 *   expand.c          composite ops (softmax, layernorm, rmsnorm) -> primitives
 *   infer.c           shapes, dtypes, broadcasts, axes; shape errors
 *   schedule.c        choose the kernel family and its parameters;
 *                     schedule_matmul.c, the matmul family's groups and plan;
 *                     schedule_row.c, the row-reduction family's plan
 *   lower.c           fusion IR -> kernel IR (loop nests, TMA loads, compute):
 *                     the pass, the family table, what the families share
 *   lower_pointwise.c the pointwise family: tiles of the outputs' shape
 *   lower_reduction.c the row-reduction family: whole rows, or their chunks, from its plan
 *   lower_bcast.c     inputs broadcast along leading dims: their per-row offsets
 *   views.c           views of computed values moved down to the inputs (the
 *                     views pass); views of inputs as strides and an offset
 *   plan_matmul.c     the matmul family's plan (tile, cluster, split...) from
 *                     the fusion and its sizes; plan_stream_k.c, stream-K's
 *   lower_matmul.c    the matmul family's nest, from its plan (matmul.h);
 *                     lower_matmul_ksum.c, where partial sums over K meet;
 *                     lower_matmul_sync.c, per-tile waits, staged inputs
 *   circular_buffer.c pick the loop, stages, prefetch; buffers and mbarriers
 *   warp_specialize.c split the buffered loop into producer and consumer roles
 *   sync.c            mbarrier waits and releases, bulk-group waits, fences
 *   grad.c            a fusion's backward (reverse mode), a new fusion; not in
 *                     the pipeline: wsf_grad_string runs it after infer
 */
#ifndef WSFUSE_PASSES_H
#define WSFUSE_PASSES_H

#include "../ir/ir.h"

/* A pass returns 0, or -1 after reporting a diagnostic. */
typedef int (*PassFn)(Comp *c);

struct Pass {
	const char *name;   /* as in --dump-after */
	PassFn run;
	WsfStage stage;     /* which IR it produces: fusion or kernel IR */
};

extern const Pass pass_table[];
extern const int pass_count;

/* Runs the passes whose output stage is STOP (fusion-ir or kernel-ir). 0 or -1. */
int passes_run(Comp *c, WsfStage stop);
/* 1 if NAME is a pass name, "all", or a comma list of them. */
int passes_valid_dump_list(const char *list);

int pass_expand(Comp *c);
int pass_views(Comp *c);
int pass_lower(Comp *c);
int pass_circular_buffer(Comp *c);
int pass_warp_specialize(Comp *c);
int pass_sync(Comp *c);

/*
 * lower.c: a kernel family's lowering rules (lower_FAMILY.c), reached through
 * lower_family(), not through tests of the family.
 */
typedef struct LowerFamily {
	int (*lower)(Comp *c, Fusion *f);   /* makes c->kernel as pass_lower promises; 0 or -1 */
	const char *stage_advice;            /* circular_buffer.c's advice when one stage does not fit */
	/*
	 * The register-spill retry (NULL: none): spill_check says c->kernel must
	 * go through ptxas whatever stage was asked, to see whether it spills;
	 * if it did, spill_retry records how to lower it next (Comp.row_fallback)
	 * and plans the fusion again under it (Fusion.row), and the compile
	 * driver runs the kernel passes again.
	 */
	bool (*spill_check)(const Comp *c);
	void (*spill_retry)(Comp *c);
} LowerFamily;

extern const LowerFamily lower_pointwise_family, lower_reduction_family, lower_matmul_family;
/* Family F's rules; FAM_NONE's (no schedule ran) is an internal error. */
const LowerFamily *lower_family(Family f);
/*
 * schedule.c's planner of the matmul family (schedule_matmul.c): F's groups
 * of matmuls, checked and planned (Fusion.mm); NULL after an error.
 */
const MatmulSchedule *schedule_matmul(Comp *c, const Fusion *f);
/*
 * schedule_row.c: the row-reduction family's planner.  plan_row plans
 * reduction fusion F under spill fallback FB into *OUT from the fusion and
 * its schedule alone (no IR, no Kernel, no diagnostics): 0, or -1 with
 * only OUT's views, domain and width set when the row width is unbound or
 * wider than ROW_MAX_WIDTH (lowering refuses it).  schedule_row: F's plan
 * under Comp.row_fallback (Fusion.row); the schedule pass calls it, and the
 * family's spill retry after it sets Comp.row_fallback.
 */
int plan_row(Comp *c, const Fusion *f, RowFallback fb, RowSchedule *out);
const RowSchedule *schedule_row(Comp *c, const Fusion *f);
/* A streamed row's chunk (RowPlan.chunk); the widest row a reduction kernel takes (its chunk index an int). */
enum { ROW_CHUNK_COLS = 4096, ROW_MAX_WIDTH = INT32_MAX - ROW_CHUNK_COLS };
/*
 * The schedules a measured choice (option tune) times for matmul fusion F,
 * at most MAX into OUT: F's own first, then each with one more hint that F
 * leaves to the scheduler (a tile, a cluster, a K split, swap_ab off).
 * Some may not compile (the caller skips those) or compile to the same
 * kernel.  Only F's own for other families, and for kernels that signal or
 * wait, whose launches are not theirs to repeat.  Returns the count (with
 * OUT NULL, only that).
 */
int plan_matmul_candidates(const Fusion *f, Schedule *out, int max);

enum {
	LOWER_THREADS = 256,            /* compute threads per CTA */
	LOWER_SMEM_BUDGET = 200 * 1024, /* dynamic shared memory the passes may use */
	LOWER_SMEM_TARGET = 56 * 1024   /* by default: room for four CTAs per SM (docs/perf.md) */
};

/*
 * lower_bcast.c: how input T broadcasts over domain D (rank 2 or more) when
 * no 2-D view holds it: VIEW_ROW_AT (its last dim the domain's), VIEW_COL_AT
 * (1), or VIEW_NONE (more dims than D, or a dim neither 1 nor D's).
 */
View lower_bcast_view(const Tensor *t, const Tensor *d);
/* Sets param P's offset (KParam.at) over domain D, adding the size params it reads; after lower_size_params. */
void lower_bcast_at(Comp *c, Kernel *k, int p, const Tensor *d);
/*
 * views.c: view tensor T (a chain of views from a fusion input; the input
 * itself too) as strides and an offset, in elements, over that input's
 * contiguous layout: true, or false with *WHY saying why it is not one
 * (a cat, a pad, a view of a computed value, a reshape that would copy, an
 * unbound inner size).  A stride of 0 is a broadcast (expand).
 */
typedef struct Stride {
	int64_t k;                 /* K times the sizes SYM (fusion syms), in elements */
	int nsym, sym[MAX_RANK];
} Stride;
typedef struct Strided {
	int input;                 /* the fusion input (tensor) whose memory the view reads */
	int noff;                  /* element [0, ..., 0] is at the sum of OFF */
	Stride off[MAX_RANK];
	int rank;
	Dim ext[MAX_RANK];
	Stride stride[MAX_RANK];
	bool bounded;              /* a pad's: memory only where LO <= i_d < HI on every dim, FILL elsewhere; */
	int64_t lo[MAX_RANK], hi[MAX_RANK];
	int64_t div[MAX_RANK], mod[MAX_RANK];   /*   where MOD > 0, LO <= (i_d / DIV) % MOD < HI (a reshape merged it) */
	double fill;
	int index;                 /* index_select, gather: the index input whose values give the position */
	int index_dim;             /*   along this dim (whose STRIDE is 0: the position's is INDEX_STRIDE) */
	bool gather;               /*   the index is of the view's shape (gather), or 1-D along the dim */
	Stride index_stride;
} Strided;
bool stride_equal(Stride a, Stride b);
bool view_strided(Comp *c, const Fusion *f, int t, Strided *s, const char **why);
/* Does a kernel read T as a value: an op that is not a view (or a placed cat or pad) reads it, or an output? */
bool view_read_by_compute(const Fusion *f, int t);
/* Is T a value the kernel has: computed by an op that is not a view, or read as a value (not a view's source alone)? */
bool view_used(const Fusion *f, int t);
/* Is O an output's scatter written in place into its input (fusion_scatter)? */
bool view_in_place(const Fusion *f, const Op *o);
/* Do strided view S's offset and strides (but the last) keep its rows of DT 16-byte aligned?  A product with
 * its input's last dim, a size, counts: a launch holds the input's rows to 16 bytes (VIEW_ROW_AT). */
bool view_aligned16(const Fusion *f, const Strided *s, Dtype dt);
/* Is stride X of DT elements in view S's input a multiple of 16 bytes (view_aligned16's rule for one stride)? */
bool view_stride16(const Fusion *f, const Strided *s, Stride x, Dtype dt);
/* Can a row-reduction kernel read strided view S of DT: rows of 16-byte loads at an offset, or one element a row? */
bool view_rows_take(const Fusion *f, const Strided *s, Dtype dt);
/*
 * lower_bcast.c: param P reads strided view S over domain D: KParam.at, the
 * offset of the domain row's first element (S's dims lined up with D's from
 * the right; a dim of 1 is a stride of 0), and KParam.step, the stride along
 * the columns.  Domain dims must be numbers where S's stride is not 0.
 */
void lower_strided_at(Comp *c, Kernel *k, int p, const Tensor *d, const Strided *s);
/*
 * lower_bcast.c: view S of param P takes its position along one dim from an
 * index input (index_select, gather): lower_index_param adds a param of the
 * index's memory (VIEW_NONE: no value of its own) and P's KBounds naming it,
 * and returns whether each row reads one index element and the position's
 * stride keeps rows 16-byte aligned; lower_index_at, once the sizes are
 * params, gives the index param its at and step (the index element an
 * element of the view reads: index_select's 1-D index at the view's
 * position along the dim, gather's of the view's shape at the element) and
 * the position's stride.
 */
bool lower_index_param(Comp *c, Kernel *k, int p, const Strided *s);
/* lower_bcast.c: a pointer param for tensor T (its name) that reads input IN's memory: a view of it, or IN itself. */
int lower_input_ptr(Comp *c, Kernel *k, int in, int t);
void lower_index_at(Comp *c, Kernel *k, const Tensor *d, const KParam *p, const Strided *s);
/* lower_bcast.c: stride X as an expression (its number times its sizes' runtime extents). */
Expr *lower_stride_expr(Comp *c, Kernel *k, const Tensor *d, Stride x);
/* lower_bcast.c: extent D of domain DOM at run time: a constant, the cols param, or a size param of its variable
   (added on first use). */
Expr *lower_extent(Comp *c, Kernel *k, const Tensor *dom, Dim d);
/* lower_bcast.c: the domain row's index along domain dim DIM (before the last): (row / inner dims) % extent. */
Expr *lower_row_digit(Comp *c, Kernel *k, const Tensor *d, int dim);
/*
 * lower_reduce_grid.c: a pointwise kernel's reductions over rows or over
 * every element.  lower_reduce_plan: PointwisePlan.reduce (RED_NONE: no
 * reduction) and what it reads, the reductions' input in *DOMAIN; 0 or -1.
 * lower_reduce_params: the workspace's params.  lower_reduce_loop: the
 * loop over the CTA's items (for lower_tile_loop's), LAST true at an item's
 * last tile; lower_reduce_finish: the item's reduction there, in LOOP.
 */
int lower_reduce_plan(Comp *c, Kernel *k, const Fusion *f, int *domain);
void lower_reduce_params(Comp *c, Kernel *k);
/* lower_reduce_tile: a group of fewer rows than the tile's (known now) takes tiles as tall as it, to a power of 2. */
void lower_reduce_tile(Kernel *k);
Stmt *lower_reduce_loop(Comp *c, Kernel *k, Expr **row0, Expr **col0, Expr **last);
void lower_reduce_finish(Comp *c, Kernel *k, Stmt *loop, Expr *last);
/* What the families share (lower.c). */
bool lower_same_shape(const Tensor *a, const Tensor *b);
/* Appends `NAME = E` to BLOCK: a new variable of K. */
Stmt *lower_let(Comp *c, Kernel *k, const char *name, Expr *e, Stmt *block);
/* The two runtime extents of the 2-D view, as parameters. */
void lower_size_params(Comp *c, Kernel *k);
/*
 * Stages input param J: a tile buffer of ROWS x COLS named KIND_NAME (tile_x,
 * row_x, chunk_x: a prefix of codegen/emit.c's table), an elected load of it
 * at (ROW, COL) appended to ISSUE, and COMPUTE reading the buffer.  Returns
 * the buffer.
 */
int lower_stage_input(Comp *c, Kernel *k, int j, const char *kind, int rows, int cols, Expr *row, Expr *col,
                      Stmt *issue, Stmt *compute);
/*
 * Output param J leaves through a staging buffer of COPIES copies of rows x
 * cols: COMPUTE writes copy COUNTER % COPIES, and a TMA store of it to (ROW,
 * COL) is appended to STORE (an elected block).  Returns the buffer.
 */
int lower_stage_output(Comp *c, Kernel *k, int j, int rows, int cols, int copies, Expr *counter, Expr *row, Expr *col,
                       Stmt *compute, Stmt *store);
/*
 * The loop over this CTA's tiles of tile_rows x tile_cols, appended to the
 * body, and its tile's coordinates; WHOLE_ROWS: a tile is one row.
 */
Stmt *lower_tile_loop(Comp *c, Kernel *k, bool whole_rows, Expr **row0, Expr **col0);
/* The epoch param (SZ_EPOCH), added on first use; its index. */
int lower_epoch(Comp *c, Kernel *k);
/*
 * The flag word of the tile at (ROW0, COL0) of batch BT (NULL: none; BATCH_TILES
 * tiles a batch): row-major over [batch, row tiles, col tiles] of CTA tiles.
 */
Expr *lower_flag_index(Comp *c, const Kernel *k, Expr *row0, Expr *col0, Expr *bt, Expr *batch_tiles);
/* The tile loop's unit of work, a CTA or in clusters a cluster: LEAF (EX_CTA or EX_NCTA) in those units. */
Expr *lower_unit(Comp *c, const Kernel *k, int leaf);
/* In clusters (MatmulPlan.cluster): this CTA's first row (AXIS 0) or column (1) in cluster tile row or column AT. */
Expr *lower_rank_at(Comp *c, const Kernel *k, Expr *at, int axis);
/*
 * A cluster of cm x cn CTAs that share operands, each group of them a
 * K-split rank (KSumSize.splits): rank = split rank x cm cn + place.  This
 * CTA's place among those it shares operands with, and its split rank.
 */
Expr *lower_share_rank(Comp *c, const Kernel *k);
Expr *lower_split_rank(Comp *c, const Kernel *k);
/*
 * Errors for the hints FAMILY (its name in messages) cannot honour; ROWS:
 * a tile is a row, whose tile and stores are the compiler's.  0 or -1.
 */
int lower_refuse_hints(Comp *c, const Fusion *f, const char *family, bool rows);
/*
 * signal: per_tile on the tile loop LOOP, whose tile is at (ROW0, COL0)
 * (batch BT of BATCH_TILES tiles, or NULL): the flags and epoch params (or
 * the consumer role), and the signals of each output tile once stored
 * (lower.c says where).  KLOOP: a matmul's first k loop in LOOP, of KTILES
 * steps, in which the tile before is signalled to a consumer role; NULL: at
 * the end of LOOP.
 */
void lower_signal(Comp *c, Kernel *k, Stmt *loop, Expr *row0, Expr *col0, Expr *bt, Expr *batch_tiles, Stmt *kloop,
                  Expr *ktiles);

/* circular_buffer.c helpers the later passes share */
/* Is there a TMA load in S? */
bool kir_has_load(const Stmt *s);
/* Removes load statements (and expect_tx, and ifs left empty) from S. */
void cb_strip_loads(Stmt *s);
/* A copy of the load-issuing statements of LOOP's body (the ifs around loads). */
Stmt *cb_load_slice(Comp *c, const Stmt *loop);
/*
 * The shared memory K takes with S copies of each tile buffer LOOP loads
 * into (every tile buffer when LOOP is NULL) and a full and an empty
 * mbarrier a stage; leaves those buffers at S copies.  The stage choice
 * counts with it, and lowering sizes its tiles with it.
 */
int64_t cb_smem_at(Kernel *k, const Stmt *loop, int stages);
/*
 * warp_specialize.c: a copy of what LOOP needs to issue its loads: the loads
 * and expect_tx, the ifs and loops around them, the lets their expressions use.
 */
Stmt *ws_load_slice(Comp *c, const Kernel *k, const Stmt *loop);
/*
 * warp_specialize.c: turns every CTA-wide barrier inside a role (ROLE: the
 * enclosing ST_ROLE's role, 0 outside roles) into the role's named barrier
 * sized to its threads; __syncthreads there would deadlock.
 */
void ws_name_barriers(Comp *c, const Kernel *k, Stmt *s, int role);
/*
 * warp_specialize.c: where the epilogue inputs the staging copies carry
 * (KBuf.preload) are loaded: the consumers' tile loop, its k loop, its
 * epilogue loop of whole subtiles, that loop's compute and elected store.
 * 1 with AT set, 0 when no staging copy carries one, -1 on an internal error.
 */
typedef struct PreloadAt {
	Stmt *tile, *kloop, *eloop, *compute, *store;
} PreloadAt;
int preload_at(Comp *c, const Kernel *k, PreloadAt *at);
int pass_infer(Comp *c);
/* "sum over axis 0 of 'x'": reduction O as written (through the permute infer put in front of it) */
const char *reduce_what(Comp *c, const Fusion *f, const Op *o);
int pass_schedule(Comp *c);
/* grad.c: c->fusion (expanded, inferred) becomes its backward, inferred; the contract atop grad.c. */
int pass_grad(Comp *c);

#endif
