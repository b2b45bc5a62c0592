#!/bin/bash
# psweep.sh BUILD [JOBS] [PATTERN]: run.sh's first part alone (cases.sh: the
# examples, docs/spec.md's opening example and the sweep's lines, each with
# `wsfuse run --check`), JOBS at a time on the one GPU (default 8), PATTERN
# (grep -E) keeping the matching lines: a quick pass over the sweep, or over
# another sweep file (SWEEP=FILE; tests/gpu/combos.sh's).  Prints each
# failure's last lines, then "sweep: N passed, N failed, N skipped"; the full
# log goes to LOG (default: a temporary file, named at the end).
set -u
b=${1:?usage: psweep.sh BUILD [JOBS] [PATTERN]}
here=${0%/*}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "skipped: no GPU"; exit 0; fi
[ -x "$b/wsfuse" ] || { echo "FAIL $b/wsfuse: not built"; exit 1; }
list=$(mktemp) && log=${LOG:-$(mktemp)} || exit 1
trap 'rm -f "$list" "$list.yaml"' EXIT
# shellcheck source=tests/gpu/cases.sh
. "$here/cases.sh"
gpu_cases "$b" "${2:-8}" "${3:-.}" "$list" "$log"
grep -A5 '^FAIL' "$log"
echo "sweep: $cases_pass passed, $cases_fail failed, $cases_skip skipped (log: $log)"
[ "$cases_fail" = 0 ]
