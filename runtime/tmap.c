/*
 * tmap.c: tensor-map (TMA descriptor) parameters, their checks, and encoding.
 *
 * rt_tmap_params is pure: it turns a row-major tensor (outermost dim first, as
 * the spec writes shapes) into cuTensorMapEncodeTiled's innermost-first
 * arrays and checks every rule the driver documents, so a user sees "input
 * 'b': row stride 2002 bytes ... make dim 1 a multiple of 8" instead of
 * CUDA_ERROR_INVALID_VALUE, and the checks are unit-tested without a GPU.
 * Dims in messages are numbered outermost first, as in the spec.
 *
 * The swizzle is the launch description's (LaunchParam.swizzle, chosen by
 * codegen as its shared-memory layouts lay the copies out): a span of 32, 64
 * or 128 bytes that holds the inner box, or none.  Encoding always uses no interleave, L2 promotion 128B, zero fill for
 * out-of-bounds elements and element strides of 1.  fp8, int8 and bool
 * travel as UINT8: TMA copies bytes (and has no fp8 or bool type); int32
 * and int64 as INT32 and INT64.
 */
#include <inttypes.h>
#include <string.h>

#include "runtime.h"

#define TMA_MAX_RANK 5
#define TMA_MAX_STRIDE ((uint64_t)1 << 40)
#define TMA_MAX_BOX 256
#define TMA_ALIGN 16

/* "input", "output" or "tensor": what NAME is in the fusion being launched, if known. */
static const char *
tensor_role(const Comp *c, const char *name)
{
	const Fusion *f = c->fusion;
	int i;

	for (i = 1; f && i < f->ntensor; i++) {
		if (strcmp(f->tensor[i].name, name) != 0)
			continue;
		if (f->tensor[i].kind == TK_INPUT)
			return "input";
		return fusion_output_of(f, i) >= 0 ? "output" : "tensor";
	}
	return "tensor";
}

/* Reports a broken TMA rule for tensor NAME; always WSF_ERR_INPUT. */
static WsfStatus PRINTF_LIKE(3, 4)
tmap_error(Comp *c, const char *name, const char *fmt, ...)
{
	Pos none = {0};
	Buf b;
	va_list ap;

	buf_init(&b, c->arena);
	buf_printf(&b, "%s '%s': ", tensor_role(c, name), name);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	diag_error(c, none, "%s", buf_str(&b));
	return WSF_ERR_INPUT;
}

/* A * B, or UINT64_MAX when that overflows (which every limit here rejects). */
static uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static WsfStatus
check_dims(Comp *c, const char *name, int rank, const int64_t *shape)
{
	int d;

	for (d = 0; d < rank; d++) {
		if (shape[d] <= 0)
			return tmap_error(c, name, "dim %d extent %" PRId64 " is not positive", d, shape[d]);
		if (shape[d] > TMA_MAX_COORD)
			return tmap_error(c, name,
			                  "dim %d extent %" PRId64 " is more than 2^31, the most TMA's "
			                  "signed 32-bit coordinates reach; split dim %d",
			                  d, shape[d], d);
	}
	return WSF_OK;
}

/* Byte strides of spec dims 0..rank-2, each checked; fills P->strides innermost first. */
static WsfStatus
check_strides(Comp *c, const char *name, Dtype dt, int rank, const int64_t *shape, TmapParams *p)
{
	int bytes = dtype_info[dt].bytes, d;
	uint64_t stride = (uint64_t)bytes;

	for (d = rank - 2; d >= 0; d--) {
		stride = mul_sat(stride, (uint64_t)shape[d + 1]);
		if (stride % TMA_ALIGN != 0 && d == rank - 2)
			return tmap_error(c, name,
			                  "row stride %" PRIu64 " bytes (dim %d extent %" PRId64
			                  " x %d bytes) is not a multiple of 16; make dim %d a multiple "
			                  "of %d for %s",
			                  stride, d + 1, shape[d + 1], bytes, d + 1, TMA_ALIGN / bytes,
			                  dtype_info[dt].name);
		if (stride % TMA_ALIGN != 0)
			return tmap_error(c, name,
			                  "stride of dim %d is %" PRIu64 " bytes, not a multiple of 16; "
			                  "make the product of dims %d..%d a multiple of %d for %s",
			                  d, stride, d + 1, rank - 1, TMA_ALIGN / bytes,
			                  dtype_info[dt].name);
		if (stride >= TMA_MAX_STRIDE)
			return tmap_error(c, name,
			                  "stride of dim %d is %" PRIu64 " bytes, not below TMA's limit "
			                  "of 2^40; the tensor is too large for one tensor map",
			                  d, stride);
		p->strides[rank - 2 - d] = stride;
	}
	return WSF_OK;
}

static WsfStatus
check_box(Comp *c, const char *name, Dtype dt, int rank, const int64_t *box)
{
	int bytes = dtype_info[dt].bytes, d;

	for (d = 0; d < rank; d++)
		if (box[d] < 1 || box[d] > TMA_MAX_BOX)
			return tmap_error(c, name,
			                  "box dim %d is %" PRId64 " elements; a TMA box holds 1..256 "
			                  "per dim; use a tile of at most 256 along dim %d",
			                  d, box[d], d);
	if (box[rank - 1] * bytes % TMA_ALIGN != 0)
		return tmap_error(c, name,
		                  "inner box of %" PRId64 " elements x %d bytes = %" PRId64 " bytes is "
		                  "not a multiple of 16; make the tile's dim %d a multiple of %d for %s",
		                  box[rank - 1], bytes, box[rank - 1] * bytes, rank - 1,
		                  TMA_ALIGN / bytes, dtype_info[dt].name);
	return WSF_OK;
}

/* TMA's swizzle of SPAN bytes (the launch description's), or -1 for no such swizzle. */
static int
swizzle_of(int span)
{
	switch (span) {
	case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
	case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
	case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
	case 0: return CU_TENSOR_MAP_SWIZZLE_NONE;
	default: return -1;
	}
}

WsfStatus
rt_tmap_params(Comp *c, const char *name, Dtype dt, int rank, const int64_t *shape,
               const int64_t *box, int swizzle, uint64_t addr, TmapParams *p)
{
	WsfStatus st;
	int bytes, d;

	memset(p, 0, sizeof *p);
	if (dt <= DT_NONE || dt >= DT_COUNT) {
		diag_internal(c, "rt_tmap_params", "tensor '%s' has no dtype", name);
		return WSF_ERR_INTERNAL;
	}
	bytes = dtype_info[dt].bytes;
	if (rank < 1 || rank > TMA_MAX_RANK)
		return tmap_error(c, name,
		                  "rank %d is outside TMA's 1..5; merge contiguous dims or use "
		                  "a non-TMA schedule",
		                  rank);
	if ((st = check_dims(c, name, rank, shape)) != WSF_OK)
		return st;
	if (addr % TMA_ALIGN != 0)
		return tmap_error(c, name,
		                  "address 0x%" PRIx64 " is not 16-byte aligned; pass a tensor whose "
		                  "data starts on a 16-byte boundary (a view must start a multiple "
		                  "of %d elements in for %s)",
		                  addr, TMA_ALIGN / bytes, dtype_info[dt].name);
	if ((st = check_strides(c, name, dt, rank, shape, p)) != WSF_OK)
		return st;
	if ((st = check_box(c, name, dt, rank, box)) != WSF_OK)
		return st;
	p->dtype = dt;
	p->rank = rank;
	for (d = 0; d < rank; d++) {
		p->dims[d] = (uint64_t)shape[rank - 1 - d];
		p->box[d] = (uint32_t)box[rank - 1 - d];
	}
	if (swizzle_of(swizzle) < 0 || box[rank - 1] * bytes > (swizzle ? swizzle : box[rank - 1] * bytes)) {
		diag_internal(c, "rt_tmap_params", "tensor '%s': a swizzle of %d bytes for an inner box of %lld bytes",
		              name, swizzle, (long long)(box[rank - 1] * bytes));
		return WSF_ERR_INTERNAL;
	}
	p->swizzle = (CUtensorMapSwizzle)swizzle_of(swizzle);
	return WSF_OK;
}

static CUtensorMapDataType
tma_type(Dtype dt)
{
	switch (dt) {
	case DT_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	case DT_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	case DT_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
	case DT_INT32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
	case DT_INT64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
	default: return CU_TENSOR_MAP_DATA_TYPE_UINT8;   /* fp8, int8, uint8, bool: bytes */
	}
}

static void
put_u64s(Buf *b, const char *what, const uint64_t *v, int n)
{
	int i;

	buf_printf(b, " %s=[", what);
	for (i = 0; i < n; i++)
		buf_printf(b, "%s%" PRIu64, i ? ", " : "", v[i]);
	buf_puts(b, "]");
}

/* Every argument cuTensorMapEncodeTiled got, for the failure message. */
static const char *
describe_call(Comp *c, const char *name, const TmapParams *p, void *addr)
{
	static const char *const swz[] = {"none", "32B", "64B", "128B"};
	uint64_t box[5];
	Buf b;
	int i;

	for (i = 0; i < p->rank; i++)
		box[i] = p->box[i];
	buf_init(&b, c->arena);
	buf_printf(&b, "cuTensorMapEncodeTiled(%s '%s': dtype=%s (CUtensorMapDataType %d) rank=%d "
	           "addr=%p", tensor_role(c, name), name, dtype_info[p->dtype].name,
	           (int)tma_type(p->dtype), p->rank, addr);
	put_u64s(&b, "dims", p->dims, p->rank);
	put_u64s(&b, "strides", p->strides, p->rank - 1);
	put_u64s(&b, "box", box, p->rank);
	buf_printf(&b, " elementStrides=1 interleave=none swizzle=%s l2promotion=128B "
	           "oobfill=none, innermost dim first)",
	           (unsigned)p->swizzle < 4 ? swz[p->swizzle] : "?");
	return buf_str(&b);
}

WsfStatus
rt_tmap_encode(Comp *c, const Driver *d, const char *name, const TmapParams *p, void *addr,
               CUtensorMap *map)
{
	static const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
	CUresult r;

	if ((uintptr_t)map % 64 != 0) {
		diag_internal(c, "rt_tmap_encode", "tensor map for '%s' at %p is not 64-byte aligned",
		              name, (void *)map);
		return WSF_ERR_INTERNAL;
	}
	r = d->cuTensorMapEncodeTiled(map, tma_type(p->dtype), (cuuint32_t)p->rank, addr, p->dims,
	                              p->strides, p->box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
	                              p->swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
	                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r == CUDA_SUCCESS)
		return WSF_OK;
	return rt_check(c, d, r, describe_call(c, name, p, addr));
}
