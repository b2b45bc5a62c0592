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
	const KBuf *b = &k->buf[s->buf];
	const CbInfo *cb = v->cb, *own = s->bar && bar_ok(k, s->bar) ? kernel_pipe_of(k, s->bar) : NULL;

	/* in a nest of several pipelines (a merged producer loop) a load may fill another one of them */
	if (cb && own)
		cb = own;
	if (b->kind == BUF_STAGING && b->preload) {   /* an epilogue input a staging copy carries, on the copy's barrier */
		if (s->param != b->preload || !k->param[s->param].preload || !b->preload_bar || s->bar != b->preload_bar)
			fail(v, "TMA load into staging buffer '%s' that is not its preload on its barrier", b->name);
		return;
	}
	if (b->kind != BUF_TILE)
		fail(v, "TMA load into a buffer that is not a tile buffer");
	else if (s->bar && !bar_ok(k, s->bar))
		fail(v, "TMA load with a bad barrier");
	else if (cb && !s->bar)
		fail(v, "TMA load of '%s' in a circular-buffered loop completes on no barrier", b->name);
	else if (b->full_bar && s->bar != b->full_bar)
		fail(v, "TMA load completes on a barrier other than its buffer's");
	else if (cb && s->bar != cb->full_bar)
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

/* Each role at most once among the branches of ROLES. */
static void
check_branches(Check *v, const Stmt *roles)
{
	int i, j;

	for (i = 0; i < roles->nbody; i++)
		for (j = 0; j < i; j++)
			if (roles->body[i]->kind == ST_ROLE && roles->body[j]->kind == ST_ROLE &&
			    roles->body[i]->role == roles->body[j]->role)
				fail(v, "role %d has two branches", roles->body[i]->role);
}

static void
check_stmt(Check *v, const Stmt *s)
{
	const Kernel *k = v->k;
	const CbInfo *outer = v->cb;
	int i;

	if (!s || v->err)
		return;
	switch (s->kind) {
	case ST_LOOP:
		if (s->var <= 0 || s->var >= k->nvar || !s->lo || !s->hi)
			fail(v, "loop without variable or bounds");
		check_expr(v, s->lo);
		check_expr(v, s->hi);
		check_expr(v, s->step);
		if (s->step && (s->step->kind != EX_INT || s->step->ival < 1))
			fail(v, "loop whose step is not a positive constant");
		if (s->cb)
			check_cb(v, v->cb = s->cb);
		if (s->var > 0 && s->var < k->nvar)
			v->defined[s->var] = true;
		check_expr(v, s->lin);
		break;
	case ST_LET:
		check_expr(v, s->a);
		if (s->var <= 0 || s->var >= k->nvar)
			fail(v, "let of a bad variable");
		else
			v->defined[s->var] = true;
		break;
	case ST_TMA_LOAD:
	case ST_TMA_STORE:
		if (!buf_ok(k, s->buf) || s->param <= 0 || s->param >= k->nparam)
			fail(v, "TMA statement with a bad buffer or param");
		else if (k->param[s->param].kind != PK_TMAP && k->param[s->param].kind != PK_PTR)
			fail(v, "TMA statement on a param that is neither a tensor map nor a pointer");
		else if (s->off && pow2_factor(s->off) * dtype_info[k->buf[s->buf].dtype].bytes %
		                   (k->param[s->param].kind == PK_TMAP ? kbuf_copy(&k->buf[s->buf]).align : 16))
			fail(v, "TMA statement at an offset into its copy that may break its alignment");
		else if (s->kind == ST_TMA_LOAD)
			check_load(v, s);
		if (s->mcast && (s->kind != ST_TMA_LOAD || k->param[s->param].kind != PK_TMAP ||
		                 k->cluster[0] * k->cluster[1] < 2 || (s->mcast->kind == EX_INT &&
		                 (s->mcast->ival <= 0 || s->mcast->ival >= 1 << k->cluster[0] * k->cluster[1]))))
			fail(v, "a multicast that is not a tensor-map load to CTAs of the kernel's cluster");
		check_expr(v, s->mcast);
		check_expr(v, s->a);
		check_expr(v, s->b);
		check_expr(v, s->slot);
		check_expr(v, s->off);
		check_expr(v, s->z);
		check_expr(v, s->barslot);
		break;
	case ST_TMA_PREFETCH:
		if (s->param <= 0 || s->param >= k->nparam || k->param[s->param].kind != PK_TMAP)
			fail(v, "a prefetch from a param that is not a tensor map");
		check_expr(v, s->cond);
		check_expr(v, s->a);
		check_expr(v, s->b);
		check_expr(v, s->z);
		break;
	case ST_MBAR_INIT:
	case ST_MBAR_ARRIVE:
	case ST_MBAR_WAIT:
	case ST_EXPECT_TX:
		if (!bar_ok(k, s->bar))
			fail(v, "mbarrier statement with a bad barrier");
		check_expr(v, s->barslot);
		check_expr(v, s->a);
		break;
	case ST_SYNC:
		if (s->n == 0 && v->in_roles)
			fail(v, "__syncthreads inside warp-specialized roles");
		check_expr(v, s->a);
		break;
	case ST_IF:
		check_expr(v, s->cond);
		break;
	case ST_ROLE:
		if (s->role <= 0 || s->role >= k->nrole)
			fail(v, "role branch with a bad role");
		break;
	case ST_ROW_FETCH:
	case ST_ROW_PUT:
		if (s->buf <= 0 || s->buf >= k->nbuf || k->buf[s->buf].kind != BUF_ROW ||
		    (s->kind == ST_ROW_FETCH ? !s->b || s->param != k->buf[s->buf].param : !s->slot))
			fail(v, "a row %s without its row buffer%s", s->kind == ST_ROW_FETCH ? "fetch" : "put",
			     s->kind == ST_ROW_FETCH ? ", that buffer's param or a first column" : " or a copy");
		check_expr(v, s->b);
		check_expr(v, s->slot);
		break;
	case ST_SIGNAL:
		if (s->param ? s->param >= k->nparam || k->param[s->param].kind != PK_FLAGS || s->bar
		             : !bar_ok(k, s->bar) || !s->barslot)
			fail(v, "signal without a flags param or the consumer role's barrier");
		else if (!s->a)
			fail(v, "signal without a tile");
		check_expr(v, s->a);
		check_expr(v, s->barslot);
		break;
	case ST_CLUSTER_SYNC:
		if (kernel_cluster_ctas(k) < 2 || v->in_roles)
			fail(v, "a cluster barrier in a kernel without clusters, or inside its roles");
		break;
	case ST_FLAG_WAIT:
		if (s->param <= 0 || s->param >= k->nparam || k->param[s->param].kind != PK_WAIT || !s->a)
			fail(v, "flag wait without a wait-flags param or a word");
		check_expr(v, s->a);
		check_expr(v, s->cond);
		break;
	case ST_MMA:
		if (s->nreads != 2 || s->nwrites != 1 || !s->mma)
			fail(v, "mma without two operands, one accumulator and a shape");
		else if (s->writes[0].acc <= 0 || s->writes[0].acc >= k->nacc)
			fail(v, "mma writes no accumulator");
		else
			for (i = 0; i < 2; i++)
				if (s->reads[i].buf <= 0 || s->reads[i].buf >= k->nbuf)
					fail(v, "mma operand is not a shared buffer");
		check_expr(v, s->cond);
		break;
	case ST_SK_STORE:
	case ST_SK_REDUCE:
		if (!k->ksize.sk_slot || s->param <= 0 || s->param >= k->nparam || k->param[s->param].kind != PK_WORKSPACE ||
		    s->nreads != 1 || s->reads[0].acc <= 0 || s->reads[0].acc >= k->nacc || !s->cond ||
		    (s->kind == ST_SK_REDUCE && !s->b))
			fail(v, "a stream-K %s without stream-K, its workspace param, an accumulator, a condition%s",
			     s->kind == ST_SK_STORE ? "store" : "reduction", s->kind == ST_SK_STORE ? "" : " or its CTA count");
		else if (k->ksize.sk_slot != k->consumer_threads * 4 * (k->acc[s->reads[0].acc].cols / 2 * k->row_blocks))
			fail(v, "stream-K slot of %d bytes does not hold accumulator '%s'", k->ksize.sk_slot,
			     k->acc[s->reads[0].acc].name);
		if (k->ksum == KSUM_SK_SCATTER && (!s->a || !s->b))
			fail(v, "a stream-K part's %s without its index among the tile's parts or their number",
			     s->kind == ST_SK_STORE ? "store" : "reduction");
		check_expr(v, s->cond);
		check_expr(v, s->a);
		check_expr(v, s->b);
		break;
	case ST_SPLIT_REDUCE:
		if (k->ksize.splits < 2 || s->buf <= 0 || s->buf >= k->nbuf || k->buf[s->buf].kind != BUF_PARTIAL ||
		    !bar_ok(k, s->bar) || !bar_ok(k, s->bar + 1) || s->nreads != 1 || s->reads[0].acc <= 0 ||
		    s->reads[0].acc >= k->nacc || !s->a || !s->b)
			fail(v, "a split-K reduction without a K-split, its partial buffer, its two barriers, an "
			     "accumulator, a parity or the count of CTAs with k-steps");
		else if (k->buf[s->buf].cols != 128 * (k->acc[s->reads[0].acc].cols / 2 * k->row_blocks))
			fail(v, "partial buffer '%s' of %d values a warpgroup does not hold accumulator '%s'",
			     k->buf[s->buf].name, k->buf[s->buf].cols, k->acc[s->reads[0].acc].name);
		check_expr(v, s->a);
		check_expr(v, s->b);
		break;
	case ST_COMPUTE:
		check_expr(v, s->a);
		check_expr(v, s->b);
		check_expr(v, s->pass);
		check_expr(v, s->z);
		if ((s->phase != ROW_WHOLE) != (k->row.chunk > 0))
			fail(v, "a compute's row phase does not match the kernel's row mode");
		check_access(v, s->reads, s->nreads);
		check_access(v, s->writes, s->nwrites);
		break;
	default:
		break;
	}
	if (s->kind == ST_ROLES) {
		check_branches(v, s);
		v->in_roles++;
	}
	for (i = 0; i < s->nbody; i++) {
		if ((s->kind == ST_ROLES) != (s->body[i]->kind == ST_ROLE))
			fail(v, "a role branch outside roles, or roles holding something else");
		check_stmt(v, s->body[i]);
	}
	check_stmt(v, s->orelse);
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
	Check v = {0};
	int i;

	v.c = c;
	v.k = k;
	v.after = after;
	v.defined = arena_alloc(c->arena, (size_t)k->nvar * sizeof *v.defined);
	for (i = 1; i < k->nparam; i++) {
		bool at = k->param[i].view == VIEW_ROW_AT || k->param[i].view == VIEW_COL_AT;

		if (at != (k->param[i].at != NULL) || (at && k->param[i].kind != PK_PTR))
			fail(&v, "param '%s' is not a pointer read at an offset with its view (row_at, col_at)", k->param[i].name);
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
		if (k->bar[i].cluster && k->cluster[0] * k->cluster[1] < 2)
			fail(&v, "mbarrier '%s' counts a cluster's arrivals in a kernel without clusters", k->bar[i].name);
	if (k->cluster[0] < 1 || k->cluster[1] < 1 || k->cluster[0] * k->cluster[1] > 8 || k->row_blocks < 1 ||
	    k->row_blocks > 2)
		fail(&v, "a cluster of %d x %d CTAs, or %d row blocks a warpgroup, which codegen does not build",
		     k->cluster[0], k->cluster[1], k->row_blocks);
	if (k->ksize.splits < 1 || k->ksize.splits > 8 ||
	    (k->ksize.splits > 1 && (kernel_cluster_ctas(k) > 8 || (k->swap_ab && k->cluster[0] * k->cluster[1] > 1) ||
	                       k->family != FAM_MATMUL)))
		fail(&v, "a K-split over %d CTAs%s%s, which codegen does not build", k->ksize.splits,
		     k->cluster[0] * k->cluster[1] > 1 ? " in clusters that share an operand" : "",
		     k->swap_ab ? ", swapped" : kernel_cluster_ctas(k) > 8 ? ", more than 8 CTAs a cluster" : "");
	if (k->swap_ab && (k->tile_rows < 8 || k->tile_rows > 64 || k->tile_rows % 8 || k->row_blocks != 1 ||
	                   k->tile_cols != (k->pingpong ? 64 : 128) || k->cluster[0] * k->cluster[1] > 1))
		fail(&v, "a swapped matmul tile of %d x %d%s, %d row blocks, a cluster of %d x %d, which codegen does "
		     "not build", k->tile_rows, k->tile_cols, k->pingpong ? " (ping-pong)" : "", k->row_blocks,
		     k->cluster[0], k->cluster[1]);
	check_roles(&v);
	check_stmt(&v, k->body);
	return v.err ? -1 : 0;
}
