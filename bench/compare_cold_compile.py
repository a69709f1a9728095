"""Cold compile, tiledsl beside Triton, one figure a fresh process.

tiledsl: bench_cold_compile gemm|attention (the examples' default kernels on
this GPU), with CUDA_CACHE_DISABLE=1 and TILEDSL_ALWAYS_COMPILE=1: the
trace, each compile stage, the link (ptxas or the driver's JIT) and the module load; then
the same command with the disk cache filled (a warm start). Triton 3.x: the
first call of its tutorial GEMM (one configuration, 128x256x64, 8 warps, 3
stages, the tiledsl default's tile), its TMA persistent GEMM (the same
tile), and its fused-attention tutorial kernel (compare_attention.py's, d
128), each with an empty TRITON_CACHE_DIR and CUDA_CACHE_DISABLE=1; the
CUDA context is created before the clock starts in both.

  python3 bench/compare_cold_compile.py BIN_DIR OUT.json [RUNS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def triton_child(which):
    """Runs in a fresh process: one Triton first call, timed."""
    import time
    t0 = time.perf_counter()
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    sys.path.insert(0, HERE)
    import triton
    if which.startswith("gemm"):
        import compare_gemm as g
        M = N = K = 1024
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        meta = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
        if which == "gemm":
            grid = (triton.cdiv(M, 128) * triton.cdiv(N, 256),)
            call = lambda: g.matmul_kernel.fn[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, **meta)
        else:
            triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
            sms = torch.cuda.get_device_properties("cuda").multi_processor_count
            grid = (min(sms, triton.cdiv(M, 128) * triton.cdiv(N, 256)),)
            call = lambda: g.tma_persistent_kernel.fn[grid](a, b, c, M, N, K, NUM_SMS=sms,
                                                            WARP_SPECIALIZE=which == "gemm_tma_ws", **meta)
    else:
        import compare_attention as at
        q, k, v = (torch.randn(1, 8, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        call = at.triton_attention(q, k, v, o, False, at.default_config(128))
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    t4 = time.perf_counter()
    print(json.dumps({"impl": "triton", "kernel": which, "context_ms": (t1 - t0) * 1e3,
                      "first_call_ms": (t3 - t2) * 1e3, "second_call_ms": (t4 - t3) * 1e3}))


def run(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def median_of(rows, key):
    vals = [r[key] for r in rows if key in r]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


def main():
    bin_dir, out = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    rows = []
    base = dict(os.environ, CUDA_CACHE_DISABLE="1")
    for kernel in ("gemm", "attention"):
        cache = tempfile.mkdtemp(prefix="tl-cold-")
        for i in range(runs):
            env = dict(base, TILEDSL_CACHE_DIR=cache, TILEDSL_ALWAYS_COMPILE="1")
            rows.append(dict(run([os.path.join(bin_dir, "bench_cold_compile"), kernel], env), impl="tiledsl", mode="cold"))
        for i in range(runs):
            env = dict(base, TILEDSL_CACHE_DIR=cache)
            rows.append(dict(run([os.path.join(bin_dir, "bench_cold_compile"), kernel], env), impl="tiledsl", mode="warm"))
    for kernel in ("gemm", "gemm_tma", "gemm_tma_ws", "attention"):
        for i in range(runs):
            env = dict(base, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-cold-"))
            rows.append(dict(run([sys.executable, os.path.abspath(__file__), "--triton-child", kernel], env), mode="cold"))
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    hw = next((r["hardware"] for r in rows if "hardware" in r), None)
    if hw:
        print(f"tiledsl on {hw} (a ptxas named there links; else the driver's JIT)")
    print("| impl | kernel | mode | context ms | trace ms | passes | lower | optimize | emit | link | load | "
          "trace-to-loaded / first call ms (median, min-max) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    groups = {}
    for r in rows:
        groups.setdefault((r.get("impl"), r.get("kernel", "?"), r.get("mode")), []).append(r)
    for (impl, kernel, mode), rs in groups.items():
        errors = [r["error"] for r in rs if "error" in r]
        if errors:
            print(f"| {impl} | {kernel} | {mode} | error: {errors[0][-300:]!r} |")
            continue
        def cell(key):
            m = median_of(rs, key)
            return f"{m[0]:.1f}" if m else "-"
        total = median_of(rs, "trace_to_loaded_ms" if impl == "tiledsl" else "first_call_ms")
        print(f"| {impl} | {kernel} | {mode} | {cell('context_ms')} | {cell('trace_ms')} | {cell('passes_ms')} | "
              f"{cell('lower_ms')} | {cell('optimize_ms')} | {cell('emit_ms')} | {cell('jit_link_ms')} | "
              f"{cell('load_ms')} | {total[0]:.1f} ({total[1]:.1f}-{total[2]:.1f}) |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--triton-child":
        triton_child(sys.argv[2])
    else:
        main()
