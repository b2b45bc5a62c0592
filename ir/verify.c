/*
 * verify.c: the fusion IR verifier, run by the pass driver after every pass.
 *
 * Invariants (docs/ir.md):
 *   - every id is in range and entry 0 of each array is unused;
 *   - ops are in topological order: an operand is an input or the output of
 *     an earlier op; every value tensor is defined by exactly the op whose
 *     `out` it is, and inputs are defined by none;
 *   - once expanded, no composite op is left;
 *   - once inferred, every tensor has a dtype and a rank <= MAX_RANK, every
 *     axis (a reduction's, a view's dim) is in range, and every output has a dtype;
 *   - chunk and split are read as slices: none is left;
 *   - an output that is a part of a split (Fusion.split_out) may be defined
 *     by no op of its own: the kernel stores its range of split_out.
 * A violation is a wsfuse bug and is reported as an internal error naming the
 * pass after which it was found.
 */
#include "ir.h"

static int
bad(Comp *c, const char *after, const char *what, const char *name)
{
	return diag_internal(c, "fusion verifier", "after pass '%s': %s '%s'", after, what,
	                     name ? name : "?");
}

/* Is tensor T an output that is a part of F's split_out, a range of it along split_dim? */
static bool
split_part(const Fusion *f, int t)
{
	int i;

	if (f->split_out <= 0 || f->split_out >= f->ntensor || f->split_dim < 0 ||
	    f->split_dim >= f->tensor[f->split_out].rank)
		return false;
	for (i = 0; i < f->nout && f->out[i].tensor != t; i++)
		;
	return i < f->nout && f->out[i].part[0] < f->out[i].part[1];
}

int
fusion_verify(Comp *c, const Fusion *f, const char *after)
{
	int i, j;

	if (!f || f->nsym < 1 || f->ntensor < 1 || f->nop < 1)
		return diag_internal(c, "fusion verifier", "after pass '%s': empty arrays", after);
	for (i = 1; i < f->ntensor; i++) {
		const Tensor *t = &f->tensor[i];

		if (t->kind == TK_INPUT && t->def)
			return bad(c, after, "input has a defining op:", t->name);
		if (t->kind == TK_VALUE && !(t->def == 0 && split_part(f, i)) &&
		    (t->def <= 0 || t->def >= f->nop || f->op[t->def].out != i))
			return bad(c, after, "value not defined by its op:", t->name);
		if (t->rank < 0 || t->rank > MAX_RANK)
			return bad(c, after, "rank out of range:", t->name);
		if (f->inferred && t->dtype == DT_NONE)
			return bad(c, after, "no dtype after inference:", t->name);
		for (j = 0; j < t->rank; j++)
			if (t->dim[j].sym < 0 || t->dim[j].sym >= f->nsym ||
			    (!t->dim[j].sym && t->dim[j].ext <= 0))
				return bad(c, after, "bad dimension in", t->name);
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (o->kind <= OP_NONE || o->kind >= OP_COUNT)
			return bad(c, after, "bad op kind defining", f->tensor[o->out].name);
		if (o->out <= 0 || o->out >= f->ntensor || f->tensor[o->out].def != i)
			return bad(c, after, "op output not linked back:", op_info[o->kind].name);
		if (o->kind == OP_CHUNK || o->kind == OP_SPLIT)
			return bad(c, after, "chunk or split not read as slices:", f->tensor[o->out].name);
		if (f->expanded && op_info[o->kind].cls == CLS_COMPOSITE)
			return bad(c, after, "composite left after expansion:", f->tensor[o->out].name);
		if (o->nin < op_info[o->kind].min_in || o->nin > op_info[o->kind].max_in)
			return bad(c, after, "wrong arity in", f->tensor[o->out].name);
		for (j = 0; j < o->nin; j++) {
			int t = o->in[j].tensor;

			if (t < 0 || t >= f->ntensor)
				return bad(c, after, "operand out of range in", f->tensor[o->out].name);
			if (t && f->tensor[t].kind == TK_VALUE && f->tensor[t].def >= i)
				return bad(c, after, "operand used before definition:", f->tensor[t].name);
		}
		if (f->inferred && (op_info[o->kind].cls == CLS_REDUCE || op_info[o->kind].attrs & A_DIM) &&
		    (o->axis < 0 || o->axis >= f->tensor[o->in[0].tensor].rank))
			return bad(c, after, "reduction axis not normalized in", f->tensor[o->out].name);
	}
	for (i = 0; i < f->ninput; i++)
		if (f->input[i] <= 0 || f->input[i] >= f->ntensor ||
		    f->tensor[f->input[i]].kind != TK_INPUT)
			return diag_internal(c, "fusion verifier", "after pass '%s': bad input list", after);
	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];

		if (o->tensor <= 0 || o->tensor >= f->ntensor)
			return diag_internal(c, "fusion verifier", "after pass '%s': bad output", after);
		if (f->inferred && o->dtype == DT_NONE)
			return bad(c, after, "output without dtype:", f->tensor[o->tensor].name);
	}
	return 0;
}
