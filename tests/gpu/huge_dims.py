"""huge_dims.py BUILD: tensors past 2^31 rows through the python binding (make check-gpu runs it
when torch imports; it skips where the GPU has less than 45 GB free).

TMA's coordinates are signed 32-bit: a tensor map reaches 2^31 elements a dim though the driver
encodes 2^32, and a copy past it used to kill the CUDA context ('an illegal instruction was
encountered').  One bf16 buffer of [2^31 + 64, 8] (34 GB) serves every case, viewed as each needs;
an output may alias it (a refused launch touches nothing, and the accepted pointwise ones read each
element before they write it).  Kept under 45 GB of GPU memory.
  broadcast  y = x + b, x [2^31 + 64, 8], b [8] (a row broadcast: no flat view): refused with a
             wsfuse.Error naming x, its rows and 2^31; the context still works after;
  edge       the same at exactly 2^31 rows (coordinates up to 2^31 - 1): sampled rows right;
  flat       y = x + x at [2^31 + 64, 8] (a flat view, rows as wide as a tile): sampled rows,
             the last ones past 2^31 included, exactly twice what they were;
  rows       rmsnorm over [2^31 + 64, 8] in place (direct rows, a thread a row, no tensor map):
             sampled rows within 1e-2 of torch; over [2^25 + 8, 64] (2^31 + 512 elements, past 32-bit element indices): sampled rows
             within 1e-2 of torch in f32;
  matmul     M, N and K past 2^31 (views of the buffer as [2^31 + 64, 8] or [8, 2^31 + 64]):
             each refused naming the operand; then a small GEMM still right.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import Tally, bf16, gemm_error, gemm_spec, library, rel, wsfuse

BIG = 2 ** 31 + 64

ADD = """\
fusion: {name}
sizes: {{M: 64, N: 8}}
inputs:
  x: {{dtype: bf16, shape: [M, N]}}
  b: {{dtype: bf16, shape: [{b}]}}
ops:
  - {{out: y, op: add, in: [x, b]}}
outputs:
  y: {{dtype: bf16}}
"""
RMS = """\
fusion: rms{n}
sizes: {{M: 64, N: {n}}}
inputs:
  x: {{dtype: bf16, shape: [M, N]}}
  w: {{dtype: bf16, shape: [N]}}
ops:
  - {{out: y, op: rmsnorm, in: [x, w], eps: 1.0e-6}}
outputs:
  y: {{dtype: bf16}}
"""


def refused(report, name, k, tensors, want):
    """K launched on TENSORS must raise a wsfuse.Error whose text holds each of WANT."""
    try:
        k.launch(*tensors)
        torch.cuda.synchronize()
        report(name, False, "launched (a tensor map past 2^31 rows)")
    except wsfuse.Error as err:
        text = str(err)
        report(name, all(w in text for w in want), text.splitlines()[0][:160])


def samples(rows):
    """Row ranges of a [ROWS, ...] tensor to check: the first, some in the middle, the last."""
    return [(0, 256), (rows // 2 - 128, rows // 2 + 128), (rows - 256, rows)]


def main():
    lib, report = library(), Tally()
    free = torch.cuda.mem_get_info()[0]
    if free < 45e9:
        print(f"skipped: {free / 1e9:.0f} GB of GPU memory free, 45 needed")
        print("0 passed, 0 failed")
        return 0
    big = torch.empty(BIG * 8, device="cuda", dtype=torch.bfloat16)
    big.normal_()
    with wsfuse.Context(lib=lib) as ctx:
        bias = ctx.compile_string(ADD.format(name="bias", b="N"), name="bias.yaml")
        flat = ctx.compile_string(ADD.format(name="flat", b="M, N"), name="flat.yaml")
        b = bf16(8)

        x = big.view(BIG, 8)
        refused(report, "broadcast", bias, (x, b, x), ("input 'x'", f"{BIG} rows", "2^31", "signed 32-bit"))
        small = bf16(64, 8)
        y = torch.empty_like(small)
        bias.launch(small, b, y)
        torch.cuda.synchronize()
        report("broadcast", rel(y, small.float() + b.float()) < 1e-2, "the context works after the refusal")

        x = big[:2 ** 31 * 8].view(2 ** 31, 8)
        keep = [(lo, hi, x[lo:hi].float().clone()) for lo, hi in samples(2 ** 31)]
        bias.launch(x, b, x)
        torch.cuda.synchronize()
        e = max(rel(x[lo:hi], want + b.float()) for lo, hi, want in keep)
        report("edge", e < 1e-2, f"[2^31, 8] + [8] in place, sampled rows' relative error {e:.1e}")

        x = big.view(BIG, 8)
        keep = [(lo, hi, x[lo:hi].clone()) for lo, hi in samples(BIG)]
        flat.launch(x, x, x)
        torch.cuda.synchronize()
        ok = all(torch.equal(x[lo:hi], want * 2) for lo, hi, want in keep)
        report("flat", ok, f"[{BIG}, 8] + itself in place (a flat view): sampled rows exact")

        # Rows of 8 are read directly, a thread a row, no tensor map: past 2^31 rows they run.
        rms8 = ctx.compile_string(RMS.format(n=8), name="rms8.yaml")
        keep = [(lo, hi, x[lo:hi].float()) for lo, hi in samples(BIG)]
        rms8.launch(x, b, x)
        torch.cuda.synchronize()
        e = max(rel(x[lo:hi], xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * b.float())
                for lo, hi, xf in keep)
        report("rows", e < 1e-2, f"rmsnorm over [{BIG}, 8] in place (direct rows), sampled rows' relative error {e:.1e}")
        rms64 = ctx.compile_string(RMS.format(n=64), name="rms64.yaml")
        rows = 2 ** 25 + 8
        x = big[:rows * 64].view(rows, 64)
        w, y = bf16(64), torch.empty(rows, 64, device="cuda", dtype=torch.bfloat16)
        rms64.launch(x, w, y)
        torch.cuda.synchronize()
        errs = []
        for lo, hi in samples(rows):
            xf = x[lo:hi].float()
            errs.append(rel(y[lo:hi], xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()))
        report("rows", max(errs) < 1e-2, f"rmsnorm over [{rows}, 64] ({rows * 64} elements), sampled rows' "
               f"relative error {max(errs):.1e}")
        del x, y

    with wsfuse.Context(lib=lib, sizes={"M": 512, "N": 384, "K": 256}) as ctx:
        g = ctx.compile_string(gemm_spec(name="gemm"), name="gemm.yaml")
        tall, wide, sq = big.view(BIG, 8), big.view(8, BIG), bf16(8, 8)
        refused(report, "matmul", g, (tall, sq, tall), ("input 'x'", f"{BIG} rows", "2^31"))
        refused(report, "matmul", g, (sq, tall, wide), ("input 'w'", f"{BIG} rows", "2^31"))
        refused(report, "matmul", g, (wide, wide, sq), ("input 'x'", f"{BIG} elements in its last dim", "2^31"))
        del big, tall, wide
        xs, ws = bf16(512, 256), bf16(384, 256) / 16
        y = torch.empty(512, 384, device="cuda", dtype=torch.bfloat16)
        g.launch(xs, ws, y)
        torch.cuda.synchronize()
        e = gemm_error(y, xs, ws)
        report("matmul", e < 1e-2, f"a 512 x 384 x 256 GEMM after the refusals, relative error {e:.1e}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
