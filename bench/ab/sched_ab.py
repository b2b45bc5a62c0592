"""sched_ab.py: schedule variants of the plain GEMM against cuBLAS on large shapes, L2 flushed (issue 17).

On a GPU from the repository root: `python3 bench/ab/sched_ab.py 8192x8192x8192,4096x4096x4096
"default=;pp192=consumers: pingpong, tile: [128, 192, 64]" [ROUNDS]`.  Each variant (name=schedule
body; empty: the default) compiled in one process and checked (abcommon.checked_gemms), then ROUNDS
(default 3) rounds alternating the order, do_bench's median (rep=200) each; prints cuBLAS / variant
per round and the median over the rounds; quack's GEMM (tuned=False, its default 128 x 192 ping-pong)
as one more variant where quack imports.
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import statistics, torch
from abcommon import bench, shape_variants, variants
try:
    from quack import gemm_interface as quack
except Exception as e:
    print(f"note: quack does not import ({type(e).__name__}); it is left out"); quack = None
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
for sh, x, w, y, ks in shape_variants(sys.argv[1], variants(sys.argv[2] if len(sys.argv) > 2 else None)):
    m, n, k = map(int, sh.split("x"))
    ratio, fns = {}, {v: (lambda kk=kk: kk.launch(x, w, y)) for v, kk in ks.items()}
    if quack:
        fns["quack"] = lambda: quack.gemm(x, w.t(), tuned=False)
    for r in range(rounds):
        items = list(fns.items()) if r % 2 == 0 else list(reversed(fns.items()))
        t = {v: bench(f) * 1000 for v, f in items}
        tc = bench(lambda: torch.mm(x, w.t(), out=y)) * 1000
        for v, u in t.items():
            ratio.setdefault(v, []).append(tc / u)
        print(f"{sh} r{r}: cuBLAS {tc:.1f}us {2*m*n*k/tc/1e6:.0f}TF | " +
              " ".join(f"{v} {u:.1f}({tc/u:.3f})" for v, u in t.items()), flush=True)
    print(f"{sh} median cuBLAS/variant: " + " ".join(f"{v} {statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f})"
                                                   for v, q in ratio.items()), flush=True)
