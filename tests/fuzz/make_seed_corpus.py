#!/usr/bin/env python3
"""Writes the fuzz seed corpus (tests/fuzz/corpus/): small valid safetensors files of every dtype
and shape kind, plus near-misses of each rejection rule. Standard library only; deterministic."""
import json
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "U16": 2, "I16": 2, "U32": 4, "I32": 4, "U64": 8, "I64": 8,
         "F8_E4M3": 1, "F8_E5M2": 1, "F16": 2, "BF16": 2, "F32": 4, "F64": 8}


def file_bytes(header, data, pad=True, length=None):
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def tensors(specs, metadata=None):
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in specs:
        count = 1
        for extent in shape:
            count *= extent
        size = count * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return header, bytes((i * 37) & 0xFF for i in range(offset))


def main():
    os.makedirs(HERE, exist_ok=True)
    seeds = {}
    for dtype in SIZES:
        header, data = tensors([(f"t.{dtype.lower()}", dtype, [2, 3])])
        seeds[f"valid_{dtype.lower()}"] = file_bytes(header, data)
    header, data = tensors([("layer.weight", "U8", [4, 8]), ("layer.weight_scale", "F8_E4M3", [4, 1]),
                            ("layer.weight_scale_2", "F32", []), ("layer.input_scale", "F32", [])],
                           metadata={"format": "pt"})
    seeds["valid_nvfp4_layer"] = file_bytes(header, data)
    header, data = tensors([("empty", "F32", [0, 4]), ("scalar", "BF16", []), ("vector", "I64", [3])])
    seeds["valid_empty_scalar_vector"] = file_bytes(header, data)
    seeds["valid_no_tensors"] = file_bytes({"__metadata__": {"a": "b"}}, b"")
    seeds["valid_unpadded"] = file_bytes(*tensors([("x", "F16", [5])]), pad=False)
    # Near-misses, one rule each.
    header, data = tensors([("a", "F32", [2]), ("b", "F32", [2])])
    header["b"]["data_offsets"] = [4, 12]
    seeds["bad_overlap"] = file_bytes(header, data)
    header, data = tensors([("a", "F32", [2])])
    header["a"]["data_offsets"] = [0, 16]
    seeds["bad_out_of_range"] = file_bytes(header, data)
    header, data = tensors([("a", "F32", [3])])
    seeds["bad_truncated"] = file_bytes(header, data)[:-4]
    header, data = tensors([("a", "F32", [2])])
    header["a"]["dtype"] = "F4"
    seeds["bad_dtype"] = file_bytes(header, data)
    header, data = tensors([("a", "F32", [2])])
    header["a"]["shape"] = [3]
    seeds["bad_length"] = file_bytes(header, data)
    seeds["bad_header_length"] = file_bytes(*tensors([("a", "U8", [1])]), length=1 << 20)
    seeds["bad_json"] = struct.pack("<Q", 12) + b'{"a":{"dtype"'
    for name, content in seeds.items():
        with open(os.path.join(HERE, name), "wb") as handle:
            handle.write(content)
    print(f"wrote {len(seeds)} seeds to {HERE}")


if __name__ == "__main__":
    main()
