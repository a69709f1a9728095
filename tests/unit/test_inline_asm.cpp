// tl::inline_asm_elementwise (Triton's inline_asm_elementwise): each call's
// PTX in the kernel's assembly, packed and unpacked operands (four u8 in
// one 32-bit register, two f16 in one, an f16 alone as 16 bits), a scalar
// argument broadcast, AMDGCN text on gfx942, a thread holding fewer
// elements than a call packs (the last call padded); the errors: the interpreter
// cannot run assembly, a target without its text, constraints that do not
// fit and a bad pack name the line; text with several outputs (a tuple of
// result types: two u32, packed bytes, an i32 beside an f32); on the GPU
// ([gpu]) every result against C++.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/compile.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int kN = 256;
int g_line = 0;  // the line of the call an error names

// out_i = x << 3 (pack 1, i32); out_b = b + 1 four bytes at a time (pack
// 4, PTX and AMDGCN); out_h = h + g on f16 pairs (pack 2); out_n = -h
// (pack 1, f16 as 16 bits); out_f = x * s (a scalar broadcast).
void asm_ops(ptr<int32_t> x, ptr<uint8_t> b, ptr<f16> h, ptr<f16> g, ptr<int32_t> out_i, ptr<uint8_t> out_b,
             ptr<f16> out_h, ptr<f16> out_n, ptr<float> out_f, scalar<float> s) {
  auto i = arange(0, kN);
  tile<int32_t> xi = load(x + i);
  g_line = __LINE__ + 1;
  store(out_i + i, inline_asm_elementwise<int32_t>({.ptx = {"shl.b32 $0, $1, 3;", "=r,r"}}, xi));
  store(out_b + i, inline_asm_elementwise<uint8_t>({.ptx = {"add.u32 $0, $1, 0x01010101;", "=r,r"},
                                                    .amdgcn = {"v_add_u32 $0, 0x01010101, $1", "=v,v"},
                                                    .pack = 4},
                                                   load(b + i)));
  store(out_h + i, inline_asm_elementwise<f16>({.ptx = {"add.f16x2 $0, $1, $2;", "=r,r,r"}, .pack = 2}, load(h + i),
                                               load(g + i)));
  store(out_n + i, inline_asm_elementwise<f16>({.ptx = {"neg.f16 $0, $1;", "=h,h"}}, load(h + i)));
  store(out_f + i, inline_asm_elementwise<float>({.ptx = {"mul.rn.f32 $0, $1, $2;", "=f,f,f"}}, cast<float>(xi), s));
}

// Several outputs: quotient and remainder (two u32 from one call), the
// complement and low nibbles of four bytes at a time (pack 4), and an f32
// truncated to i32 beside its negation (an i32 and an f32 result).
void asm_multi(ptr<uint32_t> x, ptr<uint32_t> y, ptr<uint8_t> b, ptr<float> f, ptr<uint32_t> q, ptr<uint32_t> r,
               ptr<uint8_t> inv, ptr<uint8_t> low, ptr<int32_t> ti, ptr<float> nf) {
  auto i = arange(0, kN);
  auto [qv, rv] = inline_asm_elementwise<std::tuple<uint32_t, uint32_t>>(
      {.ptx = {"div.u32 $0, $2, $3; rem.u32 $1, $2, $3;", "=r,=r,r,r"}}, load(x + i), load(y + i));
  store(q + i, qv);
  store(r + i, rv);
  auto [iv, lv] = inline_asm_elementwise<std::tuple<uint8_t, uint8_t>>(
      {.ptx = {"not.b32 $0, $2; and.b32 $1, $2, 0x0f0f0f0f;", "=r,=r,r"}, .pack = 4}, load(b + i));
  store(inv + i, iv);
  store(low + i, lv);
  auto [tv, nv] = inline_asm_elementwise<std::tuple<int32_t, float>>(
      {.ptx = {"cvt.rzi.s32.f32 $0, $2; neg.f32 $1, $2;", "=r,=f,f"}}, load(f + i));
  store(ti + i, tv);
  store(nf + i, nv);
}

// The low and high halves of a 32 x 32-bit product, in AMDGCN only.
void amd_multi(ptr<uint32_t> x, ptr<uint32_t> y, ptr<uint32_t> lo, ptr<uint32_t> hi) {
  auto i = arange(0, kN);
  auto [l, h] = inline_asm_elementwise<std::tuple<uint32_t, uint32_t>>(
      {.amdgcn = {"v_mul_lo_u32 $0, $2, $3\nv_mul_hi_u32 $1, $2, $3", "=v,=v,v,v"}}, load(x + i), load(y + i));
  store(lo + i, l);
  store(hi + i, h);
}

// Two outputs, constraints naming one.
void bad_multi(ptr<uint32_t> x, ptr<uint32_t> out) {
  auto i = arange(0, kN);
  g_line = __LINE__ + 1;
  auto [a, b] = inline_asm_elementwise<std::tuple<uint32_t, uint32_t>>({.ptx = {"mov.b32 $0, $1;", "=r,r"}},
                                                                        load(x + i));
  store(out + i, a + b);
}

// Only AMDGCN text: compiles for gfx942, an error for sm_90a.
void amd_only(ptr<uint8_t> b, ptr<uint8_t> out) {
  auto i = arange(0, kN);
  g_line = __LINE__ + 1;
  store(out + i, inline_asm_elementwise<uint8_t>({.amdgcn = {"v_add_u32 $0, 0x01010101, $1", "=v,v"}, .pack = 4},
                                                 load(b + i)));
}

// Constraints for two operands on a call with one.
void bad_constraints(ptr<int32_t> x, ptr<int32_t> out) {
  auto i = arange(0, kN);
  g_line = __LINE__ + 1;
  store(out + i, inline_asm_elementwise<int32_t>({.ptx = {"shl.b32 $0, $1, 3;", "=r,r,r"}}, load(x + i)));
}

void bad_pack(ptr<int32_t> x, ptr<int32_t> out) {
  auto i = arange(0, kN);
  g_line = __LINE__ + 1;
  store(out + i, inline_asm_elementwise<int32_t>({.ptx = {"mov.b32 $0, $1;", "=r,r"}, .pack = 3}, load(x + i)));
}

// Four bytes a call on a tile of 64 bytes: on 4 warps each thread holds one
// of them, on 1 warp without alignment facts two (16 with them: vector
// loads), so the calls of a thread are not all full.
void short_pack(ptr<uint8_t> b, ptr<uint8_t> out) {
  auto i = arange(0, 64);
  store(out + i, inline_asm_elementwise<uint8_t>({.ptx = {"add.u32 $0, $1, 0x01010101;", "=r,r"},
                                                  .amdgcn = {"v_add_u32 $0, 0x01010101, $1", "=v,v"},
                                                  .pack = 4},
                                                 load(b + i)));
}

std::string asm_for(const Kernel& k, const std::string& target) {
  return codegen::compile(*k.impl(), codegen_checks::aligned(k), target).assembly;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string here() { return "test_inline_asm.cpp:" + std::to_string(g_line); }

struct Inputs {
  std::vector<int32_t> x;
  std::vector<uint8_t> b;
  std::vector<f16> h, g;
};
Inputs inputs() {
  Inputs in;
  for (int i = 0; i < kN; ++i) {
    in.x.push_back(i * 37 - 4000);
    in.b.push_back(uint8_t((i * 29) % 255));  // below 255: adding one carries into no other byte
    in.h.push_back(f16(float(i) * 0.25f - 20.0f));
    in.g.push_back(f16(float(i % 17) * 0.5f));
  }
  return in;
}

}  // namespace

TEST_CASE("inline_asm_elementwise: each call's text in the PTX, AMDGCN on gfx942", "[inline_asm][codegen]") {
  Kernel k = compile(asm_ops, {.name = "asm_ops", .num_warps = 2});
  CHECK(codegen_checks::count(k.ir(), "inline_asm ") == 5);
  std::string ptx = asm_for(k, "sm_90a");
  for (const char* text : {"shl.b32", "add.u32", "add.f16x2", "neg.f16", "mul.rn.f32"}) {
    INFO(text);
    CHECK(ptx.find(text) != std::string::npos);
  }
  codegen_checks::check_assembles(ptx, "sm_90a");
  Kernel ka = compile(amd_only, {.name = "amd_only"});
  CHECK(asm_for(ka, "gfx942").find("v_add_u32") != std::string::npos);
}

TEST_CASE("inline_asm_elementwise: a thread holding fewer elements than a call packs", "[inline_asm][codegen]") {
  // How many elements a thread holds follows its layout, which follows the
  // launch's alignment facts: a pack that does not divide them fills the
  // last call with poison (as Triton pads with undef), not an error at one
  // launch and not at another.
  for (int warps : {1, 4}) {
    Kernel k = compile(short_pack, {.name = "short_pack", .num_warps = warps});
    codegen::Specialization unaligned;
    for (size_t i = 0; i < k.params().size(); ++i) unaligned.args.push_back(codegen::pointer_arg_facts(4));
    for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
      INFO(warps << " warps, " << target);
      std::string text = codegen::compile(*k.impl(), unaligned, target).assembly;
      CHECK(text.find(target[0] == 's' ? "add.u32" : "v_add_u32") != std::string::npos);
      if (target[0] == 's') codegen_checks::check_assembles(text, target);
    }
  }
}

TEST_CASE("inline_asm_elementwise: several outputs, one call each", "[inline_asm][codegen]") {
  Kernel k = compile(asm_multi, {.name = "asm_multi", .num_warps = 2});
  // One op for each call, each with its results; the text round-trips.
  CHECK(codegen_checks::count(k.ir(), "inline_asm ") == 3);
  CHECK(k.ir().find("= inline_asm ") != std::string::npos);
  CHECK(ir::print(*ir::parse(k.ir(), "multi.tir")) == k.ir());
  std::string ptx = asm_for(k, "sm_90a");
  for (const char* text : {"div.u32", "rem.u32", "not.b32", "and.b32", "cvt.rzi.s32.f32", "neg.f32"}) {
    INFO(text);
    CHECK(ptx.find(text) != std::string::npos);
  }
  codegen_checks::check_assembles(ptx, "sm_90a");
}

TEST_CASE("inline_asm_elementwise: several outputs on gfx942", "[inline_asm][codegen]") {
  Kernel k = compile(amd_multi, {.name = "amd_multi"});
  std::string isa = asm_for(k, "gfx942");
  CHECK(isa.find("v_mul_lo_u32") != std::string::npos);
  CHECK(isa.find("v_mul_hi_u32") != std::string::npos);
}

TEST_CASE("inline_asm_elementwise: errors name the line", "[inline_asm][frontend]") {
  Kernel k = compile(asm_ops, {.name = "asm_ops"});
  int line = g_line;
  Device interp = Device::get("interp");
  auto x = interp.alloc<int32_t>(kN);
  std::string e = error_of([&] {
    interp(k, Grid{1}, x, interp.alloc<uint8_t>(kN), interp.alloc<f16>(kN), interp.alloc<f16>(kN), x,
           interp.alloc<uint8_t>(kN), interp.alloc<f16>(kN), interp.alloc<f16>(kN), interp.alloc<float>(kN), 2.0f);
  });
  CHECK_THAT(e, Catch::Contains("test_inline_asm.cpp:" + std::to_string(line)) &&
                    Catch::Contains("GPU assembly (PTX or AMDGCN text), which the interpreter cannot run"));
  Kernel ka = compile(amd_only, {.name = "amd_only"});
  e = error_of([&] { asm_for(ka, "sm_90a"); });
  CHECK_THAT(e,
             Catch::Contains(here()) && Catch::Contains("has no ptx text for sm_90a (give tl::InlineAsm .ptx)"));
  CHECK_THAT(error_of([&] { asm_for(k, "gfx942"); }), Catch::Contains("has no amdgcn text for gfx942"));
  Kernel kc = compile(bad_constraints, {.name = "bad_constraints"});
  e = error_of([&] { asm_for(kc, "sm_90a"); });
  CHECK_THAT(e,
             Catch::Contains(here()) &&
                 Catch::Contains("has constraints \"=r,r,r\" that do not fit 1 result and 1 operands"));
  Kernel km = compile(bad_multi, {.name = "bad_multi"});
  e = error_of([&] { asm_for(km, "sm_90a"); });
  CHECK_THAT(e, Catch::Contains(here()) &&
                    Catch::Contains("has constraints \"=r,r\" that do not fit 2 results and 1 operands"));
  e = error_of([&] { compile(bad_pack, {.name = "bad_pack"}); });
  CHECK_THAT(e, Catch::Contains(here()) && Catch::Contains("expected a pack of 1, 2, 4 or 8, found 3"));
}

TEST_CASE("inline_asm_elementwise: several outputs on the GPU", "[inline_asm][gpu]") {
  REQUIRE_GPU();
  Device d = Device::get("cuda");
  Kernel k = compile(asm_multi, {.name = "asm_multi", .num_warps = 2});
  std::vector<uint32_t> x, y;
  std::vector<float> f;
  Inputs in = inputs();
  for (int i = 0; i < kN; ++i) {
    x.push_back(uint32_t(i) * 2654435761u);
    y.push_back(uint32_t(i % 13) + 1);
    f.push_back(float(i) * 0.75f - 90.3f);
  }
  auto q = d.alloc<uint32_t>(kN), r = d.alloc<uint32_t>(kN);
  auto inv = d.alloc<uint8_t>(kN), low = d.alloc<uint8_t>(kN);
  auto ti = d.alloc<int32_t>(kN);
  auto nf = d.alloc<float>(kN);
  d(k, Grid{1}, d.upload(x), d.upload(y), d.upload(in.b), d.upload(f), q, r, inv, low, ti, nf);
  d.synchronize();
  auto gq = q.download<uint32_t>(), gr = r.download<uint32_t>();
  auto ginv = inv.download<uint8_t>(), glow = low.download<uint8_t>();
  auto gti = ti.download<int32_t>();
  auto gnf = nf.download<float>();
  for (size_t i = 0; i < size_t(kN); ++i) {
    INFO("i = " << i);
    CHECK(gq[i] == x[i] / y[i]);
    CHECK(gr[i] == x[i] % y[i]);
    CHECK(ginv[i] == uint8_t(~in.b[i]));
    CHECK(glow[i] == uint8_t(in.b[i] & 0x0f));
    CHECK(gti[i] == int32_t(f[i]));
    CHECK(gnf[i] == -f[i]);
  }
}

TEST_CASE("inline_asm_elementwise: the results on the GPU", "[inline_asm][gpu]") {
  REQUIRE_GPU();
  Device d = Device::get("cuda");
  Kernel k = compile(asm_ops, {.name = "asm_ops", .num_warps = 2});
  Inputs in = inputs();
  auto x = d.upload(in.x);
  auto b = d.upload(in.b);
  auto h = d.upload(in.h), g = d.upload(in.g);
  auto oi = d.alloc<int32_t>(kN);
  auto ob = d.alloc<uint8_t>(kN);
  auto oh = d.alloc<f16>(kN), on = d.alloc<f16>(kN);
  auto of = d.alloc<float>(kN);
  d(k, Grid{1}, x, b, h, g, oi, ob, oh, on, of, 0.5f);
  d.synchronize();
  auto gi = oi.download<int32_t>();
  auto gb = ob.download<uint8_t>();
  auto gh = oh.download<f16>(), gn = on.download<f16>();
  auto gf = of.download<float>();
  for (int i = 0; i < kN; ++i) {
    INFO("i = " << i);
    CHECK(gi[size_t(i)] == int32_t(uint32_t(in.x[size_t(i)]) << 3));
    CHECK(gb[size_t(i)] == uint8_t(in.b[size_t(i)] + 1));
    CHECK(gh[size_t(i)].bits == f16(float(in.h[size_t(i)]) + float(in.g[size_t(i)])).bits);
    CHECK(gn[size_t(i)].bits == uint16_t(in.h[size_t(i)].bits ^ 0x8000));
    CHECK(gf[size_t(i)] == float(in.x[size_t(i)]) * 0.5f);
  }
}

TEST_CASE("inline_asm_elementwise: padded calls on the GPU", "[inline_asm][gpu]") {
  REQUIRE_GPU();
  Device d = Device::get("cuda");
  std::vector<uint8_t> b(64);
  for (int i = 0; i < 64; ++i) b[size_t(i)] = uint8_t((i * 29) % 255);
  for (int warps : {1, 4}) {
    INFO(warps << " warps");
    Kernel k = compile(short_pack, {.name = "short_pack", .num_warps = warps});
    auto in = d.upload(b);
    auto out = d.alloc<uint8_t>(64);
    d(k, Grid{1}, in, out);
    d.synchronize();
    auto got = out.download<uint8_t>();
    for (int i = 0; i < 64; ++i) CHECK(got[size_t(i)] == uint8_t(b[size_t(i)] + 1));
  }
}
