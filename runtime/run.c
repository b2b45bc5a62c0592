/*
 * run.c: wsf_kernel_run, the engine of `wsfuse run --check --bench`.
 *
 * Inputs are fresh random numbers, rounded to their dtype on the host so the
 * kernel and the reference see the same values; every output is poisoned
 * (all bits set: a NaN in f32, f16 and bf16) before the launch, so an element
 * the kernel never wrote fails the check.  The reference is reference.c in
 * double precision, independent of the generated code; the check compares
 * ||out - ref|| / ||ref|| with a tolerance set by the output dtype (a signal
 * consumer's outputs: the loosest of theirs and the stored outputs').  Timing
 * is the median of individually event-timed launches after a warm-up.
 *
 * The host work of a check (inputs, reference, comparison) runs on every
 * core in 4096-element chunks: chunk k's random stream comes from the seed
 * and k, and the comparison adds up per-chunk sums in chunk order, so a
 * seed gives the same inputs and the same error on any number of threads.
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
	double *init;     /* an accumulating output's values before the launch (with host copies) */
	void *packed;
	bool shared;      /* an output written into an input's memory (alias): that input's DEV */
} Arg;

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Float inputs in [-2, 2], or [0.5, 2] when the fusion takes logs, roots, powers or quotients. */
static void
input_range(const Fusion *f, double *lo, double *hi)
{
	int i;

	*lo = -2;
	*hi = 2;
	for (i = 1; i < f->nop; i++)
		switch (f->op[i].kind) {
		case OP_LOG:
		case OP_LOG2:
		case OP_LOG1P:
		case OP_POW:
		case OP_SQRT:
		case OP_RSQRT:
		case OP_DIV:
			*lo = 0.5;
			return;
		default:
			break;
		}
}

/*
 * ||out - ref|| / ||ref|| allowed per output dtype: a few of its rounding
 * steps for the floats (the kernel rounds its f32 result once, the check the
 * double one: they part only at a rounding boundary, one ulp, rarely), none
 * for integers and bool, which must match exactly.
 */
static double
tolerance(Dtype dt)
{
	switch (dt) {
	case DT_F32: return 1e-5;
	case DT_F16: return 2e-3;
	case DT_BF16: return 1e-2;
	case DT_FP8E4M3: return 3e-2;
	case DT_FP8E5M2: return 6e-2;
	default: return 0;
	}
}

/*
 * An f32 output's tolerance where the fusion sums K products in a matmul
 * (the longest K): a sum rounded K times in f32 is off by about sqrt(K)
 * ulps of its size, and a saturating function after it (tanh, sigmoid,
 * gelu) keeps that error at the sums near zero while its own size stops
 * growing with the sums' spread (sqrt(K)): K^(3/4) ulps, four times over
 * (tanh after K = 8192 measured 3.1e-5 on an H200 against 2.0e-4), and
 * never under tolerance().  2-byte outputs' own rounding is larger.
 */
static double
output_tolerance(const Fusion *f, Dtype dt)
{
	int64_t k = 0;
	int i;

	for (i = 1; i < f->nop && dt == DT_F32; i++)
		if (f->op[i].kind == OP_MATMUL && f->op[i].nin == 2) {
			const Tensor *a = &f->tensor[f->op[i].in[0].tensor];
			int64_t ka = dim_value(f, a->dim[a->rank - (f->op[i].transpose_a ? 2 : 1)]);

			if (ka > k)
				k = ka;
		}
	return fmax(tolerance(dt), 4 * 0x1p-24 * pow((double)k, 0.75));
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

enum { CHUNK = 4096 };

/* Filling one input (rt_fill_random). */
typedef struct Fill {
	Dtype dt;
	int64_t n;
	uint64_t seed;
	double lo, hi;
	void *packed;
	double *host;
	int64_t below;   /* integers: 0..below-1 where it is not 0 (an index's positions) */
} Fill;

/*
 * One random element from the 64 random bits R: a float in [lo, hi); an
 * integer of -8..-1 or 1..8 (uint8: 1..16), never 0, so that no integer
 * division (floor_divide, remainder) of inputs divides by zero; a bool 0 or 1.
 */
static double
random_value(const Fill *p, uint64_t r)
{
	int k = (int)(r >> 60 & 7) + 1;

	if (p->dt == DT_BOOL)
		return (double)(r >> 63);
	if (dtype_is_int(p->dt) && p->below > 0)
		return (double)(r % (uint64_t)p->below);
	if (p->dt == DT_UINT8)
		return (double)(r >> 60) + 1;
	if (dtype_is_int(p->dt))
		return r >> 63 ? -k : k;
	return p->lo + (p->hi - p->lo) * (double)(r >> 11) * 0x1p-53;
}

/* Chunks [LO, HI): chunk K's stream starts from the seed mixed with K. */
static void
fill_range(void *ctx, int64_t lo, int64_t hi)
{
	const Fill *p = ctx;
	double chunk[CHUNK];
	size_t size = (size_t)dtype_info[p->dt].bytes;
	int64_t k;

	for (k = lo; k < hi; k++) {
		int64_t e = k * CHUNK, n = p->n - e < CHUNK ? p->n - e : CHUNK, j;
		double *v = p->host ? p->host + e : chunk;
		uint64_t s0 = p->seed ^ (uint64_t)k, s = splitmix(&s0);

		for (j = 0; j < n; j++)
			v[j] = random_value(p, splitmix(&s));
		rt_pack(p->dt, v, (size_t)n, (char *)p->packed + (size_t)e * size);
		if (p->host)
			rt_unpack(p->dt, (char *)p->packed + (size_t)e * size, (size_t)n, v);
	}
}

void
rt_fill_random(Dtype dt, int64_t n, uint64_t seed, double lo, double hi, int64_t below, void *packed, double *host)
{
	Fill p = {dt, n, seed, lo, hi, packed, host, below};

	rt_par_for((n + CHUNK - 1) / CHUNK, 16, fill_range, &p);
}

/* Comparing one output (rt_compare): a sum of squares per chunk, and its unwritten values. */
typedef struct Compare {
	Dtype dt;
	int64_t n;
	const void *packed;
	const double *want, *init;
	double floor;           /* an accumulated value at its init is unwritten only this far from WANT */
	double *num, *den;      /* per chunk: sum of (got - want)^2, of want^2 */
	int64_t *miss, *first;  /* per chunk: unwritten values (rt_compare), the first one's index */
} Compare;

static void
compare_range(void *ctx, int64_t lo, int64_t hi)
{
	const Compare *p = ctx;
	double got[CHUNK];
	size_t size = (size_t)dtype_info[p->dt].bytes;
	int64_t k;

	/* an accumulating output's element left as it was: further from its sum than 4 ulps of the dtype */
	double ulps = 4 * (p->dt == DT_F32 ? 0x1p-23 : p->dt == DT_F16 ? 0x1p-10 : 0x1p-7);
	/* the largest finite value */
	double big = p->dt == DT_F16 ? 65504.0 : p->dt == DT_BF16 ? 0x1.fep127 : p->dt == DT_FP8E4M3 ? 448.0 :
	             p->dt == DT_FP8E5M2 ? 57344.0 : dtype_is_float(p->dt) ? 0x1.fffffep127 : INFINITY;

	for (k = lo; k < hi; k++) {
		int64_t e0 = k * CHUNK, n = p->n - e0 < CHUNK ? p->n - e0 : CHUNK, j;
		double num = 0, den = 0;

		p->first[k] = -1;
		rt_unpack(p->dt, (const char *)p->packed + (size_t)e0 * size, (size_t)n, got);
		for (j = 0; j < n; j++) {
			double want = rt_round(p->dt, p->want[e0 + j]);

			/* both past the dtype's range, the same way (f16's 65504: a product of two long sums) */
			if (fabs(want) >= big && fabs(got[j]) >= big && signbit(want) == signbit(got[j]))
				continue;
			if (isnan(want)) {   /* a NaN the reference computed (0/0, fp8's overflow): the kernel's must be one */
				num += isnan(got[j]) ? 0 : INFINITY;
				continue;
			}

			if ((isnan(got[j]) && !isnan(want)) ||
			    (p->init && got[j] == p->init[e0 + j] &&
			     fabs(want - got[j]) > fmax(ulps * fmax(fabs(want), fabs(got[j])), p->floor))) {
				if (p->miss[k]++ == 0)
					p->first[k] = e0 + j;
			}
			num += (got[j] - want) * (got[j] - want);
			den += isinf(want) ? 0 : want * want;   /* an overflow the kernel missed: an infinite error, not inf / inf */
		}
		p->num[k] = num;
		p->den[k] = den;
	}
}

WsfStatus
rt_compare(Dtype dt, int64_t n, const void *packed, const double *want, const double *init, double floor,
           double *rel_err, RtMiss *miss)
{
	int64_t nchunks = (n + CHUNK - 1) / CHUNK, k;
	Compare p = {dt, n, packed, want, init, floor, calloc((size_t)nchunks + 1, sizeof *p.num),
	             calloc((size_t)nchunks + 1, sizeof *p.den), calloc((size_t)nchunks + 1, sizeof *p.miss),
	             calloc((size_t)nchunks + 1, sizeof *p.first)};
	double num = 0, den = 0;

	*miss = (RtMiss){0, -1, 0, 0};
	if (!p.num || !p.den || !p.miss || !p.first) {
		free(p.num);
		free(p.den);
		free(p.miss);
		free(p.first);
		return WSF_ERR_NOMEM;
	}
	rt_par_for(nchunks, 16, compare_range, &p);
	for (k = 0; k < nchunks; k++) {  /* in chunk order: the same sums on any number of threads */
		num += p.num[k];
		den += p.den[k];
		if (p.miss[k] && miss->count == 0)
			miss->first = p.first[k];
		miss->count += p.miss[k];
	}
	if (miss->count) {   /* the first unwritten value, as the note names it */
		rt_unpack(dt, (const char *)packed + (size_t)miss->first * dtype_info[dt].bytes, 1, &miss->got);
		miss->want = rt_round(dt, want[miss->first]);
	}
	*rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
	free(p.num);
	free(p.den);
	free(p.miss);
	free(p.first);
	return WSF_OK;
}

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/*
 * A kernel that signals its tiles, after the checked launch (epoch 1): every
 * one of the TILES flag words must be 1.  A word left unset fails the run,
 * as an unwritten output element does.
 */
static WsfStatus
check_flags(Comp *c, Driver *d, const Launch *l, CUdeviceptr flags, int64_t tiles, WsfRunReport *r)
{
	uint32_t *w = malloc((size_t)tiles * sizeof *w);
	int64_t i, unset = 0, first = -1;
	WsfStatus s;

	if (!w)
		return diag_error(c, l->fusion->pos, "out of host memory for %lld tile flags", (long long)tiles),
		       WSF_ERR_NOMEM;
	if ((s = rt_check(c, d, d->cuMemcpyDtoH(w, flags, (size_t)tiles * sizeof *w), "cuMemcpyDtoH (flags)")) ==
	    WSF_OK) {
		for (i = 0; i < tiles; i++)
			if (w[i] != 1 && unset++ == 0)
				first = i;
		if (unset) {
			diag_error(c, l->fusion->sched.signal_pos, "%lld of %lld tile flags were not set to the epoch "
			           "(the first: tile %lld, %u)", (long long)unset, (long long)tiles, (long long)first,
			           w[first]);
			r->passed = 0;
		}
	}
	free(w);
	return s;
}

void
rt_note_miss(Comp *c, const Tensor *x, const int64_t *shape, int64_t numel, const RtMiss *m, const double *init)
{
	char got[NUM_MAX], want[NUM_MAX], held[NUM_MAX] = "";
	int64_t idx[MAX_RANK], rest = m->first;
	Buf at;
	int j;

	for (j = x->rank - 1; j >= 0; j--) {   /* row-major: the last dim varies fastest */
		idx[j] = shape[j] > 0 ? rest % shape[j] : 0;
		rest = shape[j] > 0 ? rest / shape[j] : 0;
	}
	buf_init(&at, c->arena);
	for (j = 0; j < x->rank; j++)
		buf_printf(&at, j ? ", %lld" : "%lld", (long long)idx[j]);
	num_snprintf(got, sizeof got, "%.6g", m->got);
	num_snprintf(want, sizeof want, "%.6g", m->want);
	if (init)
		num_snprintf(held, sizeof held, "%.6g", init[m->first]);
	diag_note(c, x->pos, "output '%s': %lld of %lld values not written; the first at [%s]: %s, the reference %s%s%s",
	          x->name, (long long)m->count, (long long)numel, buf_str(&at), got, want,
	          init ? ", before the launch " : "", held);
}

/*
 * The arguments of F at the bound sizes, in ARG and T (NARGS of them, the
 * inputs first): their shapes and element counts, *BYTES all of theirs.
 */
static WsfStatus
args_shape(Comp *c, const Fusion *f, Arg *arg, WsfTensor *t, double *bytes)
{
	int nargs = f->ninput + f->nout, i, j;

	for (i = 0; i < nargs; i++) {
		Arg *a = &arg[i];
		const Tensor *x;

		a->tensor = i < f->ninput ? f->input[i] : f->out[i - f->ninput].tensor;
		a->dtype = i < f->ninput ? f->tensor[a->tensor].dtype : f->out[i - f->ninput].dtype;
		x = &f->tensor[a->tensor];
		a->numel = 1;
		/* the sizes may be bound after the compile (wsf_set_size): each is in range, not their product */
		for (j = 0; j < x->rank; j++)
			if (!size_mul(a->numel, a->shape[j] = dim_value(f, x->dim[j]), &a->numel) ||
			    (uint64_t)a->numel > SIZE_MAX / sizeof(double))
				return diag_error(c, x->pos, "argument '%s' has more elements than this host can hold "
				                  "at these sizes", x->name),
				       WSF_ERR_INPUT;
		t[i].dtype = (WsfDtype)a->dtype;
		t[i].ndim = x->rank;
		t[i].shape = a->shape;
		*bytes += (double)a->numel * dtype_info[a->dtype].bytes;
	}
	return WSF_OK;
}

/*
 * An input that index_select, gather or index_copy reads as positions (or
 * one_hot as classes): they must lie in 0..n-1 of the dim it indexes (the
 * classes; the smallest n of its uses), else 0; *DISTINCT where an
 * index_copy reads it (distinct_positions).
 */
static int64_t
index_below(const Fusion *f, int t, bool *distinct)
{
	int64_t n = 0, m;
	int i;

	for (i = 1; i < f->nop; i++) {
		if (f->op[i].kind == OP_ONE_HOT && f->op[i].in[0].tensor == t &&   /* a class: 0..num_classes-1 */
		    (m = dim_value(f, f->op[i].shape[0])) > 0 && (!n || m < n))
			n = m;
		if ((f->op[i].kind != OP_INDEX_SELECT && f->op[i].kind != OP_GATHER && f->op[i].kind != OP_INDEX_COPY) ||
		    f->op[i].in[1].tensor != t)
			continue;
		*distinct = *distinct || f->op[i].kind == OP_INDEX_COPY;
		if ((m = dim_value(f, f->tensor[f->op[i].in[0].tensor].dim[f->op[i].axis])) > 0 && (!n || m < n))
			n = m;
	}
	return n;
}

static int64_t
gcd(int64_t a, int64_t b)
{
	return b ? gcd(b, a % b) : a;
}

/*
 * index_copy's positions, where its index is no longer than the dim: all
 * different (a position written twice holds either row, as torch's does),
 * (a x i + b) mod M for a prime to M, a and b from SEED.
 */
static void
distinct_positions(Arg *a, int64_t m, uint64_t seed)
{
	int64_t i, mul = 1, add = (int64_t)(splitmix(&seed) % (uint64_t)m);

	if (a->numel > m)
		return;
	for (i = 0; i < 64; i++) {
		int64_t x = 1 + (int64_t)(splitmix(&seed) % (uint64_t)m);

		if (x < m && gcd(x, m) == 1) {
			mul = x;
			break;
		}
	}
	for (i = 0; i < a->numel; i++) {
		int64_t v = add, x = mul, k;

		for (k = i; k; k >>= 1, x = (x * 2) % m)   /* (mul x i + add) mod m, no product past 2^41 */
			if (k & 1)
				v = (v + x) % m;

		if (a->dtype == DT_INT32)
			((int32_t *)a->packed)[i] = (int32_t)v;
		else
			((int64_t *)a->packed)[i] = v;
		if (a->host)
			a->host[i] = (double)v;
	}
}

/*
 * The arguments on the GPU (D): the inputs random from O's seed and scale,
 * rounded to their dtype (and kept as doubles in each Arg's host with
 * HOST), the outputs poisoned; an output written into an input (alias) is
 * that input's memory, as filled.  args_free frees them, on failure too.
 */
static WsfStatus
args_upload(Comp *c, const Fusion *f, Driver *d, const WsfRunOptions *o, bool host, Arg *arg, WsfTensor *t)
{
	int nargs = f->ninput + f->nout, i;
	uint64_t seed = o->seed ? o->seed : 0x5eed;
	double lo, hi;
	WsfStatus s = WSF_OK;

	input_range(f, &lo, &hi);
	if (o->scale > 0) {
		lo *= o->scale;
		hi *= o->scale;
	}
	for (i = 0; i < nargs && s == WSF_OK; i++) {
		Arg *a = &arg[i];
		size_t bytes = (size_t)a->numel * dtype_info[a->dtype].bytes;
		bool distinct = false;
		int64_t below;

		if (i >= f->ninput && f->out[i - f->ninput].alias) {   /* in place: the input's memory */
			a->dev = arg[fusion_input_of(f, f->out[i - f->ninput].alias)].dev;
			a->shared = true;
		} else if ((s = rt_check(c, d, d->cuMemAlloc(&a->dev, bytes), "cuMemAlloc")) != WSF_OK) {
			break;
		}
		t[i].data = (void *)a->dev;
		/* host copies of every value only when the reference needs them */
		if (!(a->packed = malloc(bytes)) || (host && !(a->host = malloc((size_t)a->numel * sizeof *a->host)))) {
			diag_error(c, f->pos, "out of host memory for %lld elements of '%s'", (long long)a->numel,
			           f->tensor[a->tensor].name);
			s = WSF_ERR_NOMEM;
			break;
		}
		if (a->shared)   /* (it holds the input: what the kernel does not write stays so) */
			continue;
		if (i >= f->ninput && !f->out[i - f->ninput].accumulate) {
			s = rt_check(c, d, d->cuMemsetD8(a->dev, 0xff, bytes), "cuMemsetD8 (poison)");
			continue;
		}
		/* an input, or an accumulating output's values before the launch, which it adds to */
		if (i >= f->ninput && host && !(a->init = malloc((size_t)a->numel * sizeof *a->init))) {
			diag_error(c, f->pos, "out of host memory for %lld elements of '%s'", (long long)a->numel,
			           f->tensor[a->tensor].name);
			s = WSF_ERR_NOMEM;
			break;
		}
		below = i < f->ninput ? index_below(f, a->tensor, &distinct) : 0;
		rt_fill_random(a->dtype, a->numel, splitmix(&seed), lo, hi, below, a->packed, i < f->ninput ? a->host : a->init);
		if (distinct)
			distinct_positions(a, below, splitmix(&seed));
		s = rt_check(c, d, d->cuMemcpyHtoD(a->dev, a->packed, bytes), "cuMemcpyHtoD");
	}
	return s;
}

static void
args_free(Driver *d, Arg *arg, int nargs)
{
	int i;

	for (i = 0; i < nargs; i++) {
		if (arg[i].dev && !arg[i].shared)
			d->cuMemFree(arg[i].dev);
		free(arg[i].packed);
		free(arg[i].host);
		free(arg[i].init);
	}
}

WsfStatus
rt_with_args(Comp *c, const Launch *l, const WsfRunOptions *o,
             void (*fn)(void *user, const WsfTensor *args, int nargs), void *user)
{
	Fusion *f = (Fusion *)l->fusion;
	int nargs = f->ninput + f->nout;
	Arg *arg;
	WsfTensor *t;
	Loaded *own = NULL;   /* a driver of their own: FN may free L's */
	Driver *d;
	double bytes = 0;
	WsfStatus s;

	if ((s = size_values(c, f)) != WSF_OK)
		return s;
	arg = arena_alloc(c->arena, (size_t)nargs * sizeof *arg);
	t = arena_alloc(c->arena, (size_t)nargs * sizeof *t);
	if ((s = args_shape(c, f, arg, t, &bytes)) != WSF_OK)
		return s;
	if ((s = rt_loaded_driver(c, &own, &d)) == WSF_OK) {
		if ((s = args_upload(c, f, d, o, false, arg, t)) == WSF_OK)
			fn(user, t, nargs);
		args_free(d, arg, nargs);
	}
	rt_unload(own);
	return s;
}

WsfStatus
rt_run(Comp *c, const Launch *l, Loaded **state, const void *cubin, const WsfRunOptions *o, WsfRunReport *r)
{
	Fusion *f = (Fusion *)l->fusion;
	int nargs = f->ninput + f->nout, i, iters = o->iters > 0 ? o->iters : DEFAULT_ITERS;
	Arg *arg;
	WsfTensor *t;
	Driver *d;
	WsfStatus s;
	CUevent *ev = NULL;
	float *ms = NULL;
	CUdeviceptr flags = 0;   /* signal: per_tile */
	CUdeviceptr waits = 0;   /* inputs with wait: per_tile */
	LaunchExtra ext = {0};
	LaunchPlan plan;

	if ((s = size_values(c, f)) != WSF_OK)
		return s;
	if (f->nout > WSF_MAX_REPORT_OUTPUTS)
		return diag_error(c, f->pos, "run reports at most %d outputs", WSF_MAX_REPORT_OUTPUTS), WSF_ERR_USAGE;
	arg = arena_alloc(c->arena, (size_t)nargs * sizeof *arg);
	t = arena_alloc(c->arena, (size_t)nargs * sizeof *t);
	if ((s = args_shape(c, f, arg, t, &r->bytes)) != WSF_OK)
		return s;
	/* the sizes are checked; now the device */
	if ((s = rt_loaded_driver(c, state, &d)) != WSF_OK)
		return s;
	s = args_upload(c, f, d, o, o->check, arg, t);
	/* a kernel that signals its tiles: flag words, zeroed, and epoch 1 for the checked launch */
	if (s == WSF_OK && l->signal && (s = rt_launch_plan(c, l, t, nargs, &plan)) == WSF_OK &&
	    (s = rt_check(c, d, d->cuMemAlloc(&flags, (size_t)plan.tiles * 4), "cuMemAlloc (flags)")) == WSF_OK)
		s = rt_check(c, d, d->cuMemsetD8(flags, 0, (size_t)plan.tiles * 4), "cuMemsetD8 (flags)");
	/* a kernel that waits for inputs: their flags, set to epoch 1 (every tile written, the inputs uploaded) */
	if (s == WSF_OK && l->waits && (s = rt_launch_plan(c, l, t, nargs, &plan)) == WSF_OK &&
	    (s = rt_check(c, d, d->cuMemAlloc(&waits, (size_t)rt_wait_words(l, &plan) * 4),
	                  "cuMemAlloc (wait flags)")) == WSF_OK)
		s = rt_check(c, d, d->cuMemsetD32(waits, 1, (size_t)rt_wait_words(l, &plan)),
		             "cuMemsetD32 (wait flags)");
	ext.flags = (uint32_t *)flags;
	ext.wait_flags = (const uint32_t *)waits;
	ext.epoch = 1;
	if (s == WSF_OK)
		s = rt_launch(c, l, state, cubin, t, nargs, NULL, &ext);
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
			double sq = 0;
			RtMiss miss;

			r->tolerance[i] = output_tolerance(f, a->dtype);
			for (int64_t e = 0; a->init && e < a->numel; e++) {   /* an accumulating output: what it held, plus */
				sq += a->host[e] * a->host[e];
				a->host[e] += a->init[e];
			}
			if ((s = rt_check(c, d, d->cuMemcpyDtoH(a->packed, a->dev, bytes), "cuMemcpyDtoH")) == WSF_OK &&
			    (s = rt_compare(a->dtype, a->numel, a->packed, a->host, a->init,
			                    r->tolerance[i] * sqrt(sq / (double)a->numel), &r->rel_err[i], &miss)) == WSF_OK) {
				r->unwritten[i] = miss.count > 0;
				if (miss.count)
					rt_note_miss(c, &f->tensor[a->tensor], a->shape, a->numel, &miss, a->init);
				/* a signal consumer computes from stored values: their rounding is in its outputs too */
				for (int q = 0; f->out[i].consumer && q < f->nout; q++)
					if (!f->out[q].consumer && output_tolerance(f, f->out[q].dtype) > r->tolerance[i])
						r->tolerance[i] = output_tolerance(f, f->out[q].dtype);
				if (r->unwritten[i] || !(r->rel_err[i] <= r->tolerance[i]))
					r->passed = 0;
			}
			if (s == WSF_ERR_NOMEM)
				diag_error(c, f->pos, "out of host memory comparing output '%s'", f->tensor[a->tensor].name);
		}
		if (s == WSF_OK && flags)
			s = check_flags(c, d, l, flags, plan.tiles, r);
	}
	if (s == WSF_OK && o->bench) {
		ev = calloc((size_t)iters * 2, sizeof *ev);
		ms = calloc((size_t)iters, sizeof *ms);
		if (!ev || !ms)
			s = WSF_ERR_NOMEM;
		for (i = 0; i < iters * 2 && s == WSF_OK; i++)
			s = rt_check(c, d, d->cuEventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
		for (i = 0; i < WARMUP && s == WSF_OK; i++) {
			ext.epoch += !l->waits;   /* each launch its own: the flags need no reset (but the
			                                     wait flags, which keep epoch 1) */
			s = rt_launch(c, l, state, cubin, t, nargs, NULL, &ext);
		}
		for (i = 0; i < iters && s == WSF_OK; i++) {
			ext.epoch += !l->waits;
			d->cuEventRecord(ev[2 * i], NULL);
			s = rt_launch(c, l, state, cubin, t, nargs, NULL, &ext);
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
	if (flags)
		d->cuMemFree(flags);
	if (waits)
		d->cuMemFree(waits);
	args_free(d, arg, nargs);
	return s;
}
