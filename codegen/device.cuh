// wsfuse_device.cuh: device helpers every generated kernel holds.
//
// Thin, named wrappers over the PTX that Hopper's asynchronous machinery
// needs (mbarriers, TMA, bulk groups, proxy fences) and the f16/bf16
// conversions, so generated code reads as what it does.  The emitter
// inlines this file at the top of every kernel (codegen/emit.c), so the
// CUDA wsfuse writes compiles as it is, with NVRTC or nvcc; it needs no
// toolkit headers.

typedef unsigned short wsf_bf16;   // storage of a bfloat16
typedef unsigned short wsf_f16;    // storage of an IEEE half
typedef unsigned long long wsf_u64;

// A CUtensorMap as the driver encodes it: 128 opaque bytes, 64-byte aligned.
struct __align__(64) WsfTensorMap {
	wsf_u64 opaque[16];
};

__device__ __forceinline__ unsigned wsf_smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

// ---- conversions: arithmetic is f32, storage rounds once (nearest even) ----

__device__ __forceinline__ float wsf_to_f32(float x) { return x; }
__device__ __forceinline__ float wsf_bf16_to_f32(wsf_bf16 x) { return __uint_as_float((unsigned)x << 16); }
__device__ __forceinline__ float wsf_f16_to_f32(wsf_f16 x)
{
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
	return f;
}
__device__ __forceinline__ wsf_bf16 wsf_f32_to_bf16(float f)
{
	wsf_bf16 h;
	asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}
__device__ __forceinline__ wsf_f16 wsf_f32_to_f16(float f)
{
	wsf_f16 h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}
// cast: round to the type, keep computing in f32
__device__ __forceinline__ float wsf_round_bf16(float f) { return wsf_bf16_to_f32(wsf_f32_to_bf16(f)); }
__device__ __forceinline__ float wsf_round_f16(float f) { return wsf_f16_to_f32(wsf_f32_to_f16(f)); }

// Scalar element access by storage type.
__device__ __forceinline__ float wsf_load1(const float *p) { return *p; }
__device__ __forceinline__ float wsf_load1(const wsf_bf16 *p) { return wsf_bf16_to_f32(*p); }
__device__ __forceinline__ float wsf_load1_f16(const wsf_f16 *p) { return wsf_f16_to_f32(*p); }
__device__ __forceinline__ void wsf_store1(float *p, float v) { *p = v; }
__device__ __forceinline__ void wsf_store1(wsf_bf16 *p, float v) { *p = wsf_f32_to_bf16(v); }
__device__ __forceinline__ void wsf_store1_f16(wsf_f16 *p, float v) { *p = wsf_f32_to_f16(v); }

// Eight consecutive elements, 16-byte aligned (two 16-byte accesses for f32).
__device__ __forceinline__ void wsf_load8(float v[8], const wsf_bf16 *p)
{
	uint4 u = *(const uint4 *)p;
	unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = __uint_as_float(w[i] << 16);
		v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}
__device__ __forceinline__ void wsf_load8_f16(float v[8], const wsf_f16 *p)
{
	uint4 u = *(const uint4 *)p;
	unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = wsf_f16_to_f32((wsf_f16)(w[i] & 0xffff));
		v[2 * i + 1] = wsf_f16_to_f32((wsf_f16)(w[i] >> 16));
	}
}
__device__ __forceinline__ void wsf_load8(float v[8], const float *p)
{
	float4 a = ((const float4 *)p)[0], b = ((const float4 *)p)[1];
	v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
	v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
__device__ __forceinline__ unsigned wsf_pack_bf16x2(float lo, float hi)
{
	unsigned r;
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}
__device__ __forceinline__ unsigned wsf_pack_f16x2(float lo, float hi)
{
	unsigned r;
	asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}
// One 16-byte global store.  Written in PTX: the compiler split a uint4
// assignment into four 4-byte stores, which quadrupled the L2 write requests.
__device__ __forceinline__ void wsf_st16(void *p, unsigned a, unsigned b, unsigned c, unsigned d)
{
	asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
	             : "memory");
}
// The same, not allocated in L1: for a store whose warp writes whole
// sectors (8 elements of 2 bytes a thread, contiguous), the L1 lines it would
// take evict what the kernel rereads there, the weights of a row
// normalization (H200: rmsnorm 5% faster, bf16 pointwise unchanged).  Not for
// 4-byte elements: their two stores a thread each write half of every sector,
// which L1 merges (without it, 12-20% slower).
__device__ __forceinline__ void wsf_st16_na(void *p, unsigned a, unsigned b, unsigned c, unsigned d)
{
	asm volatile("st.global.L1::no_allocate.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(a), "r"(b), "r"(c),
	             "r"(d) : "memory");
}
__device__ __forceinline__ void wsf_store8(wsf_bf16 *p, const float v[8])
{
	wsf_st16_na(p, wsf_pack_bf16x2(v[0], v[1]), wsf_pack_bf16x2(v[2], v[3]), wsf_pack_bf16x2(v[4], v[5]),
	            wsf_pack_bf16x2(v[6], v[7]));
}
__device__ __forceinline__ void wsf_store8_f16(wsf_f16 *p, const float v[8])
{
	wsf_st16_na(p, wsf_pack_f16x2(v[0], v[1]), wsf_pack_f16x2(v[2], v[3]), wsf_pack_f16x2(v[4], v[5]),
	            wsf_pack_f16x2(v[6], v[7]));
}
__device__ __forceinline__ void wsf_store8(float *p, const float v[8])
{
	wsf_st16(p, __float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
	wsf_st16(p + 4, __float_as_uint(v[4]), __float_as_uint(v[5]), __float_as_uint(v[6]),
	         __float_as_uint(v[7]));
}

// The same into a shared-memory staging tile (read by a TMA store).
__device__ __forceinline__ void wsf_sts16(void *p, unsigned a, unsigned b, unsigned c, unsigned d)
{
	asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(wsf_smem_addr(p)), "r"(a), "r"(b), "r"(c),
	             "r"(d) : "memory");
}
__device__ __forceinline__ void wsf_store8_smem(wsf_bf16 *p, const float v[8])
{
	wsf_sts16(p, wsf_pack_bf16x2(v[0], v[1]), wsf_pack_bf16x2(v[2], v[3]), wsf_pack_bf16x2(v[4], v[5]),
	          wsf_pack_bf16x2(v[6], v[7]));
}
__device__ __forceinline__ void wsf_store8_smem_f16(wsf_f16 *p, const float v[8])
{
	wsf_sts16(p, wsf_pack_f16x2(v[0], v[1]), wsf_pack_f16x2(v[2], v[3]), wsf_pack_f16x2(v[4], v[5]),
	          wsf_pack_f16x2(v[6], v[7]));
}
__device__ __forceinline__ void wsf_store8_smem(float *p, const float v[8])
{
	wsf_sts16(p, __float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
	wsf_sts16(p + 4, __float_as_uint(v[4]), __float_as_uint(v[5]), __float_as_uint(v[6]),
	          __float_as_uint(v[7]));
}

// ---- mbarriers ---------------------------------------------------------------

__device__ __forceinline__ void wsf_mbar_init(wsf_u64 *bar, unsigned arrivals)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(wsf_smem_addr(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void wsf_fence_mbar_init(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void wsf_mbar_arrive(wsf_u64 *bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(wsf_smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void wsf_mbar_expect_tx(wsf_u64 *bar, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
	             :: "r"(wsf_smem_addr(bar)), "r"(bytes) : "memory");
}
// Blocks until the phase with parity PARITY of BAR has completed.
__device__ __forceinline__ void wsf_mbar_wait(wsf_u64 *bar, unsigned parity)
{
	asm volatile(
		"{\n"
		".reg .pred done;\n"
		"wsf_wait_%=:\n"
		"mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
		"@!done bra wsf_wait_%=;\n"
		"}\n" :: "r"(wsf_smem_addr(bar)), "r"(parity) : "memory");
}

// ---- TMA ---------------------------------------------------------------------

// Loads the box at (col, row) of MAP into DST; completes on BAR with complete_tx.
__device__ __forceinline__ void wsf_tma_load_2d(void *dst, const WsfTensorMap *map, long long col,
                                                long long row, wsf_u64 *bar)
{
	asm volatile(
		"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
		" [%0], [%1, {%2, %3}], [%4];"
		:: "r"(wsf_smem_addr(dst)), "l"(map), "r"((int)col), "r"((int)row), "r"(wsf_smem_addr(bar))
		: "memory");
}
// Copies BYTES (a multiple of 16; both addresses 16-byte aligned) from global SRC
// to shared DST, a 1-D bulk copy by the TMA unit that completes on BAR.
__device__ __forceinline__ void wsf_bulk_load(void *dst, const void *src, unsigned bytes, wsf_u64 *bar)
{
	asm volatile(
		"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
		:: "r"(wsf_smem_addr(dst)), "l"(src), "r"(bytes), "r"(wsf_smem_addr(bar))
		: "memory");
}
// Stores SRC to the box at (col, row) of MAP; one bulk async-group per commit.
__device__ __forceinline__ void wsf_tma_store_2d(const WsfTensorMap *map, long long col, long long row,
                                                 const void *src)
{
	asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
	             :: "l"(map), "r"((int)col), "r"((int)row), "r"(wsf_smem_addr(src)) : "memory");
}
// Copies BYTES (a multiple of 16; both addresses 16-byte aligned) from shared SRC
// to global DST, a 1-D bulk copy by the TMA unit; one bulk async-group per commit.
__device__ __forceinline__ void wsf_bulk_store(void *dst, const void *src, unsigned bytes)
{
	asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
	             :: "l"(dst), "r"(wsf_smem_addr(src)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wsf_bulk_commit(void)
{
	asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Waits until at most N bulk groups are pending; READ: only until their sources were read.
template <int N> __device__ __forceinline__ void wsf_bulk_wait_read(void)
{
	asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void wsf_bulk_wait(void)
{
	asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
// wgmma's async groups: a fence orders register and generic-proxy writes before the next
// wgmma; a commit closes the group of those issued since the last; a wait leaves at most N pending.
__device__ __forceinline__ void wsf_mma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wsf_mma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wsf_mma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ void wsf_fence_proxy_async(void)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void wsf_prefetch_tmap(const WsfTensorMap *map)
{
	asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
}
// A barrier among THREADS threads of the CTA (a whole number of warps).
__device__ __forceinline__ void wsf_bar_sync(int id, int threads)
{
	asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// Eight consecutive elements from global memory through the read-only path
// (a weight or bias row every CTA reads: L1 and L2 keep it).
__device__ __forceinline__ uint4 wsf_ldg16(const void *p)
{
	uint4 u;
	asm volatile("ld.global.nc.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
	             : "l"(p));
	return u;
}
// L2 eviction policies for a row read more than once: each pass of a direct
// row kernel reads the row again; the passes before the last ask L2 to keep
// it (evict_last), the last lets it go (evict_first).
__device__ __forceinline__ wsf_u64 wsf_l2_keep(void)
{
	wsf_u64 p;
	asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
	return p;
}
__device__ __forceinline__ wsf_u64 wsf_l2_drop(void)
{
	wsf_u64 p;
	asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
	return p;
}
// wsf_ldg16 under an L2 policy.
__device__ __forceinline__ uint4 wsf_ldg16_l2(const void *p, wsf_u64 pol)
{
	uint4 u;
	asm volatile("ld.global.nc.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
	             : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol));
	return u;
}
// Eight 2-byte elements as stored (two a register) to f32.
__device__ __forceinline__ void wsf_unpack8(float v[8], uint4 u)
{
	unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = __uint_as_float(w[i] << 16);
		v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}
__device__ __forceinline__ void wsf_unpack8_f16(float v[8], uint4 u)
{
	unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = wsf_f16_to_f32((wsf_f16)(w[i] & 0xffff));
		v[2 * i + 1] = wsf_f16_to_f32((wsf_f16)(w[i] >> 16));
	}
}
// The first N (1..7) of eight 2-byte elements, as wsf_ldg16 returns them; the
// rest are zero.  A row's ragged end.
__device__ __forceinline__ uint4 wsf_ldg16_part(const unsigned short *p, int n)
{
	unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
	for (int i = 0; i < 8; i++)
		if (i < n)
			w[i / 2] |= (unsigned)p[i] << (16 * (i % 2));
	return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ void wsf_load8_global(float v[8], const wsf_bf16 *p) { wsf_unpack8(v, wsf_ldg16(p)); }
__device__ __forceinline__ void wsf_load8_global_f16(float v[8], const wsf_f16 *p) { wsf_unpack8_f16(v, wsf_ldg16(p)); }
// Eight f32 elements from two 16-byte loads.
__device__ __forceinline__ void wsf_unpack8_f32(float v[8], uint4 a, uint4 b)
{
	v[0] = __uint_as_float(a.x); v[1] = __uint_as_float(a.y); v[2] = __uint_as_float(a.z); v[3] = __uint_as_float(a.w);
	v[4] = __uint_as_float(b.x); v[5] = __uint_as_float(b.y); v[6] = __uint_as_float(b.z); v[7] = __uint_as_float(b.w);
}
__device__ __forceinline__ void wsf_load8_global(float v[8], const float *p)
{
	wsf_unpack8_f32(v, wsf_ldg16(p), wsf_ldg16(p + 4));
}
__device__ __forceinline__ void wsf_load8_global_l2(float v[8], const float *p, wsf_u64 pol)
{
	wsf_unpack8_f32(v, wsf_ldg16_l2(p, pol), wsf_ldg16_l2(p + 4, pol));
}

// ---- row reductions: every thread of the CTA calls these together ----

__device__ __forceinline__ float wsf_warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ float wsf_warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}
// The sum (or max) of V over the CTA, returned to every thread, at the cost of
// one __syncthreads.  SCRATCH holds one float per warp, and every thread reads
// it after the barrier, so the caller must not hand the same SCRATCH to another
// reduction before a further barrier has passed (generated code alternates
// two scratch arrays).
__device__ __forceinline__ float wsf_block_sum(float v, float *scratch)
{
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;

	v = wsf_warp_sum(v);
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	return wsf_warp_sum(lane < warps ? scratch[lane] : 0.0f);
}
__device__ __forceinline__ float wsf_block_max(float v, float *scratch)
{
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;

	v = wsf_warp_max(v);
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	return wsf_warp_max(lane < warps ? scratch[lane] : -__int_as_float(0x7f800000));
}
// A thread's part of a row reduction: the first min(N, 8) of V into ACC.
// A full group (N >= 8: every group but the last of a ragged row) takes a
// branch without per-element guards; the branch is the same for the whole
// warp but at the row's end.  The guarded loops are unrolled, not bounded by
// N, so V stays in registers (a loop bound the compiler cannot see puts V in
// local memory), and compare in 32 bits.
__device__ __forceinline__ float wsf_sum8(float acc, const float v[8], long long n)
{
	const int k = n < 8 ? (int)n : 8;

	if (k == 8) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc += v[i];
		return acc;
	}
#pragma unroll
	for (int i = 0; i < 8; i++)
		acc += i < k ? v[i] : 0.0f;
	return acc;
}
__device__ __forceinline__ float wsf_max8(float acc, const float v[8], long long n)
{
	const int k = n < 8 ? (int)n : 8;

	if (k == 8) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc = fmaxf(acc, v[i]);
		return acc;
	}
#pragma unroll
	for (int i = 0; i < 8; i++)
		acc = i < k ? fmaxf(acc, v[i]) : acc;
	return acc;
}
// Online softmax: the first min(N, 8) of V into a running max M and a sum S
// of exp(v - M) kept at M's scale (rescaled when M grows; M == MX, also when
// both are -inf, needs no rescale).
__device__ __forceinline__ void wsf_online8(float &m, float &s, const float v[8], long long n)
{
	const float mx = wsf_max8(m, v, n);
	const int k = n < 8 ? (int)n : 8;

	s *= m == mx ? 1.0f : __expf(m - mx);
#pragma unroll
	for (int i = 0; i < 8; i++)
		s += i < k ? __expf(v[i] - mx) : 0.0f;
	m = mx;
}
// A variance in one pass: the first min(N, 8) of V (N >= 1) into a thread's
// count C, mean M and sum of squared deviations Q.  The 8 values' own mean
// and deviations first (exact), then Chan's merge of the two sets.
__device__ __forceinline__ void wsf_welford8(float &c, float &m, float &q, const float v[8], long long n)
{
	const int kn = n < 8 ? (int)n : 8;
	const float k = (float)kn;
	float s = 0.0f, d2 = 0.0f;

#pragma unroll
	for (int i = 0; i < 8; i++)
		s += i < kn ? v[i] : 0.0f;
	const float m8 = kn == 8 ? s * 0.125f : s / k;
#pragma unroll
	for (int i = 0; i < 8; i++)
		d2 += i < kn ? (v[i] - m8) * (v[i] - m8) : 0.0f;
	const float t = c + k, d = m8 - m, r = 1.0f / t;
	m += d * k * r;
	q += d2 + d * d * c * k * r;
	c = t;
}

__device__ __forceinline__ long long wsf_ceildiv(long long a, long long b) { return (a + b - 1) / b; }
// Tile arithmetic: operands are non-negative and below 2^32 (the host checks
// the tile count), so a 32-bit division does instead of a 64-bit one, which
// is a long software routine on the GPU.
__device__ __forceinline__ long long wsf_udiv(long long a, long long b) { return (unsigned)a / (unsigned)b; }
__device__ __forceinline__ long long wsf_umod(long long a, long long b) { return (unsigned)a % (unsigned)b; }
__device__ __forceinline__ long long wsf_min(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long wsf_max(long long a, long long b) { return a > b ? a : b; }
