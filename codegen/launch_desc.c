/*
 * launch_desc.c: the launch description of a compiled kernel.
 *
 * Requires a kernel through every pass (its params, buffers, tile shape and
 * family fields final); leaves a Launch (ir.h) that holds all the runtime
 * reads: each param with its tensor map's view, box and swizzle, the tile
 * rule, the grid rule, the cluster, the workspace, the signals.  This file is the
 * only reader of the Kernel's fields for a launch: runtime/ never sees the
 * kernel IR.
 */
#include <string.h>

#include "codegen.h"

/*
 * The swizzle span (bytes) of the buffer param I moves through (a matmul
 * operand's tiles, loaded by any of the mainloops that share the buffer; a
 * matmul output's staging subtiles), as the emitted code lays its copies
 * out; 0: none.  Such a param's map is of its own view (LaunchParam.own_view).
 */
static int
buf_swizzle(const Kernel *k, int i)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].swizzle && (k->buf[b].param == i || kernel_loads_from(k, k->body, b, i)))
			return k->buf[b].swizzle;
	return 0;
}

/*
 * The swizzle of param I's tensor map: its buffer's, where that is one of
 * TMA's spans (32, 64, 128 bytes) and holds the map's inner box; else 0, none.
 */
static int
map_swizzle(const Kernel *k, int i)
{
	const KParam *p = &k->param[i];
	int sw = p->kind == PK_TMAP ? buf_swizzle(k, i) : 0;

	if ((sw != 32 && sw != 64 && sw != 128) || p->box[1] * dtype_info[p->dtype].bytes > sw)
		return 0;
	return sw;
}

/* Is param I moved by 1-D bulk copies (a pointer with a tile or staging buffer)? */
static bool
bulk_copied(const Kernel *k, int i)
{
	int b;

	for (b = 1; b < k->nbuf; b++)
		if (k->buf[b].param == i && (k->buf[b].kind == BUF_TILE || k->buf[b].kind == BUF_STAGING) &&
		    k->param[i].kind == PK_PTR)
			return true;
	return false;
}

static GridRule
grid_rule(const Kernel *k)
{
	if (!k->persistent)
		return GRID_PER_TILE;
	return ksum_rule[kernel_mm(k)->ksum].workspace ? GRID_ALL : GRID_PERSISTENT;
}

Launch *
launch_describe(Comp *c, const Kernel *k, const char *entry)
{
	const MatmulPlan *m = kernel_mm(k);
	Launch *l = arena_alloc(c->arena, sizeof *l);
	LaunchParam *lp = arena_alloc(c->arena, (size_t)(k->nparam > 0 ? k->nparam : 1) * sizeof *lp);
	int i;

	memset(l, 0, sizeof *l);
	memset(lp, 0, (size_t)(k->nparam > 0 ? k->nparam : 1) * sizeof *lp);
	for (i = 1; i < k->nparam; i++) {
		const KParam *p = &k->param[i];

		lp[i].kind = p->kind;
		lp[i].name = p->name;
		lp[i].arg = p->arg;
		lp[i].tensor = p->tensor;
		lp[i].dtype = p->dtype;
		lp[i].view = p->view;
		lp[i].rank = p->rank;
		memcpy(lp[i].dim, p->dim, sizeof lp[i].dim);
		lp[i].box[0] = p->box[0];
		lp[i].box[1] = p->box[1];
		lp[i].own_view = p->kind == PK_TMAP && buf_swizzle(k, i);
		lp[i].swizzle = map_swizzle(k, i);
		lp[i].bulk = bulk_copied(k, i);
		lp[i].size = p->size;
	}
	l->entry = entry;
	l->fusion = k->fusion;
	l->threads = k->threads;
	l->smem_bytes = (int)kernel_smem_bytes(k);
	l->pdl = k->pdl && !c->no_pdl;
	l->cluster = kernel_cluster_ctas(k);
	l->nparam = k->nparam;
	l->param = lp;
	l->domain = k->domain;
	l->flat = kernel_pw(k)->flat;
	l->batched = m->batched;
	l->row_tiles = k->ntile_var == k->rows_var;
	l->tile_rows = k->tile_rows;
	l->tile_cols = k->tile_cols;
	l->cluster_rows = m->cluster[0];
	l->cluster_cols = m->cluster[1];
	l->row_chunk = kernel_row(k)->chunk;
	l->row_cap = kernel_row(k)->cap;
	l->grid = grid_rule(k);
	l->workspace_slot = kernel_work_slot(k);
	l->workspace_asked = ksum_rule[m->ksum].workspace && k->fusion->sched.stream_k == 2;
	l->signal = k->signal;
	l->tile_consumer = k->tile_consumer != NULL;
	l->waits = m->waits;
	l->wait_rows = m->wait_rows;
	l->wait_cols = m->wait_cols;
	l->wait_tile[0] = m->wait_tile[0];
	l->wait_tile[1] = m->wait_tile[1];
	return l;
}
