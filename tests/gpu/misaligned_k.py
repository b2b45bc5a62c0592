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
import re
import sys

import torch

from gpucheck import BIAS_GELU, NN, NT, SWIGLU, TN, Tally, library, mm_operands, poisoned, rel, wsfuse

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
    for spec, (m, n, k), at, want in CASES:
        lm, ln, lk = at or (m, n, k)
        name = spec[8:spec.index("\n")] + f" compiled at {m} x {n} x {k}" + (f", run at {lm} x {ln} x {lk}" if at else "")
        with wsfuse.Context(lib=lib, sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
            kern = ctx.compile_string(spec, name="misaligned.yaml")
            got = re.search(r"cluster=\[(\d+), (\d+)\]", kern.text("kernel-ir").splitlines()[0])
            cluster = got and (int(got.group(1)), int(got.group(2)))
            ins, ref = mm_operands(spec, lm, ln, lk)
            out = poisoned(lm, ln)
            kern.launch(*ins, out)
            torch.cuda.synchronize()
        e = rel(out, ref)
        report(name, e < 1e-2 and cluster == want, f"cluster {cluster} (expected {want}), relative error {e:.1e}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
