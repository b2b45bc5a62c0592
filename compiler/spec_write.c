/*
 * spec_write.c: a fusion back to spec YAML (docs/spec.md), which spec.c
 * reads into a fusion that computes the same: the backward of --emit=grad.
 *
 * The fusion must be inferred, its composites expanded (each op is written
 * as the primitive it is) and its axes normalized.  Names the passes made
 * ("y.max", "x.grad.2") are no identifiers: each becomes one, its '.' as
 * '_', with "_N" added for the first N that no other name of the fusion
 * takes; a spec name stays as it is.  Sizes keep their values as defaults;
 * schedule hints, waits and signals are not written.  An op made from
 * another (expanded, or derived by passes/grad.c) ends with a comment
 * naming where it came from.
 */
#include <string.h>

#include "compiler.h"

static bool
is_ident(const char *s)
{
	const char *p = s;

	if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
		return false;
	for (; *p; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return false;
	return p - s <= MAX_NAME;
}

/* An identifier for each of F's tensors (NAMES[id]): spec names first, then the others made from theirs. */
static const char **
spec_names(Comp *c, const Fusion *f)
{
	const char **names = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *names);
	Strtab *taken = strtab_new(c->arena);
	int i, n;

	for (i = 1; i < f->ntensor; i++)
		if (is_ident(f->tensor[i].name)) {
			names[i] = f->tensor[i].name;
			intern_new(taken, names[i]);
		}
	for (i = 1; i < f->ntensor; i++) {
		char *s, *p;

		if (names[i])
			continue;
		s = arena_printf(c->arena, "%.*s", MAX_NAME - 8, f->tensor[i].name);
		for (p = s; *p; p++)
			if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
				*p = '_';
		if (!is_ident(s))
			s = arena_printf(c->arena, "t_%s", s);
		for (n = 1, p = s; !intern_new(taken, p); n++)
			p = arena_printf(c->arena, "%s_%d", s, n);
		names[i] = p;
	}
	return names;
}

static void
put_shape(Buf *b, const Fusion *f, const Tensor *t)
{
	buf_puts(b, "[");
	for (int i = 0; i < t->rank; i++) {
		if (i)
			buf_puts(b, ", ");
		dim_print(b, f, t->dim[i]);
	}
	buf_puts(b, "]");
}

/* A number as the spec reads it back: an integer as one, a float with a '.' or an exponent. */
static void
put_number(Buf *b, const Operand *o)
{
	char s[NUM_MAX];

	if (o->lit_int) {
		buf_printf(b, "%.0f", o->lit);
		return;
	}
	num_shortest(s, o->lit);
	buf_puts(b, s);
	if (!strpbrk(s, ".e"))
		buf_puts(b, ".0");
}

/* A view's keys as the front end reads them (a chunk's or split's part: the slice it is, its bounds numbers). */
static void
put_view_attrs(Buf *b, const Fusion *f, const Op *o)
{
	unsigned a = op_info[o->kind].attrs;
	int64_t start, count;
	int i;

	if (a & A_DIM)
		buf_printf(b, ", dim: %d", o->axis);
	if (a & A_SLICE) {
		view_slice(o, dim_value(f, f->tensor[o->in[0].tensor].dim[o->axis]), &start, &count);
		buf_printf(b, ", start: %lld, end: %lld", (long long)start, (long long)(start + (count - 1) * o->step + 1));
		if (o->step != 1)
			buf_printf(b, ", step: %lld", (long long)o->step);
	}
	if (a & A_DIMS) {
		buf_puts(b, ", dims: [");
		for (i = 0; i < o->ndims; i++)
			buf_printf(b, "%s%d", i ? ", " : "", o->dims[i]);
		buf_puts(b, "]");
	}
	if (a & A_DIM01)
		buf_printf(b, ", dim0: %d, dim1: %d", o->dim0, o->dim1);
	if (a & A_SHAPE) {
		buf_puts(b, ", shape: [");
		for (i = 0; i < o->nshape; i++) {
			buf_puts(b, i ? ", " : "");
			if (o->shape[i].sym)
				buf_puts(b, f->sym[o->shape[i].sym].name);
			else
				buf_printf(b, "%lld", (long long)o->shape[i].ext);
		}
		buf_puts(b, "]");
	}
	if (a & A_PAD) {
		Operand v = {0};

		buf_puts(b, ", pad: [");
		for (i = 0; i < o->npad; i++)
			buf_printf(b, "%s%lld", i ? ", " : "", (long long)o->pad[i]);
		buf_puts(b, "], value: ");
		v.lit = o->value;
		put_number(b, &v);
	}
}

/*
 * Op O (NEXT: the op after it, or NULL) as a line of ops:; returns how many
 * ops after O it wrote too: topk's values and indices are one line (out:
 * [values, indices]), indices alone a line with a values name of their own.
 */
static int
put_op(Buf *b, const Fusion *f, const Op *o, const Op *next, const char **names)
{
	unsigned a = op_info[o->kind].attrs;
	size_t start = b->len;
	int more = 0;

	if (o->kind == OP_TOPK && !o->part && next && next->kind == OP_TOPK && next->part &&
	    next->in[0].tensor == o->in[0].tensor && dim_equal(next->shape[0], o->shape[0]) &&
	    next->smallest == o->smallest)
		buf_printf(b, "  - {out: [%s, %s], op: topk, in: [", names[o->out], names[next->out]), more = 1;
	else if (o->kind == OP_TOPK)
		buf_printf(b, "  - {out: [%s%s%s], op: topk, in: [", o->part ? names[o->out] : "", o->part ? "_values, " : "",
		           names[o->out]);
	else
		buf_printf(b, "  - {out: %s, op: %s, in: [", names[o->out], op_info[o->kind].name);
	for (int j = 0; j < o->nin; j++) {
		if (j)
			buf_puts(b, ", ");
		if (o->in[j].tensor)
			buf_puts(b, names[o->in[j].tensor]);
		else
			put_number(b, &o->in[j]);
	}
	buf_puts(b, "]");
	if ((a & A_APPROX) && o->approx == APPROX_TANH)
		buf_puts(b, ", approximate: tanh");
	if (a & A_TO)
		buf_printf(b, ", to: %s", dtype_info[o->to].name);
	if ((a & A_AXIS) && o->naxes > 1)   /* dims axis .. axis + naxes - 1 */
		buf_printf(b, ", axis: [%d, %d%s]", o->axis, o->axis + 1, o->naxes == 2 ? "" :
		           arena_printf(b->arena, ", ..., %d", o->axis + o->naxes - 1));
	else if (a & A_AXIS)
		buf_printf(b, ", axis: %d", o->axis);
	if (a & A_KEEPDIM)
		buf_printf(b, ", keepdim: %s", o->keepdim ? "true" : "false");
	if ((a & A_TRANSPOSE) && o->transpose_a)
		buf_puts(b, ", transpose_a: true");
	if ((a & A_TRANSPOSE) && o->transpose_b)
		buf_puts(b, ", transpose_b: true");
	if (op_info[o->kind].cls == CLS_VIEW)
		put_view_attrs(b, f, o);
	if ((a & A_CLASSES) && o->shape[0].sym)
		buf_printf(b, ", num_classes: %s", f->sym[o->shape[0].sym].name);
	else if (a & A_CLASSES)
		buf_printf(b, ", num_classes: %lld", (long long)o->shape[0].ext);
	if (a & A_K)
		buf_printf(b, ", k: %lld%s", (long long)dim_value(f, o->shape[0]), o->smallest ? ", largest: false" : "");
	buf_puts(b, "}");
	if (o->origin) {
		size_t n = b->len - start;

		buf_indent(b, n < 72 ? (int)(72 - n) : 1);
		buf_printf(b, "# from '%s'", o->origin);
		if (o->pos.line > 0)
			buf_printf(b, ", line %d", o->pos.line);
	}
	buf_puts(b, "\n");
	return more;
}

void
spec_write(Comp *c, Buf *b, const Fusion *f)
{
	const char **names = spec_names(c, f);
	bool *used = arena_alloc(c->arena, (size_t)f->nsym * sizeof *used), first = true;
	int i, j;

	for (i = 1; i < f->ntensor; i++)
		for (j = 0; j < f->tensor[i].rank; j++)
			used[f->tensor[i].dim[j].sym] = true;
	buf_printf(b, "fusion: %s\n", f->name);
	for (i = 1; i < f->nsym; i++)
		if (used[i] && f->sym[i].value > 0) {
			buf_printf(b, "%s%s: %lld", first ? "sizes: {" : ", ", f->sym[i].name, (long long)f->sym[i].value);
			first = false;
		}
	if (!first)
		buf_puts(b, "}\n");
	buf_puts(b, "inputs:\n");
	for (i = 0; i < f->ninput; i++) {
		const Tensor *t = &f->tensor[f->input[i]];

		buf_printf(b, "  %s: {dtype: %s, shape: ", names[f->input[i]], dtype_info[t->dtype].name);
		put_shape(b, f, t);
		buf_puts(b, "}\n");
	}
	buf_puts(b, "ops:\n");
	for (i = 1; i < f->nop; i++)
		i += put_op(b, f, &f->op[i], i + 1 < f->nop ? &f->op[i + 1] : NULL, names);
	buf_puts(b, "outputs:\n");
	for (i = 0; i < f->nout; i++)
		buf_printf(b, "  %s: {dtype: %s}\n", names[f->out[i].tensor], dtype_info[f->out[i].dtype].name);
}
