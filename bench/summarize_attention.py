#!/usr/bin/env python3
"""Markdown table of bench_attention (tiledsl) and compare_attention.py
(torch SDPA with the cuDNN and FlashAttention-2 back ends, Triton) results
from one run: bf16 forward TFLOP/s per head dim, causality and sequence
length, and tiledsl's ratio to each (its fixed configuration; the
autotuned one, attention_tuned, beside it where it ran); then a table of
attention_bhn's shapes (B x H x N given). A result that failed shows its error
below the table instead of a number.

    python3 bench/summarize_attention.py attention.json compare_attention.json
"""
import json
import re
import sys

TOKENS, MODEL_WIDTH = 16384, 2048  # B * N and H * D, as in bench/attention.cpp
IMPLS = [("cudnn", "cuDNN"), ("fa2", "FA2"), ("triton", "Triton"), ("triton_best", "Triton best")]


def main(ours_path, theirs_path):
    ours, tuned, errors = {}, {}, []
    keys = set()  # every (D, causal, N) seen, failed ones included
    bhn_ours, bhn_theirs = {}, {}  # attention_bhn: (D, causal, B, H, N) -> TFLOP/s
    for b in json.load(open(ours_path))["benchmarks"]:
        m = re.match(r"attention_bhn<(\d+), (true|false)>/(\d+)/(\d+)/(\d+)", b["name"])
        if m:
            key = (int(m.group(1)), m.group(2) == "true", int(m.group(3)), int(m.group(4)), int(m.group(5)))
            if b.get("error_occurred"):
                errors.append(f"tiledsl bhn {key}: {b.get('error_message', '')}")
            bhn_ours[key] = b.get("TFLOP/s", 0)
            continue
        m = re.match(r"attention(_tuned)?<(\d+), (true|false)>/(\d+)", b["name"])
        if not m:
            continue
        key = (int(m.group(2)), m.group(3) == "true", int(m.group(4)))
        keys.add(key)
        if b.get("error_occurred"):
            errors.append(f"tiledsl{m.group(1) or ''} {key}: {b.get('error_message', '')}")
            continue
        (tuned if m.group(1) else ours)[key] = b
    theirs = {}
    for r in json.load(open(theirs_path)):
        if "kv" in r:  # grouped-query rows: not in this table
            continue
        if r.get("bhn"):
            key = (r["d"], r["causal"], r["B"], r["H"], r["n"])
            if "error" in r:
                errors.append(f"{r['impl']} bhn {key}: {r['error']}")
            bhn_theirs[key + (r["impl"],)] = r.get("TFLOP/s", 0)
            continue
        key = (r["d"], r["causal"], r["n"])
        keys.add(key)
        if "error" in r:
            errors.append(f"{r['impl']} {key}: {r['error']}")
            continue
        theirs[key + (r["impl"],)] = r

    def num(x):
        return f"{x:.1f}" if x else "-"

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    head = ["D", "causal", "N", "B x H", "tiledsl", "tuned"] + [name for _, name in IMPLS] + \
           ["tl/cuDNN", "tl/FA2", "tl/Triton"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" for _ in head) + "|")
    for d, causal, n in sorted(keys):
        ours_row = ours.get((d, causal, n), {})
        tl_tflops = ours_row.get("TFLOP/s", 0)
        other = {impl: theirs.get((d, causal, n, impl), {}).get("TFLOP/s", 0) for impl, _ in IMPLS}
        bh = f"{TOKENS // n} x {MODEL_WIDTH // d}"
        tuned_row = tuned.get((d, causal, n))
        tuned_cell = (f"{tuned_row['TFLOP/s']:.1f} ({int(tuned_row['BM'])}x{int(tuned_row['BN'])}:"
                      f"{int(tuned_row['warps'])}:{int(tuned_row['stages'])})" if tuned_row else "-")
        cells = [str(d), "yes" if causal else "no", str(n), bh, num(tl_tflops), tuned_cell] + \
                [num(other[impl]) for impl, _ in IMPLS] + \
                [ratio(tl_tflops, other["cudnn"]), ratio(tl_tflops, other["fa2"]), ratio(tl_tflops, other["triton"])]
        print("| " + " | ".join(cells) + " |")

    bhn_keys = sorted(set(bhn_ours) | {k[:5] for k in bhn_theirs})
    if bhn_keys:
        head = ["D", "causal", "B x H", "N", "tiledsl"] + [name for _, name in IMPLS] + ["tl/cuDNN", "tl/Triton best"]
        print("\n| " + " | ".join(head) + " |")
        print("|" + "|".join("---:" for _ in head) + "|")
        for d, causal, b, h, n in bhn_keys:
            t = bhn_ours.get((d, causal, b, h, n), 0)
            other = {impl: bhn_theirs.get((d, causal, b, h, n, impl), 0) for impl, _ in IMPLS}
            cells = [str(d), "yes" if causal else "no", f"{b} x {h}", str(n), num(t)] + \
                    [num(other[impl]) for impl, _ in IMPLS] + [ratio(t, other["cudnn"]), ratio(t, other["triton_best"])]
            print("| " + " | ".join(cells) + " |")

    # tiledsl and cuDNN timed in turns in the script's process (TILEDSL_SHIM).
    turns = {}
    for r in json.load(open(theirs_path)):
        if r.get("impl") in ("tiledsl_turns", "cudnn_turns") and "ms" in r:
            turns.setdefault((r["d"], r["causal"], r["B"], r["H"], r["n"]), {})[r["impl"]] = r
    if turns:
        print("\nIn turns in one process (medians of the rounds; TFLOP/s of each round):\n")
        print("| D | causal | B x H | N | tiledsl | cuDNN | tl/cuDNN | rounds tiledsl | rounds cuDNN |")
        print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for (d, causal, b, h, n), pair in sorted(turns.items()):
            tl_r, cu_r = pair.get("tiledsl_turns", {}), pair.get("cudnn_turns", {})
            fl = 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)
            rounds = lambda r: ", ".join(f"{fl / (ms * 1e-3) / 1e12:.0f}" for ms in r.get("rounds_ms", []))
            print(f"| {d} | {'yes' if causal else 'no'} | {b} x {h} | {n} | {num(tl_r.get('TFLOP/s', 0))} | "
                  f"{num(cu_r.get('TFLOP/s', 0))} | {ratio(tl_r.get('TFLOP/s', 0), cu_r.get('TFLOP/s', 0))} | "
                  f"{rounds(tl_r)} | {rounds(cu_r)} |")

    configs = {(int(b["BM"]), int(b["BN"]), int(b["warps"]), int(b["stages"])) for b in ours.values()}
    if configs:
        print("\ntiledsl tiles (BM x BN : warps : stages): " +
              ", ".join(f"{m}x{n}:{w}:{s}" for m, n, w, s in sorted(configs)))
    best = {(k[0], k[1], k[2]): r.get("config") for k, r in theirs.items() if k[3] == "triton_best"}
    if best:
        print("Triton best configs: " + ", ".join(
            f"d{d}{' causal' if c else ''} N={n}: {'x'.join(map(str, cfg[:2]))}:{cfg[2]}:{cfg[3]}"
            for (d, c, n), cfg in sorted(best.items()) if cfg))
    for e in errors:
        print(f"- {e}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
