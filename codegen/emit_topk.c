/*
 * emit_topk.c: topk in a row kernel, the reduction family's: after the
 * output pass left the row's values in registers, or at the end of a
 * streamed row (an input's, read again from memory).  A row of a
 * few lanes (RowPlan.lanes: a router's 256 experts) takes k rounds of its
 * best element not yet taken, over the lanes by shuffles; a row of the CTA
 * selects by radix (device_reduction.cuh's wsf_block_topk: the k-th key
 * byte by byte, then the lower indices among equal ones) and ranks the k
 * chosen, k rounds of the CTA's reduction costing what a 16k-wide row
 * cannot spend.  Ops of the same input, k and order share one selection;
 * their outputs are stored where each element's place in the order is.
 */
#include "codegen.h"

/*
 * Each topk's outputs (values, indices) of the selection of op I: element
 * (bv, bi) at place r of the row's k; a gather of an input's row at the
 * indices, its element bi read from memory.
 */
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
			else if (p->part && topk_gather(f, f->out[m].tensor) &&
			         f->op[f->tensor[f->out[m].tensor].def].in[1].tensor == p->out) {   /* x.gather(-1, i) */
				const Op *g = &f->op[f->tensor[f->out[m].tensor].def];
				const KParam *x = emit_param_of(e, g->in[0].tensor, false);

				emit_line(e, "    wsf_store1%s(%s + row * %lld + r, bi < 0 ? 0.0f : wsf_load1%s(%s + row * cols + bi));"
				          "%s", emit_suffix(f->out[m].dtype), emit_param_name(e, emit_param_of(e, g->out, true)),
				          (long long)dim_value(f, o->shape[0]), emit_suffix(x->dtype), emit_param_name(e, x),
				          emit_pos(e, g->pos));
			}
	}
}

/*
 * topk over a CTA's row (block mode): wsf_block_topk's radix selection (the
 * bytes of its dtype's bits: a bf16 input's two), over the elements the
 * lambda wsf_each visits: this thread's registers, or, in a row too wide
 * for them (streamed: RowPlan.chunk, or no steps), an input's row read
 * again from memory each pass (L2 holds a few such rows); then each chosen
 * slot's rank in the order (wsf_topk_rank), where it is stored.  Places past
 * a runtime row narrower than k store index -1.
 */
static void
block_topk(Emit *e, const Op *o, int t, const char *x)
{
	const Fusion *f = e->f;
	bool raw = emit_row_raw(e, t), stream = !e->row.steps;
	Dtype dt = f->tensor[t].dtype;
	const char *sfx = emit_suffix(dt);
	int passes = (raw || stream) && dt == DT_BF16 ? 2 : (raw || stream) && dt == DT_F16 ? 3 : 4;
	int n = e->k->consumer_threads;
	long long kk = (long long)dim_value(f, o->shape[0]);

	if (stream) {   /* the row in its stage (a whole row staged), else in memory */
		int buf = emit_buf_of(e->k, t);

		emit_line(e, "const auto wsf_each = [&](const auto &f) {   // the row, read again %s each pass",
		          buf < e->k->nbuf ? "from its stage" : "from memory");
		if (buf < e->k->nbuf)
			emit_line(e, "    const %s *const wsf_p = %s;", emit_type(dt), emit_curname(e, buf));
		else
			emit_line(e, "    const %s *const wsf_p = %s + row * cols;", emit_type(dt),
			          emit_param_name(e, emit_param_of(e, t, false)));
		emit_line(e, "    for (long long e0 = threadIdx.x * %d; e0 < cols; e0 += %d) {   // 4 loads in flight", VEC,
		          4 * n * VEC);
		emit_line(e, "        float wsf_x[4][%d];", VEC);
		emit_line(e, "        #pragma unroll");
		emit_line(e, "        for (int u = 0; u < 4; u++) {");
		emit_line(e, "            const long long e = e0 + u * %d;", n * VEC);
		emit_line(e, "            if (e + %d <= cols)", VEC);
		emit_line(e, "                wsf_load8%s%s(wsf_x[u], wsf_p + e);", buf < e->k->nbuf ? "" : "_global", sfx);
		emit_line(e, "            else");
		emit_line(e, "                for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "                    wsf_x[u][v] = e + v < cols ? wsf_load1%s(wsf_p + e + v) : 0.0f;", sfx);
		emit_line(e, "        }");
		emit_line(e, "        #pragma unroll");
		emit_line(e, "        for (int u = 0; u < 4; u++)");
		emit_line(e, "            #pragma unroll");
		emit_line(e, "            for (int v = 0; v < %d; v++)", VEC);
		emit_line(e, "                if (e0 + u * %d + v < cols)", n * VEC);
		emit_line(e, "                    f((unsigned)(e0 + u * %d + v), wsf_x[u][v]);", n * VEC);
		emit_line(e, "    }");
		emit_line(e, "};");
	} else {
		emit_line(e, "const auto wsf_each = [&](const auto &f) {   // this thread's elements of the row, in registers");
		emit_line(e, "    #pragma unroll");
		emit_line(e, "    for (int it = 0; it < %d; it++) {", e->row.steps);
		if (raw) {
			emit_line(e, "        float wsf_x[%d];", VEC);
			emit_line(e, "        wsf_unpack8%s(wsf_x, %s[it]);", sfx, emit_tname(e, PFX_RAW, t));
		}
		emit_line(e, "        #pragma unroll");
		emit_line(e, "        for (int v = 0; v < %d; v++) {", VEC);
		emit_line(e, "            const int e = (threadIdx.x + it * %d) * %d + v;", n, VEC);
		emit_line(e, "            if (e < cols)");
		emit_line(e, "                f((unsigned)e, %s[v]);", x);
		emit_line(e, "        }");
		emit_line(e, "    }");
		emit_line(e, "};");
	}
	emit_line(e, "const int wsf_n = wsf_block_topk<%d, %s>(wsf_each, %lld, cols, threadIdx.x, %d, wsf_topk);", passes,
	          o->smallest ? "true" : "false", kk, n);
	emit_line(e, "for (int slot = threadIdx.x; slot < %lld; slot += %d) {   // each chosen to its place in the order",
	          kk, n);
	emit_line(e, "    const int r = slot < wsf_n ? wsf_topk_rank(wsf_topk, slot, wsf_n) : slot;");
	emit_line(e, "    const float bv = slot < wsf_n ? __uint_as_float(wsf_topk[516 + slot]) : 0.0f;");
	emit_line(e, "    const int bi = slot < wsf_n ? (int)wsf_topk[772 + slot] : -1;");
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

