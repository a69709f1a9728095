#!/usr/bin/env python3
"""Before/after table from scripts/gpu-compare.sh runs: every benchmark row
(bench_norms GB/s, bench_gemm and bench_attention TFLOP/s, cuBLAS rows
included) and every example's figure, one column per (call, label), and
the ratio of the last label's median to the first's.

    python3 bench/summarize_compare.py before after -- out-call1 out-call2
"""
import json
import os
import re
import statistics
import sys

FIGURE = re.compile(r"([\d.]+) (GB/s|TFLOP/s)")


def rows(folder):
    """{row name: (figure, unit)} of one label's run."""
    out = {}
    for b in ("norms", "gemm", "attention"):
        path = os.path.join(folder, b + ".json")
        if not os.path.exists(path):
            continue
        for r in json.load(open(path))["benchmarks"]:
            if r.get("error_occurred") or r.get("run_type") == "aggregate":
                continue
            for unit in ("GB/s", "TFLOP/s"):
                if unit in r:
                    out[r["name"].split("/iterations")[0].replace("/real_time", "")] = (r[unit], unit)
    for e in ("vector_add", "softmax", "layernorm", "gemm", "attention"):
        path = os.path.join(folder, f"example-{e}.log")
        if os.path.exists(path):
            m = FIGURE.findall(open(path).read())
            if m:
                out[f"example {e}"] = (float(m[-1][0]), m[-1][1])
    return out


def main(argv):
    sep = argv.index("--")
    labels, calls = argv[:sep], argv[sep + 1:]
    runs = {(c, l): rows(os.path.join(c, l)) for c in calls for l in labels}
    names = []
    for r in runs.values():
        names += [n for n in r if n not in names]
    cols = [(c, l) for c in calls for l in labels]
    print("| row | unit | " + " | ".join(f"{l} ({os.path.basename(c.rstrip('/'))})" for c, l in cols)
          + f" | {labels[-1]}/{labels[0]} (medians) |")
    print("|---|---|" + "---:|" * (len(cols) + 1))
    worst = None
    for n in names:
        vals = [runs[k].get(n, (None, ""))[0] for k in cols]
        unit = next(runs[k][n][1] for k in cols if n in runs[k])
        med = {}
        for l in labels:
            v = [runs[(c, l)][n][0] for c in calls if n in runs[(c, l)]]
            med[l] = statistics.median(v) if v else None
        ratio = med[labels[-1]] / med[labels[0]] if med[labels[0]] and med[labels[-1]] else None
        if ratio is not None and "cublas" not in n and (worst is None or ratio < worst[0]):
            worst = (ratio, n)
        cells = " | ".join("-" if v is None else f"{v:.1f}" for v in vals)
        print(f"| {n} | {unit} | {cells} | {'-' if ratio is None else f'{ratio:.3f}'} |")
    if worst:
        print(f"\nLowest {labels[-1]}/{labels[0]} of tiledsl's rows: {worst[0]:.3f} ({worst[1]})")


if __name__ == "__main__":
    main(sys.argv[1:])
