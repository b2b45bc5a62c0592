/*
 * test_lower_matmul.c: the matmul family lowered from a spec and taken
 * through circular_buffer, warp_specialize and sync: which loop each side
 * buffers, the roles and their registers, that the consumers' compute loop
 * is not inlined with the producer's load loop, and every wait with its N
 * and position.  Then what this version refuses (exit status 6) and why.
 * The plans alone are test_plan_matmul.c's; the per-tile signals and waits
 * test_lower_matmul_sync.c's, the K-sums test_lower_matmul_ksum.c's, the
 * epilogue's staging test_lower_matmul_epilogue.c's, where tiles and
 * clusters go test_lower_matmul_tiles.c's (helpers: matmul_helpers.h).
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

static void
lowered_gemm(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, gemm_bias_gelu);
	Stmt *roles, *prod, *cons, *pl, *tl, *kl, *el, *x;
	const KRole *pr, *cr;
	Census n;
	int i, S;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->family, FAM_MATMUL);
	assert_int_equal(k->threads, 384);
	assert_true(k->warp_specialize && k->persistent && k->tma_store);
	/* operands: 128-byte swizzled K-major tiles of S stages; staging subtiles of two copies */
	assert_string_equal(k->buf[1].name, "tile_x");
	assert_int_equal(k->buf[1].rows, 128);
	assert_int_equal(k->buf[1].cols, 64);
	assert_int_equal(k->buf[1].swizzle, 128);
	assert_int_equal(k->buf[2].rows, 256);
	S = k->buf[1].stages;
	assert_int_equal(k->buf[2].stages, S);
	assert_true(S >= 3);
	assert_int_equal(k->buf[3].kind, BUF_STAGING);
	assert_int_equal(k->buf[3].cols, 32);
	assert_int_equal(k->buf[3].stages, 4);   /* the room the stages leave (staging_ring) */
	assert_true(kernel_smem_bytes(k) <= k->smem_budget);
	assert_int_equal(k->nacc, 2);
	assert_int_equal(k->acc[1].dtype, DT_F32);
	/* params: A [M, K] and B [N, K] carry their shapes; K is a size of its own */
	assert_int_equal(k->param[1].rank, 2);
	assert_int_equal(k->param[1].box[0], 128);
	assert_int_equal(k->param[2].box[0], 256);
	assert_int_equal(k->param[3].kind, PK_PTR);   /* the bias, read by the epilogue */
	assert_int_equal(k->param[3].view, VIEW_ROW);
	assert_int_equal(k->param[k->nparam - 1].size, SZ_INNER);

	/* roles: a producer warpgroup after two consumer warpgroups, 40 and 232 registers */
	roles = find_kind(k->body, ST_ROLES, 0);
	assert_non_null(roles);
	prod = roles->body[0];
	cons = roles->body[1];
	pr = &k->role[prod->u.role.id];
	cr = &k->role[cons->u.role.id];
	assert_int_equal(pr->kind, ROLE_PRODUCER);
	assert_int_equal(pr->first, 256);
	assert_int_equal(pr->threads, 128);
	assert_int_equal(pr->regs, 40);
	assert_int_equal(cr->threads, 256);
	assert_int_equal(cr->regs, 232);
	assert_int_equal(cr->bar_id, 1);

	/* the producer: setmaxnreg.dec, then one elected thread alone runs the tile loop around the k loop of
	   loads (not merged into one loop over both: the tile's place is computed once a tile), and nothing
	   else; no elect() inside, where the other lanes of its warp would run on through the loops */
	assert_int_equal(prod->nbody, 2);
	assert_int_equal(prod->body[0]->kind, ST_SETMAXNREG);
	assert_int_equal(prod->body[1]->kind, ST_IF);
	assert_int_equal(prod->body[1]->u.branch.cond->kind, EX_ELECT);
	assert_int_equal(prod->body[1]->nbody, 1);
	pl = prod->body[1]->body[0];
	assert_int_equal(pl->u.loop.cb->part, CB_PRODUCER);
	assert_string_equal(expr(t, pl->u.loop.hi), "my_tiles");
	assert_non_null(find_kind(pl, ST_LOOP, 0));
	assert_string_equal(expr(t, find_kind(pl, ST_LOOP, 0)->u.loop.hi), "ktiles");
	n = census(pl);
	assert_int_equal(n.kind[ST_LOOP], 2);
	assert_int_equal(n.kind[ST_TMA_LOAD], 2);
	assert_int_equal(n.kind[ST_EXPECT_TX], 1);
	assert_int_equal(n.kind[ST_MBAR_WAIT], 1);
	assert_int_equal(n.kind[ST_IF], 0);
	assert_int_equal(n.kind[ST_MMA] + n.kind[ST_COMPUTE] + n.kind[ST_TMA_STORE], 0);

	/* the consumers: P + 1 pre-arrives, then tile { k loop; one wait; the epilogue's subtiles } */
	assert_int_equal(cons->body[0]->kind, ST_SETMAXNREG);
	assert_true(cons->body[0]->u.maxnreg.inc);
	assert_string_equal(expr(t, cons->body[1]->u.loop.hi), arena_printf(t->c.arena, "%d", S - 1));
	tl = find_kind(cons, ST_LOOP, 1);
	assert_int_equal(tl->u.loop.cb->part, CB_CONSUMER);
	assert_int_equal(tl->u.loop.cb->stages, S);
	assert_int_equal(tl->u.loop.cb->prefetch, S - 2);   /* an mma reads the stages: one group in flight */
	kl = find_kind(tl, ST_LOOP, 0);
	el = epilogue_of(k, tl);
	assert_non_null(kl);
	assert_non_null(el);
	assert_int_equal(census(kl).kind[ST_TMA_LOAD], 0);   /* not inlined with the load loop */
	i = 0;
	assert_int_equal(kl->body[i]->kind, ST_MBAR_WAIT);
	assert_int_equal(kl->body[i++]->u.mbar.bar, tl->u.loop.cb->full_bar);
	assert_int_equal(kl->body[i++]->kind, ST_MMA_FENCE);
	assert_int_equal(kl->body[i++]->kind, ST_MMA);
	assert_int_equal(kl->body[i++]->kind, ST_MMA_COMMIT);
	assert_int_equal(kl->body[i]->kind, ST_MMA_WAIT);
	assert_int_equal(kl->body[i++]->u.group.pending, 1);
	assert_int_equal(kl->body[i]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(kl->body[i++]->u.mbar.bar, tl->u.loop.cb->empty_bar);
	assert_int_equal(kl->nbody, i);
	/* the bias's columns fetched before the k loop and put in the row buffer after it; then one
	   wait_group 0 and one barrier (the row's copy, every thread's) before the epilogue, none in it */
	for (i = 0; tl->body[i] != kl; i++)
		;
	assert_int_equal(tl->body[i - 1]->kind, ST_ROW_FETCH);
	assert_int_equal(tl->body[i + 1]->kind, ST_ROW_PUT);
	assert_int_equal(tl->body[i + 2]->kind, ST_MMA_WAIT);
	assert_int_equal(tl->body[i + 2]->u.group.pending, 0);
	assert_int_equal(tl->body[i + 3]->kind, ST_SYNC);
	assert_int_equal(tl->body[i + 3]->u.sync.id, 1);
	assert_ptr_equal(tl->body[i + 4], el);
	assert_int_equal(census(el).kind[ST_MMA_WAIT], 0);
	/* a subtile: compute, fence, the read-wait on the store's named barrier, the store and its commit;
	   of four copies the two stores before may still read theirs */
	i = 0;
	assert_int_equal(el->body[i++]->kind, ST_COMPUTE);
	assert_int_equal(el->body[i++]->kind, ST_FENCE_PROXY_ASYNC);
	x = el->body[i++];
	assert_int_equal(x->body[0]->kind, ST_BULK_WAIT);
	assert_true(x->body[0]->u.group.read);
	assert_int_equal(x->body[0]->u.group.pending, 2);
	x = el->body[i++];
	assert_int_equal(x->kind, ST_SYNC);
	assert_int_equal(x->u.sync.id, 1);
	assert_int_equal(x->u.sync.threads, 256);
	x = el->body[i++];
	assert_int_equal(x->body[0]->kind, ST_TMA_STORE);
	assert_int_equal(x->body[1]->kind, ST_BULK_COMMIT);
	assert_int_equal(el->nbody, i);
	/* the data stored must land before the consumers end */
	x = cons->body[cons->nbody - 1];
	assert_int_equal(x->body[0]->kind, ST_BULK_WAIT);
	assert_false(x->body[0]->u.group.read);
}

/* The loads into buffer BUF under S, in order, appended to OUT[N..]; the new count. */
static int
loads_of(Stmt *s, int buf, Stmt **out, int n)
{
	int i;

	if (s->kind == ST_TMA_LOAD && s->u.tma.buf == buf) {
		out[n] = s;
		return n + 1;
	}
	for (i = 0; i < s->nbody; i++)
		n = loads_of(s->body[i], buf, out, n);
	return n;
}

/*
 * Operands whose contiguous dim is M or N (A [K, M] with transpose_a, B [K,
 * N]) load MN-major: boxes [BK, 64], one a 64-wide chunk BK x 64 elements
 * apart in the copy, and the mma is told; the tile hint sets BN; K is the
 * dim the operands share, wherever it sits.
 */
static void
lowered_mn_major(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, HEAD "inputs:\n  a: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [K, N]}\n"
	                      "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true}\noutputs:\n  y: {}\n"
	                      "schedule: {tile: [128, 128, 64], cluster: [1, 1]}\n");
	Stmt *ld[8], *mma, *roles, *tl, *kl;
	int i, n;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->tile_rows, 128);
	assert_int_equal(k->tile_cols, 128);
	assert_int_equal(k->buf[2].rows, 128);   /* B's copy: 128 x 64 elements, two 64 x 64 chunks */
	for (i = 1; i <= 2; i++) {
		assert_int_equal(k->param[i].box[0], 64);   /* BK rows of K */
		assert_int_equal(k->param[i].box[1], 64);   /* 64 contiguous M or N: the 128-byte swizzle span */
	}
	assert_int_equal(k->param[k->nparam - 1].size, SZ_INNER);
	assert_int_equal(k->param[k->nparam - 1].dim[0].sym, k->fusion->tensor[k->fusion->input[0]].dim[0].sym);
	roles = find_kind(k->body, ST_ROLES, 0);
	for (i = 1; i <= 2; i++) {
		n = loads_of(roles->body[0], i, ld, 0);
		assert_int_equal(n, 2);
		assert_null(ld[0]->u.tma.off);
		assert_string_equal(expr(t, ld[1]->u.tma.off), "4096");
		/* the row coordinate is the k-step's, the column the chunk's */
		assert_non_null(strstr(expr(t, ld[0]->u.tma.row), "* 64)"));
		assert_non_null(strstr(expr(t, ld[1]->u.tma.col), "+ 64)"));
	}
	tl = find_kind(roles->body[1], ST_LOOP, 1);   /* the consumers' tile loop, after the pre-arrives */
	assert_non_null(tl);
	kl = find_kind(tl, ST_LOOP, 0);
	assert_non_null(kl);
	mma = find_kind(kl, ST_MMA, 0);
	assert_non_null(mma);
	assert_false(mma->u.mma.shape->a_kmajor);
	assert_false(mma->u.mma.shape->b_kmajor);
	assert_int_equal(mma->u.mma.shape->n, 128);
}

/* Batch dims on A alone: its rows and the batch's are one matrix, and so are the output's. */
static void
lowered_batch_a(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, HEAD "inputs:\n  a: {dtype: bf16, shape: [3, M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	                      "  r: {dtype: bf16, shape: [3, M, N]}\n  s: {dtype: f32, shape: [3, M, 1]}\n"
	                      "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
	                      "  - {out: z, op: mul, in: [y, s]}\n  - {out: o, op: add, in: [z, r]}\noutputs:\n  o: {}\n");

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->param[1].rank, 3);
	assert_int_equal(k->param[1].box[0], 128);
	assert_int_equal(k->param[3].view, VIEW_FULL);   /* r */
	assert_int_equal(k->param[4].view, VIEW_COL);    /* s */
}

/*
 * Batch dims on both operands: tiles run over every batch (tiles =
 * batch_tiles x batch, bt = tile / batch_tiles), each batched tensor's
 * loads and stores carry bt as a third coordinate, and the epilogue knows it.
 */
static void
lowered_batched(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, HEAD "inputs:\n  a: {dtype: bf16, shape: [2, M, K]}\n  w: {dtype: bf16, shape: [2, K, N]}\n"
	                      "ops:\n  - {out: y, op: matmul, in: [a, w]}\noutputs:\n  y: {}\n");
	Stmt *roles, *ld[8], *tl, *el, *x;
	int i, n, batch = 0;

	if (!k)
		fail_msg("%s", t->msg);
	assert_true(k->mm.batched);
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_SIZE && k->param[i].size == SZ_BATCH)
			batch = i;
	assert_true(batch > 0);
	for (i = 0; i < k->body->nbody; i++)
		if (k->body->body[i]->kind == ST_LET && k->body->body[i]->u.let.var == k->ntile_var)
			assert_string_equal(expr(t, k->body->body[i]->u.let.value), "(batch_tiles * batch)");
	roles = find_kind(k->body, ST_ROLES, 0);
	for (i = 1; i <= 2; i++) {
		int j;

		n = loads_of(roles->body[0], i, ld, 0);
		assert_int_equal(n, i == 1 ? 1 : 4);   /* A K-major: one box; B [K, N]: four 64-wide chunks */
		for (j = 0; j < n; j++) {
			assert_non_null(ld[j]->u.tma.batch);
			assert_string_equal(expr(t, ld[j]->u.tma.batch), "bt");   /* the producer's tile / batch_tiles, as the consumers' */
		}
	}
	tl = find_kind(roles->body[1], ST_LOOP, 1);
	el = epilogue_of(k, tl);
	assert_non_null(el);
	assert_int_equal(el->body[0]->kind, ST_COMPUTE);
	assert_string_equal(expr(t, el->body[0]->u.compute.batch), "bt");
	x = el->body[el->nbody - 1];
	assert_int_equal(x->body[0]->kind, ST_TMA_STORE);
	assert_string_equal(expr(t, x->body[0]->u.tma.batch), "bt");
}

/*
 * Ping-pong consumers: each warpgroup owns 64-row tiles, wg, wg + 2, ...;
 * the k loops take turns (bar.sync on 3 + wg before, bar.arrive on 4 - wg
 * after); a warpgroup releases only the stages it read: the k-step before
 * inside the loop (from the second), the last after the loop's wait_group 0;
 * every stage starts empty by warpgroup 0's arrivals, 128 of them a stage;
 * the staging barrier is the warpgroup's own, and each stores its half.
 */
static void
lowered_pingpong(void **state)
{
	Fixture *t = *state;
	Kernel *k = kernel_of(t, gemm_bias_gelu_pp);
	Stmt *roles, *cons, *pre, *tl, *kl, *el, *x;
	int i, S;

	if (!k)
		fail_msg("%s", t->msg);
	assert_true(k->mm.pingpong);
	assert_int_equal(k->tile_rows, 64);
	assert_int_equal(k->buf[1].rows, 64);   /* A: one warpgroup's 64 rows */
	assert_int_equal(k->buf[3].rows, 128);  /* staging: both warpgroups' halves */
	assert_int_equal(k->acc[1].rows, 64);
	S = k->buf[1].stages;
	assert_int_equal(k->bar[2].arrivals, 128);   /* empty: one warpgroup releases a stage */
	roles = find_kind(k->body, ST_ROLES, 0);
	cons = roles->body[1];
	pre = find_kind(cons, ST_IF, 0);   /* if (wg == 0): every stage starts empty */
	assert_non_null(pre);
	assert_string_equal(expr(t, pre->u.branch.cond), "(wg == 0)");
	assert_string_equal(expr(t, pre->body[0]->u.loop.hi), arena_printf(t->c.arena, "%d", S));
	tl = find_kind(cons, ST_LOOP, 0);
	assert_string_equal(expr(t, tl->u.loop.lo), "wg");
	assert_string_equal(expr(t, tl->u.loop.step), "2");
	for (i = 0; tl->body[i]->kind != ST_LOOP; i++)
		;
	x = tl->body[i - 1];   /* the turn: wait for the other warpgroup's k loop */
	assert_int_equal(x->kind, ST_IF);
	assert_int_equal(x->body[0]->kind, ST_SYNC);
	assert_false(x->body[0]->u.sync.arrive_only);
	assert_string_equal(expr(t, x->body[0]->u.sync.id_expr), "(3 + wg)");
	kl = tl->body[i];
	x = kl->body[kl->nbody - 1];   /* the release of this warpgroup's previous k-step */
	assert_int_equal(x->kind, ST_IF);
	assert_string_equal(expr(t, x->u.branch.cond), "(kk >= 1)");
	assert_int_equal(x->body[0]->kind, ST_MBAR_ARRIVE);
	x = tl->body[i + 1];   /* the other warpgroup's turn, while these mmas drain */
	assert_int_equal(x->body[0]->kind, ST_SYNC);
	assert_true(x->body[0]->u.sync.arrive_only);
	assert_string_equal(expr(t, x->body[0]->u.sync.id_expr), "(4 - wg)");
	assert_int_equal(tl->body[i + 2]->kind, ST_MMA_WAIT);
	assert_int_equal(tl->body[i + 2]->u.group.pending, 0);
	assert_int_equal(tl->body[i + 3]->kind, ST_MBAR_ARRIVE);   /* the tile's last k-step */
	el = tl->body[i + 4];
	assert_int_equal(el->kind, ST_LOOP);
	assert_int_equal(census(el).kind[ST_MMA_WAIT], 0);
	for (i = 0; i < el->nbody; i++)
		if (el->body[i]->kind == ST_SYNC) {
			assert_string_equal(expr(t, el->body[i]->u.sync.id_expr), "(1 + wg)");
			assert_int_equal(el->body[i]->u.sync.threads, 128);
		}
	x = el->body[el->nbody - 1];
	assert_int_equal(x->body[0]->kind, ST_TMA_STORE);
	assert_string_equal(expr(t, x->body[0]->u.tma.off), "(wg * 2048)");
}

/*
 * Ping-pong on one stage: the k loop's wait leaves no mma in flight, and the
 * producer cannot load the next k-step before the stage is free, so each
 * k-step releases its own stage at once, unconditionally (releasing the one
 * before, as with more stages, deadlocked: the GPU hung), and nothing is
 * released after the loop; the loop's wait is wait_group 0.
 */
static void
pingpong_one_stage(void **state)
{
	Fixture *t = *state;
	char spec[sizeof gemm_bias_gelu_pp + 32];
	Kernel *k;
	Stmt *roles, *tl, *kl, *x;
	int i;

	snprintf(spec, sizeof spec, "%.*sschedule: {consumers: pingpong, stages: 1}\n",
	         (int)(strstr(gemm_bias_gelu_pp, "schedule:") - gemm_bias_gelu_pp), gemm_bias_gelu_pp);
	k = kernel_of(t, spec);
	if (!k)
		fail_msg("%s", t->msg);
	assert_true(k->mm.pingpong);
	assert_int_equal(k->buf[1].stages, 1);
	roles = find_kind(k->body, ST_ROLES, 0);
	tl = find_kind(roles->body[1], ST_LOOP, 0);
	for (i = 0; tl->body[i]->kind != ST_LOOP; i++)
		;
	kl = tl->body[i];
	assert_int_equal(census(kl).kind[ST_MBAR_ARRIVE], 1);
	assert_int_equal(census(kl).kind[ST_IF], 0);
	x = kl->body[kl->nbody - 1];
	assert_int_equal(x->kind, ST_MBAR_ARRIVE);
	assert_int_equal(x->u.mbar.bar, tl->u.loop.cb->empty_bar);
	x = kl->body[kl->nbody - 2];
	assert_int_equal(x->kind, ST_MMA_WAIT);
	assert_int_equal(x->u.group.pending, 0);
	assert_int_equal(tl->body[i + 2]->kind, ST_MMA_WAIT);   /* after the other warpgroup's turn */
	assert_int_not_equal(tl->body[i + 3]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(census(tl).kind[ST_MBAR_ARRIVE], 1);
}

/*
 * The minimal wgmma RAW sync (nvFuser #3843), in the kernel IR and in the
 * CUDA: one commit group a k-step whatever the number of mmas in it, one
 * wgmma.wait_group 0 before the first read of the accumulators and none
 * after it.  Horizontally fused matmuls (SwiGLU: gate and up on the same A
 * tile, their B side by side in one operand of 2 x 128 rows): 1 mma of N =
 * 256 into one accumulator whose columns 128.. are u's, 1 commit, 1
 * wait_group 1 in the k loop, 1 wait_group 0 before the epilogue.  mma -> add -> gelu: the one wait is before the
 * subtile loop whose compute does the add.
 */
/*
 * Two matmuls sharing A on K-major Bs with no hint on how to compute them
 * (group_default): ping-pong warpgroups, each its own 128 x 96 tile of both,
 * one mma of N = 192, from GROUP_PP_TILES tiles on; fewer tiles, an N-major
 * B or a hint keep the cooperative tile of 128 columns each, as a residual
 * to add (its staging copies carry it) and a bias row do (ping-pong
 * spilled).  The spec's schedule is left as written (the tune candidates
 * read it).
 */
static void
group_pingpong_default(void **state)
{
	Fixture *t = *state;
	static const char *const cases[][2] = {
		{"sizes: {M: 8192, N: 14336, K: 4096}\n", ""},
		{"sizes: {M: 1024, N: 4096, K: 4096}\n", ""},           /* 8 x 43 tiles of 96 columns */
		{"sizes: {M: 8192, N: 14336, K: 4096}\n", "schedule: {stages: 3}\n"},
		{"sizes: {M: 8192, N: 14336, K: 4096}\n", "schedule: {consumers: pingpong}\n"},
	};
	static const int want_pp[] = {1, 0, 0, 1}, want_cols[] = {96, 128, 128, 128}, want_rows[] = {128, 128, 128, 64};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		const char *spec = arena_printf(t->c.arena,
			"fusion: swiglu\n%sinputs:\n  x: {dtype: bf16, shape: [M, K]}\n  wg: {dtype: bf16, shape: [N, K]}\n"
			"  wu: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n"
			"  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n"
			"  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: bf16}\n%s", cases[i][0], cases[i][1]);
		Kernel *k = kernel_of(t, spec);

		if (!k)
			fail_msg("case %d: %s", i, t->msg);
		assert_int_equal(k->mm.pingpong, want_pp[i]);
		assert_int_equal(k->tile_cols, want_cols[i]);
		assert_int_equal(k->tile_rows, want_rows[i]);
		if (i == 0) {
			Stmt *kl = find_kind(find_kind(find_kind(k->body, ST_ROLES, 0)->body[1], ST_LOOP, 0), ST_LOOP, 0);

			assert_int_equal(find_kind(kl, ST_MMA, 0)->u.mma.shape->n, 192);
			assert_int_equal(k->mm.row_blocks, 2);
			assert_int_equal(t->c.fusion->sched.ntile, 0);   /* the spec's schedule, as written */
			assert_int_equal(t->c.fusion->sched.consumers, 0);
		}
		teardown(state);
		if (setup(state) < 0)
			fail_msg("setup");
		t = *state;
	}
	for (i = 0; i < 2; i++) {
		const char *spec = arena_printf(t->c.arena,
			"fusion: swiglu\nsizes: {M: 8192, N: 14336, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
			"  wg: {dtype: bf16, shape: [N, K]}\n  wu: {dtype: bf16, shape: [N, K]}\n  r: {dtype: bf16, shape: %s}\n"
			"ops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n"
			"  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n"
			"  - {out: h, op: mul, in: [sg, u]}\n  - {out: o, op: add, in: [h, r]}\noutputs:\n  o: {dtype: bf16}\n",
			i ? "[N]" : "[M, N]");
		Kernel *k = kernel_of(t, spec);
		int b, carried = 0;

		if (!k)
			fail_msg("case %d: %s", i, t->msg);
		assert_int_equal(k->mm.pingpong, 0);   /* a residual or a bias row: cooperative (ping-pong spilled) */
		assert_int_equal(k->tile_cols, 128);
		for (b = 1; b < k->nbuf; b++)
			carried += k->buf[b].kind == BUF_STAGING && k->buf[b].preload;
		assert_int_equal(carried, !i);
		teardown(state);
		if (setup(state) < 0)
			fail_msg("setup");
		t = *state;
	}
}

static void
minimal_mma_sync(void **state)
{
	Fixture *t = *state;
	static const char swiglu[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  wg: {dtype: bf16, shape: [N, K]}\n"
		"  wu: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: g, op: matmul, in: [x, wg], transpose_b: true}\n"
		"  - {out: u, op: matmul, in: [x, wu], transpose_b: true}\n  - {out: sg, op: silu, in: [g]}\n"
		"  - {out: h, op: mul, in: [sg, u]}\noutputs:\n  h: {dtype: bf16}\nschedule: {consumers: cooperative}\n";
	Kernel *k = kernel_of(t, swiglu);
	Stmt *roles, *tl, *kl, *el;
	const char *cu;
	Census n;
	int i, waits0 = 0;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->nacc, 3);          /* acc_g, acc_u */
	assert_int_equal(k->tile_cols, 128);   /* the output tile: 128 columns of g and of u, 2 x 64 registers a thread */
	assert_int_equal(k->acc[1].cols, 256);
	assert_int_equal(k->acc[2].alias, 1);
	assert_int_equal(k->acc[2].col, 128);
	roles = find_kind(k->body, ST_ROLES, 0);
	assert_int_equal(census(roles->body[0]).kind[ST_TMA_LOAD], 3);   /* x once, wg, wu */
	tl = find_kind(roles->body[1], ST_LOOP, 1);
	kl = find_kind(tl, ST_LOOP, 0);
	el = epilogue_of(k, tl);
	n = census(kl);
	assert_int_equal(n.kind[ST_MMA], 1);
	assert_int_equal(find_kind(kl, ST_MMA, 0)->u.mma.shape->n, 256);
	assert_int_equal(n.kind[ST_MMA_COMMIT], 1);
	assert_int_equal(n.kind[ST_MMA_WAIT], 1);
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i]->kind == ST_MMA_WAIT) {
			assert_int_equal(tl->body[i]->u.group.pending, 0);
			assert_ptr_equal(tl->body[i + 1], el);   /* right before the first read */
			waits0++;
		}
	assert_int_equal(waits0, 1);
	assert_int_equal(census(el).kind[ST_MMA_WAIT], 0);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_wgmma(acc_g,"), 1);
	assert_int_equal(count(cu, "wsf_wgmma(acc_u,"), 0);
	assert_int_equal(count(cu, "wgmma.mma_async.sync.aligned.m64n256k16"), 1);
	assert_int_equal(count(cu, "const float v_u = acc_g[64 + 16 * sub + jj];"), 1);
	assert_int_equal(count(cu, "wsf_mma_commit();"), 1);
	assert_int_equal(count(cu, "wsf_mma_wait<1>();"), 1);
	assert_int_equal(count(cu, "wsf_mma_wait<0>();"), 1);
	teardown(state);
	setup(state);
	t = *state;
	if (!(k = kernel_of(t, gemm_bias_gelu)))
		fail_msg("%s", t->msg);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_mma_commit();"), 1);
	assert_int_equal(count(cu, "wsf_mma_wait<0>();"), 1);
	/* the wait comes before the add, which reads the accumulator */
	assert_true(strstr(cu, "wsf_mma_wait<0>();") < strstr(cu, "const float v_z = v_y + v_bias;"));
}

/*
 * Independent matmuls (PR #3843's first case): p = x w^T with a bias and
 * relu, q = y v^T with gelu, no operand in common.  In every tile their k
 * loops run one after the other through the same stages (the second's
 * stage counter goes on where the first's stopped) into the same
 * registers (acc_q is acc_p's), each followed by its one
 * wgmma.wait_group 0 and its own epilogue: 2 waits, each right before an
 * epilogue, and each epilogue computes only its own output.
 */
static void
independent_matmuls(void **state)
{
	Fixture *t = *state;
	static const char two[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  y: {dtype: bf16, shape: [M, K]}\n  v: {dtype: bf16, shape: [N, K]}\n  bias: {dtype: f32, shape: [N]}\n"
		"ops:\n  - {out: p, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: q, op: matmul, in: [y, v], transpose_b: true}\n  - {out: pb, op: add, in: [p, bias]}\n"
		"  - {out: r, op: relu, in: [pb]}\n  - {out: s, op: gelu, in: [q]}\n"
		"outputs:\n  r: {dtype: bf16}\n  s: {dtype: f32}\n";
	Kernel *k = kernel_of(t, two);
	Stmt *roles, *tl, *kl[2], *el[2];
	const char *cu, *w0, *w1;
	int i, g, waits0 = 0;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->nacc, 3);
	assert_int_equal(k->acc[1].alias, 0);
	assert_int_equal(k->acc[2].alias, 1);   /* acc_q is acc_p's registers */
	assert_int_equal(k->tile_cols, 256);    /* one accumulator at a time: the whole tile */
	assert_int_equal(k->nbuf, 5);           /* tile_x (x, then y), tile_w (w, then v), stage_r, stage_s */
	roles = find_kind(k->body, ST_ROLES, 0);
	assert_int_equal(census(roles->body[0]).kind[ST_TMA_LOAD], 4);
	tl = find_kind(roles->body[1], ST_LOOP, 1);
	for (g = 0; g < 2; g++) {
		Census n;

		kl[g] = find_kind(tl, ST_LOOP, 2 * g);
		el[g] = find_kind(tl, ST_LOOP, 2 * g + 1);
		n = census(kl[g]);
		assert_int_equal(n.kind[ST_MMA], 1);
		assert_int_equal(n.kind[ST_MMA_COMMIT], 1);
		assert_int_equal(n.kind[ST_MMA_WAIT], 1);
		assert_int_equal(census(el[g]).kind[ST_MMA_WAIT], 0);
		assert_int_equal(census(el[g]).kind[ST_COMPUTE], 1);
	}
	assert_int_equal(kl[0]->u.loop.var != kl[1]->u.loop.var, 1);
	assert_string_equal(expr(t, kl[0]->u.loop.lin), "((i * (2 * ktiles)) + kk)");
	assert_string_equal(expr(t, kl[1]->u.loop.lin), "(((i * (2 * ktiles)) + ktiles) + kk)");
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i]->kind == ST_MMA_WAIT) {
			assert_int_equal(tl->body[i]->u.group.pending, 0);
			assert_ptr_equal(tl->body[i + 1], el[waits0]);   /* right before each epilogue */
			assert_ptr_equal(tl->body[i - 1], kl[waits0]);
			waits0++;
		}
	assert_int_equal(waits0, 2);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_wgmma(acc_p,"), 1);
	assert_int_equal(count(cu, "wsf_wgmma(acc_q,"), 1);
	assert_int_equal(count(cu, "wsf_mma_commit();"), 2);
	assert_int_equal(count(cu, "wsf_mma_wait<1>();"), 2);
	assert_int_equal(count(cu, "wsf_mma_wait<0>();"), 2);
	assert_int_equal(count(cu, "float acc_p[128];"), 1);
	assert_int_equal(count(cu, "float (&acc_q)[128] = acc_p;"), 1);
	assert_int_equal(count(cu, "[128][64] bf16: holds x's, then y's"), 1);   /* the shared stages say whose */
	assert_int_equal(count(cu, "[256][64] bf16: holds w's, then v's"), 1);
	{
		Buf b;

		buf_init(&b, t->c.arena);
		kernel_print(&b, k);
		assert_non_null(strstr(buf_str(&b), "smem tile_x: bf16[128, 64] x3 swizzle=128B loaded from x, y\n"));
		assert_non_null(strstr(buf_str(&b), "acc acc_q: f32[128, 256] in acc_p's registers\n"));
	}
	assert_int_equal(count(cu, "const float v_pb = "), 1);   /* each epilogue its own ops */
	assert_int_equal(count(cu, "const float v_s = "), 1);
	w0 = strstr(cu, "wsf_mma_wait<0>();");
	w1 = strstr(w0 + 1, "wsf_mma_wait<0>();");
	assert_true(w0 < strstr(cu, "const float v_pb = ") && strstr(cu, "const float v_pb = ") < strstr(cu, "wsf_wgmma(acc_q,"));
	assert_true(strstr(cu, "wsf_wgmma(acc_q,") < w1 && w1 < strstr(cu, "const float v_s = "));
}

/*
 * Programmatic dependent launch: a matmul kernel waits for the grid before
 * it once, at the top level after the barrier init (every thread, before
 * the roles: nothing before them touches global memory), and lets the next
 * grid launch once, last in the consumer role, after its tile loop; its
 * launch asks for programmatic stream serialization unless option pdl=0
 * (Comp.no_pdl) says not to.
 */
static void
pdl_launch(void **state)
{
	int v;

	for (v = 0; v < 2; v++) {
		Fixture *t;
		Kernel *k;
		Stmt *b;
		Buf out;
		Launch *l;
		int i, wait = -1, roles = -1, sync = -1;
		Stmt *cons = NULL;
		int loop = -1, go = -1;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		t->c.no_pdl = v == 1;
		if (!(k = kernel_of(t, gemm_bias_gelu)))
			fail_msg("%s", t->msg);
		assert_true(k->pdl);
		b = k->body;
		for (i = 0; i < b->nbody; i++) {
			assert_false(b->body[i]->kind == ST_GRID_DEP && b->body[i]->u.grid_dep.launch);
			if (b->body[i]->kind == ST_GRID_DEP)
				wait = i;
			else if (b->body[i]->kind == ST_ROLES)
				roles = i;
			else if (b->body[i]->kind == ST_SYNC && sync < 0)
				sync = i;
		}
		assert_true(sync >= 0 && sync < wait && wait < roles);
		assert_int_equal(census(b).kind[ST_GRID_DEP], 2);
		for (i = 0; i < b->body[roles]->nbody; i++)
			if (k->role[b->body[roles]->body[i]->u.role.id].kind == ROLE_CONSUMER)
				cons = b->body[roles]->body[i];
		assert_non_null(cons);
		for (i = 0; i < cons->nbody; i++)
			if (cons->body[i]->kind == ST_LOOP)
				loop = i;
			else if (cons->body[i]->kind == ST_GRID_DEP && cons->body[i]->u.grid_dep.launch)
				go = i;
		assert_true(loop >= 0 && go == loop + 1);   /* the tile loop, then the launch (then the stores' drain) */
		buf_init(&out, t->c.arena);
		assert_int_equal(codegen_emit(&t->c, &out, &l), 0);
		assert_int_equal(l->pdl, v == 0);
		assert_int_equal(count(buf_str(&out), "    wsf_grid_wait();"), 1);
		teardown((void **)&t);
	}
	(void)state;
}

/* The text of the file at PATH (from the repository root), or a failed test. */
static char *
slurp(Fixture *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = arena_alloc(t->c.arena, 1 << 16);
	size_t n;

	if (!f)
		fail_msg("cannot open %s", path);
	n = fread(s, 1, (1 << 16) - 1, f);
	fclose(f);
	s[n] = 0;
	return s;
}

/* The wgmma.wait_group statements in S: with N 0 (WAITS0), and all (ALL). */
static void
mma_waits(const Stmt *s, int *waits0, int *all)
{
	int i;

	if (!s)
		return;
	if (s->kind == ST_MMA_WAIT) {
		*waits0 += s->u.group.pending == 0;
		(*all)++;
	}
	for (i = 0; i < s->nbody; i++)
		mma_waits(s->body[i], waits0, all);
	mma_waits(st_else(s), waits0, all);
}

/*
 * PR #3843's three cases as the specs the GPU tests run (tests/gpu/run.sh,
 * sanitize.sh): two independent mmas each with an epilogue, 2 waits;
 * horizontally fused mmas (SwiGLU), 1 wait; mma -> add -> relu, 1 wait,
 * before the add.  In the kernel IR and in the CUDA: the waits for the
 * accumulator (wait_group 0), the ones that free a stage (wait_group 1, one
 * a k loop), and the commits (one a k loop).
 */
static void
pr3843_cases(void **state)
{
	static const struct {
		const char *path;
		int waits0, kloops;
		const char *first_read;   /* the CUDA of the first op that reads an accumulator */
	} cases[] = {
		{"tests/gpu/specs/gemm_two.yaml", 2, 2, "const float v_pb = v_p + v_bias;"},
		{"examples/swiglu.yaml", 1, 1, "const float v_sg = "},
		{"tests/gpu/specs/gemm_add_relu.yaml", 1, 1, "const float v_z = v_y + v_r;"},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		const char *cu, *w;
		int waits0 = 0, all = 0;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!kernel_of(t, slurp(t, cases[i].path)))
			fail_msg("%s: %s", cases[i].path, t->msg);
		mma_waits(t->c.kernel->body, &waits0, &all);
		assert_int_equal(waits0, cases[i].waits0);
		assert_int_equal(all - waits0, cases[i].kloops);   /* wait_group 1, a k-step's */
		assert_int_equal(census(t->c.kernel->body).kind[ST_MMA_COMMIT], cases[i].kloops);
		cu = cuda_of(t);
		assert_int_equal(count(cu, "wsf_mma_wait<0>();"), cases[i].waits0);
		assert_int_equal(count(cu, "wsf_mma_wait<1>();"), cases[i].kloops);
		assert_int_equal(count(cu, "wsf_mma_commit();"), cases[i].kloops);
		/* the first wait comes after the k loop's last wgmma and before the first read */
		w = strstr(cu, "wsf_mma_wait<0>();");
		assert_non_null(strstr(cu, cases[i].first_read));
		assert_true(strstr(cu, "wsf_wgmma(") < w && w < strstr(cu, cases[i].first_read));
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * Ping-pong warpgroups with 128-row tiles (tile: [128, N, 64]): two 64-row
 * blocks a warpgroup (MatmulPlan.row_blocks), each a wgmma of its own per k16
 * into its own N / 2 registers; the epilogue walks the blocks of each
 * subtile; the staging copy holds both warpgroups' 128 rows.  N = 256 would
 * need 256 registers a thread: an error at the hint that says which N fits.
 */
static void
tall_pingpong(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  s: {dtype: f32, shape: [M, 1]}\n  r: {dtype: f16, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z0, op: mul, in: [y, s]}\n"
		"  - {out: z, op: add, in: [z0, r]}\n"
		"outputs:\n  z: {dtype: bf16}\nschedule: {consumers: pingpong, tile: [%d, %d, 64], cluster: [1, 1]}\n";
	Fixture *t;
	Kernel *k;
	const char *cu;
	char text[1024];
	int i;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	snprintf(text, sizeof text, spec, 128, 128);
	if (!(k = kernel_of(t, text)))
		fail_msg("%s", t->msg);
	assert_true(k->mm.pingpong);
	assert_int_equal(k->mm.row_blocks, 2);
	assert_int_equal(k->tile_rows, 128);
	assert_int_equal(k->buf[1].rows, 128);                          /* A: the warpgroup's 128 rows a stage */
	for (i = 1; i < k->nbuf && k->buf[i].kind != BUF_STAGING; i++)
		;
	assert_int_equal(k->buf[i].rows, 256);                          /* both warpgroups' subtiles */
	cu = cuda_of(t);
	assert_int_equal(count(cu, "float acc_y[128];"), 1);             /* 2 blocks x 64 */
	assert_int_equal(count(cu, "wsf_wgmma(acc_y, da + 2 * k16, db + 2 * k16"), 1);        /* +32 bytes a k16 */
	assert_int_equal(count(cu, "wsf_wgmma(acc_y + 64, da + 512 + 2 * k16, db + 2 * k16"), 1);   /* +8192 */
	assert_int_equal(count(cu, "for (int hb = 0; hb < 2; hb++)"), 1);
	assert_int_equal(count(cu, "acc_y[64 * hb + 16 * sub + jj]"), 1);
	assert_int_equal(count(cu, "here_s[2 * hb + ((jj >> 1) & 1)]"), 1);   /* the column input's 4 rows */
	/* the residual's 16 elements of each block, before any is used: pairs inside, elements at the edge */
	assert_int_equal(count(cu, "if (top + wt + 64 * hb + 8 < rows && left + 32 <= cols && cols % 2 == 0) {"), 1);
	assert_int_equal(count(cu, "wsf_load2_f16(in_r + (top + wt + 64 * hb + 8 * (q & 1)) * cols + "
	                           "(left + 8 * (q >> 1) + wc), here_r[2 * q], here_r[2 * q + 1]);"), 1);
	assert_int_equal(count(cu, "here_r[jj] = row < rows && col < cols ? wsf_load1_f16(in_r + row * cols + col)"), 1);
	assert_int_equal(count(cu, "const float v_r = here_r[jj];"), 1);
	assert_int_equal(count(cu, "wsf_acc_fence<128>(acc_y);"), 1);
	teardown((void **)&t);

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	snprintf(text, sizeof text, spec, 128, 256);
	assert_null(kernel_of(t, text));
	assert_non_null(strstr(t->msg, "matmul tile 128 x 256 holds 256 accumulator registers a thread"));
	assert_non_null(strstr(t->msg, "more than the 192 that fit; use N = 192"));
	teardown((void **)&t);
	(void)state;
}

/*
 * A cooperative tile of 256 rows (tile: [256, N, 64]): each consumer
 * warpgroup takes 128 rows, two 64-row blocks (MatmulPlan.row_blocks), A's
 * copy holds all 256; the warpgroup's A starts 128 rows (16384 bytes) on;
 * the staging copy is the tile's 256 rows.  N = 256 does not fit, nor do
 * three matmuls at N = 64: the error says what does.
 */
static void
cooperative_256(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  s: {dtype: f32, shape: [M, 1]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: mul, in: [y, s]}\n"
		"outputs:\n  z: {dtype: bf16}\nschedule: {tile: [256, %d, 64], cluster: [1, 2]}\n";
	Fixture *t;
	Kernel *k;
	const char *cu;
	char text[1024];
	int i;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	snprintf(text, sizeof text, spec, 128);
	if (!(k = kernel_of(t, text)))
		fail_msg("%s", t->msg);
	assert_false(k->mm.pingpong);
	assert_int_equal(k->mm.row_blocks, 2);
	assert_int_equal(k->tile_rows, 256);
	assert_int_equal(k->mm.cluster[1], 2);
	assert_int_equal(k->buf[1].rows, 256);                          /* A: both warpgroups' rows a stage */
	for (i = 1; i < k->nbuf && k->buf[i].kind != BUF_STAGING; i++)
		;
	assert_int_equal(k->buf[i].rows, 256);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "float acc_y[128];"), 1);             /* 2 blocks x 64 */
	assert_int_equal(count(cu, "+ wsf_wg * 16384);   // this warpgroup's 128 rows"), 1);
	assert_int_equal(count(cu, "wsf_wgmma(acc_y, da + 2 * k16, db + 2 * k16"), 1);
	assert_int_equal(count(cu, "wsf_wgmma(acc_y + 64, da + 512 + 2 * k16, db + 2 * k16"), 1);
	assert_int_equal(count(cu, "wr = 128 * (threadIdx.x / 128)"), 1);
	assert_int_equal(count(cu, "const int wt = wr;"), 1);
	assert_int_equal(count(cu, "here_s[2 * hb + ((jj >> 1) & 1)]"), 1);
	teardown((void **)&t);

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	snprintf(text, sizeof text, spec, 256);
	assert_null(kernel_of(t, text));
	assert_non_null(strstr(t->msg, "matmul tile 256 x 256 holds 256 accumulator registers a thread"));
	assert_non_null(strstr(t->msg, "more than the 192 that fit; use N = 192"));
	teardown((void **)&t);
	(void)state;
}

/*
 * The producer's loop nest under one elect() where the CTAs take several
 * tiles each at the spec's sizes (MatmulPlan.elect_nest): 8192^3 (2048 tiles
 * of 128 x 256) and ping-pong's 128 x 192 at 8192^3; an elect() a k-step,
 * inside the k loop, where a CTA takes one tile (1536 x 1024 x 4096: 132
 * tiles of 128 x 96) or runs of stream-K (1024 x 1024 x 8192).
 */
static void
producer_elect_nest(void **state)
{
	static const struct {
		const char *spec;
		bool nest, stream_k;
	} cases[] = {
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN, true, false},
		{GEMM_SIZES(8192, 8192, 8192) GEMM_PLAIN "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", true,
		 false},
		{GEMM_SIZES(1536, 1024, 4096) GEMM_PLAIN, false, false},
		{GEMM_SIZES(1024, 1024, 8192) GEMM_PLAIN, false, true},
	};
	Fixture *t;
	int i, j;

	(void)state;
	for (i = 0; i < (int)countof(cases); i++) {
		Kernel *k = lowered(&t, i, cases[i].spec);
		Stmt *prod, *nest, *kl = NULL;

		assert_int_equal(k->mm.elect_nest, cases[i].nest);
		assert_int_equal(k->mm.ksize.sk_slot != 0, cases[i].stream_k);
		prod = find_kind(k->body, ST_ROLES, 0)->body[0];
		assert_int_equal(prod->nbody, 2);   /* setmaxnreg, then the nest */
		nest = prod->body[1];
		if (cases[i].nest) {
			assert_int_equal(nest->kind, ST_IF);
			assert_int_equal(nest->u.branch.cond->kind, EX_ELECT);
			assert_int_equal(nest->nbody, 1);
			nest = nest->body[0];
			assert_int_equal(census(nest).kind[ST_IF], 0);
		}
		assert_int_equal(nest->kind, ST_LOOP);   /* the tile loop, around the k loop */
		for (j = 0; j < nest->nbody && !kl; j++)
			if (nest->body[j]->kind == ST_LOOP)
				kl = nest->body[j];
		assert_non_null(kl);
		if (cases[i].nest) {
			assert_int_equal(kl->body[0]->kind, ST_MBAR_WAIT);
		} else {
			assert_int_equal(kl->nbody, 1);
			assert_int_equal(kl->body[0]->kind, ST_IF);
			assert_int_equal(kl->body[0]->u.branch.cond->kind, EX_ELECT);
			assert_int_equal(census(kl->body[0]).kind[ST_TMA_LOAD], 2);
		}
		teardown((void **)&t);
	}
}

static int lets_named(const Kernel *k, Stmt *s, const char *name, Stmt **out, int n);

/* Does SPEC lower through every kernel pass under schedule S (in place of its own)? */
static bool
lowers_as(const char *spec, const Schedule *s)
{
	Fixture *t;
	bool ok;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	t->c.src = spec;
	t->c.srclen = strlen(spec);
	if (spec_read(&t->c))
		fail_msg("%s", t->msg);
	t->c.fusion->sched = *s;
	ok = !passes_run(&t->c, WSF_STAGE_FUSION_IR) && !passes_run(&t->c, WSF_STAGE_KERNEL_IR);
	teardown((void **)&t);
	return ok;
}

/*
 * The measured choice's candidates: the spec's schedule first, then one
 * more hint each where the spec leaves it open (three tiles, ping-pong
 * 128 x 192, a cluster, three K splits, swap_ab off, stream-K on and off:
 * 12 for a plain gemm);
 * a tile hint removes the tiles and the ping-pong one, a kernel that
 * signals has only its own.  Each candidate that the
 * spec's sizes allow lowers (a K split of 4 with a 128 x 256 tile, say,
 * need not: the stages may not fit).
 */
static void
tune_candidates(void **state)
{
	static const char *const sched[] = {"", "schedule: {tile: [128, 128, 64]}\n", "schedule: {signal: per_tile}\n"};
	static const int want[] = {12, 8, 1};
	Schedule cand[12];
	Fixture *t;
	Kernel *k;
	int i, j, n, lowered;

	for (i = 0; i < (int)countof(sched); i++) {
		char text[1024];

		/* gemm_bias_gelu_pp asks for ping-pong consumers: the tiles' candidates need none asked */
		snprintf(text, sizeof text, "%.*s%s", (int)(strstr(gemm_bias_gelu_pp, "schedule:") - gemm_bias_gelu_pp),
		         gemm_bias_gelu_pp, sched[i]);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, text)))
			fail_msg("%s", t->msg);
		n = plan_matmul_candidates(t->c.fusion, cand, 12);
		assert_int_equal(n, want[i]);
		assert_int_equal(plan_matmul_candidates(t->c.fusion, NULL, 0), n);
		assert_memory_equal(&cand[0], &t->c.fusion->sched, sizeof cand[0]);
		teardown((void **)&t);
		for (j = 1, lowered = 0; j < n; j++)
			lowered += lowers_as(text, &cand[j]);
		assert_true(lowered >= n - 2);
	}
	(void)state;
}

static void
refused_forms(void **state)
{
	static const struct {
		const char *spec, *msg;
	} cases[] = {
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {tile: [64, 256, 64]}\n",
		 "a matmul tile of 64 rows is not implemented yet"},
		/* the rows first: not the registers of a 128-row tile of two matmuls that the hint did not ask for */
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  u: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: z, op: matmul, in: [a, u], transpose_b: true}\n  - {out: o, op: mul, in: [y, z]}\n"
		 "outputs:\n  o: {}\nschedule: {tile: [64, 208, 64]}\n",
		 "a matmul tile of 64 rows is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {consumers: pingpong, tile: [256, 128, 64]}\n",
		 "a matmul tile of 256 rows is not implemented yet: with consumers: pingpong each consumer warpgroup "
		 "owns a tile of 64 or 128 rows"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {warp_specialize: false}\n",
		 "a matmul without warp specialization is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n  - {out: y2, op: cast, in: [y], to: bf16}\n"
		 "outputs:\n  y: {}\n  y2: {dtype: bf16}\n"
		 "schedule: {tile: [256, 128, 64], signal: {per_tile, consumer: y2}}\n",
		 "a tile of 256 rows with a signal consumer role is not implemented yet: use 128 rows"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  b: {dtype: bf16, shape: [M, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: g, op: matmul, in: [b, w], transpose_b: true}\n  - {out: o, op: mul, in: [y, g]}\n"
		 "outputs:\n  o: {}\n",
		 "output 'o' combines the results of independent matmuls, which is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  b: {dtype: bf16, shape: [M, K]}\n  v: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: g, op: matmul, in: [b, v], transpose_b: true}\noutputs:\n  y: {}\n  g: {}\n"
		 "schedule: {consumers: pingpong}\n",
		 "consumers: pingpong with independent matmuls in one kernel is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  u: {dtype: bf16, shape: [N, K]}\n  b: {dtype: bf16, shape: [M, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: z, op: matmul, in: [a, u], transpose_b: true}\n"
		 "  - {out: g, op: matmul, in: [b, w], transpose_b: true}\noutputs:\n  y: {}\n  z: {}\n  g: {}\n",
		 "matmuls that share 'a' in a kernel with a matmul that does not ('g') are not implemented yet"},
		{"fusion: gemm\nsizes: {M: 256, N: 256, K: 256, L: 512}\n"
		 "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  b: {dtype: bf16, shape: [M, L]}\n  v: {dtype: bf16, shape: [N, L]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: g, op: matmul, in: [b, v], transpose_b: true}\noutputs:\n  y: {}\n  g: {}\n",
		 "matmuls in one kernel with different K ('y', 'g') are not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  b: {dtype: bf16, shape: [M, K]}\n  v: {dtype: bf16, shape: [K, N]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: g, op: matmul, in: [b, v]}\noutputs:\n  y: {}\n  g: {}\n",
		 "matmuls in one kernel that differ in their operands' layouts or their outputs' shapes ('y', 'g')"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  r: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n  - {out: z, op: add, in: [y, r]}\n"
		 "outputs:\n  y: {}\n  z: {}\nschedule: {signal: {per_tile, consumer: z}}\n",
		 "the signal consumer reading input 'r' is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {cluster: [4, 4]}\n",
		 "a matmul cluster of 4 x 4 CTAs is not implemented yet: at most 8 CTAs (the portable cluster size)"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {cluster: [2, 1], signal: per_tile}\n",
		 "'cluster' with 'signal: per_tile' is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [K, N]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w]}\noutputs:\n  y: {}\n"
		 "schedule: {cluster: [2, 1], tile: [128, 64, 64]}\n",
		 "cluster [2, 1] shares B among 2 CTAs, each 32 of its 64 rows, not a multiple of 64 (matmul 'y' reads it "
		 "N-major)"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true, transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {cluster: [1, 4]}\n",
		 "cluster [1, 4] shares A among 4 CTAs, each 32 of its 128 rows, not a multiple of 64 (matmul 'y' reads it "
		 "M-major); use a wider tile or fewer CTAs along N"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {cluster: [8, 1], tile: [128, 32, 64]}\n",
		 "cluster [8, 1] shares B among 8 CTAs, each 4 of its 32 rows, not a multiple of 8 (matmul 'y' reads it "
		 "K-major)"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_a: true, transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {swap_ab: true}\n",
		 "swap_ab with A read M-major (transpose_a) is not implemented yet"},
		{HEAD "inputs:\n  a: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  u: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [a, w], transpose_b: true}\n"
		 "  - {out: z, op: matmul, in: [a, u], transpose_b: true}\noutputs:\n  y: {}\n  z: {}\n"
		 "schedule: {swap_ab: true}\n",
		 "swap_ab with several matmuls in one kernel is not implemented yet"},
		{"fusion: pw\nsizes: {M: 256, N: 256}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\n  - {out: z, op: neg, in: [y]}\n"
		 "outputs:\n  y: {}\n  z: {}\nschedule: {signal: {per_tile, consumer: z}}\n",
		 "a signal consumer role is implemented for matmul kernels only"},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++)
		refused_with(i, cases[i].spec, cases[i].msg, true);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lowered_gemm, setup, teardown),
		cmocka_unit_test(producer_elect_nest),
		cmocka_unit_test_setup_teardown(lowered_mn_major, setup, teardown),
		cmocka_unit_test_setup_teardown(lowered_batch_a, setup, teardown),
		cmocka_unit_test_setup_teardown(lowered_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(lowered_pingpong, setup, teardown),
		cmocka_unit_test_setup_teardown(pingpong_one_stage, setup, teardown),
		cmocka_unit_test_setup_teardown(minimal_mma_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(group_pingpong_default, setup, teardown),
		cmocka_unit_test_setup_teardown(independent_matmuls, setup, teardown),
		cmocka_unit_test(pr3843_cases),
		cmocka_unit_test(pdl_launch),
		cmocka_unit_test(tall_pingpong),
		cmocka_unit_test(tune_candidates),
		cmocka_unit_test(cooperative_256),
		cmocka_unit_test(refused_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
