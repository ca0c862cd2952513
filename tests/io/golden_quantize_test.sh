#!/usr/bin/env bash
# `fp4gemm quantize` against NVIDIA ModelOpt's own output (tests/data, made by
# scripts/make_golden_vectors.py), byte for byte.
set -euo pipefail
cli=${FP4GEMM_CLI:?set FP4GEMM_CLI to the fp4gemm binary}
data=$(cd "$(dirname "$0")/../data" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cli" quantize --in "$data/golden_input.safetensors" --out "$work/nvfp4.safetensors" --no-default-excludes --quiet

status=0
# NOTE: the two known differences are both in blocks whose scale underflows E4M3 (below 2^-9):
# - ModelOpt 0.43 stores scale 0 as we do, then divides by it: 0/0 is NaN, which torch.searchsorted
#   places after every bound, so those elements get code 7 where quantize_weight writes 0. The
#   block dequantizes to zeros either way (7 x scale 0).
# - ModelOpt >= 0.45 clamps such scales up to 2^-9 (_cast_per_block_scale_to_fp8), so its scale
#   byte is 0x01 and the block keeps its values; quantize_weight (docs/NVFP4.md) rounds to 0.
echo "== against nvidia-modelopt 0.43.0"
python3 "$here/compare_safetensors.py" "$data/golden_modelopt-0.43.0.safetensors" "$work/nvfp4.safetensors" \
  --known-difference "underflowing_scales.weight=0/0 elements of a zero-scale block: code 7 in ModelOpt 0.43, 0 here" \
  || status=1
echo "== against nvidia-modelopt 0.47.0"
python3 "$here/compare_safetensors.py" "$data/golden_modelopt-0.47.0.safetensors" "$work/nvfp4.safetensors" \
  --known-difference "underflowing_scales.weight=ModelOpt >= 0.45 quantizes the block against the clamped 2^-9 scale" \
  --known-difference "underflowing_scales.weight_scale=ModelOpt >= 0.45 clamps scales below 2^-9 to 2^-9 (0x01); here they round to 0" \
  || status=1
exit $status
