#!/usr/bin/env python3
# Table of a sweep (sweep.jsonl: bench --json rows tagged with "shape"): the rule's time and every
# forced shape's, µs, per weight and M; the best forced shape and its ratio to the rule.
import json, sys, collections
rows = collections.defaultdict(dict)
tags = []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith('{'): continue
    r = json.loads(line)
    if r.get('backend') != 'cuda_decode': continue
    tag = r['shape']
    if tag not in tags: tags.append(tag)
    key = (r['n'], r['k'], r['m'])
    rows[key][tag] = r['time_us'] if r.get('ok', True) and r.get('time_us') else None
print('| N×K | M | ' + ' | '.join(tags) + ' | best / rule |')
print('|---' * (len(tags) + 3) + '|')
for (n, k, m), t in sorted(rows.items()):
    vals = [t.get(tag) for tag in tags]
    forced = [(v, tag) for v, tag in zip(vals, tags) if tag != 'rule' and v]
    best = min(forced) if forced else (None, '')
    ratio = f"{best[0] / t['rule']:.2f} ({best[1]})" if best[0] and t.get('rule') else ''
    print(f"| {n}×{k} | {m} | " + ' | '.join(f"{v:.2f}" if v else '–' for v in vals) + f" | {ratio} |")
