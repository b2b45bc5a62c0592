"""build_ab.py: the default GEMM of one library build against cuBLAS, to compare builds in processes of their own.

On a GPU from the repository root: `WSFUSE_LIB=path/to/libwsfuse.so python3 bench/ab/build_ab.py TAG 16x8192x4096,4096x4096x4096`,
alternating an old build's library and the new one's over rounds (each run its own process: two builds of
one soname cannot share one).  Each shape MxNxK: y = x w^T in bf16 with the default schedule, checked
against f32 first, then cuBLAS / wsfuse: GPU time from CUDA-graph replays (graph_us) below 2^34 multiply-adds,
where a launch outlasts the kernel, else do_bench's median with L2 flushed.  Prints one line: TAG, then
each shape's time and ratio (above 1 wsfuse is faster).
"""
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import gemm_operands, gemm_spec, bench, graph_us
out = []
for sh in sys.argv[2].split(","):
    m, n, k = map(int, sh.split("x"))
    x, w, y = gemm_operands(m, n, k)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        kern = ctx.compile_string(gemm_spec(""), name="gemm.yaml")
        y.fill_(float("nan")); kern.launch(x, w, y); torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        e = ((y.float() - ref).norm() / ref.norm()).item(); assert e < 1e-2, (sh, e)
        time = graph_us if m * n * k < 2 ** 34 else (lambda fn: bench(fn) * 1000)
        tw = time(lambda: kern.launch(x, w, y)); tc = time(lambda: torch.mm(x, w.t(), out=y))
    out.append(f"{sh} {tw:.1f}us ({tc / tw:.3f})")
print(sys.argv[1], " | ".join(out), flush=True)
