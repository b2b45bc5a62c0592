/*
 * test_fake_gpu.c: the launch and tune paths on fake_cuda.so, a stand-in
 * libcuda that checks every tensor map and launch against the driver's
 * documented rules (tests/unit/fake_cuda.c), loaded from this program's
 * folder through WSFUSE_LIBCUDA_PATH.  Real specs compile through NVRTC
 * (skipped without it) and launch through wsf_kernel_launch on fake
 * device pointers, which nothing dereferences.  The kernel cache is
 * BUILD/tests/fake_gpu.cache, so a second run compiles nothing.
 */
#include <dlfcn.h>
#include <elf.h>
#include <glob.h>
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

#include <cuda.h>
#include <cudaTypedefs.h>

#include "wsfuse.h"

#include "have_nvrtc.h"

#define DEV(n) ((void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)(n) * ((uint64_t)1 << 36)))
#define BIG(n) (((int64_t)1 << 31) + (n))

static long long (*fake_get)(const char *);
static void (*fake_set)(const char *, long long);
static const char *(*fake_last)(void);
static char cache[4096];

/* PATH with this program's folder in place of its name's. */
static void
beside(char *path, size_t size, const char *name)
{
	ssize_t n = readlink("/proc/self/exe", path, size - strlen(name) - 1);
	char *slash;

	assert_true(n > 0);
	path[n] = 0;
	slash = strrchr(path, '/');
	assert_non_null(slash);
	strcpy(slash + 1, name);
}

static int
setup(void **state)
{
	char lib[4096];
	void *h;

	beside(lib, sizeof lib, "fake_cuda.so");
	beside(cache, sizeof cache, "fake_gpu.cache");
	setenv("WSFUSE_LIBCUDA_PATH", lib, 1);
	unsetenv("WSFUSE_TUNE");
	/* the library's dlopen of the same path shares this copy: its counters are what the library did */
	if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
		return -1;
	*(void **)&fake_get = dlsym(h, "fake_cuda_get");
	*(void **)&fake_set = dlsym(h, "fake_cuda_set");
	*(void **)&fake_last = dlsym(h, "fake_cuda_last_violation");
	return fake_get && fake_set && fake_last ? 0 : -1;
}

typedef struct Seen {
	char last[4096];
} Seen;

static void
on_diag(void *user, WsfSeverity sev, const char *msg)
{
	Seen *s = user;

	if (sev == WSF_SEV_ERROR)
		snprintf(s->last, sizeof s->last, "%s", msg);
}

static WsfContext *
new_ctx(Seen *seen)
{
	WsfContext *ctx = wsf_context_new();

	assert_non_null(ctx);
	memset(seen, 0, sizeof *seen);
	wsf_set_diagnostic_handler(ctx, on_diag, seen);
	assert_int_equal(wsf_set_option(ctx, "cache-dir", cache), WSF_OK);
	return ctx;
}

static WsfKernel *
compile_file(WsfContext *ctx, const char *path)
{
	WsfKernel *k = NULL;
	WsfStatus s = wsf_compile_file(ctx, path, &k);

	if (s != WSF_OK)
		fail_msg("%s: %s", path, wsf_context_last_error(ctx));
	return k;
}

static WsfKernel *
compile_text(WsfContext *ctx, const char *text)
{
	WsfKernel *k = NULL;

	if (wsf_compile_string(ctx, "huge.yaml", text, strlen(text), &k) != WSF_OK)
		fail_msg("%s", wsf_context_last_error(ctx));
	return k;
}

/* Arguments for K at its compiled sizes; SHAPES [i] overrides argument i's shape where not NULL. */
typedef struct Args {
	WsfTensor t[16];
	int64_t shape[16][8];
	int n;
} Args;

static void
args_for(const WsfKernel *k, Args *a, const int64_t *const *shapes)
{
	int i, d;

	a->n = wsf_kernel_num_args(k);
	assert_true(a->n <= 16);
	for (i = 0; i < a->n; i++) {
		WsfTensor *t = &a->t[i];

		t->data = DEV(i + 1);
		t->dtype = wsf_kernel_arg_dtype(k, i);
		t->ndim = wsf_kernel_arg_rank(k, i);
		t->strides = NULL;
		for (d = 0; d < t->ndim; d++)
			a->shape[i][d] = shapes && shapes[i] ? shapes[i][d] : wsf_kernel_arg_dim(k, i, d);
		t->shape = a->shape[i];
	}
}

/* K launched on A, with wait flags where it waits, and flags where it signals (epoch EPOCH). */
static WsfStatus
launch(WsfContext *ctx, WsfKernel *k, const Args *a, uint32_t epoch)
{
	WsfLaunchOptions o = {0};
	WsfSignalLayout lay;
	WsfStatus s;

	if (wsf_kernel_signal_layout(ctx, k, a->t, a->n, &lay) != WSF_OK)
		return wsf_kernel_launch(ctx, k, a->t, a->n, NULL);
	o.wait_flags = lay.waits ? DEV(15) : NULL;
	o.epoch = epoch;
	if ((s = wsf_kernel_launch_ex(ctx, k, a->t, a->n, &o)) != WSF_ERR_USAGE)
		return s;
	o.flags = DEV(14);   /* the layout says where flags go, not whether the kernel sets them */
	return wsf_kernel_launch_ex(ctx, k, a->t, a->n, &o);
}

static void
expect_clean(const char *what, long long violations)
{
	if (fake_get("violations") != violations)
		fail_msg("%s: the fake libcuda says: %s", what, fake_last());
}

typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *
proc(const char *name)
{
	static GetProc get;
	char lib[4096];
	void *p = NULL;

	if (!get) {
		beside(lib, sizeof lib, "fake_cuda.so");
		*(void **)&get = dlsym(dlopen(lib, RTLD_NOW | RTLD_LOCAL), "cuGetProcAddress_v2");
		assert_non_null(get);
	}
	assert_int_equal(get(name, &p, 12000, 0, NULL), CUDA_SUCCESS);
	return p;
}

/* F becomes the fake's entry point NAME (ISO C casts no void * to a function pointer). */
#define PROC(f, name) (*(void **)&(f) = proc(name))

/* CALL must be refused as a broken rule, and counted. */
#define REFUSED(call)                                              \
	do {                                                           \
		long long v = fake_get("violations");                      \
		assert_int_not_equal((call), CUDA_SUCCESS);                \
		assert_int_equal(fake_get("violations"), v + 1);           \
	} while (0)

/* The double itself: each documented rule it checks refuses an argument that breaks it. */
static void
test_fake_rules(void **state)
{
	PFN_cuTensorMapEncodeTiled_v12000 encode;
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuDevicePrimaryCtxRelease_v11000 release;
	PFN_cuCtxSetCurrent_v4000 set_current;
	PFN_cuModuleLoadData_v2000 load;
	PFN_cuModuleGetFunction_v2000 get_fn;
	PFN_cuModuleUnload_v2000 unload;
	PFN_cuFuncSetAttribute_v9000 set_attr;
	PFN_cuLaunchKernelEx_v11060 launch_ex;
	PFN_cuInit_v2000 init;
	static CUtensorMap map;
	static struct {
		Elf64_Ehdr h;
		char names[16];
	} image = {.h = {.e_ident = {0x7f, 'E', 'L', 'F', ELFCLASS64}, .e_machine = EM_CUDA,
	                 .e_shoff = sizeof(Elf64_Ehdr) + 16}, .names = "\0kern\0"};
	const cuuint64_t dims[2] = {64, 64}, strides[1] = {128}, odd[1] = {120}, zero[2] = {0, 64};
	const cuuint32_t box[2] = {64, 64}, wide[2] = {300, 1}, ones[2] = {1, 1}, nine[2] = {9, 1};
	void *addr = (void *)(uintptr_t)0x10000;
	CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	CUlaunchConfig cfg = {132, 1, 1, 128, 1, 1, 0, NULL, NULL, 0};
	void *params[1] = {NULL};
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;

	PROC(encode, "cuTensorMapEncodeTiled");
	PROC(retain, "cuDevicePrimaryCtxRetain");
	PROC(release, "cuDevicePrimaryCtxRelease");
	PROC(set_current, "cuCtxSetCurrent");
	PROC(load, "cuModuleLoadData");
	PROC(get_fn, "cuModuleGetFunction");
	PROC(unload, "cuModuleUnload");
	PROC(set_attr, "cuFuncSetAttribute");
	PROC(launch_ex, "cuLaunchKernelEx");
	PROC(init, "cuInit");
#define ENC(r, a, d, st, b, es, sw) \
	encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, r, a, d, st, b, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, \
	       CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
	assert_int_equal(ENC(2, addr, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE), CUDA_SUCCESS);
	REFUSED(ENC(6, addr, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, (char *)addr + 8, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, addr, zero, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, addr, dims, odd, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, addr, dims, strides, wide, ones, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, addr, dims, strides, box, nine, CU_TENSOR_MAP_SWIZZLE_NONE));
	REFUSED(ENC(2, addr, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_64B));   /* 128-byte inner box */
#undef ENC

	assert_int_equal(init(0), CUDA_SUCCESS);
	assert_int_equal(retain(&ctx, 0), CUDA_SUCCESS);
	assert_int_equal(set_current(ctx), CUDA_SUCCESS);
	assert_int_equal(load(&mod, &image), CUDA_SUCCESS);
	REFUSED(get_fn(&fn, mod, "other"));
	assert_int_equal(get_fn(&fn, mod, "kern"), CUDA_SUCCESS);
	assert_int_equal(launch_ex(&cfg, fn, params, NULL), CUDA_SUCCESS);
	cfg.blockDimX = 2048;
	REFUSED(launch_ex(&cfg, fn, params, NULL));
	cfg.blockDimX = 128;
	cfg.sharedMemBytes = 64 * 1024;   /* above the default 48 KiB, not raised */
	REFUSED(launch_ex(&cfg, fn, params, NULL));
	assert_int_equal(set_attr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024), CUDA_SUCCESS);
	assert_int_equal(launch_ex(&cfg, fn, params, NULL), CUDA_SUCCESS);
	REFUSED(set_attr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024));
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	attr.value.clusterDim.x = 16, attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
	cfg.gridDimX = 128;
	REFUSED(launch_ex(&cfg, fn, params, NULL));   /* 16 CTAs: not portable */
	attr.value.clusterDim.x = 3;
	REFUSED(launch_ex(&cfg, fn, params, NULL));   /* 128 CTAs in clusters of 3 */
	attr.value.clusterDim.x = 2;
	assert_int_equal(launch_ex(&cfg, fn, params, NULL), CUDA_SUCCESS);
	assert_int_equal(unload(mod), CUDA_SUCCESS);
	REFUSED(launch_ex(&cfg, fn, params, NULL));   /* its module is gone */
	assert_int_equal(set_current(NULL), CUDA_SUCCESS);
	assert_int_equal(release(0), CUDA_SUCCESS);
	fake_set("reset", 0);
}

/*
 * Every example, and a few specs of each matmul variant, launched twice
 * (the second reuses the tensor maps): every encode and launch keeps the
 * driver's rules, and each launch reaches the driver.
 */
static void
test_specs(void **state)
{
	static const char *const more[] = {
		"tests/gpu/specs/gemm_streamk.yaml", "tests/gpu/specs/gemm_cluster.yaml",
		"tests/gpu/specs/gemm_split.yaml", "tests/gpu/specs/gemm_pingpong.yaml",
		"tests/gpu/specs/gemm_bmm.yaml", "tests/gpu/specs/gemm_swap.yaml",
		"tests/gpu/specs/gemm_kn.yaml", "tests/gpu/specs/gemm_ta.yaml",
		"tests/gpu/specs/gemm_bmm_t.yaml", "tests/gpu/specs/gemm_cluster_2d.yaml",
		"tests/gpu/specs/gemm_split_cluster.yaml", "tests/gpu/specs/gemm_accumulate.yaml",
		"tests/gpu/specs/gemm_consumer.yaml", "tests/gpu/specs/gemm_signal.yaml",
		"tests/gpu/specs/gemm_wait.yaml", "tests/gpu/specs/gemm_streamk_bmm.yaml",
		"tests/gpu/specs/swiglu_pingpong.yaml", "tests/gpu/specs/norm_layernorm.yaml",
		"tests/gpu/specs/relu_chain_tma_ws.yaml", "tests/gpu/specs/pw_signal_ws.yaml",
		"tests/gpu/specs/stages4_ws_tma.yaml", "tests/gpu/specs/bcast_pw_5d.yaml",
		"tests/gpu/specs/bcast_row_4d.yaml", "tests/gpu/specs/bcast_bmm.yaml",
	};
	Seen seen;
	WsfContext *ctx;
	glob_t g;
	size_t i;
	int n = 0;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	assert_int_equal(glob("examples/*.yaml", 0, NULL, &g), 0);
	for (i = 0; i < g.gl_pathc + sizeof more / sizeof more[0]; i++) {
		const char *path = i < g.gl_pathc ? g.gl_pathv[i] : more[i - g.gl_pathc];
		WsfKernel *k = compile_file(ctx, path);
		long long launches = fake_get("launches");
		Args a;

		args_for(k, &a, NULL);
		for (int r = 0; r < 2; r++)
			if (launch(ctx, k, &a, r + 1) != WSF_OK)
				fail_msg("%s: %s (the fake libcuda: %s)", path, wsf_context_last_error(ctx), fake_last());
		expect_clean(path, 0);
		assert_int_equal(fake_get("launches"), launches + 2);
		wsf_kernel_delete(k);
		n++;
	}
	print_message("    %d specs launched\n", n);
	assert_int_equal(fake_get("modules"), 0);   /* each kernel's module unloaded with it */
	globfree(&g);
	wsf_context_delete(ctx);
}

/*
 * The measured choice keeps a candidate compiled apart; its schedule's
 * positions (a hint it adds is at the fusion's) must be its own, not the
 * first kernel's, which is freed: a cluster that fits no more at a later
 * launch is reported at that position (under ASan, a read of freed memory
 * without the fix).  The first kernel times the candidates (clusters
 * made fastest) and records the choice; the second reads the record.
 */
static void
test_tune_positions(void **state)
{
	const char *spec = "examples/gemm_bias_gelu.yaml";
	char rm[4200];
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;
	Args a;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	snprintf(rm, sizeof rm, "rm -rf '%s/tune'", cache);
	assert_int_equal(system(rm), 0);
	ctx = new_ctx(&seen);
	assert_int_equal(wsf_set_option(ctx, "tune", "1"), WSF_OK);
	fake_set("cluster_us", 1);
	k = compile_file(ctx, spec);
	args_for(k, &a, NULL);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, NULL), WSF_OK);
	fake_set("cluster_us", 10);
	assert_non_null(wsf_kernel_tuned(k));
	print_message("    chose %s\n", wsf_kernel_tuned(k));
	assert_non_null(strstr(wsf_kernel_tuned(k), "cluster"));
	wsf_kernel_delete(k);

	k = compile_file(ctx, spec);
	fake_set("max_clusters", 0);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, NULL), WSF_ERR_INPUT);
	fake_set("max_clusters", -1);
	assert_non_null(strstr(wsf_kernel_tuned(k), "cluster"));
	assert_non_null(strstr(seen.last, "no cluster of"));
	if (strncmp(seen.last, "examples/gemm_bias_gelu.yaml:", strlen("examples/gemm_bias_gelu.yaml:")) != 0)
		fail_msg("the diagnostic is not at the spec's position: %s", seen.last);
	wsf_kernel_delete(k);
	expect_clean(spec, 0);
	wsf_context_delete(ctx);
}

/*
 * Stream-K keeps a workspace for a few streams, not each stream ever seen:
 * 500 streams hold what 6 do (WS_KEEP, the spare, and slack), each new
 * one ordered after the launches of the one whose workspace it takes, and
 * a stream taken back after its workspace went to another still launches.
 */
static void
test_stream_k_workspaces(void **state)
{
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;
	long long one, peak;
	Args a;
	int i;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	k = compile_file(ctx, "tests/gpu/specs/gemm_streamk.yaml");
	args_for(k, &a, NULL);
	fake_set("max_held", (long long)1 << 30);   /* without a bound, 500 workspaces would take 8 GB */
	fake_set("reset", 0);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)16), WSF_OK);
	one = fake_get("held");   /* the first stream's and the spare */
	assert_true(one > 0);
	for (i = 1; i < 500; i++)
		if (wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)(16 + 16 * i)) != WSF_OK)
			fail_msg("stream %d: %s", i, wsf_context_last_error(ctx));
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)16), WSF_OK);
	peak = fake_get("peak");
	print_message("    one stream: %lld bytes; 500 streams: at most %lld\n", one, peak);
	assert_true(peak <= 3 * one);
	/* a stream that takes another's waits for that one's launches on the device, not the host */
	assert_true(fake_get("waits") >= 496);
	assert_true(fake_get("syncs") < 10);
	expect_clean("500 streams", 0);
	wsf_kernel_delete(k);
	assert_int_equal(fake_get("held"), 0);
	fake_set("max_held", -1);
	wsf_context_delete(ctx);
}

/*
 * SPECS launched on the fake driver, one after another: each clean, with
 * the stream's workspace held, a grid of 1..1024 CTAs (ir.h's SK_MAX_CTAS);
 * COOPERATIVE: launched as a cooperative grid of 2 or more (a barrier of
 * the grid), again under a capture's first launch (no workspace).
 */
static void
launch_workspaces(const char *const *specs, size_t n, bool cooperative)
{
	Seen seen;
	WsfContext *ctx;
	size_t i;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	for (i = 0; i < n; i++) {
		WsfKernel *k = compile_file(ctx, specs[i]);
		long long before = fake_get("violations");
		Args a;

		args_for(k, &a, NULL);
		fake_set("reset", 0);
		if (wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)16) != WSF_OK)
			fail_msg("%s: %s", specs[i], wsf_context_last_error(ctx));
		expect_clean(specs[i], before);
		assert_true(fake_get("held") > 0);   /* the stream's workspace (and the spare) */
		assert_in_range(fake_get("grid"), cooperative ? 2 : 1, 1024);
		assert_int_equal(fake_get("cooperative"), cooperative);
		if (cooperative) {
			fake_set("capturing", 32);
			assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)32), WSF_OK);
			fake_set("capturing", 0);
			expect_clean(specs[i], before);
			assert_int_equal(fake_get("cooperative"), 1);
		}
		wsf_kernel_delete(k);
		assert_int_equal(fake_get("held"), 0);
	}
	wsf_context_delete(ctx);
}

static void
test_reduce_workspaces(void **state)
{
	static const char *const specs[] = {"tests/gpu/specs/colsum.yaml", "tests/gpu/specs/mean_mid.yaml",
	                                    "tests/gpu/specs/amax_2d.yaml", "examples/norm_weight_grads.yaml"};

	launch_workspaces(specs, sizeof specs / sizeof *specs, false);
}

/*
 * A row kernel with sums over the rows (a norm's backward in one pass, a
 * loss's mean) meets at a barrier of the grid: its launch is cooperative
 * (every CTA resident, or the driver refuses it: the fake counts a larger
 * grid as a violation), with the stream's workspace, and still under a
 * capture's first launch, which has none.
 */
static void
test_outer_sums_launch(void **state)
{
	static const char *const specs[] = {"examples/layernorm_backward.yaml", "tests/golden/rmsnorm_backward.yaml",
	                                    "tests/gpu/specs/rows_and_cols.yaml", "tests/gpu/specs/ce_mean.yaml"};

	launch_workspaces(specs, sizeof specs / sizeof *specs, true);
}

/*
 * A workspace a capture took is the graph's: however many streams come
 * after, it is neither taken by another nor freed, so the kernel holds the
 * four streams' (WS_KEEP), the spare and the graph's.
 */
static void
test_stream_k_capture(void **state)
{
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;
	long long ws;
	Args a;
	int i;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	k = compile_file(ctx, "tests/gpu/specs/gemm_streamk.yaml");
	args_for(k, &a, NULL);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)16), WSF_OK);
	ws = fake_get("held") / 2;   /* the stream's and the spare */
	fake_set("capturing", 32);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)32), WSF_OK);
	assert_int_equal(fake_get("held"), 2 * ws);   /* the spare taken, none made under the capture */
	fake_set("capturing", 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)(48 + 16 * i)), WSF_OK);
	assert_int_equal(fake_get("held"), 6 * ws);
	assert_int_equal(wsf_kernel_launch(ctx, k, a.t, a.n, (void *)(uintptr_t)32), WSF_OK);
	assert_int_equal(fake_get("held"), 6 * ws);
	expect_clean("capture", 0);
	wsf_kernel_delete(k);
	assert_int_equal(fake_get("held"), 0);
	wsf_context_delete(ctx);
}

static const char bias_add[] =
	"fusion: bias_add\nsizes: {M: 64, N: 8}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: bf16, shape: [N]}\nops:\n  - {out: y, op: add, in: [x, b]}\noutputs:\n  y: {dtype: bf16}\n";
static const char flat_add[] =
	"fusion: flat_add\nsizes: {M: 64, N: 8}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  z: {dtype: bf16, shape: [M, N]}\nops:\n  - {out: y, op: add, in: [x, z]}\noutputs:\n  y: {dtype: bf16}\n";
static const char gemm[] =
	"fusion: gemm\nsizes: {M: 256, N: 256, K: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	"  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"outputs:\n  y: {dtype: bf16}\n";
static const char gemm_np[] =
	"fusion: gemm_np\nsizes: {M: 1024, N: 1024, K: 256}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	"  w: {dtype: bf16, shape: [N, K]}\nops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"
	"outputs:\n  y: {dtype: bf16}\nschedule: {persistent: false, cluster: [2, 1]}\n";
static const char rms[] =
	"fusion: rms\nsizes: {M: 64, N: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  w: {dtype: bf16, shape: [N]}\nops:\n  - {out: y, op: rmsnorm, in: [x, w], eps: 1e-6}\n"
	"outputs:\n  y: {dtype: bf16}\n";

/* K launched on SHAPES: WSF_OK with no violation, or WSF_ERR_INPUT with each of WANT in the message. */
static void
expect_launch(WsfContext *ctx, Seen *seen, WsfKernel *k, const int64_t *const *shapes, const char *const *want)
{
	long long before = fake_get("violations");
	WsfStatus s;
	Args a;

	args_for(k, &a, shapes);
	seen->last[0] = 0;
	s = wsf_kernel_launch(ctx, k, a.t, a.n, NULL);
	expect_clean(wsf_kernel_name(k), before);
	if (!want) {
		if (s != WSF_OK)
			fail_msg("%s: %s", wsf_kernel_name(k), wsf_context_last_error(ctx));
		return;
	}
	assert_int_equal(s, WSF_ERR_INPUT);
	for (; *want; want++)
		if (!strstr(seen->last, *want))
			fail_msg("'%s' is not in: %s", *want, seen->last);
}

/*
 * TMA's coordinates are signed 32-bit: a tensor map past 2^31 rows (a row
 * broadcast of [2^31 + 64, 8] has no flat view) is refused, naming the
 * tensor, its size and the limit; the flat view of the same elements, and
 * exactly 2^31 rows, launch.  Matmul M, N and K, and row reductions, too.
 */
/*
 * Slices of the last dim (rows wider than a row) launch where the kernel
 * moves them through tensor maps of their rows, and the fake driver, which
 * checks every encoded stride against the dims and 16 bytes, takes the maps:
 * a flat kernel's input, a matmul's operands and its output.  One read
 * through the pointer (a broadcast row kernel's output, stored from
 * registers) is refused before the driver sees it.
 */
static void
test_row_strided(void **state)
{
	int64_t mn[] = {64, 8}, wide[] = {24, 1}, xk[] = {256, 128}, wk[] = {256, 128}, yk[] = {256, 256};
	int64_t xs[] = {192, 1}, ws[] = {136, 1}, ys[] = {512, 1};
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	k = compile_text(ctx, flat_add);
	{
		WsfTensor t[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, wide}, {DEV(2), WSF_DTYPE_BF16, 2, mn, NULL},
		                  {DEV(3), WSF_DTYPE_BF16, 2, mn, NULL}};

		assert_int_equal(wsf_kernel_arg_row_strided(k, 0), 1);
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 3, NULL), WSF_OK);
		expect_clean("a flat kernel's row-strided input", 0);
	}
	wsf_kernel_delete(k);
	k = compile_text(ctx, gemm);
	{
		WsfTensor t[3] = {{DEV(1), WSF_DTYPE_BF16, 2, xk, xs}, {DEV(2), WSF_DTYPE_BF16, 2, wk, ws},
		                  {DEV(3), WSF_DTYPE_BF16, 2, yk, ys}};

		assert_int_equal(wsf_kernel_launch(ctx, k, t, 3, NULL), WSF_OK);
		expect_clean("a matmul's row-strided operands and output", 0);
	}
	wsf_kernel_delete(k);
	k = compile_text(ctx, bias_add);
	{
		int64_t b8[] = {8};
		WsfTensor t[3] = {{DEV(1), WSF_DTYPE_BF16, 2, mn, NULL}, {DEV(2), WSF_DTYPE_BF16, 1, b8, NULL},
		                  {DEV(3), WSF_DTYPE_BF16, 2, mn, wide}};

		assert_int_equal(wsf_kernel_arg_row_strided(k, 2), 0);
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 3, NULL), WSF_ERR_INPUT);
		assert_non_null(strstr(seen.last, "argument 'y': its rows are 24 elements apart"));
	}
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

/*
 * An output written into an input (alias) launches with that input's
 * pointer for both, contiguous; another pointer, or rows wider than a row
 * for either, is refused before the driver sees the launch.
 */
static void
test_in_place(void **state)
{
	static const char kv[] =
		"fusion: kv\nsizes: {S: 64, T: 4}\ninputs:\n  cache: {dtype: bf16, shape: [S, 128]}\n"
		"  k: {dtype: bf16, shape: [T, 128]}\n  pos: {dtype: int32, shape: [T]}\nops:\n"
		"  - {out: c, op: index_copy, in: [cache, pos, k], dim: 0}\noutputs:\n  c: {alias: cache}\n";
	int64_t sc[] = {64, 128}, tk[] = {4, 128}, tp[] = {4}, wide[] = {256, 1};
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	k = compile_text(ctx, kv);
	{   /* -v's count: the part stored as rows at the index's rows */
		WsfKernelStats st;

		assert_int_equal(wsf_kernel_stats(k, &st), WSF_OK);
		assert_int_equal(st.place_rows, 1);
		assert_int_equal(st.place_elems, 0);
	}
	assert_int_equal(wsf_kernel_arg_alias(k, 3), 0);
	assert_int_equal(wsf_kernel_arg_alias(k, 0), -1);
	assert_int_equal(wsf_kernel_arg_alias(k, 4), -1);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 0), 0);
	assert_int_equal(wsf_kernel_arg_row_strided(k, 3), 0);
	{
		WsfTensor t[4] = {{DEV(1), WSF_DTYPE_BF16, 2, sc, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, tk, NULL},
		                  {DEV(3), WSF_DTYPE_INT32, 1, tp, NULL}, {DEV(1), WSF_DTYPE_BF16, 2, sc, NULL}};

		assert_int_equal(wsf_kernel_launch(ctx, k, t, 4, NULL), WSF_OK);
		expect_clean("an index_copy in place", 0);
		t[3].data = DEV(4);
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 4, NULL), WSF_ERR_INPUT);
		assert_non_null(strstr(seen.last, "argument 'c' is written into input 'cache' in place (alias): pass "
		                       "cache's memory, contiguous, for both (the pointers differ)"));
		t[3].data = DEV(1);
		t[0].strides = t[3].strides = wide;
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 4, NULL), WSF_ERR_INPUT);
		assert_non_null(strstr(seen.last, "(its rows are strided)"));
	}
	wsf_kernel_delete(k);
	{   /* a view of rows a runtime size apart, read 16 bytes at a time: refused where those rows are not */
		static const char rows[] =
			"fusion: rows\nsizes: {S: 64}\ninputs:\n  h: {dtype: bf16, shape: [64, S]}\nops:\n"
			"  - {out: u, op: slice, in: [h], dim: 0, start: 8, step: 2}\n  - {out: y, op: neg, in: [u]}\n"
			"outputs:\n  y: {}\n";
		int64_t h64[] = {64, 64}, y64[] = {28, 64}, h60[] = {64, 60}, y60[] = {28, 60};
		WsfTensor t[2] = {{DEV(1), WSF_DTYPE_BF16, 2, h64, NULL}, {DEV(2), WSF_DTYPE_BF16, 2, y64, NULL}};

		k = compile_text(ctx, rows);
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 2, NULL), WSF_OK);
		expect_clean("a view of rows a runtime size apart", 0);
		t[0].shape = h60;
		t[1].shape = y60;
		assert_int_equal(wsf_kernel_launch(ctx, k, t, 2, NULL), WSF_ERR_INPUT);
		assert_non_null(strstr(seen.last, "rows of 60 bf16 elements are 120 bytes, not a multiple of 16"));
		wsf_kernel_delete(k);
	}
	wsf_context_delete(ctx);
}

static void
test_huge_dims(void **state)
{
	int64_t x_big[] = {BIG(64), 8}, b8[] = {8}, x_edge[] = {BIG(0), 8}, odd[] = {1, BIG(1)};
	int64_t a_m[] = {BIG(128), 128}, w_n[] = {256, 128}, y_m[] = {BIG(128), 256};
	int64_t a_k[] = {256, BIG(64)}, w_k[] = {256, BIG(64)}, y_k[] = {256, 256};
	int64_t a_n[] = {256, 128}, w_big[] = {BIG(64), 128}, y_n[] = {256, BIG(64)};
	int64_t r_x[] = {BIG(1), 4096}, r_w[] = {4096};
	int64_t np_x[] = {BIG(0), 8}, np_w[] = {8192, 8}, np_y[] = {BIG(0), 8192};
	Seen seen;
	WsfContext *ctx;
	WsfKernel *k;

	if (!have_nvrtc())
		skip_because(NO_NVRTC);
	ctx = new_ctx(&seen);
	k = compile_text(ctx, bias_add);
	expect_launch(ctx, &seen, k, (const int64_t *const[]){x_big, b8, x_big},
	              (const char *const[]){"huge.yaml:4:", "input 'x'", "2147483712 rows", "2^31 (2147483648)",
	                                    "signed 32-bit", NULL});
	expect_launch(ctx, &seen, k, (const int64_t *const[]){x_edge, b8, x_edge}, NULL);
	wsf_kernel_delete(k);

	k = compile_text(ctx, flat_add);
	expect_launch(ctx, &seen, k, (const int64_t *const[]){x_big, x_big, x_big}, NULL);
	/* 2^31 + 1 elements have no factor of 8: one row, too long */
	expect_launch(ctx, &seen, k, (const int64_t *const[]){odd, odd, odd},
	              (const char *const[]){"input 'x'", "2147483649 columns in the kernel's 2-D view", NULL});
	wsf_kernel_delete(k);

	k = compile_text(ctx, gemm);
	expect_launch(ctx, &seen, k, (const int64_t *const[]){a_m, w_n, y_m},
	              (const char *const[]){"input 'x'", "2147483776 rows", "2^31", NULL});
	expect_launch(ctx, &seen, k, (const int64_t *const[]){a_n, w_big, y_n},
	              (const char *const[]){"input 'w'", "2147483712 rows", "2^31", NULL});
	expect_launch(ctx, &seen, k, (const int64_t *const[]){a_k, w_k, y_k},
	              (const char *const[]){"input 'x'", "2147483712 elements in its last dim", "2^31", NULL});
	wsf_kernel_delete(k);

	/* 2^30 cluster tiles of 2 CTAs, one a tile: more than a grid holds */
	k = compile_text(ctx, gemm_np);
	expect_launch(ctx, &seen, k, (const int64_t *const[]){np_x, np_w, np_y},
	              (const char *const[]){"a grid of 2147483648 CTAs", "2^31 - 1", NULL});
	wsf_kernel_delete(k);

	k = compile_text(ctx, rms);
	expect_launch(ctx, &seen, k, (const int64_t *const[]){r_x, r_w, r_x},
	              (const char *const[]){"2147483649", "2^31", NULL});
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_rules),
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_tune_positions),
		cmocka_unit_test(test_stream_k_workspaces),
		cmocka_unit_test(test_reduce_workspaces),
		cmocka_unit_test(test_outer_sums_launch),
		cmocka_unit_test(test_stream_k_capture),
		cmocka_unit_test(test_huge_dims),
		cmocka_unit_test(test_row_strided),
		cmocka_unit_test(test_in_place),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
