/*
 * test_plan_matmul.c: the matmul family's planner on shapes alone: specs
 * through the front end and the fusion passes (no kernel IR is built)
 * into plan_matmul, whose plan's fields are checked; and the cost model's
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
#define GEMM_PLAIN "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\nops:\n" \
	"  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {dtype: bf16}\n"
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

/* SPEC's fusion planned into *P: 0, or -1 with the message in T->msg. */
static int
plan_of(Fixture *t, const char *spec, MatmulPlan *p)
{
	Comp *c = &t->c;
	Group g[MAXMM];
	int ng;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR))
		return -1;
	assert_int_equal(c->fusion->family, FAM_MATMUL);
	if ((ng = the_matmuls(c, c->fusion, g)) < 0)
		return -1;
	return plan_matmul(c, c->fusion, g, ng, p);
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
		cmocka_unit_test(cost_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
