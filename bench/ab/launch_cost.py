"""launch_cost.py: what a launch costs the host (python binding, C library, torch.mm).

On a GPU from the repository root: `python3 bench/ab/launch_cost.py`.  2000 launches of a
GEMM whose kernel is shorter than its launch, timed on the host: the whole binding
(Kernel.launch), its argument conversion, torch's device guard and current stream, the C
call alone, and torch.mm for comparison.  WSFUSE_PY names another folder holding wsfuse.py
(with WSFUSE_LIB another library): an older build to compare with, in a process of its own.
"""
from abcommon import usage; usage(__doc__)
import os, sys, time; sys.path.insert(0, os.environ.get("WSFUSE_PY", "python"))
import torch, wsfuse, ctypes
from abcommon import gemm_spec
def per(fn, n=2000):
    for _ in range(50): fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize()
    return (t1 - t) / n * 1e6
for (m, n, k, cl) in [(128, 128, 128, ""), (1024, 1024, 1024, "schedule: {cluster: [2, 1]}\n")]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        kern = ctx.compile_string(gemm_spec(cl), name="g.yaml")
        args, keep, dev = kern._args((x, w, y))
        h = torch.cuda.current_stream().cuda_stream
        r = {
          "full launch": per(lambda: kern.launch(x, w, y)),
          "_args": per(lambda: kern._args((x, w, y))),
          "device ctx": per(lambda: torch.cuda.device(dev).__enter__()),
          "current_stream": per(lambda: torch.cuda.current_stream().cuda_stream),
          "C launch (ctx._call)": per(lambda: ctx._call(kern._lib.wsf_kernel_launch, kern._ptr, args, 3, ctypes.c_void_p(h))),
          "C launch raw": per(lambda: kern._lib.wsf_kernel_launch(ctx._ptr, kern._ptr, args, 3, ctypes.c_void_p(h))),
          "torch.mm": per(lambda: torch.mm(x, w.t(), out=y)),
        }
        print(f"{m}x{n}x{k} {cl.strip()}: " + " | ".join(f"{a} {b:.2f}us" for a, b in r.items()), flush=True)
