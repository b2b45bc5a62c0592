/*
 * print.c: the fusion IR printer.  The text is deterministic (no addresses,
 * no file names) so golden tests can hold it; docs/ir.md gives its grammar.
 * Each line that came from the spec ends with "; LINE:COL".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

void
dim_print(Buf *b, const Fusion *f, Dim d)
{
	if (d.sym)
		buf_puts(b, f->sym[d.sym].name);
	else
		buf_printf(b, "%lld", (long long)d.ext);
}

void
shape_print(Buf *b, const Fusion *f, const Tensor *t)
{
	int i;

	if (t->dtype == DT_NONE) {
		buf_puts(b, "?");
		return;
	}
	buf_printf(b, "%s[", dtype_info[t->dtype].name);
	for (i = 0; i < t->rank; i++) {
		if (i)
			buf_puts(b, ", ");
		dim_print(b, f, t->dim[i]);
	}
	buf_puts(b, "]");
}

/* Pads the line to a column and appends the position comment. */
static void
end_line(Buf *b, size_t start, Pos p)
{
	size_t n = b->len - start;

	if (p.line > 0) {
		buf_indent(b, n < 48 ? (int)(48 - n) : 1);
		buf_printf(b, "; %d:%d", p.line, p.col);
	}
	buf_puts(b, "\n");
}

static void
print_operand(Buf *b, const Fusion *f, const Operand *o)
{
	char s[NUM_MAX];

	if (o->tensor) {
		buf_puts(b, f->tensor[o->tensor].name);
		return;
	}
	num_shortest(s, o->lit);  /* reads back as the same double */
	buf_puts(b, s);
}

/* The views' attributes: as written, and a chunk's or split's part. */
static void
print_view_attrs(Buf *b, const Fusion *f, const Op *o)
{
	unsigned a = op_info[o->kind].attrs;
	int i;

	if (a & A_DIM)
		buf_printf(b, " dim=%d", o->axis);
	if (o->chunk)
		buf_printf(b, " chunk=%d/%d", o->part, o->parts);
	else if (a & A_SLICE && o->end == INT64_MAX)
		buf_printf(b, " start=%lld end=none step=%lld", (long long)o->start, (long long)o->step);
	else if (a & A_SLICE)
		buf_printf(b, " start=%lld end=%lld step=%lld", (long long)o->start, (long long)o->end, (long long)o->step);
	if (o->parts && !o->chunk)
		buf_printf(b, " split=%d/%d", o->part, o->parts);
	if (a & A_DIMS) {
		buf_puts(b, " dims=[");
		for (i = 0; i < o->ndims; i++)
			buf_printf(b, "%s%d", i ? ", " : "", o->dims[i]);
		buf_puts(b, "]");
	}
	if (a & A_DIM01)
		buf_printf(b, " dim0=%d dim1=%d", o->dim0, o->dim1);
	if (a & A_SHAPE) {
		buf_puts(b, " shape=[");
		for (i = 0; i < o->nshape; i++) {
			buf_puts(b, i ? ", " : "");
			dim_print(b, f, o->shape[i]);
		}
		buf_puts(b, "]");
	}
	if (a & A_PAD) {
		char s[NUM_MAX];

		buf_puts(b, " pad=[");
		for (i = 0; i < o->npad; i++)
			buf_printf(b, "%s%lld", i ? ", " : "", (long long)o->pad[i]);
		num_shortest(s, o->value);
		buf_printf(b, "] value=%s", s);
	}
	if (o->placed && o->kind == OP_CAT) {   /* its parts' ends along dim (views.c) */
		buf_puts(b, " placed ends=[");
		for (i = 0; i < o->npad; i++)
			buf_printf(b, "%s%lld", i ? ", " : "", (long long)o->pad[i]);
		buf_puts(b, "]");
		if (o->digit[1])   /* of the index's digit along dim: a reshape merged the cat's dim */
			buf_printf(b, " of (i / %lld) %% %lld", (long long)o->digit[0], (long long)o->digit[1]);
	} else if (o->placed) {
		buf_puts(b, " placed");
	}
}

void
op_print_attrs(Buf *b, const Fusion *f, const Op *o)
{
	unsigned a = op_info[o->kind].attrs;

	if (a & A_APPROX)
		buf_printf(b, " approximate=%s", o->approx == APPROX_TANH ? "tanh" : "none");
	if (a & A_TO)
		buf_printf(b, " to=%s", dtype_info[o->to].name);
	if ((a & A_AXIS) && o->naxes > 1)
		buf_printf(b, " axis=%d..%d", o->axis, o->axis + o->naxes - 1);
	else if (a & A_AXIS)
		buf_printf(b, " axis=%d", o->axis);
	if (a & A_KEEPDIM)
		buf_printf(b, " keepdim=%s", o->keepdim ? "true" : "false");
	if (o->detach)
		buf_puts(b, " detached");
	if (a & A_CLASSES) {
		buf_puts(b, " num_classes=");
		dim_print(b, f, o->shape[0]);
	}
	if (a & A_K) {
		buf_puts(b, " k=");
		dim_print(b, f, o->shape[0]);
		buf_puts(b, o->smallest ? " smallest" : "");
		buf_puts(b, o->part ? " indices" : " values");
	}
	if (a & A_TRANSPOSE)
		buf_printf(b, " transpose_a=%s transpose_b=%s", o->transpose_a ? "true" : "false",
		           o->transpose_b ? "true" : "false");
	if (a & A_ACC)
		buf_printf(b, " acc=%s", dtype_info[o->acc].name);
	if (a & A_EPS) {
		char s[NUM_MAX];

		num_snprintf(s, sizeof s, "%.9g", o->eps);
		buf_printf(b, " eps=%s", s);
	}
	if (op_info[o->kind].cls == CLS_VIEW)
		print_view_attrs(b, f, o);
}

static void
print_schedule(Buf *b, const Schedule *s)
{
	static const char *tri[] = {"", "false", "true"};
	size_t start = b->len;
	int i;

	if (!s->ntile && !s->stages && !s->warp_specialize && !s->persistent && !s->cluster[0] &&
	    !s->consumers && !s->signal && !s->store && !s->swap_ab)
		return;
	buf_puts(b, "  schedule");
	if (s->ntile) {
		buf_puts(b, " tile=[");
		for (i = 0; i < s->ntile; i++)
			buf_printf(b, "%s%d", i ? ", " : "", s->tile[i]);
		buf_puts(b, "]");
	}
	if (s->stages)
		buf_printf(b, " stages=%d", s->stages);
	if (s->warp_specialize)
		buf_printf(b, " warp_specialize=%s", tri[s->warp_specialize]);
	if (s->persistent)
		buf_printf(b, " persistent=%s", tri[s->persistent]);
	if (s->cluster[0])
		buf_printf(b, " cluster=[%d, %d]", s->cluster[0], s->cluster[1]);
	if (s->consumers)
		buf_printf(b, " consumers=%s", s->consumers == CONSUMERS_PINGPONG ? "pingpong" : "cooperative");
	if (s->signal)
		buf_printf(b, "%s%s", s->consumer_pos.line ? " signal=per_tile+consumer" : " signal=per_tile",
		           s->system ? " scope=system" : "");
	if (s->store)
		buf_printf(b, " store=%s", s->store == STORE_TMA ? "tma" : "vector");
	if (s->swap_ab)
		buf_printf(b, " swap_ab=%s", tri[s->swap_ab]);
	end_line(b, start, s->pos);
}

void
fusion_print(Buf *b, const Fusion *f)
{
	static const char *family[] = {"", "pointwise", "reduction", "matmul"};
	size_t start;
	int i, j;

	start = b->len;
	buf_printf(b, "fusion %s", f->name);
	if (f->family)
		buf_printf(b, " family=%s", family[f->family]);
	end_line(b, start, f->pos);
	for (i = 1; i < f->nsym; i++) {
		const Sym *s = &f->sym[i];

		start = b->len;
		if (s->value)
			buf_printf(b, "  size %s = %lld%s", s->name, (long long)s->value, s->bound ? " (bound)" : "");
		else
			buf_printf(b, "  size %s = ?", s->name);
		end_line(b, start, s->pos);
	}
	for (i = 0; i < f->ninput; i++) {
		const Tensor *t = &f->tensor[f->input[i]];

		start = b->len;
		buf_printf(b, "  input %s: ", t->name);
		shape_print(b, f, t);
		if (t->wait_pos.line)
			buf_puts(b, " wait=per_tile");
		if (t->wait_tile[0])
			buf_printf(b, " wait_tile=%dx%d", t->wait_tile[0], t->wait_tile[1]);
		end_line(b, start, t->pos);
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const Tensor *t = &f->tensor[o->out];

		start = b->len;
		buf_printf(b, "  %s: ", t->name);
		shape_print(b, f, t);
		buf_printf(b, " = %s(", op_info[o->kind].name);
		for (j = 0; j < o->nin; j++) {
			if (j)
				buf_puts(b, ", ");
			print_operand(b, f, &o->in[j]);
		}
		buf_puts(b, ")");
		op_print_attrs(b, f, o);
		end_line(b, start, o->pos);
	}
	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];
		const Tensor *t = &f->tensor[o->tensor];

		start = b->len;
		buf_printf(b, "  output %s: %s%s%s", t->name, o->dtype ? dtype_info[o->dtype].name : "?",
		           o->consumer ? " by the signal consumer" : "", o->accumulate ? " accumulate" : "");
		if (t->wait_pos.line)
			buf_puts(b, " wait=per_tile");
		if (t->wait_tile[0])
			buf_printf(b, " wait_tile=%dx%d", t->wait_tile[0], t->wait_tile[1]);
		if (o->alias)   /* written into the input's memory; a scatter of it, its part alone */
			buf_printf(b, " alias=%s%s", f->tensor[o->alias].name, fusion_scatter(f, i) ? " in place" : "");
		if (f->split_out)   /* views.c: its range of the value the kernel computes */
			buf_printf(b, " = %s part=[%lld, %lld) dim=%d", f->tensor[f->split_out].name, (long long)o->part[0],
			           (long long)o->part[1], f->split_dim);
		end_line(b, start, o->pos);
	}
	print_schedule(b, &f->sched);
}
