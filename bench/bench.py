#!/usr/bin/env python3
"""wsfuse against torch eager, torch.compile and a device copy, in one process on one GPU.

Method (docs/perf.md): every case runs on random inputs (never zeros) larger than L2;
wsfuse's outputs are poisoned with NaN, computed, and checked against the eager
expression evaluated in float32 on the same inputs (wsfuse computes in float32 and
rounds once at the output, so that is the reference it should match to an ulp); then each variant is
timed with triton.testing.do_bench(warmup=25, rep=200, return_mode="median"), or a
median of CUDA events when triton is missing.  The copy column is a device-to-device
copy moving the same number of bytes (half read, half written): the bandwidth ceiling.

The matmul cases (family matmul) count FLOPs and have peers of their own: eager is cuBLAS
(F.linear, and for gemm_bias_gelu a separate gelu after it), cuBLASLt's fused bias+gelu
epilogue (torch._addmm_activation) and quack's GEMMs where quack imports (docs/python.md says
how to load it).  Every variant's result, not only wsfuse's, is checked against the float32
reference (TF32 off) with a relative tolerance that grows with K; a peer whose result is wrong
is reported and not timed.  Their table gives TFLOP/s (2*M*N*K / time) and peer/wsfuse.

    python3 bench/bench.py                      # every case, full size
    python3 bench/bench.py --quick              # small sizes: a smoke run
    python3 bench/bench.py --cases relu_chain_bf16 --json out.json
    python3 bench/bench.py --family matmul      # one family's cases: pointwise, reduction or matmul
    python3 bench/bench.py --list               # the cases, their families and sizes; no torch, no GPU
    python3 bench/bench.py --compile-only       # spec -> cubin for every case; no torch, no GPU
    python3 bench/bench.py --rounds 8 --cases relu_chain_f32   # + 8 interleaved rounds against torch.compile
    python3 bench/bench.py --json out.json --plot out.png        # + each case's rates against its roofs
    python3 bench/bench.py --from-json out.json --plot out.png   # the table and plot of earlier results

--json's file starts with where the figures came from (provenance): the commit and whether the
tree was dirty, the command line, the date, wsfuse's version and library, NVRTC, the driver, the
GPU and its power limit, and the versions of CUDA, torch, triton and quack.

To add a case, add a row to CASES.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import shlex
import statistics
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import wsfuse  # noqa: E402

torch = None   # imported by main() when a run needs it: --compile-only and --from-json do not
FAMILIES = ("pointwise", "reduction", "matmul")


def io_bytes(inputs, outputs):
    """Bytes a fused kernel must move: each input read once, each output written once."""
    return sum(t.numel() * t.element_size() for t in (*inputs, *outputs))


@dataclass
class Case:
    name: str
    spec: str                 # YAML; $dt is replaced by the dtype, sizes are bound from `sizes`
    dtype: str                # spec dtype: bf16, f16, f32
    sizes: dict               # size bindings of the full run
    quick: dict               # size bindings of --quick
    inputs: Callable          # (sizes, dtype) -> tuple of torch tensors, in spec input order
    eager: Callable           # the torch expression: eager(*inputs) -> tensor or tuple
    bytes: Callable = io_bytes  # (inputs, outputs) -> bytes moved
    flops: Callable = None      # sizes -> floating-point operations, where tensor cores bound the case
    family: str = "pointwise"   # one of FAMILIES, for --family
    peers: Callable = None      # (*inputs) -> {name: fn}: peers beyond eager and torch.compile that run here
    tolerance: Callable = None  # sizes -> the relative tolerance of check_close, which then checks every variant
    bars: dict = None           # {peer: the peer/wsfuse ratio wsfuse must reach} (issue 17; --rounds times them)
    replay: bool = False        # time by CUDA-graph replays: a kernel shorter than a launch from Python

    def spec_text(self):
        return string.Template(self.spec).substitute(dt=self.dtype, name=self.name)


RELU_CHAIN = """\
fusion: $name
sizes: {N: 268435456}
inputs:
  a: {dtype: $dt, shape: [N]}
  b: {dtype: $dt, shape: [N]}
  c: {dtype: $dt, shape: [N]}
ops:
  - {out: t, op: mul, in: [a, b]}
  - {out: u, op: add, in: [t, c]}
  - {out: o, op: relu, in: [u]}
outputs:
  o: {dtype: $dt}
"""

BIAS_SILU_MUL = """\
fusion: $name
sizes: {M: 65536, N: 4096}
inputs:
  x:    {dtype: $dt, shape: [M, N]}
  bias: {dtype: $dt, shape: [N]}
  y:    {dtype: $dt, shape: [M, N]}
ops:
  - {out: h, op: add, in: [x, bias]}
  - {out: s, op: silu, in: [h]}
  - {out: o, op: mul, in: [s, y]}
outputs:
  o: {dtype: $dt}
"""


LAYERNORM = """\
fusion: $name
sizes: {M: 32768, N: 4096}
inputs:
  x: {dtype: $dt, shape: [M, N]}
  w: {dtype: $dt, shape: [N]}
  b: {dtype: $dt, shape: [N]}
ops:
  - {out: y, op: layernorm, in: [x, w, b], eps: 1.0e-5}
outputs:
  y: {dtype: $dt}
"""

RMSNORM = """\
fusion: $name
sizes: {M: 32768, N: 4096}
inputs:
  x: {dtype: $dt, shape: [M, N]}
  w: {dtype: $dt, shape: [N]}
ops:
  - {out: y, op: rmsnorm, in: [x, w], eps: 1.0e-5}
outputs:
  y: {dtype: $dt}
"""

SOFTMAX = """\
fusion: $name
sizes: {M: 32768, N: 4096}
inputs:
  x: {dtype: $dt, shape: [M, N]}
ops:
  - {out: y, op: softmax, in: [x]}
outputs:
  y: {dtype: $dt}
"""


GEMM = """\
fusion: $name
sizes: {M: 8192, N: 8192, K: 8192}
inputs:
  x: {dtype: $dt, shape: [M, K]}
  w: {dtype: $dt, shape: [N, K]}
ops:
  - {out: y, op: matmul, in: [x, w], transpose_b: true}
outputs:
  y: {dtype: $dt}
"""

# the example as users get it, its schedule included; its name and dtype are its own
with open(os.path.join(ROOT, "examples", "gemm_bias_gelu.yaml")) as _f:
    GEMM_BIAS_GELU = _f.read()
with open(os.path.join(ROOT, "examples", "swiglu.yaml")) as _f:
    SWIGLU = _f.read()


def torch_dtype(name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def randn(dtype, *shape):
    return torch.randn(shape, device="cuda", dtype=torch_dtype(dtype))


def _relu_chain(a, b, c):
    return torch.relu(a * b + c)


def _bias_silu_mul(x, bias, y):
    return torch.nn.functional.silu(x + bias) * y


def _layernorm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def _rmsnorm(x, w):
    if hasattr(torch.nn.functional, "rms_norm"):   # torch >= 2.4: torch's own
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-5)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _gemm(x, w):
    return torch.nn.functional.linear(x, w)


def _gemm_bias_gelu(x, w, b):
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate="tanh")


_quack = None


def quack_gemm_interface():
    """quack.gemm_interface, or None where quack does not import (docs/python.md: how to load it)."""
    global _quack
    if _quack is None:
        try:
            from quack import gemm_interface
            _quack = gemm_interface
        except Exception as e:   # not installed, or its CUTLASS DSL does not load here
            print(f"note: quack does not import ({type(e).__name__}: {e}); its columns are left out",
                  file=sys.stderr)
            _quack = False
    return _quack or None


def last(x):
    """The last of a tuple (quack's gemm_act returns (preact, postact) in some versions), or X."""
    return x[-1] if isinstance(x, (tuple, list)) else x


def _gemm_peers(x, w):
    q = quack_gemm_interface()
    return {"quack": lambda: q.gemm(x, w.t(), tuned=False)} if q else {}


def _gemm_bias_gelu_peers(x, w, b):
    peers = {}
    if hasattr(torch, "_addmm_activation"):   # bias + gelu(tanh) in cuBLASLt's epilogue
        peers["cublaslt"] = lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)
    q = quack_gemm_interface()
    if q:
        peers["quack"] = lambda: last(q.gemm_act(x, w.t(), bias=b, activation="gelu_tanh_approx",
                                                 store_preact=False, tuned=False))
    return peers


def _swiglu(x, wg, wu):
    return torch.nn.functional.silu(torch.nn.functional.linear(x, wg)) * torch.nn.functional.linear(x, wu)


def _swiglu_inputs(s, dt):
    """X [M, K] and the gate and up weights [F, K], scaled by 1/sqrt(K)."""
    return (randn(dt, s["M"], s["K"]), randn(dt, s["F"], s["K"]) * s["K"] ** -0.5,
            randn(dt, s["F"], s["K"]) * s["K"] ** -0.5)


def _gemm_inputs(bias):
    """X [M, K], W [N, K] scaled by 1/sqrt(K) (outputs of about unit size, where gelu bends), and a bias."""
    def inputs(s, dt):
        x, w = randn(dt, s["M"], s["K"]), randn(dt, s["N"], s["K"]) * s["K"] ** -0.5
        return (x, w, randn(dt, s["N"])) if bias else (x, w)
    return inputs


def gemm_tolerance(s):
    """The relative error a bf16 GEMM of depth K may show against the float32 reference: bf16's
    rounding (2^-9) up to three times over, for a peer that rounds the product, then the biased sum,
    then the gelu (a bias that cancels the product leaves the first rounding large), with room to
    spare, and float32's sums over K terms (2^-24 each)."""
    return 2 ** -6 + s["K"] * 2 ** -24


def _gemm_case(name, spec, m, n, k, quick, bias, bars=None, replay=False):
    return Case(name, spec, "bf16", {"M": m, "N": n, "K": k}, quick, _gemm_inputs(bias),
                _gemm_bias_gelu if bias else _gemm, flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
                family="matmul", peers=_gemm_bias_gelu_peers if bias else _gemm_peers,
                tolerance=gemm_tolerance, bars=bars, replay=replay)


def _norm_inputs(n):
    """X [M, N] and N-long weight rows, for the normalization cases."""
    return lambda s, dt: (randn(dt, s["M"], s["N"]), *(randn(dt, s["N"]) for _ in range(n)))


def _relu_case(dt, tag="", hint=""):
    """relu(a*b+c) over 2^28 elements; TAG and HINT name and give a schedule variant."""
    return Case(f"relu_chain_{dt}{'_' + tag if tag else ''}",
                RELU_CHAIN + (f"schedule: {{{hint}}}\n" if hint else ""), dt, {"N": 1 << 28}, {"N": 1 << 20},
                lambda s, dt: tuple(randn(dt, s["N"]) for _ in "abc"), _relu_chain)


def _bsm_case(dt, tag="", hint=""):
    """silu(x+bias)*y over 65536x4096; TAG and HINT name and give a schedule variant."""
    return Case(f"bias_silu_mul_{dt}{'_' + tag if tag else ''}",
                BIAS_SILU_MUL + (f"schedule: {{{hint}}}\n" if hint else ""), dt,
                {"M": 65536, "N": 4096}, {"M": 512, "N": 4096},
                lambda s, dt: (randn(dt, s["M"], s["N"]), randn(dt, s["N"]), randn(dt, s["M"], s["N"])),
                _bias_silu_mul)


VECTOR, WS, S4, T32, P = (("vector", "store: vector"), ("ws", "warp_specialize: true"),
                          ("s4", "stages: 4"), ("t32", "tile: [32, 256]"), ("p", "persistent: true"))
RUN16, RUN32 = ("run2048", "tile: [1, 2048]"), ("run1024", "tile: [1, 1024]")   # one-row tiles, bulk copies
CASES = [
    *(_relu_case(dt) for dt in ("bf16", "f32")),
    *(_bsm_case(dt) for dt in ("bf16", "f32")),
    # schedule variants: the other store kind (TMA stores by default, 16-byte stores from
    # registers here), warp specialization, stages, a taller tile, the persistent pipelined loop,
    # one-row tiles wider than a TMA box
    *(_relu_case("bf16", *v) for v in (VECTOR, WS, S4, T32, P)),
    *(_bsm_case("bf16", *v) for v in (VECTOR, WS, T32, P, RUN16)),
    *(_relu_case("f32", *v) for v in (VECTOR, P)),
    *(_bsm_case("f32", *v) for v in (VECTOR, P, RUN32)),
]

# row reductions (issue 4): two shapes each, bf16
for _m, _n in ((32768, 4096), (16384, 8192)):
    CASES += [
        Case(f"layernorm_{_m}x{_n}", LAYERNORM, "bf16", {"M": _m, "N": _n}, {"M": 64, "N": _n},
             _norm_inputs(2), _layernorm, family="reduction"),
        Case(f"rmsnorm_{_m}x{_n}", RMSNORM, "bf16", {"M": _m, "N": _n}, {"M": 64, "N": _n},
             _norm_inputs(1), _rmsnorm, family="reduction"),
        Case(f"softmax_{_m}x{_n}", SOFTMAX, "bf16", {"M": _m, "N": _n}, {"M": 64, "N": _n},
             _norm_inputs(0), _softmax, family="reduction"),
    ]

# variants of the normalization cases: four stages, and one CTA a row (persistent: false: the
# row loaded straight into registers)
CASES += [Case(f"{c.name}_{tag}", c.spec + f"schedule: {{{hint}}}\n", c.dtype, c.sizes, c.quick, c.inputs, c.eager,
               family=c.family)
          for c in [c for c in CASES if c.name.split("_")[0] in ("layernorm", "rmsnorm", "softmax")]
          for tag, hint in (("s4", "stages: 4"), ("np", "persistent: false"))]

# rows too wide for shared memory: streamed in chunks, softmax online (two reads of x, layernorm three)
CASES += [
    Case("softmax_4096x65536", SOFTMAX, "bf16", {"M": 4096, "N": 65536}, {"M": 16, "N": 65536},
         _norm_inputs(0), _softmax, family="reduction"),
    Case("softmax_1024x131072", SOFTMAX, "bf16", {"M": 1024, "N": 131072}, {"M": 8, "N": 131072},
         _norm_inputs(0), _softmax, family="reduction"),
    Case("layernorm_4096x65536", LAYERNORM, "bf16", {"M": 4096, "N": 65536}, {"M": 16, "N": 65536},
         _norm_inputs(2), _layernorm, family="reduction"),
]

# matmuls (issue 14), bf16, C = X W^T (nn.Linear's layout), named M x N x K: against cuBLAS
# (eager), torch.compile, cuBLASLt's fused epilogue and quack.  BARS are issue 17's: the ratio
# peer / wsfuse each must reach; --rounds times wsfuse against each of them in interleaved rounds
# and the bars table says which hold.  The shapes of a few microseconds run as CUDA-graph replays.
LARGE, SMALL = {"eager": 1.03, "quack": 1.0}, {"eager": 1.0}
CASES += [
    _gemm_case("gemm_8192x8192x8192", GEMM, 8192, 8192, 8192, {"M": 512, "N": 512, "K": 512}, False, LARGE),
    _gemm_case("gemm_4096x4096x4096", GEMM, 4096, 4096, 4096, {"M": 256, "N": 256, "K": 512}, False, LARGE),
    _gemm_case("gemm_8192x14336x4096", GEMM, 8192, 14336, 4096, {"M": 512, "N": 1024, "K": 256}, False, LARGE),
    _gemm_case("gemm_16384x1024x8192", GEMM, 16384, 1024, 8192, {"M": 1024, "N": 256, "K": 512}, False, LARGE),
    _gemm_case("gemm_2048x2048x2048", GEMM, 2048, 2048, 2048, {"M": 256, "N": 256, "K": 256}, False, SMALL,
               replay=True),
    # a decode step's few rows (swap_ab)
    _gemm_case("gemm_16x8192x4096", GEMM, 16, 8192, 4096, {"M": 16, "N": 512, "K": 256}, False, SMALL, replay=True),
    _gemm_case("gemm_64x8192x4096", GEMM, 64, 8192, 4096, {"M": 64, "N": 512, "K": 256}, False, SMALL, replay=True),
    _gemm_case("gemm_bias_gelu_8192x8192x8192", GEMM_BIAS_GELU, 8192, 8192, 8192,
               {"M": 512, "N": 512, "K": 512}, True, {"compile": 1.1, "cublaslt": 1.0}),
    _gemm_case("gemm_bias_gelu_8192x14336x4096", GEMM_BIAS_GELU, 8192, 14336, 4096,
               {"M": 512, "N": 1024, "K": 256}, True),
    # two matmuls sharing x in one mainloop (issue 15), named M x F x K
    Case("swiglu_8192x14336x4096", SWIGLU, "bf16", {"M": 8192, "F": 14336, "K": 4096},
         {"M": 512, "F": 1024, "K": 256}, _swiglu_inputs, _swiglu,
         flops=lambda s: 4 * s["M"] * s["F"] * s["K"], family="matmul", tolerance=gemm_tolerance,
         bars={"compile": 1.15}),
]

# wsfuse vs the float32 reference rounded to the output dtype: at most an ulp or so apart
TOLERANCE = {"bf16": dict(atol=1e-2, rtol=1.6e-2), "f16": dict(atol=1e-3, rtol=1e-3),
             "f32": dict(atol=1e-5, rtol=1e-5)}


def compile_case(case, sizes):
    """The wsfuse Kernel of CASE with SIZES bound (a fresh context: no bindings leak between cases)."""
    ctx = wsfuse.Context(sizes=sizes)
    return ctx.compile_string(case.spec_text(), name=f"bench/{case.name}.yaml")


def make_timer():
    """(description, fn -> median ms)."""
    try:
        from triton.testing import do_bench
        return ("triton.testing.do_bench(warmup=25, rep=200, return_mode='median')",
                lambda fn: do_bench(fn, warmup=25, rep=200, return_mode="median"))
    except ImportError:
        pass

    def events(fn, warmup_ms=25, rep_ms=200):
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        for _ in range(max(1, int(warmup_ms / est))):
            fn()
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(max(5, int(rep_ms / est)))]
        for s, e in pairs:
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs)
    return "CUDA events, median", events


def graph_timer(fn, reps=50, replays=9):
    """Median ms of a call of FN from CUDA-graph replays: REPS calls captured in one graph, replayed
    REPLAYS times and timed by events, the median over REPS.  The calls run back to back, free of
    the host's launch cost (wsfuse's programmatic dependent launch overlaps each with the one
    before), and L2 holds what the call before left.  The warm-up calls run on the capturing
    stream (a stream-K kernel's workspace is made at its first launch on a stream).  bench/ab's
    scripts time by it too (abcommon.graph_us), so it imports torch itself."""
    import torch
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(reps):
            fn()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return statistics.median(times)


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def float32_reference(case, inputs):
    """CASE's eager expression on INPUTS in float32, with TF32 off (matmuls at float32's precision)."""
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        refs = as_tuple(case.eager(*(x.float() for x in inputs)))
        torch.cuda.synchronize()
        return refs
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def check_close(name, out, ref, tol):
    """Checks OUT against the float32 reference REF: every element finite (the NaN poison gone) and
    within TOL of it relative to its size plus the reference's RMS (a sum that cancels to near zero
    has no relative error to speak of), and the whole within TOL (norms).  Returns that relative error."""
    o = out.float()
    finite = torch.isfinite(o)
    if not finite.all():
        raise AssertionError(f"{name}: {(~finite).sum().item()} of {o.numel()} elements are not finite")
    diff = (o - ref).abs_()
    excess = diff - tol * (ref.abs() + ref.pow(2).mean().sqrt())
    worst = excess.argmax().item()
    if excess.view(-1)[worst] > 0:
        at, rest = (), worst
        for n in reversed(o.shape):
            rest, i = divmod(rest, n)
            at = (i, *at)
        raise AssertionError(f"{name}: {(excess > 0).sum().item()} of {o.numel()} elements off by more than "
                             f"{tol:.2e} x (|ref| + rms); worst at {at}: {o[at].item():.6g}, "
                             f"expected {ref[at].item():.6g}")
    rel = (diff.norm() / ref.norm()).item()
    if rel > tol:
        raise AssertionError(f"{name}: relative error {rel:.2e} (norms), more than {tol:.2e}")
    return rel


def check(k, case, inputs, outs, refs, sizes):
    """Launches K into the NaN-poisoned OUTS and compares them with the float32 references REFS;
    returns the largest relative error where the case has a tolerance (check_close), else None."""
    k.launch(*inputs, *outs)
    torch.cuda.synchronize()
    err = None
    for i, (o, r) in enumerate(zip(outs, refs), k.num_inputs):
        if case.tolerance:
            err = max(err or 0.0, check_close(f"output '{k.arg_names[i]}'", o, r, case.tolerance(sizes)))
        else:
            torch.testing.assert_close(o, r.to(o.dtype), **TOLERANCE[k.arg_dtypes[i]],
                                       msg=lambda m, name=k.arg_names[i]: f"output '{name}': {m}")
    return err


def time_copy(nbytes, timer):
    """Median ms of a device-to-device copy moving NBYTES (half read, half written)."""
    src = torch.randint(0, 256, (nbytes // 2,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return timer(lambda: dst.copy_(src))


def run_case(case, sizes, timer, rounds=0):
    """Checks and times one case; returns its result row (check holds 'ok' or the failure).

    ROUNDS > 0 also times wsfuse against torch.compile, and against each peer the case has a bar
    for, in that many interleaved rounds, the order alternating, and keeps the median and range
    of the per-round ratios: drift in clocks or power then moves both sides alike, and a
    difference of 0.1% stands out of the noise.  A case marked replay is timed by CUDA-graph
    replays (graph_timer), each of its variants alike.
    """
    copy_timer = timer
    if case.replay:
        timer = graph_timer
    torch._dynamo.reset()
    row = {"case": case.name, "family": case.family, "sizes": sizes}
    t0 = time.perf_counter()
    k = compile_case(case, sizes)
    row["wsfuse_compile_s"] = time.perf_counter() - t0
    inputs = case.inputs(sizes, case.dtype)
    out_dtypes = [torch_dtype(k.arg_dtypes[i]) for i in range(k.num_inputs, k.num_args)]
    outs = [torch.full(s, float("nan"), dtype=d, device="cuda")
            for s, d in zip(k.output_shapes(*inputs), out_dtypes)]
    row["bytes"] = case.bytes(inputs, outs)
    if case.flops:
        row["flops"] = case.flops(sizes)
    refs = float32_reference(case, inputs)
    try:
        row["wsfuse_err"] = check(k, case, inputs, outs, refs, sizes)
        row["check"] = "ok"
        row["wsfuse_ms"] = timer(lambda: k.launch(*inputs, *outs))
    except (AssertionError, wsfuse.Error) as e:   # report it, time the peers all the same
        row["check"] = f"{type(e).__name__}: {e}"
        row["wsfuse_ms"] = None
    if not case.tolerance:   # only the matmuls check their peers
        refs = None
    compiled = torch.compile(case.eager)
    compiled(*inputs)   # compile outside the timing
    peers = {"eager": lambda: case.eager(*inputs), "compile": lambda: compiled(*inputs),
             **(case.peers(*inputs) if case.peers else {})}
    if case.tolerance:   # a peer is timed only where its result is right too (its first call warms it up)
        for name in list(peers):
            try:
                row[f"{name}_err"] = check_close(name, as_tuple(peers[name]())[0], refs[0], case.tolerance(sizes))
            except Exception as e:   # a wrong result, or a peer that cannot run these inputs
                row.setdefault("peer_checks", []).append(f"{name}: {type(e).__name__}: {e}")
                row[f"{name}_ms"] = None
                del peers[name]
    refs = None
    for name, fn in peers.items():
        row[f"{name}_ms"] = timer(fn)
    if rounds and row["wsfuse_ms"]:
        # each round: wsfuse, then the peers; the next round in the reverse order
        order = [("wsfuse", lambda: k.launch(*inputs, *outs))]
        order += [(p, peers[p]) for p in peers if p == "compile" or p in (case.bars or {})]
        ratios = {p: [] for p, _ in order[1:]}
        for r in range(rounds):
            t = {p: timer(fn) for p, fn in (order if r % 2 == 0 else order[::-1])}
            for p in ratios:
                ratios[p].append(t[p] / t["wsfuse"])
        row.update(rounds=rounds, rounds_peers={p: [statistics.median(v), min(v), max(v)] for p, v in ratios.items()})
        if "compile" in ratios:   # the columns of the tables: torch.compile's
            row.update(zip(("rounds_ratio", "rounds_min", "rounds_max"), row["rounds_peers"]["compile"]))
    if case.bars:
        row["bars"] = case.bars
    row["copy_ms"] = time_copy(row["bytes"], copy_timer)
    w, c, cp = row["wsfuse_ms"], row["compile_ms"], row["copy_ms"]
    row["wsfuse_gbps"] = row["bytes"] / w / 1e6 if w else None
    row["copy_gbps"] = row["bytes"] / cp / 1e6
    row["speedup_vs_compile"] = c / w if w and c else None   # > 1: wsfuse is faster
    row["frac_of_copy"] = cp / w if w else None          # wsfuse rate / copy rate
    if case.flops:
        row["wsfuse_tflops"] = row["flops"] / w / 1e9 if w else None
        for name in PEERS:
            if row.get(f"{name}_ms") and w:
                row[f"speedup_vs_{name}"] = row[f"{name}_ms"] / w
    return row


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_aligned(cols, lines):
    """COLS and LINES as columns: the first and the last left-aligned, the rest right-aligned."""
    width = [max(len(str(x)) for x in col) for col in zip(cols, *lines)]
    for line in [cols, ["-" * w for w in width], *lines]:
        print("  ".join(str(x).ljust(w) if i in (0, len(cols) - 1) else str(x).rjust(w)
                        for i, (x, w) in enumerate(zip(line, width))).rstrip())


# the peers of the matmul table, in its order, and their column names
PEERS = {"eager": "eager", "compile": "compile", "cublaslt": "cuBLASLt", "quack": "quack"}


def print_flop_table(rows):
    """The cases that count FLOPs (matmuls): each variant's time, wsfuse's TFLOP/s and peer/wsfuse
    (above 1x wsfuse is faster); a peer no row has is left out."""
    peers = [p for p in PEERS if p in ("eager", "compile") or any(r.get(f"{p}_ms") for r in rows)]
    cols = ["case", "TFLOP", "wsfuse ms", "TFLOP/s"]
    for p in peers:
        cols += [f"{PEERS[p]} ms", f"{PEERS[p]}/wsfuse"]
    rounds = any("rounds" in r for r in rows)   # --rounds: torch.compile / wsfuse over the interleaved rounds
    if rounds:
        cols.append("rounds: compile/wsfuse median (range)")
    cols.append("check")
    lines = []
    for r in rows:
        w = r.get("wsfuse_ms")
        line = [r["case"], f"{r['flops'] / 1e12:.2f}", fmt(w, ".4f"), fmt(w and r["flops"] / w / 1e9, ".0f")]
        for p in peers:
            t = r.get(f"{p}_ms")
            line += [fmt(t, ".4f"), fmt(t and w and t / w, ".3f") + ("x" if t and w else "")]
        if rounds:
            line.append(f"{r['rounds_ratio']:.4f}x ({r['rounds_min']:.4f}-{r['rounds_max']:.4f})"
                        if "rounds_ratio" in r else "-")
        line.append(r["check"].splitlines()[0][:60])
        lines.append(line)
    print_aligned(cols, lines)


def bar_verdict(ratio, bar):
    """'met' at or above BAR, 'tie' within 1% below it (the issue's rule), else how far short."""
    if ratio >= bar:
        return "met"
    return "tie" if ratio >= 0.99 * bar else f"short by {100 * (1 - ratio / bar):.1f}%"


def print_bars_table(rows):
    """Each bar of each case that has one: the peer, the bar, the ratio peer / wsfuse (the median and
    range of the interleaved rounds where --rounds timed them, else the single timing) and the verdict."""
    lines = []
    for r in rows:
        for p, bar in (r.get("bars") or {}).items():
            rp = (r.get("rounds_peers") or {}).get(p)
            single = r.get(f"{p}_ms") and r.get("wsfuse_ms") and r[f"{p}_ms"] / r["wsfuse_ms"]
            if rp:
                ratio, shown = rp[0], f"{rp[0]:.3f}x ({rp[1]:.3f}-{rp[2]:.3f}, {r['rounds']} rounds)"
            elif single:
                ratio, shown = single, f"{single:.3f}x (one timing)"
            else:
                ratio, shown = None, "-"
            lines.append([r["case"], PEERS.get(p, p), f"{bar:.2f}x", shown,
                          bar_verdict(ratio, bar) if ratio else "not timed"])
    if lines:
        print_aligned(["case", "peer", "bar", "peer/wsfuse", "verdict"], lines)


def print_table(rows):
    """The results: cases that move bytes against the copy rate, then those that count FLOPs."""
    mem_rows, flop_rows = [r for r in rows if not r.get("flops")], [r for r in rows if r.get("flops")]
    if mem_rows:
        print_byte_table(mem_rows)
    if flop_rows:
        if mem_rows:
            print()
        print_flop_table(flop_rows)
    if any(r.get("bars") for r in rows):
        print()
        print_bars_table(rows)
    for r in rows:   # peers whose results were wrong, or that could not run: not timed
        for line in r.get("peer_checks", ()):
            print(f"{r['case']}: peer {line.splitlines()[0][:200]}", file=sys.stderr)


def print_byte_table(rows):
    cols = ["case", "bytes", "wsfuse ms", "eager ms", "compile ms", "copy ms", "wsfuse GB/s",
            "compile/wsfuse", "of copy", "check"]
    lines = [[r["case"], f"{r['bytes'] / 1e9:.3f} GB", fmt(r["wsfuse_ms"], ".4f"), fmt(r["eager_ms"], ".4f"),
              fmt(r["compile_ms"], ".4f"), fmt(r["copy_ms"], ".4f"), fmt(r["wsfuse_gbps"], ".0f"),
              fmt(r["speedup_vs_compile"], ".3f") + ("x" if r["speedup_vs_compile"] else ""),
              fmt(r["frac_of_copy"] and 100 * r["frac_of_copy"], ".1f") + ("%" if r["frac_of_copy"] else ""),
              r["check"].splitlines()[0][:60]] for r in rows]
    if any("rounds" in r for r in rows):   # --rounds: the interleaved rounds' median ratio and range
        cols.insert(8, "rounds: median (range)")
        for r, line in zip(rows, lines):
            line.insert(8, f"{r['rounds_ratio']:.4f}x ({r['rounds_min']:.4f}-{r['rounds_max']:.4f})"
                        if "rounds_ratio" in r else "-")
    print_aligned(cols, lines)


# dense bf16/f16 tensor-core peaks in TFLOP/s, by device name (the first that matches)
TC_PEAKS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.4), ("H200", 989.4), ("H800", 989.4))


def tc_peak_of(device):
    return next((peak for name, peak in TC_PEAKS if name in (device or "")), None)


def plot_results(data, path, tc_peak=None):
    """Writes a PNG of DATA (what --json writes) to PATH: each case's rate for wsfuse, torch.compile
    and eager against the case's roof.  A case that counts no FLOPs is drawn in GB/s against the
    copy rate; one that does (a matmul), in TFLOP/s against the tensor-core peak, or the FLOPs
    done in the time the copy takes to move its bytes where that is lower.  Each roof is marked
    and wsfuse's share of it printed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in data["results"] if r.get("bytes")]
    if not rows:
        raise ValueError("no case in these results moved any bytes: nothing to plot")
    tc_peak = tc_peak or tc_peak_of(data.get("device"))
    variants = (("wsfuse", "wsfuse_ms", "tab:blue"), ("torch.compile", "compile_ms", "tab:orange"),
                ("eager", "eager_ms", "tab:gray"), ("cuBLASLt", "cublaslt_ms", "tab:green"),
                ("quack", "quack_ms", "tab:purple"))
    variants = [v for v in variants if v[1] in ("wsfuse_ms", "compile_ms", "eager_ms") or
                any(r.get(v[1]) for r in rows)]
    panels = []
    mem_rows, flop_rows = [r for r in rows if not r.get("flops")], [r for r in rows if r.get("flops")]
    if mem_rows:
        panels.append(("GB/s (bytes moved / median time)", "copy rate", mem_rows,
                       lambda r, ms: r["bytes"] / ms / 1e6, lambda r: r["bytes"] / r["copy_ms"] / 1e6))
    if flop_rows:
        panels.append(("TFLOP/s", "roof: the tensor-core peak, or the copy rate's", flop_rows,
                       lambda r, ms: r["flops"] / ms / 1e9,
                       lambda r: min(r["flops"] / r["copy_ms"] / 1e9, tc_peak or float("inf"))))
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, figsize=(11, 0.45 * len(rows) + 1.6 * len(panels) + 1),
                             gridspec_kw={"height_ratios": [len(p[2]) + 1 for p in panels]})
    h = 0.8 / len(variants)
    for ax, (unit, roof_name, prows, rate, roof) in zip(axes[:, 0], panels):
        ys = range(len(prows))
        for j, (label, key, color) in enumerate(variants):
            ax.barh([y - 0.4 + (j + 0.5) * h for y in ys], [rate(r, r[key]) if r.get(key) else 0 for r in prows],
                    height=h, label=label, color=color)
        labelled = False
        for y, r in zip(ys, prows):
            if not r.get("copy_ms"):
                continue
            top = roof(r)
            ax.plot([top, top], [y - 0.45, y + 0.45], color="black", lw=2, label=None if labelled else roof_name)
            labelled = True
            if r.get("wsfuse_ms"):
                ax.annotate(f"{100 * rate(r, r['wsfuse_ms']) / top:.0f}%", (top, y), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=8)
        if prows is flop_rows and tc_peak:
            ax.axvline(tc_peak, color="tab:red", ls="--", lw=1, label=f"tensor-core peak, {tc_peak:g}")
        ax.set_yticks(list(ys))
        ax.set_yticklabels([r["case"] + ("" if r.get("check") == "ok" else " (check failed)") for r in prows],
                           fontsize=8)
        ax.set_ylim(len(prows) - 0.5, -0.5)
        ax.set_xlabel(unit)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    peak = f"tensor-core peak {tc_peak:g} TFLOP/s" if tc_peak else "tensor-core peak unknown (--tc-peak)"
    fig.suptitle(f"{data.get('device', '?')}, {data.get('date', '?')}: wsfuse beside its peers, "
                 f"% = wsfuse's share of the roof\ntorch {data.get('torch')}, triton {data.get('triton')}, "
                 f"CUDA {data.get('cuda')}{', quick sizes' if data.get('quick') else ''}; {peak}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="comma list of case names (default: all): "
                    + ", ".join(c.name for c in CASES))
    ap.add_argument("--family", help="comma list of case families (default: all): " + ", ".join(FAMILIES))
    ap.add_argument("--list", action="store_true",
                    help="list the cases (with --cases and --family: those) and run nothing")
    ap.add_argument("--json", metavar="FILE", help="write the results to FILE")
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    ap.add_argument("--compile-only", action="store_true", help="only compile each spec to cubin")
    ap.add_argument("--rounds", type=int, default=0, metavar="N",
                    help="also time wsfuse against torch.compile and the peers of its bars in N interleaved "
                         "rounds (median ratio and range)")
    ap.add_argument("--plot", metavar="FILE.png",
                    help="also plot each case's rates against the copy rate and the tensor-core roof (matplotlib)")
    ap.add_argument("--from-json", metavar="FILE",
                    help="run nothing: print (and --plot) the results an earlier --json wrote")
    ap.add_argument("--tc-peak", type=float, metavar="TFLOPS",
                    help="the tensor-core roof of --plot (default: the device's dense bf16 peak, where known)")
    args = ap.parse_args()
    if args.plot:   # before a run that takes minutes, not after it
        import importlib.util
        if importlib.util.find_spec("matplotlib") is None:
            ap.error("--plot needs matplotlib (pip install matplotlib); nothing was run")
    families = args.family.split(",") if args.family else FAMILIES
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}; "
                 f"known: {', '.join(FAMILIES)}")
    if args.from_json:
        if args.compile_only or args.rounds or args.quick or args.list:
            ap.error("--from-json runs nothing: --compile-only, --rounds, --quick and --list do not apply")
        return report_json(args, families)
    cases = [c for c in CASES if c.family in families]
    if args.cases:
        names = args.cases.split(",")
        unknown = [n for n in names if n not in {c.name for c in CASES}]
        if unknown:
            ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(c.name for c in CASES)}")
        cases = [c for c in cases if c.name in names]
    if args.list:
        sizes = [c.quick if args.quick else c.sizes for c in cases]
        print_aligned(["case", "family", "sizes" + (" (--quick)" if args.quick else "")],
                      [[c.name, c.family, " ".join(f"{k}={v}" for k, v in s.items())]
                       for c, s in zip(cases, sizes)])
        return 0

    global torch
    try:
        import torch
    except ImportError:   # --compile-only needs no torch
        pass
    if args.compile_only:
        for case in cases:
            t0 = time.perf_counter()
            k = compile_case(case, case.quick if args.quick else case.sizes)
            print(f"{case.name}: {len(k.cubin())} bytes of cubin in {time.perf_counter() - t0:.3f} s")
        return 0

    if torch is None or not torch.cuda.is_available():
        sys.exit("bench.py: no CUDA device (use --compile-only to check the specs without one)")
    prop = torch.cuda.get_device_properties(0)
    timer_name, timer = make_timer()
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    header = {**provenance(sys.argv), "device": prop.name, "torch": torch.__version__,
              "triton": triton_version, "cuda": torch.version.cuda, "timer": timer_name,
              "quick": args.quick, "rounds": args.rounds}
    print(" ".join(f"{k}={v}" for k, v in header.items()))
    l2 = getattr(prop, "L2_cache_size", 0)
    rows = []
    for case in cases:
        sizes = case.quick if args.quick else case.sizes
        try:
            row = run_case(case, sizes, timer, args.rounds)
        except Exception as e:   # a case that cannot run at all: report it, go on with the rest
            row = {"case": case.name, "family": case.family, "sizes": sizes, "bytes": 0,
                   "check": f"{type(e).__name__}: {e}"}
            if case.flops:
                row["flops"] = case.flops(sizes)
            for key in ("wsfuse_ms", "eager_ms", "compile_ms", "copy_ms", "wsfuse_gbps", "copy_gbps",
                        "speedup_vs_compile", "frac_of_copy"):
                row[key] = None
        torch.cuda.empty_cache()   # the case's tensors died with run_case's frame
        # a matmul is bound by its FLOPs: L2 does not flatter it
        if not args.quick and l2 and 0 < row["bytes"] < 4 * l2 and not row.get("flops"):
            print(f"warning: {case.name} moves {row['bytes']} bytes, not far above L2 ({l2} bytes)")
        rows.append(row)
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**header, "results": rows}, f, indent=1)
    if args.plot:
        plot_results({**header, "results": rows}, args.plot, args.tc_peak)
        print(f"plot: {args.plot}")
    failed = [r["case"] for r in rows if r["check"] != "ok"]
    for r in rows:
        if r["check"] != "ok":
            print(f"{r['case']}: {r['check']}", file=sys.stderr)
    return 1 if failed else 0


def _run(cmd):
    """The stripped stdout of CMD, or None when it cannot run or fails."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def _dist_version(*names):
    """The installed version of the first distribution of NAMES there is, or None."""
    for n in names:
        try:
            return importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            pass
    return None


def provenance(argv):
    """What a result needs to be reproduced and compared, torch and the GPU aside: the
    commit (and whether tracked files differ from it), the command line ARGV, the date,
    wsfuse's version, its library, and the NVRTC and driver that wsfuse finds; the GPU's
    power limit where nvidia-smi reports it.  No key is missing: an unknown is None."""
    env = dict(line.split(": ", 1) for line in wsfuse.environment().splitlines() if ": " in line)
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,power.limit", "--format=csv,noheader"])
    return {"commit": _run(["git", "rev-parse", "HEAD"]), "dirty": None if dirty is None else dirty != "",
            "command": shlex.join([os.path.relpath(argv[0], ROOT) if argv[0].endswith("bench.py") else argv[0],
                                   *argv[1:]]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "wsfuse": wsfuse.version(), "library": wsfuse.load()._name,
            "nvrtc": env.get("nvrtc"), "driver": env.get("driver"),
            "power_limit": smi.splitlines()[0].split(", ")[-1] if smi else None,
            "python": sys.version.split()[0],
            "quack": _dist_version("quack-kernels", "quack"),
            "cutlass_dsl": _dist_version("nvidia-cutlass-dsl")}


def row_family(r):
    """The family of result row R; a row from before families has that of its case, or, where no case has
    its name any more, matmul if it counts FLOPs (else None)."""
    known = {c.name: c.family for c in CASES}
    return r.get("family") or known.get(r.get("case")) or ("matmul" if r.get("flops") else None)


def report_json(args, families):
    """--from-json: the table (and --plot, --json) of earlier results, filtered by --cases and --family."""
    try:
        with open(args.from_json) as f:
            data = json.load(f)
        rows = data["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"bench.py: {args.from_json}: not results of --json ({type(e).__name__}: {e})")
    if args.cases:
        names = args.cases.split(",")
        rows = data["results"] = [r for r in rows if r.get("case") in names]
    if args.family:
        rows = data["results"] = [r for r in rows if row_family(r) in families]
    print(" ".join(f"{k}={v}" for k, v in data.items() if k != "results"))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    if args.plot:
        try:
            plot_results(data, args.plot, args.tc_peak)
        except (KeyError, TypeError, ValueError) as e:
            sys.exit(f"bench.py: {args.from_json}: cannot plot these results ({type(e).__name__}: {e})")
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
