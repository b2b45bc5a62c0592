"""kslope.py: where a GEMM's time goes, from its K-slope (issue 17).

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/kslope.py`.
M = N = 4096 at K = 256 .. 8192 for wsfuse's default (128 x 256, cluster [2, 1]), cluster [1, 1],
the 256 x 128 tile with cluster [1, 2] (cuBLAS's choice at this shape) and torch.mm; three rounds
alternating the order (do_bench rep=150, median), then a line fit over K >= 1024: the slope is
the k loop's rate, the intercept what does not grow with K (prologue, epilogue, tail).
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, gemm_spec
V = {"default": "", "c11": "schedule: {cluster: [1, 1]}\n", "t256c12": "schedule: {tile: [256, 128, 64], cluster: [1, 2]}\n"}
m = n = 4096
res = {}
for k in [256, 512, 1024, 2048, 4096, 8192]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        ks = {v: ctx.compile_string(gemm_spec(s), name=f"{v}.yaml") for v, s in V.items()}
        ks["cublas"] = None
        for r in range(3):
            for v, kk in (ks.items() if r % 2 == 0 else reversed(list(ks.items()))):
                t = bench((lambda kk=kk: kk.launch(x, w, y)) if kk else (lambda: torch.mm(x, w.t(), out=y)), rep=150) * 1000
                res.setdefault((v, k), []).append(t)
    print(f"K={k}: " + " ".join(f"{v} {sorted(res[(v,k)])[1]:.1f}" for v in ks), flush=True)
import numpy as np
for v in ["default", "c11", "t256c12", "cublas"]:
    ksz = [k for (vv, k) in res if vv == v]
    t = [sorted(res[(v, k)])[1] for k in ksz]
    b, a = np.polyfit(ksz[2:], t[2:], 1)
    print(f"{v}: t = {a:.1f}us + {b*1000:.2f}us per 1000 K (fit K>=1024); per-wave-tile intercept")
