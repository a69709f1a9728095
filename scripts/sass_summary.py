#!/usr/bin/env python3
"""A cuobjdump -sass listing (scripts/sass.sh) in one line: the opcodes
that place a warpgroup kernel's work (HGMMA, WARPGROUP.DEPBAR with its
depth, WARPGROUP.ARRIVE, SYNCS.* mbarrier ops, BAR.*, MUFU, F2FP, BRA,
EXIT, STL/LDL spills) with run lengths, other instructions as "." or
"otherxN". Where a wait sits among the exponentials shows at a glance:

    python3 scripts/sass_summary.py kernel.sass
"""
import re
import sys

KEEP = ("HGMMA", "WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE", "SYNCS.ARRIVE", "SYNCS.PHASECHK", "BAR.", "MUFU", "F2FP",
        "BRA", "EXIT", "STL", "LDL")

seq = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
    if not m:
        continue
    op = m.group(3)
    kind = next((k for k in KEEP if op.startswith(k)), "other")
    if kind == "BAR.":
        kind = op
    if kind == "WARPGROUP.DEPBAR" and "gsb0," in line:
        kind = "DEPBAR" + line.split("gsb0,")[1].split(";")[0].strip()
    if seq and seq[-1][0] == kind:
        seq[-1][1] += 1
    else:
        seq.append([kind, 1])
print(" ".join("." if k == "other" and n < 3 else (f"{k}x{n}" if n > 1 else k) for k, n in seq))
