#!/bin/bash
# run_combos.sh BUILD: 300 random matmul specs (tests/fuzz/matmul_combos.py,
# a fixed seed) through BUILD/wsfuse compile --emit=cuda: each exits 0, 1 or
# 6 with its message, never "internal" and never a sanitizer's report (under
# check-asan).  Prints "N passed, N failed"; skipped without python3.
set -u
b=${1:?usage: run_combos.sh BUILD}
here=${0%/*}
if ! command -v python3 >/dev/null; then echo "skipped combos: no python3"; echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
python3 "$here/fuzz/matmul_combos.py" gen 45 300 "$d" || { echo "FAIL combos: generator"; echo "0 passed, 1 failed"; exit 1; }
python3 "$here/fuzz/matmul_combos.py" compile "$d" "$b/wsfuse" cuda | grep -v '^exit statuses'
