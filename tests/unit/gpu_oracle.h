// The [gpu] tests' oracle: run a body on the interpreter and on the GPU and
// compare what each returns. Tests using it skip, saying so, without a GPU.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tiledsl/tiledsl.h"

namespace gpu_oracle {

using namespace tl;

inline bool have_gpu() {
  auto names = Device::available();
  return std::find(names.begin(), names.end(), "cuda") != names.end();
}

template <class T>
std::vector<T> random(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(rng));
  return v;
}

// Runs `body` on the interpreter and on the GPU; each returns its outputs.
template <class T>
void same_on_both(const std::function<std::vector<std::vector<T>>(Device&)>& body, double rtol, double atol) {
  Device interp = Device::get("interp"), gpu = Device::get("cuda");
  auto want = body(interp);
  auto got = body(gpu);
  REQUIRE(want.size() == got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    REQUIRE(want[o].size() == got[o].size());
    for (size_t i = 0; i < want[o].size(); ++i) {
      double w = double(want[o][i]), g = double(got[o][i]);
      if ((std::isnan(w) && std::isnan(g)) || w == g) continue;  // equal infinities too
      INFO("output " << o << " element " << i << ": interp " << w << ", gpu " << g);
      REQUIRE(std::abs(w - g) <= atol + rtol * std::abs(w));
    }
  }
}

// Kernel `k` (out, in, count) on `grid` programs, on both devices: `in`
// holds `in_elems` random values of T in [lo, hi) from `seed`, `out`
// `out_elems` f32, which are compared.
template <class T>
void same_out(const Kernel& k, Grid grid, size_t in_elems, float lo, float hi, unsigned seed, size_t out_elems,
              int count, double rtol, double atol) {
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<T>(in_elems, lo, hi, seed));
    auto out = d.alloc<float>(out_elems);
    d(k, grid, out, x, count);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, rtol, atol);
}

}  // namespace gpu_oracle

#define REQUIRE_GPU()                                                            \
  if (!gpu_oracle::have_gpu()) {                                                 \
    WARN("[SKIP] no GPU: " << Catch::getResultCapture().getCurrentTestName());  \
    return;                                                                      \
  }
