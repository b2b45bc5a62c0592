"""ragged_tiles.py BUILD: a ragged last row or column of tiles moved inside the output (make check-gpu
runs it when torch imports).

Where M or N is not a multiple of the tile, the last row (column) of tiles starts at M - BM (N - BN),
overlapping the tiles before it, which compute the rows they share again and store them again
(passes/lower_matmul.c, tile_inside).  For each schedule below at a ragged shape: the output poisoned
with NaN, launched twice (the same bits each time), within 1e-2 of x w^T in f32 (relative error norm),
and, where the k-steps' order does not depend on the grid, bit for bit the same as the same schedule at
the next shape up whose operands hold the ragged ones in their first rows: each element's sum is the same
whichever tile computed it, so the rows two tiles store are stored with one value.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import Tally, bf16, gemm_error, gemm_spec, library, poisoned, wsfuse

# schedule, the ragged M x N x K, the shape up (M x N) to compare bit for bit with, or None
CASES = [
    ("tile: [64, 64, 64], consumers: pingpong, split_k: 2", (200, 1024, 8192), (256, 1024)),
    ("tile: [64, 64, 64], consumers: pingpong, split_k: 3", (200, 1000, 8192), (256, 1024)),
    ("tile: [128, 256, 64]", (1000, 1000, 4096), (1024, 1024)),
    ("tile: [128, 256, 64], cluster: [2, 1]", (1000, 3000, 4096), (1024, 3072)),
    ("tile: [128, 256, 64], cluster: [1, 2]", (1000, 3000, 4096), (1024, 3072)),
    ("consumers: pingpong, tile: [128, 192, 64]", (1000, 1000, 4096), (1024, 1152)),
    ("swap_ab: true", (100, 1000, 4096), (128, 1024)),
    ("swap_ab: true, split_k: 2", (40, 1000, 4096), (48, 1024)),
    ("", (8200, 8200, 1024), (8320, 8448)),
    ("stream_k: true", (1000, 1000, 4096), None),   # the k-steps a CTA depend on the tile count
    ("", (200, 1000, 8192), None),                  # the default differs at the shape up
    ("", (30, 4000, 4096), None),
]


def run(lib, sched, m, n, k, x, w):
    """The schedule's kernel at M x N x K, launched twice on X, W into fresh poisoned outputs."""
    with wsfuse.Context(lib=lib, sizes={"M": m, "N": n, "K": k}, cache="0") as ctx:
        g = ctx.compile_string(gemm_spec(sched), name="ragged.yaml")
        ys = [poisoned(m, n), poisoned(m, n)]
        for y in ys:
            g.launch(x, w, y)
        torch.cuda.synchronize()
    return ys


def main():
    lib, report = library(), Tally()
    torch.manual_seed(0)
    for sched, (m, n, k), up in CASES:
        pm, pn = up or (m, n)
        xp, wp = bf16(pm, k), bf16(pn, k) / k ** 0.5
        x, w = xp[:m].contiguous(), wp[:n].contiguous()
        y, again = run(lib, sched, m, n, k, x, w)
        e = gemm_error(y, x, w)
        ok, what = e < 1e-2 and torch.equal(y, again), f"relative error {e:.1e}, a second launch " + \
            ("the same bits" if torch.equal(y, again) else "DIFFERS")
        if up:
            yp = run(lib, sched, pm, pn, k, xp, wp)[0][:m, :n]
            diff = (yp != y).sum().item()
            ok = ok and diff == 0
            what += f"; against {pm} x {pn}: " + ("the same bits" if diff == 0 else f"{diff} elements differ")
        report(f"{sched or 'default'} at {m} x {n} x {k}", ok, what)
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
