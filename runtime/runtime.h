/*
 * runtime.h: the internal header of runtime/ (NVRTC, the disk cache, libcuda,
 * tensor maps, launches, and the host reference evaluator).
 *
 *   nvrtc.c      NVRTC loaded with dlopen; CUDA source -> PTX and sm_90a cubin
 *   cache.c      the disk cache of cubins (key, lookup, atomic store)
 *   files.c      files written whole or not at all (outputs, cache entries, dumps)
 *   driver.c     libcuda loaded with dlopen, entry points from cuGetProcAddress
 *   tmap.c       tensor-map parameters and their checks (pure), and encoding
 *   reference.c  host evaluator of the fusion IR in double precision
 *   hostfp.c     f16/bf16/fp8 <-> double conversions on the host
 *   launch.c     argument checks, 2-D views, tensor maps, module load, launch
 *   run.c        random inputs, poisoned outputs, check against reference.c, timing
 *   timing.c     the measured choice's clock: launches timed between events
 *
 * Every function reports failures through diag_error on the Comp it is given
 * (a launch makes a short-lived Comp for that) and returns a WsfStatus.
 * Nothing here knows the passes or reads the kernel IR: codegen/ tells it
 * what to compile, and what to launch (Launch, codegen/launch_desc.c).
 */
#ifndef WSFUSE_RUNTIME_H
#define WSFUSE_RUNTIME_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "../ir/ir.h"

/* ---- nvrtc.c / cache.c ------------------------------------------------ */

typedef struct RtOptions {
	const char *cache_dir; /* NULL: $WSFUSE_CACHE_DIR, $XDG_CACHE_HOME/wsfuse, ~/.cache/wsfuse */
	int cache;             /* 0: as $WSFUSE_CACHE says (default on), 1: off, 2: on */
	const char *dump_dir;  /* where a failing source is written; NULL: cache dir or /tmp */
	bool lineinfo;         /* -lineinfo: line tables in the PTX and cubin, for profilers */
	const char *line_dir;  /* with lineinfo: the folder the line tables name NAME.cu in; NULL: the current one */
} RtOptions;

/* One header NVRTC sees, as #include "NAME". */
typedef struct RtHeader {
	const char *name;
	const char *text;
} RtHeader;

typedef struct Cubin {
	const char *ptx;       /* NUL-terminated */
	size_t ptx_len;
	const void *cubin;
	size_t cubin_len;
	const char *log;       /* NVRTC + ptxas log, "" if none */
	bool cache_hit;
} Cubin;

/*
 * Compiles SRC (kernel NAME) for sm_90a with the given headers, through the
 * disk cache.  Results live in c->arena.  A compile error reports the NVRTC
 * result name, the options, the first lines of the log and where the source
 * was written.  ptxas warnings about serialized wgmma or ignored setmaxnreg
 * are errors.  WSF_ERR_NVRTC when NVRTC cannot be loaded or fails.
 */
WsfStatus rt_compile(Comp *c, const RtOptions *o, const char *name, const char *src,
                     const RtHeader *hdr, int nhdr, Cubin *out);
/*
 * The lines of a ptxas log that make rt_compile fail (serialized wgmma,
 * ignored setmaxnreg): NULL when there is none, else what they mean in one
 * sentence, with *LINES each such line quoted after its meaning ("" when
 * none).  Exposed for tests.
 */
const char *rt_ptxas_fatal(Arena *a, const char *log, const char **lines);
/* The bytes of registers ptxas spilled to local memory, by its log (Cubin.log). */
long rt_spill_bytes(const char *log);
/* What ptxas --verbose reports of an entry point; -1 where the log says nothing. */
typedef struct RtPtxas {
	int registers;     /* a thread */
	int smem;          /* static shared memory, bytes */
	int stack;         /* the entry's stack frame, bytes */
	int spill_stores;  /* bytes, summed over every function, as rt_spill_bytes */
	int spill_loads;
} RtPtxas;
/* The report of entry point ENTRY in LOG (Cubin.log). */
void rt_ptxas_report(const char *log, const char *entry, RtPtxas *r);
/*
 * Appends "nvrtc: VERSION (PATH)" to B, or "nvrtc: none (why)"; with FULL
 * also the line of options wsfuse compiles with under O.  Reports nothing through
 * C's diagnostics callback (C's errors are only recorded); for bug reports.
 */
void rt_nvrtc_describe(Comp *c, const RtOptions *o, Buf *b, bool full);

/* The cache key (hex SHA-256) of a compile; exposed for tests. */
const char *rt_cache_key(Comp *c, const char *name, const char *src, const RtHeader *hdr,
                         int nhdr, const char *const *opts, int nopts, int nvrtc_version);
/* The cache directory in effect for O, or NULL when the cache is off. */
const char *rt_cache_dir(Comp *c, const RtOptions *o);
/* Looks KEY up: 1 hit (out filled), 0 miss (a missing, partial or corrupt entry). */
int rt_cache_load(Comp *c, const char *dir, const char *key, Cubin *out);
/* Stores an entry atomically (temp file + rename); failures only warn. */
void rt_cache_store(Comp *c, const char *dir, const char *key, const char *src, const Cubin *in);
/* SHA-256 (FIPS 180-4) of N bytes as 64 lowercase hex digits and a NUL; exposed for tests. */
void rt_sha256_hex(const void *data, size_t n, char hex[65]);

/* ---- files.c ----------------------------------------------------------- */

/* How rt_write_file treats PATH (flags, or'ed). */
typedef enum RtWrite {
	RT_WRITE_NONE = 0,
	RT_WRITE_MKDIRS = 1,   /* make missing parent directories */
	RT_WRITE_THROUGH = 2   /* a path the user named: follow links, write devices and FIFOs in place */
} RtWrite;

/*
 * Writes N bytes to PATH whole or not at all: a temp file created with
 * O_EXCL in PATH's folder, renamed over PATH.  With RT_WRITE_THROUGH a
 * symbolic link's target is replaced (the link stays) and a device, FIFO or
 * socket is written in place.  0, or -1 with errno set and nothing left
 * behind.
 */
int rt_write_file(const char *path, const void *data, size_t n, unsigned flags);

/* rt_read_file's failures other than -1 (errno) */
enum { RT_READ_IRREGULAR = -2, RT_READ_TOO_LONG = -3 };

/*
 * Reads the whole of PATH, a file wsfuse found rather than was handed, into
 * C's arena, NUL-terminated: *TEXT and *LEN.  Never blocks: a FIFO, device or
 * socket is RT_READ_IRREGULAR, unread; a file over MAX bytes RT_READ_TOO_LONG.
 * 0, or -1 with errno set (ENOENT: nothing there, or a dangling link;
 * EISDIR: a folder).
 */
int rt_read_file(Comp *c, const char *path, size_t max, char **text, size_t *len);

/* ---- driver.c ---------------------------------------------------------- */

/* The driver entry points wsfuse uses: name and ABI version for cuGetProcAddress. */
#define RT_DRIVER_FUNCS(X) \
	X(cuInit, 2000) \
	X(cuDriverGetVersion, 2020) \
	X(cuDeviceGet, 2000) \
	X(cuDeviceGetCount, 2000) \
	X(cuDeviceGetAttribute, 2000) \
	X(cuDeviceGetName, 2000) \
	X(cuDevicePrimaryCtxRetain, 7000) \
	X(cuDevicePrimaryCtxRelease, 11000) \
	X(cuDevicePrimaryCtxGetState, 7000) \
	X(cuCtxGetCurrent, 4000) \
	X(cuCtxSetCurrent, 4000) \
	X(cuCtxGetDevice, 2000) \
	X(cuCtxSynchronize, 2000) \
	X(cuModuleLoadData, 2000) \
	X(cuModuleUnload, 2000) \
	X(cuModuleGetFunction, 2000) \
	X(cuFuncSetAttribute, 9000) \
	X(cuFuncGetAttribute, 2020) \
	X(cuLaunchKernelEx, 11060) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
	X(cuOccupancyMaxActiveClusters, 11070) \
	X(cuTensorMapEncodeTiled, 12000) \
	X(cuMemAlloc, 3020) \
	X(cuMemFree, 3020) \
	X(cuMemcpyHtoD, 3020) \
	X(cuMemcpyDtoH, 3020) \
	X(cuMemsetD8, 3020) \
	X(cuMemsetD8Async, 3020) \
	X(cuMemsetD32, 3020) \
	X(cuStreamSynchronize, 2000) \
	X(cuStreamWaitEvent, 3020) \
	X(cuStreamIsCapturing, 10000) \
	X(cuEventCreate, 2000) \
	X(cuEventRecord, 2000) \
	X(cuEventSynchronize, 2000) \
	X(cuEventElapsedTime, 2000) \
	X(cuEventDestroy, 4000) \
	X(cuGetErrorName, 6000) \
	X(cuGetErrorString, 6000)

typedef struct Driver {
	void *lib;            /* dlopen handle */
	int version;          /* cuDriverGetVersion */
	CUdevice device;
	CUcontext ctx;        /* current or primary context of DEVICE */
	bool retained;        /* ctx is a primary context we retained (each driver of one its own count) */
	int sm_count;
	int smem_optin;       /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
	int cc_major, cc_minor;
#define RT_DRIVER_PTR(name, ver) PFN_##name##_v##ver name;
	RT_DRIVER_FUNCS(RT_DRIVER_PTR)
#undef RT_DRIVER_PTR
} Driver;

/*
 * Opens libcuda ($WSFUSE_LIBCUDA_PATH or libcuda.so.1), resolves the table,
 * initialises the driver and makes a context current (the current one, else
 * device 0's primary context).  WSF_ERR_NO_GPU, with a message saying why
 * (no libcuda, no device, not sm_90), when launches are impossible.
 * The Driver is malloc'ed; rt_driver_close frees it.
 */
WsfStatus rt_driver_open(Comp *c, Driver **out);
void rt_driver_close(Driver *d);
/*
 * Appends "driver: VERSION (PATH)" and a "gpu N: NAME, sm_XY, ..." line a
 * device to B, or says why there is none ("driver: none (...)", "gpu:
 * none (...)").  Makes no context.  For bug reports, like rt_nvrtc_describe.
 */
void rt_driver_describe(Comp *c, Buf *b);
/* C's last error without its "error: " and "no usable GPU: ": why a describe found nothing. */
const char *rt_reason(const Comp *c);
/*
 * Appends S with control bytes as '?' and each line after the first
 * indented: text from outside (a path, a variable, dlerror) cannot forge a
 * line of a report.
 */
void rt_put_text(Buf *b, const char *s);
/* Reports a failed driver call by name: "cuModuleLoadData: CUDA_ERROR_...: text". */
WsfStatus rt_check(Comp *c, const Driver *d, CUresult r, const char *call);

/* ---- tmap.c ------------------------------------------------------------ */

/* The largest dim of a tensor map: the driver encodes 2^32, but coordinates are signed 32-bit. */
#define TMA_MAX_COORD ((int64_t)1 << 31)

/* cuTensorMapEncodeTiled's arguments, innermost dimension first. */
typedef struct TmapParams {
	Dtype dtype;
	int rank;                  /* 1..5 */
	uint64_t dims[5];
	uint64_t strides[4];       /* bytes, of dims 1..rank-1 */
	uint32_t box[5];
	CUtensorMapSwizzle swizzle;
} TmapParams;

/*
 * Fills P for the row-major tensor NAME (dtype DT, RANK dims SHAPE and BOX,
 * outermost first, swizzled in spans of SWIZZLE bytes (32, 64, 128; 0: none),
 * at device address ADDR) and checks every TMA rule: rank,
 * 16-byte address alignment, dims < 2^32, strides multiples of 16 bytes and
 * < 2^40, box <= 256 and inner box bytes a multiple of 16.  A violation is
 * WSF_ERR_INPUT naming the tensor, the dim, the rule, the values and a fix.
 */
WsfStatus rt_tmap_params(Comp *c, const char *name, Dtype dt, int rank, const int64_t *shape,
                         const int64_t *box, int swizzle, uint64_t addr, TmapParams *p);
/* Encodes P for ADDR into MAP through the driver; failures print every parameter. */
WsfStatus rt_tmap_encode(Comp *c, const Driver *d, const char *name, const TmapParams *p,
                         void *addr, CUtensorMap *map);

/* ---- hostfp.c ---------------------------------------------------------- */

/* Converts N doubles to DT (round to nearest even) into DST, and back. */
void rt_pack(Dtype dt, const double *src, size_t n, void *dst);
void rt_unpack(Dtype dt, const void *src, size_t n, double *dst);
/* Rounds X to the nearest value representable in DT. */
double rt_round(Dtype dt, double x);

/* ---- parallel.c -------------------------------------------------------- */

/*
 * Calls FN(CTX, lo, hi) on disjoint ranges that cover [0, N), one a thread
 * (up to the host's cores), none shorter than GRAIN; returns when all are done.
 */
void rt_par_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);

/* ---- reference.c ------------------------------------------------------- */

/*
 * Evaluates fusion F (after passes/infer.c: no composites, shapes and axes
 * resolved, every size bound) in double precision.  IN[i] holds tensor
 * f->input[i], row-major; OUT[j] receives output f->out[j] (before rounding to
 * its stored dtype; the caller compares).  Intermediate values are computed
 * in double and never rounded, matching wsfuse's "round once when stored".
 * Returns WSF_OK, or WSF_ERR_NOMEM.
 */
WsfStatus rt_reference(Comp *c, const Fusion *f, const double *const *in, double *const *out);
/* Philox4x32-10 of counter C (in place) under key (K0, K1); rand_like's number for element IDX. */
void rt_philox(uint32_t c[4], uint32_t k0, uint32_t k1);
double rt_rand_uniform(uint64_t seed, uint64_t offset, uint64_t idx);

/* ---- launch.c --------------------------------------------------------- */

/* What a launch passes, worked out on the host before the driver is touched. */
typedef struct LaunchPlan {
	int64_t rows, cols;  /* the 2-D view of the domain; a batched matmul's: one batch's */
	int64_t batch;       /* a batched matmul's batch (Launch.batched); else 1 */
	int64_t inner;       /* a matmul's K (the dim its SZ_INNER param names); else 0 */
	int64_t *dims;       /* indexed by param id: an SZ_DIM param's extent, bound by the arguments */
	int64_t tiles;       /* tiles of that view */
	TmapParams *tmap;    /* indexed by param id, for PK_TMAP params */
} LaunchPlan;

/*
 * Checks the caller's tensors against the spec (dtype, rank, contiguity,
 * extents that name the same size agree, alignment), chooses the 2-D view and
 * every tensor map's parameters.  Pure: no driver, so unit tests and
 * tests/fuzz/fuzz_launch.c run it.  Any tensors at all are refused or
 * planned, never overflow a product of sizes: extents are 1..MAX_EXTENT,
 * element and byte counts fit int64_t.  WSF_ERR_INPUT names the argument
 * and dim at fault; a null ARGS or shape is WSF_ERR_USAGE.
 */
WsfStatus rt_launch_plan(Comp *c, const Launch *l, const WsfTensor *args, int nargs, LaunchPlan *p);
/* The words a launch of L planned as P needs in wait_flags: each waiting input's (Launch.waits), 0 if none. */
int64_t rt_wait_words(const Launch *l, const LaunchPlan *p);

/*
 * Launches the kernel L describes on STREAM with the caller's tensors:
 * checks every argument's dtype and shape against the spec (sizes bind from
 * the shapes and must agree), derives the 2-D view, builds the tensor maps
 * (checking TMA rules), loads CUBIN on first use into *STATE, and launches
 * a persistent grid.  WSF_ERR_INPUT names the argument and dim at fault.
 */
/* What a launch takes besides the tensors (wsf_kernel_launch_ex's options). */
typedef struct LaunchExtra {
	uint32_t *flags;    /* signal: per_tile: the caller's flag words, one an output tile */
	uint32_t epoch;     /* the value they are set to, not 0 */
	int max_ctas;       /* a persistent grid's cap; 0: as many CTAs as the GPU holds */
	const uint32_t *wait_flags;   /* inputs with wait: per_tile: the words their tiles are published by */
} LaunchExtra;

/* X: flags, epoch and a grid cap (NULL: none; a kernel that signals needs flags). */
WsfStatus rt_launch(Comp *c, const Launch *l, Loaded **state, const void *cubin,
                    const WsfTensor *args, int nargs, CUstream stream, const LaunchExtra *x);
/* Unloads the module and closes the driver; NULL is ignored. */
void rt_unload(Loaded *state);
/* The driver of a loaded state (opening it on first use); for run.c. */
WsfStatus rt_loaded_driver(Comp *c, Loaded **state, Driver **d);

/* ---- run.c ------------------------------------------------------------ */

/*
 * N random values in [LO, HI) from SEED, rounded to DT (integers: 0..BELOW-1
 * where BELOW is not 0, an index's positions), packed into PACKED and, when
 * HOST is not NULL, kept there as doubles.  The same seed gives the same
 * values on any number of threads.
 */
void rt_fill_random(Dtype dt, int64_t n, uint64_t seed, double lo, double hi, int64_t below, void *packed,
                    double *host);
/*
 * The N values of DT in PACKED against WANT rounded to DT: *REL_ERR, the
 * norm of the difference over the norm of WANT; *MISS, the values left
 * unwritten: NaN where WANT is not (outputs are poisoned with NaN before a
 * launch), or, with INIT (an accumulating output's values before the launch,
 * WANT holding them plus the result), still their INIT where WANT is more
 * than 4 units in the last place of DT and more than FLOOR away from it.  A
 * result within FLOOR of 0 (the check's tolerance times the results' RMS:
 * an activation's far tail, which its fast forms round to 0) leaves a value
 * as it was, written or not.
 */
typedef struct RtMiss {
	int64_t count;          /* unwritten values */
	int64_t first;          /* the first one's index (-1: none) */
	double got, want;       /* its value, and the reference's rounded to DT */
} RtMiss;
WsfStatus rt_compare(Dtype dt, int64_t n, const void *packed, const double *want, const double *init,
                     double floor, double *rel_err, RtMiss *miss);
/*
 * The note that names where output X (of SHAPE, NUMEL values) was left
 * unwritten, at X's line: how many values, the first one's index in SHAPE,
 * its value and the reference's, and with INIT (accumulating) what it held
 * before the launch.
 */
void rt_note_miss(Comp *c, const Tensor *x, const int64_t *shape, int64_t numel, const RtMiss *m, const double *init);
/*
 * Random arguments of L at the bound sizes on the GPU, drawn as rt_run
 * draws them (O's seed and scale; outputs poisoned), given to FN with
 * USER and freed when it returns.  Their driver is their own, not L's
 * kernel's, which FN may replace (wsf_kernel_run's measured choice).
 */
WsfStatus rt_with_args(Comp *c, const Launch *l, const WsfRunOptions *o,
                       void (*fn)(void *user, const WsfTensor *args, int nargs), void *user);
/* wsf_kernel_run: random inputs, poisoned outputs, launch, check, time. */
WsfStatus rt_run(Comp *c, const Launch *l, Loaded **state, const void *cubin,
                 const WsfRunOptions *o, WsfRunReport *r);

/* ---- timing.c --------------------------------------------------------- */

/* How rt_time_launches times a kernel. */
typedef struct RtTiming {
	int warmup;     /* launches before the timed ones: the module loads, the maps are made */
	int launches;   /* launches a timed round, back to back on the stream */
	int rounds;     /* rounds; the time is the best round's */
} RtTiming;
/*
 * Milliseconds a launch of the kernel L describes takes on STREAM with
 * ARGS (as rt_launch takes them), timed as T says, in *MS (-1 until a
 * round completes).
 */
WsfStatus rt_time_launches(Comp *c, const Launch *l, Loaded **state, const void *cubin, const WsfTensor *args,
                           int nargs, CUstream stream, const RtTiming *t, float *ms);
/*
 * Whether STREAM may be timed on (the driver of *STATE opens and the
 * stream is not being captured into a graph); if so "NAME, N SMs", the
 * GPU's, is appended to GPU, for a tune record's key.
 */
bool rt_timing_gpu(Comp *c, Loaded **state, CUstream stream, Buf *gpu);

#endif
