#!/bin/bash
# run_golden.sh [-u] [-n] [-t NAME] [-w WRAPPER] BUILD: golden-file tests of
# the CLI BUILD/wsfuse, run from the repository root.  The extension picks the
# mode (docs/testing.md):
#
#   tests/errors/NAME.yaml + NAME.err   compile --emit=cuda: exit 1, no stdout,
#                                       stderr exactly NAME.err (every pass runs, so
#                                       errors of lowering and stage choice count too)
#   SPEC + tests/golden/NAME.fir        compile --emit=fusion-ir: exit 0, stdout
#   SPEC + tests/golden/NAME.kir        compile --emit=kernel-ir
#   SPEC + tests/golden/NAME.cu         compile --emit=cuda, the inlined device header
#                                       left out (its first line stays)
#   SPEC + tests/golden/NAME.dot        compile --emit=dot (the fusion DAG); dot -Tsvg
#                                       must read it, where Graphviz is installed
#   SPEC + tests/golden/NAME.kernel.dot compile --emit=kernel-dot (roles, pipelines); the same
#   every SPEC                          compile --emit=cubin -o F: exit 0, an ELF file
#   tests/gpu/specs/*.yaml              the same (the GPU tests' kernels: ptxas warnings
#                                       wsfuse treats as errors show here, without a GPU)
#
# SPEC is examples/NAME.yaml, or tests/golden/NAME.yaml for specs that are
# not examples.  Every spec needs a .fir and every error test a .err; .kir
# and .cu are checked where they exist.  Cubins are skipped (and counted)
# while the CLI cannot emit one; TEST_CUBIN=require makes that a failure,
# TEST_CUBIN=off (or -n) leaves them out.
#
#   -u          update: rewrite each golden from the current output (creating
#               missing .err and .fir), through a temp file and a rename, and
#               list the files that changed
#   -n          no cubins
#   -t NAME     only the tests whose file name contains NAME
#   -w WRAPPER  run the CLI under WRAPPER (check-valgrind)
#
# Prints one line per failure (with a diff), then "N passed, N failed[, N skipped]".
set -u
usage() { echo "usage: run_golden.sh [-u] [-n] [-t NAME] [-w WRAPPER] BUILD" >&2; exit 2; }
update=0 cubin=${TEST_CUBIN:-auto} only='' wrap=''
while getopts unt:w: o; do
	case $o in
	u) update=1 ;;
	n) cubin=off ;;
	t) only=$OPTARG ;;
	w) wrap=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || usage
wsfuse=$1/wsfuse
limit=${TEST_TIMEOUT:-300}
export WSFUSE_CACHE=${WSFUSE_CACHE:-0}  # cubins come from NVRTC, not the cache
difflines=${DIFF_LINES:-40}
if [ ! -x "$wsfuse" ]; then
	echo "FAIL $wsfuse: not built"
	echo "0 passed, 1 failed"
	exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0 changed=0 same=0

bad() { fail=$((fail + 1)); echo "FAIL $*"; }

want() {
	[ -z "$only" ] && return 0
	case ${1##*/} in *"$only"*) return 0 ;; esac
	return 1
}

# cli ARGS...: runs the CLI (under the wrapper) with stdout, stderr and the
# exit status in $tmp/out, $tmp/err and $rc.
cli() {
	local to=
	command -v timeout >/dev/null && to="timeout $limit"
	# shellcheck disable=SC2086 # $to and $wrap are command words
	$to $wrap "$wsfuse" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}

# showdiff EXPECTED ACTUAL: a unified diff, at most $difflines lines.
showdiff() {
	diff -u "$1" "$2" | sed -e '1,2s/\t.*//' -e "2s|$tmp/out|(stdout)|" -e "2s|$tmp/err|(stderr)|" >"$tmp/diff"
	head -n "$difflines" "$tmp/diff"
	n=$(wc -l <"$tmp/diff")
	[ "$n" -gt "$difflines" ] && echo "... ($((n - difflines)) more diff lines)"
}

# head of stderr, indented, for a failure whose exit status is wrong
showerr() {
	[ -s "$tmp/err" ] && head -n 10 "$tmp/err" | sed 's/^/    /'
}

# install NEW GOLDEN: rename NEW over GOLDEN if they differ; say so.
install() {
	local what=updated
	if [ -f "$2" ] && cmp -s "$1" "$2"; then
		same=$((same + 1))
		return
	fi
	[ -f "$2" ] || what=new
	mkdir -p "${2%/*}"
	if ! cp "$1" "$2.tmp$$" || ! mv "$2.tmp$$" "$2"; then
		rm -f "$2.tmp$$"
		bad "$2: cannot write"
		return
	fi
	changed=$((changed + 1))
	echo "$what $2"
}

# ---- error goldens: one rule of the spec each ----
for y in tests/errors/*.yaml; do
	[ -f "$y" ] || continue
	want "$y" || continue
	e=${y%.yaml}.err
	if [ $update = 0 ] && [ ! -f "$e" ]; then
		bad "$y: missing golden $e"
		continue
	fi
	cli compile --emit=cuda "$y"
	if [ $update = 1 ]; then
		if [ "$rc" = 1 ] && [ ! -s "$tmp/out" ]; then
			install "$tmp/err" "$e"
		else
			bad "$y: exit $rc (expected 1)$([ -s "$tmp/out" ] && echo ', stdout not empty'): $e not updated"
			showerr
		fi
		continue
	fi
	why=
	[ "$rc" = 1 ] || why="$why, exit $rc (expected 1)"
	[ -s "$tmp/out" ] && why="$why, stdout not empty"
	cmp -s "$e" "$tmp/err" || why="$why, stderr differs"
	if [ -z "$why" ]; then
		pass=$((pass + 1))
	else
		bad "$y:${why#,}"
		cmp -s "$e" "$tmp/err" || showdiff "$e" "$tmp/err"
	fi
done

# ---- IR and CUDA goldens ----
specs=
for y in examples/*.yaml tests/golden/*.yaml; do
	[ -f "$y" ] && specs="$specs $y"
done
for y in $specs; do
	name=${y##*/}
	name=${name%.yaml}
	want "$y" || continue
	if [ "$y" != "examples/$name.yaml" ] && [ -f "examples/$name.yaml" ]; then
		bad "$y: examples/$name.yaml has the same name"
		continue
	fi
	for kind in fir kir cu dot kernel.dot; do
		g=tests/golden/$name.$kind
		case $kind in
		fir) emit=fusion-ir ;;
		kir) emit=kernel-ir ;;
		cu) emit=cuda ;;
		dot) emit=dot ;;
		kernel.dot) emit=kernel-dot ;;
		esac
		if [ ! -f "$g" ]; then
			[ $kind = fir ] || continue
			if [ $update = 0 ]; then
				bad "$y: missing golden $g"
				continue
			fi
		fi
		cli compile --emit="$emit" "$y"
		# the device header every kernel inlines is a file of its own (codegen/device.cuh):
		# a .cu golden keeps the line where it begins, and the generated code around it
		[ $kind = cu ] && sed -i '/^\/\/ ---- begin wsfuse_device.cuh/,/^\/\/ ---- end wsfuse_device.cuh/{/^\/\/ ---- begin/!d}' "$tmp/out"
		if [ "$rc" != 0 ]; then
			bad "$g: wsfuse compile --emit=$emit $y: exit $rc"
			showerr
		elif [ $update = 1 ]; then
			install "$tmp/out" "$g"
		elif cmp -s "$g" "$tmp/out"; then
			pass=$((pass + 1))
		else
			bad "$g: output differs"
			showdiff "$g" "$tmp/out"
		fi
	done
done

# a golden with no spec is a test that silently stopped running
for g in tests/golden/*; do
	[ -f "$g" ] || continue
	want "$g" || continue
	name=${g##*/}
	case $name in
	*.yaml) continue ;;
	*.kernel.dot) name=${name%.kernel.dot} ;;
	*.fir | *.kir | *.cu | *.dot) name=${name%.*} ;;
	*) bad "$g: unknown golden kind (expected .fir, .kir, .cu, .dot, .kernel.dot or .yaml)"; continue ;;
	esac
	[ -f "examples/$name.yaml" ] || [ -f "tests/golden/$name.yaml" ] ||
		bad "$g: no examples/$name.yaml or tests/golden/$name.yaml"
done

# ---- Graphviz reads every picture (skipped without dot) ----
if [ $update = 0 ]; then
	for g in tests/golden/*.dot; do
		[ -f "$g" ] || continue
		want "$g" || continue
		if ! command -v dot >/dev/null; then
			skip=$((skip + 1))
			echo "skipped $g: dot (Graphviz) is not installed"
		elif dot -Tsvg "$g" >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
			pass=$((pass + 1))
		else
			bad "$g: dot -Tsvg refuses it: $(head -c 400 "$tmp/err")"
		fi
	done
fi

# ---- cubins through NVRTC, once the CLI can emit them ----
if [ $update = 0 ] && [ "$cubin" != off ]; then
	ok=0 tried=0 first='' failed=''
	for y in $specs tests/gpu/specs/*.yaml; do
		want "$y" || continue
		tried=$((tried + 1))
		rm -f "$tmp/k.cubin"
		cli compile --emit=cubin "$y" -o "$tmp/k.cubin"
		magic=$(od -An -tx1 -N4 "$tmp/k.cubin" 2>/dev/null | tr -d ' \n')
		if [ "$rc" = 0 ] && [ "$magic" = 7f454c46 ]; then
			ok=$((ok + 1))
		elif [ "$rc" = 6 ] && [ "$cubin" != require ]; then
			# exit 6: a valid spec whose kernel family this version cannot build yet
			tried=$((tried - 1))
			skip=$((skip + 1))
			echo "skipped $y cubin: $(head -n 1 "$tmp/err")"
		else
			msg=$(head -n 1 "$tmp/err")
			[ "$rc" = 0 ] && msg="output is not an ELF file"
			[ -n "$first" ] || first="exit $rc: $msg"
			failed="$failed$y: cubin: exit $rc: $msg
"
		fi
	done
	if [ $ok = 0 ] && [ $tried -gt 0 ] && [ -z "$failed" ] && [ "$cubin" != require ]; then
		skip=$((skip + tried))
		echo "skipped $tried cubins: the CLI does not emit one yet ($first)"
	else
		pass=$((pass + ok))
		while IFS= read -r line; do
			[ -n "$line" ] && bad "$line"
		done <<<"$failed"
	fi
fi

if [ $update = 1 ]; then
	echo "update-golden: $changed changed, $same unchanged, $fail failed"
	[ $fail = 0 ]
	exit
fi
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ $fail = 0 ]
