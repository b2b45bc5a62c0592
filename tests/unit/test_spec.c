/*
 * test_spec.c: unit tests of the front end (compiler/spec.c).
 *
 * Each test reads spec text through spec_read() into a fresh Comp made by
 * setup() (its own arena, string table and out-of-memory landing point) and
 * checks the fusion IR it built: ids, dims, size variables, positions,
 * attributes and bindings.  The error tests check the other half of the
 * contract: a malformed spec gets exactly one diagnostic, at the right line
 * and column, and no fusion.  tests/errors/ pins the full text of each message
 * through the CLI; here the table pins where each one points.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/compiler.h"

#include "fixture.h"

/* Reads LEN bytes of SRC; an arena failure fails the test. */
static int
read_n(Fixture *t, const char *src, size_t len)
{
	if (setjmp(t->c.oom))
		fail_msg("out of memory");
	t->c.src = arena_strndup(t->c.arena, src, len);
	t->c.srclen = len;
	return spec_read(&t->c);
}

static int
read_str(Fixture *t, const char *src)
{
	return read_n(t, src, strlen(src));
}

static Fusion *
read_ok(Fixture *t, const char *src)
{
	if (read_str(t, src) != 0)
		fail_msg("spec rejected: %s", t->msg);
	assert_int_equal(t->c.nerrors, 0);
	assert_non_null(t->c.fusion);
	return t->c.fusion;
}

static int
tensor(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->ntensor; i++)
		if (strcmp(f->tensor[i].name, name) == 0)
			return i;
	fail_msg("no tensor '%s'", name);
	return 0;
}

static int
sym(const Fusion *f, const char *name)
{
	int i;

	for (i = 1; i < f->nsym; i++)
		if (strcmp(f->sym[i].name, name) == 0)
			return i;
	fail_msg("no size '%s'", name);
	return 0;
}

static void
assert_pos(Pos p, int line, int col)
{
	if (p.line != line || p.col != col)
		fail_msg("position %d:%d, expected %d:%d", p.line, p.col, line, col);
	assert_string_equal(p.file, FILE_NAME);
}

static const char gemm[] =
	"fusion: gemm_bias_gelu\n"                                        /* 1 */
	"sizes: {M: 8192, N: 4096, K: 1024}\n"                            /* 2 */
	"inputs:\n"                                                       /* 3 */
	"  x:    {dtype: bf16, shape: [M, K]}\n"                          /* 4 */
	"  w:    {dtype: bf16, shape: [N, K]}\n"                          /* 5 */
	"  bias: {dtype: f32, shape: [N]}\n"                              /* 6 */
	"ops:\n"                                                          /* 7 */
	"  - {out: y, op: matmul, in: [x, w], transpose_b: true}\n"       /* 8 */
	"  - {out: z, op: add,    in: [y, bias]}\n"                       /* 9 */
	"  - {out: o, op: gelu,   in: [z], approximate: tanh}\n"          /* 10 */
	"outputs:\n"                                                      /* 11 */
	"  o: {dtype: bf16}\n"                                            /* 12 */
	"schedule:\n"                                                     /* 13 */
	"  tile: [128, 256, 64]\n"                                        /* 14 */
	"  stages: 4\n";                                                  /* 15 */

/* ---- what a good spec becomes ----------------------------------------- */

static void
gemm_sizes_and_inputs(void **state)
{
	Fusion *f = read_ok(*state, gemm);
	int m = sym(f, "M"), n = sym(f, "N"), k = sym(f, "K"), x = tensor(f, "x");

	assert_string_equal(f->name, "gemm_bias_gelu");
	assert_pos(f->pos, 1, 9);
	assert_int_equal(f->nsym, 4);
	assert_int_equal(f->sym[m].value, 8192);
	assert_int_equal(f->sym[n].value, 4096);
	assert_int_equal(f->sym[k].value, 1024);
	assert_false(f->sym[m].bound);
	assert_pos(f->sym[n].pos, 2, 18);

	assert_int_equal(f->ninput, 3);
	assert_int_equal(f->input[0], x);
	assert_int_equal(f->input[2], tensor(f, "bias"));
	assert_int_equal(f->tensor[x].kind, TK_INPUT);
	assert_int_equal(f->tensor[x].dtype, DT_BF16);
	assert_int_equal(f->tensor[x].rank, 2);
	assert_int_equal(f->tensor[x].dim[0].sym, m);
	assert_int_equal(f->tensor[x].dim[1].sym, k);
	assert_int_equal(f->tensor[x].def, 0);
	assert_pos(f->tensor[x].pos, 4, 3);
	assert_int_equal(f->tensor[tensor(f, "bias")].dtype, DT_F32);
	assert_int_equal(f->tensor[tensor(f, "bias")].rank, 1);
}

static void
gemm_ops_and_outputs(void **state)
{
	Fusion *f = read_ok(*state, gemm);
	int y = tensor(f, "y"), z = tensor(f, "z"), o = tensor(f, "o");
	const Op *mm = &f->op[1], *add = &f->op[2], *gelu = &f->op[3];

	assert_int_equal(f->nop, 4);
	assert_int_equal(mm->kind, OP_MATMUL);
	assert_int_equal(mm->out, y);
	assert_int_equal(f->tensor[y].kind, TK_VALUE);
	assert_int_equal(f->tensor[y].def, 1);
	assert_int_equal(f->tensor[y].dtype, DT_NONE);
	assert_pos(f->tensor[y].pos, 8, 11);
	assert_pos(mm->pos, 8, 5);
	assert_int_equal(mm->nin, 2);
	assert_int_equal(mm->in[0].tensor, tensor(f, "x"));
	assert_int_equal(mm->in[1].tensor, tensor(f, "w"));
	assert_pos(mm->in[1].pos, 8, 34);
	assert_false(mm->transpose_a);
	assert_true(mm->transpose_b);
	assert_int_equal(mm->acc, DT_F32);

	assert_int_equal(add->kind, OP_ADD);
	assert_int_equal(add->out, z);
	assert_int_equal(add->in[0].tensor, y);
	assert_int_equal(add->in[1].tensor, tensor(f, "bias"));

	assert_int_equal(gelu->kind, OP_GELU);
	assert_int_equal(gelu->approx, APPROX_TANH);
	assert_int_equal(gelu->out, o);

	assert_int_equal(f->nout, 1);
	assert_int_equal(f->out[0].tensor, o);
	assert_int_equal(f->out[0].dtype, DT_BF16);
	assert_pos(f->out[0].pos, 12, 3);
}

static void
gemm_schedule(void **state)
{
	Fusion *f = read_ok(*state, gemm);
	const Schedule *s = &f->sched;

	assert_int_equal(s->ntile, 3);
	assert_int_equal(s->tile[0], 128);
	assert_int_equal(s->tile[1], 256);
	assert_int_equal(s->tile[2], 64);
	assert_int_equal(s->stages, 4);
	assert_int_equal(s->warp_specialize, 0);
	assert_int_equal(s->persistent, 0);
	assert_int_equal(s->consumers, CONSUMERS_NONE);
	assert_int_equal(s->signal, SIGNAL_NONE);
	assert_pos(s->pos, 13, 1);
	assert_pos(s->tile_pos, 14, 9);
	assert_pos(s->stages_pos, 15, 11);
}

static void
names_are_interned(void **state)
{
	Fixture *t = *state;
	Fusion *f = read_ok(t, gemm);

	assert_ptr_equal(f->name, intern_cstr(t->c.strs, "gemm_bias_gelu"));
	assert_ptr_equal(f->tensor[tensor(f, "bias")].name, intern_cstr(t->c.strs, "bias"));
	assert_ptr_equal(f->sym[sym(f, "K")].name, intern_cstr(t->c.strs, "K"));
}

static void
unlisted_size_is_unbound_at_first_use(void **state)
{
	Fusion *f = read_ok(*state,
		"fusion: f\n"
		"inputs:\n"
		"  a: {dtype: f16, shape: [B, 128]}\n"
		"  b: {dtype: f16, shape: [B, 128]}\n"
		"ops: [{out: c, op: mul, in: [a, b]}]\n"
		"outputs: {c: }\n");
	int b = sym(f, "B"), a = tensor(f, "a");

	assert_int_equal(f->nsym, 2);
	assert_int_equal(f->sym[b].value, 0);
	assert_false(f->sym[b].bound);
	assert_pos(f->sym[b].pos, 3, 27);
	assert_int_equal(f->tensor[a].dim[0].sym, b);
	assert_int_equal(f->tensor[tensor(f, "b")].dim[0].sym, b);
	assert_int_equal(f->tensor[a].dim[1].sym, 0);
	assert_int_equal(f->tensor[a].dim[1].ext, 128);
	assert_int_equal(f->out[0].dtype, DT_NONE);
}

static void
scalar_input_and_literals(void **state)
{
	Fusion *f = read_ok(*state,
		"fusion: f\n"
		"inputs:\n"
		"  s: {dtype: f32, shape: []}\n"
		"  x: {dtype: f32, shape: [64]}\n"
		"ops:\n"
		"  - {out: a, op: mul, in: [x, 0.5]}\n"
		"  - {out: b, op: sub, in: [-2, a]}\n"
		"  - {out: c, op: add, in: [b, s]}\n"
		"  - {out: d, op: maximum, in: [c, 1e-3]}\n"
		"outputs: {d: {}}\n");
	const Op *mul = &f->op[1], *sub = &f->op[2], *max = &f->op[4];

	assert_int_equal(f->tensor[tensor(f, "s")].rank, 0);
	assert_int_equal(mul->in[1].tensor, 0);
	assert_true(mul->in[1].lit == 0.5);
	assert_pos(mul->in[1].pos, 6, 31);
	assert_int_equal(sub->in[0].tensor, 0);
	assert_true(sub->in[0].lit == -2.0);
	assert_int_equal(sub->in[1].tensor, tensor(f, "a"));
	assert_true(max->in[1].lit == 1e-3);
}

static void
op_attributes_and_defaults(void **state)
{
	Fusion *f = read_ok(*state,
		"fusion: f\n"
		"inputs: {x: {dtype: bf16, shape: [8, 64]}, g: {dtype: bf16, shape: [64]}}\n"
		"ops:\n"
		"  - {out: s1, op: sum, in: [x]}\n"
		"  - {out: s2, op: mean, in: [x], axis: 0, keepdim: false}\n"
		"  - {out: n1, op: layernorm, in: [x, g], eps: 1e-6, axis: -1}\n"
		"  - {out: n2, op: rmsnorm, in: [x]}\n"
		"  - {out: c, op: cast, in: [x], to: f32}\n"
		"  - {out: e, op: gelu, in: [x], approximate: none}\n"
		"  - {out: m, op: matmul, in: [x, x], transpose_a: true, transpose_b: false, acc: f32}\n"
		"  - {out: sm, op: softmax, in: [x], axis: 1}\n"
		"  - {out: a1, op: amax, in: [x], dim: 0, keepdim: false}\n"
		"  - {out: s3, op: sum, in: [x], dim: -2}\n"
		"outputs: {m: {dtype: f32}}\n");
	const Op *op = f->op;

	assert_int_equal(op[1].axis, -1);
	assert_true(op[1].keepdim);
	assert_int_equal(op[2].axis, 0);
	assert_false(op[2].keepdim);
	assert_int_equal(op[3].nin, 2);
	assert_true(op[3].eps == 1e-6);
	assert_true(op[4].eps == 1e-5);
	assert_int_equal(op[4].nin, 1);
	assert_int_equal(op[5].to, DT_F32);
	assert_int_equal(op[6].approx, APPROX_NONE);
	assert_true(op[7].transpose_a);
	assert_false(op[7].transpose_b);
	assert_int_equal(op[8].kind, OP_SOFTMAX);
	assert_int_equal(op[8].axis, 1);
	assert_int_equal(op[9].kind, OP_MAX);   /* amax: torch's name */
	assert_int_equal(op[9].axis, 0);        /* dim: torch's name of axis */
	assert_false(op[9].keepdim);
	assert_int_equal(op[10].axis, -2);
}

static void
schedule_hints(void **state)
{
	Fusion *f = read_ok(*state,
		"fusion: f\n"
		"inputs: {x: {dtype: f32, shape: [N]}}\n"
		"ops: [{out: y, op: exp, in: [x]}]\n"
		"outputs: {y: }\n"
		"schedule: {tile: [256], warp_specialize: false, persistent: true, cluster: [2, 1],\n"
		"           consumers: pingpong, signal: per_tile}\n");
	const Schedule *s = &f->sched;

	assert_int_equal(s->ntile, 1);
	assert_int_equal(s->tile[0], 256);
	assert_int_equal(s->stages, 0);
	assert_int_equal(s->warp_specialize, 1);
	assert_pos(s->ws_pos, 5, 42);
	assert_int_equal(s->persistent, 2);
	assert_int_equal(s->cluster[0], 2);
	assert_int_equal(s->cluster[1], 1);
	assert_int_equal(s->consumers, CONSUMERS_PINGPONG);
	assert_int_equal(s->signal, SIGNAL_PER_TILE);
}

static void
empty_sizes_and_schedule_are_allowed(void **state)
{
	Fusion *f = read_ok(*state,
		"fusion: f\n"
		"sizes:\n"
		"inputs: {x: {dtype: f32, shape: [4]}}\n"
		"ops: [{out: y, op: relu, in: [x]}]\n"
		"outputs: {y: {dtype: bf16}}\n"
		"schedule:\n");

	assert_int_equal(f->nsym, 1);
	assert_int_equal(f->sched.ntile, 0);
	assert_pos(f->sched.pos, 6, 1);
}

static void
crlf_and_bom(void **state)
{
	Fixture *t = *state;
	static const char src[] =
		"\xef\xbb\xbf" "fusion: f\r\n"
		"inputs: {x: {dtype: f32, shape: [4]}}\r\n"
		"ops: [{out: y, op: relu, in: [x]}]\r\n"
		"outputs: {y: }\r\n";
	Fusion *f = read_ok(t, src);

	assert_pos(f->op[1].pos, 3, 7);
	assert_pos(f->out[0].pos, 4, 11);
}

static void
bindings_override_defaults(void **state)
{
	Fixture *t = *state;
	Fusion *f;

	t->bind[0] = (SizeBinding){"M", 4096};
	t->bind[1] = (SizeBinding){"B", 3};
	t->c.bind = t->bind;
	t->c.nbind = 2;
	f = read_ok(t,
		"fusion: f\n"
		"sizes: {M: 8192}\n"
		"inputs: {x: {dtype: f32, shape: [B, M]}}\n"
		"ops: [{out: y, op: exp, in: [x]}]\n"
		"outputs: {y: }\n");
	assert_int_equal(f->sym[sym(f, "M")].value, 4096);
	assert_true(f->sym[sym(f, "M")].bound);
	assert_int_equal(f->sym[sym(f, "B")].value, 3);
	assert_true(f->sym[sym(f, "B")].bound);
}

static void
binding_of_unused_size(void **state)
{
	Fixture *t = *state;

	t->bind[0] = (SizeBinding){"x", 4};  /* a tensor, not a size */
	t->c.bind = t->bind;
	t->c.nbind = 1;
	assert_int_equal(read_str(t, "fusion: f\n"
	                             "inputs: {x: {dtype: f32, shape: [4]}}\n"
	                             "ops: [{out: y, op: exp, in: [x]}]\n"
	                             "outputs: {y: }\n"), -1);
	assert_int_equal(t->c.nerrors, 1);
	assert_null(t->c.fusion);
	assert_string_equal(t->msg, FILE_NAME ": error: size 'x' given with -D is not used by the spec");
}

static void
big_maps_and_lists(void **state)
{
	Fixture *t = *state;
	Buf b, dup;
	Fusion *f;
	int i;

	buf_init(&b, t->c.arena);
	buf_puts(&b, "fusion: big\ninputs:\n");
	for (i = 0; i < 3000; i++)
		buf_printf(&b, "  x%d: {dtype: f32, shape: [S%d, 16]}\n", i, i % 7);
	buf_init(&dup, t->c.arena);
	buf_printf(&dup, "%s  x5: {dtype: f32, shape: [4]}\n", buf_str(&b));
	buf_puts(&b, "ops:\n  - {out: y0, op: add, in: [x0, x1]}\n");
	for (i = 1; i < 3000; i++)
		buf_printf(&b, "  - {out: y%d, op: add, in: [y%d, x%d]}\n", i, i - 1, i);
	buf_puts(&b, "outputs: {y2999: }\n");
	f = read_ok(t, buf_str(&b));
	assert_int_equal(f->ninput, 3000);
	assert_int_equal(f->nop, 3001);  /* op 0 is none */
	assert_int_equal(f->nsym, 8);
	assert_int_equal(f->op[2999].in[0].tensor, tensor(f, "y2997"));

	assert_int_equal(read_str(t, buf_str(&dup)), -1);
	assert_int_equal(t->c.nerrors, 1);
	assert_non_null(strstr(t->msg, ":3003:3: error: duplicate key 'x5': first given at 8:3"));
}

static void
arena_handler_is_restored(void **state)
{
	Fixture *t = *state;
	volatile int landed = 0;

	read_ok(t, gemm);
	if (setjmp(t->c.oom))
		landed = 1;
	else
		arena_alloc(t->c.arena, (size_t)1 << 46);  /* more than any machine gives */
	assert_true(landed);
}

/* ---- what a bad spec gets ---------------------------------------------- */

/* A valid spec to break, one line at a time. */
#define HEAD "fusion: f\ninputs:\n  a: {dtype: bf16, shape: [M, N]}\n  b: {dtype: bf16, shape: [M, N]}\n"
#define OPS "ops:\n  - {out: c, op: add, in: [a, b]}\n"
#define OUTS "outputs:\n  c: {dtype: bf16}\n"
#define REST "inputs: {}\nops: []\noutputs: {}\n"

static const struct {
	const char *src;
	int line, col;
	const char *what;   /* a piece of the message */
} bad[] = {
	{"", 1, 1, "the spec is empty"},
	{"# only a comment\n", 1, 1, "the spec is empty"},
	{"---\n", 1, 1, "the spec is empty"},
	{"[1, 2]\n", 1, 1, "expected a mapping with keys fusion, inputs, ops and outputs, saw a list"},
	{"fusion: f\n  x: 1\n", 2, 4, "invalid YAML: mapping values are not allowed"},
	{"fusion: [f\n", 2, 1, "invalid YAML: did not find expected ',' or ']'"},
	{"fusion: f\n---\nfusion: g\n", 2, 1, "expected one YAML document, saw a second"},
	{HEAD OPS OUTS "ops: []\n", 9, 1, "duplicate key 'ops': first given at 5:1"},
	{HEAD OPS "outputs: {c: {dtype: f32, dtype: f16}}\n", 7, 27, "duplicate key 'dtype'"},
	{HEAD OPS OUTS "x: &a [1]\n", 9, 4, "anchors and aliases are not supported"},
	{"fusion: f\ny: *a\n", 2, 4, "anchors and aliases are not supported"},
	{"fusion: !kernel f\n", 1, 9, "YAML tags are not supported: remove '!kernel'"},
	{"fusion: f\n? {a: 1}\n: 2\n", 2, 3, "expected a name as mapping key, saw a mapping"},
	{"fusion: \"a\\0b\"\n", 1, 9, "NUL character"},
	{HEAD OPS OUTS "tilee: 1\n", 9, 1, "unknown key 'tilee' in the spec: expected fusion, sizes"},
	{"fusion: f\ninputs:\n  a: {dtype: bf16, shape: [M], layout: row}\n" OPS OUTS, 3, 32,
	 "unknown key 'layout' in input 'a': expected dtype, shape or wait"},
	{HEAD "ops:\n  - {out: c, op: add, in: [a, b], keepdims: true}\n" OUTS, 6, 35,
	 "unknown key 'keepdims' in op 'add': expected out, op or in"},
	{HEAD "ops:\n  - {out: c, op: sum, in: [a], keepdims: true}\n" OUTS, 6, 32,
	 "unknown key 'keepdims' in op 'sum': did you mean 'keepdim'?"},
	{HEAD OPS "outputs:\n  c: {dtyp: f32}\n", 8, 7, "unknown key 'dtyp' in output 'c': did you mean 'dtype'?"},
	{HEAD OPS OUTS "schedule: {stage: 2}\n", 9, 12, "unknown key 'stage' in 'schedule': did you mean 'stages'?"},
	{"inputs: {}\n" OPS OUTS, 1, 1, "the spec is missing required key 'fusion'"},
	{"fusion: f\n" OPS OUTS, 1, 1, "the spec is missing required key 'inputs'"},
	{HEAD OUTS, 1, 1, "the spec is missing required key 'ops'"},
	{HEAD OPS, 1, 1, "the spec is missing required key 'outputs'"},
	{"fusion: f\ninputs: {a: {shape: [4]}}\n" OPS OUTS, 2, 13, "input 'a' is missing required key 'dtype'"},
	{"fusion: f\ninputs: {a: {dtype: f32}}\n" OPS OUTS, 2, 13, "input 'a' is missing required key 'shape'"},
	{HEAD "ops:\n  - {op: add, in: [a, b]}\n" OUTS, 6, 5, "op 'add' is missing required key 'out'"},
	{HEAD "ops:\n  - {out: c, in: [a, b]}\n" OUTS, 6, 5, "this op is missing required key 'op'"},
	{HEAD "ops:\n  - {out: c, op: add}\n" OUTS, 6, 5, "op 'add' is missing required key 'in'"},
	{HEAD "ops:\n  - {out: c, op: cast, in: [a]}\n" OUTS, 6, 5, "op 'cast' is missing required key 'to'"},
	{"fusion: f\ninputs: [a, b]\n" OPS OUTS, 2, 9, "expected a mapping of input names to {dtype, shape}"},
	{HEAD "ops: {c: 1}\n" OUTS, 5, 6, "expected a list of ops for 'ops', saw a mapping"},
	{HEAD "ops: [[c, add, a, b]]\n" OUTS, 5, 7, "expected an op {out, op, in, ...}, saw a list"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: 4}}\n" OPS OUTS, 2, 33, "expected a list of sizes"},
	{HEAD "ops:\n  - {out: c, op: exp, in: a}\n" OUTS, 6, 27, "expected a list of inputs for op 'exp', saw 'a'"},
	{"fusion: 1f\n" REST, 1, 9, "'1f' is not a valid name for a fusion"},
	{"fusion: [f]\n" REST, 1, 9, "expected a fusion name, saw a list"},
	{"fusion: f\ninputs: {a-b: {dtype: f32, shape: [4]}}\n" OPS OUTS, 2, 10, "'a-b' is not a valid name"},
	{HEAD "ops:\n  - {out: true, op: exp, in: [a]}\n" OUTS, 6, 11, "expected a tensor name, saw 'true'"},
	{"fusion: f\ninputs: {a: {dtype: bf8, shape: [4]}}\n" OPS OUTS, 2, 21, "unknown dtype 'bf8': did you mean 'bf16'?"},
	{"fusion: f\ninputs: {a: {dtype: complex, shape: [4]}}\n" OPS OUTS, 2, 21,
	 "unknown dtype 'complex': expected f32, f16, bf16, fp8e4m3, fp8e5m2, int8, uint8, int32, int64 or bool (or torch's"},
	{"fusion: f\ninputs: {a: {dtype: float64, shape: [4]}}\n" OPS OUTS, 2, 21, "unknown dtype 'float64': did you mean"},
	{HEAD OPS "outputs: {c: {dtype: }}\n", 7, 22,
	 "expected a dtype (f32, f16, bf16, fp8e4m3, fp8e5m2, int8, uint8, int32, int64 or bool), saw nothing"},
	{HEAD "ops:\n  - {out: c, op: relu6, in: [a]}\n" OUTS, 6, 18, "unknown op 'relu6': did you mean 'relu'?"},
	{HEAD "ops:\n  - {out: c, op: conv2d, in: [a]}\n" OUTS, 6, 18, "unknown op 'conv2d': expected neg, abs,"},
	{HEAD "ops:\n  - {out: d, op: exp, in: [c]}\n  - {out: c, op: exp, in: [a]}\n" OUTS, 6, 28,
	 "'c' is used before it is defined: the op at 7:5 defines it"},
	{HEAD "ops:\n  - {out: c, op: exp, in: [q]}\n" OUTS, 6, 28,
	 "unknown tensor 'q': expected an input or an earlier op's output"},
	{HEAD "ops:\n  - {out: c, op: exp, in: [c]}\n" OUTS, 6, 28, "op 'exp' uses its own output 'c' as an input"},
	{HEAD "ops:\n  - {out: a, op: exp, in: [b]}\n" OUTS, 6, 11, "'a' is defined twice: first at 3:3"},
	{HEAD OPS "  - {out: c, op: exp, in: [a]}\n" OUTS, 7, 11, "'c' is defined twice: first at 6:11"},
	{HEAD "ops:\n  - {out: c, op: exp, in: [a, b]}\n" OUTS, 6, 27, "op 'exp' takes 1 input, saw 2"},
	{HEAD "ops:\n  - {out: c, op: add, in: [a]}\n" OUTS, 6, 27, "op 'add' takes 2 inputs, saw 1"},
	{HEAD "ops:\n  - {out: c, op: rmsnorm, in: []}\n" OUTS, 6, 31, "op 'rmsnorm' takes 1 to 3 inputs, saw 0"},
	{HEAD "ops:\n  - {out: c, op: matmul, in: [1, b]}\n" OUTS, 6, 31, "op 'matmul' takes tensors, not the number 1"},
	{HEAD "ops:\n  - {out: c, op: max, in: [0.5]}\n" OUTS, 6, 28, "op 'max' takes tensors, not the number 0.5"},
	{HEAD "ops:\n  - {out: c, op: exp, in: [2]}\n" OUTS, 6, 28, "op 'exp' takes tensors"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a, 1.0]}\n" OUTS, 6, 37, "op 'layernorm' takes tensors"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [2, 3]}\n" OUTS, 6, 31, "needs at least one tensor input"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [a, .nan]}\n" OUTS, 6, 31, "expected a finite number, saw '.nan'"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [a, 1e999]}\n" OUTS, 6, 31, "expected a finite number"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [a, -3.4028236e38]}\n" OUTS, 6, 31, "is too large for f32"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [a, 1e-400]}\n" OUTS, 6, 31, "'1e-400' is too small for f32"},
	{HEAD "ops:\n  - {out: c, op: mul, in: [a, 7e-46]}\n" OUTS, 6, 31, "write 0 if 0 is meant"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a], eps: 1e-400}\n" OUTS, 6, 43, "for 'eps' is too small for f32"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a], eps: -1e-400}\n" OUTS, 6, 43, "expected a positive number"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a], eps: 4e38}\n" OUTS, 6, 43, "for 'eps' is too large for f32"},
	{HEAD "ops:\n  - {out: c, op: exp, in: [a], approximate: tanh}\n" OUTS, 6, 32,
	 "op 'exp' does not take 'approximate': it takes no attributes"},
	{HEAD "ops:\n  - {out: c, op: matmul, in: [a, b], axis: 0}\n" OUTS, 6, 38,
	 "op 'matmul' does not take 'axis': its attributes are transpose_a, transpose_b and acc"},
	{HEAD "ops:\n  - {out: c, op: gelu, in: [a], approximate: erf}\n" OUTS, 6, 46,
	 "expected none or tanh for 'approximate', saw 'erf'"},
	{HEAD "ops:\n  - {out: c, op: cast, in: [a], to: int16}\n" OUTS, 6, 37, "unknown dtype 'int16'"},
	{HEAD "ops:\n  - {out: c, op: where, in: [1, a, b]}\n" OUTS, 6, 30, "takes a bool tensor as its condition"},
	{HEAD "ops:\n  - {out: c, op: sum, in: [a], axis: 1.0}\n" OUTS, 6, 38, "expected an integer from -8 to 7 for 'axis'"},
	{HEAD "ops:\n  - {out: c, op: sum, in: [a], axis: 99999999999}\n" OUTS, 6, 38, "for 'axis'"},
	{HEAD "ops:\n  - {out: c, op: sum, in: [a], keepdim: 1}\n" OUTS, 6, 41, "expected true or false for 'keepdim'"},
	{HEAD "ops:\n  - {out: c, op: matmul, in: [a, b], transpose_b: \"true\"}\n" OUTS, 6, 51,
	 "saw 'true' in quotes (a string)"},
	{HEAD "ops:\n  - {out: c, op: matmul, in: [a, b], acc: bf16}\n" OUTS, 6, 43, "expected acc: f32, saw 'bf16'"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a], eps: 0}\n" OUTS, 6, 43, "expected a positive number for 'eps'"},
	{HEAD "ops:\n  - {out: c, op: layernorm, in: [a], eps: small}\n" OUTS, 6, 43, "expected a positive number"},
	{"fusion: f\nsizes: {M: 0}\n" REST, 2, 12, "size 'M' must be positive, saw 0"},
	{"fusion: f\nsizes: {M: -1}\n" REST, 2, 12, "size 'M' must be positive, saw -1"},
	{"fusion: f\nsizes: {M: -99999999999999999999}\n" REST, 2, 12, "must be positive"},
	{"fusion: f\nsizes: {M: 1099511627777}\n" REST, 2, 12, "size 'M' is 1099511627777, more than the limit of 2^40"},
	{"fusion: f\nsizes: {M: 18446744073709551616}\n" REST, 2, 12, "more than the limit of 2^40"},
	{"fusion: f\nsizes: {M: 1e3}\n" REST, 2, 12, "expected a positive integer for size 'M', saw '1e3'"},
	{"fusion: f\nsizes: {M: }\n" REST, 2, 12, "expected a positive integer for size 'M', saw nothing"},
	{"fusion: f\nsizes: {2M: 4}\n" REST, 2, 9, "'2M' is not a valid name for a size"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [0]}}\n" OPS OUTS, 2, 34, "dim 0 of input 'a' must be positive, saw 0"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [4, -4]}}\n" OPS OUTS, 2, 37, "dim 1 of input 'a' must be positive"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [4, 2000000000000]}}\n" OPS OUTS, 2, 37, "more than the limit"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [[4]]}}\n" OPS OUTS, 2, 34, "expected a size name or a positive integer"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [null]}}\n" OPS OUTS, 2, 34, "expected a size name or a positive integer"},
	{"fusion: f\ninputs: {a: {dtype: f32, shape: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}}\n" OPS OUTS, 2, 58,
	 "input 'a' has rank 10, more than the limit of 8"},
	{HEAD OPS "outputs:\n  d: {dtype: bf16}\n", 8, 3, "output 'd' names no tensor: expected the out of an op"},
	{HEAD "ops:\n  - {out: sum1, op: add, in: [a, b]}\noutputs:\n  sun1: {}\n", 8, 3, "did you mean 'sum1'?"},
	{HEAD OPS "outputs:\n  a: {dtype: bf16}\n", 8, 3, "output 'a' is an input"},
	{HEAD OPS "outputs: {}\n", 7, 10, "the spec has no outputs"},
	{HEAD OPS "outputs: [c]\n", 7, 10, "expected a mapping of output names to {dtype} for 'outputs', saw a list"},
	{HEAD OPS "outputs: {c: bf16}\n", 7, 14, "expected {dtype} for output 'c', saw 'bf16'"},
	{HEAD OPS OUTS "schedule: [1]\n", 9, 11, "expected a mapping of schedule hints"},
	{HEAD OPS OUTS "schedule: {tile: []}\n", 9, 18, "expected 1 to 3 tile extents for 'tile', saw 0"},
	{HEAD OPS OUTS "schedule: {tile: 128}\n", 9, 18, "expected a list of 1 to 3 tile extents"},
	{HEAD OPS OUTS "schedule: {tile: [128, -64]}\n", 9, 24, "expected an integer from 1 to 65536 for a tile extent"},
	{HEAD OPS OUTS "schedule: {stages: 0}\n", 9, 20, "expected an integer from 1 to 16 for 'stages', saw '0'"},
	{HEAD OPS OUTS "schedule: {stages: 17}\n", 9, 20, "from 1 to 16"},
	{HEAD OPS OUTS "schedule: {persistent: yes}\n", 9, 24, "expected true or false for 'persistent'"},
	{HEAD OPS OUTS "schedule: {cluster: [2]}\n", 9, 21, "expected [x, y] for 'cluster', saw 1 entries"},
	{HEAD OPS OUTS "schedule: {cluster: [0, 1]}\n", 9, 22, "expected an integer from 1 to 16 for a cluster extent"},
	{HEAD OPS OUTS "schedule: {cluster: [8, 4]}\n", 9, 21, "cluster [8, 4] has 32 CTAs, more than the limit of 16"},
	{HEAD OPS OUTS "schedule: {consumers: both}\n", 9, 23, "expected cooperative or pingpong for 'consumers'"},
	{HEAD OPS OUTS "schedule: {signal: true}\n", 9, 20, "expected per_tile for 'signal', saw 'true'"},
};

static void
each_error_is_one_diagnostic_at_its_place(void **state)
{
	int i;

	for (i = 0; i < countof(bad); i++) {
		Fixture *t;
		char at[64], why[8192] = "";

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		snprintf(at, sizeof at, FILE_NAME ":%d:%d: error: ", bad[i].line, bad[i].col);
		if (read_str(t, bad[i].src) != -1 || t->c.nerrors != 1 || t->c.fusion)
			snprintf(why, sizeof why, "case %d: expected one error, got %d (%s)", i, t->c.nerrors, t->msg);
		else if (strncmp(t->msg, at, strlen(at)) != 0 || !strstr(t->msg, bad[i].what))
			snprintf(why, sizeof why, "case %d: expected '%s...%s', got '%s'", i, at, bad[i].what, t->msg);
		teardown((void **)&t);
		if (why[0])
			fail_msg("%s", why);
	}
	(void)state;
}

static void
diagnostic_text_with_caret(void **state)
{
	Fixture *t = *state;

	assert_int_equal(read_str(t, HEAD "ops:\n  - {out: c, op: gelo, in: [a]}\n" OUTS), -1);
	assert_string_equal(t->msg,
		FILE_NAME ":6:18: error: unknown op 'gelo': did you mean 'gelu'?\n"
		"    - {out: c, op: gelo, in: [a]}\n"
		"                   ^");
}

static void
invalid_utf8_and_nul_bytes(void **state)
{
	static const struct {
		const char *src;
		size_t len;
		const char *at;
	} cases[] = {
#define BYTES(s) s, sizeof s - 1
		{BYTES("fusion: f\n# caf\xc3\xa9 \xff\n"), ":2:8: error: invalid UTF-8 byte 0xff"},
		{BYTES("fusion: \xc0\xaf\n"), ":1:9: error: invalid UTF-8 byte 0xc0"},     /* overlong */
		{BYTES("fusion: \xed\xa0\x80\n"), ":1:9: error: invalid UTF-8 byte 0xed"}, /* surrogate */
		{BYTES("fusion: \xe2\x82\n"), ":1:9: error: invalid UTF-8 byte 0xe2"},     /* cut short */
		{BYTES("\xff\xfe" "f\0u\0"), ":1:1: error: invalid UTF-8 byte 0xff"},        /* UTF-16 */
		{BYTES("fusion: f\0\n"), ":1:10: error: NUL byte in the spec"},
		{BYTES("fusion: f\x01\n"), ":1:10: error: invalid YAML: control characters are not allowed"},
#undef BYTES
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Fixture *t;
		char why[8192] = "";

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (read_n(t, cases[i].src, cases[i].len) != -1 || t->c.nerrors != 1)
			snprintf(why, sizeof why, "case %d: expected one error, got %d", i, t->c.nerrors);
		else if (!strstr(t->msg, cases[i].at))
			snprintf(why, sizeof why, "case %d: expected '%s', got '%s'", i, cases[i].at, t->msg);
		teardown((void **)&t);
		if (why[0])
			fail_msg("%s", why);
	}
	(void)state;
}

/*
 * Lines end in LF or CRLF.  A lone CR, NEL, LS or PS, which YAML 1.1 reads
 * as a line break (in a comment they end it), is refused before parsing, at
 * its own line and column; a byte-order mark is not a column.
 */
static void
other_line_breaks(void **state)
{
	static const struct {
		const char *src;
		size_t len;
		const char *at;
	} cases[] = {
#define BYTES(s) s, sizeof s - 1
		{BYTES("fusion: f\rinputs: {}\r"), ":1:10: error: carriage return without a line feed"},
		{BYTES("fusion: f\r\ninputs: {}\r"), ":2:11: error: carriage return without a line feed"},
		{BYTES("a: 1\r\n\r\r\n"), ":2:1: error: carriage return without a line feed"},
		{BYTES("# x\xc2\x85" "fusion: f\n"), ":1:4: error: U+0085 (next line), which YAML reads as a line break"},
		{BYTES("a: 1\n# \xe2\x80\xa8- x\n"), ":2:3: error: U+2028 (line separator)"},
		{BYTES("\xef\xbb\xbf" "a: \xe2\x80\xa9"), ":1:4: error: U+2029 (paragraph separator)"},
		{BYTES("a: \"\xc3\xa9\xc2\x85\"\n"), ":1:6: error: U+0085"},
#undef BYTES
	};
	int i;

	for (i = 0; i < countof(cases); i++) {
		Fixture *t;
		char why[8192] = "";

		if (setup((void **)&t) < 0)
			fail_msg("setup");
		if (read_n(t, cases[i].src, cases[i].len) != -1 || t->c.nerrors != 1)
			snprintf(why, sizeof why, "case %d: expected one error, got %d", i, t->c.nerrors);
		else if (!strstr(t->msg, cases[i].at))
			snprintf(why, sizeof why, "case %d: expected '%s', got '%s'", i, cases[i].at, t->msg);
		teardown((void **)&t);
		if (why[0])
			fail_msg("%s", why);
	}
	(void)state;
}

/*
 * User text in a message is one line of at most 40 bytes, its control
 * characters escaped: a name written as a quoted YAML escape cannot add a
 * line, clear a screen or reorder the message.
 */
static void
user_text_in_messages(void **state)
{
	Fixture *t = *state;
	Buf b;
	int i;

	assert_int_equal(read_str(t, "fusion: \"a\\nb\\e[2J\\Lc\"\n" REST), -1);
	assert_string_equal(t->msg, FILE_NAME ":1:9: error: 'a...' is not a valid name for a fusion: "
	                            "use letters, digits and '_', not starting with a digit\n"
	                            "  fusion: \"a\\nb\\e[2J\\Lc\"\n"
	                            "          ^");
	assert_int_equal(read_str(t, "fusion: \"b\\e[2J\\Lc\"\n" REST), -1);
	assert_non_null(strstr(t->msg, "error: 'b\\x1b[2J\\u2028c' is not a valid name"));
	/* a megabyte name quoted in a message (the name cap's): its first 40 bytes */
	buf_init(&b, t->c.arena);
	buf_puts(&b, HEAD "ops:\n  - {out: c, op: exp, in: [");
	for (i = 0; i < 1 << 20; i++)
		buf_puts(&b, "q");
	buf_puts(&b, "]}\n" OUTS);
	assert_int_equal(read_str(t, buf_str(&b)), -1);
	assert_non_null(strstr(t->msg, ":6:28: error: 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq...' is too long for a "
	                               "tensor name: 1048576 characters, more than the limit of 64"));
	assert_true(strlen(t->msg) < 400);
}

static void
deep_nesting_and_alias_bombs(void **state)
{
	Fixture *t = *state;
	Buf b;
	int i;

	buf_init(&b, t->c.arena);
	buf_puts(&b, "fusion: f\nx: ");
	for (i = 0; i < 200000; i++)
		buf_puts(&b, "[");
	assert_int_equal(read_str(t, buf_str(&b)), -1);
	assert_non_null(strstr(t->msg, ":2:67: error: the spec nests deeper than 64 levels"));

	buf_init(&b, t->c.arena);
	buf_puts(&b, "a: &a [x, x]\n");
	for (i = 1; i < 40; i++)
		buf_printf(&b, "b%d: &b%d [*b%d, *b%d]\n", i, i, i - 1, i - 1);
	assert_int_equal(read_str(t, buf_str(&b)), -1);
	assert_int_equal(t->c.nerrors, 2);
	assert_non_null(strstr(t->msg, ":1:4: error: anchors and aliases are not supported"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(gemm_sizes_and_inputs, setup, teardown),
		cmocka_unit_test_setup_teardown(gemm_ops_and_outputs, setup, teardown),
		cmocka_unit_test_setup_teardown(gemm_schedule, setup, teardown),
		cmocka_unit_test_setup_teardown(names_are_interned, setup, teardown),
		cmocka_unit_test_setup_teardown(unlisted_size_is_unbound_at_first_use, setup, teardown),
		cmocka_unit_test_setup_teardown(scalar_input_and_literals, setup, teardown),
		cmocka_unit_test_setup_teardown(op_attributes_and_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(schedule_hints, setup, teardown),
		cmocka_unit_test_setup_teardown(empty_sizes_and_schedule_are_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(crlf_and_bom, setup, teardown),
		cmocka_unit_test_setup_teardown(bindings_override_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(binding_of_unused_size, setup, teardown),
		cmocka_unit_test_setup_teardown(big_maps_and_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(arena_handler_is_restored, setup, teardown),
		cmocka_unit_test(each_error_is_one_diagnostic_at_its_place),
		cmocka_unit_test_setup_teardown(diagnostic_text_with_caret, setup, teardown),
		cmocka_unit_test(invalid_utf8_and_nul_bytes),
		cmocka_unit_test(other_line_breaks),
		cmocka_unit_test_setup_teardown(user_text_in_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(deep_nesting_and_alias_bombs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
