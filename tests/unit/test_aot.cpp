// Kernels compiled ahead of time: the generator (tiledsl/aot.h) and what
// it writes, tl::load_precompiled (tiledsl/precompiled.h) and its checks,
// the interpreter running a precompiled kernel from its Tile IR, and the
// launch path choosing a binary (runtime/precompiled.h) driven by a driver
// of the test's own, so that no compile happens. The program linked with
// the runtime alone, and its binaries' disassembly, are the gemm example's
// ahead-of-time form (tests/CMakeLists.txt: example.gemm_aot*,
// aot.gemm_binaries).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "aot/aot.h"
#include "gpu_oracle.h"
#include "runtime/kernel_cache.h"
#include "runtime/launcher.h"
#include "runtime/precompiled.h"
#include "temp_dir.h"
#include "tiledsl/aot.h"
#include "tiledsl/precompiled.h"
#include "tiledsl/tiledsl.h"

namespace fs = std::filesystem;
using tl::detail::LaunchArg;

namespace {

template <int BLOCK>
void aot_scale(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(y + offs, tl::load(x + offs, mask) * 3.0f, mask);
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

tl::Kernel scale_kernel() { return tl::compile(aot_scale<128>, {.name = "aot_scale", .num_warps = 2}); }

// A binary the way the generator makes one: a device's cached-binary
// encoding (here of a stand-in for PTX, which the test's driver never runs).
std::vector<uint8_t> payload(const std::string& device, int threads) {
  tl::runtime::CachedBinary e;
  e.entry = "aot_scale";
  e.threads = threads;
  e.binary = {'.', 'p', 't', 'x', 0};
  return tl::runtime::encode_cached_binary(device, e);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("aot: the generator writes a header and a source with every binary", "[aot]") {
  TempDir dir;
  tl::aot::Options o{.targets = {"sm_90a", "gfx942"},
                     .output = (dir.path / "scale_kernels.cpp").string(),
                     .name_space = "app::gpu",
                     .binaries_dir = (dir.path / "bin").string()};
  auto out = tl::aot::generate({{.symbol = "scale_f32", .kernel = scale_kernel(), .specializations = {"16,16,16", ""}},
                                {.symbol = "scale_sm90", .kernel = scale_kernel(), .targets = {"sm_90a"}}},
                               o);
  // Two specializations on two targets, then one (every argument "-") on one.
  REQUIRE(out.size() == 5);
  CHECK(out[0].symbol == "scale_f32");
  CHECK(out[0].target == "sm_90a");
  CHECK(out[0].specialization == "d16,d16,d16");
  CHECK(out[1].specialization == "d1,d1,d1");
  CHECK(out[2].target == "gfx942");
  CHECK(out[4].symbol == "scale_sm90");
  CHECK(out[4].specialization == "d1,d1,d1");
  for (const auto& g : out) {
    CHECK(g.bytes > 0);
    REQUIRE(fs::exists(g.file));
    CHECK(fs::file_size(g.file) >= g.bytes - 1);  // PTX is written without its NUL
  }
  CHECK(read(out[0].file).find(".target sm_90a") != std::string::npos);
  CHECK(fs::path(out[2].file).extension() == ".hsaco");
  CHECK(read(out[2].file).substr(1, 3) == "ELF");

  std::string h = read(dir.path / "scale_kernels.h");
  CHECK(h.find("namespace app::gpu {") != std::string::npos);
  CHECK(h.find("tl::Kernel scale_f32();") != std::string::npos);
  CHECK(h.find("tl::Kernel scale_sm90();") != std::string::npos);
  CHECK(h.find("tl::Kernel scale_kernels(std::string_view symbol);") != std::string::npos);
  CHECK(h.find("sm_90a [d16,d16,d16]") != std::string::npos);
  std::string src = read(dir.path / "scale_kernels.cpp");
  CHECK(src.find("#include \"scale_kernels.h\"") != std::string::npos);
  CHECK(src.find("tl::load_precompiled(p)") != std::string::npos);
  CHECK(src.find("{\"hip\", \"gfx942\", \"d16,d16,d16\"") != std::string::npos);
  CHECK(src.find("p.options.num_warps = 2;") != std::string::npos);
}

TEST_CASE("aot: bad generator input is an error naming the kernel, and writes nothing", "[aot]") {
  TempDir dir;
  auto opts = [&] {
    return tl::aot::Options{.targets = {"sm_80"}, .output = (dir.path / "k.cpp").string()};
  };
  auto error = [&](std::vector<tl::aot::KernelSpec> specs, tl::aot::Options o) {
    return message_of([&] { tl::aot::generate(specs, o); });
  };
  tl::Kernel k = scale_kernel();
  CHECK_THAT(error({{"s", k, {"16,16"}}}, opts()),
             Catch::Contains("kernel 's' (aot_scale(ptr<f32>, ptr<f32>, i32))") &&
                 Catch::Contains("expected 3 comma-separated entries, one per parameter, found 2"));
  CHECK_THAT(error({{"s", k, {"1,16,16"}}}, opts()),
             Catch::Contains("entry 1 of parameter type ptr<f32>: expected 16 or -, found '1'"));
  CHECK_THAT(error({{"s", k, {"16,16,8"}}}, opts()), Catch::Contains("expected 16, 1 or -, found '8'"));
  CHECK_THAT(error({{"1s", k}}, opts()), Catch::Contains("kernel symbol '1s' is not a C++ identifier"));
  CHECK_THAT(error({{"int", k}}, opts()), Catch::Contains("kernel symbol 'int' is not a C++ identifier (or is a keyword)"));
  CHECK_THAT(error({{"s", k}, {"s", k}}, opts()), Catch::Contains("kernel symbol 's' is given twice"));
  // Names the generated file cannot declare in the global namespace (it did,
  // and did not compile), and namespaces it cannot use.
  CHECK_THAT(error({{"main", k}}, opts()),
             Catch::Contains("kernel symbol 'main' cannot be a function of the global namespace (it is the program's entry)"));
  CHECK_THAT(error({{"std", k}}, opts()), Catch::Contains("kernel symbol 'std' cannot be a function of the global namespace"));
  auto in_std = opts();
  in_std.name_space = "app::std";
  CHECK_THAT(error({{"s", k}}, in_std), Catch::Contains("namespace 'app::std' is not a C++ namespace name the generated "
                                                         "file can use (identifiers, no keywords, not std or tl)"));
  CHECK_THAT(error({{"s", k, {}, {"sm_90a"}}}, opts()),
             Catch::Contains("names target 'sm_90a', which is not among --targets"));
  CHECK_THAT(error({{"s", tl::Kernel()}}, opts()), Catch::Contains("kernel 's' is empty"));
  CHECK_THAT(error({{"s", k}}, {.targets = {"sm_75"}, .output = (dir.path / "k.cpp").string()}),
             Catch::Contains("unknown target 'sm_75'") && Catch::Contains("sm_90a"));
  CHECK_THAT(error({{"s", k}}, {.targets = {"sm_80"}, .output = (dir.path / "my-kernels.cpp").string()}),
             Catch::Contains("'my-kernels'") && Catch::Contains("must be a C++ identifier"));
  CHECK_THAT(error({{"s", k}}, {.targets = {"sm_80"}}), Catch::Contains("no output file"));
  CHECK(fs::is_empty(dir.path));

  // A kernel that does not compile for a target: its error, with the
  // kernel, the target and the specialization.
  auto big = tl::compile(aot_scale<128>, {.name = "too_wide", .num_warps = 32});
  CHECK_THAT(error({{"w", big}}, {.targets = {"gfx942"}, .output = (dir.path / "k.cpp").string()}),
             Catch::Contains("kernel 'w' for gfx942 [d1,d1,d1]"));
  CHECK(fs::is_empty(dir.path));

  // tl::aot::main: the arguments, and its exit code.
  std::vector<std::string> argv_text = {"gen", "--targets=sm_80", "--bogus"};
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  CHECK(tl::aot::main(int(argv.size()), argv.data(), {{"s", k}}) == 1);
  std::string out = (dir.path / "k.cpp").string();
  argv_text = {"gen", "--targets=sm_80", "--output=" + out, "--quiet"};
  argv.clear();
  for (auto& a : argv_text) argv.push_back(a.data());
  CHECK(tl::aot::main(int(argv.size()), argv.data(), {{"s", k}}) == 0);
  CHECK(fs::exists(out));
}

TEST_CASE("aot: NVIDIA binaries assembled by ptxas at build time", "[aot]") {
  tl::Kernel k = scale_kernel();
  tl::codegen::Specialization spec;
  spec.args.resize(3);
  // A ptxas that cannot run: its failure, named.
  CHECK_THAT(message_of([&] { tl::aot::precompile(*k.impl(), spec, "sm_90a", "/nonexistent/ptxas"); }),
             Catch::Contains("ptxas (/nonexistent/ptxas -arch=sm_90a) failed on 'aot_scale': it could not be run"));
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (!fs::exists(ptxas)) {
    WARN("[SKIP] no CUDA toolkit: the cubin path is not exercised");
    return;
  }
  auto p = tl::aot::precompile(*k.impl(), spec, "sm_90a", ptxas);
  CHECK(p.kind == "cubin");
  REQUIRE(p.binary.size() > 4);
  CHECK(p.binary.substr(0, 4) == "\x7f" "ELF");
  CHECK(p.assembly.find(".target sm_90a") != std::string::npos);
  auto e = tl::runtime::decode_cached_binary("cuda", p.payload);
  REQUIRE(e);
  CHECK(e->binary.size() == p.binary.size());
  CHECK(e->entry == "aot_scale");
  // PTX without one.
  auto q = tl::aot::precompile(*k.impl(), spec, "sm_90a");
  CHECK(q.kind == "ptx");
  CHECK(q.binary == q.assembly);
}

TEST_CASE("aot: a precompiled kernel runs on the interpreter from its Tile IR", "[aot]") {
  tl::Kernel traced = scale_kernel();
  std::string ir = traced.ir();
  auto bin = payload("cuda", 64);
  tl::PrecompiledKernel p;
  p.options = traced.options();
  p.tile_ir = ir;
  p.binaries = {{"cuda", "sm_90a", "d16,d16,d16", bin}};
  tl::Kernel k = tl::load_precompiled(p);
  CHECK(k.name() == "aot_scale");
  CHECK(k.options().num_warps == 2);
  CHECK(k.params() == traced.params());
  CHECK(k.ir() == ir);
  REQUIRE(tl::precompiled_binaries(k).size() == 1);
  CHECK(tl::precompiled_binaries(k)[0].target == "sm_90a");
  CHECK(tl::precompiled_binaries(traced).empty());

  tl::Device dev = tl::Device::get("interp");
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 7.5f;
  tl::Buffer bx = dev.upload(x), by = dev.alloc<float>(x.size());
  dev(k, tl::Grid{3}, bx, by, int32_t(x.size()));
  auto y = by.download<float>();
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == 3.0f * x[i]);
  // Launches are checked against its signature as a traced kernel's are.
  CHECK_THAT(message_of([&] { dev(k, tl::Grid{3}, bx, by); }), Catch::Contains("expects 3 arguments"));
}

TEST_CASE("aot: load_precompiled rejects a damaged description", "[aot]") {
  tl::Kernel traced = scale_kernel();
  std::string ir = traced.ir();
  auto bin = payload("cuda", 64);
  auto load = [&](std::string_view text, std::vector<tl::PrecompiledBinary> b, std::string name = "aot_scale") {
    tl::PrecompiledKernel p;
    p.options.name = name;
    p.tile_ir = text;
    p.binaries = std::move(b);
    return message_of([&] { tl::load_precompiled(p); });
  };
  CHECK_THAT(load("func @aot_scale(", {}), Catch::Contains("precompiled kernel 'aot_scale': its Tile IR does not parse") &&
                                                 Catch::Contains("generate it again"));
  CHECK_THAT(load(ir, {}, "other"), Catch::Contains("is not one function named 'other'"));
  tl::PrecompiledKernel warps;  // options tl::compile would refuse
  warps.options = {.name = "aot_scale", .num_warps = 3};
  warps.tile_ir = ir;
  CHECK_THAT(message_of([&] { tl::load_precompiled(warps); }),
             Catch::Contains("precompiled kernel 'aot_scale': its options: ") &&
                 Catch::Contains("kernel 'aot_scale': num_warps must be a power of two"));
  CHECK_THAT(load(ir, {{"cuda", "sm_90a", "d16,d16", bin}}),
             Catch::Contains("its binary for sm_90a [d16,d16] has 2 argument entries for 3 parameters"));
  CHECK_THAT(load(ir, {{"cuda", "sm_90a", "d16,d8,d1", bin}}), Catch::Contains("has the entry 'd8'"));
  CHECK_THAT(load(ir, {{"metal", "sm_90a", "d1,d1,d1", bin}}), Catch::Contains("is for device 'metal'"));
  CHECK_THAT(load(ir, {{"cuda", "sm_90a", "d1,d1,d1", {}}}), Catch::Contains("is empty"));
  CHECK(load(ir, {{"cuda", "sm_90a", "d1,d1,d1", bin}}).empty());
}

TEST_CASE("aot: a launch takes the most specialized binary its arguments satisfy", "[aot]") {
  tl::Kernel traced = scale_kernel();
  std::string ir = traced.ir();
  auto bin = payload("cuda", 64);
  tl::PrecompiledKernel p;
  p.options = traced.options();
  p.tile_ir = ir;
  // Distinct payload copies, so that each binary is told apart by address.
  auto b0 = bin, b1 = bin, b2 = bin, b3 = bin;
  // The names from strings that are gone once load_precompiled returns (as
  // a target from Device::target() would be): it keeps copies.
  auto gone = [](const char* s) { return std::make_unique<std::string>(s); };
  auto t90 = gone("sm_90a"), s1 = gone("d16,d16,d16");
  p.binaries = {{"cuda", "sm_90a", "d1,d1,d1", b0},
                {"cuda", *t90, *s1, b1},
                {"cuda", "sm_90a", "d16,d16,v1", b2},
                {"hip", "gfx942", "d1,d1,d1", b3}};
  tl::Kernel k = tl::load_precompiled(p);
  t90.reset(), s1.reset();
  CHECK(tl::precompiled_binaries(k)[1].target == "sm_90a");
  CHECK(tl::precompiled_binaries(k)[1].specialization == "d16,d16,d16");
  const auto& impl = *k.impl();
  auto spec = [&](uint64_t x, uint64_t y, int64_t n) {
    return tl::runtime::specialize({LaunchArg{k.params()[0], x, 0, 0}, LaunchArg{k.params()[1], y, 0, 0},
                                    LaunchArg{k.params()[2], 0, n, 0}});
  };
  auto pick = [&](std::string_view device, std::string_view target, const tl::codegen::Specialization& s) {
    const auto* e = tl::runtime::pick_precompiled(impl, device, target, s);
    return e ? e->payload.data() : nullptr;
  };
  CHECK(pick("cuda", "sm_90a", spec(0x1000, 0x2000, 4096)) == b1.data());
  CHECK(pick("cuda", "sm_90a", spec(0x1000, 0x2000, 1)) == b2.data());
  CHECK(pick("cuda", "sm_90a", spec(0x1004, 0x2000, 4096)) == b0.data());  // x not 16-byte aligned
  CHECK(pick("cuda", "sm_90a", spec(0x1000, 0x2000, 100)) == b0.data());   // n not divisible by 16
  CHECK(pick("hip", "gfx942", spec(0x1000, 0x2000, 4096)) == b3.data());
  CHECK(pick("cuda", "sm_80", spec(0x1000, 0x2000, 4096)) == nullptr);
  std::string why = tl::runtime::no_precompiled_binary(impl, "cuda", "sm_80", spec(0x1000, 0x2000, 100));
  CHECK_THAT(why, Catch::Contains("kernel 'aot_scale' on cuda (sm_80): no precompiled binary fits this launch, "
                                  "whose arguments are [d16,d16,d1]") &&
                      Catch::Contains("link tiledsl::tiledsl") && Catch::Contains("\n  cuda sm_90a [d16,d16,v1]") &&
                      Catch::Contains("\n  hip gfx942 [d1,d1,d1]"));

  // The launcher loads the chosen binary once and compiles nothing.
  TempDir dir;
  tl::runtime::KernelCache cache(dir.path);
  std::vector<std::string> loads;  // entries loaded
  int handle = 0, linker_asks = 0;
  tl::runtime::Launcher launcher(
      tl::runtime::GpuDriver{.device = "cuda",
                             .target = "sm_90a",
                             .gpu_name = "Test GPU",
                             .max_shared_bytes = 48 * 1024,
                             .shared_memory = "shared memory per block",
                             .link = nullptr,
                             .linker = [&] { return ++linker_asks, std::string("ptxas V0.0"); },
                             .load = [&](const tl::detail::KernelImpl&, const tl::runtime::CachedBinary& e,
                                         bool may_refuse) -> void* {
                               CHECK_FALSE(may_refuse);
                               CHECK(e.threads == 64);
                               CHECK(e.entry == "aot_scale");
                               loads.push_back(e.entry);
                               return &handle;
                             }},
      cache);
  std::vector<LaunchArg> args = {LaunchArg{k.params()[0], 0x1000, 0, 0}, LaunchArg{k.params()[1], 0x2000, 0, 0},
                                 LaunchArg{k.params()[2], 0, 4096, 0}};
  auto loaded = launcher.load(impl, args);
  CHECK(loaded->function == &handle);
  CHECK(loaded->threads == 64);
  CHECK(launcher.load(impl, args) == loaded);
  args[2].i = 4001;  // another specialization: the general binary, loaded too
  CHECK(launcher.load(impl, args) != loaded);
  tl::CompileStats st = launcher.stats();
  CHECK(st.compiles == 0);
  CHECK(st.precompiled == 2);
  CHECK(st.modules_loaded == 2);
  CHECK(loads.size() == 2);
  CHECK(fs::is_empty(dir.path));  // nothing compiled, nothing cached
  CHECK(linker_asks == 0);        // nor the linker looked for (CUDA: no ptxas run)

  // A binary the device cannot use (written for another device kind) is an
  // error naming it, not a crash.
  auto hip_bytes = payload("hip", 64);
  p.binaries = {{"cuda", "sm_90a", "d1,d1,d1", hip_bytes}};
  tl::Kernel wrong = tl::load_precompiled(p);
  CHECK_THAT(message_of([&] { launcher.load(*wrong.impl(), args); }),
             Catch::Contains("kernel 'aot_scale': its precompiled binary for sm_90a [d1,d1,d1] cannot be used"));
  // With a compiler in the program (this test's), a launch no binary fits
  // (here: another target) compiles as a traced kernel's would.
  tl::runtime::Launcher sm80(
      tl::runtime::GpuDriver{.device = "cuda",
                             .target = "sm_80",
                             .gpu_name = "Test GPU",
                             .max_shared_bytes = 48 * 1024,
                             .shared_memory = "shared memory per block",
                             .link = [](const tl::detail::KernelImpl&, const tl::codegen::CompiledKernel& ck) {
                               return tl::runtime::Bytes(ck.assembly.begin(), ck.assembly.end());
                             },
                             .linker = {},
                             .load = [&](const tl::detail::KernelImpl&, const tl::runtime::CachedBinary&,
                                         bool) -> void* { return &handle; }},
      cache);
  CHECK(sm80.load(*k.impl(), args)->function == &handle);
  CHECK(sm80.stats().compiles == 1);
  CHECK(sm80.stats().precompiled == 0);
}

TEST_CASE("aot: a precompiled kernel loads and runs on the GPU without a compile", "[gpu][aot]") {
  REQUIRE_GPU();
  tl::Device dev = tl::Device::get("cuda");
  tl::Kernel traced = scale_kernel();
  std::string ir = traced.ir();
  // Both binaries the generator would make for this GPU's target.
  auto facts = [](std::initializer_list<int64_t> d) {
    tl::codegen::Specialization s;
    for (int64_t x : d) s.args.push_back(tl::transforms::ArgFacts{.divisibility = x, .value = std::nullopt});
    return s;
  };
  auto aligned = tl::aot::precompile(*traced.impl(), facts({16, 16, 16}), dev.target());
  auto general = tl::aot::precompile(*traced.impl(), facts({1, 1, 1}), dev.target());
  tl::PrecompiledKernel p;
  p.options = traced.options();
  p.tile_ir = ir;
  p.binaries = {{"cuda", dev.target(), "d16,d16,d16", aligned.payload}, {"cuda", dev.target(), "d1,d1,d1", general.payload}};
  tl::Kernel k = tl::load_precompiled(p);

  tl::CompileStats before = dev.compile_stats();
  int64_t loaded = 0;
  for (int n : {4096, 1000}) {  // the aligned binary, then the general one
    INFO("n = " << n);
    std::vector<float> x(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) x[size_t(i)] = float(i % 97) - 40.0f;
    tl::Buffer bx = dev.upload(x), by = dev.alloc<float>(size_t(n));
    dev(k, tl::Grid{uint32_t(tl::cdiv(n, 128))}, bx, by, n);
    dev.synchronize();
    auto y = by.download<float>();
    for (int i = 0; i < n; ++i) REQUIRE(y[size_t(i)] == 3.0f * x[size_t(i)]);
    tl::CompileStats after = dev.compile_stats();
    CHECK(after.compiles == before.compiles);
    CHECK(after.precompiled == before.precompiled + ++loaded);
  }
}
