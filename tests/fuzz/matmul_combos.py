#!/usr/bin/env python3
"""matmul_combos.py: random matmul specs, to hold the compiler to SPEC.md's promises over the hints' combinations.

Each spec draws operand layouts (transposed A or B, batched A), one matmul or two sharing A (SwiGLU),
or three sharing A (QKV), or two independent ones, an epilogue of 0 to 3 steps (a bias row, a column scale,
a residual, which may arrive while the kernel runs, an activation, a scalar), output
dtypes (accumulate or not, a second output), schedule hints (consumers, tile, stages, cluster, split_k,
stream_k, swap_ab, persistent, signal, store) and sizes, ragged ones among them.

    python3 tests/fuzz/matmul_combos.py gen SEED N DIR [CAP]   write N specs to DIR/cNNNN.yaml; with CAP,
                                                               K halves until M N K <= CAP (for run --check)
    python3 tests/fuzz/matmul_combos.py compile DIR WSFUSE [EMIT]

compile runs `WSFUSE compile --emit=EMIT` (default cuda) on each and fails a spec whose exit status is
not 0, 1 (bad input) or 6 (not built yet), that says "internal", that a sanitizer reports on, or that
fails without a message; it prints FAIL lines, the exit statuses' counts, and "N passed, N failed".
tests/run_combos.sh runs it in `make test`; tests/gpu/combos.sh checks the accepted ones on a GPU (it
found a staging copy rewritten under its store, and ping-pong on one stage hanging).
"""
import os, random, subprocess, sys

CAP = 0
ACTS = ["relu", "silu", "sigmoid", "tanh", "gelu", "gelu_tanh"]


def gen(rnd, more, name):
    """A spec's text.  RND draws what the first version drew, in its order (a seed gives the specs it
    gave); MORE, a stream of its own, what came later: three matmuls sharing A (QKV) or two independent
    ones in place of one, and inputs that arrive while the kernel runs (wait: per_tile)."""
    lines, inputs, ops = [], [], []
    batched = rnd.random() < 0.12
    glu = rnd.random() < 0.15
    form = more.random()
    form = "" if glu else "qkv" if form < 0.07 else "two" if form < 0.14 else ""
    ta = rnd.random() < 0.12
    tb = rnd.random() < 0.8
    dt = rnd.choice(["bf16"] * 4 + ["f16"])
    bdim = ["BT"] if batched else []
    inputs.append(("x", dt, bdim + (["K", "M"] if ta else ["M", "K"])))
    wshape = ["N", "K"] if tb else ["K", "N"]
    inputs.append(("w", dt, wshape))
    attrs = []
    if ta:
        attrs.append("transpose_a: true")
    if tb:
        attrs.append("transpose_b: true")
    at = (", " + ", ".join(attrs)) if attrs else ""
    ops.append(f"{{out: y, op: matmul, in: [x, w]{at}}}")
    cur, extra = "y", []
    if form == "qkv":   # two more matmuls of x, each its own output
        for j in (2, 3):
            inputs.append((f"w{j}", dt, wshape))
            ops.append(f"{{out: y{j}, op: matmul, in: [x, w{j}]{at}}}")
            extra.append(f"y{j}")
    elif form == "two":   # a matmul of other operands, after the first in each tile
        inputs.append(("x2", dt, bdim + (["K", "M"] if ta else ["M", "K"])))
        inputs.append(("w2", dt, wshape))
        ops.append(f"{{out: z, op: matmul, in: [x2, w2]{at}}}")
        extra.append("z")
    if glu:
        inputs.append(("w2", dt, wshape))
        ops.append(f"{{out: y2, op: matmul, in: [x, w2]{at}}}")
        ops.append("{out: sg, op: silu, in: [y]}")
        ops.append("{out: h, op: mul, in: [sg, y2]}")
        cur = "h"
    n = 0
    for _ in range(rnd.choice([0, 0, 1, 1, 2, 3])):
        kind = rnd.choice(["bias", "col", "res", "act", "scalar"])
        n += 1
        o = f"e{n}"
        if kind == "bias":
            inputs.append((f"b{n}", rnd.choice(["bf16", "f32", "f16"]), ["N"]))
            ops.append(f"{{out: {o}, op: add, in: [{cur}, b{n}]}}")
        elif kind == "col":
            inputs.append((f"c{n}", rnd.choice(["bf16", "f32"]), bdim + ["M", 1]))
            ops.append(f"{{out: {o}, op: mul, in: [{cur}, c{n}]}}")
        elif kind == "res":
            inputs.append((f"r{n}", rnd.choice(["bf16", "bf16", "f16", "f32"]), bdim + ["M", "N"],
                           ", wait: per_tile" if more.random() < 0.2 else ""))
            ops.append(f"{{out: {o}, op: add, in: [{cur}, r{n}]}}")
        elif kind == "scalar":
            ops.append(f"{{out: {o}, op: mul, in: [{cur}, 0.5]}}")
        else:
            a = rnd.choice(ACTS)
            if a == "gelu_tanh":
                ops.append(f"{{out: {o}, op: gelu, in: [{cur}], approximate: tanh}}")
            else:
                ops.append(f"{{out: {o}, op: {a}, in: [{cur}]}}")
        cur = o
    outs = [(cur, rnd.choice(["bf16", "bf16", "f16", "f32"]), rnd.random() < 0.06)]
    if rnd.random() < 0.1 and cur != "y" and not glu:
        outs.append(("y", rnd.choice(["bf16", "f32"]), False))
    outs += [(e, more.choice(["bf16", "f16", "f32"]), False) for e in extra]
    sched = []
    r = rnd.random
    if r() < 0.3:
        sched.append("consumers: " + rnd.choice(["cooperative", "pingpong"]))
    if r() < 0.3:
        tm = rnd.choice([64, 128, 128, 256])
        tn = rnd.choice([16, 32, 48, 64, 80, 96, 128, 160, 192, 208, 256])
        sched.append(f"tile: [{tm}, {tn}, 64]")
    if r() < 0.15:
        sched.append(f"stages: {rnd.randint(1, 8)}")
    if r() < 0.2:
        sched.append(f"cluster: [{rnd.choice([1, 2, 2, 4])}, {rnd.choice([1, 1, 2, 4])}]")
    if r() < 0.12:
        sched.append(f"split_k: {rnd.randint(2, 5)}")
    if r() < 0.12:
        sched.append("stream_k: " + rnd.choice(["true", "false"]))
    if r() < 0.12:
        sched.append("swap_ab: " + rnd.choice(["true", "false"]))
    if r() < 0.06:
        sched.append("persistent: false")
    if r() < 0.08:
        sched.append("signal: per_tile")
    if r() < 0.05:
        sched.append("store: " + rnd.choice(["tma", "vector"]))
    sizes = {
        "M": rnd.choice([16, 64, 100, 128, 200, 256, 384, 1000, 1024, 2000, 2048, 4096]),
        "N": rnd.choice([16, 64, 96, 128, 200, 256, 264, 520, 1000, 1024, 1280, 2048, 4096]),
        "K": rnd.choice([64, 72, 128, 136, 264, 512, 1000, 2048, 4040, 8192]),
    }
    if batched:
        sizes["BT"] = rnd.choice([1, 2, 3])
    while CAP and sizes["M"] * sizes["N"] * sizes["K"] > CAP and sizes["K"] > 64:
        sizes["K"] = max(64, sizes["K"] // 2 // 8 * 8)
    t = [f"fusion: {name}", "sizes: {" + ", ".join(f"{k}: {v}" for k, v in sizes.items()) + "}", "inputs:"]
    for nm, d, sh, *attr in inputs:
        t.append(f"  {nm}: {{dtype: {d}, shape: [{', '.join(map(str, sh))}]{''.join(attr)}}}")
    t.append("ops:")
    t += [f"  - {o}" for o in ops]
    t.append("outputs:")
    for nm, d, acc in outs:
        t.append(f"  {nm}: {{dtype: {d}{', accumulate: true' if acc else ''}}}")
    if sched:
        t.append("schedule: {" + ", ".join(sched) + "}")
    return "\n".join(t) + "\n"


def main():
    if sys.argv[1] == "gen":
        global CAP
        seed, count, d = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        CAP = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        os.makedirs(d, exist_ok=True)
        rnd, more = random.Random(seed), random.Random(f"more {seed}")
        for i in range(count):
            with open(os.path.join(d, f"c{i:04d}.yaml"), "w") as fp:
                fp.write(gen(rnd, more, f"c{i:04d}"))
        return
    d, exe = sys.argv[2], sys.argv[3]
    emit = sys.argv[4] if len(sys.argv) > 4 else "cuda"
    stat, failed = {}, 0
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        p = subprocess.run([exe, "compile", os.path.join(d, f), "--no-cache", f"--emit={emit}", "-o", "/dev/null"],
                           capture_output=True, text=True)
        stat.setdefault(p.returncode, []).append(f)
        err = p.stderr
        bad = p.returncode not in (0, 1, 6) or "internal" in err.lower() or "AddressSanitizer" in err \
            or "runtime error" in err or (p.returncode != 0 and not err.strip())
        if bad:
            print(f"FAIL {f}: exit {p.returncode}\n  " + "\n  ".join(err.strip().splitlines()[-6:]))
            failed += 1
    print("exit statuses: " + ", ".join(f"{rc}: {len(fs)}" for rc, fs in sorted(stat.items())))
    n = sum(len(fs) for fs in stat.values())
    print(f"{n - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
