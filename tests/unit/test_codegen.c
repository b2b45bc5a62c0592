/*
 * test_codegen.c: what codegen/emit.c promises about the text it writes,
 * whatever the spec: any spec names make a kernel that compiles (names
 * are namespaced by construction: "Names" in emit.c), user text in
 * comments cannot inject code (the spec's path, the name given to
 * wsf_compile_string), and the CUDA grows linearly with the spec.  The
 * generated CUDA is compiled by NVRTC where NVRTC can be loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wsfuse.h"

#include "have_nvrtc.h"

/* Compiles SPEC called NAME to STOP, cache off; returns the kernel (the test fails on an error). */
static WsfKernel *
compile(const char *name, const char *spec, const char *stop)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	WsfStatus s;

	assert_non_null(ctx);
	assert_int_equal(wsf_set_option(ctx, "stop-after", stop), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);   /* NVRTC compiles each, every run */
	s = wsf_compile_string(ctx, name, spec, strlen(spec), &k);
	if (s != WSF_OK)
		fail_msg("%s: %s: %s", name, wsf_status_name(s), wsf_context_last_error(ctx));
	wsf_context_delete(ctx);
	return k;
}

/* Every line of CU that contains NEEDLE has it inside a // comment. */
static void
only_in_comments(const char *cu, const char *needle)
{
	const char *p;

	for (p = strstr(cu, needle); p; p = strstr(p + 1, needle)) {
		const char *bol = p, *slashes;

		while (bol > cu && bol[-1] != '\n')
			bol--;
		slashes = strstr(bol, "//");
		if (!slashes || slashes > p)
			fail_msg("'%s' outside a comment: %.*s", needle, (int)strcspn(bol, "\n"), bol);
	}
}

/*
 * The spec's name goes into comments (the header, a position on each line
 * from the spec).  A newline in it must not end the comment: the rest
 * would be code.  Nor may a backslash at its end splice the next line, or
 * a control byte or a byte that is not UTF-8 reach NVRTC.
 */
static void
names_in_comments_are_escaped(void **state)
{
	static const char spec[] =
		"fusion: esc\n"
		"sizes: {M: 64, N: 256}\n"
		"inputs:\n  x: {dtype: f32, shape: [M, N]}\n"
		"ops:\n  - {out: y, op: relu, in: [x]}\n"
		"outputs:\n  y: {}\n";
	static const char *const names[] = {
		"dir\nint injected = 1;\n.yaml",
		"a\\\nint injected = 2;\nb.yaml",
		"tail\\",
		"x*/int injected = 3;/*\r\t\x01\x7f\xff\xc3(?\?/.yaml",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		WsfKernel *k = compile(names[i], spec, have_nvrtc() ? "cubin" : "cuda");
		const char *cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);
		size_t n, j;

		assert_non_null(cu);
		only_in_comments(cu, "injected");
		/* no line of the generated source ends in a backslash; no control byte but newlines */
		cu = strstr(cu, "// ---- end wsfuse_device.cuh ----");
		assert_non_null(cu);
		for (j = 0, n = strlen(cu); j < n; j++) {
			assert_false(cu[j] == '\\' && cu[j + 1] == '\n');
			assert_true(cu[j] == '\n' || (unsigned char)cu[j] >= 0x20);
			assert_true(cu[j] != 0x7f);
		}
		assert_null(strstr(cu, "*/int"));
		if (have_nvrtc())
			assert_non_null(wsf_kernel_text(k, WSF_STAGE_CUBIN, NULL));
		wsf_kernel_delete(k);
	}
	/* ordinary names are left as they are */
	{
		WsfKernel *k = compile("examples/my spec-1.yaml", spec, "cuda");
		const char *cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);

		assert_non_null(strstr(cu, "from examples/my spec-1.yaml. Do not edit."));
		assert_non_null(strstr(cu, "// examples/my spec-1.yaml:6"));
		wsf_kernel_delete(k);
	}
	{
		WsfKernel *k = compile("d\xc3\xa9j\xc3\xa0\n.yaml", spec, "cuda");
		const char *cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);

		assert_non_null(strstr(cu, "from d\xc3\xa9j\xc3\xa0\\n.yaml. Do not edit."));   /* UTF-8 kept */
		wsf_kernel_delete(k);
	}
}

/*
 * Spec names that collide with generated names if those were made by
 * gluing: fusions named after keywords, builtins, helpers and the kernel
 * prefix; tensors named after every composite's temporaries (y.max is
 * y_max beside a tensor y_max, n.mean is n_mean...), an input NAME_out
 * beside an output NAME, helpers, locals and prefixes.  Each kernel form
 * (pointwise, persistent and warp-specialized with TMA stores, a row in
 * registers, in shared memory, streamed in chunks) compiles through NVRTC.
 */
static void
colliding_names_compile(void **state)
{
	static const char pointwise[] =
		"fusion: %s\nsizes: {M: 256, N: 512}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  y_out: {dtype: bf16, shape: [M, N]}\n"
		"  wsf: {dtype: bf16, shape: [N]}\n  in_y: {dtype: f32, shape: [M, 1]}\n  v: {dtype: f32, shape: []}\n"
		"ops:\n  - {out: y, op: add, in: [x, y_out]}\n  - {out: threadIdx, op: mul, in: [y, wsf]}\n"
		"  - {out: int, op: add, in: [threadIdx, in_y]}\n  - {out: v_x, op: mul, in: [int, v]}\n"
		"  - {out: e, op: gelu, in: [v_x], approximate: tanh}\n  - {out: wsf_smem, op: add, in: [e, x]}\n"
		"outputs:\n  y: {}\n  wsf_smem: {dtype: bf16}\n  v_x: {dtype: f32}\n%s";
	static const char row[] =
		"fusion: %s\nsizes: {M: 64, N: %d}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  y_max: {dtype: bf16, shape: [M, N]}\n"
		"  n_mean: {dtype: f32, shape: [M, 1]}\n  y_out: {dtype: bf16, shape: [M, N]}\n  wsf_red: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: softmax, in: [x]}\n  - {out: y_shifted, op: add, in: [y, y_max]}\n"
		"  - {out: y_exp, op: mul, in: [y_shifted, n_mean]}\n  - {out: n, op: layernorm, in: [y_exp, wsf_red, y_out]}\n"
		"  - {out: n_var_eps, op: mul, in: [n, y_exp]}\n  - {out: r, op: rmsnorm, in: [n_var_eps]}\n"
		"  - {out: r_rrms, op: sum, in: [r]}\n  - {out: acc_r, op: mean, in: [n]}\n"
		"  - {out: raw_x, op: mul, in: [r, r_rrms]}\n  - {out: y_sum, op: sub, in: [raw_x, acc_r]}\n"
		"outputs:\n  y: {}\n  y_sum: {}\n  r_rrms: {dtype: f32}\n%s";
	static const struct {
		const char *fusion;
		int width;         /* 0: the pointwise spec */
		const char *schedule;
	} cases[] = {
		{"threadIdx", 0, ""},
		{"wsf_compute", 0, "schedule: {warp_specialize: true, persistent: true, store: tma}\n"},
		{"__global__", 1024, ""},                               /* a row in registers */
		{"float", 32768, "schedule: {persistent: true}\n"},   /* a row re-read from shared memory */
		{"wsfuse_main", 65536, ""},                             /* a row streamed in chunks */
	};
	char text[2048];
	size_t i;

	(void)state;
	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		WsfKernel *k;

		if (cases[i].width)
			snprintf(text, sizeof text, row, cases[i].fusion, cases[i].width, cases[i].schedule);
		else
			snprintf(text, sizeof text, pointwise, cases[i].fusion, cases[i].schedule);
		k = compile(cases[i].fusion, text, "cubin");
		assert_non_null(wsf_kernel_text(k, WSF_STAGE_CUBIN, NULL));
		assert_string_equal(wsf_kernel_name(k), cases[i].fusion);
		wsf_kernel_delete(k);
	}
}

/* A spec growing with N: a chain of N pairs (REDUCE: max and sub, reductions nesting; else maximum and sub). */
static char *
chain_spec(int n, bool reduce, int pointwise_per_level)
{
	size_t cap = 256 + (size_t)n * (size_t)(2 + pointwise_per_level) * 64;
	char *s = malloc(cap), prev[32] = "x";
	size_t len;
	int i, j;

	assert_non_null(s);
	len = (size_t)snprintf(s, cap, "fusion: chain\nsizes: {M: 4096, N: 1024}\n"
	                       "inputs:\n  x: {dtype: f32, shape: [M, N]}\n  w: {dtype: f32, shape: [M, N]}\nops:\n");
	for (i = 1; i <= n; i++) {
		for (j = 0; j < pointwise_per_level; j++) {
			len += (size_t)snprintf(s + len, cap - len, "  - {out: p%d_%d, op: %s, in: [%s, w]}\n", i, j,
			                        j % 2 ? "add" : "mul", prev);
			snprintf(prev, sizeof prev, "p%d_%d", i, j);
		}
		if (reduce)
			len += (size_t)snprintf(s + len, cap - len, "  - {out: a%d, op: max, in: [%s]}\n"
			                        "  - {out: b%d, op: sub, in: [%s, a%d]}\n", i, prev, i, prev, i);
		else
			len += (size_t)snprintf(s + len, cap - len, "  - {out: a%d, op: maximum, in: [%s, w]}\n"
			                        "  - {out: b%d, op: sub, in: [a%d, %s]}\n", i, prev, i, i, prev);
		snprintf(prev, sizeof prev, "b%d", i);
	}
	/* persistent: the pipeline, which compiles no direct kernel to count its spills */
	snprintf(s + len, cap - len, "outputs:\n  %s: {}\nschedule: {persistent: true}\n", prev);
	return s;
}

/* Bytes of the CUDA of SPEC. */
static size_t
cuda_bytes(const char *spec)
{
	WsfKernel *k = compile("chain.yaml", spec, "cuda");
	size_t n = strlen(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));

	wsf_kernel_delete(k);
	return n;
}

/*
 * A 12 KB spec of 120 max/sub pairs once made 630 KB of CUDA, 240 pairs
 * 2.4 MB, and NVRTC took minutes and gigabytes: each pass over a row
 * recomputed every op before it, and each reduction of the chain was a pass.
 * Reductions now nest at most 16 deep (schedule.c), so the CUDA is linear in
 * the spec: doubling the ops at most doubles it, and a pointwise chain costs
 * a bounded number of bytes an op.  (Sizes, not times: tests do not time.)
 */
static void
cuda_grows_linearly(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	char *spec;
	size_t small, big;

	(void)state;
	/* the chain of the report: refused at its 17th level, with the reason */
	spec = chain_spec(240, true, 0);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "chain.yaml", spec, strlen(spec), &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_non_null(strstr(wsf_context_last_error(ctx), "cannot place 'a17' (max) in one kernel: it reduces a value "
	                       "that needs 16 reductions before it, and a row reduction kernel nests at most 16"));
	free(spec);
	wsf_context_delete(ctx);

	/* 240 maximum/sub pairs in a pointwise kernel: about 120 bytes an op */
	spec = chain_spec(240, false, 0);
	big = cuda_bytes(spec);
	free(spec);
	assert_true(big < 480 * 256);

	/* 16 levels, the most, with 20 and then 40 pointwise ops before each reduction */
	spec = chain_spec(16, true, 20);
	small = cuda_bytes(spec);
	free(spec);
	spec = chain_spec(16, true, 40);
	big = cuda_bytes(spec);
	free(spec);
	assert_true(big <= small * 21 / 10);
}

/*
 * wait: {per_tile, tile: [1, 1]} once unrolled a flag wait for each writer
 * tile a kernel tile covers: 16384 waits, 4 MB of CUDA, NVRTC past minutes.
 * They are waited for in a loop: the CUDA of the finest writer's tile is
 * within a few hundred bytes of the plain per_tile wait's, and compiles.
 */
static void
wait_tile_hint_is_a_loop(void **state)
{
	static const char spec[] =
		"fusion: wait_tile\nsizes: {M: 1000, N: 1032, K: 520}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: f32, shape: [M, N], wait: %s}\n  q: {dtype: bf16, shape: [M, N], wait: %s}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: a, op: add, in: [y, p]}\n"
		"  - {out: o, op: sub, in: [a, q]}\noutputs:\n  o: {dtype: bf16, accumulate: true, wait: %s}\n";
	static const char *const hints[] = {"{per_tile, tile: [1, 1]}", "{per_tile, tile: [1, 64]}",
	                                    "{per_tile, tile: [2, 1]}"};
	char text[1024];
	WsfKernel *k;
	size_t plain, n, i;

	(void)state;
	snprintf(text, sizeof text, spec, "per_tile", "per_tile", "per_tile");
	k = compile("wait_tile.yaml", text, "cuda");
	plain = strlen(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
	wsf_kernel_delete(k);
	for (i = 0; i < sizeof hints / sizeof hints[0]; i++) {
		snprintf(text, sizeof text, spec, hints[i], hints[i], hints[i]);
		k = compile("wait_tile.yaml", text, "cuda");
		n = strlen(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
		wsf_kernel_delete(k);
		if (n > plain + 2048)
			fail_msg("%s: %zu bytes of CUDA, the plain per_tile wait %zu", hints[i], n, plain);
	}
	if (have_nvrtc()) {   /* after the sizes: the unrolled form took NVRTC minutes */
		snprintf(text, sizeof text, spec, hints[0], hints[0], hints[0]);
		k = compile("wait_tile.yaml", text, "cubin");
		assert_non_null(wsf_kernel_text(k, WSF_STAGE_CUBIN, NULL));
		wsf_kernel_delete(k);
	}
}

/*
 * A spec of N full [M, N] inputs (TMA: a 128-byte map each) chained by
 * adds; with MIXED each followed by a per-row [M, 1] one (a pointer: the
 * next map starts 64 bytes on, not 8); with MATMUL, the epilogue of a
 * matmul (a residual: a pointer and a map for its prefetch).
 */
static char *
many_inputs(int n, bool mixed, bool matmul)
{
	size_t cap = 512 + (size_t)n * 192;
	char *s = malloc(cap), prev[16], term[16];
	size_t len;
	int i, j, terms = 0;

	assert_non_null(s);
	len = (size_t)snprintf(s, cap, "fusion: many\nsizes: {M: 256, N: 256, K: 64}\ninputs:\n%s",
	                       matmul ? "  a: {dtype: bf16, shape: [M, K]}\n  b: {dtype: bf16, shape: [N, K]}\n" : "");
	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(s + len, cap - len, "  x%d: {dtype: f32, shape: [M, N]}\n", i);
		if (mixed)
			len += (size_t)snprintf(s + len, cap - len, "  c%d: {dtype: f32, shape: [M, 1]}\n", i);
	}
	len += (size_t)snprintf(s + len, cap - len, "ops:\n%s",
	                        matmul ? "  - {out: y, op: matmul, in: [a, b], transpose_b: true}\n" : "");
	snprintf(prev, sizeof prev, matmul ? "y" : "x0");
	for (i = matmul ? 0 : 1, j = 0; i < n || (mixed && j < n); ) {
		if (mixed && j < i)
			snprintf(term, sizeof term, "c%d", j++);
		else
			snprintf(term, sizeof term, "x%d", i++);
		len += (size_t)snprintf(s + len, cap - len, "  - {out: v%d, op: add, in: [%s, %s]}\n", terms, prev, term);
		snprintf(prev, sizeof prev, "v%d", terms++);
	}
	snprintf(s + len, cap - len, "outputs:\n  %s: {dtype: f32}\n", prev);
	return s;
}

/*
 * A kernel's parameters take at most 32764 bytes, laid out as ptxas lays
 * them out (a map at a multiple of 64): the most inputs of each layout that
 * fit compile through NVRTC, and one more is refused at the input that
 * does not fit (not NVRTC's "parameter space overflowed", nor sync's
 * "more than 256 effects").
 */
static void
params_fit_or_are_refused(void **state)
{
	static const struct {
		int n;
		bool mixed, matmul, cubin;
		const char *refused;   /* the message of n + 1 */
	} cases[] = {
		{254, false, false, true, "output 'v253' does not fit in the kernel's parameters"},
		{169, true, false, true, "output 'v338' does not fit in the kernel's parameters"},
		{237, false, true, false, "input 'x237' does not fit in the kernel's parameters"},   /* NVRTC: 17 s */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		WsfContext *ctx = wsf_context_new();
		char *spec = many_inputs(cases[i].n, cases[i].mixed, cases[i].matmul);
		WsfKernel *k = compile("many.yaml", spec, cases[i].cubin && have_nvrtc() ? "cubin" : "cuda");

		wsf_kernel_delete(k);
		free(spec);
		spec = many_inputs(cases[i].n + 1, cases[i].mixed, cases[i].matmul);
		assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
		assert_int_equal(wsf_compile_string(ctx, "many.yaml", spec, strlen(spec), &k), WSF_ERR_INPUT);
		if (!strstr(wsf_context_last_error(ctx), cases[i].refused))
			fail_msg("%d: %s", cases[i].n + 1, wsf_context_last_error(ctx));
		free(spec);
		wsf_context_delete(ctx);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(colliding_names_compile),
		cmocka_unit_test(names_in_comments_are_escaped),
		cmocka_unit_test(cuda_grows_linearly),
		cmocka_unit_test(wait_tile_hint_is_a_loop),
		cmocka_unit_test(params_fit_or_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
