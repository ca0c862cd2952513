#!/usr/bin/env python3
# Top SASS lines by stall samples from `ncu --page source --print-source sass --csv` (gzipped), with
# the instruction that precedes each in program order (the stall is charged to the waiting one).
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
header = rows[1]
data = rows[2:]
a, src, samples = header.index('Address'), header.index('Source'), header.index('Warp Stall Sampling (All Samples)')
total = sum(float(r[samples] or 0) for r in data)
print(f"total samples {total:.0f}")
top = sorted(range(len(data)), key=lambda i: -float(data[i][samples] or 0))[:int(sys.argv[2]) if len(sys.argv) > 2 else 25]
for i in top:
    r = data[i]
    print(f"{float(r[samples]) / total * 100:5.1f}%  {r[a]}  {r[src][:90]}")
