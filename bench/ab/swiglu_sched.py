"""swiglu_sched.py: SwiGLU 8192x14336x4096 (examples/swiglu.yaml) under schedule variants, against torch.compile.

On a GPU from the repository root:
    python3 bench/ab/swiglu_sched.py "default=;c21=cluster: [2, 1]" 4
Each variant (name=the body of its `schedule: {...}`; empty: the example's own) and torch.compile
(two cuBLAS GEMMs and a fused silu * mul) in ROUNDS interleaved rounds (the order alternating), one
process, do_bench's median (abcommon.bench); prints each round and the median compile / variant.
"""
import sys, statistics
sys.path.insert(0, "python"); sys.path.insert(0, "bench/ab")
import torch, torch.nn.functional as F, wsfuse
from abcommon import bench
V = dict(v.split("=", 1) for v in sys.argv[1].split(";")) if len(sys.argv) > 1 else {"default": ""}
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
base = open("examples/swiglu.yaml").read()
head = base[:base.index("schedule:")]
m, f, k = 8192, 14336, 4096
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
wg = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
wu = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
ref = F.silu(F.linear(x, wg).float()) * F.linear(x, wu).float()
comp = torch.compile(lambda x, a, b: F.silu(F.linear(x, a)) * F.linear(x, b))
comp(x, wg, wu)
ks = {}
with wsfuse.Context(sizes={"M": m, "F": f, "K": k}, cache="0") as ctx:
    for name, body in V.items():
        spec = base if not body else head + "schedule: {" + body + "}\n"
        try:
            ks[name] = ctx.compile_string(spec, name=f"{name}.yaml")
        except wsfuse.Error as e:
            print(name, "ERR", str(e).splitlines()[0][:200]); continue
        h = ks[name](x, wg, wu)
        err = ((h.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (name, err)
    ratio = {n: [] for n in ks}
    for r in range(rounds):
        order = list(ks.items()) if r % 2 == 0 else list(ks.items())[::-1]
        tc = bench(lambda: comp(x, wg, wu))
        line = [f"round {r}: compile {tc:.3f}"]
        for n, kk in order:
            t = bench(lambda kk=kk: kk(x, wg, wu))
            ratio[n].append(tc / t)
            line.append(f"{n} {t:.3f} ({tc / t:.3f}x)")
        print(" | ".join(line), flush=True)
    for n, rs in ratio.items():
        print(f"{n}: compile/wsfuse median {statistics.median(rs):.4f} ({min(rs):.4f}-{max(rs):.4f}), "
              f"{4 * m * f * k / 1e12:.2f} TFLOP", flush=True)
