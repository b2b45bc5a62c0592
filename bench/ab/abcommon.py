"""abcommon.py: what the A/B scripts of this folder share (newer ones import it): the plain GEMM
spec with a schedule slot, and the timer (PERF.md: do_bench's median)."""

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


def bench(fn, rep=200):
    """Median milliseconds of FN by triton.testing.do_bench (L2 flushed before each call)."""
    import triton
    return triton.testing.do_bench(fn, warmup=25, rep=rep, return_mode="median")


def graph_us(fn, reps=20):
    """GPU microseconds a call of FN: REPS calls captured in a CUDA graph, replayed 7 times and timed by
    events (median / REPS).  Calls back to back, free of the host's launch cost; L2 holds what the call
    before left."""
    import torch
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn(); fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    t = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        t.append(a.elapsed_time(b) * 1000 / reps)
    return sorted(t)[3]
