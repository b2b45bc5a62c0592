"""wsfuse_build: the PEP 517 build backend named by pyproject.toml.

`pip install .` and `pip wheel .` call build_wheel.  It builds libwsfuse.so
and the wsfuse command with the Makefile (in build/, or the folder the config
setting build-dir names: `pip wheel . -C build-dir=build-x`), then writes a
wheel that holds the binding (python/*.py), the library as
wsfuse.libs/libwsfuse.so.0, where wsfuse.load() looks first, and the command
as a script (pip puts it in the environment's bin/).  Both are stripped of
what linking does not need (strip --strip-unneeded; -C strip=0 keeps their
symbols and debug information).  They link libyaml statically and dlopen
NVRTC and the CUDA driver at run time, so the wheel needs nothing installed
but glibc; it holds machine code, so its tag names this platform
(py3-none-linux_x86_64: any Python 3, since the binding is ctypes).  The
extra wsfuse[torch] adds torch, which launches and torch_op need.

build_editable installs a .pth that puts python/ on sys.path, so that
`import wsfuse` runs the checkout's binding with its build/libwsfuse.so,
and a wsfuse script that runs the checkout's build/wsfuse.
build_sdist archives the files git tracks.  The version is the one in
include/wsfuse.h.  Standard library only, so that `requires = []` builds
offline, with or without build isolation.
"""
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "wsfuse"
SUMMARY = "A fusion compiler for Hopper GPUs: YAML fusion specs to CUDA kernels, built by NVRTC at run time"
REQUIRES_PYTHON = ">=3.8"
EXTRAS = {"torch": ["torch>=2.4"]}   # launches, Kernel.__call__ and torch_op (torch.library.custom_op)


def _version():
    with open(os.path.join(ROOT, "include", "wsfuse.h")) as f:
        m = re.search(r'^#define WSF_VERSION_STRING "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("include/wsfuse.h has no WSF_VERSION_STRING")
    return m.group(1)


def _epoch():
    """The files' time in archives: SOURCE_DATE_EPOCH for reproducible builds, else now."""
    return int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))


def _make(config_settings):
    """Runs make for libwsfuse.so and the wsfuse command; returns their paths."""
    b = (config_settings or {}).get("build-dir", "build")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", f"-j{os.cpu_count() or 1}", f"B={b}", f"{b}/libwsfuse.so", f"{b}/wsfuse"]
    print("wsfuse_build: " + " ".join(cmd), file=sys.stderr)
    # make's output goes to stderr: pip shows it when the build fails (and with -v)
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=sys.stderr, check=True)
    return (os.path.realpath(os.path.join(ROOT, b, "libwsfuse.so")),
            os.path.realpath(os.path.join(ROOT, b, "wsfuse")))


def _stripped(path, config_settings):
    """The bytes of the binary at PATH without what linking does not need (its
    symbol table, debug information), or as built where config setting strip is
    "0" or no strip runs (a note says so)."""
    if (config_settings or {}).get("strip", "1") != "0":
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.strip.{os.getpid()}")
        try:
            subprocess.run([os.environ.get("STRIP", "strip"), "--strip-unneeded", "-o", tmp, path],
                           stdout=sys.stderr, check=True)
            with open(tmp, "rb") as f:
                return f.read()
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"wsfuse_build: note: {path} is not stripped ({e})", file=sys.stderr)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    with open(path, "rb") as f:
        return f.read()


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _metadata(version):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    extras = "".join(f"Provides-Extra: {x}\n" + "".join(f'Requires-Dist: {r}; extra == "{x}"\n' for r in reqs)
                     for x, reqs in EXTRAS.items())
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
            f"License: Apache-2.0\nRequires-Python: {REQUIRES_PYTHON}\n{extras}"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _write_wheel(wheel_directory, files):
    """Writes FILES [(path in the wheel, bytes, mode)] and the dist-info a wheel
    needs; returns the wheel's file name."""
    version, tag = _version(), _tag()
    dist = f"{NAME}-{version}.dist-info"
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        license_text = f.read()
    files = list(files) + [
        (f"{dist}/METADATA", _metadata(version).encode(), 0o644),
        (f"{dist}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: wsfuse_build\n"
                           f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), 0o644),
        (f"{dist}/LICENSE", license_text, 0o644),
    ]
    record = []
    for path, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}\n")
    record.append(f"{dist}/RECORD,,\n")
    files.append((f"{dist}/RECORD", "".join(record).encode(), 0o644))

    name = f"{NAME}-{version}-{tag}.whl"
    stamp = time.gmtime(max(_epoch(), 315532800))[:6]   # zip cannot hold times before 1980
    tmp = os.path.join(wheel_directory, f".{name}.{os.getpid()}")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, os.path.join(wheel_directory, name))
    return name


def _python_files():
    """The binding: every module of python/ (and any package folder in it)."""
    src = os.path.join(ROOT, "python")
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                full = os.path.join(dirpath, f)
                with open(full, "rb") as fh:
                    out.append((os.path.relpath(full, src).replace(os.sep, "/"), fh.read(), 0o644))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _scripts(version):
    return f"{NAME}-{version}.data/scripts"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib, cli = _make(config_settings)
    return _write_wheel(wheel_directory, _python_files() + [
        ("wsfuse.libs/libwsfuse.so.0", _stripped(lib, config_settings), 0o755),
        (f"{_scripts(_version())}/wsfuse", _stripped(cli, config_settings), 0o755)])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _, cli = _make(config_settings)
    pth = os.path.join(ROOT, "python") + "\n"
    quoted = "'" + cli.replace("'", "'\\''") + "'"
    script = f'#!/bin/sh\n# the wsfuse command of the checkout {ROOT}\nexec {quoted} "$@"\n'
    return _write_wheel(wheel_directory, [("wsfuse_editable.pth", pth.encode(), 0o644),
                                          (f"{_scripts(_version())}/wsfuse", script.encode(), 0o755)])


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                                stdout=subprocess.PIPE).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"an sdist is made from a git checkout (git ls-files): {e}") from None
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    stamp = _epoch()

    def add(tar, arcname, data, mode=0o644):
        info = tarfile.TarInfo(f"{base}/{arcname}")
        info.size, info.mode, info.mtime = len(data), mode, stamp
        tar.addfile(info, io.BytesIO(data))

    tmp = os.path.join(sdist_directory, f".{name}.{os.getpid()}")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p.decode() for p in listed.split(b"\0") if p):
            full = os.path.join(ROOT, path)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                add(tar, path, f.read(), 0o755 if os.access(full, os.X_OK) else 0o644)
        add(tar, "PKG-INFO", _metadata(version).encode())
    os.replace(tmp, os.path.join(sdist_directory, name))
    return name
