// device_matmul.cuh: the device helpers of matmul kernels: wgmma's shared-
// memory descriptors.  The wgmma instruction itself, whose operand list
// depends on the tile, is written into each kernel (codegen/emit_matmul.c).
// NVRTC gets these after device.cuh, in wsfuse_device.cuh.

// The descriptor of a K-major operand tile that TMA wrote with 128-byte
// swizzle: rows 128 bytes apart, 8-row groups 1024 bytes apart (SBO), the
// layout type SW128.  The tile must start on 1024 bytes (the swizzle's
// period); a k16 step inside the 128-byte row is +32 bytes of address.
__device__ __forceinline__ wsf_u64 wsf_mma_desc(const void *p)
{
	wsf_u64 a = wsf_smem_addr(p);

	return ((a & 0x3FFFF) >> 4) | ((wsf_u64)1 << 16) | ((wsf_u64)64 << 32) | ((wsf_u64)1 << 62);
}

// The descriptor of an MN-major operand tile (stored [K, M] or [K, N]: M or
// N contiguous) that TMA wrote with 128-byte swizzle in chunks of 64 MN
// elements: each chunk is BK rows of 128 bytes, CHUNK bytes long; in it
// 8-row groups of K are 1024 bytes apart (SBO), and chunks CHUNK bytes
// apart (LBO).  A k16 step is 16 rows: +2048 bytes of address.
template <int CHUNK>
__device__ __forceinline__ wsf_u64 wsf_mma_desc_mn(const void *p)
{
	wsf_u64 a = wsf_smem_addr(p);

	return ((a & 0x3FFFF) >> 4) | ((wsf_u64)(CHUNK >> 4) << 16) | ((wsf_u64)64 << 32) | ((wsf_u64)1 << 62);
}

// Two adjacent columns of an epilogue input in shared memory, as f32: a row
// input the consumers copied there (lower_matmul.c, stage_rows), or a full
// input's subtile a staging copy carries (KBuf.preload).  One 4-byte load of
// a 2-byte pair at an even column, 8 bytes of f32.
__device__ __forceinline__ void wsf_row_pair(const wsf_bf16 *p, float &a, float &b)
{
	const unsigned w = *(const unsigned *)p;

	a = __uint_as_float(w << 16);
	b = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void wsf_row_pair_f16(const wsf_f16 *p, float &a, float &b)
{
	const unsigned w = *(const unsigned *)p;

	a = wsf_f16_to_f32((wsf_f16)(w & 0xffffu));
	b = wsf_f16_to_f32((wsf_f16)(w >> 16));
}
__device__ __forceinline__ void wsf_row_pair(const float *p, float &a, float &b)
{
	const float2 v = *(const float2 *)p;

	a = v.x;
	b = v.y;
}

// The activations on the hardware tanh (MUFU.TANH, relative error at most
// 2^-11), one special-function instruction an element: the epilogue's forms
// where every output is 2-byte (emit_matmul.c, fast_form).  gelu's tanh
// form is 0.5 x (1 + tanh(x (sqrt(2/pi) + 0.044715 sqrt(2/pi) x^2))), the
// logistic 0.5 (1 + tanh(x / 2)).
__device__ __forceinline__ float wsf_tanh_approx(float x)
{
	float y;

	asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}
__device__ __forceinline__ float wsf_gelu_tanh_fast(float x)
{
	const float h = 0.5f * x;

	return fmaf(h, wsf_tanh_approx(x * fmaf(0.0356774081f, x * x, 0.797884561f)), h);
}
__device__ __forceinline__ float wsf_sigmoid_fast(float x) { return fmaf(0.5f, wsf_tanh_approx(0.5f * x), 0.5f); }
__device__ __forceinline__ float wsf_silu_fast(float x)
{
	const float h = 0.5f * x;

	return fmaf(h, wsf_tanh_approx(h), h);
}

// The compiler sees a wgmma write its accumulator registers when it issues,
// not when wgmma.wait_group shows them written: this empty asm, which
// "writes" each of the N registers after the wait, keeps every read of them
// below it (CUTLASS's warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void wsf_acc_fence(float *d)
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

// Pulls the box at (col, row) of MAP (batch Z: a 3-D map) into L2, where the
// loads that read it soon find it: a hint, which completes on nothing.
__device__ __forceinline__ void wsf_tma_prefetch_2d(const WsfTensorMap *map, long long col, long long row)
{
	asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
	             :: "l"(map), "r"((int)col), "r"((int)row) : "memory");
}
__device__ __forceinline__ void wsf_tma_prefetch_3d(const WsfTensorMap *map, long long col, long long row,
                                                    long long z)
{
	asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];"
	             :: "l"(map), "r"((int)col), "r"((int)row), "r"((int)z) : "memory");
}

// The 3-D forms of the TMA load, store and add (device.cuh), for a batched
// matmul's maps [batch, rows, cols]: the box at (col, row) of batch Z.
__device__ __forceinline__ void wsf_tma_load_3d(void *dst, const WsfTensorMap *map, long long col,
                                                long long row, long long z, wsf_u64 *bar)
{
	asm volatile(
		"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
		" [%0], [%1, {%2, %3, %4}], [%5];"
		:: "r"(wsf_smem_addr(dst)), "l"(map), "r"((int)col), "r"((int)row), "r"((int)z),
		   "r"(wsf_smem_addr(bar))
		: "memory");
}
__device__ __forceinline__ void wsf_tma_store_3d(const WsfTensorMap *map, long long col, long long row,
                                                 long long z, const void *src)
{
	asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
	             :: "l"(map), "r"((int)col), "r"((int)row), "r"((int)z), "r"(wsf_smem_addr(src)) : "memory");
}
__device__ __forceinline__ void wsf_tma_add_3d(const WsfTensorMap *map, long long col, long long row,
                                               long long z, const void *src)
{
	asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
	             :: "l"(map), "r"((int)col), "r"((int)row), "r"((int)z), "r"(wsf_smem_addr(src)) : "memory");
}

// Arrives on named barrier ID of THREADS without waiting: the signal half of
// a ping-pong's order barrier, whose other warpgroup waits with bar.sync.
__device__ __forceinline__ void wsf_bar_arrive(int id, int threads)
{
	asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// Two adjacent elements of an epilogue's full input, one global load: an
// epilogue thread's columns c and c + 1 of a row (fragment elements j and
// j + 1 for even j).  P is aligned to the pair.  The _cg forms read L2 only
// (an input that arrives while the kernel runs: no stale L1 line).
__device__ __forceinline__ void wsf_load2(const float *p, float &a, float &b)
{
	const float2 v = *(const float2 *)p;
	a = v.x, b = v.y;
}
__device__ __forceinline__ void wsf_load2(const wsf_bf16 *p, float &a, float &b)
{
	const unsigned u = *(const unsigned *)p;
	a = __uint_as_float(u << 16), b = __uint_as_float(u & 0xffff0000u);
}
__device__ __forceinline__ void wsf_load2_f16(const wsf_f16 *p, float &a, float &b)
{
	const unsigned u = *(const unsigned *)p;
	a = wsf_f16_to_f32((wsf_f16)(u & 0xffffu)), b = wsf_f16_to_f32((wsf_f16)(u >> 16));
}
__device__ __forceinline__ void wsf_load2_cg(const float *p, float &a, float &b)
{
	asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(p));
}
__device__ __forceinline__ void wsf_load2_cg(const wsf_bf16 *p, float &a, float &b)
{
	unsigned u;
	asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(u) : "l"(p));
	a = __uint_as_float(u << 16), b = __uint_as_float(u & 0xffff0000u);
}
__device__ __forceinline__ void wsf_load2_cg_f16(const wsf_f16 *p, float &a, float &b)
{
	unsigned u;
	asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(u) : "l"(p));
	a = wsf_f16_to_f32((wsf_f16)(u & 0xffffu)), b = wsf_f16_to_f32((wsf_f16)(u >> 16));
}

// Two adjacent elements of a staging subtile, one shared-memory store: an
// epilogue thread holds columns c and c + 1 of a row (fragment elements j and
// j + 1 for even j).  P is aligned to the pair.
__device__ __forceinline__ void wsf_store2(float *p, float a, float b) { *(float2 *)p = make_float2(a, b); }
__device__ __forceinline__ void wsf_store2(wsf_bf16 *p, float a, float b)
{
	unsigned u;
	asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(u) : "f"(a), "f"(b));
	*(unsigned *)p = u;
}
__device__ __forceinline__ void wsf_store2_f16(wsf_f16 *p, float a, float b)
{
	unsigned u;
	asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(u) : "f"(a), "f"(b));
	*(unsigned *)p = u;
}

// Element E of a staging copy written as TMA's SPAN-byte swizzle lays it out
// (SPAN 64 or 128, the copy 1024-byte aligned): the 16-byte chunk of each
// 128-byte line is XORed with the line's index within the swizzle atom.
// Elements E and E + 1 of an even E stay side by side.
template <int SPAN, int ESIZE> __device__ __forceinline__ int wsf_swizzle(int e)
{
	int b = e * ESIZE;

	return (b ^ (((b >> 7) & (SPAN / 16 - 1)) << 4)) / ESIZE;
}

// The signal consumer's traffic under an L2 policy (wsf_l2_drop: the tile
// it reads back and the outputs it writes are not read again by the kernel,
// while the operand tiles the raster keeps in L2 are).
__device__ __forceinline__ uint4 wsf_ldcg16_l2(const void *p, wsf_u64 pol)
{
	uint4 u;
	asm volatile("ld.global.cg.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
	             : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol));
	return u;
}
__device__ __forceinline__ void wsf_st16_l2(void *p, unsigned a, unsigned b, unsigned c, unsigned d, wsf_u64 pol)
{
	asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;"
	             :: "l"(p), "r"(a), "r"(b), "r"(c), "r"(d), "l"(pol) : "memory");
}

// ---- clusters (schedule: cluster [2, 1] or [1, 2]) ----------------------------

// This CTA's rank in its cluster.
__device__ __forceinline__ unsigned wsf_cluster_rank(void)
{
	unsigned r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}
// Every thread of every CTA of the cluster: what each did before (its
// barrier inits, its arrivals) is visible to all after.
__device__ __forceinline__ void wsf_cluster_sync(void)
{
	asm volatile("barrier.cluster.arrive.release;\n"
	             "barrier.cluster.wait.acquire;" ::: "memory");
}
// Arrives on the copy of BAR (this CTA's shared-memory address) in the CTA
// of rank LANE when LANE < N (a stage release: lane r of a warp tells rank
// r): one predicated instruction, no branch among a warpgroup's wgmmas.  At
// CTA scope, as CUTLASS's ClusterBarrier: the arrival orders no writes (the
// stage was only read, by wgmma, whose wait came before), and a release at
// cluster scope would fence every memory access of the thread first.
__device__ __forceinline__ void wsf_mbar_arrive_cluster(wsf_u64 *bar, unsigned lane, unsigned n)
{
	asm volatile("{\n"
	             ".reg .pred p;\n"
	             ".reg .b32 remote;\n"
	             "setp.lt.u32 p, %1, %2;\n"
	             "mapa.shared::cluster.u32 remote, %0, %1;\n"
	             "@p mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
	             "}" :: "r"(wsf_smem_addr(bar)), "r"(lane), "r"(n) : "memory");
}
// ---- a K-split's reduction (schedule: split_k) ------------------------------

// As wsf_mbar_wait, acquiring at cluster scope: what the other CTAs of the
// cluster wrote before their arrivals (released at cluster scope) is
// visible after it.
__device__ __forceinline__ void wsf_mbar_wait_cluster(wsf_u64 *bar, unsigned parity)
{
	asm volatile(
		"{\n"
		".reg .pred done;\n"
		"wsf_wait_%=:\n"
		"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
		"@!done bra wsf_wait_%=;\n"
		"}\n" :: "r"(wsf_smem_addr(bar)), "r"(parity) : "memory");
}
// Arrives on the copy of BAR (this CTA's shared-memory address) in the CTA
// of rank RANK, releasing at cluster scope: this thread's memory accesses
// before it (a partial sum written, or another CTA's read) are done for
// whoever's wait the arrival completes.
__device__ __forceinline__ void wsf_mbar_arrive_remote(wsf_u64 *bar, unsigned rank)
{
	asm volatile("{\n"
	             ".reg .b32 remote;\n"
	             "mapa.shared::cluster.u32 remote, %0, %1;\n"
	             "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
	             "}" :: "r"(wsf_smem_addr(bar)), "r"(rank) : "memory");
}
// The address of P (in this CTA's shared memory) in the shared memory of
// the CTA of rank RANK: a generic pointer, whose loads the compiler
// schedules as any others (all of them in flight at once).
__device__ __forceinline__ const float4 *wsf_map_rank(const float4 *p, unsigned rank)
{
	unsigned long long r;
	asm("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"((unsigned long long)p), "r"(rank));
	return (const float4 *)r;
}

// The TMA loads as multicasts: the box lands at DST, and completes on BAR,
// in every CTA of the cluster whose rank is a bit of MASK.
__device__ __forceinline__ void wsf_tma_load_2d_multicast(void *dst, const WsfTensorMap *map, long long col,
                                                          long long row, wsf_u64 *bar, unsigned short mask)
{
	asm volatile(
		"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
		" [%0], [%1, {%2, %3}], [%4], %5;"
		:: "r"(wsf_smem_addr(dst)), "l"(map), "r"((int)col), "r"((int)row), "r"(wsf_smem_addr(bar)), "h"(mask)
		: "memory");
}
__device__ __forceinline__ void wsf_tma_load_3d_multicast(void *dst, const WsfTensorMap *map, long long col,
                                                          long long row, long long z, wsf_u64 *bar,
                                                          unsigned short mask)
{
	asm volatile(
		"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
		" [%0], [%1, {%2, %3, %4}], [%5], %6;"
		:: "r"(wsf_smem_addr(dst)), "l"(map), "r"((int)col), "r"((int)row), "r"((int)z),
		   "r"(wsf_smem_addr(bar)), "h"(mask)
		: "memory");
}

// ---- stream-K (schedule: stream_k) ------------------------------------------

// The workspace WS begins with a 32-bit flag a CTA, FLAGS of them (the
// most a grid may have, so that they stay put whatever the grid), and then
// each CTA's slot of SLOT bytes.
__device__ __forceinline__ unsigned *wsf_sk_flag(unsigned char *ws, long long c)
{
	return (unsigned *)ws + c;
}
__device__ __forceinline__ unsigned char *wsf_sk_slot(unsigned char *ws, int flags, int slot, long long c)
{
	return ws + 4LL * flags + c * slot;
}
// Sets FLAG to 1, a release at gpu scope: what the CTA's consumers wrote
// before the barrier this thread passed is visible to whoever acquires it.
__device__ __forceinline__ void wsf_sk_post(unsigned *flag)
{
	asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(1u) : "memory");
}
// Waits until FLAG is 1 (acquire at gpu scope), then sets it back to 0:
// each flag is taken once a launch, so every launch starts on zeros.
__device__ __forceinline__ void wsf_sk_take(unsigned *flag)
{
	unsigned v, ns = 32;

	for (;;) {
		asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
		if (v)
			break;
		__nanosleep(ns);
		if (ns < 512)
			ns *= 2;
	}
	asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(0u) : "memory");
}
// Stream-K in fractions of a tile: one of a tile's parts has written its
// slot; COUNT (the tile's first CTA's flag) counts them, a release at gpu
// scope as wsf_sk_post's.
__device__ __forceinline__ void wsf_sk_arrive(unsigned *count)
{
	asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(count), "r"(1u) : "memory");
}
// Waits until all N parts of the tile have arrived on COUNT (acquire at gpu
// scope; polled without a pause: the parts end their k loops together, and
// a sleep's wake-up cost 0.5 us of 13 at 128 x 1280 x 8192, docs/perf.md).
// DONE (the next flag, a part's that counts none) counts the READERS that
// wait; the last sets both back to 0, after every reader has seen N, so
// every launch starts on zeros.
__device__ __forceinline__ void wsf_sk_gather(unsigned *count, unsigned n, unsigned *done, unsigned readers)
{
	unsigned v;

	do
		asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
	while (v != n);
	if (atomicAdd(done, 1u) == readers - 1) {
		asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(count), "r"(0u) : "memory");
		asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(done), "r"(0u) : "memory");
	}
}
