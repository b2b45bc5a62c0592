/*
 * wsfuse.h: the public C API of libwsfuse.
 *
 * A WsfContext holds options, size bindings and a diagnostics callback.  It
 * compiles fusion specs (YAML, see docs/spec.md) into WsfKernel objects that
 * carry the printed IR, the generated CUDA C++, the PTX and cubin, and can be
 * launched on a CUDA stream.  Contexts are independent: there is no global
 * mutable state, and two threads may use two contexts at once.  One context or
 * one kernel must not be used by two threads at the same time.
 *
 * Every call that can fail returns a WsfStatus; its text is wsf_status_message()
 * and the detailed message (FILE:LINE:COL: error: WHAT) goes to the diagnostics
 * callback and is kept in wsf_context_last_error().  The library never exits or
 * aborts on user input.  Strings returned by the library are owned by the object
 * they came from and live as long as it does.
 */
#ifndef WSFUSE_H
#define WSFUSE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one place that holds the version: the Makefile, the Python wheel and
 * wsf_version() read it from here.  The string is the three numbers. */
#define WSF_VERSION_MAJOR 0
#define WSF_VERSION_MINOR 1
#define WSF_VERSION_PATCH 0
#define WSF_VERSION_STRING "0.1.0"

typedef enum WsfStatus {
	WSF_OK = 0,
	WSF_ERR_INPUT,    /* the spec, a size or an argument is malformed */
	WSF_ERR_USAGE,    /* the API was called wrongly (null pointer, bad option name) */
	WSF_ERR_NOMEM,    /* an allocation failed */
	WSF_ERR_IO,       /* a file could not be read or written */
	WSF_ERR_NVRTC,    /* NVRTC is missing or failed to compile the generated source */
	WSF_ERR_NO_GPU,   /* no CUDA driver or no device: launches are impossible here */
	WSF_ERR_CUDA,     /* a CUDA driver call failed */
	WSF_ERR_UNSUPPORTED, /* valid input that this version cannot compile yet */
	WSF_ERR_INTERNAL, /* a bug in wsfuse: please report it */
	WSF_STATUS_COUNT
} WsfStatus;

/* The version of the library that is running, WSF_VERSION_STRING as it was
 * built ("0.1.0"); a static string.  It may differ from the header a program
 * was compiled with when the shared library was replaced. */
const char *wsf_version(void);

/* "WSF_OK", "WSF_ERR_INPUT", ...; "WSF_STATUS_UNKNOWN" for values out of range. */
const char *wsf_status_name(WsfStatus s);
/* A one-line English description of the status. */
const char *wsf_status_message(WsfStatus s);

/* The stages a compilation goes through, in order; also the --emit values. */
typedef enum WsfStage {
	WSF_STAGE_NONE = 0,
	WSF_STAGE_FUSION_IR,  /* verified fusion IR after every fusion pass */
	WSF_STAGE_KERNEL_IR,  /* kernel IR after every kernel pass */
	WSF_STAGE_CUDA,       /* generated CUDA C++ */
	WSF_STAGE_PTX,        /* PTX from NVRTC */
	WSF_STAGE_CUBIN,      /* sm_90a cubin from NVRTC */
	/* texts made beside a stage, to read rather than to compile on */
	WSF_STAGE_PTXAS,      /* ptxas's report, made with the PTX and cubin: registers, spills, shared memory */
	WSF_STAGE_DOT,        /* Graphviz: the fusion DAG, made with the fusion IR */
	WSF_STAGE_KERNEL_DOT, /* Graphviz: the kernel's roles, pipelines, buffers and mbarriers, made with
	                         the kernel IR */
	WSF_STAGE_COUNT
} WsfStage;

/* "fusion-ir", "kernel-ir", "cuda", "ptx", "cubin", "ptxas", "dot", "kernel-dot": also the
 * --emit values and the names stop-after and dump take. */
const char *wsf_stage_name(WsfStage s);
/* The stage of that name, or WSF_STAGE_NONE. */
WsfStage wsf_stage_from_name(const char *name);
/* The stage a compilation must reach to make S: S, or the stage a text is made beside
 * (WSF_STAGE_PTX for WSF_STAGE_PTXAS, WSF_STAGE_FUSION_IR for WSF_STAGE_DOT ...). */
WsfStage wsf_stage_made_by(WsfStage s);

/* The name of pass I (from 0, in the order passes run), as option dump-after takes it; NULL past the last. */
const char *wsf_pass_name(int i);

typedef enum WsfSeverity {
	WSF_SEV_NONE = 0,
	WSF_SEV_NOTE,
	WSF_SEV_WARNING,
	WSF_SEV_ERROR
} WsfSeverity;

/* msg is a full diagnostic, possibly several lines, without a final newline. */
typedef void (*WsfDiagFn)(void *user, WsfSeverity sev, const char *msg);
/* Called with the printed IR after each pass named by the dump option. */
typedef void (*WsfDumpFn)(void *user, const char *pass, const char *text);

typedef struct WsfContext WsfContext;
typedef struct WsfKernel WsfKernel;

/* A new context, or NULL when out of memory.  The caller owns it. */
WsfContext *wsf_context_new(void);
/* Frees the context.  Kernels compiled by it stay valid. NULL is ignored.
 * From a diagnostic handler, the call in progress frees it as it returns. */
void wsf_context_delete(WsfContext *ctx);

/*
 * What wsfuse finds on this machine, for `wsfuse --version` and bug
 * reports, one "what: value" a line: "wsfuse VERSION", "nvrtc: VERSION
 * (PATH)", "driver: VERSION (PATH)", "gpu N: NAME, sm_XY, ..." a device,
 * or "none" and why for each that is missing.  With FULL also how wsfuse
 * was built, the NVRTC options, the system, the cache directory and the
 * environment variables that change what wsfuse does.  It loads NVRTC and
 * the driver to ask them, but makes no CUDA context, and it never fails for
 * want of them.  The text is owned by CTX and lives until the next call;
 * NULL only for a NULL CTX or when memory runs out.
 */
const char *wsf_environment(WsfContext *ctx, int full);

/*
 * Installs the diagnostics callback (NULL: keep messages only as last
 * error).  It (and the dump handler) runs inside the call that reports, and
 * may call any function of this API, on this context too: a call works on
 * the settings (sizes, options, handlers) it began with, so what a handler
 * changes is the next call's; a wsf_context_delete of the context, or a
 * wsf_kernel_delete of a kernel the call works on, takes effect when the
 * call returns; a launch or run of a kernel from a handler of a call on
 * that kernel is WSF_ERR_USAGE.
 */
void wsf_set_diagnostic_handler(WsfContext *ctx, WsfDiagFn fn, void *user);
/* Installs the callback for IR dumps (NULL: dumps are dropped). */
void wsf_set_dump_handler(WsfContext *ctx, WsfDumpFn fn, void *user);
/*
 * The full text of the error of the last call on this context that failed,
 * or "".  Every call given CTX that fails sets it, and passes it to the
 * handler: a null argument names the call and the argument
 * ("wsf_set_size: error: argument 'name' is NULL").  A call that succeeds
 * leaves it.  The text lives until the next call that fails.
 */
const char *wsf_context_last_error(const WsfContext *ctx);

/*
 * Binds size variable NAME to VALUE for later compiles and launches.  It
 * overrides the spec's default.  WSF_ERR_INPUT if VALUE is not positive or NAME
 * is not an identifier of at most 64 characters.
 */
WsfStatus wsf_set_size(WsfContext *ctx, const char *name, int64_t value);

/*
 * Sets an option.  Known names:
 *   "dump-after"  a pass name, a comma-separated list of them, or "all"
 *   "stop-after"  a stage name: compilation ends after that stage
 *   "cache-dir"   directory of the kernel cache
 *   "cache"       "0" disables the cache, "1" enables it
 *   "dump"        outputs to write to the dump folder on every compile, cache hits
 *                 included: a comma list of fusion-ir, kernel-ir, cuda, ptx, cubin,
 *                 ptxas, or all; each output the compile made goes to
 *                 DIR/NAME-KEY/NAME.EXT (.fir .kir .cu .ptx .cubin .ptxas; KEY 16 hex
 *                 digits of a hash of the spec, its sizes and the options that change
 *                 the code: a folder a kernel), with a note to the callback.
 *                 Unset, $WSFUSE_DUMP says (a name there that is no output makes
 *                 every compile fail with WSF_ERR_USAGE)
 *   "dump-dir"    the dump folder (made if missing; unset: $WSFUSE_DUMP_DIR, else the
 *                 current folder); also where a source NVRTC refuses is written (else
 *                 the cache's failed/ folder, or $TMPDIR, default /tmp).  With option
 *                 lineinfo, a folder whose path holds '"' or a control character
 *                 fails the compile with WSF_ERR_USAGE (ptxas cannot read the name)
 *   "override-dir" a folder of hand-edited kernels (unset: $WSFUSE_OVERRIDE_DIR): where
 *                 DIR/NAME-KEY/NAME.cu (the kernel's folder, as "dump" names it), else
 *                 DIR/NAME.cu (NAME the fusion's), exists, it is compiled in place of
 *                 the generated CUDA, and a note says so.  The
 *                 launch still passes what codegen planned (grid, block, shared memory,
 *                 arguments): an edit keeps the entry point and its parameters; a line
 *                 of the file whose first non-blank characters are "// wsfuse-override:
 *                 smem_bytes = N" (N 1 to 1 MiB) launches it with N bytes of dynamic
 *                 shared memory instead, and any other such directive fails the compile
 *                 with WSF_ERR_INPUT at its line.  A file that cannot be read, is no
 *                 regular file (a FIFO is refused, never waited on) or is a dangling
 *                 symbolic link fails the compile with WSF_ERR_IO; one over 16 MiB,
 *                 with a NUL byte, or whose PTX lacks the entry point with
 *                 WSF_ERR_INPUT.  For experiments (what a change to the kernel would
 *                 gain) before a pass makes it; the candidates that option "tune" times
 *                 are compiled as generated
 *   "lineinfo"    "1" compiles with -lineinfo (line tables that profilers such as
 *                 Nsight Compute map to the CUDA's lines), "0" without; unset,
 *                 $WSFUSE_LINEINFO decides (on unless empty or "0")
 *   "store-delay" for testing consumers of the per-tile signal: "N" (0 to 1000000)
 *                 makes one TMA store in four of a kernel that signals its tiles
 *                 first sleep up to N ns, at random; "0" (the default) none
 *   "pdl"         "1" (the default): matmul kernels launch as programmatic
 *                 dependents (a kernel may start while the one before it in the
 *                 stream finishes, and waits for it with griddepcontrol.wait
 *                 before touching global memory); "0": as ordinary launches
 *   "tune"        "1": a measured choice.  A matmul kernel compiled while it is on
 *                 times a few schedules at its first launch (the spec's own, then
 *                 each with one hint it leaves open: a tile, ping-pong 128 x 192,
 *                 a cluster, a K split, swap_ab off), on that launch's own tensors and stream, and keeps
 *                 the fastest; the choice is recorded per spec, bindings, argument
 *                 shapes and GPU in the cache folder (tune/) and read back by later
 *                 kernels instead of timing again.  The first launch compiles and
 *                 runs the candidates (seconds), writes the outputs many times and
 *                 must not be captured into a graph (it then waits for a launch
 *                 that is not); an output must not alias an input.  "0" (the
 *                 default; unset, $WSFUSE_TUNE decides): the spec's schedule, the
 *                 same CUDA on every machine
 *   "layout"      inputs a launch passes as permutes of contiguous tensors (torch's
 *                 x.t(), k.transpose(-1, -2)): "x=1,0;k=0,1,3,2", each input's dims
 *                 as x = x_stored.permute(dims).  The argument becomes x_stored (its
 *                 shape the spec's permuted back, contiguous) and the kernel reads x
 *                 as a view of its memory: a transpose of the innermost dim in tiles
 *                 through shared memory, no copy; a matmul operand's transpose is
 *                 its other layout (transpose_a/_b flips).  Checked against the spec when a
 *                 compile reads it (an unknown input, a rank or a dim that is not a
 *                 permutation: an error at the input); "" or unset: none
 *   "grad-of"     wsf_grad_*: the inputs whose gradients the backward derives, "x,w"
 *                 (others are neither outputs nor computed); a name that is not a
 *                 float input of the spec is WSF_ERR_USAGE then; "" or unset: every
 *                 float input's
 * WSF_ERR_USAGE for an unknown name or a bad value (one longer than 4096 bytes).
 */
WsfStatus wsf_set_option(WsfContext *ctx, const char *name, const char *value);

/* The largest spec wsfuse reads, in bytes (1 MiB; a spec needs a few kilobytes). */
#define WSF_MAX_SPEC_BYTES ((size_t)1 << 20)

/*
 * Compiles the spec in file PATH ("-" is not special here) to a kernel.  On
 * success *out is a new kernel the caller owns; on failure *out is NULL.  A
 * file longer than WSF_MAX_SPEC_BYTES is WSF_ERR_INPUT, and no more than that
 * is read from it (/dev/zero ends too).
 */
WsfStatus wsf_compile_file(WsfContext *ctx, const char *path, WsfKernel **out);
/*
 * Same, from LEN bytes of TEXT (at most WSF_MAX_SPEC_BYTES).  NAME (at most
 * 4096 bytes; NULL means "<string>") is the file name of diagnostics and of
 * the generated CUDA's comments, with control characters shown as '?'.
 */
WsfStatus wsf_compile_string(WsfContext *ctx, const char *name, const char *text, size_t len,
                             WsfKernel **out);
/*
 * The backward of the spec in file PATH (docs/spec.md, Gradients), as a
 * spec that wsf_compile_string reads: its inputs are those of the spec's
 * inputs it reads and grad_OUT, the gradient of each output OUT that a
 * float input reaches; its outputs are grad_IN, the gradient of each float
 * input IN, of IN's shape and dtype.  *YAML receives the text, malloc'ed
 * and NUL-terminated (the caller frees it), and *SIZE, when not NULL, its
 * length.  On failure *YAML is NULL and CTX's last error says why:
 * WSF_ERR_INPUT for a spec that does not compile, WSF_ERR_UNSUPPORTED at
 * an op whose gradient is not derived yet.  Sizes bound in CTX become the
 * backward's defaults.
 */
WsfStatus wsf_grad_file(WsfContext *ctx, const char *path, char **yaml, size_t *size);
/* Same, from LEN bytes of TEXT, named NAME as wsf_compile_string names it. */
WsfStatus wsf_grad_string(WsfContext *ctx, const char *name, const char *text, size_t len, char **yaml,
                          size_t *size);

/* Frees a kernel (and unloads its module, if loaded).  NULL is ignored.
 * From a diagnostic handler of a call on K, that call frees it as it returns. */
void wsf_kernel_delete(WsfKernel *k);
/* The fusion's name as the spec writes it (the CUDA entry point is "wsfuse_" and this name). */
const char *wsf_kernel_name(const WsfKernel *k);
/*
 * The text of STAGE (fusion IR, kernel IR, CUDA, PTX), or NULL if compilation
 * did not reach it.  For WSF_STAGE_CUBIN, the bytes; *size receives the length
 * (size may be NULL for text stages).
 */
const char *wsf_kernel_text(const WsfKernel *k, WsfStage stage, size_t *size);
/*
 * Writes the text of STAGE (for WSF_STAGE_CUBIN, the bytes) to file PATH,
 * whole or not at all: a regular file is replaced through a new temp file in
 * its folder and a rename, a symbolic link's target is replaced and the link
 * kept, and a device or FIFO (/dev/null, a named pipe) is written in place.
 * WSF_ERR_IO, with a message naming PATH, when it cannot be written;
 * WSF_ERR_USAGE when compilation stopped before STAGE.
 */
WsfStatus wsf_kernel_write(WsfContext *ctx, const WsfKernel *k, WsfStage stage, const char *path);

/* What a kernel takes of the GPU: for profiling, and what `wsfuse compile -v` prints. */
typedef struct WsfKernelStats {
	int threads;        /* a CTA */
	int smem_dynamic;   /* bytes of dynamic shared memory a CTA: the stages, staging tiles, mbarriers */
	int smem_static;    /* bytes of static shared memory (block reductions' scratch), by ptxas; -1: no report */
	int registers;      /* a thread, by ptxas; -1 when compilation stopped before ptxas (no ptx) */
	int spill_stores;   /* bytes a thread ptxas spilled to local memory, and loaded back; -1: no report */
	int spill_loads;
	int stack_bytes;    /* the stack frame a thread; -1: no report */
	int ctas_per_sm;    /* CTAs an SM holds at once by sm_90's limits on threads, registers (as ptxas
	                       allocated them) and shared memory, as the CUDA occupancy calculator counts;
	                       -1: no report */
	int persistent;     /* 1: SMs x ctas_per_sm CTAs (at most one a tile) loop over the tiles;
	                       0: one CTA a tile */
	int64_t tiles;      /* tiles (a CTA's piece of work: a tile, or a row of a row reduction) at the
	                       sizes the kernel was compiled with; -1 when a size is unbound, or a launch
	                       at those sizes is refused (2^31 tiles or more) */
	int64_t grid;       /* CTAs a launch at those sizes starts: TILES for one CTA a tile; -1 when a
	                       size is unbound, or persistent (it depends on the GPU's SM count) */
	int cluster;        /* CTAs a thread-block cluster (a matmul's schedule: cluster, or split_k): 1, 2,
	                       or a K split's 2 to 8; in clusters TILES counts each cluster tile's CTA tiles,
	                       past the output or not (a K split: each output tile's CTAs, one a share of K) */
	int workspace;      /* stream-K (a matmul's last partial wave split over the CTAs by k-steps): bytes a
	                       CTA of the grid (its slot of partial sums) in the workspace the runtime makes for
	                       each stream the kernel is launched on, after 4 KiB of flags; 0: none */
	int view_rows;      /* views of inputs (slices, chunks, transposes, pads...: docs/spec.md, Views) the
	                       kernel reads through their input's pointer: as rows of 16-byte loads at an offset, */
	int view_cols;      /* as one element a row, */
	int view_elems;     /* element by element (a step across the columns), */
	int view_tiles;     /* and as tiles exchanged through shared memory (a transpose of the innermost dim) */
	int place_rows;     /* outputs a scatter writes in place into an input (docs/spec.md, alias: index_copy,
	                       slice_scatter), its part alone: as rows of 16-byte stores at their place, */
	int place_elems;    /* and element by element (a step or an index along the columns) */
} WsfKernelStats;

/*
 * Fills *STATS for K.  Threads, shared memory and the grid come from the
 * kernel (compiled to kernel-ir or further); registers, spills, the stack
 * and static shared memory from ptxas's report (compiled to ptx or cubin),
 * else they are -1.  WSF_ERR_USAGE when K stopped at the fusion IR.
 */
WsfStatus wsf_kernel_stats(const WsfKernel *k, WsfKernelStats *stats);

/*
 * What the measured choice (option tune) chose at K's first launch: "the
 * spec's schedule", or the hint it added ("split_k: 2"); NULL before it
 * chose, or when K does not tune.
 */
const char *wsf_kernel_tuned(const WsfKernel *k);

/* Argument order for launches: the inputs in spec order (one no op reads too), then the outputs. */
int wsf_kernel_num_args(const WsfKernel *k);
const char *wsf_kernel_arg_name(const WsfKernel *k, int i);
/* 1 if argument i is an output, 0 if an input, -1 if out of range. */
int wsf_kernel_arg_is_output(const WsfKernel *k, int i);
/* The input argument whose memory output argument i is written into, in place (the
 * spec's `alias`): a launch passes that input's pointer for both.  -1 for an output
 * with memory of its own, an input, or i out of range. */
int wsf_kernel_arg_alias(const WsfKernel *k, int i);

/* Element types, as in the spec. */
typedef enum WsfDtype {
	WSF_DTYPE_NONE = 0,
	WSF_DTYPE_F32,
	WSF_DTYPE_F16,
	WSF_DTYPE_BF16,
	WSF_DTYPE_FP8E4M3,
	WSF_DTYPE_FP8E5M2,
	WSF_DTYPE_INT8,
	WSF_DTYPE_UINT8,
	WSF_DTYPE_INT32,
	WSF_DTYPE_INT64,
	WSF_DTYPE_BOOL,   /* one byte, 0 or 1 */
	WSF_DTYPE_COUNT
} WsfDtype;

/* The dtype of argument i; its rank; and its extent along dimension d under the
 * size values the kernel was compiled with (the spec's defaults overridden by
 * the bindings at compile time; -1 when a size was unbound).  A launch binds
 * sizes from the tensors instead. */
WsfDtype wsf_kernel_arg_dtype(const WsfKernel *k, int i);
int wsf_kernel_arg_rank(const WsfKernel *k, int i);
int64_t wsf_kernel_arg_dim(const WsfKernel *k, int i, int d);
/* The size variable behind dimension d of argument i ("M"), or NULL when the
 * extent is a constant or i, d are out of range: what a binding needs to
 * derive output shapes from input shapes. */
const char *wsf_kernel_arg_dim_name(const WsfKernel *k, int i, int d);
/* 1 when a launch may pass argument i with rows wider than a row (strides whose
 * last is 1 and whose others step the rows by more than a row: a slice of the
 * last dim, x[:, :n]): every read or write of it is a tensor map of its rows; 0
 * when it must be contiguous; -1 when i is out of range or K has no launch yet. */
int wsf_kernel_arg_row_strided(const WsfKernel *k, int i);

/* A DLPack-style description of one device tensor (row-major if strides is NULL). */
typedef struct WsfTensor {
	void *data;            /* device pointer */
	WsfDtype dtype;
	int ndim;
	const int64_t *shape;   /* ndim extents, each 1..2^40; not NULL when ndim > 0 */
	const int64_t *strides; /* ndim strides in elements, or NULL for contiguous; the last 1, the rows
	                           (the dims but the last) one run of steps, wider than a row where
	                           wsf_kernel_arg_row_strided allows (docs/spec.md, Launching) */
} WsfTensor;

/*
 * Launches K on STREAM (a CUstream; NULL is the legacy default stream).  ARGS
 * holds wsf_kernel_num_args(K) tensors in argument order.  Size variables are
 * taken from the tensors' shapes, checked against each other and against the
 * alignment rules; a mismatch, an extent outside 1..2^40, a tensor of 2^63
 * elements or bytes or more, or one that TMA moves with more than 2^31 rows
 * or last-dim elements (docs/spec.md) is WSF_ERR_INPUT naming the tensor and
 * dim, a null ARGS or shape WSF_ERR_USAGE; all are checked before the
 * driver is touched.  The module is loaded into the current (or primary) context on
 * first use.  K keeps the TMA tensor maps of its last launch and reuses
 * each one whose tensor has the same address, shape and strides (a model's
 * step after step on the same buffers), and the cluster occupancy it asked
 * the driver once.  A kernel that takes stream-K (schedule: {stream_k:
 * true}, or by default for few tiles of a long K) also keeps a workspace
 * for each of the last 4 streams it was launched on (WsfKernelStats.workspace
 * bytes a CTA), made at the first launch there, and one spare; a fifth
 * stream takes the least recently launched one's, its launches ordered
 * after those queued with it (an event recorded after each, waited for
 * on the device).  A
 * stream being captured into a CUDA graph cannot make one: the first
 * stream captured without one takes the spare (the graph's from then on,
 * until K is deleted), so launch such a kernel once (on any stream) before
 * the capture; with neither, a launch under capture runs every tile whole
 * (slower, no workspace) where stream-K was the default, and is
 * WSF_ERR_USAGE where the schedule asked for it.  Diagnostics go to CTX.
 */
WsfStatus wsf_kernel_launch(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs,
                            void *stream);

/*
 * Per-tile completion signal (schedule: {signal: per_tile}).  The kernel
 * sets one 32-bit flag word an output tile to EPOCH once the tile is in
 * global memory: the thread that stored it waits for its TMA stores to
 * complete (cp.async.bulk.wait_group without .read), then writes the word
 * with st.release.gpu.  Tile t is signalled while tile t + 1's stores are
 * in flight, the last at the end.  The words are the caller's, indexed
 * (b * row_tiles + r) * col_tiles + c for the output tile at rows
 * [r * tile_rows, ...) and columns [c * tile_cols, ...) of batch b (a
 * batched matmul's; else b = 0), over the output's last two dims.
 *
 * A consumer (a kernel on another stream, or the host) polls a word with
 * acquire loads (ld.acquire.gpu) until it equals the epoch, then reads the
 * tile with ordinary loads; one that reads it through TMA adds
 * fence.proxy.async.global after the acquire.  Give each launch a new
 * nonzero epoch (a launch counter) and the words need no reset between
 * launches; set them to 0 once before the first.
 *
 * Residency: the matmul is persistent, one CTA an SM taking every
 * register, so a spinning consumer kernel that holds SMs keeps GEMM CTAs
 * from starting, and if those CTAs own the tiles it waits for, neither
 * finishes.  Launch the GEMM with max_ctas at most the SMs minus those the
 * consumer's CTAs can hold at once (or give the consumer SMs of its own
 * some other way); the GEMM's tiles are shared among its CTAs whatever
 * their number.
 *
 * With signal: {per_tile, consumer: [...]} the signal goes to a consumer
 * role inside the kernel instead, which computes the outputs named from
 * each stored tile: such a kernel sets no flags and launches as any other
 * (a flags buffer given to it is WSF_ERR_USAGE), and has no flag layout.
 */
typedef struct WsfLaunchOptions {
	void *stream;      /* a CUstream; NULL is the legacy default stream */
	uint32_t *flags;   /* signal: per_tile: device memory of WsfSignalLayout.flags words; else NULL */
	uint32_t epoch;    /* the value each flag becomes: nonzero, new for each launch on the same words */
	int max_ctas;      /* a persistent kernel starts at most this many CTAs; 0: as many as the GPU holds */
	const uint32_t *wait_flags;   /* inputs with wait: per_tile: device memory of WsfSignalLayout.wait_words
	                                 words; else NULL */
} WsfLaunchOptions;

/* As wsf_kernel_launch, with OPTS; a kernel that signals its tiles needs flags and an epoch. */
WsfStatus wsf_kernel_launch_ex(WsfContext *ctx, WsfKernel *k, const WsfTensor *args, int nargs,
                               const WsfLaunchOptions *opts);

/*
 * Where a launch with these tensors puts each tile's flag (see above).  The
 * tiles cover the kernel's view of each output, [batch, view_rows,
 * view_cols]: element (b, r, c) is element (b * view_rows + r) * view_cols
 * + c of the (contiguous) output.  A matmul's view is its output [M, N]
 * per batch; a pointwise kernel's is any 2-D view the launch chose of the
 * output's elements (all but the last dim folded into rows, or, when every
 * input is full or a scalar, another factorisation of the element count).
 */
typedef struct WsfSignalLayout {
	int64_t flags;                       /* words: batch x row_tiles x col_tiles */
	int tile_rows, tile_cols;            /* an output tile, of the view */
	int64_t row_tiles, col_tiles, batch;
	int64_t view_rows, view_cols;        /* the view */
	int waits;                           /* inputs with wait: per_tile */
	int64_t wait_words;                  /* the words wait_flags holds: input after input in spec order, an
	                                        epilogue input's flags words (the layout above), an operand A's
	                                        batch x row_tiles (a row tile's rows arrive together), B's
	                                        batch x col_tiles */
} WsfSignalLayout;

/*
 * Fills *OUT for launches of K on ARGS (the tensors a launch takes; their
 * shapes are checked as a launch checks them).  WSF_ERR_USAGE when K
 * neither signals its tiles to flags nor waits for an input's.
 *
 * Waiting for inputs (wait: per_tile on a matmul's full [M, N] epilogue
 * input, or on an operand): the input arrives while the kernel runs,
 * written by another kernel, a peer GPU (over NVLink) or the host, each
 * part published by a flag word set to the launch's epoch with a release
 * at system scope (a signalling kernel with signal: {per_tile, scope:
 * system} writes them).  An epilogue input's parts are the output's tiles
 * (the layout above): before a tile's epilogue reads it, one thread waits
 * for the tile's word with ld.acquire.sys, and the input is read through
 * L2 (ld.global.cg).  An operand's parts are row tiles of A (tile_rows
 * rows, every K) or column tiles of B: the thread that issues its TMA
 * loads waits before a tile's first, then fences the async proxy.  The
 * words of the waiting inputs follow one another in spec order
 * (wait_words).  The writer must be able to make progress while this
 * kernel waits: on one GPU, give each its own SMs (max_ctas).
 */
WsfStatus wsf_kernel_signal_layout(WsfContext *ctx, const WsfKernel *k, const WsfTensor *args, int nargs,
                                   WsfSignalLayout *out);


/* What wsf_kernel_run does: random inputs, launch, check, time. */
typedef struct WsfRunOptions {
	int check;          /* compare every output with the host reference */
	int bench;          /* time the kernel (median of iters after warm-up) */
	int iters;          /* timed launches for bench; 0 means 100 */
	uint64_t seed;      /* random inputs; 0 means a fixed default */
	double scale;       /* inputs are drawn from [-2, 2] (or [0.5, 2] for logs, roots and
	                       quotients) times this; 0 means 1.  Large scales test overflow. */
} WsfRunOptions;

#define WSF_MAX_REPORT_OUTPUTS 16

typedef struct WsfRunReport {
	int noutputs;
	double rel_err[WSF_MAX_REPORT_OUTPUTS];   /* ||out - ref|| / ||ref|| per output */
	double tolerance[WSF_MAX_REPORT_OUTPUTS]; /* the bound it was held to */
	int unwritten[WSF_MAX_REPORT_OUTPUTS];    /* 1 if some element was left unwritten (a note names the first) */
	int passed;         /* every output within tolerance and written */
	double ms;          /* median time of one launch, bench only */
	double bytes;       /* bytes the kernel must move: inputs read once, outputs written once */
	double gbps;        /* bytes / ms */
} WsfRunReport;

/*
 * Runs K once on fresh random inputs (sizes from the context's bindings and the
 * spec's defaults), with every output poisoned first; with opts->check, compares
 * against the host reference evaluator of the fusion IR; with opts->bench, times
 * it.  A kernel compiled with option "tune" makes its measured choice first, on
 * random arguments of the run's sizes, so that the run checks and times the
 * kernel chosen (wsf_kernel_tuned).  WSF_ERR_NO_GPU when no CUDA device is usable.
 * The report is filled as far as the run got.  A failed check is WSF_OK with
 * report->passed == 0; an output left unwritten in places (still poisoned, or,
 * accumulating, still its value before the launch where the result is more
 * than the tolerance times the results' RMS) also gets a note, at the line of
 * the op that makes it, with how many and the first one's index and values.
 */
WsfStatus wsf_kernel_run(WsfContext *ctx, WsfKernel *k, const WsfRunOptions *opts,
                         WsfRunReport *report);

#ifdef __cplusplus
}
#endif

#endif /* WSFUSE_H */
