/*
 * emit_topk.c: topk in a row kernel (register mode, after the output pass
 * left the row's values in registers), the reduction family's.  A row of a
 * few lanes (RowPlan.lanes: a router's 256 experts) takes k rounds of its
 * best element not yet taken, over the lanes by shuffles; a row of the CTA
 * selects by radix (device_reduction.cuh's wsf_block_topk: the k-th key
 * byte by byte, then the lower indices among equal ones) and ranks the k
 * chosen, k rounds of the CTA's reduction costing what a 16k-wide row
 * cannot spend.  Ops of the same input, k and order share one selection;
 * their outputs are stored where each element's place in the order is.
 */
#include "codegen.h"

/* Each topk's outputs (values, indices) of the selection of op I: element (bv, bi) at place r of the row's k. */
static void
topk_stores(Emit *e, int i)
{
	const Fusion *f = e->f;
	const Op *o = &f->op[i];
	int j, m;

	for (j = i; j < f->nop; j++) {
		const Op *p = &f->op[j];

		if (p->kind != OP_TOPK || p->in[0].tensor != o->in[0].tensor || !dim_equal(p->shape[0], o->shape[0]) ||
		    p->smallest != o->smallest)
			continue;
		for (m = 0; m < f->nout; m++)
			if (f->out[m].tensor == p->out)
				emit_line(e, "    wsf_store1%s(%s + row * %lld + r, %s);%s", emit_suffix(f->out[m].dtype),
				          emit_param_name(e, emit_param_of(e, p->out, true)), (long long)dim_value(f, o->shape[0]),
				          p->part ? "(float)bi" : "bv", emit_pos(e, f->out[m].pos));
	}
}

/*
 * topk over a CTA's row (block mode): wsf_block_topk's radix selection of
 * the keys (the bytes of its dtype's bits: a bf16 input's two), then each
 * chosen slot's rank in the order (wsf_topk_rank), where it is stored;
 * places past a runtime row narrower than k store index -1.
 */
static void
block_topk(Emit *e, const Op *o, int t, const char *x)
{
	const Fusion *f = e->f;
	bool raw = emit_row_raw(e, t);
	Dtype dt = f->tensor[t].dtype;
	int passes = raw && dt == DT_BF16 ? 2 : raw && dt == DT_F16 ? 3 : 4, n = e->k->consumer_threads;

	emit_line(e, "float wsf_x[%d][%d];", e->row.steps, VEC);
	emit_line(e, "unsigned wsf_key[%d][%d];", e->row.steps, VEC);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int it = 0; it < %d; it++) {", e->row.steps);
	if (raw)
		emit_line(e, "    wsf_unpack8%s(wsf_x[it], %s[it]);", emit_suffix(dt), emit_tname(e, PFX_RAW, t));
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int v = 0; v < %d; v++) {", VEC);
	if (!raw)
		emit_line(e, "        wsf_x[it][v] = %s[v];", x);
	emit_line(e, "        wsf_key[it][v] = wsf_topk_key%s(wsf_x[it][v]) & 0x%08xu;", o->smallest ? "<true>" : "",
	          passes == 4 ? 0xffffffffu : ~0u << (32 - 8 * passes));
	emit_line(e, "    }");
	emit_line(e, "}");
	emit_line(e, "const int wsf_n = wsf_block_topk<%d, %d>(wsf_key, wsf_x, %lld, cols, threadIdx.x, %d, wsf_topk);",
	          e->row.steps, passes, (long long)dim_value(f, o->shape[0]), n);
	emit_line(e, "for (int i = threadIdx.x; i < %lld; i += %d) {   // slot i to its place in the order",
	          (long long)dim_value(f, o->shape[0]), n);
	emit_line(e, "    const int r = i < wsf_n ? wsf_topk_rank(wsf_topk, i, wsf_n) : i;");
	emit_line(e, "    const float bv = i < wsf_n ? __uint_as_float(wsf_topk[516 + i]) : 0.0f;");
	emit_line(e, "    const int bi = i < wsf_n ? (int)wsf_topk[772 + i] : -1;");
	topk_stores(e, o - f->op);
	emit_line(e, "}");
	emit_line(e, "__syncthreads();   // wsf_topk is free for the next row's");
	e->depth--;
	emit_line(e, "}");
}

/*
 * Each topk's selection: over a CTA's row, block_topk; over a few lanes, k
 * rounds, each the row's best element not yet taken (NaN first, then
 * larger, then the lower index: wsf_before), found by each thread among its
 * own and then over the lanes; the lane that holds it marks it taken, the
 * row's first lane stores it.
 */
void
emit_topk(Emit *e)
{
	const Kernel *k = e->k;
	const Fusion *f = e->f;
	int i, j, lanes = k->row.lanes;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		int t = o->in[0].tensor;
		const char *x = emit_row_raw(e, t) ? "wsf_x" : arena_printf(e->c->arena, "%s[it]", emit_tname(e, PFX_VALUE, t));

		if (o->kind != OP_TOPK)
			continue;
		for (j = 1; j < i && !(f->op[j].kind == OP_TOPK && f->op[j].in[0].tensor == t &&
		                       dim_equal(f->op[j].shape[0], o->shape[0]) && f->op[j].smallest == o->smallest); j++)
			;
		if (j < i)
			continue;   /* (selected with op j) */
		emit_line(e, "{   // topk of %s: %s (%s, then the lower index)%s", f->tensor[t].name,
		          lanes ? "each round the row's best not yet taken" : "the k-th key by radix selection, then the order",
		          o->smallest ? "smaller, NaN last" : "NaN, then larger", emit_pos(e, o->pos));
		e->depth++;
		if (!lanes) {
			block_topk(e, o, t, x);
			continue;
		}
		emit_line(e, "unsigned wsf_taken[%d] = {0u};   // a bit an element of this thread's", e->row.steps);
		emit_line(e, "for (int r = 0; r < %lld; r++) {", (long long)dim_value(f, o->shape[0]));
		e->depth++;
		emit_line(e, "float bv = 0.0f;");
		emit_line(e, "int bi = -1;");
		emit_open_steps(e, true);
		if (emit_row_raw(e, t)) {
			emit_line(e, "float wsf_x[%d];", VEC);
			emit_line(e, "wsf_unpack8%s(wsf_x, %s[it]);", emit_suffix(f->tensor[t].dtype), emit_tname(e, PFX_RAW, t));
		}
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "    if (e + v < cols && !((wsf_taken[it] >> v) & 1u) && wsf_before%s(%s[v], e + v, bv, bi)) {",
		          o->smallest ? "<true>" : "", x);
		emit_line(e, "        bv = %s[v];", x);
		emit_line(e, "        bi = e + v;");
		emit_line(e, "    }");
		e->depth--;
		emit_line(e, "}");
		emit_line(e, "wsf_lanes_best<%d%s>(bv, bi);   // over the row's lanes", lanes, o->smallest ? ", true" : "");
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int it = 0; it < %d; it++) {   // the holder marks it taken", e->row.steps);
		emit_line(e, "    const int e = %s * %d + it * %d;", emit_row_tid(e), VEC, emit_row_nthreads(e) * VEC);
		emit_line(e, "    if (bi >= e && bi < e + %d)", VEC);
		emit_line(e, "        wsf_taken[it] |= 1u << (bi - e);");
		emit_line(e, "}");
		emit_line(e, "if (wsf_lane == 0 && wsf_live) {");
		topk_stores(e, i);
		emit_line(e, "}");
		e->depth--;
		emit_line(e, "}");
		e->depth--;
		emit_line(e, "}");
	}
}

