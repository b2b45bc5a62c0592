/*
 * parallel.c: a parallel for over the host's cores, for the host side of
 * `run --check` (random inputs, the reference).  A check of 2^28 elements
 * takes tens of seconds in one thread, on a lent GPU whose minutes are few.
 *
 * [0, n) is cut into one contiguous range a thread; the calling thread runs
 * the first.  Callers write disjoint ranges and compute each element as the
 * serial loop would, so results do not depend on the thread count.  A
 * thread that cannot be started runs in the caller instead: never an error.
 */
#include <pthread.h>
#include <unistd.h>

#include "runtime.h"

enum { MAX_THREADS = 32 };

typedef struct Range {
	void (*fn)(void *ctx, int64_t lo, int64_t hi);
	void *ctx;
	int64_t lo, hi;
} Range;

static void *
range_main(void *p)
{
	Range *r = p;

	r->fn(r->ctx, r->lo, r->hi);
	return NULL;
}

void
rt_par_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx)
{
	pthread_t tid[MAX_THREADS];
	Range r[MAX_THREADS];
	bool started[MAX_THREADS] = {false};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t nt = ncpu < 1 ? 1 : ncpu > MAX_THREADS ? MAX_THREADS : ncpu;
	int t;

	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	if (nt > n / grain)
		nt = n / grain > 0 ? n / grain : 1;
	for (t = 0; t < nt; t++) {
		r[t].fn = fn;
		r[t].ctx = ctx;
		r[t].lo = n / nt * t + (t < n % nt ? t : n % nt);
		r[t].hi = r[t].lo + n / nt + (t < n % nt);
		started[t] = t > 0 && pthread_create(&tid[t], NULL, range_main, &r[t]) == 0;
	}
	range_main(&r[0]);
	for (t = 1; t < nt; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else
			range_main(&r[t]);
	}
}
