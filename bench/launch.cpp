// Launch overhead (issue 16 §2): time per launch of a small kernel (one
// program of 128 threads scaling 128 floats), back to back, through
//
//   tiledsl/device   dev(k, grid, x, n): argument checks, the launcher's
//                    lookup, the parameter array, cuLaunchKernel
//   tiledsl/stream   the same on a tl::Stream the benchmark made
//   host_path        the launch path's own host work, without a GPU:
//                    Launcher::load (found after the first launch) and the
//                    parameter array, with a driver that loads nothing
//   raw/cuLaunchKernel  the same cubin loaded by hand and launched with
//                    cuLaunchKernel directly: the driver's own cost
//   graph/replay     100 tiledsl launches captured into a CUDA graph, the
//                    graph replayed; time per captured launch
//
// reported as `us_per_launch`. The CUDA rows need a GPU and skip (with a
// message) without one. Triton's launcher is measured from Python
// (bench/compare_*.py style), not here.
//
//   bench_launch --benchmark_format=json --benchmark_out=launch.json
//
// Uses the compiler's internal headers (lib/, backends/) for the raw and
// host-path rows.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "codegen/compile.h"
#include "nvptx/cuda_device.h"
#include "nvptx/cuda_driver.h"
#include "runtime/launcher.h"
#include "tiledsl/tiledsl.h"

namespace {

using namespace tl;
using nvptx::CudaDriver;

constexpr int BLOCK = 128;

void launch_scale(ptr<float> x, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                   // [BLOCK] i1
  store(x + offs, load(x + offs, mask) * 1.0001f, mask);
}

const Kernel& kernel() {
  static Kernel k = compile(launch_scale, {.name = "launch_scale"});
  return k;
}

bool have_cuda() {
  auto names = Device::available();
  return std::find(names.begin(), names.end(), "cuda") != names.end();
}

using Clock = std::chrono::steady_clock;

// Microseconds per launch since `t0` (the loop and its final
// synchronization), as the counter every row reports.
void per_launch(benchmark::State& state, int64_t launches, Clock::time_point t0) {
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  state.counters["us_per_launch"] = launches ? us / double(launches) : 0.0;
}

void tiledsl_device(benchmark::State& state) {
  Device dev = Device::get();
  auto x = dev.alloc<float>(BLOCK);
  dev(kernel(), Grid{1}, x, BLOCK);  // compiles and loads
  dev.synchronize();
  auto t0 = Clock::now();
  for (auto _ : state) dev(kernel(), Grid{1}, x, BLOCK);
  dev.synchronize();
  per_launch(state, state.iterations(), t0);
  state.SetLabel(dev.name());
}

void tiledsl_stream(benchmark::State& state) {
  Device dev = Device::get();
  auto x = dev.alloc<float>(BLOCK);
  Stream s = dev.create_stream();
  s(kernel(), Grid{1}, x, BLOCK);
  s.synchronize();
  auto t0 = Clock::now();
  for (auto _ : state) s(kernel(), Grid{1}, x, BLOCK);
  s.synchronize();
  per_launch(state, state.iterations(), t0);
  state.SetLabel(dev.name());
}

// Launcher::load and KernelParams, as CudaDevice::launch calls them, with a
// driver that links and loads nothing: the host work of a launch that
// tiledsl adds to the driver's.
void host_path(benchmark::State& state) {
  static int handle = 0;
  runtime::KernelCache cache{""};  // memory only
  runtime::Launcher launcher(
      runtime::GpuDriver{.device = "bench",
                         .target = "sm_80",
                         .gpu_name = "none",
                         .max_shared_bytes = 1 << 20,
                         .shared_memory = "shared memory",
                         .link = [](const detail::KernelImpl&,
                                    const codegen::CompiledKernel& ck) { return runtime::Bytes(ck.assembly.begin(), ck.assembly.end()); },
                         .linker = {},
                         .load = [](const detail::KernelImpl&, const runtime::CachedBinary&, bool) -> void* {
                           return &handle;
                         }},
      cache);
  std::vector<detail::LaunchArg> args = {detail::LaunchArg{kernel().params()[0], 0x10000, 0, 0},
                                         detail::LaunchArg{kernel().params()[1], 0, BLOCK, 0}};
  launcher.load(*kernel().impl(), args);
  auto t0 = Clock::now();
  for (auto _ : state) {
    auto loaded = launcher.load(*kernel().impl(), args);
    runtime::KernelParams params(args, "bench");
    benchmark::DoNotOptimize(params.data());
    benchmark::DoNotOptimize(loaded.get());
  }
  per_launch(state, state.iterations(), t0);
}

// The kernel's cubin loaded by hand, for the raw driver row.
struct RawKernel {
  nvptx::CUfunction function = nullptr;
  int threads = 0;
};

RawKernel load_raw(const CudaDriver& d, const std::vector<detail::LaunchArg>& args) {
  int major = 0, minor = 0;
  nvptx::CUdevice device = 0;
  d.check(d.cuDeviceGet(&device, 0), "cuDeviceGet");
  d.check(d.cuDeviceGetAttribute(&major, nvptx::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "attr");
  d.check(d.cuDeviceGetAttribute(&minor, nvptx::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "attr");
  std::string target = nvptx::cuda_target_for(major, minor, [](const std::string& t) { return codegen::is_known_target(t); });
  codegen::CompiledKernel ck = codegen::compile(*kernel().impl(), runtime::specialize(args), target);
  auto cubin = nvptx::link_ptx_to_cubin(d, ck.assembly, "launch_scale");
  nvptx::CUmodule module = nullptr;
  d.check(d.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr), "cuModuleLoadDataEx");
  RawKernel raw;
  d.check(d.cuModuleGetFunction(&raw.function, module, ck.entry.c_str()), "cuModuleGetFunction");
  raw.threads = ck.threads;
  return raw;
}

void raw_cu_launch_kernel(benchmark::State& state) {
  if (!have_cuda()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  Device dev = Device::get("cuda");
  auto x = dev.alloc<float>(BLOCK);
  dev.synchronize();  // the device's context is current on this thread
  const CudaDriver& d = CudaDriver::get();
  std::vector<detail::LaunchArg> args = {detail::LaunchArg{kernel().params()[0], x.device_address(), 0, 0},
                                         detail::LaunchArg{kernel().params()[1], 0, BLOCK, 0}};
  RawKernel raw = load_raw(d, args);
  auto stream = static_cast<nvptx::CUstream>(dev.stream().native());
  runtime::KernelParams params(args, "cuda");
  auto t0 = Clock::now();
  for (auto _ : state)
    d.cuLaunchKernel(raw.function, 1, 1, 1, unsigned(raw.threads), 1, 1, 0, stream, params.data(), nullptr);
  d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
  per_launch(state, state.iterations(), t0);
}

void graph_replay(benchmark::State& state) {
  if (!have_cuda()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  constexpr int kLaunches = 100;
  Device dev = Device::get("cuda");
  auto x = dev.alloc<float>(BLOCK);
  Stream s = dev.create_stream();
  s(kernel(), Grid{1}, x, BLOCK);
  s.synchronize();
  const CudaDriver& d = CudaDriver::get();
  auto stream = static_cast<nvptx::CUstream>(s.native());
  d.check(d.cuStreamBeginCapture(stream, nvptx::CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture_v2");
  for (int i = 0; i < kLaunches; ++i) s(kernel(), Grid{1}, x, BLOCK);
  nvptx::CUgraph graph = nullptr;
  d.check(d.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  nvptx::CUgraphExec exec = nullptr;
  d.check(d.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  auto t0 = Clock::now();
  for (auto _ : state) d.check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  s.synchronize();
  per_launch(state, state.iterations() * kLaunches, t0);
  d.check(d.cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  d.check(d.cuGraphDestroy(graph), "cuGraphDestroy");
}

}  // namespace

BENCHMARK(tiledsl_device)->Name("tiledsl/device")->UseRealTime();
BENCHMARK(tiledsl_stream)->Name("tiledsl/stream")->UseRealTime();
BENCHMARK(host_path)->Name("host_path")->UseRealTime();
BENCHMARK(raw_cu_launch_kernel)->Name("raw/cuLaunchKernel")->UseRealTime();
BENCHMARK(graph_replay)->Name("graph/replay")->UseRealTime();

BENCHMARK_MAIN();
