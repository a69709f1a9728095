// The launch path the GPU devices share (runtime/launcher.h), driven without
// a GPU by a driver of the test's own: it "links" PTX by keeping its text
// and "loads" by handing back a handle, refusing binaries when told to. What
// is checked is what a device relies on: one compile and one load per cache
// key (also across threads), the kernel cache between launchers, a cached
// binary the driver refuses compiled again once (and a fresh one refused is
// an error), the statistics of each path, the shared-memory limit, the
// specialization and the parameter slots.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/launcher.h"
#include "temp_dir.h"
#include "tiledsl/tiledsl.h"

using tl::detail::LaunchArg;
using tl::runtime::CachedBinary;
using tl::runtime::GpuDriver;
using tl::runtime::KernelCache;
using tl::runtime::Launcher;
namespace fs = std::filesystem;

namespace {

template <int BLOCK>
void launcher_scale(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

// Sums a row across warps, through shared memory.
void launcher_row_sum(tl::ptr<float> out, tl::ptr<float> in, tl::scalar<float> scale) {
  auto offs = tl::arange(0, 1024);  // [1024] i32
  auto x = tl::load(in + offs);     // [1024] f32
  tl::store(out + offs, x - tl::sum(x, 0) * scale);
}

// The test's driver: what the launcher asked of it, and which binaries it
// refuses.
struct FakeDriver {
  std::mutex mutex;
  int links = 0;
  std::vector<bool> loads;     // may_refuse of each load
  bool refuse_cached = false;  // refuses the binaries it may refuse
  bool refuse_fresh = false;   // fails on the others
  int handle = 0;              // what a loaded function points to

  GpuDriver driver(int max_shared_bytes = 48 * 1024) {
    return GpuDriver{
        .device = "launcher-test",
        .target = "sm_80",
        .gpu_name = "Test GPU",
        .max_shared_bytes = max_shared_bytes,
        .shared_memory = "shared memory per block",
        .link =
            [this](const tl::detail::KernelImpl&, const tl::codegen::CompiledKernel& ck) {
              std::lock_guard lock(mutex);
              ++links;
              return tl::runtime::Bytes(ck.assembly.begin(), ck.assembly.end());
            },
        .linker = {},
        .load = [this](const tl::detail::KernelImpl& k, const CachedBinary& e, bool may_refuse) -> void* {
          std::lock_guard lock(mutex);
          loads.push_back(may_refuse);
          if (refuse_cached && may_refuse) return nullptr;
          if (refuse_fresh && !may_refuse) throw tl::Error("the test driver refuses kernel '" + k.name + "'");
          return &handle;
        },
    };
  }
};

// Launch arguments for launcher_scale: a buffer at `address`, n.
std::vector<LaunchArg> scale_args(const tl::Kernel& k, uint64_t address, int64_t n) {
  return {LaunchArg{k.params()[0], address, 0, 0}, LaunchArg{k.params()[1], 0, n, 0}};
}

// A kernel cache of the test's own, and a kernel with its arguments.
struct Setup {
  TempDir dir;
  KernelCache cache{dir.path};
  tl::Kernel k = tl::compile(launcher_scale<256>, {.name = "launcher_scale"});
  std::vector<LaunchArg> args = scale_args(k, 0x10000, 4096);
};

bool same(const tl::CompileStats& s, int64_t compiles, int64_t cache_hits, int64_t loaded) {
  return s.compiles == compiles && s.cache_hits == cache_hits && s.modules_loaded == loaded;
}

}  // namespace

TEST_CASE("launcher: a key is compiled and loaded once, then served from memory", "[launcher][cache]") {
  Setup s;
  FakeDriver fake;
  Launcher launcher(fake.driver(), s.cache);

  auto first = launcher.load(*s.k.impl(), s.args);
  CHECK(first->function == &fake.handle);
  CHECK(first->threads == 128);
  CHECK(same(launcher.stats(), 1, 0, 1));
  // The compile's stages were timed, and they make up its codegen time.
  tl::CompileStats st = launcher.stats();
  CHECK(st.passes_ms > 0);
  CHECK(st.lower_ms > 0);
  CHECK(st.optimize_ms > 0);
  CHECK(st.emit_ms > 0);
  CHECK(st.passes_ms + st.lower_ms + st.optimize_ms + st.emit_ms <= st.codegen_ms);
  CHECK(st.passes_ms + st.lower_ms + st.optimize_ms + st.emit_ms > 0.5 * st.codegen_ms);
  CHECK(fake.links == 1);
  CHECK(fake.loads == std::vector<bool>{false});  // a fresh binary: no retry
  // The binary is cached under the key of this specialization and target.
  auto key = tl::runtime::kernel_cache_key(*s.k.impl(), tl::runtime::specialize(s.args).key(), "sm_80");
  CHECK(fs::exists(s.cache.entry_path(key)));

  CHECK(launcher.load(*s.k.impl(), s.args) == first);
  CHECK(same(launcher.stats(), 1, 0, 1));
  CHECK(fake.loads.size() == 1);

  // Another specialization (n == 1) is another key.
  launcher.load(*s.k.impl(), scale_args(s.k, 0x10000, 1));
  CHECK(same(launcher.stats(), 2, 0, 2));
}

TEST_CASE("launcher: launches after the first find their kernel by its id and specialization", "[launcher][cache]") {
  Setup s;
  FakeDriver fake;
  Launcher launcher(fake.driver(), s.cache);
  // Traced from one line, so that the IR (with its locations) is the same.
  auto trace = [] { return tl::compile(launcher_scale<256>, {.name = "launcher_scale"}); };
  s.k = trace();
  auto a = launcher.load(*s.k.impl(), s.args);
  CHECK(launcher.load(*s.k.impl(), s.args) == a);
  // The same IR traced again is another kernel (another id) with the same
  // cache key: the launcher's map serves it, nothing is compiled or loaded.
  tl::Kernel same_ir = trace();
  CHECK(same_ir.ir() == s.k.ir());
  CHECK(same_ir.impl()->id != s.k.impl()->id);
  CHECK(launcher.load(*same_ir.impl(), scale_args(same_ir, 0x10000, 4096)) == a);
  CHECK(same(launcher.stats(), 1, 0, 1));
  // Other IR, or another specialization of the same kernel, is not served
  // the first kernel's code.
  tl::Kernel other = tl::compile(launcher_scale<128>, {.name = "launcher_scale"});
  auto b = launcher.load(*other.impl(), scale_args(other, 0x10000, 4096));
  CHECK(b != a);
  auto c = launcher.load(*s.k.impl(), scale_args(s.k, 0x10000, 1));
  CHECK(c != a);
  CHECK(launcher.load(*s.k.impl(), scale_args(s.k, 0x10000, 1)) == c);
  CHECK(same(launcher.stats(), 3, 0, 3));
  // A kernel freed and another made (perhaps at its address) gets its own
  // code, not the freed kernel's.
  uint64_t freed_id = other.impl()->id;
  other = tl::Kernel();
  tl::Kernel again = tl::compile(launcher_scale<64>, {.name = "launcher_scale"});
  CHECK(again.impl()->id != freed_id);
  CHECK(launcher.load(*again.impl(), scale_args(again, 0x10000, 4096)) != b);
  CHECK(same(launcher.stats(), 4, 0, 4));
}

TEST_CASE("launcher: a second launcher loads the cached binary, from memory or disk", "[launcher][cache]") {
  Setup s;
  FakeDriver writer;
  Launcher(writer.driver(), s.cache).load(*s.k.impl(), s.args);

  for (bool from_disk : {false, true}) {
    INFO((from_disk ? "disk" : "memory"));
    if (from_disk) s.cache.clear_memory();
    FakeDriver again;
    Launcher launcher(again.driver(), s.cache);
    launcher.load(*s.k.impl(), s.args);
    CHECK(same(launcher.stats(), 0, 1, 1));
    CHECK(launcher.stats().codegen_ms == 0);
    CHECK(again.links == 0);
    CHECK(again.loads == std::vector<bool>{true});  // a cached binary may be refused
  }
}

TEST_CASE("launcher: a cached binary the driver refuses is compiled again, once", "[launcher][cache]") {
  Setup s;
  FakeDriver writer;
  Launcher(writer.driver(), s.cache).load(*s.k.impl(), s.args);

  SECTION("the recompiled binary loads") {
    FakeDriver refusing;
    refusing.refuse_cached = true;
    Launcher launcher(refusing.driver(), s.cache);
    auto loaded = launcher.load(*s.k.impl(), s.args);
    CHECK(loaded->function == &refusing.handle);
    CHECK(refusing.loads == std::vector<bool>{true, false});
    CHECK(same(launcher.stats(), 1, 0, 1));
    CHECK(refusing.links == 1);
  }
  SECTION("the recompiled binary is refused too: the driver's error") {
    FakeDriver refusing;
    refusing.refuse_cached = refusing.refuse_fresh = true;
    Launcher launcher(refusing.driver(), s.cache);
    REQUIRE_THROWS_WITH(launcher.load(*s.k.impl(), s.args), "the test driver refuses kernel 'launcher_scale'");
    CHECK(refusing.loads == std::vector<bool>{true, false});
    CHECK(same(launcher.stats(), 1, 0, 0));
  }
}

TEST_CASE("launcher: a kernel over the GPU's shared memory is an error naming both", "[launcher]") {
  TempDir dir;
  KernelCache cache(dir.path);
  tl::Kernel k = tl::compile(launcher_row_sum, {.name = "launcher_row_sum"});
  std::vector<LaunchArg> args = {LaunchArg{k.params()[0], 0x10000, 0, 0}, LaunchArg{k.params()[1], 0x20000, 0, 0},
                                 LaunchArg{k.params()[2], 0, 0, 0.5}};
  int needs = tl::codegen::compile(*k.impl(), tl::runtime::specialize(args), "sm_80").shared_bytes;
  REQUIRE(needs > 0);
  FakeDriver fake;
  Launcher launcher(fake.driver(needs - 1), cache);
  REQUIRE_THROWS_WITH(launcher.load(*k.impl(), args),
                      "kernel 'launcher_row_sum' needs " + std::to_string(needs) +
                          " bytes of shared memory per block; Test GPU allows at most " + std::to_string(needs - 1));
  CHECK(fake.loads.empty());
  CHECK(same(launcher.stats(), 1, 0, 0));
}

TEST_CASE("launcher: threads launching one key wait for one compile and one load", "[launcher][concurrency]") {
  Setup s;
  FakeDriver fake;
  Launcher launcher(fake.driver(), s.cache);
  std::vector<std::shared_ptr<const tl::runtime::LoadedKernel>> got(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = launcher.load(*s.k.impl(), s.args); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) CHECK(g == got[0]);
  CHECK(same(launcher.stats(), 1, 0, 1));
  CHECK(fake.links == 1);
  CHECK(fake.loads.size() == 1);
}

TEST_CASE("launcher: arguments are specialized as a GPU device compiles them", "[launcher]") {
  tl::Kernel k = tl::compile(launcher_row_sum, {.name = "launcher_row_sum"});
  auto ptr = k.params()[0];
  auto f32 = k.params()[2];
  auto i32 = tl::compile(launcher_scale<256>, {.name = "launcher_scale"}).params()[1];
  std::vector<LaunchArg> args = {{ptr, 256, 0, 0}, {ptr, 260, 0, 0}, {i32, 0, 1, 0},
                                 {i32, 0, 48, 0},  {i32, 0, 7, 0},   {f32, 0, 0, 0.0}};
  CHECK(tl::runtime::specialize(args).key() == "d16,d1,v1,d16,d1,d1");
}

TEST_CASE("launcher: each parameter fills an 8-byte slot at its own width", "[launcher]") {
  tl::Kernel k = tl::compile(launcher_row_sum, {.name = "launcher_row_sum"});
  auto i32 = tl::compile(launcher_scale<256>, {.name = "launcher_scale"}).params()[1];
  std::vector<LaunchArg> args = {{k.params()[0], 0x123456789abcull, 0, 0}, {i32, 0, -2, 0}, {k.params()[2], 0, 0, 1.5}};
  tl::runtime::KernelParams params(args, "launcher-test");
  auto slot = [&](size_t j) {
    uint64_t v = 0;
    std::memcpy(&v, params.data()[j], 8);
    return v;
  };
  CHECK(slot(0) == 0x123456789abcull);
  CHECK(slot(1) == 0xfffffffeull);  // the low 4 bytes of -2, the rest zero
  float f = 0;
  std::memcpy(&f, params.data()[2], 4);
  CHECK(f == 1.5f);
  CHECK(slot(2) >> 32 == 0);
}

TEST_CASE("launcher: a kernel's tensor maps follow its arguments, encoded from their values", "[launcher]") {
  tl::Kernel k = tl::compile(launcher_row_sum, {.name = "launcher_row_sum"});
  auto i32 = tl::compile(launcher_scale<256>, {.name = "launcher_scale"}).params()[1];
  std::vector<LaunchArg> args = {{k.params()[0], 0x1000, 0, 0}, {i32, 0, 300, 0}};
  using Operand = tl::runtime::TensorMapParam::Operand;
  tl::runtime::TensorMapParam m{tl::DType::bf16, 0, {Operand::argument(1)}, {Operand::constant(1)}, {64}, 0};
  std::vector<std::vector<int64_t>> seen;
  tl::runtime::KernelParams params(args, "launcher-test", {m, m}, [&](const auto& p, const auto& values) {
    seen.push_back(values);
    tl::runtime::TensorMapBytes out;
    out.bytes[0] = uint8_t(p.sizes[0].of(values) & 0xff);
    out.bytes[127] = uint8_t(seen.size());
    return out;
  });
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == std::vector<int64_t>{0x1000, 300});
  auto* first = static_cast<const uint8_t*>(params.data()[2]);
  auto* second = static_cast<const uint8_t*>(params.data()[3]);
  CHECK(first[0] == (300 & 0xff));
  CHECK(first[127] == 1);
  CHECK(second[127] == 2);
  CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
  // Maps without an encoder (a device without tensor copies) are an error.
  CHECK_THROWS_WITH(tl::runtime::KernelParams(args, "launcher-test", {m}),
                    Catch::Contains("launcher-test device: cannot pass tensor maps"));
}
