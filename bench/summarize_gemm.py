#!/usr/bin/env python3
"""Markdown table of bench_gemm (tiledsl and cuBLAS from C++) and
compare_gemm.py (torch.matmul and Triton) results from one run: TFLOP/s per
shape and tiledsl's ratio to cuBLAS and to Triton (the best of its
tutorial kernel and its TMA persistent kernel with and without warp
specialization). With several tiledsl
configurations (TILEDSL_GEMM_CONFIG) the best one per shape is shown, with
its name. Benchmarks that were skipped are listed with their reason.

    python3 bench/summarize_gemm.py gemm.json compare_gemm.json
"""
import json
import re
import sys

NAME = re.compile(r"gemm_(tiledsl|cublas|paired)/(\d+x\d+x\d+)(?:/(\d+x\d+x\d+:\d+:\d+(?::desc|:persistent)?(?::x\d)?(?::n?ws)?))?/")


def load_ours(path):
    """{shape: {"tiledsl": (tflops, config), "cublas": tflops, "diff": x}}, shape order, skips."""
    shapes, order, skipped = {}, [], []
    for b in json.load(open(path))["benchmarks"]:
        m = NAME.match(b["name"])
        if not m:
            continue
        impl, shape, config = m.groups()
        if shape not in shapes:
            shapes[shape] = {}
            order.append(shape)
        if b.get("error_occurred"):
            skipped.append((b["name"].split("/iterations")[0], b.get("error_message", "")))
            continue
        entry = shapes[shape]
        if b["name"].startswith("gemm_paired/"):
            entry["paired"] = (b["TFLOP/s"], b["cublas_TFLOP/s"], b["tl_over_cublas"])
            continue
        if impl == "tiledsl":
            if b["TFLOP/s"] > entry.get("tiledsl", (0.0, ""))[0]:
                entry["tiledsl"] = (b["TFLOP/s"], config)
        else:
            entry["cublas"] = b["TFLOP/s"]
            if "tl_vs_cublas" in b:
                entry["diff"] = b["tl_vs_cublas"]
    return shapes, order, skipped


def load_theirs(path):
    theirs = {}
    for r in json.load(open(path)):
        theirs[(r["shape"], r["impl"])] = r
    return theirs


def cell(x, fmt="{:.1f}"):
    return "-" if x is None else fmt.format(x)


def ratio(a, b):
    return a / b if a and b else None


def main(ours_path, theirs_path):
    ours, order, skipped = load_ours(ours_path)
    theirs = load_theirs(theirs_path)
    for shape, _ in theirs:
        if shape not in ours:
            ours[shape] = {}
            order.append(shape)

    versions = sorted({f"{impl} {r['version']}" for (_, impl), r in theirs.items() if "version" in r})
    print("bf16 GEMM, TFLOP/s (2*M*N*K per launch); C = A @ B, row-major, f32 accumulation"
          + (f"; {', '.join(versions)}" if versions else "") + "\n")
    print("| M x N x K | tiledsl | cuBLAS (C++) | torch | Triton | tl/cuBLAS | tl/Triton | tiledsl config "
          "| tl vs cuBLAS | Triton config |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for shape in order:
        o = ours[shape]
        tl_tflops, tl_config = o.get("tiledsl", (None, ""))
        cublas = o.get("cublas")
        torch_r = theirs.get((shape, "torch"), {})
        # Triton's best: its tutorial kernel or its TMA persistent kernel
        # (with or without warp specialization).
        triton_r = max((theirs.get((shape, i), {}) for i in ("triton", "triton_tma", "triton_tma_ws")),
                       key=lambda r: r.get("TFLOP/s", 0.0))
        torch_tflops = torch_r.get("TFLOP/s")
        triton_tflops = triton_r.get("TFLOP/s")
        print(f"| {shape} | {cell(tl_tflops)} | {cell(cublas)} | {cell(torch_tflops)} | {cell(triton_tflops)} "
              f"| {cell(ratio(tl_tflops, cublas), '{:.2f}')} | {cell(ratio(tl_tflops, triton_tflops), '{:.2f}')} "
              f"| {tl_config or '-'} | {cell(o.get('diff'), '{:.1e}')} "
              f"| {triton_r.get('config', '-')} |")
    print("\ntiledsl config: BMxBNxBK:warps:stages (best of those run); tl vs cuBLAS: "
          "max |C_tiledsl - C_cublas| / max |C_cublas|.")
    paired = [(shape, ours[shape]["paired"]) for shape in order if "paired" in ours[shape]]
    if paired:
        print("\nIn turns (gemm_paired: the default configuration and cuBLAS alternately, medians of six):\n")
        print("| M x N x K | tiledsl | cuBLAS | tl/cuBLAS (median of the pairs' ratios) |")
        print("|---|---:|---:|---:|")
        for shape, (tl_tflops, cublas, r) in paired:
            print(f"| {shape} | {tl_tflops:.1f} | {cublas:.1f} | {r:.2f} |")
    if skipped:
        print("\nSkipped:")
        for name, why in skipped:
            print(f"- {name}: {why.splitlines()[0] if why else ''}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
