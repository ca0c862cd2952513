#!/usr/bin/env python3
"""Golden NVFP4 vectors from NVIDIA's own quantizer, for tests/io/golden_quantize_test.sh.

Writes, under tests/data/:
  golden_input.safetensors   small high-precision weights (BF16, FP16, FP32) named CASE.weight
                             (deterministic: every run writes the same bytes)
  golden_modelopt-VERSION.safetensors  what that ModelOpt version makes of each: CASE.weight
                             (U8 [N, K/2]), CASE.weight_scale (F8_E4M3 [N, K/16]),
                             CASE.weight_scale_2 (F32 [])
  golden_modelopt-VERSION.json  the versions that made them and one line per case

The committed vectors come from two versions, because ModelOpt changed the recipe in 0.45:
block scales are clamped to [2^-9, 448] before the E4M3 cast (_cast_per_block_scale_to_fp8), so a
block scale below 2^-9 becomes 2^-9 where 0.43 (and the recipe in docs/NVFP4.md) rounds it to 0.
Only the `underflowing_scales` case tells the two apart.

The quantizer is modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize(w, 16, try_tensorrt=False),
the call ModelOpt's HF export makes for an NVFP4 weight whose amax is max|W| (the dynamic path:
weights_scaling_factor_2 = amax / (6 * 448), per-block scales from get_weights_scaling_factor).
It runs on CPU torch.

Set up (PyPI only; the CUDA wheels are not needed to run it on a CPU):
  python3 -m venv /tmp/golden-venv
  /tmp/golden-venv/bin/pip install torch nvidia-modelopt==0.47.0 safetensors numpy requests huggingface_hub
  /tmp/golden-venv/bin/python scripts/make_golden_vectors.py
  # the older recipe, side by side without a second torch:
  /tmp/golden-venv/bin/pip install --no-deps --target /tmp/modelopt-0.43 nvidia-modelopt==0.43.0
  PYTHONPATH=/tmp/modelopt-0.43 /tmp/golden-venv/bin/python scripts/make_golden_vectors.py

Cases are chosen to hit the rounding rules, not to look like real weights: E2M1 ties at every
bound, E4M3 scale ties, zero and negative-zero blocks, E4M3-subnormal block scales, scales that
underflow E4M3, saturation, and random weights of each input dtype.
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import load_file, save_file

import modelopt
import modelopt.torch.quantization.qtensor.nvfp4_tensor as nvfp4_tensor
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

# ModelOpt <= 0.44 asks fp4_compatible() (which queries a CUDA device) before anything else when it
# considers the TensorRT-LLM kernel; without a GPU that query raises. The kernel is for CUDA inputs
# only, so on a CPU the answer is "no" and the pure-torch path below runs, as it would anyway.
if hasattr(nvfp4_tensor, "fp4_compatible") and not torch.cuda.is_available():
    nvfp4_tensor.fp4_compatible = lambda: False

BLOCK = 16
E2M1_BOUNDS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1_ties():
    """Block 0 fixes amax = 6*448 so scale_2 = 1 and block scales are exact; every other block has
    amax 6*s for an E4M3-exact s and puts values on s*bound (ties), s*value and just off the ties."""
    rows = []
    for scale in (448.0, 1.0, 0.5, 3.25, 0.015625):
        block = [6.0 * scale]
        block += [b * scale for b in E2M1_BOUNDS]
        block += [-b * scale for b in E2M1_BOUNDS]
        block.append(-6.0 * scale)
        rows.append(block)
    rows[0][0] = 6.0 * 448.0
    first = [6.0 * 448.0] + [0.0] * 15
    weight = torch.tensor([first + row for row in rows], dtype=torch.float32)
    return weight


def e4m3_scale_ties():
    """Block amaxes whose per-block scale amax/(6*scale_2) sits on or next to an E4M3 rounding
    midpoint, where the order of the FP32 operations decides the code."""
    torch.manual_seed(7)
    amax_global = 6.0 * 448.0 * 0.8125  # scale_2 not a power of two
    scale_2 = amax_global / (6.0 * 448.0)
    rows = []
    for mantissa in range(8):
        for exponent in (-4, 0, 3):
            midpoint = (1.0 + (2 * mantissa + 1) / 16.0) * 2.0**exponent
            row = [0.0] * (2 * BLOCK)
            row[0] = amax_global
            row[BLOCK] = midpoint * 6.0 * scale_2
            row[BLOCK + 1] = -0.4 * row[BLOCK]
            rows.append(row)
    return torch.tensor(rows, dtype=torch.float32)


def zero_blocks():
    """All-zero blocks (scale 1, codes 0), a block of -0.0, and a block of one tiny value."""
    weight = torch.zeros(4, 4 * BLOCK, dtype=torch.float32)
    weight[0, 0:BLOCK] = torch.linspace(-3.0, 3.0, BLOCK)
    weight[1, BLOCK:2 * BLOCK] = -0.0
    weight[2, 2 * BLOCK + 5] = 1e-3
    weight[3, 3 * BLOCK:] = torch.tensor([(-1) ** i * 0.75 for i in range(BLOCK)])
    return weight


def subnormal_scales():
    """scale_2 = 1; block scales 2^-7 .. 2^-9 are E4M3 subnormals (codes 4, 2, 1)."""
    weight = torch.zeros(4, 2 * BLOCK, dtype=torch.float32)
    weight[:, 0] = 6.0 * 448.0
    for row, exponent in enumerate((-6, -7, -8, -9)):
        scale = 2.0**exponent
        weight[row, BLOCK:] = torch.tensor([E2M1_VALUES[i % 8] * scale * (-1) ** (i // 8) for i in range(BLOCK)])
        weight[row, BLOCK] = 6.0 * scale
    return weight


def underflowing_scales():
    """Block scales below the smallest E4M3 subnormal (2^-9): 2^-10 and 2^-11 (and one at 1.5*2^-10)."""
    weight = torch.zeros(3, 2 * BLOCK, dtype=torch.float32)
    weight[:, 0] = 6.0 * 448.0
    for row, scale in enumerate((2.0**-10, 2.0**-11, 1.5 * 2.0**-10)):
        weight[row, BLOCK] = 6.0 * scale
        weight[row, BLOCK + 1] = -3.0 * scale
    return weight


def random_weight(rows, cols, dtype, seed, spread=4.0):
    generator = torch.Generator().manual_seed(seed)
    magnitudes = torch.exp2((torch.rand(rows, cols // BLOCK, 1, generator=generator) * 2 - 1) * spread)
    values = torch.randn(rows, cols // BLOCK, BLOCK, generator=generator) * magnitudes
    return values.reshape(rows, cols).to(dtype)


def outlier_weight():
    """One huge outlier: most block scales land in the low E4M3 range."""
    weight = random_weight(8, 64, torch.float32, seed=11, spread=1.0)
    weight[3, 17] = 3.0e4
    return weight.to(torch.bfloat16)


CASES = {
    "e2m1_ties": (e2m1_ties, "E2M1 ties at every bound, both signs, five block scales; FP32"),
    "e4m3_scale_ties": (e4m3_scale_ties, "per-block scales on E4M3 rounding midpoints; FP32"),
    "zero_blocks": (zero_blocks, "zero, negative-zero and single-value blocks; FP32"),
    "subnormal_scales": (subnormal_scales, "E4M3-subnormal block scales 2^-6..2^-9; FP32"),
    "underflowing_scales": (underflowing_scales, "block scales below 2^-9; FP32"),
    "random_bf16": (lambda: random_weight(16, 128, torch.bfloat16, seed=1), "random BF16 [16, 128]"),
    "random_fp16": (lambda: random_weight(8, 64, torch.float16, seed=2), "random FP16 [8, 64]"),
    "random_fp32": (lambda: random_weight(12, 96, torch.float32, seed=3, spread=6.0), "random FP32 [12, 96]"),
    "outlier_bf16": (outlier_weight, "one outlier, small block scales; BF16"),
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data")
    os.makedirs(out_dir, exist_ok=True)
    inputs, expected, described = {}, {}, {}
    for name, (make, description) in CASES.items():
        weight = make().contiguous()
        quantized, weight_scale, weight_scale_2 = NVFP4QTensor.quantize(weight, BLOCK, try_tensorrt=False)
        assert math.isfinite(float(weight_scale_2)), name
        inputs[f"{name}.weight"] = weight
        expected[f"{name}.weight"] = quantized._quantized_data.contiguous()
        expected[f"{name}.weight_scale"] = weight_scale.contiguous()
        expected[f"{name}.weight_scale_2"] = weight_scale_2.reshape(()).to(torch.float32).contiguous()
        described[name] = f"{description}; shape {list(weight.shape)}, dtype {weight.dtype}"
    provenance = {
        "quantizer": "modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize(weight, 16, try_tensorrt=False)",
        "nvidia-modelopt": modelopt.__version__,
        "torch": torch.__version__,
        "device": "cpu",
    }
    input_path = os.path.join(out_dir, "golden_input.safetensors")
    if os.path.exists(input_path):
        previous = load_file(input_path)
        same = previous.keys() == inputs.keys() and all(torch.equal(previous[k], inputs[k]) for k in inputs)
        assert same, f"{input_path} holds other inputs than this script makes; delete it and make every version again"
    save_file(inputs, input_path, metadata={"format": "pt"})
    stem = os.path.join(out_dir, f"golden_modelopt-{modelopt.__version__}")
    save_file(expected, stem + ".safetensors", metadata={"format": "pt", **{k: str(v) for k, v in provenance.items()}})
    with open(stem + ".json", "w") as handle:
        json.dump({"provenance": provenance, "cases": described}, handle, indent=2)
        handle.write("\n")
    print(f"wrote {len(CASES)} cases to {out_dir} with nvidia-modelopt {modelopt.__version__}, torch {torch.__version__}")


if __name__ == "__main__":
    main()
