/*
 * compile.c: the compile driver: a spec through the fusion passes, the
 * kernel passes, codegen and NVRTC, each stage's text kept in the kernel.
 *
 * Each compile makes a Comp with its own arena inside a new WsfKernel; on
 * success the kernel keeps the arena, on failure it is freed whole.  The
 * context's settings are copied into the arena first (ctx_copy), so a
 * handler that changes them changes the next compile's.  Also here: the
 * dumps (option dump, WSFUSE_DUMP) and the hand-edited kernel that
 * replaces the generated CUDA (option override-dir).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../codegen/codegen.h"
#include "../passes/passes.h"
#include "compiler.h"

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
	char **str[] = {&v->dump_after, &v->cache_dir, &v->dump_dir, &v->override_dir, &v->dump_list, &v->layout,
	                 &v->grad_of};
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

/* The file extension each output is dumped with. */
static const char *const dump_ext[WSF_STAGE_COUNT] = {
	NULL, "fir", "kir", "cu", "ptx", "cubin", "ptxas", "dot", "kernel.dot",
};

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
	RtOptions ro = ctx_runtime_options(ctx);
	char key[65];
	Buf b;
	int i, j;

	buf_init(&b, c->arena);
	buf_printf(&b, "wsfuse %s\nlineinfo %d\nstore-delay %d\npdl %d\n%s%s%sspec %zu\n", WSF_VERSION_STRING,
	           ro.lineinfo, c->store_delay, !c->no_pdl, c->layout ? "layout " : "", c->layout ? c->layout : "",
	           c->layout ? "\n" : "", c->srclen);
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
	const char *dir = ctx_runtime_options(ctx).dump_dir;

	return arena_printf(c->arena, "%s%s%s", dir ? dir : "", dir ? "/" : "", kernel_folder(ctx, c));
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
 * A kernel whose family would lower it another way if ptxas spilled its
 * registers (LowerFamily.spill_check: a direct row reduction) is compiled
 * whatever the stage asked for, to see; if it spilled, the family's
 * spill_retry says how to lower it next and the kernel passes run again.
 * So every stage shows the kernel that runs.  Every compile goes through
 * the cache.
 * CANDIDATE (a measured choice's, under another schedule) is compiled as
 * generated, whatever option override-dir says.
 */
static WsfStatus
compile_kernel(WsfContext *ctx, WsfKernel *k, bool candidate)
{
	Comp *c = &k->comp;
	RtOptions ro = ctx_runtime_options(ctx);
	const LowerFamily *fam;
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
	fam = lower_family(c->kernel->family);
	probe = fam->spill_check && fam->spill_check(c);
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
		fam->spill_retry(c);
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

/* C, in its new arena, takes the spec (TEXT, LEN bytes, named NAME) and the settings SET it compiles with. */
static void
comp_begin(Comp *c, WsfContext *set, const char *name, const char *text, size_t len)
{
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
	c->layout = set->layout;
	c->grad_of = set->grad_of;
	c->dump = forward_dump;
	c->dump_user = set;
}

/*
 * K will make its measured choice at its first launch: the bindings belong
 * to the context, which may change them later, so K keeps a copy.
 */
static void
kernel_keep_bindings(WsfKernel *k)
{
	Comp *c = &k->comp;

	k->tune = true;
	k->nbind = c->nbind;
	k->bind = arena_alloc(c->arena, (size_t)(c->nbind + 1) * sizeof *k->bind);
	for (int i = 0; i < c->nbind; i++) {
		k->bind[i] = c->bind[i];
		k->bind[i].name = arena_strdup(c->arena, c->bind[i].name);
	}
}

static WsfStatus
too_long(WsfContext *ctx, const char *name)
{
	return ctx_error(ctx, WSF_ERR_INPUT,
	                 "%s: error: the spec is longer than the limit of %zu bytes (1 MiB); "
	                 "a fusion spec needs a few kilobytes",
	                 name, WSF_MAX_SPEC_BYTES);
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

WsfStatus
compile_spec(WsfContext *ctx, const char *name, const char *text, size_t len, const Schedule *sched, WsfKernel **out)
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
		                 MAX_QUOTED, name, strlen(name), MAX_STRING);
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
	comp_begin(c, set, name, text, len);
	if (spec_read(c) || spec_layout(c)) {
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
	if (tune_wanted(set) && set->stop >= WSF_STAGE_CUBIN && plan_matmul_candidates(c->fusion, NULL, 0) > 1)
		kernel_keep_bindings(k);
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
	return ctx_leave(ctx, NULL, compile_spec(ctx, name ? name : "<string>", text, len, NULL, out));
}

/* The spec in file PATH, malloc'ed into *TEXT (NULL for an empty file), *LEN bytes. */
static WsfStatus
read_path(WsfContext *ctx, const char *path, char **text, size_t *len)
{
	FILE *fp;
	size_t cap = 0, n;

	*text = NULL;
	*len = 0;
	if (!(fp = fopen(path, "rb")))
		return ctx_error(ctx, WSF_ERR_IO, "%s: error: cannot open: %s", path, strerror(errno));
	/* one byte past the limit tells a spec at the limit from a longer one */
	do {
		if (*len == cap) {
			char *t = realloc(*text, cap = cap ? cap * 2 : 4096);

			if (!t) {
				free(*text);
				fclose(fp);
				return ctx_error(ctx, WSF_ERR_NOMEM, "%s: error: out of memory", path);
			}
			*text = t;
		}
		n = fread(*text + *len, 1, cap - *len < WSF_MAX_SPEC_BYTES + 1 - *len ? cap - *len :
		                           WSF_MAX_SPEC_BYTES + 1 - *len, fp);
		*len += n;
	} while (n > 0 && *len <= WSF_MAX_SPEC_BYTES);
	if (*len > WSF_MAX_SPEC_BYTES) {
		free(*text);
		fclose(fp);
		return too_long(ctx, path);
	}
	if (ferror(fp)) {
		free(*text);
		fclose(fp);
		return ctx_error(ctx, WSF_ERR_IO, "%s: error: cannot read: %s", path, strerror(errno));
	}
	fclose(fp);
	return WSF_OK;
}

static WsfStatus
compile_path(WsfContext *ctx, const char *path, WsfKernel **out)
{
	char *text;
	size_t len;
	WsfStatus s;

	if ((s = read_path(ctx, path, &text, &len)) != WSF_OK)
		return s;
	s = compile_spec(ctx, path, text ? text : "", len, NULL, out);
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

/*
 * The backward of spec TEXT (LEN bytes, named NAME) as spec YAML, into
 * *YAML (malloc'ed) and *SIZE: the fusion passes that need no kernel
 * (expand, infer), passes/grad.c, compiler/spec_write.c, in a Comp of
 * its own freed before it returns.
 */
static WsfStatus
grad_spec(WsfContext *ctx, const char *name, const char *text, size_t len, char **yaml, size_t *size)
{
	Comp *c;
	WsfContext *set;
	Buf b;
	volatile WsfStatus s = WSF_OK;

	if (len > WSF_MAX_SPEC_BYTES)
		return too_long(ctx, name);
	if (!(c = calloc(1, sizeof *c)))
		return ctx_error(ctx, WSF_ERR_NOMEM, "%s: error: out of memory", name);
	if (setjmp(c->oom)) {
		s = WSF_ERR_NOMEM;
		goto done;
	}
	if (!(c->arena = arena_new(&c->oom))) {
		free(c);
		return ctx_error(ctx, WSF_ERR_NOMEM, "%s: error: out of memory", name);
	}
	set = ctx_copy(ctx, c->arena);
	comp_begin(c, set, name, text, len);
	if (spec_read(c) || pass_expand(c) || fusion_verify(c, c->fusion, "expand") || pass_infer(c) ||
	    fusion_verify(c, c->fusion, "infer") || pass_grad(c) || fusion_verify(c, c->fusion, "grad")) {
		s = c->status ? c->status : WSF_ERR_INPUT;
		goto done;
	}
	buf_init(&b, c->arena);
	spec_write(c, &b, c->fusion);
	if (!(*yaml = malloc(b.len + 1))) {
		s = WSF_ERR_NOMEM;
		goto done;
	}
	memcpy(*yaml, buf_str(&b), b.len + 1);
	if (size)
		*size = b.len;
done:
	free(ctx->last_error);
	ctx->last_error = NULL;
	if (s == WSF_ERR_NOMEM)
		ctx_error(ctx, s, "%s: error: out of memory", name);
	else if (s != WSF_OK && c->last_error)
		ctx->last_error = strdup(c->last_error);
	else if (s != WSF_OK)
		ctx_error(ctx, s, "%s: error: %s", name, wsf_status_message(s));
	arena_free(c->arena);
	free(c);
	return s;
}

WsfStatus
wsf_grad_string(WsfContext *ctx, const char *name, const char *text, size_t len, char **yaml, size_t *size)
{
	if (!ctx)
		return WSF_ERR_USAGE;
	if (yaml)
		*yaml = NULL;
	if (!text || !yaml)
		return null_arg(ctx, __func__, text ? "yaml" : "text");
	ctx_enter(ctx, NULL);
	return ctx_leave(ctx, NULL, grad_spec(ctx, name ? name : "<string>", text, len, yaml, size));
}

WsfStatus
wsf_grad_file(WsfContext *ctx, const char *path, char **yaml, size_t *size)
{
	char *text;
	size_t len;
	WsfStatus s;

	if (!ctx)
		return WSF_ERR_USAGE;
	if (yaml)
		*yaml = NULL;
	if (!path || !yaml)
		return null_arg(ctx, __func__, path ? "yaml" : "path");
	ctx_enter(ctx, NULL);
	if ((s = read_path(ctx, path, &text, &len)) == WSF_OK) {
		s = grad_spec(ctx, path, text ? text : "", len, yaml, size);
		free(text);
	}
	return ctx_leave(ctx, NULL, s);
}
