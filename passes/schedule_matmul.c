/*
 * schedule_matmul.c: the matmul family's part of the schedule pass
 * (schedule.c): its groups of matmuls, what this version refuses of them,
 * its plan (plan_matmul) and each output's epilogue.  Requires a fusion
 * that schedule.c checked for the matmul family; leaves f->mm, which
 * lowering reads as const and copies into the Kernel (Kernel.mm), and
 * builds no IR.  Its refusals (exit status 6) are the schedule pass's, so
 * --emit=fusion-ir reports them too.
 */
#include "matmul.h"

/* What this version refuses of the NG groups G of F's matmuls before it plans them: 0 or -1. */
static int
check_matmuls(Comp *c, const Fusion *f, const Group *g, int ng)
{
	const Op *op = &f->op[g[0].mm[0]];
	const Tensor *a = &f->tensor[op->in[0].tensor], *b = &f->tensor[op->in[1].tensor];
	int gi, m;

	/*
	 * Batch dims on A alone with A [..., M, K]: the batch's rows and M are
	 * the rows of one matrix.  Else (on both, or A [..., K, M]) the kernel
	 * is batched: its tiles run over every batch, and each tensor with batch
	 * dims is read and written through a 3-D map [batch, rows, cols].
	 */
	if ((b->rank > 2 || (a->rank > 2 && op->transpose_a)) && (ng > 1 || g[0].n > 1))
		return unbuilt(c, f->op[ng > 1 ? g[1].mm[0] : g[0].mm[1]].pos,
		               "several batched matmuls in one kernel are not implemented yet");
	for (gi = 0; gi < ng; gi++)
		for (m = 0; m < g[gi].n; m++) {
			const Op *o = &f->op[g[gi].mm[m]];
			Dtype da = f->tensor[o->in[0].tensor].dtype, db = f->tensor[o->in[1].tensor].dtype;

			if ((da != DT_BF16 && da != DT_F16) || db != da)
				return diag_error(c, o->pos, "matmul operands must both be bf16 or both f16, saw %s and %s",
				                  dtype_info[da].name, dtype_info[db].name);
			if (da != a->dtype)
				return unbuilt(c, o->pos, "matmuls of %s and %s operands in one kernel are not implemented yet",
				               dtype_info[a->dtype].name, dtype_info[da].name);
		}
	if (f->sched.store == STORE_VECTOR)
		return unbuilt(c, f->sched.store_pos, "'store: vector' is not implemented for matmul kernels: the "
		               "epilogue stores through staging subtiles and TMA");
	if (f->sched.warp_specialize == 1)
		return unbuilt(c, f->sched.ws_pos, "a matmul without warp specialization is not implemented yet");
	return 0;
}

/*
 * The group each tensor's value depends on, for the outputs of independent
 * matmuls: bit g of DEP[t] when t reads group g's accumulator.  An output
 * that combines two groups is refused (each epilogue holds one group's
 * accumulator: they share the registers); one that reads none goes with the
 * first group.  OUT_GROUP[j]: output j's group.
 */
static int
epilogue_groups(Comp *c, const Fusion *f, const Group *g, int ng, int *out_group)
{
	unsigned *dep = arena_alloc(c->arena, (size_t)f->ntensor * sizeof *dep);
	int i, j;

	for (i = 1; i < f->nop; i++) {
		const Op *o = &f->op[i];

		if (op_info[o->kind].cls == CLS_MATMUL) {
			for (j = 0; j < ng; j++)
				for (int m = 0; m < g[j].n; m++)
					if (g[j].mm[m] == i)
						dep[o->out] = 1u << j;
			continue;
		}
		for (j = 0; j < o->nin; j++)
			if (o->in[j].tensor)
				dep[o->out] |= dep[o->in[j].tensor];
	}
	for (j = 0; j < f->nout; j++) {
		unsigned d = dep[f->out[j].tensor];

		if (f->out[j].consumer)
			continue;   /* the signal's consumer reads the stored outputs, whichever epilogue stored them */
		if (d & (d - 1))
			return unbuilt(c, f->out[j].pos, "output '%s' combines the results of independent matmuls, which "
			               "is not implemented yet: each epilogue holds one matmul's accumulator",
			               f->tensor[f->out[j].tensor].name);
		for (out_group[j] = 0; d > 1; d >>= 1)
			out_group[j]++;
	}
	return 0;
}

/*
 * The plan of matmul fusion F: its groups (the_matmuls), checked
 * (check_matmuls), planned (plan_matmul), its outputs of the matmul's
 * shape, each in its group's epilogue, and the stream-K refusals
 * (choose_stream_k), in the order lowering once asked them.  NULL after
 * an error.
 */
const MatmulSchedule *
schedule_matmul(Comp *c, const Fusion *f)
{
	MatmulSchedule *s = arena_alloc(c->arena, sizeof *s);
	const Tensor *d;
	int j;

	if ((s->ng = the_matmuls(c, f, s->g)) < 0 || check_matmuls(c, f, s->g, s->ng) < 0 ||
	    plan_matmul(c, f, s->g, s->ng, &s->plan) < 0)
		return NULL;
	d = &f->tensor[f->op[s->g[0].mm[0]].out];
	for (j = 0; j < f->nout; j++)
		if (!lower_same_shape(&f->tensor[f->out[j].tensor], d)) {
			diag_error(c, f->out[j].pos, "cannot place output '%s' in the matmul kernel: its shape differs "
			           "from the matmul's '%s'", f->tensor[f->out[j].tensor].name, d->name);
			return NULL;
		}
	s->out_group = arena_alloc(c->arena, (size_t)(f->nout + 1) * sizeof *s->out_group);
	if ((s->ng > 1 && epilogue_groups(c, f, s->g, s->ng, s->out_group)) ||
	    choose_stream_k(c, f, &s->plan, s->g, s->ng) < 0)
		return NULL;
	return s;
}
