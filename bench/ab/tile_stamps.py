"""tile_stamps.py SHAPES [SCHEDULE]: where a cooperative GEMM's CTAs spend their cycles, tile by tile.

The kernel of each "MxNxK" of SHAPES (the default schedule, or SCHEDULE, the
body of a `schedule: {...}`) is compiled again from a copy of its CUDA with
clock stamps in it (WSFUSE_OVERRIDE_DIR): consumer thread 0 writes clock64()
into a scratch area of shared memory past the kernel's own at

  the CTA's entry and the consumers' start (with %globaltimer too),
  the first stage's loads landed,
  each of its first 8 tiles: the tile's start, its k loop done (after
  wgmma.wait_group 0), its epilogue's subtiles issued,
  the end (every store landed; %globaltimer too),

and after the CTA's work stores the area by TMA over a box of the input x
(CTA b: the box at rows BM * (b % R), columns 64 * (b / R)), whose first
two rows the host reads back.  The output is not checked (x is overwritten);
run the kernel through kloop_diag.py or the sweep for that.  Prints, for
one launch alone and for the last of 20 back to back in a CUDA graph, the
median and max over the CTAs of each part in cycles, and the span from the
first CTA's entry to the last one's end in ns.  Only the default's
structure (cooperative warpgroups, a tile loop, one epilogue loop over
subtiles of acc_y); other kernels are refused with the pattern they lack.
A method of docs/perf.md (thirty-seventh and thirty-eighth sessions).
"""
if __name__ == "__main__":
    from abcommon import usage
    usage(__doc__, 1)
import os, re, statistics, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, wsfuse
from abcommon import gemm_operands, gemm_spec

TILES = 8                     # tiles a CTA stamped, at most
SLOTS = 32                    # 8-byte stamps: two 128-byte rows of x's box
MAGIC = 0x5157AB5
SMEM_MAX = 227 * 1024         # sm_90's dynamic shared memory a CTA
GT = 'asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(%s));'


def one(pattern, src, what):
    """The one match of PATTERN in SRC, or SystemExit naming WHAT."""
    m = list(re.finditer(pattern, src, re.M))
    if len(m) != 1:
        raise SystemExit(f"tile_stamps: the kernel has {len(m)} {what}, not one; not the default's structure")
    return m[0]


def instrument(src):
    """SRC with the stamps in, and the shared memory it then takes."""
    bars = list(re.finditer(r"\(wsf_smem \+ (\d+)\);   // (\d+) mbarriers", src))
    end = max(int(b.group(1)) + 8 * int(b.group(2)) for b in bars)
    if end + 8 * SLOTS > SMEM_MAX:
        raise SystemExit(f"tile_stamps: {end} bytes of shared memory leave no room for the stamps")
    x = re.search(r"const __grid_constant__ WsfTensorMap (in_\w+),", src).group(1)   # A, the first input
    stage = one(r"wsf_bf16 \*const (stage_\w+) = ", src, "staging buffers").group(1)
    last = bars[-1].end()
    src = src[:last] + (f"\n    long long *const wsf_ts = (long long *)(wsf_smem + {end});   // tile_stamps"
                        f"\n    long long wsf_c0 = clock64(), wsf_g0; {GT % 'wsf_g0'}") + src[last:]
    m = one(r'^(\s*)asm volatile\("setmaxnreg\.inc[^\n]*\n', src, "consumer setmaxnreg")
    src = src[:m.end()] + (f"{m.group(1)}if (threadIdx.x == 0) {{ long long g; {GT % 'g'} wsf_ts[0] = clock64(); "
                           f"wsf_ts[27] = wsf_c0; wsf_ts[28] = wsf_g0; wsf_ts[29] = g; }}\n") + src[m.end():]
    m = one(r"^(\s*)for \(long long (\w+) = 0LL; \w+ < my_tiles; \w+\+\+\) \{   // consumers: compute every tile\n",
            src, "consumer tile loops")
    i = m.group(2)
    k = one(r"^(\s*)for \(long long (\w+) = 0LL; \w+ < ktiles; \w+\+\+\) \{   // the k-steps of this tile\n"
            r"(\s*wsf_mbar_wait\(&full[^\n]*\n)", src[m.end():], "consumer k loops")
    at = m.end() + k.start()
    src = (src[:at] + f"{k.group(1)}if (threadIdx.x == 0 && {i} < {TILES}) wsf_ts[2 + 3 * {i}] = clock64();\n"
           + src[at:at + k.end() - k.start()]
           + f"{k.group(1)}    if (threadIdx.x == 0 && {i} == 0 && {k.group(2)} == 0) wsf_ts[1] = clock64();\n"
           + src[at + k.end() - k.start():])
    w = one(r"^(\s*)wsf_mma_wait<0>\(\);   // the mma results are in registers\n", src, "accumulator waits")
    src = src[:w.end()] + f"{w.group(1)}if (threadIdx.x == 0 && {i} < {TILES}) wsf_ts[3 + 3 * {i}] = clock64();\n" \
        + src[w.end():]
    # the epilogue loop ends where the tile loop's body does: the line before the tile loop's closing brace
    ep = one(r"^(\s*)for \(long long e = 0LL; e < \d+LL; e\+\+\) \{   // the epilogue, a subtile at a time\n",
             src, "epilogue loops")
    close = src.index("\n" + ep.group(1) + "}\n", ep.end()) + len(ep.group(1)) + 3
    src = src[:close] + f"{ep.group(1)}if (threadIdx.x == 0 && {i} < {TILES}) wsf_ts[4 + 3 * {i}] = clock64();\n" \
        + src[close:]
    f = one(r"^(\s*)wsf_bulk_wait<0>\(\);   // every store has landed\n", src, "final store waits")
    ind = f.group(1)
    # row 1 of the box is 128-byte swizzled: its 16-byte chunk j lies at j ^ 1
    src = src[:f.end()] + "".join(ind + l + "\n" for l in [
        f"{{ long long g; {GT % 'g'} wsf_ts[26] = clock64(); wsf_ts[30] = g; }}",
        f"wsf_ts[31] = {MAGIC}LL | ((long long)blockIdx.x << 32);",
        f"long long *dst = (long long *)({stage});",
        "for (int q = 0; q < 16; q++) dst[q] = wsf_ts[q];",
        "for (int q = 16; q < 32; q++) dst[16 + (((q - 16) / 2) ^ 1) * 2 + q % 2] = wsf_ts[q];",
        "wsf_fence_proxy_async();",
        "const int wsf_r = (int)(rows / 128);",
        f"wsf_tma_store_2d(&{x}, 64LL * (blockIdx.x / wsf_r), 128LL * (blockIdx.x % wsf_r), {stage});",
        "wsf_bulk_commit();",
        "wsf_bulk_wait<0>();"]) + src[f.end():]
    return f"// wsfuse-override: smem_bytes = {end + 8 * SLOTS}\n" + src


def read(x, ctas, tiles):
    """Each CTA's stamps: [32 values, its tile count]; those whose magic word is not there are left out."""
    xi, r = x.view(torch.int64), x.shape[0] // 128
    out = []
    for b in range(ctas):
        row, col = 128 * (b % r), 16 * (b // r)
        v = xi[row, col:col + 16].tolist() + xi[row + 1, col:col + 16].tolist()
        if (v[31] & 0xffffffff) == MAGIC and v[31] >> 32 == b:
            out.append(v + [len(range(b, tiles, ctas))])
    return out


def report(tag, rows):
    def med(f):
        vals = [y for y in (f(v) for v in rows) if y is not None]
        return f"{statistics.median(vals):.0f}/{max(vals):.0f}" if vals else "-"
    n = min(max(v[32] for v in rows), TILES)
    parts = [f"{tag}: {len(rows)} CTAs, cycles median/max", f"entry->start {med(lambda v: v[0] - v[27])}",
             f"first stage {med(lambda v: v[1] - v[0])}"]
    for t in range(n):
        live = lambda v, t=t: t < v[32]
        parts.append(f"tile {t}: k loop {med(lambda v: v[3 + 3 * t] - v[2 + 3 * t] if live(v) else None)} "
                     f"epilogue {med(lambda v: v[4 + 3 * t] - v[3 + 3 * t] if live(v) else None)}"
                     + (f" gap {med(lambda v: v[2 + 3 * t] - v[1 + 3 * t] if live(v) else None)}" if t else ""))
    parts.append(f"drain {med(lambda v: v[26] - v[1 + 3 * v[32]] if v[32] <= TILES else None)}")
    parts.append(f"CTA {med(lambda v: v[26] - v[27])}")
    g0 = min(v[28] for v in rows)
    parts.append(f"span {max(v[30] for v in rows) - g0} ns (entries within {max(v[28] for v in rows) - g0} ns)")
    print(" | ".join(parts), flush=True)


def main():
    shapes = sys.argv[1].split(",")
    body = sys.argv[2] if len(sys.argv) > 2 else ""
    spec = gemm_spec(body and "schedule: {" + body + "}\n")
    tmp = tempfile.mkdtemp(prefix="tile_stamps.")
    for sh in shapes:
        m, n, k = map(int, sh.split("x"))
        sizes = {"M": m, "N": n, "K": k}
        x, w, y = gemm_operands(m, n, k)
        plain = wsfuse.Context(sizes=sizes, cache="0").compile_string(spec, name="gemm.yaml")
        src = plain.text("cuda")
        tile = [int(v) for v in re.search(r"// this thread's part of the (\d+) x (\d+) f32", src).groups()]
        ctas = torch.cuda.get_device_properties(0).multi_processor_count
        tiles = -(-m // tile[0]) * -(-n // tile[1])
        if tile[0] != 128 or (m // 128) * (k // 64) < ctas:
            raise SystemExit(f"tile_stamps: a tile of {tile[0]} rows, or x of {m} x {k} with fewer 128 x 64 boxes "
                             f"than the {ctas} CTAs")
        d = os.path.join(tmp, sh)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "gemm.cu"), "w") as fp:
            fp.write(instrument(src))
        kk = wsfuse.Context(sizes=sizes, cache="0", override_dir=d).compile_string(spec, name="gemm.yaml")
        print(f"{sh}: tile {tile[0]} x {tile[1]}, {tiles} tiles on {ctas} CTAs; a k-step at the tensor cores' "
              f"peak {tile[0] * tile[1] * 64 // 2048} cycles", flush=True)
        for _ in range(5):
            kk.launch(x, w, y)
        torch.cuda.synchronize()
        kk.launch(x, w, y)
        torch.cuda.synchronize()
        report("alone", read(x, ctas, tiles))
        g, s = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3):
                kk.launch(x, w, y)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(20):
                kk.launch(x, w, y)
        g.replay()
        torch.cuda.synchronize()
        report("back to back", read(x, ctas, tiles))


if __name__ == "__main__":
    main()
