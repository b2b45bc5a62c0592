/*
 * spec_ops.c: the front end's 'ops' list.  Requires the inputs read (their
 * tensors named), leaves one Op per entry with its operands and attributes
 * checked against op_info (ir/ops.h).
 */
#include <string.h>

#include "spec.h"

/* Op attribute keys and the A_* bit an op must have to take them. */
static const struct {
	const char *key;
	unsigned bit;
} attr_keys[] = {
	{"approximate", A_APPROX}, {"to", A_TO}, {"axis", A_AXIS}, {"dim", A_AXIS}, {"keepdim", A_KEEPDIM},
	{"transpose_a", A_TRANSPOSE}, {"transpose_b", A_TRANSPOSE}, {"acc", A_ACC}, {"eps", A_EPS},
	{"dim", A_DIM}, {"start", A_SLICE}, {"end", A_SLICE}, {"step", A_SLICE}, {"chunks", A_CHUNKS},
	{"sizes", A_SIZES}, {"dims", A_DIMS}, {"dim0", A_DIM01}, {"dim1", A_DIM01}, {"shape", A_SHAPE},
	{"pad", A_PAD}, {"value", A_PAD}, {"correction", A_CORRECTION}, {"num_classes", A_CLASSES},
	{"ignore_index", A_CE}, {"label_smoothing", A_CE}, {"reduction", A_CE}, {"lse_square_scale", A_CE}, {"k", A_K},
	{"largest", A_K}, {"sorted", A_K},
};

/* Keys an op cannot do without, besides out, op and in. */
static const struct {
	OpKind kind;
	const char *key;
} required_keys[] = {
	{OP_CAST, "to"}, {OP_CHUNK, "chunks"}, {OP_SPLIT, "sizes"}, {OP_PERMUTE, "dims"}, {OP_TRANSPOSE, "dim0"},
	{OP_TRANSPOSE, "dim1"}, {OP_RESHAPE, "shape"}, {OP_VIEW, "shape"}, {OP_EXPAND, "shape"}, {OP_PAD, "pad"},
	{OP_INDEX_SELECT, "dim"}, {OP_GATHER, "dim"}, {OP_INDEX_COPY, "dim"}, {OP_ONE_HOT, "num_classes"},
	{OP_TOPK, "k"},
};

/* OPNAME: one of the spellings in ir/ops.h */
static int
read_opname(const Reader *r, const Node *n, OpKind *kind)
{
	const char *names[OP_COUNT - 1];
	const char *best;
	int i;

	if (n->kind != N_SCALAR || n->type == SC_NULL)
		return diag_error(r->c, n->pos, "expected an op name, saw %s", describe(r, n));
	*kind = op_from_name(n->text);
	if (*kind != OP_NONE)
		return 0;
	for (i = 1; i < OP_COUNT; i++)
		names[i - 1] = op_info[i].name;
	best = suggest_among(n->text, names, OP_COUNT - 1);
	if (best)
		return diag_error(r->c, n->pos, "unknown op '%s': did you mean '%s'?", show(r, n->text), best);
	return diag_error(r->c, n->pos, "unknown op '%s': expected %s", show(r, n->text),
	                  join_words(r, names, OP_COUNT - 1, "or"));
}

/* Every key of op N is out, op, in or an attribute that op KIND takes. */
static int
check_op_keys(const Reader *r, const Node *n, OpKind kind)
{
	const char *allowed[3 + countof(attr_keys)] = {"out", "op", "in"}, *shown[countof(attr_keys)];
	const char *name = op_info[kind].name, *where;
	int nallowed = 3, nshown = 0, i, j;

	for (j = 0; j < countof(attr_keys); j++)
		if (op_info[kind].attrs & attr_keys[j].bit) {
			allowed[nallowed++] = attr_keys[j].key;
			if (attr_keys[j].bit != A_AXIS || strcmp(attr_keys[j].key, "dim") != 0)   /* axis's other name */
				shown[nshown++] = strcmp(attr_keys[j].key, "axis") == 0 ? "axis (or dim)" : attr_keys[j].key;
		}
	for (i = 0; i < n->nkid; i += 2) {
		const Node *key = n->kid[i];

		for (j = 0; j < nallowed; j++)
			if (strcmp(key->text, allowed[j]) == 0)
				break;
		if (j < nallowed)
			continue;
		for (j = 0; j < countof(attr_keys); j++)
			if (strcmp(key->text, attr_keys[j].key) == 0)
				break;
		if (j == countof(attr_keys)) {
			where = words(r, "op '%s'", name);
			return key_unknown(r, key, where, allowed, nallowed);
		}
		if (nallowed == 3)
			return diag_error(r->c, key->pos, "op '%s' does not take '%s': it takes no attributes",
			                  name, key->text);
		return diag_error(r->c, key->pos, "op '%s' does not take '%s': its attributes are %s", name,
		                  key->text, join_words(r, shown, nshown, "and"));
	}
	return 0;
}

/* A name that is not a tensor yet: used before its op, or never defined. */
static int
unknown_tensor(const Reader *r, OpKind op, const Node *ops, int i, const Node *n)
{
	const char *best;
	const Node *out;
	int j;

	for (j = i; j < ops->nkid; j++) {
		int k;

		out = map_get(ops->kid[j], "out");
		for (k = 0; out && out->kind == N_LIST && k < out->nkid; k++)
			if (out->kid[k]->text == n->text)
				out = out->kid[k];
		if (!out || out->text != n->text)
			continue;
		if (j == i)
			return diag_error(r->c, n->pos, "op '%s' uses its own output '%s' as an input",
			                  op_info[op].name, show(r, n->text));
		return diag_error(r->c, n->pos,
		                  "'%s' is used before it is defined: the op at %d:%d defines it, "
		                  "and ops run in list order",
		                  show(r, n->text), ops->kid[j]->pos.line, ops->kid[j]->pos.col);
	}
	if ((best = suggest_tensor(r, n->text)))
		return diag_error(r->c, n->pos, "unknown tensor '%s': did you mean '%s'?", show(r, n->text), best);
	return diag_error(r->c, n->pos, "unknown tensor '%s': expected an input or an earlier op's output",
	                  show(r, n->text));
}

/* in: [NAME | NUMBER, ...]   numbers only in binary ops, and not both operands */
static int
read_operands(Reader *r, Op *o, const Node *n, const Node *ops, int i)
{
	const OpInfo *info = &op_info[o->kind];
	int j, nlit = 0;

	if (need_kind(r, n, N_LIST, "a list of inputs for op '%s'", info->name) < 0)
		return -1;
	if (n->nkid < info->min_in || n->nkid > info->max_in) {
		if (info->min_in == info->max_in)
			return diag_error(r->c, n->pos, "op '%s' takes %d input%s, saw %d", info->name,
			                  info->min_in, info->min_in == 1 ? "" : "s", n->nkid);
		return diag_error(r->c, n->pos, "op '%s' takes %d to %d inputs, saw %d", info->name,
		                  info->min_in, info->max_in, n->nkid);
	}
	for (j = 0; j < n->nkid; j++) {
		const Node *a = n->kid[j];
		Operand *in = &o->in[j];

		in->pos = a->pos;
		if (a->type == SC_INT || a->type == SC_FLOAT) {
			if (!scalar_number(a, &in->lit))
				return diag_error(r->c, a->pos, "expected a finite number, saw %s", describe(r, a));
			in->lit_int = a->type == SC_INT;
			if (info->cls != CLS_BINARY)
				return diag_error(r->c, a->pos,
				                  "op '%s' takes tensors, not the number %s: "
				                  "name an input or an earlier op's output",
				                  info->name, show(r, a->text));
			if (o->kind == OP_WHERE && j == 0)
				return diag_error(r->c, a->pos, "op 'where' takes a bool tensor as its condition, not the number %s",
				                  show(r, a->text));
			if (++nlit == n->nkid)
				return diag_error(r->c, a->pos, "op '%s' needs at least one tensor input, saw %s numbers",
				                  info->name, n->nkid == 2 ? "two" : "only");
			if (f32_number(r, a, in->lit, "", false))
				return -1;
			continue;
		}
		if (!read_name(r, a, "a tensor"))
			return -1;
		in->tensor = names_get(r, tensor_scope, a->text);
		if (!in->tensor)
			return unknown_tensor(r, o->kind, ops, i, a);
	}
	o->nin = n->nkid;
	return 0;
}

/* KEY: [INT, ...] (permute's dims, a reduction's dim): at most MAX_RANK entries, each in -MAX_RANK..MAX_RANK-1 */
static int
read_dims(const Reader *r, Op *o, const Node *v, const char *key)
{
	int64_t d;
	int j;

	if (need_kind(r, v, N_LIST, arena_printf(r->c->arena, "a list of dims for '%s'", key)) < 0)
		return -1;
	if (v->nkid > MAX_RANK)
		return diag_error(r->c, v->kid[MAX_RANK]->pos, "'%s' lists %d dims, more than the limit of %d", key,
		                  v->nkid, MAX_RANK);
	for (j = 0; j < v->nkid; j++) {
		if (read_int(r, v->kid[j], arena_printf(r->c->arena, "an entry of '%s'", key), -MAX_RANK, MAX_RANK - 1,
		             &d) < 0)
			return -1;
		o->dims[j] = (int)d;
	}
	o->ndims = v->nkid;
	return 0;
}

/* shape: [NAME | INT > 0 | -1, ...] (reshape, view, expand): a size the spec names, a constant, or one -1 */
static int
read_view_shape(const Reader *r, Op *o, const Node *v)
{
	int j, minus = -1;

	if (need_kind(r, v, N_LIST, "a list of sizes for 'shape'") < 0)
		return -1;
	if (v->nkid > MAX_RANK)
		return diag_error(r->c, v->kid[MAX_RANK]->pos, "'shape' has rank %d, more than the limit of %d",
		                  v->nkid, MAX_RANK);
	for (j = 0; j < v->nkid; j++) {
		const Node *d = v->kid[j];
		Dim *x = &o->shape[j];

		if (d->type == SC_STR && (x->sym = fusion_find_sym(r->f, d->text)))
			continue;
		if (d->type == SC_STR && !d->quoted)
			return diag_error(r->c, d->pos, "unknown size '%s' in 'shape': expected a size of the spec's "
			                  "inputs or 'sizes', a positive integer or -1", show(r, d->text));
		if (d->type != SC_INT || !scalar_int(d, &x->ext) || x->ext < -1 || x->ext == 0 || x->ext > MAX_EXTENT)
			return diag_error(r->c, d->pos, "expected a size name, a positive integer or -1 in 'shape', saw %s",
			                  describe(r, d));
		if (x->ext == -1 && minus >= 0)
			return diag_error(r->c, d->pos, "'shape' has a second -1 (the first is entry %d): only one dim "
			                  "can be inferred", minus);
		if (x->ext == -1)
			minus = j;
	}
	o->nshape = v->nkid;
	return 0;
}

/* pad: [INT >= 0, ...] (before and after each dim, from the last), at most two a dim */
static int
read_pads(const Reader *r, Op *o, const Node *v)
{
	int j;

	if (need_kind(r, v, N_LIST, "a list of pads for 'pad'") < 0)
		return -1;
	if (v->nkid == 0 || v->nkid % 2 || v->nkid > 2 * MAX_RANK)
		return diag_error(r->c, v->pos, "expected 2 to %d pads for 'pad', two a dim (before and after, from "
		                  "the last dim), saw %d", 2 * MAX_RANK, v->nkid);
	for (j = 0; j < v->nkid; j++) {
		const Node *d = v->kid[j];

		if (d->type == SC_INT && d->text[0] == '-')
			return diag_error(r->c, d->pos, "a negative pad (%s) crops, which is not implemented yet: "
			                  "slice the tensor instead", d->text);
		if (read_int(r, d, "an entry of 'pad'", 0, MAX_EXTENT, &o->pad[j]) < 0)
			return -1;
	}
	o->npad = v->nkid;
	return 0;
}

/* The views' attributes (chunks and sizes are read_parts'): KEY's value V into O. */
static int
read_view_attr(const Reader *r, Op *o, const char *k, const Node *v)
{
	const char *what = words(r, "'%s'", k);
	int64_t x;

	if (strcmp(k, "dim") == 0 || strcmp(k, "dim0") == 0 || strcmp(k, "dim1") == 0) {
		if (read_int(r, v, what, -MAX_RANK, MAX_RANK - 1, &x) < 0)
			return -1;
		*(k[3] == '0' ? &o->dim0 : k[3] == '1' ? &o->dim1 : &o->axis) = (int)x;
		*(k[3] == '1' ? &o->attr_pos : &o->dim_pos) = v->pos;
		return 0;
	}
	if (!o->attr_pos.line && (strcmp(k, "start") == 0 || strcmp(k, "end") == 0 || strcmp(k, "step") == 0))
		o->attr_pos = v->pos;   /* where an empty slice is reported */
	if (strcmp(k, "start") == 0 || strcmp(k, "end") == 0) {   /* null: torch's None */
		if (v->type != SC_NULL && read_int(r, v, what, -MAX_EXTENT, MAX_EXTENT, &x) < 0)
			return -1;
		if (k[0] == 's')
			o->start = v->type == SC_NULL ? 0 : x;
		else
			o->end = v->type == SC_NULL ? INT64_MAX : x;
		return 0;
	}
	if (strcmp(k, "step") == 0) {
		if (v->type == SC_INT && (v->text[0] == '-' || strcmp(v->text, "0") == 0))
			return diag_error(r->c, v->pos, "expected a positive integer for 'step', saw %s: torch's slices "
			                  "step forward only (flip is not a view op here)", v->text);
		return read_int(r, v, what, 1, MAX_EXTENT, &o->step);
	}
	if (strcmp(k, "value") == 0) {
		if (!scalar_number(v, &o->value))
			return diag_error(r->c, v->pos, "expected a finite number for 'value', saw %s", describe(r, v));
		return f32_number(r, v, o->value, " for 'value'", false);
	}
	o->attr_pos = v->pos;
	if (strcmp(k, "dims") == 0)
		return read_dims(r, o, v, "dims");
	if (strcmp(k, "shape") == 0)
		return read_view_shape(r, o, v);
	if (strcmp(k, "pad") == 0)
		return read_pads(r, o, v);
	return 0;
}

/* ATTR: approximate: none | tanh; to: DTYPE; axis (or dim): INT; keepdim, transpose_a, transpose_b: BOOL;
 *       acc: f32; eps: positive NUMBER */
static int
read_attr(const Reader *r, Op *o, const Node *key, const Node *v)
{
	static const char *const approx[] = {"none", "tanh"};
	const char *k = key->text, *what;
	int64_t axis;
	int word = 0;

	if (strcmp(k, "out") == 0 || strcmp(k, "op") == 0 || strcmp(k, "in") == 0)
		return 0;
	what = words(r, "'%s'", k);
	if (strcmp(k, "approximate") == 0) {
		if (read_word(r, v, what, approx, countof(approx), &word) < 0)
			return -1;
		o->approx = word == 2 ? APPROX_TANH : APPROX_NONE;
	} else if (strcmp(k, "to") == 0) {
		return read_dtype(r, v, &o->to);
	} else if (strcmp(k, "axis") == 0 || (strcmp(k, "dim") == 0 && (op_info[o->kind].attrs & A_AXIS))) {
		/* numpy's name, torch's (a view's dim is read_view_attr's); a list: torch's x.sum(dim=(0, 1)) */
		if (v->kind == N_LIST && (op_info[o->kind].cls == CLS_REDUCE || o->kind == OP_MIN || o->kind == OP_VAR ||
		                          o->kind == OP_STD)) {
			if (v->nkid == 0)
				return diag_error(r->c, v->pos, "%s is an empty list: give the dims to reduce over", what);
			if (read_dims(r, o, v, k) < 0)
				return -1;
			o->axis = o->dims[0];
			o->attr_pos = v->pos;
			return 0;
		}
		if (v->kind == N_LIST)
			return diag_error(r->c, v->pos, "op '%s' takes one dim in %s, not a list (a list of dims is "
			                  "for sum, mean, amax, amin, var and std)", op_info[o->kind].name, what);
		if (read_int(r, v, what, -MAX_RANK, MAX_RANK - 1, &axis) < 0)
			return -1;
		o->axis = (int)axis;
	} else if (strcmp(k, "keepdim") == 0) {
		return read_bool(r, v, what, &o->keepdim);
	} else if (strcmp(k, "sorted") == 0 || strcmp(k, "largest") == 0) {   /* topk's: torch's, sorted either way */
		bool b;

		if (read_bool(r, v, what, &b) < 0)
			return -1;
		if (k[0] == 'l')
			o->smallest = !b;
	} else if (strcmp(k, "transpose_a") == 0) {
		return read_bool(r, v, what, &o->transpose_a);
	} else if (strcmp(k, "transpose_b") == 0) {
		return read_bool(r, v, what, &o->transpose_b);
	} else if (strcmp(k, "acc") == 0) {
		if (read_dtype(r, v, &o->acc) < 0)
			return -1;
		if (o->acc != DT_F32)
			return diag_error(r->c, v->pos,
			                  "expected acc: f32, saw '%s': matmul accumulates in f32 only for now",
			                  v->text);
	} else if (strcmp(k, "eps") == 0) {
		if (!scalar_number(v, &o->eps) || v->text[0] == '-' || (o->eps == 0 && !nonzero_text(v->text)))
			return diag_error(r->c, v->pos, "expected a positive number for 'eps', saw %s", describe(r, v));
		return f32_number(r, v, o->eps, " for 'eps'", true);
	} else if (strcmp(k, "correction") == 0) {   /* torch's: the degrees of freedom taken, default 1 */
		if (!scalar_number(v, &o->correction) || o->correction < 0 || v->text[0] == '-')
			return diag_error(r->c, v->pos, "expected a non-negative number for 'correction', saw %s (torch's: "
			                  "1 is the unbiased estimate, 0 the population's)", describe(r, v));
		return f32_number(r, v, o->correction, " for 'correction'", false);
	} else if (strcmp(k, "ignore_index") == 0) {   /* cross_entropy's, torch's: default -100 */
		if (read_int(r, v, what, INT32_MIN, INT32_MAX, &axis) < 0)
			return -1;
		o->value = (double)axis;
	} else if (strcmp(k, "label_smoothing") == 0) {
		if (!scalar_number(v, &o->correction) || o->correction < 0 || o->correction > 1 || v->text[0] == '-')
			return diag_error(r->c, v->pos, "expected a number from 0 to 1 for 'label_smoothing', saw %s",
			                  describe(r, v));
		return f32_number(r, v, o->correction, " for 'label_smoothing'", false);
	} else if (strcmp(k, "lse_square_scale") == 0) {   /* the z-loss's weight (flash-attn's and Liger's name) */
		if (!scalar_number(v, &o->z) || o->z < 0 || v->text[0] == '-')
			return diag_error(r->c, v->pos, "expected a number of 0 or more for 'lse_square_scale', saw %s",
			                  describe(r, v));
		return f32_number(r, v, o->z, " for 'lse_square_scale'", false);
	} else if (strcmp(k, "reduction") == 0) {   /* torch's: mean (the default), none, sum */
		static const char *const reductions[] = {"mean", "none", "sum"};

		if (read_word(r, v, what, reductions, countof(reductions), &word) < 0)
			return -1;
		o->reduction = word - 1;
	} else if (strcmp(k, "num_classes") == 0 || strcmp(k, "k") == 0) {   /* one_hot's, topk's: a size or an int */
		if (v->type == SC_STR && (o->shape[0].sym = fusion_find_sym(r->f, v->text))) {
			o->nshape = 1;
			return 0;
		}
		if (v->type == SC_STR && !v->quoted)
			return diag_error(r->c, v->pos, "unknown size '%s' in '%s': expected a size of the spec's inputs or "
			                  "'sizes', or a positive integer", show(r, v->text), k);
		if (v->type != SC_INT || !scalar_int(v, &o->shape[0].ext) || o->shape[0].ext < 1 ||
		    o->shape[0].ext > MAX_EXTENT)
			return diag_error(r->c, v->pos, "expected a size name or a positive integer for '%s', saw %s", k,
			                  describe(r, v));
		o->nshape = 1;
	} else if (op_info[o->kind].attrs & (A_DIM | A_SLICE | A_DIMS | A_DIM01 | A_SHAPE | A_PAD)) {
		return read_view_attr(r, o, k, v);
	}
	return 0;
}

/*
 * chunk: {out: [NAME, ...], chunks: N} (torch.chunk: one name a chunk) and
 * split: {out: [NAME, ...], sizes: [INT, ...]} (torch.split with a list):
 * op ID, read as written, becomes one slice an output (part P of PARTS),
 * so the fusion IR has no op of several outputs.
 */
static int
read_parts(Reader *r, const Node *n, const Node *outn, int id)
{
	Op tmpl = r->f->op[id];
	bool chunk = tmpl.kind == OP_CHUNK;
	const Node *cn = map_get(n, chunk ? "chunks" : "sizes");
	int64_t at = 0, size = 0, k;
	int p, t;

	if (chunk) {
		if (read_int(r, cn, "'chunks'", 1, MAX_EXTENT, &k) < 0)
			return -1;
		if (k != outn->nkid)
			return diag_error(r->c, outn->pos, "op 'chunk' makes %lld chunk%s (chunks: %lld), but 'out' names "
			                  "%d tensor%s: name one for each chunk", (long long)k, k == 1 ? "" : "s",
			                  (long long)k, outn->nkid, outn->nkid == 1 ? "" : "s");
	} else if (need_kind(r, cn, N_LIST, "a list of sizes for 'sizes'") < 0) {
		return -1;
	} else if (cn->nkid != outn->nkid) {
		return diag_error(r->c, outn->pos, "op 'split' makes %d part%s (sizes has %d), but 'out' names %d "
		                  "tensor%s: name one for each size", cn->nkid, cn->nkid == 1 ? "" : "s", cn->nkid,
		                  outn->nkid, outn->nkid == 1 ? "" : "s");
	}
	tmpl.kind = OP_SLICE;
	tmpl.parts = outn->nkid;
	tmpl.chunk = chunk;
	tmpl.attr_pos = cn->pos;
	for (p = 0; p < outn->nkid; p++) {
		const char *name = read_name(r, outn->kid[p], "a tensor");
		int oid;
		Op *o;

		if (!name || (!chunk && read_int(r, cn->kid[p], "an entry of 'sizes'", 1, MAX_EXTENT, &size) < 0))
			return -1;   /* (one error: the name's, else the size's) */
		oid = p ? fusion_add_op(r->c, r->f, OP_SLICE, n->pos) : id;
		o = &r->f->op[oid];
		*o = tmpl;
		o->part = p;
		o->start = at;
		o->end = at += size;
		if ((t = define_tensor(r, name, TK_VALUE, outn->kid[p]->pos)) < 0)
			return -1;
		r->f->tensor[t].def = oid;
		o->out = t;
	}
	return 0;
}

/*
 * topk: {out: [VALUES, INDICES], op: topk, in: [x], k: K} (torch's v, i =
 * x.topk(k)), or out: [VALUES] or out: VALUES: op I read as written for
 * the values, and a copy of it (part 1) for the indices, so the fusion IR
 * has no op of several outputs.
 */
static int read_op_node(Reader *r, const Node *n, const Node *ops, int i);

static int
read_topk(Reader *r, const Node *n, const Node *ops, int i, const Node *outn)
{
	Node *copy;
	int id, p;

	if (outn->nkid < 1 || outn->nkid > 2)
		return diag_error(r->c, outn->pos, "op 'topk' makes values and indices: 'out' names one or two tensors "
		                  "(out: [values, indices]), not %d", outn->nkid);
	for (p = 0; p < outn->nkid; p++) {
		copy = arena_alloc(r->c->arena, sizeof *copy + (size_t)n->nkid * sizeof *copy->kid);
		*copy = *n;   /* the same op with out: one name */
		copy->kid = (Node **)(copy + 1);
		memcpy(copy->kid, n->kid, (size_t)n->nkid * sizeof *copy->kid);
		for (id = 0; id < n->nkid; id += 2)
			if (strcmp(n->kid[id]->text, "out") == 0)
				copy->kid[id + 1] = outn->kid[p];
		id = r->f->nop;
		if (read_op_node(r, copy, ops, i) < 0)
			return -1;
		r->f->op[id].part = p;
	}
	return 0;
}

/* op: { out: NAME, op: OPNAME, in: [NAME | NUMBER, ...], ATTR: VALUE, ... }; chunk and split: out: [NAME, ...] */
static int
read_op(Reader *r, const Node *ops, int i)
{
	return read_op_node(r, ops->kid[i], ops, i);
}

/* Op N (entry I of OPS). */
static int
read_op_node(Reader *r, const Node *n, const Node *ops, int i)
{
	const Node *outn, *inn, *opn;
	const char *name = NULL, *where, *axis_key = NULL;
	OpKind kind;
	Op *o;
	int id, t, j;
	bool parts;

	if (need_kind(r, n, N_MAP, "an op {out, op, in, ...}") < 0 ||
	    !(opn = map_need(r, n, "op", "this op")) || read_opname(r, opn, &kind) < 0 ||
	    check_op_keys(r, n, kind) < 0)
		return -1;
	where = words(r, "op '%s'", op_info[kind].name);
	parts = kind == OP_CHUNK || kind == OP_SPLIT;
	if (kind == OP_TOPK && (outn = map_get(n, "out")) && outn->kind == N_LIST)
		return read_topk(r, n, ops, i, outn);
	if (!(outn = map_need(r, n, "out", where)) || !(inn = map_need(r, n, "in", where)))
		return -1;
	for (j = 0; j < countof(required_keys); j++)
		if (required_keys[j].kind == kind && !map_need(r, n, required_keys[j].key, where))
			return -1;
	if (parts ? need_kind(r, outn, N_LIST, "a list of names for 'out', one a %s (out: [a, b, ...])",
	                      kind == OP_CHUNK ? "chunk" : "part") < 0
	          : !(name = read_name(r, outn, "a tensor")))
		return -1;
	if (parts && outn->nkid == 0)
		return diag_error(r->c, outn->pos, "expected a list of names for 'out', saw an empty list");
	id = fusion_add_op(r->c, r->f, kind, n->pos);
	o = &r->f->op[id];
	if (read_operands(r, o, inn, ops, i) < 0)
		return -1;
	for (j = 0; j < n->nkid; j += 2) {
		const char *k = n->kid[j]->text;

		if (strcmp(k, "dim") == 0 || strcmp(k, "axis") == 0) {
			if (axis_key)
				return diag_error(r->c, n->kid[j]->pos, "op '%s' has '%s' and '%s', two names of one "
				                  "attribute (torch's and numpy's): give one", op_info[kind].name,
				                  axis_key, k);
			axis_key = k;
		}
		if (read_attr(r, o, n->kid[j], n->kid[j + 1]) < 0)
			return -1;
	}
	if (parts)
		return read_parts(r, n, outn, id);
	if ((t = define_tensor(r, name, TK_VALUE, outn->pos)) < 0)
		return -1;
	r->f->tensor[t].def = id;
	r->f->op[id].out = t;
	return 0;
}

/* ops: [op, ...]   in order: an op may use inputs and the outputs of ops above it */
int
read_ops(Reader *r, const Node *n)
{
	int i;

	if (need_kind(r, n, N_LIST, "a list of ops for 'ops'") < 0)
		return -1;
	for (i = 0; i < n->nkid; i++)
		if (read_op(r, n, i) < 0)
			return -1;
	return 0;
}
