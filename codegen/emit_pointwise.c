/*
 * emit_pointwise.c: the pointwise family's compute, which emit.c writes
 * through emit_pointwise_family.
 *
 * A compute is every fusion op over one tile: threads stride over it eight
 * elements at a time (one access of 8 elements: 16 bytes of 2-byte elements,
 * 8 of fp8, int8 or bool, 2 x 16 of f32 and int32, 4 x 16 of int64), each op
 * one expression (emit_op_typed) over a thread's 8 elements, in registers of
 * the value's type: float for every float dtype, else the integer's or bool.
 * An input broadcast along a leading dim (VIEW_ROW_AT, VIEW_COL_AT) is read
 * in place at its row's offset (KParam.at); rand_like's numbers of a
 * thread's 8 elements are drawn before the element loop, from the first
 * one's row-major index in the view (Emit.rand_base, emit_rand_block).
 */
#include "codegen.h"

/* Operand O at element v of the thread's 8: a value's v_x[v], or NULL for a literal. */
static const char *
operand(Emit *e, const Operand *o)
{
	if (!o->tensor)
		return NULL;
	return arena_printf(e->c->arena, "%s[v]", e->value[o->tensor]);
}

/*
 * compute: every fusion op over one tile.  Each thread takes VEC consecutive
 * elements at a time; inputs come from their stage buffer (full and row
 * views) or from global memory (column and scalar views, and inputs broadcast
 * along a leading dim at their row's offset, computed once for the 8).
 */
static void
emit_compute(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int i, j, elems = k->tile_rows * k->tile_cols;

	emit_line(e, "{   // compute tile (row0, col0) = (%s, %s): %s", emit_expr_str(e, s->u.compute.row),
	          emit_expr_str(e, s->u.compute.col), s->comment ? s->comment : "");
	e->depth++;
	emit_line(e, "const long long top = %s, left = %s;", emit_expr_str(e, s->u.compute.row),
	          emit_expr_str(e, s->u.compute.col));
	for (i = 0; i < s->nreads; i++)
		emit_line(e, "const %s *%s = %s;", emit_type(k->buf[s->reads[i].buf].dtype),
		          emit_curname(e, s->reads[i].buf), emit_buf_at(e, s->reads[i].buf, s->reads[i].slot));
	for (i = 0; i < s->nwrites; i++)
		emit_line(e, "%s *%s = %s;", emit_type(k->buf[s->writes[i].buf].dtype),
		          emit_curname(e, s->writes[i].buf), emit_buf_at(e, s->writes[i].buf, s->writes[i].slot));
	emit_line(e, "for (int e = threadIdx.x * %d; e < %d; e += %d) {", VEC, elems, k->consumer_threads * VEC);
	e->depth++;
	emit_line(e, "const int r = e / %d, c = e %% %d;", k->tile_cols, k->tile_cols);
	emit_line(e, "const long long row = top + r, col = left + c;");
	emit_line(e, "if (row >= rows || col >= cols)");
	emit_line(e, "    continue;");
	/* inputs, and the views of inputs that ops read (views.c) */
	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];
		int t = p->tensor;
		const char *v = emit_tname(e, PFX_VALUE, t);
		const char *suf;

		if (p->arg < 0 || p->arg >= f->ninput || (p->kind != PK_PTR && p->kind != PK_TMAP))
			continue;
		suf = emit_suffix(p->dtype);
		e->value[t] = v;
		emit_line(e, "%s %s[%d];%s", emit_reg_type(p->dtype), v, VEC, emit_pos(e, f->tensor[t].pos));
		if (emit_buf_of(k, t) < k->nbuf) {   /* staged: a tile buffer */
			emit_line(e, "wsf_load8%s(%s, %s + %s);", suf, v, emit_curname(e, emit_buf_of(k, t)),
			          p->view == VIEW_ROW ? "c" : "e");
		} else if (p->view == VIEW_ROW || p->view == VIEW_ROW_AT) {
			/* a row beside a one-row tile, or a broadcast input's row at its offset: L1 keeps it for the CTAs */
			const char *src = p->view == VIEW_ROW ? emit_param_name(e, p) : "src";

			if (p->view == VIEW_ROW_AT) {
				emit_line(e, "{");
				e->depth++;
				emit_line(e, "const %s *src = %s + (%s);", emit_type(p->dtype), emit_param_name(e, p),
				          emit_expr_str(e, p->at));
			}
			emit_line(e, "if (col + %d <= cols) {", VEC);
			emit_line(e, "    wsf_load8_global%s(%s, %s + col);", suf, v, src);
			emit_line(e, "} else {");
			emit_line(e, "    #pragma unroll");
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[v] = col + v < cols ? %s(%s + col + v) : 0.0f;", v,
			          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", src);
			emit_line(e, "}");
			if (p->view == VIEW_ROW_AT) {
				e->depth--;
				emit_line(e, "}");
			}
		} else if (p->view == VIEW_ELEM_AT) {   /* a view whose columns are not consecutive: element by element */
			emit_line(e, "{");
			emit_line(e, "    const %s *src = %s + (%s);", emit_type(p->dtype), emit_param_name(e, p),
			          emit_expr_str(e, p->at));
			emit_line(e, "    #pragma unroll");
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[v] = col + v < cols ? %s(src + (col + v) * %lldLL) : 0;", v,
			          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", (long long)p->step);
			emit_line(e, "}");
		} else if (p->view == VIEW_COL_AT) {   /* one element a row, at the row's offset */
			emit_line(e, "{");
			emit_line(e, "    const float x = %s(%s + (%s));", p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1",
			          emit_param_name(e, p), emit_expr_str(e, p->at));
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[v] = x;", v);
			emit_line(e, "}");
		} else {
			const char *idx = p->view == VIEW_COL ? "row" : "0";

			emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "    %s[v] = %s(%s + %s);", v,
			          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_param_name(e, p), idx);
		}
	}
	/* ops, one f32 expression each */
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out);

		if (op_info[o->kind].cls == CLS_VIEW)   /* loaded above where an op reads it */
			continue;
		e->value[o->out] = v;
		emit_line(e, "%s %s[%d];%s", emit_reg_type(f->tensor[o->out].dtype), v, VEC, emit_pos(e, o->pos));
	}
	/* rand_like: its seed and offset are scalars, each register of them the same */
	e->rand_base = "(row * cols + col)";
	for (i = 1; i < f->nop; i++)
		if (f->op[i].kind == OP_RAND_LIKE)
			emit_rand_block(e, &f->op[i], arena_printf(e->c->arena, "%s[0]", e->value[f->op[i].in[1].tensor]),
			                arena_printf(e->c->arena, "%s[0]", e->value[f->op[i].in[2].tensor]), e->rand_base);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int v = 0; v < %d; v++) {", VEC);
	e->depth++;
	e->elem_index = "(row * cols + col + v)";   /* the view is the domain's, row-major */
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *in[3] = {"", "", ""};

		if (op_info[o->kind].cls == CLS_VIEW)
			continue;
		for (j = 0; j < o->nin; j++)
			in[j] = operand(e, &o->in[j]);
		emit_line(e, "%s[v] = %s;   // %s%s%s", e->value[o->out], emit_op_typed(e, o, in),
		          op_info[o->kind].name, o->origin ? " of " : "", o->origin ? o->origin : "");
	}
	e->elem_index = e->rand_base = NULL;
	e->depth--;
	emit_line(e, "}");
	/* outputs: 16-byte stores, element stores at a ragged right edge; or the staging tile */
	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = emit_param_of(e, out->tensor, true);
		const char *suf = emit_suffix(out->dtype);
		int w;

		for (w = 0; w < s->nwrites && e->k->buf[s->writes[w].buf].tensor != out->tensor; w++)
			;
		if (w < s->nwrites) {
			emit_line(e, "wsf_store8_smem%s(%s + e, %s);%s", suf, emit_curname(e, s->writes[w].buf),
			          e->value[out->tensor], emit_pos(e, out->pos));
			continue;
		}
		/* the ragged end: a guarded, unrolled loop keeps the values in registers */
		emit_line(e, "if (col + %d <= cols) {%s", VEC, emit_pos(e, out->pos));
		emit_line(e, "    wsf_store8%s(%s + row * cols + col, %s);", suf, emit_param_name(e, p),
		          e->value[out->tensor]);
		emit_line(e, "} else {");
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "        if (col + v < cols)");
		emit_line(e, "            wsf_store1%s(%s + row * cols + col + v, %s[v]);", suf, emit_param_name(e, p),
		          e->value[out->tensor]);
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/* Pointwise tiles need few registers: 1 leaves the compiler free (__launch_bounds__). */
static int
min_ctas(const Kernel *k)
{
	return 1;
}

const EmitFamily emit_pointwise_family = {
	.compute = emit_compute,
	.min_ctas = min_ctas,
	.unit = "tile",
};
