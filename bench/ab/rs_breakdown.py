"""rs_breakdown.py MxNxK [TILE]: where the 2-GPU GEMM + reduce-scatter's time goes.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=python \\
        torchrun --nproc-per-node 2 bench/ab/rs_breakdown.py 8192x8192x8192 ["tile: [128, 256, 64]"]

Times, on 2 GPUs, the parts of examples/distributed/gemm_reduce_scatter.py (its
specs, its tile unless TILE is given, a `schedule:` body): one rank's GEMM of
an owner's rows, by cuBLAS and by wsfuse; the send GEMM storing its partial
(bf16, f32) into a local buffer and into the peer's over NVLink; the owner's
GEMM reading a partial without waiting; the two in a row, with and without the
waits (and, on the example's tile, the owner on the cooperative tile); the
send through the consumer role (--send role: cooperative 128 x 256, stored
locally, copied to the peer by the role) and the pair with it; and the
peers (cuBLAS + NCCL, NCCL's reduce-scatter alone, async-TP).
ONLY=a,b keeps the rows whose name holds a or b.  Each figure: 20 calls, each
after a symmetric-memory barrier, the median, the slowest rank's (µs).
"""
if __name__ == "__main__":
    from abcommon import usage
    usage(__doc__, 1)
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..", "examples", "distributed")]
import abcommon  # noqa: E402
import gemm_reduce_scatter as ex  # noqa: E402
import tpcommon  # noqa: E402
import wsfuse  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def main():
    m, n, k = map(int, sys.argv[1].split("x"))
    tile = sys.argv[2] if len(sys.argv) > 2 else ex.TILE
    only = os.environ.get("ONLY")
    rank, world, dev = tpcommon.setup()
    mo, kr = m // world, k // world
    torch.manual_seed(rank)
    x = torch.randn(m, kr, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, kr, device=dev, dtype=torch.bfloat16) / k ** 0.5
    ctx = wsfuse.Context(sizes={"M": mo, "N": n, "K": kr})
    send = {d: ctx.compile_string(ex.SEND.format(part=d, tile=tile), name=f"send_{d}.yaml") for d in DTYPES}
    own = {(d, wt): ctx.compile_string(ex.own_spec(world - 1, d, "per_tile" if wt else None, tile),
                                       name=f"own_{d}_{wt}.yaml")
           for d in DTYPES for wt in (True, False)}
    coop = ctx.compile_string(ex.own_spec(world - 1, "bf16", ex.WAIT_COOP, ex.OWNER_COOP), name="own_coop.yaml")
    plain = ctx.compile_string(abcommon.gemm_spec("schedule: {" + tile + "}\n"), name="plain.yaml")
    recv = {d: symm_mem.empty((world - 1, mo, n), dtype=t, device=dev) for d, t in DTYPES.items()}
    tiles = send["f32"].signal_layout(x[:mo], w, recv["f32"][0])["flags"]
    flags = symm_mem.empty(((world - 1) * tiles,), dtype=torch.int32, device=dev)
    flags.zero_()
    recv_h = {d: symm_mem.rendezvous(recv[d], dist.group.WORLD) for d in DTYPES}
    flags_h = symm_mem.rendezvous(flags, dist.group.WORLD)
    local_flags = torch.zeros_like(flags)
    y = torch.empty(mo, n, device=dev, dtype=torch.bfloat16)
    o = (rank + 1) % world                       # the owner this rank sends to first
    xo, xm = x[o * mo:(o + 1) * mo], x[rank * mo:(rank + 1) * mo]
    peer_flags = flags_h.get_buffer(o, flags.shape, flags.dtype)[:tiles]
    epoch = [0]

    def bump():
        epoch[0] += 1
        return epoch[0]

    def timed(fn, iters=20, warmup=3):
        for _ in range(warmup):
            flags_h.barrier()
            fn()
        torch.cuda.synchronize()
        dist.barrier()
        marks = []
        for _ in range(iters):
            flags_h.barrier()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            marks.append((s, e))
        torch.cuda.synchronize()
        v = sorted(s.elapsed_time(e) for s, e in marks)
        us = torch.tensor([1000 * v[len(v) // 2]], device=dev)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        return us.item()

    rows = []

    def row(name, fn):
        if not only or any(a in name for a in only.split(",")):
            rows.append((name, timed(fn)))

    out = torch.empty(mo, n, device=dev, dtype=torch.bfloat16)
    row("cuBLAS, one owner's rows", lambda: torch.mm(xo, w.t(), out=out))
    row("wsfuse plain, one owner's rows", lambda: plain.launch(xo, w, out))
    for d in DTYPES:
        local = recv[d][0]
        peer = recv_h[d].get_buffer(o, recv[d].shape, recv[d].dtype)[0]

        def fused(wait, d=d, peer=peer):
            e = bump()
            send[d].launch(xo, w, peer, flags=peer_flags, epoch=e)
            if wait:
                own[d, True].launch(xm, w, recv[d][0], y, epoch=e, wait_flags=flags[:tiles])
            else:
                own[d, False].launch(xm, w, recv[d][0], y)
        row(f"send {d} -> local", lambda d=d, local=local: send[d].launch(xo, w, local, flags=local_flags,
                                                                          epoch=bump()))
        row(f"send {d} -> peer", lambda d=d, peer=peer: send[d].launch(xo, w, peer, flags=peer_flags, epoch=bump()))
        row(f"own {d}, no wait", lambda d=d: own[d, False].launch(xm, w, recv[d][0], y))
        row(f"send + own {d}, no wait", lambda: fused(False))
        row(f"fused {d} (send + own, waits)", lambda: fused(True))

    def fused_coop():
        e = bump()
        peer = recv_h["bf16"].get_buffer(o, recv["bf16"].shape, recv["bf16"].dtype)[0]
        send["bf16"].launch(xo, w, peer, flags=peer_flags, epoch=e)
        coop.launch(xm, w, recv["bf16"][0], y, epoch=e, wait_flags=flags[:tiles])
    if tile == ex.TILE:   # the sends' 128 x 128 flags, the owner's 128 x 256 tiles
        row("fused bf16, owner cooperative", fused_coop)

    # --send role: cooperative 128 x 256 sends stored locally, the consumer role copying each tile to the owner
    role = ctx.compile_string(ex.SEND_ROLE.format(part="bf16", tile=ex.OWNER_COOP), name="send_role.yaml")
    own_role = ctx.compile_string(ex.own_spec(world - 1, "bf16", "per_tile", ex.OWNER_COOP), name="own_role.yaml")
    part = torch.empty(mo, n, device=dev, dtype=torch.bfloat16)
    rtiles = role.signal_layout(xo, w, part, recv["bf16"][0])["flags"]

    def send_role(to_peer):
        dst = recv_h["bf16"].get_buffer(o, recv["bf16"].shape, recv["bf16"].dtype)[0] if to_peer else recv["bf16"][0]
        role.launch(xo, w, part, dst, flags=peer_flags[:rtiles] if to_peer else local_flags[:rtiles], epoch=bump())

    def fused_role():
        e = bump()
        peer = recv_h["bf16"].get_buffer(o, recv["bf16"].shape, recv["bf16"].dtype)[0]
        role.launch(xo, w, part, peer, flags=peer_flags[:rtiles], epoch=e)
        own_role.launch(xm, w, recv["bf16"][0], y, epoch=e, wait_flags=flags[:rtiles])
    row("send role bf16 -> local", lambda: send_role(False))
    row("send role bf16 -> peer", lambda: send_role(True))
    row("fused bf16, send role, owner coop", fused_role)

    def cublas_nccl():
        part = torch.mm(x, w.t())
        dist.reduce_scatter_tensor(torch.empty(mo, n, device=dev, dtype=torch.bfloat16), part)
    row("cuBLAS + NCCL", cublas_nccl)
    rs_in, rs_out = torch.empty(m, n, device=dev, dtype=torch.bfloat16), torch.empty(mo, n, device=dev,
                                                                                    dtype=torch.bfloat16)
    row("NCCL reduce-scatter alone", lambda: dist.reduce_scatter_tensor(rs_out, rs_in))
    op = torch.ops.symm_mem.fused_matmul_reduce_scatter
    row("async-TP", lambda: op(x, w.t(), "sum", scatter_dim=0, group_name=dist.group.WORLD.group_name))
    row("barrier alone", lambda: None)
    if rank == 0:
        print(f"{m}x{n}x{k} on {world} GPUs, {tile}")
        for name, us in rows:
            print(f"  {name:34s} {us:8.1f} us", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
