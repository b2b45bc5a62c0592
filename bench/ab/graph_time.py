"""graph_time.py: GPU time a launch without the host's, for shapes whose kernels are shorter than a launch.

On a GPU from the repository root: `python3 bench/ab/graph_time.py 16x8192x4096,1024x1024x1024 "default=;c128=tile: [128, 64, 64]"`.
Each variant (name=schedule body; empty: the default) and torch.mm: 20 launches captured in a CUDA
graph, replayed 7 times and timed by events (median / 20), two rounds in alternating order, the
best round reported with cuBLAS / variant.  Launches back to back: each starts while the one
before ends (wsfuse's programmatic dependent launch), and L2 holds what the one before left.
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch
from abcommon import graph_us, shape_variants, variants
for sh, x, w, y, ks in shape_variants(sys.argv[1], variants(sys.argv[2] if len(sys.argv) > 2 else None)):
    res = {}
    for r in range(2):
        for v, kk in (ks.items() if r == 0 else reversed(list(ks.items()))):
            res.setdefault(v, []).append(graph_us(lambda kk=kk: kk.launch(x, w, y)))
        res.setdefault("cublas", []).append(graph_us(lambda: torch.mm(x, w.t(), out=y)))
    cb = min(res["cublas"])
    print(f"{sh}: cuBLAS {cb:.1f}us | " + " ".join(f"{v} {min(t):.1f}({cb/min(t):.2f})" for v, t in res.items() if v != "cublas"), flush=True)
