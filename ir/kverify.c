/*
 * kverify.c: the kernel IR verifier, run after every kernel pass.
 *
 * Invariants (docs/ir.md), each one checked here:
 *  - ids are in range wherever they appear: the param and buffer of a TMA
 *    statement, the barrier of a TMA load and of an mbarrier statement, the
 *    buffers a compute reads and writes, the variable of a loop and a let,
 *    a buffer's param and full barrier, a size param's variable, and a
 *    circular buffer's barriers;
 *  - every buffer has at least one stage and a param, and a swizzle of 0,
 *    32, 64 or 128 bytes;
 *  - loops have bounds and a variable;
 *  - every variable is assigned (by a let, a loop or a size param) before it
 *    is used in program order, in every expression a statement holds;
 *  - a TMA load names a tile buffer, and completes on that buffer's full
 *    barrier if it has one; circular buffering gives it one: a load inside
 *    a circular-buffered loop names a barrier, the loop's full barrier, which
 *    is its buffer's;
 *  - an offset into a buffer copy keeps TMA's alignment (kbuf_copy's, 16
 *    bytes for a bulk copy);
 *  - circular-buffer info is sane: 0 <= P < S; the full barrier (and the
 *    empty one, if any) is an array of S barriers; S equals the stages of
 *    every buffer loaded in the loop;
 *  - a compute's row phase matches the kernel's row mode (chunks or whole rows);
 *  - a CTA-wide barrier never appears inside warp-specialized roles (it would
 *    deadlock: the branches have other thread counts);
 *  - after lowering, no statement waits, arrives, fences or forms a barrier
 *    (mbarriers, bulk and mma groups, syncs): circular_buffer,
 *    warp_specialize and sync place them (a protocol statement, ST_SIGNAL,
 *    ST_FLAG_WAIT, ST_GRID_DEP or a K-sum's, carries its own);
 *  - the role table: each role whole warps inside the CTA, no two roles
 *    sharing a thread, each consumer role its own named-barrier id (1..15),
 *    a register target a multiple of 8 in [24, 256] and only for whole
 *    warpgroups; `roles` holds one branch per role, each role once;
 *  - an mma reads two shared buffers and writes an accumulator; a compute's
 *    accumulator ids are in range;
 *  - a swapped matmul (swap_ab) has tiles of 8..64 rows (a multiple of 8)
 *    by 64 columns on ping-pong consumers or 128 on cooperative ones, one
 *    row block, and no cluster.
 * The first violation is reported, as an internal error naming the pass.
 * Each kind's own fields are checked by its hook (the verify column of
 * ir/stmts.h); check_stmt walks the tree.
 */
#include <string.h>

#include "ir.h"

typedef struct Check {
	Comp *c;
	const Kernel *k;
	const char *after;
	bool *defined;
	const CbInfo *cb;   /* the innermost circular-buffered loop around the statement, or NULL */
	int in_roles;
	int err;
} Check;

static void PRINTF_LIKE(2, 3)
fail(Check *v, const char *fmt, ...)
{
	Buf b;
	va_list ap;

	if (v->err)
		return;
	v->err = 1;
	buf_init(&b, v->c->arena);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	diag_internal(v->c, "kernel verifier", "after pass '%s': %s", v->after, buf_str(&b));
}

static bool
bar_ok(const Kernel *k, int bar)
{
	return bar > 0 && bar < k->nbar;
}

static bool
buf_ok(const Kernel *k, int buf)
{
	return buf > 0 && buf < k->nbuf;
}

static void
check_expr(Check *v, const Expr *e)
{
	if (!e || v->err)
		return;
	if (e->kind == EX_VAR) {
		if (e->var <= 0 || e->var >= v->k->nvar)
			fail(v, "variable id out of range");
		else if (!v->defined[e->var])
			fail(v, "variable '%s' used before it is set", v->k->var[e->var].name);
		return;
	}
	check_expr(v, e->a);
	check_expr(v, e->b);
}

/*
 * The largest power of two (up to 2^20) every value of E is a multiple of:
 * alignments are powers of two, so that is all the offset rule needs.
 */
static int64_t
pow2_factor(const Expr *e)
{
	enum { ANY = 1 << 20 };
	int64_t a, b;

	switch (e->kind) {
	case EX_INT:
		a = e->ival < 0 ? -e->ival : e->ival;
		return a == 0 || (a & -a) > ANY ? ANY : a & -a;
	case EX_MUL:
		a = pow2_factor(e->a) * pow2_factor(e->b);
		return a > ANY ? ANY : a;
	case EX_ADD:
	case EX_SUB:
		a = pow2_factor(e->a);
		b = pow2_factor(e->b);
		return a < b ? a : b;
	default:
		return 1;
	}
}

/* The circular-buffer info of a loop: 0 <= P < S, barrier arrays of S. */
static void
check_cb(Check *v, const CbInfo *cb)
{
	const Kernel *k = v->k;

	if (cb->prefetch < 0 || cb->prefetch >= cb->stages)
		fail(v, "circular buffer with prefetch outside [0, stages)");
	else if (!bar_ok(k, cb->full_bar))
		fail(v, "circular buffer without a full barrier");
	else if (k->bar[cb->full_bar].count != cb->stages)
		fail(v, "circular buffer of %d stages has %d full barriers", cb->stages, k->bar[cb->full_bar].count);
	else if (cb->empty_bar && !bar_ok(k, cb->empty_bar))
		fail(v, "circular buffer with a bad empty barrier");
	else if (cb->empty_bar && k->bar[cb->empty_bar].count != cb->stages)
		fail(v, "circular buffer of %d stages has %d empty barriers", cb->stages,
		     k->bar[cb->empty_bar].count);
}

/* A TMA load (buffer and param ids already checked): its buffer, barrier and stages. */
static void
check_load(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	const KBuf *b = &k->buf[s->u.tma.buf];
	int bar = s->u.tma.bar, param = s->u.tma.param;
	const CbInfo *cb = v->cb, *own = bar && bar_ok(k, bar) ? kernel_pipe_of(k, bar) : NULL;

	/* in a nest of several pipelines (a merged producer loop) a load may fill another one of them */
	if (cb && own)
		cb = own;
	if (b->kind == BUF_STAGING && b->preload) {   /* an epilogue input a staging copy carries, on the copy's barrier */
		if (param != b->preload || !k->param[param].preload || !b->preload_bar || bar != b->preload_bar)
			fail(v, "TMA load into staging buffer '%s' that is not its preload on its barrier", b->name);
		return;
	}
	if (b->kind != BUF_TILE)
		fail(v, "TMA load into a buffer that is not a tile buffer");
	else if (bar && !bar_ok(k, bar))
		fail(v, "TMA load with a bad barrier");
	else if (cb && !bar)
		fail(v, "TMA load of '%s' in a circular-buffered loop completes on no barrier", b->name);
	else if (b->full_bar && bar != b->full_bar)
		fail(v, "TMA load completes on a barrier other than its buffer's");
	else if (cb && bar != cb->full_bar)
		fail(v, "TMA load of '%s' completes on a barrier other than its loop's full barrier", b->name);
	else if (cb && b->full_bar != cb->full_bar)
		fail(v, "buffer '%s' is loaded in a circular-buffered loop but has no full barrier", b->name);
	else if (cb && b->stages != cb->stages)
		fail(v, "buffer '%s' has %d stages, but the circular-buffered loop that loads it has %d", b->name,
		     b->stages, cb->stages);
}

static void
check_access(Check *v, const Access *a, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (a[i].acc && (a[i].buf || a[i].acc < 0 || a[i].acc >= v->k->nacc))
			fail(v, "compute reads or writes a bad accumulator");
		else if (!a[i].acc && !buf_ok(v->k, a[i].buf))
			fail(v, "compute reads or writes a bad buffer");
		check_expr(v, a[i].slot);
	}
}

/*
 * The checks of each kind (stmts.h's verify column), of the statement's own
 * fields; check_stmt walks the tree.
 */
typedef void Verifier(Check *v, const Stmt *s);

static void
verify_none(Check *v, const Stmt *s)
{
	(void)v, (void)s;
}

static void
verify_loop(Check *v, const Stmt *s)
{
	const struct StLoop *l = &s->u.loop;
	const Kernel *k = v->k;

	if (l->var <= 0 || l->var >= k->nvar || !l->lo || !l->hi)
		fail(v, "loop without variable or bounds");
	check_expr(v, l->lo);
	check_expr(v, l->hi);
	check_expr(v, l->step);
	if (l->step && (l->step->kind != EX_INT || l->step->ival < 1))
		fail(v, "loop whose step is not a positive constant");
	if (l->cb)
		check_cb(v, v->cb = l->cb);
	if (l->var > 0 && l->var < k->nvar)
		v->defined[l->var] = true;
	check_expr(v, l->lin);
}

static void
verify_let(Check *v, const Stmt *s)
{
	check_expr(v, s->u.let.value);
	if (s->u.let.var <= 0 || s->u.let.var >= v->k->nvar)
		fail(v, "let of a bad variable");
	else
		v->defined[s->u.let.var] = true;
}

static void
verify_tma(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int param = s->u.tma.param, buf = s->u.tma.buf;
	const Expr *mcast = s->u.tma.mcast;

	if (!buf_ok(k, buf) || param <= 0 || param >= k->nparam)
		fail(v, "TMA statement with a bad buffer or param");
	else if (k->param[param].kind != PK_TMAP && k->param[param].kind != PK_PTR)
		fail(v, "TMA statement on a param that is neither a tensor map nor a pointer");
	else if (s->u.tma.off && pow2_factor(s->u.tma.off) * dtype_info[k->buf[buf].dtype].bytes %
	                         (k->param[param].kind == PK_TMAP ? kbuf_copy(&k->buf[buf]).align : 16))
		fail(v, "TMA statement at an offset into its copy that may break its alignment");
	else if (s->kind == ST_TMA_LOAD)
		check_load(v, s);
	if (mcast && (s->kind != ST_TMA_LOAD || k->param[param].kind != PK_TMAP ||
	              kernel_share_ctas(k) < 2 || (mcast->kind == EX_INT &&
	              (mcast->ival <= 0 || mcast->ival >= 1 << kernel_share_ctas(k)))))
		fail(v, "a multicast that is not a tensor-map load to CTAs of the kernel's cluster");
	check_expr(v, mcast);
	check_expr(v, s->u.tma.row);
	check_expr(v, s->u.tma.col);
	check_expr(v, s->u.tma.slot);
	check_expr(v, s->u.tma.off);
	check_expr(v, s->u.tma.batch);
	check_expr(v, s->u.tma.barslot);
}

static void
verify_tma_prefetch(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;

	if (s->u.tma.param <= 0 || s->u.tma.param >= k->nparam || k->param[s->u.tma.param].kind != PK_TMAP)
		fail(v, "a prefetch from a param that is not a tensor map");
	check_expr(v, s->u.tma.cond);
	check_expr(v, s->u.tma.row);
	check_expr(v, s->u.tma.col);
	check_expr(v, s->u.tma.batch);
}

static void
verify_exchange(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int buf = s->u.tma.buf, p = s->u.tma.param;

	if (buf <= 0 || buf >= k->nbuf || k->buf[buf].kind != BUF_EXCHANGE || p <= 0 || p >= k->nparam ||
	    k->buf[buf].param != p || k->param[p].view != VIEW_EXCHANGE || !s->u.tma.slot)
		fail(v, "an exchange without its exchange buffer, that buffer's exchanged view or a copy");
	check_expr(v, s->u.tma.slot);
	check_expr(v, s->u.tma.cond);
	check_expr(v, s->u.tma.row);
	check_expr(v, s->u.tma.col);
}

/* A reduction over rows meets where its plan says: a scratch buffer, a workspace, its items' expressions. */
static void
verify_reduce(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	const PointwisePlan *w = kernel_pw(k);

	(void)s;
	if (!w->reduce || w->scratch <= 0 || w->scratch >= k->nbuf || k->buf[w->scratch].kind != BUF_PARTIAL ||
	    w->work_param <= 0 || w->work_param >= k->nparam || k->param[w->work_param].kind != PK_WORKSPACE ||
	    !w->slot || !w->item || !w->unit || !w->splits || !w->group || !w->col0 || !w->extent)
		fail(v, "a reduction's meeting without its plan: a scratch buffer, a workspace, its items");
	check_expr(v, w->item);
	check_expr(v, w->unit);
	check_expr(v, w->splits);
	check_expr(v, w->group);
	check_expr(v, w->col0);
}

static void
verify_row_meet(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;

	(void)s;
	if (k->family != FAM_REDUCTION || !k->row.outer || k->row.work_param <= 0 || k->row.work_param >= k->nparam ||
	    k->param[k->row.work_param].kind != PK_WORKSPACE || !k->row.slot || !k->row.splits || !k->persistent)
		fail(v, "the meeting of sums over the rows without its plan: a persistent row kernel, a workspace, its CTAs");
	else
		check_expr(v, k->row.splits);
}

static void
verify_mbar(Check *v, const Stmt *s)
{
	if (!bar_ok(v->k, s->u.mbar.bar))
		fail(v, "mbarrier statement with a bad barrier");
	check_expr(v, s->u.mbar.barslot);
	check_expr(v, s->u.mbar.parity);
	check_expr(v, s->u.mbar.more);
}

static void
verify_sync(Check *v, const Stmt *s)
{
	if (s->u.sync.id == 0 && v->in_roles)
		fail(v, "__syncthreads inside warp-specialized roles");
	check_expr(v, s->u.sync.id_expr);
}

static void
verify_if(Check *v, const Stmt *s)
{
	check_expr(v, s->u.branch.cond);
}

/* Each role at most once among the branches of ROLES. */
static void
verify_roles(Check *v, const Stmt *roles)
{
	int i, j;

	for (i = 0; i < roles->nbody; i++)
		for (j = 0; j < i; j++)
			if (roles->body[i]->kind == ST_ROLE && roles->body[j]->kind == ST_ROLE &&
			    roles->body[i]->u.role.id == roles->body[j]->u.role.id)
				fail(v, "role %d has two branches", roles->body[i]->u.role.id);
}

static void
verify_role(Check *v, const Stmt *s)
{
	if (s->u.role.id <= 0 || s->u.role.id >= v->k->nrole)
		fail(v, "role branch with a bad role");
}

static void
verify_row_copy(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int buf = s->u.row_copy.buf;
	bool fetch = s->kind == ST_ROW_FETCH;

	if (buf <= 0 || buf >= k->nbuf || k->buf[buf].kind != BUF_ROW ||
	    (fetch ? !s->u.row_copy.col || s->u.row_copy.param != k->buf[buf].param : !s->u.row_copy.slot))
		fail(v, "a row %s without its row buffer%s", fetch ? "fetch" : "put",
		     fetch ? ", that buffer's param or a first column" : " or a copy");
	check_expr(v, s->u.row_copy.col);
	check_expr(v, s->u.row_copy.slot);
}

static void
verify_signal(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int param = s->u.signal.param;

	if (param ? param >= k->nparam || k->param[param].kind != PK_FLAGS || s->u.signal.bar
	          : !bar_ok(k, s->u.signal.bar) || !s->u.signal.barslot)
		fail(v, "signal without a flags param or the consumer role's barrier");
	else if (!s->u.signal.tile)
		fail(v, "signal without a tile");
	else if (param ? s->u.signal.taken != 0 : !bar_ok(k, s->u.signal.taken))
		fail(v, "signal to the consumer role without the barrier it waits on, or to flags with one");
	check_expr(v, s->u.signal.tile);
	check_expr(v, s->u.signal.barslot);
}

static void
verify_cluster_sync(Check *v, const Stmt *s)
{
	(void)s;
	if (kernel_cluster_ctas(v->k) < 2 || v->in_roles)
		fail(v, "a cluster barrier in a kernel without clusters, or inside its roles");
}

static void
verify_flag_wait(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int param = s->u.flag_wait.param;

	if (param <= 0 || param >= k->nparam || k->param[param].kind != PK_WAIT || !s->u.flag_wait.word)
		fail(v, "flag wait without a wait-flags param or a word");
	check_expr(v, s->u.flag_wait.word);
	check_expr(v, s->u.flag_wait.cond);
}

static void
verify_mma(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	int i;

	if (s->nreads != 2 || s->nwrites != 1 || !s->u.mma.shape)
		fail(v, "mma without two operands, one accumulator and a shape");
	else if (s->writes[0].acc <= 0 || s->writes[0].acc >= k->nacc)
		fail(v, "mma writes no accumulator");
	else
		for (i = 0; i < 2; i++)
			if (s->reads[i].buf <= 0 || s->reads[i].buf >= k->nbuf)
				fail(v, "mma operand is not a shared buffer");
	check_expr(v, s->u.mma.zero_if);
}

static void
verify_sk(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	const MatmulPlan *m = kernel_mm(k);
	int param = s->u.sk.param;
	bool store = s->kind == ST_SK_STORE;

	if (!m->ksize.sk_slot || param <= 0 || param >= k->nparam || k->param[param].kind != PK_WORKSPACE ||
	    s->nreads != 1 || s->reads[0].acc <= 0 || s->reads[0].acc >= k->nacc || !s->u.sk.cond ||
	    (!store && !s->u.sk.parts))
		fail(v, "a stream-K %s without stream-K, its workspace param, an accumulator, a condition%s",
		     store ? "store" : "reduction", store ? "" : " or its CTA count");
	else if (m->ksize.sk_slot != k->consumer_threads * 4 * (k->acc[s->reads[0].acc].cols / 2 * m->row_blocks))
		fail(v, "stream-K slot of %d bytes does not hold accumulator '%s'", m->ksize.sk_slot,
		     k->acc[s->reads[0].acc].name);
	if (m->ksum == KSUM_SK_SCATTER && (!s->u.sk.part || !s->u.sk.parts))
		fail(v, "a stream-K part's %s without its index among the tile's parts or their number",
		     store ? "store" : "reduction");
	check_expr(v, s->u.sk.cond);
	check_expr(v, s->u.sk.part);
	check_expr(v, s->u.sk.parts);
}

static void
verify_split_reduce(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	const MatmulPlan *m = kernel_mm(k);
	int buf = s->u.split.buf, bar = s->u.split.bar;

	if (m->ksize.splits < 2 || buf <= 0 || buf >= k->nbuf || k->buf[buf].kind != BUF_PARTIAL ||
	    !bar_ok(k, bar) || !bar_ok(k, bar + 1) || s->nreads != 1 || s->reads[0].acc <= 0 ||
	    s->reads[0].acc >= k->nacc || !s->u.split.parity || !s->u.split.ranks)
		fail(v, "a split-K reduction without a K-split, its partial buffer, its two barriers, an "
		     "accumulator, a parity or the count of CTAs with k-steps");
	else if (k->buf[buf].cols != 128 * (k->acc[s->reads[0].acc].cols / 2 * m->row_blocks))
		fail(v, "partial buffer '%s' of %d values a warpgroup does not hold accumulator '%s'",
		     k->buf[buf].name, k->buf[buf].cols, k->acc[s->reads[0].acc].name);
	check_expr(v, s->u.split.parity);
	check_expr(v, s->u.split.ranks);
}

static void
verify_compute(Check *v, const Stmt *s)
{
	check_expr(v, s->u.compute.row);
	check_expr(v, s->u.compute.col);
	check_expr(v, s->u.compute.pass);
	check_expr(v, s->u.compute.batch);
	if ((s->u.compute.phase != ROW_WHOLE) != (kernel_row(v->k)->chunk > 0))
		fail(v, "a compute's row phase does not match the kernel's row mode");
	check_access(v, s->reads, s->nreads);
	check_access(v, s->writes, s->nwrites);
}

static Verifier *const verifiers[ST_COUNT] = {
	[ST_NONE] = verify_none,
#define ST(id, name, owner, print, verify, ...) [ST_##id] = verify_##verify,
#include "stmts.h"
#undef ST
};

/* Does a statement of KIND wait, arrive, fence or form a barrier (what the passes after lowering place)? */
static bool
synchronises(StmtKind kind)
{
	switch (kind) {
	case ST_EXPECT_TX: case ST_MBAR_INIT: case ST_MBAR_ARRIVE: case ST_MBAR_WAIT: case ST_FENCE_MBAR_INIT:
	case ST_FENCE_PROXY_ASYNC: case ST_BULK_COMMIT: case ST_BULK_WAIT: case ST_SYNC: case ST_MMA_FENCE:
	case ST_MMA_COMMIT: case ST_MMA_WAIT: case ST_CLUSTER_SYNC:
		return true;
	default:
		return false;
	}
}

static void
check_stmt(Check *v, const Stmt *s)
{
	const CbInfo *outer = v->cb;
	int i;

	if (!s || v->err)
		return;
	if (strcmp(v->after, "lower") == 0 && synchronises(s->kind))
		fail(v, "lowering left a %s: later passes place every wait, arrive, fence and barrier", stmt_name[s->kind]);
	verifiers[s->kind](v, s);
	if (s->kind == ST_ROLES)
		v->in_roles++;
	for (i = 0; i < s->nbody; i++) {
		if ((s->kind == ST_ROLES) != (s->body[i]->kind == ST_ROLE))
			fail(v, "a role branch outside roles, or roles holding something else");
		check_stmt(v, s->body[i]);
	}
	check_stmt(v, st_else(s));
	if (s->kind == ST_ROLES)
		v->in_roles--;
	v->cb = outer;
}

/* The role table (see the header). */
static void
check_roles(Check *v)
{
	const Kernel *k = v->k;
	int i, j;

	for (i = 1; i < k->nrole && !v->err; i++) {
		const KRole *r = &k->role[i];

		if (r->threads <= 0 || r->threads % 32 || r->first < 0 || r->first % 32 || r->first + r->threads > k->threads)
			fail(v, "role %d is not whole warps inside the CTA's %d threads", i, k->threads);
		else if (r->kind == ROLE_CONSUMER && (r->bar_id < 1 || r->bar_id > 15))
			fail(v, "consumer role %d has no named barrier of its own", i);
		else if (r->groups < 1 || (r->groups > 1 && (r->kind != ROLE_CONSUMER || r->threads != 128 * r->groups ||
		                                             r->turn_bar < r->bar_id + r->groups || r->turn_bar + r->groups > 16)))
			fail(v, "role %d's %d groups that each own a tile are not its warpgroups with turn barriers past their "
			     "own", i, r->groups);
		else if (r->regs && (r->regs < 24 || r->regs > 256 || r->regs % 8 || r->threads % 128 || r->first % 128))
			fail(v, "role %d's register target %d is not a multiple of 8 in [24, 256] for whole warpgroups", i,
			     r->regs);
		for (j = 1; j < i && !v->err; j++) {
			const KRole *o = &k->role[j];

			if (r->parent == j || o->parent == i) {
				if (r->first < o->first || r->first + r->threads > o->first + o->threads)
					fail(v, "role %d is not inside its warpgroup's threads", r->parent == j ? i : j);
			} else if (r->first < o->first + o->threads && o->first < r->first + r->threads)
				fail(v, "roles %d and %d share threads", j, i);
			else if (r->bar_id && r->bar_id == o->bar_id)
				fail(v, "roles %d and %d share named barrier %d", j, i, r->bar_id);
		}
	}
}

/* An epilogue input staging buffer B carries (KBuf.preload): lowering's candidate, or the kept one's map and barriers */
static bool
preload_ok(const Kernel *k, const KBuf *b)
{
	const KParam *p = b->preload > 0 && b->preload < k->nparam ? &k->param[b->preload] : NULL;

	if (!p || b->kind != BUF_STAGING || p->view != VIEW_FULL || p->arg < 0 || p->arg >= k->param[b->param].arg ||
	    dtype_info[p->dtype].bytes != dtype_info[b->dtype].bytes)
		return false;
	if (p->kind == PK_PTR)
		return !b->preload_bar;
	return p->kind == PK_TMAP && p->preload && p->box[0] == b->rows && p->box[1] == b->cols && bar_ok(k, b->preload_bar) &&
	       k->bar[b->preload_bar].count == b->stages && k->bar[b->preload_bar].arrivals == 1;
}

int
kernel_verify(Comp *c, const Kernel *k, const char *after)
{
	const MatmulPlan *m = kernel_mm(k);
	Check v = {0};
	int i;

	v.c = c;
	v.k = k;
	v.after = after;
	v.defined = arena_alloc(c->arena, (size_t)k->nvar * sizeof *v.defined);
	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];
		bool at = p->view == VIEW_ROW_AT || p->view == VIEW_COL_AT || p->view == VIEW_ELEM_AT ||
		          p->view == VIEW_EXCHANGE;
		bool view = kparam_is_view(k->fusion, p) ||   /* views.c: at its offset, whatever its role */
		            p->view == VIEW_NONE;              /* an index's memory (plan.h, KBounds) */

		if ((at && !p->at) || (p->at && !at && !view) || (p->at && p->kind != PK_PTR))
			fail(&v, "param '%s' is not a pointer read at an offset with its view (row_at, col_at, elem_at)", k->param[i].name);
		if (k->param[i].kind != PK_SIZE)
			continue;
		if (k->param[i].var <= 0 || k->param[i].var >= k->nvar)
			fail(&v, "size param '%s' holds no variable", k->param[i].name);
		else
			v.defined[k->param[i].var] = true;
	}
	for (i = 1; i < k->nbuf; i++) {
		if (k->buf[i].stages < 1 || (k->buf[i].kind == BUF_PARTIAL) != (k->buf[i].param == 0) ||
		    k->buf[i].param < 0 || k->buf[i].param >= k->nparam)
			fail(&v, "buffer without stages or param (a partial-sum buffer has none)");
		else if (k->buf[i].kind == BUF_ROW && (k->param[k->buf[i].param].kind != PK_PTR ||
		                                       k->param[k->buf[i].param].view != VIEW_ROW || k->buf[i].rows != 1 ||
		                                       k->buf[i].cols > k->consumer_threads))
			fail(&v, "row buffer '%s' does not hold one row of a row input, a column a consumer thread",
			     k->buf[i].name);
		else if (k->buf[i].preload && !preload_ok(k, &k->buf[i]))
			fail(&v, "staging buffer '%s' carries an input that is not a full input of its element size (a "
			     "candidate's pointer, or a tensor map of one copy's box with a barrier a copy)", k->buf[i].name);
		else if (k->buf[i].full_bar && !bar_ok(k, k->buf[i].full_bar))
			fail(&v, "buffer '%s' has a bad full barrier", k->buf[i].name);
		else if (k->buf[i].swizzle != 0 && k->buf[i].swizzle != 32 && k->buf[i].swizzle != 64 &&
		         k->buf[i].swizzle != 128)
			fail(&v, "buffer swizzle is not 0, 32, 64 or 128 bytes");
	}
	for (i = 1; i < k->nacc; i++)
		if (k->acc[i].alias && (k->acc[i].alias < 0 || k->acc[i].alias >= k->nacc || k->acc[k->acc[i].alias].alias ||
		                        k->acc[i].col < 0 || k->acc[i].col % 8 ||
		                        k->acc[i].col + k->acc[i].cols > k->acc[k->acc[i].alias].cols))
			fail(&v, "accumulator '%s' shares the registers of a bad accumulator", k->acc[i].name);
	for (i = 1; i < k->nbar; i++)
		if (k->bar[i].cluster && kernel_share_ctas(k) < 2)
			fail(&v, "mbarrier '%s' counts a cluster's arrivals in a kernel without clusters", k->bar[i].name);
	if (m->cluster[0] < 1 || m->cluster[1] < 1 || kernel_share_ctas(k) > 8 || m->row_blocks < 1 || m->row_blocks > 2)
		fail(&v, "a cluster of %d x %d CTAs, or %d row blocks a warpgroup, which codegen does not build",
		     m->cluster[0], m->cluster[1], m->row_blocks);
	if (m->ksize.splits < 1 || m->ksize.splits > 8 ||
	    (m->ksize.splits > 1 && (kernel_cluster_ctas(k) > 8 || (m->swap_ab && kernel_share_ctas(k) > 1))))
		fail(&v, "a K-split over %d CTAs%s%s, which codegen does not build", m->ksize.splits,
		     kernel_share_ctas(k) > 1 ? " in clusters that share an operand" : "",
		     m->swap_ab ? ", swapped" : kernel_cluster_ctas(k) > 8 ? ", more than 8 CTAs a cluster" : "");
	if (m->swap_ab && (k->tile_rows < 8 || k->tile_rows > 64 || k->tile_rows % 8 || m->row_blocks != 1 ||
	                   k->tile_cols != (m->pingpong ? 64 : 128) || kernel_share_ctas(k) > 1))
		fail(&v, "a swapped matmul tile of %d x %d%s, %d row blocks, a cluster of %d x %d, which codegen does "
		     "not build", k->tile_rows, k->tile_cols, m->pingpong ? " (ping-pong)" : "", m->row_blocks,
		     m->cluster[0], m->cluster[1]);
	check_roles(&v);
	check_stmt(&v, k->body);
	return v.err ? -1 : 0;
}
