"""The CUDA path: the caller's stream is honoured, CUDA graph capture + replay equals eager,
torch.compile on CUDA tensors, and the cost of the Python path at M = 1 (printed; measured on the
GPU machine). Skipped without a CUDA GPU."""
import time

import pytest
import torch

import fp4gemm
import fp4gemm.torch
from conftest import dequantize, random_weight, requires_cuda

pytestmark = requires_cuda
ops = fp4gemm.ops
direct = fp4gemm.direct


def cuda_layer(n=512, k=1024, seed=0):
    codes, scales, scale_2 = random_weight(n, k, seed)
    return fp4gemm.torch.Linear(codes.cuda(), scales.cuda(), scale_2.cuda(), out_dtype=torch.bfloat16)


def expected_output(layer, x):
    weight = dequantize(layer.weight, layer.weight_scale, layer.weight_scale_2)
    return (x.float().cpu() @ weight.T)


def test_cuda_gemm_matches_the_dequantized_matmul():
    layer = cuda_layer()
    x = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
    out = layer(x)
    assert out.is_cuda and out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float().cpu(), expected_output(layer, x), rtol=2e-2, atol=2e-2)


def test_a_non_default_stream_is_honoured():
    layer = cuda_layer()
    x = torch.randn(8, 1024, device="cuda", dtype=torch.bfloat16)
    reference = layer(x)
    y = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        # y is written only after a long sleep on this stream: a gemm launched on any other stream
        # would read the NaNs.
        torch.cuda._sleep(50_000_000)
        y.copy_(x)
        out = layer(y)
    torch.cuda.current_stream().wait_stream(stream)
    torch.testing.assert_close(out, reference, rtol=0, atol=0)


def test_cuda_graph_capture_and_replay_equals_eager():
    layer = cuda_layer()
    static_x = torch.randn(1, 1024, device="cuda", dtype=torch.bfloat16)
    eager = layer(static_x)  # warm-up: layouts made and kernels proven before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = layer(static_x)
    static_out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_out, eager, rtol=0, atol=0)
    static_x.copy_(torch.randn(1, 1024, device="cuda", dtype=torch.bfloat16))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_out, layer(static_x), rtol=0, atol=0)


def test_torch_compile_on_cuda_equals_eager():
    layer = cuda_layer()
    torch._dynamo.reset()
    compiled = torch.compile(layer, fullgraph=True)
    x = torch.randn(3, 1024, device="cuda", dtype=torch.bfloat16)
    torch.testing.assert_close(compiled(x), layer(x), rtol=0, atol=0)


def host_us_per_call(call, calls=2000):
    """Host time per call of `call` issued back to back (the GPU keeps up at M = 1, so this is the
    host's cost, launch included), after 20 untimed calls."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    host_us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host_us


def test_python_path_cost_at_m1():
    layer = cuda_layer(4096, 4096)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    ours = host_us_per_call(lambda: ops.gemm(x, layer.weight, layer.weight_id, layer.alpha, torch.bfloat16, "auto"))
    print(f"python path, 4096x4096 M = 1: {ours:.2f} us of host time per call (launch included)")
    out = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
    into = host_us_per_call(lambda: ops.gemm_out(x, layer.weight, layer.weight_id, layer.alpha, out, "auto"))
    torch.testing.assert_close(out, ops.gemm(x, layer.weight, layer.weight_id, layer.alpha, torch.bfloat16, "auto"), rtol=0, atol=0)
    print(f"python path into a given out (gemm_out), 4096x4096 M = 1: {into:.2f} us of host time per call")
    library = ops.host_cost_us(x, layer.weight, layer.weight_id, layer.alpha, out, "auto", 2000)
    torch.cuda.synchronize()
    print(f"C++ runner call, same process: {library:.2f} us; the Python path adds {ours - library:.2f} us (gemm), "
          f"{into - library:.2f} us (gemm_out)")
    # The direct bindings that Linear calls in eager mode: the same bodies without the dispatcher
    # (absent where _C.so was built for another Python: the ops then serve every call).
    direct_gemm = direct_into = 1.0
    if direct is not None:
        direct_gemm = host_us_per_call(lambda: direct.gemm(x, layer.weight, layer.weight_id, layer.alpha, torch.bfloat16, "auto"))
        direct_into = host_us_per_call(lambda: direct.gemm_out(x, layer.weight, layer.weight_id, layer.alpha, out, "auto"))
        module = host_us_per_call(lambda: layer(x))
        print(f"direct bindings: gemm {direct_gemm:.2f} us (adds {direct_gemm - library:.2f}), gemm_out {direct_into:.2f} us "
              f"(adds {direct_into - library:.2f}); Linear(x) {module:.2f} us (adds {module - library:.2f})")
    # What PyTorch's own ops cost the host in the same process, for scale: a BF16 linear of the
    # same shape (cuBLAS) and the output allocation alone.
    dense = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    linear = host_us_per_call(lambda: torch.nn.functional.linear(x, dense))
    empty = host_us_per_call(lambda: torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16))
    print(f"torch's own, same process: F.linear BF16 4096x4096 M = 1 {linear:.2f} us, torch.empty [1, 4096] {empty:.2f} us")
    assert ours > 0 and into > 0 and library > 0 and linear > 0 and empty > 0 and direct_gemm > 0 and direct_into > 0
