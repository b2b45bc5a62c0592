#!/bin/bash
# run_spills.sh BUILD: matmul specs without a schedule (tests/spill_grid.py)
# through BUILD/wsfuse compile --emit=ptxas: ptxas must spill no register
# of a default schedule.  Prints "N passed, N failed[, N skipped]"; skipped
# without python3 or NVRTC.
set -u
b=${1:?usage: run_spills.sh BUILD}
here=${0%/*}
if ! command -v python3 >/dev/null; then echo "skipped spills: no python3"; echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
python3 "$here/spill_grid.py" gen "$d" || { echo "FAIL spills: generator"; echo "0 passed, 1 failed"; exit 1; }
python3 "$here/spill_grid.py" check "$d" "$b/wsfuse"
