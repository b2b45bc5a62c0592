"""pdl_chain.py BUILD: programmatic dependent launch across kernels in one
stream (make check-gpu runs it when torch imports).

Matmul kernels launch with programmatic stream serialization: one may start
while the kernel before it in the stream finishes, and waits for it
(griddepcontrol.wait) before touching global memory.  Three hazards, each
ROUNDS times with the intermediates NaN-poisoned first, all launched back to
back on one stream with no host synchronization between:
  RAW  y1 = x w1^T, then y2 = y1 w2^T, then y3 = y2 w3^T: each reads what the
       one before wrote (a read too early sees the poison);
  WAR  y = x w^T, then x2 = a b^T written into x's memory: the first must
       have read x before the second overwrites it;
  RAW after an ordinary kernel: z = relu(x) (a pointwise kernel, not a
       programmatic one), then y = z w^T.
Each result is checked against torch from the kernels' own inputs (relative
error norm below 1e-2).  Prints one line a case and "N passed, N failed";
exits 1 on a failure.
"""
import sys

import torch

from gpucheck import gemm_spec, library, rel, wsfuse

ROUNDS = 20
RELU = """\
fusion: relu
inputs:
  a: {dtype: bf16, shape: [M, N]}
ops:
  - {out: y, op: relu, in: [a]}
outputs:
  y: {dtype: bf16}
"""


def main():
    lib = library()
    n = 2048
    d = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16)   # noqa: E731
    x, w1, w2, w3 = d(n, 4096), d(n, 4096) / 64, d(n, n) / 45, d(n, n) / 45
    a, b = d(n, 64), d(4096, 64)
    ys = [torch.empty(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    z = torch.empty_like(x)
    failed = passed = 0
    with wsfuse.Context(lib=lib) as ctx:
        g = ctx.compile_string(gemm_spec(), name="gemm.yaml")
        r = ctx.compile_string(RELU, name="relu.yaml")
        cases = {"raw chain": [], "war": [], "after pointwise": []}
        for _ in range(ROUNDS):
            # RAW: three dependent gemms back to back
            for y in ys:
                y.fill_(float("nan"))
            g.launch(x, w1, ys[0])
            g.launch(ys[0], w2, ys[1])
            g.launch(ys[1], w3, ys[2])
            torch.cuda.synchronize()
            cases["raw chain"].append(max(rel(ys[0], x.float() @ w1.float().t()),
                                          rel(ys[1], ys[0].float() @ w2.float().t()),
                                          rel(ys[2], ys[1].float() @ w3.float().t())))
            # WAR: the second writes what the first reads
            xc = x.clone()
            ys[0].fill_(float("nan"))
            g.launch(xc, w1, ys[0])
            g.launch(a, b, xc)   # [2048, 4096] over x's memory
            torch.cuda.synchronize()
            cases["war"].append(max(rel(ys[0], x.float() @ w1.float().t()),
                                    rel(xc, a.float() @ b.float().t())))
            # RAW after an ordinary (pointwise) kernel
            z.fill_(float("nan"))
            ys[0].fill_(float("nan"))
            r.launch(x, z)
            g.launch(z, w1, ys[0])
            torch.cuda.synchronize()
            cases["after pointwise"].append(rel(ys[0], torch.relu(x.float()) @ w1.float().t()))
    for name, errs in cases.items():
        worst = max(errs)
        if worst < 1e-2:
            passed += 1
            print(f"ok   {name}: {ROUNDS} rounds, worst relative error {worst:.1e}")
        else:
            failed += 1
            print(f"FAIL {name}: worst relative error {worst:.2e} (nan: read before written)")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
