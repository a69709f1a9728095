#!/usr/bin/env python3
"""The Triton side of bench/ported.cpp: the originals of the three kernels
ported in examples/kernels/ported.h (tutorial 02's fused softmax with its
host code's occupancy, tutorial 05's layer-norm backward, and the MoE
router), timed with triton.testing.do_bench (medians) on the same shapes,
with the same byte counts. Writes JSON to the path given.

    python3 bench/compare_ported.py [out.json]
"""
import json
import sys

import torch
import triton
import triton.language as tl

ROWS = 4096


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@triton.jit
def moe_topk_softmax(logits, weights, ids, n_tokens, BLOCK_T: tl.constexpr, E: tl.constexpr, K: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, E)
    in_mask = (rows[:, None] < n_tokens) & (cols[None, :] < E)
    x = tl.load(logits + rows[:, None] * E + cols[None, :], mask=in_mask, other=-float('inf')).to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    p = tl.exp(x)
    p = p / tl.sum(p, axis=1)[:, None]
    ks = tl.arange(0, K)
    w_out = tl.zeros((BLOCK_T, K), dtype=tl.float32)
    id_out = tl.zeros((BLOCK_T, K), dtype=tl.int32)
    for k in tl.static_range(K):
        idx = tl.argmax(p, axis=1)
        val = tl.max(p, axis=1)
        w_out = tl.where(ks[None, :] == k, val[:, None], w_out)
        id_out = tl.where(ks[None, :] == k, idx[:, None], id_out)
        p = tl.where(cols[None, :] == idx[:, None], -1.0, p)
    w_out = w_out / tl.sum(w_out, axis=1)[:, None]
    out = rows[:, None] * K + ks[None, :]
    out_mask = (rows[:, None] < n_tokens) & (ks[None, :] < K)
    tl.store(weights + out, w_out, mask=out_mask)
    tl.store(ids + out, id_out, mask=out_mask)


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def softmax_launch(x, y):
    """Tutorial 02's host code: occupancy from the compiled kernel's registers and shared memory."""
    props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps, num_stages = 8, 4 if props["max_shared_mem"] > 200000 else 2
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block,
                                   num_stages=num_stages, num_warps=num_warps, grid=(1, ))
    kernel._init_handles()
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * num_warps)
    occupancy = min(occupancy, props["max_shared_mem"] // max(kernel.metadata.shared, 1))
    programs = min(props["multiprocessor_count"] * occupancy, n_rows)
    return (lambda: kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, block, num_stages)), programs


def main():
    rows = []
    for n in (1024, 4096, 16384):
        x = torch.randn(ROWS, n, device="cuda")
        y = torch.empty_like(x)
        fn, programs = softmax_launch(x, y)
        fn()
        torch.testing.assert_close(y, torch.softmax(x, dim=1))
        ms = bench(fn)
        rows.append({"kernel": "softmax", "n": n, "programs": programs, "ms": ms, "GB/s": 2 * ROWS * n * 4 / ms / 1e6})
        ms = bench(lambda: torch.softmax(x, dim=1))
        rows.append({"kernel": "softmax_torch", "n": n, "ms": ms, "GB/s": 2 * ROWS * n * 4 / ms / 1e6})
    for n in (1024, 4096, 8192):
        group = 256 if n <= 1024 else 128 if n <= 4096 else 96 if n <= 8192 else 64
        block = triton.next_power_of_2(n)
        warps = min(max(block // 256, 1), 8)
        x, dy = torch.randn(ROWS, n, device="cuda", dtype=torch.float16), torch.randn(ROWS, n, device="cuda", dtype=torch.float16)
        w = torch.randn(n, device="cuda", dtype=torch.float16)
        mean, rstd = torch.randn(ROWS, device="cuda") * 0.1, torch.randn(ROWS, device="cuda") * 0.1
        dx = torch.empty_like(x)
        locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
        pdw = torch.zeros((group, n), dtype=x.dtype, device="cuda")
        pdb = torch.zeros((group, n), dtype=x.dtype, device="cuda")
        dw, db = torch.empty((n, ), dtype=w.dtype, device="cuda"), torch.empty((n, ), dtype=w.dtype, device="cuda")

        def run():
            _layer_norm_bwd_dx_fused[(ROWS, )](dx, dy, pdw, pdb, x, w, mean, rstd, locks, x.stride(0), n,
                                               BLOCK_SIZE_N=block, GROUP_SIZE_M=group, num_warps=warps)
            _layer_norm_bwd_dwdb[(triton.cdiv(n, 128), )](pdw, pdb, dw, db, min(group, ROWS), n, BLOCK_SIZE_M=32,
                                                          BLOCK_SIZE_N=128, num_ctas=1)

        ms = bench(run)
        rows.append({"kernel": "ln_bwd", "n": n, "ms": ms, "GB/s": 3 * ROWS * n * 2 / ms / 1e6})
    for tokens in (16384, 65536):
        e, k, bt = 64, 8, 16
        logits = torch.randn(tokens, e, device="cuda", dtype=torch.bfloat16) * 2
        wts = torch.empty(tokens, k, device="cuda")
        ids = torch.empty(tokens, k, device="cuda", dtype=torch.int32)
        fn = lambda: moe_topk_softmax[(tokens // bt, )](logits, wts, ids, tokens, BLOCK_T=bt, E=e, K=k, num_warps=4)
        fn()
        ref_w = torch.topk(torch.softmax(logits.float(), dim=1), k, dim=1).values  # ties: ids may differ
        torch.testing.assert_close(wts, ref_w / ref_w.sum(dim=1, keepdim=True))
        ms = bench(fn)
        rows.append({"kernel": "router", "tokens": tokens, "ms": ms, "GB/s": tokens * (e * 2 + k * 8) / ms / 1e6})
    for r in rows:
        print(json.dumps(r))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
