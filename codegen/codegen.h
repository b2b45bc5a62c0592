/*
 * codegen.h: the internal header of codegen/ (kernel IR -> CUDA C++).
 *
 *   emit.c                the emitter: statements, expressions, names, the
 *                         kernel frame and shared memory, small emit_*
 *                         functions into a Buf; a compute, and a
 *                         statement of a kind a family owns (ir/stmts.h),
 *                         by that family's EmitFamily
 *   emit_ops.c            each op as a CUDA expression: the op tables (f32,
 *                         integer, bool) and the typed operands of pointwise
 *   emit_pointwise.c      the pointwise family's compute (a tile)
 *   emit_reduce_grid.c    its reductions over rows and of everything: the
 *                         running sums, where an item's sums meet
 *   emit_reduction.c      the row-reduction family's compute (a row, or its
 *                         chunks)
 *   emit_matmul.c         the matmul family's: its accumulators, the mma
 *                         and its groups, the row inputs' copies, the
 *                         epilogue compute over the fragments
 *   emit_matmul_ksum.c    where its partial sums over K meet (a K split's
 *                         reduction, stream-K's parts)
 *   launch_desc.c         the launch description (Launch): all the runtime
 *                         reads of a compiled kernel
 *   device.cuh            the device helpers every kernel gets (mbarriers,
 *                         TMA, bulk copies, fences, wgmma groups, conversions,
 *                         16-byte loads and stores)
 *   device_reduction.cuh  the row-reduction family's (L2 policies, block
 *                         reductions, online softmax, Welford)
 *   device_matmul.cuh     the matmul family's (wgmma descriptors)
 *   device_dtypes.cuh     fp8, integer and bool storage, conversions and
 *                         arithmetic, for the kernels that use them
 *
 * The .cuh files are embedded in the library as strings by tools/embed.sh;
 * a kernel's (device.cuh, device_dtypes.cuh where it needs it, then its
 * family's: codegen_device_header) are
 * inlined at its top, between the lines CODEGEN_DEVICE_BEGIN and _END, so
 * the CUDA compiles as it is, with NVRTC or nvcc.
 */
#ifndef WSFUSE_CODEGEN_H
#define WSFUSE_CODEGEN_H

#include "../ir/ir.h"

#define CODEGEN_DEVICE_HEADER_NAME "wsfuse_device.cuh"
/* The lines around the inlined header (tests/run_golden.sh leaves it out of the .cu goldens). */
#define CODEGEN_DEVICE_BEGIN "// ---- begin wsfuse_device.cuh: the device helpers, inlined ----"
#define CODEGEN_DEVICE_END "// ---- end wsfuse_device.cuh ----"

/*
 * The device helpers kernel K's CUDA holds: device.cuh, then its family's
 * helpers (EmitFamily.device).  Arena memory.
 */
const char *codegen_device_header(Comp *c, const Kernel *k);

/*
 * Emits the CUDA C++ of c->kernel into B and describes its launch in
 * *launch (arena memory).  0, or -1 after a diagnostic.
 */
int codegen_emit(Comp *c, Buf *b, Launch **launch);
/*
 * The launch description of kernel K (through every pass), entry point
 * ENTRY (NULL: not emitted): the only reader of K's fields for a launch.
 * Arena memory.
 */
Launch *launch_describe(Comp *c, const Kernel *k, const char *entry);

/* ---- emit.c: what the emitter and each family's compute share ---------- */

enum { VEC = 8 };   /* elements a thread takes at a time: 16-byte shared loads and global stores */

/* The name prefixes ("Names" in emit.c, which spells them in prefixes[]). */
enum {
	PFX_VALUE, PFX_ROW, PFX_ACC, PFX_CNT, PFX_RAW, PFX_IN, PFX_OUT,   /* + a tensor's base name */
	PFX_HERE, PFX_AHEAD, PFX_FETCH, PFX_RESULT, PFX_MEM, PFX_MAP, PFX_SUB,
	PFX_TILE, PFX_CHUNK, PFX_ROWBUF, PFX_STAGE, PFX_PART, PFX_EXCHANGE,   /* buffers (lowering's names): + a tensor's name */
	PFX_CUR,                                      /* a buffer's current copy: + the buffer's name */
	PFX_KERNEL,                                   /* the kernel: + the fusion's name */
	PFX_COUNT
};

typedef struct EmitFamily EmitFamily;

typedef struct Emit {
	Comp *c;
	Kernel *k;
	Fusion *f;
	const EmitFamily *fam;  /* the kernel's family: how a compute is written */
	Buf *b;
	int depth;
	int role;            /* inside a role's branch: the role (elect() is its first thread); else 0 */
	const char *compute_fn;    /* the compute's __device__ function, when it is emitted once; else NULL */
	const char *compute_args;  /* the arguments of its calls */
	struct EmitRow {     /* emit_reduction.c's, while it writes a row's compute */
		bool flip;           /* the block reductions start on the scratch array wsf_flip names */
		int steps;           /* kept in registers: element-loop steps a row takes; else 0 */
		const char *policy;  /* a direct kernel that reads the row in every pass: this pass's L2 policy */
		const char *chunk_col;  /* streamed in chunks: the C expression of the chunk's first column */
	} row;
	const char **value;  /* per fusion tensor: the C name of its current value */
	const char *elem_index;  /* in a compute: the element's row-major index in the domain (rand_like's); NULL: none */
	const char *col_index;   /* ... and its index along the last dim (one_hot's); NULL: none */
	const char *rand_base;   /* and the index of the first of a thread's 8 consecutive elements, whose numbers
	                            emit_rand_block drew before the element loop (wsf_rnd_NAME[v]); NULL: none */
	const char **base;   /* per fusion tensor: its base name, unique in the fusion (tensor_bases) */
	const char *file;    /* the spec's name, as comment_text writes it */
} Emit;

/*
 * One kernel family's emission (emit_FAMILY.c), reached through the table
 * in emit.c, not through tests of the family.  NULL hooks do nothing.
 */
struct EmitFamily {
	void (*helpers)(Emit *e);                  /* __device__ functions of this kernel, before it */
	void (*compute)(Emit *e, const Stmt *s);   /* the text of an ST_COMPUTE */
	void (*stmt)(Emit *e, const Stmt *s);      /* the text of a statement of a kind it owns (stmts.h) */
	int (*min_ctas)(const Kernel *k);          /* CTAs an SM the registers must allow (__launch_bounds__) */
	void (*frame)(Emit *e);                    /* declarations at the top of the kernel, after shared memory */
	/* what the compute's __device__ function takes besides the kernel's variables, params and buffers */
	void (*compute_params)(Emit *e, Buf *params, Buf *args);
	bool (*in_place)(const Kernel *k);         /* the computes are written in place, never as one function */
	const char *unit;                          /* what one compute covers, in comments: "tile", "row" */
	const char *device;                        /* its device helpers (device_FAMILY.cuh); NULL: none */
};

extern const EmitFamily emit_pointwise_family, emit_reduction_family, emit_matmul_family;
/* The texts of codegen/device.cuh, device_reduction.cuh and device_matmul.cuh (embedded at build time). */
extern const char codegen_device_cuh[], codegen_device_reduction_cuh[], codegen_device_matmul_cuh[];
/* codegen/device_dtypes.cuh: fp8, integer and bool helpers, for the kernels that use them. */
extern const char codegen_device_dtypes_cuh[];

/* emit_reduce_grid.c: a pointwise kernel's reductions over rows (PointwisePlan.reduce): the running sums
   and the lambda where an item's sums meet (the family's frame), ST_REDUCE's call of it, and what the
   compute function takes besides (the sums by reference, the group's end). */
void emit_reduce_frame(Emit *e);
void emit_reduce(Emit *e, const Stmt *s);
void emit_row_meet(Emit *e, const Stmt *s);   /* a row kernel's sums over the rows meet (RowPlan.outer) */
void emit_reduce_params(Emit *e, Buf *params, Buf *args);

/* emit_reduction.c: the row kernel's frame, which emit_topk.c writes in.  Is T a 2-byte full-row input kept
   as loaded (raw_NAME[step])?  The thread's index in its row and the threads of a row; register mode's
   unrolled loop over a thread's steps of 8 elements (GUARD: it ends at the row's end). */
bool emit_row_raw(Emit *e, int t);
const char *emit_row_tid(const Emit *e);
int emit_row_nthreads(const Emit *e);
void emit_open_steps(Emit *e, bool guard);
/* emit_topk.c: each topk of a row kernel, after its output pass. */
void emit_topk(Emit *e);

/* ---- the matmul family's files, between themselves ------------------- */

/* emit_matmul_ksum.c: a K split's reduction, stream-K's parts meeting (the matmul family's stmt). */
void emit_split_reduce(Emit *e, const Stmt *s);
void emit_stream_k(Emit *e, const Stmt *s);
/* emit_matmul.c: the name of accumulator ACC's registers. */
const char *emit_acc_name(Emit *e, int acc);
/* The registers a consumer thread holds of accumulator ACC: its fragment of each of its 64-row blocks. */
int emit_acc_regs(const Kernel *k, int acc);

/* ---- emit.c: what the emitter and each family's compute share ---------- */

/* "   // COMMENT" for S's comment, or "". */
const char *emit_comment(Emit *e, const Stmt *s);
/* One line of code at the current depth. */
void emit_line(Emit *e, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* The name of kind PFX (PFX_VALUE .. PFX_AHEAD) of fusion tensor T: v_x. */
const char *emit_tname(Emit *e, int pfx, int t);
/* The C type a dtype is stored as. */
const char *emit_type(Dtype dt);
/* Helper name suffix by storage dtype: f16 shares bf16's storage type. */
const char *emit_suffix(Dtype dt);
/* The expression as a string, for use inside a line. */
const char *emit_expr_str(Emit *e, const Expr *x);
/* The compute's pointer to the copy of buffer BUF it works on: cur_tile_x. */
const char *emit_curname(Emit *e, int buf);
/* "  // FILE:LINE" for position P, or "" without one. */
const char *emit_pos(Emit *e, Pos p);
/* Address of copy SLOT of buffer BUF. */
const char *emit_buf_at(Emit *e, int buf, const Expr *slot);
/* A number operand as the exact CUDA f32 literal. */
const char *emit_literal(Emit *e, double v);
/* The f32 expression of op O on operands A and B (C text); FORM, where not NULL, in place of the op's own. */
const char *emit_op_text(Emit *e, const Op *o, const char *a, const char *b, const char *form);
/* The same with a third operand C (where's b). */
const char *emit_op_text3(Emit *e, const Op *o, const char *a, const char *b, const char *c, const char *form);
/* Op O over registers of their values' types (IN: C text; NULL for a literal operand). */
const char *emit_op_typed(Emit *e, const Op *o, const char *const in[3]);
void emit_rand_block(Emit *e, const Op *o, const char *seed, const char *offset, const char *base);
/* The C type of a register holding a value of DT: float for every float dtype. */
const char *emit_reg_type(Dtype dt);
/* Does fusion F need device_dtypes.cuh (a dtype past bf16, an op added with them)? */
bool emit_needs_dtypes(const Fusion *f);
/* The input (or, with OUTPUT, output) parameter of fusion tensor T, or NULL. */
const KParam *emit_param_of(Emit *e, int t, bool output);
/* The tile buffer loaded with fusion tensor T; k->nbuf when there is none. */
int emit_buf_of(const Kernel *k, int t);
/* Reduction O's fold: its device_reduction.cuh struct (wsf_fold_sum for sum and mean, _max, _prod), its
   identity, and A and B folded, as C text. */
const char *emit_fold(const Op *o);
const char *emit_fold_identity(const Op *o);
const char *emit_fold_of(Emit *e, const Op *o, const char *a, const char *b);
/* A parameter: in_x or out_y (a pointer or a tensor map: its type says which), or a size. */
const char *emit_param_name(Emit *e, const KParam *p);

#endif
