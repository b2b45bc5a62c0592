// device_reduction.cuh: the device helpers of row-reduction kernels: L2
// policies for a row read in every pass, a row's ragged end, and the block
// reductions.  A row kernel's CUDA holds them after device.cuh, inlined at
// its top (codegen_device_header).

// wsf_ldg16 under an L2 policy.
__device__ __forceinline__ uint4 wsf_ldg16_l2(const void *p, wsf_u64 pol)
{
	uint4 u;
	asm volatile("ld.global.nc.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
	             : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol));
	return u;
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
__device__ __forceinline__ void wsf_load8_global_l2(float v[8], const float *p, wsf_u64 pol)
{
	wsf_unpack8_f32(v, wsf_ldg16_l2(p, pol), wsf_ldg16_l2(p + 4, pol));
}

// x / s, correctly rounded, from r = 1 / s (correctly rounded, computed once a
// row): q = x r, then one correction q + (x - q s) r (Markstein), two fmas.
__device__ __forceinline__ float wsf_div_by(float x, float s, float r)
{
	const float q = x * r;

	return fmaf(fmaf(-q, s, x), r, q);
}

// ---- row reductions: every thread of the CTA calls these together ----

// The folds of the row reductions: each its identity and its combination
// (sum and mean, max, prod).
struct wsf_fold_sum {
	static __device__ __forceinline__ float id() { return 0.0f; }
	static __device__ __forceinline__ float f(float a, float b) { return a + b; }
};
struct wsf_fold_max {
	static __device__ __forceinline__ float id() { return -__int_as_float(0x7f800000); }
	static __device__ __forceinline__ float f(float a, float b) { return fmaxf(a, b); }
};
struct wsf_fold_prod {
	static __device__ __forceinline__ float id() { return 1.0f; }
	static __device__ __forceinline__ float f(float a, float b) { return a * b; }
};
// The fold F of V over each group of L lanes (L a power of 2, at most 32; a
// warp, or a row of RowPlan.lanes threads), returned to the group's every
// thread.  Every lane of the warp calls it together.
template <int L, class F> __device__ __forceinline__ float wsf_lanes(float v)
{
#pragma unroll
	for (int o = L / 2; o > 0; o >>= 1)
		v = F::f(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}
// The same over groups of L threads, L a multiple of 32 (a row of 64 to 256
// lanes): one __syncthreads, SCRATCH as wsf_block's.
template <int L, class F> __device__ __forceinline__ float wsf_group(float v, float *scratch)
{
	const int warp = threadIdx.x >> 5, first = warp / (L / 32) * (L / 32);

	v = wsf_lanes<32, F>(v);
	if ((threadIdx.x & 31) == 0)
		scratch[warp] = v;
	__syncthreads();
	v = F::id();
#pragma unroll
	for (int w = 0; w < L / 32; w++)
		v = F::f(v, scratch[first + w]);
	return v;
}
// The fold F of V over the CTA, returned to every thread, at the cost of one
// __syncthreads.  SCRATCH holds one float per warp, and every thread reads it
// after the barrier, so the caller must not hand the same SCRATCH to another
// reduction before a further barrier has passed (generated code alternates
// two scratch arrays).
template <class F> __device__ __forceinline__ float wsf_block(float v, float *scratch)
{
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;

	v = wsf_lanes<32, F>(v);
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	return wsf_lanes<32, F>(lane < warps ? scratch[lane] : F::id());
}
// ---- topk: every thread of the row (or the CTA) calls these together ----

// Does (AV, AI) come before (BV, BI) in topk's order: NaN first (torch's), then
// the larger value, then the lower index; an index < 0 (none) last.  SMALLEST
// (largest: false): the smaller value first, NaN last.
template <bool SMALLEST = false>
__device__ __forceinline__ bool wsf_before(float av, int ai, float bv, int bi)
{
	if (bi < 0 || ai < 0)
		return bi < 0 && ai >= 0;
	if ((av != av) != (bv != bv))
		return (av != av) != SMALLEST;
	if (av == av && av != bv)
		return SMALLEST ? av < bv : av > bv;
	return ai < bi;
}
// The first of (V, I) over each group of L lanes (L a power of 2, at most 32),
// returned to the group's every thread.
template <int L, bool SMALLEST = false> __device__ __forceinline__ void wsf_lanes_best(float &v, int &i)
{
#pragma unroll
	for (int o = L / 2; o > 0; o >>= 1) {
		const float ov = __shfl_xor_sync(0xffffffffu, v, o);
		const int oi = __shfl_xor_sync(0xffffffffu, i, o);

		if (wsf_before<SMALLEST>(ov, oi, v, i)) {
			v = ov;
			i = oi;
		}
	}
}
// topk's order as an unsigned key, larger first: NaN (all ones), then the
// floats by value (the sign bit flipped, a negative's bits all flipped; -0
// is 0, equal values in index order); SMALLEST: the key's complement, NaN 0
// (last).
template <bool SMALLEST = false> __device__ __forceinline__ unsigned wsf_topk_key(float v)
{
	const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
	const unsigned k = v != v ? 0xffffffffu : (u & 0x80000000u) ? ~u : u | 0x80000000u;

	return SMALLEST ? ~k : k;
}
// The K first elements of a CTA's row by radix selection, K <= 256, N
// threads together.  EACH(f) calls f(e, x) for each element e < COLS of the
// row this thread holds (registers) or reads (memory: each pass reads the
// row again), x its value; its order key is wsf_topk_key's top 8 x PASSES
// bits (those of its dtype).  Each pass histograms a byte of the keys that
// match the bytes chosen so far and chooses the byte that holds the K-th
// key: after PASSES of them T is the K-th key, every key above it is in and
// NEED of those equal to it, the lowest indices (up to four more passes
// over the indices' bytes where more are equal).  The chosen land in S's slots (KEY,
// VAL, INDEX) in no order; the return value: how many, min(K, COLS).  S: 260
// + 3 x 256 words, free before the call; three __syncthreads a pass.
template <int PASSES, bool SMALLEST, class Each>
__device__ __forceinline__ int wsf_block_topk(Each each, const int k, const long long cols, const int tid,
                                              const int n, unsigned *s)
{
	unsigned *const hist = s, *const ctl = s + 256, *const skey = s + 260;
	float *const sval = (float *)(s + 516);
	int *const sidx = (int *)(s + 772);
	const unsigned bits = PASSES == 4 ? 0xffffffffu : ~0u << (32 - 8 * PASSES);
	const int want = cols < k ? (int)cols : k;
	unsigned prefix = 0u, vmask = 0u, index = 0u, imask = 0u, need = want, ties = 0u;

	for (int pass = 0; pass < PASSES + 4 && want > 0; pass++) {
		const bool by_index = pass >= PASSES;   // (then among the keys equal to T, the lower indices first)
		const int shift = 24 - 8 * (by_index ? pass - PASSES : pass);

		if (by_index && ties == need)
			break;   // every key equal to T in the indices chosen so far is in
		for (int b = tid; b < 256; b += n)
			hist[b] = 0u;
		__syncthreads();
		each([&](const unsigned e, const float x) {
			const unsigned key = wsf_topk_key<SMALLEST>(x) & bits;

			if (by_index ? key == prefix && (e & imask) == index : (key & vmask) == prefix)
				atomicAdd(&hist[((by_index ? e : key) >> shift) & 255u], 1u);
		});
		__syncthreads();
		if (tid < 32) {   // the byte where the count from the first in order reaches NEED
			const int lane = tid;
			unsigned c[8], sum = 0u, incl;

#pragma unroll
			for (int j = 0; j < 8; j++) {   // keys: the larger bytes first; indices: the smaller
				c[j] = hist[by_index ? lane * 8 + j : 255 - (lane * 8 + j)];
				sum += c[j];
			}
			incl = sum;
#pragma unroll
			for (int o = 1; o < 32; o <<= 1) {
				const unsigned t = __shfl_up_sync(0xffffffffu, incl, o);

				incl += lane >= o ? t : 0u;
			}
			if (incl - sum < need && need <= incl) {
				unsigned acc = incl - sum;
				int j = 0;

				while (acc + c[j] < need)
					acc += c[j++];
				ctl[0] = by_index ? lane * 8 + j : 255 - (lane * 8 + j);
				ctl[1] = need - acc;
				ctl[2] = c[j];
			}
		}
		__syncthreads();
		if (by_index) {
			index |= ctl[0] << shift;
			imask |= 255u << shift;
		} else {
			prefix |= ctl[0] << shift;
			vmask |= 255u << shift;
		}
		need = ctl[1];
		ties = ctl[2];
		__syncthreads();   // (ctl is read before the next pass writes it)
	}
	index |= ~imask;   // the last index in: every index below the bytes chosen
	if (tid == 0)
		ctl[3] = 0u;
	__syncthreads();
	each([&](const unsigned e, const float x) {
		const unsigned key = wsf_topk_key<SMALLEST>(x) & bits;

		if (want > 0 && (key > prefix || (key == prefix && e <= index))) {
			const unsigned slot = atomicAdd(&ctl[3], 1u);

			skey[slot] = key;
			sval[slot] = x;
			sidx[slot] = (int)e;
		}
	});
	__syncthreads();
	return want;
}
// Slot I's place in topk's order among the first COUNT slots of S (wsf_block_topk's).
__device__ __forceinline__ int wsf_topk_rank(const unsigned *s, const int i, const int count)
{
	const unsigned *const skey = s + 260;
	const int *const sidx = (const int *)(s + 772);
	int r = 0;

	for (int j = 0; j < count; j++)
		r += skey[j] > skey[i] || (skey[j] == skey[i] && sidx[j] < sidx[i]);
	return r;
}

// A thread's part of a row reduction: the first min(N, 8) of V into ACC.
// A full group (N >= 8: every group but the last of a ragged row) takes a
// branch without per-element guards; the branch is the same for the whole
// warp but at the row's end.  The guarded loops are unrolled, not bounded by
// N, so V stays in registers (a loop bound the compiler cannot see puts V in
// local memory), and compare in 32 bits.
template <class F> __device__ __forceinline__ float wsf_fold8(float acc, const float v[8], long long n)
{
	const int k = n < 8 ? (int)n : 8;

	if (k == 8) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc = F::f(acc, v[i]);
		return acc;
	}
#pragma unroll
	for (int i = 0; i < 8; i++)
		acc = i < k ? F::f(acc, v[i]) : acc;
	return acc;
}
// Online softmax: the first min(N, 8) of V into a running max M and a sum S
// of exp(v - M) kept at M's scale (rescaled when M grows; M == MX, also when
// both are -inf, needs no rescale).
__device__ __forceinline__ void wsf_online8(float &m, float &s, const float v[8], long long n)
{
	const float mx = wsf_fold8<wsf_fold_max>(m, v, n);
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
