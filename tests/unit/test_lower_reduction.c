/*
 * test_lower_reduction.c: the row-reduction family lowered from a spec and taken
 * through the kernel passes: which loop is buffered (the row loop, a wide
 * row's chunk loop), the levels of its reductions (online softmax, a
 * one-pass variance), a row streamed in chunks, one CTA a row in registers
 * (the default where it fits), and the errors of its lowering.
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

#include "fixture.h"
#include "passes_helpers.h"

#define NORM_SPEC(width, sched) \
	"fusion: ln\nsizes: {M: 512, N: " width "}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n" \
	"  w: {dtype: bf16, shape: [N]}\n  b: {dtype: bf16, shape: [N]}\n" \
	"ops:\n  - {out: y, op: layernorm, in: [x, w, b]}\noutputs:\n  y: {dtype: bf16}\n" sched

#define SOFTMAX_SPEC(width) \
	"fusion: sm\nsizes: {M: 64, N: " width "}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n" \
	"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n"


/*
 * Row reductions: the persistent row loop is the buffered one (a stage is a
 * whole row, sized for the compile-time width), filled by one bulk copy of
 * the row's bytes under one expect_tx of the same runtime count; weights
 * stay in global.
 */
static void
lower_reduction_buffers_the_row_loop(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, NORM_SPEC("1000", "schedule: {persistent: true}\n"));
	Stmt *main_ = k->body->body[find(k->body, ST_LOOP) + 1], *issue, *ld;

	assert_int_equal(k->family, FAM_REDUCTION);
	assert_int_equal(k->row.cap, 1024);
	assert_int_equal(k->tile_rows, 1);
	assert_int_equal(k->param[1].kind, PK_PTR);
	assert_int_equal(k->param[1].view, VIEW_FULL);
	assert_int_equal(k->param[2].kind, PK_PTR);
	assert_int_equal(k->param[2].view, VIEW_ROW);
	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_int_equal(main_->u.loop.kind, LOOP_TILE);
	assert_int_equal(main_->u.loop.cb->stage_bytes, 1024 * 2);
	issue = main_->body[0];
	assert_int_equal(issue->nbody, 2);
	assert_int_equal(issue->body[0]->kind, ST_EXPECT_TX);
	assert_int_equal(issue->body[0]->u.mbar.bytes, 0);
	assert_string_equal(expr(t, issue->body[0]->u.mbar.more), "(min(1024, cols) * 2)");
	ld = issue->body[1];
	assert_int_equal(ld->kind, ST_TMA_LOAD);
	assert_int_equal(ld->u.tma.param, 1);
	assert_string_equal(expr(t, ld->u.tma.slot), expr(t, issue->body[0]->u.mbar.barslot));
	assert_string_equal(expr(t, kir_bulk_bytes(&t->c, k, ld)), expr(t, issue->body[0]->u.mbar.more));
	assert_int_equal(census(main_).kind[ST_EXPECT_TX], 1);
	assert_int_equal(census(main_).kind[ST_TMA_LOAD], 1);  /* w and b are not loaded into stages */
	assert_int_equal(census(main_).kind[ST_MBAR_WAIT], 1);
	/* the row is held in registers: the compute's first block reduction releases the stage, no barrier of sync's */
	assert_int_equal(k->row.steps, 1);
	assert_true(main_->body[find(main_, ST_COMPUTE)]->u.compute.releases);
	assert_int_equal(census(main_).kind[ST_SYNC], 0);
	/* the epilogue keeps no empty issue block: the only statements with bodies are itself and the compute's */
	assert_int_equal(census(k->body->body[find(k->body, ST_LOOP) + 2]).kind[ST_IF], 0);
	assert_int_equal(census(k->body->body[find(k->body, ST_LOOP) + 2]).kind[ST_TMA_LOAD], 0);
}

/*
 * A stage filled by a loop of loads (its chunks): the enclosing loop is the
 * buffered one, the chunk loop gets no counter of its own, and its loads
 * share one expect_tx of the whole stage, placed before the loop.
 */
static void
circular_buffer_chunk_loop_fills_one_stage(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = new_kernel(c, 1, false);
	int n = kernel_add_param(c, k, PK_SIZE, "n");
	Stmt *loop, *issue, *chunks, *ld, *compute, *main_;

	k->param[n].var = kernel_add_var(c, k, "n");
	k->stages_hint = 3;
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->param[n].var), LOOP_TILE);
	st_append(c, k->body, loop);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	st_append(c, loop, issue);
	chunks = st_loop(c, kernel_add_var(c, k, "ch"), ex_int(c, 0), ex_int(c, 4), LOOP_CHUNK);
	st_append(c, issue, chunks);
	ld = st_new(c, ST_TMA_LOAD);
	ld->u.tma.buf = 1;
	ld->u.tma.param = 1;
	ld->u.tma.slot = ex_int(c, 0);
	ld->u.tma.off = ex_bin(c, EX_MUL, ex_var(c, chunks->u.loop.var), ex_int(c, 1024));
	ld->u.tma.row = ex_var(c, loop->u.loop.var);
	ld->u.tma.col = ex_int(c, 0);
	st_append(c, chunks, ld);
	compute = st_new(c, ST_COMPUTE);
	VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = 1;
	compute->reads[0].slot = ex_int(c, 0);
	compute->u.compute.row = ex_var(c, loop->u.loop.var);
	compute->u.compute.col = ex_int(c, 0);
	st_append(c, loop, compute);
	c->kernel = k;
	run_pass(t, pass_circular_buffer, "circular_buffer");

	main_ = k->body->body[find(k->body, ST_LOOP) + 1];
	assert_non_null(main_->u.loop.cb);
	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_int_equal(main_->u.loop.cb->stages, 3);
	issue = main_->body[0];
	assert_int_equal(issue->body[0]->kind, ST_EXPECT_TX);
	assert_int_equal(issue->body[0]->u.mbar.bytes, 16 * 256 * 2);  /* the whole stage, once */
	assert_null(issue->body[0]->u.mbar.more);
	chunks = issue->body[1];
	assert_int_equal(chunks->u.loop.kind, LOOP_CHUNK);
	assert_null(chunks->u.loop.cb);
	assert_null(chunks->u.loop.lin);
	assert_string_equal(expr(t, chunks->body[0]->u.tma.slot), expr(t, issue->body[0]->u.mbar.barslot));
	assert_string_equal(expr(t, chunks->body[0]->u.tma.slot), "((i + 2) % 3)");
	assert_int_equal(census(main_).kind[ST_EXPECT_TX], 1);
	/* the epilogue keeps no empty chunk loop: the only loop is itself */
	assert_int_equal(census(k->body->body[find(k->body, ST_LOOP) + 2]).kind[ST_LOOP], 1);
}

/* A row too wide for registers is re-read from its stage by every pass: the release barrier stays. */
static void
lower_reduction_wide_row_keeps_the_release(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, NORM_SPEC("32768", ""));
	Stmt *main_ = k->body->body[find(k->body, ST_LOOP) + 1];

	assert_int_equal(k->threads, 1024);
	assert_int_equal(k->row.steps, 0);
	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_false(main_->body[find(main_, ST_COMPUTE)]->u.compute.releases);
	assert_int_equal(census(main_).kind[ST_SYNC], 1);
	assert_int_equal(main_->body[main_->nbody - 1]->kind, ST_SYNC);  /* right after the compute */
}

/*
 * A row wider than a stage holds streams in chunks: the loop nest is row ->
 * pass -> chunk, the chunk loop is the buffered one (its stage counter runs
 * on across passes and rows), each chunk (of x, and of the weights) arrives
 * by one bulk copy of its bytes, the main loop releases each stage after the chunk's compute, and
 * the epilogue is followed by one release before the next pass's prologue.
 * layernorm takes two passes: the mean and the variance together (Welford),
 * then the outputs.
 */
static void
lower_reduction_streams_wide_rows(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, NORM_SPEC("40000", ""));
	Stmt *rows = k->body->body[find(k->body, ST_LOOP)], *passes, *pro, *main_, *epi, *issue;
	int j;

	assert_int_equal(k->row.chunk, 4096);
	assert_int_equal(k->row.cap, 0);
	assert_int_equal(k->row.passes, 2);
	assert_int_equal(k->threads, 512);
	assert_int_equal(rows->u.loop.kind, LOOP_TILE);
	assert_null(rows->u.loop.cb);
	assert_int_equal(rows->body[find(rows, ST_COMPUTE)]->u.compute.phase, ROW_BEGIN);
	passes = rows->body[find(rows, ST_LOOP)];
	assert_null(passes->u.loop.cb);
	assert_string_equal(expr(t, passes->u.loop.hi), "2");
	j = find(passes, ST_LOOP);
	pro = passes->body[j];
	main_ = passes->body[j + 1];
	epi = passes->body[j + 2];
	assert_int_equal(pro->u.loop.cb->part, CB_PROLOGUE);
	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_int_equal(epi->u.loop.cb->part, CB_EPILOGUE);
	assert_int_equal(main_->u.loop.cb->stages, 4);
	assert_int_equal(main_->u.loop.cb->stage_bytes, 3 * 4096 * 2);  /* x, and w and b: weights stream with the chunk */
	assert_string_equal(expr(t, main_->u.loop.lin), "((((i * 2) + pass) * nchunks) + ch)");
	issue = main_->body[0];
	assert_int_equal(issue->body[0]->kind, ST_EXPECT_TX);
	/* one expect_tx of the three copies' bytes (x, w, b) */
	assert_string_equal(expr(t, issue->body[0]->u.mbar.more),
	                    "(((min(4096, (cols - ((ch + 3) * 4096))) * 2) + (min(4096, (cols - ((ch + 3) * 4096))) * 2)) + "
	                    "(min(4096, (cols - ((ch + 3) * 4096))) * 2))");
	assert_int_equal(census(issue).kind[ST_TMA_LOAD], 3);
	assert_int_equal(census(main_).kind[ST_MBAR_WAIT], 1);
	assert_int_equal(census(main_).kind[ST_SYNC], 1);
	assert_int_equal(main_->body[main_->nbody - 1]->kind, ST_SYNC);
	assert_int_equal(main_->body[main_->nbody - 2]->u.compute.phase, ROW_CHUNK);
	assert_int_equal(census(epi).kind[ST_SYNC], 0);
	assert_int_equal(passes->body[j + 3]->kind, ST_SYNC);  /* the next prologue refills what the epilogue read */
	assert_int_equal(passes->body[j + 4]->u.compute.phase, ROW_PASS_END);
	assert_int_equal(rows->body[rows->nbody - 1]->u.compute.phase, ROW_END);
}

/* The levels of softmax's reductions: max 1, sum 2; streamed, the sum joins the max's pass (online). */
static void
row_levels_online_softmax(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, SOFTMAX_SPEC("4096"));
	const Fusion *f = k->fusion;
	int *level = test_malloc((size_t)f->ntensor * sizeof *level);
	int *online = test_malloc((size_t)f->ntensor * sizeof *online);
	int i, max = 0, sum = 0;

	for (i = 1; i < f->nop; i++) {
		if (f->op[i].kind == OP_MAX)
			max = f->op[i].out;
		if (f->op[i].kind == OP_SUM)
			sum = f->op[i].out;
	}
	assert_true(max && sum);
	assert_int_equal(k->row.chunk, 0);
	assert_int_equal(kir_row_levels(f, k->row.view, k->row.chunk > 0, level, online), 2);
	assert_int_equal(level[max], 1);
	assert_int_equal(level[sum], 2);
	assert_int_equal(online[sum], 0);
	k->row.chunk = 4096;  /* the same fusion, streamed */
	assert_int_equal(kir_row_levels(f, k->row.view, k->row.chunk > 0, level, online), 1);
	assert_int_equal(level[sum], 1);
	assert_int_equal(online[sum], max);
	assert_int_equal(online[max], 0);
	test_free(level);
	test_free(online);
}

/*
 * Which reductions share a pass when streamed: a variance about its own
 * mean (layernorm's, or one written by hand) does; a sum of squares, or a
 * mean of squares about another reduction (the max), does not.
 */
static void
row_levels_one_pass_variance(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: v\nsizes: {M: 4, N: 40000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\nops:\n"
		"  - {out: m, op: mean, in: [x]}\n  - {out: d, op: sub, in: [x, m]}\n"
		"  - {out: dd, op: mul, in: [d, d]}\n  - {out: v, op: mean, in: [dd]}\n"
		"  - {out: ss, op: sum, in: [dd]}\n  - {out: mx, op: max, in: [x]}\n"
		"  - {out: g, op: sub, in: [x, mx]}\n  - {out: gg, op: mul, in: [g, g]}\n"
		"  - {out: gs, op: mean, in: [gg]}\n"
		"outputs:\n  v: {dtype: f32}\n  ss: {dtype: f32}\n  gs: {dtype: f32}\n";
	Kernel *k = lower_spec(t, spec);
	const Fusion *f = k->fusion;
	int *level = test_malloc((size_t)f->ntensor * sizeof *level);
	int *online = test_malloc((size_t)f->ntensor * sizeof *online);
	int i, m = 0, v = 0, ss = 0, gs = 0;

	for (i = 1; i < f->ntensor; i++) {
		m = strcmp(f->tensor[i].name, "m") ? m : i;
		v = strcmp(f->tensor[i].name, "v") ? v : i;
		ss = strcmp(f->tensor[i].name, "ss") ? ss : i;
		gs = strcmp(f->tensor[i].name, "gs") ? gs : i;
	}
	assert_int_equal(k->row.chunk, 4096);
	assert_int_equal(kir_row_levels(f, k->row.view, k->row.chunk > 0, level, online), 2);
	assert_int_equal(level[v], 1);
	assert_int_equal(online[v], m);
	assert_int_equal(level[ss], 2);
	assert_int_equal(online[ss], 0);
	assert_int_equal(level[gs], 2);
	assert_int_equal(online[gs], 0);
	assert_int_equal(k->row.passes, 2);  /* no full-row output: the second level's pass is the last */
	test_free(level);
	test_free(online);
}

/* A streamed softmax reads each row twice: max and sum in one pass, then the outputs. */
static void
lower_reduction_online_softmax_passes(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, SOFTMAX_SPEC("100000"));

	assert_int_equal(k->row.chunk, 4096);
	assert_int_equal(k->row.passes, 2);
}

/*
 * One CTA a row: a row in registers is loaded straight from global memory
 * (no buffer, no barrier, nothing for circular_buffer or sync to place); a
 * row re-read from shared memory takes one stage; a streamed row still
 * pipelines its chunks.
 */
static void
lower_reduction_one_cta_a_row(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, NORM_SPEC("1000", "schedule: {persistent: false}\n"));

	assert_false(k->persistent);
	assert_true(k->row.direct);
	assert_int_equal(k->nbuf, 1);   /* [0] unused: no buffer */
	assert_int_equal(k->nbar, 1);
	assert_false(kir_has_load(k->body));
	reset_comp(t);
	k = lower_spec(t, NORM_SPEC("1000", "schedule: {persistent: false, stages: 1}\n"));
	assert_false(k->row.direct);
	assert_int_equal(k->buf[1].stages, 1);
	reset_comp(t);
	k = lower_spec(t, NORM_SPEC("1000", "schedule: {persistent: true}\n"));
	assert_true(k->persistent);
	assert_false(k->row.direct);
	assert_int_equal(k->buf[1].stages, 2);
	reset_comp(t);
	k = lower_spec(t, NORM_SPEC("20000", "schedule: {persistent: false}\n"));
	assert_int_equal(k->row.steps, 0);   /* re-read from shared memory: staged */
	assert_false(k->row.direct);
	assert_int_equal(k->buf[1].stages, 1);
	reset_comp(t);
	k = lower_spec(t, NORM_SPEC("40000", "schedule: {persistent: false}\n"));
	assert_false(k->persistent);
	assert_int_equal(k->row.chunk, 4096);
	assert_int_equal(k->buf[1].stages, 4);
}

/*
 * The default for a row in registers: one CTA a row, loaded straight from
 * global memory, unless the schedule asks for the pipeline.  A row with two
 * levels of reductions that keeps no computed values between its passes
 * (layernorm; not softmax, which keeps exp's) takes 32 elements a thread, at
 * 40 warps an SM; a row with one level (rmsnorm) is loaded again for the
 * output pass (row.reread), at 64 warps; others hold 16, at 48 warps.  After
 * a spill (Comp.row_fallback, which compile_kernel sets and test_api checks
 * end to end) 32 and reread drop to 16 held, and 16 to the persistent
 * pipeline unless the schedule asks for one CTA a row.
 */
static void
lower_reduction_direct_by_default(void **state)
{
	Fixture *t = *state;
#define ROWS(inputs, op, sched) \
	"fusion: d\nsizes: {M: 512, N: 4096}\ninputs:\n" inputs "ops:\n" op "outputs:\n  y: {dtype: bf16}\n" sched
#define X "  x: {dtype: bf16, shape: [M, N]}\n"
#define W "  w: {dtype: bf16, shape: [N]}\n"
#define LN ROWS(X W "  b: {dtype: bf16, shape: [N]}\n", "  - {out: y, op: layernorm, in: [x, w, b]}\n", "")
#define RMS(sched) ROWS(X W, "  - {out: y, op: rmsnorm, in: [x, w]}\n", sched)
	/* threads 0: the persistent pipeline (256 threads, 2 steps, staged); REREAD: row.reread */
	static const struct { const char *spec; RowFallback fallback; int threads, steps; bool reread; } cases[] = {
		{ROWS(X, "  - {out: y, op: softmax, in: [x]}\n", ""), ROW_FB_NONE, 256, 2, false},
		{RMS(""), ROW_FB_NONE, 256, 2, true},
		{RMS(""), ROW_FB_HELD, 256, 2, false},
		{LN, ROW_FB_NONE, 128, 4, false},
		{LN, ROW_FB_HELD, 256, 2, false},
		{LN, ROW_FB_PIPELINE, 0, 2, false},
		{ROWS(X "  r: {dtype: bf16, shape: [M, N]}\n",
		      "  - {out: h, op: add, in: [x, r]}\n  - {out: y, op: softmax, in: [h]}\n", ""), ROW_FB_NONE, 256, 2, false},
		{RMS("schedule: {persistent: true}\n"), ROW_FB_NONE, 0, 2, false},
		{RMS("schedule: {stages: 2}\n"), ROW_FB_NONE, 0, 2, false},
		{RMS(""), ROW_FB_PIPELINE, 0, 2, false},
		{RMS("schedule: {persistent: false}\n"), ROW_FB_PIPELINE, 256, 2, false},
		{RMS("schedule: {persistent: false}\n"), ROW_FB_NONE, 256, 2, true},
	};
#undef RMS
#undef LN
#undef ROWS
#undef X
#undef W
	int i;

	for (i = 0; i < countof(cases); i++) {
		bool direct = cases[i].threads > 0;
		Kernel *k;

		reset_comp(t);
		t->c.row_fallback = cases[i].fallback;
		k = lower_spec(t, cases[i].spec);
		if (k->row.direct != direct || k->row.steps != cases[i].steps ||
		    k->threads != (direct ? cases[i].threads : 256))
			fail_msg("case %d: row.direct %d, %d threads, %d steps; expected %d, %d, %d", i, k->row.direct,
			         k->threads, k->row.steps, direct, direct ? cases[i].threads : 256, cases[i].steps);
		assert_int_equal(k->row.deep, cases[i].steps == 4);
		assert_int_equal(k->row.reread, cases[i].reread);
		assert_int_equal(k->persistent, !direct);
		assert_int_equal(kir_has_load(k->body), !direct);
	}
}

/* The statement of BLOCK (or a block inside it) that lets VAR, or NULL. */
static const Stmt *
let_of(const Stmt *block, int var)
{
	const Stmt *s;
	int i;

	for (i = 0; i < block->nbody; i++) {
		if (block->body[i]->kind == ST_LET && block->body[i]->u.let.var == var)
			return block->body[i];
		if ((s = let_of(block->body[i], var)))
			return s;
	}
	return NULL;
}

/*
 * A direct row of at most 1024 elements is a group of lanes, several rows a
 * CTA: the tiles are ceil(rows / rows a CTA), a tile's first row is the
 * tile times that; wider rows keep a tile a row.
 */
static void
lower_reduction_narrow_rows_share_a_cta(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, NORM_SPEC("128", ""));
	const Stmt *tiles, *loop, *row0;
	Buf b;

	assert_true(k->row.direct);
	assert_int_equal(k->row.lanes, 4);
	assert_int_equal(k->row.steps, 4);
	assert_int_equal(k->tile_rows, 64);
	assert_int_equal(k->threads, 256);
	assert_false(kir_has_load(k->body));
	tiles = let_of(k->body, k->ntile_var);
	assert_non_null(tiles);
	assert_int_equal(tiles->u.let.value->kind, EX_CEILDIV);
	assert_int_equal(tiles->u.let.value->a->var, k->rows_var);
	assert_int_equal(tiles->u.let.value->b->ival, 64);
	loop = k->body->body[find(k->body, ST_LOOP)];
	row0 = loop->body[find(loop, ST_LET)];
	assert_int_equal(row0->u.let.value->kind, EX_MUL);
	assert_int_equal(row0->u.let.value->b->ival, 64);
	buf_init(&b, t->c.arena);
	kernel_print(&b, k);
	assert_non_null(strstr(buf_str(&b), "(4 steps of 8 a thread), loaded straight from global memory, 4 threads "
	                       "a row, 64 rows a CTA"));
	reset_comp(t);
	t->c.row_fallback = ROW_FB_HELD;   /* after a spill: one step of 8 */
	k = lower_spec(t, NORM_SPEC("128", ""));
	assert_int_equal(k->row.lanes, 16);
	assert_int_equal(k->row.steps, 1);
	assert_int_equal(k->tile_rows, 16);
	reset_comp(t);
	k = lower_spec(t, NORM_SPEC("1032", ""));
	assert_int_equal(k->row.lanes, 0);
	assert_int_equal(k->tile_rows, 1);
	assert_int_equal(k->ntile_var, k->rows_var);
}

#define RMS_BWD_SPEC(width, extra_ops, extra_outs) \
	"fusion: rb\nsizes: {M: 512, N: " width "}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n" \
	"  dy: {dtype: bf16, shape: [M, N]}\n  rstd: {dtype: f32, shape: [M, 1]}\n  w: {dtype: bf16, shape: [N]}\n" \
	"ops:\n  - {out: xhat, op: mul, in: [x, rstd]}\n  - {out: g, op: mul, in: [dy, w]}\n" \
	"  - {out: gx, op: mul, in: [g, xhat]}\n  - {out: c, op: mean, in: [gx], dim: -1, keepdim: true}\n" \
	"  - {out: t, op: mul, in: [xhat, c]}\n  - {out: u, op: sub, in: [g, t]}\n" \
	"  - {out: dx, op: mul, in: [u, rstd]}\n  - {out: dyx, op: mul, in: [dy, xhat]}\n" \
	"  - {out: dw, op: sum, in: [dyx], dim: 0}\n  - {out: db, op: max, in: [dy], dim: 0}\n" extra_ops \
	"outputs:\n  dx: {dtype: bf16}\n  dw: {dtype: f32}\n  db: {}\n" extra_outs

/*
 * A row's reduction beside sums over the rows (an RMSNorm's backward): one
 * level of row reductions (the sums over the rows are none), a persistent
 * pipeline of four stages whatever the default would be, a step of 8 a
 * thread, the sums' results reduced pointer params, the workspace and its
 * switch, the CTAs sharing the rows SPLITS apart, and one meeting after the
 * buffered loops, at the body's end.
 */
static void
lower_reduction_sums_over_rows(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, RMS_BWD_SPEC("4096", "", ""));
	const Fusion *f = t->c.fusion;
	int *level = arena_alloc(t->c.arena, (size_t)f->ntensor * sizeof *level), i, w = 0, loops = 0, last = 0;

	assert_int_equal(f->family, FAM_REDUCTION);
	assert_int_equal(kir_row_levels(f, k->row.view, false, level, NULL), 1);
	assert_int_equal(k->row.outer, 2);
	assert_true(k->persistent);
	assert_false(k->row.direct);
	assert_int_equal(k->row.steps, 1);
	assert_int_equal(k->threads, 512);
	assert_int_equal(k->stages_default, 4);
	assert_int_equal(k->row.slot, 4 * 2 * 4096);
	for (i = 1; i < k->nparam; i++) {
		if (strcmp(k->param[i].name, "dw") == 0 || strcmp(k->param[i].name, "db") == 0)
			assert_int_equal(k->param[i].view, VIEW_REDUCED);
		w += k->param[i].kind == PK_WORKSPACE;
	}
	assert_int_equal(w, 1);
	assert_int_equal(k->param[k->row.work_param].kind, PK_WORKSPACE);
	assert_int_equal(kernel_work_slot(k), k->row.slot);
	assert_string_equal(expr(t, k->row.splits), "splits");
	assert_int_equal(census(k->body).kind[ST_ROW_MEET], 1);
	for (i = 0; i < k->body->nbody; i++) {
		loops += k->body->body[i]->kind == ST_LOOP && k->body->body[i]->u.loop.kind == LOOP_TILE;
		last = k->body->body[i]->kind == ST_ROW_MEET ? i : last;
	}
	assert_int_equal(loops, 2);   /* the main and epilogue loops compute, the meeting follows both */
	assert_int_equal(last, k->body->nbody - 1);
	assert_int_equal(kernel_verify(&t->c, k, "test"), 0);
}

#define ROW_SUM_SPEC(width, extra) \
	"fusion: rs\nsizes: {M: 512, N: " width "}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n" \
	"ops:\n  - {out: lse, op: logsumexp, in: [x], dim: -1}\n  - {out: xs, op: sub, in: [x, lse]}\n" \
	"  - {out: p, op: exp, in: [xs]}\n  - {out: big, op: gt, in: [lse, 5.0]}\n" \
	"  - {out: one, op: where, in: [big, 1.0, 0.0]}\n  - {out: total, op: sum, in: [lse], dim: [0, 1]}\n" \
	"  - {out: count, op: sum, in: [one], dim: [0, 1]}\n  - {out: frac, op: div, in: [count, 512.0]}\n" extra \
	"outputs:\n  p: {}\n  total: {}\n  frac: {}\n"

/*
 * Sums over the rows of per-row values (a loss's, a count's) and an op of
 * them: no level of the row (total's is its input's), one float each a
 * CTA's slot, the op a result after the rows too, in a row held in
 * registers and in one streamed in chunks.
 */
static void
lower_reduction_sums_of_row_values(void **state)
{
	Fixture *t = *state;
	int w;

	for (w = 0; w < 2; w++) {
		Kernel *k;
		const Fusion *f;
		int *level, total = 0, lse = 0, frac = 0, i;

		reset_comp(t);
		k = lower_spec(t, w ? ROW_SUM_SPEC("65536", "") : ROW_SUM_SPEC("1000", ""));
		f = t->c.fusion;
		for (i = 1; i < f->ntensor; i++) {
			total = strcmp(f->tensor[i].name, "total") == 0 ? i : total;
			lse = strcmp(f->tensor[i].name, "lse") == 0 ? i : lse;
			frac = strcmp(f->tensor[i].name, "frac") == 0 ? i : frac;
		}
		assert_int_equal(k->row.chunk > 0, w);
		assert_int_equal(k->row.outer, 2);
		assert_int_equal(k->row.columns, 0);
		assert_int_equal(k->row.slot, 8);
		assert_true(k->persistent);
		assert_int_equal(k->row.view[total], VIEW_REDUCED);
		assert_int_equal(k->row.view[frac], VIEW_REDUCED);   /* an op of the results alone */
		level = arena_alloc(t->c.arena, (size_t)f->ntensor * sizeof *level);
		kir_row_levels(f, k->row.view, k->row.chunk > 0, level, NULL);
		assert_int_equal(level[total], level[lse]);
		assert_int_equal(census(k->body).kind[ST_ROW_MEET], 1);
		assert_int_equal(k->body->body[k->body->nbody - 1]->kind, ST_ROW_MEET);
		assert_int_equal(kernel_verify(&t->c, k, "test"), 0);
	}
}

/* What a row kernel cannot sum over its rows: a result an op of the rows reads, rows streamed in chunks, a bool. */
static void
lower_reduction_sums_over_rows_errors(void **state)
{
	Fixture *t = *state;
	static const char *const bad[][2] = {
		{RMS_BWD_SPEC("4096", "  - {out: q, op: mul, in: [dyx, dw]}\n", "  q: {}\n"),
		 "'q' (mul) reads 'dw', a result over the rows beside a reduction of each row"},
		{RMS_BWD_SPEC("65536", "", ""), "'dw' (sum over the rows) beside a reduction of rows of 65536 elements"},
		{RMS_BWD_SPEC("4096", "  - {out: p, op: gt, in: [dy, 0.0]}\n  - {out: pm, op: max, in: [p], dim: 0}\n",
		              "  pm: {}\n"), "'pm' (max over the rows of a bool value)"},
		{ROW_SUM_SPEC("1000", "  - {out: q, op: div, in: [p, count]}\n"),
		 "'q' (div) reads 'count', a result over the rows beside a reduction of each row"},
	};
	int i;

	for (i = 0; i < countof(bad); i++) {   /* (the schedule refuses the first and last, lowering the second) */
		reset_comp(t);
		t->c.src = bad[i][0];
		t->c.srclen = strlen(bad[i][0]);
		assert_int_equal(spec_read(&t->c), 0);
		assert_true(passes_run(&t->c, WSF_STAGE_FUSION_IR) < 0 || passes_run(&t->c, WSF_STAGE_KERNEL_IR) < 0);
		if (!strstr(t->msg, bad[i][1]))
			fail_msg("expected '%s' in: %s", bad[i][1], t->msg);
		assert_int_equal(t->c.status, WSF_ERR_UNSUPPORTED);
	}
}

static void
lower_reduction_errors(void **state)
{
	Fixture *t = *state;
	static const char *const bad[][2] = {
		{NORM_SPEC("3000000000", ""), "rows of 3000000000 elements are wider than a reduction kernel takes"},
		{NORM_SPEC("1024", "schedule: {warp_specialize: true}\n"),
		 "warp specialization of reduction kernels is not implemented yet"},
		/* hints a row kernel cannot honour point at the hint, not silently dropped */
		{NORM_SPEC("1024", "schedule: {tile: [2, 1024]}\n"),
		 ":11:18: error: 'tile' does not apply to row-reduction kernels"},
		{NORM_SPEC("1024", "schedule: {store: tma}\n"),
		 ":11:19: error: 'store' does not apply to row-reduction kernels"},
		{NORM_SPEC("1024", "schedule: {consumers: pingpong}\n"),
		 ":11:23: error: 'consumers' applies to matmul kernels"},
		{NORM_SPEC("1024", "schedule: {cluster: [2, 1]}\n"),
		 ":11:21: error: 'cluster' is not implemented for row-reduction kernels yet"},
		{NORM_SPEC("40000", "schedule: {signal: per_tile}\n"),
		 ":11:20: error: 'signal' is not implemented for row-reduction kernels yet"},
	};
	int i;

	for (i = 0; i < countof(bad); i++) {
		reset_comp(t);
		lower_fails(t, bad[i][0]);
		if (!strstr(t->msg, bad[i][1]))
			fail_msg("expected '%s' in: %s", bad[i][1], t->msg);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lower_reduction_buffers_the_row_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(circular_buffer_chunk_loop_fills_one_stage, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_wide_row_keeps_the_release, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_streams_wide_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(row_levels_online_softmax, setup, teardown),
		cmocka_unit_test_setup_teardown(row_levels_one_pass_variance, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_online_softmax_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_one_cta_a_row, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_direct_by_default, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_narrow_rows_share_a_cta, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_sums_over_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_sums_of_row_values, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_sums_over_rows_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_reduction_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
