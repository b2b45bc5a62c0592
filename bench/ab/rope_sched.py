"""rope_sched.py: RoPE's rotate-half and interleaved forms (bench/ab/views.py's specs) under schedule hints,
against torch.compile and a copy of the bytes they must move (x read, y written).

On a GPU from the repository root: `python3 bench/ab/rope_sched.py T ROUNDS`, e.g. `python3
bench/ab/rope_sched.py 8192 2`.  x [T, 32, 128], cos and sin [T, 1, 128], bf16.  Each kernel's output is
checked against torch in f32 (relative error norm below 1e-2) first.  Prints per form and round: the
torch.compile and copy times (us), then per schedule (default, tile [64, 128], tile [32, 128], persistent,
stages 2, warp-specialized, vector stores persistent) its time, compile / it and the copy's share.
"""
from abcommon import usage; usage(__doc__, 2)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench
from views import SPECS, rope, ropei
t = int(sys.argv[1]); rounds = int(sys.argv[2])
bf = dict(device="cuda", dtype=torch.bfloat16)
ins = [torch.randn(t, 32, 128, **bf), torch.randn(t, 1, 128, **bf), torch.randn(t, 1, 128, **bf)]
var = {"default": "", "t64": "schedule: {tile: [64, 128]}\n", "t32": "schedule: {tile: [32, 128]}\n",
       "pers": "schedule: {persistent: true}\n", "st2": "schedule: {stages: 2}\n",
       "ws": "schedule: {warp_specialize: true}\n", "vec": "schedule: {store: vector, persistent: true}\n"}
src = torch.empty(t * 32 * 128, **bf); dst = torch.empty_like(src)
with wsfuse.Context(sizes={"T": t}, cache="0") as ctx:
    for name, fn in (("rope", rope), ("ropei", ropei)):
        cf = torch.compile(fn)
        ref = fn(*[a.float() for a in ins])
        ks = {}
        for v, sched in var.items():
            try:
                k = ks[v] = ctx.compile_string(SPECS[name] + sched, name=f"{name}_{v}.yaml")
            except wsfuse.Error as e:
                print(name, v, "error", str(e)[:200]); continue
            y = torch.full((t, 32, 128), float("nan"), **bf)
            k.launch(*ins, y); torch.cuda.synchronize()
            err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
            assert err < 1e-2, (name, v, err)
        for rd in range(rounds):
            tc = bench(lambda: cf(*ins)) * 1000
            tcp = bench(lambda: dst.copy_(src)) * 1000
            line = f"{name} r{rd}: compile {tc:.1f} copy {tcp:.1f} |"
            for v, k in ks.items():
                y = torch.empty(t, 32, 128, **bf)
                tw = bench(lambda: k.launch(*ins, y)) * 1000
                line += f" {v} {tw:.1f} ({tc / tw:.2f}x, {tcp / tw:.0%})"
            print(line, flush=True)
