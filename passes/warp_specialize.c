/*
 * warp_specialize.c: requires circular_buffer; leaves the marked loop split
 * into ST_ROLES (nothing for a kernel not warp-specialized), and the loads
 * of the epilogue inputs the staging copies carry issued by the consumers'
 * storing thread (issue_preloads; sync places their waits); breaks nothing.
 *
 * Splits the circular-buffered loop into a producer sub-loop (TMA issue
 * only) and a consumer sub-loop (everything else), one branch per role of
 * the kernel's role table.  The producer (threads after the consumers')
 * gets the loop's load slice, the consumer (threads [0, consumer_threads),
 * named barrier 1) the loop without its loads and what followed it; both
 * count stages with the same linear counter, so slot and parity agree.
 * The consumer role takes the consumer order (KRole.groups, turn_bar:
 * ping-pong's warpgroups each own a tile), which later passes read there.
 * docs/ir.md ("The kernel passes in full") says what each side holds
 * (merged loops, elect_producer, ping-pong, setmaxnreg, the signal role).
 */
#include "passes.h"

/*
 * Ping-pong's turn barriers (KRole.turn_bar: 3, 4), past the consumer
 * groups' own (1 and 2), and the signal role's named barrier past them.
 */
enum { PINGPONG_TURN_BAR = 3, SIGNAL_ROLE_BAR = 5 };

typedef struct Where {
	Stmt *parent;
	int index;
} Where;

static void
find_ws_loop(Stmt *s, Where *w)
{
	int i;

	for (i = 0; s && i < s->nbody && !w->parent; i++) {
		Stmt *x = s->body[i];

		if (x->kind == ST_LOOP && x->u.loop.cb && x->u.loop.cb->warp_specialized && x->u.loop.cb->part == CB_NONE) {
			w->parent = s;
			w->index = i;
			return;
		}
		find_ws_loop(x, w);
	}
}

void
ws_name_barriers(Comp *c, const Kernel *k, Stmt *s, int role)
{
	int j;

	if (!s)
		return;
	if (s->kind == ST_SYNC && role && s->u.sync.id == 0) {
		s->u.sync.id = k->role[role].bar_id;
		s->u.sync.threads = k->role[role].threads;
		if (k->role[role].groups > 1) {
			/* each group (a warpgroup) its own: bar_id + wg over its threads (ids 1 and 2) */
			s->u.sync.id_expr = ex_bin(c, EX_ADD, ex_int(c, s->u.sync.id), ex_leaf(c, EX_WG));
			s->u.sync.threads = k->role[role].threads / k->role[role].groups;
		}
	}
	if (s->kind == ST_ROLE)
		role = s->u.role.id;
	for (j = 0; j < s->nbody; j++)
		ws_name_barriers(c, k, s->body[j], role);
	ws_name_barriers(c, k, st_else(s), role);
}

/* ---- the load slice ----------------------------------------------------- */

static void
mark_vars(const Expr *e, bool *used)
{
	if (!e)
		return;
	if (e->kind == EX_VAR)
		used[e->var] = true;
	mark_vars(e->a, used);
	mark_vars(e->b, used);
}

/* The variables statement S itself uses (not those of its body). */
static void
mark_stmt(const Stmt *s, bool *used)
{
	Expr **x[ST_MAX_EXPRS];
	int i, n = st_exprs((Stmt *)s, x);

	for (i = 0; i < n; i++)   /* (a loop's includes the stage counter lowering gave: stream-K's kbase) */
		if (!(s->kind == ST_TMA_LOAD && x[i] == &s->u.tma.mcast) && !(s->kind == ST_COMPUTE && x[i] == &s->u.compute.pass))
			mark_vars(*x[i], used);
}

/*
 * A copy of what in S issues loads: the loads and their expect_tx, the ifs
 * and loops that hold them, and (walking back) the lets whose variables those
 * use; NULL when S issues none.  USED collects the variables the copy needs.
 */
static Stmt *
slice(Comp *c, const Stmt *s, bool *used)
{
	Stmt *r;
	int i, n = 0;
	Stmt **kept;

	if (s->kind == ST_TMA_LOAD || s->kind == ST_EXPECT_TX || s->kind == ST_TMA_PREFETCH ||
	    (s->kind == ST_FLAG_WAIT && s->u.flag_wait.producer)) {
		mark_stmt(s, used);   /* (a wait for an operand's rows, and an epilogue input's prefetch, go with the loads) */
		return st_clone(c, s, 0, NULL);
	}
	if (!kir_has_load(s) || (s->kind != ST_IF && s->kind != ST_LOOP && s->kind != ST_BLOCK))
		return NULL;
	kept = arena_alloc(c->arena, (size_t)s->nbody * sizeof *kept);
	for (i = s->nbody - 1; i >= 0; i--) {
		const Stmt *x = s->body[i];
		Stmt *y = NULL;

		if (x->kind == ST_LET) {
			if (used[x->u.let.var]) {
				y = st_clone(c, x, 0, NULL);
				mark_vars(x->u.let.value, used);
			}
		} else {
			y = slice(c, x, used);
		}
		if (y)
			kept[n++] = y;
	}
	r = st_new(c, s->kind);
	*r = *s;
	r->body = NULL;
	r->nbody = r->capbody = 0;
	if (s->kind == ST_IF)
		r->u.branch.orelse = NULL;  /* no load sits in an else: lowering issues loads under elect() alone */
	if (s->kind == ST_LOOP && s->u.loop.cb) {
		r->u.loop.cb = arena_alloc(c->arena, sizeof *r->u.loop.cb);
		*r->u.loop.cb = *s->u.loop.cb;
	}
	while (n > 0)
		st_append(c, r, kept[--n]);
	mark_stmt(s, used);
	return r;
}

Stmt *
ws_load_slice(Comp *c, const Kernel *k, const Stmt *loop)
{
	bool *used = arena_alloc(c->arena, (size_t)k->nvar * sizeof *used);

	return slice(c, loop, used);
}

/*
 * LOOP's slice is tile { [per-tile loads;] for kk in [0, K) { loads } } with
 * the inner loop advancing the stage counter: one loop over q in [0, T * K),
 * t = q / K, kk = q % K, the per-tile loads under kk == 0.  Else LOOP.
 */
static Stmt *
merge_loops(Comp *c, Kernel *k, Stmt *loop)
{
	Stmt *inner = NULL, *m, *first;
	Expr *q, *t, *kk;
	int i, v;

	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];

		if (x->kind == ST_LOOP && x->u.loop.lin) {
			if (inner)
				return loop;  /* two inner loops: nothing to merge into one */
			inner = x;
		}
	}
	if (!inner || inner->u.loop.lo->kind != EX_INT || inner->u.loop.lo->ival != 0 || loop->u.loop.lo->kind != EX_INT ||
	    loop->u.loop.lo->ival != 0 || ex_uses_var(inner->u.loop.hi, loop->u.loop.var))
		return loop;
	for (i = 0; i < loop->nbody; i++)   /* a trip count of the tile's (stream-K's parts): no fixed K to merge by */
		if (loop->body[i]->kind == ST_LET && ex_uses_var(inner->u.loop.hi, loop->body[i]->u.let.var))
			return loop;
	v = kernel_add_var(c, k, "q");
	q = ex_var(c, v);
	t = ex_bin(c, EX_DIV, q, inner->u.loop.hi);
	kk = ex_bin(c, EX_MOD, q, inner->u.loop.hi);
	m = st_loop(c, v, ex_int(c, 0), ex_bin(c, EX_MUL, loop->u.loop.hi, inner->u.loop.hi), LOOP_SERIAL);
	/* the merged loop steps the inner pipeline; a per-tile one's fills carry their own counter (t) */
	m->u.loop.cb = inner->u.loop.cb ? inner->u.loop.cb : loop->u.loop.cb;
	m->u.loop.lin = q;
	m->comment = loop->comment;
	first = st_if(c, ex_bin(c, EX_EQ, kk, ex_int(c, 0)));
	first->comment = "a tile's own loads, with its first k-step";
	for (i = 0; i < loop->nbody; i++) {
		Stmt *x = loop->body[i];
		Stmt *y;

		if (x == inner) {
			for (int j = 0; j < inner->nbody; j++) {
				y = st_clone(c, inner->body[j], loop->u.loop.var, t);
				st_append(c, m, st_clone(c, y, inner->u.loop.var, kk));
			}
			continue;
		}
		y = st_clone(c, x, loop->u.loop.var, t);
		if (x->kind == ST_LET)
			st_append(c, m, y);
		else
			st_append(c, first, y);
	}
	if (first->nbody) {
		/* the per-tile loads go before the k-step's, after the lets they use */
		int at = 0;

		while (at < m->nbody && m->body[at]->kind == ST_LET)
			at++;
		st_insert(c, m, at, first);
	}
	return m;
}

/*
 * Does all that S's body does lie under elect(): lets, elect() branches, and
 * loops and ifs whose own bodies do the same?  (An else, or any other
 * statement, runs in every thread: no.)
 */
static bool
only_elected(const Stmt *s)
{
	int i;

	for (i = 0; i < s->nbody; i++) {
		const Stmt *x = s->body[i];

		if (x->kind == ST_LET)
			continue;
		if (x->kind == ST_IF && x->u.branch.orelse)
			return false;
		if (x->kind == ST_IF && x->u.branch.cond->kind == EX_ELECT)
			continue;
		if ((x->kind != ST_LOOP && x->kind != ST_IF && x->kind != ST_BLOCK) || !only_elected(x))
			return false;
	}
	return true;
}

/* S's body with each elect() branch in it replaced by that branch's statements. */
static void
unelect(Comp *c, Stmt *s)
{
	Stmt **body = s->body;
	int i, j, n = s->nbody;

	s->body = NULL;
	s->nbody = s->capbody = 0;
	for (i = 0; i < n; i++) {
		Stmt *x = body[i];

		if (x->kind == ST_IF && x->u.branch.cond->kind == EX_ELECT) {
			for (j = 0; j < x->nbody; j++)
				st_append(c, s, x->body[j]);
			continue;
		}
		if (x->kind == ST_LOOP || x->kind == ST_IF || x->kind == ST_BLOCK)
			unelect(c, x);
		st_append(c, s, x);
	}
}

/*
 * The producer nest PRODUCER, whose loads lowering put under elect() one
 * k-step at a time, under one elect() as a whole where lowering asks for it
 * (MatmulPlan.elect_nest: a matmul whose CTAs take several tiles each) and all
 * the nest does is elected.  Else the threads of the producer role run the
 * loops with nothing to do, and those of the electing thread's warp may
 * diverge from it: while the thread waits for a stage to empty, the other
 * 31 run on through every iteration of the nest, and the thread issues its
 * next load only when they are done (plan_matmul.c many_tiles).  The
 * other families keep the nest as it is (not measured).
 */
static Stmt *
elect_producer(Comp *c, const Kernel *k, Stmt *producer)
{
	Stmt *one;

	if (!kernel_mm(k)->elect_nest || !only_elected(producer))
		return producer;
	unelect(c, producer);
	one = st_if(c, ex_leaf(c, EX_ELECT));
	one->comment = "one thread issues every load";
	st_append(c, one, producer);
	return one;
}

/* Marks every pipeline's loop in S as PART of a role. */
static void
set_part(Stmt *s, CbPart part)
{
	int i;

	if (s->kind == ST_LOOP && s->u.loop.cb)
		s->u.loop.cb->part = part;
	for (i = 0; i < s->nbody; i++)
		set_part(s->body[i], part);
	if (st_else(s))
		set_part(st_else(s), part);
}

/*
 * The consumers of role R in groups that each own a tile (ping-pong, two
 * warpgroups): warpgroup wg takes the tiles wg, wg + 2, ... of the loop
 * LOOP, and their k loops take turns on the tensor cores, ordered by named
 * barriers R's turn_bar and the next (3 and 4, each all R's threads: one
 * warpgroup waits, the other arrives): a warpgroup waits for the other's k
 * loop before its own (but on the CTA's first tile), and lets it go after
 * (but on its last), so the epilogue of one overlaps the k loop of the
 * other.
 */
static void
pingpong_consumer(Comp *c, const KRole *r, Stmt *loop)
{
	Expr *i = ex_var(c, loop->u.loop.var), *wg = ex_leaf(c, EX_WG);
	int j;

	loop->u.loop.lo = wg;
	loop->u.loop.step = ex_int(c, r->groups);
	for (j = 0; j < loop->nbody; j++) {
		Stmt *kl = loop->body[j], *wait, *go, *s;

		if (kl->kind != ST_LOOP || !kl->u.loop.lin)
			continue;
		wait = st_if(c, ex_bin(c, EX_GE, i, ex_int(c, 1)));
		s = st_new(c, ST_SYNC);
		s->u.sync.id = r->turn_bar;
		s->u.sync.id_expr = ex_bin(c, EX_ADD, ex_int(c, r->turn_bar), wg);
		s->u.sync.threads = r->threads;
		s->comment = "wait for the other warpgroup's k loop";
		st_append(c, wait, s);
		go = st_if(c, ex_bin(c, EX_LT, ex_bin(c, EX_ADD, i, ex_int(c, 1)), loop->u.loop.hi));
		s = st_new(c, ST_SYNC);
		s->u.sync.id = r->turn_bar;
		s->u.sync.id_expr = ex_bin(c, EX_SUB, ex_int(c, r->turn_bar + 1), wg);
		s->u.sync.threads = r->threads;
		s->u.sync.arrive_only = true;
		s->comment = "the other warpgroup's k loop may start";
		st_append(c, go, s);
		st_insert(c, loop, j + 1, go);
		st_insert(c, loop, j, wait);
		return;
	}
}

/* ---- roles ---------------------------------------------------------------- */

/* A role and its branch; a consumer role takes the consumer order (kernel_consumer_groups). */
static Stmt *
role_branch(Comp *c, Kernel *k, RoleKind kind, int first, int threads, int regs)
{
	Stmt *s = st_new(c, ST_ROLE);
	int groups = kind == ROLE_CONSUMER ? kernel_consumer_groups(k) : 1;

	s->u.role.id = kernel_add_role(c, k, kind, first, threads, groups);
	k->role[s->u.role.id].regs = regs;
	if (groups > 1)
		k->role[s->u.role.id].turn_bar = PINGPONG_TURN_BAR;
	if (regs) {
		Stmt *r = st_new(c, ST_SETMAXNREG);

		r->u.maxnreg.regs = regs;
		r->u.maxnreg.inc = kind == ROLE_CONSUMER;
		r->comment = kind == ROLE_PRODUCER ? "the producer issues copies: give registers back" :
		             kind == ROLE_GROUP ? "the producer and the signal consumer need few: give registers back"
		                                : "the consumers hold the accumulators";
		st_append(c, s, r);
	}
	return s;
}

/*
 * The producer warpgroup PBRANCH of a kernel whose signal has a consumer
 * role: its first warp issues the loads (PRODUCER), the other three run
 * the consumer's loop (Kernel.tile_consumer).  setmaxnreg is one
 * instruction for the whole warpgroup, so it stays in PBRANCH, before the
 * branch into the two.
 */
static void
split_producer(Comp *c, Kernel *k, Stmt *pbranch, Stmt *producer)
{
	int parent = pbranch->u.role.id, first = k->role[parent].first, threads = k->role[parent].threads;
	Stmt *roles = st_new(c, ST_ROLES), *sig, *load;

	sig = role_branch(c, k, ROLE_SIGNAL, first + 32, threads - 32, 0);
	load = role_branch(c, k, ROLE_PRODUCER, first, 32, 0);
	if (k->signal)   /* flags: true: the role's barrier before it raises a tile's flag */
		k->role[sig->u.role.id].bar_id = SIGNAL_ROLE_BAR;
	k->role[sig->u.role.id].parent = k->role[load->u.role.id].parent = parent;
	st_append(c, sig, k->tile_consumer);
	st_append(c, load, producer);
	st_append(c, roles, sig);    /* the highest first thread first (emit tests them in order) */
	st_append(c, roles, load);
	st_append(c, pbranch, roles);
}

/* The circular-buffered loop split into the roles. */
static int
split_roles(Comp *c)
{
	Kernel *k = c->kernel;
	Where w = {0};
	Stmt *loop, *producer, *consumer, *roles, *pbranch, *cbranch;
	int i, pthreads = k->threads - k->consumer_threads;

	find_ws_loop(k->body, &w);
	if (!w.parent)
		return diag_internal(c, "warp_specialize", "no circular-buffered loop to split");
	if ((k->producer_regs || k->consumer_regs) && (pthreads % 128 || k->consumer_threads % 128))
		return diag_internal(c, "warp_specialize", "setmaxnreg needs whole warpgroups in every role");
	loop = w.parent->body[w.index];

	producer = ws_load_slice(c, k, loop);
	if (k->family != FAM_MATMUL)
		producer = merge_loops(c, k, producer);
	set_part(producer, CB_PRODUCER);
	producer->comment = "producer: issue the loads of every tile";
	producer = elect_producer(c, k, producer);

	/* the producer after the consumer threads; the consumers' barriers are named barrier 1 */
	roles = st_new(c, ST_ROLES);
	pbranch = role_branch(c, k, k->tile_consumer ? ROLE_GROUP : ROLE_PRODUCER, k->consumer_threads, pthreads,
	                      k->producer_regs);
	cbranch = role_branch(c, k, ROLE_CONSUMER, 0, k->consumer_threads, k->consumer_regs);

	consumer = loop;
	cb_strip_loads(consumer);
	if (k->role[cbranch->u.role.id].groups > 1)
		pingpong_consumer(c, &k->role[cbranch->u.role.id], consumer);
	set_part(consumer, CB_CONSUMER);
	consumer->comment = "consumers: compute every tile";
	st_append(c, roles, pbranch);
	st_append(c, roles, cbranch);
	if (k->tile_consumer)
		split_producer(c, k, pbranch, producer);
	else
		st_append(c, pbranch, producer);
	st_append(c, cbranch, consumer);
	for (i = w.index + 1; i < w.parent->nbody; i++)
		st_append(c, cbranch, w.parent->body[i]);
	w.parent->body[w.index] = roles;
	w.parent->nbody = w.index + 1;
	if (kernel_cluster_ctas(k) > 1) {
		/* no CTA leaves while another of its cluster may still arrive on its barriers (or read its partial sums) */
		Stmt *end = st_new(c, ST_CLUSTER_SYNC);

		end->comment = "the cluster's CTAs leave together: none arrives on a barrier of one that has left";
		st_append(c, w.parent, end);
	}
	ws_name_barriers(c, k, roles, 0);
	return 0;
}

/* ---- the preloads ------------------------------------------------------- */

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

int
preload_at(Comp *c, const Kernel *k, PreloadAt *at)
{
	Stmt *roles = st_first(k->body, ST_ROLES), *tile = NULL, *eloop;
	int r, b, i;

	for (b = 1; b < k->nbuf && !(k->buf[b].kind == BUF_STAGING && k->buf[b].preload); b++)
		;
	if (b == k->nbuf)
		return 0;
	for (r = 0; roles && r < roles->nbody && !tile; r++)
		if (k->role[roles->body[r]->u.role.id].kind == ROLE_CONSUMER)
			tile = loop_with(roles->body[r], ST_MMA);
	if (!tile || tile->u.loop.kind != LOOP_TILE || !(at->kloop = loop_with(tile, ST_MMA)) ||
	    !(eloop = loop_with(tile, ST_COMPUTE)) || eloop->u.loop.hi->kind != EX_INT || eloop->u.loop.lo->kind != EX_INT ||
	    eloop->u.loop.lo->ival != 0 || !(at->compute = st_first(eloop, ST_COMPUTE)))
		return diag_internal(c, "warp_specialize", "staging copies carry an epilogue input, but the consumers have "
		                     "no tile loop with a k loop and an epilogue loop of whole subtiles");
	at->tile = tile;
	at->eloop = eloop;
	at->store = NULL;
	for (i = 0; i < eloop->nbody && !at->store; i++)
		if (eloop->body[i]->kind == ST_IF && eloop->body[i]->u.branch.cond->kind == EX_ELECT &&
		    st_first(eloop->body[i], ST_TMA_STORE))
			at->store = eloop->body[i];
	if (!at->store)
		return diag_internal(c, "warp_specialize", "an epilogue loop that carries an input has no elected store");
	return 1;
}

/* Buffer B's copy SLOT <- its preload's subtile at (ROW, COL), on B's barrier of the copy: expect_tx, then the load. */
static void
preload_copy(Comp *c, const Kernel *k, Stmt *block, int b, Expr *slot, Expr *row, Expr *col, Pos pos)
{
	const KBuf *u = &k->buf[b];
	Stmt *tx = st_new(c, ST_EXPECT_TX), *ld = st_new(c, ST_TMA_LOAD);

	tx->u.mbar.bar = u->preload_bar;
	tx->u.mbar.barslot = slot;
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
 * but one; the others, subtile e + S - 1 at subtile e (from the second),
 * before e's store: S - 2 subtiles run between a load and its use.  A copy
 * is rewritten only after its load landed, which is after the store before
 * read it.  Issued any later, the loads' round trip shows
 * (docs/perf_history.md).  Their waits are sync's (sync_protocols.c,
 * preload_waits).
 */
static int
issue_preloads(Comp *c, Kernel *k)
{
	PreloadAt w;
	Stmt *eloop, *compute, *st0, *lead, *at;
	Expr *e;
	int64_t E;
	int b, n = preload_at(c, k, &w);

	if (n <= 0)
		return n;
	eloop = w.eloop;
	compute = w.compute;
	st0 = st_first(w.store, ST_TMA_STORE);
	E = eloop->u.loop.hi->ival;
	e = ex_var(c, eloop->u.loop.var);
	lead = st_if(c, ex_leaf(c, EX_ELECT));
	at = st_if(c, ex_bin(c, EX_EQ, ex_var(c, w.kloop->u.loop.var),
	                     ex_bin(c, EX_MAX, ex_bin(c, EX_SUB, w.kloop->u.loop.hi, ex_int(c, 2)), ex_int(c, 0))));
	at->comment = "the epilogue's first subtiles of its inputs, landing while the last k-steps run";
	for (b = 1; b < k->nbuf; b++) {
		const KBuf *u = &k->buf[b];
		Expr *slot = NULL, *ahead;
		Stmt *next;
		Pos pos;
		int S = u->stages, q, i;

		if (u->kind != BUF_STAGING || !u->preload)
			continue;
		pos = c->fusion->tensor[k->param[u->preload].tensor].pos;   /* the input's spec line */
		for (i = 0; i < compute->nwrites; i++)
			if (compute->writes[i].buf == b)
				slot = compute->writes[i].slot;
		if (!slot || E % S || E < S)
			return diag_internal(c, "warp_specialize", "staging buffer '%s' carries an input but its %d "
			                     "copies do not divide the %lld subtiles its compute writes", u->name, S,
			                     (long long)E);
		for (q = 0; q < S; q++)
			preload_copy(c, k, at, b, ex_int(c, q), compute->u.compute.row,
			             ex_subst(c, compute->u.compute.col, eloop->u.loop.var, ex_int(c, q)), pos);
		if (E == S)
			continue;   /* the first loads were all */
		/* at subtile e >= 1, subtile e + S - 1's, into the copy e - 1's store read */
		ahead = ex_bin(c, EX_ADD, e, ex_int(c, S - 1));
		next = st_if(c, ex_bin(c, EX_AND, ex_bin(c, EX_GE, e, ex_int(c, 1)), ex_bin(c, EX_LT, ahead, ex_int(c, E))));
		next->comment = "a later subtile's, into the copy the store before read";
		preload_copy(c, k, next, b, ex_subst(c, slot, eloop->u.loop.var, ahead), compute->u.compute.row,
		             ex_subst(c, compute->u.compute.col, eloop->u.loop.var, ahead), pos);
		for (i = 0; w.store->body[i] != st0; i++)
			;
		st_insert(c, w.store, i, next);
	}
	st_append(c, lead, at);
	st_append(c, w.kloop, lead);
	return 0;
}

/* requires circular_buffer; leaves the roles (a kernel not warp-specialized as it was) and the preloads' loads */
int
pass_warp_specialize(Comp *c)
{
	if (c->kernel->warp_specialize && split_roles(c))
		return -1;
	return issue_preloads(c, c->kernel);
}
