"""What the tensor-parallel examples of this folder share: the process group's setup with NVLink
multicast off, a timer that every rank runs alike, and a --bench report against the peers."""
import os

import torch
import torch.distributed as dist


def setup():
    """Joins torchrun's process group (NCCL) with NVLink multicast off, on this rank's GPU:
    (rank, world, device)."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", dist.get_rank())))
    return dist.get_rank(), dist.get_world_size(), torch.device("cuda", torch.cuda.current_device())


def timed(fn, handle, iters=20, warmup=3):
    """Milliseconds a call of FN, the slowest rank's mean, each call after HANDLE's barrier (a
    symmetric-memory handle: every rank's buffers and flags free before the next round writes them).
    A fixed count, every rank the same: do_bench picks its own from its first runs, and ranks that
    disagree wait on each other's flags for ever."""
    def call():
        handle.barrier()
        fn()
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        call()
    end.record()
    torch.cuda.synchronize()
    ms = torch.tensor([start.elapsed_time(end) / iters], device=torch.cuda.current_device())
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    return ms.item()


def bench(handle, rank, runs):
    """Times each of RUNS ((name, fn) pairs, "wsfuse" first) with timed(fn, HANDLE) and prints the report
    on rank 0.  A run that raises AttributeError or RuntimeError (an op this torch lacks, or one that
    cannot run here, as async-TP's on some builds) is said not to have run and left out."""
    times = {}
    for name, fn in runs:
        try:
            times[name] = timed(fn, handle)
        except (AttributeError, RuntimeError) as e:
            if rank == 0:
                print(f"{name} not run: {e}", flush=True)
    report(times, rank)


def report(times, rank):
    """Prints, on rank 0, TIMES (name -> ms, "wsfuse" among them) and each peer's time over wsfuse's."""
    if rank == 0:
        print(" ".join(f"{a} {v:.3f} ms" for a, v in times.items()) + " -> " +
              " ".join(f"{a}/wsfuse {v / times['wsfuse']:.3f}" for a, v in times.items() if a != "wsfuse"),
              flush=True)
