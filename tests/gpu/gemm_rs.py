"""gemm_rs.py BUILD [receive] [add]: GEMM + reduce-scatter tile by tile, the single-GPU form
(make check-gpu runs it when torch imports).

Two ranks stand in for two GPUs, each a stream on this one, their buffers in
its memory where a real run has peer memory (NVLink).  Rank r holds X_r [M, K / 2]
and W_r [N, K / 2] (K split between them); the result Y = X_0 W_0^T + X_1 W_1^T
is scattered by rows: owner o keeps rows [o M / 2, (o + 1) M / 2).  Each rank
first runs its GEMM on the other owner's rows ("send": a partial, f32 or
bf16 (the 2-GPU example's default, on ping-pong consumers), stored into
that owner's receive buffer, each tile's flag set with a system-scope
release, schedule: {signal: {per_tile, scope: system}}; or stored locally,
and the kernel's consumer role copies each tile to the owner and raises
its flag, signal: {per_tile, consumer: sent, flags: true}), then its own rows
("own": the same GEMM plus the receive buffer, an input with wait: per_tile:
each tile waits for the peer's flag before its epilogue reads the peer's
partial).  The own GEMMs start at once, on streams of their own; the sends
are held until the host opens a gate 5 ms later (gpucheck.Gate), so the
owners wait, and without their waits would read the peer's partial before
any of it was sent.

The add form (the 2-GPU example's --send add): each rank stores its own
rows and signals each tile (MINE), and the other rank's GEMM adds its
partial into them by TMA (SEND_ADD: an output with accumulate: true that
waits per tile for the owner's flag before its adds).  There the senders
start at once and the owners are held by the gate, their stores slowed now
and then, so an add that did not wait would be overwritten by the owner's
store.

The receive buffers are filled with NaN before every launch and the send
kernels are compiled with option store-delay (one TMA store in four sleeps up
to 20 us first), so an epilogue that read a partial before its flag would
put NaN or a stale value in Y.  Checked against torch: Y in f32 from the
same bf16 inputs, relative error norm below 1e-2, every row written (NaN
nowhere), for LAUNCHES launches with new epochs.  Then a negative control:
the same launches with the own kernels' wait flags already set (as if every
tile had landed) must fail in some launch, or the test cannot tell a wait
from none.  Each run first launches its kernels once, unchecked, to load
their modules (a first launch waits for the work in flight: a held send).
Grids are capped at a quarter of the SMs each so that the four
kernels are resident together (on one GPU, a kernel that waits must not hold
the SMs its writer needs).  Prints one line a case and "N passed, N failed".
BUILD's libwsfuse.so; then the forms to run, receive and add (both by
default).
"""
import os
import shutil
import sys
import tempfile

import torch

from gpucheck import Gate, wsfuse

LAUNCHES = 20
WARM = LAUNCHES + 1   # the epoch of the launch that loads a run's modules, before the checked ones
CACHE = tempfile.mkdtemp(prefix="gemm_rs.")   # this run's own kernel cache: a negative control reuses its case's
COOP = "tile: [128, 256, 64]"   # send and own must tile the rows alike: their flags are one layout
PINGPONG = "tile: [128, 128, 64], consumers: pingpong"   # the 2-GPU example's (and bf16 partials)

# the 2-GPU example's specs (sizes bound by the Contexts below): SEND (to the owner, each tile's flag
# raised), SEND_ROLE (stored locally; the consumer role copies each tile to the owner and raises its flag,
# so the mma warpgroups' k loop never waits on the peer's memory), own_spec (the owner's GEMM plus the
# received partial, each tile waiting for its flag); and the reduce in the sender's stores: MINE (the
# owner stores its own rows and signals each tile) and SEND_ADD (the sender adds its partial into the
# owner's output by TMA, each tile once the owner's flag says its store is done)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "distributed"))
from gemm_reduce_scatter import MINE, SEND, SEND_ADD, SEND_ROLE, own_spec  # noqa: E402

ROLE = "role"
ADD_CASES = [   # rows an owner keeps, N, K (split in two), the owner's tile, the sender's
    (1024, 2048, 2048, COOP, COOP),
    (1000, 1032, 1040, COOP, COOP),   # ragged tiles
    (1024, 2048, 2048, COOP, PINGPONG),   # each send tile inside one of the owner's (wait: {tile})
    (1000, 1096, 1040, COOP, PINGPONG),
]
CASES = [   # rows an owner keeps, N, K (split in two), the partials' dtype, the send's tile, the owner's
    (1024, 2048, 2048, "f32", COOP, COOP),
    (1000, 1032, 1040, "f32", COOP, COOP),   # ragged tiles
    (256, 8192, 4096, "f32", COOP, COOP),
    (1024, 2048, 2048, "bf16", PINGPONG, PINGPONG),
    (1000, 1032, 1040, "bf16", PINGPONG, PINGPONG),
    # the owner on its own tile, waiting for the two 128 x 128 send tiles each covers (wait: {tile})
    (1024, 2048, 2048, "bf16", PINGPONG, COOP),
    (1000, 1096, 1040, "bf16", PINGPONG, COOP),   # ragged: a last column of one send tile, not two
    # the send's consumer role sends (cooperative 128 x 256 tiles on both sides)
    (1024, 2048, 2048, "bf16", ROLE, COOP),
    (1000, 1032, 1040, "bf16", ROLE, COOP),
    (512, 4096, 2048, "f32", ROLE, COOP),
    # and the ping-pong owner, each of its 128 x 128 tiles inside one 128 x 256 send tile
    (1024, 2048, 2048, "bf16", ROLE, PINGPONG),
    (1000, 1096, 1040, "bf16", ROLE, PINGPONG),
]


def operands(mo, n, k):
    """K / 2, each rank's X_r [2 MO, K / 2] and W_r [N, K / 2] (fresh random bf16), Y in f32."""
    kh = k // 2
    x = [torch.randn(2 * mo, kh, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    w = [torch.randn(n, kh, device="cuda", dtype=torch.bfloat16) / k ** 0.5 for _ in range(2)]
    return kh, x, w, x[0].float() @ w[0].float().t() + x[1].float() @ w[1].float().t()


def verdict(y, ref, epoch):
    """What is wrong with the owners' rows Y after launch EPOCH, or None: a relative error norm of 1e-2 or
    more, or a NaN (a row never written)."""
    got = torch.cat(y).float()
    err = ((got - ref).norm() / ref.norm()).item()
    if not (err < 1e-2) or torch.isnan(got).any():
        return f"launch {epoch}: rel err {err:.2e}, {int(torch.isnan(got).sum())} NaN"
    return None


def checked(launch, gate, ready, poisoned, y, ref, check_waits):
    """LAUNCH(epoch, wait) once unchecked (epoch WARM: it loads the kernels' modules, and a first launch waits
    for the work in flight, here held by GATE), then for epochs 1..LAUNCHES: POISONED filled with NaN, READY
    with the epoch (the wait flags a launch without waits reads), the launch, the gate opened, Y checked.
    The first launch that fails, or None."""
    ready.fill_(WARM)
    launch(WARM, False)
    torch.cuda.synchronize()
    for epoch in range(1, LAUNCHES + 1):
        for t in poisoned:
            t.fill_(float("nan"))
        ready.fill_(epoch)
        torch.cuda.synchronize()
        launch(epoch, check_waits)
        gate.open(epoch)
        torch.cuda.synchronize()
        if (bad := verdict(y, ref, epoch)):
            return bad
    return None


def run(lib, mo, n, k, part, tile, own_tile, check_waits):
    """LAUNCHES launches of the four kernels; the first launch that fails, or None."""
    kh, x, w, ref = operands(mo, n, k)
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    sizes = {"M": mo, "N": n, "K": kh}
    with wsfuse.Context(sizes=sizes, lib=lib, cache_dir=CACHE, store_delay="20000") as slow, \
         wsfuse.Context(sizes=sizes, lib=lib, cache_dir=CACHE) as ctx:
        role = tile == ROLE
        send = slow.compile_string((SEND_ROLE if role else SEND).format(part=part, tile=COOP if role else tile),
                                   name="rs_send.yaml")
        # the owner waits on the send's tiles: its own, or those of a finer or coarser writer (wait: {tile})
        wait = ("per_tile" if own_tile == (COOP if role else tile)
                else "{per_tile, tile: [128, 128]}" if tile == PINGPONG else "{per_tile, tile: [128, 256]}")
        own = ctx.compile_string(own_spec(1, part, wait, own_tile), name="rs_own.yaml")
        dtype = torch.float32 if part == "f32" else torch.bfloat16
        recv = [torch.empty(mo, n, device="cuda", dtype=dtype) for _ in range(2)]
        y = [torch.empty(mo, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        # with the role, each rank's send stores its partial here first (a rank's own memory)
        local = [[torch.empty(mo, n, device="cuda", dtype=dtype)] if role else [] for _ in range(2)]
        lay = send.signal_layout(x[0][:mo], w[0], *local[0], recv[0])
        assert own.signal_layout(x[0][:mo], w[0], recv[0], y[0])["wait_words"] == lay["flags"], "one flag layout"
        flags = [torch.zeros(lay["flags"], device="cuda", dtype=torch.int32) for _ in range(2)]
        ready = torch.empty(lay["flags"], device="cuda", dtype=torch.int32)
        sends, owns = [torch.cuda.Stream() for _ in range(2)], [torch.cuda.Stream() for _ in range(2)]
        cap = sm // 4   # the four kernels resident together
        gate = Gate(LAUNCHES)

        def launch(epoch, wait):
            for r in range(2):   # rank r computes its own rows at once, adding the peer's partial tile by tile
                with torch.cuda.stream(owns[r]):
                    own.launch(x[r][r * mo:(r + 1) * mo], w[r], recv[r], y[r], epoch=epoch, max_ctas=cap,
                               wait_flags=flags[r] if wait else ready)
            for r in range(2):   # and sends the other owner's rows once the gate opens: the owners wait for them
                o = 1 - r
                if epoch != WARM:
                    gate.hold(sends[r], epoch)
                with torch.cuda.stream(sends[r]):
                    send.launch(x[r][o * mo:(o + 1) * mo], w[r], *local[r], recv[o], flags=flags[o], epoch=epoch,
                                max_ctas=cap)

        return checked(launch, gate, ready, recv + y, y, ref, check_waits)


def run_add(lib, mo, n, k, own_tile, send_tile, check_waits):
    """LAUNCHES launches of the reduce in the sender's stores (MINE, then SEND_ADD into the owner's y); the
    first launch that fails, or None.  The senders start at once and the owners once the gate opens, their
    stores slowed now and then: an add that did not wait for the owner's store would be overwritten by it."""
    kh, x, w, ref = operands(mo, n, k)
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    sizes = {"M": mo, "N": n, "K": kh}
    with wsfuse.Context(sizes=sizes, lib=lib, cache_dir=CACHE, store_delay="20000") as slow, \
         wsfuse.Context(sizes=sizes, lib=lib, cache_dir=CACHE) as ctx:
        mine = slow.compile_string(MINE.format(tile=own_tile), name="rs_mine.yaml")
        wait = "per_tile" if own_tile == send_tile else "{per_tile, tile: [128, 256]}"
        send = ctx.compile_string(SEND_ADD.format(tile=send_tile, wait=wait), name="rs_send_add.yaml")
        y = [torch.empty(mo, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        tiles = mine.signal_layout(x[0][:mo], w[0], y[0])["flags"]
        assert send.signal_layout(x[0][:mo], w[0], y[0])["wait_words"] == tiles, "one flag layout"
        flags = [torch.zeros(tiles, device="cuda", dtype=torch.int32) for _ in range(2)]
        ready = torch.empty(tiles, device="cuda", dtype=torch.int32)
        sends, owns = [torch.cuda.Stream() for _ in range(2)], [torch.cuda.Stream() for _ in range(2)]
        cap = sm // 4
        gate = Gate(LAUNCHES)

        def launch(epoch, wait):
            for r in range(2):   # rank r adds into the other owner's rows at once, each tile after its store
                o = 1 - r
                with torch.cuda.stream(sends[r]):
                    send.launch(x[r][o * mo:(o + 1) * mo], w[r], y[o], epoch=epoch, max_ctas=cap,
                                wait_flags=flags[o] if wait else ready)
            for r in range(2):   # and stores its own rows once the gate opens
                if epoch != WARM:
                    gate.hold(owns[r], epoch)
                with torch.cuda.stream(owns[r]):
                    mine.launch(x[r][r * mo:(r + 1) * mo], w[r], y[r], flags=flags[r], epoch=epoch, max_ctas=cap)

        return checked(launch, gate, ready, y, y, ref, check_waits)


def main():
    lib = wsfuse.load(os.path.join(sys.argv[1], "libwsfuse.so")) if len(sys.argv) > 1 else None
    forms = sys.argv[2:] or ["receive", "add"]   # which forms to run (both by default)
    passed = failed = 0
    kind = {COOP: "cooperative", PINGPONG: "ping-pong", ROLE: "cooperative through its consumer role"}
    for mo, n, k, part, tile, own_tile in CASES if "receive" in forms else []:
        bad = run(lib, mo, n, k, part, tile, own_tile, True)
        print(f"{'ok  ' if bad is None else 'FAIL'} gemm_rs {2 * mo}x{n}x{k}, {part} partials, "
              f"send {kind[tile]}, owner {kind[own_tile]}, {LAUNCHES} launches"
              + ("" if bad is None else f": {bad}"), flush=True)
        passed, failed = passed + (bad is None), failed + (bad is not None)
    for mo, n, k, own_tile, send_tile in ADD_CASES if "add" in forms else []:
        bad = run_add(lib, mo, n, k, own_tile, send_tile, True)
        print(f"{'ok  ' if bad is None else 'FAIL'} gemm_rs {2 * mo}x{n}x{k}, bf16, owner {kind[own_tile]} stores, "
              f"send {kind[send_tile]} adds, {LAUNCHES} launches" + ("" if bad is None else f": {bad}"), flush=True)
        passed, failed = passed + (bad is None), failed + (bad is not None)
    for case in (ADD_CASES[0], ADD_CASES[2]) if "add" in forms else []:
        bad = run_add(lib, *case, False)
        print(f"{'ok  ' if bad else 'FAIL'} negative control (owner {kind[case[3]]} stores, send {kind[case[4]]} "
              f"adds, wait flags preset): "
              + (f"caught at {bad}" if bad else f"{LAUNCHES} launches passed: the check cannot tell"), flush=True)
        passed, failed = passed + bool(bad), failed + (not bad)
    # negative controls: without the waits the check must see the peer's partial missing, in each form
    for case in (CASES[0], CASES[3], CASES[5], CASES[7], CASES[10]) if "receive" in forms else []:
        bad = run(lib, *case, False)
        print(f"{'ok  ' if bad else 'FAIL'} negative control ({case[3]} partials, send {kind[case[4]]}, owner "
              f"{kind[case[5]]}, wait flags preset): "
              + (f"caught at {bad}" if bad else f"{LAUNCHES} launches passed: the check cannot tell"), flush=True)
        passed, failed = passed + bool(bad), failed + (not bad)
    print(f"{passed} passed, {failed} failed")
    shutil.rmtree(CACHE, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
