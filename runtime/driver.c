/*
 * driver.c: libcuda loaded with dlopen, entry points from cuGetProcAddress.
 *
 * wsfuse never links libcuda, so the library, the CLI and --emit work on
 * machines with no driver; only a launch needs one.  The one symbol taken
 * with dlsym is cuGetProcAddress_v2 (CUDA 12's signature); every other entry
 * point is asked for by name and ABI version (RT_DRIVER_FUNCS in runtime.h),
 * so "cuMemAlloc" at 3020 is the 64-bit _v2 function whatever the driver's
 * default is.  The table lives in the Driver, one per open: no globals.
 *
 * Failures to find a usable GPU (no libcuda, an old driver, no device, a
 * device that is not sm_90) are WSF_ERR_NO_GPU with a message that says which
 * and what to try; a failing call after that is WSF_ERR_CUDA via rt_check.
 */
#define _GNU_SOURCE  /* dladdr: the file libcuda was loaded from, for bug reports */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* The oldest driver API wsfuse uses: cuGetProcAddress_v2 and cuTensorMapEncodeTiled. */
#define DRIVER_MIN_VERSION 12000

typedef struct Entry {
	const char *name;
	int version;
	size_t offset; /* of the function pointer in Driver */
} Entry;

static const Entry entries[] = {
#define RT_DRIVER_ENTRY(name, ver) {#name, ver, offsetof(Driver, name)},
	RT_DRIVER_FUNCS(RT_DRIVER_ENTRY)
#undef RT_DRIVER_ENTRY
};

static const char *const hint =
	"is an NVIDIA driver installed? set WSFUSE_LIBCUDA_PATH to the full path of "
	"libcuda.so.1, or add its folder to LD_LIBRARY_PATH";

/* Reports why no GPU can be used; always WSF_ERR_NO_GPU. */
static WsfStatus PRINTF_LIKE(2, 3)
no_gpu(Comp *c, const char *fmt, ...)
{
	Pos none = {0};
	Buf b;
	va_list ap;

	buf_init(&b, c->arena);
	buf_puts(&b, "no usable GPU: ");
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	diag_error(c, none, "%s", buf_str(&b));
	return WSF_ERR_NO_GPU;
}

/* "CUDA_ERROR_X: text" for R, as far as the driver can name it. */
static const char *
error_text(Comp *c, const Driver *d, CUresult r)
{
	const char *name = NULL, *str = NULL;

	if (d && d->cuGetErrorName)
		d->cuGetErrorName(r, &name);
	if (d && d->cuGetErrorString)
		d->cuGetErrorString(r, &str);
	if (!name)
		return arena_printf(c->arena, "CUresult %d", (int)r);
	return arena_printf(c->arena, "%s: %s", name, str ? str : "(no description)");
}

WsfStatus
rt_check(Comp *c, const Driver *d, CUresult r, const char *call)
{
	Pos none = {0};

	if (r == CUDA_SUCCESS)
		return WSF_OK;
	diag_error(c, none, "%s: %s", call, error_text(c, d, r));
	return WSF_ERR_CUDA;
}

static WsfStatus
resolve(Comp *c, Driver *d, const char *path)
{
	PFN_cuGetProcAddress_v12000 get_proc;
	void *p = dlsym(d->lib, "cuGetProcAddress_v2");
	int i;

	if (!p)
		return no_gpu(c, "'%s' has no cuGetProcAddress_v2: the driver predates CUDA 12.0; "
		              "wsfuse needs a CUDA 12 or newer driver", path);
	memcpy(&get_proc, &p, sizeof p);
	for (i = 0; i < countof(entries); i++) {
		CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		CUresult r;

		p = NULL;
		r = get_proc(entries[i].name, &p, entries[i].version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
		if (r == CUDA_ERROR_STUB_LIBRARY)
			return no_gpu(c, "'%s' is the CUDA toolkit's stub libcuda, which only satisfies "
			              "the linker; %s", path, hint);
		if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
			return no_gpu(c, "the CUDA driver '%s' is too old for %s (needs CUDA %d.%d); update "
			              "the NVIDIA driver", path, entries[i].name,
			              entries[i].version / 1000, entries[i].version % 1000 / 10);
		if (r != CUDA_SUCCESS || !p)
			return no_gpu(c, "the CUDA driver '%s' lacks %s (ABI %d): cuGetProcAddress gave "
			              "CUresult %d; update the NVIDIA driver", path, entries[i].name,
			              entries[i].version, (int)r);
		memcpy((char *)d + entries[i].offset, &p, sizeof p);
	}
	return WSF_OK;
}

/* Init failures mean "no GPU here", not a failed call: name the call and the error. */
static WsfStatus
init_check(Comp *c, const Driver *d, CUresult r, const char *call)
{
	if (r == CUDA_SUCCESS)
		return WSF_OK;
	return no_gpu(c, "%s: %s", call, error_text(c, d, r));
}

/* Makes D->ctx the current context, or device 0's retained primary context. */
static WsfStatus
pick_context(Comp *c, Driver *d)
{
	WsfStatus st;
	int n = 0;

	if ((st = init_check(c, d, d->cuCtxGetCurrent(&d->ctx), "cuCtxGetCurrent")) != WSF_OK)
		return st;
	if (d->ctx) {
		CUcontext primary = NULL;
		unsigned flags;
		int active = 0;

		if ((st = init_check(c, d, d->cuCtxGetDevice(&d->device), "cuCtxGetDevice")) != WSF_OK)
			return st;
		/*
		 * The device's primary context, current (another driver of this
		 * process, or the caller's runtime, made it so), is retained as if
		 * it were not: each driver releases its own count, and one closed
		 * first does not destroy the context under the others.
		 */
		if (d->cuDevicePrimaryCtxGetState(d->device, &flags, &active) == CUDA_SUCCESS && active &&
		    d->cuDevicePrimaryCtxRetain(&primary, d->device) == CUDA_SUCCESS) {
			if (primary == d->ctx)
				d->retained = true;
			else
				d->cuDevicePrimaryCtxRelease(d->device);
		}
		return WSF_OK;
	}
	if ((st = init_check(c, d, d->cuDeviceGetCount(&n), "cuDeviceGetCount")) != WSF_OK)
		return st;
	if (n == 0)
		return no_gpu(c, "the CUDA driver reports no devices (check CUDA_VISIBLE_DEVICES)");
	if ((st = init_check(c, d, d->cuDeviceGet(&d->device, 0), "cuDeviceGet")) != WSF_OK)
		return st;
	st = init_check(c, d, d->cuDevicePrimaryCtxRetain(&d->ctx, d->device),
	                "cuDevicePrimaryCtxRetain");
	if (st != WSF_OK)
		return st;
	d->retained = true;
	return init_check(c, d, d->cuCtxSetCurrent(d->ctx), "cuCtxSetCurrent");
}

static WsfStatus
read_attrs(Comp *c, Driver *d)
{
	static const struct {
		CUdevice_attribute attr;
		size_t offset;
		const char *name;
	} attrs[] = {
		{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(Driver, sm_count), "SM count"},
		{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(Driver, smem_optin),
		 "shared memory opt-in"},
		{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(Driver, cc_major), "cc major"},
		{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(Driver, cc_minor), "cc minor"},
	};
	int i;

	for (i = 0; i < countof(attrs); i++) {
		int *v = (int *)((char *)d + attrs[i].offset);
		WsfStatus st = rt_check(c, d, d->cuDeviceGetAttribute(v, attrs[i].attr, d->device),
		                        arena_printf(c->arena, "cuDeviceGetAttribute(%s)", attrs[i].name));

		if (st != WSF_OK)
			return st;
	}
	return WSF_OK;
}

WsfStatus
rt_driver_open(Comp *c, Driver **out)
{
	const char *path = getenv("WSFUSE_LIBCUDA_PATH");
	Driver *d;
	WsfStatus st;

	*out = NULL;
	if (!path || !*path)
		path = "libcuda.so.1";
	d = calloc(1, sizeof *d);
	if (!d) {
		Pos none = {0};

		diag_error(c, none, "out of memory opening the CUDA driver");
		return WSF_ERR_NOMEM;
	}
	d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		st = no_gpu(c, "cannot load the CUDA driver: %s; %s", dlerror(), hint);
		goto fail;
	}
	if ((st = resolve(c, d, path)) != WSF_OK)
		goto fail;
	if ((st = init_check(c, d, d->cuInit(0), "cuInit")) != WSF_OK)
		goto fail;
	st = init_check(c, d, d->cuDriverGetVersion(&d->version), "cuDriverGetVersion");
	if (st != WSF_OK)
		goto fail;
	if (d->version < DRIVER_MIN_VERSION) {
		st = no_gpu(c, "the CUDA driver supports CUDA %d.%d; wsfuse needs 12.0 or newer",
		            d->version / 1000, d->version % 1000 / 10);
		goto fail;
	}
	if ((st = pick_context(c, d)) != WSF_OK || (st = read_attrs(c, d)) != WSF_OK)
		goto fail;
	if (d->cc_major != 9 || d->cc_minor != 0) {
		st = no_gpu(c, "device %d is sm_%d%d; wsfuse kernels need sm_90 (H100, H200)",
		            (int)d->device, d->cc_major, d->cc_minor);
		goto fail;
	}
	*out = d;
	return WSF_OK;

fail:
	rt_driver_close(d);
	return st;
}

void
rt_driver_close(Driver *d)
{
	if (!d)
		return;
	if (d->retained) {
		CUcontext cur = NULL;
		unsigned flags;
		int active = 1;

		(void)d->cuCtxGetCurrent(&cur);
		d->cuDevicePrimaryCtxRelease(d->device);
		/* the last count destroyed it: leave no dangling current context behind */
		if (cur == d->ctx && d->cuDevicePrimaryCtxGetState(d->device, &flags, &active) == CUDA_SUCCESS && !active)
			d->cuCtxSetCurrent(NULL);
	}
	if (d->lib)
		dlclose(d->lib);
	free(d);
}

void
rt_put_text(Buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			buf_puts(b, s[1] ? "\n    " : "");
		else
			buf_printf(b, "%c", (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	}
}

const char *
rt_reason(const Comp *c)
{
	static const char *const prefixes[] = {"error: ", "no usable GPU: "};
	const char *s = c->last_error ? c->last_error : "no reason given";
	int i;

	for (i = 0; i < countof(prefixes); i++)
		if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0)
			s += strlen(prefixes[i]);
	return s;
}

void
rt_driver_describe(Comp *c, Buf *b)
{
	const char *path = getenv("WSFUSE_LIBCUDA_PATH");
	WsfDiagFn diag = c->diag;
	Driver *d = NULL;
	Dl_info info;
	void *p;
	int n = 0, i;

	c->diag = NULL;
	if (!path || !*path)
		path = "libcuda.so.1";
	if (!(d = calloc(1, sizeof *d)) || !(d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		buf_puts(b, "driver: none (");
		rt_put_text(b, d ? dlerror() : "out of memory");
		buf_puts(b, ")\ngpu: none\n");
		goto done;
	}
	/* the version first, from the one entry point every driver has, so an old driver says how old */
	if ((p = dlsym(d->lib, "cuDriverGetVersion"))) {
		PFN_cuDriverGetVersion_v2020 version;

		memcpy(&version, &p, sizeof p);
		version(&d->version);
	}
	if (d->version > 0)
		buf_printf(b, "driver: %d.%d", d->version / 1000, d->version % 1000 / 10);
	else
		buf_puts(b, "driver: version unknown");
	buf_puts(b, " (");
	rt_put_text(b, p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : path);
	buf_puts(b, ")");
	if (resolve(c, d, path) != WSF_OK) {
		buf_puts(b, ", unusable: ");
		rt_put_text(b, rt_reason(c));
		buf_puts(b, "\ngpu: none\n");
		goto done;
	}
	buf_puts(b, "\n");
	if (init_check(c, d, d->cuInit(0), "cuInit") != WSF_OK ||
	    init_check(c, d, d->cuDeviceGetCount(&n), "cuDeviceGetCount") != WSF_OK) {
		buf_puts(b, "gpu: none (");
		rt_put_text(b, rt_reason(c));
		buf_puts(b, ")\n");
		goto done;
	}
	if (n == 0)
		buf_puts(b, "gpu: none (the driver reports no devices; check CUDA_VISIBLE_DEVICES)\n");
	for (i = 0; i < n; i++) {
		char name[256] = "?";
		int major = 0, minor = 0, sms = 0, smem = 0;
		CUdevice dev;

		if (d->cuDeviceGet(&dev, i) != CUDA_SUCCESS)
			continue;
		d->cuDeviceGetName(name, (int)sizeof name - 1, dev);
		d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
		d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
		d->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
		d->cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
		buf_printf(b, "gpu %d: ", i);
		rt_put_text(b, name);
		buf_printf(b, ", sm_%d%d, %d SMs, %d KiB shared memory a CTA%s\n", major, minor, sms, smem / 1024,
		           major == 9 && minor == 0 ? "" : " (wsfuse kernels need sm_90)");
	}
done:
	if (d && d->lib)
		dlclose(d->lib);
	free(d);
	c->diag = diag;
}
