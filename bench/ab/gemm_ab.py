"""gemm_ab.py: A/B of two libwsfuse builds on gemm 8192^3 and gemm + bias + gelu 8192^3.

Build the old revision into build/ab (e.g. `git worktree add /tmp/old REV && make -C /tmp/old
build/libwsfuse.so && mkdir -p build/ab && cp -a /tmp/old/build/libwsfuse.so* build/ab/`), the
new one into build, then on a GPU from the repository root: `python3 bench/ab/gemm_ab.py`.
Each round runs each build in a process of its own (old first), which times the wsfuse kernels
against cuBLAS and torch.compile in that process; ratios above 1: wsfuse faster.
"""
from abcommon import usage; usage(__doc__)
import sys, os, subprocess
sys.path.insert(0, "python")
import torch
import torch.nn.functional as F
from abcommon import gemm_spec, bench as bench_rep
def bench(fn): return bench_rep(fn, rep=300)
mode = sys.argv[1] if len(sys.argv) > 1 else "drive"
if mode == "drive":
    for r in range(3):
        for lib in ["build/ab/libwsfuse.so", "build/libwsfuse.so"]:
            env = dict(os.environ, WSFUSE_LIB=lib)
            out = subprocess.run([sys.executable, __file__, "one"], env=env, capture_output=True, text=True)
            print(f"round {r} {lib}: {out.stdout.strip()} {out.stderr.strip()[-300:]}", flush=True)
    sys.exit(0)
import wsfuse
SPEC = open("examples/gemm_bias_gelu.yaml").read()
PLAIN = gemm_spec()
m = n = k = 8192
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
    kp = ctx.compile_string(PLAIN, name="gemm.yaml")
    kg = ctx.compile_string(SPEC, name="gemm_bias_gelu.yaml")
    kp(x, w); kg(x, w, b)
    comp = torch.compile(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"))
    comp(x, w, b)
    t = [bench(lambda: kp(x, w)), bench(lambda: F.linear(x, w)), bench(lambda: kg(x, w, b)), bench(lambda: comp(x, w, b))]
    print(f"gemm {t[0]:.3f} cuBLAS {t[1]:.3f} -> {t[1]/t[0]:.3f}x | gelu {t[2]:.3f} compile {t[3]:.3f} -> {t[3]/t[2]:.3f}x")
