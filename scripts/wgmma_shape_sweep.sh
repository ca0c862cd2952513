#!/usr/bin/env bash
# Times `cuda_nvfp4`'s wgmma kernel (SM 9.0) at each CTA shape (FP4GEMM_WGMMA_SHAPE =
# warpgroups:splits) on the issue-3 shapes, on a GPU machine.
# Usage: scripts/wgmma_shape_sweep.sh path/to/fp4gemm > sweep.jsonl   (env SHAPES, MS)
set -euo pipefail
cli=${1:?path to the fp4gemm binary}
for shape in ${SHAPES:-1:1 1:2 1:4 1:8 2:1 2:2 2:4 2:8}; do
  for nk in "4096 4096" "12288 4096" "4096 12288" "28672 8192"; do
    set -- $nk
    FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$shape "$cli" bench --backend cuda_nvfp4 --no-peers \
      -m "${MS:-16,32,64}" -n "$1" -k "$2" --json 2>/dev/null | sed "s/^{/{\"shape\":\"$shape\",/" || true
  done
done
