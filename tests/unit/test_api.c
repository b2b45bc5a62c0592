/*
 * test_api.c: the public API of include/wsfuse.h, used as an embedding program
 * would: contexts, options, size bindings, compiling strings and files to each
 * stage, argument queries, the diagnostics callback and the last error, and
 * the calls that must refuse without crashing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wsfuse.h"

#include "have_nvrtc.h"

static const char spec[] =
	"fusion: api\n"
	"sizes: {M: 64, N: 128}\n"
	"inputs:\n"
	"  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: f32, shape: [N]}\n"
	"ops:\n"
	"  - {out: y, op: add, in: [x, b]}\n"
	"  - {out: z, op: relu, in: [y]}\n"
	"outputs:\n"
	"  z: {dtype: bf16}\n";

/* The generated code of the CUDA text CU: what follows the device header inlined at its top. */
static const char *
generated(const char *cu)
{
	const char *end = cu ? strstr(cu, "// ---- end wsfuse_device.cuh ----") : NULL;

	return end ? end : cu;
}

typedef struct Seen {
	int errors;
	char last[1024];
} Seen;

static void
on_diag(void *user, WsfSeverity sev, const char *msg)
{
	Seen *s = user;

	if (sev == WSF_SEV_ERROR)
		s->errors++;
	snprintf(s->last, sizeof s->last, "%s", msg);
}

/* The header's numbers, its string and the running library agree (the
 * Makefile names the library files from the header's numbers). */
static void
version_is_the_headers(void **state)
{
	char want[64];

	snprintf(want, sizeof want, "%d.%d.%d", WSF_VERSION_MAJOR, WSF_VERSION_MINOR, WSF_VERSION_PATCH);
	assert_string_equal(WSF_VERSION_STRING, want);
	assert_string_equal(wsf_version(), want);
}

/*
 * A row held in registers releases its stage at the first block reduction,
 * with no barrier of the sync pass after the compute: so a staged input that
 * only the output reads (g) must still be read from its stage before that
 * barrier, once, and never after it.
 */
static void
staged_rows_are_read_before_the_first_barrier(void **state)
{
	static const char late[] =
		"fusion: late\nsizes: {M: 64, N: 4096}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  g: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: p, op: softmax, in: [x]}\n  - {out: y, op: mul, in: [p, g]}\n"
		"outputs:\n  y: {dtype: bf16}\nschedule: {persistent: true}\n";
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	const char *cu, *load, *first_barrier;

	(void)state;
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "late.yaml", late, strlen(late), &k), WSF_OK);
	cu = generated(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
	assert_non_null(cu);
	load = strstr(cu, "wsf_load8(v_g[it], cur_row_g + e);");
	first_barrier = strstr(cu, "wsf_block<wsf_fold_max>(");
	assert_non_null(load);
	assert_non_null(first_barrier);
	assert_true(load < first_barrier);
	assert_null(strstr(load + strlen("wsf_load8(v_g[it], cur_row_g + e);"), "cur_row_g"));  /* not read again */
	assert_null(strstr(cu, "release the stage"));  /* the sync pass added no release barrier */
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/*
 * A row reduction's output that is one row broadcast over rows ([cols]) has
 * one copy: it is stored from row 0, at the element's column, never at
 * row * cols (which would write past its end), held whole or streamed.
 */
static void
row_outputs_are_stored_once(void **state)
{
	static const char fmt[] =
		"fusion: rowout\nsizes: {M: 64, N: %d}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  w: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: softmax, in: [x]}\n  - {out: w2, op: mul, in: [w, 2.0]}\n"
		"outputs:\n  y: {dtype: bf16}\n  w2: {dtype: bf16}\n";
	static const int widths[] = {1024, 40000};
	WsfContext *ctx = wsf_context_new();
	char spec_text[512];
	int i;

	(void)state;
	if (!have_nvrtc())  /* a one-CTA-a-row kernel is compiled to check its registers */
		skip_because(NO_NVRTC);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	for (i = 0; i < 2; i++) {
		WsfKernel *k = NULL;
		const char *cu, *guard;

		snprintf(spec_text, sizeof spec_text, fmt, widths[i]);
		assert_int_equal(wsf_compile_string(ctx, "rowout.yaml", spec_text, strlen(spec_text), &k), WSF_OK);
		cu = generated(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
		assert_non_null(cu);
		guard = strstr(cu, "if (row == 0) {");
		assert_non_null(guard);
		assert_non_null(strstr(guard, "wsf_store8(out_w2 + e, "));
		assert_null(strstr(cu, "out_w2 + row"));
		assert_non_null(strstr(cu, "wsf_store8(out_y + row * cols + e, "));
		wsf_kernel_delete(k);
	}
	wsf_context_delete(ctx);
}

/*
 * One CTA a row with the row in registers (persistent: false, and the
 * default for an rmsnorm): the row's
 * inputs come straight from global memory, both steps' loads before the
 * first reduction, a bf16 row kept as loaded and unpacked in each pass that
 * reads it, and (one level of reductions) loaded again for the output pass
 * under L2 policies; no stage, no mbarrier, no bulk copy; a weight loads where
 * it is used; an odd number of reductions needs no end-of-row barrier (there
 * is no next row), while the persistent kernel keeps its scratch-flip.
 */
static void
direct_rows_load_from_global(void **state)
{
	static const char fmt[] =
		"fusion: direct\nsizes: {M: 64, N: 4096}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  w: {dtype: bf16, shape: [N]}\n"
		"ops:\n  - {out: y, op: rmsnorm, in: [x, w]}\n"
		"outputs:\n  y: {dtype: bf16}\n%s";
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	char spec_text[512];
	const char *cu, *load, *reload, *sum, *w, *unpack;

	(void)state;
	if (!have_nvrtc())  /* a one-CTA-a-row kernel is compiled to check its registers */
		skip_because(NO_NVRTC);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	snprintf(spec_text, sizeof spec_text, fmt, "schedule: {persistent: false}\n");
	assert_int_equal(wsf_compile_string(ctx, "direct.yaml", spec_text, strlen(spec_text), &k), WSF_OK);
	cu = generated(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
	assert_non_null(cu);
	/* one level of reductions: the row is loaded again for the outputs, L2 keeping it in between */
	load = strstr(cu, "raw_x[it] = wsf_ldg16_l2(in_x + row * cols + e, wsf_keep);");
	sum = strstr(cu, "wsf_fold8<wsf_fold_sum>(");
	w = strstr(cu, "wsf_load8_global(v_w[it], in_w + e);");
	assert_non_null(load);
	assert_non_null(sum);
	assert_non_null(w);
	assert_true(load < sum && sum < w);
	reload = strstr(cu, "raw_x[it] = wsf_ldg16_l2(in_x + row * cols + e, wsf_drop);");
	assert_non_null(reload);
	assert_true(sum < reload && reload < w);
	assert_non_null(strstr(cu, "uint4 raw_x[2];"));
	unpack = strstr(cu, "wsf_unpack8(v_x, raw_x[it]);");
	assert_non_null(unpack);  /* in the reduction's pass ... */
	assert_true(unpack < sum);
	assert_non_null(strstr(w, "wsf_unpack8(v_x, raw_x[it]);"));  /* ... and again in the output's */
	assert_null(strstr(cu, "wsf_bulk_load"));
	assert_null(strstr(cu, "wsf_mbar"));
	assert_null(strstr(cu, "__syncthreads"));
	assert_non_null(strstr(cu, "__launch_bounds__(256, 8)"));   /* nothing held across the reduction: 64 warps */
	wsf_kernel_delete(k);
	snprintf(spec_text, sizeof spec_text, fmt, "schedule: {persistent: true}\n");
	assert_int_equal(wsf_compile_string(ctx, "direct.yaml", spec_text, strlen(spec_text), &k), WSF_OK);
	cu = generated(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL));
	assert_non_null(strstr(cu, "wsf_bulk_load"));
	assert_non_null(strstr(cu, "wsf_flip"));
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/*
 * Compiles TEXT to the context's stop stage: its kernel IR names KIR_HAS and
 * not KIR_LACKS (NULL: no check); when CUDA, the CUDA names CUDA_HAS, else
 * there is no CUDA text.
 */
static void
expect_stages(WsfContext *ctx, const char *text, const char *kir_has, const char *kir_lacks, bool cuda,
              const char *cuda_has)
{
	WsfKernel *k = NULL;
	const char *kir, *cu;

	assert_int_equal(wsf_compile_string(ctx, "spill.yaml", text, strlen(text), &k), WSF_OK);
	kir = wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, NULL);
	assert_non_null(strstr(kir, kir_has));
	if (kir_lacks)
		assert_null(strstr(kir, kir_lacks));
	cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);
	if (cuda)
		assert_true(cu && strstr(cu, cuda_has));
	else
		assert_null(cu);
	wsf_kernel_delete(k);
}

/*
 * A row kernel made direct by default whose registers spill (three f32 rows
 * are 48 registers a thread before any arithmetic, over the 40 that 48 warps
 * an SM leave) is compiled again as the persistent pipeline, and every stage
 * shows that kernel, also when compiling stops before PTX; `persistent:
 * false` keeps the direct kernel.  A layernorm-like row at 32 elements a
 * thread that spills drops to 16.  Skips without NVRTC.
 */
static void
spilling_direct_rows_take_the_pipeline(void **state)
{
	static const char fmt[] =
		"fusion: spill\nsizes: {M: 64, N: 8192}\n"
		"inputs:\n  x: {dtype: f32, shape: [M, N]}\n  r: {dtype: f32, shape: [M, N]}\n"
		"  s: {dtype: f32, shape: [M, N]}\n"
		"ops:\n  - {out: h, op: add, in: [x, r]}\n  - {out: g, op: add, in: [h, s]}\n"
		"  - {out: y, op: softmax, in: [g]}\n"
		"outputs:\n  y: {dtype: f32}\n%s";
	static const char deep[] =
		"fusion: deep\nsizes: {M: 64, N: 4096}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, N]}\n  r: {dtype: bf16, shape: [M, N]}\n"
		"ops:\n  - {out: g, op: mul, in: [x, r]}\n  - {out: y, op: layernorm, in: [g]}\n"
		"outputs:\n  y: {dtype: bf16}\n";
	static const char *const stops[] = {"kernel-ir", "cuda", "cubin"};
	WsfContext *ctx = wsf_context_new();
	char spec_text[512];
	int i;

	(void)state;
	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	for (i = 0; i < (int)(sizeof stops / sizeof stops[0]); i++) {
		bool cuda = i > 0;

		assert_int_equal(wsf_set_option(ctx, "stop-after", stops[i]), WSF_OK);
		snprintf(spec_text, sizeof spec_text, fmt, "");
		expect_stages(ctx, spec_text, "bulk_load", "one_tile_per_cta", cuda, "persistent over tiles");
		snprintf(spec_text, sizeof spec_text, fmt, "schedule: {persistent: false}\n");
		expect_stages(ctx, spec_text, "loaded straight from global memory", NULL, cuda, "one CTA per tile");
		/* 32 elements a thread of two bf16 rows spill (ptxas 13.0), 16 fit: 256 threads, 48 warps an SM */
		expect_stages(ctx, deep, "threads=256 consumers=256 tile=[1, 4096] one_tile_per_cta", NULL, cuda,
		              "__launch_bounds__(256, 6)");
		expect_stages(ctx, deep, "(2 steps of 8 a thread), loaded straight from global memory", NULL, cuda,
		              "one CTA per tile");
	}
	wsf_context_delete(ctx);
}

static void
compile_to_each_stage(void **state)
{
	WsfContext *ctx = wsf_context_new();
	int st;

	(void)state;
	for (st = WSF_STAGE_FUSION_IR; st <= WSF_STAGE_CUDA; st++) {
		WsfKernel *k = NULL;

		assert_int_equal(wsf_set_option(ctx, "stop-after", wsf_stage_name((WsfStage)st)), WSF_OK);
		assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
		assert_string_equal(wsf_kernel_name(k), "api");
		assert_non_null(wsf_kernel_text(k, (WsfStage)st, NULL));
		if (st < WSF_STAGE_CUDA)
			assert_null(wsf_kernel_text(k, (WsfStage)(st + 1), NULL));
		wsf_kernel_delete(k);
	}
	wsf_context_delete(ctx);
}

static void
argument_queries(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;

	(void)state;
	wsf_set_option(ctx, "stop-after", "fusion-ir");
	assert_int_equal(wsf_set_size(ctx, "M", 32), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	assert_int_equal(wsf_kernel_num_args(k), 3);
	assert_string_equal(wsf_kernel_arg_name(k, 0), "x");
	assert_string_equal(wsf_kernel_arg_name(k, 2), "z");
	assert_null(wsf_kernel_arg_name(k, 3));
	assert_int_equal(wsf_kernel_arg_is_output(k, 1), 0);
	assert_int_equal(wsf_kernel_arg_is_output(k, 2), 1);
	assert_int_equal(wsf_kernel_arg_is_output(k, -1), -1);
	assert_int_equal(wsf_kernel_arg_dtype(k, 1), WSF_DTYPE_F32);
	assert_int_equal(wsf_kernel_arg_rank(k, 1), 1);
	assert_int_equal(wsf_kernel_arg_dim(k, 0, 0), 32);   /* bound, not the default 64 */
	assert_int_equal(wsf_kernel_arg_dim(k, 0, 1), 128);
	assert_int_equal(wsf_kernel_arg_dim(k, 0, 2), -1);
	assert_string_equal(wsf_kernel_arg_dim_name(k, 2, 0), "M");
	assert_string_equal(wsf_kernel_arg_dim_name(k, 1, 0), "N");
	assert_null(wsf_kernel_arg_dim_name(k, 1, 1));
	assert_int_equal(wsf_kernel_arg_row_strided(k, 0), -1);   /* no launch yet: stopped at the fusion IR */
	wsf_kernel_delete(k);
	/* compiled to the kernel IR: x and b through tensor maps of their rows; z stored from registers */
	wsf_set_option(ctx, "stop-after", "kernel-ir");
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 0), 1);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 1), 1);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 2), 0);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 3), -1);
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/* The fusion IR of SPEC compiled under option layout LAYOUT, or NULL with the error in *ERR. */
static const char *
fir_with_layout(WsfContext *ctx, WsfKernel **k, const char *layout, const char **err)
{
	size_t n;

	wsf_set_option(ctx, "layout", layout);
	*k = NULL;
	if (wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), k) != WSF_OK) {
		*err = wsf_context_last_error(ctx);
		return NULL;
	}
	return wsf_kernel_text(*k, WSF_STAGE_FUSION_IR, &n);
}

/*
 * Option layout: an input given as a permute of a contiguous tensor (torch's
 * x.t()) is that tensor, its dims permuted back, and a permute op in front;
 * the argument keeps its name, with the stored shape; the kernel reads the
 * transpose through shared memory.  A matmul operand's transpose flips its
 * transpose flag instead (its other layout).  Each misuse is an error at the input
 * (or the fusion, for a name that is no input); the identity changes nothing.
 */
static void
layout_option(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k;
	const char *fir, *err = NULL;
	static const struct { const char *layout, *want; } bad[] = {
		{"q=1,0", "api.yaml:1:9: error: option layout: 'q' is not an input of 'api'"},
		{"x=1,1", "api.yaml:4:3: error: option layout: input 'x': dim 1 appears twice"},
		{"x=0", "option layout: input 'x' has rank 2, and the layout gives 1 dims"},
		{"x=1,z", "option layout: input 'x': '1,z' is not a list of dims, comma-separated (1,0; * for a dim "
		          "expanded from none: *,0)"},
		{"x=2,0", "option layout: input 'x' keeps 2 dims in memory: dim 2 is out of range (expected -2..1)"},
		{"x=*,1", "option layout: input 'x' keeps 1 dims in memory: dim 1 is out of range (expected -1..0)"},
		{"x=*,*", "option layout: input 'x': every dim is expanded (*): give it a dim of memory"},
		{"x=**,0", "is not a list of dims"},
		{"x=1,0;x=1,0", "option layout: input 'x' is given twice"},
		{"x", "option layout: 'x' is not NAME=DIMS"},
	};

	(void)state;
	wsf_set_option(ctx, "stop-after", "kernel-ir");
	fir = fir_with_layout(ctx, &k, "x=1,0", &err);
	assert_non_null(fir);
	assert_non_null(strstr(fir, "  input x: bf16[N, M]"));
	assert_non_null(strstr(fir, "  x.permuted: bf16[M, N] = permute(x) dims=[1, 0]"));
	assert_non_null(strstr(fir, "= add(x.permuted, b)"));
	assert_int_equal(wsf_kernel_arg_dim(k, 0, 0), 128);   /* the argument: [N, M] */
	assert_int_equal(wsf_kernel_arg_dim(k, 0, 1), 64);
	wsf_kernel_delete(k);
	fir = fir_with_layout(ctx, &k, "x=-1,-2", &err);   /* negative dims, as torch's */
	assert_non_null(fir);
	assert_non_null(strstr(fir, "permute(x) dims=[1, 0]"));
	wsf_kernel_delete(k);
	fir = fir_with_layout(ctx, &k, "x=0,1", &err);
	assert_non_null(fir);
	assert_null(strstr(fir, "permute"));
	wsf_kernel_delete(k);
	/* an expanded dim (torch's stride 0): the memory lacks it; a reshape and an expand give x */
	fir = fir_with_layout(ctx, &k, "x=*,0", &err);
	assert_non_null(fir);
	assert_non_null(strstr(fir, "  input x: bf16[N]"));
	assert_non_null(strstr(fir, "  x.ones: bf16[1, N] = reshape(x) shape=[1, N]"));
	assert_non_null(strstr(fir, "  x.expanded: bf16[M, N] = expand(x.ones) shape=[M, N]"));
	assert_int_equal(wsf_kernel_arg_rank(k, 0), 1);
	wsf_kernel_delete(k);
	fir = fir_with_layout(ctx, &k, "x=0,*", &err);
	assert_non_null(fir);
	assert_non_null(strstr(fir, "  input x: bf16[M]"));
	assert_non_null(strstr(fir, "  x.ones: bf16[M, 1] = reshape(x) shape=[M, 1]"));
	wsf_kernel_delete(k);
	{   /* a matmul operand's transpose is its other layout: the flag flips, no permute */
		static const char mm[] = "fusion: mm\nsizes: {M: 256, N: 128, K: 64}\ninputs:\n"
		                         "  a: {dtype: bf16, shape: [M, K]}\n  b: {dtype: bf16, shape: [N, K]}\n"
		                         "ops:\n  - {out: y, op: matmul, in: [a, b], transpose_b: true}\n"
		                         "outputs:\n  y: {dtype: bf16}\n";
		size_t n;

		wsf_set_option(ctx, "layout", "a=1,0;b=1,0");
		assert_int_equal(wsf_compile_string(ctx, "mm.yaml", mm, strlen(mm), &k), WSF_OK);
		fir = wsf_kernel_text(k, WSF_STAGE_FUSION_IR, &n);
		assert_non_null(strstr(fir, "  input a: bf16[K, M]"));
		assert_non_null(strstr(fir, "  input b: bf16[K, N]"));
		assert_non_null(strstr(fir, "= matmul(a, b) transpose_a=true transpose_b=false"));
		assert_null(strstr(fir, "permute"));
		wsf_kernel_delete(k);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_null(fir_with_layout(ctx, &k, bad[i].layout, &err));
		if (!err || !strstr(err, bad[i].want))
			fail_msg("layout '%s': expected \"%s\" in \"%s\"", bad[i].layout, bad[i].want, err ? err : "(none)");
	}
	wsf_context_delete(ctx);
}

static void
errors_reach_the_callback_once(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = (WsfKernel *)&k;  /* must be reset to NULL */
	Seen seen = {0};
	static const char bad[] = "fusion: f\ninputs: {a: {dtype: bf17, shape: [4]}}\nops: []\noutputs: {}\n";

	(void)state;
	wsf_set_diagnostic_handler(ctx, on_diag, &seen);
	assert_int_equal(wsf_compile_string(ctx, "bad.yaml", bad, strlen(bad), &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_int_equal(seen.errors, 1);
	assert_non_null(strstr(seen.last, "bad.yaml:2:"));
	assert_string_equal(wsf_context_last_error(ctx), seen.last);
	wsf_context_delete(ctx);
}

static void
refusals(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;

	(void)state;
	assert_int_equal(wsf_set_size(ctx, "M", 0), WSF_ERR_INPUT);
	assert_int_equal(wsf_set_size(ctx, "1M", 4), WSF_ERR_INPUT);
	assert_int_equal(wsf_set_size(NULL, "M", 4), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "no-such-option", "1"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "sass"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", "+5"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", " 5"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", "1000001"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", "99999999999999999999"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", ""), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", NULL), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "store-delay", "20000"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "store-delay", "0"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "pdl", "2"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "pdl", NULL), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "pdl", "0"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "pdl", "1"), WSF_OK);
	assert_int_equal(wsf_set_option(ctx, "tune", "yes"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "tune", NULL), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "tune", "0"), WSF_OK);
	assert_null(wsf_kernel_tuned(NULL));
	assert_int_equal(wsf_set_option(ctx, "dump-after", "expand,nope"), WSF_ERR_USAGE);
	assert_int_equal(wsf_set_option(ctx, "dump-after", "expand,sync"), WSF_OK);
	assert_int_equal(wsf_compile_file(ctx, "/nonexistent/spec.yaml", &k), WSF_ERR_IO);
	assert_null(k);
	assert_int_equal(wsf_compile_string(ctx, "x", NULL, 0, &k), WSF_ERR_USAGE);
	assert_string_equal(wsf_status_name(WSF_ERR_NO_GPU), "WSF_ERR_NO_GPU");
	assert_string_equal(wsf_status_name((WsfStatus)999), "WSF_STATUS_UNKNOWN");
	assert_int_equal(wsf_stage_from_name("kernel-ir"), WSF_STAGE_KERNEL_IR);
	assert_int_equal(wsf_stage_from_name("nope"), WSF_STAGE_NONE);
	/* a kernel compiled only to CUDA cannot launch, and says why */
	wsf_set_option(ctx, "stop-after", "cuda");
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	assert_int_equal(wsf_kernel_launch(ctx, k, NULL, 0, NULL), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "not compiled to a cubin"));
	wsf_kernel_delete(k);
	wsf_kernel_delete(NULL);
	wsf_context_delete(ctx);
	wsf_context_delete(NULL);
}

/*
 * Sizes that overflow are refused before the driver is touched, so this
 * runs without a GPU: sizes bound after the compile whose product has no
 * 64-bit count (wsf_kernel_run), a null shape (wsf_kernel_launch).
 */
static void
launch_refuses_bad_shapes(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	WsfRunOptions opts = {1, 0, 0, 0, 0};
	WsfRunReport rep;
	WsfTensor args[3] = {{(void *)(uintptr_t)0x7f0000000000ull, WSF_DTYPE_BF16, 2, NULL, NULL}};

	(void)state;
	if (!have_nvrtc())  /* runs and launches need a cubin */
		skip_because(NO_NVRTC);
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	assert_int_equal(wsf_set_size(ctx, "M", (int64_t)1 << 40), WSF_OK);
	assert_int_equal(wsf_set_size(ctx, "N", (int64_t)1 << 40), WSF_OK);
	assert_int_equal(wsf_kernel_run(ctx, k, &opts, &rep), WSF_ERR_INPUT);
	assert_non_null(strstr(wsf_context_last_error(ctx), "argument 'x' has more elements than this host can hold"));
	assert_int_equal(wsf_kernel_launch(ctx, k, args, 3, NULL), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "argument 'x': its shape is a null pointer, with ndim 2"));
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/* SRC with its first OLD replaced by NEW, into OUT of N bytes (a spec that differs in one key). */
static void
replaced(char *out, size_t n, const char *src, const char *old, const char *new_)
{
	const char *at = strstr(src, old);

	assert_non_null(at);
	snprintf(out, n, "%.*s%s%s", (int)(at - src), src, new_, at + strlen(old));
}

/*
 * signal: per_tile from the C API, before any driver call (no GPU needed):
 * the layout of the flags for given tensors; a plain launch, a launch
 * without flags or with epoch 0, and a negative grid cap are usage errors
 * that say what to do; a kernel that does not signal has no layout.
 */
static void
signal_launch_checks(void **state)
{
	static const char sig[] =
		"fusion: sig\nsizes: {M: 1000, N: 1032, K: 200}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\noutputs:\n  y: {dtype: bf16}\n"
		"schedule: {signal: per_tile, tile: [128, 256, 64]}\n";   /* the default narrows for 40 tiles */
	static const char cons[] =
		"fusion: cons\nsizes: {M: 1000, N: 1032, K: 200}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: cast, in: [y], to: bf16}\n"
		"outputs:\n  y: {dtype: bf16}\n  z: {dtype: bf16}\nschedule: {signal: {per_tile, consumer: z}}\n";
	static const char waits[] =
		"fusion: waits\nsizes: {M: 1000, N: 1032, K: 200}\n"
		"inputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
		"  p: {dtype: bf16, shape: [M, N], wait: per_tile}\n"
		"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: z, op: add, in: [y, p]}\n"
		"outputs:\n  z: {dtype: bf16}\nschedule: {tile: [128, 256, 64]}\n";
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL, *plain = NULL;
	int64_t xs[] = {1000, 200}, ws[] = {1032, 200}, ys[] = {1000, 1032};
	WsfTensor args[4] = {{(void *)(uintptr_t)0x7f0000000000ull, WSF_DTYPE_BF16, 2, xs, NULL},
	                     {(void *)(uintptr_t)0x7f0000100000ull, WSF_DTYPE_BF16, 2, ws, NULL},
	                     {(void *)(uintptr_t)0x7f0000200000ull, WSF_DTYPE_BF16, 2, ys, NULL},
	                     {(void *)(uintptr_t)0x7f0000400000ull, WSF_DTYPE_BF16, 2, ys, NULL}};
	WsfLaunchOptions o = {0};
	WsfSignalLayout lay;

	(void)state;
	if (!have_nvrtc())  /* launches need a cubin */
		skip_because(NO_NVRTC);
	assert_int_equal(wsf_set_option(ctx, "cache", "0"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "sig.yaml", sig, strlen(sig), &k), WSF_OK);
	assert_int_equal(wsf_kernel_signal_layout(ctx, k, args, 3, &lay), WSF_OK);
	assert_int_equal(lay.tile_rows, 128);
	assert_int_equal(lay.tile_cols, 256);
	assert_int_equal(lay.row_tiles, 8);     /* ceil(1000 / 128) */
	assert_int_equal(lay.col_tiles, 5);     /* ceil(1032 / 256) */
	assert_int_equal(lay.batch, 1);
	assert_int_equal(lay.flags, 40);
	assert_int_equal(lay.view_rows, 1000);
	assert_int_equal(lay.view_cols, 1032);
	assert_int_equal(wsf_kernel_launch(ctx, k, args, 3, NULL), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'sig' signals each output tile"));
	assert_non_null(strstr(wsf_context_last_error(ctx), "wsf_kernel_launch_ex"));
	assert_int_equal(wsf_kernel_launch_ex(ctx, k, args, 3, &o), WSF_ERR_USAGE);   /* no flags */
	o.flags = (uint32_t *)(uintptr_t)0x7f0000300000ull;
	assert_int_equal(wsf_kernel_launch_ex(ctx, k, args, 3, &o), WSF_ERR_USAGE);   /* epoch 0 */
	assert_non_null(strstr(wsf_context_last_error(ctx), "a nonzero epoch"));
	o.epoch = 1;
	o.max_ctas = -1;
	assert_int_equal(wsf_kernel_launch_ex(ctx, k, args, 3, &o), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "max_ctas is -1"));
	assert_int_equal(wsf_kernel_launch_ex(ctx, k, args, 3, NULL), WSF_ERR_USAGE);
	assert_int_equal(wsf_kernel_signal_layout(ctx, k, args, 2, &lay), WSF_ERR_INPUT);   /* the tensors are checked */
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &plain), WSF_OK);
	assert_int_equal(wsf_kernel_signal_layout(ctx, plain, args, 3, &lay), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "neither signals its tiles"));
	o.max_ctas = 0;
	assert_int_equal(wsf_kernel_launch_ex(ctx, plain, args, 3, &o), WSF_ERR_USAGE);   /* flags it never sets */
	assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'api' sets no flags"));
	wsf_kernel_delete(plain);
	/* a signal consumer role inside the kernel: no flags, no layout */
	assert_int_equal(wsf_compile_string(ctx, "cons.yaml", cons, strlen(cons), &plain), WSF_OK);
	assert_int_equal(wsf_kernel_signal_layout(ctx, plain, args, 4, &lay), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "signals its tiles to its own consumer role"));
	assert_int_equal(wsf_kernel_launch_ex(ctx, plain, args, 4, &o), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "launch it without a flags buffer"));
	wsf_kernel_delete(plain);
	{   /* flags: true: the role raises the flags, which the launch then needs, in the tile loop's layout */
		char raised[sizeof cons + 16];

		replaced(raised, sizeof raised, cons, "consumer: z}", "consumer: z, flags: true}");
		assert_int_equal(wsf_compile_string(ctx, "raised.yaml", raised, strlen(raised), &plain), WSF_OK);
		assert_int_equal(wsf_kernel_signal_layout(ctx, plain, args, 4, &lay), WSF_OK);
		assert_int_equal(lay.flags, 40);
		o.flags = NULL;
		assert_int_equal(wsf_kernel_launch_ex(ctx, plain, args, 4, &o), WSF_ERR_USAGE);
		assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'cons' signals each output tile"));
		o.flags = (uint32_t *)(uintptr_t)0x7f0000300000ull;
		wsf_kernel_delete(plain);
	}
	/* an input that waits per tile: wait_flags and an epoch, and a layout that counts the inputs */
	assert_int_equal(wsf_compile_string(ctx, "waits.yaml", waits, strlen(waits), &plain), WSF_OK);
	assert_int_equal(wsf_kernel_signal_layout(ctx, plain, args, 4, &lay), WSF_OK);
	assert_int_equal(lay.waits, 1);
	assert_int_equal(lay.flags, 40);
	assert_int_equal(lay.wait_words, 40);
	{   /* a writer of 128 x 128 tiles: its layout, 8 x ceil(1032 / 128) words */
		char fine[sizeof waits + 32];
		WsfKernel *kf = NULL;

		replaced(fine, sizeof fine, waits, "wait: per_tile", "wait: {per_tile, tile: [128, 128]}");
		assert_int_equal(wsf_compile_string(ctx, "fine.yaml", fine, strlen(fine), &kf), WSF_OK);
		assert_int_equal(wsf_kernel_signal_layout(ctx, kf, args, 4, &lay), WSF_OK);
		assert_int_equal(lay.waits, 1);
		assert_int_equal(lay.wait_words, 72);
		wsf_kernel_delete(kf);
		/* a coarser writer, 256 x 512: its layout, ceil(1000 / 256) x ceil(1032 / 512) words */
		replaced(fine, sizeof fine, waits, "wait: per_tile", "wait: {per_tile, tile: [256, 512]}");
		assert_int_equal(wsf_compile_string(ctx, "coarse.yaml", fine, strlen(fine), &kf), WSF_OK);
		assert_int_equal(wsf_kernel_signal_layout(ctx, kf, args, 4, &lay), WSF_OK);
		assert_int_equal(lay.wait_words, 12);
		wsf_kernel_delete(kf);
	}
	o.flags = NULL;
	assert_int_equal(wsf_kernel_launch_ex(ctx, plain, args, 4, &o), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'waits' waits for the tiles of 1 input or output "
	                       "(wait: per_tile): launch it with wait_flags and a nonzero epoch"));
	assert_int_equal(wsf_kernel_launch(ctx, plain, args, 4, NULL), WSF_ERR_USAGE);
	o.wait_flags = (const uint32_t *)(uintptr_t)0x7f0000300000ull;
	o.epoch = 0;
	assert_int_equal(wsf_kernel_launch_ex(ctx, plain, args, 4, &o), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "a nonzero epoch"));
	o.epoch = 1;
	o.flags = (uint32_t *)(uintptr_t)0x7f0000300000ull;
	assert_int_equal(wsf_kernel_launch_ex(ctx, k, args, 3, &o), WSF_ERR_USAGE);   /* waits it never does */
	assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'sig' waits for no input"));
	wsf_kernel_delete(plain);
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/*
 * A spec longer than WSF_MAX_SPEC_BYTES is refused before it is parsed, from
 * a string or a file; reading an endless file stops one byte past the limit.
 * One at the limit is parsed (and here found empty).
 */
static void
specs_longer_than_the_limit(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = (WsfKernel *)&k;
	char *big = malloc(WSF_MAX_SPEC_BYTES + 1);
	Seen seen = {0};

	(void)state;
	assert_non_null(big);
	memset(big, ' ', WSF_MAX_SPEC_BYTES + 1);
	wsf_set_diagnostic_handler(ctx, on_diag, &seen);
	assert_int_equal(wsf_compile_string(ctx, "big.yaml", big, WSF_MAX_SPEC_BYTES + 1, &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_int_equal(seen.errors, 1);
	assert_string_equal(seen.last, "big.yaml: error: the spec is longer than the limit of 1048576 bytes "
	                               "(1 MiB); a fusion spec needs a few kilobytes");
	assert_int_equal(wsf_compile_string(ctx, "big.yaml", big, WSF_MAX_SPEC_BYTES, &k), WSF_ERR_INPUT);
	assert_non_null(strstr(seen.last, "the spec is empty"));
	assert_int_equal(wsf_compile_file(ctx, "/dev/zero", &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_non_null(strstr(seen.last, "/dev/zero: error: the spec is longer than the limit"));
	assert_int_equal(seen.errors, 3);
	free(big);
	wsf_context_delete(ctx);
}

/* SPEC with its fusion name replaced by NAME (malloc'ed). */
static char *
spec_named(const char *name)
{
	const char *rest = strchr(spec, '\n');
	char *t = malloc(strlen("fusion: ") + strlen(name) + strlen(rest) + 1);

	assert_non_null(t);
	sprintf(t, "fusion: %s%s", name, rest);
	return t;
}

/*
 * Every user string that reaches NVRTC or the generated CUDA is bounded: a
 * name of 100,000 characters is an error at the name (it once reached NVRTC
 * and corrupted its heap), 64 characters compile through NVRTC, size names
 * bound through the API are capped alike, the spec's name (a file name) and
 * option values are at most 4096 bytes, and a control byte in the spec's name
 * becomes '?' so that it cannot end a comment's line in the CUDA.
 */
static void
user_strings_are_bounded(void **state)
{
	char *huge = malloc(100001), *text, *longname = malloc(5001);
	WsfContext *ctx = wsf_context_new(), *sizes;
	WsfKernel *k = (WsfKernel *)&k;
	const char *cu;
	Seen seen = {0};

	(void)state;
	assert_non_null(huge);
	assert_non_null(longname);
	wsf_set_diagnostic_handler(ctx, on_diag, &seen);
	memset(huge, 'k', 100000);
	huge[100000] = 0;
	text = spec_named(huge);
	assert_int_equal(wsf_compile_string(ctx, "huge.yaml", text, strlen(text), &k), WSF_ERR_INPUT);
	assert_null(k);
	assert_non_null(strstr(seen.last, "huge.yaml:1:9: error: 'kkkk"));
	assert_non_null(strstr(seen.last, "...' is too long for a fusion name: 100000 characters, "
	                                  "more than the limit of 64"));
	/* and the source line is shown cut around the caret */
	assert_true(strlen(wsf_context_last_error(ctx)) < 700);
	free(text);

	huge[64] = 0;
	text = spec_named(huge);
	assert_int_equal(wsf_set_option(ctx, "stop-after", have_nvrtc() ? "cubin" : "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "64.yaml", text, strlen(text), &k), WSF_OK);
	assert_string_equal(wsf_kernel_name(k), huge);
	wsf_kernel_delete(k);
	free(text);

	sizes = wsf_context_new();
	assert_int_equal(wsf_set_size(sizes, huge, 8), WSF_OK);
	huge[64] = 'k';
	huge[65] = 0;
	assert_int_equal(wsf_set_size(sizes, huge, 8), WSF_ERR_INPUT);
	assert_non_null(strstr(wsf_context_last_error(sizes), "is too long: 65 characters, more than the limit of 64"));
	wsf_context_delete(sizes);

	memset(longname, 'n', 5000);
	longname[5000] = 0;
	assert_int_equal(wsf_compile_string(ctx, longname, spec, strlen(spec), &k), WSF_ERR_USAGE);
	assert_non_null(strstr(seen.last, "is 5000 bytes long, more than the limit of 4096"));
	assert_int_equal(wsf_set_option(ctx, "cache-dir", longname), WSF_ERR_USAGE);
	assert_non_null(strstr(seen.last, "option 'cache-dir' is 5000 bytes long"));

	/* a file name cannot put a line of its own into the CUDA */
	assert_int_equal(wsf_compile_string(ctx, "a\n#error injected\r\n.yaml", spec, strlen(spec), &k), WSF_OK);
	cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);
	assert_non_null(cu);
	assert_non_null(strstr(cu, "from a\\n#error injected\\r\\n.yaml. Do not edit.\n"));
	assert_null(strstr(cu, "\n#error"));
	wsf_kernel_delete(k);
	text = spec_named("bad-name");
	assert_int_equal(wsf_compile_string(ctx, "a\nb.yaml", text, strlen(text), &k), WSF_ERR_INPUT);
	assert_non_null(strstr(seen.last, "a\\x0ab.yaml:1:9: error: 'bad-name'"));
	free(text);

	free(huge);
	free(longname);
	wsf_context_delete(ctx);
}

/* wsf_kernel_write: the stage's text to a file, or an error naming the file. */
static void
kernel_write(void **state)
{
	static char got[1 << 16];
	char dir[] = "/tmp/wsfuse-test-api-XXXXXX", path[64];
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	const char *cu;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	cu = wsf_kernel_text(k, WSF_STAGE_CUDA, &len);
	snprintf(path, sizeof path, "%s/k.cu", dir);
	assert_int_equal(wsf_kernel_write(ctx, k, WSF_STAGE_CUDA, path), WSF_OK);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(got, 1, sizeof got, f), len);
	fclose(f);
	assert_memory_equal(got, cu, len);
	/* a stage the compile did not reach, no name, a folder */
	assert_int_equal(wsf_kernel_write(ctx, k, WSF_STAGE_CUBIN, path), WSF_ERR_USAGE);
	assert_non_null(strstr(wsf_context_last_error(ctx), "kernel 'api' has no cubin"));
	assert_int_equal(wsf_kernel_write(ctx, k, WSF_STAGE_CUDA, ""), WSF_ERR_USAGE);
	assert_int_equal(wsf_kernel_write(ctx, k, WSF_STAGE_CUDA, dir), WSF_ERR_IO);
	assert_non_null(strstr(wsf_context_last_error(ctx), ": error: cannot write: Is a directory"));
	assert_int_equal(wsf_kernel_write(NULL, k, WSF_STAGE_CUDA, path), WSF_ERR_USAGE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/*
 * Every failing call with a context makes its last error its own, and
 * tells the handler: a usage error names the call and the argument, and
 * never leaves the previous call's message behind.
 */
static void
usage_errors_name_the_call(void **state)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL, *none = NULL;
	WsfTensor arg = {0};
	WsfLaunchOptions lo = {0};
	WsfSignalLayout lay;
	WsfRunReport rep;
	Seen seen = {0};
	int errors;

	(void)state;
	wsf_set_diagnostic_handler(ctx, on_diag, &seen);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "api.yaml", spec, strlen(spec), &k), WSF_OK);
	/* each: a call that fails first, then the usage error, whose message must replace its */
#define USAGE(call, want)                                                                             \
	do {                                                                                          \
		assert_int_equal(wsf_set_option(ctx, "no-such-option", "1"), WSF_ERR_USAGE);          \
		errors = seen.errors;                                                                 \
		assert_int_equal((call), WSF_ERR_USAGE);                                              \
		if (!strstr(wsf_context_last_error(ctx), want))                                       \
			fail_msg("%s: last error '%s', expected '%s'", #call, wsf_context_last_error(ctx), want); \
		assert_int_equal(seen.errors, errors + 1);                                            \
		assert_string_equal(seen.last, wsf_context_last_error(ctx));                          \
	} while (0)
	USAGE(wsf_set_size(ctx, NULL, 1), "wsf_set_size: error: argument 'name' is NULL");
	USAGE(wsf_set_option(ctx, NULL, "1"), "wsf_set_option: error: argument 'name' is NULL");
	USAGE(wsf_compile_string(ctx, "x", NULL, 0, &none), "wsf_compile_string: error: argument 'text' is NULL");
	USAGE(wsf_compile_string(ctx, "x", spec, strlen(spec), NULL), "wsf_compile_string: error: argument 'out'");
	USAGE(wsf_compile_file(ctx, NULL, &none), "wsf_compile_file: error: argument 'path' is NULL");
	USAGE(wsf_compile_file(ctx, "x.yaml", NULL), "wsf_compile_file: error: argument 'out' is NULL");
	USAGE(wsf_kernel_write(ctx, NULL, WSF_STAGE_CUDA, "x.cu"), "wsf_kernel_write: error: argument 'k' is NULL");
	USAGE(wsf_kernel_write(ctx, k, WSF_STAGE_CUDA, NULL), "wsf_kernel_write: error: argument 'path' is NULL");
	USAGE(wsf_kernel_write(ctx, k, (WsfStage)99, "x.cu"), "wsf_kernel_write: error: stage 99 is none of the stages");
	USAGE(wsf_kernel_write(ctx, k, WSF_STAGE_CUBIN, "x.cubin"), "kernel 'api' has no cubin");
	USAGE(wsf_kernel_launch(ctx, NULL, NULL, 0, NULL), "wsf_kernel_launch: error: argument 'k' is NULL");
	USAGE(wsf_kernel_launch(ctx, k, NULL, 3, NULL), "wsf_kernel_launch: error: argument 'args' is NULL");
	USAGE(wsf_kernel_launch(ctx, k, &arg, 1, NULL), "not compiled to a cubin");
	USAGE(wsf_kernel_launch_ex(ctx, NULL, &arg, 1, &lo), "wsf_kernel_launch_ex: error: argument 'k' is NULL");
	USAGE(wsf_kernel_launch_ex(ctx, k, NULL, 3, &lo), "wsf_kernel_launch_ex: error: argument 'args' is NULL");
	USAGE(wsf_kernel_launch_ex(ctx, k, &arg, 1, NULL), "wsf_kernel_launch_ex: error: argument 'opts' is NULL");
	USAGE(wsf_kernel_signal_layout(ctx, NULL, &arg, 1, &lay), "wsf_kernel_signal_layout: error: argument 'k'");
	USAGE(wsf_kernel_signal_layout(ctx, k, NULL, 3, &lay), "wsf_kernel_signal_layout: error: argument 'args'");
	USAGE(wsf_kernel_signal_layout(ctx, k, &arg, 1, NULL), "wsf_kernel_signal_layout: error: argument 'out'");
	USAGE(wsf_kernel_run(ctx, NULL, NULL, &rep), "wsf_kernel_run: error: argument 'k' is NULL");
	USAGE(wsf_kernel_run(ctx, k, NULL, NULL), "wsf_kernel_run: error: argument 'report' is NULL");
	USAGE(wsf_kernel_run(ctx, k, NULL, &rep), "not compiled to a cubin");
#undef USAGE
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/* What the meddling handler does, and to what. */
typedef struct Meddle {
	WsfContext *ctx;
	WsfKernel *k;          /* launched again and deleted from the handler, when set */
	WsfStatus again;       /* what that launch returned */
	bool delete_ctx;       /* delete the context from the handler */
	int calls, depth, sizes, dumps;
	char dir[64];          /* under which the paths it sets lie */
} Meddle;

static void
count_dumps(void *user, const char *pass, const char *text)
{
	(void)pass;
	(void)text;
	((Meddle *)user)->dumps++;
}

/*
 * A handler that changes everything it can on the context of the call it
 * is told of: new size names (the bindings reallocate), every option that
 * is a string (each freed), the handlers, a compile of its own on the same
 * context; it launches and deletes the kernel being launched, and deletes
 * the context.
 */
static void
meddle(void *user, WsfSeverity sev, const char *msg)
{
	Meddle *m = user;
	WsfKernel *k = NULL;
	char name[16], path[128];
	int i;

	(void)sev;
	(void)msg;
	m->calls++;
	if (m->depth++ == 0) {
		for (i = 0; i < 16; i++) {
			snprintf(name, sizeof name, "S%d", m->sizes++);
			assert_int_equal(wsf_set_size(m->ctx, name, 64), WSF_OK);
		}
		snprintf(path, sizeof path, "%s/elsewhere%d", m->dir, m->calls);
		assert_int_equal(wsf_set_option(m->ctx, "cache-dir", path), WSF_OK);
		assert_int_equal(wsf_set_option(m->ctx, "dump-dir", path), WSF_OK);
		assert_int_equal(wsf_set_option(m->ctx, "override-dir", path), WSF_OK);
		assert_int_equal(wsf_set_option(m->ctx, "dump-after", "expand"), WSF_OK);
		assert_int_equal(wsf_set_option(m->ctx, "dump", "ptx"), WSF_OK);
		assert_int_equal(wsf_set_option(m->ctx, "stop-after", "fusion-ir"), WSF_OK);
		wsf_set_diagnostic_handler(m->ctx, meddle, m);
		wsf_set_dump_handler(m->ctx, NULL, NULL);
		/* its own compile fails: the spec has none of the sizes S0... */
		assert_int_equal(wsf_compile_string(m->ctx, "nested.yaml", spec, strlen(spec), &k), WSF_ERR_INPUT);
		assert_null(k);
		if (m->k) {
			m->again = wsf_kernel_launch(m->ctx, m->k, NULL, 0, NULL);
			wsf_kernel_delete(m->k);
			m->k = NULL;
		}
		if (m->delete_ctx)
			wsf_context_delete(m->ctx);
	}
	m->depth--;
}

/* A matmul with an input no op reads: its warning comes from the infer pass, before the kernel passes. */
static const char mm_unread[] =
	"fusion: mmu\n"
	"sizes: {M: 128, N: 128, K: 128}\n"
	"inputs:\n"
	"  x: {dtype: bf16, shape: [M, K]}\n"
	"  w: {dtype: bf16, shape: [N, K]}\n"
	"  extra: {dtype: bf16, shape: [K]}\n"
	"ops:\n"
	"  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"outputs:\n"
	"  y: {dtype: bf16}\n";

/* A new context whose handler is meddle, with settings for it to change. */
static WsfContext *
meddled(Meddle *m, const char *dir)
{
	char path[128];

	memset(m, 0, sizeof *m);
	snprintf(m->dir, sizeof m->dir, "%s", dir);
	m->ctx = wsf_context_new();
	wsf_set_diagnostic_handler(m->ctx, meddle, m);
	wsf_set_dump_handler(m->ctx, count_dumps, m);
	snprintf(path, sizeof path, "%s/cache", dir);
	assert_int_equal(wsf_set_option(m->ctx, "cache-dir", path), WSF_OK);
	snprintf(path, sizeof path, "%s/dump", dir);
	assert_int_equal(wsf_set_option(m->ctx, "dump-dir", path), WSF_OK);
	assert_int_equal(wsf_set_option(m->ctx, "dump-after", "all"), WSF_OK);
	assert_int_equal(wsf_set_size(m->ctx, "K", 128), WSF_OK);
	return m->ctx;
}

/*
 * Issue 63: a diagnostic handler may call back into the context of the
 * call it is told of.  The call goes on with the settings it began with
 * (changes are the next call's), a wsf_context_delete or wsf_kernel_delete
 * of what it works on waits until it returns, and a launch of the kernel
 * being launched is refused.  Under ASan this is the use-after-free test.
 */
static void
handlers_may_call_back_into_the_context(void **state)
{
	char dir[] = "/tmp/wsfuse-test-meddle-XXXXXX", cmd[128];
	WsfRunOptions opts = {1, 0, 0, 0, 0};
	WsfRunReport rep;
	WsfKernel *k = NULL, *k2 = NULL;
	WsfContext *ctx;
	Meddle m;
	int npass = 0;

	(void)state;
	while (wsf_pass_name(npass))
		npass++;
	assert_non_null(mkdtemp(dir));
	/* a warning in the fusion passes: every pass is still dumped, the kernel IR made */
	ctx = meddled(&m, dir);
	assert_int_equal(wsf_set_option(ctx, "stop-after", "kernel-ir"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "mmu.yaml", mm_unread, strlen(mm_unread), &k), WSF_OK);
	assert_int_equal(m.dumps, npass);
	assert_non_null(wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, NULL));
	/* and the next call has what the handler set: stop-after fusion-ir, sizes S0... */
	assert_int_equal(wsf_compile_string(ctx, "mmu.yaml", mm_unread, strlen(mm_unread), &k2), WSF_ERR_INPUT);
	assert_non_null(strstr(wsf_context_last_error(ctx), "size 'S0' given with -D is not used by the spec"));
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
	/* the context deleted by the handler of a compile that goes on, and of one that fails */
	ctx = meddled(&m, dir);
	m.delete_ctx = true;
	assert_int_equal(wsf_compile_string(ctx, "mmu.yaml", mm_unread, strlen(mm_unread), &k), WSF_OK);
	assert_string_equal(wsf_kernel_name(k), "mmu");
	wsf_kernel_delete(k);
	ctx = meddled(&m, dir);
	m.delete_ctx = true;
	assert_int_equal(wsf_compile_string(ctx, "bad.yaml", "fusion: [", 9, &k), WSF_ERR_INPUT);
	assert_null(k);
	if (have_nvrtc()) {
		/* to a cubin, measured choice on, CUDA dumped: notes after NVRTC's cache is named */
		ctx = meddled(&m, dir);
		assert_int_equal(wsf_set_option(ctx, "tune", "1"), WSF_OK);
		assert_int_equal(wsf_set_option(ctx, "dump", "cuda"), WSF_OK);
		assert_int_equal(wsf_compile_string(ctx, "mmu.yaml", mm_unread, strlen(mm_unread), &k), WSF_OK);
		assert_non_null(wsf_kernel_text(k, WSF_STAGE_CUBIN, NULL));
		/* a launch that fails before the driver: the handler launches K again, deletes it and the context */
		m.k = k;
		m.delete_ctx = true;
		assert_int_equal(wsf_kernel_launch(ctx, k, NULL, 0, NULL), WSF_ERR_INPUT);
		assert_int_equal(m.again, WSF_ERR_USAGE);
		/* a run at sizes no host holds, the same */
		ctx = meddled(&m, dir);
		assert_int_equal(wsf_compile_string(ctx, "mmu.yaml", mm_unread, strlen(mm_unread), &k), WSF_OK);
		assert_int_equal(wsf_set_size(ctx, "M", (int64_t)1 << 40), WSF_OK);
		assert_int_equal(wsf_set_size(ctx, "N", (int64_t)1 << 40), WSF_OK);
		m.k = k;
		m.delete_ctx = true;
		assert_int_equal(wsf_kernel_run(ctx, k, &opts, &rep), WSF_ERR_INPUT);
		assert_int_equal(m.again, WSF_ERR_USAGE);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * An input no op reads is a warning at the input, not an error about
 * where the kernel would read it: it stays an argument (the launch's
 * arity is the spec's inputs and outputs), with no parameter, load or
 * alignment rule of its own, in each family.
 */
static void
unread_inputs_warn_and_stay_arguments(void **state)
{
	static const char pw[] =
		"fusion: pwu\n"
		"sizes: {M: 64, N: 128, K: 8}\n"
		"inputs:\n"
		"  a: {dtype: bf16, shape: [M, N]}\n"
		"  extra: {dtype: f32, shape: [K, M]}\n"
		"ops:\n"
		"  - {out: y, op: relu, in: [a]}\n"
		"outputs:\n"
		"  y: {dtype: bf16}\n";
	static const char red[] =
		"fusion: redu\n"
		"sizes: {M: 64, N: 128}\n"
		"inputs:\n"
		"  a: {dtype: bf16, shape: [M, N]}\n"
		"  extra: {dtype: f32, shape: [3, 5]}\n"
		"ops:\n"
		"  - {out: s, op: sum, in: [a], axis: -1}\n"
		"outputs:\n"
		"  s: {dtype: f32}\n";
	static const struct {
		const char *name, *text, *where;
		int nargs;
	} cases[] = {
		{"mmu.yaml", mm_unread, "mmu.yaml:6:3: warning: input 'extra' is not read by any op", 4},
		{"pwu.yaml", pw, "pwu.yaml:5:3: warning: input 'extra' is not read by any op", 3},
		{"redu.yaml", red, "redu.yaml:5:3: warning: input 'extra' is not read by any op", 3},
	};
	char waits[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		WsfContext *ctx = wsf_context_new();
		WsfKernel *k = NULL;
		Seen seen = {0};

		wsf_set_diagnostic_handler(ctx, on_diag, &seen);
		assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
		if (wsf_compile_string(ctx, cases[i].name, cases[i].text, strlen(cases[i].text), &k) != WSF_OK)
			fail_msg("%s: %s", cases[i].name, wsf_context_last_error(ctx));
		assert_int_equal(seen.errors, 0);
		assert_non_null(strstr(seen.last, cases[i].where));
		assert_int_equal(wsf_kernel_num_args(k), cases[i].nargs);
		assert_string_equal(wsf_kernel_arg_name(k, cases[i].nargs - 2), "extra");
		assert_null(strstr(generated(wsf_kernel_text(k, WSF_STAGE_CUDA, NULL)), "extra"));
		wsf_kernel_delete(k);
		wsf_context_delete(ctx);
	}
	/* waiting for the tiles of an input nothing reads is an error at the wait */
	{
		WsfContext *ctx = wsf_context_new();
		WsfKernel *k = NULL;

		replaced(waits, sizeof waits, mm_unread, "shape: [K]}", "shape: [M, N], wait: per_tile}");
		assert_int_equal(wsf_compile_string(ctx, "w.yaml", waits, strlen(waits), &k), WSF_ERR_INPUT);
		assert_non_null(strstr(wsf_context_last_error(ctx), "w.yaml:6:45: error: input 'extra' waits for its tiles"));
		wsf_context_delete(ctx);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(version_is_the_headers),
		cmocka_unit_test(compile_to_each_stage),
		cmocka_unit_test(launch_refuses_bad_shapes),
		cmocka_unit_test(signal_launch_checks),
		cmocka_unit_test(staged_rows_are_read_before_the_first_barrier),
		cmocka_unit_test(row_outputs_are_stored_once),
		cmocka_unit_test(direct_rows_load_from_global),
		cmocka_unit_test(spilling_direct_rows_take_the_pipeline),
		cmocka_unit_test(argument_queries),
		cmocka_unit_test(layout_option),
		cmocka_unit_test(errors_reach_the_callback_once),
		cmocka_unit_test(refusals),
		cmocka_unit_test(specs_longer_than_the_limit),
		cmocka_unit_test(user_strings_are_bounded),
		cmocka_unit_test(kernel_write),
		cmocka_unit_test(usage_errors_name_the_call),
		cmocka_unit_test(handlers_may_call_back_into_the_context),
		cmocka_unit_test(unread_inputs_warn_and_stay_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
