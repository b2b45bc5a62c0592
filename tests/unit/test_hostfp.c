/*
 * test_hostfp.c: runtime/hostfp.c's conversions.
 *
 * Rounding is checked at the points where formats differ: ties to even at
 * 1.0 and in the subnormals, the largest finite value and just past it
 * (infinity for f16, bf16 and e5m2, NaN for e4m3: torch's), infinities, NaN and signed
 * zero; then every bit pattern of the 8- and 16-bit formats must survive a
 * decode/encode round trip, and f32 rounding must agree with C's (float).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "../../runtime/runtime.h"

static uint32_t
bits_of(Dtype dt, double x)
{
	unsigned char b[4] = {0};
	uint32_t v = 0;
	int i;

	rt_pack(dt, &x, 1, b);
	for (i = dtype_info[dt].bytes - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static double
value_of(Dtype dt, uint32_t bits)
{
	unsigned char b[4];
	double x;
	int i;

	for (i = 0; i < 4; i++)
		b[i] = (unsigned char)(bits >> (8 * i));
	rt_unpack(dt, b, 1, &x);
	return x;
}

static void
test_f16_rounding(void **state)
{
	/* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
	assert_true(rt_round(DT_F16, 1.0 + ldexp(1, -11)) == 1.0);
	assert_true(rt_round(DT_F16, 1.0 + 3 * ldexp(1, -11)) == 1.0 + ldexp(1, -9));
	assert_true(rt_round(DT_F16, 1.0 + ldexp(1, -11) + ldexp(1, -30)) == 1.0 + ldexp(1, -10));
	assert_true(rt_round(DT_F16, -1.0 - ldexp(1, -11)) == -1.0);
	/* the largest finite value, and the tie above it going to infinity */
	assert_true(rt_round(DT_F16, 65504.0) == 65504.0);
	assert_true(rt_round(DT_F16, 65519.99) == 65504.0);
	assert_true(isinf(rt_round(DT_F16, 65520.0)));
	assert_true(rt_round(DT_F16, -1e6) == -INFINITY);
	/* subnormals: 2^-24 is the smallest; halfway to zero rounds to even (zero) */
	assert_true(rt_round(DT_F16, ldexp(1, -24)) == ldexp(1, -24));
	assert_true(rt_round(DT_F16, ldexp(1, -25)) == 0.0);
	assert_true(rt_round(DT_F16, 3 * ldexp(1, -25)) == ldexp(1, -23));
	assert_true(rt_round(DT_F16, 5 * ldexp(1, -25)) == ldexp(1, -23));
	assert_true(rt_round(DT_F16, ldexp(1, -14) - ldexp(1, -26)) == ldexp(1, -14));
	assert_int_equal(bits_of(DT_F16, 1.0), 0x3c00);
	assert_int_equal(bits_of(DT_F16, -2.0), 0xc000);
	assert_int_equal(bits_of(DT_F16, ldexp(1, -14)), 0x0400);
	assert_int_equal(bits_of(DT_F16, ldexp(1, -24)), 0x0001);
	assert_int_equal(bits_of(DT_F16, 65504.0), 0x7bff);
	assert_int_equal(bits_of(DT_F16, INFINITY), 0x7c00);
	assert_int_equal(bits_of(DT_F16, -INFINITY), 0xfc00);
	assert_int_equal(bits_of(DT_F16, -0.0), 0x8000);
	assert_int_equal(bits_of(DT_F16, NAN) & 0x7e00, 0x7e00);
	assert_true(isnan(rt_round(DT_F16, NAN)));
	assert_true(value_of(DT_F16, 0x3555) == 0x155 * ldexp(1, -12) + 0.25);
}

static void
test_bf16_rounding(void **state)
{
	assert_true(rt_round(DT_BF16, 1.0 + ldexp(1, -8)) == 1.0);
	assert_true(rt_round(DT_BF16, 1.0 + 3 * ldexp(1, -8)) == 1.0 + ldexp(1, -6));
	/* straight from double: no double rounding through f32 */
	assert_true(rt_round(DT_BF16, 1.0 + ldexp(1, -8) + ldexp(1, -40)) == 1.0 + ldexp(1, -7));
	assert_true(isinf(rt_round(DT_BF16, FLT_MAX)));
	assert_true(rt_round(DT_BF16, 3.0e38) == value_of(DT_BF16, 0x7f62));
	assert_true(rt_round(DT_BF16, ldexp(1, -133)) == ldexp(1, -133)); /* smallest subnormal */
	assert_true(rt_round(DT_BF16, ldexp(1, -134)) == 0.0);
	assert_int_equal(bits_of(DT_BF16, 1.0), 0x3f80);
	assert_int_equal(bits_of(DT_BF16, 3.0), 0x4040);
	assert_int_equal(bits_of(DT_BF16, -INFINITY), 0xff80);
	assert_int_equal(bits_of(DT_BF16, NAN) & 0x7fc0, 0x7fc0);
	assert_int_equal(bits_of(DT_BF16, ldexp(1, -133)), 0x0001);
}

/* torch's to(torch.float8_e4m3fn): past the largest finite value, 448, is NaN */
static void
test_e4m3_rounding(void **state)
{
	assert_true(rt_round(DT_FP8E4M3, 448.0) == 448.0);
	/* 464 is halfway between 448 (even) and 480 (which would be NaN's pattern) */
	assert_true(rt_round(DT_FP8E4M3, 464.0) == 448.0);
	assert_true(isnan(rt_round(DT_FP8E4M3, 464.5)));
	assert_true(isnan(rt_round(DT_FP8E4M3, 500.0)));
	assert_true(isnan(rt_round(DT_FP8E4M3, 1e9)));
	assert_true(isnan(rt_round(DT_FP8E4M3, INFINITY)));
	assert_true(isnan(rt_round(DT_FP8E4M3, NAN)));
	assert_true(rt_round(DT_FP8E4M3, 1.0625) == 1.0);  /* tie to even */
	assert_true(rt_round(DT_FP8E4M3, 1.1875) == 1.25); /* tie to even, upward */
	assert_true(rt_round(DT_FP8E4M3, ldexp(1, -9)) == ldexp(1, -9));
	assert_true(rt_round(DT_FP8E4M3, ldexp(1, -10)) == 0.0);
	assert_true(rt_round(DT_FP8E4M3, 3 * ldexp(1, -10)) == ldexp(1, -8));
	assert_int_equal(bits_of(DT_FP8E4M3, 1.0), 0x38);
	assert_int_equal(bits_of(DT_FP8E4M3, 448.0), 0x7e);
	assert_int_equal(bits_of(DT_FP8E4M3, -448.0), 0xfe);
	assert_int_equal(bits_of(DT_FP8E4M3, 1e6), 0x7f);
	assert_int_equal(bits_of(DT_FP8E4M3, -1e6), 0xff);
	assert_int_equal(bits_of(DT_FP8E4M3, -INFINITY), 0xff);
	assert_int_equal(bits_of(DT_FP8E4M3, NAN), 0x7f);
	assert_int_equal(bits_of(DT_FP8E4M3, ldexp(1, -9)), 0x01);
	assert_int_equal(bits_of(DT_FP8E4M3, 0.1), 0x1d);   /* torch: 0.1015625 */
	assert_int_equal(bits_of(DT_FP8E4M3, -3.3), 0xc5);  /* torch: -3.25 */
	assert_true(isnan(value_of(DT_FP8E4M3, 0x7f)));
	assert_true(isnan(value_of(DT_FP8E4M3, 0xff)));
	assert_true(value_of(DT_FP8E4M3, 0x78) == 256.0); /* exponent 1111 is a number in e4m3 */
}

/* torch's to(torch.float8_e5m2): IEEE-like, overflow to infinity from 61440 on */
static void
test_e5m2_rounding(void **state)
{
	assert_true(rt_round(DT_FP8E5M2, 57344.0) == 57344.0);
	assert_true(rt_round(DT_FP8E5M2, 61439.0) == 57344.0);
	assert_true(rt_round(DT_FP8E5M2, 61440.0) == INFINITY);   /* the tie goes to even: past the top */
	assert_true(rt_round(DT_FP8E5M2, -INFINITY) == -INFINITY);
	assert_true(rt_round(DT_FP8E5M2, 1.125) == 1.0);
	assert_true(rt_round(DT_FP8E5M2, 1.375) == 1.5);
	assert_true(rt_round(DT_FP8E5M2, ldexp(1, -16)) == ldexp(1, -16));
	assert_true(rt_round(DT_FP8E5M2, ldexp(1, -17)) == 0.0);
	assert_int_equal(bits_of(DT_FP8E5M2, 1.0), 0x3c);
	assert_int_equal(bits_of(DT_FP8E5M2, 57344.0), 0x7b);
	assert_int_equal(bits_of(DT_FP8E5M2, 1e6), 0x7c);
	assert_int_equal(bits_of(DT_FP8E5M2, NAN), 0x7f);
	assert_int_equal(bits_of(DT_FP8E5M2, 0.1), 0x2e);   /* torch: 0.09375 */
	assert_true(isinf(value_of(DT_FP8E5M2, 0x7c)));
	assert_true(isnan(value_of(DT_FP8E5M2, 0x7d)));
}

/* Integers wrap as C++'s casts do on the device; bool is != 0. */
static void
test_int_rounding(void **state)
{
	int8_t i8[3];
	int64_t i64[2];
	bool b[3];
	double src[3] = {200.0, -129.0, 2.9}, back[3];

	assert_true(rt_round(DT_INT8, 127.0) == 127.0);
	assert_true(rt_round(DT_INT8, 128.0) == -128.0);
	assert_true(rt_round(DT_INT8, -2.9) == -2.0);
	assert_true(rt_round(DT_UINT8, -1.0) == 255.0);
	assert_true(rt_round(DT_UINT8, 256.0) == 0.0);
	assert_true(rt_round(DT_INT32, 2147483648.0) == -2147483648.0);
	assert_true(rt_round(DT_INT64, -5.5) == -5.0);
	assert_true(rt_round(DT_INT32, NAN) == 0.0);
	assert_true(rt_round(DT_BOOL, 0.5) == 1.0);
	assert_true(rt_round(DT_BOOL, NAN) == 1.0);
	assert_true(rt_round(DT_BOOL, -0.0) == 0.0);
	rt_pack(DT_INT8, src, 3, i8);
	assert_int_equal(i8[0], -56);
	assert_int_equal(i8[1], 127);
	assert_int_equal(i8[2], 2);
	rt_unpack(DT_INT8, i8, 3, back);
	assert_true(back[0] == -56.0 && back[1] == 127.0 && back[2] == 2.0);
	src[0] = -3e15;
	rt_pack(DT_INT64, src, 2, i64);
	assert_true(i64[0] == -3000000000000000ll && i64[1] == -129);
	rt_unpack(DT_INT64, i64, 2, back);
	assert_true(back[0] == -3e15);
	src[0] = 0.0;
	rt_pack(DT_BOOL, src, 3, b);
	rt_unpack(DT_BOOL, b, 3, back);
	assert_true(back[0] == 0.0 && back[1] == 1.0 && back[2] == 1.0);
}

static void
test_f32_rounding(void **state)
{
	uint64_t seed = 12345;
	int i;

	assert_true(rt_round(DT_F32, 1.0 + ldexp(1, -24)) == 1.0);
	assert_true(rt_round(DT_F32, 1.0 + 3 * ldexp(1, -24)) == 1.0 + ldexp(1, -22));
	assert_true(rt_round(DT_F32, ldexp(1, -149)) == ldexp(1, -149));
	assert_true(rt_round(DT_F32, ldexp(1, -150)) == 0.0);
	assert_true(isinf(rt_round(DT_F32, 1e39)));
	assert_int_equal(bits_of(DT_F32, 1.0), 0x3f800000);
	assert_int_equal(bits_of(DT_F32, -0.0), 0x80000000);
	/* agree with the C conversion on many doubles across the range */
	for (i = 0; i < 100000; i++) {
		double x;
		uint32_t fbits;
		float f;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = ldexp((double)(seed >> 11) / 9007199254740992.0, (int)(seed % 300) - 160);
		x = seed & 1 ? -x : x;
		f = (float)x;
		assert_true(rt_round(DT_F32, x) == (double)f);
		memcpy(&fbits, &f, sizeof fbits);
		assert_int_equal(bits_of(DT_F32, x), fbits);
	}
}

/* Every pattern of a format decodes to a value that encodes back to it. */
static void
round_trip(Dtype dt, uint32_t npatterns)
{
	uint32_t b;

	for (b = 0; b < npatterns; b++) {
		double x = value_of(dt, b);

		if (isnan(x)) {
			assert_true(isnan(value_of(dt, bits_of(dt, x))));
			continue;
		}
		assert_true(rt_round(dt, x) == x);
		if (bits_of(dt, x) != b)
			fail_msg("%s pattern 0x%x -> %g -> 0x%x", dtype_info[dt].name, b, x,
			         bits_of(dt, x));
	}
}

static void
test_round_trips(void **state)
{
	round_trip(DT_F16, 1u << 16);
	round_trip(DT_BF16, 1u << 16);
	round_trip(DT_FP8E4M3, 1u << 8);
	round_trip(DT_FP8E5M2, 1u << 8);
}

static void
test_arrays(void **state)
{
	double src[5] = {1.0, -2.5, 0.1, 1e9, -0.0}, back[5];
	uint16_t h[5];
	unsigned char q[5];
	int i;

	rt_pack(DT_F16, src, 5, h);
	rt_unpack(DT_F16, h, 5, back);
	for (i = 0; i < 5; i++)
		assert_true(back[i] == rt_round(DT_F16, src[i]));
	assert_true(signbit(back[4]));
	rt_pack(DT_FP8E4M3, src, 5, q);
	rt_unpack(DT_FP8E4M3, q, 5, back);
	assert_true(isnan(back[3]));
	assert_true(back[1] == -2.5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f16_rounding),
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_int_rounding),
		cmocka_unit_test(test_e4m3_rounding),
		cmocka_unit_test(test_e5m2_rounding),
		cmocka_unit_test(test_f32_rounding),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_arrays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
