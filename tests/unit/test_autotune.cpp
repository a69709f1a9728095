// tl::Autotuner (issue 15 §1) on the interpreter: the tuned launch is
// right, a kernel that writes its input writes it once (tuning runs put it
// back), configurations that do not compile or launch are dropped with
// their reason, keep / cost_model / top_k prune (Triton's
// prune_configs_by) and the last tuning's report ranks the estimates
// against the times, keys are told apart, and a second tuner of the same name
// (another process) reads the winner from disk without measuring.
#include <catch2/catch.hpp>
#include <functional>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpu_oracle.h"
#include "tiledsl/autotune.h"
#include "tiledsl/tiledsl.h"

using Catch::Matchers::Contains;

namespace {

// x[i] += 1 over n elements: writes its input in place.
template <int BLOCK>
void bump(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) + 1.0f, mask);
}

// bump, and a count of the programs that ran added to calls[0]: a kernel
// with an argument of its own beside the launch's (TuneConfig::extra_args).
template <int BLOCK>
void bump_counted(tl::ptr<float> x, tl::scalar<int32_t> n, tl::ptr<int32_t> calls) {
  bump<BLOCK>(x, n);
  tl::atomic_add(calls, 1);
}

// y[i] += x[i] over 256 elements a program, BLOCK at a time through
// pointers the loop carries (and, when `pick`, a pointer chosen by an
// `if_`): its stores write through no argument directly.
template <int BLOCK>
void accumulate(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> pick) {
  auto o = tl::program_id(0) * 256 + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto px = x + o, py = y + o;
  for (auto i : tl::range(0, 256 / BLOCK)) {
    (void)i;
    auto dst = px;
    tl::if_(pick != 0, [&] { dst = py; });  // dst: py, assigned in a branch (an if result)
    tl::store(dst, tl::load(py) + tl::load(px));
    px = px + BLOCK;
    py = py + BLOCK;
  }
}

// A cache folder of its own for the test, removed after it.
struct TempCacheDir {
  std::filesystem::path dir;
  std::string old;
  bool had_old = false;
  TempCacheDir() {
    dir = std::filesystem::temp_directory_path() / ("tiledsl-autotune-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    if (const char* o = std::getenv("TILEDSL_CACHE_DIR")) {
      old = o;
      had_old = true;
    }
    ::setenv("TILEDSL_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCacheDir() {
    if (had_old) ::setenv("TILEDSL_CACHE_DIR", old.c_str(), 1);
    else ::unsetenv("TILEDSL_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
};

template <int BLOCK>
tl::TuneConfig bump_config(std::atomic<int>& compiles) {
  return {std::to_string(BLOCK), [&compiles] {
            ++compiles;
            return tl::compile(bump<BLOCK>, {.name = "bump"});
          },
          {{"BLOCK", BLOCK}}};
}

tl::TuneGrid grid_for(int n) {
  return [n](const tl::TuneConfig& c) { return tl::Grid{uint32_t(tl::cdiv(n, int(c.meta.at("BLOCK"))))}; };
}

}  // namespace

TEST_CASE("autotune: the tuned launch writes its input once; winners persist per key", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  std::atomic<int> compiles{0};
  auto configs = [&] {
    return std::vector<tl::TuneConfig>{bump_config<32>(compiles), bump_config<64>(compiles),
                                       bump_config<128>(compiles)};
  };
  tl::Autotuner tuner("bump", configs());
  for (int n : {100, 1000}) {
    INFO(n << " elements");
    std::vector<float> host(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) host[size_t(i)] = float(i);
    auto x = dev.upload(host);
    tuner(dev, grid_for(n), x, n);
    auto got = x.download<float>();
    for (int i = 0; i < n; ++i) REQUIRE(got[size_t(i)] == float(i) + 1.0f);  // once, not once a tuning run
  }
  CHECK(tuner.measured() == 6);  // two keys (n = 100, 1000), three configurations each
  CHECK(compiles == 3);          // each configuration compiled once
  // The same key again: no measuring.
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  tuner(dev, grid_for(100), x, 100);
  CHECK(tuner.measured() == 6);
  CHECK(x.download<float>() == std::vector<float>(100, 1.0f));
  // The results file: a line per key.
  std::ifstream in(cache.dir / "autotune-bump.tsv");
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    CHECK_THAT(line, Contains("interp "));
  }
  CHECK(lines == 2);
  // Another tuner of the same name (another process) reads the winners:
  // it compiles the winning configuration only, and measures nothing.
  compiles = 0;
  tl::Autotuner again("bump", configs());
  auto y = dev.upload(std::vector<float>(1000, 2.0f));
  const tl::TuneConfig& picked = again.pick(dev, grid_for(1000), {y, 1000});
  CHECK(again.measured() == 0);
  CHECK(compiles == 1);
  again(dev, grid_for(1000), y, 1000);
  CHECK(y.download<float>() == std::vector<float>(1000, 3.0f));
  CHECK((picked.name == "32" || picked.name == "64" || picked.name == "128"));
}

// A results file whose last line was cut off (a process killed while it
// wrote): the next record starts on a line of its own, so the process
// after it reads the winner (the record was once read as the cut line's
// rest, and that key tuned again).
TEST_CASE("autotune: a results line cut off does not swallow the next record", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  std::atomic<int> compiles{0};
  auto configs = [&] { return std::vector<tl::TuneConfig>{bump_config<32>(compiles), bump_config<64>(compiles)}; };
  std::filesystem::create_directories(cache.dir);
  std::ofstream(cache.dir / "autotune-bump-cut.tsv") << "interp the interpreter|some key cut o";
  tl::Autotuner tuner("bump-cut", configs());
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  tuner(dev, grid_for(100), x, 100);
  CHECK(tuner.measured() == 2);
  tl::Autotuner again("bump-cut", configs());
  again(dev, grid_for(100), x, 100);
  CHECK(again.measured() == 0);
  CHECK(x.download<float>() == std::vector<float>(100, 2.0f));
}

// The buffers put back after each configuration's runs are found through
// loop-carried pointers and values an if_ yields (a tuned launch wrote y
// once per configuration and run before).
TEST_CASE("autotune: a buffer written through a loop-carried pointer is put back", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  auto x = dev.upload(std::vector<float>(1024, 1.0f)), y = dev.upload(std::vector<float>(1024, 0.0f));
  tl::Autotuner tuner("accumulate", {{"64", [] { return tl::compile(accumulate<64>, {.name = "accumulate"}); }},
                                     {"128", [] { return tl::compile(accumulate<128>, {.name = "accumulate"}); }}});
  tuner(dev, [](const tl::TuneConfig&) { return tl::Grid{4}; }, x, y, 1);
  CHECK(tuner.measured() == 2);
  CHECK(y.download<float>() == std::vector<float>(1024, 1.0f));
  CHECK(x.download<float>() == std::vector<float>(1024, 1.0f));
}

TEST_CASE("autotune: a configuration's extra arguments follow the launch's, outside the key", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  tl::Buffer calls;  // the counted configuration's workspace, made on first use
  std::vector<size_t> seen_args;
  tl::TuneConfig counted{"counted-64", [] { return tl::compile(bump_counted<64>, {.name = "bump"}); }, {{"BLOCK", 64}},
                         [&](tl::Device& d, const std::vector<tl::Arg>& args) {
                           seen_args.push_back(args.size());
                           if (!calls.impl()) calls = d.upload(std::vector<int32_t>{0});
                           return std::vector<tl::Arg>{calls};
                         }};
  tl::Autotuner tuner("bump-extra", {counted});
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  tuner(dev, grid_for(100), x, 100);
  CHECK(x.download<float>() == std::vector<float>(100, 1.0f));  // x put back after the tuning run
  // Two programs a launch, the tuning runs and the launch: the workspace is
  // the kernel's, not put back.
  const int32_t tuned = calls.download<int32_t>()[0];
  CHECK(tuned >= 4);
  CHECK(seen_args == std::vector<size_t>{2, 2});  // the launch's own arguments: tuning, launch
  tuner(dev, grid_for(100), x, 100);  // the key again: one launch
  CHECK(calls.download<int32_t>()[0] == tuned + 2);
  // Beside a configuration without extra arguments, under the same key.
  std::atomic<int> compiles{0};
  tl::Autotuner both("bump-extra-both", {bump_config<32>(compiles), counted});
  both(dev, grid_for(100), x, 100);
  CHECK(x.download<float>() == std::vector<float>(100, 3.0f));
  CHECK(both.measured() == 2);
  // An extra_args that throws is named.
  tl::TuneConfig broken = counted;
  broken.name = "broken";
  broken.extra_args = [](tl::Device&, const std::vector<tl::Arg>&) -> std::vector<tl::Arg> {
    throw tl::Error("no workspace");
  };
  tl::Autotuner bad("bump-extra-bad", {broken});
  REQUIRE_THROWS_WITH(bad(dev, grid_for(100), x, 100),
                      Contains("autotune bump-extra-bad: TuneConfig::extra_args failed on configuration 'broken': no workspace"));
}

TEST_CASE("autotune: configurations that do not compile or launch are dropped, with why", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  std::atomic<int> compiles{0};
  std::vector<tl::TuneConfig> configs{
      {"bad-warps", [] { return tl::compile(bump<64>, {.name = "bump", .num_warps = 3}); }, {{"BLOCK", 64}}},
      bump_config<64>(compiles),
      {"huge-grid", [] { return tl::compile(bump<32>, {.name = "bump"}); }, {{"BLOCK", 0}}},
      {"throws", []() -> tl::Kernel { throw std::runtime_error("no such variant"); }, {{"BLOCK", 64}}},
      {"typo", [] { return tl::compile(bump<32>, {.name = "bump"}); }, {{"BLCK", 32}}},  // the grid's map::at throws
  };
  tl::Autotuner tuner("bump-dropped", configs);
  auto grid = [](const tl::TuneConfig& c) {
    int64_t block = c.meta.at("BLOCK");
    return block == 0 ? tl::Grid{1, 70000} : tl::Grid{uint32_t(tl::cdiv(100, int(block)))};  // y past 65535
  };
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  tuner(dev, grid, x, 100);
  CHECK(x.download<float>() == std::vector<float>(100, 1.0f));
  CHECK(tuner.measured() == 1);
  // None left: the error lists each configuration's reason.
  tl::Autotuner none("bump-none", {configs[0], configs[2], configs[3], configs[4]});
  REQUIRE_THROWS_WITH(none(dev, grid, x, 100),
                      Contains("autotune bump-none: no configuration runs for key") &&
                          Contains("bad-warps: it does not compile: ") && Contains("huge-grid: it does not launch: ") &&
                          Contains("throws: it does not compile: its compile function threw: no such variant") &&
                          Contains("typo: it does not launch: its grid (the TuneGrid function) failed: "));
  CHECK(x.download<float>() == std::vector<float>(100, 1.0f));  // untouched
}

// A tuner called again from its own callbacks while it picks: an error
// naming what happened (it once waited for itself forever).
TEST_CASE("autotune: a tuner called from its own grid function is an error, not a deadlock", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  std::atomic<int> compiles{0};
  tl::Autotuner tuner("bump-reentered", {bump_config<64>(compiles)});
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  std::function<tl::Grid(const tl::TuneConfig&)> grid = [&](const tl::TuneConfig&) {
    tuner(dev, grid, x, 100);
    return tl::Grid{2};
  };
  REQUIRE_THROWS_WITH(tuner(dev, grid, x, 100),
                      Contains("autotuner 'bump-reentered' called from one of its own callbacks"));
  tl::Autotuner counts("bump-counted", {bump_config<64>(compiles)});
  auto asks = [&](const tl::TuneConfig&) {
    (void)counts.measured();
    return tl::Grid{2};
  };
  REQUIRE_THROWS_WITH(counts(dev, asks, x, 100), Contains("Autotuner::measured: autotuner 'bump-counted' called from"));
  CHECK(x.download<float>() == std::vector<float>(100, 0.0f));  // untouched
}

TEST_CASE("autotune: keep, cost_model and top_k prune before anything compiles", "[runtime][autotune]") {
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  std::atomic<int> compiles{0};
  auto configs = [&] {
    return std::vector<tl::TuneConfig>{bump_config<32>(compiles), bump_config<64>(compiles),
                                       bump_config<128>(compiles), bump_config<256>(compiles)};
  };
  // keep: blocks larger than the problem are not worth a try (Triton's
  // early_config_prune); the model estimates the smallest block fastest,
  // and only its best two are measured.
  auto n_of = [](const std::vector<tl::Arg>& args) { return args[1].i; };
  tl::Autotuner tuner("bump-pruned", configs(),
                      {.keep = [&](const tl::TuneConfig& c, const std::vector<tl::Arg>& args) {
                         return c.meta.at("BLOCK") <= n_of(args);
                       },
                       .cost_model = [](const tl::TuneConfig& c, const std::vector<tl::Arg>&) {
                         return double(c.meta.at("BLOCK"));
                       },
                       .top_k = 2});
  auto big = dev.upload(std::vector<float>(200, 0.0f));
  tuner(dev, grid_for(200), big, 200);  // 256 is larger than the problem
  CHECK(big.download<float>() == std::vector<float>(200, 1.0f));
  CHECK(tuner.measured() == 2);
  CHECK(compiles == 2);  // the pruned and ranked-out configurations were never traced
  tl::TuningReport r = tuner.last_tuning();
  REQUIRE(r.configs.size() == 4);
  CHECK(r.configs[0].name == "32");
  CHECK(r.configs[0].estimate == 32);
  CHECK_FALSE(std::isnan(r.configs[0].ms));
  CHECK_FALSE(std::isnan(r.configs[1].ms));
  CHECK(r.configs[2].estimate == 128);
  CHECK(std::isnan(r.configs[2].ms));
  CHECK_THAT(r.configs[2].dropped, Contains("was ranked out by the cost model") && Contains("3 of 3; top_k 2"));
  CHECK(std::isnan(r.configs[3].estimate));
  CHECK(r.configs[3].dropped == "was pruned by AutotuneOptions::keep");
  CHECK((r.picked == "32" || r.picked == "64"));
  CHECK((r.picked_model_rank == 1 || r.picked_model_rank == 2));
  // Two measured: their ranks agree or disagree entirely.
  CHECK((r.rank_correlation == Approx(1.0) || r.rank_correlation == Approx(-1.0)));
  CHECK(r.key.find("interp the interpreter tiledsl 0.1 runtime build ") == 0);  // target, hardware, compiler

  // Without a cost model top_k does nothing: every kept configuration runs.
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  tl::Autotuner all("bump-all", configs(), {.top_k = 1});
  all(dev, grid_for(100), x, 100);
  CHECK(all.measured() == 4);
  CHECK(std::isnan(all.last_tuning().rank_correlation));
  CHECK(all.last_tuning().picked_model_rank == 0);

  // A cost model that fails, or says NaN: an error naming the configuration.
  tl::Autotuner bad("bump-bad", configs(), {.cost_model = [](const tl::TuneConfig& c, const std::vector<tl::Arg>&) {
                      if (c.name == "64") throw tl::Error("no estimate");
                      return 1.0;
                    }});
  REQUIRE_THROWS_WITH(bad(dev, grid_for(100), x, 100),
                      Contains("autotune bump-bad: AutotuneOptions::cost_model failed on configuration '64': no estimate"));
  tl::Autotuner nan("bump-nan", configs(), {.cost_model = [](const tl::TuneConfig&, const std::vector<tl::Arg>&) {
                      return std::nan("");
                    }});
  REQUIRE_THROWS_WITH(nan(dev, grid_for(100), x, 100), Contains("cost_model returned NaN for configuration '32'"));
  CHECK(x.download<float>() == std::vector<float>(100, 1.0f));  // the failed tunings ran nothing
}

TEST_CASE("autotune: names and configuration lists are checked", "[runtime][autotune]") {
  std::atomic<int> compiles{0};
  REQUIRE_THROWS_WITH(tl::Autotuner("a b", {bump_config<32>(compiles)}),
                      "Autotuner: expected a name of letters, digits, '_' and '-', found 'a b'");
  REQUIRE_THROWS_WITH(tl::Autotuner("x", {}), "Autotuner x: expected at least one configuration, found none");
  REQUIRE_THROWS_WITH(tl::Autotuner("x", {bump_config<32>(compiles), bump_config<32>(compiles)}),
                      "Autotuner x: expected unique configuration names without tabs or newlines, found '32'");
  CHECK(compiles == 0);  // nothing compiles before a launch
  // key_args must name integer arguments of the launch, and the launch's
  // errors name the caller's line.
  TempCacheDir cache;
  auto dev = tl::Device::get("interp");
  auto x = dev.upload(std::vector<float>(100, 0.0f));
  auto at = [](int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; };
  tl::Autotuner past("past", {bump_config<32>(compiles)}, {.key_args = {7}});
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(past(dev, grid_for(100), x, 100),
                      at(line) + "Autotuner past: key_args names argument 7, expected an index below the launch's 2 "
                                 "arguments");
  tl::Autotuner buffer("buffer", {bump_config<32>(compiles)}, {.key_args = {0}});
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(buffer(dev, grid_for(100), x, 100),
                      at(line) + "Autotuner buffer: key_args names argument 0, expected an integer argument, found a "
                                 "buffer");
  tl::Autotuner typed("typed", {bump_config<32>(compiles)});
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(typed(dev, grid_for(100), x, 1.5f), Contains(at(line) + "argument 2 of 'bump': expected i32"));
}

TEST_CASE("autotune on the GPU: timed with device events, writes its input once, reused by a second tuner",
          "[gpu][autotune]") {
  REQUIRE_GPU();
  TempCacheDir cache;
  auto dev = tl::Device::get("cuda");
  CHECK_THAT(dev.hardware(), Contains(", CUDA driver "));  // part of every key
  std::atomic<int> compiles{0};
  auto configs = [&] {
    return std::vector<tl::TuneConfig>{bump_config<128>(compiles), bump_config<512>(compiles),
                                       bump_config<1024>(compiles)};
  };
  const int n = 1 << 22;
  std::vector<float> host(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) host[size_t(i)] = float(i % 1000);
  auto x = dev.upload(host);
  tl::Autotuner tuner("bump-gpu", configs());
  tuner(dev, grid_for(n), x, n);
  auto got = x.download<float>();
  for (int i = 0; i < n; ++i) REQUIRE(got[size_t(i)] == float(i % 1000) + 1.0f);  // once
  CHECK(tuner.measured() == 3);
  std::ifstream in(cache.dir / "autotune-bump-gpu.tsv");
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK_THAT(line, Contains(dev.target()));
  compiles = 0;
  tl::Autotuner again("bump-gpu", configs());
  again(dev, grid_for(n), x, n);
  CHECK(again.measured() == 0);
  CHECK(compiles == 1);
  CHECK(x.download<float>()[12345] == float(12345 % 1000) + 2.0f);
}
