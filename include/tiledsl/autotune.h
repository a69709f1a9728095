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
// and whether its address is 16-byte aligned, the device's target, its GPU
// and driver version (Device::hardware) and the compiler's version. The
// first launch of a key compiles every configuration (one that fails to
// compile or launch is dropped, with its reason), times each on the
// launch's own arguments (device events, AutotuneOptions::samples samples
// of `reps` launches, the median), keeps the fastest, then launches it
// once. Buffers a kernel may write (the
// pointers its stores and atomics go through) are saved before tuning and
// put back after each configuration's runs, so the launch writes them once,
// as an untuned launch would. Later launches of the key use the winner
// directly; so does another process: winners are kept on disk beside the
// kernel cache (TILEDSL_CACHE_DIR, else $HOME/.cache/tiledsl), in
// autotune-<name>.tsv, a line per key.
//
// TILEDSL_PRINT_AUTOTUNING=1 prints each configuration's time (or why it
// was dropped), its estimate under a cost model, the pick, and how well the
// estimates ranked the times, on stderr.
//
// The configurations compile in parallel (Device::prepare on worker
// threads) while the ones already compiled are measured.
//
// AutotuneOptions::keep, cost_model and top_k prune the list as Triton's
// prune_configs_by does. Not yet: a built-in cost model (occupancy, waves,
// the kernel's arithmetic intensity) for tuners that give none (issue 15).
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cmath>
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
  // Arguments this configuration's kernel takes after the launch's own
  // (a workspace sized from them: a stream-K gemm's partial sums), made
  // from the launch's device and arguments before each launch of it, the
  // tuning runs included; they are not part of the key, and what the
  // kernel writes through them is not put back after a tuning run (a
  // workspace's contents are the kernel's). Empty: none.
  std::function<std::vector<Arg>(Device&, const std::vector<Arg>&)> extra_args{};
};

// The grid of a launch under one configuration.
using TuneGrid = std::function<Grid(const TuneConfig&)>;

struct AutotuneOptions {
  // Indices of the launch arguments (integers) whose values key the
  // tuning; empty: every integer argument.
  std::vector<int> key_args{};
  int reps = 20;    // launches timed in one sample (the interpreter: 1)
  int samples = 5;  // samples a configuration; its time is their median (the interpreter: 1)
  // Triton's prune_configs_by. `keep` (early_config_prune): whether a
  // configuration is worth trying for these arguments at all (a tile
  // larger than the problem, say); the others are dropped, with that
  // reason, before anything compiles. `cost_model` (perf_model): an
  // estimate of a configuration's time on these arguments, in any unit
  // (smaller is faster); configurations are compiled and measured in its
  // order, and with `top_k` > 0 only the top_k best estimated are (the
  // rest are dropped as ranked out). Without a cost model top_k is ignored
  // and every configuration is measured.
  std::function<bool(const TuneConfig&, const std::vector<Arg>&)> keep{};
  std::function<double(const TuneConfig&, const std::vector<Arg>&)> cost_model{};
  int top_k = 0;
};

// What the last tuning of a tuner did (Autotuner::last_tuning), for
// reports and benchmarks: each configuration's estimate and time, and how
// well the estimates ranked the times.
struct TuningReport {
  struct Entry {
    std::string name;
    double estimate = NAN;  // the cost model's (NaN without one)
    double ms = NAN;        // measured (NaN when not measured)
    std::string dropped{};  // why it was not measured ("" when it was)
  };
  std::string key{};
  std::vector<Entry> configs{};
  std::string picked{};
  // Spearman's rank correlation between the estimates and the measured
  // times over the configurations that have both (1: the model ranks them
  // exactly as measured; NaN with fewer than two), and the picked
  // configuration's place in the model's order (1: the model's first
  // choice; 0 without a model).
  double rank_correlation = NAN;
  int picked_model_rank = 0;
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
  // The device of a launch and the caller's line (as Device::Site).
  struct Site {
    Device& dev;
    std::source_location where;
    Site(Device& d, std::source_location w = std::source_location::current()) : dev(d), where(w) {}
  };
  template <class... A>
  void operator()(Site d, const TuneGrid& grid, A&&... args) {
    launch(d.dev, grid, std::vector<Arg>{Arg(std::forward<A>(args))...}, d.where);
  }

  // The configuration the key of `args` resolves to on `dev`, tuning if the
  // key is new (the tuning runs leave the written buffers as they were).
  const TuneConfig& pick(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args,
                         std::source_location where = std::source_location::current());

  // Configurations measured by this tuner in this process (for tests and
  // reports: 0 when every key came from memory or disk).
  int64_t measured() const;
  // The last tuning this tuner ran in this process (an empty report if it
  // ran none: every key came from memory or disk).
  TuningReport last_tuning() const;

 private:
  std::shared_ptr<detail::AutotunerImpl> impl_;
};

}  // namespace tl

#pragma GCC visibility pop
