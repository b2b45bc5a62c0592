/*
 * emit_matmul.c: the matmul family's emission, which emit.c writes through
 * emit_matmul_family: the accumulators, the statement kinds the family owns
 * (the mma and its fence, groups and waits, the row inputs' copies; the
 * K-sums' are emit_matmul_ksum.c's), and the epilogue compute, the signal
 * consumer's included.
 *
 * Each consumer warpgroup holds 64 rows of the CTA's 128 x N tile as N / 2
 * f32 registers a thread (wgmma's fragment: thread (warp w, lane l) holds
 * element j at row 16 w + l / 4 + 8 ((j >> 1) & 1), column 8 (j >> 2) + 2
 * (l % 4) + (j & 1)).  An mma over a 64-wide k-tile is four m64nNk16
 * instructions (wsf_wgmma, written for the kernel's N and operand majors),
 * the descriptors stepping 32 bytes inside the 128-byte swizzled rows of a
 * K-major operand, or 16 rows (2048 bytes) of an MN-major one.  An
 * epilogue subtile of 32 columns (MatmulPlan.epi_cols; 16 in a tile whose N is
 * an odd multiple of 16) is the 16 (8) fragment elements j = 16 sub + jj
 * (8 sub + jj) of every thread: the fused ops run on each in f32, inputs
 * read from global memory (a bias row, a column, a full tensor, a scalar)
 * with the ragged edge guarded, and each output is written to its staging
 * subtile [128][32] ([128][16]; after the subtile's values, two adjacent
 * columns a shared-memory store), which a TMA store then takes
 * (clipping rows and columns past the tensor).  Loops over fragments are
 * unrolled (emit.c), so the registers are indexed by constants.  An
 * accumulator that shares another's registers (KAcc.alias) is a reference
 * to it (a later mainloop's) or its columns from KAcc.col on (matmuls side
 * by side in one mma); an epilogue computes only what its outputs need.
 * A swapped matmul (MatmulPlan.swap_ab) holds its tile transposed, and its
 * epilogue (compute_swapped) writes the whole tile at once.
 */
#include <string.h>

#include "codegen.h"

enum {
	/* an epilogue subtile's columns are MatmulPlan.epi_cols (32, or 16): epi_cols / 2 fragment elements a thread,
	   epi_cols / 4 distinct columns of them, 8 (jj >> 2) + wc + (jj & 1), at q = 2 (jj >> 2) + (jj & 1) */
	COL_VALUES = 2,    /* the distinct rows, in every subtile: wr + 8 h, at h = (jj >> 1) & 1 */
	PRELOAD_REGS = 176 /* full inputs are loaded before use while the accumulators and they fit (full_preload) */
};

int
emit_acc_regs(const Kernel *k, int acc)
{
	return k->acc[acc].cols / 2 * k->mm.row_blocks;
}

const char *
emit_acc_name(Emit *e, int acc)
{
	return emit_tname(e, PFX_ACC, e->k->acc[acc].tensor);
}

/* Is input tensor T copied to a row buffer (BUF_ROW), so that no subtile loads it from global memory? */
static bool
row_staged(const Kernel *k, int t)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].kind == BUF_ROW && k->buf[b].tensor == t)
			return true;
	return false;
}

/* A warpgroup's fragment of every accumulator, declared where the kernel starts. */
static void
declare_fragments(Emit *e)
{
	int i;

	/*
	 * The consumer warpgroup, read through a shuffle: the compiler then
	 * knows it is the same across the warp and keeps what derives from it
	 * (a ping-pong warpgroup's tile and stage counters, the mma
	 * descriptors) in uniform registers, which wgmma's descriptors must
	 * be, instead of recomputing them per thread at every k-step.
	 */
	emit_line(e, "const int wsf_wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);   // the warpgroup, warp-uniform");
	for (i = 0; i < e->f->ninput && !e->k->mm.swap_ab; i++) {   /* a swapped tile reads its inputs in place */
		const KParam *p = emit_param_of(e, e->f->input[i], false);

		if (!p)   /* an input no op reads (Tensor.unread) */
			continue;
		if (p->kind == PK_PTR && p->view == VIEW_ROW && !row_staged(e->k, e->f->input[i]))
			emit_line(e, "float %s[%d];   // the next subtile's %s, loaded while this one is computed",
			          emit_tname(e, PFX_AHEAD, e->f->input[i]), e->k->mm.epi_cols / 4, p->name);
		if (p->kind == PK_PTR && p->view == VIEW_COL)
			emit_line(e, "float %s[%d];   // %s at this thread's rows of the tile, loaded at its first subtile",
			          emit_tname(e, PFX_HERE, e->f->input[i]), COL_VALUES * e->k->mm.row_blocks, p->name);
	}
	for (i = 1; i < e->k->nacc; i++)
		if (e->k->acc[i].col)   /* side by side with the first of its group: read as its columns */
			emit_line(e, "// %s: columns %d.. of %s, whose mma computes both", emit_acc_name(e, i), e->k->acc[i].col,
			          emit_acc_name(e, e->k->acc[i].alias));
		else if (e->k->acc[i].alias)   /* a later mainloop's: it runs after the first's epilogue has read it */
			emit_line(e, "float (&%s)[%d] = %s;   // %s's registers, reused once its epilogue has read them",
			          emit_acc_name(e, i), emit_acc_regs(e->k, i), emit_acc_name(e, e->k->acc[i].alias),
			          emit_acc_name(e, e->k->acc[i].alias));
		else
			emit_line(e, "float %s[%d];   // this thread's part of the %d x %d %s accumulator%s", emit_acc_name(e, i),
			          emit_acc_regs(e->k, i), e->k->acc[i].rows, e->k->acc[i].cols,
			          dtype_info[e->k->acc[i].dtype].name, e->k->mm.row_blocks > 1 ?
			          arena_printf(e->c->arena, ", %d blocks of 64 rows", e->k->mm.row_blocks) : "");
}

/*
 * The wgmma instruction of this kernel, m64nNk16 with N the tile's columns,
 * as a function: its operand list (N / 2 accumulator registers) and its
 * transpose immediates (1: the operand is MN-major) depend on the tile.
 */
static void
emit_wgmma_fn(Emit *e)
{
	const Stmt *s = st_first(e->k->body, ST_MMA);   /* lowering makes one */
	const MmaShape *m;
	const char *dt;
	int n, i;
	Buf regs, outs;

	if (!s)
		return;
	m = s->u.mma.shape;
	n = m->n / 2;
	dt = e->k->buf[s->reads[0].buf].dtype == DT_F16 ? "f16" : "bf16";
	buf_init(&regs, e->c->arena);
	buf_init(&outs, e->c->arena);
	for (i = 0; i < n; i++) {
		buf_printf(&regs, "%s%%%d", i == 0 ? "" : i % 16 ? ", " : ", \"\n                 \"", i);
		buf_printf(&outs, "%s\"+f\"(d[%d])", i == 0 ? "" : i % 8 ? ", " : ",\n                 ", i);
	}
	emit_line(e, "// d (+)= A x B^T on the tensor cores: A 64 x 16 (%s-major), B %d x 16 (%s-major), both from",
	          m->a_kmajor ? "K" : "M", m->n, m->b_kmajor ? "K" : "N");
	emit_line(e, "// shared-memory descriptors; d the warpgroup's 64 x %d f32 fragment, %d a thread: thread", m->n, n);
	emit_line(e, "// (warp w, lane l) holds element j at row 16 w + l / 4 + 8 ((j >> 1) & 1), column 8 (j >> 2) +");
	emit_line(e, "// 2 (l %% 4) + (j & 1).  ACCUMULATE 0 starts from zero.");
	emit_line(e, "static __device__ __forceinline__ void wsf_wgmma(float *d, wsf_u64 da, wsf_u64 db, int accumulate)");
	emit_line(e, "{");
	emit_line(e, "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"", n + 2);
	emit_line(e, "                 \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s \"", m->n, dt, dt);
	emit_line(e, "                 \"{%s}, %%%d, %%%d, p, 1, 1, %d, %d;\\n}\\n\"", buf_str(&regs), n, n + 1,
	          !m->a_kmajor, !m->b_kmajor);
	emit_line(e, "                 : %s", buf_str(&outs));
	emit_line(e, "                 : \"l\"(da), \"l\"(db), \"r\"(accumulate));");
	emit_line(e, "}");
	buf_puts(e->b, "\n");
}

/* The descriptor call of an operand at P: K-major, or MN-major in chunks of BK rows of 128 bytes. */
static const char *
desc(Emit *e, bool kmajor, int bk, const char *p)
{
	return kmajor ? arena_printf(e->c->arena, "wsf_mma_desc(%s)", p)
	              : arena_printf(e->c->arena, "wsf_mma_desc_mn<%d>(%s)", bk * 128, p);
}

static void
emit_mma(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	const MmaShape *m = s->u.mma.shape;
	int bytes = dtype_info[k->buf[s->reads[0].buf].dtype].bytes;
	/* a consumer warpgroup's 64 rows of A: 64 K-major rows, or one 64-wide M chunk; a k16 step in each */
	int wg_rows = m->a_kmajor ? 64 * m->k * bytes : m->k * 128;
	int astep = m->a_kmajor ? 16 * bytes : 16 * 128, bstep = m->b_kmajor ? 16 * bytes : 16 * 128, h;

	emit_line(e, "{   // mma %s += %s x %s, %d x %d x %d", emit_acc_name(e, s->writes[0].acc), k->buf[s->reads[0].buf].name,
	          k->buf[s->reads[1].buf].name, m->m, m->n, m->k);
	e->depth++;
	/*
	 * The descriptors once a k-step, then offsets: a descriptor's low bits
	 * are the address / 16, and shared addresses stay below 2^18, so +N
	 * bytes is +N / 16 with no carry out of the field.  Everything here is
	 * warp-uniform (wsf_wg included): the compiler keeps it in the uniform
	 * registers wgmma reads its descriptors from.
	 */
	if (k->mm.pingpong)   /* the warpgroup's own tile: all of A's rows */
		emit_line(e, "const wsf_u64 da = %s;", desc(e, m->a_kmajor, m->k,
		          emit_buf_at(e, s->reads[0].buf, s->reads[0].slot)));
	else
		emit_line(e, "const wsf_u64 da = %s;   // this warpgroup's %d rows", desc(e, m->a_kmajor, m->k,
		          arena_printf(e->c->arena, "(const char *)(%s) + wsf_wg * %d",
		                       emit_buf_at(e, s->reads[0].buf, s->reads[0].slot), wg_rows * k->mm.row_blocks)),
		          64 * k->mm.row_blocks);
	emit_line(e, "const wsf_u64 db = %s;", desc(e, m->b_kmajor, m->k, emit_buf_at(e, s->reads[1].buf,
	                                                                            s->reads[1].slot)));
	emit_line(e, "const int first = %s;", s->u.mma.zero_if ? emit_expr_str(e, s->u.mma.zero_if) : "0");
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int k16 = 0; k16 < %d; k16++)%s", m->k / 16, k->mm.row_blocks > 1 ? " {" : "");
	/* A 128-row warpgroup tile: a wgmma for each 64-row block, into its own half of the registers. */
	for (h = 0; h < k->mm.row_blocks; h++)
		emit_line(e, "    wsf_wgmma(%s%s, da + %s%d * k16, db + %d * k16, k16 > 0 || !first);%s",
		          emit_acc_name(e, s->writes[0].acc), h ? arena_printf(e->c->arena, " + %d", h * m->n / 2) : "",
		          h ? arena_printf(e->c->arena, "%d + ", h * wg_rows / 16) : "", astep / 16, bstep / 16,
		          k->mm.row_blocks > 1 ? arena_printf(e->c->arena, "   // rows %d..%d", 64 * h, 64 * h + 63) : "");
	if (k->mm.row_blocks > 1)
		emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/* A load of input P at index IDX as f32, 0 where COND (if any) fails. */
static const char *
load_text(Emit *e, const KParam *p, const char *cond, const char *idx)
{
	/* an input that arrives while the kernel runs (wait: per_tile): from L2, never a stale L1 line */
	bool late = e->f->tensor[p->tensor].wait_pos.line > 0;

	return arena_printf(e->c->arena, "%s%s%s%s(%s + %s)%s", cond ? cond : "", cond ? " ? " : "",
	                    late ? "wsf_load1_cg" : "wsf_load1", p->dtype == DT_F16 ? "_f16" : "", emit_param_name(e, p),
	                    idx, cond ? " : 0.0f" : "");
}

/* The row buffer (BUF_ROW) of input tensor T that compute S reads, or NULL. */
static const Access *
row_copy(Emit *e, const Stmt *s, int t)
{
	int i;

	for (i = 0; i < s->nreads; i++)
		if (s->reads[i].buf && e->k->buf[s->reads[i].buf].kind == BUF_ROW && e->k->buf[s->reads[i].buf].tensor == t)
			return &s->reads[i];
	return NULL;
}

/* The staging copy (its buffer's Access) that carries full input T (KBuf.preload) which compute S reads, or NULL. */
static const Access *
carried(Emit *e, const Stmt *s, int t)
{
	int i;

	for (i = 0; i < s->nreads; i++) {
		const KBuf *b = s->reads[i].buf ? &e->k->buf[s->reads[i].buf] : NULL;

		if (b && b->kind == BUF_STAGING && b->preload && e->k->param[b->preload].tensor == t)
			return &s->reads[i];
	}
	return NULL;
}

/*
 * An epilogue row input's copy (lower_matmul_sync.c, stage_rows): ST_ROW_FETCH
 * loads consumer thread t's column of the tile into a register, where the
 * tile starts (the k loop after it hides the load), and ST_ROW_PUT writes
 * it to the tile's copy of the row buffer after the k loop; columns past
 * the row's end are 0.
 */
static void
emit_row_copy(Emit *e, const Stmt *s)
{
	const KBuf *b = &e->k->buf[s->u.row_copy.buf];
	const KParam *p = &e->k->param[b->param];
	const char *v = emit_tname(e, PFX_FETCH, b->tensor), *type = emit_type(b->dtype);
	const char *col = s->kind == ST_ROW_FETCH ? emit_expr_str(e, s->u.row_copy.col) : NULL;
	bool narrow = b->cols < e->k->consumer_threads;   /* a tile narrower than the consumers: some have no column */

	if (s->kind == ST_ROW_FETCH) {
		emit_line(e, "const %s %s = %s%s + threadIdx.x < cols ? %s[%s + threadIdx.x] : (%s)0;   // %s%s", type, v,
		          narrow ? arena_printf(e->c->arena, "threadIdx.x < %d && ", b->cols) : "", col,
		          emit_param_name(e, p), col, type, s->comment ? s->comment : "",
		          emit_pos(e, s->pos));
		return;
	}
	if (narrow)
		emit_line(e, "if (threadIdx.x < %d)", b->cols);
	emit_line(e, "%s(%s)[threadIdx.x] = %s;   // %s", narrow ? "    " : "",
	          emit_buf_at(e, s->u.row_copy.buf, s->u.row_copy.slot), v,
	          s->comment ? s->comment : "");
}

/*
 * The row and column inputs of the epilogue, loaded ahead of their use: a
 * global load costs a round trip to L2, which eight subtiles in a row
 * would pay in turn.  A row input [N] has 8 distinct columns in a
 * subtile (4 in one of 16 columns), a thread's; those of the next subtile
 * are loaded into ahead_x while this one computes.  A column input [M, 1] has 2 distinct rows in
 * the whole tile, loaded at its first subtile.  NSUB: subtiles a tile.  A
 * K-split's rank that shares the epilogue (KSUM_SPLIT_SCATTER) computes
 * subtiles rank, rank + splits, ...: its first is below splits, and its
 * next is splits on.
 */
static void
staged_inputs(Emit *e, const Stmt *s, int nsub, const bool *needed)
{
	const Access *r;
	/* a K-split's rank stores every splits-th subtile, a stream-K part every parts-th (u.compute.pass) */
	int ranks = e->k->mm.ksum == KSUM_SPLIT_SCATTER ? e->k->mm.ksize.splits : 1;
	const Expr *every = s->u.compute.step;
	const char *step = every ? emit_expr_str(e, every) : arena_printf(e->c->arena, "%d", ranks);
	const char *first = strcmp(step, "1") ? arena_printf(e->c->arena, "sub < %s", step) : "sub == 0";
	int cols = e->k->mm.epi_cols;
	const char *over = every ? arena_printf(e->c->arena, "%s * %d", step, cols)   /* the next subtile's columns */
	                   : arena_printf(e->c->arena, "%d", ranks * cols);
	int i;

	for (i = 0; i < e->f->ninput; i++) {
		int t = e->f->input[i];
		const KParam *p = emit_param_of(e, t, false);
		const char *here = emit_tname(e, PFX_HERE, t), *ahead = emit_tname(e, PFX_AHEAD, t);

		if (!p || p->kind != PK_PTR || !needed[t])   /* !p: an input no op reads (Tensor.unread) */
			continue;
		if (p->view == VIEW_ROW && (r = row_copy(e, s, t))) {   /* the tile's columns in shared memory */
			emit_line(e, "float %s[%d];", here, e->k->mm.epi_cols / 4);
			emit_line(e, "#pragma unroll");
			emit_line(e, "for (int q = 0; q < %d; q += 2)   // two adjacent columns a load", e->k->mm.epi_cols / 4);
			emit_line(e, "    wsf_row_pair%s(%s + sub * %d + 8 * (q >> 1) + wc, %s[q], %s[q + 1]);",
			          p->dtype == DT_F16 ? "_f16" : "", emit_buf_at(e, r->buf, r->slot), cols, here, here);
		} else if (p->view == VIEW_ROW) {
			emit_line(e, "float %s[%d];", here, e->k->mm.epi_cols / 4);
			emit_line(e, "#pragma unroll");
			emit_line(e, "for (int q = 0; q < %d; q++) {", e->k->mm.epi_cols / 4);
			emit_line(e, "    const long long col = left + 8 * (q >> 1) + wc + (q & 1);");
			emit_line(e, "    %s[q] = %s ? (%s) : %s[q];", here, first, load_text(e, p, "col < cols", "col"), ahead);
			emit_line(e, "}");
			emit_line(e, "if (sub + %s < %d) {   // the next subtile's, %s columns on", step, nsub, over);
			emit_line(e, "    #pragma unroll");
			emit_line(e, "    for (int q = 0; q < %d; q++) {", e->k->mm.epi_cols / 4);
			emit_line(e, "        const long long col = left + %s + 8 * (q >> 1) + wc + (q & 1);", over);
			emit_line(e, "        %s[q] = %s;", ahead, load_text(e, p, "col < cols", "col"));
			emit_line(e, "    }");
			emit_line(e, "}");
		} else if (p->view == VIEW_COL) {
			emit_line(e, "if (%s) {   // the tile's first subtile%s: this thread's rows", first,
			          s->u.compute.step ? " this part stores" : strcmp(step, "1") ? " this rank stores" : "");
			emit_line(e, "    #pragma unroll");
			emit_line(e, "    for (int h = 0; h < %d; h++) {", COL_VALUES * e->k->mm.row_blocks);
			emit_line(e, "        const long long row = top + wt + %s;", e->k->mm.row_blocks > 1 ?
			          "64 * (h / 2) + 8 * (h % 2)   /* its rows of each 64-row block */" : "8 * h");
			emit_line(e, "        %s[h] = %s;", here, load_text(e, p, "row < rows",
			          s->u.compute.batch ? arena_printf(e->c->arena, "%s * rows + row",
			                                            emit_expr_str(e, s->u.compute.batch)) : "row"));
			emit_line(e, "    }");
			emit_line(e, "}");
		}
	}
}

/* The views of the epilogue inputs of NEEDED that compute S reads from global memory: a bit (1 << view) each. */
static unsigned
input_views(Emit *e, const Stmt *s, const bool *needed)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < e->f->ninput; i++) {
		const KParam *p = emit_param_of(e, e->f->input[i], false);

		if (p && p->kind != PK_TMAP && needed[e->f->input[i]] && !row_copy(e, s, e->f->input[i]) &&
		    !carried(e, s, e->f->input[i]))
			v |= 1u << p->view;
	}
	return v;
}

/* Of input_views V: is an element's row (col) named, by a column (row) input or a full one? */
#define READS_ROW(v) ((v) & (1u << VIEW_COL | 1u << VIEW_FULL | AT_VIEWS))
#define READS_COL(v) ((v) & (1u << VIEW_ROW | 1u << VIEW_FULL | AT_VIEWS))
/* inputs broadcast along a leading dim, read at the row's offset (KParam.at), element by element */
#define AT_VIEWS (1u << VIEW_ROW_AT | 1u << VIEW_COL_AT)

/*
 * The offset of broadcast input P (VIEW_ROW_AT, VIEW_COL_AT) at the element
 * loop's row, the row of the output's 2-D view (batched: of batch z, rows
 * one batch's).
 */
static const char *
at_text(Emit *e, const Stmt *s, const KParam *p)
{
	Comp *c = e->c;
	const Kernel *k = e->k;
	int row;

	for (row = 1; row < k->nvar && strcmp(k->var[row].name, "row") != 0; row++)
		;
	if (!s->u.compute.batch || row == k->nvar)
		return emit_expr_str(e, p->at);
	return emit_expr_str(e, ex_subst(c, p->at, row, ex_bin(c, EX_ADD, ex_bin(c, EX_MUL, s->u.compute.batch, ex_var(c, k->rows_var)),
	                                                       ex_var(c, row))));
}

/*
 * The tensors the outputs S writes depend on: an epilogue computes only
 * those (independent matmuls each have their own epilogue, over their own
 * accumulator).
 */
static bool *
cone(Emit *e, const Stmt *s)
{
	bool *needed = arena_alloc(e->c->arena, (size_t)e->f->ntensor * sizeof *needed);
	int i, j;

	for (i = 0; i < s->nwrites; i++)
		needed[e->k->buf[s->writes[i].buf].tensor] = true;
	for (i = e->f->nop - 1; i >= 1; i--) {
		const Op *o = &e->f->op[i];

		for (j = 0; j < o->nin && needed[o->out]; j++)
			if (o->in[j].tensor)
				needed[o->in[j].tensor] = true;
	}
	return needed;
}

static void emit_signal_compute(Emit *e, const Stmt *s);

/*
 * The hardware tanh's forms of the activations (device_matmul.cuh), where
 * every output of the fusion is 2-byte (fast_forms): one MUFU instruction an
 * element where the exponential and division forms take two, which bound
 * an activation's epilogue (16 MUFU results a clock an SM: gelu's two over
 * a 128 x 256 tile are 4K cycles of tensor cores idle).  tanh.approx.f32's
 * relative error is at most 2^-11 (the PTX ISA), under half of bf16's
 * rounding and within f16's check; in 1 + tanh it is absolute (2^-12 |x|
 * at most in gelu and silu, 2^-12 in the logistic), so in the far negative
 * tail, where those are small, many ulps of them (docs/spec.md).  quack's
 * epilogues compute them so.  An f32 output keeps the forms of emit.c.
 */
static const char *const fast_form[OP_COUNT] = {
	[OP_TANH] = "wsf_tanh_approx($a)",
	[OP_SIGMOID] = "wsf_sigmoid_fast($a)",
	[OP_SILU] = "wsf_silu_fast($a)",
};

static bool
fast_forms(const Fusion *f)
{
	int i;

	for (i = 0; i < f->nout; i++)
		if (f->out[i].dtype != DT_BF16 && f->out[i].dtype != DT_F16)
			return false;
	return true;
}

/* The f32 value of pointwise op O, from its operands' values (e->value) or literals, as v_OUT. */
static void
op_value(Emit *e, const Op *o)
{
	const char *form = !fast_forms(e->f) ? NULL
	                   : o->kind == OP_GELU ? (o->approx == APPROX_TANH ? "wsf_gelu_tanh_fast($a)" : NULL)
	                   : fast_form[o->kind];

	emit_line(e, "const float %s = %s;%s", e->value[o->out],
	          emit_op_text3(e, o, o->in[0].tensor ? e->value[o->in[0].tensor] : emit_literal(e, o->in[0].lit),
	                        o->nin < 2 ? "" : o->in[1].tensor ? e->value[o->in[1].tensor] : emit_literal(e, o->in[1].lit),
	                        o->nin < 3 ? "" : o->in[2].tensor ? e->value[o->in[2].tensor] : emit_literal(e, o->in[2].lit),
	                        form),
	          emit_pos(e, o->pos));
}

/* Each output's value of element jj into its result array, ending the loop over the elements. */
static void
results(Emit *e, const Stmt *s)
{
	int i;

	for (i = 0; i < s->nwrites; i++) {
		const KBuf *b = &e->k->buf[s->writes[i].buf];

		emit_line(e, "%s[jj] = %s;", emit_tname(e, PFX_RESULT, b->tensor), e->value[b->tensor]);
	}
	e->depth--;
	emit_line(e, "}");
}

/*
 * The epilogue of a swapped matmul (MatmulPlan.swap_ab) over its whole tile at
 * (row, col): the accumulator is the warpgroup's 64 columns of the tile
 * transposed, tile_rows rows, so thread (warp w, lane l) holds the
 * output's column 16 (w % 4) + l / 4 + 8 ((j >> 1) & 1) at row 8 (j >> 2)
 * + 2 (l % 4) + (j & 1) in its element j (cooperative: 64 columns on for
 * the second warpgroup).  Inputs are read where each element needs them
 * (a tile is computed once, and holds at most 32 values a thread); each
 * output's value is written to its staging tile [rows][tile_cols] an
 * element at a time (the two of a thread in a row are 8 columns apart);
 * ping-pong warpgroups each write their own rows of the copy both share.
 */
static void
compute_swapped(Emit *e, const Stmt *s, const bool *needed, int acc)
{
	const Kernel *k = e->k;
	Fusion *f = e->f;
	int i, n = emit_acc_regs(k, acc);
	unsigned views = input_views(e, s, needed);

	emit_line(e, "{   // compute tile (row0, col0) = (%s, %s), transposed in the accumulator: %s",
	          emit_expr_str(e, s->u.compute.row), emit_expr_str(e, s->u.compute.col), s->comment ? s->comment : "");
	e->depth++;
	/* the tile's place, where an input is read by row or column (input_views; else NVRTC warns of it unused) */
	if (READS_ROW(views))
		emit_line(e, "const long long top = %s;", emit_expr_str(e, s->u.compute.row));
	if (READS_COL(views))
		emit_line(e, "const long long left = %s;", emit_expr_str(e, s->u.compute.col));
	/*
	 * wc: the thread's first column of the tile (a cooperative warpgroup's
	 * 64 columns of 128), wr: its first row; ws: its warpgroup's rows of the
	 * staging copy (a ping-pong warpgroup's own tile)
	 */
	emit_line(e, "const int wc = %s16 * ((threadIdx.x / 32) %% 4) + (threadIdx.x %% 32) / 4, wr = 2 * (threadIdx.x %% 4), "
	          "ws = %s;", k->mm.pingpong ? "" : "64 * (threadIdx.x / 128) + ",
	          k->mm.pingpong ? arena_printf(e->c->arena, "%d * (threadIdx.x / 128)", k->tile_rows) : "0");
	for (i = 0; i < s->nwrites; i++) {
		emit_line(e, "%s *%s = %s;", emit_type(k->buf[s->writes[i].buf].dtype), emit_curname(e, s->writes[i].buf),
		          emit_buf_at(e, s->writes[i].buf, s->writes[i].slot));
		emit_line(e, "float %s[%d];", emit_tname(e, PFX_RESULT, k->buf[s->writes[i].buf].tensor), n);
	}
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int jj = 0; jj < %d; jj++) {", n);
	e->depth++;
	if (READS_ROW(views))
		emit_line(e, "const long long row = top + wr + 8 * (jj >> 2) + (jj & 1);");
	if (READS_COL(views))
		emit_line(e, "const long long col = left + wc + 8 * ((jj >> 1) & 1);");
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];
		const KParam *p = emit_param_of(e, t, false);
		const char *cond = NULL, *idx = "0";

		if (!p || p->kind == PK_TMAP || !needed[t])
			continue;   /* an operand, or an input no op reads */
		if (p->view == VIEW_ROW)
			cond = "col < cols", idx = "col";
		else if (p->view == VIEW_COL)
			cond = "row < rows", idx = "row";
		else if (p->view == VIEW_FULL)
			cond = "row < rows && col < cols", idx = "row * cols + col";
		e->value[t] = emit_tname(e, PFX_VALUE, t);
		emit_line(e, "const float %s = %s;%s", e->value[t], load_text(e, p, cond, idx), emit_pos(e, f->tensor[t].pos));
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (!needed[o->out])
			continue;
		e->value[o->out] = emit_tname(e, PFX_VALUE, o->out);
		if (op_info[o->kind].cls == CLS_MATMUL)
			emit_line(e, "const float %s = %s[jj];%s", e->value[o->out], emit_acc_name(e, acc), emit_pos(e, o->pos));
		else
			op_value(e, o);
	}
	results(e, s);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int jj = 0; jj < %d; jj++) {", n);
	emit_line(e, "    const int at = (ws + wr + 8 * (jj >> 2) + (jj & 1)) * %d + wc + 8 * ((jj >> 1) & 1);",
	          k->tile_cols);
	for (i = 0; i < s->nwrites; i++) {
		const KBuf *b = &k->buf[s->writes[i].buf];

		emit_line(e, "    %s(%s + %s, %s[jj]);", b->dtype == DT_F16 ? "wsf_store1_f16" : "wsf_store1",
		          emit_curname(e, s->writes[i].buf), b->swizzle ? arena_printf(e->c->arena, "wsf_swizzle<%d, %d>(at)",
		          b->swizzle, dtype_info[b->dtype].bytes) : "at", emit_tname(e, PFX_RESULT, b->tensor));
	}
	emit_line(e, "}");
	e->depth--;
	emit_line(e, "}");
}

/* The element of a full input at (R, C) of the subtile S (batched: rows are one batch's). */
static const char *
full_at(Emit *e, const Stmt *s, const char *r, const char *c)
{
	const Expr *batch = s->u.compute.batch;

	return batch ? arena_printf(e->c->arena, "(%s * rows + %s) * cols + %s", emit_expr_str(e, batch), r, c)
	            : arena_printf(e->c->arena, "%s * cols + %s", r, c);
}

/*
 * A thread's 16 (8) elements of full input P in the subtile S, into DST: a
 * pair of columns a load where the thread's rows and the subtile lie
 * inside the tensor and every row starts at a pair (cols even: the launch
 * checks that the pointer is 16-byte aligned); at the ragged edge an
 * element at a time, guarded.  ROWB: the 64-row block's first row in the
 * warpgroup's ("" for the first).
 */
static void
load_full(Emit *e, const Stmt *s, const KParam *p, const char *dst, const char *rowb)
{
	const char *name = emit_param_name(e, p);
	/* an input that arrives while the kernel runs (wait: per_tile): from L2, never a stale L1 line */
	bool late = e->f->tensor[p->tensor].wait_pos.line > 0;

	emit_line(e, "if (top + wt + %s8 < rows && left + %d <= cols && cols %% 2 == 0) {   // inside: a load a pair of "
	          "columns", rowb, e->k->mm.epi_cols);
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int q = 0; q < %d; q++)", e->k->mm.epi_cols / 4);
	emit_line(e, "        wsf_load2%s%s(%s + %s, %s[2 * q], %s[2 * q + 1]);", late ? "_cg" : "",
	          p->dtype == DT_F16 ? "_f16" : "", name,
	          full_at(e, s, arena_printf(e->c->arena, "(top + wt + %s8 * (q & 1))", rowb),
	                  "(left + 8 * (q >> 1) + wc)"), dst, dst);
	emit_line(e, "} else {");
	emit_line(e, "    #pragma unroll");
	emit_line(e, "    for (int jj = 0; jj < %d; jj++) {", e->k->mm.epi_cols / 2);
	emit_line(e, "        const long long row = top + wt + %s8 * ((jj >> 1) & 1), col = left + 8 * (jj >> 2) + wc + (jj & 1);",
	          rowb);
	emit_line(e, "        %s[jj] = %s;", dst, load_text(e, p, "row < rows && col < cols", full_at(e, s, "row", "col")));
	emit_line(e, "    }");
	emit_line(e, "}");
}

/*
 * Are the full inputs loaded before their elements are used (full_inputs)?
 * Each holds 16 registers a thread through the subtile (8 of 16 columns),
 * which spill where the accumulators leave too few (192 a thread:
 * ping-pong 128 x 192; docs/perf_history.md).
 */
static bool
full_preload(Emit *e)
{
	const Kernel *k = e->k;
	int i, regs = 0;

	for (i = 1; i < k->nacc; i++)
		if (!k->acc[i].alias)
			regs += emit_acc_regs(k, i);
	for (i = 0; i < e->f->ninput; i++) {
		const KParam *p = emit_param_of(e, e->f->input[i], false);

		if (p && p->kind == PK_PTR && p->view == VIEW_FULL)
			regs += k->mm.epi_cols / 2;
	}
	return regs <= PRELOAD_REGS;
}

/*
 * A full input's subtile that the staging copy A carries (KBuf.preload), a
 * thread's 16 (8) elements into DST, two adjacent columns a 4-byte load:
 * the elements the thread writes in the copy after (the same rows and
 * columns as the results' stores, swizzled alike), so that no other
 * thread's write can come before its read.  ROWB as load_full's.
 */
static void
load_carried(Emit *e, const KParam *p, const Access *a, const char *dst, const char *rowb)
{
	const KBuf *b = &e->k->buf[a->buf];
	const char *at = arena_printf(e->c->arena, "(wr + %s8 * (q & 1)) * %d + 8 * (q >> 1) + wc", rowb, b->cols);

	if (b->swizzle)
		at = arena_printf(e->c->arena, "wsf_swizzle<%d, %d>(%s)", b->swizzle, dtype_info[b->dtype].bytes, at);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int q = 0; q < %d; q++)   // from the staging copy that carries it", e->k->mm.epi_cols / 4);
	emit_line(e, "    wsf_row_pair%s(%s + %s, %s[2 * q], %s[2 * q + 1]);", p->dtype == DT_F16 ? "_f16" : "",
	          emit_curname(e, a->buf), at, dst, dst);
}

/*
 * The full inputs [M, N] of the subtile's epilogue, a thread's 16 (8) elements
 * loaded before any is used, into here_x: loaded where each was used, they
 * went out a few at a time, each few a round trip (ptxas interleaved a
 * guarded load with its use).  ROWB as load_full's.
 */
static void
full_inputs(Emit *e, const Stmt *s, const bool *needed, const char *rowb)
{
	int i;

	for (i = 0; i < e->f->ninput; i++) {
		int t = e->f->input[i];
		const KParam *p = emit_param_of(e, t, false);
		const char *here = emit_tname(e, PFX_HERE, t);

		const Access *a = carried(e, s, t);

		if (!p || p->kind != PK_PTR || p->view != VIEW_FULL || !needed[t] || (!full_preload(e) && !a))
			continue;
		emit_line(e, "float %s[%d];   // %s at this thread's elements of the subtile", here, e->k->mm.epi_cols / 2, p->name);
		if (a)
			load_carried(e, p, a, here, rowb);
		else
			load_full(e, s, p, here, rowb);
	}
}

/* The epilogue over one subtile: its col is its first column, its pass its index in the tile. */
static void
emit_epilogue(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	Fusion *f = e->f;
	bool *needed = cone(e, s);
	unsigned views = input_views(e, s, needed);
	int i, acc = 0, H = k->mm.row_blocks;   /* H: the 64-row blocks of a warpgroup's rows */
	const char *blk;

	if (e->role && k->role[e->role].kind == ROLE_SIGNAL) {
		emit_signal_compute(e, s);
		return;
	}
	for (i = 0; i < s->nreads; i++)
		if (s->reads[i].acc)
			acc = s->reads[i].acc;
	if (k->mm.swap_ab) {
		compute_swapped(e, s, needed, acc);
		return;
	}
	emit_line(e, "{   // compute subtile (row0, col) = (%s, %s): %s", emit_expr_str(e, s->u.compute.row),
	          emit_expr_str(e, s->u.compute.col), s->comment ? s->comment : "");
	e->depth++;
	/* the subtile's place, where an input is read by row or column (input_views; else NVRTC warns of it unused) */
	if (READS_ROW(views))
		emit_line(e, "const long long top = %s;", emit_expr_str(e, s->u.compute.row));
	if (READS_COL(views))
		emit_line(e, "const long long left = %s;", emit_expr_str(e, s->u.compute.col));
	/* wr: the thread's first row in the staging subtile (its warpgroup's 64 rows, its warp's 16, its lane's);
	   wt: in the output tile at top, which is the warpgroup's own when it owns the tile (ping-pong) */
	emit_line(e, "const int sub = (int)(%s), wr = %d * (threadIdx.x / 128) + 16 * ((threadIdx.x / 32) %% 4) + "
	          "(threadIdx.x %% 32) / 4, wc = 2 * (threadIdx.x %% 4);", emit_expr_str(e, s->u.compute.pass), 64 * H);
	if (READS_ROW(views))
		emit_line(e, "const int wt = %s;",
		          k->mm.pingpong ? arena_printf(e->c->arena, "wr - %d * (threadIdx.x / 128)", 64 * H) : "wr");
	for (i = 0; i < s->nwrites; i++)
		emit_line(e, "%s *%s = %s;", emit_type(k->buf[s->writes[i].buf].dtype), emit_curname(e, s->writes[i].buf),
		          emit_buf_at(e, s->writes[i].buf, s->writes[i].slot));
	staged_inputs(e, s, k->tile_cols / k->mm.epi_cols, needed);
	if (H > 1) {   /* a 128-row warpgroup tile: the subtile's rows in each 64-row block, in turn */
		emit_line(e, "#pragma unroll");
		emit_line(e, "for (int hb = 0; hb < %d; hb++) {   // the warpgroup's 64-row blocks", H);
		e->depth++;
	}
	full_inputs(e, s, needed, H > 1 ? "64 * hb + " : "");
	for (i = 0; i < s->nwrites; i++)   /* each output's values, stored in pairs after the loop */
		emit_line(e, "float %s[%d];", emit_tname(e, PFX_RESULT, k->buf[s->writes[i].buf].tensor), k->mm.epi_cols / 2);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int jj = 0; jj < %d; jj++) {", k->mm.epi_cols / 2);
	e->depth++;
	if (((views & 1u << VIEW_FULL) && !full_preload(e)) || (views & AT_VIEWS)) {   /* an input read here, by row and col */
		emit_line(e, "const int c = 8 * (jj >> 2) + wc + (jj & 1);");
		emit_line(e, "const long long row = top + wt + %s8 * ((jj >> 1) & 1), col = left + c;", H > 1 ? "64 * hb + " : "");
	}
	/* the matmul's value is the accumulator's element; the other inputs are read where they are */
	for (i = 0; i < f->ninput; i++) {
		int t = f->input[i];
		const KParam *p = emit_param_of(e, t, false);
		const char *idx;

		if (!p || p->kind == PK_TMAP || !needed[t])
			continue;   /* an operand, another epilogue's, or an input no op reads */
		e->value[t] = emit_tname(e, PFX_VALUE, t);
		if (p->view == VIEW_ROW || p->view == VIEW_COL || (p->view == VIEW_FULL && (full_preload(e) || carried(e, s, t)))) {
			/* loaded before the subtile (staged_inputs) or before its elements (full_inputs) */
			emit_line(e, "const float %s = %s[%s];%s", e->value[t], emit_tname(e, PFX_HERE, t),
			          p->view == VIEW_ROW ? "2 * (jj >> 2) + (jj & 1)" : p->view == VIEW_FULL ? "jj" :
			          H > 1 ? "2 * hb + ((jj >> 1) & 1)" : "(jj >> 1) & 1", emit_pos(e, f->tensor[t].pos));
			continue;
		}
		if (p->view == VIEW_ROW_AT || p->view == VIEW_COL_AT) {   /* at the row's offset, guarded by both dims */
			emit_line(e, "const float %s = %s;%s", e->value[t], load_text(e, p, "row < rows && col < cols",
			          arena_printf(e->c->arena, "(%s)%s", at_text(e, s, p), p->view == VIEW_ROW_AT ? " + col" : "")),
			          emit_pos(e, f->tensor[t].pos));
			continue;
		}
		/* what is left: a full input, guarded by both dims (batched: rows are one batch's), or a scalar */
		idx = p->view != VIEW_FULL ? "0" : s->u.compute.batch ?
		      arena_printf(e->c->arena, "(%s * rows + row) * cols + col", emit_expr_str(e, s->u.compute.batch)) :
		      "row * cols + col";
		emit_line(e, "const float %s = %s;%s", e->value[t],
		          load_text(e, p, p->view == VIEW_FULL ? "row < rows && col < cols" : NULL, idx),
		          emit_pos(e, f->tensor[t].pos));
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];
		const char *v = emit_tname(e, PFX_VALUE, o->out);

		if (!needed[o->out])
			continue;   /* another epilogue's */
		e->value[o->out] = v;
		if (op_info[o->kind].cls == CLS_MATMUL) {   /* each matmul's value is its own accumulator's */
			int a;

			for (a = 1; a < k->nacc && k->acc[a].tensor != o->out; a++)
				;
			if (a == k->nacc)
				a = acc;
			/* a 64-row block's registers follow the block before's (emit_mma) */
			blk = H > 1 ? arena_printf(e->c->arena, "%d * hb + ", k->acc[k->acc[a].col ? k->acc[a].alias : a].cols / 2)
			            : "";
			if (k->acc[a].col)   /* its columns of the group's accumulator: col / 2 registers on */
				emit_line(e, "const float %s = %s[%s%d + %d * sub + jj];%s", v, emit_acc_name(e, k->acc[a].alias), blk,
				          k->acc[a].col / 2, k->mm.epi_cols / 2, emit_pos(e, o->pos));
			else
				emit_line(e, "const float %s = %s[%s%d * sub + jj];%s", v, emit_acc_name(e, a), blk, k->mm.epi_cols / 2,
				          emit_pos(e, o->pos));
			continue;
		}
		op_value(e, o);
	}
	results(e, s);
	/* elements jj and jj + 1 (jj even) are columns c and c + 1 of one row: one store for both */
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int jj = 0; jj < %d; jj += 2) {", k->mm.epi_cols / 2);
	emit_line(e, "    const int r = wr + %s8 * ((jj >> 1) & 1), c = 8 * (jj >> 2) + wc;", H > 1 ? "64 * hb + " : "");
	for (i = 0; i < s->nwrites; i++) {
		const KBuf *b = &k->buf[s->writes[i].buf];
		const char *o = emit_tname(e, PFX_RESULT, b->tensor), *at = arena_printf(e->c->arena, "r * %d + c", b->cols);

		if (b->swizzle)   /* as the TMA store reads it */
			at = arena_printf(e->c->arena, "wsf_swizzle<%d, %d>(%s)", b->swizzle, dtype_info[b->dtype].bytes, at);
		emit_line(e, "    %s(%s + %s, %s[jj], %s[jj + 1]);", b->dtype == DT_F16 ? "wsf_store2_f16" : "wsf_store2",
		          emit_curname(e, s->writes[i].buf), at, o, o);
	}
	emit_line(e, "}");
	if (H > 1) {
		e->depth--;
		emit_line(e, "}");
	}
	e->depth--;
	emit_line(e, "}");
}

/*
 * What the signal consumer reads and computes (emit_signal_compute): the
 * stored outputs read back (mem, by tensor), those it loads, the tensors
 * of the other outputs' cone, cut at the stored outputs read back, and
 * which outputs are copies of a stored one's bits.
 */
typedef struct SignalCone {
	bool *needed, *loaded;
	const KParam **mem;
	int *copy_of;     /* by output: the stored tensor it copies, or 0 */
	int words;        /* 16-byte words a vector loaded, in registers */
	int computed;     /* outputs not copies */
	Buf what;         /* "OUTPUTS from LOADED", for the comment */
} SignalCone;

static void
signal_cone(Emit *e, SignalCone *sc)
{
	const Kernel *k = e->k;
	Fusion *f = e->f;
	int i, j;

	sc->needed = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *sc->needed);
	sc->loaded = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *sc->loaded);
	sc->mem = arena_alloc(e->c->arena, (size_t)f->ntensor * sizeof *sc->mem);
	sc->copy_of = arena_alloc(e->c->arena, (size_t)(f->nout + 1) * sizeof *sc->copy_of);
	sc->words = sc->computed = 0;
	for (i = 1; i < k->nparam; i++)
		if (k->param[i].readback)
			sc->mem[k->param[i].tensor] = &k->param[i];
	for (j = 0; j < f->nout; j++) {
		int t = f->out[j].tensor;

		if (!f->out[j].consumer)
			continue;
		for (i = 1; i < f->nop; i++) {
			const Op *o = &f->op[i];

			if (o->out == t && o->kind == OP_CAST && o->in[0].tensor && sc->mem[o->in[0].tensor] &&
			    sc->mem[o->in[0].tensor]->dtype == f->out[j].dtype && o->to == f->out[j].dtype)
				sc->copy_of[j] = o->in[0].tensor;
		}
		if (sc->copy_of[j]) {
			sc->loaded[sc->copy_of[j]] = true;
		} else {
			sc->needed[t] = true;
			sc->computed++;
		}
	}
	for (i = f->nop - 1; i >= 1; i--)
		for (j = 0; j < f->op[i].nin && sc->needed[f->op[i].out] && !sc->mem[f->op[i].out]; j++)
			if (f->op[i].in[j].tensor)
				sc->needed[f->op[i].in[j].tensor] = true;
	buf_init(&sc->what, e->c->arena);
	for (j = 0; j < f->nout; j++)
		if (f->out[j].consumer)
			buf_printf(&sc->what, "%s%s", sc->what.len ? ", " : "", f->tensor[f->out[j].tensor].name);
	buf_puts(&sc->what, " from ");
	for (i = 1; i < f->ntensor; i++)
		if (sc->mem[i] && (sc->loaded[i] |= sc->needed[i])) {
			buf_printf(&sc->what, "%s%s", sc->words ? ", " : "", f->tensor[i].name);
			sc->words += dtype_info[sc->mem[i]->dtype].bytes / 2;
		}
}

/* The outputs that copy a stored output's bits: stored as loaded. */
static void
signal_copies(Emit *e, const SignalCone *sc)
{
	Fusion *f = e->f;
	int i, j;

	for (j = 0; j < f->nout; j++) {
		const KParam *p, *src;
		const char *raw;

		if (!f->out[j].consumer || !sc->copy_of[j])
			continue;
		p = emit_param_of(e, f->out[j].tensor, true);
		src = sc->mem[sc->copy_of[j]];
		raw = emit_tname(e, PFX_RAW, sc->copy_of[j]);
		emit_line(e, "if (whole) {   // %s: a copy of %s%s", f->tensor[f->out[j].tensor].name,
		          f->tensor[sc->copy_of[j]].name, emit_pos(e, f->out[j].pos));
		for (i = 0; i < dtype_info[p->dtype].bytes / 2; i++)
			emit_line(e, "    wsf_st16_l2(%s + at%s, %s[u][%d].x, %s[u][%d].y, %s[u][%d].z, %s[u][%d].w, once);",
			          emit_param_name(e, p), i ? " + 4" : "", raw, i, raw, i, raw, i, raw, i);
		emit_line(e, "} else {");
		emit_line(e, "    for (int q = 0; q < %d && col + q < cols; q++)", VEC);
		emit_line(e, "        wsf_store1%s(%s + at + q, wsf_load1_cg%s(%s + at + q));", emit_suffix(p->dtype),
		          emit_param_name(e, p), emit_suffix(src->dtype), emit_param_name(e, src));
		emit_line(e, "}");
	}
}

/* The other outputs: the loaded values unpacked to f32, the cone's ops a column at a time, stored. */
static void
signal_computed(Emit *e, const SignalCone *sc)
{
	Fusion *f = e->f;
	int i, j;

	for (i = 1; i < f->ntensor; i++) {
		const char *here = emit_tname(e, PFX_HERE, i), *raw = emit_tname(e, PFX_RAW, i);
		Dtype dt;

		if (!sc->mem[i] || !sc->needed[i])
			continue;
		dt = sc->mem[i]->dtype;
		emit_line(e, "float %s[%d];", here, VEC);
		if (dt == DT_F32)
			emit_line(e, "if (whole) wsf_unpack8_f32(%s, %s[u][0], %s[u][1]);", here, raw, raw);
		else
			emit_line(e, "if (whole) wsf_unpack8%s(%s, %s[u][0]);", emit_suffix(dt), here, raw);
		emit_line(e, "else");
		emit_line(e, "    for (int q = 0; q < %d; q++)", VEC);
		emit_line(e, "        %s[q] = col + q < cols ? wsf_load1_cg%s(%s + at + q) : 0.0f;", here,
		          emit_suffix(dt), emit_param_name(e, sc->mem[i]));
	}
	for (j = 0; j < f->nout; j++)
		if (f->out[j].consumer && !sc->copy_of[j])
			emit_line(e, "float %s[%d];", emit_tname(e, PFX_RESULT, f->out[j].tensor), VEC);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int q = 0; q < %d; q++) {", VEC);
	e->depth++;
	for (i = 1; i < f->ntensor; i++)
		if (sc->mem[i] && sc->needed[i]) {
			e->value[i] = emit_tname(e, PFX_VALUE, i);
			emit_line(e, "const float %s = %s[q];", e->value[i], emit_tname(e, PFX_HERE, i));
		}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (!sc->needed[o->out] || sc->mem[o->out])
			continue;
		e->value[o->out] = emit_tname(e, PFX_VALUE, o->out);
		op_value(e, o);
	}
	for (j = 0; j < f->nout; j++)
		if (f->out[j].consumer && !sc->copy_of[j])
			emit_line(e, "%s[q] = %s;", emit_tname(e, PFX_RESULT, f->out[j].tensor), e->value[f->out[j].tensor]);
	e->depth--;
	emit_line(e, "}");
}

/*
 * The signal consumer's compute (a compute in the ROLE_SIGNAL branch): its
 * outputs over the stored tile at (row, col), from the stored outputs
 * they read, read back from global memory (L2 holds them: just stored).
 * A thread of the role takes 8 columns of the tile (16 bytes of each
 * 2-byte tensor) in every THREADS / (BN / 8)-th row, UNROLL rows loaded
 * before any is computed so the loads are in flight together.  An output
 * that is a stored output cast to its own dtype is a copy of its bits,
 * stored as loaded; the others are computed in f32.  Columns that reach
 * past the last are taken an element at a time (f32 rows need only be
 * 16-byte multiples), rows past the last not at all.
 */
static void
emit_signal_compute(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	Fusion *f = e->f;
	const KRole *r = &k->role[e->role];
	int per_row = k->tile_cols / VEC, step = r->threads / per_row, unroll, i, j;
	const char *idx = !s->u.compute.batch ? "row * cols + col" :
	                  arena_printf(e->c->arena, "(%s * rows + row) * cols + col", emit_expr_str(e, s->u.compute.batch));
	SignalCone sc;

	signal_cone(e, &sc);
	/*
	 * Rows in flight, as many as 88 registers hold without spilling (ptxas,
	 * measured on the specs of tests/gpu): a copy of a 2-byte output 8, half
	 * as many with computed outputs, and half again for each further 16-byte
	 * word loaded, and with a batched tile's indexing; and half again for
	 * each halving of the tile's 256 columns (ptxas spills otherwise, for
	 * reasons its report does not give: a narrower tile's rows are shorter,
	 * not its registers fewer).
	 */
	unroll = 8 >> (sc.computed > 0) >> (sc.words > 1 ? sc.words - 1 : 0) >> (s->u.compute.batch != NULL) >>
	         (k->tile_cols < 256) >> (k->tile_cols < 128);
	if (unroll < 1)
		unroll = 1;

	emit_line(e, "{   // the signal consumer: %s, the tile (%s, %s) read back", buf_str(&sc.what),
	          emit_expr_str(e, s->u.compute.row), emit_expr_str(e, s->u.compute.col));
	e->depth++;
	emit_line(e, "const int t = threadIdx.x - %d;   // of %d: columns 8 (t %% %d) on, every %d-th row from t / %d",
	          r->first, r->threads, per_row, step, per_row);
	emit_line(e, "const long long col = %s + 8 * (t %% %d), end = wsf_min(%s + %d, rows);",
	          emit_expr_str(e, s->u.compute.col), per_row, emit_expr_str(e, s->u.compute.row), k->tile_rows);
	emit_line(e, "const bool whole = col + %d <= cols;", VEC);
	emit_line(e, "const wsf_u64 once = wsf_l2_drop();   // read back once, written for later kernels");
	emit_line(e, "#pragma unroll 1");
	emit_line(e, "for (long long r = %s + t / %d; r < end && col < cols; r += %d) {   // %d rows in flight",
	          emit_expr_str(e, s->u.compute.row), per_row, step * unroll, unroll);
	e->depth++;
	for (i = 1; i < f->ntensor; i++)
		if (sc.loaded[i])
			emit_line(e, "uint4 %s[%d][%d];", emit_tname(e, PFX_RAW, i), unroll, dtype_info[sc.mem[i]->dtype].bytes / 2);
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int u = 0; u < %d; u++) {", unroll);
	emit_line(e, "    const long long row = r + %d * u;", step);
	emit_line(e, "    if (whole && row < end) {");
	for (i = 1; i < f->ntensor; i++)
		if (sc.loaded[i])
			for (j = 0; j < dtype_info[sc.mem[i]->dtype].bytes / 2; j++)
				emit_line(e, "        %s[u][%d] = wsf_ldcg16_l2(%s + %s%s, once);", emit_tname(e, PFX_RAW, i), j,
				          emit_param_name(e, sc.mem[i]), idx, j ? " + 4" : "");
	emit_line(e, "    }");
	emit_line(e, "}");
	emit_line(e, "#pragma unroll");
	emit_line(e, "for (int u = 0; u < %d; u++) {", unroll);
	e->depth++;
	emit_line(e, "const long long row = r + %d * u;", step);
	emit_line(e, "if (row >= end)");
	emit_line(e, "    break;");
	emit_line(e, "const long long at = %s;", idx);
	signal_copies(e, &sc);
	if (sc.computed)
		signal_computed(e, &sc);
	for (j = 0; j < f->nout; j++) {
		const KParam *p = emit_param_of(e, f->out[j].tensor, true);
		const char *res = emit_tname(e, PFX_RESULT, f->out[j].tensor), *sfx = emit_suffix(p->dtype);

		if (!f->out[j].consumer || sc.copy_of[j])
			continue;
		emit_line(e, "if (whole)%s", emit_pos(e, f->out[j].pos));
		emit_line(e, "    wsf_store8%s(%s + at, %s);", sfx, emit_param_name(e, p), res);
		emit_line(e, "else");
		emit_line(e, "    for (int q = 0; q < %d && col + q < cols; q++)", VEC);
		emit_line(e, "        wsf_store1%s(%s + at + q, %s[q]);", sfx, emit_param_name(e, p), res);
	}
	e->depth--;
	emit_line(e, "}");
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

/* wgmma.wait_group: once none is pending, the accumulators hold the results: no read of them moves above it */
static void
emit_mma_wait(Emit *e, const Stmt *s)
{
	const Kernel *k = e->k;
	int i;

	emit_line(e, "wsf_mma_wait<%lld>();%s", (long long)s->u.group.pending, emit_comment(e, s));
	if (s->u.group.pending == 0)
		for (i = 1; i < k->nacc; i++)
			if (!k->acc[i].alias)
				emit_line(e, "wsf_acc_fence<%d>(%s);", emit_acc_regs(k, i), emit_tname(e, PFX_ACC, k->acc[i].tensor));
}

/* The statements of the kinds this family owns (stmts.h). */
static void
matmul_stmt(Emit *e, const Stmt *s)
{
	switch (s->kind) {
	case ST_MMA:
		emit_mma(e, s);
		break;
	case ST_MMA_FENCE:
		emit_line(e, "wsf_mma_fence();%s", emit_comment(e, s));
		break;
	case ST_MMA_COMMIT:
		emit_line(e, "wsf_mma_commit();%s", emit_comment(e, s));
		break;
	case ST_MMA_WAIT:
		emit_mma_wait(e, s);
		break;
	case ST_SPLIT_REDUCE:
		emit_split_reduce(e, s);
		break;
	case ST_SK_STORE:
	case ST_SK_REDUCE:
		emit_stream_k(e, s);
		break;
	case ST_ROW_FETCH:
	case ST_ROW_PUT:
		emit_row_copy(e, s);
		break;
	default:
		break;
	}
}

const EmitFamily emit_matmul_family = {
	.helpers = emit_wgmma_fn,
	.compute = emit_epilogue,
	.stmt = matmul_stmt,
	.min_ctas = min_ctas,
	.frame = declare_fragments,
	.in_place = in_place,
	.unit = "tile",
	.device = codegen_device_matmul_cuh,
};
