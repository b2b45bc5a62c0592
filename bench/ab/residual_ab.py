"""residual_ab.py: a GEMM with a full epilogue input (a residual) against cuBLAS's own, for one library build.

On a GPU from the repository root: `WSFUSE_LIB=path/to/libwsfuse.so python3 bench/ab/residual_ab.py TAG SHAPES`,
SHAPES a comma-separated list of MxNxK; run it once a build and round, alternating the builds (two builds
of one soname cannot share a process).  For each shape, bf16 x [M, K] by w [N, K]^T: wsfuse's default
GEMM, the same plus a bf16 residual r [M, N] (o = x w^T + r), and plus an f32 one; peers torch.mm and
torch.addmm(r, x, w^T) (cuBLAS reading C in its epilogue).  Every output checked against f32 first
(outputs poisoned with NaN), then do_bench's median with L2 flushed.  Prints one line: TAG, then each
shape's wsfuse times and the ratios mm / gemm, addmm / gemm+r (above 1 wsfuse is faster).  An optional
third argument, "name=body;name=body" (abcommon.variants), times the residual GEMMs under each schedule
body too: `... TAG SHAPES "pp192=consumers: pingpong, tile: [128, 192, 64]"`.
"""
from abcommon import usage; usage(__doc__, 2)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench, gemm_operands, gemm_spec, variants

RES = """fusion: gemm_res
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
  r: {{dtype: {dt}, shape: [M, N]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
  - {{out: o, op: add, in: [y, r]}}
outputs:
  o: {{dtype: bf16}}
{sched}"""


def checked(run, out, ref, what):
    out.fill_(float("nan")); run(); torch.cuda.synchronize()
    e = ((out.float() - ref).norm() / ref.norm()).item()
    assert e < 1e-2, (what, e)


extra = {v: s for v, s in variants(sys.argv[3]).items() if s} if len(sys.argv) > 3 else {}
out = []
for sh in sys.argv[2].split(","):
    m, n, k = map(int, sh.split("x"))
    x, w, o = gemm_operands(m, n, k)
    r16 = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    r32 = torch.randn(m, n, device="cuda", dtype=torch.float32)
    ref = x.float() @ w.float().t()
    with wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        plain = ctx.compile_string(gemm_spec(""), name="gemm.yaml")
        res16 = ctx.compile_string(RES.format(dt="bf16", sched=""), name="res16.yaml")
        res32 = ctx.compile_string(RES.format(dt="f32", sched=""), name="res32.yaml")
        vk = {v: ctx.compile_string(RES.format(dt="bf16", sched=sc), name=f"{v}.yaml") for v, sc in extra.items()}
        runs = {"gemm": lambda: plain.launch(x, w, o), "gemm+r16": lambda: res16.launch(x, w, r16, o),
                "gemm+r32": lambda: res32.launch(x, w, r32, o), "mm": lambda: torch.mm(x, w.t(), out=o),
                "addmm": lambda: torch.addmm(r16, x, w.t(), out=o)}
        for v, kk in vk.items():
            runs["r16 " + v] = lambda kk=kk: kk.launch(x, w, r16, o)
            checked(runs["r16 " + v], o, ref + r16.float(), v)
        checked(runs["gemm"], o, ref, "gemm")
        checked(runs["gemm+r16"], o, ref + r16.float(), "gemm+r16")
        checked(runs["gemm+r32"], o, ref + r32, "gemm+r32")
        checked(runs["addmm"], o, ref + r16.float(), "addmm")
        t = {nm: bench(fn) * 1000 for nm, fn in runs.items()}
    out.append(f"{sh} gemm {t['gemm']:.1f}us r16 {t['gemm+r16']:.1f}us r32 {t['gemm+r32']:.1f}us "
               f"(mm/gemm {t['mm'] / t['gemm']:.3f}, addmm/r16 {t['addmm'] / t['gemm+r16']:.3f}, "
               f"r16/gemm {t['gemm+r16'] / t['gemm']:.3f}, r32/gemm {t['gemm+r32'] / t['gemm']:.3f})"
               + "".join(f" r16 {v} {t['r16 ' + v]:.1f}us (addmm/ {t['addmm'] / t['r16 ' + v]:.3f})" for v in vk))
print(sys.argv[1], " | ".join(out), flush=True)
