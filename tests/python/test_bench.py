#!/usr/bin/env python3
"""test_bench.py: bench/bench.py's report of earlier results, without a GPU.

Writes a results file in the form --json writes (a pointwise case, a case whose
check failed, a case that counts FLOPs from before families, matmuls with
their peers, one peer's result wrong), then runs bench.py --from-json on it:
the tables, --plot (a PNG; skipped without matplotlib), --cases and --family
as filters, and the errors for a missing matplotlib and for a file that holds
no results.  --list and its --family filter run without torch too, and so do
the provenance --json records and every bench/ab script's --help.  On a GPU
with torch, a --quick run's --json file carries that provenance.
Prints TAP, one line per test, for tests/run_unit.sh.
"""
import glob
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BENCH = os.path.join(ROOT, "bench", "bench.py")
PROVENANCE = ("commit", "dirty", "command", "date", "wsfuse", "library", "nvrtc", "driver", "power_limit",
              "python", "quack", "cutlass_dsl")
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None

RESULTS = {
    "device": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0",
    "timer": "CUDA events, median", "quick": False, "date": "2026-11-23T10:00:00",
    "results": [
        {"case": "relu_chain_bf16", "sizes": {"N": 268435456}, "bytes": 2147483648, "check": "ok",
         "wsfuse_compile_s": 0.4, "wsfuse_ms": 0.49, "eager_ms": 1.52, "compile_ms": 0.489, "copy_ms": 0.506,
         "wsfuse_gbps": 4382.6, "copy_gbps": 4244.0, "speedup_vs_compile": 0.998, "frac_of_copy": 1.03},
        {"case": "softmax_32768x4096", "sizes": {"M": 32768, "N": 4096}, "bytes": 536870912,
         "check": "AssertionError: output 'y': mismatch", "wsfuse_ms": None, "eager_ms": 0.4,
         "compile_ms": 0.311, "copy_ms": 0.13, "wsfuse_gbps": None, "copy_gbps": 4129.8,
         "speedup_vs_compile": None, "frac_of_copy": None},
        {"case": "gemm_8192", "sizes": {"M": 8192, "N": 8192, "K": 8192}, "bytes": 402653184,
         "flops": 2 * 8192 ** 3, "check": "ok", "wsfuse_ms": 1.6, "eager_ms": 1.635, "compile_ms": 1.64,
         "copy_ms": 0.095, "wsfuse_gbps": 251.7, "copy_gbps": 4238.5, "speedup_vs_compile": 1.025,
         "frac_of_copy": 0.06},
        {"case": "gemm_4096x4096x4096", "family": "matmul", "sizes": {"M": 4096, "N": 4096, "K": 4096},
         "bytes": 100663296, "flops": 2 * 4096 ** 3, "check": "ok", "wsfuse_ms": 0.2, "eager_ms": 0.194,
         "compile_ms": 0.195, "quack_ms": 0.208, "copy_ms": 0.025, "wsfuse_gbps": 503.3, "copy_gbps": 4026.5,
         "speedup_vs_compile": 0.975, "frac_of_copy": 0.125, "wsfuse_tflops": 687.2,
         "speedup_vs_eager": 0.97, "speedup_vs_quack": 1.04},
        {"case": "gemm_bias_gelu_8192x8192x8192", "family": "matmul", "sizes": {"M": 8192, "N": 8192, "K": 8192},
         "bytes": 402669568, "flops": 2 * 8192 ** 3, "check": "ok", "wsfuse_ms": 1.6, "eager_ms": 1.9,
         "compile_ms": 1.697, "cublaslt_ms": 1.612, "quack_ms": None, "copy_ms": 0.095, "wsfuse_gbps": 251.7,
         "copy_gbps": 4238.5, "speedup_vs_compile": 1.061, "frac_of_copy": 0.06, "wsfuse_tflops": 687.2,
         "peer_checks": ["quack: AssertionError: quack: relative error 3.1e-01 (norms), more than 1.6e-02"]},
    ],
}


def bench(*args, pre=""):
    """Runs bench.py ARGS (PRE: Python run first in the same interpreter); (exit status, output)."""
    code = f"{pre}\nimport runpy, sys\nsys.argv = {[BENCH, *args]!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def results_file(d, data=None):
    path = os.path.join(d, "results.json")
    with open(path, "w") as f:
        json.dump(RESULTS if data is None else data, f)
    return path


def test_table_from_json():
    with tempfile.TemporaryDirectory() as d:
        rc, out = bench("--from-json", results_file(d))
        assert rc == 0, out
        assert "device=NVIDIA H200" in out and "relu_chain_bf16" in out and "gemm_8192" in out, out
        assert "AssertionError: output 'y'" in out, out
        rc, out = bench("--from-json", results_file(d), "--cases", "gemm_8192")
        assert rc == 0 and "gemm_8192" in out and "relu_chain_bf16" not in out, out


def test_matmul_table_from_json():
    with tempfile.TemporaryDirectory() as d:
        rc, out = bench("--from-json", results_file(d), "--family", "matmul")
        assert rc == 0, out
        lines = out.splitlines()
        head = next(line for line in lines if line.startswith("case ") and "TFLOP/s" in line)
        for col in ("wsfuse ms", "eager ms", "eager/wsfuse", "compile/wsfuse", "cuBLASLt ms", "cuBLASLt/wsfuse",
                    "quack ms", "quack/wsfuse", "check"):
            assert col in head, head
        mm = next(line for line in lines if line.startswith("gemm_4096x4096x4096 ")).split()
        assert mm[1:4] == ["0.14", "0.2000", "687"] and "1.040x" in mm and "0.970x" in mm, mm
        gelu = next(line for line in lines if line.startswith("gemm_bias_gelu_8192x8192x8192 ")).split()
        assert "1.008x" in gelu and "1.061x" in gelu, gelu   # cuBLASLt 1.612 / 1.6, compile 1.697 / 1.6
        assert "gemm_bias_gelu_8192x8192x8192: peer quack: AssertionError" in out, out
        # rows from before families: by their case (relu_chain_bf16, softmax_32768x4096), or FLOPs (gemm_8192)
        assert "relu_chain_bf16" not in out and "softmax_32768x4096" not in out and "gemm_8192 " in out, out
        rc, out = bench("--from-json", results_file(d), "--family", "matmul,gpu")
        assert rc == 2 and "unknown family gpu; known: pointwise, reduction, matmul" in out, (rc, out)


def test_bars_table_from_json():
    """The bars table: a bar met, tied (within 1% below), short, timed once, and not timed."""
    row = dict(RESULTS["results"][3], bars={"eager": 1.03, "quack": 1.0, "compile": 1.1, "cublaslt": 1.0},
               rounds=4, rounds_peers={"eager": [1.0250, 1.01, 1.04], "quack": [1.0, 0.99, 1.01],
                                       "compile": [0.9, 0.88, 0.95]})
    lt = dict(RESULTS["results"][4], bars={"cublaslt": 1.0, "quack": 1.0})   # no rounds; quack failed its check
    with tempfile.TemporaryDirectory() as d:
        rc, out = bench("--from-json", results_file(d, dict(RESULTS, results=[row, lt])))
        assert rc == 0, out
        lines = [line.split() for line in out.splitlines()]
        head = next(i for i, line in enumerate(lines) if line[:2] == ["case", "peer"])
        bars = lines[head + 2:head + 8]
        assert bars[0][:4] == ["gemm_4096x4096x4096", "eager", "1.03x", "1.025x"] and bars[0][-1] == "tie", bars
        assert bars[1][1:4] == ["quack", "1.00x", "1.000x"] and bars[1][-1] == "met", bars
        assert bars[2][1] == "compile" and bars[2][-3:] == ["short", "by", "18.2%"], bars   # 0.9 / 1.1
        assert bars[3][1:] == ["cuBLASLt", "1.00x", "-", "not", "timed"], bars   # no cublaslt_ms in that row
        assert bars[4][:5] == ["gemm_bias_gelu_8192x8192x8192", "cuBLASLt", "1.00x", "1.008x", "(one"], bars
        assert bars[4][-1] == "met" and bars[5][1:] == ["quack", "1.00x", "-", "not", "timed"], bars
        assert "rounds: compile/wsfuse" in out and "0.9000x (0.8800-0.9500)" not in out, out


def test_list_without_torch():
    rc, out = bench("--list", "--family", "matmul", pre="import sys; sys.modules['torch'] = None")
    assert rc == 0, out
    names = [line.split()[0] for line in out.splitlines()[2:]]
    assert names == ["gemm_8192x8192x8192", "gemm_4096x4096x4096", "gemm_8192x14336x4096",
                     "gemm_16384x1024x8192", "gemm_2048x2048x2048", "gemm_16x8192x4096", "gemm_64x8192x4096",
                     "gemm_bias_gelu_8192x8192x8192", "gemm_bias_gelu_8192x14336x4096",
                     "swiglu_8192x14336x4096"], out
    assert "M=8192 N=14336 K=4096" in out, out
    rc, out = bench("--list", "--quick", "--cases", "gemm_4096x4096x4096,relu_chain_bf16", "--family", "matmul")
    assert rc == 0 and "M=256 N=256 K=512" in out and "relu_chain_bf16" not in out, out


def test_plot_from_json():
    if not HAVE_MPL:
        return "no matplotlib"
    with tempfile.TemporaryDirectory() as d:
        png = os.path.join(d, "out.png")
        rc, out = bench("--from-json", results_file(d), "--plot", png)
        assert rc == 0, out
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        assert f"plot: {png}" in out, out
        # no FLOPs anywhere and an unknown device: one panel, the peak named as unknown
        data = dict(RESULTS, device="some GPU", results=RESULTS["results"][:2])
        rc, out = bench("--from-json", results_file(d, data), "--plot", png)
        assert rc == 0, out
        rc, out = bench("--from-json", results_file(d), "--plot", png, "--tc-peak", "800")
        assert rc == 0, out


def test_plot_without_matplotlib_is_a_clear_error():
    with tempfile.TemporaryDirectory() as d:
        png = os.path.join(d, "out.png")
        rc, out = bench("--from-json", results_file(d), "--plot", png,
                        pre="import sys; sys.modules['matplotlib'] = None")
        assert rc == 2 and "--plot needs matplotlib (pip install matplotlib)" in out, (rc, out)
        assert not os.path.exists(png)


def test_from_json_of_something_else():
    with tempfile.TemporaryDirectory() as d:
        rc, out = bench("--from-json", results_file(d, {"device": "x"}))
        assert rc == 1 and "not results of --json" in out, (rc, out)
        rc, out = bench("--from-json", results_file(d), "--rounds", "3")
        assert rc == 2 and "--from-json runs nothing" in out, (rc, out)
        rc, out = bench("--from-json", results_file(d), "--list")
        assert rc == 2 and "--from-json runs nothing" in out, (rc, out)


def test_provenance_without_torch():
    sys.modules["torch"] = None   # provenance() must not need it
    try:
        p = runpy.run_path(BENCH)["provenance"]([BENCH, "--cases", "gemm_8192x8192x8192", "--json", "a b.json"])
    finally:
        del sys.modules["torch"]
    assert tuple(p) == PROVENANCE, p
    assert p["command"] == "bench/bench.py --cases gemm_8192x8192x8192 --json 'a b.json'", p
    assert p["wsfuse"] == runpy.run_path(BENCH)["wsfuse"].version() and p["nvrtc"] and p["driver"], p
    assert p["date"].endswith("+00:00"), p
    if os.path.exists(os.path.join(ROOT, ".git")):
        assert len(p["commit"]) == 40 and isinstance(p["dirty"], bool), p


def test_json_records_provenance_on_a_gpu():
    try:
        import torch
    except ImportError:
        return "no torch"
    if not torch.cuda.is_available():
        return "no GPU"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        rc, text = bench("--quick", "--cases", "relu_chain_bf16", "--json", out)
        assert rc == 0, text
        with open(out) as f:
            data = json.load(f)
        for key in PROVENANCE + ("device", "torch", "triton", "cuda", "timer"):
            assert key in data, (key, sorted(data))
        assert data["device"] and data["torch"] and "--quick" in data["command"], data


def test_ab_scripts_help_without_torch():
    # torch, triton and quack whose import fails: --help must answer before any of them is imported
    scripts = sorted(glob.glob(os.path.join(ROOT, "bench", "ab", "*.py")))
    assert len(scripts) > 10, scripts
    with tempfile.TemporaryDirectory() as d:
        for m in ("torch", "triton", "quack"):
            os.mkdir(os.path.join(d, m))
            with open(os.path.join(d, m, "__init__.py"), "w") as f:
                f.write(f"raise ImportError('{m} is not installed here')\n")
        env = dict(os.environ, PYTHONPATH=d)
        for path in scripts:
            if os.path.basename(path) == "abcommon.py":
                continue
            with open(path) as f:
                first = f.read().split('"""')[1].splitlines()[0]
            p = subprocess.run([sys.executable, path, "--help"], capture_output=True, text=True, timeout=60,
                               cwd=ROOT, env=env)
            assert p.returncode == 0 and first in p.stdout, (path, p.returncode, p.stdout[-300:], p.stderr[-500:])
        p = subprocess.run(["bash", os.path.join(ROOT, "bench", "ab", "tp2.sh"), "--help"], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and p.stdout.startswith("tp2.sh BUILD [OUTDIR]"), (p.returncode, p.stdout)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ab", "build_ab.py"), "tag"],
                           capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
        assert p.returncode == 2 and "expected 2 arguments, saw 1" in p.stderr, (p.returncode, p.stderr[-300:])

TESTS = [v for n, v in sorted(globals().items()) if n.startswith("test_")]

if __name__ == "__main__":
    print(f"1..{len(TESTS)}")
    failed = 0
    for i, t in enumerate(TESTS, 1):
        try:
            skipped = t()
            print(f"ok {i} # SKIP {t.__name__}: {skipped}" if skipped else f"ok {i} - {t.__name__}")
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
            failed += 1
            print(f"not ok {i} - {t.__name__}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    sys.exit(1 if failed else 0)
