/*
 * clash.c: hello.c's program with functions of its own named as libwsfuse's
 * internals are (and, with -DOWN_YAML, as libyaml's), linked statically
 * against the installed libwsfuse.a (tests/run_install.sh).  The archive
 * hides all but wsf_*: the link succeeds, each call here reaches the
 * program's own function, and the library still parses with its own.
 * Prints "VERSION KERNEL-NAME".
 */
#include <stdio.h>
#include <string.h>

#include <wsfuse.h>

int buf_init(void);
int intern(int);
int kernel_new(int);

int buf_init(void) { return 1; }
int intern(int x) { return x + 1; }
int kernel_new(int x) { return x * 2; }

#ifdef OWN_YAML
/* a parser that always fails: libwsfuse must not call it */
int yaml_parser_initialize(void *);
int yaml_parser_initialize(void *parser) { (void)parser; return 0; }
#define OWN_YAML_OK (yaml_parser_initialize(NULL) == 0)
#else
#define OWN_YAML_OK 1
#endif

static const char spec[] =
	"fusion: hello\n"
	"sizes: {N: 1024}\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [N]}\n"
	"ops:\n"
	"  - {out: y, op: relu, in: [x]}\n"
	"outputs:\n"
	"  y: {dtype: f32}\n";

int
main(void)
{
	WsfContext *ctx;
	WsfKernel *k = NULL;
	int rc = 1;

	if (buf_init() != 1 || intern(1) != 2 || kernel_new(3) != 6 || !OWN_YAML_OK) {
		fprintf(stderr, "clash: a call reached libwsfuse's function, not the program's\n");
		return 1;
	}
	if (!(ctx = wsf_context_new()))
		return 1;
	if (wsf_set_option(ctx, "stop-after", "cuda") == WSF_OK &&
	    wsf_compile_string(ctx, "hello.yaml", spec, strlen(spec), &k) == WSF_OK) {
		printf("%s %s\n", wsf_version(), wsf_kernel_name(k));
		rc = 0;
	} else {
		fprintf(stderr, "clash: %s\n", wsf_context_last_error(ctx));
	}
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
	return rc;
}
