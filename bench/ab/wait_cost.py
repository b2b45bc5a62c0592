"""wait_cost.py: what waiting per tile for an input (wait: per_tile) and a system-scope signal cost a GEMM.

On a GPU from the repository root (build/libwsfuse.so built): `python3 bench/ab/wait_cost.py [ROUNDS]`.
bf16 x [M, K] by w [N, K]^T plus an f32 input p [M, N] in the epilogue, in one process: p plain,
p with wait: per_tile (its flags already the epoch: the waits find them set), and the plain GEMM
with signal: per_tile at gpu and at system scope.  Rounds alternate the order; medians of
do_bench(rep=200); every output checked against torch first.
"""
from abcommon import usage; usage(__doc__)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, gemm_spec
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
ADD = """fusion: gemm_add
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
  p: {{dtype: f32, shape: [M, N]{wait}}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
  - {{out: o, op: add, in: [y, p]}}
outputs:
  o: {{dtype: bf16}}
schedule: {{tile: [128, 256, 64], cluster: [1, 1]}}
"""
SIG = "schedule: {{signal: {{per_tile, scope: {scope}}}, tile: [128, 256, 64]}}\n"   # the plain GEMM's
for (m, n, k) in [(8192, 8192, 4096), (4096, 4096, 4096)]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    p = torch.randn(m, n, device="cuda", dtype=torch.float32)
    o = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = x.float() @ w.float().t()
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}) as ctx:
        plain = ctx.compile_string(ADD.format(wait=""), name="plain.yaml")
        waits = ctx.compile_string(ADD.format(wait=", wait: per_tile"), name="wait.yaml")
        gpu = ctx.compile_string(gemm_spec(SIG.format(scope="gpu")), name="gpu.yaml")
        sys_ = ctx.compile_string(gemm_spec(SIG.format(scope="system")), name="sys.yaml")
        words = waits.signal_layout(x, w, p, o)["flags"]
        ready = torch.full((words,), 1, device="cuda", dtype=torch.int32)
        flags = torch.zeros(gpu.signal_layout(x, w, o)["flags"], device="cuda", dtype=torch.int32)
        epoch = [1]
        def sig(kern):
            def run():
                epoch[0] += 1
                kern.launch(x, w, o, flags=flags, epoch=epoch[0])
            return run
        runs = {"plain": lambda: plain.launch(x, w, p, o),
                "wait": lambda: waits.launch(x, w, p, o, wait_flags=ready, epoch=1),
                "signal_gpu": sig(gpu), "signal_sys": sig(sys_)}
        for nm in ("plain", "wait"):
            o.fill_(float("nan")); runs[nm](); torch.cuda.synchronize()
            err = ((o.float() - ref - p).norm() / (ref + p).norm()).item(); assert err < 1e-2, (nm, err)
        for nm in ("signal_gpu", "signal_sys"):
            o.fill_(float("nan")); runs[nm](); torch.cuda.synchronize()
            err = ((o.float() - ref).norm() / ref.norm()).item(); assert err < 1e-2, (nm, err)
            assert bool((flags == epoch[0]).all()), nm
        print(f"{m}x{n}x{k}: outputs and flags checked", flush=True)
        for r in range(ROUNDS):
            order = list(runs.items())
            if r % 2: order.reverse()
            t = {nm: bench(fn) * 1e3 for nm, fn in order}
            print(f"  round {r}: " + " ".join(f"{nm} {t[nm]:.1f}us" for nm in runs) +
                  f" -> wait/plain {t['wait'] / t['plain']:.4f} sys/gpu {t['signal_sys'] / t['signal_gpu']:.4f}",
                  flush=True)
