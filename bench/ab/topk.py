"""topk.py: topk along the last dim (issue 67: a row kernel's selection) against torch.topk.

On a GPU from the repository root: `python3 bench/ab/topk.py [ROUNDS]`, ROUNDS interleaved rounds
(default 3), cases: router (k = 8 of 256 experts, 16384 tokens, bf16; with softmax before it, as a
router runs, beside torch's softmax + topk), vocab16k (k = 50 of 16384, 64 rows, bf16, in registers),
vocab128k (k = 50 of 128256, 64 rows: the row read again from memory in each pass).  Each output is poisoned, checked against torch.topk
(values equal, and the indices pick those values), then do_bench's median with L2 flushed.
"""
from abcommon import usage; usage(__doc__, 0)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

SPEC = """fusion: {name}
inputs:
  x: {{dtype: bf16, shape: [T, E]}}
ops:
{pre}  - {{out: [v, i], op: topk, in: [{src}], k: {k}}}
outputs:
  v: {{dtype: {vdt}}}
  i: {{}}
"""


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cases = {
        "router": (16384, 256, 8, True),
        "topk256": (16384, 256, 8, False),
        "vocab16k": (64, 16384, 50, False),
        "vocab128k": (64, 128256, 50, False),
    }
    for name, (t, e, k, soft) in cases.items():
        x = torch.randn(t, e, device="cuda", dtype=torch.bfloat16)
        spec = SPEC.format(name=name, k=k, src="p" if soft else "x", vdt="f32" if soft else "bf16",
                           pre="  - {out: p, op: softmax, in: [x], dim: -1}\n" if soft else "")
        if soft:
            peer = lambda: torch.topk(torch.softmax(x.float(), -1), k)
        else:
            peer = lambda: torch.topk(x, k)
        with wsfuse.Context(sizes={"T": t, "E": e}, cache="0") as ctx:
            kern = ctx.compile_string(spec, name=name + ".yaml")
            v = torch.full((t, k), float("nan"), device="cuda", dtype=torch.float32 if soft else torch.bfloat16)
            i = torch.full((t, k), -7, device="cuda", dtype=torch.int64)
            kern.launch(x, v, i)
            torch.cuda.synchronize()
            rv, ri = peer()
            assert torch.equal(v.float(), rv.float()) or (v.float() - rv.float()).abs().max().item() < 1e-6, name
            src = torch.softmax(x.float(), -1) if soft else x
            assert torch.equal(torch.gather(src, 1, i).float(), rv.float()) or \
                (torch.gather(src, 1, i).float() - rv.float()).abs().max().item() < 1e-6, name
            for rd in range(rounds):
                tw = bench(lambda: kern.launch(x, v, i)) * 1000
                tt = bench(peer) * 1000
                print(f"{name} r{rd}: wsfuse {tw:.1f} us, torch {tt:.1f} us ({tt / tw:.3f}x)", flush=True)


if __name__ == "__main__":
    main()
