"""ag_gemm.py BUILD: all-gather + GEMM tile by tile, the load side, on one GPU
(make check-gpu runs it when torch imports).

A GEMM y = x w^T whose x arrives while it runs, 128 rows at a time: x is
marked wait: per_tile, so the thread that issues the TMA loads waits for the
row tile's flag word before the tile's first k-step (then fences the async
proxy).  A second stream stands in for the peers of an all-gather: it copies
each row tile of x into place in a shuffled order, a sleep between copies,
and sets the tile's word to the epoch after its copy (stream order makes the
copy visible first); it starts when the host opens a gate 5 ms after the
GEMM's launch (gpucheck.Gate), so the GEMM waits for every tile.  x is filled with NaN before every launch, so a load
before its flag would read NaN, and y would be wrong (relu makes it 0).  Checked against torch (relative error
norm below 1e-2, no NaN) for LAUNCHES launches with new epochs; then a
negative control, the words already set, must fail.  The GEMM leaves SMs to
the copies (max_ctas): on one GPU a waiting kernel must not hold the SMs its
writer needs, and the writer launches no kernel it has not launched before
(CUDA's lazy module loading waits for the work in flight on a kernel's first
launch: here a GEMM waiting for that writer); its copies and flag words go by
cudaMemcpyAsync.  Prints one line a case and "N passed, N failed".
"""
import os
import sys

import torch

from gpucheck import Gate, wsfuse

LAUNCHES = 10

SPEC = """\
fusion: ag_gemm
sizes: {{M: {m}, N: {n}, K: {k}}}
inputs:
  x: {{dtype: bf16, shape: [M, K], wait: per_tile}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
  - {{out: o, op: relu, in: [y]}}
outputs:
  o: {{dtype: bf16}}
schedule: {{{sched}}}
"""
CASES = [   # M, N, K, schedule
    (2048, 2048, 1024, "tile: [128, 256, 64]"),
    (1000, 1032, 520, "tile: [128, 128, 64]"),          # ragged: the last row tile is short
    (640, 1024, 256, "consumers: pingpong"),            # 64-row tiles
]


def run(lib, m, n, k, sched, check_waits):
    """LAUNCHES launches; the first that fails, or None."""
    src = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    ref = torch.relu(src.float() @ w.float().t())
    x = torch.empty_like(src)
    o = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    with wsfuse.Context(lib=lib, cache="0") as ctx:
        kern = ctx.compile_string(SPEC.format(m=m, n=n, k=k, sched=sched), name="ag_gemm.yaml")
        lay = kern.signal_layout(x, w, o)
        rows = lay["tile_rows"]
        assert lay["wait_words"] == lay["row_tiles"], lay
        flags = torch.zeros(lay["wait_words"], device="cuda", dtype=torch.int32)
        ready = torch.empty_like(flags)
        gather, gemm = torch.cuda.Stream(), torch.cuda.Stream()
        gate = Gate(LAUNCHES)
        # the writer launches no kernel but the sleep, loaded here: copies and flag words go by the copy
        # engine (cudaMemcpyAsync).  CUDA loads a kernel's module at its first launch, lazily, and that
        # waits for the work in flight: here a GEMM waiting for that very writer.
        epochs = torch.arange(LAUNCHES + 1, dtype=torch.int32).pin_memory()
        with torch.cuda.stream(gather):
            torch.cuda._sleep(1)
        torch.cuda.synchronize()
        for epoch in range(1, LAUNCHES + 1):
            x.fill_(float("nan"))
            o.fill_(float("nan"))
            ready.fill_(epoch)
            torch.cuda.synchronize()
            with torch.cuda.stream(gemm):   # first: it waits for the rows the copies below bring
                kern.launch(x, w, o, epoch=epoch, max_ctas=sm - 8, wait_flags=flags if check_waits else ready)
            order = torch.randperm(lay["row_tiles"], generator=torch.Generator().manual_seed(epoch)).tolist()
            gate.hold(gather, epoch)
            with torch.cuda.stream(gather):
                for i in order:   # the peers' row tiles, one by one, each flagged after its copy
                    torch.cuda._sleep(20000)
                    x[i * rows:(i + 1) * rows].copy_(src[i * rows:(i + 1) * rows], non_blocking=True)
                    flags[i:i + 1].copy_(epochs[epoch:epoch + 1], non_blocking=True)
            gate.open(epoch)
            torch.cuda.synchronize()
            err = ((o.float() - ref).norm() / ref.norm()).item()
            if not (err < 1e-2) or torch.isnan(o).any():
                return f"launch {epoch}: rel err {err:.2e}, {int(torch.isnan(o).sum())} NaN"
    return None


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so")) if len(sys.argv) > 1 else None
    passed = failed = 0
    for case in CASES:
        bad = run(lib, *case, True)
        print(f"{'ok  ' if bad is None else 'FAIL'} ag_gemm {case[0]}x{case[1]}x{case[2]} ({case[3]}), {LAUNCHES} "
              f"launches" + ("" if bad is None else f": {bad}"), flush=True)
        passed, failed = passed + (bad is None), failed + (bad is not None)
    bad = run(lib, *CASES[0], False)
    print(f"{'ok  ' if bad else 'FAIL'} negative control (wait flags preset): "
          + (f"caught at {bad}" if bad else f"{LAUNCHES} launches passed: the check cannot tell"), flush=True)
    passed, failed = passed + bool(bad), failed + (not bad)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
