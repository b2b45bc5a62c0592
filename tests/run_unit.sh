#!/bin/bash
# run_unit.sh BUILD: runs the cmocka unit tests BUILD/tests/test_* and the
# Python binding's tests/python/test_*.py (TAP output, one count per test
# case), then replays every file of tests/fuzz/regress/ and
# tests/fuzz/corpus/ through BUILD/tests/replay, and of tests/fuzz/launch/
# through BUILD/tests/replay_launch (one count per file).
# Prints one line per failure, one per skip reason of each program ("# SKIP
# CASE: WHY" or a "# skip: WHY" line before it; a skip with neither
# fails), and ends with "N passed, N failed[, N skipped]".
# TEST_TIMEOUT (seconds, default 300) bounds each program.
set -u
b=${1:?usage: run_unit.sh BUILD}
limit=${TEST_TIMEOUT:-300}
pass=0 fail=0 skip=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

bounded() {
	if command -v timeout >/dev/null; then timeout "$limit" "$@"; else "$@"; fi
}

# How a program ended, for a failure line.
how() {
	local rc=$1 s
	s=$(grep -m1 -E '^SUMMARY: |runtime error:|broken promise' "$out")
	if [ -n "$s" ]; then echo "$s"
	elif [ "$rc" = 124 ]; then echo "timed out after ${limit}s"
	elif [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128))"
	else echo "exit $rc"
	fi
}

# the cmocka programs, then the Python binding's tests (TAP too) against this build's library
for t in "$b"/tests/test_* tests/python/test_*.py; do
	[ -f "$t" ] || continue
	name=${t##*/}
	case $t in
	*.py)
		command -v python3 >/dev/null || { skip=$((skip + 1)); echo "skipped $name: no python3"; continue; }
		pre=
		# a sanitized library needs its runtimes loaded first (Python's own leaks are not ours)
		if nm -D "$b/libwsfuse.so" 2>/dev/null | grep -q __asan_; then
			pre="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
		fi
		LD_PRELOAD="$pre" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" WSFUSE_LIB="$b/libwsfuse.so" \
			bounded python3 "$t" >"$out" 2>&1 ;;
	*)
		[ -x "$t" ] || continue
		CMOCKA_MESSAGE_OUTPUT=TAP bounded "$t" >"$out" 2>&1 ;;
	esac
	rc=$?
	# TAP: "1..N", then "ok K - case", "not ok K - case" followed by "# why"
	# lines, or "ok K # SKIP case".
	read -r plan ok bad skipped < <(awk '
		/^1\.\.[0-9]+/ { sub(/^1\.\./, ""); plan += $1 }
		/^(not )?ok [0-9]+ # SKIP/ { skipped++; next }  # cmocka 1.1 says "not ok"
		/^ok [0-9]/ { ok++ }
		/^not ok [0-9]/ { bad++ }
		END { print plan + 0, ok + 0, bad + 0, skipped + 0 }' "$out")
	awk -v t="$name" '
		function flush() { if (c != "") print "FAIL " t ": " c (loc ? " (" loc ")" : "") (why ? ": " why : ""); c = "" }
		/^(not )?ok [0-9]/ { flush() }
		/^(not )?ok [0-9]+ # SKIP/ { next }
		/^not ok [0-9]/ { c = $0; sub(/^not ok [0-9]+ - /, "", c); loc = why = ""; next }
		c != "" && /^# .*: error: / { loc = $0; sub(/^# /, "", loc); sub(/: error: .*/, "", loc); next }
		c != "" && /^#/ && !/^# skip: / && why == "" { why = $0; sub(/^# */, "", why) }
		END { flush() }' "$out"
	# each skip's reason, the cases that share one on one line
	reasons=$(awk -v t="$name" '
		/^# skip: / { r = $0; sub(/^# skip: /, "", r); next }
		/^(not )?ok [0-9]+ # SKIP/ {
			s = $0; sub(/^(not )?ok [0-9]+ # SKIP */, "", s)
			w = r
			r = ""
			if (match(s, /: /)) { w = substr(s, RSTART + 2); s = substr(s, 1, RSTART - 1) }
			if (w == "") { print "FAIL " t ": " s ": skipped without a reason (skip_because)"; next }
			if (!(w in n)) order[++k] = w
			if (!n[w]++) first[w] = s
			next
		}
		/^(not )?ok [0-9]/ { r = "" }
		END {
			for (i = 1; i <= k; i++) {
				w = order[i]
				print "skipped " t ": " first[w] (n[w] > 1 ? " and " n[w] - 1 " more" : "") ": " w
			}
		}' "$out")
	[ -n "$reasons" ] && printf '%s\n' "$reasons"
	unexplained=$(grep -c '^FAIL ' <<<"$reasons")
	pass=$((pass + ok))
	fail=$((fail + bad + unexplained))
	skip=$((skip + skipped - unexplained))
	ok=$((ok + skipped))
	# a crash or a timeout cuts the plan short: count what never ran as failed
	if [ $((ok + bad)) -lt "$plan" ] || { [ "$rc" != 0 ] && [ "$bad" = 0 ]; }; then
		missing=$((plan - ok - bad))
		[ "$missing" -lt 1 ] && missing=1
		fail=$((fail + missing))
		echo "FAIL $name: $(how "$rc") after $((ok + bad)) of $plan tests"
	fi
done

# replay PROGRAM FILE...: each file through one fuzz entry point, one count a file
replay() {
	local prog=$1 f rc
	shift
	[ -x "$prog" ] || return
	for f in "$@"; do
		[ -f "$f" ] || continue
		case $f in */README*) continue ;; esac
		bounded "$prog" "$f" >"$out" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL $f: $(how "$rc")"
		fi
	done
}
replay "$b/tests/replay" tests/fuzz/regress/* tests/fuzz/corpus/*
replay "$b/tests/replay_launch" tests/fuzz/launch/*

echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ "$fail" = 0 ]
