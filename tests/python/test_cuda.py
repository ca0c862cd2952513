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


def test_python_path_cost_at_m1():
    layer = cuda_layer(4096, 4096)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        layer(x)
    torch.cuda.synchronize()
    calls = 2000
    start = time.perf_counter()
    for _ in range(calls):
        ops.gemm(x, layer.weight, layer.weight_id, layer.alpha, torch.bfloat16, "auto")
    host_us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    print(f"python path, 4096x4096 M = 1: {host_us:.2f} us of host time per call (launch included)")
    assert host_us > 0
