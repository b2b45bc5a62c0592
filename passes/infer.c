/*
 * infer.c: dtypes, shapes, broadcasts and axes of every value.  Requires no
 * composites; leaves every tensor typed and shaped; breaks nothing.
 *
 * Contract.  Requires: an expanded fusion (no composites).  Guarantees: every
 * tensor has a dtype and a shape; every reduction axis is normalized to
 * 0..rank-1; every output has a stored dtype; every tensor whose sizes are
 * bound counts its elements and bytes in 64 bits.  Errors: operands that
 * cannot broadcast, matmul inner-dimension mismatches, reduction axes out of
 * range, ops applied to literals only, shapes too big to count.  Marks the
 * inputs no op reads (Tensor.unread) with a warning.  Invalidates nothing.
 *
 * Dtypes follow torch: a pointwise result has its tensor operands' dtype when
 * they agree and f32 otherwise; literals do not promote; cast gives `to`.
 * Arithmetic is f32 whatever the dtype, and a value is rounded once, when an
 * output stores it.  Two dims are equal when they name the same size or are
 * the same constant: sizes are runtime values, so M and N may differ at launch
 * even if their defaults agree.
 */
#include <stdio.h>
#include <string.h>

#include "passes.h"

/* "[M, 4096]" for messages. */
static const char *
shape_str(Comp *c, const Fusion *f, const Tensor *t)
{
	Buf b;
	int i;

	buf_init(&b, c->arena);
	buf_puts(&b, "[");
	for (i = 0; i < t->rank; i++) {
		if (i)
			buf_puts(&b, ", ");
		dim_print(&b, f, t->dim[i]);
	}
	buf_puts(&b, "]");
	return buf_str(&b);
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
	out->dtype = o->kind == OP_CAST ? o->to : a->dtype;
	return 0;
}

/* Numpy broadcasting over trailing dims. */
static int
infer_binary(Comp *c, Fusion *f, Op *o, Tensor *out)
{
	const Tensor *a = o->in[0].tensor ? &f->tensor[o->in[0].tensor] : NULL;
	const Tensor *b = o->in[1].tensor ? &f->tensor[o->in[1].tensor] : NULL;
	int i;

	if (!a && !b)
		return diag_error(c, o->pos, "op '%s' needs at least one tensor input, saw two numbers",
		                  op_info[o->kind].name);
	if (!a || !b) {
		const Tensor *t = a ? a : b;

		out->rank = t->rank;
		memcpy(out->dim, t->dim, sizeof out->dim);
		out->dtype = t->dtype;
		return 0;
	}
	out->rank = a->rank > b->rank ? a->rank : b->rank;
	for (i = 1; i <= out->rank; i++) {
		Dim da = {0, 1}, db = {0, 1};

		if (i <= a->rank)
			da = a->dim[a->rank - i];
		if (i <= b->rank)
			db = b->dim[b->rank - i];
		if (dim_equal(da, db) || dim_is_one(db))
			out->dim[out->rank - i] = da;
		else if (dim_is_one(da))
			out->dim[out->rank - i] = db;
		else
			return diag_error(c, o->pos,
			                  "cannot broadcast '%s' %s with '%s' %s in '%s': %s vs %s in %s "
			                  "(dims must be equal or 1, aligned from the right)",
			                  a->name, shape_str(c, f, a), b->name, shape_str(c, f, b),
			                  op_info[o->kind].name, dim_str(c, f, da), dim_str(c, f, db),
			                  i == 1 ? "the last dim" : i == 2 ? "the second-to-last dim" :
			                  arena_printf(c->arena, "dim -%d (the %d%s from the right)", i, i, i == 3 ? "rd" : "th"));
	}
	out->dtype = dtype_promote(a->dtype, b->dtype);
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
	axis = o->axis < 0 ? o->axis + a->rank : o->axis;
	if (axis < 0 || axis >= a->rank)
		return diag_error(c, o->pos, "axis %d is out of range for '%s' %s of rank %d (expected %d..%d)",
		                  o->axis, a->name, shape_str(c, f, a), a->rank, -a->rank, a->rank - 1);
	o->axis = axis;
	out->rank = 0;
	for (i = 0; i < a->rank; i++) {
		if (i != axis)
			out->dim[out->rank++] = a->dim[i];
		else if (o->keepdim)
			out->dim[out->rank++] = (Dim){0, 1};
	}
	out->dtype = a->dtype;
	return 0;
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
		if (read)
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
			rc = infer_reduce(c, f, o, out);
			break;
		case CLS_MATMUL:
			rc = infer_matmul(c, f, o, out);
			break;
		default:
			return diag_internal(c, "infer", "op '%s' reached inference", op_info[o->kind].name);
		}
	}
	if (rc || mark_unread(c, f))
		return -1;
	for (i = 0; i < f->nout; i++)
		if (f->out[i].dtype == DT_NONE)
			f->out[i].dtype = f->tensor[f->out[i].tensor].dtype;
	if (check_sizes(c, f))
		return -1;
	f->inferred = true;
	return 0;
}
