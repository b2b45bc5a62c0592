"""fused_sched.py: the fused matmul examples under schedule variants, against their peers.

On a GPU from the repository root:
    python3 bench/ab/fused_sched.py swiglu "default=;c21=cluster: [2, 1]" 4
    python3 bench/ab/fused_sched.py bias_gelu "default=;pp=consumers: pingpong, tile: [128, 192, 64]" 4
swiglu: examples/swiglu.yaml at 8192x14336x4096 against torch.compile (two cuBLAS GEMMs and a
fused silu * mul); bias_gelu: examples/gemm_bias_gelu.yaml at 8192^3 against torch.compile and
cuBLASLt's fused bias + gelu(tanh) epilogue (torch._addmm_activation).  Each variant (name=the
body of its `schedule: {...}`; empty: the example's own) is checked against an f32 reference
(relative error norm under 1e-2), then ROUNDS interleaved rounds (the order alternating), one
process, do_bench's median (abcommon.bench); prints each round and the median peer / variant.
A fourth argument MxNxK sets the sizes (swiglu: N is F); the body `auto` drops the example's
schedule (wsfuse's built-in choice).
"""
from abcommon import usage; usage(__doc__, 1)
import sys, statistics
sys.path.insert(0, "python"); sys.path.insert(0, "bench/ab")
import torch, torch.nn.functional as F, wsfuse
from abcommon import bench
case = sys.argv[1]
V = dict(v.split("=", 1) for v in sys.argv[2].split(";")) if len(sys.argv) > 2 else {"default": ""}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
shape = tuple(map(int, sys.argv[4].split("x"))) if len(sys.argv) > 4 else None
if case == "swiglu":
    m, n, k = shape or (8192, 14336, 4096)
    base, sizes = open("examples/swiglu.yaml").read(), {"M": m, "F": n, "K": k}
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    a = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    args, flop = (x, a, b), 4 * m * n * k
    ref = F.silu(F.linear(x, a).float()) * F.linear(x, b).float()
    comp = torch.compile(lambda x, a, b: F.silu(F.linear(x, a)) * F.linear(x, b))
    peers = {"compile": lambda: comp(*args)}
else:
    m, n, k = shape or (8192, 8192, 8192)
    base, sizes = open("examples/gemm_bias_gelu.yaml").read(), {"M": m, "N": n, "K": k}
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    a = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    args, flop = (x, a, b), 2 * m * n * k
    ref = F.gelu(F.linear(x.float(), a.float(), b.float()), approximate="tanh")
    comp = torch.compile(lambda x, a, b: F.gelu(F.linear(x, a, b), approximate="tanh"))
    peers = {"compile": lambda: comp(*args), "cublaslt": lambda: torch._addmm_activation(b, x, a.t(), use_gelu=True)}
comp(*args)
head = base[:base.index("schedule:")]
ks = {}
with wsfuse.Context(sizes=sizes, cache="0") as ctx:
    for name, body in V.items():
        spec = base if not body else head if body == "auto" else head + "schedule: {" + body + "}\n"
        try:
            ks[name] = ctx.compile_string(spec, name=f"{name}.yaml")
        except wsfuse.Error as e:
            print(name, "ERR", str(e).splitlines()[0][:200]); continue
        h = ks[name](*args)
        err = ((h.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (name, err)
    ratio = {(p, nm): [] for p in peers for nm in ks}
    for r in range(rounds):
        order = list(ks.items()) if r % 2 == 0 else list(ks.items())[::-1]
        tp = {p: bench(fn) for p, fn in peers.items()}
        line = [f"round {r}: " + " ".join(f"{p} {t:.3f}" for p, t in tp.items())]
        for nm, kk in order:
            t = bench(lambda kk=kk: kk(*args))
            for p in peers:
                ratio[(p, nm)].append(tp[p] / t)
            line.append(f"{nm} {t:.3f} ({flop / t / 1e9:.0f} TF, {tp['compile'] / t:.3f}x)")
        print(" | ".join(line), flush=True)
    for (p, nm), rs in ratio.items():
        print(f"{m}x{n}x{k} {nm}: {p}/wsfuse median {statistics.median(rs):.4f} ({min(rs):.4f}-{max(rs):.4f})", flush=True)
