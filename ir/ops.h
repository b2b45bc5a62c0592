/*
 * ops.h: the op table, one row per op.  Included several times with OP defined.
 *
 *   OP(ID, yaml spelling, min inputs, max inputs, class, attributes, typing, kinds)
 *
 * The class says which scheduler family and which shape rule the op follows;
 * the attribute mask says which extra YAML keys the op accepts (A_* in ir.h);
 * the typing rule (TY_* in ir.h) how its result's dtype follows from its
 * operands' (torch's promotion); kinds, the categories (K_* in ir.h) of the
 * promoted operand type it computes in: others are an error.
 * Adding an op is one row here plus its semantics: the host reference in
 * runtime/reference.c and the CUDA expression in codegen/emit_ops.c, both tables
 * indexed by op id, and (for a composite) its expansion in passes/expand.c.
 */
/* unary pointwise */
OP(NEG,       "neg",       1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(ABS,       "abs",       1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(EXP,       "exp",       1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(LOG,       "log",       1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(SQRT,      "sqrt",      1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(RSQRT,     "rsqrt",     1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(TANH,      "tanh",      1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(SIGMOID,   "sigmoid",   1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(RELU,      "relu",      1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(SILU,      "silu",      1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(GELU,      "gelu",      1, 1, UNARY,     A_APPROX,  TY_FLOAT, K_ALL)
OP(CAST,      "cast",      1, 1, UNARY,     A_TO,      TY_CAST,  K_ALL)
/* binary pointwise, numpy broadcasting over trailing dims */
OP(ADD,       "add",       2, 2, BINARY,    0,         TY_ARITH, K_INT | K_FLOAT)
OP(SUB,       "sub",       2, 2, BINARY,    0,         TY_ARITH, K_INT | K_FLOAT)
OP(MUL,       "mul",       2, 2, BINARY,    0,         TY_ARITH, K_INT | K_FLOAT)
OP(DIV,       "div",       2, 2, BINARY,    0,         TY_FLOAT, K_ALL)
OP(MAXIMUM,   "maximum",   2, 2, BINARY,    0,         TY_ARITH, K_ALL)
OP(MINIMUM,   "minimum",   2, 2, BINARY,    0,         TY_ARITH, K_ALL)
/* reductions */
OP(SUM,       "sum",       1, 1, REDUCE,    A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
OP(MAX,       "max",       1, 1, REDUCE,    A_AXIS | A_KEEPDIM, TY_ARITH, K_BOOL | K_FLOAT)
OP(MEAN,      "mean",      1, 1, REDUCE,    A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
OP(PROD,      "prod",      1, 1, REDUCE,    A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
/* matmul */
OP(MATMUL,    "matmul",    2, 2, MATMUL,    A_TRANSPOSE | A_ACC, TY_ARITH, K_FLOAT)
/* composites: expanded into the ops above by passes/expand.c */
OP(SOFTMAX,   "softmax",   1, 1, COMPOSITE, A_AXIS,    TY_ARITH, K_FLOAT)
OP(LAYERNORM, "layernorm", 1, 3, COMPOSITE, A_AXIS | A_EPS, TY_ARITH, K_FLOAT)
OP(RMSNORM,   "rmsnorm",   1, 3, COMPOSITE, A_AXIS | A_EPS, TY_ARITH, K_FLOAT)
/* more unary pointwise: float math (an integer operand computes in f32), rounding, sign */
OP(ERF,       "erf",       1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(SIN,       "sin",       1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(COS,       "cos",       1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(EXP2,      "exp2",      1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(LOG2,      "log2",      1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(LOG1P,     "log1p",     1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(EXPM1,     "expm1",     1, 1, UNARY,     0,         TY_FLOAT, K_ALL)
OP(FLOOR,     "floor",     1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(CEIL,      "ceil",      1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(ROUND,     "round",     1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(TRUNC,     "trunc",     1, 1, UNARY,     0,         TY_ARITH, K_INT | K_FLOAT)
OP(SIGN,      "sign",      1, 1, UNARY,     0,         TY_ARITH, K_ALL)
/* logical and bitwise */
OP(LOGICAL_NOT, "logical_not", 1, 1, UNARY,  0,        TY_LOGIC, K_ALL)
OP(LOGICAL_AND, "logical_and", 2, 2, BINARY, 0,        TY_LOGIC, K_ALL)
OP(LOGICAL_OR,  "logical_or",  2, 2, BINARY, 0,        TY_LOGIC, K_ALL)
OP(BITWISE_NOT, "bitwise_not", 1, 1, UNARY,  0,        TY_ARITH, K_BOOL | K_INT)
OP(BITWISE_AND, "bitwise_and", 2, 2, BINARY, 0,        TY_ARITH, K_BOOL | K_INT)
OP(BITWISE_OR,  "bitwise_or",  2, 2, BINARY, 0,        TY_ARITH, K_BOOL | K_INT)
OP(BITWISE_XOR, "bitwise_xor", 2, 2, BINARY, 0,        TY_ARITH, K_BOOL | K_INT)
OP(SHL,       "bitwise_left_shift",  2, 2, BINARY, 0,  TY_ARITH, K_INT)
OP(SHR,       "bitwise_right_shift", 2, 2, BINARY, 0,  TY_ARITH, K_INT)
/* comparisons: computed in the operands' promoted type, a bool result */
OP(EQ,        "eq",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
OP(NE,        "ne",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
OP(LT,        "lt",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
OP(LE,        "le",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
OP(GT,        "gt",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
OP(GE,        "ge",        2, 2, BINARY,    0,         TY_CMP,   K_ALL)
/* more binary arithmetic */
OP(POW,       "pow",       2, 2, BINARY,    0,         TY_ARITH, K_FLOAT)
OP(FLOOR_DIVIDE, "floor_divide", 2, 2, BINARY, 0,      TY_ARITH, K_INT | K_FLOAT)
OP(REMAINDER, "remainder", 2, 2, BINARY,    0,         TY_ARITH, K_INT | K_FLOAT)
/* where(cond, a, b): cond bool; a and b promote */
OP(WHERE,     "where",     3, 3, BINARY,    0,         TY_WHERE, K_ALL)
/* rand_like(x, seed, offset): uniform [0, 1) in f32 of x's shape, Philox4x32-10 of the element's index */
OP(RAND_LIKE, "rand_like", 3, 3, UNARY,     0,         TY_RAND,  K_ALL)
OP(ONE_HOT,   "one_hot",   1, 1, UNARY,     A_CLASSES, TY_ARITH, K_INT)
OP(POSITION,  "position",  1, 1, UNARY,     A_AXIS,    TY_ARITH, K_ALL)
/* torch.topk along the last dim: the k largest, sorted (part 0), or their indices (part 1, int64) */
OP(TOPK,      "topk",      1, 1, UNARY,     A_AXIS | A_K, TY_ARITH, K_FLOAT)
/* reductions by composition, expanded by passes/expand.c: min(x) = -max(-x); logsumexp, max-shifted */
OP(MIN,       "min",       1, 1, COMPOSITE, A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
OP(LOGSUMEXP, "logsumexp", 1, 1, COMPOSITE, A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
/* torch's var and std (a correction, default 1) and log_softmax (amax and amin are max and min: fusion.c) */
OP(VAR,       "var",       1, 1, COMPOSITE, A_AXIS | A_KEEPDIM | A_CORRECTION, TY_FLOAT, K_FLOAT)
OP(STD,       "std",       1, 1, COMPOSITE, A_AXIS | A_KEEPDIM | A_CORRECTION, TY_FLOAT, K_FLOAT)
OP(LOG_SOFTMAX, "log_softmax", 1, 1, COMPOSITE, A_AXIS,   TY_ARITH, K_FLOAT)
OP(ARGMAX,    "argmax",    1, 1, COMPOSITE, A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
OP(ARGMIN,    "argmin",    1, 1, COMPOSITE, A_AXIS | A_KEEPDIM, TY_ARITH, K_FLOAT)
OP(CROSS_ENTROPY, "cross_entropy", 2, 2, COMPOSITE, A_CE, TY_ARITH, K_ALL)
/* views: index maps of their inputs (docs/spec.md, "Views"); chunk and split are read as one slice an output */
OP(SLICE,     "slice",     1, 1, VIEW,      A_DIM | A_SLICE,  TY_VIEW, K_ALL)
OP(CAT,       "cat",       2, MAX_IN, VIEW, A_DIM,            TY_VIEW, K_ALL)
OP(CHUNK,     "chunk",     1, 1, VIEW,      A_DIM | A_CHUNKS, TY_VIEW, K_ALL)
OP(SPLIT,     "split",     1, 1, VIEW,      A_DIM | A_SIZES,  TY_VIEW, K_ALL)
OP(PERMUTE,   "permute",   1, 1, VIEW,      A_DIMS,           TY_VIEW, K_ALL)
OP(TRANSPOSE, "transpose", 1, 1, VIEW,      A_DIM01,          TY_VIEW, K_ALL)
OP(RESHAPE,   "reshape",   1, 1, VIEW,      A_SHAPE,          TY_VIEW, K_ALL)
OP(VIEW,      "view",      1, 1, VIEW,      A_SHAPE,          TY_VIEW, K_ALL)
OP(EXPAND,    "expand",    1, 1, VIEW,      A_SHAPE,          TY_VIEW, K_ALL)
OP(PAD,       "pad",       1, 1, VIEW,      A_PAD,            TY_VIEW, K_ALL)
/* index ops: in [x, index] (int32 or int64), torch's index_select (index 1-D) and gather (index of x's rank) */
OP(INDEX_SELECT, "index_select", 2, 2, VIEW, A_DIM,            TY_INDEX, K_ALL)
OP(GATHER,    "gather",    2, 2, VIEW,      A_DIM,            TY_INDEX, K_ALL)
/* scatters: x with a part replaced, torch's index_copy(x, dim, index, source) (in [x, index, source]) and
   slice_scatter(x, src, dim, start, end, step); a kernel writes them in place (an output's alias) */
OP(INDEX_COPY, "index_copy", 3, 3, VIEW,     A_DIM,            TY_INDEX, K_ALL)
OP(SLICE_SCATTER, "slice_scatter", 2, 2, VIEW, A_DIM | A_SLICE, TY_INDEX, K_ALL)
