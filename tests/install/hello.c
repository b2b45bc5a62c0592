/*
 * hello.c: a program that embeds libwsfuse, as a user builds it against the
 * installed library (tests/run_install.sh: through pkg-config and through
 * CMake).  It compiles a spec to CUDA C++, which exercises the libyaml
 * inside the library, and prints "VERSION KERNEL-NAME".
 */
#include <stdio.h>
#include <string.h>

#include <wsfuse.h>

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
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	int rc = 1;

	if (!ctx)
		return 1;
	if (wsf_set_option(ctx, "stop-after", "cuda") == WSF_OK &&
	    wsf_compile_string(ctx, "hello.yaml", spec, strlen(spec), &k) == WSF_OK) {
		printf("%s %s\n", wsf_version(), wsf_kernel_name(k));
		rc = 0;
	} else {
		fprintf(stderr, "hello: %s\n", wsf_context_last_error(ctx));
	}
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
	return rc;
}
