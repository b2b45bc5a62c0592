/*
 * test_lower_matmul_epilogue.c: the matmul epilogue's staging, lowered from a
 * spec and taken through every kernel pass: the staging ring, inputs
 * preloaded into it (residuals, row inputs, full inputs carried), the tile
 * narrowed so the stages fit, narrow subtiles, outputs that accumulate, and
 * epilogues NVRTC compiles without a warning.
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
#include "../../codegen/codegen.h"
#include "../../runtime/runtime.h"

#include "fixture.h"
#include "have_nvrtc.h"

#include "matmul_helpers.h"

/* y = x w^T at 4096^3 and N outputs of DT (y and its multiples), with BIAS bias rows of f32 added first */
static char *
many_outputs(Arena *a, int n, const char *dt, int bias, const char *sched)
{
	Buf b = {.arena = a};
	int i;

	buf_printf(&b, "fusion: many\nsizes: {M: 4096, N: 4096, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	           "  w: {dtype: bf16, shape: [N, K]}\n");
	for (i = 0; i < bias; i++)
		buf_printf(&b, "  b%d: {dtype: f32, shape: [N]}\n", i);
	buf_printf(&b, "ops:\n  - {out: s0, op: matmul, in: [x, w], transpose_b: true}\n");
	for (i = 0; i < bias; i++)
		buf_printf(&b, "  - {out: s%d, op: add, in: [s%d, b%d]}\n", i + 1, i, i);
	for (i = 1; i < n; i++)
		buf_printf(&b, "  - {out: o%d, op: mul, in: [s%d, %d.0]}\n", i, bias, i + 1);
	buf_printf(&b, "outputs:\n  s%d: {dtype: %s}\n", bias, dt);
	for (i = 1; i < n; i++)
		buf_printf(&b, "  o%d: {dtype: %s}\n", i, dt);
	if (sched)
		buf_printf(&b, "schedule: %s\n", sched);
	return b.s;
}

/* Case I's kernel: y = x w^T (GEMM_IN and GEMM_MM at SIZES) with INPUTS and the epilogue OPS into a bf16 z, SCHED. */
static Kernel *
epilogue_gemm(Fixture **t, int i, const char *sizes, const char *inputs, const char *ops, const char *sched)
{
	char text[1024];

	snprintf(text, sizeof text, "%s%s%sops:\n%s%soutputs:\n  z: {dtype: bf16}\n%s", sizes, GEMM_IN, inputs, GEMM_MM,
	         ops, sched);
	return lowered(t, i, text);
}

/*
 * A stage counter's slot and phase over S stages, S not a power of two
 * (5 at 128 x 160): the tile's part Q = i * ktiles divided in 64 bits, the
 * rest, Q % S + kk, below 2^32, in 32 (ex_stage_slot): a 64-bit % S or / S
 * each k-step is a chain of 64-bit multiplies (docs/perf.md: 0.8-3.4%).
 * Stream-K's counter, kbase + kk, stays in 64 bits (split_counter).  A
 * power of two keeps the plain (lin % S) and (lin / S) & 1.
 */
/* The CUDA of case I's kernel (cuda_of), which must hold WANT. */
static const char *
cuda_with(Fixture *t, int i, const char *want)
{
	const char *cu = cuda_of(t);

	if (!strstr(cu, want))
		fail_msg("case %d: no '%s' in the CUDA", i, want);
	return cu;
}

/* The loops over variable NAME in S, the last into *LAST: how many. */
static int
loops_named(const Kernel *k, const Stmt *s, const char *name, Stmt **last)
{
	int i, n = 0;

	if (!s)
		return 0;
	if (s->kind == ST_LOOP && strcmp(k->var[s->u.loop.var].name, name) == 0) {
		*last = (Stmt *)s;
		n++;
	}
	for (i = 0; i < s->nbody; i++)
		n += loops_named(k, s->body[i], name, last);
	return n + loops_named(k, st_else(s), name, last);
}

/*
 * An epilogue's full input (a residual) is read through its pointer, and
 * the producer prefetches the tile's box of it into L2 by TMA: a tensor
 * map of its own (KParam.prefetch, box the output tile) and one prefetch
 * in the producer's k loop, the first statement of the block that issues
 * the k-step's loads, at the tile's last k-step; none in the consumers.
 * A batched tensor's carries the batch.  An input that waits per tile has
 * one on cooperative consumers, none on ping-pong ones; none for a swapped
 * matmul, a K-split or independent matmuls; a row input (a bias) has none.
 */
static void
residual_prefetch(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int prefetches;       /* in the producer */
		const char *cuda;     /* the prefetch's call, when there is one */
	} cases[] = {
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n  b: {dtype: bf16, shape: [N]}\n",
		 "  - {out: z0, op: add, in: [y, b]}\n  - {out: z, op: add, in: [z0, r]}\n", "{cluster: [1, 1]}", 1,
		 "wsf_tma_prefetch_2d(&map_r, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: f32, shape: [M, N]}\n  q: {dtype: f16, shape: [M, N]}\n",
		 "  - {out: z0, op: add, in: [y, q]}\n  - {out: z, op: add, in: [z0, r]}\n",
		 "{consumers: pingpong, tile: [128, 128, 64]}", 2, "wsf_tma_prefetch_2d(&map_q, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: z, op: add, in: [y, r]}\n", "{cluster: [1, 1]}", 1, "wsf_tma_prefetch_2d(&map_r, col0, row0);"},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: z, op: add, in: [y, r]}\n", "{consumers: pingpong, tile: [128, 128, 64]}", 0, NULL},
		{"{M: 16, N: 8192, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "{swap_ab: true}", 0, NULL},
		{"{M: 4096, N: 4096, K: 4096}", "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "{split_k: 2, swap_ab: false, cluster: [1, 1]}", 0, NULL},
	};
	static const char spec[] =
		"fusion: gemm\nsizes: %s\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n%s"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n%s"
		"outputs:\n  z: {dtype: bf16}\nschedule: %s\n";
	Fixture *t;
	Kernel *k;
	Stmt *pf[8];
	RoleKind role[8];
	char text[1024];
	size_t ci;
	int i, n, maps;

	for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		snprintf(text, sizeof text, spec, cases[ci].sizes, cases[ci].inputs, cases[ci].ops, cases[ci].sched);
		if (!(k = kernel_of(t, text)))
			fail_msg("case %zu: %s", ci, t->msg);
		n = prefetches_of(k, k->body, pf, 0, role, ROLE_NONE);
		assert_int_equal(n, cases[ci].prefetches);
		for (maps = 0, i = 1; i < k->nparam; i++) {
			const KParam *p = &k->param[i];
			int j;

			if (!p->prefetch)
				continue;
			maps++;
			assert_int_equal(p->kind, PK_TMAP);
			assert_int_equal(p->view, VIEW_FULL);
			assert_int_equal(p->box[0], k->tile_rows);
			assert_int_equal(p->box[1], k->tile_cols);
			for (j = 1; j < k->nparam && !(k->param[j].kind == PK_PTR && k->param[j].tensor == p->tensor); j++)
				;
			assert_true(j < k->nparam);                       /* the consumers still read its pointer */
			assert_int_equal(k->param[j].arg, p->arg);
		}
		assert_int_equal(maps, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(role[i], ROLE_PRODUCER);
			assert_true(k->param[pf[i]->u.tma.param].prefetch);
			assert_string_equal(expr(t, pf[i]->u.tma.cond), "(kk == (ktiles - 1))");
			assert_string_equal(expr(t, pf[i]->u.tma.row), "row0");
			assert_string_equal(expr(t, pf[i]->u.tma.col), "col0");
			assert_null(pf[i]->u.tma.batch);
		}
		if (cases[ci].cuda) {
			const char *cu = cuda_of(t);

			assert_int_equal(count(cu, cases[ci].cuda), 1);
			assert_int_equal(count(cu, "wsf_tma_prefetch_2d(&map_"), n);
			assert_int_equal(count(cu, "const __grid_constant__ WsfTensorMap map_"), n);
		}
		teardown((void **)&t);
	}

	/* batched: the prefetch carries the tile's batch, as the loads do */
	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, HEAD "inputs:\n  a: {dtype: bf16, shape: [2, M, K]}\n  w: {dtype: bf16, shape: [2, K, N]}\n"
	                    "  r: {dtype: bf16, shape: [2, M, N]}\n"
	                    "ops:\n  - {out: y, op: matmul, in: [a, w]}\n  - {out: z, op: add, in: [y, r]}\n"
	                    "outputs:\n  z: {dtype: bf16}\n")))
		fail_msg("%s", t->msg);
	assert_int_equal(prefetches_of(k, k->body, pf, 0, role, ROLE_NONE), 1);
	assert_string_equal(expr(t, pf[0]->u.tma.batch), "bt");
	assert_int_equal(count(cuda_of(t), "wsf_tma_prefetch_3d(&map_r, col0, row0, bt);"), 1);
	teardown((void **)&t);
	(void)state;
}

/*
 * Outputs that accumulate (accumulate: true) and wait (the reduce-scatter's
 * sender adding its partial into the owner's output once the owner has
 * stored the tile): each epilogue store is a TMA add, the output's wait is
 * the consumers' (one thread, before the tile's first epilogue, after the
 * input's word) and fences the async proxy for the adds; an output that
 * accumulates without waiting keeps no wait.  Refused: outputs stored from
 * registers, the signal consumer's outputs and those it reads back, and
 * waiting outputs outside matmuls.
 */
static void
accumulate_output(void **state)
{
	static const char spec[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, p]}\n"
		"outputs:\n  o: {dtype: bf16, accumulate: true, wait: per_tile}\n  y: {dtype: f32}\n";
	static const char plain[] =
		HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
		"outputs:\n  y: {dtype: bf16, accumulate: true}\n";
	static const struct {
		const char *spec, *msg;
		bool unbuilt;
	} bad[] = {
		{"fusion: pw\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\noutputs:\n  y: {accumulate: true}\nschedule: {store: vector}\n",
		 "not yet for outputs stored from registers (store: vector)", true},
		{"fusion: rd\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: f32, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: sum, in: [a], axis: -1}\noutputs:\n  y: {accumulate: true}\n",
		 "not yet for row-reduction kernels", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: cast, in: [y], to: bf16}\n"
		 "outputs:\n  y: {dtype: bf16}\n  z: {dtype: bf16, accumulate: true}\n"
		 "schedule: {signal: {per_tile, consumer: z}}\n",
		 "not yet for an output of the signal's consumer role", true},
		{HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		 "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: relu, in: [y]}\n"
		 "outputs:\n  y: {dtype: bf16, accumulate: true}\n  z: {dtype: bf16}\n"
		 "schedule: {signal: {per_tile, consumer: z}}\n",
		 "not yet for an output the signal's consumer role reads back", true},
		{"fusion: pw\nsizes: {M: 64, N: 64}\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n"
		 "ops:\n  - {out: y, op: relu, in: [a]}\noutputs:\n  y: {wait: per_tile}\n",
		 "'wait: per_tile' (output 'y') is implemented for matmul kernels only", true},
	};
	Fixture *t;
	Kernel *k;
	Stmt *waits[4], *stores[4], *tl = NULL;
	const char *cu;
	int i, n, at_wait = -1, at_e = -1;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 2);
	n = stmts_of(k->body, ST_TMA_STORE, stores, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)   /* o's stores add, y's overwrite */
		assert_int_equal(stores[i]->u.tma.add, strcmp(k->param[stores[i]->u.tma.param].name, "o") == 0);
	n = stmts_of(k->body, ST_FLAG_WAIT, waits, 4);
	assert_int_equal(n, 2);
	assert_int_equal(waits[0]->u.flag_wait.output, 0);   /* p's: the epilogue's loads need no proxy fence */
	assert_int_equal(waits[1]->u.flag_wait.output, 1);   /* o's: fenced for the adds */
	assert_false(waits[1]->u.flag_wait.producer);       /* the consumers', not the producer's */
	/* after p's */
	assert_non_null(strstr(expr(t, waits[1]->u.flag_wait.word), "((ceildiv(rows, 128) * ceildiv(cols, 256)) + "));
	assert_non_null(tl = consumer_tiles(k));
	wait_and_epilogue(k, tl, waits[1], &at_wait, &at_e);
	assert_true(at_wait > 0 && at_e > at_wait);   /* before the tile's epilogue, */
	assert_int_equal(tl->body[at_wait]->body[0], waits[0]);   /* in p's block, after p's wait */
	assert_int_equal(tl->body[at_wait - 1]->kind, ST_LOOP);   /* after its k loop */
	assert_int_equal(tl->body[at_wait + 1]->kind, ST_SYNC);   /* the barrier passes both on */
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_flag_wait(wait_flags + "), 1);
	assert_int_equal(count(cu, "wsf_flag_wait_tma(wait_flags + "), 1);
	assert_int_equal(count(cu, "wsf_tma_add_2d(&out_o, "), 1);
	assert_int_equal(count(cu, "wsf_tma_store_2d(&out_y, "), 1);
	teardown((void **)&t);

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, plain)))
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.waits, 0);
	assert_int_equal(stmts_of(k->body, ST_FLAG_WAIT, waits, 4), 0);
	cu = cuda_of(t);
	assert_int_equal(count(cu, "wsf_tma_add_2d(&out_y, "), 1);
	assert_int_equal(count(cu, "wsf_tma_store_2d(&"), 0);
	teardown((void **)&t);

	for (i = 0; i < (int)countof(bad); i++)
		refused_with(i, bad[i].spec, bad[i].msg, bad[i].unbuilt);
	(void)state;
}

/*
 * A cooperative tile's staging buffer takes up to four copies from the
 * shared memory its stages leave (KBuf.ring, circular_buffer.c
 * grow_staging), its slot the subtile mod the copies, and the subtile's
 * read-wait lets the stores of the copies - 2 subtiles before read on:
 * 128 x 256 (4 stages of 48 KiB) four; 128 x 192 (5 of 40 KiB) three; an
 * f32 output (subtiles of 16 KiB) two, the room its stages leave less than
 * a copy; a bf16 and an f32 output three each; 128 x 64, two subtiles,
 * two.  Ping-pong, stream-K, a K-split and two matmuls' epilogues keep
 * two.  Every kernel within the budget.  Where the copies do not divide
 * the subtiles (three copies of eight), the next tile's first subtile
 * would write the copy the tile's last but two still stores: one more
 * read-wait, of every store, before the epilogue loop (sync.c
 * restart_wait), and one barrier.
 */
static void
staging_ring(void **state)
{
	static const char f32_out[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "ops:\n" GEMM_MM
	                              "outputs:\n  y: {dtype: f32}\nschedule: {cluster: [1, 1]}\n";
	static const char two_out[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "ops:\n" GEMM_MM
	                              "  - {out: r, op: relu, in: [y]}\noutputs:\n  y: {dtype: bf16}\n  r: {dtype: f32}\n";
	static const char two_mm[] = GEMM_SIZES(4096, 4096, 4096) GEMM_IN "  u: {dtype: bf16, shape: [M, K]}\n"
	                             "  v: {dtype: bf16, shape: [N, K]}\nops:\n" GEMM_MM
	                             "  - {out: z, op: matmul, in: [u, v], transpose_b: true}\n"
	                             "outputs:\n  y: {dtype: bf16}\n  z: {dtype: bf16}\nschedule: {stages: 3}\n";
	static const struct {
		const char *spec;
		int copies, wait;   /* wait: the epilogue's read-wait leaves this many groups reading; -1: not checked */
		int restart;        /* a read-wait before the epilogue loop (0 groups reading) */
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN, 4, 2},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 192, 64]}\n", 3, 1},
		{f32_out, 2, 0},
		{two_out, 3, 1, 1},   /* two outputs, copies alike: a bf16 one alone would take four */
		{two_mm, 2, -1},   /* two matmuls' epilogues one after another: 3 stages of 48 KiB leave room */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 64, 64]}\n", 2, 0},
		/* one subtile a tile over two copies: each tile's writes copy 0 after the tile before's store of it */
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {tile: [128, 32, 64]}\n", 2, 0, 1},
		{GEMM_SIZES(4096, 4096, 4096) GEMM_PLAIN "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 2, -1},
		{GEMM_SIZES(1024, 1024, 8192) GEMM_PLAIN, 2, -1},   /* stream-K by default */
		{GEMM_SIZES(256, 1024, 8192) GEMM_PLAIN "schedule: {split_k: 2}\n", 2, -1},
	};
	Fixture *t;
	int i, b;

	(void)state;
	for (i = 0; i < (int)countof(cases); i++) {
		Kernel *k = lowered(&t, i, cases[i].spec);
		const Stmt *w[4];
		Stmt *cons;
		int staging = 0;

		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING) {
				staging++;
				if (k->buf[b].stages != cases[i].copies)
					fail_msg("case %d: %s has %d copies, expected %d", i, k->buf[b].name,
					         k->buf[b].stages, cases[i].copies);
			}
		assert_true(staging > 0);
		assert_true(kernel_smem_bytes(k) <= k->smem_budget);
		if (cases[i].wait >= 0) {
			cons = find_kind(k->body, ST_ROLES, 0)->body[1];
			/* the subtile's wait (after the tile's, if any), and the consumers' last (every store landed:
			   not .read) */
			assert_int_equal(read_waits(cons, w, 0), 1 + cases[i].restart);
			if (cases[i].restart)
				assert_int_equal(w[0]->u.group.pending, 0);
			assert_int_equal(w[cases[i].restart]->u.group.pending, cases[i].wait);
			assert_int_equal(census(cons).kind[ST_SYNC], 1 + cases[i].restart);
		}
		teardown((void **)&t);
	}
}

/*
 * Without a tile hint the tile narrows until two stages of its operands
 * fit beside its outputs' staging copies and row inputs (fit_tile): six f32
 * outputs and twelve bf16 ones at 128 x 240 (subtiles of 16 columns), 200
 * bias rows narrower still.  A hinted tile that cannot fit is refused at
 * the hint with what takes the shared memory, and a tile that fits.
 */
static void
staging_fits(void **state)
{
	static const struct {
		int n;
		const char *dt;
		int bias;
		const char *sched, *msg;
	} cases[] = {
		{6, "f32", 0, NULL, NULL},
		{12, "bf16", 0, NULL, NULL},
		{1, "bf16", 200, NULL, NULL},
		{3, "f32", 40, NULL, NULL},
		{6, "f32", 0, "{tile: [128, 128, 64]}", NULL},
		{6, "f32", 0, "{tile: [128, 256, 64]}",
		 "matmul tile 128 x 256 needs 245776 bytes of shared memory at one stage, more than the 232448-byte "
		 "budget: the operands' stage 49152, the outputs' staging copies 196608 ('s0' 32768, 'o1' 32768, 'o2' "
		 "32768, 'o3' 32768, 'o4' 32768, 'o5' 32768); N = 240 fits"},
		{1, "bf16", 200, "{tile: [128, 256, 64]}",
		 "the copies of 200 row inputs 409600; N = 96 fits"},
		{40, "f32", 0, "{tile: [128, 64, 64]}", "use fewer outputs or row inputs"},
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		k = kernel_of(t, many_outputs(t->c.arena, cases[i].n, cases[i].dt, cases[i].bias, cases[i].sched));
		if (!cases[i].msg) {
			if (!k)
				fail_msg("case %d: %s", i, t->msg);
			assert_true(kernel_smem_bytes(k) <= k->smem_budget);
			if (!cases[i].sched && k->tile_cols >= 256)
				fail_msg("case %d: tile N %d, expected narrower", i, k->tile_cols);
		} else if (k || !strstr(t->msg, cases[i].msg)) {
			fail_msg("case %d: %s, expected \"%s\"", i, k ? "compiled" : t->msg, cases[i].msg);
		}
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * A tile whose N is an odd multiple of 16 (a hint's: a K-major B takes any
 * multiple of 16 up to 256) runs its epilogue in subtiles of 16 columns
 * (MatmulPlan.epi_cols), 32 otherwise: the epilogue loop's extent, the staging
 * copies' columns and swizzle (32-byte rows of bf16, 64-byte of f32), the
 * output maps' box, and the CUDA's 8 fragment elements a subtile (the
 * accumulator's from 8 sub on), a bias row's 4 distinct columns and the
 * next subtile's 16 columns on, a K-split rank's subtiles (float4 q's is
 * q / 2), ping-pong's halves of a staging copy (128 x 16 elements apart).
 */
static void
narrow_subtiles(void **state)
{
	static const struct {
		const char *sched;
		int bn, epi;
		const char *cuda[4];
	} cases[] = {
		{"{tile: [128, 80, 64]}", 80, 16,
		 {"wsf_swizzle<32, 2>(r * 16 + c)", "wsf_swizzle<64, 4>(r * 16 + c)", "acc_y[8 * sub + jj]", "float here_b[4];"}},
		{"{tile: [128, 96, 64]}", 96, 32,
		 {"wsf_swizzle<64, 2>(r * 32 + c)", "wsf_swizzle<128, 4>(r * 32 + c)", "acc_y[16 * sub + jj]", "float here_b[8];"}},
		{"{tile: [128, 48, 64], split_k: 3}", 48, 16,
		 {"if (q / 2 % 3 != me)", "for (int q = 0; q < 4; q++) {", "const long long col = left + 48 + 8 * (q >> 1)",
		  "float ahead_b[4];"}},
		{"{tile: [128, 112, 64], stream_k: true}", 112, 16,
		 {"acc_y[8 * sub + jj]", "for (int jj = 0; jj < 8; jj += 2) {", "const long long col = left + 16 + 8 * (q >> 1)",
		  "float here_b[4];"}},
		{"{tile: [128, 112, 64], consumers: pingpong}", 112, 16,
		 {"((long long)wsf_wg * 2048LL)", "acc_y[56 * hb + 8 * sub + jj]", "wsf_swizzle<32, 2>(r * 16 + c)",
		  "float here_b[4];"}},
	};
	char text[1024];
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *el = NULL;
		const char *cu;
		int b, staged = 0;

		snprintf(text, sizeof text, "%s%sschedule: %s\n", GEMM_SIZES(1000, 1000, 1000), GEMM_IN
		         "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM "  - {out: z, op: add, in: [y, b]}\n"
		         "outputs:\n  z: {dtype: bf16}\n  y: {dtype: f32}\n", cases[i].sched);
		k = lowered(&t, i, text);
		assert_int_equal(k->tile_cols, cases[i].bn);
		assert_int_equal(k->mm.epi_cols, cases[i].epi);
		assert_int_equal(loops_named(k, k->body, "e", &el), 1);
		assert_string_equal(expr(t, el->u.loop.hi), arena_printf(t->c.arena, "%d", cases[i].bn / cases[i].epi));
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING) {   /* z's bf16 copy, then y's f32 */
				assert_int_equal(k->buf[b].cols, cases[i].epi);
				assert_int_equal(k->buf[b].swizzle, cases[i].epi * 2 * (staged + 1));
				staged++;
			}
		assert_int_equal(staged, 2);
		for (j = 1; j < k->nparam; j++)
			if (k->param[j].kind == PK_TMAP && k->param[j].arg >= t->c.fusion->ninput)
				assert_int_equal(k->param[j].box[1], cases[i].epi);
		cu = cuda_of(t);
		for (j = 0; j < 4; j++)
			if (!strstr(cu, cases[i].cuda[j]))
				fail_msg("case %d: no '%s' in the CUDA", i, cases[i].cuda[j]);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * An epilogue's row inputs through shared memory (lower_matmul.c,
 * stage_rows): on one cooperative mainloop of whole tiles each row input
 * has a row buffer of the tile's columns in two copies; the consumers'
 * tile loop fetches them before its k loop and puts them in the tile's
 * copy (i % 2) after it, then one wait_group 0 and one barrier (sync.c)
 * come before the epilogue loop, which reads the copy and holds no
 * barrier but its staging tile's; the CUDA reads a subtile's columns from
 * the copy in pairs and loads none from global memory.  A tile narrower
 * than the consumers guards the fetch and the put.  Ping-pong, a swapped
 * matmul, a K-split, stream-K, independent matmuls and an input that waits
 * keep reading in the subtiles (ahead_b).
 */
static void
row_inputs_staged(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int rows, cols;   /* row buffers and their columns (0: none) */
		Dtype dt;
		const char *cuda;
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_BF16, "wsf_row_pair(row_b + ((i % 2LL)) * 256 + sub * 32 + 8 * (q >> 1) + wc, here_b[q], here_b[q + 1]);"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: f32, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_F32, "const float fetch_b = col0 + threadIdx.x < cols ? in_b[col0 + threadIdx.x] : (float)0;"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: f16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 1, 256, DT_F16, "wsf_row_pair_f16(row_b + "},
		{GEMM_SIZES(1000, 1000, 1000), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {tile: [128, 80, 64]}\n", 1, 80, DT_BF16, "if (threadIdx.x < 80)\n"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n  c: {dtype: f32, shape: [N]}\n",
		 "  - {out: u, op: add, in: [y, b]}\n  - {out: z, op: mul, in: [u, c]}\n", "", 2, 256, DT_BF16,
		 "wsf_row_pair(row_c + ((i % 2LL)) * 256"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(16, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n", "",
		 0, 0, DT_BF16, "in_b"},
		{GEMM_SIZES(256, 1024, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {tile: [128, 128, 64], split_k: 2}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n", "  - {out: z, op: add, in: [y, b]}\n",
		 "schedule: {stream_k: true}\n", 0, 0, DT_BF16, "ahead_b"},
		{GEMM_SIZES(4096, 4096, 4096), "  b: {dtype: bf16, shape: [N]}\n  r: {dtype: bf16, shape: [M, N], wait: per_tile}\n",
		 "  - {out: u, op: add, in: [y, b]}\n  - {out: z, op: add, in: [u, r]}\n", "", 0, 0, DT_BF16, "ahead_b"},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *tl, *kl, *el, *compute, *x;
		const char *cu;
		int b, rows = 0, at, reads = 0;

		k = epilogue_gemm(&t, i, cases[i].sizes, cases[i].inputs, cases[i].ops, cases[i].sched);
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_ROW) {
				assert_int_equal(k->buf[b].rows, 1);
				assert_int_equal(k->buf[b].cols, cases[i].cols);
				assert_int_equal(k->buf[b].stages, 2);
				assert_int_equal(k->param[k->buf[b].param].view, VIEW_ROW);
				if (!rows++)
					assert_int_equal(k->buf[b].dtype, cases[i].dt);
			}
		assert_int_equal(rows, cases[i].rows);
		cu = cuda_with(t, i, cases[i].cuda);
		if (!rows) {
			assert_null(strstr(cu, " fetch_b = "));
			teardown((void **)&t);
			continue;
		}
		assert_null(strstr(cu, "ahead_"));   /* no subtile loads a row input */
		tl = consumer_tiles(k);
		assert_non_null(tl);
		kl = find_kind(tl, ST_LOOP, 0);
		el = epilogue_of(k, tl);
		assert_non_null(kl);
		assert_non_null(el);
		for (at = 0; tl->body[at] != kl; at++)
			;
		for (j = 1; j <= rows; j++) {
			assert_int_equal(tl->body[at - j]->kind, ST_ROW_FETCH);
			assert_string_equal(expr(t, tl->body[at - j]->u.row_copy.col), "col0");
			assert_int_equal(tl->body[at + j]->kind, ST_ROW_PUT);
			assert_string_equal(expr(t, tl->body[at + j]->u.row_copy.slot), "(i % 2)");
		}
		assert_int_equal(tl->body[at + rows + 1]->kind, ST_MMA_WAIT);
		/*
		 * Where the copies do not divide the subtiles (128 x 80: five over
		 * four; two row buffers leave room for three copies of eight), the
		 * next tile's first waits for every store (restart_wait), before
		 * the same barrier
		 */
		for (b = 1; k->buf[b].kind != BUF_STAGING; b++)
			;
		if (el->u.loop.hi->ival % k->buf[b].stages) {
			x = tl->body[at + rows + 2];
			assert_int_equal(x->kind, ST_IF);
			assert_int_equal(x->body[0]->kind, ST_BULK_WAIT);
			assert_int_equal(x->body[0]->u.group.pending, 0);
			at++;
		}
		assert_int_equal(tl->body[at + rows + 2]->kind, ST_SYNC);
		assert_int_equal(tl->body[at + rows + 2]->u.sync.id, 1);   /* the consumers' named barrier */
		assert_ptr_equal(tl->body[at + rows + 3], el);
		assert_int_equal(census(tl).kind[ST_SYNC], 2);     /* that one and the staging tile's */
		assert_int_equal(census(el).kind[ST_SYNC], 1);
		compute = find_kind(el, ST_COMPUTE, 0);
		assert_non_null(compute);
		for (j = 0; j < compute->nreads; j++)
			if (compute->reads[j].buf && k->buf[compute->reads[j].buf].kind == BUF_ROW) {
				assert_string_equal(expr(t, compute->reads[j].slot), "(i % 2)");
				reads++;
			}
		assert_int_equal(reads, rows);
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * full_inputs_carried: a full epilogue input [M, N] of the output's element
 * size (bf16, f16) rides in the output's staging copies on one cooperative
 * mainloop whose copies are a ring of three or more that divides the
 * subtiles: a tensor map of one copy's box, a barrier a copy, the compute
 * reading the copy it writes; the consumers' k loop issues the tile's
 * first copies' loads at its last k-step but one (one thread, after a
 * read-wait for every store), each subtile from the second issues subtile
 * e + S - 1's before its store, every thread waits on the copy's barrier
 * right before the compute, and no read-wait comes before the subtile's
 * barrier.  Two copies (256 x 128's), f32 under a bf16 output, ping-pong,
 * a K-split and a second residual keep the pointer loads.
 */
static void
full_inputs_carried(void **state)
{
	static const struct {
		const char *sizes, *inputs, *ops, *sched;
		int carried, copies, subtiles;   /* carried: inputs the copies carry */
		const char *cuda;
	} cases[] = {
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 1, 4, 8, "wsf_tma_load_2d(stage_z + (((e + 3LL) % 4LL)) * 4096, &sub_r, (col0 + ((e + 3LL) * 32LL)), row0, "
		 "&carry_z[((e + 3LL) % 4LL)]);"},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: f16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 1, 4, 8, "wsf_row_pair_f16(cur_stage_z + wsf_swizzle<64, 2>((wr + 8 * (q & 1)) * 32 + 8 * (q >> 1) + wc), "
		 "here_r[2 * q], here_r[2 * q + 1]);"},
		{GEMM_SIZES(1000, 1000, 1000), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: mul, in: [y, r]}\n",
		 "schedule: {tile: [128, 128, 64]}\n", 1, 4, 4, "wsf_mbar_wait(&carry_z[(e % 4LL)], "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [256, 128, 64]}\n", 0, 0, 0, "in_r + "},   /* two copies of 256 x 32 */
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [256, 128, 64], stages: 3}\n", 1, 4, 4, "(wr + 64 * hb + 8 * (q & 1)) * 32"},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n  q: {dtype: bf16, shape: [M, N]}\n",
		 "  - {out: u, op: add, in: [y, r]}\n  - {out: z, op: add, in: [u, q]}\n", "", 1, 4, 8, "wsf_load2(in_q + "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: f32, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n", "",
		 0, 0, 0, "wsf_load2(in_r + "},
		{GEMM_SIZES(4096, 4096, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {consumers: pingpong, tile: [128, 192, 64]}\n", 0, 0, 0, "in_r + "},
		{GEMM_SIZES(256, 1024, 4096), "  r: {dtype: bf16, shape: [M, N]}\n", "  - {out: z, op: add, in: [y, r]}\n",
		 "schedule: {tile: [128, 128, 64], split_k: 2}\n", 0, 0, 0, "in_r + "},
	};
	int i, j;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k;
		Stmt *tl, *kl, *el, *compute, *lead, *at, *wait;
		const char *cu;
		int b, sb = 0, carried = 0, n;

		k = epilogue_gemm(&t, i, cases[i].sizes, cases[i].inputs, cases[i].ops, cases[i].sched);
		for (b = 1; b < k->nbuf; b++)
			if (k->buf[b].kind == BUF_STAGING && k->buf[b].preload) {
				const KParam *p = &k->param[k->buf[b].preload];

				sb = b;
				carried++;
				assert_int_equal(p->kind, PK_TMAP);
				assert_true(p->preload);
				assert_string_equal(p->name, "r");
				assert_int_equal(p->box[0], k->buf[b].rows);
				assert_int_equal(p->box[1], k->buf[b].cols);
				assert_int_equal(k->buf[b].stages, cases[i].copies);
				assert_int_equal(k->bar[k->buf[b].preload_bar].count, cases[i].copies);
				assert_int_equal(k->bar[k->buf[b].preload_bar].arrivals, 1);
			}
		assert_int_equal(carried, cases[i].carried);
		cu = cuda_with(t, i, cases[i].cuda);
		if (!carried) {
			assert_null(strstr(cu, "sub_r"));
			teardown((void **)&t);
			continue;
		}
		tl = consumer_tiles(k);
		assert_non_null(tl);
		kl = find_kind(tl, ST_LOOP, 0);
		el = epilogue_of(k, tl);
		assert_non_null(kl);
		assert_non_null(el);
		assert_int_equal(el->u.loop.hi->ival, cases[i].subtiles);
		/* the k loop: its one if issues the first copies' loads at the last k-step but one */
		for (n = 0; n < kl->nbody && kl->body[n]->kind != ST_IF; n++)
			;
		assert_true(n < kl->nbody);
		lead = kl->body[n];
		assert_int_equal(lead->u.branch.cond->kind, EX_ELECT);
		at = lead->body[0];
		assert_string_equal(expr(t, at->u.branch.cond), "(kk == max((ktiles - 2), 0))");
		assert_int_equal(at->body[0]->kind, ST_BULK_WAIT);
		assert_true(at->body[0]->u.group.read);
		assert_int_equal(at->body[0]->u.group.pending, 0);
		assert_int_equal(census(at).kind[ST_TMA_LOAD], cases[i].copies);
		assert_int_equal(census(at).kind[ST_EXPECT_TX], cases[i].copies);
		for (j = 0; j < cases[i].copies; j++) {
			Stmt *ld = at->body[2 + 2 * j];

			assert_int_equal(ld->kind, ST_TMA_LOAD);
			assert_int_equal(ld->u.tma.buf, sb);
			assert_int_equal(ld->u.tma.bar, k->buf[sb].preload_bar);
			assert_int_equal(ld->u.tma.slot->ival, j);
		}
		assert_int_equal(census(kl).kind[ST_TMA_LOAD], cases[i].copies);
		/* the epilogue: the copy's wait right before the compute, which reads the copy it writes */
		compute = find_kind(el, ST_COMPUTE, 0);
		for (n = 0; el->body[n] != compute; n++)
			;
		assert_true(n > 0);
		wait = el->body[n - 1];
		assert_int_equal(wait->kind, ST_MBAR_WAIT);
		assert_int_equal(wait->u.mbar.bar, k->buf[sb].preload_bar);
		assert_string_equal(expr(t, wait->u.mbar.barslot), "(e % 4)");
		assert_string_equal(expr(t, wait->u.mbar.parity), cases[i].subtiles == 8 ? "((((i * 8) + e) / 4) & 1)"
		                                                               : "((((i * 4) + e) / 4) & 1)");
		for (j = 0; j < compute->nreads && compute->reads[j].buf != sb; j++)
			;
		assert_true(j < compute->nreads);
		assert_string_equal(expr(t, compute->reads[j].slot), "(e % 4)");
		/* one read-wait a subtile, before a later subtile's load, none before the barrier */
		assert_int_equal(census(el).kind[ST_TMA_LOAD], cases[i].subtiles > cases[i].copies);
		assert_int_equal(census(el).kind[ST_BULK_WAIT], cases[i].subtiles > cases[i].copies);
		assert_int_equal(census(el).kind[ST_SYNC], 1);
		for (n = 0; el->body[n]->kind != ST_SYNC; n++)
			assert_false(el->body[n]->kind == ST_IF && find_kind(el->body[n], ST_BULK_WAIT, 0));
		if (cases[i].subtiles > cases[i].copies) {
			Stmt *store = el->body[n + 1], *next = store->body[0];

			assert_int_equal(store->kind, ST_IF);
			assert_int_equal(next->kind, ST_IF);
			assert_string_equal(expr(t, next->u.branch.cond), "((e >= 1) & ((e + 3) < 8))");
			assert_int_equal(next->body[0]->kind, ST_BULK_WAIT);
			assert_true(next->body[0]->u.group.read);
			assert_int_equal(next->body[0]->u.group.pending, 0);
			assert_string_equal(expr(t, next->body[2]->u.tma.slot), "((e + 3) % 4)");
			assert_int_equal(store->body[1]->kind, ST_TMA_STORE);
		}
		teardown((void **)&t);
	}
	(void)state;
}

/*
 * The epilogue names an element's place (top, left, wt, row, col) only
 * where an input is read by it: NVRTC compiles each form below without a
 * warning (it warned of variables never used in every matmul kernel).
 * Cooperative and ping-pong subtiles, swapped tiles; no input, a bias row,
 * a column scale, a full residual, a scalar.
 */
static void
epilogue_no_warnings(void **state)
{
	static const char *const specs[] = {
		HEAD GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n",
		gemm_bias_gelu,
		gemm_bias_gelu_pp,
		HEAD GEMM_IN "  s: {dtype: f32, shape: [M, 1]}\nops:\n" GEMM_MM "  - {out: o, op: mul, in: [y, s]}\n"
		"outputs:\n  o: {dtype: bf16}\n",
		HEAD GEMM_IN "  r: {dtype: bf16, shape: [M, N]}\nops:\n" GEMM_MM "  - {out: o, op: add, in: [y, r]}\n"
		"outputs:\n  o: {dtype: bf16}\nschedule: {consumers: pingpong, tile: [128, 192, 64]}\n",
		HEAD GEMM_IN "  a: {dtype: f32, shape: []}\nops:\n" GEMM_MM "  - {out: o, op: mul, in: [y, a]}\n"
		"outputs:\n  o: {dtype: f32}\n",
		"fusion: gemm\nsizes: {M: 16, N: 4096, K: 4096}\n" GEMM_IN "ops:\n" GEMM_MM "outputs:\n  y: {dtype: bf16}\n",
		"fusion: gemm\nsizes: {M: 16, N: 4096, K: 4096}\n" GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		"  - {out: o, op: add, in: [y, b]}\noutputs:\n  o: {dtype: bf16}\n",
	};
	RtOptions o = {NULL, 1, NULL, false, NULL};   /* no cache: the log is NVRTC's own */
	Fixture *t;
	Cubin bin;
	int i;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	for (i = 0; i < (int)countof(specs); i++) {
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!kernel_of(t, specs[i]))
			fail_msg("spec %d: %s", i, t->msg);
		assert_int_equal(rt_compile(&t->c, &o, "gemm", cuda_of(t), NULL, 0, &bin), WSF_OK);
		if (strstr(bin.log, "warning"))
			fail_msg("spec %d: NVRTC warned:\n%s", i, bin.log);
		teardown((void **)&t);
	}
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(staging_ring),
		cmocka_unit_test(residual_prefetch),
		cmocka_unit_test(staging_fits),
		cmocka_unit_test(narrow_subtiles),
		cmocka_unit_test(row_inputs_staged),
		cmocka_unit_test(full_inputs_carried),
		cmocka_unit_test(accumulate_output),
		cmocka_unit_test(epilogue_no_warnings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
