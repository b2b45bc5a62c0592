#!/bin/bash
# sanitize.sh BUILD: compute-sanitizer memcheck, racecheck and synccheck over
# the generated kernels (each variant: plain, warp-specialized, TMA stores,
# one CTA per tile, one-row tiles moved by bulk copies, row reductions whole
# and streamed in chunks, the warp-specialized matmul (wgmma, two pipelines' worth of barriers,
# staging subtiles), copies narrower than 128 bytes in pipelines whose
# every CTA cycles through all its stages, stream-K's parts meeting through
# the workspace: 136 tiles for 132 SMs; staging rings of four and three copies (two outputs) over two tiles a CTA; the default tile narrowed to 160, 192 and 224, or 256 x 160, to fill the last wave, or to 96 to fill the one;
# clusters of 8 CTAs in two dimensions, [4, 2] and ping-pong [2, 4], and the default [1, 4] of one row of tiles;
# row inputs copied to row buffers over two tiles a CTA, both copies;
# residuals the staging copies carry: bf16, f16 and f32, three and four copies, 256 x 128),
# at sizes small enough for the tools.  Prints one line per tool and case and
# "N passed, N failed"; skips without a GPU or without compute-sanitizer.
# With PATTERN, only the cases whose spec line contains it (grep -E).
set -u
b=${1:?usage: sanitize.sh BUILD [PATTERN]}
only=${2:-}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "skipped: no GPU"; exit 0; fi
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "skipped: no compute-sanitizer"; exit 0; }
pass=0 fail=0
out=$(mktemp) && trap 'rm -f "$out"' EXIT
# sanitize TOOL CMD...: one case
sanitize() {
	local tool=$1 summary rc
	shift
	"$cs" --tool "$tool" --error-exitcode 9 "$@" >"$out" 2>&1
	rc=$?
	summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out" | tail -n 1)
	if [ $rc = 0 ]; then pass=$((pass + 1)); echo "ok   $tool $*: $summary"
	else fail=$((fail + 1)); echo "FAIL $tool $*: exit $rc"; tail -n 15 "$out" | sed 's/^/    /'; fi
}

for spec in "tests/gpu/specs/relu_chain.yaml -D N=300001" "tests/gpu/specs/relu_chain_ws.yaml -D N=300001" \
	"tests/gpu/specs/relu_chain_tma.yaml -D N=300001" "tests/gpu/specs/relu_chain_tma_ws.yaml -D N=300001" \
	"tests/gpu/specs/bias_scale_mixed.yaml -D M=100 -D N=1000" "tests/gpu/specs/bias_scale_tma.yaml -D M=100 -D N=1000" \
	"tests/gpu/specs/relu_chain_np.yaml -D N=300001" "tests/gpu/specs/norm_layernorm.yaml -D M=64 -D N=1000" \
	"tests/gpu/specs/norm_softmax_residual.yaml -D M=16 -D N=8200" "tests/gpu/specs/norm_rmsnorm_f32.yaml -D M=33 -D N=36" \
	"tests/gpu/specs/stages2.yaml" "tests/gpu/specs/norm_var_manual.yaml -D M=64 -D N=3000" \
	"tests/gpu/specs/norm_layernorm.yaml -D M=20 -D N=32768" "tests/gpu/specs/norm_late_input.yaml -D M=64" \
	"examples/softmax_vocab.yaml -D M=4 -D V=40000" "tests/gpu/specs/norm_layernorm.yaml -D M=6 -D N=33000" \
	"tests/gpu/specs/norm_rowscale.yaml -D M=3 -D N=70000" "tests/gpu/specs/norm_row_output.yaml -D M=8" \
	"tests/gpu/specs/norm_layernorm_np.yaml -D M=16 -D N=1000" "tests/gpu/specs/norm_softmax_np.yaml -D M=8" \
	"tests/gpu/specs/norm_layernorm_p.yaml -D M=16 -D N=1000" "tests/gpu/specs/norm_layernorm.yaml -D M=7 -D N=4000" \
	"tests/gpu/specs/norm_layernorm_gate.yaml -D M=9 -D N=1000" "tests/gpu/specs/bias_scale_run.yaml -D M=50 -D N=1032" \
	"tests/gpu/specs/bias_scale_run_ws.yaml -D M=40 -D N=1000" "tests/gpu/specs/silu_run_f32.yaml -D M=30 -D N=1004" \
	"tests/gpu/specs/bias_scale_tma.yaml -D M=131072 -D N=24" "tests/gpu/specs/narrow_tiles_ws.yaml -D M=65536" \
	"tests/gpu/specs/narrow_bias_p4.yaml -D M=1048576" \
	"examples/gemm_bias_gelu.yaml -D M=300 -D N=512 -D K=320" "tests/gpu/specs/gemm_epilogue.yaml -D M=200 -D N=256 -D K=128" \
	"tests/gpu/specs/gemm_tt.yaml -D M=200 -D N=256 -D K=136" "tests/gpu/specs/gemm_kn.yaml -D M=130 -D N=320 -D K=72" \
	"tests/gpu/specs/gemm_batch_a.yaml -D B=2 -D M=100 -D N=128 -D K=64" \
	"tests/gpu/specs/gemm_bmm.yaml -D B=2 -D H=2 -D M=130 -D N=72 -D K=80" \
	"tests/gpu/specs/gemm_bmm_t.yaml -D B=3 -D M=72 -D N=136 -D K=64" "tests/gpu/specs/gemm_one_cta.yaml -D M=200 -D N=264 -D K=128" \
	"tests/gpu/specs/gemm_pingpong.yaml -D M=300 -D N=512 -D K=200" \
	"tests/gpu/specs/gemm_pingpong_bmm.yaml -D B=2 -D M=136 -D N=136 -D K=72" \
	"examples/swiglu.yaml -D M=200 -D K=136 -D F=264" "tests/gpu/specs/gemm_qkv.yaml -D M=130 -D D=200 -D E=72" \
	"tests/gpu/specs/gemm_two.yaml -D M=200 -D K=136 -D N=264" "tests/gpu/specs/gemm_three.yaml -D M=136 -D K=72 -D N=200" \
	"tests/gpu/specs/swiglu_kn.yaml -D M=136 -D K=72 -D F=200" "tests/gpu/specs/gemm_add_relu.yaml -D M=130 -D K=72 -D N=136" \
	"tests/gpu/specs/gemm_residual.yaml -D M=130 -D N=136 -D K=72" \
	"tests/gpu/specs/gemm_signal.yaml -D B=2 -D M=130 -D N=264 -D K=72" "tests/gpu/specs/gemm_signal_pp.yaml -D M=200 -D N=136 -D K=72" \
	"tests/gpu/specs/pw_signal_ws.yaml -D M=100 -D N=1032" "tests/gpu/specs/pw_signal_p.yaml -D M=100 -D N=1032" \
	"tests/gpu/specs/gemm_consumer.yaml -D M=300 -D N=520 -D K=72" "tests/gpu/specs/gemm_consumer_pp.yaml -D M=200 -D N=136 -D K=72" \
	"tests/gpu/specs/gemm_consumer_bmm.yaml -D B=2 -D M=130 -D N=264 -D K=72" "tests/gpu/specs/gemm_consumer_1.yaml -D M=200 -D N=264 -D K=64" \
	"tests/gpu/specs/gemm_consumer_two.yaml -D M=136 -D K=72 -D N=264" "tests/gpu/specs/swiglu_consumer.yaml -D M=136 -D K=72 -D F=264" \
	"tests/gpu/specs/gemm_consumer_flags.yaml -D M=300 -D N=520 -D K=72" \
	"tests/gpu/specs/gemm_cluster.yaml -D M=300 -D N=520 -D K=200" "tests/gpu/specs/gemm_cluster_n.yaml -D M=264 -D N=520 -D K=200" \
	"tests/gpu/specs/gemm_cluster_pp.yaml -D M=300 -D N=520 -D K=200" "tests/gpu/specs/swiglu_cluster.yaml -D M=136 -D K=72 -D F=264" \
	"tests/gpu/specs/gemm_pingpong_tall.yaml -D M=300 -D N=264 -D K=200" "tests/gpu/specs/gemm_coop256.yaml -D M=600 -D N=264 -D K=200" "tests/gpu/specs/gemm_pingpong_tall_c.yaml -D M=304 -D N=264 -D K=200" \
	"tests/gpu/specs/gemm_wait.yaml -D M=200 -D N=264 -D K=72" "tests/gpu/specs/gemm_wait_pp.yaml -D M=200 -D N=264 -D K=72" \
	"tests/gpu/specs/gemm_wait_ab.yaml -D M=200 -D N=264 -D K=72" \
	"tests/gpu/specs/gemm_accumulate.yaml -D M=200 -D N=264 -D K=72" "tests/gpu/specs/gemm_accumulate_pp.yaml -D M=200 -D N=264 -D K=72" \
	"tests/gpu/specs/relu_accumulate.yaml -D M=100 -D N=1032" \
	"tests/gpu/specs/gemm_swap.yaml -D M=40 -D N=264 -D K=200" "tests/gpu/specs/gemm_swap_forced.yaml -D B=2 -D M=1500 -D N=264 -D K=72" \
	"tests/gpu/specs/gemm_swap_coop.yaml -D M=1000 -D N=520 -D K=72" \
	"tests/gpu/specs/gemm_split.yaml -D M=129 -D N=136 -D K=72" "tests/gpu/specs/gemm_split_pp.yaml -D M=300 -D N=264 -D K=704" \
	"tests/gpu/specs/gemm_split_swap.yaml -D M=3 -D N=200 -D K=520" "tests/gpu/specs/gemm_split_glu.yaml -D M=136 -D F=200 -D K=1000" \
	"tests/gpu/specs/gemm_split_wide.yaml -D M=200 -D N=400 -D K=1000" "tests/gpu/specs/gemm_split_wide.yaml -D M=130 -D N=200 -D K=72" \
	"tests/gpu/specs/gemm_kn.yaml -D M=136 -D N=512 -D K=2048" "tests/gpu/specs/gemm_epilogue.yaml -D M=128 -D N=512 -D K=4096" \
	"tests/gpu/specs/gemm_epilogue.yaml -D M=128 -D N=384 -D K=3072" "tests/gpu/specs/gemm_swap.yaml -D M=32 -D N=2048 -D K=1536" \
	"tests/gpu/specs/gemm_pingpong_wide.yaml -D M=300 -D N=200 -D K=200" "tests/gpu/specs/gemm_tile_n96.yaml -D M=200 -D N=200 -D K=72" \
	"tests/gpu/specs/swiglu_pingpong.yaml -D M=300 -D K=72 -D F=200" \
	"examples/gemm_bias_gelu.yaml -D M=2048 -D N=4096 -D K=128" "tests/gpu/specs/gemm_rows.yaml -D M=2048 -D N=4096 -D K=64" "tests/gpu/specs/gemm_accumulate.yaml -D M=2048 -D N=4096 -D K=72" \
	"tests/gpu/specs/gemm_streamk_gelu.yaml" "tests/gpu/specs/gemm_streamk.yaml -D M=2176 -D N=1024 -D K=520" \
	"tests/gpu/specs/gemm_epilogue.yaml -D M=2048 -D N=1280 -D K=128" "tests/gpu/specs/gemm_add_relu.yaml -D M=2048 -D N=1280 -D K=200" \
	"tests/gpu/specs/gemm_kn.yaml -D M=512 -D N=6144 -D K=128" "tests/gpu/specs/gemm_epilogue.yaml -D M=500 -D N=7000 -D K=72" \
	"tests/gpu/specs/gemm_f16_f32out.yaml -D M=4096 -D N=1280 -D K=128" "tests/gpu/specs/gemm_ta.yaml -D M=4096 -D N=1280 -D K=136" \
	"tests/gpu/specs/gemm_cluster_2d.yaml" "tests/gpu/specs/gemm_cluster_pp24.yaml -D M=100 -D N=1000 -D K=520" \
	"tests/gpu/specs/gemm_epilogue.yaml -D M=96 -D N=5120 -D K=4096" "tests/gpu/specs/gemm_streamk.yaml -D M=128 -D N=1280 -D K=2048" \
	"tests/gpu/specs/gemm_ta.yaml -D M=128 -D N=1280 -D K=32768" "tests/gpu/specs/gemm_epilogue.yaml -D M=384 -D N=1280 -D K=8192" \
	"tests/gpu/specs/gemm_swap.yaml -D M=1000 -D N=1000 -D K=8192" "tests/gpu/specs/gemm_epilogue.yaml -D M=1280 -D N=1024 -D K=8192" \
	"tests/gpu/specs/gemm_split_cluster.yaml" "tests/gpu/specs/gemm_split_cluster_kn.yaml -D M=128 -D N=128 -D K=136" \
	"tests/gpu/specs/gemm_epilogue.yaml -D M=128 -D N=1280 -D K=8192" "tests/gpu/specs/gemm_kn.yaml -D M=128 -D N=4096 -D K=4096" \
	"tests/gpu/specs/gemm_kn.yaml -D M=640 -D N=512 -D K=4096" "tests/gpu/specs/gemm_epilogue.yaml -D M=1280 -D N=1000 -D K=128" \
	"tests/gpu/specs/gemm_batch_a.yaml -D B=4 -D M=384 -D N=1000 -D K=256" \
	"tests/gpu/specs/gemm_carry.yaml -D M=2048 -D N=4096 -D K=64" "tests/gpu/specs/gemm_carry.yaml -D M=3000 -D N=3000 -D K=128" \
	"tests/gpu/specs/gemm_carry_f16.yaml" "tests/gpu/specs/gemm_carry_256.yaml -D M=1024 -D N=1024 -D K=64" \
	"tests/gpu/specs/gemm_carry_f32.yaml -D M=1000 -D N=1000 -D K=136" \
	"tests/gpu/specs/gemm_carry_bias.yaml -D M=2048 -D N=4096 -D K=64" \
	"tests/gpu/specs/gemm_ring_odd_cluster.yaml" "tests/gpu/specs/gemm_pingpong_stage1.yaml" \
	"tests/gpu/specs/gemm_pingpong_stage1_cluster.yaml"; do
	[ -z "$only" ] || echo "$spec" | grep -Eq "$only" || continue
	for tool in memcheck racecheck synccheck; do
		# shellcheck disable=SC2086
		sanitize $tool "$b/wsfuse" run --check --no-cache $spec
	done
done
# single ragged rows through the python binding (with torch)
if [ -z "$only" ] && python3 -c 'import torch' 2>/dev/null; then
	for tool in memcheck racecheck synccheck; do
		sanitize $tool python3 "${0%/*}/ragged_row.py" "$b"
	done
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
