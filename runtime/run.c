/*
 * run.c: wsf_kernel_run, the engine of `wsfuse run --check --bench`.
 *
 * Inputs are fresh random numbers, rounded to their dtype on the host so the
 * kernel and the reference see the same values; every output is poisoned
 * (all bits set: a NaN in f32, f16 and bf16) before the launch, so an element
 * the kernel never wrote fails the check.  The reference is reference.c in
 * double precision, independent of the generated code; the check compares
 * ||out - ref|| / ||ref|| with a tolerance set by the output dtype.  Timing
 * is the median of individually event-timed launches after a warm-up.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

enum { WARMUP = 10, DEFAULT_ITERS = 100 };

typedef struct Arg {
	int tensor;
	Dtype dtype;
	int64_t numel;
	int64_t shape[MAX_RANK];
	CUdeviceptr dev;
	double *host;     /* input values / reference output */
	void *packed;
} Arg;

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Inputs in [-2, 2], or [0.5, 2] when the fusion takes logs, roots or quotients. */
static void
input_range(const Fusion *f, double *lo, double *hi)
{
	int i;

	*lo = -2;
	*hi = 2;
	for (i = 1; i < f->nop; i++)
		switch (f->op[i].kind) {
		case OP_LOG:
		case OP_SQRT:
		case OP_RSQRT:
		case OP_DIV:
			*lo = 0.5;
			return;
		default:
			break;
		}
}

static double
tolerance(Dtype dt)
{
	switch (dt) {
	case DT_F32: return 1e-5;
	case DT_F16: return 2e-3;
	case DT_BF16: return 1e-2;
	default: return 1e-1;
	}
}

/* Size values: the compile-time ones, then the context's bindings. */
static WsfStatus
size_values(Comp *c, Fusion *f)
{
	int i, j;

	for (i = 0; i < c->nbind; i++)
		for (j = 1; j < f->nsym; j++)
			if (strcmp(f->sym[j].name, c->bind[i].name) == 0)
				f->sym[j].value = c->bind[i].value;
	for (j = 1; j < f->nsym; j++)
		if (f->sym[j].value <= 0)
			return diag_error(c, f->sym[j].pos, "size '%s' has no value: give it with -D %s=N or under sizes:",
			                  f->sym[j].name, f->sym[j].name),
			       WSF_ERR_INPUT;
	return WSF_OK;
}

enum { FILL_CHUNK = 4096 };

/* One input being filled: its seed and range (fill_random). */
typedef struct Fill {
	Arg *a;
	uint64_t seed;
	double lo, hi;
} Fill;

/* Chunks [LO, HI) of the input: chunk K's stream starts from the input's seed mixed with K. */
static void
fill_range(void *ctx, int64_t lo, int64_t hi)
{
	const Fill *p = ctx;
	Arg *a = p->a;
	double chunk[FILL_CHUNK];
	size_t size = (size_t)dtype_info[a->dtype].bytes;
	int64_t k;

	for (k = lo; k < hi; k++) {
		int64_t e = k * FILL_CHUNK, n = a->numel - e < FILL_CHUNK ? a->numel - e : FILL_CHUNK, j;
		double *v = a->host ? a->host + e : chunk;
		uint64_t s0 = p->seed ^ (uint64_t)k, s = splitmix(&s0);

		for (j = 0; j < n; j++)
			v[j] = p->lo + (p->hi - p->lo) * (double)(splitmix(&s) >> 11) * 0x1p-53;
		rt_pack(a->dtype, v, (size_t)n, (char *)a->packed + (size_t)e * size);
		if (a->host)
			rt_unpack(a->dtype, (char *)a->packed + (size_t)e * size, (size_t)n, v);
	}
}

/*
 * Random values in [lo, hi) rounded to A's dtype, packed for the device and,
 * when A->host exists, kept as doubles for the reference.  Chunked so a
 * bench-only run of 2^28 elements needs no 2 GB of doubles, and so the
 * chunks can be filled on every core: each has its own stream, so the values
 * depend on the seed, not on the thread count.
 */
static void
fill_random(Arg *a, uint64_t *seed, double lo, double hi)
{
	Fill p = {a, splitmix(seed), lo, hi};

	rt_par_for((a->numel + FILL_CHUNK - 1) / FILL_CHUNK, 16, fill_range, &p);
}

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

WsfStatus
rt_run(Comp *c, const Launch *l, Loaded **state, const void *cubin, const WsfRunOptions *o, WsfRunReport *r)
{
	Fusion *f = (Fusion *)l->fusion;
	int nargs = f->ninput + f->nout, i, j, iters = o->iters > 0 ? o->iters : DEFAULT_ITERS;
	Arg *arg;
	WsfTensor *t;
	Driver *d;
	WsfStatus s;
	uint64_t seed = o->seed ? o->seed : 0x5eed;
	double lo, hi;
	CUevent *ev = NULL;
	float *ms = NULL;

	if ((s = size_values(c, f)) != WSF_OK)
		return s;
	if ((s = rt_loaded_driver(c, state, &d)) != WSF_OK)
		return s;
	if (f->nout > WSF_MAX_REPORT_OUTPUTS)
		return diag_error(c, f->pos, "run reports at most %d outputs", WSF_MAX_REPORT_OUTPUTS), WSF_ERR_USAGE;
	arg = arena_alloc(c->arena, (size_t)nargs * sizeof *arg);
	t = arena_alloc(c->arena, (size_t)nargs * sizeof *t);
	input_range(f, &lo, &hi);
	if (o->scale > 0) {
		lo *= o->scale;
		hi *= o->scale;
	}
	for (i = 0; i < nargs; i++) {
		Arg *a = &arg[i];
		const Tensor *x;

		a->tensor = i < f->ninput ? f->input[i] : f->out[i - f->ninput].tensor;
		a->dtype = i < f->ninput ? f->tensor[a->tensor].dtype : f->out[i - f->ninput].dtype;
		x = &f->tensor[a->tensor];
		a->numel = 1;
		for (j = 0; j < x->rank; j++)
			a->numel *= a->shape[j] = dim_value(f, x->dim[j]);
		t[i].dtype = (WsfDtype)a->dtype;
		t[i].ndim = x->rank;
		t[i].shape = a->shape;
		r->bytes += (double)a->numel * dtype_info[a->dtype].bytes;
	}
	s = WSF_OK;
	for (i = 0; i < nargs && s == WSF_OK; i++) {
		Arg *a = &arg[i];
		size_t bytes = (size_t)a->numel * dtype_info[a->dtype].bytes;

		if ((s = rt_check(c, d, d->cuMemAlloc(&a->dev, bytes), "cuMemAlloc")) != WSF_OK)
			break;
		t[i].data = (void *)a->dev;
		/* host copies of every value only when the reference needs them */
		if (!(a->packed = malloc(bytes)) ||
		    (o->check && !(a->host = malloc((size_t)a->numel * sizeof *a->host)))) {
			diag_error(c, f->pos, "out of host memory for %lld elements of '%s'", (long long)a->numel,
			           f->tensor[a->tensor].name);
			s = WSF_ERR_NOMEM;
			break;
		}
		if (i >= f->ninput) {
			s = rt_check(c, d, d->cuMemsetD8(a->dev, 0xff, bytes), "cuMemsetD8 (poison)");
			continue;
		}
		fill_random(a, &seed, lo, hi);
		s = rt_check(c, d, d->cuMemcpyHtoD(a->dev, a->packed, bytes), "cuMemcpyHtoD");
	}
	if (s == WSF_OK)
		s = rt_launch(c, l, state, cubin, t, nargs, NULL);
	if (s == WSF_OK)
		s = rt_check(c, d, d->cuCtxSynchronize(), "cuCtxSynchronize (after the kernel)");
	r->noutputs = f->nout;
	if (s == WSF_OK && o->check) {
		const double **in = arena_alloc(c->arena, (size_t)f->ninput * sizeof *in);
		double **ref = arena_alloc(c->arena, (size_t)f->nout * sizeof *ref);

		for (i = 0; i < f->ninput; i++)
			in[i] = arg[i].host;
		for (i = 0; i < f->nout; i++)
			ref[i] = arg[f->ninput + i].host;
		s = rt_reference(c, f, in, ref);
		r->passed = 1;
		for (i = 0; i < f->nout && s == WSF_OK; i++) {
			Arg *a = &arg[f->ninput + i];
			size_t bytes = (size_t)a->numel * dtype_info[a->dtype].bytes;
			double num = 0, den = 0, *got = malloc((size_t)a->numel * sizeof *got);
			int64_t e;

			if (!got) {
				s = WSF_ERR_NOMEM;
				break;
			}
			s = rt_check(c, d, d->cuMemcpyDtoH(a->packed, a->dev, bytes), "cuMemcpyDtoH");
			if (s == WSF_OK) {
				rt_unpack(a->dtype, a->packed, (size_t)a->numel, got);
				for (e = 0; e < a->numel; e++) {
					double want = rt_round(a->dtype, a->host[e]);

					if (isnan(got[e]) && !isnan(want))
						r->unwritten[i] = 1;
					num += (got[e] - want) * (got[e] - want);
					den += want * want;
				}
				r->rel_err[i] = den > 0 ? sqrt(num / den) : sqrt(num);
				r->tolerance[i] = tolerance(a->dtype);
				if (r->unwritten[i] || !(r->rel_err[i] <= r->tolerance[i]))
					r->passed = 0;
			}
			free(got);
		}
	}
	if (s == WSF_OK && o->bench) {
		ev = calloc((size_t)iters * 2, sizeof *ev);
		ms = calloc((size_t)iters, sizeof *ms);
		if (!ev || !ms)
			s = WSF_ERR_NOMEM;
		for (i = 0; i < iters * 2 && s == WSF_OK; i++)
			s = rt_check(c, d, d->cuEventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
		for (i = 0; i < WARMUP && s == WSF_OK; i++)
			s = rt_launch(c, l, state, cubin, t, nargs, NULL);
		for (i = 0; i < iters && s == WSF_OK; i++) {
			d->cuEventRecord(ev[2 * i], NULL);
			s = rt_launch(c, l, state, cubin, t, nargs, NULL);
			d->cuEventRecord(ev[2 * i + 1], NULL);
		}
		if (s == WSF_OK)
			s = rt_check(c, d, d->cuCtxSynchronize(), "cuCtxSynchronize (bench)");
		for (i = 0; i < iters && s == WSF_OK; i++)
			s = rt_check(c, d, d->cuEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]), "cuEventElapsedTime");
		if (s == WSF_OK) {
			qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
			r->ms = ms[iters / 2];
			r->gbps = r->bytes / (r->ms * 1e6);
		}
		for (i = 0; ev && i < iters * 2; i++)
			if (ev[i])
				d->cuEventDestroy(ev[i]);
	}
	free(ev);
	free(ms);
	for (i = 0; i < nargs; i++) {
		if (arg[i].dev)
			d->cuMemFree(arg[i].dev);
		free(arg[i].packed);
		free(arg[i].host);
	}
	return s;
}
