#!/usr/bin/env python3
"""Turns `fp4gemm bench --json` lines into the Markdown table bench/results/ files carry.

One row per (N, K, M): the chosen backend's time, its roofline and fraction, the stream floor over
its time (when the run timed one), every other backend and peer timed in the same run, and the
chosen backend's speedup over the BF16 and FP8 peers.
`--compare LABEL=FILE` adds a column with the chosen backend's time from another run (for example
one made with FP4GEMM_PDL=0). Lines that are not JSON (warnings, build noise) are skipped.

Usage: scripts/bench_table.py [--backend cuda_nvfp4] [--compare 'PDL off=off.jsonl'] bench.jsonl...
"""
import argparse
import json
import sys

BF16_PEER = "cublas_bf16"
FP8_PEER = "cublaslt_fp8"
FLOOR = "stream_floor"  # a read-only kernel over the weight bytes in the same harness (gpu_stream_floor.hpp)


# Backend names renamed since older runs: read under their current name.
RENAMED = {"cuda_decode": "cuda_nvfp4"}


def read_lines(paths):
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if row.get("backend") in RENAMED:
                    row["backend"] = RENAMED[row["backend"]]
                yield row


def key_of(row):
    return (row["n"], row["k"], row["m"])


def times_by_key(rows, backend):
    return {key_of(row): row["time_us"] for row in rows if row.get("backend") == backend and row.get("ok")}


def cell(value, digits=1):
    return "–" if value is None else f"{value:.{digits}f}"


def table(rows, backend, comparisons):
    grouped = {}
    for row in rows:
        grouped.setdefault(key_of(row), {})[row["backend"]] = row
    others = sorted({name for group in grouped.values() for name in group if name != backend})
    header = ["N×K", "M", f"{backend} µs"] + [label for label, _ in comparisons]
    has_floor = any(FLOOR in group for group in grouped.values())
    header += ["roofline µs", "fraction"] + (["floor / time"] if has_floor else [])
    header += [f"{name} µs" for name in others] + ["vs BF16", "vs FP8"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in sorted(grouped, key=lambda k: (k[0] * k[1], k[0], k[2])):
        group = grouped[key]
        ours = group.get(backend)
        if ours is None or not ours.get("ok"):
            continue
        time = ours["time_us"]

        def peer_time(name):
            row = group.get(name)
            return row["time_us"] if row is not None and row.get("ok") else None

        cells = [f"{key[0]}×{key[1]}", str(key[2]), cell(time)]
        cells += [cell(times.get(key)) for _, times in comparisons]
        cells += [cell(ours["roofline_us"]), cell(ours["roofline_fraction"], 2)]
        if has_floor:
            floor = peer_time(FLOOR)
            cells.append("–" if floor is None else f"{floor / time:.2f}")
        cells += [cell(peer_time(name)) for name in others]
        for peer in (BF16_PEER, FP8_PEER):
            other = peer_time(peer)
            cells.append("–" if other is None else f"{other / time:.2f}×")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="fp4gemm bench --json output")
    parser.add_argument("--backend", default="cuda_nvfp4", help="the backend whose rows these are (default cuda_nvfp4)")
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=FILE",
                        help="a column with this backend's times from another run")
    options = parser.parse_args(argv)
    comparisons = []
    for spec in options.compare:
        label, separator, path = spec.partition("=")
        if not separator or not label or not path:
            parser.error(f"--compare takes LABEL=FILE, not '{spec}'")
        comparisons.append((label, times_by_key(read_lines([path]), options.backend)))
    rows = list(read_lines(options.files))
    if not any(row.get("backend") == options.backend for row in rows):
        parser.error(f"no '{options.backend}' lines in {', '.join(options.files)}")
    print(table(rows, options.backend, comparisons))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
