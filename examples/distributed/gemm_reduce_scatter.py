"""GEMM + reduce-scatter across GPUs, tile by tile (a row-parallel linear layer).

    PYTHONPATH=python NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \\
        torchrun --nproc-per-node 2 examples/distributed/gemm_reduce_scatter.py [--shape MxNxK]
        [--partials bf16|f32] [--owner pingpong|cooperative] [--send epilogue|role|add] [--bench]

Each of the W ranks holds X_r [M, K / W] and W_r [N, K / W] (K split between
them); Y = sum_r X_r W_r^T is scattered by rows, rank o keeping rows
[o M / W, (o + 1) M / W).  With wsfuse each rank runs, for every other owner o
in turn, a GEMM on o's rows whose epilogue stores partial tiles (bf16, as
cuBLAS + NCCL and async-TP reduce them; --partials f32 for f32) straight
into o's receive buffer (peer memory from torch SymmetricMemory, over NVLink)
and sets each tile's flag there with a system-scope release (schedule:
{signal: {per_tile, scope: system}}); then its own rows, whose epilogue adds
the W - 1 received partials, each tile waiting for its flag (wait: per_tile).
No collective runs: the transfer is the stores of the other GEMMs, and the
reduction is the own GEMM's epilogue.

Checked against NCCL's reduce-scatter of each rank's GEMM (the f32 partial
sums), relative error norm below 1e-2 on every rank; exits 1 otherwise
(tests/gpu/run.sh runs it on 2 GPUs where there are 2).  --bench times it against
that unfused pair and against torch's async-TP fused_matmul_reduce_scatter
where it runs.  Never uses NVLink multicast (NVLS).

Both GEMMs run on ping-pong consumers with 128 x 128 tiles: one warpgroup's
epilogue (its stores over NVLink, or its loads of the received partials)
runs while the other's k loop does, where the cooperative 128 x 256 tile
stalls its k loop for them (on two H200s: sends 0.46 ms against 0.49 to the
peer, fused 0.89-0.91 against 0.96 ms at 8192^3; docs/perf.md).  With
--owner cooperative the owner's GEMM runs on the cooperative 128 x 256 tile,
whose k loop is faster, each tile waiting for the two send tiles it covers
(wait: {per_tile, tile: [128, 128]}).  On one H200 that owner alone (its
producer prefetching each tile of the partial into L2) ran 4% faster than
the ping-pong one at 4096x8192x4096 and 2% slower at 4096x14336x2048; not
yet measured on two GPUs.
With --send role the send GEMMs run on the cooperative 128 x 256 tile and
store their partials locally; the kernel's consumer role (warps of the
producer warpgroup) copies each stored tile to its owner over NVLink and
raises its flag (signal: {per_tile, consumer: sent, flags: true}), so the k
loop never waits for the peer's memory; the owner runs on the same tile, or
with --owner pingpong on 128 x 128 tiles, each inside one send tile (wait:
{per_tile, tile: [128, 256]}).
With --send add the reduction is in the sender's stores instead: each rank
first computes its own rows into Y (cooperative 128 x 256, or ping-pong 128
x 128 with --owner pingpong) and signals each tile; then, for every other
owner, its GEMM on that owner's rows (ping-pong 128 x 128) adds its partial
into the owner's Y by TMA (outputs: {y: {accumulate: true, wait: ...}}: a
reduce-add over NVLink, each tile once the owner's flag says its own store
is done).  The owner's GEMM reads no partial and waits for nothing; Y is
done when the senders' kernels are (the next symmetric-memory barrier).
tests/gpu/gemm_rs.py runs the same kernels and protocol on one GPU, two
streams standing in for two ranks.
"""
import argparse

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import tpcommon
import wsfuse

# every rank's kernels tile the rows alike (one flag layout), on ping-pong consumers (above)
TILE = "tile: [128, 128, 64], consumers: pingpong"

SEND = """\
fusion: rs_send
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: part, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  part: {{dtype: {part}}}
schedule: {{signal: {{per_tile, scope: system}}, {tile}}}
"""

# --send role: stored locally (part), copied to the owner by the consumer role, which raises the flags
SEND_ROLE = """\
fusion: rs_send_role
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: part, op: matmul, in: [x, w], transpose_b: true}}
  - {{out: sent, op: cast, in: [part], to: {part}}}
outputs:
  part: {{dtype: {part}}}
  sent: {{dtype: {part}}}
schedule: {{signal: {{per_tile, consumer: sent, flags: true, scope: system}}, {tile}}}
"""

# --owner cooperative: the owner's GEMM on the cooperative tile, each of its tiles waiting for the two
# 128 x 128 send tiles it covers (wait: {per_tile, tile: [128, 128]})
OWNER_COOP = "tile: [128, 256, 64]"
WAIT_COOP = "{per_tile, tile: [128, 128]}"
OWNERS = {"pingpong": ("per_tile", TILE), "cooperative": (WAIT_COOP, OWNER_COOP)}   # --owner: wait, tile

# --send add: the reduction in the sender's stores.  Each owner first computes its own rows into Y and
# signals each tile (MINE); then each sender adds its partial into the owner's Y by TMA (accumulate:
# true, a reduce-add over NVLink), each tile once the owner's flag says its store is done (the output
# waits on the owner's flags, read over NVLink).  Nothing to reduce afterwards: the owner's Y is done
# when the last sender's kernel is.
MINE = """\
fusion: rs_mine
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: bf16}}
schedule: {{signal: {{per_tile, scope: system}}, {tile}}}
"""
SEND_ADD = """\
fusion: rs_send_add
inputs:
  x: {{dtype: bf16, shape: [M, K]}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: bf16, accumulate: true, wait: {wait}}}
schedule: {{{tile}}}
"""
SENDS = {"epilogue": (SEND, TILE), "role": (SEND_ROLE, OWNER_COOP), "add": (SEND_ADD, TILE)}   # --send: spec, tile


def own_spec(peers, part, wait="per_tile", tile=TILE):
    """The owner's GEMM: its partial plus the PEERS partials (dtype PART) received, each waited for as WAIT
    says (None: read at once, as bench/ab/rs_breakdown.py times it)."""
    flag = f", wait: {wait}" if wait else ""
    inputs = "".join(f"  p{i}: {{dtype: {part}, shape: [M, N]{flag}}}\n" for i in range(peers))
    ops, acc = "", "mine"
    for i in range(peers):
        ops += f"  - {{out: s{i}, op: add, in: [{acc}, p{i}]}}\n"
        acc = f"s{i}"
    return ("fusion: rs_own\ninputs:\n  x: {dtype: bf16, shape: [M, K]}\n  w: {dtype: bf16, shape: [N, K]}\n"
            + inputs + "ops:\n  - {out: mine, op: matmul, in: [x, w], transpose_b: true}\n" + ops
            + f"  - {{out: y, op: cast, in: [{acc}], to: bf16}}\noutputs:\n  y: {{dtype: bf16}}\n"
            + f"schedule: {{{tile}}}\n")


def main():
    ap = argparse.ArgumentParser()
    # (one --shape, not --m: torchrun takes an abbreviation of its own options for its own)
    ap.add_argument("--shape", default="8192x8192x8192", help="MxNxK of the whole layer")
    ap.add_argument("--partials", choices=("bf16", "f32"), default="bf16",
                    help="the dtype of the partial sums that cross NVLink")
    ap.add_argument("--owner", choices=tuple(OWNERS),
                    help="the owner's GEMM on ping-pong 128 x 128 tiles (the default with --send epilogue) or "
                         "on cooperative 128 x 256 (the default with --send role or add)")
    ap.add_argument("--send", choices=tuple(SENDS), default="epilogue",
                    help="the partials cross NVLink in the epilogue's stores, in the consumer role's copies, or "
                         "as TMA adds into the owner's output")
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    args.owner = args.owner or ("cooperative" if args.send in ("role", "add") else "pingpong")
    args.m, args.n, args.k = map(int, args.shape.split("x"))
    rank, world, dev = tpcommon.setup()
    mo, n, kr = args.m // world, args.n, args.k // world
    torch.manual_seed(rank)
    x = torch.randn(args.m, kr, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, kr, device=dev, dtype=torch.bfloat16) / args.k ** 0.5

    if args.send == "add":
        if args.partials != "bf16":
            ap.error("--send add adds bf16 partials into the owner's bf16 output: leave out --partials f32")
        fused, y, handle = add_form(args, rank, world, dev, x, w, mo, n, kr)
    else:
        fused, y, handle = receive_form(args, rank, world, dev, x, w, mo, n, kr)

    def unfused():
        """The reference: each rank's GEMM in f32, NCCL's reduce-scatter of the partials."""
        part = x.float() @ w.float().t()
        out = torch.empty(mo, n, device=dev, dtype=torch.float32)
        dist.reduce_scatter_tensor(out, part)
        return out

    handle.barrier()
    fused()
    handle.barrier()   # the peers' kernels, which write into y with --send add, are done
    torch.cuda.synchronize()
    ref = unfused()
    err = ((y.float() - ref).norm() / ref.norm()).item()
    ok = torch.tensor([err < 1e-2], device=dev, dtype=torch.int32)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"gemm_reduce_scatter {args.m}x{n}x{args.k} on {world} GPUs, {args.partials} partials, "
              f"{args.owner} owner, sent by the {args.send}: "
              f"rel err {err:.2e} "
              f"({'ok' if ok.item() else 'FAIL'})", flush=True)
    if args.bench:
        def cublas_nccl():
            part = torch.mm(x, w.t())
            out = torch.empty(mo, n, device=dev, dtype=torch.bfloat16)
            dist.reduce_scatter_tensor(out, part)

        def async_tp():
            torch.ops.symm_mem.fused_matmul_reduce_scatter(x, w.t(), "sum", scatter_dim=0,
                                                           group_name=dist.group.WORLD.group_name)

        tpcommon.bench(handle, rank, [("wsfuse", fused), ("cublas+nccl", cublas_nccl), ("async-tp", async_tp)])
    dist.destroy_process_group()
    return 0 if ok.item() else 1


def add_form(args, rank, world, dev, x, w, mo, n, kr):
    """--send add: (fused, y, handle), y and the owners' flags in peer-visible memory."""
    ctx = wsfuse.Context(sizes={"M": mo, "N": n, "K": kr})
    own_tile = OWNERS[args.owner][1]
    mine = ctx.compile_string(MINE.format(tile=own_tile), name="rs_mine.yaml")
    # each send tile waits for the owner's tile that holds it: the same, or a cooperative 128 x 256
    wait = "per_tile" if own_tile == TILE else "{per_tile, tile: [128, 256]}"
    send = ctx.compile_string(SEND_ADD.format(tile=TILE, wait=wait), name="rs_send_add.yaml")
    y = symm_mem.empty((mo, n), dtype=torch.bfloat16, device=dev)
    flags = symm_mem.empty((mine.signal_layout(x[:mo], w, y)["flags"],), dtype=torch.int32, device=dev)
    flags.zero_()
    y_h = symm_mem.rendezvous(y, dist.group.WORLD)
    flags_h = symm_mem.rendezvous(flags, dist.group.WORLD)
    epoch = [0]

    def fused():
        epoch[0] += 1
        mine.launch(x[rank * mo:(rank + 1) * mo], w, y, flags=flags, epoch=epoch[0])
        for step in range(1, world):   # the other owners, nearest first
            o = (rank + step) % world
            send.launch(x[o * mo:(o + 1) * mo], w, y_h.get_buffer(o, y.shape, y.dtype),
                        wait_flags=flags_h.get_buffer(o, flags.shape, flags.dtype), epoch=epoch[0])
    return fused, y, y_h


def receive_form(args, rank, world, dev, x, w, mo, n, kr):
    """--send epilogue | role: (fused, y, handle), the partials received into peer-visible memory."""
    # peer-visible memory: W - 1 receive slots of partials, and their flags ([slot][tile])
    part = {"bf16": torch.bfloat16, "f32": torch.float32}[args.partials]
    recv = symm_mem.empty((world - 1, mo, n), dtype=part, device=dev)
    ctx = wsfuse.Context(sizes={"M": mo, "N": n, "K": kr})
    spec, tile = SENDS[args.send]
    send = ctx.compile_string(spec.format(part=args.partials, tile=tile), name="rs_send.yaml")
    # the owner waits on the send's tiles: its own, or each covering two (owner cooperative, sends ping-pong),
    # or each inside one (owner ping-pong, sends by the role on 128 x 256)
    wait, own_tile = OWNERS[args.owner]
    if args.send == "role":
        wait = "per_tile" if args.owner == "cooperative" else "{per_tile, tile: [128, 256]}"
    own = ctx.compile_string(own_spec(world - 1, args.partials, wait, own_tile), name="rs_own.yaml")
    local = [torch.empty(mo, n, dtype=part, device=dev)] if args.send == "role" else []   # the role's copies' source
    tiles = send.signal_layout(x[:mo], w, *local, recv[0])["flags"]
    flags = symm_mem.empty(((world - 1) * tiles,), dtype=torch.int32, device=dev)
    flags.zero_()
    recv_h = symm_mem.rendezvous(recv, dist.group.WORLD)
    flags_h = symm_mem.rendezvous(flags, dist.group.WORLD)
    y = torch.empty(mo, n, device=dev, dtype=torch.bfloat16)
    epoch = [0]

    def slot(sender, owner):
        """Where SENDER's partial lands among OWNER's receive slots (its W - 1 peers, in ring order)."""
        return (sender - owner - 1) % world

    def fused():
        epoch[0] += 1
        for step in range(1, world):   # the other owners, nearest first, so each owner's partials spread in time
            o = (rank + step) % world
            peer_recv = recv_h.get_buffer(o, recv.shape, recv.dtype)
            peer_flags = flags_h.get_buffer(o, flags.shape, flags.dtype)
            s = slot(rank, o)
            send.launch(x[o * mo:(o + 1) * mo], w, *local, peer_recv[s],
                        flags=peer_flags[s * tiles:(s + 1) * tiles], epoch=epoch[0])
        own.launch(x[rank * mo:(rank + 1) * mo], w, *[recv[i] for i in range(world - 1)], y,
                   epoch=epoch[0], wait_flags=flags)
    return fused, y, recv_h


if __name__ == "__main__":
    raise SystemExit(main())
