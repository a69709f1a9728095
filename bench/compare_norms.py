#!/usr/bin/env python3
"""The torch and Triton side of bench/norms.cpp: GB/s of row-wise softmax and
layernorm forward (and a device-to-device copy) on the same shapes, timed
with triton.testing.do_bench (medians). Also Triton's cold compile of its
softmax kernel. Writes JSON to the path given (default: stdout only).

    python3 bench/compare_norms.py [out.json]
"""
import json
import os
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl

ELEMS = int(os.environ.get("TILEDSL_BENCH_ELEMS", 1 << 25))
SIZES = [1024, 2048, 4096, 8192, 16384, 32768]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
PERSISTENT_SIZES = [4096, 8192, 16384, 32768]
PERSISTENT_STAGES = [2, 3]
PERSISTENT_PER_SM = [1, 2]
SMS = torch.cuda.get_device_properties(0).multi_processor_count


@triton.jit
def softmax_row(out_ptr, in_ptr, row, stride, n, BLOCK: tl.constexpr):
    # The same row as bench::softmax_row.
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_row(out_ptr, in_ptr, w_ptr, b_ptr, row, stride, n, eps, BLOCK: tl.constexpr):
    # The same loads and hints as bench::layernorm_row.
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=0.0, cache_modifier=".cg").to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=mask, eviction_policy="evict_last").to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, eviction_policy="evict_last").to(tl.float32)
    tl.store(out_ptr + row * stride + cols, (centered * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n, BLOCK: tl.constexpr):
    softmax_row(out_ptr, in_ptr, tl.program_id(0), stride, n, BLOCK)


@triton.jit
def layernorm_kernel(out_ptr, in_ptr, w_ptr, b_ptr, stride, n, eps, BLOCK: tl.constexpr):
    layernorm_row(out_ptr, in_ptr, w_ptr, b_ptr, tl.program_id(0), stride, n, eps, BLOCK)


@triton.jit
def softmax_persistent_kernel(out_ptr, in_ptr, stride, n, rows, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # The same persistent form as bench::softmax_fwd_persistent: rows pid, pid + P, ...
    for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
        softmax_row(out_ptr, in_ptr, row, stride, n, BLOCK)


@triton.jit
def layernorm_persistent_kernel(out_ptr, in_ptr, w_ptr, b_ptr, stride, n, eps, rows, BLOCK: tl.constexpr,
                                STAGES: tl.constexpr):
    # The same persistent form as bench::layernorm_fwd_persistent.
    for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
        layernorm_row(out_ptr, in_ptr, w_ptr, b_ptr, row, stride, n, eps, BLOCK)


def warps_for(block):  # the same choices as bench/norm_kernels.h
    return min(32, max(4, block // 1024))


def layernorm_warps_for(block):
    return 4 if block == 16384 else warps_for(block)


def gbps(ms, nbytes):
    return nbytes / (ms * 1e-3) / 1e9


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    rows = []
    for dname, dt in DTYPES.items():
        x = torch.randn(ELEMS, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        ms = bench(lambda: y.copy_(x))
        rows.append({"op": "copy", "dtype": dname, "n": 0, "impl": "torch", "ms": ms,
                     "GB/s": gbps(ms, 2 * x.numel() * x.element_size())})
        for n in SIZES:
            m = ELEMS // n
            x2 = x.view(m, n)
            y2 = y.view(m, n)
            w = torch.randn(n, device="cuda", dtype=dt)
            b = torch.randn(n, device="cuda", dtype=dt)
            nbytes = 2 * m * n * x.element_size()
            cases = {
                ("softmax", "torch"): lambda: torch.softmax(x2, dim=1),
                ("softmax", "triton"): lambda: softmax_kernel[(m,)](y2, x2, n, n, BLOCK=n, num_warps=warps_for(n)),
                ("layernorm", "torch"): lambda: torch.nn.functional.layer_norm(x2, (n,), w, b, 1e-5),
                ("layernorm", "triton"): lambda: layernorm_kernel[(m,)](y2, x2, w, b, n, n, 1e-5, BLOCK=n,
                                                                        num_warps=layernorm_warps_for(n)),
            }
            # The persistent forms at the depths and programs per SM bench_norms sweeps.
            configs = [(s, p, w) for s in PERSISTENT_STAGES for p in PERSISTENT_PER_SM
                       for w in sorted({max(4, n // 2048), warps_for(n)})] if n in PERSISTENT_SIZES else []
            for stages, per_sm, warps in configs:
                p = min(m, per_sm * SMS)
                cfg = f"S{stages}x{per_sm}w{warps}"
                cases[(f"softmax_persistent_{cfg}", "triton")] = (
                    lambda p=p, stages=stages, warps=warps: softmax_persistent_kernel[(p,)](
                        y2, x2, n, n, m, BLOCK=n, STAGES=stages, num_warps=warps))
                cases[(f"layernorm_persistent_{cfg}", "triton")] = (
                    lambda p=p, stages=stages, warps=warps: layernorm_persistent_kernel[(p,)](
                        y2, x2, w, b, n, n, 1e-5, m, BLOCK=n, STAGES=stages, num_warps=warps))
            for (op, impl), fn in cases.items():
                try:
                    ms = bench(fn)
                except Exception as e:  # a configuration Triton cannot build (shared memory, say)
                    print(f"{op} {dname} {n} {impl}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
                    continue
                rows.append({"op": op, "dtype": dname, "n": n, "impl": impl, "ms": ms, "GB/s": gbps(ms, nbytes)})
        del x, y
        torch.cuda.empty_cache()

    # How many warps a long bf16 row wants, for Triton (bench_norms'
    # softmax_warps measures the same for tiledsl).
    for n, warps in [(8192, 4), (8192, 8), (8192, 16), (8192, 32), (16384, 4), (16384, 8), (16384, 16),
                     (16384, 32), (32768, 8), (32768, 16), (32768, 32)]:
        m = ELEMS // n
        x2 = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        y2 = torch.empty_like(x2)
        ms = bench(lambda: softmax_kernel[(m,)](y2, x2, n, n, BLOCK=n, num_warps=warps))
        rows.append({"op": f"softmax_warps{warps}", "dtype": "bf16", "n": n, "impl": "triton", "ms": ms,
                     "GB/s": gbps(ms, 2 * m * n * 2)})
        del x2, y2

    # Triton's cold compile of the bf16 softmax (N = 4096) with an empty cache.
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        torch.cuda.synchronize()

        @triton.jit
        def softmax_cold(out_ptr, in_ptr, stride, n, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            mask = cols < n
            v = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
            num = tl.exp(v - tl.max(v, axis=0))
            tl.store(out_ptr + row * stride + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)

        t0 = time.perf_counter()
        softmax_cold[(1,)](y, x, 4096, 4096, BLOCK=4096, num_warps=16)
        torch.cuda.synchronize()
        cold_ms = (time.perf_counter() - t0) * 1e3
    rows.append({"op": "softmax_cold_compile", "dtype": "bf16", "n": 4096, "impl": "triton", "ms": cold_ms})

    print(f"{'op':<22}{'dtype':<6}{'n':>7}  {'impl':<8}{'ms':>10}{'GB/s':>10}")
    for r in rows:
        print(f"{r['op']:<22}{r['dtype']:<6}{r['n']:>7}  {r['impl']:<8}{r['ms']:>10.4f}{r.get('GB/s', 0):>10.1f}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
