"""swiglu_ab.py: A/B of two libwsfuse builds on SwiGLU 8192x14336x4096 (examples/swiglu.yaml).

Set up build/ab and build as bench/ab/gemm_ab.py says, then `python3 bench/ab/swiglu_ab.py`.
Four rounds, the order of the builds alternating, each build in a process of its own that
times the SwiGLU kernel, torch.compile (two cuBLAS GEMMs and a fused silu * mul) and the plain
gemm of one of its matmuls ("mainloop/plain": the SwiGLU's rate against the plain gemm's).
"""
from abcommon import usage; usage(__doc__)
import sys, os, subprocess
sys.path.insert(0, "python")
mode = sys.argv[1] if len(sys.argv) > 1 else "drive"
if mode == "drive":
    for r in range(4):
        libs = ["build/ab/libwsfuse.so", "build/libwsfuse.so"]
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            env = dict(os.environ, WSFUSE_LIB=lib)
            out = subprocess.run([sys.executable, __file__, "one"], env=env, capture_output=True, text=True)
            print(f"round {r} {lib.split('/')[1]:5s}: {out.stdout.strip()} {out.stderr.strip()[-300:]}", flush=True)
    sys.exit(0)
import torch, triton, torch.nn.functional as F, wsfuse
def bench(fn): return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
SW = open("examples/swiglu.yaml").read()
PLAIN = """fusion: gemm
inputs:
  x: {dtype: bf16, shape: [M, K]}
  w: {dtype: bf16, shape: [F, K]}
ops:
  - {out: y, op: matmul, in: [x, w], transpose_b: true}
outputs:
  y: {dtype: bf16}
"""
m, f, k = 8192, 14336, 4096
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
wg = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
wu = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
with wsfuse.Context(sizes={"M": m, "F": f, "K": k}) as ctx:
    ks = ctx.compile_string(SW, name="swiglu.yaml"); kp = ctx.compile_string(PLAIN, name="gemm.yaml")
    h = ks(x, wg, wu)
    ref = F.silu(F.linear(x, wg).float()) * F.linear(x, wu).float()
    err = ((h.float() - ref).norm() / ref.norm()).item()
    comp = torch.compile(lambda x, a, b: F.silu(F.linear(x, a)) * F.linear(x, b)); comp(x, wg, wu)
    ts = bench(lambda: ks(x, wg, wu)); tc = bench(lambda: comp(x, wg, wu)); tp = bench(lambda: kp(x, wg))
    print(f"err {err:.1e} swiglu {ts:.3f} ms ({4*m*f*k/ts/1e9:.0f} TFLOP/s) compile {tc:.3f} -> {tc/ts:.3f}x | "
          f"plain {tp:.3f}, mainloop/plain {2*tp/ts:.3f}")
