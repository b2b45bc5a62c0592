/*
 * dot.c: pictures in Graphviz's language (`wsfuse compile --emit=dot`,
 * `--emit=kernel-dot`; `dot -Tsvg` draws them).
 *
 * fusion_dot draws the fusion DAG as the fusion passes leave it: inputs,
 * one node an op written as the fusion IR writes it (`y = add(x, b)`,
 * shape, attributes), the parts of an expanded composite in a box named
 * after it, and outputs.  kernel_dot draws what the kernel IR says about
 * who does what: global tensors, each pipeline's shared-memory buffers and
 * mbarriers in a box with its stages, accumulators, the thread roles (or
 * the CTA's threads when there are none), and an edge for each thing a role
 * does to them (a TMA load, a wait, an arrive, a compute's reads and writes,
 * a store), found by walking the statements under each role, each kind's
 * edges by its hook (the dot column of ir/stmts.h).
 *
 * The text is deterministic (ids in IR order, edges in statement order,
 * each once), so it makes a golden file.  Node ids are small numbers behind
 * a letter; labels are quoted with '"' and '\' escaped and line breaks as \n.
 */
#include <string.h>

#include "ir.h"

/* Appends S as the inside of a quoted Graphviz string. */
static void
put_quoted(Buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			buf_puts(b, "\\n");
		else if ((unsigned char)*s < 0x20)
			buf_puts(b, "?");
		else
			buf_printf(b, "%c", *s);
	}
}

static void
put_header(Buf *b, const char *what, const char *name, const char *label, const char *rankdir)
{
	buf_printf(b, "// %s: %s (wsfuse); draw it with dot -Tsvg\n", name, what);
	buf_puts(b, "digraph \"");
	put_quoted(b, name);
	buf_printf(b, "\" {\n  graph [rankdir=%s, labelloc=t, fontname=\"Helvetica\", label=\"", rankdir);
	put_quoted(b, label);
	buf_puts(b, "\"];\n");
	buf_puts(b, "  node [fontname=\"Helvetica\", fontsize=10];\n");
	buf_puts(b, "  edge [fontname=\"Helvetica\", fontsize=9];\n");
}

/* ---- the fusion DAG ---- */

/* The node that defines tensor T: its input node or its op's. */
static void
put_def(Buf *b, const Fusion *f, int t)
{
	if (f->tensor[t].kind == TK_INPUT)
		buf_printf(b, "t%d", t);
	else
		buf_printf(b, "o%d", f->tensor[t].def);
}

static void
put_op_node(Buf *b, const Fusion *f, int i, const char *indent)
{
	const Op *o = &f->op[i];
	const Tensor *t = &f->tensor[o->out];
	OpClass cls = op_info[o->kind].cls;
	char num[NUM_MAX];
	Buf label;
	int j;

	buf_init(&label, b->arena);
	buf_printf(&label, "%s = %s(", t->name, op_info[o->kind].name);
	for (j = 0; j < o->nin; j++) {
		if (j)
			buf_puts(&label, ", ");
		if (o->in[j].tensor) {
			buf_puts(&label, f->tensor[o->in[j].tensor].name);
		} else {
			num_shortest(num, o->in[j].lit);
			buf_puts(&label, num);
		}
	}
	buf_puts(&label, ")\n");
	shape_print(&label, f, t);
	j = (int)label.len;
	op_print_attrs(&label, f, o);
	if ((int)label.len > j)
		label.s[j] = '\n';   /* the attributes on a line of their own */
	buf_printf(b, "%so%d [shape=box", indent, i);
	if (cls == CLS_REDUCE)
		buf_puts(b, ", style=filled, fillcolor=\"#fcf3cf\"");
	else if (cls == CLS_MATMUL)
		buf_puts(b, ", style=filled, fillcolor=\"#fad7a0\"");
	buf_puts(b, ", label=\"");
	put_quoted(b, buf_str(&label));
	buf_printf(b, "\"];   // %d:%d\n", o->pos.line, o->pos.col);
}

void
fusion_dot(Buf *b, const Fusion *f)
{
	static const char *family[] = {"", "pointwise", "row reduction", "matmul"};
	bool *drawn = arena_alloc(b->arena, (size_t)(f->nop + 1) * sizeof *drawn);
	Buf label;
	int i, j;

	buf_init(&label, b->arena);
	buf_printf(&label, "fusion %s%s%s", f->name, f->family ? ": " : "", family[f->family]);
	put_header(b, "the fusion DAG after the fusion passes", f->name, buf_str(&label), "TB");
	for (i = 0; i < f->ninput; i++) {
		const Tensor *t = &f->tensor[f->input[i]];

		buf_printf(b, "  t%d [shape=box, style=\"rounded,filled\", fillcolor=\"#d6eaf8\", label=\"input ",
		           f->input[i]);
		put_quoted(b, t->name);
		buf_puts(b, "\\n");
		buf_init(&label, b->arena);
		shape_print(&label, f, t);
		put_quoted(b, buf_str(&label));
		buf_printf(b, "\"];   // %d:%d\n", t->pos.line, t->pos.col);
	}
	/* ops in order; the parts of one composite together, in a box named after it */
	for (i = 1; i < f->nop; i++) {
		const char *origin = f->op[i].origin;

		if (drawn[i])
			continue;
		if (!origin) {
			put_op_node(b, f, i, "  ");
			continue;
		}
		buf_printf(b, "  subgraph cluster_o%d {\n    style=rounded; color=\"#999999\"; label=\"", i);
		put_quoted(b, origin);
		buf_puts(b, ", expanded\";\n");
		for (j = i; j < f->nop; j++)
			if (f->op[j].origin && strcmp(f->op[j].origin, origin) == 0) {
				put_op_node(b, f, j, "    ");
				drawn[j] = true;
			}
		buf_puts(b, "  }\n");
	}
	for (i = 0; i < f->nout; i++) {
		const Output *o = &f->out[i];

		buf_printf(b, "  out%d [shape=box, style=\"rounded,filled\", fillcolor=\"#d5f5e3\", label=\"output ", i);
		put_quoted(b, f->tensor[o->tensor].name);
		buf_printf(b, "\\n%s\"];   // %d:%d\n", dtype_info[o->dtype].name, o->pos.line, o->pos.col);
	}
	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		for (j = 0; j < o->nin; j++) {
			int k, seen = 0;

			if (!o->in[j].tensor)
				continue;
			for (k = 0; k < j; k++)   /* mul(x, x): one edge */
				seen |= o->in[k].tensor == o->in[j].tensor;
			if (seen)
				continue;
			buf_puts(b, "  ");
			put_def(b, f, o->in[j].tensor);
			buf_printf(b, " -> o%d;\n", i);
		}
	}
	for (i = 0; i < f->nout; i++) {
		buf_puts(b, "  ");
		put_def(b, f, f->out[i].tensor);
		buf_printf(b, " -> out%d;\n", i);
	}
	buf_puts(b, "}\n");
}

/* ---- the kernel: roles and pipelines ---- */

typedef struct Picture {
	const Kernel *k;
	Buf *b;
	Arena *arena;
	const char **edge;  int nedge, capedge;  /* every edge drawn, to draw each once */
	bool *loaded;       /* by param: something copies it into shared memory */
	bool *stored;       /* by param: a TMA store writes it */
	bool *computes;     /* by role (0: the CTA's threads): it runs a compute */
} Picture;

static const char *const role_kind[] = {"", "producer", "consumer", "signal", "warpgroup"};

/* Draws the edge FROM -> TO once, with LABEL and the edge attributes ATTRS (or NULL). */
static void
edge(Picture *p, const char *from, const char *to, const char *label, const char *attrs)
{
	const char *e = arena_printf(p->arena, "  %s -> %s [label=\"%s\"%s%s];\n", from, to, label,
	                             attrs ? ", " : "", attrs ? attrs : "");
	int i;

	for (i = 0; i < p->nedge; i++)
		if (strcmp(p->edge[i], e) == 0)
			return;
	*VEC_PUSH(p->arena, p->edge, p->nedge, p->capedge) = e;
}

static const char *
node_id(Picture *p, char kind, int id)
{
	return arena_printf(p->arena, "%c%d", kind, id);
}

/* " by producer", or "" outside roles. */
static const char *
by_role(const Picture *p, int role)
{
	return role ? arena_printf(p->arena, " by %s", role_kind[p->k->role[role].kind]) : "";
}

static void
access_edges(Picture *p, const Access *a, int n, int role, bool write)
{
	const char *r = node_id(p, 'r', role);
	int i;

	for (i = 0; i < n; i++) {
		const char *x = a[i].buf ? node_id(p, 'b', a[i].buf) : node_id(p, 'a', a[i].acc);

		if (write)
			edge(p, r, x, a[i].buf ? "write" : "wgmma", NULL);
		else
			edge(p, x, r, "read", NULL);
	}
}

/*
 * The edges each kind draws (stmts.h's dot column), its role's node R
 * (ROLE: the role running it).
 */
typedef void Drawer(Picture *p, const Stmt *s, int role, const char *r);

static void
dot_none(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)p, (void)s, (void)role, (void)r;
}

static void
dot_tma_load(Picture *p, const Stmt *s, int role, const char *r)
{
	int param = s->u.tma.param, buf = s->u.tma.buf;

	(void)r;
	edge(p, node_id(p, 'p', param), node_id(p, 'b', buf),
	     arena_printf(p->arena, "%s%s", p->k->param[param].kind == PK_PTR ? "bulk copy" : "TMA load",
	                  by_role(p, role)), NULL);
	if (s->u.tma.bar)
		edge(p, node_id(p, 'b', buf), node_id(p, 'm', s->u.tma.bar), "complete_tx", "style=dotted");
	p->loaded[param] = true;
}

static void
dot_tma_store(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)r;
	edge(p, node_id(p, 'b', s->u.tma.buf), node_id(p, 'p', s->u.tma.param),
	     arena_printf(p->arena, "TMA store%s", by_role(p, role)), NULL);
	p->stored[s->u.tma.param] = true;
}

/* a row input through the consumers' registers into its row buffer */
static void
dot_row_fetch(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)r;
	edge(p, node_id(p, 'p', s->u.row_copy.param), node_id(p, 'b', s->u.row_copy.buf),
	     arena_printf(p->arena, "row copy%s", by_role(p, role)), NULL);
	p->loaded[s->u.row_copy.param] = true;
}

/* the tensor's tiles into L2 ahead of the loads that read them */
static void
dot_tma_prefetch(Picture *p, const Stmt *s, int role, const char *r)
{
	edge(p, node_id(p, 'p', s->u.tma.param), r, arena_printf(p->arena, "L2 prefetch%s", by_role(p, role)),
	     "style=dashed");
	p->loaded[s->u.tma.param] = true;
}

static void
dot_expect_tx(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)role;
	edge(p, r, node_id(p, 'm', s->u.mbar.bar), "expect_tx", "style=dotted");
}

static void
dot_mbar_wait(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)role;
	edge(p, node_id(p, 'm', s->u.mbar.bar), r, "wait", "style=dotted");
}

static void
dot_mbar_arrive(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)role;
	edge(p, r, node_id(p, 'm', s->u.mbar.bar), "arrive", "style=dotted");
}

static void
dot_signal(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)role;
	if (s->u.signal.bar)   /* to the consumer role: a stored tile has landed */
		edge(p, r, node_id(p, 'm', s->u.signal.bar), "signal", "style=dotted");
}

static void
dot_sk(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)r;
	access_edges(p, s->reads, s->nreads, role, false);
}

static void
dot_split_reduce(Picture *p, const Stmt *s, int role, const char *r)
{
	access_edges(p, s->reads, s->nreads, role, false);
	edge(p, r, node_id(p, 'b', s->u.split.buf), "partial sums", NULL);
}

static void
dot_mma(Picture *p, const Stmt *s, int role, const char *r)
{
	(void)r;
	access_edges(p, s->reads, s->nreads, role, false);
	access_edges(p, s->writes, s->nwrites, role, true);
}

static void
dot_compute(Picture *p, const Stmt *s, int role, const char *r)
{
	dot_mma(p, s, role, r);
	p->computes[role] = true;
}

static Drawer *const drawers[ST_COUNT] = {
	[ST_NONE] = dot_none,
#define ST(id, name, owner, print, verify, dot, ...) [ST_##id] = dot_##dot,
#include "stmts.h"
#undef ST
};

static void
draw_stmt(Picture *p, const Stmt *s, int role)
{
	int i;

	if (!s)
		return;
	if (s->kind == ST_ROLE)
		role = s->u.role.id;
	drawers[s->kind](p, s, role, node_id(p, 'r', role));
	for (i = 0; i < s->nbody; i++)
		draw_stmt(p, s->body[i], role);
	draw_stmt(p, st_else(s), role);
}

static void
put_buf(Picture *p, int i, const char *indent)
{
	const KBuf *u = &p->k->buf[i];

	buf_printf(p->b, "%sb%d [shape=box3d, label=\"%s\\n%s[%d, %d] x%d\"];\n", indent, i, u->name,
	           dtype_info[u->dtype].name, u->rows, u->cols, u->stages);
}

static void
put_bar(Picture *p, int i, const char *indent)
{
	const KBar *m = &p->k->bar[i];

	buf_printf(p->b, "%sm%d [shape=diamond, fontsize=9, label=\"%s[%d]\\n%d arrival%s\"];\n", indent, i, m->name,
	           m->count, m->arrivals, m->arrivals == 1 ? "" : "s");
}

void
kernel_dot(Buf *b, const Kernel *k)
{
	const Fusion *f = k->fusion;
	Picture p = {k, b, b->arena, NULL, 0, 0, NULL, NULL, NULL};
	bool *drawn_buf = arena_alloc(b->arena, (size_t)(k->nbuf + 1) * sizeof *drawn_buf);
	bool *drawn_bar = arena_alloc(b->arena, (size_t)(k->nbar + 1) * sizeof *drawn_bar);
	Buf label;
	int i, j;

	p.loaded = arena_alloc(b->arena, (size_t)(k->nparam + 1) * sizeof *p.loaded);
	p.stored = arena_alloc(b->arena, (size_t)(k->nparam + 1) * sizeof *p.stored);
	p.computes = arena_alloc(b->arena, (size_t)(k->nrole + 1) * sizeof *p.computes);
	buf_init(&label, b->arena);
	buf_printf(&label, "kernel wsfuse_%s: %d threads a CTA, tile [%d, %d], %s%s%s", k->name, k->threads,
	           k->tile_rows, k->tile_cols, k->persistent ? "persistent over tiles" : "one CTA a tile",
	           k->warp_specialize ? ", warp-specialized" : "", k->tma_store ? ", TMA stores" : "");
	put_header(b, "the kernel's roles and pipelines", k->name, buf_str(&label), "LR");

	for (i = 1; i < k->nparam; i++) {
		const KParam *q = &k->param[i];
		bool out = f && q->arg >= f->ninput;

		if (q->kind != PK_TMAP && q->kind != PK_PTR)
			continue;
		buf_printf(b, "  p%d [shape=cylinder, style=filled, fillcolor=\"%s\", label=\"%s %s\\n%s, %s view\\n",
		           i, out ? "#d5f5e3" : "#d6eaf8", out ? "output" : "input", q->name, dtype_info[q->dtype].name,
		           view_name[q->view]);
		if (q->kind == PK_TMAP)
			buf_printf(b, "tensor map, box [%d, %d]\"];\n", q->box[0], q->box[1]);
		else
			buf_puts(b, "pointer\"];\n");
	}

	for (i = 0; i < k->npipe; i++) {
		const CbInfo *cb = k->pipe[i];

		buf_printf(b, "  subgraph cluster_pipe%d {\n    style=rounded; color=\"#999999\";\n", i + 1);
		buf_printf(b, "    label=\"pipeline %d: %d stage%s, prefetch %d, %d bytes a stage%s\";\n", i + 1,
		           cb->stages, cb->stages == 1 ? "" : "s", cb->prefetch, cb->stage_bytes,
		           cb->warp_specialized ? ", warp-specialized" : "");
		for (j = 1; j < k->nbuf; j++)
			if (!drawn_buf[j] && k->buf[j].kind == BUF_TILE && k->buf[j].full_bar == cb->full_bar) {
				put_buf(&p, j, "    ");
				drawn_buf[j] = true;
			}
		for (j = 1; j < k->nbar; j++)
			if (!drawn_bar[j] && (j == cb->full_bar || j == cb->empty_bar)) {
				put_bar(&p, j, "    ");
				drawn_bar[j] = true;
			}
		buf_puts(b, "  }\n");
	}
	for (j = 1; j < k->nbuf; j++)
		if (!drawn_buf[j])
			put_buf(&p, j, "  ");
	for (j = 1; j < k->nbar; j++)
		if (!drawn_bar[j])
			put_bar(&p, j, "  ");
	for (j = 1; j < k->nacc; j++)
		buf_printf(b, "  a%d [shape=box, style=dashed, label=\"%s\\n%s[%d, %d] in registers\"];\n", j,
		           k->acc[j].name, dtype_info[k->acc[j].dtype].name, k->acc[j].rows, k->acc[j].cols);

	draw_stmt(&p, k->body, 0);
	/* what no copy moves: loads and stores of the computing threads, straight to global memory */
	for (i = 1; i < k->nparam; i++) {
		const KParam *q = &k->param[i];
		bool out = f && q->arg >= f->ninput;

		if ((q->kind != PK_TMAP && q->kind != PK_PTR) || p.loaded[i] || p.stored[i])
			continue;
		for (j = 0; j < (k->nrole > 1 ? k->nrole : 1); j++)
			if (p.computes[j]) {
				/* the signal's consumer role reads the stored tiles back and writes its own outputs */
				bool consumer = j && k->role[j].kind == ROLE_SIGNAL;

				if (consumer != (q->readback || (out && f->out[q->arg - f->ninput].consumer)))
					continue;
				if (out && !q->readback)
					edge(&p, node_id(&p, 'r', j), node_id(&p, 'p', i), "store", NULL);
				else
					edge(&p, node_id(&p, 'p', i), node_id(&p, 'r', j), "load", NULL);
			}
	}

	for (i = 0, j = k->nrole <= 1; i < p.nedge && !j; i++)   /* outside roles, all threads act too */
		j = strncmp(p.edge[i], "  r0 ", 5) == 0 || strstr(p.edge[i], "-> r0 ");
	if (j)
		buf_printf(b, "  r0 [shape=box, style=bold, label=\"%s%d threads\"];\n",
		           k->nrole > 1 ? "all " : "the CTA's ", k->threads);
	for (i = 1; i < k->nrole; i++) {
		const KRole *r = &k->role[i];

		buf_printf(b, "  r%d [shape=box, style=bold, label=\"%s\\nthreads %d..%d", i, role_kind[r->kind],
		           r->first, r->first + r->threads - 1);
		if (r->regs)
			buf_printf(b, "\\nsetmaxnreg %d", r->regs);
		if (r->bar_id)
			buf_printf(b, "\\nnamed barrier %d", r->bar_id);
		buf_puts(b, "\"];\n");
	}

	for (i = 0; i < p.nedge; i++)
		buf_puts(b, p.edge[i]);
	buf_puts(b, "}\n");
}
