/*
 * api.c: the public API of include/wsfuse.h.
 *
 * A WsfContext is plain settings (callbacks, size bindings, options) in
 * malloc'ed memory.  Each compile makes a Comp with its own arena inside a new
 * WsfKernel; on success the kernel keeps the arena (the IR, the texts of every
 * stage and the launch state live in it), on failure it is freed whole.  Every
 * entry point that may allocate in an arena first sets the Comp's
 * out-of-memory landing point with setjmp.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "../codegen/codegen.h"
#include "../passes/passes.h"
#include "../runtime/runtime.h"
#include "compiler.h"

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

/* Records the message as the last error (control bytes as '?') and passes it to the callback. */
static WsfStatus
ctx_error(WsfContext *ctx, WsfStatus s, const char *fmt, ...) PRINTF_LIKE(3, 4);

static WsfStatus
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

/* A null argument ARG of public call FN: WSF_ERR_USAGE, and a message naming both. */
static WsfStatus
null_arg(WsfContext *ctx, const char *fn, const char *arg)
{
	return ctx_error(ctx, WSF_ERR_USAGE, "%s: error: argument '%s' is NULL", fn, arg);
}

/*
 * The settings a compile works on: CTX's, copied into arena A as it
 * begins, so that a diagnostic handler that changes them (wsf_set_size
 * reallocates the bindings, wsf_set_option frees a string) changes the
 * next call's, not this one's.
 */
static WsfContext *
ctx_copy(const WsfContext *ctx, Arena *a)
{
	WsfContext *v = arena_alloc(a, sizeof *v);
	SizeBinding *b = arena_alloc(a, (size_t)(ctx->nbind + 1) * sizeof *b);
	char **str[] = {&v->dump_after, &v->cache_dir, &v->dump_dir, &v->override_dir, &v->dump_list};
	int i;

	*v = *ctx;
	for (i = 0; i < ctx->nbind; i++) {
		b[i].name = arena_strdup(a, ctx->bind[i].name);
		b[i].value = ctx->bind[i].value;
	}
	v->bind = b;
	for (i = 0; i < countof(str); i++)
		if (*str[i])
			*str[i] = arena_strdup(a, *str[i]);
	v->last_error = NULL;
	v->environment = NULL;
	v->busy = 0;
	v->deleted = false;
	return v;
}

/* Bytes of a user's string quoted in a message. */
#define MAX_SHOWN 40
/*
 * The longest spec name (the file name of diagnostics and of the generated
 * source's comments) and option value: a path fits in PATH_MAX.
 */
#define MAX_STRING 4096

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
		                 MAX_SHOWN, name, strlen(name) > MAX_SHOWN ? "..." : "");
	if (strlen(name) > MAX_NAME)
		return ctx_error(ctx, WSF_ERR_INPUT,
		                 "error: size name '%.*s...' is too long: %zu characters, more than the limit of %d",
		                 MAX_SHOWN, name, strlen(name), MAX_NAME);
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

/* The file extension each output is dumped with. */
static const char *const dump_ext[WSF_STAGE_COUNT] = {
	NULL, "fir", "kir", "cu", "ptx", "cubin", "ptxas", "dot", "kernel.dot",
};

/*
 * The outputs LIST names ("cuda,ptx", "all"; "" none) as a mask of stage
 * bits in *MASK; NULL, or where the first name that is not an output starts.
 */
static const char *
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
 * quoted up to MAX_SHOWN bytes (cut at a character, "..." where it was),
 * control characters shown as '?'.
 */
static WsfStatus
unknown_output(WsfContext *ctx, const char *bad, const char *where)
{
	size_t n = strcspn(bad, ","), i;
	char shown[MAX_SHOWN + 4];

	if (n > MAX_SHOWN) {
		for (i = MAX_SHOWN; i > 0 && ((unsigned char)bad[i] & 0xc0) == 0x80; i--)
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
		                 MAX_SHOWN, name, strlen(value), MAX_STRING);
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

/* The runtime's options from CTX's, and the variables behind the ones not set. */
static RtOptions
rt_options(const WsfContext *ctx)
{
	const char *v = getenv("WSFUSE_LINEINFO");
	RtOptions ro = {ctx->cache_dir, ctx->cache, dump_dir(ctx), false, NULL};

	ro.lineinfo = ctx->lineinfo ? ctx->lineinfo == 2 : v && *v && strcmp(v, "0") != 0;
	return ro;
}

/*
 * The folder C's dumps go to: DIR/NAME-KEY (dump_folder), DIR the dump
 * folder (none: the current one), NAME-KEY (kernel_folder) the fusion's
 * name and 16 hex digits of a hash of what picks the kernel (the version,
 * the spec's text, its bindings in name order, the options that change the
 * code), as Triton's dumps have a folder a kernel.  So compiles of one spec
 * at other sizes keep their own files, and an override folder can hold
 * one edit a kernel.  Needs C's bindings, which the compile holds until it
 * ends.
 */
static const char *
kernel_folder(const WsfContext *ctx, const Comp *c)
{
	const char *prev = NULL, *next;
	RtOptions ro = rt_options(ctx);
	char key[65];
	Buf b;
	int i, j;

	buf_init(&b, c->arena);
	buf_printf(&b, "wsfuse %s\nlineinfo %d\nstore-delay %d\npdl %d\nspec %zu\n", WSF_VERSION_STRING, ro.lineinfo,
	           c->store_delay, !c->no_pdl, c->srclen);
	buf_putn(&b, c->src, c->srclen);
	for (i = 0; i < c->nbind; i++) {
		for (next = NULL, j = 0; j < c->nbind; j++)
			if ((!prev || strcmp(c->bind[j].name, prev) > 0) && (!next || strcmp(c->bind[j].name, next) < 0))
				next = c->bind[j].name;
		for (j = 0; j < c->nbind && next; j++)
			if (strcmp(c->bind[j].name, next) == 0)
				buf_printf(&b, "\n-D %s=%lld", next, (long long)c->bind[j].value);
		prev = next;
	}
	rt_sha256_hex(buf_str(&b), b.len, key);
	return arena_printf(c->arena, "%s-%.16s", c->fusion->name, key);
}

static const char *
dump_folder(const WsfContext *ctx, const Comp *c)
{
	const char *dir = dump_dir(ctx);

	return arena_printf(c->arena, "%s%s%s", dir ? dir : "", dir ? "/" : "", kernel_folder(ctx, c));
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
	ro = rt_options(ctx);
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

static void
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

/*
 * A call on CTX (and K) that may run the diagnostic handler and go on
 * after it returns: a handler's wsf_context_delete or wsf_kernel_delete of
 * either waits for the outermost such call to return (ctx_leave).
 */
static void
ctx_enter(WsfContext *ctx, WsfKernel *k)
{
	ctx->busy++;
	if (k)
		k->busy++;
}

static WsfStatus
ctx_leave(WsfContext *ctx, WsfKernel *k, WsfStatus s)
{
	if (k && --k->busy == 0 && k->deleted)
		kernel_free(k);
	if (--ctx->busy == 0 && ctx->deleted)
		context_free(ctx);
	return s;
}

/* A launch or run of K from a handler of a call on K: its launch state is in use. */
static WsfStatus
kernel_in_use(WsfContext *ctx, const char *fn, const WsfKernel *k)
{
	return ctx_error(ctx, WSF_ERR_USAGE, "%s: error: kernel '%s' is in a call already: a diagnostic handler "
	                 "cannot launch or run the kernel whose call it is told of", fn, wsf_kernel_name(k));
}

static void
set_text(WsfKernel *k, WsfStage s, const char *text, size_t len)
{
	k->text[s] = text;
	k->len[s] = len;
}

enum { MAX_OVERRIDE_BYTES = 16 << 20 };   /* a generated kernel is a few hundred KiB at most */

/*
 * Option override-dir, else $WSFUSE_OVERRIDE_DIR: where DIR/NAME-KEY/NAME.cu
 * (the kernel's folder, as WSFUSE_DUMP names it), else DIR/NAME.cu (NAME
 * the fusion's), exists, its text replaces the generated CUDA in *B, for
 * experiments on a hand-edited kernel (Triton's TRITON_OVERRIDE_DIR).  The
 * launch still passes what codegen planned (grid, block, shared memory,
 * arguments), so the edit keeps the entry point, its parameters and the
 * shared-memory layout.  A note says so on every compile, and *USED names
 * the file.  Not for the candidates of a measured choice, which run under
 * other schedules (CANDIDATE to compile_kernel).  No such file: the
 * generated CUDA, no note.  A file that cannot be read, a dangling link or
 * no regular file (a FIFO is refused, never waited on) is WSF_ERR_IO; one
 * over 16 MiB, with a NUL byte, or whose PTX lacks the entry point
 * (override_entry), WSF_ERR_INPUT.  A line of the file that reads
 * "// wsfuse-override: smem_bytes = N" launches it with N bytes of dynamic
 * shared memory instead (override_directives).
 */
static void ctx_notify(WsfContext *ctx, WsfSeverity sev, const char *msg);

enum { MAX_OVERRIDE_SMEM = 1 << 20 };   /* past any GPU's; the driver refuses what the device lacks */

/*
 * The directives of hand-edited kernel TEXT (LEN bytes; SHOWN its path in
 * messages, WHO the option or variable that named it): each line whose
 * first non-blank characters are "// wsfuse-override:" says
 * "smem_bytes = N", N from 1 to 1 MiB, the dynamic shared memory L launches
 * it with (an edit that adds a stage, or a scratch area of its own); the
 * last such line wins.  Anything else after the colon is WSF_ERR_INPUT at
 * its line.
 */
static WsfStatus
override_directives(Comp *c, const char *who, const char *shown, const char *text, size_t len, Launch *l)
{
	static const char tag[] = "// wsfuse-override:", key[] = "smem_bytes";
	const char *p = text, *end = text + len;
	int line = 1;

	for (; p < end; line++) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p;
		long long n = 0;
		int digits = 0;

		if (!eol)
			eol = end;
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if ((size_t)(eol - q) >= sizeof tag - 1 && memcmp(q, tag, sizeof tag - 1) == 0) {
			q += sizeof tag - 1;
			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			if ((size_t)(eol - q) < sizeof key - 1 || memcmp(q, key, sizeof key - 1) != 0)
				goto bad;
			q += sizeof key - 1;
			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			if (q == eol || *q++ != '=')
				goto bad;
			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			for (; q < eol && *q >= '0' && *q <= '9' && digits < 18; q++, digits++)
				n = n * 10 + (*q - '0');
			while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
				q++;
			if (!digits || q != eol)
				goto bad;
			if (n < 1 || n > MAX_OVERRIDE_SMEM)
				return diag_error(c, (Pos){0}, "%s: %s:%d: smem_bytes %lld is out of range: 1 to %d bytes", who,
				                  shown, line, n, MAX_OVERRIDE_SMEM),
				       WSF_ERR_INPUT;
			l->smem_bytes = (int)n;
		}
		p = eol + 1;
	}
	return WSF_OK;
bad:
	return diag_error(c, (Pos){0}, "%s: %s:%d: expected 'smem_bytes = N' (bytes of dynamic shared memory) after "
	                  "'wsfuse-override:'", who, shown, line),
	       WSF_ERR_INPUT;
}

static WsfStatus
cuda_override(WsfContext *ctx, Comp *c, Buf *b, Launch *l, const char **used)
{
	bool opt = ctx->override_dir && *ctx->override_dir;
	const char *dir = opt ? ctx->override_dir : getenv("WSFUSE_OVERRIDE_DIR");
	const char *who = opt ? "override-dir" : "WSFUSE_OVERRIDE_DIR", *path, *shown, *nul;
	struct stat st;
	char *text;
	size_t len;
	Buf t;
	WsfStatus s;
	int r, i;

	*used = NULL;
	if (!dir || !*dir)
		return WSF_OK;
	for (i = 0; i < 2; i++) {
		path = arena_printf(c->arena, "%s/%s%s%s.cu", dir, i ? "" : kernel_folder(ctx, c), i ? "" : "/",
		                    c->fusion->name);
		buf_init(&t, c->arena);
		rt_put_text(&t, path);
		shown = buf_str(&t);
		r = rt_read_file(c, path, MAX_OVERRIDE_BYTES, &text, &len);
		if (r == -1 && errno == ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return diag_error(c, (Pos){0}, "%s: %s is a symbolic link to a file that does not exist", who,
			                  shown),
			       WSF_ERR_IO;
		if (r != -1 || errno != ENOENT)
			break;
	}
	if (i == 2)
		return WSF_OK;
	if (r == -1)
		return diag_error(c, (Pos){0}, "%s: cannot read %s: %s", who, shown, strerror(errno)), WSF_ERR_IO;
	if (r == RT_READ_IRREGULAR)
		return diag_error(c, (Pos){0}, "%s: %s is not a regular file (a FIFO, device or socket)", who, shown),
		       WSF_ERR_IO;
	if (r == RT_READ_TOO_LONG)
		return diag_error(c, (Pos){0}, "%s: %s is longer than the limit of 16 MiB", who, shown), WSF_ERR_INPUT;
	if ((nul = memchr(text, 0, len)))
		return diag_error(c, (Pos){0}, "%s: %s has a NUL byte at offset %zu: CUDA source is text", who, shown,
		                  (size_t)(nul - text)),
		       WSF_ERR_INPUT;
	if ((s = override_directives(c, who, shown, text, len, l)) != WSF_OK)
		return s;
	buf_init(b, c->arena);
	buf_putn(b, text, len);
	buf_init(&t, c->arena);
	buf_puts(&t, "note: kernel '");
	rt_put_text(&t, c->fusion->name);
	buf_printf(&t, "' compiled from %s (%s), not from its generated CUDA", shown, who);
	ctx_notify(ctx, WSF_SEV_NOTE, buf_str(&t));
	*used = arena_printf(c->arena, "%s: %s", who, shown);
	return WSF_OK;
}

/*
 * An override compiled, its PTX must define the kernel the launch looks
 * up: else the compile fails here, naming USED (who and file), not at the
 * first launch.
 */
static WsfStatus
override_entry(Comp *c, const char *used, const Launch *l, const Cubin *bin)
{
	size_t n = strlen(l->entry);
	const char *p;

	for (p = bin->ptx; (p = strstr(p, ".entry ")); p++)
		if (strncmp(p + 7, l->entry, n) == 0 && (p[7 + n] == '(' || p[7 + n] == ' ' || p[7 + n] == '\n'))
			return WSF_OK;
	return diag_error(c, (Pos){0}, "%s defines no kernel '%s', the entry point the launch looks up: keep "
	                  "its 'extern \"C\" __global__ void %s(...)' and its parameters", used, l->entry, l->entry),
	       WSF_ERR_INPUT;
}

/*
 * The stages past the fusion passes: kernel passes, CUDA, NVRTC.
 *
 * A row reduction that lowering made a direct kernel (one CTA a row, the
 * row in registers) is compiled whatever the stage asked for, to see
 * whether ptxas spilled its registers; if it did, the kernel passes run
 * again (Comp.row_fallback): 32 elements a thread drop to 16, and 16 to the
 * persistent pipeline unless the schedule asked for one CTA a row.  So every
 * stage shows the kernel that runs.  Every compile goes through the cache.
 * CANDIDATE (a measured choice's, under another schedule) is compiled as
 * generated, whatever option override-dir says.
 */
static WsfStatus
compile_kernel(WsfContext *ctx, WsfKernel *k, bool candidate)
{
	Comp *c = &k->comp;
	RtOptions ro = rt_options(ctx);
	Cubin bin;
	Buf b;
	WsfStatus s;
	bool probe;
	const char *used = NULL;   /* the override compiled, if any */

	/* the line tables and a refused source name the kernel's dump folder */
	ro.line_dir = dump_folder(ctx, c);
	if (ro.dump_dir)
		ro.dump_dir = ro.line_dir;
again:
	if (passes_run(c, WSF_STAGE_KERNEL_IR))
		return c->status ? c->status : WSF_ERR_INPUT;
	probe = c->kernel->row.direct &&
	        (c->kernel->row.deep || c->kernel->row.reread || c->fusion->sched.persistent == 0);
	buf_init(&b, c->arena);
	kernel_print(&b, c->kernel);
	set_text(k, WSF_STAGE_KERNEL_IR, buf_str(&b), b.len);
	buf_init(&b, c->arena);
	kernel_dot(&b, c->kernel);
	set_text(k, WSF_STAGE_KERNEL_DOT, buf_str(&b), b.len);
	k->launch = launch_describe(c, c->kernel, NULL);   /* codegen_emit's names the entry point */
	if (ctx->stop < WSF_STAGE_CUDA && !probe)
		return WSF_OK;
	buf_init(&b, c->arena);
	if (codegen_emit(c, &b, &k->launch))
		return c->status ? c->status : WSF_ERR_INTERNAL;
	if (!candidate && (s = cuda_override(ctx, c, &b, k->launch, &used)) != WSF_OK)
		return s;
	if (ctx->stop >= WSF_STAGE_CUDA)
		set_text(k, WSF_STAGE_CUDA, buf_str(&b), b.len);
	if (ctx->stop < WSF_STAGE_PTX && !probe)
		return WSF_OK;
	s = rt_compile(c, &ro, c->fusion->name, buf_str(&b), NULL, 0, &bin);
	if (s != WSF_OK)
		return s;
	if (used && (s = override_entry(c, used, k->launch, &bin)) != WSF_OK)
		return s;
	if (probe && rt_spill_bytes(bin.log) > 0) {
		c->row_fallback = c->kernel->row.deep || c->kernel->row.reread ? ROW_FB_HELD : ROW_FB_PIPELINE;
		goto again;
	}
	if (ctx->stop < WSF_STAGE_PTX)
		return WSF_OK;
	set_text(k, WSF_STAGE_PTX, bin.ptx, bin.ptx_len);
	set_text(k, WSF_STAGE_CUBIN, bin.cubin, bin.cubin_len);
	/* a text that ends its last line, as the others do */
	set_text(k, WSF_STAGE_PTXAS, *bin.log ? arena_printf(c->arena, "%s\n", bin.log) : "",
	         *bin.log ? strlen(bin.log) + 1 : 0);
	return WSF_OK;
}

/* Option tune, else $WSFUSE_TUNE (on unless empty or "0"): is a measured choice wanted? */
static bool
tune_wanted(const WsfContext *ctx)
{
	const char *v = getenv("WSFUSE_TUNE");

	return ctx->tune ? ctx->tune == 2 : v && *v && strcmp(v, "0") != 0;
}

static void
forward_dump(void *user, const char *pass, const char *text)
{
	WsfContext *ctx = user;

	if (ctx->dump)
		ctx->dump(ctx->dump_user, pass, text);
}

/*
 * *TO becomes FROM, a schedule of another compile of the same spec, with
 * its positions in FILE, this compile's copy of the name: the candidate
 * the measured choice keeps outlives the kernel FROM's positions were in.
 */
static void
sched_own(Schedule *to, const Schedule *from, const char *file)
{
	Pos *pos[] = {&to->pos, &to->stages_pos, &to->tile_pos, &to->ws_pos, &to->swap_pos, &to->split_pos,
	              &to->sk_pos, &to->cluster_pos, &to->consumers_pos, &to->signal_pos, &to->store_pos,
	              &to->consumer_pos, &to->scope_pos};

	*to = *from;
	for (int i = 0; i < countof(pos); i++)
		pos[i]->file = file;
}

static WsfStatus
too_long(WsfContext *ctx, const char *name)
{
	return ctx_error(ctx, WSF_ERR_INPUT,
	                 "%s: error: the spec is longer than the limit of %zu bytes (1 MiB); "
	                 "a fusion spec needs a few kilobytes",
	                 name, WSF_MAX_SPEC_BYTES);
}

/* Passes MSG (severity SEV) to the callback only: a note or warning is never the last error. */
static void
ctx_notify(WsfContext *ctx, WsfSeverity sev, const char *msg)
{
	if (ctx->diag)
		ctx->diag(ctx->diag_user, sev, msg);
}

/*
 * Writes the outputs of K in MASK that the compile made to FOLDER/NAME.EXT
 * (dump_folder), through rt_write_file, and says which in a note; a file
 * that cannot be written is a warning, never a failed compile.
 */
static void
dump_kernel(WsfContext *ctx, WsfKernel *k, unsigned mask)
{
	Comp *c = &k->comp;
	const char *dir, *path;
	Buf wrote;
	int st;

	if (!mask || !c->fusion)
		return;
	dir = dump_folder(ctx, c);
	buf_init(&wrote, c->arena);
	for (st = 1; st < WSF_STAGE_COUNT; st++) {
		if (!(mask & (1u << st)) || !k->text[st])
			continue;
		path = arena_printf(c->arena, "%s/%s.%s", dir, c->fusion->name, dump_ext[st]);
		if (rt_write_file(path, k->text[st], k->len[st], RT_WRITE_MKDIRS) < 0) {
			Buf b;

			buf_init(&b, c->arena);
			buf_puts(&b, "warning: WSFUSE_DUMP: cannot write ");
			rt_put_text(&b, path);
			buf_printf(&b, ": %s", strerror(errno));
			ctx_notify(ctx, WSF_SEV_WARNING, buf_str(&b));
			continue;
		}
		buf_puts(&wrote, wrote.len ? ", " : "note: WSFUSE_DUMP wrote ");
		rt_put_text(&wrote, path);
	}
	if (wrote.len)
		ctx_notify(ctx, WSF_SEV_NOTE, buf_str(&wrote));
}

static WsfStatus
compile(WsfContext *ctx, const char *name, const char *text, size_t len, const Schedule *sched, WsfKernel **out)
{
	WsfKernel *k;
	WsfContext *volatile set = NULL;   /* CTX's settings as the compile began (ctx_copy) */
	Comp *c;
	Buf b;
	const char *list, *bad;
	unsigned dump;
	volatile WsfStatus s = WSF_OK;

	*out = NULL;
	if (strlen(name) > MAX_STRING)
		return ctx_error(ctx, WSF_ERR_USAGE,
		                 "error: the spec's name '%.*s...' is %zu bytes long, more than the limit of %d",
		                 MAX_SHOWN, name, strlen(name), MAX_STRING);
	if (len > WSF_MAX_SPEC_BYTES)
		return too_long(ctx, name);
	if (!(list = ctx->dump_list ? ctx->dump_list : getenv("WSFUSE_DUMP")))
		list = "";
	if ((bad = dump_outputs(list, &dump)))
		return unknown_output(ctx, bad, ctx->dump_list ? "option 'dump'" : "WSFUSE_DUMP");
	if (!(k = calloc(1, sizeof *k)))
		return ctx_error(ctx, WSF_ERR_NOMEM, "error: out of memory");
	c = &k->comp;
	if (setjmp(c->oom)) {
		s = WSF_ERR_NOMEM;
		goto fail;
	}
	if (!(c->arena = arena_new(&c->oom))) {
		s = WSF_ERR_NOMEM;
		goto fail;
	}
	set = ctx_copy(ctx, c->arena);
	c->strs = strtab_new(c->arena);
	c->file = arena_strdup(c->arena, name);  /* diag and codegen escape it where they show it */
	c->src = arena_strndup(c->arena, text, len);
	c->srclen = len;
	c->diag = set->diag;
	c->diag_user = set->diag_user;
	c->bind = set->bind;
	c->nbind = set->nbind;
	c->dump_after = set->dump_after;
	c->store_delay = set->store_delay;
	c->no_pdl = set->no_pdl;
	c->dump = forward_dump;
	c->dump_user = set;
	if (spec_read(c)) {
		s = c->status ? c->status : WSF_ERR_INPUT;
		goto fail;
	}
	if (sched)   /* a candidate of the measured choice: the spec under another schedule */
		sched_own(&c->fusion->sched, sched, c->file);
	if (passes_run(c, WSF_STAGE_FUSION_IR)) {
		s = c->status ? c->status : WSF_ERR_INPUT;
		goto fail;
	}
	buf_init(&b, c->arena);
	fusion_print(&b, c->fusion);
	set_text(k, WSF_STAGE_FUSION_IR, buf_str(&b), b.len);
	buf_init(&b, c->arena);
	fusion_dot(&b, c->fusion);
	set_text(k, WSF_STAGE_DOT, buf_str(&b), b.len);
	if (set->stop > WSF_STAGE_FUSION_IR && (s = compile_kernel(set, k, sched != NULL)) != WSF_OK)
		goto fail;
	dump_kernel(set, k, dump);
	/* the bindings belong to the context, which may change them later: a kernel to tune keeps a copy */
	if (tune_wanted(set) && set->stop >= WSF_STAGE_CUBIN && lower_matmul_candidates(c->fusion, NULL, 0) > 1) {
		k->tune = true;
		k->nbind = c->nbind;
		k->bind = arena_alloc(c->arena, (size_t)(c->nbind + 1) * sizeof *k->bind);
		for (int i = 0; i < c->nbind; i++) {
			k->bind[i] = c->bind[i];
			k->bind[i].name = arena_strdup(c->arena, c->bind[i].name);
		}
	}
	c->bind = NULL;
	c->nbind = 0;
	/* nothing allocates in the kernel's arena after this: calls use scratch arenas */
	arena_set_oom(c->arena, NULL);
	*out = k;
	return WSF_OK;
fail:
	free(ctx->last_error);
	ctx->last_error = NULL;
	if (s == WSF_ERR_NOMEM)
		ctx_error(ctx, s, "%s: error: out of memory", name);
	else if (c->last_error)
		ctx->last_error = strdup(c->last_error);
	else   /* a failure no diagnostic told of */
		ctx_error(ctx, s, "%s: error: %s", name, wsf_status_message(s));
	/* what the compile made before it failed, a kernel IR that NVRTC refused, say */
	if (s != WSF_ERR_NOMEM && set)
		dump_kernel(set, k, dump);
	kernel_free(k);
	return s;
}

WsfStatus
wsf_compile_string(WsfContext *ctx, const char *name, const char *text, size_t len, WsfKernel **out)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (out)
		*out = NULL;
	if (!text || !out)
		return null_arg(ctx, __func__, text ? "out" : "text");
	ctx_enter(ctx, NULL);
	return ctx_leave(ctx, NULL, compile(ctx, name ? name : "<string>", text, len, NULL, out));
}

static WsfStatus
compile_path(WsfContext *ctx, const char *path, WsfKernel **out)
{
	FILE *fp;
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	WsfStatus s;

	if (!(fp = fopen(path, "rb")))
		return ctx_error(ctx, WSF_ERR_IO, "%s: error: cannot open: %s", path, strerror(errno));
	/* one byte past the limit tells a spec at the limit from a longer one */
	do {
		if (len == cap) {
			char *t = realloc(text, cap = cap ? cap * 2 : 4096);

			if (!t) {
				free(text);
				fclose(fp);
				return ctx_error(ctx, WSF_ERR_NOMEM, "%s: error: out of memory", path);
			}
			text = t;
		}
		n = fread(text + len, 1, cap - len < WSF_MAX_SPEC_BYTES + 1 - len ? cap - len :
		                         WSF_MAX_SPEC_BYTES + 1 - len, fp);
		len += n;
	} while (n > 0 && len <= WSF_MAX_SPEC_BYTES);
	if (len > WSF_MAX_SPEC_BYTES) {
		free(text);
		fclose(fp);
		return too_long(ctx, path);
	}
	if (ferror(fp)) {
		free(text);
		fclose(fp);
		return ctx_error(ctx, WSF_ERR_IO, "%s: error: cannot read: %s", path, strerror(errno));
	}
	fclose(fp);
	s = compile(ctx, path, text ? text : "", len, NULL, out);
	free(text);
	return s;
}

WsfStatus
wsf_compile_file(WsfContext *ctx, const char *path, WsfKernel **out)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (out)
		*out = NULL;
	if (!path || !out)
		return null_arg(ctx, __func__, path ? "out" : "path");
	ctx_enter(ctx, NULL);
	return ctx_leave(ctx, NULL, compile_path(ctx, path, out));
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
wsf_kernel_arg_is_output(const WsfKernel *k, int i)
{
	if (!arg_tensor(k, i, NULL))
		return -1;
	return i >= k->comp.fusion->ninput;
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

/*
 * A Comp for one launch or run: the kernel's IR, the context's callbacks and
 * bindings, and a scratch arena of its own, freed when the call returns, so
 * that a program launching a kernel a million times does not grow.
 */
static WsfStatus
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

/* Makes the context's last error this call's (even without a diagnostic) and frees the scratch. */
static WsfStatus
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

/* ---- the measured choice (option tune) -------------------------------- */

enum {
	TUNE_MAX = 12,       /* candidates (lower_matmul_candidates) */
	TUNE_WARMUP = 2,     /* launches before the timed ones: the module loads, the maps are made */
	TUNE_LAUNCHES = 5,   /* launches a timed round, back to back on the caller's stream */
	TUNE_ROUNDS = 3      /* rounds a candidate; its time is its best round's */
};

/* The hint candidate S adds to BASE, for the record and wsf_kernel_tuned. */
static const char *
tune_text(Arena *a, const Schedule *s, const Schedule *base)
{
	if (s->ntile && !base->ntile)
		return arena_printf(a, "%stile: [%d, %d, %d]", s->consumers == CONSUMERS_PINGPONG && !base->consumers ?
		                    "consumers: pingpong, " : "", s->tile[0], s->tile[1], s->tile[2]);
	if (s->cluster_pos.line && !base->cluster_pos.line)
		return arena_printf(a, "cluster: [%d, %d]", s->cluster[0], s->cluster[1]);
	if (s->split_pos.line && !base->split_pos.line)
		return arena_printf(a, "split_k: %d", s->split_k);
	if (s->swap_pos.line && !base->swap_pos.line)
		return arena_printf(a, "swap_ab: %s", s->swap_ab == 2 ? "true" : "false");
	if (s->sk_pos.line && !base->sk_pos.line)
		return arena_printf(a, "stream_k: %s", s->stream_k == 2 ? "true" : "false");
	return "the spec's schedule";
}

/* A tune record over this is no record wsfuse wrote (a line a candidate). */
enum { TUNE_RECORD_MAX = 64 << 10 };

int
tune_parse_record(const char *text, size_t len, const char *const *cand, int n, const char **why)
{
	static const char head[] = "wsfuse tune 1 choice ";
	const char *p = text + sizeof head - 1, *end = text + len, *eol, *q;
	long v = 0;

	if (strlen(text) != len || strncmp(text, head, sizeof head - 1) != 0)
		return *why = "it does not start 'wsfuse tune 1 choice N'", -1;
	/* digits only, no sign or leading zero; each step checked, so no count overflows into range */
	for (q = p; q < end && *q >= '0' && *q <= '9' && v < n; q++)
		v = v * 10 + (*q - '0');
	if (q == p || (*p == '0' && q - p > 1) || (q < end && *q >= '0' && *q <= '9') || v >= n)
		return *why = "its choice is no candidate's number", -1;
	if (q == end || *q != '\n')
		return *why = "its choice is not a number alone on its line", -1;
	/* the choice must have a time: a line "# MS ms: TEXT", MS digits '.' digits, TEXT the candidate's */
	for (p = q + 1; p < end; p = eol + 1) {
		if (!(eol = memchr(p, '\n', (size_t)(end - p))))
			eol = end;
		if (*p++ != '#' || *p++ != ' ')
			continue;
		for (q = p; q < eol && *q >= '0' && *q <= '9'; q++)
			;
		if (q == p || q == eol || *q++ != '.')
			continue;
		for (p = q; q < eol && *q >= '0' && *q <= '9'; q++)
			;
		if (q > p && (size_t)(eol - q) == strlen(cand[v]) + 5 && strncmp(q, " ms: ", 5) == 0 &&
		    strncmp(q + 5, cand[v], strlen(cand[v])) == 0)
			return (int)v;
	}
	return *why = "it has no time for its choice", -1;
}

/*
 * The choice the tune record at PATH holds among the N candidates CAND
 * (cand[0] K's own schedule), or -1: no record, or one that is not what
 * tune_kernel writes, which is ignored with a note (the candidates are
 * timed again and the record rewritten).  Read with rt_read_file: a FIFO
 * planted there is refused, not waited on.
 */
static int
tune_record(WsfContext *ctx, Comp *c, const char *path, const Schedule *cand, int n)
{
	const char **text = arena_alloc(c->arena, (size_t)(n > 0 ? n : 1) * sizeof *text), *why = NULL;
	char *rec;
	size_t len;
	int i, r, choice = -1;
	Buf b;

	r = rt_read_file(c, path, TUNE_RECORD_MAX, &rec, &len);
	if (r == -1 && errno == ENOENT)
		return -1;
	if (r == -1)
		why = arena_printf(c->arena, "it cannot be read: %s", strerror(errno));
	else if (r == RT_READ_IRREGULAR)
		why = "it is not a regular file";
	else if (r == RT_READ_TOO_LONG)
		why = "it is longer than a record is";
	else {
		for (i = 0; i < n; i++)
			text[i] = tune_text(c->arena, &cand[i], &cand[0]);
		choice = tune_parse_record(rec, len, text, n, &why);
	}
	if (choice < 0) {
		buf_init(&b, c->arena);
		buf_puts(&b, "note: option tune: ignoring the record ");
		rt_put_text(&b, path);
		buf_printf(&b, ": %s; timing the candidates again", why);
		ctx_notify(ctx, WSF_SEV_NOTE, buf_str(&b));
	}
	return choice;
}

/* Compiles K's spec again under schedule S, with no diagnostics or dumps; NULL if it does not compile. */
static WsfKernel *
tune_candidate(const WsfContext *ctx, const WsfKernel *k, const Schedule *s)
{
	WsfContext quiet = *ctx;
	WsfKernel *out = NULL;

	quiet.diag = NULL;
	quiet.dump = NULL;
	quiet.dump_list = "";
	quiet.dump_after = NULL;
	quiet.bind = k->bind;
	quiet.nbind = k->nbind;
	quiet.tune = 1;
	quiet.last_error = NULL;
	quiet.environment = NULL;
	quiet.stop = WSF_STAGE_CUBIN;
	(void)compile(&quiet, k->comp.file, k->comp.src, k->comp.srclen, s, &out);
	free(quiet.last_error);
	return out;
}

/* Milliseconds a launch of K takes on STREAM with ARGS: the best of TUNE_ROUNDS rounds; *MS. */
static WsfStatus
tune_time(const WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, CUstream stream, float *ms)
{
	Comp c = {0};
	Driver *d = NULL;
	CUevent ev[2] = {0};
	WsfStatus s;
	int i, r;

	if ((s = call_begin((WsfContext *)ctx, k, &c)) != WSF_OK)
		return s;
	c.diag = NULL;
	if (setjmp(c.oom)) {
		arena_free(c.arena);
		return WSF_ERR_NOMEM;
	}
	*ms = -1;
	for (i = 0; i < TUNE_WARMUP && s == WSF_OK; i++)
		s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, stream, NULL);
	if (s == WSF_OK)
		s = rt_loaded_driver(&c, &k->loaded, &d);
	for (i = 0; i < 2 && s == WSF_OK; i++)
		s = rt_check(&c, d, d->cuEventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
	for (r = 0; r < TUNE_ROUNDS && s == WSF_OK; r++) {
		float t = 0;

		s = rt_check(&c, d, d->cuEventRecord(ev[0], stream), "cuEventRecord");
		for (i = 0; i < TUNE_LAUNCHES && s == WSF_OK; i++)
			s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, stream, NULL);
		if (s == WSF_OK)
			s = rt_check(&c, d, d->cuEventRecord(ev[1], stream), "cuEventRecord");
		if (s == WSF_OK)
			s = rt_check(&c, d, d->cuEventSynchronize(ev[1]), "cuEventSynchronize");
		if (s == WSF_OK)
			s = rt_check(&c, d, d->cuEventElapsedTime(&t, ev[0], ev[1]), "cuEventElapsedTime");
		if (s == WSF_OK && (*ms < 0 || t / TUNE_LAUNCHES < *ms))
			*ms = t / TUNE_LAUNCHES;
	}
	for (i = 0; i < 2 && d; i++)
		if (ev[i])
			d->cuEventDestroy(ev[i]);
	arena_free(c.arena);
	return s;
}

/* K takes the compiled kernel of FROM, which takes K's and is freed. */
static void
tune_take(WsfKernel *k, WsfKernel *from)
{
	WsfKernel t = *k;

	k->comp = from->comp;
	memcpy(k->text, from->text, sizeof k->text);
	memcpy(k->len, from->len, sizeof k->len);
	k->launch = from->launch;
	k->loaded = from->loaded;
	from->comp = t.comp;
	memcpy(from->text, t.text, sizeof t.text);
	memcpy(from->len, t.len, sizeof t.len);
	from->launch = t.launch;
	from->loaded = t.loaded;
	kernel_free(from);
}

/*
 * The measured choice, at K's first launch with option tune: the record
 * of an earlier choice for this spec, bindings, argument shapes and GPU
 * (in the cache folder's tune/), else each candidate schedule compiled,
 * launched on the call's own tensors (outputs written, inputs only read)
 * and timed on its stream, the fastest kept and recorded.  K becomes the
 * kernel chosen.  Not while the stream is being captured into a graph
 * (the choice waits for a launch outside one); any failure leaves K as
 * compiled.  Diagnostics of candidates that do not compile are dropped:
 * the spec's own schedule compiled.
 */
static void
tune_kernel(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, CUstream stream)
{
	Comp c = {0};
	RtOptions ro = rt_options(ctx);
	Schedule cand[TUNE_MAX];
	WsfKernel *kern[TUNE_MAX] = {0};
	float ms[TUNE_MAX];
	Driver *d = NULL;
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
	LaunchPlan plan;
	const char *dir, *path = NULL;
	char name[256] = "?", key[65];
	Buf b;
	int n, i, j, best = 0;

	if (call_begin(ctx, k, &c) != WSF_OK)
		return;
	c.diag = NULL;
	if (setjmp(c.oom))
		goto done;
	if (rt_launch_plan(&c, k->launch, args, nargs, &plan) != WSF_OK ||   /* bad arguments: the launch says */
	    rt_loaded_driver(&c, &k->loaded, &d) != WSF_OK ||
	    d->cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS || cap != CU_STREAM_CAPTURE_STATUS_NONE)
		goto done;
	n = lower_matmul_candidates(k->comp.fusion, cand, TUNE_MAX);
	kern[0] = k;   /* the spec's own schedule (compiled to a cubin, as every candidate: each has its CUDA) */
	/* the record's key: the version, the GPU, the spec, its bindings, the arguments' shapes */
	d->cuDeviceGetName(name, (int)sizeof name - 1, d->device);
	buf_init(&b, c.arena);
	buf_printf(&b, "wsfuse %s\ngpu %s, %d SMs\nspec %zu\n", WSF_VERSION_STRING, name, d->sm_count, k->comp.srclen);
	buf_putn(&b, k->comp.src, k->comp.srclen);
	for (i = 0; i < k->nbind; i++)
		buf_printf(&b, "\n-D %s=%lld", k->bind[i].name, (long long)k->bind[i].value);
	for (i = 0; i < nargs; i++)
		for (j = 0; j < args[i].ndim; j++)
			buf_printf(&b, "%s%lld", j ? "x" : "\narg ", (long long)args[i].shape[j]);
	rt_sha256_hex(buf_str(&b), b.len, key);
	if ((dir = rt_cache_dir(&c, &ro))) {
		path = arena_printf(c.arena, "%s/tune/%s", dir, key);
		if ((best = tune_record(ctx, &c, path, cand, n)) == 0 ||
		    (best > 0 && (kern[best] = tune_candidate(ctx, k, &cand[best])))) {
			n = 0;   /* chosen before: nothing to time */
			goto take;
		}
		best = 0;
	}
	for (i = 0; i < n; i++) {
		ms[i] = -1;
		if (i && !(kern[i] = tune_candidate(ctx, k, &cand[i])))
			continue;
		for (j = 0; j < i && !(kern[j] && strcmp(kern[j]->text[WSF_STAGE_CUDA], kern[i]->text[WSF_STAGE_CUDA]) == 0); j++)
			;
		if (j < i)   /* the same kernel as an earlier candidate: not timed again */
			continue;
		if (tune_time(ctx, kern[i], args, nargs, stream, &ms[i]) != WSF_OK)
			ms[i] = -1;
		if (ms[i] >= 0 && (ms[best] < 0 || ms[i] < ms[best]))
			best = i;
	}
	if (ms[best] < 0)
		goto done;
	buf_init(&b, c.arena);
	buf_printf(&b, "wsfuse tune 1 choice %d\n# %s: %s\n", best, k->comp.file, tune_text(c.arena, &cand[best], &cand[0]));
	for (i = 0; i < n; i++)
		if (ms[i] >= 0)
			buf_printf(&b, "# %.4f ms: %s\n", ms[i], tune_text(c.arena, &cand[i], &cand[0]));
	if (path)
		(void)rt_write_file(path, buf_str(&b), b.len, RT_WRITE_MKDIRS);
take:
	free(k->choice);
	k->choice = strdup(tune_text(c.arena, &cand[best], &cand[0]));
	if (best) {
		tune_take(k, kern[best]);
		kern[best] = NULL;
	}
	k->tune = false;   /* its bindings lived in the arena it had */
	k->bind = NULL;
	k->nbind = 0;
done:
	for (i = 1; i < TUNE_MAX; i++)
		kernel_free(kern[i]);
	arena_free(c.arena);
}

const char *
wsf_kernel_tuned(const WsfKernel *k)
{
	return k ? k->choice : NULL;
}

static WsfStatus
kernel_launch(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream)
{
	Comp c = {0};
	WsfStatus s;

	if (k->tune)
		tune_kernel(ctx, k, args, nargs, (CUstream)stream);
	if ((s = call_begin(ctx, k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, (CUstream)stream, NULL);
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
		tune_kernel(ctx, k, args, nargs, (CUstream)opts->stream);
	if ((s = call_begin(ctx, k, &c)) != WSF_OK)
		return s;
	if (setjmp(c.oom))
		return call_end(ctx, &c, WSF_ERR_NOMEM);
	x.flags = opts->flags;
	x.epoch = opts->epoch;
	x.max_ctas = opts->max_ctas;
	x.wait_flags = opts->wait_flags;
	s = rt_launch(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, (CUstream)opts->stream, &x);
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
