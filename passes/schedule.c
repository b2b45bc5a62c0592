/*
 * schedule.c: pick the kernel family and check that the fusion fits one
 * kernel.  Requires an inferred fusion; leaves f->family set, every op
 * placeable in that family's kernel, every value of a dtype the family
 * holds (integers in pointwise kernels only), and every row stride the kernel will
 * hand to TMA a multiple of 16 bytes at the sizes known now (sizes bound
 * later are checked again at launch), and a matmul fusion's groups and
 * plan (f->mm, schedule_matmul.c) or a row-reduction fusion's plan (f->row,
 * schedule_row.c, under Comp.row_fallback), which lowering reads as const;
 * breaks nothing.  A fusion with a view op is refused (WSF_ERR_UNSUPPORTED)
 * until lowering builds views.  The family's spill retry plans a row again (f->row)
 * when ptxas spilled; nothing else plans after this pass.
 *
 * Families, by the strongest op present:
 *   matmul     one or more matmuls of fusion inputs, then pointwise epilogue ops
 *   reduction  reductions over the innermost axis, with pointwise ops around them
 *   pointwise  everything else, reductions over rows or of all of a vector among it
 *              (lower_reduce_grid.c)
 */
#include "passes.h"

static int
find_kind(const Fusion *f, OpClass cls)
{
	int i;

	for (i = 1; i < f->nop; i++)
		if (op_info[f->op[i].kind].cls == cls)
			return i;
	return 0;
}

static int
check_matmul(Comp *c, const Fusion *f)
{
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (op_info[o->kind].cls == CLS_REDUCE)
			return diag_error(c, o->pos,
			                  "cannot place '%s' (%s) in the matmul kernel: a matmul fusion takes only "
			                  "pointwise ops after its matmuls; split the reduction into its own fusion",
			                  f->tensor[o->out].name, op_info[o->kind].name);
		if (o->kind != OP_MATMUL)
			continue;
		for (j = 0; j < 2; j++) {
			const Tensor *t = &f->tensor[o->in[j].tensor];

			if (t->kind != TK_INPUT)
				return diag_error(c, o->in[j].pos,
				                  "cannot place matmul '%s' in one kernel: its operand '%s' is computed "
				                  "by '%s', but matmul operands must be fusion inputs (loaded by TMA); "
				                  "compute '%s' in its own fusion",
				                  f->tensor[o->out].name, t->name, op_info[f->op[t->def].kind].name,
				                  t->name);
		}
	}
	return 0;
}

/*
 * A row reduction kernel makes one pass over a row per level of reductions
 * (a reduction of a value that needs another reduction is one level up),
 * and each pass recomputes the pointwise ops it needs from the row's
 * inputs: its text and time grow as levels x ops.  Capping the levels
 * keeps them linear in the spec (uncapped, a long chain overwhelmed NVRTC:
 * docs/perf_history.md).  Real fusions nest a few levels (softmax 2,
 * layernorm 2, a layernorm then a softmax 4).
 */
enum { MAX_REDUCE_LEVELS = 16 };

static int
check_reduction(Comp *c, const Fusion *f)
{
	int *level = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *level);
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const Tensor *in;

		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor && level[o->in[j].tensor] > level[o->out])
				level[o->out] = level[o->in[j].tensor];
		if (op_info[o->kind].cls != CLS_REDUCE)
			continue;
		if (++level[o->out] > MAX_REDUCE_LEVELS)
			return diag_error(c, o->pos,
			                  "cannot place '%s' (%s) in one kernel: it reduces a value that needs %d "
			                  "reductions before it, and a row reduction kernel nests at most %d (one pass "
			                  "over the row each); split the fusion", f->tensor[o->out].name,
			                  op_info[o->kind].name, level[o->out] - 1, MAX_REDUCE_LEVELS);
		in = &f->tensor[o->in[0].tensor];
		/* (over the rows, or a per-row value's over every dim: placed by the plan, refused by lowering) */
		if (!op_over_rows(f, o) && !(o->axis == 0 && op_naxes(o) == in->rank) &&
		    (o->axis != in->rank - 1 || o->naxes > 1)) {
			c->status = WSF_ERR_UNSUPPORTED;   /* (not yet: exit status 6) */
			return diag_error(c, o->pos,
			                  "cannot place '%s' (%s, rank %d) in one kernel: a kernel with reductions over "
			                  "the last axis (a row's) takes others only over every dim but the last (the "
			                  "rows'), so far; split the fusion", f->tensor[o->out].name, reduce_what(c, f, o),
			                  in->rank);
		}
	}
	return 0;
}

/*
 * Are F's reductions a pointwise kernel's (lower_reduce_grid.c): over
 * axes before the last (over rows), or over every dim where no result
 * meets the elements again (softmax of a vector is a row kernel's)?
 * Lowering refuses what it cannot place of them.
 */
static bool
reduces_over_rows(Comp *c, const Fusion *f)
{
	bool *late = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *late), any = false, outer = false;
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const Tensor *in = &f->tensor[o->in[0].tensor];
		bool l = false, e = false;

		for (j = 0; j < o->nin; j++)   /* (E: an operand of elements, not a result or a scalar) */
			if (o->in[j].tensor && late[o->in[j].tensor])
				l = true;
			else if (o->in[j].tensor && tensor_numel(f, &f->tensor[o->in[j].tensor]) != 1)
				e = true;
		if (op_info[o->kind].cls == CLS_REDUCE) {
			int n = op_naxes(o);
			bool all = o->axis == 0 && n == in->rank;   /* (a vector's, or dim: [0, .., rank - 1]) */

			if (!all && o->axis + n == in->rank)   /* over the last axis: a row's */
				return false;
			outer = outer || !all;
			any = late[o->out] = true;
		} else if (l && e && !outer) {
			return false;
		} else {
			late[o->out] = l;
		}
	}
	return any;
}

/* TMA moves rows whose stride must be a multiple of 16 bytes. */
static int
check_alignment(Comp *c, const Fusion *f, int t, Dtype dt, const char *role, Pos p)
{
	const Tensor *x = &f->tensor[t];
	Dim last;
	int64_t n, bytes;
	int per;

	if (x->rank < 2)
		return 0;
	last = x->dim[x->rank - 1];
	n = dim_value(f, last);
	if (n <= 0 || dim_is_one(last))
		return 0;
	bytes = n * dtype_info[dt].bytes;
	if (bytes % 16 == 0)
		return 0;
	per = 16 / dtype_info[dt].bytes;
	if (last.sym)
		return diag_error(c, p,
		                  "%s '%s': a row of %s = %lld %s elements is %lld bytes, not a multiple of 16 "
		                  "(TMA needs 16-byte row strides); make %s a multiple of %d",
		                  role, x->name, f->sym[last.sym].name, (long long)n, dtype_info[dt].name,
		                  (long long)bytes, f->sym[last.sym].name, per);
	return diag_error(c, p,
	                  "%s '%s': a row of %lld %s elements is %lld bytes, not a multiple of 16 "
	                  "(TMA needs 16-byte row strides); make the last dim a multiple of %d",
	                  role, x->name, (long long)n, dtype_info[dt].name, (long long)bytes, per);
}

/* Is input T read by index ops alone, as positions (index_select's, gather's index: views.c)? */
static bool
index_only(const Fusion *f, int t)
{
	int i, j, n = 0;

	if (f->tensor[t].kind != TK_INPUT)
		return false;
	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			if (f->op[i].in[j].tensor == t) {
				if (j != 1 || (f->op[i].kind != OP_INDEX_SELECT && f->op[i].kind != OP_GATHER))
					return false;
				n++;
			}
	return n > 0;
}

/* How a row kernel may read an integer it holds in f32 (reads_only). */
enum { R_INDEX = 1, R_CMP = 2, R_ONE_HOT = 4, R_VIEW = 8 };

/*
 * Is every read of T one that ALLOWED names: a gather's index (R_INDEX),
 * a comparison's operand (R_CMP), one_hot's classes (R_ONE_HOT), or a
 * reshape or view of it read only as an index or compared (R_VIEW:
 * label.unsqueeze(-1))?
 */
static bool
reads_only(const Fusion *f, int t, unsigned allowed)
{
	int i, j;

	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++) {
			const Op *o = &f->op[i];

			if (o->in[j].tensor != t || ((allowed & R_INDEX) && o->kind == OP_GATHER && j == 1) ||
			    ((allowed & R_CMP) && o->kind >= OP_EQ && o->kind <= OP_GE) ||
			    ((allowed & R_ONE_HOT) && o->kind == OP_ONE_HOT))
				continue;
			if (!(allowed & R_VIEW) || (o->kind != OP_RESHAPE && o->kind != OP_VIEW) ||
			    !reads_only(f, o->out, R_INDEX | R_CMP))
				return false;
		}
	return true;
}

/*
 * Is T an input of one value a row (ANY_SHAPE: of any shape), or a view of
 * one, read only as a gather's index, compared (a label against
 * ignore_index) or as one_hot's classes: a row kernel compares it in f32,
 * exact below 2^24.
 */
static bool
label_only(const Fusion *f, int t, bool any_shape)
{
	const Tensor *x = &f->tensor[t];

	if (x->kind == TK_VALUE && (f->op[x->def].kind == OP_RESHAPE || f->op[x->def].kind == OP_VIEW))
		return label_only(f, f->op[x->def].in[0].tensor, true);   /* (label.unsqueeze(-1): a view of one) */
	if (x->kind != TK_INPUT || (!any_shape && x->rank && !dim_is_one(x->dim[x->rank - 1])))
		return false;
	return reads_only(f, t, R_INDEX | R_CMP | R_ONE_HOT | R_VIEW);
}

/* Is T one_hot's value, or one_hot's label (one a row: classify_row's keepdim-less per-row value)? Each is an
   integer a row kernel holds exactly in f32 (0 and 1; a class below 2^24). */
static bool
one_hot_only(const Fusion *f, int t)
{
	int i;

	if (f->tensor[t].def && f->op[f->tensor[t].def].kind == OP_ONE_HOT)
		return true;
	for (i = 1; i < f->nop; i++)
		if (f->op[i].kind == OP_ONE_HOT && f->op[i].in[0].tensor == t)
			return label_only(f, t, true);
	return false;
}

/*
 * Is T an integer cast of a float value (argmax's index) read only as an
 * output, compared or as one_hot's classes: a row kernel holds it in f32,
 * exact below 2^24, and stores it as the integer.
 */
static bool
index_result_only(const Fusion *f, int t)
{
	const Tensor *x = &f->tensor[t];

	return x->kind == TK_VALUE && f->op[x->def].kind == OP_CAST && f->op[x->def].in[0].tensor &&
	       dtype_is_float(f->tensor[f->op[x->def].in[0].tensor].dtype) && reads_only(f, t, R_CMP | R_ONE_HOT);
}

/* Is T an input read only as rand_like's seed or offset (a scalar a row kernel reads as a 64-bit integer)? */
static bool
rand_key_only(const Fusion *f, int t)
{
	int i, j;

	if (f->tensor[t].kind != TK_INPUT)
		return false;
	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			if (f->op[i].in[j].tensor == t && (f->op[i].kind != OP_RAND_LIKE || j == 0))
				return false;
	return true;
}

/*
 * The integers a row kernel holds: rand_like's seed and offset (64-bit), an
 * index's positions (memory a view reads), and in f32, exact below 2^24, a
 * label, one_hot's values and argmax's index.
 */
static bool
row_int_ok(const Fusion *f, int t)
{
	return rand_key_only(f, t) || index_only(f, t) || label_only(f, t, false) || one_hot_only(f, t) ||
	       index_result_only(f, t) || (f->tensor[t].def && f->op[f->tensor[t].def].kind == OP_TOPK);
}

/* topk's values and indices are outputs, stored as a row's selection ends: no op of the kernel reads them, so far. */
static int
check_topk(Comp *c, const Fusion *f)
{
	int i, j;

	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++) {
			const Op *o = &f->op[i];
			int t = o->in[j].tensor;

			if (!t || !f->tensor[t].def || (f->op[f->tensor[t].def].kind != OP_TOPK && !topk_gather(f, t)))
				continue;
			if (topk_gather(f, o->out) && j == 1)
				continue;   /* (a gather at topk's indices: stored with the selection) */
			diag_error(c, o->in[j].pos, "'%s' (%s) reads '%s', %s: topk's values and indices are outputs of the "
			           "row kernel that selects them (as is a gather of an input's row at the indices), and an op "
			           "of them in the same kernel is not implemented yet; split the fusion", f->tensor[o->out].name,
			           op_info[o->kind].name, f->tensor[t].name, topk_gather(f, t) ? "a gather at topk's indices" :
			           "topk's");
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	return 0;
}

/*
 * Dtypes a family cannot hold: row-reduction and matmul kernels keep every
 * value in an f32 register, which holds the float dtypes and bool (0 or 1)
 * exactly but not integer arithmetic; the TMA unit's adds
 * (accumulate: true) take f32, f16 and bf16; and a signal's consumer role
 * reads the stored tiles back, and stores its own, 16 bytes of f32, f16 or
 * bf16 at a time.
 */
static int
check_dtypes(Comp *c, const Fusion *f)
{
	bool consumer = false;
	int i;

	for (i = 0; i < f->nout; i++)
		consumer |= f->out[i].consumer;
	for (i = 0; i < f->nout && consumer; i++)
		if (f->out[i].dtype > DT_BF16)
			return diag_error(c, f->out[i].pos, "output '%s' is %s: a kernel with a signal's consumer role stores "
			                  "f32, f16 and bf16 outputs only, for now", f->tensor[f->out[i].tensor].name,
			                  dtype_info[f->out[i].dtype].name);

	for (i = 1; i < f->ntensor && f->family != FAM_POINTWISE; i++) {
		const Tensor *t = &f->tensor[i];

		if (dtype_is_int(t->dtype) && !(f->family == FAM_REDUCTION && row_int_ok(f, i)))
			return diag_error(c, t->pos, "'%s' is %s: integer values compute in pointwise kernels only, not yet "
			                  "in %s kernels (cast it to f32)", t->name, dtype_info[t->dtype].name,
			                  f->family == FAM_MATMUL ? "matmul" : "row-reduction");
	}
	for (i = 0; i < f->nout; i++)
		if (f->out[i].accumulate && f->out[i].dtype > DT_BF16)
			return diag_error(c, f->out[i].accumulate_pos, "'accumulate' (output '%s') adds f32, f16 and bf16 "
			                  "(the TMA unit's adds), not %s", f->tensor[f->out[i].tensor].name,
			                  dtype_info[f->out[i].dtype].name);
	return 0;
}

/*
 * Views are address maps of inputs (views.c) that the pointwise family
 * reads through the input's pointer; elsewhere, and where a view is not one
 * input's addresses (a cat, a pad, a view of a computed value), not yet.
 */
/*
 * A scatter (index_copy, slice_scatter) is an output written in place into
 * its input's memory, its part alone, by a pointwise kernel: why not, else
 * NULL.
 */
static const char *
scatter_why(Comp *c, const Fusion *f, const Op *o)
{
	int j, k;

	if (!view_in_place(f, o))
		return arena_printf(c->arena, "a kernel writes '%s' in place, as an output with 'alias: %s' (into that "
		                    "input's memory, the part it places alone); as a value, it is not yet",
		                    f->tensor[o->out].name, f->tensor[o->in[0].tensor].name);
	for (j = 1; j < f->nop; j++)
		for (k = 0; k < f->op[j].nin; k++)
			if (f->op[j].in[k].tensor == o->out)
				return arena_printf(c->arena, "op '%s' reads '%s', which the kernel writes in place (alias): "
				                    "only its part is computed", f->tensor[f->op[j].out].name, f->tensor[o->out].name);
	return f->family == FAM_POINTWISE ? NULL : "outputs written in place (alias) are pointwise kernels' only, so far";
}

static int
check_views(Comp *c, const Fusion *f)
{
	const char *why;
	Strided s;
	int i;

	for (i = 0; i < f->nout; i++)
		if (f->out[i].alias && f->family != FAM_POINTWISE) {
			diag_error(c, f->out[i].alias_pos, "output '%s' written into input '%s' (alias) in a %s kernel is not "
			           "implemented yet: pointwise kernels only, so far", f->tensor[f->out[i].tensor].name,
			           f->tensor[f->out[i].alias].name, f->family == FAM_MATMUL ? "matmul" : "row-reduction");
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (op_info[o->kind].cls != CLS_VIEW || o->placed)   /* (a placed cat or pad computes: views.c) */
			continue;
		if (f->family == FAM_REDUCTION && (fusion_unsqueeze(f, o) || topk_gather(f, o->out)))
			continue;   /* (a row kernel's copy, emit_reduction.c; a gather at topk's indices, emit_topk.c) */
		why = o->kind == OP_INDEX_COPY || o->kind == OP_SLICE_SCATTER ? scatter_why(c, f, o)
		      : f->family == FAM_MATMUL ? "views are read by pointwise and row-reduction kernels only, so far"
		      : !view_strided(c, f, o->out, &s, &why) ? why
		      : f->family == FAM_REDUCTION && view_read_by_compute(f, o->out) &&
		        !view_rows_take(f, &s, f->tensor[o->out].dtype) ? "a row-reduction kernel reads a view as rows of "
		        "16-byte loads at an offset or one element a row, and this one's columns are not consecutive "
		        "16-byte groups in memory (or it has a pad's box, or an index that does not place whole rows)" : NULL;
		if (!why)
			continue;
		diag_error(c, o->pos, "'%s' (a view%s) in this kernel is not implemented yet: %s (wsfuse compile "
		           "--dump-after=infer prints the fusion, and the host reference evaluates it)",
		           op_info[o->kind].name, !o->parts ? "" : o->chunk ? ", a part of a chunk" : ", a part of a split",
		           why);
		c->status = WSF_ERR_UNSUPPORTED;
		return -1;
	}
	return 0;
}

/* The pass: requires an inferred fusion; leaves f->family set, the fusion checked to fit it, its plan; or -1. */
int
pass_schedule(Comp *c)
{
	Fusion *f = c->fusion;
	int i;

	f->family = find_kind(f, CLS_MATMUL) ? FAM_MATMUL :
	            fusion_has_op(f, OP_TOPK) || (find_kind(f, CLS_REDUCE) && !reduces_over_rows(c, f)) ? FAM_REDUCTION :
	            FAM_POINTWISE;
	if (fusion_has_op(f, OP_TOPK) && (f->family == FAM_MATMUL || check_topk(c, f) < 0)) {
		if (f->family == FAM_MATMUL) {
			diag_error(c, f->pos, "topk in a matmul kernel is not implemented yet: split the fusion");
			c->status = WSF_ERR_UNSUPPORTED;
		}
		return -1;
	}
	if (check_views(c, f) || (f->family == FAM_MATMUL && check_matmul(c, f)) ||
	    (f->family == FAM_REDUCTION && check_reduction(c, f)))
		return -1;
	for (i = 1; i < f->nop; i++)   /* an element's position along its last dim (a column), for now */
		if (f->op[i].kind == OP_POSITION && f->op[i].axis != f->tensor[f->op[i].in[0].tensor].rank - 1) {
			diag_error(c, f->op[i].pos, "'%s' (%s) along dim %d of '%s', not its last, is not implemented yet: "
			           "argmax and argmin reduce over the last dim, so far", f->tensor[f->op[i].out].name,
			           op_info[f->op[i].kind].name, f->op[i].axis, f->tensor[f->op[i].in[0].tensor].name);
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	for (i = 1; i < f->nop; i++)   /* the element's index rand_like hashes: pointwise and row kernels', for now */
		if (f->op[i].kind == OP_RAND_LIKE && f->family == FAM_MATMUL) {
			diag_error(c, f->op[i].pos, "rand_like in a matmul kernel is not implemented yet (pointwise and "
			           "row-reduction kernels only)");
			c->status = WSF_ERR_UNSUPPORTED;
			return -1;
		}
	if (check_dtypes(c, f))
		return -1;
	for (i = 0; i < f->ninput; i++) {
		const Tensor *t = &f->tensor[f->input[i]];
		/* a pointwise kernel reads an input it reads through views alone by pointer: no tensor map */
		bool by_pointer = f->family == FAM_POINTWISE && !view_read_by_compute(f, f->input[i]);

		if (!t->unread && !by_pointer && check_alignment(c, f, f->input[i], t->dtype, "input", t->pos))
			return -1;
	}
	for (i = 0; i < f->nout; i++)   /* (topk's, and gathers at its indices, are stored an element at a time) */
		if (f->op[f->tensor[f->out[i].tensor].def].kind != OP_TOPK && !topk_gather(f, f->out[i].tensor) &&
		    check_alignment(c, f, f->out[i].tensor, f->out[i].dtype, "output", f->out[i].pos))
			return -1;
	if (f->family == FAM_MATMUL && !(f->mm = schedule_matmul(c, f)))
		return -1;
	if (f->family == FAM_REDUCTION)
		f->row = schedule_row(c, f);
	return 0;
}
