"""fp8_bits.py BUILD: every cast to and from fp8 bit for bit against torch
(make check-gpu runs it when torch is importable).

`run --check` compares an fp8 output with the host reference under a norm
tolerance, which one code a step off would pass.  Here each cast kernel
(f32, bf16 and f16 to float8_e4m3fn and float8_e5m2, and each fp8 to f32,
bf16 and f16) runs on inputs chosen to sit where conversions go wrong: every
bf16 bit pattern (so every exponent, both signs, NaN, infinities and
subnormals), every fp8 value and the midpoints between neighbours with one
f32 ulp either side (ties to even, the saturation edge: e4m3's 448 and 464,
e5m2's 57344 and 61440), and random f32 bit patterns.  The output, poisoned
first, must equal torch's `.to(dtype)` byte for byte; a NaN must be a NaN
(torch writes 0x7f or 0xff: the sign is compared too).  Prints one line a
cast and "N passed, N failed"; exits 1 on a failure.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

SPEC = """\
fusion: {name}
inputs:
  x: {{dtype: {src}, shape: [R, 256]}}
ops:
  - {{out: y, op: cast, in: [x], to: {dst}}}
outputs:
  y: {{dtype: {dst}}}
"""
TORCH = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
         "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
FP8 = ("float8_e4m3fn", "float8_e5m2")


def hard_f32():
    """f32 values where a conversion to fp8 can go wrong, as a flat tensor."""
    every_bf16 = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
    parts = [every_bf16]
    for d in FP8:
        v = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(TORCH[d]).float()
        v = v[torch.isfinite(v)].unique().double()
        mid = ((v[1:] + v[:-1]) / 2).float()           # the ties, exact in f32
        bits = mid.view(torch.int32)
        parts += [v.float(), mid, (bits + 1).view(torch.float32), (bits - 1).view(torch.float32)]
        top = v.max().item()
        parts.append(torch.tensor([top, top * 1.03125, top * 1.0625, top * 1.125, top * 2, 1e30],
                                  dtype=torch.float32))
    g = torch.Generator().manual_seed(0)
    parts.append(torch.randint(-2**31, 2**31 - 1, (1 << 18,), generator=g, dtype=torch.int64)
                 .to(torch.int32).view(torch.float32))
    x = torch.cat([torch.cat(parts), -torch.cat(parts)])
    return torch.cat([x, x[: (-x.numel()) % 256]])       # whole rows of 256


def same_bits(got, want):
    """Byte-equal, or both NaN with the same sign bit where the dtype is wider than a byte."""
    if got.dtype.itemsize == 1:
        return got.view(torch.uint8) == want.view(torch.uint8)
    it = {2: torch.int16, 4: torch.int32}[got.dtype.itemsize]
    both_nan = torch.isnan(got.float()) & torch.isnan(want.float()) & (torch.signbit(got.float()) == torch.signbit(want.float()))
    return (got.view(it) == want.view(it)) | both_nan


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so"))
    base = hard_f32().cuda()
    passed = failed = 0
    cases = [(s, d) for s in ("float32", "bfloat16", "float16") for d in FP8]
    cases += [(s, d) for s in FP8 for d in ("float32", "bfloat16", "float16")]
    for src, dst in cases:
        name = f"cast_{src}_{dst}"
        if src in FP8:
            x = torch.arange(256, dtype=torch.int32).to(torch.uint8).repeat(64).view(TORCH[src]).cuda()
        else:
            x = base.to(TORCH[src])
        x = x.view(-1, 256)
        with wsfuse.Context(lib=lib, sizes={"R": x.shape[0]}, cache="0") as ctx:
            k = ctx.compile_string(SPEC.format(name=name, src=src, dst=dst), name + ".yaml")
            y = torch.empty(x.shape, device="cuda", dtype=TORCH[dst])
            y.view(torch.uint8).fill_(0x55)             # a finite code nothing maps to everywhere
            k.launch(x, y)
            torch.cuda.synchronize()
            want = x.to(TORCH[dst])
            ok = same_bits(y, want).flatten()
            bad = (~ok).nonzero().flatten()
            if bad.numel() == 0:
                passed += 1
                print(f"ok   {name}: {x.numel()} values bit for bit")
            else:
                failed += 1
                i = bad[0].item()
                xi = x.flatten()[i].float().item()
                print(f"FAIL {name}: {bad.numel()} of {x.numel()} differ; first at x = {xi!r} "
                      f"(bits {x.flatten()[i:i+1].view(torch.uint8).tolist()}): got "
                      f"{y.flatten()[i:i+1].view(torch.uint8).tolist()}, torch "
                      f"{want.flatten()[i:i+1].view(torch.uint8).tolist()}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
