#!/usr/bin/env python3
"""test_torch.py [--gpu]: wsfuse.torch_op, the torch custom op of a spec.

Without a GPU (make test runs it so): the op's schema, the fake implementation's
shapes and dtypes (meta tensors, symbolic sizes through make_fx), a
torch.compile(fullgraph=True) trace on meta tensors, the requires-grad error
raised before anything compiles or launches, empty inputs answered without a
kernel, and the registry of names.  With --gpu (tests/gpu/run.sh passes it) the
same on a CUDA device: results against torch, torch.compile(fullgraph=True)
with inductor and no graph break, CUDA graph capture and replay after a
warm-up call, empty inputs, and the requires-grad error.

Without torch every test is skipped, and without --gpu or a CUDA device the
GPU tests are; the exit status is then 0.  Under a sanitized library (ASan
preloaded) torch is not loaded and everything is skipped.  Prints TAP, one
line per test, for tests/run_unit.sh.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = "--gpu" in sys.argv[1:]

if "asan" in os.environ.get("LD_PRELOAD", ""):
    torch, NO_TORCH = None, "a sanitized library: torch is not loaded under ASan"
else:
    try:
        import torch
        NO_TORCH = None
    except ImportError:
        torch, NO_TORCH = None, "no torch"

# the binding's test spec: x + b (b in f32), relu, stored as bf16
BIND = """\
fusion: bind
sizes: {M: 64, N: 128}
inputs:
  x: {dtype: bf16, shape: [M, N]}
  b: {dtype: f32, shape: [N]}
ops:
  - {out: y, op: add, in: [x, b]}
  - {out: z, op: relu, in: [y]}
outputs:
  z: {dtype: bf16}
"""

# silu(x + bias) * y, all bf16: the pointwise bench case
MATMUL = """\
fusion: mm
sizes: {M: 256, N: 512, K: 128}
inputs:
  a: {dtype: bf16, shape: [M, K]}
  b: {dtype: bf16, shape: [N, K]}
ops:
  - {out: y, op: matmul, in: [a, b], transpose_b: true}
outputs:
  y: {dtype: bf16}
"""

BSM = """\
fusion: bsm
sizes: {M: 512, N: 4096}
inputs:
  x:    {dtype: bf16, shape: [M, N]}
  bias: {dtype: bf16, shape: [N]}
  y:    {dtype: bf16, shape: [M, N]}
ops:
  - {out: h, op: add, in: [x, bias]}
  - {out: s, op: silu, in: [h]}
  - {out: o, op: mul, in: [s, y]}
outputs:
  o: {dtype: bf16}
"""

RMSNORM = """\
fusion: rms
sizes: {M: 64, N: 4096}
inputs:
  x: {dtype: bf16, shape: [M, N]}
  w: {dtype: bf16, shape: [N]}
ops:
  - {out: y, op: rmsnorm, in: [x, w], eps: 1.0e-5}
outputs:
  y: {dtype: bf16}
"""

# softmax rows of f16 (tests/gpu/ragged_row.py's first case)
SOFTMAX = """\
fusion: sm
sizes: {M: 64, N: 1024}
inputs:
  x: {dtype: f16, shape: [M, N]}
ops:
  - {out: y, op: softmax, in: [x]}
outputs:
  y: {dtype: f16}
"""

# two outputs: softmax rows [M, N] and w * 2 [N] (tests/gpu/specs/norm_row_output.yaml)
TWO = os.path.join(HERE, "..", "gpu", "specs", "norm_row_output.yaml")


def gpu_test(fn):
    fn.gpu = True
    return fn


def expect_error(fn, *words, kind=wsfuse.Error):
    """Calls FN; it must raise KIND with every one of WORDS in its text.  Returns the text."""
    try:
        fn()
    except kind as e:
        text = str(e)
        for w in words:
            assert w in text, f"{w!r} not in: {text}"
        return text
    raise AssertionError(f"no {kind.__name__}")


def meta(*shape, dtype=None):
    return torch.empty(shape, device="meta", dtype=dtype or torch.bfloat16)


# ---- without a GPU ----

def test_schema_and_names():
    op = wsfuse.torch_op(BIND)
    assert str(torch.ops.wsfuse.bind.default._schema) == "wsfuse::bind(Tensor x, Tensor b) -> Tensor"
    assert wsfuse.torch_op(BIND) is op   # the same spec again: the same op
    op2 = wsfuse.torch_op(TWO, name="wsfuse_test::two")
    assert str(op2._opoverload._schema) == "wsfuse_test::two(Tensor x, Tensor w) -> (Tensor, Tensor)"
    expect_error(lambda: wsfuse.torch_op(RMSNORM, name="bind"), "wsfuse::bind", "registered already")
    expect_error(lambda: wsfuse.torch_op(BIND, sizes={"M": 8}), "registered already", "name=")
    expect_error(lambda: wsfuse.torch_op("no/such/spec.yaml"), "no/such/spec.yaml", "WSF_ERR_IO")
    expect_error(lambda: wsfuse.torch_op(BIND.replace("relu", "relux"), name="wsfuse_test::bad"),
                 "did you mean 'relu'")


# a KV-cache append in place (tests/gpu/specs/view_kv_append.yaml): cache.index_copy_(2, pos, k * 0.5)
KV = os.path.join(HERE, "..", "gpu", "specs", "view_kv_append.yaml")


def test_in_place_schema():
    op = wsfuse.torch_op(KV, name="wsfuse_test::kv")
    assert str(op._opoverload._schema) == "wsfuse_test::kv(Tensor(a!) cache, Tensor k, Tensor pos) -> ()"
    assert op(meta(2, 8, 64, 128), meta(2, 8, 4, 128), meta(4, dtype=torch.int64)) is None   # nothing returned
    rope = wsfuse.torch_op(os.path.join(HERE, "..", "gpu", "specs", "view_rope_inplace.yaml"), name="wsfuse_test::ri")
    assert str(rope._opoverload._schema) == "wsfuse_test::ri(Tensor(a!) x, Tensor cos, Tensor sin) -> ()"


def test_fake_shapes_and_dtypes():
    op = wsfuse.torch_op(BIND, name="wsfuse_test::fake")
    z = op(meta(7, 24), meta(24, dtype=torch.float32))
    assert z.device.type == "meta" and z.shape == (7, 24) and z.dtype == torch.bfloat16, z
    y, w2 = wsfuse.torch_op(TWO, name="wsfuse_test::fake2")(meta(5, 64), meta(64))
    assert y.shape == (5, 64) and w2.shape == (64,) and w2.dtype == torch.bfloat16, (y, w2)
    assert not op.wsfuse.kernels   # shapes come from the spec: nothing compiled to a cubin


def test_fake_errors():
    op = wsfuse.torch_op(BIND, name="wsfuse_test::fake_err")
    f32 = torch.float32
    expect_error(lambda: op(meta(7, 24), meta(25, dtype=f32)), "argument 'b': dim 0 is 25",
                 "size N is 24")
    expect_error(lambda: op(meta(7, 24, dtype=f32), meta(24, dtype=f32)), "input 'x' is torch.float32",
                 "bf16")
    expect_error(lambda: op(meta(24), meta(24, dtype=f32)), "argument 'x': rank 1, expected 2")
    expect_error(lambda: op(meta(7, 24)), "argument 'b'", kind=Exception)   # torch checks the schema


def test_fake_symbolic_sizes():
    from torch.fx.experimental.proxy_tensor import make_fx
    op = wsfuse.torch_op(BSM, name="wsfuse_test::symbolic")
    x = torch.empty(6, 16, dtype=torch.bfloat16)
    gm = make_fx(lambda x, b, y: op(x * 2, b, y), tracing_mode="symbolic")(x, x[0], x)
    node = next(n for n in gm.graph.nodes if "wsfuse_test.symbolic" in str(n.target))
    out, xin = node.meta["val"], next(iter(gm.graph.nodes)).meta["val"]
    assert str(out.shape) == str(xin.shape) and "s" in str(out.shape), (out.shape, xin.shape)
    assert not op.wsfuse.kernels


def test_compile_fullgraph_on_meta():
    from torch._dynamo.testing import CompileCounterWithBackend
    op = wsfuse.torch_op(BSM, name="wsfuse_test::compiled_meta")
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")   # AOTAutograd, then the graph run as it is
    fn = torch.compile(lambda x, b, y: op(x * 2, b, y).float().sum(-1), fullgraph=True, backend=cnt)
    for m, n in ((32, 64), (48, 64), (16, 128)):   # the second shape recompiles with symbolic sizes
        r = fn(meta(m, n), meta(n), meta(m, n))     # meta tensors: the op runs its fake implementation
        assert r.shape == (m,) and r.dtype == torch.float32, r
    assert 1 <= cnt.frame_count <= 3, cnt.frame_count
    assert all("wsfuse_test.compiled_meta" in g.code for g in cnt.graphs), [g.code for g in cnt.graphs]
    assert not op.wsfuse.kernels


TOPK = """\
fusion: topk_grad
sizes: {M: 8, N: 64}
inputs:
  x: {dtype: bf16, shape: [M, N]}
ops:
  - {out: [v, i], op: topk, in: [x], k: 4}
outputs:
  v: {}
  i: {}
"""


def test_requires_grad_is_an_error_where_there_is_no_backward():
    op = wsfuse.torch_op(TOPK, name="wsfuse_test::grad")
    assert op.wsfuse.backward is None   # topk has no gradient rule yet
    x = torch.zeros(8, 64, dtype=torch.bfloat16, requires_grad=True)
    expect_error(lambda: op(x), "WSF_ERR_UNSUPPORTED", "input 'x' requires grad", "no backward",
                 "the gradient of 'topk' is not implemented yet", "torch.no_grad()", "x.detach()")
    assert not op.wsfuse.kernels   # refused before any compile or launch
    with torch.no_grad():   # no graph is recorded: the call goes on, to the launch that wants CUDA
        expect_error(lambda: op(x), "input 'x' is on cpu, expected a CUDA tensor")
    with torch.inference_mode():
        expect_error(lambda: op(x), "expected a CUDA tensor")
    # torch.compile meets it while tracing (dynamo wraps it, the text stays)
    fn = torch.compile(lambda x: op(x), fullgraph=True, backend="eager")
    expect_error(lambda: fn(meta(8, 64).requires_grad_()), "input 'x' requires grad", kind=Exception)


def test_backward_op_and_its_trace():
    from torch._dynamo.testing import CompileCounterWithBackend
    op = wsfuse.torch_op(BIND, name="wsfuse_test::grad_bind")
    back = op.wsfuse.backward
    assert back is not None and "wsfuse_test::grad_bind_backward" in str(back._opoverload._schema), back
    assert back.wsfuse.backward is None   # no double backward yet
    # AOTAutograd traces the forward and the backward with the ops' fake implementations
    cnt = CompileCounterWithBackend("aot_eager")
    fn = torch.compile(lambda x, b: op(x, b).float().sum(), fullgraph=True, backend=cnt)
    x, b = meta(32, 64).requires_grad_(), meta(64, dtype=torch.float32).requires_grad_()
    gx, gb = torch.autograd.grad(fn(x, b), (x, b))
    assert gx.shape == x.shape and gx.dtype == x.dtype and gb.shape == b.shape and gb.dtype == b.dtype
    assert not op.wsfuse.kernels and not back.wsfuse.kernels


def test_empty_inputs_launch_nothing():
    op = wsfuse.torch_op(BIND, name="wsfuse_test::empty")
    for m, n in ((0, 24), (7, 0), (0, 0)):
        z = op(torch.empty(m, n, dtype=torch.bfloat16), torch.empty(n))   # CPU: a launch would fail
        assert z.shape == (m, n) and z.dtype == torch.bfloat16 and z.device.type == "cpu", z
    assert not op.wsfuse.kernels
    two = wsfuse.torch_op(TWO, name="wsfuse_test::empty2")
    y, w2 = two(torch.empty(5, 0, dtype=torch.bfloat16), torch.empty(0, dtype=torch.bfloat16))
    assert y.shape == (5, 0) and w2.shape == (0,)
    # no rows, but w * 2 has elements: computing nothing would leave them unwritten
    expect_error(lambda: two(torch.empty(0, 64, dtype=torch.bfloat16), torch.zeros(64, dtype=torch.bfloat16)),
                 "output 'w2' would be [64] from empty inputs")
    # torch's own checks of a custom op (schema, fake against real, AOT with dynamic shapes)
    x = torch.empty(0, 64, dtype=torch.bfloat16)
    result = torch.library.opcheck(op, (x, torch.zeros(64)))
    assert all(v == "SUCCESS" for v in result.values()), result


def test_kernel_per_size_binding():
    # what a call compiles (NVRTC, no GPU): the kernel at the sizes the inputs imply, else
    # the spec's own when those cannot be compiled (one row 1001 wide: no 16-byte rows)
    state = wsfuse.torch_op(SOFTMAX, name="wsfuse_test::per_size").wsfuse
    k = state._compile(0, {"M": 32, "N": 2048})
    assert k.cubin()[:4] == b"\x7fELF" and k.arg_names == ("x", "y")
    assert [state.spec._lib.wsf_kernel_arg_dim(k._ptr, 0, d) for d in (0, 1)] == [32, 2048]
    ragged = state._compile(0, {"M": 1, "N": 1001})
    assert state.base[0] is ragged
    assert [ragged._lib.wsf_kernel_arg_dim(ragged._ptr, 0, d) for d in (0, 1)] == [64, 1024]


# ---- on a GPU (--gpu) ----

TOL = dict(atol=1e-2, rtol=1.6e-2)   # bf16 outputs: about an ulp from the f32 reference


def randn(*shape, dtype=None):
    return torch.randn(shape, device="cuda", dtype=dtype or torch.bfloat16)


def bsm_ref(x, bias, y):
    return (torch.nn.functional.silu(x.float() + bias.float()) * y.float()).to(torch.bfloat16)


def bsm_inputs(m, n):
    return randn(m, n), randn(n), randn(m, n)


@gpu_test
def test_gpu_eager_against_torch():
    op = wsfuse.torch_op(BSM, name="wsfuse_test::eager")
    for m, n in ((512, 4096), (256, 1024), (512, 4096)):
        ins = bsm_inputs(m, n)
        o = op(*ins)
        torch.testing.assert_close(o, bsm_ref(*ins), **TOL)
    assert len(op.wsfuse.kernels) == 2, list(op.wsfuse.kernels)   # one kernel per size binding
    # a transposed view: a kernel compiled for it (option layout: x's memory read as it is, through shared
    # memory); an offset view that is not 16-byte aligned: copied; the same results
    x, bias, y = bsm_inputs(256, 1024)
    xt = x.t().contiguous().t()
    flat = randn(256 * 1024 + 1)
    ys = flat[1:].view(256, 1024)
    torch.testing.assert_close(op(xt, bias, ys), bsm_ref(x, bias, ys), **TOL)
    assert [key[2] for key in op.wsfuse.kernels if key[2]] == ["x=1,0"], list(op.wsfuse.kernels)
    yt = randn(1024, 256).t()
    torch.testing.assert_close(op(xt, bias, yt), bsm_ref(x, bias, yt), **TOL)
    # a matmul's operand given transposed: its other layout (the transpose flag flips), no copy
    mm = wsfuse.torch_op(MATMUL, name="wsfuse_test::mm")
    a, b = randn(256, 128), randn(512, 128) / 16
    want = (a.float() @ b.float().t()).to(torch.bfloat16)
    torch.testing.assert_close(mm(a, b), want, **TOL)
    at, bt = a.t().contiguous().t(), b.t().contiguous().t()
    torch.testing.assert_close(mm(at, bt), want, **TOL)
    assert [key[2] for key in mm.wsfuse.kernels if key[2]] == ["a=1,0;b=1,0"], list(mm.wsfuse.kernels)
    # slices of the last dim (rows wider than a row): passed in uncopied where the kernel reads them
    # through tensor maps of their rows, and the result is eager torch's
    wide_x, wide_y = randn(256, 3072), randn(256, 2048)
    xs, ysl = wide_x[:, 1024:2048], wide_y[:, :1024]
    k = next(iter(op.wsfuse.kernels.values()))
    assert not xs.is_contiguous() and k.row_strided(0) and k.row_strided(2)
    torch.testing.assert_close(op(xs, bias, ysl), bsm_ref(xs, bias, ysl), **TOL)
    # a dim expanded from none (stride 0): a kernel compiled for it (option layout y=*,0) reads y's one row
    x = randn(256, 1024)
    ye = randn(1, 1024).expand(256, 1024)
    torch.testing.assert_close(op(x, bias, ye), bsm_ref(x, bias, ye), **TOL)
    assert "y=*,0" in [key[2] for key in op.wsfuse.kernels], list(op.wsfuse.kernels)
    yc = randn(256, 1).expand(256, 1024)   # a column: y=0,*
    torch.testing.assert_close(op(x, bias, yc), bsm_ref(x, bias, yc), **TOL)
    rms = wsfuse.torch_op(RMSNORM, name="wsfuse_test::rms")
    for m, n in ((64, 4096), (64, 1024)):
        x, w = randn(m, n), randn(n)
        want = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
        torch.testing.assert_close(rms(x, w), want.to(torch.bfloat16), **TOL)
    two = wsfuse.torch_op(TWO, name="wsfuse_test::two_gpu")
    x, w = randn(64, 1024), randn(1024)
    y, w2 = two(x, w)
    torch.testing.assert_close(y, torch.softmax(x.float(), -1).to(torch.bfloat16), **TOL)
    torch.testing.assert_close(w2, (w.float() * 2).to(torch.bfloat16), **TOL)


@gpu_test
def test_gpu_in_place():
    """Outputs written into an input (alias): the op changes that tensor, as torch's in-place ops do."""
    op = wsfuse.torch_op(KV, name="wsfuse_test::kv_gpu")
    cache = randn(2, 8, 100, 128)
    k = randn(2, 8, 7, 128)
    pos = torch.randperm(100, device="cuda")[:7]
    want = cache.clone().index_copy_(2, pos, (k.float() * 0.5).to(torch.bfloat16))
    before = cache.data_ptr()
    assert op(cache, k, pos) is None
    assert cache.data_ptr() == before and torch.equal(cache, want), (cache - want).abs().max()
    strided = cache.transpose(2, 3).contiguous().transpose(2, 3)   # the same shape, not contiguous
    expect_error(lambda: op(strided, k, pos), "written in place", "contiguous")
    rope = wsfuse.torch_op(os.path.join(HERE, "..", "gpu", "specs", "view_rope_inplace.yaml"),
                           name="wsfuse_test::ri_gpu")
    x, cos, sin = randn(300, 32, 128), randn(300, 1, 128), randn(300, 1, 128)
    xf = x.float()
    rot = torch.cat([-xf[..., 64:], xf[..., :64]], -1)
    want = (xf * cos.float() + rot * sin.float()).to(torch.bfloat16).float()
    rope(x, cos, sin)
    err = ((x.float() - want).norm() / want.norm()).item()
    assert err < 1e-2, err
    # the python binding: the aliased output is the input itself
    ctx = wsfuse.Context()
    kern = ctx.compile_file(KV)
    cache = randn(2, 8, 512, 128)
    pos = torch.randperm(512, device="cuda")[:16].to(torch.int64)
    k = randn(2, 8, 16, 128)
    want = cache.clone().index_copy_(2, pos, (k.float() * 0.5).to(torch.bfloat16))
    assert kern(cache, k, pos) is cache and torch.equal(cache, want)


@gpu_test
def test_gpu_ragged_row():
    # a row 1001 wide cannot be compiled for (rows of 16-byte multiples), but the kernel
    # compiled at the spec's own sizes takes it: the op falls back to that one
    op = wsfuse.torch_op(SOFTMAX, name="wsfuse_test::ragged")
    x = randn(1, 1001, dtype=torch.float16)
    y = op(x)
    err = ((y.float() - torch.softmax(x.float(), -1)).norm() / torch.softmax(x.float(), -1).norm()).item()
    assert err < 1e-2, err   # NaN (an unwritten element) fails too
    assert op.wsfuse.base, "no fallback to the spec's sizes"


@gpu_test
def test_gpu_opcheck():
    op = wsfuse.torch_op(BSM, name="wsfuse_test::opcheck")
    result = torch.library.opcheck(op, bsm_inputs(256, 1024))
    assert all(v == "SUCCESS" for v in result.values()), result


@gpu_test
def test_gpu_compile_fullgraph_no_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import counters
    op = wsfuse.torch_op(BSM, name="wsfuse_test::compiled")

    def model(x, bias, y):
        return op(x * 2, bias, y).float().sum(-1)
    torch._dynamo.reset()
    counters.clear()
    cnt = CompileCounterWithBackend("inductor")
    compiled = torch.compile(model, fullgraph=True, backend=cnt)
    for m, n in ((512, 4096), (256, 4096), (128, 4096)):   # the second recompiles with a symbolic M
        ins = bsm_inputs(m, n)
        got = compiled(*ins)
        want = bsm_ref(ins[0] * 2, *ins[1:]).float().sum(-1)
        err = ((got - want).norm() / want.norm()).item()
        assert err < 1e-2, (m, n, err)
        torch.testing.assert_close(got, model(*ins), atol=1e-2, rtol=1e-3)   # eager: the same kernel
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert 1 <= cnt.frame_count <= 2, cnt.frame_count
    assert all("wsfuse_test.compiled" in g.code for g in cnt.graphs), [g.code for g in cnt.graphs]


@gpu_test
def test_gpu_cuda_graph_capture_and_replay():
    op = wsfuse.torch_op(BSM, name="wsfuse_test::graphed")
    x, bias, y = bsm_inputs(256, 2048)
    side = torch.cuda.Stream()   # warm up on a side stream, as torch's CUDA graph docs do
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        op(x, bias, y)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o = op(x, bias, y)
        o2 = o * 2   # a torch op after it, in the same graph
    for _ in range(3):   # new data in the captured inputs, then a replay
        x.copy_(randn(256, 2048))
        bias.copy_(randn(2048))
        y.copy_(randn(256, 2048))
        g.replay()
        torch.cuda.synchronize()
        want = bsm_ref(x, bias, y)
        torch.testing.assert_close(o, want, **TOL)
        torch.testing.assert_close(o2, (want.float() * 2).to(torch.bfloat16), **TOL)
    # sizes never run before: refused during capture, fine after it
    ins = bsm_inputs(128, 2048)
    expect_error(lambda: _capture(op, ins), "inside CUDA graph capture", "before capturing")
    torch.cuda.synchronize()
    torch.testing.assert_close(op(*ins), bsm_ref(*ins), **TOL)


def _capture(op, ins):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ins[0] * 2   # the graph is not empty when the op raises: capture ends normally
        op(*ins)


@gpu_test
def test_gpu_empty_inputs_launch_nothing():
    op = wsfuse.torch_op(BSM, name="wsfuse_test::empty_gpu")
    for m, n in ((0, 4096), (256, 0)):
        o = op(randn(m, n), randn(n), randn(m, n))
        assert o.shape == (m, n) and o.is_cuda and o.dtype == torch.bfloat16, o
    assert not op.wsfuse.kernels   # nothing compiled, so nothing launched
    torch.cuda.synchronize()


@gpu_test
def test_gpu_backward_against_torch_autograd():
    """bias + silu * y: every input's gradient against torch autograd of the formula on the same
    fresh inputs, eagerly, under torch.compile(fullgraph=True) and in a CUDA graph; one gradient
    needed, or all; a parameter trains a step."""
    op = wsfuse.torch_op(BSM, name="wsfuse_test::grad_gpu")
    for m, n in ((512, 4096), (256, 1024)):
        x, bias, y = bsm_inputs(m, n)
        g = randn(m, n)
        xs = [t.clone().requires_grad_() for t in (x, bias, y)]
        rs = [t.clone().requires_grad_() for t in (x, bias, y)]
        o = op(*xs)
        assert o.requires_grad
        got = torch.autograd.grad(o, xs, g)
        want = torch.autograd.grad(bsm_ref(*rs), rs, g)
        for a, w in zip(got, want):
            assert a.shape == w.shape and a.dtype == w.dtype, (a.shape, w.shape, a.dtype, w.dtype)
            torch.testing.assert_close(a.float(), w.float(), atol=5e-2, rtol=3e-2)   # bf16 sums over rows
        (gb,) = torch.autograd.grad(op(x, rs[1], y), (rs[1],), g)   # one input requires grad
        torch.testing.assert_close(gb.float(), want[1].float(), atol=5e-2, rtol=3e-2)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, b, y: op(x, b, y).float().square().mean(), fullgraph=True)
    w = torch.nn.Parameter(bias.clone())
    before = w.detach().clone()
    opt = torch.optim.SGD([w], lr=0.1)
    loss = compiled(x, w, y)
    loss.backward()
    ref = torch.nn.Parameter(bias.clone())
    bsm_ref(x, ref, y).float().square().mean().backward()
    torch.testing.assert_close(w.grad.float(), ref.grad.float(), atol=5e-3, rtol=3e-2)
    opt.step()
    assert not torch.equal(w.detach(), before)
    # a CUDA graph of forward and backward, after a warm-up at these sizes
    xg = x.clone().requires_grad_()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.autograd.grad(op(xg, bias, y), (xg,), g)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (gx,) = torch.autograd.grad(op(xg, bias, y), (xg,), g)
    graph.replay()
    torch.cuda.synchronize()
    (want_x,) = torch.autograd.grad(bsm_ref(xg, bias, y), (xg,), g)
    torch.testing.assert_close(gx.float(), want_x.float(), atol=5e-2, rtol=3e-2)


TESTS = [v for n, v in sorted(globals().items()) if n.startswith("test_")]


def skip_reason(t):
    if NO_TORCH:
        return NO_TORCH
    if getattr(t, "gpu", False):
        if not GPU:
            return "a GPU test (run with --gpu; make check-gpu does)"
        if not torch.cuda.is_available():
            return "no CUDA device"
    return None


if __name__ == "__main__":
    print(f"1..{len(TESTS)}")
    failed = 0
    for i, t in enumerate(TESTS, 1):
        why = skip_reason(t)
        if why:
            print(f"ok {i} # SKIP {t.__name__}: {why}")
            continue
        try:
            t()
            print(f"ok {i} - {t.__name__}")
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
            failed += 1
            print(f"not ok {i} - {t.__name__}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    if NO_TORCH:
        print(f"# skipped: {NO_TORCH}")
    sys.exit(1 if failed else 0)
