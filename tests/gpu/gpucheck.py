"""gpucheck.py: what the python GPU tests of this folder share (launch_path.py and stream_k.py;
tune.py its library and rel): the library of the build run.sh names, bf16 tensors on the GPU, outputs poisoned with
NaN, the relative error against an f32 reference, and the tally of checks they print."""
import os
import sys

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
