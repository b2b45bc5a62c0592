/*
 * circular_buffer.c: requires lowered kernel IR, its TMA loads with no
 * barrier; leaves S copies and mbarriers, CbInfo on the buffered loop;
 * breaks nothing.
 *
 * Picks the loop to circular-buffer, its stages S and prefetch distance P,
 * gives every TMA-loaded buffer S copies and a full mbarrier per stage, and
 * (unless the kernel is warp-specialized) rewrites the loop into prologue,
 * main and epilogue.
 *
 * Every TMA load names copy lin % S and full[lin % S], lin the stage
 * counter (the loop's index continued across the loops around it and
 * through inner loops that load: stage_counter, retarget), after one
 * arrive_expect_tx of the stage's bytes; docs/ir.md ("The kernel passes in
 * full") has the counter's forms and the loop shapes.  Waits and releases
 * are sync.c's, from CbInfo and the buffer accesses.
 *
 * Loop choice: the loop to buffer encloses a load and the first reader of
 * what it loads; for a plain kernel it is the innermost such serial loop (the
 * loads of the next iterations overlap this one's compute), for a
 * warp-specialized kernel the outermost (barriers are initialised once and
 * phases run across the whole persistent loop).
 *
 * S and P: the schedule's `stages`, or the kernel's default
 * (Kernel.stages_default: a swapped matmul's 16), or as many as fit the
 * kernel's shared-memory target (at least 2, at most 8; several CTAs an SM
 * beat deeper pipelines in fewer for streaming kernels), never more than
 * the budget, counted as codegen lays memory out (kbuf_copy).  P = S - 1 when compute is synchronous: a stage is free as soon as the
 * iteration that read it ends; P = S - 2 when an mma reads the stages, whose
 * reads complete one mma group later (sync.c releases a stage after
 * mma.wait_group S - 1 - P).  Stage and parity come from one linear
 * counter: slot = lin % S, parity = (lin / S) & 1.
 */
#include "passes.h"

enum { MAX_STAGES = 8 };

typedef struct Found {
	Stmt *loop;      /* the chosen loop */
	Stmt *parent;    /* the block holding it */
	int index;       /* its index there */
} Found;

bool
kir_has_load(const Stmt *s)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_LOAD)
		return true;
	for (i = 0; i < s->nbody; i++)
		if (kir_has_load(s->body[i]))
			return true;
	return kir_has_load(st_else(s));
}

/* Does loop L hold a load and, after it, a reader of a buffer it loads? */
static bool
loads_and_reads(const Kernel *k, const Stmt *l)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].kind == BUF_TILE && st_writes_buf(l, b) && st_reads_buf(l, b))
			return true;
	return false;
}

/* Searches S (in block PARENT at INDEX) for the loop to buffer. */
static void
find_loop(const Kernel *k, Stmt *s, Stmt *parent, int index, bool outermost, Found *out)
{
	int i;

	if (!s || (outermost && out->loop))
		return;
	if (s->kind == ST_LOOP && !s->u.loop.cb && kir_has_load(s) && loads_and_reads(k, s)) {
		out->loop = s;
		out->parent = parent;
		out->index = index;
		if (outermost)
			return;
	}
	for (i = 0; i < s->nbody; i++)
		find_loop(k, s->body[i], s, i, outermost, out);
}

/* Collects in PATH the loops that enclose TARGET inside S, outermost first. */
static bool
enclosing_loops(Stmt *s, const Stmt *target, Stmt **path, int *n, int max)
{
	int i;

	if (!s)
		return false;
	if (s == target)
		return true;
	if (s->kind == ST_LOOP && *n < max)
		path[(*n)++] = s;
	for (i = 0; i < s->nbody; i++)
		if (enclosing_loops(s->body[i], target, path, n, max))
			return true;
	if (enclosing_loops(st_else(s), target, path, n, max))
		return true;
	if (s->kind == ST_LOOP)
		(*n)--;
	return false;
}

/*
 * The stage counter of the buffered loop: its index, continued across the
 * loops around it (lin = outer_lin * trips + i), so that stage and parity run
 * on when an outer loop starts the buffered loop again; barrier phases do
 * not restart with the loop.  Every enclosing loop must run over [0, n) and
 * the buffered loop's trip count must not depend on them.
 */
static Expr *
stage_counter(Comp *c, const Kernel *k, Stmt *loop)
{
	Stmt *path[16];
	Expr *lin = NULL;
	int n = 0, j;

	enclosing_loops(k->body, loop, path, &n, countof(path));
	for (j = 0; j < n; j++) {
		Stmt *o = path[j];

		if (o->u.loop.lo->kind != EX_INT || o->u.loop.lo->ival != 0 || ex_uses_var(loop->u.loop.hi, o->u.loop.var) ||
		    ex_uses_var(loop->u.loop.lo, o->u.loop.var)) {
			diag_internal(c, "circular_buffer",
			              "the loops around a buffered loop must run over [0, n) and not change its trip count");
			return NULL;
		}
		lin = lin ? ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, lin, o->u.loop.hi), ex_var(c, o->u.loop.var))
		          : ex_var(c, o->u.loop.var);
	}
	if (!lin)
		return ex_var(c, loop->u.loop.var);
	return ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, lin, loop->u.loop.hi), ex_var(c, loop->u.loop.var));
}


typedef struct Rewrite {
	Comp *c;
	Kernel *k;
	Stmt *loop;
	const bool *bufs;  /* the tile buffers of the pipeline being rewritten */
	int stages, full;
	int bytes;    /* bytes a stage receives from tensor-map loads */
	int err;
} Rewrite;

/* Does S hold a load into one of BUFS? */
static bool
loads_into(const Stmt *s, const bool *bufs)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_LOAD)
		return bufs[s->u.tma.buf];
	for (i = 0; i < s->nbody; i++)
		if (loads_into(s->body[i], bufs))
			return true;
	return loads_into(st_else(s), bufs);
}

static Expr *
slot_of(Rewrite *r, Expr *lin)
{
	return ex_stage_slot(r->c, r->k, lin, 0, r->stages);
}

/*
 * The runtime bytes of the bulk (pointer) loads in S's body from index FROM
 * on, which share one expect_tx with the tensor-map loads there; NULL if none.
 */
static Expr *
bulk_tx(Rewrite *r, const Stmt *s, int from)
{
	Expr *sum = NULL, *n;
	int i;

	for (i = from; i < s->nbody; i++) {
		Stmt ld;

		if (s->body[i]->kind != ST_TMA_LOAD || r->k->param[s->body[i]->u.tma.param].kind != PK_PTR ||
		    !r->bufs[s->body[i]->u.tma.buf])
			continue;
		ld = *s->body[i];
		ld.u.tma.col = ex_inline_lets(r->c, r->loop, ld.u.tma.col);
		n = kir_bulk_bytes(r->c, r->k, &ld);
		sum = sum ? ex_bin(r->c, EX_ADD, sum, n) : n;
	}
	return sum;
}

/* Does S hold a bulk (pointer) load? */
static bool
bulk_in(const Kernel *k, const Stmt *s)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_TMA_LOAD)
		return k->param[s->u.tma.param].kind == PK_PTR;
	for (i = 0; i < s->nbody; i++)
		if (bulk_in(k, s->body[i]))
			return true;
	return bulk_in(k, st_else(s));
}

/*
 * Points every load and stage read under S at slot lin % S and full[lin % S],
 * puts one expect_tx before the first load (or loop of chunk loads) of each
 * issuing block unless TX_DONE says the caller placed it, and, in a kernel
 * that is not warp-specialized, makes load coordinates independent of the
 * buffered loop's lets (its prologue's copies of the loads go before them).
 * A warp-specialized producer keeps the lets its loads use (warp_specialize's
 * slice), computed once a tile, not once a load (docs/perf.md).  An inner
 * loop that issues loads advances the linear counter; it must start at 0
 * and have a trip count its own index does not change.
 */
static void
retarget(Rewrite *r, Stmt *s, Expr *lin, bool tx_done)
{
	Expr *trips = NULL, *before = NULL;   /* inner loops that load: their trips, and those run so far */
	Expr *one = NULL;                     /* the first's trips: when all have them, lin * (n x trips) */
	bool same = true;
	int i, nloops = 0;

	for (i = 0; i < s->nreads; i++)
		if (r->bufs[s->reads[i].buf])
			s->reads[i].slot = slot_of(r, lin);
	if (s->kind == ST_TMA_LOAD) {
		if (!r->bufs[s->u.tma.buf])
			return;  /* another pipeline's */
		s->u.tma.slot = slot_of(r, lin);
		s->u.tma.bar = r->full;
		s->u.tma.barslot = s->u.tma.slot;
		if (!r->k->warp_specialize) {   /* the prologue's copies of the loads go before the loop's lets */
			s->u.tma.row = ex_inline_lets(r->c, r->loop, s->u.tma.row);
			s->u.tma.col = ex_inline_lets(r->c, r->loop, s->u.tma.col);
			s->u.tma.batch = ex_inline_lets(r->c, r->loop, s->u.tma.batch);
		}
		r->k->buf[s->u.tma.buf].full_bar = r->full;
		return;
	}
	/*
	 * Inner loops that load, one after the other (the mainloops of
	 * independent matmuls): the counter runs through each in turn, lin *
	 * (n1 + n2 + ...) + (the trips of those before) + the loop's index.
	 */
	for (i = 0; i < s->nbody; i++) {
		Stmt *x = s->body[i];

		if (x->kind == ST_LOOP && x->u.loop.kind != LOOP_CHUNK && loads_into(x, r->bufs)) {
			one = one ? one : x->u.loop.hi;
			same &= ex_equal(x->u.loop.hi, one);
			trips = nloops++ ? ex_bin(r->c, EX_ADD, trips, x->u.loop.hi) : x->u.loop.hi;
		}
	}
	if (nloops > 1 && same)
		trips = ex_bin(r->c, EX_MUL, ex_int(r->c, nloops), one);
	for (i = 0; i < s->nbody && !r->err; i++) {
		Stmt *x = s->body[i];
		bool chunks = x->kind == ST_LOOP && x->u.loop.kind == LOOP_CHUNK && loads_into(x, r->bufs);

		if (chunks && bulk_in(r->k, x)) {
			r->err = diag_internal(r->c, "circular_buffer", "a bulk (pointer) load inside a chunk loop");
			return;
		}
		if (((x->kind == ST_TMA_LOAD && r->bufs[x->u.tma.buf]) || chunks) && !tx_done) {
			/* one expect_tx of the whole stage before its first load (or loop of loads) */
			Stmt *tx = st_new(r->c, ST_EXPECT_TX);

			tx->u.mbar.bar = r->full;
			tx->u.mbar.barslot = slot_of(r, lin);
			tx->u.mbar.lin = lin;
			tx->u.mbar.bytes = r->bytes;
			tx->u.mbar.more = bulk_tx(r, s, i);
			st_insert(r->c, s, i, tx);
			tx_done = true;
			continue;  /* x is now at i + 1 */
		}
		if (x->kind == ST_LOOP && x->u.loop.kind != LOOP_CHUNK && loads_into(x, r->bufs)) {
			if (x->u.loop.lo->kind != EX_INT || x->u.loop.lo->ival != 0 || ex_uses_var(x->u.loop.hi, x->u.loop.var)) {
				r->err = diag_internal(r->c, "circular_buffer",
				                       "an inner loop that issues loads must run over [0, n)");
				return;
			}
			/* a counter lowering gave the loop (stream-K's parts, of any length) is kept */
			if (!x->u.loop.lin) {
				x->u.loop.lin = ex_bin(r->c, EX_MUL, lin, trips);   /* one such loop: lin * n + i */
				if (before)
					x->u.loop.lin = ex_bin(r->c, EX_ADD, x->u.loop.lin, before);
				x->u.loop.lin = ex_bin(r->c, EX_ADD, x->u.loop.lin, ex_var(r->c, x->u.loop.var));
			}
			before = before ? ex_bin(r->c, EX_ADD, before, x->u.loop.hi) : x->u.loop.hi;
			retarget(r, x, x->u.loop.lin, false);
			continue;
		}
		/* the pieces of a chunk loop share the expect_tx placed before it */
		retarget(r, x, lin, chunks);
	}
	if (st_else(s))
		retarget(r, st_else(s), lin, false);
}

/* Does S hold a loop that issues loads (a loop the stage counter runs through)? */
static bool
has_loading_loop(const Stmt *s)
{
	int i;

	for (i = 0; i < s->nbody; i++)
		if ((s->body[i]->kind == ST_LOOP && s->body[i]->u.loop.kind != LOOP_CHUNK && kir_has_load(s->body[i])) ||
		    has_loading_loop(s->body[i]))
			return true;
	return st_else(s) && has_loading_loop(st_else(s));
}

void
cb_strip_loads(Stmt *s)
{
	int i, j = 0;

	for (i = 0; i < s->nbody; i++) {
		Stmt *x = s->body[i];

		if (x->kind == ST_TMA_LOAD || x->kind == ST_EXPECT_TX || x->kind == ST_TMA_PREFETCH ||
		    (x->kind == ST_FLAG_WAIT && x->u.flag_wait.producer))
			continue;   /* (and the producer's waits for an operand's rows, its prefetches) */
		cb_strip_loads(x);
		if ((x->kind == ST_IF || (x->kind == ST_LOOP && x->u.loop.kind == LOOP_CHUNK)) && x->nbody == 0 &&
		    (!st_else(x) || !st_else(x)->nbody))
			continue;
		s->body[j++] = x;
	}
	s->nbody = j;
}

Stmt *
cb_load_slice(Comp *c, const Stmt *loop)
{
	Stmt *b = st_block(c);
	int i;

	for (i = 0; i < loop->nbody; i++)
		if (loop->body[i]->kind != ST_LET && kir_has_load(loop->body[i]))
			st_append(c, b, st_clone(c, loop->body[i], 0, NULL));
	return b;
}

/* Does an mma in S read one of BUFS (an operand the pipeline loads)? */
static bool
mma_reads(const Stmt *s, const bool *bufs)
{
	int i;

	if (!s)
		return false;
	if (s->kind == ST_MMA)
		for (i = 0; i < s->nreads; i++)
			if (bufs[s->reads[i].buf])
				return true;
	for (i = 0; i < s->nbody; i++)
		if (mma_reads(s->body[i], bufs))
			return true;
	return mma_reads(st_else(s), bufs);
}

/*
 * The pipelines of the nest LOOP: the tile buffers it loads, grouped by the
 * loop whose iterations fill their stages (the innermost loop around their
 * loads, chunk loops aside: they fill pieces of one stage).
 */
typedef struct Pipe {
	Stmt *loop;      /* its stage loop */
	bool *bufs;      /* [nbuf]: its tile buffers */
	int64_t bytes;   /* one stage's copies */
	int tx;          /* bytes a stage receives from tensor-map loads (bulk loads count at run time) */
	int stages, prefetch;
	CbInfo *cb;
} Pipe;

enum { MAX_PIPES = 4 };

/* The innermost non-chunk loop around a load into B in S (CUR: the one around S), or NULL. */
static Stmt *
stage_loop(Stmt *s, int b, Stmt *cur)
{
	Stmt *r;
	int i;

	if (!s)
		return NULL;
	if (s->kind == ST_TMA_LOAD)
		return s->u.tma.buf == b ? cur : NULL;
	if (s->kind == ST_LOOP && s->u.loop.kind != LOOP_CHUNK)
		cur = s;
	for (i = 0; i < s->nbody; i++)
		if ((r = stage_loop(s->body[i], b, cur)))
			return r;
	return stage_loop(st_else(s), b, cur);
}

static int
find_pipes(Comp *c, Kernel *k, Stmt *loop, Pipe *pipe)
{
	int b, n = 0, q;

	for (b = 1; b < k->nbuf; b++) {
		Stmt *l;

		if (k->buf[b].kind != BUF_TILE || !st_writes_buf(loop, b) || !(l = stage_loop(loop, b, loop)))
			continue;
		for (q = 0; q < n && pipe[q].loop != l; q++)
			;
		if (q == n) {
			if (n == MAX_PIPES)
				return diag_internal(c, "circular_buffer", "more than %d pipelines in one nest", MAX_PIPES);
			pipe[n].loop = l;
			pipe[n].bufs = arena_alloc(c->arena, (size_t)k->nbuf * sizeof(bool));
			n++;
		}
		pipe[q].bufs[b] = true;
		pipe[q].bytes += kbuf_copy(&k->buf[b]).bytes;
		if (k->param[k->buf[b].param].kind == PK_TMAP)
			pipe[q].tx += (int)kbuf_copy(&k->buf[b]).bytes;
	}
	return n;
}

/* The shared memory K takes with S copies of each of BUFS (and the other buffers as they are). */
static int64_t
smem_at(Kernel *k, const bool *bufs, int stages)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (bufs[b])
			k->buf[b].stages = stages;
	return kernel_smem_bytes(k) + 16 * (int64_t)stages;
}

int64_t
cb_smem_at(Kernel *k, const Stmt *loop, int stages)
{
	bool bufs[k->nbuf];
	int b;

	for (b = 0; b < k->nbuf; b++)
		bufs[b] = b > 0 && k->buf[b].kind == BUF_TILE && (!loop || st_writes_buf(loop, b));
	return smem_at(k, bufs, stages);
}

/*
 * S for LOOP: the most stages the budget holds are counted by laying the
 * buffers out at each S (kernel_smem_bytes: copies padded to their
 * alignment), never from unpadded bytes, which undercount narrow copies.
 */
static int
choose_stages(Comp *c, Kernel *k, const bool *bufs, int *stages)
{
	int b, fit = 0, limit = MAX_STAGES;
	int64_t stage = 0;

	if (k->stages_hint > limit)
		limit = k->stages_hint;
	if (k->stages_default > limit)
		limit = k->stages_default;

	for (b = 1; b < k->nbuf; b++)
		if (bufs[b])
			stage += kbuf_copy(&k->buf[b]).stride;
	while (fit < limit && smem_at(k, bufs, fit + 1) <= k->smem_budget)
		fit++;
	/* lowering sizes tiles to hold one stage; what is left is a row reduction's many staged inputs */
	if (fit < 1)
		return diag_error(c, k->tile_pos.line ? k->tile_pos : k->stages_pos,
		                  "one stage of %lld bytes does not fit the %d-byte shared-memory budget; %s",
		                  (long long)stage, k->smem_budget,
		                  lower_family(k->family)->stage_advice);
	if (k->stages_hint) {
		if (k->stages_hint > fit)
			return diag_error(c, k->stages_pos,
			                  "schedule stages %d needs %lld KiB of shared memory for %lld-byte stages, "
			                  "but %d KiB are available; use at most %d stage%s or a smaller tile",
			                  k->stages_hint, (long long)(smem_at(k, bufs, k->stages_hint) / 1024),
			                  (long long)stage, k->smem_budget / 1024, fit, fit == 1 ? "" : "s");
		*stages = k->stages_hint;
		return 0;
	}
	*stages = MAX_STAGES;
	if (k->stages_default) {
		*stages = k->stages_default;
	} else if (k->smem_target) {
		int want = 0;

		while (want < MAX_STAGES && smem_at(k, bufs, want + 1) <= k->smem_target)
			want++;
		*stages = want < 2 ? 2 : want;
	}
	if (*stages > fit)
		*stages = fit;
	return 0;
}

typedef struct Ring {
	Comp *c;
	int buf, copies;
} Ring;

/* SLOT, COUNTER % the old copies (lower_stage_output), as COUNTER % R->copies */
static Expr *
ring_slot(const Ring *r, Expr *slot)
{
	return slot && slot->kind == EX_MOD ? ex_bin(r->c, EX_MOD, slot->a, ex_int(r->c, r->copies)) : slot;
}

/* S writes or stores staging buffer R->buf: its slot follows the copies */
static void
reslot(Stmt *s, void *user)
{
	const Ring *r = user;
	int i;

	if (s->kind == ST_TMA_STORE && s->u.tma.buf == r->buf)
		s->u.tma.slot = ring_slot(r, s->u.tma.slot);
	if (s->kind == ST_COMPUTE)
		for (i = 0; i < s->nwrites; i++)
			if (s->writes[i].buf == r->buf)
				s->writes[i].slot = ring_slot(r, s->writes[i].slot);
}

/* The staging buffers lowering marked to carry an epilogue input (KBuf.preload) */
static int
preloads(const Kernel *k)
{
	int b, n = 0;

	for (b = 1; b < k->nbuf; b++)
		n += k->buf[b].kind == BUF_STAGING && k->buf[b].preload;
	return n;
}

/* Gives each staging buffer lowering lets grow (KBuf.ring) COPIES copies */
static void
set_copies(Kernel *k, int copies)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].kind == BUF_STAGING && k->buf[b].ring)
			k->buf[b].stages = copies;
}

/*
 * The staging buffers lowering lets grow (KBuf.ring) take one more copy
 * each, all together, while the shared memory the stages leave holds them
 * and none passes its ring: the stages come first, and copies alike keep
 * one read-wait for all of a subtile's stores (sync.c; two outputs of 4
 * and 3 copies took a barrier more a subtile).  Their slots (the counter
 * mod the copies) follow.
 */
static void
grow_staging(Comp *c, Kernel *k)
{
	int b, copies = 0, most = 0;

	for (b = 1; b < k->nbuf; b++) {
		const KBuf *u = &k->buf[b];

		if (u->kind != BUF_STAGING || !u->ring)
			continue;
		if (copies && u->stages != copies)
			return;   /* lowered unlike: left as they are */
		copies = u->stages;
		if (!most || u->ring < most)
			most = u->ring;
	}
	if (copies < 2)
		return;
	for (; copies < most; copies++) {
		set_copies(k, copies + 1);
		/* with a barrier a copy for each input the copies may carry (keep_preloads) */
		if (kernel_smem_bytes(k) + 8 * (copies + 1) * preloads(k) > k->smem_budget) {
			set_copies(k, copies);
			break;
		}
	}
	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].kind == BUF_STAGING && k->buf[b].ring)
			st_walk(k->body, reslot, &(Ring){c, b, copies});
}

/* S, the compute that writes staging buffer R->buf, reads its copy too: the input preloaded there */
static void
read_preload(Stmt *s, void *user)
{
	const Ring *r = user;
	Access *a;
	int i;

	if (s->kind != ST_COMPUTE)
		return;
	for (i = 0; i < s->nwrites; i++)
		if (s->writes[i].buf == r->buf) {
			a = VEC_PUSH(r->c->arena, s->reads, s->nreads, s->capreads);
			a->buf = r->buf;
			a->slot = s->writes[i].slot;
			return;
		}
}

/* The trips of the loop in S whose body holds the compute that writes buffer B, if constant; else 0 */
static int64_t
subtiles(const Stmt *s, int b)
{
	int64_t n;
	int i, w;

	for (i = 0; s && i < s->nbody; i++) {
		const Stmt *x = s->body[i];

		if (s->kind == ST_LOOP && x->kind == ST_COMPUTE)
			for (w = 0; w < x->nwrites; w++)
				if (x->writes[w].buf == b)
					return s->u.loop.lo->kind == EX_INT && s->u.loop.hi->kind == EX_INT && !s->u.loop.step ?
					       s->u.loop.hi->ival - s->u.loop.lo->ival : 0;
		if ((n = subtiles(x, b)))
			return n;
	}
	return 0;
}

/*
 * The staging copies lowering marked to carry an epilogue input
 * (KBuf.preload, lower_matmul_sync.c preload_inputs) carry it where they are
 * at least three and divide the subtiles (a copy's use is then counted
 * as a pipeline's stage is): a subtile's load goes out with the store of
 * the subtile S - 1 before it (warp_specialize.c, issue_preloads), so
 * with three copies or more one subtile or more runs between a load and
 * its use;
 * with two the load's round trip would come between every subtile and
 * the next.  A kept one
 * gets the tensor map its loads read (the input's, box one copy), a
 * barrier a copy, and the compute's read of the copy it writes; the
 * others stay read through their pointers.
 */
static void
keep_preloads(Comp *c, Kernel *k)
{
	int b;

	for (b = 1; b < k->nbuf; b++) {
		KBuf *u = &k->buf[b];
		int p;

		if (u->kind != BUF_STAGING || !u->preload)
			continue;
		if (u->stages < 3 || !subtiles(k->body, b) || subtiles(k->body, b) % u->stages ||
		    (kernel_param_bytes(k, k->nparam) + 63) / 64 * 64 + 128 > KERNEL_PARAM_MAX) {   /* no room for its map */
			u->preload = 0;
			continue;
		}
		p = kernel_add_map(c, k, u->preload, u->rows, u->cols);
		k->param[p].preload = true;
		u->preload = p;
		u->preload_bar = kernel_add_bar(c, k, arena_printf(c->arena, "carry_%s", c->fusion->tensor[u->tensor].name),
		                                u->stages, 1);
		st_walk(k->body, read_preload, &(Ring){c, b, u->stages});
	}
}

/* Barrier init, once, before everything: the stages' (and lowering's: the signal consumer's). */
static void
init_barriers(Comp *c, Kernel *k, Found *fd)
{
	Stmt *init, *mbinit, *fence, *sync;
	int b;

	init = st_if(c, ex_leaf(c, EX_ELECT));
	init->comment = "one thread initialises the stage barriers";
	for (b = 1; b < k->nbar; b++) {
		mbinit = st_new(c, ST_MBAR_INIT);
		mbinit->u.mbar.bar = b;
		st_append(c, init, mbinit);
	}
	fence = st_new(c, ST_FENCE_MBAR_INIT);
	st_append(c, init, fence);
	/* in a cluster, the others' too: their producers multicast into this CTA, their consumers (or a K-split's
	   ranks) arrive here */
	sync = st_new(c, kernel_cluster_ctas(k) > 1 ? ST_CLUSTER_SYNC : ST_SYNC);
	sync->comment = kernel_cluster_ctas(k) > 1 ? "barrier init visible to every thread of the cluster"
	                                                  : "barrier init visible to all threads";
	st_insert(c, k->body, 0, sync);
	st_insert(c, k->body, 0, init);
	if (fd->parent == k->body)
		fd->index += 2;
}

/* Plain pipelining of FD's loop over pipeline CB: a prologue, the main loop, an epilogue. */
static void
split_plain(Comp *c, Kernel *k, Found *fd, CbInfo *cb)
{
	Expr *i = ex_var(c, fd->loop->u.loop.var), *n = fd->loop->u.loop.hi;
	int P = cb->prefetch, b;
	Stmt *slice = cb_load_slice(c, fd->loop);
	Stmt *pro, *epi, *ahead;
	int pv = kernel_add_var(c, k, "p");
	Expr *iP = ex_bin(c, EX_ADD, i, ex_int(c, P));

	pro = st_loop(c, pv, ex_int(c, 0), ex_bin(c, EX_MIN, ex_int(c, P), n), LOOP_SERIAL);
	pro->comment = "prologue: fill the first stages";
	pro->u.loop.cb = arena_alloc(c->arena, sizeof *cb);
	*pro->u.loop.cb = *cb;
	pro->u.loop.cb->part = CB_PROLOGUE;
	pro->body = st_clone(c, slice, fd->loop->u.loop.var, ex_var(c, pv))->body;
	pro->nbody = pro->capbody = slice->nbody;

	epi = st_clone(c, fd->loop, 0, NULL);
	cb_strip_loads(epi);
	epi->u.loop.lo = ex_bin(c, EX_MAX, ex_bin(c, EX_SUB, n, ex_int(c, P)), ex_int(c, 0));
	epi->comment = "epilogue: the last stages, nothing left to load";
	epi->u.loop.cb->part = CB_EPILOGUE;

	cb_strip_loads(fd->loop);
	ahead = st_clone(c, slice, fd->loop->u.loop.var, iP);
	for (b = ahead->nbody - 1; b >= 0; b--)
		st_insert(c, fd->loop, 0, ahead->body[b]);
	fd->loop->u.loop.hi = ex_bin(c, EX_SUB, n, ex_int(c, P));
	fd->loop->comment = "main: load P tiles ahead, compute this one";
	cb->part = CB_MAIN;

	if (P > 0)
		st_insert(c, fd->parent, fd->index, pro);
	if (P > 0)
		st_insert(c, fd->parent, fd->index + 2, epi);
}

/* requires lower; leaves every TMA load on a stage's copy and full barrier, no waits */
int
pass_circular_buffer(Comp *c)
{
	Kernel *k = c->kernel;
	Found fd = {0};
	Rewrite r = {0};
	Pipe pipe[MAX_PIPES] = {{0}};
	CbInfo *cb;
	int b, q, npipe, main_ = 0, first = 0, S;

	find_loop(k, k->body, NULL, 0, k->warp_specialize, &fd);
	if (!fd.loop)
		return 0;
	if (!k->warp_specialize && has_loading_loop(fd.loop))
		return diag_internal(c, "circular_buffer",
		                     "a plain pipelined loop must issue its loads directly in its body");
	if ((npipe = find_pipes(c, k, fd.loop, pipe)) < 0)
		return -1;
	if (npipe > 1 && !k->warp_specialize)
		return diag_internal(c, "circular_buffer", "several pipelines in one nest need warp specialization");

	/*
	 * Stages: the pipeline with the largest stage (a matmul's k-loop operands)
	 * gets what the budget allows; the others (per-tile inputs) two each.
	 * The buffered loop carries the pipeline it fills itself, or else the first.
	 */
	for (q = 0; q < npipe; q++) {
		if (pipe[q].bytes > pipe[main_].bytes)
			main_ = q;
		if (pipe[q].loop == fd.loop)
			first = q;
	}
	for (q = 0; q < npipe; q++)
		if (q != main_)
			smem_at(k, pipe[q].bufs, pipe[q].stages = 2);
	if (choose_stages(c, k, pipe[main_].bufs, &pipe[main_].stages))
		return -1;
	for (q = 0; q < npipe; q++) {
		S = pipe[q].stages;
		/* a stage read by mma is free only once a later mma.wait_group shows the read done: one group in flight */
		pipe[q].prefetch = mma_reads(fd.loop, pipe[q].bufs) && S > 1 ? S - 2 : S - 1;
		smem_at(k, pipe[q].bufs, S);
		cb = pipe[q].cb = arena_alloc(c->arena, sizeof *cb);
		cb->stages = S;
		cb->prefetch = pipe[q].prefetch;
		cb->stage_bytes = (int)pipe[q].bytes;
		cb->warp_specialized = k->warp_specialize;
		cb->inner = q != first;
		*VEC_PUSH(c->arena, k->pipe, k->npipe, k->cappipe) = cb;
		/* one elected thread arrives (with expect_tx) once per stage fill; the consumers that read it release it */
		if (q == main_) {
			cb->full_bar = kernel_add_bar(c, k, "full", S, 1);
			if (k->warp_specialize)
				cb->empty_bar = kernel_add_bar(c, k, "empty", S, k->consumer_threads / kernel_consumer_groups(k));
			/*
			 * In a cluster a producer's multicast fills the stage in every
			 * CTA, so it may refill one only once all of them have read it:
			 * each consumer warpgroup that reads a stage arrives on every
			 * CTA's empty barrier (one thread each, after its mma wait).
			 */
			if (cb->empty_bar && kernel_share_ctas(k) > 1) {
				k->bar[cb->empty_bar].arrivals = k->consumer_threads / 128 / kernel_consumer_groups(k) *
				                                 kernel_share_ctas(k);
				k->bar[cb->empty_bar].cluster = true;
			}
		} else {
			/* another pipeline's are named after its first buffer: bias_tile_full */
			for (b = 1; !pipe[q].bufs[b]; b++)
				;
			cb->full_bar = kernel_add_bar(c, k, arena_printf(c->arena, "%s_full", k->buf[b].name), S, 1);
			cb->empty_bar = kernel_add_bar(c, k, arena_printf(c->arena, "%s_empty", k->buf[b].name), S,
			                               k->consumer_threads);
		}
	}

	grow_staging(c, k);
	keep_preloads(c, k);

	init_barriers(c, k, &fd);

	if (!(fd.loop->u.loop.lin = stage_counter(c, k, fd.loop)))
		return -1;
	for (q = 0; q < npipe; q++) {
		r.c = c;
		r.k = k;
		r.loop = fd.loop;
		r.bufs = pipe[q].bufs;
		r.stages = pipe[q].stages;
		r.full = pipe[q].cb->full_bar;
		r.bytes = pipe[q].tx;
		retarget(&r, fd.loop, fd.loop->u.loop.lin, false);
		if (r.err)
			return -1;
		if (q != first)
			pipe[q].loop->u.loop.cb = pipe[q].cb;
	}
	cb = pipe[first].cb;
	fd.loop->u.loop.cb = cb;
	if (k->warp_specialize) {
		for (q = 0; q < npipe; q++)
			pipe[q].cb->part = CB_NONE;
		return 0;
	}

	split_plain(c, k, &fd, cb);
	return 0;
}
