// Atomics' memory order and scope (tl::AtomicOptions): recorded by the front
// end, the same results under every order on the interpreter, and visible in
// the code each back end emits: PTX `atom.<sem>.<scope>.global.<op>` (or a
// cas loop of that form where PTX has no instruction, assembled by ptxas
// when present) from asm that has side effects and clobbers memory, and
// LLVM atomics with the AMDGPU sync scopes and orderings (and gfx942's cache
// writebacks and invalidates). A scalar's atomic with a release order
// waits for all the program's threads first. On a GPU ([gpu]): a release
// publishes a program's stores, every thread's, to the program that
// acquires them.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "codegen_checks.h"
#include "codegen/compile.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace codegen_checks;

namespace {

// The options the kernels below trace with (set by each test).
AtomicOptions g_opts;

// One atomic of every kind on each element type it takes, masked: the
// forms PTX has as one instruction and the ones it builds from cas loops.
void all_atomics(ptr<float> f32, ptr<double> f64, ptr<f16> h, ptr<bf16> bh, ptr<int32_t> i32, ptr<uint32_t> u32,
                 ptr<int64_t> i64, ptr<int8_t> i8) {
  auto offs = arange(0, 128);  // [128] i32
  auto m = offs < 100;         // [128] i1
  const AtomicOptions& o = g_opts;
  auto a = atomic_add(f32 + offs, 1.0f, m, o);  // [128] f32
  atomic_max(f32 + 128 + offs, a, m, o);         // float max: a cas loop
  atomic_xchg(f32 + 256 + offs, a, m, o);
  atomic_add(f64 + offs, 1.0, m, o);
  atomic_add(h + offs, 1.0f, m, o);
  atomic_add(bh + offs, 1.0f, m, o);  // one instruction from sm_90, a cas loop before
  auto b = atomic_add(i32 + offs, 1, m, o);  // [128] i32
  atomic_max(i32 + 128 + offs, b, m, o);
  atomic_cas(i32 + 256 + offs, b, 7, o);
  atomic_min(u32 + offs, 5u, m, o);
  atomic_or(u32 + 128 + offs, 5u, m, o);
  atomic_and(i64 + offs, int64_t(3), m, o);
  atomic_add(i64 + 128 + offs, int64_t(1), m, o);
  atomic_xor(i8 + offs, int8_t(1), m, o);  // widened to its 32-bit word
  atomic_add(i8 + 128 + offs, int8_t(1), m, o);  // a cas loop
}

// A 16-bit compare-and-swap: PTX's 16-bit cas is emulated by LLVM.
void cas16(ptr<int16_t> p) {
  auto offs = arange(0, 128);  // [128] i32
  atomic_cas(p + offs, int16_t(0), int16_t(1), g_opts);
}

// Counters, a histogram and a flag, as a kernel on the interpreter: every
// order and scope gives the same values there.
void counters(ptr<int32_t> hist, ptr<int32_t> flag, ptr<float> total, ptr<int32_t> olds) {
  auto offs = program_id(0) * 64 + arange(0, 64);  // [64] i32
  atomic_add(hist + offs % 8, 1, offs < 200, g_opts);
  atomic_add(total, 0.5f, g_opts);
  auto old = atomic_cas(flag, 0, program_id(0) + 1, g_opts);  // scalar i32: the first program wins
  store(olds + program_id(0), old);
}

// The last program to count itself in sums every program's partial: each
// stores its partial, then adds 1 to `count` with an acq_rel atomic (the
// release publishes the partial); the one that sees n - 1 has acquired
// every partial and adds them up (threadFenceReduction, without fences).
void last_program_sum(ptr<float> x, ptr<float> partials, ptr<int32_t> count, ptr<float> total,
                      scalar<int32_t> n) {
  auto pid = program_id(0);
  store(partials + pid, sum(load(x + pid * 1024 + arange(0, 1024)), 0));
  auto seen = atomic_add(count, 1);  // scalar i32
  if_(seen == n - 1, [&] {
    auto i = arange(0, 1024);  // [1024] i32: up to 1024 programs
    store(total, sum(load(partials + i, i < n, 0.0f), 0));
  });
}

// The same with every thread's stores: each program stores a tile of 1024
// values (each thread its own), then counts itself once; the last adds up
// all the tiles. The count's release must come after every thread's stores.
void last_program_tiles(ptr<float> x, ptr<float> partials, ptr<int32_t> count, ptr<float> out,
                        scalar<int32_t> n) {
  auto pid = program_id(0);
  auto i = arange(0, 1024);  // [1024] i32
  store(partials + pid * 1024 + i, load(x + pid * 1024 + i) * 2.0f);
  auto seen = atomic_add(count, 1);  // scalar i32
  if_(seen == n - 1, [&] {
    auto acc = zeros<float>({1024});  // [1024] f32
    for (auto p : range(0, n)) acc += load(partials + p * 1024 + i);
    store(out + i, acc);
  });
}

struct Combo {
  const char* sem;
  const char* scope;
};
const Combo kCombos[] = {{"acq_rel", "gpu"}, {"relaxed", "cta"}, {"release", "sys"}, {"acquire", "gpu"}};

Kernel all_atomics_with(const Combo& c) {
  g_opts = {c.sem, c.scope};
  return compile(all_atomics, {.name = "all_atomics"});
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("atomics: the front end records Triton's default order and scope, or the given ones", "[atomics][frontend]") {
  g_opts = {};
  std::string ir = compile(cas16, {.name = "cas16"}).ir();
  CHECK(ir.find("atomic_cas") != std::string::npos);
  CHECK(ir.find("scope = \"gpu\", sem = \"acq_rel\"") != std::string::npos);
  g_opts = {.sem = "relaxed", .scope = "sys"};
  ir = compile(cas16, {.name = "cas16"}).ir();
  CHECK(ir.find("scope = \"sys\", sem = \"relaxed\"") != std::string::npos);
}

TEST_CASE("atomics: every order and scope gives the same results on the interpreter", "[atomics][interp]") {
  Device dev = Device::get("interp");
  for (const Combo& c : kCombos) {
    INFO(c.sem << " " << c.scope);
    g_opts = {c.sem, c.scope};
    Kernel k = compile(counters, {.name = "counters"});
    Buffer hist = dev.upload(std::vector<int32_t>(8, 0)), flag = dev.upload(std::vector<int32_t>{0});
    Buffer total = dev.upload(std::vector<float>{0.0f}), olds = dev.upload(std::vector<int32_t>(4, -1));
    dev(k, Grid{4}, hist, flag, total, olds);
    dev.synchronize();
    CHECK(hist.download<int32_t>() == std::vector<int32_t>{25, 25, 25, 25, 25, 25, 25, 25});  // 200 lanes over 8 bins
    CHECK(total.download<float>() == std::vector<float>{2.0f});  // one add per program
    // One program found the flag 0 and set it to its id + 1; the others saw that.
    int32_t winner = flag.download<int32_t>()[0];
    REQUIRE(winner >= 1);
    REQUIRE(winner <= 4);
    auto o = olds.download<int32_t>();
    for (int p = 0; p < 4; ++p) CHECK(o[size_t(p)] == (p + 1 == winner ? 0 : winner));
  }
}

TEST_CASE("atomics: PTX spells out each atomic's order and scope", "[atomics][codegen]") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    for (const Combo& c : kCombos) {
      INFO(arch << " " << c.sem << " " << c.scope);
      Kernel k = all_atomics_with(c);
      std::string ptx = codegen::compile(*k.impl(), aligned(k), arch).assembly;
      std::string qual = std::string("atom.") + c.sem + "." + c.scope + ".global.";
      // Every atomic instruction carries them, the cas of each loop too.
      auto atoms = lines_with(ptx, "atom.");
      CHECK(atoms.size() >= 15);
      for (const std::string& line : atoms) CHECK_THAT(line, Catch::Contains(qual));
      for (const char* form : {"add.f32", "exch.b32", "add.f64", "add.noftz.f16", "add.u32", "max.s32", "cas.b32",
                               "min.u32", "or.b32", "and.b64", "add.u64", "xor.b32"})
        CHECK_THAT(ptx, Catch::Contains(qual + form));
      // bf16 add is one instruction from sm_90 on, a cas loop before.
      CHECK((ptx.find(qual + "add.noftz.bf16") != std::string::npos) == (std::string(arch) == "sm_90a"));
      if (&c == &kCombos[0]) check_assembles(ptx, arch);  // the qualifiers differ only in name
    }
  }
}

TEST_CASE("atomics: the NVIDIA asm for atomics and stores has side effects and clobbers memory",
          "[atomics][codegen]") {
  Kernel k = all_atomics_with(kCombos[0]);
  std::string ir = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Llvm);
  int checked = 0;
  for (const std::string& line : lines_with(ir, " asm ")) {
    if (line.find("atom.") == std::string::npos && line.find("st.global") == std::string::npos) continue;
    CHECK_THAT(line, Catch::Contains("asm sideeffect") && Catch::Contains("~{memory}"));
    ++checked;
  }
  CHECK(checked >= 12);
}

TEST_CASE("atomics: a 16-bit cas on NVIDIA is fenced with its order and scope", "[atomics][codegen]") {
  g_opts = {.sem = "acq_rel", .scope = "cta"};
  Kernel k = compile(cas16, {.name = "cas16"});
  std::string ptx = codegen::compile(*k.impl(), aligned(k), "sm_90a").assembly;
  // A releasing fence before each relaxed cas loop, an acquiring one after.
  int loops = count(ptx, R"(atom\.relaxed\.cta\.global\.cas\.b32)");
  CHECK(loops >= 1);
  CHECK(count(ptx, R"(fence\.(release|acq_rel)\.cta)") >= loops);
  CHECK(count(ptx, R"(fence\.(acquire|acq_rel)\.cta)") >= loops);
  check_assembles(ptx, "sm_90a");
}

TEST_CASE("atomics: AMDGPU atomics have the sync scope and ordering", "[atomics][amdgpu]") {
  struct Want {
    Combo combo;
    const char* rmw;  // what follows the operands of an atomicrmw
    const char* cas;  // and of a cmpxchg
  };
  const Want wants[] = {{{"acq_rel", "gpu"}, "syncscope(\"agent\") acq_rel", "syncscope(\"agent\") acq_rel acquire"},
                        {{"relaxed", "cta"}, "syncscope(\"workgroup\") monotonic",
                         "syncscope(\"workgroup\") monotonic monotonic"},
                        {{"release", "sys"}, " release", " release monotonic"},
                        {{"acquire", "gpu"}, "syncscope(\"agent\") acquire", "syncscope(\"agent\") acquire acquire"}};
  // The lowering is the same for every AMD target: all orders on gfx942,
  // Triton's default on the others.
  for (const char* target : {"gfx942", "gfx90a", "gfx1100"}) {
    for (const Want& w : wants) {
      if (std::string(target) != "gfx942" && &w != &wants[0]) continue;
      INFO(target << " " << w.combo.sem << " " << w.combo.scope);
      Kernel k = all_atomics_with(w.combo);
      std::string ir = codegen::emit_stage(*k.impl(), aligned(k), target, codegen::Stage::Llvm);
      auto rmws = lines_with(ir, "atomicrmw "), cass = lines_with(ir, "cmpxchg ");
      CHECK(rmws.size() >= 14);
      CHECK(cass.size() >= 1);
      for (const std::string& line : rmws) {
        CHECK_THAT(line, Catch::Contains(w.rmw));
        if (std::string(w.combo.scope) == "sys") CHECK_THAT(line, !Catch::Contains("syncscope"));
      }
      for (const std::string& line : cass) CHECK_THAT(line, Catch::Contains(w.cas));
      // The code object builds (the AMDGPU back end lowers the order).
      codegen::CompiledKernel ck = codegen::compile(*k.impl(), aligned(k), target);
      CHECK_FALSE(ck.binary.empty());
      if (std::string(target) != "gfx942") continue;
      // On gfx942 the order is L2 writebacks before and invalidates after,
      // at the scope's cache level (sc1: agent, sc0 sc1: system).
      const std::string& as = ck.assembly;
      std::string sem = w.combo.sem, scope = w.combo.scope;
      bool releases = sem == "release" || sem == "acq_rel", acquires = sem == "acquire" || sem == "acq_rel";
      CHECK((count(as, R"(buffer_wbl2 sc1\b)") > 0) == (releases && scope == "gpu"));
      CHECK((count(as, R"(buffer_wbl2 sc0 sc1)") > 0) == (releases && scope == "sys"));
      CHECK((count(as, R"(buffer_inv sc1\b)") > 0) == (acquires && scope == "gpu"));
    }
  }
}

TEST_CASE("atomics: a release publishes a program's stores to the one that acquires", "[gpu]") {
  REQUIRE_GPU();
  Device gpu = Device::get("cuda");
  Kernel k = compile(last_program_sum, {.name = "last_program_sum"});
  const int n = 1024;
  std::vector<float> hx(size_t(n) * 1024);
  double want = 0;
  for (size_t i = 0; i < hx.size(); ++i) want += hx[i] = float((i * 7919) % 4);  // small integers: sums are exact
  Buffer x = gpu.upload(hx), partials = gpu.alloc<float>(n);
  for (int rep = 0; rep < 50; ++rep) {
    Buffer count = gpu.upload(std::vector<int32_t>{0}), total = gpu.upload(std::vector<float>{-1.0f});
    gpu(k, Grid{uint32_t(n)}, x, partials, count, total, n);
    gpu.synchronize();
    REQUIRE(count.download<int32_t>()[0] == n);
    REQUIRE(double(total.download<float>()[0]) == want);
  }
}

TEST_CASE("atomics: a scalar's release waits for all the program's threads", "[atomics][codegen]") {
  Kernel k = compile(last_program_tiles, {.name = "last_program_tiles"});
  std::string ptx = codegen::compile(*k.impl(), aligned(k), "sm_90a").assembly;
  // One thread adds for the program, after a barrier of all of them (the
  // only one before it: nothing else uses shared memory there).
  CHECK(std::regex_search(ptx, std::regex(R"(st\.global[^]*bar\.sync\s+0;\n(?:(?!\s*(?:st|ld)\.global|\s*bar\.)[^\n]*\n){0,8}\s*atom\.acq_rel\.gpu\.global\.add)")));
}

TEST_CASE("atomics: a release publishes every thread's stores to the one that acquires", "[gpu]") {
  REQUIRE_GPU();
  Device gpu = Device::get("cuda");
  Kernel k = compile(last_program_tiles, {.name = "last_program_tiles"});
  const int n = 264;
  std::vector<float> hx(size_t(n) * 1024);
  std::vector<double> want(1024, 0.0);
  for (size_t j = 0; j < hx.size(); ++j) want[j % 1024] += 2.0 * (hx[j] = float((j * 7919) % 5));
  Buffer x = gpu.upload(hx), partials = gpu.alloc<float>(hx.size());
  for (int rep = 0; rep < 50; ++rep) {
    Buffer count = gpu.upload(std::vector<int32_t>{0}), out = gpu.upload(std::vector<float>(1024, -1.0f));
    gpu(k, Grid{uint32_t(n)}, x, partials, count, out, n);
    gpu.synchronize();
    REQUIRE(count.download<int32_t>()[0] == n);
    auto got = out.download<float>();
    for (int j = 0; j < 1024; ++j) REQUIRE(double(got[size_t(j)]) == want[size_t(j)]);
  }
}
