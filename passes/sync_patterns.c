/*
 * sync_patterns.c: the exceptions to sync.c's analysis, each a pattern the
 * walk calls at a fixed point (sync.c's contract names them): requires what
 * sync.c's walk requires, leaves the waits and arrivals each places.
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
			continue;   /* a carried copy's loads wait for its stores (preload_waits) */
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
