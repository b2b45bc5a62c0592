/*
 * sync_protocols.c: the protocols sync.c's analysis cannot yet derive from
 * effects, expanded by name before its walk (sync.c's contract lists them):
 * requires the protocol statements lowering and warp_specialize left
 * (ST_SIGNAL to the consumer role with its barriers, Kernel.tile_consumer,
 * the elected ST_FLAG_WAITs of epilogue inputs, the preloads' loads);
 * leaves each one's waits, arrivals and barriers beside it, as the walk
 * then sees them; places no load.
 */
#include "sync.h"

/*
 * The signal to the consumer role (ST_SIGNAL with taken): before each
 * arrive on landed[j % S], the wait on taken[j % S] for the role's release
 * of the slot's tile before, parity ((j / S) & 1) ^ 1.  Sets *LANDED and
 * *TAKEN to the barriers it met.
 */
static void
signal_waits(Comp *c, const Kernel *k, Stmt *s, int *landed, int *taken)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nbody; i++) {
		Stmt *x = s->body[i];

		if (x->kind == ST_SIGNAL && x->u.signal.taken) {
			Expr *j = x->u.signal.tile, *slots = ex_int(c, k->bar[x->u.signal.taken].count);
			Expr *par = ex_bin(c, EX_XOR, ex_bin(c, EX_AND, ex_bin(c, EX_DIV, j, slots), ex_int(c, 1)), ex_int(c, 1));

			*landed = x->u.signal.bar;
			*taken = x->u.signal.taken;
			st_insert(c, s, i++, mbar(c, ST_MBAR_WAIT, *taken, x->u.signal.barslot, par,
			                          "the consumer role has taken the tile that used this slot before"));
			continue;
		}
		signal_waits(c, k, x, landed, taken);
	}
	signal_waits(c, k, st_else(s), landed, taken);
}

/*
 * The consumer role's loop CL over the CTA's tiles j: before its compute,
 * the wait on landed[j % S] (parity (j / S) & 1); with flags, the role's
 * barrier before the elected raise (every thread's stores before one
 * thread's release); last, the arrive on taken[j % S].
 */
static void
consumer_protocol(Comp *c, const Kernel *k, Stmt *cl, int landed, int taken)
{
	Expr *j = ex_var(c, cl->u.loop.var), *slots = ex_int(c, k->bar[landed].count);
	Expr *slot = ex_bin(c, EX_MOD, j, slots);
	int i;

	for (i = 0; i < cl->nbody && cl->body[i]->kind != ST_COMPUTE; i++)
		;
	st_insert(c, cl, i, mbar(c, ST_MBAR_WAIT, landed, slot, ex_bin(c, EX_AND, ex_bin(c, EX_DIV, j, slots), ex_int(c, 1)),
	                         "the tile's stores have landed"));
	for (i += 2; i < cl->nbody; i++)
		if (cl->body[i]->kind == ST_IF && st_first(cl->body[i], ST_SIGNAL)) {
			st_insert(c, cl, i, barrier(c, "every thread of the role has written its part of the tile"));
			break;
		}
	st_append(c, cl, mbar(c, ST_MBAR_ARRIVE, taken, slot, NULL, "the tile is read: its slot may take another"));
}

/* Does elected block S hold an epilogue input's (or output's) flag wait, itself or in its loop? */
static bool
waits_for_tile(const Stmt *s)
{
	int i;

	if (s->kind != ST_IF || s->u.branch.cond->kind != EX_ELECT)
		return false;
	for (i = 0; i < s->nbody; i++) {
		const Stmt *x = s->body[i]->kind == ST_LOOP ? st_first(s->body[i], ST_FLAG_WAIT) : s->body[i];

		if (x && x->kind == ST_FLAG_WAIT && !x->u.flag_wait.producer)
			return true;
	}
	return false;
}

/*
 * The flag waits of epilogue inputs (lower_matmul_sync.c, wait_inputs): one
 * thread acquires; after its block, the consumers' barrier gives every
 * thread that computes the tile what the acquire made visible.
 */
static void
flag_wait_barriers(Comp *c, Stmt *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nbody; i++) {
		if (waits_for_tile(s->body[i])) {
			st_insert(c, s, ++i, barrier(c, "what the wait made visible, to every thread that computes the tile"));
			continue;
		}
		flag_wait_barriers(c, s->body[i]);
	}
	flag_wait_barriers(c, st_else(s));
}

/* Is S an expect_tx on a barrier of the preloads (KBuf.preload_bar)? */
static bool
arms_preload(const Kernel *k, const Stmt *s)
{
	int b;

	if (s->kind != ST_EXPECT_TX)
		return false;
	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].preload && k->buf[b].preload_bar == s->u.mbar.bar)
			return true;
	return false;
}

/* Before each block in S that begins with a preload's loads: the wait for the stores that read its copies. */
static void
read_waits(Comp *c, const Kernel *k, Stmt *s, const char *why)
{
	int i;

	if (s->kind == ST_IF && s->nbody && arms_preload(k, s->body[0])) {
		st_insert(c, s, 0, bulk_wait(c, 0, true, why));
		return;
	}
	for (i = 0; i < s->nbody; i++)
		read_waits(c, k, s->body[i], why);
}

/*
 * The epilogue inputs the staging copies carry (warp_specialize.c,
 * issue_preloads): the loads at the k loop's end wait for the tile
 * before's stores to have read their copies, those in the epilogue loop
 * for the store before's (bulk.wait_group.read 0), and every consumer
 * thread waits on the copy's barrier before the compute that reads it,
 * with the parity of the copy's use, i x E / S + e / S (E subtiles a
 * tile, S copies).  A copy is rewritten only after its load landed, which
 * is after the store before read it: the read-wait the walk places before
 * a copy's compute otherwise is never needed, and it finds none.
 */
static int
preload_waits(Comp *c, Kernel *k)
{
	PreloadAt w;
	int b, i, n = preload_at(c, k, &w);

	if (n <= 0)
		return n;
	read_waits(c, k, w.kloop, "the tile before's stores have read their copies");
	read_waits(c, k, w.store, "the store before has read its copy");
	for (b = 1; b < k->nbuf; b++) {
		const KBuf *u = &k->buf[b];
		Expr *slot = NULL, *use;

		if (u->kind != BUF_STAGING || !u->preload)
			continue;
		for (i = 0; i < w.compute->nwrites; i++)
			if (w.compute->writes[i].buf == b)
				slot = w.compute->writes[i].slot;
		use = ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, ex_var(c, w.tile->u.loop.var), ex_int(c, w.eloop->u.loop.hi->ival)),
		             ex_var(c, w.eloop->u.loop.var));
		st_insert(c, w.eloop, index_of(w.eloop, w.compute),
		          mbar(c, ST_MBAR_WAIT, u->preload_bar, slot, ex_stage_parity(c, k, use, u->stages),
		               arena_printf(c->arena, "the copy's '%s' has landed", k->param[u->preload].name)));
	}
	return 0;
}

int
expand_protocols(Comp *c, Kernel *k)
{
	int landed = 0, taken = 0;

	signal_waits(c, k, k->body, &landed, &taken);
	if (k->tile_consumer && landed)
		consumer_protocol(c, k, k->tile_consumer, landed, taken);
	flag_wait_barriers(c, k->body);
	return preload_waits(c, k);
}
