"""adaln.py: adaLN's modulated layernorm, y = layernorm(x) * (1 + scale) + shift, of bf16 x [B, S, H] with
scale and shift [B, 1, H], against torch.compile and a copy of the same bytes (issue 65's performance bar:
90% of the copy rate, at least 1.0x torch.compile).

On a GPU from the repository root: `python3 bench/ab/adaln.py SHAPES [ROUNDS]`, SHAPES a comma-separated
list of BxSxH (e.g. 8x1024x4096,4x4096x3072), ROUNDS interleaved rounds (default 3).  The layernorm has no
affine (eps 1e-6), and scale and shift broadcast over S; y is bf16.  The output is poisoned with NaN, then
checked against torch's in f32 cast to bf16 (atol 1e-2, rtol 1.6e-2: tests/python/test_torch.py's bf16
tolerance); then do_bench's median with L2 flushed.  Prints per shape and round: wsfuse, torch.compile and
copy times (us), compile / wsfuse, and the copy's share of wsfuse's time (the copy moves the kernel's
bytes: x, scale and shift read, y written).
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch, torch.nn.functional as F, wsfuse
from abcommon import bench

ADALN = """fusion: adaln
inputs:
  x: {dtype: bf16, shape: [B, S, H]}
  scale: {dtype: bf16, shape: [B, 1, H]}
  shift: {dtype: bf16, shape: [B, 1, H]}
ops:
  - {out: n, op: layernorm, in: [x], eps: 1.0e-6}
  - {out: s1, op: add, in: [scale, 1.0]}
  - {out: a, op: mul, in: [n, s1]}
  - {out: y, op: add, in: [a, shift]}
outputs:
  y: {dtype: bf16}
"""

TOL = dict(atol=1e-2, rtol=1.6e-2)


def torch_adaln(x, scale, shift):
    n = F.layer_norm(x.float(), (x.shape[-1],), eps=1e-6)
    return (n * (1 + scale.float()) + shift.float()).to(torch.bfloat16)


def main():
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ct = torch.compile(torch_adaln)
    for sh in sys.argv[1].split(","):
        b, s, h = map(int, sh.split("x"))
        x = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16)
        scale = torch.randn(b, 1, h, device="cuda", dtype=torch.bfloat16) * 0.5
        shift = torch.randn(b, 1, h, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        with wsfuse.Context(sizes={"B": b, "S": s, "H": h}, cache="0") as ctx:   # its kernels live as long as it does
            k = ctx.compile_string(ADALN, name="adaln.yaml")
            y.fill_(float("nan"))
            k.launch(x, scale, shift, y); torch.cuda.synchronize()
            torch.testing.assert_close(y, torch_adaln(x, scale, shift), **TOL)
            # a copy moving the kernel's bytes (x, scale and shift read, y written): half of them read, half written
            src = torch.empty((x.numel() + scale.numel() + shift.numel() + y.numel()) * 2 // 2, device="cuda",
                              dtype=torch.uint8)
            dst = torch.empty_like(src)
            for rd in range(rounds):
                tw = bench(lambda: k.launch(x, scale, shift, y)) * 1000
                tt = bench(lambda: ct(x, scale, shift)) * 1000
                tc = bench(lambda: dst.copy_(src)) * 1000
                print(f"{sh} r{rd}: adaln {tw:.1f} us (compile {tt:.1f}, {tt / tw:.3f}x; copy {tc:.1f}, "
                      f"{tc / tw:.1%} of the copy rate)", flush=True)


main()
