/*
 * test_driver.c: runtime/driver.c, and tensor maps on a real GPU when there is one.
 *
 * Without a GPU (the build machine) rt_driver_open must fail cleanly with
 * WSF_ERR_NO_GPU and a message that says why and what to set; a bad
 * WSFUSE_LIBCUDA_PATH and the toolkit's stub libcuda must too.  With an
 * sm_90 GPU the GPU test opens the driver, compiles a TMA copy kernel with
 * rt_compile, encodes a tensor map with rt_tmap_params/rt_tmap_encode, and
 * checks that the tile landed where the parameters say (out-of-bounds
 * elements read as zeros); it skips without one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"
#include "skip_because.h"

static void
test_open(void **state)
{
	Driver *d = (Driver *)1;
	WsfStatus st;
	Comp c;

	COMP_INIT(c);
	unsetenv("WSFUSE_LIBCUDA_PATH");
	st = rt_driver_open(&c, &d);
	if (st == WSF_OK) {
		/* a usable GPU: it must be an sm_90 with a current context */
		print_message("    GPU: %d SMs, %d bytes smem opt-in, driver %d\n", d->sm_count,
		              d->smem_optin, d->version);
		assert_int_equal(d->cc_major, 9);
		assert_int_equal(d->cc_minor, 0);
		assert_true(d->sm_count > 0);
		assert_true(d->smem_optin >= 200 * 1024);
		assert_true(d->version >= 12000);
		assert_non_null(d->ctx);
		rt_driver_close(d);
	} else {
		assert_int_equal(st, WSF_ERR_NO_GPU);
		assert_null(d);
		assert_int_equal(c.nerrors, 1);
		assert_contains(c.last_error, "no usable GPU");
		print_message("    %s\n", c.last_error);
	}
	arena_free(c.arena);
}

/* Skips a GPU case, with why the driver did not open (its error, not the hint after ";"). */
static void
no_driver(Comp *c)
{
	const char *e = c->last_error ? c->last_error : "the driver did not open";
	char why[256];

	if (strstr(e, "error: "))
		e = strstr(e, "error: ") + strlen("error: ");
	snprintf(why, sizeof why, "%.*s", (int)strcspn(e, ";\n"), e);
	arena_free(c->arena);
	skip_because("%s", why);
}

/*
 * Two drivers of one process share the device's primary context (the
 * first makes it current, the second finds it so); closing the first must
 * not destroy it under the second, which still allocates (the measured
 * choice of wsf_kernel_run frees its arguments' driver before the run).
 */
static void
test_two_drivers(void **state)
{
	Driver *a = NULL, *b = NULL;
	CUdeviceptr p = 0;
	CUcontext cur = NULL;
	Comp c;

	COMP_INIT(c);
	unsetenv("WSFUSE_LIBCUDA_PATH");
	if (rt_driver_open(&c, &a) != WSF_OK)
		no_driver(&c);
	assert_int_equal(rt_driver_open(&c, &b), WSF_OK);
	assert_ptr_equal(a->ctx, b->ctx);
	rt_driver_close(a);
	assert_int_equal(b->cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	assert_ptr_equal(cur, b->ctx);
	assert_int_equal(b->cuMemAlloc(&p, 4096), CUDA_SUCCESS);
	assert_int_equal(b->cuMemsetD8(p, 0, 4096), CUDA_SUCCESS);
	assert_int_equal(b->cuCtxSynchronize(), CUDA_SUCCESS);
	assert_int_equal(b->cuMemFree(p), CUDA_SUCCESS);
	rt_driver_close(b);
	arena_free(c.arena);
}

static void
test_bad_libcuda_path(void **state)
{
	Driver *d = (Driver *)1;
	Comp c;

	COMP_INIT(c);
	setenv("WSFUSE_LIBCUDA_PATH", "/nonexistent/libcuda.so.1", 1);
	assert_int_equal(rt_driver_open(&c, &d), WSF_ERR_NO_GPU);
	unsetenv("WSFUSE_LIBCUDA_PATH");
	assert_null(d);
	assert_contains(c.last_error, "/nonexistent/libcuda.so.1");
	assert_contains(c.last_error, "WSFUSE_LIBCUDA_PATH");
	assert_contains(c.last_error, "LD_LIBRARY_PATH");
	arena_free(c.arena);
}

static void
expect_stub_refused(const char *stub)
{
	Driver *d;
	Comp c;

	COMP_INIT(c);
	setenv("WSFUSE_LIBCUDA_PATH", stub, 1);
	assert_int_equal(rt_driver_open(&c, &d), WSF_ERR_NO_GPU);
	unsetenv("WSFUSE_LIBCUDA_PATH");
	assert_null(d);
	assert_contains(c.last_error, "stub");
	arena_free(c.arena);
}

static void
test_stub_libcuda(void **state)
{
	static const char *const stubs[] = {
		"/usr/local/cuda/lib64/stubs/libcuda.so",
		"/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
	};
	struct stat st;
	int i;

	for (i = 0; i < countof(stubs); i++)
		if (stat(stubs[i], &st) == 0) {
			expect_stub_refused(stubs[i]);
			return;
		}
	skip_because("no stub libcuda.so under /usr/local/cuda");
}

/* ---- on a GPU ---- */

enum { ROWS = 13, COLS = 100, BOX_R = 4, BOX_C = 64 };

static const char *const tma_src =
	"struct __align__(64) TMap { unsigned long long w[16]; };\n"
	"extern \"C\" __global__ void tma_copy(const __grid_constant__ TMap m, float *out) {\n"
	"  __shared__ __align__(128) float tile[4 * 64];\n"
	"  __shared__ __align__(8) unsigned long long bar;\n"
	"  unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);\n"
	"  unsigned stile = (unsigned)__cvta_generic_to_shared(tile);\n"
	"  int r0 = blockIdx.y * 4, c0 = blockIdx.x * 64;\n"
	"  if (threadIdx.x == 0) {\n"
	"    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"(sbar));\n"
	"    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
	"  }\n"
	"  __syncthreads();\n"
	"  if (threadIdx.x == 0) {\n"
	"    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\"\n"
	"                 :: \"r\"(sbar), \"r\"(4 * 64 * 4) : \"memory\");\n"
	"    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
	"                 \" [%0], [%1, {%2, %3}], [%4];\"\n"
	"                 :: \"r\"(stile), \"l\"(&m), \"r\"(c0), \"r\"(r0), \"r\"(sbar) : \"memory\");\n"
	"  }\n"
	"  asm volatile(\"{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\"\n"
	"               \" @!p bra W%=; }\" :: \"r\"(sbar) : \"memory\");\n"
	"  for (int i = threadIdx.x; i < 4 * 64; i += blockDim.x) {\n"
	"    int r = r0 + i / 64, c = c0 + i % 64;\n"
	"    out[r * (gridDim.x * 64) + c] = tile[i];\n"
	"  }\n"
	"}\n";

typedef struct Gpu {
	Comp c;
	Driver *d;
	CUmodule mod;
	CUdeviceptr in, out;
} Gpu;

static void
gpu_close(Gpu *g)
{
	if (g->out)
		g->d->cuMemFree(g->out);
	if (g->in)
		g->d->cuMemFree(g->in);
	if (g->mod)
		g->d->cuModuleUnload(g->mod);
	rt_driver_close(g->d);
}

/* Loads the TMA copy kernel; runs it over a ROWS x COLS f32 tensor; checks every element. */
static void
run_tma_copy(Gpu *g, CUfunction fn)
{
	int gx = (COLS + BOX_C - 1) / BOX_C, gy = (ROWS + BOX_R - 1) / BOX_R;
	int64_t shape[2] = {ROWS, COLS}, box[2] = {BOX_R, BOX_C};
	size_t nout = (size_t)gx * BOX_C * gy * BOX_R;
	float host[ROWS * COLS], *got = calloc(nout, sizeof *got);
	CUtensorMap map;
	TmapParams p;
	CUlaunchConfig cfg = {0};
	void *args[2];
	Comp *c = &g->c;
	Driver *d = g->d;
	int i, r, col;

	assert_non_null(got);
	for (i = 0; i < ROWS * COLS; i++)
		host[i] = (float)i + 0.5f;
	assert_int_equal(rt_check(c, d, d->cuMemAlloc(&g->in, sizeof host), "cuMemAlloc"), WSF_OK);
	assert_int_equal(rt_check(c, d, d->cuMemAlloc(&g->out, nout * 4), "cuMemAlloc"), WSF_OK);
	assert_int_equal(rt_check(c, d, d->cuMemcpyHtoD(g->in, host, sizeof host), "cuMemcpyHtoD"),
	                 WSF_OK);
	assert_int_equal(rt_check(c, d, d->cuMemsetD8(g->out, 0xff, nout * 4), "cuMemsetD8"), WSF_OK);
	assert_int_equal(rt_tmap_params(c, "x", DT_F32, 2, shape, box, 0, (uint64_t)g->in, &p), WSF_OK);
	assert_int_equal(p.swizzle, CU_TENSOR_MAP_SWIZZLE_NONE);
	assert_int_equal(rt_tmap_encode(c, d, "x", &p, (void *)g->in, &map), WSF_OK);
	args[0] = &map;
	args[1] = &g->out;
	cfg.gridDimX = (unsigned)gx;
	cfg.gridDimY = (unsigned)gy;
	cfg.gridDimZ = 1;
	cfg.blockDimX = 128;
	cfg.blockDimY = 1;
	cfg.blockDimZ = 1;
	assert_int_equal(rt_check(c, d, d->cuLaunchKernelEx(&cfg, fn, args, NULL), "cuLaunchKernelEx"),
	                 WSF_OK);
	assert_int_equal(rt_check(c, d, d->cuCtxSynchronize(), "cuCtxSynchronize"), WSF_OK);
	assert_int_equal(rt_check(c, d, d->cuMemcpyDtoH(got, g->out, nout * 4), "cuMemcpyDtoH"),
	                 WSF_OK);
	for (r = 0; r < gy * BOX_R; r++)
		for (col = 0; col < gx * BOX_C; col++) {
			float want = r < ROWS && col < COLS ? host[r * COLS + col] : 0.0f;

			if (got[r * gx * BOX_C + col] != want)
				fail_msg("element (%d, %d): got %g, want %g", r, col,
				         (double)got[r * gx * BOX_C + col], (double)want);
		}
	free(got);
}

static void
test_gpu_tma_copy(void **state)
{
	RtOptions o = {NULL, 1, "/tmp", false, NULL};
	CUfunction fn;
	Cubin bin;
	Gpu g;
	Driver *d;

	memset(&g, 0, sizeof g);
	COMP_INIT(g.c);
	if (rt_driver_open(&g.c, &g.d) != WSF_OK)
		no_driver(&g.c);
	d = g.d;
	assert_int_equal(rt_compile(&g.c, &o, "tma_copy", tma_src, NULL, 0, &bin), WSF_OK);
	assert_int_equal(rt_check(&g.c, d, d->cuModuleLoadData(&g.mod, bin.cubin), "cuModuleLoadData"),
	                 WSF_OK);
	/* a failing call is named with the driver's error */
	assert_int_equal(rt_check(&g.c, d, d->cuModuleGetFunction(&fn, g.mod, "nope"),
	                          "cuModuleGetFunction"), WSF_ERR_CUDA);
	assert_contains(g.c.last_error, "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND");
	assert_int_equal(rt_check(&g.c, d, d->cuModuleGetFunction(&fn, g.mod, "tma_copy"),
	                          "cuModuleGetFunction"), WSF_OK);
	run_tma_copy(&g, fn);

	/* parameters the host checks would refuse reach the driver: it fails, we print them */
	{
		TmapParams bad = {DT_F32, 2, {COLS, ROWS}, {COLS * 4}, {300, 4}, CU_TENSOR_MAP_SWIZZLE_NONE};
		CUtensorMap map;

		assert_int_equal(rt_tmap_encode(&g.c, d, "x", &bad, (void *)g.in, &map), WSF_ERR_CUDA);
		assert_contains(g.c.last_error, "box=[300, 4]");
		assert_contains(g.c.last_error, "CUDA_ERROR_INVALID_VALUE");
	}
	gpu_close(&g);
	arena_free(g.c.arena);
}

/* The GPU test's kernel builds anywhere NVRTC does. */
static void
test_tma_kernel_compiles(void **state)
{
	RtOptions o = {NULL, 1, "/tmp", false, NULL};
	Cubin bin;
	Comp c;

	COMP_INIT(c);
	unsetenv("WSFUSE_NVRTC_PATH");
	if (rt_compile(&c, &o, "tma_copy", tma_src, NULL, 0, &bin) != WSF_OK &&
	    strstr(c.last_error, "cannot load NVRTC")) {
		arena_free(c.arena);
		skip_because("no NVRTC (cannot load it)");
	}
	assert_int_equal(c.nerrors, 0);
	assert_memory_equal(bin.cubin, "\x7f" "ELF", 4);
	arena_free(c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_two_drivers),
		cmocka_unit_test(test_bad_libcuda_path),
		cmocka_unit_test(test_stub_libcuda),
		cmocka_unit_test(test_tma_kernel_compiles),
		cmocka_unit_test(test_gpu_tma_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
