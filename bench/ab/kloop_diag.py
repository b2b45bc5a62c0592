"""kloop_diag.py SHAPES [SCHEDULE] [ROUNDS]: where a GEMM kernel's time goes.

The kernel of each "MxNxK" of SHAPES (the default schedule, or SCHEDULE, the
body of a `schedule: {...}`) is timed in one process against cuBLAS and
against copies of it with a part taken out, each compiled from a hand-edited
CUDA through WSFUSE_OVERRIDE_DIR:

  no mma     the loads and the epilogue: the k loop's multiply-adds skipped
  no loads   the multiply-adds on whatever the stages hold, and the epilogue:
             the producer completes each stage's barrier without loading it
  no epilogue  the k loop alone; each consumer thread sums its accumulators
             and stores nothing, so that ptxas keeps the multiply-adds (a
             kernel whose accumulators are never read loses them)
  no stores  the epilogue without its TMA stores

Only the full kernel is checked (NaN-poisoned output, x w^T within 1e-2);
the others compute wrong results by design.  Times are CUDA-graph replays
(abcommon.graph_us), the variants interleaved over ROUNDS rounds (default
2), best of the rounds, in microseconds, with cuBLAS / variant.  A variant
whose pattern the kernel lacks (a ping-pong or stream-K kernel is written
differently) is left out with a line that says so.
"""
if __name__ == "__main__":
    from abcommon import usage
    usage(__doc__, 1)
import os, re, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, wsfuse
from abcommon import gemm_operands, gemm_spec, graph_us


def stripped(src):
    """{name: CUDA text or the reason it cannot be made} for the four variants of SRC."""
    lines = src.splitlines(keepends=True)
    out = {}
    mma = [i for i, l in enumerate(lines) if re.search(r"\bwsf_wgmma\(acc", l)]
    out["no mma"] = ("".join(l.replace("wsf_wgmma(", "if (0) wsf_wgmma(", 1) if i in mma else l
                             for i, l in enumerate(lines)) if mma else "no wsf_wgmma(acc... call")
    exp = [i for i, l in enumerate(lines) if "wsf_mbar_expect_tx(&full[" in l]
    if len(exp) == 1 and all("wsf_tma_load_" in lines[exp[0] + j] for j in (1, 2)):
        i = exp[0]
        full = re.search(r"&full\[.*\)\]", lines[i]).group(0)
        out["no loads"] = "".join(lines[:i] + [f"wsf_mbar_arrive({full});   // kloop_diag: no loads\n"]
                                  + lines[i + 3:])
    else:
        out["no loads"] = "not one producer issuing a stage's two loads"
    ep = [i for i, l in enumerate(lines) if "// the epilogue, a subtile at a time" in l]
    acc = re.search(r"float acc_y\[(\d+)\];", src)
    if len(ep) == 1 and acc and re.search(r"e < \d+LL", lines[ep[0]]):
        keep = ("{ float z = 0.f; for (int j = 0; j < %s; j++) z += acc_y[j]; "
                "if (z == 1.2345e30f) ((volatile char *)wsf_smem)[threadIdx.x] = 1; }   // kloop_diag: no epilogue\n"
                % acc.group(1))
        out["no epilogue"] = "".join(lines[:ep[0]] + [keep, re.sub(r"e < \d+LL", "e < 0LL", lines[ep[0]])]
                                     + lines[ep[0] + 1:])
    else:
        out["no epilogue"] = "not one epilogue loop over subtiles of acc_y"
    st = [i for i, l in enumerate(lines) if "wsf_tma_store_2d(&out" in l]
    out["no stores"] = ("".join(l.replace("wsf_tma_store_2d(", "if (0) wsf_tma_store_2d(", 1) if i in st else l
                                for i, l in enumerate(lines)) if st else "no TMA store of an output")
    return out


def main():
    shapes = sys.argv[1].split(",")
    body = sys.argv[2] if len(sys.argv) > 2 else ""
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    spec = gemm_spec(body and "schedule: {" + body + "}\n")
    tmp = tempfile.mkdtemp(prefix="kloop_diag.")
    for sh in shapes:
        m, n, k = map(int, sh.split("x"))
        sizes = {"M": m, "N": n, "K": k}
        x, w, y = gemm_operands(m, n, k)
        ctxs, ks = [], {}
        base = wsfuse.Context(sizes=sizes, cache="0")
        ctxs.append(base)
        ks["full"] = base.compile_string(spec, name="gemm.yaml")
        ref = x.float() @ w.float().t()
        y.fill_(float("nan")); ks["full"].launch(x, w, y); torch.cuda.synchronize()
        err = ((y.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (sh, "full kernel wrong", err)
        name = re.search(r"^fusion: (\w+)", spec, re.M).group(1)
        for v, text in stripped(ks["full"].text("cuda")).items():
            if "\n" not in text:   # a reason, not CUDA
                print(f"{sh} {v}: left out ({text})")
                continue
            d = os.path.join(tmp, sh, v.replace(" ", "_"))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, name + ".cu"), "w") as f:
                f.write(text)
            c = wsfuse.Context(sizes=sizes, cache="0", override_dir=d)
            ctxs.append(c)
            ks[v] = c.compile_string(spec, name="gemm.yaml")
        t = {}
        for r in range(rounds):
            order = list(ks.items()) if r % 2 == 0 else list(reversed(ks.items()))
            t.setdefault("cuBLAS", []).append(graph_us(lambda: torch.mm(x, w.t(), out=y)))
            for v, kk in order:
                t.setdefault(v, []).append(graph_us(lambda kk=kk: kk.launch(x, w, y)))
        cb = min(t["cuBLAS"])
        print(f"{sh}: cuBLAS {cb:.1f} us | " + " | ".join(
            f"{v} {min(u):.1f} ({cb / min(u):.3f})" for v, u in t.items() if v != "cuBLAS"), flush=True)
        for c in ctxs:
            c.close()


if __name__ == "__main__":
    main()
