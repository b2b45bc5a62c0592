// wsfuse_device.cuh: device helpers every generated kernel holds.
//
// Thin, named wrappers over the PTX that Hopper's asynchronous machinery
// needs (mbarriers, TMA, bulk groups, proxy fences, wgmma groups), the
// f16/bf16 conversions and 16-byte loads and stores, so generated code reads
// as what it does.  The emitter inlines this file at the top of every
// kernel, followed by the helpers of the kernel's family (device_FAMILY.cuh;
// EmitFamily.device), so the CUDA wsfuse writes compiles as it is, with
// NVRTC or nvcc; it needs no toolkit headers.

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
// Adds SRC to the box at (col, row) of MAP, element by element (an accumulating
// output: the TMA unit's reduce-add, atomic with other adds to the elements).
__device__ __forceinline__ void wsf_tma_add_2d(const WsfTensorMap *map, long long col, long long row,
                                               const void *src)
{
	asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
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

// L2 eviction policies (createpolicy): evict_last for data read again soon
// (a row kernel's passes before the last), evict_first for data read once
// (its last pass; a matmul's signal consumer reading a stored tile back).
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

// Global memory through L2 alone (ld.global.cg), for what this kernel's own
// TMA stores wrote: the signal consumer reading a stored tile back.  Not L1,
// whose line may hold another tile's columns from before they were stored;
// volatile, so no load moves above the barrier wait that publishes the tile.
__device__ __forceinline__ uint4 wsf_ldcg16(const void *p)
{
	uint4 u;
	asm volatile("ld.global.cg.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
	             : "l"(p));
	return u;
}
__device__ __forceinline__ float wsf_load1_cg(const float *p)
{
	float v;
	asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
	return v;
}
__device__ __forceinline__ float wsf_load1_cg(const wsf_bf16 *p)
{
	unsigned short v;
	asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
	return wsf_bf16_to_f32(v);
}
__device__ __forceinline__ float wsf_load1_cg_f16(const wsf_f16 *p)
{
	unsigned short v;
	asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
	return wsf_f16_to_f32(v);
}

// Programmatic dependent launch: a kernel launched with programmatic stream
// serialization may start while the grid before it in the stream finishes;
// wsf_grid_wait blocks until that grid has completed and its writes are
// visible (at once when there is none), wsf_grid_launch_dependents lets the
// next grid launch before this one ends.
__device__ __forceinline__ void wsf_grid_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void wsf_grid_launch_dependents(void) { asm volatile("griddepcontrol.launch_dependents;"); }

__device__ __forceinline__ long long wsf_ceildiv(long long a, long long b) { return (a + b - 1) / b; }
// Tile arithmetic: operands are non-negative and below 2^32 (the host checks
// the tile count), so a 32-bit division does instead of a 64-bit one, which
// is a long software routine on the GPU.
__device__ __forceinline__ long long wsf_udiv(long long a, long long b) { return (unsigned)a / (unsigned)b; }
__device__ __forceinline__ long long wsf_umod(long long a, long long b) { return (unsigned)a % (unsigned)b; }
__device__ __forceinline__ long long wsf_min(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long wsf_max(long long a, long long b) { return a > b ? a : b; }

// signal: per_tile.  Publishes an output tile: its flag word becomes EPOCH with
// release semantics at gpu scope, after the thread that committed the tile's
// TMA stores waited for them without .read (their completion makes the writes
// visible, PTX ISA 9.7.9.25).  A consumer acquires (ld.acquire.gpu until the
// word equals its epoch) and then reads the tile; one that reads it through TMA
// adds fence.proxy.async.global after the acquire.
__device__ __forceinline__ void wsf_signal(unsigned *flag, unsigned epoch)
{
	asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(epoch) : "memory");
}
// The same at system scope (signal: {per_tile, scope: system}): for a reader
// on another GPU (the flag in its memory, over NVLink) or the host.
__device__ __forceinline__ void wsf_signal_system(unsigned *flag, unsigned epoch)
{
	asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(flag), "r"(epoch) : "memory");
}
// Waits until *FLAG is EPOCH (an input's tile has been written: wait:
// per_tile), acquire at system scope, so what its writer stored before
// releasing the flag, on any GPU, is visible to this thread, and through
// the barrier after it to the others.  Backs off while it spins.
__device__ __forceinline__ void wsf_flag_wait(const unsigned *flag, unsigned epoch)
{
	unsigned v, ns = 32;

	for (;;) {
		asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
		if (v == epoch)
			return;
		__nanosleep(ns);
		if (ns < 1024)
			ns *= 2;
	}
}
// The same before TMA loads of what the flag publishes: the acquire orders
// this thread's generic-proxy view; the fence extends it to the async proxy
// its cp.async.bulk.tensor loads read through.
__device__ __forceinline__ void wsf_flag_wait_tma(const unsigned *flag, unsigned epoch)
{
	wsf_flag_wait(flag, epoch);
	asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Testing the signal's consumers (option store-delay): one call in four, by a
// hash of SEED, sleeps up to NS nanoseconds before its store.
__device__ __forceinline__ void wsf_store_delay(long long seed, unsigned ns)
{
	unsigned h = (unsigned)(((unsigned long long)seed * 0x9e3779b97f4a7c15ull) >> 32);

	if ((h & 3) == 0)
		for (unsigned slept = 0, want = (h >> 2) % ns; slept < want; slept += 1000)
			__nanosleep(1000);
}
