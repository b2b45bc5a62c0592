/*
 * hostfp.c: f32, f16, bf16 and fp8 (e4m3, e5m2) conversions on the host.
 *
 * Every format is described by one row (exponent bits, mantissa bits and two
 * flags) and handled by the same three routines: round a double to the
 * format's nearest value (ties to even, subnormals, overflow), encode a
 * rounded value into bits, decode bits into a double.  Rounding is done on
 * the double itself (scale by a power of two, rint, scale back), which is
 * exact because every format here is narrower than double; so a double goes
 * straight to bf16 with no double rounding through f32.
 *
 * Overflow: f32, f16 and bf16 go to infinity as IEEE 754 says.  Both fp8
 * formats saturate to their largest finite value (infinities too), which is
 * OCP FP8's saturating mode and what CUDA's __nv_fp8_e4m3/__nv_fp8_e5m2
 * constructors do (__NV_SATFINITE), so the host matches the device.  e4m3 is
 * the "fn" variant: no infinities, and only S.1111.111 is NaN, so its largest
 * finite value is 448.
 */
#include <math.h>
#include <string.h>

#include "runtime.h"

typedef struct Fmt {
	int ebits, mbits;  /* exponent bits, stored mantissa bits */
	bool fn;           /* no infinities; only the all-ones pattern is NaN */
	bool satfinite;    /* overflow and infinities saturate to the largest finite value */
} Fmt;

static const Fmt fmt_table[DT_COUNT] = {
	[DT_F32] = {8, 23, false, false},
	[DT_F16] = {5, 10, false, false},
	[DT_BF16] = {8, 7, false, false},
	[DT_FP8E4M3] = {4, 3, true, true},
	[DT_FP8E5M2] = {5, 2, false, true},
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
		return f->satfinite ? copysign(max, x) : x;
	frexp(a, &e);
	e -= 1; /* a is in [2^e, 2^(e+1)) */
	if (e < fmt_emin(f))
		e = fmt_emin(f); /* subnormals share the smallest normal's quantum */
	q = ldexp(1.0, e - f->mbits);
	r = nearbyint(a / q) * q; /* default rounding mode: nearest, ties to even */
	if (r > max)
		r = f->satfinite ? max : INFINITY;
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

	if (isnan(x))
		return sign | emask << f->mbits | (f->fn ? mmask : 1u << (f->mbits - 1));
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

double
rt_round(Dtype dt, double x)
{
	if (dt <= DT_NONE || dt >= DT_COUNT)
		return x;
	return fmt_round(&fmt_table[dt], x);
}

void
rt_pack(Dtype dt, const double *src, size_t n, void *dst)
{
	const Fmt *f;
	size_t i;

	if (dt <= DT_NONE || dt >= DT_COUNT)
		return;
	f = &fmt_table[dt];
	for (i = 0; i < n; i++) {
		uint32_t bits = fmt_encode(f, fmt_round(f, src[i]));
		uint16_t h = (uint16_t)bits;
		int bytes = dtype_info[dt].bytes;

		/* host order, which is the device's (both little-endian) */
		if (bytes == 4)
			memcpy((char *)dst + 4 * i, &bits, 4);
		else if (bytes == 2)
			memcpy((char *)dst + 2 * i, &h, 2);
		else
			((unsigned char *)dst)[i] = (unsigned char)bits;
	}
}

void
rt_unpack(Dtype dt, const void *src, size_t n, double *dst)
{
	const Fmt *f;
	size_t i;

	if (dt <= DT_NONE || dt >= DT_COUNT)
		return;
	f = &fmt_table[dt];
	for (i = 0; i < n; i++) {
		uint32_t bits;
		uint16_t h;
		int bytes = dtype_info[dt].bytes;

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
