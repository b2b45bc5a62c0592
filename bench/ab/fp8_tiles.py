"""fp8_tiles.py: the fp8 1 x 128 group dequantization and quantization of bench/ab/fp8_quant.py under tile
and schedule hints, against torch.compile and a copy of the dequant's bytes.

On a GPU from the repository root: `python3 bench/ab/fp8_tiles.py MxN`, e.g. `python3 bench/ab/fp8_tiles.py
4096x7168`.  Each dequant kernel's output is checked
bit for bit against torch first.  Prints two rounds: per schedule (default, tile [128, 128], [64, 128],
[32, 128], persistent, warp-specialized) its time (us), compile / it and the copy's share; the quant's
times (a row reduction: the tiles are its own).
"""
from abcommon import usage; usage(__doc__, 1)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench
from fp8_quant import QUANT, DEQUANT, torch_quant, torch_dequant
m, n = map(int, sys.argv[1].split("x"))
r = m * n // 128
x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
ry, rs = torch_quant(x)
xb = torch.empty(r, 128, device="cuda", dtype=torch.bfloat16)
y = torch.empty(r, 128, device="cuda", dtype=torch.float8_e4m3fn); s = torch.empty(r, 1, device="cuda")
var = {"default": "", "t128": "schedule: {tile: [128, 128]}\n", "t64": "schedule: {tile: [64, 128]}\n",
       "t32": "schedule: {tile: [32, 128]}\n", "pers": "schedule: {persistent: true}\n",
       "ws": "schedule: {warp_specialize: true}\n"}
cd = torch.compile(torch_dequant); cq = torch.compile(torch_quant)
cp = torch.empty((r * 128 * 3) // 2, device="cuda", dtype=torch.uint8); cp2 = torch.empty_like(cp)
with wsfuse.Context(sizes={"R": r}, cache="0") as ctx:
    kd = {}; kq = {}
    for v, sched in var.items():
        kd[v] = ctx.compile_string(DEQUANT + sched, name=f"dq_{v}.yaml")
        xb.fill_(float("nan")); kd[v].launch(ry, rs, xb); torch.cuda.synchronize()
        torch.testing.assert_close(xb, torch_dequant(ry, rs), rtol=0, atol=0)
        try:
            kq[v] = ctx.compile_string(QUANT + sched, name=f"q_{v}.yaml")
        except wsfuse.Error as e:
            print("quant", v, str(e)[:120])
    for rd in range(2):
        tc = bench(lambda: cd(ry, rs)) * 1000; tcp = bench(lambda: cp2.copy_(cp)) * 1000
        line = f"dequant r{rd}: compile {tc:.1f} copy {tcp:.1f} |"
        for v, k in kd.items():
            t = bench(lambda: k.launch(ry, rs, xb)) * 1000
            line += f" {v} {t:.1f} ({tc / t:.2f}x, {tcp / t:.0%})"
        print(line, flush=True)
        tc = bench(lambda: cq(x)) * 1000
        line = f"quant r{rd}: compile {tc:.1f} |"
        for v, k in kq.items():
            t = bench(lambda: k.launch(x.view(r, 128), y, s)) * 1000
            line += f" {v} {t:.1f} ({tc / t:.2f}x)"
        print(line, flush=True)
