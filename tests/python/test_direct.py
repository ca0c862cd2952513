"""The direct eager bindings (fp4gemm.direct: gemm, gemm_out, moe): the ops' own C++ bodies without the
dispatcher. They equal the ops bit for bit, raise the library's sentences, are what Linear and MoE
call in eager mode (the ops under torch.compile and dispatch modes), and cost the host less per call
than the ops at M = 1 (printed, as docs/PYTHON.md reports them)."""
import time
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import fp4gemm
import fp4gemm.torch
from conftest import random_weight
from test_moe import HIDDEN, TOP_K, prepare, random_layer

direct, ops = fp4gemm.direct, fp4gemm.ops
# A _C.so built for another Python version serves the ops only (fp4gemm/_library.py warns so).
pytestmark = pytest.mark.skipif(direct is None, reason="the direct bindings did not load: _C.so was built for another Python")


@pytest.fixture(scope="module")
def weight():
    codes, scales, scale_2 = random_weight(48, 64, seed=7)
    weight_id = ops.prepare(codes, scales, scale_2)
    yield codes, weight_id, float(scale_2)
    ops.release(weight_id)


@pytest.mark.parametrize("shape", [(1, 64), (5, 64), (2, 3, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("backend", ["ref", "auto"])
def test_direct_gemm_and_gemm_out_equal_the_ops(weight, shape, dtype, backend):
    codes, weight_id, alpha = weight
    x = torch.randn(*shape, dtype=dtype)
    expected = ops.gemm(x, codes, weight_id, alpha, None, backend)
    out = direct.gemm(x, codes, weight_id, alpha, None, backend)
    assert out.shape == (*shape[:-1], 48) and out.dtype == dtype
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    defaults = direct.gemm(x, codes, weight_id, alpha)  # out_dtype=None, backend="auto", as the op's schema
    torch.testing.assert_close(defaults, ops.gemm(x, codes, weight_id, alpha), rtol=0, atol=0)
    into = torch.full((*shape[:-1], 48), float("nan"))
    assert direct.gemm_out(x, codes, weight_id, alpha, into, backend) is None
    torch.testing.assert_close(into, ops.gemm(x, codes, weight_id, alpha, torch.float32, backend), rtol=0, atol=0)


def test_direct_moe_equals_the_op():
    layer = random_layer(seed=3)
    layer_id = prepare(layer)
    try:
        x = torch.randn(3, HIDDEN, dtype=torch.bfloat16)
        expected = ops.moe(x, layer_id, top_k=TOP_K, out_dtype=torch.float32, backend="ref")
        torch.testing.assert_close(direct.moe(x, layer_id, top_k=TOP_K, out_dtype=torch.float32, backend="ref"),
                                   expected, rtol=0, atol=0)
        ids, weights = torch.tensor([[0, 2], [1, 3], [3, 0]]), torch.rand(3, 2)
        given = direct.moe(x, layer_id, ids, weights)
        torch.testing.assert_close(given, ops.moe(x, layer_id, ids, weights), rtol=0, atol=0)
    finally:
        ops.release_moe(layer_id)


def test_direct_errors_raise_the_library_sentence(weight):
    codes, weight_id, alpha = weight
    for call in (ops, direct):  # the same sentence from both
        with pytest.raises(RuntimeError, match="gemm: the activation must be float32, bfloat16 or float16"):
            call.gemm(torch.ones(1, 64, dtype=torch.int32), codes, weight_id, alpha)
        with pytest.raises(RuntimeError, match="gemm: weight id 999999 is not a prepared weight"):
            call.gemm(torch.randn(1, 64), codes, 999999, alpha)
        with pytest.raises(RuntimeError, match=r"gemm_out: out is \[5, 47\] but the activation and weight give"):
            call.gemm_out(torch.randn(5, 64), codes, weight_id, alpha, torch.empty(5, 47))
        with pytest.raises(RuntimeError, match="moe: layer id"):
            call.moe(torch.randn(1, HIDDEN), 999999, top_k=TOP_K)


class Recorder:
    """Stands in for `direct` or `ops` in fp4gemm.torch: records the names looked up, then gives the real ones."""

    def __init__(self, target):
        self.target, self.names = target, []

    def __getattr__(self, name):
        self.names.append(name)
        return getattr(self.target, name)


class OpLog(TorchDispatchMode):
    """A dispatch mode (as make_fx and FlopCounterMode are) that logs the ops it sees."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_linear_calls_the_direct_binding_eagerly_and_the_op_for_modes_autograd_and_the_tracer(monkeypatch):
    codes, scales, scale_2 = random_weight(32, 64, seed=8)
    layer = fp4gemm.torch.Linear(codes, scales, scale_2, bias=torch.randn(32), backend="ref")
    x = torch.randn(2, 64)
    expected = ops.gemm(x, layer.weight, layer.weight_id, layer.alpha, None, "ref") + layer.bias
    direct_calls, op_calls = Recorder(direct), Recorder(ops)
    monkeypatch.setattr(fp4gemm.torch, "direct", direct_calls)
    monkeypatch.setattr(fp4gemm.torch, "ops", op_calls)
    torch.testing.assert_close(layer(x), expected, rtol=0, atol=0)
    assert direct_calls.names == ["gemm"] and op_calls.names == []
    with OpLog() as log:
        torch.testing.assert_close(layer(x), expected, rtol=0, atol=0)
    assert op_calls.names == ["gemm"] and "fp4gemm.gemm.default" in log.ops  # the mode saw the op
    layer(x.clone().requires_grad_())
    assert op_calls.names == ["gemm", "gemm"]  # autograd's turn: the op, whose missing backward it reports
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.trace is deprecated, and still used
        traced = torch.jit.trace(layer, x)
    assert "fp4gemm::gemm" in str(traced.graph)  # the tracer ran the op (its check then runs forward eagerly)
    torch.testing.assert_close(traced(x), expected, rtol=0, atol=0)


def test_moe_calls_the_direct_binding_eagerly(monkeypatch):
    layer = random_layer(seed=4, shared=False)
    module = fp4gemm.torch.MoE(*layer["experts"], router=layer["router"], top_k=TOP_K, backend="ref")
    x = torch.randn(3, HIDDEN)
    expected = ops.moe(x, module.layer_id, top_k=TOP_K, backend="ref")
    direct_calls, op_calls = Recorder(direct), Recorder(ops)
    monkeypatch.setattr(fp4gemm.torch, "direct", direct_calls)
    monkeypatch.setattr(fp4gemm.torch, "ops", op_calls)
    torch.testing.assert_close(module(x), expected, rtol=0, atol=0)
    assert direct_calls.names == ["moe"] and op_calls.names == []


def host_us_per_call(call, calls, repeats=5):
    """The best over `repeats` of the mean host time per call of `calls` calls back to back, after 20 untimed."""
    for _ in range(20):
        call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


# 16x16 (`ref`): the call itself is under a microsecond, so the differences are the Python paths'
# own costs. 4096x4096 (`cpu`) as on the GPU machine: the CPU backend computes ~0.3 ms per call on
# the host, whose run-to-run noise is as large as the paths' differences, so nothing is asserted there.
@pytest.mark.parametrize("n,k,backend,calls", [(16, 16, "ref", 20000), (4096, 4096, "cpu", 200)])
def test_python_path_cost_at_m1_on_the_cpu(n, k, backend, calls):
    codes, scales, scale_2 = random_weight(n, k, seed=9)
    layer = fp4gemm.torch.Linear(codes, scales, scale_2, out_dtype=torch.bfloat16, backend=backend)
    weight, weight_id, alpha = layer.weight, layer.weight_id, layer.alpha
    x = torch.randn(1, k, dtype=torch.bfloat16)
    out = torch.empty(1, n, dtype=torch.bfloat16)
    library = min(ops.host_cost_us(x, weight, weight_id, alpha, out, backend, calls) for _ in range(5))
    paths = {
        "ops.gemm_out": lambda: ops.gemm_out(x, weight, weight_id, alpha, out, backend),
        "ops.gemm": lambda: ops.gemm(x, weight, weight_id, alpha, torch.bfloat16, backend),
        "direct.gemm_out": lambda: direct.gemm_out(x, weight, weight_id, alpha, out, backend),
        "direct.gemm": lambda: direct.gemm(x, weight, weight_id, alpha, torch.bfloat16, backend),
        "Linear(x)": lambda: layer(x),
    }
    costs = {path: host_us_per_call(call, calls) for path, call in paths.items()}
    empty = host_us_per_call(lambda: torch.empty(1, n, dtype=torch.bfloat16), calls)
    print(f"\nhost us per call, {n}x{k} M = 1 BF16, backend {backend}: C++ runner call {library:.2f}; " +
          "; ".join(f"{path} {cost:.2f} (+{cost - library:.2f})" for path, cost in costs.items()) +
          f"; torch.empty [1, {n}] {empty:.2f}")
    assert library > 0 and empty > 0 and all(cost > 0 for cost in costs.values())
    if n == 16:
        assert costs["direct.gemm_out"] < costs["ops.gemm_out"] and costs["direct.gemm"] < costs["ops.gemm"]


def test_linear_eager_references_follow_the_buffers_when_moved():
    """Linear's eager path reads its own references to the codes and bias (plain attributes, not a
    buffer lookup); a move that replaces the buffers refreshes them with the weight's id."""
    codes, scales, scale_2 = random_weight(48, 64, seed=11)
    layer = fp4gemm.torch.Linear(codes, scales, scale_2, bias=torch.randn(48), out_dtype=torch.float32, backend="ref")
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    before = layer(x)
    old_id = layer.weight_id
    layer._apply(lambda tensor: tensor.clone())  # what .to() does: every buffer replaced
    assert layer._eager_codes is layer.weight and layer._eager_bias is layer.bias
    assert layer.weight_id != old_id
    torch.testing.assert_close(layer(x), before, rtol=0, atol=0)
    torch.testing.assert_close(layer(x), ops.gemm(x, layer.weight, layer.weight_id, layer.alpha, torch.float32, "ref") + layer.bias,
                               rtol=0, atol=0)
