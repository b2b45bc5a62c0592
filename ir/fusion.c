/*
 * fusion.c: the fusion IR (a DAG of tensors and ops over symbolic sizes), and
 * the op and dtype tables.
 *
 * Tensors, ops and size variables are arrays indexed by id; id 0 is unused so
 * that 0 can mean "none".  Ops are kept in definition order, which is a
 * topological order: every op's inputs are inputs or outputs of earlier ops.
 */
#include <string.h>

#include "ir.h"

const DtypeInfo dtype_info[DT_COUNT] = {
	[DT_NONE] = {"none", "none", "void", 0, DK_NONE, 0},
	[DT_F32] = {"f32", "float32", "float", 4, DK_FLOAT, 24},
	[DT_F16] = {"f16", "float16", "__half", 2, DK_FLOAT, 11},
	[DT_BF16] = {"bf16", "bfloat16", "__nv_bfloat16", 2, DK_FLOAT, 8},
	[DT_FP8E4M3] = {"fp8e4m3", "float8_e4m3fn", "__nv_fp8_e4m3", 1, DK_FLOAT, 4},
	[DT_FP8E5M2] = {"fp8e5m2", "float8_e5m2", "__nv_fp8_e5m2", 1, DK_FLOAT, 3},
	[DT_INT8] = {"int8", "int8", "signed char", 1, DK_INT, 8},
	[DT_UINT8] = {"uint8", "uint8", "unsigned char", 1, DK_INT, 8},
	[DT_INT32] = {"int32", "int32", "int", 4, DK_INT, 32},
	[DT_INT64] = {"int64", "int64", "long long", 8, DK_INT, 64},
	[DT_BOOL] = {"bool", "bool", "bool", 1, DK_BOOL, 1},
};

const OpInfo op_info[OP_COUNT] = {
	[OP_NONE] = {"none", 0, 0, CLS_NONE, 0, 0, 0},
#define OP(id, yaml, nmin, nmax, cls, attrs, ty, kinds) [OP_##id] = {yaml, nmin, nmax, CLS_##cls, attrs, ty, kinds},
#include "ops.h"
#undef OP
};

Dtype
dtype_from_name(const char *s)
{
	int i;

	for (i = 1; i < DT_COUNT; i++)
		if (strcmp(dtype_info[i].name, s) == 0 || strcmp(dtype_info[i].torch, s) == 0)
			return (Dtype)i;
	return DT_NONE;
}

/*
 * torch's promotion of two tensor dtypes: the higher category wins; within
 * ints the wider, and a signed and an unsigned byte meet in int16, which
 * wsfuse lacks, so in int32 (torch: int16); within floats any two that
 * differ give f32 (torch gives f32 for f16 + bf16, and refuses to promote
 * the two fp8 types with others; wsfuse computes in f32 and says so).
 */
Dtype
dtype_promote(Dtype a, Dtype b)
{
	const DtypeInfo *x = &dtype_info[a], *y = &dtype_info[b];

	if (a == DT_NONE)
		return b;
	if (b == DT_NONE || a == b)
		return a;
	if (x->kind != y->kind)
		return x->kind > y->kind ? a : b;
	if (x->kind == DK_INT) {
		if (x->bits != y->bits)
			return x->bits > y->bits ? a : b;
		return DT_INT32;   /* int8 with uint8 */
	}
	return DT_F32;
}

Dtype
dtype_promote_number(Dtype t, bool integral)
{
	DtypeKind k = integral ? DK_INT : DK_FLOAT;

	if (dtype_info[t].kind >= k)
		return t;
	return integral ? DT_INT64 : DT_F32;
}

Dtype
op_compute_dtype(const Fusion *f, const Op *o)
{
	const OpInfo *info = &op_info[o->kind];
	Dtype p = DT_NONE;
	int j, first = info->typing == TY_WHERE;

	if (info->typing == TY_CAST || info->typing == TY_INDEX)
		return f->tensor[o->in[0].tensor].dtype;
	if (info->typing == TY_RAND)   /* its operands keep their types: x gives a shape, seed and offset bits */
		return DT_F32;
	for (j = first; j < o->nin; j++)
		if (o->in[j].tensor)
			p = dtype_promote(p, f->tensor[o->in[j].tensor].dtype);
	for (j = first; j < o->nin; j++)
		if (!o->in[j].tensor)
			p = dtype_promote_number(p, o->in[j].lit_int);
	if (info->typing == TY_FLOAT && !dtype_is_float(p))
		p = DT_F32;
	return p;
}

OpKind
op_from_name(const char *s)
{
	int i;

	for (i = 1; i < OP_COUNT; i++)
		if (strcmp(op_info[i].name, s) == 0)
			return (OpKind)i;
	if (strcmp(s, "amax") == 0)   /* torch.amax, torch.amin: the values of max and min over a dim */
		return OP_MAX;
	if (strcmp(s, "amin") == 0)
		return OP_MIN;
	return OP_NONE;
}

Fusion *
fusion_new(Comp *c)
{
	Fusion *f = arena_alloc(c->arena, sizeof *f);

	/* entry 0 of each id-addressed array stands for "none" */
	VEC_PUSH(c->arena, f->sym, f->nsym, f->capsym);
	VEC_PUSH(c->arena, f->tensor, f->ntensor, f->captensor);
	VEC_PUSH(c->arena, f->op, f->nop, f->capop);
	return f;
}

int
fusion_find_sym(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->nsym; i++)
		if (f->sym[i].name == name)
			return i;
	return 0;
}

int
fusion_add_sym(Comp *c, Fusion *f, const char *name, Pos p)
{
	Sym *s = VEC_PUSH(c->arena, f->sym, f->nsym, f->capsym);

	s->name = name;
	s->pos = p;
	return f->nsym - 1;
}

int
fusion_find_tensor(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (f->tensor[i].name == name)
			return i;
	return 0;
}

int
fusion_add_tensor(Comp *c, Fusion *f, const char *name, TensorKind kind, Pos p)
{
	Tensor *t = VEC_PUSH(c->arena, f->tensor, f->ntensor, f->captensor);

	t->name = name;
	t->kind = kind;
	t->pos = p;
	if (kind == TK_INPUT)
		*VEC_PUSH(c->arena, f->input, f->ninput, f->capinput) = f->ntensor - 1;
	return f->ntensor - 1;
}

int
fusion_add_op(Comp *c, Fusion *f, OpKind kind, Pos p)
{
	Op *o = VEC_PUSH(c->arena, f->op, f->nop, f->capop);

	o->kind = kind;
	o->pos = p;
	o->keepdim = kind != OP_ARGMAX && kind != OP_ARGMIN;   /* (torch's defaults) */
	o->axis = op_info[kind].cls == CLS_VIEW ? 0 : -1;   /* torch's default dim of cat, chunk, split, slice */
	o->end = INT64_MAX;
	o->step = 1;
	o->correction = 1;   /* (torch's var and std) */
	o->acc = DT_F32;
	o->eps = 1e-5;
	if (kind == OP_CROSS_ENTROPY)   /* torch's ignore_index and label_smoothing */
		o->value = -100, o->correction = 0;
	return f->nop - 1;
}

/* torch's slice: a negative bound counts from the end; each is clamped to [0, n]. */
void
view_slice(const Op *o, int64_t n, int64_t *start, int64_t *count)
{
	int64_t s = o->start, e = o->end, size;

	if (o->chunk) {   /* torch.chunk: parts of ceil(n / parts), the last smaller */
		size = (n + o->parts - 1) / o->parts;
		s = o->part * size;
		e = s + size;
	}
	if (s < 0)
		s = s + n < 0 ? 0 : s + n;
	if (e < 0)
		e = e + n < 0 ? 0 : e + n;
	s = s < n ? s : n;
	e = e < n ? e : n;
	*start = s;
	*count = e > s ? (e - s + o->step - 1) / o->step : 0;
}

int64_t
dim_value(const Fusion *f, Dim d)
{
	return d.sym ? f->sym[d.sym].value : d.ext;
}

bool
dim_equal(Dim a, Dim b)
{
	return a.sym ? a.sym == b.sym : !b.sym && a.ext == b.ext;
}

bool
dim_is_one(Dim d)
{
	return !d.sym && d.ext == 1;
}

int64_t
tensor_numel(const Fusion *f, const Tensor *t)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < t->rank; i++) {
		int64_t v = dim_value(f, t->dim[i]);

		if (v <= 0)
			return 0;
		if (!size_mul(n, v, &n))
			return -1;
	}
	return n;
}

int
fusion_output_of(const Fusion *f, int t)
{
	int i;

	for (i = 0; i < f->nout; i++)
		if (f->out[i].tensor == t)
			return i;
	return -1;
}

int
fusion_input_of(const Fusion *f, int t)
{
	int i;

	for (i = 0; i < f->ninput; i++)
		if (f->input[i] == t)
			return i;
	return -1;
}

int
fusion_arg_tensor(const Fusion *f, int i)
{
	return i < f->ninput ? f->input[i] : f->out[i - f->ninput].tensor;
}

const Op *
fusion_scatter(const Fusion *f, int j)
{
	const Output *o = &f->out[j];
	const Op *s = f->tensor[o->tensor].def ? &f->op[f->tensor[o->tensor].def] : NULL;

	if (!o->alias || !s || (s->kind != OP_INDEX_COPY && s->kind != OP_SLICE_SCATTER) || s->in[0].tensor != o->alias)
		return NULL;
	return s;
}

int
fusion_stored(const Fusion *f, int j)
{
	const Op *s = fusion_scatter(f, j);

	return s ? s->in[s->nin - 1].tensor : f->out[j].tensor;
}

bool
fusion_has_op(const Fusion *f, OpKind kind)
{
	int i;

	for (i = 1; i < f->nop; i++)
		if (f->op[i].kind == kind)
			return true;
	return false;
}

/*
 * Is O a reshape (or view) of a computed value that only adds or drops dims
 * of 1, its other dims the same in order (torch's unsqueeze and squeeze:
 * [T] as [T, 1], which the backward of a reduction without keepdim makes)?
 * The same elements in the same order: a row kernel computes it as a copy.
 */
bool
fusion_unsqueeze(const Fusion *f, const Op *o)
{
	const Tensor *a, *b;
	int i = 0, j = 0;

	if ((o->kind != OP_RESHAPE && o->kind != OP_VIEW) || !o->in[0].tensor)
		return false;
	a = &f->tensor[o->in[0].tensor];
	b = &f->tensor[o->out];
	if (a->kind != TK_VALUE || !a->def || op_info[f->op[a->def].kind].cls == CLS_VIEW)
		return false;
	for (;;) {
		while (i < a->rank && dim_is_one(a->dim[i]))
			i++;
		while (j < b->rank && dim_is_one(b->dim[j]))
			j++;
		if (i == a->rank || j == b->rank)
			return i == a->rank && j == b->rank;
		if (!dim_equal(a->dim[i++], b->dim[j++]))
			return false;
	}
}

int
fusion_waits(const Fusion *f)
{
	int i, n = 0;

	for (i = 0; i < f->ninput + f->nout; i++)
		n += f->tensor[fusion_arg_tensor(f, i)].wait_pos.line > 0;
	return n;
}

/*
 * Is T a gather along the last dim of an input's row (f32, f16 or bf16) at topk's indices
 * (torch's x.gather(-1, i) after v, i = p.topk(k): a router's weights of the
 * experts it picked), of the rows' shape?  A row kernel stores it with the
 * selection, each element read from memory.
 */
bool
topk_gather(const Fusion *f, int t)
{
	const Op *o = t && f->tensor[t].def ? &f->op[f->tensor[t].def] : NULL, *k;
	const Tensor *x, *y;
	int i;

	if (!o || o->kind != OP_GATHER || !o->in[1].tensor || !f->tensor[o->in[1].tensor].def)
		return false;
	k = &f->op[f->tensor[o->in[1].tensor].def];
	x = &f->tensor[o->in[0].tensor];
	y = &f->tensor[k->in[0].tensor];
	if (k->kind != OP_TOPK || k->part != 1 || x->kind != TK_INPUT || x->dtype > DT_BF16 || o->axis != x->rank - 1 ||
	    x->rank != y->rank)
		return false;
	for (i = 0; i < x->rank && dim_equal(x->dim[i], y->dim[i]); i++)
		;
	return i == x->rank;
}

Op *
fusion_insert_op(Comp *c, Fusion *f, int at)
{
	int t;

	VEC_PUSH(c->arena, f->op, f->nop, f->capop);
	memmove(&f->op[at + 1], &f->op[at], (size_t)(f->nop - 1 - at) * sizeof *f->op);
	for (t = 1; t < f->ntensor; t++)
		if (f->tensor[t].def >= at)
			f->tensor[t].def++;
	memset(&f->op[at], 0, sizeof f->op[at]);
	return &f->op[at];
}
