/*
 * test_lower_matmul_tiles.c: where a matmul's tiles go, lowered from a spec and
 * taken through every kernel pass: the stage counter's division in 32 bits, a
 * ragged last tile moved inside the output, clusters (pairs, grids, operand
 * rows that are not 128-byte aligned) and the swapped tile of few rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/compiler.h"
#include "../../passes/passes.h"
#include "../../codegen/codegen.h"
#include "../../runtime/runtime.h"

#include "fixture.h"
#include "have_nvrtc.h"

#include "matmul_helpers.h"

/*
 * SPEC (case I) lowered into a fresh fixture *T, its kernel in clusters of
 * CM x CN CTAs (else the case fails); returns the kernel's stage-release
 * barrier ("empty").
 */
static const KBar *
clustered(Fixture **t, int i, const char *spec, int cm, int cn, Kernel **out)
{
	Kernel *k = lowered(t, i, spec);
	int j;

	if (k->mm.cluster[0] != cm || k->mm.cluster[1] != cn)
		fail_msg("case %d: cluster [%d, %d], expected [%d, %d]", i, k->mm.cluster[0], k->mm.cluster[1], cm, cn);
	*out = k;
	for (j = 1; j < k->nbar; j++)
		if (strcmp(k->bar[j].name, "empty") == 0)
			return &k->bar[j];
	fail_msg("case %d: no stage-release barrier", i);
	return NULL;
}

static void
stage_division_in_32_bits(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {tile: [128, 160, 64]}\n");
	const char *cu;
	Stmt *w[8];
	int i, n;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->buf[1].stages, 5);
	n = stmts_of(k->body, ST_MBAR_WAIT, w, 8);   /* the producer's empty wait, the consumers' full wait */
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		assert_string_equal(expr(t, w[i]->u.mbar.barslot), "(u32((((i * ktiles) % 5) + kk)) % 5)");
		assert_string_equal(expr(t, w[i]->u.mbar.parity),
		                    "((((i * ktiles) / 5) + (u32((((i * ktiles) % 5) + kk)) / 5)) & 1)");
	}
	cu = cuda_of(t);
	assert_true(count(cu, "[(long long)((unsigned)(((i * ktiles) % 5LL) + kk) % 5u)]") >= 4);
	assert_int_equal(count(cu, "(long long)((unsigned)(((i * ktiles) % 5LL) + kk) / 5u)"), 2);
	assert_int_equal(count(cu, "(long long)((unsigned)((((i * ktiles) % 5LL) + kk) + 4LL) % 5u)"), 1);   /* release */
	assert_int_equal(count(cu, "((i * ktiles) + kk)"), 0);
	teardown((void **)&t);
	if (setup((void **)&t) < 0)
		fail_msg("setup");
	*state = t;
	/* stream-K's parts count on from their kbase: kept in 64 bits (split_counter) */
	if (!(k = kernel_of(t, GEMM_SIZES(1024, 1280, 8192) GEMM_PLAIN)))   /* halves of 128 x 160 */
		fail_msg("%s", t->msg);
	assert_true(k->mm.ksize.sk_slot > 0);
	assert_int_equal(k->buf[1].stages, 5);
	n = stmts_of(k->body, ST_MBAR_WAIT, w, 8);
	assert_true(n >= 2);
	assert_string_equal(expr(t, w[0]->u.mbar.barslot), "((kbase + kk) % 5)");
	assert_string_equal(expr(t, w[0]->u.mbar.parity), "(((kbase + kk) / 5) & 1)");
	teardown((void **)&t);
	if (setup((void **)&t) < 0)
		fail_msg("setup");
	*state = t;
	if (!(k = kernel_of(t, GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 256, 64]}\n")))
		fail_msg("%s", t->msg);
	assert_int_equal(k->buf[1].stages, 4);
	n = stmts_of(k->body, ST_MBAR_WAIT, w, 8);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		assert_string_equal(expr(t, w[i]->u.mbar.barslot), "(((i * ktiles) + kk) % 4)");
		assert_string_equal(expr(t, w[i]->u.mbar.parity), "((((i * ktiles) + kk) / 4) & 1)");
	}
	assert_int_equal(count(cuda_of(t), "(long long)((unsigned)"), 0);
}

/*
 * Clusters of two CTAs, by the hint only (without one, one CTA at any
 * size: docs/perf.md).  [2, 1] shares B: each CTA loads its half of B's slice (a
 * box of BN / 2 rows, at its rank's offset) as a multicast to both, and A
 * alone; [1, 2] the other way round.  The stage-release barrier counts a
 * warpgroup of each CTA (2 x 2 cooperative, 1 x 2 ping-pong), a cluster
 * barrier follows the barrier init and ends the kernel, and the tile loop
 * walks cluster tiles (cta / 2).  The CUDA says __cluster_dims__, and the
 * launch the cluster's size.
 */
static void
cluster_pairs(void **state)
{
	static const struct {
		const char *sizes, *sched;
		int cm, cn, arrivals;
	} cases[] = {
		{"{M: 4096, N: 4096, K: 4096}", "", 1, 1, 256},
		{"{M: 4096, N: 4096, K: 4096}", "schedule: {cluster: [2, 1]}\n", 2, 1, 4},
		{"{M: 4096, N: 4096, K: 4096}", "schedule: {cluster: [1, 2]}\n", 1, 2, 4},
		{"{M: 4096, N: 4096, K: 4096}", "schedule: {cluster: [2, 1], consumers: pingpong}\n", 2, 1, 2},
		{"{M: 2048, N: 2048, K: 2048}", "", 1, 1, 256},
		{"{M: 2048, N: 2048, K: 2048}", "schedule: {cluster: [2, 1]}\n", 2, 1, 4},
		{"{M: 4096, N: 4096, K: 4096}", "schedule: {signal: per_tile}\n", 1, 1, 256},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *ld[8], *sync[4], *roles;
		const KBar *empty = NULL;
		Launch *l;
		Buf out;
		char spec[1024];
		int n, share, cs = cases[i].cm * cases[i].cn;

		snprintf(spec, sizeof spec, "fusion: g\nsizes: %s\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		         "  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		         "outputs:\n  y: {dtype: bf16}\n%s", cases[i].sizes, cases[i].sched);
		empty = clustered(&t, i, spec, cases[i].cm, cases[i].cn, &k);
		assert_int_equal(empty->arrivals, k->mm.pingpong && cs == 1 ? 128 : cases[i].arrivals);
		assert_int_equal(empty->cluster, cs > 1);
		/* the producer's loads: A alone, B as two halves' multicast ([2, 1]); the other way for [1, 2] */
		roles = find_kind(k->body, ST_ROLES, 0);
		n = stmts_of(roles->body[0], ST_TMA_LOAD, ld, 8);
		assert_int_equal(n, 2);
		for (j = 0; j < 2; j++) {
			share = k->mm.cluster[j ? 0 : 1];   /* A is shared along N, B along M */
			assert_int_equal(ld[j]->u.tma.mcast ? ld[j]->u.tma.mcast->ival : 0, share > 1 ? 3 : 0);
			assert_int_equal(k->param[ld[j]->u.tma.param].box[0], (j ? k->tile_cols : k->tile_rows) / share);
			if (share > 1)
				assert_non_null(strstr(expr(t, ld[j]->u.tma.off), "rank"));
		}
		/* a cluster barrier after the barrier init and one at the end, and nothing else like it */
		n = stmts_of(k->body, ST_CLUSTER_SYNC, sync, 4);
		assert_int_equal(n, cs > 1 ? 2 : 0);
		if (cs > 1) {
			assert_ptr_equal(k->body->body[1], sync[0]);
			assert_ptr_equal(k->body->body[k->body->nbody - 1], sync[1]);
			assert_null(find_kind(k->body, ST_SYNC, 0));   /* the CTA barrier after init is the cluster's */
		}
		buf_init(&out, t->c.arena);
		assert_int_equal(codegen_emit(&t->c, &out, &l), 0);
		assert_int_equal(l->cluster, cs);
		assert_int_equal(count(buf_str(&out), "__cluster_dims__(2, 1, 1)"), cs > 1);
		assert_int_equal(count(buf_str(&out), "wsf_tma_load_2d_multicast(tile_"), cs > 1);
		/* the first stages' arrivals, then a k-step's release (ping-pong: and a tile's last) */
		assert_int_equal(count(buf_str(&out), "wsf_mbar_arrive_cluster(&empty["), cs > 1 ? 2 + k->mm.pingpong : 0);
		if (cs > 1)
			assert_non_null(strstr(buf_str(&out), "(long long)blockIdx.x / 2LL)"));
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * Clusters of up to 8 CTAs, in one or two dimensions.  A CTA's place is
 * (rank % x, rank / x): it loads its part of A (the row's y CTAs share it)
 * at (rank / x) x BM / y, multicast to the ranks of its row (x + x j), and
 * its part of B at (rank % x) x BN / x, to the ranks of its column; in one
 * dimension the mask is a constant.  The stage release counts a warpgroup
 * of every CTA of the cluster.  Without a hint, a GEMM of one ragged row of
 * 80 to 120 tiles over 64 k-steps or more, 16 of A's 128 rows past M or
 * more, runs in clusters of four sharing A (row_cluster); not at 113 rows
 * or a whole row of 128, 128 tiles (32 clusters of
 * four do not all fit at once), two rows of tiles, K = 2048, an M-major A
 * (its 32-row parts would be no whole 64-wide chunks: its rows of 96 are
 * misaligned, and a cluster of two shares it), nor with a tile or cluster
 * hint; a bias does not stop it.
 */
static void
cluster_grid(void **state)
{
#define SIZES(m, n, k) "fusion: g\nsizes: {M: " #m ", N: " #n ", K: " #k "}\n"
#define PLAIN GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n"
	static const struct {
		const char *spec;
		int cm, cn;
		const char *amask, *bmask;   /* NULL: no multicast */
		int abox, bbox, arrivals;
		const char *aat, *bat;       /* a shared operand's box: its first row */
	} cases[] = {
		{SIZES(96, 7168, 8192) PLAIN, 1, 4, "15", NULL, 32, 64, 8, "(row0 + (rank * 32))", NULL},
		{SIZES(100, 5120, 4096) PLAIN, 1, 4, "15", NULL, 32, 64, 8, "(row0 + (rank * 32))", NULL},
		{SIZES(112, 7168, 4096) PLAIN, 1, 4, "15", NULL, 32, 64, 8, "(row0 + (rank * 32))", NULL},
		{SIZES(104, 7000, 8192) GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		 "  - {out: z, op: add, in: [y, b]}\noutputs:\n  z: {dtype: bf16}\n", 1, 4, "15", NULL, 32, 64, 8,
		 "(row0 + (rank * 32))", NULL},
		{SIZES(128, 7168, 8192) PLAIN, 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(113, 7168, 8192) PLAIN, 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(96, 8192, 8192) PLAIN, 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(96, 7168, 2048) PLAIN, 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(200, 7168, 8192) PLAIN, 1, 1, NULL, NULL, 128, 112, 256, NULL, NULL},   /* one wave of 128 x 112 */
		{SIZES(96, 7168, 8192) "inputs:\n  x: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_a: true, transpose_b: true}\n"
		 "outputs:\n  y: {dtype: bf16}\n", 1, 2, "3", NULL, 64, 64, 4, "(kk * 64)", NULL},   /* misaligned_cluster's */
		{SIZES(96, 7168, 8192) PLAIN "schedule: {cluster: [1, 1]}\n", 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(96, 7168, 8192) PLAIN "schedule: {tile: [128, 64, 64]}\n", 1, 1, NULL, NULL, 128, 64, 256, NULL, NULL},
		{SIZES(4096, 4096, 4096) PLAIN "schedule: {cluster: [1, 8]}\n", 1, 8, "255", NULL, 16, 256, 16,
		 "(row0 + (rank * 16))", NULL},
		{SIZES(4096, 4096, 4096) PLAIN "schedule: {cluster: [4, 2]}\n", 4, 2, "(17 << (rank % 4))",
		 "(15 << ((rank / 4) * 4))", 64, 64, 16, "(row0 + ((rank / 4) * 64))", "(col0 + ((rank % 4) * 64))"},
		{SIZES(4096, 4096, 4096) PLAIN "schedule: {cluster: [2, 4], tile: [64, 128, 64], consumers: pingpong}\n",
		 2, 4, "(85 << (rank % 2))", "(3 << ((rank / 2) * 2))", 16, 64, 8, "(row0 + ((rank / 2) * 16))",
		 "(col0 + ((rank % 2) * 64))"},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *ld[8], *roles;
		const KBar *empty = NULL;
		const char *cu;
		int n, cs = cases[i].cm * cases[i].cn;

		empty = clustered(&t, i, cases[i].spec, cases[i].cm, cases[i].cn, &k);
		if (empty->arrivals != cases[i].arrivals)
			fail_msg("case %d: the stage release counts %d arrivals, expected %d", i, empty->arrivals,
			         cases[i].arrivals);
		roles = find_kind(k->body, ST_ROLES, 0);
		/* A's boxes (an M-major A's part in 64-wide chunks), then B's */
		if ((n = stmts_of(roles->body[0], ST_TMA_LOAD, ld, 8)) != 2)
			fail_msg("case %d: the producer issues %d loads", i, n);
		ld[1] = ld[n - 1];
		for (j = 0; j < 2; j++) {
			const char *want = j ? cases[i].bmask : cases[i].amask;
			int share = k->mm.cluster[j ? 0 : 1];

			if (!want != !ld[j]->u.tma.mcast || (want && strcmp(expr(t, ld[j]->u.tma.mcast), want)))
				fail_msg("case %d: %s's multicast %s, expected %s", i, j ? "B" : "A",
				         ld[j]->u.tma.mcast ? expr(t, ld[j]->u.tma.mcast) : "none", want ? want : "none");
			if (k->param[ld[j]->u.tma.param].box[0] != (j ? cases[i].bbox : cases[i].abox))
				fail_msg("case %d: %s's box of %d rows, expected %d", i, j ? "B" : "A",
				         k->param[ld[j]->u.tma.param].box[0], j ? cases[i].bbox : cases[i].abox);
			/* a part at the CTA's place along the sharing axis: a box's first row, A's or B's */
			if (share > 1 && strcmp(expr(t, ld[j]->u.tma.row), j ? cases[i].bat : cases[i].aat))
				fail_msg("case %d: %s's part at %s, expected %s", i, j ? "B" : "A", expr(t, ld[j]->u.tma.row),
				         j ? cases[i].bat : cases[i].aat);
		}
		cu = cuda_of(t);
		assert_int_equal(count(cu, arena_printf(t->c.arena, "__cluster_dims__(%d, 1, 1)", cs)), cs > 1);
		assert_int_equal(count(cu, arena_printf(t->c.arena, "wsf_mbar_arrive_cluster(&empty[s], threadIdx.x %% 128, "
		                                        "%d);", cs)), cs > 1);
		if (cases[i].bmask)   /* a mask of the rank: a 16-bit operand */
			assert_int_equal(count(cu, "(unsigned short)(("), 2);
		teardown((void **)&t);
	}
	(void)state;
#undef PLAIN
#undef SIZES
}

/*
 * stage_division_in_32_bits's split slot and phase have the values of the
 * plain (lin % S) and (lin / S) & 1, lin = i * ktiles + kk, over tiles and
 * k-steps of 3, 5 and 7 stages, the 32-bit part checked below 2^32 (eval),
 * with a counter far past 2^32 (i * ktiles) too.
 */
static void
stage_division_values(void **state)
{
	static const struct {
		const char *tile;
		int stages;
	} cases[] = {{"[256, 160, 64]", 3}, {"[128, 160, 64]", 5}, {"[128, 96, 64]", 7}};
	static const int64_t tiles[] = {0, 1, 2, 3, 7, 131, 1000003, (int64_t)1 << 40}, ksteps[] = {1, 5, 7, 64, 129};
	char spec[512];
	int c, a, b, kk, v, vi, vk, vkk;

	for (c = 0; c < (int)countof(cases); c++) {
		Fixture *t;
		Kernel *k;
		Stmt *w[8];
		Env env;

		snprintf(spec, sizeof spec, "%s%sschedule: {tile: %s}\n", GEMM_SIZES(4096, 4096, 8192), GEMM_PLAIN,
		         cases[c].tile);
		k = lowered(&t, c, spec);
		assert_int_equal(k->buf[1].stages, cases[c].stages);
		assert_int_equal(stmts_of(k->body, ST_MBAR_WAIT, w, 8), 2);
		env = (Env){arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
		            arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 1, 0};
		vi = vk = vkk = 0;
		for (v = 1; v < k->nvar; v++) {
			env.set[v] = false;
			vi = strcmp(k->var[v].name, "i") == 0 ? v : vi;
			vk = strcmp(k->var[v].name, "ktiles") == 0 ? v : vk;
			vkk = strcmp(k->var[v].name, "kk") == 0 ? v : vkk;
		}
		assert_true(vi && vk && vkk);
		env.set[vi] = env.set[vk] = env.set[vkk] = true;
		for (a = 0; a < (int)countof(tiles); a++)
			for (b = 0; b < (int)countof(ksteps); b++)
				for (kk = 0; kk < ksteps[b]; kk++) {
					int64_t lin = tiles[a] * ksteps[b] + kk, S = cases[c].stages;

					env.v[vi] = tiles[a], env.v[vk] = ksteps[b], env.v[vkk] = kk;
					for (v = 0; v < 2; v++) {
						assert_int_equal(eval(w[v]->u.mbar.barslot, &env), lin % S);
						assert_int_equal(eval(w[v]->u.mbar.parity, &env), (lin / S) & 1);
					}
				}
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * swap_ab (M = 16): the mma reads B's stage as its A (64 rows of w) and A's
 * as its B (x's 16 rows), m64n16k64, into an accumulator of 64 x 16; 16
 * stages by default; one staging copy a tile of [2 x 16][64] (both
 * warpgroups'), swizzled for a bf16 output and row-major for f32 (256-byte
 * rows); the output's box is the whole tile; one epilogue subtile.  In the
 * CUDA, the wgmma is m64n16k16 and the epilogue writes single elements.
 * Then the forms it refuses, where it is asked for.
 */
static void
swapped(void **state)
{
	static const char spec[] =
		"fusion: g\nsizes: {M: 16, N: 8192, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n  bias: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: add, in: [y, bias]}\n"
		"outputs:\n  z: {dtype: bf16}\n  y: {dtype: f32}\n";
	static const Refusal refused[] = {
		{"{swap_ab: true, consumers: cooperative, tile: [16, 64, 64]}", "a swap_ab tile with consumers: "
		 "cooperative is [M, 128, 64]", false},
		{"{swap_ab: true, consumers: pingpong, tile: [16, 128, 64]}", "a swap_ab tile with consumers: "
		 "pingpong is [M, 64, 64]", false},
		{"{swap_ab: true, cluster: [2, 1]}", "swap_ab in clusters is not implemented yet", true},
		{"{swap_ab: true, signal: per_tile}", "swap_ab with 'signal: per_tile' is not implemented yet", true},
		{"{swap_ab: true, tile: [16, 256, 64]}", "a swap_ab tile is [M, 64, 64] or [M, 128, 64] with M a multiple "
		 "of 8 up to 64", false},
		{"{swap_ab: true, tile: [12, 64, 64]}", "a swap_ab tile is [M, 64, 64]", false},
		{"{swap_ab: 1}", "'swap_ab'", false},
	};
	Fixture *t;
	Kernel *k;
	Stmt *mma;
	const char *cu;
	int i, b, staging = 0;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_true(k->mm.swap_ab && k->mm.pingpong);
	assert_int_equal(k->tile_rows, 16);
	assert_int_equal(k->tile_cols, 64);
	assert_int_equal(census(k->body).kind[ST_MMA], 1);
	mma = find_deep(k->body, ST_MMA);
	assert_non_null(mma);
	assert_string_equal(k->buf[mma->reads[0].buf].name, "tile_w");
	assert_string_equal(k->buf[mma->reads[1].buf].name, "tile_x");
	assert_int_equal(mma->u.mma.shape->m, 64);
	assert_int_equal(mma->u.mma.shape->n, 16);
	assert_int_equal(k->acc[mma->writes[0].acc].rows, 64);
	assert_int_equal(k->acc[mma->writes[0].acc].cols, 16);
	assert_int_equal(k->buf[mma->reads[0].buf].stages, 16);
	for (b = 1; b < k->nbuf; b++) {
		if (k->buf[b].kind != BUF_STAGING)
			continue;
		staging++;
		assert_int_equal(k->buf[b].rows, 32);
		assert_int_equal(k->buf[b].cols, 64);
		assert_int_equal(k->buf[b].stages, 1);
		assert_int_equal(k->buf[b].swizzle, k->buf[b].dtype == DT_F32 ? 0 : 128);
	}
	assert_int_equal(staging, 2);
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_TMAP && k->param[i].arg >= 3) {
			assert_int_equal(k->param[i].box[0], 16);
			assert_int_equal(k->param[i].box[1], 64);
		}
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16"));
	assert_non_null(strstr(cu, "for (long long e = 0LL; e < 1LL; e++) {   // the epilogue, the whole tile at once"));
	assert_non_null(strstr(cu, "transposed in the accumulator"));
	assert_int_equal(count(cu, "wsf_store1(cur_stage_"), 2);
	assert_int_equal(count(cu, "wsf_store2(cur_stage_"), 0);
	teardown((void **)&t);

	/* N = 28672: 224 tiles of 128 columns, a cooperative warpgroup's 64 each, B's rows offset by warpgroup */
	{
		const char *at = strstr(spec, "8192");
		char wide[1024];

		snprintf(wide, sizeof wide, "%.*s28672%s", (int)(at - spec), spec, at + 4);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, wide)))
			fail_msg("%s", t->msg);
		assert_true(k->mm.swap_ab && !k->mm.pingpong);
		assert_int_equal(k->tile_cols, 128);
		mma = find_deep(k->body, ST_MMA);
		assert_int_equal(mma->u.mma.shape->m, 128);
		assert_int_equal(mma->u.mma.shape->n, 16);
		assert_int_equal(k->buf[mma->reads[0].buf].stages, 11);   /* 18 KiB stages: the most that fit */
		cu = cuda_of(t);
		assert_non_null(strstr(cu, "const wsf_u64 da = wsf_mma_desc((const char *)(tile_w + ((long long)((unsigned)"
		                           "(((i * ktiles) % 11LL) + kk) % 11u)) * 8192) + wsf_wg * 8192);   // this warpgroup's "
		                           "64 rows"));
		assert_non_null(strstr(cu, "const int wc = 64 * (threadIdx.x / 128) + 16 * ((threadIdx.x / 32) % 4)"));
		assert_non_null(strstr(cu, "ws = 0;"));
		teardown((void **)&t);
	}

	refused_schedules(spec, refused, countof(refused));
	(void)state;
}

/*
 * A ragged last tile moved inside the output (tile_inside): every row0 and
 * col0 let (the producer's and the consumers') is min(x0, max(extent -
 * tile, 0)), with the kernel's tile: 128 x 256 cooperative, 64 x 64
 * ping-pong split by 2, a swapped tile of 16 rows.  Not with an output that
 * accumulates, a per-tile signal or an input that waits: their lets are
 * the raster's alone.
 */
static void
ragged_inside(void **state)
{
#define PLAIN GEMM_IN "ops:\n" GEMM_MM
	static const struct {
		const char *spec;
		int rows, cols;   /* the tile the lets name; 0: no clamp */
	} cases[] = {
		{HEAD PLAIN "outputs:\n  y: {dtype: bf16}\nschedule: {cluster: [1, 1]}\n", 128, 256},
		{"fusion: gemm\nsizes: {M: 200, N: 1000, K: 4096}\n" PLAIN "outputs:\n  y: {dtype: bf16}\n", 64, 64},
		{"fusion: gemm\nsizes: {M: 16, N: 4096, K: 4096}\n" PLAIN "outputs:\n  y: {dtype: bf16}\n", 16, 64},
		{HEAD PLAIN "outputs:\n  y: {dtype: bf16, accumulate: true}\n", 0, 0},
		{HEAD PLAIN "outputs:\n  y: {dtype: bf16}\nschedule: {signal: per_tile}\n", 0, 0},
		{HEAD GEMM_IN "  p: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		 "ops:\n" GEMM_MM "  - {out: o, op: add, in: [y, p]}\noutputs:\n  o: {dtype: bf16}\n", 0, 0},
	};
	char want[64];
	Fixture *t;
	Kernel *k;
	Stmt *r[4], *c[4];
	int i, j, n;

	for (i = 0; i < (int)countof(cases); i++) {
		k = lowered(&t, i, cases[i].spec);
		n = lets_named(k, k->body, "row0", r, 4);
		assert_int_equal(lets_named(k, k->body, "col0", c, 4), n);
		assert_int_equal(n, 2);   /* the producer's tile loop and the consumers' */
		for (j = 0; j < n; j++) {
			const char *re = expr(t, r[j]->u.let.value), *ce = expr(t, c[j]->u.let.value);

			if (!cases[i].rows) {
				assert_null(strstr(re, "max((rows"));
				assert_null(strstr(ce, "max((cols"));
				continue;
			}
			assert_true(strncmp(re, "min(", 4) == 0);
			snprintf(want, sizeof want, ", max((rows - %d), 0))", cases[i].rows);
			assert_string_equal(re + strlen(re) - strlen(want), want);
			snprintf(want, sizeof want, ", max((cols - %d), 0))", cases[i].cols);
			assert_string_equal(ce + strlen(ce) - strlen(want), want);
		}
		teardown((void **)&t);
	}
	(void)state;
#undef PLAIN
}

/*
 * An operand whose rows are not 128-byte aligned at the spec's sizes (K =
 * 4040 of bf16) runs without a hint in a cluster of two that shares the
 * operand with more rows in the tile (misaligned_cluster): 128 x 64 shares
 * A, 128 x 256 and SwiGLU's ping-pong 128 x 96 pair share B; an M-major A
 * of M = 1000 is shared, an N-major B of N = 4040 too, but not N-major Bs
 * whose halves would not be whole 64-wide chunks (A instead), nor an aligned
 * B when the misaligned A's half would not be.  Aligned rows, a
 * cluster hint, a split, a swapped tile, a batched matmul, a signal or
 * stream-K keep one CTA.
 */
static void
misaligned_rows(void **state)
{
	static const struct {
		const char *spec;
		int cm, cn, splits;
	} cases[] = {
		{GEMM_SIZES(1024, 1024, 4040) GEMM_PLAIN, 1, 2, 1},
		{GEMM_SIZES(4096, 4096, 4040) GEMM_PLAIN, 2, 1, 1},
		{GEMM_SIZES(4096, 4096, 4088) GEMM_PLAIN, 2, 1, 1},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 1, 1, 1},
		{GEMM_SIZES(4096, 4096, 4032) GEMM_PLAIN, 1, 1, 1},
		{GEMM_SIZES(4096, 4096, 4040) GEMM_PLAIN "schedule: {cluster: [1, 1]}\n", 1, 1, 1},
		{GEMM_SIZES(4096, 4096, 4040) GEMM_PLAIN "schedule: {cluster: [1, 2]}\n", 1, 2, 1},
		{GEMM_SIZES(4096, 4096, 4040) GEMM_PLAIN "schedule: {signal: per_tile}\n", 1, 1, 1},
		{GEMM_SIZES(4096, 4096, 4040) GEMM_PLAIN "schedule: {stream_k: true}\n", 1, 1, 1},
		{GEMM_SIZES(256, 1024, 4040) GEMM_PLAIN, 1, 1, 2},
		{GEMM_SIZES(16, 4096, 4040) GEMM_PLAIN, 1, 1, 2},
		{GEMM_SIZES(1000, 4096, 4096) "inputs:\n  a: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true, transpose_b: true}\n"
		 "outputs:\n  y: {dtype: bf16}\n", 1, 2, 1},
		/* A alone misaligned, M-major on 64-row tiles: its half is no whole chunk, and B's rows are aligned */
		{GEMM_SIZES(1000, 4096, 4096) "inputs:\n  a: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true, transpose_b: true}\n"
		 "outputs:\n  y: {dtype: bf16}\nschedule: {consumers: pingpong, tile: [64, 256, 64]}\n", 1, 1, 1},
		{GEMM_SIZES(4096, 4040, 4096) "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [K, N]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w]}\noutputs:\n  y: {dtype: bf16}\n", 2, 1, 1},
		{"fusion: swiglu\nsizes: {M: 8192, N: 14336, K: 4040}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		 "  wg: {dtype: bf16, shape: [N, K]}\n  wu: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n"
		 "  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n"
		 "  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: bf16}\n", 2, 1, 1},   /* ping-pong: 192 acc */
		/* N-major Bs of a 64-wide tile each: half of each would not be a whole chunk, so A */
		{"fusion: swiglu\nsizes: {M: 600, N: 392, K: 328}\ninputs:\n  x: {dtype: f16, shape: [K, M]}\n"
		 "  wg: {dtype: f16, shape: [K, N]}\n  wu: {dtype: f16, shape: [K, N]}\n"
		 "ops:\n  - {out: g, op: matmul, in: [x, wg], transpose_a: true}\n"
		 "  - {out: u, op: matmul, in: [x, wu], transpose_a: true}\n  - {out: sg, op: silu, in: [g]}\n"
		 "  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: f16}\n", 1, 2, 1},
		{GEMM_SIZES(4096, 4096, 4040) "inputs:\n  x: {dtype: bf16, shape: [8, M, K]}\n  w: {dtype: bf16, shape: [8, N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {dtype: bf16}\n", 1, 1, 1},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;

		k = lowered(&t, i, cases[i].spec);
		if (k->mm.cluster[0] != cases[i].cm || k->mm.cluster[1] != cases[i].cn || k->mm.ksize.splits != cases[i].splits)
			fail_msg("case %d: cluster [%d, %d] split %d, expected [%d, %d] split %d", i, k->mm.cluster[0],
			         k->mm.cluster[1], k->mm.ksize.splits, cases[i].cm, cases[i].cn, cases[i].splits);
		teardown((void **)&t);
	}
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(stage_division_in_32_bits, setup, teardown),
		cmocka_unit_test(stage_division_values),
		cmocka_unit_test(ragged_inside),
		cmocka_unit_test(cluster_pairs),
		cmocka_unit_test(cluster_grid),
		cmocka_unit_test(misaligned_rows),
		cmocka_unit_test(swapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
