/*
 * emit.c: kernel IR -> CUDA C++ for sm_90a.
 *
 * One emit_* function per construct, writing into a Buf.  The text is meant
 * to be read: parameters and values carry the spec's names (values as v_NAME,
 * inputs as in_NAME, outputs as out_NAME: see "Names" below), every
 * statement that came from a spec line says which, and the device helpers
 * (codegen/device.cuh) name the PTX they wrap.  Shared memory is one dynamic
 * array carved into the buffers and barriers of the kernel IR as kbuf_copy
 * and kernel_buf_offset (ir/kernel.c) lay them out: copies 128-byte aligned
 * (TMA's rule), 1024 when swizzled.
 *
 * The compute statement is the one place that expands the fusion's ops:
 * threads stride over the tile eight elements at a time (16-byte shared
 * loads, 16-byte global stores), and each op becomes one f32 expression
 * from the op's row in cuda_expr[] below.  A row reduction's compute runs
 * one pass over the row per reduction level (emit_row_compute), or, for a
 * row streamed in chunks, is split into the parts lowering placed in the
 * pass and chunk loops (emit_chunk_compute).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen.h"

/* An SM's shared memory for CTAs, and what the hardware reserves per CTA (sm_90). */
enum { SM_SMEM = 228 * 1024, CTA_SMEM_RESERVED = 1024 };

enum { VEC = 8 };

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
};

static const char gelu_tanh[] =
	"0.5f * $a * (1.0f + tanhf(0.79788456080286536f * ($a + 0.044715f * $a * $a * $a)))";

typedef struct Emit {
	Comp *c;
	Kernel *k;
	Fusion *f;
	Buf *b;
	int depth;
	int role;            /* inside a role's branch: the role (elect() is its first thread); else 0 */
	bool row_flip;       /* a row's block reductions start on the scratch array wsf_flip names */
	const char *compute_fn;    /* the compute's __device__ function, when it is emitted once; else NULL */
	const char *compute_args;  /* the arguments of its calls */
	int row_steps;       /* row reductions kept in registers: element-loop steps a row takes; else 0 */
	const char *row_policy; /* a direct kernel that reads the row in every pass: this pass's L2 policy */
	const char *chunk_col; /* a row streamed in chunks: the C expression of the chunk's first column */
	const char **value;  /* per fusion tensor: the C name of its current value */
	const char **base;   /* per fusion tensor: its base name, unique in the fusion (tensor_bases) */
	const char *file;    /* the spec's name, as comment_text writes it */
} Emit;

static void
line(Emit *e, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void
line(Emit *e, const char *fmt, ...)
{
	va_list ap;

	buf_indent(e->b, 4 * e->depth);
	va_start(ap, fmt);
	buf_vprintf(e->b, fmt, ap);
	va_end(ap);
	buf_puts(e->b, "\n");
}

/* Length of the valid UTF-8 sequence at S (1 to 4), or 0 if S does not start one. */
static int
utf8_len(const unsigned char *s)
{
	int n, i;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * User text (the spec's path, or the name given to wsf_compile_string) made
 * safe inside a // or a block comment of the generated source, or a string
 * literal: control bytes and bytes that are not UTF-8 become \n, \t, \r or
 * \xHH (a newline would end the comment and inject the rest as code), a
 * backslash becomes two (and \x5c at the end, where even a doubled one
 * would splice the next line onto the comment), and the two-character
 * sequences that end a block comment or start a trigraph are broken up with
 * a backslash.  Ordinary paths come out unchanged.
 */
static const char *
comment_text(Arena *a, const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	Buf b;
	int n = 1;

	buf_init(&b, a);
	buf_puts(&b, "");
	while (*s) {
		if (*s == '\\')
			buf_puts(&b, s[1] ? "\\\\" : "\\x5c");
		else if (*s == '\n')
			buf_puts(&b, "\\n");
		else if (*s == '\r')
			buf_puts(&b, "\\r");
		else if (*s == '\t')
			buf_puts(&b, "\\t");
		else if (*s < 0x20 || *s == 0x7f || !(n = utf8_len(s)))
			buf_printf(&b, "\\x%02x", *s);
		else if ((s[0] == '*' && s[1] == '/') || (s[0] == '?' && s[1] == '?'))
			buf_printf(&b, "%c\\", s[0]);
		else {
			buf_putn(&b, (const char *)s, (size_t)n);
			s += n;
			continue;
		}
		s++;
	}
	return buf_str(&b);
}

/*
 * Names.  A spec's names are any identifiers, so a name glued from a spec
 * name and a fixed part could equal another spec name's (an input 'y_out'
 * beside an output 'y' once gave two y_out_ptr), an expansion's temporary
 * ('y.max' beside a tensor 'y_max'), a helper, or a keyword or builtin (a
 * fusion called 'int' or 'threadIdx').  Every identifier in the generated
 * source is therefore one of:
 *   - fixed: the helpers and emit's own locals (wsf_load8, wsf_red, row, e,
 *     top, it), and the kernel IR's variables and barriers (i, tile, rows,
 *     full), none of which is a spec name;
 *   - a prefix of prefixes[] and the base name of a fusion tensor: its value
 *     v_x, an input in_x, a buffer tile_x (buffers are named so by lowering,
 *     one prefix a kind), a buffer's current copy cur_tile_x;
 *   - wsfuse_ and the fusion's name: the kernel.
 * The prefixes are prefix-free (none begins another), and no fixed name
 * begins with one (check_names checks the kernel IR's), so names of
 * different forms or prefixes differ; a tensor's base name is its spec name,
 * or for a temporary its name with '_' for '.' made unique (tensor_bases),
 * so names of one prefix differ too.  No C++ keyword, CUDA builtin or name
 * the implementation reserves (a leading '_') begins with a prefix.  (A name
 * with '__' inside, such as v___x, is reserved too in principle; compilers
 * define only names that begin with '_'.)
 */
enum {
	PFX_VALUE, PFX_ROW, PFX_ACC, PFX_CNT, PFX_RAW, PFX_IN, PFX_OUT,   /* + a tensor's base name */
	PFX_TILE, PFX_CHUNK, PFX_ROWBUF, PFX_STAGE,   /* buffers (lowering's names): + a tensor's name */
	PFX_CUR,                                      /* a buffer's current copy: + the buffer's name */
	PFX_KERNEL,                                   /* the kernel: + the fusion's name */
	PFX_COUNT
};

static const char *const prefixes[PFX_COUNT] = {
	[PFX_VALUE] = "v_",      /* a full-row or tile value, 8 elements a thread: float v_x[8] */
	[PFX_ROW] = "r_",        /* a per-row value: const float r_m */
	[PFX_ACC] = "acc_",      /* a reduction's running value */
	[PFX_CNT] = "cnt_",      /* the elements a Welford mean has seen */
	[PFX_RAW] = "raw_",      /* a 2-byte row as loaded, unpacked where used */
	[PFX_IN] = "in_",        /* an input parameter: a pointer or a tensor map */
	[PFX_OUT] = "out_",      /* an output parameter */
	[PFX_TILE] = "tile_",    /* a tile of an input (pointwise) */
	[PFX_CHUNK] = "chunk_",  /* a chunk of an input row (a row streamed in chunks) */
	[PFX_ROWBUF] = "row_",   /* an input row (a row reduction) */
	[PFX_STAGE] = "stage_",  /* an output's staging tile for TMA stores */
	[PFX_CUR] = "cur_",      /* the copy of a buffer the compute reads or writes */
	[PFX_KERNEL] = "wsfuse_",
};

/* The name of kind PFX (PFX_VALUE .. PFX_OUT) of fusion tensor T: v_x. */
static const char *
tname(Emit *e, int pfx, int t)
{
	return arena_printf(e->c->arena, "%s%s", prefixes[pfx], e->base[t]);
}

/*
 * Each tensor's base name.  A spec name is its own (spec names are unique);
 * an expansion's temporary "y.max" becomes "y_max", or, where that is taken
 * by a spec name or an earlier temporary, "y_max_2", "y_max_3"...
 */
static const char **
tensor_bases(Comp *c, const Fusion *f)
{
	const char **base = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *base);
	Strtab *taken = strtab_new(c->arena);
	int t, n;

	for (t = 1; t < f->ntensor; t++)
		if (!strchr(f->tensor[t].name, '.')) {
			base[t] = f->tensor[t].name;
			intern_new(taken, base[t]);
		}
	for (t = 1; t < f->ntensor; t++) {
		char *s, *p;

		if (base[t])
			continue;
		s = arena_strdup(c->arena, f->tensor[t].name);
		for (p = s; *p; p++)
			if (*p == '.')
				*p = '_';
		base[t] = s;
		for (n = 2; !intern_new(taken, base[t]); n++)
			base[t] = arena_printf(c->arena, "%s_%d", s, n);
	}
	return base;
}

/* Does NAME begin with a prefix of prefixes[]? */
static int
prefixed(const char *name)
{
	int i;

	for (i = 0; i < PFX_COUNT; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return i;
	return -1;
}

/*
 * The kernel IR's own names keep to the rules above: its variables and
 * barriers begin with no prefix, and each buffer is a buffer prefix and
 * its tensor's name.  A pass that broke them would make names that can
 * collide; that is an internal error, not a kernel NVRTC refuses.
 */
static int
check_names(Emit *e)
{
	const Kernel *k = e->k;
	int i, pfx;

	for (i = 1; i < k->nvar; i++)
		if (prefixed(k->var[i].name) >= 0)
			return diag_internal(e->c, "codegen", "kernel variable '%s' begins with a name prefix",
			                     k->var[i].name);
	for (i = 1; i < k->nbar; i++)
		if (prefixed(k->bar[i].name) >= 0)
			return diag_internal(e->c, "codegen", "mbarrier '%s' begins with a name prefix", k->bar[i].name);
	for (i = 1; i < k->nbuf; i++) {
		pfx = prefixed(k->buf[i].name);
		if (pfx < PFX_TILE || pfx > PFX_STAGE ||
		    strcmp(k->buf[i].name + strlen(prefixes[pfx]), e->f->tensor[k->buf[i].tensor].name) != 0)
			return diag_internal(e->c, "codegen", "buffer '%s' is not a buffer prefix and its tensor's name",
			                     k->buf[i].name);
	}
	return 0;
}

static const char *
storage_type(Dtype dt)
{
	switch (dt) {
	case DT_F32: return "float";
	case DT_BF16: return "wsf_bf16";
	case DT_F16: return "wsf_f16";
	default: return "unsigned char";
	}
}

/* Helper name suffix by storage dtype: f16 shares bf16's storage type. */
static const char *
helper_suffix(Dtype dt)
{
	return dt == DT_F16 ? "_f16" : "";
}

static void
emit_expr(Emit *e, const Expr *x)
{
	Buf *b = e->b;
	static const char *const op[] = {
		[EX_ADD] = "+", [EX_SUB] = "-", [EX_MUL] = "*", [EX_DIV] = "/", [EX_MOD] = "%",
		[EX_LT] = "<", [EX_GE] = ">=", [EX_EQ] = "==", [EX_AND] = "&", [EX_XOR] = "^",
	};

	switch (x->kind) {
	case EX_INT:
		buf_printf(b, "%lldLL", (long long)x->ival);
		break;
	case EX_VAR:
		buf_puts(b, e->k->var[x->var].name);
		break;
	case EX_TID:
		buf_puts(b, "(long long)threadIdx.x");
		break;
	case EX_CTA:
		buf_puts(b, "(long long)blockIdx.x");
		break;
	case EX_NCTA:
		buf_puts(b, "(long long)gridDim.x");
		break;
	case EX_ELECT:
		buf_printf(b, "threadIdx.x == %d", e->role ? e->k->role[e->role].first : 0);
		break;
	case EX_DIV:
	case EX_MOD:
		if (x->b->kind == EX_INT)
			goto infix;
		/* a tile index over a runtime count: 32 bits suffice (launch.c checks) */
		buf_puts(b, x->kind == EX_DIV ? "wsf_udiv(" : "wsf_umod(");
		emit_expr(e, x->a);
		buf_puts(b, ", ");
		emit_expr(e, x->b);
		buf_puts(b, ")");
		break;
	case EX_MIN:
	case EX_MAX:
	case EX_CEILDIV:
		buf_puts(b, x->kind == EX_MIN ? "wsf_min(" : x->kind == EX_MAX ? "wsf_max(" : "wsf_ceildiv(");
		emit_expr(e, x->a);
		buf_puts(b, ", ");
		emit_expr(e, x->b);
		buf_puts(b, ")");
		break;
	default:
	infix:
		buf_puts(b, "(");
		emit_expr(e, x->a);
		buf_printf(b, " %s ", op[x->kind]);
		emit_expr(e, x->b);
		buf_puts(b, ")");
		break;
	}
}

/* The expression as a string, for use inside a line. */
static const char *
expr_str(Emit *e, const Expr *x)
{
	Buf *saved = e->b, b;

	buf_init(&b, e->c->arena);
	e->b = &b;
	emit_expr(e, x);
	e->b = saved;
	return buf_str(&b);
}

static const char *
bufname(Emit *e, int buf)
{
	return e->k->buf[buf].name;
}

/* The compute's pointer to the copy of buffer BUF it works on: cur_tile_x. */
static const char *
curname(Emit *e, int buf)
{
	return arena_printf(e->c->arena, "%s%s", prefixes[PFX_CUR], e->k->buf[buf].name);
}

static const char *
pos_comment(Emit *e, Pos p)
{
	if (!p.line)
		return "";
	return arena_printf(e->c->arena, "  // %s:%d", e->file, p.line);
}

/* Address of copy SLOT of buffer BUF: copies lie kbuf_copy's stride apart, not their bytes. */
static const char *
buf_at(Emit *e, int buf, const Expr *slot)
{
	const KBuf *u = &e->k->buf[buf];

	if (u->stages == 1)
		return bufname(e, buf);
	return arena_printf(e->c->arena, "%s + (%s) * %lld", bufname(e, buf), expr_str(e, slot),
	                    (long long)(kbuf_copy(u).stride / dtype_info[u->dtype].bytes));
}

static const char *
bar_at(Emit *e, int bar, const Expr *slot)
{
	return arena_printf(e->c->arena, "&%s[%s]", e->k->bar[bar].name, expr_str(e, slot));
}

/*
 * A number operand as a CUDA f32 literal: the f32 the kernel computes with
 * (V rounded once to f32), written with the fewest digits that read back as
 * exactly that f32 ("0.1f", "1e-05f"), and '.' as the decimal point whatever
 * the locale.  The front end refuses numbers that f32 rounds to infinity, or
 * from non-zero to zero (compiler/spec.c, f32_number).
 */
static const char *
literal(Emit *e, double v)
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

/* Substitutes $a and $b in the op's template. */
static const char *
op_text(Emit *e, const Op *o, const char *a, const char *b)
{
	const char *t = o->kind == OP_GELU && o->approx == APPROX_TANH ? gelu_tanh : cuda_expr[o->kind];
	Buf out;

	if (o->kind == OP_CAST)
		t = o->to == DT_BF16 ? "wsf_round_bf16($a)" : o->to == DT_F16 ? "wsf_round_f16($a)" : "$a";
	buf_init(&out, e->c->arena);
	for (; *t; t++) {
		if (t[0] == '$' && (t[1] == 'a' || t[1] == 'b')) {
			buf_puts(&out, t[1] == 'a' ? a : b);
			t++;
		} else {
			buf_putn(&out, t, 1);
		}
	}
	return buf_str(&out);
}

static const char *
operand(Emit *e, const Operand *o)
{
	if (!o->tensor)
		return literal(e, o->lit);
	return arena_printf(e->c->arena, "%s[v]", e->value[o->tensor]);
}

static const KParam *
param_of_tensor(Emit *e, int t, bool output)
{
	int i;

	for (i = 1; i < e->k->nparam; i++) {
		const KParam *p = &e->k->param[i];

		if (p->tensor == t && p->kind != PK_SIZE && (p->arg >= e->f->ninput) == output)
			return p;
	}
	return NULL;
}

/* The tile buffer loaded with fusion tensor T. */
static int
buf_of_tensor(const Kernel *k, int t)
{
	int b;

	for (b = 1; b < k->nbuf && !(k->buf[b].tensor == t && k->buf[b].kind == BUF_TILE); b++)
		;
	return b;
}

/* A parameter: in_x or out_y (a pointer or a tensor map: its type says which), or a size. */
static const char *
param_name(Emit *e, const KParam *p)
{
	if (p->kind == PK_SIZE)
		return e->k->var[p->var].name;
	return tname(e, p->arg < e->f->ninput ? PFX_IN : PFX_OUT, p->tensor);
}

/*
 * compute: every fusion op over one tile.  Each thread takes VEC consecutive
 * elements at a time; inputs come from their stage buffer (full and row
 * views) or from global memory (column and scalar views).
 */
static void
emit_compute(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int i, j, elems = k->tile_rows * k->tile_cols;

	line(e, "{   // compute tile (row0, col0) = (%s, %s): %s", expr_str(e, s->a), expr_str(e, s->b),
	     s->comment ? s->comment : "");
	e->depth++;
	line(e, "const long long top = %s, left = %s;", expr_str(e, s->a), expr_str(e, s->b));
	for (i = 0; i < s->nreads; i++)
		line(e, "const %s *%s = %s;", storage_type(k->buf[s->reads[i].buf].dtype),
		     curname(e, s->reads[i].buf), buf_at(e, s->reads[i].buf, s->reads[i].slot));
	for (i = 0; i < s->nwrites; i++)
		line(e, "%s *%s = %s;", storage_type(k->buf[s->writes[i].buf].dtype), curname(e, s->writes[i].buf),
		     buf_at(e, s->writes[i].buf, s->writes[i].slot));
	line(e, "for (int e = threadIdx.x * %d; e < %d; e += %d) {", VEC, elems, k->consumer_threads * VEC);
	e->depth++;
	line(e, "const int r = e / %d, c = e %% %d;", k->tile_cols, k->tile_cols);
	line(e, "const long long row = top + r, col = left + c;");
	line(e, "if (row >= rows || col >= cols)");
	line(e, "    continue;");
	/* inputs */
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];
		const KParam *p = param_of_tensor(e, t, false);
		const char *v = tname(e, PFX_VALUE, t);
		const char *suf = helper_suffix(p->dtype);

		e->value[t] = v;
		line(e, "float %s[%d];%s", v, VEC, pos_comment(e, f->tensor[t].pos));
		if (buf_of_tensor(k, t) < k->nbuf) {   /* staged: a tile buffer */
			line(e, "wsf_load8%s(%s, %s + %s);", suf, v, curname(e, buf_of_tensor(k, t)),
			     p->view == VIEW_ROW ? "c" : "e");
		} else if (p->view == VIEW_ROW) {   /* a row beside a one-row tile: L1 keeps it for the CTAs */
			line(e, "if (col + %d <= cols) {", VEC);
			line(e, "    wsf_load8_global%s(%s, %s + col);", suf, v, param_name(e, p));
			line(e, "} else {");
			line(e, "    #pragma unroll");
			line(e, "    for (int v = 0; v < %d; v++)", VEC);
			line(e, "        %s[v] = col + v < cols ? %s(%s + col + v) : 0.0f;", v,
			     p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", param_name(e, p));
			line(e, "}");
		} else {
			const char *idx = p->view == VIEW_COL ? "row" : "0";

			line(e, "for (int v = 0; v < %d; v++)", VEC);
			line(e, "    %s[v] = %s(%s + %s);", v,
			     p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", param_name(e, p), idx);
		}
	}
	/* ops, one f32 expression each */
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = tname(e, PFX_VALUE, o->out);

		e->value[o->out] = v;
		line(e, "float %s[%d];%s", v, VEC, pos_comment(e, o->pos));
	}
	line(e, "#pragma unroll");
	line(e, "for (int v = 0; v < %d; v++) {", VEC);
	e->depth++;
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		line(e, "%s[v] = %s;   // %s%s%s", e->value[o->out],
		     op_text(e, o, operand(e, &o->in[0]), o->nin > 1 ? operand(e, &o->in[1]) : ""),
		     op_info[o->kind].name, o->origin ? " of " : "", o->origin ? o->origin : "");
	}
	e->depth--;
	line(e, "}");
	/* outputs: 16-byte stores, element stores at a ragged right edge; or the staging tile */
	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = param_of_tensor(e, out->tensor, true);
		const char *suf = helper_suffix(out->dtype);
		int w;

		for (w = 0; w < s->nwrites && e->k->buf[s->writes[w].buf].tensor != out->tensor; w++)
			;
		if (w < s->nwrites) {
			line(e, "wsf_store8_smem%s(%s + e, %s);%s", suf, curname(e, s->writes[w].buf),
			     e->value[out->tensor], pos_comment(e, out->pos));
			continue;
		}
		/* the ragged end: a guarded, unrolled loop keeps the values in registers */
		line(e, "if (col + %d <= cols) {%s", VEC, pos_comment(e, out->pos));
		line(e, "    wsf_store8%s(%s + row * cols + col, %s);", suf, param_name(e, p), e->value[out->tensor]);
		line(e, "} else {");
		line(e, "    #pragma unroll");
		line(e, "    for (int v = 0; v < %d; v++)", VEC);
		line(e, "        if (col + v < cols)");
		line(e, "            wsf_store1%s(%s + row * cols + col + v, %s[v]);", suf, param_name(e, p),
		     e->value[out->tensor]);
		line(e, "}");
	}
	e->depth--;
	line(e, "}");
	e->depth--;
	line(e, "}");
}

/*
 * Row reductions.  A value is a full row (v_NAME: 8 elements a thread per
 * step of the element loop) or a per-row scalar (r_NAME, in every thread).
 * The level of a value is the number of reductions on its longest path from
 * the inputs; the reductions of level L are computed in pass L over the row,
 * from the full-row values they need, and the full-row outputs in a last
 * pass.  Global memory is read once either way; what a pass starts from
 * depends on the row's width:
 *   - registers (k->row.steps, chosen by lowering: at most 4 steps): the
 *     loop is unrolled, a thread's part of every value is an array
 *     v_NAME[step][8] computed once, in the first pass that needs it, and
 *     later passes read it from registers; a direct kernel (k->row.direct,
 *     one CTA a row) loads the row's inputs from global memory, not from a
 *     stage, every step's loads before any compute;
 *   - shared memory (wider rows): each pass reads the row from its stage
 *     again and recomputes the values it needs in v_NAME[8].
 *
 * Register mode keeps the values kir_row_kept names (the inputs, and the
 * results of transcendental ops and full-row divisions); cheap arithmetic is
 * recomputed in each pass from them, which keeps register pressure down (a
 * kept value is 8 registers a step).
 */
static bool
row_full(const Kernel *k, int t)
{
	return k->row.view[t] == VIEW_FULL || k->row.view[t] == VIEW_ROW;
}

/*
 * Is T a 2-byte full-row input that a direct kernel keeps as loaded, two
 * elements a register (raw_NAME[step]), and unpacks to f32 in each pass that
 * reads it (v_NAME[8])?  Half the registers of f32: layernorm's row, weight
 * and bias then fit 48 warps an SM without spilling (docs/perf.md).
 */
static bool
row_raw(const Emit *e, int t)
{
	const Kernel *k = e->k;

	return k->row.direct && e->row_steps && k->row.view[t] == VIEW_FULL && e->f->tensor[t].kind == TK_INPUT &&
	       dtype_info[e->f->tensor[t].dtype].bytes == 2;
}

/* The C name of full-row value T at the current step: v_T (+ [it] in register mode, but for a raw input). */
static const char *
row_value(Emit *e, int t)
{
	return arena_printf(e->c->arena, "%s%s", tname(e, PFX_VALUE, t),
	                    e->row_steps && !row_raw(e, t) ? "[it]" : "");
}

static const char *
row_operand(Emit *e, const Operand *o)
{
	if (!o->tensor)
		return literal(e, o->lit);
	if (row_full(e->k, o->tensor))
		return arena_printf(e->c->arena, "%s[v]", row_value(e, o->tensor));
	return tname(e, PFX_ROW, o->tensor);
}

/* Marks in NEED every full-row op value T depends on through full-row ops. */
static void
row_needs(Emit *e, int t, bool *need)
{
	const Fusion *f = e->f;
	const Op *o;
	int j;

	if (need[t] || !row_full(e->k, t))
		return;
	need[t] = true;
	if (f->tensor[t].kind != TK_VALUE)
		return;
	o = &f->op[f->tensor[t].def];
	if (op_info[o->kind].cls == CLS_REDUCE)
		return;
	for (j = 0; j < o->nin; j++)
		if (o->in[j].tensor)
			row_needs(e, o->in[j].tensor, need);
}

/*
 * Loads this thread's 8 elements of input T at element e into v_T (register
 * mode: v_T[it]).  WHOLE: the caller knows all 8 lie inside the row.
 */
static void
emit_row_load(Emit *e, int t, bool whole)
{
	const KParam *p = param_of_tensor(e, t, false);
	const char *v = row_value(e, t);

	if (buf_of_tensor(e->k, t) == e->k->nbuf) {
		/*
		 * Not staged: a row broadcast over rows, read where L1 and L2
		 * keep it, or (a direct kernel) this row of a full input.  The
		 * ragged end one by one.
		 */
		const bool full = e->k->row.view[t] == VIEW_FULL;
		const char *at = full ? "row * cols + e" : "e";
		/* a row read in every pass: under this pass's L2 policy */
		const char *l2 = full && e->row_policy ? "_l2" : "";
		const char *pol = *l2 ? arena_printf(e->c->arena, ", %s", e->row_policy) : "";

		if (row_raw(e, t)) {
			const char *raw = arena_printf(e->c->arena, "%s[it]", tname(e, PFX_RAW, t));

			if (whole)
				line(e, "%s = wsf_ldg16%s(%s + %s%s);%s", raw, l2, param_name(e, p), at, pol,
				     pos_comment(e, e->f->tensor[t].pos));
			else
				line(e, "%s = e + %d <= cols ? wsf_ldg16%s(%s + %s%s) : wsf_ldg16_part(%s + %s, (int)(cols - e));",
				     raw, VEC, l2, param_name(e, p), at, pol, param_name(e, p), at);
			return;
		}
		if (whole) {
			line(e, "wsf_load8_global%s%s(%s, %s + %s%s);%s", l2, helper_suffix(p->dtype), v, param_name(e, p), at,
			     pol, pos_comment(e, e->f->tensor[t].pos));
			return;
		}
		line(e, "if (e + %d <= cols) {", VEC);
		line(e, "    wsf_load8_global%s%s(%s, %s + %s%s);", l2, helper_suffix(p->dtype), v, param_name(e, p), at, pol);
		line(e, "} else {");
		line(e, "    #pragma unroll");
		line(e, "    for (int v = 0; v < %d; v++)", VEC);
		line(e, "        %s[v] = e + v < cols ? %s(%s + %s + v) : 0.0f;", v,
		     p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", param_name(e, p), at);
		line(e, "}");
		return;
	}
	if (e->chunk_col)
		line(e, "wsf_load8%s(%s, %s + (e - %s));", helper_suffix(p->dtype), v,
		     curname(e, buf_of_tensor(e->k, t)), e->chunk_col);
	else
		line(e, "wsf_load8%s(%s, %s + e);", helper_suffix(p->dtype), v, curname(e, buf_of_tensor(e->k, t)));
}

/*
 * Opens register mode's unrolled loop over a thread's steps of 8 elements;
 * GUARD: the steps may run past the row's end, which ends the loop.
 */
static void
open_steps(Emit *e, bool guard)
{
	line(e, "#pragma unroll");
	line(e, "for (int it = 0; it < %d; it++) {", e->row_steps);
	e->depth++;
	line(e, "const int e = threadIdx.x * %d + it * %d;", VEC, e->k->consumer_threads * VEC);
	if (guard) {
		line(e, "if (e >= cols)");
		line(e, "    break;");
	}
}

/* Does this pass load input T, a full row a direct kernel reads from global memory? */
static bool
loads_row_from_hbm(const Emit *e, const bool *need, const bool *have, int t)
{
	return need[t] && !have[t] && e->k->row.view[t] == VIEW_FULL;
}

/* A direct kernel's loads of the full-row inputs this pass needs; WHOLE: see emit_row_load. */
static void
emit_hbm_loads(Emit *e, const bool *need, const bool *have, bool whole)
{
	int i;

	for (i = 0; i < e->f->ninput; i++)
		if (loads_row_from_hbm(e, need, have, e->f->input[i]))
			emit_row_load(e, e->f->input[i], whole);
}

/*
 * Does this pass read T itself: is it one of the pass's TARGETs (what its
 * reductions reduce, or what it stores), or an operand of an op it computes?
 */
static bool
row_pass_reads(const Emit *e, const bool *target, const bool *need, const bool *have, int t)
{
	const Fusion *f = e->f;
	int i, j;

	if (target[t])
		return true;
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (!need[o->out] || have[o->out] || op_info[o->kind].cls == CLS_REDUCE)
			continue;
		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor == t)
				return true;
	}
	return false;
}

/*
 * Opens one pass over the row: the loads and full-row ops in NEED that HAVE
 * does not hold yet (HAVE: values register mode computed in earlier passes;
 * it is updated); the caller adds what the pass is for, its TARGETs (see
 * row_pass_reads).
 */
static void
row_pass_open(Emit *e, const bool *target, const bool *need, bool *have)
{
	const Fusion *f = e->f;
	int i, nops, step = e->k->consumer_threads * VEC;

	if (e->k->row.reread)  /* every pass loads the row and computes what it needs again */
		memset(have, 0, (size_t)f->ntensor * sizeof *have);
	if (e->k->row.direct) {
		/*
		 * A direct kernel reads its rows from HBM: every step's loads come
		 * first, so that their latencies overlap (loads between the steps'
		 * computes leave one 16-byte load a thread in flight).  Weights
		 * and per-row inputs, which L1 and L2 serve, load where they are
		 * used: loading them early costs registers.
		 */
		for (i = 0, nops = 0; i < f->ninput; i++)
			nops += loads_row_from_hbm(e, need, have, f->input[i]);
		if (nops) {
			/*
			 * A thread whose steps all lie inside the row loads without
			 * guards: with the ragged-end branches in between, the loads
			 * did not overlap (H200 rmsnorm: 0.148 against 0.137 ms).
			 */
			line(e, "if (threadIdx.x * %d + %d <= cols) {   // this thread's part of the row's inputs, "
			     "all inside the row", VEC, (e->row_steps - 1) * step + VEC);
			e->depth++;
			open_steps(e, false);
			emit_hbm_loads(e, need, have, true);
			e->depth--;
			line(e, "}");
			e->depth--;
			line(e, "} else {   // the row's ragged end");
			e->depth++;
			open_steps(e, true);
			emit_hbm_loads(e, need, have, false);
			e->depth--;
			line(e, "}");
			e->depth--;
			line(e, "}");
			for (i = 0; i < f->ninput; i++)
				if (loads_row_from_hbm(e, need, have, f->input[i]))
					have[f->input[i]] = true;
		}
	}
	if (e->chunk_col) {
		/* a chunk is 8 elements a thread */
		line(e, "const int e = (int)(%s) + threadIdx.x * %d;", e->chunk_col, VEC);
		line(e, "if (e < cols) {");
		e->depth++;
	} else if (e->row_steps) {
		open_steps(e, true);
	} else {
		line(e, "for (int e = threadIdx.x * %d; e < cols; e += %d) {", VEC, step);
		e->depth++;
	}
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];

		if (!need[t] || have[t])
			continue;
		if (!e->row_steps)
			line(e, "float %s[%d];", row_value(e, t), VEC);
		emit_row_load(e, t, false);
	}
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];

		if (row_raw(e, t) && row_pass_reads(e, target, need, have, t)) {
			line(e, "float %s[%d];", row_value(e, t), VEC);
			line(e, "wsf_unpack8%s(%s, %s);", helper_suffix(f->tensor[t].dtype), row_value(e, t),
			     arena_printf(e->c->arena, "%s[it]", tname(e, PFX_RAW, t)));
		}
	}
	for (i = 1, nops = 0; i < f->nop; i++)
		if (need[f->op[i].out] && !have[f->op[i].out] && f->tensor[f->op[i].out].kind == TK_VALUE) {
			if (!e->row_steps)
				line(e, "float %s[%d];%s", tname(e, PFX_VALUE, f->op[i].out), VEC,
				     pos_comment(e, f->op[i].pos));
			nops++;
		}
	if (nops) {
		line(e, "#pragma unroll");
		line(e, "for (int v = 0; v < %d; v++) {", VEC);
		e->depth++;
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (!need[o->out] || have[o->out] || op_info[o->kind].cls == CLS_REDUCE)
				continue;
			if (o->kind == OP_DIV && o->in[1].tensor && !row_full(e->k, o->in[1].tensor))
				/* by a per-row value: one reciprocal a row (hoisted), a multiply an element */
				line(e, "%s[v] = %s * (1.0f / %s);   // div%s", row_value(e, o->out), row_operand(e, &o->in[0]),
				     row_operand(e, &o->in[1]), e->row_steps ? pos_comment(e, o->pos) : "");
			else
				line(e, "%s[v] = %s;   // %s%s", row_value(e, o->out),
				     op_text(e, o, row_operand(e, &o->in[0]), o->nin > 1 ? row_operand(e, &o->in[1]) : ""),
				     op_info[o->kind].name, e->row_steps ? pos_comment(e, o->pos) : "");
		}
		e->depth--;
		line(e, "}");
	}
	if (e->row_steps && !e->k->row.reread)  /* what this pass computed and is worth keeping stays in registers */
		for (i = 1; i < f->ntensor; i++)
			have[i] = have[i] || (need[i] && kir_row_kept(f, i));
}

static void
row_pass_close(Emit *e)
{
	e->depth--;
	line(e, "}");
}

/*
 * Per-row ops whose operands are all known by LEVEL; DONE marks what was
 * emitted.  ASSIGN: the variables are declared already (a streamed row).
 */
static void
emit_row_scalars(Emit *e, const int *level, int upto, bool *done, bool assign)
{
	const Fusion *f = e->f;
	int i;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (done[o->out] || row_full(e->k, o->out) || op_info[o->kind].cls == CLS_REDUCE ||
		    level[o->out] > upto)
			continue;
		line(e, "%s%s = %s;   // %s%s", assign ? "" : "const float ", tname(e, PFX_ROW, o->out),
		     op_text(e, o, row_operand(e, &o->in[0]), o->nin > 1 ? row_operand(e, &o->in[1]) : ""),
		     op_info[o->kind].name, pos_comment(e, o->pos));
		done[o->out] = true;
	}
}

/*
 * The scratch array of the row's block reduction number NRED.  Reductions
 * alternate two arrays, so each needs one barrier (see wsf_block_sum).  A
 * row with an odd number of them would start the next row on the array it
 * ended on; there the row's stage counter's parity (wsf_flip) flips the
 * order every other row.
 */
static const char *
row_scratch(Emit *e, int nred)
{
	if (!e->row_flip)
		return arena_printf(e->c->arena, "wsf_red + %d", 32 * (nred & 1));
	return arena_printf(e->c->arena, "wsf_red + (wsf_flip ? %d : %d)", 32 * ((nred + 1) & 1), 32 * (nred & 1));
}

/* The per-row inputs (a value per row, or a scalar), read once a row into r_NAME; DONE marks them. */
static void
emit_row_inputs(Emit *e, bool *done)
{
	const Fusion *f = e->f;
	int i;

	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];
		const KParam *p = param_of_tensor(e, t, false);

		if (row_full(e->k, t))
			continue;
		line(e, "const float %s = %s(%s + %s);%s", tname(e, PFX_ROW, t),
		     p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", param_name(e, p),
		     e->k->row.view[t] == VIEW_COL ? "row" : "0", pos_comment(e, f->tensor[t].pos));
		done[t] = true;
	}
}

/*
 * Reduction O across the CTA, from each thread's partial VALUE (C text) into
 * r_NAME (declared here when DECL), on scratch array number NRED.
 * Consecutive reductions alternate scratch arrays, so each needs one
 * barrier, not two.
 */
static void
emit_block_reduce(Emit *e, const Op *o, const char *value, int nred, bool decl)
{
	line(e, "%s%s = wsf_block_%s(%s, %s)%s;   // %s%s%s%s", decl ? "const float " : "",
	     tname(e, PFX_ROW, o->out), o->kind == OP_MAX ? "max" : "sum", value,
	     row_scratch(e, nred), o->kind == OP_MEAN ? " / (float)cols" : "", op_info[o->kind].name,
	     o->origin ? " of " : "", o->origin ? o->origin : "", pos_comment(e, o->pos));
}

/* In the output pass, at element e: the full-row outputs. */
static void
emit_row_stores(Emit *e)
{
	const Fusion *f = e->f;
	int j;

	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = param_of_tensor(e, out->tensor, true);
		const char *suf = helper_suffix(out->dtype), *v = row_value(e, out->tensor), *at;

		if (!row_full(e->k, out->tensor))
			continue;
		/* a row broadcast over rows ([cols]) has one copy: the CTA of row 0 writes it */
		at = e->k->row.view[out->tensor] == VIEW_ROW ? "e" : "row * cols + e";
		if (e->k->row.view[out->tensor] == VIEW_ROW)
			line(e, "if (row == 0) {   // '%s' has no rows: one copy, from row 0", f->tensor[out->tensor].name);
		e->depth += e->k->row.view[out->tensor] == VIEW_ROW;
		/* the ragged end: a guarded, unrolled loop keeps the values in registers */
		line(e, "if (e + %d <= cols) {%s", VEC, pos_comment(e, out->pos));
		line(e, "    wsf_store8%s(%s + %s, %s);", suf, param_name(e, p), at, v);
		line(e, "} else {");
		line(e, "    #pragma unroll");
		line(e, "    for (int v = 0; v < %d; v++)", VEC);
		line(e, "        if (e + v < cols)");
		line(e, "            wsf_store1%s(%s + %s + v, %s[v]);", suf, param_name(e, p), at, v);
		line(e, "}");
		if (e->k->row.view[out->tensor] == VIEW_ROW) {
			e->depth--;
			line(e, "}");
		}
	}
}

/* The per-row outputs, from thread 0. */
static void
emit_row_scalar_stores(Emit *e)
{
	const Fusion *f = e->f;
	int j;

	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = param_of_tensor(e, out->tensor, true);

		if (row_full(e->k, out->tensor))
			continue;
		line(e, "if (threadIdx.x == 0)%s", pos_comment(e, out->pos));
		line(e, "    wsf_store1%s(%s + %s, %s);", helper_suffix(out->dtype), param_name(e, p),
		     e->k->row.view[out->tensor] == VIEW_COL ? "row" : "0", tname(e, PFX_ROW, out->tensor));
	}
}

static void
emit_row_compute(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int *level = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *level);
	bool *done = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *done);
	bool *need, *target, *have = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *have), outs;
	int i, j, L, maxl = kir_row_levels(k, level, NULL), nred = 0;

	line(e, "{   // compute row %s: %s", expr_str(e, s->a), s->comment ? s->comment : "");
	e->depth++;
	line(e, "const long long row = %s;", expr_str(e, s->a));
	e->row_steps = k->row.steps;
	if (e->row_steps) {
		line(e, "// the row in registers: this thread's %d x %d elements of each value, computed %s",
		     e->row_steps, VEC, k->row.reread ? "again in every pass from the row loaded again" : "once");
		for (i = 1; i < f->ntensor; i++)
			if (row_raw(e, i))
				line(e, "uint4 %s[%d];   // as loaded, 2 elements a register, unpacked where used%s",
				     tname(e, PFX_RAW, i), e->row_steps, pos_comment(e, f->tensor[i].pos));
			else if (row_full(k, i) && (f->tensor[i].kind == TK_INPUT || f->tensor[i].kind == TK_VALUE))
				line(e, "float %s[%d][%d];%s", tname(e, PFX_VALUE, i), e->row_steps, VEC,
				     pos_comment(e, f->tensor[i].pos));
	}
	for (i = 0; i < s->nreads; i++)
		line(e, "const %s *%s = %s;", storage_type(k->buf[s->reads[i].buf].dtype), curname(e, s->reads[i].buf),
		     buf_at(e, s->reads[i].buf, s->reads[i].slot));
	if (k->row.reread)
		line(e, "const wsf_u64 wsf_keep = wsf_l2_keep(), wsf_drop = wsf_l2_drop();   // L2: keep the row for "
		     "the next pass, or let it go after the last");
	emit_row_inputs(e, done);
	/* block reductions a row */
	for (i = 1, j = 0; i < f->nop; i++)
		j += op_info[f->op[i].kind].cls == CLS_REDUCE;
	if ((j & 1) && s->nreads && s->reads[0].slot->kind == EX_MOD) {
		/* the stage counter: the slot is counter % S */
		line(e, "const bool wsf_flip = (%s) & 1;   // odd rows start their reductions on the other scratch array",
		     expr_str(e, s->reads[0].slot->a));
		e->row_flip = true;
	}
	emit_row_scalars(e, level, 0, done, false);  /* per-row values that need no reduction */
	for (j = 0, outs = false; j < f->nout; j++)
		outs |= row_full(k, f->out[j].tensor);
	for (L = 1; L <= maxl; L++) {
		if (k->row.reread)
			e->row_policy = L < maxl || outs ? "wsf_keep" : "wsf_drop";
		need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
		target = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *target);
		for (i = 1; i < f->nop; i++)
			if (op_info[f->op[i].kind].cls == CLS_REDUCE && level[f->op[i].out] == L) {
				row_needs(e, f->op[i].in[0].tensor, need);
				target[f->op[i].in[0].tensor] = true;
			}
		/*
		 * In register mode the compute releases its stages at its first
		 * barrier (Stmt.flag): every staged row is read in the first pass,
		 * also one only the outputs use.
		 */
		for (i = 0; i < f->ninput && L == 1 && e->row_steps; i++)
			if (buf_of_tensor(k, f->input[i]) < k->nbuf)
				need[f->input[i]] = true;
		line(e, "// pass %d over the row: the reductions of level %d", L, L);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (op_info[o->kind].cls == CLS_REDUCE && level[o->out] == L)
				line(e, "float %s = %s;", tname(e, PFX_ACC, o->out),
				     o->kind == OP_MAX ? "-__int_as_float(0x7f800000)" : "0.0f");
		}
		row_pass_open(e, target, need, have);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];
			const char *acc = tname(e, PFX_ACC, o->out);
			const char *in = row_value(e, o->in[0].tensor);

			if (op_info[o->kind].cls != CLS_REDUCE || level[o->out] != L)
				continue;
			line(e, "%s = wsf_%s8(%s, %s, cols - e);", acc, o->kind == OP_MAX ? "max" : "sum", acc, in);
		}
		row_pass_close(e);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (op_info[o->kind].cls != CLS_REDUCE || level[o->out] != L)
				continue;
			emit_block_reduce(e, o, tname(e, PFX_ACC, o->out), nred++, true);
			done[o->out] = true;
		}
		emit_row_scalars(e, level, L, done, false);
	}
	/* the next row's first reduction takes wsf_red + 0 again; one CTA a row has no next row */
	if ((nred & 1) && !e->row_flip && k->persistent)
		line(e, "__syncthreads();   // every thread has read the last partials: the next row may reuse them");
	e->row_flip = false;
	emit_row_scalars(e, level, maxl, done, false);
	/* the last pass: full-row outputs */
	need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
	target = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *target);
	for (j = 0; j < f->nout; j++) {
		row_needs(e, f->out[j].tensor, need);
		target[f->out[j].tensor] = true;
	}
	for (j = 0; j < f->nout && !need[f->out[j].tensor]; j++)
		;
	if (j < f->nout) {
		if (k->row.reread)
			e->row_policy = "wsf_drop";
		line(e, "// the last pass: the full-row outputs");
		row_pass_open(e, target, need, have);
		emit_row_stores(e);
		row_pass_close(e);
	}
	emit_row_scalar_stores(e);
	e->row_steps = 0;
	e->row_policy = NULL;
	e->depth--;
	line(e, "}");
}

/* The reduction that shares reduction M's pass (ONLINE[t] == M), or 0. */
static int
partner_of(const Fusion *f, const int *online, int m)
{
	int i;

	for (i = 1; i < f->nop; i++)
		if (online[f->op[i].out] == m)
			return f->op[i].out;
	return 0;
}

/*
 * The body of wsf_chunk, the lambda a streamed row's ROW_CHUNK computes call
 * (the main and the epilogue loops): for the pass `pass`, the chunk at
 * column `col` of the stages CHUNK reads, `cur_BUF` each.
 */
static void
emit_chunk_lambda(Emit *e, const Stmt *chunk, const int *level, const int *online, int maxl)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	bool *need, *have;
	Buf params;
	int i, L;

	buf_init(&params, e->c->arena);
	for (i = 0; i < chunk->nreads; i++)
		buf_printf(&params, ", const %s *%s", storage_type(k->buf[chunk->reads[i].buf].dtype),
		           curname(e, chunk->reads[i].buf));
	line(e, "// one chunk of the row in pass `pass`, at column `col`: the main and the epilogue loops call it");
	line(e, "const auto wsf_chunk = [&](const long long pass, const long long col%s) {", buf_str(&params));
	e->depth++;
	e->chunk_col = "col";
	for (L = 1; L <= k->row.passes; L++) {
		bool outputs = L > maxl;

		need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
		have = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *have);
		if (L == 1)
			line(e, "if (pass == 0) {   // pass 1: %s", outputs ? "the outputs" : "the reductions of level 1");
		else if (L < k->row.passes)
			line(e, "} else if (pass == %d) {   // pass %d: the reductions of level %d", L - 1, L, L);
		else
			line(e, "} else {   // pass %d: %s", L, outputs ? "the outputs" : "the reductions of the last level");
		e->depth++;
		for (i = 1; i < f->nop && !outputs; i++) {
			const Op *o = &f->op[i];

			if (op_info[o->kind].cls == CLS_REDUCE && level[o->out] == L && !online[o->out])
				row_needs(e, o->in[0].tensor, need);
		}
		for (i = 0; i < f->nout && outputs; i++)
			row_needs(e, f->out[i].tensor, need);
		row_pass_open(e, NULL, need, have);   /* a streamed row: no raw inputs (row_raw) */
		if (outputs)
			emit_row_stores(e);
		for (i = 1; i < f->nop && !outputs; i++) {
			const Op *o = &f->op[i];
			const char *acc = tname(e, PFX_ACC, o->out);
			const char *in = row_value(e, o->in[0].tensor);
			int r;

			if (op_info[o->kind].cls != CLS_REDUCE || level[o->out] != L || online[o->out])
				continue;
			if ((r = partner_of(f, online, o->out)) && o->kind == OP_MAX)
				line(e, "wsf_online8(%s, %s, %s, cols - e);   // %s and the sum of exp, online%s", acc,
				     tname(e, PFX_ACC, r), in, op_info[o->kind].name, pos_comment(e, o->pos));
			else if (r)
				line(e, "wsf_welford8(%s, %s, %s, %s, cols - e);   // %s and variance, one pass%s",
				     tname(e, PFX_CNT, r), acc, tname(e, PFX_ACC, r),
				     in, op_info[o->kind].name, pos_comment(e, o->pos));
			else
				line(e, "%s = wsf_%s8(%s, %s, cols - e);", acc, o->kind == OP_MAX ? "max" : "sum", acc, in);
		}
		row_pass_close(e);
		e->depth--;
	}
	line(e, "}");
	e->chunk_col = NULL;
	e->depth--;
	line(e, "};");
}

static void
find_row_chunk(Stmt *s, void *user)
{
	const Stmt **found = user;

	if (s->kind == ST_COMPUTE && s->phase == ROW_CHUNK && !*found)
		*found = s;
}

/*
 * A row streamed in chunks (k->row.chunk): the compute is split over the
 * loop nest lowering made (row -> pass -> chunk).  ROW_BEGIN declares, at
 * the row's scope, the accumulators and the per-row values later parts set,
 * and the lambda wsf_chunk: it adds a chunk to the accumulators of the
 * reductions of its pass (pass L - 1 computes level L), or in the last pass
 * stores the outputs; each ROW_CHUNK (main and epilogue loops) calls it;
 * ROW_PASS_END reduces the pass's accumulators across the CTA;
 * ROW_END stores the per-row outputs.  A softmax's max and sum of exp share
 * a pass: each thread keeps a running max and a sum at its scale
 * (wsf_online8); the pass end rescales the sums to the row's max before
 * adding them up.  A mean and the variance about it share a pass too: each
 * thread keeps its count, mean and squared deviations (wsf_welford8); the
 * pass end takes the row's mean from the counts and means, then moves each
 * thread's squared deviations to it (Chan's merge) before adding them up.
 */
static void
emit_chunk_compute(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int *level = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *level);
	int *online = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *online);
	bool *done = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *done);
	int i, j, L, maxl = kir_row_levels(k, level, online), nred = 0;
	const char *pass = s->pass ? expr_str(e, s->pass) : NULL;

	/* per-row inputs and the per-row values that need no reduction: ROW_BEGIN sets them */
	for (i = 1; i < f->ntensor; i++)
		done[i] = !row_full(k, i) && level[i] == 0 && (s->phase != ROW_BEGIN || f->tensor[i].kind == TK_INPUT);
	switch (s->phase) {
	case ROW_BEGIN:
		line(e, "// row %s: %s", expr_str(e, s->a), s->comment ? s->comment : "");
		line(e, "const long long row = %s;", expr_str(e, s->a));
		emit_row_inputs(e, done);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (op_info[o->kind].cls == CLS_REDUCE)
				line(e, "float %s = %s, %s;   // %s%s", tname(e, PFX_ACC, o->out),
				     o->kind == OP_MAX ? "-__int_as_float(0x7f800000)" : "0.0f", tname(e, PFX_ROW, o->out),
				     !online[o->out] ? op_info[o->kind].name : o->kind == OP_SUM ?
				     "sum of exp, online with its max" : "squared deviations, with their mean's pass",
				     pos_comment(e, o->pos));
			if (op_info[o->kind].cls == CLS_REDUCE && online[o->out] && o->kind == OP_MEAN)
				line(e, "float %s = 0.0f;   // the elements this thread has seen", tname(e, PFX_CNT, o->out));
			if (op_info[o->kind].cls != CLS_REDUCE && !row_full(k, o->out) && level[o->out] > 0)
				line(e, "float %s;%s", tname(e, PFX_ROW, o->out), pos_comment(e, o->pos));
		}
		emit_row_scalars(e, level, 0, done, false);
		{
			const Stmt *chunk = NULL;

			st_walk(k->body, find_row_chunk, &chunk);
			if (chunk)
				emit_chunk_lambda(e, chunk, level, online, maxl);
		}
		break;
	case ROW_CHUNK: {
		Buf args;

		buf_init(&args, e->c->arena);
		for (i = 0; i < s->nreads; i++)
			buf_printf(&args, ", %s", buf_at(e, s->reads[i].buf, s->reads[i].slot));
		line(e, "wsf_chunk(%s, %s%s);   // %s", pass, expr_str(e, s->b), buf_str(&args), s->comment ? s->comment : "");
		break;
	}
	case ROW_PASS_END:
		for (L = 1; L <= maxl; L++) {
			line(e, "%sif (%s == %d) {   // the end of pass %d: its block reductions", L > 1 ? "} else " : "",
			     pass, L - 1, L);
			e->depth++;
			for (i = 1; i < f->nop; i++) {
				const Op *o = &f->op[i];
				const char *acc = tname(e, PFX_ACC, o->out);

				if (op_info[o->kind].cls != CLS_REDUCE || level[o->out] != L)
					continue;
				if (online[o->out]) {
					const char *m = tname(e, PFX_ACC, online[o->out]);
					const char *rm = tname(e, PFX_ROW, online[o->out]);

					if (o->kind == OP_SUM)
						line(e, "%s *= %s == %s ? 1.0f : __expf(%s - %s);   // to the scale of the row's max",
						     acc, m, rm, m, rm);
					else
						line(e, "%s += %s * (%s - %s) * (%s - %s);   // deviations about the row's mean (Chan)",
						     acc, tname(e, PFX_CNT, o->out), m, rm, m, rm);
				}
				/* a mean with a variance in its pass: from each thread's count and mean */
				if ((j = partner_of(f, online, o->out)) && o->kind == OP_MEAN)
					acc = arena_printf(e->c->arena, "%s * %s", tname(e, PFX_CNT, j), acc);
				/* the chunk loops' barriers separate the passes' scratch use */
				emit_block_reduce(e, o, acc, nred++, false);
				done[o->out] = true;
			}
			emit_row_scalars(e, level, L, done, true);
			e->depth--;
		}
		line(e, "}");
		break;
	case ROW_END:
		emit_row_scalar_stores(e);
		break;
	default:
		break;
	}
}

static void emit_stmt(Emit *e, const Stmt *s);

static void
emit_compute_body(Emit *e, const Stmt *s)
{
	if (e->k->family == FAM_REDUCTION && e->k->row.chunk)
		emit_chunk_compute(e, s);
	else if (e->k->family == FAM_REDUCTION)
		emit_row_compute(e, s);
	else
		emit_compute(e, s);
}

static void
emit_body(Emit *e, const Stmt *s)
{
	int i;

	e->depth++;
	for (i = 0; i < s->nbody; i++)
		emit_stmt(e, s->body[i]);
	e->depth--;
}

static const char *
comment(Emit *e, const Stmt *s)
{
	if (!s->comment)
		return "";
	return arena_printf(e->c->arena, "   // %s", s->comment);
}

/* The global address of a bulk copy's (row, col): PARAM + row * cols + col, zero terms left out. */
static const char *
bulk_at(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	bool col0 = s->b->kind == EX_INT && s->b->ival == 0, row0 = s->a->kind == EX_INT && s->a->ival == 0;
	const char *p = param_name(e, &k->param[s->param]);

	if (row0)
		return col0 ? p : arena_printf(e->c->arena, "%s + %s", p, expr_str(e, s->b));
	return arena_printf(e->c->arena, "%s + %s * %s%s%s", p, expr_str(e, s->a), k->var[k->cols_var].name,
	                    col0 ? "" : " + ", col0 ? "" : expr_str(e, s->b));
}

static void
emit_stmt(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	int i;

	switch (s->kind) {
	case ST_BLOCK:
		for (i = 0; i < s->nbody; i++)
			emit_stmt(e, s->body[i]);
		break;
	case ST_LOOP: {
		const char *v = k->var[s->var].name;

		if (s->cb)
			line(e, "// circular buffer: %d stages, prefetch %d", s->cb->stages, s->cb->prefetch);
		line(e, "for (long long %s = %s; %s < %s; %s++) {%s", v, expr_str(e, s->lo), v, expr_str(e, s->hi),
		     v, comment(e, s));
		emit_body(e, s);
		line(e, "}");
		break;
	}
	case ST_IF:
		line(e, "if (%s) {%s", expr_str(e, s->cond), comment(e, s));
		emit_body(e, s);
		if (s->orelse && s->orelse->nbody) {
			line(e, "} else {");
			emit_body(e, s->orelse);
		}
		line(e, "}");
		break;
	case ST_ROLES:
		/* one branch per role, tested from the highest first thread down; the last is the else */
		for (i = 0; i < s->nbody; i++) {
			const KRole *r = &k->role[s->body[i]->role];
			char what[64];

			if (r->kind == ROLE_PRODUCER)
				snprintf(what, sizeof what, "producer warp%s: TMA issue only", r->threads > 32 ? "s" : "");
			else
				snprintf(what, sizeof what, "%d %s threads", r->threads,
				         r->kind == ROLE_SIGNAL ? "signal" : "consumer");
			if (i == s->nbody - 1 && i > 0)
				line(e, "} else {   // %s", what);
			else
				line(e, "%sif (threadIdx.x >= %d) {   // %s", i ? "} else " : "", r->first, what);
			e->role = s->body[i]->role;
			emit_body(e, s->body[i]);
			e->role = 0;
		}
		line(e, "}");
		break;
	case ST_LET:
		line(e, "const long long %s = %s;%s", k->var[s->var].name, expr_str(e, s->a), comment(e, s));
		break;
	case ST_TMA_LOAD:
		if (k->param[s->param].kind == PK_PTR) {
			/* a 1-D bulk copy of the row segment: no tensor map, exactly the bytes that exist */
			line(e, "wsf_bulk_load(%s%s%s, %s, (unsigned)(%s), %s);%s", buf_at(e, s->buf, s->slot),
			     s->off ? " + " : "", s->off ? expr_str(e, s->off) : "", bulk_at(e, s),
			     expr_str(e, kir_bulk_bytes(e->c, k, s)), bar_at(e, s->bar, s->barslot), pos_comment(e, s->pos));
			break;
		}
		line(e, "wsf_tma_load_2d(%s%s%s, &%s, %s, %s, %s);%s", buf_at(e, s->buf, s->slot), s->off ? " + " : "",
		     s->off ? expr_str(e, s->off) : "",
		     param_name(e, &k->param[s->param]), expr_str(e, s->b), expr_str(e, s->a),
		     bar_at(e, s->bar, s->barslot), pos_comment(e, s->pos));
		break;
	case ST_TMA_STORE:
		if (k->param[s->param].kind == PK_PTR) {   /* a 1-D bulk copy, as for loads */
			line(e, "wsf_bulk_store(%s, %s, (unsigned)(%s));%s", bulk_at(e, s), buf_at(e, s->buf, s->slot),
			     expr_str(e, kir_bulk_bytes(e->c, k, s)), pos_comment(e, s->pos));
			break;
		}
		line(e, "wsf_tma_store_2d(&%s, %s, %s, %s);%s", param_name(e, &k->param[s->param]),
		     expr_str(e, s->b), expr_str(e, s->a), buf_at(e, s->buf, s->slot), pos_comment(e, s->pos));
		break;
	case ST_EXPECT_TX:
		if (s->a && s->n)
			line(e, "wsf_mbar_expect_tx(%s, %lld + (unsigned)(%s));", bar_at(e, s->bar, s->barslot),
			     (long long)s->n, expr_str(e, s->a));
		else if (s->a)
			line(e, "wsf_mbar_expect_tx(%s, (unsigned)(%s));", bar_at(e, s->bar, s->barslot), expr_str(e, s->a));
		else
			line(e, "wsf_mbar_expect_tx(%s, %lld);", bar_at(e, s->bar, s->barslot), (long long)s->n);
		break;
	case ST_MBAR_INIT:
		line(e, "for (int s = 0; s < %d; s++)", k->bar[s->bar].count);
		line(e, "    wsf_mbar_init(&%s[s], %d);", k->bar[s->bar].name, k->bar[s->bar].arrivals);
		break;
	case ST_MBAR_ARRIVE:
		line(e, "wsf_mbar_arrive(%s);%s", bar_at(e, s->bar, s->barslot), comment(e, s));
		break;
	case ST_MBAR_WAIT:
		line(e, "wsf_mbar_wait(%s, (unsigned)%s);%s", bar_at(e, s->bar, s->barslot), expr_str(e, s->a),
		     comment(e, s));
		break;
	case ST_FENCE_MBAR_INIT:
		line(e, "wsf_fence_mbar_init();");
		break;
	case ST_FENCE_PROXY_ASYNC:
		line(e, "wsf_fence_proxy_async();%s", comment(e, s));
		break;
	case ST_BULK_COMMIT:
		line(e, "wsf_bulk_commit();");
		break;
	case ST_BULK_WAIT:
		line(e, "wsf_bulk_wait%s<%lld>();%s", s->flag ? "_read" : "", (long long)s->n, comment(e, s));
		break;
	case ST_MMA_FENCE:
		line(e, "wsf_mma_fence();%s", comment(e, s));
		break;
	case ST_MMA_COMMIT:
		line(e, "wsf_mma_commit();%s", comment(e, s));
		break;
	case ST_MMA_WAIT:
		line(e, "wsf_mma_wait<%lld>();%s", (long long)s->n, comment(e, s));
		break;
	case ST_MMA:
		/* no lowering makes one yet: kernel IR built by hand cannot reach NVRTC as if it had none */
		line(e, "#error \"wsfuse: the mma statement has no emission yet (the matmul family)\"");
		break;
	case ST_SYNC:
		if (s->n == 0)
			line(e, "__syncthreads();%s", comment(e, s));
		else
			line(e, "wsf_bar_sync(%lld, %d);%s", (long long)s->n, s->threads, comment(e, s));
		break;
	case ST_SETMAXNREG:
		line(e, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %lld;\");", s->flag ? "inc" : "dec",
		     (long long)s->n);
		break;
	case ST_COMPUTE:
		if (e->compute_fn)
			line(e, "%s(%s);   // %s", e->compute_fn, e->compute_args, s->comment ? s->comment : "compute");
		else
			emit_compute_body(e, s);
		break;
	default:
		break;
	}
}

static void
emit_params(Emit *e)
{
	Kernel *k = e->k;
	int i;

	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];
		const char *sep = i + 1 < k->nparam ? "," : ")";

		switch (p->kind) {
		case PK_TMAP:
			line(e, "const __grid_constant__ WsfTensorMap %s%s   // %s %s, %s view", param_name(e, p), sep,
			     p->arg < e->f->ninput ? "input" : "output", dtype_info[p->dtype].name,
			     p->view == VIEW_ROW ? "row" : "full");
			break;
		case PK_PTR:
			line(e, "%s%s *__restrict__ %s%s   // %s %s", p->arg < e->f->ninput ? "const " : "",
			     storage_type(p->dtype), param_name(e, p), sep,
			     p->arg < e->f->ninput ? "input" : "output", dtype_info[p->dtype].name);
			break;
		case PK_SIZE:
			line(e, "const long long %s%s", k->var[p->var].name, sep);
			break;
		default:
			break;
		}
	}
}

/* Carves the dynamic shared memory into buffers and barriers as ir/kernel.c lays them out; returns its size. */
static int
emit_smem(Emit *e)
{
	Kernel *k = e->k;
	int64_t off;
	int i;

	line(e, "extern __shared__ __align__(1024) unsigned char wsf_smem[];");
	for (i = 1; i < k->nbuf; i++) {
		const KBuf *u = &k->buf[i];

		line(e, "%s *const %s = (%s *)(wsf_smem + %lld);   // [%d stages][%d][%d] %s", storage_type(u->dtype),
		     u->name, storage_type(u->dtype), (long long)kernel_buf_offset(k, i), u->stages, u->rows, u->cols,
		     dtype_info[u->dtype].name);
	}
	off = kernel_buf_offset(k, k->nbuf);
	for (i = 1; i < k->nbar; i++) {
		line(e, "wsf_u64 *const %s = (wsf_u64 *)(wsf_smem + %lld);   // %d mbarriers", k->bar[i].name,
		     (long long)off, k->bar[i].count);
		off += 8 * k->bar[i].count;
	}
	return (int)off;
}

/*
 * The CTAs per SM the register budget must allow (__launch_bounds__).  A row
 * reduction holds rows in registers and the compiler, left alone, spends
 * them until one CTA fits; ask for as many CTAs as shared memory admits (at
 * most 32 warps: enough to hide the block reductions' barriers).  Pointwise
 * tiles need few registers: 1 leaves the compiler free.
 */
static int
min_ctas(const Kernel *k)
{
	int n;

	if (k->family != FAM_REDUCTION)
		return 1;
	/* direct rows: 48 warps an SM keep enough loads in flight, 40 with twice the loads, 64 holding none */
	if (k->row.direct) {
		n = (k->row.reread ? 2048 : k->row.deep ? 1280 : 1536) / k->threads;
		return n < 1 ? 1 : n;
	}
	n = (int)(SM_SMEM / (kernel_smem_bytes(k) + CTA_SMEM_RESERVED + 64 * 4));  /* + wsf_red */
	if (n > 1024 / k->threads)
		n = 1024 / k->threads;
	return n < 1 ? 1 : n;
}

typedef struct Computes {
	const Stmt *s[8];
	int n;
} Computes;

static void
find_compute(Stmt *s, void *user)
{
	Computes *cs = user;

	if (s->kind == ST_COMPUTE && cs->n < (int)countof(cs->s))
		cs->s[cs->n] = s;
	if (s->kind == ST_COMPUTE)
		cs->n++;
}

static void
expr_vars(const Expr *x, bool *used)
{
	if (!x)
		return;
	if (x->kind == EX_VAR)
		used[x->var] = true;
	expr_vars(x->a, used);
	expr_vars(x->b, used);
}

/* The text of compute S as the body of a function (depth 0). */
static const char *
compute_text(Emit *e, const Stmt *s)
{
	Buf *saved = e->b, text;
	int depth = e->depth;

	buf_init(&text, e->c->arena);
	e->b = &text;
	e->depth = 0;
	emit_compute_body(e, s);
	e->b = saved;
	e->depth = depth;
	return buf_str(&text);
}

/*
 * A circular-buffered kernel computes in its main and its epilogue loop: the
 * same statement twice.  Its text goes into one __device__ __forceinline__
 * function before the kernel, with what it reads as parameters under the
 * kernel's own names, and both loops call it.  Inlined, the machine code is
 * the kernel's with the body written out twice; the source is half as long.
 * When the computes differ, or there is one, they are written in place.
 */
static void
emit_compute_function(Emit *e)
{
	Kernel *k = e->k;
	Computes cs = {{0}, 0};
	bool *used = arena_alloc(e->c->arena, (size_t)k->nvar * sizeof *used);
	const char *body;
	Buf params, args;
	int i, j;

	st_walk(k->body, find_compute, &cs);
	if (k->row.chunk)  /* its parts share the row's variables: written in place */
		return;
	if (cs.n < 2 || cs.n > (int)countof(cs.s))
		return;
	body = compute_text(e, cs.s[0]);
	for (i = 1; i < cs.n; i++)
		if (strcmp(body, compute_text(e, cs.s[i])) != 0)
			return;
	for (i = 0; i < cs.n; i++) {
		const Stmt *s = cs.s[i];

		expr_vars(s->a, used);
		expr_vars(s->b, used);
		for (j = 0; j < s->nreads; j++)
			expr_vars(s->reads[j].slot, used);
		for (j = 0; j < s->nwrites; j++)
			expr_vars(s->writes[j].slot, used);
	}
	for (i = 1; i < k->nparam; i++)  /* size params are passed below, with the other params */
		if (k->param[i].kind == PK_SIZE)
			used[k->param[i].var] = false;
	buf_init(&params, e->c->arena);
	buf_init(&args, e->c->arena);
	for (i = 1; i < k->nvar; i++)
		if (used[i]) {
			buf_printf(&params, "%s    const long long %s", params.len ? ",\n" : "", k->var[i].name);
			buf_printf(&args, "%s%s", args.len ? ", " : "", k->var[i].name);
		}
	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];

		for (j = 1; j < k->nbuf && k->buf[j].param != i; j++)
			;
		if (p->kind == PK_PTR && j < k->nbuf)
			continue;  /* loaded into a stage: the compute reads the buffer */
		if (p->kind == PK_PTR)
			buf_printf(&params, "%s    %s%s *__restrict__ %s", params.len ? ",\n" : "",
			           p->arg < e->f->ninput ? "const " : "", storage_type(p->dtype), param_name(e, p));
		else if (p->kind == PK_SIZE)
			buf_printf(&params, "%s    const long long %s", params.len ? ",\n" : "", k->var[p->var].name);
		else
			continue;
		buf_printf(&args, "%s%s", args.len ? ", " : "", p->kind == PK_PTR ? param_name(e, p) : k->var[p->var].name);
	}
	for (i = 1; i < k->nbuf; i++) {
		buf_printf(&params, "%s    %s *const %s", params.len ? ",\n" : "", storage_type(k->buf[i].dtype),
		           k->buf[i].name);
		buf_printf(&args, "%s%s", args.len ? ", " : "", k->buf[i].name);
	}
	if (k->family == FAM_REDUCTION) {
		buf_printf(&params, "%s    float *const wsf_red", params.len ? ",\n" : "");
		buf_printf(&args, "%swsf_red", args.len ? ", " : "");
	}
	e->compute_fn = "wsf_compute";
	e->compute_args = buf_str(&args);
	line(e, "// The compute of one %s, called from the main and the epilogue loops.",
	     k->family == FAM_REDUCTION ? "row" : "tile");
	line(e, "static __device__ __forceinline__ void");
	line(e, "%s(", e->compute_fn);
	buf_puts(e->b, buf_str(&params));
	buf_puts(e->b, ")\n");
	buf_puts(e->b, body);
	buf_puts(e->b, "\n");
}

int
codegen_emit(Comp *c, Buf *b, Launch **launch)
{
	Emit e = {0};
	Kernel *k = c->kernel;
	Launch *l;
	const char *entry;
	int i;

	e.c = c;
	e.k = k;
	e.f = k->fusion;
	e.b = b;
	e.value = arena_alloc(c->arena, (size_t)e.f->ntensor * sizeof *e.value);
	e.base = tensor_bases(c, e.f);
	e.file = comment_text(c->arena, c->file);
	if (check_names(&e))
		return -1;
	entry = arena_printf(c->arena, "%s%s", prefixes[PFX_KERNEL], k->name);
	buf_printf(b, "// %s: generated by wsfuse %s from %s. Do not edit.\n", k->name, WSF_VERSION_STRING, e.file);
	buf_printf(b, "// %d threads (%d compute), tile %d x %d, %s%s.\n", k->threads,
	           k->consumer_threads, k->tile_rows, k->tile_cols,
	           k->persistent ? "persistent over tiles" : "one CTA per tile",
	           k->warp_specialize ? ", warp-specialized" : "");
	buf_printf(b, "#include \"%s\"\n\n", CODEGEN_DEVICE_HEADER_NAME);
	emit_compute_function(&e);
	line(&e, "extern \"C\" __global__ void __launch_bounds__(%d, %d)", k->threads, min_ctas(k));
	line(&e, "%s(", entry);
	e.depth = 1;
	emit_params(&e);
	e.depth = 0;
	line(&e, "{");
	e.depth = 1;
	l = arena_alloc(c->arena, sizeof *l);
	l->smem_bytes = emit_smem(&e);
	if (k->family == FAM_REDUCTION)
		line(&e, "__shared__ float wsf_red[64];   // one partial per warp for block reductions, twice");
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_TMAP) {
			line(&e, "if (threadIdx.x == 0)");
			line(&e, "    wsf_prefetch_tmap(&%s);", param_name(&e, &k->param[i]));
		}
	emit_stmt(&e, k->body);
	e.depth = 0;
	line(&e, "}");
	l->entry = entry;
	l->kernel = k;
	l->fusion = e.f;
	l->threads = k->threads;
	*launch = l;
	return 0;
}
