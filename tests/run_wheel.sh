#!/bin/bash
# run_wheel.sh BUILD: the Python package, in a fresh venv and offline:
#   wheel     `pip wheel` of this checkout (its library is BUILD's) holds
#             wsfuse.py, wsfuse.libs/libwsfuse.so.0 and the wsfuse command
#   stripped  the library and the command in it have no symbol table and no
#             debug information, and the library still exports the API
#   extra     its METADATA declares the extra wsfuse[torch]
#   install   `pip install` of that wheel
#   import    from another folder, `import wsfuse` is the venv's and loads the
#             bundled library, whose wsf_version() is the header's; a spec
#             compiles to CUDA
#   command   the venv's bin/wsfuse says the header's version and compiles a
#             spec to CUDA
#   nvrtc     the search of nvidia-cuda-nvrtc wheels finds the newest NVRTC
#   nvrtc-wheel  with no NVRTC found by soname, the binding loads one from a
#             wheel's folder and NVRTC builds a cubin (skipped where the system's
#             NVRTC cannot be hidden: in ld.so.cache and no `unshare -m`)
#   editable  `pip install -e .` runs the checkout's python/wsfuse.py, and its
#             bin/wsfuse the checkout's command
#   sdist     the backend's sdist holds the tracked files and PKG-INFO
# Each case counts once.  No python3, no venv module (Debian: python3-venv),
# or a sanitized build (whose library needs the sanitizer runtimes) skips them
# all.  Ends with "N passed, N failed[, N skipped]".
set -u
b=${1:?usage: run_wheel.sh BUILD}
cases=10
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL wheel: $1: $2"; }
skipped() { skip=$((skip + $1)); echo "skipped wheel: $2"; }
finish() {
	echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
	exit $((fail > 0))
}

if ! command -v python3 >/dev/null; then
	skipped $cases "no python3"
	finish
fi
if nm -D "$b/libwsfuse.so" 2>/dev/null | grep -q __asan_; then
	skipped $cases "$b is a sanitized build"
	finish
fi
root=$PWD
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m venv "$tmp/venv" >"$tmp/log" 2>&1; then
	skipped $cases "python3 -m venv failed (Debian: apt-get install python3-venv): $(tail -n 1 "$tmp/log")"
	finish
fi
py=$tmp/venv/bin/python
if ! "$py" -m pip --version >/dev/null 2>&1; then
	skipped $cases "no pip in the venv"
	finish
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
unset WSFUSE_LIB PYTHONPATH MAKEFLAGS MAKELEVEL
version=$(sed -n 's/^#define WSF_VERSION_STRING "\(.*\)"$/\1/p' include/wsfuse.h)
spec='fusion: hello\nsizes: {N: 64}\ninputs:\n  x: {dtype: f32, shape: [N]}\nops:\n  - {out: y, op: relu, in: [x]}\noutputs:\n  y: {dtype: f32}\n'

# COMMAND... in folder $tmp/elsewhere, stdout and stderr in $tmp/out
inpy() {
	(cd "$tmp/elsewhere" && timeout 300 "$@") >"$tmp/out" 2>&1
}
pyrun() { inpy "$py" "$@"; }
mkdir "$tmp/elsewhere"

# ---- wheel, install, import ----
if "$py" -m pip wheel --no-deps --no-build-isolation --config-settings build-dir="$b" \
	-w "$tmp/dist" . >"$tmp/log" 2>&1; then
	whl=$(ls "$tmp"/dist/wsfuse-"$version"-py3-none-*.whl 2>/dev/null | head -n 1)
	if [ -z "$whl" ]; then
		bad wheel "no wsfuse-$version-py3-none-*.whl in $(ls "$tmp/dist")"
	elif ! held=$("$py" -m zipfile -l "$whl") || ! grep -q '^wsfuse\.py ' <<<"$held" ||
		! grep -q '^wsfuse\.libs/libwsfuse\.so\.0 ' <<<"$held" ||
		! grep -q "^wsfuse-$version\.data/scripts/wsfuse " <<<"$held"; then
		bad wheel "$whl lacks wsfuse.py, wsfuse.libs/libwsfuse.so.0 or the wsfuse script"
	else
		ok
	fi
else
	bad wheel "pip wheel: $(grep -m3 -iE 'error|wsfuse:' "$tmp/log")"
	whl=
fi

if [ -z "$whl" ]; then
	skipped 2 "stripped, extra: no wheel"
else
	# ".symtab" and ".debug_info" are section names only an unstripped ELF file holds
	if pyrun -c "import zipfile
z = zipfile.ZipFile('$whl')
for f in ('wsfuse.libs/libwsfuse.so.0', 'wsfuse-$version.data/scripts/wsfuse'):
    data = z.read(f)
    full = [s.decode() for s in (b'.symtab', b'.debug_info') if s + b'\\0' in data]
    if data[:4] != b'\\x7fELF' or full: print(f, 'is not ELF' if data[:4] != b'\\x7fELF' else 'holds', *full)
if b'wsf_compile_string' not in z.read('wsfuse.libs/libwsfuse.so.0'): print('no wsf_compile_string')" &&
		[ ! -s "$tmp/out" ]; then
		ok
	else
		bad stripped "$(cat "$tmp/out")"
	fi
	if pyrun -c "import zipfile
meta = zipfile.ZipFile('$whl').read('wsfuse-$version.dist-info/METADATA').decode()
print([l for l in meta.splitlines() if l.startswith(('Provides-Extra:', 'Requires-Dist:'))])" &&
		[ "$(cat "$tmp/out")" = "['Provides-Extra: torch', 'Requires-Dist: torch>=2.4; extra == \"torch\"']" ]; then
		ok
	else
		bad extra "$(cat "$tmp/out")"
	fi
fi

printf '%b' "$spec" >"$tmp/elsewhere/hello.yaml"
if [ -z "$whl" ]; then
	skipped 3 "install, import, command: no wheel"
elif "$py" -m pip install --no-deps "$whl" >"$tmp/log" 2>&1; then
	ok
	site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
	if pyrun -c "import wsfuse
ctx = wsfuse.Context(stop_after='cuda')
k = ctx.compile_string('$spec')
print(wsfuse.__file__, wsfuse.load()._name, wsfuse.version(), k.name)"; then
		want="$site/wsfuse.py $site/wsfuse.libs/libwsfuse.so.0 $version hello"
		if [ "$(cat "$tmp/out")" = "$want" ]; then ok; else bad import "printed '$(cat "$tmp/out")', expected '$want'"; fi
	else
		bad import "$(tail -n 3 "$tmp/out")"
	fi
	# the command the venv's bin/ holds, run by its path (the venv not activated)
	if inpy env -u WSFUSE_LIB "$tmp/venv/bin/wsfuse" --version && [ "$(head -n 1 "$tmp/out")" = "wsfuse $version" ] &&
		inpy "$tmp/venv/bin/wsfuse" compile --emit=cuda hello.yaml -o hello.cu &&
		grep -q 'wsfuse_hello' "$tmp/elsewhere/hello.cu"; then
		ok
	else
		bad command "$(tail -n 3 "$tmp/out")"
	fi
else
	bad install "pip install: $(grep -m3 -i error "$tmp/log")"
	skipped 2 "import, command: nothing installed"
fi

# ---- NVRTC from nvidia-cuda-nvrtc wheels ----
mkdir -p "$tmp/site/a/nvidia/cuda_nvrtc/lib" "$tmp/site/b/nvidia/cu13/lib" "$tmp/site/b/nvidia/cuda_nvrtc/lib"
touch "$tmp/site/a/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" "$tmp/site/b/nvidia/cu13/lib/libnvrtc.so.13" \
	"$tmp/site/b/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" "$tmp/site/b/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9"
if pyrun -c "import sys; sys.path.insert(0, '$root/python'); import wsfuse
for f in wsfuse._wheel_nvrtc(['$tmp/site/a', '$tmp/site/b', '$tmp/none']): print(f[len('$tmp/site/'):])"; then
	want="b/nvidia/cu13/lib/libnvrtc.so.13
a/nvidia/cuda_nvrtc/lib/libnvrtc.so.12
b/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
	if [ "$(cat "$tmp/out")" = "$want" ]; then ok; else bad nvrtc "found $(tr "\n" " " <"$tmp/out")"; fi
else
	bad nvrtc "$(tail -n 3 "$tmp/out")"
fi

# a wheel's folder of links to the toolkit's NVRTC, and no other NVRTC to be found
cuda=${CUDA_HOME:-/usr/local/cuda}
nv=$(ls "$cuda"/lib64/libnvrtc.so.1[0-9] "$cuda"/lib/libnvrtc.so.1[0-9] 2>/dev/null | tail -n 1)
probe="import ctypes, sys
for n in ('libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so'):
    try: ctypes.CDLL(n); sys.exit(1)
    except OSError: pass"
hide=
if [ -z "$nv" ]; then
	why="no NVRTC under $cuda"
elif [ -n "${WSFUSE_NVRTC_PATH:-}" ]; then
	why="WSFUSE_NVRTC_PATH is set"
elif env -u LD_LIBRARY_PATH "$py" -c "$probe" 2>/dev/null; then
	hide=ld-path
elif unshare -m sh -c 'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' sh \
	env -u LD_LIBRARY_PATH "$py" -c "$probe" 2>/dev/null; then
	hide=namespace
else
	why="NVRTC is in ld.so.cache and unshare -m cannot hide it"
fi
if [ -n "$hide" ]; then
	d=$tmp/nvsite/nvidia/$([ "${nv##*.so.}" -ge 13 ] && echo cu13 || echo cuda_nvrtc)/lib
	mkdir -p "$d"
	ln -s "$nv" "$(dirname "$nv")"/libnvrtc-builtins.so.* "$d/"
	run=(env -u LD_LIBRARY_PATH WSFUSE_CACHE=0 PYTHONPATH="$tmp/nvsite" "$py")
	[ "$hide" = namespace ] && run=(unshare -m sh -c 'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' sh "${run[@]}")
	if inpy "${run[@]}" -c "import wsfuse
k = wsfuse.Context().compile_string('$spec')
print(len(k.cubin() or b'') > 0, [l._name for l in wsfuse._nvrtc])" &&
		grep -q "^True .*$tmp/nvsite/.*libnvrtc.so" "$tmp/out"; then
		ok
	else
		bad nvrtc-wheel "$(tail -n 3 "$tmp/out")"
	fi
else
	skipped 1 "nvrtc-wheel: $why"
fi

# ---- editable ----
"$py" -m pip uninstall -y wsfuse >/dev/null 2>&1
if "$py" -m pip install --no-deps --no-build-isolation --config-settings build-dir="$b" -e . >"$tmp/log" 2>&1; then
	if WSFUSE_LIB=$root/$b/libwsfuse.so pyrun -c "import wsfuse
print(wsfuse.__file__, wsfuse.Context(stop_after='cuda').compile_string('$spec').name)" &&
		[ "$(cat "$tmp/out")" = "$root/python/wsfuse.py hello" ] &&
		inpy "$tmp/venv/bin/wsfuse" --version && [ "$(head -n 1 "$tmp/out")" = "wsfuse $version" ] &&
		grep -qF "$root/$b/wsfuse" "$tmp/venv/bin/wsfuse"; then
		ok
	else
		bad editable "$(tail -n 3 "$tmp/out")"
	fi
else
	bad editable "pip install -e: $(grep -m3 -i error "$tmp/log")"
fi

# ---- sdist ----
if [ -d .git ] || [ -f .git ]; then
	mkdir "$tmp/sdist"
	if name=$("$py" -c "import sys; sys.path.insert(0, 'pkg'); import wsfuse_build
print(wsfuse_build.build_sdist('$tmp/sdist'))" 2>"$tmp/log") && list=$(tar -tzf "$tmp/sdist/$name"); then
		lacks=
		for f in PKG-INFO pyproject.toml pkg/wsfuse_build.py include/wsfuse.h Makefile; do
			grep -qx "wsfuse-$version/$f" <<<"$list" || lacks="$lacks $f"
		done
		if [ -z "$lacks" ]; then ok; else bad sdist "$name lacks$lacks"; fi
	else
		bad sdist "$(head -c 300 "$tmp/log")"
	fi
else
	skipped 1 "sdist: not a git checkout"
fi
finish
