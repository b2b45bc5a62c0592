/*
 * timing.c: the clock of the measured choice (compiler/tune.c), so that
 * compiler/ makes no driver call.  Requires a kernel launch.c can load;
 * leaves the timed launches done, their events destroyed.
 */
#include "runtime.h"

WsfStatus
rt_time_launches(Comp *c, const Launch *l, Loaded **state, const void *cubin, const WsfTensor *args, int nargs,
                 CUstream stream, const RtTiming *t, float *ms)
{
	Driver *d = NULL;
	CUevent ev[2] = {0};
	WsfStatus s = WSF_OK;
	int i, r;

	*ms = -1;
	for (i = 0; i < t->warmup && s == WSF_OK; i++)
		s = rt_launch(c, l, state, cubin, args, nargs, stream, NULL);
	if (s == WSF_OK)
		s = rt_loaded_driver(c, state, &d);
	for (i = 0; i < 2 && s == WSF_OK; i++)
		s = rt_check(c, d, d->cuEventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
	for (r = 0; r < t->rounds && s == WSF_OK; r++) {
		float e = 0;

		s = rt_check(c, d, d->cuEventRecord(ev[0], stream), "cuEventRecord");
		for (i = 0; i < t->launches && s == WSF_OK; i++)
			s = rt_launch(c, l, state, cubin, args, nargs, stream, NULL);
		if (s == WSF_OK)
			s = rt_check(c, d, d->cuEventRecord(ev[1], stream), "cuEventRecord");
		if (s == WSF_OK)
			s = rt_check(c, d, d->cuEventSynchronize(ev[1]), "cuEventSynchronize");
		if (s == WSF_OK)
			s = rt_check(c, d, d->cuEventElapsedTime(&e, ev[0], ev[1]), "cuEventElapsedTime");
		if (s == WSF_OK && (*ms < 0 || e / t->launches < *ms))
			*ms = e / t->launches;
	}
	for (i = 0; i < 2 && d; i++)
		if (ev[i])
			d->cuEventDestroy(ev[i]);
	return s;
}

bool
rt_timing_gpu(Comp *c, Loaded **state, CUstream stream, Buf *gpu)
{
	Driver *d = NULL;
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
	char name[256] = "?";

	if (rt_loaded_driver(c, state, &d) != WSF_OK || d->cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS ||
	    cap != CU_STREAM_CAPTURE_STATUS_NONE)
		return false;
	d->cuDeviceGetName(name, (int)sizeof name - 1, d->device);
	buf_printf(gpu, "%s, %d SMs", name, d->sm_count);
	return true;
}
