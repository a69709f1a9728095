#!/usr/bin/env python3
"""Markdown table of bench_ported (the kernels of examples/kernels/ported.h)
beside compare_ported.py (their Triton originals) from one run: GB/s per
kernel and size, tiledsl's best row (its programs or warps argument named)
and the ratio to Triton's. torch.softmax is shown where it ran.

    python3 bench/summarize_ported.py ported.json compare_ported.json
"""
import json
import re
import sys

NAME = re.compile(r"(softmax|ln_bwd|router)<(\d+)>(?:/(\d+))?/")


def main(ours_path, theirs_path):
    ours, errors = {}, []  # (kernel, size) -> (GB/s, argument)
    for b in json.load(open(ours_path))["benchmarks"]:
        m = NAME.match(b["name"])
        if not m:
            continue
        kernel, size, arg = m.group(1), int(m.group(2)), m.group(3) or "-"
        if b.get("error_occurred"):
            errors.append(f"tiledsl {b['name']}: {b.get('error_message', '')}")
            continue
        if b["GB/s"] > ours.get((kernel, size), (0.0, ""))[0]:
            ours[(kernel, size)] = (b["GB/s"], arg)
    theirs, torch = {}, {}
    for r in json.load(open(theirs_path)):
        size = r.get("n", r.get("tokens"))
        (torch if r["kernel"].endswith("_torch") else theirs)[(r["kernel"].replace("_torch", ""), size)] = r["GB/s"]
    print("| kernel | size | tiledsl GB/s (arg) | Triton GB/s | tl / Triton | torch GB/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in sorted(set(ours) | set(theirs)):
        tl, arg = ours.get(key, (None, ""))
        tr = theirs.get(key)
        ratio = f"**{tl / tr:.2f}**" if tl and tr else "-"
        tl_cell = f"{tl:.0f} ({arg})" if tl else "-"
        tr_cell = f"{tr:.0f}" if tr else "-"
        to_cell = f"{torch[key]:.0f}" if key in torch else ""
        print(f"| {key[0]} | {key[1]} | {tl_cell} | {tr_cell} | {ratio} | {to_cell} |")
    for e in errors:
        print(f"- {e}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
