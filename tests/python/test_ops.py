"""torch.ops.fp4gemm on the CPU: gemm against the C++ reference backend and an independent
dequantize-then-matmul, quantizers' shapes and round trip, and errors that carry the library's sentence."""
import pytest
import torch

import fp4gemm
from conftest import dequantize, random_weight

ops = fp4gemm.ops


@pytest.mark.parametrize("m,n,k", [(1, 64, 128), (5, 48, 256), (33, 16, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gemm_matches_ref_backend_and_dequantized_matmul(m, n, k, dtype):
    codes, scales, scale_2 = random_weight(n, k, seed=m * 1000 + n + k)
    weight_id = ops.prepare(codes, scales, scale_2)
    try:
        a = (torch.randn(m, k, generator=torch.Generator().manual_seed(k)) * 0.5).to(dtype)
        alpha = float(scale_2)
        auto = ops.gemm(a, codes, weight_id, alpha, torch.float32, "auto")
        ref = ops.gemm(a, codes, weight_id, alpha, torch.float32, "ref")
        expected = a.float() @ dequantize(codes, scales, scale_2).T
        assert auto.shape == (m, n) and auto.dtype == torch.float32
        assert not torch.isnan(auto).any() and not torch.isnan(ref).any()
        torch.testing.assert_close(ref, expected, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(auto, ref, rtol=1e-3, atol=1e-3)
        assert expected.abs().max() > 0.01  # the check has something to compare
    finally:
        ops.release(weight_id)


def test_gemm_keeps_leading_dimensions_and_defaults_to_the_activation_dtype():
    codes, scales, scale_2 = random_weight(32, 64, seed=1)
    weight_id = ops.prepare(codes, scales, scale_2)
    a = torch.randn(2, 3, 64, dtype=torch.bfloat16)
    out = ops.gemm(a, codes, weight_id, 1.0)
    assert out.shape == (2, 3, 32) and out.dtype == torch.bfloat16
    expected = ops.gemm(a.reshape(6, 64), codes, weight_id, 1.0, torch.bfloat16, "ref").reshape(2, 3, 32)
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    ops.release(weight_id)


def test_gemm_accepts_a_strided_activation():
    codes, scales, scale_2 = random_weight(16, 64, seed=2)
    weight_id = ops.prepare(codes, scales, scale_2)
    wide = torch.randn(4, 128)
    view = wide[:, 32:96]  # row stride 128
    out = ops.gemm(view, codes, weight_id, 1.0, torch.float32, "ref")
    torch.testing.assert_close(out, view @ dequantize(codes, scales).T, rtol=1e-4, atol=1e-4)
    ops.release(weight_id)


def test_gemm_out_writes_what_gemm_returns_into_the_callers_tensor():
    codes, scales, scale_2 = random_weight(48, 64, seed=3)
    weight_id = ops.prepare(codes, scales, scale_2)
    try:
        for shape in [(1, 64), (5, 64), (2, 3, 64)]:
            a = torch.randn(*shape, dtype=torch.bfloat16)
            expected = ops.gemm(a, codes, weight_id, 0.5, torch.float32, "ref")
            out = torch.full((*shape[:-1], 48), float("nan"))
            assert ops.gemm_out(a, codes, weight_id, 0.5, out, "ref") is None
            torch.testing.assert_close(out, expected, rtol=0, atol=0)
        # Into columns 16..63 of a wider buffer: rows 80 apart, the columns around left alone.
        wide = torch.full((5, 80), float("nan"))
        a = torch.randn(5, 64)
        ops.gemm_out(a, codes, weight_id, 1.0, wide[:, 16:64], "ref")
        torch.testing.assert_close(wide[:, 16:64], ops.gemm(a, codes, weight_id, 1.0, torch.float32, "ref"), rtol=0, atol=0)
        assert torch.isnan(wide[:, :16]).all() and torch.isnan(wide[:, 64:]).all()
        with pytest.raises(RuntimeError, match=r"gemm_out: out is \[5, 47\] but the activation and weight give \[5, 48\]"):
            ops.gemm_out(a, codes, weight_id, 1.0, torch.empty(5, 47))
        with pytest.raises(RuntimeError, match="last dimension must be contiguous"):
            ops.gemm_out(a, codes, weight_id, 1.0, torch.empty(48, 5).T)
        with pytest.raises(RuntimeError, match="gemm_out: out"):
            ops.gemm_out(a, codes, weight_id, 1.0, torch.empty(5, 48, dtype=torch.int32))
    finally:
        ops.release(weight_id)


def test_gemm_out_compiles_fullgraph_and_equals_eager():
    codes, scales, scale_2 = random_weight(32, 64, seed=4)
    weight_id = ops.prepare(codes, scales, scale_2)
    try:
        def step(a, out):
            ops.gemm_out(a, codes, weight_id, 1.0, out)
            return out * 2

        torch._dynamo.reset()
        compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
        a = torch.randn(3, 64)
        out_compiled, out_eager = torch.empty(3, 32), torch.empty(3, 32)
        torch.testing.assert_close(compiled(a, out_compiled), step(a, out_eager), rtol=0, atol=0)
        torch.testing.assert_close(out_compiled, out_eager, rtol=0, atol=0)
    finally:
        ops.release(weight_id)


@pytest.mark.parametrize("m", [1, 9])
def test_w4a4_gemm_matches_ref_backend_and_dequantized_matmul(m):
    codes, scales, scale_2 = random_weight(32, 128, seed=m)
    weight_id = ops.prepare(codes, scales, scale_2)
    a_codes, a_scales, input_scale = ops.quantize_activation(torch.randn(m, 128))
    alpha = float(input_scale) * float(scale_2)
    auto = ops.gemm_nvfp4(a_codes, a_scales, codes, weight_id, alpha, torch.float32)
    ref = ops.gemm_nvfp4(a_codes, a_scales, codes, weight_id, alpha, torch.float32, "ref")
    expected = dequantize(a_codes, a_scales, input_scale) @ dequantize(codes, scales, scale_2).T
    assert auto.shape == (m, 32) and not torch.isnan(auto).any()
    torch.testing.assert_close(ref, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(auto, ref, rtol=1e-3, atol=1e-4)
    assert ops.gemm_nvfp4(a_codes, a_scales, codes, weight_id, alpha).dtype == torch.bfloat16
    narrow = (a_codes[:, :32].contiguous(), a_scales[:, :4].contiguous())
    expect_error("K", lambda: ops.gemm_nvfp4(*narrow, codes, weight_id, alpha))
    expect_error("must be contiguous", lambda: ops.gemm_nvfp4(a_codes[:, ::2], a_scales[:, ::2], codes, weight_id, alpha))
    torch._dynamo.reset()
    compiled = torch.compile(lambda c, s: ops.gemm_nvfp4(c, s, codes, weight_id, alpha, torch.float32), fullgraph=True)
    torch.testing.assert_close(compiled(a_codes, a_scales), auto, rtol=0, atol=0)
    ops.release(weight_id)


def test_quantize_weight_round_trips_within_nvfp4_error():
    weight = torch.randn(64, 256) * 0.1
    codes, scales, scale_2 = ops.quantize_weight(weight)
    assert codes.dtype == torch.uint8 and codes.shape == (64, 128)
    assert scales.dtype == torch.float8_e4m3fn and scales.shape == (64, 16)
    assert scale_2.shape == () and scale_2.dtype == torch.float32
    torch.testing.assert_close(float(scale_2), float(weight.abs().max()) / (6 * 448), rtol=1e-6, atol=0)
    back = dequantize(codes, scales, scale_2)
    # E2M1 keeps ~1 significant bit: the error of each element is within a quarter of its block's amax.
    block_amax = weight.abs().reshape(64, 16, 16).amax(-1).repeat_interleave(16, dim=1)
    assert ((back - weight).abs() <= block_amax * 0.25 + 1e-6).all()


def test_quantize_activation_uses_the_given_input_scale():
    a = torch.randn(3, 64)
    codes, scales, input_scale = ops.quantize_activation(a, 0.01)
    assert codes.shape == (3, 32) and scales.shape == (3, 4) and float(input_scale) == pytest.approx(0.01)
    default = ops.quantize_activation(a)
    assert float(default[2]) == pytest.approx(float(a.abs().max()) / (6 * 448), rel=1e-6)
    back = dequantize(codes, scales, input_scale)
    block_amax = a.abs().reshape(3, 4, 16).amax(-1).repeat_interleave(16, dim=1)
    assert ((back - a).abs() <= block_amax * 0.25 + 1e-3).all()


def test_numpy_and_dlpack_inputs_on_the_cpu_path():
    np = pytest.importorskip("numpy")
    weight = np.random.default_rng(3).standard_normal((16, 64)).astype(np.float32)
    from_numpy = fp4gemm.quantize_weight(weight)
    from_torch = fp4gemm.quantize_weight(torch.from_numpy(weight))
    assert isinstance(from_numpy.codes, np.ndarray) and from_numpy.scales.dtype == np.uint8
    assert (from_numpy.codes == from_torch.codes.numpy()).all()
    assert (from_numpy.scales == from_torch.scales.view(torch.uint8).numpy()).all()
    assert fp4gemm.as_tensor(weight).data_ptr() == weight.ctypes.data  # shared through DLPack, not copied


def expect_error(fragment, call):
    with pytest.raises(RuntimeError) as caught:
        call()
    assert fragment in str(caught.value), str(caught.value)


def test_host_cost_us_runs_the_library_call_and_refuses_bad_input():
    codes, scales, scale_2 = random_weight(48, 64, seed=5)
    weight_id = ops.prepare(codes, scales, scale_2)
    try:
        a = torch.randn(3, 64)
        out = torch.full((3, 48), float("nan"))
        cost = ops.host_cost_us(a, codes, weight_id, 0.5, out, "ref", 5)
        assert cost > 0
        torch.testing.assert_close(out, ops.gemm(a, codes, weight_id, 0.5, torch.float32, "ref"), rtol=0, atol=0)
        with pytest.raises(RuntimeError, match="host_cost_us: calls must be at least 1, got 0"):
            ops.host_cost_us(a, codes, weight_id, 0.5, out, "ref", 0)
        with pytest.raises(RuntimeError, match=r"host_cost_us: takes a 2-D activation \[M, K\] and out \[M, N\]"):
            ops.host_cost_us(a, codes, weight_id, 0.5, torch.empty(3, 47), "ref", 1)
    finally:
        ops.release(weight_id)


def test_bad_input_raises_the_library_sentence():
    codes, scales, scale_2 = random_weight(16, 64, seed=4)
    weight_id = ops.prepare(codes, scales, scale_2)
    expect_error("not a multiple of 16", lambda: ops.quantize_weight(torch.randn(4, 40)))
    expect_error("must be float32, bfloat16 or float16", lambda: ops.gemm(torch.ones(1, 64, dtype=torch.int32), codes, weight_id, 1.0))
    expect_error("K", lambda: ops.gemm(torch.randn(2, 48), codes, weight_id, 1.0))
    expect_error("was prepared from another codes tensor", lambda: ops.gemm(torch.randn(1, 64), codes.clone(), weight_id, 1.0))
    expect_error("is not a prepared weight", lambda: ops.gemm(torch.randn(1, 64), codes, 999999, 1.0))
    expect_error("do not match codes", lambda: ops.prepare(codes, scales[:, :2], scale_2))
    expect_error("backend", lambda: ops.gemm(torch.randn(1, 64), codes, weight_id, 1.0, None, "no_such_backend"))
    nan_scales = scales.view(torch.uint8).clone()
    nan_scales[0, 0] = 0x7F  # E4M3 NaN
    expect_error("NaN", lambda: ops.prepare(codes, nan_scales, scale_2))
    ops.release(weight_id)
    expect_error("is not a prepared weight", lambda: ops.release(weight_id))


def test_info_and_explain_return_what_the_cli_prints():
    report = fp4gemm.info()
    names = [backend["name"] for backend in report["compiled_backends"]]
    assert "ref" in names and report["devices"][0]["backends"]
    explanation = fp4gemm.explain(1, 4096, 4096, device="cpu")
    assert explanation["problem"] == {"m": 1, "n": 4096, "k": 4096, "activation": "bf16", "output": "bf16"}
    assert explanation["choice"] in names and explanation["candidates"]
    assert explanation["choice"] in explanation["text"]
    forced = fp4gemm.explain(8, 64, 64, activation="f32", output="f32", backend="ref", device="cpu")
    assert forced["choice"] == "ref"
    expect_error("multiple of 16", lambda: fp4gemm.explain(1, 64, 40))


def test_explain_moe_returns_what_the_cli_prints():
    explanation = fp4gemm.explain_moe(3, 8, 2, 64, 32, device="cpu")
    assert explanation["problem"].startswith("T=3 H=64 I=32 E=8 k=2"), explanation
    assert explanation["choice"] == "cpu" and explanation["plan"].startswith("tokens grouped by expert"), explanation
    assert any(candidate["backend"] == "ref" and candidate["ok"] for candidate in explanation["candidates"])
    assert "plan:" in explanation["text"] and explanation["choice"] in explanation["text"]
    given = fp4gemm.explain_moe(3, 8, 2, 64, 32, shared_intermediate=16, routing_given=True, backend="ref", device="cpu")
    assert given["choice"] == "ref" and "routing=given" in given["problem"] and "shared" in given["problem"], given
    expect_error("expert count 8", lambda: fp4gemm.explain_moe(1, 8, 9, 64, 32, device="cpu"))
    expect_error("tokens must be positive", lambda: fp4gemm.explain_moe(0, 8, 2, 64, 32, device="cpu"))


def test_resident_reports_each_layout_made_so_far():
    codes, scales, scale_2 = random_weight(64, 128, seed=9)
    weight_id = ops.prepare(codes, scales, scale_2)
    try:
        assert fp4gemm.resident(weight_id) == {"device_bytes": 0, "host_bytes": 0, "by_backend": {}}
        ops.gemm(torch.randn(2, 128), codes, weight_id, 1.0, torch.float32, "ref")
        held = fp4gemm.resident(weight_id)
        assert held["by_backend"] == {"ref": 64 * 128 * 9 // 16}  # codes and scales, 0.5625 B/element
        assert held["host_bytes"] == 64 * 128 * 9 // 16 and held["device_bytes"] == 0
        explanation = fp4gemm.explain(1, 64, 128, device="cpu")
        assert explanation["memory"]["nvfp4_bytes"] == 64 * 128 * 9 // 16
        assert "memory:" in explanation["text"]
    finally:
        ops.release(weight_id)
    expect_error("is not a prepared weight", lambda: fp4gemm.resident(weight_id))


def test_auto_leaves_the_choice_to_fp4gemm_backend_as_the_cli_does():
    import json, os, subprocess, sys
    code = "import fp4gemm, json; print(json.dumps(fp4gemm.explain(1, 64, 64, device='cpu')))"
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, "FP4GEMM_BACKEND": "ref"},
                            capture_output=True, text=True, check=True)
    explanation = json.loads(result.stdout.strip().splitlines()[-1])
    assert explanation["choice"] == "ref" and "FP4GEMM_BACKEND" in explanation["setting_origin"], explanation
