#!/usr/bin/env python3
"""Checks bench/plot.py on the small hand-made results beside this file
(JSON has no comments, so they are described here): gemm.json,
attention.json and norms.json in the exact format bench_gemm,
bench_attention and bench_norms write with --benchmark_format=json, and
compare_gemm.json, compare_attention.json and compare_norms.json as
bench/compare_*.py write them, a few shapes each, with a skipped benchmark,
a peer's error row, a shape of tiledsl alone and one of a peer alone
(attention.json also has an attention_tuned row, the tuner's pick, and
both files an attention_bhn row, B x H x N given, which are not plotted:
no bar of their own); the expected values are below. The SVGs are well-formed XML with one bar per
(shape, series) present and one roofline point per kernel and shape, and
<kind>-ratios.json holds the ratios worked out by hand below. Malformed
input (malformed.json, and a few made here) must end plot.py with a
non-zero status and a one-line message, never a traceback. Prints PASS at
the end when everything holds (ctest's bench.plot looks for it).

    python3 tests/bench-plot/check.py [path/to/plot.py]
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "bench", "plot.py")
SVG = "{http://www.w3.org/2000/svg}"
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def plot(out_dir, *args):
    return subprocess.run([sys.executable, PLOT, out_dir, *args], capture_output=True, text=True)


# Expected values per kind: {shape: {series: value}} with None for a bar
# that must be missing, the shapes' FLOP/byte, and the ceiling each shape's
# tiledsl figure is divided by (the H200 defaults: 790 TFLOP/s, 3.8 TB/s).
GEMM = {
    # tiledsl: the best configuration (450 of 400, 450 and autotuned 440);
    # Triton: the best of triton, triton_tma, triton_tma_ws.
    "1024x1024x1024": {"tiledsl": 450.0, "cuBLAS": 500.0, "torch": 480.0, "Triton": 375.0},
    "8192x4096x4096": {"tiledsl": 700.0, "cuBLAS": 720.0, "torch": 710.0, "Triton": 650.0},
    # cuBLAS skipped (error_occurred): no bar, no ratio.
    "16x8192x8192": {"tiledsl": 30.0, "cuBLAS": None, "torch": 33.0, "Triton": 27.5},
}
GEMM_INTENSITY = {  # M*N*K / (M*K + K*N + M*N)
    "1024x1024x1024": 1024 / 3,
    "8192x4096x4096": 8192 * 4096 * 4096 / (8192 * 4096 + 4096 * 4096 + 8192 * 4096),
    "16x8192x8192": 16 * 8192 * 8192 / (16 * 8192 + 8192 * 8192 + 16 * 8192),
}
ATTENTION = {
    # cuDNN's row is an error; Triton is the best of triton and triton_best.
    "d64 N=1024": {"tiledsl": 400.0, "cuDNN": None, "FA2": 380.0, "Triton": 420.0},
    # tiledsl alone: its bar without a ratio above it.
    "d64 causal N=2048": {"tiledsl": 300.0, "cuDNN": None, "FA2": None, "Triton": None},
    "d128 causal N=4096": {"tiledsl": 500.0, "cuDNN": 600.0, "FA2": 520.0, "Triton": 510.0},
    "GQA d128 causal N=4096": {"tiledsl": 450.0, "cuDNN": 550.0, "FA2": 500.0, "Triton": None},
    "varlen d128 causal N~1024": {"tiledsl": 350.0, "cuDNN": None, "FA2": None, "Triton": None},
}


def varlen_causal_pairs(mean):
    """bench/attention.cpp's varlen pattern: sequences of mean / 2 +
    (i * 37 % 101) * mean / 100 tokens until 16384, the last cut short;
    a causal query of position p (from 1) sees p keys."""
    pairs, used, i = 0, 0, 0
    while used < 16384:
        length = min(16384 - used, mean // 2 + (i * 37 % 101) * mean // 100)
        pairs += length * (length + 1) // 2
        used += length
        i += 1
    return pairs


ATTENTION_INTENSITY = {  # N * (1/2 if causal) * H / (H + KV heads); 4 query heads a KV head for GQA
    "d64 N=1024": 1024 / 2,
    "d64 causal N=2048": 2048 * 0.5 / 2,
    "d128 causal N=4096": 4096 * 0.5 / 2,
    "GQA d128 causal N=4096": 4096 * 0.5 * 16 / (16 + 4),
    # 4*H*D FLOPs a pair over 2 bytes of each of Q, K, V and O of 16384 tokens x H x D
    "varlen d128 causal N~1024": 4 * varlen_causal_pairs(1024) / (2 * 4 * 16384),
}
NORMS = {
    "copy bf16": {"tiledsl": 3700.0, "torch": 3650.0, "Triton": None},
    # tiledsl: the best of the row form (2900) and the persistent one, run
    # twice under one name (3100, 3300: their median); Triton: the best of
    # 2950 and its persistent 3000. The warps sweeps are not plotted.
    "softmax bf16 4096": {"tiledsl": 3200.0, "torch": 1200.0, "Triton": 3000.0},
    "layernorm bf16 4096": {"tiledsl": None, "torch": None, "Triton": 2000.0},  # a peer alone
    "layernorm f32 1024": {"tiledsl": 3600.0, "torch": 2500.0, "Triton": 3500.0},
}
NORMS_INTENSITY = {"copy bf16": 0.0, "softmax bf16 4096": 5 / 4, "layernorm bf16 4096": 7 / 4,
                   "layernorm f32 1024": 7 / 8}


def ceiling(kind, intensity, tflops, tbps):
    """What tiledsl's figure is divided by for tiledsl/ceiling."""
    if kind == "norms":
        return 1e3 * tbps  # GB/s: every norms shape here is memory-bound
    return min(tflops, tbps * intensity)


def check_kind(kind, expected, intensity, tmp, peak=(790.0, 3.8), extra=()):
    out = os.path.join(tmp, f"{kind}-{peak[0]:g}")
    r = plot(out, os.path.join(HERE, f"{kind}.json"), os.path.join(HERE, f"compare_{kind}.json"), *extra)
    check(r.returncode == 0, f"{kind}: plot.py exited {r.returncode}: {r.stderr.strip()}")
    if r.returncode != 0:
        return
    bars_wanted = {(shape, s) for shape, row in expected.items() for s, v in row.items() if v is not None}
    points_wanted = {(shape, s) for shape, s in bars_wanted if intensity[shape] > 0}
    for name, cls, wanted in (("bars", "bar", bars_wanted), ("roofline", "point", points_wanted)):
        path = os.path.join(out, f"{kind}-{name}.svg")
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            check(False, f"{path}: not well-formed XML: {e}")
            continue
        check(root.tag == SVG + "svg", f"{path}: the root is {root.tag}, not svg")
        found = [(e.get("data-shape"), e.get("data-series")) for e in root.iter() if e.get("class") == cls]
        check(len(found) == len(set(found)), f"{path}: a {cls} drawn twice: {sorted(found)}")
        check(set(found) == wanted, f"{path}: {cls}s {sorted(set(found))}, expected {sorted(wanted)}")
        if name == "bars":  # one ratio above each tiledsl bar that has a peer
            ratios = [e.get("data-shape") for e in root.iter() if e.get("class") == "ratio"]
            has_peer = [shape for shape, row in expected.items()
                        if row["tiledsl"] and any(v for s, v in row.items() if s != "tiledsl")]
            check(sorted(ratios) == sorted(has_peer), f"{path}: ratio labels on {ratios}, expected {has_peer}")
        else:
            check(sum(1 for e in root.iter() if e.get("class") == "ceiling") == 1, f"{path}: no ceiling line")

    ratios = json.load(open(os.path.join(out, f"{kind}-ratios.json")))
    check(ratios["kind"] == kind and ratios["peak_tflops"] == peak[0] and ratios["peak_tbps"] == peak[1],
          f"{kind}-ratios.json: kind or ceilings wrong: {ratios['kind']} {ratios['peak_tflops']} {ratios['peak_tbps']}")
    rows = {r["shape"]: r for r in ratios["shapes"]}
    check(list(rows) == list(expected), f"{kind}-ratios.json: shapes {list(rows)}, expected {list(expected)}")

    def near(got, want, what):
        # plot.py rounds to 5 significant digits
        ok = (got is None and want is None) or (got is not None and want is not None and
                                                abs(got - want) <= 1e-4 * abs(want))
        check(ok, f"{kind}-ratios.json {what}: {got}, expected {want}")

    for shape, values in expected.items():
        row = rows.get(shape)
        if row is None:
            continue
        ours = values["tiledsl"]
        peers = {s: v for s, v in values.items() if s != "tiledsl" and v is not None}
        for s, v in values.items():
            near(row.get(s), v, f"{shape} {s}")
            if s != "tiledsl":
                near(row.get(f"tiledsl/{s}"), ours / v if ours and v else None, f"{shape} tiledsl/{s}")
        best = max(peers, key=peers.get) if peers else None
        check(row.get("best_peer") == best, f"{kind}-ratios.json {shape} best_peer: {row.get('best_peer')}, "
              f"expected {best}")
        near(row.get("tiledsl/best_peer"), ours / peers[best] if ours and best else None, f"{shape} tiledsl/best_peer")
        near(row.get("flop_per_byte"), intensity[shape], f"{shape} flop_per_byte")
        want = ours / ceiling(kind, intensity[shape], *peak) if ours else None
        near(row.get("tiledsl/ceiling"), want, f"{shape} tiledsl/ceiling")


def check_rejects(tmp, what, args, message):
    """plot.py on bad input: non-zero status, a line naming the problem, no traceback."""
    r = plot(os.path.join(tmp, "rejected"), *args)
    err = r.stderr.strip()
    check(r.returncode != 0, f"{what}: plot.py exited 0")
    check("Traceback" not in err, f"{what}: a traceback instead of a message:\n{err}")
    check(err.startswith("plot.py: ") and message in err, f"{what}: message '{err}' does not say '{message}'")
    print(f"{what}: rejected ({err})")


def main():
    with tempfile.TemporaryDirectory(prefix="bench-plot-") as tmp:
        check_kind("gemm", GEMM, GEMM_INTENSITY, tmp)
        check_kind("gemm", GEMM, GEMM_INTENSITY, tmp, peak=(1000.0, 4.0), extra=("--peak-tflops", "1000",
                                                                                  "--peak-tbps", "4"))
        check_kind("attention", ATTENTION, ATTENTION_INTENSITY, tmp)
        check_kind("norms", NORMS, NORMS_INTENSITY, tmp)

        def fixture(name):
            return os.path.join(HERE, name)

        def made(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            return path

        check_rejects(tmp, "malformed.json", [fixture("malformed.json")], "no numeric 'TFLOP/s' counter")
        unknown = {"context": {}, "benchmarks": [{"name": "gemm_magma/1024x1024x1024/iterations:3/manual_time",
                                                  "run_type": "iteration", "TFLOP/s": 1.0}]}
        check_rejects(tmp, "unknown name", [made("unknown.json", json.dumps(unknown))],
                      "unknown benchmark name 'gemm_magma/1024x1024x1024")
        check_rejects(tmp, "not JSON", [made("truncated.json", '{"benchmarks": [')], "not JSON")
        check_rejects(tmp, "a list instead of benchmark JSON", [fixture("compare_gemm.json")], "not Google Benchmark")
        check_rejects(tmp, "peers of another kind", [fixture("gemm.json"), fixture("compare_attention.json")],
                      "attention results mixed with gemm ones")
        check_rejects(tmp, "a missing file", [os.path.join(tmp, "absent.json")], "cannot read")
        bad_impl = [{"shape": "64x64x64", "M": 64, "N": 64, "K": 64, "impl": "magma", "TFLOP/s": 1.0}]
        check_rejects(tmp, "unknown peer impl", [fixture("gemm.json"), made("impl.json", json.dumps(bad_impl))],
                      "unknown gemm impl 'magma'")
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
