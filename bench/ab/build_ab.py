"""build_ab.py: the default GEMM of one library build against cuBLAS, to compare builds in processes of their own.

On a GPU from the repository root: `WSFUSE_LIB=path/to/libwsfuse.so python3 bench/ab/build_ab.py TAG 16x8192x4096,4096x4096x4096`,
alternating an old build's library and the new one's over rounds (each run its own process: two builds of
one soname cannot share one).  Each shape MxNxK: y = x w^T in bf16 with the default schedule, checked
against f32 first, then cuBLAS / wsfuse: GPU time from CUDA-graph replays (graph_us) below 2^34 multiply-adds,
where a launch outlasts the kernel, else do_bench's median with L2 flushed.  Prints one line: TAG, then
each shape's time and ratio (above 1 wsfuse is faster).  An optional third argument, "name=body;...",
times those schedule variants instead of the default (abcommon.variants), one entry a shape and variant.
AB_FLUSH=1 times every shape with do_bench (L2 flushed) instead of the replays.
"""
from abcommon import usage; usage(__doc__, 2)
import sys; sys.path.insert(0, "python")
import os, torch
from abcommon import bench, graph_us, shape_variants, variants
out = []
for sh, x, w, y, ks in shape_variants(sys.argv[2], variants(sys.argv[3] if len(sys.argv) > 3 else None)):
    m, n, k = map(int, sh.split("x"))
    time = graph_us if m * n * k < 2 ** 34 and os.environ.get("AB_FLUSH") != "1" else (lambda fn: bench(fn) * 1000)
    tc = time(lambda: torch.mm(x, w.t(), out=y))
    for v, kern in ks.items():
        tw = time(lambda: kern.launch(x, w, y))
        out.append(f"{sh} {v} {tw:.1f}us ({tc / tw:.3f})")
print(sys.argv[1], " | ".join(out), flush=True)
