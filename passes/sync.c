/*
 * sync.c: the synchronisation the async operations need, derived from the
 * buffer accesses and the circular-buffer info, not from fixed positions.
 *
 * Contract.  Requires: circular_buffer.c (and warp_specialize.c when used)
 * ran.  Guarantees, for every circular-buffered loop with index i, S stages
 * and prefetch P:
 *   RAW   a wait on full[i % S] with parity (i / S) & 1 right before the first
 *         statement of the body that reads a buffer filled through full[];
 *         one wait per barrier, not per tensor (all a stage's loads complete
 *         on the same barrier);
 *   WAR   right after the last such reader, the stage is released: in a plain
 *         main loop by a CTA barrier (the next iteration's load reuses the
 *         slot this one read), unless the last reader is a compute that
 *         reads its stages only before a barrier of its own (a row held in
 *         registers: its first block reduction); in a consumer loop by an arrive on
 *         empty[(i + P + 1) % S], after P + 1 arrivals made before the loop;
 *         the producer waits on empty[i % S] with parity (i / S) & 1 before
 *         it refills a slot.  An epilogue loop, which loads nothing, releases
 *         nothing inside; when the pipeline sits in another loop (its
 *         prologue runs again), one CTA barrier after the epilogue releases
 *         the stages it read.
 * TMA stores from staging buffers get the proxy fence, barriers, commit and
 * read-waits of sync_stores() below, and the kernel one full bulk wait at
 * its end.  Barriers inside warp-specialized roles are named barriers sized
 * to the branch.  Invalidates: nothing.
 */
#include "passes.h"

typedef struct Sync {
	Comp *c;
	Kernel *k;
} Sync;

static Expr *
parity(Comp *c, Expr *i, int S)
{
	return ex_bin(c, EX_AND, ex_bin(c, EX_DIV, i, ex_int(c, S)), ex_int(c, 1));
}

static bool
reads_stage(const Kernel *k, const Stmt *s, int full)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].full_bar == full && st_reads_buf(s, b))
			return true;
	return false;
}

static Stmt *
mbar(Comp *c, StmtKind kind, int bar, Expr *slot, Expr *par)
{
	Stmt *s = st_new(c, kind);

	s->bar = bar;
	s->barslot = slot;
	s->a = par;
	return s;
}

/*
 * In BODY, whose iterations consume stage LIN: a RAW wait before the first
 * statement that reads the stage and a WAR release after the last.  A loop
 * that advances the stage counter consumes a stage per iteration: the wait
 * and release go inside it instead.
 */
static void
sync_stage_body(Sync *y, const CbInfo *cb, Stmt *body, Expr *lin)
{
	Comp *c = y->c;
	int S = cb->stages, first = -1, last = -1, j;
	Stmt *w;

	for (j = 0; j < body->nbody; j++) {
		Stmt *x = body->body[j];

		if (x->kind == ST_LOOP && x->lin) {
			sync_stage_body(y, cb, x, x->lin);
		} else if (reads_stage(y->k, x, cb->full_bar)) {
			if (first < 0)
				first = j;
			last = j;
		}
	}
	if (first < 0)
		return;
	if (cb->part == CB_MAIN && body->body[last]->kind == ST_COMPUTE && body->body[last]->flag) {
		/* the compute's own barrier releases the stage */
	} else if (cb->part == CB_MAIN) {
		Stmt *s = st_new(c, ST_SYNC);

		s->comment = "release the stage: the next load refills it";
		st_insert(c, body, last + 1, s);
	} else if (cb->part == CB_CONSUMER) {
		Expr *next = ex_bin(c, EX_MOD, ex_bin(c, EX_ADD, lin, ex_int(c, cb->prefetch + 1)), ex_int(c, S));
		Stmt *arr = mbar(c, ST_MBAR_ARRIVE, cb->empty_bar, next, NULL);

		arr->comment = "release the oldest stage to the producer";
		st_insert(c, body, last + 1, arr);
	}
	w = mbar(c, ST_MBAR_WAIT, cb->full_bar, ex_bin(c, EX_MOD, lin, ex_int(c, S)), parity(c, lin, S));
	w->comment = "wait until the stage's loads have landed";
	st_insert(c, body, first, w);
}

/* The waits and releases of a loop that computes from stages; consumers pre-arrive. */
static void
sync_compute_loop(Sync *y, Stmt *loop, Stmt *parent, int index)
{
	Comp *c = y->c;
	CbInfo *cb = loop->cb;

	sync_stage_body(y, cb, loop, loop->lin ? loop->lin : ex_var(c, loop->var));
	if (cb->part == CB_CONSUMER) {
		int kv = kernel_add_var(c, y->k, "s");
		Stmt *pre = st_loop(c, kv, ex_int(c, 0), ex_int(c, cb->prefetch + 1), LOOP_SERIAL);

		pre->comment = "the first P + 1 stages start empty";
		st_append(c, pre, mbar(c, ST_MBAR_ARRIVE, cb->empty_bar, ex_var(c, kv), NULL));
		st_insert(c, parent, index, pre);
	}
}

/* The producer waits for a free slot before each refill of stage LIN. */
static void
sync_producer(Sync *y, const CbInfo *cb, Stmt *s, Expr *lin)
{
	Comp *c = y->c;
	int j;

	for (j = 0; j < s->nbody; j++) {
		Stmt *x = s->body[j];

		if (x->kind == ST_EXPECT_TX) {
			Stmt *w = mbar(c, ST_MBAR_WAIT, cb->empty_bar, ex_bin(c, EX_MOD, lin, ex_int(c, cb->stages)),
			               parity(c, lin, cb->stages));

			w->comment = "wait until consumers released the slot";
			st_insert(c, s, j, w);
			j++;
		} else {
			sync_producer(y, cb, x, x->kind == ST_LOOP && x->lin ? x->lin : lin);
		}
	}
}

/* S is inside LOOPS loops (S itself counted when it is one). */
static void
walk(Sync *y, Stmt *s, int loops)
{
	int j;

	if (!s)
		return;
	for (j = 0; j < s->nbody; j++) {
		Stmt *x = s->body[j];

		if (x->kind == ST_LOOP && x->cb) {
			switch (x->cb->part) {
			case CB_MAIN:
			case CB_EPILOGUE:
			case CB_CONSUMER: {
				int before = s->nbody;

				sync_compute_loop(y, x, s, j);
				j += s->nbody - before; /* skip what was inserted before the loop */
				if (x->cb->part == CB_EPILOGUE && loops > 0) {
					/* the pipeline runs again: its prologue refills the stages the epilogue read */
					Stmt *rel = st_new(y->c, ST_SYNC);

					rel->comment = "release the last stages: the next prologue refills them";
					st_insert(y->c, s, j + 1, rel);
				}
				break;
			}
			case CB_PRODUCER:
				sync_producer(y, x->cb, x, x->lin ? x->lin : ex_var(y->c, x->var));
				break;
			default:
				break;
			}
		}
		walk(y, x, loops + (x->kind == ST_LOOP));
	}
	walk(y, s->orelse, loops);
}

static Stmt *
elect_block(Comp *c, Stmt *inner)
{
	Stmt *s = st_if(c, ex_leaf(c, EX_ELECT));

	st_append(c, s, inner);
	return s;
}

static Stmt *
bulk_wait(Comp *c, int n, bool read, const char *why)
{
	Stmt *s = st_new(c, ST_BULK_WAIT);

	s->n = n < 0 ? 0 : n;
	s->flag = read;
	s->comment = why;
	return s;
}

/* The index of the first statement of BODY before END that writes a buffer X stores. */
static int
first_writer(const Stmt *body, int end, const Stmt *x)
{
	int j, i;

	for (j = 0; j < end; j++)
		for (i = 0; i < x->nbody; i++)
			if (x->body[i]->kind == ST_TMA_STORE && st_writes_buf(body->body[j], x->body[i]->buf))
				return j;
	return -1;
}

static bool
issues_stores(const Stmt *x)
{
	return x->kind == ST_IF && x->nbody && x->body[0]->kind == ST_TMA_STORE;
}

/*
 * TMA stores from staging buffers of NB copies written by compute:
 *   RAW  the writers' generic stores must reach the async proxy: a
 *        fence.proxy.async by every writer, then a barrier, then the store;
 *   WAR  a copy is rewritten NB iterations later: before that, the issuing
 *        thread waits with bulk.wait_group.read until at most NB - 1 stores are
 *        pending (their sources read; the global writes may still be on their
 *        way), then a barrier tells the writers.
 * A CTA barrier already between the writer and the store (the stage release
 * of a plain main loop) serves as the RAW barrier: the fence goes before it.
 * With NB >= 2 copies it serves the WAR side too: the wait goes before it, and
 * since this tile's store is not issued yet, it allows NB - 2.  The commit
 * follows the stores in the issuing thread.  Returns whether BODY (or
 * anything in it) stores.
 */
static bool
sync_stores(Sync *y, Stmt *body, CbPart part)
{
	Comp *c = y->c;
	bool any = false;
	int j;

	for (j = 0; j < body->nbody; j++) {
		Stmt *x = body->body[j];
		int w, rel = -1, nb, r;

		if (!issues_stores(x)) {
			if (x->nbody || x->orelse) {
				CbPart inner = x->kind == ST_LOOP && x->cb ? x->cb->part : part;

				any |= sync_stores(y, x, inner);
				if (x->orelse)
					any |= sync_stores(y, x->orelse, inner);
			}
			continue;
		}
		any = true;
		st_append(c, x, st_new(c, ST_BULK_COMMIT));
		if ((w = first_writer(body, j, x)) < 0)
			continue;
		nb = y->k->buf[x->body[0]->buf].stages;
		/* a CTA barrier already between the writer and the store (a stage release) */
		for (r = w + 1; r < j && rel < 0; r++)
			if (body->body[r]->kind == ST_SYNC && body->body[r]->n == 0)
				rel = r;
		if (rel >= 0 && nb >= 2) {
			/* it serves both: this tile's store is not issued yet, so NB - 2 may be pending */
			st_insert(c, body, rel, elect_block(c, bulk_wait(c, nb - 2, true,
			          "the staging copy the next tile writes has been read")));
			st_insert(c, body, rel, st_new(c, ST_FENCE_PROXY_ASYNC));
			j += 2;
			continue;
		}
		if (rel >= 0) {
			st_insert(c, body, rel, st_new(c, ST_FENCE_PROXY_ASYNC));
			j++;
		} else {
			Stmt *raw = st_new(c, ST_SYNC);

			raw->comment = "staging tile complete before the store reads it";
			st_insert(c, body, j, raw);
			st_insert(c, body, j, st_new(c, ST_FENCE_PROXY_ASYNC));
			j += 2;
		}
		{
			Stmt *war = st_new(c, ST_SYNC);

			war->comment = "writers may reuse the staging copy";
			st_insert(c, body, w, war);
			st_insert(c, body, w, elect_block(c, bulk_wait(c, nb - 1, true,
			          "the staging copy about to be written has been read")));
			j += 2;
		}
	}
	return any;
}

/* The stored data must be in global memory before the kernel ends: one full wait. */
static void
finish_stores(Sync *y)
{
	Comp *c = y->c;
	Stmt *end = y->k->body;
	int j;

	for (j = 0; j < end->nbody; j++)
		if (end->body[j]->kind == ST_ROLES)
			end = end->body[j]->orelse;
	st_append(c, end, elect_block(c, bulk_wait(c, 0, false, "every store has landed")));
}

int
pass_sync(Comp *c)
{
	Sync y = {c, c->kernel};

	walk(&y, c->kernel->body, 0);
	if (sync_stores(&y, c->kernel->body, CB_NONE))
		finish_stores(&y);
	ws_name_barriers(c->kernel, c->kernel->body, false);
	return 0;
}
