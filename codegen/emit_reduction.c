/*
 * emit_reduction.c: the row-reduction family's compute, which emit.c writes
 * through emit_reduction_family.
 *
 * A value is a full row (v_NAME: 8 elements a thread per step of the
 * element loop) or a per-row scalar (r_NAME, in every thread).  The level
 * of a value is the number of reductions on its longest path from the
 * inputs; the reductions of level L are computed in pass L over the row,
 * from the full-row values they need, and the full-row outputs in a last
 * pass (emit_row_compute).  Global memory is read once either way; what a
 * pass starts from depends on the row's width:
 *   - registers (k->row.steps, the schedule pass's plan: at most 4 steps):
 *     the loop is unrolled, a thread's part of every value is an array
 *     v_NAME[step][8] computed once, in the first pass that needs it, and
 *     later passes read it from registers; a direct kernel (k->row.direct,
 *     one CTA a row, or k->row.lanes threads a row, several rows a CTA,
 *     rows past the end computing the last and storing nothing) loads the
 *     row's inputs from global memory, not from a stage, every step's loads
 *     before any compute;
 *   - shared memory (wider rows): each pass reads the row from its stage
 *     again and recomputes the values it needs in v_NAME[8].
 * A row streamed in chunks is split into the parts lowering placed in the
 * pass and chunk loops (emit_chunk_compute).  Block reductions take the
 * scratch array wsf_red, which the kernel declares and the compute's
 * function takes.
 *
 * What the kernel loads are its leaves (row_leaf): the inputs ops read and
 * the views of inputs (passes/views.c), read at the row's offset through
 * the input's pointer, never staged, plus an index's value times its stride
 * where an index_select places the row (row_at), or where a gather picks one
 * element a row (a label's logit: 0 where the index is outside the row,
 * KBounds.index_n).  An integer per-row input (a label, rand_like's seed)
 * is read as a 64-bit integer, once a row.  A view op computes nothing, but
 * a reshape of a computed value that adds or drops 1-dims (fusion_unsqueeze:
 * a backward's [T] as [T, 1]), which is a copy.
 *
 * Results over the rows (VIEW_REDUCED, RowPlan.outer) are no pass's: a thread
 * adds its columns of each row into acc_NAME[step][8] in the output pass
 * (emit_outer_sums), a per-row value into acc_NAME at the row's end
 * (emit_outer_scalars), the frame's and taken by reference; ST_ROW_MEET
 * (emit_reduce_grid.c) meets them.  topk (VIEW_SELECTED) selects from the
 * values the output pass left in registers or the row's stage, or, at a
 * streamed row's end, from an input's row in memory (emit_topk.c).  Every
 * reduction folds by emit_ops.c's table (emit_fold: wsf_block<F>,
 * wsf_fold8<F>, a sum's, a max's or a product's).
 *
 * Register mode keeps the values kir_row_kept names (the inputs and views, and the
 * results of transcendental ops, rand_like and full-row divisions; rand_like's
 * numbers are drawn before the element loop, emit_rand_block); cheap arithmetic is
 * recomputed in each pass from them, which keeps register pressure down (a
 * kept value is 8 registers a step).
 */
#include <string.h>

#include "codegen.h"

/* An SM's shared memory for CTAs, and what the hardware reserves per CTA (sm_90). */
enum { SM_SMEM = 228 * 1024, CTA_SMEM_RESERVED = 1024 };

/* Is O a reduction of each row (not one over the rows, whose result is the plan's VIEW_REDUCED)? */
static bool
row_reduction(const Kernel *k, const Op *o)
{
	return op_info[o->kind].cls == CLS_REDUCE && k->row.view[o->out] != VIEW_REDUCED;
}

/* Is O a reduction over the rows, of a full row's values (COLUMNS: a result a column) or of a per-row value? */
static bool
outer_reduction(const Kernel *k, const Op *o, bool columns)
{
	return op_info[o->kind].cls == CLS_REDUCE && k->row.view[o->out] == VIEW_REDUCED &&
	       (k->row.view[o->in[0].tensor] == VIEW_FULL) == columns;
}

/* Is T a full row: one of the row's own values, or a row broadcast over rows? */
static bool
row_full(const Kernel *k, int t)
{
	return k->row.view[t] == VIEW_FULL || k->row.view[t] == VIEW_ROW || k->row.view[t] == VIEW_ROW_AT;
}

/*
 * Does the kernel load T: an input an op reads, or a view of one read
 * through the input's pointer at the row's offset (views.c)?  Tensor ids
 * put the inputs first, in spec order.
 */
static bool
row_leaf(Emit *e, int t)
{
	const Tensor *x = &e->f->tensor[t];

	const KParam *p;

	if (x->kind != TK_INPUT && !(x->kind == TK_VALUE && op_info[e->f->op[x->def].kind].cls == CLS_VIEW))
		return false;
	p = emit_param_of(e, t, false);
	return p && p->view != VIEW_NONE;   /* (VIEW_NONE: an index's memory, which a view reads) */
}

/* View P's row at its offset: at, plus an index's value times its stride where an index places it. */
static const char *
row_at(Emit *e, const KParam *p)
{
	const KParam *ix;

	if (!p->bounds || !p->bounds->index_param)
		return arena_printf(e->c->arena, "(%s)", emit_expr_str(e, p->at));
	ix = &e->k->param[p->bounds->index_param];
	return arena_printf(e->c->arena, "(%s) + (long long)%s[%s] * (%s)", emit_expr_str(e, p->at),
	                    emit_param_name(e, ix), emit_expr_str(e, ix->at), emit_expr_str(e, p->bounds->index_scale));
}

/*
 * Is op O computed: not a view (its value is loaded, or it only feeds
 * another view), but a view that only adds or drops 1-dims of a computed
 * value (fusion_unsqueeze: a copy of the same row's value)?
 */
static bool
row_computes(const Fusion *f, const Op *o)
{
	return op_info[o->kind].cls != CLS_VIEW || fusion_unsqueeze(f, o);
}

/*
 * Is T a 2-byte full-row input that a direct kernel keeps as loaded, two
 * elements a register (raw_NAME[step]), and unpacks to f32 in each pass that
 * reads it (v_NAME[8])?  Half the registers of f32: layernorm's row, weight
 * and bias then fit 48 warps an SM without spilling (docs/perf.md).
 */
bool
emit_row_raw(Emit *e, int t)
{
	const Kernel *k = e->k;

	return k->row.direct && e->row.steps && k->row.view[t] == VIEW_FULL && row_leaf(e, t) &&
	       dtype_info[e->f->tensor[t].dtype].bytes == 2;
}

/* The C name of full-row value T at the current step: v_T (+ [it] in register mode, but for a raw input). */
static const char *
row_value(Emit *e, int t)
{
	return arena_printf(e->c->arena, "%s%s", emit_tname(e, PFX_VALUE, t),
	                    e->row.steps && !emit_row_raw(e, t) ? "[it]" : "");
}

static const char *
row_operand(Emit *e, const Operand *o)
{
	if (!o->tensor)
		return emit_literal(e, o->lit);
	if (row_full(e->k, o->tensor))
		return arena_printf(e->c->arena, "%s[v]", row_value(e, o->tensor));
	return emit_tname(e, PFX_ROW, o->tensor);
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
	if (f->tensor[t].kind != TK_VALUE || row_leaf(e, t))
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
	const KParam *p = emit_param_of(e, t, false);
	const char *v = row_value(e, t);

	if (emit_buf_of(e->k, t) == e->k->nbuf) {
		/*
		 * Not staged: a row broadcast over rows, read where L1 and L2
		 * keep it, or (a direct kernel) this row of a full input.  The
		 * ragged end one by one.
		 */
		const bool full = e->k->row.view[t] == VIEW_FULL && !p->at;   /* (a view's rows: at its offset) */
		const char *at = full ? "row * cols + e" : e->k->row.view[t] == VIEW_ROW && !p->at ? "e" :
		                 arena_printf(e->c->arena, "%s + e", row_at(e, p));
		/* a row read in every pass: under this pass's L2 policy */
		const char *l2 = full && e->row.policy ? "_l2" : "";
		const char *pol = *l2 ? arena_printf(e->c->arena, ", %s", e->row.policy) : "";

		if (emit_row_raw(e, t)) {
			const char *raw = arena_printf(e->c->arena, "%s[it]", emit_tname(e, PFX_RAW, t));

			if (whole)
				emit_line(e, "%s = wsf_ldg16%s(%s + %s%s);%s", raw, l2, emit_param_name(e, p), at, pol,
				          emit_pos(e, e->f->tensor[t].pos));
			else
				emit_line(e, "%s = e + %d <= cols ? wsf_ldg16%s(%s + %s%s) : wsf_ldg16_part(%s + %s, (int)(cols - e));",
				          raw, VEC, l2, emit_param_name(e, p), at, pol, emit_param_name(e, p), at);
			return;
		}
		if (whole) {
			emit_line(e, "wsf_load8_global%s%s(%s, %s + %s%s);%s", l2, emit_suffix(p->dtype), v, emit_param_name(e, p), at,
			          pol, emit_pos(e, e->f->tensor[t].pos));
			return;
		}
		emit_line(e, "if (e + %d <= cols) {", VEC);
		emit_line(e, "    wsf_load8_global%s%s(%s, %s + %s%s);", l2, emit_suffix(p->dtype), v, emit_param_name(e, p), at, pol);
		emit_line(e, "} else {");
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "        %s[v] = e + v < cols ? %s(%s + %s + v) : 0.0f;", v,
		          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_param_name(e, p), at);
		emit_line(e, "}");
		return;
	}
	if (e->row.chunk_col)
		emit_line(e, "wsf_load8%s(%s, %s + (e - %s));", emit_suffix(p->dtype), v,
		          emit_curname(e, emit_buf_of(e->k, t)), e->row.chunk_col);
	else
		emit_line(e, "wsf_load8%s(%s, %s + e);", emit_suffix(p->dtype), v,
		          emit_curname(e, emit_buf_of(e->k, t)));
}

/* The thread's index in its row, and the threads of a row: the CTA's, or its lanes' (RowPlan.lanes). */
const char *
emit_row_tid(const Emit *e)
{
	return e->k->row.lanes ? "wsf_lane" : "threadIdx.x";
}

int
emit_row_nthreads(const Emit *e)
{
	return e->k->row.lanes ? e->k->row.lanes : e->k->consumer_threads;
}

/*
 * Opens register mode's unrolled loop over a thread's steps of 8 elements;
 * GUARD: the steps may run past the row's end, which ends the loop.
 */
void
emit_open_steps(Emit *e, bool guard)
{
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int it = 0; it < %d; it++) {", e->row.steps);
	e->depth++;
	emit_line(e, "const int e = %s * %d + it * %d;", emit_row_tid(e), VEC, emit_row_nthreads(e) * VEC);
	if (guard) {
		emit_line(e, "if (e >= cols)");
		emit_line(e, "    break;");
	}
}

/* Does this pass load input T, a full row a direct kernel reads from global memory? */
static bool
loads_row_from_hbm(Emit *e, const bool *need, const bool *have, int t)
{
	return need[t] && !have[t] && e->k->row.view[t] == VIEW_FULL;
}

/* A direct kernel's loads of the full-row inputs this pass needs; WHOLE: see emit_row_load. */
static void
emit_hbm_loads(Emit *e, const bool *need, const bool *have, bool whole)
{
	int i;

	for (i = 1; i < e->f->ntensor; i++)
		if (row_leaf(e, i) && loads_row_from_hbm(e, need, have, i))
			emit_row_load(e, i, whole);
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
		for (i = 1, nops = 0; i < f->ntensor; i++)
			nops += row_leaf(e, i) && loads_row_from_hbm(e, need, have, i);
		if (nops) {
			/*
			 * A thread whose steps all lie inside the row loads without
			 * guards: with the ragged-end branches in between, the loads
			 * did not overlap.
			 */
			emit_line(e, "if (%s * %d + %d <= cols) {   // this thread's part of the row's "
			          "inputs, all inside the row", emit_row_tid(e), VEC, (e->row.steps - 1) * emit_row_nthreads(e) * VEC + VEC);
			e->depth++;
			emit_open_steps(e, false);
			emit_hbm_loads(e, need, have, true);
			e->depth--;
			emit_line(e, "}");
			e->depth--;
			emit_line(e, "} else {   // the row's ragged end");
			e->depth++;
			emit_open_steps(e, true);
			emit_hbm_loads(e, need, have, false);
			e->depth--;
			emit_line(e, "}");
			e->depth--;
			emit_line(e, "}");
			for (i = 1; i < f->ntensor; i++)
				if (row_leaf(e, i) && loads_row_from_hbm(e, need, have, i))
					have[i] = true;
		}
	}
	if (e->row.chunk_col) {
		/* a chunk is 8 elements a thread */
		emit_line(e, "const int e = (int)(%s) + threadIdx.x * %d;", e->row.chunk_col, VEC);
		emit_line(e, "if (e < cols) {");
		e->depth++;
	} else if (e->row.steps) {
		emit_open_steps(e, true);
	} else {
		emit_line(e, "for (int e = threadIdx.x * %d; e < cols; e += %d) {", VEC, step);
		e->depth++;
	}
	for (i = 1; i < f->ntensor; i++) {
		int t = i;

		if (!row_leaf(e, t) || !need[t] || have[t])
			continue;
		if (!e->row.steps)
			emit_line(e, "float %s[%d];", row_value(e, t), VEC);
		emit_row_load(e, t, false);
	}
	for (i = 1; i < f->ntensor; i++) {
		int t = i;

		if (emit_row_raw(e, t) && row_pass_reads(e, target, need, have, t)) {
			emit_line(e, "float %s[%d];", row_value(e, t), VEC);
			emit_line(e, "wsf_unpack8%s(%s, %s);", emit_suffix(f->tensor[t].dtype), row_value(e, t),
			          arena_printf(e->c->arena, "%s[it]", emit_tname(e, PFX_RAW, t)));
		}
	}
	for (i = 1, nops = 0; i < f->nop; i++)
		if (need[f->op[i].out] && !have[f->op[i].out] && f->tensor[f->op[i].out].kind == TK_VALUE) {
			if (!e->row.steps)
				emit_line(e, "float %s[%d];%s", emit_tname(e, PFX_VALUE, f->op[i].out), VEC,
				          emit_pos(e, f->op[i].pos));
			nops++;
		}
	if (nops) {
		e->rand_base = "(row * cols + e)";   /* rand_like's: the rows are the domain's, row-major */
		for (i = 1; i < f->nop; i++)
			if (f->op[i].kind == OP_RAND_LIKE && need[f->op[i].out] && !have[f->op[i].out])
				emit_rand_block(e, &f->op[i], row_operand(e, &f->op[i].in[1]), row_operand(e, &f->op[i].in[2]),
				                e->rand_base);
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++) {", VEC);
		e->depth++;
		e->elem_index = "(row * cols + e + v)";
		e->col_index = "(e + v)";
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (!need[o->out] || have[o->out] || op_info[o->kind].cls == CLS_REDUCE || !row_computes(e->f, o))
				continue;
			if (o->kind == OP_DIV && o->in[1].tensor && !row_full(e->k, o->in[1].tensor))
				/*
				 * By a per-row value: one reciprocal a row (hoisted) and a
				 * multiply an element, corrected by one step (two fmas) to
				 * the correctly rounded quotient, as x / s gives (torch's).
				 */
				emit_line(e, "%s[v] = wsf_div_by(%s, %s, 1.0f / %s);   // div%s", row_value(e, o->out),
				          row_operand(e, &o->in[0]), row_operand(e, &o->in[1]), row_operand(e, &o->in[1]),
				          e->row.steps ? emit_pos(e, o->pos) : "");
			else
				emit_line(e, "%s[v] = %s;   // %s%s", row_value(e, o->out),
				          emit_op_text3(e, o, row_operand(e, &o->in[0]), o->nin > 1 ? row_operand(e, &o->in[1]) : "",
				                        o->nin > 2 ? row_operand(e, &o->in[2]) : "", NULL),
				          op_info[o->kind].name, e->row.steps ? emit_pos(e, o->pos) : "");
		}
		e->elem_index = e->col_index = e->rand_base = NULL;
		e->depth--;
		emit_line(e, "}");
	}
	if (e->row.steps && !e->k->row.reread)  /* what this pass computed and is worth keeping stays in registers */
		for (i = 1; i < f->ntensor; i++)
			have[i] = have[i] || (need[i] && kir_row_kept(f, i));
}

static void
row_pass_close(Emit *e)
{
	e->depth--;
	emit_line(e, "}");
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
		    e->k->row.view[o->out] == VIEW_REDUCED || e->k->row.view[o->out] == VIEW_SELECTED ||
		    level[o->out] > upto || !row_computes(e->f, o))
			continue;
		emit_line(e, "%s%s = %s;   // %s%s", assign ? "" : "const float ", emit_tname(e, PFX_ROW, o->out),
		          emit_op_text3(e, o, row_operand(e, &o->in[0]), o->nin > 1 ? row_operand(e, &o->in[1]) : "",
		                        o->nin > 2 ? row_operand(e, &o->in[2]) : "", NULL),
		          op_info[o->kind].name, emit_pos(e, o->pos));
		done[o->out] = true;
	}
}

/*
 * The scratch array of the row's block reduction number NRED.  Reductions
 * alternate two arrays, so each needs one barrier (see wsf_block).  A
 * row with an odd number of them would start the next row on the array it
 * ended on; there the row's stage counter's parity (wsf_flip) flips the
 * order every other row.
 */
static const char *
row_scratch(Emit *e, int nred)
{
	if (!e->row.flip)
		return arena_printf(e->c->arena, "wsf_red + %d", 32 * (nred & 1));
	return arena_printf(e->c->arena, "wsf_red + (wsf_flip ? %d : %d)", 32 * ((nred + 1) & 1), 32 * (nred & 1));
}

/* The per-row inputs (a value per row, or a scalar), read once a row into r_NAME; DONE marks them. */
static void
emit_row_inputs(Emit *e, bool *done)
{
	const Fusion *f = e->f;
	int i;

	for (i = 1; i < f->ntensor; i++) {
		int t = i;
		const KParam *p = row_leaf(e, t) ? emit_param_of(e, t, false) : NULL;

		if (!p || row_full(e->k, t))   /* !p: not loaded (an input no op reads: Tensor.unread) */
			continue;
		if (dtype_is_int(p->dtype)) {   /* rand_like's seed or offset, a label (schedule.c): a 64-bit integer */
			emit_line(e, "const long long %s = (long long)%s[%s];%s", emit_tname(e, PFX_ROW, t),
			          emit_param_name(e, p), p->at ? row_at(e, p) : e->k->row.view[t] == VIEW_COL ? "row" : "0",
			          emit_pos(e, f->tensor[t].pos));
			done[t] = true;
			continue;
		}
		if (p->bounds && p->bounds->index_n) {   /* a gather of one element a row: 0 outside the dim */
			const KParam *ix = &e->k->param[p->bounds->index_param];

			emit_line(e, "const float %s = (unsigned long long)%s[%s] < (unsigned long long)(%s) ? %s(%s + %s) : "
			          "0.0f;%s", emit_tname(e, PFX_ROW, t), emit_param_name(e, ix), emit_expr_str(e, ix->at),
			          emit_expr_str(e, p->bounds->index_n), p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1",
			          emit_param_name(e, p), row_at(e, p), emit_pos(e, f->tensor[t].pos));
			done[t] = true;
			continue;
		}
		emit_line(e, "const float %s = %s(%s + %s);%s", emit_tname(e, PFX_ROW, t),
		          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_param_name(e, p),
		          p->at ? row_at(e, p) : e->k->row.view[t] == VIEW_COL ? "row" : "0", emit_pos(e, f->tensor[t].pos));
		done[t] = true;
	}
}

/*
 * Reduction O across the row's threads, from each thread's partial VALUE (C
 * text) into r_NAME (declared here when DECL): the CTA's (wsf_block_*), or a
 * row's lanes (RowPlan.lanes: wsf_lanes_* by shuffles within a warp,
 * wsf_group_* past one).  Those through the scratch take array number NRED;
 * consecutive reductions alternate arrays, so each needs one barrier, not two.
 */
static void
emit_block_reduce(Emit *e, const Op *o, const char *value, int nred, bool decl)
{
	int lanes = e->k->row.lanes;
	const char *fn = !lanes ? "block" : lanes <= 32 ? "lanes" : "group";
	const char *tmpl = lanes ? arena_printf(e->c->arena, "%d, ", lanes) : "";
	const char *scratch = lanes && lanes <= 32 ? "" : arena_printf(e->c->arena, ", %s", row_scratch(e, nred));

	emit_line(e, "%s%s = wsf_%s<%s%s>(%s%s)%s;   // %s%s%s%s", decl ? "const float " : "",
	          emit_tname(e, PFX_ROW, o->out), fn, tmpl, emit_fold(o), value, scratch,
	          o->kind == OP_MEAN ? " / (float)cols" : "", op_info[o->kind].name, o->origin ? " of " : "",
	          o->origin ? o->origin : "", emit_pos(e, o->pos));
}

/* In the output pass, at element e: the full-row outputs. */
static void
emit_row_stores(Emit *e)
{
	const Fusion *f = e->f;
	int j;

	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];
		const KParam *p = emit_param_of(e, out->tensor, true);
		const char *suf = emit_suffix(out->dtype), *v = row_value(e, out->tensor), *at;

		if (!row_full(e->k, out->tensor))
			continue;
		/* a row broadcast over rows ([cols]) has one copy: the CTA of row 0 writes it */
		at = e->k->row.view[out->tensor] == VIEW_ROW ? "e" : "row * cols + e";
		if (e->k->row.view[out->tensor] == VIEW_ROW)
			emit_line(e, "if (row == 0) {   // '%s' has no rows: one copy, from row 0", f->tensor[out->tensor].name);
		e->depth += e->k->row.view[out->tensor] == VIEW_ROW;
		/* the ragged end: a guarded, unrolled loop keeps the values in registers */
		emit_line(e, "if (e + %d <= cols) {%s", VEC, emit_pos(e, out->pos));
		emit_line(e, "    wsf_store8%s(%s + %s, %s);", suf, emit_param_name(e, p), at, v);
		emit_line(e, "} else {");
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "        if (e + v < cols)");
		emit_line(e, "            wsf_store1%s(%s + %s + v, %s[v]);", suf, emit_param_name(e, p), at, v);
		emit_line(e, "}");
		if (e->k->row.view[out->tensor] == VIEW_ROW) {
			e->depth--;
			emit_line(e, "}");
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
		const KParam *p = emit_param_of(e, out->tensor, true);

		if (row_full(e->k, out->tensor) || e->k->row.view[out->tensor] == VIEW_REDUCED ||
		    e->k->row.view[out->tensor] == VIEW_SELECTED)
			continue;
		emit_line(e, "if (%s)%s", e->k->row.lanes ? "wsf_lane == 0 && wsf_live" : "threadIdx.x == 0",
		          emit_pos(e, out->pos));
		emit_line(e, "    wsf_store1%s(%s + %s, %s);", emit_suffix(out->dtype), emit_param_name(e, p),
		          e->k->row.view[out->tensor] == VIEW_COL ? "row" : "0", emit_tname(e, PFX_ROW, out->tensor));
	}
}

/* At the row's end: each sum over the rows of a per-row value adds the row's (every thread, the same). */
static void
emit_outer_scalars(Emit *e)
{
	const Fusion *f = e->f;
	int i;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *acc = emit_tname(e, PFX_ACC, o->out), *x = emit_tname(e, PFX_ROW, o->in[0].tensor);

		if (outer_reduction(e->k, o, false))
			emit_line(e, "%s = %s;   // %s over the rows%s", acc, emit_fold_of(e, o, acc, x),
			          op_info[o->kind].name, emit_pos(e, o->pos));
	}
}

/* In the output pass, at element e: each sum over the rows adds this row's 8 elements (RowPlan.outer). */
static void
emit_outer_sums(Emit *e)
{
	const Fusion *f = e->f;
	int i;

	for (i = 1; i < f->nop && !outer_reduction(e->k, &f->op[i], true); i++)
		;
	if (i == f->nop)
		return;
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
	emit_line(e, "    if (e + v < cols) {");
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *acc = arena_printf(e->c->arena, "%s[it][v]", emit_tname(e, PFX_ACC, o->out));
		const char *x = arena_printf(e->c->arena, "%s[v]", row_value(e, o->in[0].tensor));

		if (outer_reduction(e->k, o, true))
			emit_line(e, "        %s = %s;   // %s over the rows%s", acc, emit_fold_of(e, o, acc, x),
			          op_info[o->kind].name, emit_pos(e, o->pos));
	}
	emit_line(e, "    }");
}

static void
emit_row_compute(Emit *e, const Stmt *s)
{
	Kernel *k = e->k;
	Fusion *f = e->f;
	int *level = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *level);
	bool *done = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *done);
	bool *need, *target, *have = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *have), outs;
	int i, j, L, maxl = kir_row_levels(f, k->row.view, k->row.chunk > 0, level, NULL), nred = 0;

	emit_line(e, "{   // compute row %s: %s", emit_expr_str(e, s->u.compute.row), s->comment ? s->comment : "");
	e->depth++;
	if (k->row.lanes) {
		emit_line(e, "const long long wsf_row = %s + threadIdx.x / %d;   // %d threads a row, %d rows a CTA",
		          emit_expr_str(e, s->u.compute.row), k->row.lanes, k->row.lanes, k->tile_rows);
		emit_line(e, "const bool wsf_live = wsf_row < rows;   // rows past the end compute the last one and "
		          "store nothing");
		emit_line(e, "const long long row = wsf_live ? wsf_row : rows - 1;");
		emit_line(e, "const int wsf_lane = threadIdx.x %% %d;", k->row.lanes);
	} else {
		emit_line(e, "const long long row = %s;", emit_expr_str(e, s->u.compute.row));
	}
	e->row.steps = k->row.steps;
	if (e->row.steps) {
		emit_line(e, "// the row in registers: this thread's %d x %d elements of each value, computed %s",
		          e->row.steps, VEC, k->row.reread ? "again in every pass from the row loaded again" : "once");
		for (i = 1; i < f->ntensor; i++)
			if (emit_row_raw(e, i))
				emit_line(e, "uint4 %s[%d];   // as loaded, 2 elements a register, unpacked where "
				          "used%s", emit_tname(e, PFX_RAW, i), e->row.steps, emit_pos(e, f->tensor[i].pos));
			else if (row_full(k, i) && (f->tensor[i].kind == TK_INPUT || f->tensor[i].kind == TK_VALUE))
				emit_line(e, "float %s[%d][%d];%s", emit_tname(e, PFX_VALUE, i), e->row.steps, VEC,
				          emit_pos(e, f->tensor[i].pos));
	}
	for (i = 0; i < s->nreads; i++)
		emit_line(e, "const %s *%s = %s;", emit_type(k->buf[s->reads[i].buf].dtype),
		          emit_curname(e, s->reads[i].buf), emit_buf_at(e, s->reads[i].buf, s->reads[i].slot));
	if (k->row.reread)
		emit_line(e, "const wsf_u64 wsf_keep = wsf_l2_keep(), wsf_drop = wsf_l2_drop();   // L2: keep the "
		          "row for the next pass, or let it go after the last");
	emit_row_inputs(e, done);
	/* block reductions a row */
	for (i = 1, j = 0; i < f->nop; i++)
		j += row_reduction(k, &f->op[i]);
	if ((j & 1) && s->nreads && s->reads[0].slot->kind == EX_MOD) {
		/* the stage counter: the slot is counter % S */
		emit_line(e, "const bool wsf_flip = (%s) & 1;   // odd rows start their reductions on the other scratch array",
		          emit_expr_str(e, s->reads[0].slot->a));
		e->row.flip = true;
	}
	emit_row_scalars(e, level, 0, done, false);  /* per-row values that need no reduction */
	for (j = 0, outs = false; j < f->nout; j++)
		outs |= row_full(k, f->out[j].tensor);
	for (L = 1; L <= maxl; L++) {
		if (k->row.reread)
			e->row.policy = L < maxl || outs ? "wsf_keep" : "wsf_drop";
		need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
		target = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *target);
		for (i = 1; i < f->nop; i++)
			if (row_reduction(k, &f->op[i]) && level[f->op[i].out] == L) {
				row_needs(e, f->op[i].in[0].tensor, need);
				target[f->op[i].in[0].tensor] = true;
			}
		/*
		 * In register mode the compute releases its stages at its first
		 * barrier (u.compute.releases): every staged row is read in the first pass,
		 * also one only the outputs use.
		 */
		for (i = 0; i < f->ninput && L == 1 && e->row.steps; i++)
			if (emit_buf_of(k, f->input[i]) < k->nbuf)
				need[f->input[i]] = true;
		emit_line(e, "// pass %d over the row: the reductions of level %d", L, L);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (row_reduction(k, o) && level[o->out] == L)
				emit_line(e, "float %s = %s;", emit_tname(e, PFX_ACC, o->out), emit_fold_identity(o));
		}
		row_pass_open(e, target, need, have);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];
			const char *acc = emit_tname(e, PFX_ACC, o->out);
			const char *in = row_value(e, o->in[0].tensor);

			if (!row_reduction(k, o) || level[o->out] != L)
				continue;
			emit_line(e, "%s = wsf_fold8<%s>(%s, %s, cols - e);", acc, emit_fold(o), acc, in);
		}
		row_pass_close(e);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (!row_reduction(k, o) || level[o->out] != L)
				continue;
			emit_block_reduce(e, o, emit_tname(e, PFX_ACC, o->out), nred++, true);
			done[o->out] = true;
		}
		emit_row_scalars(e, level, L, done, false);
	}
	/* the next row's first reduction takes wsf_red + 0 again; one CTA a row has no next row */
	if ((nred & 1) && !e->row.flip && k->persistent)
		emit_line(e, "__syncthreads();   // every thread has read the last partials: the next row may "
		          "reuse them");
	e->row.flip = false;
	emit_row_scalars(e, level, maxl, done, false);
	/* the last pass: full-row outputs */
	need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
	target = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *target);
	for (j = 0; j < f->nout; j++) {
		row_needs(e, f->out[j].tensor, need);
		target[f->out[j].tensor] = true;
	}
	for (i = 1; i < f->nop; i++)   /* and the values summed over the rows, and those topk selects among */
		if (outer_reduction(k, &f->op[i], true) || (f->op[i].kind == OP_TOPK && e->row.steps)) {
			row_needs(e, f->op[i].in[0].tensor, need);
			target[f->op[i].in[0].tensor] = true;
		}
	for (j = 0; j < f->nout && !need[f->out[j].tensor]; j++)
		;
	for (i = 1; i < f->nop && !outer_reduction(k, &f->op[i], true) && !(f->op[i].kind == OP_TOPK && e->row.steps); i++)
		;
	if (j < f->nout || i < f->nop) {
		if (k->row.reread)
			e->row.policy = "wsf_drop";
		emit_line(e, "// the last pass: the full-row outputs");
		row_pass_open(e, target, need, have);
		if (k->row.lanes)
			emit_line(e, "if (wsf_live) {");
		e->depth += k->row.lanes > 0;
		emit_row_stores(e);
		e->depth -= k->row.lanes > 0;
		if (k->row.lanes)
			emit_line(e, "}");
		emit_outer_sums(e);
		row_pass_close(e);
	}
	emit_topk(e);
	emit_outer_scalars(e);
	emit_row_scalar_stores(e);
	e->row.steps = 0;
	e->row.policy = NULL;
	e->depth--;
	emit_line(e, "}");
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
		buf_printf(&params, ", const %s *%s", emit_type(k->buf[chunk->reads[i].buf].dtype),
		           emit_curname(e, chunk->reads[i].buf));
	emit_line(e, "// one chunk of the row in pass `pass`, at column `col`: the main and the epilogue loops "
	          "call it");
	emit_line(e, "const auto wsf_chunk = [&](const long long pass, const long long col%s) {", buf_str(&params));
	e->depth++;
	e->row.chunk_col = "col";
	for (L = 1; L <= k->row.passes; L++) {
		bool outputs = L > maxl;

		need = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *need);
		have = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *have);
		if (L == 1)
			emit_line(e, "if (pass == 0) {   // pass 1: %s", outputs ? "the outputs" : "the reductions of level 1");
		else if (L < k->row.passes)
			emit_line(e, "} else if (pass == %d) {   // pass %d: the reductions of level %d", L - 1, L, L);
		else
			emit_line(e, "} else {   // pass %d: %s", L, outputs ? "the outputs" : "the reductions of the last level");
		e->depth++;
		for (i = 1; i < f->nop && !outputs; i++) {
			const Op *o = &f->op[i];

			if (row_reduction(k, o) && level[o->out] == L && !online[o->out])
				row_needs(e, o->in[0].tensor, need);
		}
		for (i = 0; i < f->nout && outputs; i++)
			row_needs(e, f->out[i].tensor, need);
		row_pass_open(e, NULL, need, have);   /* a streamed row: no raw inputs (row_raw) */
		if (outputs)
			emit_row_stores(e);
		for (i = 1; i < f->nop && !outputs; i++) {
			const Op *o = &f->op[i];
			const char *acc = emit_tname(e, PFX_ACC, o->out);
			const char *in = row_value(e, o->in[0].tensor);
			int r;

			if (!row_reduction(k, o) || level[o->out] != L || online[o->out])
				continue;
			if ((r = partner_of(f, online, o->out)) && o->kind == OP_MAX)
				emit_line(e, "wsf_online8(%s, %s, %s, cols - e);   // %s and the sum of exp, online%s",
				          acc, emit_tname(e, PFX_ACC, r), in, op_info[o->kind].name, emit_pos(e, o->pos));
			else if (r)
				emit_line(e, "wsf_welford8(%s, %s, %s, %s, cols - e);   // %s and variance, one pass%s",
				          emit_tname(e, PFX_CNT, r), acc, emit_tname(e, PFX_ACC, r),
				          in, op_info[o->kind].name, emit_pos(e, o->pos));
			else
				emit_line(e, "%s = wsf_fold8<%s>(%s, %s, cols - e);", acc, emit_fold(o), acc, in);
		}
		row_pass_close(e);
		e->depth--;
	}
	if (k->row.passes)
		emit_line(e, "}");
	e->row.chunk_col = NULL;
	e->depth--;
	emit_line(e, "};");
}

static void
find_row_chunk(Stmt *s, void *user)
{
	const Stmt **found = user;

	if (s->kind == ST_COMPUTE && s->u.compute.phase == ROW_CHUNK && !*found)
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
	int i, j, L, maxl = kir_row_levels(f, k->row.view, k->row.chunk > 0, level, online), nred = 0;
	const char *pass = s->u.compute.pass ? emit_expr_str(e, s->u.compute.pass) : NULL;

	/* per-row inputs and the per-row values that need no reduction: ROW_BEGIN sets them */
	for (i = 1; i < f->ntensor; i++)
		done[i] = !row_full(k, i) && level[i] == 0 && (s->u.compute.phase != ROW_BEGIN || row_leaf(e, i));
	switch (s->u.compute.phase) {
	case ROW_BEGIN:
		emit_line(e, "// row %s: %s", emit_expr_str(e, s->u.compute.row), s->comment ? s->comment : "");
		emit_line(e, "const long long row = %s;", emit_expr_str(e, s->u.compute.row));
		emit_row_inputs(e, done);
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (row_reduction(k, o))
				emit_line(e, "float %s = %s, %s;   // %s%s", emit_tname(e, PFX_ACC, o->out), emit_fold_identity(o),
				          emit_tname(e, PFX_ROW, o->out),
				          !online[o->out] ? op_info[o->kind].name : o->kind == OP_SUM ?
				          "sum of exp, online with its max" : "squared deviations, with their mean's pass",
				          emit_pos(e, o->pos));
			if (row_reduction(k, o) && online[o->out] && o->kind == OP_MEAN)
				emit_line(e, "float %s = 0.0f;   // the elements this thread has seen",
				          emit_tname(e, PFX_CNT, o->out));
			if (op_info[o->kind].cls != CLS_REDUCE && !row_full(k, o->out) && level[o->out] > 0 &&
			    k->row.view[o->out] != VIEW_REDUCED)
				emit_line(e, "float %s;%s", emit_tname(e, PFX_ROW, o->out), emit_pos(e, o->pos));
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
			buf_printf(&args, ", %s", emit_buf_at(e, s->reads[i].buf, s->reads[i].slot));
		emit_line(e, "wsf_chunk(%s, %s%s);   // %s", pass, emit_expr_str(e, s->u.compute.col), buf_str(&args),
		          s->comment ? s->comment : "");
		break;
	}
	case ROW_PASS_END:
		for (L = 1; L <= maxl; L++) {
			emit_line(e, "%sif (%s == %d) {   // the end of pass %d: its block reductions", L > 1 ? "} else " : "",
			          pass, L - 1, L);
			e->depth++;
			for (i = 1; i < f->nop; i++) {
				const Op *o = &f->op[i];
				const char *acc = emit_tname(e, PFX_ACC, o->out);

				if (!row_reduction(k, o) || level[o->out] != L)
					continue;
				if (online[o->out]) {
					const char *m = emit_tname(e, PFX_ACC, online[o->out]);
					const char *rm = emit_tname(e, PFX_ROW, online[o->out]);

					if (o->kind == OP_SUM)
						emit_line(e, "%s *= %s == %s ? 1.0f : __expf(%s - %s);   // to the scale of the row's max",
						          acc, m, rm, m, rm);
					else
						emit_line(e, "%s += %s * (%s - %s) * (%s - %s);   // deviations about the row's mean (Chan)",
						          acc, emit_tname(e, PFX_CNT, o->out), m, rm, m, rm);
				}
				/* a mean with a variance in its pass: from each thread's count and mean */
				if ((j = partner_of(f, online, o->out)) && o->kind == OP_MEAN)
					acc = arena_printf(e->c->arena, "%s * %s", emit_tname(e, PFX_CNT, j), acc);
				/* the chunk loops' barriers separate the passes' scratch use */
				emit_block_reduce(e, o, acc, nred++, false);
				done[o->out] = true;
			}
			emit_row_scalars(e, level, L, done, true);
			e->depth--;
		}
		emit_line(e, "}");
		break;
	case ROW_END:
		emit_topk(e);   /* (of an input's row, read again) */
		emit_outer_scalars(e);
		emit_row_scalar_stores(e);
		break;
	default:
		break;
	}
}

/* A row held whole is one compute; a row streamed in chunks, its parts. */
static void
emit_reduction_compute(Emit *e, const Stmt *s)
{
	if (e->k->row.chunk)
		emit_chunk_compute(e, s);
	else
		emit_row_compute(e, s);
}

/*
 * The CTAs per SM the register budget must allow (__launch_bounds__).  A row
 * reduction holds rows in registers and the compiler, left alone, spends
 * them until one CTA fits; ask for as many CTAs as shared memory admits (at
 * most 32 warps: enough to hide the block reductions' barriers).
 */
static int
min_ctas(const Kernel *k)
{
	int n;

	/* direct rows: 48 warps an SM keep enough loads in flight, 40 with twice the loads, 64 holding none */
	if (k->row.direct) {
		n = (k->row.reread ? 2048 : k->row.deep || (k->row.lanes && k->row.steps > 2) ? 1280 : 1536) / k->threads;
		return n < 1 ? 1 : n;
	}
	if (k->row.columns)   /* sums over the rows of full rows: up to 128 registers a thread, 16 warps an SM */
		return 512 / k->threads > 1 ? 512 / k->threads : 1;
	n = (int)(SM_SMEM / (kernel_smem_bytes(k) + CTA_SMEM_RESERVED + 64 * 4));  /* + wsf_red */
	if (n > 1024 / k->threads)
		n = 1024 / k->threads;
	return n < 1 ? 1 : n;
}

static void
emit_frame(Emit *e)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	int i;

	emit_line(e, "__shared__ float wsf_red[64];   // one partial per warp for block reductions, twice");
	if (fusion_has_op(f, OP_TOPK) && !k->row.lanes)
		emit_line(e, "__shared__ unsigned wsf_topk[1028];   // topk's histogram, its choices, the chosen (wsf_block_topk)");
	if (!k->row.outer)
		return;
	emit_line(e, "__shared__ float wsf_outer[%d];   // where the sums over the rows meet, a float a thread",
	          k->consumer_threads);
	for (i = 1; i < f->nop; i++)
		if (outer_reduction(k, &f->op[i], false))
			emit_line(e, "float %s = %s;   // %s of %s over the rows, this CTA's rows'%s",
			          emit_tname(e, PFX_ACC, f->op[i].out), emit_fold_identity(&f->op[i]), op_info[f->op[i].kind].name,
			          f->tensor[f->op[i].in[0].tensor].name, emit_pos(e, f->op[i].pos));
		else if (outer_reduction(k, &f->op[i], true)) {
			const char *acc = emit_tname(e, PFX_ACC, f->op[i].out);

			emit_line(e, "float %s[%d][%d];   // %s of %s over the rows, this thread's columns of this CTA's rows%s",
			          acc, k->row.steps, VEC, op_info[f->op[i].kind].name, f->tensor[f->op[i].in[0].tensor].name,
			          emit_pos(e, f->op[i].pos));
			emit_line(e, "#pragma unroll");
			emit_line(e, "for (int it = 0; it < %d; it++)", k->row.steps);
			emit_line(e, "    #pragma unroll");
			emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "        %s[it][v] = %s;", acc, emit_fold_identity(&f->op[i]));
		}
}

static void
row_stmt(Emit *e, const Stmt *s)
{
	if (s->kind == ST_ROW_MEET)
		emit_row_meet(e, s);
}

static void
emit_compute_params(Emit *e, Buf *params, Buf *args)
{
	const Fusion *f = e->f;
	int i;

	buf_printf(params, "%s    float *const wsf_red", params->len ? ",\n" : "");
	buf_printf(args, "%swsf_red", args->len ? ", " : "");
	if (fusion_has_op(f, OP_TOPK) && !e->k->row.lanes) {   /* (the frame's wsf_topk) */
		buf_printf(params, ",\n    unsigned *const wsf_topk");
		buf_printf(args, ", wsf_topk");
	}
	for (i = 1; i < f->nop; i++) {   /* the sums over the rows, this thread's */
		const char *acc = emit_tname(e, PFX_ACC, f->op[i].out);

		if (outer_reduction(e->k, &f->op[i], true))
			buf_printf(params, ",\n    float (&%s)[%d][%d]", acc, e->k->row.steps, VEC);
		else if (outer_reduction(e->k, &f->op[i], false))
			buf_printf(params, ",\n    float &%s", acc);
		else
			continue;
		buf_printf(args, ", %s", acc);
	}
}

/* A row streamed in chunks: its computes' parts share the row's variables, so they are written in place. */
static bool
in_place(const Kernel *k)
{
	return k->row.chunk > 0;
}

const EmitFamily emit_reduction_family = {
	.compute = emit_reduction_compute,
	.min_ctas = min_ctas,
	.frame = emit_frame,
	.compute_params = emit_compute_params,
	.in_place = in_place,
	.stmt = row_stmt,
	.unit = "row",
	.device = codegen_device_reduction_cuh,
};
