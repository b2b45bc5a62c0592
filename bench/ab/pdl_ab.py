"""pdl_ab.py: programmatic dependent launch, on and off (issue 17), against cuBLAS.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/pdl_ab.py`.
Eight GEMMs back to back on one stream (each reads x and w, writes y), timed together with
do_bench(rep=200, median) and divided by eight; the same kernel with option pdl=1 (the
default: each may start while the one before finishes, and waits for it in griddepcontrol.wait)
and pdl=0 (ordinary launches), and torch.mm into the same y. Six rounds alternating the order.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, gemm_spec
SPEC = gemm_spec()
CHAIN = 8
for (m, n, k) in [(2048, 2048, 2048), (4096, 4096, 1024), (1024, 1024, 1024)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context() as on, wsfuse.Context(pdl="0") as off:
        kon = on.compile_string(SPEC, name="g.yaml")
        koff = off.compile_string(SPEC, name="g.yaml")
        def chain(kern):
            def run():
                for _ in range(CHAIN):
                    kern.launch(x, w, y)
            return run
        def cublas():
            for _ in range(CHAIN):
                torch.mm(x, w.t(), out=y)
        kon.launch(x, w, y); torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        print(f"{m}x{n}x{k}: rel err {((y.float() - ref).norm() / ref.norm()).item():.1e}", flush=True)
        for r in range(6):
            order = [("pdl", chain(kon)), ("plain", chain(koff)), ("cublas", cublas)]
            if r % 2:
                order.reverse()
            t = {nm: bench(fn) / CHAIN * 1000 for nm, fn in order}
            print(f"  round {r}: pdl {t['pdl']:.2f} us plain {t['plain']:.2f} us cuBLAS {t['cublas']:.2f} us -> "
                  f"plain/pdl {t['plain']/t['pdl']:.4f} cuBLAS/pdl {t['cublas']/t['pdl']:.4f} "
                  f"cuBLAS/plain {t['cublas']/t['plain']:.4f}", flush=True)
