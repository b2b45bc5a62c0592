#!/bin/bash
# cuda_diff.sh [options] BASE [HEAD]: is the generated CUDA of every spec the
# same, byte for byte, with the compiler of commit BASE as with HEAD's (a
# commit; without it, the working tree's)?  A refactor's check.  BASE (and a
# HEAD commit) is exported with git archive into a temporary folder and built
# there (make build/wsfuse; the CLI is kept in OUT/.cli/COMMIT for the next
# run); the working tree is built in place.  Needs no GPU.
#
# The cases, all read from HEAD's tree: every examples/**/*.yaml,
# tests/golden/*.yaml and tests/gpu/specs/*.yaml; the opening example of
# docs/spec.md; each line of tests/gpu/sweep.txt with its -D flags (run's
# own flags dropped); and for each spec more size sets, from the sizes it
# binds: all halved (to a multiple of 8), all plus 8, all min(size, 40), all
# times 8, and each plus one in turn (ragged, where alignment allows).  Both CLIs
# run `compile --emit=cuda` on each, JOBS at a time, each under a timeout.
#
#   same        both exit 0 with the same output, or both fail alike (same
#               exit status and stderr)
#   DIFFERENT   the same exit status, a different output (or message); the
#               unified diff goes to OUT/diff/
#   STATUS      the exit status changed (a timeout counts as one)
#
# options:
#   -k          also compare --emit=kernel-ir
#   -e EMIT     also compare --emit=EMIT (fusion-ir, dot, ...)
#   --ptx       for each case whose CUDA differs, compare --emit=ptx too (NVRTC)
#   -j JOBS     cases at a time (default: nproc)
#   -t SECS     timeout of one compile (default 300)
#   -o OUT      output folder (default build/cuda_diff; its diff/ emptied first)
#   -f REGEX    only the cases whose line matches REGEX (grep -E)
#   -l          list the cases and stop (builds HEAD's CLI only)
#   -v          print every case, not just those that differ
#
# Prints a line for each case that is not the same, then
#   cuda_diff: N same, N different, N status-changed
# and exits 0 only when all are the same (1 when some differ, 2 on a usage
# or build error).  The full list is OUT/report.txt.
set -u
usage() {
	echo "usage: cuda_diff.sh [-k] [-e EMIT] [--ptx] [-j JOBS] [-t SECS] [-o OUT] [-f REGEX] [-l] [-v] BASE [HEAD]" >&2
	exit 2
}
die() { echo "cuda_diff: $*" >&2; exit 2; }

emits=cuda ptx=0 jobs=$(nproc 2>/dev/null || echo 2) limit=300 out='' pattern='' list=0 verbose=0
args=()
while [ $# -gt 0 ]; do
	case $1 in
	-k) emits="$emits kernel-ir" ;;
	-e) [ $# -ge 2 ] || usage; emits="$emits $2"; shift ;;
	--ptx) ptx=1 ;;
	-j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
	-t) [ $# -ge 2 ] || usage; limit=$2; shift ;;
	-o) [ $# -ge 2 ] || usage; out=$2; shift ;;
	-f) [ $# -ge 2 ] || usage; pattern=$2; shift ;;
	-l) list=1 ;;
	-v) verbose=1 ;;
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	--) shift; args+=("$@"); break ;;
	-*) usage ;;
	*) args+=("$1") ;;
	esac
	shift
done
case ${#args[@]} in 1 | 2) ;; *) usage ;; esac
case $jobs in '' | *[!0-9]* | 0) die "-j wants a positive number, not '$jobs'" ;; esac
case $limit in '' | *[!0-9]* | 0) die "-t wants a positive number of seconds, not '$limit'" ;; esac
for e in $emits; do
	case $e in *[!a-z-]*) die "bad --emit value '$e'" ;; esac
done
emits=$(tr ' ' '\n' <<<"$emits" | awk '!seen[$0]++' | tr '\n' ' ')
emits=${emits% }

root=$(git rev-parse --show-toplevel 2>/dev/null) || die "not inside a git repository"
cd "$root" || exit 2
base=$(git rev-parse --verify -q "${args[0]}^{commit}") || die "'${args[0]}' is not a commit"
head=
if [ ${#args[@]} = 2 ]; then
	head=$(git rev-parse --verify -q "${args[1]}^{commit}") || die "'${args[1]}' is not a commit"
fi
out=${out:-build/cuda_diff}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd) || exit 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuda_diff.XXXXXX") || exit 2
# the temporary trees go on Ctrl-C too; the cases running then are killed
# with the foreground job
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'echo "cuda_diff: interrupted" >&2; exit 130' INT TERM HUP

# the make of the outer `make cuda-diff` must not pass its variables on
unset MAKEFLAGS MFLAGS MAKELEVEL

# build DIR LOG: make build/wsfuse in DIR; on failure the log's end and exit 2.
build() {
	if ! (cd "$1" && make -j2 build/wsfuse) >"$2" 2>&1; then
		tail -n 20 "$2" >&2
		die "the build in $1 failed (log: $2)"
	fi
}

# tree COMMIT DIR: COMMIT's files in DIR.
tree() {
	mkdir -p "$2" || exit 2
	git -C "$root" archive --format=tar "$1" | tar -x -C "$2" || die "cannot export $1"
}

# cli COMMIT: builds COMMIT's CLI once (kept in $out/.cli/COMMIT) and prints its path.
cli() {
	local keep=$out/.cli/$1
	if [ ! -x "$keep/wsfuse" ]; then
		echo "cuda_diff: building ${1:0:12} (log: $keep/build.log)" >&2
		mkdir -p "$keep" || exit 2
		tree "$1" "$tmp/src-$1"
		build "$tmp/src-$1" "$keep/build.log"
		cp "$tmp/src-$1/build/wsfuse" "$keep/wsfuse.tmp" && mv "$keep/wsfuse.tmp" "$keep/wsfuse" || exit 2
		rm -rf "$tmp/src-$1"
	fi
	echo "$keep/wsfuse"
}

# HEAD's CLI and its tree, where the cases are read and every compile runs
if [ -n "$head" ]; then
	head_cli=$(cli "$head") || exit 2
	here=$tmp/head
	tree "$head" "$here"
	head_name=${head:0:12}
else
	echo "cuda_diff: building the working tree (log: $out/build.log)" >&2
	build "$root" "$out/build.log"
	head_cli=$root/build/wsfuse
	here=$root
	head_name="the working tree"
fi
cd "$here" || exit 2

# Every compile sees the same environment, whatever the caller's WSFUSE_*.
for v in $(compgen -e); do
	case $v in WSFUSE_*) unset "$v" ;; esac
done
export WSFUSE_CACHE=0

# ---- the cases, one line each: SPEC [-D NAME=VALUE]... ----
rm -rf "$out/diff" "$out/report.txt" "$out/cases.txt"
mkdir -p "$out/diff"

# compile_args WORDS...: the spec and its -D flags; run's flags (--seed=N,
# --seed N, --check, ...) and any other option are dropped.
compile_args() {
	local w keep=()
	while [ $# -gt 0 ]; do
		w=$1
		shift
		case $w in
		-D) [ $# -gt 0 ] && keep+=(-D "$1") && shift ;;
		-D*) keep+=(-D "${w#-D}") ;;
		--seed | --iters | --scale | -o | --output | --cache-dir | --dump-after) [ $# -gt 0 ] && shift ;;
		-*) ;;
		*) keep+=("$w") ;;
		esac
	done
	echo "${keep[*]}"
}

# sizes SPEC: "NAME VALUE" for each size the spec binds by default, as the
# fusion IR prints them (`size NAME = VALUE`).
sizes() {
	{ "$head_cli" compile --emit=fusion-ir "$1" 2>/dev/null ||
		"$base_cli" compile --emit=fusion-ir "$1" 2>/dev/null; } </dev/null |
		sed -n 's/^  size \([A-Za-z_][A-Za-z0-9_]*\) = \([0-9][0-9]*\) *\(;.*\)\{0,1\}$/\1 \2/p'
}

base_cli=$head_cli
[ $list = 1 ] || base_cli=$(cli "$base") || exit 2

specs=()
while IFS= read -r y; do specs+=("$y"); done < <(
	find examples -name '*.yaml' -type f 2>/dev/null | LC_ALL=C sort
	for y in tests/golden/*.yaml tests/gpu/specs/*.yaml; do [ -f "$y" ] && echo "$y"; done)
# the opening example of docs/spec.md, as tests/gpu/cases.sh reads it
if [ -f docs/spec.md ]; then
	y=$out/spec_md.yaml
	case $y in "$here"/*) y=${y#"$here"/} ;; esac
	awk '/^```yaml$/ { f = 1; next } f && /^```$/ { exit } f' docs/spec.md >"$y"
	[ -s "$y" ] && specs+=("$y")
fi

{
	for y in "${specs[@]}"; do
		echo "$y"
		sizes "$y" | awk -v y="$y" '
			function set(s, j,   i, x, line) {
				line = y
				for (i = 1; i <= NR; i++) {
					x = v[i]
					if (s == "half") x = x >= 16 ? int(x / 16) * 8 : int(x / 2)
					if (s == "ragged") x = x + 8
					if (s == "one" && i == j) x = x + 1
					if (s == "small" && x > 40) x = 40
					if (s == "big") x = x * 8
					if (x < 1) x = 1
					if (x > 1099511627776) x = 1099511627776
					line = line sprintf(" -D %s=%.0f", n[i], x)
				}
				print line
			}
			{ n[NR] = $1; v[NR] = $2 }
			END {
				if (NR == 0) exit
				set("half"); set("ragged"); set("small"); set("big")
				for (j = 1; j <= NR; j++) set("one", j)
			}'
	done
	sweep=tests/gpu/sweep.txt
	if [ -f "$sweep" ]; then
		sed 's/#.*//' "$sweep" | while read -r -a w; do
			[ ${#w[@]} -gt 0 ] && compile_args "${w[@]}"
		done
	fi
} | awk 'NF && !seen[$0]++' | grep -E -- "${pattern:-.}" >"$out/cases.txt"
n=$(wc -l <"$out/cases.txt")
if [ $list = 1 ]; then
	cat "$out/cases.txt"
	exit 0
fi
[ "$n" -gt 0 ] || die "no cases${pattern:+ match the pattern}"
echo "cuda_diff: $n cases ($emits), base ${base:0:12}, head $head_name, $jobs at a time" >&2

# ---- one case: both CLIs, each EMIT; one line of result each ----
# diff_case 'IDX LINE': prints "IDX<TAB>STATUS<TAB>EMIT<TAB>LINE<TAB>DETAIL" per emit.
diff_case() {
	local idx=${1%% *} line=${1#* } e t rb rh d name detail status
	t=$CD_TMP/$idx
	name=$(printf '%04d_%s' "$idx" "$line" | tr -c 'A-Za-z0-9_.=-' _ | sed 's/__*/_/g')
	name=${name:0:150}
	for e in $CD_EMITS; do
		# shellcheck disable=SC2086 # the line's words are the arguments
		timeout "$CD_LIMIT" "$CD_BASE" compile --emit="$e" $line >"$t.b.out" 2>"$t.b.err" </dev/null
		rb=$?
		# shellcheck disable=SC2086
		timeout "$CD_LIMIT" "$CD_HEAD" compile --emit="$e" $line >"$t.h.out" 2>"$t.h.err" </dev/null
		rh=$?
		detail=
		if [ $rb != $rh ] || [ $rb = 124 ]; then
			status=STATUS
			detail="base exit $rb, head exit $rh"
			[ $rb = 124 ] && detail="$detail (124: timed out after ${CD_LIMIT}s)"
			[ $rb != 0 ] && [ $rb != 124 ] && detail="$detail; base: $(head -n 1 "$t.b.err" | cut -c1-200)"
			[ $rh != 0 ] && [ $rh != 124 ] && detail="$detail; head: $(head -n 1 "$t.h.err" | cut -c1-200)"
		elif [ $rb = 0 ] && cmp -s "$t.b.out" "$t.h.out"; then
			status=same
		elif [ $rb != 0 ] && cmp -s "$t.b.err" "$t.h.err"; then
			status=same
			detail="both exit $rb: $(head -n 1 "$t.b.err" | cut -c1-200)"
		else
			status=DIFFERENT
			d=$CD_OUT/diff/$name.$e.diff
			if [ $rb = 0 ]; then
				diff -u --label "base $e: $line" --label "head $e: $line" "$t.b.out" "$t.h.out" >"$d"
			else
				diff -u --label "base $e stderr: $line" --label "head $e stderr: $line" "$t.b.err" "$t.h.err" >"$d"
				detail="both exit $rb, the messages differ; "
			fi
			detail="$detail$(($(grep -c '^[-+]' "$d") - 2)) lines: $d"
			if [ "$e" = cuda ] && [ "$CD_PTX" = 1 ] && [ $rb = 0 ]; then
				# shellcheck disable=SC2086
				timeout "$CD_LIMIT" "$CD_BASE" compile --emit=ptx $line >"$t.b.ptx" 2>"$t.b.err" </dev/null
				rb=$?
				# shellcheck disable=SC2086
				timeout "$CD_LIMIT" "$CD_HEAD" compile --emit=ptx $line >"$t.h.ptx" 2>"$t.h.err" </dev/null
				rh=$?
				if [ $rb != 0 ] || [ $rh != 0 ]; then
					detail="$detail; PTX not compared: base exit $rb, head exit $rh: $(cat "$t.b.err" "$t.h.err" | head -n 1 | cut -c1-200)"
				elif cmp -s "$t.b.ptx" "$t.h.ptx"; then
					detail="$detail; PTX identical"
				else
					diff -u --label "base ptx: $line" --label "head ptx: $line" "$t.b.ptx" "$t.h.ptx" >"$CD_OUT/diff/$name.ptx.diff"
					detail="$detail; PTX DIFFERS: $CD_OUT/diff/$name.ptx.diff"
				fi
			fi
		fi
		printf '%s\t%s\t%s\t%s\t%s\n' "$idx" "$status" "$e" "$line" "$detail"
	done
	rm -f "$t.b.out" "$t.h.out" "$t.b.err" "$t.h.err" "$t.b.ptx" "$t.h.ptx"
}
export -f diff_case
# diffs are named from here where they lie below it
CD_OUT=$out
case $out in "$here"/*) CD_OUT=${out#"$here"/} ;; esac
export CD_BASE=$base_cli CD_HEAD=$head_cli CD_OUT CD_TMP=$tmp CD_LIMIT=$limit CD_EMITS=$emits CD_PTX=$ptx

# show: the lines as they end (the same only with -v), into $tmp/results
show() {
	local idx status e line detail
	while IFS=$'\t' read -r idx status e line detail; do
		printf '%s\t%s\t%s\t%s\t%s\n' "$idx" "$status" "$e" "$line" "$detail" >>"$tmp/results"
		[ "$status" = same ] && [ $verbose = 0 ] && continue
		printf '%-9s %-9s %s%s\n' "$status" "$e" "$line" "${detail:+  ($detail)}"
	done
}

t0=$SECONDS
: >"$tmp/results"
# shellcheck disable=SC2016 # $1 is the inner shell's
awk '{ print NR, $0 }' "$out/cases.txt" |
	xargs -d '\n' -P "$jobs" -I{} bash -c 'set -f; diff_case "$1"' _ {} | show

sort -n -k1,1 "$tmp/results" | awk -F'\t' '{ printf "%-9s %-9s %s%s\n", $2, $3, $4, ($5 == "" ? "" : "  (" $5 ")") }' >"$out/report.txt"
same=$(grep -c '^same' "$out/report.txt")
different=$(grep -c '^DIFFERENT' "$out/report.txt")
changed=$(grep -c '^STATUS' "$out/report.txt")
alike=$(grep -c '^same .*(both exit' "$out/report.txt")
done_=$((same + different + changed))
total=$((n * $(wc -w <<<"$emits")))
[ $done_ = "$total" ] || die "$((total - done_)) of $total comparisons gave no result"
[ "$alike" -gt 0 ] && echo "cuda_diff: $alike of the same fail in both alike (same exit status and message)"
[ $ptx = 1 ] && [ "$different" -gt 0 ] &&
	echo "cuda_diff: PTX identical for $(grep -c '^DIFFERENT.*; PTX identical)$' "$out/report.txt") of the $different different"
echo "cuda_diff: report $out/report.txt, diffs in $out/diff/, $((SECONDS - t0))s"
echo "cuda_diff: $same same, $different different, $changed status-changed"
[ "$different" = 0 ] && [ "$changed" = 0 ]
