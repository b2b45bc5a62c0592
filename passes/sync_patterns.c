/*
 * sync_patterns.c: the exceptions to sync.c's analysis, each a pattern the
 * walk calls at a fixed point (sync.c's contract names them): requires what
 * sync.c's walk requires, leaves the waits, arrivals and loads each places.
 */
#include "sync.h"

/*
 * Before the consumers' buffered loop LOOP (at BLOCK->body[*J]): the first
 * P + 1 stages of its pipeline, and of each inner one in S, start empty.
 */
void
pre_arrive(Sync *y, Stmt *block, int *j, const Stmt *loop, const Stmt *s)
{
	Comp *c = y->c;
	int i;

	if (s->kind == ST_LOOP && s->u.loop.cb && (s == loop || s->u.loop.cb->inner) && s->u.loop.cb->empty_bar) {
		int kv = kernel_add_var(c, y->k, "s");
		/* consumers in groups that each own a tile: each stage released once, by the group that read it: all start empty */
		bool pp = kernel_consumer_groups(y->k) > 1;
		Stmt *pre = st_loop(c, kv, ex_int(c, 0), ex_int(c, pp ? s->u.loop.cb->stages : s->u.loop.cb->prefetch + 1),
		                    LOOP_SERIAL);

		pre->comment = pp ? "every stage starts empty (one warpgroup's arrivals)" : "the first P + 1 stages start empty";
		st_append(c, pre, mbar(c, ST_MBAR_ARRIVE, s->u.loop.cb->empty_bar, ex_var(c, kv), NULL, NULL));
		if (pp) {
			Stmt *one = st_if(c, ex_bin(c, EX_EQ, ex_leaf(c, EX_WG), ex_int(c, 0)));

			st_append(c, one, pre);
			pre = one;
		}
		st_insert(c, block, *j, pre);
		(*j)++;
	}
	for (i = 0; i < s->nbody; i++)
		pre_arrive(y, block, j, loop, s->body[i]);
}

/* Does a compute (or a split-K or stream-K reduction) in S read accumulator ACC? */
static bool
reads_acc(const Stmt *s, int acc)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_COMPUTE || s->kind == ST_SPLIT_REDUCE || s->kind == ST_SK_STORE || s->kind == ST_SK_REDUCE)
		for (i = 0; i < s->nreads; i++)
			if (s->reads[i].acc == acc)
				return true;
	for (i = 0; i < s->nbody; i++)
		if (reads_acc(s->body[i], acc))
			return true;
	return reads_acc(st_else(s), acc);
}

/*
 * An accumulator that LOOP (at BLOCK->body[*J]) reads while an mma from
 * before the loop may still write it: one wait before the loop, not one in
 * every iteration (an epilogue's subtiles).
 */
void
hoist_mma_wait(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop)
{
	Pend young = {0};
	bool have = false;
	int i;

	for (i = 0; i < st->n; i++) {
		const Pend *p = &st->p[i];

		if (p->a.via != VIA_MMA || !p->a.acc || !reads_acc(loop, p->a.acc))
			continue;
		if (!have || !p->committed || (young.committed && p->group > young.group)) {
			young = *p;
			have = true;
		}
	}
	if (have)
		wait_mma(y, st, block, j, young);
}

/*
 * A row buffer's copy (BUF_ROW) that every consumer thread wrote and a
 * compute in LOOP (at BLOCK->body[*J]) reads: one barrier before the loop,
 * not one a subtile.  Its copies alternate by tile, so the barrier also
 * orders the reads of the copy two tiles back before its next write
 * (lower_matmul_sync.c, stage_rows).
 */
void
hoist_row_barrier(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop)
{
	bool have = false;
	int i;

	for (i = st->n - 1; i >= 0; i--) {
		const Pend *p = &st->p[i];

		if (p->a.via != VIA_NONE || !p->a.write || p->one || !p->a.buf || y->k->buf[p->a.buf].kind != BUF_ROW ||
		    !st_reads_buf(loop, p->a.buf))
			continue;
		have = true;
		drop_pending(st, i);
	}
	if (have && !y->dry) {
		st_insert(y->c, block, *j, barrier(y->c, "the tile's row inputs in shared memory before its epilogue reads them"));
		(*j)++;
	}
}

/* Is SLOT LOOP's counter % the copies? */
static bool
counter_slot(const Stmt *loop, const Expr *slot)
{
	return slot && slot->kind == EX_MOD && slot->a->kind == EX_VAR && slot->a->var == loop->u.loop.var;
}

/* Does S, or a statement inside it, write a copy of staging buffer BUF (a compute's result) named by LOOP's counter? */
static bool
writes_copy(const Stmt *loop, const Stmt *s, int buf)
{
	int i;

	if (s->kind == ST_COMPUTE)
		for (i = 0; i < s->nwrites; i++)
			if (s->writes[i].buf == buf && counter_slot(loop, s->writes[i].slot))
				return true;
	for (i = 0; i < s->nbody; i++)
		if (writes_copy(loop, s->body[i], buf))
			return true;
	return st_else(s) && writes_copy(loop, st_else(s), buf);
}

/*
 * Does LOOP, entered again, meet the copies of staging buffer B in the order
 * it left them?  Its counter restarts at 0, so its copy counter % S
 * continues the last run's only where the run is a whole number of rings:
 * from 0 by 1 to a multiple of S.  (Then the read-waits inside, placed for
 * the copy S iterations back, serve across the runs too.)
 */
static bool
meets_in_order(const Kernel *k, const Stmt *loop, int b)
{
	int S = k->buf[b].stages;
	const struct StLoop *l = &loop->u.loop;

	return l->lo->kind == EX_INT && l->lo->ival == 0 && (!l->step || (l->step->kind == EX_INT && l->step->ival == 1)) &&
	       l->hi->kind == EX_INT && l->hi->ival % S == 0;
}

/*
 * Before LOOP (BLOCK->body[*J]), which writes the staging copies that
 * stores from an earlier run of it may still read (STATE), named by its
 * counter: where the runs do not meet the copies in order (a tile of 1, 3
 * or 5 subtiles over 2 or 4 copies writes copy 0 first again while the
 * last store reads it), the storing thread waits for every store's reads
 * and a barrier lets the writers go, once a run (the barrier already
 * before the loop, if there is one).  The analysis inside the
 * loop names copies by the counter, which a run alone does not restart.
 */
void
restart_wait(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop)
{
	Comp *c = y->c;
	const Kernel *k = y->k;
	bool need = false;
	int i;

	if (loop->u.loop.cb)
		return;
	for (i = 0; i < st->n && !need; i++) {
		const Pend *p = &st->p[i];
		const Expr *slot = p->a.slot;
		int b = p->a.buf;

		if (p->a.via != VIA_BULK || p->a.write || !b || k->buf[b].kind != BUF_STAGING ||
		    k->buf[b].preload)
			continue;   /* a carried copy's loads wait for its stores (place_preloads) */
		if (slot && !counter_slot(loop, slot))
			continue;   /* a copy named otherwise (none: the copy an outer loop's back edge left unnamed) */
		need = writes_copy(loop, loop, b) && !meets_in_order(k, loop, b);
	}
	if (!need)
		return;
	if (!y->dry) {
		/* before the barrier right before the loop, if any (a row buffer's: hoist_row_barrier) */
		int at = *j > 0 && is_barrier(block->body[*j - 1]) ? *j - 1 : *j;

		if (at == *j) {
			st_insert(c, block, at, barrier(c, "writers may reuse the staging copies"));
			(*j)++;
		}
		st_insert(c, block, at, elect_block(c, bulk_wait(c, 0, true, "the stores of the run before have read "
		                                                 "the staging copies: this one starts again at copy 0")));
		(*j)++;
	}
	retire_groups(st, VIA_BULK, st->bulk - 1, true);
}

/*
 * After a ping-pong warpgroup's k loop LOOP (at BLOCK->body[*J]): its mmas
 * done (mma.wait_group 0, which the epilogue would need anyway), and the
 * stage of the tile's last k-step released, the one release_stage leaves.
 */
void
pingpong_last(Sync *y, State *st, Stmt *block, int *j, const Stmt *loop, const Cb *outer)
{
	Comp *c = y->c;
	int S = outer->cb->stages;
	Expr *end = ex_subst(c, loop->u.loop.lin, loop->u.loop.var, loop->u.loop.hi);   /* the counter after the last k-step */
	Stmt *w = st_new(c, ST_MMA_WAIT), *next, *last;
	int at = *j + 1;

	retire_groups(st, VIA_MMA, st->mma - 1, false);
	if (y->dry)
		return;
	/*
	 * After the other warpgroup's go (warp_specialize), as CUTLASS's
	 * ping-pong does: its k loop starts while these mmas drain, and the
	 * tensor pipe has no gap between the two.
	 */
	next = at < block->nbody ? block->body[at] : NULL;
	if (next && next->kind == ST_IF && next->nbody == 1 && next->body[0]->kind == ST_SYNC &&
	    next->body[0]->u.sync.arrive_only)
		at++;
	w->u.group.pending = 0;
	w->comment = "this tile's mmas are done: the accumulator is complete, its last stage free";
	st_insert(c, block, at++, w);
	if (drains_each_step(outer->cb)) {   /* its k loop released every k-step (release_stage) */
		*j = at - 1;
		return;
	}
	last = mbar(c, ST_MBAR_ARRIVE, outer->cb->empty_bar,
	            ex_stage_slot(c, y->k, end, S - 1, S), NULL,
	            "release the tile's last k-step to the producer");
	if (ksum_rule[kernel_mm(y->k)->ksum].split_cluster) {
		/* a K-split's CTA may have no k-steps (K short): then it has no last one to release */
		Stmt *any = st_if(c, ex_bin(c, EX_LT, loop->u.loop.lo, loop->u.loop.hi));

		st_append(c, any, last);
		last = any;
	}
	st_insert(c, block, at, last);
	*j = at;
}

/* The first loop in BLOCK's body (not nested deeper) that holds a statement of KIND, or NULL. */
static Stmt *
loop_with(Stmt *block, StmtKind kind)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == ST_LOOP && st_first(block->body[i], kind))
			return block->body[i];
	return NULL;
}

/* Buffer B's copy SLOT <- its preload's subtile at (ROW, COL), on B's barrier of the copy: expect_tx, then the load. */
static void
preload_copy(Comp *c, const Kernel *k, Stmt *block, int b, Expr *slot, Expr *row, Expr *col, Pos pos)
{
	const KBuf *u = &k->buf[b];
	Stmt *tx = mbar(c, ST_EXPECT_TX, u->preload_bar, slot, NULL, NULL), *ld = st_new(c, ST_TMA_LOAD);

	tx->u.mbar.bytes = kbuf_copy(u).bytes;
	st_append(c, block, tx);
	ld->u.tma.buf = b;
	ld->u.tma.slot = slot;
	ld->u.tma.param = u->preload;
	ld->u.tma.row = row;
	ld->u.tma.col = col;
	ld->u.tma.bar = u->preload_bar;
	ld->u.tma.barslot = slot;
	ld->pos = pos;
	st_append(c, block, ld);
}

/*
 * The loads of the epilogue inputs the staging copies carry (KBuf.preload,
 * circular_buffer.c keep_preloads), issued by the consumers' thread that
 * stores, whose bulk groups say when a copy's store has read it.  The
 * tile's first S subtiles (S copies) go out at its k loop's last k-step
 * but one, after bulk.wait_group.read 0 (the tile before's stores, a k
 * loop ago, have read their copies); the others, subtile e + S - 1 at
 * subtile e (from the second), before e's store, after the same wait (the
 * store of e - 1, which read that copy, is done): S - 2 subtiles run
 * between a load and its use.  Every consumer thread waits on the copy's
 * barrier before the compute that reads it, with the parity of the copy's
 * use, i x E / S + e / S (E subtiles a tile, a multiple of S).  A copy is
 * rewritten only after its load landed, which is after the store before
 * read it: the read-wait sync places before a copy's compute otherwise is
 * never needed, and the walk finds none.  Issued any later, the loads'
 * round trip shows (docs/perf_history.md).
 */
int
place_preloads(Comp *c, Kernel *k)
{
	Stmt *roles = st_first(k->body, ST_ROLES), *tile = NULL, *kloop, *eloop, *compute, *store = NULL;
	int r, b, i, w;

	for (b = 1; b < k->nbuf && !(k->buf[b].kind == BUF_STAGING && k->buf[b].preload); b++)
		;
	if (b == k->nbuf)
		return 0;
	for (r = 0; roles && r < roles->nbody && !tile; r++)
		if (k->role[roles->body[r]->u.role.id].kind == ROLE_CONSUMER)
			tile = loop_with(roles->body[r], ST_MMA);
	if (!tile || tile->u.loop.kind != LOOP_TILE || !(kloop = loop_with(tile, ST_MMA)) ||
	    !(eloop = loop_with(tile, ST_COMPUTE)) || eloop->u.loop.hi->kind != EX_INT || eloop->u.loop.lo->kind != EX_INT ||
	    eloop->u.loop.lo->ival != 0 || !(compute = st_first(eloop, ST_COMPUTE)))
		return diag_internal(c, "sync", "staging copies carry an epilogue input, but the consumers have no tile loop "
		                     "with a k loop and an epilogue loop of whole subtiles");
	for (i = 0; i < eloop->nbody && !store; i++)
		if (eloop->body[i]->kind == ST_IF && eloop->body[i]->u.branch.cond->kind == EX_ELECT &&
		    st_first(eloop->body[i], ST_TMA_STORE))
			store = eloop->body[i];
	if (!store)
		return diag_internal(c, "sync", "an epilogue loop that carries an input has no elected store");
	{
		int64_t E = eloop->u.loop.hi->ival;
		Expr *e = ex_var(c, eloop->u.loop.var);
		Stmt *lead = st_if(c, ex_leaf(c, EX_ELECT)), *at = st_if(c, ex_bin(c, EX_EQ, ex_var(c, kloop->u.loop.var),
		                     ex_bin(c, EX_MAX, ex_bin(c, EX_SUB, kloop->u.loop.hi, ex_int(c, 2)), ex_int(c, 0))));
		Stmt *st0 = st_first(store, ST_TMA_STORE);

		at->comment = "the epilogue's first subtiles of its inputs, landing while the last k-steps run";
		st_append(c, at, bulk_wait(c, 0, true, "the tile before's stores have read their copies"));
		for (b = 1; b < k->nbuf; b++) {
			const KBuf *u = &k->buf[b];
			Expr *slot = NULL, *ahead;
			Stmt *next;
			Pos pos;
			int S = u->stages, q;

			if (u->kind != BUF_STAGING || !u->preload)
				continue;
			pos = c->fusion->tensor[k->param[u->preload].tensor].pos;   /* the input's spec line */
			for (w = 0; w < compute->nwrites; w++)
				if (compute->writes[w].buf == b)
					slot = compute->writes[w].slot;
			if (!slot || E % S || E < S)
				return diag_internal(c, "sync", "staging buffer '%s' carries an input but its %d copies do not "
				                     "divide the %lld subtiles its compute writes", u->name, S, (long long)E);
			for (q = 0; q < S; q++)
				preload_copy(c, k, at, b, ex_int(c, q), compute->u.compute.row,
				             ex_subst(c, compute->u.compute.col, eloop->u.loop.var, ex_int(c, q)), pos);
			/* subtile e's copy has landed: the copy's use i E / S + e / S, a linear count of its subtiles */
			{
				Stmt *wait = mbar(c, ST_MBAR_WAIT, u->preload_bar, slot,
				                  ex_stage_parity(c, k, ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_var(c, tile->u.loop.var),
				                                                                 ex_int(c, E)), e), S),
				                  arena_printf(c->arena, "the copy's '%s' has landed", k->param[u->preload].name));

				st_insert(c, eloop, index_of(eloop, compute), wait);
			}
			/* at subtile e >= 1, subtile e + S - 1's, into the copy e - 1's store read */
			if (E == S)
				continue;   /* the first loads were all */
			ahead = ex_bin(c, EX_ADD, e, ex_int(c, S - 1));
			next = st_if(c, ex_bin(c, EX_AND, ex_bin(c, EX_GE, e, ex_int(c, 1)), ex_bin(c, EX_LT, ahead, ex_int(c, E))));
			next->comment = "a later subtile's, into the copy the store before read";
			st_append(c, next, bulk_wait(c, 0, true, "the store before has read its copy"));
			preload_copy(c, k, next, b, ex_subst(c, slot, eloop->u.loop.var, ahead), compute->u.compute.row,
			             ex_subst(c, compute->u.compute.col, eloop->u.loop.var, ahead), pos);
			st_insert(c, store, index_of(store, st0), next);
		}
		st_append(c, lead, at);
		st_append(c, kloop, lead);
	}
	return 0;
}
