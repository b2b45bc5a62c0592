"""signal_cost.py: what schedule: {signal: per_tile} costs a GEMM (issue 16's 2% bar).

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/signal_cost.py`.
gemm bf16 8192^3 and 4096^3 with and without the signal in one process, six rounds with the
order alternating; the signalling kernel gets a new epoch every launch (its flags never reset).
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, gemm_spec
for (m, n, k) in [(8192, 8192, 8192), (4096, 4096, 4096)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        kp = ctx.compile_string(gemm_spec(), name="g.yaml")
        ks = ctx.compile_string(gemm_spec("schedule: {signal: per_tile}\n"), name="s.yaml")
        flags = torch.zeros(ks.signal_layout(x, w, y)["flags"], device="cuda", dtype=torch.int32)
        ep = [1]
        def sig():
            ep[0] += 1
            ks.launch(x, w, y, flags=flags, epoch=ep[0])
        sig(); torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        print(f"{m}x{n}x{k}: signal rel err {((y.float() - ref).norm() / ref.norm()).item():.1e}, "
              f"flags all set {bool((flags == ep[0]).all())}")
        for r in range(6):
            order = [("plain", lambda: kp.launch(x, w, y)), ("signal", sig)]
            if r % 2:
                order.reverse()
            t = {name: bench(fn) for name, fn in order}
            tb = bench(lambda: torch.mm(x, w.t()))
            print(f"  round {r}: plain {t['plain']:.3f} ms signal {t['signal']:.3f} ms -> plain/signal "
                  f"{t['plain']/t['signal']:.4f} | cuBLAS {tb:.3f} ({tb/t['plain']:.3f}x plain)", flush=True)
