// [gpu] Memory, streams and devices of other libraries (issue 16 §2) on an
// NVIDIA GPU: a buffer wrapped around memory the driver allocated directly,
// DLPack out and back in, launches on two streams ordered by an event,
// asynchronous copies, a stream another library made, and launches captured
// into a CUDA graph and replayed. test_interop.cpp runs what the
// interpreter can. Skipped, saying so, where no GPU is present.
#include <catch2/catch.hpp>
#include <dlpack/dlpack.h>

#include <vector>

#include "gpu_oracle.h"
#include "nvptx/cuda_driver.h"
#include "tiledsl/tiledsl.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tl::nvptx::CudaDriver;

namespace {

constexpr int BLOCK = 256;

void gpu_interop_add(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}

void gpu_interop_scale(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

// x += 1, `iters` times in a loop of dependent adds: slow enough
// (milliseconds at 2^22) that a stream not waiting for it would read x
// before it is done. Exact while x stays below 2^24.
void gpu_interop_slow_inc(tl::ptr<float> x, tl::scalar<int32_t> n, tl::scalar<int32_t> iters) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  auto v = tl::load(x + offs, mask);                             // [BLOCK] f32
  for (auto i : tl::range(0, iters)) {
    (void)i;
    v = v + 1.0f;
  }
  tl::store(x + offs, v, mask);
}

const tl::Kernel& add_kernel() {
  static tl::Kernel k = tl::compile(gpu_interop_add, {.name = "gpu_interop_add"});
  return k;
}
const tl::Kernel& scale_kernel() {
  static tl::Kernel k = tl::compile(gpu_interop_scale, {.name = "gpu_interop_scale"});
  return k;
}
const tl::Kernel& slow_kernel() {
  static tl::Kernel k = tl::compile(gpu_interop_slow_inc, {.name = "gpu_interop_slow_inc"});
  return k;
}
tl::Grid grid_for(int n) { return tl::Grid{uint32_t((n + BLOCK - 1) / BLOCK)}; }

// Makes GPU 0's primary context (the device's) current on this thread, for
// driver calls the test makes itself.
void make_primary_current(const CudaDriver& d) {
  tl::nvptx::CUdevice device = 0;
  tl::nvptx::CUcontext context = nullptr;
  d.check(d.cuDeviceGet(&device, 0), "cuDeviceGet");
  d.check(d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  d.check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

}  // namespace

TEST_CASE("gpu interop: a buffer wrapped around memory the driver allocated", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  const CudaDriver& d = CudaDriver::get();
  make_primary_current(d);
  const int n = 5000;
  tl::nvptx::CUdeviceptr raw = 0;
  d.check(d.cuMemAlloc(&raw, n * sizeof(float)), "cuMemAlloc_v2");
  {
    auto x = dev.upload(std::vector<float>(n, 1.5f));
    auto y = tl::Buffer::wrap<float>(dev, reinterpret_cast<void*>(uintptr_t(raw)), n);
    CHECK(y.is_wrapped());
    CHECK(y.device_address() == raw);
    std::vector<float> hy(n);
    for (int i = 0; i < n; ++i) hy[i] = float(i);
    y.upload(hy);
    auto out = dev.alloc<float>(n);
    dev(add_kernel(), grid_for(n), x, y, out, n);
    dev.synchronize();
    auto got = out.download<float>();
    for (int i = 0; i < n; ++i) REQUIRE(got[i] == float(i) + 1.5f);

    // Another tiledsl buffer's address, wrapped: the same memory.
    auto alias = tl::Buffer::wrap<float>(dev, reinterpret_cast<void*>(uintptr_t(out.device_address())), n);
    dev(scale_kernel(), grid_for(n), alias, n);
    dev.synchronize();
    CHECK(out.download<float>()[7] == 2.0f * (7 + 1.5f));
  }
  // The wrapped buffer is gone and did not free the memory: it is still the
  // driver's to free (a double free would fail here).
  make_primary_current(d);
  d.check(d.cuMemFree(raw), "cuMemFree_v2");
}

TEST_CASE("gpu interop: wrapping host memory or a missing GPU is an error naming both", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  CHECK(dev.target().rfind("sm_", 0) == 0);  // the target its kernels are compiled for
  std::vector<float> host(16);
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(dev, host.data(), 16),
                      Contains("Buffer::wrap of 16 x f32: expected a device pointer of cuda (") &&
                          Contains("which the CUDA driver does not know as GPU memory"));
  int count = CudaDriver::get().device_count();
  std::string past = "cuda:" + std::to_string(count);
  REQUIRE_THROWS_WITH(tl::Device::get(past), StartsWith("device '" + past + "' does not exist: this machine has " +
                                                        std::to_string(count) + " cuda device"));
  if (count > 1) {
    auto second = tl::Device::get("cuda:1");
    CHECK(second.name() == "cuda:1");
    CHECK(second.index() == 1);
    auto b = second.upload(std::vector<float>(8, 3.0f));
    second(scale_kernel(), tl::Grid{1}, b, 8);
    second.synchronize();
    CHECK(b.download<float>() == std::vector<float>(8, 6.0f));
    // GPU 1's memory is not GPU 0's.
    REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(dev, reinterpret_cast<void*>(uintptr_t(b.device_address())), 8),
                        Contains("memory of GPU 1"));
  } else {
    WARN("[SKIP] one GPU: cuda:1 not tried");
  }
}

TEST_CASE("gpu interop: two streams ordered by an event, with asynchronous copies", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  const int n = 1 << 16, iters = 1 << 22;
  std::vector<float> hx(n, 0.0f), hy(n), hout(n, -1.0f);
  for (int i = 0; i < n; ++i) hy[i] = float(i % 100);
  auto x = dev.alloc<float>(n), y = dev.alloc<float>(n), out = dev.alloc<float>(n);
  // Compiled and loaded first (for the same specialization: iters
  // divisible by 16), so that the timing below is the kernels'.
  dev(slow_kernel(), grid_for(n), x, n, 16);
  dev(add_kernel(), grid_for(n), x, y, out, n);
  dev.synchronize();

  tl::Stream s1 = dev.create_stream(), s2 = dev.create_stream();
  CHECK(s1.native() != nullptr);
  CHECK(s1.native() != s2.native());
  tl::Event start = dev.create_event(), slow_done = dev.create_event(), done = dev.create_event();
  start.record(s1);
  x.copy_from_host_async(hx.data(), n * sizeof(float), s1);
  y.copy_from_host_async(hy.data(), n * sizeof(float), s1);
  s1(slow_kernel(), grid_for(n), x, n, iters);  // x = iters
  slow_done.record(s1);
  s2.wait(slow_done);
  s2(add_kernel(), grid_for(n), x, y, out, n);  // reads x only after the slow kernel
  out.copy_to_host_async(hout.data(), n * sizeof(float), s2);
  done.record(s2);
  done.synchronize();
  for (int i = 0; i < n; ++i) REQUIRE(hout[i] == float(iters) + float(i % 100));
  double ms = tl::Event::elapsed_ms(start, slow_done);
  INFO("slow kernel with its copies: " << ms << " ms");
  CHECK(ms > 0.0);
  s1.synchronize();
}

TEST_CASE("gpu interop: a stream another library made", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  const CudaDriver& d = CudaDriver::get();
  make_primary_current(d);
  tl::nvptx::CUstream raw = nullptr;
  d.check(d.cuStreamCreate(&raw, tl::nvptx::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  {
    tl::Stream s = tl::Stream::wrap(dev, raw);
    CHECK(s.native() == raw);
    auto x = dev.upload(std::vector<float>(1000, 1.0f));
    s(scale_kernel(), grid_for(1000), x, 1000);
    s.synchronize();
    CHECK(x.download<float>() == std::vector<float>(1000, 2.0f));
    // The null stream (the CUDA runtime's default) is accepted as well.
    tl::Stream legacy = tl::Stream::wrap(dev, nullptr);
    legacy(scale_kernel(), grid_for(1000), x, 1000);
    legacy.synchronize();
    CHECK(x.download<float>() == std::vector<float>(1000, 4.0f));
  }
  // Not destroyed by the Stream that wrapped it: still ours to destroy.
  make_primary_current(d);
  d.check(d.cuStreamDestroy(raw), "cuStreamDestroy_v2");
}

TEST_CASE("gpu interop: launches captured into a CUDA graph and replayed", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  const CudaDriver& d = CudaDriver::get();
  const int n = 3000;
  auto x = dev.upload(std::vector<float>(n, 1.0f));
  tl::Stream s = dev.create_stream();
  // The first launch compiles and loads the kernel: before the capture.
  s(scale_kernel(), grid_for(n), x, n);
  s.synchronize();
  x.upload(std::vector<float>(n, 1.0f));

  auto stream = static_cast<tl::nvptx::CUstream>(s.native());
  make_primary_current(d);
  // Global mode: any call that is not legal while a stream captures (a
  // synchronous copy, an allocation, a context synchronize) fails the
  // capture, from any thread.
  d.check(d.cuStreamBeginCapture(stream, tl::nvptx::CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture_v2");
  try {
    s(scale_kernel(), grid_for(n), x, n);
    dev.launch(scale_kernel(), grid_for(n), {x, n}, s);
  } catch (...) {
    tl::nvptx::CUgraph g = nullptr;
    d.cuStreamEndCapture(stream, &g);
    if (g) d.cuGraphDestroy(g);
    throw;
  }
  tl::nvptx::CUgraph graph = nullptr;
  d.check(d.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture", "(a launch did something illegal under capture)");
  // Captured, not run.
  CHECK(x.download<float>() == std::vector<float>(n, 1.0f));
  tl::nvptx::CUgraphExec exec = nullptr;
  d.check(d.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  for (int i = 0; i < 3; ++i) d.check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  s.synchronize();
  CHECK(x.download<float>() == std::vector<float>(n, 64.0f));  // 2^(2 launches x 3 replays)
  d.check(d.cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  d.check(d.cuGraphDestroy(graph), "cuGraphDestroy");
}

TEST_CASE("gpu interop: DLPack out of a GPU buffer and back in", "[gpu][interop]") {
  REQUIRE_GPU();
  auto dev = tl::Device::get("cuda");
  auto b = dev.upload(std::vector<float>{1, 2, 3, 4});
  DLManagedTensor* m = b.to_dlpack();
  CHECK(m->dl_tensor.device.device_type == kDLCUDA);
  CHECK(m->dl_tensor.device.device_id == 0);
  CHECK(reinterpret_cast<uintptr_t>(m->dl_tensor.data) == b.device_address());
  {
    tl::Buffer back = tl::from_dlpack(m);
    CHECK(back.device().impl() == dev.impl());
    CHECK(back.device_address() == b.device_address());
    dev(scale_kernel(), tl::Grid{1}, back, 4);
    dev.synchronize();
  }  // the deleter ran: `b` is ours alone again
  CHECK(b.download<float>() == std::vector<float>{2, 4, 6, 8});
}
