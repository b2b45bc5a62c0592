/*
 * infer.c: dtypes, shapes, broadcasts and axes of every value.  Requires no
 * composites; leaves every tensor typed and shaped; breaks nothing.
 *
 * Contract.  Requires: an expanded fusion (no composites).  Guarantees: every
 * tensor has a dtype and a shape; every reduction axis, and a view's dim,
 * dims, dim0 and dim1, is normalized to 0..rank-1; every output has a stored dtype; every tensor whose sizes are
 * bound counts its elements and bytes in 64 bits.  Errors: operands that
 * cannot broadcast, matmul inner-dimension mismatches, reduction axes out of
 * range, ops applied to literals only, shapes too big to count, ops computing
 * in a dtype category they do not take (OpInfo.kinds), where's condition not
 * bool, outputs stored as a dtype of another category, views whose dims
 * do not fit their inputs (a view dim made from a runtime size needs the
 * size bound at compile time: a Dim cannot say N - 1), a scatter's part
 * that does not fit its place (index_copy, slice_scatter), an output
 * written into an input (alias) of another shape or dtype, twice, or
 * accumulating.  Marks the inputs no op reads (Tensor.unread) with a
 * warning, but an alias's memory, silently.  Invalidates nothing.
 *
 * Dtypes follow torch: each op's typing rule (ir/ops.h) over its operands'
 * promoted dtype (dtype_promote: the higher category wins, bool < integer <
 * float; a number promotes only a tensor of a lower category); cast gives
 * `to`.  Float arithmetic is f32 whatever the float dtype, and a float value
 * is rounded once, when a cast or an output stores it; integer and bool
 * values are exact in their own type at every op.  Two dims are equal when
 * they name the same size or are the same constant: sizes are runtime
 * values, so M and N may differ at launch even if their defaults agree.
 */
#include <stdio.h>
#include <string.h>

#include "passes.h"

/* "[M, 4096]" for messages. */
static const char *
dims_str(Comp *c, const Fusion *f, const Dim *d, int n)
{
	Buf b;
	int i;

	buf_init(&b, c->arena);
	buf_puts(&b, "[");
	for (i = 0; i < n; i++) {
		if (i)
			buf_puts(&b, ", ");
		dim_print(&b, f, d[i]);
	}
	buf_puts(&b, "]");
	return buf_str(&b);
}

static const char *
shape_str(Comp *c, const Fusion *f, const Tensor *t)
{
	return dims_str(c, f, t->dim, t->rank);
}

static const char *
dim_str(Comp *c, const Fusion *f, Dim d)
{
	Buf b;

	buf_init(&b, c->arena);
	dim_print(&b, f, d);
	return buf_str(&b);
}

/* A literal operand as the spec would write it, for messages. */
static const char *
num_str(Comp *c, double v)
{
	char s[NUM_MAX];

	num_shortest(s, v);
	return arena_strdup(c->arena, s);
}

/* "bool" or "int32 and f32": the dtypes of O's operands, for messages. */
static const char *
operand_types(Comp *c, const Fusion *f, const Op *o)
{
	Buf b;
	int j;

	buf_init(&b, c->arena);
	for (j = 0; j < o->nin; j++)
		buf_printf(&b, "%s%s", j == 0 ? "" : j == o->nin - 1 ? " and " : ", ",
		           o->in[j].tensor ? dtype_info[f->tensor[o->in[j].tensor].dtype].name
		                           : o->in[j].lit_int ? "an integer number" : "a float number");
	return buf_str(&b);
}

/* The dtype O computes in (op_compute_dtype: torch's promotion), checked against the op's kinds. */
static int
compute_type(Comp *c, const Fusion *f, const Op *o, Dtype *dt)
{
	const OpInfo *info = &op_info[o->kind];
	Dtype p = op_compute_dtype(f, o);

	if (!(info->kinds & 1u << dtype_info[p].kind))
		return diag_error(c, o->pos, "op '%s' does not compute on %s: its operands are %s%s", info->name,
		                  dtype_info[p].kind == DK_BOOL ? "bool" : dtype_info[p].kind == DK_INT ? "integers" : "floats",
		                  operand_types(c, f, o),
		                  info->kinds == K_FLOAT ? " (cast them to a float dtype first)"
		                  : info->kinds & K_FLOAT ? " (cast them to an integer or float dtype first)"
		                  : info->kinds == K_INT ? " (it takes integers)" : " (it takes integers or bool)");
	*dt = p;
	return 0;
}

/* The dtype of O's result, from its typing rule (ir/ops.h). */
static int
infer_dtype(Comp *c, const Fusion *f, const Op *o, Tensor *out)
{
	Dtype p;
	int j;

	switch (op_info[o->kind].typing) {
	case TY_CAST:
		out->dtype = o->to;
		return 0;
	case TY_INDEX:
		out->dtype = f->tensor[o->in[0].tensor].dtype;
		return 0;
	case TY_WHERE:
		if (f->tensor[o->in[0].tensor].dtype != DT_BOOL)
			return diag_error(c, o->in[0].pos, "op 'where' takes a bool condition, saw '%s' of dtype %s "
			                  "(compare it first: ne with 0)", f->tensor[o->in[0].tensor].name,
			                  dtype_info[f->tensor[o->in[0].tensor].dtype].name);
		if (compute_type(c, f, o, &p))
			return -1;
		out->dtype = p;
		return 0;
	case TY_RAND:   /* the seed and the offset: integer scalars, read at run time */
		for (j = 1; j < 3; j++) {
			const Tensor *t = &f->tensor[o->in[j].tensor];

			if (!dtype_is_int(t->dtype) || t->rank != 0)
				return diag_error(c, o->in[j].pos, "op 'rand_like' takes its %s as an integer scalar (an input "
				                  "of shape [], such as int64), saw '%s' of dtype %s and rank %d",
				                  j == 1 ? "seed" : "offset", t->name, dtype_info[t->dtype].name, t->rank);
		}
		out->dtype = DT_F32;
		return 0;
	case TY_CMP:
	case TY_LOGIC:
		if (compute_type(c, f, o, &p))
			return -1;
		out->dtype = DT_BOOL;
		return 0;
	default:
		if (compute_type(c, f, o, &p))
			return -1;
		out->dtype = p;
		return 0;
	}
}

/*
 * topk (torch's x.topk(k), along the last dim): A's shape with k in the
 * last dim; the values in A's dtype (part 0), the indices int64 (part 1).
 * k at most the dim's extent (when both are known) and TOPK_MAX.
 */
static int
infer_topk(Comp *c, Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int axis = o->axis < 0 ? o->axis + a->rank : o->axis;
	int64_t k, n;

	if (a->rank == 0)
		return diag_error(c, o->in[0].pos, "topk of '%s': it is a scalar (rank 0)", a->name);
	k = dim_value(f, o->shape[0]);
	n = dim_value(f, a->dim[a->rank - 1]);
	if (!dtype_is_float(a->dtype))
		return diag_error(c, o->in[0].pos, "topk takes floats, and '%s' is %s (cast it to f32 first)", a->name,
		                  dtype_info[a->dtype].name);
	if (axis < 0 || axis >= a->rank)
		return diag_error(c, o->pos, "dim %d is out of range for '%s' of rank %d (expected %d..%d)", o->axis,
		                  a->name, a->rank, -a->rank, a->rank - 1);
	if (axis != a->rank - 1) {
		diag_error(c, o->pos, "topk along dim %d of '%s', not its last, is not implemented yet: transpose it to "
		           "the last", o->axis, a->name);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	if (k > 0 && n > 0 && k > n)
		return diag_error(c, o->pos, "topk's k of %lld is more than the %lld elements of the last dim of '%s' %s",
		                  (long long)k, (long long)n, a->name, shape_str(c, f, a));
	if (k > TOPK_MAX || k <= 0) {
		diag_error(c, o->pos, "topk's k of %s is not implemented yet: k is a constant or a bound size of at most "
		           "%d, so far", k > 0 ? arena_printf(c->arena, "%lld", (long long)k) : "a runtime size", TOPK_MAX);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	o->axis = axis;
	out->dim[a->rank - 1] = o->shape[0];
	out->dtype = o->part ? DT_INT64 : a->dtype;
	return 0;
}

static int
infer_unary(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a;

	if (!o->in[0].tensor)
		return diag_error(c, o->in[0].pos, "op '%s' needs a tensor input, saw the number %s",
		                  op_info[o->kind].name, num_str(c, o->in[0].lit));
	a = &f->tensor[o->in[0].tensor];
	out->rank = a->rank;
	memcpy(out->dim, a->dim, sizeof out->dim);
	if (o->kind == OP_POSITION) {   /* each element's index along axis, f32 (argmax's expansion) */
		int axis = o->axis < 0 ? o->axis + a->rank : o->axis;

		if (axis < 0 || axis >= a->rank)
			return diag_error(c, o->pos, "axis %d is out of range for '%s' of rank %d (expected %d..%d)", o->axis,
			                  a->name, a->rank, -a->rank, a->rank - 1);
		o->axis = axis;
		out->dtype = DT_F32;
		return 0;
	}
	if (o->kind == OP_TOPK)
		return infer_topk(c, f, o, a, out);
	if (o->kind == OP_ONE_HOT) {   /* torch's: the label's shape and a dim of the classes, int64 */
		if (a->rank >= MAX_RANK)
			return diag_error(c, o->pos, "one_hot of '%s' %s would have rank %d, more than the limit of %d",
			                  a->name, shape_str(c, f, a), a->rank + 1, MAX_RANK);
		if (!dtype_is_int(a->dtype))
			return diag_error(c, o->in[0].pos, "one_hot takes class indices (int32 or int64, torch's), and '%s' is "
			                  "%s", a->name, dtype_info[a->dtype].name);
		out->dim[out->rank++] = o->shape[0];
		out->dtype = DT_INT64;
		return 0;
	}
	return infer_dtype(c, f, o, out);
}

/* Numpy broadcasting over trailing dims, operand by operand. */
static int
infer_binary(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a = NULL, *b;
	int i, j;

	for (j = 0; j < o->nin; j++) {
		if (!o->in[j].tensor)
			continue;
		b = &f->tensor[o->in[j].tensor];
		if (!a) {
			a = b;
			out->rank = b->rank;
			memcpy(out->dim, b->dim, sizeof out->dim);
			continue;
		}
		for (i = 1; i <= (out->rank > b->rank ? out->rank : b->rank); i++) {
			Dim da = {0, 1}, db = {0, 1};

			if (i <= out->rank)
				da = out->dim[out->rank - i];
			if (i <= b->rank)
				db = b->dim[b->rank - i];
			if (!dim_equal(da, db) && !dim_is_one(db) && !dim_is_one(da))
				return diag_error(c, o->pos,
				                  "cannot broadcast '%s' %s with '%s' %s in '%s': %s vs %s in %s "
				                  "(dims must be equal or 1, aligned from the right)",
				                  a->name, shape_str(c, f, a), b->name, shape_str(c, f, b),
				                  op_info[o->kind].name, dim_str(c, f, da), dim_str(c, f, db),
				                  i == 1 ? "the last dim" : i == 2 ? "the second-to-last dim" :
				                  arena_printf(c->arena, "dim -%d (the %d%s from the right)", i, i, i == 3 ? "rd" : "th"));
		}
		if (b->rank > out->rank) {
			memmove(out->dim + (b->rank - out->rank), out->dim, out->rank * sizeof out->dim[0]);
			for (i = 0; i < b->rank - out->rank; i++)
				out->dim[i] = (Dim){0, 1};
			out->rank = b->rank;
		}
		for (i = 1; i <= b->rank; i++)
			if (dim_is_one(out->dim[out->rank - i]))
				out->dim[out->rank - i] = b->dim[b->rank - i];
	}
	if (!a)
		return diag_error(c, o->pos, "op '%s' needs at least one tensor input, saw two numbers",
		                  op_info[o->kind].name);
	return infer_dtype(c, f, o, out);
}

/*
 * A reduction's dim: [LIST] (torch's x.sum(dim=(0, 1))): each dim in range
 * and listed once, together consecutive dims (in any order; reduce_order
 * has made those without the last so): o->axis the first, o->naxes their
 * count.  0, or -1 after an error at the list.
 */
static int
reduce_dims(Comp *c, const Fusion *f, Op *o, const Tensor *a)
{
	Pos p = o->attr_pos.line ? o->attr_pos : o->pos;
	bool seen[MAX_RANK] = {false};
	int i, lo = MAX_RANK, hi = -1;

	for (i = 0; i < o->ndims; i++) {
		int d = o->dims[i] < 0 ? o->dims[i] + a->rank : o->dims[i];

		if (d < 0 || d >= a->rank)
			return diag_error(c, p, "dim %d in 'dim' is out of range for '%s' %s of rank %d (expected %d..%d)",
			                  o->dims[i], a->name, shape_str(c, f, a), a->rank, -a->rank, a->rank - 1);
		if (seen[d])
			return diag_error(c, p, "'dim' lists dim %d of '%s' twice", d, a->name);
		seen[d] = true;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	if (hi - lo + 1 != o->ndims)
		return diag_error(c, p, "'dim' lists dims of '%s' %s that are not consecutive, the last one among them: a "
		                  "reduction over the last dim takes it with the dims just before it, so far (permute "
		                  "them together first)", a->name, shape_str(c, f, a));
	o->axis = lo;
	o->naxes = o->ndims;
	o->ndims = 0;
	return 0;
}

static int
infer_reduce(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a;
	int i, axis;

	if (!o->in[0].tensor)
		return diag_error(c, o->in[0].pos, "op '%s' needs a tensor input, saw the number %s",
		                  op_info[o->kind].name, num_str(c, o->in[0].lit));
	a = &f->tensor[o->in[0].tensor];
	if (a->rank == 0)
		return diag_error(c, o->pos, "cannot reduce '%s': it is a scalar (rank 0)", a->name);
	if (o->ndims > 0 && reduce_dims(c, f, o, a) < 0)
		return -1;
	axis = o->axis < 0 ? o->axis + a->rank : o->axis;
	if (axis < 0 || axis >= a->rank)
		return diag_error(c, o->pos, "axis %d is out of range for '%s' %s of rank %d (expected %d..%d)",
		                  o->axis, a->name, shape_str(c, f, a), a->rank, -a->rank, a->rank - 1);
	if (!(op_info[o->kind].kinds & 1u << dtype_info[a->dtype].kind))
		return diag_error(c, o->pos, "op '%s' does not reduce %s '%s': reductions compute in f32 and take floats "
		                  "(and bool, for max); cast it to f32 first", op_info[o->kind].name,
		                  dtype_info[a->dtype].name, a->name);
	o->axis = axis;
	out->rank = 0;
	for (i = 0; i < a->rank; i++) {
		if (i < axis || i >= axis + op_naxes(o))
			out->dim[out->rank++] = a->dim[i];
		else if (o->keepdim)
			out->dim[out->rank++] = (Dim){0, 1};
	}
	out->dtype = a->dtype;
	return 0;
}

/*
 * A reduction over a list of dims that are not consecutive, the last not
 * among them (dim: [0, 2] of [A, B, C, D]): a permute made in front of it
 * moves the kept dims but the last first, in order, then the reduced ones,
 * the last staying last, and the reduction takes the reduced dims, now
 * consecutive ([B, A, C, D] over dims 1, 2); its result is the same values
 * in the same order.  With keepdim it reduces without, into NAME.reduced,
 * and a reshape gives NAME the user's shape (the views pass folds it into
 * the reduction).  The ops made are inferred here and the loop goes on
 * after the reduction.  1 after such a rewrite, 0 when there is none to
 * make, -1 after an error.
 */
static int infer_view(Comp *c, Fusion *f, Op *o, Tensor *out);

static int
reduce_order(Comp *c, Fusion *f, int i)
{
	Op *o = &f->op[i];
	Tensor a = f->tensor[o->in[0].tensor];
	bool red[MAX_RANK] = {false}, keep = o->keepdim;
	int d, j, lo = MAX_RANK, hi = -1, kept = 0, order[MAX_RANK], t, out = o->out, r;

	if (o->ndims < 2 || !o->in[0].tensor)
		return 0;
	for (j = 0; j < o->ndims; j++) {
		d = o->dims[j] < 0 ? o->dims[j] + a.rank : o->dims[j];
		if (d < 0 || d >= a.rank || red[d])
			return 0;   /* (reduce_dims says which) */
		red[d] = true;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	if (red[a.rank - 1] || hi - lo + 1 == o->ndims)
		return 0;   /* (consecutive, or a row's: reduce_dims) */
	for (d = 0; d < a.rank - 1; d++)
		if (!red[d])
			order[kept++] = d;
	for (j = kept, d = 0; d < a.rank; d++)   /* the reduced dims, then the last */
		if (red[d] || d == a.rank - 1)
			order[j++] = d;
	r = keep ? fusion_add_tensor(c, f, intern_cstr(c->strs, arena_printf(c->arena, "%s.reduced",
	                                                                        f->tensor[out].name)), TK_VALUE, o->pos)
	         : out;
	t = fusion_add_tensor(c, f, intern_cstr(c->strs, arena_printf(c->arena, "%s.permuted", f->tensor[r].name)),
	                      TK_VALUE, o->pos);
	o = fusion_insert_op(c, f, i);
	*o = (Op){.kind = OP_PERMUTE, .out = t, .nin = 1, .ndims = a.rank, .pos = f->op[i + 1].pos,
	          .attr_pos = f->op[i + 1].pos, .origin = f->tensor[r].name};
	o->in[0] = f->op[i + 1].in[0];
	memcpy(o->dims, order, sizeof order);
	f->tensor[t].def = i;
	if (infer_view(c, f, o, &f->tensor[t]) < 0)
		return -1;
	o = &f->op[i + 1];
	o->in[0].tensor = t;
	o->naxes = o->ndims;
	o->ndims = 0;
	o->axis = kept;
	o->keepdim = false;
	o->out = r;
	f->tensor[r].def = i + 1;
	if (infer_reduce(c, f, o, &f->tensor[r]) < 0)
		return -1;
	if (keep) {   /* NAME = reshape(NAME.reduced, the user's shape: ones where the reduced dims were) */
		o = fusion_insert_op(c, f, i + 2);
		*o = (Op){.kind = OP_RESHAPE, .out = out, .nin = 1, .nshape = a.rank, .pos = f->op[i + 1].pos,
		          .attr_pos = f->op[i + 1].pos, .origin = f->tensor[out].name};
		o->in[0] = (Operand){.tensor = r, .pos = o->pos};
		for (d = 0; d < a.rank; d++)
			o->shape[d] = red[d] ? (Dim){0, 1} : a.dim[d];
		f->tensor[out].def = i + 2;
	}
	return 1;
}

const char *
reduce_what(Comp *c, const Fusion *f, const Op *o)
{
	const Tensor *x = &f->tensor[o->in[0].tensor];
	const Op *p = x->def ? &f->op[x->def] : NULL;
	int i, n = op_naxes(o);
	Buf b;

	if (!p || p->kind != OP_PERMUTE || p->origin != f->tensor[o->out].name)
		p = NULL;   /* (as written, or moved by the views pass: the permuted name) */
	buf_init(&b, c->arena);
	buf_printf(&b, "%s over %s", op_info[o->kind].name, n > 1 ? "dims " : "axis ");
	for (i = 0; i < n; i++)
		buf_printf(&b, "%s%d", i ? ", " : "", p ? p->dims[o->axis + i] : o->axis + i);
	buf_printf(&b, " of '%s'", p ? f->tensor[p->in[0].tensor].name : x->name);
	return buf_str(&b);
}

static int
infer_matmul(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a, *b;
	Dim m, ka, kb, n;
	int i;

	for (i = 0; i < 2; i++)
		if (!o->in[i].tensor)
			return diag_error(c, o->in[i].pos, "matmul needs tensor inputs, saw the number %s",
			                  num_str(c, o->in[i].lit));
	a = &f->tensor[o->in[0].tensor];
	b = &f->tensor[o->in[1].tensor];
	for (i = 0; i < 2; i++) {
		const Tensor *t = i ? b : a;

		if (t->rank < 2)
			return diag_error(c, o->in[i].pos, "matmul operand '%s' %s has rank %d, expected 2 or more",
			                  t->name, shape_str(c, f, t), t->rank);
		if (t->dtype != DT_F32 && t->dtype != DT_F16 && t->dtype != DT_BF16)
			return diag_error(c, o->in[i].pos, "matmul operand '%s' is %s: matmul multiplies f32, f16 and bf16 "
			                  "only (cast it first)", t->name, dtype_info[t->dtype].name);
	}
	/* batch dims: on A alone (B shared by the batch), or the same on both */
	if (b->rank != 2 && b->rank != a->rank)
		return diag_error(c, o->in[1].pos,
		                  "matmul operand '%s' %s has rank %d; the second operand has rank 2 (shared by the "
		                  "batch) or the first's rank %d (the same batch dims)",
		                  b->name, shape_str(c, f, b), b->rank, a->rank);
	for (i = 0; b->rank > 2 && i < a->rank - 2; i++)
		if (!dim_equal(a->dim[i], b->dim[i]))
			return diag_error(c, o->pos, "matmul batch dims differ: dim %d of '%s' %s is %s, of '%s' %s is %s",
			                  i, a->name, shape_str(c, f, a), dim_str(c, f, a->dim[i]), b->name,
			                  shape_str(c, f, b), dim_str(c, f, b->dim[i]));
	m = a->dim[a->rank - (o->transpose_a ? 1 : 2)];
	ka = a->dim[a->rank - (o->transpose_a ? 2 : 1)];
	kb = b->dim[b->rank - (o->transpose_b ? 1 : 2)];
	n = b->dim[b->rank - (o->transpose_b ? 2 : 1)];
	if (!dim_equal(ka, kb))
		return diag_error(c, o->pos,
		                  "matmul inner dimensions differ: the inner dim of '%s' %s%s is %s, of '%s' %s%s is %s",
		                  a->name, shape_str(c, f, a), o->transpose_a ? " (transposed)" : "",
		                  dim_str(c, f, ka), b->name, shape_str(c, f, b),
		                  o->transpose_b ? " (transposed)" : "", dim_str(c, f, kb));
	out->rank = a->rank;
	memcpy(out->dim, a->dim, sizeof out->dim);
	out->dim[a->rank - 2] = m;
	out->dim[a->rank - 1] = n;
	out->dtype = dtype_promote(a->dtype, b->dtype);
	return 0;
}

/* ---- views ---- */

/* D, a dim of A as the view op O wrote it under KEY (negative from the end), normalized into *OUT. */
static int
view_dim(Comp *c, const Fusion *f, const Op *o, const Tensor *a, int d, const char *key, Pos p, int *out)
{
	int n = d < 0 ? d + a->rank : d;

	if (a->rank == 0)
		return diag_error(c, o->pos, "op '%s' takes a tensor of rank 1 or more; '%s' is a scalar (rank 0)",
		                  op_info[o->kind].name, a->name);
	if (n < 0 || n >= a->rank)
		return diag_error(c, p.line ? p : o->pos, "%s %d is out of range for '%s' %s of rank %d (expected %d..%d)",
		                  key, d, a->name, shape_str(c, f, a), a->rank, -a->rank, a->rank - 1);
	*out = n;
	return 0;
}

/*
 * The extent of dim D of A where view O makes a dim that depends on it: a
 * constant, or a size bound at compile time (else an error at P).  A Dim is one size or a
 * constant, so N - 1 or N + 2 has no name in the IR.
 */
static int
view_extent(Comp *c, Fusion *f, const Op *o, const Tensor *a, int d, Pos p, int64_t *n)
{
	Dim x = a->dim[d];
	const char *s;

	*n = dim_value(f, x);
	if (x.sym && f->sym[x.sym].bound)
		f->sym[x.sym].fixed = true;   /* (bind_args holds a launch to it) */
	if (!x.sym || f->sym[x.sym].bound)
		return 0;
	s = f->sym[x.sym].name;
	return diag_error(c, p.line ? p : o->pos, "op '%s' makes a dim from dim %d of '%s' %s, which is the runtime "
	                  "size %s: a dim of the fusion IR is one size or a constant, not an expression of %s; bind %s "
	                  "at compile time (-D %s=VALUE) or give that dim a constant extent", op_info[o->kind].name, d,
	                  a->name, shape_str(c, f, a), s, s, s, s);
}

/* slice, and a chunk's or split's part: torch's clamped [start:end:step] along dim (view_slice) */
static int
infer_slice(Comp *c, Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int64_t n, start, count, size;
	int d;

	if (view_dim(c, f, o, a, o->axis, "dim", o->dim_pos, &d))
		return -1;
	o->axis = d;
	if (a->dim[d].sym && !o->parts && o->start == 0 && o->end >= MAX_EXTENT && o->step == 1)
		return 0;   /* all of a runtime dim: the same size */
	if (a->dim[d].sym && !o->parts && o->start == 0 && o->end == 1) {
		out->dim[d] = (Dim){0, 1};   /* the first of a runtime dim: a size is at least 1 */
		return 0;
	}
	if (view_extent(c, f, o, a, d, o->dim_pos.line ? o->dim_pos : o->attr_pos, &n))
		return -1;
	if (o->parts && !o->chunk && o->part == 0 && o[o->parts - 1].end != n)
		return diag_error(c, o->attr_pos, "op 'split' takes sizes that sum to the dim's extent: they sum to "
		                  "%lld, and dim %d of '%s' %s is %lld", (long long)o[o->parts - 1].end, d, a->name,
		                  shape_str(c, f, a), (long long)n);
	size = (n + o->parts - 1) / (o->parts ? o->parts : 1);
	if (o->chunk && o->part == 0 && (n + size - 1) / size != o->parts)
		return diag_error(c, o->attr_pos, "op 'chunk' of dim %d of '%s' %s into %d makes %lld chunks, not %d: "
		                  "torch.chunk's chunks are ceil(%lld / %d) = %lld long, the last shorter; name %lld "
		                  "outputs (chunks: %lld)", d, a->name, shape_str(c, f, a), o->parts,
		                  (long long)((n + size - 1) / size), o->parts, (long long)n, o->parts, (long long)size,
		                  (long long)((n + size - 1) / size), (long long)((n + size - 1) / size));
	view_slice(o, n, &start, &count);
	if (count == 0)
		return diag_error(c, o->attr_pos.line ? o->attr_pos : o->pos, "slice [%lld:%s:%lld] of dim %d of '%s' %s "
		                  "is empty: torch gives an empty tensor, and wsfuse's tensors have at least one element",
		                  (long long)o->start, o->end == INT64_MAX ? "" : arena_printf(c->arena, "%lld",
		                  (long long)o->end), (long long)o->step, d, a->name, shape_str(c, f, a));
	out->dim[d] = (Dim){0, count};
	return 0;
}

/* cat: the same rank and dims but along dim, which adds up */
static int
infer_cat(Comp *c, Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int64_t sum = 0, n;
	int d, i, j;

	if (view_dim(c, f, o, a, o->axis, "dim", o->dim_pos, &d))
		return -1;
	o->axis = d;
	for (j = 1; j < o->nin; j++) {
		const Tensor *b = &f->tensor[o->in[j].tensor];

		if (b->rank != a->rank)
			return diag_error(c, o->in[j].pos, "cannot cat '%s' %s with '%s' %s: ranks differ (%d and %d)",
			                  a->name, shape_str(c, f, a), b->name, shape_str(c, f, b), a->rank, b->rank);
		for (i = 0; i < a->rank; i++)
			if (i != d && !dim_equal(a->dim[i], b->dim[i]))
				return diag_error(c, o->in[j].pos, "cannot cat '%s' %s with '%s' %s along dim %d: dim %d "
				                  "differs (%s vs %s); tensors must match except along the cat dim",
				                  a->name, shape_str(c, f, a), b->name, shape_str(c, f, b), d, i,
				                  dim_str(c, f, a->dim[i]), dim_str(c, f, b->dim[i]));
	}
	for (j = 0; j < o->nin; j++) {
		if (view_extent(c, f, o, &f->tensor[o->in[j].tensor], d, o->in[j].pos, &n))
			return -1;
		sum += n;
	}
	out->dim[d] = (Dim){0, sum};
	return 0;
}

/* permute (dims, a permutation) and transpose (dim0 and dim1 swapped) */
static int
infer_permute(Comp *c, const Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int i, d, seen = 0;

	if (o->kind == OP_TRANSPOSE) {
		if (view_dim(c, f, o, a, o->dim0, "dim0", o->dim_pos, &o->dim0) ||
		    view_dim(c, f, o, a, o->dim1, "dim1", o->attr_pos, &o->dim1))
			return -1;
		out->dim[o->dim0] = a->dim[o->dim1];
		out->dim[o->dim1] = a->dim[o->dim0];
		return 0;
	}
	if (o->ndims != a->rank)
		return diag_error(c, o->attr_pos, "op 'permute' of '%s' %s takes %d dims (its rank), saw %d", a->name,
		                  shape_str(c, f, a), a->rank, o->ndims);
	for (i = 0; i < o->ndims; i++) {
		if (view_dim(c, f, o, a, o->dims[i], "dim", o->attr_pos, &d))
			return -1;
		if (seen & 1 << d)
			return diag_error(c, o->attr_pos, "'dims' names dim %d of '%s' %s twice (as %d): expected each of "
			                  "0..%d once", d, a->name, shape_str(c, f, a), o->dims[i], a->rank - 1);
		seen |= 1 << d;
		o->dims[i] = d;
		out->dim[i] = a->dim[d];
	}
	return 0;
}

/*
 * reshape and view: the element counts must agree, size for size where a
 * size is known only at run time (a Dim is one size or a constant, so -1
 * can stand for a constant or one size, not M * 2); sizes bound at compile
 * time count as their values.
 */
static int
infer_reshape(Comp *c, const Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int left[MAX_RANK], nleft = 0, i, j, minus = -1;
	int64_t kin = 1, kout = 1, nin = 1, nout = 1;
	bool proved = true, bound = true, fits = true;

	for (i = 0; i < a->rank; i++) {
		if (a->dim[i].sym)
			left[nleft++] = a->dim[i].sym;
		bound &= !a->dim[i].sym || f->sym[a->dim[i].sym].bound;
		fits &= size_mul(kin, a->dim[i].sym ? 1 : a->dim[i].ext, &kin) &&
		        size_mul(nin, dim_value(f, a->dim[i]), &nin);
	}
	for (i = 0; i < o->nshape; i++) {
		Dim x = o->shape[i];

		out->dim[i] = x;
		if (!x.sym && x.ext == -1) {
			minus = i;
			continue;
		}
		fits &= size_mul(kout, x.sym ? 1 : x.ext, &kout) && size_mul(nout, dim_value(f, x), &nout);
		bound &= !x.sym || f->sym[x.sym].bound;
		if (!x.sym)
			continue;
		for (j = 0; j < nleft && left[j] != x.sym; j++)
			;
		if (j == nleft)
			proved = false;
		else
			left[j] = left[--nleft];
	}
	out->rank = o->nshape;
	if (!fits)
		return diag_error(c, o->attr_pos, "cannot %s '%s' %s to %s: an element count does not fit in 64 bits",
		                  op_info[o->kind].name, a->name, shape_str(c, f, a), dims_str(c, f, o->shape, o->nshape));
	if (proved && (minus < 0 ? nleft == 0 && kin == kout
	                         : kin % kout == 0 && (nleft == 0 || (nleft == 1 && kin == kout)))) {
		if (minus >= 0)
			out->dim[minus] = nleft ? (Dim){left[0], 0} : (Dim){0, kin / kout};
		return 0;
	}
	if (!bound)
		return diag_error(c, o->attr_pos, "cannot %s '%s' %s to %s: with runtime sizes the element counts must "
		                  "agree size for size, and a dim of the fusion IR is one size or a constant (-1 cannot "
		                  "stand for a product of sizes); write the shape with the same sizes, or bind them at "
		                  "compile time (-D NAME=VALUE)", op_info[o->kind].name, a->name, shape_str(c, f, a),
		                  dims_str(c, f, o->shape, o->nshape));
	if (minus >= 0 && nin % nout == 0) {
		out->dim[minus] = (Dim){0, nin / nout};
		return 0;
	}
	if (minus >= 0)
		return diag_error(c, o->attr_pos, "cannot %s '%s' %s (%lld elements) to %s: %lld is not a multiple of "
		                  "%lld, the other dims' product", op_info[o->kind].name, a->name, shape_str(c, f, a),
		                  (long long)nin, dims_str(c, f, o->shape, o->nshape), (long long)nin, (long long)nout);
	return diag_error(c, o->attr_pos, "cannot %s '%s' %s (%lld elements) to %s (%lld elements): the element "
	                  "counts must be equal", op_info[o->kind].name, a->name, shape_str(c, f, a), (long long)nin,
	                  dims_str(c, f, o->shape, o->nshape), (long long)nout);
}

/* expand: -1 keeps a dim, a size-1 dim grows, new dims lead (torch's expand) */
static int
infer_expand(Comp *c, const Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int lead = o->nshape - a->rank, i;

	if (lead < 0)
		return diag_error(c, o->attr_pos, "cannot expand '%s' %s to %s: the shape has %d dim%s, fewer than the "
		                  "tensor's %d", a->name, shape_str(c, f, a), dims_str(c, f, o->shape, o->nshape),
		                  o->nshape, o->nshape == 1 ? "" : "s", a->rank);
	for (i = 0; i < o->nshape; i++) {
		Dim want = o->shape[i], have = i >= lead ? a->dim[i - lead] : (Dim){0, 1};
		bool keep = !want.sym && want.ext == -1;

		if (keep && i < lead)
			return diag_error(c, o->attr_pos, "cannot expand '%s' %s to %s: -1 keeps a dim, and entry %d is a "
			                  "new leading dim, which needs its size", a->name, shape_str(c, f, a),
			                  dims_str(c, f, o->shape, o->nshape), i);
		if (!keep && !dim_equal(want, have) && !dim_is_one(have))
			return diag_error(c, o->attr_pos, "cannot expand dim %d of '%s' %s from %s to %s: only size-1 dims "
			                  "grow", i - lead, a->name, shape_str(c, f, a), dim_str(c, f, have),
			                  dim_str(c, f, want));
		out->dim[i] = keep ? have : want;
	}
	out->rank = o->nshape;
	return 0;
}

/* pad: (before, after) a dim from the last, each dim padded grows by their sum */
static int
infer_pad(Comp *c, Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	int64_t n;
	int k, d;

	if (o->npad / 2 > a->rank)
		return diag_error(c, o->attr_pos, "op 'pad' gives %d pads, two a dim from the last, and '%s' %s has "
		                  "rank %d: expected at most %d", o->npad, a->name, shape_str(c, f, a), a->rank,
		                  2 * a->rank);
	for (k = 0; k < o->npad / 2; k++) {
		d = a->rank - 1 - k;
		if (!o->pad[2 * k] && !o->pad[2 * k + 1])
			continue;
		if (view_extent(c, f, o, a, d, o->attr_pos, &n))
			return -1;
		out->dim[d] = (Dim){0, n + o->pad[2 * k] + o->pad[2 * k + 1]};
	}
	return 0;
}

/* A view's shape from its input's (cat: inputs'); its dtype the input's (cat: promoted, as torch.cat) */
/*
 * index_select(x, dim, index): x's shape with dim as long as the 1-D index;
 * gather(x, dim, index): the index's shape, of x's rank, each dim but dim
 * at most x's (torch's rule).  The index is int32 or int64; the result is
 * x's dtype.
 */
static int
infer_index(Comp *c, const Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	const Tensor *ix = &f->tensor[o->in[1].tensor];
	int d, i;

	if (!o->in[1].tensor)
		return diag_error(c, o->in[1].pos, "op '%s' takes its index as a tensor (int32 or int64), not a number",
		                  op_info[o->kind].name);
	if (ix->dtype != DT_INT32 && ix->dtype != DT_INT64)
		return diag_error(c, o->in[1].pos, "op '%s': index '%s' is %s, expected int32 or int64",
		                  op_info[o->kind].name, ix->name, dtype_info[ix->dtype].name);
	if (view_dim(c, f, o, a, o->axis, "dim", o->dim_pos, &d))
		return -1;
	o->axis = d;
	if (o->kind == OP_INDEX_SELECT) {
		if (ix->rank != 1)
			return diag_error(c, o->in[1].pos, "op 'index_select': index '%s' %s has %d dims, expected 1 (a list "
			                  "of positions along dim %d)", ix->name, shape_str(c, f, ix), ix->rank, d);
		out->dim[d] = ix->dim[0];
		return 0;
	}
	if (ix->rank != a->rank)
		return diag_error(c, o->in[1].pos, "op 'gather': index '%s' %s has %d dim%s, expected %d, as '%s' %s has",
		                  ix->name, shape_str(c, f, ix), ix->rank, ix->rank == 1 ? "" : "s", a->rank, a->name,
		                  shape_str(c, f, a));
	for (i = 0; i < a->rank; i++)
		if (i != d && !dim_equal(ix->dim[i], a->dim[i]) &&
		    (ix->dim[i].sym || a->dim[i].sym || ix->dim[i].ext > a->dim[i].ext))
			return diag_error(c, o->in[1].pos, "op 'gather': dim %d of index '%s' %s is larger than that of '%s' "
			                  "%s (each dim but dim %d at most the input's)", i, ix->name, shape_str(c, f, ix),
			                  a->name, shape_str(c, f, a), d);
	memcpy(out->dim, ix->dim, sizeof out->dim);
	return 0;
}

/*
 * index_copy(x, dim, index, source): source's rows placed along dim at the
 * 1-D index's positions; slice_scatter(x, src, dim, start, end, step): src
 * placed at the slice (view_slice) along dim.  The result is x's shape and
 * dtype; the part placed must be x's dtype and x's shape but along dim,
 * where it is the index's length (index_copy) or the slice's (torch's rules).
 * (The front end takes tensors alone for views.)
 */
static int
infer_scatter(Comp *c, Fusion *f, Op *o, const Tensor *a, Tensor *out)
{
	const Operand *in = &o->in[o->nin - 1];
	const Tensor *src = &f->tensor[in->tensor];
	const char *name = op_info[o->kind].name;
	Dim along;
	int64_t start, count;
	int d, i;

	if (view_dim(c, f, o, a, o->axis, "dim", o->dim_pos, &d))
		return -1;
	o->axis = d;
	if (o->kind == OP_INDEX_COPY) {
		const Tensor *ix = &f->tensor[o->in[1].tensor];

		if (ix->dtype != DT_INT32 && ix->dtype != DT_INT64)
			return diag_error(c, o->in[1].pos, "op 'index_copy': index '%s' is %s, expected int32 or int64",
			                  ix->name, dtype_info[ix->dtype].name);
		if (ix->rank != 1)
			return diag_error(c, o->in[1].pos, "op 'index_copy': index '%s' %s has %d dims, expected 1 (a list "
			                  "of positions along dim %d)", ix->name, shape_str(c, f, ix), ix->rank, d);
		along = ix->dim[0];
	} else {
		if (a->dim[d].sym && !(o->start == 0 && o->end >= MAX_EXTENT && o->step == 1) &&
		    view_extent(c, f, o, a, d, o->dim_pos.line ? o->dim_pos : o->attr_pos, &count))
			return -1;
		view_slice(o, dim_value(f, a->dim[d]), &start, &count);
		if (count == 0)
			return diag_error(c, o->attr_pos.line ? o->attr_pos : o->pos, "op 'slice_scatter': the slice "
			                  "[%lld:%s:%lld] of dim %d of '%s' %s is empty", (long long)o->start,
			                  o->end == INT64_MAX ? "" : arena_printf(c->arena, "%lld", (long long)o->end),
			                  (long long)o->step, d, a->name, shape_str(c, f, a));
		along = a->dim[d].sym && count == dim_value(f, a->dim[d]) ? a->dim[d] : (Dim){0, count};
	}
	if (src->dtype != a->dtype)
		return diag_error(c, in->pos, "op '%s': '%s' is %s and '%s' is %s: torch places a tensor of the same "
		                  "dtype (cast it first)", name, src->name, dtype_info[src->dtype].name, a->name,
		                  dtype_info[a->dtype].name);
	for (i = 0; i < a->rank && src->rank == a->rank; i++) {
		Dim want = i == d ? along : a->dim[i], x = src->dim[i];

		if (x.sym && !want.sym && f->sym[x.sym].bound && f->sym[x.sym].value == want.ext)
			f->sym[x.sym].fixed = true;   /* (a size bound at compile time: held to it at a launch) */
		else if (!dim_equal(x, want))
			break;
	}
	if (src->rank != a->rank || i < a->rank)
		return diag_error(c, in->pos, "op '%s': '%s' %s does not fit: expected '%s' %s with dim %d %s%s", name,
		                  src->name, shape_str(c, f, src), a->name, shape_str(c, f, a), d,
		                  o->kind == OP_INDEX_COPY ? "as long as the index" : "the slice's extent",
		                  i < src->rank && src->dim[i].sym && !f->sym[src->dim[i].sym].bound ?
		                  arena_printf(c->arena, " (dim %d is the runtime size %s: a constant extent, or -D %s=VALUE, "
		                               "fits a constant)", i, f->sym[src->dim[i].sym].name,
		                               f->sym[src->dim[i].sym].name) : "");
	return 0;
}

static int
infer_view(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a = &f->tensor[o->in[0].tensor];
	int rc;

	out->rank = a->rank;
	memcpy(out->dim, a->dim, sizeof out->dim);
	switch (o->kind) {
	case OP_SLICE:
		rc = infer_slice(c, f, o, a, out);
		break;
	case OP_CAT:
		rc = infer_cat(c, f, o, a, out);
		break;
	case OP_PERMUTE:
	case OP_TRANSPOSE:
		rc = infer_permute(c, f, o, a, out);
		break;
	case OP_RESHAPE:
	case OP_VIEW:
		rc = infer_reshape(c, f, o, a, out);
		break;
	case OP_EXPAND:
		rc = infer_expand(c, f, o, a, out);
		break;
	case OP_PAD:
		rc = infer_pad(c, f, o, a, out);
		break;
	case OP_INDEX_SELECT:
	case OP_GATHER:
		rc = infer_index(c, f, o, a, out);
		break;
	case OP_INDEX_COPY:
	case OP_SLICE_SCATTER:
		rc = infer_scatter(c, f, o, a, out);
		break;
	default:   /* chunk and split are read as slices */
		return diag_internal(c, "infer", "view op '%s' has no shape rule", op_info[o->kind].name);
	}
	return rc ? -1 : infer_dtype(c, f, o, out);
}

/* "[M, N] = [4096, 1024]", or "[4096, 1024]" when every dim is a constant. */
static const char *
sized_shape_str(Comp *c, const Fusion *f, const Tensor *t)
{
	Buf b;
	int i;
	bool named = false;

	for (i = 0; i < t->rank; i++)
		named |= t->dim[i].sym != 0;
	buf_init(&b, c->arena);
	if (named)
		buf_printf(&b, "%s = ", shape_str(c, f, t));
	buf_puts(&b, "[");
	for (i = 0; i < t->rank; i++)
		buf_printf(&b, "%s%lld", i ? ", " : "", (long long)dim_value(f, t->dim[i]));
	buf_puts(&b, "]");
	return buf_str(&b);
}

/*
 * Tensor T, stored as DT, must count its elements and its bytes in 64
 * bits: each extent is at most 2^40, but a shape of several need not fit
 * (nor a broadcast of [M, 1] with [1, N], bigger than either).  Sizes
 * unbound here are checked at launch, from the tensors given.  WHAT and P
 * say which tensor and where.
 */
static int
check_size(Comp *c, const Fusion *f, const Tensor *t, Dtype dt, const char *what, Pos p)
{
	int64_t n = tensor_numel(f, t), bytes;

	if (n < 0)
		return diag_error(c, p, "%s '%s' %s has 2^63 elements or more", what, t->name,
		                  sized_shape_str(c, f, t));
	if (!size_mul(n, dtype_info[dt].bytes, &bytes))
		return diag_error(c, p, "%s '%s' %s takes 2^63 bytes or more (%lld elements of %d bytes)", what,
		                  t->name, sized_shape_str(c, f, t), (long long)n, dtype_info[dt].bytes);
	return 0;
}

static int
check_sizes(Comp *c, const Fusion *f)
{
	int i;

	for (i = 1; i < f->ntensor; i++) {
		const Tensor *t = &f->tensor[i];
		bool in = t->kind == TK_INPUT;

		if (check_size(c, f, t, t->dtype, in ? "input" : "value", in ? t->shape_pos : f->op[t->def].pos))
			return -1;
	}
	for (i = 0; i < f->nout; i++)
		if (check_size(c, f, &f->tensor[f->out[i].tensor], f->out[i].dtype, "output", f->out[i].pos))
			return -1;
	return 0;
}

/*
 * An output written into an input's memory (alias) has that input's shape
 * and dtype, and no other output is written there; it is stored, not added
 * (accumulate adds into the output's own memory).
 */
static int
check_aliases(Comp *c, const Fusion *f)
{
	int i, j;

	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];
		const Tensor *t = &f->tensor[o->tensor], *x = &f->tensor[o->alias];

		if (!o->alias)
			continue;
		if (!lower_same_shape(t, x))
			return diag_error(c, o->alias_pos, "output '%s' %s is written into input '%s' %s (alias): the shapes "
			                  "must be equal", t->name, shape_str(c, f, t), x->name, shape_str(c, f, x));
		if (o->dtype != x->dtype)
			return diag_error(c, o->alias_pos, "output '%s' is stored as %s into input '%s', which is %s (alias): "
			                  "the dtypes must be equal", t->name, dtype_info[o->dtype].name, x->name,
			                  dtype_info[x->dtype].name);
		if (o->accumulate)
			return diag_error(c, o->alias_pos, "output '%s': 'alias' and 'accumulate: true' together are not "
			                  "implemented (to add into '%s', add it: {op: add, in: [%s, ...]})", t->name, x->name,
			                  x->name);
		for (j = 0; j < i; j++)
			if (f->out[j].alias == o->alias)
				return diag_error(c, o->alias_pos, "outputs '%s' and '%s' are both written into input '%s' "
				                  "(alias): one output an input", f->tensor[f->out[j].tensor].name, t->name, x->name);
	}
	return 0;
}

/*
 * An input no op reads stays an argument (a launch takes the spec's
 * inputs, in order), but lowering gives it no parameter: nothing loads it
 * and its shape need not fit the kernel's.
 */
static int
mark_unread(Comp *c, Fusion *f)
{
	int i, j, m;

	for (i = 0; i < f->ninput; i++) {
		Tensor *t = &f->tensor[f->input[i]];
		bool read = false;

		for (j = 1; j < f->nop && !read; j++)
			for (m = 0; m < f->op[j].nin; m++)
				read |= f->op[j].in[m].tensor == f->input[i];
		for (j = 0; j < f->nout && !read; j++)
			if (f->out[j].alias == f->input[i])
				t->unread = true;   /* (its memory is an output's: no warning) */
		if (read || t->unread)
			continue;
		if (t->wait_pos.line)
			return diag_error(c, t->wait_pos, "input '%s' waits for its tiles (wait: per_tile), but no op reads it",
			                  t->name);
		t->unread = true;
		diag_warn(c, t->pos, "input '%s' is not read by any op; it stays an argument of the kernel, unread",
		          t->name);
	}
	return 0;
}

/* requires an expanded fusion; leaves dtypes, shapes, axes and Tensor.unread set */
int
pass_infer(Comp *c)
{
	Fusion *f = c->fusion;
	int i, rc = 0;

	for (i = 1; i < f->nop && rc == 0; i++) {
		Op *o = &f->op[i];
		Tensor *out = &f->tensor[o->out];

		switch (op_info[o->kind].cls) {
		case CLS_UNARY:
			rc = infer_unary(c, f, o, out);
			break;
		case CLS_BINARY:
			rc = infer_binary(c, f, o, out);
			break;
		case CLS_REDUCE:
			rc = reduce_order(c, f, i);
			if (rc > 0)   /* (a permute at I, the reduction at I + 1: both inferred) */
				i++, rc = 0;
			else if (rc == 0)
				rc = infer_reduce(c, f, o, out);
			break;
		case CLS_MATMUL:
			rc = infer_matmul(c, f, o, out);
			break;
		case CLS_VIEW:
			rc = infer_view(c, f, o, out);
			break;
		default:
			return diag_internal(c, "infer", "op '%s' reached inference", op_info[o->kind].name);
		}
	}
	if (rc || mark_unread(c, f))
		return -1;
	for (i = 0; i < f->nout; i++) {
		Output *o = &f->out[i];
		Dtype t = f->tensor[o->tensor].dtype;

		if (o->dtype == DT_NONE)
			o->dtype = t;
		if (o->dtype != t && (!dtype_is_float(o->dtype) || !dtype_is_float(t)))
			return diag_error(c, o->pos, "output '%s' is %s; storing it as %s needs a cast op (an output "
			                  "changes dtype only between floats)", f->tensor[o->tensor].name,
			                  dtype_info[t].name, dtype_info[o->dtype].name);
	}
	if (check_sizes(c, f) || check_aliases(c, f))
		return -1;
	f->inferred = true;
	return 0;
}
