"""tile_consumer.py BUILD: the per-tile signal's consumer role inside the
kernel (make check-gpu runs it when torch imports).

A matmul compiled with schedule: {signal: {per_tile, consumer: [...]}} stores
its epilogue's outputs by TMA; warps 1-3 of its producer warpgroup wait for
each stored tile (an mbarrier the storing thread arrives on once the stores
have landed: cp.async.bulk.wait_group without .read) and compute the
consumer's outputs from the tile read back from global memory.  A consumer
that ran before the tile landed would read the poison: every output is
filled with NaN before every launch, and the kernel is compiled with option
store-delay (one TMA store in four sleeps up to 20 us first), so late stores
are common.  Each of LAUNCHES launches is checked: the stored output against
torch (relative error norm below 1e-2, on the first launch) and against the
first launch bit for bit (later ones), and the consumer's outputs bit for
bit against torch computing the same ops in f32 from the stored output.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

LAUNCHES = 40

SPEC = """\
fusion: {name}
sizes: {{B: {b}, M: {m}, N: {n}, K: {k}}}
inputs:
  x: {{dtype: bf16, shape: [B, M, K]}}
  w: {{dtype: bf16, shape: [{wshape}]}}
ops:
  - {{out: y, op: matmul, in: [x, w]{tb}}}
  - {{out: r, op: relu, in: [y]}}
  - {{out: z, op: mul, in: [r, 2.0]}}
  - {{out: y_copy, op: cast, in: [y], to: {copy}}}
outputs:
  y: {{dtype: {out}}}
  z: {{dtype: f16}}
  y_copy: {{dtype: {copy}}}
schedule: {{signal: {{per_tile, consumer: [z, y_copy]}}{extra}}}
"""
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
CASES = [   # name, B, M, N, K, batched (w [B, K, N]), stored dtype, copy dtype, extra schedule
    ("cons_coop", 1, 2000, 3080, 520, False, "bf16", "bf16", ""),
    ("cons_pingpong", 1, 1000, 1032, 264, False, "f32", "bf16", ", consumers: pingpong"),
    ("cons_one_cta", 1, 700, 1288, 200, False, "bf16", "f32", ", persistent: false"),
    ("cons_batched", 3, 300, 520, 136, True, "bf16", "bf16", ""),
]


def run_case(lib, name, b, m, n, k, batched, out, copy, extra):
    spec = SPEC.format(name=name, b=b, m=m, n=n, k=k, wshape="B, K, N" if batched else "N, K",
                       tb="" if batched else ", transpose_b: true", out=out, copy=copy, extra=extra)
    x = torch.randn(b, m, k, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(b, k, n, device="cuda", dtype=torch.bfloat16) if batched else
         torch.randn(n, k, device="cuda", dtype=torch.bfloat16)) / k ** 0.5
    y = torch.empty(b, m, n, device="cuda", dtype=DT[out])
    z = torch.empty(b, m, n, device="cuda", dtype=torch.float16)
    y_copy = torch.empty(b, m, n, device="cuda", dtype=DT[copy])
    want = (x.float() @ w.float()) if batched else (x.float() @ w.float().t())
    first = None
    with wsfuse.Context(lib=lib, sizes={"B": b, "M": m, "N": n, "K": k}, store_delay="20000") as ctx:
        kern = ctx.compile_string(spec, name=f"{name}.yaml")
        for launch in range(LAUNCHES):
            for t in (y, z, y_copy):
                t.fill_(float("nan"))
            kern.launch(x, w, y, z, y_copy)
            torch.cuda.synchronize()
            if first is None:
                err = ((y.float() - want).norm() / want.norm()).item()
                if not err < 1e-2:
                    return f"launch 0: y relative error {err:.2e}"
                first = y.clone()
            elif not torch.equal(y, first):
                return f"launch {launch}: y differs from the first launch's"
            # the consumer's ops in f32 from the stored y, rounded as stored
            z_want = (torch.relu(y.float()) * 2.0).to(torch.float16)
            c_want = y.float().to(DT[copy])
            for got, exp, what in ((z, z_want, "z"), (y_copy, c_want, "y_copy")):
                bad = (got != exp) | got.isnan()
                if bool(bad.any()):
                    at = bad.nonzero()[0].tolist()
                    return (f"launch {launch}: {int(bad.sum())} of {got.numel()} elements of {what} wrong "
                            f"(first at {at}: {got[tuple(at)].item()} for {exp[tuple(at)].item()})")
    return None


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so")) if len(sys.argv) > 1 else None
    passed = failed = 0
    for case in CASES:
        why = run_case(lib, *case)
        if why:
            failed += 1
            print(f"FAIL {case[0]}: {why}")
        else:
            passed += 1
            print(f"ok   {case[0]}: {LAUNCHES} launches, every tile consumed after it landed")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
