/*
 * test_tmap.c: runtime/tmap.c's parameters, checks and encoding, and rt_check.
 *
 * Every TMA rule gets a tensor that breaks it; its message must name the
 * tensor (as "input 'b'" when the Comp's fusion says what 'b' is) and the
 * values.  Encoding runs against a Driver whose entry points are fakes, which
 * is what the struct-of-pointers design allows on a machine with no GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "../../runtime/runtime.h"

#include "comp_init.h"

static void
assert_contains_all(const char *s, const char *const *parts)
{
	for (; *parts; parts++)
		assert_contains(s, *parts);
}

/* Runs rt_tmap_params and expects WSF_ERR_INPUT with every string of PARTS (NULL-ended). */
static void
expect_error(Dtype dt, int rank, const int64_t *shape, const int64_t *box, uint64_t addr,
             const char *const *parts)
{
	TmapParams p;
	Comp c;

	COMP_INIT(c);
	assert_int_equal(rt_tmap_params(&c, "t", dt, rank, shape, box, 0, addr, &p), WSF_ERR_INPUT);
	assert_int_equal(c.nerrors, 1);
	assert_contains(c.last_error, "tensor 't'");
	assert_contains_all(c.last_error, parts);
	arena_free(c.arena);
}

static void
test_params_ok(void **state)
{
	int64_t shape[2] = {1024, 4096}, box[2] = {64, 64};
	int64_t shape3[3] = {3, 5, 8}, box3[3] = {1, 5, 8};
	TmapParams p;
	Comp c;

	COMP_INIT(c);
	assert_int_equal(rt_tmap_params(&c, "a", DT_BF16, 2, shape, box, 128, 0x10000, &p), WSF_OK);
	assert_int_equal(p.rank, 2);
	assert_int_equal(p.dtype, DT_BF16);
	assert_int_equal(p.dims[0], 4096); /* innermost first */
	assert_int_equal(p.dims[1], 1024);
	assert_int_equal(p.strides[0], 8192);
	assert_int_equal(p.box[0], 64);
	assert_int_equal(p.box[1], 64);
	assert_int_equal(p.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);

	assert_int_equal(rt_tmap_params(&c, "x", DT_F32, 3, shape3, box3, 32, 0x20, &p), WSF_OK);
	assert_int_equal(p.dims[0], 8);
	assert_int_equal(p.dims[1], 5);
	assert_int_equal(p.dims[2], 3);
	assert_int_equal(p.strides[0], 32);
	assert_int_equal(p.strides[1], 160);
	assert_int_equal(p.box[2], 1);
	assert_int_equal(p.swizzle, CU_TENSOR_MAP_SWIZZLE_32B);
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

/* The map's swizzle is the description's span; one that cannot hold the inner box is an internal error. */
static void
test_swizzle_from_description(void **state)
{
	static const struct {
		Dtype dt;
		int64_t inner;
		int span;
		CUtensorMapSwizzle want;
	} cases[] = {
		{DT_BF16, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B},
		{DT_BF16, 32, 64, CU_TENSOR_MAP_SWIZZLE_64B},
		{DT_BF16, 16, 32, CU_TENSOR_MAP_SWIZZLE_32B},
		{DT_BF16, 8, 0, CU_TENSOR_MAP_SWIZZLE_NONE},
		{DT_BF16, 128, 0, CU_TENSOR_MAP_SWIZZLE_NONE},
		{DT_F32, 32, 128, CU_TENSOR_MAP_SWIZZLE_128B},
		{DT_FP8E4M3, 128, 128, CU_TENSOR_MAP_SWIZZLE_128B},
		{DT_F32, 256, 0, CU_TENSOR_MAP_SWIZZLE_NONE},
		{DT_BF16, 64, 0, CU_TENSOR_MAP_SWIZZLE_NONE},   /* a domain view's map of the same box */
	};
	int64_t shape[2] = {256, 256}, box[2];
	TmapParams p;
	Comp c;
	int i;

	COMP_INIT(c);
	for (i = 0; i < countof(cases); i++) {
		box[0] = 8;
		box[1] = cases[i].inner;
		assert_int_equal(rt_tmap_params(&c, "s", cases[i].dt, 2, shape, box, cases[i].span, 0, &p), WSF_OK);
		assert_int_equal(p.swizzle, cases[i].want);
	}
	box[1] = 128;   /* 256 bytes: past the widest span */
	assert_int_equal(rt_tmap_params(&c, "s", DT_BF16, 2, shape, box, 128, 0, &p), WSF_ERR_INTERNAL);
	box[1] = 48;
	assert_int_equal(rt_tmap_params(&c, "s", DT_BF16, 2, shape, box, 96, 0, &p), WSF_ERR_INTERNAL);
	arena_free(c.arena);
}

static void
test_rank(void **state)
{
	int64_t shape[6] = {2, 2, 2, 2, 2, 16}, box[6] = {1, 1, 1, 1, 1, 16};

	expect_error(DT_F32, 6, shape, box, 0, (const char *const[]){"rank 6", "1..5", NULL});
	expect_error(DT_F32, 0, shape, box, 0, (const char *const[]){"rank 0", NULL});
}

static void
test_dims(void **state)
{
	int64_t zero[2] = {0, 16}, huge[2] = {((int64_t)1 << 31) + 1, 16}, box[2] = {1, 16};
	int64_t edge[2] = {(int64_t)1 << 31, 16};
	TmapParams p;
	Comp c;

	expect_error(DT_F32, 2, zero, box, 0,
	             (const char *const[]){"dim 0 extent 0", "not positive", NULL});
	expect_error(DT_F32, 2, huge, box, 0,
	             (const char *const[]){"dim 0 extent 2147483649", "2^31", "signed 32-bit", "split dim 0", NULL});
	COMP_INIT(c);
	assert_int_equal(rt_tmap_params(&c, "e", DT_F32, 2, edge, box, 0, 0, &p), WSF_OK);
	arena_free(c.arena);
}

static void
test_address(void **state)
{
	int64_t shape[2] = {16, 16}, box[2] = {16, 16};

	expect_error(DT_BF16, 2, shape, box, 0x1008,
	             (const char *const[]){"address 0x1008", "16-byte aligned", "8 elements",
	                                   NULL});
}

static void
test_row_stride(void **state)
{
	int64_t shape[2] = {64, 1001}, box[2] = {64, 64};
	Fusion *f;
	TmapParams p;
	Comp c;

	/* with the fusion known, the message says what the tensor is */
	COMP_INIT(c);
	f = fusion_new(&c);
	fusion_add_tensor(&c, f, intern_cstr(c.strs, "b"), TK_INPUT, (Pos){0});
	c.fusion = f;
	assert_int_equal(rt_tmap_params(&c, "b", DT_BF16, 2, shape, box, 0, 0, &p), WSF_ERR_INPUT);
	assert_contains(c.last_error,
	                "input 'b': row stride 2002 bytes (dim 1 extent 1001 x 2 bytes) is not a "
	                "multiple of 16; make dim 1 a multiple of 8 for bf16");
	arena_free(c.arena);

	shape[1] = 1002;
	expect_error(DT_F32, 2, shape, box, 0,
	             (const char *const[]){"row stride 4008 bytes", "multiple of 4 for f32", NULL});
	shape[1] = 24;
	expect_error(DT_FP8E5M2, 2, shape, box, 0,
	             (const char *const[]){"row stride 24 bytes", "multiple of 16 for fp8e5m2",
	                                   NULL});
}

static void
test_stride_limit(void **state)
{
	int64_t shape[3] = {2, (int64_t)1 << 30, 1024}, box[3] = {1, 1, 64};

	expect_error(DT_F32, 3, shape, box, 0,
	             (const char *const[]){"stride of dim 0 is 4398046511104 bytes", "2^40", NULL});
}

static void
test_box(void **state)
{
	int64_t shape[2] = {512, 512}, big[2] = {257, 64}, zero[2] = {64, 0}, odd[2] = {64, 4};

	expect_error(DT_F32, 2, shape, big, 0,
	             (const char *const[]){"box dim 0 is 257", "1..256", NULL});
	expect_error(DT_F32, 2, shape, zero, 0, (const char *const[]){"box dim 1 is 0", NULL});
	expect_error(DT_BF16, 2, shape, odd, 0,
	             (const char *const[]){"inner box of 4 elements x 2 bytes = 8 bytes",
	                                   "multiple of 8 for bf16", NULL});
}

/* ---- encoding against a fake driver ---- */

static struct {
	int calls;
	CUtensorMapDataType type;
	cuuint32_t rank;
	cuuint64_t dims[5], strides[4];
	cuuint32_t box[5], estrides[5];
	CUtensorMapSwizzle swizzle;
	CUtensorMapL2promotion l2;
	CUtensorMapFloatOOBfill fill;
	CUtensorMapInterleave interleave;
	CUresult result;
} fake;

static CUresult
fake_encode(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
            const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
            const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
	fake.calls++;
	fake.type = type;
	fake.rank = rank;
	memcpy(fake.dims, dims, rank * sizeof *dims);
	memcpy(fake.strides, strides, (rank - 1) * sizeof *strides);
	memcpy(fake.box, box, rank * sizeof *box);
	memcpy(fake.estrides, estrides, rank * sizeof *estrides);
	fake.interleave = il;
	fake.swizzle = sw;
	fake.l2 = l2;
	fake.fill = fill;
	return fake.result;
}

static CUresult
fake_error_name(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
	return CUDA_SUCCESS;
}

static CUresult
fake_error_string(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_INVALID_VALUE ? "invalid argument" : "unknown error";
	return CUDA_SUCCESS;
}

static void
test_encode(void **state)
{
	int64_t shape[2] = {1024, 4096}, box[2] = {64, 64};
	Driver d = {0};
	CUtensorMap map;
	TmapParams p;
	Comp c;

	COMP_INIT(c);
	d.cuTensorMapEncodeTiled = fake_encode;
	d.cuGetErrorName = fake_error_name;
	d.cuGetErrorString = fake_error_string;
	memset(&fake, 0, sizeof fake);
	assert_int_equal(rt_tmap_params(&c, "w", DT_BF16, 2, shape, box, 128, 0x7f0000000000, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "w", &p, (void *)0x7f0000000000, &map), WSF_OK);
	assert_int_equal(fake.calls, 1);
	assert_int_equal(fake.type, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
	assert_int_equal(fake.rank, 2);
	assert_int_equal(fake.dims[0], 4096);
	assert_int_equal(fake.dims[1], 1024);
	assert_int_equal(fake.strides[0], 8192);
	assert_int_equal(fake.box[0], 64);
	assert_int_equal(fake.estrides[0], 1);
	assert_int_equal(fake.estrides[1], 1);
	assert_int_equal(fake.interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
	assert_int_equal(fake.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
	assert_int_equal(fake.l2, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
	assert_int_equal(fake.fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);

	/* fp8 travels as bytes */
	assert_int_equal(rt_tmap_params(&c, "q", DT_FP8E4M3, 2, shape, box, 0, 0, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "q", &p, NULL, &map), WSF_OK);
	assert_int_equal(fake.type, CU_TENSOR_MAP_DATA_TYPE_UINT8);
	/* so do int8, uint8 and bool; int32 and int64 have their types */
	assert_int_equal(rt_tmap_params(&c, "m", DT_BOOL, 2, shape, box, 0, 0, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "m", &p, NULL, &map), WSF_OK);
	assert_int_equal(fake.type, CU_TENSOR_MAP_DATA_TYPE_UINT8);
	assert_int_equal(rt_tmap_params(&c, "i", DT_INT32, 2, shape, box, 0, 0, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "i", &p, NULL, &map), WSF_OK);
	assert_int_equal(fake.type, CU_TENSOR_MAP_DATA_TYPE_INT32);
	assert_int_equal(rt_tmap_params(&c, "l", DT_INT64, 2, shape, box, 0, 0, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "l", &p, NULL, &map), WSF_OK);
	assert_int_equal(fake.type, CU_TENSOR_MAP_DATA_TYPE_INT64);
	assert_int_equal(fake.strides[0], 4096 * 8);

	/* a driver failure names the call, the error and every parameter */
	fake.result = CUDA_ERROR_INVALID_VALUE;
	assert_int_equal(rt_tmap_params(&c, "w", DT_BF16, 2, shape, box, 128, 0, &p), WSF_OK);
	assert_int_equal(rt_tmap_encode(&c, &d, "w", &p, (void *)0x1000, &map), WSF_ERR_CUDA);
	assert_contains(c.last_error, "cuTensorMapEncodeTiled(");
	assert_contains(c.last_error, "tensor 'w'");
	assert_contains(c.last_error, "dtype=bf16");
	assert_contains(c.last_error, "rank=2");
	assert_contains(c.last_error, "dims=[4096, 1024]");
	assert_contains(c.last_error, "strides=[8192]");
	assert_contains(c.last_error, "box=[64, 64]");
	assert_contains(c.last_error, "swizzle=128B");
	assert_contains(c.last_error, "CUDA_ERROR_INVALID_VALUE: invalid argument");
	arena_free(c.arena);
}

static void
test_check(void **state)
{
	Driver d = {0};
	Comp c;

	COMP_INIT(c);
	assert_int_equal(rt_check(&c, &d, CUDA_SUCCESS, "cuInit"), WSF_OK);
	assert_int_equal(c.nerrors, 0);
	/* without the name functions the code still comes through */
	assert_int_equal(rt_check(&c, &d, CUDA_ERROR_INVALID_VALUE, "cuMemAlloc"), WSF_ERR_CUDA);
	assert_contains(c.last_error, "cuMemAlloc: CUresult 1");
	d.cuGetErrorName = fake_error_name;
	d.cuGetErrorString = fake_error_string;
	assert_int_equal(rt_check(&c, &d, CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData"), WSF_ERR_CUDA);
	assert_contains(c.last_error, "cuModuleLoadData: CUDA_ERROR_INVALID_VALUE: invalid argument");
	assert_int_equal(rt_check(&c, NULL, CUDA_ERROR_INVALID_VALUE, "cuInit"), WSF_ERR_CUDA);
	arena_free(c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_ok),
		cmocka_unit_test(test_swizzle_from_description),
		cmocka_unit_test(test_rank),
		cmocka_unit_test(test_dims),
		cmocka_unit_test(test_address),
		cmocka_unit_test(test_row_stride),
		cmocka_unit_test(test_stride_limit),
		cmocka_unit_test(test_box),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
