/*
 * spec_schedule.c: the front end's 'schedule' map of hints.  Requires the ops
 * read (a consumer output names one), leaves them in the Fusion's Schedule.
 */
#include <string.h>

#include "spec.h"

static const char *const schedule_keys[] = {
	"tile", "stages", "warp_specialize", "persistent", "cluster", "consumers", "signal", "store", "swap_ab",
	"split_k", "stream_k",
};

/* tile: [EXTENT, ...]   1 to 3 entries */
static int
read_tile(Reader *r, Schedule *s, const Node *n)
{
	int64_t v;
	int i;

	if (need_kind(r, n, N_LIST, "a list of 1 to 3 tile extents for 'tile'") < 0)
		return -1;
	if (n->nkid < 1 || n->nkid > 3)
		return diag_error(r->c, n->pos, "expected 1 to 3 tile extents for 'tile', saw %d", n->nkid);
	for (i = 0; i < n->nkid; i++) {
		if (read_int(r, n->kid[i], "a tile extent", 1, MAX_TILE, &v) < 0)
			return -1;
		s->tile[i] = (int)v;
	}
	s->ntile = n->nkid;
	s->tile_pos = n->pos;
	return 0;
}

/* cluster: [X, Y]   at most MAX_CLUSTER CTAs */
static int
read_cluster(Reader *r, Schedule *s, const Node *n)
{
	int64_t v;
	int i;

	if (need_kind(r, n, N_LIST, "a list [x, y] for 'cluster'") < 0)
		return -1;
	if (n->nkid != 2)
		return diag_error(r->c, n->pos, "expected [x, y] for 'cluster', saw %d entries", n->nkid);
	for (i = 0; i < 2; i++) {
		if (read_int(r, n->kid[i], "a cluster extent", 1, MAX_CLUSTER, &v) < 0)
			return -1;
		s->cluster[i] = (int)v;
	}
	if (s->cluster[0] * s->cluster[1] > MAX_CLUSTER)
		return diag_error(r->c, n->pos, "cluster [%d, %d] has %d CTAs, more than the limit of %d",
		                  s->cluster[0], s->cluster[1], s->cluster[0] * s->cluster[1], MAX_CLUSTER);
	return 0;
}

/* One name of the signal's consumer outputs: an output of the spec, named once. */
static int
read_consumer_output(Reader *r, const Node *n)
{
	const char *name = read_name(r, n, "a signal consumer's output");
	int j, t;

	if (!name)
		return -1;
	t = names_get(r, tensor_scope, name);
	for (j = 0; j < r->f->nout && r->f->out[j].tensor != t; j++)
		;
	if (!t || j == r->f->nout) {
		const char *best = t ? NULL : suggest_tensor(r, name);

		if (best)
			return diag_error(r->c, n->pos, "signal consumer '%s' names no tensor: did you mean '%s'?", name,
			                  best);
		return diag_error(r->c, n->pos, "signal consumer '%s' is not an output: the consumer computes outputs "
		                  "(name it under 'outputs')", name);
	}
	if (r->f->out[j].consumer)
		return diag_error(r->c, n->pos, "signal consumer '%s' is named twice", name);
	r->f->out[j].consumer = true;
	return 0;
}

/*
 * signal: { per_tile, consumer: NAME | [NAME, ...], flags: BOOL, scope: gpu |
 * system }   (per_tile with no value, or true): the outputs the kernel's
 * consumer role computes from each stored tile, and whether the role raises
 * each tile's flag when it has written them.
 */
static int
read_signal(Reader *r, const Node *n)
{
	static const char *const keys[] = {"per_tile", "consumer", "scope", "flags"}, *const scopes[] = {"gpu", "system"};
	const Node *v;
	int i, word = 0;

	if (check_keys(r, n, "'signal'", keys, countof(keys)) < 0)
		return -1;
	if (read_per_tile(r, n, "in 'signal' ({per_tile, consumer: [...]}): the signal is raised per output tile",
	                  "to raise no signal, leave out 'signal'") < 0)
		return -1;
	if ((v = map_get(n, "scope"))) {   /* who reads the flags: this GPU (gpu) or another, or the host */
		if (read_word(r, v, "the 'scope' of 'signal'", scopes, countof(scopes), &word) < 0)
			return -1;
		r->f->sched.system = word == 2;
		r->f->sched.scope_pos = v->pos;
	}
	if ((v = map_get(n, "flags"))) {   /* with a consumer: does its role raise the tiles' flags */
		if (read_bool(r, v, "'flags' of 'signal'", &r->f->sched.consumer_flags) < 0)
			return -1;
		if (!map_get(n, "consumer"))
			return diag_error(r->c, v->pos, "'flags' says whether the signal's consumer role raises the tiles' "
			                  "flags; without 'consumer' the epilogue raises them: leave out 'flags'");
	}
	if (!(v = map_get(n, "consumer")))
		return 0;   /* {per_tile}: the same as signal: per_tile */
	r->f->sched.consumer_pos = v->pos;
	if (v->kind == N_SCALAR)
		return read_consumer_output(r, v);
	if (need_kind(r, v, N_LIST, "an output name or a list of them for 'consumer'") < 0)
		return -1;
	if (v->nkid == 0)
		return diag_error(r->c, v->pos, "'consumer' names no output: name the outputs the consumer computes");
	for (i = 0; i < v->nkid; i++)
		if (read_consumer_output(r, v->kid[i]) < 0)
			return -1;
	return 0;
}

/* schedule: { tile: [EXTENT, ...], stages: INT, warp_specialize: BOOL, persistent: BOOL,
 *             cluster: [X, Y], consumers: cooperative | pingpong,
 *             signal: per_tile | {per_tile, consumer: NAME | [NAME, ...], flags: BOOL, scope: gpu | system},
 *             store: vector | tma, swap_ab: BOOL, split_k: INT, stream_k: BOOL } */
int
read_schedule(Reader *r, const Node *key, const Node *n)
{
	static const char *const consumers[] = {"cooperative", "pingpong"};
	static const char *const signals[] = {"per_tile"};
	static const char *const stores[] = {"vector", "tma"};
	Schedule *s = &r->f->sched;
	int i, word = 0;
	int64_t v = 0;
	bool b = false;

	s->pos = key->pos;
	if (n->type == SC_NULL)
		return 0;
	if (need_kind(r, n, N_MAP, "a mapping of schedule hints for 'schedule'") < 0 ||
	    check_keys(r, n, "'schedule'", schedule_keys, countof(schedule_keys)) < 0)
		return -1;
	for (i = 0; i < n->nkid; i += 2) {
		const char *k = n->kid[i]->text;
		const Node *val = n->kid[i + 1];

		if (strcmp(k, "tile") == 0) {
			if (read_tile(r, s, val) < 0)
				return -1;
		} else if (strcmp(k, "stages") == 0) {
			if (read_int(r, val, "'stages'", 1, MAX_STAGES, &v) < 0)
				return -1;
			s->stages = (int)v;
			s->stages_pos = val->pos;
		} else if (strcmp(k, "warp_specialize") == 0) {
			if (read_bool(r, val, "'warp_specialize'", &b) < 0)
				return -1;
			s->warp_specialize = b ? 2 : 1;
			s->ws_pos = val->pos;
		} else if (strcmp(k, "persistent") == 0) {
			if (read_bool(r, val, "'persistent'", &b) < 0)
				return -1;
			s->persistent = b ? 2 : 1;
		} else if (strcmp(k, "cluster") == 0) {
			if (read_cluster(r, s, val) < 0)
				return -1;
			s->cluster_pos = val->pos;
		} else if (strcmp(k, "consumers") == 0) {
			if (read_word(r, val, "'consumers'", consumers, countof(consumers), &word) < 0)
				return -1;
			s->consumers = word == 2 ? CONSUMERS_PINGPONG : CONSUMERS_COOPERATIVE;
			s->consumers_pos = val->pos;
		} else if (strcmp(k, "signal") == 0) {
			if (val->kind == N_MAP ? read_signal(r, val) < 0
			                       : read_word(r, val, "'signal'", signals, countof(signals), &word) < 0)
				return -1;
			s->signal = SIGNAL_PER_TILE;
			s->signal_pos = val->pos;
		} else if (strcmp(k, "store") == 0) {
			if (read_word(r, val, "'store'", stores, countof(stores), &word) < 0)
				return -1;
			s->store = word == 2 ? STORE_TMA : STORE_VECTOR;
			s->store_pos = val->pos;
		} else if (strcmp(k, "swap_ab") == 0) {
			if (read_bool(r, val, "'swap_ab'", &b) < 0)
				return -1;
			s->swap_ab = b ? 2 : 1;
			s->swap_pos = val->pos;
		} else if (strcmp(k, "split_k") == 0) {
			if (read_int(r, val, "'split_k'", 1, MAX_SPLIT_K, &v) < 0)
				return -1;
			s->split_k = (int)v;
			s->split_pos = val->pos;
		} else if (strcmp(k, "stream_k") == 0) {
			if (read_bool(r, val, "'stream_k'", &b) < 0)
				return -1;
			s->stream_k = b ? 2 : 1;
			s->sk_pos = val->pos;
		}
	}
	return 0;
}
