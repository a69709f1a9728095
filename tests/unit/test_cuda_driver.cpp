// The CUDA back end without and with a GPU. CI has none: there the driver
// must fail to load with a clear reason, Device::get("cuda") must say so,
// Device::get("") must fall back to the interpreter, and every [gpu] test
// reports "[SKIP] no GPU". On a GPU machine the [gpu] tests run: memory,
// a launch checked against the host, the kernel cache across launches, and
// event timing.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "nvptx/cuda_device.h"
#include "nvptx/cuda_driver.h"
#include "runtime/kernel_cache.h"
#include "tiledsl/tiledsl.h"

using tl::nvptx::CudaDriver;
using Catch::Matchers::Contains;

namespace {

// True when there is a GPU; otherwise says [SKIP] in the test output.
bool have_gpu() {
  if (CudaDriver::available()) return true;
  WARN("[SKIP] no GPU");
  return false;
}

template <int BLOCK>
void axpy_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<float> alpha, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  auto xs = tl::load(x + offs, mask);                            // [BLOCK] f32
  auto ys = tl::load(y + offs, mask);                            // [BLOCK] f32
  tl::store(y + offs, xs * alpha + ys, mask);
}

}  // namespace

TEST_CASE("cuda: driver error names", "[cuda]") {
  CHECK(tl::nvptx::cuda_error_name_fallback(34) == "CUDA_ERROR_STUB_LIBRARY");
  CHECK(tl::nvptx::cuda_error_name_fallback(218) == "CUDA_ERROR_INVALID_PTX");
  CHECK(tl::nvptx::cuda_error_name_fallback(100) == "CUDA_ERROR_NO_DEVICE");
  CHECK(tl::nvptx::cuda_error_name_fallback(12345) == "CUDA error 12345");
}

TEST_CASE("cuda: compute capability to target", "[cuda]") {
  auto knows_sm90 = [](const std::string& t) { return t == "sm_90"; };
  auto knows_none = [](const std::string&) { return false; };
  CHECK(tl::nvptx::cuda_target_for(9, 0, knows_none) == "sm_90a");
  CHECK(tl::nvptx::cuda_target_for(8, 0, knows_none) == "sm_80");
  CHECK(tl::nvptx::cuda_target_for(8, 6, knows_none) == "sm_86");
  CHECK(tl::nvptx::cuda_target_for(8, 7, knows_none) == "sm_86");
  CHECK(tl::nvptx::cuda_target_for(8, 9, knows_none) == "sm_89");
  // Newer than we know: portable PTX, never the 9.0-only sm_90a.
  CHECK(tl::nvptx::cuda_target_for(10, 0, knows_none) == "sm_89");
  CHECK(tl::nvptx::cuda_target_for(12, 0, knows_sm90) == "sm_90");
  CHECK(tl::nvptx::cuda_target_is_fallback(10, 0));
  CHECK(!tl::nvptx::cuda_target_is_fallback(9, 0));
  CHECK_THROWS_WITH(tl::nvptx::cuda_target_for(7, 5, knows_none),
                    Contains("compute capability 7.5") && Contains("sm_80"));
}

TEST_CASE("cuda: a missing driver library is a clear error", "[cuda]") {
  CHECK_THROWS_WITH(CudaDriver::load("libtiledsl-no-such-driver.so.1"),
                    Contains("no CUDA driver") && Contains("dlopen(\"libtiledsl-no-such-driver.so.1\") failed"));
}

TEST_CASE("cuda: the toolkit's stub library is recognized as no driver", "[cuda]") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) {
    WARN("[SKIP] no CUDA toolkit stub library at " << stub);
    return;
  }
  // The process-wide driver first: the stub's SONAME is libcuda.so.1, so a
  // later dlopen("libcuda.so.1") could otherwise find the stub while loaded.
  // (load() also unloads a library it rejects.)
  CudaDriver::available();
  CHECK_THROWS_WITH(CudaDriver::load(stub), Contains("cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)") &&
                                                Contains("stub library, not a driver"));
}

TEST_CASE("cuda: device selection with and without a GPU", "[cuda]") {
  auto names = tl::Device::available();
  REQUIRE(!names.empty());
  CHECK(names.back() == "interp");
  bool cuda_listed = std::find(names.begin(), names.end(), "cuda") != names.end();
  CHECK(cuda_listed == CudaDriver::available());
  if (CudaDriver::available()) {
    CHECK(tl::Device::get("cuda").name() == "cuda");
    if (!std::getenv("TILEDSL_DEVICE")) CHECK(tl::Device::get().name() == "cuda");
    return;
  }
  // No GPU: the error names the device and the reason.
  CHECK_THROWS_WITH(tl::Device::get("cuda"), Contains("device 'cuda' is not available on this machine") &&
                                                 Contains("CUDA") && Contains("available: interp"));
  CHECK_THROWS_WITH(CudaDriver::get(), Contains("no CUDA"));
  if (!std::getenv("TILEDSL_DEVICE")) CHECK(tl::Device::get().name() == "interp");
}

TEST_CASE("device timing on the interpreter", "[cuda]") {
  auto dev = tl::Device::get("interp");
  int calls = 0;
  double ms = dev.time_ms([&] { ++calls; }, 5);
  CHECK(calls == 6);  // one untimed warm-up, then five
  CHECK(ms >= 0);
  CHECK_THROWS_WITH(dev.time_ms([] {}, 0), Contains("reps >= 1"));
  auto stats = dev.compile_stats();
  CHECK(stats.compiles == 0);
}

TEST_CASE("cuda: memory round trip", "[gpu]") {
  if (!have_gpu()) return;
  auto dev = tl::Device::get("cuda");
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i) * 0.5f;
  auto buf = dev.upload(host);
  CHECK(buf.download<float>() == host);
  auto empty = dev.alloc<float>(0);
  CHECK(empty.download<float>().empty());
}

TEST_CASE("cuda: launch with kernel reuse and event timing", "[gpu]") {
  if (!have_gpu()) return;
  auto dev = tl::Device::get("cuda");
  // A fresh kernel cache directory would need a second process; instead,
  // count compiles through this device's statistics.
  tl::Kernel k = tl::compile(axpy_kernel<256>, {.name = "axpy"});
  const int n = 10'000;  // not a multiple of the block: the last program is masked
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[size_t(i)] = float(i % 97), hy[size_t(i)] = float(i % 13) - 6.0f;
  auto x = dev.upload(hx);
  auto y = dev.upload(hy);
  auto before = dev.compile_stats();
  tl::Grid grid{uint32_t((n + 255) / 256)};
  dev(k, grid, x, y, 2.0f, n);
  dev.synchronize();
  auto got = y.download<float>();
  for (int i = 0; i < n; ++i) REQUIRE(got[size_t(i)] == hx[size_t(i)] * 2.0f + hy[size_t(i)]);
  auto after = dev.compile_stats();
  CHECK(after.modules_loaded == before.modules_loaded + 1);

  // The same specialization launches without loading anything again.
  dev(k, grid, x, y, 0.0f, n);
  CHECK(dev.compile_stats().modules_loaded == after.modules_loaded);

  double ms = dev.time_ms([&] { dev(k, grid, x, y, 0.0f, n); }, 20);
  CHECK(ms > 0);
  CHECK(ms < 1000);
}
