/*
 * layout.c: inputs given permuted (option layout).
 *
 * A torch tensor that is a transpose or a permute of a contiguous one
 * (x.t(), k.transpose(-1, -2), x.permute(0, 2, 1)) is the contiguous
 * tensor's memory read in another order.  Option layout names such inputs
 * and the permutation each is of its memory, "x=1,0;k=0,1,3,2", as torch's
 * x = x_stored.permute(dims): the spec's input x becomes the argument
 * x_stored, its dims permuted back (x_stored.dim[dims[i]] is x.dim[i]),
 * and a permute op at the front of the fusion gives the x the spec's ops
 * read.  A dim written '*' is expanded from none (torch's stride 0:
 * b.expand(M, -1) is "b=*,0"): x_stored lacks it, and a reshape and an
 * expand follow the permute.  The views pass and lowering then read x as a view of x_stored's
 * memory: a transpose of the innermost dim through shared memory, others
 * at an offset.  A matmul operand's transpose is its other layout instead
 * (operand_layout): the matmul's transpose flag flips, no view.  The argument keeps the input's name and place; the value
 * is renamed "x.permuted" ("x.expanded").  Runs right after the spec is read, before the
 * passes, so the fusion IR of every pass shows the permute.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"

static const char layout_origin[] = "option layout";   /* Op.origin of the permutes it makes */

/* The input of F named NAME (LEN bytes): its place in f->input, or -1. */
static int
input_named(const Fusion *f, const char *name, size_t len)
{
	int i;

	for (i = 0; i < f->ninput; i++)
		if (strlen(f->tensor[f->input[i]].name) == len && strncmp(f->tensor[f->input[i]].name, name, len) == 0)
			return i;
	return -1;
}

/* A view op of KIND at the front of F (every later op's id one up), from tensor IN to OUT. */
static Op *
front_op(Comp *c, Fusion *f, OpKind kind, int in, int out)
{
	Op *o = fusion_insert_op(c, f, 1);

	o->kind = kind;
	o->out = out;
	o->nin = 1;
	o->in[0].tensor = in;
	o->in[0].pos = o->pos = o->attr_pos = f->tensor[out].pos;
	o->keepdim = true;
	o->end = INT64_MAX;
	o->step = 1;
	o->origin = layout_origin;
	f->tensor[out].kind = TK_VALUE;
	f->tensor[out].def = 1;
	f->tensor[out].shape_pos = (Pos){0};
	return o;
}

/* A new value "BASE.WHAT" of T's dtype and RANK dims DIM. */
static int
layout_value(Comp *c, Fusion *f, const char *base, const char *what, const Tensor *t, int rank, const Dim *dim)
{
	Tensor x = *t;
	int v = fusion_add_tensor(c, f, intern_cstr(c->strs, arena_printf(c->arena, "%s.%s", base, what)), TK_VALUE,
	                          t->pos);

	x.name = f->tensor[v].name;
	x.rank = rank;
	memcpy(x.dim, dim, sizeof x.dim);
	f->tensor[v] = x;
	return v;
}

/*
 * Input I of C's fusion given as its memory permuted by DIMS, a dim of the
 * memory for each of its dims or -1 for a dim expanded from none (torch's
 * stride 0): x = x_stored.permute(...).reshape(1s added).expand(x's shape),
 * the ops that are not the identity at the front of the fusion, x_stored
 * the kept dims' extents in memory order.
 */
static void
permute_input(Comp *c, Fusion *f, int i, const int *dims)
{
	int old = f->input[i], rank = f->tensor[old].rank, kept = 0, stored, at, j;
	const char *name = f->tensor[old].name;
	Dim sdim[MAX_RANK], pdim[MAX_RANK], rdim[MAX_RANK];
	int order[MAX_RANK];
	bool permuted = false;
	Op *o;

	for (j = 0; j < rank; j++) {
		rdim[j] = dims[j] < 0 ? (Dim){0, 1} : f->tensor[old].dim[j];
		if (dims[j] < 0)
			continue;
		sdim[dims[j]] = pdim[kept] = f->tensor[old].dim[j];
		order[kept] = dims[j];
		permuted = permuted || dims[j] != kept;
		kept++;
	}
	f->tensor[old].name = intern_cstr(c->strs, arena_printf(c->arena, "%s.%s", name,
	                                                        kept < rank ? "expanded" : "permuted"));
	stored = layout_value(c, f, name, "", &f->tensor[old], kept, sdim);   /* (may move f->tensor) */
	f->tensor[stored].name = name;
	f->tensor[stored].kind = TK_INPUT;
	f->input[i] = stored;
	at = stored;
	if (kept < rank) {   /* ops pushed to the front: the last first */
		o = front_op(c, f, OP_EXPAND, layout_value(c, f, name, "ones", &f->tensor[old], rank, rdim), old);
		o->nshape = rank;
		memcpy(o->shape, f->tensor[old].dim, sizeof o->shape);
		old = o->in[0].tensor;
		o = front_op(c, f, OP_RESHAPE, permuted ? layout_value(c, f, name, "kept", &f->tensor[old], kept, pdim) : at,
		             old);
		o->nshape = rank;
		memcpy(o->shape, rdim, sizeof o->shape);
		if (!permuted)   /* (the memory's order: the reshape reads it itself) */
			return;
		old = o->in[0].tensor;
	}
	o = front_op(c, f, OP_PERMUTE, at, old);
	o->ndims = kept;
	memcpy(o->dims, order, (size_t)kept * sizeof *order);
}

/*
 * Input I of F given as DIMS, when every op that reads it is a matmul taking
 * it as an operand and DIMS swaps its last two dims (x.t(), a batch's
 * transpose): the operand's other layout, no view.  The input's dims swap in
 * place and each matmul's transpose_a (transpose_b) flips: A = S^T read as
 * S transposed.  False (nothing changed) otherwise.
 */
static bool
operand_layout(Fusion *f, int i, const int *dims)
{
	Tensor *t = &f->tensor[f->input[i]];
	int r = t->rank, j, k;
	Dim d;

	if (r < 2 || dims[r - 1] != r - 2 || dims[r - 2] != r - 1)
		return false;
	for (j = 0; j + 2 < r; j++)
		if (dims[j] != j)
			return false;
	for (j = 1; j < f->nop; j++)
		for (k = 0; k < f->op[j].nin; k++)
			if (f->op[j].in[k].tensor == f->input[i] && (f->op[j].kind != OP_MATMUL || k > 1 ||
			                                             f->op[j].in[1 - k].tensor == f->input[i]))
				return false;
	for (j = 1; j < f->nop; j++)
		for (k = 0; k < f->op[j].nin; k++)
			if (f->op[j].in[k].tensor == f->input[i]) {
				if (k == 0)
					f->op[j].transpose_a = !f->op[j].transpose_a;
				else
					f->op[j].transpose_b = !f->op[j].transpose_b;
			}
	d = t->dim[r - 1];
	t->dim[r - 1] = t->dim[r - 2];
	t->dim[r - 2] = d;
	return true;
}

/* One entry "NAME=D0,D1,..." of the option (LEN bytes at S): parsed, checked and applied; 0 or -1. */
static int
layout_entry(Comp *c, const char *s, size_t len)
{
	Fusion *f = c->fusion;
	const char *eq = memchr(s, '=', len), *p, *end = s + len;
	int dims[MAX_RANK], n = 0, kept = 0, i, j, in;
	bool seen[MAX_RANK] = {false}, identity = true;
	const Tensor *t;

	if (!eq || eq == s)
		return diag_error(c, f->pos, "option layout: '%.*s' is not NAME=DIMS (x=1,0: x is the permute "
		                  "x_stored.permute(1, 0) of a contiguous tensor)", (int)len, s);
	if ((in = input_named(f, s, (size_t)(eq - s))) < 0)
		return diag_error(c, f->pos, "option layout: '%.*s' is not an input of '%s'", (int)(eq - s), s, f->name);
	t = &f->tensor[f->input[in]];
	for (p = eq + 1; p < end; p++) {
		char *stop;
		long d = *p == '*' ? -1 - MAX_RANK : strtol(p, &stop, 10);

		if (*p == '*')   /* a dim expanded from none (stride 0) */
			stop = (char *)p + 1;
		if (stop == p || stop > end || (stop < end && *stop != ',') || n == MAX_RANK)
			return diag_error(c, t->pos, "option layout: input '%s': '%.*s' is not a list of dims, "
			                  "comma-separated (1,0; * for a dim expanded from none: *,0)", t->name,
			                  (int)(end - eq - 1), eq + 1);
		dims[n++] = (int)d;
		p = stop;
	}
	if (n != t->rank)
		return diag_error(c, t->pos, "option layout: input '%s' has rank %d, and the layout gives %d dims",
		                  t->name, t->rank, n);
	for (j = 0; j < n; j++)
		kept += dims[j] != -1 - MAX_RANK;
	for (j = 0; j < n; j++) {
		if (dims[j] == -1 - MAX_RANK) {
			dims[j] = -1;
			identity = false;
			continue;
		}
		if (dims[j] < -kept || dims[j] >= kept)
			return diag_error(c, t->pos, "option layout: input '%s' keeps %d dims in memory: dim %d is out of "
			                  "range (expected %d..%d)", t->name, kept, dims[j], -kept, kept - 1);
		dims[j] = dims[j] < 0 ? dims[j] + kept : dims[j];
		if (seen[dims[j]])
			return diag_error(c, t->pos, "option layout: input '%s': dim %d appears twice; the dims are a "
			                  "permutation of 0..%d", t->name, dims[j], kept - 1);
		seen[dims[j]] = true;
		identity = identity && dims[j] == j;
	}
	if (!kept)
		return diag_error(c, t->pos, "option layout: input '%s': every dim is expanded (*): give it a dim of "
		                  "memory", t->name);
	if (t->wait_pos.line) {
		diag_error(c, t->pos, "option layout: input '%s' waits per tile: a permuted input that waits is not "
		           "implemented yet", t->name);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	for (i = 1; i < f->nop; i++)   /* (a second entry for one input would permute the permuted) */
		if (f->op[i].origin == layout_origin && f->op[i].in[0].tensor == f->input[in])
			return diag_error(c, t->pos, "option layout: input '%s' is given twice", t->name);
	if (!identity && !operand_layout(f, in, dims))
		permute_input(c, f, in, dims);
	return 0;
}

int
spec_layout(Comp *c)
{
	const char *s = c->layout, *next;

	while (s && *s) {
		next = strchr(s, ';');
		if ((next ? (size_t)(next - s) : strlen(s)) && layout_entry(c, s, next ? (size_t)(next - s) : strlen(s)))
			return -1;
		s = next ? next + 1 : NULL;
	}
	return 0;
}
