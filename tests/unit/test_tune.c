/*
 * test_tune.c: the record of a measured choice (option tune) as
 * tune_parse_record reads it back from the cache's tune/ folder.  A record
 * is a file anyone may have planted or cut short: only what tune_kernel
 * writes (a choice that is a candidate's number, with that candidate's
 * time) picks a kernel; anything else is a miss.  The launch-time paths
 * (a FIFO planted as the record, a record timed again) need a GPU:
 * tests/gpu/tune.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "../../compiler/compiler.h"

static const char *const cand[] = {"the spec's schedule", "split_k: 2", "cluster: [2, 1]", "stream_k: true"};

static int
parse(const char *rec, const char **why)
{
	*why = NULL;
	return tune_parse_record(rec, strlen(rec), cand, 4, why);
}

/* What tune_kernel writes reads back as its choice. */
static void
written_records(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(parse("wsfuse tune 1 choice 0\n# g.yaml: the spec's schedule\n"
	                       "# 0.0123 ms: the spec's schedule\n# 0.0456 ms: split_k: 2\n", &why), 0);
	assert_int_equal(parse("wsfuse tune 1 choice 3\n# g.yaml: stream_k: true\n"
	                       "# 0.0500 ms: the spec's schedule\n# 0.0400 ms: stream_k: true\n", &why), 3);
	/* the last line unended, as a record cut at its end */
	assert_int_equal(parse("wsfuse tune 1 choice 1\n# 0.0400 ms: split_k: 2", &why), 1);
}

/* A choice that is not a candidate's number: a miss, never another candidate. */
static void
bad_choices(void **state)
{
	static const char *const bad[] = {
		"wsfuse tune 1 choice 4294967299\n# 0.1 ms: stream_k: true\n",   /* 3 mod 2^32 */
		"wsfuse tune 1 choice 18446744073709551617\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 99999999999999999999999999999999999\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 4\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice -1\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice +1\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 01\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 0x1\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice  1\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 1 \n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 1",
		"wsfuse tune 1 choice \n",
		"wsfuse tune 2 choice 1\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice",
		"",
	};
	const char *why;
	int i;

	(void)state;
	for (i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
		assert_int_equal(parse(bad[i], &why), -1);
		assert_non_null(why);
	}
	/* a NUL byte inside: not a record */
	assert_int_equal(tune_parse_record("wsfuse tune 1 choice 1\n\0# 0.1 ms: split_k: 2\n", 46, cand, 4, &why), -1);
}

/* A choice with no time among the record's lines: a candidate never timed, a miss. */
static void
untimed_choices(void **state)
{
	static const char *const bad[] = {
		"wsfuse tune 1 choice 2\n# g.yaml: cluster: [2, 1]\n# 0.1 ms: the spec's schedule\n",
		"wsfuse tune 1 choice 2\n# 0.1 ms: cluster: [2, 1] \n",
		"wsfuse tune 1 choice 2\n# 0.1 ms: cluster: [2, 1]x\n",
		"wsfuse tune 1 choice 2\n# .1 ms: cluster: [2, 1]\n",
		"wsfuse tune 1 choice 2\n# 1 ms: cluster: [2, 1]\n",
		"wsfuse tune 1 choice 2\n# -0.1 ms: cluster: [2, 1]\n",
		"wsfuse tune 1 choice 2\n# 0.1 ms: split_k: 2\n",
		"wsfuse tune 1 choice 2\n",
	};
	const char *why;
	int i;

	(void)state;
	for (i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
		assert_int_equal(parse(bad[i], &why), -1);
		assert_string_equal(why, "it has no time for its choice");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(written_records),
		cmocka_unit_test(bad_choices),
		cmocka_unit_test(untimed_choices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
