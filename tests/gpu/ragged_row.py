"""ragged_row.py BUILD: one row whose width is not a multiple of 8, through
the python binding (make check-gpu runs it when torch is importable).

A spec's sizes must give 16-byte row strides, but one row at launch has no
stride: a direct row kernel (one CTA a row, the row in registers) loads the
row's last partial group of 8 element by element (wsf_ldg16_part for 2-byte
rows).  Each case compiles a kernel, launches it on a [1, N] row with N not a
multiple of 8 into a NaN-poisoned output, and compares with torch in f32:
relative error norm below 1e-2 (bf16 and f16 outputs round at 2^-8 and 2^-11).
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

SPEC = """\
fusion: {name}
sizes: {{M: 64, N: {n}}}
inputs:
  x: {{dtype: {dt}, shape: [M, N]}}
{extra}ops:
  - {op}
outputs:
  y: {{dtype: {dt}}}
"""
CASES = [
    # name, dtype, compiled N, launched N, extra inputs, op, reference
    ("softmax_f16", "f16", 1024, 1001, "", "{out: y, op: softmax, in: [x]}",
     lambda x: torch.softmax(x, -1)),
    ("layernorm_bf16", "bf16", 4096, 4093,
     "  w: {dtype: bf16, shape: [N]}\n  b: {dtype: bf16, shape: [N]}\n",
     "{out: y, op: layernorm, in: [x, w, b], eps: 1.0e-5}",
     lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)),
    ("rmsnorm_bf16", "bf16", 2048, 2047, "  w: {dtype: bf16, shape: [N]}\n",
     "{out: y, op: rmsnorm, in: [x, w], eps: 1.0e-5}",
     lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w),
]


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so"))
    torch.manual_seed(0)
    passed = failed = 0
    for name, dt, n_compiled, n, extra, op, ref in CASES:
        tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
        with wsfuse.Context(lib=lib) as ctx:
            k = ctx.compile_string(SPEC.format(name=name, n=n_compiled, dt=dt, extra=extra, op=op), name + ".yaml")
            if "one CTA per tile" not in k.text("cuda"):
                print(f"FAIL {name}: not a direct row kernel")
                failed += 1
                continue
            ins = [torch.randn(1, n, device="cuda", dtype=tdt)]
            ins += [torch.randn(n, device="cuda", dtype=tdt) for _ in range(extra.count("dtype"))]
            y = torch.full((1, n), float("nan"), device="cuda", dtype=tdt)
            k.launch(*ins, y)
            torch.cuda.synchronize()
            want = ref(*[t.float() for t in ins])
            err = ((y.float() - want).norm() / want.norm()).item()
            ok = err < 1e-2   # NaN (an unwritten element) fails too
            print(f"{'ok  ' if ok else 'FAIL'} {name}: [1, {n}] with a kernel for N = {n_compiled}, "
                  f"relative error {err:.2e}")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
