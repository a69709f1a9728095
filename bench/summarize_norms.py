#!/usr/bin/env python3
"""Side-by-side table of bench_norms (tiledsl) and compare_norms.py (torch,
Triton) results from one run: GB/s, the ratio to the copy bandwidth measured
in the same run, and the ratio to Triton; then the cold-compile figures.

    python3 bench/summarize_norms.py norms.json compare_norms.json
"""
import json
import re
import sys


def best(table, op, dt, n):
    """The fastest persistent configuration: (GB/s, "S<stages>x<per SM>w<warps>[c<CTAs a program>]")."""
    runs = [(v, k) for (o, d, nn, k), v in table.items() if o == op and d == dt and nn == n]
    return max(runs) if runs else (0, "")


def main(ours_path, theirs_path):
    ours, ours_p = {}, {}
    cold = {}
    for b in json.load(open(ours_path))["benchmarks"]:
        if b["name"].startswith("softmax_cold_compile"):
            cold = {k: b[k] for k in ("trace_ms", "codegen_ms", "link_ms", "load_ms", "total_ms")}
            continue
        m = re.match(r"(\w+)<([\w:]+)(?:, (\d+))?(?:, (\d+))?(?:, (\d+))?>(?:/(\d+)/(\d+))?", b["name"])
        if not m:
            continue
        op, dt, n = m.group(1), {"tl::bf16": "bf16", "float": "f32"}[m.group(2)], int(m.group(3) or 0)
        if op.endswith("_persistent"):
            ctas = f"c{m.group(5)}" if m.group(5) else ""
            ours_p[(op[:-len("_persistent")], dt, n, f"S{m.group(4)}x{m.group(6)}w{m.group(7)}{ctas}")] = b["GB/s"]
        elif op in ("softmax", "layernorm", "copy"):
            ours[(op, dt, n)] = b["GB/s"]
    theirs, theirs_p = {}, {}
    triton_cold = None
    for r in json.load(open(theirs_path)):
        if r["op"] == "softmax_cold_compile":
            triton_cold = r["ms"]
            continue
        m = re.match(r"(softmax|layernorm)_persistent_(\w+)", r["op"])
        if m:
            theirs_p[(m.group(1), r["dtype"], r["n"], m.group(2))] = r["GB/s"]
        else:
            theirs[(r["op"], r["dtype"], r["n"], r["impl"])] = r["GB/s"]

    print("tiledsl and triton: one program a row; 'persistent': the best of the depth x programs-per-SM sweep")
    print(f"{'op':<10}{'dtype':<6}{'N':>7} {'tiledsl':>8} {'persist':>8} {'(cfg)':>9} {'triton':>8} "
          f"{'persist':>8} {'(cfg)':>9} {'torch':>7} {'copy':>6} {'tl/copy':>8} {'tl/triton':>9}")
    for dt in ("bf16", "f32"):
        copy = theirs.get(("copy", dt, 0, "torch"), 0)
        print(f"{'copy':<10}{dt:<6}{'':>7} {ours.get(('copy', dt, 0), 0):>8.0f} {'':>18} {'':>8} {'':>18} "
              f"{copy:>7.0f} {copy:>6.0f}")
        for op in ("softmax", "layernorm"):
            for n in (1024, 2048, 4096, 8192, 16384, 32768):
                t = ours.get((op, dt, n), 0)
                tp, tcfg = best(ours_p, op, dt, n)
                tr = theirs.get((op, dt, n, "triton"), 0)
                trp, trcfg = best(theirs_p, op, dt, n)
                to = theirs.get((op, dt, n, "torch"), 0)
                tl_best, tr_best = max(t, tp), max(tr, trp)
                print(f"{op:<10}{dt:<6}{n:>7} {t:>8.0f} {tp:>8.0f} {tcfg:>9} {tr:>8.0f} {trp:>8.0f} {trcfg:>9} "
                      f"{to:>7.0f} {copy:>6.0f} {tl_best / copy if copy else 0:>8.2f} "
                      f"{tl_best / tr_best if tr_best else 0:>9.2f}")
    if cold:
        print("cold compile, bf16 softmax N=4096 (ms): tiledsl trace {trace_ms:.1f} + codegen {codegen_ms:.1f} + "
              "link {link_ms:.1f} + load {load_ms:.2f}; total to first result {total_ms:.1f}".format(**cold))
    if triton_cold is not None:
        print(f"cold compile, bf16 softmax N=4096 (ms): triton first call {triton_cold:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
