"""cluster_ab.py: matmul clusters of two CTAs (TMA multicast of the shared operand, issue 17) against one.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/cluster_ab.py [ROUNDS]`.
Each shape compiled three times in one process, the default tile each time: `cluster: [1, 1]`,
`cluster: [2, 1]` (two row tiles share B's slice) and `cluster: [1, 2]` (two column tiles share A's);
and torch.mm (cuBLAS).  Rounds alternate the order; medians of do_bench(rep=200).  Every kernel's
output is checked against torch first.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, triton, wsfuse
from abcommon import bench, gemm_spec
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (8192, 14336, 4096), (16384, 1024, 8192), (2048, 2048, 2048)]
for (m, n, k) in SHAPES:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    flop = 2 * m * n * k
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        ks = {"c1x1": ctx.compile_string(gemm_spec("schedule: {cluster: [1, 1]}\n"), name="a.yaml"),
              "c2x1": ctx.compile_string(gemm_spec("schedule: {cluster: [2, 1]}\n"), name="b.yaml"),
              "c1x2": ctx.compile_string(gemm_spec("schedule: {cluster: [1, 2]}\n"), name="c.yaml")}
        ref = (x.float() @ w.float().t())
        for nm, kern in ks.items():
            y.fill_(float("nan"))
            kern.launch(x, w, y); torch.cuda.synchronize()
            err = ((y.float() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (nm, err)
        print(f"{m}x{n}x{k}: outputs checked", flush=True)
        for r in range(ROUNDS):
            order = [(nm, (lambda kern: lambda: kern.launch(x, w, y))(kern)) for nm, kern in ks.items()]
            order.append(("cublas", lambda: torch.mm(x, w.t(), out=y)))
            if r % 2:
                order.reverse()
            t = {nm: bench(fn) for nm, fn in order}
            print(f"  round {r}: " + " ".join(f"{nm} {t[nm]*1e3:.1f}us ({flop / t[nm] / 1e9:.0f} TF/s)" for nm in t) +
                  " -> cuBLAS/x: " + " ".join(f"{nm} {t['cublas']/t[nm]:.4f}" for nm in ks), flush=True)
