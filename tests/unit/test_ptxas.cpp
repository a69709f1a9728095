// ptxas as the CUDA device's linker (backends/nvptx/cuda_ptxas.h,
// TILEDSL_PTXAS): which program is found or the variable names, a kernel's PTX
// assembled into a cubin, ptxas's own message when it refuses the PTX, and
// the launcher keeping the binaries of two linkers apart. The assembling
// cases need the CUDA toolkit's ptxas (/usr/local/cuda/bin/ptxas) and say
// so when it is absent; no GPU is needed.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "codegen/compile.h"
#include "nvptx/cuda_ptxas.h"
#include "runtime/launcher.h"
#include "temp_dir.h"
#include "tiledsl/tiledsl.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kToolkitPtxas = "/usr/local/cuda/bin/ptxas";

// TILEDSL_PTXAS set to `value` (unset for nullptr) while it lives.
struct PtxasEnv {
  std::string old;
  bool had = false;
  explicit PtxasEnv(const char* value) {
    if (const char* o = std::getenv("TILEDSL_PTXAS")) old = o, had = true;
    if (value) ::setenv("TILEDSL_PTXAS", value, 1);
    else ::unsetenv("TILEDSL_PTXAS");
  }
  ~PtxasEnv() {
    if (had) ::setenv("TILEDSL_PTXAS", old.c_str(), 1);
    else ::unsetenv("TILEDSL_PTXAS");
  }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void ptxas_scale(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * 256 + tl::arange(0, 256);  // [256] i32
  auto mask = offs < n;                                      // [256] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

// 64 floats a thread live across their sum, with eight programs a
// multiprocessor capping a thread at 64 registers: ptxas spills.
void ptxas_spill(tl::ptr<float> x) {
  auto offs = tl::arange(0, 8192);                           // [8192] i32
  auto v = tl::load(x + offs);                               // [8192] f32
  tl::store(x + offs, v * tl::sum(v, 0));
}

}  // namespace

TEST_CASE("ptxas: TILEDSL_PTXAS names the linker, or none", "[ptxas]") {
  constexpr int kDriver = 13000;  // a CUDA 13.0 driver
  {
    PtxasEnv env("0");
    CHECK_FALSE(tl::nvptx::ptxas_from_environment(kDriver));
  }
  {
    PtxasEnv env("/nonexistent/ptxas");
    CHECK_THAT(message_of([] { tl::nvptx::ptxas_from_environment(kDriver); }),
               Catch::Contains("TILEDSL_PTXAS=/nonexistent/ptxas: no ptxas runs (tried /nonexistent/ptxas)") &&
                   Catch::Contains("set it to 0"));
  }
  {
    // Unset, without a ptxas that runs on PATH or in the toolkit: none,
    // and no error.
    PtxasEnv env(nullptr);
    const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", "/nonexistent", 1);
    auto p = tl::nvptx::ptxas_from_environment(kDriver);
    ::setenv("PATH", path.c_str(), 1);
    if (!fs::exists(kToolkitPtxas)) CHECK_FALSE(p);
  }
  if (!fs::exists(kToolkitPtxas)) {
    WARN("[SKIP] no CUDA toolkit at /usr/local/cuda: a ptxas that runs is not exercised");
    return;
  }
  {
    PtxasEnv env(kToolkitPtxas);
    auto p = tl::nvptx::ptxas_from_environment(kDriver);
    REQUIRE(p);
    CHECK(p->path == kToolkitPtxas);
    CHECK_FALSE(p->found);  // named: its failures are errors
    REQUIRE(p->version.size() > 1);
    CHECK(p->version[0] == 'V');
    CHECK(p->version.find_first_not_of("V0123456789.") == std::string::npos);
  }
  {
    // Unset: the toolkit's (PATH emptied), found rather than named, unless
    // it is newer than the driver; "1" takes it whatever the driver.
    PtxasEnv env(nullptr);
    const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", "/nonexistent", 1);
    auto found = tl::nvptx::ptxas_from_environment(99000);
    auto too_new = tl::nvptx::ptxas_from_environment(1000);  // a CUDA 1.0 driver
    PtxasEnv one("1");
    auto named = tl::nvptx::ptxas_from_environment(1000);
    ::setenv("PATH", path.c_str(), 1);
    REQUIRE(found);
    CHECK(found->path == kToolkitPtxas);
    CHECK(found->found);
    CHECK_FALSE(too_new);
    REQUIRE(named);
    CHECK_FALSE(named->found);
  }
}

TEST_CASE("ptxas: a kernel's PTX becomes a cubin; PTX it refuses is an error in its words", "[ptxas]") {
  if (!fs::exists(kToolkitPtxas)) {
    WARN("[SKIP] no CUDA toolkit at /usr/local/cuda");
    return;
  }
  tl::Kernel k = tl::compile(ptxas_scale, {.name = "ptxas_scale"});
  tl::codegen::Specialization spec;
  spec.args.resize(2);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    tl::codegen::CompiledKernel ck = tl::codegen::compile(*k.impl(), spec, arch);
    std::string cubin = tl::nvptx::run_ptxas(kToolkitPtxas, ck.assembly, arch, "ptxas_scale");
    REQUIRE(cubin.size() > 4);
    CHECK(cubin.substr(0, 4) == "\x7f" "ELF");
    CHECK(cubin.find(ck.entry) != std::string::npos);  // the entry's symbol
  }
  std::string broken = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry f() { bogus.instr; }\n";
  std::string msg = message_of([&] { tl::nvptx::run_ptxas(kToolkitPtxas, broken, "sm_90a", "broken"); });
  CHECK_THAT(msg, Catch::Contains("ptxas (" + std::string(kToolkitPtxas) + " -arch=sm_90a) failed on 'broken' (status"));
  CHECK_THAT(msg, Catch::Contains("bogus"));  // ptxas's own message, naming the line
}

// Its warnings of lost performance come back as notes (TILEDSL_DUMP=notes
// prints them where a CUDA device links): spills here; a wgmma
// serialized for registers (C7512) would come the same way.
TEST_CASE("ptxas: its warnings of lost performance are notes", "[ptxas]") {
  if (!fs::exists(kToolkitPtxas)) {
    WARN("[SKIP] no CUDA toolkit at /usr/local/cuda");
    return;
  }
  std::string notes = "stale";
  tl::Kernel fits = tl::compile(ptxas_scale, {.name = "ptxas_scale"});
  tl::codegen::Specialization two;
  two.args.resize(2);
  tl::nvptx::run_ptxas(kToolkitPtxas, tl::codegen::compile(*fits.impl(), two, "sm_90a").assembly, "sm_90a",
                       "ptxas_scale", &notes);
  CHECK(notes.empty());
  tl::Kernel tight = tl::compile(ptxas_spill, {.name = "ptxas_spill", .num_warps = 4, .programs_per_sm = 8});
  tl::codegen::Specialization one;
  one.args.resize(1);
  tl::codegen::CompiledKernel ck = tl::codegen::compile(*tight.impl(), one, "sm_90a");
  REQUIRE(ck.assembly.find(".maxnreg 64") != std::string::npos);
  tl::nvptx::run_ptxas(kToolkitPtxas, ck.assembly, "sm_90a", "ptxas_spill", &notes);
  CHECK_THAT(notes, Catch::Contains("spilled") && Catch::Contains("ptxas_spill"));
}

TEST_CASE("ptxas: binaries of another linker are cached under a key of their own", "[ptxas][cache]") {
  TempDir dir;
  tl::runtime::KernelCache cache{dir.path};
  tl::Kernel k = tl::compile(ptxas_scale, {.name = "ptxas_scale"});
  std::vector<tl::detail::LaunchArg> args = {tl::detail::LaunchArg{k.params()[0], 0x10000, 0, 0},
                                             tl::detail::LaunchArg{k.params()[1], 0, 4096, 0}};
  int links = 0, handle = 0, asks = 0;
  auto driver = [&](std::string linker) {
    return tl::runtime::GpuDriver{
        .device = "ptxas-test",
        .target = "sm_80",
        .gpu_name = "Test GPU",
        .max_shared_bytes = 48 * 1024,
        .shared_memory = "shared memory per block",
        .link =
            [&](const tl::detail::KernelImpl&, const tl::codegen::CompiledKernel& ck) {
              ++links;
              return tl::runtime::Bytes(ck.assembly.begin(), ck.assembly.end());
            },
        .linker = [&asks, linker] { return ++asks, linker; },
        .load = [&](const tl::detail::KernelImpl&, const tl::runtime::CachedBinary&, bool) -> void* { return &handle; },
    };
  };
  // The driver's own linker, then ptxas: two compiles, two cache entries;
  // each again (a fresh launcher, so from the disk cache): no compile.
  // The linker is asked once a launcher, however many kernels it loads.
  for (int round = 0; round < 2; ++round) {
    for (const char* linker : {"", "ptxas V13.0.88"}) {
      tl::runtime::Launcher launcher(driver(linker), cache);
      launcher.load(*k.impl(), args);
      auto other = args;
      other[1].i = 4001;  // another specialization (not a multiple of 16)
      launcher.load(*k.impl(), other);
      CHECK(launcher.stats().compiles == (round == 0 ? 2 : 0));
    }
  }
  CHECK(links == 4);
  CHECK(asks == 4);
}
