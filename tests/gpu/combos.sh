#!/bin/bash
# combos.sh BUILD [N] [SEED] [JOBS]: N random matmul specs (default 400; seed
# 11) from tests/fuzz/matmul_combos.py, sizes capped at 2^31 multiply-adds,
# each that compiles run with `wsfuse check` (the host reference, outputs
# poisoned), JOBS at a time (8).  Prints each failure's last lines, then
# "combos: N passed, N failed"; skips without a GPU.
set -u
b=${1:?usage: combos.sh BUILD [N] [SEED] [JOBS]}
n=${2:-400} seed=${3:-11} jobs=${4:-8}
here=${0%/*}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "skipped: no GPU"; exit 0; fi
d=$(mktemp -d) && log=$(mktemp) || exit 1
trap 'rm -rf "$d"' EXIT
python3 "$here/../fuzz/matmul_combos.py" gen "$seed" "$n" "$d" $((1 << 31)) || exit 1
for f in "$d"/*.yaml; do "$b/wsfuse" compile "$f" --emit=kernel-ir -o /dev/null 2>/dev/null || rm -f "$f"; done
one() {
	local out rc
	out=$(timeout 300 "$COMBOS_BUILD/wsfuse" check "$1" --no-cache 2>&1 </dev/null); rc=$?
	if [ $rc = 0 ]; then echo "ok   $1"; else printf 'FAIL %s: exit %s\n%s\n' "$1" "$rc" "$(tail -n 6 <<<"$out" | sed 's/^/    /')"; cat "$1"; fi
}
export -f one
export COMBOS_BUILD=$b
ls "$d"/*.yaml | xargs -P "$jobs" -I{} bash -c 'one "$1"' _ {} >"$log" 2>&1
grep -A30 '^FAIL' "$log" | head -300
echo "combos: $(grep -c '^ok' "$log") passed, $(grep -c '^FAIL' "$log") failed (log: $log)"
! grep -q '^FAIL' "$log"
