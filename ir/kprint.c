/*
 * kprint.c: the kernel IR printer.  Deterministic text (grammar in
 * docs/ir.md): a header of parameters, shared buffers, mbarriers and
 * launch shape, then the statement tree, two spaces per level, each
 * statement by its kind's printer (the print column of ir/stmts.h).
 */
#include "ir.h"

static const char *const binop[] = {
	[EX_ADD] = "+", [EX_SUB] = "-", [EX_MUL] = "*", [EX_DIV] = "/", [EX_MOD] = "%",
	[EX_LT] = "<", [EX_GE] = ">=", [EX_EQ] = "==", [EX_AND] = "&", [EX_XOR] = "^", [EX_SHL] = "<<",
};

void
expr_print(Buf *b, const Kernel *k, const Expr *e)
{
	if (!e) {
		buf_puts(b, "_");
		return;
	}
	switch (e->kind) {
	case EX_INT:
		buf_printf(b, "%lld", (long long)e->ival);
		break;
	case EX_VAR:
		buf_puts(b, k->var[e->var].name);
		break;
	case EX_TID:
		buf_puts(b, "tid");
		break;
	case EX_CTA:
		buf_puts(b, "cta");
		break;
	case EX_NCTA:
		buf_puts(b, "ncta");
		break;
	case EX_WG:
		buf_puts(b, "wg");
		break;
	case EX_RANK:
		buf_puts(b, "rank");
		break;
	case EX_ELECT:
		buf_puts(b, "elect()");
		break;
	case EX_MIN:
	case EX_MAX:
	case EX_CEILDIV:
		buf_puts(b, e->kind == EX_MIN ? "min(" : e->kind == EX_MAX ? "max(" : "ceildiv(");
		expr_print(b, k, e->a);
		buf_puts(b, ", ");
		expr_print(b, k, e->b);
		buf_puts(b, ")");
		break;
	default:
		buf_puts(b, "(");
		if (e->u32) {   /* a 32-bit division (ex_stage_slot) */
			buf_puts(b, "u32(");
			expr_print(b, k, e->a);
			buf_puts(b, ")");
		} else {
			expr_print(b, k, e->a);
		}
		buf_printf(b, " %s ", binop[e->kind] ? binop[e->kind] : "?");
		expr_print(b, k, e->b);
		buf_puts(b, ")");
		break;
	}
}

static void
slot_print(Buf *b, const Kernel *k, const char *name, const Expr *slot)
{
	buf_printf(b, "%s[", name);
	expr_print(b, k, slot);
	buf_puts(b, "]");
}

/* A TMA statement's coordinates: [row, col], or [batch, row, col] for a 3-D map. */
static void
at_print(Buf *b, const Kernel *k, const Stmt *s)
{
	buf_puts(b, "[");
	if (s->u.tma.batch) {
		expr_print(b, k, s->u.tma.batch);
		buf_puts(b, ", ");
	}
	expr_print(b, k, s->u.tma.row);
	buf_puts(b, ", ");
	expr_print(b, k, s->u.tma.col);
	buf_puts(b, "]");
}

static void stmt_print(Buf *b, const Kernel *k, const Stmt *s, int depth);

static void
body_print(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	int i;

	for (i = 0; i < s->nbody; i++)
		stmt_print(b, k, s->body[i], depth);
}

static void
access_print(Buf *b, const Kernel *k, const Access *a, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (i)
			buf_puts(b, ", ");
		if (a[i].acc)
			buf_puts(b, k->acc[a[i].acc].name);
		else
			slot_print(b, k, k->buf[a[i].buf].name, a[i].slot);
	}
}

/* "if COND: " where a statement runs only when COND holds. */
static void
cond_print(Buf *b, const Kernel *k, const Expr *cond)
{
	if (cond) {
		buf_puts(b, "if ");
		expr_print(b, k, cond);
		buf_puts(b, ": ");
	}
}

/* The CTA of the first part of a stream-K part's tile: in clusters a tile's parts are its rank's CTAs of
   consecutive clusters. */
static void
first_part(Buf *b, const Kernel *k, const Stmt *s)
{
	buf_puts(b, "cta - ");
	expr_print(b, k, s->u.sk.part);
	if (kernel_cluster_ctas(k) > 1)
		buf_printf(b, " * %d", kernel_cluster_ctas(k));
}

/* ": WHAT acc's subtiles s with s % parts OP part": the subtiles of stream-K's part (KSUM_SK_SCATTER) */
static void
part_subtiles(Buf *b, const Kernel *k, const Stmt *s, const char *what, const char *op)
{
	buf_printf(b, ": %s %s's subtiles s with s %% ", what, k->acc[s->reads[0].acc].name);
	expr_print(b, k, s->u.sk.parts);
	buf_printf(b, " %s ", op);
	expr_print(b, k, s->u.sk.part);
}

static const char *const role_name[] = {"", "producer", "consumer", "signal", "warpgroup"};

static const char *const cb_part[] = {"", "prologue", "main", "epilogue", "producer", "consumer"};

/*
 * The printers, one a kind (stmts.h's print column): each writes its
 * statement from the line's indent on.  A one-line statement returns true
 * (its comment and position follow); a container prints its body and
 * returns false.
 */
typedef bool Printer(Buf *b, const Kernel *k, const Stmt *s, int depth);

static bool
print_none(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_printf(b, "?stmt %d", (int)s->kind);
	return true;
}

static bool
print_name(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_puts(b, stmt_name[s->kind]);
	return true;
}

static bool
print_loop(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const struct StLoop *l = &s->u.loop;

	buf_printf(b, "for %s in [", k->var[l->var].name);
	expr_print(b, k, l->lo);
	buf_puts(b, ", ");
	expr_print(b, k, l->hi);
	buf_puts(b, ")");
	if (l->step) {
		buf_puts(b, " step ");
		expr_print(b, k, l->step);
	}
	buf_printf(b, "%s", l->kind == LOOP_TILE ? " tiles" : l->kind == LOOP_CHUNK ? " chunks" : "");
	if (l->cb)
		buf_printf(b, " circular_buffer(stages=%d, prefetch=%d, %s)", l->cb->stages, l->cb->prefetch,
		           cb_part[l->cb->part]);
	buf_puts(b, ":\n");
	body_print(b, k, s, depth + 1);
	return false;
}

static bool
print_if(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	buf_puts(b, "if ");
	expr_print(b, k, s->u.branch.cond);
	buf_puts(b, ":\n");
	body_print(b, k, s, depth + 1);
	if (s->u.branch.orelse && s->u.branch.orelse->nbody) {
		buf_indent(b, 2 * depth);
		buf_puts(b, "else:\n");
		body_print(b, k, s->u.branch.orelse, depth + 1);
	}
	return false;
}

static bool
print_roles(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	int i;

	for (i = 0; i < s->nbody; i++) {
		const KRole *r = &k->role[s->body[i]->u.role.id];

		if (i)
			buf_indent(b, 2 * depth);
		buf_printf(b, "roles %s(%d threads", role_name[r->kind], r->threads);
		if (r->regs)
			buf_printf(b, ", %d registers", r->regs);
		buf_puts(b, "):\n");
		body_print(b, k, s->body[i], depth + 1);
	}
	return false;
}

static bool
print_let(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_printf(b, "%s = ", k->var[s->u.let.var].name);
	expr_print(b, k, s->u.let.value);
	return true;
}

static bool
print_tma_load(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const Expr *mcast = s->u.tma.mcast;

	(void)depth;
	buf_puts(b, k->param[s->u.tma.param].kind == PK_PTR ? "bulk_load " : "tma_load ");
	slot_print(b, k, k->buf[s->u.tma.buf].name, s->u.tma.slot);
	if (s->u.tma.off) {
		buf_puts(b, " + ");
		expr_print(b, k, s->u.tma.off);
	}
	buf_printf(b, " <- %s", k->param[s->u.tma.param].name);
	at_print(b, k, s);
	if (mcast && mcast->kind == EX_INT) {
		buf_printf(b, " multicast=0x%llx", (unsigned long long)mcast->ival);
	} else if (mcast) {
		buf_puts(b, " multicast=");
		expr_print(b, k, mcast);
	}
	if (s->u.tma.bar) {
		buf_puts(b, " on ");
		slot_print(b, k, k->bar[s->u.tma.bar].name, s->u.tma.barslot);
	}
	return true;
}

static bool
print_tma_prefetch(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	cond_print(b, k, s->u.tma.cond);
	buf_printf(b, "tma_prefetch L2 <- %s", k->param[s->u.tma.param].name);
	at_print(b, k, s);
	return true;
}

static bool
print_exchange(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "exchange ");
	slot_print(b, k, k->buf[s->u.tma.buf].name, s->u.tma.slot);
	buf_printf(b, " <- %s", k->param[s->u.tma.param].name);
	at_print(b, k, s);
	if (s->u.tma.cond) {   /* 16 bytes of consecutive rows a load where this holds */
		buf_puts(b, " by 16 bytes if ");
		expr_print(b, k, s->u.tma.cond);
	}
	return true;
}

static bool
print_tma_store(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const KParam *p = &k->param[s->u.tma.param];

	(void)depth;
	buf_printf(b, "%s %s", p->kind == PK_PTR ? "bulk_store" : s->u.tma.add ? "tma_add" : "tma_store", p->name);
	at_print(b, k, s);
	buf_puts(b, " <- ");
	slot_print(b, k, k->buf[s->u.tma.buf].name, s->u.tma.slot);
	if (s->u.tma.off) {
		buf_puts(b, " + ");
		expr_print(b, k, s->u.tma.off);
	}
	return true;
}

static bool
print_expect_tx(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "mbarrier.arrive_expect_tx ");
	slot_print(b, k, k->bar[s->u.mbar.bar].name, s->u.mbar.barslot);
	if (s->u.mbar.more) {
		buf_puts(b, ", ");
		if (s->u.mbar.bytes)
			buf_printf(b, "%lld + ", (long long)s->u.mbar.bytes);
		expr_print(b, k, s->u.mbar.more);
		buf_puts(b, " bytes");
	} else {
		buf_printf(b, ", %lld bytes", (long long)s->u.mbar.bytes);
	}
	return true;
}

static bool
print_mbar_init(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const KBar *m = &k->bar[s->u.mbar.bar];

	(void)depth;
	buf_printf(b, "mbarrier.init %s[0..%d), arrivals=%d", m->name, m->count, m->arrivals);
	return true;
}

static bool
print_mbar_arrive(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "mbarrier.arrive ");
	slot_print(b, k, k->bar[s->u.mbar.bar].name, s->u.mbar.barslot);
	return true;
}

static bool
print_mbar_wait(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "mbarrier.wait ");
	slot_print(b, k, k->bar[s->u.mbar.bar].name, s->u.mbar.barslot);
	buf_puts(b, ", parity ");
	expr_print(b, k, s->u.mbar.parity);
	return true;
}

static bool
print_reduce(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const PointwisePlan *w = kernel_pw(k);
	int i, n = 0;

	(void)s, (void)depth;
	buf_puts(b, "reduce");
	for (i = 1; k->fusion && i < k->fusion->nop; i++)
		if (op_info[k->fusion->op[i].kind].cls == CLS_REDUCE)
			buf_printf(b, "%s%s", n++ ? ", " : " ", k->fusion->tensor[k->fusion->op[i].out].name);
	buf_printf(b, " %s via %s: item ", w->reduce == RED_ALL ? "over every element" : "over the group's rows",
	           k->buf[w->scratch].name);
	expr_print(b, k, w->item);
	buf_puts(b, " of unit ");
	expr_print(b, k, w->unit);
	buf_puts(b, ", the unit's ");
	expr_print(b, k, w->splits);
	buf_printf(b, " items meet in %s, the last adding them in order", k->param[w->work_param].name);
	return true;
}

/* A row kernel's sums over the rows meet after its rows (lower_reduction.c outer_loop). */
static bool
print_row_meet(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	int i, n = 0;

	(void)s, (void)depth;
	buf_puts(b, "rows.meet");
	for (i = 1; i < k->fusion->nop; i++)
		if (op_info[k->fusion->op[i].kind].cls == CLS_REDUCE && k->row.view[k->fusion->op[i].out] == VIEW_REDUCED)
			buf_printf(b, "%s%s", n++ ? ", " : " ", k->fusion->tensor[k->fusion->op[i].out].name);
	buf_printf(b, " over the rows: each CTA's sums to its slot of %s, the ", k->param[k->row.work_param].name);
	expr_print(b, k, k->row.splits);
	buf_puts(b, " CTAs' slots added in order");
	return true;
}

static bool
print_split_reduce(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	bool scatter = kernel_mm(k)->ksum == KSUM_SPLIT_SCATTER;

	(void)depth;
	buf_printf(b, "split_k.%s %s %s via %s[wg] on %s[wg] / %s[wg], parity ", scatter ? "reduce_scatter" : "reduce",
	           k->acc[s->reads[0].acc].name, scatter ? "into each rank's subtiles" : "into rank 0",
	           k->buf[s->u.split.buf].name, k->bar[s->u.split.bar].name, k->bar[s->u.split.bar + 1].name);
	expr_print(b, k, s->u.split.parity);
	buf_puts(b, ", ranks with k-steps ");
	expr_print(b, k, s->u.split.ranks);
	return true;
}

static bool
print_sk_store(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "if ");
	expr_print(b, k, s->u.sk.cond);
	if (kernel_mm(k)->ksum == KSUM_SK_SCATTER) {   /* part PART of the tile's PARTS: the others' subtiles, counted at its first CTA */
		part_subtiles(b, k, s, "stream_k.store", "!=");
		buf_printf(b, " to %s[cta], flag[", k->param[s->u.sk.param].name);
		first_part(b, k, s);
		buf_puts(b, "] += 1 (release)");
		return true;
	}
	buf_printf(b, ": stream_k.store %s to %s[cta], flag[cta] = 1 (release)", k->acc[s->reads[0].acc].name,
	           k->param[s->u.sk.param].name);
	return true;
}

static bool
print_sk_reduce(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "if ");
	expr_print(b, k, s->u.sk.cond);
	if (kernel_mm(k)->ksum == KSUM_SK_SCATTER) {
		part_subtiles(b, k, s, "stream_k.reduce_scatter", "==");
		buf_printf(b, " += the other parts' from %s[", k->param[s->u.sk.param].name);
		first_part(b, k, s);
		buf_puts(b, kernel_cluster_ctas(k) > 1 ? " .., a cluster apart], once flag[" : " ..], once flag[");
		first_part(b, k, s);
		buf_puts(b, "] == ");
		expr_print(b, k, s->u.sk.parts);
		buf_puts(b, " (acquire; reset by the last reader)");
		return true;
	}
	buf_printf(b, ": stream_k.reduce %s += %s[cta + 1 ..], for ", k->acc[s->reads[0].acc].name,
	           k->param[s->u.sk.param].name);
	expr_print(b, k, s->u.sk.parts);
	buf_puts(b, " CTAs (acquire flag, reset it)");
	return true;
}

static bool
print_flag_wait(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	cond_print(b, k, s->u.flag_wait.cond);
	buf_printf(b, "flag.wait%s %s[", s->u.flag_wait.producer || s->u.flag_wait.output ? ".tma" : "",
	           k->param[s->u.flag_wait.param].name);
	expr_print(b, k, s->u.flag_wait.word);
	buf_puts(b, "] == epoch");
	return true;
}

static bool
print_bulk_wait(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_printf(b, "bulk.wait_group%s %lld", s->u.group.read ? ".read" : "", (long long)s->u.group.pending);
	return true;
}

static bool
print_row_fetch(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_printf(b, "row.fetch %s[", k->param[s->u.row_copy.param].name);
	expr_print(b, k, s->u.row_copy.col);
	buf_printf(b, " ..+%d) -> registers, a column a thread", k->buf[s->u.row_copy.buf].cols);
	return true;
}

static bool
print_row_put(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	buf_puts(b, "row.put ");
	slot_print(b, k, k->buf[s->u.row_copy.buf].name, s->u.row_copy.slot);
	buf_puts(b, " <- registers");
	return true;
}

static bool
print_signal(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	if (!s->u.signal.param) {   /* to the consumer role */
		buf_printf(b, "signal.arrive %s[", k->bar[s->u.signal.bar].name);
		expr_print(b, k, s->u.signal.barslot);
		buf_puts(b, "] tile ");
		expr_print(b, k, s->u.signal.tile);
		buf_puts(b, s->u.signal.before ? " (the tile before)" : "");
		return true;
	}
	buf_printf(b, "signal.release %s[", k->param[s->u.signal.param].name);
	expr_print(b, k, s->u.signal.tile);
	buf_printf(b, "] = epoch%s", s->u.signal.before ? " (the tile before)" : "");
	return true;
}

static bool
print_sync(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)depth;
	if (s->u.sync.id == 0) {
		buf_puts(b, "syncthreads");
	} else if (s->u.sync.id_expr) {
		buf_puts(b, s->u.sync.arrive_only ? "bar.arrive " : "bar.sync ");
		expr_print(b, k, s->u.sync.id_expr);
		buf_printf(b, ", %d", s->u.sync.threads);
	} else {
		buf_printf(b, "bar.sync %lld, %d", (long long)s->u.sync.id, s->u.sync.threads);
	}
	return true;
}

static bool
print_setmaxnreg(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_printf(b, "setmaxnreg.%s %lld", s->u.maxnreg.inc ? "inc" : "dec", (long long)s->u.maxnreg.regs);
	return true;
}

static bool
print_compute(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	RowPhase phase = s->u.compute.phase;

	(void)depth;
	if (phase == ROW_BEGIN || phase == ROW_END) {
		buf_printf(b, "compute row-%s row=", phase == ROW_BEGIN ? "begin" : "end");
		expr_print(b, k, s->u.compute.row);
		return true;
	}
	if (phase == ROW_PASS_END) {
		buf_puts(b, "compute pass-end pass=");
		expr_print(b, k, s->u.compute.pass);
		return true;
	}
	buf_puts(b, phase == ROW_CHUNK ? "compute chunk[" : "compute tile[");
	expr_print(b, k, s->u.compute.row);
	buf_puts(b, ", ");
	expr_print(b, k, s->u.compute.col);
	buf_puts(b, "] ");
	if (phase == ROW_CHUNK) {
		buf_puts(b, "pass=");
		expr_print(b, k, s->u.compute.pass);
		buf_puts(b, " ");
	}
	buf_puts(b, "reads ");
	if (s->nreads == 0 && kernel_row(k)->direct)
		buf_puts(b, "global");  /* the compute loads the row itself */
	access_print(b, k, s->reads, s->nreads);
	if (s->nwrites) {
		buf_puts(b, " writes ");
		access_print(b, k, s->writes, s->nwrites);
	} else {
		buf_puts(b, " stores global");
	}
	if (s->u.compute.releases)
		buf_puts(b, ", releases its stages");
	return true;
}

static bool
print_mma(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	const MmaShape *m = s->u.mma.shape;

	(void)depth;
	buf_puts(b, "mma ");
	access_print(b, k, s->writes, s->nwrites);
	buf_puts(b, " += ");
	access_print(b, k, s->reads, s->nreads < 1 ? s->nreads : 1);
	buf_puts(b, " x ");
	if (s->nreads > 1)
		access_print(b, k, s->reads + 1, 1);
	if (m)
		buf_printf(b, " m%dn%dk%d a:%s b:%s", m->m, m->n, m->k, m->a_kmajor ? "k-major" : "m-major",
		           m->b_kmajor ? "k-major" : "n-major");
	if (s->u.mma.zero_if) {
		buf_puts(b, ", zero first if ");
		expr_print(b, k, s->u.mma.zero_if);
	}
	return true;
}

static bool
print_mma_wait(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_printf(b, "mma.wait_group %lld", (long long)s->u.group.pending);
	return true;
}

static bool
print_grid_dep(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	(void)k, (void)depth;
	buf_puts(b, s->u.grid_dep.launch ? "griddepcontrol.launch_dependents" : "griddepcontrol.wait");
	return true;
}

static Printer *const printers[ST_COUNT] = {
	[ST_NONE] = print_none,
#define ST(id, name, owner, print, ...) [ST_##id] = print_##print,
#include "stmts.h"
#undef ST
};

static void
stmt_print(Buf *b, const Kernel *k, const Stmt *s, int depth)
{
	size_t start, n;

	if (s->kind == ST_BLOCK) {
		body_print(b, k, s, depth);
		return;
	}
	buf_indent(b, 2 * depth);
	start = b->len;
	if (!printers[s->kind](b, k, s, depth))
		return;
	if (s->comment || s->pos.line) {
		n = b->len - start;
		buf_indent(b, n < 56 ? (int)(56 - n) : 1);
		buf_puts(b, ";");
		if (s->comment)
			buf_printf(b, " %s", s->comment);
		if (s->pos.line)
			buf_printf(b, " %d:%d", s->pos.line, s->pos.col);
	}
	buf_puts(b, "\n");
}

/* A tensor parameter's full shape: [M, K]. */
static void
shape_print_dims(Buf *b, const Kernel *k, const KParam *p)
{
	int i;

	buf_puts(b, "[");
	for (i = 0; i < p->rank; i++) {
		if (i)
			buf_puts(b, ", ");
		dim_print(b, k->fusion, p->dim[i]);
	}
	buf_puts(b, "]");
}

const char *const view_name[] = {"", "full", "row", "col", "scalar", "row_at", "col_at", "elem_at", "exchange_at", "reduced",
                                 "selected"};
_Static_assert(sizeof view_name / sizeof *view_name == VIEW_SELECTED + 1, "a name for each View");

void
kernel_print(Buf *b, const Kernel *k)
{
	const RowPlan *r = kernel_row(k);
	const MatmulPlan *m = kernel_mm(k);
	int i, j;

	buf_printf(b, "kernel %s threads=%d consumers=%d tile=[%d, %d]", k->name, k->threads, k->consumer_threads,
	           k->tile_rows, k->tile_cols);
	if (kernel_share_ctas(k) > 1)
		buf_printf(b, " cluster=[%d, %d]", m->cluster[0], m->cluster[1]);
	if (ksum_rule[m->ksum].split_cluster)
		buf_printf(b, " split_k=%d", m->ksize.splits);
	if (ksum_rule[m->ksum].workspace)
		buf_printf(b, " stream_k=%d%s", m->ksize.sk_slot, m->ksum == KSUM_SK_SCATTER ? " in_fractions" : "");
	buf_printf(b, "%s%s%s%s%s%s\n", k->persistent ? "" : " one_tile_per_cta",
	           kernel_pw(k)->flat ? " flat" : "", k->warp_specialize ? " warp_specialized" : "",
	           m->pingpong ? " pingpong" : "", k->tma_store ? " tma_store" : "", m->swap_ab ? " swap_ab" : "");
	if (r->cap && r->steps)
		buf_printf(b, "  rows: up to %d wide, in registers (%d step%s of 8 a thread)%s%s\n", r->cap, r->steps,
		           r->steps == 1 ? "" : "s",
		           r->reread ? ", loaded straight from global memory in every pass" :
		           r->direct ? ", loaded straight from global memory" : "",
		           r->lanes ? arena_printf(b->arena, ", %d threads a row, %d rows a CTA", r->lanes,
		                                   k->tile_rows) : "");
	else if (r->cap)
		buf_printf(b, "  rows: up to %d wide, re-read from shared memory by each pass\n", r->cap);
	else if (r->chunk)
		buf_printf(b, "  rows: any width, streamed in chunks of %d elements, %d passes over each\n",
		           r->chunk, r->passes);
	if (kernel_pw(k)->reduce)
		buf_printf(b, "  reduces over %s: items of row tiles, %d bytes of sums an item in the workspace\n",
		           kernel_pw(k)->reduce == RED_ALL ? "every element" : "the rows of each group, a column at a time",
		           kernel_pw(k)->slot);
	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];
		const char *role = p->arg < 0 ? "" : k->fusion && p->arg >= k->fusion->ninput ? "output " : "input ";

		switch (p->kind) {
		case PK_TMAP:
			buf_printf(b, "  param %s: %stmap %s ", p->name, role, dtype_info[p->dtype].name);
			shape_print_dims(b, k, p);
			buf_printf(b, " %s box=[%d, %d]%s\n", view_name[p->view], p->box[0], p->box[1],
			           p->prefetch ? ", its tiles prefetched into L2"
			           : p->preload ? ", its subtiles loaded into an output's staging copies" : "");
			break;
		case PK_PTR:
			buf_printf(b, "  param %s: %sptr %s ", p->name, role, dtype_info[p->dtype].name);
			shape_print_dims(b, k, p);
			buf_printf(b, " %s%s", p->view ? view_name[p->view] : "positions", p->readback ?
			           ", read back by the signal consumer" : "");
			if (p->at) {
				buf_puts(b, " at=");
				expr_print(b, k, p->at);
			}
			if (p->view == VIEW_ELEM_AT || p->view == VIEW_EXCHANGE) {
				buf_puts(b, " step=");
				expr_print(b, k, p->step);
			}
			if (p->bounds && p->bounds->stage)   /* read from the same input's stage (lower_pointwise.c) */
				buf_printf(b, " from=%s's %s shift=%lld", k->param[p->bounds->stage].name,
				           p->bounds->regs ? "registers" : "stage", (long long)p->bounds->shift);
			if (p->bounds && p->bounds->index_param) {   /* placed by an index's values (views.c) */
				buf_printf(b, " by=%s scale=", k->param[p->bounds->index_param].name);
				expr_print(b, k, p->bounds->index_scale);
			}
			for (j = 0; p->bounds && j < MAX_RANK; j++)   /* its box over the domain's dims (views.c) */
				if (p->bounds->hi[j] != INT64_MAX) {
					buf_printf(b, " box%d=[%lld, %lld)", j, (long long)p->bounds->lo[j],
					           (long long)p->bounds->hi[j]);
					if (p->bounds->mod[j])   /* on the index's digit (i / div) % mod */
						buf_printf(b, " of (i / %lld) %% %lld", (long long)p->bounds->div[j],
						           (long long)p->bounds->mod[j]);
				}
			buf_puts(b, "\n");
			break;
		case PK_SIZE:
			buf_printf(b, "  param %s: size %s\n", p->name,
			           p->size == SZ_ROWS ? "rows" : p->size == SZ_COLS ? "cols" : p->size == SZ_BATCH ? "batch" :
			           p->size == SZ_EPOCH ? "epoch" : p->size == SZ_SK_ON ? "stream-K on (a workspace)" :
			           p->size == SZ_DIM ? arena_printf(b->arena, "of %s", k->fusion->sym[p->dim[0].sym].name) :
			           "inner");
			break;
		case PK_FLAGS:
			buf_printf(b, "  param %s: u32 flags, one an output tile\n", p->name);
			break;
		case PK_WAIT:
			buf_printf(b, "  param %s: u32 flags a tile of each input that waits, read once they are the epoch\n",
			           p->name);
			break;
		case PK_WORKSPACE:
			buf_printf(b, "  param %s: workspace, a u32 flag a CTA (%d), then a slot of %d bytes a CTA\n", p->name,
			           SK_MAX_CTAS, kernel_work_slot(k));
			break;
		default:
			break;
		}
	}
	for (i = 1; i < k->nbuf; i++) {
		const KBuf *u = &k->buf[i];
		CopyLayout l = kbuf_copy(u);

		buf_printf(b, "  smem %s: %s[%d, %d] x%d", u->name, dtype_info[u->dtype].name, u->rows, u->cols,
		           u->stages);
		if (u->swizzle)
			buf_printf(b, " swizzle=%dB", u->swizzle);
		if (l.stride != l.bytes)  /* padded to the alignment: copies lie further apart than their bytes */
			buf_printf(b, " stride=%lld", (long long)l.stride);
		if (u->kind == BUF_PARTIAL)
			buf_puts(b, kernel_pw(k)->reduce ? " partial sums, a thread's 8 columns, read across the CTA" : m->ksum == KSUM_SPLIT_SCATTER ? " partial sums, each subtile's read by the rank that stores it"
			                             : " partial sums, read by rank 0 of the cluster");
		else if (u->kind == BUF_ROW)
			buf_printf(b, " the tile's columns of %s, a copy a tile", k->param[u->param].name);
		else if (u->kind == BUF_EXCHANGE)
			buf_printf(b, " %s's tile, a column a row, exchanged by the compute's threads", k->param[u->param].name);
		else
			buf_printf(b, " %s %s", u->kind == BUF_TILE ? "loaded from" : "stored to", k->param[u->param].name);
		if (u->preload)   /* lowering's candidate (a pointer), or the input the copies carry */
			buf_printf(b, ", %s %s", k->param[u->preload].kind == PK_PTR ? "may carry" : "carries",
			           k->param[u->preload].name);
		for (j = 1; j < k->nparam; j++)   /* and the other mainloops' operands that share its stages */
			if (j != u->param && u->kind == BUF_TILE && kernel_loads_from(k, k->body, i, j))
				buf_printf(b, ", %s", k->param[j].name);
		buf_puts(b, "\n");
	}
	for (i = 1; i < k->nacc; i++) {
		buf_printf(b, "  acc %s: %s[%d, %d] in ", k->acc[i].name, dtype_info[k->acc[i].dtype].name, k->acc[i].rows,
		           k->acc[i].cols);
		if (k->acc[i].alias)
			buf_printf(b, "%s's ", k->acc[k->acc[i].alias].name);
		buf_puts(b, "registers");
		if (k->acc[i].col)
			buf_printf(b, ", from column %d", k->acc[i].col);
		buf_puts(b, "\n");
	}
	for (i = 1; i < k->nbar; i++)
		buf_printf(b, "  mbarrier %s[%d] arrivals=%d%s\n", k->bar[i].name, k->bar[i].count,
		           k->bar[i].arrivals, k->bar[i].cluster ? ", a warpgroup of each CTA of the cluster each" : "");
	buf_printf(b, "  smem_bytes %lld\n", (long long)kernel_smem_bytes(k));
	buf_puts(b, "body:\n");
	stmt_print(b, k, k->body, 1);
}
