# Probe, run on the GPU machine (python3 scripts/probe_ptxas_int16.py): how
# the driver's PTX JIT treats 16-bit integer arithmetic at the edge of its
# range, then widened, compared or shifted. Hand-written PTX, one case a
# line, each printed with what PTX's two's-complement arithmetic gives and
# what came back. On the H200 (driver 580.159.04) neg.s16 and abs.s16 of
# -32768 came back +32768 and every other case wrapped; the NVPTX back end
# rewrites those two (avoid_neg16 in backends/nvptx/nvptx_target.cpp) and
# the last two cases are its rewrites.
import ctypes, torch
torch.cuda.init(); torch.zeros(1, device="cuda")
cu = ctypes.CDLL("libcuda.so.1")
cases = [  # (name, body computing %r<i> into [out + 4 i], expected)
 ("neg.s16 -> cvt.s32.s16", "neg.s16 %h10, %h1; cvt.s32.s16 %r9, %h10;", -32768),
 ("sub.s16 0-x -> cvt.s32.s16", "sub.s16 %h10, %h4, %h1; cvt.s32.s16 %r9, %h10;", -32768),
 ("add.s16 max+1 -> cvt.s32.s16", "add.s16 %h10, %h2, %h3; cvt.s32.s16 %r9, %h10;", -32768),
 ("add.u16 max+1 -> cvt.s32.s16", "add.u16 %h10, %h2, %h3; cvt.s32.s16 %r9, %h10;", -32768),
 ("sub.s16 min-1 -> cvt.s32.s16", "sub.s16 %h10, %h1, %h3; cvt.s32.s16 %r9, %h10;", 32767),
 ("mul.lo.s16 max*2 -> cvt.s32.s16", "add.s16 %h11, %h3, %h3; mul.lo.s16 %h10, %h2, %h11; cvt.s32.s16 %r9, %h10;", -2),
 ("shl.b16 max<<1 -> cvt.s32.s16", "shl.b16 %h10, %h2, 1; cvt.s32.s16 %r9, %h10;", -2),
 ("neg.s16 -> setp.lt.s16 0", "neg.s16 %h10, %h1; setp.lt.s16 %p1, %h10, %h4; selp.u32 %r9, 1, 0, %p1;", 1),
 ("add.s16 -> setp.lt.s16 0", "add.s16 %h10, %h2, %h3; setp.lt.s16 %p1, %h10, %h4; selp.u32 %r9, 1, 0, %p1;", 1),
 ("neg.s16 -> shr.s16 1", "neg.s16 %h10, %h1; shr.s16 %h11, %h10, 1; cvt.s32.s16 %r9, %h11;", -16384),
 ("add.s16 -> shr.s16 1", "add.s16 %h10, %h2, %h3; shr.s16 %h11, %h10, 1; cvt.s32.s16 %r9, %h11;", -16384),
 ("neg.s16 -> cvt.u32.u16", "neg.s16 %h10, %h1; cvt.u32.u16 %r9, %h10;", 32768),
 ("not+add.s16 1 -> cvt.s32.s16", "not.b16 %h11, %h1; add.s16 %h10, %h11, %h3; cvt.s32.s16 %r9, %h10;", -32768),
 ("neg.s16 -> and 0xffff -> cvt.s32.s16", "neg.s16 %h10, %h1; and.b16 %h11, %h10, 0xFFFF; cvt.s32.s16 %r9, %h11;", -32768),
 ("32-bit neg, cvt.u16.u32, cvt.s32.s16", "cvt.s32.s16 %r8, %h1; neg.s32 %r8, %r8; cvt.u16.u32 %h10, %r8; cvt.s32.s16 %r9, %h10;", -32768),
 ("neg.s16 -> cvt.s16.s16?? via mov.b32 pack", "neg.s16 %h10, %h1; mov.b32 %r8, {%h10, %h4}; shl.b32 %r8, %r8, 16; shr.s32 %r9, %r8, 16;", -32768),
 ("neg.s16 -> st.b16 -> ld (bits)", "neg.s16 %h10, %h1; st.global.b16 [%rd3], %h10; ld.volatile.global.s16 %r9, [%rd3];", -32768),
 ("neg.s16 -> cvt.s64.s16", "neg.s16 %h10, %h1; cvt.s64.s16 %rd4, %h10; cvt.u32.u64 %r9, %rd4;", -32768),
 ("neg.s16 -> cvt.rn.f32.s16", "neg.s16 %h10, %h1; cvt.rn.f32.s16 %f1, %h10; cvt.rzi.s32.f32 %r9, %f1;", -32768),
 ("mul.wide.s16 of neg", "neg.s16 %h10, %h1; mul.wide.s16 %r9, %h10, %h3;", -32768),
 ("abs.s16 -> cvt.s32.s16", "abs.s16 %h10, %h1; cvt.s32.s16 %r9, %h10;", -32768),
 ("abs.s16 -> setp.lt.s16 0", "abs.s16 %h10, %h1; setp.lt.s16 %p1, %h10, %h4; selp.u32 %r9, 1, 0, %p1;", 1),
 ("rewritten neg -> cvt.s32.s16", "not.b16 %h10, %h1; add.s16 %h10, %h10, 1; cvt.s32.s16 %r9, %h10;", -32768),
 ("rewritten abs -> cvt.s32.s16", "{ .reg .b16 %abs_t; shr.s16 %abs_t, %h1, 15; xor.b16 %h10, %h1, %abs_t; sub.s16 %h10, %h10, %abs_t; } cvt.s32.s16 %r9, %h10;", -32768),
]
body = []
for i, (name, code, want) in enumerate(cases):
    body.append("{ %s st.global.b32 [%%rd1+%d], %%r9; }" % (code, 4 * i))
ptx = """.version 8.4
.target sm_90a
.address_size 64
.visible .entry probe(.param .u64 out_p, .param .u64 in_p, .param .u64 tmp_p) {
 .reg .b16 %h<20>; .reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<4>; .reg .f32 %f<4>;
 ld.param.u64 %rd1, [out_p]; ld.param.u64 %rd2, [in_p]; ld.param.u64 %rd3, [tmp_p];
 cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2; cvta.to.global.u64 %rd3, %rd3;
 ld.global.b16 %h1, [%rd2]; ld.global.b16 %h2, [%rd2+2]; ld.global.b16 %h3, [%rd2+4]; ld.global.b16 %h4, [%rd2+6];
""" + "\n".join(body) + "\n ret;\n}\n"
open("/tmp/probe.ptx", "w").write(ptx)
mod = ctypes.c_void_p(); fn = ctypes.c_void_p()
log = ctypes.create_string_buffer(8192)
opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, ..._SIZE_BYTES
vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx.encode()), 2, opts, vals)
if rc: print("load rc", rc, log.value.decode()); raise SystemExit(1)
assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"probe") == 0
inp = torch.tensor([-32768, 32767, 1, 0], dtype=torch.int16, device="cuda")
out = torch.zeros(len(cases), dtype=torch.int32, device="cuda"); tmp = torch.zeros(4, dtype=torch.int16, device="cuda")
args = [ctypes.c_uint64(t.data_ptr()) for t in (out, inp, tmp)]
argv = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
assert cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, argv, None) == 0
torch.cuda.synchronize()
for (name, _, want), got in zip(cases, out.tolist()):
    print("%-45s want %7d got %7d %s" % (name, want, got, "ok" if got == want else "WRONG"))
