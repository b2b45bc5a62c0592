"""small_m_ab.py: GEMMs with few output rows (decode steps; issue 17): the default against other tiles and cuBLAS.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/small_m_ab.py`.
x [M, 4096] by w [8192, 4096]^T for M = 64, 16, 128: the default (ping-pong 64-row tiles for M <= 64),
cooperative, ping-pong at three tile widths and a 128 x 128 tile, each checked first, then three
rounds alternating the order (do_bench rep=100, median) with torch.mm in each.
"""
import sys; sys.path.insert(0, "python")
import torch, triton, wsfuse
from abcommon import gemm_spec
def bench(fn): return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
VARIANTS = {"default": "", "coop": "schedule: {consumers: cooperative}\n", "pp64x64": "schedule: {consumers: pingpong, tile: [64, 64, 64]}\n",
            "pp64x128": "schedule: {consumers: pingpong, tile: [64, 128, 64]}\n", "pp64x256": "schedule: {consumers: pingpong}\n",
            "n128": "schedule: {tile: [128, 128, 64]}\n"}
for (m, n, k) in [(64, 8192, 4096), (16, 8192, 4096), (128, 8192, 4096)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        ks = {v: ctx.compile_string(gemm_spec(s), name=f"{v}.yaml") for v, s in VARIANTS.items()}
        ref = x.float() @ w.float().t()
        for v, kk in ks.items():
            y.fill_(float("nan")); kk.launch(x, w, y); torch.cuda.synchronize()
            e = ((y.float() - ref).norm() / ref.norm()).item()
            assert e < 1e-2, (v, e)
        for r in range(3):
            t = {v: bench(lambda kk=kk: kk.launch(x, w, y)) * 1000 for v, kk in (ks.items() if r % 2 == 0 else reversed(list(ks.items())))}
            tc = bench(lambda: torch.mm(x, w.t(), out=y)) * 1000
            print(f"{m}x{n}x{k} round {r}: cuBLAS {tc:.1f} us | " + " ".join(f"{v} {u:.1f} ({tc/u:.2f}x)" for v, u in t.items()), flush=True)
