#!/usr/bin/env bash
# Times `cuda_nvfp4` at every compiled CTA shape (FP4GEMM_DECODE_SHAPE=warps_n:warps_k[:tiles_per_warp[:bounded]]),
# and the launch rule's own choice (shape "rule"), on a GPU machine. Each JSON line gains a "shape"
# field. Usage: scripts/decode_shape_sweep.sh path/to/fp4gemm > sweep.jsonl
# (scripts/sweep_table.py sweep.jsonl then tabulates it: a column per shape, the best against the rule)
#   SHAPES  CTA shapes to force (default: the compiled ones of one and two activation tiles, M <= 16;
#           larger M only times those compiled for it)
#   WEIGHTS "N K" pairs separated by commas (default: the four issue-3 shapes); e.g.
#           WEIGHTS="8192 8192,14336 4096" for the off-grid sweep of
#   MS      activation rows (default 1,4,16,64)
# A shape that is not compiled for some M gives no line for it. The "rule" lines run without the
# caller's FP4GEMM_DECODE_SHAPE, so they are the rule's choice. Each shape is one bench process
# over all the weights (one CUDA start-up per shape, not per weight and shape).
set -euo pipefail
cli=${1:?path to the fp4gemm binary}
IFS=',' read -r -a weights <<< "${WEIGHTS:-4096 4096,12288 4096,4096 12288,28672 8192}"
shapes_arg=""
for nk in "${weights[@]}"; do
  read -r n k extra <<< "$nk"
  if ! [[ "$n" =~ ^[0-9]+$ && "$k" =~ ^[0-9]+$ && -z "${extra:-}" ]]; then
    echo "decode_shape_sweep: WEIGHTS entry '$nk' is not 'N K'" >&2
    exit 2
  fi
  shapes_arg+="${shapes_arg:+,}${n}x${k}"
done
# The bench lines of every weight, run under the command prefix "$@" (an env setting), each tagged
# with "shape": $tag.
bench_lines() {
  local tag=$1
  shift
  "$@" "$cli" bench --backend cuda_nvfp4 --no-peers -m "${MS:-1,4,16,64}" --shapes "$shapes_arg" --json 2>/dev/null |
    sed "s/^{/{\"shape\":\"$tag\",/" || true
}
bench_lines rule env -u FP4GEMM_DECODE_SHAPE
for shape in ${SHAPES:-1:8 1:4 2:2 2:4 1:12 1:8:2 1:4:2 1:5:2 2:2:2 1:16:2 1:24:2}; do
  bench_lines "$shape" env FP4GEMM_DECODE_SHAPE="$shape"
done
