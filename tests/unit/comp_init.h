/*
 * comp_init.h: what the runtime-layer unit tests share.  COMP_INIT gives a
 * bare Comp its arena, string table and out-of-memory landing point (a failed
 * test, not a crash); assert_contains checks a message names what it should.
 * Include it after <cmocka.h> and runtime/runtime.h.
 */
#ifndef WSFUSE_TEST_COMP_INIT_H
#define WSFUSE_TEST_COMP_INIT_H

#define COMP_INIT(c) \
	do { \
		memset(&(c), 0, sizeof(c)); \
		if (setjmp((c).oom)) \
			fail_msg("out of memory"); \
		(c).arena = arena_new(&(c).oom); \
		(c).strs = strtab_new((c).arena); \
	} while (0)

static inline void
assert_contains(const char *s, const char *part)
{
	if (!s || !strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s ? s : "(null)");
}

#endif
