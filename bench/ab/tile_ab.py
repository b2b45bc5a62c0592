"""tile_ab.py: the default tile's N narrowed for GEMMs of few tiles (issue 17), against N = 256 and cuBLAS.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/tile_ab.py`.
Each shape compiled twice in one process: the default (N narrowed to 128 or 64 while the output has
fewer than 132 tiles) and `tile: [128, 256, 64]` (the old default), and torch.mm; six rounds
alternating the order, medians of do_bench(rep=200).
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, triton, wsfuse
from abcommon import bench, gemm_spec
for (m, n, k) in [(1024, 1024, 1024), (2048, 2048, 2048), (64, 8192, 4096), (16, 8192, 4096), (1024, 4096, 4096)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        kd = ctx.compile_string(gemm_spec(""), name="d.yaml")
        kw = ctx.compile_string(gemm_spec("schedule: {tile: [128, 256, 64]}\n"), name="w.yaml")
        tile = kd.text("kernel-ir").splitlines()[0].split("tile=")[1].split("]")[0] + "]"
        kd.launch(x, w, y); torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        print(f"{m}x{n}x{k}: default tile {tile}, rel err {((y.float() - ref).norm() / ref.norm()).item():.1e}",
              flush=True)
        for r in range(6):
            order = [("default", lambda: kd.launch(x, w, y)), ("n256", lambda: kw.launch(x, w, y)),
                     ("cublas", lambda: torch.mm(x, w.t(), out=y))]
            if r % 2:
                order.reverse()
            t = {nm: bench(fn) * 1000 for nm, fn in order}
            print(f"  round {r}: default {t['default']:.2f} us n256 {t['n256']:.2f} us cuBLAS {t['cublas']:.2f} us -> "
                  f"n256/default {t['n256']/t['default']:.4f} cuBLAS/default {t['cublas']/t['default']:.4f}", flush=True)
