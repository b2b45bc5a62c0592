"""wave_tiles.py BUILD: default tiles narrowed to fill the last wave (make check-gpu runs it when torch imports).

Without a tile hint, a cooperative matmul whose 128 x 256 tiles would leave most SMs idle in the last wave
takes another, 128 x 224, 192 or 160, or 256 x 160 (passes/plan_matmul.c, fill_waves); one whose 128 x
128 tiles leave SMs idle where 128 x 64 would take a second wave takes the narrowest multiple of 16 from 80
whose tiles fit one wave, along each row of tiles where the output is taller than wide (choose_tile).  For each case:
the kernel compiled at the sizes given, its kernel IR naming the tile (and cluster) expected, then launched
on fresh random operands of the launch sizes (which may differ: the choice is the compile's) into a
NaN-poisoned output, within 1e-2 of the f32 reference (relative error norm).  The last column of tiles is
ragged where N is not a multiple of the width, and the last row where M is not of the rows.
Prints one line a case and "N passed, N failed"; exits 1 on a failure.
"""
import sys

import torch

from gpucheck import BIAS_GELU, NN, NT, TN, Tally, library, run_mm

# spec, compile sizes (M, N, K), launch sizes or None (the same), the tile and cluster its IR names
CASES = [
    (NT, (2048, 1280, 8192), None, (128, 160), None),
    (NT, (4096, 1280, 8192), None, (256, 160), None),            # one wave of 256-row tiles
    (NT, (8192, 1280, 8192), None, (256, 160), None),            # 1.9 waves where 128 x 256 took 2.4
    (NT, (8000, 1240, 4096), None, (256, 160), None),            # ragged both ways
    (NT, (2048, 1200, 4096), None, (128, 160), None),            # a ragged last column: 1200 = 7 x 160 + 80
    (NT, (2048, 1280, 8192), (2000, 1304, 8192), (128, 160), None),   # compiled whole, run ragged both ways
    (NT, (500, 6144, 4096), None, (128, 192), None),             # a ragged last row
    (NT, (2048, 7168, 2048), None, (128, 224), None),
    (NT, (512, 28672, 1024), None, (128, 224), None),
    (NT, (2048, 7168, 2040), None, (128, 224), (2, 1)),          # misaligned K: B shared, 112 rows a CTA
    (NT, (8192, 1280, 2040), None, (256, 160), (1, 2)),          # A shared, 128 rows a CTA
    (NN, (2048, 1280, 4096), None, (128, 192), None),            # an N-major B: whole 64-wide chunks
    (NN, (512, 6144, 4096), None, (128, 192), None),
    (TN, (2048, 1280, 4096), None, (128, 160), None),
    (TN, (8192, 1280, 4096), None, (256, 160), None),
    (BIAS_GELU, (2048, 1280, 4096), None, (128, 160), None),
    (BIAS_GELU, (8192, 1280, 4096), None, (256, 160), None),
    (BIAS_GELU, (512, 7000, 4096), None, (128, 224), None),
    (NT, (1536, 1024, 4096), None, (128, 96), None),             # 132 tiles where 128 x 128 made 96
    (NT, (1280, 1000, 2048), None, (128, 80), None),             # ragged last column: 1000 = 12 x 80 + 40, along rows
    (NT, (1536, 1024, 4096), (1500, 1096, 4096), (128, 96), None),   # compiled whole, run ragged both ways
    (TN, (1152, 1280, 2048), None, (128, 96), None),             # an M-major A
    (BIAS_GELU, (1024, 1280, 4096), None, (128, 80), None),       # 128 tiles of 80, subtiles of 16 columns
    (NT, (1280, 1280, 4096), None, (128, 112), None),            # 120 tiles where 128 x 128 made 100
    (NT, (640, 2000, 4096), (600, 2048, 4096), (128, 80), None),  # compiled ragged, run ragged the other way
    (NT, (1280, 1024, 4096), None, (128, 80), None),             # taller than wide: along each row of tiles
    (NT, (1664, 1000, 4096), (1600, 1024, 4096), (128, 112), None),   # and ragged both ways
    (NT, (1792, 1024, 4096), None, (128, 128), None),            # 140 tiles of 128 x 112: keeps 128 x 128
    (NT, (4096, 4096, 4096), None, (128, 256), None),            # controls: a full last wave keeps 128 x 256
    (NT, (6144, 1280, 8192), None, (128, 256), None),
]


def main():
    lib, report = library(), Tally()
    torch.manual_seed(0)
    for spec, size, at, want_tile, want_cluster in CASES:
        name, _, tile, cluster, e = run_mm(lib, spec, size, at)
        report(name, e < 1e-2 and tile == want_tile and cluster == want_cluster,
               f"tile {tile} (expected {want_tile}), cluster {cluster} (expected {want_cluster}), relative error {e:.1e}")
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
