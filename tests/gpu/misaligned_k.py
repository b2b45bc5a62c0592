"""misaligned_k.py BUILD: operands whose rows are not 128-byte aligned (make check-gpu runs it when
torch imports).

Without a cluster hint, a matmul whose operand rows at the spec's sizes are not a multiple of 128 bytes
(bf16 K = 4040) runs in a cluster of two that multicasts one operand (passes/lower_matmul.c,
misaligned_cluster).  For each case: the kernel compiled at the sizes given, its kernel IR naming the
cluster expected, then launched on fresh random operands of the launch sizes (which may differ: the
choice is the compile's, the kernel serves any K) into a NaN-poisoned output, within 1e-2 of the f32
reference (relative error norm).
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import BIAS_GELU, NN, NT, SWIGLU, TN, Tally, library, run_mm

# spec, compile sizes (M, N, K), launch sizes or None (the same), the cluster its IR names (None: none)
CASES = [
    (NT, (1024, 1024, 4040), None, (1, 2)),
    (NT, (2048, 2048, 4040), None, (2, 1)),
    (NT, (1000, 1000, 4088), None, (1, 2)),
    (NT, (4096, 4096, 72), None, (2, 1)),
    (NT, (2048, 2048, 4040), (2048, 2048, 4096), (2, 1)),   # compiled misaligned, launched aligned
    (NT, (2048, 2048, 4096), (2048, 2048, 4040), None),     # and the other way
    (NT, (256, 1024, 4040), None, None),                    # split by 2: one CTA a split rank
    (TN, (1000, 2048, 2048), None, (1, 2)),
    (NN, (2048, 4040, 2048), None, (2, 1)),
    (BIAS_GELU, (2048, 2048, 4040), None, (2, 1)),
    (SWIGLU, (4096, 8192, 4040), None, (2, 1)),   # ping-pong, each warpgroup its 128 x 96 of both
]


def main():
    lib, report = library(), Tally()
    torch.manual_seed(0)
    for spec, size, at, want in CASES:
        name, _, _, cluster, e = run_mm(lib, spec, size, at)
        report(name, e < 1e-2 and cluster == want, f"cluster {cluster} (expected {want}), relative error {e:.1e}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
