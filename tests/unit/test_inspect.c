/*
 * test_inspect.c: the calls of include/wsfuse.h for looking at what wsfuse
 * does, used as an embedding program would: wsf_environment (what `wsfuse
 * --version` and `wsfuse env` print) and wsf_pass_name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wsfuse.h"

#include "have_nvrtc.h"

static const char spec[] __attribute__((unused)) =
	"fusion: inspect\n"
	"sizes: {M: 64, N: 128}\n"
	"inputs:\n"
	"  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: f32, shape: [N]}\n"
	"ops:\n"
	"  - {out: y, op: add, in: [x, b]}\n"
	"  - {out: z, op: relu, in: [y]}\n"
	"outputs:\n"
	"  z: {dtype: bf16}\n";

/* Does some line of TEXT start with PREFIX? */
static bool
has_line(const char *text, const char *prefix)
{
	const char *p;

	for (p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static int errors;

static void
count_errors(void *user, WsfSeverity sev, const char *msg)
{
	(void)user;
	(void)msg;
	errors += sev == WSF_SEV_ERROR;
}

/*
 * wsf_environment says what it finds and why something is missing, without
 * a diagnostic: missing NVRTC and driver are not errors here.
 */
static void
environment(void **state)
{
	WsfContext *ctx = wsf_context_new();
	const char *t;
	char *first;

	(void)state;
	assert_null(wsf_environment(NULL, 0));
	wsf_set_diagnostic_handler(ctx, count_errors, NULL);
	errors = 0;
	t = wsf_environment(ctx, 0);
	assert_non_null(t);
	assert_true(has_line(t, "wsfuse " WSF_VERSION_STRING "\n"));
	assert_true(has_line(t, "nvrtc: "));
	assert_true(has_line(t, "driver: "));
	assert_true(has_line(t, "gpu"));
	assert_false(has_line(t, "nvrtc options: "));
	if (have_nvrtc())
		assert_false(has_line(t, "nvrtc: none"));
	first = strdup(t);
	assert_non_null(first);

	/* nothing to load: said so, and still no error */
	setenv("WSFUSE_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
	setenv("WSFUSE_LIBCUDA_PATH", "/nonexistent/libcuda.so.1", 1);
	setenv("WSFUSE_CACHE", "1", 1);
	assert_int_equal(wsf_set_option(ctx, "cache-dir", "/tmp/wsfuse-inspect-cache"), WSF_OK);
	t = wsf_environment(ctx, 1);
	assert_non_null(t);
	assert_true(has_line(t, "nvrtc: none (cannot load NVRTC from WSFUSE_NVRTC_PATH: /nonexistent/libnvrtc.so"));
	assert_true(has_line(t, "driver: none (/nonexistent/libcuda.so.1: cannot open"));
	assert_true(has_line(t, "gpu: none"));
	assert_true(has_line(t, "nvrtc options: --gpu-architecture=sm_90a"));
	assert_true(has_line(t, "built with: CUDA headers "));
	assert_true(has_line(t, "cache: /tmp/wsfuse-inspect-cache\n"));
	assert_true(has_line(t, "  WSFUSE_NVRTC_PATH=/nonexistent/libnvrtc.so\n"));
	/* a value cannot put a line of its own in the report */
	setenv("WSFUSE_LIBCUDA_PATH", "/x\ngpu 0: fake", 1);
	t = wsf_environment(ctx, 1);
	assert_false(has_line(t, "gpu 0: fake"));
	assert_true(has_line(t, "  WSFUSE_LIBCUDA_PATH=/x\n    gpu 0: fake\n"));
	unsetenv("WSFUSE_NVRTC_PATH");
	unsetenv("WSFUSE_LIBCUDA_PATH");
	unsetenv("WSFUSE_CACHE");
	assert_int_equal(errors, 0);
	assert_string_equal(wsf_context_last_error(ctx), "");
	assert_string_equal(wsf_environment(ctx, 0), first);
	free(first);
	wsf_context_delete(ctx);
}

/* wsf_pass_name lists the passes dump-after takes, in order, and nothing else. */
static void
pass_names(void **state)
{
	static const char *const want[] = {"expand", "infer", "schedule", "lower", "circular_buffer",
	                                   "warp_specialize", "sync"};
	WsfContext *ctx = wsf_context_new();
	int i;

	(void)state;
	for (i = 0; wsf_pass_name(i); i++) {
		assert_true(i < (int)(sizeof want / sizeof want[0]));
		assert_string_equal(wsf_pass_name(i), want[i]);
		assert_int_equal(wsf_set_option(ctx, "dump-after", wsf_pass_name(i)), WSF_OK);
	}
	assert_int_equal(i, (int)(sizeof want / sizeof want[0]));
	assert_null(wsf_pass_name(-1));
	assert_null(wsf_pass_name(1000));
	wsf_context_delete(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(environment),
		cmocka_unit_test(pass_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
