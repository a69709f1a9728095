#!/usr/bin/env python3
"""The torch and Triton side of bench/gemm.cpp: TFLOP/s of bf16 GEMM
(C = A @ B, all row-major, f32 accumulation, bf16 C) on the same shapes,
timed with triton.testing.do_bench (medians). torch.matmul runs cuBLAS (or
cuBLASLt); the Triton kernel is a standard tiled matmul with grouped program
order, autotuned over a few configurations per shape, and Triton's TMA
persistent kernel (tensor descriptors, one program a multiprocessor) with
and without its warp specialization, autotuned likewise. FLOPs counted:
2 * M * N * K. Each Triton result is checked against torch's
(vs_torch: max |C_triton - C_torch| / max |C_torch|). Writes JSON to the
path given (default: stdout only).

    python3 bench/compare_gemm.py [out.json]

TILEDSL_GEMM_SHAPES=MxNxK,... replaces the default shapes, as for bench_gemm.

With TILEDSL_SHIM naming build/bench/libtiledsl_bench_shim.so
(bench/shim/gemm.cpp), tiledsl's kernel is called on the same tensors
through ctypes and timed in turns with torch.matmul and Triton's fastest
form for the shape (TURNS rounds, default 5, each a do_bench median, the
order alternating): rows tiledsl_turns, torch_turns and triton_turns, with
each round's ms. TILEDSL_GEMM_PAIRED=CFG,... picks tiledsl's
configurations (default: the example's default for the shape).
"""
import ctypes
import json
import os
import statistics
import sys

import torch
import triton
import triton.language as tl
from turns import bench, in_turns

# The shapes of bench/gemm.cpp: squares, then M tokens x (N, K) of a
# 7B-class model's projections.
SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (8192, 4096, 4096), (8192, 11008, 4096), (8192, 4096, 11008), (16384, 4096, 4096)]


def shapes():
    env = os.environ.get("TILEDSL_GEMM_SHAPES")
    if not env:
        return SHAPES
    return [tuple(int(x) for x in s.split("x")) for s in env.split(",") if s]


def autotune_configs():
    configs = []
    for bm, bn, bk, stages, warps in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 8),
                                      (128, 128, 64, 3, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
                                      (128, 128, 32, 4, 4), (64, 64, 64, 4, 4)]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_stages=stages, num_warps=warps))
    return configs


@triton.autotune(configs=autotune_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped order, as in examples/kernels/gemm.h: GROUP_M rows of tiles
    # are walked column by column so that concurrent programs share B.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_tile_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(a_tile_ptrs, mask=(rows[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_tile_ptrs, mask=k_ok[:, None] & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile_ptrs += BLOCK_K * stride_ak
        b_tile_ptrs += BLOCK_K * stride_bk
    c_tile_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def persistent_configs():
    configs = []
    for bm, bn, bk, stages, warps in [(128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (128, 128, 64, 4, 8),
                                      (128, 128, 64, 4, 4)]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_stages=stages, num_warps=warps))
    return configs


@triton.autotune(configs=persistent_configs(), key=["M", "N", "K", "WARP_SPECIALIZE"])
@triton.jit
def tma_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Triton's fastest Hopper form: tensor descriptors (TMA loads and the
    # store), one program a multiprocessor walking the tiles in grouped
    # order, optionally warp-specialized by Triton.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_pid_in_group = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, warp_specialize=WARP_SPECIALIZE):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


def triton_tma_persistent(a, b, c, warp_specialize):
    M, K = a.shape
    N = b.shape[1]
    sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    grid = lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)
    tma_persistent_kernel[grid](a, b, c, M, N, K, NUM_SMS=sms, WARP_SPECIALIZE=warp_specialize)
    return c


def triton_matmul(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1))
    return c


def tflops(ms, m, n, k):
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def normwise_difference(got, ref):
    if torch.isnan(got).any():
        return float("inf")
    diff = (got.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item()
    return diff / scale if scale > 0 else diff


# TILEDSL_SHIM: the shim library, so that tiledsl's kernel is timed in turns
# with torch and Triton in this process (TURNS rounds, default 5).
SHIM = os.environ.get("TILEDSL_SHIM", "")


def tiledsl_gemm(lib, a, b, c, config):
    """The shim's tl_gemm on torch's tensors and current stream, and the
    configuration it runs; raises with the shim's message when it refuses."""
    m, k = a.shape
    n = b.shape[1]
    err, used = ctypes.create_string_buffer(512), ctypes.create_string_buffer(128)

    def run():
        rc = lib.tl_gemm(b"cuda", config.encode(), ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()),
                         ctypes.c_void_p(c.data_ptr()), m, n, k,
                         ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), used, len(used), err, len(err))
        if rc != 0:
            raise RuntimeError(err.value.decode())
    run()
    return run, used.value.decode()


def main():
    lib = ctypes.CDLL(SHIM) if SHIM else None
    configs = [c for c in os.environ.get("TILEDSL_GEMM_PAIRED", "").split(",") if c] or [""]
    rows = []
    for m, n, k in shapes():
        gen = torch.Generator(device="cuda").manual_seed(7)
        a = torch.rand(m, k, device="cuda", generator=gen).mul_(2).sub_(1).to(torch.bfloat16)  # [M, K]
        b = torch.rand(k, n, device="cuda", generator=gen).mul_(2).sub_(1).to(torch.bfloat16)  # [K, N]
        c_torch = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        c_triton = torch.empty_like(c_torch)
        shape = f"{m}x{n}x{k}"

        ms = bench(lambda: torch.matmul(a, b, out=c_torch))
        rows.append({"shape": shape, "M": m, "N": n, "K": k, "impl": "torch", "ms": ms,
                     "TFLOP/s": tflops(ms, m, n, k), "config": "torch.matmul", "version": torch.__version__})

        triton_matmul(a, b, c_triton)  # autotunes for this shape
        torch.cuda.synchronize()
        best = matmul_kernel.best_config
        config = (f"{best.kwargs['BLOCK_M']}x{best.kwargs['BLOCK_N']}x{best.kwargs['BLOCK_K']}:"
                  f"{best.num_warps}:{best.num_stages}")
        ms = bench(lambda: triton_matmul(a, b, c_triton))
        rows.append({"shape": shape, "M": m, "N": n, "K": k, "impl": "triton", "ms": ms,
                     "TFLOP/s": tflops(ms, m, n, k), "config": config, "version": triton.__version__,
                     "vs_torch": normwise_difference(c_triton, c_torch)})
        # Triton's TMA persistent kernel, without and with its warp
        # specialization; a form this Triton cannot compile is reported.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        for ws in (False, True):
            impl = "triton_tma_ws" if ws else "triton_tma"
            try:
                triton_tma_persistent(a, b, c_triton, ws)  # autotunes for this shape
                torch.cuda.synchronize()
                best = tma_persistent_kernel.best_config
                config = (f"{best.kwargs['BLOCK_M']}x{best.kwargs['BLOCK_N']}x{best.kwargs['BLOCK_K']}:"
                          f"{best.num_warps}:{best.num_stages} TMA persistent" + (" WS" if ws else ""))
                ms = bench(lambda: triton_tma_persistent(a, b, c_triton, ws))
                rows.append({"shape": shape, "M": m, "N": n, "K": k, "impl": impl, "ms": ms,
                             "TFLOP/s": tflops(ms, m, n, k), "config": config, "version": triton.__version__,
                             "vs_torch": normwise_difference(c_triton, c_torch)})
            except Exception as e:  # noqa: BLE001 (report and go on)
                print(f"{shape} {impl}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        # tiledsl in turns with torch and Triton's fastest form for the shape.
        triton_rows = [r for r in rows if r["shape"] == shape and r["impl"].startswith("triton")]
        if lib and triton_rows:
            best = min(triton_rows, key=lambda r: r["ms"])
            best_fn = {"triton": lambda: triton_matmul(a, b, c_triton),
                       "triton_tma": lambda: triton_tma_persistent(a, b, c_triton, False),
                       "triton_tma_ws": lambda: triton_tma_persistent(a, b, c_triton, True)}[best["impl"]]
            for config in configs:
                c_tl = torch.empty_like(c_torch)
                try:
                    tl_fn, used = tiledsl_gemm(lib, a, b, c_tl, config)
                    torch.cuda.synchronize()
                    check = normwise_difference(c_tl, c_torch)
                    times = in_turns({"tiledsl_turns": tl_fn, "torch_turns": lambda: torch.matmul(a, b, out=c_torch),
                                      "triton_turns": best_fn})
                except Exception as e:  # noqa: BLE001 (report and go on)
                    rows.append({"shape": shape, "M": m, "N": n, "K": k, "impl": "tiledsl_turns", "ms": 0.0,
                                 "TFLOP/s": 0.0, "config": config or "default",
                                 "error": f"{type(e).__name__}: {e}"[:300]})
                    continue
                for impl, rounds in times.items():
                    ms = statistics.median(rounds)
                    row = {"shape": shape, "M": m, "N": n, "K": k, "impl": impl, "ms": ms,
                           "TFLOP/s": tflops(ms, m, n, k), "rounds_ms": rounds,
                           "config": used if impl == "tiledsl_turns" else
                           ("torch.matmul" if impl == "torch_turns" else best["config"])}
                    if impl == "tiledsl_turns":
                        row["vs_torch"] = check
                    rows.append(row)
                del c_tl
        del a, b, c_torch, c_triton
        torch.cuda.empty_cache()

    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'shape':<20}{'impl':<15}{'ms':>10}{'TFLOP/s':>10}  config")
    for r in rows:
        print(f"{r['shape']:<20}{r['impl']:<15}{r['ms']:>10.4f}{r['TFLOP/s']:>10.1f}  {r['config']}"
              + (f"  (vs torch {r['vs_torch']:.2e})" if "vs_torch" in r else "")
              + (f"  rounds {' '.join('%.1f' % tflops(x, r['M'], r['N'], r['K']) for x in r['rounds_ms'])}"
                 if "rounds_ms" in r else "") + (f"  {r['error']}" if "error" in r else ""))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
