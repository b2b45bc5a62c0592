"""masked_softmax.py: a softmax over the last axis of bf16 scores x [BH, S, S] with a causal mask [S, S]
shared by every row block, against torch.compile and a copy of the same bytes (issue 65's performance bar:
90% of the copy rate, at least 1.0x torch.compile).

On a GPU from the repository root: `python3 bench/ab/masked_softmax.py SHAPES [ROUNDS]`, SHAPES a
comma-separated list of BHxS (e.g. 32x2048,64x1024), ROUNDS interleaved rounds (default 3).  Two forms of
the mask, each its own kernel: "add", y = softmax(x + m) with m bf16, 0 on and below the diagonal and -inf
above it; "bool", y = softmax(where(m, x, -3e38)) with m bool, true on and below the diagonal (the spec
takes no infinite literal; exp of -3e38 less the row's max is 0 in f32, as torch's -inf gives).  y is bf16.
Each output is poisoned with NaN, then checked against torch's softmax in f32 cast to bf16 (atol 1e-2, rtol
1.6e-2: tests/python/test_torch.py's bf16 tolerance); then do_bench's median with L2 flushed.  Prints per
shape and round, for each form: wsfuse, torch.compile and copy times (us), compile / wsfuse, and the copy's
share of wsfuse's time (the copy moves the kernel's bytes: x and m read, y written).
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

ADD = """fusion: masked_softmax
inputs:
  x: {dtype: bf16, shape: [BH, S, S]}
  m: {dtype: bf16, shape: [S, S]}
ops:
  - {out: z, op: add, in: [x, m]}
  - {out: y, op: softmax, in: [z]}
outputs:
  y: {dtype: bf16}
"""

BOOL = """fusion: masked_softmax_bool
inputs:
  x: {dtype: bf16, shape: [BH, S, S]}
  m: {dtype: bool, shape: [S, S]}
ops:
  - {out: z, op: where, in: [m, x, -3.0e38]}
  - {out: y, op: softmax, in: [z]}
outputs:
  y: {dtype: bf16}
"""

TOL = dict(atol=1e-2, rtol=1.6e-2)


def torch_add(x, m):
    return torch.softmax(x.float() + m.float(), -1).to(torch.bfloat16)


def torch_bool(x, m):
    return torch.softmax(torch.where(m, x.float(), float("-inf")), -1).to(torch.bfloat16)


def main():
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ca, cb = torch.compile(torch_add), torch.compile(torch_bool)
    for sh in sys.argv[1].split(","):
        bh, s = map(int, sh.split("x"))
        x = torch.randn(bh, s, s, device="cuda", dtype=torch.bfloat16)
        mb = torch.ones(s, s, device="cuda", dtype=torch.bool).tril()
        ma = torch.zeros(s, s, device="cuda", dtype=torch.bfloat16).masked_fill(~mb, float("-inf"))
        y = torch.empty_like(x)
        with wsfuse.Context(sizes={"BH": bh, "S": s}, cache="0") as ctx:   # its kernels live as long as it does
            ka = ctx.compile_string(ADD, name="masked_softmax.yaml")
            kb = ctx.compile_string(BOOL, name="masked_softmax_bool.yaml")
            for k, m, ref in ((ka, ma, torch_add), (kb, mb, torch_bool)):
                y.fill_(float("nan"))
                k.launch(x, m, y); torch.cuda.synchronize()
                torch.testing.assert_close(y, ref(x, m), **TOL)
            # copies moving each kernel's bytes (x and m read, y written): half of them read, half written
            copies = []
            for m in (ma, mb):
                src = torch.empty((x.numel() * 4 + m.numel() * m.element_size()) // 2, device="cuda",
                                  dtype=torch.uint8)
                copies.append((src, torch.empty_like(src)))
            for rd in range(rounds):
                parts = []
                for form, k, m, c, (src, dst) in (("add", ka, ma, ca, copies[0]), ("bool", kb, mb, cb, copies[1])):
                    tw = bench(lambda: k.launch(x, m, y)) * 1000
                    tt = bench(lambda: c(x, m)) * 1000
                    tc = bench(lambda: dst.copy_(src)) * 1000
                    parts.append(f"{form} {tw:.1f} us (compile {tt:.1f}, {tt / tw:.3f}x; copy {tc:.1f}, "
                                 f"{tc / tw:.1%} of the copy rate)")
                print(f"{sh} r{rd}: " + "; ".join(parts), flush=True)


main()
