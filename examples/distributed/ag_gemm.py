"""All-gather + GEMM across GPUs, tile by tile (a column-parallel linear layer).

    PYTHONPATH=python NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \\
        torchrun --nproc-per-node 2 examples/distributed/ag_gemm.py [--shape MxNxK] [--pieces P] [--bench]

Each of the W ranks holds X_r [M / W, K], its rows of the activations, and
W_r [N / W, K], its columns of the layer; it computes Y_r = X W_r^T [M, N / W]
on all M rows, which first have to be gathered.  With wsfuse each rank pushes
its rows into every peer's gather buffer (peer memory from torch
SymmetricMemory, copied by the copy engine over NVLink) in P pieces, each
followed by its row tiles' flag words there; meanwhile it runs the GEMM on
its own rows, then one GEMM on each peer's rows whose A input is marked
wait: per_tile: its producer waits for a row tile's flag before the tile's
first TMA load, so a GEMM starts before the rows it needs last have landed.
No collective runs, and no SM copies: the transfer is the copy engine's.

Checked against NCCL's all_gather_into_tensor followed by an f32 GEMM,
relative error norm below 1e-2 on every rank; exits 1 otherwise.  --bench
times it against that unfused pair in bf16 (cuBLAS) and against torch's
async-TP fused_all_gather_matmul where it runs.  Never uses NVLink multicast.
tests/gpu/ag_gemm.py checks the waiting GEMM on one GPU, a second stream
standing in for the peers.

Status: written in the twenty-first session when no machine of two GPUs was
lent; not yet run on two (the waiting kernel and its protocol are the ones
tests/gpu/ag_gemm.py runs).  On one (--nproc-per-node 1, the own rows' GEMM
alone): 4096^3 correct (rel err 1.66e-03), --bench ran.
"""
import argparse

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import tpcommon
import wsfuse

TILE = "tile: [128, 256, 64]"

SPEC = """\
fusion: {name}
inputs:
  x: {{dtype: bf16, shape: [M, K]{wait}}}
  w: {{dtype: bf16, shape: [N, K]}}
ops:
  - {{out: y, op: matmul, in: [x, w], transpose_b: true}}
outputs:
  y: {{dtype: bf16}}
schedule: {{{tile}}}
"""


def main():
    ap = argparse.ArgumentParser()
    # (one --shape, not --m: torchrun takes an abbreviation of its own options for its own)
    ap.add_argument("--shape", default="8192x8192x8192", help="MxNxK of the whole layer")
    ap.add_argument("--pieces", type=int, default=4, help="copies (each then its flags) a peer's rows go in")
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    m, n, k = map(int, args.shape.split("x"))
    rank, world, dev = tpcommon.setup()
    mo, nr = m // world, n // world
    torch.manual_seed(rank)
    x = torch.randn(mo, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(nr, k, device=dev, dtype=torch.bfloat16) / k ** 0.5

    ctx = wsfuse.Context(sizes={"M": mo, "N": nr, "K": k})
    own = ctx.compile_string(SPEC.format(name="ag_own", wait="", tile=TILE), name="ag_own.yaml")
    peer = ctx.compile_string(SPEC.format(name="ag_peer", wait=", wait: per_tile", tile=TILE), name="ag_peer.yaml")
    y = torch.empty(m, nr, device=dev, dtype=torch.bfloat16)
    lay = peer.signal_layout(x, w, y[:mo])
    words, rows = lay["wait_words"], lay["tile_rows"]   # a word a row tile of one rank's rows

    # peer-visible memory: the gathered rows, and a flag word a row tile ([rank][tile])
    gathered = symm_mem.empty((m, k), dtype=torch.bfloat16, device=dev)
    flags = symm_mem.empty((world * words,), dtype=torch.int32, device=dev)
    flags.zero_()
    gathered_h = symm_mem.rendezvous(gathered, dist.group.WORLD)
    flags_h = symm_mem.rendezvous(flags, dist.group.WORLD)
    # the pieces: row tiles [t0, t1) of this rank's rows, copied then flagged
    cuts = [words * i // args.pieces for i in range(args.pieces + 1)]
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    fill = torch.empty(words, dtype=torch.int32, device=dev)   # this call's epoch, what the flag words become
    push = torch.cuda.Stream()
    epoch = [0]

    def fused():
        epoch[0] += 1
        e = epoch[0]
        fill.fill_(e)   # on the current stream: the last call's copies of it are done (its wait_stream below)
        push.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(push):   # copy engine only: no kernel launch on this stream
            for step in range(1, world):
                p = (rank + step) % world
                dst = gathered_h.get_buffer(p, gathered.shape, gathered.dtype)
                dflags = flags_h.get_buffer(p, flags.shape, flags.dtype)
                for a, b in pieces:
                    r0, r1 = a * rows, min(b * rows, mo)
                    dst[rank * mo + r0:rank * mo + r1].copy_(x[r0:r1], non_blocking=True)
                    dflags[rank * words + a:rank * words + b].copy_(fill[a:b], non_blocking=True)
        own.launch(x, w, y[rank * mo:(rank + 1) * mo])
        for step in range(1, world):   # the peers' rows, nearest first, each tile once its flag is set
            p = (rank - step) % world
            peer.launch(gathered[p * mo:(p + 1) * mo], w, y[p * mo:(p + 1) * mo], epoch=e,
                        wait_flags=flags[p * words:(p + 1) * words])
        torch.cuda.current_stream().wait_stream(push)

    def reference():
        xs = torch.empty(m, k, device=dev, dtype=torch.bfloat16)
        dist.all_gather_into_tensor(xs, x)
        return xs.float() @ w.float().t()

    flags_h.barrier()
    fused()
    torch.cuda.synchronize()
    ref = reference()
    err = ((y.float() - ref).norm() / ref.norm()).item()
    ok = torch.tensor([err < 1e-2 and not torch.isnan(y).any().item()], device=dev, dtype=torch.int32)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"ag_gemm {m}x{n}x{k} on {world} GPUs, {len(pieces)} pieces a peer: rel err {err:.2e} "
              f"({'ok' if ok.item() else 'FAIL'})", flush=True)
    if args.bench:
        def nccl_cublas():
            xs = torch.empty(m, k, device=dev, dtype=torch.bfloat16)
            dist.all_gather_into_tensor(xs, x)
            torch.mm(xs, w.t())

        def async_tp():
            torch.ops.symm_mem.fused_all_gather_matmul(x, [w.t()], gather_dim=0,
                                                       group_name=dist.group.WORLD.group_name)

        tpcommon.bench(flags_h, rank, [("wsfuse", fused), ("nccl+cublas", nccl_cublas), ("async-tp", async_tp)])
    dist.destroy_process_group()
    return 0 if ok.item() else 1


if __name__ == "__main__":
    raise SystemExit(main())
