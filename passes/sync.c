/*
 * sync.c: the synchronisation of asynchronous operations, as one forward
 * analysis of their effects.  Requires circular_buffer (and
 * warp_specialize); leaves every wait, release and fence; places no load;
 * breaks nothing.
 *
 * Every access that conflicts with an asynchronous effect still pending is
 * preceded by the weakest wait that retires it, and every stage of a
 * pipeline is released where its reads complete; docs/ir.md ("The kernel
 * passes in full") lists each wait, release and fence this places.
 *
 * The analysis.  Each statement kind's effects hook (its row of
 * ir/stmts.h, read by accesses()) says which resource it touches (a buffer
 * copy, an accumulator, a global tensor), read or write, and how the access
 * completes (when the statement ends, or through an mbarrier phase, a bulk
 * group or an mma group).  One forward pass per block keeps the
 * effects still pending; a wait retires the effect it is for and every older
 * one of its kind, so later accesses need none.  A loop is its body plus a
 * back edge: the body is walked once to learn what an iteration leaves
 * pending, then again with that carried in (an effect on a copy of C stages
 * meets the same copy C iterations later), and once more, placing nothing,
 * for what the loop leaves pending after it.  The loads of a pipeline are
 * the one effect carried by protocol instead: the stage an iteration reads
 * was loaded P iterations earlier, or by the producer role, so every body of
 * a circular-buffered loop begins with that stage pending on its barrier.
 *
 * The exceptions.  What cannot yet be an effect of the table is placed by
 * name.  Before the walk, the protocols lowering and warp_specialize leave
 * as statements are expanded (sync_protocols.c, expand_protocols):
 * signal_waits and consumer_protocol (the per-tile signal to the consumer
 * role: its waits on landed[] and taken[], the role's barrier and arrive),
 * flag_wait_barriers (the barrier after an epilogue input's flag waits),
 * preload_waits (the waits of the epilogue inputs the staging copies
 * carry).  In the walk, named patterns (sync_patterns.c), each called at
 * one point: before a loop, pre_arrive (the first stages start empty),
 * hoist_mma_wait and hoist_row_barrier (one wait or barrier before the
 * loop instead of one per iteration) and restart_wait (staging copies met
 * out of order when the loop runs again); after a ping-pong warpgroup's k
 * loop, pingpong_last (its mmas done, its last stage released).  The
 * K-sums (ST_SPLIT_REDUCE, ST_SK_STORE, ST_SK_REDUCE) and ST_ROW_PUT are
 * effects of the table; the waits inside a K-sum's own protocol (its
 * cluster barriers, its flags) are its emitter's.  Whether the consumers
 * are ping-pong's it reads from the consumer role (kernel_consumer_groups),
 * not from the matmul's plan.
 */
#include "sync.h"

/* ---- the table -------------------------------------------------------- */

/* What each kind reads and writes, into OUT (stmts.h's effects column): the number of accesses. */
typedef int Effects(const Kernel *k, const Stmt *s, Acc *out);

static int
effects_none(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k, (void)s, (void)out;
	return 0;
}

static int
effects_tma_load(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k;
	out[0] = (Acc){.buf = s->u.tma.buf, .slot = s->u.tma.slot, .write = true, .via = VIA_MBAR};
	return 1;
}

/* arms the stage's barrier: the producer's first touch of the stage */
static int
effects_expect_tx(const Kernel *k, const Stmt *s, Acc *out)
{
	int n = 0, b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].full_bar == s->u.mbar.bar)
			out[n++] = (Acc){.buf = b, .slot = s->u.mbar.barslot, .write = true};
	return n;
}

static int
effects_tma_store(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k;
	out[0] = (Acc){.buf = s->u.tma.buf, .slot = s->u.tma.slot, .via = VIA_BULK};
	out[1] = (Acc){.param = s->u.tma.param, .write = true, .via = VIA_BULK};
	return 2;
}

static int
effects_mma(const Kernel *k, const Stmt *s, Acc *out)
{
	int n = 0, i;

	(void)k;
	for (i = 0; i < s->nreads; i++)
		out[n++] = (Acc){.buf = s->reads[i].buf, .slot = s->reads[i].slot, .via = VIA_MMA};
	for (i = 0; i < s->nwrites; i++)
		out[n++] = (Acc){.acc = s->writes[i].acc, .write = true, .via = VIA_MMA};
	return n;
}

/* every consumer thread writes its columns of the copy */
static int
effects_row_put(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k;
	out[0] = (Acc){.buf = s->u.row_copy.buf, .slot = s->u.row_copy.slot, .write = true};
	return 1;
}

/* every compute thread writes its elements of the copy */
static int
effects_exchange(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k;
	out[0] = (Acc){.buf = s->u.tma.buf, .slot = s->u.tma.slot, .write = true};
	return 1;
}

/* a K-split's or stream-K's meeting reads the partial sum in registers (and adds the others' to it) */
static int
effects_ksum(const Kernel *k, const Stmt *s, Acc *out)
{
	(void)k;
	out[0] = (Acc){.acc = s->reads[0].acc};
	return 1;
}

static int
effects_compute(const Kernel *k, const Stmt *s, Acc *out)
{
	int n = 0, i;

	(void)k;
	for (i = 0; i < s->nreads; i++)
		out[n++] = (Acc){.buf = s->reads[i].buf, .acc = s->reads[i].acc, .slot = s->reads[i].slot};
	for (i = 0; i < s->nwrites; i++)
		out[n++] = (Acc){.buf = s->writes[i].buf, .slot = s->writes[i].slot, .write = true};
	return n;
}

static Effects *const effects[ST_COUNT] = {
	[ST_NONE] = effects_none,
#define ST(id, name, owner, print, verify, dot, fx) [ST_##id] = effects_##fx,
#include "../ir/stmts.h"
#undef ST
};

static int
accesses(Sync *y, const Stmt *s)
{
	y->acc = arena_grow(y->c->arena, y->acc, &y->capacc, 2 + y->k->nbuf + s->nreads + s->nwrites, sizeof *y->acc);
	return effects[s->kind](y->k, s, y->acc);
}

/* ---- small builders ---------------------------------------------------- */

Stmt *
mbar(Comp *c, StmtKind kind, int bar, Expr *slot, Expr *par, const char *why)
{
	Stmt *s = st_new(c, kind);

	s->u.mbar.bar = bar;
	s->u.mbar.barslot = slot;
	s->u.mbar.parity = par;
	s->comment = why;
	return s;
}

Stmt *
elect_block(Comp *c, Stmt *inner)
{
	Stmt *s = st_if(c, ex_leaf(c, EX_ELECT));

	st_append(c, s, inner);
	return s;
}

Stmt *
bulk_wait(Comp *c, int n, bool read, const char *why)
{
	Stmt *s = st_new(c, ST_BULK_WAIT);

	s->u.group.pending = n < 0 ? 0 : n;
	s->u.group.read = read;
	s->comment = why;
	return s;
}

Stmt *
barrier(Comp *c, const char *why)
{
	Stmt *s = st_new(c, ST_SYNC);

	s->comment = why;
	return s;
}

int
index_of(const Stmt *block, const Stmt *s)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i] == s)
			return i;
	return -1;
}

/* Bulk groups committed by BLOCK's statements [0, end). */
static int
commits_before(const Stmt *block, int end)
{
	int i, n = 0;

	for (i = 0; i < end; i++) {
		const Stmt *x = block->body[i];

		if (x->kind == ST_BULK_COMMIT)
			n++;
		else if (x->kind == ST_IF)
			n += commits_before(x, x->nbody);
	}
	return n;
}

/*
 * Bulk groups the statements [0, end) of BLOCK commit when they run, loops
 * counted by their trips; -1 when a loop that commits has a trip count
 * only known at run time.
 */
static int
commits_run(const Stmt *block, int end)
{
	int i, n = 0;

	for (i = 0; i < end; i++) {
		const Stmt *x = block->body[i];
		int m;

		if (x->kind == ST_BULK_COMMIT) {
			n++;
			continue;
		}
		if (x->kind != ST_IF && x->kind != ST_BLOCK && x->kind != ST_LOOP)
			continue;
		if ((m = commits_run(x, x->nbody)) <= 0) {
			if (m < 0)
				return -1;
			continue;
		}
		if (x->kind == ST_LOOP) {
			if (x->u.loop.lo->kind != EX_INT || x->u.loop.hi->kind != EX_INT ||
			    (x->u.loop.step && x->u.loop.step->kind != EX_INT))
				return -1;
			m *= (int)((x->u.loop.hi->ival - x->u.loop.lo->ival + (x->u.loop.step ? x->u.loop.step->ival : 1) - 1) /
			           (x->u.loop.step ? x->u.loop.step->ival : 1));
		}
		n += m;
	}
	return n;
}

bool
is_barrier(const Stmt *s)
{
	return s->kind == ST_SYNC && !s->u.sync.arrive_only;   /* bar.arrive waits for nobody */
}

/* ---- the pending effects ---------------------------------------------- */

static void
push(Sync *y, State *st, Pend p)
{
	*VEC_PUSH(y->c->arena, st->p, st->n, st->cap) = p;
}

void
drop_pending(State *st, int i)
{
	st->p[i] = st->p[--st->n];
}

/* The registers of accumulator A: its own, or those it shares (KAcc.alias). */
static int
acc_regs(const Kernel *k, int a)
{
	return a && k->acc[a].alias ? k->acc[a].alias : a;
}

/* Do access A and pending effect P touch the same thing (same copy when both name one)? */
static bool
same_resource(const Kernel *k, const Acc *a, const Pend *p)
{
	if (a->acc || p->a.acc)
		return acc_regs(k, a->acc) == acc_regs(k, p->a.acc);
	if (a->param || p->a.param)
		return a->param == p->a.param;
	if (a->buf != p->a.buf)
		return false;
	if (!a->slot || !p->a.slot)
		return true;  /* a copy the analysis cannot name: assume the same */
	return ex_equal(a->slot, p->a.slot) && p->dist % k->buf[a->buf].stages == 0;
}

static void
push_stage(Sync *y, State *st, int full, Expr *slot, Expr *lin, bool producer)
{
	const CbInfo *info = kernel_pipe_of(y->k, full);
	int b;

	if (!info)
		return;
	for (b = 1; b < y->k->nbuf; b++) {
		Pend p = {0};

		if (y->k->buf[b].full_bar != full)
			continue;
		/* a consumer waits for the loads; the producer for the consumers' release */
		p.a = (Acc){.buf = b, .slot = slot, .write = !producer, .via = VIA_MBAR};
		p.id = ++y->ids;
		p.bar = producer ? info->empty_bar : full;
		p.barslot = slot;
		p.parity = ex_stage_parity(y->c, y->k, lin, info->stages);
		push(y, st, p);
	}
}

/* The fills S issues (not those of loops inside that step a counter of their own): each waits for its slot. */
static void
producer_fills(Sync *y, State *st, const Stmt *s)
{
	int i;

	for (i = 0; i < s->nbody; i++) {
		const Stmt *x = s->body[i];

		if (x->kind == ST_EXPECT_TX && x->u.mbar.lin)
			push_stage(y, st, x->u.mbar.bar, x->u.mbar.barslot, x->u.mbar.lin, true);
		else if (x->kind == ST_IF || x->kind == ST_BLOCK)
			producer_fills(y, st, x);
	}
}

/*
 * What a circular-buffered loop's body starts with pending, by protocol: the
 * stage iteration LIN reads was loaded P iterations earlier, or by the
 * producer (full[lin % S]); the slot a producer's iteration fills was read by
 * the consumers S iterations earlier (empty[lin % S], for each fill it issues).
 */
static void
stage_arrives(Sync *y, State *st, const Stmt *body, const Cb *cb)
{
	if (cb->cb->part == CB_PRODUCER)
		producer_fills(y, st, body);
	else
		push_stage(y, st, cb->cb->full_bar, ex_stage_slot(y->c, y->k, cb->lin, 0, cb->cb->stages),
		           cb->lin, false);
}

/* ---- the forward walk ------------------------------------------------- */

/* Records that AT needs a wait of KIND for effect P (one a statement); placed by place_all. */
static void
require_wait(Sync *y, Frame *fr, ReqKind kind, const Pend *p, Stmt *at)
{
	Req *r;
	int i;

	if (y->dry)
		return;
	for (i = 0; i < fr->nreq; i++) {
		r = &fr->req[i];
		if (r->kind == kind && r->at == at) {
			/* one wait serves: the youngest effect's */
			if (kind == REQ_BULK_READ && p->group - fr->bulk0 > r->group) {
				r->group = p->group - fr->bulk0;
				r->from = p->at;
				r->dist = p->dist;
			}
			return;
		}
	}
	r = VEC_PUSH(y->c->arena, fr->req, fr->nreq, fr->capreq);
	r->kind = kind;
	r->from = p->at;
	r->dist = p->dist;
	r->at = at;
	r->group = p->group - fr->bulk0;
}

/*
 * A commit of VIA's kind (bulk or mma): the effects issued since the last
 * one become one group, numbered by the path's count, which the commit
 * advances even when the group is empty (an empty group still counts for
 * wait_group N).  Returns the new group's number.
 */
static int
close_group(State *st, Via via)
{
	int *count = via == VIA_BULK ? &st->bulk : &st->mma, i;

	for (i = 0; i < st->n; i++)
		if (st->p[i].a.via == via && !st->p[i].committed) {
			st->p[i].group = *count;
			st->p[i].committed = true;
		}
	return (*count)++;
}

/* Is an effect of VIA's kind waiting for a commit? */
static bool
group_open(const State *st, Via via)
{
	int i;

	for (i = 0; i < st->n; i++)
		if (st->p[i].a.via == via && !st->p[i].committed)
			return true;
	return false;
}

/* Closes the open group of VIA's kind, if any, with a commit appended to WHERE. */
static void
commit(Sync *y, State *st, Stmt *where, Via via)
{
	if (!group_open(st, via))
		return;
	close_group(st, via);
	if (!y->dry)
		st_append(y->c, where, st_new(y->c, via == VIA_BULK ? ST_BULK_COMMIT : ST_MMA_COMMIT));
}

/* Retires every effect completing through VIA that is no younger than GROUP (reads only, if READ). */
void
retire_groups(State *st, Via via, int group, bool read)
{
	int i;

	for (i = st->n - 1; i >= 0; i--)
		if (st->p[i].a.via == via && st->p[i].committed && st->p[i].group <= group &&
		    (!read || !st->p[i].a.write))
			drop_pending(st, i);
}

/*
 * Before BLOCK->body[*J]: mma.wait_group N for pending mma effect P, N the
 * groups committed since its own (closing its group first if it is open);
 * it retires P and every older mma effect.
 */
void
wait_mma(Sync *y, State *st, Stmt *block, int *j, Pend p)
{
	Comp *c = y->c;

	if (!p.committed) {
		/* its group is still open: close it */
		if (!y->dry) {
			st_insert(c, block, *j, st_new(c, ST_MMA_COMMIT));
			(*j)++;
		}
		p.group = close_group(st, VIA_MMA);
	}
	if (!y->dry) {
		Stmt *w = st_new(c, ST_MMA_WAIT);

		w->u.group.pending = st->mma - p.group - 1;
		w->comment = "the mma results are in registers";
		st_insert(c, block, *j, w);
		(*j)++;
	}
	retire_groups(st, VIA_MMA, p.group, false);
}

/*
 * Statement S (in BLOCK at *J, or inside the top-level statement TOP of the
 * frame) makes access A.  Retires what it conflicts with, placing the wait.
 */
static void
conflict(Sync *y, Frame *fr, State *st, Stmt *block, int *j, Stmt *top, const Acc *a)
{
	Comp *c = y->c;
	int i, q, bulk = 0;
	bool mma = false, read = false;
	Pend young = {0};

	for (i = st->n - 1; i >= 0; i--) {
		Pend p = st->p[i];

		if (!same_resource(y->k, a, &p) || (!a->write && !p.a.write))
			continue;
		switch (p.a.via) {
		case VIA_MBAR:
			/* RAW on a stage's loads, or a producer's WAR on the consumers' release; a load
			   refilling the stage is ordered by the protocol itself (the release before it) */
			if (p.a.write && a->write)
				break;
			if (!y->dry) {
				st_insert(c, block, *j, mbar(c, ST_MBAR_WAIT, p.bar, p.barslot, p.parity,
				                             p.a.write ? "wait until the stage's loads have landed"
				                                       : "wait until consumers released the slot"));
				(*j)++;
			}
			for (q = st->n - 1; q >= 0; q--)
				if (st->p[q].a.via == VIA_MBAR && st->p[q].bar == p.bar && ex_equal(st->p[q].barslot, p.barslot))
					drop_pending(st, q);
			i = st->n;  /* look again: the drops moved entries */
			break;
		case VIA_MMA:
			/* mmas on one accumulator are ordered among themselves; else the youngest decides */
			if (a->via != VIA_MMA && (!mma || !p.committed || (young.committed && p.group > young.group))) {
				young = p;
				mma = true;
			}
			break;
		case VIA_BULK:
			/* a staging copy rewritten while a store may still read it (its group is closed: the
			   store sits in an issuing block that commits, or came from an earlier iteration); the
			   compute's write of a copy that carries an input follows the wait for its load, which
			   went out after the store before read it (preload_waits) */
			if (a->write && !a->param && p.committed &&
			    !(a->via == VIA_NONE && y->k->buf[a->buf].preload)) {   /* a carried input's copy: its load waited */
				require_wait(y, fr, REQ_BULK_READ, &p, top);
				if (!read || p.group > bulk)
					bulk = p.group;
				read = true;
			}
			break;
		case VIA_NONE:
			/* every thread wrote it (generic proxy), one reads it through the async proxy */
			if (!a->write && a->via != VIA_NONE && !p.one && p.a.buf &&
			    y->k->buf[p.a.buf].kind == BUF_STAGING) {
				require_wait(y, fr, REQ_FENCE, &p, top);
				drop_pending(st, i);
			}
			/* a row buffer every thread wrote, read by every thread: a barrier between (most often
			   hoisted before the epilogue loop, hoist_row_barrier) */
			if (!a->write && a->via == VIA_NONE && !p.one && p.a.buf &&
			    (y->k->buf[p.a.buf].kind == BUF_ROW || y->k->buf[p.a.buf].kind == BUF_EXCHANGE)) {
				if (!y->dry) {
					st_insert(c, block, *j, barrier(c, y->k->buf[p.a.buf].kind == BUF_ROW ?
					                                "the tile's row inputs in shared memory before its "
					                                "epilogue reads them" : "the exchanged tile in shared memory "
					                                "before the compute reads it"));
					(*j)++;
				}
				drop_pending(st, i);
			}
			break;
		}
	}
	if (read)
		retire_groups(st, VIA_BULK, bulk, true);
	if (mma)
		wait_mma(y, st, block, j, young);
}

static void walk_loop(Sync *y, Frame *fr, State *st, Stmt *block, int *j, const Cb *cb);

/*
 * Was P issued in this iteration of the frame's loop (in its block: at set,
 * dist 0)?  Effects carried from earlier iterations, or from before the
 * loop (a pipelined epilogue loop after its main loop), are older.
 */
static bool
this_iteration(const Pend *p)
{
	return p->at && p->dist == 0;
}

/*
 * Signal S (at BLOCK->body[*J], inside the frame's top-level statement
 * TOP) publishes stored tiles: their stores must have landed in global
 * memory, so the thread that committed them waits without .read (whose
 * completion makes the writes visible, PTX ISA 9.7.9.25), right before the
 * signal.  The tile before (S->flag) is every group but those this loop
 * iteration committed, which stay in flight: N is their count.  Else
 * every group: N = 0.  Nothing to wait for, no wait.
 */
static void
signal_wait(Sync *y, Frame *fr, State *st, Stmt *block, int *j, Stmt *top, const Stmt *s)
{
	int i, n = 0;
	bool pending = false;

	for (i = 0; i < st->n; i++)
		pending |= st->p[i].a.via == VIA_BULK && st->p[i].a.param && (!s->u.signal.before || !this_iteration(&st->p[i]));
	if (!pending)
		return;
	if (s->u.signal.before && fr->loop && (n = commits_run(fr->block, index_of(fr->block, top))) < 0)
		n = 0;   /* an unknown count: wait for them all */
	if (!y->dry) {
		st_insert(y->c, block, *j, bulk_wait(y->c, n, false, !s->u.signal.before ? "every store has landed" : n ?
		                                     "the tile before has landed; this tile's stores stay in flight" :
		                                     "the tile before has landed"));
		(*j)++;
	}
	for (i = st->n - 1; i >= 0; i--)
		if (st->p[i].a.via == VIA_BULK && st->p[i].committed && (!s->u.signal.before || !this_iteration(&st->p[i]) || n == 0))
			drop_pending(st, i);
}

/*
 * Walks the statements of BLOCK (a frame's block, or an if inside one whose
 * top-level statement is TOP), in order, placing waits before conflicting
 * accesses.  ONE: inside an elect() branch.
 */
static void
walk_stmts(Sync *y, Frame *fr, State *st, Stmt *block, Stmt *top, bool one, const Cb *cb)
{
	Comp *c = y->c;
	int j;

	for (j = 0; j < block->nbody && !y->err; j++) {
		Stmt *x = block->body[j];
		Stmt *t = top ? top : x;
		int n, i;

		switch (x->kind) {
		case ST_LOOP:
			walk_loop(y, fr, st, block, &j, cb);
			continue;
		case ST_IF:
			walk_stmts(y, fr, st, x, t, one || x->u.branch.cond->kind == EX_ELECT, cb);
			commit(y, st, x, VIA_BULK);  /* the stores an issuing block makes are one group */
			continue;
		case ST_BLOCK:
			walk_stmts(y, fr, st, x, t, one, cb);
			continue;
		case ST_BULK_COMMIT:
			close_group(st, VIA_BULK);
			continue;
		case ST_BULK_WAIT:
			retire_groups(st, VIA_BULK, st->bulk - 1 - (int)x->u.group.pending, x->u.group.read);
			continue;
		case ST_MMA_COMMIT:
			close_group(st, VIA_MMA);
			continue;
		case ST_MMA_WAIT:
			retire_groups(st, VIA_MMA, st->mma - 1 - (int)x->u.group.pending, false);
			continue;
		case ST_SIGNAL:
			signal_wait(y, fr, st, block, &j, t, x);
			continue;
		case ST_MBAR_WAIT:
			for (i = st->n - 1; i >= 0; i--)
				if (st->p[i].a.via == VIA_MBAR && st->p[i].bar == x->u.mbar.bar &&
				    ex_equal(st->p[i].barslot, x->u.mbar.barslot))
					drop_pending(st, i);
			continue;
		default:
			break;
		}
		n = accesses(y, x);
		for (i = 0; i < n; i++)
			conflict(y, fr, st, block, &j, t, &y->acc[i]);
		/* a chain of mmas starts with a fence: earlier register and generic writes ordered before it */
		if (x->kind == ST_MMA && !y->dry && (j == 0 || (block->body[j - 1]->kind != ST_MMA &&
		                                                block->body[j - 1]->kind != ST_MMA_FENCE))) {
			st_insert(c, block, j, st_new(c, ST_MMA_FENCE));
			j++;
		}
		if (x->kind == ST_TMA_LOAD)
			continue;  /* a pipeline's loads are pending by protocol (stage_arrives) */
		for (i = 0; i < n; i++) {
			Pend p = {0};

			if (y->acc[i].via == VIA_NONE && !(y->acc[i].write && y->acc[i].buf))
				continue;  /* only a shared-memory write by every thread stays of interest */
			if (y->acc[i].via == VIA_NONE && x->kind == ST_EXPECT_TX)
				continue;
			p.a = y->acc[i];
			p.id = ++y->ids;
			p.at = t;
			p.one = one;
				push(y, st, p);
		}
	}
}

/* ---- releases --------------------------------------------------------- */

static bool
reads_stage(const Kernel *k, const Stmt *s, int full)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].full_bar == full && st_reads_buf(s, b))
			return true;
	return false;
}

static bool
mma_reads_stage(const Kernel *k, const Stmt *s, int full)
{
	int i;

	if (s->kind == ST_MMA) {
		for (i = 0; i < s->nreads; i++)
			if (k->buf[s->reads[i].buf].full_bar == full)
				return true;
		return false;
	}
	for (i = 0; i < s->nbody; i++)
		if (mma_reads_stage(k, s->body[i], full))
			return true;
	return false;
}

/* Does pipeline INFO's mma wait in the k loop (wait_group S - 1 - P) leave no mma in flight (one stage)? */
bool
drains_each_step(const CbInfo *info)
{
	return info->stages - 1 - info->prefetch <= 0;
}

/*
 * Releases the stage BODY (an iteration of pipeline CB) read, where its reads
 * complete: after the last synchronous reader, or after the mma wait that
 * shows the reads of S - 1 - P iterations ago done.
 */
static void
release_stage(Sync *y, Stmt *body, const Cb *cb, State *st)
{
	Comp *c = y->c;
	const CbInfo *info = cb->cb;
	int S = info->stages, last = -1, j;
	bool async = false, own = kernel_consumer_groups(y->k) > 1;   /* groups that each own a tile: ping-pong */
	Stmt *rel;

	if (info->part != CB_MAIN && info->part != CB_CONSUMER)
		return;
	for (j = 0; j < body->nbody; j++) {
		Stmt *x = body->body[j];

		if (x->kind == ST_LOOP && x->u.loop.lin && !x->u.loop.cb)
			continue;  /* a loop that advances the counter releases its own stages */
		if (reads_stage(y->k, x, info->full_bar)) {
			last = j;
			async |= mma_reads_stage(y->k, x, info->full_bar);
		}
	}
	if (last < 0)
		return;
	if (async) {
		/* the group of this iteration was committed at the end of the body (walk_loop) */
		Stmt *w = st_new(c, ST_MMA_WAIT);

		w->u.group.pending = S - 1 - info->prefetch;
		w->comment = "the mma reads of the stage released next are done";
		if (!y->dry)
			st_append(c, body, w);
		retire_groups(st, VIA_MMA, st->mma - 1 - (int)w->u.group.pending, false);
		last = body->nbody - 1;
	}
	if (info->part == CB_MAIN) {
		if (!async && body->body[last]->kind == ST_COMPUTE && body->body[last]->u.compute.releases)
			return;  /* the compute's own barrier releases the stage */
		rel = barrier(c, "release the stage: the next load refills it");
	} else if (own && body->kind == ST_LOOP && !body->u.loop.cb && drains_each_step(info)) {
		/*
		 * Ping-pong whose wait above leaves no mma in flight (one stage): the
		 * k-step's own stage, now, for the producer cannot load the next
		 * k-step into it before (pingpong_last then releases nothing)
		 */
		rel = mbar(c, ST_MBAR_ARRIVE, info->empty_bar, ex_stage_slot(c, y->k, cb->lin, 0, S), NULL,
		           "release this warpgroup's k-step to the producer: its mma is done");
	} else if (own && body->kind == ST_LOOP && !body->u.loop.cb) {
		/*
		 * Ping-pong: the other warpgroup reads the stages between this one's
		 * tiles, so a warpgroup releases only its own: the k-step before
		 * (after the wait above), the tile's last after its loop (pingpong_last).
		 */
		Expr *prev = ex_stage_slot(c, y->k, cb->lin, S - 1, S);

		rel = st_if(c, ex_bin(c, EX_GE, ex_var(c, body->u.loop.var), ex_int(c, 1)));
		st_append(c, rel, mbar(c, ST_MBAR_ARRIVE, info->empty_bar, prev, NULL,
		                       "release this warpgroup's k-step before to the producer"));
	} else {
		Expr *next = ex_stage_slot(c, y->k, cb->lin, info->prefetch + 1, S);

		rel = mbar(c, ST_MBAR_ARRIVE, info->empty_bar, next, NULL, "release the oldest stage to the producer");
	}
	if (!y->dry)
		st_insert(c, body, last + 1, rel);
}

/* ---- placing what depends on barriers ---------------------------------- */

/*
 * Meets requirement R of BLOCK: the fence or the issuer's wait goes before
 * the last barrier between the effect and the access (in this iteration, or
 * the one before for a loop body); with none, before the access, with a new
 * barrier.
 */
static void
place_wait(Sync *y, Frame *fr, const Req *r)
{
	Comp *c = y->c;
	Stmt *b = fr->block;
	int at = index_of(b, r->at), from = r->from ? index_of(b, r->from) : -1, per = commits_before(b, b->nbody);
	int j, found = -1, back = 0, n;

	for (j = at - 1; j >= 0 && found < 0; j--) {
		if (r->dist == 0 && j <= from)
			break;
		if (is_barrier(b->body[j]))
			found = j;
	}
	if (found < 0 && fr->loop && r->dist >= 1 && r->from) {
		for (j = b->nbody - 1; j >= 0 && found < 0; j--) {
			if (r->dist == 1 && j <= from)
				break;
			if (is_barrier(b->body[j]))
				found = j, back = 1;
		}
	}
	if (r->kind == REQ_FENCE) {
		if (found >= 0) {
			if (found == 0 || b->body[found - 1]->kind != ST_FENCE_PROXY_ASYNC)
				st_insert(c, b, found, st_new(c, ST_FENCE_PROXY_ASYNC));
			return;
		}
		st_insert(c, b, at, barrier(c, "staging tile complete before the store reads it"));
		st_insert(c, b, at, st_new(c, ST_FENCE_PROXY_ASYNC));
		return;
	}
	if (found >= 0) {
		/* groups committed after the effect's, up to the barrier */
		n = commits_before(b, found) - back * per - r->group - 1;
		st_insert(c, b, found, elect_block(c, bulk_wait(c, n, true,
		          back ? "the staging copy the next tile writes has been read"
		               : "the staging copy about to be written has been read")));
		return;
	}
	n = commits_before(b, at) - r->group - 1;
	st_insert(c, b, at, barrier(c, "writers may reuse the staging copy"));
	st_insert(c, b, at, elect_block(c, bulk_wait(c, n, true, "the staging copy about to be written has been read")));
}

static void
place_all(Sync *y, Frame *fr)
{
	int i;

	if (y->dry)
		return;
	for (i = 0; i < fr->nreq; i++)
		if (fr->req[i].kind == REQ_FENCE)
			place_wait(y, fr, &fr->req[i]);
	for (i = 0; i < fr->nreq; i++)
		if (fr->req[i].kind == REQ_BULK_READ)
			place_wait(y, fr, &fr->req[i]);
}

/* ---- blocks and loops ------------------------------------------------- */

/* Walks BLOCK, not a loop body, as a frame of its own. */
static void
walk_block(Sync *y, Stmt *block, State *st)
{
	Frame *fr = arena_alloc(y->c->arena, sizeof *fr);

	fr->block = block;
	fr->bulk0 = st->bulk;
	walk_stmts(y, fr, st, block, NULL, false, NULL);
	place_all(y, fr);
}

/* Moves STATE's effects into a loop body's frame: issued before it; DIST iterations back. */
static void
enter_body(State *st, int dist)
{
	int i;

	for (i = 0; i < st->n; i++) {
		st->p[i].at = NULL;
		st->p[i].dist = dist;
	}
}

/*
 * What an iteration of BODY left pending (END, after starting from ENTRY),
 * carried into the next: each to the iteration where it meets its copy again.
 */
static void
carry_back_edge(Sync *y, State *into, const State *end, const State *entry, int per_bulk, int per_mma)
{
	int i, q;

	for (i = 0; i < end->n; i++) {
		Pend p = end->p[i];
		int d = p.dist + 1, copies = 1;
		bool outside = false;

		for (q = 0; q < entry->n; q++)
			outside |= entry->p[q].id == p.id;
		if (outside || p.a.via == VIA_MBAR || p.a.via == VIA_NONE)
			continue;
		if (p.a.buf && p.a.slot)
			copies = y->k->buf[p.a.buf].stages;
		d = (d + copies - 1) / copies * copies;
		if (p.committed)
			p.group -= (d - p.dist) * (p.a.via == VIA_BULK ? per_bulk : per_mma);
		p.dist = d;
		push(y, into, p);
	}
}

/* After a loop: its effects were issued by the loop statement; names of copies no longer apply. */
static void
leave_loop(State *st, const State *outer, Stmt *loop)
{
	int i, q;

	for (i = 0; i < st->n; i++) {
		Pend *p = &st->p[i];
		bool found = false;

		for (q = 0; q < outer->n && !found; q++)
			if (outer->p[q].id == p->id) {
				p->at = outer->p[q].at;
				p->dist = outer->p[q].dist;
				found = true;
			}
		if (!found) {
			p->at = loop;
			p->dist = 0;
		}
	}
}

static void
copy_state(Comp *c, State *to, const State *from)
{
	int i;

	if (to->cap < from->n)
		to->p = arena_grow(c->arena, to->p, &to->cap, from->n, sizeof *to->p);
	to->n = from->n;
	to->bulk = from->bulk;
	to->mma = from->mma;
	for (i = 0; i < from->n; i++)
		to->p[i] = from->p[i];
}

static bool
advances_counter(const Stmt *body)
{
	int i;

	for (i = 0; i < body->nbody; i++)
		if (body->body[i]->kind == ST_LOOP && body->body[i]->u.loop.lin && !body->body[i]->u.loop.cb)
			return true;
	return false;
}

static void
walk_body(Sync *y, Stmt *loop, State *st, const Cb *cb)
{
	Frame *fr = arena_alloc(y->c->arena, sizeof *fr);
	int mine;

	fr->block = loop;
	fr->loop = true;
	fr->bulk0 = st->bulk;
	mine = y->ids;
	if (cb && (cb->cb->part == CB_PRODUCER || !advances_counter(loop)))
		stage_arrives(y, st, loop, cb);
	walk_stmts(y, fr, st, loop, NULL, false, cb);
	commit(y, st, loop, VIA_MMA);  /* the mmas of a mainloop body are one group */
	if (cb) {
		int i;

		release_stage(y, loop, cb, st);
		/* this iteration's stages are done with (a stage nobody read needs no wait) */
		for (i = st->n - 1; i >= 0; i--)
			if (st->p[i].a.via == VIA_MBAR && st->p[i].id > mine)
				drop_pending(st, i);
	}
	place_all(y, fr);
}

/*
 * The loop at BLOCK->body[*J]: walked with its back edge (see the file
 * comment), its waits placed; STATE becomes what it leaves pending.
 */
static void
walk_loop(Sync *y, Frame *fr, State *st, Stmt *block, int *j, const Cb *outer)
{
	Comp *c = y->c;
	Stmt *loop = block->body[*j];
	State *entry = arena_alloc(c->arena, sizeof *entry), *run = arena_alloc(c->arena, sizeof *run);
	Cb here = {0}, *cb = NULL;
	bool was_dry = y->dry;
	int per_bulk, per_mma;

	if (loop->u.loop.cb && loop->u.loop.cb->part != CB_PROLOGUE) {
		here.cb = loop->u.loop.cb;
		here.lin = loop->u.loop.lin ? loop->u.loop.lin : ex_var(c, loop->u.loop.var);
		cb = &here;
	} else if (outer && loop->u.loop.lin) {
		/* an inner loop that advances the stage counter consumes a stage each iteration */
		here.cb = outer->cb;
		here.lin = loop->u.loop.lin;
		cb = &here;
	}
	if (cb && loop->u.loop.cb && loop->u.loop.cb->part == CB_CONSUMER && !loop->u.loop.cb->inner && !y->dry)
		pre_arrive(y, block, j, loop, loop);
	hoist_mma_wait(y, st, block, j, loop);
	hoist_row_barrier(y, st, block, j, loop);
	restart_wait(y, st, block, j, loop);

	/* the effects from before the loop: a loop that continues the last one's counter meets them one iteration on */
	copy_state(c, entry, st);
	enter_body(entry, 0);
	for (int i = 0; i < entry->n; i++)
		if (entry->p[i].a.via == VIA_MBAR)
			continue;  /* named by the stage counter: the same in any loop */
		else if (entry->p[i].a.slot && !(loop->u.loop.cb && loop->u.loop.cb->part == CB_EPILOGUE))
			entry->p[i].a.slot = NULL;
		else if (entry->p[i].a.slot)
			entry->p[i].dist = 1;

	/* once to learn what an iteration leaves pending */
	copy_state(c, run, entry);
	y->dry = true;
	walk_body(y, loop, run, cb);
	per_bulk = run->bulk - entry->bulk;
	per_mma = run->mma - entry->mma;
	{
		State *next = arena_alloc(c->arena, sizeof *next);

		copy_state(c, next, entry);
		carry_back_edge(y, next, run, entry, per_bulk, per_mma);
		/* again, placing, with that carried in; then, placing nothing, for what the loop leaves */
		y->dry = was_dry;
		copy_state(c, run, next);
		walk_body(y, loop, run, cb);
		copy_state(c, run, next);
		y->dry = true;
		walk_body(y, loop, run, cb);
		y->dry = was_dry;
	}
	leave_loop(run, st, loop);
	run->bulk = st->bulk + per_bulk;
	run->mma = st->mma + per_mma;
	copy_state(c, st, run);
	if (kernel_consumer_groups(y->k) > 1 && outer && loop->u.loop.lin && !loop->u.loop.cb && outer->cb->part == CB_CONSUMER)
		pingpong_last(y, st, block, j, loop, outer);

	/* an epilogue whose pipeline runs again: its prologue refills the stages the epilogue read */
	if (loop->u.loop.cb && loop->u.loop.cb->part == CB_EPILOGUE && fr->loop && !y->dry) {
		st_insert(c, block, *j + 1, barrier(c, "release the last stages: the next prologue refills them"));
		(*j)++;
	}
}

/* The stored data must be in global memory before the kernel (or role) ends: one full wait. */
static void
wait_stores_at_end(Sync *y, Stmt *block, State *st)
{
	int i;
	bool stores = false;

	for (i = 0; i < st->n; i++)
		stores |= st->p[i].a.via == VIA_BULK && st->p[i].a.param;
	if (stores)
		st_append(y->c, block, elect_block(y->c, bulk_wait(y->c, 0, false, "every store has landed")));
}

/*
 * The kernel body, or each role's branch of it, is a frame; a warpgroup's
 * branch that holds its warps' roles (ROLE_GROUP) is walked into.
 */
static void
walk_top(Sync *y, Stmt *block, State *st)
{
	int j;

	for (j = 0; j < block->nbody; j++)
		if (block->body[j]->kind == ST_ROLES) {
			Stmt *roles = block->body[j];

			for (int r = 0; r < roles->nbody; r++) {
				State *mine = arena_alloc(y->c->arena, sizeof *mine);

				copy_state(y->c, mine, st);
				walk_top(y, roles->body[r], mine);
			}
			return;  /* nothing runs after the roles */
		}
	walk_block(y, block, st);
	wait_stores_at_end(y, block, st);
}

/* requires circular_buffer and warp_specialize; leaves the kernel synchronised, ready to emit */
int
pass_sync(Comp *c)
{
	Sync y = {.c = c, .k = c->kernel};
	State *st = arena_alloc(c->arena, sizeof *st);

	if (expand_protocols(c, c->kernel))
		return -1;
	walk_top(&y, c->kernel->body, st);
	if (y.err)
		return -1;
	ws_name_barriers(c, c->kernel, c->kernel->body, 0);
	return 0;
}
