/*
 * launch.c: launches and runs of a compiled kernel (wsf_kernel_launch,
 * _launch_ex, _run, _signal_layout).  Each call works on a Comp of its own
 * (call_begin) over the kernel's IR, whose scratch arena call_end frees; a
 * kernel compiled with option tune makes its measured choice (tune.c)
 * first.  The launch itself is the runtime's (rt_launch, rt_run).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"

/* A launch or run of K from a handler of a call on K: its launch state is in use. */
static WsfStatus
kernel_in_use(WsfContext *ctx, const char *fn, const WsfKernel *k)
{
	return ctx_error(ctx, WSF_ERR_USAGE, "%s: error: kernel '%s' is in a call already: a diagnostic handler "
	                 "cannot launch or run the kernel whose call it is told of", fn, wsf_kernel_name(k));
}

/* A scratch arena a call: a program launching a kernel a million times does not grow. */
WsfStatus
call_begin(WsfContext *ctx, WsfKernel *k, Comp *c)
{
	if (!k->text[WSF_STAGE_CUBIN])
		return ctx_error(ctx, WSF_ERR_USAGE,
		                 "error: kernel '%s' was not compiled to a cubin (stop-after stopped it earlier)",
		                 wsf_kernel_name(k));
	if (!(c->arena = arena_new(&c->oom)))
		return ctx_error(ctx, WSF_ERR_NOMEM, "error: out of memory");
	c->strs = k->comp.strs;
	c->file = k->comp.file;
	c->src = k->comp.src;
	c->srclen = k->comp.srclen;
	c->fusion = k->comp.fusion;
	c->kernel = k->comp.kernel;
	c->diag = ctx->diag;
	c->diag_user = ctx->diag_user;
	c->bind = ctx->bind;
	c->nbind = ctx->nbind;
	return WSF_OK;
}

/* The context's last error is this call's, even without a diagnostic. */
WsfStatus
call_end(WsfContext *ctx, Comp *c, WsfStatus s)
{
	if (s != WSF_OK && c->last_error) {
		free(ctx->last_error);
		ctx->last_error = strdup(c->last_error);
	} else if (s != WSF_OK) {
		ctx_error(ctx, s, "error: %s", wsf_status_message(s));
	}
	arena_free(c->arena);
	return s;
}

static WsfStatus
kernel_launch(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream)
{
	Comp c = {0};
	WsfStatus s;

	if (k->tune)
		tune_kernel(ctx, k, args, nargs, stream);
	if ((s = call_begin(ctx, k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, stream, NULL);
	return call_end(ctx, &c, s);
}

WsfStatus
wsf_kernel_launch(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (!k || (nargs && !args))
		return null_arg(ctx, __func__, k ? "args" : "k");
	if (k->busy)
		return kernel_in_use(ctx, __func__, k);
	ctx_enter(ctx, k);
	return ctx_leave(ctx, k, kernel_launch(ctx, k, args, nargs, stream));
}

static WsfStatus
kernel_launch_ex(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, const WsfLaunchOptions *opts)
{
	Comp c = {0};
	LaunchExtra x = {0};
	WsfStatus s;

	if (k->tune)   /* only kernels that neither signal nor wait tune: opts has nothing they need */
		tune_kernel(ctx, k, args, nargs, opts->stream);
	if ((s = call_begin(ctx, k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	x.flags = opts->flags;
	x.epoch = opts->epoch;
	x.max_ctas = opts->max_ctas;
	x.wait_flags = opts->wait_flags;
	s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, opts->stream, &x);
	return call_end(ctx, &c, s);
}

WsfStatus
wsf_kernel_launch_ex(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, const WsfLaunchOptions *opts)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (!k || (nargs && !args) || !opts)
		return null_arg(ctx, __func__, !k ? "k" : !opts ? "opts" : "args");
	if (k->busy)
		return kernel_in_use(ctx, __func__, k);
	ctx_enter(ctx, k);
	return ctx_leave(ctx, k, kernel_launch_ex(ctx, k, args, nargs, opts));
}

static WsfStatus
signal_layout(WsfContext *ctx, const WsfKernel *k, const WsfTensor *args, int nargs, WsfSignalLayout *out)
{
	Comp c = {0};
	LaunchPlan plan;
	WsfStatus s;

	memset(out, 0, sizeof *out);
	if ((s = call_begin(ctx, (WsfKernel *)k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	if (k->launch->tile_consumer && !k->launch->signal) {
		diag_error(&c, k->comp.fusion->sched.consumer_pos, "kernel '%s' signals its tiles to its own consumer "
		           "role, not to flags (unless 'flags: true'): it has no flag layout", k->comp.fusion->name);
		return call_end(ctx, &c, WSF_ERR_USAGE);
	}
	if (!k->launch->signal && !k->launch->waits) {
		diag_error(&c, k->comp.fusion->pos, "kernel '%s' neither signals its tiles (schedule: {signal: per_tile} "
		           "makes it) nor waits for an input's (wait: per_tile)", k->comp.fusion->name);
		return call_end(ctx, &c, WSF_ERR_USAGE);
	}
	if ((s = rt_launch_plan(&c, k->launch, args, nargs, &plan)) == WSF_OK) {
		const Launch *kk = k->launch;

		out->tile_rows = kk->tile_rows;
		out->tile_cols = kk->tile_cols;
		out->row_tiles = (plan.rows + kk->tile_rows - 1) / kk->tile_rows;
		out->col_tiles = (plan.cols + kk->tile_cols - 1) / kk->tile_cols;
		out->batch = plan.batch;
		out->flags = plan.tiles;
		out->view_rows = plan.rows;
		out->view_cols = plan.cols;
		out->waits = kk->waits;
		out->wait_words = rt_wait_words(kk, &plan);
	}
	return call_end(ctx, &c, s);
}

WsfStatus
wsf_kernel_signal_layout(WsfContext *ctx, const WsfKernel *k, const WsfTensor *args, int nargs,
                         WsfSignalLayout *out)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (!k || (nargs && !args) || !out)
		return null_arg(ctx, __func__, !k ? "k" : !out ? "out" : "args");
	/* it only reads K: a handler may ask it of a kernel in any call, but not delete it meanwhile */
	ctx_enter(ctx, (WsfKernel *)k);
	return ctx_leave(ctx, (WsfKernel *)k, signal_layout(ctx, k, args, nargs, out));
}

/* What rt_with_args hands the measured choice of a kernel that wsf_kernel_run runs. */
typedef struct TuneRun {
	WsfContext *ctx;
	WsfKernel *k;
} TuneRun;

static void
tune_on_args(void *user, const WsfTensor *args, int nargs)
{
	TuneRun *tr = user;

	tune_kernel(tr->ctx, tr->k, args, nargs, NULL);
}

static WsfStatus
kernel_run(WsfContext *ctx, WsfKernel *k, const WsfRunOptions *opts, WsfRunReport *report)
{
	Comp c = {0};
	WsfRunOptions none = {0};
	WsfStatus s;

	memset(report, 0, sizeof *report);
	/*
	 * The measured choice (option tune) before the run, on random arguments
	 * of its shapes, so that the run checks and times the kernel chosen.  A
	 * failure leaves the kernel as compiled, and the run says what failed.
	 */
	if (k->tune && call_begin(ctx, k, &c) == WSF_OK) {
		TuneRun tr = {ctx, k};

		c.diag = NULL;
		if (!setjmp(c.oom))
			(void)rt_with_args(&c, k->launch, opts ? opts : &none, tune_on_args, &tr);
		arena_free(c.arena);
		memset(&c, 0, sizeof c);
	}
	if ((s = call_begin(ctx, k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	/* the bindings as the run began: a handler's wsf_set_size reallocates the context's */
	if (c.nbind)
		c.bind = memcpy(arena_alloc(c.arena, (size_t)c.nbind * sizeof *c.bind), c.bind,
		                (size_t)c.nbind * sizeof *c.bind);
	s = rt_run(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], opts ? opts : &none, report);
	return call_end(ctx, &c, s);
}

WsfStatus
wsf_kernel_run(WsfContext *ctx, WsfKernel *k, const WsfRunOptions *opts, WsfRunReport *report)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (!k || !report)
		return null_arg(ctx, __func__, k ? "report" : "k");
	if (k->busy)
		return kernel_in_use(ctx, __func__, k);
	ctx_enter(ctx, k);
	return ctx_leave(ctx, k, kernel_run(ctx, k, opts, report));
}
