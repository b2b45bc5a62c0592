# shellcheck shell=bash disable=SC2034 # cases_* are the caller's
# cases.sh: sourced by run.sh and psweep.sh.  The GPU cases of record: every
# example, the opening example of docs/spec.md, and each line of the sweep file
# (SWEEP, default tests/gpu/sweep.txt: `SPEC [-D NAME=VALUE]... [flags]`, '#'
# starts a comment), each through `wsfuse run --check`, JOBS at a time on the
# one GPU.  Exit 6 (a kernel family this version does not build) is a skip;
# any other non-zero exit fails.  GPU_TIMEOUT (seconds, default 300) bounds
# each run.

# gpu_case LINE: one case, run by $GPU_BUILD/wsfuse; prints "ok   Ns LINE",
# "skip LINE: why" or "FAIL LINE: exit N" and the run's last lines, in one
# write, so that cases running together do not interleave their lines.
gpu_case() {
	local out rc t0=$SECONDS
	# shellcheck disable=SC2086 # the line's words are the arguments
	out=$(timeout "${GPU_TIMEOUT:-300}" "$GPU_BUILD/wsfuse" run --check $1 2>&1 </dev/null)
	rc=$?
	if [ $rc = 0 ]; then
		echo "ok   $((SECONDS - t0))s $1"
	elif [ $rc = 6 ]; then
		echo "skip $1: $(head -n 1 <<<"$out")"
	else
		printf 'FAIL %s: exit %s\n%s\n' "$1" "$rc" "$(tail -n 5 <<<"$out" | sed 's/^/    /')"
	fi
}

# gpu_cases BUILD JOBS PATTERN SCRATCH LOG [show]: the cases whose line
# matches PATTERN (grep -E), JOBS at a time.  The list goes to the file
# SCRATCH and the spec.md example to SCRATCH.yaml (the caller removes
# them); LOG receives every case's lines in the order they end (with show,
# standard output too, as they end).  Sets cases_pass, cases_fail and
# cases_skip.
gpu_cases() {
	local b=$1 jobs=$2 pattern=$3 scratch=$4 log=$5 show=${6:-} here=${BASH_SOURCE[0]%/*}
	local sweep=${SWEEP:-$here/sweep.txt}

	awk '/^```yaml$/ { f = 1; next } f && /^```$/ { exit } f' docs/spec.md >"$scratch.yaml"
	{ for y in examples/*.yaml; do [ -f "$y" ] && echo "$y"; done
	  echo "$scratch.yaml"
	  [ ! -f "$sweep" ] || sed 's/#.*//' "$sweep" | grep -v '^ *$'; } | grep -E -- "$pattern" >"$scratch"
	export -f gpu_case
	export GPU_BUILD=$b
	# each case in a shell of its own, where the line's words are not globs
	# shellcheck disable=SC2016 # $1 is the inner shell's
	tr '\n' '\0' <"$scratch" | xargs -0 -P "$jobs" -I{} bash -c 'set -f; gpu_case "$1"' _ {} 2>&1 |
		if [ -n "$show" ]; then tee "$log"; else cat >"$log"; fi
	rm -f "$scratch.yaml"
	cases_pass=$(grep -c '^ok' "$log")
	cases_fail=$(grep -c '^FAIL' "$log")
	cases_skip=$(grep -c '^skip' "$log")
}
