#!/usr/bin/env python3
"""Side-by-side table of bench_norms (tiledsl) and compare_norms.py (torch,
Triton) results from one run: GB/s, the ratio to the copy bandwidth measured
in the same run, and the ratio to Triton; then the cold-compile figures.

    python3 bench/summarize_norms.py norms.json compare_norms.json
"""
import json
import re
import sys


def main(ours_path, theirs_path):
    ours = {}
    cold = {}
    for b in json.load(open(ours_path))["benchmarks"]:
        m = re.match(r"(\w+)<([\w:]+)(?:, (\d+))?>", b["name"])
        if b["name"].startswith("softmax_cold_compile"):
            cold = {k: b[k] for k in ("trace_ms", "codegen_ms", "link_ms", "load_ms", "total_ms")}
            continue
        if not m:
            continue
        op, dt, n = m.group(1), {"tl::bf16": "bf16", "float": "f32"}[m.group(2)], int(m.group(3) or 0)
        ours[(op, dt, n)] = b["GB/s"]
    theirs = {}
    triton_cold = None
    for r in json.load(open(theirs_path)):
        if r["op"] == "softmax_cold_compile":
            triton_cold = r["ms"]
            continue
        theirs[(r["op"], r["dtype"], r["n"], r["impl"])] = r["GB/s"]

    print(f"{'op':<17}{'dtype':<6}{'N':>7} {'tiledsl':>9} {'triton':>9} {'torch':>9} {'copy':>9} "
          f"{'tl/copy':>8} {'tl/triton':>9}")
    for dt in ("bf16", "f32"):
        copy = theirs.get(("copy", dt, 0, "torch"), 0)
        print(f"{'copy':<17}{dt:<6}{'':>7} {ours.get(('copy', dt, 0), 0):>9.0f} {'':>9} {copy:>9.0f} {copy:>9.0f}")
        for op in ("softmax", "layernorm", "softmax_looped", "layernorm_looped"):
            for n in (32768,) if op.endswith("_looped") else (1024, 2048, 4096, 8192, 16384, 32768):
                t = ours.get((op, dt, n), 0)
                tr = theirs.get((op, dt, n, "triton"), 0)
                to = theirs.get((op, dt, n, "torch"), 0)
                print(f"{op:<17}{dt:<6}{n:>7} {t:>9.0f} {tr:>9.0f} {to:>9.0f} {copy:>9.0f} "
                      f"{t / copy if copy else 0:>8.2f} {t / tr if tr else 0:>9.2f}")
    if cold:
        print("cold compile, bf16 softmax N=4096 (ms): tiledsl trace {trace_ms:.1f} + codegen {codegen_ms:.1f} + "
              "link {link_ms:.1f} + load {load_ms:.2f}; total to first result {total_ms:.1f}".format(**cold))
    if triton_cold is not None:
        print(f"cold compile, bf16 softmax N=4096 (ms): triton first call {triton_cold:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
