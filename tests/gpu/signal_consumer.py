"""signal_consumer.py BUILD: the per-tile completion signal under a consumer
kernel on another stream (make check-gpu runs it when torch and triton import).

A matmul compiled with schedule: {signal: per_tile} sets each output tile's
flag word to the launch's epoch once the tile is in global memory.  A Triton
kernel on a second stream, persistent over the tiles, spins on each flag with
acquire loads (atom.add 0, .acquire.gpu) and, the moment it equals the epoch,
reads the tile and compares it bit for bit with the reference: the same
kernel's output from a launch checked against torch (relative error norm
below 1e-2).  The output is poisoned with NaN before every launch, so a tile
read before its stores landed (stale or partial) counts as bad.  Random
delays on both sides: the matmul is compiled with option store-delay (one
store in four sleeps up to 20 us first), and the consumer spins a random
while before some reads.  LAUNCHES launches on the same flags, never reset,
each with a new epoch.  Residency: the matmul gets max_ctas = SMs - CONSUMER
CTAs, so the spinning consumer never holds an SM a matmul CTA needs
(wsfuse.h).  A consumer that waits too long on a flag stops and reports it
(no hang).  Every kernel runs once before the first spin: loading a
module while a kernel spins can wedge the context, so modules load eagerly.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import os
import sys

os.environ["CUDA_MODULE_LOADING"] = "EAGER"
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

LAUNCHES = 40
CONSUMER = 8          # consumer CTAs
SPIN_LIMIT = 1 << 20  # polls of one flag before the consumer gives up (a second or so)

SPEC = """\
fusion: {name}
sizes: {{M: {m}, N: {n}, K: {k}}}
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: {out}}}
schedule: {{signal: per_tile{extra}}}
"""
POINTWISE = """\
fusion: {name}
sizes: {{M: {m}, N: {n}}}
inputs:
  x: {{dtype: bf16, shape: [M, N]}}
  w: {{dtype: bf16, shape: [N]}}
ops:
  - {{out: p, op: mul, in: [x, w]}}
  - {{out: y, op: relu, in: [p]}}
outputs:
  y: {{dtype: {out}}}
schedule: {{signal: per_tile{extra}}}
"""
CASES = [   # name, M, N, K, output dtype, extra schedule
    ("sig_coop", 2000, 3080, 520, "bf16", ""),
    ("sig_pingpong", 1000, 1032, 264, "f32", ", consumers: pingpong"),
    ("sig_one_cta", 700, 1288, 200, "bf16", ", persistent: false"),
    ("sig_pointwise_ws", 3000, 4104, 0, "bf16", ", warp_specialize: true"),
    ("sig_pointwise", 2000, 1032, 0, "f32", ", persistent: true, stages: 3"),
]


@triton.jit
def consume(flags, out, ref, bad, epoch, seed, m, n, ncol_tiles, ntiles,
            BM: tl.constexpr, BN: tl.constexpr, SPIN_LIMIT: tl.constexpr):
    pid = tl.program_id(0)
    rows_in, cols_in = tl.arange(0, BM), tl.arange(0, BN)
    for t in range(pid, ntiles, tl.num_programs(0)):
        h = ((t + seed) * 40503) & 65535
        if h % 4 == 0:   # a random while, now and then, before the tile is read
            for _ in range(h % 512):
                tl.load(flags + t, volatile=True)
        f = tl.atomic_add(flags + t, 0, sem="acquire", scope="gpu")
        polls = 0
        while (f != epoch) & (polls < SPIN_LIMIT):
            f = tl.atomic_add(flags + t, 0, sem="acquire", scope="gpu")
            polls += 1
        if f != epoch:
            tl.atomic_add(bad + 1, 1)   # gave up on this tile
        else:
            rows = (t // ncol_tiles) * BM + rows_in
            cols = (t % ncol_tiles) * BN + cols_in
            mask = (rows[:, None] < m) & (cols[None, :] < n)
            at = rows[:, None] * n + cols[None, :]
            o = tl.load(out + at, mask=mask, other=0.0)
            r = tl.load(ref + at, mask=mask, other=0.0)
            wrong = mask & ((o != r) | (o != o))   # NaN: the poison, never stored
            tl.atomic_add(bad, tl.sum(tl.sum(wrong.to(tl.int32), axis=1), axis=0))


def run_case(lib, name, m, n, k, out, extra):
    spec = (SPEC if k else POINTWISE).format(name=name, m=m, n=n, k=max(k, 1), out=out, extra=extra)
    dt = getattr(torch, {"bf16": "bfloat16", "f32": "float32"}[out])
    if k:   # a matmul y = x w^T
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    else:   # pointwise y = relu(x * w)
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(m, n, device="cuda", dtype=dt)
    ref = torch.empty_like(y)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    sizes = {"M": m, "N": n, "K": k} if k else {"M": m, "N": n}
    with wsfuse.Context(lib=lib, sizes=sizes, store_delay="20000") as ctx:
        kern = ctx.compile_string(spec, name=f"{name}.yaml")
        lay = kern.signal_layout(x, w, y)
        flags = torch.zeros(lay["flags"], device="cuda", dtype=torch.int32)
        # the reference: a launch of its own, checked against torch
        kern.launch(x, w, ref, flags=flags, epoch=1)
        torch.cuda.synchronize()
        want = (x.float() @ w.float().t()) if k else torch.relu(x.float() * w.float())
        err = ((ref.float() - want).norm() / want.norm()).item()
        if not err < 1e-2:
            return f"reference launch: relative error {err:.2e}"
        if not bool((flags == 1).all()):
            return f"reference launch: {(flags != 1).sum().item()} of {lay['flags']} flags not set"
        bad = torch.zeros(2, device="cuda", dtype=torch.int32)
        producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()

        def consume_on(out, e):
            consume[(CONSUMER,)](flags, out, ref, bad, e, e * 7919, lay["view_rows"], lay["view_cols"],
                                 lay["col_tiles"], lay["flags"],
                                 BM=lay["tile_rows"], BN=lay["tile_cols"], SPIN_LIMIT=SPIN_LIMIT)
        # every kernel once before any spins: the consumer on the reference (its flags are set), the poison
        consume_on(ref, 1)
        y.fill_(float("nan"))
        torch.cuda.synchronize()
        if os.environ.get("SIGNAL_VERBOSE"):
            print(f"  {name}: reference and warm-up done, {lay}", flush=True)
        if bad.tolist() != [0, 0]:
            return f"the consumer on the reference itself: {bad.tolist()}"
        read = None   # the consumer of the launch before is done with y
        for e in range(2, LAUNCHES + 2):
            with torch.cuda.stream(producer):
                if read is not None:
                    producer.wait_event(read)
                y.fill_(float("nan"))
            with torch.cuda.stream(consumer):   # spins from now until this launch's flags are set
                consume_on(y, e)
                read = torch.cuda.Event()
                read.record(consumer)
            kern.launch(x, w, y, stream=producer, flags=flags, epoch=e, max_ctas=sms - CONSUMER)
            if e % 10 == 0 and os.environ.get("SIGNAL_VERBOSE"):
                torch.cuda.synchronize()
                print(f"  {name}: epoch {e}: {bad.tolist()}", flush=True)
        torch.cuda.synchronize()
        wrong, gave_up = bad.tolist()
        if wrong or gave_up:
            return f"{wrong} elements read stale or partial, {gave_up} tiles never signalled"
        if not bool((flags == LAUNCHES + 1).all()):
            return "flags not at the last epoch"
        return None


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so")) if len(sys.argv) > 1 else None
    passed = failed = 0
    for case in CASES:
        why = run_case(lib, *case)
        if why:
            failed += 1
            print(f"FAIL {case[0]}: {why}")
        else:
            passed += 1
            print(f"ok   {case[0]}: {LAUNCHES} launches, tiles checked as their flags were set")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
