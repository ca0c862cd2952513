#!/usr/bin/env python3
"""Turns `fp4gemm bench --json` lines into a Markdown table (the bench/results/*.md files).

One row per (N, K, M): our backend's time and kernel, its roofline and fraction, the stream floor
over its time (when the run timed one), every other backend and peer timed in the same run, and our
backend's speedup over each peer the run timed (cuBLAS BF16, cuBLASLt FP8, OpenBLAS SGEMM). Our
backend is the first of --backend's names that the lines hold, so runs from before and after a
rename (cuda_decode -> cuda_nvfp4) read alike.
MoE lines (`fp4gemm bench --moe --json`, "moe": true) make their own table: one row per layer shape
and token count with the backend that served our layer, its time, the roofline of the experts the
routing touched and our time over it (with given routing), the whole layer's time routed by its own
router and its roofline multiple when the run has router lines ("routing": "router"), every peer's
time and each peer's time over ours (given routing).
`--compare LABEL=FILE` adds a column with our backend's time from another run (for example one made
with FP4GEMM_PDL=0). `--run FILE.run.json` prints a header above the table from that sidecar: its
title, date, commit and command, the device and ceilings from the bench lines themselves; the
sidecar may name comparison runs too ("compare": {"PDL off": "h200-pdl-off.jsonl"}, paths relative
to the sidecar). Lines that are not JSON (warnings, build noise) are skipped.

Usage: scripts/bench_table.py [--backend cuda_nvfp4,cuda_decode] [--run h200.run.json]
                              [--compare 'PDL off=off.jsonl'] bench.jsonl...
"""
import argparse
import json
import os
import sys

OUR_BACKENDS = "cuda_nvfp4,cuda_decode,cpu"  # cuda_decode is cuda_nvfp4's former name
# Peers our time is divided into, each with its column's label; a column only where the run timed that peer.
RATIO_PEERS = (("cublas_bf16", "vs BF16"), ("cublaslt_fp8", "vs FP8"), ("openblas_sgemm", "vs SGEMM"))
FLOOR = "stream_floor"  # a read-only kernel over the weight bytes in the same harness (gpu_stream_floor.hpp)
RUN_FIELDS = ("title", "date", "commit", "command")
# The MoE peers (bench/moe_gpu_peers.hpp, bench/moe_bench.hpp) and their ratio columns' labels.
MOE_RATIO_PEERS = (("cublas_bf16_grouped", "vs BF16 grouped"), ("cublas_bf16_per_expert", "vs BF16 per expert"),
                   ("cublaslt_fp8", "vs FP8"), ("openblas_sgemm", "vs SGEMM"))


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
                if isinstance(row, dict) and "backend" in row:
                    yield row


def key_of(row):
    return (row["n"], row["k"], row["m"])


def times_by_key(rows, backend):
    return {key_of(row): row["time_us"] for row in rows if row.get("backend") == backend and row.get("ok")}


def cell(value, digits=1):
    return "–" if value is None else f"{value:.{digits}f}"


def kernel_of(row):
    """The kernel's short name from the bench line's explanation ("mma.sync kernel (not wgmma: ...").

    Empty where the backend does not name one."""
    text = row.get("kernel", "")
    return text.split(" (")[0].split(":")[0].removesuffix(" kernel").strip()


def peer_cells(peer_time, ratio_peers, time):
    """Each ratio peer's time over ours ("3.00×"), – where the run has none for the row."""
    cells = []
    for peer, _ in ratio_peers:
        other = peer_time(peer)
        cells.append("–" if other is None else f"{other / time:.2f}×")
    return cells


def table(rows, backend, comparisons):
    grouped = {}
    for row in rows:
        grouped.setdefault(key_of(row), {})[row["backend"]] = row
    others = sorted({name for group in grouped.values() for name in group if name != backend})
    has_kernel = any(kernel_of(group[backend]) for group in grouped.values() if backend in group)
    header = ["N×K", "M", f"{backend} µs"] + (["kernel"] if has_kernel else [])
    header += [label for label, _ in comparisons]
    has_floor = any(FLOOR in group for group in grouped.values())
    header += ["roofline µs", "fraction"] + (["floor / time"] if has_floor else [])
    ratio_peers = [(name, label) for name, label in RATIO_PEERS if name in others]
    header += [f"{name} µs" for name in others] + [label for _, label in ratio_peers]
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

        cells = [f"{key[0]}×{key[1]}", str(key[2]), cell(time)] + ([kernel_of(ours)] if has_kernel else [])
        cells += [cell(times.get(key)) for _, times in comparisons]
        cells += [cell(ours["roofline_us"]), cell(ours["roofline_fraction"], 2)]
        if has_floor:
            floor = peer_time(FLOOR)
            cells.append("–" if floor is None else f"{floor / time:.2f}")
        cells += [cell(peer_time(name)) for name in others] + peer_cells(peer_time, ratio_peers, time)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def moe_key(row):
    return (row["experts"], row["top_k"], row["hidden"], row["intermediate"], row.get("shared_intermediate", 0), row["tokens"])


def moe_table(rows):
    """The MoE table: ours is the line that is not a peer (whichever backend the runner served)."""
    grouped, peers = {}, []
    for row in rows:
        group = grouped.setdefault(moe_key(row), {"peers": {}})
        if row.get("peer"):
            group["peers"][row["backend"]] = row
            if row["backend"] not in peers:
                peers.append(row["backend"])
        elif row.get("routing") == "router":
            group["routed"] = row
        else:
            group["ours"] = row
    shapes = {key[:5] for key in grouped}
    ratio_peers = [(name, label) for name, label in MOE_RATIO_PEERS if name in peers]
    # Runs with a router row (the whole layer, routed by its router) get its time beside the
    # given-routing one; the peers are always given the routing.
    has_routed = any("routed" in group for group in grouped.values())
    header = (["E, k, H, I"] if len(shapes) > 1 else []) + ["tokens", "active experts", "backend", "µs", "roofline µs", "× roofline"]
    header += ["with router µs", "× its roofline"] if has_routed else []
    header += [f"{name} µs" for name in peers] + [label for _, label in ratio_peers]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in sorted(grouped):
        group = grouped[key]
        ours = group.get("ours")
        if ours is None or not ours.get("ok"):
            continue
        time = ours["time_us"]

        def peer_time(name):
            row = group["peers"].get(name)
            return row["time_us"] if row is not None and row.get("ok") else None

        shared = f", shared {key[4]}" if key[4] else ""
        cells = [f"{key[0]}, {key[1]}, {key[2]}, {key[3]}{shared}"] if len(shapes) > 1 else []
        cells += [str(key[5]), str(ours["active_experts"]), ours["backend"], cell(time), cell(ours.get("roofline_us")),
                  cell(ours.get("times_roofline"), 2)]
        if has_routed:
            routed = group.get("routed")
            ok = routed is not None and routed.get("ok")
            cells += [cell(routed["time_us"]) if ok else "–", cell(routed.get("times_roofline"), 2) if ok else "–"]
        cells += [cell(peer_time(name)) for name in peers] + peer_cells(peer_time, ratio_peers, time)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_run(path):
    """The sidecar that says when, where from and how a bench file was made."""
    with open(path, encoding="utf-8") as handle:
        try:
            run = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not JSON: {error}") from None
    missing = [field for field in RUN_FIELDS if not run.get(field)]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)} (a run sidecar needs {', '.join(RUN_FIELDS)})")
    return run


def run_header(run, ours, sources):
    lines = [f"# {run['title']}", "",
             f"- **Measured:** {run['date']}, commit `{run['commit']}`, on {ours.get('device', 'an unnamed device')}",
             f"- **Command:** `{run['command']}`"]
    if "bandwidth_gbps" in ours and "compute_tflops" in ours:
        lines.append(f"- **Ceilings** (measured in the same run; the roofline column uses them): "
                     f"{ours['bandwidth_gbps']:.0f} GB/s, {ours['compute_tflops']:.3g} TFLOP/s")
    if run.get("note"):
        lines.append(f"- **Note:** {run['note']}")
    lines += [f"- **Source:** {', '.join(sources)}; regenerate with `scripts/results_tables.sh` (do not edit by hand)", ""]
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="fp4gemm bench --json output")
    parser.add_argument("--backend", default=OUR_BACKENDS,
                        help=f"our backend: the first of these comma-separated names the lines hold (default {OUR_BACKENDS})")
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=FILE",
                        help="a column with our backend's times from another run")
    parser.add_argument("--run", metavar="FILE", help="a JSON sidecar (title, date, commit, command) for the header")
    options = parser.parse_args(argv)
    specs = []
    for spec in options.compare:
        label, separator, path = spec.partition("=")
        if not separator or not label or not path:
            parser.error(f"--compare takes LABEL=FILE, not '{spec}'")
        specs.append((label, path))
    run = None
    if options.run:
        try:
            run = read_run(options.run)
        except (OSError, ValueError) as error:
            parser.error(str(error))
        here = os.path.dirname(options.run)
        specs += [(label, os.path.join(here, path)) for label, path in run.get("compare", {}).items()]
    rows = list(read_lines(options.files))
    moe_rows = [row for row in rows if row.get("moe")]
    rows = [row for row in rows if not row.get("moe")]
    present = {row["backend"] for row in rows}
    names = [name for name in options.backend.split(",") if name]
    backend = next((name for name in names if name in present), None)
    if backend is None and (rows or not moe_rows):
        parser.error(f"no '{options.backend}' lines in {', '.join(options.files)}")
    comparisons = []
    for label, path in specs:
        compared = list(read_lines([path]))
        compared_backend = next((name for name in names if any(row["backend"] == name for row in compared)), backend)
        comparisons.append((label, times_by_key(compared, compared_backend)))
    if run is not None:
        sources = [os.path.basename(path) for path in options.files] + [os.path.basename(path) for _, path in specs]
        ours = next((row for row in rows if row.get("backend") == backend), None)
        ours = ours or next((row for row in moe_rows if not row.get("peer")), moe_rows[0] if moe_rows else None)
        print(run_header(run, ours, sources))
    if rows:
        print(table(rows, backend, comparisons))
    if moe_rows:
        if rows:
            print()
        print(moe_table(moe_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
