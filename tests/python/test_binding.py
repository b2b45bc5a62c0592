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
