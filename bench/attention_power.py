#!/usr/bin/env python3
"""Clock and power while tiledsl's attention (through the bench shim,
TILEDSL_SHIM) and cuDNN's run in bursts (20 launches, then 50 ms idle) and
steadily (back to back for 3 s), d 128 4 x 32 x 4096 and d 64 8 x 16 x
2048, two rounds each: TFLOP/s with the median SM clock, board power,
temperature and nvidia-smi's throttle reasons of each phase (0x4: the
power cap; 0x20: thermal slowdown). It tells apart a kernel that does
less work a clock from one that draws more power a clock (docs/perf.md
run 92: the H100 at its 700 W cap runs both at 1500-1700 MHz).

    TILEDSL_SHIM=build/bench/libtiledsl_bench_shim.so python3 bench/attention_power.py
"""
import ctypes
import datetime
import os
import statistics
import subprocess
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_attention import flops, sdpa, tiledsl_attention  # noqa: E402


def main():
    lib = ctypes.CDLL(os.environ["TILEDSL_SHIM"])
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
                            "clocks_throttle_reasons.active", "--format=csv,noheader,nounits", "-lms", "50"],
                           stdout=subprocess.PIPE, text=True)
    phases = []  # (name, start, end, median ms, flops)

    def phase(name, fn, fl, seconds, pause=None):
        t0, ms = time.time(), []
        while time.time() - t0 < seconds:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(20):
                fn()
            e.record()
            torch.cuda.synchronize()
            ms.append(s.elapsed_time(e) / 20)
            if pause:
                time.sleep(pause)
        phases.append((name, t0, time.time(), statistics.median(ms), fl))

    for b, h, n, d, causal in [(4, 32, 4096, 128, False), (8, 16, 2048, 64, False)]:
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
        o = torch.empty_like(q)
        fl = flops(b, h, n, d, causal)
        tl_fn = tiledsl_attention(lib, q, k, v, o, causal)
        tl_fn()
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            cudnn = sdpa(q, k, v, causal)
            cudnn()
            for _ in range(2):
                for name, fn in (("tiledsl", tl_fn), ("cudnn", cudnn)):
                    time.sleep(1.0)
                    phase(f"d{d} {name} burst", fn, fl, 1.5, pause=0.05)
                    time.sleep(1.0)
                    phase(f"d{d} {name} steady", fn, fl, 3.0)
    time.sleep(0.3)
    smi.terminate()
    samples = []  # (time, MHz, W, temperature, reasons)
    for line in smi.stdout.read().strip().split("\n"):
        p = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(p[1]), float(p[2]), p[3], p[4]))
        except (ValueError, IndexError):
            pass
    for name, a, b, ms, fl in phases:
        sel = [s for s in samples if a + 0.3 <= s[0] <= b]
        if not sel:
            print(f"{name:22s} {fl / (ms * 1e-3) / 1e12:6.1f} TFLOP/s  (no samples)")
            continue
        print(f"{name:22s} {fl / (ms * 1e-3) / 1e12:6.1f} TFLOP/s  clock {statistics.median(s[1] for s in sel):6.0f} MHz"
              f"  power {statistics.median(s[2] for s in sel):5.0f} W  temp {sel[-1][3]}"
              f"  reasons {sorted(set(s[4] for s in sel))}")


if __name__ == "__main__":
    main()
