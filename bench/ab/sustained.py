"""sustained.py: a GEMM run long enough to reach the GPU's power cap, with the SM clock and power it
settles at (issue 17: under the cap the figure is energy a multiply-add, not cycles).

On a GPU from the repository root: `python3 bench/ab/sustained.py 8192x8192x8192 cublas quack
"" "consumers: pingpong, tile: [128, 192, 64]" "diag:no epilogue"`.  Each variant (cublas, quack where
it imports, a wsfuse schedule body, "" the default, "diag:PART": the default with a part taken
out, as bench/ab/kloop_diag.py makes it, compiled through WSFUSE_OVERRIDE_DIR, its result wrong by
design and not checked, or "override:DIR": the default's spec compiled from DIR/gemm.cu, a
hand-edited kernel) in turn: checked against f32 (wsfuse's but diag's), 200 launches to warm
up, then back to back for 3 s or more (1500 launches at least) timed by events, the SM clock (MHz)
and board power (W) read through NVML every 0.1 s after the first second of them (medians; one
reading after the launches had been queued read an idle GPU once a run ended sooner).  Prints a
line a variant: time a launch, TFLOP/s, clock, power, J/TFLOP.
"""
from abcommon import usage; usage(__doc__, 1)
import sys, threading, time; sys.path.insert(0, "python")
import torch
from abcommon import gemm_spec, gemm_operands

SECONDS = 3   # how long each variant runs, at least
m, n, k = map(int, sys.argv[1].split("x"))
x, w, y = gemm_operands(m, n, k)
ref = x.float() @ w.float().t()
for v in sys.argv[2:]:
    if v == "cublas":
        f = lambda: torch.mm(x, w.t(), out=y)
    elif v == "quack":
        try:
            from quack import gemm_interface as q
        except Exception as e:
            print(f"quack: does not import ({type(e).__name__})"); continue
        f = lambda: q.gemm(x, w.t(), tuned=False)
    elif v.startswith("diag:"):
        import os, tempfile, wsfuse
        from kloop_diag import stripped
        sizes = {"M": m, "N": n, "K": k}
        with wsfuse.Context(sizes=sizes, cache="0") as c0:
            text = stripped(c0.compile_string(gemm_spec(""), name="sustained.yaml").text("cuda"))[v[5:]]
        assert "\n" in text, (v, text)   # else the reason the kernel lacks that part
        d = tempfile.mkdtemp(prefix="sustained.")
        with open(os.path.join(d, "gemm.cu"), "w") as fp:
            fp.write(text)
        ctx = wsfuse.Context(sizes=sizes, cache="0", override_dir=d)
        kern = ctx.compile_string(gemm_spec(""), name="sustained.yaml")
        f = lambda kern=kern: kern.launch(x, w, y)
    else:
        import wsfuse
        over = v.startswith("override:")   # the default's spec, its CUDA from the directory
        sched = "" if over or not v else "schedule: {" + v + "}\n"
        ctx = wsfuse.Context(sizes={"M": m, "N": n, "K": k}, cache="0", **({"override_dir": v[9:]} if over else {}))
        kern = ctx.compile_string(gemm_spec(sched), name="sustained.yaml")
        y.fill_(float("nan")); kern.launch(x, w, y); torch.cuda.synchronize()
        err = ((y.float() - ref).norm() / ref.norm()).item(); assert err < 1e-2, (v, err)
        f = lambda kern=kern: kern.launch(x, w, y)
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    reps = max(1500, int(SECONDS * 20 / (time.perf_counter() - t0)))   # at least SECONDS of launches
    samples, running = [], threading.Event()

    def sample():   # the clock and power every 0.1 s while the launches run, past the first second
        time.sleep(1.0)
        while running.is_set():
            samples.append((torch.cuda.clock_rate(), torch.cuda.power_draw() / 1000))
            time.sleep(0.1)

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    running.set()
    th = threading.Thread(target=sample)
    th.start()
    s.record()
    for _ in range(reps):
        f()
    e.record()
    e.synchronize()
    running.clear()
    th.join()
    ms = s.elapsed_time(e) / reps
    tf = 2 * m * n * k / ms / 1e9
    if samples:
        clk = sorted(c for c, _ in samples)[len(samples) // 2]
        pw = sorted(p for _, p in samples)[len(samples) // 2]
        print(f"{v or 'default':48s} {ms * 1e3:8.1f} us {tf:6.0f} TFLOP/s  {clk} MHz  {pw:.0f} W  "
              f"{pw / tf:.3f} J/TFLOP  ({reps} launches, {len(samples)} samples)", flush=True)
    else:
        print(f"{v or 'default':48s} {ms * 1e3:8.1f} us {tf:6.0f} TFLOP/s  (ran under a second: no samples)",
              flush=True)
