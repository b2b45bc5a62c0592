/*
 * emit_reduce_grid.c: where sums split across CTAs meet.  A pointwise
 * kernel's reductions over rows or over every element (PointwisePlan.reduce,
 * passes/lower_reduce_grid.c): the running sums' registers (the family's
 * frame) and ST_REDUCE, where an item's sums meet; and a row kernel's
 * results after its rows (RowPlan.outer, ST_ROW_MEET: emit_row_meet, below,
 * which emit_reduction.c's statement hook calls).  The compute (emit_pointwise.c) folds each thread's 8
 * columns of every tile into acc_NAME (a sum, max or product: emit_ops.c's emit_fold_of); "sums" below
 * are those partial results, whichever the fold.
 *
 * ST_REDUCE, every thread of the CTA together, at an item's last tile, calls
 * wsf_meet, a lambda the frame defines (the main and the epilogue loops
 * both meet):
 *   1. each reduction in turn through the scratch buffer: a column's
 *      threads' sums, in thread order, by the column's thread (RED_COLUMNS;
 *      RED_ALL: each thread's 8, then a warp's by shuffles, then the warps'
 *      in order, by thread 0), the registers reset for the next item;
 *   2. a unit split across CTAs (splits > 1): the item's sums to its
 *      workspace slot, a fence, and an arrival on the unit's flag; the last
 *      CTA to arrive adds every item's slot in item order and sets the flag
 *      back to 0 for the next launch;
 *   3. the CTA that holds a unit's whole sums computes the late values (ops
 *      of the results: mean's division, a cast, the ops after) and stores
 *      the late outputs, a column a thread.
 * No order depends on timing: a grid gives the same bits run after run.
 */
#include "codegen.h"

static bool
is_reduction(const Op *o)
{
	return op_info[o->kind].cls == CLS_REDUCE;
}

/* VAR, each thread's, folded over the CTA into thread 0's: a warp's by shuffles, then the warps' in order. */
static void
block_fold(Emit *e, const Op *o, const char *var)
{
	emit_line(e, "for (int o = 16; o > 0; o >>= 1)   // a warp's, by shuffles");
	emit_line(e, "    %s = %s;", var,
	          emit_fold_of(e, o, var, arena_printf(e->c->arena, "__shfl_xor_sync(0xffffffffu, %s, o)", var)));
	emit_line(e, "if (threadIdx.x %% 32 == 0)");
	emit_line(e, "    red[threadIdx.x / 32] = %s;", var);
	emit_line(e, "__syncthreads();");
	emit_line(e, "if (threadIdx.x == 0)");
	emit_line(e, "    for (int w = 1; w < %d; w++)", e->k->consumer_threads / 32);
	emit_line(e, "        %s = %s;", var, emit_fold_of(e, o, var, "red[w]"));
	emit_line(e, "__syncthreads();   // the scratch is free for the next");
}

/* Step 1 for reduction O: the CTA's sums of its columns into TOT (RED_ALL: thread 0's one). */
static void
cta_sums(Emit *e, const Op *o, const char *tot)
{
	const Kernel *k = e->k;
	const char *acc = emit_tname(e, PFX_ACC, o->out);
	int threads = k->consumer_threads, cols = k->tile_cols;

	emit_line(e, "float %s = %s;", tot, emit_fold_identity(o));
	if (k->pw.reduce == RED_COLUMNS) {   /* thread t's columns are (8 t) %% cols + v, rows (8 t) / cols */
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    red[threadIdx.x * %d + v] = %s[v];", VEC, acc);
		emit_line(e, "__syncthreads();");
		emit_line(e, "if (threadIdx.x < %d)   // column threadIdx.x: its threads' sums, in order", cols);
		emit_line(e, "    for (int t = 0; t < %d; t++)", threads * VEC / cols);
		emit_line(e, "        %s = %s;", tot, emit_fold_of(e, o, tot, arena_printf(e->c->arena, "red[t * %d + threadIdx.x]",
		                                                                    cols)));
		emit_line(e, "__syncthreads();   // the scratch is free for the next");
	} else {
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    %s = %s;", tot, emit_fold_of(e, o, tot, arena_printf(e->c->arena, "%s[v]", acc)));
		block_fold(e, o, tot);
	}
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
	emit_line(e, "    %s[v] = %s;   // the next item starts from nothing", acc, emit_fold_identity(o));
}

/* Step 2: the items of a split unit meet in the workspace; HOLDS: whether this thread holds a result after. */
static void
meet(Emit *e, const char *const *tot, const char *holds)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	const PointwisePlan *w = &k->pw;
	const char *work = k->param[w->work_param].name;
	const char *unit = "unit", *splits = "splits";   /* (wsf_meet's parameters) */
	int per = w->reduce == RED_COLUMNS ? k->tile_cols : 1, i, j;

	emit_line(e, "if (%s > 1) {   // the unit's items meet in the workspace: the last to arrive adds them", splits);
	e->depth++;
	emit_line(e, "float *const slots = (float *)(%s + %d);   // after the flags, %d floats an item", work,
	          4 * SK_MAX_CTAS, w->slot / 4);
	emit_line(e, "unsigned *const flag = (unsigned *)%s + %s;", work, unit);
	emit_line(e, "if (%s) {", holds);
	for (i = 1, j = 0; i < f->nop; i++)
		if (is_reduction(&f->op[i]))
			emit_line(e, "    slots[item * %d + %d + %s] = %s;", w->slot / 4, j++ * per,
			          per > 1 ? "threadIdx.x" : "0", tot[i]);
	emit_line(e, "    __threadfence();   // the sums land before the arrival");
	emit_line(e, "}");
	emit_line(e, "const bool last = __syncthreads_or(threadIdx.x == 0 && atomicAdd(flag, 1u) == (unsigned)%s - 1);",
	          splits);
	emit_line(e, "%s = %s && last;", holds, holds);
	emit_line(e, "if (last) {");
	e->depth++;
	emit_line(e, "__threadfence();   // the other items' sums, after their arrivals");
	if (w->reduce == RED_ALL) {   /* every thread folds items threadIdx.x, + threads, ...; then the CTA's */
		for (i = 1, j = 0; i < f->nop; i++) {
			if (!is_reduction(&f->op[i]))
				continue;
			emit_line(e, "%s = %s;", tot[i], emit_fold_identity(&f->op[i]));
			emit_line(e, "for (long long s = threadIdx.x; s < %s; s += %d)", splits, k->consumer_threads);
			emit_line(e, "    %s = %s;", tot[i], emit_fold_of(e, &f->op[i], tot[i], arena_printf(e->c->arena,
			          "__ldcg(slots + s * %d + %d)", w->slot / 4, j++)));
			block_fold(e, &f->op[i], tot[i]);
		}
		emit_line(e, "%s = threadIdx.x == 0;", holds);
	} else {   /* a column a thread: the items in order */
		emit_line(e, "if (%s) {", holds);
		for (i = 1; i < f->nop; i++)
			if (is_reduction(&f->op[i]))
				emit_line(e, "    %s = %s;", tot[i], emit_fold_identity(&f->op[i]));
		emit_line(e, "    #pragma unroll 8");
		emit_line(e, "    for (long long s = 0; s < %s; s++) {", splits);
		for (i = 1, j = 0; i < f->nop; i++)
			if (is_reduction(&f->op[i]))
				emit_line(e, "        %s = %s;", tot[i], emit_fold_of(e, &f->op[i], tot[i], arena_printf(e->c->arena,
				          "__ldcg(slots + (%s * %s + s) * %d + %d + threadIdx.x)", unit, splits, w->slot / 4,
				          j++ * per)));
		emit_line(e, "    }");
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "    if (threadIdx.x == 0)");
	emit_line(e, "        *flag = 0;   // for the next launch");
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/* Step 3: the late values from the sums TOT, and the late outputs, where HOLDS. */
static void
late_values(Emit *e, const char *const *tot, const char *holds)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	const char *at = k->pw.reduce == RED_COLUMNS ? "group * cols + col" : "0";   /* (wsf_meet's group) */
	int i, j;

	emit_line(e, "if (%s) {   // the results, a column a thread", holds);
	e->depth++;
	emit_line(e, "const int v = 0;");
	for (i = 0; i < f->ninput; i++) {   /* the inputs of the results' ops: a scalar, a column's, a result's */
		const Tensor *x = &f->tensor[f->input[i]], *d = &f->tensor[k->domain];
		const KParam *p = emit_param_of(e, f->input[i], false);
		int j2, n = 0, kept = 0;

		if (!k->pw.late[f->input[i]] || !p)
			continue;
		for (j2 = 0; j2 < x->rank; j2++)   /* (its dims other than 1: none, the columns', or a result's) */
			if (!dim_is_one(x->dim[j2]))
				n++, kept = j2;
		e->value[f->input[i]] = emit_tname(e, PFX_VALUE, f->input[i]);
		emit_line(e, "const float %s[1] = {%s(%s + %s)};%s", e->value[f->input[i]],
		          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_param_name(e, p),
		          !n ? "0" : n == 1 && dim_equal(x->dim[kept], d->dim[d->rank - 1]) ? "col" : at,
		          emit_pos(e, x->pos));
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out), *in[3] = {"", "", ""};

		if (!k->pw.late[o->out])
			continue;
		e->value[o->out] = v;
		if (is_reduction(o)) {
			emit_line(e, "const float %s[1] = {%s%s};   // %s%s", v, tot[i], o->kind != OP_MEAN ? "" :
			          arena_printf(e->c->arena, " / (float)(%s)", emit_expr_str(e, k->pw.extent)),
			          op_info[o->kind].name, emit_pos(e, o->pos));
			continue;
		}
		for (j = 0; j < o->nin; j++)
			in[j] = o->in[j].tensor ? arena_printf(e->c->arena, "%s[v]", e->value[o->in[j].tensor]) : NULL;
		emit_line(e, "const %s %s[1] = {%s};   // %s%s", emit_reg_type(f->tensor[o->out].dtype), v,
		          emit_op_typed(e, o, in), op_info[o->kind].name, emit_pos(e, o->pos));
	}
	for (j = 0; j < f->nout; j++) {
		const Output *out = &f->out[j];

		if (k->pw.late[out->tensor])
			emit_line(e, "wsf_store1%s(%s + %s, %s[0]);%s", emit_suffix(out->dtype),
			          emit_param_name(e, emit_param_of(e, out->tensor, true)), at, e->value[out->tensor],
			          emit_pos(e, out->pos));
	}
	e->depth--;
	emit_line(e, "}");
}

/*
 * The lambda wsf_meet(item, unit, group, col0, splits), in the frame before
 * the tile loops: an item's sums meet (steps 1 to 3), at its last tile of
 * the main or the epilogue loop (ST_REDUCE calls it).
 */
static void
emit_meet(Emit *e)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	const PointwisePlan *w = &k->pw;
	const char **tot = arena_alloc(e->c->arena, (size_t)f->nop * sizeof *tot);
	int i;

	emit_line(e, "// an item's sums meet, at its last tile: the CTA's threads' sums, then the unit's items'");
	emit_line(e, "const auto wsf_meet = [&](const long long item, const long long unit, const long long group,");
	emit_line(e, "                          const long long col0, const long long splits) {");
	e->depth++;
	emit_line(e, "float *const red = (float *)%s;", emit_buf_at(e, w->scratch, NULL));
	for (i = 1; i < f->nop; i++)
		if (is_reduction(&f->op[i])) {
			tot[i] = arena_printf(e->c->arena, "tot_%d", i);
			cta_sums(e, &f->op[i], tot[i]);
		}
	if (w->reduce == RED_COLUMNS) {
		emit_line(e, "const long long col = col0 + threadIdx.x;");
		emit_line(e, "bool holds = threadIdx.x < %d && col < cols;", k->tile_cols);
	} else {
		emit_line(e, "bool holds = threadIdx.x == 0;");
	}
	meet(e, tot, "holds");
	late_values(e, tot, "holds");
	e->depth--;
	emit_line(e, "};");
}

/* The frame: each reduction's running sums, 8 columns a thread, from before the first tile. */
void
emit_reduce_frame(Emit *e)
{
	const Fusion *f = e->f;
	int i;

	if (!e->k->pw.reduce)
		return;
	for (i = 1; i < f->nop; i++)
		if (is_reduction(&f->op[i])) {
			const char *acc = emit_tname(e, PFX_ACC, f->op[i].out);

			emit_line(e, "float %s[%d];   // %s of %s, this item's elements so far%s", acc, VEC,
			          op_info[f->op[i].kind].name, f->tensor[f->op[i].in[0].tensor].name, emit_pos(e, f->op[i].pos));
			emit_line(e, "#pragma unroll");
			emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
			emit_line(e, "    %s[v] = %s;", acc, emit_fold_identity(&f->op[i]));
		}
	emit_meet(e);
}

void
emit_reduce(Emit *e, const Stmt *s)
{
	const PointwisePlan *w = &e->k->pw;

	emit_line(e, "wsf_meet(%s, %s, %s, %s, %s);%s", emit_expr_str(e, w->item), emit_expr_str(e, w->unit),
	          emit_expr_str(e, w->group), emit_expr_str(e, w->col0), emit_expr_str(e, w->splits), emit_comment(e, s));
}

/* What the compute function takes besides the kernel's: the running sums, and the group's end. */
void
emit_reduce_params(Emit *e, Buf *params, Buf *args)
{
	const Fusion *f = e->f;
	const PointwisePlan *w = &e->k->pw;
	int i;

	if (!w->reduce)
		return;
	for (i = 1; i < f->nop; i++)
		if (is_reduction(&f->op[i])) {
			buf_printf(params, "%s    float (&%s)[%d]", params->len ? ",\n" : "", emit_tname(e, PFX_ACC, f->op[i].out), VEC);
			buf_printf(args, "%s%s", args->len ? ", " : "", emit_tname(e, PFX_ACC, f->op[i].out));
		}
	if (w->row_end->kind == EX_VAR && w->row_end->var != e->k->rows_var) {
		buf_printf(params, "%s    const long long %s", params->len ? ",\n" : "", e->k->var[w->row_end->var].name);
		buf_printf(args, "%s%s", args->len ? ", " : "", e->k->var[w->row_end->var].name);
	}
}

/* Is T, a row kernel's result after its rows (VIEW_REDUCED), a column's (over a full row's values), or one? */
static bool
result_columns(const Kernel *k, int t)
{
	const Fusion *f = k->fusion;
	const Op *o = &f->op[f->tensor[t].def];
	int j;

	if (is_reduction(o))
		return k->row.view[o->in[0].tensor] == VIEW_FULL;
	for (j = 0; j < o->nin; j++)
		if (o->in[j].tensor && result_columns(k, o->in[j].tensor))
			return true;
	return false;
}

/*
 * The results after the rows of one kind (COLUMNS: a column's, at AT; else
 * the one values, at 0), from the reductions' totals TOT[op] (a mean
 * divided by the rows), the ops of them in order, and their outputs.
 */
static void
row_results(Emit *e, const char *const *tot, bool columns, const char *at)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out), *in[3] = {"", "", ""};

		if (k->row.view[o->out] != VIEW_REDUCED || result_columns(k, o->out) != columns)
			continue;
		e->value[o->out] = v;
		if (is_reduction(o)) {
			emit_line(e, "const float %s[1] = {%s%s};   // %s over the rows%s", v, tot[i], o->kind != OP_MEAN ? "" :
			          arena_printf(e->c->arena, " / (float)%s", k->var[k->rows_var].name), op_info[o->kind].name,
			          emit_pos(e, o->pos));
			continue;
		}
		for (j = 0; j < o->nin; j++)
			in[j] = o->in[j].tensor ? arena_printf(e->c->arena, "%s[0]", e->value[o->in[j].tensor]) : NULL;
		emit_line(e, "const %s %s[1] = {%s};   // %s%s", emit_reg_type(f->tensor[o->out].dtype), v,
		          emit_op_typed(e, o, in), op_info[o->kind].name, emit_pos(e, o->pos));
	}
	for (j = 0; j < f->nout; j++)
		if (k->row.view[f->out[j].tensor] == VIEW_REDUCED && result_columns(k, f->out[j].tensor) == columns)
			emit_line(e, "wsf_store1%s(%s + %s, %s[0]);%s", emit_suffix(f->out[j].dtype),
			          emit_param_name(e, emit_param_of(e, f->out[j].tensor, true)), at, e->value[f->out[j].tensor],
			          emit_pos(e, f->out[j].pos));
}

/*
 * Step 3 of the meeting, for the results of one kind (COLUMNS: a column's;
 * else the one values, at floats BASE on of a slot): each reduction's
 * slots added by the slices of threads in the block the caller opened
 * (width, slices, lane, slice, live; col for the columns), each slice
 * every slices-th slot in order, then the slices in order by slice 0,
 * which computes and stores the results.
 */
static void
row_meet_fold(Emit *e, const char *splits, const char **tot, bool columns, int base)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	int i, r, slot = k->row.slot / 4;

	for (i = 1, r = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (!is_reduction(o) || k->row.view[o->out] != VIEW_REDUCED || result_columns(k, o->out) != columns)
			continue;
		tot[i] = arena_printf(e->c->arena, "tot_%d", i);
		emit_line(e, "float %s = %s;   // %s%s", tot[i], emit_fold_identity(o), f->tensor[o->out].name, emit_pos(e, o->pos));
		emit_line(e, "if (live)");
		emit_line(e, "    for (long long q = slice; q < %s; q += slices)", splits);
		emit_line(e, "        %s = %s;", tot[i], emit_fold_of(e, o, tot[i], arena_printf(e->c->arena,
		          "__ldcg(slots + q * %d + %d%s)", slot, columns ? r++ * k->row.cap : base + r++,
		          columns ? " + col" : "")));
		emit_line(e, "wsf_outer[threadIdx.x] = %s;", tot[i]);
		emit_line(e, "__syncthreads();");
		emit_line(e, "for (int q = 1; q < slices && slice == 0; q++)");
		emit_line(e, "    %s = %s;", tot[i], emit_fold_of(e, o, tot[i], "wsf_outer[q * width + lane]"));
		emit_line(e, "__syncthreads();   // the scratch is free for the next");
	}
	emit_line(e, "if (live && slice == 0) {");
	e->depth++;
	row_results(e, tot, columns, columns ? "col" : "0");
	e->depth--;
	emit_line(e, "}");
}

/* Step 3, the columns: this CTA's share of them, a column's slots among slices of the CTA's threads. */
static void
row_meet_columns(Emit *e, const char *splits, const char **tot)
{
	int threads = e->k->consumer_threads;

	emit_line(e, "{   // 3. this CTA's columns: a column's slots among the slices, in order");
	e->depth++;
	emit_line(e, "const long long per = (cols + %s - 1) / %s, lo = blockIdx.x * per, hi = lo + per < cols ? lo + per : cols;",
	          splits, splits);
	emit_line(e, "const int width = per < %d ? (int)per : %d, slices = %d / width;", threads, threads, threads);
	emit_line(e, "const int lane = threadIdx.x %% width, slice = threadIdx.x / width;");
	emit_line(e, "for (long long c0 = lo; c0 < hi; c0 += width) {");
	e->depth++;
	emit_line(e, "const long long col = c0 + lane;");
	emit_line(e, "const bool live = slice < slices && col < hi;");
	row_meet_fold(e, splits, tot, true, 0);
	e->depth--;
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/* Step 3, the one values: CTA 0's, every thread a slice of one lane. */
static void
row_meet_scalars(Emit *e, const char *splits, const char **tot, int base)
{
	emit_line(e, "if (blockIdx.x == 0) {   // 3. the one values, CTA 0's: every thread a slice");
	e->depth++;
	emit_line(e, "const int width = 1, slices = %d, lane = 0, slice = threadIdx.x;", e->k->consumer_threads);
	emit_line(e, "const bool live = true;");
	row_meet_fold(e, splits, tot, false, base);
	e->depth--;
	emit_line(e, "}");
}

/*
 * A row kernel's results after its rows (RowPlan.outer; ST_ROW_MEET): each
 * thread holds its columns' sums of the CTA's rows (acc_NAME[step][8],
 * emit_reduction.c), and every thread the sums of the rows' per-row values
 * (acc_NAME).  With one CTA (no workspace) its threads compute the results
 * from them.  Else each CTA writes its sums to its slot of the workspace
 * (the columns', then the one values') and arrives at a barrier of the
 * grid (a count and a generation, the last to arrive resetting the count
 * and opening the next generation; the launch is cooperative, every CTA
 * resident), then adds the slots of its share of the columns: a column's
 * slots split among the threads of SLICES slices, each adding every
 * SLICES-th slot in order, the slices then added in order; CTA 0 adds the
 * one values likewise.  No order depends on timing.
 */
void
emit_row_meet(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	const char *work = k->param[k->row.work_param].name, *splits = emit_expr_str(e, k->row.splits);
	const char **tot = arena_alloc(e->c->arena, (size_t)f->nop * sizeof *tot);
	int i, c = 0, n = 0, threads = k->consumer_threads, slot = k->row.slot / 4;

	for (i = 1; i < f->nop; i++)
		if (is_reduction(&f->op[i]) && k->row.view[f->op[i].out] == VIEW_REDUCED) {
			tot[i] = emit_tname(e, PFX_ACC, f->op[i].out);
			if (result_columns(k, f->op[i].out))
				tot[i] = arena_printf(e->c->arena, "%s[it][v]", tot[i]), c++;
			else
				n++;
		}
	emit_line(e, "{%s", emit_comment(e, s));
	e->depth++;
	emit_line(e, "if (%s == 1 && blockIdx.x == 0) {   // one CTA took every row: its threads hold the sums", splits);
	e->depth++;
	if (c) {
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int it = 0; it < %d; it++) {", k->row.steps);
		emit_line(e, "    const int e = threadIdx.x * %d + it * %d;", VEC, threads * VEC);
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "        if (e + v < cols) {");
		e->depth += 3;
		row_results(e, tot, true, "(e + v)");
		e->depth -= 3;
		emit_line(e, "        }");
		emit_line(e, "}");
	}
	if (n) {
		emit_line(e, "if (threadIdx.x == 0) {");
		e->depth++;
		row_results(e, tot, false, "0");
		e->depth--;
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "} else if (%s > 1) {", splits);
	e->depth++;
	emit_line(e, "float *const slots = (float *)(%s + %d);   // after the flags, %d floats a CTA", work,
	          4 * SK_MAX_CTAS, slot);
	emit_line(e, "float *const mine = slots + (long long)blockIdx.x * %d;", slot);
	if (c) {
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int it = 0; it < %d; it++) {   // 1. this CTA's sums to its slot", k->row.steps);
		emit_line(e, "    const int e = threadIdx.x * %d + it * %d;", VEC, threads * VEC);
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "        if (e + v < cols) {");
		for (i = 1, c = 0; i < f->nop; i++)
			if (is_reduction(&f->op[i]) && k->row.view[f->op[i].out] == VIEW_REDUCED && result_columns(k, f->op[i].out))
				emit_line(e, "            mine[%d + e + v] = %s;", c++ * k->row.cap, tot[i]);
		emit_line(e, "        }");
		emit_line(e, "}");
	}
	if (n) {
		emit_line(e, "if (threadIdx.x == 0) {   // 1. (the one values: every thread holds them)");
		for (i = 1, n = 0; i < f->nop; i++)
			if (is_reduction(&f->op[i]) && k->row.view[f->op[i].out] == VIEW_REDUCED && !result_columns(k, f->op[i].out))
				emit_line(e, "    mine[%d] = %s;", c * k->row.cap + n++, tot[i]);
		emit_line(e, "}");
	}
	emit_line(e, "__threadfence();   // the sums land before the arrival");
	emit_line(e, "__syncthreads();");
	emit_line(e, "if (threadIdx.x == 0) {   // 2. the grid's barrier: every CTA's sums are in");
	emit_line(e, "    unsigned *const count = (unsigned *)%s, *const gen = count + 1;", work);
	emit_line(e, "    const unsigned g = *(volatile unsigned *)gen;");
	emit_line(e, "    __threadfence();   // the generation read before the arrival");
	emit_line(e, "    if (atomicAdd(count, 1u) == (unsigned)%s - 1) {", splits);
	emit_line(e, "        *count = 0;   // for the next launch");
	emit_line(e, "        __threadfence();");
	emit_line(e, "        atomicAdd(gen, 1u);");
	emit_line(e, "    } else {");
	emit_line(e, "        while (*(volatile unsigned *)gen == g)");
	emit_line(e, "            __nanosleep(64);");
	emit_line(e, "    }");
	emit_line(e, "    __threadfence();   // the others' sums, after their arrivals");
	emit_line(e, "}");
	emit_line(e, "__syncthreads();");
	if (c)
		row_meet_columns(e, splits, tot);
	if (n)
		row_meet_scalars(e, splits, tot, c * k->row.cap);
	e->depth--;
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}
