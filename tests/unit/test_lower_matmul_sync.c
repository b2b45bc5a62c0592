/*
 * test_lower_matmul_sync.c: the matmul family's per-tile protocols,
 * lowered from a spec and taken through every kernel pass: a tile's signal
 * (flags, epoch, the consumer role that reads the stored tiles back) and
 * an input's wait per tile (an epilogue input, an operand, a writer's tile
 * of another shape), each wait and signal with its position.
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


/* The block around statement X inside S, or NULL. */
static Stmt *
parent_of(Stmt *s, const Stmt *x)
{
	Stmt *r;
	int i;

	for (i = 0; s && i < s->nbody; i++)
		if (s->body[i] == x)
			return s;
		else if ((r = parent_of(s->body[i], x)))
			return r;
	return s && st_else(s) ? parent_of(st_else(s), x) : NULL;
}

/*
 * signal: per_tile.  In the consumers' tile loop, after the tile's stores,
 * the elected thread signals the tile before (from its second tile): a
 * bulk.wait_group without .read whose N is this tile's store groups (8
 * subtiles of 256 columns), so they stay in flight, then the release.
 * After the loop the last tile: bulk.wait_group 0, the release, and no
 * other wait at the role's end.  Ping-pong: the tile before is two
 * iterations back, from the warpgroup's own first.
 */
static void
signal_per_tile(void **state)
{
	static const char *const specs[] = {
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {dtype: bf16}\n"
		"schedule: {signal: per_tile}\n",
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {dtype: bf16}\n"
		"schedule: {signal: per_tile, consumers: pingpong}\n",
	};
	int v;

	for (v = 0; v < 2; v++) {
		Fixture *t;
		Kernel *k;
		Stmt *roles, *cons, *tl, *x, *in, *sig, *w;
		const char *cu;
		int i, nflags = 0, nepoch = 0;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, specs[v])))
			fail_msg("%s", t->msg);
		assert_true(k->signal);
		for (i = 1; i < k->nparam; i++) {
			nflags += k->param[i].kind == PK_FLAGS;
			nepoch += k->param[i].kind == PK_SIZE && k->param[i].size == SZ_EPOCH;
		}
		assert_int_equal(nflags, 1);
		assert_int_equal(nepoch, 1);
		roles = find_kind(k->body, ST_ROLES, 0);
		assert_int_equal(census(roles->body[0]).kind[ST_SIGNAL], 0);   /* the producer signals nothing */
		cons = roles->body[1];
		assert_int_equal(census(cons).kind[ST_SIGNAL], 2);
		tl = find_kind(cons, ST_LOOP, v == 0 ? 1 : 0);   /* ping-pong's stage arrivals sit in an if */
		/* in the loop, last: elect { if (i >= first + step) { wait 8, no .read; signal the tile before } } */
		x = tl->body[tl->nbody - 1];
		assert_int_equal(x->kind, ST_IF);
		assert_int_equal(x->u.branch.cond->kind, EX_ELECT);
		in = x->body[0];
		assert_string_equal(expr(t, in->u.branch.cond), v == 0 ? "(i >= 1)" : "(i >= (wg + 2))");
		assert_int_equal(in->nbody, 2);
		w = in->body[0], sig = in->body[1];
		assert_int_equal(w->kind, ST_BULK_WAIT);
		assert_false(w->u.group.read);                 /* the stores themselves, not only their reads */
		assert_int_equal(w->u.group.pending, 8);             /* this tile's 8 subtiles stay in flight */
		assert_int_equal(sig->kind, ST_SIGNAL);
		assert_true(sig->u.signal.before);
		assert_non_null(strstr(expr(t, sig->u.signal.tile), v == 0 ? "(i - 1)" : "(i - 2)"));
		/* after the loop: the last tile, after every store */
		sig = NULL;
		for (i = 0; i < cons->nbody; i++)
			if (cons->body[i] == tl)
				sig = find_deep(cons->body[i + 1], ST_SIGNAL);
		assert_non_null(sig);
		assert_false(sig->u.signal.before);
		w = parent_of(cons, sig)->body[0];
		assert_int_equal(w->kind, ST_BULK_WAIT);
		assert_false(w->u.group.read);
		assert_int_equal(w->u.group.pending, 0);
		assert_ptr_equal(parent_of(cons, sig)->body[1], sig);
		/* the waits without .read: these two only */
		cu = cuda_of(t);
		assert_int_equal(count(cu, "wsf_signal(flags + "), 2);
		assert_int_equal(count(cu, "wsf_bulk_wait<8>();"), 1);
		assert_int_equal(count(cu, "wsf_bulk_wait<0>();"), 1);
		assert_int_equal(count(cu, "unsigned *const flags,"), 1);
		assert_int_equal(count(cu, "131071LL"), 0);   /* no delays unless asked (option store-delay) */
		teardown((void **)&t);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		t->c.store_delay = 5000;
		if (!kernel_of(t, specs[v]))
			fail_msg("%s", t->msg);
		cu = cuda_of(t);
		assert_int_equal(count(cu, "wsf_store_delay("), 2);   /* its definition, and before the one store */
		assert_int_equal(count(cu, ", 5000);"), 1);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * signal: {per_tile, consumer: y2}.  The producer warpgroup becomes a
 * warpgroup role holding the one setmaxnreg (88: the consumer's loads in
 * flight), its first warp the producer and the other three the signal role:
 * for each of the CTA's tiles, a wait on landed[j % 4] (parity (j / 4) & 1),
 * the consumer's compute, an arrive on taken[j % 4].  The mma warpgroups
 * (208 registers) signal the tile before inside the k loop, at k-step
 * min(4, ktiles - 1), before its mma: the elected thread waits on taken[]
 * (parity flipped: the first pass is free), then bulk.wait_group 0 without
 * .read, then arrives on landed[]; the last tile after the loop the same
 * way.  No flags: the consumer is in the CTA.  y is read back through a
 * pointer param of its own, beside its tensor map.
 */
static void
signal_consumer_role(void **state)
{
	static const char *const specs[] = {
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: y2, op: cast, in: [y], to: bf16}\n  - {out: h, op: mul, in: [y, 0.5]}\n"
		"outputs:\n  y: {dtype: bf16}\n  y2: {dtype: bf16}\n  h: {dtype: f32}\n"
		"schedule: {signal: {per_tile, consumer: [y2, h]}}\n",
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: y2, op: cast, in: [y], to: bf16}\n"
		"outputs:\n  y: {dtype: bf16}\n  y2: {dtype: bf16}\n"
		"schedule: {signal: {per_tile: true, consumer: y2}, consumers: pingpong}\n",
	};
	int v;

	for (v = 0; v < 2; v++) {
		Fixture *t;
		Kernel *k;
		Stmt *roles, *group, *inner, *sig_role, *load_role, *cons, *cl, *tl, *kl, *at, *in, *x;
		const char *cu;
		int i, nreadback = 0, nptr_out = 0, landed = 0, taken = 0;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, specs[v])))
			fail_msg("%s", t->msg);
		assert_false(k->signal);   /* no flags, no epoch */
		for (i = 1; i < k->nparam; i++) {
			assert_int_not_equal(k->param[i].kind, PK_FLAGS);
			nreadback += k->param[i].readback;
			nptr_out += k->param[i].kind == PK_PTR && !k->param[i].readback;
		}
		assert_int_equal(nreadback, 1);
		assert_int_equal(nptr_out, v == 0 ? 2 : 1);
		for (i = 1; i < k->nbar; i++) {
			if (strcmp(k->bar[i].name, "landed") == 0)
				landed = i;
			if (strcmp(k->bar[i].name, "taken") == 0)
				taken = i;
		}
		assert_true(landed && taken);
		assert_int_equal(k->bar[landed].count, 4);
		assert_int_equal(k->bar[landed].arrivals, 1);
		assert_int_equal(k->bar[taken].arrivals, 96);

		/* the roles: warpgroup { setmaxnreg; roles { signal, producer } }, then the consumers */
		roles = find_deep(k->body, ST_ROLES);
		group = roles->body[0];
		assert_int_equal(k->role[group->u.role.id].kind, ROLE_GROUP);
		assert_int_equal(k->role[group->u.role.id].regs, 88);
		assert_int_equal(group->body[0]->kind, ST_SETMAXNREG);
		assert_false(group->body[0]->u.maxnreg.inc);
		inner = group->body[1];
		assert_int_equal(inner->kind, ST_ROLES);
		sig_role = inner->body[0], load_role = inner->body[1];
		assert_int_equal(k->role[sig_role->u.role.id].kind, ROLE_SIGNAL);
		assert_int_equal(k->role[sig_role->u.role.id].first, 288);
		assert_int_equal(k->role[sig_role->u.role.id].threads, 96);
		assert_int_equal(k->role[sig_role->u.role.id].parent, group->u.role.id);
		assert_int_equal(k->role[load_role->u.role.id].kind, ROLE_PRODUCER);
		assert_int_equal(k->role[load_role->u.role.id].threads, 32);
		assert_int_equal(census(load_role).kind[ST_COMPUTE], 0);
		assert_int_equal(census(sig_role).kind[ST_TMA_LOAD], 0);
		cons = roles->body[1];
		assert_int_equal(k->role[cons->u.role.id].regs, 208);

		/* the signal role: for j: lets; wait landed; compute; arrive taken -- and nothing else */
		cl = find_kind(sig_role, ST_LOOP, 0);
		assert_non_null(cl);
		for (i = 0; i < cl->nbody && cl->body[i]->kind == ST_LET; i++)
			;
		assert_int_equal(cl->nbody - i, 3);
		x = cl->body[i];
		assert_int_equal(x->kind, ST_MBAR_WAIT);
		assert_int_equal(x->u.mbar.bar, landed);
		assert_string_equal(expr(t, x->u.mbar.barslot), "(j % 4)");
		assert_string_equal(expr(t, x->u.mbar.parity), "((j / 4) & 1)");
		assert_int_equal(cl->body[i + 1]->kind, ST_COMPUTE);
		x = cl->body[i + 2];
		assert_int_equal(x->kind, ST_MBAR_ARRIVE);
		assert_int_equal(x->u.mbar.bar, taken);
		assert_int_equal(census(sig_role).kind[ST_BULK_WAIT], 0);

		/* the mma warpgroups: the tile before, in the k loop before its mma; the last after the loop */
		assert_int_equal(census(cons).kind[ST_SIGNAL], 2);
		tl = find_kind(cons, ST_LOOP, v == 0 ? 1 : 0);
		kl = find_kind(tl, ST_LOOP, 0);
		at = kl->body[0];
		assert_int_equal(at->kind, ST_IF);
		assert_string_equal(expr(t, at->u.branch.cond), "(kk == min(4, (ktiles - 1)))");
		in = at->body[0]->body[0];   /* elect { if (i >= first + step) { ... } } */
		assert_string_equal(expr(t, in->u.branch.cond), v == 0 ? "(i >= 1)" : "(i >= (wg + 2))");
		assert_int_equal(in->nbody, 3);
		assert_int_equal(in->body[0]->kind, ST_MBAR_WAIT);
		assert_int_equal(in->body[0]->u.mbar.bar, taken);
		assert_string_equal(expr(t, in->body[0]->u.mbar.parity),
		                    v == 0 ? "((((i - 1) / 4) & 1) ^ 1)" : "((((i - 2) / 4) & 1) ^ 1)");
		assert_int_equal(in->body[1]->kind, ST_BULK_WAIT);
		assert_false(in->body[1]->u.group.read);
		assert_int_equal(in->body[1]->u.group.pending, 0);   /* every store so far: the tile before's, landed by now */
		assert_int_equal(in->body[2]->kind, ST_SIGNAL);
		assert_int_equal(in->body[2]->u.signal.bar, landed);
		assert_int_equal(in->body[2]->u.signal.param, 0);
		assert_string_equal(expr(t, in->body[2]->u.signal.barslot), v == 0 ? "((i - 1) % 4)" : "((i - 2) % 4)");
		for (i = 1; i < kl->nbody; i++)   /* the k-step's mma comes after it */
			if (kl->body[i]->kind == ST_MMA)
				break;
		assert_true(i < kl->nbody);
		x = NULL;
		for (i = 0; i < cons->nbody; i++)
			if (cons->body[i] == tl)
				x = find_deep(cons->body[i + 1], ST_SIGNAL);
		assert_non_null(x);
		assert_false(x->u.signal.before);
		assert_int_equal(parent_of(cons, x)->body[1]->kind, ST_BULK_WAIT);
		assert_int_equal(parent_of(cons, x)->body[1]->u.group.pending, 0);

		cu = cuda_of(t);
		assert_int_equal(count(cu, "setmaxnreg.dec.sync.aligned.u32 88;"), 1);
		assert_int_equal(count(cu, "if (threadIdx.x >= 288) {"), 1);
		assert_int_equal(count(cu, "wsf_mbar_arrive(&landed["), 2);
		assert_int_equal(count(cu, "wsf_mbar_arrive(&taken["), 1);
		assert_int_equal(count(cu, "const wsf_bf16 *const mem_y,"), 1);
		assert_int_equal(count(cu, "wsf_ldcg16_l2(mem_y + "), 1);
		assert_int_equal(count(cu, "wsf_st16_l2(out_y2 + at"), 1);   /* y2 is y's bits */
		assert_int_equal(count(cu, "wsf_signal("), 1);                /* its definition only */
		if (v == 0)
			assert_int_equal(count(cu, "wsf_store8(out_h + at, res_h);"), 1);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * signal: {per_tile, consumer: [...], flags: true}: the consumer role raises
 * the flags (the reduce-scatter's send: the mma warpgroups store the tile
 * locally, the role copies it to a peer and publishes it).  The kernel
 * signals (flags and epoch params); the role's loop is lets; wait landed;
 * compute; its named barrier 5 over its 96 threads; one thread's release of
 * the tile's flag (the tile loop's layout, at system scope with scope:
 * system); arrive taken.  The mma warpgroups still only arrive on landed.
 * Checked to fail with the role's barrier left out of lowering.
 */
static void
signal_consumer_flags(void **state)
{
	static const char *const spec =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"  - {out: sent, op: cast, in: [y], to: bf16}\n"
		"outputs:\n  y: {dtype: bf16}\n  sent: {dtype: bf16}\n"
		"schedule: {signal: {per_tile, consumer: sent, flags: true, scope: system}}\n";
	Fixture *t;
	Kernel *k;
	Stmt *roles, *sig_role, *cons, *cl, *x;
	const char *cu;
	int i, flags = 0, epoch = 0;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_true(k->signal);
	assert_non_null(k->tile_consumer);
	for (i = 1; i < k->nparam; i++) {
		if (k->param[i].kind == PK_FLAGS)
			flags = i;
		if (k->param[i].kind == PK_SIZE && k->param[i].size == SZ_EPOCH)
			epoch = i;
	}
	assert_true(flags && epoch);
	roles = find_deep(k->body, ST_ROLES);
	sig_role = roles->body[0]->body[1]->body[0];
	assert_int_equal(k->role[sig_role->u.role.id].kind, ROLE_SIGNAL);
	assert_int_equal(k->role[sig_role->u.role.id].bar_id, 5);
	cl = find_kind(sig_role, ST_LOOP, 0);
	for (i = 0; i < cl->nbody && cl->body[i]->kind == ST_LET; i++)
		;
	assert_int_equal(cl->nbody - i, 5);
	assert_int_equal(cl->body[i]->kind, ST_MBAR_WAIT);
	assert_int_equal(cl->body[i + 1]->kind, ST_COMPUTE);
	x = cl->body[i + 2];
	assert_int_equal(x->kind, ST_SYNC);
	assert_int_equal(x->u.sync.id, 5);
	assert_int_equal(x->u.sync.threads, 96);
	x = cl->body[i + 3];
	assert_int_equal(x->kind, ST_IF);
	assert_int_equal(x->u.branch.cond->kind, EX_ELECT);
	assert_int_equal(x->nbody, 1);
	assert_int_equal(x->body[0]->kind, ST_SIGNAL);
	assert_int_equal(x->body[0]->u.signal.param, flags);
	assert_string_equal(expr(t, x->body[0]->u.signal.tile), "(((row0 / 128) * ceildiv(cols, 256)) + (col0 / 256))");
	assert_int_equal(cl->body[i + 4]->kind, ST_MBAR_ARRIVE);
	assert_int_equal(census(sig_role).kind[ST_SIGNAL], 1);
	cons = roles->body[1];
	assert_int_equal(census(cons).kind[ST_SIGNAL], 2);

	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_bar_sync(5, 96);"), 1);
	assert_int_equal(count(cu, "if (threadIdx.x == 288) {"), 1);
	assert_int_equal(count(cu, "wsf_signal_system(flags + "), 1);
	assert_int_equal(count(cu, "wsf_mbar_arrive(&landed["), 2);
	teardown((void **)&t);
	(void)state;
}

/*
 * wait: per_tile on epilogue inputs: a PK_WAIT param and the epoch (one,
 * shared with the signal's), and in the tile loop, after the k loop and
 * before the first epilogue subtile, one elected thread waiting for each
 * input's word ([input][tile], the second input's tiles after the first's),
 * then the consumers' barrier.  The CUDA reads the inputs through L2
 * (wsf_load1_cg) from parameters that are not __restrict__.  What is not
 * built (an input that waits and is both operands, a cluster, another
 * family) is exit status 6; an epilogue input that is not full [M, N] an
 * error.
 */
static void
wait_per_tile(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: f32, shape: [M, N], wait: per_tile}\n  q: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: a, op: add, in: [y, p]}\n"
		"  - {out: o, op: add, in: [a, q]}\noutputs:\n  o: {dtype: bf16}\n"
		"schedule: {signal: {per_tile, scope: system}}\n";
	static const struct {
		const char *spec, *msg;
		bool unbuilt;
	} bad[] = {
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K], wait: per_tile}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, x], transpose_b: true}\noutputs:\n  y: {}\n"
		 "schedule: {tile: [128, 128, 64]}\n",
		 "'x' waits per tile and is both operands of the kernel's matmuls", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  b: {dtype: bf16, shape: [N], wait: per_tile}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, b]}\n"
		 "outputs:\n  o: {}\n",
		 "'b' waits per tile (wait: per_tile), but it is not a full [M, N] input", false},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  p: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		 "outputs:\n  o: {}\nschedule: {cluster: [2, 1]}\n",
		 "'cluster' with an input or output that waits per tile is not implemented yet", true},
		{"fusion: pw\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\noutputs:\n  y: {}\n",
		 "'wait: per_tile' (input 'a') is implemented for matmul kernels only", true},
	};
	Fixture *t;
	Kernel *k;
	Stmt *waits[4], *tl = NULL, *syncs[8];
	const char *cu;
	int i, pw = 0, epochs = 0, n, at_wait = -1, at_e = -1;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 2);
	assert_int_equal(k->mm.cluster[0] * k->mm.cluster[1], 1);   /* no default cluster for a kernel that waits */
	for (i = 1; i < k->nparam; i++) {
		pw += k->param[i].kind == PK_WAIT;
		epochs += k->param[i].kind == PK_SIZE && k->param[i].size == SZ_EPOCH;
	}
	assert_int_equal(pw, 1);
	assert_int_equal(epochs, 1);
	n = stmts_of(k->body, ST_FLAG_WAIT, waits, 4);
	assert_int_equal(n, 2);
	assert_string_equal(expr(t, waits[0]->u.flag_wait.word), "(((row0 / 128) * ceildiv(cols, 256)) + (col0 / 256))");
	/* after p's */
	assert_non_null(strstr(expr(t, waits[1]->u.flag_wait.word), "((ceildiv(rows, 128) * ceildiv(cols, 256)) + "));
	/* in the consumers' tile loop: the elected waits, the barrier, then (after the mma wait) the epilogue */
	assert_non_null(tl = consumer_tiles(k));
	wait_and_epilogue(k, tl, waits[0], &at_wait, &at_e);
	assert_true(at_wait > 0 && at_e > at_wait);
	assert_int_equal(tl->body[at_wait]->nbody, 2);   /* both inputs' waits in one block */
	assert_int_equal(tl->body[at_wait - 1]->kind, ST_LOOP);        /* the k loop before it */
	assert_int_equal(tl->body[at_wait + 1]->kind, ST_SYNC);        /* the consumers' barrier after it */
	assert_int_equal(tl->body[at_wait + 1]->u.sync.id, 1);
	assert_int_equal(stmts_of(tl->body[at_wait], ST_SYNC, syncs, 8), 0);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_flag_wait(wait_flags + "), 2);
	assert_int_equal(count(cu, "wsf_load1_cg(in_p + row * cols + col)"), 1);   /* at the edge */
	assert_int_equal(count(cu, "wsf_load1_cg(in_q + row * cols + col)"), 1);
	assert_int_equal(count(cu, "wsf_load2_cg(in_p + (top + wt + 8 * (q & 1)) * cols"), 1);   /* inside, a pair */
	assert_int_equal(count(cu, "wsf_load2_cg(in_q + (top + wt + 8 * (q & 1)) * cols"), 1);
	assert_int_equal(count(cu, "const float *const in_p,"), 1);
	assert_int_equal(count(cu, "wsf_signal_system(flags + "), 2);   /* the tile before, the last */
	teardown((void **)&t);

	for (i = 0; i < (int)countof(bad); i++)
		refused_with(i, bad[i].spec, bad[i].msg, bad[i].unbuilt);
	(void)state;
}

/*
 * Operands that wait (the load side of all-gather + GEMM): the producer's
 * elected thread, at a tile's first k-step and before the stage's empty
 * wait and loads, waits for A's row tile (B's column tile), the words of
 * the waiting inputs one after another in spec order (A's row tiles, then
 * B's column tiles, then an epilogue input's tiles), then the epilogue
 * input's L2 prefetch (at the tile's last k-step); the consumers keep only
 * the epilogue input's wait.  The CUDA fences the async proxy after the
 * producer's waits (wsf_flag_wait_tma).
 */
static void
operand_wait(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K], wait: per_tile}\n  w: {dtype: bf16, shape: [N, K], "
		"wait: per_tile}\n  p: {dtype: f32, shape: [M, N], wait: per_tile}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		"outputs:\n  o: {dtype: bf16}\n";
	Fixture *t;
	Kernel *k;
	Stmt *w[4], *roles, *issue = NULL;
	const char *cu;
	int n, i;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 3);
	assert_int_equal(k->mm.wait_rows, 1);
	assert_int_equal(k->mm.wait_cols, 1);
	roles = find_kind(k->body, ST_ROLES, 0);
	n = stmts_of(roles->body[0], ST_FLAG_WAIT, w, 4);   /* the producer's */
	assert_int_equal(n, 2);
	for (i = 0; i < 2; i++) {
		assert_true(w[i]->u.flag_wait.producer);
		assert_string_equal(expr(t, w[i]->u.flag_wait.cond), "(kk == 0)");
	}
	assert_string_equal(expr(t, w[0]->u.flag_wait.word), "(row0 / 128)");
	assert_string_equal(expr(t, w[1]->u.flag_wait.word), "(ceildiv(rows, 128) + (col0 / 256))");
	/* in the k loop, which the elected thread alone runs, before the empty wait and the loads */
	issue = roles->body[0]->body[1];
	assert_int_equal(issue->kind, ST_IF);
	assert_int_equal(issue->u.branch.cond->kind, EX_ELECT);
	issue = find_kind(issue->body[0], ST_LOOP, 0);
	assert_non_null(issue);
	assert_int_equal(issue->body[0]->kind, ST_FLAG_WAIT);
	assert_int_equal(issue->body[1]->kind, ST_FLAG_WAIT);
	assert_int_equal(issue->body[2]->kind, ST_TMA_PREFETCH);
	assert_int_equal(issue->body[3]->kind, ST_MBAR_WAIT);
	n = stmts_of(roles->body[1], ST_FLAG_WAIT, w, 4);   /* the consumers': the epilogue input's */
	assert_int_equal(n, 1);
	assert_false(w[0]->u.flag_wait.producer);
	assert_string_equal(expr(t, w[0]->u.flag_wait.word), "((ceildiv(rows, 128) + ceildiv(cols, 256)) + "
	                    "(((row0 / 128) * ceildiv(cols, 256)) + (col0 / 256)))");
	cu = cuda_of(t);
	assert_int_equal(count(cu, "    wsf_flag_wait_tma(wait_flags + "), 2);
	assert_int_equal(count(cu, "wsf_flag_wait(wait_flags + "), 1);
	teardown((void **)&t);
	(void)state;
}

/*
 * wait: {per_tile, tile: [R, C]}: the words follow the writer's R x C tiles
 * (MatmulPlan.wait_tile), and a tile of the kernel waits for each writer tile
 * it covers, in a loop (never unrolled: a 1 x 1 writer tile is 32768 words
 * a tile), where it lies inside the output.  A 128 x 256 tile over 128 x
 * 128 writer tiles: a loop of two; over 64 x 64: eight; over 1 x 1: 32768;
 * inside a 256 x 512 one: one wait, that tile's word, no loop; over 256 x
 * 128 (coarser along M, finer along N): two.  Refused: a writer tile that
 * does not nest with the kernel's (192 x 128), two inputs with different
 * ones (not built), an operand's (not built).
 */
static void
wait_writer_tile(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: bf16, shape: [M, N], wait: {per_tile, tile: [%d, %d]}}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		"outputs:\n  o: {dtype: bf16}\nschedule: {tile: [128, 256, 64]}\n";
	static const struct {
		const char *spec, *msg;
		bool unbuilt;
	} bad[] = {
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  p: {dtype: bf16, shape: [M, N], wait: {per_tile, tile: [128, 128]}}\n"
		 "  q: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o0, op: add, in: [y, p]}\n"
		 "  - {out: o, op: add, in: [o0, q]}\noutputs:\n  o: {}\nschedule: {tile: [128, 256, 64]}\n",
		 "epilogue inputs (or outputs) that wait with different writer tiles in one kernel ('q' and one before it)", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K], wait: {per_tile, tile: [128, 128]}}\n"
		 "  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {}\n",
		 "a writer's tile for an operand that waits ('x', which waits by row tiles)", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "  p: {dtype: bf16, shape: [M, N], wait: {per_tile, tile: [192, 128]}}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		 "outputs:\n  o: {}\nschedule: {tile: [128, 256, 64]}\n",
		 "the writer's tile 192 x 128 of 'p' and the kernel's tile 128 x 256 do not nest", false},
	};
	/* the writer's tile, and the waits a tile: finer, coarser (one word, the tile's), and coarser along M only */
	static const int tiles[][3] = {{128, 128, 2}, {64, 64, 8}, {256, 512, 1}, {256, 128, 2}, {1, 1, 32768}};
	Fixture *t;
	Kernel *k;
	Stmt *w[8], *loop;
	char text[1024];
	int i;

	for (i = 0; i < (int)countof(tiles); i++) {
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		snprintf(text, sizeof text, spec, tiles[i][0], tiles[i][1]);
		if (!(k = kernel_of(t, text)))
			fail_msg("%s", t->msg);
		assert_int_equal(k->mm.wait_tile[0], tiles[i][0]);
		assert_int_equal(k->mm.wait_tile[1], tiles[i][1]);
		assert_int_equal(stmts_of(k->body, ST_FLAG_WAIT, w, 8), 1);
		loop = parent_of(k->body, w[0]);
		assert_non_null(loop);
		if (tiles[i][2] == 1) {   /* the one writer tile that holds this one */
			assert_int_not_equal(loop->kind, ST_LOOP);
			assert_null(w[0]->u.flag_wait.cond);
			assert_string_equal(expr(t, w[0]->u.flag_wait.word), "(((row0 / 256) * ceildiv(cols, 512)) + (col0 / 512))");
			teardown((void **)&t);
			continue;
		}
		assert_int_equal(loop->kind, ST_LOOP);
		assert_string_equal(expr(t, loop->u.loop.hi), arena_printf(t->c.arena, "%d", tiles[i][2]));
		assert_non_null(w[0]->u.flag_wait.cond);
		if (tiles[i][0] == 128) {
			assert_string_equal(expr(t, w[0]->u.flag_wait.word), "(((row0 / 128) * ceildiv(cols, 128)) + ((col0 / 128) + wt))");
			assert_string_equal(expr(t, w[0]->u.flag_wait.cond), "((col0 + (wt * 128)) < cols)");
			assert_int_equal(count(cuda_of(t), "wsf_flag_wait(wait_flags + "), 1);
		} else if (tiles[i][0] == 64) {   /* four column tiles a row */
			assert_string_equal(expr(t, w[0]->u.flag_wait.cond),
			                    "(((row0 + ((wt / 4) * 64)) < rows) & ((col0 + ((wt % 4) * 64)) < cols))");
		} else if (tiles[i][0] == 256) {   /* one writer row tile, two of its column tiles */
			assert_string_equal(expr(t, w[0]->u.flag_wait.word), "(((row0 / 256) * ceildiv(cols, 128)) + ((col0 / 128) + wt))");
			assert_string_equal(expr(t, w[0]->u.flag_wait.cond), "((col0 + (wt * 128)) < cols)");
		} else {   /* every word of the tile, and the CUDA stays small */
			assert_string_equal(expr(t, w[0]->u.flag_wait.word), "(((row0 + (wt / 256)) * cols) + (col0 + (wt % 256)))");
			assert_true(strlen(cuda_of(t)) < 64 * 1024);
		}
		teardown((void **)&t);
	}
	for (i = 0; i < (int)countof(bad); i++)
		refused_with(i, bad[i].spec, bad[i].msg, bad[i].unbuilt);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(signal_per_tile),
		cmocka_unit_test(signal_consumer_role),
		cmocka_unit_test(signal_consumer_flags),
		cmocka_unit_test(wait_writer_tile),
		cmocka_unit_test(wait_per_tile),
		cmocka_unit_test(operand_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
