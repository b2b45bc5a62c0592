/*
 * sync_protocols.c: the protocols sync.c's analysis cannot yet derive from
 * effects, expanded by name before its walk (sync.c's contract lists them):
 * requires the protocol statements lowering left (ST_SIGNAL to the consumer
 * role with its barriers, Kernel.tile_consumer, the elected ST_FLAG_WAITs
 * of epilogue inputs); leaves each one's waits, arrivals and barriers
 * beside it, as the walk then sees them.
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

void
expand_protocols(Comp *c, Kernel *k)
{
	int landed = 0, taken = 0;

	signal_waits(c, k, k->body, &landed, &taken);
	if (k->tile_consumer && landed)
		consumer_protocol(c, k, k->tile_consumer, landed, taken);
	flag_wait_barriers(c, k->body);
}
