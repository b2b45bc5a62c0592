"""gpucheck.py: what the python GPU tests of this folder share (launch_path.py and stream_k.py;
tune.py and pdl_chain.py its library and rel, pdl_chain.py the plain GEMM's spec too; gemm_rs.py and ag_gemm.py the gate): the library of the build run.sh names, bf16
tensors on the GPU, outputs poisoned with NaN, the relative error against an f32 reference, the plain GEMM's spec
(ragged_tiles.py, stream_k.py, misaligned_k.py), one matmul's layouts and two fused forms with their references
and one launch of a case (run_mm; misaligned_k.py, wave_tiles.py), the tally of checks they print, and a gate that
holds a stream's work until the host opens it."""
import ctypes
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402,F401  (the tests import it from here)


def library():
    """The libwsfuse.so of the build named as the first argument (run.sh's), else None: the default."""
    return wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so")) if len(sys.argv) > 1 else None


def bf16(*shape):
    """A fresh standard-normal bf16 tensor on the GPU."""
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def poisoned(m, n):
    """An [m, n] bf16 output filled with NaN, so that an element left unwritten fails."""
    return torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)


GEMM = """\
fusion: {name}
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: bf16}}
{sched}"""


def gemm_spec(sched="", name="gemm"):
    """The spec of y = x w^T (bf16, nn.Linear's layout) named NAME, with SCHED the body of its
    `schedule: {...}` (empty: none)."""
    return GEMM.format(name=name, sched=sched and "schedule: {" + sched + "}\n")


def rel(got, want):
    """The relative error norm of GOT against the f32 reference WANT."""
    return ((got.float() - want).norm() / want.norm()).item()


def gemm_error(got, x, w):
    """rel of GOT against x w^T computed in f32."""
    return rel(got, x.float() @ w.float().t())


class Tally:
    """report(name, ok, what) prints a line a check; done() prints "N passed, N failed" and
    returns the exit status (1 on a failure)."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, what):
        self.passed += bool(ok)
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {what}", flush=True)

    def done(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


class Gate:
    """Holds a stream's next work until the host opens the gate, so that a test can order two kernels on
    one GPU without timing them: hold(stream, epoch) makes STREAM wait until a word on the GPU reaches
    EPOCH (cuStreamWaitValue32: the stream waits in the GPU's front end, no kernel runs, no SM is held);
    open(epoch) pauses the host PAUSE seconds, then writes EPOCH into the word by the copy engine (no kernel:
    a kernel's first launch loads its module, which waits for the work in flight, here the held stream).
    What was launched before the hold has long run by then, or is waiting for the held work.  Epochs
    1..ROUNDS, rising: the word keeps the last."""

    def __init__(self, rounds, pause=0.005):
        self.word = torch.zeros(1, device="cuda", dtype=torch.int32)
        self.epochs = torch.arange(rounds + 1, dtype=torch.int32).pin_memory()
        self.stream = torch.cuda.Stream()
        self.pause = pause
        cuda = ctypes.CDLL("libcuda.so.1")   # the driver torch runs on
        self.wait = getattr(cuda, "cuStreamWaitValue32_v2", None) or cuda.cuStreamWaitValue32
        self.wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        self.wait.restype = ctypes.c_int

    def hold(self, stream, epoch):
        """STREAM's work enqueued after this waits until the word is at least EPOCH."""
        err = self.wait(ctypes.c_void_p(stream.cuda_stream), self.word.data_ptr(), epoch, 0)  # CU_STREAM_WAIT_VALUE_GEQ
        if err:
            raise RuntimeError(f"cuStreamWaitValue32 failed with CUresult {err}")

    def open(self, epoch):
        """After PAUSE seconds on the host, lets the work held for EPOCH (and before) go."""
        time.sleep(self.pause)
        with torch.cuda.stream(self.stream):
            self.word.copy_(self.epochs[epoch:epoch + 1], non_blocking=True)


# One matmul in the layouts users write and two fused forms, sizes M, N, K bound at compile
MM = """\
fusion: mm
inputs:
  a: {{dtype: bf16, shape: {a}}}
  b: {{dtype: bf16, shape: {b}}}
ops:
  - {{out: y, op: matmul, in: [a, b]{t}}}
outputs:
  y: {{dtype: bf16}}
"""

BIAS_GELU = """\
fusion: bias_gelu
inputs:
  a: {dtype: bf16, shape: [M, K]}
  b: {dtype: bf16, shape: [N, K]}
  bias: {dtype: bf16, shape: [N]}
ops:
  - {out: y, op: matmul, in: [a, b], transpose_b: true}
  - {out: z, op: add, in: [y, bias]}
  - {out: o, op: gelu, in: [z], approximate: tanh}
outputs:
  o: {dtype: bf16}
"""

SWIGLU = """\
fusion: swiglu
inputs:
  x: {dtype: bf16, shape: [M, K]}
  wg: {dtype: bf16, shape: [N, K]}
  wu: {dtype: bf16, shape: [N, K]}
ops:
  - {out: g, op: matmul, in: [x, wg], transpose_b: true}
  - {out: u, op: matmul, in: [x, wu], transpose_b: true}
  - {out: sg, op: silu, in: [g]}
  - {out: h, op: mul, in: [sg, u]}
outputs:
  h: {dtype: bf16}
"""

NT = GEMM.format(name="gemm", sched="")   # nn.Linear: both K-major
TN = MM.format(a="[K, M]", b="[N, K]", t=", transpose_a: true, transpose_b: true")   # A M-major
NN = MM.format(a="[M, K]", b="[K, N]", t="")   # B N-major


def mm_operands(spec, m, n, k):
    """Fresh inputs for SPEC (NT, TN, NN, BIAS_GELU or SWIGLU) at M x N x K (B scaled by K^-1/2), and the f32 reference of its output."""
    a, b = bf16(m, k), bf16(n, k) / k ** 0.5
    if spec is SWIGLU:
        u = bf16(n, k) / k ** 0.5
        g = a.float() @ b.float().t()
        return [a, b, u], torch.nn.functional.silu(g) * (a.float() @ u.float().t())
    ref = a.float() @ b.float().t()
    if spec is BIAS_GELU:
        bias = bf16(n)
        return [a, b, bias], torch.nn.functional.gelu(ref + bias.float(), approximate="tanh")
    if spec is TN:
        return [a.t().contiguous(), b], ref
    if spec is NN:
        return [a, b.t().contiguous()], ref
    return [a, b], ref


def run_mm(lib, spec, size, at=None, sched=""):
    """SPEC (a form of mm_operands) compiled with LIB at SIZE (M, N, K), with SCHED the body of a
    `schedule: {...}` (empty: none), launched at AT (or SIZE) on fresh operands into a NaN-poisoned
    output.  Returns (the case's name, the kernel IR's first line, its tile (rows, cols), its cluster
    (x, y) or None, the relative error against the f32 reference)."""
    m, n, k = size
    lm, ln, lk = at or size
    name = spec[8:spec.index("\n")] + f" compiled at {m} x {n} x {k}" + (f", run at {lm} x {ln} x {lk}" if at else "")
    text = spec + ("schedule: {" + sched + "}\n" if sched else "")
    name += f" {{{sched}}}" if sched else ""
    with wsfuse.Context(lib=lib, sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        kern = ctx.compile_string(text, name="mm.yaml")
        head = kern.text("kernel-ir").splitlines()[0]
        ins, ref = mm_operands(spec, lm, ln, lk)
        out = poisoned(lm, ln)
        kern.launch(*ins, out)
        torch.cuda.synchronize()
    tile = tuple(map(int, re.search(r"tile=\[(\d+), (\d+)\]", head).groups()))
    got = re.search(r"cluster=\[(\d+), (\d+)\]", head)
    return name, head, tile, got and (int(got.group(1)), int(got.group(2))), rel(out, ref)
