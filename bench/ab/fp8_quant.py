"""fp8_quant.py: fp8 per-token-group (1 x 128) quantization of a bf16 activation, and its dequantization,
against torch.compile and a copy of the same bytes (issue 65's performance bar: 90% of the copy rate,
at least 1.0x torch.compile).

On a GPU from the repository root: `python3 bench/ab/fp8_quant.py SHAPES [ROUNDS]`, SHAPES a
comma-separated list of MxN (N a multiple of 128), ROUNDS interleaved rounds (default 3).  x [M, N] bf16
is seen as [M * N / 128, 128] (a group a row): quantize writes y = x / s as float8_e4m3fn and the scales
s = max(amax, 1e-12) / 448 as f32 [rows, 1]; dequantize reads y and s back to bf16.  Each output is
checked against torch's (scales within 1e-6, fp8 codes at most one step apart; how many are, printed) with
outputs poisoned first, then do_bench's median with L2 flushed.  Prints per shape and round: wsfuse,
torch.compile and copy times (us), then compile / wsfuse and the copy's share of wsfuse's time.
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

QUANT = """fusion: fp8_group_quant
inputs:
  x: {dtype: bf16, shape: [R, 128]}
ops:
  - {out: ax, op: abs, in: [x]}
  - {out: amax, op: max, in: [ax], axis: -1, keepdim: true}
  - {out: amax_c, op: maximum, in: [amax, 1e-12]}
  - {out: s, op: div, in: [amax_c, 448.0]}
  - {out: xs, op: div, in: [x, s]}
  - {out: y, op: cast, in: [xs], to: float8_e4m3fn}
outputs:
  y: {dtype: float8_e4m3fn}
  s: {dtype: float32}
"""

DEQUANT = """fusion: fp8_group_dequant
inputs:
  y: {dtype: float8_e4m3fn, shape: [R, 128]}
  s: {dtype: float32, shape: [R, 1]}
ops:
  - {out: x, op: mul, in: [y, s]}
outputs:
  x: {dtype: bfloat16}
"""


def torch_quant(x):
    g = x.view(-1, 128)
    s = g.abs().amax(-1, keepdim=True).float().clamp(min=1e-12) / 448.0
    return (g.float() / s).to(torch.float8_e4m3fn), s


def torch_dequant(y, s):
    return (y.float() * s).to(torch.bfloat16)


def main():
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cq, cd = torch.compile(torch_quant), torch.compile(torch_dequant)
    for sh in sys.argv[1].split(","):
        m, n = map(int, sh.split("x"))
        r = m * n // 128
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(r, 128, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(r, 1, device="cuda", dtype=torch.float32)
        xb = torch.empty(r, 128, device="cuda", dtype=torch.bfloat16)
        with wsfuse.Context(sizes={"R": r}, cache="0") as ctx:   # its kernels live as long as it does
            kq = ctx.compile_string(QUANT, name="fp8_group_quant.yaml")
            kd = ctx.compile_string(DEQUANT, name="fp8_group_dequant.yaml")
            ry, rs = torch_quant(x)
            y.view(torch.uint8).fill_(0x7f); s.fill_(float("nan"))
            kq.launch(x.view(r, 128), y, s); torch.cuda.synchronize()
            assert torch.allclose(s, rs, rtol=1e-6, atol=0), "scales"
            off = (y.view(torch.uint8).int() - ry.view(torch.uint8).int()).abs()
            assert off.max().item() <= 1, ("codes", off.max().item())   # x / s rounded apart: one fp8 step
            print(f"{sh}: {(off > 0).float().mean().item():.2e} of the codes one step from torch's", flush=True)
            xb.fill_(float("nan"))
            kd.launch(ry, rs, xb); torch.cuda.synchronize()
            torch.testing.assert_close(xb, torch_dequant(ry, rs), rtol=0, atol=0)
            # a copy moving the quantize's bytes (x read, y and s written): half of them read, half written
            src = torch.empty((x.numel() * 2 + y.numel() + s.numel() * 4) // 2, device="cuda", dtype=torch.uint8)
            dst = torch.empty_like(src)
            for rd in range(rounds):
                tq = bench(lambda: kq.launch(x.view(r, 128), y, s)) * 1000
                tcq = bench(lambda: cq(x)) * 1000
                td = bench(lambda: kd.launch(ry, rs, xb)) * 1000
                tcd = bench(lambda: cd(ry, rs)) * 1000
                tc = bench(lambda: dst.copy_(src)) * 1000
                print(f"{sh} r{rd}: quant {tq:.1f} us (compile {tcq:.1f}, {tcq / tq:.3f}x; copy {tc:.1f}, "
                      f"{tc / tq:.1%} of the copy rate); dequant {td:.1f} us (compile {tcd:.1f}, {tcd / td:.3f}x)",
                      flush=True)


if __name__ == "__main__":   # (rope_sched.py and fp8_tiles.py import its specs)
    main()
