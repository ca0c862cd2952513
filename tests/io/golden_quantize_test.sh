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
# The known differences must be exactly the ones described, nowhere else in those tensors.
PYTHONPATH="$here" python3 - "$data" "$work/nvfp4.safetensors" <<'PY' || status=1
import sys
from safetensors_stdlib import load
data, ours_path = sys.argv[1], sys.argv[2]
ours, _ = load(ours_path)
old, _ = load(data + "/golden_modelopt-0.43.0.safetensors")
new, _ = load(data + "/golden_modelopt-0.47.0.safetensors")
case = "underflowing_scales"
rows, cols = ours[case + ".weight"][1][0], ours[case + ".weight"][1][1] * 2
def nibbles(blob):
    return [(blob[i // 2] >> 4) if i % 2 else (blob[i // 2] & 0xF) for i in range(2 * len(blob))]
our_codes, our_scales = nibbles(ours[case + ".weight"][2]), ours[case + ".weight_scale"][2]
problems = []
for i, (mine, theirs) in enumerate(zip(our_codes, nibbles(old[case + ".weight"][2]))):
    block = (i // cols) * (cols // 16) + (i % cols) // 16
    if mine != theirs and not (mine == 0 and theirs == 7 and our_scales[block] == 0):
        problems.append(f"0.43 code {i}: {theirs} vs ours {mine} (block scale {our_scales[block]:#04x})")
new_scales = new[case + ".weight_scale"][2]
for block, (mine, theirs) in enumerate(zip(our_scales, new_scales)):
    if mine != theirs and not (mine == 0x00 and theirs == 0x01):
        problems.append(f"0.47 scale {block}: {theirs:#04x} vs ours {mine:#04x}")
for i, (mine, theirs) in enumerate(zip(our_codes, nibbles(new[case + ".weight"][2]))):
    block = (i // cols) * (cols // 16) + (i % cols) // 16
    if mine != theirs and our_scales[block] == new_scales[block]:
        problems.append(f"0.47 code {i} differs in a block whose scale agrees")
for problem in problems:
    print("FAIL", problem)
print(f"known differences confined to underflowing blocks: {'no' if problems else 'yes'}")
sys.exit(1 if problems else 0)
PY
exit $status
