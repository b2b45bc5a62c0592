/*
 * test_plan_matmul.c: the matmul family's planner on shapes alone: specs
 * through the front end and the fusion passes (no kernel IR is built),
 * whose plan (the schedule pass's, Fusion.mm) is checked field by field:
 * the tables of tuned shapes, the tile that narrows or fills the waves, the
 * roles' registers; and the cost model's
 * pure functions (fill_waves, in_wave, the stream-K parts) on sizes.
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
#include "../../passes/matmul.h"

#include "fixture.h"

#define GEMM_SIZES(m, n, k) "fusion: gemm\nsizes: {M: " #m ", N: " #n ", K: " #k "}\n"
#define GEMM_IN "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
#define GEMM_MM "  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
#define GEMM_PLAIN GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n"
#define GEMM_NMAJOR "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [K, N]}\n" \
	"ops:\n  - {out: y, op: matmul, in: [x, w]}\noutputs:\n  y: {dtype: bf16}\n"
#define SWIGLU "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  wg: {dtype: bf16, shape: [N, K]}\n" \
	"  wu: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n" \
	"  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n" \
	"  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: bf16}\n"
/* y = x w^T at 4096^3 and six f32 outputs (y and its multiples): their staging copies narrow the tile */
#define SIX_F32 "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\nops:\n" \
	"  - {out: s0, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o1, op: mul, in: [s0, 2.0]}\n" \
	"  - {out: o2, op: mul, in: [s0, 3.0]}\n  - {out: o3, op: mul, in: [s0, 4.0]}\n" \
	"  - {out: o4, op: mul, in: [s0, 5.0]}\n  - {out: o5, op: mul, in: [s0, 6.0]}\noutputs:\n" \
	"  s0: {dtype: f32}\n  o1: {dtype: f32}\n  o2: {dtype: f32}\n  o3: {dtype: f32}\n  o4: {dtype: f32}\n" \
	"  o5: {dtype: f32}\n"

/* SPEC's fusion planned into *P by the schedule pass (Fusion.mm): 0, or -1 with the message in T->msg. */
static int
plan_of(Fixture *t, const char *spec, MatmulPlan *p)
{
	Comp *c = &t->c;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR))
		return -1;
	assert_int_equal(c->fusion->family, FAM_MATMUL);
	assert_non_null(c->fusion->mm);
	*p = c->fusion->mm->plan;
	return 0;
}

/* Case I of a table: SPEC planned into *P in a fresh fixture *T (else the case fails). */
static void
planned(Fixture **t, int i, const char *spec, MatmulPlan *p)
{
	if (setup((void **)t) < 0)
		fail_msg("setup");
	if (plan_of(*t, spec, p) < 0)
		fail_msg("case %d: %s", i, (*t)->msg);
}

/* The plans of shapes the defaults were tuned on (docs/perf.md), field by field. */
static void
plans(void **state)
{
	static const struct {
		const char *spec;
		int bm, bn, bk;
		bool swap, pingpong;
		int cluster[2];
		KSum ksum;
		int splits, sk_parts;
		bool raster_rows;
		int producer_regs, consumer_regs, epi_cols;
	} cases[] = {
		/* the large GEMMs: cooperative 128 x 256, one CTA, no split */
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN, 128, 256, 64, false, false, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 32},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 128, 256, 64, false, false, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 32},
		/* a decode step (M = 16): swapped, ping-pong, 16 x 64 tiles split in two into rank 0 */
		{GEMM_SIZES(16, 4096, 14336) GEMM_PLAIN, 16, 64, 64, true, true, {1, 1}, KSUM_SPLIT_RANK0, 2, 0, false, 40, 232, 64},
		{GEMM_SIZES(64, 8192, 4096) GEMM_PLAIN, 64, 64, 64, true, true, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 64},
		/* few tiles of a long K: stream-K in quarters of a tile (long_k_stream) */
		{GEMM_SIZES(256, 1024, 8192) GEMM_PLAIN, 128, 64, 64, false, false, {1, 1}, KSUM_SK_SCATTER, 1, 4, false, 40, 232, 32},
		{GEMM_SIZES(512, 1024, 8192) GEMM_PLAIN, 128, 128, 64, false, false, {1, 1}, KSUM_SK_SCATTER, 1, 4, false, 40, 232, 32},
		/* rows not 128-byte aligned (K = 4040): a cluster of two that shares an operand (misaligned_cluster) */
		{GEMM_SIZES(1024, 1024, 4040) GEMM_PLAIN, 128, 64, 64, false, false, {1, 2}, KSUM_NONE, 1, 0, false, 56, 224, 32},
		/* one ragged row of tiles on a long K: clusters of four along N that share A (row_cluster) */
		{GEMM_SIZES(96, 7168, 8192) GEMM_PLAIN, 128, 64, 64, false, false, {1, 4}, KSUM_NONE, 1, 0, false, 56, 224, 32},
		/* a taller output's one wave of narrowed tiles, along the rows (fill_waves) */
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN, 128, 160, 64, false, false, {1, 1}, KSUM_NONE, 1, 0, true, 40, 232, 32},
		/* six f32 outputs' staging copies narrow the tile to 240, in subtiles of 16 (fit_tile) */
		{GEMM_SIZES(4096, 4096, 4096) SIX_F32, 128, 240, 64, false, false, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 16},
		/* SwiGLU: ping-pong 128 x 96 a matmul from GROUP_PP_TILES tiles (group_pingpong), else cooperative */
		{GEMM_SIZES(8192, 14336, 4096) SWIGLU, 128, 96, 64, false, true, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 32},
		{GEMM_SIZES(1024, 4096, 4096) SWIGLU, 128, 128, 64, false, false, {1, 1}, KSUM_NONE, 1, 0, false, 40, 232, 32},
		/* hints: a K split's ranks share the epilogue; stream-K's runs meet in each tile's owner */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {split_k: 2, tile: [128, 128, 64]}\n", 128, 128, 64, false,
		 false, {1, 1}, KSUM_SPLIT_SCATTER, 2, 0, false, 40, 232, 32},
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN "schedule: {stream_k: true}\n", 128, 256, 64, false, false, {1, 1},
		 KSUM_SK_OWNER, 1, 4, false, 40, 232, 32},
		/* a hint that bears on it rules a default out (plan_rules_out): no row_cluster with stages asked */
		{GEMM_SIZES(96, 7168, 8192) GEMM_PLAIN "schedule: {stages: 4}\n", 128, 64, 64, false, false, {1, 1}, KSUM_NONE,
		 1, 0, false, 40, 232, 32},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t = NULL;
		MatmulPlan p;

		planned(&t, i, cases[i].spec, &p);
		assert_int_equal(p.bm, cases[i].bm);
		assert_int_equal(p.bn, cases[i].bn);
		assert_int_equal(p.bk, cases[i].bk);
		assert_int_equal(p.swap_ab, cases[i].swap);
		assert_int_equal(p.pingpong, cases[i].pingpong);
		assert_int_equal(p.cluster[0], cases[i].cluster[0]);
		assert_int_equal(p.cluster[1], cases[i].cluster[1]);
		assert_int_equal(p.ksum, cases[i].ksum);
		assert_int_equal(p.ksize.splits, cases[i].splits);
		assert_int_equal(p.ksize.sk_parts, cases[i].sk_parts);
		assert_int_equal(p.raster_rows, cases[i].raster_rows);
		assert_int_equal(p.producer_regs, cases[i].producer_regs);
		assert_int_equal(p.consumer_regs, cases[i].consumer_regs);
		assert_int_equal(p.epi_cols, cases[i].epi_cols);
		/* the strategy's row agrees with the plan's counts */
		assert_int_equal(ksum_rule[p.ksum].split_cluster, p.ksize.splits > 1);
		assert_int_equal(ksum_rule[p.ksum].workspace, p.ksize.sk_slot > 0);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * The default tile's N narrows for GEMMs of few tiles, halving while the
 * tiles after halving still fit one wave of 132: 1024^3 (32 tiles of 128 x
 * 256) gets 128 x 64; 2048^3 (128 tiles) keeps 256, since 256 tiles of
 * 128 x 128 would take two waves; M = 64 with N = 8192 gets 64; a tile
 * hint is kept as it is.  An output of at most 64 rows is computed
 * transposed (swap_ab) in tiles of its rows rounded up to 8 by 64 (by 128
 * on cooperative warpgroups where that still makes a wave of 132), unless
 * the spec says which consumers or which tile or swap_ab: false (ping-pong's
 * 64-row tiles then); swap_ab: true takes 64-row tiles at any M.
 */
static void
tile_narrows(void **state)
{
	static const struct {
		const char *sizes, *sched;
		int bm, bn;
		bool pingpong, swap;
	} cases[] = {
		{"{M: 1024, N: 1024, K: 1024}", "", 128, 64, false, false},
		{"{M: 2048, N: 2048, K: 2048}", "", 128, 256, false, false},
		{"{M: 64, N: 8192, K: 4096}", "", 64, 64, true, true},
		{"{M: 16, N: 8192, K: 4096}", "", 16, 64, true, true},
		{"{M: 1, N: 8192, K: 4096}", "", 8, 64, true, true},
		{"{M: 33, N: 8192, K: 4096}", "", 40, 64, true, true},
		{"{M: 16, N: 8192, K: 4096}", "schedule: {swap_ab: false}\n", 64, 64, true, false},
		{"{M: 16, N: 8192, K: 4096}", "schedule: {consumers: pingpong}\n", 64, 64, true, false},
		{"{M: 16, N: 8192, K: 4096}", "schedule: {swap_ab: true, tile: [32, 64, 64]}\n", 32, 64, true, true},
		{"{M: 16, N: 28672, K: 4096}", "", 16, 128, false, true},
		{"{M: 16, N: 16768, K: 4096}", "", 16, 64, true, true},
		{"{M: 16, N: 16896, K: 4096}", "", 16, 128, false, true},
		{"{M: 16, N: 8192, K: 4096}", "schedule: {swap_ab: true, consumers: cooperative}\n", 16, 128, false, true},
		{"{M: 16, N: 28672, K: 4096}", "schedule: {swap_ab: true, tile: [16, 64, 64]}\n", 16, 64, true, true},
		{"{M: 4096, N: 8192, K: 4096}", "schedule: {swap_ab: true}\n", 64, 64, true, true},
		{"{M: 65, N: 8192, K: 4096}", "", 128, 64, false, false},
		{"{M: 64, N: 8192, K: 4096}", "schedule: {consumers: cooperative}\n", 128, 64, false, false},
		{"{M: 1024, N: 4096, K: 4096}", "", 128, 256, false, false},
		{"{M: 256, N: 8192, K: 64}", "", 128, 128, false, false},
		{"{M: 1024, N: 1024, K: 1024}", "schedule: {tile: [128, 256, 64]}\n", 128, 256, false, false},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t = NULL;
		MatmulPlan p;
		char spec[1024];

		snprintf(spec, sizeof spec, "fusion: g\nsizes: %s\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		         "  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		         "outputs:\n  y: {dtype: bf16}\n%s", cases[i].sizes, cases[i].sched);
		planned(&t, i, spec, &p);
		if (p.bn != cases[i].bn)
			fail_msg("case %d (%s): tile N %d, expected %d", i, cases[i].sizes, p.bn, cases[i].bn);
		if (p.pingpong != cases[i].pingpong || p.swap_ab != cases[i].swap || p.bm != cases[i].bm)
			fail_msg("case %d (%s): %s%s, %d rows", i, cases[i].sizes, p.pingpong ? "ping-pong" : "cooperative",
			         p.swap_ab ? " swapped" : "", p.bm);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * The roles' registers (choose_regs): a cluster whose producer multicasts
 * a shared operand gives it 56 (ptxas spilled it at 40), its consumers 224,
 * where those hold the accumulators; else 40 and 232 (SwiGLU's ping-pong
 * tiles in the default cluster of a misaligned K among them).
 */
static void
cluster_registers(void **state)
{
	static const struct {
		const char *spec;
		int cm, cn, producer, consumer;
	} cases[] = {
		{GEMM_SIZES(8192, 8192, 8120) GEMM_PLAIN, 2, 1, 56, 224},
		{GEMM_SIZES(1024, 1024, 4040) GEMM_PLAIN, 1, 2, 56, 224},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 1, 1, 40, 232},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {cluster: [2, 1]}\n", 2, 1, 56, 224},
		/* 256 x 192: 192 accumulators a thread, more than 224 registers hold unspilled */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {cluster: [2, 1], tile: [256, 192, 64]}\n", 2, 1,
		 40, 232},
		/* SwiGLU's ping-pong tiles, misaligned K: the default cluster, 192 accumulators, 40 and 232 */
		{"fusion: swiglu\nsizes: {M: 4096, N: 8192, K: 4040}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		 "  wg: {dtype: bf16, shape: [N, K]}\n  wu: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n"
		 "  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n"
		 "  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: bf16}\n", 2, 1, 40, 232},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t = NULL;
		MatmulPlan p;

		planned(&t, i, cases[i].spec, &p);
		if (p.cluster[0] != cases[i].cm || p.cluster[1] != cases[i].cn ||
		    p.producer_regs != cases[i].producer || p.consumer_regs != cases[i].consumer)
			fail_msg("case %d: cluster [%d, %d] registers %d / %d, expected [%d, %d] %d / %d", i, p.cluster[0],
			         p.cluster[1], p.producer_regs, p.consumer_regs, cases[i].cm, cases[i].cn,
			         cases[i].producer, cases[i].consumer);
		assert_true(128 * p.producer_regs + 256 * p.consumer_regs <= 384 * 168);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * Without a tile hint, a cooperative matmul whose 128 x 256 tiles leave
 * most SMs idle in the last wave takes the tile that costs the fewest
 * waves (fill_waves): 2048 x 1280 one wave of 128 x 160 where 128 x 256
 * filled 61% of one, 4096 and 8192 x 1280 256 x 160 (one wave, and 1.9
 * where 128 x 256 took 1.2 and 2.4), 512 x 6144 192, 512 x 28672 and 2048
 * x 7168 224 (3.9 waves where 256 had 3.4), 3072^2 and 6144 x 1536 x
 * 4096 192, 6144 x 2560 x 4096 256 x 160, an N-major B 192 (whole
 * 64-wide chunks).  256 rows not with a residual to add (ptxas spilled) or
 * independent matmuls.  A full last wave keeps 128 x 256 (4096^3, 3072 x
 * 1280, 6144 x 1280); so do a tile, cluster, split, stages or stream-K
 * hint, a signal, ping-pong.  A GEMM the width already halved for to 128
 * takes 96 where those tiles still fit one wave (1024 x 1280 and 1536 x
 * 1024 x 4096), not where they would take two (1664 x 1024), an N-major
 * B, operand rows misaligned, one row of tiles or a stages hint.
 */
static void
wave_tiles(void **state)
{
	static const struct {
		const char *spec;
		int bm, bn;
	} cases[] = {
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN, 128, 160},
		{GEMM_SIZES(4096, 1280, 8192) GEMM_PLAIN, 256, 160},
		{GEMM_SIZES(8192, 1280, 8192) GEMM_PLAIN, 256, 160},
		{GEMM_SIZES(8192, 1280, 8192) GEMM_IN "  r: {dtype: bf16, shape: [M, N]}\nops:\n" GEMM_MM
		 "  - {out: z, op: add, in: [y, r]}\noutputs:\n  z: {dtype: bf16}\n", 128, 256},
		{GEMM_SIZES(8192, 1280, 8192) GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		 "  - {out: z, op: add, in: [y, b]}\noutputs:\n  z: {dtype: bf16}\n", 256, 160},
		{GEMM_SIZES(2048, 1200, 4096) GEMM_PLAIN, 128, 160},
		{GEMM_SIZES(512, 6144, 4096) GEMM_PLAIN, 128, 192},
		{GEMM_SIZES(500, 6144, 4096) GEMM_PLAIN, 128, 192},
		{GEMM_SIZES(512, 28672, 4096) GEMM_PLAIN, 128, 224},
		{GEMM_SIZES(2048, 7168, 8192) GEMM_PLAIN, 128, 224},
		/* since the stage slots divide in 32 bits (rates measured again): 256 x 160 took these */
		{GEMM_SIZES(3072, 3072, 4096) GEMM_PLAIN, 128, 192},
		{GEMM_SIZES(6144, 1536, 4096) GEMM_PLAIN, 128, 192},
		{GEMM_SIZES(6144, 2560, 4096) GEMM_PLAIN, 256, 160},   /* and 128 x 256 this one */
		{GEMM_SIZES(2048, 1280, 4096) GEMM_NMAJOR, 128, 192},
		{GEMM_SIZES(512, 7168, 4096) GEMM_NMAJOR, 128, 256},   /* 224 is no whole chunk, 192 takes 2 waves */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 128, 256},
		{GEMM_SIZES(3072, 1280, 8192) GEMM_PLAIN, 128, 256},
		{GEMM_SIZES(6144, 1280, 8192) GEMM_PLAIN, 128, 256},
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN, 128, 256},
		/* one wave narrows in 16s from 80; taller than wide, its tiles go along each row */
		{GEMM_SIZES(1024, 1280, 4096) GEMM_PLAIN, 128, 80},    /* 128 tiles; at K = 8192 stream-K's halves of 128 x 160 */
		{GEMM_SIZES(384, 3072, 4096) GEMM_PLAIN, 128, 80},     /* 117 tiles, of 96 99 */
		{GEMM_SIZES(1280, 1280, 4096) GEMM_PLAIN, 128, 112},   /* 120 tiles, of 128 100 */
		{GEMM_SIZES(1280, 3072, 4096) GEMM_PLAIN, 128, 240},   /* 130 tiles, of 256 120 */
		{GEMM_SIZES(1536, 1536, 8192) GEMM_PLAIN, 128, 144},   /* fill_waves's 160 */
		{GEMM_SIZES(1280, 1024, 4096) GEMM_PLAIN, 128, 80},
		{GEMM_SIZES(1536, 768, 4096) GEMM_PLAIN, 128, 80},
		{GEMM_SIZES(1664, 1024, 4096) GEMM_PLAIN, 128, 112},
		{GEMM_SIZES(768, 1024, 4096) GEMM_PLAIN, 128, 64},     /* 128 x 64 fits */
		{GEMM_SIZES(1024, 1280, 4096) GEMM_NMAJOR, 128, 128},  /* 80 is no whole 64-wide chunk */
		{GEMM_SIZES(1536, 1024, 4096) GEMM_PLAIN, 128, 96},    /* 96 tiles of 128 x 128, 132 of 128 x 96 */
		{GEMM_SIZES(1792, 1024, 4096) GEMM_PLAIN, 128, 128},   /* 112 of 128 x 128; 140 of 128 x 112 */
		{GEMM_SIZES(1536, 1024, 4040) GEMM_PLAIN, 128, 128},   /* misaligned rows: a cluster of two instead */
		{GEMM_SIZES(1536, 1024, 4096) GEMM_NMAJOR, 128, 128},  /* 96 is no whole 64-wide chunk */
		{GEMM_SIZES(128, 11008, 4096) GEMM_PLAIN, 128, 128},   /* one row of tiles (115 of 96) */
		{GEMM_SIZES(100, 11008, 4096) GEMM_PLAIN, 128, 128},   /* and row_cluster's [1, 4] */
		{GEMM_SIZES(1536, 1024, 4096) GEMM_PLAIN "schedule: {stages: 4}\n", 128, 128},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {tile: [128, 256, 64]}\n", 128, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {cluster: [2, 1]}\n", 128, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {consumers: pingpong}\n", 64, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {stages: 3}\n", 128, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {split_k: 1}\n", 128, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {stream_k: true}\n", 128, 256},
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {stream_k: false}\n", 128, 160},   /* the default's */
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {signal: per_tile}\n", 128, 256},
	};
	static const struct {
		const char *spec;
		bool along_rows;
	} order[] = {
		{GEMM_SIZES(1280, 1024, 4096) GEMM_PLAIN, true},    /* 96 -> 80 */
		{GEMM_SIZES(1536, 1024, 4096) GEMM_PLAIN, true},    /* 128 -> 96 */
		{GEMM_SIZES(1664, 1024, 4096) GEMM_PLAIN, true},    /* 128 -> 112 */
		{GEMM_SIZES(1024, 1280, 4096) GEMM_PLAIN, false},   /* wider */
		{GEMM_SIZES(1280, 1280, 4096) GEMM_PLAIN, false},   /* square */
		{GEMM_SIZES(2048, 1280, 8192) GEMM_PLAIN "schedule: {stream_k: false}\n", true},   /* 160: not narrowed */
		{GEMM_SIZES(1792, 1024, 4096) GEMM_PLAIN, true},    /* 128 */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, false},   /* more than a wave */
		{GEMM_SIZES(4096, 1280, 8192) GEMM_PLAIN, false},   /* one wave of 256 x 160 */
		{GEMM_SIZES(1536, 1024, 4040) GEMM_PLAIN, false},   /* misaligned rows: a cluster, no narrowing */
		{GEMM_SIZES(1536, 1024, 4096) GEMM_PLAIN "schedule: {stages: 4}\n", false},
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN, false},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t = NULL;
		MatmulPlan p;

		planned(&t, i, cases[i].spec, &p);
		if (p.bm != cases[i].bm || p.bn != cases[i].bn)
			fail_msg("case %d: tile %d x %d, expected %d x %d", i, p.bm, p.bn, cases[i].bm, cases[i].bn);
		teardown((void **)&t);
	}
	/* one wave's tiles of 128 rows of an output taller than wide go along each row of tiles; the rest keep groups */
	for (i = 0; i < (int)countof(order); i++) {
		Fixture *t = NULL;
		MatmulPlan p;

		planned(&t, i, order[i].spec, &p);
		if (p.raster_rows != order[i].along_rows)
			fail_msg("order case %d: along rows %d, expected %d", i, p.raster_rows, order[i].along_rows);
		teardown((void **)&t);
	}
	(void)state;
}

/* The cost model on sizes alone: the wave-filling tile, clusters resident in one wave, stream-K's parts. */
static void
cost_model(void **state)
{
	int bm, bn;

	fill_waves(2048, 1280, EPI_COLS, false, &bm, &bn);   /* one wave of 128 x 160, not 61% of one */
	assert_int_equal(bm, 128);
	assert_int_equal(bn, 160);
	fill_waves(8192, 1280, EPI_COLS, true, &bm, &bn);    /* 1.9 waves of 256 x 160 */
	assert_int_equal(bm, 256);
	assert_int_equal(bn, 160);
	fill_waves(8192, 8192, EPI_COLS, true, &bm, &bn);    /* many waves: the default */
	assert_int_equal(bm, BM);
	assert_int_equal(bn, BN);
	assert_true(in_wave(64, 2));
	assert_true(in_wave(39, 3));
	assert_false(in_wave(40, 3));   /* an H200 holds 39 clusters of 3 */
	assert_false(in_wave(32, 4));   /* and 30 of 4 */
	assert_int_equal(quarter_parts(512, 1024, 128, &bn), 4);
	assert_int_equal(bn, 128);
	assert_int_equal(quarter_parts(8192, 8192, 128, &bn), 0);   /* whole waves */
	assert_int_equal(half_parts(1024, 1024, 128, EPI_COLS, &bn), 2);
	assert_int_equal(bn, 128);
	assert_int_equal(half_parts(1536, 1024, 128, EPI_COLS, &bn), 2);
	assert_int_equal(bn, 224);
	assert_int_equal(narrow_parts(128, 4096, 128, EPI_COLS, &bn), 2);
	assert_int_equal(bn, 64);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plans),
		cmocka_unit_test(tile_narrows),
		cmocka_unit_test(cluster_registers),
		cmocka_unit_test(wave_tiles),
		cmocka_unit_test(cost_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
