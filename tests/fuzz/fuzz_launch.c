/*
 * fuzz_launch.c: the libFuzzer entry point for the host side of a launch.
 *
 * Each input describes the tensors a caller hands wsf_kernel_launch for one
 * of a fixed set of kernels (compiled once, through every pass and the
 * emitter, no NVRTC): shapes, strides, dtypes, ranks, data pointers, null
 * pointers and argument counts.  rt_launch_plan (runtime/launch.c) checks
 * them and plans the launch without a driver.  Besides the sanitizers'
 * checks, the target traps when a promise of include/wsfuse.h breaks:
 *   - the status is WSF_OK, WSF_ERR_INPUT or WSF_ERR_USAGE;
 *   - a refused launch gets exactly one error, named after the spec, kept
 *     as the last error;
 *   - an accepted launch is one the device can run: every extent 1..2^40,
 *     every tensor's element and byte count in 64 bits, a 2-D view that
 *     covers the domain, 1 to 2^31 - 1 tiles, every tensor map within TMA's
 *     rules and every pointer-moved tensor 16-byte aligned.
 *
 * The input, little-endian; reading past its end gives zeros:
 *   byte     the kernel: an index into specs[] (modulo its size)
 *   byte     the argument count: below 0xf0 the kernel's; 0xff a null
 *            array; else the kernel's + (byte - 0xf8)
 *   VALUE    per size variable of the spec, its value, around the
 *            compile-time one
 *   per argument (at most MAX_ARGS are described; the rest are the
 *   kernel's own), a flags byte, then what the flags ask for:
 *     0x01 a null shape          0x02 strides (a VALUE per dim, around
 *     0x04 a null data pointer        the contiguous stride)
 *     0x08 dtype: a signed byte  0x10 ndim: a signed byte
 *     0x20 extents: a VALUE per dim, around the size's value
 *     0x40 data pointer off by a byte
 *   VALUE: a mode byte, then by mode % 5: 0 the value it is around; 1 that
 *   plus a signed byte; 2 2^(byte % 64) plus a signed byte; 3 eight raw
 *   bytes; 4 the value times a byte.
 *
 * `make fuzz-launch` links this with libFuzzer; tests/fuzz/replay.c links it
 * into a plain program so that `make test` replays tests/fuzz/launch/
 * (WSFUSE_FUZZ_VERBOSE=1 prints what each input got).
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "../../compiler/compiler.h"
#include "../../passes/passes.h"
#include "../../runtime/runtime.h"

#define NAME "fuzz_launch.yaml"

enum { MAX_ARGS = 12 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Kernels of every view, tile kind and row form the launch checks know. */
static const char *const specs[] = {
	/* flat, a bf16 input, an f32 output */
	"fusion: flat\nsizes: {N: 1024}\ninputs:\n  a: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: o, op: relu, in: [a]}\noutputs:\n  o: {dtype: f32}\n",
	/* a row broadcast (tensor map of one row), 16-byte stores */
	"fusion: bias\nsizes: {M: 64, N: 128}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: bf16, shape: [N]}\nops:\n  - {out: o, op: add, in: [x, b]}\noutputs:\n  o: {dtype: bf16}\n",
	/* every view, mixed dtypes, the persistent pipeline with TMA stores */
	"fusion: mixed\nsizes: {M: 1000, N: 1032}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  bias: {dtype: bf16, shape: [N]}\n  scale: {dtype: f32, shape: [M, 1]}\n  s: {dtype: f32, shape: [1]}\n"
	"ops:\n  - {out: h, op: add, in: [x, bias]}\n  - {out: m, op: mul, in: [h, scale]}\n"
	"  - {out: z, op: mul, in: [m, s]}\noutputs:\n  z: {dtype: f32}\n  m: {dtype: bf16}\n"
	"schedule: {persistent: true, store: tma}\n",
	/* one-row tiles moved by bulk copies */
	"fusion: run\nsizes: {M: 64, N: 1024}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"  b: {dtype: bf16, shape: [N]}\nops:\n  - {out: o, op: add, in: [x, b]}\noutputs:\n  o: {dtype: f32}\n"
	"schedule: {tile: [1, 512]}\n",
	/* narrow one-row tiles, warp-specialized */
	"fusion: narrow\nsizes: {M: 4096, N: 16}\ninputs:\n  a: {dtype: f16, shape: [M, N]}\n"
	"  b: {dtype: f32, shape: [N]}\n  s: {dtype: f32, shape: [M, 1]}\n"
	"ops:\n  - {out: o, op: mul, in: [a, b]}\n  - {out: p, op: add, in: [o, s]}\n"
	"outputs:\n  p: {dtype: bf16}\n  o: {dtype: f32}\n"
	"schedule: {tile: [1, 16], stages: 8, warp_specialize: true, store: tma}\n",
	/* rank 3 with a row broadcast, and a scalar of rank 0 */
	"fusion: rank3\nsizes: {B: 2, S: 8, N: 64}\ninputs:\n  x: {dtype: f32, shape: [B, S, N]}\n"
	"  y: {dtype: f32, shape: [N]}\n  k: {dtype: f32, shape: []}\n"
	"ops:\n  - {out: t, op: add, in: [x, y]}\n  - {out: o, op: mul, in: [t, k]}\noutputs:\n  o: {dtype: f32}\n",
	/* whole rows in the pipeline's stages (a row capacity) */
	"fusion: rows\nsizes: {M: 8, N: 4000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\nschedule: {persistent: true}\n",
	/* one CTA a row, loaded straight into registers */
	"fusion: direct\nsizes: {M: 8, N: 4000}\ninputs:\n  x: {dtype: bf16, shape: [M, N]}\n"
	"ops:\n  - {out: y, op: softmax, in: [x]}\noutputs:\n  y: {dtype: bf16}\n",
	/* rows streamed in chunks, a bf16 weight with f32 rows */
	"fusion: chunks\nsizes: {M: 8, N: 40000}\ninputs:\n  x: {dtype: f32, shape: [M, N]}\n"
	"  w: {dtype: bf16, shape: [N]}\nops:\n  - {out: y, op: rmsnorm, in: [x, w]}\noutputs:\n  y: {dtype: f32}\n",
	/* a row reduction whose domain is a broadcast no argument has */
	"fusion: bdomain\nsizes: {M: 8, N: 64}\ninputs:\n  x: {dtype: f32, shape: [M, 1]}\n"
	"  y: {dtype: f32, shape: [N]}\nops:\n  - {out: s, op: add, in: [x, y]}\n"
	"  - {out: r, op: sum, in: [s], axis: -1}\noutputs:\n  r: {dtype: f32}\n",
	/* a matmul: operands mapped as their own rows of K (swizzled), a bias row, the output's map */
	"fusion: mm\nsizes: {M: 256, N: 256, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	"  w: {dtype: bf16, shape: [N, K]}\n  b: {dtype: bf16, shape: [N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, b]}\n"
	"outputs:\n  o: {dtype: bf16}\n",
	/* a matmul with a residual: its pointer, and its map of output tiles that the producer prefetches */
	"fusion: mmres\nsizes: {M: 256, N: 256, K: 4096}\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n"
	"  w: {dtype: bf16, shape: [N, K]}\n  r: {dtype: f32, shape: [M, N]}\n"
	"ops:\n  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n  - {out: o, op: add, in: [y, r]}\n"
	"outputs:\n  o: {dtype: bf16}\n",
	/* a KV-cache append in place: the cache's pointer for the output, the rows stored at an index's */
	"fusion: kv\nsizes: {S: 64, T: 4, D: 128}\ninputs:\n  cache: {dtype: bf16, shape: [S, 8, D]}\n"
	"  k: {dtype: bf16, shape: [T, 8, D]}\n  pos: {dtype: int64, shape: [T]}\n"
	"ops:\n  - {out: c, op: index_copy, in: [cache, pos, k], dim: 0}\noutputs:\n  c: {alias: cache}\n",
	/* a mean over a middle axis (groups of S rows, a size param) and a column sum: the workspace's */
	"fusion: cols\nsizes: {B: 4, S: 100, H: 264}\ninputs:\n  x: {dtype: bf16, shape: [B, S, H]}\n"
	"ops:\n  - {out: m, op: mean, in: [x], dim: 1}\noutputs:\n  m: {dtype: f32}\n",
	/* cross-entropy's loss and dlogits: a label a row (int64), one_hot */
	"fusion: ce\nsizes: {T: 8, V: 1000}\ninputs:\n  x: {dtype: bf16, shape: [T, V]}\n"
	"  label: {dtype: int64, shape: [T]}\nops:\n  - {out: oh, op: one_hot, in: [label], num_classes: V}\n"
	"  - {out: lse, op: logsumexp, in: [x], dim: -1}\n  - {out: s, op: sub, in: [x, lse]}\n"
	"  - {out: d, op: sub, in: [s, oh]}\noutputs:\n  d: {dtype: bf16}\n",
	/* a norm's backward in one pass: sums over the rows in a cooperative grid, a loss's mean after the rows */
	"fusion: nbwd\nsizes: {T: 64, H: 1024}\ninputs:\n  x: {dtype: bf16, shape: [T, H]}\n"
	"  dy: {dtype: bf16, shape: [T, H]}\nops:\n  - {out: c, op: mean, in: [x], dim: -1}\n"
	"  - {out: dx, op: sub, in: [dy, c]}\n  - {out: db, op: sum, in: [dy], dim: 0}\n"
	"  - {out: m, op: mean, in: [c], dim: [0, 1]}\n"
	"outputs:\n  dx: {dtype: bf16}\n  db: {dtype: f32}\n  m: {dtype: f32}\n",
	/* topk: k values and indices a row */
	"fusion: topk\nsizes: {T: 64, E: 256}\ninputs:\n  x: {dtype: bf16, shape: [T, E]}\n"
	"ops:\n  - {out: [v, i], op: topk, in: [x], k: 8}\noutputs:\n  v: {dtype: f32}\n  i: {}\n",
};

typedef struct Kern {
	Comp c;            /* lives as long as the process: the launch points into it */
	Launch *launch;
} Kern;

static Kern kerns[sizeof specs / sizeof specs[0]];

typedef struct Count {
	int errors;
} Count;

static void
broken(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_launch: broken promise: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
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
		broken("error not named after the spec", msg);
	n->errors++;
}

static void
compile_once(Kern *k, const char *spec)
{
	Comp *c = &k->c;
	Buf b;

	if (k->launch)
		return;
	if (setjmp(c->oom))
		broken("out of memory compiling a kernel", NULL);
	c->arena = arena_new(&c->oom);
	c->strs = strtab_new(c->arena);
	c->file = NAME;
	c->src = spec;
	c->srclen = strlen(spec);
	buf_init(&b, c->arena);
	if (spec_read(c) || passes_run(c, WSF_STAGE_FUSION_IR) || passes_run(c, WSF_STAGE_KERNEL_IR) ||
	    codegen_emit(c, &b, &k->launch))
		broken("a kernel of the table does not compile", c->last_error);
}

/* The input, read a byte at a time; zeros past its end. */
typedef struct In {
	const uint8_t *p;
	size_t n;
} In;

static uint8_t
byte(In *in)
{
	uint8_t b = in->n ? *in->p : 0;

	if (in->n) {
		in->p++;
		in->n--;
	}
	return b;
}

/* A VALUE around NEAR (see the top of the file); wraps as unsigned arithmetic, never overflows. */
static int64_t
value(In *in, int64_t near)
{
	uint64_t v = 0;
	int i, mode = byte(in) % 5;

	switch (mode) {
	case 1:
		return (int64_t)((uint64_t)near + (uint64_t)(int64_t)(int8_t)byte(in));
	case 2:
		v = (uint64_t)1 << (byte(in) % 64);
		return (int64_t)(v + (uint64_t)(int64_t)(int8_t)byte(in));
	case 3:
		for (i = 0; i < 8; i++)
			v |= (uint64_t)byte(in) << (8 * i);
		return (int64_t)v;
	case 4:
		return (int64_t)((uint64_t)near * byte(in));
	default:
		return near;
	}
}

typedef struct Arg {
	int64_t shape[MAX_RANK], strides[MAX_RANK];
} Arg;

/* An accepted launch: check it is one the device can run. */
static void
check_plan(const Launch *l, const WsfTensor *a, int nargs, const LaunchPlan *p)
{
	const Fusion *f = l->fusion;
	const Tensor *d = &f->tensor[l->domain];
	int64_t numel = 1, n, rc;
	int i, j;

	if (nargs != f->ninput + f->nout || !a)
		broken("accepted a wrong argument count or no arguments", NULL);
	for (i = 0; i < nargs; i++) {
		const Tensor *t = i < f->ninput ? &f->tensor[f->input[i]] : &f->tensor[f->out[i - f->ninput].tensor];
		Dtype dt = i < f->ninput ? t->dtype : f->out[i - f->ninput].dtype;

		if ((Dtype)a[i].dtype != dt || a[i].ndim != t->rank || (t->rank && !a[i].shape) || !a[i].data)
			broken("accepted an argument of the wrong dtype or rank, or a null pointer", t->name);
		for (n = 1, j = 0; j < t->rank; j++)
			if (a[i].shape[j] < 1 || a[i].shape[j] > MAX_EXTENT || !size_mul(n, a[i].shape[j], &n))
				broken("accepted an extent out of range or a count that overflows", t->name);
		if (!size_mul(n, dtype_info[dt].bytes, &n))
			broken("accepted a tensor of 2^63 bytes", t->name);
	}
	/* the view covers the domain: its extents bound from the arguments */
	for (j = 0; j < d->rank; j++) {
		int64_t e = d->dim[j].ext;
		int m;

		for (m = 0; d->dim[j].sym && m < nargs; m++) {
			const Tensor *t = m < f->ninput ? &f->tensor[f->input[m]] : &f->tensor[f->out[m - f->ninput].tensor];
			int q;

			for (q = 0; q < t->rank; q++)
				if (t->dim[q].sym == d->dim[j].sym)
					e = a[m].shape[q];
		}
		if (!size_mul(numel, e, &numel))
			broken("accepted a domain whose count overflows", d->name);
	}
	if (p->rows < 1 || p->cols < 1 || !size_mul(p->rows, p->cols, &rc) || rc != numel)
		broken("the 2-D view does not cover the domain", d->name);
	if (p->tiles < 1 || p->tiles >= ((int64_t)1 << 31))
		broken("a tile count out of 1..2^31-1", NULL);
	if (l->row_cap && p->cols > l->row_cap)
		broken("rows wider than the compiled capacity", NULL);
	for (i = 1; i < l->nparam; i++) {
		const LaunchParam *q = &l->param[i];
		const TmapParams *tp = &p->tmap[i];

		if (q->kind == PK_TMAP) {
			if (tp->rank < 1 || tp->rank > 5 || (uintptr_t)a[q->arg].data % 16 ||
			    tp->box[0] * (uint64_t)dtype_info[q->dtype].bytes % 16)
				broken("a tensor map off TMA's rules", q->name);
			for (j = 0; j < tp->rank; j++)
				if (tp->dims[j] < 1 || tp->dims[j] > ((uint64_t)1 << 31) || tp->box[j] < 1 || tp->box[j] > 256 ||
				    (j + 1 < tp->rank && (tp->strides[j] % 16 || tp->strides[j] >= ((uint64_t)1 << 40))))
					broken("a tensor map off TMA's rules", q->name);
		}
		if (q->kind == PK_PTR && (q->view == VIEW_FULL || q->view == VIEW_ROW) && (uintptr_t)a[q->arg].data % 16)
			broken("a pointer-moved tensor off 16 bytes", q->name);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	In in = {data, size};
	Kern *kn = &kerns[byte(&in) % (sizeof specs / sizeof specs[0])];
	WsfTensor t[MAX_ARGS + 8];
	Arg arg[MAX_ARGS + 8];
	const Fusion *f;
	int64_t *val;
	int nargs, want, i, j, b;
	Count cnt = {0};
	LaunchPlan plan;
	WsfStatus s;
	Comp c;

	compile_once(kn, specs[kn - kerns]);
	f = kn->launch->fusion;
	want = f->ninput + f->nout;
	b = byte(&in);
	nargs = b < 0xf0 || b == 0xff ? want : want + (b - 0xf8);
	/* the sizes, around their compile-time values */
	val = calloc((size_t)f->nsym, sizeof *val);
	if (!val)
		return 0;
	for (i = 1; i < f->nsym; i++)
		val[i] = value(&in, f->sym[i].value);
	memset(t, 0, sizeof t);
	memset(arg, 0, sizeof arg);
	for (i = 0; i < nargs && i < MAX_ARGS + 8; i++) {
		const Tensor *x = i < want ? (i < f->ninput ? &f->tensor[f->input[i]] :
		                              &f->tensor[f->out[i - f->ninput].tensor]) : NULL;
		int flags = i < MAX_ARGS ? byte(&in) : 0, rank = x ? x->rank : 1;
		int64_t stride = 1;

		t[i].data = (void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)i * 0x100000000ull);
		if (i >= f->ninput && i < want && f->out[i - f->ninput].alias &&   /* in place: its input's memory */
		    t[fusion_input_of(f, f->out[i - f->ninput].alias)].data)
			t[i].data = t[fusion_input_of(f, f->out[i - f->ninput].alias)].data;
		t[i].dtype = x ? (WsfDtype)(i < f->ninput ? x->dtype : f->out[i - f->ninput].dtype) : WSF_DTYPE_F32;
		t[i].ndim = rank;
		if (flags & 0x08)
			t[i].dtype = (WsfDtype)(int8_t)byte(&in);
		if (flags & 0x10)
			t[i].ndim = (int8_t)byte(&in);
		if (flags & 0x40)
			t[i].data = (char *)t[i].data + byte(&in);
		if (flags & 0x04)
			t[i].data = NULL;
		t[i].shape = flags & 0x01 ? NULL : arg[i].shape;
		t[i].strides = flags & 0x02 ? arg[i].strides : NULL;
		/* extents from the sizes (or fuzzed), strides around the contiguous ones, innermost first */
		for (j = MAX_RANK - 1; j >= 0; j--) {
			int64_t e = 1;

			if (x && j < x->rank)
				e = x->dim[j].sym ? val[x->dim[j].sym] : x->dim[j].ext;
			if ((flags & 0x20) && j < rank)
				e = value(&in, e);
			arg[i].shape[j] = e;
			if ((flags & 0x02) && j < rank)
				arg[i].strides[j] = value(&in, stride);
			if (!size_mul(stride, e > 0 ? e : 1, &stride))
				stride = INT64_MAX;
		}
	}
	free(val);

	memset(&c, 0, sizeof c);
	if (setjmp(c.oom))
		broken("out of memory planning a launch", NULL);
	c.arena = arena_new(&c.oom);
	c.strs = kn->c.strs;
	c.file = NAME;
	c.src = kn->c.src;
	c.srclen = kn->c.srclen;
	c.diag = on_diag;
	c.diag_user = &cnt;
	s = rt_launch_plan(&c, kn->launch, b == 0xff ? NULL : t, nargs, &plan);
	if (getenv("WSFUSE_FUZZ_VERBOSE"))
		fprintf(stderr, "%s: %s%s%s\n", kn->launch->entry, wsf_status_name(s), s ? ": " : "",
		        s && c.last_error ? c.last_error : "");
	if (s != WSF_OK && s != WSF_ERR_INPUT && s != WSF_ERR_USAGE)
		broken("a launch plan status other than OK, INPUT or USAGE", wsf_status_name(s));
	if (s == WSF_OK) {
		if (cnt.errors)
			broken("an accepted launch reported an error", c.last_error);
		check_plan(kn->launch, t, nargs, &plan);
	} else if (cnt.errors != 1 || !c.last_error || !*c.last_error) {
		broken("a refused launch must get exactly one error", c.last_error);
	}
	arena_free(c.arena);
	return 0;
}
