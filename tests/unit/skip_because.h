/*
 * skip_because.h: skip_because(FORMAT, ...), cmocka's skip() with its
 * reason, printed first as the TAP comment "# skip: WHY" (one line).
 * run_unit.sh puts it on the case's "skipped" line; a skip without one is a
 * failure there.  Include it after <cmocka.h>.
 */
#ifndef WSFUSE_TEST_SKIP_BECAUSE_H
#define WSFUSE_TEST_SKIP_BECAUSE_H

#include <stdio.h>

#define skip_because(...) \
	do { \
		printf("# skip: "); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		fflush(stdout); \
		skip(); \
	} while (0)

#endif
