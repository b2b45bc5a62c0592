#!/bin/bash
# run_cli.sh BUILD: tests of the command line BUILD/wsfuse that golden files
# cannot express: where -o writes (a device, a FIFO, a symbolic link, past a
# symbolic link planted at the old temp name), failures to write standard
# output, input past the spec limit, option values (every numeric option
# is read whole and range-checked; a bad one is a usage error naming it),
# the conventions of the options (getopt_long spellings, --, help per
# command, did-you-mean, options a command does not take), --version and
# env, and the self-contained --emit=cuda (README.md's nvcc command compiles
# it, matmul too; skipped without nvcc).  Each case counts once; a failing one prints "FAIL cli: CASE: why".
# Ends with "N passed, N failed[, N skipped]".
set -u
b=${1:?usage: run_cli.sh BUILD}
wsfuse=$b/wsfuse
spec=examples/pointwise_chain.yaml
export WSFUSE_CACHE=0
if [ ! -x "$wsfuse" ]; then
	echo "FAIL $wsfuse: not built"
	echo "0 passed, 1 failed"
	exit 1
fi
wsfuse=$(cd "$b" && pwd)/wsfuse  # the tests of -- run in another folder
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL cli: $1: $2"; }
skipped() { skip=$((skip + 1)); echo "skipped cli: $1: $2"; }

# cli ARGS...: runs the CLI with stdout, stderr and the exit status in
# $tmp/out, $tmp/err and $rc; a minute is a hang.
cli() {
	timeout 60 "$wsfuse" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}

# expect CASE STATUS TEXT: the last run exited with STATUS and TEXT is in its
# stderr (which must be empty when TEXT is).
expect() {
	if [ "$rc" != "$2" ]; then
		bad "$1" "exit $rc, expected $2; stderr: $(head -c 400 "$tmp/err")"
	elif [ -z "$3" ] && [ -s "$tmp/err" ]; then
		bad "$1" "stderr: $(head -c 400 "$tmp/err")"
	elif [ -n "$3" ] && ! grep -qF -- "$3" "$tmp/err"; then
		bad "$1" "stderr lacks '$3': $(head -c 400 "$tmp/err")"
	else
		ok
	fi
}

# same CASE FILE: FILE holds the CUDA of $spec.
same() {
	if cmp -s "$tmp/want.cu" "$2"; then ok; else bad "$1" "$2 is not the CUDA of $spec"; fi
}

"$wsfuse" compile --emit=cuda "$spec" >"$tmp/want.cu" || bad setup "cannot emit $spec"

# ---- -o ----

cli compile --emit=cuda "$spec" -o /dev/null
expect "-o /dev/null" 0 ""
if [ -c /dev/null ]; then ok; else bad "-o /dev/null" "/dev/null is no longer a character device"; fi

cli compile --emit=cuda "$spec" -o /dev/full
expect "-o /dev/full" 1 "/dev/full: error: cannot write: No space left on device"

mkfifo "$tmp/fifo"
timeout 60 cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
cli compile --emit=cuda "$spec" -o "$tmp/fifo"
wait "$reader"
expect "-o FIFO" 0 ""
same "-o FIFO" "$tmp/from-fifo"
if [ -p "$tmp/fifo" ]; then ok; else bad "-o FIFO" "the FIFO was replaced"; fi

mkdir "$tmp/d"
echo old >"$tmp/d/target"
ln -s target "$tmp/d/link"
cli compile --emit=cuda "$spec" -o "$tmp/d/link"
expect "-o symlink" 0 ""
same "-o symlink" "$tmp/d/target"
if [ -L "$tmp/d/link" ]; then ok; else bad "-o symlink" "the link was replaced"; fi

ln -s made "$tmp/d/dangling"
cli compile --emit=cuda "$spec" -o "$tmp/d/dangling"
expect "-o dangling symlink" 0 ""
same "-o dangling symlink" "$tmp/d/made"

# a link planted at the temp name wsfuse once used (PATH.tmp.PID) is not followed:
# the subshell's PID is the one wsfuse runs as after exec
echo victim >"$tmp/d/victim"
(
	ln -s victim "$tmp/d/out.cu.tmp.$BASHPID"
	exec "$wsfuse" compile --emit=cuda "$spec" -o "$tmp/d/out.cu" >"$tmp/out" 2>"$tmp/err" </dev/null
)
rc=$?
expect "planted temp link" 0 ""
same "planted temp link" "$tmp/d/out.cu"
if [ "$(cat "$tmp/d/victim")" = victim ]; then ok; else bad "planted temp link" "the link's target was written"; fi
rm -f "$tmp/d/out.cu.tmp."*

cli compile --emit=cuda "$spec" -o "$tmp/d"
expect "-o directory" 1 "$tmp/d: error: cannot write: Is a directory"

cli compile --emit=cuda "$spec" -o "$tmp/missing/out.cu"
expect "-o missing folder" 1 "$tmp/missing/out.cu: error: cannot write: No such file or directory"

cli compile --emit=cuda "$spec" -o ""
expect "-o empty" 2 "-o needs a file name"

left=$(find "$tmp" -name '*.tmp.*')
if [ -z "$left" ]; then ok; else bad "temp files" "left behind: $left"; fi

# ---- input ----

cli compile /dev/zero
expect "spec /dev/zero" 1 "/dev/zero: error: the spec is longer than the limit of 1048576 bytes (1 MiB)"

timeout 60 "$wsfuse" compile - </dev/zero >"$tmp/out" 2>"$tmp/err"
rc=$?
expect "endless stdin" 1 "<stdin>: error: the spec is longer than the limit of 1048576 bytes (1 MiB)"

timeout 60 "$wsfuse" compile - </ >"$tmp/out" 2>"$tmp/err"
rc=$?
expect "stdin a directory" 1 "wsfuse: cannot read standard input: Is a directory"

# ---- standard output ----

timeout 60 "$wsfuse" compile --emit=cuda "$spec" >/dev/full 2>"$tmp/err"
rc=$?
expect "stdout /dev/full" 1 "wsfuse: cannot write to standard output: No space left on device"

timeout 60 "$wsfuse" --help >/dev/full 2>"$tmp/err"
rc=$?
expect "--help to /dev/full" 1 "cannot write to standard output"

# ---- option values: one reader for each kind, the whole string, range-checked ----

# bad VALUE TEXT: `run SPEC VALUE` is a usage error (exit 2) whose message has TEXT
bad_option() {
	cli run "$spec" "$1"
	expect "$1" 2 "$2"
}
int="expects an integer from 1 to 2147483647, saw"
bad_option --iters=4294967297 "wsfuse: --iters $int '4294967297'"
bad_option --iters=5abc "wsfuse: --iters $int '5abc'"
bad_option --iters=0 "wsfuse: --iters $int '0'"
bad_option --iters=-3 "wsfuse: --iters $int '-3'"
bad_option "--iters= 5" "wsfuse: --iters $int ' 5'"
bad_option --iters= "wsfuse: --iters $int ''"
seed="expects an integer from 0 to 18446744073709551615, saw"
bad_option --seed=abc "wsfuse: --seed $seed 'abc'"
bad_option --seed=-1 "wsfuse: --seed $seed '-1'"
bad_option --seed=18446744073709551616 "wsfuse: --seed $seed '18446744073709551616'"
bad_option --seed=0x10 "wsfuse: --seed $seed '0x10'"
scale="expects a positive number up to 1e38 (such as 1000 or 2.5e3), saw"
for v in inf nan -1 0 0x10 1e39 1e-400 1e . 2,5 " 1"; do
	bad_option "--scale=$v" "wsfuse: --scale $scale '$v'"
done
dval="-D expects NAME=VALUE with VALUE a positive integer (decimal digits), saw"
for v in N=+16 N=16x N= "N= 16" N=-16 N=99999999999999999999; do
	cli compile --emit=fusion-ir "$spec" -D "$v"
	expect "-D $v" 2 "wsfuse: $dval '$v'"
done
cli compile --emit=fusion-ir "$spec" -D =16
expect "-D =16" 2 "wsfuse: -D expects NAME=VALUE, saw '=16'"
cli compile --emit=fusion-ir "$spec" -D M=0
expect "-D M=0" 1 "size 'M' = 0 is out of range (expected 1..1099511627776)"
cli compile --emit=fusion-ir "$spec" "-DM$(printf 'x%.0s' $(seq 70))=8"
expect "-D long name" 1 "is too long: 71 characters, more than the limit of 64"
cli compile --emit=fusion-ir "$spec" --cache-dir=
expect "--cache-dir=" 2 "wsfuse: --cache-dir needs a directory"
# a value of any length is quoted short, on one line
cli run "$spec" "--iters=$(printf '9%.0s' $(seq 200))"
expect "--iters long" 2 "saw '9999999999999999999999999999999999999999999999999999999999999999...'"

# good values pass: the spec that does not exist is the first thing wrong (exit 1, not 2)
cli run "$tmp/none.yaml" --bench --iters=2147483647 --seed=18446744073709551615 --scale=2.5e3 \
	--scale=.5 --scale=1000 --scale=1e38 -D M=4096
expect "good values" 1 "$tmp/none.yaml: error: cannot open"
cli run "$tmp/none.yaml" --seed=0 --seed 7
expect "--seed N" 1 "$tmp/none.yaml: error: cannot open"
cli bench "$tmp/none.yaml" --tune
expect "--tune" 1 "$tmp/none.yaml: error: cannot open"

# ---- conventions: getopt_long, per-command help, did-you-mean, refused options ----

# out CASE: the last run exited 0 with stdout the CUDA of $spec and nothing on stderr
out() {
	expect "$1" 0 ""
	same "$1" "$tmp/out"
}
cli compile --emit cuda "$spec"
out "--emit cuda"
cli compile "$spec" --emit=cuda
out "option after SPEC"
POSIXLY_CORRECT=1 cli compile "$spec" --emit=cuda
out "option after SPEC, POSIXLY_CORRECT"
cli compile --emit=cuda --output "$tmp/long.cu" "$spec"
expect "--output FILE" 0 ""
same "--output FILE" "$tmp/long.cu"
cli compile --emit=cuda -o- "$spec"
out "-o-"
cli compile --emit=cuda -DM=64 -D N=128 "$spec"
expect "-DM=64 -D N=128" 0 ""
timeout 60 "$wsfuse" compile --emit=cuda -- - <"$spec" >"$tmp/out" 2>"$tmp/err"
rc=$?
expect "-- -" 0 ""
cp "$spec" "$tmp/-lead.yaml"
(cd "$tmp" && timeout 60 "$wsfuse" compile --emit=fusion-ir -- -lead.yaml >out 2>err </dev/null)
rc=$?
expect "-- SPEC" 0 ""
(cd "$tmp" && timeout 60 "$wsfuse" compile --emit=fusion-ir -lead.yaml >out 2>err </dev/null)
rc=$?
expect "SPEC like an option" 2 "unknown option '-l'"
cli compile --emit=cuda "$spec" "$spec"
expect "two SPECs" 2 "more than one SPEC"

# help: on standard output, exit 0; each command lists its own options only
for c in compile run check bench help; do
	cli "$c" --help
	expect "$c --help" 0 ""
	if head -n 1 "$tmp/out" | grep -q "^usage: wsfuse $c "; then ok; else bad "$c --help" "first line: $(head -n 1 "$tmp/out")"; fi
	cp "$tmp/out" "$tmp/help1"
	cli help "$c"
	if [ "$rc" = 0 ] && cmp -s "$tmp/out" "$tmp/help1"; then ok; else bad "help $c" "differs from $c --help"; fi
done
cli compile "$spec" -h
expect "compile SPEC -h" 0 ""
if grep -q -- "--emit=OUTPUT" "$tmp/out"; then ok; else bad "-h" "no --emit in compile -h"; fi
cli compile --help
if grep -q -- "--emit" "$tmp/out" && ! grep -q -- "--check\|--iters" "$tmp/out"; then ok; else bad "compile --help" "wrong options"; fi
cli run --help
if grep -q -- "--check" "$tmp/out" && grep -q -- "--iters" "$tmp/out" && ! grep -q -- "--emit\|--output" "$tmp/out"; then
	ok
else
	bad "run --help" "wrong options"
fi
cli --help
expect "--help" 0 ""
for p in expand infer schedule lower circular_buffer warp_specialize sync; do
	if grep -qw -- "$p" "$tmp/out"; then ok; else bad "--help" "pass '$p' not listed"; fi
done
for o in --emit --output -D --dump-after --cache-dir --no-cache --check --bench --iters --seed --scale; do
	if grep -q -- "$o" "$tmp/out"; then ok; else bad "--help" "option $o not listed"; fi
done

# did you mean: options, values, commands, passes
cli compile "$spec" --emti=cuda
expect "did you mean --emit" 2 "wsfuse: unknown option '--emti=cuda': did you mean '--emit'?"
cli compile "$spec" --emit=cdua
expect "did you mean cuda" 2 "wsfuse: unknown --emit value 'cdua': did you mean 'cuda'?"
cli compile "$spec" --emit=nonsense
expect "unknown --emit value" 2 "wsfuse: unknown --emit value 'nonsense' (expected fusion-ir, kernel-ir, cuda"
cli compiel "$spec"
expect "did you mean compile" 2 "wsfuse: unknown command 'compiel': did you mean 'compile'?"
cli --verison
expect "did you mean --version" 2 "wsfuse: unknown option '--verison': did you mean '--version'?"
cli run "$spec" --chekc
expect "did you mean --check" 2 "did you mean '--check'?"
cli compile "$spec" --dump-after=lowr
expect "did you mean lower" 2 "wsfuse: unknown pass 'lowr' in --dump-after: did you mean 'lower'?"
cli compile "$spec" --dump-after=lower,xyzzy
expect "unknown pass" 2 "wsfuse: unknown pass 'xyzzy' in --dump-after (expected all, or pass names: expand, infer"
cli --emit=cuda "$spec"
expect "option before the command" 2 "wsfuse: '--emit=cuda' goes after the command (compile)"

# an option another command takes, or one this one would ignore, is refused
cli compile "$spec" --check
expect "compile --check" 2 "wsfuse: '--check' is not an option of compile: run, check and bench take it"
cli compile "$spec" --seed=1
expect "compile --seed" 2 "wsfuse: '--seed' is not an option of compile: run, check and bench take it"
cli compile "$spec" --tune
expect "compile --tune" 2 "wsfuse: '--tune' is not an option of compile: run, check and bench take it"
cli run "$spec" -o x.cu
expect "run -o" 2 "wsfuse: '-o' is not an option of run: compile takes it"
cli check "$spec" --emit=cuda
expect "check --emit" 2 "wsfuse: '--emit' is not an option of check: compile takes it"
cli run "$spec" --iters=5
expect "--iters without --bench" 2 "wsfuse: --iters counts the launches --bench times: add --bench, or use wsfuse bench"
cli check "$spec" --iters 5
expect "check --iters" 2 "wsfuse: --iters counts the launches --bench times"
cli compile "$spec" --no-cache=1
expect "--no-cache=1" 2 "wsfuse: '--no-cache=1' takes no value"
cli run "$spec" --c
expect "ambiguous" 2 "wsfuse: option '--c' is ambiguous: --cache-dir, --check"
cli compile "$spec" --emit
expect "--emit without a value" 2 "wsfuse: --emit needs one of fusion-ir, kernel-ir, cuda"
cli compile "$spec" -x
expect "-x" 2 "wsfuse: unknown option '-x'"
cli compile
expect "no SPEC" 2 "wsfuse: compile needs a SPEC"
cli
expect "no command" 2 "wsfuse: missing command"
cli help compile run
expect "help two commands" 2 "help takes one COMMAND"

# ---- --version and env: what wsfuse finds, never a failure for want of NVRTC, a driver or a GPU ----

# has CASE TEXT...: each TEXT starts a line of the last run's stdout
has() {
	local c=$1 t
	shift
	for t in "$@"; do
		if grep -q -- "^$t" "$tmp/out"; then ok; else bad "$c" "no line starting '$t': $(head -c 400 "$tmp/out")"; fi
	done
}
cli --version
expect "--version" 0 ""
has "--version" "wsfuse [0-9][0-9.]*$" "nvrtc: " "driver: " "gpu"
WSFUSE_LIBCUDA_PATH=$tmp/no-libcuda.so WSFUSE_NVRTC_PATH=$tmp/no-nvrtc.so cli --version
expect "--version without NVRTC and driver" 0 ""
has "--version without NVRTC and driver" "nvrtc: none (cannot load NVRTC from WSFUSE_NVRTC_PATH: $tmp/no-nvrtc.so" \
	"driver: none ($tmp/no-libcuda.so: cannot open" "gpu: none"
WSFUSE_CACHE=1 WSFUSE_CACHE_DIR=$tmp/envcache cli env
expect "env" 0 ""
has "env" "wsfuse " "nvrtc" "driver: " "gpu" "nvrtc options: --gpu-architecture=sm_90a" "built with: " \
	"cache: $tmp/envcache" "  WSFUSE_CACHE_DIR=$tmp/envcache"
cli env "$spec"
expect "env SPEC" 2 "wsfuse: env takes no SPEC"
cli --version extra
expect "--version extra" 2 "wsfuse: --version takes nothing after it"

# ---- --lineinfo: line tables that name the CUDA's file, for profilers ----

if "$wsfuse" --version | grep -q '^nvrtc: none'; then
	skipped "--lineinfo" "no NVRTC"
else
	mkdir "$tmp/li1" "$tmp/li2"
	for d in li1 li2; do
		(cd "$tmp/$d" && WSFUSE_CACHE=1 WSFUSE_CACHE_DIR=$tmp/licache timeout 120 "$wsfuse" compile \
			--emit=ptx --lineinfo "$OLDPWD/$spec" >out 2>err </dev/null)
		rc=$?
		cp "$tmp/$d/err" "$tmp/err"
		expect "--lineinfo in $d" 0 ""
		# the cache keeps one cubin a folder: each names the file where it was compiled, in its dump folder
		if grep -q "^[[:space:]]*\.file[[:space:]]*1 \"$tmp/$d/pointwise_chain-[0-9a-f]\{16\}/pointwise_chain.cu\"" \
			"$tmp/$d/out" && grep -q '^[[:space:]]*\.loc' "$tmp/$d/out"; then
			ok
		else
			bad "--lineinfo in $d" "no .loc, or .file is not $tmp/$d/pointwise_chain-KEY/pointwise_chain.cu: $(grep '\.file' "$tmp/$d/out")"
		fi
	done
	WSFUSE_LINEINFO=1 cli compile --emit=ptx "$spec"
	if [ "$rc" = 0 ] && grep -q '^[[:space:]]*\.loc' "$tmp/out"; then ok; else bad "WSFUSE_LINEINFO=1" "no .loc"; fi
	cli compile --emit=ptx "$spec"
	if [ "$rc" = 0 ] && ! grep -q '^[[:space:]]*\.loc' "$tmp/out"; then ok; else bad "no --lineinfo" "has .loc"; fi
fi
# ---- pictures: --emit=dot and --emit=kernel-dot (goldens hold their text) ----

cli compile --emit=dot "$spec"
if [ "$rc" = 0 ] && head -n 2 "$tmp/out" | grep -q '^digraph "pointwise_chain" {$'; then ok; else bad "--emit=dot" "exit $rc"; fi
cli compile --emit kernel-dot "$spec" -o "$tmp/k.dot"
if [ "$rc" = 0 ] && grep -q 'cluster_pipe1' "$tmp/k.dot"; then ok; else bad "--emit=kernel-dot" "exit $rc"; fi
cli compile -v --emit=dot "$spec"
expect "-v --emit=dot" 2 "wsfuse: -v reports what the kernel takes; --emit=dot stops before there is a kernel"
cli compile --lineinfo --emit=kernel-dot "$spec"
expect "--lineinfo --emit=kernel-dot" 2 "--emit=kernel-dot stops before them"
cli compile --emit=ddot "$spec"
expect "--emit=ddot" 2 "did you mean 'dot'?"

# ---- --emit=grad: the backward as a spec, which reads back (test_grad.c checks its values) ----

cli compile --emit=grad examples/layernorm.yaml -o "$tmp/ln_grad.yaml"
expect "--emit=grad" 0 ""
# read back (and differentiated again: the backward is no one kernel, which --emit=fusion-ir would want)
cli compile --emit=grad "$tmp/ln_grad.yaml"
if [ "$rc" = 0 ] && grep -q '^  grad_grad_x: {dtype: bf16, shape: \[M, N\]}$' "$tmp/out"; then ok; else
	bad "--emit=grad reads back" "exit $rc: $(head -c 300 "$tmp/err")"; fi
timeout 60 "$wsfuse" compile --emit=grad - <examples/layernorm.yaml >"$tmp/out" 2>"$tmp/err"
if cmp -s "$tmp/out" "$tmp/ln_grad.yaml"; then ok; else bad "--emit=grad -" "standard input gives another text"; fi
cli compile --emit=grad --grad-of=bias examples/bias_silu_mul.yaml
if [ "$rc" = 0 ] && grep -q '^  grad_bias: {dtype: bf16}$' "$tmp/out" && ! grep -q 'grad_x\|grad_gate' "$tmp/out"; then ok; else
	bad "--emit=grad --grad-of" "exit $rc: $(head -c 300 "$tmp/err") $(tail -c 300 "$tmp/out")"; fi
cli compile --emit=grad --grad-of=bias,nope examples/bias_silu_mul.yaml
expect "--grad-of an unknown input" 2 "option grad-of names 'nope', which is not a float input of fusion 'bias_silu_mul'"
cli compile --emit=grad examples/layernorm.yaml -o /dev/full
expect "--emit=grad -o /dev/full" 1 "cannot write /dev/full"
printf 'fusion: p\ninputs:\n  x: {dtype: f32, shape: [4, 8]}\nops:\n  - {out: y, op: pow, in: [-2.0, x]}\noutputs:\n  y: {}\n' >"$tmp/negpow.yaml"
cli compile --emit=grad "$tmp/negpow.yaml"
expect "--emit=grad not derived yet" 6 "negpow.yaml:5:5: error: the gradient of 'pow' with respect to its exponent"
# a sum without keepdim over the last dim: its adjoint unsqueezed (a reshape), a row kernel's copy
printf 'fusion: s\ninputs:\n  x: {dtype: f32, shape: [4, 8]}\nops:\n  - {out: y, op: sum, in: [x], keepdim: false}\noutputs:\n  y: {}\n' >"$tmp/nokeep.yaml"
cli compile --emit=grad "$tmp/nokeep.yaml"
if [ "$rc" = 0 ] && grep -q 'op: reshape, in: \[grad_y\], shape: \[4, 1\]' "$tmp/out"; then ok; else
	bad "--emit=grad without keepdim" "exit $rc: $(head -c 300 "$tmp/err") $(head -c 600 "$tmp/out")"; fi
printf 'fusion: v\ninputs:\n  x: {dtype: f32, shape: [4, 8]}\nops:\n  - {out: a, op: slice, in: [x], dim: 1, step: 2}\n  - {out: y, op: exp, in: [a]}\noutputs:\n  y: {}\n' >"$tmp/vgrad.yaml"
cli compile --emit=grad "$tmp/vgrad.yaml"
expect "--emit=grad of a step slice" 6 "vgrad.yaml:5:5: error: the gradient of a slice with a step (a strided scatter) is not derived yet"
# a slice's gradient is a pad, and the backward compiles back
sed 's/, step: 2/, end: 4/' "$tmp/vgrad.yaml" >"$tmp/vgrad1.yaml"
cli compile --emit=grad -o "$tmp/vgrad1_grad.yaml" "$tmp/vgrad1.yaml"
expect "--emit=grad of a slice" 0 ""
if grep -qF 'op: pad, in: [' "$tmp/vgrad1_grad.yaml"; then ok; else bad "--emit=grad of a slice: a pad" "$(cat "$tmp/vgrad1_grad.yaml")"; fi
cli compile "$tmp/vgrad1_grad.yaml"
expect "the backward of a slice compiles" 0 ""
cli compile --emit=grd "$spec"
expect "--emit=grd" 2 "did you mean 'grad'?"

# ---- WSFUSE_DUMP: the library writes outputs of every compile, the CLI's too ----

WSFUSE_DUMP=kernel-ir,fusion-ir,kernel-dot WSFUSE_DUMP_DIR=$tmp/dump cli compile --emit=kernel-ir "$spec"
kdir=$(ls -d "$tmp"/dump/pointwise_chain-* 2>/dev/null | head -n 1)
expect "WSFUSE_DUMP" 0 "note: WSFUSE_DUMP wrote $kdir/pointwise_chain.fir, $kdir/pointwise_chain.kir, $kdir/pointwise_chain.kernel.dot"
if cmp -s "$tmp/out" "$kdir/pointwise_chain.kir"; then ok; else bad "WSFUSE_DUMP" "the .kir is not what --emit printed"; fi
if cmp -s "$tmp/k.dot" "$kdir/pointwise_chain.kernel.dot"; then ok; else bad "WSFUSE_DUMP" "the .kernel.dot differs"; fi
# a folder a kernel: the spec at other sizes dumps beside it, not over it
WSFUSE_DUMP=kernel-ir WSFUSE_DUMP_DIR=$tmp/dump cli compile --emit=kernel-ir -D M=64 "$spec"
if [ "$rc" = 0 ] && [ "$(ls -d "$tmp"/dump/pointwise_chain-*/pointwise_chain.kir | wc -l)" = 2 ]; then ok; else
	bad "WSFUSE_DUMP, other sizes" "not two folders: $(ls "$tmp/dump")"; fi
WSFUSE_DUMP=kernel-ir,cdua cli compile --emit=kernel-ir "$spec"
expect "WSFUSE_DUMP=cdua" 2 "error: unknown output 'cdua' in WSFUSE_DUMP (expected fusion-ir, kernel-ir, cuda"

# ---- WSFUSE_OVERRIDE_DIR: a hand-edited kernel compiled in place of the generated one ----

mkdir -p "$tmp/ovr"
WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=cuda "$spec"
expect "WSFUSE_OVERRIDE_DIR, no file" 0 ""
same "WSFUSE_OVERRIDE_DIR, no file" "$tmp/out"
WSFUSE_DUMP=cuda WSFUSE_DUMP_DIR=$tmp/dumped cli compile --emit=cuda "$spec"
sed 's|^extern "C" __global__|__device__ int wsf_override_marker;  // hand-edited\n&|' "$tmp"/dumped/pointwise_chain-*/pointwise_chain.cu >"$tmp/edited.cu"
cp "$tmp/edited.cu" "$tmp/ovr/pointwise_chain.cu"
WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=cuda "$spec"
expect "WSFUSE_OVERRIDE_DIR" 0 "note: kernel 'pointwise_chain' compiled from $tmp/ovr/pointwise_chain.cu (WSFUSE_OVERRIDE_DIR), not from its generated CUDA"
if cmp -s "$tmp/out" "$tmp/edited.cu" && ! cmp -s "$tmp/out" "$tmp/want.cu"; then ok; else
	bad "WSFUSE_OVERRIDE_DIR" "--emit=cuda did not print the edited file"; fi
if "$wsfuse" --version | grep -q '^nvrtc: none'; then
	skipped "WSFUSE_OVERRIDE_DIR --emit=ptx" "no NVRTC here"
else
	WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=ptx "$spec"
	expect "WSFUSE_OVERRIDE_DIR --emit=ptx" 0 "compiled from $tmp/ovr/pointwise_chain.cu"
	if grep -q "wsf_override_marker" "$tmp/out"; then ok; else bad "WSFUSE_OVERRIDE_DIR --emit=ptx" "the PTX is not the edited kernel's"; fi
	echo 'garbage(' >"$tmp/ovr/pointwise_chain.cu"
	WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=ptx "$spec"
	expect "WSFUSE_OVERRIDE_DIR, bad CUDA" 5 "pointwise_chain.cu(1): error"
fi
printf 'int a;\0' >"$tmp/ovr/pointwise_chain.cu"
WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=cuda "$spec"
expect "WSFUSE_OVERRIDE_DIR, NUL byte" 1 "WSFUSE_OVERRIDE_DIR: $tmp/ovr/pointwise_chain.cu has a NUL byte at offset 6: CUDA source is text"
rm "$tmp/ovr/pointwise_chain.cu" && mkdir "$tmp/ovr/pointwise_chain.cu"
WSFUSE_OVERRIDE_DIR=$tmp/ovr cli compile --emit=cuda "$spec"
expect "WSFUSE_OVERRIDE_DIR, a folder" 1 "WSFUSE_OVERRIDE_DIR: cannot read $tmp/ovr/pointwise_chain.cu: Is a directory"
if [ ! -s "$tmp/out" ]; then ok; else bad "WSFUSE_OVERRIDE_DIR, a folder" "wrote CUDA anyway"; fi

# ---- -v and --emit=ptxas: what the kernel takes ----

cli compile -v --emit=kernel-ir "$spec"
expect "-v --emit=kernel-ir" 0 "  threads: 256 a CTA"
for t in "kernel wsfuse_pointwise_chain" "  registers: not known: ptxas counts them" \
	"  grid: 8192 CTAs, one a tile, at M=8192 N=4096"; do
	if grep -qF -- "$t" "$tmp/err"; then ok; else bad "-v --emit=kernel-ir" "no '$t': $(head -c 400 "$tmp/err")"; fi
done
# -v names as unbound only the sizes with no value (from sizes: or -D), and
# says when a launch would refuse sizes that all have one (issue 63)
sed 's/^  N: 4096 .*//' "$spec" >"$tmp/nodefault.yaml"
for c in "|no value here (-D gives one): N|M=" "-D M=64|no value here (-D gives one): N|M=" \
	"-D N=64|one a tile, at M=8192 N=64|unbound" \
	"-D M=1099511627776 -D N=1024|none at M=1099511627776 N=1024: a launch at these sizes is refused|no value"; do
	IFS='|' read -r defs want unwanted <<<"$c"
	# shellcheck disable=SC2086 # DEFS is words
	cli compile -v --emit=kernel-ir -o /dev/null $defs "$tmp/nodefault.yaml"
	if [ "$rc" = 0 ] && grep -qF -- "$want" "$tmp/err" && ! grep "grid:" "$tmp/err" | grep -qF -- "$unwanted"; then
		ok
	else
		bad "-v $defs" "exit $rc: $(head -c 400 "$tmp/err")"
	fi
done
if "$wsfuse" --version | grep -q '^nvrtc: none'; then
	skipped "-v" "no NVRTC"
	skipped "--emit=ptxas" "no NVRTC"
else
	cli compile -v "$spec" -D M=64 -o /dev/null
	if [ "$rc" = 0 ] && grep -q '^  registers: [1-9][0-9]* a thread; 0 bytes spill stores, 0 bytes spill loads' "$tmp/err" &&
		grep -q '^  shared memory: [0-9]* bytes a CTA, [0-9]* dynamic + [0-9]* static$' "$tmp/err" &&
		grep -q '^  occupancy: [1-9][0-9]* CTAs an SM' "$tmp/err" &&
		grep -q '^  grid: 64 CTAs, one a tile, at M=64 N=4096$' "$tmp/err"; then
		ok
	else
		bad "-v" "exit $rc: $(head -c 600 "$tmp/err")"
	fi
	cli compile --emit=ptxas "$spec"
	if [ "$rc" = 0 ] && grep -q "Compiling entry function 'wsfuse_pointwise_chain'" "$tmp/out" &&
		grep -q "Used [0-9]* registers" "$tmp/out"; then
		ok
	else
		bad "--emit=ptxas" "exit $rc: $(head -c 400 "$tmp/out")"
	fi
fi
cli compile -v --emit=fusion-ir "$spec"
expect "-v --emit=fusion-ir" 2 "wsfuse: -v reports what the kernel takes; --emit=fusion-ir stops before there is a kernel"

cli compile --emit=cuda --lineinfo "$spec"
expect "--emit=cuda --lineinfo" 2 "wsfuse: --lineinfo adds line tables to the PTX and cubin; --emit=cuda stops before them"
cli compile -lineinfo "$spec"
expect "-lineinfo" 2 "wsfuse: unknown option '-lineinfo': did you mean '--lineinfo'?"
cli compile "$spec" '-lineinfo=%n%s%s'
expect "-lineinfo=%n" 2 "wsfuse: unknown option '-lineinfo=%n%s%s': did you mean '--lineinfo=%n%s%s'?"

# ---- a view: exit 6 at the op until lowering builds views; --dump-after=infer prints the fusion (stderr) ----

printf '%s\n' 'fusion: v' 'inputs:' '  x: {dtype: bf16, shape: [T, 128]}' 'ops:' \
	'  - {out: [a, b], op: chunk, in: [x], chunks: 2, dim: -1}' '  - {out: c, op: cat, in: [b, a], dim: -1}' \
	'  - {out: y, op: slice, in: [c], dim: -1, end: 32}' 'outputs:' '  y: {}' >"$tmp/view.yaml"
cli compile --emit=fusion-ir --dump-after=infer "$tmp/view.yaml"
expect "a view, exit 6" 6 "view.yaml:7:5: error: 'slice' (a view) in this kernel is not implemented yet: a view of a cat"
if grep -qF 'b: bf16[T, 64] = slice(x) dim=1 chunk=1/2' "$tmp/err"; then ok; else bad "--dump-after=infer of a view" "$(head -c 400 "$tmp/err")"; fi
# -v says how each view of an input is read (two pads' boxes off 16 bytes: element by element)
cli compile -v tests/gpu/specs/view_cat_pad.yaml
expect "-v of views" 0 "views of inputs, read through the input's pointer: 3 as rows of 16-byte loads at an offset, 0 one element a row, 2 element by element"

# ---- docs/spec.md: its opening example compiles; it cites only files of the repository ----

awk '/^```yaml$/ { f = 1; next } f && /^```$/ { exit } f' docs/spec.md >"$tmp/spec-md.yaml"
if "$wsfuse" --version | grep -q '^nvrtc: none'; then
	cli compile --emit=cuda "$tmp/spec-md.yaml" -o "$tmp/spec-md.cu"
else
	cli compile "$tmp/spec-md.yaml" -o "$tmp/spec-md.cubin"
fi
expect "docs/spec.md's first example" 0 ""
# every `path/with/slashes.ext` the page names is a file here (NAME and PASS stand for any)
for f in $(grep -o '`[A-Za-z0-9_.-]*/[A-Za-z0-9_./-]*\.[a-z]*`' docs/spec.md | tr -d '`' | sort -u); do
	case $f in
	*NAME* | */) continue ;;
	esac
	if [ -e "$f" ]; then ok; else bad "docs/spec.md" "cites $f, which is not in the repository"; fi
done

# ---- --emit=cuda is self-contained: no #include, and README.md's nvcc command compiles it ----

# that command, read from the page (NAME.cu its file), is the only one the docs give
nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
doc_nvcc=$(tr '\n' ' ' <README.md | grep -o '`nvcc [^`]*NAME\.cu`' | head -n 1 | tr -d '`')
if [ -n "$doc_nvcc" ]; then ok; else bad "README.md" "gives no \`nvcc ... NAME.cu\` command"; fi
for f in README.md docs/*.md; do
	tr '\n' ' ' <"$f" | grep -o '`nvcc [^`]*`' | tr -d '`' | while read -r c; do
		case "$doc_nvcc" in
		"$c"*) ;;
		*) echo "$c" ;;
		esac
	done >"$tmp/nvcc.docs"
	if [ ! -s "$tmp/nvcc.docs" ]; then ok; else bad "$f" "an nvcc command other than README.md's: $(head -n 1 "$tmp/nvcc.docs")"; fi
done
# a pointwise, a row and two matmul kernels (wgmma, setmaxnreg, clusters)
for y in "$spec" examples/layernorm.yaml examples/gemm_bias_gelu.yaml tests/golden/gemm_split_cluster.yaml; do
	n=${y##*/}
	n=${n%.yaml}
	cli compile --emit=cuda "$y" -o "$tmp/$n.cu"
	expect "$n.cu" 0 ""
	if ! grep -q '^[[:space:]]*#[[:space:]]*include' "$tmp/$n.cu"; then ok; else bad "$n.cu" "has an #include"; fi
	if [ ! -x "$nvcc" ]; then
		skipped "nvcc $n.cu" "no nvcc (set CUDA_HOME)"
		continue
	fi
	read -r -a words <<<"${doc_nvcc/#nvcc/$nvcc}"
	words=("${words[@]/#NAME.cu/$tmp/$n.cu}")
	if timeout 300 "${words[@]}" -o "$tmp/$n.o" >"$tmp/nvcc.log" 2>&1; then
		ok
	else
		bad "nvcc $n.cu" "${words[*]}: $(head -c 600 "$tmp/nvcc.log")"
	fi
done

echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ "$fail" = 0 ]
