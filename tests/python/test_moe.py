"""torch.ops.fp4gemm.moe and fp4gemm.torch.MoE: against an independent torch computation (experts
dequantized here, routed, SiLU * up, combined), against the `ref` MoE backend, with given routing,
under torch.compile(fullgraph=True), on bad input, and loaded from a checkpoint that `fp4gemm
quantize` wrote, against `fp4gemm moe`."""
import json
import subprocess

import pytest
import torch

import fp4gemm
import fp4gemm.torch
from conftest import dequantize, requires_cuda

EXPERTS, HIDDEN, INTER, SHARED_INTER, TOP_K = 4, 64, 32, 48, 2


def quantized_experts(rows: int, cols: int, generator):
    """Stacked NVFP4 experts [E, rows, cols]: codes, scales, weight_scale_2 [E]."""
    parts = [fp4gemm.ops.quantize_weight(torch.randn(rows, cols, generator=generator) * 0.05) for _ in range(EXPERTS)]
    return (torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts]),
            torch.stack([p[2] for p in parts]))


def random_layer(seed: int = 0, shared: bool = True):
    generator = torch.Generator().manual_seed(seed)
    gate_up = quantized_experts(2 * INTER, HIDDEN, generator)
    down = quantized_experts(HIDDEN, INTER, generator)
    layer = {"experts": (*gate_up, *down), "router": torch.randn(EXPERTS, HIDDEN, generator=generator) * 0.1}
    if shared:
        layer["shared"] = [torch.randn(SHARED_INTER, HIDDEN, generator=generator) * 0.05,
                           torch.randn(SHARED_INTER, HIDDEN, generator=generator) * 0.05,
                           torch.randn(HIDDEN, SHARED_INTER, generator=generator) * 0.05]
        layer["shared_gate"] = torch.randn(1, HIDDEN, generator=generator) * 0.1
    return layer


def prepare(layer) -> int:
    return fp4gemm.ops.prepare_moe(*layer["experts"], layer["router"], shared=layer.get("shared", []),
                                   shared_gate=layer.get("shared_gate"))


def nvfp4_values(values: torch.Tensor, input_scale: float) -> torch.Tensor:
    """values [N] or [T, N] as W4A4 sees them: quantized with `input_scale`, dequantized (float64)."""
    rows = values.float().reshape(-1, values.shape[-1])
    codes, scales, _ = fp4gemm.ops.quantize_activation(rows, input_scale)
    return dequantize(codes, scales, input_scale).double().reshape(values.shape)


def reference(layer, x, topk_ids=None, topk_weights=None, input_scales=None):
    """The layer written out in torch from docs/MOE.md, in float64; with `input_scales` (gate_up's,
    down's), W4A4: x and h quantized to NVFP4 before the expert GEMMs."""
    gate_up_codes, gate_up_scales, gate_up_2, down_codes, down_scales, down_2 = layer["experts"]
    x = x.double()
    if topk_ids is None:
        probabilities = torch.softmax(x @ layer["router"].double().T, dim=-1)
        topk_weights, topk_ids = probabilities.topk(TOP_K, dim=-1)
        topk_weights = topk_weights / topk_weights.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for slot in range(topk_ids.shape[1]):
            e = int(topk_ids[t, slot])
            gate_up = dequantize(gate_up_codes[e], gate_up_scales[e], gate_up_2[e]).double()
            down = dequantize(down_codes[e], down_scales[e], down_2[e]).double()
            x_t = x[t] if input_scales is None else nvfp4_values(x[t], input_scales[0])
            h = x_t @ gate_up.T
            h = torch.nn.functional.silu(h[:INTER]) * h[INTER:]
            if input_scales is not None:
                h = nvfp4_values(h, input_scales[1])
            out[t] += float(topk_weights[t, slot]) * h @ down.T
    if "shared" in layer:
        gate, up, down = (w.double() for w in layer["shared"])
        shared = (torch.nn.functional.silu(x @ gate.T) * (x @ up.T)) @ down.T
        out += torch.sigmoid(x @ layer["shared_gate"].double().T) * shared
    return out.float()


@pytest.fixture(scope="module")
def layer():
    layer = random_layer()
    layer["id"] = prepare(layer)
    return layer


@pytest.mark.parametrize("backend", ["ref", "cpu", "auto"])
def test_moe_matches_an_independent_torch_computation(layer, backend):
    x = torch.randn(5, HIDDEN, generator=torch.Generator().manual_seed(1))
    out = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K, backend=backend)
    assert out.shape == (5, HIDDEN) and out.dtype == torch.float32 and not torch.isnan(out).any()
    expected = reference(layer, x)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert expected.abs().max() > 1e-2  # the layer does something: a zero output would not pass


def test_cpu_backend_agrees_with_ref_and_keeps_leading_dimensions(layer):
    x = torch.randn(2, 3, HIDDEN, dtype=torch.bfloat16)
    ref = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K, backend="ref")
    cpu = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K, backend="cpu", out_dtype=torch.float32)
    assert ref.shape == (2, 3, HIDDEN) and ref.dtype == torch.bfloat16 and cpu.dtype == torch.float32
    assert not torch.isnan(cpu).any()
    torch.testing.assert_close(cpu, ref.float(), rtol=2e-2, atol=2e-3)


def test_given_routing_is_used_as_given(layer):
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(6, HIDDEN, generator=generator)
    topk_ids = torch.randint(0, EXPERTS, (6, 3), generator=generator)
    topk_weights = torch.rand(6, 3, generator=generator)  # not normalised: used as given
    expected = reference(layer, x, topk_ids, topk_weights)
    for ids in (topk_ids, topk_ids.int()):
        out = fp4gemm.ops.moe(x, layer["id"], ids, topk_weights, backend="ref")
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    routed = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K, backend="ref")
    assert not torch.allclose(routed, expected)  # the given routing, not the router's, decided


def test_module_forward_compiles_without_graph_breaks_and_equals_eager(layer):
    gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2 = layer["experts"]
    module = fp4gemm.torch.MoE(gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2, router=layer["router"],
                               top_k=TOP_K, shared=layer["shared"], shared_gate=layer["shared_gate"])
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(module)(torch.randn(3, HIDDEN))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    assert "fp4gemm.moe" in "\n".join(graph.code for graph in explanation.graphs)
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    for rows in (1, 7):
        x = torch.randn(rows, HIDDEN)
        eager = module(x)
        torch.testing.assert_close(compiled(x), eager, rtol=0, atol=0)
        torch.testing.assert_close(eager, reference(layer, x), rtol=1e-4, atol=1e-5)


def test_w4a4_quantizes_x_and_h_with_the_input_scales():
    layer = random_layer(seed=5)
    gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2 = layer["experts"]
    x = torch.randn(4, HIDDEN, generator=torch.Generator().manual_seed(6))
    input_scales = (float(x.abs().max()) / (6 * 448), 0.002)
    module = fp4gemm.torch.MoE(gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2, router=layer["router"],
                               top_k=TOP_K, gate_up_input_scale=torch.full((EXPERTS,), input_scales[0]),
                               down_input_scale=torch.tensor(input_scales[1]), shared=layer["shared"],
                               shared_gate=layer["shared_gate"], activation="nvfp4", backend="ref")
    out = module(x)
    expected = reference(layer, x, input_scales=input_scales)
    assert not torch.isnan(out).any()
    # h is computed in float32 by the library and float64 here: an element on a rounding boundary
    # may land one NVFP4 step apart, so the bound is a fraction of the output's size.
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-3 * float(expected.abs().max()))
    w4a16 = fp4gemm.ops.moe(x, module.layer_id, top_k=TOP_K, backend="ref")
    assert (out - w4a16).abs().max() > 1e-3 * float(expected.abs().max())  # the activations were quantized
    cpu = fp4gemm.ops.moe(x, module.layer_id, top_k=TOP_K, backend="cpu", activation="nvfp4")
    torch.testing.assert_close(cpu, out, rtol=0, atol=1e-3 * float(expected.abs().max()))
    unscaled = fp4gemm.ops.prepare_moe(*layer["experts"], layer["router"])
    with pytest.raises(RuntimeError, match="needs the input_scale"):
        fp4gemm.ops.moe(x, unscaled, top_k=TOP_K, activation="nvfp4")
    with pytest.raises(RuntimeError, match="activation must be"):
        fp4gemm.ops.moe(x, unscaled, top_k=TOP_K, activation="fp8")


def test_moving_the_module_prepares_the_layer_again_and_collecting_it_releases_it(layer):
    gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2 = layer["experts"]
    module = fp4gemm.torch.MoE(gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2, router=layer["router"],
                               top_k=TOP_K)
    x = torch.randn(2, HIDDEN)
    before, old_id = module(x), module.layer_id
    module.to("cpu")  # buffers replaced: the layer is prepared anew, the old id released
    assert module.layer_id != old_id
    torch.testing.assert_close(module(x), before, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="is not a prepared MoE layer"):
        fp4gemm.ops.moe(x, old_id, top_k=TOP_K)
    module.to(torch.bfloat16)  # the router becomes bfloat16; the global scales stay exact FP32
    assert module.router.dtype == torch.bfloat16
    assert torch.equal(module.down_scale_2.view(torch.float32), down_2)
    y = module(x.bfloat16())
    assert y.dtype == torch.bfloat16 and not torch.isnan(y).any()
    torch.testing.assert_close(y.float(), before, rtol=5e-2, atol=5e-3)
    new_id = module.layer_id
    del module
    with pytest.raises(RuntimeError, match="is not a prepared MoE layer"):
        fp4gemm.ops.moe(x, new_id, top_k=TOP_K)


def test_bad_input_raises_the_library_sentence(layer):
    x = torch.randn(2, HIDDEN)
    with pytest.raises(RuntimeError, match="not the layer's hidden size 64"):
        fp4gemm.ops.moe(torch.randn(2, 32), layer["id"], top_k=TOP_K)
    with pytest.raises(RuntimeError, match="give top_k"):
        fp4gemm.ops.moe(x, layer["id"])
    with pytest.raises(RuntimeError, match="both topk_ids and topk_weights"):
        fp4gemm.ops.moe(x, layer["id"], torch.zeros(2, 1, dtype=torch.long))
    with pytest.raises(RuntimeError, match=r"top-k id 9 of token 0 is outside \[0, 4\)"):
        fp4gemm.ops.moe(x, layer["id"], torch.full((2, 1), 9), torch.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"top_k = 5 is outside \[1, 4\]"):
        fp4gemm.ops.moe(x, layer["id"], top_k=5)
    with pytest.raises(RuntimeError, match="is not a prepared MoE layer"):
        fp4gemm.ops.moe(x, 987654, top_k=TOP_K)
    gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2 = layer["experts"]
    with pytest.raises(RuntimeError, match="gate_up_scale must be"):
        fp4gemm.ops.prepare_moe(gate_up, gate_up_scale[:, :, :2], gate_up_2, down, down_scale, down_2)
    with pytest.raises(RuntimeError, match="down_scale_2 must hold one value or one per expert"):
        fp4gemm.ops.prepare_moe(gate_up, gate_up_scale, gate_up_2, down, down_scale, torch.ones(3))
    with pytest.raises(RuntimeError, match="shared must be"):
        fp4gemm.ops.prepare_moe(gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2, shared=[x])
    released = prepare(layer)
    fp4gemm.ops.release_moe(released)
    with pytest.raises(RuntimeError, match="is not a prepared MoE layer"):
        fp4gemm.ops.moe(x, released, top_k=TOP_K)


@requires_cuda
def test_cuda_x_runs_on_the_gpu_and_matches_the_independent_computation(layer):
    x = torch.randn(5, HIDDEN, generator=torch.Generator().manual_seed(3))
    expected = reference(layer, x)
    out = fp4gemm.ops.moe(x.cuda(), layer["id"], top_k=TOP_K)
    assert out.is_cuda and out.dtype == torch.float32 and not torch.isnan(out).any()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5)
    # BF16 x, given routing on the device (int64 ids), BF16 out
    topk_ids = torch.randint(0, EXPERTS, (5, 3), generator=torch.Generator().manual_seed(4))
    topk_weights = torch.rand(5, 3, generator=torch.Generator().manual_seed(5))
    x_bf16 = x.to(torch.bfloat16)
    expected = reference(layer, x_bf16.float(), topk_ids, topk_weights)
    out = fp4gemm.ops.moe(x_bf16.cuda(), layer["id"], topk_ids.cuda(), topk_weights.cuda())
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu().float(), expected, rtol=2e-2, atol=2e-3)


@requires_cuda
def test_cuda_moe_is_captured_by_a_cuda_graph_on_the_current_stream(layer):
    x = torch.randn(4, HIDDEN, device="cuda")
    eager = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up off the default stream, as torch's graph docs do
        fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K)
    x.copy_(torch.randn(4, HIDDEN, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(captured, fp4gemm.ops.moe(x, layer["id"], top_k=TOP_K), rtol=0, atol=0)
    assert not torch.equal(captured, eager)  # the replay computed the new x


@requires_cuda
def test_cuda_inputs_are_refused_with_a_sentence(layer):
    gate_up, gate_up_scale, gate_up_2, down, down_scale, down_2 = layer["experts"]
    with pytest.raises(RuntimeError, match="prepare_moe takes the checkpoint's tensors in host memory"):
        fp4gemm.ops.prepare_moe(gate_up.cuda(), gate_up_scale, gate_up_2, down, down_scale, down_2)
    with pytest.raises(RuntimeError, match="topk_ids is on cpu but x on cuda"):
        fp4gemm.ops.moe(torch.randn(2, HIDDEN, device="cuda"), layer["id"], torch.zeros(2, 1, dtype=torch.int32),
                        torch.ones(2, 1, device="cuda"))


def write_bf16_moe(directory, generator):
    """A tiny BF16 MoE model: layer 0 fused experts with a router and a gated shared expert, layer 1
    per-expert tensors; E = 4, H = 64, I = 32, k = 2."""
    safetensors_torch = pytest.importorskip("safetensors.torch")

    def tensor(*shape):
        return (torch.randn(*shape, generator=generator) * 0.1).to(torch.bfloat16)

    tensors = {"model.layers.0.mlp.experts.gate_up_proj": tensor(EXPERTS, 2 * INTER, HIDDEN),
               "model.layers.0.mlp.experts.down_proj": tensor(EXPERTS, HIDDEN, INTER),
               "model.layers.0.mlp.gate.weight": tensor(EXPERTS, HIDDEN),
               "model.layers.0.mlp.shared_expert.gate_proj.weight": tensor(SHARED_INTER, HIDDEN),
               "model.layers.0.mlp.shared_expert.up_proj.weight": tensor(SHARED_INTER, HIDDEN),
               "model.layers.0.mlp.shared_expert.down_proj.weight": tensor(HIDDEN, SHARED_INTER),
               "model.layers.0.mlp.shared_expert_gate.weight": tensor(1, HIDDEN),
               "model.layers.1.mlp.gate.weight": tensor(EXPERTS, HIDDEN)}
    for e in range(EXPERTS):
        for name, shape in (("gate_proj", (INTER, HIDDEN)), ("up_proj", (INTER, HIDDEN)), ("down_proj", (HIDDEN, INTER))):
            tensors[f"model.layers.1.mlp.experts.{e}.{name}.weight"] = tensor(*shape)
    directory.mkdir()
    safetensors_torch.save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(
        {"model_type": "qwen3_moe", "hidden_size": HIDDEN, "num_experts": EXPERTS, "num_experts_per_tok": TOP_K,
         "norm_topk_prob": True}))


@pytest.mark.parametrize("prefix", ["model.layers.0.mlp", "model.layers.1.mlp"])
def test_moe_from_checkpoint_equals_the_cli(tmp_path, cli, prefix):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    generator = torch.Generator().manual_seed(4)
    write_bf16_moe(tmp_path / "in", generator)
    subprocess.run([cli, "quantize", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "ckpt"), "--quiet"],
                   check=True)
    x = torch.randn(3, HIDDEN, generator=generator)
    safetensors_torch.save_file({"x": x}, str(tmp_path / "x.safetensors"))
    for backend in ("ref", "cpu"):
        y_path = tmp_path / f"y_{backend}.safetensors"
        subprocess.run([cli, "moe", "--checkpoint", str(tmp_path / "ckpt"), "--layer", prefix, "--input",
                        str(tmp_path / "x.safetensors"), "--output", str(y_path), "--output-dtype", "f32",
                        "--backend", backend], check=True, capture_output=True)
        expected = safetensors_torch.load_file(str(y_path))["output"]
        module = fp4gemm.torch.MoE.from_checkpoint(tmp_path / "ckpt", prefix, backend=backend)
        assert module.top_k == TOP_K and module.num_experts == EXPERTS and module.hidden_size == HIDDEN
        assert (module.shared_gate is not None) == (prefix == "model.layers.0.mlp")
        out = module(x)
        assert not torch.isnan(out).any() and expected.abs().max() > 0
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="model.layers.7.mlp"):
        fp4gemm.torch.MoE.from_checkpoint(tmp_path / "ckpt", "model.layers.7.mlp")

