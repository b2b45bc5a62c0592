"""views.py: kernels that read views of their inputs (issue 66: a view is an address, not a copy), against
torch.compile and a copy of the same bytes.

On a GPU from the repository root: `python3 bench/ab/views.py T [ROUNDS [CASES]]`, T the tokens (e.g.
8192), ROUNDS interleaved rounds (default 3), CASES a comma list of the kernels (default all).  Nine
kernels, bf16:
  rope:   RoPE's rotate-half, y = x * cos + cat(-x[..., 64:], x[..., :64]) * sin, x [T, 32, 128], cos and
          sin [T, 1, 128] (a placed cat over two views of x with boxes);
  ropei:  RoPE's interleaved form, rot = stack([-x[..., 1::2], x[..., 0::2]], -1) flattened (a placed cat
          by the column's digit, each part from the thread's registers of x);
  swiglu: y = silu(g) * u with g, u = h.chunk(2, -1), h [T, 2 x 14336] (rows at an offset);
  qknorm: rmsnorm over each of the first 32 heads of qkv [T, 48 x 128] (q of a fused QKV; a narrow row
          kernel reading q at the row's offset), weight [128];
  permute: y = x.permute(1, 0, 2) * 2 of x [T, 32, 128] (a transpose of leading dims: rows at an offset);
  transpose: y = x.t() of x [T, 16384] (x.t().contiguous(): 64 x 64 tiles exchanged through shared memory);
  cat3: y = cat([a, b, c], -1) of [T, 1024], [T, 2048], [T, 512] (a placed cat of three boxed reads);
  split3: a, b, c = x.split([1024, 2048, 512], -1) of x [T, 3584], contiguous copies (three outputs, each
          its range of x);
  embed: y = table[ids], table [131072, 4096], ids [T] int64 (index_select of rows: the gathered bytes).
Each output is poisoned with NaN, then checked against torch in f32 (relative error norm below 1e-2); then
do_bench's median with L2 flushed.  Prints per kernel and round: wsfuse, torch.compile and copy times
(us), compile / wsfuse, and the copy's share of wsfuse's time (the copy moves the bytes the kernel must:
each input element it reads once, each output element written).
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

SPECS = {
    "rope": """fusion: rope
inputs:
  x: {dtype: bf16, shape: [T, 32, 128]}
  cos: {dtype: bf16, shape: [T, 1, 128]}
  sin: {dtype: bf16, shape: [T, 1, 128]}
ops:
  - {out: x1, op: slice, in: [x], dim: -1, end: 64}
  - {out: x2, op: slice, in: [x], dim: -1, start: 64}
  - {out: nx2, op: neg, in: [x2]}
  - {out: rot, op: cat, in: [nx2, x1], dim: -1}
  - {out: xc, op: mul, in: [x, cos]}
  - {out: rs, op: mul, in: [rot, sin]}
  - {out: y, op: add, in: [xc, rs]}
outputs:
  y: {dtype: bf16}
""",
    "ropei": """fusion: ropei
inputs:
  x: {dtype: bf16, shape: [T, 32, 128]}
  cos: {dtype: bf16, shape: [T, 1, 128]}
  sin: {dtype: bf16, shape: [T, 1, 128]}
ops:
  - {out: xp, op: reshape, in: [x], shape: [T, 32, 64, 2]}
  - {out: xe, op: slice, in: [xp], dim: -1, end: 1}
  - {out: xo, op: slice, in: [xp], dim: -1, start: 1}
  - {out: nxo, op: neg, in: [xo]}
  - {out: r2, op: cat, in: [nxo, xe], dim: -1}
  - {out: rot, op: reshape, in: [r2], shape: [T, 32, 128]}
  - {out: xc, op: mul, in: [x, cos]}
  - {out: rs, op: mul, in: [rot, sin]}
  - {out: y, op: add, in: [xc, rs]}
outputs:
  y: {dtype: bf16}
""",
    "swiglu": """fusion: swiglu
inputs:
  h: {dtype: bf16, shape: [T, 28672]}
ops:
  - {out: [g, u], op: chunk, in: [h], chunks: 2, dim: -1}
  - {out: a, op: silu, in: [g]}
  - {out: y, op: mul, in: [a, u]}
outputs:
  y: {dtype: bf16}
""",
    "qknorm": """fusion: qknorm
inputs:
  qkv: {dtype: bf16, shape: [T, 6144]}
  w: {dtype: bf16, shape: [128]}
ops:
  - {out: r, op: reshape, in: [qkv], shape: [T, 48, 128]}
  - {out: q, op: slice, in: [r], dim: 1, end: 32}
  - {out: y, op: rmsnorm, in: [q, w], eps: 1.0e-6}
outputs:
  y: {dtype: bf16}
""",
    "permute": """fusion: permute
inputs:
  x: {dtype: bf16, shape: [T, 32, 128]}
ops:
  - {out: p, op: permute, in: [x], dims: [1, 0, 2]}
  - {out: y, op: mul, in: [p, 2.0]}
outputs:
  y: {dtype: bf16}
""",
    "cat3": """fusion: cat3
inputs:
  a: {dtype: bf16, shape: [T, 1024]}
  b: {dtype: bf16, shape: [T, 2048]}
  c: {dtype: bf16, shape: [T, 512]}
ops:
  - {out: y, op: cat, in: [a, b, c], dim: -1}
outputs:
  y: {}
""",
    "split3": """fusion: split3
inputs:
  x: {dtype: bf16, shape: [T, 3584]}
ops:
  - {out: [a, b, c], op: split, in: [x], sizes: [1024, 2048, 512], dim: -1}
outputs:
  a: {}
  b: {}
  c: {}
""",
    "embed": """fusion: embed
inputs:
  table: {dtype: bf16, shape: [131072, 4096]}
  ids: {dtype: int64, shape: [T]}
ops:
  - {out: y, op: index_select, in: [table, ids], dim: 0}
outputs:
  y: {}
""",
    "transpose": """fusion: transpose
inputs:
  x: {dtype: bf16, shape: [T, 16384]}
ops:
  - {out: y, op: transpose, in: [x], dim0: 0, dim1: 1}
outputs:
  y: {dtype: bf16}
""",
}


def rope(x, cos, sin):
    rot = torch.cat([-x[..., 64:], x[..., :64]], -1)
    return (x * cos + rot * sin).to(torch.bfloat16)


def ropei(x, cos, sin):
    xp = x.reshape(*x.shape[:-1], 64, 2)
    rot = torch.stack([-xp[..., 1], xp[..., 0]], -1).reshape(x.shape)
    return (x * cos + rot * sin).to(torch.bfloat16)


def swiglu(h):
    g, u = h.chunk(2, -1)
    return (torch.nn.functional.silu(g) * u).to(torch.bfloat16)


def qknorm(qkv, w):
    q = qkv.view(qkv.shape[0], 48, 128)[:, :32]
    qf = q.float()
    return (qf * torch.rsqrt(qf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(torch.bfloat16)


def permute(x):
    return (x.permute(1, 0, 2) * 2).to(torch.bfloat16)


def transpose(x):
    return x.t().contiguous()


def cat3(a, b, c):
    return torch.cat([a, b, c], -1)


def split3(x):
    return tuple(p.contiguous() for p in x.split([1024, 2048, 512], -1))


def embed(table, ids):
    return table[ids]


def main():
    t = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    bf = dict(device="cuda", dtype=torch.bfloat16)
    cases = {
        "rope": (rope, [torch.randn(t, 32, 128, **bf), torch.randn(t, 1, 128, **bf), torch.randn(t, 1, 128, **bf)],
                 (t, 32, 128)),
        "ropei": (ropei, [torch.randn(t, 32, 128, **bf), torch.randn(t, 1, 128, **bf), torch.randn(t, 1, 128, **bf)],
                  (t, 32, 128)),
        "swiglu": (swiglu, [torch.randn(t, 28672, **bf)], (t, 14336)),
        "qknorm": (qknorm, [torch.randn(t, 6144, **bf), torch.randn(128, **bf)], (t, 32, 128)),
        "permute": (permute, [torch.randn(t, 32, 128, **bf)], (32, t, 128)),
        "transpose": (transpose, [torch.randn(t, 16384, **bf)], (16384, t)),
        "cat3": (cat3, [torch.randn(t, 1024, **bf), torch.randn(t, 2048, **bf), torch.randn(t, 512, **bf)], (t, 3584)),
        "split3": (split3, [torch.randn(t, 3584, **bf)], [(t, 1024), (t, 2048), (t, 512)]),
        "embed": (embed, [torch.randn(131072, 4096, **bf), torch.randint(0, 131072, (t,), device="cuda")], (t, 4096)),
    }
    if len(sys.argv) > 3:
        cases = {name: cases[name] for name in sys.argv[3].split(",")}
    moved = {"rope": lambda n: 2 * n, "ropei": lambda n: 2 * n, "swiglu": lambda n: 3 * n, "qknorm": lambda n: 2 * n,
             "permute": lambda n: 2 * n, "transpose": lambda n: 2 * n, "cat3": lambda n: 2 * n,
             "split3": lambda n: 2 * n, "embed": lambda n: 2 * n}   # elements read once plus written (cos and sin: small)
    with wsfuse.Context(sizes={"T": t}, cache="0") as ctx:
        for name, (fn, ins, out_shape) in cases.items():
            k = ctx.compile_string(SPECS[name], name=name + ".yaml")
            shapes = out_shape if isinstance(out_shape, list) else [out_shape]
            ys = [torch.full(s, float("nan"), **bf) for s in shapes]
            k.launch(*ins, *ys)
            torch.cuda.synchronize()
            ref = fn(*ins) if name in ("qknorm", "embed") else fn(*[a.float() for a in ins])
            for y, r in zip(ys, ref if isinstance(ref, tuple) else (ref,)):
                err = ((y.float() - r.float()).norm() / r.float().norm()).item()
                assert err < 1e-2, (name, err)
            cf = torch.compile(fn)
            n = sum(y.numel() for y in ys)
            src = torch.empty(moved[name](n) // 2, **bf)
            dst = torch.empty_like(src)
            for rd in range(rounds):
                tw = bench(lambda: k.launch(*ins, *ys)) * 1000
                tc = bench(lambda: cf(*ins)) * 1000
                tcp = bench(lambda: dst.copy_(src)) * 1000
                print(f"{name} T={t} r{rd}: wsfuse {tw:.1f} us, compile {tc:.1f} ({tc / tw:.3f}x), copy {tcp:.1f} "
                      f"({tcp / tw:.1%} of the copy rate); {k.stats['view_rows']} views as rows, "
                      f"{k.stats['view_elems']} element by element, {k.stats['view_tiles']} as exchanged tiles",
                      flush=True)


if __name__ == "__main__":   # (rope_sched.py and fp8_tiles.py import its specs)
    main()
