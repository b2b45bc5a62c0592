#!/bin/bash
# summary.sh BUILD: the test suite of `make test` against the build in BUILD:
# run_unit.sh (cmocka unit tests, fuzz replays), run_golden.sh (golden
# files, cubins), run_cli.sh (the command line's files, streams and option
# values), run_combos.sh (random matmul specs through the compiler),
# run_spills.sh (default matmul schedules through ptxas: no spill),
# run_install.sh (make install, and programs built against the
# installed library), then run_wheel.sh (the Python wheel in a venv).  Their
# failure lines pass through; their count lines are added up into the one
# line printed last: "N passed, N failed[, N skipped]".
# Exits non-zero if anything failed, or a runner died without its count.
set -u
b=${1:?usage: summary.sh BUILD}
here=${0%/*}
pass=0 fail=0 skip=0
re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'

for runner in run_unit.sh run_golden.sh run_cli.sh run_combos.sh run_spills.sh run_install.sh run_wheel.sh; do
	counted=0 rc=0
	while IFS= read -r line; do
		case $line in
		"@@exit "*) rc=${line#@@exit }; continue ;;
		esac
		if [[ $line =~ $re ]]; then
			pass=$((pass + BASH_REMATCH[1]))
			fail=$((fail + BASH_REMATCH[2]))
			skip=$((skip + ${BASH_REMATCH[4]:-0}))
			counted=1
		else
			printf '%s\n' "$line"
		fi
	done < <(bash "$here/$runner" "$b" 2>&1; echo "@@exit $?")
	if [ $counted = 0 ]; then
		echo "FAIL $runner: exit $rc before its count"
		fail=$((fail + 1))
	fi
done

echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ $fail = 0 ]
