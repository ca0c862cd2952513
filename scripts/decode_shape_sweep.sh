#!/usr/bin/env bash
# Times `cuda_decode` at every compiled CTA shape (FP4GEMM_DECODE_SHAPE=warps_n:warps_k[:tiles_per_warp]) on the issue-3 shapes,
# on a GPU machine. Usage: scripts/decode_shape_sweep.sh path/to/fp4gemm > sweep.jsonl
set -euo pipefail
cli=${1:?path to the fp4gemm binary}
for shape in ${SHAPES:-1:8 1:4 2:2 2:4 1:12 1:8:2 1:4:2 1:5:2 2:2:2}; do
  for nk in "4096 4096" "12288 4096" "4096 12288" "28672 8192"; do
    set -- $nk
    FP4GEMM_DECODE_SHAPE=$shape "$cli" bench --backend cuda_decode --no-peers -m "${MS:-1,4,16,64}" -n "$1" -k "$2" --json 2>/dev/null |
      sed "s/^{/{\"shape\":\"$shape\",/" || true
  done
done
