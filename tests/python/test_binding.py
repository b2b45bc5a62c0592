#!/usr/bin/env python3
"""test_binding.py: the ctypes binding (python/wsfuse.py) without a GPU.

Compiles specs through the library the binding loads (WSFUSE_LIB, set by the
runner to the build under test), checks the argument queries, the output
shapes derived from input shapes, and that errors arrive as wsfuse.Error with
the library's message.  Prints TAP, one line per test, for tests/run_unit.sh.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import wsfuse  # noqa: E402

SPEC = """\
fusion: bind
sizes: {M: 64, N: 128}
inputs:
  x: {dtype: bf16, shape: [M, N]}
  b: {dtype: f32, shape: [N]}
ops:
  - {out: y, op: add, in: [x, b]}
  - {out: z, op: relu, in: [y]}
outputs:
  z: {dtype: bf16}
"""


def test_compile_and_query():
    k = wsfuse.Context(stop_after="cuda").compile_string(SPEC, name="bind.yaml")
    assert k.name == "bind"
    assert k.num_args == 3 and k.num_inputs == 2
    assert tuple(k.arg_names) == ("x", "b", "z"), k.arg_names
    assert "fusion bind family=pointwise" in k.text("fusion-ir")
    assert "circular_buffer" in k.text("kernel-ir")
    assert "extern \"C\" __global__" in k.text("cuda")
    assert k.cubin() is None


def test_grad_string_reads_back():
    """The backward of x * x + sin(x) is grad_y * (2 x + cos x): a spec the binding compiles again."""
    spec = ("fusion: sq\nsizes: {N: 64}\ninputs:\n  x: {dtype: f32, shape: [N]}\nops:\n"
            "  - {out: s, op: mul, in: [x, x]}\n  - {out: c, op: sin, in: [x]}\n"
            "  - {out: y, op: add, in: [s, c]}\noutputs:\n  y: {}\n")
    ctx = wsfuse.Context(stop_after="kernel-ir")
    g = ctx.grad_string(spec, name="sq.yaml")
    assert "grad_y" in g and "grad_x" in g and "cos" in g, g
    k = ctx.compile_string(g, name="sq_grad.yaml")
    assert set(k.arg_names) == {"x", "grad_y", "grad_x"}, k.arg_names
    assert k.arg_is_output[list(k.arg_names).index("grad_x")]
    try:
        ctx.grad_string("fusion: q\ninputs:\n  x: {dtype: f32, shape: [4, 8]}\nops:\n"
                        "  - {out: y, op: pow, in: [-2.0, x]}\noutputs:\n  y: {}\n", name="q.yaml")
    except wsfuse.Error as e:
        assert e.status == "WSF_ERR_UNSUPPORTED" and "q.yaml:5:5" in str(e), (e.status, str(e))
    else:
        raise AssertionError("no error for a gradient not derived yet")


def test_output_shapes_follow_inputs():
    k = wsfuse.Context(stop_after="kernel-ir").compile_string(SPEC, name="bind.yaml")
    assert k.output_shapes((7, 24), (24,)) == [(7, 24)]


def test_size_mismatch_is_an_error():
    k = wsfuse.Context(stop_after="kernel-ir").compile_string(SPEC, name="bind.yaml")
    try:
        k.output_shapes((7, 24), (25,))
    except wsfuse.Error as e:
        assert "size N is 24" in str(e), str(e)
    else:
        raise AssertionError("no error")


def test_bad_spec_error_carries_the_message():
    try:
        wsfuse.Context().compile_string(SPEC.replace("relu", "relux"), name="bad.yaml")
    except wsfuse.Error as e:
        assert e.status == "WSF_ERR_INPUT", e.status
        assert "bad.yaml:8:" in str(e) and "did you mean 'relu'" in str(e), str(e)
    else:
        raise AssertionError("no error")


def test_cubin_through_nvrtc():
    k = wsfuse.Context(cache="0").compile_string(SPEC, name="bind.yaml")
    assert k.cubin()[:4] == b"\x7fELF"


def raises(kind, fn, *words):
    """FN() raises KIND whose message holds every one of WORDS."""
    try:
        fn()
    except kind as e:
        assert all(w in str(e) for w in words), f"{type(e).__name__}: {e}"
    else:
        raise AssertionError(f"no {kind.__name__}")


class Index:
    """An integer that is not an int (numpy's are such): taken through __index__."""

    def __index__(self):
        return 96


def test_sizes_are_whole_int64():
    ctx = wsfuse.Context(stop_after="kernel-ir")
    for v in (2 ** 64 + 256, 2 ** 63, -(2 ** 63) - 1):   # ctypes would wrap them
        raises(ValueError, lambda: ctx.set_size("N", v), "size N", str(v), "out of range")
    for v in (1.9, 2.0, True, "64", None):   # int() would round 1.9 to 1
        raises(TypeError, lambda: ctx.set_size("N", v), "size N", "expected an integer", type(v).__name__)
    raises(TypeError, lambda: wsfuse.Context(sizes={"M": 1.5}), "size M")
    ctx.set_size("N", Index())
    assert ctx.compile_string(SPEC).output_shapes((7, 96), (96,)) == [(7, 96)]
    k = wsfuse.Context(sizes={"N": Index()}, stop_after="kernel-ir").compile_string(SPEC)
    assert k.stats["tiles"] > 0


def test_launch_ints_fit_their_c_types():
    # refused before the launch needs torch or a GPU
    k = wsfuse.Context(stop_after="kernel-ir").compile_string(SPEC)
    raises(ValueError, lambda: k.launch(epoch=2 ** 32), "epoch", "out of range")
    raises(ValueError, lambda: k.launch(epoch=-1), "epoch")
    raises(TypeError, lambda: k.launch(epoch=1.0), "epoch")
    raises(ValueError, lambda: k.launch(max_ctas=2 ** 31), "max_ctas")
    raises(TypeError, lambda: k.launch(max_ctas=True), "max_ctas")
    raises(ValueError, lambda: k.launch(stream=2 ** 64), "stream")
    raises(TypeError, lambda: k.launch(stream="0"), "stream")


def test_strings_with_nul_are_refused():
    # C would read each up to its NUL: another name, option or file
    ctx = wsfuse.Context(stop_after="kernel-ir")
    raises(ValueError, lambda: ctx.set_size("N\0x", 64), "size name", "NUL")
    raises(ValueError, lambda: ctx.set_option("cache\0", "0"), "option name", "NUL")
    raises(ValueError, lambda: ctx.set_option("stop-after", "cuda\0ptx"), "option stop-after", "NUL")
    raises(ValueError, lambda: wsfuse.Context(dump_dir=b"/tmp\0/x"), "option dump-dir", "NUL")
    raises(ValueError, lambda: ctx.compile_string(SPEC, name="bind.yaml\0x"), "spec name", "NUL")
    raises(ValueError, lambda: ctx.compile_file("/dev/null\0.yaml"), "spec path", "NUL")
    raises(ValueError, lambda: ctx.compile_string(SPEC).text("cuda\0"), "stage", "NUL")


def test_option_values():
    # bools are on/off ("1"/"0"), paths and ints as text; a float means nothing here
    import pathlib
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        k = wsfuse.Context(cache=True, cache_dir=pathlib.Path(d), stop_after="cuda").compile_string(SPEC)
        assert k.name == "bind"
        wsfuse.Context(cache=False, lineinfo=0)
    raises(TypeError, lambda: wsfuse.Context(cache=1.0), "option cache", "float")
    raises(TypeError, lambda: wsfuse.Context(dump_after=["all"]), "option dump-after")


def test_stats():
    k = wsfuse.Context(stop_after="kernel-ir").compile_string(SPEC)
    s = k.stats
    assert s["threads"] > 0 and s["smem_dynamic"] > 0 and s["tiles"] > 0 and s["cluster"] == 1, s
    assert s["registers"] == -1 and s["spill_stores"] == -1 and s["ctas_per_sm"] == -1, s   # no ptxas yet
    s = wsfuse.Context(stop_after="ptx", cache="0").compile_string(SPEC).stats   # NVRTC, no GPU
    assert s["registers"] > 0 and s["spill_stores"] == 0 and s["ctas_per_sm"] > 0, s
    k = wsfuse.Context(stop_after="fusion-ir").compile_string(SPEC)
    raises(wsfuse.Error, lambda: k.stats, "WSF_ERR_USAGE", "fusion IR")
    # the struct's last fields through ctypes: a KV-cache append's part stored as rows at the index's rows
    kv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "specs", "view_kv_append.yaml")
    s = wsfuse.Context(stop_after="kernel-ir").compile_file(kv).stats
    assert s["place_rows"] == 1 and s["place_elems"] == 0 and s["view_tiles"] == 0, s


def test_environment():
    short, full = wsfuse.environment(), wsfuse.environment(full=True)
    assert short.startswith(f"wsfuse {wsfuse.version()}\n"), short
    for what in ("nvrtc:", "driver:"):
        assert any(line.startswith(what) for line in short.splitlines()), short
    assert full.startswith(short.splitlines()[0]) and len(full) > len(short), full


TESTS = [v for n, v in sorted(globals().items()) if n.startswith("test_")]

if __name__ == "__main__":
    print(f"1..{len(TESTS)}")
    failed = 0
    for i, t in enumerate(TESTS, 1):
        try:
            t()
            print(f"ok {i} - {t.__name__}")
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
            failed += 1
            print(f"not ok {i} - {t.__name__}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    sys.exit(1 if failed else 0)
