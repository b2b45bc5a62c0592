/*
 * emit_matmul.c: the matmul family's emission, which emit.c writes through
 * emit_matmul_family: the accumulators, the mma, and the epilogue compute.
 *
 * Each consumer warpgroup holds 64 rows of the CTA's 128 x 256 tile as 128
 * f32 registers a thread (wgmma's fragment: thread (warp w, lane l) holds
 * element j at row 16 w + l / 4 + 8 ((j >> 1) & 1), column 8 (j >> 2) + 2
 * (l % 4) + (j & 1); device_matmul.cuh).  An mma over a 64-wide k-tile is
 * four m64n256k16 instructions, the operand descriptors stepping 32 bytes
 * inside the 128-byte swizzled rows.  An epilogue subtile of 32 columns is
 * the 16 fragment elements j = 16 sub + jj of every thread: the fused ops
 * run on each in f32, inputs read from global memory (a bias row, a column,
 * a full tensor, a scalar) with the ragged edge guarded, and each output is
 * written to its staging subtile [128][32], which a TMA store then takes
 * (clipping rows and columns past the tensor).  Loops over fragments are
 * unrolled (emit.c), so the registers are indexed by constants.
 */
#include "codegen.h"

enum { FRAG = 128, SUB = 32 };

static const char *
acc_name(Emit *e, int acc)
{
	return emit_tname(e, PFX_ACC, e->k->acc[acc].tensor);
}

/* A warpgroup's fragment of every accumulator, declared where the kernel starts. */
static void
frame(Emit *e)
{
	int i;

	for (i = 1; i < e->k->nacc; i++)
		emit_line(e, "float %s[%d];   // this thread's part of the %d x %d %s accumulator", acc_name(e, i), FRAG,
		          e->k->acc[i].rows, e->k->acc[i].cols, dtype_info[e->k->acc[i].dtype].name);
}

void
emit_mma(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const MmaShape *m = s->mma;
	const char *dt = k->buf[s->reads[0].buf].dtype == DT_F16 ? "_f16" : "_bf16";

	emit_line(e, "{   // mma %s += %s x %s, %d x %d x %d", acc_name(e, s->writes[0].acc), k->buf[s->reads[0].buf].name,
	          k->buf[s->reads[1].buf].name, m->m, m->n, m->k);
	e->depth++;
	/* each consumer warpgroup multiplies its 64 rows of A (64 rows of 128 bytes: 8 KiB) by all of B */
	emit_line(e, "const char *a = (const char *)(%s) + (threadIdx.x / 128) * %d;",
	          emit_buf_at(e, s->reads[0].buf, s->reads[0].slot), 64 * 128);
	emit_line(e, "const char *b = (const char *)(%s);", emit_buf_at(e, s->reads[1].buf, s->reads[1].slot));
	emit_line(e, "const int first = %s;", s->cond ? emit_expr_str(e, s->cond) : "0");
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int k16 = 0; k16 < %d; k16++)", m->k / 16);
	emit_line(e, "    wsf_mma_m64n256k16%s(%s, wsf_mma_desc(a + 32 * k16), wsf_mma_desc(b + 32 * k16), "
	          "k16 > 0 || !first);", dt, acc_name(e, s->writes[0].acc));
	e->depth--;
	emit_line(e, "}");
}

/* The epilogue over one subtile: s->b is its first column, s->pass its index in the tile. */
static void
compute(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	Fusion *f = e->f;
	int i, acc = 0;

	for (i = 0; i < s->nreads; i++)
		if (s->reads[i].acc)
			acc = s->reads[i].acc;
	emit_line(e, "{   // compute subtile (row0, col) = (%s, %s): %s", emit_expr_str(e, s->a), emit_expr_str(e, s->b),
	          s->comment ? s->comment : "");
	e->depth++;
	emit_line(e, "const long long top = %s, left = %s;", emit_expr_str(e, s->a), emit_expr_str(e, s->b));
	emit_line(e, "const int sub = (int)(%s), wr = 64 * (threadIdx.x / 128) + 16 * ((threadIdx.x / 32) %% 4) + "
	          "(threadIdx.x %% 32) / 4, wc = 2 * (threadIdx.x %% 4);", emit_expr_str(e, s->pass));
	for (i = 0; i < s->nwrites; i++)
		emit_line(e, "%s *%s = %s;", emit_type(k->buf[s->writes[i].buf].dtype), emit_curname(e, s->writes[i].buf),
		          emit_buf_at(e, s->writes[i].buf, s->writes[i].slot));
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int jj = 0; jj < %d; jj++) {", FRAG / (k->acc[acc].cols / SUB));
	e->depth++;
	emit_line(e, "const int r = wr + 8 * ((jj >> 1) & 1), c = 8 * (jj >> 2) + wc + (jj & 1);");
	emit_line(e, "const long long row = top + r, col = left + c;");
	emit_line(e, "const bool in = row < rows && col < cols;");
	emit_line(e, "(void)in;");
	/* the matmul's value is the accumulator's element; the other inputs are read where they are */
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];
		const KParam *p = emit_param_of(e, t, false);
		const char *idx;

		if (p->kind == PK_TMAP)
			continue;   /* an operand */
		e->value[t] = emit_tname(e, PFX_VALUE, t);
		idx = p->view == VIEW_ROW ? "col" : p->view == VIEW_COL ? "row" : p->view == VIEW_FULL ? "row * cols + col" : "0";
		emit_line(e, "const float %s = in ? %s(%s + %s) : 0.0f;%s", e->value[t],
		          p->dtype == DT_F16 ? "wsf_load1_f16" : "wsf_load1", emit_param_name(e, p), idx,
		          emit_pos(e, f->tensor[t].pos));
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out);

		e->value[o->out] = v;
		if (op_info[o->kind].cls == CLS_MATMUL) {
			emit_line(e, "const float %s = %s[%d * sub + jj];%s", v, acc_name(e, acc), FRAG / (k->acc[acc].cols / SUB),
			          emit_pos(e, o->pos));
			continue;
		}
		emit_line(e, "const float %s = %s;%s", v,
		          emit_op_text(e, o, o->in[0].tensor ? e->value[o->in[0].tensor] : emit_literal(e, o->in[0].lit),
		                       o->nin < 2 ? "" : o->in[1].tensor ? e->value[o->in[1].tensor] :
		                       emit_literal(e, o->in[1].lit)),
		          emit_pos(e, o->pos));
	}
	for (i = 0; i < s->nwrites; i++) {
		const KBuf *b = &k->buf[s->writes[i].buf];

		emit_line(e, "%s(%s + r * %d + c, %s);", b->dtype == DT_F16 ? "wsf_store1_f16" : "wsf_store1",
		          emit_curname(e, s->writes[i].buf), b->cols, e->value[b->tensor]);
	}
	e->depth--;
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

static int
min_ctas(const Kernel *k)
{
	return 1;   /* setmaxnreg needs a known cap at entry: one CTA an SM */
}

static bool
in_place(const Kernel *k)
{
	return true;   /* the computes index the accumulators by the subtile */
}

const EmitFamily emit_matmul_family = {
	.compute = compute,
	.min_ctas = min_ctas,
	.frame = frame,
	.in_place = in_place,
	.unit = "tile",
	.device = codegen_device_matmul_cuh,
};
