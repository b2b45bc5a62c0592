"""consumer_copy.py: a GEMM whose consumer role copies each finished tile, against the GEMM then a copy
kernel (issue 16's second bar).

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/consumer_copy.py`.
bf16 8192^3 and 4096^3, one process, six rounds with the order alternating:
  fused     y = x w^T stored by TMA, and y2 = y written by the kernel's signal consumer role (warps 1-3 of
            the producer warpgroup) from each tile read back once it has landed;
  separate  the same GEMM without the consumer, then y2.copy_(y) (torch's copy kernel);
  gemm      the GEMM alone, the floor the fused kernel is measured against.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, triton, wsfuse
def bench(fn): return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
SPEC = """fusion: gemm{name}
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
{more}outputs:
  y: {{dtype: bf16}}
{outs}"""
COPY = "  - {out: y2, op: cast, in: [y], to: bf16}\n"
for (m, n, k) in [(8192, 8192, 8192), (4096, 4096, 4096)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    y2 = torch.empty_like(y)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        kp = ctx.compile_string(SPEC.format(name="", more="", outs=""), name="g.yaml")
        kc = ctx.compile_string(SPEC.format(name="_copy", more=COPY, outs="  y2: {dtype: bf16}\n"
                                            "schedule: {signal: {per_tile, consumer: y2}}\n"), name="c.yaml")
        y.fill_(float("nan")); y2.fill_(float("nan"))
        kc.launch(x, w, y, y2); torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        print(f"{m}x{n}x{k}: fused rel err {((y.float() - ref).norm() / ref.norm()).item():.1e}, "
              f"y2 == y: {bool(torch.equal(y, y2))}", flush=True)
        def separate():
            kp.launch(x, w, y)
            y2.copy_(y)
        for r in range(6):
            order = [("fused", lambda: kc.launch(x, w, y, y2)), ("separate", separate)]
            if r % 2:
                order.reverse()
            t = {name: bench(fn) for name, fn in order}
            tg = bench(lambda: kp.launch(x, w, y))
            tc = bench(lambda: y2.copy_(y))
            print(f"  round {r}: fused {t['fused']:.3f} ms separate {t['separate']:.3f} ms -> separate/fused "
                  f"{t['separate']/t['fused']:.4f} | gemm {tg:.3f} (fused/gemm {t['fused']/tg:.4f}), "
                  f"copy {tc:.3f}", flush=True)
