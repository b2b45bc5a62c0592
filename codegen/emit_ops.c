/*
 * emit_ops.c: each op as a CUDA expression, from tables indexed by op id
 * (ir/ops.h says so): cuda_expr[] for f32 arithmetic, which every family
 * uses; int_expr[] and bool_expr[] where the op computes on integers or
 * bool.  The row and matmul families keep every value in an f32 register
 * (emit_op_text); the pointwise family gives each value a register of its
 * type and converts operands to the type an op computes in (emit_op_typed).
 * A template's $i is the element's index (Emit.elem_index, rand_like's),
 * and $j its index along the last dim (Emit.col_index, one_hot's and
 * position's), which the pointwise and row families set; a reshape's
 * template is its operand (a row kernel's copy of a computed value with
 * 1-dims added or dropped, fusion_unsqueeze).  Where a thread's 8 elements are
 * consecutive (Emit.rand_base, both families), rand_like's numbers are drawn
 * before the element loop instead, two Philox blocks for the 8
 * (emit_rand_block).  Each reduction's fold (sum and mean, max, prod: its
 * device struct, identity and combination) is a table too (emit_fold),
 * which every family's reductions read.  A cast to a float type that only feeds outputs
 * stored as that type is its operand: the store rounds it
 * (cast_only_stored).
 */
#include <math.h>
#include <string.h>

#include "codegen.h"

/*
 * The CUDA f32 expression of each op; $a and $b are its operands.  exp and the
 * logistic function use the hardware exponential and a fast division (a few
 * ulp of f32: far below bf16 and f16 rounding, and within the f32 check's
 * 1e-5); streaming kernels that apply them to every element are otherwise
 * bound by instruction issue, not memory.
 */
static const char *const cuda_expr[OP_COUNT] = {
	[OP_NEG] = "-$a",
	[OP_ABS] = "fabsf($a)",
	[OP_EXP] = "__expf($a)",
	[OP_LOG] = "logf($a)",
	[OP_SQRT] = "sqrtf($a)",
	[OP_RSQRT] = "rsqrtf($a)",
	[OP_TANH] = "tanhf($a)",
	[OP_SIGMOID] = "__fdividef(1.0f, 1.0f + __expf(-$a))",
	[OP_RELU] = "fmaxf($a, 0.0f)",
	[OP_SILU] = "__fdividef($a, 1.0f + __expf(-$a))",
	[OP_GELU] = "0.5f * $a * (1.0f + erff($a * 0.70710678118654752f))",
	[OP_ADD] = "$a + $b",
	[OP_SUB] = "$a - $b",
	[OP_MUL] = "$a * $b",
	[OP_DIV] = "$a / $b",
	[OP_MAXIMUM] = "fmaxf($a, $b)",
	[OP_MINIMUM] = "fminf($a, $b)",
	[OP_ERF] = "erff($a)",
	[OP_SIN] = "sinf($a)",
	[OP_COS] = "cosf($a)",
	[OP_EXP2] = "exp2f($a)",
	[OP_LOG2] = "log2f($a)",
	[OP_LOG1P] = "log1pf($a)",
	[OP_EXPM1] = "expm1f($a)",
	[OP_FLOOR] = "floorf($a)",
	[OP_CEIL] = "ceilf($a)",
	[OP_ROUND] = "rintf($a)",   /* half to even */
	[OP_TRUNC] = "truncf($a)",
	[OP_SIGN] = "(float)((0.0f < $a) - ($a < 0.0f))",   /* torch's: NaN gives 0 */
	[OP_POW] = "powf($a, $b)",
	[OP_FLOOR_DIVIDE] = "wsf_floordiv($a, $b)",
	[OP_REMAINDER] = "wsf_rem($a, $b)",
	/* the same text in every category */
	[OP_LOGICAL_NOT] = "($a == 0)",
	[OP_LOGICAL_AND] = "($a != 0 && $b != 0)",
	[OP_LOGICAL_OR] = "($a != 0 || $b != 0)",
	[OP_EQ] = "($a == $b)",
	[OP_NE] = "($a != $b)",
	[OP_LT] = "($a < $b)",
	[OP_LE] = "($a <= $b)",
	[OP_GT] = "($a > $b)",
	[OP_GE] = "($a >= $b)",
	[OP_WHERE] = "($a ? $b : $c)",
	[OP_RAND_LIKE] = "wsf_rand_like($b, $c, $i)",   /* $i: the element's index in x (Emit.elem_index) */
	[OP_ONE_HOT] = "($j == $a)",   /* $j: the element's index along the last dim (Emit.col_index) */
	[OP_POSITION] = "(float)($j)",  /* along the last dim (schedule.c refuses another) */
	[OP_RESHAPE] = "$a", [OP_VIEW] = "$a",   /* a row kernel's copy of an unsqueezed value (fusion_unsqueeze) */
};

/*
 * Integer ops ($T: the C type they compute in), only in pointwise kernels,
 * whose registers have their value's type.  Rows left out take cuda_expr's.
 */
static const char *const int_expr[OP_COUNT] = {
	[OP_NEG] = "wsf_neg<$T>($a)",
	[OP_ABS] = "wsf_iabs<$T>($a)",
	[OP_RELU] = "wsf_imax<$T>($a, 0)",
	[OP_ADD] = "wsf_add<$T>($a, $b)",
	[OP_SUB] = "wsf_sub<$T>($a, $b)",
	[OP_MUL] = "wsf_mul<$T>($a, $b)",
	[OP_MAXIMUM] = "wsf_imax<$T>($a, $b)",
	[OP_MINIMUM] = "wsf_imin<$T>($a, $b)",
	[OP_FLOOR] = "$a",
	[OP_CEIL] = "$a",
	[OP_ROUND] = "$a",
	[OP_TRUNC] = "$a",
	[OP_SIGN] = "($T)((0 < $a) - ($a < 0))",
	[OP_BITWISE_NOT] = "($T)~$a",
	[OP_BITWISE_AND] = "($T)($a & $b)",
	[OP_BITWISE_OR] = "($T)($a | $b)",
	[OP_BITWISE_XOR] = "($T)($a ^ $b)",
	[OP_SHL] = "wsf_shl<$T>($a, $b)",
	[OP_SHR] = "wsf_shr<$T>($a, $b)",
	[OP_FLOOR_DIVIDE] = "wsf_floordiv<$T>($a, $b)",
	[OP_REMAINDER] = "wsf_rem<$T>($a, $b)",
};

/* bool ops; their operands may be f32 registers holding 0 or 1 (row and matmul kernels). */
static const char *const bool_expr[OP_COUNT] = {
	[OP_MAXIMUM] = "($a != 0 || $b != 0)",
	[OP_MINIMUM] = "($a != 0 && $b != 0)",
	[OP_SIGN] = "$a",
	[OP_BITWISE_NOT] = "($a == 0)",
	[OP_BITWISE_AND] = "($a != 0 && $b != 0)",
	[OP_BITWISE_OR] = "($a != 0 || $b != 0)",
	[OP_BITWISE_XOR] = "(($a != 0) != ($b != 0))",
};

/*
 * gelu's tanh form, 0.5 a (1 + tanh(u)) with u = sqrt(2/pi) (a + 0.044715 a^3),
 * written as a / (1 + exp(-2u)), the same function: the hardware exponential
 * and a fast division, as the logistic above, instead of tanhf's dozens of
 * instructions, which bound a matmul epilogue.
 */
static const char gelu_tanh[] =
	"__fdividef($a, 1.0f + __expf(-1.5957691216057307f * ($a + 0.044715f * $a * $a * $a)))";

const char *
emit_reg_type(Dtype dt)
{
	return dtype_is_float(dt) ? "float" : dtype_info[dt].ctype;
}

/*
 * A number operand as a CUDA f32 literal: the f32 the kernel computes with
 * (V rounded once to f32), written with the fewest digits that read back as
 * exactly that f32 ("0.1f", "1e-05f"), and '.' as the decimal point whatever
 * the locale.  The front end refuses numbers that f32 rounds to infinity, or
 * from non-zero to zero (compiler/spec.c, f32_number).
 */
const char *
emit_literal(Emit *e, double v)
{
	char s[NUM_MAX + 4];
	float f = (float)v;

	if (isnan(f))
		return "__int_as_float(0x7fc00000)";
	if (isinf(f))
		return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
	num_shortest_f32(s, f);
	if (!strpbrk(s, ".e"))
		strcat(s, ".0");
	return arena_printf(e->c->arena, "%sf", s);
}

/*
 * Cast O to a float type feeds nothing but outputs stored as that type: the
 * store's conversion rounds it, and rounding twice to one type is rounding
 * once, so the cast computes nothing (an fp8 quantization's cast would
 * otherwise convert each element there and back, and again at the store).
 */
static bool
cast_only_stored(const Fusion *f, const Op *o)
{
	bool stored = false;
	int i, j;

	if (!dtype_is_float(o->to) || o->to == DT_F32)
		return false;
	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			if (f->op[i].in[j].tensor == o->out)
				return false;
	for (i = 0; i < f->nout; i++)
		if (f->out[i].tensor == o->out) {
			if (f->out[i].dtype != o->to)
				return false;
			stored = true;
		}
	return stored;
}

/* The template of op O computing in dtype CT: the category's row, else cuda_expr's. */
static const char *
op_template(Emit *e, const Op *o, Dtype ct)
{
	Dtype to = o->to, from = ct;

	if (o->kind == OP_CAST) {
		const char *x = dtype_is_float(from) ? "$a" : "(float)$a";

		if (dtype_is_float(from) && cast_only_stored(e->f, o))
			return "$a";   /* rounded where it is stored (cast_only_stored) */
		if (to == DT_BOOL)
			return "($a != 0)";
		if (dtype_is_int(to))
			return dtype_is_float(from) ? "($T)(long long)$a" : "($T)$a";
		switch (to) {
		case DT_BF16: return arena_printf(e->c->arena, "wsf_round_bf16(%s)", x);
		case DT_F16: return arena_printf(e->c->arena, "wsf_round_f16(%s)", x);
		case DT_FP8E4M3: return arena_printf(e->c->arena, "wsf_round_e4m3(%s)", x);
		case DT_FP8E5M2: return arena_printf(e->c->arena, "wsf_round_e5m2(%s)", x);
		default: return x;
		}
	}
	if (dtype_is_int(ct) && int_expr[o->kind])
		return int_expr[o->kind];
	if (ct == DT_BOOL && bool_expr[o->kind])
		return bool_expr[o->kind];
	return o->kind == OP_GELU && o->approx == APPROX_TANH ? gelu_tanh : cuda_expr[o->kind];
}

/* Substitutes $a, $b, $c (IN[0..2]) and $T (the C type of REG) in template T. */
static const char *
fill(Emit *e, const char *t, const char *const in[3], Dtype reg)
{
	Buf out;

	buf_init(&out, e->c->arena);
	for (; *t; t++) {
		if (t[0] == '$' && t[1] >= 'a' && t[1] <= 'c') {
			buf_puts(&out, in[t[1] - 'a']);
			t++;
		} else if (t[0] == '$' && t[1] == 'T') {
			buf_puts(&out, emit_reg_type(reg));
			t++;
		} else if (t[0] == '$' && t[1] == 'i') {   /* only a family that sets it takes rand_like (schedule.c) */
			if (!e->elem_index)
				diag_internal(e->c, "emit", "an op that needs the element's index in a kernel that has none");
			buf_puts(&out, e->elem_index ? e->elem_index : "0");
			t++;
		} else if (t[0] == '$' && t[1] == 'j') {   /* one_hot's: a row kernel's (lowering refuses it elsewhere) */
			if (!e->col_index)
				diag_internal(e->c, "emit", "an op that needs the element's column in a kernel that has none");
			buf_puts(&out, e->col_index ? e->col_index : "0");
			t++;
		} else {
			buf_putn(&out, t, 1);
		}
	}
	return buf_str(&out);
}

/* Substitutes $a and $b in the op's template: cuda_expr[]'s row, or FORM where not NULL. */
const char *
emit_op_text(Emit *e, const Op *o, const char *a, const char *b, const char *form)
{
	return emit_op_text3(e, o, a, b, "", form);
}

/* rand_like O's numbers of the 8 elements from BASE (a C expression), drawn before the element loop: two Philox blocks, not 8. */
void
emit_rand_block(Emit *e, const Op *o, const char *seed, const char *offset, const char *base)
{
	emit_line(e, "float wsf_rnd_%s[%d];", e->base[o->out], VEC);
	emit_line(e, "wsf_rand_like8(%s, %s, %s, wsf_rnd_%s);   // rand_like, four elements a Philox block%s", seed, offset,
	          base, e->base[o->out], emit_pos(e, o->pos));
}

/* rand_like O's number of element v, where emit_rand_block drew the thread's 8 (Emit.rand_base); else NULL. */
static const char *
rand_drawn(Emit *e, const Op *o)
{
	return o->kind == OP_RAND_LIKE && e->rand_base ? arena_printf(e->c->arena, "wsf_rnd_%s[v]", e->base[o->out]) : NULL;
}

const char *
emit_op_text3(Emit *e, const Op *o, const char *a, const char *b, const char *c, const char *form)
{
	const char *in[3] = {a, b, c};
	Dtype ct = op_compute_dtype(e->f, o);

	if (rand_drawn(e, o))
		return rand_drawn(e, o);
	return fill(e, form ? form : op_template(e, o, ct), in, o->kind == OP_CAST ? o->to : ct);
}

/*
 * Op O in a kernel whose registers have their value's type (pointwise):
 * each operand (IN[j], the register's text; NULL for a literal) converted
 * to the type O computes in, where its register's differs.
 */
const char *
emit_op_typed(Emit *e, const Op *o, const char *const in[3])
{
	Dtype ct = op_compute_dtype(e->f, o);
	const char *text[3] = {"", "", ""};
	int j;

	if (rand_drawn(e, o))
		return rand_drawn(e, o);
	for (j = 0; j < o->nin; j++) {
		const Operand *x = &o->in[j];
		Dtype dt = x->tensor ? e->f->tensor[x->tensor].dtype : ct;
		bool keep = o->kind == OP_CAST || (j == 0 && o->kind == OP_WHERE) || o->kind == OP_RAND_LIKE;

		if (!x->tensor && dtype_is_float(ct))
			text[j] = emit_literal(e, x->lit);
		else if (!x->tensor)
			text[j] = arena_printf(e->c->arena, "%lld", (long long)x->lit);
		else if (keep || strcmp(emit_reg_type(dt), emit_reg_type(ct)) == 0)
			text[j] = in[j];
		else
			text[j] = arena_printf(e->c->arena, "(%s)%s", emit_reg_type(ct), in[j]);
	}
	return fill(e, op_template(e, o, ct), text, o->kind == OP_CAST ? o->to : ct);
}

/*
 * Does fusion F need device_dtypes.cuh: a dtype past bf16 or an op past
 * the composites (ir/ops.h)?  Other kernels' CUDA stays as it was.
 */
bool
emit_needs_dtypes(const Fusion *f)
{
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (f->tensor[i].dtype > DT_BF16)
			return true;
	for (i = 0; i < f->nout; i++)
		if (f->out[i].dtype > DT_BF16)
			return true;
	for (i = 1; i < f->nop; i++)
		if (f->op[i].kind > OP_RMSNORM || (f->op[i].kind == OP_CAST && f->op[i].to > DT_BF16))
			return true;
	return false;
}

/*
 * Each reduction's fold, indexed by op id: device_reduction.cuh's struct
 * of it, its identity, and the combination of two partial results.
 */
static const struct {
	const char *name, *identity, *fold;
} folds[OP_COUNT] = {
	[OP_SUM] = {"wsf_fold_sum", "0.0f", "%s + %s"},
	[OP_MEAN] = {"wsf_fold_sum", "0.0f", "%s + %s"},   /* (divided where the sum is complete) */
	[OP_MAX] = {"wsf_fold_max", "-__int_as_float(0x7f800000)", "fmaxf(%s, %s)"},
	[OP_PROD] = {"wsf_fold_prod", "1.0f", "%s * %s"},
};

const char *
emit_fold(const Op *o)
{
	return folds[o->kind].name;
}

const char *
emit_fold_identity(const Op *o)
{
	return folds[o->kind].identity;
}

const char *
emit_fold_of(Emit *e, const Op *o, const char *a, const char *b)
{
	return arena_printf(e->c->arena, folds[o->kind].fold, a, b);
}
