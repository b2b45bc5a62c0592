#!/bin/bash
# combos.sh BUILD [N] [SEED] [JOBS]: N random matmul specs (default 400; seed
# 11) from tests/fuzz/matmul_combos.py, sizes capped at 2^31 multiply-adds,
# each that compiles run with `wsfuse run --check` by psweep.sh (JOBS at a
# time, default 8; exit 6 counts as skipped).  Prints psweep's failures and
# its "sweep: N passed, ..." line; the specs stay in the folder it names
# when one fails.  Skips without a GPU.
set -u
b=${1:?usage: combos.sh BUILD [N] [SEED] [JOBS]}
n=${2:-400} seed=${3:-11} jobs=${4:-8}
here=${0%/*}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "skipped: no GPU"; exit 0; fi
d=$(mktemp -d) || exit 1
python3 "$here/../fuzz/matmul_combos.py" gen "$seed" "$n" "$d" $((1 << 31)) || exit 1
for f in "$d"/*.yaml; do "$b/wsfuse" compile "$f" --emit=kernel-ir -o /dev/null 2>/dev/null && echo "$f"; done >"$d/sweep.txt"
if SWEEP="$d/sweep.txt" bash "$here/psweep.sh" "$b" "$jobs" "^$d/"; then rm -rf "$d"; else echo "combos: the specs are in $d"; exit 1; fi
