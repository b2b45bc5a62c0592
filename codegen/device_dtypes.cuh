// ---- dtypes beyond f32, f16 and bf16: fp8, integers, bool --------------------
//
// Inlined (after device.cuh) only into kernels that use one of these dtypes or
// an op added with them (codegen_device_header), so other kernels' CUDA stays
// as it was.  A value lives in a register of its category: float for every
// float dtype (f32 arithmetic, rounded when stored), bool, or the integer's
// own C type, whose arithmetic wraps as torch's does (through unsigned, so
// no signed overflow is undefined).  Loads and stores are templates over the
// storage type S and the register type R, eight elements a thread as one
// aligned access of 8, 16, 32 or 64 bytes.

// Storage of a float8_e4m3fn and of a float8_e5m2, from its bits ((wsf_e4m3)0 is zero).
struct wsf_e4m3 {
	unsigned char bits;
	wsf_e4m3() = default;
	__device__ explicit wsf_e4m3(int zero) : bits((unsigned char)zero) {}
};
struct wsf_e5m2 {
	unsigned char bits;
	wsf_e5m2() = default;
	__device__ explicit wsf_e5m2(int zero) : bits((unsigned char)zero) {}
};

// fp8 -> f32, exact: the tensor cores' converter (sm_89 on) to f16, which
// holds every e4m3 value, then f16 -> f32; a NaN keeps its sign (the f16
// converter's NaN is positive, torch's is not).
__device__ __forceinline__ float wsf_fp8_nan_signed(float v, unsigned b)
{
	return v != v ? __uint_as_float((b & 0x80u) << 24 | 0x7fffffffu) : v;
}
__device__ __forceinline__ float wsf_e4m3_to_f32(unsigned char b)
{
	unsigned h;

	asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"((unsigned short)b));
	return wsf_fp8_nan_signed(wsf_f16_to_f32((wsf_f16)(h & 0xffffu)), b);
}
// e5m2 is f16's top byte; a NaN keeps its sign (the f16 converter's NaN is positive, torch's is not).
__device__ __forceinline__ float wsf_e5m2_to_f32(unsigned char b)
{
	return (b & 0x7f) > 0x7c ? __uint_as_float((unsigned)(b & 0x80) << 24 | 0x7fffffffu)
	                         : wsf_f16_to_f32((wsf_f16)(b << 8));
}

// f32 -> fp8 as torch's to(float8_e4m3fn / float8_e5m2), bit for bit: nearest
// even; e4m3: past 464 (and infinities) NaN; e5m2: from 61440 on infinity.
// A NaN keeps its sign and is all ones.  In range, the hardware's converter
// (one instruction; it saturates where torch does not, hence the tests first).
__device__ __forceinline__ unsigned char wsf_f32_to_e4m3(float f)
{
	unsigned short r;

	if (!(fabsf(f) <= 464.0f))                  // NaN, infinity, overflow
		return (unsigned char)((__float_as_uint(f) >> 24 & 0x80) | 0x7f);
	asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));   // f in the low byte
	return (unsigned char)r;
}
__device__ __forceinline__ unsigned char wsf_f32_to_e5m2(float f)
{
	unsigned short r;

	if (!(fabsf(f) < 61440.0f))                 // NaN, infinity, overflow
		return (unsigned char)((__float_as_uint(f) >> 24 & 0x80) | (f != f ? 0x7f : 0x7c));
	asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));
	return (unsigned char)r;
}
// cast: round to the type, keep computing in f32
__device__ __forceinline__ float wsf_round_e4m3(float f) { return wsf_e4m3_to_f32(wsf_f32_to_e4m3(f)); }
__device__ __forceinline__ float wsf_round_e5m2(float f) { return wsf_e5m2_to_f32(wsf_f32_to_e5m2(f)); }

// A stored element as its register holds it.
__device__ __forceinline__ float wsf_get(wsf_e4m3 x) { return wsf_e4m3_to_f32(x.bits); }
__device__ __forceinline__ float wsf_get(wsf_e5m2 x) { return wsf_e5m2_to_f32(x.bits); }
__device__ __forceinline__ float wsf_get(float x) { return x; }
template <class T> __device__ __forceinline__ T wsf_get(T x) { return x; }
// A register's value as element type S stores it (an f32 register of a bool: != 0).
__device__ __forceinline__ wsf_e4m3 wsf_put(wsf_e4m3 *, float v) { return wsf_e4m3(wsf_f32_to_e4m3(v)); }
__device__ __forceinline__ wsf_e5m2 wsf_put(wsf_e5m2 *, float v) { return wsf_e5m2(wsf_f32_to_e5m2(v)); }
__device__ __forceinline__ float wsf_put(float *, float v) { return v; }
__device__ __forceinline__ bool wsf_put(bool *, float v) { return v != 0.0f; }
template <class S, class R> __device__ __forceinline__ S wsf_put(S *, R v) { return (S)v; }

// Eight elements as one aligned access (8 of 1 byte: 8 bytes; of 8 bytes: 4 x 16).
template <class S> struct alignas(sizeof(S) * 8 < 16 ? sizeof(S) * 8 : 16) wsf_pack8 { S x[8]; };

// Eight fp8 elements: four of the converter's pairs to f16x2, then f32.
__device__ __forceinline__ void wsf_fp8x8_to_f32(float v[8], uint2 u, bool e5m2)
{
	unsigned w[2] = {u.x, u.y};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		unsigned h, pair = w[i / 2] >> (i % 2 * 16) & 0xffffu;

		if (e5m2)
			asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h) : "h"((unsigned short)pair));
		else
			asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"((unsigned short)pair));
		v[2 * i] = wsf_fp8_nan_signed(wsf_f16_to_f32((wsf_f16)(h & 0xffffu)), pair);
		v[2 * i + 1] = wsf_fp8_nan_signed(wsf_f16_to_f32((wsf_f16)(h >> 16)), pair >> 8);
	}
}
__device__ __forceinline__ void wsf_load8(float v[8], const wsf_e4m3 *p) { wsf_fp8x8_to_f32(v, *(const uint2 *)p, false); }
__device__ __forceinline__ void wsf_load8(float v[8], const wsf_e5m2 *p) { wsf_fp8x8_to_f32(v, *(const uint2 *)p, true); }
// Two f32 to fp8 as torch converts them: one converter instruction where both are in range.
__device__ __forceinline__ unsigned wsf_f32x2_to_fp8x2(float lo, float hi, bool e5m2)
{
	unsigned short r;

	if (e5m2 ? !(fabsf(lo) < 61440.0f && fabsf(hi) < 61440.0f) : !(fabsf(lo) <= 464.0f && fabsf(hi) <= 464.0f))
		return e5m2 ? (unsigned)wsf_f32_to_e5m2(hi) << 8 | wsf_f32_to_e5m2(lo)
		            : (unsigned)wsf_f32_to_e4m3(hi) << 8 | wsf_f32_to_e4m3(lo);
	if (e5m2)
		asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	else
		asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	return r;
}
__device__ __forceinline__ uint2 wsf_f32x8_to_fp8x8(const float v[8], bool e5m2)
{
	return make_uint2(wsf_f32x2_to_fp8x2(v[0], v[1], e5m2) | wsf_f32x2_to_fp8x2(v[2], v[3], e5m2) << 16,
	                  wsf_f32x2_to_fp8x2(v[4], v[5], e5m2) | wsf_f32x2_to_fp8x2(v[6], v[7], e5m2) << 16);
}
__device__ __forceinline__ void wsf_store8(wsf_e4m3 *p, const float v[8]) { *(uint2 *)p = wsf_f32x8_to_fp8x8(v, false); }
__device__ __forceinline__ void wsf_store8(wsf_e5m2 *p, const float v[8]) { *(uint2 *)p = wsf_f32x8_to_fp8x8(v, true); }
template <class R, class S> __device__ __forceinline__ void wsf_load8(R v[8], const S *p)
{
	wsf_pack8<S> u = *(const wsf_pack8<S> *)p;
#pragma unroll
	for (int i = 0; i < 8; i++)
		v[i] = (R)wsf_get(u.x[i]);
}
template <class R, class S> __device__ __forceinline__ void wsf_load8_global(R v[8], const S *p) { wsf_load8(v, p); }
// (a row kernel's L2 policy is the 2- and 4-byte loads'; these load plainly)
template <class R, class S> __device__ __forceinline__ void wsf_load8_global_l2(R v[8], const S *p, wsf_u64)
{
	wsf_load8(v, p);
}
template <class S> __device__ __forceinline__ auto wsf_load1(const S *p) -> decltype(wsf_get(*p)) { return wsf_get(*p); }
template <class S, class R> __device__ __forceinline__ void wsf_store8(S *p, const R v[8])
{
	wsf_pack8<S> u;
#pragma unroll
	for (int i = 0; i < 8; i++)
		u.x[i] = wsf_put(p, v[i]);
	*(wsf_pack8<S> *)p = u;
}
template <class S, class R> __device__ __forceinline__ void wsf_store8_smem(S *p, const R v[8]) { wsf_store8(p, v); }
template <class S, class R> __device__ __forceinline__ void wsf_store1(S *p, R v) { *p = wsf_put(p, v); }

// ---- integer arithmetic as torch's: wraps modulo 2^bits ----
typedef unsigned long long wsf_ull;
template <class T> __device__ __forceinline__ T wsf_add(T a, T b) { return (T)((wsf_ull)a + (wsf_ull)b); }
template <class T> __device__ __forceinline__ T wsf_sub(T a, T b) { return (T)((wsf_ull)a - (wsf_ull)b); }
template <class T> __device__ __forceinline__ T wsf_mul(T a, T b) { return (T)((wsf_ull)a * (wsf_ull)b); }
template <class T> __device__ __forceinline__ T wsf_neg(T a) { return (T)(0ull - (wsf_ull)a); }
template <class T> __device__ __forceinline__ T wsf_iabs(T a) { return a < 0 ? wsf_neg(a) : a; }
template <class T> __device__ __forceinline__ T wsf_imax(T a, T b) { return a > b ? a : b; }
template <class T> __device__ __forceinline__ T wsf_imin(T a, T b) { return a < b ? a : b; }
// floor division and its remainder, which takes the divisor's sign (torch's, Python's)
template <class T> __device__ __forceinline__ T wsf_floordiv(T a, T b)
{
	T q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;
}
template <class T> __device__ __forceinline__ T wsf_rem(T a, T b)
{
	T m = a % b;
	return (m != 0 && ((m < 0) != (b < 0))) ? (T)(m + b) : m;
}
// torch's float floor_divide and remainder: floor of the exact quotient, the sign of the divisor
__device__ __forceinline__ float wsf_floordiv(float a, float b)
{
	if (b == 0.0f)
		return a / b;
	float m = fmodf(a, b), d = (a - m) / b;
	if (m != 0.0f && ((b < 0.0f) != (m < 0.0f)))
		d -= 1.0f;
	if (d == 0.0f)
		return copysignf(0.0f, a / b);
	float fl = floorf(d);
	return d - fl > 0.5f ? fl + 1.0f : fl;
}
__device__ __forceinline__ float wsf_rem(float a, float b)
{
	float m = fmodf(a, b);
	return (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) ? m + b : m;
}
// Shifts: a count below 0 or past the width gives 0 to the left, the sign to the right (torch).
template <class T> __device__ __forceinline__ T wsf_shl(T a, T b)
{
	return (b < 0 || (wsf_ull)b >= sizeof(T) * 8) ? (T)0 : (T)((wsf_ull)a << (int)b);
}
template <class T> __device__ __forceinline__ T wsf_shr(T a, T b)
{
	return (b < 0 || (wsf_ull)b >= sizeof(T) * 8) ? (T)(a < 0 ? -1 : 0) : (T)(a >> (int)b);
}

// ---- a matmul epilogue's 1-byte values (fp8, bool) in f32 registers ----
// One element through L2 alone (ld.global.cg, volatile: wsf_load1_cg's rule).
template <class S> __device__ __forceinline__ S wsf_ldcg1(const S *p)
{
	unsigned short u;
	asm volatile("ld.global.cg.u8 %0, [%1];" : "=h"(u) : "l"(p));
	S x;
	*(unsigned char *)&x = (unsigned char)u;
	return x;
}
template <class S> __device__ __forceinline__ float wsf_load1_cg(const S *p) { return (float)wsf_get(wsf_ldcg1(p)); }
template <class S> __device__ __forceinline__ void wsf_load2(const S *p, float &a, float &b)
{
	a = (float)wsf_get(p[0]);
	b = (float)wsf_get(p[1]);
}
template <class S> __device__ __forceinline__ void wsf_load2_cg(const S *p, float &a, float &b)
{
	a = wsf_load1_cg(p);
	b = wsf_load1_cg(p + 1);
}
// A row input's pair at an even column (wsf_row_pair's rule).
template <class S> __device__ __forceinline__ void wsf_row_pair(const S *p, float &a, float &b) { wsf_load2(p, a, b); }
// Two adjacent elements of a staging subtile (wsf_store2's rule).
template <class S> __device__ __forceinline__ void wsf_store2(S *p, float a, float b)
{
	p[0] = wsf_put(p, a);
	p[1] = wsf_put(p, b);
}

// Philox4x32-10 of the counter (q, offset) under the key seed (each 64 bits,
// low word first): rand_like's four numbers of elements 4q .. 4q + 3.
__device__ __forceinline__ uint4 wsf_philox(long long seed, long long offset, unsigned long long q)
{
	unsigned c0 = (unsigned)q, c1 = (unsigned)(q >> 32);
	unsigned c2 = (unsigned)offset, c3 = (unsigned)((unsigned long long)offset >> 32);
	unsigned k0 = (unsigned)seed, k1 = (unsigned)((unsigned long long)seed >> 32);

	#pragma unroll
	for (int r = 0; r < 10; r++) {
		const unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
		const unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;

		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	return make_uint4(c0, c1, c2, c3);
}
// A word's number: its top 24 bits over 2^24, a float in [0, 1).
__device__ __forceinline__ float wsf_rand_word(unsigned w)
{
	return (float)(w >> 8) * 5.9604644775390625e-08f;   // 2^-24
}
// rand_like's number for element idx (row-major in x's shape): word idx % 4
// of Philox4x32-10 of the counter (idx / 4, offset) under the key seed.
// runtime/reference.c's rt_rand_uniform is the same function; the same seed,
// offset and shape give the same numbers in any kernel and at any tile.
__device__ __forceinline__ float wsf_rand_like(long long seed, long long offset, long long idx)
{
	const uint4 r = wsf_philox(seed, offset, (unsigned long long)idx >> 2);
	const int w = (int)(idx & 3);

	return wsf_rand_word(w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w);
}
// The numbers of the eight elements base .. base + 7 into out: two Philox
// blocks where base is a multiple of 4 (every row of a 16-byte-aligned f32,
// 16- or 8-bit tensor), three otherwise.
__device__ __forceinline__ void wsf_rand_like8(long long seed, long long offset, long long base, float out[8])
{
	const unsigned long long q = (unsigned long long)base >> 2;
	const uint4 a = wsf_philox(seed, offset, q), b = wsf_philox(seed, offset, q + 1);
	unsigned w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, 0, 0, 0, 0};
	const int s = (int)(base & 3);

	if (s) {
		const uint4 c = wsf_philox(seed, offset, q + 2);

		w[8] = c.x, w[9] = c.y, w[10] = c.z, w[11] = c.w;
	}
	#pragma unroll
	for (int v = 0; v < 8; v++)
		out[v] = wsf_rand_word(s == 0 ? w[v] : s == 1 ? w[v + 1] : s == 2 ? w[v + 2] : w[v + 3]);
}
