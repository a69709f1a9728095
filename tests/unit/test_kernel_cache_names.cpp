// Kernels that share a name (different IR or options) never reuse each
// other's cached binaries: on the interpreter, in the inspector, on CUDA.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "codegen/compile.h"
#include "kernel_cache_test_util.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "temp_dir.h"
#include "tiledsl/tiledsl.h"

using tl::runtime::Bytes;
using tl::runtime::CacheKey;
using tl::runtime::KernelCache;
using tl::runtime::Sha256;
namespace fs = std::filesystem;

using namespace kernel_cache_test;

// ---------------------------------------------------------------------------
// Two kernels that share a name (different IR or options) never reuse each
// other's binaries.

namespace {

template <int FACTOR>
void times_kernel(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * 64 + tl::arange(0, 64);  // [64] i32
  auto mask = offs < n;                                    // [64] i1
  tl::store(x + offs, tl::load(x + offs, mask) * float(FACTOR), mask);
}

// Runs each kernel once over x = [1, 2, ..., n] on `dev`; returns the outputs.
std::vector<std::vector<float>> run_each(tl::Device& dev, const std::vector<tl::Kernel>& kernels) {
  const int n = 100;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[size_t(i)] = float(i + 1);
  std::vector<std::vector<float>> out;
  for (const auto& k : kernels) {
    auto x = dev.upload(host);
    dev(k, tl::Grid{2}, x, n);
    dev.synchronize();
    out.push_back(x.download<float>());
  }
  return out;
}

std::vector<tl::Kernel> twins() {
  // (Factors 3 and 5: LLVM turns a multiply by 2 into an add.)
  return {tl::compile(times_kernel<3>, {.name = "twin"}), tl::compile(times_kernel<5>, {.name = "twin"}),
          tl::compile(times_kernel<3>, {.name = "twin", .num_warps = 8})};
}

}  // namespace

TEST_CASE("kernels sharing a name run their own code on the interpreter", "[cache]") {
  auto dev = tl::Device::get("interp");
  auto out = run_each(dev, twins());
  for (int i = 0; i < 100; ++i) {
    CHECK(out[0][size_t(i)] == 3.0f * float(i + 1));
    CHECK(out[1][size_t(i)] == 5.0f * float(i + 1));
    CHECK(out[2][size_t(i)] == 3.0f * float(i + 1));
  }
}

TEST_CASE("the inspector prints every kernel sharing a name", "[cache]") {
  // Before: it remembered printed kernels by name and specialization, so
  // the second and third "twin" were never shown.
  TempDir tmp;
  auto dev = tl::Device::inspector("sm_90a", "asm");
  std::string text;
  {
    std::fflush(stdout);
    std::cout.flush();
    int saved = dup(1);
    int fd = ::open((tmp.path / "stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    ::close(fd);
    auto kernels = twins();
    run_each(dev, kernels);
    run_each(dev, kernels);  // the same kernels again: printed once each
    std::cout.flush();
    std::fflush(stdout);
    dup2(saved, 1);
    ::close(saved);
    Bytes b = read_file(tmp.path / "stdout.txt");
    text.assign(b.begin(), b.end());
  }
  CHECK(count_occurrences(text, "// kernel 'twin' for sm_90a") == 3);
  CHECK(count_occurrences(text, "// end of kernel 'twin'") == 3);
  // Each with its own code: the factor as a PTX float constant, and the
  // block size of num_warps.
  std::vector<std::string> parts;
  for (size_t pos = text.find("// kernel 'twin'"); pos != std::string::npos;) {
    size_t next = text.find("// kernel 'twin'", pos + 1);
    parts.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    pos = next;
  }
  REQUIRE(parts.size() == 3);
  CHECK_THAT(parts[0], Catch::Contains("0f40400000") && !Catch::Contains("0f40A00000"));  // 3.0f
  CHECK_THAT(parts[1], Catch::Contains("0f40A00000") && !Catch::Contains("0f40400000"));  // 5.0f
  CHECK_THAT(parts[0], Catch::Contains(".maxntid 128"));
  CHECK_THAT(parts[2], Catch::Contains(".maxntid 256"));
}

namespace {

bool have_cuda() {
  auto names = tl::Device::available();
  if (std::find(names.begin(), names.end(), "cuda") != names.end()) return true;
  WARN("[SKIP] no GPU");
  return false;
}

}  // namespace

TEST_CASE("cuda: kernels sharing a name run their own code", "[gpu]") {
  if (!have_cuda()) return;
  auto dev = tl::Device::get("cuda");
  auto out = run_each(dev, twins());
  for (int i = 0; i < 100; ++i) {
    REQUIRE(out[0][size_t(i)] == 3.0f * float(i + 1));
    REQUIRE(out[1][size_t(i)] == 5.0f * float(i + 1));
    REQUIRE(out[2][size_t(i)] == 3.0f * float(i + 1));
  }
}

TEST_CASE("cuda: a cached entry the device cannot use is recompiled", "[gpu][bad-image]") {
  // The process-wide cache's entry of a real launch, replaced by (a) a
  // payload that is no CUDA entry and (b) a well-formed CUDA entry whose
  // cubin the driver refuses. Before, each failed every later process
  // ("malformed", or cuModuleLoadDataEx's error); now a fresh device (as a
  // new process would have) recompiles and runs the right kernel.
  if (!have_cuda()) return;
  auto& global = KernelCache::global();
  if (global.dir().empty()) {
    WARN("[SKIP] no kernel cache directory");
    return;
  }
  tl::Kernel k = tl::compile(times_kernel<7>, {.name = "recompiled"});
  const int n = 100;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[size_t(i)] = float(i + 1);
  // A device of its own each time, so that its loaded-module map is empty.
  auto fresh_device = [] {
    for (const auto& e : tl::detail::builtin_gpu_devices())
      if (e.name == "cuda") return tl::Device(e.create(0));
    FAIL("no cuda device entry");
    return tl::Device();
  };
  // The disk entries of this kernel, found by their entry's name: the key
  // also holds what the device links with (ptxas's release, or none), which
  // only the device knows.
  auto entries = [&] {
    std::vector<fs::path> found;
    if (!fs::is_directory(global.dir())) return found;
    for (const auto& f : fs::directory_iterator(global.dir())) {
      if (f.path().extension() != ".tlk") continue;
      auto e = tl::runtime::read_entry_bytes("cuda", read_file(f.path()));
      if (e && e->entry == "recompiled") found.push_back(f.path());
    }
    return found;
  };
  auto launch = [&](tl::Device& dev) {
    auto x = dev.upload(host);
    dev(k, tl::Grid{2}, x, n);
    dev.synchronize();
    return x.download<float>();
  };
  auto expect_right = [&](const std::vector<float>& got) {
    for (int i = 0; i < n; ++i) REQUIRE(got[size_t(i)] == 7.0f * float(i + 1));
  };
  // Entries of earlier runs go first, so that this launch compiles and
  // writes the one entry the cases below replace.
  for (const auto& old : entries()) fs::remove(old);
  global.clear_memory();
  {
    auto dev = fresh_device();
    expect_right(launch(dev));
    CHECK(dev.compile_stats().compiles == 1);
  }
  auto written = entries();
  REQUIRE(written.size() == 1);
  const fs::path path = written[0];
  CacheKey key;
  {
    Bytes file = read_file(path);
    REQUIRE(file.size() > 88);
    std::memcpy(key.digest.data(), file.data() + 56, 32);
  }
  auto good = tl::runtime::read_entry_bytes("cuda", read_file(path));
  REQUIRE(good);
  auto refused = *good;
  refused.binary.assign(4096, 0xab);  // no cubin
  std::vector<std::pair<const char*, Bytes>> cases = {
      {"no CUDA entry", bytes_of("garbage payload")},
      {"a cubin the driver refuses", tl::runtime::encode_cached_binary("cuda", refused)},
  };
  for (const auto& [what, payload] : cases) {
    INFO(what);
    write_file(path, KernelCache::encode_entry(key, payload));
    global.clear_memory();
    auto dev = fresh_device();
    expect_right(launch(dev));
    CHECK(dev.compile_stats().compiles == 1);
    // The entry on disk is valid again.
    auto again = tl::runtime::read_entry_bytes("cuda", read_file(path));
    REQUIRE(again);
    CHECK(again->entry == good->entry);
    CHECK(again->binary != refused.binary);
  }
}
