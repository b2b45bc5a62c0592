/*
 * fixture.h: the Comp the IR-level unit tests share.  setup() gives each test
 * its own arena, string table and out-of-memory landing point, named
 * FILE_NAME in diagnostics; the last diagnostic is kept in msg.  Include it
 * after <cmocka.h> and the internal headers a test needs.
 */
#ifndef WSFUSE_TEST_FIXTURE_H
#define WSFUSE_TEST_FIXTURE_H

#define FILE_NAME "test.yaml"

typedef struct Fixture {
	Comp c;
	char msg[4096];      /* the last diagnostic */
	SizeBinding bind[4]; /* for tests of -D bindings */
} Fixture;

static void
on_diag(void *user, WsfSeverity sev, const char *msg)
{
	Fixture *t = user;

	(void)sev;
	snprintf(t->msg, sizeof t->msg, "%s", msg);
}

static int
setup(void **state)
{
	Fixture *t = calloc(1, sizeof *t);

	if (!t || !(t->c.arena = arena_new(&t->c.oom)))
		return -1;
	t->c.strs = strtab_new(t->c.arena);
	t->c.file = FILE_NAME;
	t->c.diag = on_diag;
	t->c.diag_user = t;
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	Fixture *t = *state;

	arena_free(t->c.arena);
	free(t);
	return 0;
}

/*
 * For the kernel-pass tests: how many statements of each kind S holds (S
 * itself counted), and an expression as the IR printer writes it.
 */
typedef struct Census {
	int kind[ST_SIGNAL + 1];
} Census;

static inline void
census_count(Stmt *s, void *user)
{
	((Census *)user)->kind[s->kind]++;
}

static inline Census
census(Stmt *s)
{
	Census n = {{0}};

	st_walk(s, census_count, &n);
	return n;
}

static inline const char *
expr(Fixture *t, const Expr *e)
{
	Buf b;

	buf_init(&b, t->c.arena);
	expr_print(&b, t->c.kernel, e);
	return buf_str(&b);
}

#endif
