#!/bin/bash
# tp2.sh BUILD [OUTDIR]: the tensor-parallel examples on 2 GPUs in one batch, for the first
# minutes a two-GPU machine is lent (device: nvidia-h200-x2).  Checks and times
# examples/distributed/gemm_reduce_scatter.py in every send/owner form and partial dtype at the
# layer shapes of docs/perf.md, examples/distributed/ag_gemm.py, and bench/ab/rs_breakdown.py at
# 8192^3; one log a run under OUTDIR ($OUT on the device, else .), a summary line each on stdout.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and the rest): it can take a host's GPUs out
# of service.  About 10 minutes on two H200s: split it where a call's limit is shorter.
case ${1:-} in -h | --help)
	sed -n '2,8s/^# //p' "$0"
	exit 0 ;;
esac
b=${1:?usage: tp2.sh BUILD [OUTDIR]}
o=${2:-${OUT:-.}}
here=$(cd "$(dirname "$0")/../.." && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export WSFUSE_LIB=$b/libwsfuse.so PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
n=0
# run NAME TIMEOUT CMD...: one torchrun, its log, its report lines
run() {
	local name=$1 limit=$2
	shift 2
	n=$((n + 1))
	timeout "$limit" torchrun --nproc-per-node 2 "$@" >"$o/$n-$name.log" 2>&1
	echo "== $name (exit $?): $*"
	grep -E "rel err|x cuBLAS|async-tp|wsfuse|ms|us$" "$o/$n-$name.log" | grep -v "^\[" | head -n 12
}
for shape in 8192x8192x8192 8192x14336x4096 4096x4096x4096; do
	run rs-add 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape $shape --send add --bench
	run rs-add-pp 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape $shape --send add \
		--owner pingpong --bench
	run rs-epilogue 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape $shape --bench
	run rs-role 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape $shape --send role --bench
	run rs-role-pp 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape $shape --send role \
		--owner pingpong --bench
done
run rs-f32-role 150 "$here/examples/distributed/gemm_reduce_scatter.py" --shape 8192x8192x8192 --partials f32 \
	--send role --bench
for shape in 8192x8192x8192 8192x14336x4096; do
	run ag 150 "$here/examples/distributed/ag_gemm.py" --shape $shape --bench
done
run breakdown 200 "$here/bench/ab/rs_breakdown.py" 8192x8192x8192
