"""abcommon.py: what the A/B scripts of this folder share (newer ones import it): the plain GEMM
spec with a schedule slot, the timer (docs/perf.md: do_bench's median) and --help."""
import sys


def usage(doc, nargs=0):
    """-h or --help prints DOC (the script's docstring: what it times, how to run it) and exits; fewer
    than NARGS arguments print it to stderr and exit 2.  Each script calls it before importing torch,
    so that its help reads on a machine without torch."""
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(doc.strip())
        sys.exit(0)
    if len(sys.argv) - 1 < nargs:
        print(f"{doc.strip()}\n\n{sys.argv[0]}: expected {nargs} argument{'s' if nargs > 1 else ''}, "
              f"saw {len(sys.argv) - 1}", file=sys.stderr)
        sys.exit(2)

# y = x w^T, bf16, sizes bound at compile; SCHED is a whole `schedule: {...}` line or empty
_GEMM = """fusion: gemm
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: bf16}}
{sched}"""


def gemm_spec(sched=""):
    """The GEMM spec with SCHED (a `schedule: {...}` line, or empty for the default)."""
    return _GEMM.format(sched=sched)


def variants(arg):
    """Schedule variants from the command line: "name=body;name=body", each body that of a
    `schedule: {...}` (empty: the default); None gives {"default": ""}.  Returns {name: the whole
    `schedule:` line, or ""}, as gemm_spec takes it."""
    v = dict(x.split("=", 1) for x in arg.split(";")) if arg else {"default": ""}
    return {a: (b and "schedule: {" + b + "}\n") for a, b in v.items()}


def gemm_operands(m, n, k):
    """Fresh random x [M, K], w [N, K] (scaled by K^-1/2) and an output y [M, N], bf16 on the GPU."""
    import torch
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    return x, w, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)


def checked_gemms(ctx, variants, x, w, y, skip_errors=False):
    """Each variant's GEMM (name -> `schedule:` line, gemm_spec) compiled in CTX and checked before
    it is timed: y NaN-poisoned, launched, x w^T within 1e-2 (relative error norm).  With SKIP_ERRORS
    a variant that does not compile is printed and left out.  Returns {name: kernel}."""
    import torch, wsfuse
    ref, ks = x.float() @ w.float().t(), {}
    for v, s in variants.items():
        try:
            ks[v] = ctx.compile_string(gemm_spec(s), name=f"{v}.yaml")
        except wsfuse.Error as e:
            if not skip_errors:
                raise
            print(v, "ERR", str(e).splitlines()[0][:150])
    for v, kk in ks.items():
        y.fill_(float("nan")); kk.launch(x, w, y); torch.cuda.synchronize()
        e = ((y.float() - ref).norm() / ref.norm()).item()
        assert e < 1e-2, (v, e)
    return ks


def shape_variants(shapes, variants):
    """For each "MxNxK" of the comma-separated SHAPES: (shape text, x, w, y, {name: kernel}), the
    operands fresh (gemm_operands) and each variant compiled in a Context of those sizes and checked
    (checked_gemms, variants that do not compile left out); the kernels live until the next shape."""
    import wsfuse
    for sh in shapes.split(","):
        m, n, k = map(int, sh.split("x"))
        x, w, y = gemm_operands(m, n, k)
        with wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
            yield sh, x, w, y, checked_gemms(ctx, variants, x, w, y, skip_errors=True)


def bench(fn, rep=200):
    """Median milliseconds of FN by triton.testing.do_bench (L2 flushed before each call)."""
    import triton
    return triton.testing.do_bench(fn, warmup=25, rep=rep, return_mode="median")


def graph_us(fn, reps=20):
    """GPU microseconds a call of FN, by bench.py's graph_timer: REPS calls captured in a CUDA graph,
    replayed 7 times and timed by events (the median / REPS).  Calls back to back, free of the host's
    launch cost; L2 holds what the call before left."""
    return _bench_py().graph_timer(fn, reps=reps, replays=7) * 1000


def _bench_py():
    """bench/bench.py as a module (loaded once; not by name: this folder's scripts call `bench`)."""
    import importlib.util, os, sys
    m = sys.modules.get("wsfuse_bench")
    if m is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench.py")
        spec = importlib.util.spec_from_file_location("wsfuse_bench", path)
        m = importlib.util.module_from_spec(spec)
        sys.modules["wsfuse_bench"] = m
        spec.loader.exec_module(m)
    return m
