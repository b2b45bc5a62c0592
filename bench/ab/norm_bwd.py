"""norm_bwd.py: a layernorm's and an RMSNorm's backward in one pass (issue 67: a row kernel with sums
over the rows, RowPlan.outer), against torch.compile of the same formula, torch's own backward kernels
(eager aten.native_layer_norm_backward; for RMSNorm, eager of the formula) and the copy rate.

On a GPU from the repository root: `python3 bench/ab/norm_bwd.py [ROUNDS [CASES [STAGES]]]`, ROUNDS
interleaved rounds (default 3), CASES a comma list of ln4k, ln8k, rms4k, rms8k (default all), STAGES a
comma list of `schedule: {stages: N}` variants timed beside the default (e.g. 2,6): x, dy [32768, 4096] or
[16384, 8192] bf16, the forward's mean and rstd [T, 1] f32, the weight [H] bf16; dx bf16, dgamma, dbeta
[1, H] f32 (RMSNorm: dw bf16).  Each output is poisoned with NaN and checked against the formula in f64 (relative
error below 1e-2 for dx, 1e-3 for the sums), launched twice more and compared bit for bit; then
do_bench's median with L2 flushed.  The copy moves the bytes the kernel must (x and dy read, dx
written) once as a read and a write.
"""
from abcommon import usage; usage(__doc__, 0)
import sys; sys.path.insert(0, "python")
import torch, wsfuse
from abcommon import bench

LN = open("examples/layernorm_backward.yaml").read()
RMS = open("tests/golden/rmsnorm_backward.yaml").read()


def ln_formula(x, dy, mean, rstd, w):
    xhat = (x.float() - mean) * rstd
    g = dy.float() * w.float()
    dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True) - g.mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xhat).sum(0), dy.float().sum(0)


def rms_formula(x, dy, rstd, w):
    xhat = x.float() * rstd
    g = dy.float() * w.float()
    dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xhat).sum(0).to(w.dtype)


def ln_aten(x, dy, mean, rstd, w):
    return torch.ops.aten.native_layer_norm_backward(dy, x, [x.shape[-1]], mean, rstd, w, w, [True, True, True])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    names = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else ["ln4k", "ln8k", "rms4k", "rms8k"]
    stages = [int(n) for n in sys.argv[3].split(",")] if len(sys.argv) > 3 else []
    bf = dict(device="cuda", dtype=torch.bfloat16)
    f32 = dict(device="cuda", dtype=torch.float32)
    for name in names:
        t, h = (32768, 4096) if name.endswith("4k") else (16384, 8192)
        x, dy, w = torch.randn(t, h, **bf), torch.randn(t, h, **bf), torch.randn(h, **bf)
        mean, rstd = x.float().mean(-1, keepdim=True), torch.rsqrt(x.float().var(-1, keepdim=True) + 1e-5)
        if name.startswith("ln"):
            spec, ins, fn, peer = LN, [x, dy, mean, rstd, w], ln_formula, ln_aten
            ys = [torch.full((t, h), float("nan"), **bf), torch.full((1, h), float("nan"), **f32),
                  torch.full((1, h), float("nan"), **f32)]
        else:
            spec, ins, fn, peer = RMS, [x, dy, rstd, w], rms_formula, rms_formula
            ys = [torch.full((t, h), float("nan"), **bf), torch.full((1, h), float("nan"), **bf)]
        with wsfuse.Context(sizes={"T": t, "H": h}, cache="0") as ctx:
            k = ctx.compile_string(spec, name=name + ".yaml")
            k.launch(*ins, *ys)
            torch.cuda.synchronize()
            ref = fn(*[a.double() if a.dtype == torch.float32 else a for a in ins])
            for i, (y, r) in enumerate(zip(ys, ref)):
                r = r.double().reshape(y.shape)   # (the sums keep their dim: [1, H])
                err = ((y.double() - r).norm() / r.norm()).item()
                assert err < (1e-2 if i == 0 or y.dtype == torch.bfloat16 else 1e-3), (name, i, err)
            alts = {n: ctx.compile_string(spec + f"schedule: {{stages: {n}}}\n", name=f"{name}_s{n}.yaml")
                    for n in stages}
            first = [y.clone() for y in ys]
            for _ in range(2):
                k.launch(*ins, *ys)
                torch.cuda.synchronize()
                assert all(torch.equal(a, b) for a, b in zip(first, ys)), (name, "not the same bits")
            cf = torch.compile(fn)
            moved = 3 * t * h * 2
            src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            for rd in range(rounds):
                tw = bench(lambda: k.launch(*ins, *ys)) * 1000
                tc = bench(lambda: cf(*ins)) * 1000
                te = bench(lambda: peer(*ins)) * 1000
                tcp = bench(lambda: dst.copy_(src)) * 1000
                alt = "".join(f", stages {n} {bench(lambda: a.launch(*ins, *ys)) * 1000:.1f}" for n, a in alts.items())
                print(f"{name} r{rd}: wsfuse {tw:.1f} us, compile {tc:.1f} ({tc / tw:.3f}x), "
                      f"{'aten' if name.startswith('ln') else 'eager'} {te:.1f} ({te / tw:.3f}x), copy {tcp:.1f} "
                      f"({tcp / tw:.1%} of the copy rate), {moved / tw / 1e3:.0f} GB/s; the same bits over 3 launches"
                      f"{alt}", flush=True)


if __name__ == "__main__":
    main()
