#!/usr/bin/env python3
# Annotates cuobjdump -sass output with each instruction's scoreboard control bits
# (stall, write barrier, read barrier, wait mask), decoded from the high 64-bit word.
import re, sys
lines = sys.stdin.read().splitlines()
pending = None
for i, line in enumerate(lines):
    m = re.match(r'\s*/\*([0-9a-f]{4})\*/\s+(.*?)\s*/\* (0x[0-9a-f]{16}) \*/', line)
    if m:
        pending = (m.group(1), m.group(2))
        continue
    m2 = re.match(r'\s*/\* (0x[0-9a-f]{16}) \*/', line)
    if m2 and pending:
        hi = int(m2.group(1), 16)
        stall = (hi >> 41) & 0xF
        yld = (hi >> 45) & 1
        wb = (hi >> 46) & 7
        rb = (hi >> 49) & 7
        wait = (hi >> 52) & 0x3F
        ws = ''.join(str(b) for b in range(6) if wait >> b & 1)
        print(f"{pending[0]} S{stall:02d} {'Y' if yld else ' '} W{wb if wb!=7 else '-'} R{rb if rb!=7 else '-'} wait[{ws:6}] {pending[1]}")
        pending = None
