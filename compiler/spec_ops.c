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
			if (strcmp(attr_keys[j].key, "dim") != 0)   /* axis's other name */
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
		out = map_get(ops->kid[j], "out");
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
	} else if (strcmp(k, "axis") == 0 || strcmp(k, "dim") == 0) {   /* numpy's name, torch's */
		if (read_int(r, v, what, -MAX_RANK, MAX_RANK - 1, &axis) < 0)
			return -1;
		o->axis = (int)axis;
	} else if (strcmp(k, "keepdim") == 0) {
		return read_bool(r, v, what, &o->keepdim);
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
	}
	return 0;
}

/* op: { out: NAME, op: OPNAME, in: [NAME | NUMBER, ...], ATTR: VALUE, ... } */
static int
read_op(Reader *r, const Node *ops, int i)
{
	const Node *n = ops->kid[i], *outn, *inn, *opn;
	const char *name, *where, *axis_key = NULL;
	OpKind kind;
	Op *o;
	int id, t, j;

	if (need_kind(r, n, N_MAP, "an op {out, op, in, ...}") < 0 ||
	    !(opn = map_need(r, n, "op", "this op")) || read_opname(r, opn, &kind) < 0 ||
	    check_op_keys(r, n, kind) < 0)
		return -1;
	where = words(r, "op '%s'", op_info[kind].name);
	if (!(outn = map_need(r, n, "out", where)) || !(inn = map_need(r, n, "in", where)) ||
	    (kind == OP_CAST && !map_need(r, n, "to", where)) ||
	    !(name = read_name(r, outn, "a tensor")))
		return -1;
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
