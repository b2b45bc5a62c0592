"""launch_path.py BUILD: the python launch path and the tensor maps a kernel
keeps between launches (make check-gpu runs it when torch imports).

A launch reuses the tensor maps of the launch before when it is made on the
same tensors (same addresses, shapes and strides) and encodes them again
when not; the binding takes a fast path for well-formed arguments and falls
back to checks that name the wrong one.  Each case poisons the output with
NaN first and compares with torch in f32 (relative error norm below 1e-2):
  maps      new tensors four times, each launched twice (encoded, reused);
  shape     the same kernel on fewer rows (M binds at launch: new maps);
  alias     the output moved to another buffer between launches;
  graph     a launch captured in a CUDA graph and replayed;
  stream    a launch on a side stream, waited for;
  errors    a CPU tensor, a non-tensor, an unsupported dtype, too few
            arguments: each a wsfuse.Error naming the problem.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import Tally, bf16, gemm_error, library, poisoned, wsfuse

GEMM = """\
fusion: gemm
sizes: {M: 300, N: 200, K: 128}
inputs:
  x: {dtype: bf16, shape: [M, K]}
  w: {dtype: bf16, shape: [N, K]}
ops:
  - {out: y, op: matmul, in: [x, w], transpose_b: true}
outputs:
  y: {dtype: bf16}
"""


def main():
    lib, report = library(), Tally()
    with wsfuse.Context(lib=lib) as ctx:
        g = ctx.compile_string(GEMM, name="gemm.yaml")
        worst = 0.0
        for _ in range(4):
            x, w = bf16(300, 128), bf16(200, 128)
            for _ in range(2):
                y = poisoned(300, 200)
                g.launch(x, w, y)
                torch.cuda.synchronize()
                worst = max(worst, gemm_error(y, x, w))
        report("maps", worst < 1e-2, f"8 launches on 4 pairs of tensors, worst relative error {worst:.1e}")

        x2 = bf16(64, 128)
        y2 = poisoned(64, 200)
        g.launch(x2, w, y2)
        torch.cuda.synchronize()
        e = gemm_error(y2, x2, w)
        report("shape", e < 1e-2, f"64 rows after 300, relative error {e:.1e}")

        y, z = poisoned(300, 200), poisoned(300, 200)
        g.launch(x, w, y)
        g.launch(x, w, z)
        torch.cuda.synchronize()
        e = max(gemm_error(y, x, w), gemm_error(z, x, w))
        report("alias", e < 1e-2, f"the output moved between two launches, relative error {e:.1e}")

        y = poisoned(300, 200)
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):   # warm up off the capture (the module loads at the first launch)
            g.launch(x, w, y)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            g.launch(x, w, y)
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        e = gemm_error(y, x, w)
        report("graph", e < 1e-2, f"captured and replayed, relative error {e:.1e}")

        y = poisoned(300, 200)
        with torch.cuda.stream(side):
            g.launch(x, w, y)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        e = gemm_error(y, x, w)
        report("stream", e < 1e-2, f"on a side stream, relative error {e:.1e}")

        cases = [(lambda: g.launch(x.cpu(), w, y), "argument 'x': expected a CUDA torch tensor"),
                 (lambda: g.launch(x, w, "y"), "argument 'y': expected a CUDA torch tensor"),
                 (lambda: g.launch(x.to(torch.int32), w, y), "argument 'x': dtype int32, expected bf16"),
                 (lambda: g.launch(x.to(torch.complex64), w, y), "argument 'x': dtype torch.complex64 is not supported"),
                 (lambda: g.launch(x, w), "takes 3 arguments"),
                 (lambda: g.launch(x.float(), w, y), "'x'")]
        for fn, want in cases:
            try:
                fn()
                report("errors", False, f"no error, expected {want!r}")
            except wsfuse.Error as err:
                report("errors", want in str(err), f"{str(err).splitlines()[0][:110]}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
