/*
 * test_run.c: the host side of `wsfuse run --check` (runtime/run.c) without a
 * GPU: the random inputs (rt_fill_random) and the comparison of an output
 * with the reference (rt_compare), at sizes that split over threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "comp_init.h"

enum { N = 1000003 };  /* 245 chunks of 4096, the last one short */

/* Values in range, representable in the dtype, packed as kept, and the same for the same seed. */
static void
fill_is_deterministic_and_rounded(void **state)
{
	static const Dtype dts[] = {DT_BF16, DT_F16, DT_F32};
	uint16_t *p1 = malloc(N * 4), *p2 = malloc(N * 4), *p3 = malloc(N * 4);
	double *h1 = malloc(N * sizeof *h1), *h2 = malloc(N * sizeof *h2), *back = malloc(N * sizeof *back);
	int d;
	int64_t i, differ;

	(void)state;
	for (d = 0; d < 3; d++) {
		size_t bytes = (size_t)N * dtype_info[dts[d]].bytes;

		rt_fill_random(dts[d], N, 42, -2.0, 2.0, 0, p1, h1);
		rt_fill_random(dts[d], N, 42, -2.0, 2.0, 0, p2, NULL);  /* no host copy: the same packed values */
		rt_fill_random(dts[d], N, 43, -2.0, 2.0, 0, p3, h2);
		assert_memory_equal(p1, p2, bytes);
		rt_unpack(dts[d], p1, N, back);
		differ = 0;
		for (i = 0; i < N; i++) {
			if (!(h1[i] >= -2.0 && h1[i] <= 2.0) || h1[i] != rt_round(dts[d], h1[i]) || back[i] != h1[i])
				fail_msg("dtype %s element %lld: %.17g (packed %.17g)", dtype_info[dts[d]].name,
				         (long long)i, h1[i], back[i]);
			differ += h1[i] != h2[i];
		}
		assert_true(differ > N / 2);  /* another seed, other values */
	}
	free(p1);
	free(p2);
	free(p3);
	free(h1);
	free(h2);
	free(back);
}

/* Integer inputs are non-zero, in -8..8 (uint8: 1..16), every value drawn; bool is 0 or 1, both drawn. */
static void
fill_integers_and_bool(void **state)
{
	static const Dtype dts[] = {DT_INT8, DT_UINT8, DT_INT32, DT_INT64, DT_BOOL};
	int64_t *packed = malloc(N * 8);
	double *h = malloc(N * sizeof *h);
	int d, seen[33];
	int64_t i;

	(void)state;
	for (d = 0; d < 5; d++) {
		int lo = dts[d] == DT_BOOL ? 0 : dts[d] == DT_UINT8 ? 1 : -8, hi = dts[d] == DT_BOOL ? 1 : dts[d] == DT_UINT8 ? 16 : 8;
		int v, n = 0;

		memset(seen, 0, sizeof seen);
		rt_fill_random(dts[d], N, 7, -2.0, 2.0, 0, packed, h);
		for (i = 0; i < N; i++) {
			if (!(h[i] >= lo && h[i] <= hi) || h[i] != floor(h[i]) || (dts[d] != DT_BOOL && h[i] == 0))
				fail_msg("dtype %s element %lld: %g", dtype_info[dts[d]].name, (long long)i, h[i]);
			seen[(int)h[i] + 16]++;
		}
		for (v = lo; v <= hi; v++)
			n += seen[v + 16] > 0;
		assert_int_equal(n, hi - lo + 1 - (dts[d] == DT_BOOL || dts[d] == DT_UINT8 ? 0 : 1));
	}
	free(packed);
	free(h);
}

/* Integer and bool outputs compare exactly; a NaN the reference computed must be a NaN in the output. */
static void
compare_integers_and_nan(void **state)
{
	int32_t got[4] = {1, -2, 3, 4};
	double want[4] = {1, -2, 3, 4}, fwant[2] = {NAN, 1.0};
	float fgot[2] = {NAN, 1.0f};
	double err;
	RtMiss miss;

	(void)state;
	assert_int_equal(rt_compare(DT_INT32, 4, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(err == 0);
	got[2] = 2;
	assert_int_equal(rt_compare(DT_INT32, 4, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(err > 0);
	assert_int_equal(rt_compare(DT_F32, 2, fgot, fwant, NULL, 0, &err, &miss), WSF_OK);
	assert_true(err == 0);
	fgot[0] = 0.0f;
	assert_int_equal(rt_compare(DT_F32, 2, fgot, fwant, NULL, 0, &err, &miss), WSF_OK);
	assert_true(isinf(err));
}

/* rt_compare: exact is 0, a relative error comes back as itself, the poison is an unwritten value. */
static void
compare_errors_and_poison(void **state)
{
	float *got = malloc(N * sizeof *got);
	double *want = malloc(N * sizeof *want), err;
	RtMiss miss;
	int64_t i;

	(void)state;
	for (i = 0; i < N; i++)
		want[i] = (double)(float)(sin((double)i) + 2.0);
	rt_pack(DT_F32, want, N, got);
	assert_int_equal(rt_compare(DT_F32, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(err == 0.0);
	assert_int_equal(miss.count, 0);
	for (i = 0; i < N; i++)
		got[i] = (float)(want[i] * (1.0 + 1e-4));
	assert_int_equal(rt_compare(DT_F32, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(fabs(err - 1e-4) < 1e-6);
	assert_int_equal(miss.count, 0);
	rt_pack(DT_F32, want, N, got);
	memset(&got[N - 1], 0xff, sizeof got[0]);  /* the last element of the short last chunk kept the poison */
	memset(&got[N / 3], 0xff, sizeof got[0]);  /* and one in another chunk: the note names the first */
	assert_int_equal(rt_compare(DT_F32, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 2);
	assert_int_equal(miss.first, N / 3);
	assert_true(isnan(miss.got));
	assert_true(miss.want == want[N / 3]);
	rt_pack(DT_F32, want, N, got);
	memset(&got[N - 1], 0xff, sizeof got[0]);
	want[N - 1] = NAN;  /* where the reference is NaN too, a NaN is no sign of an unwritten element */
	assert_int_equal(rt_compare(DT_F32, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 0);
	free(got);
	free(want);
}

/*
 * rt_compare of an f16 output past its range: where the reference rounds
 * to infinity (or to 65504) and the kernel's value did too, the same sign,
 * the element agrees and leaves the norms (a product of two long sums
 * overflows f16 on both sides); a finite value where the reference
 * overflowed, or the other sign, is an infinite error.
 */
static void
compare_overflow(void **state)
{
	uint16_t *got = malloc(N * sizeof *got);
	double *want = malloc(N * sizeof *want), *back = malloc(N * sizeof *back), err;
	RtMiss miss;
	int64_t i;

	(void)state;
	for (i = 0; i < N; i++)
		want[i] = i % 7 == 0 ? 1e6 * (i % 2 ? -1 : 1) : i % 11 == 0 ? 65510.0 : sin((double)i) * 100;
	for (i = 0; i < N; i++)
		back[i] = i % 7 == 0 ? want[i] * 2 : want[i];   /* the kernel's sums, larger still: the same infinities */
	rt_pack(DT_F16, back, N, got);
	assert_int_equal(rt_compare(DT_F16, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(err < 1e-3);
	assert_int_equal(miss.count, 0);
	back[7] = -back[7];   /* the other infinity */
	rt_pack(DT_F16, back, N, got);
	assert_int_equal(rt_compare(DT_F16, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(isinf(err));
	back[7] = 100.0;      /* finite where the reference overflowed */
	rt_pack(DT_F16, back, N, got);
	assert_int_equal(rt_compare(DT_F16, N, got, want, NULL, 0, &err, &miss), WSF_OK);
	assert_true(isinf(err));
	free(got);
	free(want);
	free(back);
}

/*
 * rt_compare of an accumulating output (INIT): an element still at its
 * value before the launch is unwritten where the sum is more than 4 ulps
 * and more than the floor from it, and a written one, or one whose sum
 * rounds to it, is not.
 */
static void
compare_accumulated(void **state)
{
	float *got = malloc(N * sizeof *got);
	double *want = malloc(N * sizeof *want), *init = malloc(N * sizeof *init), err;
	RtMiss miss;
	int64_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		init[i] = (double)(float)(cos((double)i) + 2.0);
		want[i] = init[i] + (double)(float)(sin((double)i) + 2.0);
	}
	rt_pack(DT_F32, want, N, got);
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 0, &err, &miss), WSF_OK);
	assert_true(err < 1e-7);
	assert_int_equal(miss.count, 0);
	got[N / 2] = (float)init[N / 2];   /* one element the kernel never added to */
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 0, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 1);
	assert_int_equal(miss.first, N / 2);
	assert_true(miss.got == init[N / 2] && miss.want == (double)(float)want[N / 2]);
	want[N / 2] = init[N / 2] * (1 + 0x1p-24);   /* its sum rounds to what it held: no sign */
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 0, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 0);
	init[N / 2] = got[N / 2] = 1e-4f;   /* a tiny value plus an activation's far tail (gelu(-6) in f32: 0) */
	want[N / 2] = init[N / 2] - 5.9e-9;
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 0, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 1);
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 1e-8, &err, &miss), WSF_OK);   /* within the floor */
	assert_int_equal(miss.count, 0);
	want[N / 2] = init[N / 2] - 2e-8;   /* past it: unwritten */
	assert_int_equal(rt_compare(DT_F32, N, got, want, init, 1e-8, &err, &miss), WSF_OK);
	assert_int_equal(miss.count, 1);
	free(got);
	free(want);
	free(init);
}

/* The note of a check's unwritten values: the count, the first one's index in the shape, both values. */
static const char *last_note;

static void
keep_note(void *user, WsfSeverity sev, const char *msg)
{
	(void)user;
	if (sev == WSF_SEV_NOTE)
		last_note = msg;
}

static void
note_names_the_first(void **state)
{
	static const int64_t shape[2] = {4, 5};
	double init[20] = {0};
	Tensor x = {.name = "e1", .rank = 2, .pos = {.line = 8, .col = 11, .file = "spec.yaml"}};
	RtMiss m = {2, 13, NAN, 0.5};
	Comp c;

	(void)state;
	COMP_INIT(c);
	c.diag = keep_note;
	init[13] = 0.25;
	rt_note_miss(&c, &x, shape, 20, &m, NULL);
	assert_contains(last_note, "spec.yaml:8:11: note: output 'e1': 2 of 20 values not written; the first at [2, 3]: "
	                           "nan, the reference 0.5");
	assert_null(strstr(last_note, "before the launch"));
	m.got = 0.25;
	rt_note_miss(&c, &x, shape, 20, &m, init);   /* accumulating: what it held */
	assert_contains(last_note, "the first at [2, 3]: 0.25, the reference 0.5, before the launch 0.25");
	assert_int_equal(c.nerrors, 0);
	arena_free(c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fill_is_deterministic_and_rounded),
		cmocka_unit_test(fill_integers_and_bool),
		cmocka_unit_test(compare_integers_and_nan),
		cmocka_unit_test(compare_errors_and_poison),
		cmocka_unit_test(compare_overflow),
		cmocka_unit_test(compare_accumulated),
		cmocka_unit_test(note_names_the_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
