/*
 * views.c: a view of an input as an address map (docs/spec.md, Views).
 *
 * A chain of slices (chunk and split parts included), permutes,
 * transposes, expands and reshapes that starts at a fusion input reads that
 * input's memory at offset + sum of i_d x stride_d: the view is strides
 * and an offset over the input's contiguous layout, as torch's views are,
 * never a copy; a pad's is such a view with a box, memory inside it and the
 * fill outside.  The schedule pass asks view_strided whether each view of
 * a fusion is one (a view of a cat or of rand_like's numbers is not, yet);
 * the pointwise family reads each such view through its input's pointer
 * (lower_pointwise.c; lower_bcast.c's lower_strided_at makes the offset an
 * expression of the domain row).
 *
 * A stride is a number times runtime sizes (the input's inner dims may be
 * sizes: [B, S, 8, 64]'s dim 0 steps S x 512), so a kernel compiled at one
 * size runs at another; a view's own extents are numbers or sizes as infer
 * made them.  A reshape regroups runs of dims contiguous in memory, element
 * counts compared as such products too.
 */
#include <string.h>

#include "passes.h"

/* Stride X times dim D (a number or a size). */
static Stride
times(Stride x, Dim d)
{
	if (d.sym)
		x.sym[x.nsym++] = d.sym;
	else
		x.k *= d.ext;
	return x;
}

/* Stride A times B (B's sizes after A's; at most MAX_RANK of them, as a shape has). */
static Stride
mul(Stride a, Stride b)
{
	int i;

	a.k *= b.k;
	for (i = 0; i < b.nsym && a.nsym < MAX_RANK; i++)
		a.sym[a.nsym++] = b.sym[i];
	return a;
}

bool
stride_equal(Stride a, Stride b)
{
	int i, j, used[MAX_RANK] = {0};

	if (a.k != b.k || a.nsym != b.nsym)
		return false;
	if (a.k == 0)
		return true;
	for (i = 0; i < a.nsym; i++) {
		for (j = 0; j < b.nsym && (used[j] || b.sym[j] != a.sym[i]); j++)
			;
		if (j == b.nsym)
			return false;
		used[j] = 1;
	}
	return true;
}

/* Contiguous strides of input T (row-major). */
static void
contiguous(const Tensor *t, Strided *s)
{
	Stride st = {1, 0, {0}};
	int d;

	memset(s, 0, sizeof *s);
	s->rank = t->rank;
	for (d = t->rank - 1; d >= 0; d--) {
		s->lo[d] = 0;
		s->hi[d] = INT64_MAX;
		s->ext[d] = t->dim[d];
		s->stride[d] = st;
		if (d > 0)
			st = times(st, t->dim[d]);
	}
}

/*
 * Dim A of the dims SRC (RANK of them) as a digit of a dim of OUT, a
 * reshape of them that merges A's run of dims into one: *G, and i_A =
 * (i_G / *DIV) % *MOD.  False where the reshape splits A's run, or A or a
 * dim after it in the run is a runtime size.
 */
static bool
merged_digit(const Dim *src, int rank, const Tensor *out, int a, int *g, int64_t *div, int64_t *mod)
{
	Stride after[MAX_RANK + 1], oafter[MAX_RANK + 1], one = {1, 0, {0}};
	int d, o, first;

	after[rank] = one;   /* after[d]: the elements of dims d.. */
	for (d = rank - 1; d >= 0; d--)
		after[d] = times(after[d + 1], src[d]);
	oafter[out->rank] = one;
	for (o = out->rank - 1; o >= 0; o--)
		oafter[o] = times(oafter[o + 1], out->dim[o]);
	for (o = 0; o < out->rank; o++)   /* out dim o spans src dims [first, last]: equal counts at both ends */
		for (first = 0; first <= a; first++)
			if (stride_equal(after[first], oafter[o]))
				for (d = a; d < rank; d++)
					if (stride_equal(after[d + 1], oafter[o + 1])) {
						*g = o;
						*mod = src[a].sym ? 0 : src[a].ext;
						for (*div = 1, first = a + 1; first <= d && *mod; first++)
							*div = src[first].sym ? (*mod = 0) : *div * src[first].ext;
						return *mod > 0;
					}
	return false;
}

/*
 * A pad's box through a reshape to OUT: a box on a dim the reshape keeps
 * stays as it is; one on a dim it merges with others (RoPE's interleaved
 * pairs: [64, 2] to 128) becomes a box on that dim's digit of the merged
 * dim.  One box a merged dim, none already a digit, none split.
 */
static bool
reshape_boxes(Strided *s, const Tensor *out, const char **why)
{
	int64_t lo[MAX_RANK], hi[MAX_RANK], div[MAX_RANK] = {0}, mod[MAX_RANK] = {0}, dv, md;
	int d, g;

	for (d = 0; d < out->rank; d++)
		lo[d] = 0, hi[d] = INT64_MAX;
	for (d = 0; d < s->rank; d++) {
		if (s->hi[d] == INT64_MAX && s->lo[d] == 0)
			continue;
		if (s->mod[d] || !merged_digit(s->ext, s->rank, out, d, &g, &dv, &md) || hi[g] != INT64_MAX) {
			*why = "a reshape of a pad that splits the padded dim, or merges two of its boxes into one dim";
			return false;
		}
		lo[g] = s->lo[d], hi[g] = s->hi[d];
		if (dv != 1 || !dim_equal(out->dim[g], s->ext[d]))
			div[g] = dv, mod[g] = md;
	}
	memcpy(s->lo, lo, sizeof lo);
	memcpy(s->hi, hi, sizeof hi);
	memcpy(s->div, div, sizeof div);
	memcpy(s->mod, mod, sizeof mod);
	return true;
}

/*
 * Reshape: the new dims over strided S, grouped as torch's view groups them:
 * each run of old dims contiguous in memory (stride_d = ext_{d+1} x
 * stride_{d+1}) may be re-split any way with the same element count; a new
 * shape that splits across two such runs would need a copy.
 */
static bool
reshape(const Tensor *out, Strided *s, const char **why)
{
	Stride nstride[MAX_RANK], base, one = {1, 0, {0}}, old_n = one, new_n = one;
	int d, v = out->rank - 1;

	base = s->rank ? s->stride[s->rank - 1] : one;
	for (d = s->rank - 1; d >= 0; d--) {
		if (d > 0)
			old_n = times(old_n, s->ext[d]);
		if (d > 0 && (dim_is_one(s->ext[d - 1]) || stride_equal(s->stride[d - 1], mul(base, old_n))))
			continue;   /* dim d - 1 goes on with the run of contiguous dims */
		/* the run [d, ...] ends: the new dims that make up its elements (the outermost run: all left) */
		for (; v >= 0 && (d == 0 || !stride_equal(new_n, old_n) || dim_is_one(out->dim[v])); v--) {
			nstride[v] = mul(base, new_n);
			new_n = times(new_n, out->dim[v]);
		}
		if (d == 0)
			break;
		if (!stride_equal(new_n, old_n)) {
			*why = "a reshape across dims that are not contiguous in memory (of a permute or a step slice) "
			       "would need a copy";
			return false;
		}
		base = s->stride[d - 1];
		old_n = new_n = one;
	}
	if (s->bounded && !reshape_boxes(s, out, why))
		return false;
	s->rank = out->rank;
	for (d = 0; d < out->rank; d++) {
		if (!s->bounded)
			s->lo[d] = 0, s->hi[d] = INT64_MAX;
		s->ext[d] = out->dim[d];
		s->stride[d] = dim_is_one(out->dim[d]) || v >= d ? (Stride){0, 0, {0}} : nstride[d];
	}
	return true;
}

bool
view_strided(Comp *c, const Fusion *f, int t, Strided *s, const char **why)
{
	const Tensor *ten = &f->tensor[t];
	const Op *o;
	Strided in;
	int64_t start, count;
	int d, lead;

	*why = NULL;
	if (!ten->def) {
		contiguous(ten, s);
		s->input = t;
		return true;
	}
	o = &f->op[ten->def];
	if (op_info[o->kind].cls != CLS_VIEW) {
		*why = arena_printf(c->arena, "it views '%s', a computed value (only views of inputs are addresses "
		                    "yet)", ten->name);
		return false;
	}
	if (o->kind == OP_CAT || o->placed) {
		*why = o->kind == OP_CAT ? "a view of a cat (a cat picks between its inputs: it is not one input's "
		                           "addresses)" : "a view of a pad of a computed value";
		return false;
	}
	if (!view_strided(c, f, o->in[0].tensor, &in, why))
		return false;
	if (in.index) {
		*why = "a view of an index_select or a gather (only of inputs and their strided views, so far)";
		return false;
	}
	for (d = 0; d < in.rank && (!in.mod[d] || o->kind == OP_PERMUTE || o->kind == OP_TRANSPOSE ||
	                            o->kind == OP_EXPAND); d++)
		;
	if (d < in.rank) {
		*why = "a view of a reshaped pad whose box is a digit of a merged dim (only permutes and expands of it, "
		       "so far)";
		return false;
	}
	*s = in;
	if (s->noff >= MAX_RANK - 1 && (o->kind == OP_SLICE || o->kind == OP_PAD)) {
		*why = "more slices and pads with a start than an offset holds";
		return false;
	}
	switch (o->kind) {
	case OP_SLICE:
		view_slice(o, dim_value(f, in.ext[o->axis]), &start, &count);
		if (start)
			s->off[s->noff++] = times(in.stride[o->axis], (Dim){0, start});
		s->stride[o->axis].k *= o->step;
		s->ext[o->axis] = ten->dim[o->axis];
		if (in.hi[o->axis] != INT64_MAX) {   /* the box, in the slice's indices: start + i x step inside it */
			s->lo[o->axis] = in.lo[o->axis] <= start ? 0 : (in.lo[o->axis] - start + o->step - 1) / o->step;
			s->hi[o->axis] = in.hi[o->axis] <= start ? 0 : (in.hi[o->axis] - start + o->step - 1) / o->step;
			s->hi[o->axis] = s->hi[o->axis] < count ? s->hi[o->axis] : count;
		}
		break;
	case OP_PAD:   /* element i reads i - before, inside [before, before + n) */
		if (in.bounded && in.fill != o->value) {
			*why = "a pad of a pad with another fill";
			return false;
		}
		for (d = 0; d < o->npad / 2; d++) {
			int a = s->rank - 1 - d;
			int64_t before = o->pad[2 * d], n = dim_value(f, in.ext[a]);

			if (!before && !o->pad[2 * d + 1])
				continue;   /* (no box on this dim) */
			if (before)
				s->off[s->noff++] = times(in.stride[a], (Dim){0, -before});
			s->lo[a] = (in.hi[a] != INT64_MAX ? in.lo[a] : 0) + before;
			s->hi[a] = (in.hi[a] != INT64_MAX ? in.hi[a] : n) + before;
			s->ext[a] = ten->dim[a];
		}
		s->bounded = true;
		s->fill = o->value;
		break;
	case OP_PERMUTE:
		for (d = 0; d < s->rank; d++) {
			s->ext[d] = in.ext[o->dims[d]];
			s->stride[d] = in.stride[o->dims[d]];
			s->lo[d] = in.lo[o->dims[d]], s->hi[d] = in.hi[o->dims[d]];
			s->div[d] = in.div[o->dims[d]], s->mod[d] = in.mod[o->dims[d]];
		}
		break;
	case OP_TRANSPOSE:
		s->ext[o->dim0] = in.ext[o->dim1], s->stride[o->dim0] = in.stride[o->dim1];
		s->ext[o->dim1] = in.ext[o->dim0], s->stride[o->dim1] = in.stride[o->dim0];
		s->lo[o->dim0] = in.lo[o->dim1], s->hi[o->dim0] = in.hi[o->dim1];
		s->lo[o->dim1] = in.lo[o->dim0], s->hi[o->dim1] = in.hi[o->dim0];
		s->div[o->dim0] = in.div[o->dim1], s->mod[o->dim0] = in.mod[o->dim1];
		s->div[o->dim1] = in.div[o->dim0], s->mod[o->dim1] = in.mod[o->dim0];
		break;
	case OP_EXPAND:
		lead = ten->rank - in.rank;
		s->rank = ten->rank;
		for (d = 0; d < ten->rank; d++) {
			s->ext[d] = ten->dim[d];
			s->stride[d] = d < lead || dim_is_one(in.ext[d - lead]) ? (Stride){0, 0, {0}} : in.stride[d - lead];
			s->lo[d] = d < lead || dim_is_one(in.ext[d - lead]) ? 0 : in.lo[d - lead];
			s->hi[d] = d < lead || dim_is_one(in.ext[d - lead]) ? INT64_MAX : in.hi[d - lead];
			s->div[d] = d < lead ? 0 : in.div[d - lead], s->mod[d] = d < lead ? 0 : in.mod[d - lead];
		}
		break;
	case OP_INDEX_SELECT:   /* the position along dim is the index's value: a stride of 0 plus the index's */
	case OP_GATHER:
		if (f->tensor[o->in[1].tensor].def) {
			*why = "its index is computed by ops (an index must be an input, so far)";
			return false;
		}
		if (in.bounded) {
			*why = "an index op of a pad";
			return false;
		}
		s->index = o->in[1].tensor;
		s->index_dim = o->axis;
		s->gather = o->kind == OP_GATHER;
		s->index_stride = in.stride[o->axis];
		s->stride[o->axis] = (Stride){0, 0, {0}};
		memcpy(s->ext, ten->dim, sizeof s->ext);   /* (gather: the index's shape) */
		break;
	case OP_RESHAPE:
	case OP_VIEW:
		return reshape(ten, s, why);
	default:
		*why = arena_printf(c->arena, "'%s' has no address map", op_info[o->kind].name);
		return false;
	}
	return true;
}

bool
view_stride16(const Fusion *f, const Strided *s, Stride x, Dtype dt)
{
	const Tensor *in = &f->tensor[s->input];
	int i, row = in->rank ? in->dim[in->rank - 1].sym : 0;   /* (the input's rows: 16 bytes a launch holds) */

	for (i = 0; i < x.nsym && row; i++)
		if (x.sym[i] == row)
			return true;
	return x.k * dtype_info[dt].bytes % 16 == 0;   /* (a number of 16-byte steps times sizes is 16-byte steps) */
}

bool
view_aligned16(const Fusion *f, const Strided *s, Dtype dt)
{
	bool aligned = true;
	int j;

	for (j = 0; j < s->noff; j++)
		aligned = aligned && view_stride16(f, s, s->off[j], dt);
	for (j = 0; j + 1 < s->rank; j++)
		aligned = aligned && view_stride16(f, s, s->stride[j], dt);
	return aligned;
}

bool
view_rows_take(const Fusion *f, const Strided *s, Dtype dt)
{
	bool aligned = view_aligned16(f, s, dt);

	if (s->index && s->gather && s->rank && s->index_dim == s->rank - 1 && dim_is_one(s->ext[s->rank - 1]) &&
	    !s->bounded)
		return true;   /* one element a row, at the index's value along the row (a label's logit) */
	if (s->bounded || (s->index && (s->gather || s->index_dim == s->rank - 1 ||
	                                 !view_stride16(f, s, s->index_stride, dt))))
		return false;   /* (an index must place whole rows: one index element a row) */
	if (!s->rank || dim_is_one(s->ext[s->rank - 1]) || !s->stride[s->rank - 1].k)
		return true;   /* one element a row: any alignment */
	return aligned && s->stride[s->rank - 1].k == 1 && !s->stride[s->rank - 1].nsym;
}

bool
view_used(const Fusion *f, int t)
{
	const Tensor *x = &f->tensor[t];

	if (x->kind == TK_VALUE && x->def && op_info[f->op[x->def].kind].cls != CLS_VIEW)
		return true;
	return x->kind != TK_NONE && !x->unread && view_read_by_compute(f, t);
}

bool
view_read_by_compute(const Fusion *f, int t)
{
	int i, j;

	for (i = 0; i < f->nout && !f->split_out; i++)   /* (a split's outputs store the parts of split_out) */
		if (fusion_stored(f, i) == t)   /* (a scatter's: its part) */
			return true;
	if (t == f->split_out)
		return true;
	for (i = 1; i < f->nop; i++)
		if (op_info[f->op[i].kind].cls != CLS_VIEW || f->op[i].placed)
			for (j = 0; j < f->op[i].nin; j++)
				if (f->op[i].in[j].tensor == t)
					return true;
	return false;
}

/*
 * The views pass: views of computed values move down to the inputs.
 *
 * Contract.  Requires: an inferred fusion.  Guarantees, in a fusion of
 * pointwise ops and views alone (others are left as they are): a view
 * (not a cat or pad) of a value a pointwise op computes is that op over
 * the same view of each of its operands (an operand that broadcasts to the
 * op's shape is first expanded to it, a stride of 0), down to the inputs, so
 * every such view reads an input's addresses (view_strided); the op is
 * computed again at the view's indices, a recompute, not a copy (pointwise
 * ops are cheap; rand_like, whose numbers hang on the index, stays put).
 * A cat becomes each part padded to the cat's shape at its place (a pad,
 * moved down like any view: its box's outside is never read) and a placed
 * cat, which picks part j where the element's index along the dim is below
 * part j's end; a pad of a computed value, the value over padded operands
 * and a placed pad, which picks the fill outside the box (a pad of an input
 * stays a view with a box and a fill).
 * The view's tensor keeps its name and id; the new ones are "VIEW.OPERAND".
 * Ops no output needs any more are dropped.  Fusion.ref_op keeps the ops as
 * they were, which the host reference evaluates, so --check compares
 * against the fusion the user wrote, not this rewrite.  Invalidates nothing
 * (runs before schedule).
 */
/* The most ops the rewrite may make: each view copies the pointwise ops above it (a bound on a blowup). */
enum { MAX_SUNK_OPS = 4096 };

typedef struct Sinker {
	Comp *c;
	Fusion *f;
	Op *ops;
	int nops, capops;
	int *def;          /* tensor -> its defining op in OPS (0: an input) */
	int *memo;         /* tensor -> what the view being moved made of it (0: not yet; sink_view clears it) */
	int capdef;        /* of DEF and MEMO */
} Sinker;

static bool
sinkable(const Op *o)
{
	return (op_info[o->kind].cls == CLS_UNARY || op_info[o->kind].cls == CLS_BINARY) && o->kind != OP_RAND_LIKE;
}

static int
push(Sinker *x, const Op *o)
{
	*VEC_PUSH(x->c->arena, x->ops, x->nops, x->capops) = *o;
	x->def[o->out] = x->nops - 1;
	return o->out;
}

/*
 * A new value "BASE.FROM" of dtype DT and tensor SHAPE's dims, FROM's name
 * after its last '.' (the spec's name it came from: at.x, not at.x1.xw.x).
 */
static int
fresh(Sinker *x, int base, int from, Dtype dt, int shape)
{
	Fusion *f = x->f;
	const char *root = strrchr(f->tensor[from].name, '.'), *name;
	int t, n;

	root = root ? root + 1 : f->tensor[from].name;
	name = arena_printf(x->c->arena, "%s.%s", f->tensor[base].name, root);
	for (n = 2; fusion_find_tensor(f, intern_cstr(x->c->strs, name)); n++)
		name = arena_printf(x->c->arena, "%s.%s%d", f->tensor[base].name, root, n);
	t = fusion_add_tensor(x->c, f, intern_cstr(x->c->strs, name), TK_VALUE, f->tensor[base].pos);
	f->tensor[t].dtype = dt;
	f->tensor[t].rank = f->tensor[shape].rank;
	memcpy(f->tensor[t].dim, f->tensor[shape].dim, sizeof f->tensor[t].dim);
	if (t >= x->capdef) {
		int *grown = arena_alloc(x->c->arena, (size_t)(2 * t) * sizeof *grown);
		int *memo = arena_alloc(x->c->arena, (size_t)(2 * t) * sizeof *memo);

		memcpy(grown, x->def, (size_t)x->capdef * sizeof *grown);
		memcpy(memo, x->memo, (size_t)x->capdef * sizeof *memo);
		x->def = grown;
		x->memo = memo;
		x->capdef = 2 * t;
	}
	return t;
}

static int sink(Sinker *x, const Op *v, int src, int out);

/*
 * Reshape V of placed cat SRC that merges the cat's dim with others into
 * OUT's dim g (RoPE's interleaved pairs: cat(-x_odd, x_even) of [..., 64,
 * 2] read as [..., 128]): *O, a placed cat of the reshaped parts picking by
 * the digit of g the cat's dim became.  False for other views.
 */
static bool
through_cat(Sinker *x, const Op *v, int src, int out, Op *o)
{
	const Fusion *f = x->f;
	const Tensor *t = &f->tensor[src];
	int64_t div, mod;
	int g, j;

	*o = x->ops[x->def[src]];
	if ((v->kind != OP_RESHAPE && v->kind != OP_VIEW) || o->kind != OP_CAT || !o->placed || o->digit[1] ||
	    x->nops > MAX_SUNK_OPS || !merged_digit(t->dim, t->rank, &f->tensor[v->out], o->axis, &g, &div, &mod))
		return false;
	if (div != 1 || !dim_equal(f->tensor[v->out].dim[g], t->dim[o->axis]))
		o->digit[0] = div, o->digit[1] = mod;
	o->axis = g;
	for (j = 0; j < o->nin; j++)
		o->in[j].tensor = sink(x, v, o->in[j].tensor, 0);
	o->out = out;
	o->origin = f->tensor[v->out].name;
	return true;
}

/*
 * OUT = view V of SRC, moved below SRC's pointwise op where there is one
 * (OUT 0: a new value).  What V of a tensor became is kept until the next
 * view is moved (sink_view), so an operand read twice (x + x) is viewed
 * once; past MAX_SUNK_OPS the view stays where it is.
 */
static int
sink(Sinker *x, const Op *v, int src, int out)
{
	Fusion *f = x->f;
	Op o;
	int j;

	if (!out && x->memo[src])
		return x->memo[src];
	if (!out)
		out = fresh(x, v->out, src, f->tensor[src].dtype, v->out);
	if (x->def[src] && sinkable(&x->ops[x->def[src]]) && x->nops <= MAX_SUNK_OPS) {
		o = x->ops[x->def[src]];
		for (j = 0; j < o.nin; j++) {
			int a = o.in[j].tensor;

			if (!a)
				continue;
			if (!lower_same_shape(&f->tensor[a], &f->tensor[src])) {   /* broadcast: an expand first */
				Op e = {0};

				e.kind = OP_EXPAND;
				e.nin = 1;
				e.in[0] = o.in[j];
				e.nshape = f->tensor[src].rank;
				memcpy(e.shape, f->tensor[src].dim, sizeof e.shape);
				e.pos = e.attr_pos = o.pos;
				e.origin = f->tensor[v->out].name;
				e.out = fresh(x, src, a, f->tensor[a].dtype, src);
				a = push(x, &e);
			}
			o.in[j].tensor = sink(x, v, a, 0);
		}
		o.out = out;
		o.origin = f->tensor[v->out].name;
		return x->memo[src] = push(x, &o);
	}
	if (x->def[src] && through_cat(x, v, src, out, &o))
		return x->memo[src] = push(x, &o);
	o = *v;
	o.in[0].tensor = src;
	o.out = out;
	return x->memo[src] = push(x, &o);
}

/* Moves one view V of SRC down (sink), what it made of each tensor forgotten first. */
static int
sink_view(Sinker *x, const Op *v, int src, int out)
{
	memset(x->memo, 0, (size_t)x->capdef * sizeof *x->memo);
	return sink(x, v, src, out);
}

/*
 * pad(P) of a computed P: P over a pad of each operand (the box's outside
 * is anything: a placed pad then picks the fill there by the element's
 * index).
 */
static void
place_pad(Sinker *x, const Op *o)
{
	int src = o->in[0].tensor;
	Op p = *o;

	p.in[0].tensor = sink_view(x, o, src, 0);
	p.placed = true;
	push(x, &p);
}

/*
 * cat(P0, P1, ...) along dim a: each part padded to the cat's shape at its
 * place along a (a pad of its values, moved down to the inputs like any
 * view), and a placed cat that picks part j where the element's index along
 * a is in part j's range.
 */
static void
place_cat(Sinker *x, const Op *o)
{
	Fusion *f = x->f;
	const Tensor *out = &f->tensor[o->out];
	int64_t at = 0, n, total = dim_value(f, out->dim[o->axis]);
	int j, k = out->rank - 1 - o->axis;
	Op p = *o;

	for (j = 0; j < o->nin; j++) {
		int part = o->in[j].tensor;
		Op pad = {0};

		n = dim_value(f, f->tensor[part].dim[o->axis]);
		pad.kind = OP_PAD;
		pad.nin = 1;
		pad.in[0] = o->in[j];
		pad.npad = 2 * (k + 1);
		pad.pad[2 * k] = at;
		pad.pad[2 * k + 1] = total - at - n;
		pad.pos = pad.attr_pos = o->pos;
		pad.origin = out->name;
		pad.out = o->out;   /* (the shape and name the pads take) */
		p.in[j].tensor = sink_view(x, &pad, part, 0);
		at += n;
		p.pad[j] = at;   /* a placed cat keeps its parts' ends along dim in pad[] */
	}
	p.npad = o->nin;
	p.placed = true;
	push(x, &p);
}

bool
view_in_place(const Fusion *f, const Op *o)
{
	int j;

	for (j = 0; j < f->nout && fusion_scatter(f, j) != o; j++)
		;
	return j < f->nout;
}

/*
 * slice_scatter(x, src, dim, start, end) with step 1 as a value: cat(x[:start],
 * src, x[end:]) along dim (the parts that are not empty), placed as any cat;
 * all of x: src itself (a reshape to its own shape).
 */
static void
scatter_as_cat(Sinker *x, const Op *o)
{
	Fusion *f = x->f;
	const Tensor *t = &f->tensor[o->out];
	int64_t start, count, n = dim_value(f, t->dim[o->axis]);
	Op cat = *o, s = {0};

	view_slice(o, n, &start, &count);
	cat.kind = OP_CAT;
	cat.nin = 0;
	s.kind = OP_SLICE;
	s.nin = 1;
	s.in[0] = o->in[0];
	s.axis = o->axis;
	s.step = 1;
	s.pos = s.attr_pos = o->pos;
	s.origin = t->name;
	if (start > 0) {
		s.start = 0, s.end = start;
		s.out = fresh(x, o->out, o->in[0].tensor, t->dtype, o->out);
		f->tensor[s.out].dim[o->axis] = (Dim){0, start};
		cat.in[cat.nin++].tensor = sink_view(x, &s, o->in[0].tensor, s.out);   /* (x computed: moved down) */
	}
	cat.in[cat.nin++] = o->in[1];
	if (start + count < n) {
		s.start = start + count, s.end = n;
		s.out = fresh(x, o->out, o->in[0].tensor, t->dtype, o->out);
		f->tensor[s.out].dim[o->axis] = (Dim){0, n - start - count};
		cat.in[cat.nin++].tensor = sink_view(x, &s, o->in[0].tensor, s.out);
	}
	if (cat.nin > 1) {
		place_cat(x, &cat);
		return;
	}
	cat.kind = OP_RESHAPE;
	cat.nshape = t->rank;
	memcpy(cat.shape, t->dim, sizeof cat.shape);
	sink_view(x, &cat, o->in[1].tensor, o->out);
}

/* Do A and B have one rank and equal dims but DIM? */
static bool
same_but(const Tensor *a, const Tensor *b, int dim)
{
	int d;

	for (d = 0; d < a->rank && a->rank == b->rank; d++)
		if (d != dim && !dim_equal(a->dim[d], b->dim[d]))
			return false;
	return a->rank == b->rank;
}

static bool
is_output(const Fusion *f, int t)
{
	int i;

	for (i = 0; i < f->nout && f->out[i].tensor != t; i++)
		;
	return i < f->nout;
}

/*
 * The dim along which F's outputs are the parts of one shape, in order (a
 * split or chunk into several outputs, QKV's): every output of one rank,
 * equal but along that dim, where each is a constant; -1 where they are
 * not (one shape, or shapes that do not line up), which lowering refuses.
 */
static int
split_dim(const Fusion *f)
{
	const Tensor *t0 = &f->tensor[f->out[0].tensor];
	int i, d, dim = -1;

	if (f->nout < 2 || f->nout > MAX_IN)
		return -1;
	for (i = 0; i < f->nout; i++)   /* (added to memory, the consumer role's or in an input's: stored whole) */
		if (f->out[i].accumulate || f->out[i].consumer || f->out[i].alias)
			return -1;
	for (i = 1; i < f->nout; i++) {
		const Tensor *t = &f->tensor[f->out[i].tensor];

		if (t->rank != t0->rank)
			return -1;
		for (d = 0; d < t->rank; d++)
			if (!dim_equal(t->dim[d], t0->dim[d])) {
				if ((dim >= 0 && d != dim) || t->dim[d].sym || t0->dim[d].sym)
					return -1;
				dim = d;
			}
	}
	for (i = 0; dim >= 0 && i < f->nout; i++)
		if (f->tensor[f->out[i].tensor].dim[dim].sym)
			return -1;
	return dim;
}

/*
 * Outputs that are the parts of one shape along DIM: the kernel computes
 * that shape (split_out), each output storing the elements in its range
 * (Output.part; lower_pointwise.c).  Slices in order of one value, as a
 * split or chunk makes them, are parts of that value; else a placed cat
 * of the outputs (place_cat) is what the kernel computes.
 */
static void
split_outputs(Sinker *x, int dim)
{
	Fusion *f = x->f;
	const Tensor *t0 = &f->tensor[f->out[0].tensor];
	Op cat = {0};
	int64_t at = 0;
	int i, t, whole = 0;

	for (i = 0; i < f->nout; i++) {   /* slices of one value, in order, the whole of it? */
		const Tensor *o = &f->tensor[f->out[i].tensor];
		const Op *s = o->def ? &f->op[o->def] : NULL;

		if (!s || s->kind != OP_SLICE || s->step != 1 || s->axis != dim || (i && s->in[0].tensor != whole) ||
		    !same_but(&f->tensor[s->in[0].tensor], o, dim) || s->start != at)
			break;
		whole = s->in[0].tensor;
		f->out[i].part[0] = at;
		f->out[i].part[1] = at += o->dim[dim].ext;
	}
	if (i == f->nout && at == dim_value(f, f->tensor[whole].dim[dim])) {
		f->split_out = whole;
		f->split_dim = dim;
		return;
	}
	cat.kind = OP_CAT;
	cat.nin = f->nout;
	cat.axis = dim;
	cat.pos = cat.attr_pos = f->out[0].pos;
	for (i = 0, at = 0; i < f->nout; i++) {
		cat.in[i].tensor = f->out[i].tensor;
		cat.in[i].pos = f->out[i].pos;
		f->out[i].part[0] = at;
		f->out[i].part[1] = at += f->tensor[f->out[i].tensor].dim[dim].ext;
	}
	t = fresh(x, f->out[0].tensor, f->out[0].tensor, t0->dtype, f->out[0].tensor);
	f->tensor[t].name = intern_cstr(x->c->strs, "outputs");   /* (a spec's name has no '.': a new one does) */
	for (i = 2; fusion_find_tensor(f, f->tensor[t].name) != t; i++)
		f->tensor[t].name = intern_cstr(x->c->strs, arena_printf(x->c->arena, "outputs.%d", i));
	f->tensor[t].dim[dim] = (Dim){0, at};
	for (i = 1; i < f->nout; i++)   /* (a mixed dtype: the widest, as the values are f32 in registers) */
		if (dtype_info[f->tensor[f->out[i].tensor].dtype].bytes > dtype_info[f->tensor[t].dtype].bytes)
			f->tensor[t].dtype = f->tensor[f->out[i].tensor].dtype;
	cat.out = t;
	place_cat(x, &cat);
	f->split_out = t;
	f->split_dim = dim;
}

/*
 * Does reduction O keep dims other than ones between its reduced dims and
 * the last ([B, S, H].sum(0)), of a value PURE says a permute moves down to
 * the inputs?  The reductions over rows run [.., group dims, reduced dims,
 * ones, last]: permute_first puts a permute in front.  (Of a value that
 * reads another reduction's result, lowering says why it cannot be.)
 */
static bool
keeps_dims_after(const Fusion *f, const bool *pure, const Op *o)
{
	const Tensor *a = &f->tensor[o->in[0].tensor];
	int d;

	if (op_info[o->kind].cls != CLS_REDUCE || o->axis + op_naxes(o) >= a->rank || !pure[o->in[0].tensor])
		return false;
	for (d = o->axis + op_naxes(o); d < a->rank - 1 && dim_is_one(a->dim[d]); d++)
		;
	return d < a->rank - 1;
}

/*
 * Reduction O over dims axis .. axis + n - 1 of its input, which keeps dims
 * after them: a permute of the input (moved down like any view) that puts
 * those kept dims before the reduced ones, the last staying last, and O over
 * the permute, its result as it was (the same values in the same order;
 * the reductions over rows store it flat).  The permute is "NAME.permuted".
 */
static void
permute_first(Sinker *x, const Op *o)
{
	Fusion *f = x->f;
	int src = o->in[0].tensor, rank = f->tensor[src].rank, n = op_naxes(o), d, j = 0, t;
	const char *name = arena_printf(x->c->arena, "%s.permuted", f->tensor[o->out].name);
	Op p = {0}, r = *o;

	for (d = 0; d < rank - 1; d++)
		if (d < o->axis || d >= o->axis + n)
			p.dims[j++] = d;
	for (d = o->axis; d < o->axis + n; d++)
		p.dims[j++] = d;
	p.dims[j] = rank - 1;
	t = fresh(x, o->out, src, f->tensor[src].dtype, src);
	if (!fusion_find_tensor(f, intern_cstr(x->c->strs, name)))
		f->tensor[t].name = intern_cstr(x->c->strs, name);
	for (d = 0; d < rank; d++)
		f->tensor[t].dim[d] = f->tensor[src].dim[p.dims[d]];
	p.kind = OP_PERMUTE;
	p.nin = 1;
	p.in[0] = o->in[0];
	p.ndims = rank;
	p.out = t;
	p.pos = p.attr_pos = o->pos;
	p.origin = f->tensor[o->out].name;
	r.in[0].tensor = sink_view(x, &p, src, t);
	r.axis = rank - 1 - n;
	push(x, &r);
}

/*
 * Is O a reshape of a reduction's result that no other op reads and no
 * output is, which only adds or drops dims of 1 (infer's keepdim after
 * reduce_order)?  The reduction then writes O's result itself: the same
 * elements in the same order.
 */
static bool
folds_into_reduction(const Fusion *f, const int *def, const Op *ops, const Op *o)
{
	int x = o->in[0].tensor, i, j, readers = 0;

	if (!fusion_unsqueeze(f, o) || !def[x] || op_info[ops[def[x]].kind].cls != CLS_REDUCE || is_output(f, x))
		return false;
	for (i = 1; i < f->nop; i++)
		for (j = 0; j < f->op[i].nin; j++)
			readers += f->op[i].in[j].tensor == x;
	return readers == 1;
}

int
pass_views(Comp *c)
{
	Fusion *f = c->fusion;
	Sinker x = {c, f, NULL, 0, 0, NULL, NULL, 0};
	bool *live, *pure, moved = false, reduces = false, placed = false;
	int i, j, n, ntensor, split = -1;

	pure = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *pure);   /* inputs, and pointwise ops of them */
	for (i = 0; i < f->ninput; i++)
		pure[f->input[i]] = true;
	for (i = 1; i < f->nop; i++) {
		pure[f->op[i].out] = sinkable(&f->op[i]);
		for (j = 0; j < f->op[i].nin; j++)
			pure[f->op[i].out] &= !f->op[i].in[j].tensor || pure[f->op[i].in[j].tensor];
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i], *def = f->tensor[o->in[0].tensor].def ? &f->op[f->tensor[o->in[0].tensor].def] : NULL;

		reduces |= op_info[o->kind].cls == CLS_REDUCE;
		if (op_info[o->kind].cls != CLS_UNARY && op_info[o->kind].cls != CLS_BINARY &&
		    op_info[o->kind].cls != CLS_VIEW && op_info[o->kind].cls != CLS_REDUCE)
			return 0;   /* another family: its views stay (schedule says what it takes) */
		placed |= o->kind == OP_CAT || (o->kind == OP_SLICE_SCATTER && !view_in_place(f, o)) ||
		          (o->kind == OP_PAD && def && sinkable(def));
		if (op_info[o->kind].cls == CLS_VIEW && o->kind != OP_INDEX_COPY && o->kind != OP_SLICE_SCATTER && def &&
		    (sinkable(def) || op_info[def->kind].cls == CLS_REDUCE))
			moved = true;   /* (a view of a reduction's result: a reshape folds into it) */
		moved |= keeps_dims_after(f, pure, o);
	}
	if (reduces && placed)
		return 0;   /* (a reduction's kernel reads views, not cats or pads: schedule says so) */
	moved |= placed;
	for (i = 0; i < f->nout && split < 0 && !reduces; i++)
		if (!lower_same_shape(&f->tensor[fusion_stored(f, i)], &f->tensor[fusion_stored(f, 0)]))
			split = split_dim(f);
	if (!moved && split < 0)
		return 0;
	ntensor = x.capdef = f->ntensor;
	x.def = arena_alloc(c->arena, (size_t)x.capdef * sizeof *x.def);
	x.memo = arena_alloc(c->arena, (size_t)x.capdef * sizeof *x.memo);
	VEC_PUSH(c->arena, x.ops, x.nops, x.capops);   /* [0] unused */
	for (i = 1; i < f->nop && x.nops <= MAX_SUNK_OPS; i++) {
		const Op *o = &f->op[i];
		int src = o->in[0].tensor;

		if (o->kind == OP_SLICE_SCATTER && o->step == 1 && !view_in_place(f, o))
			scatter_as_cat(&x, o);
		else if (o->kind == OP_INDEX_COPY || o->kind == OP_SLICE_SCATTER)
			push(&x, o);   /* (written in place: its part is computed, at the part's own indices) */
		else if (o->kind == OP_CAT)
			place_cat(&x, o);
		else if (o->kind == OP_PAD && x.def[src] && sinkable(&x.ops[x.def[src]]))
			place_pad(&x, o);
		else if (folds_into_reduction(f, x.def, x.ops, o)) {
			x.ops[x.def[src]].out = o->out;   /* (the reduction writes the reshape's result) */
			x.def[o->out] = x.def[src];
		} else if (keeps_dims_after(f, pure, o))
			permute_first(&x, o);
		else if (op_info[o->kind].cls == CLS_VIEW)
			sink_view(&x, o, src, o->out);
		else
			push(&x, o);
	}
	if (split >= 0 && x.nops <= MAX_SUNK_OPS)
		split_outputs(&x, split);
	if (x.nops > MAX_SUNK_OPS) {   /* each view copies the ops above it: a deep fusion of many views */
		for (i = ntensor; i < f->ntensor; i++)   /* (the rewrite's new values: none) */
			f->tensor[i].kind = TK_NONE;
		return 0;   /* left as written: the schedule says which view it cannot read */
	}
	/* drop what no output needs: the values the views were of, computed at their own shape */
	live = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *live);
	if (f->split_out)
		live[f->split_out] = true;   /* (the outputs are its parts: their own ops are computed inside it) */
	for (i = 0; i < f->nout && !f->split_out; i++)
		live[f->out[i].tensor] = true;
	for (i = x.nops - 1; i >= 1; i--)
		for (j = 0; j < x.ops[i].nin && live[x.ops[i].out]; j++)
			live[x.ops[i].in[j].tensor] = true;
	f->ref_op = f->op;
	f->nref_op = f->nop;
	f->op = x.ops;
	for (n = i = 1; i < x.nops; i++)
		if (live[x.ops[i].out]) {
			f->op[n] = x.ops[i];
			f->tensor[f->op[n].out].def = n;
			n++;
		}
	f->nop = f->capop = n;
	for (i = 1; i < f->ntensor; i++)
		if (f->tensor[i].kind == TK_VALUE && !live[i]) {   /* (the reference's ops still define it) */
			f->tensor[i].kind = is_output(f, i) ? TK_VALUE : TK_NONE;   /* (a split's parts: their shapes) */
			f->tensor[i].def = 0;
		}
	for (i = 0; i < f->ninput; i++)
		f->tensor[f->input[i]].unread = !live[f->input[i]];
	return 0;
}
