/*
 * ir.h: the internal header of the ir/ layer, shared by every layer above it.
 *
 * Sections, one per file of ir/:
 *   arena.c     arena allocation, growable arrays, text buffers, interning
 *   diag.c      positions and diagnostics (FILE:LINE:COL: error: WHAT + caret)
 *   number.c    numbers in text with '.' as the decimal point, whatever the locale
 *   fusion.c    the fusion IR: tensors, ops, sizes; the op and dtype tables
 *   verify.c    the fusion IR verifier
 *   print.c     the fusion IR printer (grammar in docs/ir.md)
 *   kernel.c    the kernel IR (loop nests), kverify.c, kprint.c; statement kinds: stmts.h's rows
 *   dot.c       Graphviz pictures of the fusion DAG and of a kernel
 *
 * Memory: everything a compilation makes lives in one Arena owned by its Comp, released at once by
 * arena_free(); a failed allocation jumps to the Comp's out-of-memory handler: no caller checks for NULL.
 *
 * Ids: tensors, ops and sizes live in arrays, named by small integer ids; 0 is "none" in each, as in enums.
 */
#ifndef WSFUSE_IR_H
#define WSFUSE_IR_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/wsfuse.h"

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define countof(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- arena.c ---------------------------------------------------------- */

typedef struct Arena Arena;

/* A new arena; OOM, when non-NULL, is longjmp'ed to (value 1) when memory runs out. */
Arena *arena_new(jmp_buf *oom);
void arena_free(Arena *a);
/* Points the arena's out-of-memory jump at OOM (each API entry sets its own). */
void arena_set_oom(Arena *a, jmp_buf *oom);
void *arena_alloc(Arena *a, size_t size);  /* zeroed, 16-byte aligned */
void *arena_alloc_raw(Arena *a, size_t size);  /* the same, not zeroed: the caller writes every byte */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Grows array P of *CAP elements of SIZE bytes to hold at least NEED. */
void *arena_grow(Arena *a, void *p, int *cap, int need, size_t size);
/* Total bytes handed out (for tests). */
size_t arena_used(const Arena *a);

/* Appends one zeroed element to array ARR (count N, capacity CAP); yields its address. */
#define VEC_PUSH(a, arr, n, cap) \
	((n) >= (cap) ? (void)((arr) = arena_grow((a), (arr), &(cap), (n) + 1, sizeof *(arr))) : (void)0, \
	 &(arr)[(n)++])

/* Growable text in an arena. */
typedef struct Buf {
	Arena *arena;
	char *s;  /* always NUL-terminated once anything is written */
	size_t len, cap;
} Buf;

void buf_init(Buf *b, Arena *a);
void buf_puts(Buf *b, const char *s);
void buf_putn(Buf *b, const char *s, size_t n);
void buf_printf(Buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
/* Writes N spaces. */
void buf_indent(Buf *b, int n);
/* The text so far ("" if empty); stays valid until the next write. */
const char *buf_str(Buf *b);

/* Interned strings: equal names are equal pointers. */
typedef struct Strtab Strtab;
Strtab *strtab_new(Arena *a);
const char *intern(Strtab *t, const char *s, size_t n);
const char *intern_cstr(Strtab *t, const char *s);
/* Interns S; true if it was not there before (a set of names: "is this one still free?"). */
bool intern_new(Strtab *t, const char *s);

/* ---- diag.c ----------------------------------------------------------- */

/* A place in the spec; line and col count from 1; line 0 means unknown. */
typedef struct Pos { const char *file; int line, col; } Pos;

typedef struct Pass Pass;
typedef struct Fusion Fusion;
typedef struct Kernel Kernel;
typedef struct MatmulSchedule MatmulSchedule;   /* passes/matmul.h */
typedef struct RowSchedule RowSchedule;         /* ir/plan.h */

/* One bound size variable from the context (-D NAME=VALUE or wsf_set_size). */
typedef struct SizeBinding { const char *name; int64_t value; } SizeBinding;

/*
 * How far the row plan falls back after a direct row kernel spilled registers
 * (Comp.row_fallback; the compile driver reads ptxas's count, the spill retry
 * plans the row again, LowerFamily.spill_retry, and the kernel passes rerun).
 */
typedef enum RowFallback {
	ROW_FB_NONE,     /* the row forms the planner prefers (RowPlan.deep, reread) */
	ROW_FB_HELD,     /* 16 elements a thread held in registers at 48 warps an SM */
	ROW_FB_PIPELINE  /* the persistent pipeline, unless the schedule asks for one CTA a row */
} RowFallback;

/*
 * One compilation: its arena, its source text, its diagnostics and the IR it
 * builds.  Made and freed by compiler/compile.c; every pass takes one.
 */
typedef struct Comp {
	Arena *arena;
	Strtab *strs;
	jmp_buf oom;            /* arena allocation failure lands here */

	const char *file;       /* name used in diagnostics */
	const char *src;        /* spec text, NUL-terminated copy */
	size_t srclen;

	WsfDiagFn diag;
	void *diag_user;
	char *last_error;       /* arena copy of the last error message */
	int nerrors;
	WsfStatus status;       /* set by diag_internal and the runtime; 0: input errors */

	const SizeBinding *bind; /* context bindings, in the order given */
	int nbind;

	const char *dump_after; /* "all", a pass name or a list; NULL for none */
	WsfDumpFn dump;
	void *dump_user;

	int store_delay;        /* testing (option store-delay): a signalling kernel's stores sleep up to N ns */
	const char *layout, *grad_of;   /* options layout (inputs given permuted: compiler/layout.c) and grad-of (the
	                                   inputs --emit=grad differentiates for: grad.c); NULL: none, every float one */
	bool no_pdl;            /* option pdl=0: launch every kernel as an ordinary one */

	Fusion *fusion;         /* set by the front end */
	Kernel *kernel;         /* set by lowering */
	RowFallback row_fallback; /* what the row is planned under; row_spill_retry sets it after a spill */
} Comp;

/* Reports an error at P (P.line 0: no position); always returns -1. */
int diag_error(Comp *c, Pos p, const char *fmt, ...) PRINTF_LIKE(3, 4);
int diag_verror(Comp *c, Pos p, const char *fmt, va_list ap);
/* Reports a warning, or a note, the same way. */
void diag_warn(Comp *c, Pos p, const char *fmt, ...) PRINTF_LIKE(3, 4);
void diag_note(Comp *c, Pos p, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* An internal error: a broken invariant, named by pass and what broke. */
int diag_internal(Comp *c, const char *who, const char *fmt, ...) PRINTF_LIKE(3, 4);
/*
 * Bytes of the line break at S (before END) as libyaml reads one: CRLF 2, LF
 * or CR 1, NEL (U+0085) 2, LS or PS (U+2028, U+2029) 3; 0 if none.
 */
int diag_break_len(const char *s, const char *end);

/* ---- number.c: numbers in text, whatever the locale -------------------- */

/* Numbers with '.' as the decimal point whatever the locale (de_DE's ','), which it never changes. */
enum { NUM_MAX = 32 };  /* room for any number num_shortest* writes */
/* Reads all of S, a decimal number (-1.5e-3; no hex, inf or nan), into *V; false if S is not one. */
bool num_parse(const char *s, double *v);
/* snprintf of the one double V with FMT (one %g, %e or %f conversion), '.' the decimal point. */
int num_snprintf(char *out, size_t size, const char *fmt, double v) PRINTF_LIKE(3, 0);
/* The shortest %g text, 15 to 17 digits, that reads back as V. */
void num_shortest(char out[NUM_MAX], double v);
/* The shortest %g text, up to 9 digits, that a compiler reads back as the f32 F ("0.1", "1e-05"). */
void num_shortest_f32(char out[NUM_MAX], float f);

/* ---- fusion.c: the fusion IR ----------------------------------------- */

typedef enum Dtype {
	DT_NONE = WSF_DTYPE_NONE,
	DT_F32 = WSF_DTYPE_F32,
	DT_F16 = WSF_DTYPE_F16,
	DT_BF16 = WSF_DTYPE_BF16,
	DT_FP8E4M3 = WSF_DTYPE_FP8E4M3,
	DT_FP8E5M2 = WSF_DTYPE_FP8E5M2,
	DT_INT8 = WSF_DTYPE_INT8,
	DT_UINT8 = WSF_DTYPE_UINT8,
	DT_INT32 = WSF_DTYPE_INT32,
	DT_INT64 = WSF_DTYPE_INT64,
	DT_BOOL = WSF_DTYPE_BOOL,
	DT_COUNT
} Dtype;

/* torch's categories, in promotion order: a higher category wins (bool + int8 is int8, int8 + bf16 is bf16). */
typedef enum DtypeKind { DK_NONE = 0, DK_BOOL, DK_INT, DK_FLOAT } DtypeKind;

typedef struct DtypeInfo {
	const char *name;  /* spec spelling */
	const char *torch; /* torch's name, which the spec accepts too (float8_e4m3fn) */
	const char *ctype; /* CUDA storage type */
	int bytes;
	DtypeKind kind;
	int bits;          /* floats: mantissa bits with the implicit one (f32 24, bf16 8); ints: width */
} DtypeInfo;

extern const DtypeInfo dtype_info[DT_COUNT];
/* The dtype spelled S (a short name or torch's), or DT_NONE. */
Dtype dtype_from_name(const char *s);
/* The type of a pointwise result of A and B, by torch's promotion (DT_NONE stands for no operand). */
Dtype dtype_promote(Dtype a, Dtype b);
/* torch's promotion of tensor dtype T with a number: a number of a higher category than T gives
 * that category's default (int64 for an integer, f32 for a float), else T. */
Dtype dtype_promote_number(Dtype t, bool integral);
static inline bool dtype_is_float(Dtype d) { return dtype_info[d].kind == DK_FLOAT; }
static inline bool dtype_is_int(Dtype d) { return dtype_info[d].kind == DK_INT; }

typedef enum OpKind {
	OP_NONE,
#define OP(id, yaml, nmin, nmax, cls, attrs, ty, kinds) OP_##id,
#include "ops.h"
#undef OP
	OP_COUNT
} OpKind;

typedef enum OpClass {
	CLS_NONE,
	CLS_UNARY,
	CLS_BINARY,
	CLS_REDUCE,
	CLS_MATMUL,
	CLS_COMPOSITE,
	CLS_VIEW        /* an index map of its inputs (slice, cat, permute, ...); chunk and split read as slices */
} OpClass;

/* Attribute keys an op accepts besides out, op and in. */
enum {
	A_APPROX = 1 << 0,    /* approximate: none | tanh */
	A_TO = 1 << 1,        /* to: DTYPE */
	A_AXIS = 1 << 2,      /* axis: INT */
	A_KEEPDIM = 1 << 3,   /* keepdim: BOOL */
	A_TRANSPOSE = 1 << 4, /* transpose_a, transpose_b: BOOL */
	A_ACC = 1 << 5, A_EPS = 1 << 6,   /* acc: DTYPE; eps: FLOAT */
	A_DIM = 1 << 7, A_SLICE = 1 << 8, A_CHUNKS = 1 << 9, A_SIZES = 1 << 10,  /* dim; start, end, step; chunks; sizes */
	A_DIMS = 1 << 11, A_DIM01 = 1 << 12, A_SHAPE = 1 << 13, A_PAD = 1 << 14, /* dims; dim0, dim1; shape; pad, value */
	A_CORRECTION = 1 << 15, A_CLASSES = 1 << 16,  /* correction: NUMBER (var, std); num_classes: SIZE (one_hot) */
	A_CE = 1 << 17, A_K = 1 << 18   /* ignore_index, label_smoothing, reduction, lse_square_scale; topk's k */
};

/* How an op's result dtype follows from its operands' (torch's rules; passes/infer.c). */
typedef enum Typing {
	TY_ARITH = 1,  /* the operands' promoted type */
	TY_FLOAT,      /* the promoted type, f32 if that is not a float (div, exp, sin) */
	TY_CMP, TY_LOGIC,  /* bool: comparing in the promoted type; each operand tested against zero */
	TY_WHERE,      /* where(cond, a, b): cond bool, the result a's and b's promoted type */
	TY_CAST,       /* the op's `to` */
	TY_RAND,       /* rand_like(x, seed, offset): f32; seed and offset integer scalars */
	TY_VIEW,       /* the input's dtype (cat: its inputs' promoted dtype) */
	TY_INDEX       /* index_select, gather, the scatters: input 0's dtype (input 1 positions or the part) */
} Typing;

/* Dtype categories an op computes in (a mask of 1 << DtypeKind). */
enum { K_BOOL = 1 << DK_BOOL, K_INT = 1 << DK_INT, K_FLOAT = 1 << DK_FLOAT, K_ALL = K_BOOL | K_INT | K_FLOAT };

typedef struct OpInfo {
	const char *name;
	int min_in, max_in;
	OpClass cls;
	unsigned attrs;
	Typing typing;
	unsigned kinds;
} OpInfo;

extern const OpInfo op_info[OP_COUNT];
OpKind op_from_name(const char *s);

typedef enum Approx { APPROX_NONE = 0, APPROX_TANH } Approx;

#define MAX_RANK 8
#define MAX_IN 8   /* cat's inputs; other ops take at most 3 */
/* The longest fusion, tensor or size name, in bytes: names become identifiers in the CUDA. */
#define MAX_NAME 64
/* The largest extent a size may take (2^40 elements along one dim is absurd already). */
#define MAX_EXTENT ((int64_t)1 << 40)

/*
 * *R = A * B for extents, element counts and byte counts (never negative);
 * false when the product does not fit int64_t, and *R is then not to be
 * used.  Every product of sizes goes through it: each extent is at most
 * MAX_EXTENT, but a shape of several (a spec's, a launch's) need not fit.
 */
static inline bool
size_mul(int64_t a, int64_t b, int64_t *r)
{
#if defined(__GNUC__)
	return !__builtin_mul_overflow(a, b, r);
#else
	if (a < 0 || b < 0 || (b && a > INT64_MAX / b))
		return false;
	*r = a * b;
	return true;
#endif
}

/* One dimension: the size variable SYM, or the constant EXT when SYM is 0. */
typedef struct Dim { int sym; int64_t ext; } Dim;

/* A size variable.  VALUE is the default from `sizes:` or a binding, 0 if unbound. */
typedef struct Sym {
	const char *name;
	int64_t value;
	bool bound;      /* value came from a binding (-D or wsf_set_size) */
	bool fixed;      /* bound, and a view made a constant dim from it (infer): a launch must give VALUE */
	Pos pos;         /* where `sizes:` names it, or its first use */
} Sym;

typedef enum TensorKind {
	TK_NONE,
	TK_INPUT,   /* a kernel argument */
	TK_VALUE    /* defined by an op */
} TensorKind;

typedef struct Tensor {
	const char *name;   /* interned; expansion adds names with a '.' */
	TensorKind kind;
	Dtype dtype;        /* of an input: as declared; of a value: inferred */
	int rank;
	Dim dim[MAX_RANK];  /* outermost first */
	int def;            /* defining op, 0 for inputs */
	Pos pos;
	Pos shape_pos;      /* an input's shape list (line 0 for values) */
	Pos wait_pos;       /* an input with wait: per_tile (line 0: none): its tiles arrive while the kernel runs,
	                       each published by a flag word the kernel waits on before reading the tile; an
	                       output's: the kernel waits for a tile's word before it writes the tile */
	int wait_tile[2];   /* wait: {per_tile, tile: [R, C]}: its writer's tile, whose flag layout the words
	                       follow (0: the reading kernel's own tile) */
	Pos wait_tile_pos;
	bool unread;        /* an input no op reads (infer): still an argument, but no kernel parameter */
} Tensor;

/* An op input: tensor TENSOR, or the number LIT when TENSOR is 0. */
typedef struct Operand {
	int tensor;
	double lit;
	bool lit_int;       /* LIT was written as an integer (2, not 2.0): torch's int scalar */
	Pos pos;
} Operand;

typedef struct Op {
	OpKind kind;
	int out;            /* the tensor it defines */
	int nin;
	Operand in[MAX_IN];
	/* attributes; which ones mean anything depends on op_info[kind].attrs */
	int axis;           /* as written (may be negative) until infer normalizes it; a reduction's first */
	int naxes;          /* a reduction over dims axis .. axis + naxes - 1 (dim: [LIST]; infer sets it, 1 or more) */
	bool keepdim, detach, smallest; Approx approx; Dtype to;   /* detach: no adjoint flows through it (expand.c's
	                                                               maxes); smallest: topk's largest: false */
	bool transpose_a, transpose_b; Dtype acc;
	double eps, correction, z;   /* the norms'; var's and std's (torch's, default 1) and cross_entropy's label_smoothing;
	                                cross_entropy's lse_square_scale (z-loss) */
	/* views (CLS_VIEW; axis is their dim, 0 unless given): as written, infer checks them against the shapes */
	int64_t start, end, step;  /* slice: torch's [start:end:step] along axis (end INT64_MAX: to the end) */
	int part, parts;    /* a slice read from a chunk or split: its output PART of PARTS (0: a slice as written);
	                       topk's part 1: the indices */
	bool chunk;         /*   of a chunk, start and end follow from the extent (view_slice) */
	int dim0, dim1;     /* transpose */
	int ndims, dims[MAX_RANK];       /* permute; a reduction's dim: [LIST] as written */
	int nshape; Dim shape[MAX_RANK]; /* reshape, view, expand: a size, a constant, or -1; one_hot: [classes]; topk: [k] */
	int npad; int64_t pad[2 * MAX_RANK]; double value; /* pad: (before, after) from the last dim; the fill;
	                                                       cross_entropy's ignore_index */
	bool placed;        /* cat, pad: its inputs at its output's indices already (views.c), it picks by index; a placed
	                       cat's pad[j] is part j's end along its dim, or along the digit (i / digit[0]) % digit[1] */
	int64_t digit[2]; int reduction;   /* cross_entropy's reduction: 0 mean (torch's default), 1 none, 2 sum */
	Pos dim_pos, attr_pos;           /* dim's value, and the list or count infer checks (line 0: none) */
	Pos pos;            /* the op's list entry */
	const char *origin; /* ops made by a pass: the composite's output (expand.c), the op differentiated (grad.c) */
} Op;

static inline int op_naxes(const Op *o) { return o->naxes > 1 ? o->naxes : 1; }   /* a reduction's dims */

typedef struct Output {
	int tensor;
	Dtype dtype;        /* stored type; defaults to the tensor's dtype */
	Pos pos;
	bool consumer;      /* signal: {per_tile, consumer: [...]}: the consumer role's, from the stored tiles */
	bool accumulate;    /* accumulate: true: each tile added to the memory (TMA reduce-add), not stored */
	Pos accumulate_pos;
	int64_t part[2];    /* views.c, a split's outputs: the range [lo, hi) of Fusion.split_out it holds */
	int alias;          /* alias: INPUT: written into that input's memory, in place (0: its own) */
	Pos alias_pos;
} Output;

typedef enum Consumers { CONSUMERS_NONE = 0, CONSUMERS_COOPERATIVE, CONSUMERS_PINGPONG } Consumers;
typedef enum Signal { SIGNAL_NONE = 0, SIGNAL_PER_TILE } Signal;
/* How outputs leave: 16-byte stores from registers, or a staging buffer and a TMA store. */
typedef enum StoreKind { STORE_NONE = 0, STORE_VECTOR, STORE_TMA } StoreKind;

/* Schedule hints; 0 means "the scheduler decides" for every field.  compile.c's sched_own lists its Pos fields. */
typedef struct Schedule {
	int tile[3];
	int ntile;
	int stages;
	int warp_specialize;   /* 0 unset, 1 no, 2 yes */
	int persistent;        /* 0 unset, 1 no, 2 yes */
	int cluster[2];
	Consumers consumers;
	Signal signal;
	StoreKind store;
	int swap_ab;           /* 0 unset, 1 no, 2 yes: a matmul computes D^T = B A^T (docs/spec.md) */
	int split_k;           /* 0 unset, else the CTAs that share a matmul tile's K (1: no split) */
	int stream_k;          /* 0 unset, 1 no, 2 yes: a matmul's last partial wave split into runs of k-steps */
	Pos pos;
	Pos stages_pos, tile_pos, ws_pos, swap_pos, split_pos, sk_pos;
	Pos cluster_pos, consumers_pos, signal_pos, store_pos;   /* line 0: not given */
	Pos consumer_pos;      /* signal: {per_tile, consumer: ...}: where the consumer's outputs are named */
	bool system;           /* signal: {per_tile, scope: system}: flags released at system scope, for a
	                          reader on another GPU or the host (else gpu) */
	Pos scope_pos;
	bool consumer_flags;   /* signal: {per_tile, consumer: ..., flags: true}: the consumer role raises each
	                          tile's flag once it has written its outputs of the tile (a peer's buffer over
	                          NVLink, say); else a kernel with a consumer sets no flags */
} Schedule;

/* The kernel families; the scheduler picks one per fusion. */
typedef enum Family {
	FAM_NONE = 0,
	FAM_POINTWISE,
	FAM_REDUCTION,
	FAM_MATMUL
} Family;

struct Fusion {
	const char *name;
	Pos pos;
	Sym *sym;         int nsym, capsym;       /* [0] unused */
	Tensor *tensor;   int ntensor, captensor; /* [0] unused */
	Op *op;           int nop, capop;         /* [0] unused */
	Op *ref_op;       int nref_op;            /* the ops before views.c moved views down (the reference's) */
	int split_out, split_dim;   /* views.c: the outputs are parts of this value along the dim (0: none) */
	int *input;       int ninput, capinput;   /* tensor ids in spec order */
	Output *out;      int nout, capout;       /* in spec order */
	Schedule sched;
	bool expanded;    /* no composite ops left (passes/expand.c) */
	bool inferred;    /* every value has a dtype and shape (passes/infer.c) */
	Family family;    /* set by passes/schedule.c */
	const MatmulSchedule *mm;   /* the matmul family's groups and plan, set by schedule.c; else NULL */
	const RowSchedule *row;     /* the row-reduction family's plan (schedule_row.c); else NULL */
};

Fusion *fusion_new(Comp *c);
/* The dtype op O computes in: its operands' promoted dtype (a cast's: its input's; where's: a's and b's),
 * f32 for a float op of integers; DT_NONE while an operand is untyped. */
Dtype op_compute_dtype(const Fusion *f, const Op *o);
/* The size variable called NAME, or 0. */
int fusion_find_sym(const Fusion *f, const char *name);
int fusion_add_sym(Comp *c, Fusion *f, const char *name, Pos p);
int fusion_find_tensor(const Fusion *f, const char *name);   /* the tensor called NAME (interned), or 0 */
int fusion_add_tensor(Comp *c, Fusion *f, const char *name, TensorKind kind, Pos p);
int fusion_add_op(Comp *c, Fusion *f, OpKind kind, Pos p);   /* an op of KIND at P, nothing else filled */
Op *fusion_insert_op(Comp *c, Fusion *f, int at);   /* a zeroed op at AT, later ops (and defs) one up */
/* The extent of D under the current values, 0 when a size is unbound. */
int64_t dim_value(const Fusion *f, Dim d);
bool dim_equal(Dim a, Dim b);
bool dim_is_one(Dim d);
/* A view slice O over extent N: its first index and element count (torch's clamping); count 0: empty. */
void view_slice(const Op *o, int64_t n, int64_t *start, int64_t *count);
/* Number of elements of tensor T, 0 if a size is unbound, -1 if the count overflows int64_t. */
int64_t tensor_numel(const Fusion *f, const Tensor *t);
/* Index into f->out of the output storing tensor T, or -1; into f->input of input T, or -1. */
int fusion_output_of(const Fusion *f, int t);
int fusion_input_of(const Fusion *f, int t);
/* The tensor of kernel argument I: the inputs in spec order, then the outputs. */
int fusion_arg_tensor(const Fusion *f, int i);
/* The arguments with wait: per_tile (inputs, then outputs). */
int fusion_waits(const Fusion *f);
/* Output J's scatter written in place (index_copy or slice_scatter of its alias), or NULL. */
const Op *fusion_scatter(const Fusion *f, int j);
/* The value output J's kernel computes and stores: its scatter's source, else its tensor. */
int fusion_stored(const Fusion *f, int j);
bool fusion_unsqueeze(const Fusion *f, const Op *o);   /* a reshape of a computed value adding or dropping 1-dims */
bool fusion_has_op(const Fusion *f, OpKind kind);   /* does an op of F have KIND? */
bool topk_gather(const Fusion *f, int t);   /* is T a gather of an input's row at topk's indices? (fusion.c) */

/* ---- verify.c --------------------------------------------------------- */

/* Checks the invariants docs/ir.md lists; reports via diag_internal. 0 or -1. */
int fusion_verify(Comp *c, const Fusion *f, const char *after_pass);

/* ---- print.c ---------------------------------------------------------- */

void fusion_print(Buf *b, const Fusion *f);
void dim_print(Buf *b, const Fusion *f, Dim d);
void shape_print(Buf *b, const Fusion *f, const Tensor *t);
/* The attributes op O of F takes, each " name=value" (" axis=1 keepdim=true"). */
void op_print_attrs(Buf *b, const Fusion *f, const Op *o);

/* ---- kernel.c: the kernel IR ----------------------------------------- */

/*
 * A kernel is params, shared-memory buffers, mbarriers, variables and a statement tree.  Leaves are explicit
 * about asynchrony: a TMA load names the buffer and stage it writes and the mbarrier it completes on; a compute
 * the buffers it reads and writes; a TMA store the buffer it reads.  Passes reason from names, not positions.
 */

/* Index expressions, never negative (ex_bin's folding relies on it) but a view's offset (KParam.at: a pad's shift). */
typedef enum ExprKind {
	EX_NONE,
	EX_INT,      /* ival */
	EX_VAR,      /* kernel variable var (a loop index, a let or a size param) */
	EX_TID,      /* threadIdx.x */
	EX_CTA,      /* blockIdx.x */
	EX_NCTA,     /* gridDim.x */
	EX_ADD, EX_SUB, EX_MUL, EX_DIV, EX_MOD, EX_MIN, EX_MAX, EX_CEILDIV,
	EX_LT, EX_GE, EX_EQ, EX_AND, EX_XOR, EX_SHL,
	EX_ELECT,    /* true in one thread of the executing group */
	EX_WG,       /* the consumer warpgroup a thread is in, threadIdx.x / 128 */
	EX_RANK      /* the CTA's rank in its cluster (%cluster_ctarank; blockIdx.x % the cluster's CTAs) */
} ExprKind;

typedef struct Expr {
	ExprKind kind;
	int64_t ival;
	int var;
	bool u32;    /* EX_DIV, EX_MOD by a constant: the dividend is below 2^32 (ex_stage_slot): 32-bit division */
	struct Expr *a, *b;
} Expr;

/* A scalar (64-bit integer) variable of the kernel. */
typedef struct KVar {
	const char *name;
} KVar;

typedef enum ParamKind {
	PK_NONE,
	PK_TMAP,     /* a CUtensorMap of argument ARG, by value */
	PK_PTR,      /* the device pointer of argument ARG */
	PK_SIZE,     /* a runtime extent: ROWS or COLS of the 2-D view (var holds it) */
	PK_FLAGS,    /* signal: per_tile: the caller's 32-bit flag words, one an output tile */
	PK_WAIT,     /* inputs with wait: per_tile: the caller's flag words, for each such input (in spec order)
	                one a tile, laid out as PK_FLAGS; a tile of the input is read once its word is the epoch */
	PK_WORKSPACE /* stream-K (KSumSize.sk_slot), a column or full reduction (PointwisePlan.slot): the runtime's
	                workspace for the launch's stream, zeroed when made: a 32-bit flag for each of SK_MAX_CTAS
	                CTAs, then a slot of partial sums a CTA of the grid; the flags stay as they are, any grid */
} ParamKind;

/* How a tensor maps onto the kernel's 2-D [rows, cols] view of the domain. */
typedef enum View {
	VIEW_NONE,
	VIEW_FULL,   /* [rows, cols]: same shape as the domain */
	VIEW_ROW,    /* [1, cols]: broadcast over rows (a bias) */
	VIEW_COL,    /* [rows, 1]: broadcast over cols (a per-row scale) */
	VIEW_SCALAR, /* one element */
	VIEW_ROW_AT, /* a row of cols elements at KParam.at, which the domain row picks (broadcast along a
	                leading dim: [T, 1, D] over [T, NH, D]; passes/lower_bcast.c) */
	VIEW_COL_AT, /* one element a domain row, at KParam.at ([NH, 1] over [T, NH, D]) */
	VIEW_ELEM_AT, /* a view (passes/views.c) read element by element at KParam.at + col x KParam.step */
	VIEW_EXCHANGE, /* VIEW_ELEM_AT's across its memory's rows (a transpose): a tile through a BUF_EXCHANGE */
	VIEW_REDUCED, /* a column or full reduction's output, [groups, cols] or one element (PointwisePlan.reduce) */
	VIEW_SELECTED /* a row kernel's topk: k values or indices a row, [rows, k] */
} View;

enum { SK_MAX_CTAS = 1024, TOPK_MAX = 256 };   /* the CTAs a workspace has flags for (a grid's most); topk's k */

/* The runtime extent a PK_SIZE param holds: of the 2-D view [rows, cols], or a matmul's K. */
typedef enum SizeOf {
	SZ_NONE,
	SZ_ROWS,
	SZ_COLS,
	SZ_INNER,        /* a matmul's K, the dim its operands share */
	SZ_BATCH,        /* a batched matmul's batch: the product of the dims before M and N */
	SZ_DIM,          /* a size variable (dim[0]) a broadcast input's offset needs (KParam.at) */
	SZ_EPOCH,        /* signal: per_tile: the value a tile's flag is set to, the caller's, new each launch */
	SZ_SK_ON         /* 1 when the launch has a workspace (PK_WORKSPACE), 0 when it has none (a first launch
	                    under a CUDA-graph capture): stream-K's tiles run whole, a reduction's on one CTA each */
} SizeOf;

/* A view's box (a pad's) and index (index_select's, gather's): plan.h. */
typedef struct KBounds KBounds;
typedef struct KParam {
	ParamKind kind;
	const char *name;   /* a tensor's name (inputs and outputs), or a size's (rows, cols) */
	int arg;          /* kernel argument: inputs in spec order, then outputs */
	int tensor;       /* fusion tensor */
	Dtype dtype;      /* element type in memory */
	View view;
	int rank;         /* PK_TMAP, PK_PTR: the argument's full shape, outermost first (a matmul's */
	Dim dim[MAX_RANK];/* A [M, K] and B [N, K] or [K, N]); the view above is how the kernel reads it */
	int box[2];       /* PK_TMAP: box rows, box cols */
	bool readback;    /* PK_PTR of an output the epilogue stores through a tensor map: the signal's
	                     consumer role reads the stored tiles through it */
	bool prefetch;    /* PK_TMAP of an epilogue input read through its pointer: the map its tiles are
	                     prefetched into L2 with (ST_TMA_PREFETCH), box the output tile */
	bool preload;     /* PK_TMAP of an epilogue input TMA loads into an output's staging copies
	                     (KBuf.preload), box one copy: the epilogue's subtile */
	int var;          /* PK_SIZE: the variable that holds it */
	SizeOf size;      /* PK_SIZE: which extent it holds */
	Expr *at;         /* VIEW_ROW_AT, VIEW_COL_AT, VIEW_ELEM_AT: the element offset the domain row reads at, an
	                     expression of the variable "row" (the compute's domain row) and size params */
	Expr *step;       /* VIEW_ELEM_AT: elements from one column's to the next's (size params' products) */
	const KBounds *bounds;   /* a view read inside a box alone, or at an index's positions (plan.h) */
} KParam;

typedef enum BufKind {
	BUF_NONE,
	BUF_TILE,      /* an input tile written by TMA loads */
	BUF_STAGING,   /* an output tile written by compute, read by a TMA store */
	BUF_PARTIAL,   /* a K-split's partial accumulator: each consumer warpgroup's fragment (a row of
	                  the buffer, register-major), which rank 0 of the cluster reads (ST_SPLIT_REDUCE);
	                  a column or full reduction's: each thread's partial sums (ST_REDUCE) */
	BUF_ROW,       /* an epilogue's row input (param, a PK_PTR bias [N]) over the tile's columns: copied
	                  by the consumers, a column a thread, from global memory (ST_ROW_FETCH, at the
	                  tile's start) to a copy of it (ST_ROW_PUT, after the k loop), read by the
	                  epilogue's compute; two copies, alternating by tile */
	BUF_EXCHANGE   /* a transposed view's tile (param), [tile cols][tile rows + a word]: ST_EXCHANGE writes it
	                  along the view's memory, the compute reads it along the domain's rows */
} BufKind;

/*
 * A shared-memory buffer: STAGES copies of rows x cols elements.  Where a
 * copy lives is kbuf_copy's and kernel_buf_offset's alone: every offset and
 * stage size in the passes and codegen comes from them.
 */
typedef struct KBuf {
	const char *name;
	BufKind kind;
	Dtype dtype;
	int rows, cols;   /* one copy is rows x cols elements */
	int stages;       /* copies; 1 until circular buffering */
	int swizzle;      /* bytes of the TMA swizzle span (32, 64 or 128) its copies are written with; 0: none */
	int param;        /* the tensor-map param it is loaded from / stored to */
	int tensor;       /* fusion tensor */
	int full_bar;     /* BUF_TILE after circular buffering: its full mbarrier array */
	int ring;         /* BUF_STAGING: the most copies circular buffering may give it from the shared
	                     memory the stages leave (its slot the counter mod its copies); 0: as lowered */
	int preload;      /* BUF_STAGING: an epilogue input of the output's element size whose subtile a TMA
	                     load puts in each copy before the compute that writes the copy reads it there,
	                     each thread its own elements (a residual, as CUTLASS's epilogue loads C into the
	                     smem D reuses): lowering's candidate, its PK_PTR param; from circular buffering on
	                     the PK_TMAP param the loads read (KParam.preload), or 0: none */
	int preload_bar;  /* with preload, after circular buffering: the mbarriers the loads complete on, one a
	                     copy (warp_specialize.c's issue_preloads issues the loads, sync's preload_waits
	                     their waits) */
} KBuf;

/* A register accumulator: the f32 tile an mma chain writes and an epilogue compute reads.  Each consumer
 * warpgroup holds its own part of it in registers (the wgmma fragment); the IR names the whole tile. */
typedef struct KAcc {
	const char *name;
	Dtype dtype;      /* the accumulation type (f32) */
	int rows, cols;   /* the output tile it holds */
	int tensor;       /* fusion tensor: the matmul's output */
	int alias;        /* another accumulator whose registers it is (a later mainloop's), or 0 */
	int col;          /* with ALIAS: its first column there (matmuls side by side in one mma) */
} KAcc;

/* A thread role of a warp-specialized kernel: threads [first, first + threads) run the role's branch of
 * ST_ROLES.  A role's CTA-wide syncs are named barriers of its own id and thread count (ids from 1; 0: the
 * role needs none); REGS is the setmaxnreg target (0: the role leaves it). */
typedef enum RoleKind {
	ROLE_NONE,
	ROLE_PRODUCER,     /* issues the TMA loads of every pipeline */
	ROLE_CONSUMER,     /* computes: mma, epilogue, stores */
	ROLE_SIGNAL,       /* takes finished tiles (per-tile completion signal): the consumer role */
	ROLE_GROUP         /* a warpgroup whose warps take the roles inside it (PARENT): it holds their
	                      setmaxnreg, which a warpgroup runs as one */
} RoleKind;

typedef struct KRole {
	RoleKind kind;
	int first, threads;
	int regs;
	int bar_id;
	int parent;        /* the ROLE_GROUP whose threads these are, or 0 */
	/*
	 * The consumer order.  A consumer role: GROUPS warpgroups that each own
	 * a tile, group g taking the CTA's tiles g, g + groups, ... (the tile
	 * stride), each with its own elected thread and named barrier bar_id + g
	 * (ping-pong: 2); their k loops take turns, ordered by named barriers
	 * turn_bar + g.  1: all its threads share every tile (cooperative), and
	 * turn_bar is 0.  Other roles: 1.
	 */
	int groups;
	int turn_bar;
} KRole;

/* An array of COUNT mbarriers, each expecting ARRIVALS arrivals per phase. */
typedef struct KBar {
	const char *name;
	int count;
	int arrivals;
	bool cluster;      /* a cluster's stage-release barrier: each of its arrivals is one consumer warpgroup of
	                      one CTA of the cluster, which arrives on every CTA's copy (MatmulPlan.cluster) */
} KBar;

/* The statement kinds: ST_ID for each row of stmts.h, whose fields are its member of Stmt's union. */
typedef enum StmtKind {
	ST_NONE,
#define ST(id, ...) ST_##id,
#include "stmts.h"
#undef ST
	ST_COUNT
} StmtKind;

extern const char *const stmt_name[ST_COUNT];   /* stmts.h's names */
extern const Family stmt_owner[ST_COUNT];       /* the family whose emitter writes a kind; FAM_NONE: generic */

typedef enum LoopKind {
	LOOP_NONE,
	LOOP_SERIAL,       /* an ordinary serial loop */
	LOOP_TILE,         /* the persistent loop over this CTA's tiles */
	LOOP_CHUNK         /* the pieces of one stage: its loads fill one copy, not successive ones */
} LoopKind;

/* Which copy of a circular-buffered loop a loop is. */
typedef enum CbPart {
	CB_NONE,
	CB_PROLOGUE,       /* loads only, the first P iterations' data */
	CB_MAIN,           /* loads for i+P, compute for i */
	CB_EPILOGUE,       /* compute for the last P iterations */
	CB_PRODUCER,       /* warp-specialized load loop */
	CB_CONSUMER        /* warp-specialized compute loop */
} CbPart;

/*
 * One pipeline of a circular-buffered nest (passes/circular_buffer.c).  A nest may hold several (a
 * warp-specialized matmul: the k-loop operands on one, a per-tile epilogue input on another), each with its
 * own stages, barriers and stage counter.  The buffered loop carries the pipeline whose loads it issues
 * directly (or, with none, the one of the loop inside it that does); another pipeline is INNER: its info
 * hangs on the inner loop whose iterations fill its stages.
 */
typedef struct CbInfo {
	int stages;        /* S */
	int prefetch;      /* P, 0 <= P < S */
	int full_bar;      /* RAW: TMA complete_tx -> consumers */
	int empty_bar;     /* WAR: consumers -> producer; 0 when a CTA barrier releases */
	int stage_bytes;   /* bytes every stage receives */
	CbPart part;
	bool warp_specialized;
	bool inner;        /* stepped by a loop inside the buffered one */
} CbInfo;

/* A read or write of a buffer copy (BUF, SLOT) or of an accumulator (ACC; BUF 0), for the sync pass. */
typedef struct Access {
	int buf;
	Expr *slot;
	int acc;
} Access;

/* The shape of one ST_MMA: the CTA tile M x N, a k-tile of K, and how each operand lies in shared memory
 * (K-major: K contiguous, as TMA loads A [M, K] and B [N, K] with 128-byte swizzle; else MN-major). */
typedef struct MmaShape {
	int m, n, k;
	bool a_kmajor, b_kmajor;
} MmaShape;

/*
 * The part of a row reduction's work an ST_COMPUTE does.  A row held whole
 * (in a stage or in registers) is one ROW_WHOLE compute; a row streamed in
 * chunks (RowPlan.chunk) is ROW_BEGIN (per-row values, accumulators),
 * then for each pass a ROW_CHUNK per chunk (accumulate, or in the last pass
 * store) and a ROW_PASS_END (the pass's block reductions), then ROW_END
 * (per-row outputs).
 */
typedef enum RowPhase {
	ROW_WHOLE,
	ROW_BEGIN,
	ROW_CHUNK,
	ROW_PASS_END,
	ROW_END
} RowPhase;

/* A statement: a header every kind has, then its kind's member of the union (named for what it holds; kinds
 * that hold the same fields share one).  Expressions NULL where a comment says so; st_new zeroes all. */
typedef struct Stmt Stmt;
struct Stmt {
	StmtKind kind;
	Pos pos;              /* spec position it came from, if any */
	const char *comment;  /* shown in printed IR and CUDA */
	Stmt **body;  int nbody, capbody;   /* ST_BLOCK, ST_LOOP, ST_IF, ST_ROLES (one ST_ROLE a role, in role-table
	                                       order), ST_ROLE */
	/* the buffer copies and accumulators it reads and writes, as sync.c and dot.c see them: an ST_COMPUTE's
	   (writes: staging buffers; none: vector stores to global), an ST_MMA's (writes[0] += reads[0] x reads[1]),
	   and the accumulator reads[0] whose partial sums an ST_SPLIT_REDUCE, ST_SK_STORE or ST_SK_REDUCE meets */
	Access *reads;  int nreads, capreads;
	Access *writes; int nwrites, capwrites;
	union {
		struct StLoop {       /* ST_LOOP: for var in [lo, hi) step: body */
			int var;
			Expr *lo, *hi;
			Expr *step;   /* NULL: 1 (a ping-pong consumer walks every other tile) */
			LoopKind kind;
			CbInfo *cb;
			/*
			 * In a circular-buffered nest: the linear stage counter at this loop's
			 * body.  The buffered loop's own is its variable; an inner loop that
			 * issues loads advances it (lin = outer_lin * trips + var), so stage and
			 * parity run on across the whole nest.  NULL for loops that do not.
			 */
			Expr *lin;
		} loop;
		struct { Expr *cond; Stmt *orelse; } branch;   /* ST_IF: if cond: body else orelse */
		struct { int id; } role;                       /* ST_ROLE: the statements role ID runs */
		struct { int var; Expr *value; } let;          /* ST_LET: var = value */
		/*
		 * ST_TMA_LOAD: buf[slot] + off <- param at (row, col), batch if set;
		 * completes on bar[barslot].  From a PK_TMAP param: the copy's box,
		 * out-of-bounds parts zero-filled (into a staging copy: its preload,
		 * KBuf.preload); from a PK_PTR param: a 1-D bulk copy of the row
		 * segment [col, min(col + copy cols, cols)).  mcast: a multicast's
		 * CTA mask (bit r: rank r), the box written at the same place (and
		 * completed on the same barrier) in each CTA of the cluster it names;
		 * an expression of the rank in a 2-D cluster; NULL: this CTA alone.
		 * ST_TMA_STORE: param at (row, col) <- buf[slot] + off; add: added to
		 * what global memory holds there (cp.reduce.async.bulk.tensor .add).
		 * ST_TMA_PREFETCH: param's (a PK_TMAP) box at (row, col) into L2 when
		 * cond holds (NULL: always): a hint, no buffer, no barrier.
		 * ST_EXCHANGE: buf (BUF_EXCHANGE) <- the tile (row, col) of param's
		 * view, by the compute's threads; a barrier before the compute reads it.
		 */
		struct StTma {
			int param, buf;
			Expr *slot;
			Expr *off;     /* element offset into the buffer copy (NULL: 0) */
			Expr *row, *col;
			Expr *batch;   /* the batch coordinate of a 3-D map [batch, rows, cols] (NULL: 2-D) */
			Expr *mcast;
			int bar;
			Expr *barslot;
			Expr *cond;
			bool add;
		} tma;
		/*
		 * ST_MBAR_INIT: all of bar[], once, by one thread; ST_MBAR_ARRIVE:
		 * bar[barslot]; ST_MBAR_WAIT: bar[barslot] phase parity;
		 * ST_EXPECT_TX: mbarrier.arrive.expect_tx bar[barslot], bytes plus
		 * more (a runtime count) if set, the fill of stage counter lin (its
		 * slot is lin % S).
		 */
		struct {
			int bar;
			Expr *barslot;
			Expr *parity;
			int64_t bytes;
			Expr *more;
			Expr *lin;
		} mbar;
		struct {              /* ST_BULK_WAIT: cp.async.bulk.wait_group[.read] pending; ST_MMA_WAIT: wgmma.wait_group */
			int64_t pending;   /* at most this many groups still pending */
			bool read;         /* BULK_WAIT: .read, the reads of the source done */
		} group;
		struct {              /* ST_SYNC: id 0 is __syncthreads, else bar.sync id, threads */
			int64_t id;
			Expr *id_expr;     /* the id when it is an expression, a warpgroup's own */
			int threads;       /* a role's are in its KRole */
			bool arrive_only;  /* bar.arrive: the signal alone */
		} sync;
		struct { int64_t regs; bool inc; } maxnreg;   /* ST_SETMAXNREG: setmaxnreg.inc (else .dec) regs */
		/*
		 * ST_COMPUTE: the fusion's ops over one tile (pointwise) or row
		 * (reduction) at (row, col); an epilogue reads accumulators.
		 */
		struct {
			Expr *row, *col;
			Expr *batch;       /* a batched matmul's epilogue: its batch (NULL: no batch) */
			RowPhase phase;    /* a row streamed in chunks: which part of its work; ROW_WHOLE otherwise */
			Expr *pass;        /* ROW_CHUNK, ROW_PASS_END: the pass over the row (0-based); a matmul's
			                      epilogue: which subtile of the accumulator it computes (and step: the
			                      subtiles from one this CTA computes to its next, NULL: 1) */
			Expr *step;
			bool releases;     /* every read of its stages comes before a CTA barrier inside it, which so
			                      releases them */
		} compute;
		struct {              /* ST_MMA: one asynchronous wgmma chain over a k-tile (reads, writes) */
			MmaShape *shape;
			Expr *zero_if;     /* zero-initialises the accumulator first when it holds (NULL: never) */
		} mma;
		/* ST_GRID_DEP: griddepcontrol.wait (the grids before this one in the stream have completed, their
		   writes visible), or with launch griddepcontrol.launch_dependents (the next grid may launch) */
		struct { bool launch; } grid_dep;
		/*
		 * ST_FLAG_WAIT: until param (PK_WAIT)[word] is the epoch, acquire at
		 * system scope: the tile of an input with wait: per_tile has been
		 * written (by another kernel, GPU or the host); only when cond holds
		 * (NULL: always).  Fenced (fence.proxy.async.global) for the TMA
		 * loads or stores after it when producer or output.
		 */
		struct {
			int param;
			Expr *word;
			Expr *cond;
			bool producer;     /* the producer's, before TMA loads of an operand that waits */
			bool output;       /* the consumers' wait for an output's tile, before its TMA stores */
		} flag_wait;
		/*
		 * ST_SPLIT_REDUCE: a K-split (KSumSize.splits): the partial sums in
		 * reads[0].acc of the cluster's ranks 1 .. ranks - 1 added into rank
		 * 0's (or, split_scatter, into each subtile's owner) through buf
		 * (BUF_PARTIAL), on bar[wg] and bar + 1 [wg] at phase parity.
		 * docs/ir.md, "K split over a cluster".
		 */
		struct {
			int buf, bar;
			Expr *parity;
			Expr *ranks;       /* the ranks with k-steps */
		} split;
		/*
		 * ST_SK_STORE: stream-K, when cond holds: a part's partial sum
		 * (reads[0].acc; sk_scatter: of the subtiles other parts own) to its
		 * slot of param (PK_WORKSPACE), then its flag released (gpu scope).
		 * ST_SK_REDUCE: the other parts' sums added to reads[0].acc (the
		 * tile's owner; with sk_scatter, each part its own subtiles) in
		 * order, each flag acquired.  docs/ir.md, "Stream-K".
		 */
		struct {
			int param;
			Expr *cond;
			Expr *part;        /* sk_scatter: this part's index among the tile's parts */
			Expr *parts;       /* sk_scatter: the tile's parts; an owner's reduction: the CTAs it adds */
		} sk;
		/*
		 * ST_ROW_FETCH: columns [col, col + buf's cols) of row input param
		 * into a register a consumer thread (0 past the row's end), ahead of
		 * the k loop that hides the load.  ST_ROW_PUT: those registers into
		 * buf[slot], every consumer thread (sync.c adds the barrier).
		 */
		struct {
			int param, buf;
			Expr *col;
			Expr *slot;
		} row_copy;
		/*
		 * ST_SIGNAL: the output tile is in global memory: param
		 * (PK_FLAGS)[tile] = the epoch, with release semantics at gpu scope;
		 * or, for the kernel's consumer role (no param), an arrive on
		 * bar[barslot] (release at CTA scope), once taken[barslot] says the
		 * role has read the slot's tile before.
		 */
		struct {
			int param;
			Expr *tile;
			int bar;
			Expr *barslot;
			int taken;         /* the consumer role's: its release of bar[barslot]'s tile before, which
			                      the signal waits for (sync.c, expand_signal) */
			bool before;       /* it is the tile of the loop iteration before (this iteration's stores may
			                      still be in flight); else every tile stored so far */
		} signal;
	} u;
};

#include "plan.h"   /* the families' plans a Kernel holds: RowPlan, MatmulPlan (and KSum), PointwisePlan */

/*
 * A kernel: what every family has, and its family's plan (the union, by
 * Kernel.family: a row reduction's RowPlan, a matmul's MatmulPlan, a
 * pointwise kernel's PointwisePlan).  Passes outside the family read the
 * plan through kernel_row, kernel_mm and kernel_pw.
 */
struct Kernel {
	const char *name;
	Fusion *fusion;
	Family family;           /* the fusion's (kernel_new copies it): whose rules lower and emit it, and
	                            which plan the union holds */
	union {
		RowPlan row;         /* FAM_REDUCTION's plan */
		MatmulPlan mm;       /* FAM_MATMUL's */
		PointwisePlan pw;    /* FAM_POINTWISE's */
	};
	int domain;              /* the fusion tensor whose shape the 2-D view is made from */
	KParam *param;  int nparam, capparam;   /* [0] unused */
	KBuf *buf;      int nbuf, capbuf;       /* [0] unused */
	KBar *bar;      int nbar, capbar;       /* [0] unused */
	KVar *var;      int nvar, capvar;       /* [0] unused */
	KAcc *acc;      int nacc, capacc;       /* [0] unused */
	KRole *role;    int nrole, caprole;     /* [0] unused; none unless warp-specialized */
	CbInfo **pipe;  int npipe, cappipe;     /* every pipeline circular_buffer made, in order */
	Stmt *body;
	/* launch shape */
	int threads;             /* per CTA */
	int consumer_threads;    /* threads that compute */
	int tile_rows, tile_cols;
	bool warp_specialize;    /* chosen by the schedule */
	int producer_regs;       /* warp-specialized: setmaxnreg targets of the producer and the consumer */
	int consumer_regs;       /* roles (0: leave them; both roles must be whole warpgroups) */
	bool persistent;         /* a grid of SMs x resident CTAs loops over tiles; else one CTA a tile */
	bool tma_store;          /* outputs leave through staging buffers and TMA stores */
	bool signal;             /* signal: per_tile: each output tile's flag is set once its stores have
	                            landed (ST_SIGNAL), flags row-major over [batch, row tiles, col tiles] */
	bool pdl;                /* launched as a programmatic dependent (ST_GRID_DEP): it may start while the
	                            grid before it in the stream finishes, and waits for it before touching
	                            global memory */
	Stmt *tile_consumer;     /* signal: {per_tile, consumer: ...}: the consumer role's loop over the CTA's
	                            tiles (each waited for, its outputs computed, released), which lowering
	                            makes and warp_specialize places in the role; NULL: none */
	int stages_hint;         /* schedule: stages, 0 if absent */
	Pos stages_pos;
	Pos tile_pos;            /* schedule: where the tile hint is (line 0: none) */
	int smem_budget;         /* bytes of dynamic shared memory the passes may use */
	int smem_target;         /* bytes a CTA should use by default (0: the budget) */
	int stages_default;      /* stages without a hint (0: as many as smem_target allows) */
	int ntile_var;           /* the tile count: a let of the tiles, or rows_var when a tile is a row */
	int niter_var, rows_var, cols_var;
};

/* The plan of no matmul: no cluster, split, swap or ping-pong (cluster {1, 1}, 1 split, 1 row block). */
extern const MatmulPlan matmul_none;
/* The kernel's row-reduction, matmul and pointwise plans; another family's: all zero (matmul_none). */
const RowPlan *kernel_row(const Kernel *k); const MatmulPlan *kernel_mm(const Kernel *k);
const PointwisePlan *kernel_pw(const Kernel *k);
/* The bytes of a CTA's slot in the workspace (PK_WORKSPACE): stream-K's, a reduction over rows'; 0: none. */
int kernel_work_slot(const Kernel *k);
/* Consumer groups that each own a tile: the consumer role's KRole.groups; before warp_specialize makes the
 * roles, what it will give it (2 for a ping-pong matmul, else 1). */
int kernel_consumer_groups(const Kernel *k);

Kernel *kernel_new(Comp *c, Fusion *f);
int kernel_add_var(Comp *c, Kernel *k, const char *name);
int kernel_add_param(Comp *c, Kernel *k, ParamKind kind, const char *name);
/* A tensor map of pointer param PTR's argument (its copy, a PK_TMAP), box ROWS x COLS: its index. */
int kernel_add_map(Comp *c, Kernel *k, int ptr, int rows, int cols);
/* The bytes of a kernel's parameters CUDA takes (12.1 and later, sm_70 and later), and those params
 * 1 .. N - 1 take as CUDA lays them out: a tensor map 128 bytes at a multiple of 64, anything else 8. */
enum { KERNEL_PARAM_MAX = 32764 };
int64_t kernel_param_bytes(const Kernel *k, int n);
int kernel_add_buf(Comp *c, Kernel *k, const char *name, BufKind kind, Dtype dt, int rows, int cols);
int kernel_add_bar(Comp *c, Kernel *k, const char *name, int count, int arrivals);
int kernel_add_acc(Comp *c, Kernel *k, const char *name, Dtype dt, int rows, int cols);
/* A role of threads [FIRST, FIRST + THREADS) in GROUPS groups that each own a tile (KRole.groups; 1 but for
 * a consumer role); a consumer role gets the next named-barrier ids, one a group. */
int kernel_add_role(Comp *c, Kernel *k, RoleKind kind, int first, int threads, int groups);
/* CTAs a cluster: the tile's (cluster[]) times the K-split's; 1 when the kernel launches no clusters. */
int kernel_cluster_ctas(const Kernel *k);
/* CTAs a cluster that share operands: a matmul's cluster[0] x cluster[1]; 1 without. */
int kernel_share_ctas(const Kernel *k);

/*
 * Where the copies of a buffer go.  TMA writes and reads shared memory at
 * 128-byte aligned addresses (CUDA_ERROR_MISALIGNED_ADDRESS otherwise), and
 * a swizzled copy at 1024: the swizzle is computed from address bits and
 * its pattern repeats every 1024 bytes.  So each copy starts ALIGN-aligned
 * and the next one STRIDE bytes later: its BYTES rounded up to ALIGN.
 */
typedef struct CopyLayout {
	int64_t bytes;    /* rows x cols elements */
	int64_t stride;   /* bytes from one copy to the next: BYTES rounded up to ALIGN */
	int align;        /* 128, or 1024 when swizzled */
} CopyLayout;

CopyLayout kbuf_copy(const KBuf *b);
/*
 * Byte offset in dynamic shared memory of buffer BUF's first copy (copy S
 * is S x stride later); BUF k->nbuf: where the mbarriers start.  Buffers
 * are laid out in declaration order, each at its copies' alignment.
 */
int64_t kernel_buf_offset(const Kernel *k, int buf);
/* Bytes of dynamic shared memory all buffers and barriers take. */
int64_t kernel_smem_bytes(const Kernel *k);
/*
 * Does a load in S write buffer BUF from param P (BUF 0: any buffer)?  A
 * buffer is loaded from its own param, and from others' when independent
 * mainloops share its stages.
 */
bool kernel_loads_from(const Kernel *k, const Stmt *s, int buf, int p);

Expr *ex_int(Comp *c, int64_t v);
Expr *ex_var(Comp *c, int var);
Expr *ex_leaf(Comp *c, ExprKind kind);
Expr *ex_bin(Comp *c, ExprKind kind, Expr *a, Expr *b);
/* A copy of E with variable VAR replaced by WITH (WITH itself is shared). */
Expr *ex_subst(Comp *c, const Expr *e, int var, Expr *with);
bool ex_uses_var(const Expr *e, int var);
/* E with every variable a let in BLOCK's body sets replaced by its value (later lets use only earlier ones). */
Expr *ex_inline_lets(Comp *c, const Stmt *block, Expr *e);
/* Structurally equal (so equal in value)?  Is E the integer V? */
bool ex_equal(const Expr *a, const Expr *b);
bool ex_is_int(const Expr *e, int64_t v);
/* A stage counter LIN's slot (LIN + OFF) % STAGES and phase (LIN / STAGES) & 1 (a matmul's in 32 bits) */
Expr *ex_stage_slot(Comp *c, const Kernel *k, Expr *lin, int64_t off, int stages);
Expr *ex_stage_parity(Comp *c, const Kernel *k, Expr *lin, int stages);

Stmt *st_new(Comp *c, StmtKind kind);
Stmt *st_block(Comp *c);
void st_append(Comp *c, Stmt *block, Stmt *s);
/* Inserts S at index I of BLOCK's body. */
void st_insert(Comp *c, Stmt *block, int i, Stmt *s);
Stmt *st_loop(Comp *c, int var, Expr *lo, Expr *hi, LoopKind kind);
Stmt *st_if(Comp *c, Expr *cond);
/* An ST_IF's else branch (NULL: none, or S is no if): what a walk of the tree visits after its body. */
Stmt *st_else(const Stmt *s);
/* Pointers to the expression fields S's kind has, into X; their number. */
enum { ST_MAX_EXPRS = 8 };
int st_exprs(Stmt *s, Expr **x[ST_MAX_EXPRS]);
/* A deep copy with variable VAR replaced by WITH everywhere (VAR 0: plain copy). */
Stmt *st_clone(Comp *c, const Stmt *s, int var, Expr *with);
/* The pipeline whose full barrier is BAR, or NULL. */
CbInfo *kernel_pipe_of(const Kernel *k, int bar);
/* The first statement of KIND in S (S itself, then its body and else branch, depth first), or NULL. */
Stmt *st_first(const Stmt *s, StmtKind kind);
/* Does S (or anything in it) read / write buffer BUF? */
bool st_reads_buf(const Stmt *s, int buf);
bool st_writes_buf(const Stmt *s, int buf);
/* A TMA load or store on a pointer (a 1-D bulk copy): its byte count, a runtime expression; else NULL. */
Expr *kir_bulk_bytes(Comp *c, const Kernel *k, const Stmt *copy);
/*
 * The pass over a row in which each tensor of row-reduction fusion F is
 * known (LEVEL[t], ntensor entries): the number of reductions on its
 * longest path from the inputs.  CHUNKED (RowPlan.chunk): a reduction
 * that can share the pass of an earlier one joins it: sum(exp(a - max(a)))
 * (online softmax) and mean((a - mean(a))^2) (a variance by Welford and
 * Chan); ONLINE[t] (may be NULL) is then that earlier reduction's tensor,
 * else 0.  VIEW (the plan's, may be NULL): a VIEW_REDUCED result is no
 * level.  Returns the highest level.
 */
int kir_row_levels(const Fusion *f, const View *view, bool chunked, int *level, int *online);
/*
 * Does a row held in registers keep fusion tensor T's values from the pass
 * that computes them to the later ones: an input (a load), or a result that
 * costs to recompute (a transcendental op, a division by a full row)?
 * Cheap arithmetic is recomputed in each pass instead.
 */
bool kir_row_kept(const Fusion *f, int t);
/* Visits every statement of the tree in order (pre-order). */
void st_walk(Stmt *s, void (*fn)(Stmt *s, void *user), void *user);

/*
 * The launch description: all the runtime reads of a compiled kernel
 * (runtime/launch.c, run.c), built once by launch_describe
 * (codegen/launch_desc.c), the only reader of the kernel IR for a launch:
 * the runtime's argument buffer, tensor maps and grid come from this.
 */

/* One kernel parameter as the launch passes it (a KParam's launch half). */
typedef struct LaunchParam {
	ParamKind kind;
	const char *name;
	int arg;            /* the caller's argument it comes from (inputs, then outputs); -1: none */
	int tensor;         /* fusion tensor */
	Dtype dtype;        /* element type in memory */
	View view;          /* how the kernel reads it over the domain's 2-D view */
	int rank;           /* PK_TMAP, PK_PTR: the argument's shape, outermost first; PK_SIZE SZ_INNER: */
	Dim dim[MAX_RANK];  /* dim[0] is the size it holds */
	int box[2];         /* PK_TMAP: box rows, box cols (one batch deep when 3-D) */
	bool own_view;      /* PK_TMAP through a swizzled buffer: over its own shape (3-D with a batch), not the view */
	int swizzle;        /* PK_TMAP: its buffer's swizzle span, bytes (32, 64, 128); 0: none (off its own view) */
	bool bulk;          /* PK_PTR moved by 1-D bulk row copies: rows of a multiple of 16 bytes */
	SizeOf size;        /* PK_SIZE: which extent it holds */
} LaunchParam;

/* How many CTAs a launch of T tiles (C CTAs a cluster) takes; the GPU holds H at once. */
typedef enum GridRule {
	GRID_PER_TILE,     /* T x C: one CTA (cluster) a tile */
	GRID_PERSISTENT,   /* min(T x C, H): each CTA loops over tiles */
	GRID_ALL           /* H: stream-K spreads fewer tiles' k-steps over every CTA (no workspace: T x C) */
} GridRule;

typedef struct Launch {
	const char *entry;      /* the kernel's name in the cubin */
	const Fusion *fusion;   /* the shapes the arguments must have; the diagnostics' positions */
	int threads;            /* a CTA */
	int smem_bytes;         /* dynamic shared memory */
	bool pdl;               /* launch with programmatic stream serialization (Kernel.pdl, unless option pdl=0) */
	int cluster;            /* CTAs a cluster (MatmulPlan.cluster's product): the grid is a multiple of it */
	int nparam;             /* param[1..nparam-1], in the kernel's order; param[0] unused */
	const LaunchParam *param;
	/* the 2-D view of the domain and its tiles */
	int domain;             /* fusion tensor whose shape the view is of */
	bool flat;              /* any factorisation of the element count: rows as wide as a tile */
	bool batched;           /* a batched matmul's [batch, rows, cols]: rows are one batch's */
	bool row_tiles;         /* a tile is a row (a row reduction); else tile_rows x tile_cols */
	int tile_rows, tile_cols;
	int cluster_rows, cluster_cols;   /* a cluster's tiles, which count as one */
	int row_chunk;          /* a streamed row's chunk: rows up to INT32_MAX - it wide; 0: none */
	int row_cap;            /* the widest row the kernel keeps in shared memory; 0: no bound */
	GridRule grid;
	int64_t workspace_slot; /* stream-K, a column or full reduction: bytes a CTA of the workspace; 0: none */
	bool workspace_asked;   /* stream-K asked for: no workspace is an error (a default runs tiles whole) */
	/* tile signals (wsf_kernel_launch_ex's flags) */
	bool signal;            /* sets a flag an output tile: a launch needs flags and an epoch */
	bool tile_consumer;     /* signals to its own consumer role (which may raise flags itself) */
	int waits;              /* inputs and outputs whose tiles it waits for (wait_flags); 0: none */
	int wait_rows, wait_cols;   /* of them, operands A (a word a row tile) and B (a column tile) */
	int wait_tile[2];       /* the epilogue inputs' writer's tile; 0: the kernel's */
} Launch;

/* Loaded module state, owned by the runtime (runtime/launch.c). */
typedef struct Loaded Loaded;

/* ---- kverify.c / kprint.c ------------------------------------------- */

int kernel_verify(Comp *c, const Kernel *k, const char *after_pass);
void kernel_print(Buf *b, const Kernel *k);
void expr_print(Buf *b, const Kernel *k, const Expr *e);

/* ---- dot.c: pictures, in Graphviz's language --------------------------- */

/* The fusion DAG: inputs, ops (a composite's parts grouped under its name), outputs. */
void fusion_dot(Buf *b, const Fusion *f);
/* The kernel's roles and pipelines: global tensors, the buffers and mbarriers of each pipeline,
 * accumulators, the thread roles, and who loads, waits, arrives, computes and stores what. */
void kernel_dot(Buf *b, const Kernel *k);

#endif /* WSFUSE_IR_H */
