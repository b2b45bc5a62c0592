"""clusters.py BUILD: matmul clusters of up to 8 CTAs in one or two dimensions (make check-gpu runs it when torch imports).

A cluster [x, y] shares B among the x CTAs of a tile column and A among the y of a tile row: each CTA loads
its part of the shared operand's slice and multicasts it to the CTAs it shares with, a mask of its rank in
a 2-D cluster (passes/lower_matmul.c, load_operand).  Without a hint, one ragged row (65 to 112) of 80 to 120
tiles over a long K runs in clusters of four sharing A (row_cluster).  For each case: the kernel compiled at the sizes given
(with the schedule given), its kernel IR naming the tile and cluster expected, then launched on fresh random
operands of the launch sizes into a NaN-poisoned output, within 1e-2 of the f32 reference (relative error
norm).  Ragged rows and columns leave a cluster's CTAs past the output (their tiles moved inside), M-major
A and N-major B parts are whole 64-wide chunks, and a K that is no multiple of 8 misaligns every row.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import BIAS_GELU, NN, NT, TN, Tally, library, run_mm

PP = "consumers: pingpong, tile: [64, 128, 64]"
# spec, compile sizes (M, N, K), launch sizes or None (the same), schedule body, the tile and cluster its IR names
CASES = [
    (NT, (96, 7168, 8192), None, "", (128, 64), (1, 4)),           # the default of one ragged row of 112 tiles:
    (NT, (72, 7168, 4096), None, "", (128, 64), (1, 4)),           # rank 3's quarter of A past M, most of 2's
    (NT, (112, 7000, 4096), None, "", (128, 64), (1, 4)),          # 110 column tiles: 2 CTAs past N
    (NT, (100, 7168, 4040), None, "", (128, 64), (1, 4)),          # misaligned K
    (NT, (96, 7168, 8192), (128, 6000, 8192), "", (128, 64), (1, 4)),   # run at a whole row
    (NN, (112, 6144, 4096), None, "", (128, 64), (1, 4)),          # an N-major B (not shared)
    (BIAS_GELU, (100, 5120, 4096), None, "", (128, 64), (1, 4)),
    (NT, (128, 7168, 8192), None, "", (128, 64), None),            # controls: a whole row of 128,
    (NT, (120, 7168, 8192), None, "", (128, 64), None),            # 8 rows past M;
    (NT, (96, 8192, 8192), None, "", (128, 64), None),             # 32 clusters of 4 do not all fit at once;
    (TN, (128, 7168, 4096), None, "", (128, 64), None),            # an M-major A
    (NT, (128, 7168, 8192), None, "cluster: [2, 4], " + PP, (64, 128), (2, 4)),   # cuBLAS's 2-D cluster
    (NT, (200, 3000, 1000), None, "cluster: [2, 2], " + PP, (64, 128), (2, 2)),
    (NT, (1000, 3000, 2048), None, "cluster: [4, 2]", (128, 256), (4, 2)),
    (NT, (512, 2048, 1024), None, "cluster: [1, 8]", (128, 64), (1, 8)),    # 16 of A's rows a CTA
    (NT, (2048, 520, 512), None, "cluster: [8, 1], tile: [128, 256, 64]", (128, 256), (8, 1)),   # 32 of B's
    (NN, (1024, 1000, 1024), None, "cluster: [4, 1]", (128, 256), (4, 1)),  # 64-wide chunks of N-major B
    (TN, (1000, 1024, 1024), None, "cluster: [4, 2]", (128, 64), (4, 2)),   # A M-major, shared by 2
    (BIAS_GELU, (512, 4096, 2048), None, "cluster: [2, 4]", (128, 128), (2, 4)),
    (NT, (4096, 4096, 4096), (1500, 2104, 4096), "cluster: [2, 2]", (128, 256), (2, 2)),
]


def main():
    lib, report = library(), Tally()
    torch.manual_seed(0)
    for spec, size, at, sched, want_tile, want_cluster in CASES:
        name, _, tile, cluster, e = run_mm(lib, spec, size, at, sched)
        report(name, e < 1e-2 and tile == want_tile and cluster == want_cluster,
               f"tile {tile} (expected {want_tile}), cluster {cluster} (expected {want_cluster}), relative error {e:.1e}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
