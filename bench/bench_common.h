// What the benchmarks share: the device they run on (the best one present,
// or TILEDSL_DEVICE's), inputs of normally distributed values, and the
// GB/s counter of the memory-bound ones.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
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

// Runs the benchmark's iterations, each timing with `time_ms` (the mean of
// its launches, in ms) as the iteration's time, and returns the median of
// those timings (0 with none): what the rate counters report, since a
// counter set in every iteration keeps only the last timing.
// The median of `xs` (0 when empty).
inline double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

template <class F>
double median_ms(benchmark::State& state, F time_ms) {
  std::vector<double> times;
  for (auto _ : state) {
    double ms = time_ms();
    state.SetIterationTime(ms / 1e3);
    times.push_back(ms);
  }
  return median(times);
}

// `ms` moving `bytes` (median_ms's): GB/s and ms counters.
inline void report_bandwidth(benchmark::State& state, double ms, double bytes) {
  if (ms <= 0) return;
  state.counters["GB/s"] = benchmark::Counter(bytes / (ms / 1e3) / 1e9);
  state.counters["ms"] = ms;
}

}  // namespace bench
