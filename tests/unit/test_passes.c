/*
 * test_passes.c: unit tests of the kernel passes on hand-built kernel IR.
 *
 * Each test builds a small loop nest the way any lowering might (a loop, an
 * elected block of TMA loads, a compute that reads what they load), runs
 * circular_buffer, warp_specialize and sync directly, and asserts the
 * structure: which loop got buffered, S and P, the barriers, and how many
 * waits, releases and barriers there are and where.  The last tests lower
 * real specs and check the views and errors of the pointwise lowering; the
 * row reduction's are test_lower_reduction.c's (helpers: passes_helpers.h).
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

/* Appends to BLOCK: if elect() { load every buffer at (var, 0) }; compute reading them. */
static Stmt *
add_load_and_compute(Comp *c, Kernel *k, Stmt *block, int var)
{
	Stmt *issue = st_if(c, ex_leaf(c, EX_ELECT)), *compute = st_new(c, ST_COMPUTE);
	int b;

	st_append(c, block, issue);
	for (b = 1; b < k->nbuf; b++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);

		ld->u.tma.buf = b;
		ld->u.tma.param = k->buf[b].param;
		ld->u.tma.slot = ex_int(c, 0);
		ld->u.tma.row = ex_var(c, var);
		ld->u.tma.col = ex_int(c, 0);
		st_append(c, issue, ld);
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = b;
		compute->reads[compute->nreads - 1].slot = ex_int(c, 0);
	}
	compute->u.compute.row = ex_var(c, var);
	compute->u.compute.col = ex_int(c, 0);
	st_append(c, block, compute);
	return compute;
}

/* for i in [0, n): { loads; compute } at the top of the kernel body. */
static Stmt *
single_loop(Comp *c, Kernel *k)
{
	int n = kernel_add_param(c, k, PK_SIZE, "n");
	Stmt *loop;

	k->param[n].var = kernel_add_var(c, k, "n");
	loop = st_loop(c, kernel_add_var(c, k, "i"), ex_int(c, 0), ex_var(c, k->param[n].var), LOOP_TILE);
	st_append(c, k->body, loop);
	add_load_and_compute(c, k, loop, loop->u.loop.var);
	return loop;
}

/* for o in [0, 4): for j in [0, n): { loads; compute } */
static Stmt *
nested_loops(Comp *c, Kernel *k, Stmt **inner)
{
	int n = kernel_add_param(c, k, PK_SIZE, "n");
	Stmt *outer;

	k->param[n].var = kernel_add_var(c, k, "n");
	outer = st_loop(c, kernel_add_var(c, k, "o"), ex_int(c, 0), ex_int(c, 4), LOOP_SERIAL);
	*inner = st_loop(c, kernel_add_var(c, k, "j"), ex_int(c, 0), ex_var(c, k->param[n].var), LOOP_SERIAL);
	st_append(c, k->body, outer);
	st_append(c, outer, *inner);
	add_load_and_compute(c, k, *inner, (*inner)->u.loop.var);
	return outer;
}

/* A plain loop becomes prologue, main and epilogue with S = 8, P = 7 stages of 3 x 8 KiB. */
static void
cb_plain_single_loop(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 3, false);
	Stmt *loop = single_loop(c, k), *pro, *main_, *epi, *issue;
	int b;

	run_pass(t, pass_circular_buffer, "circular_buffer");
	/* body: init-if, syncthreads, prologue, main, epilogue */
	assert_int_equal(k->body->nbody, 5);
	assert_int_equal(k->body->body[0]->kind, ST_IF);
	assert_int_equal(k->body->body[0]->body[0]->kind, ST_MBAR_INIT);
	assert_int_equal(k->body->body[1]->kind, ST_SYNC);
	pro = k->body->body[2];
	main_ = k->body->body[3];
	epi = k->body->body[4];
	assert_ptr_equal(main_, loop);
	assert_int_equal(pro->u.loop.cb->part, CB_PROLOGUE);
	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_int_equal(epi->u.loop.cb->part, CB_EPILOGUE);
	assert_int_equal(main_->u.loop.cb->stages, 8);
	assert_int_equal(main_->u.loop.cb->prefetch, 7);
	assert_int_equal(main_->u.loop.cb->stage_bytes, 3 * 8192);
	for (b = 1; b < k->nbuf; b++) {
		assert_int_equal(k->buf[b].stages, 8);
		assert_int_equal(k->buf[b].full_bar, main_->u.loop.cb->full_bar);
	}
	assert_int_equal(k->bar[main_->u.loop.cb->full_bar].count, 8);
	assert_int_equal(k->bar[main_->u.loop.cb->full_bar].arrivals, 1);
	assert_int_equal(main_->u.loop.cb->empty_bar, 0);
	/* main issues loads P ahead: one expect_tx, then three loads into slot (i + 7) % 8 */
	issue = main_->body[0];
	assert_int_equal(issue->kind, ST_IF);
	assert_int_equal(issue->nbody, 4);
	assert_int_equal(issue->body[0]->kind, ST_EXPECT_TX);
	assert_int_equal(issue->body[0]->u.mbar.bytes, 3 * 8192);
	assert_string_equal(expr(t, issue->body[1]->u.tma.slot), "((i + 7) % 8)");
	assert_string_equal(expr(t, issue->body[1]->u.tma.row), "(i + 7)");
	assert_string_equal(expr(t, main_->u.loop.hi), "(n - 7)");
	assert_string_equal(expr(t, epi->u.loop.lo), "max((n - 7), 0)");
	assert_string_equal(expr(t, pro->u.loop.hi), "min(7, n)");
	/* the epilogue and the rest of main load nothing; the prologue only loads */
	assert_int_equal(census(epi).kind[ST_TMA_LOAD], 0);
	assert_int_equal(census(pro).kind[ST_COMPUTE], 0);
	assert_int_equal(census(pro).kind[ST_TMA_LOAD], 3);
	assert_int_equal(census(main_).kind[ST_TMA_LOAD], 3);
	assert_string_equal(expr(t, main_->body[1]->reads[0].slot), "(i % 8)");
}

/* The plain form buffers the innermost loop of a nest; the outer one is left alone. */
static void
cb_plain_picks_innermost(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 1, false);
	Stmt *inner, *outer = nested_loops(c, k, &inner);

	run_pass(t, pass_circular_buffer, "circular_buffer");
	assert_null(outer->u.loop.cb);
	assert_non_null(inner->u.loop.cb);
	assert_int_equal(inner->u.loop.cb->part, CB_MAIN);
	/* prologue, main, epilogue now sit inside the outer loop */
	assert_int_equal(outer->nbody, 3);
	assert_int_equal(outer->body[0]->u.loop.cb->part, CB_PROLOGUE);
	assert_int_equal(outer->body[2]->u.loop.cb->part, CB_EPILOGUE);
	/* barriers are initialised once, before the outer loop */
	assert_int_equal(census(outer).kind[ST_MBAR_INIT], 0);
	assert_int_equal(census(k->body).kind[ST_MBAR_INIT], 1);
	/* and their phases run on across the outer loop: the stage counter continues it */
	assert_string_equal(expr(t, inner->u.loop.lin), "((o * n) + j)");
	assert_string_equal(expr(t, inner->body[0]->body[1]->u.tma.slot), "(((o * n) + (j + 7)) % 8)");
	assert_string_equal(expr(t, outer->body[0]->body[0]->body[1]->u.tma.slot), "(((o * n) + p) % 8)");
	run_pass(t, pass_warp_specialize, "warp_specialize");
	run_pass(t, pass_sync, "sync");
	assert_string_equal(expr(t, inner->body[find(inner, ST_MBAR_WAIT)]->u.mbar.parity), "((((o * n) + j) / 8) & 1)");
	/*
	 * The next outer iteration's prologue refills the stages the epilogue
	 * read: one CTA barrier right after the epilogue (none inside it).  A
	 * pipeline at the top level gets none (sync_plain).
	 */
	assert_int_equal(outer->nbody, 4);
	assert_int_equal(outer->body[2]->u.loop.cb->part, CB_EPILOGUE);
	assert_int_equal(census(outer->body[2]).kind[ST_SYNC], 0);
	assert_int_equal(outer->body[3]->kind, ST_SYNC);
	assert_int_equal(outer->body[3]->u.sync.id, 0);
}

/* Warp-specialized: the outermost loop, and the stage counter runs on across the nest. */
static void
cb_ws_picks_outermost(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 1, true);
	Stmt *inner, *outer = nested_loops(c, k, &inner);
	Stmt *ld;

	run_pass(t, pass_circular_buffer, "circular_buffer");
	assert_non_null(outer->u.loop.cb);
	assert_null(inner->u.loop.cb);
	assert_int_equal(k->bar[outer->u.loop.cb->empty_bar].arrivals, 256);
	assert_string_equal(expr(t, inner->u.loop.lin), "((o * n) + j)");
	ld = inner->body[0]->body[1];
	assert_int_equal(ld->kind, ST_TMA_LOAD);
	assert_string_equal(expr(t, ld->u.tma.slot), "(((o * n) + j) % 8)");
	/* no prologue or epilogue: the roles split comes next */
	assert_int_equal(k->body->nbody, 3);
}

/* schedule: stages is obeyed; more than fit is an error at the spec position. */
static void
cb_stages_hint(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 3, false);
	Stmt *loop = single_loop(c, k);

	k->stages_hint = 3;
	run_pass(t, pass_circular_buffer, "circular_buffer");
	assert_int_equal(loop->u.loop.cb->stages, 3);
	assert_int_equal(loop->u.loop.cb->prefetch, 2);
	assert_int_equal(kernel_smem_bytes(k), 3 * 3 * 8192 + 3 * 8);
}

static void
cb_stages_hint_too_big(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 3, false);

	single_loop(c, k);
	k->stages_hint = 9;
	k->stages_pos = (Pos){"test.yaml", 12, 11};
	assert_int_equal(pass_circular_buffer(c), -1);
	assert_non_null(strstr(t->msg, "test.yaml:12:11: error: schedule stages 9"));
}

/* S from the budget: 64 KiB for 24 KiB stages fits 2. */
static void
cb_stages_from_budget(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 3, false);
	Stmt *loop = single_loop(c, k);

	k->smem_budget = 64 * 1024;
	run_pass(t, pass_circular_buffer, "circular_buffer");
	assert_int_equal(loop->u.loop.cb->stages, 2);
	assert_true(kernel_smem_bytes(k) <= k->smem_budget);
}

/*
 * A 32-byte bias copy is padded to 128 bytes (TMA's alignment), and stages
 * are counted padded: 576 bytes hold 4 of them with their mbarriers, where
 * unpadded bytes would have counted 12 (and placed every copy but the
 * first off its alignment).
 */
static void
cb_stages_count_padded_copies(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 0, false);
	int p = kernel_add_param(c, k, PK_TMAP, "bias");
	int b = kernel_add_buf(c, k, "bias_tile", BUF_TILE, DT_BF16, 1, 16);
	Stmt *loop;
	CopyLayout l;
	int s;

	k->param[p].dtype = DT_BF16;
	k->buf[b].param = p;
	loop = single_loop(c, k);
	k->smem_budget = 4 * (128 + 16);
	run_pass(t, pass_circular_buffer, "circular_buffer");
	l = kbuf_copy(&k->buf[b]);
	assert_int_equal(l.bytes, 32);
	assert_int_equal(l.align, 128);
	assert_int_equal(l.stride, 128);
	assert_int_equal(loop->u.loop.cb->stages, 4);
	assert_int_equal(k->buf[b].stages, 4);
	assert_true(kernel_smem_bytes(k) <= k->smem_budget);
	for (s = 0; s < k->buf[b].stages; s++)
		assert_int_equal((kernel_buf_offset(k, b) + s * l.stride) % l.align, 0);
}

/* A swizzled buffer starts on 1024 bytes after a narrow one, and its copies lie 1024-multiples apart. */
static void
kernel_layout_aligns_swizzled_copies(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 0, false);
	int narrow = kernel_add_buf(c, k, "narrow", BUF_TILE, DT_BF16, 1, 16);
	int w = kernel_add_buf(c, k, "w", BUF_TILE, DT_BF16, 8, 40);

	k->buf[narrow].stages = 3;
	k->buf[w].stages = 2;
	k->buf[w].swizzle = 128;
	kernel_add_bar(c, k, "full", 2, 1);
	assert_int_equal(kbuf_copy(&k->buf[narrow]).stride, 128);
	assert_int_equal(kbuf_copy(&k->buf[w]).bytes, 640);
	assert_int_equal(kbuf_copy(&k->buf[w]).align, 1024);
	assert_int_equal(kbuf_copy(&k->buf[w]).stride, 1024);
	assert_int_equal(kernel_buf_offset(k, narrow), 0);
	assert_int_equal(kernel_buf_offset(k, w), 1024);       /* 3 x 128 bytes, then up to 1024 */
	assert_int_equal(kernel_buf_offset(k, k->nbuf), 3072); /* the mbarriers */
	assert_int_equal(kernel_smem_bytes(k), 3072 + 16);
}

/* One wait per barrier (not per tensor) before the first reader; main releases, epilogue not. */
static void
sync_plain(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 3, false);
	Stmt *main_ = single_loop(c, k), *epi;
	int w, r;

	run_pass(t, pass_circular_buffer, "circular_buffer");
	run_pass(t, pass_warp_specialize, "warp_specialize");
	run_pass(t, pass_sync, "sync");
	epi = k->body->body[4];
	assert_int_equal(census(main_).kind[ST_MBAR_WAIT], 1);
	assert_int_equal(census(main_).kind[ST_SYNC], 1);
	w = find(main_, ST_MBAR_WAIT);
	r = find(main_, ST_COMPUTE);
	assert_int_equal(w + 1, r);
	assert_int_equal(main_->body[r + 1]->kind, ST_SYNC);
	assert_int_equal(main_->body[r + 1]->u.sync.id, 0);
	assert_string_equal(expr(t, main_->body[w]->u.mbar.barslot), "(i % 8)");
	assert_string_equal(expr(t, main_->body[w]->u.mbar.parity), "((i / 8) & 1)");
	assert_int_equal(census(epi).kind[ST_MBAR_WAIT], 1);
	assert_int_equal(census(epi).kind[ST_SYNC], 0);
	assert_int_equal(census(k->body->body[2]).kind[ST_MBAR_WAIT], 0);
	/* in the whole kernel: 2 waits, 1 release barrier + 1 after barrier init, no arrives */
	assert_int_equal(census(k->body).kind[ST_MBAR_WAIT], 2);
	assert_int_equal(census(k->body).kind[ST_SYNC], 2);
	assert_int_equal(census(k->body).kind[ST_MBAR_ARRIVE], 0);
}

/* Warp-specialized: roles, producer waits on empty, consumers pre-arrive and release. */
static void
sync_warp_specialized(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 2, true);
	Stmt *roles, *producer, *consumer, *pre, *issue, *tail;
	int w, r;

	single_loop(c, k);
	tail = st_new(c, ST_SYNC);  /* something after the loop: it must move to the consumers */
	st_append(c, k->body, tail);
	run_pass(t, pass_circular_buffer, "circular_buffer");
	run_pass(t, pass_warp_specialize, "warp_specialize");
	roles = k->body->body[2];
	assert_int_equal(roles->kind, ST_ROLES);
	assert_int_equal(roles->nbody, 2);
	/* the role table: a producer warp after 256 consumer threads, whose barriers are named barrier 1 */
	assert_int_equal(k->nrole, 3);
	assert_int_equal(roles->body[0]->kind, ST_ROLE);
	assert_int_equal(k->role[roles->body[0]->u.role.id].kind, ROLE_PRODUCER);
	assert_int_equal(k->role[roles->body[0]->u.role.id].first, 256);
	assert_int_equal(k->role[roles->body[0]->u.role.id].threads, 32);
	assert_int_equal(k->role[roles->body[0]->u.role.id].bar_id, 0);
	assert_int_equal(k->role[roles->body[1]->u.role.id].kind, ROLE_CONSUMER);
	assert_int_equal(k->role[roles->body[1]->u.role.id].first, 0);
	assert_int_equal(k->role[roles->body[1]->u.role.id].threads, 256);
	assert_int_equal(k->role[roles->body[1]->u.role.id].bar_id, 1);
	assert_int_equal(k->body->nbody, 3);
	producer = roles->body[0]->body[0];
	assert_int_equal(producer->u.loop.cb->part, CB_PRODUCER);
	assert_int_equal(census(producer).kind[ST_COMPUTE], 0);
	assert_int_equal(census(producer).kind[ST_TMA_LOAD], 2);
	consumer = roles->body[1]->body[0];
	assert_int_equal(consumer->u.loop.cb->part, CB_CONSUMER);
	assert_int_equal(census(consumer).kind[ST_TMA_LOAD], 0);
	assert_ptr_equal(roles->body[1]->body[1], tail);

	run_pass(t, pass_sync, "sync");
	issue = producer->body[0];
	assert_int_equal(issue->body[0]->kind, ST_MBAR_WAIT);
	assert_int_equal(issue->body[0]->u.mbar.bar, producer->u.loop.cb->empty_bar);
	assert_int_equal(issue->body[1]->kind, ST_EXPECT_TX);
	pre = roles->body[1]->body[0];
	assert_int_equal(pre->kind, ST_LOOP);
	assert_string_equal(expr(t, pre->u.loop.hi), "8");
	assert_int_equal(pre->body[0]->kind, ST_MBAR_ARRIVE);
	consumer = roles->body[1]->body[1];
	w = find(consumer, ST_MBAR_WAIT);
	r = find(consumer, ST_COMPUTE);
	assert_int_equal(w + 1, r);
	assert_int_equal(consumer->body[r + 1]->kind, ST_MBAR_ARRIVE);
	assert_string_equal(expr(t, consumer->body[r + 1]->u.mbar.barslot), "(i % 8)");
	assert_int_equal(census(consumer).kind[ST_SYNC], 0);
	/* the barrier after the loop became a named barrier sized to the consumers */
	assert_int_equal(tail->u.sync.id, 1);
	assert_int_equal(tail->u.sync.threads, 256);
}

/* A nest under warp specialization: the wait and the release sit in the inner loop. */
static void
sync_ws_nested(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 1, true);
	Stmt *inner, *roles, *consumer, *cinner;

	nested_loops(c, k, &inner);
	run_pass(t, pass_circular_buffer, "circular_buffer");
	run_pass(t, pass_warp_specialize, "warp_specialize");
	run_pass(t, pass_sync, "sync");
	roles = k->body->body[2];
	consumer = roles->body[1]->body[1];
	cinner = consumer->body[0];
	assert_int_equal(cinner->kind, ST_LOOP);
	assert_int_equal(cinner->body[0]->kind, ST_MBAR_WAIT);
	assert_string_equal(expr(t, cinner->body[0]->u.mbar.parity), "((((o * n) + j) / 8) & 1)");
	assert_int_equal(cinner->body[2]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(census(consumer).kind[ST_MBAR_WAIT], 1);
	assert_int_equal(census(roles->body[0]).kind[ST_MBAR_WAIT], 1);
}

/* The verifier refuses a CTA-wide barrier inside the roles (it would deadlock). */
static void
verify_rejects_syncthreads_in_roles(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 1, false);
	Stmt *roles = st_new(c, ST_ROLES), *branch = st_new(c, ST_ROLE);

	branch->u.role.id = kernel_add_role(c, k, ROLE_CONSUMER, 0, 256, 1);
	st_append(c, roles, branch);
	st_append(c, branch, st_new(c, ST_SYNC));
	st_append(c, k->body, roles);
	assert_int_equal(kernel_verify(c, k, "test"), -1);
	assert_non_null(strstr(t->msg, "__syncthreads inside warp-specialized roles"));
}

/*
 * A load into a piece of a copy keeps TMA's alignment: chunks of 1024 bf16
 * (2 KiB) do, an offset of 8 elements (16 bytes) into a tensor-map copy
 * does not (a bulk copy needs only 16).
 */
static void
verify_rejects_misaligned_offset(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = new_kernel(c, 1, false);
	Stmt *loop = single_loop(c, k), *ld = loop->body[0]->body[0];

	ld->u.tma.off = ex_bin(c, EX_MUL, ex_var(c, loop->u.loop.var), ex_int(c, 1024));
	assert_int_equal(kernel_verify(c, k, "test"), 0);
	ld->u.tma.off = ex_bin(c, EX_ADD, ld->u.tma.off, ex_int(c, 8));
	assert_int_equal(kernel_verify(c, k, "test"), -1);
	assert_non_null(strstr(t->msg, "an offset into its copy that may break its alignment"));
	k->param[ld->u.tma.param].kind = PK_PTR;
	t->c.nerrors = 0;
	assert_int_equal(kernel_verify(c, k, "test"), 0);
}

/* From a spec: every view the pointwise lowering knows. */
static void
lower_views(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: v\n"
		"sizes: {M: 64, N: 512}\n"
		"inputs:\n"
		"  x: {dtype: bf16, shape: [M, N]}\n"
		"  b: {dtype: bf16, shape: [N]}\n"
		"  s: {dtype: f32, shape: [M, 1]}\n"
		"  k: {dtype: f32, shape: [1]}\n"
		"ops:\n"
		"  - {out: y, op: add, in: [x, b]}\n"
		"  - {out: z, op: mul, in: [y, s]}\n"
		"  - {out: o, op: mul, in: [z, k]}\n"
		"outputs:\n"
		"  o: {dtype: bf16}\n";
	Kernel *k = lower_spec(t, spec);

	assert_false(kernel_pw(k)->flat);
	assert_int_equal(k->param[1].kind, PK_TMAP);
	assert_int_equal(k->param[1].view, VIEW_FULL);
	assert_int_equal(k->param[2].view, VIEW_ROW);
	assert_int_equal(k->param[2].box[0], 1);
	assert_int_equal(k->param[3].kind, PK_PTR);
	assert_int_equal(k->param[3].view, VIEW_COL);
	assert_int_equal(k->param[4].view, VIEW_SCALAR);
	assert_int_equal(k->param[5].kind, PK_PTR);  /* one CTA a tile stores a 2-byte output from registers */
	assert_false(k->tma_store);
	/* by default one CTA a tile: one stage, no prologue or epilogue copies of the loop */
	assert_false(k->persistent);
	assert_int_equal(census(k->body).kind[ST_TMA_LOAD], 2);
	assert_int_equal(census(k->body).kind[ST_TMA_STORE], 0);
}

#define STORE_SPEC(sched) \
	"fusion: st\nsizes: {N: 4096}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n" \
	"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: bf16}\n" sched

/*
 * The store kind by default: TMA stores, but for one CTA a tile writing
 * only 2-byte outputs, none accumulating (TMA adds them), which stores
 * from registers; `store:` says which.
 */
static void
lower_store_kind_default(void **state)
{
	Fixture *t = *state;
#define F32_OUT(sched) \
	"fusion: st\nsizes: {N: 4096}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n" \
	"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: f32}\n" sched
	static const struct { const char *spec; bool tma; } cases[] = {
		{STORE_SPEC(""), false},
		{STORE_SPEC("schedule: {store: tma}\n"), true},
		{STORE_SPEC("schedule: {persistent: true}\n"), true},
		{STORE_SPEC("schedule: {stages: 2}\n"), true},
		{STORE_SPEC("schedule: {store: vector}\n"), false},
		{F32_OUT(""), true},
		{F32_OUT("schedule: {persistent: true}\n"), true},
		{F32_OUT("schedule: {store: vector}\n"), false},
		{F32_OUT("schedule: {store: tma}\n"), true},
		{"fusion: st\nsizes: {N: 4096}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n"
		 "ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: bf16, accumulate: true}\n", true},
	};
#undef F32_OUT
	int i;

	for (i = 0; i < countof(cases); i++) {
		Kernel *k;

		reset_comp(t);
		k = lower_spec(t, cases[i].spec);
		if (k->tma_store != cases[i].tma)
			fail_msg("case %d: tma_store %d, expected %d", i, k->tma_store, cases[i].tma);
		assert_int_equal(census(k->body).kind[ST_TMA_STORE] > 0, cases[i].tma);
	}
}

/*
 * The tile's rows fill a stage target: 16 KiB for a flat kernel (a tile is
 * one contiguous run), 32 KiB when a row input makes the tiles pieces of
 * rows; `tile:` overrides both.
 */
static void
lower_pointwise_tile_rows(void **state)
{
	Fixture *t = *state;
#define PW(dt, b_shape, sched) \
	"fusion: pw\nsizes: {M: 4096, N: 4096}\ninputs:\n  a: {dtype: " dt ", shape: [M, N]}\n" \
	"  b: {dtype: " dt ", shape: " b_shape "}\n" \
	"ops:\n  - {out: o, op: add, in: [a, b]}\noutputs:\n  o: {dtype: " dt "}\n" sched
#define PW3 \
	"fusion: pw\nsizes: {M: 4096, N: 4096}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n" \
	"  b: {dtype: bf16, shape: [M, N]}\n  c: {dtype: bf16, shape: [M, N]}\n" \
	"ops:\n  - {out: t, op: mul, in: [a, b]}\n  - {out: o, op: add, in: [t, c]}\noutputs:\n  o: {dtype: bf16}\n"
	static const struct { const char *spec; bool flat; int rows, cols; } cases[] = {
		{PW("bf16", "[M, N]", ""), true, 16, 256},   /* 16 KiB / (256 x 4 bytes of inputs) */
		{PW("f32", "[M, N]", ""), true, 8, 256},
		{PW3, true, 8, 256},                         /* 6 bytes: 10.7 rows, to a power of two */
		{PW("bf16", "[N]", ""), false, 32, 256},     /* 32 KiB / (256 x 4 bytes) */
		{PW("f32", "[N]", ""), false, 16, 256},
		{PW("bf16", "[M, N]", "schedule: {tile: [4, 128]}\n"), true, 4, 128},
	};
#undef PW3
#undef PW
	int i;

	for (i = 0; i < countof(cases); i++) {
		Kernel *k;

		reset_comp(t);
		k = lower_spec(t, cases[i].spec);
		if (kernel_pw(k)->flat != cases[i].flat || k->tile_rows != cases[i].rows || k->tile_cols != cases[i].cols)
			fail_msg("case %d: flat %d, tile [%d, %d]; expected %d, [%d, %d]", i, kernel_pw(k)->flat, k->tile_rows,
			         k->tile_cols, cases[i].flat, cases[i].rows, cases[i].cols);
	}
}

/* Does some statement under S bulk-copy (a load or store on a pointer param) param P? */
static int
bulk_copies(const Kernel *k, const Stmt *s, int p)
{
	int i, n = 0;

	if (!s)
		return 0;
	if ((s->kind == ST_TMA_LOAD || s->kind == ST_TMA_STORE) && s->u.tma.param == p && k->param[p].kind == PK_PTR)
		n++;
	for (i = 0; i < s->nbody; i++)
		n += bulk_copies(k, s->body[i], p);
	return n + bulk_copies(k, st_else(s), p);
}

/*
 * `tile: [1, cols]` wider than a TMA box, for a kernel with a row input: the
 * full inputs (and TMA-stored outputs) move by 1-D bulk copies of one row's
 * run, the row input is read in compute (no stage), the pipeline forms keep
 * working; wider runs, taller ones, and flat kernels are refused at the hint.
 */
static void
lower_pointwise_run_tile(void **state)
{
	Fixture *t = *state;
#define RUN(odt, sched) \
	"fusion: run\nsizes: {M: 64, N: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n" \
	"  b: {dtype: bf16, shape: [N]}\n  s: {dtype: f32, shape: [M, 1]}\n" \
	"ops:\n  - {out: h, op: add, in: [x, b]}\n  - {out: o, op: mul, in: [h, s]}\n" \
	"outputs:\n  o: {dtype: " odt "}\nschedule: {" sched "}\n"
	static const struct { const char *spec; bool store; } cases[] = {
		{RUN("bf16", "tile: [1, 2048]"), false},   /* one CTA a tile, 2-byte output: from registers */
		{RUN("f32", "tile: [1, 1024]"), true},     /* f32 output: a staging copy and a bulk store */
		{RUN("bf16", "tile: [1, 512], persistent: true"), true},
		{RUN("f32", "tile: [1, 4096], warp_specialize: true, stages: 3"), true},
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Kernel *k;
		int b;

		reset_comp(t);
		k = lower_spec(t, cases[i].spec);
		assert_int_equal(k->tile_rows, 1);
		assert_int_equal(k->param[1].kind, PK_PTR);             /* x: bulk-loaded */
		assert_int_equal(k->param[2].kind, PK_PTR);             /* b: read in compute */
		assert_int_equal(k->param[2].view, VIEW_ROW);
		assert_int_equal(k->param[4].kind, PK_PTR);             /* o */
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].param == 2)
				fail_msg("case %d: the row input has a buffer", i);
		assert_true(bulk_copies(k, k->body, 1) >= 1);
		assert_int_equal(bulk_copies(k, k->body, 2), 0);
		assert_int_equal(census(k->body).kind[ST_TMA_STORE] > 0, cases[i].store);
		if (cases[i].store)
			assert_true(bulk_copies(k, k->body, 4) >= 1);
	}
	static const struct { const char *spec, *msg; } refused[] = {
		{RUN("bf16", "tile: [2, 512]"), "is not supported"},
		{RUN("bf16", "tile: [1, 32768]"), "is not supported"},
		{RUN("bf16", "tile: [1, 1000]"), "is not supported"},
		{STORE_SPEC("schedule: {tile: [1, 512]}\n"), "is not supported"},   /* flat: contiguous anyway */
		{RUN("bf16", "tile: [8]"), "2 extents; saw 1"},
		{RUN("bf16", "tile: [8, 256, 128]"), "2 extents; saw 3"},
	};
#undef RUN
	for (i = 0; i < countof(refused); i++) {
		reset_comp(t);
		lower_fails(t, refused[i].spec);
		if (!strstr(t->msg, refused[i].msg))
			fail_msg("refused case %d: '%s' lacks '%s'", i, t->msg, refused[i].msg);
	}
}

/*
 * TMA stores, plain pipeline: in main the stage release doubles as the
 * staging barrier (fence and read-wait N - 2 before it); the epilogue, which
 * releases nothing, gets fence + barrier before its store, and the read-wait
 * N - 2 rides on that barrier too; one commit per store block; one full wait
 * at the end.
 */
static void
sync_tma_store_plain(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, STORE_SPEC("schedule: {stages: 2}\n"));
	Stmt *main_ = k->body->body[6], *epi = k->body->body[7], *end = k->body->body[k->body->nbody - 1];
	int r, f;

	assert_int_equal(main_->u.loop.cb->part, CB_MAIN);
	assert_int_equal(epi->u.loop.cb->part, CB_EPILOGUE);
	r = find(main_, ST_COMPUTE);
	assert_int_equal(main_->body[r + 1]->kind, ST_FENCE_PROXY_ASYNC);
	assert_int_equal(main_->body[r + 2]->kind, ST_IF);
	assert_int_equal(main_->body[r + 2]->body[0]->kind, ST_BULK_WAIT);
	assert_true(main_->body[r + 2]->body[0]->u.group.read);          /* .read */
	assert_int_equal(main_->body[r + 2]->body[0]->u.group.pending, 0);   /* two staging copies, this tile not yet stored */
	assert_int_equal(main_->body[r + 3]->kind, ST_SYNC);
	assert_int_equal(main_->body[r + 4]->body[0]->kind, ST_TMA_STORE);
	assert_int_equal(main_->body[r + 4]->body[1]->kind, ST_BULK_COMMIT);
	assert_int_equal(census(main_).kind[ST_SYNC], 1);
	/*
	 * the epilogue has no release barrier: fence + barrier before its store,
	 * and the read-wait for the next tile's copy rides on that barrier
	 * (wait.read 0 there: the copy written next was stored two tiles back)
	 */
	r = find(epi, ST_COMPUTE);
	assert_int_equal(epi->body[r - 1]->kind, ST_MBAR_WAIT);
	f = find(epi, ST_FENCE_PROXY_ASYNC);
	assert_int_equal(f, r + 1);
	assert_int_equal(epi->body[f + 1]->kind, ST_IF);
	assert_int_equal(epi->body[f + 1]->body[0]->kind, ST_BULK_WAIT);
	assert_true(epi->body[f + 1]->body[0]->u.group.read);
	assert_int_equal(epi->body[f + 1]->body[0]->u.group.pending, 0);
	assert_int_equal(epi->body[f + 2]->kind, ST_SYNC);
	assert_int_equal(epi->body[f + 3]->body[0]->kind, ST_TMA_STORE);
	assert_int_equal(census(epi).kind[ST_SYNC], 1);
	assert_int_equal(census(k->body).kind[ST_BULK_COMMIT], 2);
	assert_int_equal(end->kind, ST_IF);
	assert_int_equal(end->body[0]->kind, ST_BULK_WAIT);
	assert_false(end->body[0]->u.group.read);                         /* full wait: the data must land */
	assert_int_equal(end->body[0]->u.group.pending, 0);
}

/* TMA stores under warp specialization: named barriers, the final wait in the consumer branch. */
static void
sync_tma_store_ws(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, STORE_SPEC("schedule: {warp_specialize: true}\n"));
	Stmt *roles = k->body->body[k->body->nbody - 1], *cons;
	Census n;
	int i;

	assert_int_equal(roles->kind, ST_ROLES);
	cons = roles->body[1];
	n = census(cons);
	assert_int_equal(n.kind[ST_BULK_COMMIT], 1);
	assert_int_equal(n.kind[ST_FENCE_PROXY_ASYNC], 1);
	/* one barrier a tile: the store's, which the read-wait for the copy written next rides on */
	assert_int_equal(n.kind[ST_SYNC], 1);
	for (i = 0; i < cons->body[1]->nbody; i++)
		if (cons->body[1]->body[i]->kind == ST_SYNC) {
			assert_int_equal(cons->body[1]->body[i]->u.sync.id, 1);
			assert_int_equal(cons->body[1]->body[i - 1]->body[0]->kind, ST_BULK_WAIT);
			assert_int_equal(cons->body[1]->body[i - 1]->body[0]->u.group.pending, 0);
			assert_int_equal(cons->body[1]->body[i - 2]->kind, ST_FENCE_PROXY_ASYNC);
			assert_int_equal(cons->body[1]->body[i + 1]->body[0]->kind, ST_TMA_STORE);
		}
	assert_int_equal(cons->body[cons->nbody - 1]->body[0]->kind, ST_BULK_WAIT);
	assert_int_equal(census(roles->body[0]).kind[ST_BULK_COMMIT], 0);
}

/* One CTA a tile: one staging copy, so its store must be read before the next tile writes it. */
static void
sync_tma_store_one_copy(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, STORE_SPEC("schedule: {persistent: false, store: tma}\n"));
	Stmt *main_ = k->body->body[5];
	int r;

	assert_false(k->persistent);
	assert_int_equal(main_->u.loop.cb->stages, 1);
	r = find(main_, ST_COMPUTE);
	assert_int_equal(main_->body[r - 2]->body[0]->kind, ST_BULK_WAIT);
	assert_int_equal(main_->body[r - 2]->body[0]->u.group.pending, 0);
	assert_int_equal(main_->body[r - 1]->kind, ST_SYNC);
	assert_int_equal(main_->body[r + 1]->kind, ST_FENCE_PROXY_ASYNC);
	assert_int_equal(main_->body[r + 2]->kind, ST_SYNC);      /* the stage release is the RAW barrier too */
	assert_int_equal(main_->body[r + 3]->body[0]->kind, ST_TMA_STORE);
	assert_int_equal(census(main_).kind[ST_SYNC], 2);
}

/* Pointwise kernels: clusters and signals are not built yet, and consumers is a matmul hint. */
static void
lower_pointwise_refuses_hints(void **state)
{
	Fixture *t = *state;
#define PW_SPEC(hint) \
	"fusion: p\n" \
	"sizes: {N: 1024}\n" \
	"inputs:\n" \
	"  a: {dtype: bf16, shape: [N]}\n" \
	"ops:\n" \
	"  - {out: o, op: relu, in: [a]}\n" \
	"outputs:\n" \
	"  o: {dtype: bf16}\n" \
	"schedule: {" hint "}\n"
	static const struct { const char *spec, *msg; bool later; } bad[] = {
		{PW_SPEC("cluster: [2, 1]"), "9:21: error: 'cluster' is not implemented for pointwise kernels yet",
		 true},
		{PW_SPEC("signal: per_tile, store: vector"), "9:37: error: 'signal: per_tile' with 'store: vector' is "
		 "not implemented yet", true},
		{PW_SPEC("consumers: cooperative"), "9:23: error: 'consumers' applies to matmul kernels", false},
	};
#undef PW_SPEC
	int i;

	for (i = 0; i < countof(bad); i++) {
		reset_comp(t);
		lower_fails(t, bad[i].spec);
		if (!strstr(t->msg, bad[i].msg))
			fail_msg("expected '%s' in: %s", bad[i].msg, t->msg);
		/* "not implemented" (exit 6) only for what a later version may build */
		assert_int_equal(t->c.status == WSF_ERR_UNSUPPORTED, bad[i].later);
	}
}

/* The signal in BLOCK's elect branches (depth first), or NULL; *WAIT the statement before it. */
static Stmt *
signal_in(Stmt *s, Stmt **wait)
{
	Stmt *r;
	int i;

	for (i = 0; s && i < s->nbody; i++) {
		if (s->body[i]->kind == ST_SIGNAL) {
			*wait = i ? s->body[i - 1] : NULL;
			return s->body[i];
		}
		if (s->body[i]->kind != ST_LOOP && (r = signal_in(s->body[i], wait)))
			return r;
	}
	return NULL;
}

/*
 * signal: per_tile on a plain pipelined pointwise kernel (persistent, 3
 * stages): circular_buffer splits the tile loop into main and epilogue
 * loops, and each signals the tile before after a bulk.wait_group 1
 * without .read (this tile's one store group stays in flight; in the
 * epilogue loop's first iteration the tile before is the main loop's
 * last, older still); after them the last tile, after bulk.wait_group 0.
 */
static void
lower_pointwise_signal(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: p\nsizes: {M: 1000, N: 1032}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: bf16}\n"
		"schedule: {signal: per_tile, persistent: true, stages: 3}\n";
	Kernel *k = lower_spec(t, spec);
	Stmt *w, *sig;
	int i, loops = 0;

	assert_true(k->signal && k->tma_store);
	for (i = 0; i < k->body->nbody; i++) {
		Stmt *x = k->body->body[i];

		if (x->kind != ST_LOOP || !x->u.loop.cb || (x->u.loop.cb->part != CB_MAIN && x->u.loop.cb->part != CB_EPILOGUE))
			continue;
		loops++;
		assert_non_null(sig = signal_in(x, &w));
		assert_true(sig->u.signal.before);   /* the tile before */
		assert_int_equal(w->kind, ST_BULK_WAIT);
		assert_false(w->u.group.read);
		assert_int_equal(w->u.group.pending, 1);
	}
	assert_int_equal(loops, 2);
	assert_non_null(sig = signal_in(k->body->body[k->body->nbody - 1], &w));
	assert_false(sig->u.signal.before);
	assert_int_equal(w->kind, ST_BULK_WAIT);
	assert_false(w->u.group.read);
	assert_int_equal(w->u.group.pending, 0);
}

/*
 * From a spec: a bias row of 16 bf16 in the persistent pipeline at 4
 * stages.  Each copy is 32 bytes and padded to 128; every copy of every
 * buffer starts on its alignment.
 */
static void
lower_narrow_copies(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: narrow\nsizes: {M: 1048576}\ninputs:\n  a: {dtype: bf16, shape: [M, 16]}\n"
		"  c: {dtype: bf16, shape: [16]}\nops:\n  - {out: o, op: add, in: [a, c]}\n"
		"outputs:\n  o: {dtype: bf16}\nschedule: {persistent: true, stages: 4}\n";
	Kernel *k = lower_spec(t, spec);
	int b, s, bias = 0;

	for (b = 1; b < k->nbuf; b++) {
		CopyLayout l = kbuf_copy(&k->buf[b]);

		if (strcmp(k->buf[b].name, "tile_c") == 0)
			bias = b;
		assert_true(l.stride >= l.bytes);
		assert_int_equal(l.stride % l.align, 0);
		for (s = 0; s < k->buf[b].stages; s++)
			assert_int_equal((kernel_buf_offset(k, b) + s * l.stride) % l.align, 0);
	}
	assert_true(bias > 0);
	assert_int_equal(k->buf[bias].stages, 4);
	assert_int_equal(kbuf_copy(&k->buf[bias]).bytes, 32);
	assert_int_equal(kbuf_copy(&k->buf[bias]).stride, 128);
}

/* A pointwise spec of one f32 input [M, N] and NOUT outputs, each the input times a number. */
static const char *
many_outputs(Comp *c, int nout)
{
	Buf b;
	int i;

	buf_init(&b, c->arena);
	buf_puts(&b, "fusion: many\nsizes: {M: 4096, N: 4096}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\nops:\n");
	for (i = 1; i <= nout; i++)
		buf_printf(&b, "  - {out: o%d, op: mul, in: [x, %d]}\n", i, i);
	buf_puts(&b, "outputs:\n");
	for (i = 1; i <= nout; i++)
		buf_printf(&b, "  o%d: {dtype: f32}\n", i);
	return buf_str(&b);
}

/*
 * The compiler's tile shrinks until its staging copies fit: 14 f32 outputs
 * of 16 x 256 would need 224 KiB, so the tile is 8 rows.  With more outputs
 * than any tile holds, the error says so at the fusion.
 */
static void
lower_pointwise_tile_fits_shared_memory(void **state)
{
	Fixture *t = *state;
	Kernel *k = lower_spec(t, many_outputs(&t->c, 14));

	assert_true(kernel_pw(k)->flat);
	assert_int_equal(k->tile_rows, 8);
	assert_int_equal(k->tile_cols, 256);
	assert_true(kernel_smem_bytes(k) <= k->smem_budget);
	reset_comp(t);
	lower_fails(t, many_outputs(&t->c, 1700));
	assert_non_null(strstr(t->msg, "test.yaml:1:9: error: the 1 input and 1700 outputs of 'many' need"));
	assert_non_null(strstr(t->msg, "even in [1, 8] tiles"));
}

/* A broadcast along a middle dim is read at its row's offset (test_bcast.c has the forms). */
static void
lower_middle_broadcast(void **state)
{
	Fixture *t = *state;
	static const char spec[] =
		"fusion: v\n"
		"sizes: {B: 2, S: 8, N: 64}\n"
		"inputs:\n"
		"  x: {dtype: f32, shape: [B, S, N]}\n"
		"  y: {dtype: f32, shape: [B, 1, N]}\n"
		"ops:\n"
		"  - {out: o, op: add, in: [x, y]}\n"
		"outputs:\n"
		"  o: {dtype: f32}\n";
	Kernel *k = lower_spec(t, spec);

	assert_false(kernel_pw(k)->flat);
	assert_int_equal(k->param[2].view, VIEW_ROW_AT);
	assert_string_equal(expr(t, k->param[2].at), "((row / dim_S) * cols)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(cb_plain_single_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_plain_picks_innermost, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_ws_picks_outermost, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_stages_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_stages_hint_too_big, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_stages_from_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(cb_stages_count_padded_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(kernel_layout_aligns_swizzled_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_narrow_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_tile_fits_shared_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_warp_specialized, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_ws_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(verify_rejects_syncthreads_in_roles, setup, teardown),
		cmocka_unit_test_setup_teardown(verify_rejects_misaligned_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_views, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_middle_broadcast, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_tma_store_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_tma_store_ws, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_tma_store_one_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_store_kind_default, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_refuses_hints, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_tile_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(lower_pointwise_run_tile, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
