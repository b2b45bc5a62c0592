/*
 * context.c: the context of include/wsfuse.h and what a kernel says of itself.
 *
 * A WsfContext is plain settings (callbacks, size bindings, options) in
 * malloc'ed memory; compile.c copies them as a compile begins.  The calls on
 * a compiled WsfKernel here only read it: its texts, stats and arguments.
 * Requires nothing of the GPU; wsf_environment asks the runtime to describe it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../passes/passes.h"
#include "compiler.h"

static const char *const status_names[WSF_STATUS_COUNT] = {
	"WSF_OK", "WSF_ERR_INPUT", "WSF_ERR_USAGE", "WSF_ERR_NOMEM", "WSF_ERR_IO",
	"WSF_ERR_NVRTC", "WSF_ERR_NO_GPU", "WSF_ERR_CUDA", "WSF_ERR_UNSUPPORTED", "WSF_ERR_INTERNAL",
};

static const char *const status_messages[WSF_STATUS_COUNT] = {
	"success",
	"malformed input (spec, size or argument)",
	"wrong use of the API or command line",
	"out of memory",
	"a file could not be read or written",
	"NVRTC is missing or failed to compile the generated source",
	"no usable CUDA driver or Hopper GPU",
	"a CUDA driver call failed",
	"valid input that this version cannot compile",
	"internal error in wsfuse",
};

static const char *const stage_names[WSF_STAGE_COUNT] = {
	"none", "fusion-ir", "kernel-ir", "cuda", "ptx", "cubin", "ptxas", "dot", "kernel-dot",
};

WsfStage
wsf_stage_made_by(WsfStage s)
{
	switch (s) {
	case WSF_STAGE_PTXAS:
		return WSF_STAGE_PTX;
	case WSF_STAGE_DOT:
		return WSF_STAGE_FUSION_IR;
	case WSF_STAGE_KERNEL_DOT:
		return WSF_STAGE_KERNEL_IR;
	default:
		return (unsigned)s < WSF_STAGE_COUNT ? s : WSF_STAGE_NONE;
	}
}

const char *
wsf_version(void)
{
	return WSF_VERSION_STRING;
}

const char *
wsf_status_name(WsfStatus s)
{
	return (unsigned)s < WSF_STATUS_COUNT ? status_names[s] : "WSF_STATUS_UNKNOWN";
}

const char *
wsf_status_message(WsfStatus s)
{
	return (unsigned)s < WSF_STATUS_COUNT ? status_messages[s] : "unknown status";
}

const char *
wsf_stage_name(WsfStage s)
{
	return (unsigned)s < WSF_STAGE_COUNT ? stage_names[s] : "none";
}

WsfStage
wsf_stage_from_name(const char *name)
{
	int i;

	for (i = 1; name && i < WSF_STAGE_COUNT; i++)
		if (strcmp(stage_names[i], name) == 0)
			return (WsfStage)i;
	return WSF_STAGE_NONE;
}

const char *
wsf_pass_name(int i)
{
	return i >= 0 && i < pass_count ? pass_table[i].name : NULL;
}

WsfContext *
wsf_context_new(void)
{
	WsfContext *ctx = calloc(1, sizeof *ctx);

	if (ctx)
		ctx->stop = WSF_STAGE_CUBIN;
	return ctx;
}

static void
context_free(WsfContext *ctx)
{
	int i;

	for (i = 0; i < ctx->nbind; i++)
		free((char *)ctx->bind[i].name);
	free(ctx->bind);
	free(ctx->dump_after);
	free(ctx->cache_dir);
	free(ctx->dump_dir);
	free(ctx->override_dir);
	free(ctx->dump_list);
	free(ctx->layout);
	free(ctx->grad_of);
	free(ctx->last_error);
	free(ctx->environment);
	free(ctx);
}

void
wsf_context_delete(WsfContext *ctx)
{
	if (!ctx)
		return;
	if (ctx->busy)
		ctx->deleted = true;
	else
		context_free(ctx);
}

void
wsf_set_diagnostic_handler(WsfContext *ctx, WsfDiagFn fn, void *user)
{
	if (!ctx)
		return;
	ctx->diag = fn;
	ctx->diag_user = user;
}

void
wsf_set_dump_handler(WsfContext *ctx, WsfDumpFn fn, void *user)
{
	if (!ctx)
		return;
	ctx->dump = fn;
	ctx->dump_user = user;
}

const char *
wsf_context_last_error(const WsfContext *ctx)
{
	return ctx && ctx->last_error ? ctx->last_error : "";
}

WsfStatus
ctx_error(WsfContext *ctx, WsfStatus s, const char *fmt, ...)
{
	char msg[512], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* one line, whatever a file name holds */
	for (p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	free(ctx->last_error);
	ctx->last_error = strdup(msg);
	if (ctx->diag)
		ctx->diag(ctx->diag_user, WSF_SEV_ERROR, msg);
	return s;
}

WsfStatus
null_arg(WsfContext *ctx, const char *fn, const char *arg)
{
	return ctx_error(ctx, WSF_ERR_USAGE, "%s: error: argument '%s' is NULL", fn, arg);
}

void
ctx_notify(WsfContext *ctx, WsfSeverity sev, const char *msg)
{
	if (ctx->diag)
		ctx->diag(ctx->diag_user, sev, msg);
}

void
ctx_enter(WsfContext *ctx, WsfKernel *k)
{
	ctx->busy++;
	if (k)
		k->busy++;
}

WsfStatus
ctx_leave(WsfContext *ctx, WsfKernel *k, WsfStatus s)
{
	if (k && --k->busy == 0 && k->deleted)
		kernel_free(k);
	if (--ctx->busy == 0 && ctx->deleted)
		context_free(ctx);
	return s;
}

/* [A-Za-z_][A-Za-z0-9_]*, in ASCII whatever the locale (isalpha takes 0xe9 under Latin-1 locales). */
static int
is_identifier(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

WsfStatus
wsf_set_size(WsfContext *ctx, const char *name, int64_t value)
{
	SizeBinding *b;
	char *copy;
	int i;

	if (!ctx)
		return WSF_ERR_USAGE;
	if (!name)
		return null_arg(ctx, __func__, "name");
	if (!is_identifier(name))
		return ctx_error(ctx, WSF_ERR_INPUT, "error: size name '%.*s%s' is not an identifier",
		                 MAX_QUOTED, name, strlen(name) > MAX_QUOTED ? "..." : "");
	if (strlen(name) > MAX_NAME)
		return ctx_error(ctx, WSF_ERR_INPUT,
		                 "error: size name '%.*s...' is too long: %zu characters, more than the limit of %d",
		                 MAX_QUOTED, name, strlen(name), MAX_NAME);
	if (value <= 0 || value > MAX_EXTENT)
		return ctx_error(ctx, WSF_ERR_INPUT,
		                 "error: size '%s' = %lld is out of range (expected 1..%lld)", name,
		                 (long long)value, (long long)MAX_EXTENT);
	for (i = 0; i < ctx->nbind; i++)
		if (strcmp(ctx->bind[i].name, name) == 0) {
			ctx->bind[i].value = value;
			return WSF_OK;
		}
	b = realloc(ctx->bind, (size_t)(ctx->nbind + 1) * sizeof *b);
	if (!b)
		return ctx_error(ctx, WSF_ERR_NOMEM, "wsf_set_size: error: out of memory");
	ctx->bind = b;
	if (!(copy = strdup(name)))
		return ctx_error(ctx, WSF_ERR_NOMEM, "wsf_set_size: error: out of memory");
	b[ctx->nbind].name = copy;
	b[ctx->nbind].value = value;
	ctx->nbind++;
	return WSF_OK;
}

static WsfStatus
set_string(WsfContext *ctx, char **dst, const char *value)
{
	char *s = value ? strdup(value) : NULL;

	if (value && !s)
		return ctx_error(ctx, WSF_ERR_NOMEM, "wsf_set_option: error: out of memory");
	free(*dst);
	*dst = s;
	return WSF_OK;
}

/* What a dump list may name. */
#define DUMP_NAMES "fusion-ir, kernel-ir, cuda, ptx, cubin, ptxas, dot, kernel-dot or all, comma-separated"


const char *
dump_outputs(const char *list, unsigned *mask)
{
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		char item[16];
		WsfStage st;

		snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), p);
		if (n == 3 && strncmp(p, "all", 3) == 0)
			*mask |= ~1u;
		else if (n < sizeof item && (st = wsf_stage_from_name(item)))
			*mask |= 1u << st;
		else
			return p;
		p += n + (p[n] == ',');
	}
	return NULL;
}

/*
 * The error for BAD, a name in the dump list from WHERE that is no output:
 * quoted up to MAX_QUOTED bytes (cut at a character, "..." where it was),
 * control characters shown as '?'.
 */
WsfStatus
unknown_output(WsfContext *ctx, const char *bad, const char *where)
{
	size_t n = strcspn(bad, ","), i;
	char shown[MAX_QUOTED + 4];

	if (n > MAX_QUOTED) {
		for (i = MAX_QUOTED; i > 0 && ((unsigned char)bad[i] & 0xc0) == 0x80; i--)
			;
		memcpy(shown + i, "...", 4);
	} else {
		i = n;
		shown[i] = 0;
	}
	while (i-- > 0)
		shown[i] = (unsigned char)bad[i] < 0x20 || bad[i] == 0x7f ? '?' : bad[i];
	return ctx_error(ctx, WSF_ERR_USAGE, "error: unknown output '%s' in %s (expected %s)", shown, where, DUMP_NAMES);
}

/* The dump folder: the option dump-dir, else $WSFUSE_DUMP_DIR; NULL when neither is set. */
static const char *
dump_dir(const WsfContext *ctx)
{
	const char *v = getenv("WSFUSE_DUMP_DIR");

	if (ctx->dump_dir && *ctx->dump_dir)
		return ctx->dump_dir;
	return v && *v ? v : NULL;
}

WsfStatus
wsf_set_option(WsfContext *ctx, const char *name, const char *value)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (!name)
		return null_arg(ctx, __func__, "name");
	if (value && strlen(value) > MAX_STRING)
		return ctx_error(ctx, WSF_ERR_USAGE,
		                 "error: the value of option '%.*s' is %zu bytes long, more than the limit of %d",
		                 MAX_QUOTED, name, strlen(value), MAX_STRING);
	if (strcmp(name, "dump-after") == 0) {
		if (value && !passes_valid_dump_list(value))
			return ctx_error(ctx, WSF_ERR_USAGE,
			                 "error: unknown pass in dump-after '%s' (see wsfuse --help for pass names)",
			                 value);
		return set_string(ctx, &ctx->dump_after, value);
	}
	if (strcmp(name, "stop-after") == 0) {
		WsfStage s = wsf_stage_from_name(value);

		if (!s)
			return ctx_error(ctx, WSF_ERR_USAGE,
			                 "error: unknown stage '%s' (expected fusion-ir, kernel-ir, cuda, ptx, cubin, "
			                 "ptxas, dot or kernel-dot)", value ? value : "(null)");
		ctx->stop = wsf_stage_made_by(s);
		return WSF_OK;
	}
	if (strcmp(name, "cache-dir") == 0)
		return set_string(ctx, &ctx->cache_dir, value);
	if (strcmp(name, "dump-dir") == 0)
		return set_string(ctx, &ctx->dump_dir, value);
	if (strcmp(name, "override-dir") == 0)
		return set_string(ctx, &ctx->override_dir, value);
	if (strcmp(name, "layout") == 0)   /* checked against the spec's inputs when a compile reads it */
		return set_string(ctx, &ctx->layout, value && *value ? value : NULL);
	if (strcmp(name, "grad-of") == 0)   /* checked against the spec's inputs when a gradient reads it */
		return set_string(ctx, &ctx->grad_of, value && *value ? value : NULL);
	if (strcmp(name, "dump") == 0) {
		unsigned mask;
		const char *bad;

		if (value && (bad = dump_outputs(value, &mask)))
			return unknown_output(ctx, bad, "option 'dump'");
		return set_string(ctx, &ctx->dump_list, value);
	}
	if (strcmp(name, "cache") == 0 || strcmp(name, "lineinfo") == 0 || strcmp(name, "tune") == 0) {
		if (!value || (strcmp(value, "0") && strcmp(value, "1")))
			return ctx_error(ctx, WSF_ERR_USAGE, "error: option '%s' takes 0 or 1", name);
		*(name[0] == 'c' ? &ctx->cache : name[0] == 'l' ? &ctx->lineinfo : &ctx->tune) = value[0] == '0' ? 1 : 2;
		return WSF_OK;
	}
	if (strcmp(name, "pdl") == 0) {
		if (!value || (strcmp(value, "0") && strcmp(value, "1")))
			return ctx_error(ctx, WSF_ERR_USAGE, "error: option 'pdl' takes 0 or 1");
		ctx->no_pdl = value[0] == '0';
		return WSF_OK;
	}
	if (strcmp(name, "store-delay") == 0) {
		long v = 0;
		const char *d = value;

		for (; d && *d >= '0' && *d <= '9' && v <= 1000000; d++)   /* digits only: no sign, no space */
			v = v * 10 + (*d - '0');
		if (!value || !*value || *d || v > 1000000)
			return ctx_error(ctx, WSF_ERR_USAGE, "error: option 'store-delay' takes nanoseconds, 0 to 1000000");
		ctx->store_delay = (int)v;
		return WSF_OK;
	}
	return ctx_error(ctx, WSF_ERR_USAGE, "error: unknown option '%s'", name);
}

RtOptions
ctx_runtime_options(const WsfContext *ctx)
{
	const char *v = getenv("WSFUSE_LINEINFO");
	RtOptions ro = {ctx->cache_dir, ctx->cache, dump_dir(ctx), false, NULL};

	ro.lineinfo = ctx->lineinfo ? ctx->lineinfo == 2 : v && *v && strcmp(v, "0") != 0;
	return ro;
}

/* The variables that change what wsfuse does, shown by wsf_environment. */
static const char *const env_vars[] = {
	"WSFUSE_CACHE", "WSFUSE_CACHE_DIR", "WSFUSE_DUMP", "WSFUSE_DUMP_DIR", "WSFUSE_OVERRIDE_DIR",
	"WSFUSE_LINEINFO", "WSFUSE_TUNE",
	"WSFUSE_NVRTC_PATH", "WSFUSE_LIBCUDA_PATH",
	"XDG_CACHE_HOME", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
};

const char *
wsf_environment(WsfContext *ctx, int full)
{
	Comp c = {0};
	RtOptions ro;
	struct utsname u;
	const char *dir, *v;
	Buf b;
	int i, n;

	if (!ctx)
		return NULL;
	if (setjmp(c.oom)) {
		arena_free(c.arena);
		return NULL;
	}
	if (!(c.arena = arena_new(&c.oom)))
		return NULL;
	buf_init(&b, c.arena);
	buf_printf(&b, "wsfuse %s\n", WSF_VERSION_STRING);
	ro = ctx_runtime_options(ctx);
	rt_nvrtc_describe(&c, &ro, &b, full);
	rt_driver_describe(&c, &b);
	if (full) {
		buf_printf(&b, "built with: CUDA headers %d.%d", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
#ifdef __VERSION__
		buf_printf(&b, ", C compiler %s", __VERSION__);
#endif
		buf_puts(&b, "\n");
		if (uname(&u) == 0)
			buf_printf(&b, "system: %s %s %s\n", u.sysname, u.release, u.machine);
		dir = rt_cache_dir(&c, &ro);
		buf_puts(&b, "cache: ");
		rt_put_text(&b, dir ? dir : "off");
		buf_puts(&b, "\nenvironment:");
		for (i = 0, n = 0; i < countof(env_vars); i++)
			if ((v = getenv(env_vars[i]))) {
				buf_printf(&b, "\n  %s=", env_vars[i]);
				rt_put_text(&b, v);
				n++;
			}
		buf_puts(&b, n ? "\n" : " none of the variables wsfuse reads is set\n");
	}
	free(ctx->environment);
	ctx->environment = strdup(buf_str(&b));
	arena_free(c.arena);
	return ctx->environment;
}

void
kernel_free(WsfKernel *k)
{
	if (!k)
		return;
	rt_unload(k->loaded);
	arena_free(k->comp.arena);
	free(k->choice);
	free(k);
}

void
wsf_kernel_delete(WsfKernel *k)
{
	if (k && k->busy)
		k->deleted = true;
	else
		kernel_free(k);
}

const char *
wsf_kernel_name(const WsfKernel *k)
{
	return k ? k->comp.fusion->name : NULL;
}

const char *
wsf_kernel_text(const WsfKernel *k, WsfStage stage, size_t *size)
{
	if (!k || (unsigned)stage >= WSF_STAGE_COUNT || !k->text[stage])
		return NULL;
	if (size)
		*size = k->len[stage];
	return k->text[stage];
}

WsfStatus
wsf_kernel_write(WsfContext *ctx, const WsfKernel *k, WsfStage stage, const char *path)
{
	const char *text;
	size_t len = 0;

	if (!ctx)
		return WSF_ERR_USAGE;
	if (!k || !path)
		return null_arg(ctx, __func__, k ? "path" : "k");
	if ((unsigned)stage >= WSF_STAGE_COUNT || stage == WSF_STAGE_NONE)
		return ctx_error(ctx, WSF_ERR_USAGE, "%s: error: stage %d is none of the stages", __func__, (int)stage);
	if (!(text = wsf_kernel_text(k, stage, &len)))
		return ctx_error(ctx, WSF_ERR_USAGE,
		                 "error: kernel '%s' has no %s: compilation stopped before it (option stop-after)",
		                 wsf_kernel_name(k), wsf_stage_name(stage));
	if (!*path)
		return ctx_error(ctx, WSF_ERR_USAGE, "error: empty file name for the %s of kernel '%s'",
		                 wsf_stage_name(stage), wsf_kernel_name(k));
	if (rt_write_file(path, text, len, RT_WRITE_THROUGH) < 0)
		return ctx_error(ctx, WSF_ERR_IO, "%s: error: cannot write: %s", path, strerror(errno));
	return WSF_OK;
}

/*
 * CTAs an SM of sm_90 holds at once: the CUDA occupancy calculator's count
 * with Hopper's limits (2048 threads, 32 CTAs, 64K registers in units of
 * 256 a warp, 228 KiB of shared memory with 1 KiB reserved a CTA, in units
 * of 128 bytes).
 */
static int
ctas_per_sm(int threads, int regs, int smem)
{
	int warps = (threads + 31) / 32, per_warp = (regs * 32 + 255) / 256 * 256, n = 32, m;

	if (warps <= 0)
		return 0;
	if ((m = 2048 / (warps * 32)) < n)
		n = m;
	if (per_warp > 0 && (m = 65536 / per_warp / warps) < n)
		n = m;
	if ((m = 233472 / ((smem + 1024 + 127) / 128 * 128)) < n)
		n = m;
	return n;
}

/*
 * The tiles a launch of K (laid out as L) has at the sizes K was compiled
 * with: the launch's own plan for tensors of those shapes (at an address
 * nothing reads); -1 when a size is unbound or the plan refuses them.
 */
static int64_t
compiled_tiles(const WsfKernel *k, const Launch *l)
{
	Comp c = {0};
	LaunchPlan plan;
	WsfTensor *args;
	int64_t *shapes;
	volatile int64_t tiles = -1;
	int i, d, n = wsf_kernel_num_args(k), at = 0;

	if (setjmp(c.oom) || !(c.arena = arena_new(&c.oom)))
		goto done;
	args = arena_alloc(c.arena, (size_t)(n + 1) * sizeof *args);
	shapes = arena_alloc(c.arena, (size_t)(n + 1) * MAX_RANK * sizeof *shapes);
	for (i = 0; i < n; i++) {
		args[i].data = (void *)(uintptr_t)4096;
		args[i].dtype = wsf_kernel_arg_dtype(k, i);
		args[i].ndim = wsf_kernel_arg_rank(k, i);
		args[i].shape = shapes + at;
		for (d = 0; d < args[i].ndim; d++)
			if ((shapes[at++] = wsf_kernel_arg_dim(k, i, d)) <= 0)
				goto done;
	}
	c.strs = k->comp.strs;
	c.file = k->comp.file;
	c.src = k->comp.src;
	c.srclen = k->comp.srclen;
	c.fusion = k->comp.fusion;
	c.kernel = k->comp.kernel;
	if (rt_launch_plan(&c, l, args, n, &plan) == WSF_OK)
		tiles = plan.tiles;
done:
	arena_free(c.arena);
	return tiles;
}

WsfStatus
wsf_kernel_stats(const WsfKernel *k, WsfKernelStats *st)
{
	const Launch *l;
	RtPtxas px = {-1, -1, -1, -1, -1};
	int i;

	if (!k || !st)
		return WSF_ERR_USAGE;
	/* compiled to the kernel IR at least: a launch description (without an entry point short of CUDA) */
	if (!(l = k->launch) || !k->text[WSF_STAGE_KERNEL_IR])
		return WSF_ERR_USAGE;
	if (k->text[WSF_STAGE_PTXAS])
		rt_ptxas_report(k->text[WSF_STAGE_PTXAS], l->entry, &px);
	st->threads = l->threads;
	st->smem_dynamic = l->smem_bytes;
	st->smem_static = px.smem;
	st->registers = px.registers;
	st->spill_stores = px.spill_stores;
	st->spill_loads = px.spill_loads;
	st->stack_bytes = px.stack;
	st->ctas_per_sm = px.registers >= 0 ? ctas_per_sm(l->threads, px.registers, l->smem_bytes + px.smem) : -1;
	st->persistent = l->grid != GRID_PER_TILE;
	st->cluster = l->cluster;
	st->workspace = l->workspace_slot;
	st->tiles = compiled_tiles(k, l);
	if (st->tiles > 0)   /* the launch plan counts cluster tiles (a K split's: output tiles) */
		st->tiles *= st->cluster;
	st->grid = st->persistent || st->tiles < 0 ? -1 : st->tiles;
	st->view_rows = st->view_cols = st->view_elems = st->view_tiles = st->place_rows = st->place_elems = 0;
	for (i = 1; i < l->nparam; i++) {   /* a view: an input's argument, another tensor (views.c) */
		const LaunchParam *q = &l->param[i];

		if (q->arg >= l->fusion->ninput && fusion_scatter(l->fusion, q->arg - l->fusion->ninput))
			*(q->view == VIEW_ROW_AT ? &st->place_rows : &st->place_elems) += 1;   /* (lower_pointwise.c) */

		if (q->arg >= 0 && q->arg < l->fusion->ninput && q->tensor != l->fusion->input[q->arg])
			*(q->view == VIEW_ELEM_AT ? &st->view_elems : q->view == VIEW_EXCHANGE ? &st->view_tiles :
			  q->view == VIEW_COL_AT || q->view == VIEW_COL ||
			  q->view == VIEW_SCALAR ? &st->view_cols : &st->view_rows) += 1;   /* (a row kernel's by role) */
	}
	return WSF_OK;
}

/* Argument I's tensor id and stored dtype; 0 when out of range. */
static int
arg_tensor(const WsfKernel *k, int i, Dtype *dt)
{
	const Fusion *f;

	if (!k || i < 0)
		return 0;
	f = k->comp.fusion;
	if (i < f->ninput) {
		if (dt)
			*dt = f->tensor[f->input[i]].dtype;
		return f->input[i];
	}
	i -= f->ninput;
	if (i >= f->nout)
		return 0;
	if (dt)
		*dt = f->out[i].dtype;
	return f->out[i].tensor;
}

int
wsf_kernel_num_args(const WsfKernel *k)
{
	return k ? k->comp.fusion->ninput + k->comp.fusion->nout : 0;
}

const char *
wsf_kernel_arg_name(const WsfKernel *k, int i)
{
	int t = arg_tensor(k, i, NULL);

	return t ? k->comp.fusion->tensor[t].name : NULL;
}

int
wsf_kernel_arg_row_strided(const WsfKernel *k, int i)
{
	const Launch *l;
	int j;

	if (!arg_tensor(k, i, NULL) || !(l = k->launch))
		return -1;
	for (j = 0; j < k->comp.fusion->nout; j++)   /* (in place: as the memory is laid out, both) */
		if (wsf_kernel_arg_alias(k, k->comp.fusion->ninput + j) >= 0 &&
		    (i == k->comp.fusion->ninput + j || i == wsf_kernel_arg_alias(k, k->comp.fusion->ninput + j)))
			return 0;
	for (j = 1; j < l->nparam; j++) {   /* runtime/launch.c strided_arg: what takes a row stride */
		const LaunchParam *q = &l->param[j];

		if (q->arg != i)
			continue;
		if (q->kind != PK_TMAP || (l->batched && q->rank > 2) || !(q->own_view || q->view == VIEW_FULL || q->view == VIEW_ROW))
			return 0;
	}
	return 1;   /* (an input no op reads: anything) */
}

int
wsf_kernel_arg_is_output(const WsfKernel *k, int i)
{
	if (!arg_tensor(k, i, NULL))
		return -1;
	return i >= k->comp.fusion->ninput;
}

int
wsf_kernel_arg_alias(const WsfKernel *k, int i)
{
	if (!arg_tensor(k, i, NULL) || i < k->comp.fusion->ninput)
		return -1;
	return fusion_input_of(k->comp.fusion, k->comp.fusion->out[i - k->comp.fusion->ninput].alias);
}

WsfDtype
wsf_kernel_arg_dtype(const WsfKernel *k, int i)
{
	Dtype dt = DT_NONE;

	arg_tensor(k, i, &dt);
	return (WsfDtype)dt;
}

int
wsf_kernel_arg_rank(const WsfKernel *k, int i)
{
	int t = arg_tensor(k, i, NULL);

	return t ? k->comp.fusion->tensor[t].rank : -1;
}

int64_t
wsf_kernel_arg_dim(const WsfKernel *k, int i, int d)
{
	int t = arg_tensor(k, i, NULL);
	const Fusion *f;
	int64_t v;

	if (!t)
		return -1;
	f = k->comp.fusion;
	if (d < 0 || d >= f->tensor[t].rank)
		return -1;
	v = dim_value(f, f->tensor[t].dim[d]);
	return v > 0 ? v : -1;
}

const char *
wsf_kernel_arg_dim_name(const WsfKernel *k, int i, int d)
{
	int t = arg_tensor(k, i, NULL);
	const Fusion *f;

	if (!t)
		return NULL;
	f = k->comp.fusion;
	if (d < 0 || d >= f->tensor[t].rank || !f->tensor[t].dim[d].sym)
		return NULL;
	return f->sym[f->tensor[t].dim[d].sym].name;
}
