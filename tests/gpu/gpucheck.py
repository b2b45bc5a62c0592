"""gpucheck.py: what the python GPU tests of this folder share (launch_path.py and stream_k.py;
tune.py its library and rel; gemm_rs.py and ag_gemm.py the gate): the library of the build run.sh names, bf16
tensors on the GPU, outputs poisoned with NaN, the relative error against an f32 reference, the plain GEMM's spec
(ragged_tiles.py, stream_k.py, misaligned_k.py), the tally of checks they print, and a gate that holds a stream's
work until the host opens it."""
import ctypes
import os
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
