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
# quantize_weight follows ModelOpt 0.47 (block scales clamped to [2^-9, 448]): byte for byte.
echo "== against nvidia-modelopt 0.47.0"
python3 "$here/compare_safetensors.py" "$data/golden_modelopt-0.47.0.safetensors" "$work/nvfp4.safetensors" || status=1
# NOTE: ModelOpt 0.43 did not clamp: blocks whose scale falls below 2^-9 got scale 0 there and
# dequantize to zeros. Those blocks are the only allowed difference.
echo "== against nvidia-modelopt 0.43.0 (older convention)"
python3 "$here/compare_safetensors.py" "$data/golden_modelopt-0.43.0.safetensors" "$work/nvfp4.safetensors" \
  --known-difference "underflowing_scales.weight=ModelOpt 0.43 divides by its zero scale; we quantize against 2^-9" \
  --known-difference "underflowing_scales.weight_scale=ModelOpt 0.43 rounds scales below 2^-9 to 0; 0.45+ and we clamp" \
  || status=1
PYTHONPATH="$here" python3 - "$data" "$work/nvfp4.safetensors" <<'PY' || status=1
import sys
from safetensors_stdlib import load
data, ours_path = sys.argv[1], sys.argv[2]
ours, _ = load(ours_path)
old, _ = load(data + "/golden_modelopt-0.43.0.safetensors")
case = "underflowing_scales"
cols = ours[case + ".weight"][1][1] * 2
def nibbles(blob):
    return [(blob[i // 2] >> 4) if i % 2 else (blob[i // 2] & 0xF) for i in range(2 * len(blob))]
our_scales, old_scales = ours[case + ".weight_scale"][2], old[case + ".weight_scale"][2]
problems = []
for block, (mine, theirs) in enumerate(zip(our_scales, old_scales)):
    if mine != theirs and not (theirs == 0x00 and mine == 0x01):
        problems.append(f"0.43 scale {block}: {theirs:#04x} vs ours {mine:#04x}")
for i, (mine, theirs) in enumerate(zip(nibbles(ours[case + ".weight"][2]), nibbles(old[case + ".weight"][2]))):
    block = (i // cols) * (cols // 16) + (i % cols) // 16
    if mine != theirs and old_scales[block] != 0x00:
        problems.append(f"0.43 code {i} differs in a block whose 0.43 scale is not 0")
for problem in problems:
    print("FAIL", problem)
print(f"0.43 differences confined to its zero-scale blocks: {'no' if problems else 'yes'}")
sys.exit(1 if problems else 0)
PY
exit $status
