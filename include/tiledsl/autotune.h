// Autotuning: Triton's @triton.autotune in C++. An Autotuner holds a list
// of configurations of one kernel (each a template instantiation with its
// compile options, and the values its launch grid reads) and launches the
// one that measured fastest for the launch's key:
//
//   template <int BLOCK> void scale(tl::ptr<float> x, tl::scalar<int32_t> n);
//   tl::Autotuner tuner("scale", {
//       {"64:4", [] { return tl::compile(scale<64>, {.name = "scale", .num_warps = 4}); }, {{"BLOCK", 64}}},
//       {"256:8", [] { return tl::compile(scale<256>, {.name = "scale", .num_warps = 8}); }, {{"BLOCK", 256}}},
//   });
//   tuner(dev, [&](const tl::TuneConfig& c) { return tl::Grid{uint32_t(tl::cdiv(n, c.meta.at("BLOCK")))}; }, x, n);
//
// The key of a launch: the values of its integer arguments (those named by
// AutotuneOptions::key_args, else all of them), each buffer's element type
// and whether its address is 16-byte aligned, the device's target and the
// compiler's version. The first launch of a key compiles every
// configuration (one that fails to compile or launch is dropped, with its
// reason), times each on the launch's own arguments (device events,
// AutotuneOptions::samples samples of `reps` launches, the median), keeps
// the fastest, then launches it once. Buffers a kernel may write (the
// pointers its stores and atomics go through) are saved before tuning and
// put back after each configuration's runs, so the launch writes them once,
// as an untuned launch would. Later launches of the key use the winner
// directly; so does another process: winners are kept on disk beside the
// kernel cache (TILEDSL_CACHE_DIR, else $HOME/.cache/tiledsl), in
// autotune-<name>.tsv, a line per key.
//
// TILEDSL_PRINT_AUTOTUNING=1 prints each configuration's time (or why it
// was dropped) and the pick, on stderr.
//
// The configurations compile in parallel (Device::prepare on worker
// threads) while the ones already compiled are measured.
//
// Not yet: a static cost model ranking the candidates before any runs
// (issue 15).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "tiledsl/runtime.h"

namespace tl {

// One configuration: its name (what the results file and the printout say;
// unique in its tuner), how to make its kernel (called once, on first use),
// and the values a launch grid reads (Triton's META).
struct TuneConfig {
  std::string name;
  std::function<Kernel()> compile;
  std::map<std::string, int64_t> meta{};
};

// The grid of a launch under one configuration.
using TuneGrid = std::function<Grid(const TuneConfig&)>;

struct AutotuneOptions {
  // Indices of the launch arguments (integers) whose values key the
  // tuning; empty: every integer argument.
  std::vector<int> key_args{};
  int reps = 20;    // launches timed in one sample (the interpreter: 1)
  int samples = 5;  // samples a configuration; its time is their median (the interpreter: 1)
};

namespace detail {
struct AutotunerImpl;
}

class Autotuner {
 public:
  // `name` names the results file: letters, digits, '_' and '-' (a
  // tl::Error otherwise); `configs` is not empty and their names unique.
  Autotuner(std::string name, std::vector<TuneConfig> configs, AutotuneOptions options = {});

  // Launches the configuration tuned for the key of `args` on `dev` (tuning
  // first if the key is new), over `grid(config)`.
  void launch(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args,
              std::source_location where = std::source_location::current());
  template <class... A>
  void operator()(Device& dev, const TuneGrid& grid, A&&... args) {
    launch(dev, grid, std::vector<Arg>{Arg(std::forward<A>(args))...});
  }

  // The configuration the key of `args` resolves to on `dev`, tuning if the
  // key is new (the tuning runs leave the written buffers as they were).
  const TuneConfig& pick(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args,
                         std::source_location where = std::source_location::current());

  // Configurations measured by this tuner in this process (for tests and
  // reports: 0 when every key came from memory or disk).
  int64_t measured() const;

 private:
  std::shared_ptr<detail::AutotunerImpl> impl_;
};

}  // namespace tl
