"""quantize_weight is byte-identical to `fp4gemm quantize` (the C++ quantizer behind both)."""
import subprocess

import pytest
import torch

import fp4gemm
import fp4gemm.torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_quantize_weight_is_byte_identical_to_the_cli(tmp_path, cli, dtype):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    generator = torch.Generator().manual_seed(7)
    weights = {f"model.layers.{i}.mlp.up_proj.weight": (torch.randn(48, 32 * (i + 1), generator=generator) * 3).to(dtype)
               for i in range(2)}
    weights["model.layers.0.mlp.up_proj.weight"][0, :16] = 0  # an all-zero block: scale 1 by the recipe
    safetensors_torch.save_file(weights, str(tmp_path / "in.safetensors"))
    (tmp_path / "ckpt").mkdir()
    subprocess.run([cli, "quantize", "--in", str(tmp_path / "in.safetensors"), "--out",
                    str(tmp_path / "ckpt" / "model.safetensors"), "--quiet"], check=True)
    for name, weight in weights.items():
        prefix = name.removesuffix(".weight")
        codes, scales, scale_2, _, _ = fp4gemm.ops.load_linear(str(tmp_path / "ckpt"), prefix)
        ours = fp4gemm.ops.quantize_weight(weight)
        assert torch.equal(ours[0], codes), prefix
        assert torch.equal(ours[1].view(torch.uint8), scales.view(torch.uint8)), prefix
        assert ours[2].item() == scale_2.item(), prefix
