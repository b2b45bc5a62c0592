#!/bin/bash
# nvrtc_corpus.sh BUILD [DIR...]: compiles every spec in the fuzz corpora that
# the front end accepts all the way to an sm_90a cubin.  The fuzzer stops
# before NVRTC (too slow to fuzz); this is the other half: generated CUDA that
# NVRTC rejects is a codegen bug.  Ends with "N passed, N failed, N skipped"
# (skipped: specs rejected as bad input or not yet buildable).
set -u
b=${1:?usage: nvrtc_corpus.sh BUILD [DIR...]}
shift
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(tests/fuzz/corpus build-fuzz/corpus)
ok=0 rej=0 bad=0
tmp=$(mktemp) && trap 'rm -f "$tmp" "$tmp.cubin"' EXIT
for d in "${dirs[@]}"; do
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		timeout 60 "$b/wsfuse" compile "$f" -o "$tmp.cubin" --no-cache >"$tmp" 2>&1
		case $? in
		0) ok=$((ok + 1)) ;;
		1 | 6) rej=$((rej + 1)) ;;
		*) bad=$((bad + 1)); echo "FAIL $f"; head -n 8 "$tmp" | sed 's/^/    /' ;;
		esac
	done
done
echo "$ok passed, $bad failed, $rej skipped"
[ $bad = 0 ]
