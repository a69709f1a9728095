#!/usr/bin/env python3
"""tiledsl's attention in several configurations, timed in turns with cuDNN
in one process (bench/turns.py), for choosing a default: each configuration
goes through the shim (bench/shim/attention.cpp, TILEDSL_SHIM) with
TILEDSL_ATTN_CONFIG set for its calls, is checked against torch's math SDPA
on the first head, then all of them and cuDNN take TURNS rounds.

    ATTN_CONFIGS="default,256x64:16:2:desc,192x128:12:2:desc" \\
    ATTN_SHAPES="8,16,2048,64,0;4,32,4096,128,0" python3 bench/compare_attention_configs.py [out.json]

Prints one line a shape and configuration: the median TFLOP/s of the
rounds, its ratio to cuDNN's, and every round's figure.
"""
import ctypes
import json
import os
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from compare_attention import check, flops, reference, sdpa, tiledsl_attention
from turns import in_turns


def with_config(fn, config):
    """fn with TILEDSL_ATTN_CONFIG set to `config` ("default": unset, the
    example's default for the shape)."""
    def run():
        if config == "default":
            os.environ.pop("TILEDSL_ATTN_CONFIG", None)
        else:
            os.environ["TILEDSL_ATTN_CONFIG"] = config
        fn()
    return run


def main():
    lib = ctypes.CDLL(os.environ["TILEDSL_SHIM"])
    configs = [c for c in os.environ.get("ATTN_CONFIGS", "").split(",") if c]
    shapes = [tuple(int(x) for x in s.split(",")) for s in os.environ.get("ATTN_SHAPES", "8,16,2048,64,0").split(";")]
    rows = []
    for b, h, n, d, causal in shapes:
        causal = bool(causal)
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
        o = torch.empty_like(q)
        ref = reference(q, k, v, causal)
        fns = {}
        for c in configs:
            fn = with_config(tiledsl_attention(lib, q, k, v, o, causal), c)
            try:
                o.zero_()
                fn()
                check(c, o, ref)
                fns[c] = fn
            except Exception as e:
                print(f"{b}x{h} N={n} d={d} causal={int(causal)} {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                rows.append({"B": b, "H": h, "n": n, "d": d, "causal": causal, "config": c, "error": str(e)[:300]})
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            fns["cudnn"] = sdpa(q, k, v, causal)
            times = in_turns(fns)
        fl = flops(b, h, n, d, causal)
        cudnn = statistics.median(times["cudnn"])
        for name, ms_list in times.items():
            ms = statistics.median(ms_list)
            tf = fl / (ms * 1e-3) / 1e12
            rounds = " ".join(f"{fl / (t * 1e-3) / 1e12:.1f}" for t in ms_list)
            print(f"{b}x{h} N={n} d={d} causal={int(causal)} {name:28s} {tf:6.1f} TFLOP/s  {cudnn / ms:.3f} of cuDNN  [{rounds}]",
                  flush=True)
            rows.append({"B": b, "H": h, "n": n, "d": d, "causal": causal, "config": name, "ms": ms,
                         "TFLOP/s": tf, "of_cudnn": cudnn / ms, "rounds_ms": ms_list})
        del q, k, v, o, ref
        torch.cuda.empty_cache()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
