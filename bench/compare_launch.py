"""Launch overhead through Triton's launcher, beside bench_launch (issue 16):
the same small kernel (one program of 128 threads scaling 128 floats)
launched back to back, time from the first launch to the synchronization
after the last, divided by the launches; median of several such batches.
Also a CUDA graph of 100 captured Triton launches, replayed.

    python3 bench/compare_launch.py launch_triton.json
"""
import json
import sys
import time

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def per_launch_us(launch, batch=2000, batches=7):
    for _ in range(200):  # compile, load, warm the launcher's caches
        launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            launch()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / batch * 1e6)
    return sorted(times)[len(times) // 2]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "launch_triton.json"
    x = torch.ones(BLOCK, device="cuda")
    rows = []
    rows.append({"name": "triton/launch", "us_per_launch": per_launch_us(lambda: scale[(1,)](x, BLOCK, BLOCK=BLOCK))})
    # 100 launches captured into a graph, the graph replayed.
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            scale[(1,)](x, BLOCK, BLOCK=BLOCK)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(100):
            scale[(1,)](x, BLOCK, BLOCK=BLOCK)
    rows.append({"name": "triton/graph_replay", "us_per_launch": per_launch_us(graph.replay, batch=50) / 100})
    rows.append({"name": "torch/mul_", "us_per_launch": per_launch_us(lambda: x.mul_(1.0))})
    for r in rows:
        r["triton"] = triton.__version__
        r["torch"] = torch.__version__
        print(f"{r['name']:24s} {r['us_per_launch']:.3f} us")
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
