"""colred.py: reductions over rows and over everything (issue 67: lower_reduce_grid.c), against
torch.compile, torch eager and a copy of the bytes they read.

On a GPU from the repository root: `python3 bench/ab/colred.py [ROUNDS [CASES]]`, ROUNDS interleaved
rounds (default 3), CASES a comma list (default all):
  colsum:  s = x.sum(0), x [32768, 4096] bf16, s f32 (a bias's gradient);
  colsum8k: the same of x [16384, 8192];
  dgb:     dgamma = (dy * (x - mean) * rstd).sum(0), dbeta = dy.sum(0) of x, dy [32768, 4096] bf16 with
           mean and rstd [32768, 1] f32 (a layernorm's weight gradients from its statistics);
  mean1:   x.mean(1) of [16, 4096, 4096] bf16 (over a middle axis);
  amax:    x.abs().amax() of x [2^29] bf16 (1 GiB: a per-tensor fp8 scale's amax);
  sumsq:   (g * g).sum() of g [2^28] f32 (1 GiB: a gradient norm's).
Each output is poisoned with NaN, checked against torch in f64 (relative error below 1e-3), launched
twice more and compared bit for bit (the same grid gives the same bits); then do_bench's median with L2
flushed.  Prints per case and round: wsfuse, torch.compile, eager and copy times (us), compile / wsfuse,
eager / wsfuse, and the copy's time over wsfuse's (the share of the copy rate: the copy moves the bytes
read, once, as a read and a write of half of them each).
"""
from abcommon import usage; usage(__doc__, 0)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

SPECS = {
    "colsum": ("""fusion: colsum
inputs:
  x: {dtype: bf16, shape: [T, H]}
ops:
  - {out: s, op: sum, in: [x], dim: 0, keepdim: false}
outputs:
  s: {dtype: f32}
""", {"T": 32768, "H": 4096}),
    "dgb": ("""fusion: dgb
inputs:
  x: {dtype: bf16, shape: [T, H]}
  dy: {dtype: bf16, shape: [T, H]}
  mean: {dtype: f32, shape: [T, 1]}
  rstd: {dtype: f32, shape: [T, 1]}
ops:
  - {out: xc, op: sub, in: [x, mean]}
  - {out: xhat, op: mul, in: [xc, rstd]}
  - {out: gx, op: mul, in: [dy, xhat]}
  - {out: dgamma, op: sum, in: [gx], dim: 0, keepdim: false}
  - {out: dbeta, op: sum, in: [dy], dim: 0, keepdim: false}
outputs:
  dgamma: {dtype: f32}
  dbeta: {dtype: f32}
""", {"T": 32768, "H": 4096}),
    "mean1": ("""fusion: mean1
inputs:
  x: {dtype: bf16, shape: [B, S, H]}
ops:
  - {out: m, op: mean, in: [x], dim: 1, keepdim: false}
outputs:
  m: {dtype: f32}
""", {"B": 16, "S": 4096, "H": 4096}),
    "amax": ("""fusion: amax
inputs:
  x: {dtype: bf16, shape: [N]}
ops:
  - {out: a, op: abs, in: [x]}
  - {out: m, op: amax, in: [a], dim: 0, keepdim: false}
outputs:
  m: {dtype: f32}
""", {"N": 1 << 29}),
    "sumsq": ("""fusion: sumsq
inputs:
  g: {dtype: f32, shape: [N]}
ops:
  - {out: sq, op: mul, in: [g, g]}
  - {out: s, op: sum, in: [sq], dim: 0, keepdim: false}
outputs:
  s: {dtype: f32}
""", {"N": 1 << 28}),
}
SPECS["colsum8k"] = (SPECS["colsum"][0], {"T": 16384, "H": 8192})


# as a torch user writes them (f32 results from bf16 inputs); REF: the same in f64
def colsum(x): return x.sum(0, dtype=torch.float32)
def dgb(x, dy, mean, rstd): return ((dy * (x - mean) * rstd).sum(0), dy.sum(0, dtype=torch.float32))
def mean1(x): return x.mean(1, dtype=torch.float32)
def amax(x): return x.abs().amax().float()
def sumsq(g): return (g * g).sum()
REF = {"colsum": lambda x: x.sum(0), "colsum8k": lambda x: x.sum(0),
       "dgb": lambda x, dy, mean, rstd: ((dy * (x - mean) * rstd).sum(0), dy.sum(0)),
       "mean1": lambda x: x.mean(1), "amax": lambda x: x.abs().amax(), "sumsq": lambda g: (g * g).sum()}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bf = dict(device="cuda", dtype=torch.bfloat16)
    f32 = dict(device="cuda", dtype=torch.float32)
    cases = {
        "colsum": (colsum, lambda: [torch.randn(32768, 4096, **bf)], [(4096,)]),
        "colsum8k": (colsum, lambda: [torch.randn(16384, 8192, **bf)], [(8192,)]),
        "dgb": (dgb, lambda: [torch.randn(32768, 4096, **bf), torch.randn(32768, 4096, **bf),
                              torch.randn(32768, 1, **f32), torch.rand(32768, 1, **f32) + 0.5], [(4096,), (4096,)]),
        "mean1": (mean1, lambda: [torch.randn(16, 4096, 4096, **bf)], [(16, 4096)]),
        "amax": (amax, lambda: [torch.randn(1 << 29, **bf)], [()]),
        "sumsq": (sumsq, lambda: [torch.randn(1 << 28, **f32)], [()]),
    }
    if len(sys.argv) > 2:
        cases = {name: cases[name] for name in sys.argv[2].split(",")}
    for name, (fn, make, shapes) in cases.items():
        spec, sizes = SPECS[name]
        ins = make()
        with wsfuse.Context(sizes=sizes, cache="0") as ctx:
            k = ctx.compile_string(spec, name=name + ".yaml")
            ys = [torch.full(s, float("nan"), **f32) for s in shapes]
            k.launch(*ins, *ys)
            torch.cuda.synchronize()
            ref = REF[name](*[a.double() for a in ins])
            for y, r in zip(ys, ref if isinstance(ref, tuple) else (ref,)):
                err = ((y.double() - r).norm() / r.norm()).item()
                assert err < 1e-3, (name, err)
            first = [y.clone() for y in ys]
            for _ in range(2):
                k.launch(*ins, *ys)
                torch.cuda.synchronize()
                assert all(torch.equal(a, b) for a, b in zip(first, ys)), (name, "not the same bits")
            cf = torch.compile(fn)
            nbytes = sum(a.numel() * a.element_size() for a in ins)
            src = torch.empty(nbytes // 4, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            for rd in range(rounds):
                tw = bench(lambda: k.launch(*ins, *ys)) * 1000
                tc = bench(lambda: cf(*ins)) * 1000
                te = bench(lambda: fn(*ins)) * 1000
                tcp = bench(lambda: dst.copy_(src)) * 1000 * 2
                print(f"{name} r{rd}: wsfuse {tw:.1f} us, compile {tc:.1f} ({tc / tw:.3f}x), eager {te:.1f} "
                      f"({te / tw:.3f}x), copy of the bytes read {tcp:.1f} ({tcp / tw:.1%} of the copy rate), "
                      f"{nbytes / tw / 1e3:.0f} GB/s read; the same bits over 3 launches", flush=True)


if __name__ == "__main__":
    main()
