/*
 * fake_cuda.c: a stand-in libcuda for the launch and tune paths, loaded
 * through WSFUSE_LIBCUDA_PATH.  One fake device: an sm_90 with 132 SMs and
 * 227 KiB of shared memory a CTA (opt-in).  Device memory is host memory;
 * nothing runs.  What the driver documents as invalid, it refuses with
 * CUDA_ERROR_INVALID_VALUE and counts as a violation: every
 * cuTensorMapEncodeTiled argument (rank, address, dims, strides, box,
 * element strides, interleave and swizzle; and, stricter than the driver,
 * a dim past 2^31, which TMA's signed 32-bit coordinates cannot reach),
 * every launch's grid, block, shared memory and cluster, a module that is
 * not a CUDA ELF, a function it does not name.  Events record a clock that each launch advances
 * (knobs launch_us and cluster_us), so the measured choice can time.
 *
 * A test reads it through the exported fake_cuda_* functions (dlopen the
 * same path: the library's handle and the test's share one copy), and
 * $FAKE_CUDA_LOG, a file, gets a line for each launch and encode.
 */
#include <elf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define SMS 132
#define SMEM_OPTIN (227 * 1024)
#define SMEM_SM (228 * 1024)     /* a CTA reserves 1 KiB of it besides its own */
#define MAX_FUNCS 256
#define MAX_ALLOCS 4096

typedef struct Func {
	bool live;
	int module;
	int max_dyn_smem;    /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
	bool non_portable;   /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
} Func;

typedef struct Alloc {
	char *p;
	size_t bytes;
} Alloc;

/* The device and what tests read; one copy a process, as the real driver's. */
static struct {
	bool init;
	int primary;                 /* retain count of the primary context */
	CUcontext current;
	Func func[MAX_FUNCS];
	int nfunc;
	int modules;                 /* loaded now */
	Alloc alloc[MAX_ALLOCS];
	long long held, peak, allocs, frees, syncs, waits, launches, encodes, violations;
	double clock_us;
	/* the last launch */
	long long grid, block, smem, cluster, cooperative;
	/* knobs */
	long long launch_us, cluster_us, max_clusters, capturing, max_alloc, max_held;
	char last[512];              /* the last violation */
} fk = {.launch_us = 10, .cluster_us = 10, .max_clusters = -1, .max_alloc = 1ll << 34, .max_held = -1};

static int ctx_token;
#define PRIMARY ((CUcontext)&ctx_token)

static FILE *
log_file(void)
{
	static FILE *f;
	const char *path = getenv("FAKE_CUDA_LOG");

	if (!f && path && *path)
		f = fopen(path, "a");
	return f;
}

static void __attribute__((format(printf, 1, 2)))
note(const char *fmt, ...)
{
	FILE *f = log_file();
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fflush(f);
}

/* A broken rule: counted, kept for fake_cuda_last_violation, logged; CUDA_ERROR_INVALID_VALUE. */
static CUresult __attribute__((format(printf, 1, 2)))
violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fk.last, sizeof fk.last, fmt, ap);
	va_end(ap);
	fk.violations++;
	note("violation: %s", fk.last);
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- what tests call -------------------------------------------------- */

long long fake_cuda_get(const char *what);
void fake_cuda_set(const char *knob, long long value);
const char *fake_cuda_last_violation(void);

long long
fake_cuda_get(const char *what)
{
	static const struct {
		const char *name;
		long long *v;
	} t[] = {
		{"held", &fk.held}, {"peak", &fk.peak}, {"allocs", &fk.allocs}, {"frees", &fk.frees},
		{"syncs", &fk.syncs}, {"waits", &fk.waits}, {"launches", &fk.launches}, {"encodes", &fk.encodes},
		{"violations", &fk.violations}, {"grid", &fk.grid}, {"block", &fk.block}, {"smem", &fk.smem},
		{"cluster", &fk.cluster}, {"cooperative", &fk.cooperative},
	};

	if (strcmp(what, "modules") == 0)
		return fk.modules;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i].name, what) == 0)
			return *t[i].v;
	return -1;
}

/*
 * Knobs: launch_us (what a launch advances the clock), cluster_us (the same
 * for a launch in clusters), max_clusters (cuOccupancyMaxActiveClusters'
 * answer; -1: SMs / cluster size), capturing (the stream, as an integer,
 * that cuStreamIsCapturing says is capturing), max_alloc (bytes beyond
 * which cuMemAlloc is out of memory), max_held (bytes held at most; -1
 * none); "reset" zeroes the counters.
 */
void
fake_cuda_set(const char *knob, long long value)
{
	if (strcmp(knob, "launch_us") == 0)
		fk.launch_us = value;
	else if (strcmp(knob, "cluster_us") == 0)
		fk.cluster_us = value;
	else if (strcmp(knob, "max_clusters") == 0)
		fk.max_clusters = value;
	else if (strcmp(knob, "capturing") == 0)
		fk.capturing = value;
	else if (strcmp(knob, "max_alloc") == 0)
		fk.max_alloc = value;
	else if (strcmp(knob, "max_held") == 0)
		fk.max_held = value;
	else if (strcmp(knob, "reset") == 0) {
		fk.peak = fk.held;
		fk.allocs = fk.frees = fk.syncs = fk.waits = fk.launches = fk.encodes = fk.violations = 0;
		fk.last[0] = 0;
	}
}

const char *
fake_cuda_last_violation(void)
{
	return fk.last;
}

/* ---- device and context ---------------------------------------------- */

static CUresult
f_init(unsigned flags)
{
	if (flags)
		return violation("cuInit: flags %u, must be 0", flags);
	fk.init = true;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI
cuDriverGetVersion(int *v)
{
	*v = 12080;
	return CUDA_SUCCESS;
}

static CUresult
f_device_get(CUdevice *d, int ordinal)
{
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

static CUresult
f_device_count(int *n)
{
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = 1;
	return CUDA_SUCCESS;
}

static CUresult
f_device_attr(int *v, CUdevice_attribute a, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = SMS; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = SMEM_OPTIN; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = SMEM_SM; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

static CUresult
f_device_name(char *name, int len, CUdevice d)
{
	if (d != 0 || len < 1)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "fake sm_90 (tests/unit/fake_cuda.c)");
	return CUDA_SUCCESS;
}

static CUresult
f_primary_retain(CUcontext *ctx, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	fk.primary++;
	*ctx = PRIMARY;
	return CUDA_SUCCESS;
}

static CUresult
f_primary_release(CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (fk.primary < 1)
		return violation("cuDevicePrimaryCtxRelease: the primary context is not retained");
	fk.primary--;
	return CUDA_SUCCESS;
}

static CUresult
f_primary_state(CUdevice d, unsigned *flags, int *active)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*flags = 0;
	*active = fk.primary > 0;
	return CUDA_SUCCESS;
}

static CUresult
f_ctx_get(CUcontext *ctx)
{
	*ctx = fk.current;
	return CUDA_SUCCESS;
}

static CUresult
f_ctx_set(CUcontext ctx)
{
	if (ctx && (ctx != PRIMARY || fk.primary < 1))
		return violation("cuCtxSetCurrent: %p is no live context", (void *)ctx);
	fk.current = ctx;
	return CUDA_SUCCESS;
}

static CUresult
f_ctx_device(CUdevice *d)
{
	if (!fk.current)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = 0;
	return CUDA_SUCCESS;
}

/* Every call that works in a context: one must be current and alive. */
static CUresult
need_ctx(const char *call)
{
	if (!fk.current || fk.primary < 1)
		return violation("%s: no current context", call), CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

static CUresult
f_ctx_sync(void)
{
	fk.syncs++;
	return need_ctx("cuCtxSynchronize");
}

/* ---- modules and functions -------------------------------------------- */

typedef struct Module {
	int id;
	const char *image;
	size_t size;
} Module;

static Module modules[MAX_FUNCS];   /* a slot with id 0 is free */
static int module_ids;

static CUresult
f_module_load(CUmodule *m, const void *image)
{
	const Elf64_Ehdr *h = image;
	CUresult r;
	int i;

	if ((r = need_ctx("cuModuleLoadData")))
		return r;
	if (!image || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
	    h->e_machine != EM_CUDA)
		return violation("cuModuleLoadData: the image is not a 64-bit CUDA ELF (a cubin)"),
		       CUDA_ERROR_INVALID_IMAGE;
	for (i = 0; i < MAX_FUNCS && modules[i].id; i++)
		;
	if (i == MAX_FUNCS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	modules[i] = (Module){++module_ids, image, (size_t)h->e_shoff + (size_t)h->e_shnum * h->e_shentsize};
	*m = (CUmodule)&modules[i];
	fk.modules++;
	return CUDA_SUCCESS;
}

static CUresult
f_module_unload(CUmodule m)
{
	Module *mod = (Module *)m;
	int i;

	if (!mod || !mod->id)
		return violation("cuModuleUnload: %p is not a loaded module", (void *)m);
	for (i = 0; i < fk.nfunc; i++)
		if (fk.func[i].module == mod->id)
			fk.func[i].live = false;
	mod->id = 0;
	fk.modules--;
	return CUDA_SUCCESS;
}

/* Does the image name NAME (a symbol's string, NUL on both sides)? */
static bool
names(const Module *m, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 1; i + n < m->size; i++)
		if (m->image[i - 1] == 0 && memcmp(m->image + i, name, n) == 0 && m->image[i + n] == 0)
			return true;
	return false;
}

static CUresult
f_get_function(CUfunction *fn, CUmodule m, const char *name)
{
	Module *mod = (Module *)m;
	int i;

	if (!mod || !mod->id)
		return violation("cuModuleGetFunction: %p is not a loaded module", (void *)m);
	if (!names(mod, name))
		return violation("cuModuleGetFunction: the module has no '%s'", name), CUDA_ERROR_NOT_FOUND;
	for (i = 0; i < fk.nfunc && fk.func[i].live; i++)
		;
	if (i == MAX_FUNCS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (i == fk.nfunc)
		fk.nfunc++;
	fk.func[i] = (Func){true, mod->id, 48 * 1024, false};
	*fn = (CUfunction)&fk.func[i];
	return CUDA_SUCCESS;
}

static Func *
live_func(CUfunction fn)
{
	Func *f = (Func *)fn;

	return f >= fk.func && f < fk.func + fk.nfunc && f->live ? f : NULL;
}

static CUresult
f_func_set(CUfunction fn, CUfunction_attribute a, int v)
{
	Func *f = live_func(fn);

	if (!f)
		return violation("cuFuncSetAttribute: %p is no live function", (void *)fn), CUDA_ERROR_INVALID_HANDLE;
	if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
		if (v < 0 || v > SMEM_OPTIN)
			return violation("cuFuncSetAttribute: MAX_DYNAMIC_SHARED_SIZE_BYTES %d, the device allows %d", v,
			                 SMEM_OPTIN);
		f->max_dyn_smem = v;
	} else if (a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
		f->non_portable = v != 0;
	}
	return CUDA_SUCCESS;
}

static CUresult
f_func_get(int *v, CUfunction_attribute a, CUfunction fn)
{
	if (!live_func(fn))
		return violation("cuFuncGetAttribute: %p is no live function", (void *)fn), CUDA_ERROR_INVALID_HANDLE;
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 128; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = live_func(fn)->max_dyn_smem; break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

/* CTAs of THREADS threads and SMEM bytes of dynamic shared memory resident on one SM. */
static int
ctas_per_sm(unsigned threads, size_t smem)
{
	int by_smem = (int)(SMEM_SM / (smem + 1024)), by_threads = threads ? (int)(2048 / threads) : 0;
	int n = by_smem < by_threads ? by_smem : by_threads;

	return n < 32 ? n : 32;
}

static CUresult
f_occupancy(int *n, CUfunction fn, int threads, size_t smem)
{
	Func *f = live_func(fn);

	if (!f)
		return violation("cuOccupancyMaxActiveBlocksPerMultiprocessor: %p is no live function", (void *)fn);
	if (threads < 1 || threads > 1024)
		return violation("cuOccupancyMaxActiveBlocksPerMultiprocessor: block of %d threads", threads);
	*n = smem > (size_t)f->max_dyn_smem ? 0 : ctas_per_sm((unsigned)threads, smem);
	return CUDA_SUCCESS;
}

/* The cluster size of CFG's attributes, 1 without; 0 for a broken one (reported). */
static unsigned
cluster_of(const CUlaunchConfig *cfg, const char *call)
{
	unsigned i, n = 1;

	if (cfg->numAttrs && !cfg->attrs)
		return violation("%s: %u attributes at a null pointer", call, cfg->numAttrs), 0;
	for (i = 0; i < cfg->numAttrs; i++) {
		const CUlaunchAttribute *a = &cfg->attrs[i];

		if (a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			continue;
		if (!a->value.clusterDim.x || !a->value.clusterDim.y || !a->value.clusterDim.z)
			return violation("%s: a cluster dimension of 0", call), 0;
		if (cfg->gridDimX % a->value.clusterDim.x || cfg->gridDimY % a->value.clusterDim.y ||
		    cfg->gridDimZ % a->value.clusterDim.z)
			return violation("%s: grid %u x %u x %u is not a multiple of the cluster %u x %u x %u", call,
			                 cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, a->value.clusterDim.x,
			                 a->value.clusterDim.y, a->value.clusterDim.z), 0;
		n = a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z;
	}
	return n;
}

static CUresult
f_occupancy_clusters(int *n, CUfunction fn, const CUlaunchConfig *cfg)
{
	Func *f = live_func(fn);
	unsigned size;

	if (!f)
		return violation("cuOccupancyMaxActiveClusters: %p is no live function", (void *)fn);
	if (!(size = cluster_of(cfg, "cuOccupancyMaxActiveClusters")))
		return CUDA_ERROR_INVALID_VALUE;
	if (size > (f->non_portable ? 16u : 8u))
		return violation("cuOccupancyMaxActiveClusters: a cluster of %u CTAs (at most %d)", size,
		                 f->non_portable ? 16 : 8), CUDA_ERROR_INVALID_CLUSTER_SIZE;
	if (cfg->sharedMemBytes > (unsigned)f->max_dyn_smem)
		return violation("cuOccupancyMaxActiveClusters: %u bytes of dynamic shared memory, the function allows %d",
		                 cfg->sharedMemBytes, f->max_dyn_smem);
	*n = fk.max_clusters >= 0 ? (int)fk.max_clusters :
	     SMS / (int)size * ctas_per_sm(cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ, cfg->sharedMemBytes);
	return CUDA_SUCCESS;
}

/* ---- launches ----------------------------------------------------------- */

static CUresult
check_launch(Func *f, const CUlaunchConfig *cfg, void **params, void **extra, const char *call)
{
	unsigned threads = cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ, size;
	CUresult r;

	if ((r = need_ctx(call)))
		return r;
	if (!f)
		return violation("%s: no live function", call), CUDA_ERROR_INVALID_HANDLE;
	if (!cfg->gridDimX || !cfg->gridDimY || !cfg->gridDimZ || cfg->gridDimX > 0x7fffffffu ||
	    cfg->gridDimY > 65535 || cfg->gridDimZ > 65535)
		return violation("%s: grid %u x %u x %u (x 1..2^31-1, y and z 1..65535)", call, cfg->gridDimX,
		                 cfg->gridDimY, cfg->gridDimZ);
	if (!threads || cfg->blockDimX > 1024 || cfg->blockDimY > 1024 || cfg->blockDimZ > 64 || threads > 1024)
		return violation("%s: block %u x %u x %u (at most 1024 threads)", call, cfg->blockDimX, cfg->blockDimY,
		                 cfg->blockDimZ);
	if (cfg->sharedMemBytes > (unsigned)f->max_dyn_smem)
		return violation("%s: %u bytes of dynamic shared memory, above the function's "
		                 "MAX_DYNAMIC_SHARED_SIZE_BYTES of %d", call, cfg->sharedMemBytes, f->max_dyn_smem);
	if (!params && !extra)
		return violation("%s: neither kernelParams nor extra", call);
	if (params && extra)
		return violation("%s: both kernelParams and extra", call);
	if (!(size = cluster_of(cfg, call)))
		return CUDA_ERROR_INVALID_VALUE;
	if (size > (f->non_portable ? 16u : 8u))
		return violation("%s: a cluster of %u CTAs (at most %d)", call, size, f->non_portable ? 16 : 8),
		       CUDA_ERROR_INVALID_CLUSTER_SIZE;
	if (size > 1 && fk.max_clusters == 0)
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	if (ctas_per_sm(threads, cfg->sharedMemBytes) < 1)
		return violation("%s: %u threads with %u bytes of shared memory fit no SM", call, threads,
		                 cfg->sharedMemBytes), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	fk.cooperative = 0;
	for (unsigned i = 0; i < cfg->numAttrs; i++)
		if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && cfg->attrs[i].value.cooperative)
			fk.cooperative = 1;
	/* a cooperative grid's CTAs are all resident at once: no more than the SMs hold */
	if (fk.cooperative && (long long)cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ >
	                      (long long)SMS * ctas_per_sm(threads, cfg->sharedMemBytes))
		return violation("%s: a cooperative grid of %u CTAs, more than %d SMs hold at once", call, cfg->gridDimX,
		                 SMS), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	fk.launches++;
	fk.grid = (long long)cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ;
	fk.block = threads;
	fk.smem = cfg->sharedMemBytes;
	fk.cluster = size;
	fk.clock_us += (double)(size > 1 ? fk.cluster_us : fk.launch_us);
	note("launch: grid %u x %u x %u block %u x %u x %u smem %u cluster %u stream %p", cfg->gridDimX,
	     cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ, cfg->sharedMemBytes, size,
	     (void *)cfg->hStream);
	return CUDA_SUCCESS;
}

static CUresult
f_launch_ex(const CUlaunchConfig *cfg, CUfunction fn, void **params, void **extra)
{
	if (!cfg)
		return violation("cuLaunchKernelEx: a null config");
	return check_launch(live_func(fn), cfg, params, extra, "cuLaunchKernelEx");
}

static CUresult
f_launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
         CUstream stream, void **params, void **extra)
{
	CUlaunchConfig cfg = {gx, gy, gz, bx, by, bz, smem, stream, NULL, 0};

	return check_launch(live_func(fn), &cfg, params, extra, "cuLaunchKernel");
}

/* ---- tensor maps ------------------------------------------------------ */

static int
type_bytes(CUtensorMapDataType t)
{
	switch (t) {
	case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
	case CU_TENSOR_MAP_DATA_TYPE_UINT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
	case CU_TENSOR_MAP_DATA_TYPE_UINT32:
	case CU_TENSOR_MAP_DATA_TYPE_INT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
	case CU_TENSOR_MAP_DATA_TYPE_UINT64:
	case CU_TENSOR_MAP_DATA_TYPE_INT64:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
	default: return 0;
	}
}

/* The rules of cuTensorMapEncodeTiled's documentation, CUDA 12. */
static CUresult
f_encode(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr, const cuuint64_t *dims,
         const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *estrides, CUtensorMapInterleave il,
         CUtensorMapSwizzle swz, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	static const char *const E = "cuTensorMapEncodeTiled";
	int bytes = type_bytes(type);
	unsigned i, align = il == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;

	if (!map || (uintptr_t)map % 64)
		return violation("%s: tensorMap %p is not 64-byte aligned", E, (void *)map);
	if (!bytes)
		return violation("%s: tensorDataType %d", E, (int)type);
	if (rank < 1 || rank > 5 || (il != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3))
		return violation("%s: tensorRank %u (1..5, 3..5 interleaved)", E, rank);
	if ((uintptr_t)addr % align)
		return violation("%s: globalAddress %p is not %u-byte aligned", E, addr, align);
	if ((unsigned)il > CU_TENSOR_MAP_INTERLEAVE_32B || (unsigned)swz > CU_TENSOR_MAP_SWIZZLE_128B ||
	    (unsigned)l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || (unsigned)oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
		return violation("%s: interleave %d, swizzle %d, l2Promotion %d or oobFill %d is no such value", E, (int)il,
		                 (int)swz, (int)l2, (int)oob);
	for (i = 0; i < rank; i++) {
		if (!dims[i] || dims[i] > (1ull << 32))
			return violation("%s: globalDim[%u] = %llu, not in 1..2^32", E, i, (unsigned long long)dims[i]);
		/* encodable, but the kernel's signed 32-bit coordinates stop short: the copy faults on a GPU */
		if (dims[i] > (1ull << 31))
			return violation("%s: globalDim[%u] = %llu, past 2^31, where TMA coordinates end", E, i,
			                 (unsigned long long)dims[i]);
	}
	for (i = 0; i + 1 < rank; i++) {
		if (strides[i] % align || strides[i] >= (1ull << 40))
			return violation("%s: globalStrides[%u] = %llu, not a multiple of %u below 2^40", E, i,
			                 (unsigned long long)strides[i], align);
		/* each stride spans at least the dim below it: the tensor does not overlap itself */
		if (strides[i] < (i ? strides[i - 1] * dims[i] : dims[0] * (cuuint64_t)bytes))
			return violation("%s: globalStrides[%u] = %llu is less than the %llu bytes of the dims inside it", E, i,
			                 (unsigned long long)strides[i],
			                 (unsigned long long)(i ? strides[i - 1] * dims[i] : dims[0] * (cuuint64_t)bytes));
	}
	for (i = 0; i < rank; i++) {
		if (!box[i] || box[i] > 256)
			return violation("%s: boxDim[%u] = %u, not in 1..256", E, i, box[i]);
		if (!estrides[i] || estrides[i] > 8)
			return violation("%s: elementStrides[%u] = %u, not in 1..8", E, i, estrides[i]);
	}
	if (il == CU_TENSOR_MAP_INTERLEAVE_NONE) {
		unsigned inner = box[0] * (unsigned)bytes, span = swz == CU_TENSOR_MAP_SWIZZLE_32B ? 32 :
		                                                  swz == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;

		if (inner % 16)
			return violation("%s: boxDim[0] x %d bytes = %u, not a multiple of 16", E, bytes, inner);
		if (swz != CU_TENSOR_MAP_SWIZZLE_NONE && inner > span)
			return violation("%s: an inner box of %u bytes is more than the swizzle's span of %u", E, inner, span);
	} else if (il == CU_TENSOR_MAP_INTERLEAVE_32B && swz != CU_TENSOR_MAP_SWIZZLE_32B) {
		return violation("%s: 32-byte interleave needs the 32-byte swizzle", E);
	}
	if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && type <= CU_TENSOR_MAP_DATA_TYPE_INT64)
		return violation("%s: the NaN fill of an integer type", E);
	memset(map, 0, sizeof *map);
	memcpy(map, &addr, sizeof addr);
	fk.encodes++;
	note("encode: type %d rank %u addr %p dims %llu x %llu box %u x %u swizzle %d", (int)type, rank, addr,
	     (unsigned long long)dims[0], rank > 1 ? (unsigned long long)dims[1] : 1ull, box[0], rank > 1 ? box[1] : 1,
	     (int)swz);
	return CUDA_SUCCESS;
}

/* ---- memory ----------------------------------------------------------- */

static Alloc *
find_alloc(CUdeviceptr p, size_t bytes)
{
	int i;

	for (i = 0; i < MAX_ALLOCS; i++)
		if (fk.alloc[i].p && (uintptr_t)p >= (uintptr_t)fk.alloc[i].p &&
		    (uintptr_t)p + bytes <= (uintptr_t)fk.alloc[i].p + fk.alloc[i].bytes)
			return &fk.alloc[i];
	return NULL;
}

static CUresult
f_alloc(CUdeviceptr *p, size_t bytes)
{
	CUresult r;
	int i;

	if ((r = need_ctx("cuMemAlloc")))
		return r;
	if (!bytes)
		return violation("cuMemAlloc: 0 bytes");
	if ((long long)bytes > fk.max_alloc || (fk.max_held >= 0 && fk.held + (long long)bytes > fk.max_held))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < MAX_ALLOCS && fk.alloc[i].p; i++)
		;
	if (i == MAX_ALLOCS || !(fk.alloc[i].p = aligned_alloc(256, (bytes + 255) & ~(size_t)255)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	fk.alloc[i].bytes = bytes;
	fk.held += (long long)bytes;
	fk.allocs++;
	if (fk.held > fk.peak)
		fk.peak = fk.held;
	*p = (CUdeviceptr)(uintptr_t)fk.alloc[i].p;
	return CUDA_SUCCESS;
}

static CUresult
f_free(CUdeviceptr p)
{
	Alloc *a = find_alloc(p, 0);

	if (!a || (uintptr_t)a->p != (uintptr_t)p)
		return violation("cuMemFree: %p was not allocated", (void *)(uintptr_t)p);
	free(a->p);
	fk.held -= (long long)a->bytes;
	fk.frees++;
	*a = (Alloc){0};
	return CUDA_SUCCESS;
}

static CUresult
f_htod(CUdeviceptr dst, const void *src, size_t n)
{
	if (!find_alloc(dst, n))
		return violation("cuMemcpyHtoD: %zu bytes at %p are not allocated", n, (void *)(uintptr_t)dst);
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

static CUresult
f_dtoh(void *dst, CUdeviceptr src, size_t n)
{
	if (!find_alloc(src, n))
		return violation("cuMemcpyDtoH: %zu bytes at %p are not allocated", n, (void *)(uintptr_t)src);
	memcpy(dst, (void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static CUresult
f_memset8(CUdeviceptr p, unsigned char v, size_t n)
{
	if (!find_alloc(p, n))
		return violation("cuMemsetD8: %zu bytes at %p are not allocated", n, (void *)(uintptr_t)p);
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}

static CUresult
f_memset8_async(CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	(void)s;
	return f_memset8(p, v, n);
}

static CUresult
f_memset32(CUdeviceptr p, unsigned v, size_t n)
{
	size_t i;

	if ((uintptr_t)p % 4 || !find_alloc(p, n * 4))
		return violation("cuMemsetD32: %zu words at %p are not allocated (or not aligned)", n, (void *)(uintptr_t)p);
	for (i = 0; i < n; i++)
		((unsigned *)(uintptr_t)p)[i] = v;
	return CUDA_SUCCESS;
}

/* ---- streams and events ----------------------------------------------- */

typedef struct Event {
	int magic;
	bool recorded;
	double us;
} Event;

#define EVENT_MAGIC 0x45564e54

static CUresult
f_stream_sync(CUstream s)
{
	(void)s;
	fk.syncs++;
	return need_ctx("cuStreamSynchronize");
}

static CUresult
f_stream_wait(CUstream s, CUevent e, unsigned flags)
{
	Event *ev = (Event *)e;

	(void)s;
	if (!ev || ev->magic != EVENT_MAGIC || flags)
		return violation("cuStreamWaitEvent: %p is no event, or flags %u", (void *)e, flags),
		       CUDA_ERROR_INVALID_HANDLE;
	fk.waits++;
	return CUDA_SUCCESS;
}

static CUresult
f_stream_capturing(CUstream s, CUstreamCaptureStatus *st)
{
	*st = fk.capturing && (uintptr_t)s == (uintptr_t)fk.capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE :
	                                                                CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

static CUresult
f_event_create(CUevent *e, unsigned flags)
{
	Event *ev = calloc(1, sizeof *ev);

	(void)flags;
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ev->magic = EVENT_MAGIC;
	*e = (CUevent)ev;
	return CUDA_SUCCESS;
}

static Event *
event(CUevent e)
{
	Event *ev = (Event *)e;

	return ev && ev->magic == EVENT_MAGIC ? ev : NULL;
}

static CUresult
f_event_record(CUevent e, CUstream s)
{
	Event *ev = event(e);

	(void)s;
	if (!ev)
		return violation("cuEventRecord: %p is no event", (void *)e), CUDA_ERROR_INVALID_HANDLE;
	ev->recorded = true;
	ev->us = fk.clock_us;
	return CUDA_SUCCESS;
}

static CUresult
f_event_sync(CUevent e)
{
	if (!event(e))
		return violation("cuEventSynchronize: %p is no event", (void *)e), CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

static CUresult
f_event_elapsed(float *ms, CUevent a, CUevent b)
{
	Event *x = event(a), *y = event(b);

	if (!x || !y)
		return violation("cuEventElapsedTime: no event"), CUDA_ERROR_INVALID_HANDLE;
	if (!x->recorded || !y->recorded)
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((y->us - x->us) / 1000);
	return CUDA_SUCCESS;
}

static CUresult
f_event_destroy(CUevent e)
{
	Event *ev = event(e);

	if (!ev)
		return violation("cuEventDestroy: %p is no event", (void *)e), CUDA_ERROR_INVALID_HANDLE;
	ev->magic = 0;
	free(ev);
	return CUDA_SUCCESS;
}

static CUresult
f_error_name(CUresult r, const char **s)
{
	switch (r) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: *s = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
	default: *s = "CUDA_ERROR_FAKE"; break;
	}
	return CUDA_SUCCESS;
}

static CUresult
f_error_string(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_INVALID_VALUE && fk.last[0] ? fk.last : "an error of the fake libcuda";
	return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ------------------------------------------------- */

#define F(name, fn) {#name, (void (*)(void))fn}
static const struct {
	const char *name;
	void (*fn)(void);
} table[] = {
	F(cuInit, f_init), F(cuDriverGetVersion, cuDriverGetVersion), F(cuDeviceGet, f_device_get),
	F(cuDeviceGetCount, f_device_count), F(cuDeviceGetAttribute, f_device_attr),
	F(cuDeviceGetName, f_device_name), F(cuDevicePrimaryCtxRetain, f_primary_retain),
	F(cuDevicePrimaryCtxRelease, f_primary_release), F(cuDevicePrimaryCtxGetState, f_primary_state),
	F(cuCtxGetCurrent, f_ctx_get), F(cuCtxSetCurrent, f_ctx_set), F(cuCtxGetDevice, f_ctx_device),
	F(cuCtxSynchronize, f_ctx_sync), F(cuModuleLoadData, f_module_load), F(cuModuleUnload, f_module_unload),
	F(cuModuleGetFunction, f_get_function), F(cuFuncSetAttribute, f_func_set),
	F(cuFuncGetAttribute, f_func_get), F(cuLaunchKernelEx, f_launch_ex), F(cuLaunchKernel, f_launch),
	F(cuOccupancyMaxActiveBlocksPerMultiprocessor, f_occupancy),
	F(cuOccupancyMaxActiveClusters, f_occupancy_clusters), F(cuTensorMapEncodeTiled, f_encode),
	F(cuMemAlloc, f_alloc), F(cuMemFree, f_free), F(cuMemcpyHtoD, f_htod), F(cuMemcpyDtoH, f_dtoh),
	F(cuMemsetD8, f_memset8), F(cuMemsetD8Async, f_memset8_async), F(cuMemsetD32, f_memset32),
	F(cuStreamSynchronize, f_stream_sync), F(cuStreamWaitEvent, f_stream_wait),
	F(cuStreamIsCapturing, f_stream_capturing),
	F(cuEventCreate, f_event_create), F(cuEventRecord, f_event_record), F(cuEventSynchronize, f_event_sync),
	F(cuEventElapsedTime, f_event_elapsed), F(cuEventDestroy, f_event_destroy),
	F(cuGetErrorName, f_error_name), F(cuGetErrorString, f_error_string),
};
#undef F

CUresult CUDAAPI
cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *found)
{
	size_t i;

	(void)version;
	(void)flags;
	*pfn = NULL;
	for (i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].name, symbol) == 0) {
			memcpy(pfn, &table[i].fn, sizeof *pfn);
			if (found)
				*found = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	if (found)
		*found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}
