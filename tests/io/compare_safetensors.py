#!/usr/bin/env python3
"""Byte-for-byte comparison of the tensors of EXPECTED against the same names in ACTUAL.

Standard library only (CI need not have numpy): it parses the safetensors header itself.
  compare_safetensors.py EXPECTED ACTUAL [--known-difference TENSOR=REASON ...]
A TENSOR listed as a known difference must differ (so the note goes once it is fixed);
every other tensor of EXPECTED must be in ACTUAL with the same dtype, shape and bytes.
Prints one line per tensor and "N passed, N failed".
"""
import json
import struct
import sys


def load(path):
    with open(path, "rb") as handle:
        data = handle.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    base = 8 + length
    return {name: (entry["dtype"], entry["shape"], data[base + entry["data_offsets"][0]:base + entry["data_offsets"][1]])
            for name, entry in header.items()}


def main(argv):
    expected_path, actual_path = argv[1], argv[2]
    known = {}
    rest = argv[3:]
    while rest:
        flag, value = rest[0], rest[1]
        assert flag == "--known-difference", flag
        tensor, _, reason = value.partition("=")
        known[tensor] = reason
        rest = rest[2:]
    expected, actual = load(expected_path), load(actual_path)
    passed = failed = 0
    for name in sorted(expected):
        want = expected[name]
        got = actual.get(name)
        if got is None:
            print(f"FAIL {name}: missing from {actual_path}")
            failed += 1
            continue
        same = got == want
        if name in known:
            if same:
                print(f"FAIL {name}: listed as a known difference ({known[name]}) but now matches: drop the note")
                failed += 1
            else:
                print(f"ok   {name}: differs as known: {known[name]}")
                passed += 1
            continue
        if same:
            print(f"ok   {name}: {want[0]} {want[1]} identical")
            passed += 1
            continue
        failed += 1
        if got[:2] != want[:2]:
            print(f"FAIL {name}: {got[0]} {got[1]}, expected {want[0]} {want[1]}")
        else:
            diffs = [i for i in range(len(want[2])) if want[2][i] != got[2][i]]
            sample = ", ".join(f"byte {i}: {got[2][i]:#04x} != {want[2][i]:#04x}" for i in diffs[:4])
            print(f"FAIL {name}: {len(diffs)} of {len(want[2])} bytes differ ({sample})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
