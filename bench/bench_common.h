// What the benchmarks share: the device they run on (the best one present,
// or TILEDSL_DEVICE's), inputs of normally distributed values, and the
// GB/s counter of the memory-bound ones.
#pragma once

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "tiledsl/tiledsl.h"

namespace bench {

inline tl::Device& device() {
  static tl::Device dev = tl::Device::get();
  return dev;
}

// n values of T drawn from N(0, sd^2) with `seed`, on the device.
template <class T>
tl::Buffer random_buffer(size_t n, float sd = 1.0f, unsigned seed = 7) {
  std::vector<T> host(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  for (auto& v : host) v = T(dist(rng));
  return device().upload(host);
}

// One iteration of `ms` moving `bytes`: the time, and GB/s and ms counters.
inline void report_bandwidth(benchmark::State& state, double ms, double bytes) {
  state.SetIterationTime(ms / 1e3);
  state.counters["GB/s"] = benchmark::Counter(bytes / (ms / 1e3) / 1e9);
  state.counters["ms"] = ms;
}

}  // namespace bench
