/*
 * hostfp.c: f32, f16, bf16 and fp8 (e4m3, e5m2) conversions on the host,
 * and the integer and bool dtypes'.
 *
 * Every format is described by one row (exponent bits, mantissa bits and two
 * flags) and handled by the same three routines: round a double to the
 * format's nearest value (ties to even, subnormals, overflow), encode a
 * rounded value into bits, decode bits into a double.  Rounding is done on
 * the double itself (scale by a power of two, rint, scale back), which is
 * exact because every format here is narrower than double; so a double goes
 * straight to bf16 with no double rounding through f32.
 *
 * Overflow is torch's (to(torch.float8_e4m3fn), c10's Float8_e4m3fn), which
 * the device's wsf_f32_to_e4m3/e5m2 follow bit for bit: f32, f16, bf16 and
 * e5m2 go to infinity as IEEE 754 says (e5m2: |x| >= 61440); e4m3 is the
 * "fn" variant, with no infinities and only S.1111.111 NaN, so its largest
 * finite value is 448 and what rounds past it (|x| > 464, infinities) is NaN.
 * A NaN keeps its sign; its mantissa is all ones in both fp8 formats.
 *
 * Integers: a value converts as C++'s static_cast would on the device,
 * toward zero and then modulo 2^bits (two's complement); NaN and infinities,
 * which C++ leaves undefined, give 0.  bool is x != 0 (NaN is true).
 */
#include <math.h>
#include <string.h>

#include "runtime.h"

typedef struct Fmt {
	int ebits, mbits;  /* exponent bits, stored mantissa bits */
	bool fn;           /* no infinities; only the all-ones pattern is NaN, which overflow gives */
} Fmt;

static const Fmt fmt_table[DT_COUNT] = {
	[DT_F32] = {8, 23, false},
	[DT_F16] = {5, 10, false},
	[DT_BF16] = {8, 7, false},
	[DT_FP8E4M3] = {4, 3, true},
	[DT_FP8E5M2] = {5, 2, false},
};

static int
fmt_bias(const Fmt *f)
{
	return (1 << (f->ebits - 1)) - 1;
}

static int
fmt_emin(const Fmt *f)
{
	return 1 - fmt_bias(f);
}

static double
fmt_max(const Fmt *f)
{
	/* fn formats use the top exponent for numbers but lose its all-ones mantissa to NaN */
	int emax = (1 << f->ebits) - (f->fn ? 1 : 2) - fmt_bias(f);

	return ldexp(2.0 - ldexp(f->fn ? 2.0 : 1.0, -f->mbits), emax);
}

static double
fmt_round(const Fmt *f, double x)
{
	double a = fabs(x), q, r, max = fmt_max(f);
	int e;

	if (isnan(x) || a == 0)
		return x;
	if (isinf(x))
		return f->fn ? copysign(NAN, x) : x;
	frexp(a, &e);
	e -= 1; /* a is in [2^e, 2^(e+1)) */
	if (e < fmt_emin(f))
		e = fmt_emin(f); /* subnormals share the smallest normal's quantum */
	q = ldexp(1.0, e - f->mbits);
	r = nearbyint(a / q) * q; /* default rounding mode: nearest, ties to even */
	if (r > max)
		r = f->fn ? NAN : INFINITY;
	return copysign(r, x);
}

/* The bits of X, which fmt_round has already made representable. */
static uint32_t
fmt_encode(const Fmt *f, double x)
{
	uint32_t emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
	uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
	double a = fabs(x);
	int e;

	if (isnan(x))   /* torch's NaN: f32, f16 and bf16 quiet (top mantissa bit), fp8 all ones */
		return sign | emask << f->mbits | (f->mbits <= 3 ? mmask : 1u << (f->mbits - 1));
	if (isinf(x))
		return sign | emask << f->mbits;
	if (a == 0)
		return sign;
	frexp(a, &e);
	e -= 1;
	if (e < fmt_emin(f))
		return sign | (uint32_t)ldexp(a, f->mbits - fmt_emin(f));
	return sign | (uint32_t)(e + fmt_bias(f)) << f->mbits |
	       ((uint32_t)ldexp(a, f->mbits - e) & mmask);
}

static double
fmt_decode(const Fmt *f, uint32_t bits)
{
	uint32_t emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
	uint32_t exp = bits >> f->mbits & emask, mant = bits & mmask;
	bool neg = bits >> (f->ebits + f->mbits) & 1;
	double v;

	if (exp == emask && !f->fn)
		v = mant ? NAN : INFINITY;
	else if (exp == emask && mant == mmask)
		v = NAN;
	else if (exp == 0)
		v = ldexp(mant, fmt_emin(f) - f->mbits);
	else
		v = ldexp(mant | (mmask + 1), (int)exp - fmt_bias(f) - f->mbits);
	return neg ? -v : v;
}

/* X as integer dtype DT holds it: toward zero, then modulo 2^bits. */
static int64_t
int_wrap(Dtype dt, double x)
{
	uint64_t u;
	int bits = dtype_info[dt].bits;

	if (!isfinite(x))
		return 0;
	x = trunc(x);
	/* modulo 2^64 first: fmod keeps the value exact, then two's complement does the rest */
	x = fmod(x, 18446744073709551616.0);
	u = x < 0 ? (uint64_t)0 - (uint64_t)-x : (uint64_t)x;
	if (bits == 64)
		return (int64_t)u;
	u &= ((uint64_t)1 << bits) - 1;
	if (dt != DT_UINT8 && u >> (bits - 1))
		return (int64_t)u - ((int64_t)1 << bits);
	return (int64_t)u;
}

double
rt_round(Dtype dt, double x)
{
	if (dt <= DT_NONE || dt >= DT_COUNT)
		return x;
	if (dt == DT_BOOL)
		return x != 0;
	if (dtype_is_int(dt))
		return (double)int_wrap(dt, x);
	return fmt_round(&fmt_table[dt], x);
}

void
rt_pack(Dtype dt, const double *src, size_t n, void *dst)
{
	const Fmt *f = &fmt_table[dt];
	int bytes;
	size_t i;

	if (dt <= DT_NONE || dt >= DT_COUNT)
		return;
	bytes = dtype_info[dt].bytes;
	for (i = 0; i < n; i++) {
		uint32_t bits;
		uint16_t h;
		int64_t v;

		/* host order, which is the device's (both little-endian) */
		if (dtype_info[dt].kind != DK_FLOAT) {
			v = dt == DT_BOOL ? src[i] != 0 : int_wrap(dt, src[i]);
			if (bytes == 8) {
				memcpy((char *)dst + 8 * i, &v, 8);
			} else if (bytes == 4) {
				bits = (uint32_t)v;
				memcpy((char *)dst + 4 * i, &bits, 4);
			} else {
				((unsigned char *)dst)[i] = (unsigned char)v;
			}
			continue;
		}
		bits = fmt_encode(f, fmt_round(f, src[i]));
		h = (uint16_t)bits;
		if (bytes == 4)
			memcpy((char *)dst + 4 * i, &bits, 4);
		else if (bytes == 2)
			memcpy((char *)dst + 2 * i, &h, 2);
		else
			((unsigned char *)dst)[i] = (unsigned char)bits;
	}
}

/* Element I of integer or bool array SRC of dtype DT. */
static double
int_unpack(Dtype dt, const void *src, size_t i)
{
	const unsigned char *b = src;
	int32_t w;
	int64_t v;

	switch (dt) {
	case DT_INT8: return (signed char)b[i];
	case DT_UINT8: return b[i];
	case DT_BOOL: return b[i] != 0;
	case DT_INT32:
		memcpy(&w, b + 4 * i, 4);
		return w;
	default:
		memcpy(&v, b + 8 * i, 8);
		return (double)v;
	}
}

void
rt_unpack(Dtype dt, const void *src, size_t n, double *dst)
{
	const Fmt *f = &fmt_table[dt];
	size_t i;

	if (dt <= DT_NONE || dt >= DT_COUNT)
		return;
	for (i = 0; i < n; i++) {
		uint32_t bits;
		uint16_t h;
		int bytes = dtype_info[dt].bytes;

		if (dtype_info[dt].kind != DK_FLOAT) {
			dst[i] = int_unpack(dt, src, i);
			continue;
		}
		if (bytes == 4) {
			memcpy(&bits, (const char *)src + 4 * i, 4);
		} else if (bytes == 2) {
			memcpy(&h, (const char *)src + 2 * i, 2);
			bits = h;
		} else {
			bits = ((const unsigned char *)src)[i];
		}
		dst[i] = fmt_decode(f, bits);
	}
}
