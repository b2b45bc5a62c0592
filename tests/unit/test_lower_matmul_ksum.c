/*
 * test_lower_matmul_ksum.c: where a matmul's partial sums over K meet (passes/lower_matmul_ksum.c),
 * lowered from a spec and taken through every kernel pass: a K split over a
 * cluster (to rank 0, reduce-scatter), stream-K's runs, fractions and
 * clusters, and the long-K default that takes stream-K.
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

/*
 * An unswapped K-split's reduce-scatter (Kernel.split_scatter): the
 * reduction, then the epilogue loop over the tile's subtiles (32 columns
 * each), whose compute and store each sit under the rank's test, with the
 * staging barrier between them outside both; both barriers count the other
 * ranks' 128 arrivals; every rank writes, arrives on the others' barriers
 * (two remote arrivals in the code) and stores subtiles rank, rank + splits
 * (none where the subtiles are fewer than the ranks).
 */
static void
split_scatter(Fixture *t, Kernel *k)
{
	Stmt *loop = consumer_tiles(k), *red, *eloop = NULL, *first = NULL, *last = NULL;
	const char *cu;
	char want[64];
	int i, at = -1, sync = -1, s = k->mm.ksize.splits;

	assert_non_null(loop);
	red = find_kind(loop, ST_SPLIT_REDUCE, 0);
	assert_non_null(red);
	for (i = 0; i < loop->nbody; i++)
		if (loop->body[i] == red)
			at = i;
	assert_true(at >= 0 && at + 1 < loop->nbody);
	eloop = loop->body[at + 1];
	assert_int_equal(eloop->kind, ST_LOOP);
	snprintf(want, sizeof want, "%d", k->tile_cols / 32);
	assert_string_equal(expr(t, eloop->u.loop.hi), want);
	snprintf(want, sizeof want, "((e %% %d) == rank)", s);
	for (i = 0; i < eloop->nbody; i++) {
		Stmt *x = eloop->body[i];

		if (x->kind == ST_IF && !strcmp(expr(t, x->u.branch.cond), want)) {
			if (!first)
				first = x;
			last = x;
		} else if (x->kind == ST_SYNC && first && last == first) {
			sync = i;
		}
	}
	assert_non_null(first);
	assert_true(first != last && sync > 0);
	assert_int_equal(first->nbody, 1);
	assert_int_equal(first->body[0]->kind, ST_COMPUTE);
	assert_int_equal(last->body[0]->kind, ST_IF);
	assert_int_equal(last->body[0]->u.branch.cond->kind, EX_ELECT);
	assert_int_equal(census(last).kind[ST_TMA_STORE], 1);
	assert_int_equal(census(eloop).kind[ST_COMPUTE], 1);
	assert_int_equal(k->bar[red->u.split.bar].arrivals, (s - 1) * 128);
	assert_int_equal(k->bar[red->u.split.bar + 1].arrivals, (s - 1) * 128);
	for (i = 0; i < loop->nbody; i++)   /* no rank 0 alone */
		assert_false(loop->body[i]->kind == ST_IF && !strcmp(expr(t, loop->body[i]->u.branch.cond), "(rank == 0)"));
	cu = cuda_of(t);
	snprintf(want, sizeof want, "stores subtiles me, me + %d, ...", s);
	assert_non_null(strstr(cu, want));
	snprintf(want, sizeof want, "if (q / 4 %% %d == me) {", s);
	assert_non_null(strstr(cu, want));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&"), 2);
}


/*
 * Stream-K in fractions of a tile (Kernel.sk_scatter, fraction_plan), the
 * default rules' kernel of 128 x 64 tiles in quarters (256 x 1024 x 8192) run at other sizes
 * and grids as each CTA would: every k-step of every tile computed once;
 * a split tile's parts on consecutive CTAs, part i on its first + i, all
 * of one count (at most the rule's 4, each at least 4 k-steps) and the
 * whole tiles with sk_i 0 of 1; the stage counter runs on.  Then the
 * meeting: every part of a split tile writes (1 < sk_n), those that own
 * a subtile of the two add, and the epilogue's compute and store each
 * under the part's subtile test, the compute's step sk_n.
 */
static void
stream_k_fractions(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid, parts;   /* parts: of each split tile, 1: none split */
		bool off;                       /* launched without a workspace: sk_on 0 */
	} runs[] = {
		{256, 1024, 8192, 132, 4, false},    /* the spec's sizes: 32 tiles on 128 CTAs */
		{128, 1280, 8192, 132, 4, false},    /* 20 on 80 */
		{128, 1280, 8192, 40, 2, false},     /* a smaller grid: halves */
		{128, 1280, 8200, 132, 4, false},    /* 129 k-steps: parts of 32 and 33 */
		{128, 1280, 1000, 132, 4, false},    /* 16 k-steps: parts of 4 */
		{128, 1280, 448, 132, 1, false},     /* 7: none split */
		{1024, 1280, 8192, 132, 4, false},   /* 160 tiles: a wave, then 28 in quarters after */
		{4096, 4096, 8192, 132, 1, false},   /* 68 left: no room for two parts each */
		{128, 1280, 8192, 132, 1, true},     /* no workspace: all whole */
	};
	Kernel *k = kernel_of(t, GEMM_SIZES(256, 1024, 8192) GEMM_PLAIN);
	Stmt *tl, *eloop = NULL, *put, *add;
	const char *cu;
	int r, i, tests = 0;

	if (!k)
		fail_msg("%s", t->msg);
	assert_true(k->mm.ksum == KSUM_SK_SCATTER && k->mm.ksize.sk_parts == 4 && k->tile_cols == 64);
	tl = consumer_tiles(k);
	for (r = 0; r < (int)countof(runs); r++) {
		int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, tiles = (M + 127) / 128 * ((N + 63) / 64);
		int64_t kt = (K + 63) / 64, b, *cover = calloc((size_t)(tiles * kt), sizeof *cover);
		int64_t *first = calloc((size_t)tiles, sizeof *first), *nparts = calloc((size_t)tiles, sizeof *nparts);
		Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
		           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

		for (b = 0; b < tiles; b++)
			first[b] = -1;
		for (b = 0; b < runs[r].grid; b++) {
			int64_t it, counter = 0;

			plan_env(k, &env, M, N, K, b, runs[r].grid, runs[r].off);
			for (it = 0; it < env.v[k->niter_var]; it++) {
				int64_t tile, kb, kn, ski, skn, j;

				tile_env(k, tl, &env, it);
				tile = var_named(k, &env, "tile"), kb = var_named(k, &env, "kb"), kn = var_named(k, &env, "kn");
				ski = var_named(k, &env, "sk_i"), skn = var_named(k, &env, "sk_n");
				if (tile < 0 || tile >= tiles || kn < 1 || kb < 0 || kb + kn > kt || ski >= skn)
					fail_msg("run %d cta %lld tile %lld: k-steps [%lld, %lld) of %lld, part %lld of %lld", r,
					         (long long)b, (long long)tile, (long long)kb, (long long)(kb + kn), (long long)kt,
					         (long long)ski, (long long)skn);
				assert_int_equal(var_named(k, &env, "kbase"), counter);   /* the stage counter runs on */
				counter += kn;
				for (j = kb; j < kb + kn; j++)
					cover[tile * kt + j]++;
				if (skn > 1) {   /* part ski of a split tile: its first part's CTA + ski */
					assert_true(kn >= 4 && skn <= 4 && skn == runs[r].parts);
					if (first[tile] < 0)
						first[tile] = b - ski, nparts[tile] = skn;
					assert_int_equal(b - ski, first[tile]);
					assert_int_equal(skn, nparts[tile]);
					tests++;
				}
			}
		}
		for (i = 0; i < tiles * kt; i++)
			if (cover[i] != 1)
				fail_msg("run %d: tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
				         (long long)(i % kt), (long long)cover[i]);
		if (runs[r].parts == 1)
			for (i = 0; i < tiles; i++)
				assert_int_equal(first[i], -1);
		free(cover), free(first), free(nparts);
	}
	assert_true(tests > 0);

	/* the meeting, then the epilogue's subtiles shared among the parts */
	put = find_kind(tl, ST_SK_STORE, 0);
	add = find_kind(tl, ST_SK_REDUCE, 0);
	assert_non_null(put);
	assert_non_null(add);
	assert_string_equal(expr(t, put->u.sk.cond), "(1 < sk_n)");
	assert_string_equal(expr(t, add->u.sk.cond), "((1 < sk_n) * (sk_i < 2))");
	assert_string_equal(expr(t, add->u.sk.part), "sk_i");
	assert_string_equal(expr(t, add->u.sk.parts), "sk_n");
	for (i = 0; i < tl->nbody; i++)
		if (tl->body[i] == add && i + 1 < tl->nbody)
			eloop = tl->body[i + 1];
	assert_true(eloop && eloop->kind == ST_LOOP);
	for (i = r = 0; i < eloop->nbody; i++)
		if (eloop->body[i]->kind == ST_IF && !strcmp(expr(t, eloop->body[i]->u.branch.cond), "((e % sk_n) == sk_i)"))
			r++;
	assert_int_equal(r, 2);
	assert_string_equal(expr(t, find_deep(eloop, ST_COMPUTE)->u.compute.step), "sk_n");
	assert_int_equal(census(eloop).kind[ST_TMA_STORE], 1);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "wsf_sk_arrive(wsf_sk_flag(sk_work, blockIdx.x - me));"));
	assert_non_null(strstr(cu, "wsf_sk_gather(wsf_sk_flag(sk_work, first), (unsigned)parts, "
	                           "wsf_sk_flag(sk_work, first + 1), (unsigned)wsf_min(parts, 2LL));"));
	assert_null(strstr(cu, "wsf_sk_take(wsf_sk_flag"));   /* no owner adds every part alone */
}

/*
 * Stream-K's fractions in clusters of two (long runs of 128 x 128 tiles):
 * two tile rows that share B (512 x 512 x 65536 in eighths), else two tile
 * columns that share A (384 x 1024 x 65536 in fifths), run at other sizes
 * and grids as each CTA would: a cluster takes a part of a cluster tile,
 * both its CTAs the same k-steps (the shared operand's slices multicast to
 * both) of the CTA tile at their rank; every k-step of every CTA tile
 * once; a tile's parts on the CTAs of its rank in consecutive clusters
 * (part i on first + 2 i), the stage counter running on.  Then the CUDA's
 * flags and slots at those CTAs, and the multicast operand.
 */
static void
stream_k_cluster_fractions(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid, parts;   /* parts: of each split tile, 1: none split */
		bool off;                       /* launched without a workspace: sk_on 0 */
		int spec;                       /* of specs[] */
	} runs[] = {
		{512, 512, 65536, 132, 8, false, 0},    /* the spec's sizes: 8 cluster tiles on 64 clusters */
		{512, 512, 8192, 132, 8, false, 0},     /* parts of 16 k-steps */
		{1000, 512, 32768, 132, 4, false, 0},   /* 16 cluster tiles, the last row's ragged */
		{512, 512, 65536, 64, 4, false, 0},     /* 32 clusters */
		{4608, 512, 8192, 132, 8, false, 0},    /* 72 cluster tiles: a wave, then 6 in eighths */
		{4096, 512, 8192, 132, 1, false, 0},    /* 64: none split */
		{512, 512, 65536, 132, 1, true, 0},     /* no workspace: all whole */
		{384, 1024, 65536, 132, 5, false, 1},   /* the spec's sizes: 12 cluster tiles on 60 clusters */
		{128, 4096, 65536, 132, 4, false, 1},   /* one row of 16 */
		{384, 1000, 65536, 132, 5, false, 1},   /* the last column ragged */
		{384, 1024, 65536, 132, 1, true, 1},
	};
	static const struct {
		const char *spec, *shared;
		int parts, cm, cn;
	} specs[] = {
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, "wsf_tma_load_2d_multicast(tile_w + ", 8, 2, 1},
		{GEMM_SIZES(384, 1024, 65536) GEMM_PLAIN, "wsf_tma_load_2d_multicast(tile_x + ", 5, 1, 2},
	};
	int r, i, s, tests = 0;

	for (s = 0; s < (int)countof(specs); s++) {
		Kernel *k;
		Stmt *tl;
		const char *cu;

		if (s > 0) {
			teardown((void **)&t);
			if (setup((void **)&t) < 0)
				fail_msg("setup");
			*state = t;
		}
		if (!(k = kernel_of(t, specs[s].spec)))
			fail_msg("%s", t->msg);
		assert_true(k->mm.ksum == KSUM_SK_SCATTER && k->mm.ksize.sk_parts == specs[s].parts && k->tile_cols == 128);
		assert_true(k->mm.cluster[0] == specs[s].cm && k->mm.cluster[1] == specs[s].cn);
		tl = consumer_tiles(k);
		for (r = 0; r < (int)countof(runs); r++) {
			int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, kt = (K + 63) / 64, b;
			int64_t ctiles = (M + 128 * specs[s].cm - 1) / (128 * specs[s].cm) *
			                 ((N + 128 * specs[s].cn - 1) / (128 * specs[s].cn));
			int64_t *cover, *first, *seq;
			Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
			           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

			if (runs[r].spec != s)
				continue;
			cover = calloc((size_t)(2 * ctiles * kt), sizeof *cover);
			first = calloc((size_t)(2 * ctiles), sizeof *first), seq = calloc(64, sizeof *seq);
			for (b = 0; b < 2 * ctiles; b++)
				first[b] = -1;
			for (b = 0; b < runs[r].grid; b++) {
				int64_t it, counter = 0, rank = b % 2;

				plan_env(k, &env, M, N, K, b, runs[r].grid, runs[r].off);
				assert_true(env.v[k->niter_var] <= 16);
				for (it = 0; it < env.v[k->niter_var]; it++) {
					int64_t tile, kb, kn, ski, skn, ct, j;

					tile_env(k, tl, &env, it);
					tile = var_named(k, &env, "tile"), kb = var_named(k, &env, "kb");
					kn = var_named(k, &env, "kn");
					ski = var_named(k, &env, "sk_i"), skn = var_named(k, &env, "sk_n");
					if (tile < 0 || tile >= ctiles || kn < 1 || kb < 0 || kb + kn > kt || ski >= skn)
						fail_msg("run %d cta %lld tile %lld: k-steps [%lld, %lld) of %lld, part %lld of %lld", r,
						         (long long)b, (long long)tile, (long long)kb, (long long)(kb + kn),
						         (long long)kt, (long long)ski, (long long)skn);
					/* the cluster's two CTAs: the same cluster tile and k-steps */
					if (rank == 0)
						seq[4 * it] = tile, seq[4 * it + 1] = kb, seq[4 * it + 2] = kn, seq[4 * it + 3] = ski;
					else if (seq[4 * it] != tile || seq[4 * it + 1] != kb || seq[4 * it + 2] != kn ||
					         seq[4 * it + 3] != ski)
						fail_msg("run %d cta %lld: not its cluster's part", r, (long long)b);
					assert_int_equal(var_named(k, &env, "kbase"), counter);
					counter += kn;
					ct = 2 * tile + rank;   /* the CTA tile at this rank */
					for (j = kb; j < kb + kn; j++)
						cover[ct * kt + j]++;
					if (skn > 1) {   /* part ski of a split tile: on its first part's CTA + 2 ski */
						assert_true(kn >= 4 && skn == runs[r].parts);
						if (first[ct] < 0)
							first[ct] = b - 2 * ski;
						assert_int_equal(b - 2 * ski, first[ct]);
						assert_int_equal(first[ct] % 2, rank);
						tests++;
					}
				}
			}
			for (i = 0; i < 2 * ctiles * kt; i++)
				if (cover[i] != 1)
					fail_msg("run %d: CTA tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
					         (long long)(i % kt), (long long)cover[i]);
			if (runs[r].parts == 1)
				for (i = 0; i < 2 * ctiles; i++)
					assert_int_equal(first[i], -1);
			free(cover), free(first), free(seq);
		}
		cu = cuda_of(t);
		assert_non_null(strstr(cu, "wsf_sk_arrive(wsf_sk_flag(sk_work, blockIdx.x - me * 2));"));
		assert_non_null(strstr(cu, "const long long first = (long long)blockIdx.x - me * 2;"));
		assert_non_null(strstr(cu, "wsf_sk_flag(sk_work, first + 2), (unsigned)wsf_min(parts, 4LL));"));
		assert_non_null(strstr(cu, "wsf_sk_slot(sk_work, 1024, 65536, first + h * 2)"));
		assert_non_null(strstr(cu, specs[s].shared));   /* the operand the two share */
		{   /* the printed IR says where the parts are, as the CUDA does */
			Buf pb;

			buf_init(&pb, t->c.arena);
			kernel_print(&pb, k);
			assert_non_null(strstr(buf_str(&pb), "flag[cta - sk_i * 2] += 1 (release)"));
			assert_non_null(strstr(buf_str(&pb), "from sk_work[cta - sk_i * 2 .., a cluster apart], once "
			                                     "flag[cta - sk_i * 2] == sk_n"));
		}
	}
	assert_true(tests > 0);
}

/*
 * stream_k: the plan's lets run as each CTA of a grid would, over shapes
 * and grids with and without a partial last wave: every k-step of every
 * tile is computed by exactly one part; a tile split into parts has one
 * owner (the part with its first k-step), whose sk_help counts the CTAs
 * after it holding the rest, each of them one part from inside a tile (its
 * one slot); the stage counter runs on (kbase: the k-steps before); and no
 * CTA runs more than the whole waves' k-steps and one run (shorter than a
 * tile); and tiles are split only when the last wave holds at most 5 / 8
 * of the CTAs.  Then the lowered structure, that it is taken only when
 * asked, and the refusals.
 */
static void
stream_k(void **state)
{
	Fixture *t = *state;
	static const struct {
		int64_t m, n, k, grid;
		bool split;   /* some tile is split into parts */
		bool off;     /* launched without a workspace: sk_on 0 */
	} runs[] = {
		{8192, 8192, 8192, 132, true, false},      /* 2048 tiles: 15 waves and 68 */
		{4096, 4096, 4096, 132, false, false},     /* 512: 3 and 116, more than 5 / 8 of the CTAs: whole */
		{8192, 14336, 4096, 132, true, false},     /* 3584: 27 and 20, runs of 16 k-steps (a quarter) over 80 CTAs */
		{16384, 1024, 8192, 132, false, false},    /* 512 */
		{8448, 8192, 8192, 132, false, false},     /* 2112: 16 whole waves */
		{8192, 8192, 8192, 100, true, false},      /* 48 left */
		{1000, 3000, 640, 13, true, false},        /* edges: 8 x 12 tiles, 5 left, 10 k-steps */
		{300, 5000, 4160, 7, true, false},         /* 60 tiles: 4 left, 65 k-steps */
		{128, 256, 64, 1, false, false},           /* one tile */
		{4096, 4096, 128, 100, false, false},      /* 2 k-steps: runs of 4 would be whole tiles */
		{4096, 4096, 1024, 100, true, false},      /* 12 left, runs of 4 over 48 CTAs */
		{640, 768, 8192, 6, true, false},          /* 15 tiles: 3 left */
		{8192, 8192, 8192, 132, false, true},      /* no workspace: all whole */
		{1024, 1024, 65536, 32, false, true},      /* 32 tiles on 32 CTAs (launch.c's grid without one) */
		{1024, 1024, 65536, 132, true, false},     /* on 132: all split */
	};
	static const Refusal refused[] = {
		{"{stream_k: true, consumers: pingpong}", "stream_k with ping-pong consumers is not implemented yet", true},
		{"{stream_k: true, cluster: [2, 1]}", "stream_k in clusters that share an operand is not implemented yet",
		 true},
		{"{stream_k: true, split_k: 2}", "stream_k with split_k is not implemented yet", true},
		{"{stream_k: true, signal: per_tile}", "stream_k with 'signal: per_tile' is not implemented yet", true},
		{"{stream_k: true, persistent: false}", "stream_k with one CTA a tile (persistent: false) is not "
		 "implemented yet", true},
		{"{stream_k: 2}", "expected true or false for 'stream_k'", false},
		{"{stream_k: true, swap_ab: true}", "stream_k on a swapped matmul (swap_ab) is not implemented yet", true},
	};
	const char *cut = strstr(gemm_bias_gelu, "schedule:");
	const char *spec = arena_printf(t->c.arena, "%.*sschedule: {stream_k: true}\n", (int)(cut - gemm_bias_gelu),
	                                gemm_bias_gelu);
	Kernel *k = kernel_of(t, spec);
	Stmt *roles, *tl, *kl;
	const char *cu;
	int r, i;

	if (!k)
		fail_msg("%s", t->msg);
	assert_int_equal(k->mm.ksize.sk_slot, 256 * 128 * 4);   /* 128 accumulator registers a consumer thread */
	assert_int_equal(k->param[k->nparam - 5].kind, PK_WORKSPACE);
	assert_int_equal(k->param[k->nparam - 4].size, SZ_SK_ON);   /* 0: no workspace, every tile whole */
	roles = find_kind(k->body, ST_ROLES, 0);
	tl = find_kind(roles->body[1], ST_LOOP, 1);
	kl = find_kind(tl, ST_LOOP, 0);
	assert_string_equal(expr(t, kl->u.loop.hi), "kn");
	assert_string_equal(expr(t, kl->u.loop.lin), "(kbase + kk)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_STORE, 0)->u.sk.cond), "(0 < kb)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_REDUCE, 0)->u.sk.cond), "(kb == 0)");
	assert_string_equal(expr(t, find_kind(tl, ST_SK_REDUCE, 0)->u.sk.parts), "sk_help");
	assert_string_equal(expr(t, find_kind(tl, ST_IF, 0)->u.branch.cond), "(kb == 0)");   /* the owner's epilogue */
	/* the producer loads a part's k-steps from kb on, its stages from kbase on */
	{
		Stmt *w[4];
		int n = stmts_of(roles->body[0], ST_TMA_LOAD, w, 4);

		assert_int_equal(n, 2);
		for (i = 0; i < n; i++) {
			assert_string_equal(expr(t, w[i]->u.tma.col), "((kb + kk) * 64)");
			assert_string_equal(expr(t, w[i]->u.tma.slot), "((kbase + kk) % 4)");
		}
	}

	for (r = 0; r < (int)countof(runs); r++) {
		int64_t M = runs[r].m, N = runs[r].n, K = runs[r].k, tiles, kt, grid, b, len = 0, ctas = 0, most = 0;
		int64_t *cover, *owner, *help, *helpers, *first, *last;
		Env env = {arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.v),
		           arena_alloc(t->c.arena, (size_t)k->nvar * sizeof *env.set), 0, 0, 0};

		tiles = (M + 127) / 128 * ((N + 255) / 256);
		kt = (K + 63) / 64;
		grid = runs[r].grid;   /* every CTA, however few the tiles (launch.c persistent_grid) */
		cover = calloc((size_t)(tiles * kt), sizeof *cover);
		owner = calloc((size_t)tiles, sizeof *owner);
		help = calloc((size_t)tiles, sizeof *help);
		helpers = calloc((size_t)tiles, sizeof *helpers);
		first = calloc((size_t)tiles, sizeof *first);
		last = calloc((size_t)tiles, sizeof *last);
		for (i = 0; i < tiles; i++)
			owner[i] = first[i] = -1;
		for (b = 0; b < grid; b++) {
			int64_t my, it, counter = 0, from_inside = 0;

			plan_env(k, &env, M, N, K, b, grid, runs[r].off);
			assert_int_equal(var_named(k, &env, "tiles"), tiles);
			assert_int_equal(var_named(k, &env, "ktiles"), kt);
			len = var_named(k, &env, "sk_len");
			ctas = var_named(k, &env, "sk_ctas");
			my = env.v[k->niter_var];
			for (it = 0; it < my; it++) {
				int64_t tile, kb, kn, kbase, j;

				tile_env(k, tl, &env, it);
				tile = var_named(k, &env, "tile");
				kb = var_named(k, &env, "kb");
				kn = var_named(k, &env, "kn");
				kbase = var_named(k, &env, "kbase");
				if (tile < 0 || tile >= tiles || kn < 1 || kb < 0 || kb + kn > kt)
					fail_msg("run %d cta %lld part %lld: tile %lld, k-steps [%lld, %lld) of %lld", r, (long long)b,
					         (long long)it, (long long)tile, (long long)kb, (long long)(kb + kn), (long long)kt);
				assert_int_equal(kbase, counter);   /* the stage counter runs on */
				counter += kn;
				for (j = kb; j < kb + kn; j++)
					cover[tile * kt + j]++;
				if (kb == 0) {
					assert_int_equal(owner[tile], -1);
					owner[tile] = b;
					help[tile] = var_named(k, &env, "sk_help");
				} else {
					assert_int_equal(from_inside++, 0);   /* one slot a CTA */
					helpers[tile]++;
					first[tile] = first[tile] < 0 ? b : first[tile];
					last[tile] = b;
				}
			}
			most = counter > most ? counter : most;
		}
		for (i = 0; i < tiles * kt; i++)
			if (cover[i] != 1)
				fail_msg("run %d: tile %lld k-step %lld computed %lld times", r, (long long)(i / kt),
				         (long long)(i % kt), (long long)cover[i]);
		/* the CTAs holding a tile's other parts are the sk_help right after its owner */
		for (i = 0; i < tiles; i++) {
			assert_true(owner[i] >= 0);
			assert_int_equal(help[i], helpers[i]);
			if (helpers[i])
				assert_true(first[i] == owner[i] + 1 && last[i] == owner[i] + help[i]);
		}
		if ((ctas > 0) != runs[r].split)
			fail_msg("run %d: %lld tiles on %lld CTAs, %s split", r, (long long)tiles, (long long)grid,
			         ctas > 0 ? "some" : "none");
		if (ctas > 0) {
			assert_true(len < kt);
			assert_true(most <= tiles / grid * kt + len);
		} else {
			assert_true(most <= (tiles + grid - 1) / grid * kt);
		}
		free(cover), free(owner), free(help), free(helpers), free(first), free(last);
	}

	/* CUDA: the slot written 16 bytes a thread, the flag released and taken */
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "unsigned char *const sk_work,"));
	assert_non_null(strstr(cu, "wsf_sk_post(wsf_sk_flag(sk_work, blockIdx.x));"));
	assert_non_null(strstr(cu, "wsf_sk_take(wsf_sk_flag(sk_work, cta));"));
	assert_non_null(strstr(cu, "(const float4 *)wsf_sk_slot(sk_work, 1024, 131072, cta) + threadIdx.x;"));
	assert_non_null(strstr(cu, "for (long long kk = 0LL; kk < kn; kk++)"));
	teardown(state);

	/* only when asked; stream_k: false is the default kernel */
	{
		static const char *const scheds[] = {"", "schedule: {stream_k: true}\n", "schedule: {stream_k: false}\n"};
		static const int want[] = {0, 1, 0};

		for (i = 0; i < (int)countof(scheds); i++) {
			char text[1024];

			snprintf(text, sizeof text, "%.*s%s", (int)(cut - gemm_bias_gelu), gemm_bias_gelu, scheds[i]);
			setup(state);
			t = *state;
			if (!(k = kernel_of(t, text)))
				fail_msg("%s: %s", scheds[i], t->msg);
			assert_int_equal(k->mm.ksize.sk_slot > 0, want[i]);
			assert_int_equal(census(k->body).kind[ST_SK_STORE], want[i]);
			if (!want[i]) {
				tl = find_kind(find_kind(k->body, ST_ROLES, 0)->body[1], ST_LOOP, 1);
				assert_string_equal(expr(t, find_kind(tl, ST_LOOP, 0)->u.loop.hi), "ktiles");
			}
			teardown(state);
		}
		setup(state);
		t = *state;
	}
	refused_schedules(HEAD "inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
	                  "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {}\n",
	                  refused, countof(refused));
}

/*
 * split_k in clusters that share operands: [2, 2] x split 2 is a cluster
 * of 8 CTAs, rank = split rank x 4 + place.  The place (rank % 4) picks the
 * CTA's tile in the cluster tile and its part of each shared box; the
 * multicast masks are the place's row or column shifted to the CTAs of its
 * split rank (rank / 4), whose k-steps start at k0 = (rank / 4) x kper; the
 * empty barrier counts one warpgroup of each of the 4 CTAs it shares a
 * stage with, and the reduction's peers are rank 4 r + place.
 */
static void
split_in_clusters(void **state)
{
	static const char spec[] = GEMM_SIZES(128, 1280, 8192) GEMM_PLAIN
		"schedule: {consumers: pingpong, tile: [64, 64, 64], split_k: 2, cluster: [2, 2]}\n";
	Fixture *t;
	Kernel *k;
	Stmt *roles, *ld[4], *k0[2];
	const char *cu;
	int b, n;

	k = lowered(&t, 0, spec);
	assert_int_equal(k->mm.ksize.splits, 2);
	assert_int_equal(k->mm.cluster[0] * k->mm.cluster[1], 4);
	assert_int_equal(kernel_cluster_ctas(k), 8);
	assert_true(k->mm.ksum == KSUM_SPLIT_SCATTER && k->mm.pingpong);
	roles = find_kind(k->body, ST_ROLES, 0);
	n = stmts_of(roles->body[0], ST_TMA_LOAD, ld, 4);
	assert_int_equal(n, 2);
	assert_string_equal(expr(t, ld[0]->u.tma.mcast), "((5 << ((rank % 4) % 2)) << ((rank / 4) * 4))");   /* A: a row */
	assert_string_equal(expr(t, ld[1]->u.tma.mcast), "((3 << (((rank % 4) / 2) * 2)) << ((rank / 4) * 4))");   /* B */
	assert_int_equal(lets_named(k, k->body, "k0", k0, 2), 1);
	assert_string_equal(expr(t, k0[0]->u.let.value), "((rank / 4) * kper)");
	for (b = 1; b < k->nbar && strcmp(k->bar[b].name, "empty") != 0; b++)
		;
	assert_true(b < k->nbar && k->bar[b].cluster);
	assert_int_equal(k->bar[b].arrivals, 4);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "__cluster_dims__(8, 1, 1)"));
	assert_int_equal(count(cu, "threadIdx.x % 128 + 4 * (wsf_cluster_rank() / 4), 4 * (wsf_cluster_rank() / 4 + 1));"),
	                 3);   /* the first stages' arrivals, a k-step's release and a tile's last */
	assert_non_null(strstr(cu, "const int me = (int)wsf_cluster_rank() / 4, at = (int)wsf_cluster_rank() % 4;"));
	assert_non_null(strstr(cu, "wsf_map_rank(mine, 4 * r + at)"));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&split_"), 2);
	assert_int_equal(count(cu, "[w], 4 * r + at);"), 2);
	assert_non_null(strstr(cu, "if (((e % 2LL) == ((long long)wsf_cluster_rank() / 4LL)))"));
	teardown((void **)&t);
	(void)state;
}

/*
 * split_k: a decode step's 16 x 4096 x 4096 is 64 swapped tiles for 132 SMs,
 * so by default clusters of 2 CTAs share each tile's K.  The lets give each
 * CTA its k-steps (k0 on, ktiles of them) and both roles use them; in the
 * consumers' tile loop the reduction comes after the k loop's one wait for
 * the mma (none inside it, none after) and before rank 0's epilogue, which
 * no other rank runs; its partial buffer holds each warpgroup's fragment
 * (8 registers of 128 threads); its barriers count the other ranks' 128
 * arrivals and rank 0's.  The kernel launches clusters of 2.  Then the
 * defaults (4 for 16 tiles; none for 128; unswapped for at most half a
 * wave of 64 x 128 tiles, on ping-pong's 64-row tiles 64 or 128 wide,
 * its ranks sharing the epilogue: split_scatter), the ping-pong release a
 * CTA without k-steps skips, and the forms refused.
 */
static void
split_k(void **state)
{
	static const char spec[] =
		"fusion: g\nsizes: {M: 16, N: 4096, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
		"  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: relu, in: [y]}\n"
		"outputs:\n  o: {dtype: bf16}\n";
	static const struct {
		const char *sizes;
		int splits, cols;   /* cols: an unswapped tile's (64 rows where split, else 128 x 64) */
	} defaults[] = {
		{"{M: 16, N: 1024, K: 4096}", 4, 0},     /* 16 tiles: 4 (8 would not fit at once) */
		{"{M: 32, N: 2048, K: 8192}", 3, 0},     /* 32 tiles: 30 clusters of 4 are resident, 39 of 3 */
		{"{M: 16, N: 2560, K: 8192}", 2, 0},     /* 40 tiles: 66 clusters of 2 */
		{"{M: 24, N: 1920, K: 8192}", 4, 0},     /* 30 tiles: clusters of 4 all resident */
		{"{M: 16, N: 8192, K: 4096}", 1, 0},     /* 128 tiles: a wave already */
		{"{M: 1, N: 4096, K: 256}", 1, 0},       /* 4 k-steps: too few to share */
		{"{M: 256, N: 1024, K: 4096}", 2, 64},   /* unswapped, 64 tiles of 64 x 64 (at K = 8192 stream-K) */
		{"{M: 200, N: 1000, K: 4096}", 2, 64},   /* ragged: 4 x 16 tiles */
		{"{M: 128, N: 512, K: 8192}", 4, 64},    /* 16 tiles: clusters of 4, two subtiles for four ranks */
		{"{M: 256, N: 512, K: 8192}", 3, 64},    /* 32 tiles: 4 would not fit at once */
		{"{M: 128, N: 4096, K: 2048}", 2, 128},  /* 128 tiles of 64 x 64 would not, 64 of 64 x 128 do */
		{"{M: 384, N: 768, K: 8192}", 3, 128},   /* 72 of 64 x 64 would not fit split, 36 of 64 x 128 by 3 do */
		{"{M: 256, N: 4096, K: 4096}", 1, 64},   /* 128 tiles of 64 x 128: 128 x 64 as ever */
		{"{M: 256, N: 1024, K: 1024}", 1, 64},   /* 8 k-steps a CTA: too few */
		{"{M: 256, N: 1024, K: 2048}", 2, 64},   /* 16 */
	};
	static const Refusal refused[] = {
		{"{split_k: 2, signal: per_tile}", "split_k with 'signal: per_tile' is not implemented yet", true},
		{"{split_k: 3, swap_ab: false, cluster: [2, 2]}", "split_k 3 in clusters of 2 x 2 CTAs makes clusters of 12 "
		 "CTAs, which is not implemented yet: at most 8 (the portable cluster size); split by at most 2 or share "
		 "among fewer CTAs", true},
		{"{split_k: 9}", "expected an integer from 1 to 8 for 'split_k', saw '9'", false},
		{"{split_k: 0}", "expected an integer from 1 to 8 for 'split_k'", false},
	};
	Fixture *t;
	Kernel *k;
	Stmt *roles, *loop, *red, *lead, *kloop, *w[4];
	const char *cu;
	int i, at, b, n, parts = 0;

	if (setup((void **)&t) < 0)
		fail_msg("setup");
	if (!(k = kernel_of(t, spec)))
		fail_msg("%s", t->msg);
	assert_true(k->mm.swap_ab && k->mm.pingpong);
	assert_int_equal(k->mm.ksize.splits, 2);
	assert_int_equal(kernel_cluster_ctas(k), 2);
	assert_int_equal(census(k->body).kind[ST_SPLIT_REDUCE], 1);
	roles = find_kind(k->body, ST_ROLES, 0);
	assert_non_null(roles);
	/* the producer loads from k0 on, ktiles of them */
	n = stmts_of(roles->body[0], ST_TMA_LOAD, w, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_string_equal(expr(t, w[i]->u.tma.col), "((k0 + kk) * 64)");
	/* the consumers' tile loop: k loop, its wait, the reduction, then rank 0's epilogue */
	assert_non_null(loop = consumer_tiles(k));
	for (at = 0; at < loop->nbody && loop->body[at]->kind != ST_LOOP; at++)
		;
	kloop = loop->body[at];
	assert_string_equal(expr(t, kloop->u.loop.hi), "ktiles");
	assert_int_equal(census(kloop).kind[ST_MMA_WAIT], 1);   /* wait_group 1 for the stage released */
	red = find_kind(loop, ST_SPLIT_REDUCE, 0);
	assert_non_null(red);
	for (i = at + 1; loop->body[i] != red; i++)
		assert_false(loop->body[i]->kind == ST_MMA_WAIT && loop->body[i]->u.group.pending != 0);
	assert_non_null(find_kind(loop, ST_MMA_WAIT, 0));
	assert_int_equal(find_kind(loop, ST_MMA_WAIT, 0)->u.group.pending, 0);
	assert_null(find_kind(loop, ST_MMA_WAIT, 1));
	lead = loop->body[loop->nbody - 1];
	assert_true(lead->kind == ST_IF && lead->body[0]->kind == ST_LOOP);
	assert_string_equal(expr(t, lead->u.branch.cond), "(rank == 0)");
	assert_int_equal(census(lead).kind[ST_COMPUTE], 1);
	assert_int_equal(census(lead).kind[ST_MMA_WAIT], 0);
	assert_string_equal(expr(t, red->u.split.parity), "((i / 2) & 1)");
	assert_string_equal(expr(t, red->u.split.ranks), "kparts");
	assert_int_equal(k->buf[red->u.split.buf].kind, BUF_PARTIAL);
	assert_int_equal(k->buf[red->u.split.buf].rows, 2);
	assert_int_equal(k->buf[red->u.split.buf].cols, 128 * 8);
	assert_string_equal(k->bar[red->u.split.bar].name, "split_full");
	assert_int_equal(k->bar[red->u.split.bar].arrivals, 128);
	assert_string_equal(k->bar[red->u.split.bar + 1].name, "split_free");
	assert_int_equal(k->bar[red->u.split.bar + 1].arrivals, 128);
	/* the ping-pong release of the last k-step, only where there was one */
	for (i = 0; i < loop->nbody; i++)
		if (loop->body[i]->kind == ST_IF && loop->body[i]->nbody == 1 && loop->body[i]->body[0]->kind == ST_MBAR_ARRIVE)
			assert_string_equal(expr(t, loop->body[i]->u.branch.cond), "(0 < ktiles)");
	for (b = 1; b < k->nbuf; b++)
		parts += k->buf[b].kind == BUF_PARTIAL;
	assert_int_equal(parts, 1);
	cu = cuda_of(t);
	assert_non_null(strstr(cu, "__cluster_dims__(2, 1, 1)"));
	assert_non_null(strstr(cu, "wsf_mbar_wait_cluster(&split_full[w], parity);"));
	assert_int_equal(count(cu, "wsf_mbar_arrive_remote(&"), 2);
	assert_non_null(strstr(cu, "const float4 v = theirs[128 * q];"));
	teardown((void **)&t);

	for (i = 0; i < (int)countof(defaults); i++) {
		char text[1024];
		const char *at_sizes = strstr(spec, "{M: 16"), *end = strchr(at_sizes, '}');

		snprintf(text, sizeof text, "%.*s%s%s", (int)(at_sizes - spec), spec, defaults[i].sizes, end + 1);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, text)))
			fail_msg("%s: %s", defaults[i].sizes, t->msg);
		if (k->mm.ksize.splits != defaults[i].splits)
			fail_msg("%s: split %d, expected %d", defaults[i].sizes, k->mm.ksize.splits, defaults[i].splits);
		assert_int_equal(census(k->body).kind[ST_SPLIT_REDUCE], k->mm.ksize.splits > 1);
		if (!k->mm.swap_ab) {
			assert_int_equal(k->tile_rows, k->mm.ksize.splits > 1 ? 64 : 128);
			assert_int_equal(k->mm.pingpong, k->mm.ksize.splits > 1);
			assert_int_equal(k->tile_cols, defaults[i].cols);
		}
		assert_int_equal(k->mm.ksum == KSUM_SPLIT_SCATTER, k->mm.ksize.splits > 1 && !k->mm.swap_ab);
		if (k->mm.ksum == KSUM_SPLIT_SCATTER)
			split_scatter(t, k);
		teardown((void **)&t);
	}
	/* asked for stream-K (cooperative only), a GEMM of few tiles keeps its 128 x 64 tile, unsplit */
	{
		char text[1024];
		const char *at_sizes = strstr(spec, "{M: 16"), *end = strchr(at_sizes, '}');

		snprintf(text, sizeof text, "%.*s{M: 256, N: 1024, K: 8192}%sschedule: {stream_k: true}\n",
		         (int)(at_sizes - spec), spec, end + 1);
		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (!(k = kernel_of(t, text)))
			fail_msg("stream_k: %s", t->msg);
		assert_int_equal(k->mm.ksize.splits, 1);
		assert_false(k->mm.pingpong);
		assert_int_equal(k->tile_rows, 128);
		teardown((void **)&t);
	}
	refused_schedules(spec, refused, countof(refused));
	(void)state;
}

/*
 * long_k_stream: without a hint, stream-K for 8 to 33 tiles (of 128 x 128,
 * else 128 x 256), in runs of 1 / parts of a tile with tiles x parts about
 * the SMs (132 / tiles, 4 to 16), runs of 32 k-steps or more at 128 x 128
 * in quarters, twice at 128 x 256 and twice that in more parts or on one
 * row of tiles, 80 runs or more; else, where 128 x 128 tiles fill at most
 * 4 / 5 of the SMs on more than one row, halves or thirds of tiles 128
 * wide, else 160 to 256 (64-wide chunks of an N-major B), in 120 runs or
 * more of 64 k-steps or more; else quarters or halves of 128 x 64 tiles,
 * 80 to 132 runs of 32 k-steps or more, on one to four rows of tiles or
 * an output taller than wide, whose tiles then go along rows (raster_rows),
 * else halves of 128 x 96 (of a K-major B) in runs of 64 on two to four rows;
 * not on more tiles, fewer, a shorter K,
 * fewer runs, rows that do not start 128-byte aligned (a cluster instead),
 * a swapped GEMM, one CTA a tile, or a hint that bears on it (stages too).
 * Halves of 128 x 192 give way to thirds of 128 x 256 where those fill the
 * SMs; parts of 128 k-steps or more of 128 x 128 tiles (64 in more than
 * quarters) run in clusters of two tile rows, else (128 or more) of two
 * tile columns, where those pair up.
 */
static void
long_k_default(void **state)
{
#define WGRAD "inputs:\n  x: {dtype: bf16, shape: [K, M]}\n  w: {dtype: bf16, shape: [K, N]}\n" \
	      "ops:\n  - {out: y, op: matmul, in: [x, w], transpose_a: true}\noutputs:\n  y: {dtype: bf16}\n"
	static const struct {
		const char *spec;
		int parts, bn;   /* parts 0: no stream-K */
	} cases[] = {
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN, 4, 256},      /* 32 tiles: 128 CTAs */
		{GEMM_SIZES(1024, 1024, 16384) GEMM_PLAIN, 4, 256},
		{GEMM_SIZES(512, 1024, 65536) GEMM_PLAIN, 4, 128},       /* 32 of 128 x 128 */
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, 8, 128},        /* 16: eighths */
		{GEMM_SIZES(256, 512, 65536) GEMM_PLAIN, 16, 128},       /* 8: sixteenths */
		{GEMM_SIZES(128, 1280, 32768) GEMM_PLAIN, 8, 128},       /* 10: eighths (runs of 64 k-steps), 80 runs */
		{GEMM_SIZES(256, 512, 32768) GEMM_PLAIN, 0, 0},          /* eighths, 64 runs */
		{GEMM_SIZES(512, 512, 16384) GEMM_PLAIN, 4, 64},         /* quarters of 128 x 128: 64 runs; of 128 x 64 */
		{GEMM_SIZES(1000, 1000, 20480) GEMM_PLAIN, 4, 256},      /* 8 x 4 ragged tiles */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_NMAJOR, 4, 256},
		{GEMM_SIZES(1024, 1024, 65536) WGRAD, 4, 256},      /* A M-major, B N-major: a weight gradient */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_IN "  b: {dtype: bf16, shape: [N]}\nops:\n" GEMM_MM
		 "  - {out: z, op: add, in: [y, b]}\noutputs:\n  z: {dtype: bf16}\n", 4, 256},
		{GEMM_SIZES(512, 1024, 8192) GEMM_PLAIN, 4, 128},        /* quarters of 32 k-steps */
		{GEMM_SIZES(512, 768, 8192) GEMM_PLAIN, 4, 128},         /* 24 tiles, quarters: 96 runs */
		{GEMM_SIZES(128, 4096, 16384) GEMM_PLAIN, 4, 128},       /* one row of tiles: quarters of 64 */
		{GEMM_SIZES(128, 4096, 8192) GEMM_PLAIN, 2, 64},         /* not of 32: halves of 128 x 64, 128 runs */
		{GEMM_SIZES(512, 1024, 4096) GEMM_PLAIN, 2, 64},         /* runs of 16; 128 x 64 halves of 32 */
		{GEMM_SIZES(128, 1280, 8192) GEMM_PLAIN, 6, 64},         /* one row of 20 tiles of 128 x 64: sixths, 120 runs */
		{GEMM_SIZES(128, 1280, 16384) GEMM_PLAIN, 6, 64},
		{GEMM_SIZES(128, 1536, 8192) GEMM_PLAIN, 4, 64},         /* 24 tiles: 5 parts not, quarters */
		{GEMM_SIZES(256, 1024, 8192) GEMM_NMAJOR, 4, 64},        /* 64-wide chunks: 64 */
		{GEMM_SIZES(200, 1000, 8192) GEMM_PLAIN, 4, 64},         /* ragged, 2 x 16 tiles */
		{GEMM_SIZES(128, 4096, 4096) GEMM_PLAIN, 2, 64},         /* 64 tiles: halves */
		{GEMM_SIZES(128, 1280, 4096) GEMM_PLAIN, 0, 0},          /* runs of 16, or 40 */
		{GEMM_SIZES(128, 1024, 8192) GEMM_PLAIN, 8, 64},         /* 16 tiles: eighths of 16 k-steps, not 64 runs */
		{GEMM_SIZES(128, 768, 8192) GEMM_PLAIN, 0, 0},           /* 12 tiles: 11 parts of 11 */
		{GEMM_SIZES(384, 768, 8192) GEMM_PLAIN, 0, 0},           /* 36 tiles: 144 runs, or 72 */
		{GEMM_SIZES(96, 1280, 8192) GEMM_PLAIN, 0, 0},           /* one ragged row of tiles */
		{GEMM_SIZES(128, 2048, 2048) GEMM_PLAIN, 0, 0},          /* 32 k-steps */
		{GEMM_SIZES(512, 768, 4096) GEMM_PLAIN, 2, 64},          /* 4 rows of tiles: 48 tiles, halves */
		{GEMM_SIZES(640, 384, 8192) GEMM_PLAIN, 4, 64},          /* 5 rows of tiles, taller than wide */
		{GEMM_SIZES(1024, 256, 8192) GEMM_PLAIN, 4, 64},         /* 8 */
		{GEMM_SIZES(1024, 512, 4096) GEMM_PLAIN, 2, 64},
		{GEMM_SIZES(640, 704, 4096) GEMM_PLAIN, 0, 0},           /* 5 rows of 11 tiles, not taller than wide */
		{GEMM_SIZES(1024, 1024, 8192) GEMM_PLAIN, 2, 128},       /* not 128 x 256 in runs of 32: halves, 128 runs */
		{GEMM_SIZES(1024, 1024, 12288) GEMM_PLAIN, 2, 128},      /* not of 48: halves of 96 */
		{GEMM_SIZES(1024, 1024, 16320) GEMM_PLAIN, 2, 128},
		{GEMM_SIZES(2048, 512, 8192) GEMM_PLAIN, 2, 128},        /* 64 tiles, tall */
		{GEMM_SIZES(1000, 1000, 8192) GEMM_PLAIN, 2, 128},       /* 8 x 8 ragged tiles */
		{GEMM_SIZES(512, 1280, 12288) GEMM_PLAIN, 3, 128},       /* 40 tiles: thirds of 64, 120 runs */
		{GEMM_SIZES(512, 1280, 8192) GEMM_PLAIN, 2, 96},         /* thirds of 42; 80 of 128 x 64: halves of 96 */
		{GEMM_SIZES(384, 2048, 8192) GEMM_PLAIN, 2, 96},         /* 66 tiles of 128 x 96, 132 runs */
		{GEMM_SIZES(256, 2560, 8192) GEMM_PLAIN, 2, 96},         /* 2 x 27 ragged */
		{GEMM_SIZES(512, 1280, 4096) GEMM_PLAIN, 0, 0},          /* runs of 32 */
		{GEMM_SIZES(128, 6144, 8192) GEMM_PLAIN, 0, 0},          /* one row of 96 tiles of 128 x 64: 3 / 4 of the SMs */
		{GEMM_SIZES(128, 4608, 8192) GEMM_PLAIN, 2, 96},         /* one row of 72: halves of 48 of 128 x 96 */
		{GEMM_SIZES(128, 5120, 16384) GEMM_PLAIN, 2, 96},        /* 80 */
		{GEMM_SIZES(512, 1280, 8192) GEMM_NMAJOR, 0, 0},         /* 96 is not whole 64-wide chunks */
		{GEMM_SIZES(512, 1792, 8192) GEMM_PLAIN, 0, 0},          /* 76 tiles: 152 runs */
		{GEMM_SIZES(640, 1280, 8192) GEMM_PLAIN, 0, 0},          /* 5 rows of tiles */
		{GEMM_SIZES(768, 1024, 8192) GEMM_PLAIN, 0, 0},          /* 48 tiles: 96 runs */
		{GEMM_SIZES(1024, 1024, 4096) GEMM_PLAIN, 0, 0},         /* halves of 32 */
		{GEMM_SIZES(128, 8192, 8192) GEMM_PLAIN, 0, 0},          /* one row of 64 tiles */
		{GEMM_SIZES(1536, 1024, 8192) GEMM_PLAIN "schedule: {stages: 5}\n", 0, 0},   /* 5 of 128 x 224 do not fit */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stages: 4}\n", 0, 0},
		/* taller than wide, up to 128 k-steps: choose_tile's one wave of narrowed tiles along the rows */
		{GEMM_SIZES(1152, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 117 of 128 x 80, not halves of 128 x 160 */
		{GEMM_SIZES(1280, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 130 of 128 x 80, not thirds of 128 x 256 */
		{GEMM_SIZES(1408, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 121 of 128 x 96 */
		{GEMM_SIZES(1280, 1024, 12288) GEMM_PLAIN, 3, 256},      /* 80: not halves of 60 of 128 x 192, thirds of 40 x 256 */
		{GEMM_SIZES(1280, 1024, 16384) GEMM_PLAIN, 3, 256},
		{GEMM_SIZES(1280, 1024, 8192) GEMM_NMAJOR, 3, 256},      /* 64-wide chunks (no narrowing) */
		{GEMM_SIZES(1408, 1024, 12288) GEMM_PLAIN, 3, 256},      /* 88: 132 runs of 64 */
		{GEMM_SIZES(1280, 1024, 4096) GEMM_PLAIN, 0, 0},         /* thirds of 21 */
		{GEMM_SIZES(1152, 1024, 8192) GEMM_NMAJOR, 0, 0},        /* 54 of 128 x 192: 108 runs */
		{GEMM_SIZES(1536, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 132 of 128 x 96 along rows */
		{GEMM_SIZES(1536, 1024, 16384) GEMM_PLAIN, 2, 224},      /* 96: of 60 */
		{GEMM_SIZES(1280, 1280, 8192) GEMM_PLAIN, 2, 224},       /* 100 */
		{GEMM_SIZES(2048, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 128 fill the SMs */
		{GEMM_SIZES(1792, 1024, 8192) GEMM_PLAIN, 0, 0},         /* 112 */
		{GEMM_SIZES(1024, 1280, 8192) GEMM_PLAIN, 2, 160},       /* 80 */
		{GEMM_SIZES(256, 256, 65536) GEMM_PLAIN, 0, 0},          /* 4 tiles */
		{GEMM_SIZES(2048, 1024, 32768) GEMM_PLAIN, 0, 0},        /* 64 tiles of 128 x 256 */
		{GEMM_SIZES(1024, 2048, 16384) GEMM_PLAIN, 0, 0},
		{GEMM_SIZES(1024, 1024, 16392) GEMM_PLAIN, 0, 0},        /* rows of 32784 bytes: a cluster */
		{GEMM_SIZES(16, 4096, 65536) GEMM_PLAIN, 0, 0},          /* swapped */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stream_k: false}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {tile: [128, 256, 64]}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {split_k: 1}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {persistent: false}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {cluster: [1, 1]}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {signal: per_tile}\n", 0, 0},
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN "schedule: {stream_k: true}\n", 4, 64},    /* the hint: the default tile */
	};
	static const struct {
		const char *spec;
		int cm, cn;   /* clusters of cm x cn CTAs */
	} pairs[] = {   /* runs of 128 k-steps or more of 128 x 128 tiles (or 64 in more than quarters) whose rows pair
	                   up, else of 128 or more whose columns pair up */
		{GEMM_SIZES(512, 1024, 65536) GEMM_PLAIN, 2, 1},    /* quarters of 256 */
		{GEMM_SIZES(512, 1024, 32768) GEMM_PLAIN, 2, 1},    /* of 128 */
		{GEMM_SIZES(512, 512, 65536) GEMM_PLAIN, 2, 1},     /* eighths of 128 */
		{GEMM_SIZES(256, 1024, 65536) GEMM_PLAIN, 2, 1},
		{GEMM_SIZES(1000, 512, 32768) GEMM_PLAIN, 2, 1},    /* 8 rows, the last ragged */
		{GEMM_SIZES(512, 1024, 65536) WGRAD, 2, 1},         /* A M-major, B N-major */
		{GEMM_SIZES(384, 1024, 65536) GEMM_PLAIN, 1, 2},    /* 3 rows of 8: columns */
		{GEMM_SIZES(128, 4096, 65536) GEMM_PLAIN, 1, 2},    /* one row */
		{GEMM_SIZES(384, 1000, 65536) GEMM_PLAIN, 1, 2},    /* 3 rows of 8, the last column ragged */
		{GEMM_SIZES(384, 896, 65536) GEMM_PLAIN, 1, 1},     /* 3 rows of 7 */
		{GEMM_SIZES(256, 512, 65536) GEMM_PLAIN, 2, 1},     /* sixteenths of 64: more than quarters */
		{GEMM_SIZES(256, 1024, 32768) GEMM_PLAIN, 2, 1},    /* eighths of 64 */
		{GEMM_SIZES(512, 1024, 16384) GEMM_PLAIN, 1, 1},    /* quarters of 64 */
		{GEMM_SIZES(128, 1280, 32768) GEMM_PLAIN, 1, 1},    /* one row, eighths of 64: not for A */
		{GEMM_SIZES(384, 512, 32768) GEMM_PLAIN, 1, 1},     /* 3 rows, 11 parts of 46 */
		{GEMM_SIZES(384, 512, 65536) GEMM_PLAIN, 1, 1},     /* 12 tiles: 11 parts of 93 */
		{GEMM_SIZES(1024, 1024, 65536) GEMM_PLAIN, 1, 1},   /* 128 x 256 */
	};
	static const struct {
		const char *spec;
		bool rows;   /* MatmulPlan.raster_rows */
	} order[] = {
		{GEMM_SIZES(1024, 256, 8192) GEMM_PLAIN, true},
		{GEMM_SIZES(512, 384, 8192) GEMM_PLAIN, true},       /* 4 rows of 6 tiles */
		{GEMM_SIZES(256, 768, 8192) GEMM_PLAIN, false},      /* wider than tall */
		{GEMM_SIZES(512, 512, 16384) GEMM_PLAIN, false},     /* square */
		{GEMM_SIZES(2048, 256, 8192) GEMM_PLAIN, false},     /* quarters of 128 x 128 */
		{GEMM_SIZES(1024, 256, 2048) GEMM_PLAIN, false},     /* no stream-K */
	};
	int i;

	for (i = 0; i < (int)countof(cases); i++) {
		Fixture *t;
		Kernel *k = lowered(&t, i, cases[i].spec);

		if (k->mm.ksize.sk_parts != cases[i].parts || (k->mm.ksize.sk_slot > 0) != (cases[i].parts > 0) ||
		    (cases[i].parts && (k->tile_rows != 128 || k->tile_cols != cases[i].bn || k->mm.ksize.splits != 1 ||
		                        k->mm.cluster[1] != 1 || k->mm.pingpong || k->mm.swap_ab)))
			fail_msg("case %d: parts %d, slot %d, tile %d x %d, splits %d, cluster %d x %d; expected parts %d at "
			         "128 x %d", i, k->mm.ksize.sk_parts, k->mm.ksize.sk_slot, k->tile_rows, k->tile_cols,
			         k->mm.ksize.splits, k->mm.cluster[0], k->mm.cluster[1], cases[i].parts, cases[i].bn);
		/* the rules cut whole fractions of a tile (fraction_plan); the hint, runs across tiles */
		assert_int_equal(k->mm.ksum == KSUM_SK_SCATTER, cases[i].parts > 0 && !strstr(cases[i].spec, "stream_k: true"));
		if (cases[i].parts) {   /* the plan cuts runs of 1 / parts of a tile */
			char want[64];
			Buf b;

			buf_init(&b, t->c.arena);
			kernel_print(&b, k);
			snprintf(want, sizeof want, k->mm.ksum == KSUM_SK_SCATTER ? "min(min(%d, " : "(ktiles / %d)", cases[i].parts);
			if (!strstr(buf_str(&b), want))
				fail_msg("case %d: no %s in\n%s", i, want, buf_str(&b));
		}
		teardown((void **)&t);
	}
	for (i = 0; i < (int)countof(pairs); i++) {
		Fixture *t;
		Kernel *k = lowered(&t, i, pairs[i].spec);

		if (k->mm.ksum != KSUM_SK_SCATTER || k->mm.cluster[0] != pairs[i].cm || k->mm.cluster[1] != pairs[i].cn)
			fail_msg("pair %d: cluster %d x %d, in fractions %d; expected %d x %d", i, k->mm.cluster[0],
			         k->mm.cluster[1], k->mm.ksum == KSUM_SK_SCATTER, pairs[i].cm, pairs[i].cn);
		teardown((void **)&t);
	}
	for (i = 0; i < (int)countof(order); i++) {   /* the narrow rule's tiles along rows where A is the larger */
		Fixture *t;
		Kernel *k = lowered(&t, i, order[i].spec);

		assert_int_equal(k->mm.raster_rows, order[i].rows);
		teardown((void **)&t);
	}
	(void)state;
#undef WGRAD
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_k),
		cmocka_unit_test(split_in_clusters),
		cmocka_unit_test_setup_teardown(stream_k, setup, teardown),
		cmocka_unit_test_setup_teardown(stream_k_fractions, setup, teardown),
		cmocka_unit_test_setup_teardown(stream_k_cluster_fractions, setup, teardown),
		cmocka_unit_test(long_k_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
