/*
 * lower_bcast.c: inputs broadcast along a leading dim of the domain, which
 * the pointwise and row-reduction families read through a pointer at an
 * offset the domain row picks (VIEW_ROW_AT, VIEW_COL_AT): a stride of 0 on
 * each broadcast dim, never a copy.
 *
 * The domain [d0, ..., dn-2, cols] is seen as [rows, cols], so a domain row
 * is a mixed-radix number (i0, ..., in-2) over the leading dims.  An input
 * lined up with the domain from the right, each dim 1 or the domain's,
 * starts its row at the sum of i_j x stride_j over the leading dims it has
 * (not 1); runs of such dims are contiguous in it and merge into one digit.
 * Its last dim is the domain's (a row: VIEW_ROW_AT, read along the columns)
 * or 1 (one element a row: VIEW_COL_AT).  The offset is an index expression
 * of the variable "row" (the compute's own domain row) and of runtime
 * extents, a size param (SZ_DIM) a size variable, so a kernel compiled at
 * one size runs at another.
 */
#include <string.h>

#include "passes.h"

/* Input T's dim over domain axis I (D's rank), 1 where T has none. */
static Dim
aligned_dim(const Tensor *t, const Tensor *d, int i)
{
	int off = d->rank - t->rank;

	return i >= off ? t->dim[i - off] : (Dim){0, 1};
}

View
lower_bcast_view(const Tensor *t, const Tensor *d)
{
	int i;
	Dim last;

	if (t->rank > d->rank || d->rank < 2)
		return VIEW_NONE;
	for (i = 0; i < d->rank; i++) {
		Dim x = aligned_dim(t, d, i);

		if (!dim_is_one(x) && !dim_equal(x, d->dim[i]))
			return VIEW_NONE;
	}
	last = aligned_dim(t, d, d->rank - 1);
	return dim_is_one(last) && !dim_is_one(d->dim[d->rank - 1]) ? VIEW_COL_AT : VIEW_ROW_AT;
}

/* The variable "row" (the compute's own domain row), made on first use. */
static Expr *
row_var(Comp *c, Kernel *k)
{
	int i;

	for (i = 1; i < k->nvar && strcmp(k->var[i].name, "row") != 0; i++)
		;
	return ex_var(c, i < k->nvar ? i : kernel_add_var(c, k, "row"));
}

Expr *
lower_extent(Comp *c, Kernel *k, const Tensor *dom, Dim d)
{
	const Fusion *f = k->fusion;
	int j;

	if (!d.sym)
		return ex_int(c, d.ext);
	if (dim_equal(d, dom->dim[dom->rank - 1]))
		return ex_var(c, k->cols_var);
	for (j = 1; j < k->nparam; j++)
		if (k->param[j].kind == PK_SIZE && k->param[j].size == SZ_DIM && k->param[j].dim[0].sym == d.sym)
			return ex_var(c, k->param[j].var);
	j = kernel_add_param(c, k, PK_SIZE, arena_printf(c->arena, "dim_%s", f->sym[d.sym].name));
	k->param[j].size = SZ_DIM;
	k->param[j].rank = 1;
	k->param[j].dim[0] = d;
	k->param[j].var = kernel_add_var(c, k, k->param[j].name);
	return ex_var(c, k->param[j].var);
}

/* The product of extents of domain axes [A, B) that input T has (not 1); ALL: every axis's. */
static Expr *
extents(Comp *c, Kernel *k, const Tensor *t, const Tensor *d, int a, int b, bool all)
{
	Expr *p = NULL;
	int i;

	for (i = a; i < b; i++)
		if (all || !dim_is_one(aligned_dim(t, d, i)))
			p = p ? ex_bin(c, EX_MUL, p, lower_extent(c, k, d, d->dim[i])) : lower_extent(c, k, d, d->dim[i]);
	return p ? p : ex_int(c, 1);
}

/* requires the size params (lower_size_params); sets param P's offset, adding the size params it reads */
void
lower_bcast_at(Comp *c, Kernel *k, int p, const Tensor *d)
{
	const Tensor *t = &k->fusion->tensor[k->param[p].tensor];
	Expr *row = NULL, *at = ex_int(c, 0);
	int i, j, lead = d->rank - 1;

	row = row_var(c, k);
	for (i = 0; i < lead; i = j) {
		Expr *digit;

		if (dim_is_one(aligned_dim(t, d, i))) {
			j = i + 1;
			continue;
		}
		/* a run [i, j) of dims the input has: one digit of the row, and its stride in the input */
		for (j = i + 1; j < lead && !dim_is_one(aligned_dim(t, d, j)); j++)
			;
		digit = ex_bin(c, EX_DIV, row, extents(c, k, t, d, j, lead, true));
		if (i > 0)
			digit = ex_bin(c, EX_MOD, digit, extents(c, k, t, d, i, j, true));
		at = ex_bin(c, EX_ADD, at, ex_bin(c, EX_MUL, digit, extents(c, k, t, d, j, d->rank, false)));
	}
	k->param[p].at = at;
}

Expr *
lower_stride_expr(Comp *c, Kernel *k, const Tensor *d, Stride x)
{
	Expr *e = x.k == 1 && x.nsym ? NULL : ex_int(c, x.k);
	int i;

	for (i = 0; i < x.nsym; i++)
		e = e ? ex_bin(c, EX_MUL, e, lower_extent(c, k, d, (Dim){x.sym[i], 0})) : lower_extent(c, k, d, (Dim){x.sym[i], 0});
	return e;
}

void
lower_strided_at(Comp *c, Kernel *k, int p, const Tensor *d, const Strided *s)
{
	Stride st[MAX_RANK], zero = {0, 0, {0}};
	Expr *row, *at = NULL;
	int i, j, lead = d->rank - 1, off = d->rank - s->rank;

	for (i = 0; i < d->rank; i++)
		st[i] = i < off || dim_is_one(s->ext[i - off]) ? zero : s->stride[i - off];
	for (i = 0; i < s->noff; i++)
		at = at ? ex_bin(c, EX_ADD, at, lower_stride_expr(c, k, d, s->off[i])) : lower_stride_expr(c, k, d, s->off[i]);
	row = row_var(c, k);
	for (i = 0; i < lead; i = j) {
		Stride next;
		Expr *digit;

		if (!st[i].k) {
			j = i + 1;
			continue;
		}
		/* a run [i, j) of dims one stride apart in memory: one digit of the row */
		for (j = i + 1; j < lead && st[j].k; j++) {
			next = st[j];
			if (d->dim[j].sym)
				next.sym[next.nsym++] = d->dim[j].sym;
			else
				next.k *= d->dim[j].ext;
			if (!stride_equal(st[j - 1], next))
				break;
		}
		digit = j < lead ? ex_bin(c, EX_DIV, row, extents(c, k, d, d, j, lead, true)) : row;
		if (i > 0)
			digit = ex_bin(c, EX_MOD, digit, extents(c, k, d, d, i, j, true));
		if (st[j - 1].k != 1 || st[j - 1].nsym)
			digit = ex_bin(c, EX_MUL, digit, lower_stride_expr(c, k, d, st[j - 1]));
		at = at ? ex_bin(c, EX_ADD, at, digit) : digit;
	}
	k->param[p].at = at ? at : ex_int(c, 0);
	k->param[p].step = lower_stride_expr(c, k, d, d->rank ? st[d->rank - 1] : zero);
}

Expr *
lower_row_digit(Comp *c, Kernel *k, const Tensor *d, int dim)
{
	Expr *row, *digit;
	int lead = d->rank - 1;

	row = row_var(c, k);
	digit = dim + 1 < lead ? ex_bin(c, EX_DIV, row, extents(c, k, d, d, dim + 1, lead, true)) : row;
	return dim > 0 ? ex_bin(c, EX_MOD, digit, lower_extent(c, k, d, d->dim[dim])) : digit;
}

int
lower_input_ptr(Comp *c, Kernel *k, int in, int t)
{
	const Fusion *f = k->fusion;
	int a, p;

	for (a = 0; a < f->ninput && f->input[a] != in; a++)
		;
	p = kernel_add_param(c, k, PK_PTR, f->tensor[t].name);
	k->param[p].arg = a;
	k->param[p].tensor = t;
	k->param[p].dtype = f->tensor[in].dtype;
	return p;
}

bool
lower_index_param(Comp *c, Kernel *k, int p, const Strided *s)
{
	KBounds *b = arena_alloc(c->arena, sizeof *b);
	int q, i;

	b->index_dim = s->gather ? 0 : s->rank - s->index_dim;
	for (q = 1; q < k->nparam; q++)   /* a 1-D index along the same domain dim: the same param, the same at */
		if (b->index_dim && k->param[q].bounds && k->param[q].bounds->index_param &&
		    k->param[k->param[q].bounds->index_param].tensor == s->index && k->param[q].bounds->index_dim == b->index_dim)
			break;
	if (q < k->nparam) {
		q = k->param[q].bounds->index_param;
	} else {
		q = lower_input_ptr(c, k, s->index, s->index);
		k->param[q].view = VIEW_NONE;   /* memory the view reads positions from, not a value */
	}
	for (i = 0; i < MAX_RANK; i++)
		b->hi[i] = INT64_MAX;
	b->index_param = q;
	k->param[p].bounds = b;
	return !(s->gather || s->index_dim == s->rank - 1) && view_stride16(k->fusion, s, s->index_stride, k->param[p].dtype);
}

void
lower_index_at(Comp *c, Kernel *k, const Tensor *d, const KParam *p, const Strided *s)
{
	const Fusion *f = k->fusion;
	KBounds *b = (KBounds *)p->bounds;
	Strided ix;
	const char *why;
	int i;

	if (s->gather) {   /* the index has the view's shape, its own row-major layout */
		view_strided(c, f, s->index, &ix, &why);
	} else {           /* the 1-D index at the view's position along the dim */
		memset(&ix, 0, sizeof ix);
		ix.rank = s->rank;
		for (i = 0; i < s->rank; i++) {
			ix.ext[i] = s->ext[i];
			ix.hi[i] = INT64_MAX;
		}
		ix.stride[s->index_dim] = (Stride){1, 0, {0}};
	}
	lower_strided_at(c, k, b->index_param, d, &ix);
	b->index_scale = lower_stride_expr(c, k, d, s->index_stride);
}
