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
