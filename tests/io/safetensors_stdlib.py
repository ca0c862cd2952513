"""Minimal safetensors reading/writing and NVFP4 decoding with the Python standard library only,
so the CLI tests run on CI machines without numpy. Not a reference for the format: a second,
independent reading of it."""
import json
import struct

FORMATS = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "U8": ("B", 1), "F16": ("e", 2)}


def load(path):
    """{name: (dtype, shape, bytes)} and the metadata dict."""
    with open(path, "rb") as handle:
        data = handle.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    metadata = header.pop("__metadata__", {})
    base = 8 + length
    tensors = {name: (entry["dtype"], entry["shape"], data[base + entry["data_offsets"][0]:base + entry["data_offsets"][1]])
               for name, entry in header.items()}
    return tensors, metadata


def save(path, tensors, metadata=None):
    """tensors: {name: (dtype, shape, bytes)}."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def values(dtype, blob):
    if dtype == "BF16":
        return [struct.unpack("<f", b"\0\0" + blob[i:i + 2])[0] for i in range(0, len(blob), 2)]
    code, size = FORMATS[dtype]
    return list(struct.unpack(f"<{len(blob) // size}{code}", blob))


def f32_bytes(numbers):
    return struct.pack(f"<{len(numbers)}f", *numbers)


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def e4m3(byte):
    sign = -1.0 if byte & 0x80 else 1.0
    exponent, mantissa = (byte >> 3) & 0xF, byte & 0x7
    if exponent == 0:
        return sign * mantissa / 8.0 * 2.0 ** -6
    return sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)


def dequantize(codes, scales, rows, cols):
    """Rows of e2m1 x e4m3 (no global scale) from packed codes [rows, cols/2] and scales [rows, cols/16]."""
    out = []
    for row in range(rows):
        line = []
        for col in range(cols):
            byte = codes[row * (cols // 2) + col // 2]
            code = (byte >> 4) if col % 2 else (byte & 0xF)
            line.append(E2M1[code] * e4m3(scales[row * (cols // 16) + col // 16]))
        out.append(line)
    return out
