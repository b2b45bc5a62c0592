/*
 * warp_specialize.c: split the circular-buffered loop into a producer
 * sub-loop (one warp, TMA issue only) and a consumer sub-loop (everything
 * else), under one role branch.
 *
 * Contract.  Requires: circular_buffer.c ran and marked a warp-specialized
 * loop.  Guarantees: the loop is replaced by ST_ROLES; the producer branch
 * holds a copy of the loop with only its load-issuing statements (their
 * coordinates already depend on the loop index alone), the consumer branch
 * the loop without loads followed by every statement that came after the
 * loop in its block, so the epilogue lives with the consumers.  Both loops
 * run over the same linear index, so stage and parity agree.  No CTA-wide
 * barrier may follow inside the roles (sync.c uses named barriers there).
 * Invalidates: nothing.
 *
 * Registers: setmaxnreg needs whole warpgroups on both sides; a pointwise
 * kernel has one producer warp and little register pressure, so it sets none.
 */
#include "passes.h"

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

		if (x->kind == ST_LOOP && x->cb && x->cb->warp_specialized && x->cb->part == CB_NONE) {
			w->parent = s;
			w->index = i;
			return;
		}
		find_ws_loop(x, w);
	}
}

void
ws_name_barriers(const Kernel *k, Stmt *s, int role)
{
	int j;

	if (!s)
		return;
	if (s->kind == ST_SYNC && role && s->n == 0) {
		s->n = k->role[role].bar_id;
		s->threads = k->role[role].threads;
	}
	if (s->kind == ST_ROLE)
		role = s->role;
	for (j = 0; j < s->nbody; j++)
		ws_name_barriers(k, s->body[j], role);
	ws_name_barriers(k, s->orelse, role);
}

static Stmt *
role_branch(Comp *c, Kernel *k, RoleKind kind, int first, int threads)
{
	Stmt *s = st_new(c, ST_ROLE);

	s->role = kernel_add_role(c, k, kind, first, threads);
	return s;
}

int
pass_warp_specialize(Comp *c)
{
	Kernel *k = c->kernel;
	Where w = {0};
	Stmt *loop, *producer, *consumer, *roles, *slice, *pbranch, *cbranch;
	int i;

	if (!k->warp_specialize)
		return 0;
	find_ws_loop(k->body, &w);
	if (!w.parent)
		return diag_internal(c, "warp_specialize", "no circular-buffered loop to split");
	loop = w.parent->body[w.index];

	producer = st_clone(c, loop, 0, NULL);
	slice = cb_load_slice(c, loop);
	producer->body = slice->body;
	producer->nbody = slice->nbody;
	producer->capbody = slice->capbody;
	producer->cb->part = CB_PRODUCER;
	producer->comment = "producer: issue the loads of every tile";

	consumer = loop;
	cb_strip_loads(consumer);
	consumer->cb->part = CB_CONSUMER;
	consumer->comment = "consumers: compute every tile";

	/* the producer warp after the consumer threads; the consumers' barriers are named barrier 1 */
	roles = st_new(c, ST_ROLES);
	pbranch = role_branch(c, k, ROLE_PRODUCER, k->consumer_threads, k->threads - k->consumer_threads);
	cbranch = role_branch(c, k, ROLE_CONSUMER, 0, k->consumer_threads);
	st_append(c, roles, pbranch);
	st_append(c, roles, cbranch);
	st_append(c, pbranch, producer);
	st_append(c, cbranch, consumer);
	for (i = w.index + 1; i < w.parent->nbody; i++)
		st_append(c, cbranch, w.parent->body[i]);
	w.parent->body[w.index] = roles;
	w.parent->nbody = w.index + 1;
	ws_name_barriers(k, roles, 0);
	return 0;
}
