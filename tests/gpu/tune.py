"""tune.py BUILD: the measured choice (option tune) through the python binding
(make check-gpu runs it when torch imports).

A decode GEMM (16 x 4096 x 4096) and a square one (2048^3) compiled with
tune=1 into an empty cache folder: the first launch (not inside a graph
capture: one there must leave the kernel untuned and still compute) times
the candidates and keeps one, whose result must match torch (outputs NaN-
poisoned before each launch, relative error norm below 1e-2); the record
appears under the cache's tune/; a second context's kernel reads it back
(the same choice, the record not rewritten) and computes the same; a
record replaced by a FIFO, an overflowing choice or a choice with no time
is ignored (promptly: alarm() fails a hang), the candidates timed again and
the record rewritten.  A
kernel compiled without tune reports no choice.  Prints one line a case and
"N passed, N failed"; exits 1 on a failure.
"""
import os
import signal
import stat
import sys
import tempfile

import torch

from gpucheck import library, rel, wsfuse

GEMM = """\
fusion: g
inputs:
  x: {dtype: bf16, shape: [M, K]}
  w: {dtype: bf16, shape: [N, K]}
ops:
  - {out: y, op: matmul, in: [x, w], transpose_b: true}
  - {out: o, op: relu, in: [y]}
outputs:
  o: {dtype: bf16}
"""


def main():
    lib = library()
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)

    for m, n, k in ((16, 4096, 4096), (2048, 2048, 2048)):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
        o = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        want = torch.relu(x.float() @ w.float().t())
        sizes = {"M": m, "N": n, "K": k}
        with tempfile.TemporaryDirectory() as cache:
            with wsfuse.Context(sizes=sizes, lib=lib, tune=1, cache_dir=cache) as ctx:
                kern = ctx.compile_string(GEMM, name="g.yaml")
                # inside a capture: no choice yet, the spec's kernel runs
                s = torch.cuda.Stream()
                o.fill_(float("nan"))
                g = torch.cuda.CUDAGraph()
                with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
                    kern.launch(x, w, o)
                g.replay()
                torch.cuda.synchronize()
                report(kern.tuned is None and rel(o, want) < 1e-2, f"{m}x{n}x{k}: captured launch, not tuned, "
                       f"error {rel(o, want):.1e}")
                o.fill_(float("nan"))
                kern.launch(x, w, o)
                torch.cuda.synchronize()
                first = kern.tuned
                recs = os.listdir(os.path.join(cache, "tune")) if os.path.isdir(os.path.join(cache, "tune")) else []
                report(first is not None and len(recs) == 1 and rel(o, want) < 1e-2,
                       f"{m}x{n}x{k}: tuned to {first!r}, {len(recs)} record, error {rel(o, want):.1e}")
                if recs:
                    path = os.path.join(cache, "tune", recs[0])
                    with open(path) as f:
                        print("     " + f.read().strip().replace("\n", "\n     "))
                    stamp = os.stat(path).st_mtime_ns
                    o.fill_(float("nan"))
                    kern.launch(x, w, o)   # tuned already: the kernel chosen, nothing timed
                    torch.cuda.synchronize()
                    report(rel(o, want) < 1e-2, f"{m}x{n}x{k}: second launch, error {rel(o, want):.1e}")
            if recs:
                with wsfuse.Context(sizes=sizes, lib=lib, tune=1, cache_dir=cache) as ctx:
                    again = ctx.compile_string(GEMM, name="g.yaml")
                    o.fill_(float("nan"))
                    again.launch(x, w, o)
                    torch.cuda.synchronize()
                    report(again.tuned == first and os.stat(path).st_mtime_ns == stamp and rel(o, want) < 1e-2,
                           f"{m}x{n}x{k}: a new kernel read the record back ({again.tuned!r}), "
                           f"error {rel(o, want):.1e}")
                # a record planted or mangled: ignored (a FIFO never waited on), timed again, rewritten
                for bad in (None, "wsfuse tune 1 choice 4294967296\n", "wsfuse tune 1 choice 1\n# 0.1 ms: nothing\n"):
                    os.unlink(path)
                    if bad is None:
                        os.mkfifo(path)
                    else:
                        with open(path, "w") as f:
                            f.write(bad)
                    signal.alarm(300)   # a launch that opens the FIFO blocking hangs: fail instead
                    with wsfuse.Context(sizes=sizes, lib=lib, tune=1, cache_dir=cache) as ctx:
                        again = ctx.compile_string(GEMM, name="g.yaml")
                        o.fill_(float("nan"))
                        again.launch(x, w, o)
                        torch.cuda.synchronize()
                    signal.alarm(0)
                    with open(path) as f:
                        rec = f.read()
                    report(stat.S_ISREG(os.stat(path).st_mode) and rec.startswith("wsfuse tune 1 choice ") and
                           " ms: " in rec and again.tuned is not None and rel(o, want) < 1e-2,
                           f"{m}x{n}x{k}: record {'a FIFO' if bad is None else repr(bad)} ignored, timed again "
                           f"({again.tuned!r}), error {rel(o, want):.1e}")
    with wsfuse.Context(sizes={"M": 16, "N": 4096, "K": 4096}, lib=lib, tune=0) as ctx:
        plain = ctx.compile_string(GEMM, name="g.yaml")
        x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        plain.launch(x, w, torch.empty(16, 4096, device="cuda", dtype=torch.bfloat16))
        torch.cuda.synchronize()
        report(plain.tuned is None, "tune=0: no choice")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
