"""small_m_ab.py: GEMMs with few output rows (decode steps; issue 17): the default against other tiles and cuBLAS.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/small_m_ab.py`.
x [M, 4096] by w [8192, 4096]^T for M = 64, 16, 128: the default (ping-pong 64-row tiles for M <= 64),
cooperative, ping-pong at three tile widths and a 128 x 128 tile, each checked first, then three
rounds alternating the order (do_bench rep=100, median) with torch.mm in each.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, checked_gemms, gemm_operands
VARIANTS = {"default": "", "coop": "schedule: {consumers: cooperative}\n", "pp64x64": "schedule: {consumers: pingpong, tile: [64, 64, 64]}\n",
            "pp64x128": "schedule: {consumers: pingpong, tile: [64, 128, 64]}\n", "pp64x256": "schedule: {consumers: pingpong}\n",
            "n128": "schedule: {tile: [128, 128, 64]}\n"}
for (m, n, k) in [(64, 8192, 4096), (16, 8192, 4096), (128, 8192, 4096)]:
    x, w, y = gemm_operands(m, n, k)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        ks = checked_gemms(ctx, VARIANTS, x, w, y)
        for r in range(3):
            t = {v: bench(lambda kk=kk: kk.launch(x, w, y), rep=100) * 1000 for v, kk in (ks.items() if r % 2 == 0 else reversed(list(ks.items())))}
            tc = bench(lambda: torch.mm(x, w.t(), out=y), rep=100) * 1000
            print(f"{m}x{n}x{k} round {r}: cuBLAS {tc:.1f} us | " + " ".join(f"{v} {u:.1f} ({tc/u:.2f}x)" for v, u in t.items()), flush=True)
