"""fp4gemm.torch.Linear: a tiny model whose nn.Linear layers are replaced gives the output of the same
model with the dequantized weights; torch.compile(fullgraph=True) equals eager; checkpoints load."""
import pytest
import torch
from torch import nn

import fp4gemm
import fp4gemm.torch
from conftest import dequantize


class TinyMlp(nn.Module):
    def __init__(self, hidden=64, inner=128):
        super().__init__()
        self.up = nn.Linear(hidden, inner, bias=True)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def replace_linears(model: nn.Module, **kwargs) -> nn.Module:
    for name, child in model.named_children():
        if isinstance(child, nn.Linear):
            setattr(model, name, fp4gemm.torch.Linear.from_linear(child, **kwargs))
        else:
            replace_linears(child, **kwargs)
    return model


def dequantized_copy(model: TinyMlp, quantized: TinyMlp) -> TinyMlp:
    """The float model with each weight replaced by its NVFP4 values: the reference output."""
    reference = TinyMlp()
    reference.load_state_dict(model.state_dict())
    for name in ("up", "down"):
        layer = getattr(quantized, name)
        weight = dequantize(layer.weight, layer.weight_scale, layer.weight_scale_2)
        getattr(reference, name).weight.data.copy_(weight)
    return reference


@pytest.fixture
def models():
    torch.manual_seed(0)
    model = TinyMlp()
    quantized = replace_linears(_copy(model))
    return model, quantized


def _copy(model):
    clone = TinyMlp()
    clone.load_state_dict(model.state_dict())
    return clone


def test_replaced_linears_give_the_reference_output(models):
    model, quantized = models
    assert isinstance(quantized.up, fp4gemm.torch.Linear) and quantized.up.bias is not None
    x = torch.randn(3, 5, 64)
    with torch.no_grad():
        expected = dequantized_copy(model, quantized)(x)
        out = quantized(x)
        unquantized = model(x)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    # NVFP4 is lossy: the quantized model is close to the float one, not equal.
    error = (out - unquantized).norm() / unquantized.norm()
    assert 0 < error < 0.2, error


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_equals_eager(models, backend):
    _, quantized = models
    torch._dynamo.reset()
    compiled = torch.compile(quantized, fullgraph=True, backend=backend)
    # aot_eager runs the traced ops as they are: bit-equal. Inductor fuses the bias add and GELU
    # around the gemm op into its own kernel, which rounds differently in the last bit.
    tolerance = {"rtol": 0, "atol": 0} if backend == "aot_eager" else {"rtol": 1e-5, "atol": 1e-6}
    for rows in (1, 7):
        x = torch.randn(rows, 64)
        torch.testing.assert_close(compiled(x), quantized(x), **tolerance)


def test_compiled_graph_calls_the_custom_op_without_breaks(models):
    _, quantized = models
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(quantized)(torch.randn(2, 64))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    code = "\n".join(graph.code for graph in explanation.graphs)
    assert code.count("fp4gemm.gemm") == 2, code


def test_moving_a_module_prepares_the_weight_again(models):
    _, quantized = models
    old_id = quantized.up.weight_id
    quantized.to(torch.bfloat16)  # buffers replaced: the FP8 scales stay bytes, the weight is prepared anew
    assert quantized.up.weight_id != old_id
    out = quantized(torch.randn(2, 64, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16 and not torch.isnan(out).any()


def test_linear_from_checkpoint_loads_what_quantize_wrote(tmp_path, cli):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    import subprocess
    weight = torch.randn(32, 64, dtype=torch.bfloat16)
    bias = torch.randn(32, dtype=torch.bfloat16)
    safetensors_torch.save_file({"model.layers.0.mlp.down_proj.weight": weight,
                                 "model.layers.0.mlp.down_proj.bias": bias}, str(tmp_path / "in.safetensors"))
    (tmp_path / "ckpt").mkdir()
    subprocess.run([cli, "quantize", "--in", str(tmp_path / "in.safetensors"), "--out",
                    str(tmp_path / "ckpt" / "model.safetensors"), "--quiet"], check=True)
    layer = fp4gemm.torch.Linear.from_checkpoint(tmp_path / "ckpt", "model.layers.0.mlp.down_proj")
    # byte-identical to the op's quantizer
    codes, scales, scale_2 = fp4gemm.ops.quantize_weight(weight)
    assert torch.equal(layer.weight, codes)
    assert torch.equal(layer.weight_scale.view(torch.uint8), scales.view(torch.uint8))
    assert float(layer.weight_scale_2) == float(scale_2)
    x = torch.randn(4, 64)
    expected = x @ dequantize(codes, scales, scale_2).T + bias.float()
    torch.testing.assert_close(layer(x), expected, rtol=1e-4, atol=1e-3)
    with pytest.raises(RuntimeError, match="model.layers.9"):
        fp4gemm.torch.Linear.from_checkpoint(tmp_path / "ckpt", "model.layers.9.mlp.down_proj")
