/*
 * tune.c: the measured choice (option tune): a matmul kernel's candidate
 * schedules (plan_matmul_candidates) compiled, timed at its first launch
 * on the call's own tensors and stream, the fastest kept and recorded in
 * the cache folder's tune/ for the next process.  The clock is the
 * runtime's (rt_time_launches): nothing here calls the driver.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"
#include "compiler.h"

enum {
	TUNE_MAX = 12   /* candidates (plan_matmul_candidates) */
};

/* Two launches load the module and make the maps; a candidate's time is the best of 3 rounds of 5. */
static const RtTiming tune_timing = {2, 5, 3};

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
	(void)compile_spec(&quiet, k->comp.file, k->comp.src, k->comp.srclen, s, &out);
	free(quiet.last_error);
	return out;
}

/* Milliseconds a launch of K takes on STREAM with ARGS (tune_timing): *MS. */
static WsfStatus
tune_time(const WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream, float *ms)
{
	Comp c = {0};
	WsfStatus s;

	if ((s = call_begin((WsfContext *)ctx, k, &c)) != WSF_OK)
		return s;
	c.diag = NULL;
	if (setjmp(c.oom)) {
		arena_free(c.arena);
		return WSF_ERR_NOMEM;
	}
	s = rt_time_launches(&c, k->launch, &k->loaded, k->text[WSF_STAGE_CUBIN], args, nargs, stream, &tune_timing,
	                     ms);
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

/* The name of K's tune record: a hash of the version, GPU, the spec, its bindings and the arguments' shapes. */
static const char *
tune_key(Comp *c, const WsfKernel *k, const char *gpu, const WsfTensor *args, int nargs)
{
	char key[65];
	Buf b;
	int i, j;

	buf_init(&b, c->arena);
	buf_printf(&b, "wsfuse %s\ngpu %s\nspec %zu\n", WSF_VERSION_STRING, gpu, k->comp.srclen);
	buf_putn(&b, k->comp.src, k->comp.srclen);
	for (i = 0; i < k->nbind; i++)
		buf_printf(&b, "\n-D %s=%lld", k->bind[i].name, (long long)k->bind[i].value);
	for (i = 0; i < nargs; i++)
		for (j = 0; j < args[i].ndim; j++)
			buf_printf(&b, "%s%lld", j ? "x" : "\narg ", (long long)args[i].shape[j]);
	rt_sha256_hex(buf_str(&b), b.len, key);
	return arena_strdup(c->arena, key);
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
void
tune_kernel(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs, void *stream)
{
	Comp c = {0};
	RtOptions ro = ctx_runtime_options(ctx);
	Schedule cand[TUNE_MAX];
	WsfKernel *kern[TUNE_MAX] = {0};
	float ms[TUNE_MAX];
	LaunchPlan plan;
	const char *dir, *path = NULL;
	Buf gpu, b;
	int n, i, j, best = 0;

	if (call_begin(ctx, k, &c) != WSF_OK)
		return;
	c.diag = NULL;
	if (setjmp(c.oom))
		goto done;
	buf_init(&gpu, c.arena);
	if (rt_launch_plan(&c, k->launch, args, nargs, &plan) != WSF_OK ||   /* bad arguments: the launch says */
	    !rt_timing_gpu(&c, &k->loaded, stream, &gpu))
		goto done;
	n = plan_matmul_candidates(k->comp.fusion, cand, TUNE_MAX);
	kern[0] = k;   /* the spec's own schedule (compiled to a cubin, as every candidate: each has its CUDA) */
	if ((dir = rt_cache_dir(&c, &ro))) {
		path = arena_printf(c.arena, "%s/tune/%s", dir, tune_key(&c, k, buf_str(&gpu), args, nargs));
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
