/*
 * test_locale.c: numbers read and written the same whatever the locale
 * (ir/number.c).  The formatter and the parser are tested directly in the C
 * locale, then again, with a spec compiled through the public API, under a
 * locale whose decimal point is ',' (de_DE.UTF-8): the embedding program's
 * setlocale must not turn eps 1e-5 into 1 or emit "0,001f".
 *
 * The comma locale comes from the system, or from BUILD/locale (tests.mk
 * makes it there with localedef, no root needed); without either, the
 * comma-locale tests are skipped.
 */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ir/ir.h"

#include "skip_because.h"

static char locpath[4096];  /* BUILD/locale, from argv[0] */

static void
round_trips(void)
{
	static const double d[] = {0.1, 1e-5, 1.0 / 3, 2.5, -0.001, 1e300, 4.9e-324, 123456789012345678.0};
	static const float f[] = {0.1f, 1e-5f, 1.0f / 3, 2.5f, -0.001f, 3.4028235e38f, 1e-40f, 1.4e-45f, 16777216.0f};
	char s[NUM_MAX];
	double v;
	size_t i;

	for (i = 0; i < sizeof d / sizeof d[0]; i++) {
		num_shortest(s, d[i]);
		assert_null(strchr(s, ','));
		assert_true(num_parse(s, &v));
		assert_true(v == d[i]);
	}
	for (i = 0; i < sizeof f / sizeof f[0]; i++) {
		num_shortest_f32(s, f[i]);
		assert_null(strchr(s, ','));
		assert_true(num_parse(s, &v));
		assert_true((float)v == f[i]);
	}
}

/* What the formatter and the parser give; the same in every locale. */
static void
numbers(void)
{
	char s[NUM_MAX];
	double v;

	assert_true(num_parse("1e-5", &v));
	assert_true(v == 1e-5);
	assert_true(num_parse("0.001", &v));
	assert_true(v == 0.001);
	assert_true(num_parse("-.5", &v));
	assert_true(v == -0.5);
	assert_true(num_parse("1.", &v));
	assert_true(v == 1.0);
	/* a long text (a copy on the heap when the locale's point is not '.') */
	assert_true(num_parse("0.100000000000000000000000000000000000000000000000000000000000000000000000000000", &v));
	assert_true(v == 0.1);
	assert_false(num_parse("0,5", &v));
	assert_false(num_parse("1.5x", &v));
	assert_false(num_parse("", &v));

	num_shortest(s, 0.001);
	assert_string_equal(s, "0.001");
	num_shortest(s, 0.1);
	assert_string_equal(s, "0.1");
	num_shortest(s, 1.0 / 3);
	assert_string_equal(s, "0.3333333333333333");
	num_shortest_f32(s, 1e-5f);
	assert_string_equal(s, "1e-05");
	num_shortest_f32(s, 0.1f);
	assert_string_equal(s, "0.1");
	num_shortest_f32(s, 1.0f / 3);
	assert_string_equal(s, "0.33333334");
	num_shortest_f32(s, 3.4028235e38f);
	assert_string_equal(s, "3.4028235e+38");
	num_snprintf(s, sizeof s, "%.3f", 2.5);
	assert_string_equal(s, "2.500");
	assert_int_equal(num_snprintf(NULL, 0, "%.9g", 1e-5), 5);
	round_trips();
}

static void
c_locale_numbers(void **state)
{
	(void)state;
	numbers();
}

/* Sets a comma-decimal locale for LC_ALL; false if none can be had. */
static bool
comma_locale(void)
{
	static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
	char s[16];
	int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (!locpath[0])
				break;
			setenv("LOCPATH", locpath, 1);   /* glibc reads it at each setlocale */
		}
		for (i = 0; i < sizeof names / sizeof names[0]; i++)
			if (setlocale(LC_ALL, names[i])) {
				snprintf(s, sizeof s, "%.1f", 0.5);
				if (strcmp(s, "0,5") == 0)
					return true;
			}
	}
	setlocale(LC_ALL, "C");
	return false;
}

static void
comma_locale_numbers(void **state)
{
	char s[16];

	(void)state;
	if (!comma_locale())
		skip_because("no comma-decimal locale (de_DE.UTF-8 or fr_FR.UTF-8; the locales package)");
	snprintf(s, sizeof s, "%g", 0.001);
	assert_string_equal(s, "0,001");  /* the C library follows the locale ... */
	numbers();                        /* ... wsfuse does not */
	setlocale(LC_ALL, "C");
}

/* A spec compiled under the comma locale: eps, a literal operand, their IR text and CUDA. */
static void
comma_locale_compile(void **state)
{
	static const char spec[] =
		"fusion: loc\n"
		"sizes: {M: 64, N: 256}\n"
		"inputs:\n  x: {dtype: f32, shape: [M, N]}\n"
		"ops:\n"
		"  - {out: s, op: mul, in: [x, 0.001]}\n"
		"  - {out: y, op: layernorm, in: [s], eps: 1e-5}\n"
		"  - {out: z, op: add, in: [y, 2.5]}\n"
		"outputs:\n  z: {}\n"
		"schedule: {persistent: true}\n";   /* the pipeline: no NVRTC run to count a direct kernel's spills */
	WsfContext *ctx;
	WsfKernel *k = NULL;
	const char *fir, *cu;

	(void)state;
	if (!comma_locale())
		skip_because("no comma-decimal locale (de_DE.UTF-8 or fr_FR.UTF-8; the locales package)");
	ctx = wsf_context_new();
	assert_int_equal(wsf_set_option(ctx, "stop-after", "cuda"), WSF_OK);
	assert_int_equal(wsf_compile_string(ctx, "loc.yaml", spec, strlen(spec), &k), WSF_OK);
	fir = wsf_kernel_text(k, WSF_STAGE_FUSION_IR, NULL);
	cu = wsf_kernel_text(k, WSF_STAGE_CUDA, NULL);
	assert_non_null(strstr(fir, "add(y.var, 1e-05)"));   /* eps, after expansion */
	assert_non_null(strstr(fir, "mul(x, 0.001)"));
	assert_non_null(strstr(fir, "add(y, 2.5)"));
	assert_null(strstr(fir, "0,001"));
	assert_non_null(strstr(cu, "0.001f"));
	assert_non_null(strstr(cu, "1e-05f"));
	assert_non_null(strstr(cu, "2.5f"));
	assert_null(strstr(cu, ",001"));
	assert_null(strstr(cu, "2,5"));
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
	setlocale(LC_ALL, "C");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(c_locale_numbers),
		cmocka_unit_test(comma_locale_numbers),
		cmocka_unit_test(comma_locale_compile),
	};
	const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;

	/* BUILD/tests/test_locale -> BUILD/locale */
	if (slash)
		snprintf(locpath, sizeof locpath, "%.*s/../locale", (int)(slash - argv[0]), argv[0]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
