#!/usr/bin/env python3
"""The torch and Triton side of bench/attention.cpp: TFLOP/s of the bf16
flash-attention forward on the same shapes (16k tokens, B = 16384 / N;
model width 2048, H = 2048 / D; D = 64 and 128; N = 1024 to 16384; causal
and not; and attention_bhn's B x H x N, issue 14's four shapes), timed with
triton.testing.do_bench (medians):

  cudnn         torch SDPA, cuDNN back end (SDPBackend.CUDNN_ATTENTION)
  fa2           torch SDPA, FlashAttention-2 back end (SDPBackend.FLASH_ATTENTION)
  triton        the Triton kernel below with tiledsl's tile configuration
                (TILEDSL_ATTN_CONFIG=BMxBN:warps:stages[:...] overrides both)
  triton_best   the same kernel, best of a few configurations
  tiledsl_turns, cudnn_turns
                with TILEDSL_SHIM naming build/bench/libtiledsl_bench_shim.so
                (bench/shim/attention.cpp): tiledsl's kernel called on the
                same tensors through ctypes, timed in turns with cuDNN in
                this process (TURNS rounds of one do_bench each, medians of
                the rounds; the rows carry every round's figure)

The Triton kernel is the algorithm of examples/kernels/attention.h written
in Triton (one program per BM query rows of one head, online softmax in
exp2, P rounded to bf16 for the second product, causal loop stopping at the
diagonal), so tiledsl/triton compares the compilers, not the algorithms.
Each kernel's result is checked against torch's math SDPA (first head)
before it is timed.
Writes JSON to the path given (default: stdout only).

    python3 bench/compare_attention.py [out.json]
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
from torch.nn.attention import SDPBackend, sdpa_kernel

TOKENS = 16384       # B * N
MODEL_WIDTH = 2048   # H * D
# ATTN_LENGTHS=4096,16384 measures only those (a short device call).
LENGTHS = [int(n) for n in os.environ.get("ATTN_LENGTHS", "").split(",") if n] or [1024, 2048, 4096, 8192, 16384]
# ATTN_SWEEP=0 leaves out the 16k-token sweep (attention_bhn's shapes and
# the grouped-query rows only).
SWEEP = os.environ.get("ATTN_SWEEP", "1") != "0"
# ATTN_HEAD_DIMS=128 measures only that head dim.
HEAD_DIMS = [int(d) for d in os.environ.get("ATTN_HEAD_DIMS", "").split(",") if d] or [64, 128]
# (BM, BN, warps, stages) tried for triton_best.
TRITON_CONFIGS = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (128, 32, 4, 4), (64, 64, 4, 3),
                  (128, 64, 4, 4)]


@triton.jit
def attention_fwd(Q, K, V, O, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                  CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * N * D          # this head's [N, D]
    offs_m = start_m * BM + tl.arange(0, BM)               # [BM]
    offs_n = tl.arange(0, BN)                              # [BN]
    offs_d = tl.arange(0, D)                               # [D]
    row_ok = offs_m[:, None] < N                           # [BM, 1]
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=row_ok, other=0.0)  # [BM, D]
    qk_scale = sm_scale * 1.44269504                       # log2(e) folded in
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BM, N)
    else:
        hi = N
    for start_n in range(0, hi, BN):
        cols = start_n + offs_n                            # [BN] key indices
        kv = base + cols[:, None] * D + offs_d[None, :]    # [BN, D]
        k = tl.load(K + kv, mask=cols[:, None] < N, other=0.0)
        v = tl.load(V + kv, mask=cols[:, None] < N, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale             # [BM, BN] f32
        ok = cols[None, :] < N
        if CAUSAL:
            ok = ok & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(ok, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(V.dtype.element_ty), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], out.to(O.dtype.element_ty), mask=row_ok)


def default_config(d, n, causal):
    """The tiles of kernels::attention_config of examples/kernels/attention.h
    (its forms, ":desc", ":persistent", and programs a multiprocessor, ":xN",
    are tiledsl's alone)."""
    env = os.environ.get("TILEDSL_ATTN_CONFIG")
    if env:
        tiles, warps, stages = env.split(":")[:3]
        bm, bn = tiles.split("x")
        return int(bm), int(bn), int(warps), int(stages)
    if torch.cuda.get_device_capability() == (9, 0):
        if d == 128:
            return 128, 128, 8, 2
        if not causal and n > 1024:
            return 256, 64, 16, 2
        return (64, 64, 4, 3) if n <= 4096 else (128, 128, 8, 3)
    return 128, 64, 4 if d == 64 else 8, 3


def triton_attention(q, k, v, o, causal, config):
    bm, bn, warps, stages = config
    b, h, n, d = q.shape
    grid = (triton.cdiv(n, bm), b * h)
    return lambda: attention_fwd[grid](q, k, v, o, n, 1.0 / d ** 0.5, D=d, BM=bm, BN=bn, CAUSAL=causal,
                                       num_warps=warps, num_stages=stages)


def sdpa(q, k, v, causal):
    """Run under `with sdpa_kernel(backend)` (entered once, outside the timing);
    K and V may have fewer heads (grouped-query attention)."""
    gqa = k.shape[1] != q.shape[1]
    return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)


def flops(b, h, n, d, causal):
    return 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)


# TILEDSL_SHIM: the shim library, so that tiledsl's kernel is timed in turns
# with cuDNN in this process (TURNS rounds, default 5).
SHIM = os.environ.get("TILEDSL_SHIM", "")


def tiledsl_attention(lib, q, k, v, o, causal):
    """The shim's tl_attention on torch's tensors and current stream; raises
    with the shim's message when it refuses."""
    b, h, n, d = q.shape
    group = h // k.shape[1]
    err = ctypes.create_string_buffer(512)

    def run():
        rc = lib.tl_attention(b"cuda", ctypes.c_void_p(q.data_ptr()), ctypes.c_void_p(k.data_ptr()),
                              ctypes.c_void_p(v.data_ptr()), ctypes.c_void_p(o.data_ptr()), b, h, n, d,
                              int(causal), group, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                              err, len(err))
        if rc != 0:
            raise RuntimeError(err.value.decode())
    return run


def reference(q, k, v, causal):
    """torch's math SDPA in f32 on the first head of the first batch (all of
    it would materialize B*H*N*N scores: 34 GB at N = 16384)."""
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(q[:1, :1].float(), k[:1, :1].float(),
                                                                 v[:1, :1].float(), is_causal=causal)


def check(name, got, ref):
    torch.testing.assert_close(got[:1, :1].float(), ref, atol=2e-2, rtol=2e-2, msg=lambda m: f"{name}: {m}")


# bench_attention's attention_bhn: B, H, N, d, causal given (issue 14's
# shapes, FlashAttention-3's table); rows marked "bhn". ATTN_BHN=0 skips them.
BHN_SHAPES = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (8, 16, 2048, 64, False),
              (2, 16, 8192, 128, True)] if os.environ.get("ATTN_BHN", "1") != "0" else []


def main():
    rows = []
    lib = ctypes.CDLL(SHIM) if SHIM else None
    cases = [(TOKENS // n, MODEL_WIDTH // d, n, d, causal, {})
             for d in HEAD_DIMS for causal in (False, True) for n in LENGTHS] if SWEEP else []
    cases += [(b, h, n, d, causal, {"bhn": True}) for b, h, n, d, causal in BHN_SHAPES]
    for b, h, n, d, causal, mark in cases:
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen)
                   for _ in range(3))
        o = torch.empty_like(q)
        shape = {"op": "attention_bhn" if mark else "attention", "dtype": "bf16", "d": d, "causal": causal,
                 "n": n, "B": b, "H": h, **mark}
        fl = flops(b, h, n, d, causal)
        ref = reference(q, k, v, causal)

        # fn launches once; `out` is where the result lands (None: fn returns it).
        def record(impl, fn, out=None, **extra):
            try:
                result = fn()
                check(impl, result if out is None else out, ref)
                ms = bench(fn)
                rows.append({**shape, "impl": impl, "ms": ms, "TFLOP/s": fl / (ms * 1e-3) / 1e12, **extra})
            except Exception as e:  # a back end that refuses the shape: say so, go on
                rows.append({**shape, "impl": impl, "error": f"{type(e).__name__}: {e}"[:300], **extra})
            return rows[-1]

        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            record("cudnn", sdpa(q, k, v, causal))
        if lib is not None:
            try:
                tl_fn = tiledsl_attention(lib, q, k, v, o, causal)
                tl_fn()
                check("tiledsl", o, ref)
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    times = in_turns({"tiledsl_turns": tl_fn, "cudnn_turns": sdpa(q, k, v, causal)})
                for impl, ms_list in times.items():
                    ms = statistics.median(ms_list)
                    rows.append({**shape, "impl": impl, "ms": ms, "TFLOP/s": fl / (ms * 1e-3) / 1e12,
                                 "rounds_ms": ms_list})
            except Exception as e:
                rows.append({**shape, "impl": "tiledsl_turns", "error": f"{type(e).__name__}: {e}"[:300]})
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            record("fa2", sdpa(q, k, v, causal))
        cfg = default_config(d, n, causal)
        record("triton", triton_attention(q, k, v, o, causal, cfg), out=o, config=list(cfg))
        best = None
        for c in TRITON_CONFIGS:
            o.zero_()  # each configuration must write its own result
            r = record("triton_cfg", triton_attention(q, k, v, o, causal, c), out=o, config=list(c))
            rows.pop()
            if "ms" in r and (best is None or r["ms"] < best["ms"]):
                best = r
        if best is not None:
            rows.append({**best, "impl": "triton_best"})
        del q, k, v, o, ref
        torch.cuda.empty_cache()

    # Grouped-query attention (4 query heads a key/value head; bench_attention's
    # attention_gqa): the SDPA back ends only (Triton's tutorial kernel has no
    # GQA form), rows marked with "kv".
    for d, causal in ((64, False), (128, False), (128, True)):
        n = 4096
        b, h = TOKENS // n, MODEL_WIDTH // d
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k, v = (torch.randn(b, h // 4, n, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
        shape = {"op": "attention_gqa", "dtype": "bf16", "d": d, "causal": causal, "n": n, "B": b, "H": h, "kv": h // 4}
        ref = reference(q, k, v, causal)
        for impl, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    fn = sdpa(q, k, v, causal)
                    check(impl, fn(), ref)
                    ms = bench(fn)
                rows.append({**shape, "impl": impl, "ms": ms, "TFLOP/s": flops(b, h, n, d, causal) / (ms * 1e-3) / 1e12})
            except Exception as e:
                rows.append({**shape, "impl": impl, "error": f"{type(e).__name__}: {e}"[:300]})
        del q, k, v, ref
        torch.cuda.empty_cache()

    print(f"{'d':>4} {'causal':<7}{'n':>7}  {'impl':<12}{'ms':>10}{'TFLOP/s':>10}  config/error")
    for r in rows:
        tail = r.get("error", "") or " ".join(map(str, r.get("config", []))) or (f"GQA kv={r['kv']}" if "kv" in r else "")
        if r.get("bhn"):
            tail = f"B={r['B']} H={r['H']} " + tail
        print(f"{r['d']:>4} {str(r['causal']):<7}{r['n']:>7}  {r['impl']:<12}{r.get('ms', 0):>10.4f}"
              f"{r.get('TFLOP/s', 0):>10.1f}  {tail}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
