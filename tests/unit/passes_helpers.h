/*
 * passes_helpers.h: what test_passes.c, test_lower_reduction.c, test_views.c
 * and test_inplace.c share: a hand-built kernel of tile loads, a statement
 * found by kind, a pass run directly, and a spec read, inferred or lowered
 * (or refused) in a fresh compilation.
 * Include after fixture.h.  Its functions are static inline: each file
 * uses some.
 */
#ifndef WSFUSE_TEST_PASSES_HELPERS_H
#define WSFUSE_TEST_PASSES_HELPERS_H

/* A kernel with NLOADS tile inputs of 16 x 256 bf16 (8 KiB each). */
static inline Kernel *
new_kernel(Comp *c, int nloads, bool ws)
{
	Fusion *f = fusion_new(c);
	Kernel *k;
	int i;

	f->name = "k";
	k = kernel_new(c, f);
	k->warp_specialize = ws;
	k->consumer_threads = 256;
	k->threads = ws ? 288 : 256;
	k->smem_budget = 200 * 1024;
	for (i = 0; i < nloads; i++) {
		int p = kernel_add_param(c, k, PK_TMAP, arena_printf(c->arena, "in%d", i));
		int b = kernel_add_buf(c, k, arena_printf(c->arena, "in%d_tile", i), BUF_TILE, DT_BF16, 16, 256);

		k->param[p].dtype = DT_BF16;
		k->buf[b].param = p;
	}
	return k;
}

/* The index in BLOCK of the first statement of KIND, or -1. */
static inline int
find(const Stmt *block, StmtKind kind)
{
	int i;

	for (i = 0; i < block->nbody; i++)
		if (block->body[i]->kind == kind)
			return i;
	return -1;
}

static inline void
run_pass(Fixture *t, PassFn pass, const char *name)
{
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	if (pass(&t->c) != 0)
		fail_msg("pass %s failed: %s", name, t->msg);
	if (kernel_verify(&t->c, t->c.kernel, name) != 0)
		fail_msg("verifier after %s: %s", name, t->msg);
}

/* A fresh arena and no diagnostics, for the next spec of a test. */
static inline void
reset_comp(Fixture *t)
{
	Comp *c = &t->c;

	arena_free(c->arena);
	c->arena = arena_new(&c->oom);
	c->strs = strtab_new(c->arena);
	c->nerrors = 0;
	c->status = WSF_OK;
	c->fusion = NULL;
	c->kernel = NULL;
	c->row_fallback = ROW_FB_NONE;
}

/*
 * Reads SPEC into a fresh compilation and runs expand and infer, or with
 * KERNEL every pass to the kernel IR; 0 or -1, the message in t->msg.
 */
static inline int
run_spec(Fixture *t, const char *spec, bool kernel)
{
	Comp *c = &t->c;

	reset_comp(t);
	t->msg[0] = 0;
	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (kernel)
		return spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR) ? -1 : 0;
	return spec_read(c) || pass_expand(c) || pass_infer(c) ? -1 : 0;
}

/* Lowers SPEC through every pass; fails the test on any diagnostic. */
static inline Kernel *
lower_spec(Fixture *t, const char *spec)
{
	Comp *c = &t->c;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR))
		fail_msg("%s", t->msg);
	return c->kernel;
}

/* Reads SPEC, which the front end accepts and lowering refuses; the message is in t->msg. */
static inline void
lower_fails(Fixture *t, const char *spec)
{
	Comp *c = &t->c;

	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	assert_int_equal(spec_read(c), 0);
	assert_int_equal(passes_run(c, WSF_STAGE_FUSION_IR), 0);
	assert_int_equal(passes_run(c, WSF_STAGE_KERNEL_IR), -1);
}

#endif
