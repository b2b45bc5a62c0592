/*
 * plan_matmul.c: the matmul family's decisions, taken by the schedule pass
 * (schedule_matmul.c) before any IR is built: the groups of matmuls
 * (the_matmuls), whether to swap A and B, the tile, the consumers' order,
 * the cluster, a K split, the roles' registers, into one MatmulPlan
 * (plan_matmul; Fusion.mm's, which lowering copies into Kernel.mm); and the schedules a
 * measured choice times (plan_matmul_candidates).  Requires a fusion of
 * the matmul family with its sizes; leaves the plan, and builds no IR (the
 * cost model reads the spec's sizes alone).  Which features combine is
 * one table, not_with, checked in one place (plan_refuse) for swap_ab,
 * ping-pong, clusters, K splits and stream-K; which defaults a plan rules
 * out another, rules_out.  The tuned constants are matmul.h's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/* What a plan holds that may rule out a default: a hint, a feature of the fusion, or an earlier decision. */
enum {
	PF_TILE_HINT = 1 << 0, PF_CONSUMERS_HINT = 1 << 1, PF_STAGES_HINT = 1 << 2, PF_SPLIT_HINT = 1 << 3,
	PF_CLUSTER_HINT = 1 << 4, PF_SWAP_HINT = 1 << 5, PF_SK_HINT = 1 << 6,
	PF_SIGNAL = 1 << 7,            /* signal: per_tile */
	PF_CONSUMER_ROLE = 1 << 8,     /* a signal consumer role */
	PF_WAITS = 1 << 9,             /* an input or output that waits per tile */
	PF_NOT_PERSISTENT = 1 << 10,   /* persistent: false */
	PF_INDEPENDENT = 1 << 11,      /* matmuls with no A in common */
	PF_GROUP = 1 << 12,            /* matmuls that share A */
	PF_BATCHED = 1 << 13,
	PF_SWAPPED = 1 << 14,
	PF_PINGPONG = 1 << 15,
	PF_SPLIT = 1 << 16,            /* a K split */
	PF_STREAM_K = 1 << 17,
	PF_CLUSTER = 1 << 18,          /* more than one CTA a cluster, a split's included */
	PF_A_MN_MAJOR = 1 << 19,       /* the first matmul reads A M-major (transpose_a) */
	PF_CLUSTER_ASKED = 1 << 20,    /* a cluster hint of more than one CTA */
	PF_SHARE = 1 << 21,            /* clusters that share an operand, but stream-K's own fractions' */
	PF_EPI_BCAST = 1 << 22         /* an epilogue input broadcast along a leading dim (lower_bcast_view) */
};

/*
 * What each feature a matmul may ask for is not built with yet, in the
 * order its refusal names them: the one table of which features combine
 * (plan_refuse).  A row's WITH bits refuse the feature, in its words WHY
 * (and THEN, the message's end); FMT is the refusal, at the hint.
 */
typedef struct NotWith {
	unsigned with;
	const char *why, *then;
} NotWith;

static const struct {
	const char *fmt;
	NotWith no[9];
} not_with[] = {
	[ASK_SWAP] = {"swap_ab %s is not implemented yet%s", {
		{PF_INDEPENDENT | PF_GROUP, "with several matmuls in one kernel", ""},
		{PF_A_MN_MAJOR, "with A read M-major (transpose_a)", ": its tile would be whole 64-wide chunks of M"},
		{PF_BATCHED, "for a batched matmul", ""},
		{PF_CLUSTER_ASKED, "in clusters", ""},
		{PF_SIGNAL, "with 'signal: per_tile'", ""},
		{PF_WAITS, "with an input or output that waits per tile", ""},
		{PF_EPI_BCAST, "with an epilogue input broadcast along a leading dim", ""}}},
	[ASK_PINGPONG] = {"consumers: pingpong %s is not implemented yet%s", {
		{PF_INDEPENDENT, "with independent matmuls in one kernel", ""}}},
	[ASK_CLUSTER] = {"'cluster' with %s is not implemented yet%s", {
		{PF_SIGNAL, "'signal: per_tile'", ": a cluster's second tile may lie past the output, with no flag"},
		{PF_WAITS, "an input or output that waits per tile",
		 ": a cluster's second tile may lie past the output, with no flag"}}},
	[ASK_SPLIT] = {"split_k %s is not implemented yet%s", {
		{PF_INDEPENDENT, "with independent matmuls in one kernel", ""},
		{PF_SIGNAL, "with 'signal: per_tile'", ""},
		{PF_WAITS, "with an input or output that waits per tile", ""}}},
	[ASK_STREAM_K] = {"stream_k %s is not implemented yet%s", {
		{PF_NOT_PERSISTENT, "with one CTA a tile (persistent: false)", ""},
		{PF_INDEPENDENT, "with independent matmuls in one kernel", ""},
		{PF_SWAPPED, "on a swapped matmul (swap_ab)", ""},
		{PF_PINGPONG, "with ping-pong consumers", ""},
		{PF_SHARE, "in clusters that share an operand", ""},
		{PF_SPLIT, "with split_k", ""},
		{PF_SIGNAL, "with 'signal: per_tile'", ""},
		{PF_WAITS, "with an input or output that waits per tile", ""}}},
};

/* Each default, and what rules it out: the one table of what the defaults combine with. */
static const unsigned rules_out[] = {
	[PD_GROUP_PINGPONG] = PF_TILE_HINT | PF_CONSUMERS_HINT | PF_STAGES_HINT | PF_SWAP_HINT | PF_SPLIT_HINT |
	                      PF_CLUSTER_HINT | PF_SIGNAL | PF_CONSUMER_ROLE | PF_WAITS | PF_INDEPENDENT,
	[PD_LONG_K_STREAM] = PF_SK_HINT | PF_TILE_HINT | PF_CONSUMERS_HINT | PF_CLUSTER_HINT | PF_SPLIT_HINT |
	                     PF_SWAP_HINT | PF_SIGNAL | PF_CONSUMER_ROLE | PF_NOT_PERSISTENT | PF_STAGES_HINT | PF_WAITS |
	                     PF_INDEPENDENT | PF_GROUP | PF_BATCHED,
	[PD_ROW_CLUSTER] = PF_CLUSTER_HINT | PF_TILE_HINT | PF_CONSUMERS_HINT | PF_STAGES_HINT | PF_SPLIT_HINT |
	                   PF_STREAM_K | PF_SIGNAL | PF_CONSUMER_ROLE | PF_WAITS | PF_INDEPENDENT | PF_GROUP | PF_BATCHED |
	                   PF_SWAPPED | PF_PINGPONG | PF_SPLIT,
	[PD_MISALIGNED_CLUSTER] = PF_CLUSTER_HINT | PF_INDEPENDENT | PF_BATCHED | PF_SWAPPED | PF_SPLIT | PF_STREAM_K |
	                          PF_SIGNAL | PF_CONSUMER_ROLE | PF_WAITS | PF_CLUSTER,
	[PD_FEW_TILE_SPLIT] = PF_TILE_HINT | PF_CONSUMERS_HINT | PF_CONSUMER_ROLE | PF_STREAM_K | PF_GROUP | PF_PINGPONG,
};

static bool epilogue_bcast(const Fusion *f, const Tensor *d);

/* What plan P of F's NG groups G holds so far, as PF_ bits. */
static unsigned
plan_holds(const Fusion *f, const MatmulPlan *p, const Group *g, int ng)
{
	const Schedule *h = &f->sched;

	return (h->ntile ? PF_TILE_HINT : 0) | (h->consumers ? PF_CONSUMERS_HINT : 0) |
	       (h->stages ? PF_STAGES_HINT : 0) | (h->split_pos.line ? PF_SPLIT_HINT : 0) |
	       (h->cluster_pos.line ? PF_CLUSTER_HINT : 0) | (h->swap_pos.line ? PF_SWAP_HINT : 0) |
	       (h->sk_pos.line ? PF_SK_HINT : 0) | (h->signal ? PF_SIGNAL : 0) |
	       (h->consumer_pos.line ? PF_CONSUMER_ROLE : 0) | (fusion_waits(f) ? PF_WAITS : 0) |
	       (h->persistent == 1 ? PF_NOT_PERSISTENT : 0) | (ng != 1 ? PF_INDEPENDENT : 0) |
	       (g->n != 1 ? PF_GROUP : 0) | (p->batched ? PF_BATCHED : 0) | (p->swap_ab ? PF_SWAPPED : 0) |
	       (p->pingpong ? PF_PINGPONG : 0) | (p->ksize.splits > 1 ? PF_SPLIT : 0) | (p->ksize.sk_parts ? PF_STREAM_K : 0) |
	       (plan_cluster_ctas(p) > 1 ? PF_CLUSTER : 0) | (p->akm ? 0 : PF_A_MN_MAJOR) |
	       (h->cluster_pos.line && h->cluster[0] * h->cluster[1] > 1 ? PF_CLUSTER_ASKED : 0) |
	       (p->cluster[0] * p->cluster[1] > 1 && !p->sk_scatter ? PF_SHARE : 0) |
	       (epilogue_bcast(f, &f->tensor[f->op[g[0].mm[0]].out]) ? PF_EPI_BCAST : 0);
}

int
plan_refuse(Comp *c, Pos pos, const Fusion *f, const MatmulPlan *p, const Group *g, int ng, Asked a, bool ask)
{
	unsigned holds = plan_holds(f, p, g, ng);
	const NotWith *n;

	for (n = not_with[a].no; n->with; n++)
		if (holds & n->with)
			return ask ? unbuilt(c, pos, not_with[a].fmt, n->why, n->then) : 1;
	return 0;
}

/* Does what plan P holds so far rule out default D (rules_out)? */
bool
plan_rules_out(const Fusion *f, const MatmulPlan *p, const Group *g, int ng, PlanDefault d)
{
	return (plan_holds(f, p, g, ng) & rules_out[d]) != 0;
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
int
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
 * The view of an epilogue input over the output [..., M, N], or VIEW_NONE:
 * a scalar, a row [N] (or [1, N]), a column [..., M, 1] or the full
 * [..., M, N] (the leading dims those of the output, which the kernel sees
 * as rows).
 */
View
epilogue_view(const Tensor *t, const Tensor *d)
{
	int i, r = d->rank, ones = 0;

	while (ones < t->rank && dim_is_one(t->dim[ones]))
		ones++;
	if (ones == t->rank)   /* [], [1], [1, 1] */
		return VIEW_SCALAR;
	if (ones == t->rank - 1 && t->rank <= r && dim_equal(t->dim[ones], d->dim[r - 1]))   /* [N], [1, N] */
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
 * before the last together: a decode step's tokens)?  Then a single
 * matmul without a hint takes ping-pong's 64-row tiles by default: a
 * 128-row tile would compute at least half its rows for nothing
 * (docs/perf_history.md).
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
int64_t
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
bool
rows_aligned(const Fusion *f, int mm)
{
	int64_t a = row_bytes(f, &f->tensor[f->op[mm].in[0].tensor]), b = row_bytes(f, &f->tensor[f->op[mm].in[1].tensor]);

	return a > 0 && a % 128 == 0 && b > 0 && b % 128 == 0;
}

/* Output D's rows at its compile-time sizes (its dims before the last together); 0 when unknown or past 2^63. */
int64_t
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

/* Does an epilogue input broadcast along a leading dim of output D (lower_bcast_view)? */
static bool
epilogue_bcast(const Fusion *f, const Tensor *d)
{
	int i;

	for (i = 0; i < f->ninput; i++) {
		const Tensor *x = &f->tensor[f->input[i]];

		if (!x->unread && epilogue_view(x, d) == VIEW_NONE && lower_bcast_view(x, d) != VIEW_NONE)
			return true;
	}
	return false;
}

/*
 * The default cooperative tile whose last wave leaves fewer SMs idle (2048
 * x 1280 x 8192: 80 tiles of 128 x 256 fill 61% of 132 SMs, 128 of 128 x
 * 160 fill them).  A tile computes at its own rate a multiply-add (RATE,
 * per mille of 128 x 256's).  A tile's cost is its waves times its area /
 * RATE, in hundredths of a wave: a lone partial wave costs a whole one; a
 * partial wave after full ones LAST_WAVE, plus the rest of a wave in
 * proportion to its tiles (its SMs run faster while the others idle).
 * Another tile must save GAIN % of 128 x 256's cost.  RATE, LAST_WAVE and
 * GAIN were fitted to measurements: docs/perf_history.md.  Its N is a
 * whole multiple of STEP (choose_tile's: an N-major B takes 256 or 192).
 * The 256-row tile only where TALL (each consumer thread holds 160
 * accumulators: ptxas spilled an epilogue that adds a residual, one of two
 * independent matmuls, and at 256 x 192 gelu's epilogue and an M-major
 * A's).  Sets *BM and *BN.
 */
void
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
bool
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
void
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
 * The tile: the hint [M, N, K] checked against what the mma and TMA take,
 * or the default.  Without a hint, N halves (256, 128, 64) while the
 * output D at its compile-time sizes still has at most TILE_TARGET tiles
 * (one wave) after halving: a small GEMM then spreads over the SMs instead
 * of leaving most of them idle; narrower tiles that would take a second
 * wave lose (docs/perf_history.md).  Where N stays 256, the tile that
 * fills the last wave best (fill_waves).  A kernel with a signal consumer
 * role keeps 256; clusters along M of an N-major B (matmul MM) stop at
 * 128.  TALL: a 256-row tile may be chosen.  Sets *ALONG_ROWS where the
 * tiles should go in order along each row of tiles (MatmulPlan.raster_rows).
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
		 * A tile of 128 rows whose tiles fit one wave narrows to
		 * the least multiple of 16 (whole subtiles of a K-major B:
		 * 32 columns, or 16) from WAVE_N up whose tiles still do:
		 * the wave's time is its tile's.  Where the output is
		 * taller than wide, the wave's tiles go in order along
		 * each row of tiles (along_rows), so that CTAs started
		 * together share A, the larger operand; each order lost on
		 * the other outputs (docs/perf_history.md).  Not on one
		 * row of tiles, where row_cluster's clusters share A, nor
		 * of operands whose rows are not 128-byte aligned, where
		 * misaligned_cluster's pairs along N would take a second
		 * wave (1536 x 1024: 72 clusters of 192 columns, 144
		 * CTAs), nor where 128 x 64 already fits.
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
choose_swap(Comp *c, const Fusion *f, const Tensor *d, const Group *g, int ng, MatmulPlan *p)
{
	const Schedule *h = &f->sched;
	bool ask = h->swap_ab == 2;
	int no;

	p->swap_ab = false;
	if (h->swap_ab == 1 || (!ask && (h->ntile || h->consumers || !few_rows(f, d))))
		return 0;
	if ((no = plan_refuse(c, h->swap_pos, f, p, g, ng, ASK_SWAP, ask)) < 0)
		return -1;
	p->swap_ab = !no;
	return 0;
}

/*
 * The tile of a swapped matmul (choose_swap): [rows, cols, 64], rows the
 * hint's or the output's rows at its compile-time sizes rounded up to 8,
 * at most 64; cols 64, one ping-pong warpgroup's (*PINGPONG), or 128, 64 a
 * cooperative warpgroup.  Without a hint, 128 when the output still has a
 * wave of such tiles (TILE_TARGET) at its compile-time sizes: then a stage
 * holds twice B's rows for the same slice of A, as cuBLAS's 128 x 16 tile
 * for 16 x 28672 x 4096 does.
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

/* Does an op of F read tensor T? */
bool
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
choose_cluster(Comp *c, const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Op *op)
{
	const Schedule *h = &f->sched;
	int x = h->cluster[0], y = h->cluster[1], i;

	/*
	 * Without a hint, one CTA: clusters of two did not pay on the
	 * large shapes (docs/perf_history.md).
	 */
	if (!h->cluster_pos.line)
		return 0;
	if (x * y == 1)
		return 0;
	if (x * y > MAX_CLUSTER)
		return unbuilt(c, h->cluster_pos, "a matmul cluster of %d x %d CTAs is not implemented yet: at most %d "
		               "CTAs (the portable cluster size), such as [2, 1], [1, 4] or [2, 4]", x, y, MAX_CLUSTER);
	if (plan_refuse(c, h->cluster_pos, f, p, g, ng, ASK_CLUSTER, true) < 0)
		return -1;
	for (i = 0; i < 2; i++) {   /* B, shared by the x CTAs of a tile column; A, by the y of a row */
		int share = i ? y : x, rows = i ? p->bm : p->bn, atom = (i ? p->akm : p->bkm) ? 8 : CHUNK;

		if (share > 1 && (rows % share || rows / share % atom))
			return unbuilt(c, h->cluster_pos, "cluster [%d, %d] shares %s among %d CTAs, each %d of its %d rows, "
			               "not a multiple of %d (matmul '%s' reads it %s-major); use a wider tile or fewer "
			               "CTAs along %s", x, y, i ? "A" : "B", share, rows / share, rows, atom,
			               f->tensor[op->out].name, atom == 8 ? "K" : i ? "M" : "N", i ? "N" : "M");
	}
	p->cluster[0] = x;
	p->cluster[1] = y;
	return 0;
}

/*
 * Without a hint, a GEMM of one ragged row of 128-row tiles, 65 to 112
 * rows (fewer are swapped), whose ROW_TILES to 4 x RESIDENT_4 tiles stream
 * a long K (ROW_STEPS k-steps or more) runs in clusters of four tiles
 * along N that share A, as cuBLAS runs few-row GEMMs.  Each CTA loads a
 * quarter of A's rows and multicasts them, so the part of A's box that
 * lies past M, which TMA fills with zeros at the cost of a read, is one
 * CTA's quarter instead of every CTA's last rows, and L2 serves A's slice
 * once for four tiles.  Measurements, and the shapes it lost on:
 * docs/perf_history.md.  Only the default cooperative tile of a K-major
 * A, one matmul, no hint that bears on the tile or the cluster, nothing
 * that waits or signals.
 */
static void
row_cluster(const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Tensor *a, const Tensor *d)
{
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]), tiles;
	int64_t K = dim_value(f, a->dim[a->rank - 1]);

	if (plan_rules_out(f, p, g, ng, PD_ROW_CLUSTER) || p->bm != BM || !p->akm || rows <= 0 || rows > BM - ROW_PAST ||
	    cols <= 0 || K <= 0)
		return;
	tiles = (cols + p->bn - 1) / p->bn;
	if (tiles < ROW_TILES || tiles > (int64_t)ROW_CLUSTER * RESIDENT_4 || (K + p->bk - 1) / p->bk < ROW_STEPS)
		return;
	p->cluster[1] = ROW_CLUSTER;
}

/* A consumer thread's accumulator registers: the widest group's tile, over the threads that compute it. */
static int
acc_regs(const MatmulPlan *p, const Group *g, int ng)
{
	int i, n = 0;

	for (i = 0; i < ng; i++)
		if (g[i].n > n)
			n = g[i].n;
	return n * p->bm * p->bn / (p->pingpong ? 128 : 256);
}

/*
 * The roles' registers (setmaxnreg).  A signal consumer role shares the
 * producer's warpgroup and needs more than copies do.  A producer that
 * multicasts a shared operand's part in a cluster keeps its rank's offsets
 * besides the tile's coordinates, and ptxas spilled it at 40 registers
 * (4-24 bytes: 8192 x 8192 x 8120, SwiGLU and QKV over K = 264 or 2040);
 * at 56 none spilled, where the consumers' 224 hold the accumulators
 * (SHARE_ACC; 192 spilled).  Else 40 and 232, CUTLASS's: over SHARE_ACC
 * the producer spills 4 bytes, and dropping the cluster instead cost SwiGLU
 * a third (docs/perf.md); tests/spill_grid.py names this exception.
 */
static void
choose_regs(const Fusion *f, MatmulPlan *p, const Group *g, int ng)
{
	p->producer_regs = PRODUCER_REGS;
	p->consumer_regs = CONSUMER_REGS;
	if (f->sched.consumer_pos.line) {
		p->producer_regs = SIGNAL_PRODUCER_REGS;
		p->consumer_regs = SIGNAL_CONSUMER_REGS;
	} else if (p->cluster[0] * p->cluster[1] > 1 && acc_regs(p, g, ng) <= SHARE_ACC) {
		p->producer_regs = SHARE_PRODUCER_REGS;
		p->consumer_regs = SHARE_CONSUMER_REGS;
	}
}

/*
 * Without a cluster hint, an operand whose rows do not start 128-byte
 * aligned at the spec's sizes (bf16 K = 4040: rows of 8080 bytes) runs in
 * a cluster of two that shares it: each 128-byte row of such a box spans
 * two lines of L2, and the kernel ran at half the rate of an aligned K
 * (docs/perf_history.md).  Sharing the operand with more rows in the tile
 * halves the box rows each SM asks of L2 (cluster [2, 1] shares B, [1, 2]
 * A); the other operand, if misaligned too, when the first's half would
 * not be whole 64-wide chunks (sharing an aligned operand would spare no
 * misaligned row).  Only where a hint's cluster would build: one CTA a
 * tile, neither swapped, split, stream-K, batched, signalled nor waiting
 * (SwiGLU's ping-pong tiles too, whose producer then spills 4 bytes:
 * choose_regs).  The choice is made at the spec's sizes, like
 * the tile's; a kernel launched at another K keeps it.
 */
static void
misaligned_cluster(const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Tensor *a, const Tensor *b)
{
	int brows = g->n * p->bn, i;
	int64_t ra = row_bytes(f, a), rb = row_bytes(f, b);
	bool ma = ra > 0 && ra % 128 != 0, mb = rb > 0 && rb % 128 != 0;
	bool b_first = mb && (!ma || brows >= p->bm);   /* of the misaligned, the one with more rows */

	if (plan_rules_out(f, p, g, ng, PD_MISALIGNED_CLUSTER))
		return;
	for (i = 0; i < 2; i++) {
		bool share_b = i == 0 ? b_first : !b_first;

		if (!(share_b ? mb : ma))
			continue;
		/* each CTA loads half of each matmul's box: of an M- or N-major operand, whole 64-wide chunks */
		if (share_b ? !p->bkm && p->bn / 2 % CHUNK : !p->akm && p->bm / 2 % CHUNK)
			continue;
		p->cluster[0] = share_b ? 2 : 1;
		p->cluster[1] = share_b ? 1 : 2;
		return;
	}
}

/*
 * Do TILES clusters of S CTAs, one an SM, all run at once?  Not only a
 * question of SMs: a cluster's CTAs share a GPC, and an H200 holds 66
 * clusters of 2 (132 CTAs) but 39 of 3 (117), 30 of 4 (120) and 15 of 8
 * (120) (RESIDENT_*; a second wave of clusters: docs/perf_history.md).
 */
bool
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
 * (below), on ping-pong's 64-row tiles.  What a split is not built with
 * is not_with's (plan_refuse).  Sets P's ksize.splits (and its tile and
 * pingpong); 0 or -1.
 */
static int
choose_split(Comp *c, const Fusion *f, MatmulPlan *p, const Group *g, int ng, const Tensor *a, const Tensor *d)
{
	const Schedule *h = &f->sched;
	int64_t rows, cols = dim_value(f, d->dim[d->rank - 1]), K = dim_value(f, a->dim[a->rank - (p->akm ? 1 : 2)]);
	int64_t tiles, steps;
	int s, no = plan_refuse(c, h->split_pos, f, p, g, ng, ASK_SPLIT, h->split_k > 1), nb = ng == 1 ? g->n : 1, regs = (p->swap_ab ? p->bm : nb * p->bn) / 2 * p->row_blocks;
	int partial = CONSUMER_THREADS * regs * 4, stage = (p->bm + nb * p->bn) * p->bk * 2;
	int share = p->cluster[0] * p->cluster[1];   /* a hinted cluster's CTAs that share operands */

	if (no < 0)
		return -1;
	if (h->split_k > 1) {
		if (share * h->split_k > MAX_CLUSTER)
			return unbuilt(c, h->split_pos, "split_k %d in clusters of %d x %d CTAs makes clusters of %d CTAs, "
			               "which is not implemented yet: at most %d (the portable cluster size); split by at "
			               "most %d or share among fewer CTAs", h->split_k, p->cluster[0], p->cluster[1],
			               share * h->split_k, MAX_CLUSTER, MAX_CLUSTER / share);
		p->ksize.splits = h->split_k;
		return 0;
	}
	if (h->split_pos.line || no || p->batched || share > 1)
		return 0;
	rows = out_rows(f, d);
	if (rows <= 0 || cols <= 0 || K <= 0)
		return 0;
	tiles = grid_tiles(rows, cols, p->bm, p->bn);
	steps = (K + p->bk - 1) / p->bk;
	if (!p->swap_ab) {
		/*
		 * Unswapped, a GEMM of at most half a wave of 64 x 128
		 * tiles runs on ping-pong's 64-row tiles (a CTA has one:
		 * one warpgroup computes, the stages hold twice the
		 * k-steps of a 128-row tile's) 64 or 128 wide, the
		 * narrower whose tiles split by 2 to 4 still fit one wave
		 * (in_wave), each CTA keeping FEW_STEPS k-steps: cuBLAS's
		 * design for these shapes, more SMs loading less each
		 * (docs/perf_history.md).  Not with a hint that bears on
		 * it, nor with stream-K (cooperative only) or a signal
		 * consumer role (its 128 x 256 tile).
		 */
		int n;

		if (plan_rules_out(f, p, g, ng, PD_FEW_TILE_SPLIT) || p->bm != BM)
			return 0;
		for (n = CHUNK; n <= 2 * CHUNK && p->ksize.splits < 2; n *= 2)
			for (s = 2; s <= MAX_SPLIT && in_wave(grid_tiles(rows, cols, BM / 2, n), s) && steps / s >= FEW_STEPS; s++)
				p->ksize.splits = s, p->bm = BM / 2, p->bn = n, p->pingpong = true;
		return 0;
	}
	/* the partial sums must leave shared memory for the stages asked for (or 4) and the staging copies */
	if (partial + (h->stages > 4 ? h->stages : 4) * stage + SPLIT_STAGING > SMEM_BUDGET)
		return 0;
	for (s = 2; s <= MAX_SPLIT && in_wave(tiles, s) && steps / s >= SPLIT_STEPS; s++)
		p->ksize.splits = s;
	return 0;
}

/*
 * Do K's CTAs each take several whole tiles at the spec's sizes (more
 * tiles of the output D than TILE_TARGET, no stream-K runs, no K split)?
 * Then the producer's elected thread runs its loop nest alone
 * (MatmulPlan.elect_nest): with an elect() a k-step, the other lanes of its
 * warp ran on through the nest while it waited for a stage, and its next
 * load waited for them.  Where a CTA takes one tile or part of one, the
 * nest under one elect() ran slower for no cause found: those keep an
 * elect() a k-step (docs/perf_history.md).
 */
static bool
many_tiles(const Fusion *f, const Tensor *d, const MatmulPlan *p)
{
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]);

	return !p->ksize.sk_slot && p->ksize.splits <= 1 && rows > 0 && cols > 0 &&
	       grid_tiles(rows, cols, p->bm, p->bn) > TILE_TARGET;
}

/*
 * The default of two matmuls sharing A (SwiGLU's gate and up) on K-major
 * Bs, when the schedule leaves how to compute them open: ping-pong
 * warpgroups, each its own 128-row tile of GROUP_PP_N columns a matmul,
 * one wgmma of N = 192 (quack's 128 x 192 tile), so that one warpgroup's
 * epilogue (silu and the product) runs while the other's k loop does.
 * Under GROUP_PP_TILES tiles the cooperative tile stays, as it does with
 * any hint that bears on the choice, and with a residual to add, a bias
 * row or a column scale: ping-pong's 192 accumulator registers and theirs
 * spilled.  Measurements: docs/perf_history.md.
 */
static bool
group_pingpong(const Fusion *f, const MatmulPlan *p, const Group *g, int ng, const Tensor *d)
{
	int64_t rows = out_rows(f, d), cols = dim_value(f, d->dim[d->rank - 1]);
	int j;

	if (g->n != 2 || plan_rules_out(f, p, g, ng, PD_GROUP_PINGPONG) || epilogue_inputs(f, g, ng, d, false))
		return false;
	for (j = 0; j < g->n; j++)
		if (!f->op[g->mm[j]].transpose_b)
			return false;
	return rows > 0 && cols > 0 && grid_tiles(rows, cols, BM, GROUP_PP_N) >= GROUP_PP_TILES;
}

/* The CTAs of plan P's cluster, its K-split's ranks included (kernel_cluster_ctas). */
int
plan_cluster_ctas(const MatmulPlan *p)
{
	return p->cluster[0] * p->cluster[1] * p->ksize.splits;
}

/* How plan P's partial sums over K meet. */
static KSum
plan_ksum(const MatmulPlan *p)
{
	if (p->ksize.splits > 1)
		return p->split_scatter ? KSUM_SPLIT_SCATTER : KSUM_SPLIT_RANK0;
	if (p->ksize.sk_parts)
		return p->sk_scatter ? KSUM_SK_SCATTER : KSUM_SK_OWNER;
	return KSUM_NONE;
}

/*
 * The plan of matmul fusion F, whose matmuls are the NG groups G
 * (the_matmuls): swap, consumers, tile, stream-K parts, cluster, K split,
 * raster, registers.  Requires F scheduled, with its sizes; leaves P
 * whole and builds no IR.  Refuses a hinted combination not built yet, at
 * the hint; stream-K's are choose_stream_k's, which schedule_matmul asks
 * once it has checked the outputs.  0 or -1.
 */
int
plan_matmul(Comp *c, const Fusion *f, const Group *g, int ng, MatmulPlan *p)
{
	const Op *op = &f->op[g[0].mm[0]];
	const Tensor *a = &f->tensor[op->in[0].tensor], *b = &f->tensor[op->in[1].tensor], *d = &f->tensor[op->out];
	int j;

	*p = matmul_none;
	p->kmajor_b = true;
	p->akm = !op->transpose_a;
	p->bkm = op->transpose_b;
	p->batched = b->rank > 2 || (a->rank > 2 && op->transpose_a);   /* lower_matmul says why */
	p->persistent = f->sched.persistent != 1;   /* persistent: false runs one CTA a tile */
	p->group_pp = group_pingpong(f, p, g, ng, d);
	if (choose_swap(c, f, d, g, ng, p) < 0 ||
	    (p->swap_ab && swap_tile(c, f, d, &p->pingpong, &p->bm, &p->bn, &p->bk) < 0))
		return -1;
	if (!p->swap_ab)
		p->pingpong = f->sched.consumers == CONSUMERS_PINGPONG || p->group_pp ||
		              (!f->sched.consumers && !f->sched.ntile && ng == 1 && g[0].n == 1 && few_rows(f, d));
	p->waits = fusion_waits(f);
	if (p->pingpong && plan_refuse(c, f->sched.consumers_pos, f, p, g, ng, ASK_PINGPONG, true) < 0)
		return -1;
	if (f->sched.system && f->sched.consumer_pos.line && !f->sched.consumer_flags)
		return diag_error(c, f->sched.scope_pos, "'scope' applies to flags, and with 'consumer' the tiles are "
		                  "signalled to the kernel's own consumer role: leave out 'scope', or add 'flags: true' "
		                  "for the role to raise each tile's flag once it has written the tile");
	for (j = 0; j < g[0].n; j++)
		p->kmajor_b &= f->op[g[0].mm[j]].transpose_b;
	if (!p->swap_ab && choose_tile(c, f, d, p->pingpong, p->group_pp, g[0].mm[0], g[0].n, p->kmajor_b,
	                               ng == 1 && !epilogue_inputs(f, g, ng, d, true), &p->bm, &p->bn, &p->bk,
	                               &p->along_rows))
		return -1;
	if (f->sched.stream_k == 2)
		p->ksize.sk_parts = SK_PARTS;
	else if (!p->swap_ab && !p->pingpong)
		long_k_stream(f, p, g, ng, a, d);
	if (choose_cluster(c, f, p, g, ng, op) < 0)
		return -1;
	p->row_blocks = p->swap_ab ? 1 : p->bm / (p->pingpong ? 64 : 128);
	if (choose_split(c, f, p, g, ng, a, d) < 0)
		return -1;
	row_cluster(f, p, g, ng, a, d);
	misaligned_cluster(f, p, g, ng, a, b);
	if (p->along_rows && !p->ksize.sk_parts && plan_cluster_ctas(p) == 1)   /* a taller output's one wave (choose_tile) */
		p->raster_rows = true;
	/*
	 * A split's ranks share the epilogue's subtiles: rank 0 alone
	 * reading all the others' partials through distributed shared
	 * memory was bound by what one SM takes in (docs/perf_history.md),
	 * so each rank sums and stores its own share.  A swapped tile is
	 * one subtile: rank 0's.
	 */
	p->split_scatter = p->ksize.splits > 1 && !p->swap_ab;
	if (p->row_blocks > 1 && f->sched.consumer_pos.line)
		return unbuilt(c, f->sched.tile_pos, "a tile of %d rows with a signal consumer role is not implemented "
		               "yet: use %d rows", p->bm, p->bm / 2);
	if (p->ksize.sk_parts)   /* a consumer thread's accumulator registers, f32 */
		p->ksize.sk_slot = CONSUMER_THREADS * 4 * (g[0].n * p->bn / 2 * p->row_blocks);
	p->ksum = plan_ksum(p);
	choose_regs(f, p, g, ng);
	p->epi_cols = p->swap_ab ? p->bn : p->bn % EPI_COLS ? EPI_NARROW : EPI_COLS;
	p->stages_default = p->swap_ab ? SWAP_STAGES : 0;
	p->elect_nest = many_tiles(f, d, p);
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
plan_matmul_candidates(const Fusion *f, Schedule *out, int max)
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
