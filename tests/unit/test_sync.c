/*
 * test_sync.c: the sync analysis on hand-built kernel IR with mma.
 *
 * The three cases of nvFuser PR #3843 (minimal wgmma RAW sync): two
 * independent mmas with their own epilogues need two waits; two mmas sharing
 * one mainloop share one commit group and one wait; mma -> add -> relu needs
 * one wait, before the add.  Then a matmul-shaped nest as circular_buffer
 * and warp_specialize leave it (a producer over the merged tile x k loop, a
 * consumer tile loop holding the k loop and a TMA-store epilogue), with every
 * wait, commit, release and barrier asserted by position.
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

/* A kernel with operand buffers a [128, 64] and b [256, 64] (bf16) of STAGES copies. */
static Kernel *
mma_kernel(Comp *c, int stages)
{
	Fusion *f = fusion_new(c);
	Kernel *k;
	int pa, pb, a, b;

	f->name = "mm";
	k = kernel_new(c, f);
	k->consumer_threads = 256;
	k->threads = 256;
	k->smem_budget = 227 * 1024;
	pa = kernel_add_param(c, k, PK_TMAP, "A");
	pb = kernel_add_param(c, k, PK_TMAP, "B");
	a = kernel_add_buf(c, k, "a_tile", BUF_TILE, DT_BF16, 128, 64);
	b = kernel_add_buf(c, k, "b_tile", BUF_TILE, DT_BF16, 256, 64);
	k->buf[a].param = pa;
	k->buf[b].param = pb;
	k->buf[a].stages = k->buf[b].stages = stages;
	return k;
}

static MmaShape shape = {128, 256, 64, true, true};

/* mma ACC += a[SLOT] x b[SLOT] */
static Stmt *
mma(Comp *c, int acc, Expr *slot)
{
	Stmt *s = st_new(c, ST_MMA);
	Access *x;

	x = VEC_PUSH(c->arena, s->reads, s->nreads, s->capreads);
	x->buf = 1;
	x->slot = slot;
	x = VEC_PUSH(c->arena, s->reads, s->nreads, s->capreads);
	x->buf = 2;
	x->slot = slot;
	VEC_PUSH(c->arena, s->writes, s->nwrites, s->capwrites)->acc = acc;
	s->u.mma.shape = &shape;
	return s;
}

/* A compute that reads accumulator ACC (0: none) and stores to global memory. */
static Stmt *
epilogue(Comp *c, int acc)
{
	Stmt *s = st_new(c, ST_COMPUTE);

	if (acc)
		VEC_PUSH(c->arena, s->reads, s->nreads, s->capreads)->acc = acc;
	s->u.compute.row = ex_int(c, 0);
	s->u.compute.col = ex_int(c, 0);
	return s;
}

/* for kk in [0, 4): (operands loaded once, outside any pipeline) */
static Stmt *
k_loop(Comp *c, Kernel *k, Stmt *block)
{
	Stmt *l = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), ex_int(c, 4), LOOP_SERIAL);

	st_append(c, block, l);
	return l;
}

static int
index_of(const Stmt *block, StmtKind kind, int nth)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == kind && nth-- == 0)
			return i;
	return -1;
}

static void
run_sync(Fixture *t)
{
	if (pass_sync(&t->c) || kernel_verify(&t->c, t->c.kernel, "sync"))
		fail_msg("%s", t->msg);
}

/* PR #3843 case 1: two independent mmas, each with its own epilogue: two waits. */
static void
sync_two_mma_two_epilogues(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 1);
	int acc1 = kernel_add_acc(c, k, "acc1", DT_F32, 128, 256), acc2 = kernel_add_acc(c, k, "acc2", DT_F32, 128, 256);
	Stmt *l1, *l2, *body = k->body;
	Census n;
	int w;

	l1 = k_loop(c, k, body);
	st_append(c, l1, mma(c, acc1, ex_int(c, 0)));
	st_append(c, body, epilogue(c, acc1));
	l2 = k_loop(c, k, body);
	st_append(c, l2, mma(c, acc2, ex_int(c, 0)));
	st_append(c, body, epilogue(c, acc2));
	run_sync(t);

	n = census(body);
	assert_int_equal(n.kind[ST_MMA_WAIT], 2);
	assert_int_equal(n.kind[ST_MMA_COMMIT], 2);  /* one a mainloop body */
	assert_int_equal(n.kind[ST_MMA_FENCE], 2);
	/* each wait is wait_group 0, right before its epilogue */
	for (int e = 0; e < 2; e++) {
		int cpt = index_of(body, ST_COMPUTE, e);

		assert_int_equal(body->body[cpt - 1]->kind, ST_MMA_WAIT);
		assert_int_equal(body->body[cpt - 1]->u.group.pending, 0);
	}
	/* a mainloop body: fence, mma, commit; no wait inside */
	assert_int_equal(l1->body[0]->kind, ST_MMA_FENCE);
	assert_int_equal(l1->body[1]->kind, ST_MMA);
	assert_int_equal(l1->body[2]->kind, ST_MMA_COMMIT);
	assert_int_equal(census(l1).kind[ST_MMA_WAIT], 0);
	w = index_of(body, ST_MMA_WAIT, 0);
	assert_true(w > index_of(body, ST_LOOP, 0) && w < index_of(body, ST_LOOP, 1));
}

/* PR #3843 case 2: two mmas sharing one mainloop: one commit group, one wait. */
static void
sync_two_mma_one_mainloop(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 1);
	int acc1 = kernel_add_acc(c, k, "acc1", DT_F32, 128, 256), acc2 = kernel_add_acc(c, k, "acc2", DT_F32, 128, 256);
	Stmt *l, *body = k->body;
	int first;

	l = k_loop(c, k, body);
	st_append(c, l, mma(c, acc1, ex_int(c, 0)));
	st_append(c, l, mma(c, acc2, ex_int(c, 0)));
	st_append(c, body, epilogue(c, acc1));
	st_append(c, body, epilogue(c, acc2));
	run_sync(t);

	assert_int_equal(census(body).kind[ST_MMA_WAIT], 1);
	assert_int_equal(census(l).kind[ST_MMA_COMMIT], 1);
	assert_int_equal(census(l).kind[ST_MMA_FENCE], 1);  /* one chain, one fence */
	assert_int_equal(l->body[l->nbody - 1]->kind, ST_MMA_COMMIT);
	first = index_of(body, ST_COMPUTE, 0);
	assert_int_equal(body->body[first - 1]->kind, ST_MMA_WAIT);
	assert_int_equal(body->body[first - 1]->u.group.pending, 0);
	assert_int_equal(body->body[first + 1]->kind, ST_COMPUTE);  /* the second epilogue waits for nothing */
}

/* PR #3843 case 3: mma -> add -> relu: one wait, before the add. */
static void
sync_mma_add_relu(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 1);
	int acc = kernel_add_acc(c, k, "acc", DT_F32, 128, 256);
	Stmt *l, *add, *relu, *body = k->body;
	int a;

	l = k_loop(c, k, body);
	st_append(c, l, mma(c, acc, ex_int(c, 0)));
	add = epilogue(c, acc);
	add->comment = "add";
	st_append(c, body, add);
	relu = epilogue(c, 0);  /* reads the add's registers */
	relu->comment = "relu";
	st_append(c, body, relu);
	run_sync(t);

	assert_int_equal(census(body).kind[ST_MMA_WAIT], 1);
	a = index_of(body, ST_COMPUTE, 0);
	assert_ptr_equal(body->body[a], add);
	assert_int_equal(body->body[a - 1]->kind, ST_MMA_WAIT);
	assert_ptr_equal(body->body[a + 1], relu);
}

/*
 * The matmul-shaped nest, as circular_buffer and warp_specialize leave it
 * (S = 4 stages, P = 2: one mma group in flight), with a TMA-store epilogue
 * through two staging copies.
 */
static void
sync_matmul_nest(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 4);
	int acc = kernel_add_acc(c, k, "acc", DT_F32, 128, 256);
	int ntile = kernel_add_var(c, k, "my_tiles"), kt = kernel_add_var(c, k, "ktiles");
	int out = kernel_add_param(c, k, PK_TMAP, "out");
	int stage = kernel_add_buf(c, k, "out_stage", BUF_STAGING, DT_BF16, 128, 256);
	int full = kernel_add_bar(c, k, "full", 4, 1), empty = kernel_add_bar(c, k, "empty", 4, 256);
	CbInfo *cb = arena_alloc(c->arena, sizeof *cb), *pcb = arena_alloc(c->arena, sizeof *pcb);
	Stmt *roles = st_new(c, ST_ROLES), *prod = st_new(c, ST_ROLE), *cons = st_new(c, ST_ROLE);
	Stmt *pl, *issue, *tx, *ctile, *kl, *m, *cpt, *st_if_, *store, *x;
	Expr *lin, *slot;
	Census n;
	int b, i, w;

	k->buf[stage].param = out;
	k->buf[stage].stages = 2;
	k->buf[1].full_bar = k->buf[2].full_bar = full;
	k->warp_specialize = true;
	k->threads = 384;
	/* mbarrier init and the sizes are outside the roles; they have no async effects */
	k->param[kernel_add_param(c, k, PK_SIZE, "tiles")].var = ntile;
	k->param[kernel_add_param(c, k, PK_SIZE, "kt")].var = kt;
	*cb = (CbInfo){.stages = 4, .prefetch = 2, .full_bar = full, .empty_bar = empty, .stage_bytes = 48 * 1024,
	               .part = CB_CONSUMER, .warp_specialized = true};
	*pcb = *cb;
	pcb->part = CB_PRODUCER;
	*VEC_PUSH(c->arena, k->pipe, k->npipe, k->cappipe) = cb;

	/* producer: the merged (tile x k) loop: expect_tx, two loads on full[q % 4] */
	prod->u.role.id = kernel_add_role(c, k, ROLE_PRODUCER, 256, 128, 1);
	cons->u.role.id = kernel_add_role(c, k, ROLE_CONSUMER, 0, 256, 1);
	st_append(c, roles, prod);
	st_append(c, roles, cons);
	st_append(c, k->body, roles);
	pl = st_loop(c, kernel_add_var(c, k, "q"), ex_int(c, 0),
	             ex_bin(c, EX_MUL, ex_var(c, ntile), ex_var(c, kt)), LOOP_SERIAL);
	pl->u.loop.cb = pcb;
	st_append(c, prod, pl);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	st_append(c, pl, issue);
	slot = ex_bin(c, EX_MOD, ex_var(c, pl->u.loop.var), ex_int(c, 4));
	tx = st_new(c, ST_EXPECT_TX);
	tx->u.mbar.bar = full;
	tx->u.mbar.barslot = slot;
	tx->u.mbar.bytes = 48 * 1024;
	tx->u.mbar.lin = ex_var(c, pl->u.loop.var);
	st_append(c, issue, tx);
	for (b = 1; b <= 2; b++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);

		ld->u.tma.buf = b;
		ld->u.tma.param = k->buf[b].param;
		ld->u.tma.slot = ld->u.tma.barslot = slot;
		ld->u.tma.bar = full;
		ld->u.tma.row = ex_int(c, 0);
		ld->u.tma.col = ex_int(c, 0);
		st_append(c, issue, ld);
	}

	/* consumers: tile { k loop of mma; epilogue to a staging copy; TMA store } */
	ctile = st_loop(c, kernel_add_var(c, k, "t"), ex_int(c, 0), ex_var(c, ntile), LOOP_TILE);
	ctile->u.loop.cb = cb;
	ctile->u.loop.lin = ex_var(c, ctile->u.loop.var);
	st_append(c, cons, ctile);
	kl = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), ex_var(c, kt), LOOP_SERIAL);
	lin = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_var(c, ctile->u.loop.var), ex_var(c, kt)), ex_var(c, kl->u.loop.var));
	kl->u.loop.lin = lin;
	st_append(c, ctile, kl);
	m = mma(c, acc, ex_bin(c, EX_MOD, lin, ex_int(c, 4)));
	m->u.mma.zero_if = ex_bin(c, EX_EQ, ex_var(c, kl->u.loop.var), ex_int(c, 0));
	st_append(c, kl, m);
	cpt = epilogue(c, acc);
	VEC_PUSH(c->arena, cpt->writes, cpt->nwrites, cpt->capwrites)->buf = stage;
	cpt->writes[0].slot = ex_bin(c, EX_MOD, ex_var(c, ctile->u.loop.var), ex_int(c, 2));
	st_append(c, ctile, cpt);
	st_if_ = st_if(c, ex_leaf(c, EX_ELECT));
	store = st_new(c, ST_TMA_STORE);
	store->u.tma.buf = stage;
	store->u.tma.param = out;
	store->u.tma.slot = cpt->writes[0].slot;
	store->u.tma.row = ex_int(c, 0);
	store->u.tma.col = ex_int(c, 0);
	st_append(c, st_if_, store);
	st_append(c, ctile, st_if_);
	if (kernel_verify(c, k, "hand-built"))
		fail_msg("%s", t->msg);
	run_sync(t);

	/* producer: waits for the consumers' release of slot q % 4 before arming it */
	assert_int_equal(issue->body[0]->kind, ST_MBAR_WAIT);
	assert_int_equal(issue->body[0]->u.mbar.bar, empty);
	assert_string_equal(expr(t, issue->body[0]->u.mbar.barslot), "(q % 4)");
	assert_string_equal(expr(t, issue->body[0]->u.mbar.parity), "((q / 4) & 1)");
	assert_int_equal(issue->body[1]->kind, ST_EXPECT_TX);
	assert_int_equal(census(prod).kind[ST_MBAR_WAIT], 1);

	/* consumers pre-arrive P + 1 = 3 empties before the tile loop */
	assert_int_equal(cons->body[0]->kind, ST_LOOP);
	assert_string_equal(expr(t, cons->body[0]->u.loop.hi), "3");
	assert_int_equal(cons->body[0]->body[0]->kind, ST_MBAR_ARRIVE);
	assert_ptr_equal(cons->body[1], ctile);

	/* k loop: wait full, fence, mma, commit, wait_group 1 (S - 1 - P), release (lin + 3) % 4 */
	assert_int_equal(kl->nbody, 6);
	assert_int_equal(kl->body[0]->kind, ST_MBAR_WAIT);
	assert_int_equal(kl->body[0]->u.mbar.bar, full);
	assert_string_equal(expr(t, kl->body[0]->u.mbar.barslot), "(((t * ktiles) + kk) % 4)");
	assert_string_equal(expr(t, kl->body[0]->u.mbar.parity), "((((t * ktiles) + kk) / 4) & 1)");
	assert_int_equal(kl->body[1]->kind, ST_MMA_FENCE);
	assert_ptr_equal(kl->body[2], m);
	assert_int_equal(kl->body[3]->kind, ST_MMA_COMMIT);
	assert_int_equal(kl->body[4]->kind, ST_MMA_WAIT);
	assert_int_equal(kl->body[4]->u.group.pending, 1);
	assert_int_equal(kl->body[5]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(kl->body[5]->u.mbar.bar, empty);
	assert_string_equal(expr(t, kl->body[5]->u.mbar.barslot), "((((t * ktiles) + kk) + 3) % 4)");

	/* the tile: one wait_group 0 before the epilogue, no wait of the stages outside the k loop */
	i = 0;
	assert_ptr_equal(ctile->body[i++], kl);
	assert_int_equal(ctile->body[i]->kind, ST_MMA_WAIT);
	assert_int_equal(ctile->body[i++]->u.group.pending, 0);
	assert_ptr_equal(ctile->body[i++], cpt);
	/* store: fence and a named barrier; the read-wait for the copy written next rides on it */
	assert_int_equal(ctile->body[i++]->kind, ST_FENCE_PROXY_ASYNC);
	x = ctile->body[i++];
	assert_int_equal(x->kind, ST_IF);
	assert_int_equal(x->body[0]->kind, ST_BULK_WAIT);
	assert_true(x->body[0]->u.group.read);
	assert_int_equal(x->body[0]->u.group.pending, 0);
	x = ctile->body[i++];
	assert_int_equal(x->kind, ST_SYNC);
	assert_int_equal(x->u.sync.id, 1);          /* the consumers' named barrier */
	assert_int_equal(x->u.sync.threads, 256);
	assert_ptr_equal(ctile->body[i++], st_if_);
	assert_int_equal(st_if_->body[1]->kind, ST_BULK_COMMIT);
	assert_int_equal(ctile->nbody, i);

	/* the whole consumer branch: one full wait at its end, nothing else waits on stores */
	n = census(cons);
	assert_int_equal(n.kind[ST_MMA_WAIT], 2);
	assert_int_equal(n.kind[ST_MMA_COMMIT], 1);
	assert_int_equal(n.kind[ST_MBAR_WAIT], 1);
	assert_int_equal(n.kind[ST_SYNC], 1);
	assert_int_equal(n.kind[ST_BULK_WAIT], 2);
	w = cons->nbody - 1;
	assert_int_equal(cons->body[w]->kind, ST_IF);
	assert_int_equal(cons->body[w]->body[0]->kind, ST_BULK_WAIT);
	assert_false(cons->body[w]->body[0]->u.group.read);
	assert_int_equal(census(prod).kind[ST_BULK_WAIT], 0);
}

/*
 * The same nest before the passes, as a matmul lowering leaves it: tile
 * loop { k loop { elect: load a, b at (t, kk); mma }; epilogue compute reads
 * the accumulator and writes a staging copy; elect: TMA store }.  Through
 * circular_buffer, warp_specialize and sync: the tile loop is buffered with
 * P = S - 2 (an mma reads the stages), the producer is one merged loop over
 * tiles x k-steps with nothing but its loads, the consumers keep
 * tile { k loop; epilogue } with setmaxnreg on both sides.
 */
/* The matmul-shaped nest before the passes (with a per-tile bias [1, 256] input when BIAS). */
typedef struct Nest {
	Kernel *k;
	Stmt *tl, *kl, *m, *cpt, *sto;
	int stage, bias;
} Nest;

static Nest
matmul_nest(Fixture *t, bool bias)
{
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 1);
	int acc = kernel_add_acc(c, k, "acc", DT_F32, 128, 256);
	int ntile = kernel_add_var(c, k, "my_tiles"), kt = kernel_add_var(c, k, "ktiles");
	int out = kernel_add_param(c, k, PK_TMAP, "out");
	Nest n = {.k = k};
	Stmt *issue, *store;
	int b;

	n.stage = kernel_add_buf(c, k, "out_stage", BUF_STAGING, DT_BF16, 128, 64);
	k->buf[n.stage].param = out;
	k->buf[n.stage].stages = 2;
	k->warp_specialize = true;
	k->persistent = true;
	k->threads = 384;
	k->producer_regs = 40;
	k->consumer_regs = 232;
	k->param[kernel_add_param(c, k, PK_SIZE, "tiles")].var = ntile;
	k->param[kernel_add_param(c, k, PK_SIZE, "kt")].var = kt;

	n.tl = st_loop(c, kernel_add_var(c, k, "t"), ex_int(c, 0), ex_var(c, ntile), LOOP_TILE);
	st_append(c, k->body, n.tl);
	if (bias) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);

		n.bias = kernel_add_buf(c, k, "bias_tile", BUF_TILE, DT_BF16, 1, 256);
		k->buf[n.bias].param = kernel_add_param(c, k, PK_TMAP, "bias");
		issue = st_if(c, ex_leaf(c, EX_ELECT));
		ld->u.tma.buf = n.bias;
		ld->u.tma.param = k->buf[n.bias].param;
		ld->u.tma.slot = ex_int(c, 0);
		ld->u.tma.row = ex_int(c, 0);
		ld->u.tma.col = ex_bin(c, EX_MUL, ex_var(c, n.tl->u.loop.var), ex_int(c, 256));
		st_append(c, issue, ld);
		st_append(c, n.tl, issue);
	}
	n.kl = st_loop(c, kernel_add_var(c, k, "kk"), ex_int(c, 0), ex_var(c, kt), LOOP_SERIAL);
	st_append(c, n.tl, n.kl);
	issue = st_if(c, ex_leaf(c, EX_ELECT));
	st_append(c, n.kl, issue);
	for (b = 1; b <= 2; b++) {
		Stmt *ld = st_new(c, ST_TMA_LOAD);

		ld->u.tma.buf = b;
		ld->u.tma.param = k->buf[b].param;
		ld->u.tma.slot = ex_int(c, 0);
		ld->u.tma.row = ex_bin(c, EX_MUL, ex_var(c, n.tl->u.loop.var), ex_int(c, 128));
		ld->u.tma.col = ex_bin(c, EX_MUL, ex_var(c, n.kl->u.loop.var), ex_int(c, 64));
		st_append(c, issue, ld);
	}
	n.m = mma(c, acc, ex_int(c, 0));
	n.m->u.mma.zero_if = ex_bin(c, EX_EQ, ex_var(c, n.kl->u.loop.var), ex_int(c, 0));
	st_append(c, n.kl, n.m);
	n.cpt = epilogue(c, acc);
	if (bias) {
		Access *x = VEC_PUSH(c->arena, n.cpt->reads, n.cpt->nreads, n.cpt->capreads);

		x->buf = n.bias;
		x->slot = ex_int(c, 0);
	}
	VEC_PUSH(c->arena, n.cpt->writes, n.cpt->nwrites, n.cpt->capwrites)->buf = n.stage;
	n.cpt->writes[0].slot = ex_bin(c, EX_MOD, ex_var(c, n.tl->u.loop.var), ex_int(c, 2));
	st_append(c, n.tl, n.cpt);
	n.sto = st_if(c, ex_leaf(c, EX_ELECT));
	store = st_new(c, ST_TMA_STORE);
	store->u.tma.buf = n.stage;
	store->u.tma.param = out;
	store->u.tma.slot = n.cpt->writes[0].slot;
	store->u.tma.row = ex_int(c, 0);
	store->u.tma.col = ex_int(c, 0);
	st_append(c, n.sto, store);
	st_append(c, n.tl, n.sto);
	return n;
}

static void
run_passes(Fixture *t)
{
	Comp *c = &t->c;

	if (pass_circular_buffer(c) || kernel_verify(c, c->kernel, "circular_buffer"))
		fail_msg("%s", t->msg);
	if (pass_warp_specialize(c) || kernel_verify(c, c->kernel, "warp_specialize"))
		fail_msg("%s", t->msg);
	if (pass_sync(c) || kernel_verify(c, c->kernel, "sync"))
		fail_msg("%s", t->msg);
	if (getenv("WSF_TEST_PRINT")) {
		Buf pb;

		buf_init(&pb, c->arena);
		kernel_print(&pb, c->kernel);
		fputs(buf_str(&pb), stderr);
	}
}

static void
passes_matmul_nest(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Nest nest = matmul_nest(t, false);
	Kernel *k = nest.k;
	Stmt *tl = nest.tl, *kl = nest.kl, *m = nest.m, *cpt = nest.cpt;
	Stmt *roles, *prod, *cons, *pl, *ckl, *ctl, *x;
	Census n;
	int S, i, stage = nest.stage;

	run_passes(t);
	assert_non_null(tl->u.loop.cb);
	S = tl->u.loop.cb->stages;
	assert_true(S >= 2);
	assert_int_equal(tl->u.loop.cb->prefetch, S - 2);
	assert_int_equal(k->buf[1].stages, S);
	assert_int_equal(k->buf[stage].stages, 2);      /* the staging copies are not the pipeline's */
	assert_string_equal(expr(t, kl->u.loop.lin), "((t * ktiles) + kk)");

	roles = k->body->body[k->body->nbody - 1];
	assert_int_equal(roles->kind, ST_ROLES);
	prod = roles->body[0];
	cons = roles->body[1];
	assert_int_equal(k->role[prod->u.role.id].kind, ROLE_PRODUCER);
	assert_int_equal(k->role[prod->u.role.id].threads, 128);
	assert_int_equal(k->role[cons->u.role.id].threads, 256);

	/* producer: setmaxnreg.dec 40, then one merged loop of loads, slot q % S */
	assert_int_equal(prod->body[0]->kind, ST_SETMAXNREG);
	assert_false(prod->body[0]->u.maxnreg.inc);
	assert_int_equal(prod->body[0]->u.maxnreg.regs, 40);
	pl = prod->body[1];
	assert_int_equal(prod->nbody, 2);
	assert_int_equal(pl->kind, ST_LOOP);
	assert_int_equal(pl->u.loop.cb->part, CB_PRODUCER);
	assert_string_equal(expr(t, pl->u.loop.hi), "(my_tiles * ktiles)");
	n = census(pl);
	assert_int_equal(n.kind[ST_LOOP], 1);           /* merged: itself, no inner loop */
	assert_int_equal(n.kind[ST_MMA], 0);            /* only the loads and their address math */
	assert_int_equal(n.kind[ST_COMPUTE], 0);
	assert_int_equal(n.kind[ST_TMA_STORE], 0);
	assert_int_equal(n.kind[ST_TMA_LOAD], 2);
	assert_int_equal(n.kind[ST_EXPECT_TX], 1);
	assert_int_equal(n.kind[ST_MBAR_WAIT], 1);
	x = pl->body[0];
	assert_int_equal(x->kind, ST_IF);
	assert_int_equal(x->body[0]->kind, ST_MBAR_WAIT);
	assert_string_equal(expr(t, x->body[0]->u.mbar.barslot), arena_printf(c->arena, "(q %% %d)", S));
	assert_string_equal(expr(t, x->body[1]->u.mbar.barslot), arena_printf(c->arena, "(q %% %d)", S));
	assert_string_equal(expr(t, x->body[2]->u.tma.row), "((q / ktiles) * 128)");
	assert_string_equal(expr(t, x->body[2]->u.tma.col), "((q % ktiles) * 64)");

	/* consumers: setmaxnreg.inc 232, P + 1 pre-arrives, tile { k loop; epilogue } */
	assert_int_equal(cons->body[0]->kind, ST_SETMAXNREG);
	assert_true(cons->body[0]->u.maxnreg.inc);
	assert_int_equal(cons->body[0]->u.maxnreg.regs, 232);
	assert_int_equal(cons->body[1]->kind, ST_LOOP);
	assert_string_equal(expr(t, cons->body[1]->u.loop.hi), arena_printf(c->arena, "%d", S - 1));
	ctl = cons->body[2];
	assert_ptr_equal(ctl, tl);
	assert_int_equal(ctl->u.loop.cb->part, CB_CONSUMER);
	ckl = ctl->body[0];
	assert_ptr_equal(ckl, kl);
	assert_int_equal(census(ckl).kind[ST_TMA_LOAD], 0);
	assert_int_equal(census(ckl).kind[ST_IF], 0);  /* the load block left with its loads */
	i = 0;
	assert_int_equal(ckl->body[i++]->kind, ST_MBAR_WAIT);
	assert_int_equal(ckl->body[i++]->kind, ST_MMA_FENCE);
	assert_ptr_equal(ckl->body[i++], m);
	assert_int_equal(ckl->body[i++]->kind, ST_MMA_COMMIT);
	assert_int_equal(ckl->body[i]->kind, ST_MMA_WAIT);
	assert_int_equal(ckl->body[i++]->u.group.pending, 1);
	assert_int_equal(ckl->body[i]->kind, ST_MBAR_ARRIVE);
	assert_string_equal(expr(t, ckl->body[i++]->u.mbar.barslot),
	                    arena_printf(c->arena, "((((t * ktiles) + kk) + %d) %% %d)", S - 1, S));
	assert_int_equal(ckl->nbody, i);
	assert_int_equal(ctl->body[1]->kind, ST_MMA_WAIT);
	assert_int_equal(ctl->body[1]->u.group.pending, 0);
	assert_ptr_equal(ctl->body[2], cpt);
	n = census(cons);
	assert_int_equal(n.kind[ST_SYNC], 1);
	assert_int_equal(n.kind[ST_MMA_WAIT], 2);
}

/*
 * Two pipelines in one nest: the k-loop operands, and a per-tile bias the
 * epilogue reads.  Each gets its own stages, barriers and counter (t for the
 * bias, t * ktiles + kk for the operands); the producer's merged loop loads
 * the bias with a tile's first k-step, waiting on the bias's own empty
 * barrier; consumers pre-arrive both, wait for the bias before the epilogue
 * and release it after.
 */
static void
passes_matmul_two_pipelines(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Nest nest = matmul_nest(t, true);
	Kernel *k = nest.k;
	Stmt *tl = nest.tl, *kl = nest.kl;
	const CbInfo *bias, *ops;
	Stmt *roles, *prod, *cons, *pl, *first, *x;
	int S, i, w, e;

	run_passes(t);
	assert_int_equal(k->npipe, 2);
	bias = tl->u.loop.cb;
	ops = kl->u.loop.cb;
	assert_non_null(bias);
	assert_non_null(ops);
	assert_false(bias->inner);
	assert_true(ops->inner);
	assert_int_equal(bias->stages, 2);
	assert_int_equal(bias->prefetch, 1);             /* read by a compute: P = S - 1 */
	S = ops->stages;
	assert_int_equal(ops->prefetch, S - 2);          /* read by mma */
	assert_int_equal(k->buf[nest.bias].stages, 2);
	assert_int_equal(k->buf[1].stages, S);
	assert_int_equal(k->buf[nest.bias].full_bar, bias->full_bar);
	assert_int_equal(k->buf[1].full_bar, ops->full_bar);
	assert_int_not_equal(bias->full_bar, ops->full_bar);
	assert_int_not_equal(bias->empty_bar, ops->empty_bar);
	assert_string_equal(k->bar[ops->full_bar].name, "full");
	assert_string_equal(k->bar[bias->full_bar].name, "bias_tile_full");
	assert_true(kernel_smem_bytes(k) <= k->smem_budget);

	roles = k->body->body[k->body->nbody - 1];
	prod = roles->body[0];
	cons = roles->body[1];
	/* producer: one merged loop; the bias under kk == 0 on its own barriers and counter */
	pl = prod->body[1];
	assert_int_equal(pl->kind, ST_LOOP);
	assert_int_equal(census(pl).kind[ST_LOOP], 1);
	first = pl->body[0];
	assert_int_equal(first->kind, ST_IF);
	assert_string_equal(expr(t, first->u.branch.cond), "((q % ktiles) == 0)");
	x = first->body[0];
	assert_int_equal(x->kind, ST_IF);                 /* elect() */
	assert_int_equal(x->body[0]->kind, ST_MBAR_WAIT);
	assert_int_equal(x->body[0]->u.mbar.bar, bias->empty_bar);
	assert_string_equal(expr(t, x->body[0]->u.mbar.barslot), "((q / ktiles) % 2)");
	assert_string_equal(expr(t, x->body[0]->u.mbar.parity), "(((q / ktiles) / 2) & 1)");
	assert_int_equal(x->body[1]->kind, ST_EXPECT_TX);
	assert_int_equal(x->body[1]->u.mbar.bar, bias->full_bar);
	assert_int_equal(x->body[1]->u.mbar.bytes, 512);
	assert_int_equal(x->body[2]->kind, ST_TMA_LOAD);
	assert_int_equal(x->body[2]->u.tma.bar, bias->full_bar);
	x = pl->body[1];
	assert_int_equal(x->body[0]->kind, ST_MBAR_WAIT);
	assert_int_equal(x->body[0]->u.mbar.bar, ops->empty_bar);
	assert_string_equal(expr(t, x->body[0]->u.mbar.barslot), arena_printf(c->arena, "(q %% %d)", S));
	assert_int_equal(x->body[1]->u.mbar.bytes, 48 * 1024);

	/* consumers: pre-arrive both pipelines, once, before the tile loop */
	i = 1;
	assert_int_equal(cons->body[i]->kind, ST_LOOP);
	assert_int_equal(cons->body[i]->body[0]->u.mbar.bar, bias->empty_bar);
	assert_string_equal(expr(t, cons->body[i++]->u.loop.hi), "2");
	assert_int_equal(cons->body[i]->kind, ST_LOOP);
	assert_int_equal(cons->body[i]->body[0]->u.mbar.bar, ops->empty_bar);
	assert_string_equal(expr(t, cons->body[i++]->u.loop.hi), arena_printf(c->arena, "%d", S - 1));
	assert_ptr_equal(cons->body[i], tl);
	assert_int_equal(census(kl).kind[ST_MBAR_WAIT], 1);
	assert_int_equal(census(kl).kind[ST_MBAR_ARRIVE], 1);
	/* the epilogue waits for the bias and the mma, then releases the bias's stage */
	e = -1;
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i] == nest.cpt)
			e = i;
	assert_true(e >= 2);
	w = tl->body[e - 1]->kind == ST_MBAR_WAIT ? e - 1 : e - 2;
	assert_int_equal(tl->body[w]->kind, ST_MBAR_WAIT);
	assert_int_equal(tl->body[w]->u.mbar.bar, bias->full_bar);
	assert_string_equal(expr(t, tl->body[w]->u.mbar.barslot), "(t % 2)");
	assert_string_equal(expr(t, tl->body[w]->u.mbar.parity), "((t / 2) & 1)");
	assert_int_equal(tl->body[w == e - 1 ? e - 2 : e - 1]->kind, ST_MMA_WAIT);
	assert_int_equal(tl->body[e + 1]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(tl->body[e + 1]->u.mbar.bar, bias->empty_bar);
	assert_string_equal(expr(t, tl->body[e + 1]->u.mbar.barslot), "(t % 2)");  /* (t + P + 1) % S, folded */
	assert_int_equal(census(tl).kind[ST_MBAR_WAIT], 2);
	assert_int_equal(census(tl).kind[ST_MBAR_ARRIVE], 2);
}

/*
 * As many effects and accesses as the spec has inputs: 300 TMA stores in
 * flight (600 effects; a fixed table of 256 was an internal error), then a
 * compute that reads 70 other buffers before it writes the first store's
 * copy (a table of 64 accesses dropped the write, and with it the wait).
 */
static void
sync_many_effects(void **state)
{
	Fixture *t = *state;
	Comp *c = &t->c;
	Kernel *k = c->kernel = mma_kernel(c, 1);
	Stmt *stores = st_if(c, ex_leaf(c, EX_ELECT)), *compute = st_new(c, ST_COMPUTE), *body = k->body;
	int i, first = 0, at;

	for (i = 0; i < 300; i++) {
		int b = kernel_add_buf(c, k, "staged", BUF_STAGING, DT_F32, 16, 16);
		Stmt *st = st_new(c, ST_TMA_STORE);

		st->u.tma.buf = b;
		st->u.tma.param = kernel_add_param(c, k, PK_TMAP, "out");
		k->buf[b].param = st->u.tma.param;
		k->buf[b].stages = 1;
		st->u.tma.row = st->u.tma.col = ex_int(c, 0);
		st_append(c, stores, st);
		first = first ? first : b;
	}
	st_append(c, body, stores);
	for (i = 0; i < 70; i++) {
		int b = kernel_add_buf(c, k, "read", BUF_STAGING, DT_F32, 16, 16);

		k->buf[b].param = 1;
		k->buf[b].stages = 1;
		VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads)->buf = b;
	}
	VEC_PUSH(c->arena, compute->writes, compute->nwrites, compute->capwrites)->buf = first;
	compute->u.compute.row = compute->u.compute.col = ex_int(c, 0);
	st_append(c, body, compute);
	run_sync(t);

	at = index_of(body, ST_COMPUTE, 0);
	assert_true(at >= 2);
	assert_int_equal(body->body[at - 1]->kind, ST_SYNC);   /* the elected wait, then the CTA barrier */
	assert_int_equal(body->body[at - 2]->kind, ST_IF);
	assert_int_equal(body->body[at - 2]->body[0]->kind, ST_BULK_WAIT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sync_two_mma_two_epilogues, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_two_mma_one_mainloop, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_mma_add_relu, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_many_effects, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_matmul_nest, setup, teardown),
		cmocka_unit_test_setup_teardown(passes_matmul_nest, setup, teardown),
		cmocka_unit_test_setup_teardown(passes_matmul_two_pipelines, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
