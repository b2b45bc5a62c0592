/*
 * fuzz_spec.c: the libFuzzer entry point for the front end.
 *
 * Each input is a spec compiled through the public API up to the fusion IR
 * (YAML reader, expansion, inference, verifier, printer); no NVRTC, no GPU.
 * Besides the sanitizers' checks it holds the library to what include/wsfuse.h
 * and SPEC.md promise for any input, and traps when a promise breaks:
 *   - the status is a known one, and never WSF_ERR_INTERNAL;
 *   - a kernel comes back exactly when the status is WSF_OK;
 *   - a rejected spec gets exactly one error, named after the file, and it is
 *     kept as the context's last error;
 *   - an accepted spec has printable fusion IR.
 *
 * `make fuzz` links this with libFuzzer; tests/fuzz/replay.c links it into a
 * plain program so that `make test` replays the corpus and past crashes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsfuse.h"

#define NAME "fuzz.yaml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Count {
	int errors;
} Count;

static void
broken(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_spec: broken promise: %s%s%s\n", what, detail ? ": " : "",
	        detail ? detail : "");
	abort();
}

static void
on_diag(void *user, WsfSeverity sev, const char *msg)
{
	Count *n = user;

	if (sev <= WSF_SEV_NONE || sev > WSF_SEV_ERROR)
		broken("diagnostic with an unknown severity", msg);
	if (!msg || !*msg)
		broken("empty diagnostic", NULL);
	if (sev != WSF_SEV_ERROR)
		return;
	if (strncmp(msg, NAME ":", strlen(NAME ":")) != 0)
		broken("error not named FILE:LINE:COL", msg);
	n->errors++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	WsfContext *ctx = wsf_context_new();
	WsfKernel *k = NULL;
	Count n = {0};
	WsfStatus st;

	if (!ctx)
		return 0;
	wsf_set_diagnostic_handler(ctx, on_diag, &n);
	/* every pass and the CUDA emitter run; only NVRTC is left out (too slow to fuzz) */
	if (wsf_set_option(ctx, "stop-after", "cuda") != WSF_OK)
		broken("option stop-after=cuda refused", wsf_context_last_error(ctx));
	st = wsf_compile_string(ctx, NAME, (const char *)data, size, &k);

	if ((int)st < 0 || st >= WSF_STATUS_COUNT)
		broken("unknown status", NULL);
	if (st == WSF_ERR_INTERNAL)
		broken("internal error", wsf_context_last_error(ctx));
	if ((st == WSF_OK) != (k != NULL))
		broken("a kernel must come back exactly when the status is WSF_OK",
		       wsf_status_name(st));
	if (st == WSF_OK) {
		const char *ir = wsf_kernel_text(k, WSF_STAGE_FUSION_IR, NULL);

		if (!ir || !*ir)
			broken("accepted spec without fusion IR", NULL);
		if (!wsf_kernel_text(k, WSF_STAGE_KERNEL_IR, NULL) || !wsf_kernel_text(k, WSF_STAGE_CUDA, NULL))
			broken("accepted spec without kernel IR or CUDA", NULL);
		if (!wsf_kernel_name(k) || !*wsf_kernel_name(k))
			broken("accepted spec without a name", NULL);
		if (n.errors)
			broken("accepted spec reported an error", wsf_context_last_error(ctx));
	} else if (st == WSF_ERR_INPUT || st == WSF_ERR_UNSUPPORTED) {
		if (n.errors != 1)
			broken("a rejected spec must get exactly one error", wsf_context_last_error(ctx));
		if (!*wsf_context_last_error(ctx))
			broken("rejected spec without a last error", NULL);
	}
	wsf_kernel_delete(k);
	wsf_context_delete(ctx);
	return 0;
}
