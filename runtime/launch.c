/*
 * launch.c: from the caller's tensors to a launched kernel.
 *
 * Requires the kernel's launch description (Launch, codegen/launch_desc.c)
 * and its cubin; reads nothing of the kernel IR.
 *
 * The kernel works on a 2-D [rows, cols] view of its domain (the outputs'
 * shape).  Here the sizes bind from the tensors' shapes, every argument is
 * checked against the spec (dtype, rank, extents that name the same size
 * must agree, contiguity), the view is chosen (a flat kernel may take any
 * factorisation of the element count: wide rows keep TMA boxes full), the
 * tensor maps are built, the module is loaded once per kernel, and a
 * persistent grid of min(tiles, SMs x resident CTAs per SM) CTAs is launched.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* Stream-K's workspace for the launches on one stream (stream_workspace). */
typedef struct Workspace {
	CUstream stream;
	CUdeviceptr ptr;
	size_t bytes;
	bool spare;      /* on no stream yet: the first stream captured without one takes it */
	bool pinned;     /* used under a capture: a graph holds its address, so it is never freed or moved */
	bool retired;    /* pinned, then outgrown: kept for the graph, found by no stream */
	CUevent done;    /* recorded after the last work queued on it: once done, it is idle (flags zero) */
	uint64_t used;   /* Loaded.tick of its last launch: the least recent goes first */
} Workspace;

/* Streams with a workspace at once, pinned ones aside: a new stream beyond takes the least recent's. */
enum { WS_KEEP = 4 };

struct Loaded {
	Driver *drv;
	CUmodule mod;
	CUfunction fn;
	int ctas_per_sm;   /* resident CTAs per SM: the persistent grid is SMs x this */
	int clusters;      /* clusters resident at once (cuOccupancyMaxActiveClusters); 0: not asked yet */
	/*
	 * The tensor maps of the last launch, by param id, and what each was
	 * encoded from: a launch on the same tensors as the one before (a
	 * model's step after step) reuses them instead of encoding again.
	 */
	CUtensorMap *maps;
	TmapParams *map_of;
	void **map_addr;
	Workspace *ws;     /* stream-K: a workspace a stream launched on */
	int nws;
	uint64_t tick;     /* stream-K launches so far */
};

void
rt_unload(Loaded *st)
{
	if (!st)
		return;
	if (st->mod && st->drv)
		st->drv->cuModuleUnload(st->mod);
	for (int i = 0; i < st->nws && st->drv; i++) {
		if (st->ws[i].done) {   /* the launches that use it end before it goes */
			st->drv->cuEventSynchronize(st->ws[i].done);
			st->drv->cuEventDestroy(st->ws[i].done);
		}
		if (st->ws[i].ptr)
			st->drv->cuMemFree(st->ws[i].ptr);
	}
	free(st->ws);
	free(st->maps);
	free(st->map_of);
	free(st->map_addr);
	rt_driver_close(st->drv);
	free(st);
}

WsfStatus
rt_loaded_driver(Comp *c, Loaded **st, Driver **d)
{
	WsfStatus s;

	if (!*st && !(*st = calloc(1, sizeof **st)))
		return WSF_ERR_NOMEM;
	if (!(*st)->drv && (s = rt_driver_open(c, &(*st)->drv)) != WSF_OK)
		return s;
	*d = (*st)->drv;
	return WSF_OK;
}

static WsfStatus
load_module(Comp *c, const Launch *l, Loaded *st, const void *cubin)
{
	Driver *d = st->drv;
	WsfStatus s;

	if (st->fn)
		return WSF_OK;
	if (!cubin)
		return diag_error(c, (Pos){0}, "kernel '%s' has no cubin: it was not compiled that far", l->entry),
		       WSF_ERR_USAGE;
	if (l->smem_bytes > d->smem_optin)
		return diag_error(c, (Pos){0},
		                  "kernel '%s' needs %d bytes of shared memory per CTA, the device allows %d",
		                  l->entry, l->smem_bytes, d->smem_optin),
		       WSF_ERR_INPUT;
	if ((s = rt_check(c, d, d->cuModuleLoadData(&st->mod, cubin), "cuModuleLoadData")) != WSF_OK)
		return s;
	if ((s = rt_check(c, d, d->cuModuleGetFunction(&st->fn, st->mod, l->entry), "cuModuleGetFunction")))
		return s;
	if ((s = rt_check(c, d,
	                  d->cuFuncSetAttribute(st->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	                                        l->smem_bytes),
	                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")))
		return s;
	if ((s = rt_check(c, d,
	                  d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&st->ctas_per_sm, st->fn, l->threads,
	                                                                 (size_t)l->smem_bytes),
	                  "cuOccupancyMaxActiveBlocksPerMultiprocessor")))
		return s;
	if (st->ctas_per_sm < 1)
		return diag_error(c, (Pos){0}, "kernel '%s' (%d threads, %d bytes of shared memory) cannot be "
		                  "resident on this GPU", l->entry, l->threads, l->smem_bytes),
		       WSF_ERR_INPUT;
	return WSF_OK;
}

static const char *
arg_name(const Fusion *f, int i)
{
	return i < f->ninput ? f->tensor[f->input[i]].name : f->tensor[f->out[i - f->ninput].tensor].name;
}

/*
 * Binds the fusion's sizes from the arguments' shapes into VAL and checks
 * them: before anything reads a shape, an argument must exist and have
 * one; every extent is 1..MAX_EXTENT (what wsf_set_size takes), and the
 * element and byte counts must fit 64 bits, so no later product of sizes
 * can overflow.
 */
static WsfStatus
bind_args(Comp *c, const Fusion *f, const WsfTensor *args, int nargs, int64_t *val, int64_t *rs)
{
	int i, d;

	if (nargs != f->ninput + f->nout)
		return diag_error(c, (Pos){0}, "kernel '%s' takes %d arguments (%d inputs, %d outputs), saw %d",
		                  f->name, f->ninput + f->nout, f->ninput, f->nout, nargs),
		       WSF_ERR_INPUT;
	if (nargs > 0 && !args)
		return diag_error(c, (Pos){0}, "kernel '%s': the arguments are a null pointer (%d expected)", f->name,
		                  nargs),
		       WSF_ERR_USAGE;
	for (i = 0; i < nargs; i++) {
		const Tensor *t = i < f->ninput ? &f->tensor[f->input[i]] : &f->tensor[f->out[i - f->ninput].tensor];
		Dtype dt = i < f->ninput ? t->dtype : f->out[i - f->ninput].dtype;
		const WsfTensor *a = &args[i];
		int64_t expect = 1, bytes, row = 0;

		if ((Dtype)a->dtype != dt)
			return diag_error(c, t->pos, "argument '%s': dtype %s, expected %s", arg_name(f, i),
			                  (unsigned)a->dtype < DT_COUNT ? dtype_info[a->dtype].name : "?",
			                  dtype_info[dt].name),
			       WSF_ERR_INPUT;
		if (a->ndim != t->rank)
			return diag_error(c, t->pos, "argument '%s': rank %d, expected %d", arg_name(f, i), a->ndim,
			                  t->rank),
			       WSF_ERR_INPUT;
		if (a->ndim > 0 && !a->shape)
			return diag_error(c, t->pos, "argument '%s': its shape is a null pointer, with ndim %d",
			                  arg_name(f, i), a->ndim),
			       WSF_ERR_USAGE;
		if (!a->data)
			return diag_error(c, t->pos, "argument '%s': null data pointer", arg_name(f, i)), WSF_ERR_INPUT;
		for (d = t->rank - 1; d >= 0; d--) {
			Dim dim = t->dim[d];
			int64_t n = a->shape[d];

			if (n <= 0 || n > MAX_EXTENT)
				return diag_error(c, t->pos, "argument '%s': dim %d is %lld, %s", arg_name(f, i), d,
				                  (long long)n, n <= 0 ? "expected a positive extent" :
				                  "more than the limit of 2^40 (1099511627776)"),
				       WSF_ERR_INPUT;
			if (a->strides && n != 1 && a->strides[d] != (row ? row : expect)) {
				/* the rows' stride may be wider than a row: a slice of the last dim (x[:, :N]) */
				if (d != t->rank - 1 && !row && a->strides[d] > expect && a->strides[d] <= MAX_EXTENT) {
					row = rs[i] = a->strides[d];
				} else {
					return diag_error(c, t->pos, "argument '%s': dim %d has stride %lld, expected %lld (%s)",
					                  arg_name(f, i), d, (long long)a->strides[d], (long long)(row ? row : expect),
					                  d == t->rank - 1 ? "the last dim's elements must be consecutive: a transpose "
					                  "or a step along it is a copy, .contiguous()" : "the rows, its dims but the "
					                  "last, must be one run of equal steps: a slice of the last dim is taken, "
					                  "of another dim not yet"),
					       WSF_ERR_INPUT;
				}
			}
			if (row) {   /* the rows from here out: steps of the row stride */
				if (!size_mul(row, n, &row))
					return diag_error(c, t->pos, "argument '%s': its strides reach 2^63 elements or more",
					                  arg_name(f, i)),
					       WSF_ERR_INPUT;
			}
			if (!size_mul(expect, n, &expect))
				return diag_error(c, t->pos, "argument '%s': its shape has 2^63 elements or more",
				                  arg_name(f, i)),
				       WSF_ERR_INPUT;
			if (!dim.sym) {
				if (n != dim.ext)
					return diag_error(c, t->pos, "argument '%s': dim %d is %lld, the spec says %lld",
					                  arg_name(f, i), d, (long long)n, (long long)dim.ext),
					       WSF_ERR_INPUT;
			} else if (!val[dim.sym]) {
				val[dim.sym] = n;
			} else if (val[dim.sym] != n) {
				return diag_error(c, t->pos, "argument '%s': dim %d is %lld, but size %s is %lld from "
				                  "an earlier argument", arg_name(f, i), d, (long long)n,
				                  f->sym[dim.sym].name, (long long)val[dim.sym]),
				       WSF_ERR_INPUT;
			}
		}
		if (!size_mul(expect, dtype_info[dt].bytes, &bytes))
			return diag_error(c, t->pos, "argument '%s': %lld %s elements take 2^63 bytes or more",
			                  arg_name(f, i), (long long)expect, dtype_info[dt].name),
			       WSF_ERR_INPUT;
	}
	for (i = 0; i < f->nout; i++) {   /* an output written into an input's memory: that memory, as laid out */
		int in = fusion_input_of(f, f->out[i].alias);

		if (!f->out[i].alias)
			continue;
		if (args[f->ninput + i].data != args[in].data || rs[f->ninput + i] || rs[in])
			return diag_error(c, f->out[i].alias_pos, "argument '%s' is written into input '%s' in place "
			                  "(alias): pass %s's memory, contiguous, for both%s", arg_name(f, f->ninput + i),
			                  arg_name(f, in), arg_name(f, in), args[f->ninput + i].data != args[in].data ?
			                  " (the pointers differ)" : " (its rows are strided)"),
			       WSF_ERR_INPUT;
	}
	for (i = 1; i < f->nsym; i++)   /* a size a view made constant extents from (infer.c): as compiled */
		if (f->sym[i].fixed && val[i] && val[i] != f->sym[i].value)
			return diag_error(c, f->sym[i].pos, "the arguments make %s %lld, but the kernel was compiled at %s = "
			                  "%lld, from which a view made constant extents: compile it at this size (-D %s=%lld)",
			                  f->sym[i].name, (long long)val[i], f->sym[i].name, (long long)f->sym[i].value,
			                  f->sym[i].name, (long long)val[i]),
			       WSF_ERR_INPUT;
	return WSF_OK;
}

/*
 * The 2-D view of the kernel's domain tensor under the bound sizes VAL:
 * [product of the leading dims, last dim], or for a flat kernel wide rows
 * (unless NATURAL: an argument's rows are strided, which only its own rows
 * keep).
 * The domain need not be an argument (a row reduction's may be a broadcast
 * of two), so its element count is checked here too.
 */
static WsfStatus
choose_view(Comp *cp, const Launch *l, const int64_t *val, bool natural, int64_t *rows, int64_t *cols, int64_t *batch)
{
	const Fusion *f = l->fusion;
	const Tensor *t = &f->tensor[l->domain];
	int64_t n = 1, c;
	int i;

	for (i = 0; i < t->rank; i++)
		if (!size_mul(n, t->dim[i].sym ? val[t->dim[i].sym] : t->dim[i].ext, &n))
			return diag_error(cp, t->pos, "kernel '%s': its domain '%s' has 2^63 elements or more at these "
			                  "sizes", f->name, t->name),
			       WSF_ERR_INPUT;
	*cols = t->rank ? (t->dim[t->rank - 1].sym ? val[t->dim[t->rank - 1].sym] : t->dim[t->rank - 1].ext) : 1;
	*rows = n / *cols;
	if (l->batched) {   /* [batch, rows, cols]: rows are one batch's */
		*rows = t->dim[t->rank - 2].sym ? val[t->dim[t->rank - 2].sym] : t->dim[t->rank - 2].ext;
		*batch = n / (*rows * *cols);
	}
	if (!l->flat || natural)   /* (a row-strided argument: its own rows, not a factorisation) */
		return WSF_OK;
	/*
	 * Rows as wide as a tile make every tile one contiguous run of memory; a
	 * narrower power of two that divides n still keeps TMA's 16-byte strides.
	 */
	for (c = l->tile_cols; c >= 8; c /= 2)
		if (n % c == 0) {
			*rows = n / c;
			*cols = c;
			return WSF_OK;
		}
	*rows = 1;
	*cols = n;
	return WSF_OK;
}

/*
 * TMA's row rule for tensor P mapped with rows of COLS, its last dim: a
 * multiple of 16 bytes.  Checked here, where the spec's dims are known, to
 * say it as the compile-time check does (the size's name, not "dim 1" of a
 * 2-D view); a flat kernel's rows are a factorisation of its own, and
 * rt_tmap_params says that case.
 */
static WsfStatus
check_rows(Comp *c, const Fusion *f, const LaunchParam *p, int64_t cols)
{
	Dim last = p->dim[p->rank - 1];
	int bytes = dtype_info[p->dtype].bytes;
	bool in = p->arg < f->ninput;
	const char *role = in ? "input" : "output";
	Pos pos = in ? f->tensor[p->tensor].pos : f->out[p->arg - f->ninput].pos;

	if (cols * bytes % 16 == 0)
		return WSF_OK;
	if (last.sym)
		return diag_error(c, pos,
		                  "%s '%s': rows of %s = %lld %s elements are %lld bytes, not a multiple of 16 "
		                  "(TMA needs 16-byte row strides); make %s a multiple of %d",
		                  role, p->name, f->sym[last.sym].name, (long long)cols, dtype_info[p->dtype].name,
		                  (long long)cols * bytes, f->sym[last.sym].name, 16 / bytes),
		       WSF_ERR_INPUT;
	return diag_error(c, pos,
	                  "%s '%s': rows of %lld %s elements are %lld bytes, not a multiple of 16 (TMA needs "
	                  "16-byte row strides); make the last dim a multiple of %d",
	                  role, p->name, (long long)cols, dtype_info[p->dtype].name, (long long)cols * bytes,
	                  16 / bytes),
	       WSF_ERR_INPUT;
}

/*
 * TMA's coordinates are signed 32-bit, so a tensor map reaches 2^31
 * elements a dim, though the driver encodes dims up to 2^32: a coordinate
 * past it wraps negative and the copy faults, killing the context.
 * Checked for the map's SHAPE (RANK 2 or 3, outermost first) of param P,
 * in the tensor's terms; rt_tmap_params checks it again.
 */
static WsfStatus
check_coords(Comp *c, const Fusion *f, const LaunchParam *p, int rank, const int64_t *shape, bool own)
{
	bool in = p->arg < f->ninput;
	Pos pos = in ? f->tensor[p->tensor].pos : f->out[p->arg - f->ninput].pos;
	int d;

	for (d = 0; d < rank; d++) {
		const char *what = !own && rank == 2 ? (d ? "columns in the kernel's 2-D view of it" :
		                                              "rows in the kernel's 2-D view of it") :
		                   d == rank - 1 ? "elements in its last dim" :
		                   rank == 3 && d == 0 ? "batches (its dims but the last two, multiplied)" :
		                   "rows (its dims but the last, multiplied)";

		if (shape[d] > TMA_MAX_COORD)
			return diag_error(c, pos, "%s '%s': %lld %s are more than 2^31 (%lld), the most a tensor map "
			                  "reaches (TMA coordinates are signed 32-bit); launch it on fewer at a time",
			                  in ? "input" : "output", p->name, (long long)shape[d], what,
			                  (long long)TMA_MAX_COORD),
			       WSF_ERR_INPUT;
	}
	return WSF_OK;
}

/*
 * The tensor-map parameters of param P over the 2-D view; a single row gets a
 * padded stride.  OWN: a map of the argument's own shape, 2-D [all but its
 * last dim, its last dim], or with BATCHED (a batched matmul's tensor with
 * batch dims) 3-D [its batch dims, its last two], whose box is one batch deep.
 * Swizzled as the description says (P->swizzle, none off its own view).
 */
static WsfStatus
map_params(Comp *c, const Launch *l, const LaunchParam *p, const WsfTensor *a, int64_t rows, int64_t cols, bool own,
           bool batched,
           TmapParams *tp)
{
	int64_t shape[3], box[3] = {p->box[0], p->box[1]};
	WsfStatus s;
	int d;

	if (batched) {
		for (shape[0] = 1, d = 0; d < a->ndim - 2; d++)
			shape[0] *= a->shape[d];
		shape[1] = a->shape[a->ndim - 2];
		shape[2] = a->shape[a->ndim - 1];
		box[0] = 1;
		box[1] = p->box[0];
		box[2] = p->box[1];
		if ((s = check_rows(c, l->fusion, p, shape[2])) || (s = check_coords(c, l->fusion, p, 3, shape, own)) ||
		    (s = rt_tmap_params(c, p->name, p->dtype, 3, shape, box, p->swizzle, (uint64_t)a->data, tp)))
			return s;
		return WSF_OK;
	}
	if (own) {
		/* extents were checked by bind_args: the product fits */
		for (rows = 1, d = 0; d < a->ndim - 1; d++)
			rows *= a->shape[d];
		cols = a->shape[a->ndim - 1];
	} else if (p->view == VIEW_ROW) {
		rows = 1;
	}
	/* an operand's own map has a row stride even with one row; a domain view of one row is 1-D */
	if ((own || (p->view == VIEW_FULL && !l->flat && rows > 1)) && (s = check_rows(c, l->fusion, p, cols)))
		return s;
	shape[0] = rows;
	shape[1] = cols;
	if ((s = check_coords(c, l->fusion, p, 2, shape, own)))
		return s;
	if (own)
		return rt_tmap_params(c, p->name, p->dtype, 2, shape, box, p->swizzle, (uint64_t)a->data, tp);
	if (rows == 1) {
		/* one row: no row stride exists, so give TMA a 1-D map grown to 2-D by hand */
		if ((s = rt_tmap_params(c, p->name, p->dtype, 1, &shape[1], &box[1], p->swizzle, (uint64_t)a->data, tp)))
			return s;
		tp->rank = 2;
		tp->dims[1] = 1;
		tp->strides[0] = ((uint64_t)cols * dtype_info[p->dtype].bytes + 15) & ~(uint64_t)15;
		tp->box[1] = (uint32_t)box[0];
	} else if ((s = rt_tmap_params(c, p->name, p->dtype, 2, shape, box, p->swizzle, (uint64_t)a->data, tp))) {
		return s;
	}
	return WSF_OK;
}

/*
 * Param Q reads argument A, whose rows are ROW elements apart, wider than a
 * row (a slice of the last dim): a tensor map of its rows takes that stride
 * (map_params' caller patches it in); a pointer read at contiguous offsets
 * (a view, a broadcast, rows 16 bytes at a time) or a batched operand's 3-D
 * map does not yet.
 */
static WsfStatus
strided_arg(Comp *c, const Launch *l, const LaunchParam *q, const WsfTensor *a, int64_t row)
{
	const Fusion *f = l->fusion;

	if (q->kind == PK_TMAP && !(l->batched && a->ndim > 2) && (q->own_view || q->view == VIEW_FULL || q->view == VIEW_ROW))
		return WSF_OK;
	return diag_error(c, f->tensor[q->tensor].pos, "argument '%s': its rows are %lld elements apart, wider than "
	                  "a row (a slice of its last dim), but the kernel %s it %s at contiguous offsets; pass "
	                  "it contiguous (.contiguous())", arg_name(f, q->arg), (long long)row,
	                  q->arg < f->ninput ? "reads" : "writes",
	                  q->kind != PK_TMAP ? "through its pointer" : l->batched && a->ndim > 2 ? "as a batch of matrices" :
	                  "through a tensor map of another view"),
	       WSF_ERR_INPUT;
}

WsfStatus
rt_launch_plan(Comp *c, const Launch *l, const WsfTensor *args, int nargs, LaunchPlan *p)
{
	const Fusion *f = l->fusion;
	int64_t *val = arena_alloc(c->arena, (size_t)f->nsym * sizeof *val);
	int64_t *rs = arena_alloc(c->arena, (size_t)(nargs > 0 ? nargs : 1) * sizeof *rs);
	bool strided = false;
	WsfStatus s;
	int i;

	p->inner = 0;
	p->batch = 1;
	if ((s = bind_args(c, f, args, nargs, val, rs)) != WSF_OK)
		return s;
	for (i = 0; i < nargs; i++)
		strided = strided || rs[i];
	if ((s = choose_view(c, l, val, strided, &p->rows, &p->cols, &p->batch)))
		return s;
	if (l->row_chunk && p->cols > INT32_MAX - l->row_chunk)
		return diag_error(c, f->pos, "kernel '%s' streams rows of up to %d elements (32-bit element indices); "
		                  "these rows have %lld", f->name, INT32_MAX - l->row_chunk, (long long)p->cols),
		       WSF_ERR_INPUT;
	if (l->row_cap && p->cols > l->row_cap)
		return diag_error(c, f->pos,
		                  "kernel '%s' keeps rows of up to %d elements in shared memory; these rows have %lld: "
		                  "compile it with the wider size bound (-D)", f->name, l->row_cap, (long long)p->cols),
		       WSF_ERR_INPUT;
	/* a matmul's K, a broadcast input's extents: the dims lowering named, bound by the arguments */
	p->dims = arena_alloc(c->arena, (size_t)l->nparam * sizeof *p->dims);
	for (i = 1; i < l->nparam; i++)
		if (l->param[i].kind == PK_SIZE && (l->param[i].size == SZ_INNER || l->param[i].size == SZ_DIM))
			p->dims[i] = l->param[i].dim[0].sym ? val[l->param[i].dim[0].sym] : l->param[i].dim[0].ext;
	for (i = 1; i < l->nparam; i++)
		if (l->param[i].kind == PK_SIZE && l->param[i].size == SZ_INNER)
			p->inner = p->dims[i];
	p->tmap = arena_alloc(c->arena, (size_t)l->nparam * sizeof *p->tmap);
	for (i = 1; i < l->nparam; i++) {
		const LaunchParam *q = &l->param[i];
		const WsfTensor *a = q->arg >= 0 ? &args[q->arg] : NULL;

		if (a && rs[q->arg] && (s = strided_arg(c, l, q, a, rs[q->arg])) != WSF_OK)
			return s;
		if (q->kind == PK_TMAP && (s = map_params(c, l, q, a, p->rows, p->cols, q->own_view,
		                                          l->batched && a->ndim > 2, &p->tmap[i])) != WSF_OK)
			return s;
		if (q->kind == PK_TMAP && a && rs[q->arg] && p->tmap[i].rank == 2) {   /* the rows' own stride */
			p->tmap[i].strides[0] = (uint64_t)rs[q->arg] * dtype_info[q->dtype].bytes;
			if (p->tmap[i].strides[0] % 16 || p->tmap[i].strides[0] >= ((uint64_t)1 << 40))
				return diag_error(c, f->tensor[q->tensor].pos, "argument '%s': its row stride, %lld %s elements, "
				                  "is %llu bytes: a tensor map takes multiples of 16 below 2^40",
				                  arg_name(f, q->arg), (long long)rs[q->arg], dtype_info[q->dtype].name,
				                  (unsigned long long)p->tmap[i].strides[0]),
				       WSF_ERR_INPUT;
		}
		/* a broadcast input's offset divides the row index in 32 bits (wsf_udiv) */
		if ((q->view == VIEW_ROW_AT || q->view == VIEW_COL_AT) && p->rows * p->batch > UINT32_MAX)
			return diag_error(c, f->tensor[q->tensor].pos,
			                  "kernel '%s' reads '%s' (broadcast along a leading dim) with 32-bit row indices, "
			                  "but its view has %lld rows; launch it on fewer", f->name, q->name,
			                  (long long)(p->rows * p->batch)),
			       WSF_ERR_INPUT;
		/* 16-byte loads and stores from registers and bulk row copies need 16-byte aligned rows */
		if (q->kind == PK_PTR && (q->view == VIEW_FULL || q->view == VIEW_ROW || q->view == VIEW_ROW_AT) &&
		    (uintptr_t)a->data % 16)
			return diag_error(c, f->tensor[q->tensor].pos,
			                  "argument '%s': data pointer %p is not 16-byte aligned (pass a tensor that "
			                  "starts on a 16-byte boundary, not an offset view)",
			                  f->tensor[q->tensor].name, a->data),
			       WSF_ERR_INPUT;
		/* rows > 1: a row stride; bulk row copies also need 16-byte sizes, even for one row */
		/* (a scatter's rows, VIEW_ROW_AT outputs, land at an index's row: its stride counts for one row too) */
		if (q->kind == PK_PTR && (((q->view == VIEW_FULL || q->view == VIEW_ROW_AT) &&
		                           (p->rows > 1 || (q->view == VIEW_ROW_AT && q->arg >= f->ninput))) || q->bulk) &&
		    p->cols * dtype_info[q->dtype].bytes % 16)
			return diag_error(c, f->tensor[q->tensor].pos,
			                  "argument '%s': rows of %lld %s elements are %lld bytes, not a multiple of 16 "
			                  "(the kernel moves rows 16 bytes at a time; pad the last dim)",
			                  f->tensor[q->tensor].name, (long long)p->cols, dtype_info[q->dtype].name,
			                  (long long)(p->cols * dtype_info[q->dtype].bytes)),
			       WSF_ERR_INPUT;
		/* a view read as rows at an offset: its strides are products with the input's rows (views.c) */
		if (a && q->kind == PK_PTR && (q->view == VIEW_ROW_AT || q->view == VIEW_FULL) && q->arg < f->ninput &&
		    q->tensor != f->input[q->arg] &&
		    a->ndim && a->shape[a->ndim - 1] * dtype_info[q->dtype].bytes % 16)
			return diag_error(c, f->tensor[f->input[q->arg]].pos,
			                  "argument '%s': rows of %lld %s elements are %lld bytes, not a multiple of 16 (the "
			                  "kernel reads its view '%s' 16 bytes at a time; pad the last dim)",
			                  f->tensor[f->input[q->arg]].name, (long long)a->shape[a->ndim - 1],
			                  dtype_info[q->dtype].name, (long long)(a->shape[a->ndim - 1] * dtype_info[q->dtype].bytes),
			                  q->name),
			       WSF_ERR_INPUT;
	}
	/* a reduction over rows divides its rows by a group's in 32 bits (lower_reduce_grid.c) */
	if (l->grid == GRID_PERSISTENT && l->workspace_slot && p->rows >= ((int64_t)1 << 32))
		return diag_error(c, f->pos, "kernel '%s' reduces over rows with 32-bit row indices, but its view has %lld "
		                  "rows; launch it on fewer", f->name, (long long)p->rows),
		       WSF_ERR_INPUT;
	/* in clusters, tiles of a cluster's CTA tiles together (lower_tile_loop) */
	p->tiles = l->row_tiles ? p->rows /* a tile is a row */
	           : ((p->rows + l->tile_rows * l->cluster_rows - 1) / (l->tile_rows * l->cluster_rows)) *
	             ((p->cols + l->tile_cols * l->cluster_cols - 1) / (l->tile_cols * l->cluster_cols)) * p->batch;
	if (p->tiles >= ((int64_t)1 << 31))
		return diag_error(c, f->pos, "kernel '%s': %lld tiles of %d x %d; at most 2^31 are supported", f->name,
		                  (long long)p->tiles, l->tile_rows, l->tile_cols),
		       WSF_ERR_INPUT;
	return WSF_OK;
}

int64_t
rt_wait_words(const Launch *l, const LaunchPlan *p)
{
	int64_t rows_t = (p->rows + l->tile_rows - 1) / l->tile_rows, cols_t = (p->cols + l->tile_cols - 1) / l->tile_cols;
	int64_t er = l->wait_tile[0] ? l->wait_tile[0] : l->tile_rows, ec = l->wait_tile[1] ? l->wait_tile[1] : l->tile_cols;

	/* an epilogue input or an output a word a tile of its writer's (the kernel's own by default), an
	   operand A a row tile, B a column tile */
	return ((l->waits - l->wait_rows - l->wait_cols) * ((p->rows + er - 1) / er) * ((p->cols + ec - 1) / ec) +
	        l->wait_rows * rows_t + l->wait_cols * cols_t) * p->batch;
}

/*
 * The grid: a CTA a tile (a cluster a cluster tile), at most as many as can
 * be resident at once when the kernel is persistent (SMs x CTAs an SM; in
 * clusters, the clusters that fit, which the GPCs' SM counts decide), and
 * at most the caller's MAX_CTAS (rounded down to whole clusters); a
 * stream-K kernel's is all of those, however few the tiles.
 */
static WsfStatus
persistent_grid(Comp *c, const Launch *l, Loaded *st, const CUlaunchConfig *cfg, const LaunchExtra *x,
                int64_t tiles, int64_t *grid)
{
	Driver *d = st->drv;
	int64_t n = l->cluster > 1 ? l->cluster : 1, most;
	int clusters;
	WsfStatus s;

	if (n == 1) {
		most = (int64_t)d->sm_count * st->ctas_per_sm;
	} else {
		CUlaunchConfig q = *cfg;

		q.gridDimX = (unsigned)n;
		/* the answer depends on the kernel, its block and shared memory, and the cluster: asked once */
		if (!st->clusters && (s = rt_check(c, d, d->cuOccupancyMaxActiveClusters(&st->clusters, st->fn, &q),
		                                   "cuOccupancyMaxActiveClusters")) != WSF_OK)
			return s;
		clusters = st->clusters;
		if (clusters < 1)
			return diag_error(c, l->fusion->sched.cluster_pos.line ? l->fusion->sched.cluster_pos :
			                  l->fusion->sched.split_pos, "kernel '%s': no cluster of %lld CTAs (%d threads, "
			                  "%d bytes of shared memory each) fits this GPU at once", l->fusion->name, (long long)n,
			                  l->threads, l->smem_bytes),
			       WSF_ERR_INPUT;
		most = clusters * n;
	}
	if (x && x->max_ctas && most > x->max_ctas)
		most = x->max_ctas / n * n > 0 ? x->max_ctas / n * n : n;
	if (l->grid == GRID_PERSISTENT && l->workspace_slot && most > SK_MAX_CTAS)   /* a reduction's items' flags */
		most = SK_MAX_CTAS;
	/* stream-K spreads the k-steps of fewer tiles than CTAs over them all (stream_k_plan) */
	*grid = l->grid == GRID_PER_TILE || (l->grid == GRID_PERSISTENT && tiles * n < most) ? tiles * n : most;
	if (*grid > INT32_MAX)   /* a grid's x: fewer than 2^31 tiles, but in clusters */
		return diag_error(c, l->fusion->pos, "kernel '%s': a grid of %lld CTAs (%lld tiles of %lld CTAs); at most "
		                  "2^31 - 1 launch at once", l->fusion->name, (long long)*grid, (long long)tiles,
		                  (long long)n),
		       WSF_ERR_INPUT;
	return WSF_OK;
}

static WsfStatus
map_cache(Loaded *st, int nparam)
{
	if (!(st->maps = aligned_alloc(64, (size_t)nparam * sizeof *st->maps)) ||
	    !(st->map_of = calloc((size_t)nparam, sizeof *st->map_of)) ||
	    !(st->map_addr = calloc((size_t)nparam, sizeof *st->map_addr))) {
		free(st->maps), free(st->map_of), free(st->map_addr);
		st->maps = NULL, st->map_of = NULL, st->map_addr = NULL;
		return WSF_ERR_NOMEM;
	}
	return WSF_OK;
}

static bool
same_map(const TmapParams *a, const TmapParams *b)
{
	int i;

	if (a->dtype != b->dtype || a->rank != b->rank || a->swizzle != b->swizzle)
		return false;
	for (i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || a->box[i] != b->box[i] || (i + 1 < a->rank && a->strides[i] != b->strides[i]))
			return false;
	return true;
}

/* The tensor map of param I for P at ADDR in ST->maps[I]: the last launch's when it was made from the same. */
static WsfStatus
cached_map(Comp *c, Loaded *st, int i, const char *name, const TmapParams *p, void *addr)
{
	WsfStatus s;

	if (st->map_addr[i] && st->map_addr[i] == addr && same_map(&st->map_of[i], p))
		return WSF_OK;
	st->map_addr[i] = NULL;   /* until the encode succeeds */
	if ((s = rt_tmap_encode(c, st->drv, name, p, addr, &st->maps[i])) != WSF_OK)
		return s;
	st->map_of[i] = *p;
	st->map_addr[i] = addr;
	return WSF_OK;
}

/* W's work queued on STREAM so far: W->done is recorded after it. */
static WsfStatus
ws_queued(Comp *c, Driver *d, Workspace *w, CUstream stream)
{
	WsfStatus s;

	if (!w->done && (s = rt_check(c, d, d->cuEventCreate(&w->done, CU_EVENT_DISABLE_TIMING), "cuEventCreate")))
		return s;
	return rt_check(c, d, d->cuEventRecord(w->done, stream), "cuEventRecord");
}

/* Waits until the work queued on W is done: its memory is then idle, its flags zero. */
static WsfStatus
ws_idle(Comp *c, Driver *d, Workspace *w)
{
	return w->done ? rt_check(c, d, d->cuEventSynchronize(w->done), "cuEventSynchronize") : WSF_OK;
}

/* NEED bytes of zeros on the GPU in W, zeroed on STREAM. */
static WsfStatus
ws_alloc(Comp *c, Driver *d, Workspace *w, CUstream stream, size_t need)
{
	WsfStatus s;

	if ((s = rt_check(c, d, d->cuMemAlloc(&w->ptr, need), "cuMemAlloc (stream-K's workspace)")) != WSF_OK)
		return s;
	if ((s = rt_check(c, d, d->cuMemsetD8Async(w->ptr, 0, need, stream), "cuMemsetD8Async")) != WSF_OK ||
	    (s = ws_queued(c, d, w, stream)) != WSF_OK) {
		d->cuMemFree(w->ptr);
		w->ptr = 0;
		return s;
	}
	w->bytes = need;
	return WSF_OK;
}

/* ST's workspace on STREAM, or its spare (SPARE); NULL if none. */
static Workspace *
ws_find(Loaded *st, CUstream stream, bool spare)
{
	int i;

	for (i = 0; i < st->nws; i++)
		if (st->ws[i].spare == spare && !st->ws[i].retired && (spare || st->ws[i].stream == stream))
			return &st->ws[i];
	return NULL;
}

/*
 * A workspace for a stream that has none, with WS_KEEP streams' already:
 * the least recently launched one's (pinned ones aside); else NULL.
 */
static Workspace *
ws_evict(Loaded *st)
{
	Workspace *lru = NULL;
	int i, n = 0;

	for (i = 0; i < st->nws; i++) {
		Workspace *w = &st->ws[i];

		if (w->spare || w->pinned)
			continue;
		n++;
		if (!lru || w->used < lru->used)
			lru = w;
	}
	return n < WS_KEEP ? NULL : lru;
}

/* A new workspace entry of ST, all zero (no memory yet); NULL when out of memory. */
static Workspace *
ws_add(Loaded *st)
{
	Workspace *more = realloc(st->ws, (size_t)(st->nws + 1) * sizeof *more);

	if (!more)
		return NULL;
	st->ws = more;
	st->ws[st->nws] = (Workspace){0};
	return &st->ws[st->nws++];
}

/*
 * Stream-K's workspace (PK_WORKSPACE) for a launch of GRID CTAs on STREAM,
 * as an index of ST->ws in *OUT (-1: none): SK_MAX_CTAS 32-bit flags, then
 * a slot of Launch.workspace_slot bytes a CTA; the flags zero before the first
 * launch (a memset on STREAM) and left zero by every launch, which takes
 * each flag set back to 0, so that a later launch of any grid finds them
 * so.  One a stream: launches on one stream run in turn, while two
 * streams' could run at once and share the flags.  At most WS_KEEP
 * streams keep one: a new stream beyond takes the least recently launched
 * one's (ws_evict), its launches ordered after the work queued with it on
 * the other stream by an event recorded after each (the device waits, not
 * the host, which could wait for ever on a stream held by a later event;
 * the event, not that stream, which its owner may have destroyed).  A
 * larger grid than before (max_ctas raised) gets a larger one once the
 * host has waited for that work.  A stream that is being captured into a
 * CUDA graph cannot allocate, and is often not one launched on before
 * (torch.cuda.graph captures on a stream of its own after warm-up on
 * another): so a launch outside a capture also makes a spare, zeroed
 * before it returns, which the first stream captured without a workspace
 * takes.  A workspace used under a capture is pinned: the graph may
 * replay at any time, so it is neither moved nor freed until the kernel
 * is.  With neither, *OUT is -1 when the kernel took stream-K by default
 * (the launch then runs every tile whole: sk_on 0), and an error when the
 * schedule asked for it.
 */
static WsfStatus
stream_workspace(Comp *c, const Launch *l, Loaded *st, CUstream stream, int64_t grid, int *out)
{
	Driver *d = st->drv;
	size_t need = 4 * (size_t)SK_MAX_CTAS + (size_t)grid * (size_t)l->workspace_slot;
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
	Workspace *w = ws_find(st, stream, false), *spare = ws_find(st, stream, true);
	WsfStatus s;

	*out = -1;
	if (d->cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS)
		cap = CU_STREAM_CAPTURE_STATUS_NONE;
	if (cap != CU_STREAM_CAPTURE_STATUS_NONE) {
		if (!w && spare && spare->bytes >= need) {
			spare->spare = false;
			spare->stream = stream;
			w = spare;
		}
		if (w && w->bytes >= need) {
			w->pinned = true;
			w->used = ++st->tick;
			*out = (int)(w - st->ws);
			return WSF_OK;
		}
		if (!l->workspace_asked)
			return WSF_OK;
		return diag_error(c, l->fusion->pos, "kernel '%s' takes stream-K, whose workspace (%zu bytes) a stream "
		                  "being captured into a CUDA graph cannot allocate: launch it once before the capture "
		                  "(a launch keeps a spare for the next stream captured), or write schedule: {stream_k: "
		                  "false}", l->fusion->name, need),
		       WSF_ERR_USAGE;
	}
	if (w && w->pinned && w->bytes < need) {   /* outgrown: the graph keeps it, the stream gets another */
		w->retired = true;
		w = NULL;
	}
	/* another stream's: this stream's launches start once those queued with it there are done */
	if (!w && (w = ws_evict(st)) && w->done &&
	    (s = rt_check(c, d, d->cuStreamWaitEvent(stream, w->done, 0), "cuStreamWaitEvent")) != WSF_OK)
		return s;
	if (!w && !(w = ws_add(st)))
		return WSF_ERR_NOMEM;
	w->stream = stream;
	w->used = ++st->tick;
	if (w->ptr && w->bytes < need) {   /* the launches that use the smaller one are done before it goes */
		if ((s = ws_idle(c, d, w)) != WSF_OK)
			return s;
		d->cuMemFree(w->ptr);
		w->ptr = 0;
		w->bytes = 0;
	}
	if (!w->ptr && (s = ws_alloc(c, d, w, stream, need)) != WSF_OK)
		return s;
	*out = (int)(w - st->ws);
	spare = ws_find(st, stream, true);
	if (spare && spare->bytes >= need)
		return WSF_OK;
	/* the spare, zeroed before a capture on another stream can take it (no launch uses it yet); at best:
	   without one a capture runs whole tiles */
	if (!spare) {
		if (!(spare = ws_add(st)))
			return WSF_OK;
		spare->spare = true;
	}
	if (spare->ptr)
		d->cuMemFree(spare->ptr);
	spare->ptr = 0;
	spare->bytes = 0;
	if (d->cuMemAlloc(&spare->ptr, need) != CUDA_SUCCESS) {
		spare->ptr = 0;
		return WSF_OK;
	}
	if (d->cuMemsetD8Async(spare->ptr, 0, need, stream) != CUDA_SUCCESS ||
	    d->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
		d->cuMemFree(spare->ptr);
		spare->ptr = 0;
		return WSF_OK;
	}
	spare->bytes = need;
	return WSF_OK;
}

/*
 * Stream-K's part of a launch on GRID CTAs (persistent_grid: all the GPU
 * holds): the workspace in *WORK, or 0 with *GRID the whole tiles' grid
 * where a kernel that took stream-K by default cannot have one (a first
 * launch under a CUDA-graph capture) or its plan cannot run (more CTAs
 * than SK_MAX_CTAS, or a K too long for its 32-bit division): its tiles
 * then run whole, as without stream-K.  Where the schedule asked for it,
 * those are errors.
 */
static WsfStatus
stream_k_launch(Comp *c, const Launch *l, Loaded *st, CUstream stream, const LaunchPlan *plan, int64_t *grid,
                int *ws, CUdeviceptr *work)
{
	bool asked = l->workspace_asked;
	/* the plan divides k-step counts up to (grid + 1) x ktiles in 32 bits (emit.c's wsf_udiv) */
	bool many = *grid > SK_MAX_CTAS, long_k = (*grid + 1) * plan->inner >= ((int64_t)1 << 31);
	int64_t n = l->cluster > 1 ? l->cluster : 1;   /* plan->tiles counts cluster tiles */
	WsfStatus s;

	*work = 0;
	*ws = -1;
	if (asked && many)
		return diag_error(c, l->fusion->pos, "kernel '%s': stream-K takes at most %d CTAs, and this GPU holds %lld; "
		                  "launch it with max_ctas, or write schedule: {stream_k: false}", l->fusion->name,
		                  SK_MAX_CTAS, (long long)*grid),
		       WSF_ERR_INPUT;
	if (asked && long_k)
		return diag_error(c, l->fusion->pos, "kernel '%s': K of %lld is too long for stream-K on %lld CTAs (at most "
		                  "%lld); write schedule: {stream_k: false}", l->fusion->name, (long long)plan->inner,
		                  (long long)*grid, (long long)((((int64_t)1 << 31) - 1) / (*grid + 1))),
		       WSF_ERR_INPUT;
	if (!many && !long_k && (s = stream_workspace(c, l, st, stream, *grid, ws)) != WSF_OK)
		return s;
	if (*ws >= 0)
		*work = st->ws[*ws].ptr;
	if (!*work && plan->tiles * n < *grid)   /* whole tiles: one CTA (cluster) each */
		*grid = plan->tiles * n;
	return WSF_OK;
}

WsfStatus
rt_launch(Comp *c, const Launch *l, Loaded **state, const void *cubin, const WsfTensor *args, int nargs,
          CUstream stream, const LaunchExtra *x)
{
	LaunchPlan plan;
	CUtensorMap *maps = NULL;
	void **kargs;
	int64_t *sizes, grid, sk_on = 0;
	CUlaunchConfig cfg;
	CUlaunchAttribute attr[3];
	bool grid_sync = l->row_tiles && l->workspace_slot;   /* a row kernel's sums over the rows meet at a barrier */
	CUdeviceptr work = 0;
	Driver *d;
	WsfStatus s;
	int i, ws = -1;

	if (l->signal && (!x || !x->flags || !x->epoch))
		return diag_error(c, l->fusion->sched.signal_pos, "kernel '%s' signals each output tile (schedule: "
		                  "signal): launch it with a flags buffer and a nonzero epoch (wsf_kernel_launch_ex)",
		                  l->fusion->name),
		       WSF_ERR_USAGE;
	if (!l->signal && x && x->flags)
		return diag_error(c, l->fusion->pos, "kernel '%s' sets no flags (%s): launch it without a flags buffer",
		                  l->fusion->name, l->tile_consumer ? "it signals its tiles to its own consumer role, "
		                                                      "which raises flags with 'flags: true'"
		                                                    : "schedule: {signal: per_tile} makes it"),
		       WSF_ERR_USAGE;
	if (l->waits && (!x || !x->wait_flags || !x->epoch))
		return diag_error(c, l->fusion->pos, "kernel '%s' waits for the tiles of %d input%s or output%s (wait: "
		                  "per_tile): launch it with wait_flags and a nonzero epoch (wsf_kernel_launch_ex)",
		                  l->fusion->name, l->waits, l->waits == 1 ? "" : "s", l->waits == 1 ? "" : "s"),
		       WSF_ERR_USAGE;
	if (!l->waits && x && x->wait_flags)
		return diag_error(c, l->fusion->pos, "kernel '%s' waits for no input or output (wait: per_tile makes it): launch it "
		                  "without wait_flags", l->fusion->name),
		       WSF_ERR_USAGE;
	if (x && x->max_ctas < 0)
		return diag_error(c, l->fusion->pos, "max_ctas is %d; it must be 0 (no cap) or more", x->max_ctas),
		       WSF_ERR_USAGE;
	if ((s = rt_launch_plan(c, l, args, nargs, &plan)) != WSF_OK)
		return s;
	if ((s = rt_loaded_driver(c, state, &d)) != WSF_OK)
		return s;
	if ((s = load_module(c, l, *state, cubin)) != WSF_OK)
		return s;
	if (!(*state)->maps && (s = map_cache(*state, l->nparam)) != WSF_OK)
		return s;
	maps = (*state)->maps;
	kargs = arena_alloc(c->arena, (size_t)l->nparam * sizeof *kargs);
	sizes = arena_alloc(c->arena, (size_t)l->nparam * sizeof *sizes);
	for (i = 1; i < l->nparam; i++) {
		const LaunchParam *p = &l->param[i];

		switch (p->kind) {
		case PK_TMAP:
			if ((s = cached_map(c, *state, i, p->name, &plan.tmap[i], args[p->arg].data)) != WSF_OK)
				return s;
			kargs[i - 1] = &maps[i];
			break;
		case PK_PTR:
			kargs[i - 1] = (void *)&args[p->arg].data;
			break;
		case PK_SIZE:
			if (p->size == SZ_SK_ON) {   /* once the workspace is known, below */
				kargs[i - 1] = &sk_on;
				break;
			}
			sizes[i] = p->size == SZ_ROWS ? plan.rows : p->size == SZ_INNER || p->size == SZ_DIM ? plan.dims[i] :
			           p->size == SZ_BATCH ? plan.batch : p->size == SZ_EPOCH ? (int64_t)x->epoch : plan.cols;
			kargs[i - 1] = &sizes[i];
			break;
		case PK_FLAGS:
			kargs[i - 1] = (void *)&x->flags;
			break;
		case PK_WAIT:
			kargs[i - 1] = (void *)&x->wait_flags;
			break;
		case PK_WORKSPACE:   /* once the grid is known, below */
			kargs[i - 1] = &work;
			break;
		default:
			break;
		}
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = (unsigned)l->threads;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.sharedMemBytes = (unsigned)l->smem_bytes;
	cfg.hStream = stream;
	cfg.attrs = attr;
	/* it may start while the grid before it finishes, and waits for it (griddepcontrol.wait); drivers
	   before CUDA 12.0 launch it as an ordinary kernel, which the wait then finds finished */
	if (l->pdl && !grid_sync && d->version >= 12000) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attr[cfg.numAttrs++].value.programmaticStreamSerializationAllowed = 1;
	}
	if (l->cluster > 1) {   /* the kernel's __cluster_dims__, said again for the occupancy query */
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[cfg.numAttrs].value.clusterDim.x = (unsigned)l->cluster;
		attr[cfg.numAttrs].value.clusterDim.y = attr[cfg.numAttrs].value.clusterDim.z = 1;
		cfg.numAttrs++;
	}
	if (grid_sync) {   /* every CTA resident at once, or the launch fails: a barrier of the grid never hangs */
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[cfg.numAttrs++].value.cooperative = 1;
	}
	if ((s = persistent_grid(c, l, *state, &cfg, x, plan.tiles, &grid)) != WSF_OK)
		return s;
	if (l->workspace_slot && (s = stream_k_launch(c, l, *state, stream, &plan, &grid, &ws, &work)) != WSF_OK)
		return s;
	sk_on = work != 0;
	cfg.gridDimX = (unsigned)grid;
	if ((s = rt_check(c, d, d->cuLaunchKernelEx(&cfg, (*state)->fn, kargs, NULL), "cuLaunchKernelEx")) != WSF_OK)
		return s;
	/* what a stream that takes this workspace next waits for (a pinned one is never taken) */
	if (ws >= 0 && !(*state)->ws[ws].pinned)
		return ws_queued(c, d, &(*state)->ws[ws], stream);
	return WSF_OK;
}
