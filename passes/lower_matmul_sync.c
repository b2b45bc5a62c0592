/*
 * lower_matmul_sync.c: what lower_matmul adds around the tile loop it has
 * built: per-tile waits on inputs and outputs (wait_tile, wait_inputs),
 * the producer's L2 prefetch of a residual (prefetch_inputs), and
 * epilogue inputs staged in shared memory (stage_rows, preload_inputs).
 * Requires the tile loop and the first k loop; leaves statements sync
 * orders (no wait or barrier: sync.c's expand_protocols places the flag
 * waits' barrier) and buffers circular_buffer stages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "matmul.h"

/*
 * The writer's tile of epilogue input (or output) X that waits (wait:
 * {per_tile, tile: [R, C]}), into MatmulPlan.wait_tile: in each dim one of the
 * kernel's tile and the writer's must divide the other, so that each
 * kernel tile covers whole writer tiles, or lies inside one, or (a finer
 * writer along one dim, a coarser along the other) both; and the kernel's
 * epilogue inputs and outputs that wait must share one writer tile (a
 * layout of words for them all): FIRST, X is the first of them.
 */
int
wait_tile(Comp *c, Kernel *k, const Tile *t, const Tensor *x, bool first)
{
	const int *w = x->wait_tile;

	if (w[0] && ((t->bm % w[0] && w[0] % t->bm) || (t->bn % w[1] && w[1] % t->bn)))
		return diag_error(c, x->wait_tile_pos, "the writer's tile %d x %d of '%s' and the kernel's tile %d x %d "
		                  "do not nest: in each dim one extent must divide the other, so that each kernel tile "
		                  "covers whole writer tiles or lies inside one (give the writer a tile whose rows divide "
		                  "or are a multiple of %d and whose columns divide or are a multiple of %d)", w[0], w[1],
		                  x->name, t->bm, t->bn, t->bm, t->bn);
	if (!first && (k->mm.wait_tile[0] != w[0] || k->mm.wait_tile[1] != w[1]))
		return unbuilt(c, x->wait_tile_pos.line ? x->wait_tile_pos : x->wait_pos, "epilogue inputs (or outputs) "
		               "that wait with different writer tiles in one kernel ('%s' and one before it) are not "
		               "implemented yet", x->name);
	k->mm.wait_tile[0] = w[0];
	k->mm.wait_tile[1] = w[1];
	return 0;
}

/*
 * An epilogue input whose writer's tile R x C (MatmulPlan.wait_tile) is not
 * the kernel's: the words follow the writer's layout, [batch, row tiles,
 * column tiles] of R x C, and the tile waits (WAIT, cloned into ONE) for
 * each writer tile it overlaps that lies inside the output, the first
 * always: BM / R x BN / C of them where the writer's are finer, one along
 * a dim where the writer's is as coarse or coarser (the one holding the
 * tile: row0 / R).  Several are waited for in a loop, so the CUDA does not
 * grow with the hint (a 1 x 1 writer tile is 32768 words a tile).  NAME:
 * the input's; its words start at AT.  Returns how many it has (a batch's).
 */
static Expr *
wait_words(Comp *c, Kernel *k, const Tile *t, Stmt *one, const Stmt *wait, const char *name, Expr *at)
{
	int r = k->mm.wait_tile[0], cw = k->mm.wait_tile[1];
	int ni = t->bm > r ? t->bm / r : 1, nj = t->bn > cw ? t->bn / cw : 1;
	Expr *rows = ex_var(c, k->rows_var), *cols = ex_var(c, k->cols_var);
	Expr *rows_w = ex_bin(c, EX_CEILDIV, rows, ex_int(c, r)), *cols_w = ex_bin(c, EX_CEILDIV, cols, ex_int(c, cw));
	Expr *words = ex_bin(c, EX_MUL, rows_w, cols_w), *i = ex_int(c, 0), *j = ex_int(c, 0);
	Expr *row, *col, *word, *in = NULL;
	Stmt *w = st_clone(c, wait, 0, NULL), *loop = NULL;

	if (ni * nj > 1) {
		int v = kernel_add_var(c, k, "wt");

		loop = st_loop(c, v, ex_int(c, 0), ex_int(c, ni * nj), LOOP_SERIAL);
		loop->comment = arena_printf(c->arena, "the writer's %d x %d tiles this tile of '%s' overlaps, %d x %d",
		                             r, cw, name, ni, nj);
		if (ni > 1)
			i = nj > 1 ? ex_bin(c, EX_DIV, ex_var(c, v), ex_int(c, nj)) : ex_var(c, v);
		if (nj > 1)
			j = ni > 1 ? ex_bin(c, EX_MOD, ex_var(c, v), ex_int(c, nj)) : ex_var(c, v);
		if (ni > 1)
			in = ex_bin(c, EX_LT, ex_bin(c, EX_ADD, t->row0, ex_bin(c, EX_MUL, i, ex_int(c, r))), rows);
		if (nj > 1) {
			Expr *x = ex_bin(c, EX_LT, ex_bin(c, EX_ADD, t->col0, ex_bin(c, EX_MUL, j, ex_int(c, cw))), cols);

			in = in ? ex_bin(c, EX_AND, in, x) : x;
		}
	}
	row = ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, t->row0, ex_int(c, r)), i);
	col = ex_bin(c, EX_ADD, ex_bin(c, EX_DIV, t->col0, ex_int(c, cw)), j);
	word = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, row, cols_w), col);
	if (t->bt)
		word = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, t->bt, words), word);
	if (!(at->kind == EX_INT && at->ival == 0))
		word = ex_bin(c, EX_ADD, at, word);
	w->u.flag_wait.word = word;
	w->u.flag_wait.cond = in;
	w->comment = arena_printf(c->arena, "the writer's %d x %d tile%s of this tile of '%s' %s been written", r, cw,
	                          loop ? "s" : "", name, loop ? "have" : "has");
	if (loop) {
		st_append(c, loop, w);
		w = loop;
	}
	st_append(c, one, w);
	return words;
}

/*
 * Inputs with wait: per_tile (MatmulPlan.waits): their tiles arrive while the
 * kernel runs, each published by the writer's flag word (a peer GPU's
 * epilogue, over NVLink, or a kernel on another stream).  Their words in
 * the caller's wait_flags follow one another in spec order: an epilogue
 * input's one an output tile (the signal's layout), an operand's one a row
 * tile of A or a column tile of B (times the batch).
 *
 * An epilogue input: before the tile's first epilogue, after its mainloop
 * (which runs while the tile is still on its way), one thread of those that
 * compute the tile waits for the word; a barrier (sync.c's
 * expand_flag_waits) then gives the other threads what the acquire made
 * visible.  An operand (the load side of
 * all-gather + GEMM): the thread that issues its loads waits, at the
 * tile's first k-step, before the loads, and fences the async proxy, so
 * its TMA reads what the acquire saw.  An output that waits (an
 * accumulating output whose tile another kernel writes first: the
 * reduce-scatter's owner) is waited for as an epilogue input is, after
 * the inputs' words, and the waiting thread fences the async proxy before
 * the barrier, so the epilogue's TMA stores (or adds) come after what the
 * acquire saw.
 */
void
wait_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Expr *batch, Expr *batch_tiles)
{
	Stmt *one = st_if(c, ex_leaf(c, EX_ELECT));
	Expr *rows_t, *cols_t, *at = ex_int(c, 0), *tile;
	int p, i, j, e, n;

	p = kernel_add_param(c, k, PK_WAIT, "wait_flags");
	lower_epoch(c, k);
	rows_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->rows_var), ex_int(c, k->tile_rows));
	cols_t = ex_bin(c, EX_CEILDIV, ex_var(c, k->cols_var), ex_int(c, k->tile_cols));
	tile = lower_flag_index(c, k, t->row0, t->col0, t->bt, batch_tiles);
	one->comment = "one thread waits for the tiles of the inputs that arrive while the kernel runs";
	for (i = 0; i < f->ninput + f->nout; i++) {
		const Tensor *x = &f->tensor[fusion_arg_tensor(f, i)];
		Expr *words, *word;
		Stmt *s;
		int q;

		if (!x->wait_pos.line)
			continue;
		for (q = 1; q < k->nparam && !(k->param[q].arg == i && k->param[q].tensor == fusion_arg_tensor(f, i)); q++)
			;
		s = st_new(c, ST_FLAG_WAIT);
		s->u.flag_wait.param = p;
		s->pos = x->wait_pos;
		if (i >= f->ninput) {   /* an output: its stores (the async proxy) are ordered after the acquire */
			s->u.flag_wait.output = 1;
			one->comment = "one thread waits for the tiles of the inputs that arrive, and of the outputs that may "
			               "be written, while the kernel runs";
		}
		if (k->param[q].kind == PK_TMAP && i < f->ninput) {   /* an operand: A by row tiles, B by column tiles */
			bool is_a = k->buf[t->abuf].param == q;
			Expr *idx = ex_bin(c, EX_DIV, is_a ? t->row0 : t->col0, ex_int(c, is_a ? k->tile_rows : k->tile_cols));

			if (t->bt)
				idx = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, t->bt, is_a ? rows_t : cols_t), idx);
			words = is_a ? rows_t : cols_t;
			word = idx;
			s->u.flag_wait.producer = true;
			s->comment = arena_printf(c->arena, "the %s of '%s' this tile reads have been written",
			                          is_a ? "rows" : "columns", x->name);
			/* before the loads of every k loop that loads it, at the tile's first k-step */
			for (j = 0; j < t->loop->nbody; j++) {
				Stmt *kl = t->loop->body[j], *w;

				if (kl->kind != ST_LOOP || !kernel_loads_from(k, kl, 0, q))
					continue;
				for (e = 0; e < kl->nbody && !(kl->body[e]->kind == ST_IF && kernel_loads_from(k, kl->body[e], 0, q)); e++)
					;
				w = st_clone(c, s, 0, NULL);
				w->u.flag_wait.word = at->kind == EX_INT && at->ival == 0 ? word : ex_bin(c, EX_ADD, at, word);
				w->u.flag_wait.cond = ex_bin(c, EX_EQ, ex_var(c, kl->u.loop.var), ex_int(c, 0));
				for (n = 0; n < kl->body[e]->nbody && kl->body[e]->body[n]->kind == ST_FLAG_WAIT; n++)
					;   /* after the waits of the inputs before it */
				st_insert(c, kl->body[e], n, w);
			}
		} else if (k->mm.wait_tile[0]) {
			words = wait_words(c, k, t, one, s, x->name, at);
		} else {
			words = ex_bin(c, EX_MUL, rows_t, cols_t);
			s->u.flag_wait.word = at->kind == EX_INT && at->ival == 0 ? tile : ex_bin(c, EX_ADD, at, tile);
			s->comment = arena_printf(c->arena, i < f->ninput ? "this tile of '%s' has been written" :
			                          "this tile of '%s' may be written", x->name);
			st_append(c, one, s);
		}
		if (batch)
			words = ex_bin(c, EX_MUL, words, batch);
		at = ex_bin(c, EX_ADD, at, words);
	}
	if (!one->nbody)
		return;
	/* before the first epilogue loop of the tile (after its k loop); sync.c's expand_flag_waits adds the barrier */
	for (j = 0; j < t->loop->nbody; j++) {
		const Stmt *x = t->loop->body[j];

		if (x->kind == ST_LOOP && strcmp(k->var[x->u.loop.var].name, "e") == 0)
			break;
	}
	st_insert(c, t->loop, j, one);
}

/*
 * The epilogue's full inputs [M, N] (a residual), which the consumers read
 * through their pointers: the producer pulls each one's box of the tile
 * into L2 with one TMA prefetch, issued with the tile's last k-step's
 * loads, a few k-steps before the consumers' epilogue (the producer runs
 * ahead by the stages), so that the epilogue's loads find the tile in L2,
 * not in DRAM (docs/perf_history.md).  An input that waits per tile (its
 * tiles arrive while the kernel runs) too on cooperative consumers, whose
 * epilogue holds up the k loop: the prefetch may find the tile not yet
 * written, but L2 is where a writer's stores land (another kernel's, or a
 * peer GPU's over NVLink), so what it brings is never read stale, and the
 * epilogue reads through L2 only after the flag; not on ping-pong ones,
 * whose epilogue runs beside the other's k loop.  Not where the k loop is
 * not the tile's whole (a K-split, stream-K) or is one of several
 * (independent matmuls), nor swapped (few rows).
 *
 * Requires KLOOP, the tile's first k loop; leaves a prefetch map
 * (KParam.prefetch: the tensor's domain view, one box the output tile) and
 * its ST_TMA_PREFETCH among the producer's loads, at KLOOP's last k-step.
 */
void
prefetch_inputs(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop)
{
	Stmt *issue = NULL;
	int q, i, n = k->nparam;

	if (k->mm.swap_ab || ksum_rule[t->k->mm.ksum].partial)
		return;
	for (i = 0; i < kloop->nbody && !issue; i++)
		if (kloop->body[i]->kind == ST_IF && kir_has_load(kloop->body[i]))
			issue = kloop->body[i];
	for (q = 1; q < n && issue; q++) {
		const KParam x = k->param[q];   /* a copy: adding a param may move the table */
		const Tensor *in = &f->tensor[x.tensor];
		Stmt *s;
		int p;

		if (x.kind != PK_PTR || x.view != VIEW_FULL || x.arg < 0 || x.arg >= f->ninput ||
		    (in->wait_pos.line && k->mm.pingpong))
			continue;
		p = kernel_add_map(c, k, q, t->bm, t->bn);
		k->param[p].prefetch = true;
		s = st_new(c, ST_TMA_PREFETCH);
		s->u.tma.param = p;
		s->u.tma.row = t->row0;
		s->u.tma.col = t->col0;
		s->u.tma.batch = k->mm.batched && in->rank > 2 ? t->bt : NULL;
		s->u.tma.cond = ex_bin(c, EX_EQ, ex_var(c, kloop->u.loop.var), ex_bin(c, EX_SUB, t->ktiles, ex_int(c, 1)));
		s->pos = in->pos;
		s->comment = arena_printf(c->arena, "the tile's '%s' into L2, where the epilogue's loads find it a few "
		                          "k-steps from now", in->name);
		st_insert(c, issue, 0, s);
	}
}

/*
 * The epilogue's row inputs (a bias [N]) through shared memory (BUF_ROW):
 * each consumer thread loads a column of the tile's before its k loop
 * (ST_ROW_FETCH), whose latency the k loop hides, and writes it to the
 * tile's copy after (ST_ROW_PUT); a barrier (sync.c) and the epilogue's
 * subtiles read their columns from there.  Read from global memory in the
 * epilogue instead (emit_matmul.c, staged_inputs), each subtile's
 * fence.proxy.async waited for the next subtile's loads in flight, and the
 * bounds tests cost instructions a subtile (docs/perf_history.md).  Two
 * copies, by the tile loop's count: the barrier before a tile's epilogue
 * comes after every thread's reads of the copy before, so the copy a tile
 * writes was last read two tiles back, behind that barrier.  One
 * cooperative mainloop with whole tiles: not ping-pong (a warpgroup's
 * tiles are every other), swapped (the tile transposed), a K-split or
 * stream-K (the epilogue a part's), several independent matmuls, inputs
 * that wait (the fetch would run ahead of the wait) or a signal's consumer
 * role; those read in the epilogue as before.
 *
 * Requires the tile loop and KLOOP; leaves the row buffers and their fetch
 * and put statements.
 */
void
stage_rows(Comp *c, const Fusion *f, Kernel *k, const Tile *t, Stmt *kloop, int ng)
{
	Stmt *compute = st_first(t->loop, ST_COMPUTE);   /* the epilogue's (one matmul group: one) */
	Expr *slot = ex_bin(c, EX_MOD, ex_var(c, t->loop->u.loop.var), ex_int(c, 2));
	int j, at;

	if (ng != 1 || k->mm.swap_ab || k->mm.pingpong || ksum_rule[t->k->mm.ksum].partial || k->mm.waits ||
	    f->sched.consumer_pos.line || !compute || t->bn > k->consumer_threads)
		return;
	for (at = 0; at < t->loop->nbody && t->loop->body[at] != kloop; at++)
		;
	if (at == t->loop->nbody)
		return;
	for (j = 1; j < k->nparam; j++) {
		const KParam *p = &k->param[j];
		Stmt *fetch, *put;
		Access *r;
		int b;

		if (p->kind != PK_PTR || p->view != VIEW_ROW || p->arg < 0 || p->arg >= f->ninput || !op_reads(f, p->tensor))
			continue;
		b = kernel_add_buf(c, k, arena_printf(c->arena, "row_%s", p->name), BUF_ROW, p->dtype, 1, t->bn);
		k->buf[b].param = j;
		k->buf[b].tensor = p->tensor;
		k->buf[b].stages = 2;
		fetch = st_new(c, ST_ROW_FETCH);
		fetch->u.row_copy.buf = b;
		fetch->u.row_copy.param = j;
		fetch->u.row_copy.col = t->col0;
		fetch->pos = f->tensor[p->tensor].pos;
		fetch->comment = "the tile's columns, landing while the k loop runs";
		st_insert(c, t->loop, at++, fetch);
		put = st_new(c, ST_ROW_PUT);
		put->u.row_copy.buf = b;
		put->u.row_copy.slot = slot;
		put->comment = "for the epilogue's subtiles";
		st_insert(c, t->loop, at + 1, put);
		r = VEC_PUSH(c->arena, compute->reads, compute->nreads, compute->capreads);
		r->buf = b;
		r->slot = slot;
	}
}

/*
 * The epilogue's full inputs [M, N] (a residual) that the output staging
 * copies can carry: each copy's subtile of the input is loaded by TMA
 * before the compute writes the copy, and the compute reads each element
 * it writes from there first (its thread's own elements: no barrier), as
 * CUTLASS's epilogue loads C into the shared memory its D reuses; cheaper
 * than reading through the pointer in each subtile (docs/perf_history.md).
 * Only on one cooperative mainloop of whole tiles whose copies are a
 * ring (as stage_rows: not ping-pong, swapped, K-split, stream-K,
 * independent matmuls, inputs that wait or a signal's consumer role), not
 * batched (the maps are 2-D).
 *
 * Requires the staging copies placed; leaves KBuf.preload (the input's
 * PK_PTR param) on the first copy of the input's element size not yet
 * taken, which circular buffering keeps where the copies are three or more
 * and divide the subtiles (keep_preloads); warp_specialize issues the loads
 * (issue_preloads) and sync places their waits (preload_waits).
 */
void
preload_inputs(const Fusion *f, Kernel *k, const Tile *t, int ng)
{
	Stmt *compute = st_first(t->loop, ST_COMPUTE);
	int j, w;

	if (ng != 1 || k->mm.swap_ab || k->mm.pingpong || ksum_rule[t->k->mm.ksum].partial || k->mm.waits ||
	    k->mm.batched || f->sched.consumer_pos.line || !compute)
		return;
	for (j = 1; j < k->nparam; j++) {
		const KParam *p = &k->param[j];

		if (p->kind != PK_PTR || p->view != VIEW_FULL || p->arg < 0 || p->arg >= f->ninput ||
		    f->tensor[p->tensor].rank != 2 || !op_reads(f, p->tensor))
			continue;
		for (w = 0; w < compute->nwrites; w++) {
			KBuf *b = &k->buf[compute->writes[w].buf];

			if (b->kind == BUF_STAGING && b->ring && !b->preload &&
			    dtype_info[b->dtype].bytes == dtype_info[p->dtype].bytes) {
				b->preload = j;
				break;
			}
		}
	}
}
