"""stream_k.py BUILD: stream-K's workspace through the python binding (make check-gpu runs it when
torch imports).

A kernel with schedule: {stream_k: true} at 2176 x 2048 x 320 (136 tiles of 128 x 256: on 132 SMs, 4
left for a last wave split into runs of k-steps) keeps a workspace for each of the last four streams it
is launched on.
Each case poisons the outputs with NaN first and compares with torch in f32 (relative error norm
below 1e-2):
  streams   two side streams, each its own tensors, 20 launches each interleaved without waiting:
            each stream's launches take turns on its own workspace (flags left zero by each); then
            nine, 6 launches each: four keep a workspace, and a fifth takes the least recently
            launched one's, its launches ordered after those queued with it (an event);
  max_ctas  all the CTAs the GPU holds, 100 (36 tiles left, split), all again: the flags stay at
            their place in the workspace whatever the grid; on a new stream 100, then all: the
            workspace grows;
  capture   a first launch on a new stream being captured into a CUDA graph takes the spare
            workspace the launches before made, replayed; on a second new stream there is none: a
            wsfuse.Error that says to launch once before the capture; after one launch on that
            stream, captured and replayed.
  default   without a hint, 512 x 1024 x 16384 takes stream-K (32 tiles of 128 x 128 in quarters):
            a first launch ever, under capture, runs every tile whole (no workspace, no error),
            replayed; launched on that stream (split); captured on a new stream (the spare: split),
            on another new one (none: whole), each replayed.
  pairs     without a hint, 512 x 1024 x 32768 takes stream-K in clusters of two tile rows that share
            B (quarters of 128 k-steps of 128 x 128 tiles): a first launch ever captured on a new
            stream (no workspace: every cluster tile whole, a grid of cluster tiles x 2), replayed;
            launched at its sizes, at 3 rows of tiles
            (the last cluster's second tile past M), at a ragged 200 x 1000, at 1024 x 512 x 4096
            (16 cluster tiles in quarters of 16 k-steps), at 4608 x 512 x 8192 (a wave of whole
            cluster tiles, then the rest split), and captured on a new stream (the spare), replayed.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import Tally, bf16, gemm_error, gemm_spec, library, poisoned, wsfuse

M, N, K = 2176, 2048, 320
GEMM = gemm_spec("stream_k: true", "gemm_sk")


def replayed(g, x, w, y, stream):
    """G's launch on x, w into y captured into a CUDA graph on STREAM, y poisoned, the graph replayed 3
    times; the relative error of y."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        g.launch(x, w, y)
    y.fill_(float("nan"))
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    return gemm_error(y, x, w)


def main():
    lib, report = library(), Tally()
    nan = lambda: poisoned(M, N)   # noqa: E731
    with wsfuse.Context(lib=lib, sizes={"M": M, "N": N, "K": K}) as ctx:
        g = ctx.compile_string(GEMM, name="gemm_sk.yaml")
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        xs, ws, ys = [bf16(M, K) for _ in streams], [bf16(N, K) / K ** 0.5 for _ in streams], [nan() for _ in streams]
        torch.cuda.synchronize()
        for _ in range(20):
            for s, x, w, y in zip(streams, xs, ws, ys):
                with torch.cuda.stream(s):
                    g.launch(x, w, y)
        torch.cuda.synchronize()
        e = max(gemm_error(y, x, w) for x, w, y in zip(xs, ws, ys))
        report("streams", e < 1e-2, f"2 streams x 20 launches, worst relative error {e:.1e}")
        many = [torch.cuda.Stream() for _ in range(9)]
        xs9, ws9, ys9 = [bf16(M, K) for _ in many], [bf16(N, K) / K ** 0.5 for _ in many], [nan() for _ in many]
        torch.cuda.synchronize()
        for _ in range(6):
            for s, x, w, y in zip(many, xs9, ws9, ys9):
                with torch.cuda.stream(s):
                    g.launch(x, w, y)
        torch.cuda.synchronize()
        e = max(gemm_error(y, x, w) for x, w, y in zip(xs9, ws9, ys9))
        report("streams", e < 1e-2, f"9 streams x 6 launches (4 keep a workspace: each new one waits for the "
               f"launches of the one it takes it from), worst relative error {e:.1e}")

        x, w = xs[0], ws[0]
        errs = []
        for cap in (0, 100, 0, 100):
            y = nan()
            g.launch(x, w, y, max_ctas=cap)
            torch.cuda.synchronize()
            errs.append(gemm_error(y, x, w))
        report("max_ctas", max(errs) < 1e-2, "all, 100, all, 100 CTAs, relative errors " +
               ", ".join(f"{e:.1e}" for e in errs))
        grow, errs = torch.cuda.Stream(), []
        for cap in (100, 0):   # a new stream's workspace made for 100 CTAs, then a larger one for all
            y = nan()
            with torch.cuda.stream(grow):
                g.launch(x, w, y, max_ctas=cap)
            torch.cuda.synchronize()
            errs.append(gemm_error(y, x, w))
        report("max_ctas", max(errs) < 1e-2, f"a new stream: 100 CTAs, then all (a larger workspace), relative "
               f"errors {errs[0]:.1e}, {errs[1]:.1e}")

        e = replayed(g, x, w, nan(), torch.cuda.Stream())
        report("capture", e < 1e-2, f"a new stream captured takes the spare workspace, replayed 3 times, "
               f"relative error {e:.1e}")
        side, y = torch.cuda.Stream(), nan()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=side):
                g.launch(x, w, y)
            report("capture", False, "a launch under capture with no workspace left gave no error")
        except wsfuse.Error as err:
            report("capture", "before the capture" in str(err), str(err).splitlines()[0][:120])
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            g.launch(x, w, y)
        torch.cuda.synchronize()
        e = replayed(g, x, w, y, side)
        report("capture", e < 1e-2, f"launched once on the stream, then captured and replayed 3 times, "
               f"relative error {e:.1e}")

    m, n, k = 512, 1024, 16384
    with wsfuse.Context(lib=lib, sizes={"M": m, "N": n, "K": k}) as ctx:
        g = ctx.compile_string(gemm_spec(name="gemm_long_k"), name="gemm_long_k.yaml")
        report("default", "sk_on" in g.text("cuda"), f"{m} x {n} x {k} without a hint takes stream-K")
        x, w = bf16(m, k), bf16(n, k) / k ** 0.5
        side = torch.cuda.Stream()
        errs = [replayed(g, x, w, poisoned(m, n), side)]   # no workspace, no spare: whole tiles
        y = poisoned(m, n)
        with torch.cuda.stream(side):
            g.launch(x, w, y)
        torch.cuda.synchronize()
        errs.append(gemm_error(y, x, w))
        errs += [replayed(g, x, w, poisoned(m, n), torch.cuda.Stream()) for _ in range(2)]   # the spare, then none
        report("default", max(errs) < 1e-2, "captured first (whole tiles), launched, captured on a new stream "
               "(the spare), on another (whole tiles), relative errors " + ", ".join(f"{e:.1e}" for e in errs))

    m, n, k = 512, 1024, 32768
    with wsfuse.Context(lib=lib, sizes={"M": m, "N": n, "K": k}) as ctx:
        g = ctx.compile_string(gemm_spec(name="gemm_pairs"), name="gemm_pairs.yaml")
        cuda = g.text("cuda")
        report("pairs", "sk_on" in cuda and "__cluster_dims__(2, 1, 1)" in cuda,
               f"{m} x {n} x {k} without a hint takes stream-K in clusters of 2 x 1")
        x, w = bf16(m, k), bf16(n, k) / k ** 0.5
        errs = [replayed(g, x, w, poisoned(m, n), torch.cuda.Stream())]   # no workspace yet: whole cluster tiles
        for mm, nn, kk in ((m, n, k), (384, n, k), (200, 1000, 8192), (1024, 512, 4096), (4608, 512, 8192)):
            x, w, y = bf16(mm, kk), bf16(nn, kk) / kk ** 0.5, poisoned(mm, nn)
            g.launch(x, w, y)
            torch.cuda.synchronize()
            errs.append(gemm_error(y, x, w))
        errs.append(replayed(g, x, w, poisoned(4608, 512), torch.cuda.Stream()))
        report("pairs", max(errs) < 1e-2, "captured first (whole cluster tiles), at 512 x 1024 x 32768, 384 x 1024, 200 x 1000 x 8192, 1024 x 512 x "
               "4096, 4608 x 512 x 8192, and captured: relative errors " + ", ".join(f"{e:.1e}" for e in errs))
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
