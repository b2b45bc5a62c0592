/*
 * test_plan_row.c: the row-reduction family's planner on shapes alone:
 * specs through the front end and the fusion passes (no kernel IR is
 * built), whose plan (the schedule pass's, Fusion.row) is checked field by
 * field, and plan_row under each spill fallback.  The facts are those
 * lowering decided before the planner was its own (test_lower_reduction.c
 * checks the kernels built from them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/compiler.h"
#include "../../passes/passes.h"

#include "fixture.h"

#define ROWS(n, inputs, op, sched) \
	"fusion: d\nsizes: {M: 512, N: " n "}\ninputs:\n" inputs "ops:\n" op "outputs:\n  y: {dtype: bf16}\n" sched
#define X "  x: {dtype: bf16, shape: [M, N]}\n"
#define W "  w: {dtype: bf16, shape: [N]}\n"
#define RMS(n, sched) ROWS(n, X W, "  - {out: y, op: rmsnorm, in: [x, w]}\n", sched)
#define LN(n, sched) ROWS(n, X W "  b: {dtype: bf16, shape: [N]}\n", "  - {out: y, op: layernorm, in: [x, w, b]}\n", sched)
/* dropout then rmsnorm: rand_like's values are held, not drawn again in a second read of the row */
#define DROP_RMS(n) ROWS(n, X W "  seed: {dtype: int64, shape: []}\n", \
	"  - {out: u, op: rand_like, in: [x, seed, seed]}\n  - {out: d, op: mul, in: [x, u]}\n" \
	"  - {out: y, op: rmsnorm, in: [d, w]}\n", "")
#define SOFTMAX(n, sched) ROWS(n, X, "  - {out: y, op: softmax, in: [x]}\n", sched)
/* four f32 rows of 16384 (256 KiB a stage): past the shared memory a stage may take, so streamed */
#define FOUR_F32 ROWS("16384", "  x: {dtype: f32, shape: [M, N]}\n  r: {dtype: f32, shape: [M, N]}\n" \
	"  s: {dtype: f32, shape: [M, N]}\n  u: {dtype: f32, shape: [M, N]}\n", \
	"  - {out: h, op: add, in: [x, r]}\n  - {out: g, op: add, in: [s, u]}\n" \
	"  - {out: hg, op: add, in: [h, g]}\n  - {out: y, op: softmax, in: [hg]}\n", "")

/* SPEC through the fusion passes in a fresh fixture *T: its fusion, planned (Fusion.row); no kernel is built. */
static const Fusion *
scheduled(Fixture **t, int i, const char *spec)
{
	Comp *c;

	if (setup((void **)t) < 0)
		fail_msg("setup");
	c = &(*t)->c;
	if (setjmp(c->oom))
		fail_msg("out of memory");
	c->src = spec;
	c->srclen = strlen(spec);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR))
		fail_msg("case %d: %s", i, (*t)->msg);
	assert_int_equal(c->fusion->family, FAM_REDUCTION);
	assert_non_null(c->fusion->row);
	assert_null(c->fusion->mm);
	assert_null(c->kernel);
	return c->fusion;
}

/* One expected plan: how the row is held and the kernel's shape. */
typedef struct Want {
	int cap, steps, chunk, passes;
	bool direct, deep, reread;
	int threads, tile_cols, stages_default, stages_hint;
	bool persistent;
	int lanes;   /* RowPlan.lanes: then 256 / lanes rows a CTA (tile_rows), else 1 */
} Want;

static void
check_plan(int i, const RowSchedule *s, const Want *w)
{
	const RowPlan *r = &s->plan;

	if (r->cap != w->cap || r->steps != w->steps || r->chunk != w->chunk || r->passes != w->passes)
		fail_msg("case %d: cap %d, %d steps, chunk %d, %d passes; expected %d, %d, %d, %d", i, r->cap, r->steps,
		         r->chunk, r->passes, w->cap, w->steps, w->chunk, w->passes);
	if (r->direct != w->direct || r->deep != w->deep || r->reread != w->reread)
		fail_msg("case %d: direct %d, deep %d, reread %d; expected %d, %d, %d", i, r->direct, r->deep, r->reread,
		         w->direct, w->deep, w->reread);
	if (r->lanes != w->lanes)
		fail_msg("case %d: %d lanes a row; expected %d", i, r->lanes, w->lanes);
	if (s->threads != w->threads || s->tile_rows != (w->lanes ? 256 / w->lanes : 1) || s->tile_cols != w->tile_cols)
		fail_msg("case %d: %d threads, tile %d x %d; expected %d, %d x %d", i, s->threads, s->tile_rows,
		         s->tile_cols, w->threads, w->lanes ? 256 / w->lanes : 1, w->tile_cols);
	if (s->stages_default != w->stages_default || s->stages_hint != w->stages_hint || s->persistent != w->persistent)
		fail_msg("case %d: stages %d (hint %d), persistent %d; expected %d (%d), %d", i, s->stages_default,
		         s->stages_hint, s->persistent, w->stages_default, w->stages_hint, w->persistent);
}

/*
 * The schedule pass's plans (Comp.row_fallback ROW_FB_NONE): a row in
 * registers is direct by default (one CTA a row, one stage); rmsnorm's one
 * level of reductions rereads its row, layernorm's two with nothing kept
 * hold 32 a thread (deep), softmax keeps exp's values (not deep); a row of
 * 32768 is held in shared memory by 1024 threads; wider, or past the
 * shared memory a stage may take, it streams in chunks of 4096, a pass a
 * level of reductions (online softmax and Welford's variance share one)
 * and one for the full-row outputs; persistent: and stages: take the
 * pipeline.  A direct row of at most 1024 elements is LANES threads (a power
 * of 2) of up to four steps of 8 elements (one after a spill), held,
 * several rows a CTA.  A row that draws
 * random numbers holds them rather than read the row again.
 */
static void
plans(void **state)
{
	static const struct {
		const char *spec;
		Want w;
	} cases[] = {
		{RMS("4096", ""), {4096, 2, 0, 0, true, false, true, 256, 4096, 2, 1, false, 0}},
		{LN("4096", ""), {4096, 4, 0, 0, true, true, false, 128, 4096, 2, 1, false, 0}},
		{LN("16384", ""), {16384, 4, 0, 0, true, true, false, 512, 16384, 2, 1, false, 0}},
		{SOFTMAX("4096", ""), {4096, 2, 0, 0, true, false, false, 256, 4096, 2, 1, false, 0}},
		{SOFTMAX("16384", ""), {16384, 2, 0, 0, true, false, false, 1024, 16384, 2, 1, false, 0}},
		{RMS("1000", ""), {1024, 4, 0, 0, true, false, false, 256, 1024, 2, 1, false, 32}},
		{RMS("1032", ""), {1280, 1, 0, 0, true, false, true, 256, 1280, 2, 1, false, 0}},
		{RMS("32768", ""), {32768, 0, 0, 0, false, false, false, 1024, 32768, 2, 0, true, 0}},
		{SOFTMAX("32768", ""), {32768, 0, 0, 0, false, false, false, 1024, 32768, 2, 0, true, 0}},
		{LN("32768", "schedule: {persistent: false}\n"), {32768, 0, 0, 0, false, false, false, 1024, 32768, 2, 1, false, 0}},
		{SOFTMAX("65536", ""), {0, 0, 4096, 2, false, false, false, 512, 4096, 4, 0, true, 0}},
		{LN("65536", ""), {0, 0, 4096, 2, false, false, false, 512, 4096, 4, 0, true, 0}},
		{RMS("65536", ""), {0, 0, 4096, 2, false, false, false, 512, 4096, 4, 0, true, 0}},
		{FOUR_F32, {0, 0, 4096, 2, false, false, false, 512, 4096, 4, 0, true, 0}},
		{RMS("4096", "schedule: {persistent: true}\n"), {4096, 2, 0, 0, false, false, false, 256, 4096, 2, 0, true, 0}},
		{RMS("4096", "schedule: {stages: 3}\n"), {4096, 2, 0, 0, false, false, false, 256, 4096, 2, 3, true, 0}},
		{RMS("128", ""), {256, 4, 0, 0, true, false, false, 256, 256, 2, 1, false, 4}},
		{DROP_RMS("4096"), {4096, 2, 0, 0, true, false, false, 256, 4096, 2, 1, false, 0}},
		{LN("200", ""), {256, 4, 0, 0, true, false, false, 256, 256, 2, 1, false, 8}},
		{LN("256", ""), {256, 4, 0, 0, true, false, false, 256, 256, 2, 1, false, 8}},
		{SOFTMAX("8", ""), {256, 1, 0, 0, true, false, false, 256, 256, 2, 1, false, 1}},
		{SOFTMAX("24", ""), {256, 3, 0, 0, true, false, false, 256, 256, 2, 1, false, 1}},
		{RMS("264", ""), {512, 4, 0, 0, true, false, false, 256, 512, 2, 1, false, 16}},
		{LN("128", "schedule: {persistent: true}\n"), {256, 1, 0, 0, false, false, false, 256, 256, 2, 0, true, 0}},
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Fixture *t = NULL;
		const Fusion *f = scheduled(&t, i, cases[i].spec);

		assert_int_equal(f->row->fallback, ROW_FB_NONE);
		assert_true(f->row->planned);
		check_plan(i, f->row, &cases[i].w);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * plan_row under each fallback a spill retry sets: ROW_FB_HELD holds 16
 * elements a thread (neither deep nor reread), ROW_FB_PIPELINE takes the
 * persistent pipeline unless the schedule asks for one CTA a row.
 */
static void
fallbacks(void **state)
{
	static const struct {
		const char *spec;
		RowFallback fb;
		Want w;
	} cases[] = {
		{RMS("4096", ""), ROW_FB_HELD, {4096, 2, 0, 0, true, false, false, 256, 4096, 2, 1, false, 0}},
		{RMS("4096", ""), ROW_FB_PIPELINE, {4096, 2, 0, 0, false, false, false, 256, 4096, 2, 0, true, 0}},
		{LN("4096", ""), ROW_FB_HELD, {4096, 2, 0, 0, true, false, false, 256, 4096, 2, 1, false, 0}},
		{LN("4096", ""), ROW_FB_PIPELINE, {4096, 2, 0, 0, false, false, false, 256, 4096, 2, 0, true, 0}},
		{RMS("4096", "schedule: {persistent: false}\n"), ROW_FB_PIPELINE,
		 {4096, 2, 0, 0, true, false, false, 256, 4096, 2, 1, false, 0}},
		{RMS("4096", "schedule: {persistent: false}\n"), ROW_FB_NONE,
		 {4096, 2, 0, 0, true, false, true, 256, 4096, 2, 1, false, 0}},
		{SOFTMAX("65536", ""), ROW_FB_PIPELINE, {0, 0, 4096, 2, false, false, false, 512, 4096, 4, 0, true, 0}},
		{RMS("128", ""), ROW_FB_HELD, {256, 1, 0, 0, true, false, false, 256, 256, 2, 1, false, 16}},
		{RMS("1000", ""), ROW_FB_HELD, {1024, 1, 0, 0, true, false, false, 256, 1024, 2, 1, false, 128}},
		{RMS("128", ""), ROW_FB_PIPELINE, {256, 1, 0, 0, false, false, false, 256, 256, 2, 0, true, 0}},
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Fixture *t = NULL;
		const Fusion *f = scheduled(&t, i, cases[i].spec);
		RowSchedule s;

		assert_int_equal(plan_row(&t->c, f, cases[i].fb, &s), 0);
		assert_int_equal(s.fallback, cases[i].fb);
		check_plan(i, &s, &cases[i].w);
		assert_null(t->c.kernel);
		teardown((void **)&t);
	}
	(void)state;
}

/* The tensor of F called NAME. */
static int
tensor(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (strcmp(f->tensor[i].name, name) == 0)
			return i;
	fail_msg("no tensor %s", name);
	return 0;
}

/*
 * The domain and the views: rmsnorm's row x is full, its weight a row
 * broadcast over rows, its mean square a per-row value.  A width the
 * planner cannot take (unbound here) leaves the views alone planned, for
 * lowering to refuse.
 */
static void
views_and_unplanned(void **state)
{
	Fixture *t = NULL;
	const Fusion *f = scheduled(&t, 0, RMS("4096", ""));
	RowSchedule s;

	assert_int_equal(f->row->domain, tensor(f, "y.square"));   /* the first reduction's input, x * x */
	assert_int_equal(f->row->width, 4096);
	assert_int_equal(f->row->plan.view[tensor(f, "x")], VIEW_FULL);
	assert_int_equal(f->row->plan.view[tensor(f, "w")], VIEW_ROW);
	assert_int_equal(f->row->plan.view[tensor(f, "y.ms")], VIEW_COL);
	assert_int_equal(f->row->plan.view[tensor(f, "y")], VIEW_FULL);
	teardown((void **)&t);

	f = scheduled(&t, 1, "fusion: d\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\nops:\n"
	              "  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n");
	assert_false(f->row->planned);
	assert_int_equal(f->row->width, 0);
	assert_int_equal(f->row->plan.view[tensor(f, "x")], VIEW_FULL);
	assert_int_equal(plan_row(&t->c, f, ROW_FB_NONE, &s), -1);
	assert_int_equal(s.plan.cap + s.plan.chunk + s.threads, 0);
	teardown((void **)&t);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plans),
		cmocka_unit_test(fallbacks),
		cmocka_unit_test(views_and_unplanned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
