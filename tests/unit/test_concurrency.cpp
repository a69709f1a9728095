// Several threads using one process's compiler at once: tracing kernels,
// launching on one interpreter device, and compiling for a GPU target through
// the inspector (lowering and LLVM code generation side by side). Each thread
// must get what it gets alone. `make tsan` runs these ([concurrency]) with the
// kernel cache's tests under ThreadSanitizer, which reports any data race
// they exercise even when the results come out right.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codegen/compile.h"
#include "codegen_checks.h"
#include "tiledsl/tiledsl.h"

namespace fs = std::filesystem;

namespace {

constexpr int kThreads = 4;

// x[i] = x[i] * FACTOR + i for i < n.
template <int BLOCK, int FACTOR>
void scale_shift(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  auto v = tl::load(x + offs, mask);                             // [BLOCK] f32
  tl::store(x + offs, v * float(FACTOR) + tl::cast<float>(offs), mask);
}

// One kernel per thread index, distinct in IR (the factor, T + 3: no 2.0,
// which LLVM turns into an add) and name.
template <int T>
tl::Kernel kernel_for() {
  return tl::compile(scale_shift<64, T + 3>, {.name = "scale" + std::to_string(T)});
}
std::vector<tl::Kernel> distinct_kernels() {
  return [&]<int... T>(std::integer_sequence<int, T...>) {
    return std::vector<tl::Kernel>{kernel_for<T>()...};
  }(std::make_integer_sequence<int, kThreads>());
}

// Runs fn(t) on kThreads threads at once and joins them.
template <class F>
void on_threads(F fn) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&fn, t] { fn(t); });
  for (auto& th : threads) th.join();
}

// Everything the calling process writes to stdout while fn runs.
template <class F>
std::string capture_stdout(F fn) {
  fs::path file = fs::temp_directory_path() / ("tiledsl-concurrency-" + std::to_string(getpid()) + ".txt");
  std::cout.flush();
  std::fflush(stdout);
  int saved = dup(1);
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dup2(fd, 1);
  ::close(fd);
  fn();
  std::cout.flush();
  std::fflush(stdout);
  dup2(saved, 1);
  ::close(saved);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(file);
  return text.str();
}

}  // namespace

TEST_CASE("threads tracing at once each get their own kernel's IR", "[concurrency]") {
  std::vector<std::string> alone;
  for (const auto& k : distinct_kernels()) alone.push_back(k.ir());
  std::vector<std::vector<std::string>> seen(kThreads);
  on_threads([&](int t) {
    for (int round = 0; round < 5; ++round)
      for (const auto& k : distinct_kernels()) seen[size_t(t)].push_back(k.ir());
  });
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(seen[size_t(t)].size() == 5 * alone.size());
    for (size_t i = 0; i < seen[size_t(t)].size(); ++i) {
      INFO("thread " << t << ", kernel " << i % alone.size());
      CHECK(seen[size_t(t)][i] == alone[i % alone.size()]);
    }
  }
}

TEST_CASE("threads launching on one interpreter device at once", "[concurrency]") {
  tl::Device dev = tl::Device::get("interp");
  constexpr int n = 300;
  auto expected = [](int factor) {
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[size_t(i)] = float(i % 7) * float(factor) + float(i);
    return v;
  };
  std::vector<float> input(n);
  for (int i = 0; i < n; ++i) input[size_t(i)] = float(i % 7);

  // One kernel shared by every thread (its first launch compiles it for the
  // interpreter, from whichever thread gets there first), then one each.
  tl::Kernel shared = kernel_for<0>();
  std::vector<tl::Kernel> own = distinct_kernels();
  std::vector<std::vector<float>> out_shared(kThreads), out_own(kThreads);
  on_threads([&](int t) {
    tl::Buffer a = dev.upload(input), b = dev.upload(input);
    for (int round = 0; round < 3; ++round) {
      a.upload(input);
      b.upload(input);
      dev(shared, tl::Grid{uint32_t(tl::cdiv(n, 64))}, a, n);
      dev(own[size_t(t)], tl::Grid{uint32_t(tl::cdiv(n, 64))}, b, n);
      dev.synchronize();
    }
    out_shared[size_t(t)] = a.download<float>();
    out_own[size_t(t)] = b.download<float>();
  });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(out_shared[size_t(t)] == expected(3));
    CHECK(out_own[size_t(t)] == expected(t + 3));
  }
}

TEST_CASE("threads compiling for a GPU target at once (inspector)", "[concurrency]") {
  // Each launch on the inspector lowers the kernel and runs LLVM's code
  // generator for sm_90a; four different kernels compile side by side.
  std::vector<tl::Kernel> kernels = distinct_kernels();
  auto dev = tl::Device::inspector("sm_90a", "asm");
  std::vector<tl::Buffer> buffers;
  for (int t = 0; t < kThreads; ++t) buffers.push_back(dev.alloc<float>(256));
  std::string text = capture_stdout([&] {
    on_threads([&](int t) { dev(kernels[size_t(t)], tl::Grid{4}, buffers[size_t(t)], 256); });
  });
  // Each kernel printed once and whole: its header, then its own PTX (the
  // factor as a PTX float constant), then its end line, with no other
  // kernel's text in between.
  for (int t = 0; t < kThreads; ++t) {
    std::string name = "scale" + std::to_string(t);
    INFO(name);
    size_t begin = text.find("// kernel '" + name + "' for sm_90a");
    REQUIRE(begin != std::string::npos);
    CHECK(text.find("// kernel '" + name + "'", begin + 1) == std::string::npos);
    size_t end = text.find("// end of kernel '" + name + "'", begin);
    REQUIRE(end != std::string::npos);
    std::string body = text.substr(begin, end - begin);
    CHECK(body.find("// kernel '", 1) == std::string::npos);
    CHECK(body.find(".entry") != std::string::npos);
    char factor[16];
    std::snprintf(factor, sizeof factor, "0f%08X", std::bit_cast<uint32_t>(float(t + 3)));
    CHECK_THAT(body, Catch::Contains(factor));
  }
}

TEST_CASE("threads compiling one kernel at once each get the code it gets alone", "[concurrency]") {
  // Each compile runs LLVM on a target machine of its own (lent by the
  // target's pool): the code must not depend on which one, nor on what the
  // other threads compile beside it.
  tl::Kernel k = distinct_kernels()[1];
  auto spec = codegen_checks::aligned(k);
  for (const char* target : {"sm_90a", "gfx942"}) {
    INFO(target);
    std::string alone = tl::codegen::emit_stage(*k.impl(), spec, target, tl::codegen::Stage::Asm);
    REQUIRE(alone.size() > 100);
    std::vector<std::string> each(kThreads);
    on_threads([&](int t) { each[size_t(t)] = tl::codegen::emit_stage(*k.impl(), spec, target, tl::codegen::Stage::Asm); });
    for (int t = 0; t < kThreads; ++t) CHECK(each[size_t(t)] == alone);
  }
}
