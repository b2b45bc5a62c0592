"""transposed_input.py: an op on a transposed torch view (issue 66: the torch op passes the view's
memory, no copy, through option layout), against the same op after .contiguous() and torch.compile.

On a GPU from the repository root: `python3 bench/ab/transposed_input.py M N [ROUNDS]`, e.g.
`python3 bench/ab/transposed_input.py 16384 8192 3`.  The op is y = silu(x) * 2 + b over [M, N],
bf16, with x a transpose x_stored.t() of a contiguous [N, M] tensor and b [N].  Times (do_bench
medians, L2 flushed; the op through the python binding's torch op, as a user calls it):
  layout:     op(x_stored.t(), b): the kernel compiled for that layout reads x_stored's memory
              through shared memory;
  contiguous: op(x_stored.t().contiguous(), b): the copy torch makes, then the op;
  compile:    torch.compile of the same expression on the transposed view;
  copy:       a device-to-device copy of the bytes the op must move (x read, y written).
Each output is first checked against torch in f32 (relative error norm below 1e-2).  Prints per
round the times (us), contiguous / layout and compile / layout, and the copy's share of layout's.
"""
from abcommon import usage; usage(__doc__, 2)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

SPEC = """fusion: silu_bias
inputs:
  x: {dtype: bf16, shape: [M, N]}
  b: {dtype: bf16, shape: [N]}
ops:
  - {out: s, op: silu, in: [x]}
  - {out: t, op: mul, in: [s, 2.0]}
  - {out: y, op: add, in: [t, b]}
outputs:
  y: {dtype: bf16}
"""


def ref(x, b):
    return (torch.nn.functional.silu(x.float()) * 2 + b.float()).to(torch.bfloat16)


def main():
    m, n = int(sys.argv[1]), int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    bf = dict(device="cuda", dtype=torch.bfloat16)
    stored, b = torch.randn(n, m, **bf), torch.randn(n, **bf)
    x = stored.t()
    op = wsfuse.torch_op(SPEC, name="wsfuse_ab::silu_bias")
    cf = torch.compile(ref)
    y = op(x, b)
    err = ((y.float() - ref(x, b).float()).norm() / ref(x, b).float().norm()).item()
    assert err < 1e-2, err
    assert any(key[2] == "x=1,0" for key in op.wsfuse.kernels), list(op.wsfuse.kernels)
    src = torch.empty(m * n, **bf)
    dst = torch.empty_like(src)
    for rd in range(rounds):
        tl = bench(lambda: op(x, b)) * 1000
        tcont = bench(lambda: op(x.contiguous(), b)) * 1000
        tc = bench(lambda: cf(x, b)) * 1000
        tcp = bench(lambda: dst.copy_(src)) * 1000
        print(f"{m}x{n} r{rd}: layout {tl:.1f} us, contiguous {tcont:.1f} ({tcont / tl:.3f}x), compile {tc:.1f} "
              f"({tc / tl:.3f}x), copy {tcp:.1f} ({tcp / tl:.1%} of the copy rate)", flush=True)


main()
