/*
 * compiler.h: the internal header of compiler/ (front end and driver).
 *
 *   spec.c     reads a YAML fusion spec (libyaml) into the fusion IR
 *   spec_write.c  writes a fusion back as a spec (the backward of --emit=grad)
 *   context.c  the context (options, sizes, handlers, errors) and what a
 *              kernel says of itself (texts, stats, arguments, environment)
 *   compile.c  the compile driver: spec, passes, codegen, NVRTC, dumps, overrides
 *   tune.c     the measured choice (option tune) at a kernel's first launch
 *   launch.c   launches and runs of a compiled kernel
 *   main.c     the wsfuse CLI (uses only include/wsfuse.h, not this header)
 */
#ifndef WSFUSE_COMPILER_H
#define WSFUSE_COMPILER_H

#include "../ir/ir.h"
#include "../runtime/runtime.h"

/*
 * spec.c: parses c->src (c->srclen bytes, named c->file) into a new c->fusion.
 * Checks everything that needs no shape inference: YAML syntax, encoding,
 * duplicate keys, aliases, unknown and missing keys, names (defined once,
 * before use), op names, arity, attributes and their types, dtypes, size
 * values, schedule hints.  Applies c->bind (bindings override `sizes:`
 * defaults; binding a name the spec never uses is an error).  Shapes are
 * recorded as written; passes/infer.c checks them.  Returns 0, or -1 after
 * exactly one diagnostic.
 */
int spec_read(Comp *c);
/*
 * spec_write.c: inferred, expanded fusion F as spec YAML appended to B,
 * which spec_read reads back into a fusion that computes the same; names
 * that are no identifiers ("x.grad") become identifiers.
 */
void spec_write(Comp *c, Buf *b, const Fusion *f);

/*
 * layout.c: option layout ("x=1,0;kv=0,2,1,3"): each input named is given
 * as a permute of a contiguous tensor, x = x_stored.permute(dims), as torch's
 * transposed views are; the kernel's argument becomes x_stored (the input,
 * its dims permuted back) and a permute op gives x.  0, or -1 after an
 * error at the spec's input or the option.
 */
int spec_layout(Comp *c);

/* ---- context.c --------------------------------------------------------- */

/* Plain settings in malloc'ed memory; a compile works on a copy (compile.c). */
struct WsfContext {
	WsfDiagFn diag;
	void *diag_user;
	WsfDumpFn dump;
	void *dump_user;
	SizeBinding *bind;   /* malloc'ed, names malloc'ed */
	int nbind;
	char *dump_after;
	char *cache_dir;
	char *dump_dir;
	char *override_dir;  /* option override-dir (NULL: $WSFUSE_OVERRIDE_DIR) */
	char *dump_list;     /* outputs to write on every compile (option dump; NULL: $WSFUSE_DUMP) */
	char *layout;        /* option layout: "x=1,0;y=..." inputs given permuted (layout.c); NULL: none */
	char *grad_of;       /* option grad-of: "x,w", the inputs the gradient is derived for (grad.c); NULL: all */
	int cache;           /* RtOptions.cache */
	int lineinfo;        /* 0: as $WSFUSE_LINEINFO says (default off), 1: off, 2: on */
	int store_delay;     /* Comp.store_delay: testing the per-tile signal */
	bool no_pdl;         /* Comp.no_pdl: option pdl=0 */
	int tune;            /* option tune: 0 as $WSFUSE_TUNE says (default off), 1 off, 2 on */
	WsfStage stop;
	char *last_error;
	char *environment;   /* the last wsf_environment text */
	int busy;            /* calls in progress (ctx_enter): a handler's wsf_context_delete waits for them */
	bool deleted;        /* deleted from a handler: the outermost call frees it as it returns */
};

/*
 * A compiled kernel: its Comp's arena holds the IR, the texts of every
 * stage and the launch state.
 */
struct WsfKernel {
	Comp comp;
	const char *text[WSF_STAGE_COUNT];
	size_t len[WSF_STAGE_COUNT];
	Launch *launch;   /* what codegen says the kernel needs at launch */
	Loaded *loaded;   /* module and driver, once launched */
	/* option tune: the candidates are timed at the first launch (tune_kernel) */
	bool tune;
	SizeBinding *bind;   /* the bindings it was compiled with, for the candidates (in the arena) */
	int nbind;
	char *choice;        /* malloc'ed: what the first launch chose, once tuned */
	int busy;            /* launches and runs of it in progress (ctx_enter) */
	bool deleted;        /* deleted from a handler: the outermost call frees it as it returns */
};

/* Bytes of a user's string quoted in a message. */
#define MAX_QUOTED 40
/*
 * The longest spec name (the file name of diagnostics and of the generated
 * source's comments) and option value: a path fits in PATH_MAX.
 */
#define MAX_STRING 4096

/* Records the message as the last error (control bytes as '?') and passes it to the callback. */
WsfStatus ctx_error(WsfContext *ctx, WsfStatus s, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* A null argument ARG of public call FN: WSF_ERR_USAGE, and a message naming both. */
WsfStatus null_arg(WsfContext *ctx, const char *fn, const char *arg);
/* Passes MSG (severity SEV) to the callback only: a note or warning is never the last error. */
void ctx_notify(WsfContext *ctx, WsfSeverity sev, const char *msg);
/*
 * A call on CTX (and K) that may run the diagnostic handler and go on
 * after it returns: a handler's wsf_context_delete or wsf_kernel_delete of
 * either waits for the outermost such call to return (ctx_leave, which
 * returns S).
 */
void ctx_enter(WsfContext *ctx, WsfKernel *k);
WsfStatus ctx_leave(WsfContext *ctx, WsfKernel *k, WsfStatus s);
/* The runtime's options from CTX's, and the variables behind the ones not set. */
RtOptions ctx_runtime_options(const WsfContext *ctx);
/*
 * The outputs LIST names ("cuda,ptx", "all"; "" none) as a mask of stage
 * bits in *MASK; NULL, or where the first name that is not an output starts.
 */
const char *dump_outputs(const char *list, unsigned *mask);
/* The error for BAD, a name in the dump list from WHERE that is no output. */
WsfStatus unknown_output(WsfContext *ctx, const char *bad, const char *where);
/* Frees K, its arena and its loaded module; NULL is ignored. */
void kernel_free(WsfKernel *k);

/* ---- compile.c --------------------------------------------------------- */

/*
 * Compiles spec TEXT (LEN bytes, named NAME) with CTX's settings into a new
 * *OUT; SCHED, when not NULL, replaces the spec's schedule (a candidate of
 * the measured choice: compiled as generated, whatever override-dir says).
 * A failure sets CTX's last error and leaves *OUT NULL.
 */
WsfStatus compile_spec(WsfContext *ctx, const char *name, const char *text, size_t len, const Schedule *sched,
                       WsfKernel **out);

/* ---- tune.c ------------------------------------------------------------ */

/*
 * The measured choice, at K's first launch with option tune, on ARGS and
 * STREAM: K becomes the fastest candidate; any failure leaves K as compiled.
 */
void tune_kernel(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream);
/*
 * The choice a tune record (TEXT, LEN bytes) holds among the N
 * candidates whose descriptions are CAND: its "choice N" (digits, below N)
 * with a "# MS ms: CAND[N]" line saying it was timed; else -1 and *WHY.
 * Exposed for tests.
 */
int tune_parse_record(const char *text, size_t len, const char *const *cand, int n, const char **why);

/* ---- launch.c ---------------------------------------------------------- */

/*
 * A Comp for one launch or run of K (a cubin): the kernel's IR, the
 * context's callbacks and bindings, and a scratch arena of its own that
 * call_end frees, making the context's last error the call's (S).
 */
WsfStatus call_begin(WsfContext *ctx, WsfKernel *k, Comp *c);
WsfStatus call_end(WsfContext *ctx, Comp *c, WsfStatus s);

#endif
