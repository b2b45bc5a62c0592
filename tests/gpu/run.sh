#!/bin/bash
# run.sh BUILD: the GPU tests (make check-gpu).  Runs `wsfuse run --check` on
# every example, the opening example of docs/spec.md, and on every line of
# tests/gpu/sweep.txt, each of which is
# `SPEC [-D NAME=VALUE]... [extra flags]` ('#' starts a comment).  --check
# compares every output with the host reference; any non-zero exit fails,
# 3 (no GPU) included, since a GPU was found, except 6: a kernel family
# this version cannot build yet is counted as skipped.  Without a GPU (nvidia-smi
# missing, failing or listing none) it prints "skipped: no GPU" and exits 0.
# GPU_TIMEOUT (seconds, default 300) bounds each run; SWEEP names another
# sweep file (default: tests/gpu/sweep.txt); GPU_JOBS (default 8) runs that
# many of these cases at a time on the one GPU (cases.sh; 1: one by one).
# With torch importable it also runs ragged_row.py (single rows through the
# python binding), fp8_bits.py (every cast to and from fp8 bit for bit
# against torch), tile_consumer.py (the per-tile signal's consumer role
# inside the kernel, under late stores),
# pdl_chain.py (kernels back to back under programmatic dependent launch),
# launch_path.py (the binding's fast path and the tensor maps kept between launches),
# tune.py (the measured choice: candidates timed at the first launch, the record read back),
# stream_k.py (stream-K's workspace: a stream each, a larger grid, CUDA graph capture; the default's
# clusters at other sizes),
# huge_dims.py (tensors past 2^31 rows: refused where TMA's coordinates end, right where a view fits),
# ragged_tiles.py (a ragged last row or column of tiles moved inside: bit for bit the shape up's),
# misaligned_k.py (operands whose rows are not 128-byte aligned: the cluster chosen, the result),
# wave_tiles.py (the default tile narrowed to fill the last wave: the width chosen, the result),
# clusters.py (clusters of up to 8 CTAs in one or two dimensions, hinted and by default: the cluster, the result),
# gemm_rs.py (GEMM + reduce-scatter tile by tile, two ranks on one GPU),
# ag_gemm.py (all-gather + GEMM's load side: a GEMM whose A arrives by row tiles),
# examples/distributed/gemm_reduce_scatter.py (bf16 and f32 partials) and ag_gemm.py on 2 GPUs where there are 2,
# tests/python/test_torch.py --gpu (the torch custom op), one count per test,
# and with triton signal_consumer.py (the per-tile signal under a consumer
# kernel on another stream).
set -u
b=${1:?usage: run.sh BUILD}
here=${0%/*}
limit=${GPU_TIMEOUT:-300}
if ! gpus=$(nvidia-smi -L 2>/dev/null) || ! grep -q '^GPU ' <<<"$gpus"; then
	echo "skipped: no GPU"
	exit 0
fi
[ -x "$b/wsfuse" ] || { echo "FAIL $b/wsfuse: not built"; echo "0 passed, 1 failed"; exit 1; }
out=$(mktemp) || exit 1
trap 'rm -f "$out" "$out.list" "$out.list.yaml" "$out.cases"' EXIT
pass=0 fail=0 skip=0

# check SPEC [ARGS...]: one `wsfuse run --check` case
check() {
	local to='' t0=$SECONDS
	command -v timeout >/dev/null && to="timeout $limit"
	$to "$b/wsfuse" run --check "$@" >"$out" 2>&1 </dev/null
	rc=$?
	if [ $rc = 0 ]; then
		pass=$((pass + 1))
		echo "ok   $((SECONDS - t0))s $*"
	elif [ $rc = 6 ]; then
		skip=$((skip + 1))  # a kernel family this version does not build yet
		echo "skipped gpu: $*: $(head -n 1 "$out")"
	else
		fail=$((fail + 1))
		echo "FAIL gpu: $*: exit $rc"
		tail -n 5 "$out" | sed 's/^/    /'
	fi
}

# the examples, docs/spec.md's opening example and the sweep's lines
# (cases.sh), GPU_JOBS at a time
# shellcheck source=tests/gpu/cases.sh
. "$here/cases.sh"
gpu_cases "$b" "${GPU_JOBS:-8}" . "$out.list" "$out.cases" show
pass=$cases_pass fail=$cases_fail skip=$cases_skip
rm -f "$out.list" "$out.cases"

# the CLI's measured choice: `run --check --tune` into an empty cache folder
# times the candidates, checks the kernel chosen and says which (a line
# `tune NAME: CHOICE`), and leaves the record under tune/; a second run reads
# the record back and chooses the same
tune_cli() {
	local dir t0=$SECONDS first
	dir=$(mktemp -d) || return
	if check --tune --cache-dir="$dir" examples/gemm_bias_gelu.yaml -D M=1000 -D N=3000 -D K=1000 &&
		first=$(grep '^tune gemm_bias_gelu: ' "$out") && [ -n "$(ls "$dir/tune" 2>/dev/null)" ] &&
		check --tune --cache-dir="$dir" examples/gemm_bias_gelu.yaml -D M=1000 -D N=3000 -D K=1000 &&
		[ "$(grep '^tune gemm_bias_gelu: ' "$out")" = "$first" ]; then
		echo "ok   $((SECONDS - t0))s run --tune: $first, read back"
	elif [ $rc = 0 ]; then   # both runs passed their check: what the tune line or record lacked
		fail=$((fail + 1))
		echo "FAIL gpu: run --tune: no tune line, no record in $dir/tune, or a different choice read back"
		sed 's/^/    /' "$out"
	fi
	rm -rf "$dir"
}
tune_cli

# torch_tests: tests/python/test_torch.py --gpu (the torch custom op: compile,
# CUDA graphs, empty inputs, requires grad), one count per TAP line
torch_tests() {
	local t=$here/../python/test_torch.py t0=$SECONDS to='' rc line bad=0
	command -v timeout >/dev/null && to="timeout $limit"
	WSFUSE_LIB="$b/libwsfuse.so" $to python3 "$t" --gpu >"$out" 2>&1 </dev/null
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP "*)
			skip=$((skip + 1))
			echo "skipped gpu: test_torch.py: ${line#*# SKIP }" ;;
		"ok "*)
			pass=$((pass + 1))
			echo "ok   test_torch.py: ${line#ok * - }" ;;
		"not ok "*)
			fail=$((fail + 1)) bad=$((bad + 1))
			echo "FAIL gpu: test_torch.py: ${line#not ok * - }" ;;
		esac
	done <"$out"
	if [ $bad -gt 0 ]; then
		grep '^# ' "$out" | tail -n 6 | sed 's/^/    /'
		echo "    (every traceback: WSFUSE_LIB=$b/libwsfuse.so python3 $t --gpu)"
	elif [ $rc != 0 ]; then   # a crash or a timeout before the TAP says why
		fail=$((fail + 1))
		echo "FAIL gpu: $t: exit $rc after $((SECONDS - t0))s"
		tail -n 5 "$out" | sed 's/^/    /'
	fi
}

# py_check SCRIPT: one python test of this folder, given the build; one count
py_check() {
	local t0=$SECONDS to=''
	command -v timeout >/dev/null && to="timeout $limit"
	if $to python3 "$here/$1" "$b" >"$out" 2>&1; then
		pass=$((pass + 1))
		echo "ok   $((SECONDS - t0))s $here/$1"
	else
		fail=$((fail + 1))
		echo "FAIL gpu: $here/$1"
		tail -n 8 "$out" | sed 's/^/    /'
	fi
}

# one row of a width that is not a multiple of 8, through the python binding,
# the torch custom op, and the per-tile signal under a consumer kernel (triton)
if python3 -c 'import torch' 2>/dev/null; then
	py_check ragged_row.py
	py_check fp8_bits.py
	py_check tile_consumer.py
	py_check pdl_chain.py
	py_check launch_path.py
	py_check tune.py
	py_check stream_k.py
	py_check huge_dims.py
	py_check ragged_tiles.py
	py_check misaligned_k.py
	py_check wave_tiles.py
	py_check clusters.py
	py_check gemm_rs.py
	py_check ag_gemm.py
	# GEMM + reduce-scatter across 2 GPUs (torchrun), where there are 2; never NVLink multicast
	for ex in "gemm_reduce_scatter.py --partials bf16" "gemm_reduce_scatter.py --partials f32" \
		"gemm_reduce_scatter.py --owner cooperative" "gemm_reduce_scatter.py --send role" \
		"gemm_reduce_scatter.py --send role --owner pingpong" "gemm_reduce_scatter.py --send add" \
		"gemm_reduce_scatter.py --send add --owner pingpong" "ag_gemm.py"; do
		if [ "$(grep -c '^GPU ' <<<"$gpus")" -ge 2 ] && command -v torchrun >/dev/null; then
			t0=$SECONDS
			# shellcheck disable=SC2086 # the example's name, then its options
			if NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
				WSFUSE_LIB="$b/libwsfuse.so" PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}" \
				timeout "$limit" torchrun --nproc-per-node 2 "$here/../../examples/distributed/"$ex \
				--shape 4096x4096x4096 >"$out" 2>&1; then
				pass=$((pass + 1))
				echo "ok   $((SECONDS - t0))s examples/distributed/$ex (2 GPUs)"
			else
				fail=$((fail + 1))
				echo "FAIL gpu: examples/distributed/$ex (2 GPUs)"
				tail -n 8 "$out" | sed 's/^/    /'
			fi
		else
			skip=$((skip + 1))
			echo "skipped gpu: examples/distributed/$ex: needs 2 GPUs and torchrun"
		fi
	done
	torch_tests
	if python3 -c 'import triton' 2>/dev/null; then
		py_check signal_consumer.py
	else
		skip=$((skip + 1))
		echo "skipped gpu: $here/signal_consumer.py: no triton"
	fi
else
	skip=$((skip + 8))
	echo "skipped gpu: $here/ragged_row.py, $here/tile_consumer.py, $here/pdl_chain.py, $here/launch_path.py, $here/tune.py, $here/stream_k.py, $here/gemm_rs.py, $here/ag_gemm.py, examples/distributed/gemm_reduce_scatter.py, examples/distributed/ag_gemm.py, tests/python/test_torch.py: no torch"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
