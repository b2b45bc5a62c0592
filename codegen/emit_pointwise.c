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
 * in place at its row's offset (KParam.at); so is a view of an input
 * (passes/views.c), through the input's pointer: a row of 16-byte loads, one
 * element a row, or element by element (VIEW_ELEM_AT, KParam.step); a view
 * with a box (a pad's: KBounds, on a dim or on a digit of one) takes its
 * fill outside it, from the same input's stage where lowering says so
 * (KBounds.stage: RoPE's halves) or from that input's registers (KBounds.regs:
 * RoPE's interleaved pairs), and one an index places (index_select, gather)
 * adds the index's value times its stride.  A column or scalar input is
 * loaded once for the thread's 8 elements.  A transposed view (VIEW_EXCHANGE) is read from its exchange
 * buffer, which this file's ST_EXCHANGE fills (pointwise_stmt).  A view op
 * computes nothing here (its value is loaded); a placed cat or pad picks by
 * the element's index (PointwisePlan.digit, the column; a digit of it where a
 * reshape merged the cat's dim, Op.digit).  Outputs are stored whole, or, a
 * split's parts (Fusion.split_out), each its range of the computed value
 * (emit_split_store), or a scatter's part written in place at its positions
 * in the input's memory (emit_scatter_store).
 * rand_like's numbers of a thread's 8 elements are drawn before the element
 * loop, from the first one's row-major index in the view (Emit.rand_base,
 * emit_rand_block); one_hot and position compare or give the column
 * (Emit.col_index).  A kernel that reduces over rows (PointwisePlan.reduce)
 * folds each reduction's input into the thread's running results
 * (acc_NAME, its 8 columns; emit_ops.c's emit_fold_of) and leaves the late values and outputs to wsf_meet
 * (emit_reduce_grid.c).
 */
#include <string.h>

#include "codegen.h"

/* Operand O at element v of the thread's 8: a value's v_x[v], or NULL for a literal. */
static const char *
operand(Emit *e, const Operand *o)
{
	if (!o->tensor)
		return NULL;
	return arena_printf(e->c->arena, "%s[v]", e->value[o->tensor]);
}

/* The element's index along domain dim DIM: the column's, or the row's digit (PointwisePlan.digit). */
static const char *
dim_index(Emit *e, int dim)
{
	const Tensor *d = &e->f->tensor[e->k->domain];

	return dim == d->rank - 1 ? "(col + v)" : arena_printf(e->c->arena, "(%s)", emit_expr_str(e, e->k->pw.digit[dim]));
}

/* C text: " * STEP", a view's column step, or nothing for 1. */
static const char *
times_step(Emit *e, const KParam *p)
{
	return ex_is_int(p->step, 1) ? "" : arena_printf(e->c->arena, " * %s", emit_expr_str(e, p->step));
}

/*
 * The element's index along domain dim DIM, or its digit (i / DIV) % MOD
 * where MOD > 0 (views.c: a reshape merged the dim); a digit of the columns
 * that repeats within 8 is v's (col is a multiple of 8), a constant once
 * the element loop unrolls.
 */
static const char *
digit_index(Emit *e, int dim, int64_t div, int64_t mod)
{
	const Tensor *d = &e->f->tensor[e->k->domain];

	if (!mod)
		return dim_index(e, dim);
	if (dim == d->rank - 1 && VEC % (div * mod) == 0)
		return arena_printf(e->c->arena, "(v / %lld %% %lld)", (long long)div, (long long)mod);
	return arena_printf(e->c->arena, "(%s / %lldLL %% %lldLL)", dim_index(e, dim), (long long)div, (long long)mod);
}

/* C text: LO <= index < HI along each boxed domain dim of B (its digit there), the last dim's too when COLS. */
static const char *
box_test(Emit *e, const KBounds *b, bool cols)
{
	const Tensor *d = &e->f->tensor[e->k->domain];
	Buf t;
	int i;

	buf_init(&t, e->c->arena);
	for (i = 0; i < d->rank - (cols ? 0 : 1); i++)
		if (b->hi[i] != INT64_MAX) {
			const char *x = digit_index(e, i, b->div[i], b->mod[i]);

			buf_printf(&t, "%s%s >= %lldLL && %s < %lldLL", t.len ? " && " : "", x, (long long)b->lo[i], x,
			           (long long)b->hi[i]);
		}
	return t.len ? buf_str(&t) : "true";
}

/*
 * A view with a box (a pad's: views.c): memory inside the box, its fill
 * outside.  A row at an offset keeps its 16-byte loads where the row is in
 * the box and the 8 columns inside it; elsewhere element by element.
 */
static void
emit_boxed_view(Emit *e, const KParam *p, const char *v)
{
	const KBounds *b = p->bounds;
	const Tensor *d = &e->f->tensor[e->k->domain];
	const char *ld = p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", *fill = emit_literal(e, b->fill);
	int64_t lo = b->lo[d->rank - 1], hi = b->hi[d->rank - 1];
	const char *load8 = "wsf_load8_global";

	emit_line(e, "{   // inside its box; %s outside", fill);
	e->depth++;
	if (b->regs) {   /* a digit box that repeats within 8: each element inside it another of the thread's 8 */
		const char *x = e->value[e->k->param[b->stage].tensor], *rows = box_test(e, b, false);
		bool all = strcmp(rows, "true") == 0;
		int w;

		if (!all)
			emit_line(e, "const bool in_box = %s;", rows);
		for (w = 0; w < VEC; w++) {
			int64_t dg = (w / b->div[d->rank - 1]) % b->mod[d->rank - 1];

			if (dg < lo || dg >= hi)
				emit_line(e, "%s[%d] = %s;", v, w, fill);
			else if (all)
				emit_line(e, "%s[%d] = %s[%lld];   // %s's registers, %lld on", v, w, x, (long long)(w + b->shift),
				          e->f->tensor[e->k->param[b->stage].tensor].name, (long long)b->shift);
			else
				emit_line(e, "%s[%d] = in_box ? %s[%lld] : %s;", v, w, x, (long long)(w + b->shift), fill);
		}
		e->depth--;
		emit_line(e, "}");
		return;
	}
	if (b->stage) {   /* the staged tile of the same input, whole rows: this row's columns shifted */
		emit_line(e, "const %s *src = %s + r * %d + (%lldLL) - left;   // %s's stage", emit_type(p->dtype),
		          emit_curname(e, emit_buf_of(e->k, e->k->param[b->stage].tensor)), e->k->tile_cols,
		          (long long)b->shift, emit_param_name(e, &e->k->param[b->stage]));
		load8 = "wsf_load8";
	} else {
		emit_line(e, "const %s *src = %s + (%s);", emit_type(p->dtype), emit_param_name(e, p), emit_expr_str(e, p->at));
	}
	emit_line(e, "const bool in_box = %s;", box_test(e, b, false));
	if (p->view == VIEW_COL_AT) {
		emit_line(e, "const float x = in_box ? %s(src) : %s;", ld, fill);
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s[v] = x;", v);
	} else if (b->mod[d->rank - 1]) {   /* a box on a digit of the columns: element by element */
		const char *x = digit_index(e, d->rank - 1, b->div[d->rank - 1], b->mod[d->rank - 1]);

		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s[v] = in_box && col + v < cols && %s >= %lldLL && %s < %lldLL ? %s(src + (col + v)%s) : %s;",
		          v, x, (long long)lo, x, (long long)hi, ld, times_step(e, p), fill);
	} else {
		if (p->view == VIEW_ROW_AT) {
			emit_line(e, "if (in_box && col + %d <= cols%s%s) {", VEC,
			          hi == INT64_MAX ? "" : arena_printf(e->c->arena, " && col >= %lldLL", (long long)lo),
			          hi == INT64_MAX ? "" : arena_printf(e->c->arena, " && col + %d <= %lldLL", VEC, (long long)hi));
			emit_line(e, "    %s%s(%s, src + col);", load8, emit_suffix(p->dtype), v);
			if (hi != INT64_MAX) {   /* 8 columns all outside the box: the fill, no loads */
				emit_line(e, "} else if (!in_box || col >= %lldLL || col + %d <= %lldLL) {", (long long)hi, VEC,
				          (long long)lo);
				emit_line(e, "    #pragma unroll");
				emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
				emit_line(e, "        %s[v] = %s;", v, fill);
			}
			emit_line(e, "} else {");
			e->depth++;
		}
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s[v] = in_box && col + v < cols%s ? %s(src + (col + v)%s) : %s;", v,
		          hi == INT64_MAX ? "" : arena_printf(e->c->arena, " && col + v >= %lldLL && col + v < %lldLL",
		                                              (long long)lo, (long long)hi),
		          ld, p->view == VIEW_ROW_AT ? "" : times_step(e, p), fill);
		if (p->view == VIEW_ROW_AT) {
			e->depth--;
			emit_line(e, "}");
		}
	}
	e->depth--;
	emit_line(e, "}");
}

/* The exchange buffer (BUF_EXCHANGE) of param P, or 0: none. */
static int
exchange_of(const Kernel *k, int p)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].kind == BUF_EXCHANGE && k->buf[b].param == p)
			return b;
	return 0;
}

/*
 * A view placed by an index (index_select, gather): x's pointer at the view's
 * offset plus the index's value times the position's stride.  One index
 * element a row: the row of 16-byte loads (or element by element where the
 * stride breaks their alignment); an index along the columns: element by
 * element, each at its own index element.
 */
static void
emit_indexed_view(Emit *e, const KParam *p, const char *v)
{
	const KParam *ix = &e->k->param[p->bounds->index_param];
	const char *ld = p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1";
	const char *scale = emit_expr_str(e, p->bounds->index_scale), *in = emit_param_name(e, ix);

	emit_line(e, "{   // at the positions '%s' holds", e->f->tensor[ix->tensor].name);
	e->depth++;
	emit_line(e, "const %s *src = %s + (%s);", emit_type(p->dtype), emit_param_name(e, p), emit_expr_str(e, p->at));
	if (ex_is_int(ix->step, 0)) {
		emit_line(e, "src += (long long)%s[%s] * (%s);", in, emit_expr_str(e, ix->at), scale);
		if (p->view == VIEW_ROW_AT) {
			emit_line(e, "if (col + %d <= cols) {", VEC);
			emit_line(e, "    wsf_load8_global%s(%s, src + col);", emit_suffix(p->dtype), v);
			emit_line(e, "} else {");
			e->depth++;
		}
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s[v] = col + v < cols ? %s(src + (col + v)%s) : 0;", v, ld, times_step(e, p));
		if (p->view == VIEW_ROW_AT) {
			e->depth--;
			emit_line(e, "}");
		}
	} else {
		emit_line(e, "const %s *wsf_pos = %s + (%s);", emit_type(ix->dtype), in, emit_expr_str(e, ix->at));
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s[v] = col + v < cols ? %s(src + (col + v) * %s + (long long)wsf_pos[(col + v) * %s] * "
		          "(%s)) : 0;", v, ld, emit_expr_str(e, p->step), emit_expr_str(e, ix->step), scale);
	}
	e->depth--;
	emit_line(e, "}");
}

/*
 * A placed cat or pad (views.c): its inputs are at its indices already, so
 * it picks one by the element's index: a cat's part whose range holds it, a
 * pad's value inside the input's box, else the fill.
 */
static const char *
placed_op(Emit *e, const Op *o)
{
	const Tensor *d = &e->f->tensor[e->k->domain], *out = &e->f->tensor[o->out];
	int off = d->rank - out->rank, j;
	Buf t;

	buf_init(&t, e->c->arena);
	if (o->kind == OP_CAT) {
		const char *x = digit_index(e, o->axis + off, o->digit[0], o->digit[1]);

		for (j = 0; j + 1 < o->nin; j++)
			buf_printf(&t, "%s < %lldLL ? %s[v] : ", x, (long long)o->pad[j], e->value[o->in[j].tensor]);
		buf_printf(&t, "%s[v]", e->value[o->in[o->nin - 1].tensor]);
		return buf_str(&t);
	}
	for (j = 0; j < o->npad / 2; j++) {
		int dim = d->rank - 1 - j;
		int64_t lo = o->pad[2 * j], hi = dim_value(e->f, out->dim[out->rank - 1 - j]) - o->pad[2 * j + 1];
		const char *x = dim_index(e, dim);

		if (lo || o->pad[2 * j + 1])
			buf_printf(&t, "%s%s >= %lldLL && %s < %lldLL", t.len ? " && " : "", x, (long long)lo, x, (long long)hi);
	}
	return arena_printf(e->c->arena, "%s ? %s[v] : %s", t.len ? buf_str(&t) : "true", e->value[o->in[0].tensor],
	                    emit_literal(e, o->value));
}

/*
 * The thread's 8 elements of each input and of each view of an input that
 * ops read (views.c): from the tile's stage, or from global memory as the
 * param's view says.
 */
static void
emit_inputs(Emit *e)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int i;

	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];
		int t = p->tensor;
		const char *v = emit_tname(e, PFX_VALUE, t);
		const char *suf;

		if (p->arg < 0 || p->arg >= f->ninput || (p->kind != PK_PTR && p->kind != PK_TMAP) || p->view == VIEW_NONE ||
		    p->view == VIEW_REDUCED)
			continue;   /* (VIEW_NONE: an index's memory, read by the view it places; VIEW_REDUCED: by wsf_meet) */
		suf = emit_suffix(p->dtype);
		e->value[t] = v;
		emit_line(e, "%s %s[%d];%s", emit_reg_type(p->dtype), v, VEC, emit_pos(e, f->tensor[t].pos));
		if (p->bounds && p->bounds->index_param) {
			emit_indexed_view(e, p, v);
		} else if (p->bounds) {
			emit_boxed_view(e, p, v);
		} else if (p->view == VIEW_EXCHANGE) {   /* a transposed view's tile, exchanged: column c + v, row r */
			emit_line(e, "#pragma unroll");
			emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "    %s[v] = col + v < cols ? %s(%s + (c + v) * %d + r) : 0;", v,
			          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_curname(e, exchange_of(k, i)),
			          k->buf[exchange_of(k, i)].cols);
		} else if (emit_buf_of(k, t) < k->nbuf) {   /* staged: a tile buffer */
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
			emit_line(e, "        %s[v] = col + v < cols ? %s(src + (col + v) * %s) : 0;", v,
			          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_expr_str(e, p->step));
			emit_line(e, "}");
		} else if (p->view == VIEW_COL_AT) {   /* one element a row, at the row's offset */
			emit_line(e, "{");
			emit_line(e, "    const auto x = %s(%s + (%s));", p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1",
			          emit_param_name(e, p), emit_expr_str(e, p->at));
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[v] = x;", v);
			emit_line(e, "}");
		} else {   /* one element a row (a column) or one in all (a scalar): loaded once */
			emit_line(e, "{");
			emit_line(e, "    const auto x = %s(%s + %s);", p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1",
			          emit_param_name(e, p), p->view == VIEW_COL ? "row" : "0");
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[v] = x;", v);
			emit_line(e, "}");
		}
	}
}

/*
 * Output P, a part of the split (lower_pointwise.c split_params): the
 * elements of V inside its box, at its own offsets (P's at, its lo shifted
 * out): 16-byte stores where the 8 columns lie inside its range and start
 * on a 16-byte boundary, else element by element.
 */
static void
emit_split_store(Emit *e, const KParam *p, const char *v)
{
	const Tensor *d = &e->f->tensor[e->k->domain];
	int64_t lo = p->bounds->lo[d->rank - 1], hi = p->bounds->hi[d->rank - 1];
	const char *suf = emit_suffix(p->dtype), *range = hi == INT64_MAX ? "" :
		arena_printf(e->c->arena, " && col + v >= %lldLL && col + v < %lldLL", (long long)lo, (long long)hi);

	emit_line(e, "{   // output '%s': its part of '%s'%s", e->f->tensor[p->tensor].name, e->f->tensor[d - e->f->tensor].name,
	          emit_pos(e, e->f->out[p->arg - e->f->ninput].pos));
	e->depth++;
	emit_line(e, "%s *dst = %s + (%s);", emit_type(p->dtype), emit_param_name(e, p), emit_expr_str(e, p->at));
	emit_line(e, "const bool in_box = %s;", box_test(e, p->bounds, false));
	if (lo * dtype_info[p->dtype].bytes % 16 == 0) {
		emit_line(e, "if (in_box && col + %d <= cols%s) {", VEC, hi == INT64_MAX ? "" :
		          arena_printf(e->c->arena, " && col >= %lldLL && col + %d <= %lldLL", (long long)lo, VEC, (long long)hi));
		emit_line(e, "    wsf_store8%s(dst + col, %s);", suf, v);
		emit_line(e, "} else if (in_box%s) {", hi == INT64_MAX ? "" :
		          arena_printf(e->c->arena, " && col < %lldLL && col + %d > %lldLL", (long long)hi, VEC, (long long)lo));
	} else {
		emit_line(e, "if (in_box%s) {", hi == INT64_MAX ? "" :
		          arena_printf(e->c->arena, " && col < %lldLL && col + %d > %lldLL", (long long)hi, VEC, (long long)lo));
	}
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
	emit_line(e, "        if (col + v < cols%s)", range);
	emit_line(e, "            wsf_store1%s(dst + col + v, %s[v]);", suf, v);
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/*
 * Output P written in place as a scatter (lower_pointwise.c scatter_params):
 * V, the part, at P's offset for the domain row plus, for index_copy, the
 * index's value times the position's stride; a row of 16-byte stores
 * (VIEW_ROW_AT), else element by element, an index along the columns read
 * for each element.
 */
static void
emit_scatter_store(Emit *e, const KParam *p, const Output *out, const char *v)
{
	const KParam *ix = p->bounds && p->bounds->index_param ? &e->k->param[p->bounds->index_param] : NULL;
	const char *suf = emit_suffix(p->dtype), *at = "";

	emit_line(e, "{   // output '%s': '%s' placed in '%s'%s%s%s", e->f->tensor[p->tensor].name,
	          e->f->tensor[e->k->domain].name, e->f->tensor[out->alias].name, ix ? " at the positions '" : "",
	          ix ? e->f->tensor[ix->tensor].name : "", ix ? "' holds" : "");
	e->depth++;
	emit_line(e, "%s *dst = %s + (%s);%s", emit_type(p->dtype), emit_param_name(e, p), emit_expr_str(e, p->at),
	          emit_pos(e, out->pos));
	if (ix && ex_is_int(ix->step, 0))
		emit_line(e, "dst += (long long)%s[%s] * (%s);", emit_param_name(e, ix), emit_expr_str(e, ix->at),
		          emit_expr_str(e, p->bounds->index_scale));
	else if (ix)   /* (an index along the columns: each element's own) */
		at = arena_printf(e->c->arena, " + (long long)%s[%s + (col + v) * %s] * (%s)", emit_param_name(e, ix),
		                  emit_expr_str(e, ix->at), emit_expr_str(e, ix->step), emit_expr_str(e, p->bounds->index_scale));
	if (p->view == VIEW_ROW_AT) {
		emit_line(e, "if (col + %d <= cols) {", VEC);
		emit_line(e, "    wsf_store8%s(dst + col, %s);", suf, v);
		emit_line(e, "} else {");
		e->depth++;
	}
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
	emit_line(e, "    if (col + v < cols)");
	emit_line(e, "        wsf_store1%s(dst + (col + v)%s%s, %s[v]);", suf, times_step(e, p), at, v);
	if (p->view == VIEW_ROW_AT) {
		e->depth--;
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "}");
}

/* Is T computed from a reduction's result (PointwisePlan.late), once an item? */
static bool
late(const Kernel *k, int t)
{
	return k->pw.reduce && k->pw.late[t];
}

/* Does F compute anything per element: an op that is not a view read from memory? */
static bool
computes(const Fusion *f)
{
	int i;

	for (i = 1; i < f->nop && op_info[f->op[i].kind].cls == CLS_VIEW && !f->op[i].placed; i++)
		;
	return i < f->nop;
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
	emit_line(e, "if (row >= %s || col >= cols)", k->pw.reduce ? emit_expr_str(e, k->pw.row_end) : "rows");
	emit_line(e, "    continue;");
	emit_inputs(e);
	/* ops, one f32 expression each */
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out);

		/* a view is loaded above where an op reads it; a late value is computed once an item (wsf_meet) */
		if ((op_info[o->kind].cls == CLS_VIEW && !o->placed) || late(k, o->out))
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
	if (computes(f)) {   /* (a copy of views computes nothing: no loop) */
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++) {", VEC);
		e->depth++;
	}
	e->elem_index = "(row * cols + col + v)";   /* the view is the domain's, row-major */
	e->col_index = "(col + v)";
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *in[3] = {"", "", ""};

		if (op_info[o->kind].cls == CLS_REDUCE) {   /* this thread's running sums, of the elements in the view */
			const char *acc = emit_tname(e, PFX_ACC, o->out);

			emit_line(e, "if (col + v < cols)   // %s", op_info[o->kind].name);
			emit_line(e, "    %s[v] = %s;", acc, emit_fold_of(e, o, arena_printf(e->c->arena, "%s[v]", acc),
			                                                   operand(e, &o->in[0])));
			continue;
		}
		if ((op_info[o->kind].cls == CLS_VIEW && !o->placed) || late(k, o->out))
			continue;
		if (o->placed) {
			emit_line(e, "%s[v] = %s;   // %s, placed", e->value[o->out], placed_op(e, o), op_info[o->kind].name);
			continue;
		}
		for (j = 0; j < o->nin; j++)
			in[j] = operand(e, &o->in[j]);
		emit_line(e, "%s[v] = %s;   // %s%s%s", e->value[o->out], emit_op_typed(e, o, in),
		          op_info[o->kind].name, o->origin ? " of " : "", o->origin ? o->origin : "");
	}
	e->elem_index = e->col_index = e->rand_base = NULL;
	if (computes(f)) {
		e->depth--;
		emit_line(e, "}");
	}
	/* outputs: 16-byte stores, element stores at a ragged right edge; or the staging tile */
	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = emit_param_of(e, out->tensor, true);
		const char *suf = emit_suffix(out->dtype);
		int w;

		if (late(k, out->tensor))   /* stored once an item's sums meet (ST_REDUCE) */
			continue;
		if (f->split_out) {   /* a part of the split: its range of the placed cat's values */
			emit_split_store(e, p, e->value[f->split_out]);
			continue;
		}
		if (fusion_scatter(f, j)) {   /* written in place: the part at its positions */
			emit_scatter_store(e, p, out, e->value[fusion_stored(f, j)]);
			continue;
		}
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

/*
 * ST_EXCHANGE: the compute's threads copy a transposed view's tile into its
 * exchange buffer, consecutive threads taking consecutive rows of the tile,
 * which are consecutive elements of memory: a column of the tile a row of
 * the buffer (its pitch a word longer than the tile's rows: no two threads
 * of a warp on one bank).  Where the statement's cond holds, 16 bytes of
 * rows a thread (one load, four words into the copy), element by element
 * where a group is not 16-byte aligned or passes the last row; else every
 * element a load, all issued before the first store.
 */
static void
emit_exchange(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const KParam *p = &k->param[s->u.tma.param];
	const KBuf *u = &k->buf[s->u.tma.buf];
	int rows = k->tile_rows, cols = k->tile_cols, g = 16 / dtype_info[p->dtype].bytes;
	const char *in = emit_param_name(e, p), *at = emit_expr_str(e, p->at), *step = emit_expr_str(e, p->step);

	emit_line(e, "{%s", emit_comment(e, s));
	e->depth++;
	emit_line(e, "%s *ex = %s;", emit_type(u->dtype), emit_buf_at(e, s->u.tma.buf, s->u.tma.slot));
	emit_line(e, "const long long top = %s, left = %s;", emit_expr_str(e, s->u.tma.row), emit_expr_str(e, s->u.tma.col));
	if (s->u.tma.cond && rows % g == 0) {   /* 16 bytes of consecutive rows a load, 4 words into the copy's row */
		emit_line(e, "const bool vec = (%s) && ((unsigned long long)%s & 15) == 0;", emit_expr_str(e, s->u.tma.cond), in);
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int e = threadIdx.x; e < %d; e += %d) {", rows / g * cols, k->consumer_threads);
		emit_line(e, "    const int r = e %% %d * %d, c = e / %d;", rows / g, g, rows / g);
		emit_line(e, "    if (left + c >= cols || top + r >= rows)");
		emit_line(e, "        continue;");
		emit_line(e, "    const long long col = left + c;");
		emit_line(e, "    long long row = top + r;");
		emit_line(e, "    const long long at = (%s) + col * %s;", at, step);
		emit_line(e, "    if (vec && row + %d <= rows && at %% %d == 0) {", g, g);
		emit_line(e, "        const uint4 q = wsf_ldg16(%s + at);", in);
		emit_line(e, "        unsigned *w = (unsigned *)(ex + c * %d + r);", u->cols);
		emit_line(e, "        w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;");
		emit_line(e, "    } else {");
		emit_line(e, "        for (int i = 0; i < %d && top + r + i < rows; i++) {", g);
		emit_line(e, "            row = top + r + i;");
		emit_line(e, "            ex[c * %d + r + i] = %s[(%s) + col * %s];", u->cols, in, at, step);
		emit_line(e, "        }");
		emit_line(e, "    }");
		emit_line(e, "}");
	} else {
		emit_line(e, "#pragma unroll");   /* every load issued before the first store to shared memory */
		emit_line(e, "for (int e = threadIdx.x; e < %d; e += %d) {", rows * cols, k->consumer_threads);
		emit_line(e, "    const int r = e %% %d, c = e / %d;", rows, rows);
		emit_line(e, "    const long long row = top + r, col = left + c;");
		emit_line(e, "    if (row < rows && col < cols)");
		emit_line(e, "        ex[c * %d + r] = %s[(%s) + col * %s];", u->cols, in, at, step);
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "}");
}

static void
pointwise_stmt(Emit *e, const Stmt *s)
{
	if (s->kind == ST_EXCHANGE)
		emit_exchange(e, s);
	else if (s->kind == ST_REDUCE)
		emit_reduce(e, s);
}

/* Pointwise tiles need few registers: 1 leaves the compiler free (__launch_bounds__). */
static int
min_ctas(const Kernel *k)
{
	return 1;
}

const EmitFamily emit_pointwise_family = {
	.compute = emit_compute,
	.stmt = pointwise_stmt,
	.min_ctas = min_ctas,
	.frame = emit_reduce_frame,
	.compute_params = emit_reduce_params,
	.unit = "tile",
};
