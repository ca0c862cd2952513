#!/usr/bin/env python3
"""Interop with the Python `safetensors` library (the files the hub is made of):
files it writes are read identically by fp4gemm, and files fp4gemm writes are read back by it.
Run by python_interop_test.sh inside an environment that has safetensors and numpy."""
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import safetensors
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_stdlib import load as load_raw  # noqa: E402

CLI = os.environ["FP4GEMM_CLI"]
NAMES = {np.float16: "F16", np.float32: "F32", np.float64: "F64", np.int8: "I8", np.int16: "I16", np.int32: "I32",
         np.int64: "I64", np.uint8: "U8", np.uint16: "U16", np.uint32: "U32", np.uint64: "U64", np.bool_: "BOOL"}
checks = failures = 0


def check(condition, what):
    global checks, failures
    checks += 1
    if not condition:
        failures += 1
        print(f"FAIL: {what}")


def cli(*args):
    result = subprocess.run([CLI, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"fp4gemm {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def inspect_tensors(path):
    report = json.loads(cli("inspect", path, "--json", "--tensors"))
    return {t["name"]: t for t in report["tensor_list"]}, report


def reads_what_python_wrote(work, rng):
    arrays = {}
    for dtype in NAMES:
        if dtype is np.bool_:
            arrays["t.bool"] = rng.integers(0, 2, size=(3, 5)).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            arrays[f"t.{NAMES[dtype].lower()}"] = rng.integers(info.min, info.max, size=(4, 3), dtype=dtype, endpoint=True)
        else:
            arrays[f"t.{NAMES[dtype].lower()}"] = rng.standard_normal((2, 3, 4)).astype(dtype)
    arrays["scalar"] = np.array(3.5, dtype=np.float32)
    arrays["empty"] = np.zeros((0, 3), dtype=np.float32)
    path = os.path.join(work, "python_written.safetensors")
    save_file(arrays, path, metadata={"format": "pt", "note": "written by safetensors " + safetensors.__version__})
    listed, report = inspect_tensors(path)
    check(set(listed) == set(arrays), f"tensor names differ: {sorted(set(listed) ^ set(arrays))}")
    for name, array in arrays.items():
        entry = listed.get(name)
        if entry is None:
            continue
        check(entry["dtype"] == NAMES[array.dtype.type], f"{name}: dtype {entry['dtype']} != {NAMES[array.dtype.type]}")
        check(entry["shape"] == list(array.shape), f"{name}: shape {entry['shape']} != {list(array.shape)}")
        check(entry["bytes"] == array.nbytes, f"{name}: {entry['bytes']} bytes != {array.nbytes}")
        check(entry["crc32"] == zlib.crc32(array.tobytes()), f"{name}: bytes differ (crc32)")
    check(report["tensors"] == len(arrays), "inspect counts the tensors")


def reads_sharded_checkpoint(work, rng):
    directory = os.path.join(work, "sharded")
    os.makedirs(directory)
    shards = {"model-00001-of-00002.safetensors": {"a.weight": rng.standard_normal((4, 16)).astype(np.float32)},
              "model-00002-of-00002.safetensors": {"b.weight": rng.standard_normal((2, 16)).astype(np.float16),
                                                   "b.bias": np.ones(2, dtype=np.float16)}}
    weight_map = {}
    for shard, arrays in shards.items():
        save_file(arrays, os.path.join(directory, shard), metadata={"format": "pt"})
        weight_map.update({name: shard for name in arrays})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as handle:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, handle)
    listed, report = inspect_tensors(directory)
    check(report["files"] == 2 and set(listed) == set(weight_map), f"sharded checkpoint read as {report['files']} files, {sorted(listed)}")
    for arrays in shards.values():
        for name, array in arrays.items():
            check(listed[name]["crc32"] == zlib.crc32(array.tobytes()), f"sharded {name}: bytes differ")


def python_reads_what_we_wrote(work, rng):
    weights = {
        "model.layers.0.self_attn.q_proj.weight": rng.standard_normal((32, 64)).astype(np.float32),
        "model.layers.0.mlp.down_proj.weight": rng.standard_normal((16, 32)).astype(np.float16),
        "model.layers.0.input_layernorm.weight": np.ones(64, dtype=np.float32),
        "model.embed_tokens.weight": rng.standard_normal((8, 64)).astype(np.float32),
        "position_ids": np.arange(7, dtype=np.int64),
    }
    source = os.path.join(work, "model_f32.safetensors")
    save_file(weights, source, metadata={"format": "pt"})
    output = os.path.join(work, "nvfp4", "model.safetensors")
    cli("quantize", "--in", source, "--out", output, "--quiet")
    with safe_open(output, framework="numpy") as handle:
        check(handle.metadata() == {"format": "pt"}, f"metadata lost: {handle.metadata()}")
        keys = set(handle.keys())
        for prefix in ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj"):
            check({prefix + s for s in (".weight", ".weight_scale", ".weight_scale_2")} <= keys, f"{prefix} tensors missing")
        q = "model.layers.0.self_attn.q_proj"
        check(handle.get_slice(q + ".weight").get_dtype() == "U8", "codes are U8")
        check(handle.get_slice(q + ".weight").get_shape() == [32, 32], "codes are [N, K/2]")
        check(handle.get_slice(q + ".weight_scale").get_dtype() == "F8_E4M3", "scales are F8_E4M3")
        check(handle.get_slice(q + ".weight_scale").get_shape() == [32, 4], "scales are [N, K/16]")
        scale_2 = handle.get_tensor(q + ".weight_scale_2")
        check(scale_2.dtype == np.float32 and scale_2.shape == (), "weight_scale_2 is an F32 scalar")
        expected_scale_2 = np.float32(np.abs(weights[q + ".weight"]).max()) / np.float32(6 * 448)
        check(scale_2 == expected_scale_2, f"weight_scale_2 {scale_2} != amax/2688 {expected_scale_2}")
        for name in ("model.layers.0.input_layernorm.weight", "model.embed_tokens.weight", "position_ids"):
            copied = handle.get_tensor(name)
            check(copied.dtype == weights[name].dtype and np.array_equal(copied, weights[name]), f"{name} not copied as-is")
    config = json.load(open(os.path.join(work, "nvfp4", "hf_quant_config.json")))
    check(config["quantization"]["quant_algo"] == "NVFP4", "hf_quant_config.json says NVFP4")
    return output, weights


def e4m3_table():
    table = np.zeros(256, dtype=np.float64)
    for byte in range(256):
        exponent, mantissa = (byte >> 3) & 0xF, byte & 7
        magnitude = mantissa / 8 * 2.0**-6 if exponent == 0 else (1 + mantissa / 8) * 2.0 ** (exponent - 7)
        table[byte] = -magnitude if byte & 0x80 else magnitude
    return table


def gemm_output_matches_numpy(work, checkpoint, rng):
    layer = "model.layers.0.self_attn.q_proj"
    x = rng.standard_normal((5, 64)).astype(np.float32)
    x_path, y_path = os.path.join(work, "x.safetensors"), os.path.join(work, "y.safetensors")
    save_file({"activation": x}, x_path)
    cli("gemm", "--checkpoint", checkpoint, "--layer", layer, "--input", x_path, "--output", y_path, "--output-dtype", "f32")
    y = load_file(y_path)["output"]
    check(y.shape == (5, 32) and y.dtype == np.float32, f"gemm output {y.shape} {y.dtype}")
    raw, _ = load_raw(checkpoint)
    codes = np.frombuffer(raw[layer + ".weight"][2], dtype=np.uint8).reshape(32, 32)
    scales = e4m3_table()[np.frombuffer(raw[layer + ".weight_scale"][2], dtype=np.uint8)].reshape(32, 4)
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    nibbles = np.stack([codes & 0xF, codes >> 4], axis=-1).reshape(32, 64)
    w = e2m1[nibbles] * np.repeat(scales, 16, axis=1)
    alpha = np.frombuffer(raw[layer + ".weight_scale_2"][2], dtype=np.float32)[0]
    reference = alpha * (x.astype(np.float64) @ w.T)
    bound = 1e-5 * alpha * (np.abs(x.astype(np.float64)) @ np.abs(w).T)
    worst = np.max(np.abs(y - reference) - bound)
    check(worst <= 0, f"gemm output differs from numpy beyond FP32 summation error (worst excess {worst})")


def main():
    rng = np.random.default_rng(1234)
    with tempfile.TemporaryDirectory() as work:
        reads_what_python_wrote(work, rng)
        reads_sharded_checkpoint(work, rng)
        checkpoint, _ = python_reads_what_we_wrote(work, rng)
        gemm_output_matches_numpy(work, checkpoint, rng)
    print(f"python interop (safetensors {safetensors.__version__}, numpy {np.__version__}):")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
