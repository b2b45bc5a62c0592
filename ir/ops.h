/*
 * ops.h: the op table, one row per op.  Included several times with OP defined.
 *
 *   OP(ID, yaml spelling, min inputs, max inputs, class, attributes)
 *
 * The class says which scheduler family and which shape rule the op follows;
 * the attribute mask says which extra YAML keys the op accepts (A_* in ir.h).
 * Adding an op is one row here plus its semantics: the host reference in
 * runtime/reference.c and the CUDA expression in codegen/emit.c, both tables
 * indexed by op id, and (for a composite) its expansion in passes/expand.c.
 */
/* unary pointwise */
OP(NEG,       "neg",       1, 1, UNARY,     0)
OP(ABS,       "abs",       1, 1, UNARY,     0)
OP(EXP,       "exp",       1, 1, UNARY,     0)
OP(LOG,       "log",       1, 1, UNARY,     0)
OP(SQRT,      "sqrt",      1, 1, UNARY,     0)
OP(RSQRT,     "rsqrt",     1, 1, UNARY,     0)
OP(TANH,      "tanh",      1, 1, UNARY,     0)
OP(SIGMOID,   "sigmoid",   1, 1, UNARY,     0)
OP(RELU,      "relu",      1, 1, UNARY,     0)
OP(SILU,      "silu",      1, 1, UNARY,     0)
OP(GELU,      "gelu",      1, 1, UNARY,     A_APPROX)
OP(CAST,      "cast",      1, 1, UNARY,     A_TO)
/* binary pointwise, numpy broadcasting over trailing dims */
OP(ADD,       "add",       2, 2, BINARY,    0)
OP(SUB,       "sub",       2, 2, BINARY,    0)
OP(MUL,       "mul",       2, 2, BINARY,    0)
OP(DIV,       "div",       2, 2, BINARY,    0)
OP(MAXIMUM,   "maximum",   2, 2, BINARY,    0)
OP(MINIMUM,   "minimum",   2, 2, BINARY,    0)
/* reductions */
OP(SUM,       "sum",       1, 1, REDUCE,    A_AXIS | A_KEEPDIM)
OP(MAX,       "max",       1, 1, REDUCE,    A_AXIS | A_KEEPDIM)
OP(MEAN,      "mean",      1, 1, REDUCE,    A_AXIS | A_KEEPDIM)
/* matmul */
OP(MATMUL,    "matmul",    2, 2, MATMUL,    A_TRANSPOSE | A_ACC)
/* composites: expanded into the ops above by passes/expand.c */
OP(SOFTMAX,   "softmax",   1, 1, COMPOSITE, A_AXIS)
OP(LAYERNORM, "layernorm", 1, 3, COMPOSITE, A_AXIS | A_EPS)
OP(RMSNORM,   "rmsnorm",   1, 3, COMPOSITE, A_AXIS | A_EPS)
