"""coop256_ab.py: the 256 x 128 cooperative tile against the default 128 x 256 (issue 17).

On a GPU from the repository root: `python3 bench/ab/coop256_ab.py [MxNxK ...]`.  Each shape
with the default, tile [256, 128, 64] at clusters [1, 1], [1, 2], [2, 1], and torch.mm, each
checked first, then three rounds alternating the order (do_bench rep=200, median); then SwiGLU
8192x14336x4096 with tile [256, 64, 64] the same way against torch.compile.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse, torch.nn.functional as F
from abcommon import bench, checked_gemms, gemm_operands
V = {"default": "", "t256c11": "schedule: {tile: [256, 128, 64], cluster: [1, 1]}\n",
     "t256c12": "schedule: {tile: [256, 128, 64], cluster: [1, 2]}\n",
     "t256c21": "schedule: {tile: [256, 128, 64], cluster: [2, 1]}\n"}
shapes = [tuple(map(int, a.split("x"))) for a in sys.argv[1:]] or [(4096,)*3, (8192,)*3, (8192, 14336, 4096), (16384, 1024, 8192), (2048,)*3]
for (m, n, k) in shapes:
    x, w, y = gemm_operands(m, n, k)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        ks = checked_gemms(ctx, V, x, w, y)
        for r in range(3):
            t = {v: bench(lambda kk=kk: kk.launch(x, w, y)) * 1000 for v, kk in (ks.items() if r % 2 == 0 else reversed(list(ks.items())))}
            tc = bench(lambda: torch.mm(x, w.t(), out=y)) * 1000
            print(f"{m}x{n}x{k} r{r}: cuBLAS {tc:.1f}us {2*m*n*k/tc/1e6:.0f}TF | " + " ".join(f"{v} {u:.1f}({tc/u:.3f})" for v, u in t.items()), flush=True)
# SwiGLU
SW = open("examples/swiglu.yaml").read()
m, f, k = 8192, 14336, 4096
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
wg = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
wu = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
h = torch.empty(m, f, device="cuda", dtype=torch.bfloat16)
SV = {"default": "", "t256c11": "  tile: [256, 64, 64]\n  cluster: [1, 1]\n", "t256c12": "  tile: [256, 64, 64]\n  cluster: [1, 2]\n",
      "t256c21": "  tile: [256, 64, 64]\n  cluster: [2, 1]\n"}
comp = torch.compile(lambda x, a, b: F.silu(F.linear(x, a)) * F.linear(x, b)); comp(x, wg, wu)
ref = F.silu(F.linear(x, wg).float()) * F.linear(x, wu).float()
with wsfuse.Context(sizes={"M": m, "F": f, "K": k}, cache="0") as ctx:
    ks = {v: ctx.compile_string(SW + s, name=f"sw{v}.yaml") for v, s in SV.items()}
    for v, kk in ks.items():
        h.fill_(float("nan")); kk.launch(x, wg, wu, h); torch.cuda.synchronize()
        e = ((h.float() - ref).norm() / ref.norm()).item()
        assert e < 1e-2, (v, e)
    for r in range(3):
        t = {v: bench(lambda kk=kk: kk.launch(x, wg, wu, h)) * 1000 for v, kk in (ks.items() if r % 2 == 0 else reversed(list(ks.items())))}
        tc = bench(lambda: comp(x, wg, wu)) * 1000
        print(f"swiglu r{r}: compile {tc:.1f}us | " + " ".join(f"{v} {u:.1f}({tc/u:.3f})" for v, u in t.items()), flush=True)
