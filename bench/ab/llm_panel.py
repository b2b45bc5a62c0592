"""llm_panel.py: the plain GEMM against cuBLAS at LLM layer shapes (issue 17).

On a GPU from the repository root: `python3 bench/ab/llm_panel.py [--flush] [--rounds R] [--shapes
MxNxK,...] [--variants "name=body;..."]`.  The shapes (without --shapes): Llama 3 8B's qkv (N 6144,
K 4096), o (4096, 4096), gate_up (28672, 4096) and down (4096, 14336), and 70B's at tensor parallel
8 (1280, 8192; 8192, 1024; 7168, 8192; 8192, 3584), at M = 16, 128, 512, 2048 and 8192 tokens:
y = x w^T in bf16, each variant (abcommon.variants; the default schedule without --variants)
compiled and checked against f32 first.  Timed by CUDA-graph replays (back to back: L2 keeps what
the call before left, as when one layer's weights are reused) below 2^34 multiply-adds, else by
do_bench with L2 flushed; --flush times every shape flushed (a decode step's weights come from DRAM).
cuBLAS is timed before and after the variants (both printed; the ratio is to their mean).  Prints a
line a shape and round as it goes, then each variant's geometric mean over the shapes (each shape's
median over the rounds) and its five worst shapes.
"""
import sys; sys.path.insert(0, "python")
import argparse, math, statistics
from abcommon import bench, graph_us, shape_variants, variants

LAYERS = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
          (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)]
TOKENS = [16, 128, 512, 2048, 8192]

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--flush", action="store_true", help="every shape by do_bench, L2 flushed")
p.add_argument("--rounds", type=int, default=1)
p.add_argument("--shapes", default=",".join(f"{m}x{n}x{k}" for m in TOKENS for n, k in LAYERS))
p.add_argument("--variants", default=None)
a = p.parse_args()
import torch   # after --help, which needs no torch
ratios = {}
for sh, x, w, y, ks in shape_variants(a.shapes, variants(a.variants)):
    m, n, k = map(int, sh.split("x"))
    time = graph_us if m * n * k < 2 ** 34 and not a.flush else (lambda fn: bench(fn) * 1000)
    for r in range(a.rounds):
        before = time(lambda: torch.mm(x, w.t(), out=y))
        t = {v: time(lambda: kk.launch(x, w, y)) for v, kk in ks.items()}
        after = time(lambda: torch.mm(x, w.t(), out=y))
        tc = (before + after) / 2
        for v, u in t.items():
            ratios.setdefault(v, {}).setdefault(sh, []).append(tc / u)
        print(f"{sh} r{r}: cuBLAS {before:.1f}/{after:.1f}us | " +
              " ".join(f"{v} {u:.1f}us ({tc / u:.3f})" for v, u in t.items()), flush=True)
for v, per in ratios.items():
    med = {sh: statistics.median(q) for sh, q in per.items()}
    gm = math.exp(sum(math.log(q) for q in med.values()) / len(med))
    worst = sorted(med.items(), key=lambda kv: kv[1])[:5]
    print(f"{v}: geometric mean cuBLAS / {v} {gm:.3f} over {len(med)} shapes; worst " +
          ", ".join(f"{sh} {q:.3f}" for sh, q in worst))
