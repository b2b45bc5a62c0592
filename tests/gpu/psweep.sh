#!/bin/bash
# psweep.sh BUILD [JOBS] [PATTERN]: the examples and tests/gpu/sweep.txt's
# lines (run.sh's first two parts) with `wsfuse run --check`, JOBS at a time
# on the one GPU (default 8), for a quick pass over the whole sweep (about
# three minutes on an H200 against run.sh's serial quarter hour); run.sh
# stays the check of record.  PATTERN (grep -E) keeps the matching lines.
# Prints each failure's last lines, then "sweep: N passed, N failed, N
# skipped"; the full log goes to LOG (default: a temporary file, named at
# the end).  GPU_TIMEOUT (default 300) bounds each run; exit 6 (a kernel
# family this version does not build) counts as skipped, as in run.sh.
set -u
b=${1:?usage: psweep.sh BUILD [JOBS] [PATTERN]}
jobs=${2:-8}
pattern=${3:-.}
here=${0%/*}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "skipped: no GPU"; exit 0; fi
[ -x "$b/wsfuse" ] || { echo "FAIL $b/wsfuse: not built"; exit 1; }
list=$(mktemp) && log=${LOG:-$(mktemp)} || exit 1
trap 'rm -f "$list"' EXIT
{ for y in examples/*.yaml; do [ -f "$y" ] && echo "$y"; done
  sed 's/#.*//' "${SWEEP:-$here/sweep.txt}" | grep -v '^ *$'; } | grep -E -- "$pattern" >"$list"
# one LINE: a case of the sweep
one() {
	local out rc
	# shellcheck disable=SC2086 # the line's words are the arguments
	out=$(timeout "${GPU_TIMEOUT:-300}" "$PSWEEP_BUILD/wsfuse" run --check $1 2>&1 </dev/null)
	rc=$?
	# one write a case, so that cases running together do not interleave their lines
	if [ $rc = 0 ]; then echo "ok   $1"
	elif [ $rc = 6 ]; then echo "skip $1"
	else printf 'FAIL %s: exit %s\n%s\n' "$1" "$rc" "$(tail -n 4 <<<"$out" | sed 's/^/    /')"; fi
}
export -f one
export PSWEEP_BUILD=$b
set -f   # the sweep's words are not globs
# shellcheck disable=SC2016 # $1 is the inner shell's
tr '\n' '\0' <"$list" | xargs -0 -P "$jobs" -I{} bash -c 'one "$1"' _ {} >"$log" 2>&1
set +f
grep -A4 '^FAIL' "$log"
pass=$(grep -c '^ok' "$log") fail=$(grep -c '^FAIL' "$log") skip=$(grep -c '^skip' "$log")
echo "sweep: $pass passed, $fail failed, $skip skipped (log: $log)"
[ "$fail" = 0 ]
