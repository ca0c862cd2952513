#!/usr/bin/env python3
"""Turns a tagged sweep (`fp4gemm bench --json` lines carrying a "shape" tag, as
scripts/decode_shape_sweep.sh and scripts/wgmma_shape_sweep.sh write them) into a Markdown
table: one row per (N, K, M), one column per tag in the order the tags first appear, µs, and the
fastest tag other than "rule" with its time over the "rule" column's.

A line that failed (ok false, or no time) shows as –. Lines that are not JSON, or that are another
backend's (peers, the stream floor), are skipped.

Usage: scripts/sweep_table.py sweep.jsonl
"""
import collections
import json
import sys


def main(path):
    times = collections.defaultdict(dict)
    tags = []
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if not line.startswith('{'):
                continue
            row = json.loads(line)
            if row.get('backend') not in ('cuda_nvfp4', 'cuda_decode') or 'shape' not in row:  # cuda_decode: its name in older runs
                continue
            tag = row['shape']
            if tag not in tags:
                tags.append(tag)
            ok = row.get('ok', True) and row.get('time_us')
            times[(row['n'], row['k'], row['m'])][tag] = row['time_us'] if ok else None
    if not tags:
        sys.exit(f"sweep_table: no tagged cuda_nvfp4 lines in {path}")
    print('| N×K | M | ' + ' | '.join(tags) + ' | best / rule |')
    print('|---' * (len(tags) + 3) + '|')
    for (n, k, m), by_tag in sorted(times.items()):
        cells = [f"{by_tag[tag]:.2f}" if by_tag.get(tag) else '–' for tag in tags]
        forced = [(time, tag) for tag, time in by_tag.items() if tag != 'rule' and time]
        best = ''
        if forced and by_tag.get('rule'):
            time, tag = min(forced)
            best = f"{time / by_tag['rule']:.2f} ({tag})"
        print(f"| {n}×{k} | {m} | " + ' | '.join(cells) + f" | {best} |")


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
