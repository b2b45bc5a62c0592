/*
 * test_lower_matmul.c: the matmul family lowered from a spec and taken
 * through circular_buffer, warp_specialize and sync: which loop each side
 * buffers, the roles and their registers, that the consumers' compute loop
 * is not inlined with the producer's load loop, and every wait with its N
 * and position.  Then what this version refuses (exit status 6) and why.
 * The plans alone are test_plan_matmul.c's; the per-tile signals and waits
 * test_lower_matmul_sync.c's.
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

/* one CTA a cluster: 4096^3 would take clusters of two by default (cluster_pairs) */
static const char gemm_bias_gelu[] =
	HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	"  bias: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"  - {out: z, op: add, in: [y, bias]}\n  - {out: o, op: gelu, in: [z], approximate: tanh}\n"
	"outputs:\n  o: {dtype: bf16}\nschedule: {cluster: [1, 1]}\n";

static const char gemm_bias_gelu_pp[] =
	HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	"  bias: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"  - {out: z, op: add, in: [y, bias]}\n  - {out: o, op: gelu, in: [z], approximate: tanh}\n"
	"outputs:\n  o: {dtype: bf16}\nschedule: {consumers: pingpong}\n";

/* Case I of a table: SPEC lowered into a fresh fixture *T (else the case fails); its kernel. */
static Kernel *
lowered(Fixture **t, int i, const char *spec)
{
	Kernel *k;

	if (setup((void **)t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(*t, spec)))
		fail_msg("case %d: %s", i, (*t)->msg);
	return k;
}

/* The epilogue loop (over subtiles, var e) in the tile loop TL: at its level, or under stream-K's owner's if. */
static Stmt *
epilogue_of(const Kernel *k, Stmt *tl)
{
	int i;

	for (i = 0; i < tl->nbody; i++) {
		Stmt *x = tl->body[i];

		if (x->kind == ST_LOOP && strcmp(k->var[x->u.loop.var].name, "e") == 0)
			return x;
		if (x->kind == ST_IF && x->nbody && x->body[0]->kind == ST_LOOP &&
		    strcmp(k->var[x->body[0]->u.loop.var].name, "e") == 0)
			return x->body[0];
	}
	return NULL;
}

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
 * A stage counter's slot and phase over S stages, S not a power of two
 * (5 at 128 x 160): the tile's part Q = i * ktiles divided in 64 bits, the
 * rest, Q % S + kk, below 2^32, in 32 (ex_stage_slot): a 64-bit % S or / S
 * each k-step is a chain of 64-bit multiplies (docs/perf.md: 0.8-3.4%).
 * Stream-K's counter, kbase + kk, stays in 64 bits (split_counter).  A
 * power of two keeps the plain (lin % S) and (lin / S) & 1.
 */
/* The CUDA of case I's kernel (cuda_of), which must hold WANT. */
static const char *
cuda_with(Fixture *t, int i, const char *want)
{
	const char *cu = cuda_of(t);

	if (!strstr(cu, want))
		fail_msg("case %d: no '%s' in the CUDA", i, want);
	return cu;
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

/* A spec's schedule that is refused: the hint, the message, exit status 6 (UNBUILT) or an input error. */
typedef struct Refusal {
	const char *sched, *msg;
	bool unbuilt;
} Refusal;

/* SPEC with each schedule of R (N of them) is refused as it says (refused_with). */
static void
refused_schedules(const char *spec, const Refusal *r, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char text[1024];

		snprintf(text, sizeof text, "%sschedule: %s\n", spec, r[i].sched);
		refused_with(i, text, r[i].msg, r[i].unbuilt);
	}
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

/* The prefetches under S, appended to OUT[N..] (room for 8); the new count.  IN_ROLE: the kind of role they sit in. */
static int
prefetches_of(const Kernel *k, const Stmt *s, Stmt **out, int n, RoleKind *in_role, RoleKind role)
{
	int i;

	if (s->kind == ST_ROLE)
		role = k->role[s->u.role.id].kind;
	if (s->kind == ST_TMA_PREFETCH && n < 8) {
		in_role[n] = role;
		out[n] = (Stmt *)s;
		return n + 1;
	}
	for (i = 0; i < s->nbody; i++)
		n = prefetches_of(k, s->body[i], out, n, in_role, role);
	return st_else(s) ? prefetches_of(k, st_else(s), out, n, in_role, role) : n;
}

/*
 * An epilogue's full input (a residual) is read through its pointer, and
 * the producer prefetches the tile's box of it into L2 by TMA: a tensor
 * map of its own (KParam.prefetch, box the output tile) and one prefetch
 * in the producer's k loop, the first statement of the block that issues
 * the k-step's loads, at the tile's last k-step; none in the consumers.
 * A batched tensor's carries the batch.  An input that waits per tile has
 * one on cooperative consumers, none on ping-pong ones; none for a swapped
 * matmul, a K-split or independent matmuls; a row input (a bias) has none.
 */
static void
residual_prefetch(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int prefetches;       /* in the producer */
		const char *cuda;     /* the prefetch's call, when there is one */
	} cases[] = {
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n  b: {dtype: bf16, shape: [N]}\n",
		 "  - {out: z0, op: add, in: [y, b]}\n  - {out: z, op: add, in: [z0, r]}\n", "{cluster: [1, 1]}", 1,
		 "wsf_tma_prefetch_2d(&map_r, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: f32, shape: [M, N]}\n  q: {dtype: f16, shape: [M, N]}\n",
		 "  - {out: z0, op: add, in: [y, q]}\n  - {out: z, op: add, in: [z0, r]}\n",
		 "{consumers: pingpong, tile: [128, 128, 64]}", 2, "wsf_tma_prefetch_2d(&map_q, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: z, op: add, in: [y, r]}\n", "{cluster: [1, 1]}", 1, "wsf_tma_prefetch_2d(&map_r, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: z, op: add, in: [y, r]}\n", "{consumers: pingpong, tile: [128, 128, 64]}", 0, NULL},
		{"{M: 16, N: 8192, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "{swap_ab: true}", 0, NULL},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "{split_k: 2, swap_ab: false, cluster: [1, 1]}", 0, NULL},
	};
	static const char spec[] =
		"fusion: gemm\nsizes: %s\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n%s"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n%s"
		"outputs:\n  z: {dtype: bf16}\nschedule: %s\n";
	Fixture *t;
	Kernel *k;
	Stmt *pf[8];
	RoleKind role[8];
	char text[1024];
	size_t ci;
	int i, n, maps;

	for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		snprintf(text, sizeof text, spec, cases[ci].sizes, cases[ci].inputs, cases[ci].ops, cases[ci].sched);
		if (!(k = kernel_of(t, text)))
			fail_msg("case %zu: %s", ci, t->msg);
		n = prefetches_of(k, k->body, pf, 0, role, ROLE_NONE);
		assert_int_equal(n, cases[ci].prefetches);
		for (maps = 0, i = 1; i < k->nparam; i++) {
			const KParam *p = &k->param[i];
			int j;

			if (!p->prefetch)
				continue;
			maps++;
			assert_int_equal(p->kind, PK_TMAP);
			assert_int_equal(p->view, VIEW_FULL);
			assert_int_equal(p->box[0], k->tile_rows);
			assert_int_equal(p->box[1], k->tile_cols);
			for (j = 1; j < k->nparam && !(k->param[j].kind == PK_PTR && k->param[j].tensor == p->tensor); j++)
				;
			assert_true(j < k->nparam);                       /* the consumers still read its pointer */
			assert_int_equal(k->param[j].arg, p->arg);
		}
		assert_int_equal(maps, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(role[i], ROLE_PRODUCER);
			assert_true(k->param[pf[i]->u.tma.param].prefetch);
			assert_string_equal(expr(t, pf[i]->u.tma.cond), "(kk == (ktiles - 1))");
			assert_string_equal(expr(t, pf[i]->u.tma.row), "row0");
			assert_string_equal(expr(t, pf[i]->u.tma.col), "col0");
			assert_null(pf[i]->u.tma.batch);
		}
		if (cases[ci].cuda) {
			const char *cu = cuda_of(t);

			assert_int_equal(count(cu, cases[ci].cuda), 1);
			assert_int_equal(count(cu, "wsf_tma_prefetch_2d(&map_"), n);
			assert_int_equal(count(cu, "const __grid_constant__ WsfTensorMap map_"), n);
		}
		teardown((void **)&t);
	}

	/* batched: the prefetch carries the tile's batch, as the loads do */
	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, HEAD "inputs:\n  a: {dtype: bf16, shape: [2, M, K]}\n  w: {dtype: bf16, shape: [2, K, N]}\n"
	                    "  r: {dtype: bf16, shape: [2, M, N]}\n"
	                    "ops:\n  - {out: y, op: matmul, in: [a, w]}\n  - {out: z, op: add, in: [y, r]}\n"
	                    "outputs:\n  z: {dtype: bf16}\n")))
		fail_msg("%s", t->msg);
	assert_int_equal(prefetches_of(k, k->body, pf, 0, role, ROLE_NONE), 1);
	assert_string_equal(expr(t, pf[0]->u.tma.batch), "bt");
	assert_int_equal(count(cuda_of(t), "wsf_tma_prefetch_3d(&map_r, col0, row0, bt);"), 1);
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
 * Outputs that accumulate (accumulate: true) and wait (the reduce-scatter's
 * sender adding its partial into the owner's output once the owner has
 * stored the tile): each epilogue store is a TMA add, the output's wait is
 * the consumers' (one thread, before the tile's first epilogue, after the
 * input's word) and fences the async proxy for the adds; an output that
 * accumulates without waiting keeps no wait.  Refused: outputs stored from
 * registers, the signal consumer's outputs and those it reads back, and
 * waiting outputs outside matmuls.
 */
static void
accumulate_output(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		"outputs:\n  o: {dtype: bf16, accumulate: true, wait: per_tile}\n  y: {dtype: f32}\n";
	static const char plain[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"outputs:\n  y: {dtype: bf16, accumulate: true}\n";
	static const struct {
		const char *spec, *msg;
		bool unbuilt;
	} bad[] = {
		{"fusion: pw\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\noutputs:\n  y: {accumulate: true}\nschedule: {store: vector}\n",
		 "not yet for outputs stored from registers (store: vector)", true},
		{"fusion: rd\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: f32, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: sum, in: [a], axis: -1}\noutputs:\n  y: {accumulate: true}\n",
		 "not yet for row-reduction kernels", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: cast, in: [y], to: bf16}\n"
		 "outputs:\n  y: {dtype: bf16}\n  z: {dtype: bf16, accumulate: true}\n"
		 "schedule: {signal: {per_tile, consumer: z}}\n",
		 "not yet for an output of the signal's consumer role", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: relu, in: [y]}\n"
		 "outputs:\n  y: {dtype: bf16, accumulate: true}\n  z: {dtype: bf16}\n"
		 "schedule: {signal: {per_tile, consumer: z}}\n",
		 "not yet for an output the signal's consumer role reads back", true},
		{"fusion: pw\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\noutputs:\n  y: {wait: per_tile}\n",
		 "'wait: per_tile' (output 'y') is implemented for matmul kernels only", true},
	};
	Fixture *t;
	Kernel *k;
	Stmt *waits[4], *stores[4], *tl = NULL;
	const char *cu;
	int i, n, at_wait = -1, at_e = -1;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 2);
	n = stmts_of(k->body, ST_TMA_STORE, stores, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)   /* o's stores add, y's overwrite */
		assert_int_equal(stores[i]->u.tma.add, strcmp(k->param[stores[i]->u.tma.param].name, "o") == 0);
	n = stmts_of(k->body, ST_FLAG_WAIT, waits, 4);
	assert_int_equal(n, 2);
	assert_int_equal(waits[0]->u.flag_wait.output, 0);   /* p's: the epilogue's loads need no proxy fence */
	assert_int_equal(waits[1]->u.flag_wait.output, 1);   /* o's: fenced for the adds */
	assert_false(waits[1]->u.flag_wait.producer);       /* the consumers', not the producer's */
	/* after p's */
	assert_non_null(strstr(expr(t, waits[1]->u.flag_wait.word), "((ceildiv(rows, 128) * ceildiv(cols, 256)) + "));
	assert_non_null(tl = consumer_tiles(k));
	wait_and_epilogue(k, tl, waits[1], &at_wait, &at_e);
	assert_true(at_wait > 0 && at_e > at_wait);   /* before the tile's epilogue, */
	assert_int_equal(tl->body[at_wait]->body[0], waits[0]);   /* in p's block, after p's wait */
	assert_int_equal(tl->body[at_wait - 1]->kind, ST_LOOP);   /* after its k loop */
	assert_int_equal(tl->body[at_wait + 1]->kind, ST_SYNC);   /* the barrier passes both on */
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_flag_wait(wait_flags + "), 1);
	assert_int_equal(count(cu, "wsf_flag_wait_tma(wait_flags + "), 1);
	assert_int_equal(count(cu, "wsf_tma_add_2d(&out_o, "), 1);
	assert_int_equal(count(cu, "wsf_tma_store_2d(&out_y, "), 1);
	teardown((void **)&t);

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, plain)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 0);
	assert_int_equal(stmts_of(k->body, ST_FLAG_WAIT, waits, 4), 0);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_tma_add_2d(&out_y, "), 1);
	assert_int_equal(count(cu, "wsf_tma_store_2d(&"), 0);
	teardown((void **)&t);

	for (i = 0; i < (int)countof(bad); i++)
		refused_with(i, bad[i].spec, bad[i].msg, bad[i].unbuilt);
	(void)state;
}

/* What this version does not lower yet: exit status 6, with the reason at the op. */
/* The value of E as the GPU computes it, with ENV's variables, this CTA and the grid; a division by a
   runtime value is emit.c's 32-bit wsf_udiv, whose operands must be in [0, 2^32). */
typedef struct Env {
	int64_t *v;
	bool *set;
	int64_t cta, ncta, rank;   /* rank: in its cluster */
} Env;

static int64_t
eval(const Expr *e, const Env *env)
{
	int64_t a, b;

	switch (e->kind) {
	case EX_INT:
		return e->ival;
	case EX_VAR:
		if (!env->set[e->var])
			fail_msg("variable %d used before it is set", e->var);
		return env->v[e->var];
	case EX_CTA:
		return env->cta;
	case EX_NCTA:
		return env->ncta;
	case EX_RANK:
		return env->rank;
	default:
		break;
	}
	a = eval(e->a, env);
	b = eval(e->b, env);
	switch (e->kind) {
	case EX_ADD: return a + b;
	case EX_SUB: return a - b;
	case EX_MUL: return a * b;
	case EX_DIV:
	case EX_MOD:
		if (e->b->kind != EX_INT && (a < 0 || a >= ((int64_t)1 << 32) || b <= 0 || b >= ((int64_t)1 << 32)))
			fail_msg("wsf_udiv(%lld, %lld): out of 32 bits", (long long)a, (long long)b);
		if (e->u32 && (a < 0 || a >= ((int64_t)1 << 32)))   /* ex_stage_slot's 32-bit division */
			fail_msg("u32(%lld): out of 32 bits", (long long)a);
		assert_true(b > 0);
		return e->kind == EX_DIV ? a / b : a % b;
	case EX_MIN: return a < b ? a : b;
	case EX_MAX: return a > b ? a : b;
	case EX_CEILDIV: assert_true(b > 0); return (a + b - 1) / b;
	case EX_LT: return a < b;
	case EX_GE: return a >= b;
	case EX_EQ: return a == b;
	case EX_AND: return a & b;
	default:
		fail_msg("unexpected expression kind %d", e->kind);
	}
	return 0;
}

/* Sets the variable of let S (kernel K) in ENV; its value. */
static int64_t
let_in(const Kernel *k, const Stmt *s, Env *env)
{
	(void)k;
	env->v[s->u.let.var] = eval(s->u.let.value, env);
	env->set[s->u.let.var] = true;
	return env->v[s->u.let.var];
}

static int64_t
var_named(const Kernel *k, const Env *env, const char *name)
{
	int v;

	for (v = 1; v < k->nvar; v++)
		if (env->set[v] && strcmp(k->var[v].name, name) == 0)
			return env->v[v];
	fail_msg("no variable '%s' set", name);
	return 0;
}

/*
 * ENV as CTA of a GRID of stream-K kernel K would start: the sizes M x N x
 * K (a workspace unless OFF), then the lets before the tile loop.
 */
static void
plan_env(const Kernel *k, Env *env, int64_t M, int64_t N, int64_t K, int64_t cta, int64_t grid, bool off)
{
	int i;

	memset(env->set, 0, (size_t)k->nvar * sizeof *env->set);
	env->cta = cta;
	env->ncta = grid;
	env->rank = cta % kernel_cluster_ctas(k);
	env->v[k->rows_var] = M, env->set[k->rows_var] = true;
	env->v[k->cols_var] = N, env->set[k->cols_var] = true;
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_SIZE && (k->param[i].size == SZ_INNER || k->param[i].size == SZ_SK_ON))
			env->v[k->param[i].var] = k->param[i].size == SZ_INNER ? K : !off, env->set[k->param[i].var] = true;
	for (i = 0; i < k->body->nbody; i++)
		if (k->body->body[i]->kind == ST_LET)
			let_in(k, k->body->body[i], env);
}

/* ENV at iteration IT of tile loop TL of K: its lets, as the CTA would run them. */
static void
tile_env(const Kernel *k, const Stmt *tl, Env *env, int64_t it)
{
	int i;

	env->v[tl->u.loop.var] = it, env->set[tl->u.loop.var] = true;
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i]->kind == ST_LET)
			let_in(k, tl->body[i], env);
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

/* The read-waits (bulk_wait .read) under S, into *W (up to 4); their count */
static int
read_waits(Stmt *s, const Stmt **w, int n)
{
	int i;

	if (s->kind == ST_BULK_WAIT && s->u.group.read && n < 4)
		w[n++] = s;
	for (i = 0; i < s->nbody; i++)
		n = read_waits(s->body[i], w, n);
	return st_else(s) ? read_waits(st_else(s), w, n) : n;
}

/*
 * A cooperative tile's staging buffer takes up to four copies from the
 * shared memory its stages leave (KBuf.ring, circular_buffer.c
 * grow_staging), its slot the subtile mod the copies, and the subtile's
 * read-wait lets the stores of the copies - 2 subtiles before read on:
 * 128 x 256 (4 stages of 48 KiB) four; 128 x 192 (5 of 40 KiB) three; an
 * f32 output (subtiles of 16 KiB) two, the room its stages leave less than
 * a copy; a bf16 and an f32 output three each; 128 x 64, two subtiles,
 * two.  Ping-pong, stream-K, a K-split and two matmuls' epilogues keep
 * two.  Every kernel within the budget.  Where the copies do not divide
 * the subtiles (three copies of eight), the next tile's first subtile
 * would write the copy the tile's last but two still stores: one more
 * read-wait, of every store, before the epilogue loop (sync.c
 * restart_wait), and one barrier.
 */
static void
staging_ring(void **state)
{
	static const char f32_out[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "ops:\n" GEMM_MM
	                              "outputs:\n  y: {dtype: f32}\nschedule: {cluster: [1, 1]}\n";
	static const char two_out[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "ops:\n" GEMM_MM
	                              "  - {out: r, op: relu, in: [y]}\noutputs:\n  y: {dtype: bf16}\n  r: {dtype: f32}\n";
	static const char two_mm[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "  u: {dtype: bf16, shape: [M, K]}\n"
	                             "  v: {dtype: bf16, shape: [N, K]}\nops:\n" GEMM_MM
	                             "  - {out: z, op: matmul, in: [u, v], transpose_b: true}\n"
	                             "outputs:\n  y: {dtype: bf16}\n  z: {dtype: bf16}\nschedule: {stages: 3}\n";
	static const struct {
		const char *spec;
		int copies, wait;   /* wait: the epilogue's read-wait leaves this many groups reading; -1: not checked */
		int restart;        /* a read-wait before the epilogue loop (0 groups reading) */
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 4, 2},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 192, 64]}\n", 3, 1},
		{f32_out, 2, 0},
		{two_out, 3, 1, 1},   /* two outputs, copies alike: a bf16 one alone would take four */
		{two_mm, 2, -1},   /* two matmuls' epilogues one after another: 3 stages of 48 KiB leave room */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 64, 64]}\n", 2, 0},
		/* one subtile a tile over two copies: each tile's writes copy 0 after the tile before's store of it */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 32, 64]}\n", 2, 0, 1},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 2, -1},
		{GEMM_SIZES(1024, 1024, 8192) GEMM_PLAIN, 2, -1},   /* stream-K by default */
		{GEMM_SIZES(256, 1024, 8192) GEMM_PLAIN "schedule: {split_k: 2}\n", 2, -1},
	};
	Fixture *t;
	int i, b;

	(void)state;
	for (i = 0; i < (int)countof(cases); i++) {
		Kernel *k = lowered(&t, i, cases[i].spec);
		const Stmt *w[4];
		Stmt *cons;
		int staging = 0;

		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING) {
				staging++;
				if (k->buf[b].stages != cases[i].copies)
					fail_msg("case %d: %s has %d copies, expected %d", i, k->buf[b].name,
					         k->buf[b].stages, cases[i].copies);
			}
		assert_true(staging > 0);
		assert_true(kernel_smem_bytes(k) <= k->smem_budget);
		if (cases[i].wait >= 0) {
			cons = find_kind(k->body, ST_ROLES, 0)->body[1];
			/* the subtile's wait (after the tile's, if any), and the consumers' last (every store landed:
			   not .read) */
			assert_int_equal(read_waits(cons, w, 0), 1 + cases[i].restart);
			if (cases[i].restart)
				assert_int_equal(w[0]->u.group.pending, 0);
			assert_int_equal(w[cases[i].restart]->u.group.pending, cases[i].wait);
			assert_int_equal(census(cons).kind[ST_SYNC], 1 + cases[i].restart);
		}
		teardown((void **)&t);
	}
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
 * Stream-K in fractions of a tile (Kernel.sk_scatter, fraction_plan), the
 * default rules' kernel of 128 x 64 tiles in quarters (256 x 1024 x 8192) run at other sizes
 * and grids as each CTA would: every k-step of every tile computed once;
 * a split tile's parts on consecutive CTAs, part i on its first + i, all
 * of one count (at most the rule's 4, each at least 4 k-steps) and the
 * whole tiles with sk_i 0 of 1; the stage counter runs on.  Then the
 * meeting: every part of a split tile writes (1 < sk_n), those that own
 * a subtile of the two add, and the epilogue's compute and store each
 * under the part's subtile test, the compute's step sk_n.
 */
static void
stream_k_fractions(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid, parts;   /* parts: of each split tile, 1: none split */
		bool off;                       /* launched without a workspace: sk_on 0 */
	} runs[] = {
		{256, 1024, 8192, 132, 4, false},    /* the spec's sizes: 32 tiles on 128 CTAs */
		{128, 1280, 8192, 132, 4, false},    /* 20 on 80 */
		{128, 1280, 8192, 40, 2, false},     /* a smaller grid: halves */
		{128, 1280, 8200, 132, 4, false},    /* 129 k-steps: parts of 32 and 33 */
		{128, 1280, 1000, 132, 4, false},    /* 16 k-steps: parts of 4 */
		{128, 1280, 448, 132, 1, false},     /* 7: none split */
		{1024, 1280, 8192, 132, 4, false},   /* 160 tiles: a wave, then 28 in quarters after */
		{4096, 4096, 8192, 132, 1, false},   /* 68 left: no room for two parts each */
		{128, 1280, 8192, 132, 1, true},     /* no workspace: all whole */
	};
	Kernel *k = kernel_of(t, GEMM_SIZES(256, 1024, 8192) GEMM_PLAIN);
	Stmt *tl, *eloop = NULL, *put, *add;
	const char *cu;
	int r, i, tests = 0;

	if (!k)
		fail_msg("%s", t->msg);
	assert_true(k->mm.ksum == KSUM_SK_SCATTER && k->mm.ksize.sk_parts == 4 && k->tile_cols == 64);
	tl = consumer_tiles(k);
	for (r = 0; r < (int)countof(runs); r++) {
		int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, tiles = (M + 127) / 128 * ((N + 63) / 64);
		int64_t kt = (K + 63) / 64, b, *cover = calloc((size_t)(tiles * kt), sizeof *cover);
		int64_t *first = calloc((size_t)tiles, sizeof *first), *nparts = calloc((size_t)tiles, sizeof *nparts);
		Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
		           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

		for (b = 0; b < tiles; b++)
			first[b] = -1;
		for (b = 0; b < runs[r].grid; b++) {
			int64_t it, counter = 0;

			plan_env(k, &env, M, N, K, b, runs[r].grid, runs[r].off);
			for (it = 0; it < env.v[k->niter_var]; it++) {
				int64_t tile, kb, kn, ski, skn, j;

				tile_env(k, tl, &env, it);
				tile = var_named(k, &env, "tile"), kb = var_named(k, &env, "kb"), kn = var_named(k, &env, "kn");
				ski = var_named(k, &env, "sk_i"), skn = var_named(k, &env, "sk_n");
				if (tile < 0 || tile >= tiles || kn < 1 || kb < 0 || kb + kn > kt || ski >= skn)
					fail_msg("run %d cta %lld tile %lld: k-steps [%lld, %lld) of %lld, part %lld of %lld", r,
					         (long long)b, (long long)tile, (long long)kb, (long long)(kb + kn), (long long)kt,
					         (long long)ski, (long long)skn);
				assert_int_equal(var_named(k, &env, "kbase"), counter);   /* the stage counter runs on */
				counter += kn;
				for (j = kb; j < kb + kn; j++)
					cover[tile * kt + j]++;
				if (skn > 1) {   /* part ski of a split tile: its first part's CTA + ski */
					assert_true(kn >= 4 && skn <= 4 && skn == runs[r].parts);
					if (first[tile] < 0)
						first[tile] = b - ski, nparts[tile] = skn;
					assert_int_equal(b - ski, first[tile]);
					assert_int_equal(skn, nparts[tile]);
					tests++;
				}
			}
		}
		for (i = 0; i < tiles * kt; i++)
			if (cover[i] != 1)
				fail_msg("run %d: tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
				         (long long)(i % kt), (long long)cover[i]);
		if (runs[r].parts == 1)
			for (i = 0; i < tiles; i++)
				assert_int_equal(first[i], -1);
		free(cover), free(first), free(nparts);
	}
	assert_true(tests > 0);

	/* the meeting, then the epilogue's subtiles shared among the parts */
	put = find_kind(tl, ST_SK_STORE, 0);
	add = find_kind(tl, ST_SK_REDUCE, 0);
	assert_non_null(put);
	assert_non_null(add);
	assert_string_equal(expr(t, put->u.sk.cond), "(1 < sk_n)");
	assert_string_equal(expr(t, add->u.sk.cond), "((1 < sk_n) * (sk_i < 2))");
	assert_string_equal(expr(t, add->u.sk.part), "sk_i");
	assert_string_equal(expr(t, add->u.sk.parts), "sk_n");
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i] == add && i + 1 < tl->nbody)
			eloop = tl->body[i + 1];
	assert_true(eloop && eloop->kind == ST_LOOP);
	for (i = r = 0; i < eloop->nbody; i++)
		if (eloop->body[i]->kind == ST_IF && !strcmp(expr(t, eloop->body[i]->u.branch.cond), "((e % sk_n) == sk_i)"))
			r++;
	assert_int_equal(r, 2);
	assert_string_equal(expr(t, find_deep(eloop, ST_COMPUTE)->u.compute.step), "sk_n");
	assert_int_equal(census(eloop).kind[ST_TMA_STORE], 1);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "wsf_sk_arrive(wsf_sk_flag(sk_work, blockIdx.x - me));"));
	assert_non_null(strstr(cu, "wsf_sk_gather(wsf_sk_flag(sk_work, first), (unsigned)parts, "
	                           "wsf_sk_flag(sk_work, first + 1), (unsigned)wsf_min(parts, 2LL));"));
	assert_null(strstr(cu, "wsf_sk_take(wsf_sk_flag"));   /* no owner adds every part alone */
}

/*
 * Stream-K's fractions in clusters of two (long runs of 128 x 128 tiles):
 * two tile rows that share B (512 x 512 x 65536 in eighths), else two tile
 * columns that share A (384 x 1024 x 65536 in fifths), run at other sizes
 * and grids as each CTA would: a cluster takes a part of a cluster tile,
 * both its CTAs the same k-steps (the shared operand's slices multicast to
 * both) of the CTA tile at their rank; every k-step of every CTA tile
 * once; a tile's parts on the CTAs of its rank in consecutive clusters
 * (part i on first + 2 i), the stage counter running on.  Then the CUDA's
 * flags and slots at those CTAs, and the multicast operand.
 */
static void
stream_k_cluster_fractions(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid, parts;   /* parts: of each split tile, 1: none split */
		bool off;                       /* launched without a workspace: sk_on 0 */
		int spec;                       /* of specs[] */
	} runs[] = {
		{512, 512, 65536, 132, 8, false, 0},    /* the spec's sizes: 8 cluster tiles on 64 clusters */
		{512, 512, 8192, 132, 8, false, 0},     /* parts of 16 k-steps */
		{1000, 512, 32768, 132, 4, false, 0},   /* 16 cluster tiles, the last row's ragged */
		{512, 512, 65536, 64, 4, false, 0},     /* 32 clusters */
		{4608, 512, 8192, 132, 8, false, 0},    /* 72 cluster tiles: a wave, then 6 in eighths */
		{4096, 512, 8192, 132, 1, false, 0},    /* 64: none split */
		{512, 512, 65536, 132, 1, true, 0},     /* no workspace: all whole */
		{384, 1024, 65536, 132, 5, false, 1},   /* the spec's sizes: 12 cluster tiles on 60 clusters */
		{128, 4096, 65536, 132, 4, false, 1},   /* one row of 16 */
		{384, 1000, 65536, 132, 5, false, 1},   /* the last column ragged */
		{384, 1024, 65536, 132, 1, true, 1},
	};
	static const struct {
		const char *spec, *shared;
		int parts, cm, cn;
	} specs[] = {
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, "wsf_tma_load_2d_multicast(tile_w + ", 8, 2, 1},
		{GEMM_SIZES(384, 1024, 65536) GEMM_PLAIN, "wsf_tma_load_2d_multicast(tile_x + ", 5, 1, 2},
	};
	int r, i, s, tests = 0;

	for (s = 0; s < (int)countof(specs); s++) {
		Kernel *k;
		Stmt *tl;
		const char *cu;

		if (s > 0) {
			teardown((void **)&t);
			if (setup((void **)&t) < 0)
				fail_msg("setup");
			*state = t;
		}
		if (!(k = kernel_of(t, specs[s].spec)))
			fail_msg("%s", t->msg);
		assert_true(k->mm.ksum == KSUM_SK_SCATTER && k->mm.ksize.sk_parts == specs[s].parts && k->tile_cols == 128);
		assert_true(k->mm.cluster[0] == specs[s].cm && k->mm.cluster[1] == specs[s].cn);
		tl = consumer_tiles(k);
		for (r = 0; r < (int)countof(runs); r++) {
			int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, kt = (K + 63) / 64, b;
			int64_t ctiles = (M + 128 * specs[s].cm - 1) / (128 * specs[s].cm) *
			                 ((N + 128 * specs[s].cn - 1) / (128 * specs[s].cn));
			int64_t *cover, *first, *seq;
			Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
			           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

			if (runs[r].spec != s)
				continue;
			cover = calloc((size_t)(2 * ctiles * kt), sizeof *cover);
			first = calloc((size_t)(2 * ctiles), sizeof *first), seq = calloc(64, sizeof *seq);
			for (b = 0; b < 2 * ctiles; b++)
				first[b] = -1;
			for (b = 0; b < runs[r].grid; b++) {
				int64_t it, counter = 0, rank = b % 2;

				plan_env(k, &env, M, N, K, b, runs[r].grid, runs[r].off);
				assert_true(env.v[k->niter_var] <= 16);
				for (it = 0; it < env.v[k->niter_var]; it++) {
					int64_t tile, kb, kn, ski, skn, ct, j;

					tile_env(k, tl, &env, it);
					tile = var_named(k, &env, "tile"), kb = var_named(k, &env, "kb");
					kn = var_named(k, &env, "kn");
					ski = var_named(k, &env, "sk_i"), skn = var_named(k, &env, "sk_n");
					if (tile < 0 || tile >= ctiles || kn < 1 || kb < 0 || kb + kn > kt || ski >= skn)
						fail_msg("run %d cta %lld tile %lld: k-steps [%lld, %lld) of %lld, part %lld of %lld", r,
						         (long long)b, (long long)tile, (long long)kb, (long long)(kb + kn),
						         (long long)kt, (long long)ski, (long long)skn);
					/* the cluster's two CTAs: the same cluster tile and k-steps */
					if (rank == 0)
						seq[4 * it] = tile, seq[4 * it + 1] = kb, seq[4 * it + 2] = kn, seq[4 * it + 3] = ski;
					else if (seq[4 * it] != tile || seq[4 * it + 1] != kb || seq[4 * it + 2] != kn ||
					         seq[4 * it + 3] != ski)
						fail_msg("run %d cta %lld: not its cluster's part", r, (long long)b);
					assert_int_equal(var_named(k, &env, "kbase"), counter);
					counter += kn;
					ct = 2 * tile + rank;   /* the CTA tile at this rank */
					for (j = kb; j < kb + kn; j++)
						cover[ct * kt + j]++;
					if (skn > 1) {   /* part ski of a split tile: on its first part's CTA + 2 ski */
						assert_true(kn >= 4 && skn == runs[r].parts);
						if (first[ct] < 0)
							first[ct] = b - 2 * ski;
						assert_int_equal(b - 2 * ski, first[ct]);
						assert_int_equal(first[ct] % 2, rank);
						tests++;
					}
				}
			}
			for (i = 0; i < 2 * ctiles * kt; i++)
				if (cover[i] != 1)
					fail_msg("run %d: CTA tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
					         (long long)(i % kt), (long long)cover[i]);
			if (runs[r].parts == 1)
				for (i = 0; i < 2 * ctiles; i++)
					assert_int_equal(first[i], -1);
			free(cover), free(first), free(seq);
		}
		cu = cuda_of(t);
		assert_non_null(strstr(cu, "wsf_sk_arrive(wsf_sk_flag(sk_work, blockIdx.x - me * 2));"));
		assert_non_null(strstr(cu, "const long long first = (long long)blockIdx.x - me * 2;"));
		assert_non_null(strstr(cu, "wsf_sk_flag(sk_work, first + 2), (unsigned)wsf_min(parts, 4LL));"));
		assert_non_null(strstr(cu, "wsf_sk_slot(sk_work, 1024, 65536, first + h * 2)"));
		assert_non_null(strstr(cu, specs[s].shared));   /* the operand the two share */
		{   /* the printed IR says where the parts are, as the CUDA does */
			Buf pb;

			buf_init(&pb, t->c.arena);
			kernel_print(&pb, k);
			assert_non_null(strstr(buf_str(&pb), "flag[cta - sk_i * 2] += 1 (release)"));
			assert_non_null(strstr(buf_str(&pb), "from sk_work[cta - sk_i * 2 .., a cluster apart], once "
			                                     "flag[cta - sk_i * 2] == sk_n"));
		}
	}
	assert_true(tests > 0);
}

/*
 * stream_k: the plan's lets run as each CTA of a grid would, over shapes
 * and grids with and without a partial last wave: every k-step of every
 * tile is computed by exactly one part; a tile split into parts has one
 * owner (the part with its first k-step), whose sk_help counts the CTAs
 * after it holding the rest, each of them one part from inside a tile (its
 * one slot); the stage counter runs on (kbase: the k-steps before); and no
 * CTA runs more than the whole waves' k-steps and one run (shorter than a
 * tile); and tiles are split only when the last wave holds at most 5 / 8
 * of the CTAs.  Then the lowered structure, that it is taken only when
 * asked, and the refusals.
 */
static void
stream_k(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid;
		bool split;   /* some tile is split into parts */
		bool off;     /* launched without a workspace: sk_on 0 */
	} runs[] = {
		{8192, 8192, 8192, 132, true, false},      /* 2048 tiles: 15 waves and 68 */
		{4096, 4096, 4096, 132, false, false},     /* 512: 3 and 116, more than 5 / 8 of the CTAs: whole */
		{8192, 14336, 4096, 132, true, false},     /* 3584: 27 and 20, runs of 16 k-steps (a quarter) over 80 CTAs */
		{16384, 1024, 8192, 132, false, false},    /* 512 */
		{8448, 8192, 8192, 132, false, false},     /* 2112: 16 whole waves */
		{8192, 8192, 8192, 100, true, false},      /* 48 left */
		{1000, 3000, 640, 13, true, false},        /* edges: 8 x 12 tiles, 5 left, 10 k-steps */
		{300, 5000, 4160, 7, true, false},         /* 60 tiles: 4 left, 65 k-steps */
		{128, 256, 64, 1, false, false},           /* one tile */
		{4096, 4096, 128, 100, false, false},      /* 2 k-steps: runs of 4 would be whole tiles */
		{4096, 4096, 1024, 100, true, false},      /* 12 left, runs of 4 over 48 CTAs */
		{640, 768, 8192, 6, true, false},          /* 15 tiles: 3 left */
		{8192, 8192, 8192, 132, false, true},      /* no workspace: all whole */
		{1024, 1024, 65536, 32, false, true},      /* 32 tiles on 32 CTAs (launch.c's grid without one) */
		{1024, 1024, 65536, 132, true, false},     /* on 132: all split */
	};
	static const Refusal refused[] = {
		{"{stream_k: true, consumers: pingpong}", "stream_k with ping-pong consumers is not implemented yet", true},
		{"{stream_k: true, cluster: [2, 1]}", "stream_k in clusters that share an operand is not implemented yet",
		 true},
		{"{stream_k: true, split_k: 2}", "stream_k with split_k is not implemented yet", true},
		{"{stream_k: true, signal: per_tile}", "stream_k with 'signal: per_tile' is not implemented yet", true},
		{"{stream_k: true, persistent: false}", "stream_k with one CTA a tile (persistent: false) is not "
		 "implemented yet", true},
		{"{stream_k: 2}", "expected true or false for 'stream_k'", false},
		{"{stream_k: true, swap_ab: true}", "stream_k on a swapped matmul (swap_ab) is not implemented yet", true},
	};
	const char *cut = strstr(gemm_bias_gelu, "schedule:");
	const char *spec = arena_printf(t->c.arena, "%.*sschedule: {stream_k: true}\n", (int)(cut - gemm_bias_gelu),
	                                gemm_bias_gelu);
	Kernel *k = kernel_of(t, spec);
	Stmt *roles, *tl, *kl;
	const char *cu;
	int r, i;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.ksize.sk_slot, 256 * 128 * 4);   /* 128 accumulator registers a consumer thread */
	assert_int_equal(k->param[k->nparam - 5].kind, PK_WORKSPACE);
	assert_int_equal(k->param[k->nparam - 4].size, SZ_SK_ON);   /* 0: no workspace, every tile whole */
	roles = find_kind(k->body, ST_ROLES, 0);
	tl = find_kind(roles->body[1], ST_LOOP, 1);
	kl = find_kind(tl, ST_LOOP, 0);
	assert_string_equal(expr(t, kl->u.loop.hi), "kn");
	assert_string_equal(expr(t, kl->u.loop.lin), "(kbase + kk)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_STORE, 0)->u.sk.cond), "(0 < kb)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_REDUCE, 0)->u.sk.cond), "(kb == 0)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_REDUCE, 0)->u.sk.parts), "sk_help");
	assert_string_equal(expr(t, find_kind(tl, ST_IF, 0)->u.branch.cond), "(kb == 0)");   /* the owner's epilogue */
	/* the producer loads a part's k-steps from kb on, its stages from kbase on */
	{
		Stmt *w[4];
		int n = stmts_of(roles->body[0], ST_TMA_LOAD, w, 4);

		assert_int_equal(n, 2);
		for (i = 0; i < n; i++) {
			assert_string_equal(expr(t, w[i]->u.tma.col), "((kb + kk) * 64)");
			assert_string_equal(expr(t, w[i]->u.tma.slot), "((kbase + kk) % 4)");
		}
	}

	for (r = 0; r < (int)countof(runs); r++) {
		int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, tiles, kt, grid, b, len = 0, ctas = 0, most = 0;
		int64_t *cover, *owner, *help, *helpers, *first, *last;
		Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
		           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

		tiles = (M + 127) / 128 * ((N + 255) / 256);
		kt = (K + 63) / 64;
		grid = runs[r].grid;   /* every CTA, however few the tiles (launch.c persistent_grid) */
		cover = calloc((size_t)(tiles * kt), sizeof *cover);
		owner = calloc((size_t)tiles, sizeof *owner);
		help = calloc((size_t)tiles, sizeof *help);
		helpers = calloc((size_t)tiles, sizeof *helpers);
		first = calloc((size_t)tiles, sizeof *first);
		last = calloc((size_t)tiles, sizeof *last);
		for (i = 0; i < tiles; i++)
			owner[i] = first[i] = -1;
		for (b = 0; b < grid; b++) {
			int64_t my, it, counter = 0, from_inside = 0;

			plan_env(k, &env, M, N, K, b, grid, runs[r].off);
			assert_int_equal(var_named(k, &env, "tiles"), tiles);
			assert_int_equal(var_named(k, &env, "ktiles"), kt);
			len = var_named(k, &env, "sk_len");
			ctas = var_named(k, &env, "sk_ctas");
			my = env.v[k->niter_var];
			for (it = 0; it < my; it++) {
				int64_t tile, kb, kn, kbase, j;

				tile_env(k, tl, &env, it);
				tile = var_named(k, &env, "tile");
				kb = var_named(k, &env, "kb");
				kn = var_named(k, &env, "kn");
				kbase = var_named(k, &env, "kbase");
				if (tile < 0 || tile >= tiles || kn < 1 || kb < 0 || kb + kn > kt)
					fail_msg("run %d cta %lld part %lld: tile %lld, k-steps [%lld, %lld) of %lld", r, (long long)b,
					         (long long)it, (long long)tile, (long long)kb, (long long)(kb + kn), (long long)kt);
				assert_int_equal(kbase, counter);   /* the stage counter runs on */
				counter += kn;
				for (j = kb; j < kb + kn; j++)
					cover[tile * kt + j]++;
				if (kb == 0) {
					assert_int_equal(owner[tile], -1);
					owner[tile] = b;
					help[tile] = var_named(k, &env, "sk_help");
				} else {
					assert_int_equal(from_inside++, 0);   /* one slot a CTA */
					helpers[tile]++;
					first[tile] = first[tile] < 0 ? b : first[tile];
					last[tile] = b;
				}
			}
			most = counter > most ? counter : most;
		}
		for (i = 0; i < tiles * kt; i++)
			if (cover[i] != 1)
				fail_msg("run %d: tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
				         (long long)(i % kt), (long long)cover[i]);
		/* the CTAs holding a tile's other parts are the sk_help right after its owner */
		for (i = 0; i < tiles; i++) {
			assert_true(owner[i] >= 0);
			assert_int_equal(help[i], helpers[i]);
			if (helpers[i])
				assert_true(first[i] == owner[i] + 1 && last[i] == owner[i] + help[i]);
		}
		if ((ctas > 0) != runs[r].split)
			fail_msg("run %d: %lld tiles on %lld CTAs, %s split", r, (long long)tiles, (long long)grid,
			         ctas > 0 ? "some" : "none");
		if (ctas > 0) {
			assert_true(len < kt);
			assert_true(most <= tiles / grid * kt + len);
		} else {
			assert_true(most <= (tiles + grid - 1) / grid * kt);
		}
		free(cover), free(owner), free(help), free(helpers), free(first), free(last);
	}

	/* CUDA: the slot written 16 bytes a thread, the flag released and taken */
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "unsigned char *const sk_work,"));
	assert_non_null(strstr(cu, "wsf_sk_post(wsf_sk_flag(sk_work, blockIdx.x));"));
	assert_non_null(strstr(cu, "wsf_sk_take(wsf_sk_flag(sk_work, cta));"));
	assert_non_null(strstr(cu, "(const float4 *)wsf_sk_slot(sk_work, 1024, 131072, cta) + threadIdx.x;"));
	assert_non_null(strstr(cu, "for (long long kk = 0LL; kk < kn; kk++)"));
	teardown(state);

	/* only when asked; stream_k: false is the default kernel */
	{
		static const char *const scheds[] = {"", "schedule: {stream_k: true}\n", "schedule: {stream_k: false}\n"};
		static const int want[] = {0, 1, 0};

		for (i = 0; i < (int)countof(scheds); i++) {
			char text[1024];

			snprintf(text, sizeof text, "%.*s%s", (int)(cut - gemm_bias_gelu), gemm_bias_gelu, scheds[i]);
			setup(state);
			t = *state;
			if (!(k = kernel_of(t, text)))
				fail_msg("%s: %s", scheds[i], t->msg);
			assert_int_equal(k->mm.ksize.sk_slot > 0, want[i]);
			assert_int_equal(census(k->body).kind[ST_SK_STORE], want[i]);
			if (!want[i]) {
				tl = find_kind(find_kind(k->body, ST_ROLES, 0)->body[1], ST_LOOP, 1);
				assert_string_equal(expr(t, find_kind(tl, ST_LOOP, 0)->u.loop.hi), "ktiles");
			}
			teardown(state);
		}
		setup(state);
		t = *state;
	}
	refused_schedules(HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	                  "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {}\n",
	                  refused, countof(refused));
}

/*
 * An unswapped K-split's reduce-scatter (Kernel.split_scatter): the
 * reduction, then the epilogue loop over the tile's subtiles (32 columns
 * each), whose compute and store each sit under the rank's test, with the
 * staging barrier between them outside both; both barriers count the other
 * ranks' 128 arrivals; every rank writes, arrives on the others' barriers
 * (two remote arrivals in the code) and stores subtiles rank, rank + splits
 * (none where the subtiles are fewer than the ranks).
 */
static void
split_scatter(Fixture *t, Kernel *k)
{
	Stmt *loop = consumer_tiles(k), *red, *eloop = NULL, *first = NULL, *last = NULL;
	const char *cu;
	char want[64];
	int i, at = -1, sync = -1, s = k->mm.ksize.splits;

	assert_non_null(loop);
	red = find_kind(loop, ST_SPLIT_REDUCE, 0);
	assert_non_null(red);
	for (i = 0; i < loop->nbody; i++)
		if (loop->body[i] == red)
			at = i;
	assert_true(at >= 0 && at + 1 < loop->nbody);
	eloop = loop->body[at + 1];
	assert_int_equal(eloop->kind, ST_LOOP);
	snprintf(want, sizeof want, "%d", k->tile_cols / 32);
	assert_string_equal(expr(t, eloop->u.loop.hi), want);
	snprintf(want, sizeof want, "((e %% %d) == rank)", s);
	for (i = 0; i < eloop->nbody; i++) {
		Stmt *x = eloop->body[i];

		if (x->kind == ST_IF && !strcmp(expr(t, x->u.branch.cond), want)) {
			if (!first)
				first = x;
			last = x;
		} else if (x->kind == ST_SYNC && first && last == first) {
			sync = i;
		}
	}
	assert_non_null(first);
	assert_true(first != last && sync > 0);
	assert_int_equal(first->nbody, 1);
	assert_int_equal(first->body[0]->kind, ST_COMPUTE);
	assert_int_equal(last->body[0]->kind, ST_IF);
	assert_int_equal(last->body[0]->u.branch.cond->kind, EX_ELECT);
	assert_int_equal(census(last).kind[ST_TMA_STORE], 1);
	assert_int_equal(census(eloop).kind[ST_COMPUTE], 1);
	assert_int_equal(k->bar[red->u.split.bar].arrivals, (s - 1) * 128);
	assert_int_equal(k->bar[red->u.split.bar + 1].arrivals, (s - 1) * 128);
	for (i = 0; i < loop->nbody; i++)   /* no rank 0 alone */
		assert_false(loop->body[i]->kind == ST_IF && !strcmp(expr(t, loop->body[i]->u.branch.cond), "(rank == 0)"));
	cu = cuda_of(t);
	snprintf(want, sizeof want, "stores subtiles me, me + %d, ...", s);
	assert_non_null(strstr(cu, want));
	snprintf(want, sizeof want, "if (q / 4 %% %d == me) {", s);
	assert_non_null(strstr(cu, want));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&"), 2);
}

static int lets_named(const Kernel *k, Stmt *s, const char *name, Stmt **out, int n);

/*
 * split_k in clusters that share operands: [2, 2] x split 2 is a cluster
 * of 8 CTAs, rank = split rank x 4 + place.  The place (rank % 4) picks the
 * CTA's tile in the cluster tile and its part of each shared box; the
 * multicast masks are the place's row or column shifted to the CTAs of its
 * split rank (rank / 4), whose k-steps start at k0 = (rank / 4) x kper; the
 * empty barrier counts one warpgroup of each of the 4 CTAs it shares a
 * stage with, and the reduction's peers are rank 4 r + place.
 */
static void
split_in_clusters(void **state)
{
	static const char spec[] = GEMM_SIZES(128, 1280, 8192) GEMM_PLAIN
		"schedule: {consumers: pingpong, tile: [64, 64, 64], split_k: 2, cluster: [2, 2]}\n";
	Fixture *t;
	Kernel *k;
	Stmt *roles, *ld[4], *k0[2];
	const char *cu;
	int b, n;

	k = lowered(&t, 0, spec);
	assert_int_equal(k->mm.ksize.splits, 2);
	assert_int_equal(k->mm.cluster[0] * k->mm.cluster[1], 4);
	assert_int_equal(kernel_cluster_ctas(k), 8);
	assert_true(k->mm.ksum == KSUM_SPLIT_SCATTER && k->mm.pingpong);
	roles = find_kind(k->body, ST_ROLES, 0);
	n = stmts_of(roles->body[0], ST_TMA_LOAD, ld, 4);
	assert_int_equal(n, 2);
	assert_string_equal(expr(t, ld[0]->u.tma.mcast), "((5 << ((rank % 4) % 2)) << ((rank / 4) * 4))");   /* A: a row */
	assert_string_equal(expr(t, ld[1]->u.tma.mcast), "((3 << (((rank % 4) / 2) * 2)) << ((rank / 4) * 4))");   /* B */
	assert_int_equal(lets_named(k, k->body, "k0", k0, 2), 1);
	assert_string_equal(expr(t, k0[0]->u.let.value), "((rank / 4) * kper)");
	for (b = 1; b < k->nbar && strcmp(k->bar[b].name, "empty") != 0; b++)
		;
	assert_true(b < k->nbar && k->bar[b].cluster);
	assert_int_equal(k->bar[b].arrivals, 4);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "__cluster_dims__(8, 1, 1)"));
	assert_int_equal(count(cu, "threadIdx.x % 128 + 4 * (wsf_cluster_rank() / 4), 4 * (wsf_cluster_rank() / 4 + 1));"),
	                 3);   /* the first stages' arrivals, a k-step's release and a tile's last */
	assert_non_null(strstr(cu, "const int me = (int)wsf_cluster_rank() / 4, at = (int)wsf_cluster_rank() % 4;"));
	assert_non_null(strstr(cu, "wsf_map_rank(mine, 4 * r + at)"));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&split_"), 2);
	assert_int_equal(count(cu, "[w], 4 * r + at);"), 2);
	assert_non_null(strstr(cu, "if (((e % 2LL) == ((long long)wsf_cluster_rank() / 4LL)))"));
	teardown((void **)&t);
	(void)state;
}

/*
 * split_k: a decode step's 16 x 4096 x 4096 is 64 swapped tiles for 132 SMs,
 * so by default clusters of 2 CTAs share each tile's K.  The lets give each
 * CTA its k-steps (k0 on, ktiles of them) and both roles use them; in the
 * consumers' tile loop the reduction comes after the k loop's one wait for
 * the mma (none inside it, none after) and before rank 0's epilogue, which
 * no other rank runs; its partial buffer holds each warpgroup's fragment
 * (8 registers of 128 threads); its barriers count the other ranks' 128
 * arrivals and rank 0's.  The kernel launches clusters of 2.  Then the
 * defaults (4 for 16 tiles; none for 128; unswapped for at most half a
 * wave of 64 x 128 tiles, on ping-pong's 64-row tiles 64 or 128 wide,
 * its ranks sharing the epilogue: split_scatter), the ping-pong release a
 * CTA without k-steps skips, and the forms refused.
 */
static void
split_k(void **state)
{
	static const char spec[] =
		"fusion: g\nsizes: {M: 16, N: 4096, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: relu, in: [y]}\n"
		"outputs:\n  o: {dtype: bf16}\n";
	static const struct {
		const char *sizes;
		int splits, cols;   /* cols: an unswapped tile's (64 rows where split, else 128 x 64) */
	} defaults[] = {
		{"{M: 16, N: 1024, K: 4096}", 4, 0},     /* 16 tiles: 4 (8 would not fit at once) */
		{"{M: 32, N: 2048, K: 8192}", 3, 0},     /* 32 tiles: 30 clusters of 4 are resident, 39 of 3 */
		{"{M: 16, N: 2560, K: 8192}", 2, 0},     /* 40 tiles: 66 clusters of 2 */
		{"{M: 24, N: 1920, K: 8192}", 4, 0},     /* 30 tiles: clusters of 4 all resident */
		{"{M: 16, N: 8192, K: 4096}", 1, 0},     /* 128 tiles: a wave already */
		{"{M: 1, N: 4096, K: 256}", 1, 0},       /* 4 k-steps: too few to share */
		{"{M: 256, N: 1024, K: 4096}", 2, 64},   /* unswapped, 64 tiles of 64 x 64 (at K = 8192 stream-K) */
		{"{M: 200, N: 1000, K: 4096}", 2, 64},   /* ragged: 4 x 16 tiles */
		{"{M: 128, N: 512, K: 8192}", 4, 64},    /* 16 tiles: clusters of 4, two subtiles for four ranks */
		{"{M: 256, N: 512, K: 8192}", 3, 64},    /* 32 tiles: 4 would not fit at once */
		{"{M: 128, N: 4096, K: 2048}", 2, 128},  /* 128 tiles of 64 x 64 would not, 64 of 64 x 128 do */
		{"{M: 384, N: 768, K: 8192}", 3, 128},   /* 72 of 64 x 64 would not fit split, 36 of 64 x 128 by 3 do */
		{"{M: 256, N: 4096, K: 4096}", 1, 64},   /* 128 tiles of 64 x 128: 128 x 64 as ever */
		{"{M: 256, N: 1024, K: 1024}", 1, 64},   /* 8 k-steps a CTA: too few */
		{"{M: 256, N: 1024, K: 2048}", 2, 64},   /* 16 */
	};
	static const Refusal refused[] = {
		{"{split_k: 2, signal: per_tile}", "split_k with 'signal: per_tile' is not implemented yet", true},
		{"{split_k: 3, swap_ab: false, cluster: [2, 2]}", "split_k 3 in clusters of 2 x 2 CTAs makes clusters of 12 "
		 "CTAs, which is not implemented yet: at most 8 (the portable cluster size); split by at most 2 or share "
		 "among fewer CTAs", true},
		{"{split_k: 9}", "expected an integer from 1 to 8 for 'split_k', saw '9'", false},
		{"{split_k: 0}", "expected an integer from 1 to 8 for 'split_k'", false},
	};
	Fixture *t;
	Kernel *k;
	Stmt *roles, *loop, *red, *lead, *kloop, *w[4];
	const char *cu;
	int i, at, b, n, parts = 0;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_true(k->mm.swap_ab && k->mm.pingpong);
	assert_int_equal(k->mm.ksize.splits, 2);
	assert_int_equal(kernel_cluster_ctas(k), 2);
	assert_int_equal(census(k->body).kind[ST_SPLIT_REDUCE], 1);
	roles = find_kind(k->body, ST_ROLES, 0);
	assert_non_null(roles);
	/* the producer loads from k0 on, ktiles of them */
	n = stmts_of(roles->body[0], ST_TMA_LOAD, w, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_string_equal(expr(t, w[i]->u.tma.col), "((k0 + kk) * 64)");
	/* the consumers' tile loop: k loop, its wait, the reduction, then rank 0's epilogue */
	assert_non_null(loop = consumer_tiles(k));
	for (at = 0; at < loop->nbody && loop->body[at]->kind != ST_LOOP; at++)
		;
	kloop = loop->body[at];
	assert_string_equal(expr(t, kloop->u.loop.hi), "ktiles");
	assert_int_equal(census(kloop).kind[ST_MMA_WAIT], 1);   /* wait_group 1 for the stage released */
	red = find_kind(loop, ST_SPLIT_REDUCE, 0);
	assert_non_null(red);
	for (i = at + 1; loop->body[i] != red; i++)
		assert_false(loop->body[i]->kind == ST_MMA_WAIT && loop->body[i]->u.group.pending != 0);
	assert_non_null(find_kind(loop, ST_MMA_WAIT, 0));
	assert_int_equal(find_kind(loop, ST_MMA_WAIT, 0)->u.group.pending, 0);
	assert_null(find_kind(loop, ST_MMA_WAIT, 1));
	lead = loop->body[loop->nbody - 1];
	assert_true(lead->kind == ST_IF && lead->body[0]->kind == ST_LOOP);
	assert_string_equal(expr(t, lead->u.branch.cond), "(rank == 0)");
	assert_int_equal(census(lead).kind[ST_COMPUTE], 1);
	assert_int_equal(census(lead).kind[ST_MMA_WAIT], 0);
	assert_string_equal(expr(t, red->u.split.parity), "((i / 2) & 1)");
	assert_string_equal(expr(t, red->u.split.ranks), "kparts");
	assert_int_equal(k->buf[red->u.split.buf].kind, BUF_PARTIAL);
	assert_int_equal(k->buf[red->u.split.buf].rows, 2);
	assert_int_equal(k->buf[red->u.split.buf].cols, 128 * 8);
	assert_string_equal(k->bar[red->u.split.bar].name, "split_full");
	assert_int_equal(k->bar[red->u.split.bar].arrivals, 128);
	assert_string_equal(k->bar[red->u.split.bar + 1].name, "split_free");
	assert_int_equal(k->bar[red->u.split.bar + 1].arrivals, 128);
	/* the ping-pong release of the last k-step, only where there was one */
	for (i = 0; i < loop->nbody; i++)
		if (loop->body[i]->kind == ST_IF && loop->body[i]->nbody == 1 && loop->body[i]->body[0]->kind == ST_MBAR_ARRIVE)
			assert_string_equal(expr(t, loop->body[i]->u.branch.cond), "(0 < ktiles)");
	for (b = 1; b < k->nbuf; b++)
		parts += k->buf[b].kind == BUF_PARTIAL;
	assert_int_equal(parts, 1);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "__cluster_dims__(2, 1, 1)"));
	assert_non_null(strstr(cu, "wsf_mbar_wait_cluster(&split_full[w], parity);"));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&"), 2);
	assert_non_null(strstr(cu, "const float4 v = theirs[128 * q];"));
	teardown((void **)&t);

	for (i = 0; i < (int)countof(defaults); i++) {
		char text[1024];
		const char *at_sizes = strstr(spec, "{M: 16"), *end = strchr(at_sizes, '}');

		snprintf(text, sizeof text, "%.*s%s%s", (int)(at_sizes - spec), spec, defaults[i].sizes, end + 1);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, text)))
			fail_msg("%s: %s", defaults[i].sizes, t->msg);
		if (k->mm.ksize.splits != defaults[i].splits)
			fail_msg("%s: split %d, expected %d", defaults[i].sizes, k->mm.ksize.splits, defaults[i].splits);
		assert_int_equal(census(k->body).kind[ST_SPLIT_REDUCE], k->mm.ksize.splits > 1);
		if (!k->mm.swap_ab) {
			assert_int_equal(k->tile_rows, k->mm.ksize.splits > 1 ? 64 : 128);
			assert_int_equal(k->mm.pingpong, k->mm.ksize.splits > 1);
			assert_int_equal(k->tile_cols, defaults[i].cols);
		}
		assert_int_equal(k->mm.ksum == KSUM_SPLIT_SCATTER, k->mm.ksize.splits > 1 && !k->mm.swap_ab);
		if (k->mm.ksum == KSUM_SPLIT_SCATTER)
			split_scatter(t, k);
		teardown((void **)&t);
	}
	/* asked for stream-K (cooperative only), a GEMM of few tiles keeps its 128 x 64 tile, unsplit */
	{
		char text[1024];
		const char *at_sizes = strstr(spec, "{M: 16"), *end = strchr(at_sizes, '}');

		snprintf(text, sizeof text, "%.*s{M: 256, N: 1024, K: 8192}%sschedule: {stream_k: true}\n",
		         (int)(at_sizes - spec), spec, end + 1);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, text)))
			fail_msg("stream_k: %s", t->msg);
		assert_int_equal(k->mm.ksize.splits, 1);
		assert_false(k->mm.pingpong);
		assert_int_equal(k->tile_rows, 128);
		teardown((void **)&t);
	}
	refused_schedules(spec, refused, countof(refused));
	(void)state;
}

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

/* The ST_LETs named NAME under S, in order, at most N of them into OUT; how many there are. */
static int
lets_named(const Kernel *k, Stmt *s, const char *name, Stmt **out, int n)
{
	Stmt *lets[64];
	int i, m = stmts_of(s, ST_LET, lets, 64), got = 0;

	for (i = 0; i < m && i < 64; i++)
		if (strcmp(k->var[lets[i]->u.let.var].name, name) == 0 && got++ < n)
			out[got - 1] = lets[i];
	return got;
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

/* y = x w^T at 4096^3 and N outputs of DT (y and its multiples), with BIAS bias rows of f32 added first */
static char *
many_outputs(Arena *a, int n, const char *dt, int bias, const char *sched)
{
	Buf b = {.arena = a};
	int i;

	buf_printf(&b, "fusion: many\nsizes: {M: 4096, N: 4096, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	           "  w: {dtype: bf16, shape: [N, K]}\n");
	for (i = 0; i < bias; i++)
		buf_printf(&b, "  b%d: {dtype: f32, shape: [N]}\n", i);
	buf_printf(&b, "ops:\n  - {out: s0, op: matmul, in: [x, w], transpose_b: true}\n");
	for (i = 0; i < bias; i++)
		buf_printf(&b, "  - {out: s%d, op: add, in: [s%d, b%d]}\n", i + 1, i, i);
	for (i = 1; i < n; i++)
		buf_printf(&b, "  - {out: o%d, op: mul, in: [s%d, %d.0]}\n", i, bias, i + 1);
	buf_printf(&b, "outputs:\n  s%d: {dtype: %s}\n", bias, dt);
	for (i = 1; i < n; i++)
		buf_printf(&b, "  o%d: {dtype: %s}\n", i, dt);
	if (sched)
		buf_printf(&b, "schedule: %s\n", sched);
	return b.s;
}

/*
 * Without a tile hint the tile narrows until two stages of its operands
 * fit beside its outputs' staging copies and row inputs (fit_tile): six f32
 * outputs and twelve bf16 ones at 128 x 240 (subtiles of 16 columns), 200
 * bias rows narrower still.  A hinted tile that cannot fit is refused at
 * the hint with what takes the shared memory, and a tile that fits.
 */
static void
staging_fits(void **state)
{
	static const struct {
		int n;
		const char *dt;
		int bias;
		const char *sched, *msg;
	} cases[] = {
		{6, "f32", 0, NULL, NULL},
		{12, "bf16", 0, NULL, NULL},
		{1, "bf16", 200, NULL, NULL},
		{3, "f32", 40, NULL, NULL},
		{6, "f32", 0, "{tile: [128, 128, 64]}", NULL},
		{6, "f32", 0, "{tile: [128, 256, 64]}",
		 "matmul tile 128 x 256 needs 245776 bytes of shared memory at one stage, more than the 232448-byte "
		 "budget: the operands' stage 49152, the outputs' staging copies 196608 ('s0' 32768, 'o1' 32768, 'o2' "
		 "32768, 'o3' 32768, 'o4' 32768, 'o5' 32768); N = 240 fits"},
		{1, "bf16", 200, "{tile: [128, 256, 64]}",
		 "the copies of 200 row inputs 409600; N = 96 fits"},
		{40, "f32", 0, "{tile: [128, 64, 64]}", "use fewer outputs or row inputs"},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		k = kernel_of(t, many_outputs(t->c.arena, cases[i].n, cases[i].dt, cases[i].bias, cases[i].sched));
		if (!cases[i].msg) {
			if (!k)
				fail_msg("case %d: %s", i, t->msg);
			assert_true(kernel_smem_bytes(k) <= k->smem_budget);
			if (!cases[i].sched && k->tile_cols >= 256)
				fail_msg("case %d: tile N %d, expected narrower", i, k->tile_cols);
		} else if (k || !strstr(t->msg, cases[i].msg)) {
			fail_msg("case %d: %s, expected \"%s\"", i, k ? "compiled" : t->msg, cases[i].msg);
		}
		teardown((void **)&t);
	}
	(void)state;
}

/* The loops over variable NAME in S, the last into *LAST: how many. */
static int
loops_named(const Kernel *k, const Stmt *s, const char *name, Stmt **last)
{
	int i, n = 0;

	if (!s)
		return 0;
	if (s->kind == ST_LOOP && strcmp(k->var[s->u.loop.var].name, name) == 0) {
		*last = (Stmt *)s;
		n++;
	}
	for (i = 0; i < s->nbody; i++)
		n += loops_named(k, s->body[i], name, last);
	return n + loops_named(k, st_else(s), name, last);
}

/*
 * A tile whose N is an odd multiple of 16 (a hint's: a K-major B takes any
 * multiple of 16 up to 256) runs its epilogue in subtiles of 16 columns
 * (MatmulPlan.epi_cols), 32 otherwise: the epilogue loop's extent, the staging
 * copies' columns and swizzle (32-byte rows of bf16, 64-byte of f32), the
 * output maps' box, and the CUDA's 8 fragment elements a subtile (the
 * accumulator's from 8 sub on), a bias row's 4 distinct columns and the
 * next subtile's 16 columns on, a K-split rank's subtiles (float4 q's is
 * q / 2), ping-pong's halves of a staging copy (128 x 16 elements apart).
 */
static void
narrow_subtiles(void **state)
{
	static const struct {
		const char *sched;
		int bn, epi;
		const char *cuda[4];
	} cases[] = {
		{"{tile: [128, 80, 64]}", 80, 16,
		 {"wsf_swizzle<32, 2>(r * 16 + c)", "wsf_swizzle<64, 4>(r * 16 + c)", "acc_y[8 * sub + jj]", "float here_b[4];"}},
		{"{tile: [128, 96, 64]}", 96, 32,
		 {"wsf_swizzle<64, 2>(r * 32 + c)", "wsf_swizzle<128, 4>(r * 32 + c)", "acc_y[16 * sub + jj]", "float here_b[8];"}},
		{"{tile: [128, 48, 64], split_k: 3}", 48, 16,
		 {"if (q / 2 % 3 != me)", "for (int q = 0; q < 4; q++) {", "const long long col = left + 48 + 8 * (q >> 1)",
		  "float ahead_b[4];"}},
		{"{tile: [128, 112, 64], stream_k: true}", 112, 16,
		 {"acc_y[8 * sub + jj]", "for (int jj = 0; jj < 8; jj += 2) {", "const long long col = left + 16 + 8 * (q >> 1)",
		  "float here_b[4];"}},
		{"{tile: [128, 112, 64], consumers: pingpong}", 112, 16,
		 {"((long long)wsf_wg * 2048LL)", "acc_y[56 * hb + 8 * sub + jj]", "wsf_swizzle<32, 2>(r * 16 + c)",
		  "float here_b[4];"}},
	};
	char text[1024];
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *el = NULL;
		const char *cu;
		int b, staged = 0;

		snprintf(text, sizeof text, "%s%sschedule: %s\n", GEMM_SIZES(1000, 1000, 1000), GEMM_IN
		         "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM "  - {out: z, op: add, in: [y, b]}\n"
		         "outputs:\n  z: {dtype: bf16}\n  y: {dtype: f32}\n", cases[i].sched);
		k = lowered(&t, i, text);
		assert_int_equal(k->tile_cols, cases[i].bn);
		assert_int_equal(k->mm.epi_cols, cases[i].epi);
		assert_int_equal(loops_named(k, k->body, "e", &el), 1);
		assert_string_equal(expr(t, el->u.loop.hi), arena_printf(t->c.arena, "%d", cases[i].bn / cases[i].epi));
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING) {   /* z's bf16 copy, then y's f32 */
				assert_int_equal(k->buf[b].cols, cases[i].epi);
				assert_int_equal(k->buf[b].swizzle, cases[i].epi * 2 * (staged + 1));
				staged++;
			}
		assert_int_equal(staged, 2);
		for (j = 1; j < k->nparam; j++)
			if (k->param[j].kind == PK_TMAP && k->param[j].arg >= t->c.fusion->ninput)
				assert_int_equal(k->param[j].box[1], cases[i].epi);
		cu = cuda_of(t);
		for (j = 0; j < 4; j++)
			if (!strstr(cu, cases[i].cuda[j]))
				fail_msg("case %d: no '%s' in the CUDA", i, cases[i].cuda[j]);
		teardown((void **)&t);
	}
	(void)state;
}

/* Case I's kernel: y = x w^T (GEMM_IN and GEMM_MM at SIZES) with INPUTS and the epilogue OPS into a bf16 z, SCHED. */
static Kernel *
epilogue_gemm(Fixture **t, int i, const char *sizes, const char *inputs, const char *ops, const char *sched)
{
	char text[1024];

	snprintf(text, sizeof text, "%s%s%sops:\n%s%soutputs:\n  z: {dtype: bf16}\n%s", sizes, GEMM_IN, inputs, GEMM_MM,
	         ops, sched);
	return lowered(t, i, text);
}

/*
 * An epilogue's row inputs through shared memory (lower_matmul.c,
 * stage_rows): on one cooperative mainloop of whole tiles each row input
 * has a row buffer of the tile's columns in two copies; the consumers'
 * tile loop fetches them before its k loop and puts them in the tile's
 * copy (i % 2) after it, then one wait_group 0 and one barrier (sync.c)
 * come before the epilogue loop, which reads the copy and holds no
 * barrier but its staging tile's; the CUDA reads a subtile's columns from
 * the copy in pairs and loads none from global memory.  A tile narrower
 * than the consumers guards the fetch and the put.  Ping-pong, a swapped
 * matmul, a K-split, stream-K, independent matmuls and an input that waits
 * keep reading in the subtiles (ahead_b).
 */
static void
row_inputs_staged(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int rows, cols;   /* row buffers and their columns (0: none) */
		Dtype dt;
		const char *cuda;
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_BF16, "wsf_row_pair(row_b + ((i % 2LL)) * 256 + sub * 32 + 8 * (q >> 1) + wc, here_b[q], here_b[q + 1]);"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: f32, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_F32, "const float fetch_b = col0 + threadIdx.x < cols ? in_b[col0 + threadIdx.x] : (float)0;"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: f16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_F16, "wsf_row_pair_f16(row_b + "},
		{GEMM_SIZES(1000, 1000, 1000), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {tile: [128, 80, 64]}\n", 1, 80, DT_BF16, "if (threadIdx.x < 80)\n"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n  c: {dtype: f32, shape: [N]}\n",
		 "  - {out: u, op: add, in: [y, b]}\n  - {out: z, op: mul, in: [u, c]}\n", "", 2, 256, DT_BF16,
		 "wsf_row_pair(row_c + ((i % 2LL)) * 256"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(16, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 0, 0, DT_BF16, "in_b"},
		{GEMM_SIZES(256, 1024, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {tile: [128, 128, 64], split_k: 2}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {stream_k: true}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: u, op: add, in: [y, b]}\n  - {out: z, op: add, in: [u, r]}\n", "", 0, 0, DT_BF16, "ahead_b"},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *tl, *kl, *el, *compute, *x;
		const char *cu;
		int b, rows = 0, at, reads = 0;

		k = epilogue_gemm(&t, i, cases[i].sizes, cases[i].inputs, cases[i].ops, cases[i].sched);
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_ROW) {
				assert_int_equal(k->buf[b].rows, 1);
				assert_int_equal(k->buf[b].cols, cases[i].cols);
				assert_int_equal(k->buf[b].stages, 2);
				assert_int_equal(k->param[k->buf[b].param].view, VIEW_ROW);
				if (!rows++)
					assert_int_equal(k->buf[b].dtype, cases[i].dt);
			}
		assert_int_equal(rows, cases[i].rows);
		cu = cuda_with(t, i, cases[i].cuda);
		if (!rows) {
			assert_null(strstr(cu, " fetch_b = "));
			teardown((void **)&t);
			continue;
		}
		assert_null(strstr(cu, "ahead_"));   /* no subtile loads a row input */
		tl = consumer_tiles(k);
		assert_non_null(tl);
		kl = find_kind(tl, ST_LOOP, 0);
		el = epilogue_of(k, tl);
		assert_non_null(kl);
		assert_non_null(el);
		for (at = 0; tl->body[at] != kl; at++)
			;
		for (j = 1; j <= rows; j++) {
			assert_int_equal(tl->body[at - j]->kind, ST_ROW_FETCH);
			assert_string_equal(expr(t, tl->body[at - j]->u.row_copy.col), "col0");
			assert_int_equal(tl->body[at + j]->kind, ST_ROW_PUT);
			assert_string_equal(expr(t, tl->body[at + j]->u.row_copy.slot), "(i % 2)");
		}
		assert_int_equal(tl->body[at + rows + 1]->kind, ST_MMA_WAIT);
		/*
		 * Where the copies do not divide the subtiles (128 x 80: five over
		 * four; two row buffers leave room for three copies of eight), the
		 * next tile's first waits for every store (restart_wait), before
		 * the same barrier
		 */
		for (b = 1; k->buf[b].kind != BUF_STAGING; b++)
			;
		if (el->u.loop.hi->ival % k->buf[b].stages) {
			x = tl->body[at + rows + 2];
			assert_int_equal(x->kind, ST_IF);
			assert_int_equal(x->body[0]->kind, ST_BULK_WAIT);
			assert_int_equal(x->body[0]->u.group.pending, 0);
			at++;
		}
		assert_int_equal(tl->body[at + rows + 2]->kind, ST_SYNC);
		assert_int_equal(tl->body[at + rows + 2]->u.sync.id, 1);   /* the consumers' named barrier */
		assert_ptr_equal(tl->body[at + rows + 3], el);
		assert_int_equal(census(tl).kind[ST_SYNC], 2);     /* that one and the staging tile's */
		assert_int_equal(census(el).kind[ST_SYNC], 1);
		compute = find_kind(el, ST_COMPUTE, 0);
		assert_non_null(compute);
		for (j = 0; j < compute->nreads; j++)
			if (compute->reads[j].buf && k->buf[compute->reads[j].buf].kind == BUF_ROW) {
				assert_string_equal(expr(t, compute->reads[j].slot), "(i % 2)");
				reads++;
			}
		assert_int_equal(reads, rows);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * full_inputs_carried: a full epilogue input [M, N] of the output's element
 * size (bf16, f16) rides in the output's staging copies on one cooperative
 * mainloop whose copies are a ring of three or more that divides the
 * subtiles: a tensor map of one copy's box, a barrier a copy, the compute
 * reading the copy it writes; the consumers' k loop issues the tile's
 * first copies' loads at its last k-step but one (one thread, after a
 * read-wait for every store), each subtile from the second issues subtile
 * e + S - 1's before its store, every thread waits on the copy's barrier
 * right before the compute, and no read-wait comes before the subtile's
 * barrier.  Two copies (256 x 128's), f32 under a bf16 output, ping-pong,
 * a K-split and a second residual keep the pointer loads.
 */
static void
full_inputs_carried(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int carried, copies, subtiles;   /* carried: inputs the copies carry */
		const char *cuda;
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 1, 4, 8, "wsf_tma_load_2d(stage_z + (((e + 3LL) % 4LL)) * 4096, &sub_r, (col0 + ((e + 3LL) * 32LL)), row0, "
		 "&carry_z[((e + 3LL) % 4LL)]);"},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: f16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 1, 4, 8, "wsf_row_pair_f16(cur_stage_z + wsf_swizzle<64, 2>((wr + 8 * (q & 1)) * 32 + 8 * (q >> 1) + wc), "
		 "here_r[2 * q], here_r[2 * q + 1]);"},
		{GEMM_SIZES(1000, 1000, 1000), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: mul, in: [y, r]}\n",
		 "schedule: {tile: [128, 128, 64]}\n", 1, 4, 4, "wsf_mbar_wait(&carry_z[(e % 4LL)], "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [256, 128, 64]}\n", 0, 0, 0, "in_r + "},   /* two copies of 256 x 32 */
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [256, 128, 64], stages: 3}\n", 1, 4, 4, "(wr + 64 * hb + 8 * (q & 1)) * 32"},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n  q: {dtype: bf16, shape: [M, N]}\n",
		 "  - {out: u, op: add, in: [y, r]}\n  - {out: z, op: add, in: [u, q]}\n", "", 1, 4, 8, "wsf_load2(in_q + "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: f32, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 0, 0, 0, "wsf_load2(in_r + "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 0, 0, 0, "in_r + "},
		{GEMM_SIZES(256, 1024, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [128, 128, 64], split_k: 2}\n", 0, 0, 0, "in_r + "},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *tl, *kl, *el, *compute, *lead, *at, *wait;
		const char *cu;
		int b, sb = 0, carried = 0, n;

		k = epilogue_gemm(&t, i, cases[i].sizes, cases[i].inputs, cases[i].ops, cases[i].sched);
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING && k->buf[b].preload) {
				const KParam *p = &k->param[k->buf[b].preload];

				sb = b;
				carried++;
				assert_int_equal(p->kind, PK_TMAP);
				assert_true(p->preload);
				assert_string_equal(p->name, "r");
				assert_int_equal(p->box[0], k->buf[b].rows);
				assert_int_equal(p->box[1], k->buf[b].cols);
				assert_int_equal(k->buf[b].stages, cases[i].copies);
				assert_int_equal(k->bar[k->buf[b].preload_bar].count, cases[i].copies);
				assert_int_equal(k->bar[k->buf[b].preload_bar].arrivals, 1);
			}
		assert_int_equal(carried, cases[i].carried);
		cu = cuda_with(t, i, cases[i].cuda);
		if (!carried) {
			assert_null(strstr(cu, "sub_r"));
			teardown((void **)&t);
			continue;
		}
		tl = consumer_tiles(k);
		assert_non_null(tl);
		kl = find_kind(tl, ST_LOOP, 0);
		el = epilogue_of(k, tl);
		assert_non_null(kl);
		assert_non_null(el);
		assert_int_equal(el->u.loop.hi->ival, cases[i].subtiles);
		/* the k loop: its one if issues the first copies' loads at the last k-step but one */
		for (n = 0; n < kl->nbody && kl->body[n]->kind != ST_IF; n++)
			;
		assert_true(n < kl->nbody);
		lead = kl->body[n];
		assert_int_equal(lead->u.branch.cond->kind, EX_ELECT);
		at = lead->body[0];
		assert_string_equal(expr(t, at->u.branch.cond), "(kk == max((ktiles - 2), 0))");
		assert_int_equal(at->body[0]->kind, ST_BULK_WAIT);
		assert_true(at->body[0]->u.group.read);
		assert_int_equal(at->body[0]->u.group.pending, 0);
		assert_int_equal(census(at).kind[ST_TMA_LOAD], cases[i].copies);
		assert_int_equal(census(at).kind[ST_EXPECT_TX], cases[i].copies);
		for (j = 0; j < cases[i].copies; j++) {
			Stmt *ld = at->body[2 + 2 * j];

			assert_int_equal(ld->kind, ST_TMA_LOAD);
			assert_int_equal(ld->u.tma.buf, sb);
			assert_int_equal(ld->u.tma.bar, k->buf[sb].preload_bar);
			assert_int_equal(ld->u.tma.slot->ival, j);
		}
		assert_int_equal(census(kl).kind[ST_TMA_LOAD], cases[i].copies);
		/* the epilogue: the copy's wait right before the compute, which reads the copy it writes */
		compute = find_kind(el, ST_COMPUTE, 0);
		for (n = 0; el->body[n] != compute; n++)
			;
		assert_true(n > 0);
		wait = el->body[n - 1];
		assert_int_equal(wait->kind, ST_MBAR_WAIT);
		assert_int_equal(wait->u.mbar.bar, k->buf[sb].preload_bar);
		assert_string_equal(expr(t, wait->u.mbar.barslot), "(e % 4)");
		assert_string_equal(expr(t, wait->u.mbar.parity), cases[i].subtiles == 8 ? "((((i * 8) + e) / 4) & 1)"
		                                                               : "((((i * 4) + e) / 4) & 1)");
		for (j = 0; j < compute->nreads && compute->reads[j].buf != sb; j++)
			;
		assert_true(j < compute->nreads);
		assert_string_equal(expr(t, compute->reads[j].slot), "(e % 4)");
		/* one read-wait a subtile, before a later subtile's load, none before the barrier */
		assert_int_equal(census(el).kind[ST_TMA_LOAD], cases[i].subtiles > cases[i].copies);
		assert_int_equal(census(el).kind[ST_BULK_WAIT], cases[i].subtiles > cases[i].copies);
		assert_int_equal(census(el).kind[ST_SYNC], 1);
		for (n = 0; el->body[n]->kind != ST_SYNC; n++)
			assert_false(el->body[n]->kind == ST_IF && find_kind(el->body[n], ST_BULK_WAIT, 0));
		if (cases[i].subtiles > cases[i].copies) {
			Stmt *store = el->body[n + 1], *next = store->body[0];

			assert_int_equal(store->kind, ST_IF);
			assert_int_equal(next->kind, ST_IF);
			assert_string_equal(expr(t, next->u.branch.cond), "((e >= 1) & ((e + 3) < 8))");
			assert_int_equal(next->body[0]->kind, ST_BULK_WAIT);
			assert_true(next->body[0]->u.group.read);
			assert_int_equal(next->body[0]->u.group.pending, 0);
			assert_string_equal(expr(t, next->body[2]->u.tma.slot), "((e + 3) % 4)");
			assert_int_equal(store->body[1]->kind, ST_TMA_STORE);
		}
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * long_k_stream: without a hint, stream-K for 8 to 33 tiles (of 128 x 128,
 * else 128 x 256), in runs of 1 / parts of a tile with tiles x parts about
 * the SMs (132 / tiles, 4 to 16), runs of 32 k-steps or more at 128 x 128
 * in quarters, twice at 128 x 256 and twice that in more parts or on one
 * row of tiles, 80 runs or more; else, where 128 x 128 tiles fill at most
 * 4 / 5 of the SMs on more than one row, halves or thirds of tiles 128
 * wide, else 160 to 256 (64-wide chunks of an N-major B), in 120 runs or
 * more of 64 k-steps or more; else quarters or halves of 128 x 64 tiles,
 * 80 to 132 runs of 32 k-steps or more, on one to four rows of tiles or
 * an output taller than wide, whose tiles then go along rows (raster_rows),
 * else halves of 128 x 96 (of a K-major B) in runs of 64 on two to four rows;
 * not on more tiles, fewer, a shorter K,
 * fewer runs, rows that do not start 128-byte aligned (a cluster instead),
 * a swapped GEMM, one CTA a tile, or a hint that bears on it (stages too).
 * Halves of 128 x 192 give way to thirds of 128 x 256 where those fill the
 * SMs; parts of 128 k-steps or more of 128 x 128 tiles (64 in more than
 * quarters) run in clusters of two tile rows, else (128 or more) of two
 * tile columns, where those pair up.
 */
static void
long_k_default(void **state)
{
#define WGRAD "inputs:\n  x: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [K, N]}\n" \
	      "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_a: true}\noutputs:\n  y: {dtype: bf16}\n"
	static const struct {
		const char *spec;
		int parts, bn;   /* parts 0: no stream-K */
	} cases[] = {
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN, 4, 256},      /* 32 tiles: 128 CTAs */
		{GEMM_SIZES(1024, 1024, 16384) GEMM_PLAIN, 4, 256},
		{GEMM_SIZES(512, 1024, 65536) GEMM_PLAIN, 4, 128},       /* 32 of 128 x 128 */
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, 8, 128},        /* 16: eighths */
		{GEMM_SIZES(256, 512, 65536) GEMM_PLAIN, 16, 128},       /* 8: sixteenths */
		{GEMM_SIZES(128, 1280, 32768) GEMM_PLAIN, 8, 128},       /* 10: eighths (runs of 64 k-steps), 80 runs */
		{GEMM_SIZES(256, 512, 32768) GEMM_PLAIN, 0, 0},          /* eighths, 64 runs */
		{GEMM_SIZES(512, 512, 16384) GEMM_PLAIN, 4, 64},         /* quarters of 128 x 128: 64 runs; of 128 x 64 */
		{GEMM_SIZES(1000, 1000, 20480) GEMM_PLAIN, 4, 256},      /* 8 x 4 ragged tiles */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_NMAJOR, 4, 256},
		{GEMM_SIZES(1024, 1024, 65536) WGRAD, 4, 256},      /* A M-major, B N-major: a weight gradient */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		 "  - {out: z, op: add, in: [y, b]}\noutputs:\n  z: {dtype: bf16}\n", 4, 256},
		{GEMM_SIZES(512, 1024, 8192) GEMM_PLAIN, 4, 128},        /* quarters of 32 k-steps */
		{GEMM_SIZES(512, 768, 8192) GEMM_PLAIN, 4, 128},         /* 24 tiles, quarters: 96 runs */
		{GEMM_SIZES(128, 4096, 16384) GEMM_PLAIN, 4, 128},       /* one row of tiles: quarters of 64 */
		{GEMM_SIZES(128, 4096, 8192) GEMM_PLAIN, 2, 64},         /* not of 32: halves of 128 x 64, 128 runs */
		{GEMM_SIZES(512, 1024, 4096) GEMM_PLAIN, 2, 64},         /* runs of 16; 128 x 64 halves of 32 */
		{GEMM_SIZES(128, 1280, 8192) GEMM_PLAIN, 6, 64},         /* one row of 20 tiles of 128 x 64: sixths, 120 runs */
		{GEMM_SIZES(128, 1280, 16384) GEMM_PLAIN, 6, 64},
		{GEMM_SIZES(128, 1536, 8192) GEMM_PLAIN, 4, 64},         /* 24 tiles: 5 parts not, quarters */
		{GEMM_SIZES(256, 1024, 8192) GEMM_NMAJOR, 4, 64},        /* 64-wide chunks: 64 */
		{GEMM_SIZES(200, 1000, 8192) GEMM_PLAIN, 4, 64},         /* ragged, 2 x 16 tiles */
		{GEMM_SIZES(128, 4096, 4096) GEMM_PLAIN, 2, 64},         /* 64 tiles: halves */
		{GEMM_SIZES(128, 1280, 4096) GEMM_PLAIN, 0, 0},          /* runs of 16, or 40 */
		{GEMM_SIZES(128, 1024, 8192) GEMM_PLAIN, 8, 64},         /* 16 tiles: eighths of 16 k-steps, not 64 runs */
		{GEMM_SIZES(128, 768, 8192) GEMM_PLAIN, 0, 0},           /* 12 tiles: 11 parts of 11 */
		{GEMM_SIZES(384, 768, 8192) GEMM_PLAIN, 0, 0},           /* 36 tiles: 144 runs, or 72 */
		{GEMM_SIZES(96, 1280, 8192) GEMM_PLAIN, 0, 0},           /* one ragged row of tiles */
		{GEMM_SIZES(128, 2048, 2048) GEMM_PLAIN, 0, 0},          /* 32 k-steps */
		{GEMM_SIZES(512, 768, 4096) GEMM_PLAIN, 2, 64},          /* 4 rows of tiles: 48 tiles, halves */
		{GEMM_SIZES(640, 384, 8192) GEMM_PLAIN, 4, 64},          /* 5 rows of tiles, taller than wide */
		{GEMM_SIZES(1024, 256, 8192) GEMM_PLAIN, 4, 64},         /* 8 */
		{GEMM_SIZES(1024, 512, 4096) GEMM_PLAIN, 2, 64},
		{GEMM_SIZES(640, 704, 4096) GEMM_PLAIN, 0, 0},           /* 5 rows of 11 tiles, not taller than wide */
		{GEMM_SIZES(1024, 1024, 8192) GEMM_PLAIN, 2, 128},       /* not 128 x 256 in runs of 32: halves, 128 runs */
		{GEMM_SIZES(1024, 1024, 12288) GEMM_PLAIN, 2, 128},      /* not of 48: halves of 96 */
		{GEMM_SIZES(1024, 1024, 16320) GEMM_PLAIN, 2, 128},
		{GEMM_SIZES(2048, 512, 8192) GEMM_PLAIN, 2, 128},        /* 64 tiles, tall */
		{GEMM_SIZES(1000, 1000, 8192) GEMM_PLAIN, 2, 128},       /* 8 x 8 ragged tiles */
		{GEMM_SIZES(512, 1280, 12288) GEMM_PLAIN, 3, 128},       /* 40 tiles: thirds of 64, 120 runs */
		{GEMM_SIZES(512, 1280, 8192) GEMM_PLAIN, 2, 96},         /* thirds of 42; 80 of 128 x 64: halves of 96 */
		{GEMM_SIZES(384, 2048, 8192) GEMM_PLAIN, 2, 96},         /* 66 tiles of 128 x 96, 132 runs */
		{GEMM_SIZES(256, 2560, 8192) GEMM_PLAIN, 2, 96},         /* 2 x 27 ragged */
		{GEMM_SIZES(512, 1280, 4096) GEMM_PLAIN, 0, 0},          /* runs of 32 */
		{GEMM_SIZES(128, 6144, 8192) GEMM_PLAIN, 0, 0},          /* one row of 96 tiles of 128 x 64: 3 / 4 of the SMs */
		{GEMM_SIZES(128, 4608, 8192) GEMM_PLAIN, 2, 96},         /* one row of 72: halves of 48 of 128 x 96 */
		{GEMM_SIZES(128, 5120, 16384) GEMM_PLAIN, 2, 96},        /* 80 */
		{GEMM_SIZES(512, 1280, 8192) GEMM_NMAJOR, 0, 0},         /* 96 is not whole 64-wide chunks */
		{GEMM_SIZES(512, 1792, 8192) GEMM_PLAIN, 0, 0},          /* 76 tiles: 152 runs */
		{GEMM_SIZES(640, 1280, 8192) GEMM_PLAIN, 0, 0},          /* 5 rows of tiles */
		{GEMM_SIZES(768, 1024, 8192) GEMM_PLAIN, 0, 0},          /* 48 tiles: 96 runs */
		{GEMM_SIZES(1024, 1024, 4096) GEMM_PLAIN, 0, 0},         /* halves of 32 */
		{GEMM_SIZES(128, 8192, 8192) GEMM_PLAIN, 0, 0},          /* one row of 64 tiles */
		{GEMM_SIZES(1536, 1024, 8192) GEMM_PLAIN "schedule: {stages: 5}\n", 0, 0},   /* 5 of 128 x 224 do not fit */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stages: 4}\n", 0, 0},
		/* taller than wide, up to 128 k-steps: choose_tile's one wave of narrowed tiles along the rows */
		{GEMM_SIZES(1152, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 117 of 128 x 80, not halves of 128 x 160 */
		{GEMM_SIZES(1280, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 130 of 128 x 80, not thirds of 128 x 256 */
		{GEMM_SIZES(1408, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 121 of 128 x 96 */
		{GEMM_SIZES(1280, 1024, 12288) GEMM_PLAIN, 3, 256},      /* 80: not halves of 60 of 128 x 192, thirds of 40 x 256 */
		{GEMM_SIZES(1280, 1024, 16384) GEMM_PLAIN, 3, 256},
		{GEMM_SIZES(1280, 1024, 8192) GEMM_NMAJOR, 3, 256},      /* 64-wide chunks (no narrowing) */
		{GEMM_SIZES(1408, 1024, 12288) GEMM_PLAIN, 3, 256},      /* 88: 132 runs of 64 */
		{GEMM_SIZES(1280, 1024, 4096) GEMM_PLAIN, 0, 0},         /* thirds of 21 */
		{GEMM_SIZES(1152, 1024, 8192) GEMM_NMAJOR, 0, 0},        /* 54 of 128 x 192: 108 runs */
		{GEMM_SIZES(1536, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 132 of 128 x 96 along rows */
		{GEMM_SIZES(1536, 1024, 16384) GEMM_PLAIN, 2, 224},      /* 96: of 60 */
		{GEMM_SIZES(1280, 1280, 8192) GEMM_PLAIN, 2, 224},       /* 100 */
		{GEMM_SIZES(2048, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 128 fill the SMs */
		{GEMM_SIZES(1792, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 112 */
		{GEMM_SIZES(1024, 1280, 8192) GEMM_PLAIN, 2, 160},       /* 80 */
		{GEMM_SIZES(256, 256, 65536) GEMM_PLAIN, 0, 0},          /* 4 tiles */
		{GEMM_SIZES(2048, 1024, 32768) GEMM_PLAIN, 0, 0},        /* 64 tiles of 128 x 256 */
		{GEMM_SIZES(1024, 2048, 16384) GEMM_PLAIN, 0, 0},
		{GEMM_SIZES(1024, 1024, 16392) GEMM_PLAIN, 0, 0},        /* rows of 32784 bytes: a cluster */
		{GEMM_SIZES(16, 4096, 65536) GEMM_PLAIN, 0, 0},          /* swapped */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stream_k: false}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {tile: [128, 256, 64]}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {split_k: 1}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {persistent: false}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {cluster: [1, 1]}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {signal: per_tile}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stream_k: true}\n", 4, 64},    /* the hint: the default tile */
	};
	static const struct {
		const char *spec;
		int cm, cn;   /* clusters of cm x cn CTAs */
	} pairs[] = {   /* runs of 128 k-steps or more of 128 x 128 tiles (or 64 in more than quarters) whose rows pair
	                   up, else of 128 or more whose columns pair up */
		{GEMM_SIZES(512, 1024, 65536) GEMM_PLAIN, 2, 1},    /* quarters of 256 */
		{GEMM_SIZES(512, 1024, 32768) GEMM_PLAIN, 2, 1},    /* of 128 */
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, 2, 1},     /* eighths of 128 */
		{GEMM_SIZES(256, 1024, 65536) GEMM_PLAIN, 2, 1},
		{GEMM_SIZES(1000, 512, 32768) GEMM_PLAIN, 2, 1},    /* 8 rows, the last ragged */
		{GEMM_SIZES(512, 1024, 65536) WGRAD, 2, 1},         /* A M-major, B N-major */
		{GEMM_SIZES(384, 1024, 65536) GEMM_PLAIN, 1, 2},    /* 3 rows of 8: columns */
		{GEMM_SIZES(128, 4096, 65536) GEMM_PLAIN, 1, 2},    /* one row */
		{GEMM_SIZES(384, 1000, 65536) GEMM_PLAIN, 1, 2},    /* 3 rows of 8, the last column ragged */
		{GEMM_SIZES(384, 896, 65536) GEMM_PLAIN, 1, 1},     /* 3 rows of 7 */
		{GEMM_SIZES(256, 512, 65536) GEMM_PLAIN, 2, 1},     /* sixteenths of 64: more than quarters */
		{GEMM_SIZES(256, 1024, 32768) GEMM_PLAIN, 2, 1},    /* eighths of 64 */
		{GEMM_SIZES(512, 1024, 16384) GEMM_PLAIN, 1, 1},    /* quarters of 64 */
		{GEMM_SIZES(128, 1280, 32768) GEMM_PLAIN, 1, 1},    /* one row, eighths of 64: not for A */
		{GEMM_SIZES(384, 512, 32768) GEMM_PLAIN, 1, 1},     /* 3 rows, 11 parts of 46 */
		{GEMM_SIZES(384, 512, 65536) GEMM_PLAIN, 1, 1},     /* 12 tiles: 11 parts of 93 */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN, 1, 1},   /* 128 x 256 */
	};
	static const struct {
		const char *spec;
		bool rows;   /* MatmulPlan.raster_rows */
	} order[] = {
		{GEMM_SIZES(1024, 256, 8192) GEMM_PLAIN, true},
		{GEMM_SIZES(512, 384, 8192) GEMM_PLAIN, true},       /* 4 rows of 6 tiles */
		{GEMM_SIZES(256, 768, 8192) GEMM_PLAIN, false},      /* wider than tall */
		{GEMM_SIZES(512, 512, 16384) GEMM_PLAIN, false},     /* square */
		{GEMM_SIZES(2048, 256, 8192) GEMM_PLAIN, false},     /* quarters of 128 x 128 */
		{GEMM_SIZES(1024, 256, 2048) GEMM_PLAIN, false},     /* no stream-K */
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k = lowered(&t, i, cases[i].spec);

		if (k->mm.ksize.sk_parts != cases[i].parts || (k->mm.ksize.sk_slot > 0) != (cases[i].parts > 0) ||
		    (cases[i].parts && (k->tile_rows != 128 || k->tile_cols != cases[i].bn || k->mm.ksize.splits != 1 ||
		                        k->mm.cluster[1] != 1 || k->mm.pingpong || k->mm.swap_ab)))
			fail_msg("case %d: parts %d, slot %d, tile %d x %d, splits %d, cluster %d x %d; expected parts %d at "
			         "128 x %d", i, k->mm.ksize.sk_parts, k->mm.ksize.sk_slot, k->tile_rows, k->tile_cols,
			         k->mm.ksize.splits, k->mm.cluster[0], k->mm.cluster[1], cases[i].parts, cases[i].bn);
		/* the rules cut whole fractions of a tile (fraction_plan); the hint, runs across tiles */
		assert_int_equal(k->mm.ksum == KSUM_SK_SCATTER, cases[i].parts > 0 && !strstr(cases[i].spec, "stream_k: true"));
		if (cases[i].parts) {   /* the plan cuts runs of 1 / parts of a tile */
			char want[64];
			Buf b;

			buf_init(&b, t->c.arena);
			kernel_print(&b, k);
			snprintf(want, sizeof want, k->mm.ksum == KSUM_SK_SCATTER ? "min(min(%d, " : "(ktiles / %d)", cases[i].parts);
			if (!strstr(buf_str(&b), want))
				fail_msg("case %d: no %s in\n%s", i, want, buf_str(&b));
		}
		teardown((void **)&t);
	}
	for (i = 0; i < (int)countof(pairs); i++) {
		Fixture *t;
		Kernel *k = lowered(&t, i, pairs[i].spec);

		if (k->mm.ksum != KSUM_SK_SCATTER || k->mm.cluster[0] != pairs[i].cm || k->mm.cluster[1] != pairs[i].cn)
			fail_msg("pair %d: cluster %d x %d, in fractions %d; expected %d x %d", i, k->mm.cluster[0],
			         k->mm.cluster[1], k->mm.ksum == KSUM_SK_SCATTER, pairs[i].cm, pairs[i].cn);
		teardown((void **)&t);
	}
	for (i = 0; i < (int)countof(order); i++) {   /* the narrow rule's tiles along rows where A is the larger */
		Fixture *t;
		Kernel *k = lowered(&t, i, order[i].spec);

		assert_int_equal(k->mm.raster_rows, order[i].rows);
		teardown((void **)&t);
	}
	(void)state;
#undef WGRAD
}

/*
 * The epilogue names an element's place (top, left, wt, row, col) only
 * where an input is read by it: NVRTC compiles each form below without a
 * warning (it warned of variables never used in every matmul kernel).
 * Cooperative and ping-pong subtiles, swapped tiles; no input, a bias row,
 * a column scale, a full residual, a scalar.
 */
static void
epilogue_no_warnings(void **state)
{
	static const char *const specs[] = {
		HEAD GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n",
		gemm_bias_gelu,
		gemm_bias_gelu_pp,
		HEAD GEMM_IN "  s: {dtype: f32, shape: [M, 1]}\nops:\n" GEMM_MM "  - {out: o, op: mul, in: [y, s]}\n"
		"outputs:\n  o: {dtype: bf16}\n",
		HEAD GEMM_IN "  r: {dtype: bf16, shape: [M, N]}\nops:\n" GEMM_MM "  - {out: o, op: add, in: [y, r]}\n"
		"outputs:\n  o: {dtype: bf16}\nschedule: {consumers: pingpong, tile: [128, 192, 64]}\n",
		HEAD GEMM_IN "  a: {dtype: f32, shape: []}\nops:\n" GEMM_MM "  - {out: o, op: mul, in: [y, a]}\n"
		"outputs:\n  o: {dtype: f32}\n",
		"fusion: gemm\nsizes: {M: 16, N: 4096, K: 4096}\n" GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n",
		"fusion: gemm\nsizes: {M: 16, N: 4096, K: 4096}\n" GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		"  - {out: o, op: add, in: [y, b]}\noutputs:\n  o: {dtype: bf16}\n",
	};
	RtOptions o = {NULL, 1, NULL, false, NULL};   /* no cache: the log is NVRTC's own */
	Fixture *t;
	Cubin bin;
	int i;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	for (i = 0; i < (int)countof(specs); i++) {
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!kernel_of(t, specs[i]))
			fail_msg("spec %d: %s", i, t->msg);
		assert_int_equal(rt_compile(&t->c, &o, "gemm", cuda_of(t), NULL, 0, &bin), WSF_OK);
		if (strstr(bin.log, "warning"))
			fail_msg("spec %d: NVRTC warned:\n%s", i, bin.log);
		teardown((void **)&t);
	}
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lowered_gemm, setup, teardown),
		cmocka_unit_test_setup_teardown(stage_division_in_32_bits, setup, teardown),
		cmocka_unit_test(stage_division_values),
		cmocka_unit_test(producer_elect_nest),
		cmocka_unit_test(staging_ring),
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
		cmocka_unit_test(cluster_pairs),
		cmocka_unit_test(tall_pingpong),
		cmocka_unit_test(residual_prefetch),
		cmocka_unit_test(swapped),
		cmocka_unit_test(split_k),
		cmocka_unit_test(split_in_clusters),
		cmocka_unit_test_setup_teardown(stream_k, setup, teardown),
		cmocka_unit_test(long_k_default),
		cmocka_unit_test_setup_teardown(stream_k_fractions, setup, teardown),
		cmocka_unit_test_setup_teardown(stream_k_cluster_fractions, setup, teardown),
		cmocka_unit_test(tune_candidates),
		cmocka_unit_test(cooperative_256),
		cmocka_unit_test(accumulate_output),
		cmocka_unit_test(refused_forms),
		cmocka_unit_test(ragged_inside),
		cmocka_unit_test(misaligned_rows),
		cmocka_unit_test(staging_fits),
		cmocka_unit_test(narrow_subtiles),
		cmocka_unit_test(row_inputs_staged),
		cmocka_unit_test(full_inputs_carried),
		cmocka_unit_test(cluster_grid),
		cmocka_unit_test(epilogue_no_warnings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
