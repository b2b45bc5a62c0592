/*
 * emit.c: kernel IR -> CUDA C++ for sm_90a: statements, expressions, names,
 * the kernel frame and its shared memory.  Each kernel family's compute,
 * and the statement kinds it owns (ir/stmts.h's owner column), are its own
 * file (emit_pointwise.c, emit_reduction.c, emit_matmul.c), reached through
 * the EmitFamily table below, not through tests of the family.
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
 * The compute statement is the one place that expands the fusion's ops, by
 * the kernel's family (and for a pointwise kernel's reductions over rows,
 * the ops of their results where the sums meet: emit_reduce_grid.c); each
 * op becomes one expression from the op's row in emit_ops.c's tables
 * (emit_op_text, emit_op_typed).
 */
#include <stdio.h>
#include <string.h>

#include "codegen.h"

void
emit_line(Emit *e, const char *fmt, ...)
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
 *   - wsfuse_ and the fusion's name: the kernel;
 *   - dim_ and a size's name: an extent a broadcast input's offset reads.
 * The prefixes are prefix-free (none begins another), and no fixed name
 * begins with one (check_names checks the kernel IR's), so names of
 * different forms or prefixes differ; a tensor's base name is its spec name,
 * or for a temporary its name with '_' for '.' made unique (tensor_bases),
 * so names of one prefix differ too.  No C++ keyword, CUDA builtin or name
 * the implementation reserves (a leading '_') begins with a prefix.  (A name
 * with '__' inside, such as v___x, is reserved too in principle; compilers
 * define only names that begin with '_'.)
 */
static const char *const prefixes[PFX_COUNT] = {
	[PFX_VALUE] = "v_",      /* a full-row or tile value, 8 elements a thread: float v_x[8] */
	[PFX_ROW] = "r_",        /* a per-row value: const float r_m */
	[PFX_ACC] = "acc_",      /* a reduction's running value */
	[PFX_CNT] = "cnt_",      /* the elements a Welford mean has seen */
	[PFX_RAW] = "raw_",      /* a 2-byte row as loaded, unpacked where used */
	[PFX_IN] = "in_",        /* an input parameter: a pointer or a tensor map */
	[PFX_OUT] = "out_",      /* an output parameter */
	[PFX_HERE] = "here_",    /* a matmul epilogue input's values in this subtile (or tile), a thread's */
	[PFX_AHEAD] = "ahead_",  /* ... and in the next subtile, loaded one subtile ahead */
	[PFX_FETCH] = "fetch_",  /* a matmul epilogue row input's column at the tile's start, a thread's (ST_ROW_FETCH) */
	[PFX_RESULT] = "res_",   /* a matmul epilogue output's values in a subtile, a thread's, stored in pairs */
	[PFX_MEM] = "mem_",      /* a stored output as the signal consumer reads it back from global memory */
	[PFX_MAP] = "map_",      /* an epilogue input's tensor map, its tiles prefetched into L2 (KParam.prefetch) */
	[PFX_SUB] = "sub_",      /* ... and its subtiles loaded into an output's staging copies (KParam.preload) */
	[PFX_TILE] = "tile_",    /* a tile of an input (pointwise) */
	[PFX_CHUNK] = "chunk_",  /* a chunk of an input row (a row streamed in chunks) */
	[PFX_ROWBUF] = "row_",   /* an input row (a row reduction) */
	[PFX_STAGE] = "stage_",  /* an output's staging tile for TMA stores */
	[PFX_PART] = "part_",    /* a matmul's partial sums, a K-split's (split_k) */
	[PFX_EXCHANGE] = "exchange_",   /* a transposed view's tile, exchanged through shared memory */
	[PFX_CUR] = "cur_",      /* the copy of a buffer the compute reads or writes */
	[PFX_KERNEL] = "wsfuse_",
};

/* The name of kind PFX (PFX_VALUE .. PFX_AHEAD) of fusion tensor T: v_x. */
const char *
emit_tname(Emit *e, int pfx, int t)
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
		if (pfx < PFX_TILE || pfx > PFX_EXCHANGE ||
		    strcmp(k->buf[i].name + strlen(prefixes[pfx]), e->f->tensor[k->buf[i].tensor].name) != 0)
			return diag_internal(e->c, "codegen", "buffer '%s' is not a buffer prefix and its tensor's name",
			                     k->buf[i].name);
	}
	return 0;
}

const char *
emit_type(Dtype dt)
{
	switch (dt) {
	case DT_F32: return "float";
	case DT_BF16: return "wsf_bf16";
	case DT_F16: return "wsf_f16";
	case DT_FP8E4M3: return "wsf_e4m3";
	case DT_FP8E5M2: return "wsf_e5m2";
	default: return dtype_info[dt].ctype;   /* the integers' and bool's C types */
	}
}

/* Helper name suffix by storage dtype: f16 shares bf16's storage type. */
const char *
emit_suffix(Dtype dt)
{
	return dt == DT_F16 ? "_f16" : "";
}

static void
emit_expr(Emit *e, const Expr *x)
{
	Buf *b = e->b;
	static const char *const op[] = {
		[EX_ADD] = "+", [EX_SUB] = "-", [EX_MUL] = "*", [EX_DIV] = "/", [EX_MOD] = "%",
		[EX_LT] = "<", [EX_GE] = ">=", [EX_EQ] = "==", [EX_AND] = "&", [EX_XOR] = "^", [EX_SHL] = "<<",
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
		if (e->role && e->k->role[e->role].groups > 1)   /* each group's first thread */
			buf_printf(b, "threadIdx.x %% %d == 0", e->k->role[e->role].threads / e->k->role[e->role].groups);
		else
			buf_printf(b, "threadIdx.x == %d", e->role ? e->k->role[e->role].first : 0);
		break;
	case EX_WG:   /* wsf_wg: the matmul frame's warp-uniform copy of threadIdx.x / 128 */
		buf_puts(b, "(long long)wsf_wg");
		break;
	case EX_RANK:
		buf_puts(b, "(long long)wsf_cluster_rank()");
		break;
	case EX_DIV:
	case EX_MOD:
		if (x->u32 && x->b->kind == EX_INT) {   /* below 2^32 (ex_stage_slot): a 32-bit division */
			buf_puts(b, "(long long)((unsigned)");
			emit_expr(e, x->a);
			buf_printf(b, " %s %lldu)", op[x->kind], (long long)x->b->ival);
			break;
		}
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
const char *
emit_expr_str(Emit *e, const Expr *x)
{
	Buf *saved = e->b, b;

	buf_init(&b, e->c->arena);
	e->b = &b;
	emit_expr(e, x);
	e->b = saved;
	return buf_str(&b);
}

/* Buffer BUF's C name: its prefix and its tensor's base name (check_names: a view's "h.x" is h_x). */
static const char *
bufname(Emit *e, int buf)
{
	const KBuf *u = &e->k->buf[buf];

	return arena_printf(e->c->arena, "%s%s", prefixes[prefixed(u->name)], e->base[u->tensor]);
}

/* The compute's pointer to the copy of buffer BUF it works on: cur_tile_x. */
const char *
emit_curname(Emit *e, int buf)
{
	return arena_printf(e->c->arena, "%s%s", prefixes[PFX_CUR], bufname(e, buf));
}

const char *
emit_pos(Emit *e, Pos p)
{
	if (!p.line)
		return "";
	return arena_printf(e->c->arena, "  // %s:%d", e->file, p.line);
}

/* Address of copy SLOT of buffer BUF: copies lie kbuf_copy's stride apart, not their bytes. */
const char *
emit_buf_at(Emit *e, int buf, const Expr *slot)
{
	const KBuf *u = &e->k->buf[buf];

	if (u->stages == 1)
		return bufname(e, buf);
	return arena_printf(e->c->arena, "%s + (%s) * %lld", bufname(e, buf), emit_expr_str(e, slot),
	                    (long long)(kbuf_copy(u).stride / dtype_info[u->dtype].bytes));
}

static const char *
bar_at(Emit *e, int bar, const Expr *slot)
{
	return arena_printf(e->c->arena, "&%s[%s]", e->k->bar[bar].name, emit_expr_str(e, slot));
}

const KParam *
emit_param_of(Emit *e, int t, bool output)
{
	int i;

	for (i = 1; i < e->k->nparam; i++) {
		const KParam *p = &e->k->param[i];

		if (p->tensor == t && p->kind != PK_SIZE && !p->prefetch && !p->preload && (p->arg >= e->f->ninput) == output)
			return p;
	}
	return NULL;
}

/* The tile buffer loaded with fusion tensor T. */
int
emit_buf_of(const Kernel *k, int t)
{
	int b;

	for (b = 1; b < k->nbuf && !(k->buf[b].tensor == t && k->buf[b].kind == BUF_TILE); b++)
		;
	return b;
}

/* A parameter: in_x or out_y (a pointer or a tensor map: its type says which), or a size. */
const char *
emit_param_name(Emit *e, const KParam *p)
{
	if (p->kind == PK_SIZE)
		return e->k->var[p->var].name;
	if (p->readback)
		return emit_tname(e, PFX_MEM, p->tensor);
	if (p->prefetch)
		return emit_tname(e, PFX_MAP, p->tensor);
	if (p->preload)
		return emit_tname(e, PFX_SUB, p->tensor);
	return emit_tname(e, p->arg < e->f->ninput ? PFX_IN : PFX_OUT, p->tensor);
}

/* Each family's emission, by Family. */
static const EmitFamily *const families[] = {
	[FAM_POINTWISE] = &emit_pointwise_family,
	[FAM_REDUCTION] = &emit_reduction_family,
	[FAM_MATMUL] = &emit_matmul_family,
};

static void emit_stmt(Emit *e, const Stmt *s);

static void
emit_body(Emit *e, const Stmt *s)
{
	int i;

	e->depth++;
	for (i = 0; i < s->nbody; i++)
		emit_stmt(e, s->body[i]);
	e->depth--;
}

const char *
emit_comment(Emit *e, const Stmt *s)
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
	const struct StTma *t = &s->u.tma;
	bool col0 = t->col->kind == EX_INT && t->col->ival == 0, row0 = t->row->kind == EX_INT && t->row->ival == 0;
	const char *p = emit_param_name(e, &k->param[t->param]);

	if (row0)
		return col0 ? p : arena_printf(e->c->arena, "%s + %s", p, emit_expr_str(e, t->col));
	return arena_printf(e->c->arena, "%s + %s * %s%s%s", p, emit_expr_str(e, t->row), k->var[k->cols_var].name,
	                    col0 ? "" : " + ", col0 ? "" : emit_expr_str(e, t->col));
}

/* A TMA statement's copy: buf[slot] + off. */
static const char *
tma_copy(Emit *e, const struct StTma *t)
{
	const char *at = emit_buf_at(e, t->buf, t->slot);

	return t->off ? arena_printf(e->c->arena, "%s + %s", at, emit_expr_str(e, t->off)) : at;
}

/* A TMA statement's coordinates as the helpers take them: col, row[, batch]. */
static const char *
tma_coords(Emit *e, const struct StTma *t)
{
	const char *xy = arena_printf(e->c->arena, "%s, %s", emit_expr_str(e, t->col), emit_expr_str(e, t->row));

	return t->batch ? arena_printf(e->c->arena, "%s, %s", xy, emit_expr_str(e, t->batch)) : xy;
}

/* Does a compute in S read an accumulator? */
static bool
reads_accumulator(const Stmt *s)
{
	int i;

	for (i = 0; s->kind == ST_COMPUTE && i < s->nreads; i++)
		if (s->reads[i].acc)
			return true;
	for (i = 0; i < s->nbody; i++)
		if (reads_accumulator(s->body[i]))
			return true;
	return st_else(s) && reads_accumulator(st_else(s));
}

static void
emit_block(Emit *e, const Stmt *s)
{
	int i;

	for (i = 0; i < s->nbody; i++)
		emit_stmt(e, s->body[i]);
}

static void
emit_loop(Emit *e, const Stmt *s)
{
	const struct StLoop *l = &s->u.loop;
	const char *v = e->k->var[l->var].name;

	if (l->cb)
		emit_line(e, "// circular buffer: %d stages, prefetch %d", l->cb->stages, l->cb->prefetch);
	if (l->lo->kind == EX_INT && l->hi->kind == EX_INT && reads_accumulator(s))
		emit_line(e, "#pragma unroll   // the accumulators' registers are indexed by constants");
	if (l->step)
		emit_line(e, "for (long long %s = %s; %s < %s; %s += %s) {%s", v, emit_expr_str(e, l->lo), v,
		          emit_expr_str(e, l->hi), v, emit_expr_str(e, l->step), emit_comment(e, s));
	else
		emit_line(e, "for (long long %s = %s; %s < %s; %s++) {%s", v, emit_expr_str(e, l->lo), v,
		          emit_expr_str(e, l->hi), v, emit_comment(e, s));
	emit_body(e, s);
	emit_line(e, "}");
}

static void
emit_if(Emit *e, const Stmt *s)
{
	emit_line(e, "if (%s) {%s", emit_expr_str(e, s->u.branch.cond), emit_comment(e, s));
	emit_body(e, s);
	if (s->u.branch.orelse && s->u.branch.orelse->nbody) {
		emit_line(e, "} else {");
		emit_body(e, s->u.branch.orelse);
	}
	emit_line(e, "}");
}

static void
emit_roles(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	int i;

	/* one branch per role, tested from the highest first thread down; the last is the else */
	for (i = 0; i < s->nbody; i++) {
		const KRole *r = &k->role[s->body[i]->u.role.id];
		char what[64];

		if (r->kind == ROLE_PRODUCER)
			snprintf(what, sizeof what, "producer warp%s: TMA issue only", r->threads > 32 ? "s" : "");
		else if (r->kind == ROLE_GROUP)
			snprintf(what, sizeof what, "the producer warpgroup: its warps' roles below");
		else
			snprintf(what, sizeof what, "%d %s threads", r->threads,
			         r->kind == ROLE_SIGNAL ? "signal consumer" : "consumer");
		if (i == s->nbody - 1 && i > 0)
			emit_line(e, "} else {   // %s", what);
		else
			emit_line(e, "%sif (threadIdx.x >= %d) {   // %s", i ? "} else " : "", r->first, what);
		e->role = s->body[i]->u.role.id;
		emit_body(e, s->body[i]);
		e->role = 0;
	}
	emit_line(e, "}");
}

static void
emit_let(Emit *e, const Stmt *s)
{
	emit_line(e, "const long long %s = %s;%s", e->k->var[s->u.let.var].name, emit_expr_str(e, s->u.let.value),
	          emit_comment(e, s));
}

static void
emit_tma_load(Emit *e, const Stmt *s)
{
	const struct StTma *t = &s->u.tma;
	const char *mask;

	if (e->k->param[t->param].kind == PK_PTR) {
		/* a 1-D bulk copy of the row segment: no tensor map, exactly the bytes that exist */
		emit_line(e, "wsf_bulk_load(%s, %s, (unsigned)(%s), %s);%s", tma_copy(e, t), bulk_at(e, s),
		          emit_expr_str(e, kir_bulk_bytes(e->c, e->k, s)), bar_at(e, t->bar, t->barslot),
		          emit_pos(e, s->pos));
		return;
	}
	/* a multicast: the box lands at the same place, and completes on the same barrier, in each CTA of the mask */
	mask = !t->mcast ? "" : t->mcast->kind == EX_INT ?
	       arena_printf(e->c->arena, ", 0x%llx", (unsigned long long)t->mcast->ival) :
	       arena_printf(e->c->arena, ", (unsigned short)(%s)", emit_expr_str(e, t->mcast));
	emit_line(e, "wsf_tma_load_%dd%s(%s, &%s, %s, %s%s);%s", t->batch ? 3 : 2, t->mcast ? "_multicast" : "",
	          tma_copy(e, t), emit_param_name(e, &e->k->param[t->param]), tma_coords(e, t),
	          bar_at(e, t->bar, t->barslot), mask, emit_pos(e, s->pos));
}

static void
emit_tma_store(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const struct StTma *t = &s->u.tma;

	if (k->param[t->param].kind == PK_PTR) {   /* a 1-D bulk copy, as for loads */
		emit_line(e, "wsf_bulk_store(%s, %s, (unsigned)(%s));%s", bulk_at(e, s),
		          emit_buf_at(e, t->buf, t->slot),
		          emit_expr_str(e, kir_bulk_bytes(e->c, k, s)), emit_pos(e, s->pos));
		return;
	}
	/* testing the signal's consumers: a store late now and then */
	if ((k->signal || k->tile_consumer) && e->c->store_delay)
		emit_line(e, "wsf_store_delay(%s * 131071LL + %s, %d);", emit_expr_str(e, t->row), emit_expr_str(e, t->col),
		          e->c->store_delay);
	emit_line(e, "wsf_tma_%s_%dd(&%s, %s, %s);%s", t->add ? "add" : "store", t->batch ? 3 : 2,
	          emit_param_name(e, &k->param[t->param]), tma_coords(e, t), tma_copy(e, t), emit_pos(e, s->pos));
}

static void
emit_expect_tx(Emit *e, const Stmt *s)
{
	const char *at = bar_at(e, s->u.mbar.bar, s->u.mbar.barslot);
	long long bytes = (long long)s->u.mbar.bytes;

	if (s->u.mbar.more && bytes)
		emit_line(e, "wsf_mbar_expect_tx(%s, %lld + (unsigned)(%s));", at, bytes,
		          emit_expr_str(e, s->u.mbar.more));
	else if (s->u.mbar.more)
		emit_line(e, "wsf_mbar_expect_tx(%s, (unsigned)(%s));", at, emit_expr_str(e, s->u.mbar.more));
	else
		emit_line(e, "wsf_mbar_expect_tx(%s, %lld);", at, bytes);
}

static void
emit_mbar_init(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;

	emit_line(e, "for (int s = 0; s < %d; s++)", k->bar[s->u.mbar.bar].count);
	emit_line(e, "    wsf_mbar_init(&%s[s], %d);", k->bar[s->u.mbar.bar].name, k->bar[s->u.mbar.bar].arrivals);
}

static void
emit_mbar_arrive(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const char *at = bar_at(e, s->u.mbar.bar, s->u.mbar.barslot);

	if (k->bar[s->u.mbar.bar].cluster) {
		/*
		 * The warpgroup's arrival on each CTA's copy, lane r of its first
		 * warp for rank r; under a K-split, on the copies of the CTAs of
		 * its split rank, ranks n x (rank / n) on (lower_split_rank).
		 */
		int n = kernel_share_ctas(k);
		const char *cmt = s->comment ? arena_printf(e->c->arena, "   // %s, on each CTA's copy", s->comment) :
		                               "   // on each CTA's copy";

		if (ksum_rule[kernel_mm(k)->ksum].split_cluster)
			emit_line(e, "wsf_mbar_arrive_cluster(%s, threadIdx.x %% 128 + %d * (wsf_cluster_rank() / %d), "
			          "%d * (wsf_cluster_rank() / %d + 1));%s", at, n, n, n, n,
			          arena_printf(e->c->arena, "%s of its split rank", cmt));
		else
			emit_line(e, "wsf_mbar_arrive_cluster(%s, threadIdx.x %% 128, %d);%s", at, n, cmt);
		return;
	}
	emit_line(e, "wsf_mbar_arrive(%s);%s", at, emit_comment(e, s));
}

static void
emit_mbar_wait(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_mbar_wait(%s, (unsigned)%s);%s", bar_at(e, s->u.mbar.bar, s->u.mbar.barslot),
	          emit_expr_str(e, s->u.mbar.parity), emit_comment(e, s));
}

static void
emit_fence_mbar_init(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_fence_mbar_init();");
}

static void
emit_cluster_sync(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_cluster_sync();%s", emit_comment(e, s));
}

static void
emit_fence_proxy_async(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_fence_proxy_async();%s", emit_comment(e, s));
}

static void
emit_bulk_commit(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_bulk_commit();");
}

static void
emit_bulk_wait(Emit *e, const Stmt *s)
{
	emit_line(e, "wsf_bulk_wait%s<%lld>();%s", s->u.group.read ? "_read" : "", (long long)s->u.group.pending,
	          emit_comment(e, s));
}

static void
emit_grid_dep(Emit *e, const Stmt *s)
{
	emit_line(e, "%s%s", s->u.grid_dep.launch ? "wsf_grid_launch_dependents();" : "wsf_grid_wait();",
	          emit_comment(e, s));
}

static void
emit_signal(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;

	if (!s->u.signal.param)   /* to the consumer role: an arrive (release at CTA scope) */
		emit_line(e, "wsf_mbar_arrive(%s);%s", bar_at(e, s->u.signal.bar, s->u.signal.barslot),
		          emit_comment(e, s));
	else   /* released at gpu scope, or (scope: system) for another GPU or the host */
		emit_line(e, "wsf_signal%s(%s + %s, (unsigned)epoch);%s", e->f->sched.system ? "_system" : "",
		          k->param[s->u.signal.param].name, emit_expr_str(e, s->u.signal.tile), emit_comment(e, s));
}

/* its comment says why, and the spec line of the input it prefetches */
static void
emit_tma_prefetch(Emit *e, const Stmt *s)
{
	const char *why = !s->comment ? emit_pos(e, s->pos) : !s->pos.line ? emit_comment(e, s) :
	                  arena_printf(e->c->arena, "%s (%s:%d)", emit_comment(e, s), e->file, s->pos.line);
	const Expr *batch = s->u.tma.batch;

	if (s->u.tma.cond)
		emit_line(e, "if (%s)", emit_expr_str(e, s->u.tma.cond));
	emit_line(e, "%swsf_tma_prefetch_%dd(&%s, %s, %s%s%s);%s", s->u.tma.cond ? "    " : "", batch ? 3 : 2,
	          emit_param_name(e, &e->k->param[s->u.tma.param]), emit_expr_str(e, s->u.tma.col),
	          emit_expr_str(e, s->u.tma.row), batch ? ", " : "", batch ? emit_expr_str(e, batch) : "", why);
}

/* an operand's (producer), an output's (output): TMA loads or stores after it, in the async proxy */
static void
emit_flag_wait(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;

	if (s->u.flag_wait.cond)
		emit_line(e, "if (%s)", emit_expr_str(e, s->u.flag_wait.cond));
	emit_line(e, "%swsf_flag_wait%s(%s + %s, (unsigned)epoch);%s", s->u.flag_wait.cond ? "    " : "",
	          s->u.flag_wait.producer || s->u.flag_wait.output ? "_tma" : "",
	          k->param[s->u.flag_wait.param].name, emit_expr_str(e, s->u.flag_wait.word), emit_comment(e, s));
}

static void
emit_sync(Emit *e, const Stmt *s)
{
	if (s->u.sync.id == 0)
		emit_line(e, "__syncthreads();%s", emit_comment(e, s));
	else if (s->u.sync.id_expr)   /* a barrier id per warpgroup */
		emit_line(e, "%s((int)%s, %d);%s", s->u.sync.arrive_only ? "wsf_bar_arrive" : "wsf_bar_sync",
		          emit_expr_str(e, s->u.sync.id_expr), s->u.sync.threads, emit_comment(e, s));
	else
		emit_line(e, "wsf_bar_sync(%lld, %d);%s", (long long)s->u.sync.id, s->u.sync.threads,
		          emit_comment(e, s));
}

static void
emit_setmaxnreg(Emit *e, const Stmt *s)
{
	emit_line(e, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %lld;\");", s->u.maxnreg.inc ? "inc" : "dec",
	          (long long)s->u.maxnreg.regs);
}

static void
emit_compute(Emit *e, const Stmt *s)
{
	if (e->compute_fn)
		emit_line(e, "%s(%s);   // %s", e->compute_fn, e->compute_args,
		          s->comment ? s->comment : "compute");
	else
		e->fam->compute(e, s);
}

/* The emitters of the generic kinds (stmts.h's owner GENERIC); a family's own go through its EmitFamily.stmt. */
static void (*const generic[ST_COUNT])(Emit *e, const Stmt *s) = {
	[ST_BLOCK] = emit_block,
	[ST_LOOP] = emit_loop,
	[ST_IF] = emit_if,
	[ST_ROLES] = emit_roles,
	[ST_LET] = emit_let,
	[ST_TMA_LOAD] = emit_tma_load,
	[ST_TMA_STORE] = emit_tma_store,
	[ST_EXPECT_TX] = emit_expect_tx,
	[ST_MBAR_INIT] = emit_mbar_init,
	[ST_MBAR_ARRIVE] = emit_mbar_arrive,
	[ST_MBAR_WAIT] = emit_mbar_wait,
	[ST_FENCE_MBAR_INIT] = emit_fence_mbar_init,
	[ST_CLUSTER_SYNC] = emit_cluster_sync,
	[ST_FENCE_PROXY_ASYNC] = emit_fence_proxy_async,
	[ST_BULK_COMMIT] = emit_bulk_commit,
	[ST_BULK_WAIT] = emit_bulk_wait,
	[ST_GRID_DEP] = emit_grid_dep,
	[ST_SIGNAL] = emit_signal,
	[ST_TMA_PREFETCH] = emit_tma_prefetch,
	[ST_FLAG_WAIT] = emit_flag_wait,
	[ST_SYNC] = emit_sync,
	[ST_SETMAXNREG] = emit_setmaxnreg,
	[ST_COMPUTE] = emit_compute,
};

static void
emit_stmt(Emit *e, const Stmt *s)
{
	const EmitFamily *owner = families[stmt_owner[s->kind]];

	if (owner)
		owner->stmt(e, s);
	else if (generic[s->kind])
		generic[s->kind](e, s);
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
			emit_line(e, "const __grid_constant__ WsfTensorMap %s%s   // %s %s, %s view%s",
			          emit_param_name(e, p), sep, p->arg < e->f->ninput ? "input" : "output", dtype_info[p->dtype].name,
			          p->view == VIEW_ROW ? "row" : "full", p->prefetch ? ", its tiles prefetched into L2"
			          : p->preload ? ", its subtiles loaded into an output's staging copies" : "");
			break;
		case PK_PTR:
			if (p->arg < e->f->ninput && e->f->tensor[p->tensor].wait_pos.line) {   /* others write it meanwhile */
				emit_line(e, "const %s *const %s%s   // input %s, its tiles written while the kernel runs",
				          emit_type(p->dtype), emit_param_name(e, p), sep, dtype_info[p->dtype].name);
				break;
			}
			if (kparam_is_view(e->f, p)) {   /* views.c */
				emit_line(e, "const %s *__restrict__ %s%s   // input %s '%s', read as its view '%s'%s",
				          emit_type(p->dtype), emit_param_name(e, p), sep, dtype_info[p->dtype].name,
				          e->f->tensor[e->f->input[p->arg]].name, e->f->tensor[p->tensor].name,
				          p->view == VIEW_ELEM_AT ? ", element by element" :
				          p->view == VIEW_EXCHANGE ? ", its tiles exchanged through shared memory" : "");
				break;
			}
			if (p->readback) {   /* not restrict, nor read through the read-only path: TMA stores write it */
				emit_line(e, "const %s *const %s%s   // output %s, read back by the signal consumer",
				          emit_type(p->dtype), emit_param_name(e, p), sep, dtype_info[p->dtype].name);
				break;
			}
			emit_line(e, "%s%s *__restrict__ %s%s   // %s %s", p->arg < e->f->ninput ? "const " : "",
			          emit_type(p->dtype), emit_param_name(e, p), sep,
			          p->arg < e->f->ninput ? "input" : "output", dtype_info[p->dtype].name);
			break;
		case PK_SIZE:
			emit_line(e, "const long long %s%s", k->var[p->var].name, sep);
			break;
		case PK_FLAGS:   /* not restrict: other kernels read them while this one sets them */
			emit_line(e, "unsigned *const %s%s   // a flag a tile, set to epoch once the tile is %s", p->name, sep,
			          k->tile_consumer ? "stored and the consumer role has written its outputs" : "stored");
			break;
		case PK_WAIT:    /* others set them while this kernel reads them */
			emit_line(e, "const unsigned *const %s%s   // a flag a tile of each input that waits: the tile is "
			          "written once it is epoch", p->name, sep);
			break;
		case PK_WORKSPACE:   /* other CTAs write and read it while this one does */
			emit_line(e, "unsigned char *const %s%s   // %s: a u32 flag a CTA (%d), then a slot of %d bytes a CTA",
			          p->name, sep, kernel_pw(k)->reduce ? "partial sums" : "stream-K", SK_MAX_CTAS,
			          kernel_work_slot(k));
			break;
		default:
			break;
		}
	}
}

/* Carves the dynamic shared memory into buffers and barriers as ir/kernel.c lays them out (kernel_smem_bytes). */
static void
emit_smem(Emit *e)
{
	Kernel *k = e->k;
	int64_t off;
	int i;

	emit_line(e, "extern __shared__ __align__(1024) unsigned char wsf_smem[];");
	for (i = 1; i < k->nbuf; i++) {
		const KBuf *u = &k->buf[i];
		Buf also;
		int j;

		buf_init(&also, e->c->arena);
		for (j = 1; j < k->nparam; j++)   /* another mainloop's operand, through the same stages */
			if (j != u->param && u->kind == BUF_TILE && kernel_loads_from(k, k->body, i, j))
				buf_printf(&also, ", then %s's", k->param[j].name);
		emit_line(e, "%s *const %s = (%s *)(wsf_smem + %lld);   // [%d stages][%d][%d] %s%s%s", emit_type(u->dtype),
		          bufname(e, i), emit_type(u->dtype), (long long)kernel_buf_offset(k, i), u->stages, u->rows, u->cols,
		          dtype_info[u->dtype].name, also.len ? ": holds " : "",
		          also.len ? arena_printf(e->c->arena, "%s's%s", k->param[u->param].name, buf_str(&also)) : "");
	}
	off = kernel_buf_offset(k, k->nbuf);
	for (i = 1; i < k->nbar; i++) {
		emit_line(e, "wsf_u64 *const %s = (wsf_u64 *)(wsf_smem + %lld);   // %d mbarriers", k->bar[i].name,
		          (long long)off, k->bar[i].count);
		off += 8 * k->bar[i].count;
	}
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
	e->fam->compute(e, s);
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
	if (e->fam->in_place && e->fam->in_place(k))
		return;
	if (cs.n < 2 || cs.n > (int)countof(cs.s))
		return;
	body = compute_text(e, cs.s[0]);
	for (i = 1; i < cs.n; i++)
		if (strcmp(body, compute_text(e, cs.s[i])) != 0)
			return;
	for (i = 0; i < cs.n; i++) {
		const Stmt *s = cs.s[i];

		expr_vars(s->u.compute.row, used);
		expr_vars(s->u.compute.col, used);
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
			           p->arg < e->f->ninput ? "const " : "", emit_type(p->dtype), emit_param_name(e, p));
		else if (p->kind == PK_SIZE)
			buf_printf(&params, "%s    const long long %s", params.len ? ",\n" : "", k->var[p->var].name);
		else
			continue;
		buf_printf(&args, "%s%s", args.len ? ", " : "", p->kind == PK_PTR ? emit_param_name(e, p) : k->var[p->var].name);
	}
	for (i = 1; i < k->nbuf; i++) {
		buf_printf(&params, "%s    %s *const %s", params.len ? ",\n" : "", emit_type(k->buf[i].dtype),
		           bufname(e, i));
		buf_printf(&args, "%s%s", args.len ? ", " : "", bufname(e, i));
	}
	if (e->fam->compute_params)
		e->fam->compute_params(e, &params, &args);
	e->compute_fn = "wsf_compute";
	e->compute_args = buf_str(&args);
	emit_line(e, "// The compute of one %s, called from the main and the epilogue loops.", e->fam->unit);
	emit_line(e, "static __device__ __forceinline__ void");
	emit_line(e, "%s(", e->compute_fn);
	buf_puts(e->b, buf_str(&params));
	buf_puts(e->b, ")\n");
	buf_puts(e->b, body);
	buf_puts(e->b, "\n");
}

/* Each family's compute (emit_FAMILY.c). */

/* The family of K, or NULL when it has no emission. */
static const EmitFamily *
family_of(const Kernel *k)
{
	return (int)k->family < countof(families) ? families[k->family] : NULL;
}

const char *
codegen_device_header(Comp *c, const Kernel *k)
{
	const EmitFamily *fam = family_of(k);
	const char *base = codegen_device_cuh;

	if (k->fusion && emit_needs_dtypes(k->fusion))
		base = arena_printf(c->arena, "%s\n%s", codegen_device_cuh, codegen_device_dtypes_cuh);
	if (!fam || !fam->device)
		return base;
	return arena_printf(c->arena, "%s%s", base, fam->device);
}

int
codegen_emit(Comp *c, Buf *b, Launch **launch)
{
	Emit e = {0};
	Kernel *k = c->kernel;
	const MatmulPlan *m = kernel_mm(k);
	const char *entry;
	int i;

	if (!(e.fam = family_of(k))) {
		/* a matmul is lowered (--emit=kernel-ir shows it) but not emitted yet: a valid spec, exit status 6 */
		diag_error(c, k->fusion->pos, "the matmul kernel family has no CUDA emission yet (its kernel IR is "
		           "built: --emit=kernel-ir); pointwise and row-reduction kernels are built");
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
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
	buf_printf(b, "// %d threads (%d compute), tile %d x %d, %s%s", k->threads,
	           k->consumer_threads, k->tile_rows, k->tile_cols,
	           k->persistent ? "persistent over tiles" : "one CTA per tile",
	           k->warp_specialize ? ", warp-specialized" : "");
	if (kernel_share_ctas(k) > 1 && ksum_rule[m->ksum].split_cluster)
		buf_printf(b, ", clusters of %d x %d CTAs, each its own of K's %d parts", m->cluster[0], m->cluster[1],
		           m->ksize.splits);
	else if (kernel_share_ctas(k) > 1)
		buf_printf(b, ", clusters of %d x %d CTAs", m->cluster[0], m->cluster[1]);
	else if (ksum_rule[m->ksum].split_cluster)
		buf_printf(b, ", K split over clusters of %d CTAs", m->ksize.splits);
	buf_puts(b, ".\n");
	/* the header inlined: the file compiles as it is, with NVRTC or nvcc (README.md) */
	buf_printf(b, "\n%s\n%s%s\n\n", CODEGEN_DEVICE_BEGIN, codegen_device_header(c, k), CODEGEN_DEVICE_END);
	if (e.fam->helpers)
		e.fam->helpers(&e);
	emit_compute_function(&e);
	emit_line(&e, "extern \"C\" __global__ void __launch_bounds__(%d, %d)%s", k->threads, e.fam->min_ctas(k),
	          kernel_cluster_ctas(k) > 1 ? arena_printf(c->arena, " __cluster_dims__(%d, 1, 1)",
	                                                    kernel_cluster_ctas(k)) : "");
	emit_line(&e, "%s(", entry);
	e.depth = 1;
	emit_params(&e);
	e.depth = 0;
	emit_line(&e, "{");
	e.depth = 1;
	emit_smem(&e);
	if (e.fam->frame)
		e.fam->frame(&e);
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].kind == PK_TMAP) {
			emit_line(&e, "if (threadIdx.x == 0)");
			emit_line(&e, "    wsf_prefetch_tmap(&%s);", emit_param_name(&e, &k->param[i]));
		}
	emit_stmt(&e, k->body);
	e.depth = 0;
	emit_line(&e, "}");
	*launch = launch_describe(c, k, entry);
	return 0;
}
